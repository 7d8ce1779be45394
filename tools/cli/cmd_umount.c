// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_umount.c - `jgrfs umount [-t SECONDS] [-l] MOUNTPOINT`: unmount a
 * volume and wait until its daemon has stopped the array cleanly, as `zfs
 * unmount` returns once the pool's data is on disk.
 *
 * fusermount3 -u returns as soon as the kernel has let go of the mount; the
 * daemon then still commits the journal, checkpoints and marks every member
 * superblock clean. This command:
 *   1. asks the daemon (FOP_IOC_STATUS) for its pid and the array's UUID, and
 *      holds the pid with a pidfd;
 *   2. finds the members among the daemon's open files (/proc/PID/fd: regular
 *      files and block devices whose superblock verifies with that UUID) and
 *      keeps them open, so that step 5 reads the very devices; members that are
 *      NBD exports (named by a URI in the status) get a connection of their own;
 *   3. unmounts: umount2() as root, else fusermount3 -u; when busy, names the
 *      processes with a cwd, root or open file under the mount point;
 *   4. waits for the daemon to exit (-t, default 60 s);
 *   5. reads every member superblock again: all must say clean.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/fop.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

extern char **environ;

static const char cmd_umount_help[] =
    "usage: jgrfs umount [-t SECONDS] [-l] [-v|-q] MOUNTPOINT\n"
    "\n"
    "Unmount the jgrfs volume at MOUNTPOINT and wait until its daemon has\n"
    "finished: journal committed, checkpointed, every member superblock marked\n"
    "clean. Then read the member superblocks back and check that each says clean.\n"
    "(fusermount3 -u returns before the daemon has done this.) Root unmounts with\n"
    "umount2(2), other users through fusermount3 -u. When the mount point is\n"
    "busy, the processes with a working directory, root or open file under it\n"
    "are named. A dead mount (its daemon killed) is refused unless --force.\n"
    "Success prints nothing.\n"
    "\n"
    "options:\n"
    "  -t, --timeout SECONDS    wait at most SECONDS for the daemon to exit\n"
    "                           (default 60; 0 waits for ever)\n"
    "  -l, --lazy               detach the mount now even when busy (MNT_DETACH,\n"
    "                           fusermount3 -z), then wait for the daemon, which\n"
    "                           finishes once the last user lets go\n"
    "  -f, --force              clear a dead mount (transport endpoint not\n"
    "                           connected): the array was not stopped cleanly and\n"
    "                           the next mount recovers it\n"
    "  -v, --verbose            say what was done: daemon stopped, members clean\n"
    "  -q, --quiet              no progress line while waiting, no warnings\n"
    "  -h, --help               this text\n"
    "\n"
    "exit status: 0 unmounted, daemon exited, every member clean; 1 not a jgrfs\n"
    "mount, busy, a dead mount without --force, the daemon still running after\n"
    "the timeout, or a member superblock not clean; 2 bad options\n";

/* A member of the array, found open by the daemon and kept open by us. */
struct umount_dev {
	int fd;			/* -1 for an NBD member */
	struct blk_dev *nbd;	/* an NBD member: our own connection to it */
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
	struct raidcli_sb sb;
};

struct umount_opts {
	const char *mnt;
	unsigned int timeout_s; /* 0: for ever */
	bool lazy, force, verbose, quiet;
};

/* ------------------------------------------------------------ the daemon */

/*
 * FOP_IOC_STATUS on @mnt. Returns 0; -ENOTCONN for a dead FUSE mount (no
 * message); else prints why and returns -errno.
 */
static int umount_query(const char *mnt, struct fop_status *st)
{
	int fd, rc = 0;

	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc != -ENOTCONN)
			cli_err("%s: %s", mnt, strerror(-rc));
		return rc;
	}
	memset(st, 0, sizeof(*st));
	if (ioctl(fd, FOP_IOC_STATUS, st)) {
		rc = -errno;
		if (rc == -ENOTTY || rc == -EINVAL || rc == -ENOSYS || rc == -EPERM)
			cli_err("%s: not a jgrfs mount", mnt);
		else if (rc != -ENOTCONN)
			cli_err("%s: status: %s", mnt, strerror(-rc));
	} else if (st->version != FOP_STATUS_VERSION || st->size != sizeof(*st)) {
		cli_err(
		    "%s: the daemon speaks status version %u (size %u); this tool %u (size %zu)",
		    mnt, st->version, st->size, FOP_STATUS_VERSION, sizeof(*st));
		rc = -EPROTO;
	} else if (!st->daemon_pid) {
		cli_err("%s: the daemon did not give its pid", mnt);
		rc = -EPROTO;
	}
	close(fd);
	return rc;
}

/*
 * The members of array @uuid among the open files of process @pid: each
 * regular file or block device, reopened through /proc/PID/fd/N (O_DIRECT when
 * the filesystem takes it: the daemon writes past the page cache), kept when
 * its superblock verifies. Returns how many were found (up to @room), or
 * -errno when the fd directory cannot be read.
 */
static int umount_members_find(pid_t pid, const uint8_t *uuid, struct umount_dev *devs, int room)
{
	char dir[64], link[PATH_MAX + 64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < room) {
		struct umount_dev *u = &devs[n];
		struct stat st;
		ssize_t len;
		bool dup = false;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		if (stat(link, &st) || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
			continue;
		for (int i = 0; i < n; i++)
			dup |= devs[i].dev == (S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev) &&
			       devs[i].ino == (S_ISBLK(st.st_mode) ? 0 : st.st_ino);
		if (dup)
			continue;
		len = readlink(link, u->path, sizeof(u->path) - 1);
		if (len <= 0)
			continue;
		u->path[len] = '\0';
		u->fd = open(link, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (u->fd < 0 && errno == EINVAL)
			u->fd = open(link, O_RDONLY | O_CLOEXEC);
		if (u->fd < 0)
			continue;
		if (raidcli_sb_read(u->fd, u->path, uuid, &u->sb)) {
			close(u->fd);
			continue;
		}
		u->dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
		u->ino = S_ISBLK(st.st_mode) ? 0 : st.st_ino;
		n++;
	}
	closedir(d);
	return n;
}

/*
 * The members and spares of the status that are NBD exports (they are no open
 * file of the daemon): a connection to each, appended to @devs. Failed members
 * are left out, as a file member whose superblock is behind would be. Returns
 * how many were added.
 */
static int umount_members_nbd(const struct fop_status *st, struct umount_dev *devs, int room)
{
	const char *names[FOP_STATUS_MEMBERS + FOP_STATUS_SPARES];
	int k = 0, n = 0;

	for (uint32_t i = 0; i < st->nmembers && i < FOP_STATUS_MEMBERS; i++)
		if ((st->members[i].flags & FOP_MEMBER_PRESENT) &&
		    !(st->members[i].flags & FOP_MEMBER_FAILED))
			names[k++] = st->members[i].name;
	for (uint32_t i = 0; i < st->nspares && i < FOP_STATUS_SPARES; i++)
		names[k++] = st->spares[i].name;
	for (int i = 0; i < k && n < room; i++) {
		struct umount_dev *u = &devs[n];

		if (!raid_dev_is_nbd(names[i]) || raid_dev_nbd_open(names[i], 0, &u->nbd))
			continue; /* the engine said why */
		u->fd = -1;
		snprintf(u->path, sizeof(u->path), "%s", names[i]);
		n++;
	}
	return n;
}

/* ------------------------------------------------------------ busy */

/* Whether @link (a /proc symlink) points at @mnt or below it. */
static bool umount_link_under(const char *link, const char *mnt)
{
	char t[PATH_MAX];
	ssize_t len = readlink(link, t, sizeof(t) - 1);
	size_t m = strlen(mnt);

	if (len <= 0)
		return false;
	t[len] = '\0';
	if (m == 1) /* "/" */
		return t[0] == '/';
	return !strncmp(t, mnt, m) && (t[m] == '\0' || t[m] == '/' || t[m] == ' ');
}

/* Whether process @pid has its cwd, root or an open file under @mnt. */
static bool umount_pid_holds(const char *pid, const char *mnt)
{
	char p[PATH_MAX];
	struct dirent *de;
	bool held = false;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%s/cwd", pid);
	if (umount_link_under(p, mnt))
		return true;
	snprintf(p, sizeof(p), "/proc/%s/root", pid);
	if (umount_link_under(p, mnt))
		return true;
	snprintf(p, sizeof(p), "/proc/%s/fd", pid);
	d = opendir(p);
	if (!d)
		return false;
	while (!held && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/fd/%s", pid, de->d_name);
		held = umount_link_under(p, mnt);
	}
	closedir(d);
	return held;
}

/* "MOUNTPOINT: busy" and the processes that keep it so, up to 10. */
static void umount_busy_print(const char *mnt, const char *canon)
{
	unsigned int shown = 0, more = 0;
	pid_t self = getpid();
	struct dirent *de;
	DIR *d = opendir("/proc");

	cli_err("%s: busy", mnt);
	while (d && (de = readdir(d))) {
		char comm[64] = "?", p[300];
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || atoi(de->d_name) == self ||
		    !umount_pid_holds(de->d_name, canon))
			continue;
		if (shown == 10) {
			more++;
			continue;
		}
		snprintf(p, sizeof(p), "/proc/%s/comm", de->d_name);
		f = fopen(p, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		fprintf(stderr, "  pid %s (%s)\n", de->d_name, comm);
		shown++;
	}
	if (d)
		closedir(d);
	if (more)
		fprintf(stderr, "  and %u more\n", more);
	else if (!shown)
		fprintf(stderr, "  (no process found holding it: a mount below it, or one "
				"this user cannot see)\n");
	fprintf(stderr, "  (close them, or jgrfs umount --lazy to detach now and wait)\n");
}

/* ------------------------------------------------------------ unmount */

/*
 * Run `fusermount3 -u [-z] @mnt` (no shell), its stderr into @err. Returns its
 * exit status, or -errno when it cannot be run.
 */
static int umount_fusermount(const char *mnt, bool lazy, char *err, size_t errlen)
{
	char *argv[] = {"fusermount3", "-u", lazy ? "-z" : (char *)mnt, lazy ? (char *)mnt : NULL,
			NULL};
	posix_spawn_file_actions_t fa;
	size_t got = 0;
	int pfd[2], rc, status;
	pid_t child;
	ssize_t r;

	err[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDERR_FILENO);
	rc = posix_spawnp(&child, "fusermount3", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		return -rc;
	}
	while ((r = read(pfd[0], err + got, errlen - 1 - got)) > 0 || (r < 0 && errno == EINTR))
		if (r > 0 && (got += (size_t)r) == errlen - 1)
			break;
	err[got] = '\0';
	close(pfd[0]);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Unmount @mnt (lazily with @lazy). Returns 0; -EBUSY (no message); else
 * prints why and returns -errno or -EIO.
 */
static int umount_detach(const char *mnt, bool lazy)
{
	char err[1024];
	int rc;

	if (geteuid() == 0) {
		if (!umount2(mnt, lazy ? MNT_DETACH : 0))
			return 0;
		rc = -errno;
		if (rc != -EBUSY)
			cli_err("%s: umount2: %s", mnt, strerror(-rc));
		return rc;
	}
	rc = umount_fusermount(mnt, lazy, err, sizeof(err));
	if (rc < 0) {
		cli_err("cannot run fusermount3: %s", strerror(-rc));
		return rc;
	}
	if (rc == 0)
		return 0;
	if (strstr(err, "busy"))
		return -EBUSY;
	fputs(err, stderr);
	cli_err("%s: fusermount3 -u exited with %d", mnt, rc);
	return -EIO;
}

/* ------------------------------------------------------------ wait */

static uint64_t umount_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether process @pid has exited, by its pidfd @pfd (or kill(0) when there is none). */
static bool umount_gone(int pfd, pid_t pid, int wait_ms)
{
	struct pollfd p = {.fd = pfd, .events = POLLIN};

	if (pfd >= 0) {
		int r = poll(&p, 1, wait_ms);

		return r > 0 || (r < 0 && errno != EINTR);
	}
	if (kill(pid, 0) && errno == ESRCH)
		return true;
	usleep((useconds_t)(wait_ms < 100 ? wait_ms : 100) * 1000);
	return kill(pid, 0) && errno == ESRCH;
}

/* Wait up to o->timeout_s for the daemon to exit. Returns 0, or -ETIMEDOUT. */
static int umount_wait(const struct umount_opts *o, int pfd, pid_t pid)
{
	uint64_t start = umount_now_ms(), end = start + (uint64_t)o->timeout_s * 1000;
	bool said = o->quiet || !isatty(STDERR_FILENO);

	for (;;) {
		uint64_t now = umount_now_ms();
		int slice = 100;

		if (o->timeout_s && now >= end)
			return -ETIMEDOUT;
		if (!said && now - start >= 1000) {
			fprintf(stderr, "waiting for the daemon (pid %d) to finish...\n", (int)pid);
			said = true;
		}
		if (!said && start + 1000 - now < (uint64_t)slice)
			slice = (int)(start + 1000 - now);
		if (o->timeout_s && end - now < (uint64_t)slice)
			slice = (int)(end - now);
		if (umount_gone(pfd, pid, slice))
			return 0;
	}
}

/* ------------------------------------------------------------ command */

/*
 * After the daemon's exit: read every member's superblock again; each current
 * one (a failed member's is left behind at an older event count) must say
 * clean. Returns 0, or 1 with a message naming the first dirty member.
 */
static int umount_check(const struct umount_opts *o, const uint8_t *uuid, struct umount_dev *devs,
			int n, pid_t pid)
{
	unsigned int members = 0, spares = 0, stale = 0, dirty = 0;
	const char *first = NULL;
	uint64_t newest = 0;
	int rc;

	for (int i = 0; i < n; i++) {
		rc = devs[i].nbd ? raidcli_sb_read_dev(devs[i].nbd, devs[i].path, uuid, &devs[i].sb)
				 : raidcli_sb_read(devs[i].fd, devs[i].path, uuid, &devs[i].sb);
		if (rc) {
			return cli_err("%s: cannot read its superblock after the unmount: %s",
				       devs[i].path,
				       rc == -ENOENT ? "no longer a member" : strerror(-rc));
		}
		if (!devs[i].sb.spare && (!members++ || jg_seq_after(devs[i].sb.events, newest)))
			newest = devs[i].sb.events;
	}
	for (int i = 0; i < n; i++) {
		const struct raidcli_sb *sb = &devs[i].sb;

		if (sb->spare) {
			spares++;
		} else if (sb->events != newest) {
			stale++; /* failed while mounted: the array stopped writing to it */
			if (o->verbose)
				printf("%s: left out: event count %llu behind the array's %llu "
				       "(a failed member)\n",
				       devs[i].path, (unsigned long long)sb->events,
				       (unsigned long long)newest);
			continue;
		}
		if (!sb->clean && !dirty++)
			first = devs[i].path;
	}
	if (dirty > 1)
		return cli_err("array not clean: %s and %u more members are dirty; the next "
			       "mount will resync",
			       first, dirty - 1);
	if (dirty)
		return cli_err("array not clean: %s is dirty; the next mount will resync", first);
	if (o->verbose) {
		printf("%s: unmounted, daemon pid %d stopped, array clean (%u members", o->mnt,
		       (int)pid, members - stale);
		if (spares)
			printf(", %u spare%s", spares, spares > 1 ? "s" : "");
		printf(")\n");
	}
	return 0;
}

/* A dead mount: the daemon is gone. Cleared with --force, else refused. */
static int umount_dead(const struct umount_opts *o)
{
	int rc;

	if (!o->force)
		return cli_err("%s: a dead FUSE mount (transport endpoint not connected: its "
			       "daemon was killed or crashed); clear it with `jgrfs umount --force "
			       "%s` (or fusermount3 -u %s); the next mount recovers the array",
			       o->mnt, o->mnt, o->mnt);
	rc = umount_detach(o->mnt, o->lazy);
	if (rc == -EBUSY) {
		cli_err("%s: busy (a dead mount: --lazy detaches it anyway)", o->mnt);
		return 1;
	}
	if (rc)
		return 1;
	if (!o->quiet)
		fprintf(stderr,
			"%s: dead mount cleared; the array was not stopped cleanly: the "
			"next mount recovers it\n",
			o->mnt);
	return 0;
}

int cmd_umount(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"lazy", no_argument, NULL, 'l'},
	    {"force", no_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    CLI_VERBOSITY_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct umount_opts o = {.timeout_s = 60};
	struct umount_dev *devs = NULL;
	char canon[PATH_MAX];
	struct fop_status st;
	int opt, rc, n = 0, pfd = -1, ret = 1;
	uint64_t v;
	pid_t pid;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "t:lfh" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			if (cli_parse_u64(optarg, 1u << 30, &v)) {
				return cli_usage_err(
				    2, "bad --timeout '%s': seconds, 0 for no limit", optarg);
			}
			o.timeout_s = (unsigned int)v;
			break;
		case 'l':
			o.lazy = true;
			break;
		case 'f':
			o.force = true;
			break;
		case 'h':
			fputs(cmd_umount_help, stdout);
			return 0;
		default:
			if (!cli_verbosity_opt(opt))
				break;
			return cli_usage_err(2, NULL);
		}
	}
	o.verbose = cli_verbosity > 0;
	o.quiet = cli_verbosity < 0;
	if (argc - optind != 1)
		return cli_usage_err(2, "expected one MOUNTPOINT");
	o.mnt = argv[optind];

	/* 1. the daemon and the array */
	rc = umount_query(o.mnt, &st);
	if (rc == -ENOTCONN)
		return umount_dead(&o);
	if (rc)
		return 1;
	pid = (pid_t)st.daemon_pid;
	if (!realpath(o.mnt, canon))
		return cli_err("%s: %s", o.mnt, strerror(errno));
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0 && errno == ESRCH)
		return cli_err("%s: daemon pid %d is not running", o.mnt, (int)pid);

	/* 2. its members, kept open to read them once it has gone */
	devs = calloc(CLI_MAX_DEVICES, sizeof(*devs));
	if (!devs) {
		cli_err("out of memory");
		goto out;
	}
	n = umount_members_find(pid, st.uuid, devs, CLI_MAX_DEVICES);
	if (n < 0) {
		cli_err("cannot read the open files of daemon pid %d: %s", (int)pid, strerror(-n));
		n = 0; /* unmount all the same; the check at the end says it could not */
	}
	n += umount_members_nbd(&st, devs + n, CLI_MAX_DEVICES - n);

	/* 3. unmount */
	rc = umount_detach(o.mnt, o.lazy);
	if (rc == -EBUSY)
		umount_busy_print(o.mnt, canon);
	if (rc)
		goto out;

	/* 4. wait for the daemon's exit */
	if (umount_wait(&o, pfd, pid)) {
		cli_err("daemon pid %d still running after %u s (still writing back?)", (int)pid,
			o.timeout_s);
		goto out;
	}

	/* 5. every member clean */
	if (n == 0)
		cli_err("%s: unmounted, daemon pid %d stopped, but no member of the array was "
			"found among its open files: cannot check that it is clean",
			o.mnt, (int)pid);
	else
		ret = umount_check(&o, st.uuid, devs, n, pid);
out:
	for (int i = 0; i < n; i++) {
		if (devs[i].fd >= 0)
			close(devs[i].fd);
		blk_close(devs[i].nbd);
	}
	free(devs);
	if (pfd >= 0)
		close(pfd);
	return ret;
}
