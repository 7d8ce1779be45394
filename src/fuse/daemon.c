// SPDX-License-Identifier: MIT
/*
 * src/fuse/daemon.c - the daemon's life: background start, mount, serve, clean
 * unmount (include/jgrfs/fop.h).
 *
 * Background mode forks before anything else happens (threads do not survive a
 * fork: the journal's commit thread, the member rings' owners). The parent waits
 * on a pipe; the child opens the members, assembles the array, mounts the
 * filesystem and the FUSE session, and only then writes one byte to the pipe and
 * detaches (setsid, stdio to /dev/null, logs to syslog). So every error before
 * the mount reaches the user's terminal, and the parent exits 0 only when the
 * volume is mounted; if the child dies first, the parent exits with its status.
 *
 * Stopping: SIGTERM, SIGINT and SIGHUP only write to a pipe (async-signal-safe);
 * a stopper thread reads it and unmounts the mountpoint as umount(8) would. The
 * kernel then writes back its dirty pages through us, ends the connection, and
 * the FUSE loop returns; fusermount3 -u and umount end up at the same place.
 * After the loop: fs_unmount() (commit, checkpoint, mark clean), raid_stop()
 * (array clean). A second signal aborts the connection instead (files still open
 * keep a lazy unmount waiting), and the same clean stop follows.
 *
 * After kill -9 nothing of this runs: the next mount recovers, in raid_assemble()
 * (bitmap or full resync of a dirty array) and fs_mount() (journal replay and
 * journal-guided resync), and fop_serve() logs one line saying what they did.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "fop_i.h"

/* Background mode: the child's end of the pipe the parent waits on; -1 otherwise. */
static int fop_ready_fd = -1;
/* Set once the daemon has detached: stderr is /dev/null from then on. */
static atomic_bool fop_log_detached;
/* fop_log_start(): where lines go, and up to which level (JG_LOG_*). */
static bool fop_log_syslog;
static int fop_log_syslog_level = JG_LOG_INFO;
static int fop_log_stderr_level = JG_LOG_NOTICE;
/* Written by the signal handler, read by the stopper thread. */
static int fop_sig_pipe[2] = {-1, -1};

/* ------------------------------------------------------------------ logs */

static void fop_log_sink(void *ctx, int level, const char *subsys, const char *msg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};
	static const char *const what[] = {"error: ", "warning: ", "", "", ""};
	int l = level >= 0 && level <= JG_LOG_DEBUG ? level : JG_LOG_INFO;

	(void)ctx;
	/* syslog carries the severity itself; a terminal reader wants to see it */
	if (fop_log_syslog && l <= fop_log_syslog_level)
		syslog(prio[l], "%s: %s", subsys, msg);
	if (!atomic_load(&fop_log_detached) && l <= fop_log_stderr_level)
		fprintf(stderr, "jgrfs: %s: %s%s\n", subsys, what[l], msg);
}

/*
 * libfuse's own messages (bad options, mount failures) take the same way. It
 * writes some lines in pieces: gather them until the newline.
 */
static void fop_log_fuse(enum fuse_log_level level, const char *fmt, va_list ap)
{
	static __thread char line[1024];
	size_t n = strlen(line);

	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	n = strlen(line);
	if (n && line[n - 1] != '\n' && n < sizeof(line) - 1)
		return;
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	jg_log(level <= FUSE_LOG_ERR	   ? JG_LOG_ERR
	       : level <= FUSE_LOG_WARNING ? JG_LOG_WARN
	       : level <= FUSE_LOG_INFO	   ? JG_LOG_INFO
					   : JG_LOG_DEBUG,
	       "libfuse", "%s", line);
	line[0] = '\0';
}

void fop_log_start(const struct fop_opts *o)
{
	fop_log_stderr_level = o->debug ? JG_LOG_DEBUG : o->log_level;
	fop_log_syslog = !o->foreground;
	fop_log_syslog_level =
		fop_log_stderr_level > JG_LOG_INFO ? fop_log_stderr_level : JG_LOG_INFO;
	if (fop_log_syslog)
		openlog("jgrfs", LOG_PID, LOG_DAEMON);
	jg_log_set_sink(fop_log_sink, NULL);
	jg_log_set_level(fop_log_syslog && fop_log_syslog_level > fop_log_stderr_level
				 ? fop_log_syslog_level
				 : fop_log_stderr_level);
	fuse_set_log_func(fop_log_fuse);
}

/* ------------------------------------------------------------- background */

int fop_background_start(int *exit_code)
{
	int fds[2], status;
	pid_t pid;
	ssize_t n;
	char c;

	*exit_code = -1;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (pid == 0) {
		close(fds[0]);
		fop_ready_fd = fds[1];
		return 0;
	}
	close(fds[1]);
	do
		n = read(fds[0], &c, 1);
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == 1) {
		*exit_code = 0; /* mounted: the child serves on */
		return 1;
	}
	/* the child ended before mounting: its errors are on the terminal already */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		*exit_code = WEXITSTATUS(status) ? WEXITSTATUS(status) : 1;
	else
		*exit_code = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return 1;
}

/* The volume is mounted: tell the waiting parent, detach from the terminal. */
static void fop_background_ready(void)
{
	int fd;

	if (fop_ready_fd < 0)
		return;
	setsid();
	if (chdir("/"))
		jg_log(JG_LOG_WARN, "fuse", "chdir /: %s", strerror(errno));
	atomic_store(&fop_log_detached, true); /* its log is syslog's alone now */
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (write(fop_ready_fd, "", 1) != 1)
		jg_log(JG_LOG_WARN, "fuse", "cannot tell the parent: %s", strerror(errno));
	close(fop_ready_fd);
	fop_ready_fd = -1;
}

/* --------------------------------------------------------------- stopping */

static void fop_signal_handler(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(fop_sig_pipe[1], &c, 1) < 0) {
		/* nothing safe to do here; the pipe is only full if signals pile up */
	}
	errno = saved;
}

static int fop_signals_install(void)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction sa;

	if (pipe2(fop_sig_pipe, O_CLOEXEC))
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fop_signal_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL))
			return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN; /* a reader of a closed pipe must not kill the daemon */
	return sigaction(SIGPIPE, &sa, NULL) ? -errno : 0;
}

static void fop_signals_remove(void)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	close(fop_sig_pipe[0]);
	close(fop_sig_pipe[1]);
	fop_sig_pipe[0] = fop_sig_pipe[1] = -1;
}

/* Unmount @mnt as umount(8) or, without privilege, fusermount3 -u would. */
static void fop_unmount_kernel(const char *mnt, bool force)
{
	pid_t pid;

	if (geteuid() == 0) {
		if (force) {
			/* MNT_FORCE makes FUSE abort the connection: the loop ends now */
			if (umount2(mnt, MNT_FORCE) && errno != EINVAL)
				jg_log(JG_LOG_WARN, "fuse", "umount -f %s: %s", mnt,
				       strerror(errno));
			return;
		}
		if (!umount2(mnt, 0))
			return;
		if (errno == EBUSY) {
			jg_log(JG_LOG_WARN, "fuse",
			       "%s is busy: unmounting lazily; the volume "
			       "stops when the last file is closed (signal again to force)",
			       mnt);
			if (!umount2(mnt, MNT_DETACH))
				return;
		}
		jg_log(JG_LOG_ERR, "fuse", "umount %s: %s", mnt, strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "--", mnt, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

struct fop_stopper {
	pthread_t thread;
	const char *mnt;
	struct fuse_session *se;
};

/* Reads signals from the pipe; a zero byte from fop_serve() says "the loop is over". */
static void *fop_stopper_main(void *arg)
{
	struct fop_stopper *s = arg;
	unsigned int count = 0;
	char c;

	for (;;) {
		ssize_t n = read(fop_sig_pipe[0], &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1 || c == 0)
			return NULL;
		count++;
		jg_log(JG_LOG_INFO, "fuse", "signal %d: %s %s", c,
		       count == 1 ? "unmounting" : "aborting the connection of", s->mnt);
		fop_unmount_kernel(s->mnt, count > 1);
		if (count > 1)
			fuse_session_exit(s->se);
	}
}

/* --------------------------------------------------------------- serving */

/* One line when this mount followed an unclean stop (STYLE.md §9). */
static void fop_log_recovery(struct fop_ctx *c)
{
	struct fs_info fi;
	const struct jnl_recovery_report *r;

	fs_info_get(c->fs, &fi);
	r = &fi.recovery;
	if (!c->array_was_dirty && r->was_clean && !fi.orphans_freed)
		return;
	jg_log(
	    JG_LOG_NOTICE, "fuse",
	    "recovery: array_was_dirty=%d raid_rows_resynced=%llu raid_rows_repaired=%llu "
	    "raid_seconds=%.3f transactions_replayed=%llu blocks_replayed=%llu "
	    "blocks_revoked=%llu declared_blocks_resynced=%llu log_blocks_resynced=%llu "
	    "journal_rows_resynced=%llu journal_seconds=%.3f orphans_freed=%llu seconds=%.3f",
	    c->array_was_dirty, (unsigned long long)c->raid_resync.rows_checked,
	    (unsigned long long)c->raid_resync.rows_repaired, c->raid_resync.seconds,
	    (unsigned long long)r->transactions_replayed, (unsigned long long)r->blocks_replayed,
	    (unsigned long long)r->blocks_revoked, (unsigned long long)r->declared_blocks_resynced,
	    (unsigned long long)r->log_blocks_resynced, (unsigned long long)r->rows_resynced,
	    r->seconds, (unsigned long long)fi.orphans_freed, c->raid_resync.seconds + r->seconds);
}

/* The libfuse argument vector: our fixed options, then the user's. */
static int fop_fuse_args(const struct fop_opts *o, struct fuse_args *args)
{
	char opts[512];
	int rc = 0;

	/* max_write is not a session option in libfuse 3.14: fop_init() sets it */
	snprintf(opts, sizeof(opts), "default_permissions,subtype=jgrfs%s%s",
		 o->fuse_opts && strstr(o->fuse_opts, "fsname=") ? "" : ",fsname=jgrfs",
		 o->readonly ? ",ro" : "");
	rc |= fuse_opt_add_arg(args, "jgrfs");
	rc |= fuse_opt_add_arg(args, "-o");
	rc |= fuse_opt_add_arg(args, opts);
	if (o->fuse_opts) {
		rc |= fuse_opt_add_arg(args, "-o");
		rc |= fuse_opt_add_arg(args, o->fuse_opts);
	}
	if (o->debug)
		rc |= fuse_opt_add_arg(args, "-d");
	return rc ? -ENOMEM : 0;
}

/*
 * The kernel caps FUSE readahead at the backing device's default (128 KiB),
 * whatever init asked for; sequential reads then come in 128 KiB requests. As
 * root, raise the mount's own bdi to @kb. The bdi is named after the mount's
 * device number, found in mountinfo: touching the mount itself would wait for
 * INIT, which the loop has not answered yet. Failure costs speed only.
 */
static void fop_readahead_set(const char *mnt, unsigned int kb)
{
	unsigned int major = 0, minor = 0, ma, mi;
	char line[4096], path[PATH_MAX + 64], point[PATH_MAX];
	FILE *f;
	bool found = false;

	if (geteuid() != 0)
		return;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* "36 35 0:52 / /mnt/x rw,... - fuse.jgrfs jgrfs rw,..."; the last match is ours */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &ma, &mi, point) == 3 &&
		    !strcmp(point, mnt)) {
			major = ma;
			minor = mi;
			found = true;
		}
	}
	fclose(f);
	if (!found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
	f = fopen(path, "we");
	if (!f)
		return;
	fprintf(f, "%u\n", kb);
	if (fclose(f))
		jg_log(JG_LOG_DEBUG, "fuse", "%s: %s", path, strerror(errno));
}

int fop_opts_check(const struct fop_opts *o)
{
	static const struct fuse_lowlevel_ops none;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	int rc;

	rc = fop_fuse_args(o, &args);
	if (!rc) {
		/* parses the options only: a session opens /dev/fuse when mounted */
		se = fuse_session_new(&args, &none, sizeof(none), NULL);
		if (se)
			fuse_session_destroy(se);
		else
			rc = -EINVAL; /* libfuse said which option */
	}
	fuse_opt_free_args(&args);
	return rc;
}

int fop_assemble_check(void *ctx, struct raid_array *a)
{
	const struct fop_opts *o = ctx;
	struct fs_mount_opts fso = {.data_mode = o->data_mode, .readonly = o->readonly};
	struct raid_info ri;

	raid_info_get(a, &ri);
	if (o->resync_given && o->resync != ri.resync) {
		jg_log(JG_LOG_ERR, "fuse",
		       "resync=%s: this array was created with resync=%s; the "
		       "policy is chosen by `jgrfs mkfs --resync` and cannot change at mount",
		       raid_resync_policy_name(o->resync), raid_resync_policy_name(ri.resync));
		return -EINVAL;
	}
	return fs_mount_check(raid_array_dev(a), &fso);
}

/*
 * The array as assembled, before the filesystem sees it. The options were
 * checked against it before assembly wrote anything (fop_assemble_check).
 */
static void fop_check_array(struct fop_ctx *c, const struct fop_opts *o)
{
	struct raid_info ri;
	char roles[64] = "";
	size_t n = 0;

	raid_info_get(c->array, &ri);
	c->array_was_dirty = ri.was_dirty;
	c->raid_resync = ri.last_resync;
	if (o->data_mode == JNL_DATA_DECLARED && ri.resync != RAID_RESYNC_JOURNAL)
		jg_log(JG_LOG_WARN, "fuse",
		       "data=declared on an array with resync=%s: declared "
		       "writes gain nothing there (resync=journal is what they are for)",
		       raid_resync_policy_name(ri.resync));
	if (!ri.degraded)
		return;
	for (unsigned int i = 0; i < ri.nmembers && i < RAID_MAX_MEMBERS; i++)
		if (ri.members[i].failed || !ri.members[i].present)
			n += (size_t)snprintf(roles + n, n < sizeof(roles) ? sizeof(roles) - n : 0,
					      "%s%u", n ? "," : "", ri.members[i].role);
	if (!n)
		return; /* only a rebuild under way: its resume says so */
	/* as mdadm assembles an array that was degraded already: it says so */
	jg_log(JG_LOG_WARN, "fuse",
	       "mounting degraded, role %s missing (%s): `jgrfs replace MOUNTPOINT NEWDEV` "
	       "rebuilds it, `jgrfs readd` brings the same device back",
	       roles, o->degraded ? "-o degraded" : "failed before this mount, as recorded");
}

/* The mountpoint as an absolute path; a dead FUSE mount gets a clear message. */
static int fop_mountpoint(const char *mountpoint, char *out)
{
	struct statvfs sv;
	struct stat st;

	/* statfs always asks the daemon: a dead mount fails even while attributes are cached */
	if (!realpath(mountpoint, out) || stat(out, &st) || statvfs(out, &sv)) {
		int err = -errno;

		if (err == -ENOTCONN)
			jg_log(JG_LOG_ERR, "fuse",
			       "%s: a dead FUSE mount (was its daemon killed?): "
			       "run `fusermount3 -u %s` first",
			       mountpoint, mountpoint);
		else
			jg_log(JG_LOG_ERR, "fuse", "mountpoint %s: %s", mountpoint, strerror(-err));
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		jg_log(JG_LOG_ERR, "fuse", "mountpoint %s: not a directory", mountpoint);
		return -ENOTDIR;
	}
	return 0;
}

/* What fop_serve() sets up around the session, for fop_session_down(). */
struct fop_serve_state {
	struct fuse_args args;
	struct fuse_loop_config *loop;
	struct fop_stopper stopper;
	struct fop_uring *uring; /* -o uring: the requests' rings (uring.c) */
	char mnt[PATH_MAX]; /* the mountpoint, absolute */
	bool mounted, stopper_on;
};

/* The context of one mount: its locks, the array, the options, the watcher. */
static void fop_ctx_init(struct fop_ctx *c, struct raid_array *a, const struct fop_opts *o,
			 struct fop_watch *watch)
{
	memset(c, 0, sizeof(*c));
	jg_mutex_init(&c->rebuild_lock, PTHREAD_MUTEX_DEFAULT);
	pthread_mutex_init(&c->lost_lock, NULL);
	jg_mutex_init(&c->scrub_lock, PTHREAD_MUTEX_DEFAULT);
	pthread_cond_init(&c->scrub_cond, NULL);
	c->array = a;
	c->opts = o;
	c->notify = watch ? watch->notify : NULL;
	c->watch = watch;
	c->owner_uid = getuid();
}

static void fop_ctx_destroy(struct fop_ctx *c)
{
	jg_mutex_destroy(&c->rebuild_lock);
	pthread_mutex_destroy(&c->lost_lock);
	jg_mutex_destroy(&c->scrub_lock);
	pthread_cond_destroy(&c->scrub_cond);
}

/*
 * Mount the filesystem on the array (its journal recovers here) and say once
 * what the recovery did and what it left at risk.
 */
static int fop_fs_mount(struct fop_ctx *c, const struct fop_opts *o)
{
	struct raid_array *a = c->array;
	struct fs_mount_opts fso;
	int rc;

	memset(&fso, 0, sizeof(fso));
	fso.data_mode = o->data_mode;
	fso.commit_interval_ms = o->commit_s * 1000u;
	fso.readonly = o->readonly;
	{
		struct raid_info ri;

		/* a crash of a degraded array: let the journal name its rows (risk.c) */
		raid_info_get(a, &ri);
		fso.readonly_syncraid = o->readonly && ri.was_dirty && ri.degraded;
	}
	fso.cache_blocks = o->cache_blocks;
	fso.log_data_blocks = o->log_data_blocks;
	/*
	 * The journal reports its recovery itself (JG_LOG_INFO: syslog, and stderr
	 * with -v); fop_log_recovery() says it once for both layers, at
	 * JG_LOG_NOTICE, so the user reads one line.
	 */
	rc = fs_mount(raid_array_dev(a), &fso, &c->fs);
	if (rc) {
		jg_log(JG_LOG_ERR, "fuse", "cannot mount the filesystem: %s", strerror(-rc));
		return rc;
	}
	fop_log_recovery(c);
	fop_name_at_risk(c); /* the journal has asked for its rows: all are known now */
	return 0;
}

/*
 * The FUSE session: created, the signals routed to the stopper's pipe, mounted
 * on sv->mnt, and the stopper thread started. What was set up is in @sv for
 * fop_session_down(), also on failure.
 */
static int fop_session_up(struct fop_ctx *c, const struct fop_opts *o, struct fop_serve_state *sv)
{
	int rc;

	rc = fop_fuse_args(o, &sv->args);
	if (rc)
		return rc;
	c->se = fuse_session_new(&sv->args, &fop_ops, sizeof(fop_ops), c);
	if (!c->se)
		return -EINVAL; /* libfuse said which option */
	rc = fop_signals_install();
	if (rc)
		return rc;
	if (fuse_session_mount(c->se, sv->mnt))
		return -EIO; /* libfuse said why */
	sv->mounted = true;
	if (o->uring) {
		rc = fop_uring_attach(c->se, o->uring_poll_us, &sv->uring);
		if (rc)
			return rc;
		c->uring = sv->uring; /* for the status: its entries and buffers */
	}
	c->mount_time = time(NULL);
	fop_readahead_set(sv->mnt, o->max_write_bytes / 1024);

	sv->stopper.mnt = sv->mnt;
	sv->stopper.se = c->se;
	rc = -pthread_create(&sv->stopper.thread, NULL, fop_stopper_main, &sv->stopper);
	if (rc)
		return rc;
	sv->stopper_on = true;
	return 0;
}

/*
 * Serve until unmounted: the background work a mount resumes or starts, the
 * background parent told, then the FUSE loop.
 */
static int fop_session_run(struct fop_ctx *c, const struct fop_opts *o, struct fop_serve_state *sv)
{
	int rc;

	jg_log(JG_LOG_INFO, "fuse", "mounted %s data=%s pid=%d", sv->mnt,
	       jnl_data_mode_name(o->data_mode), (int)getpid());
	fop_rebuild_resume(c); /* a rebuild paused by an unmount or cut by a crash */
	fop_watch_start(c);    /* then a lost member onto a spare: spare.c (U2) */
	fop_isync_start(c);    /* a new array's parity, in the background */
	fop_scrub_resume(c);   /* a scrub paused by an unmount or cut by a crash */
	fop_background_ready();

	sv->loop = fuse_loop_cfg_create();
	if (!sv->loop)
		return -ENOMEM;
	fuse_loop_cfg_set_max_threads(sv->loop, o->max_threads);
	fuse_loop_cfg_set_clone_fd(sv->loop, 0);
	rc = fuse_session_loop_mt(c->se, sv->loop);
	if (rc > 0)
		rc = -rc; /* a signal number would be positive; we catch none there */
	if (rc)
		jg_log(JG_LOG_ERR, "fuse", "session loop: %s", strerror(-rc));
	return rc;
}

/* Undo fop_session_up() and the loop, as far as they went: stopper, signals, session. */
static void fop_session_down(struct fop_ctx *c, struct fop_serve_state *sv)
{
	if (sv->stopper_on) {
		char z = 0;

		if (write(fop_sig_pipe[1], &z, 1) != 1)
			pthread_cancel(sv->stopper.thread);
		pthread_join(sv->stopper.thread, NULL);
	}
	if (fop_sig_pipe[0] >= 0)
		fop_signals_remove();
	if (sv->loop)
		fuse_loop_cfg_destroy(sv->loop);
	fop_uring_detach(sv->uring); /* its threads may reply: before the session goes */
	if (c->se) {
		if (sv->mounted)
			fuse_session_unmount(c->se);
		fuse_session_destroy(c->se); /* runs fop_destroy once the session was up */
	}
	fuse_opt_free_args(&sv->args);
}

/*
 * The clean stop, the session gone: the daemon's threads, then the filesystem
 * (commit, checkpoint, clean), then the array. Returns @rc, or the first error
 * of the stop when @rc is 0.
 */
static int fop_volume_stop(struct fop_ctx *c, int rc, const struct fop_serve_state *sv)
{
	int rc2;

	fop_isync_stop(c);   /* paused at its mark: the next mount resumes it */
	fop_watch_stop(c);   /* spare.c (U3): no rebuild starts after the join */
	fop_rebuild_join(c); /* an online rebuild pauses at its mark; the next mount resumes it */
	fop_scrub_join(c);   /* so does a scrub; before fs_unmount: it names files */
	if (c->fs) {
		rc2 = fs_unmount(c->fs);
		if (rc2)
			jg_log(JG_LOG_ERR, "fuse", "unmount of the filesystem failed: %s",
			       strerror(-rc2));
		rc = rc ? rc : rc2;
	}
	rc2 = raid_stop(c->array);
	if (rc2)
		jg_log(JG_LOG_ERR, "fuse", "stopping the array failed: %s", strerror(-rc2));
	rc = rc ? rc : rc2;
	if (sv->mounted && !rc)
		jg_log(JG_LOG_INFO, "fuse", "unmounted %s cleanly", sv->mnt);
	return rc;
}

/*
 * Mount and serve @a on @mountpoint until unmounted: the filesystem, the FUSE
 * session, the loop; then the session down and the clean stop, whatever failed.
 */
int fop_serve(struct raid_array *a, const char *mountpoint, const struct fop_opts *o,
	      struct fop_watch *watch)
{
	struct fop_serve_state sv = {.args = FUSE_ARGS_INIT(0, NULL)};
	struct fop_ctx c;
	int rc;

	fop_ctx_init(&c, a, o, watch);
	fop_log_start(o); /* again, for a caller that did not: the same routes */

	rc = fop_mountpoint(mountpoint, sv.mnt);
	if (rc)
		goto out;
	fop_check_array(&c, o);
	rc = fop_fs_mount(&c, o);
	if (!rc)
		rc = fop_session_up(&c, o, &sv);
	if (!rc)
		rc = fop_session_run(&c, o, &sv);
out:
	fop_session_down(&c, &sv);
	rc = fop_volume_stop(&c, rc, &sv);
	fop_ctx_destroy(&c);
	fuse_set_log_func(NULL);
	jg_log_set_sink(NULL, NULL);
	if (fop_log_syslog)
		closelog();
	fop_log_syslog = false;
	return rc;
}
