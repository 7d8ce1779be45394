// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_scrub.c - the pieces of the online scrub (src/raid/scrub.c,
 * issue 23): raid_scrub_rows() under concurrent writes never reports a row that
 * is not wrong and leaves every written block as written; it reports exactly
 * the rows whose parity was damaged (the check can fail: those rows are found),
 * and with repair mends them; it refuses a degraded array; raid_scrub_mark()
 * survives a stop and an assembly, and its clearing too. And the negative
 * control of the reference check the raid tests share (t_row_in_sync,
 * t_ref_mismatches): a byte flipped in a data, P or Q chunk is found.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "raid_test.h"

static const struct geo_case *const geos = geo_scrub;
#define NGEO GEO_N(geo_scrub)
#define MB 192
#define WRITES 1500u

static void t_fail(const struct geo_case *g, uint64_t seed, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u seed=%llu", what, g->level, g->n, g->chunk,
		 (unsigned long long)seed);
}

struct t_rows {
	uint64_t rows[64];
	unsigned int n;
};

static void t_row(void *ctx, uint64_t row)
{
	struct t_rows *r = ctx;

	if (r->n < 64)
		r->rows[r->n++] = row;
}

/* ------------------------------------------------------------ under writes */

struct t_writer {
	struct tarr *t;
	unsigned int k;	 /* this writer writes the pairs of blocks b with (b / 2) % 2 == k */
	uint64_t blocks; /* array blocks */
	uint64_t seed;
	uint8_t *ref; /* the reference image of the array, its blocks only */
	atomic_int *done;
};

static void *t_writer_main(void *arg)
{
	struct t_writer *w = arg;
	uint8_t *buf = jg_alloc_blocks(2);
	uint64_t s = w->seed;

	for (unsigned int i = 0; i < WRITES; i++) {
		uint64_t pair = t_rand(&s) % (w->blocks / 4);
		uint64_t b = pair * 4 + 2 * w->k;
		uint32_t len = 1 + (uint32_t)(t_rand(&s) % 2);

		t_fill(buf, len, t_rand(&s));
		assert_int_equal(t_io(w->t, BLK_OP_WRITE, b, len, buf, 0), 0);
		memcpy(w->ref + b * JG_BLOCK_SIZE, buf, (size_t)len * JG_BLOCK_SIZE);
	}
	free(buf);
	atomic_fetch_add(w->done, 1);
	return NULL;
}

static void test_scrub_rows_under_writes(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 2300 + gi, blocks, passes = 0;
		struct raid_scrub_counts cnt = {0};
		struct t_writer w[2];
		pthread_t th[2];
		atomic_int done = 0;
		struct t_rows rows = {0};
		struct raid_geo g;
		uint8_t *ref, *buf;
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		t_geo(&t, &g);
		blocks = g.array_blocks / 4 * 4;
		ref = jg_alloc_blocks(blocks);
		buf = jg_alloc_blocks(blocks);
		memset(ref, 0, blocks * JG_BLOCK_SIZE);
		/* a known start: every block written once, parity consistent */
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, (uint32_t)blocks, ref, 0), 0);
		for (unsigned int k = 0; k < 2; k++) {
			w[k] = (struct t_writer){.t = &t,
						 .k = k,
						 .blocks = blocks,
						 .seed = seed * 2 + k,
						 .ref = ref,
						 .done = &done};
			assert_int_equal(pthread_create(&th[k], NULL, t_writer_main, &w[k]), 0);
		}
		/* scrub in small steps, as the daemon does, until both writers are done */
		while (atomic_load(&done) < 2 || !passes) {
			for (uint64_t r = 0; r < g.rows; r += 3) {
				uint64_t n = g.rows - r < 3 ? g.rows - r : 3;

				if (raid_scrub_rows(t.a, r, n, false, t_row, &rows, &cnt))
					t_fail(gc, seed, "scrub step failed");
			}
			passes++;
		}
		for (unsigned int k = 0; k < 2; k++)
			pthread_join(th[k], NULL);
		if (cnt.mismatches || rows.n)
			t_fail(gc, seed, "a scrub under writes reported a mismatch");
		if (cnt.rows_checked != passes * g.rows)
			t_fail(gc, seed, "rows checked");
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, (uint32_t)blocks, buf, 0), 0);
		if (memcmp(buf, ref, blocks * JG_BLOCK_SIZE))
			t_fail(gc, seed, "data written under the scrub reads back wrong");
		if (t_ref_mismatches(&t, &g))
			t_fail(gc, seed, "parity wrong after the writes");
		free(ref);
		free(buf);
		t_stop(&t);
		t_free(&t);
	}
}

/* ------------------------------------------------------------ rows reported */

/* Damage the first parity block of @row on its memory member. */
static void t_damage_parity(struct tarr *t, const struct raid_geo *g, uint64_t row)
{
	unsigned int m = raid_layout_member(g, row, RAID_POS_P(g));
	uint64_t mblk = g->data_offset + row * g->chunk_blocks;
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(t->mem[m], BLK_OP_READ, mblk, 1, b, 0), 0);
	b[17] ^= 0x5a;
	assert_int_equal(blk_rw(t->mem[m], BLK_OP_WRITE, mblk, 1, b, 0), 0);
	free(b);
}

static void test_scrub_rows_reports_rows(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 2400 + gi, bad[3];
		struct raid_scrub_counts cnt = {0};
		struct t_rows rows = {0};
		struct raid_geo g;
		uint8_t *z;
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		t_geo(&t, &g);
		z = jg_alloc_blocks(g.array_blocks);
		t_fill(z, g.array_blocks, seed);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, (uint32_t)g.array_blocks, z, 0), 0);
		t_stop(&t);
		bad[0] = 1;
		bad[1] = g.rows / 2;
		bad[2] = g.rows - 1;
		for (unsigned int i = 0; i < 3; i++)
			t_damage_parity(&t, &g, bad[i]);
		t_assemble(&t);
		/* in two steps, the second from a row that is not the first */
		assert_int_equal(raid_scrub_rows(t.a, 0, g.rows / 2, false, t_row, &rows, &cnt), 0);
		assert_int_equal(raid_scrub_rows(t.a, g.rows / 2, g.rows - g.rows / 2, false, t_row,
						 &rows, &cnt),
				 0);
		if (rows.n != 3 || cnt.mismatches != 3 || cnt.repaired ||
		    cnt.rows_checked != g.rows)
			t_fail(gc, seed, "mismatched rows not all reported");
		for (unsigned int i = 0; i < 3; i++)
			if (rows.rows[i] != bad[i])
				t_fail(gc, seed, "a row reported that is not the damaged one");
		memset(&cnt, 0, sizeof(cnt));
		rows.n = 0;
		assert_int_equal(raid_scrub_rows(t.a, 0, g.rows, true, t_row, &rows, &cnt), 0);
		if (rows.n != 3 || cnt.repaired != 3 || t_ref_mismatches(&t, &g))
			t_fail(gc, seed, "repair");
		assert_int_equal(raid_scrub_rows(t.a, 0, g.rows + 1, false, NULL, NULL, &cnt),
				 -EINVAL);
		/* degraded: nothing to compare with */
		assert_int_equal(raid_fail_member(t.a, 0), 0);
		assert_int_equal(raid_scrub_rows(t.a, 0, 1, false, NULL, NULL, &cnt), -EAGAIN);
		free(z);
		t_stop(&t);
		t_free(&t);
	}
}

/* ------------------------------------------------------------ the mark */

static void test_scrub_mark_survives_assembly(void **state)
{
	const struct geo_case *gc = &geos[1];
	struct raid_info ri;
	uint8_t *img;
	struct tarr t;

	(void)state;
	t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 0, NULL);
	t_assemble(&t);
	raid_info_get(t.a, &ri);
	assert_false(ri.scrub_marked);
	assert_int_equal(raid_scrub_mark(t.a, true, true, 17, 3), 0);
	t_stop(&t);
	/* on disk as docs/FORMAT.md says: compat bit, le64 at 0xb0, le32 at 0xb8, le64 at 0xc0 */
	img = t_member_image(&t, 2);
	assert_int_equal(img[0x34] & 1, 1);
	assert_int_equal(img[0xb0], 17);
	assert_int_equal(img[0xb8], RAID_SCRUB_RUNNING | RAID_SCRUB_REPAIR);
	assert_int_equal(img[0xc0], 3);
	assert_int_equal(img[0xa8], 0); /* not ours (sync_rows) */
	free(img);
	t_assemble(&t);
	raid_info_get(t.a, &ri);
	assert_true(ri.scrub_marked);
	assert_true(ri.scrub_repair);
	assert_int_equal(ri.scrub_rows, 17);
	assert_int_equal(ri.scrub_mismatches, 3);
	assert_int_equal(raid_scrub_mark(t.a, false, false, 0, 0), 0);
	t_stop(&t);
	t_assemble(&t);
	raid_info_get(t.a, &ri);
	assert_false(ri.scrub_marked);
	assert_int_equal(ri.scrub_rows, 0);
	t_stop(&t);
	t_free(&t);
}

/* Flip byte @off of chunk position @pos (data 0.., then P, Q) of row @r on its member. */
static void t_flip(struct tarr *t, const struct raid_geo *g, uint64_t r, unsigned int pos, size_t off)
{
	uint8_t *b = jg_alloc_blocks(1);
	uint64_t blk = g->data_offset + r * g->chunk_blocks + off / JG_BLOCK_SIZE;
	struct blk_dev *m = t->mem[raid_layout_member(g, r, pos)];

	assert_int_equal(blk_rw(m, BLK_OP_READ, blk, 1, b, 0), 0);
	b[off % JG_BLOCK_SIZE] ^= 0x5a;
	assert_int_equal(blk_rw(m, BLK_OP_WRITE, blk, 1, b, 0), 0);
	free(b);
}

/*
 * Negative control of t_row_in_sync and t_ref_mismatches, which the raid tests
 * trust to say parity is right: on a written, consistent array each of a data
 * byte, a P byte and (RAID6) a Q byte flipped alone makes exactly that row out
 * of sync, and flipping it back makes it whole again.
 */
static void test_scrub_reference_check_catches(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint64_t seed = 4100 + gi, blocks, r;
		struct raid_geo g;
		uint8_t *ref;
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		t_geo(&t, &g);
		blocks = g.array_blocks;
		ref = jg_alloc_blocks(blocks);
		t_fill(ref, blocks, seed);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, (uint32_t)blocks, ref, 0), 0);
		t_stop(&t);
		if (t_ref_mismatches(&t, &g))
			t_fail(gc, seed, "a consistent array counted out of sync");
		r = g.rows / 2;
		/* the first and last data chunk, P, and Q on RAID6 */
		for (unsigned int pos = 0; pos < g.n; pos += !pos && g.ndata > 2 ? g.ndata - 1 : 1) {
			size_t off = (size_t)(pos * 977 + 13) % ((size_t)g.chunk_blocks * JG_BLOCK_SIZE);

			t_flip(&t, &g, r, pos, off);
			if (t_row_in_sync(&t, &g, r))
				t_fail(gc, seed, "a flipped byte left its row in sync");
			if (t_ref_mismatches(&t, &g) != 1)
				t_fail(gc, seed, "one flipped byte is not one row out of sync");
			t_flip(&t, &g, r, pos, off);
			if (!t_row_in_sync(&t, &g, r))
				t_fail(gc, seed, "the byte flipped back left its row out of sync");
		}
		free(ref);
		t_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scrub_rows_under_writes),
	    cmocka_unit_test(test_scrub_rows_reports_rows),
	    cmocka_unit_test(test_scrub_mark_survives_assembly),
	    cmocka_unit_test(test_scrub_reference_check_catches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
