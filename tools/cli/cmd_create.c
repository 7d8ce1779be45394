// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_create.c - `jgrfs create`: write a new RAID4/5/6 array over member
 * files or block devices (mdadm --create).
 *
 *	jgrfs create [options] DEV...
 *
 * raid_create() writes the member superblocks; to print the summary (UUID,
 * usable size) the new array is then assembled read-only and stopped again, so
 * the summary is what a later assembly will see, not what we asked for.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/raid.h"

static const char cmd_create_help[] =
	"usage: jgrfs create [options] DEV...\n"
	"\n"
	"Create a RAID4/5/6 array over the member files or block devices DEV (at least\n"
	"3 for RAID4/5, 4 for RAID6; at most 32). Member roles follow the order given.\n"
	"The array starts clean and in sync. A member that already holds a jgrfs\n"
	"superblock, a filesystem, RAID, LVM, swap or partition-table signature is\n"
	"refused unless --force; so are members of unequal size unless --size, and\n"
	"one device named twice. A refusal writes nothing.\n"
	"\n"
	"options:\n"
	CLI_RAID_HELP
	"  -f, --force              overwrite what the members hold (each is named) and\n"
	"                           take members of unequal size (the smallest's size)\n"
	RAIDCLI_COMMON_HELP
	"\n"
	"examples:\n"
	"  jgrfs create --size 1G d0.img d1.img d2.img d3.img\n"
	"      RAID5 over four new sparse 1 GiB files\n"
	"  jgrfs create -l 6 -c 256K -r bitmap /dev/sdb /dev/sdc /dev/sdd /dev/sde\n"
	"      RAID6, 256 KiB chunks, write-intent bitmap, on block devices\n"
	"\n"
	"exit status: 0 created, 1 a device named twice, 2 bad options, refused, or\n"
	"the array could not be created\n";

int cmd_create(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "force", no_argument, NULL, 'f' },
		RAIDCLI_COMMON_LONGOPTS,
	};
	struct option longopts[32];
	struct raid_create_cfg cfg;
	struct cli_raid_opts ro;
	/* read back what was written: the summary is what assembly will see */
	struct raidcli_array ra = { .cfg = { .readonly = true, .no_resync = true }, .quiet = true };
	bool force = false;
	int opt, rc;

	raidcli_longopts(longopts, 32, extra);
	cli_raid_opts_init(&ro, &cfg);
	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, CLI_RAID_SHORTOPTS "fh" CLI_VERBOSITY_SHORTOPTS,
				     longopts, cmd_create_help)) != -1) {
		if (opt == RAIDCLI_OPT_HELP)
			return 0;
		if (opt == 'f')
			force = true;
		else if (cli_raid_opt(&ro, opt, optarg))
			/* cli_raid_opt() said what is wrong, or getopt_long did */
			return cli_usage_err(2, NULL);
	}
	ra.paths = argv + optind;
	ra.n = argc - optind;
	if (ra.n < 1)
		return cli_usage_err(2, "no member devices given");
	rc = raidcli_create(ra.paths, ra.n, &ro, force, NULL, ra.devs);
	if (rc)
		return rc;
	rc = raidcli_open_assemble(&ra);
	if (rc) {
		cli_err("array created, but assembling it to report failed: %s", strerror(-rc));
		return 2;
	}
	printf("created RAID%u over %u members\n", ra.info.level, ra.info.nmembers);
	raidcli_summary_print(stdout, &ra.info);
	rc = raidcli_close(&ra);
	if (rc)
		return cli_err("stopping the array failed: %s", strerror(-rc)), 2;
	return 0;
}
