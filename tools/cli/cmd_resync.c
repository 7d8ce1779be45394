// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_resync.c - `jgrfs resync-all on|off MOUNTPOINT`: the seeds'
 * SET_RESYNC_ALL / CLEAR_RESYNC_ALL (shared/seeds/006) on a mounted volume,
 * through the FUSE ioctls of include/jgrfs/fop.h. While on, every read of the
 * array resyncs the parity of the stripe row it touches.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
		   "replay). Root or the user who mounted only. `jgrfs status` shows the state.\n\n"
		   "  -v, --verbose    accepted, as by every command (nothing more to say)\n"
		   "  -q, --quiet      accepted, as by every command\n"
		   "  -h, --help       this text\n");
}

int cmd_resync(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	unsigned long cmd;
	const char *mnt, *what;
	int opt, fd, rc = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		if (opt == 'h') {
			resync_usage(stdout);
			return 0;
		}
		if (cli_verbosity_opt(opt))
			return cli_usage_err(2, NULL);
	}
	if (argc - optind != 2 || (strcmp(argv[optind], "on") && strcmp(argv[optind], "off")))
		return cli_usage_err(2, "expected on or off, and a MOUNTPOINT");
	what = argv[optind];
	mnt = argv[optind + 1];
	cmd = !strcmp(what, "on") ? FOP_IOC_SET_RESYNC_ALL : FOP_IOC_CLEAR_RESYNC_ALL;
	fd = open(mnt, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_err("%s: %s", mnt, strerror(errno));
	if (ioctl(fd, cmd, 0)) {
		rc = errno == ENOTTY ? cli_err("%s: not a jgrfs mount", mnt)
				     : cli_err("%s: resync-all %s: %s", mnt, what, strerror(errno));
	}
	close(fd);
	return rc;
}
