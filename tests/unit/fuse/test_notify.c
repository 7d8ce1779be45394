// SPDX-License-Identifier: MIT
/*
 * tests/unit/fuse/test_notify.c - -o notify=PROGRAM (src/fuse/notify.c): each
 * event runs PROGRAM EVENT VOLUME DEVICE, one at a time and in order, with no
 * shell in between; a full queue drops and counts (T1); a program that fails
 * is counted; stop runs what is queued and leaves no child behind (N2, N3); a
 * relative or non-executable program is refused at start.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "jgrfs/fop.h"

struct t_dir {
	char path[64];
	char prog[128];
	char out[128];
};

/* A private directory with an executable script @body (sh) and its output file. */
static void t_dir_make(struct t_dir *d, const char *body)
{
	FILE *f;

	snprintf(d->path, sizeof(d->path), "/tmp/jgrfs-notify.XXXXXX");
	assert_non_null(mkdtemp(d->path));
	snprintf(d->prog, sizeof(d->prog), "%s/notify.sh", d->path);
	snprintf(d->out, sizeof(d->out), "%s/out", d->path);
	f = fopen(d->prog, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\nout=%s\n%s\n", d->out, body);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(d->prog, 0755), 0);
}

static void t_dir_free(struct t_dir *d)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	assert_int_equal(system(cmd), 0);
}

static void t_send(struct fop_notify *n, const char *name, const char *dev)
{
	struct raid_event ev = {
	    .kind = RAID_EV_MEMBER_FAILED, .name = name, .dev = dev, .progress = -1};

	fop_notify_event(n, &ev);
}

/* The output file, whole, in a static buffer. */
static const char *t_read(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return "";
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* No child of ours is left, reaped or not (T2). */
static void t_no_children(void)
{
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/*
 * Events run the program in order with EVENT VOLUME DEVICE as its arguments,
 * each one argument even with spaces and shell characters in it.
 */
static void test_notify_runs_in_order(void **state)
{
	struct fop_notify_counts c;
	struct fop_notify *n;
	struct t_dir d;

	(void)state;
	t_dir_make(&d, "printf '%s|%s|%s|%s\\n' \"$#\" \"$1\" \"$2\" \"$3\" >>\"$out\"");
	assert_int_equal(fop_notify_start(d.prog, "/mnt/my vol", &n), 0);
	t_send(n, "DegradedArray", "(missing)");
	t_send(n, "Fail", "/dev/sdc; rm -rf /");
	t_send(n, "RebuildStarted", "/srv/new disk.img");
	t_send(n, "Rebuild40", "/srv/new disk.img");
	t_send(n, "RebuildFinished", "/srv/new disk.img");
	fop_notify_counts_get(n, &c);
	fop_notify_stop(n);
	assert_string_equal(t_read(d.out), "3|DegradedArray|/mnt/my vol|(missing)\n"
					   "3|Fail|/mnt/my vol|/dev/sdc; rm -rf /\n"
					   "3|RebuildStarted|/mnt/my vol|/srv/new disk.img\n"
					   "3|Rebuild40|/mnt/my vol|/srv/new disk.img\n"
					   "3|RebuildFinished|/mnt/my vol|/srv/new disk.img\n");
	t_no_children();
	t_dir_free(&d);
}

/*
 * (T1) The first run waits until the test lets it go; meanwhile 200 events
 * arrive: the queue takes 64 (65 if the first was taken off already), the rest
 * are dropped and counted; every event is run or dropped, none twice, and
 * those run are run in order.
 */
static void test_notify_full_queue_drops(void **state)
{
	struct fop_notify_counts c;
	struct fop_notify *n;
	struct t_dir d;
	char go[160];
	FILE *f;

	(void)state;
	t_dir_make(&d, "while [ ! -e \"$out.go\" ]; do sleep 0.01; done\necho \"$1\" >>\"$out\"");
	snprintf(go, sizeof(go), "%s.go", d.out);
	assert_int_equal(fop_notify_start(d.prog, "/mnt", &n), 0);
	for (unsigned int i = 0; i < 200; i++) {
		char name[32];

		snprintf(name, sizeof(name), "E%u", i);
		t_send(n, name, "/dev/x");
	}
	fop_notify_counts_get(n, &c);
	if (c.dropped != 135 && c.dropped != 136)
		fail_msg("%llu of 200 events dropped with 64 queued",
			 (unsigned long long)c.dropped);
	f = fopen(go, "w");
	assert_non_null(f);
	fclose(f);
	fop_notify_stop(n); /* runs what is queued */
	{
		const char *out = t_read(d.out);
		unsigned int lines = 0, e, last = 0;
		int used;

		/* in order, E0 first; which later ones were dropped depends on when E0 left the
		 * queue */
		for (const char *p = out; *p; p += used, lines++) {
			assert_int_equal(sscanf(p, "E%u\n%n", &e, &used), 1);
			if (lines ? e <= last : e != 0)
				fail_msg("run %u was E%u, after E%u", lines, e, last);
			last = e;
		}
		assert_int_equal(lines + c.dropped, 200);
	}
	t_no_children();
	t_dir_free(&d);
}

/*
 * A program that exits non-zero, or is killed, is counted failed, and the next
 * event still runs. Runs are one at a time.
 */
static void test_notify_failures_counted(void **state)
{
	struct fop_notify_counts c;
	struct fop_notify *n;
	struct t_dir d;

	(void)state;
	t_dir_make(&d, "echo \"$1\" >>\"$out\"\n"
		       "[ \"$1\" = Fail ] && exit 3\n"
		       "[ \"$1\" = RebuildFailed ] && kill -9 $$\n"
		       "exit 0");
	assert_int_equal(fop_notify_start(d.prog, "/mnt", &n), 0);
	t_send(n, "Fail", "/dev/a");
	t_send(n, "RebuildFailed", "/dev/b");
	t_send(n, "SpareActive", "/dev/b");
	/* a run is counted once spawned, and the child may write its line first:
	 * wait for the line and the count (no sleep: the runs end on their own);
	 * one at a time, so by the third run the second was reaped and counted */
	do {
		sched_yield();
		fop_notify_counts_get(n, &c);
	} while (c.runs < 3 || !strstr(t_read(d.out), "SpareActive\n"));
	fop_notify_stop(n);
	assert_string_equal(t_read(d.out), "Fail\nRebuildFailed\nSpareActive\n");
	assert_int_equal(c.runs, 3);
	assert_int_equal(c.failed, 2);
	assert_int_equal(c.dropped, 0);
	t_no_children();
	t_dir_free(&d);
}

/* Refused at start: a relative path, a file that is not executable, a missing one. */
static void test_notify_refuses_bad_program(void **state)
{
	struct fop_notify *n = (struct fop_notify *)1;
	struct t_dir d;

	(void)state;
	t_dir_make(&d, "exit 0");
	assert_int_equal(fop_notify_start("notify.sh", "/mnt", &n), -EINVAL);
	assert_null(n);
	assert_int_equal(chmod(d.prog, 0644), 0);
	assert_int_equal(fop_notify_start(d.prog, "/mnt", &n), -EACCES);
	assert_int_equal(fop_notify_start("/nonexistent/notify", "/mnt", &n), -ENOENT);
	fop_notify_stop(NULL);
	t_dir_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_notify_runs_in_order),
	    cmocka_unit_test(test_notify_full_queue_drops),
	    cmocka_unit_test(test_notify_failures_counted),
	    cmocka_unit_test(test_notify_refuses_bad_program),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
