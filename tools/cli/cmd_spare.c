// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_spare.c - `jgrfs spare add|remove MOUNTPOINT DEV`: hot spares of a
 * mounted volume (FOP_IOC_SPARE_ADD / _REMOVE, include/jgrfs/fop.h). The daemon
 * writes or wipes the spare's superblock (src/raid/spare.c); a member lost
 * later is rebuilt onto an idle spare without a command. `jgrfs status` lists
 * the spares and what they do. A spare is found again at the next mount only
 * when it is given with the members (as mdadm needs it in mdadm.conf).
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

static void spare_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs spare add [--size SIZE] [--force] MOUNTPOINT DEV\n"
		   "       jgrfs spare remove MOUNTPOINT DEV\n\n"
		   "Hot spares of the volume mounted at MOUNTPOINT. `add` writes a spare\n"
		   "superblock on DEV (a file or block device at least as large as a member;\n"
		   "it must not hold a member of this or another array): when a member fails,\n"
		   "or is missing now, the daemon rebuilds it onto an idle spare without a\n"
		   "command. `remove` wipes an idle spare's superblock; a spare being rebuilt\n"
		   "onto is a member already and cannot be removed. `jgrfs status` lists the\n"
		   "spares. Give the spares with the members to `jgrfs mount` (or members=)\n"
		   "so that the next mount finds them; `jgrfs mkfs --spare DEV` writes them\n"
		   "with a new volume. DEV that holds a filesystem, RAID, LVM, swap or\n"
		   "partition-table signature is refused unless --force; one in use by another\n"
		   "process, or a member of another jgrfs array, is refused (jgrfs wipe\n"
		   "removes a jgrfs superblock).\n\n"
		   "  -s, --size SIZE  (add) create DEV as a sparse file of SIZE if it is missing\n"
		   "  -f, --force      (add) overwrite what DEV holds\n"
		   "  -v, --verbose    also the engine's own lines; -vv: everything\n"
		   "  -q, --quiet      errors only: no warnings, no progress\n"
		   "  -h, --help       this text\n\n"
		   "exit status: 0 done, 1 error, 2 bad usage\n");
}

static int spare_err(const char *mnt, const char *path, bool add, int err)
{
	switch (err) {
	case ENOTTY:
		return cli_err("%s: not a jgrfs mount", mnt);
	case EPERM:
		return cli_err("%s: only root or the user who mounted may change spares", mnt);
	case EROFS:
		return cli_err("%s: mounted read-only", mnt);
	case EEXIST:
		return cli_err("%s: refused: it is a member or spare already, or holds a member "
			       "superblock of this array or another (see the daemon's log)",
			       path);
	case EINVAL:
		return cli_err("%s: %s (see the daemon's log)", path,
			       add ? "too small for a member of this array, or not usable"
				   : "bad request");
	case ENOSPC:
		return cli_err("%s: the array has the most spares it takes", mnt);
	case ENOENT:
		return cli_err("%s: not a spare of %s", path, mnt);
	case EBUSY:
		return cli_err("%s: is a member (a rebuild onto it runs or has run), not an "
			       "idle spare",
			       path);
	default:
		return cli_err("%s: spare %s %s: %s", mnt, add ? "add" : "remove", path,
			       strerror(err));
	}
}

int cmd_spare(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"size", required_argument, NULL, 's'},
	    {"force", no_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct probe_cfg pc = { .force_opt = "--force", .check_lock = true,
				.other_array_final = true };
	struct fop_status st;
	struct fop_spare rq;
	uint64_t size = 0;
	char path[PATH_MAX];
	const char *verb, *mnt, *dev;
	bool add;
	int opt, fd, rc = 1;

	memset(&rq, 0, sizeof(rq));
	optind = 1;
	while ((opt = getopt_long(argc, argv, "s:fh" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (cli_parse_size(optarg, &size) || size < (1u << 20))
				return cli_usage_err(2, "--size %s: expected a size such as 1G",
						     optarg);
			break;
		case 'f':
			pc.force = true;
			break;
		case 'h':
			spare_usage(stdout);
			return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	if (argc - optind != 3)
		return cli_usage_err(2, "expected add or remove, a MOUNTPOINT and a DEV");
	verb = argv[optind];
	mnt = argv[optind + 1];
	dev = argv[optind + 2];
	if (!strcmp(verb, "add")) {
		add = true;
	} else if (!strcmp(verb, "remove")) {
		add = false;
		if (size || pc.force)
			return cli_usage_err(2, "--size and --force are for spare add");
	} else {
		return cli_usage_err(2, "'%s': expected add or remove", verb);
	}
	if (raid_dev_is_nbd(dev)) {
		/* a URI, handed to the daemon as it is: no file to create or resolve */
		if (size)
			return cli_err("%s: --size is for files; an NBD export is sized on its "
				       "server", dev);
		snprintf(path, sizeof(path), "%s", dev);
	} else if (add && size && access(dev, F_OK)) {
		fd = open(dev, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)size))
			return cli_err("%s: cannot create: %s", dev, strerror(errno));
		close(fd);
	}
	/* the daemon opens it by this path; remove compares real paths */
	if (!raid_dev_is_nbd(dev) && !realpath(dev, path))
		return cli_err("%s: %s%s", dev, strerror(errno),
			       add && errno == ENOENT ? " (create it, or give --size)" : "");
	if (strlen(path) >= sizeof(rq.path))
		return cli_err("%s: path too long", path);
	memcpy(rq.path, path, strlen(path) + 1);

	fd = open(mnt, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_err("%s: %s", mnt, strerror(errno));
	/* issue 44: what DEV holds, before the daemon writes it */
	if (add) {
		if (ioctl(fd, FOP_IOC_STATUS, &st)) {
			spare_err(mnt, path, add, errno);
			goto out;
		}
		pc.uuid = st.uuid;
		if (probe_dev(path, &pc, NULL))
			goto out;
	}
	if (ioctl(fd, add ? FOP_IOC_SPARE_ADD : FOP_IOC_SPARE_REMOVE, &rq)) {
		spare_err(mnt, path, add, errno);
		goto out;
	}
	printf("%s %s\n", add ? "spare added:" : "spare removed:", path);
	rc = 0;
out:
	close(fd);
	return rc;
}
