// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_rebuild.c - `jgrfs rebuild`: reconstruct a missing or failed member
 * onto a new device (mdadm --add/--replace with the recovery run to the end).
 *
 *	jgrfs rebuild [--role N] --new PATH DEV...
 *	jgrfs rebuild [--role N] DEV...		(resume)
 *
 * DEV... are the members still there (the failed one may be among them); the
 * array is assembled degraded, the role to rebuild found (or taken from --role),
 * and raid_rebuild() writes every row's chunk of that role onto PATH, which the
 * superblocks record as being rebuilt with a mark of the rows done: an
 * interrupted rebuild resumes from there (at a mount, or here without --new).
 * A missing PATH file is created sparse at the size of the largest member
 * given (or --size). An existing PATH is probed first (tools/cli/probe.h),
 * before the assembly writes anything: --overwrite takes what it holds.
 *
 * A rebuild reconstructs from parity. While the array's filesystem journal has
 * not been replayed (jnl-pending, a crash in data=declared), the rows it was
 * writing may have parity that does not match their data, so the raid layer
 * refuses to fail or rebuild a member (src/raid/super.c (S6)); the way out is
 * to mount once. --force assembles forced instead, and with --fail (every
 * member present) first rewrites every row's parity from its data, as
 * resync=full does after a crash, so the rebuilt member gets exactly the
 * chunks the failed one holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "probe.h"
#include "raidcli.h"
#include "jgrfs/raid.h"
#include "../../src/raid/raid_format.h"

static const char cmd_rebuild_help[] =
	"usage: jgrfs rebuild [--role N] --new PATH DEV...\n"
	"       jgrfs rebuild [--role N] DEV...   (resume a rebuild)\n"
	"\n"
	"Assemble the array from the members DEV that are still there (degraded) and\n"
	"reconstruct the missing or failed member onto the new device PATH, with a\n"
	"progress display. Without --role, the one missing or failed role is rebuilt\n"
	"(with two missing in a RAID6, --role picks one; run again for the other).\n"
	"A missing PATH file is created sparse, as large as the largest DEV file.\n"
	"The new member records how far it has been rebuilt: a rebuild stopped by an\n"
	"unmount, a crash or a power cut goes on from there at the next mount, or\n"
	"here without --new (give the new device among the DEVs). PATH is looked at\n"
	"before anything is written: one that holds a filesystem, RAID, LVM, swap or\n"
	"partition-table signature, or a member of another jgrfs array, is refused\n"
	"unless --overwrite (not --force: that one is about the journal).\n"
	"\n"
	"options:\n"
	"  -n, --new PATH           the device or file to rebuild onto (without it:\n"
	"                           resume the rebuild of a member among DEV)\n"
	"  -o, --role N             the role to rebuild (see jgrfs examine)\n"
	"  -F, --fail               mark role N failed first, to replace a member that\n"
	"                           is present but going bad (needs --role)\n"
	"  -s, --size SIZE          size of a new PATH file (default: as the members)\n"
	"      --overwrite          rebuild onto PATH although it holds a filesystem,\n"
	"                           RAID, LVM, swap or partition-table signature or a\n"
	"                           member of another jgrfs array (refused without it)\n"
	"  -f, --force              go on although the filesystem journal has not been\n"
	"                           replayed (jnl-pending, after a crash): with --fail,\n"
	"                           resync every row's parity from its data first;\n"
	"                           with a member missing, assemble anyway (rows written\n"
	"                           at the crash may be rebuilt wrong)\n"
	RAIDCLI_COMMON_HELP
	"\n"
	"examples:\n"
	"  jgrfs rebuild --new d2new.img d0.img d1.img d3.img\n"
	"      d2.img is gone: rebuild its role onto a new file d2new.img\n"
	"  jgrfs rebuild --role 1 --fail --new /dev/sdf /dev/sd[b-e]\n"
	"      replace the member of role 1 by /dev/sdf\n"
	"\n"
	"exit status: 0 rebuilt, 1 PATH also given as a member, 2 bad options, refused,\n"
	"or the rebuild failed\n";

/*
 * Create @path sparse at @bytes when it does not exist (*@created = true). 0, or
 * -errno after a message. An existing path (file or block device) is left as it is.
 */
static int cmd_rebuild_new_file(const char *path, uint64_t bytes, bool *created)
{
	struct stat st;
	int fd, rc = 0;

	*created = false;
	if (raid_dev_is_nbd(path) || !stat(path, &st))
		return 0; /* an NBD export is there or not: opening it says */
	if (errno != ENOENT)
		return rc = -errno, cli_err("%s: %s", path, strerror(errno)), rc;
	if (!bytes)
		return cli_err("%s does not exist and no member size is known; give --size",
			       path), -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return rc = -errno, cli_err("%s: cannot create: %s", path, strerror(errno)), rc;
	if (ftruncate(fd, (off_t)bytes)) {
		rc = -errno;
		cli_err("%s: cannot size to %llu bytes: %s", path, (unsigned long long)bytes,
			strerror(errno));
		unlink(path);
	}
	close(fd);
	*created = !rc;
	return rc;
}

/*
 * Refuse @newpath when it holds what a rebuild would destroy (probe_dev): a
 * member of another array than the one the members @paths name, a filesystem
 * or other signature, unless --overwrite. Not --force: that one forces the
 * assembly of an array whose journal has not replayed, a different danger an
 * operator must not take on by answering this one. 0, or 1 after a message.
 */
static int cmd_rebuild_probe_new(char **paths, int n, const char *newpath, bool overwrite)
{
	struct probe_cfg pc = { .force = overwrite, .force_opt = "--overwrite" };
	uint8_t uuid[16];
	uint32_t role, nmembers;

	for (int i = 0; i < n && !pc.uuid; i++)
		if (!probe_jgrfs_sb(paths[i], uuid, &role, &nmembers) && role != RAID_ROLE_SPARE)
			pc.uuid = uuid;
	return probe_dev(newpath, &pc, NULL) ? 1 : 0;
}

/* The message for a refusal of raid_fail_member() / raid_rebuild(). */
static void cmd_rebuild_refused(const char *what, int role, const char *newpath, int rc)
{
	if (rc == -EUCLEAN)
		cli_err("cannot %s role %d: the filesystem journal has not been replayed "
			"(jnl-pending, after a crash), so parity of the rows it was writing "
			"may be stale and the rebuild would reconstruct from it; mount the "
			"volume once so its journal replays, unmount, then rebuild; or add "
			"--force", what, role);
	else if (rc == -EEXIST)
		cli_err("%s is a working member of this array (reached by another path): not "
			"rebuilding onto it", newpath);
	else
		cli_err("cannot %s role %d: %s", what, role, strerror(-rc));
}

/*
 * --force --fail of a jnl-pending array: make parity match the data in every row
 * first, so that failing a member loses nothing the journal would need. 0 or -errno.
 */
static int cmd_rebuild_resync(struct raid_array *a)
{
	struct raid_resync_report rep = { 0 };
	int64_t m;

	fprintf(stderr, "jnl-pending: resyncing the parity of every row before the rebuild\n");
	struct cli_progress prog;
	struct raid_info info;

	raid_info_get(a, &info);
	cli_progress_start(&prog, "resync", "rows", cli_row_bytes(&info));
	m = raid_scrub(a, true, cli_progress, &prog, &rep);
	cli_progress_done(&prog);
	if (m < 0)
		return cli_err("resync before the rebuild failed: %s", strerror((int)-m)), (int)m;
	fprintf(stderr, "resync: %llu rows checked, %llu repaired\n",
		(unsigned long long)rep.rows_checked, (unsigned long long)rep.rows_repaired);
	return 0;
}

/* The role to rebuild: @want, or the only missing/failed one. -1 after a message. */
static int cmd_rebuild_pick_role(const struct raid_info *info, long want)
{
	int found = -1, count = 0;

	for (unsigned int i = 0; i < info->nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
		const struct raid_member_info *m = &info->members[i];

		if (want >= 0 && m->role == (unsigned int)want)
			return (int)m->role;
		if (!m->present || m->failed) {
			found = (int)m->role;
			count++;
		}
	}
	if (want >= 0)
		return cli_err("--role %ld: the array has roles 0 to %u", want,
			       info->nmembers - 1), -1;
	if (count == 0)
		return cli_err("no member is missing or failed; use --role N --fail to replace "
			       "one"), -1;
	if (count > 1)
		return cli_err("%d members are missing or failed; choose one with --role", count),
		       -1;
	return found;
}

/*
 * No --new: go on with the rebuild of a member that the array says is being
 * rebuilt (paused by an unmount, cut by a crash), from its mark.
 */
static int cmd_rebuild_resume(char **paths, int n, const struct raid_assemble_cfg *cfg, long want)
{
	struct raidcli_array ra = { .paths = paths, .n = n, .cfg = *cfg, .name_count = true };
	struct cli_progress prog;
	int rc, role = -1, ret = 2;

	if (raidcli_count_check(n))
		return 1;
	if (raidcli_open_members(&ra))
		return 2;
	if (raidcli_open_assemble(&ra))
		return 2;
	for (unsigned int i = 0; i < ra.info.nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
		const struct raid_member_info *m = &ra.info.members[i];

		if (m->present && !m->failed && m->rebuilding &&
		    (want < 0 || m->role == (unsigned int)want)) {
			role = (int)m->role;
			break;
		}
	}
	if (role < 0) {
		cli_err("no rebuild to resume%s: give --new PATH to rebuild a missing or failed "
			"member", want >= 0 ? " at that role" : "");
		goto out;
	}
	fprintf(stderr, "resuming the rebuild of role %d onto %s at row %" PRIu64 " of %" PRIu64
		"\n", role, ra.info.members[role].name, ra.info.members[role].recovered_rows,
		ra.info.rows);
	cli_progress_start(&prog, "rebuild", "rows", cli_row_bytes(&ra.info));
	rc = raid_rebuild(ra.a, (unsigned int)role, NULL, cli_progress, &prog);
	cli_progress_done(&prog);
	if (rc) {
		cmd_rebuild_refused("rebuild", role, ra.info.members[role].name, rc);
		goto out;
	}
	printf("rebuilt role %d onto %s\n", role, ra.info.members[role].name);
	ret = 0;
out:
	rc = raidcli_close(&ra);
	if (rc && !ret)
		ret = cli_err("stopping the array failed: %s", strerror(-rc)) + 1;
	return ret;
}

/* What the command line asks. */
struct rebuild_cmd {
	struct raid_assemble_cfg cfg;	/* --force */
	const char *newpath;		/* --new */
	uint64_t size_bytes;		/* --size, 0 when not given */
	long want;			/* --role, -1 when not given */
	bool fail, overwrite;
	char **args;			/* the members given */
	int n;
};

/* Options into @rb: -1 to go on, else the exit status. */
static int cmd_rebuild_opts(struct rebuild_cmd *rb, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "new", required_argument, NULL, 'n' },
		{ "role", required_argument, NULL, 'o' },
		{ "fail", no_argument, NULL, 'F' },
		{ "size", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "overwrite", no_argument, NULL, CLI_OPT_OVERWRITE },
		RAIDCLI_COMMON_LONGOPTS,
	};
	int opt;
	uint64_t v;

	rb->want = -1;
	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, "n:o:Fs:fh" CLI_VERBOSITY_SHORTOPTS, longopts,
				     cmd_rebuild_help)) != -1) {
		switch (opt) {
		case RAIDCLI_OPT_HELP:
			return 0;
		case 'n':
			rb->newpath = optarg;
			break;
		case 'o':
			if (cli_parse_u64(optarg, RAIDCLI_MAX_MEMBERS - 1, &v))
				return cli_usage_err(2, "--role %s: expected a role number 0 to %d", optarg,
					       RAIDCLI_MAX_MEMBERS - 1);
			rb->want = (long)v;
			break;
		case 'F':
			rb->fail = true;
			break;
		case 's':
			if (cli_parse_size(optarg, &rb->size_bytes) ||
			    rb->size_bytes < 16 * JG_BLOCK_SIZE)
				return cli_usage_err(2, "--size %s: expected a size such as 1G", optarg);
			break;
		case 'f':
			rb->cfg.force = true;
			break;
		case CLI_OPT_OVERWRITE:
			rb->overwrite = true;
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	rb->args = argv + optind;
	rb->n = argc - optind;
	if (rb->n < 1)
		return cli_usage_err(2, "no member devices given");
	if (rb->fail && rb->want < 0)
		return cli_usage_err(2, "--fail needs --role N");
	return -1;
}

/*
 * Before anything is written (issue 44): the members and PATH into @paths,
 * none named twice, PATH probed, a missing PATH file created (*@created)
 * sparse at --size or the largest member file's size. -1 to go on, else the
 * exit status.
 */
static int cmd_rebuild_prepare(const struct rebuild_cmd *rb, char **paths, bool *created)
{
	uint64_t member_bytes = 0;
	const char *newpath = rb->newpath;

	if (raidcli_count_check(rb->n))
		return 1;
	for (int i = 0; i < rb->n; i++) {
		struct stat st;

		paths[i] = rb->args[i];
		if (!strcmp(paths[i], newpath))
			return cli_err("%s: the new device is also given as a member", newpath);
		if (!rb->size_bytes && !stat(paths[i], &st) && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size > member_bytes)
			member_bytes = (uint64_t)st.st_size;
	}
	paths[rb->n] = (char *)newpath;
	/* issue 44: look at PATH before the array is assembled (that writes) */
	if (probe_distinct(paths, rb->n + 1))
		return 1;
	if (cmd_rebuild_probe_new(paths, rb->n, newpath, rb->overwrite))
		return 2;
	if (cmd_rebuild_new_file(newpath, rb->size_bytes ? rb->size_bytes : member_bytes, created))
		return 2;
	return -1;
}

/*
 * The role to rebuild on the assembled array, failed first with --fail (a
 * jnl-pending array forced: its parity resynced before). The role, or -1
 * after a message.
 */
static int cmd_rebuild_take_role(const struct rebuild_cmd *rb, struct raidcli_array *ra)
{
	const struct raid_info *info = &ra->info;
	int role = cmd_rebuild_pick_role(info, rb->want), err;

	if (role < 0)
		return -1;
	if (rb->fail) {
		if (info->jnl_pending && !info->degraded && rb->cfg.force &&
		    cmd_rebuild_resync(ra->a))
			return -1;
		err = raid_fail_member(ra->a, (unsigned int)role);
		if (err) {
			cmd_rebuild_refused("fail", role, rb->newpath, err);
			return -1;
		}
		return role;
	}
	for (unsigned int i = 0; i < info->nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
		const struct raid_member_info *m = &info->members[i];

		if (m->role == (unsigned int)role && m->present && !m->failed) {
			cli_err("role %d (%s) is present and healthy; add --fail to "
				"replace it", role, m->name);
			return -1;
		}
	}
	return role;
}

/* Rebuild @role onto the new device, which the array owns from here on. 0 or -1. */
static int cmd_rebuild_run(const struct rebuild_cmd *rb, struct raidcli_array *ra, int role)
{
	struct cli_progress prog;
	int err;

	fprintf(stderr, "rebuilding role %d of %u onto %s\n", role, ra->info.nmembers,
		rb->newpath);
	cli_progress_start(&prog, "rebuild", "rows", cli_row_bytes(&ra->info));
	err = raid_rebuild(ra->a, (unsigned int)role, ra->devs[rb->n], cli_progress, &prog);
	ra->devs[rb->n] = NULL;	/* the array owns it now, also on failure */
	cli_progress_done(&prog);
	if (err == -EUCLEAN || err == -EEXIST) {
		cmd_rebuild_refused("rebuild", role, rb->newpath, err);
		return -1;
	} else if (err) {
		cli_err("rebuild of role %d onto %s failed: %s", role, rb->newpath, strerror(-err));
		return -1;
	}
	printf("rebuilt role %d onto %s\n", role, rb->newpath);
	return 0;
}

int cmd_rebuild(int argc, char **argv)
{
	struct rebuild_cmd rb = { 0 };
	char *paths[RAIDCLI_MAX_MEMBERS + 1];
	/* one open for all, so that a fault domain (jgrfs-crash) spans the new member too */
	struct raidcli_array ra = { .paths = paths, .nextra = 1, .name_count = true };
	bool created = false, rebuilt = false;
	int role, err, ret;

	ret = cmd_rebuild_opts(&rb, argc, argv);
	if (ret >= 0)
		return ret;
	if (!rb.newpath) {
		if (rb.fail || rb.size_bytes)
			return cli_usage_err(2, "--fail and --size need --new PATH");
		return cmd_rebuild_resume(rb.args, rb.n, &rb.cfg, rb.want);
	}
	ret = cmd_rebuild_prepare(&rb, paths, &created);
	if (ret >= 0)
		return ret;
	ret = 2;
	ra.n = rb.n;
	ra.cfg = rb.cfg;
	if (raidcli_open_members(&ra))
		goto out_unlink;
	if (raidcli_open_assemble(&ra))
		goto out_unlink;
	role = cmd_rebuild_take_role(&rb, &ra);
	if (role >= 0 && !cmd_rebuild_run(&rb, &ra, role)) {
		rebuilt = true;
		ret = 0;
	}
	/* the new device, when the array did not take it */
	if (ra.devs[rb.n]) {
		blk_close(ra.devs[rb.n]);
		ra.devs[rb.n] = NULL;
	}
	err = raidcli_close(&ra);
	if (err && !ret)
		ret = cli_err("stopping the array failed: %s", strerror(-err)) + 1;
	if (rebuilt)
		return ret;
out_unlink:
	/* a file we made and did not fill is no member; leave no litter */
	if (created)
		unlink(rb.newpath);
	return 2;
}
