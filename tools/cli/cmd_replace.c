// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_replace.c - `jgrfs replace`: rebuild a failed or missing member of a
 * mounted volume onto a new device, online (FOP_IOC_REPLACE, include/jgrfs/fop.h);
 * `jgrfs readd`: bring back the member that left, on its own device, resyncing
 * only the rows it missed (FOP_REPLACE_READD, raid_readd).
 * The daemon rebuilds in a thread while the volume stays in use; `jgrfs status`
 * shows the progress, or --wait follows it here. For an unmounted array,
 * `jgrfs rebuild` does the same offline.
 *
 * NEWDEV whose first block is the superblock of a working member of the mounted
 * array is that member by another path: refused here, before the daemon is
 * asked (the daemon's raid_rebuild refuses it too, but only in its log, since
 * the rebuild runs in its own thread). For the same reason --wait gives up when
 * no rebuild shows progress within REPLACE_START_SECONDS while the array stays
 * degraded: the daemon refused it, or it stopped at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "probe.h"
#include "jgrfs/fop.h"
#include "jgrfs/raid.h"
#include "../../src/raid/raid_format.h"

/* Seconds --wait gives the daemon's rebuild thread to take NEWDEV. */
#define REPLACE_START_SECONDS 10

static void replace_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs replace [--role N] [--size SIZE] [--force] [--wait] MOUNTPOINT NEWDEV\n\n"
		   "Rebuild the failed or missing member of the volume mounted at MOUNTPOINT\n"
		   "onto NEWDEV (a file or block device as large as the other members), while\n"
		   "the volume stays in use. `jgrfs status MOUNTPOINT` shows the progress.\n"
		   "NEWDEV that holds a filesystem, RAID, LVM, swap or partition-table\n"
		   "signature, or a member of another jgrfs array, is refused unless --force;\n"
		   "one in use by another process is refused.\n\n"
		   "  -r, --role N     the role to rebuild (default: the one failed or missing)\n"
		   "  -s, --size SIZE  create NEWDEV as a sparse file of SIZE if it is missing\n"
		   "  -f, --force      overwrite what NEWDEV holds\n"
		   "  -w, --wait       follow the rebuild to its end\n"
		   "  -v, --verbose    also the engine's own lines; -vv: everything\n"
		   "  -q, --quiet      errors only: no warnings, no progress\n"
		   "  -h, --help       this text\n\n"
		   "exit status: 0 started (with --wait: done, array whole), 1 error,\n"
		   "2 bad options\n");
}

/*
 * Read the superblock in block 0 of @path (a file, device or URI) into @sb.
 * 0, or -errno (unreadable: the daemon judges).
 */
static int replace_read_sb(const char *path, struct raid_sb *sb)
{
	struct blk_dev *dev;
	uint8_t *buf = jg_alloc_blocks(1);
	int rc = buf ? raid_dev_open(path, 0, &dev) : -ENOMEM;

	if (!rc) {
		rc = blk_rw(dev, BLK_OP_READ, RAID_SB_BLKNO, 1, buf, 0);
		blk_close(dev);
	}
	if (!rc)
		memcpy(sb, buf, sizeof(*sb));
	free(buf);
	return rc;
}

/*
 * Refuse @path when its first block is the superblock of a working member of
 * the array mounted at @fd. 0, or 1 after a message; *@spare when it is a
 * spare's of this array (the daemon takes it from the spare list: spare.c
 * (P5)). An unreadable or foreign first block is the daemon's to judge.
 */
static int replace_check_newdev(int fd, const char *path, bool *spare)
{
	struct fop_status st;
	struct raid_sb sb;
	uint32_t role;

	*spare = false;
	if (ioctl(fd, FOP_IOC_STATUS, &st))
		return cli_err("status: %s", strerror(errno));
	if (replace_read_sb(path, &sb) || jg_le32(sb.hdr.magic) != RAID_SB_MAGIC ||
	    memcmp(sb.uuid, st.uuid, sizeof(sb.uuid)))
		return 0;
	role = jg_le32(sb.role);
	*spare = role == RAID_ROLE_SPARE;
	/* that export again, left with writes unanswered: the daemon refuses it (R7) */
	if (role < st.nmembers && role < FOP_STATUS_MEMBERS &&
	    (st.members[role].flags & FOP_MEMBER_UNFENCED))
		return cli_err("%s holds the superblock of role %u, whose connection ended while "
			       "writes sent to its server were not answered: not rebuilding onto it "
			       "(once that connection is known dead, jgrfs readd --fenced brings it "
			       "back)",
			       path, role);
	if (role < st.nmembers && role < FOP_STATUS_MEMBERS &&
	    (st.members[role].flags & FOP_MEMBER_PRESENT) &&
	    !(st.members[role].flags & FOP_MEMBER_FAILED))
		return cli_err("%s holds the superblock of role %u of this array, a working "
			       "member (%s): not rebuilding onto it (if it is an old copy, "
			       "wipe its first block)", path, role, st.members[role].name);
	return 0;
}

/*
 * Issue 44: what NEWDEV holds, before the daemon writes it (probe_dev): a
 * member of another array, a filesystem or other signature, unless @force; a
 * device another process holds, always. 0, or 1 after a message.
 */
static int replace_probe_newdev(int fd, const char *path, bool force)
{
	struct probe_cfg pc = { .force = force, .force_opt = "--force", .check_lock = true };
	struct fop_status st;

	if (ioctl(fd, FOP_IOC_STATUS, &st))
		return cli_err("status: %s", strerror(errno));
	pc.uuid = st.uuid;
	return probe_dev(path, &pc, NULL) ? 1 : 0;
}

/* Follow the rebuild through the status ioctl until it ends; 0 when the array is whole. */
static int replace_wait(int fd, const char *path)
{
	struct cli_progress prog;
	struct fop_status st;
	bool seen = false;
	double t0 = jg_now_seconds();

	cli_progress_start(&prog, "rebuild", NULL, 0);
	for (;;) {
		if (ioctl(fd, FOP_IOC_STATUS, &st))
			return cli_err("status: %s", strerror(errno));
		if (st.flags & FOP_ST_REBUILDING) {
			seen = true;
			cli_progress(&prog, st.rebuild_ppm, 1000000);
		} else if (seen || !(st.flags & FOP_ST_DEGRADED)) {
			break;
		} else if (jg_now_seconds() - t0 > REPLACE_START_SECONDS) {
			/* a refusal or a quick failure shows no progress: only the log says */
			return cli_err("no rebuild onto %s ran: the daemon refused it or it "
				       "stopped at once (see the daemon's log)", path);
		}
		usleep(200 * 1000);
	}
	cli_progress_done(&prog);
	if (st.flags & FOP_ST_DEGRADED)
		return cli_err(
		    "the rebuild stopped; the array is still degraded (see the daemon's log)");
	printf("rebuild done: the array is whole");
	if (st.rebuild_last_flags & FOP_REBUILD_LAST_DONE)
		printf(" (%llu of %llu rows rebuilt%s)", (unsigned long long)st.rebuild_last_rows,
		       (unsigned long long)st.rows,
		       st.rebuild_last_flags & FOP_REBUILD_LAST_READD ? ": the rows it missed" : "");
	printf("\n");
	return 0;
}

static void readd_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs readd [--role N] [--fenced] [--wait] MOUNTPOINT DEV\n\n"
		   "Bring back the member of the volume mounted at MOUNTPOINT that failed, on its\n"
		   "own device DEV (a file, block device or NBD URI, reachable again), while the\n"
		   "volume stays in use. Only the rows written since it left are rebuilt on it;\n"
		   "when those are not known (it has been away since the volume was mounted, or\n"
		   "the daemon restarted since), all of them, as replace does.\n\n"
		   "  -r, --role N     the role it had (default: the one its superblock names)\n"
		   "      --fenced     its old connection is known dead: needed when that\n"
		   "                   connection ended with writes unanswered (jgrfs(8))\n"
		   "  -w, --wait       follow the resync to its end\n"
		   "  -v, --verbose    also the engine's own lines; -vv: everything\n"
		   "  -q, --quiet      errors only: no warnings, no progress\n"
		   "  -h, --help       this text\n\n"
		   "exit status: 0 started (with --wait: done, array whole), 1 error,\n"
		   "2 bad options\n");
}

/*
 * Role @r lost a connection with writes unanswered (FOP_MEMBER_UNFENCED): its
 * server may still run them on DEV, over the rows the readd rebuilds. 1 after a
 * message, unless the operator says that connection is dead (--fenced).
 */
static int readd_check_fence(const struct fop_status *st, uint32_t r, bool fenced)
{
	if (fenced || !(st->members[r].flags & FOP_MEMBER_UNFENCED))
		return 0;
	return cli_err("role %u (%s) lost its connection while writes sent to its server were not "
		       "answered: that server may still run them, over the rows a readd rebuilds. "
		       "Make sure that connection is dead (the server process that held it has "
		       "exited, or was restarted), then run again with --fenced",
		       r, st->members[r].name);
}

/*
 * The role DEV had, from its superblock: it must name the mounted array and a
 * role that is failed or missing there, and (readd_check_fence) not one that
 * lost its connection with writes unanswered, unless @fenced. 0 and *@role, or
 * 1 after a message.
 */
static int readd_check_dev(int fd, const char *path, bool given, bool fenced, uint32_t *role)
{
	struct fop_status st;
	struct raid_sb sb;
	uint32_t r;

	if (ioctl(fd, FOP_IOC_STATUS, &st))
		return cli_err("status: %s", strerror(errno));
	if (replace_read_sb(path, &sb))
		return cli_err("%s: cannot read its superblock", path);
	if (jg_le32(sb.hdr.magic) != RAID_SB_MAGIC || memcmp(sb.uuid, st.uuid, sizeof(sb.uuid)))
		return cli_err("%s is not a member of this array (its first block is %s): to "
			       "rebuild onto it, use jgrfs replace",
			       path,
			       jg_le32(sb.hdr.magic) == RAID_SB_MAGIC ? "a superblock of another array"
								      : "no member superblock");
	r = jg_le32(sb.role);
	if (given && r != *role)
		return cli_err("%s was the member of role %u, not %u: to rebuild role %u onto it, use "
			       "jgrfs replace",
			       path, r, *role, *role);
	if (r >= st.nmembers || r >= FOP_STATUS_MEMBERS)
		return cli_err("%s names role %u, which this array does not have", path, r);
	if ((st.members[r].flags & FOP_MEMBER_PRESENT) && !(st.members[r].flags & FOP_MEMBER_FAILED))
		return cli_err("role %u is working (%s): nothing to bring back", r,
			       st.members[r].name);
	if (readd_check_fence(&st, r, fenced))
		return 1;
	*role = r;
	return 0;
}

/* FOP_IOC_REPLACE failed (errno) for @rq on the mount @mnt: say why. */
static void replace_ioctl_err(const char *mnt, const struct fop_replace *rq, bool readd)
{
	if (errno == ENOTTY)
		cli_err("%s: not a jgrfs mount", mnt);
	else if (errno == EINVAL)
		cli_err("%s: no member to rebuild%s, or %s unusable (see the daemon's log)", mnt,
			rq->flags & FOP_REPLACE_ROLE ? " at that role" : "", readd ? "DEV" : "NEWDEV");
	else if (errno == EBUSY)
		cli_err("%s: a rebuild is already running", mnt);
	else if (errno == EAGAIN && readd)
		cli_err("%s: role %u lost its connection with writes unanswered: refused without "
			"--fenced (see the daemon's log)",
			mnt, rq->role);
	else
		cli_err("%s: %s: %s", mnt, readd ? "readd" : "replace", strerror(errno));
}

/*
 * jgrfs replace and jgrfs readd: the same request (FOP_IOC_REPLACE), a new
 * device for replace (--size may create it), for readd the member's own, whose
 * superblock names the role.
 */
static int replace_main(int argc, char **argv, bool readd)
{
	static const struct option longopts[] = {
	    {"role", required_argument, NULL, 'r'},
	    {"size", required_argument, NULL, 's'},
	    {"wait", no_argument, NULL, 'w'},
	    {"force", no_argument, NULL, 'f'},
	    {"fenced", no_argument, NULL, 'F'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	void (*usage)(FILE *) = readd ? readd_usage : replace_usage;
	struct fop_replace rq;
	uint64_t v, size = 0;
	bool wait = false, spare = false, force = false, fenced = false;
	char path[PATH_MAX];
	int opt, fd, rc = 1;

	memset(&rq, 0, sizeof(rq));
	rq.flags = readd ? FOP_REPLACE_READD : 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, readd ? "r:wh" CLI_VERBOSITY_SHORTOPTS
						    : "r:s:fwh" CLI_VERBOSITY_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (cli_parse_u64(optarg, RAID_MAX_MEMBERS - 1, &v))
				return cli_usage_err(2, "--role %s: expected 0 to %d", optarg,
					       RAID_MAX_MEMBERS - 1);
			rq.flags |= FOP_REPLACE_ROLE;
			rq.role = (uint32_t)v;
			break;
		case 's':
			if (readd) /* getopt_long takes the long form whatever the short string */
				return cli_usage_err(2, "--size: readd takes the member's own device");
			if (cli_parse_size(optarg, &size) || size < (1u << 20))
				return cli_usage_err(2, "--size %s: expected a size such as 1G", optarg);
			break;
		case 'w':
			wait = true;
			break;
		case 'f':
			if (readd)
				return cli_usage_err(2, "--force: readd takes the member's own device");
			force = true;
			break;
		case 'F': /* long form only */
			if (!readd)
				return cli_err("--fenced: for readd only"), 2;
			fenced = true;
			rq.flags |= FOP_REPLACE_FENCED;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	if (argc - optind != 2)
		return cli_usage_err(2, "expected MOUNTPOINT and %s", readd ? "DEV" : "NEWDEV");
	if (raid_dev_is_nbd(argv[optind + 1])) {
		/* a URI, handed to the daemon as it is: no file to create or resolve */
		if (size)
			return cli_err("%s: --size is for files; an NBD export is sized on its "
				       "server", argv[optind + 1]);
		snprintf(path, sizeof(path), "%s", argv[optind + 1]);
	} else if (size && access(argv[optind + 1], F_OK)) {
		fd = open(argv[optind + 1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)size))
			return cli_err("%s: cannot create: %s", argv[optind + 1], strerror(errno));
		close(fd);
	}
	if (!raid_dev_is_nbd(argv[optind + 1]) && !realpath(argv[optind + 1], path))
		return cli_err("%s: %s%s", argv[optind + 1], strerror(errno),
			       errno == ENOENT && !readd ? " (create it, or give --size)" : "");
	if (strlen(path) >= sizeof(rq.path))
		return cli_err("%s: path too long", path);
	memcpy(rq.path, path, strlen(path) + 1);

	fd = open(argv[optind], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_err("%s: %s", argv[optind], strerror(errno));
	if (readd ? readd_check_dev(fd, path, rq.flags & FOP_REPLACE_ROLE, fenced, &rq.role)
		  : replace_check_newdev(fd, path, &spare) ||
			    /* a spare of this array is ours, held by its daemon */
			    (!spare && replace_probe_newdev(fd, path, force)))
		goto out;
	if (readd)
		rq.flags |= FOP_REPLACE_ROLE; /* the one its superblock names */
	if (ioctl(fd, FOP_IOC_REPLACE, &rq)) {
		replace_ioctl_err(argv[optind], &rq, readd);
		goto out;
	}
	if (readd)
		printf("bringing back %s as role %u\n", path, rq.role);
	else
		printf("rebuilding onto %s%s\n", path,
		       spare ? " (a hot spare of this array: no longer a spare)" : "");
	rc = wait ? replace_wait(fd, path) : 0;
out:
	close(fd);
	return rc;
}

int cmd_readd(int argc, char **argv)
{
	return replace_main(argc, argv, true);
}

int cmd_replace(int argc, char **argv)
{
	return replace_main(argc, argv, false);
}
