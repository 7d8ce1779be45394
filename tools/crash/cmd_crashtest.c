// SPDX-License-Identifier: MIT
/*
 * tools/crash/cmd_crashtest.c - `jgrfs-crash crashtest`: crash a mounted volume and prove
 * that recovery repairs it, the write hole included.
 *
 * One iteration:
 *   1. mkfs a 4-member RAID5 (5-member RAID6) over sparse files, mount it with the
 *      real daemon (`jgrfs mount -f`) in the mode under test;
 *   2. run the seeded workload (tools/crash/crash_model.c) through the mount;
 *   3. crash at a random operation: kill -9 of the daemon, or with --power-cut a
 *      SIGUSR1 that makes the daemon's fault domain (--powercut signal) drop
 *      or tear every member write not yet flushed, then die on the spot;
 *   4. remount (recovery runs; its time is measured) and verify:
 *      (1) `jgrfs fsck -n` finds nothing,
 *      (2) the files hold every durable byte and no byte never written (model),
 *      (3) `jgrfs scrub` finds 0 parity mismatches,
 *      (4) the write hole: the array assembled with each member left out in turn
 *          (in-process, read-only) reads every file back identical.
 * The table at the end counts, per mode, the damage each check found; the exit
 * status is 1 when a protected mode (declared, bitmap, full) showed any.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "crash.h"
#include "crash_cmds.h"
#include "crash_inproc.h"
#include "opcov.h"
#include "../cli/spawn.h"
#include "jgrfs/fop.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

enum ct_mode { CT_DECLARED, CT_BITMAP, CT_FULL, CT_OFF, CT_NMODES };

static const struct {
	const char *name, *data, *resync;
	bool protected_mode;
} ct_modes[CT_NMODES] = {
	[CT_DECLARED] = { "declared", "declared", "journal", true },
	[CT_BITMAP] = { "bitmap", "ordered", "bitmap", true },
	[CT_FULL] = { "full", "ordered", "full", true },
	[CT_OFF] = { "off", "ordered", "off", false },
};

struct ct_opts {
	unsigned int modes;	/* bit per enum ct_mode */
	unsigned int level;
	unsigned int iterations;
	unsigned int ops;
	bool power_cut;
	bool keep;
	bool verbose;
	uint64_t seed;
	uint64_t member_bytes;
	bool in_process;
	bool size_set;
	unsigned int seed_from;		/* first iteration index (seed range) */
	uint64_t min_cov;		/* --min-coverage; 0: not checked */
	uint64_t skip_points;		/* bit per enum jg_opoint not checked */
	enum ct_lifecycle lifecycle;
	bool eio;
	uint64_t journal_blocks;
	uint64_t cut_span;		/* 0: calibrated */
	uint64_t cut_at;		/* 0: by seed */
	uint64_t aim;			/* bit per point: cuts aimed at them */
	bool data_csum;			/* --data-checksums: volumes made with them */
	bool sum;			/* --sum: add up the "range" lines of files */
	char dir[PATH_MAX];
	char self[PATH_MAX];	/* this program, for mkfs/mount/fsck/scrub */
};

struct ct_result {
	unsigned int damage[CT_NCHECKS];
	unsigned int damaged_iterations;
	double *recovery_s;	/* per iteration: remount to ready */
	double *rows;		/* per iteration: stripe rows resynced by recovery */
	unsigned int n;
	struct opcov cov;	/* ordering points in flight at the power cuts */
	/* in-process, two faults (crash_inproc.h (I7)): how far the second got,
	 * recoveries that needed force, and those whose checks were waived */
	unsigned int second[CT_2ND_COUNT];
	unsigned int forced, waived, mount_failed;
	uint64_t risk_files;
	unsigned int timed;	/* (I8) iterations whose commit timer committed */
};

/* Rows the recovery of the mount at @mnt resynced: the array's own pass (full,
 * bitmap) plus the journal-guided one (declared). -1 when status is unavailable. */
static double ct_rows_resynced(const char *mnt)
{
	struct fop_status st;
	int fd = open(mnt, O_RDONLY | O_DIRECTORY);
	double rows = -1;

	if (fd < 0)
		return -1;
	memset(&st, 0, sizeof(st));
	if (!ioctl(fd, FOP_IOC_STATUS, &st) && st.version == FOP_STATUS_VERSION)
		rows = (double)(st.raid_resync_rows_checked + st.rec_rows_resynced);
	close(fd);
	return rows;
}

/* ---------------------------------------------------------------- one iteration */

struct ct_workload_arg {
	struct ct_model *model;
	const char *mnt;
	unsigned int progress;	/* the operation under way, 1-based */
	unsigned int done;
	bool finished;
	bool cut;		/* the power is being cut: acknowledgements prove nothing */
};

static void *ct_workload_thread(void *p)
{
	struct ct_workload_arg *w = p;

	w->done = ct_workload_run(w->model, w->mnt, &w->progress, &w->cut);
	__atomic_store_n(&w->finished, true, __ATOMIC_RELEASE);
	return NULL;
}

/* One mounted-volume iteration: what its steps share. */
struct ct_iter {
	const struct ct_opts *o;
	enum ct_mode mode;
	unsigned int it;
	uint64_t seed;
	unsigned int nmem;
	char idir[640], mnt[704], log[704], powercut[96], opath[PATH_MAX];
	char *members[8];
	char mopts[64];
	char why[256];		/* the first damage found, for the report line */
	unsigned int damage[CT_NCHECKS];
	pid_t pid;		/* the daemon serving @mnt; 0 once it died */
	struct ct_workload_arg w;
	struct ct_tree found;	/* the volume's files read back after recovery */
	double rec_s, rows;	/* recovery: seconds to ready, stripe rows resynced */
};

/*
 * The iteration's directory, mount point, log and member files, named by mode and
 * iteration so that a damaged one can be kept beside the others; stale members of
 * an earlier run are removed, mkfs makes them anew. -errno when a directory fails.
 */
static int ct_it_paths(struct ct_iter *t)
{
	snprintf(t->idir, sizeof(t->idir), "%.512s/%s-%u", t->o->dir, ct_modes[t->mode].name,
		 t->it);
	snprintf(t->mnt, sizeof(t->mnt), "%.640s/mnt", t->idir);
	snprintf(t->log, sizeof(t->log), "%.640s/log", t->idir);
	snprintf(t->opath, sizeof(t->opath), "%.4000s/opoints", t->o->dir);
	if (mkdir(t->idir, 0755) && errno != EEXIST)
		return -errno;
	if (mkdir(t->mnt, 0755) && errno != EEXIST)
		return -errno;
	for (unsigned int i = 0; i < t->nmem; i++) {
		t->members[i] = malloc(PATH_MAX);
		snprintf(t->members[i], PATH_MAX, "%.640s/disk%u.img", t->idir, i);
		unlink(t->members[i]);
	}
	return 0;
}

/*
 * 1. mkfs the array in the mode's resync policy, then mount it with the real
 * daemon (with --power-cut in a fault domain that cuts on SIGUSR1). Non-zero,
 * the failure counted in @t, when the iteration cannot go on.
 */
static int ct_it_mkfs_mount(struct ct_iter *t)
{
	const struct ct_opts *o = t->o;
	/* the daemon's power cut, which records what it had in flight in @opath */
	char *fault_args[] = { "--powercut", t->powercut, "--opoints", t->opath, NULL };
	char sizearg[32], levelarg[8], jsizearg[32];
	char *mkfs_argv[24];
	unsigned int a = 0;
	int rc;

	snprintf(sizearg, sizeof(sizearg), "%llu", (unsigned long long)o->member_bytes);
	snprintf(levelarg, sizeof(levelarg), "%u", o->level);
	snprintf(jsizearg, sizeof(jsizearg), "%lluK",
		 (unsigned long long)o->journal_blocks * (JG_BLOCK_SIZE / 1024));
	mkfs_argv[a++] = "jgrfs";
	mkfs_argv[a++] = "mkfs";
	mkfs_argv[a++] = "--force";
	mkfs_argv[a++] = "--level";
	mkfs_argv[a++] = levelarg;
	mkfs_argv[a++] = "--resync";
	mkfs_argv[a++] = (char *)ct_modes[t->mode].resync;
	mkfs_argv[a++] = "--size";
	mkfs_argv[a++] = sizearg;
	/* a small journal: checkpoint passes and log wrap all the time */
	mkfs_argv[a++] = "--journal-size";
	mkfs_argv[a++] = jsizearg;
	for (unsigned int i = 0; i < t->nmem; i++)
		mkfs_argv[a++] = t->members[i];
	mkfs_argv[a] = NULL;
	rc = sp_run(o->self, t->log, mkfs_argv);
	if (rc) {
		snprintf(t->why, sizeof(t->why), "mkfs exited %d (see %.150s)", rc, t->log);
		t->damage[CT_ERROR]++;
		return rc;
	}
	/* the member writes of the next 100 ms are kept, dropped or torn at random */
	snprintf(t->powercut, sizeof(t->powercut), "signal,seed=%llu,tear,linger=100",
		 (unsigned long long)t->seed);
	/* crash_inproc.h (I8): one seed in four with the shortest commit interval
	 * the daemon takes, so that timed commits fall among the operations */
	snprintf(t->mopts, sizeof(t->mopts), "data=%s%s", ct_modes[t->mode].data,
		 ct_ip_commit_interval_ms(t->seed) ? ",commit=1" : "");
	t->pid = sp_mount(o->self, t->mopts, t->members, t->nmem, t->mnt, t->log,
			  o->power_cut ? fault_args : NULL, 60, &t->rec_s);
	if (t->pid < 0) {
		snprintf(t->why, sizeof(t->why), "mount failed: %s (see %.150s)",
			 strerror((int)-t->pid), t->log);
		t->damage[CT_ERROR]++;
		return -1;
	}
	return 0;
}

/*
 * 2, 3. the workload through the mount, and the crash at a random operation of
 * it: kill -9, or SIGUSR1 for the power cut. The workload runs in a thread so that
 * the crash lands while an operation is under way; the dead mount is detached.
 * Non-zero, the failure counted in @t, when the workload could not start.
 */
static int ct_it_crash(struct ct_iter *t)
{
	const struct ct_opts *o = t->o;
	unsigned int kill_at;
	pthread_t th;
	int rc;

	rc = ct_model_new(t->seed, o->ops, &t->w.model);
	if (!rc)
		rc = ct_workload_setup(t->mnt);
	if (rc) {
		snprintf(t->why, sizeof(t->why), "workload setup: %s", strerror(-rc));
		t->damage[CT_ERROR]++;
		sp_crash(t->mnt, t->pid);
		return rc;
	}
	t->w.mnt = t->mnt;
	kill_at = 1 + (unsigned int)(ct_mix(t->seed, 1) % o->ops);
	pthread_create(&th, NULL, ct_workload_thread, &t->w);
	while (__atomic_load_n(&t->w.progress, __ATOMIC_ACQUIRE) < kill_at &&
	       !__atomic_load_n(&t->w.finished, __ATOMIC_ACQUIRE)) {
		if (waitpid(t->pid, NULL, WNOHANG) == t->pid) {
			t->pid = 0; /* the daemon died by itself: that is damage of its own */
			snprintf(t->why, sizeof(t->why),
				 "the daemon died during the workload (see %.150s)", t->log);
			t->damage[CT_ERROR]++;
			break;
		}
		usleep(200);
	}
	usleep((useconds_t)(ct_mix(t->seed, 2) % 3000)); /* land inside the operation */
	if (t->pid > 0) {
		__atomic_store_n(&t->w.cut, true, __ATOMIC_RELEASE);
		kill(t->pid, o->power_cut ? SIGUSR1 : SIGKILL);
		if (o->power_cut) {
			/* the daemon dies by itself after the linger; make sure */
			for (int i = 0; i < 500 && waitpid(t->pid, NULL, WNOHANG) != t->pid; i++)
				usleep(10000);
			kill(t->pid, SIGKILL);
		}
		waitpid(t->pid, NULL, 0);
	}
	pthread_join(th, NULL);
	umount2(t->mnt, MNT_DETACH);
	return 0;
}

/*
 * 4. remount: recovery runs, timed, and the rows it resynced are read; then
 * check (2), the files against the model (a failure dumps the model into the
 * log), and a clean unmount. Non-zero, the failure counted in @t, when the
 * volume did not mount or unmount: the offline checks need it unmounted.
 */
static int ct_it_recover(struct ct_iter *t)
{
	int rc;

	t->pid = sp_mount(t->o->self, t->mopts, t->members, t->nmem, t->mnt, t->log, NULL, 600,
			  &t->rec_s);
	if (t->pid < 0) {
		snprintf(t->why, sizeof(t->why), "remount after the crash failed: %s (see %.150s)",
			 strerror((int)-t->pid), t->log);
		t->damage[CT_ERROR]++;
		return -1;
	}
	t->rows = ct_rows_resynced(t->mnt);
	rc = ct_tree_read_dir(t->mnt, &t->found);
	if (rc) {
		snprintf(t->why, sizeof(t->why), "reading the volume back: %s", strerror(-rc));
		t->damage[CT_CONTENT]++;
	} else if (ct_model_check(t->w.model, &t->found, t->why)) {
		FILE *lf = fopen(t->log, "a");

		t->damage[CT_CONTENT]++;
		if (lf) {
			fprintf(lf, "crashtest: content check failed: %s\n", t->why);
			ct_model_dump(t->w.model, &t->found, lf);
			fclose(lf);
		}
	}
	rc = sp_umount(t->mnt, t->pid);
	if (rc) {
		snprintf(t->why, sizeof(t->why), "clean unmount failed: %s (see %.150s)",
			 strerror(-rc), t->log);
		t->damage[CT_ERROR]++;
		return rc;
	}
	return 0;
}

/* Run `jgrfs <@argv[0..k-1]> <members>`, its output into the log; its exit code. */
static int ct_it_run(struct ct_iter *t, char **argv, unsigned int k)
{
	for (unsigned int i = 0; i < t->nmem; i++)
		argv[k++] = t->members[i];
	argv[k] = NULL;
	return sp_run(t->o->self, t->log, argv);
}

/*
 * Check (1), `jgrfs fsck -n` on the unmounted members: an inconsistency that
 * recovery left is damage; an exit code of 8 or more (fsck's own failure) is a
 * harness error.
 */
static void ct_it_fsck(struct ct_iter *t)
{
	char *argv[16] = { "jgrfs", "fsck", "-n" };
	int rc = ct_it_run(t, argv, 3);

	if (rc) {
		t->damage[rc >= 8 ? CT_ERROR : CT_FSCK]++;
		if (!t->why[0])
			snprintf(t->why, sizeof(t->why), "fsck -n exited %d (see %.150s)", rc,
				 t->log);
	}
}

/*
 * Check (3), `jgrfs scrub`: a parity mismatch recovery left (exit 1) is damage,
 * any other failure a harness error.
 */
static void ct_it_scrub(struct ct_iter *t)
{
	char *argv[16] = { "jgrfs", "scrub" };
	int rc = ct_it_run(t, argv, 2);

	if (rc) {
		t->damage[rc == 1 ? CT_SCRUB : CT_ERROR]++;
		if (!t->why[0])
			snprintf(t->why, sizeof(t->why), "scrub exited %d (see %.150s)", rc,
				 t->log);
	}
}

/*
 * Check (4), the write hole: the array assembled with each member left out in
 * turn (in-process, read-only) must read every file back as the mount did. The
 * first member whose absence shows damage ends the check.
 */
static void ct_it_hole(struct ct_iter *t)
{
	int rc;

	for (unsigned int skip = 0; skip < t->nmem; skip++) {
		char hw[256] = "";

		rc = ct_hole_check(t->members, t->nmem, skip, &t->found, hw);
		if (rc) {
			t->damage[rc == 1 ? CT_HOLE : CT_ERROR]++;
			if (!t->why[0])
				snprintf(t->why, sizeof(t->why), "%s",
					 rc == 1 ? hw : strerror(-rc));
			break;
		}
	}
}

/*
 * Count the iteration into @res (each check at most once), with the points the
 * dying daemon had in flight, and print its line when damaged or verbose.
 * Returns true when it was damaged: its files are kept to reproduce it.
 */
static bool ct_it_report(struct ct_iter *t, struct ct_result *res)
{
	const struct ct_opts *o = t->o;
	bool bad = false;

	/* the dying daemon's record of what it had in flight (--opoints) */
	opcov_read_file(t->opath, &res->cov);

	for (int c = 0; c < CT_NCHECKS; c++) {
		res->damage[c] += t->damage[c] ? 1 : 0;
		bad |= t->damage[c] != 0;
	}
	res->damaged_iterations += bad;
	res->recovery_s[res->n] = t->rec_s;
	res->rows[res->n++] = t->rows;
	if (bad || o->verbose) {
		cli_progress_erase();
		printf("%-8s iter %3u seed %016llx crash at op %u/%u: %s%s\n",
		       ct_modes[t->mode].name, t->it, (unsigned long long)t->seed,
		       t->w.model ? ct_model_issued(t->w.model) : 0, o->ops,
		       bad ? "DAMAGE " : "ok", t->why);
		/* timing decides where a crash lands: keep what it left */
		if (bad)
			printf("%-8s iter %3u: its members and log are kept in %s\n",
			       ct_modes[t->mode].name, t->it, t->idir);
	}
	fflush(stdout);
	return bad;
}

/* Free the iteration's state; its files go unless kept (--keep, or damaged). */
static void ct_it_cleanup(struct ct_iter *t, bool keep_this)
{
	ct_tree_free(&t->found);
	ct_model_free(t->w.model);
	if (!t->o->keep && !keep_this) {
		for (unsigned int i = 0; i < t->nmem; i++)
			unlink(t->members[i]);
		unlink(t->log);
		rmdir(t->mnt);
		rmdir(t->idir);
	}
	for (unsigned int i = 0; i < t->nmem; i++)
		free(t->members[i]);
}

/*
 * Returns 0 when the iteration ran (damage counted in @res), negative errno when
 * the harness itself could not run it. A step that fails counts its failure and
 * skips to the report: the checks after it would only repeat it.
 */
static int ct_iteration(const struct ct_opts *o, enum ct_mode mode, unsigned int it,
			struct ct_result *res)
{
	struct ct_iter t = {
		.o = o, .mode = mode, .it = it, .seed = ct_mix(o->seed, (uint64_t)mode << 32 | it),
		.nmem = o->level == 6 ? 5 : 4, .rows = -1,
	};
	int rc;

	rc = ct_it_paths(&t);
	if (rc)
		return rc;
	if (!ct_it_mkfs_mount(&t) && !ct_it_crash(&t) && !ct_it_recover(&t)) {
		ct_it_fsck(&t);
		ct_it_scrub(&t);
		ct_it_hole(&t);
	}
	ct_it_cleanup(&t, ct_it_report(&t, res));
	return 0;
}


/* ---------------------------------------------------------------- in-process */

/* The seed of iteration @it of @mode: a range [A, A+K) is the same seeds as the
 * same iterations of one long run. */
static uint64_t ct_seed(const struct ct_opts *o, enum ct_mode mode, unsigned int it)
{
	return ct_mix(o->seed, (uint64_t)mode << 32 | it);
}

static const enum raid_resync_policy ct_ip_resync[CT_NMODES] = {
	[CT_DECLARED] = RAID_RESYNC_JOURNAL, [CT_BITMAP] = RAID_RESYNC_BITMAP,
	[CT_FULL] = RAID_RESYNC_FULL, [CT_OFF] = RAID_RESYNC_OFF,
};

static volatile uint64_t ct_watch_seed;

/* An iteration that hangs (a known bug: commit error paths) names its seed and dies. */
static void ct_watchdog(int sig)
{
	char msg[96];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg), "\ncrashtest: HANG: iteration of seed %016llx "
		     "did not end in 120 s\n", (unsigned long long)ct_watch_seed);
	if (write(STDOUT_FILENO, msg, (size_t)n) < 0)
		_exit(3);
	_exit(3);
}

/* The machine-readable line of a range, summed by --sum. */
static void ct_range_line(FILE *out, const struct ct_opts *o, enum ct_mode m,
			  const struct ct_result *r)
{
	fprintf(out, "range mode=%s level=%u seed=%llu from=%u count=%u damaged=%u",
		ct_modes[m].name, o->level, (unsigned long long)o->seed, o->seed_from, r->n,
		r->damaged_iterations);
	for (int c = 0; c < CT_NCHECKS; c++)
		fprintf(out, " %s=%u", ct_check_names[c], r->damage[c]);
	fprintf(out, " cuts=%llu", (unsigned long long)r->cov.cuts);
	for (int k = CT_2ND_NONE + 1; k < CT_2ND_COUNT; k++)
		fprintf(out, " second_%s=%u", ct_second_names[k], r->second[k]);
	fprintf(out, " forced=%u waived=%u no_mount=%u risk_files=%llu timed=%u", r->forced,
		r->waived, r->mount_failed, (unsigned long long)r->risk_files, r->timed);
	for (unsigned int p = 0; p < JG_OP_COUNT; p++)
		fprintf(out, " %s=%llu", jg_opoint_id(p), (unsigned long long)r->cov.hits[p]);
	fprintf(out, "\n");
}

/* Add a "range" line into @res (per mode). 0, or -EINVAL for another line. */
static int ct_range_parse(char *line, struct ct_result *res, unsigned int *level)
{
	struct ct_result r = { 0 };
	int mode = -1;
	char *save = NULL;

	if (strncmp(line, "range ", 6))
		return -EINVAL;
	for (char *tok = strtok_r(line + 6, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *eq = strchr(tok, '=');
		unsigned long long v;

		if (!eq)
			return -EINVAL;
		*eq++ = '\0';
		if (!strcmp(tok, "mode")) {
			for (int m = 0; m < CT_NMODES; m++)
				if (!strcmp(eq, ct_modes[m].name))
					mode = m;
			continue;
		}
		v = strtoull(eq, NULL, 10);
		if (!strcmp(tok, "level"))
			*level = (unsigned int)v;
		else if (!strcmp(tok, "count"))
			r.n = (unsigned int)v;
		else if (!strcmp(tok, "damaged"))
			r.damaged_iterations = (unsigned int)v;
		else if (!strcmp(tok, "cuts"))
			r.cov.cuts = v;
		else if (!strcmp(tok, "forced"))
			r.forced = (unsigned int)v;
		else if (!strcmp(tok, "waived"))
			r.waived = (unsigned int)v;
		else if (!strcmp(tok, "no_mount"))
			r.mount_failed = (unsigned int)v;
		else if (!strcmp(tok, "risk_files"))
			r.risk_files = v;
		else if (!strcmp(tok, "timed"))
			r.timed = (unsigned int)v;
		for (int k = CT_2ND_NONE + 1; k < CT_2ND_COUNT; k++)
			if (!strncmp(tok, "second_", 7) && !strcmp(tok + 7, ct_second_names[k]))
				r.second[k] = (unsigned int)v;
		for (int c = 0; c < CT_NCHECKS; c++)
			if (!strcmp(tok, ct_check_names[c]))
				r.damage[c] = (unsigned int)v;
		for (unsigned int p = 0; p < JG_OP_COUNT; p++)
			if (!strcmp(tok, jg_opoint_id(p)))
				r.cov.hits[p] = v;
	}
	if (mode < 0)
		return -EINVAL;
	res[mode].n += r.n;
	res[mode].damaged_iterations += r.damaged_iterations;
	for (int k = 0; k < CT_2ND_COUNT; k++)
		res[mode].second[k] += r.second[k];
	res[mode].forced += r.forced;
	res[mode].waived += r.waived;
	res[mode].mount_failed += r.mount_failed;
	res[mode].risk_files += r.risk_files;
	res[mode].timed += r.timed;
	for (int c = 0; c < CT_NCHECKS; c++)
		res[mode].damage[c] += r.damage[c];
	opcov_merge(&res[mode].cov, &r.cov);
	return 0;
}

/*
 * Two faults (crash_inproc.h (I7)): per mode, how far the second fault got --
 * a cut before the member failed tested one fault only, and shows here -- the
 * recoveries that needed force, those whose content and fsck checks were waived
 * (metadata, or every row, at risk), those whose forced mount failed with row 0
 * (the superblocks) at risk, and the files named at risk.
 */
static void ct_second_print(const struct ct_result *res, unsigned int modes)
{
	bool any = false;

	for (int m = 0; m < CT_NMODES; m++)
		for (int k = CT_2ND_NONE + 1; k < CT_2ND_COUNT; k++)
			any |= (modes & (1u << m)) && res[m].second[k];
	if (!any)
		return;
	printf("\nsecond fault:\n%-9s", "mode");
	for (int k = CT_2ND_NONE + 1; k < CT_2ND_COUNT; k++)
		printf(" %10s", ct_second_names[k]);
	printf(" %8s %8s %8s %10s\n", "forced", "waived", "no-mount", "risk-files");
	for (int m = 0; m < CT_NMODES; m++) {
		const struct ct_result *r = &res[m];

		if (!(modes & (1u << m)) || !r->n)
			continue;
		printf("%-9s", ct_modes[m].name);
		for (int k = CT_2ND_NONE + 1; k < CT_2ND_COUNT; k++)
			printf(" %10u", r->second[k]);
		printf(" %8u %8u %8u %10llu\n", r->forced, r->waived, r->mount_failed,
		       (unsigned long long)r->risk_files);
	}
}

/* (I8) Per mode, the iterations in which the commit timer began a commit. */
static void ct_timed_print(const struct ct_result *res, unsigned int modes)
{
	const char *sep = "";

	printf("\ncommit timer (I8): commits by the timer during the workload in");
	for (int m = 0; m < CT_NMODES; m++) {
		if (!(modes & (1u << m)) || !res[m].n)
			continue;
		printf("%s %s %u of %u iterations", sep, ct_modes[m].name, res[m].timed, res[m].n);
		sep = ",";
	}
	printf("\n");
}

/*
 * The exit status of a run, a sum or the mounted runner: 1 when a point of @covs
 * (@n modes) was in flight at fewer than --min-coverage cuts (named on stdout) or
 * a protected mode showed damage, else 2 after a harness error, else 0.
 */
static int ct_verdict(const struct ct_opts *o, const struct opcov *covs, unsigned int n,
		      bool protected_damage, bool errors)
{
	if (o->min_cov && opcov_check(stdout, covs, n, o->min_cov, o->skip_points)) {
		printf("\nFAIL: ordering points above were in flight at fewer than %llu cuts\n",
		       (unsigned long long)o->min_cov);
		return 1;
	}
	if (protected_damage) {
		printf("\nFAIL: a protected mode showed damage (seeds above reproduce it)\n");
		return 1;
	}
	return errors ? 2 : 0;
}

/* The damage table, the coverage table and the verdict, for a run or a sum. */
static int ct_ip_report(const struct ct_opts *o, struct ct_result *res, unsigned int modes,
			double seconds)
{
	struct opcov covs[CT_NMODES];
	const char *names[CT_NMODES];
	bool protected_damage = false, errors = false;
	uint64_t cuts = 0;
	unsigned int n = 0;

	printf("\n%-9s %7s", "mode", "iters");
	for (int c = 0; c < CT_NCHECKS; c++)
		printf(" %9s", ct_check_names[c]);
	printf(" %8s %8s\n", "damaged", "cuts");
	for (int m = 0; m < CT_NMODES; m++) {
		struct ct_result *r = &res[m];

		if (!(modes & (1u << m)) || !r->n)
			continue;
		printf("%-9s %7u", ct_modes[m].name, r->n);
		for (int c = 0; c < CT_NCHECKS; c++)
			printf(" %9u", r->damage[c]);
		printf(" %8u %8llu\n", r->damaged_iterations, (unsigned long long)r->cov.cuts);
		if (ct_modes[m].protected_mode && r->damaged_iterations)
			protected_damage = true;
		if (r->damage[CT_ERROR])
			errors = true;
		covs[n] = r->cov;
		names[n++] = ct_modes[m].name;
		cuts += r->cov.cuts;
	}
	ct_second_print(res, modes);
	ct_timed_print(res, modes);
	opcov_print(stdout, covs, names, n);
	if (seconds > 0 && cuts)
		printf("\n%llu cuts in %.1f s: %.1f ms per cut\n", (unsigned long long)cuts, seconds,
		       1000 * seconds / (double)cuts);
	return ct_verdict(o, covs, n, protected_damage, errors);
}

/* One iteration's result added into its mode's; true when it was damaged. */
static bool ct_ip_add(struct ct_result *res, const struct ct_ip_result *r)
{
	bool bad = false;

	for (int k = 0; k < CT_NCHECKS; k++) {
		res->damage[k] += r->damage[k] ? 1 : 0;
		bad |= r->damage[k] != 0;
	}
	for (unsigned int k = 0; k < r->ncuts; k++)
		opcov_add(&res->cov, r->points[k]);
	res->second[r->second]++;
	res->forced += r->forced;
	res->waived += r->waived;
	res->mount_failed += r->mount_failed;
	res->risk_files += r->risk_files;
	res->timed += r->timed;
	res->damaged_iterations += bad;
	res->n++;
	return bad;
}

/* An iteration's line: where the cut fell, what came with it, and the verdict. */
static void ct_ip_line(const struct ct_opts *o, enum ct_mode m, unsigned int it, uint64_t seed,
		       uint64_t cut_span, const struct ct_ip_result *r, bool bad)
{
	unsigned int cms = ct_ip_commit_interval_ms(seed);
	char commit[40] = "";

	if (cms) /* (I8) */
		snprintf(commit, sizeof(commit), ", commit every %u ms", cms);
	printf("%-8s iter %6u seed %016llx %-12s cut at write %llu/%llu (span "
	       "%llu%s%s), op %u/%u%s%s%s%s%s: %s%s\n", ct_modes[m].name, it,
	       (unsigned long long)seed, ct_lc_names[r->lifecycle],
	       (unsigned long long)r->cut_at, (unsigned long long)r->writes,
	       (unsigned long long)cut_span, r->aimed >= 0 ? ", aimed at " : "",
	       r->aimed >= 0 ? jg_opoint_label((enum jg_opoint)r->aimed) : "",
	       r->issued, o->ops, commit, r->second ? ", second fault " : "",
	       r->second ? ct_second_names[r->second] : "",
	       r->forced ? ", forced" : "",
	       r->mount_failed ? ", row 0 at risk: mount failed" :
	       r->waived ? ", checks waived" : "",
	       bad ? "DAMAGE " : "ok", r->why);
}

static int ct_ip_run(const struct ct_opts *o)
{
	struct ct_result res[CT_NMODES];
	char dir[PATH_MAX];
	double t0 = jg_now_seconds();
	struct cli_progress prog;
	uint64_t done = 0, total;
	bool any_bad = false;
	FILE *log;

	memset(res, 0, sizeof(res));
	snprintf(dir, sizeof(dir), "%.4000s/ip%d", o->dir, (int)getpid());
	if (mkdir(dir, 0755) && errno != EEXIST)
		return cli_err("%s: %s", dir, strerror(errno)), 2;
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/log");
	log = fopen(dir, "w");
	dir[strlen(dir) - 4] = '\0';
	signal(SIGALRM, ct_watchdog);
	total = (uint64_t)o->iterations * (unsigned int)__builtin_popcount(o->modes);
	printf("crashtest: in-process, RAID%u, iterations %u..%u per mode, %u operations each, "
	       "journal %llu blocks, %s, seed %llu\n", o->level, o->seed_from,
	       o->seed_from + o->iterations - 1, o->ops, (unsigned long long)o->journal_blocks,
	       o->eio ? "member write errors (no power cut)" :
	       o->lifecycle < CT_LC_COUNT ? ct_lc_names[o->lifecycle] : "lifecycle by seed",
	       (unsigned long long)o->seed);
	fflush(stdout);
	cli_progress_start(&prog, "crashtest", "crashes", 0);
	for (int m = 0; m < CT_NMODES; m++) {
		struct ct_ip_cfg c = {
			.level = o->level, .nmem = o->level == 6 ? 5 : 4, .resync = ct_ip_resync[m],
			.data_mode = m == CT_DECLARED ? JNL_DATA_DECLARED : JNL_DATA_ORDERED,
			.member_bytes = o->member_bytes, .journal_blocks = o->journal_blocks,
			.ops = o->ops, .lifecycle = o->lifecycle, .eio = o->eio, .dir = dir, .log = log,
			.aim = o->aim, .data_csum = o->data_csum,
		};
		struct ct_ip_result r;
		int rc;

		if (!(o->modes & (1u << m)))
			continue;
		/* (I2) the cut falls among the writes of an uncut run of a seed of its own */
		ct_watch_seed = ct_seed(o, (enum ct_mode)m, UINT32_MAX);
		c.calibrate = true;
		c.cut_at = o->cut_at;
		alarm(120);
		rc = o->cut_span ? 0 : ct_ip_iteration(&c, ct_watch_seed, &r);
		alarm(0);
		c.calibrate = false;
		if (rc)
			return cli_err("%s: calibration run: %s", ct_modes[m].name, strerror(-rc)), 2;
		c.cut_span = o->cut_span ? o->cut_span : r.writes ? r.writes : 1;
		if (o->verbose)
			printf("%-8s calibration: %llu member writes\n", ct_modes[m].name,
			       (unsigned long long)r.writes);
		for (unsigned int it = o->seed_from; it < o->seed_from + o->iterations; it++) {
			uint64_t seed = ct_seed(o, (enum ct_mode)m, it);
			bool bad;

			ct_watch_seed = seed;
			alarm(120);
			rc = ct_ip_iteration(&c, seed, &r);
			alarm(0);
			if (rc)
				return cli_err("%s iteration %u: %s", ct_modes[m].name, it,
					       strerror(-rc)), 2;
			bad = ct_ip_add(&res[m], &r);
			any_bad |= bad;
			cli_progress(&prog, ++done, total);
			if (bad || o->verbose) {
				cli_progress_erase();
				ct_ip_line(o, (enum ct_mode)m, it, seed, c.cut_span, &r, bad);
			}
			fflush(stdout);
		}
		cli_progress_erase();
		ct_range_line(stdout, o, (enum ct_mode)m, &res[m]);
	}
	cli_progress_done(&prog);
	if (log)
		fclose(log);
	if (any_bad) {
		/* ct_ip_iteration kept the members of each damaged iteration */
		printf("crashtest: the damaged iterations' members and the log are kept in %s\n",
		       dir);
	} else if (!o->keep) {
		snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/log");
		unlink(dir);
		dir[strlen(dir) - 4] = '\0';
		rmdir(dir);
		rmdir(o->dir);
	}
	return ct_ip_report(o, res, o->modes, jg_now_seconds() - t0);
}

/* --sum: add up the "range" lines of split runs (files, or - for stdin). */
static int ct_sum(const struct ct_opts *o, char **files, int n)
{
	struct ct_result res[CT_NMODES];
	unsigned int level = 0, lines = 0;
	char line[4096];

	memset(res, 0, sizeof(res));
	for (int i = 0; i < n; i++) {
		FILE *f = strcmp(files[i], "-") ? fopen(files[i], "r") : stdin;

		if (!f)
			return cli_err("%s: %s", files[i], strerror(errno)), 2;
		while (fgets(line, sizeof(line), f))
			lines += !ct_range_parse(line, res, &level);
		if (f != stdin)
			fclose(f);
	}
	if (!lines)
		return cli_err("no \"range\" lines found"), 2;
	printf("crashtest: the sum of %u ranges (RAID%u)\n", lines, level);
	return ct_ip_report(o, res, (1u << CT_NMODES) - 1, 0);
}

/* A list of points by label ("(K2)") or name ("JNL_CP_STEP"), comma-separated. */
static int ct_parse_points(const char *list, uint64_t *mask)
{
	char buf[512], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned int p;

		for (p = 0; p < JG_OP_COUNT; p++)
			if (!strcmp(tok, jg_opoint_id(p)) || !strcmp(tok, jg_opoint_label(p)))
				break;
		if (p == JG_OP_COUNT)
			return -EINVAL;
		*mask |= 1ull << p;
	}
	return 0;
}

/* ---------------------------------------------------------------- main */

static int ct_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void ct_usage(FILE *f)
{
	fprintf(f,
		"usage: jgrfs-crash crashtest [options]\n\n"
		"Crash a mounted volume again and again and check that recovery repairs it:\n"
		"fsck clean, every fsynced byte present, no parity mismatch, and every file\n"
		"readable with any one member missing (the RAID5 write hole).\n\n"
		"options:\n"
		"  --mode M         declared, bitmap, full, off, or all (default all)\n"
		"                   declared: data=declared resync=journal; bitmap: data=ordered\n"
		"                   resync=bitmap; full: data=ordered resync=full; off: data=ordered\n"
		"                   resync=off (UNSAFE: must show damage with --power-cut)\n"
		"  --level 5|6      RAID level: 4 members for 5, 5 for 6 (default 5)\n"
		"  --iterations N   crashes per mode (default 5)\n"
		"  --ops N          workload operations per iteration (default 150)\n"
		"  --power-cut      the crash also drops or tears the member writes not yet\n"
		"                   flushed (jgrfs-crash --powercut), so torn stripes are certain\n"
		"  --seed S         reproduce a run (default 1); each failure prints its own\n"
		"  --dir DIR        where to put member files (default ./crashtest.tmp; not tmpfs)\n"
		"  --size SIZE      size of each member file (default 64M, sparse)\n"
		"  --keep           keep the files of every iteration\n"
		"  -v, --verbose    a line per iteration\n\n"
		"In-process (no FUSE, no daemon; tens of ms a cut):\n"
		"  --in-process     drive the filesystem through fs.h over a RAID array of member\n"
		"                   files in one fault domain; the power is cut at a member write\n"
		"                   chosen by the seed (always a power cut); default --size 16M\n"
		"  --seed-from A    run iterations A..A+N-1 (N = --iterations, or --count): split\n"
		"                   a long run into ranges; each prints a \"range\" line\n"
		"  --count N        the same as --iterations\n"
		"  --sum FILE...    add up the \"range\" lines of split runs (- for stdin) and print\n"
		"                   the tables; --min-coverage applies to the sum\n"
		"  --journal-blocks N  journal size in 4 KiB blocks (default 2048, the smallest):\n"
		"                   checkpoint passes and log wrap run all the time\n"
		"  --lifecycle L    between the crash and the recovering mount: remount,\n"
		"                   stop-first, fsck-first, scrub-first, lost-member,\n"
		"                   recovery-cut, rebuild-cut, initial-sync (the members held\n"
		"                   old data; the initial sync runs with the workload and the\n"
		"                   cut; after recovery a member is lost), eio-cut (a member\n"
		"                   fails every I/O from write N on, the power goes at write\n"
		"                   N+k, k 0..64 by seed), lost-before (a member missing at the\n"
		"                   recovering mount), rebuild-run (the cut during a rebuild\n"
		"                   beside the workload; resumed after recovery, then a member\n"
		"                   lost), scrub-run (the cut during an online scrub --repair\n"
		"                   beside the workload), readd-run (a member failed beside the\n"
		"                   workload, then readded; the cut anywhere in that, half the\n"
		"                   seeds during the readd), or seed (default). After two faults a\n"
		"                   recovery refused as dirty and degraded is forced, as\n"
		"                   mount -o force; the files it names at risk are not compared,\n"
		"                   and with metadata at risk content and fsck are waived\n"
		"                   (counted in the \"second fault\" table)\n"
		"  --cut-span N     the cut falls among the first N member writes (default: the\n"
		"                   count of an uncut run, which timing moves a little; a\n"
		"                   failure line prints it, to reproduce the same cut)\n"
		"  --aim L          cut right after the k-th request (k by seed, 1..2) that names a\n"
		"                   point of L (one chosen by the seed), not at a member write\n"
		"                   drawn among all: reaches points few writes carry (K2,\n"
		"                   replay, resync with --lifecycle recovery-cut)\n"
		"  --cut-at W       cut at member write W whatever the seed (reproduction)\n"
		"  --data-checksums volumes made with data checksums (mkfs --data-checksums):\n"
		"                   a file that fails its checksum after recovery (EIO) is\n"
		"                   damage; with --in-process --mode declared only (ordered\n"
		"                   is refused). Out of process, mode declared makes its\n"
		"                   volumes with mkfs's default, which keeps them\n"
		"  --eio            no power cut: a member fails the writes of some blocks (-EIO);\n"
		"                   clean unmount, then every check (after a rebuild if failed)\n"
		"  --min-coverage N fail (exit 1) naming each ordering point in flight at fewer\n"
		"                   than N cuts, summed over the modes run\n"
		"  --skip-points L  points --min-coverage does not require, by label or name,\n"
		"                   comma-separated: those a configuration cannot reach (the\n"
		"                   bitmap points B1/B2 without --mode bitmap or declared; W3\n"
		"                   without bitmap or full; (C3)/(D1) without declared; R1 without\n"
		"                   the rebuild-cut lifecycle, Y2 without initial-sync) or a layer\n"
		"                   does not name yet\n\n"
		"Exit status: 0 when no protected mode showed damage, 1 when one did (or coverage\n"
		"fell short), 2 on errors. The mount runner needs root and /dev/fuse.\n");
}

static const struct option ct_longopts[] = {
	{ "mode", required_argument, NULL, 'm' },
	{ "level", required_argument, NULL, 'l' },
	{ "iterations", required_argument, NULL, 'i' },
	{ "ops", required_argument, NULL, 'o' },
	{ "power-cut", no_argument, NULL, 'p' },
	{ "seed", required_argument, NULL, 's' },
	{ "dir", required_argument, NULL, 'd' },
	{ "size", required_argument, NULL, 'S' },
	{ "keep", no_argument, NULL, 'k' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "in-process", no_argument, NULL, 'I' },
	{ "seed-from", required_argument, NULL, 'F' },
	{ "count", required_argument, NULL, 'i' },
	{ "sum", no_argument, NULL, 'U' },
	{ "journal-blocks", required_argument, NULL, 'J' },
	{ "lifecycle", required_argument, NULL, 'L' },
	{ "eio", no_argument, NULL, 'E' },
	{ "min-coverage", required_argument, NULL, 'C' },
	{ "skip-points", required_argument, NULL, 'P' },
	{ "cut-span", required_argument, NULL, 'W' },
	{ "cut-at", required_argument, NULL, 'A' },
	{ "aim", required_argument, NULL, 'T' },
	{ "data-checksums", no_argument, NULL, 'D' },
	{ NULL, 0, NULL, 0 },
};

/* --mode @arg into o->modes: one mode, or all. 0, or 2 (refused, said why). */
static int ct_parse_mode(struct ct_opts *o, const char *arg)
{
	if (!strcmp(arg, "all")) {
		o->modes = (1u << CT_NMODES) - 1;
		return 0;
	}
	o->modes = 0;
	for (int m = 0; m < CT_NMODES; m++)
		if (!strcmp(arg, ct_modes[m].name))
			o->modes = 1u << m;
	if (!o->modes)
		return cli_err("--mode %s: expected declared, bitmap, full, off or all", arg), 2;
	return 0;
}

/* --lifecycle @arg into o->lifecycle: a name of ct_lc_names, or "seed". 0, or 2. */
static int ct_parse_lifecycle(struct ct_opts *o, const char *arg)
{
	o->lifecycle = CT_LC_COUNT + 1;
	for (int l = 0; l < CT_LC_COUNT; l++)
		if (!strcmp(arg, ct_lc_names[l]))
			o->lifecycle = (enum ct_lifecycle)l;
	if (!strcmp(arg, "seed"))
		o->lifecycle = CT_LC_SEED;
	if (o->lifecycle > CT_LC_SEED)
		return cli_err("--lifecycle %s: unknown (see --help)", arg), 2;
	return 0;
}

/*
 * The mounted runner's iterations, every mode chosen in turn, summed into @res
 * (zeroed here). An iteration the harness could not run ends its mode and sets
 * @errors. Returns 0, or 2 out of memory.
 */
static int ct_mnt_run(const struct ct_opts *o, struct ct_result *res, bool *errors)
{
	struct cli_progress prog;
	uint64_t done = 0, total;
	char opath[PATH_MAX];

	snprintf(opath, sizeof(opath), "%.4000s/opoints", o->dir);
	unlink(opath);	/* a daemon's power cut records its points there (ct_iteration) */
	printf("crashtest: RAID%u, %u iterations per mode, %u operations each, %s, seed %llu\n",
	       o->level, o->iterations, o->ops, o->power_cut ? "kill -9 + power cut" : "kill -9",
	       (unsigned long long)o->seed);
	fflush(stdout);
	total = (uint64_t)o->iterations * (unsigned int)__builtin_popcount(o->modes);
	cli_progress_start(&prog, "crashtest", "crashes", 0);
	for (int m = 0; m < CT_NMODES; m++) {
		memset(&res[m], 0, sizeof(res[m]));
		if (!(o->modes & (1u << m)))
			continue;
		res[m].recovery_s = calloc(o->iterations, sizeof(double));
		res[m].rows = calloc(o->iterations, sizeof(double));
		if (!res[m].recovery_s || !res[m].rows)
			return cli_err("out of memory"), 2;
		for (unsigned int it = 0; it < o->iterations; it++) {
			int rc = ct_iteration(o, (enum ct_mode)m, it, &res[m]);

			cli_progress(&prog, ++done, total);
			if (rc) {
				cli_err("%s iteration %u: %s", ct_modes[m].name, it, strerror(-rc));
				*errors = true;
				break;
			}
		}
	}
	cli_progress_done(&prog);
	return 0;
}

/*
 * The mounted runner's damage table (with recovery times and rows resynced), its
 * coverage table with --power-cut, and the verdict as the exit status; frees the
 * per-iteration arrays of @res.
 */
static int ct_mnt_report(const struct ct_opts *o, struct ct_result *res, bool errors)
{
	struct opcov covs[CT_NMODES];
	const char *cov_names[CT_NMODES];
	unsigned int ncov = 0;
	bool protected_damage = false;

	printf("\n%-9s %5s", "mode", "iters");
	for (int c2 = 0; c2 < CT_NCHECKS; c2++)
		printf(" %9s", ct_check_names[c2]);
	printf(" %8s %12s %12s %9s %9s\n", "damaged", "recovery_med", "recovery_max",
	       "rows_med", "rows_max");
	for (int m = 0; m < CT_NMODES; m++) {
		struct ct_result *r = &res[m];

		if (!(o->modes & (1u << m)) || !r->n)
			continue;
		qsort(r->recovery_s, r->n, sizeof(double), ct_cmp_double);
		qsort(r->rows, r->n, sizeof(double), ct_cmp_double);
		printf("%-9s %5u", ct_modes[m].name, r->n);
		for (int c2 = 0; c2 < CT_NCHECKS; c2++)
			printf(" %9u", r->damage[c2]);
		printf(" %8u %11.3fs %11.3fs %9.0f %9.0f\n", r->damaged_iterations,
		       r->recovery_s[r->n / 2], r->recovery_s[r->n - 1], r->rows[r->n / 2],
		       r->rows[r->n - 1]);
		if (ct_modes[m].protected_mode && r->damaged_iterations)
			protected_damage = true;
		if (r->damage[CT_ERROR])
			errors = true;
		free(r->recovery_s);
		free(r->rows);
		covs[ncov] = r->cov;
		cov_names[ncov++] = ct_modes[m].name;
	}
	if (o->power_cut)
		opcov_print(stdout, covs, cov_names, ncov);
	if (!o->keep)
		rmdir(o->dir);
	return ct_verdict(o, covs, ncov, protected_damage, errors);
}

/*
 * The mounted runner: its requirements (root, /dev/fuse, this program's path to
 * spawn mkfs, mount, fsck, scrub), then the iterations and the report.
 */
static int ct_mnt_main(struct ct_opts *o)
{
	struct ct_result res[CT_NMODES];
	bool errors = false;
	int rc;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK))
		return cli_err("needs root and /dev/fuse"), 2;
	if (sp_self(o->self, sizeof(o->self)))
		return cli_err("cannot find this program: %s", strerror(errno)), 2;
	if (mkdir(o->dir, 0755) && errno != EEXIST)
		return cli_err("%s: %s", o->dir, strerror(errno)), 2;
	/* this process reads and writes through the mount while the daemon dies */
	signal(SIGPIPE, SIG_IGN);
	/* the in-process checks assemble degraded on purpose: no warning for that */
	if (!o->verbose)
		jg_log_set_level(JG_LOG_ERR);

	rc = ct_mnt_run(o, res, &errors);
	if (rc)
		return rc;
	return ct_mnt_report(o, res, errors);
}

/*
 * After the options, @args (@n of them): --sum of the files they name, else a
 * run, which takes none: in process, or through mounts.
 */
static int ct_dispatch(struct ct_opts *o, char **args, int n)
{
	if (o->sum)
		return ct_sum(o, args, n);
	if (n)
		return cli_err("unexpected argument '%s'", args[0]), 2;
	if (o->data_csum && (!o->in_process || o->modes != 1u << CT_DECLARED))
		return cli_err("--data-checksums: with --in-process --mode declared only (such a volume refuses data=ordered)"), 2;
	if (o->in_process) {
		if (!o->size_set)
			o->member_bytes = 16ull << 20;
		if (mkdir(o->dir, 0755) && errno != EEXIST)
			return cli_err("%s: %s", o->dir, strerror(errno)), 2;
		if (!o->verbose)
			jg_log_set_level(JG_LOG_ERR);
		return ct_ip_run(o);
	}
	return ct_mnt_main(o);
}

/*
 * `jgrfs-crash crashtest`: the options into a struct ct_opts, then ct_dispatch()
 * (see the top of this file).
 */
int cmd_crashtest(int argc, char **argv)
{
	struct ct_opts o = {
		.modes = (1u << CT_NMODES) - 1, .level = 5, .iterations = 5, .ops = 150,
		.seed = 1, .member_bytes = 64ull << 20, .lifecycle = CT_LC_SEED,
		.journal_blocks = 2048,
	};
	uint64_t v;
	int c;

	snprintf(o.dir, sizeof(o.dir), "crashtest.tmp");
	while ((c = getopt_long(argc, argv, "vh", ct_longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (ct_parse_mode(&o, optarg))
				return 2;
			break;
		case 'l':
			if (cli_parse_u64(optarg, 6, &v) || (v != 5 && v != 6))
				return cli_err("--level %s: expected 5 or 6", optarg), 2;
			o.level = (unsigned int)v;
			break;
		case 'i':
			if (cli_parse_u64(optarg, 1000000, &v) || !v)
				return cli_err("--iterations %s: expected a count", optarg), 2;
			o.iterations = (unsigned int)v;
			break;
		case 'o':
			if (cli_parse_u64(optarg, 1000000, &v) || !v)
				return cli_err("--ops %s: expected a count", optarg), 2;
			o.ops = (unsigned int)v;
			break;
		case 'p':
			o.power_cut = true;
			break;
		case 's':
			if (cli_parse_u64(optarg, UINT64_MAX, &o.seed))
				return cli_err("--seed %s: expected a number", optarg), 2;
			break;
		case 'd':
			if (strlen(optarg) > 512)
				return cli_err("--dir: path too long"), 2;
			snprintf(o.dir, sizeof(o.dir), "%s", optarg);
			break;
		case 'S':
			if (cli_parse_size(optarg, &o.member_bytes) || o.member_bytes < (16u << 20))
				return cli_err("--size %s: expected a size of at least 16M", optarg), 2;
			o.size_set = true;
			break;
		case 'I':
			o.in_process = true;
			break;
		case 'F':
			if (cli_parse_u64(optarg, UINT32_MAX / 2, &v))
				return cli_err("--seed-from %s: expected an iteration number", optarg), 2;
			o.seed_from = (unsigned int)v;
			break;
		case 'U':
			o.sum = true;
			break;
		case 'J':
			if (cli_parse_u64(optarg, 1u << 20, &v) || v < 2048)
				return cli_err("--journal-blocks %s: expected at least 2048", optarg), 2;
			o.journal_blocks = v;
			break;
		case 'L':
			if (ct_parse_lifecycle(&o, optarg))
				return 2;
			break;
		case 'E':
			o.eio = true;
			break;
		case 'D':
			o.data_csum = true;
			break;
		case 'T':
			if (ct_parse_points(optarg, &o.aim))
				return cli_err("--aim %s: unknown point (labels and names as in the "
					       "coverage table)", optarg), 2;
			break;
		case 'W':
			if (cli_parse_u64(optarg, UINT32_MAX, &o.cut_span) || !o.cut_span)
				return cli_err("--cut-span %s: expected a write count", optarg), 2;
			break;
		case 'A':
			if (cli_parse_u64(optarg, UINT32_MAX, &o.cut_at) || !o.cut_at)
				return cli_err("--cut-at %s: expected a write number", optarg), 2;
			break;
		case 'C':
			if (cli_parse_u64(optarg, UINT64_MAX, &o.min_cov))
				return cli_err("--min-coverage %s: expected a count", optarg), 2;
			break;
		case 'P':
			if (ct_parse_points(optarg, &o.skip_points))
				return cli_err("--skip-points %s: unknown point (labels and names as in "
					       "the coverage table)", optarg), 2;
			break;
		case 'k':
			o.keep = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'h':
			ct_usage(stdout);
			return 0;
		default:
			ct_usage(stderr);
			return 2;
		}
	}
	return ct_dispatch(&o, argv + optind, argc - optind);
}
