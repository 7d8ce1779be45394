// SPDX-License-Identifier: MIT
/*
 * tests/unit/fuse/test_watch.c - the spare trigger of a mounted volume
 * (src/fuse/spare.c) in-process, without FUSE: an array over memory members
 * assembled with fop_watch_event as its handler, the spare thread and the
 * rebuild thread of a struct fop_ctx. A member failed by the array (as an I/O
 * error would) is rebuilt onto an idle spare with no call from the test; a
 * RAID6 that loses two members goes on with the second spare; events that
 * lose nothing start nothing; a degraded assembly is rebuilt when the thread
 * starts (the mount case); unmount stops both threads.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fop_i.h"
#include "../keep_dev.h"

#define MB 256
#define NMAX 8

struct t_vol {
	struct blk_dev *mem[NMAX];
	unsigned int n, nsp;
	struct fop_opts opts;
	struct fop_ctx c;
	struct fop_watch *w;
};

/* Create a RAID@level over @n members and @nsp spares; assemble without @absent roles. */
static void t_vol_up(struct t_vol *v, unsigned int level, unsigned int n, unsigned int nsp,
		     uint32_t absent)
{
	struct raid_create_cfg cfg = {.level = level,
				      .assume_clean = true,
				      .chunk_blocks = 4,
				      .resync = RAID_RESYNC_BITMAP,
				      .bitmap_region_blocks = 64};
	struct raid_assemble_cfg acfg = {0};
	struct blk_dev *devs[NMAX], *sp[NMAX];
	unsigned int k = 0;

	memset(v, 0, sizeof(*v));
	v->n = n;
	v->nsp = nsp;
	for (unsigned int i = 0; i < n + nsp; i++) {
		char name[16];

		snprintf(name, sizeof(name), i < n ? "mem%u" : "spare%u", i < n ? i : i - n);
		assert_int_equal(raid_dev_mem_open(name, MB, &v->mem[i]), 0);
	}
	for (unsigned int i = 0; i < n; i++)
		devs[i] = t_keep(v->mem[i]);
	for (unsigned int i = 0; i < nsp; i++)
		sp[i] = t_keep(v->mem[n + i]);
	cfg.spares = sp;
	cfg.nspares = nsp;
	assert_int_equal(raid_create(devs, n, &cfg, false), 0);
	for (unsigned int i = 0; i < n + nsp; i++) {
		blk_close(i < n ? devs[i] : sp[i - n]);
		if (!(i < n && (absent & (1u << i))))
			devs[k++] = t_keep(v->mem[i]);
	}
	assert_int_equal(fop_watch_new(NULL, &v->w), 0);
	acfg.event_fn = fop_watch_event;
	acfg.event_ctx = v->w;
	assert_int_equal(raid_assemble(devs, k, &acfg, &v->c.array), 0);
	fop_opts_init(&v->opts);
	v->c.opts = &v->opts;
	v->c.watch = v->w;
	jg_mutex_init(&v->c.rebuild_lock, PTHREAD_MUTEX_DEFAULT);
}

/* The unmount's order (U3): the spare thread, then the rebuild thread, then the array. */
static void t_vol_down(struct t_vol *v)
{
	fop_watch_stop(&v->c);
	fop_rebuild_join(&v->c);
	assert_int_equal(raid_stop(v->c.array), 0);
	jg_mutex_destroy(&v->c.rebuild_lock);
	fop_watch_free(v->w);
	for (unsigned int i = 0; i < v->n + v->nsp; i++)
		blk_close(v->mem[i]);
	fop_opts_free(&v->opts);
}

/* Wait (at most 30 s) until the array is whole and no spare is taken; false on timeout. */
static bool t_wait_whole(struct t_vol *v, struct raid_info *ri)
{
	for (int i = 0; i < 3000; i++) {
		bool taken = false;

		raid_info_get(v->c.array, ri);
		for (unsigned int k = 0; k < ri->nspares; k++)
			taken |= ri->spares[k].rebuilding;
		if (!ri->degraded && !taken && ri->rebuild_progress < 0)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/*
 * Wait (at most 30 s) until the spare thread has made its mount look (the
 * flag set at start) and is back to waiting, so that what follows is started
 * by an event's kick alone. It counts a look when fop_watch_try has returned,
 * so the rebuild it would have started is visible under rebuild_lock by then.
 */
static void t_wait_thread_idle(struct t_vol *v)
{
	unsigned long looks = 0;
	bool lost = true;

	for (int i = 0; i < 30000 && (lost || !looks); i++) {
		pthread_mutex_lock(&v->w->lock);
		lost = v->w->lost;
		looks = v->w->looks;
		pthread_mutex_unlock(&v->w->lock);
		if (lost || !looks)
			usleep(1000);
	}
	assert_false(lost);
	assert_int_equal(looks, 1);
	jg_mutex_lock(&v->c.rebuild_lock);
	assert_false(v->c.rebuild_running);
	jg_mutex_unlock(&v->c.rebuild_lock);
}

static void test_watch_failure_takes_spare(void **state)
{
	struct raid_info ri;
	struct t_vol v;

	(void)state;
	t_vol_up(&v, 5, 4, 1, 0);
	fop_watch_start(&v.c);
	t_wait_thread_idle(&v);
	raid_info_get(v.c.array, &ri); /* nothing lost: the spare stays idle */
	assert_false(ri.degraded);
	assert_int_equal(ri.nspares, 1);
	assert_false(ri.spares[0].rebuilding);
	/* as an I/O error fails it: the array reports Fail, the test calls nothing else */
	assert_int_equal(raid_fail_member(v.c.array, 2), 0);
	assert_true(t_wait_whole(&v, &ri));
	assert_int_equal(ri.nspares, 0);
	assert_string_equal(ri.members[2].name, "spare0");
	assert_int_equal(ri.event_counts[RAID_EV_REBUILD_FINISHED], 1);
	assert_int_equal(raid_scrub(v.c.array, false, NULL, NULL, NULL), 0);
	t_vol_down(&v);
}

static void test_watch_raid6_two_spares_in_turn(void **state)
{
	struct raid_info ri;
	struct t_vol v;

	(void)state;
	t_vol_up(&v, 6, 5, 2, 0);
	fop_watch_start(&v.c);
	t_wait_thread_idle(&v);
	assert_int_equal(raid_fail_member(v.c.array, 0), 0);
	assert_int_equal(raid_fail_member(v.c.array, 3), 0);
	assert_true(t_wait_whole(&v, &ri));
	assert_int_equal(ri.nspares, 0);
	assert_int_equal(ri.event_counts[RAID_EV_REBUILD_FINISHED], 2);
	assert_false(ri.members[0].failed || ri.members[3].failed);
	assert_int_equal(raid_scrub(v.c.array, false, NULL, NULL, NULL), 0);
	t_vol_down(&v);
}

/* Assembled degraded (DegradedArray before the daemon runs): rebuilt when the thread starts. */
static void test_watch_degraded_at_mount(void **state)
{
	struct raid_info ri;
	struct t_vol v;

	(void)state;
	t_vol_up(&v, 5, 3, 1, 1u << 1);
	raid_info_get(v.c.array, &ri);
	assert_true(ri.degraded);
	fop_watch_start(&v.c);
	assert_true(t_wait_whole(&v, &ri));
	assert_string_equal(ri.members[1].name, "spare0");
	t_vol_down(&v);
}

/* Read-only: no thread, the spare stays idle; a Fail kick finds nothing to do. */
static void test_watch_readonly_starts_nothing(void **state)
{
	struct raid_event ev = {.kind = RAID_EV_READ_ERROR_CORRECTED,
				.name = "ReadErrorCorrected",
				.dev = "mem0",
				.progress = -1};
	struct raid_info ri;
	struct t_vol v;

	(void)state;
	t_vol_up(&v, 5, 3, 1, 1u << 0);
	v.opts.readonly = true;
	fop_watch_start(&v.c);
	assert_false(v.w->started);
	/* a kind that loses nothing does not set the flag */
	v.w->lost = false;
	fop_watch_event(v.w, &ev);
	assert_false(v.w->lost);
	ev.kind = RAID_EV_MEMBER_FAILED;
	fop_watch_event(v.w, &ev);
	assert_true(v.w->lost);
	/* no spare thread was started (asserted above), and only it takes a
	 * spare: nothing can have changed, no wait needed to see it */
	raid_info_get(v.c.array, &ri);
	assert_true(ri.degraded);
	assert_int_equal(ri.nspares, 1);
	assert_false(ri.spares[0].rebuilding);
	t_vol_down(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watch_failure_takes_spare),
	    cmocka_unit_test(test_watch_raid6_two_spares_in_turn),
	    cmocka_unit_test(test_watch_degraded_at_mount),
	    cmocka_unit_test(test_watch_readonly_starts_nothing),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
