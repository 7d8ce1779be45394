// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_sync.c - `jgrfs sync MOUNTPOINT...`: make everything written to
 * a mounted volume durable, and wait until it is.
 *
 * sync(1) does not reach a FUSE filesystem's daemon: the kernel writes back
 * the pages it caches, but sends a FUSE server no syncfs, so what the daemon
 * holds in its running journal transaction stays there until the next commit
 * (commit=, 5 s by default). Two calls the kernel does pass on make it
 * durable: syncfs(2) on the mount writes back every dirty page of the volume
 * to the daemon and waits for its replies, then fsync(2) of the root
 * directory reaches the daemon as FSYNCDIR, which commits the journal up to
 * the running transaction and waits for the commit (fs_fsync). No ioctl of
 * our own is needed; FOP_IOC_STATUS only tells a jgrfs mount from another.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/fop.h"

static const char sync_help[] =
    "usage: jgrfs sync MOUNTPOINT...\n"
    "\n"
    "Make everything written to the jgrfs volume mounted at MOUNTPOINT durable:\n"
    "the pages the kernel caches are written to the daemon and its journal is\n"
    "committed; returns when both are done. sync(1) alone does not do it: the\n"
    "kernel sends a FUSE filesystem no sync, so without this a crash after\n"
    "sync(1) loses up to the commit interval (commit=, 5 s by default).\n"
    "`sync -f MOUNTPOINT && sync MOUNTPOINT` does the same with coreutils.\n"
    "\n"
    "  -v, --verbose also the engine's own lines; -vv: everything\n"
    "  -q, --quiet   errors only\n"
    "  -h, --help    this text\n"
    "\n"
    "exit status: 0 durable, 1 an error (not a jgrfs mount, a write or commit failed),\n"
    "2 bad options\n";

/* One mount point: pages to the daemon, then its journal committed. */
static int sync_one(const char *mnt)
{
	struct fop_status st;
	int fd, rc = 0;

	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cli_err("%s: %s", mnt, strerror(errno)), -errno;
	/* only tells a jgrfs mount from another: said when not */
	rc = raidcli_status_ioctl(fd, mnt, "", &st);
	if (!rc && syncfs(fd)) {
		rc = -errno;
		cli_err("%s: writing back the cached pages: %s", mnt, strerror(-rc));
	} else if (!rc && fsync(fd)) {
		rc = -errno;
		cli_err("%s: committing the journal: %s", mnt, strerror(-rc));
	}
	close(fd);
	return rc;
}

int cmd_sync(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt, rc = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(sync_help, stdout);
			return 0;
		default:
			if (!cli_verbosity_opt(opt))
				break;
			return cli_usage_err(2, NULL);
		}
	}
	if (optind >= argc) {
		return cli_usage_err(2, "expected a mount point");
	}
	for (int i = optind; i < argc; i++)
		if (sync_one(argv[i]))
			rc = 1;
	return rc;
}
