// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_mount.c - `jgrfs mount`: assemble the array and serve the filesystem
 * on it through FUSE (src/fuse/, include/jgrfs/fop.h).
 *
 *	jgrfs mount [-o OPTIONS] [-f] [-d] DEV... MOUNTPOINT
 *	jgrfs mount -o members=DEV1:DEV2:... MOUNTPOINT        (the /etc/fstab form)
 *	jgrfs mount [-o OPTIONS] UUID=<uuid> MOUNTPOINT        (members found: scan.h)
 *
 * In background mode the fork comes first (fop_background_start), so that the
 * members are opened, locked and assembled by the process that will serve them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "jgrfs/fop.h"
#include "jgrfs/raid.h"
#include "raidcli.h"
#include "scan.h"

#define MOUNT_MAX_MEMBERS (RAID_MAX_MEMBERS + (int)RAID_MAX_SPARES) /* members and hot spares */
#define MOUNT_OPT_CONFIG 0x120 /* --config FILE: no short form */

static void mount_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs mount [-o OPTIONS] [-f] [-d] DEV... MOUNTPOINT\n"
		   "       jgrfs mount [-o OPTIONS] UUID=<uuid> MOUNTPOINT\n"
		   "       jgrfs mount -o members=DEV1:DEV2:... MOUNTPOINT\n\n"
		   "Assemble the array of DEV... (files, block devices or NBD URIs such as\n"
		   "nbd://host/export, any order) and mount\n"
		   "its filesystem at MOUNTPOINT through FUSE. After an unclean stop (kill -9,\n"
		   "power loss) the mount recovers first and logs one line saying what it did.\n"
		   "Hot spares of the array (jgrfs mkfs --spare, jgrfs spare add) given among\n"
		   "DEV... wait idle: a member that fails, or is left out with -o degraded, is\n"
		   "rebuilt onto one without a command (jgrfs status shows it).\n"
		   "UUID=<uuid> (as jgrfs examine prints it; members=UUID=<uuid> in fstab)\n"
		   "finds the members and hot spares of that array among the block devices\n"
		   "and the files of the config file's ARRAY lines, and says which it took;\n"
		   "two devices claiming one role are refused.\n"
		   "Every member must be given: a mount with one missing is refused unless\n"
		   "-o degraded. Options, members and MOUNTPOINT (not a mount point already)\n"
		   "are checked before anything is written: a refused mount changes nothing.\n"
		   "Unmount with `jgrfs umount MOUNTPOINT`: it waits until the daemon has\n"
		   "finished and the array is clean (fusermount3 -u, umount, or SIGTERM to\n"
		   "the daemon stop it too, but return before it has finished).\n"
		   "sync(1) does not reach a FUSE daemon: `jgrfs sync MOUNTPOINT` makes what\n"
		   "was written durable.\n\n"
		   "  -o OPTIONS       comma-separated mount options, may repeat (below)\n"
		   "  -f, --foreground stay in the foreground, log to stderr\n"
		   "      --config FILE with UUID=: the config file (default $JGRFS_CONF, else\n"
		   "                   /etc/jgrfs.conf): ARRAY UUID=<uuid> DEVICES=PATH,GLOB,...\n"
		   "  -d, --debug      as -o debug\n"
		   "  -v, --verbose    also the engine's lines (assembly, journal recovery) on\n"
		   "                   stderr until the daemon detaches; -vv: everything\n"
		   "  -q, --quiet      errors only\n"
		   "  -h, --help       this text\n\n"
		   "mount options:\n" FOP_OPTS_HELP "\n"
		   "In the background (the default) the command returns once the volume is\n"
		   "mounted (exit 0) or has failed (errors on stderr, exit 1); the daemon then\n"
		   "logs to syslog.\n\n"
		   "/etc/fstab (through mount.fuse3, which runs `jgrfs mount MOUNTPOINT -o ...`):\n"
		   "  jgrfs#mount  /srv/data  fuse  "
		   "members=/dev/sdb:/dev/sdc:/dev/sdd,data=declared,nofail  0  0\n"
		   "  jgrfs#mount  /srv/data  fuse  members=UUID=<uuid>,nofail  0  0\n");
}

/*
 * A volume mounted over another hides it, and `umount` then takes only the
 * top one: refuse a mountpoint that is one already (mountinfo, so a bind
 * mount of the same filesystem counts too), naming what is mounted there.
 */
static int mount_check_busy(const char *mnt)
{
	char real[PATH_MAX], line[2 * PATH_MAX], point[PATH_MAX], type[256], src[PATH_MAX];
	bool busy = false;
	FILE *f;

	if (!realpath(mnt, real))
		return cli_err("mountpoint %s: %s", mnt, strerror(errno)), -errno;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0; /* no /proc: nothing to tell with; the kernel mounts over it */
	while (fgets(line, sizeof(line), f)) {
		/* "36 35 0:52 / /mnt/x rw,... [optional fields] - fuse.jgrfs jgrfs rw,..." */
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(dash + 3, "%255s %4095s", type, src) != 2)
			continue;
		raidcli_unescape(point);
		if (!strcmp(point, real)) {
			busy = true; /* the last match is the one on top */
			raidcli_unescape(src);
		}
	}
	fclose(f);
	if (!busy)
		return 0;
	return cli_err("%s already has %s %s mounted (%s); unmount it first", mnt,
		       strchr("aeiou", type[0]) ? "an" : "a", type, src),
	       -EBUSY;
}

/*
 * Before anything is opened: a mountpoint left by a killed daemon fails statfs
 * with ENOTCONN (stat may still answer from the kernel's attribute cache); one
 * that holds a mount already is refused.
 */
static int mount_check_mountpoint(const char *mnt)
{
	struct statvfs sv;
	struct stat st;

	if (stat(mnt, &st) || statvfs(mnt, &sv)) {
		if (errno == ENOTCONN)
			return cli_err("%s: a dead FUSE mount (was its daemon killed?): run "
				       "`jgrfs umount --force %s` first",
				       mnt, mnt),
			       -ENOTCONN;
		return cli_err("mountpoint %s: %s", mnt, strerror(errno)), -errno;
	}
	if (!S_ISDIR(st.st_mode))
		return cli_err("mountpoint %s: not a directory", mnt), -ENOTDIR;
	return mount_check_busy(mnt);
}

/* The options against the array, before its first write: refused, it says why. */
struct mount_check {
	const struct fop_opts *o;
	int rc;
};

static int mount_check_array(void *ctx, struct raid_array *a)
{
	struct mount_check *k = ctx;

	k->rc = fop_assemble_check((void *)k->o, a);
	return k->rc;
}

/* What the command line asks, and what the command holds until it returns. */
struct mount_cmd {
	struct fop_opts o;
	char *paths[MOUNT_MAX_MEMBERS], *found[MOUNT_MAX_MEMBERS];
	char **members;	       /* paths, or the devices UUID= found */
	char *positional_list; /* "DEV1:DEV2:..." given as one argument, split */
	const char *mountpoint;
	int n;
	struct mount_check check; /* assembly's check_fn: the options against the array */
};

/* Options into @mc: -1 to go on, else the exit status (2: a usage error). */
static int mount_opts_parse(struct mount_cmd *mc, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"foreground", no_argument, NULL, 'f'},
	    {"debug", no_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {"config", required_argument, NULL, MOUNT_OPT_CONFIG},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:fdhns" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			if (fop_opts_parse(&mc->o, optarg))
				return cli_usage_err(2, NULL);
			break;
		case 'f':
			mc->o.foreground = true;
			break;
		case 'd':
			mc->o.debug = true;
			mc->o.foreground = true;
			break;
		case 'h':
			mount_usage(stdout);
			return 0;
		case MOUNT_OPT_CONFIG:
			scan_config = optarg;
			break;
		case 'n':
		case 's':
			break; /* mount(8)'s to its helper: no mtab, sloppy; neither applies */
		default:
			if (!cli_verbosity_opt(opt))
				break;
			return cli_usage_err(2, NULL);
		}
	}
	return -1;
}

/*
 * The members from -o members=, one "DEV1:DEV2:..." argument or DEV... and
 * the MOUNTPOINT, checked, then UUID= resolved (said on the terminal, before
 * the fork). -1 to go on, else the exit status.
 */
static int mount_members(struct mount_cmd *mc, int argc, char **argv)
{
	int npos = argc - optind, n = 0;

	if (mc->o.members) {
		if (npos != 1) {
			cli_err("with -o members=, give only the MOUNTPOINT");
			return cli_usage_err(2, NULL);
		}
		n = cli_split_members(mc->o.members, mc->paths, MOUNT_MAX_MEMBERS);
	} else if (npos == 2 && cli_member_list(argv[optind])) {
		/* "DEV1:DEV2:..." as one argument, as in a mount source */
		mc->positional_list = strdup(cli_member_list(argv[optind]));
		if (!mc->positional_list)
			return 1;
		n = cli_split_members(mc->positional_list, mc->paths, MOUNT_MAX_MEMBERS);
	} else if (npos >= 2 && npos - 1 <= MOUNT_MAX_MEMBERS) {
		n = npos - 1;
		for (int i = 0; i < n; i++)
			mc->paths[i] = argv[optind + i];
	} else {
		cli_err(npos < 2 ? "expected member devices and a mountpoint"
				 : "at most %d member devices",
			MOUNT_MAX_MEMBERS);
		return cli_usage_err(2, NULL);
	}
	if (n < 0) {
		cli_err("bad member list (at most %d, separated by ':')", MOUNT_MAX_MEMBERS);
		return cli_usage_err(2, NULL);
	}
	mc->mountpoint = argv[argc - 1];
	if (mount_check_mountpoint(mc->mountpoint))
		return 1;
	/* before the fork: which devices were taken is said on the terminal */
	mc->members = mc->paths;
	mc->n = scan_args(&mc->members, n, mc->found, MOUNT_MAX_MEMBERS);
	if (mc->n < 0)
		return 1;
	if (mc->members == mc->paths)
		scan_warn_spares(mc->paths, mc->n);
	return -1;
}

/*
 * Open, lock and assemble the members (raidcli_open_members(),
 * raidcli_open_assemble()), with the options checked against the array in
 * assembly's check_fn, before its first write, and its events to @watch
 * (made here, for notify= and the spare thread). 0 with @ra assembled, or -1
 * after a message saying why, nothing written.
 */
static int mount_assemble(struct mount_cmd *mc, struct raidcli_array *ra, struct fop_notify *notify,
			  struct fop_watch **watch)
{
	struct fop_opts *o = &mc->o;
	int code;

	mc->check.o = o;
	ra->paths = mc->members;
	ra->n = mc->n;
	if (raidcli_open_members(ra)) /* and locks them: cli.h */
		return -1;
	if (o->force && !o->rw_given)
		o->readonly = true; /* a forced mount is read-only unless asked otherwise */
	ra->cfg.readonly = o->readonly;
	ra->cfg.force = o->force;
	ra->cfg.max_read_errors = o->max_read_errors;
	ra->cfg.need_all = !o->degraded; /* a member left out by mistake: refused */
	ra->cfg.check_fn = mount_check_array;
	ra->cfg.check_ctx = &mc->check;
	if (fop_watch_new(notify, watch)) {
		cli_err("out of memory");
		return -1;
	}
	ra->cfg.event_fn = fop_watch_event; /* notify= and the spare thread */
	ra->cfg.event_ctx = *watch;
	/* the array's own assembly and resync lines (INFO): the daemon sums them up in one */
	ra->quiet = true;
	code = raidcli_open_assemble(ra);
	if (!code)
		return 0;
	if (code == -ENODEV)
		cli_err("cannot assemble the array: a member is missing (named above); "
			"nothing was written: give every member, or -o degraded to mount "
			"without it");
	else if (code == mc->check.rc)
		cli_err("mount refused: nothing was written");
	else
		cli_err("cannot assemble the array: %s", strerror(-code));
	return -1;
}

int cmd_mount(int argc, char **argv)
{
	struct mount_cmd mc = {0};
	struct raidcli_array ra = {0};
	struct fop_notify *notify = NULL;
	struct fop_watch *watch = NULL;
	int rc, code;

	fop_opts_init(&mc.o);
	rc = mount_opts_parse(&mc, argc, argv);
	if (rc < 0)
		rc = mount_members(&mc, argc, argv);
	if (rc >= 0)
		goto out;
	rc = 1;

	if (!mc.o.foreground) {
		int bg = fop_background_start(&code);

		if (bg < 0) {
			cli_err("cannot fork: %s", strerror(-bg));
			goto out;
		}
		if (bg > 0) {
			rc = code; /* the parent: the child has mounted, or said why not */
			goto out;
		}
	}

	mc.o.log_level = cli_log_level();
	fop_log_start(&mc.o); /* the engine's lines to syslog from here on (background) */
	/* every option checked before a member is written: libfuse's now, the rest
	 * against the array in assembly's check_fn, before its first write */
	if (fop_opts_check(&mc.o))
		goto out;

	/* before assembly, whose DegradedArray is an event too; after the fork (a thread) */
	if (mc.o.notify) {
		char mnt[PATH_MAX];

		if (!realpath(mc.mountpoint, mnt)) {
			cli_err("mountpoint %s: %s", mc.mountpoint, strerror(errno));
			goto out;
		}
		if (fop_notify_start(mc.o.notify, mnt, &notify))
			goto out;
	}
	if (mount_assemble(&mc, &ra, notify, &watch))
		goto out;
	/* the array owns the member devices from here on */
	code = fop_serve(ra.a, mc.mountpoint, &mc.o, watch);
	/*
	 * raid_stop() closed the members; cli_close_members() on NULL entries only
	 * frees what cli_member_hook (jgrfs-crash) wrapped around them.
	 */
	memset(ra.devs, 0, sizeof(ra.devs));
	cli_close_members(ra.devs, ra.n);
	rc = code ? 1 : 0;
out:
	fop_watch_free(watch);	 /* the array is stopped or was never assembled: no more events */
	fop_notify_stop(notify);
	free(mc.positional_list);
	fop_opts_free(&mc.o);
	return rc;
}
