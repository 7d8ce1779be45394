// SPDX-License-Identifier: MIT
/*
 * src/fuse/notify.c - `-o notify=PROGRAM`: run a program on each array event
 * (include/jgrfs/raid.h, enum raid_event_kind), as mdadm --monitor does:
 *
 *	PROGRAM EVENT MOUNTPOINT DEVICE      e.g.  Fail /srv/data /dev/sdc
 *
 * mdadm passes the event, the md device and the component device; the volume
 * here has no device of its own, so its mountpoint stands in for the md device.
 *
 * Events are met by the threads that do I/O, with array locks held
 * (raid_event_fn): fop_notify_event() only copies the event into a bounded
 * queue and wakes the notifier thread, which runs PROGRAM for each, one at a
 * time, in order, and waits for it.
 *
 * (T1) The queue is bounded (FOP_NOTIFY_QUEUE): an event that finds it full is
 *      dropped and counted; the first drop is logged, the rest only counted
 *      (status shows them).
 * (T2) PROGRAM is spawned with an argument vector (posix_spawn, never a shell),
 *      stdin from /dev/null, every signal at its default and none blocked (the
 *      daemon ignores SIGPIPE and catches SIGTERM); its stdout and stderr are the
 *      daemon's (the terminal until a background daemon detaches, then
 *      /dev/null). Every child is reaped by the thread that spawned it: no zombie.
 * (T3) fop_notify_stop() runs what is queued, then joins the thread. A program
 *      still running FOP_NOTIFY_STOP_WAIT_S after the stop began is killed, and
 *      events not yet run then are dropped (counted): an unmount is not held up
 *      for long by a program that hangs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fop_i.h"

extern char **environ;

#define FOP_NOTIFY_QUEUE 64u
#define FOP_NOTIFY_STOP_WAIT_S 5.0

struct fop_notify_ev {
	char name[32]; /* "Fail", "Rebuild40", ... */
	char dev[64];
};

struct fop_notify {
	char *program;
	char *volume;
	pthread_t thread;

	pthread_mutex_t lock; /* a leaf: protects everything below */
	pthread_cond_t wake;  /* an event queued, or stop */
	struct fop_notify_ev q[FOP_NOTIFY_QUEUE];
	unsigned int head, len;
	bool stop;
	double stop_deadline; /* (T3) monotonic seconds */
	bool drop_logged, fail_logged;
	struct fop_notify_counts counts;
};

static double fop_notify_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* true once the stop began and its grace time is over (T3). */
static bool fop_notify_past_deadline(struct fop_notify *n)
{
	bool past;

	pthread_mutex_lock(&n->lock);
	past = n->stop && fop_notify_now() > n->stop_deadline;
	pthread_mutex_unlock(&n->lock);
	return past;
}

/* Wait for child @pid (T2); killed once past the deadline (T3). Returns its status. */
static int fop_notify_reap(struct fop_notify *n, pid_t pid)
{
	struct timespec nap = {0, 1000000}; /* 1 ms, growing to 50 ms */
	bool killed = false;
	int status = 0;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return 0; /* ECHILD: reaped already (SIGCHLD ignored by someone) */
		if (!killed && fop_notify_past_deadline(n)) {
			jg_log(JG_LOG_WARN, "fuse", "notify: %s still running at unmount: killed",
			       n->program);
			kill(pid, SIGKILL);
			killed = true;
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 50000000)
			nap.tv_nsec *= 2;
	}
}

/* Count a run that failed (@why: "exit status 3"); log the first only. */
static void fop_notify_failed(struct fop_notify *n, const char *name, const char *why)
{
	bool first;

	pthread_mutex_lock(&n->lock);
	n->counts.failed++;
	first = !n->fail_logged;
	n->fail_logged = true;
	pthread_mutex_unlock(&n->lock);
	if (first)
		jg_log(JG_LOG_WARN, "fuse",
		       "notify: %s %s: %s (further failures are counted in status, not logged)",
		       n->program, name, why);
}

/* Run PROGRAM for one event and wait for it (T2). */
static void fop_notify_run(struct fop_notify *n, struct fop_notify_ev *ev)
{
	char *argv[] = {n->program, ev->name, n->volume, ev->dev, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	char why[64];
	pid_t pid;
	int rc, status;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	rc = posix_spawn(&pid, n->program, &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		snprintf(why, sizeof(why), "cannot run it: %s", strerror(rc));
		fop_notify_failed(n, ev->name, why);
		return;
	}
	pthread_mutex_lock(&n->lock);
	n->counts.runs++;
	pthread_mutex_unlock(&n->lock);
	jg_log(JG_LOG_DEBUG, "fuse", "notify: %s %s %s %s pid=%d", n->program, ev->name, n->volume,
	       ev->dev, (int)pid);
	status = fop_notify_reap(n, pid);
	if (WIFSIGNALED(status)) {
		snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
		fop_notify_failed(n, ev->name, why);
	} else if (WIFEXITED(status) && WEXITSTATUS(status)) {
		snprintf(why, sizeof(why), "exit status %d", WEXITSTATUS(status));
		fop_notify_failed(n, ev->name, why);
	}
}

static void *fop_notify_main(void *arg)
{
	struct fop_notify *n = arg;
	struct fop_notify_ev ev;

	for (;;) {
		pthread_mutex_lock(&n->lock);
		while (!n->len && !n->stop)
			pthread_cond_wait(&n->wake, &n->lock);
		if (!n->len) {
			pthread_mutex_unlock(&n->lock);
			return NULL; /* stopped, and the queue is empty */
		}
		ev = n->q[n->head];
		n->head = (n->head + 1) % FOP_NOTIFY_QUEUE;
		n->len--;
		if (n->stop && fop_notify_now() > n->stop_deadline) {
			n->counts.dropped++; /* (T3) */
			pthread_mutex_unlock(&n->lock);
			continue;
		}
		pthread_mutex_unlock(&n->lock);
		fop_notify_run(n, &ev);
	}
}

int fop_notify_start(const char *program, const char *volume, struct fop_notify **out)
{
	struct fop_notify *n;
	int rc;

	*out = NULL;
	if (program[0] != '/') {
		jg_log(JG_LOG_ERR, "fuse", "notify=%s: an absolute path is needed", program);
		return -EINVAL;
	}
	if (access(program, X_OK)) {
		rc = -errno;
		jg_log(JG_LOG_ERR, "fuse", "notify=%s: %s", program, strerror(-rc));
		return rc;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->program = strdup(program);
	n->volume = strdup(volume);
	if (!n->program || !n->volume) {
		rc = -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->wake, NULL);
	rc = -pthread_create(&n->thread, NULL, fop_notify_main, n);
	if (rc) {
		jg_log(JG_LOG_ERR, "fuse", "notify: cannot start its thread: %s", strerror(-rc));
		pthread_cond_destroy(&n->wake);
		pthread_mutex_destroy(&n->lock);
		goto fail;
	}
	*out = n;
	return 0;
fail:
	free(n->program);
	free(n->volume);
	free(n);
	return rc;
}

void fop_notify_event(void *ctx, const struct raid_event *ev)
{
	struct fop_notify *n = ctx;
	struct fop_notify_ev *e;
	bool first_drop = false;

	pthread_mutex_lock(&n->lock);
	if (n->len == FOP_NOTIFY_QUEUE) {
		n->counts.dropped++; /* (T1) */
		first_drop = !n->drop_logged;
		n->drop_logged = true;
	} else {
		e = &n->q[(n->head + n->len) % FOP_NOTIFY_QUEUE];
		snprintf(e->name, sizeof(e->name), "%s", ev->name);
		snprintf(e->dev, sizeof(e->dev), "%s", ev->dev);
		n->len++;
		pthread_cond_signal(&n->wake);
	}
	pthread_mutex_unlock(&n->lock);
	if (first_drop)
		jg_log(JG_LOG_WARN, "fuse",
		       "notify: %u events waiting for %s: event %s dropped (further drops are "
		       "counted in status, not logged)",
		       FOP_NOTIFY_QUEUE, n->program, ev->name);
}

void fop_notify_counts_get(struct fop_notify *n, struct fop_notify_counts *out)
{
	pthread_mutex_lock(&n->lock);
	*out = n->counts;
	pthread_mutex_unlock(&n->lock);
}

void fop_notify_stop(struct fop_notify *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stop = true;
	n->stop_deadline = fop_notify_now() + FOP_NOTIFY_STOP_WAIT_S;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	if (n->counts.failed || n->counts.dropped)
		jg_log(JG_LOG_WARN, "fuse",
		       "notify: %s: %llu runs, %llu failed, %llu events dropped", n->program,
		       (unsigned long long)n->counts.runs, (unsigned long long)n->counts.failed,
		       (unsigned long long)n->counts.dropped);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n->program);
	free(n->volume);
	free(n);
}
