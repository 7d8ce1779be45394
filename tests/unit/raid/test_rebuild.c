// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_rebuild.c - online rebuild: the replacement member ends up
 * with exactly the content the lost one had, with progress reported, its
 * superblock written last; writes during the rebuild keep parity right; RAID6
 * rebuilds two members one after the other; bad requests are refused, and so are
 * a rebuild of a jnl-pending array, one onto a working member, one past the bounded
 * table of retired devices.
 */
#include <pthread.h>

#include "raid_test.h"

static const struct geo_case geos[] = {
    {5, 3, 2}, {5, 4, 4}, {5, 6, 1}, {4, 4, 2}, {6, 4, 2}, {6, 5, 4}, {6, 8, 2},
};
#define NGEO (sizeof(geos) / sizeof(geos[0]))
#define MB 192

static void t_fail(const struct geo_case *g, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, g->level, g->n, g->chunk);
}

struct t_prog {
	uint64_t calls, last, total;
	struct raid_array *a;
	bool sb_seen_early;
	struct blk_dev *newmem;
};

static int t_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct t_prog *p = ctx;
	struct raid_info info;
	uint8_t *b = jg_alloc_blocks(1);

	assert_true(done > p->last && done <= total);
	p->calls++;
	p->last = done;
	p->total = total;
	raid_info_get(p->a, &info);
	assert_true(info.rebuild_progress >= 0);
	/* the superblock is written last: not there while rows are copied */
	assert_int_equal(blk_rw(p->newmem, BLK_OP_READ, 0, 1, b, 0), 0);
	if (jg_le32(((struct raid_sb *)b)->hdr.magic) == RAID_SB_MAGIC)
		p->sb_seen_early = true;
	free(b);
	return 0;
}

/* Replace role @k of @t by a new blank memory member and rebuild it. */
static void t_rebuild(struct tarr *t, unsigned int k, const struct geo_case *gc)
{
	struct t_prog prog = {.a = t->a};
	struct blk_dev *nm;
	struct raid_info info;

	assert_int_equal(raid_dev_mem_open("new", t->member_blocks, &nm), 0);
	prog.newmem = nm;
	assert_int_equal(raid_rebuild(t->a, k, t_keep(nm), t_progress, &prog), 0);
	raid_info_get(t->a, &info);
	if (!prog.calls || prog.last != prog.total || prog.sb_seen_early)
		t_fail(gc, "progress not reported, or superblock written before the rows");
	if (info.rebuild_progress != -1 || info.members[k].rebuilding || info.members[k].failed)
		t_fail(gc, "member state after rebuild");
	/* the test now owns the new memory device in place of the old one */
	blk_close(t->mem[k]);
	t->mem[k] = t->top[k] = nm;
}

static void test_rebuild_exact_content(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = gc->n / 2;
		struct raid_info info;
		struct raid_geo g;
		struct tarr t;
		uint8_t *old, *now, *data;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 32, NULL);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		data = jg_alloc_blocks(info.array_blocks);
		t_fill(data, info.array_blocks, 10 + gi);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, data, 0),
				 0);
		t_stop(&t);
		t_geo(&t, &g);
		old = t_member_image(&t, k);
		assert_int_equal(t_assemble_mask(&t, ~(1u << k), NULL), 0);
		t_rebuild(&t, k, gc);
		now = t_member_image(&t, k);
		if (memcmp(old + g.data_offset * JG_BLOCK_SIZE, now + g.data_offset * JG_BLOCK_SIZE,
			   g.data_blocks * JG_BLOCK_SIZE))
			t_fail(gc, "rebuilt member differs from the lost one");
		raid_info_get(t.a, &info);
		if (info.degraded || raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
			t_fail(gc, "array not whole after rebuild");
		t_stop(&t);
		/* the rebuilt member is a full member now */
		t_assemble(&t);
		{
			uint8_t *rd = jg_alloc_blocks(info.array_blocks);

			assert_int_equal(
			    t_io(&t, BLK_OP_READ, 0, (uint32_t)info.array_blocks, rd, 0), 0);
			if (memcmp(rd, data, info.array_blocks * JG_BLOCK_SIZE))
				t_fail(gc, "data differs after rebuild and reassembly");
			free(rd);
		}
		t_stop(&t);
		free(old);
		free(now);
		free(data);
		t_free(&t);
	}
}

struct t_wr {
	struct tarr *t;
	uint8_t *ref;
	uint64_t nblk;
	int rc;
};

static void *t_writer(void *arg)
{
	struct t_wr *w = arg;
	uint8_t *buf = jg_alloc_blocks(5);
	uint64_t s = 4242;

	for (int i = 0; i < 150 && !w->rc; i++) {
		uint64_t b = t_rand(&s) % (w->nblk - 5);

		t_fill(buf, 5, t_rand(&s));
		w->rc = t_io(w->t, BLK_OP_WRITE, b, 5, buf, 0);
		memcpy(w->ref + b * JG_BLOCK_SIZE, buf, 5 * JG_BLOCK_SIZE);
	}
	free(buf);
	return NULL;
}

static void test_rebuild_online_with_writes(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct raid_info info;
		struct raid_geo g;
		struct t_wr w;
		pthread_t tid;
		struct tarr t;
		uint8_t *rd;

		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 32, NULL);
		assert_int_equal(t_assemble_mask(&t, ~1u, NULL), 0);
		raid_info_get(t.a, &info);
		w = (struct t_wr){.t = &t,
				  .ref = calloc(info.array_blocks, JG_BLOCK_SIZE),
				  .nblk = info.array_blocks};
		pthread_create(&tid, NULL, t_writer, &w);
		t_rebuild(&t, 0, gc);
		pthread_join(tid, NULL);
		assert_int_equal(w.rc, 0);
		if (gc->level == 6) { /* and a second one */
			assert_int_equal(raid_fail_member(t.a, gc->n - 1), 0);
			assert_int_equal(raid_fail_member(t.a, 1), 0);
			t_rebuild(&t, gc->n - 1, gc);
			t_rebuild(&t, 1, gc);
		}
		rd = jg_alloc_blocks(info.array_blocks);
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, (uint32_t)info.array_blocks, rd, 0), 0);
		if (memcmp(rd, w.ref, info.array_blocks * JG_BLOCK_SIZE))
			t_fail(gc, "data written during the rebuild differs");
		t_stop(&t);
		t_geo(&t, &g);
		if (t_ref_mismatches(&t, &g))
			t_fail(gc, "parity mismatches after an online rebuild");
		free(rd);
		free(w.ref);
		t_free(&t);
	}
}

static void test_rebuild_bad_requests(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	struct blk_dev *small, *ok;
	struct tarr t;

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_FULL, 0, NULL);
	t_assemble(&t);
	/* a refused rebuild closes the new device: ASan finds a leak or a double close */
	assert_int_equal(raid_dev_mem_open("ok", MB, &ok), 0);
	assert_int_equal(raid_rebuild(t.a, 1, ok, NULL, NULL), -EBUSY); /* working member */
	assert_int_equal(raid_dev_mem_open("ok", MB, &ok), 0);
	assert_int_equal(raid_rebuild(t.a, 9, ok, NULL, NULL), -EINVAL);
	assert_int_equal(raid_fail_member(t.a, 1), 0);
	assert_int_equal(raid_dev_mem_open("small", 8, &small), 0);
	assert_int_equal(raid_rebuild(t.a, 1, small, NULL, NULL), -EINVAL);
	t_stop(&t);
	t_free(&t);
}

/* (R2) A journal of an earlier run unreplayed: parity may be stale, the rebuild is
 * refused (the new device closed) until the journal clears jnl-pending. */
static void test_rebuild_pending_refused(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = gc->n / 2;
		struct raid_info info;
		struct blk_dev *nm;
		struct tarr t;
		int rc;

		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 32, NULL);
		t_assemble(&t);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
		raid_abandon(t.a); /* a crash in declared mode */
		t.a = NULL;
		t_assemble(&t);
		assert_int_equal(raid_member_fail(t.a, k, -EIO), 0); /* an I/O error: allowed */
		assert_int_equal(raid_dev_mem_open("new", t.member_blocks, &nm), 0);
		rc = raid_rebuild(t.a, k, nm, NULL, NULL);
		if (rc != -EUCLEAN)
			t_fail(gc, "rebuild of a jnl-pending array not refused");
		raid_info_get(t.a, &info);
		if (!info.members[k].failed || info.members[k].rebuilding)
			t_fail(gc, "a refused rebuild changed the member");
		/* the journal replayed: now it may */
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_CLEAR_JNL_PENDING, NULL), 0);
		t_rebuild(&t, k, gc);
		t_stop(&t);
		t_free(&t);
	}
}

/* (R2) A second path to a working member is no new device: refused, untouched. */
static void test_rebuild_onto_working_member_refused(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		unsigned int k = gc->n / 2, w = (k + 1) % gc->n;
		uint8_t *before, *after;
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 32, NULL);
		t_assemble(&t);
		assert_int_equal(raid_fail_member(t.a, k), 0);
		before = t_member_image(&t, w);
		if (raid_rebuild(t.a, k, t_keep(t.mem[w]), NULL, NULL) != -EEXIST)
			t_fail(gc, "rebuild onto a working member not refused");
		after = t_member_image(&t, w);
		if (memcmp(before, after, t.member_blocks * JG_BLOCK_SIZE))
			t_fail(gc, "a refused rebuild wrote to the working member");
		/* the failed member itself may be rebuilt onto (re-added) */
		assert_int_equal(raid_rebuild(t.a, k, t_keep(t.mem[k]), NULL, NULL), 0);
		t_stop(&t);
		free(before);
		free(after);
		t_free(&t);
	}
}

/* (R3) Failed rebuilds each retire a device: the table is bounded, the one past it
 * refused. */
static void test_rebuild_retired_bounded(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	struct blk_dev *low[RAID_MAX_MEMBERS + 2];
	struct raid_fault_domain *d;
	struct raid_fault_cfg fc = {0};
	struct raid_geo g;
	struct tarr t;
	unsigned int i;
	int rc;

	(void)state;
	assert_int_equal(raid_fault_domain_new(&fc, &d), 0);
	t_make(&t, &gc, MB, RAID_RESYNC_FULL, 0, NULL);
	t_geo(&t, &g);
	t_assemble(&t);
	assert_int_equal(raid_fail_member(t.a, 1), 0);
	for (i = 0; i < RAID_MAX_MEMBERS + 2; i++) {
		struct blk_dev *bad;

		assert_int_equal(raid_dev_mem_open("bad", MB, &low[i]), 0);
		assert_int_equal(raid_dev_fault_open(d, low[i], &bad), 0);
		assert_int_equal(raid_dev_fault_fail_block(bad, g.data_offset, false, true), 0);
		rc = raid_rebuild(t.a, 1, bad, NULL, NULL);
		if (i < RAID_MAX_MEMBERS && rc != -EIO)
			fail_msg("rebuild %u onto a failing device: %d, expected -EIO", i, rc);
		if (i >= RAID_MAX_MEMBERS && rc != -EMFILE)
			fail_msg("rebuild %u past the retired table: %d, expected -EMFILE", i, rc);
	}
	t_stop(&t);
	for (i = 0; i < RAID_MAX_MEMBERS + 2; i++)
		blk_close(low[i]);
	raid_fault_domain_free(d);
	t_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rebuild_exact_content),
	    cmocka_unit_test(test_rebuild_online_with_writes),
	    cmocka_unit_test(test_rebuild_bad_requests),
	    cmocka_unit_test(test_rebuild_pending_refused),
	    cmocka_unit_test(test_rebuild_onto_working_member_refused),
	    cmocka_unit_test(test_rebuild_retired_bounded),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
