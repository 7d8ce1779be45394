// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_resync.c - `jgrfs resync-all on|off MOUNTPOINT`: the seeds'
 * SET_RESYNC_ALL / CLEAR_RESYNC_ALL (shared/seeds/006) on a mounted volume,
 * through the FUSE ioctls of include/jgrfs/fop.h. While on, every read of the
 * array resyncs the parity of the stripe row it touches.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "jgrfs/fop.h"

static void resync_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs resync-all on|off MOUNTPOINT\n\n"
		   "Switch resync-all on the array under a mounted jgrfs: while on, every read\n"
		   "resyncs the parity of the stripe row it touches (what fsck does for journal\n"
		   "replay). Root or the user who mounted only. `jgrfs status` shows the state.\n");
}

int cmd_resync(int argc, char **argv)
{
	unsigned long cmd;
	int fd, rc = 0;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		resync_usage(stdout);
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "on") && strcmp(argv[1], "off"))) {
		resync_usage(stderr);
		return 2;
	}
	cmd = !strcmp(argv[1], "on") ? FOP_IOC_SET_RESYNC_ALL : FOP_IOC_CLEAR_RESYNC_ALL;
	fd = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_err("%s: %s", argv[2], strerror(errno));
	if (ioctl(fd, cmd, 0)) {
		rc = errno == ENOTTY
			 ? cli_err("%s: not a jgrfs mount", argv[2])
			 : cli_err("%s: resync-all %s: %s", argv[2], argv[1], strerror(errno));
	}
	close(fd);
	return rc;
}
