// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_rebuild.c - online rebuild: the replacement member ends up
 * with exactly the content the lost one had, with progress reported, recorded
 * as being rebuilt with a mark never past the rows copied; writes during the rebuild keep parity right; RAID6
 * rebuilds two members one after the other; bad requests are refused, and so are
 * a rebuild of a jnl-pending array, one onto a working member, one past the bounded
 * table of retired devices.
 */
#include <pthread.h>
#include <stdlib.h>

#include "raid_test.h"

static const struct geo_case *const geos = geo_rebuild;
#define NGEO GEO_N(geo_rebuild)
#define MB 192

static struct tarr t_arr; /* the resume tests' array */

static void t_fail(const struct geo_case *g, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, g->level, g->n, g->chunk);
}

struct t_prog {
	uint64_t calls, last, total;
	struct raid_array *a;
	bool sb_wrong;
	unsigned int role;
	struct blk_dev *newmem;
};

static int t_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct t_prog *p = ctx;
	struct raid_info info;
	uint8_t *b = jg_alloc_blocks(1);
	const struct raid_sb *sb;

	assert_true(done > p->last && done <= total);
	p->calls++;
	p->last = done;
	p->total = total;
	raid_info_get(p->a, &info);
	assert_true(info.rebuild_progress >= 0);
	/* (R1) recorded as being rebuilt, its mark never past the rows copied */
	assert_int_equal(blk_rw(p->newmem, BLK_OP_READ, 0, 1, b, 0), 0);
	sb = (const struct raid_sb *)b;
	if (jg_le32(sb->hdr.magic) != RAID_SB_MAGIC ||
	    !(jg_le32(sb->feature_incompat) & RAID_FEATURE_INCOMPAT_RECOVERY) ||
	    jg_le32(sb->recovery_mask) != 1u << p->role || jg_le64(sb->recovery_rows) > done ||
	    info.members[p->role].recovered_rows != done)
		p->sb_wrong = true;
	free(b);
	return 0;
}

/* Replace role @k of @t by a new blank memory member and rebuild it. */
static void t_rebuild(struct tarr *t, unsigned int k, const struct geo_case *gc)
{
	struct t_prog prog = {.a = t->a, .role = k};
	struct blk_dev *nm;
	struct raid_info info;

	assert_int_equal(raid_dev_mem_open("new", t->member_blocks, &nm), 0);
	prog.newmem = nm;
	assert_int_equal(raid_rebuild(t->a, k, t_keep(nm), t_progress, &prog), 0);
	raid_info_get(t->a, &info);
	if (!prog.calls || prog.last != prog.total || prog.sb_wrong)
		t_fail(gc, "progress not reported, or the superblock's rebuild mark wrong");
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


/* ------------------------------------------------- a rebuild that resumes */

#define RESUME_MB 800u

struct t_cut {
	struct raid_fault_domain *dom;
	uint64_t calls, at, first_done;
	bool stop; /* at call @at: pause (-ECANCELED) instead of cutting the power */
};

static int t_cut_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct t_cut *c = ctx;

	if (!c->calls++)
		c->first_done = done;
	if (c->calls == c->at && c->stop)
		return 1;
	if (c->calls == c->at && c->dom)
		raid_fault_domain_cut(c->dom);
	return 0;
}

/* A filled array of @gc (fault members with @fc), role @k assembled missing. */
static uint8_t *t_resume_setup(struct tarr *t, const struct geo_case *gc, unsigned int k,
			       const struct raid_fault_cfg *fc, struct raid_info *info,
			       uint8_t **old)
{
	uint8_t *data;

	t_make(t, gc, RESUME_MB, RAID_RESYNC_BITMAP, 8, fc);
	t_assemble(t);
	raid_info_get(t->a, info);
	data = jg_alloc_blocks(info->array_blocks);
	t_fill(data, info->array_blocks, 77 + k);
	assert_int_equal(t_io(t, BLK_OP_WRITE, 0, (uint32_t)info->array_blocks, data, 0), 0);
	t_stop(t);
	*old = t_member_image(t, k);
	assert_int_equal(t_assemble_mask(t, ~(1u << k), NULL), 0);
	return data;
}

/* Role @k is now @mem (behind @top): the test owns them, the old ones closed. */
static void t_swap_member(struct tarr *t, unsigned int k, struct blk_dev *mem,
			  struct blk_dev *top)
{
	if (t->top[k] != t->mem[k])
		blk_close(t->top[k]);
	blk_close(t->mem[k]);
	t->mem[k] = mem;
	t->top[k] = top;
}

/*
 * The member assembled being rebuilt at mark @mark: every block reads right
 * (below the mark from it, above reconstructed), the rebuild resumes there
 * and ends with the lost member's exact content and parity right.
 */
static void t_resume_check(struct tarr *t, const struct geo_case *gc, unsigned int k,
			   uint64_t mark, const uint8_t *data, const uint8_t *old)
{
	struct t_cut again = {0};
	struct raid_info info;
	struct raid_geo g;
	uint8_t *rd, *now;

	t_geo(t, &g);
	raid_info_get(t->a, &info);
	if (!info.members[k].rebuilding || info.members[k].recovered_rows != mark)
		fail_msg("level=%u members=%u: assembled rebuilding=%d at row %llu, expected %llu",
			 gc->level, gc->n, info.members[k].rebuilding,
			 (unsigned long long)info.members[k].recovered_rows,
			 (unsigned long long)mark);
	rd = jg_alloc_blocks(info.array_blocks);
	/* row by row: below the mark from the member, above without it */
	for (uint64_t row = 0; row < g.rows; row++) {
		uint64_t before = t->count[k].reads, at = row * g.row_blocks;
		bool holds_data = false;

		for (unsigned int q = 0; q < g.ndata; q++)
			holds_data |= raid_layout_member(&g, row, q) == k;
		assert_int_equal(t_io(t, BLK_OP_READ, at, g.row_blocks, rd + at * JG_BLOCK_SIZE, 0),
				 0);
		if ((t->count[k].reads > before) != (row < mark && holds_data))
			fail_msg("level=%u members=%u: row %llu of %llu (mark %llu) %s the member being rebuilt",
				 gc->level, gc->n, (unsigned long long)row,
				 (unsigned long long)g.rows, (unsigned long long)mark,
				 row < mark ? "not read from" : "read from");
	}
	if (memcmp(rd, data, info.array_blocks * JG_BLOCK_SIZE))
		t_fail(gc, "data differs while the member is being rebuilt");
	assert_int_equal(raid_rebuild(t->a, k, NULL, t_cut_progress, &again), 0);
	/* resumed, not started over: its first group ends one step past the mark */
	if (again.first_done != (mark + RAID_GROUP_MAX_ROWS < g.rows ? mark + RAID_GROUP_MAX_ROWS
								   : g.rows))
		t_fail(gc, "the rebuild started over instead of resuming at its mark");
	now = t_member_image(t, k);
	if (memcmp(old + g.data_offset * JG_BLOCK_SIZE, now + g.data_offset * JG_BLOCK_SIZE,
		   g.data_blocks * JG_BLOCK_SIZE))
		t_fail(gc, "resumed rebuild differs from the lost member");
	if (raid_scrub(t->a, false, NULL, NULL, NULL) != 0)
		t_fail(gc, "parity mismatches after a resumed rebuild");
	t_stop(t);
	t_assemble(t);
	raid_info_get(t->a, &info);
	if (info.degraded || info.members[k].rebuilding)
		t_fail(gc, "not a whole member after the resumed rebuild");
	t_stop(t);
	free(now);
	free(rd);
}

/*
 * One rebuild of role @k of @gc cut by a power failure, every unflushed write
 * kept, lost or torn at random: after group @group (1-based), or with @group 0
 * at the @cut-th write of the domain. Without a cut (@cut past the last
 * write), *@w0 and *@w1 are the domain's write counts when the rebuild starts
 * and ends. Then the next assembly, without force (nothing but the rebuild was
 * written: the bitmap is clean), reads every block right and resumes the
 * rebuild from the mark recorded last; with the new member not recorded yet
 * (a cut in the first round), it assembles degraded and rebuilds anew.
 * Returns the mark found, or -1 when the member came back whole.
 */
static int64_t t_crash_rebuild(const struct geo_case *gc, unsigned int k, unsigned int group,
			       uint64_t cut_at, uint64_t *w0, uint64_t *w1)
{
	struct raid_fault_cfg fc = {.seed = cut_at * 31 + group, .tear = true,
				    .cut_after_writes = group ? 0 : cut_at};
	struct t_cut cut = {.at = group};
	struct blk_dev *nm, *ntop;
	struct raid_info info;
	uint8_t *data, *old;
	int64_t mark = -1;
	bool was_cut;

	data = t_resume_setup(&t_arr, gc, k, &fc, &info, &old);
	cut.dom = t_arr.dom;
	assert_int_equal(raid_dev_mem_open("new", RESUME_MB, &nm), 0);
	assert_int_equal(raid_dev_fault_open(t_arr.dom, nm, &ntop), 0);
	*w0 = raid_fault_domain_writes(t_arr.dom);
	/* the writes after the cut vanish: the rebuild "ends" in a dead process */
	raid_rebuild(t_arr.a, k, t_keep(ntop), t_cut_progress, &cut);
	*w1 = raid_fault_domain_writes(t_arr.dom);
	was_cut = raid_fault_domain_is_cut(t_arr.dom);
	raid_abandon(t_arr.a);
	t_arr.a = NULL;
	t_swap_member(&t_arr, k, nm, ntop);
	for (unsigned int i = 0; i < t_arr.n; i++) { /* power back: no fault layer */
		blk_close(t_arr.top[i]);
		t_arr.top[i] = t_arr.mem[i];
	}
	raid_fault_domain_free(t_arr.dom);
	t_arr.dom = NULL;
	if (t_assemble_mask(&t_arr, ~0u, NULL)) {
		/* the new member has no superblock of this array yet */
		if (t_assemble_mask(&t_arr, ~(1u << k), NULL))
			t_fail(gc, "a rebuild cut by a crash needs force to assemble");
		mark = 0;
		t_rebuild(&t_arr, k, gc);
		t_stop(&t_arr);
		t_assemble(&t_arr);
		raid_info_get(t_arr.a, &info);
		t_stop(&t_arr);
		goto out;
	}
	raid_info_get(t_arr.a, &info);
	if (info.members[k].rebuilding) {
		uint64_t end = (uint64_t)group * RAID_GROUP_MAX_ROWS;

		mark = (int64_t)info.members[k].recovered_rows;
		/* a cut after group @group: the mark it recorded (the last records none) */
		if (end >= info.rows)
			end -= RAID_GROUP_MAX_ROWS;
		if (group && (uint64_t)mark != end)
			t_fail(gc, "the mark after a group is not that group's end");
		t_resume_check(&t_arr, gc, k, (uint64_t)mark, data, old);
	} else {
		if (was_cut && group)
			t_fail(gc, "a rebuild cut before its end came back whole");
		t_stop(&t_arr);
	}
out:
	free(data);
	free(old);
	t_free(&t_arr);
	return mark;
}

/*
 * (R1) (R4) (S10) Power cuts after each group, and at every write of the
 * rebuild (rows, marks, bitmap, the last round): the marks found must grow
 * through the run, and reach past zero.
 */
static void test_rebuild_crash_resumes(void **state)
{
	bool quick = getenv("JGRFS_TEST_QUICK"); /* under valgrind: one geometry, a sample */
	unsigned int ngeo = quick ? 1 : GEO_N(geo_rebuild_resume);

	(void)state;
	t_default_knobs.rebuild_mark_always = true;
	for (unsigned int gi = 0; gi < ngeo; gi++) {
		const struct geo_case *gc = &geo_rebuild_resume[gi];
		unsigned int k = gi % gc->n, group = 1, stride = quick ? 5 : gi ? 3 : 2;
		uint64_t w0, w1, b0, b1, best = 0;
		int64_t mark;

		while (t_crash_rebuild(gc, k, group, 0, &w0, &w1) >= 0)
			group++;
		if (group < 3)
			t_fail(gc, "fewer than two groups: make the members larger");
		/* the uncut run above counted the rebuild's writes: (w0, w1] */
		print_message("level=%u members=%u: %u groups, %llu writes\n", gc->level, gc->n,
			      group - 1, (unsigned long long)(w1 - w0));
		/* each group writes its rows onto the new member: a write at least */
		if (w1 - w0 < group - 1)
			t_fail(gc, "fewer rebuild writes than groups");
		for (uint64_t at = w0 + 1; at <= w1; at += stride) {
			mark = t_crash_rebuild(gc, k, 0, at, &b0, &b1);
			if (b0 != w0)
				t_fail(gc, "the writes before the rebuild differ from run to run");
			/* a round cut before its flush may keep the mark before it */
			if (mark >= 0 && (uint64_t)mark + RAID_GROUP_MAX_ROWS < best)
				t_fail(gc, "a later cut found a mark two rounds back");
			if (mark > 0 && (uint64_t)mark > best)
				best = (uint64_t)mark;
		}
		if (!best)
			t_fail(gc, "no cut at a write found a mark past row 0");
	}
	t_default_knobs.rebuild_mark_always = false;
}

/*
 * (R4) (S10) A paused rebuild resumes after a clean stop; after a crash it
 * assembles without force only when no write in flight lies above its mark
 * (the bitmap says so): a dirty row there has the write hole.
 */
static void test_rebuild_pause_and_dirty_rows(void **state)
{
	(void)state;
	t_default_knobs.rebuild_mark_always = true;
	for (unsigned int gi = 0; gi < GEO_N(geo_rebuild_resume); gi++) {
		const struct geo_case *gc = &geo_rebuild_resume[gi];
		unsigned int k = (gi + 1) % gc->n;

		for (int how = 0; how < 3; how++) { /* clean stop, dirty below, dirty above */
			struct raid_assemble_cfg force = {.force = true};
			struct t_cut pause = {.at = 1, .stop = true};
			struct raid_info info;
			struct raid_geo g;
			uint8_t *data, *old;
			uint64_t mark = RAID_GROUP_MAX_ROWS, blk;
			struct blk_dev *nm;

			data = t_resume_setup(&t_arr, gc, k, NULL, &info, &old);
			t_geo(&t_arr, &g);
			assert_int_equal(raid_dev_mem_open("new", RESUME_MB, &nm), 0);
			assert_int_equal(raid_rebuild(t_arr.a, k, t_keep(nm), t_cut_progress, &pause),
					 -ECANCELED);
			raid_info_get(t_arr.a, &info);
			if (!info.members[k].rebuilding || info.members[k].failed)
				t_fail(gc, "a paused rebuild did not leave the member rebuilding");
			t_swap_member(&t_arr, k, nm, nm);
			if (how == 0) {
				t_stop(&t_arr);
			} else {
				/* one block rewritten (same data), then a crash */
				blk = (how == 1 ? mark - 1 : mark + 1) * g.row_blocks;
				assert_int_equal(t_io(&t_arr, BLK_OP_WRITE, blk, 1,
						      data + blk * JG_BLOCK_SIZE, 0), 0);
				raid_abandon(t_arr.a);
				t_arr.a = NULL;
			}
			if (how == 2) {
				if (t_assemble_mask(&t_arr, ~0u, NULL) != -EUCLEAN)
					t_fail(gc, "dirty row above the mark assembled without force");
				assert_int_equal(t_assemble_mask(&t_arr, ~0u, &force), 0);
				raid_info_get(t_arr.a, &info);
				if (!info.members[k].rebuilding ||
				    info.members[k].recovered_rows != mark)
					t_fail(gc, "forced assembly lost the rebuild's mark");
				t_stop(&t_arr);
			} else {
				if (t_assemble_mask(&t_arr, ~0u, NULL))
					t_fail(gc, "paused rebuild, nothing at risk: not assembled");
				t_resume_check(&t_arr, gc, k, mark, data, old);
			}
			free(data);
			free(old);
			t_free(&t_arr);
		}
	}
	t_default_knobs.rebuild_mark_always = false;
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
	    cmocka_unit_test(test_rebuild_crash_resumes),
	    cmocka_unit_test(test_rebuild_pause_and_dirty_rows),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
