// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_sync.c - the initial sync of a new array (src/raid/sync.c):
 * members that held something else before create, written before the sync has
 * passed their rows, then a member lost; the sync's mark, its resumption, and
 * power cuts at its writes.
 */
#include <errno.h>
#include <stdlib.h>

#include "raid_test.h"

static const struct geo_case *const geos = geo_sync;
#define NGEO GEO_N(geo_sync)
#define MEMBER_BLOCKS 2048 /* a few hundred rows: several sync groups */

static void t_fail(const struct geo_case *g, uint64_t seed, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u seed=%llu", what, g->level, g->n, g->chunk,
		 (unsigned long long)seed);
}

/* The superblock of member 0 (copy 0): the recorded sync mark, and whether it says SYNCING. */
static uint64_t t_sb_mark(struct tarr *t, bool *syncing)
{
	uint8_t *b = jg_alloc_blocks(1);
	const struct raid_sb *sb = (const struct raid_sb *)b;
	uint64_t mark;

	assert_int_equal(blk_rw(t->mem[0], BLK_OP_READ, 0, 1, b, 0), 0);
	*syncing = jg_le32(sb->feature_incompat) & RAID_FEATURE_INCOMPAT_SYNCING;
	mark = jg_le64(sb->sync_rows);
	free(b);
	return mark;
}

/*
 * Partial writes at random places (single blocks and short runs, never whole
 * rows) into @ref, which keeps what the array must read back; @written marks
 * the blocks. Returns the count of writes.
 */
static unsigned int t_scatter(struct tarr *t, uint64_t nblk, uint64_t seed, uint8_t *ref,
			      uint8_t *written)
{
	uint64_t s = seed;
	unsigned int nw = 0;

	for (unsigned int i = 0; i < 64; i++) {
		uint64_t b = t_rand(&s) % nblk;
		uint32_t n = 1 + (uint32_t)(t_rand(&s) % 3);

		if (b + n > nblk)
			n = (uint32_t)(nblk - b);
		t_fill(ref + b * JG_BLOCK_SIZE, n, seed * 1000 + i);
		assert_int_equal(t_io(t, BLK_OP_WRITE, b, n, ref + b * JG_BLOCK_SIZE, 0), 0);
		memset(written + b, 1, n);
		nw++;
	}
	return nw;
}

/* Every written block reads back as @ref says; false at the first that does not. */
static bool t_written_right(struct tarr *t, uint64_t nblk, const uint8_t *ref,
			    const uint8_t *written)
{
	uint8_t *b = jg_alloc_blocks(1);
	bool ok = true;

	for (uint64_t i = 0; i < nblk && ok; i++) {
		if (!written[i])
			continue;
		ok = !t_io(t, BLK_OP_READ, i, 1, b, 0) &&
		     !memcmp(b, ref + i * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
	}
	free(b);
	return ok;
}

/*
 * Each member left out in turn: every written block reads back right, degraded.
 * A degraded assembly records the absent member failed: the members' images
 * are put back after each.
 */
static void t_lose_each(struct tarr *t, const struct geo_case *gc, uint64_t seed, uint64_t nblk,
			const uint8_t *ref, const uint8_t *written, const char *when)
{
	uint8_t *img[RAID_MAX_MEMBERS];

	for (unsigned int i = 0; i < t->n; i++)
		img[i] = t_member_image(t, i);
	for (unsigned int k = 0; k < t->n; k++) {
		char why[160];

		if (t_assemble_mask(t, ~(1u << k), NULL)) {
			snprintf(why, sizeof(why), "%s: member %u left out: no assembly", when, k);
			t_fail(gc, seed, why);
		}
		if (!t_written_right(t, nblk, ref, written)) {
			snprintf(why, sizeof(why), "%s: member %u lost: a written block reads wrong",
				 when, k);
			t_fail(gc, seed, why);
		}
		t_stop(t);
		for (unsigned int i = 0; i < t->n; i++)
			assert_int_equal(blk_rw(t->mem[i], BLK_OP_WRITE, 0,
						(uint32_t)t->member_blocks, img[i], 0), 0);
	}
	for (unsigned int i = 0; i < t->n; i++)
		free(img[i]);
}

/*
 * (Y1) (W6) Before the sync passes them, rows that held noise are written in
 * part: each member lost in turn, every written block still reads right. The
 * write path is pushed to read-modify-write where it may (force_partial 2):
 * past the mark it must not, or the noise in the parity stays. Then the sync
 * runs to the end: every row in sync, the mark and SYNCING cleared on disk.
 */
static void test_sync_writes_before_the_sync(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 40 + gi, nblk;
		struct raid_info info;
		struct raid_geo g;
		struct tarr t;
		uint8_t *ref, *written;
		bool syncing;

		t_make_old(&t, gc, MEMBER_BLOCKS, RAID_RESYNC_BITMAP, 16, NULL, seed);
		t_geo(&t, &g);
		if (t_sb_mark(&t, &syncing) != 0 || !syncing)
			t_fail(gc, seed, "a new array's superblock does not say SYNCING at row 0");
		t_assemble(&t);
		raid_info_get(t.a, &info);
		if (info.sync_rows != 0 || info.sync_done != 0)
			t_fail(gc, seed, "a new array is in sync");
		nblk = info.array_blocks;
		ref = jg_alloc_blocks(nblk);
		written = calloc(nblk, 1);
		assert_non_null(written);
		t.a->test.partial = RAID_PARTIAL_RMW;
		t_scatter(&t, nblk, seed, ref, written);
		t.a->test.partial = RAID_PARTIAL_AUTO;
		if (!t_written_right(&t, nblk, ref, written))
			t_fail(gc, seed, "written blocks read wrong with every member");
		t_stop(&t);
		t_lose_each(&t, gc, seed, nblk, ref, written, "before the sync");

		t_assemble(&t);
		assert_int_equal(raid_initial_sync(t.a, NULL, NULL), 0);
		raid_info_get(t.a, &info);
		if (info.sync_rows != info.rows || info.sync_done != info.rows)
			t_fail(gc, seed, "the sync ended short of the last row");
		for (uint64_t r = 0; r < g.rows; r++)
			if (!t_row_in_sync(&t, &g, r))
				t_fail(gc, seed, "a row is out of sync after the initial sync");
		if (!t_written_right(&t, nblk, ref, written))
			t_fail(gc, seed, "the sync changed written data");
		assert_int_equal(raid_scrub(t.a, false, NULL, NULL, NULL), 0);
		t_stop(&t);
		if (t_sb_mark(&t, &syncing) != 0 || syncing)
			t_fail(gc, seed, "the superblock still says SYNCING after the sync");
		t_lose_each(&t, gc, seed, nblk, ref, written, "after the sync");
		free(ref);
		free(written);
		t_free(&t);
	}
}

struct t_stop_after {
	unsigned int calls, stop_at;
	uint64_t first_done;
};

static int t_stop_after(void *ctx, uint64_t done, uint64_t total)
{
	struct t_stop_after *s = ctx;

	assert_true(done <= total);
	if (!s->calls)
		s->first_done = done;
	return ++s->calls >= s->stop_at;
}

/*
 * (Y2) A sync paused after two groups records its mark: a check-only scrub
 * looks at the rows below it only (and finds them in sync), the next
 * assembly has the mark, the sync goes on from it, and scrub --repair of an
 * array not in sync finishes the sync.
 */
static void test_sync_pause_resume(void **state)
{
	(void)state;
	t_default_knobs.sync_mark_always = true;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 70 + gi, mark;
		struct t_stop_after st = {.stop_at = 2};
		struct raid_resync_report rep;
		struct raid_info info;
		struct raid_geo g;
		struct tarr t;
		bool syncing;

		t_make_old(&t, gc, 4 * MEMBER_BLOCKS, RAID_RESYNC_JOURNAL, 16, NULL, seed);
		t_geo(&t, &g);
		if (g.rows < 3 * RAID_GROUP_MAX_ROWS)
			t_fail(gc, seed, "fewer than three sync groups: make the members larger");
		t_assemble(&t);
		assert_int_equal(raid_initial_sync(t.a, t_stop_after, &st), -ECANCELED);
		raid_info_get(t.a, &info);
		mark = info.sync_rows;
		if (mark != 2 * RAID_GROUP_MAX_ROWS)
			t_fail(gc, seed, "a sync paused after two groups did not record them");
		for (uint64_t r = 0, noise = 0; r < g.rows; r++) {
			bool in_sync = t_row_in_sync(&t, &g, r);

			if (r < mark && !in_sync)
				t_fail(gc, seed, "a row below the mark is out of sync");
			noise += r >= mark && !in_sync;
			if (r == g.rows - 1 && !noise)
				t_fail(gc, seed, "no row past the mark out of sync: the test shows nothing");
		}
		if (raid_scrub(t.a, false, NULL, NULL, &rep) != 0 || rep.rows_checked != mark)
			t_fail(gc, seed, "a scrub before the end checked other rows than the synced");
		t_stop(&t);
		if (t_sb_mark(&t, &syncing) != mark || !syncing)
			t_fail(gc, seed, "the superblock does not hold the paused sync's mark");
		t_assemble(&t);
		st = (struct t_stop_after){.stop_at = 1};
		assert_int_equal(raid_initial_sync(t.a, t_stop_after, &st), -ECANCELED);
		if (st.first_done != mark + RAID_GROUP_MAX_ROWS)
			t_fail(gc, seed, "the sync did not resume at its mark");
		/* scrub --repair of an array not in sync ends the sync */
		if (raid_scrub(t.a, true, NULL, NULL, &rep) != 0)
			t_fail(gc, seed, "scrub --repair counted the unsynced rows as mismatches");
		raid_info_get(t.a, &info);
		if (info.sync_rows != info.rows)
			t_fail(gc, seed, "scrub --repair did not end the initial sync");
		for (uint64_t r = 0; r < g.rows; r++)
			if (!t_row_in_sync(&t, &g, r))
				t_fail(gc, seed, "a row is out of sync after scrub --repair");
		t_stop(&t);
		t_free(&t);
	}
	t_default_knobs.sync_mark_always = false;
}

/*
 * (Y2) Power cuts at every write of the initial sync (unflushed writes kept,
 * lost or torn at random), after data was written on rows it had not reached:
 * the array assembles without force, the mark it comes back with has every
 * row below it in sync, every written block reads right with each member lost
 * in turn, and the resumed sync ends in sync.
 */
static void test_sync_power_cut(void **state)
{
	bool quick = getenv("JGRFS_TEST_QUICK"); /* under valgrind: a sample */

	(void)state;
	t_default_knobs.sync_mark_always = true;
	for (unsigned int gi = 0; gi < (quick ? 1 : NGEO); gi += 2) {
		const struct geo_case *gc = &geos[gi];
		uint64_t w0 = 0, w1 = 0, cuts = 0, marks = 0, stride = 1;

		/* the first run, uncut, counts the writes: then some 16 cuts spread over them,
		 * the first and the last write included */
		for (uint64_t at = 0;; at = !at ? 1 : at + stride < w1 - w0 ? at + stride : w1 - w0) {
			struct raid_fault_cfg fc = {.seed = at * 13 + gi, .tear = true,
						    .keep_percent = 50,
						    .cut_after_writes = at ? w0 + at : 0};
			uint64_t seed = 100 + gi, nblk;
			struct raid_info info;
			struct raid_geo g;
			struct tarr t;
			uint8_t *ref, *written;
			bool was_cut;

			t_make_old(&t, gc, MEMBER_BLOCKS, RAID_RESYNC_BITMAP, 16, &fc, seed);
			t_geo(&t, &g);
			t_assemble(&t);
			raid_info_get(t.a, &info);
			nblk = info.array_blocks;
			ref = jg_alloc_blocks(nblk);
			written = calloc(nblk, 1);
			assert_non_null(written);
			t_scatter(&t, nblk, seed, ref, written);
			assert_int_equal(blk_rw(t.dev, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);
			if (!at) /* the uncut run counts the sync's writes: (w0, w1] */
				w0 = raid_fault_domain_writes(t.dom);
			else if (raid_fault_domain_writes(t.dom) != w0)
				t_fail(gc, at, "the writes before the sync differ from run to run");
			raid_initial_sync(t.a, NULL, NULL);
			was_cut = raid_fault_domain_is_cut(t.dom);
			if (!at) {
				w1 = raid_fault_domain_writes(t.dom);
				stride = (w1 - w0) / (quick ? 4 : 16) ?: 1;
			}
			raid_abandon(t.a);
			t.a = NULL;
			for (unsigned int i = 0; i < t.n; i++) { /* power back: no fault layer */
				blk_close(t.top[i]);
				t.top[i] = t.mem[i];
			}
			raid_fault_domain_free(t.dom);
			t.dom = NULL;
			if (t_assemble_mask(&t, ~0u, NULL))
				t_fail(gc, at, "a sync cut by a crash needs force to assemble");
			raid_info_get(t.a, &info);
			marks += info.sync_rows > 0 && info.sync_rows < info.rows;
			for (uint64_t r = 0; r < info.sync_rows; r++)
				if (!t_row_in_sync(&t, &g, r))
					t_fail(gc, at, "a row below the recorded mark is out of sync");
			if (!t_written_right(&t, nblk, ref, written))
				t_fail(gc, at, "written data reads wrong after the cut");
			t_stop(&t);
			t_lose_each(&t, gc, at, nblk, ref, written, "after a cut during the sync");
			t_assemble(&t);
			assert_int_equal(raid_initial_sync(t.a, NULL, NULL), 0);
			for (uint64_t r = 0; r < g.rows; r++)
				if (!t_row_in_sync(&t, &g, r))
					t_fail(gc, at, "a row is out of sync after the resumed sync");
			if (!t_written_right(&t, nblk, ref, written))
				t_fail(gc, at, "written data reads wrong after the resumed sync");
			t_stop(&t);
			free(ref);
			free(written);
			t_free(&t);
			if (at && !was_cut)
				t_fail(gc, at, "a cut within the sync's writes did not happen");
			cuts += at != 0;
			if (at == w1 - w0)
				break;
		}
		print_message("level=%u members=%u: %llu writes, %llu cuts, %llu came back mid-way\n",
			      gc->level, gc->n, (unsigned long long)(w1 - w0),
			      (unsigned long long)cuts, (unsigned long long)marks);
		if (!marks)
			t_fail(gc, 0, "no cut came back with a mark between the first and last row");
		/* stride (w1 - w0) / 16 (4 quick) from write 1 to the last: that many cuts at
		 * least, or one per write when there are fewer */
		if (cuts < (w1 - w0 < (quick ? 4u : 16u) ? w1 - w0 : (quick ? 4u : 16u)))
			t_fail(gc, 0, "fewer cuts than the stride promises");
	}
	t_default_knobs.sync_mark_always = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sync_writes_before_the_sync),
	    cmocka_unit_test(test_sync_pause_resume),
	    cmocka_unit_test(test_sync_power_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
