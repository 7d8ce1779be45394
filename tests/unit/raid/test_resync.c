// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_resync.c - the write hole and its repair. A power cut
 * (raid_fault_domain, cut_after_writes, torn sectors) in the middle of stripe
 * writes leaves rows whose parity does not match; then
 *   - resync=off leaves them (the check below can fail: it does, there),
 *   - resync=full and resync=bitmap repair them at assembly,
 *   - resync=journal with BLK_FS_RAIDSYNC writes leaves them to the filesystem:
 *     BLK_SYNCRAID reads of the written blocks repair them (the lines they
 *     touch; a row resynced whole is not resynced again in that recovery),
 *     and so does resync-all on plain reads;
 * and scrub counts and repairs mismatches, refusing a degraded array.
 */
#include "raid_test.h"

static const struct geo_case *const geos = geo_resync;
#define NGEO GEO_N(geo_resync)
#define MB 192
#define REGION 32

static void t_fail(const struct geo_case *g, uint64_t seed, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u seed=%llu", what, g->level, g->n, g->chunk,
		 (unsigned long long)seed);
}

/* After the cut: the fault devices drop everything; reassemble on the memory members. */
static void t_uncut(struct tarr *t)
{
	if (t->a)
		raid_abandon(t->a);
	t->a = NULL;
	for (unsigned int i = 0; i < t->n; i++) {
		blk_close(t->top[i]);
		t->top[i] = t->mem[i];
	}
	raid_fault_domain_free(t->dom);
	t->dom = NULL;
}

/*
 * The workload: rewrite blocks [w0, w0 + wn) in small partial-row writes with
 * @flags, no flush. Returns the array's blocks it wrote.
 */
static void t_workload(struct tarr *t, uint64_t w0, uint64_t wn, uint32_t flags, uint64_t seed)
{
	uint8_t *buf = jg_alloc_blocks(3);
	uint64_t s = seed;

	for (uint64_t b = w0; b < w0 + wn; b += 3) {
		uint32_t len = w0 + wn - b < 3 ? (uint32_t)(w0 + wn - b) : 3;

		t_fill(buf, len, t_rand(&s));
		assert_int_equal(t_io(t, BLK_OP_WRITE, b, len, buf, flags), 0);
	}
	free(buf);
}

/*
 * Build a crashed array: base content written and flushed, then the workload cut
 * in its middle (at the write number found by a dry run with the same seed).
 * Returns the rows with parity mismatches, by the byte-wise reference.
 */
static uint64_t t_crash_at(struct tarr *t, const struct geo_case *gc, enum raid_resync_policy pol,
			   uint32_t flags, uint64_t seed, unsigned int permille, uint64_t *w0,
			   uint64_t *wn)
{
	uint64_t cut = 0, bad;
	struct raid_geo g;

	for (int pass = 0; pass < 2; pass++) {
		struct raid_fault_cfg fc = {
		    .cut_after_writes = cut, .seed = seed, .keep_percent = 50, .tear = true};
		struct raid_info info;
		uint64_t before;
		uint8_t *base;

		t_make(t, gc, MB, pol, REGION, &fc);
		t_assemble(t);
		raid_info_get(t->a, &info);
		base = jg_alloc_blocks(info.array_blocks);
		t_fill(base, info.array_blocks, seed);
		assert_int_equal(t_io(t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, base, 0), 0);
		/* two flushes: the base's bitmap bits are cleared (bitmap.c (B2), delay 0);
		 * a third makes the clearing durable (else a cut may bring bits back) */
		assert_int_equal(blk_flush(t->dev), 0);
		assert_int_equal(blk_flush(t->dev), 0);
		assert_int_equal(blk_flush(t->dev), 0);
		raid_info_get(t->a, &info);
		assert_int_equal(info.bitmap_dirty_regions, 0);
		free(base);
		/* the middle third of the array, so bitmap recovery has clean regions to skip */
		*w0 = info.array_blocks / 3;
		*wn = info.array_blocks / 3;
		before = raid_fault_domain_writes(t->dom);
		t_workload(t, *w0, *wn, flags, seed + 1);
		if (pass == 0) {
			cut = before + 1 +
			      (raid_fault_domain_writes(t->dom) - before - 1) * permille / 1000;
			t_free(t);
		} else {
			raid_fault_domain_cut(t->dom); /* if the count was not reached */
		}
	}
	t_uncut(t);
	t_geo(t, &g);
	bad = t_ref_mismatches(t, &g);
	return bad;
}

static uint64_t t_crash(struct tarr *t, const struct geo_case *gc, enum raid_resync_policy pol,
			uint32_t flags, uint64_t seed, uint64_t *w0, uint64_t *wn)
{
	return t_crash_at(t, gc, pol, flags, seed, 667, w0, wn);
}

/* Cut at many positions of the workload: bitmap and full always repair; off does not. */
static void test_resync_cut_positions(void **state)
{
	static const struct geo_case *const cg = geo_r5_r6_small_chunk;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_r5_r6_small_chunk); gi++) {
		uint64_t off_bad = 0;

		for (unsigned int pm = 0; pm < 1000; pm += 125) {
			for (unsigned int pi = 0; pi < 3; pi++) {
				static const enum raid_resync_policy pols[] = {
				    RAID_RESYNC_OFF, RAID_RESYNC_BITMAP, RAID_RESYNC_FULL};
				uint64_t seed = 7000 + pm, w0, wn, bad, left;
				struct raid_geo g;
				struct tarr t;

				bad = t_crash_at(&t, &cg[gi], pols[pi], 0, seed, pm, &w0, &wn);
				t_assemble(&t);
				t_stop(&t);
				t_geo(&t, &g);
				left = t_ref_mismatches(&t, &g);
				if (pols[pi] == RAID_RESYNC_OFF) {
					if (left != bad)
						t_fail(&cg[gi], seed, "resync=off changed parity");
					off_bad += bad;
				} else if (left) {
					fail_msg(
					    "%s left %llu mismatches: cut at %u/1000 level=%u members=%u seed=%llu",
					    raid_resync_policy_name(pols[pi]),
					    (unsigned long long)left, pm, cg[gi].level, cg[gi].n,
					    (unsigned long long)seed);
				}
				t_free(&t);
			}
		}
		/* the same cuts unprotected do leave damage: the checks above can fail */
		if (!off_bad)
			t_fail(&cg[gi], 7000, "no cut position produced a write hole");
	}
}

static void test_resync_power_cut_by_policy(void **state)
{
	static const enum raid_resync_policy pols[] = {RAID_RESYNC_OFF, RAID_RESYNC_FULL,
						       RAID_RESYNC_BITMAP, RAID_RESYNC_JOURNAL};

	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		for (unsigned int pi = 0; pi < 4; pi++) {
			const struct geo_case *gc = &geos[gi];
			uint64_t seed = 100 * gi + pi + 1, w0, wn, bad;
			struct raid_info info;
			struct raid_geo g;
			struct tarr t;

			bad = t_crash(&t, gc, pols[pi], 0, seed, &w0, &wn);
			if (!bad)
				t_fail(
				    gc, seed,
				    "the power cut left no parity mismatch: the test cannot fail");
			t_assemble(&t);
			raid_info_get(t.a, &info);
			if (!info.was_dirty)
				t_fail(gc, seed, "crashed array not seen dirty");
			t_stop(&t);
			t_geo(&t, &g);
			if (pols[pi] == RAID_RESYNC_OFF) {
				/* the write hole stays: what the other policies must repair */
				if (t_ref_mismatches(&t, &g) != bad ||
				    info.last_resync.rows_checked)
					t_fail(gc, seed, "resync=off changed parity");
			} else {
				if (t_ref_mismatches(&t, &g))
					t_fail(gc, seed, "recovery resync left mismatches");
				if (info.last_resync.rows_repaired != bad)
					t_fail(gc, seed,
					       "rows_repaired differs from the mismatches found");
				if (pols[pi] != RAID_RESYNC_FULL &&
				    info.last_resync.rows_checked >= g.rows)
					t_fail(gc, seed, "bitmap recovery resynced every row");
				if (pols[pi] == RAID_RESYNC_FULL &&
				    info.last_resync.rows_checked != g.rows)
					t_fail(gc, seed, "full recovery skipped rows");
			}
			t_free(&t);
		}
	}
}

/* Journal policy, FS_RAIDSYNC writes: the bitmap stays clean, SYNCRAID repairs. */
static void test_resync_syncraid_reads_repair(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 500 + gi, w0, wn, bad;
		struct raid_info info;
		struct blk_stats st, st2;
		struct raid_geo g;
		struct tarr t;
		uint8_t *buf;

		bad = t_crash(&t, gc, RAID_RESYNC_JOURNAL, BLK_FS_RAIDSYNC, seed, &w0, &wn);
		if (!bad)
			t_fail(gc, seed, "no mismatch to repair: the test cannot fail");
		t_assemble(&t);
		raid_info_get(t.a, &info);
		t_geo(&t, &g);
		/* nothing in the bitmap: the filesystem declared those writes */
		if (info.last_resync.rows_checked || t_ref_mismatches(&t, &g) != bad)
			t_fail(gc, seed, "recovery touched rows the journal owns");
		buf = jg_alloc_blocks(wn);
		/* plain reads repair nothing */
		assert_int_equal(t_io(&t, BLK_OP_READ, w0, (uint32_t)wn, buf, 0), 0);
		if (t_ref_mismatches(&t, &g) != bad)
			t_fail(gc, seed, "a plain read resynced");
		/* SYNCRAID reads of the blocks written, one block at a time */
		for (uint64_t b = w0; b < w0 + wn; b++)
			assert_int_equal(t_io(&t, BLK_OP_READ, b, 1, buf, BLK_SYNCRAID), 0);
		if (t_ref_mismatches(&t, &g))
			t_fail(gc, seed, "SYNCRAID reads left mismatches");
		/* a one-block request resyncs its line of the row, so a row with
		 * several bad lines counts one repair per line */
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_STATS, &st), 0);
		if (st.resync_rows_repaired < bad || st.syncraid_rows == 0)
			t_fail(gc, seed, "SYNCRAID stats wrong");
		/* a row resynced whole is resynced once per recovery */
		free(buf);
		buf = jg_alloc_blocks(g.row_blocks);
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, g.row_blocks, buf, BLK_SYNCRAID), 0);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_STATS, &st), 0);
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, g.row_blocks, buf, BLK_SYNCRAID), 0);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_STATS, &st2), 0);
		if (st2.syncraid_rows != st.syncraid_rows)
			t_fail(gc, seed, "a row was resynced twice in one recovery");
		/* after SYNCRAID_DONE the set is forgotten */
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_SYNCRAID_DONE, NULL), 0);
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, g.row_blocks, buf, BLK_SYNCRAID), 0);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_STATS, &st2), 0);
		if (st2.syncraid_rows != st.syncraid_rows + 1)
			t_fail(gc, seed, "SYNCRAID_DONE did not reset the set");
		t_stop(&t);
		free(buf);
		t_free(&t);
	}
}

/* resync-all: plain reads of the right blocks repair; SYNCRAID writes too. */
static void test_resync_all_and_syncraid_writes(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 700 + gi, w0, wn, bad;
		struct raid_info info;
		struct raid_geo g;
		struct tarr t;
		uint8_t *buf;

		bad = t_crash(&t, gc, RAID_RESYNC_JOURNAL, BLK_FS_RAIDSYNC, seed, &w0, &wn);
		if (!bad)
			t_fail(gc, seed, "no mismatch to repair: the test cannot fail");
		t_assemble(&t);
		t_geo(&t, &g);
		buf = jg_alloc_blocks(wn);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_RESYNC_ALL, NULL), 0);
		raid_info_get(t.a, &info);
		assert_true(info.resync_all);
		/* first half by reads under resync-all */
		assert_int_equal(t_io(&t, BLK_OP_READ, w0, (uint32_t)(wn / 2), buf, 0), 0);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_CLEAR_RESYNC_ALL, NULL), 0);
		/* second half: SYNCRAID writes of the same data (journal replay) */
		assert_int_equal(
		    t_io(&t, BLK_OP_READ, w0 + wn / 2, (uint32_t)(wn - wn / 2), buf, 0), 0);
		assert_int_equal(
		    t_io(&t, BLK_OP_WRITE, w0 + wn / 2, (uint32_t)(wn - wn / 2), buf, BLK_SYNCRAID),
		    0);
		if (t_ref_mismatches(&t, &g))
			t_fail(gc, seed, "resync-all reads and SYNCRAID writes left mismatches");
		t_stop(&t);
		free(buf);
		t_free(&t);
	}
}

static int t_progress(void *ctx, uint64_t done, uint64_t total)
{
	assert_true(done <= total);
	(*(uint64_t *)ctx)++;
	return 0;
}

static void test_resync_scrub(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 900 + gi, w0, wn, bad, calls = 0;
		struct raid_resync_report rep;
		struct raid_geo g;
		struct tarr t;

		bad = t_crash(&t, gc, RAID_RESYNC_OFF, 0, seed, &w0, &wn);
		if (!bad)
			t_fail(gc, seed, "no mismatch: the test cannot fail");
		t_assemble(&t);
		t_geo(&t, &g);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL),
				 0); /* logs a warning */
		if (raid_scrub(t.a, false, NULL, NULL, &rep) != (int64_t)bad ||
		    rep.rows_checked != g.rows || rep.rows_repaired)
			t_fail(gc, seed, "scrub count wrong");
		if (t_ref_mismatches(&t, &g) != bad)
			t_fail(gc, seed, "scrub without repair changed parity");
		if (raid_scrub(t.a, true, t_progress, &calls, &rep) != (int64_t)bad ||
		    rep.rows_repaired != bad)
			t_fail(gc, seed, "scrub repair count wrong");
		if (!calls)
			t_fail(gc, seed, "scrub progress never called");
		if (t_ref_mismatches(&t, &g) || raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
			t_fail(gc, seed, "scrub repair left mismatches");
		/* degraded: refused */
		assert_int_equal(raid_fail_member(t.a, 0), 0);
		if (raid_scrub(t.a, false, NULL, NULL, NULL) >= 0)
			t_fail(gc, seed, "scrub of a degraded array not refused");
		t_stop(&t);
		t_free(&t);
	}
}

/*
 * What a power cut keeps (stripe.c (W4)): a FUA write, and a write completed
 * before a PREFLUSH, read back; a FUA write's parity is durable too unless the
 * write is flagged BLK_FS_RAIDSYNC, whose row the filesystem resyncs (a SYNCRAID
 * read mends it); on a degraded array, where parity is the only copy of a
 * block, a BLK_FS_RAIDSYNC FUA write's parity is durable as well.
 */
enum t_dur_case { T_DUR_FUA, T_DUR_RAIDSYNC_FUA, T_DUR_PREFLUSH, T_DUR_DEGRADED, T_DUR_NCASES };

static void test_resync_fua_preflush_durable(void **state)
{
	static const char *const what[T_DUR_NCASES] = {
		"FUA write lost", "RAIDSYNC FUA write lost", "write before a PREFLUSH lost",
		"RAIDSYNC FUA write on a degraded array lost (its parity was not durable)"};

	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		for (int c = 0; c < T_DUR_NCASES; c++) {
			const struct geo_case *gc = &geos[gi];
			struct raid_fault_cfg fc = { .seed = 31 + gi, .keep_percent = 0, .tear = true };
			struct raid_assemble_cfg deg = { .force = true, .readonly = true };
			uint8_t *a = jg_alloc_blocks(3), *rd = jg_alloc_blocks(3);
			uint32_t mask = ~0u;
			uint64_t bad, mblk;
			unsigned int role;
			struct raid_geo g;
			struct tarr t;

			t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, REGION, &fc);
			t_assemble(&t);
			t_geo(&t, &g);
			t_fill(a, 3, 1 + (uint64_t)c);
			switch (c) {
			case T_DUR_FUA:
				assert_int_equal(t_io(&t, BLK_OP_WRITE, 10, 3, a, BLK_FUA), 0);
				break;
			case T_DUR_RAIDSYNC_FUA:
				assert_int_equal(t_io(&t, BLK_OP_WRITE, 10, 3, a, BLK_FS_RAIDSYNC | BLK_FUA), 0);
				break;
			case T_DUR_PREFLUSH:
				assert_int_equal(t_io(&t, BLK_OP_WRITE, 10, 3, a, BLK_FS_RAIDSYNC), 0);
				assert_int_equal(t_io(&t, BLK_OP_WRITE, 70, 1, a, BLK_FS_RAIDSYNC | BLK_PREFLUSH), 0);
				break;
			default:
				/* the member holding block 10 is gone: parity is its only copy */
				raid_layout_map(&g, 10, &role, &mblk);
				assert_int_equal(raid_fail_member(t.a, role), 0);
				mask = ~(1u << role);
				assert_int_equal(t_io(&t, BLK_OP_WRITE, 10, 3, a, BLK_FS_RAIDSYNC | BLK_FUA), 0);
				break;
			}
			raid_fault_domain_cut(t.dom); /* keep_percent 0: unflushed writes reverted */
			t_uncut(&t);
			if (c == T_DUR_DEGRADED)
				assert_int_equal(t_assemble_mask(&t, mask, &deg), 0);
			else
				t_assemble(&t);
			assert_int_equal(t_io(&t, BLK_OP_READ, 10, 3, rd, 0), 0);
			if (memcmp(rd, a, 3 * JG_BLOCK_SIZE))
				t_fail(gc, 31 + gi, what[c]); /* lost in the power cut */
			if (c == T_DUR_RAIDSYNC_FUA) {
				t_stop(&t);
				/* the parity did not survive: the row is the filesystem's to resync */
				if (!t_ref_mismatches(&t, &g))
					t_fail(gc, 31 + gi, "RAIDSYNC FUA write: parity durable without a flush");
				t_assemble(&t);
				assert_int_equal(t_io(&t, BLK_OP_READ, 10, 3, rd, BLK_SYNCRAID), 0);
			}
			if (c != T_DUR_DEGRADED) {
				t_stop(&t);
				bad = t_ref_mismatches(&t, &g);
				if (bad > (c == T_DUR_PREFLUSH)) /* block 70's row may tear */
					t_fail(gc, 31 + gi, "durable writes left parity mismatches");
			}
			free(a);
			free(rd);
			t_free(&t);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resync_power_cut_by_policy),
	    cmocka_unit_test(test_resync_cut_positions),
	    cmocka_unit_test(test_resync_syncraid_reads_repair),
	    cmocka_unit_test(test_resync_all_and_syncraid_writes),
	    cmocka_unit_test(test_resync_scrub),
	    cmocka_unit_test(test_resync_fua_preflush_durable),
	};

	jg_log_set_level(JG_LOG_ERR);
	t_default_knobs.bitmap_clear_now = true;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
