// SPDX-License-Identifier: MIT
/*
 * tools/cli/open.c - one way for a command to reach an array's members
 * (tools/cli/raidcli.h, "Opening an array"): the options every command
 * takes, the member list of the fstab and UUID= forms, the count, the lock
 * (cli_lock_mode, --wait), the open and the assembly with the messages that
 * name the devices, and the stop that releases all of it.
 *
 * Each step is a call of its own, in the order the commands have always
 * taken them, because a command may do its own work between two (examine
 * reads the superblocks before assembling, mount sets up its notifier and
 * event watch, rebuild probes the new member before the open): a refusal
 * must still come before the first write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "raidcli.h"
#include "scan.h"

int raidcli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		   const char *help)
{
	int opt;

	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(help, stdout);
			return RAIDCLI_OPT_HELP;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		case CLI_OPT_WAIT:
			cli_lock_wait = true;
			break;
		default:
			return opt;
		}
	}
	return -1;
}

int raidcli_members_parse(struct raidcli_members *m, char **argv, int argc, int usage_code,
			  int error_code)
{
	for (int i = 0; i < argc; i++) {
		const char *list = cli_member_list(argv[i]);
		int k;

		if (!list) {
			if (m->n == RAIDCLI_MAX_MEMBERS)
				goto too_many;
			m->paths[m->n++] = argv[i];
			continue;
		}
		m->lists[m->nlists] = strdup(list);
		if (!m->lists[m->nlists])
			return cli_err("out of memory"), error_code;
		k = cli_split_members(m->lists[m->nlists], m->paths + m->n,
				      RAIDCLI_MAX_MEMBERS - m->n);
		m->nlists++;
		if (k < 0)
			goto too_many;
		m->n += k;
	}
	if (!m->n)
		return cli_usage_err(usage_code, "no member devices given");
	/* UUID=<uuid>, alone or as members=UUID=<uuid>: the devices found */
	if (m->n == 1) {
		char **paths = m->paths;
		int n = scan_args(&paths, m->n, m->found, RAIDCLI_MAX_MEMBERS);

		if (n < 0)
			return error_code;
		if (paths != m->paths)
			memcpy(m->paths, paths, (size_t)n * sizeof(*paths));
		m->n = n;
	}
	return 0;
too_many:
	return cli_usage_err(usage_code, "at most %d members", RAIDCLI_MAX_MEMBERS);
}

void raidcli_members_free(struct raidcli_members *m)
{
	for (int i = 0; i < m->nlists; i++)
		free(m->lists[i]);
	m->nlists = 0;
}

int raidcli_count_check(int n)
{
	if (n > RAIDCLI_MAX_MEMBERS) {
		cli_err("at most %d members, not %d", RAIDCLI_MAX_MEMBERS, n);
		return -EINVAL;
	}
	return 0;
}

int raidcli_open_members(struct raidcli_array *ra)
{
	/* cli.h: the lock is taken here, per file, and held until the process exits */
	cli_lock_mode = ra->lock;
	return cli_open_members(ra->paths, ra->n + ra->nextra, 0, ra->devs);
}

/* Why the assembly of @ra failed with @rc, naming the first member given. */
static void raidcli_open_say(const struct raidcli_array *ra, int rc)
{
	if (ra->n == 1 && !ra->name_count)
		cli_err("%s: cannot assemble: %s", ra->paths[0], raidcli_assemble_why(rc));
	else
		cli_err("cannot assemble %s and %d more: %s", ra->paths[0], ra->n - 1,
			raidcli_assemble_why(rc));
	if (rc == -ENODEV && ra->missing_hint)
		cli_err("%s", ra->missing_hint);
}

int raidcli_open_assemble(struct raidcli_array *ra)
{
	int rc = raid_assemble(ra->devs, (unsigned int)ra->n, &ra->cfg, &ra->a);

	if (rc) {
		ra->a = NULL;
		if (!ra->quiet)
			raidcli_open_say(ra, rc);
		cli_close_members(ra->devs, ra->n + ra->nextra);
		return rc;
	}
	raid_info_get(ra->a, &ra->info);
	return 0;
}

int raidcli_open(struct raidcli_array *ra)
{
	int rc = raidcli_count_check(ra->n);

	if (!rc)
		rc = raidcli_open_members(ra);
	if (!rc)
		rc = raidcli_open_assemble(ra);
	return rc;
}

int raidcli_close(struct raidcli_array *ra)
{
	struct raid_array *a = ra->a;

	ra->a = NULL;
	return raidcli_stop(a, ra->devs, ra->n + ra->nextra);
}
