// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_bitmap.c - the write-intent bitmap: BLK_FS_RAIDSYNC writes
 * stay out of it under the journal policy, other writes set bits; a bit is
 * durable on every member before the first data write of its region; one
 * bitmap round per batch; lazy clearing after two flushes; bits survive a crash
 * and limit the recovery resync to their regions.
 */
#include <unistd.h>

#include "raid_test.h"

static const struct geo_case *const geos = geo_bitmap;
#define NGEO GEO_N(geo_bitmap)
#define MB 256
#define REGION 16

static void t_fail(const struct geo_case *g, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, g->level, g->n, g->chunk);
}

static uint64_t t_bits_set(struct tarr *t)
{
	struct blk_stats st;

	assert_int_equal(blk_ctl(t->dev, BLK_CTL_GET_STATS, &st), 0);
	return st.bitmap_bits_set;
}

static uint64_t t_dirty(struct tarr *t)
{
	struct raid_info info;

	raid_info_get(t->a, &info);
	return info.bitmap_dirty_regions;
}

static void test_bitmap_fs_raidsync_stays_clean(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint8_t *buf = jg_alloc_blocks(8);
		struct tarr t;

		t_fill(buf, 8, gi);
		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, REGION, NULL);
		t_assemble(&t);
		for (uint64_t b = 0; b < 200; b += 13)
			assert_int_equal(t_io(&t, BLK_OP_WRITE, b, 8, buf, BLK_FS_RAIDSYNC), 0);
		if (t_bits_set(&t) || t_dirty(&t))
			t_fail(gc, "FS_RAIDSYNC writes set bitmap bits under the journal policy");
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 3, 1, buf, 0), 0);
		if (t_bits_set(&t) != 1 || t_dirty(&t) != 1)
			t_fail(gc, "a plain write did not set its bit");
		t_stop(&t);
		t_free(&t);
		/* the bitmap policy records FS_RAIDSYNC writes too */
		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, REGION, NULL);
		t_assemble(&t);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 3, 1, buf, BLK_FS_RAIDSYNC), 0);
		if (t_bits_set(&t) != 1)
			t_fail(gc, "bitmap policy ignored an FS_RAIDSYNC write");
		t_stop(&t);
		t_free(&t);
		free(buf);
	}
}

/*
 * (B5) Under the journal policy an FS_RAIDSYNC write into a region named by
 * BLK_CTL_TRACK_ALWAYS sets its bit like a plain write, and a crash followed by
 * a degraded assembly names its rows at risk; other regions stay out (B3).
 */
static void test_bitmap_track_always(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	struct raid_assemble_cfg force = {.force = true};
	uint8_t *buf = jg_zalloc_blocks(1);
	const uint64_t sb = 0, jsb = 2 * REGION + 5;
	uint64_t rows[64], more;
	struct raid_geo g;
	size_t n = 0;
	bool all = false, row0 = false, reg1 = false;
	struct tarr t;

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_JOURNAL, REGION, NULL);
	t_assemble(&t);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_TRACK_ALWAYS, (void *)&sb), 0);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_TRACK_ALWAYS, (void *)&jsb), 0);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_TRACK_ALWAYS, (void *)&jsb), 0); /* once */
	assert_int_equal(t_io(&t, BLK_OP_WRITE, REGION + 1, 1, buf, BLK_FS_RAIDSYNC), 0);
	if (t_bits_set(&t))
		t_fail(&gc, "an FS_RAIDSYNC write outside the tracked regions set a bit");
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 3, 1, buf, BLK_FS_RAIDSYNC), 0);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, jsb + 1, 1, buf, BLK_FS_RAIDSYNC), 0);
	if (t_bits_set(&t) != 2 || t_dirty(&t) != 2)
		t_fail(&gc, "FS_RAIDSYNC writes in the tracked regions did not set their bits");
	raid_abandon(t.a); /* crash: both bits set, the array dirty */
	t.a = NULL;
	/* degraded: the recovery resync cannot run, the tracked rows are at risk */
	assert_int_equal(t_assemble_mask(&t, ~1u, &force), 0);
	t_geo(&t, &g);
	assert_int_equal(raid_rows_at_risk(t.a, rows, 64, &n, &more, &all), 0);
	for (size_t i = 0; i < n; i++) {
		row0 |= rows[i] == 0;
		/* a row wholly inside region 1, which only the untracked write touched */
		reg1 |= rows[i] * g.row_blocks >= REGION &&
			(rows[i] + 1) * g.row_blocks <= 2 * REGION;
	}
	if (all || !row0 || reg1)
		t_fail(&gc, "the tracked rows are not the ones named at risk");
	t_stop(&t);
	free(buf);
	t_free(&t);
}

/* Order of member operations, recorded by a wrapper. */
struct t_ev {
	unsigned int member;
	uint8_t op;
	uint64_t blkno;
};
static struct t_ev t_evs[4096];
static unsigned int t_nev;

struct t_rec {
	struct blk_dev dev;
	struct blk_dev *lower;
	unsigned int member;
};

static int t_rec_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct t_rec *k = (struct t_rec *)d;

	for (unsigned int i = 0; i < n; i++)
		if (t_nev < 4096)
			t_evs[t_nev++] = (struct t_ev){k->member, r[i].op, r[i].blkno};
	return blk_submit(k->lower, r, n);
}

static void t_rec_close(struct blk_dev *d)
{
	free(d);
}

static const struct blk_dev_ops t_rec_ops = {.submit = t_rec_submit, .close = t_rec_close};

static void test_bitmap_durable_before_data_one_round(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct blk_dev *devs[RAID_MAX_MEMBERS];
		struct blk_req r[6];
		struct raid_array *a;
		struct raid_geo g;
		struct tarr t;
		uint8_t *buf = jg_zalloc_blocks(1);
		uint32_t flushed = 0, bm_written = 0;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, REGION, NULL);
		t_geo(&t, &g);
		for (unsigned int i = 0; i < gc->n; i++) {
			struct t_rec *k = calloc(1, sizeof(*k));

			k->dev.ops = &t_rec_ops;
			k->dev.nblocks = t.mem[i]->nblocks;
			k->lower = t.mem[i];
			k->member = i;
			devs[i] = &k->dev;
		}
		assert_int_equal(t_raid_assemble(devs, gc->n, NULL, &a), 0);
		t_nev = 0;
		/* one batch, six clean regions */
		for (unsigned int i = 0; i < 6; i++)
			r[i] = (struct blk_req){.op = BLK_OP_WRITE,
						.blkno = 5 + (uint64_t)i * 2 * REGION,
						.nblocks = 1,
						.buf = buf};
		assert_int_equal(blk_submit(raid_array_dev(a), r, 6), 0);
		for (unsigned int e = 0; e < t_nev; e++) {
			struct t_ev *ev = &t_evs[e];

			if (ev->op == BLK_OP_WRITE && ev->blkno >= RAID_BITMAP_BLKNO &&
			    ev->blkno < g.data_offset) {
				if (bm_written & (1u << ev->member))
					t_fail(gc,
					       "more than one bitmap write round for one batch");
				bm_written |= 1u << ev->member;
			} else if (ev->op == BLK_OP_FLUSH) {
				if (!(bm_written & (1u << ev->member)))
					t_fail(gc, "flush before the bitmap write");
				flushed |= 1u << ev->member;
			} else if (ev->op == BLK_OP_WRITE && ev->blkno >= g.data_offset) {
				/* (B1): every member has the bit durably before any data write */
				if (flushed != raid_role_mask_all(gc->n))
					t_fail(
					    gc,
					    "data written before the bitmap was durable on every member");
			}
		}
		if (flushed != raid_role_mask_all(gc->n))
			t_fail(gc, "bitmap not flushed on every member");
		{
			struct blk_stats st;

			assert_int_equal(blk_ctl(raid_array_dev(a), BLK_CTL_GET_STATS, &st), 0);
			if (st.bitmap_bits_set != 6)
				t_fail(gc, "bits set count");
		}
		/* the same regions again: no bitmap I/O at all */
		t_nev = 0;
		assert_int_equal(blk_submit(raid_array_dev(a), r, 6), 0);
		for (unsigned int e = 0; e < t_nev; e++)
			if (t_evs[e].op == BLK_OP_FLUSH || t_evs[e].blkno < g.data_offset)
				t_fail(gc, "bitmap I/O for regions already dirty");
		assert_int_equal(raid_stop(a), 0);
		free(buf);
		t_free(&t);
	}
}

static void test_bitmap_lazy_clear_and_crash(void **state)
{
	(void)state;
	t_default_knobs.bitmap_clear_now = true;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint8_t *buf = jg_zalloc_blocks(1), *bm = jg_alloc_blocks(1);
		struct raid_info info;
		struct raid_geo g;
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, REGION, NULL);
		t_geo(&t, &g);
		t_assemble(&t);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 2 * REGION + 1, 1, buf, 0), 0);
		assert_int_equal(blk_flush(t.dev), 0);
		if (t_dirty(&t) != 1)
			t_fail(gc, "bit cleared at the first flush after the write");
		assert_int_equal(blk_flush(t.dev), 0);
		if (t_dirty(&t) != 0)
			t_fail(gc, "bit not cleared at the second flush");
		assert_int_equal(blk_rw(t.mem[0], BLK_OP_READ, RAID_BITMAP_BLKNO, 1, bm, 0), 0);
		if (((struct raid_bitmap_blk *)bm)->bits[0])
			t_fail(gc, "cleared bit still on the member");
		/* a crash with a dirty region: the bit is on every member, recovery resyncs it only
		 */
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 5 * REGION + 3, 1, buf, 0), 0);
		for (unsigned int i = 0; i < gc->n; i++) {
			assert_int_equal(blk_rw(t.mem[i], BLK_OP_READ, RAID_BITMAP_BLKNO, 1, bm, 0),
					 0);
			if (((struct raid_bitmap_blk *)bm)->bits[0] != 1u << 5)
				t_fail(gc, "dirty bit not on a member");
		}
		raid_abandon(t.a);
		t.a = NULL;
		t_assemble(&t);
		raid_info_get(t.a, &info);
		{
			uint64_t r0 = 5 * REGION / g.row_blocks,
				 r1 = (6 * REGION - 1) / g.row_blocks;

			if (info.last_resync.rows_checked != r1 - r0 + 1 ||
			    info.bitmap_dirty_regions)
				t_fail(gc, "recovery did not resync exactly the dirty region");
		}
		t_stop(&t);
		free(buf);
		free(bm);
		t_free(&t);
	}
	t_default_knobs.bitmap_clear_now = false;
}

/* Assembled without the recovery resync: bits stay, and stop leaves it dirty. */
static void test_bitmap_no_resync_keeps_bits(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	struct raid_assemble_cfg nr = {.no_resync = true};
	uint8_t *buf = jg_zalloc_blocks(1);
	struct raid_info info;
	struct tarr t;

	(void)state;
	t_default_knobs.bitmap_clear_now = true;
	t_make(&t, &gc, MB, RAID_RESYNC_BITMAP, REGION, NULL);
	t_assemble(&t);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 3 * REGION, 1, buf, 0), 0);
	raid_abandon(t.a); /* crash with region 3 dirty */
	t.a = NULL;
	assert_int_equal(t_assemble_mask(&t, ~0u, &nr), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(blk_flush(t.dev), 0);
	if (t_dirty(&t) != 1)
		t_fail(&gc, "bits of an unresynced crash were cleared");
	t_stop(&t);
	t_assemble(&t);
	raid_info_get(t.a, &info);
	if (!info.was_dirty || !info.last_resync.rows_checked || info.bitmap_dirty_regions)
		t_fail(&gc, "the resync skipped by no_resync did not happen at the next assembly");
	t_stop(&t);
	t_default_knobs.bitmap_clear_now = false;
	free(buf);
	t_free(&t);
}

#define T_CUT_SEEDS 4 /* keep/revert draws per cut position */

/*
 * The scripted writes and flushes of test_bitmap_cut_each_write over io_uring
 * members behind fault devices: run uncut (@cut 0) it returns the positions
 * the domain counted.
 */
static uint64_t t_cut_script(struct blk_dev **lower, unsigned int n, uint64_t cut,
			     uint64_t seed)
{
	struct raid_fault_cfg fc = {.cut_after_writes = cut, .seed = seed, .keep_percent = 50,
				    .cut_at_flushes = true};
	struct raid_fault_domain *dom;
	struct blk_dev *f[RAID_MAX_MEMBERS];
	static const uint64_t blk[] = {1, 2 * REGION + 3, 1, 5 * REGION, 2 * REGION + 4};
	uint8_t *buf = jg_alloc_blocks(2);
	struct raid_array *a;
	uint64_t seen;

	assert_non_null(buf);
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(raid_dev_fault_open(dom, lower[i], &f[i]), 0);
	assert_int_equal(t_raid_assemble(f, n, NULL, &a), 0);
	for (unsigned int i = 0; i < sizeof(blk) / sizeof(blk[0]); i++) {
		t_fill(buf, 2, cut * 16 + i);
		assert_int_equal(blk_rw(raid_array_dev(a), BLK_OP_WRITE, blk[i], 2, buf, 0), 0);
		/* two flushes: the bits of idle regions are cleared lazily (B2) */
		if (i == 1 || i == 2) {
			assert_int_equal(blk_flush(raid_array_dev(a)), 0);
			assert_int_equal(blk_flush(raid_array_dev(a)), 0);
		}
	}
	seen = raid_fault_domain_writes(dom);
	raid_fault_domain_cut(dom); /* each write not flushed is kept or lost */
	raid_abandon(a);	    /* closes the fault devices, not the members */
	raid_fault_domain_free(dom);
	free(buf);
	return seen;
}

/*
 * (B1) under a power cut at each write or flush position of a script, over
 * members whose submit rewrites req->dev (io_uring, as blkreq.h allows): the
 * bitmap's flush must reach the fault device, so whatever data reached a member
 * is covered by a durable bit and the recovery resync leaves no parity mismatch.
 */
static void test_bitmap_cut_each_write(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	struct raid_create_cfg cfg = { .assume_clean = true, /* zeroed new members */.level = gc.level,
				      .chunk_blocks = gc.chunk,
				      .resync = RAID_RESYNC_BITMAP,
				      .bitmap_region_blocks = REGION};
	struct blk_dev *m[4];
	char path[4][64];
	uint64_t total = 0;

	(void)state;
	t_default_knobs.bitmap_clear_now = true;
	for (uint64_t it = 0; it == 0 || it <= (total + 1) * T_CUT_SEEDS; it++) {
		uint64_t cut = it ? (it - 1) / T_CUT_SEEDS + 1 : 0, seed = it % T_CUT_SEEDS;
		struct raid_array *a;
		int64_t mism;
		int rc;

		for (unsigned int i = 0; i < gc.n; i++) {
			snprintf(path[i], sizeof(path[i]), "/tmp/jgrfs-bm-test-%d-%u", (int)getpid(),
				 i);
			rc = raid_dev_uring_open(path[i], MB, &m[i]);
			unlink(path[i]); /* the open file lives on */
			if (rc) {
				for (unsigned int j = 0; j < i; j++)
					blk_close(m[j]);
				t_default_knobs.bitmap_clear_now = false;
				skip(); /* no O_DIRECT on /tmp */
			}
		}
		assert_int_equal(raid_create(m, gc.n, &cfg, false), 0);
		if (!cut)
			total = t_cut_script(m, gc.n, 0, 0);
		else
			t_cut_script(m, gc.n, cut, seed);
		assert_int_equal(t_raid_assemble(m, gc.n, NULL, &a), 0);
		mism = raid_scrub(a, false, NULL, NULL, NULL);
		if (mism)
			fail_msg("cut at position %llu of %llu (seed %llu): scrub after recovery: "
				 "%lld rows with parity mismatches",
				 (unsigned long long)cut, (unsigned long long)total,
				 (unsigned long long)seed, (long long)mism);
		assert_int_equal(raid_stop(a), 0); /* closes the members */
	}
	t_default_knobs.bitmap_clear_now = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bitmap_fs_raidsync_stays_clean),
	    cmocka_unit_test(test_bitmap_track_always),
	    cmocka_unit_test(test_bitmap_durable_before_data_one_round),
	    cmocka_unit_test(test_bitmap_lazy_clear_and_crash),
	    cmocka_unit_test(test_bitmap_no_resync_keeps_bits),
	    cmocka_unit_test(test_bitmap_cut_each_write),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
