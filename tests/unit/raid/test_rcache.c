// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_rcache.c - the row cache (src/raid/rcache.c): appends
 * marked BLK_APPEND read each row once and keep parity exact; a row written by
 * another path, a failed member, random mixes of hinted and plain writes never
 * leave a stale image behind (scrub finds no mismatch, every block reads back);
 * the next row is read ahead, and a failed read ahead leaves nothing behind.
 */
#include "raid_test.h"

static const struct geo_case *const geos = geo_rcache;
#define NGEO GEO_N(geo_rcache)
#define MEMBER_BLOCKS 200

static void t_fail_geo(const struct geo_case *g, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, g->level, g->n, g->chunk);
}

static uint64_t t_reads(const struct tarr *t)
{
	uint64_t r = 0;

	for (unsigned int i = 0; i < t->n; i++)
		r += t->count[i].reads;
	return r;
}

/* Every block reads back as @ref, and no row's parity disagrees with its data. */
static void t_verify(struct tarr *t, const uint8_t *ref, uint64_t nblk, const struct geo_case *gc)
{
	uint8_t *buf = jg_alloc_blocks(nblk);
	uint64_t checked = 0, mismatched = 0, repaired = 0;

	if (t_io(t, BLK_OP_READ, 0, (uint32_t)nblk, buf, 0) ||
	    memcmp(buf, ref, nblk * JG_BLOCK_SIZE))
		t_fail_geo(gc, "array contents differ from the reference");
	free(buf);
	if (raid_missing_read(t->a))
		return;	/* degraded: no parity to check */
	assert_int_equal(raid_rows_scrub(t->a, 0, t->a->geo.rows, false, &checked, &mismatched,
					 &repaired),
			 0);
	if (mismatched)
		t_fail_geo(gc, "parity mismatch after writes through the row cache");
}

/* A fresh array of @gc (fault wrappers with @fc) and a zeroed reference of it. */
static uint8_t *t_open(struct tarr *t, const struct geo_case *gc,
		       const struct raid_fault_cfg *fc, struct raid_info *info)
{
	uint8_t *ref;

	t_make(t, gc, MEMBER_BLOCKS, RAID_RESYNC_FULL, 0, fc);
	t_assemble(t);
	raid_info_get(t->a, info);
	ref = calloc(info->array_blocks, JG_BLOCK_SIZE);
	assert_non_null(ref);
	return ref;
}

static void t_close(struct tarr *t, uint8_t *ref)
{
	t_stop(t);
	free(ref);
	t_free(t);
}

/* Append @len blocks at @at (with @flags), mirrored into @ref. */
static void t_write(struct tarr *t, uint8_t *ref, uint64_t at, uint32_t len, uint64_t seed,
		    uint32_t flags, const struct geo_case *gc)
{
	uint8_t *b = jg_alloc_blocks(len);

	t_fill(b, len, seed);
	memcpy(ref + at * JG_BLOCK_SIZE, b, (size_t)len * JG_BLOCK_SIZE);
	if (t_io(t, BLK_OP_WRITE, at, len, b, flags))
		t_fail_geo(gc, "write failed");
	free(b);
}

/*
 * A log-like stream: small appends over the whole array. With BLK_APPEND each
 * row is read once (one whole-chunk read per member); without, every partial
 * write reads. Contents and parity are right either way.
 */
static void test_rcache_append_reads_each_row_once(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t reads[2], hits = 0, fills = 0, pf = 0;

		for (int hinted = 0; hinted < 2; hinted++) {
			struct tarr t;
			struct raid_info info;
			uint64_t s = 77 + gi, at = 0, rows;
			uint8_t *ref;

			ref = t_open(&t, gc, NULL, &info);
			t_count_reset(&t);
			while (at < info.array_blocks) {
				uint32_t len = 1 + (uint32_t)(t_rand(&s) % 5);

				if (len > info.array_blocks - at)
					len = (uint32_t)(info.array_blocks - at);
				t_write(&t, ref, at, len, t_rand(&s), hinted ? BLK_APPEND : 0, gc);
				at += len;
			}
			reads[hinted] = t_reads(&t);
			rows = t.a->geo.rows;
			if (hinted) {
				raid_rcache_counts(t.a, &hits, &fills, &pf);
				/* one fill per row a partial write starts in, n reads each */
				if (fills > rows || reads[1] > rows * gc->n)
					fail_msg("a row was read more than once: level=%u members=%u "
						 "chunk=%u rows=%llu fills=%llu prefetches=%llu "
						 "member reads=%llu",
						 gc->level, gc->n, gc->chunk, (unsigned long long)rows,
						 (unsigned long long)fills, (unsigned long long)pf,
						 (unsigned long long)reads[1]);
				if (!hits)
					t_fail_geo(gc, "no append was served by the row cache");
			}
			t_verify(&t, ref, info.array_blocks, gc);
			t_close(&t, ref);
		}
		if (gc->chunk > 1 && reads[1] >= reads[0])
			t_fail_geo(gc, "the hint saved no reads");
	}
}

/*
 * A cached row written by the row path (a SYNCRAID write: resync first) must be
 * dropped: the next append to the same line would otherwise compute its parity
 * from the old parity of that line.
 */
static void test_rcache_row_path_drops(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct tarr t;
		struct raid_info info;
		uint32_t C = gc->chunk;
		uint64_t row = 2, r0;
		uint8_t *ref;

		ref = t_open(&t, gc, NULL, &info);
		r0 = row * info.ndata * C;
		/* cache the row: an append to data chunk 0, line 0 */
		t_write(&t, ref, r0, 1, 1, BLK_APPEND, gc);
		/* the row path changes data chunk 1 and the parity of line 0 */
		t_write(&t, ref, r0 + C, 1, 2, BLK_SYNCRAID, gc);
		/* and a plain write through the fast path, same line, another chunk */
		if (info.ndata > 2)
			t_write(&t, ref, r0 + 2 * C, 1, 3, 0, gc);
		/* append again to line 0 of chunk 0: the parity must come from the members */
		t_write(&t, ref, r0, 1, 4, BLK_APPEND, gc);
		t_verify(&t, ref, info.array_blocks, gc);
		t_close(&t, ref);
	}
}

/* Appends go on across a member failure: degraded from then on, all readable. */
static void test_rcache_member_fails(void **state)
{
	static const struct geo_case *const cg = geo_rcache_pair;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_rcache_pair); gi++) {
		const struct geo_case *gc = &cg[gi];
		struct raid_fault_cfg fc = {.seed = 3};
		struct tarr t;
		struct raid_info info;
		uint64_t s = 900 + gi, at = 0, hits0, hits1, fills, pf0, pf1;
		uint8_t *ref;

		ref = t_open(&t, gc, &fc, &info);
		for (int i = 0; i < 40; i++, at += 2)
			t_write(&t, ref, at, 2, t_rand(&s), BLK_APPEND, gc);
		/* the member dies under a write of a cached row (the first that
		 * reaches it: a RAID6 row update may not) */
		assert_int_equal(raid_dev_fault_fail_all(t.top[1]), 0);
		for (int i = 0; i < 20 && !info.degraded; i++, at += 2) {
			t_write(&t, ref, at, 2, t_rand(&s), BLK_APPEND, gc);
			raid_info_get(t.a, &info);
		}
		if (!info.degraded)
			t_fail_geo(gc, "dead member not noticed");
		raid_rcache_wait_idle(t.a);
		raid_rcache_counts(t.a, &hits0, &fills, &pf0);
		for (int i = 0; i < 40; i++, at += 2)
			t_write(&t, ref, at, 2, t_rand(&s), BLK_APPEND, gc);
		/* degraded writes hint nothing; a hint that comes anyway reads nothing */
		raid_rcache_hint(t.a, t.a->geo.rows - 1);
		raid_rcache_wait_idle(t.a);
		raid_rcache_counts(t.a, &hits1, &fills, &pf1);
		if (hits1 != hits0)
			t_fail_geo(gc, "the row cache was used on a degraded array");
		if (pf1 != pf0)
			t_fail_geo(gc, "a row was read ahead on a degraded array");
		t_verify(&t, ref, info.array_blocks, gc);
		t_close(&t, ref);
	}
}

/* Appends to row 1 one block at a time, until just past its middle. */
static void t_append_past_middle(struct tarr *t, uint8_t *ref, const struct raid_info *info,
				 uint64_t *s, const struct geo_case *gc)
{
	uint64_t rb = (uint64_t)info->ndata * gc->chunk;

	for (uint64_t b = rb; b <= rb + rb / 2; b++)
		t_write(t, ref, b, 1, t_rand(s), BLK_APPEND, gc);
}

/*
 * (H3) An append past the middle of its row has the next row read ahead: the
 * first append there reads nothing. Without read-ahead it reads the row itself.
 */
static void test_rcache_read_ahead(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];

		for (int ahead = 1; ahead >= 0; ahead--) {
			struct tarr t;
			struct raid_info info;
			uint64_t s = 4242 + gi, hits, fills, pf, rb;
			uint8_t *ref;

			t_default_knobs.no_prefetch = !ahead;
			ref = t_open(&t, gc, NULL, &info);
			rb = (uint64_t)info.ndata * gc->chunk;
			t_append_past_middle(&t, ref, &info, &s, gc);
			raid_rcache_wait_idle(t.a);
			t_count_reset(&t);
			t_write(&t, ref, 2 * rb, 1, t_rand(&s), BLK_APPEND, gc);
			raid_rcache_counts(t.a, &hits, &fills, &pf);
			if (ahead && (t_reads(&t) || pf != 1))
				t_fail_geo(gc, "the next row was not read ahead");
			if (!ahead && (!t_reads(&t) || pf))
				t_fail_geo(gc, "read ahead while turned off");
			t_verify(&t, ref, info.array_blocks, gc);
			t_close(&t, ref);
		}
		t_default_knobs.no_prefetch = false;
	}
}

/*
 * (H3) A read ahead that fails leaves no image and fails no member: the write
 * that reaches the row reads it, meets the error and fails the member itself.
 */
static void test_rcache_read_ahead_error(void **state)
{
	static const struct geo_case *const cg = geo_rcache_pair;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_rcache_pair); gi++) {
		const struct geo_case *gc = &cg[gi];
		struct raid_fault_cfg fc = {.seed = 5};
		struct tarr t;
		struct raid_info info;
		uint64_t s = 77 + gi, hits, fills, pf;
		uint8_t *ref;

		ref = t_open(&t, gc, &fc, &info);
		/* member 0's chunk of row 2 cannot be read (writes still work) */
		assert_int_equal(raid_dev_fault_fail_block(t.top[0],
							   t.a->geo.data_offset + 2 * gc->chunk,
							   true, false),
				 0);
		t_append_past_middle(&t, ref, &info, &s, gc);
		raid_rcache_wait_idle(t.a);
		raid_rcache_counts(t.a, &hits, &fills, &pf);
		raid_info_get(t.a, &info);
		if (pf != 1 || info.degraded)
			t_fail_geo(gc, "a failed read ahead failed the member");
		t_write(&t, ref, 2 * (uint64_t)info.ndata * gc->chunk, 1, t_rand(&s), BLK_APPEND,
			gc);
		raid_info_get(t.a, &info);
		if (!info.degraded)
			t_fail_geo(gc, "a failed read ahead left an image behind");
		t_verify(&t, ref, info.array_blocks, gc);
		t_close(&t, ref);
	}
}

/* Random hinted, plain and resync writes over a few rows, checked at the end. */
static void test_rcache_random_mix(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct tarr t;
		struct raid_info info;
		uint64_t s = 31337 + gi, span;
		uint8_t *ref;

		ref = t_open(&t, gc, NULL, &info);
		/* more rows than the cache holds, so entries are evicted and reused */
		span = (RAID_RCACHE_ROWS + 4) * (uint64_t)info.ndata * gc->chunk;
		if (span > info.array_blocks)
			span = info.array_blocks;
		for (int i = 0; i < 3000; i++) {
			uint64_t at = t_rand(&s) % span;
			uint32_t len = 1 + (uint32_t)(t_rand(&s) % 6), k = t_rand(&s) % 8;
			uint32_t flags = k < 5 ? BLK_APPEND : k < 7 ? 0 : BLK_SYNCRAID;

			if (len > span - at)
				len = (uint32_t)(span - at);
			if (k == 7)
				raid_sync_reset(t.a);	/* SYNCRAID resyncs once per recovery */
			t_write(&t, ref, at, len, t_rand(&s), flags, gc);
		}
		t_verify(&t, ref, info.array_blocks, gc);
		t_close(&t, ref);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rcache_append_reads_each_row_once),
	    cmocka_unit_test(test_rcache_row_path_drops),
	    cmocka_unit_test(test_rcache_member_fails),
	    cmocka_unit_test(test_rcache_random_mix),
	    cmocka_unit_test(test_rcache_read_ahead),
	    cmocka_unit_test(test_rcache_read_ahead_error),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
