// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_inflight.c - I/O in flight while a member changes
 * (issue 43): a write that skips a member whose failure is not yet durable is
 * not acknowledged before the superblock round recording it (super.c (S12));
 * a read planned against a member's device is never served by, nor fails, the
 * device that replaces it (rebuild.c (R6)). The fault device's stall holds
 * the chosen request in flight at the chosen moment.
 */
#include <pthread.h>
#include <time.h>

#include "raid_test.h"

#define MB 160

struct t_io_thread {
	struct blk_dev *dev;
	int op;
	uint64_t blkno;
	uint32_t nblocks;
	uint8_t *buf;
	uint32_t flags;
	int rc;
	bool done;
};

static void *t_io_run(void *arg)
{
	struct t_io_thread *w = arg;

	w->rc = blk_rw(w->dev, w->op, w->blkno, w->nblocks, w->buf, w->flags);
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void t_sleep_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Wait up to @ms for *@flag; returns it. */
static bool t_wait_flag(const bool *flag, unsigned int ms)
{
	for (unsigned int i = 0; i < ms && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++)
		t_sleep_ms(1);
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/* A new array of @gc over fault members (cfg @fc), filled with a seeded pattern, flushed. */
static uint8_t *t_filled(struct tarr *t, const struct geo_case *gc, const struct raid_fault_cfg *fc,
			 uint64_t *nblk, struct raid_geo *g)
{
	struct raid_info info;
	uint8_t *ref;

	t_make(t, gc, MB, RAID_RESYNC_BITMAP, 0, fc);
	t_assemble(t);
	t_geo(t, g);
	raid_info_get(t->a, &info);
	*nblk = info.array_blocks;
	ref = jg_alloc_blocks(*nblk);
	assert_non_null(ref);
	t_fill(ref, *nblk, 43);
	assert_int_equal(t_io(t, BLK_OP_WRITE, 0, (uint32_t)*nblk, ref, 0), 0);
	assert_int_equal(t_io(t, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);
	return ref;
}

/* The first array block of a data chunk of member @role in a row after row 0. */
static uint64_t t_block_on(const struct raid_geo *g, unsigned int role)
{
	for (uint64_t r = 1; r < g->rows; r++)
		for (unsigned int d = 0; d < g->ndata; d++)
			if (raid_layout_member(g, r, d) == role)
				return r * g->row_blocks + (uint64_t)d * g->chunk_blocks;
	fail_msg("no data chunk of role %u", role);
	return 0;
}

/*
 * (S12) Thread A's write to member X fails: X is failed in memory and the
 * superblock round that records it is held in flight (a stalled superblock
 * write on another member). Thread B writes another row of X with FUA,
 * degraded. The power is cut before the round is durable: every member is
 * left at the old event with no failed bit, and the next assembly takes X,
 * stale, as in sync. A write B had acknowledged by then must read back after
 * reassembly; so B must not have been acknowledged.
 */
static void test_inflight_degraded_write_waits_for_fail(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct raid_fault_cfg fc = {.seed = 7, .keep_percent = 0};
	struct t_io_thread wa = {0}, wb = {0};
	pthread_t ta, tb;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, bb;
	unsigned int x, y;
	uint8_t *ref, *na = jg_alloc_blocks(1), *nb = jg_alloc_blocks(1),
		      *back = jg_alloc_blocks(1);
	bool acked;

	(void)state;
	ref = t_filled(&t, &gc, &fc, &nblk, &g);
	x = raid_layout_member(&g, 0, 0); /* array block 0 lies on it */
	y = (x + 1) % gc.n;
	bb = t_block_on(&g, x);
	t_fill(na, 1, 1001);
	t_fill(nb, 1, 1002);
	assert_int_equal(raid_dev_fault_fail_block(t.top[x], g.data_offset, false, true), 0);
	assert_int_equal(raid_dev_fault_stall_block(t.top[y], RAID_SB_BLKNO, BLK_OP_WRITE), 0);
	wa = (struct t_io_thread){.dev = t.dev,
				  .op = BLK_OP_WRITE,
				  .blkno = 0,
				  .nblocks = 1,
				  .buf = na,
				  .flags = BLK_FUA};
	assert_int_equal(pthread_create(&ta, NULL, t_io_run, &wa), 0);
	raid_dev_fault_wait_stalled(t.top[y]); /* A is in the round that fails X */
	assert_true(raid_missing_write(t.a) & (1u << x));
	wb = (struct t_io_thread){.dev = t.dev,
				  .op = BLK_OP_WRITE,
				  .blkno = bb,
				  .nblocks = 1,
				  .buf = nb,
				  .flags = BLK_FUA};
	assert_int_equal(pthread_create(&tb, NULL, t_io_run, &wb), 0);
	acked = t_wait_flag(&wb.done, 1000);
	raid_fault_domain_cut(t.dom);
	raid_dev_fault_release(t.top[y]);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	raid_abandon(t.a);
	t.a = NULL;

	/* the next run: every member at the old event, X among them */
	t_assemble(&t);
	assert_int_equal(t_io(&t, BLK_OP_READ, bb, 1, back, 0), 0);
	if (acked && memcmp(back, nb, JG_BLOCK_SIZE))
		fail_msg("a write acknowledged degraded before its member's failure was durable "
			 "reads back stale after a power cut (rc=%d)",
			 wb.rc);
	assert_false(acked);
	t_stop(&t);
	free(ref);
	free(na);
	free(nb);
	free(back);
	t_free(&t);
}

struct t_fail_thread {
	struct raid_array *a;
	unsigned int role;
	int rc;
};

static void *t_fail_run(void *arg)
{
	struct t_fail_thread *f = arg;

	f->rc = raid_fail_member(f->a, f->role);
	return NULL;
}

/*
 * (S12) A write reached member X and the others but no flush yet; then X is
 * failed (its round held in flight). A flush now skips X: what X holds of that
 * write is in its cache only. The power is cut before the round is durable, so
 * the next assembly takes X as in sync and its chunk reverted: the write is
 * gone. So the flush, which made it durable for the caller, must not return
 * before X's failure is durable (readd-run, issue 43: fsynced data read back
 * never-written bytes).
 */
static void test_inflight_flush_waits_for_fail(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	/* flushes counted among the domain's writes: the flush's progress is seen */
	struct raid_fault_cfg fc = {.seed = 11, .keep_percent = 0, .cut_at_flushes = true};
	struct t_io_thread fl = {0};
	struct t_fail_thread ft = {0};
	pthread_t tf, tfl;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, bb, w0;
	unsigned int x, y;
	uint8_t *ref, *nb = jg_alloc_blocks(1), *back = jg_alloc_blocks(1);
	bool acked;

	(void)state;
	ref = t_filled(&t, &gc, &fc, &nblk, &g);
	x = raid_layout_member(&g, 0, 0);
	y = (x + 1) % gc.n;
	bb = t_block_on(&g, x);
	t_fill(nb, 1, 1004);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, bb, 1, nb, 0), 0); /* on X, unflushed */
	assert_int_equal(raid_dev_fault_stall_block(t.top[y], RAID_SB_BLKNO, BLK_OP_WRITE), 0);
	ft = (struct t_fail_thread){.a = t.a, .role = x};
	assert_int_equal(pthread_create(&tf, NULL, t_fail_run, &ft), 0);
	raid_dev_fault_wait_stalled(t.top[y]); /* X failed in memory, its round in flight */
	assert_true(raid_missing_write(t.a) & (1u << x));
	w0 = raid_fault_domain_writes(t.dom);
	fl = (struct t_io_thread){.dev = t.dev, .op = BLK_OP_FLUSH};
	assert_int_equal(pthread_create(&tfl, NULL, t_io_run, &fl), 0);
	/* its member flushes (every member but X) have been issued: from here a
	 * flush that does not wait returns at once, however slow the machine */
	for (unsigned int i = 0; i < 10000 && raid_fault_domain_writes(t.dom) < w0 + gc.n - 1; i++)
		t_sleep_ms(1);
	assert_true(raid_fault_domain_writes(t.dom) >= w0 + gc.n - 1);
	acked = t_wait_flag(&fl.done, 1000);
	raid_fault_domain_cut(t.dom);
	raid_dev_fault_release(t.top[y]);
	pthread_join(tf, NULL);
	pthread_join(tfl, NULL);
	raid_abandon(t.a);
	t.a = NULL;

	t_assemble(&t); /* every member at the old event, X among them */
	assert_int_equal(t_io(&t, BLK_OP_READ, bb, 1, back, 0), 0);
	if (acked && memcmp(back, nb, JG_BLOCK_SIZE))
		fail_msg("a flush that skipped a member whose failure was not durable returned "
			 "(rc=%d); the write it covered reads back stale after a power cut",
			 fl.rc);
	assert_false(acked);
	t_stop(&t);
	free(ref);
	free(nb);
	free(back);
	t_free(&t);
}

/*
 * (S12) The round that would record the failure cannot be written to enough
 * members: a write that would skip the member is not acknowledged; it fails.
 */
static void test_inflight_fail_round_fails_writes(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct raid_fault_cfg fc = {.seed = 9, .keep_percent = 100};
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, bb;
	unsigned int x;
	uint8_t *ref, *nb = jg_alloc_blocks(1);

	(void)state;
	ref = t_filled(&t, &gc, &fc, &nblk, &g);
	x = raid_layout_member(&g, 0, 0);
	bb = t_block_on(&g, x);
	t_fill(nb, 1, 1003);
	/* X's data writes fail, and so do the superblock writes of two others */
	assert_int_equal(raid_dev_fault_fail_block(t.top[x], g.data_offset, false, true), 0);
	for (unsigned int k = 1; k <= 2; k++) {
		unsigned int m = (x + k) % gc.n;

		assert_int_equal(raid_dev_fault_fail_block(t.top[m], RAID_SB_BLKNO, false, true),
				 0);
		assert_int_equal(
		    raid_dev_fault_fail_block(t.top[m], RAID_SB_COPY_BLKNO, false, true), 0);
	}
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, 1, nb, BLK_FUA), -EIO);
	/* X is failed in memory, not on disk: degraded writes must not be acknowledged */
	assert_true(raid_missing_write(t.a) & (1u << x));
	assert_int_equal(t_io(&t, BLK_OP_WRITE, bb, 1, nb, BLK_FUA), -EIO);
	free(ref);
	free(nb);
	t_free(&t);
}

struct t_rebuild_thread {
	struct raid_array *a;
	unsigned int role;
	struct blk_dev *nm;
	int rc;
};

static void *t_rebuild_run(void *arg)
{
	struct t_rebuild_thread *r = arg;

	r->rc = raid_rebuild(r->a, r->role, r->nm, NULL, NULL);
	return NULL;
}

/* Whether role @x holds @dev now. */
static bool t_role_dev_is(struct raid_array *a, unsigned int x, const struct blk_dev *dev)
{
	bool is;

	jg_mutex_lock(&a->sb_lock);
	is = a->m[x].dev == dev;
	jg_mutex_unlock(&a->sb_lock);
	return is;
}

/*
 * (R6) A read planned against member X's device is in flight (stalled) when
 * X is failed and a rebuild onto a new device starts; then the read fails on
 * the old device. It must be read around (reconstructed), never taken from
 * the new device, still blank, nor fail it; the rebuild ends with the array
 * whole and in sync.
 */
static void test_inflight_read_on_replaced_member(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct raid_fault_cfg fc = {.seed = 11, .keep_percent = 100};
	struct t_rebuild_thread rb = {0};
	struct t_io_thread rd = {0};
	struct raid_info info;
	struct raid_geo g;
	struct tarr t;
	pthread_t tr, trb;
	uint64_t nblk;
	unsigned int x;
	uint8_t *ref, *buf = jg_alloc_blocks(3), *all;

	(void)state;
	ref = t_filled(&t, &gc, &fc, &nblk, &g);
	x = raid_layout_member(&g, 0, 0); /* array blocks 0..2 lie on it */
	assert_int_equal(raid_dev_fault_stall_block(t.top[x], g.data_offset, BLK_OP_READ), 0);
	assert_int_equal(raid_dev_fault_fail_block(t.top[x], g.data_offset, true, false), 0);
	rd = (struct t_io_thread){
	    .dev = t.dev, .op = BLK_OP_READ, .blkno = 0, .nblocks = 3, .buf = buf};
	assert_int_equal(pthread_create(&tr, NULL, t_io_run, &rd), 0);
	raid_dev_fault_wait_stalled(t.top[x]);
	assert_int_equal(raid_fail_member(t.a, x), 0);
	rb.a = t.a;
	rb.role = x;
	assert_int_equal(raid_dev_mem_open("new", MB, &rb.nm), 0);
	assert_int_equal(pthread_create(&trb, NULL, t_rebuild_run, &rb), 0);
	/* give the rebuild the time to take the role (it must wait for the read) */
	for (unsigned int i = 0; i < 500 && !t_role_dev_is(t.a, x, rb.nm); i++)
		t_sleep_ms(1);
	raid_dev_fault_release(t.top[x]);
	pthread_join(tr, NULL);
	pthread_join(trb, NULL);
	if (rd.rc || memcmp(buf, ref, 3 * JG_BLOCK_SIZE))
		fail_msg("a read in flight on the replaced member returned rc=%d, %s", rd.rc,
			 rd.rc ? "" : "wrong data (the new member's blank blocks?)");
	assert_int_equal(rb.rc, 0);
	raid_info_get(t.a, &info);
	assert_false(info.degraded);
	all = jg_alloc_blocks(nblk);
	assert_int_equal(t_io(&t, BLK_OP_READ, 0, (uint32_t)nblk, all, 0), 0);
	assert_memory_equal(all, ref, nblk * JG_BLOCK_SIZE);
	assert_int_equal(raid_scrub(t.a, false, NULL, NULL, NULL), 0); /* no mismatch */
	t_stop(&t);
	free(all);
	free(buf);
	free(ref);
	t_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inflight_degraded_write_waits_for_fail),
		cmocka_unit_test(test_inflight_flush_waits_for_fail),
		cmocka_unit_test(test_inflight_fail_round_fails_writes),
		cmocka_unit_test(test_inflight_read_on_replaced_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
