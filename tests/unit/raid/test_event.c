// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_event.c - events (src/raid/event.c, issue 22): a handler
 * given at assembly hears, in order, what the array met -- a read error
 * corrected or not, a member failed by an error storm, a degraded assembly, a
 * rebuild started, its 5% steps, finished (or failed), the new member active --
 * with the member's role and device name, and raid_info counts the same.
 */
#include "raid_test.h"

#define MAX_EV 256

struct t_ev {
	enum raid_event_kind kind;
	char name[32];
	char dev[64];
	unsigned int role;
	double progress;
	int err;
};

/* What the handler heard. Events come from the test's own thread here. */
struct t_rec {
	unsigned int n;
	struct t_ev ev[MAX_EV];
};

static void t_handler(void *ctx, const struct raid_event *ev)
{
	struct t_rec *r = ctx;
	struct t_ev *e;

	assert_true(r->n < MAX_EV);
	e = &r->ev[r->n++];
	e->kind = ev->kind;
	snprintf(e->name, sizeof(e->name), "%s", ev->name);
	snprintf(e->dev, sizeof(e->dev), "%s", ev->dev);
	e->role = ev->role;
	e->progress = ev->progress;
	e->err = ev->err;
}

static void t_rec_print(const struct t_rec *r)
{
	for (unsigned int i = 0; i < r->n; i++)
		print_message("  event %u: %s dev=%s role=%u progress=%.3f err=%d\n", i,
			      r->ev[i].name, r->ev[i].dev, r->ev[i].role, r->ev[i].progress,
			      r->ev[i].err);
}

/* Fail unless the handler heard @n events (all of them printed if not). */
static void t_expect_n(const struct t_rec *r, unsigned int n, const char *what)
{
	if (r->n == n)
		return;
	t_rec_print(r);
	fail_msg("%s: %u events, expected %u", what, r->n, n);
}

/* Event @i is @kind, named @name, of member @role on @dev. */
static void t_expect(const struct t_rec *r, unsigned int i, enum raid_event_kind kind,
		     const char *name, unsigned int role, const char *dev)
{
	if (i >= r->n || r->ev[i].kind != kind || strcmp(r->ev[i].name, name) ||
	    r->ev[i].role != role || strcmp(r->ev[i].dev, dev)) {
		t_rec_print(r);
		fail_msg("event %u: expected %s role=%u dev=%s", i, name, role, dev);
	}
}

/* raid_info's counters equal what the handler heard, kind by kind. */
static void t_counts_match(struct tarr *t, const struct t_rec *r)
{
	uint64_t heard[RAID_EV__COUNT] = {0};
	struct raid_info info;

	for (unsigned int i = 0; i < r->n; i++)
		heard[r->ev[i].kind]++;
	raid_info_get(t->a, &info);
	for (unsigned int k = 0; k < RAID_EV__COUNT; k++)
		if (info.event_counts[k] != heard[k]) {
			t_rec_print(r);
			fail_msg("%s: raid_info counts %llu, the handler heard %llu",
				 raid_event_kind_name(k), (unsigned long long)info.event_counts[k],
				 (unsigned long long)heard[k]);
		}
}

/* A new array of @gc (fault members), written with a pattern, stopped; its geometry. */
static uint8_t *t_filled(struct tarr *t, const struct geo_case *gc, uint64_t member_blocks,
			 uint64_t *nblk, struct raid_geo *g)
{
	struct raid_fault_cfg fc = {.seed = 1};
	struct raid_info info;
	uint8_t *ref;

	t_make(t, gc, member_blocks, RAID_RESYNC_JOURNAL, 0, &fc);
	t_assemble(t);
	raid_info_get(t->a, &info);
	*nblk = info.array_blocks;
	ref = jg_alloc_blocks(*nblk);
	assert_non_null(ref);
	t_fill(ref, *nblk, 77);
	assert_int_equal(t_io(t, BLK_OP_WRITE, 0, (uint32_t)*nblk, ref, 0), 0);
	t_stop(t);
	t_geo(t, g);
	return ref;
}

static int t_assemble_rec(struct tarr *t, uint32_t mask, unsigned int max_read_errors,
			  struct t_rec *r)
{
	struct raid_assemble_cfg cfg = {
	    .max_read_errors = max_read_errors, .event_fn = t_handler, .event_ctx = r};

	memset(r, 0, sizeof(*r));
	return t_assemble_mask(t, mask, &cfg);
}

/* The member block of data position 0 of @row, line @line (a block a read reaches). */
static uint64_t t_data_mblk(const struct raid_geo *g, uint64_t row, uint32_t line,
			    unsigned int *role)
{
	*role = raid_layout_member(g, row, 0);
	return g->data_offset + row * g->chunk_blocks + line;
}

/*
 * One latent error under data: the read that meets it reports exactly one
 * ReadErrorCorrected, of that member, and nothing else; a clean assembly
 * reports nothing.
 */
static void test_event_read_error_corrected(void **state)
{
	static const struct geo_case *const cg = geo_each_level;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		struct t_rec rec;
		struct raid_geo g;
		struct tarr t;
		uint64_t nblk, mblk;
		unsigned int role;
		uint8_t *ref, *buf;

		ref = t_filled(&t, &cg[gi], 160, &nblk, &g);
		mblk = t_data_mblk(&g, 2, 1, &role);
		assert_int_equal(raid_dev_fault_latent_block(t.top[role], mblk), 0);
		assert_int_equal(t_assemble_rec(&t, ~0u, 0, &rec), 0);
		if (rec.n)
			fail_msg("level=%u: a clean assembly reported %u events", cg[gi].level,
				 rec.n);
		buf = jg_alloc_blocks(nblk);
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, (uint32_t)nblk, buf, 0), 0);
		assert_memory_equal(buf, ref, nblk * JG_BLOCK_SIZE);
		t_expect_n(&rec, 1, "one latent error read");
		t_expect(&rec, 0, RAID_EV_READ_ERROR_CORRECTED, "ReadErrorCorrected", role,
			 t.mem[role]->name);
		assert_int_equal(rec.ev[0].err, 0);
		t_counts_match(&t, &rec);
		t_stop(&t);
		free(buf);
		free(ref);
		t_free(&t);
	}
}

/*
 * An error storm: max_read_errors = 2 and latent errors all over member 2.
 * Three ReadErrorCorrected, then Fail of member 2 with -EIO; afterwards the
 * array reads around it and reports nothing more about it.
 */
static void test_event_storm_fails_member(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct t_rec rec;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk;
	uint8_t *ref, *buf;

	(void)state;
	ref = t_filled(&t, &gc, 160, &nblk, &g);
	for (uint64_t b = g.data_offset; b < t.member_blocks; b += 7)
		assert_int_equal(raid_dev_fault_latent_block(t.top[2], b), 0);
	assert_int_equal(t_assemble_rec(&t, ~0u, 2, &rec), 0);
	buf = jg_alloc_blocks(nblk);
	for (unsigned int pass = 0; pass < 2; pass++) {
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, (uint32_t)nblk, buf, 0), 0);
		assert_memory_equal(buf, ref, nblk * JG_BLOCK_SIZE);
	}
	t_expect_n(&rec, 4, "3 corrected and a Fail");
	for (unsigned int i = 0; i < 3; i++)
		t_expect(&rec, i, RAID_EV_READ_ERROR_CORRECTED, "ReadErrorCorrected", 2,
			 t.mem[2]->name);
	t_expect(&rec, 3, RAID_EV_MEMBER_FAILED, "Fail", 2, t.mem[2]->name);
	assert_int_equal(rec.ev[3].err, -EIO);
	t_counts_match(&t, &rec);
	t_stop(&t);
	free(buf);
	free(ref);
	t_free(&t);
}

/*
 * Degraded RAID5 and a latent error on a surviving member's data block: the
 * block cannot be given back: ReadErrorUncorrectable with -EIO, and no Fail.
 */
static void test_event_read_error_uncorrectable(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct t_rec rec;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, mblk, row = 1, blk = UINT64_MAX;
	unsigned int role = UINT32_MAX;
	uint8_t *ref, *buf;

	(void)state;
	ref = t_filled(&t, &gc, 160, &nblk, &g);
	/* a data position of row 1 on a member other than 3, which will be missing */
	for (unsigned int d = 0; d < g.ndata && role == UINT32_MAX; d++) {
		if (raid_layout_member(&g, row, d) == 3)
			continue;
		role = raid_layout_member(&g, row, d);
		blk = row * g.ndata * g.chunk_blocks + (uint64_t)d * g.chunk_blocks;
	}
	mblk = g.data_offset + row * g.chunk_blocks;
	assert_int_equal(raid_dev_fault_latent_block(t.top[role], mblk), 0);
	assert_int_equal(t_assemble_rec(&t, ~(1u << 3), 0, &rec), 0);
	t_expect(&rec, 0, RAID_EV_DEGRADED_ARRAY, "DegradedArray", 3, "(missing)");
	buf = jg_alloc_blocks(1);
	assert_int_equal(t_io(&t, BLK_OP_READ, blk, 1, buf, 0), -EIO);
	t_expect_n(&rec, 2, "DegradedArray and a lost block");
	t_expect(&rec, 1, RAID_EV_READ_ERROR_UNCORRECTABLE, "ReadErrorUncorrectable", role,
		 t.mem[role]->name);
	assert_int_equal(rec.ev[1].err, -EIO);
	t_counts_match(&t, &rec);
	t_stop(&t);
	free(buf);
	free(ref);
	t_free(&t);
}

/*
 * A rebuild over enough rows for several member batches: DegradedArray at
 * assembly, RebuildStarted on the new device, one RebuildNN per 5% step
 * crossed (increasing, 05..95, at least one), RebuildFinished, SpareActive.
 */
static void test_event_rebuild(void **state)
{
	static const struct geo_case *const cg = geo_chunk1;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_chunk1); gi++) {
		const struct geo_case *gc = &cg[gi];
		struct t_rec rec;
		struct raid_info info;
		struct raid_geo g;
		struct blk_dev *nm;
		struct tarr t;
		uint64_t nblk;
		unsigned int i, last_pct = 0;
		uint8_t *ref, *buf;

		ref = t_filled(&t, gc, 1400, &nblk, &g);
		assert_true(g.rows > 4 * RAID_GROUP_MAX_ROWS); /* several progress steps */
		assert_int_equal(t_assemble_rec(&t, ~(1u << 1), 0, &rec), 0);
		t_expect(&rec, 0, RAID_EV_DEGRADED_ARRAY, "DegradedArray", 1, "(missing)");
		assert_int_equal(raid_dev_mem_open("new1", t.member_blocks, &nm), 0);
		assert_int_equal(raid_rebuild(t.a, 1, nm, NULL, NULL), 0);
		t_expect(&rec, 1, RAID_EV_REBUILD_STARTED, "RebuildStarted", 1, "new1");
		for (i = 2; i < rec.n && rec.ev[i].kind == RAID_EV_REBUILD_PROGRESS; i++) {
			unsigned int pct;

			if (sscanf(rec.ev[i].name, "Rebuild%2u", &pct) != 1 || pct % 5 || pct < 5 ||
			    pct > 95 || pct <= last_pct || strcmp(rec.ev[i].dev, "new1") ||
			    rec.ev[i].role != 1 || rec.ev[i].progress * 100 < pct ||
			    rec.ev[i].progress * 100 >= pct + 5) {
				t_rec_print(&rec);
				fail_msg("level=%u: event %u is no progress step after %u%%",
					 gc->level, i, last_pct);
			}
			last_pct = pct;
		}
		if (i < 3) {
			t_rec_print(&rec);
			fail_msg("level=%u: no progress event", gc->level);
		}
		t_expect(&rec, i, RAID_EV_REBUILD_FINISHED, "RebuildFinished", 1, "new1");
		t_expect(&rec, i + 1, RAID_EV_SPARE_TAKEN, "SpareActive", 1, "new1");
		t_expect_n(&rec, i + 2, "nothing after SpareActive");
		t_counts_match(&t, &rec);
		raid_info_get(t.a, &info);
		assert_false(info.degraded);
		buf = jg_alloc_blocks(nblk);
		assert_int_equal(t_io(&t, BLK_OP_READ, 0, (uint32_t)nblk, buf, 0), 0);
		assert_memory_equal(buf, ref, nblk * JG_BLOCK_SIZE);
		t_stop(&t);
		free(buf);
		free(ref);
		t_free(&t);
	}
}

/*
 * A rebuild onto a device whose first data block does not take a write (its
 * block 0 reads, so the rebuild starts): RebuildStarted, the new
 * member failed (Fail, -EIO), RebuildFailed with the error; no RebuildFinished,
 * no SpareActive.
 */
static void test_event_rebuild_failed(void **state)
{
	static const struct geo_case gc = {5, 3, 4};
	struct raid_fault_cfg fc = {.seed = 2};
	struct raid_fault_domain *dom;
	struct blk_dev *mem, *bad;
	struct t_rec rec;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk;
	uint8_t *ref;

	(void)state;
	ref = t_filled(&t, &gc, 160, &nblk, &g);
	assert_int_equal(t_assemble_rec(&t, ~(1u << 0), 0, &rec), 0);
	assert_int_equal(raid_dev_mem_open("dead0", t.member_blocks, &mem), 0);
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	assert_int_equal(raid_dev_fault_open(dom, mem, &bad), 0);
	assert_int_equal(raid_dev_fault_fail_block(bad, g.data_offset, false, true), 0);
	assert_int_not_equal(raid_rebuild(t.a, 0, bad, NULL, NULL), 0);
	t_expect(&rec, 0, RAID_EV_DEGRADED_ARRAY, "DegradedArray", 0, "(missing)");
	t_expect(&rec, 1, RAID_EV_REBUILD_STARTED, "RebuildStarted", 0, "dead0");
	t_expect(&rec, 2, RAID_EV_MEMBER_FAILED, "Fail", 0, "dead0");
	t_expect(&rec, 3, RAID_EV_REBUILD_FAILED, "RebuildFailed", 0, "dead0");
	assert_int_equal(rec.ev[3].err, -EIO);
	t_expect_n(&rec, 4, "a failed rebuild");
	t_counts_match(&t, &rec);
	t_stop(&t); /* closes bad (the array owns it) */
	blk_close(mem);
	raid_fault_domain_free(dom);
	free(ref);
	t_free(&t);
}

/*
 * (E3) Progress is reported at each new 5% step only, never at 0 or 100%, and
 * from the start again after RebuildStarted. (E1) raid_event() called with
 * sb_lock held (as super.c does) neither deadlocks nor releases it.
 */
static void test_event_progress_steps_and_sb_lock(void **state)
{
	static const struct geo_case gc = {5, 3, 4};
	static const struct {
		double p;
		const char *name; /* NULL: nothing reported */
	} seq[] = {{0.0, NULL},	 {0.01, NULL},	       {0.05, "Rebuild05"},
		   {0.07, NULL}, {0.5, "Rebuild50"},   {0.49, NULL},
		   {0.5, NULL},	 {0.999, "Rebuild95"}, {1.0, NULL}};
	struct t_rec rec;
	struct tarr t;
	unsigned int n = 0;

	(void)state;
	t_make(&t, &gc, 160, RAID_RESYNC_JOURNAL, 0, NULL);
	assert_int_equal(t_assemble_rec(&t, ~0u, 0, &rec), 0);
	for (unsigned int round = 0; round < 2; round++) {
		raid_event(t.a, RAID_EV_REBUILD_STARTED, 1, -1, 0);
		t_expect(&rec, n++, RAID_EV_REBUILD_STARTED, "RebuildStarted", 1, "mem1");
		for (unsigned int i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
			raid_event(t.a, RAID_EV_REBUILD_PROGRESS, 1, seq[i].p, 0);
			if (!seq[i].name) {
				t_expect_n(&rec, n, "a progress that crossed no new step");
				continue;
			}
			t_expect(&rec, n, RAID_EV_REBUILD_PROGRESS, seq[i].name, 1, "mem1");
			assert_true(rec.ev[n].progress == seq[i].p);
			n++;
		}
	}
	assert_int_equal(jg_mutex_lock(&t.a->sb_lock), 0);
	raid_event(t.a, RAID_EV_DEGRADED_ARRAY, 2, -1, 0);
	/* still ours: an error-checking mutex says EDEADLK to its owner */
	assert_int_equal(jg_mutex_lock(&t.a->sb_lock), EDEADLK);
	assert_true(jg_mutex_held(&t.a->sb_lock));
	jg_mutex_unlock(&t.a->sb_lock);
	t_expect(&rec, n++, RAID_EV_DEGRADED_ARRAY, "DegradedArray", 2, "mem2");
	assert_int_equal(rec.n, n);
	t_counts_match(&t, &rec);
	assert_string_equal(raid_event_kind_name(RAID_EV_MEMBER_FAILED), "Fail");
	assert_null(raid_event_kind_name(RAID_EV__COUNT));
	t_stop(&t);
	t_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_event_read_error_corrected),
	    cmocka_unit_test(test_event_storm_fails_member),
	    cmocka_unit_test(test_event_read_error_uncorrectable),
	    cmocka_unit_test(test_event_rebuild),
	    cmocka_unit_test(test_event_rebuild_failed),
	    cmocka_unit_test(test_event_progress_steps_and_sb_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
