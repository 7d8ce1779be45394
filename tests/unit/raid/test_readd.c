// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_readd.c - raid_readd (src/raid/rebuild.c (R5), away.c):
 * a member that failed comes back on its own device and only the rows it
 * missed are rebuilt on it: those written after it failed, declared writes
 * (BLK_FS_RAIDSYNC) included, and those written before whose writes no flush
 * had made durable (its cache lost with its power); the others are not written.
 * Every test then fails other members, so that each row is read through the
 * member brought back, and compares every block with a model. Where the rows
 * missed are not known (missing since assembly; a superblock at another event
 * than the one it left at) every row is rebuilt; a device that is not that
 * member is refused untouched. A member whose connection ended with writes
 * unanswered (BLK_CTL_UNFENCED, an NBD timeout) is refused until the caller
 * says that connection is dead (RAID_READD_FENCED), a replace onto it too.
 */
#include <pthread.h>
#include <stdlib.h>

#include "raid_test.h"

static const struct geo_case *const geos = geo_rebuild;
#define NGEO GEO_N(geo_rebuild)
#define MB 192

static void t_fail(const struct geo_case *g, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, g->level, g->n, g->chunk);
}

/* Write one block of row @row (its data slot @slot) with @flags, into the model too. */
static void t_write_row(struct tarr *t, const struct raid_geo *g, uint8_t *model, uint64_t row,
			uint32_t slot, uint64_t seed, uint32_t flags)
{
	uint64_t b = row * g->row_blocks + slot % g->row_blocks;

	t_fill(model + b * JG_BLOCK_SIZE, 1, seed);
	assert_int_equal(t_io(t, BLK_OP_WRITE, b, 1, model + b * JG_BLOCK_SIZE, flags), 0);
}

/* Fill the array from @seed (declared writes), flush; the model gets it too. */
static uint8_t *t_fill_array(struct tarr *t, uint64_t seed)
{
	struct raid_info info;
	uint8_t *model;

	raid_info_get(t->a, &info);
	model = jg_alloc_blocks(info.array_blocks);
	assert_non_null(model);
	t_fill(model, info.array_blocks, seed);
	assert_int_equal(t_io(t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, model,
			      BLK_FS_RAIDSYNC),
			 0);
	assert_int_equal(t_io(t, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);
	return model;
}

/*
 * The array whole again with role @k back: scrub clean, then with as many
 * other members failed as the parity allows every row is read through @k and
 * must match @model.
 */
static void t_check_through(struct tarr *t, const struct geo_case *gc, unsigned int k,
			    const uint8_t *model)
{
	struct raid_info info;
	uint8_t *rd;

	raid_info_get(t->a, &info);
	if (info.degraded || info.members[k].failed || info.members[k].rebuilding)
		t_fail(gc, "the member brought back is not a working member");
	if (raid_scrub(t->a, false, NULL, NULL, NULL) != 0)
		t_fail(gc, "parity mismatches after the readd");
	for (unsigned int j = 1; j <= (gc->level == 6 ? 2u : 1u); j++)
		assert_int_equal(raid_fail_member(t->a, (k + j) % gc->n), 0);
	rd = jg_alloc_blocks(info.array_blocks);
	assert_int_equal(t_io(t, BLK_OP_READ, 0, (uint32_t)info.array_blocks, rd, 0), 0);
	for (uint64_t b = 0; b < info.array_blocks; b++)
		if (memcmp(rd + b * JG_BLOCK_SIZE, model + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE)) {
			fail_msg("level=%u members=%u chunk=%u: array block %llu read through the member brought back differs",
				 gc->level, gc->n, gc->chunk, (unsigned long long)b);
		}
	free(rd);
}

/* Member @k's own power domain, nothing of an unflushed write kept at a cut. */
static void t_own_power(struct tarr *t, unsigned int k)
{
	struct raid_fault_cfg fc = {.keep_percent = 0, .seed = 7};

	assert_int_equal(raid_fault_domain_new(&fc, &t->dom), 0);
	assert_int_equal(raid_dev_fault_open(t->dom, t->mem[k], &t->top[k]), 0);
}

/*
 * A declared-mode array of @gc over memory members (member @own_k in its own
 * power domain, or none with -1), assembled and filled from @seed: the model.
 */
static uint8_t *t_start(struct tarr *t, const struct geo_case *gc, int own_k, struct raid_geo *g,
			uint64_t seed)
{
	t_make(t, gc, MB, RAID_RESYNC_JOURNAL, 32, NULL);
	if (own_k >= 0)
		t_own_power(t, (unsigned int)own_k);
	t_geo(t, g);
	t_assemble(t);
	return t_fill_array(t, seed);
}

/* Every block read through role @k (t_check_through), then the array gone. */
static void t_end(struct tarr *t, const struct geo_case *gc, unsigned int k, uint8_t *model)
{
	t_check_through(t, gc, k, model);
	t_stop(t);
	free(model);
	t_free(t);
}

/* Readd role @k on its memory device, counted in *@c. */
static int t_readd(struct tarr *t, unsigned int k, struct t_count *c)
{
	struct blk_dev *d = t_keep(t->mem[k]);

	memset(c, 0, sizeof(*c));
	((struct t_keep *)d)->count = c;
	return raid_readd(t->a, k, d, 0, NULL, NULL);
}

/*
 * Rows written before the failure but not flushed (lost with the member's
 * power), and rows written after it, declared or not: exactly those are marked
 * and rebuilt, and nothing else is written on the member but its superblocks
 * and bitmap.
 */
static void test_readd_only_missed_rows(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = gc->n / 2;
		uint64_t rows[] = {1, 5, 6, 9}, nmarked = 4, budget;
		struct t_count c;
		struct raid_geo g;
		struct tarr t;
		uint8_t *model;

		model = t_start(&t, gc, (int)k, &g, 100 + gi);
		/* acknowledged, not flushed: the member's power goes with them */
		t_write_row(&t, &g, model, rows[0], 0, 1, BLK_FS_RAIDSYNC);
		t_write_row(&t, &g, model, rows[1], g.row_blocks - 1, 2, 0);
		raid_fault_domain_cut(t.dom);
		assert_int_equal(raid_member_fail(t.a, k, -EIO), 0);
		/* while it is away: declared and plain writes, one row twice */
		t_write_row(&t, &g, model, rows[2], 1, 3, BLK_FS_RAIDSYNC);
		t_write_row(&t, &g, model, rows[3], 0, 4, 0);
		t_write_row(&t, &g, model, rows[3], 1, 5, BLK_FS_RAIDSYNC);
		if (raid_away_rows(t.a, k) != (int64_t)nmarked)
			t_fail(gc, "the rows the member missed are not the ones marked");
		if (t_readd(&t, k, &c))
			t_fail(gc, "readd failed");
		/* the rows marked, whole chunks, plus superblock rounds and the bitmap */
		budget = nmarked * g.chunk_blocks + t.a->bm_blocks + 16;
		if (c.write_blocks < nmarked * g.chunk_blocks || c.write_blocks > budget)
			fail_msg("level=%u members=%u chunk=%u: %llu blocks written on the member, expected %llu to %llu",
				 gc->level, gc->n, gc->chunk, (unsigned long long)c.write_blocks,
				 (unsigned long long)(nmarked * g.chunk_blocks),
				 (unsigned long long)budget);
		if (raid_away_rows(t.a, k) != -1)
			t_fail(gc, "a member brought back is still tracked");
		t_end(&t, gc, k, model);
	}
}

struct t_wr {
	struct tarr *t;
	const struct raid_geo *g;
	uint8_t *model;
	int rc;
};

/* Writes that race with the readd: before, during and after its walk. */
static void *t_writer(void *arg)
{
	struct t_wr *w = arg;
	uint64_t s = 99;
	uint8_t *buf = jg_alloc_blocks(1);

	for (int i = 0; i < 200 && !w->rc; i++) {
		uint64_t b = t_rand(&s) % (w->g->rows * w->g->row_blocks);

		t_fill(buf, 1, t_rand(&s));
		w->rc = t_io(w->t, BLK_OP_WRITE, b, 1, buf, i % 2 ? BLK_FS_RAIDSYNC : 0);
		memcpy(w->model + b * JG_BLOCK_SIZE, buf, JG_BLOCK_SIZE);
	}
	free(buf);
	return NULL;
}

/* (R5) Writes planned while the member was away end before the walk reads its map. */
static void test_readd_online_with_writes(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = 0;
		struct t_count c;
		struct raid_geo g;
		struct t_wr w;
		pthread_t tid;
		struct tarr t;

		w = (struct t_wr){.t = &t, .g = &g, .model = t_start(&t, gc, -1, &g, 200 + gi)};
		assert_int_equal(raid_fail_member(t.a, k), 0);
		pthread_create(&tid, NULL, t_writer, &w);
		if (t_readd(&t, k, &c))
			t_fail(gc, "readd failed");
		pthread_join(tid, NULL);
		assert_int_equal(w.rc, 0);
		t_end(&t, gc, k, w.model);
	}
}

/* Missing since assembly: what it missed is not known, every row is rebuilt. */
static void test_readd_unknown_rebuilds_all(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = gc->n - 1;
		struct t_count c;
		struct raid_geo g;
		struct tarr t;
		uint8_t *model;

		model = t_start(&t, gc, -1, &g, 300 + gi);
		t_stop(&t);
		assert_int_equal(t_assemble_mask(&t, ~(1u << k), NULL), 0);
		t_write_row(&t, &g, model, 2, 0, 6, BLK_FS_RAIDSYNC);
		if (raid_away_rows(t.a, k) != -1)
			t_fail(gc, "a member missing since assembly has a map");
		if (t_readd(&t, k, &c))
			t_fail(gc, "readd failed");
		if (c.write_blocks < g.data_blocks)
			t_fail(gc, "a member missing since assembly not rebuilt whole");
		t_end(&t, gc, k, model);
	}
}

/*
 * The device comes back holding an older image of the member (its superblock
 * at an earlier event than the one it left at): the map does not say what it
 * lacks, every row is rebuilt.
 */
static void test_readd_older_image_rebuilds_all(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = 1;
		struct t_count c;
		struct raid_geo g;
		struct tarr t;
		uint8_t *model, *old;

		model = t_start(&t, gc, -1, &g, 400 + gi);
		t_stop(&t);
		old = t_member_image(&t, k);
		t_assemble(&t);
		t_fill(model, g.array_blocks, 500 + gi);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, (uint32_t)g.array_blocks, model, 0), 0);
		assert_int_equal(t_io(&t, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);
		assert_int_equal(raid_fail_member(t.a, k), 0);
		t_write_row(&t, &g, model, 0, 0, 7, 0);
		assert_int_equal(blk_rw(t.mem[k], BLK_OP_WRITE, 0, (uint32_t)t.member_blocks, old, 0),
				 0);
		if (t_readd(&t, k, &c))
			t_fail(gc, "readd failed");
		if (c.write_blocks < g.data_blocks)
			t_fail(gc, "an older image of the member not rebuilt whole");
		free(old);
		t_end(&t, gc, k, model);
	}
}

/*
 * (A3) More ranges written since the member's last flush than the ring keeps:
 * the oldest are gone, so what it missed is not known and every row is
 * rebuilt (its power cut lost all of them).
 */
static void test_readd_ring_overrun_rebuilds_all(void **state)
{
	(void)state;
	t_default_knobs.away_ring = 8;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = 0;
		struct t_count c;
		struct raid_geo g;
		struct tarr t;
		uint8_t *model;

		model = t_start(&t, gc, (int)k, &g, 800 + gi);
		/* twelve separate ranges, none flushed: rows 0, 2, ... 22 */
		for (uint64_t r = 0; r < 24 && r < g.rows; r += 2)
			t_write_row(&t, &g, model, r, 0, 900 + r, BLK_FS_RAIDSYNC);
		raid_fault_domain_cut(t.dom);
		assert_int_equal(raid_member_fail(t.a, k, -EIO), 0);
		if (raid_away_rows(t.a, k) != -1)
			t_fail(gc, "a map made from a ring that lost ranges");
		if (t_readd(&t, k, &c))
			t_fail(gc, "readd failed");
		if (c.write_blocks < g.data_blocks)
			t_fail(gc, "not rebuilt whole although the ring lost ranges");
		t_end(&t, gc, k, model);
	}
	t_default_knobs.away_ring = 0;
}

/* A device that is not the member that left: refused, closed, never written. */
static void test_readd_wrong_device_refused(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	struct blk_dev *blank;
	struct raid_info info;
	struct tarr t, other;
	uint8_t *before, *after;

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_JOURNAL, 32, NULL);
	t_make(&other, &gc, MB, RAID_RESYNC_JOURNAL, 32, NULL);
	t_assemble(&t);
	assert_int_equal(raid_fail_member(t.a, 1), 0);
	/* blank: no superblock */
	assert_int_equal(raid_dev_mem_open("blank", MB, &blank), 0);
	assert_int_equal(raid_readd(t.a, 1, t_keep(blank), 0, NULL, NULL), -ENODEV);
	/* the member of another role of this array: a working one */
	before = t_member_image(&t, 2);
	assert_int_equal(raid_readd(t.a, 1, t_keep(t.mem[2]), 0, NULL, NULL), -ENODEV);
	after = t_member_image(&t, 2);
	assert_memory_equal(before, after, t.member_blocks * JG_BLOCK_SIZE);
	free(before);
	free(after);
	/* role 1 of another array */
	before = t_member_image(&other, 1);
	assert_int_equal(raid_readd(t.a, 1, t_keep(other.mem[1]), 0, NULL, NULL), -ENODEV);
	after = t_member_image(&other, 1);
	assert_memory_equal(before, after, other.member_blocks * JG_BLOCK_SIZE);
	assert_int_equal(raid_readd(t.a, 9, t_keep(t.mem[1]), 0, NULL, NULL), -EINVAL);
	raid_info_get(t.a, &info);
	assert_true(info.members[1].failed);
	/* the right one is taken */
	assert_int_equal(raid_readd(t.a, 1, t_keep(t.mem[1]), 0, NULL, NULL), 0);
	raid_info_get(t.a, &info);
	assert_false(info.degraded);
	t_stop(&t);
	free(before);
	free(after);
	blk_close(blank);
	t_free(&t);
	t_free(&other);
}

/*
 * (R7) Role @k's device answers BLK_CTL_UNFENCED as its connection would. Ended
 * with every write answered (0): failed and readded as before. Ended with
 * writes unanswered (1, as dev_nbd.c after a timeout): status says so, a readd
 * and a replace onto that export are refused -EAGAIN and write nothing on it;
 * a replace onto another device goes on, and the old export stays refused
 * after; RAID_READD_FENCED brings it back and the role forgets it.
 */
static void test_readd_unfenced_refused(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	const unsigned int k = 1;
	struct raid_info info;
	struct raid_geo g;
	struct blk_dev *blank, *export;
	uint8_t *model, *before, *after;
	int unfenced = 0;
	struct tarr t;

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_JOURNAL, 32, NULL);
	export = t.top[k] = t_keep(t.mem[k]); /* what the array holds of role k forwards to it */
	((struct t_keep *)export)->unfenced = &unfenced;
	t_geo(&t, &g);
	t_assemble(&t);
	model = t_fill_array(&t, 77);
	/* every write answered: as before */
	assert_int_equal(raid_fail_member(t.a, k), 0);
	t_write_row(&t, &g, model, 1, 0, 78, 0);
	raid_info_get(t.a, &info);
	assert_false(info.members[k].unfenced);
	assert_int_equal(raid_readd(t.a, k, t_keep(export), 0, NULL, NULL), 0);

	/* its connection dies with writes unanswered */
	assert_int_equal(raid_fail_member(t.a, k), 0);
	unfenced = 1;
	t_write_row(&t, &g, model, 2, 0, 79, 0);
	raid_info_get(t.a, &info);
	if (!info.members[k].unfenced)
		fail_msg("status does not say the member's connection ended with writes unanswered");
	before = t_member_image(&t, k);
	if (raid_readd(t.a, k, t_keep(export), 0, NULL, NULL) != -EAGAIN)
		fail_msg("readd of a member whose connection ended with writes unanswered: not refused");
	assert_int_equal(raid_rebuild(t.a, k, t_keep(export), NULL, NULL), -EAGAIN);
	after = t_member_image(&t, k);
	assert_memory_equal(before, after, t.member_blocks * JG_BLOCK_SIZE);
	free(after);
	raid_info_get(t.a, &info);
	assert_true(info.members[k].failed && info.members[k].unfenced);

	/* a replace onto another device: its writes cannot reach that one */
	assert_int_equal(raid_dev_mem_open("blank", MB, &blank), 0);
	assert_int_equal(raid_rebuild(t.a, k, t_keep(blank), NULL, NULL), 0);
	raid_info_get(t.a, &info);
	assert_false(info.degraded || info.members[k].unfenced);
	/* the old export is still the one its server may write: refused */
	assert_int_equal(raid_fail_member(t.a, k), 0);
	t_write_row(&t, &g, model, 3, 0, 80, 0);
	assert_int_equal(raid_readd(t.a, k, t_keep(export), 0, NULL, NULL), -EAGAIN);
	after = t_member_image(&t, k);
	assert_memory_equal(before, after, t.member_blocks * JG_BLOCK_SIZE);

	/* the caller says the connection is dead: back, and forgotten */
	unfenced = 0; /* a new connection */
	assert_int_equal(raid_readd(t.a, k, t_keep(export), RAID_READD_FENCED, NULL, NULL), 0);
	raid_info_get(t.a, &info);
	assert_false(info.degraded || info.members[k].unfenced);
	assert_int_equal(raid_fail_member(t.a, k), 0);
	raid_info_get(t.a, &info);
	assert_false(info.members[k].unfenced);
	assert_int_equal(raid_readd(t.a, k, t_keep(export), 0, NULL, NULL), 0);
	t_end(&t, &gc, k, model);
	blk_close(blank);
	free(before);
	free(after);
}

/* ------------------------------------------------- a readd cut by a crash */

#define CRASH_MB 800u /* a few groups of rows with chunks of 1 and 2 blocks */

/*
 * One readd of role @k cut by a power failure at the @cut_at-th write of the
 * domain (every unflushed write kept, lost or torn), with the rows it missed
 * spread over several groups. Without a cut (@cut_at past the last), *@w0 and
 * *@w1 are the domain's write counts when it starts and ends. After the cut
 * the array is assembled again without the fault layer: the member comes back
 * being rebuilt from its last mark (resumed in full from there), or, cut before
 * its first round was durable, stale (left out and rebuilt whole). Either way
 * every block then reads right through it. Returns the mark found, or -1.
 */
static int64_t t_crash_readd(const struct geo_case *gc, unsigned int k, uint64_t cut_at,
			     uint64_t *w0, uint64_t *w1)
{
	struct raid_fault_cfg fc = {.seed = cut_at * 17 + 1, .tear = true, .cut_after_writes = cut_at};
	const uint64_t missed[] = {3, 300, 301, 610};
	struct raid_info info;
	struct raid_geo g;
	struct tarr t;
	uint8_t *model;
	int64_t mark = -1;

	t_make(&t, gc, CRASH_MB, RAID_RESYNC_JOURNAL, 32, &fc);
	t_geo(&t, &g);
	t_assemble(&t);
	model = t_fill_array(&t, 600 + cut_at);
	assert_int_equal(raid_fail_member(t.a, k), 0);
	for (unsigned int i = 0; i < sizeof(missed) / sizeof(missed[0]); i++)
		if (missed[i] < g.rows)
			t_write_row(&t, &g, model, missed[i], i, 700 + i, BLK_FS_RAIDSYNC);
	assert_int_equal(t_io(&t, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);
	*w0 = raid_fault_domain_writes(t.dom);
	/* the writes after the cut vanish: the readd "ends" in a dead process */
	raid_readd(t.a, k, t_keep(t.top[k]), 0, NULL, NULL);
	*w1 = raid_fault_domain_writes(t.dom);
	raid_abandon(t.a);
	t.a = NULL;
	for (unsigned int i = 0; i < t.n; i++) { /* power back: no fault layer */
		blk_close(t.top[i]);
		t.top[i] = t.mem[i];
	}
	if (!t_assemble_mask(&t, ~0u, NULL)) {
		raid_info_get(t.a, &info);
		if (info.members[k].rebuilding) {
			mark = (int64_t)info.members[k].recovered_rows;
			assert_int_equal(raid_rebuild(t.a, k, NULL, NULL, NULL), 0);
		} else if (info.degraded) {
			t_fail(gc, "assembled degraded with every member given");
		}
	} else {
		/* cut before the round that made it a member being rebuilt: stale */
		if (t_assemble_mask(&t, ~(1u << k), NULL))
			t_fail(gc, "a readd cut by a crash needs force to assemble");
		assert_int_equal(raid_rebuild(t.a, k, t_keep(t.mem[k]), NULL, NULL), 0);
	}
	t_check_through(&t, gc, k, model);
	t_stop(&t);
	free(model);
	t_free(&t);
	return mark;
}

/*
 * (R5) (R1) A power cut at every write of a readd (rows rebuilt, marks moved
 * past rows skipped, the bitmap, the last round): the rows skipped below a mark
 * were current on the member, the ones rebuilt durable before the mark moved,
 * so after the next assembly and the resumed rebuild every block reads right.
 */
static void test_readd_crash_resumes(void **state)
{
	static const struct geo_case cases[] = {{5, 3, 1}, {6, 5, 1}};
	bool quick = getenv("JGRFS_TEST_QUICK"); /* under valgrind: one geometry, a sample */

	(void)state;
	t_default_knobs.rebuild_mark_always = true;
	for (unsigned int gi = 0; gi < (quick ? 1u : 2u); gi++) {
		const struct geo_case *gc = &cases[gi];
		uint64_t w0, w1, b0, b1, best = 0;
		int64_t mark;

		assert_int_equal(t_crash_readd(gc, 1, UINT64_MAX, &w0, &w1), -1);
		print_message("level=%u members=%u: readd of %llu writes\n", gc->level, gc->n,
			      (unsigned long long)(w1 - w0));
		for (uint64_t at = w0 + 1; at <= w1; at += quick ? 3 : 1) {
			mark = t_crash_readd(gc, 1, at, &b0, &b1);
			if (b0 != w0)
				t_fail(gc, "the writes before the readd differ from run to run");
			if (mark > 0 && (uint64_t)mark > best)
				best = (uint64_t)mark;
		}
		if (!best)
			t_fail(gc, "no cut found a mark past row 0: the rows skipped were never trusted");
	}
	t_default_knobs.rebuild_mark_always = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_readd_only_missed_rows),
	    cmocka_unit_test(test_readd_online_with_writes),
	    cmocka_unit_test(test_readd_unknown_rebuilds_all),
	    cmocka_unit_test(test_readd_older_image_rebuilds_all),
	    cmocka_unit_test(test_readd_ring_overrun_rebuilds_all),
	    cmocka_unit_test(test_readd_wrong_device_refused),
	    cmocka_unit_test(test_readd_unfenced_refused),
	    cmocka_unit_test(test_readd_crash_resumes),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
