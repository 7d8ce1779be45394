// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_replace.c - `jgrfs replace`: rebuild a failed or missing member of a
 * mounted volume onto a new device, online (FOP_IOC_REPLACE, include/jgrfs/fop.h).
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
#include "jgrfs/fop.h"
#include "../../src/raid/raid_format.h"

/* Seconds --wait gives the daemon's rebuild thread to take NEWDEV. */
#define REPLACE_START_SECONDS 10

static void replace_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs replace [--role N] [--size SIZE] [--wait] MOUNTPOINT NEWDEV\n\n"
		   "Rebuild the failed or missing member of the volume mounted at MOUNTPOINT\n"
		   "onto NEWDEV (a file or block device as large as the other members), while\n"
		   "the volume stays in use. `jgrfs status MOUNTPOINT` shows the progress.\n\n"
		   "  -r, --role N     the role to rebuild (default: the one failed or missing)\n"
		   "  -s, --size SIZE  create NEWDEV as a sparse file of SIZE if it is missing\n"
		   "  -w, --wait       follow the rebuild to its end\n"
		   "  -v, --verbose    also the engine's own lines; -vv: everything\n"
		   "  -q, --quiet      errors only: no warnings, no progress\n"
		   "  -h, --help       this text\n\n"
		   "exit status: 0 started (with --wait: done, array whole), 1 error\n");
}

/*
 * Refuse @path when its first block is the superblock of a working member of
 * the array mounted at @fd. 0, or 1 after a message. An unreadable or foreign
 * first block is the daemon's to judge.
 */
static int replace_check_newdev(int fd, const char *path)
{
	struct fop_status st;
	struct raid_sb sb;
	int dfd;
	ssize_t got;
	uint32_t role;

	if (ioctl(fd, FOP_IOC_STATUS, &st))
		return cli_err("status: %s", strerror(errno));
	dfd = open(path, O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	got = pread(dfd, &sb, sizeof(sb), RAID_SB_BLKNO * JG_BLOCK_SIZE);
	close(dfd);
	if (got != (ssize_t)sizeof(sb) || jg_le32(sb.hdr.magic) != RAID_SB_MAGIC ||
	    memcmp(sb.uuid, st.uuid, sizeof(sb.uuid)))
		return 0;
	role = jg_le32(sb.role);
	if (role < st.nmembers && role < FOP_STATUS_MEMBERS &&
	    (st.members[role].flags & FOP_MEMBER_PRESENT) &&
	    !(st.members[role].flags & FOP_MEMBER_FAILED))
		return cli_err("%s holds the superblock of role %u of this array, a working "
			       "member (%s): not rebuilding onto it (if it is an old copy, "
			       "wipe its first block)", path, role, st.members[role].name);
	return 0;
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
	printf("rebuild done: the array is whole\n");
	return 0;
}

int cmd_replace(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"role", required_argument, NULL, 'r'},
	    {"size", required_argument, NULL, 's'},
	    {"wait", no_argument, NULL, 'w'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct fop_replace rq;
	uint64_t v, size = 0;
	bool wait = false;
	char path[PATH_MAX];
	int opt, fd, rc = 1;

	memset(&rq, 0, sizeof(rq));
	optind = 1;
	while ((opt = getopt_long(argc, argv, "r:s:wh" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (cli_parse_u64(optarg, 31, &v))
				return cli_err("--role %s: expected 0 to 31", optarg), 2;
			rq.flags |= FOP_REPLACE_ROLE;
			rq.role = (uint32_t)v;
			break;
		case 's':
			if (cli_parse_size(optarg, &size) || size < (1u << 20))
				return cli_err("--size %s: expected a size such as 1G", optarg), 2;
			break;
		case 'w':
			wait = true;
			break;
		case 'h':
			replace_usage(stdout);
			return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		default:
			replace_usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		replace_usage(stderr);
		return 2;
	}
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
	if (!raid_dev_is_nbd(path) && !realpath(argv[optind + 1], path))
		return cli_err("%s: %s%s", argv[optind + 1], strerror(errno),
			       errno == ENOENT ? " (create it, or give --size)" : "");
	if (strlen(path) >= sizeof(rq.path))
		return cli_err("%s: path too long", path);
	memcpy(rq.path, path, strlen(path) + 1);

	fd = open(argv[optind], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_err("%s: %s", argv[optind], strerror(errno));
	if (replace_check_newdev(fd, path))
		goto out;
	if (ioctl(fd, FOP_IOC_REPLACE, &rq)) {
		if (errno == ENOTTY)
			cli_err("%s: not a jgrfs mount", argv[optind]);
		else if (errno == EINVAL)
			cli_err(
			    "%s: no member to rebuild%s, or NEWDEV unusable (see the daemon's log)",
			    argv[optind], rq.flags & FOP_REPLACE_ROLE ? " at that role" : "");
		else if (errno == EBUSY)
			cli_err("%s: a rebuild is already running", argv[optind]);
		else
			cli_err("%s: replace: %s", argv[optind], strerror(errno));
		goto out;
	}
	printf("rebuilding onto %s\n", path);
	rc = wait ? replace_wait(fd, path) : 0;
out:
	close(fd);
	return rc;
}
