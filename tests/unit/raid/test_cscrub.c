// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_cscrub.c - a scrub that asks its verifier which member
 * of a mismatched line is wrong (issue 27, src/raid/scrub.c (K1)-(K4)).
 *
 * The fake verifier knows each array block's kind: SEALED (a metadata-like
 * block: magic, home, crc32c; VERIFIES or FAILS by jg_blk_verify), FREE or
 * UNKNOWN (data without a check). Damage is a flipped byte on a memory member,
 * under the array:
 *  - a sealed data block damaged: rebuilt on its member, parity untouched, one
 *    corrected error on that member; without --repair nothing written;
 *  - the parity damaged, the data verifying: parity rewritten, nothing counted;
 *  - unknown data damaged: unresolved, nothing written;
 *  - RAID6, two damaged blocks of one line (two data, or data and P): both rebuilt;
 *  - free space damaged: parity rewritten (harmless);
 *  - the online path (raid_scrub_rows) counts the same;
 *  - (K5) a block with a write in flight (BUSY): its row handed back, not
 *    counted, nothing written (offline: unresolved); a block whose new
 *    checksum is known before it lands (SLOT), landing while it is judged:
 *    the row read again and judged by what landed, not left unresolved.
 */
#include "raid_test.h"

#define MEMBER_BLOCKS 96
#define T_MAGIC 0x5343524bu /* "SCRK" */
#define T_SEED 0x7654321u

enum t_kind { T_SEALED = 0, T_FREE = 1, T_UNKNOWN = 2, T_BUSY = 3, T_SLOT = 4 };

struct t_oracle {
	uint8_t *kind; /* per array block, enum t_kind */
	uint32_t slot; /* T_SLOT: the crc32c its content must have */
	uint64_t calls;
	/* a writer meeting the judgement: called once, at the first verdict */
	void (*hook)(struct t_oracle *o);
	void *hook_ctx;
};

static int t_verify(void *ctx, uint64_t blkno, const void *blk)
{
	struct t_oracle *o = ctx;

	if (o->hook) {
		void (*h)(struct t_oracle *) = o->hook;

		o->hook = NULL;
		h(o);
	}
	o->calls++;
	switch (o->kind[blkno]) {
	case T_FREE:
		return BLK_FREE;
	case T_UNKNOWN:
		return BLK_UNKNOWN;
	case T_BUSY:
		return BLK_BUSY;
	case T_SLOT:
		return jg_crc32c(T_SEED, blk, JG_BLOCK_SIZE) == o->slot ? BLK_VERIFIES : BLK_FAILS;
	default:
		return jg_blk_verify(blk, JG_BLOCK_SIZE, T_MAGIC, 1, blkno, T_SEED) ? BLK_FAILS
										    : BLK_VERIFIES;
	}
}

struct t_env {
	struct tarr t;
	struct raid_geo g;
	uint64_t nblk;
	uint8_t *ref;
	struct t_oracle o;
};

/* A new array of @gc holding sealed blocks everywhere, assembled, the verifier set. */
static void t_setup(struct t_env *e, const struct geo_case *gc)
{
	struct raid_info info;

	memset(e, 0, sizeof(*e));
	t_make(&e->t, gc, MEMBER_BLOCKS, RAID_RESYNC_JOURNAL, 0, NULL);
	t_assemble(&e->t);
	raid_info_get(e->t.a, &info);
	e->nblk = info.array_blocks;
	e->ref = jg_alloc_blocks(e->nblk);
	assert_non_null(e->ref);
	t_fill(e->ref, e->nblk, 77 + gc->level * 10 + gc->n);
	for (uint64_t b = 0; b < e->nblk; b++)
		jg_blk_seal(e->ref + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE, T_MAGIC, 1, 0, 7, b, T_SEED);
	assert_int_equal(t_io(&e->t, BLK_OP_WRITE, 0, (uint32_t)e->nblk, e->ref, 0), 0);
	t_geo(&e->t, &e->g);
	e->o.kind = calloc(e->nblk, 1);
	assert_non_null(e->o.kind);
	raid_set_verifier(e->t.a, t_verify, &e->o);
}

static void t_teardown(struct t_env *e)
{
	t_stop(&e->t);
	t_free(&e->t);
	free(e->ref);
	free(e->o.kind);
}

/* Member block of data position @pos (P: ndata, Q: ndata + 1) in line 1 of row 1. */
static void t_where(const struct raid_geo *g, unsigned int pos, unsigned int *role, uint64_t *mblk,
		    uint64_t *blkno)
{
	uint64_t row = 1;
	uint32_t k = g->chunk_blocks > 1;

	*role = raid_layout_member(g, row, pos);
	*mblk = g->data_offset + row * g->chunk_blocks + k;
	if (blkno)
		*blkno = row * g->row_blocks + (uint64_t)pos * g->chunk_blocks + k;
}

static void t_member_read(struct tarr *t, unsigned int m, uint64_t mblk, uint8_t *out)
{
	assert_int_equal(blk_rw(t->mem[m], BLK_OP_READ, mblk, 1, out, 0), 0);
}

/* Flip a byte of position @pos's block in line 1 of row 1. */
static void t_damage(struct t_env *e, unsigned int pos, size_t at)
{
	uint8_t *b = jg_alloc_blocks(1);
	unsigned int m;
	uint64_t mblk;

	t_where(&e->g, pos, &m, &mblk, NULL);
	t_member_read(&e->t, m, mblk, b);
	b[at] ^= 0x5a;
	assert_int_equal(blk_rw(e->t.mem[m], BLK_OP_WRITE, mblk, 1, b, 0), 0);
	free(b);
}

/* The line's blocks on every position, as the members hold them: npos blocks. */
static uint8_t *t_line(struct t_env *e)
{
	unsigned int npos = e->g.ndata + e->g.npar;
	uint8_t *l = jg_alloc_blocks(npos);

	for (unsigned int q = 0; q < npos; q++) {
		unsigned int m;
		uint64_t mblk;

		t_where(&e->g, q, &m, &mblk, NULL);
		t_member_read(&e->t, m, mblk, l + (size_t)q * JG_BLOCK_SIZE);
	}
	return l;
}

static uint64_t t_corrected(struct tarr *t, unsigned int role)
{
	struct raid_info info;

	raid_info_get(t->a, &info);
	return info.members[role].read_errors_corrected;
}

static void t_set_line_kind(struct t_env *e, enum t_kind k)
{
	for (unsigned int d = 0; d < e->g.ndata; d++) {
		unsigned int m;
		uint64_t mblk, b;

		t_where(&e->g, d, &m, &mblk, &b);
		e->o.kind[b] = (uint8_t)k;
	}
}

/*
 * A sealed data block damaged, each level and each data position: a scrub
 * without repair writes nothing and rebuilds nothing; with repair the block is
 * rebuilt on its member, the parity untouched, one corrected error on that
 * member only; the next scrub finds nothing.
 */
static void test_cscrub_data_rebuilt(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		struct t_env e;

		t_setup(&e, &geo_each_level[gi]);
		for (unsigned int d = 0; d < e.g.ndata; d++) {
			unsigned int npos = e.g.ndata + e.g.npar, m;
			struct raid_resync_report rep = {0};
			uint64_t mblk, b;
			uint8_t *before, *after, *cur = jg_alloc_blocks(1);

			t_where(&e.g, d, &m, &mblk, &b);
			t_damage(&e, d, 200 + d);
			before = t_line(&e);
			assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 1);
			assert_int_equal(rep.rows_repaired, 0);
			assert_int_equal(rep.blocks_rebuilt, 0);
			assert_int_equal(rep.rows_unresolved, 0);
			after = t_line(&e);
			assert_memory_equal(before, after,
					    npos * JG_BLOCK_SIZE); /* nothing written */
			free(after);

			assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
			assert_int_equal(rep.rows_repaired, 1);
			assert_int_equal(rep.blocks_rebuilt, 1);
			assert_int_equal(rep.rows_unresolved, 0);
			t_member_read(&e.t, m, mblk, cur);
			assert_memory_equal(cur, e.ref + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
			after = t_line(&e);
			for (unsigned int q = e.g.ndata; q < npos; q++) /* parity untouched */
				assert_memory_equal(before + (size_t)q * JG_BLOCK_SIZE,
						    after + (size_t)q * JG_BLOCK_SIZE,
						    JG_BLOCK_SIZE);
			for (unsigned int r = 0; r < e.g.n; r++)
				assert_int_equal(t_corrected(&e.t, r), r == m ? 1 : 0);
			assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 0);
			free(before);
			free(after);
			free(cur);
			t_stop(&e.t);
			t_assemble(&e.t); /* the counters start again */
			raid_set_verifier(e.t.a, t_verify, &e.o);
		}
		{
			uint8_t *all = jg_alloc_blocks(e.nblk);

			assert_int_equal(t_io(&e.t, BLK_OP_READ, 0, (uint32_t)e.nblk, all, 0), 0);
			assert_memory_equal(all, e.ref, e.nblk * JG_BLOCK_SIZE);
			free(all);
		}
		t_teardown(&e);
	}
}

/* P (and Q) damaged, the data verifying: the parity is rewritten, nothing counted. */
static void test_cscrub_parity_rewritten(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		struct t_env e;

		t_setup(&e, &geo_each_level[gi]);
		for (unsigned int q = e.g.ndata; q < e.g.ndata + e.g.npar; q++) {
			struct raid_resync_report rep = {0};
			uint8_t *good = t_line(&e), *now;

			t_damage(&e, q, 300);
			assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
			assert_int_equal(rep.rows_repaired, 1);
			assert_int_equal(rep.blocks_rebuilt, 0);
			assert_int_equal(rep.rows_unresolved, 0);
			now = t_line(&e);
			assert_memory_equal(now, good, (e.g.ndata + e.g.npar) * JG_BLOCK_SIZE);
			for (unsigned int r = 0; r < e.g.n; r++)
				assert_int_equal(t_corrected(&e.t, r), 0);
			assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 0);
			free(good);
			free(now);
		}
		t_teardown(&e);
	}
}

/* Data without a check damaged: nobody can tell; nothing written, the row unresolved. */
static void test_cscrub_unknown_unresolved(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		struct t_env e;
		struct raid_resync_report rep = {0};
		uint8_t *before, *after;

		t_setup(&e, &geo_each_level[gi]);
		t_set_line_kind(&e, T_UNKNOWN);
		t_damage(&e, 0, 400);
		before = t_line(&e);
		assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
		assert_int_equal(rep.rows_repaired, 0);
		assert_int_equal(rep.blocks_rebuilt, 0);
		assert_int_equal(rep.rows_unresolved, 1);
		after = t_line(&e);
		assert_memory_equal(before, after, (e.g.ndata + e.g.npar) * JG_BLOCK_SIZE);
		assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 1); /* still there */
		assert_true(e.o.calls > 0);
		free(before);
		free(after);
		t_teardown(&e);
	}
}

/*
 * RAID6, two damaged blocks in one line: two data blocks, or a data block and
 * P: both rebuilt, each member counted once; the line whole again.
 */
static void test_cscrub_raid6_two(void **state)
{
	static const struct geo_case cases[] = {{6, 5, 2}, {6, 6, 1}, {6, 8, 4}};

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(cases); gi++) {
		for (unsigned int which = 0; which < 2; which++) {
			struct t_env e;
			struct raid_resync_report rep = {0};
			unsigned int other, m0, m1;
			uint8_t *good, *now;
			uint64_t mblk;

			t_setup(&e, &cases[gi]);
			other = which ? e.g.ndata /* P */ : e.g.ndata - 1;
			good = t_line(&e);
			t_damage(&e, 0, 500);
			t_damage(&e, other, 600);
			t_where(&e.g, 0, &m0, &mblk, NULL);
			t_where(&e.g, other, &m1, &mblk, NULL);
			assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
			assert_int_equal(rep.rows_repaired, 1);
			assert_int_equal(rep.blocks_rebuilt, 2);
			assert_int_equal(rep.rows_unresolved, 0);
			now = t_line(&e);
			assert_memory_equal(now, good, (e.g.ndata + e.g.npar) * JG_BLOCK_SIZE);
			for (unsigned int r = 0; r < e.g.n; r++)
				assert_int_equal(t_corrected(&e.t, r), r == m0 || r == m1 ? 1 : 0);
			free(good);
			free(now);
			t_teardown(&e);
		}
	}
}

/* Free space damaged: its content is nobody's, the parity is made to match it. */
static void test_cscrub_free_space(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		struct t_env e;
		struct raid_resync_report rep = {0};
		uint8_t *before, *after;

		t_setup(&e, &geo_each_level[gi]);
		t_set_line_kind(&e, T_FREE);
		t_damage(&e, 0, 700);
		before = t_line(&e);
		assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
		assert_int_equal(rep.rows_repaired, 1);
		assert_int_equal(rep.blocks_rebuilt, 0);
		assert_int_equal(rep.rows_unresolved, 0);
		after = t_line(&e);
		/* the data stays as it is (damage included), the parity follows it */
		assert_memory_equal(before, after, e.g.ndata * JG_BLOCK_SIZE);
		assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 0);
		free(before);
		free(after);
		t_teardown(&e);
	}
}

/* The online path: raid_scrub_rows judges the same and counts into its counts. */
static void test_cscrub_rows(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		struct t_env e;
		struct raid_scrub_counts c = {0};
		unsigned int m;
		uint64_t mblk, b;
		uint8_t *cur = jg_alloc_blocks(1);

		t_setup(&e, &geo_each_level[gi]);
		t_damage(&e, 0, 800);
		t_where(&e.g, 0, &m, &mblk, &b);
		assert_int_equal(raid_scrub_rows(e.t.a, 0, e.g.rows, true, NULL, NULL, &c), 0);
		assert_int_equal(c.mismatches, 1);
		assert_int_equal(c.repaired, 1);
		assert_int_equal(c.rebuilt, 1);
		assert_int_equal(c.unresolved, 0);
		t_member_read(&e.t, m, mblk, cur);
		assert_memory_equal(cur, e.ref + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
		assert_int_equal(t_corrected(&e.t, m), 1);
		free(cur);
		t_teardown(&e);
	}
}

/* The hook: a new sealed version of data position 1's block of the line, through the array. */
static void t_hook_write(struct t_oracle *o)
{
	struct t_env *e = o->hook_ctx;
	uint8_t *nb = jg_alloc_blocks(1);
	unsigned int m;
	uint64_t mblk, b;

	t_where(&e->g, 1, &m, &mblk, &b);
	t_fill(nb, 1, 999);
	jg_blk_seal(nb, JG_BLOCK_SIZE, T_MAGIC, 1, 0, 8, b, T_SEED);
	assert_int_equal(t_io(&e->t, BLK_OP_WRITE, b, 1, nb, 0), 0);
	memcpy(e->ref + b * JG_BLOCK_SIZE, nb, JG_BLOCK_SIZE);
	free(nb);
}

/*
 * (K4) A write to the line while it is judged (the judgement runs with no row
 * lock): the parity computed from the old data must not be written over the
 * new. The P of the line is damaged; the first verdict writes a new version
 * of another data block of the line through the array. After the repair the
 * array reads the new version, every other block as before, and a second
 * scrub finds nothing.
 */
static void test_cscrub_write_during_judgement(void **state)
{
	static const struct geo_case cases[] = {{5, 4, 4}, {6, 5, 2}};

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(cases); gi++) {
		struct t_env e;
		struct raid_resync_report rep = {0};
		uint8_t *all;

		t_setup(&e, &cases[gi]);
		t_damage(&e, e.g.ndata, 900); /* P */
		e.o.hook = t_hook_write;
		e.o.hook_ctx = &e;
		assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
		assert_null(e.o.hook); /* the write happened during the judgement */
		assert_int_equal(rep.rows_unresolved, 0);
		assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 0);
		all = jg_alloc_blocks(e.nblk);
		assert_int_equal(t_io(&e.t, BLK_OP_READ, 0, (uint32_t)e.nblk, all, 0), 0);
		assert_memory_equal(all, e.ref, e.nblk * JG_BLOCK_SIZE);
		free(all);
		t_teardown(&e);
	}
}

/*
 * (K5) A data block of the mismatched line (P damaged) has a write in flight:
 * online, the row is handed back busy -- not a mismatch, not unresolved,
 * nothing written; offline (no later look) it is unresolved. Once the write
 * is over, the same row is judged: the data verifies, the parity is rewritten.
 */
static void test_cscrub_busy(void **state)
{
	static const struct geo_case cases[] = {{5, 4, 4}, {6, 5, 2}};

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(cases); gi++) {
		struct t_env e;
		struct raid_scrub_counts c = {0};
		struct raid_resync_report rep = {0};
		uint8_t *before, *after;
		unsigned int m;
		uint64_t mblk, b;

		t_setup(&e, &cases[gi]);
		t_where(&e.g, 0, &m, &mblk, &b);
		e.o.kind[b] = T_BUSY;
		t_damage(&e, e.g.ndata, 700); /* P */
		before = t_line(&e);
		assert_int_equal(raid_scrub_rows(e.t.a, 0, e.g.rows, true, NULL, NULL, &c), 0);
		assert_int_equal(c.busy, 1);
		assert_int_equal(c.busy_rows[0], 1);
		assert_int_equal(c.mismatches, 0);
		assert_int_equal(c.unresolved, 0);
		assert_int_equal(c.repaired, 0);
		after = t_line(&e);
		assert_memory_equal(before, after, (e.g.ndata + e.g.npar) * JG_BLOCK_SIZE);
		free(after);
		assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
		assert_int_equal(rep.rows_unresolved, 1);
		after = t_line(&e);
		assert_memory_equal(before, after, (e.g.ndata + e.g.npar) * JG_BLOCK_SIZE);
		free(after);
		/* the write over: judged, the parity rewritten */
		e.o.kind[b] = T_SEALED;
		memset(&c, 0, sizeof(c));
		assert_int_equal(raid_scrub_rows(e.t.a, 1, 1, true, NULL, NULL, &c), 0);
		assert_int_equal(c.busy, 0);
		assert_int_equal(c.mismatches, 1);
		assert_int_equal(c.repaired, 1);
		assert_int_equal(c.rebuilt, 0);
		assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 0);
		free(before);
		t_teardown(&e);
	}
}

/* The hook: data position 0's new version lands through the array (its slot
 * was set before: the oracle's T_SLOT). */
static void t_hook_land(struct t_oracle *o)
{
	struct t_env *e = o->hook_ctx;
	unsigned int m;
	uint64_t mblk, b;

	t_where(&e->g, 0, &m, &mblk, &b);
	assert_int_equal(t_io(&e->t, BLK_OP_WRITE, b, 1, e->ref + b * JG_BLOCK_SIZE, 0), 0);
}

/*
 * (K5) The checksum of a data block's new version is known before the block
 * lands; the line's P is damaged. The scrub reads the row with the old version
 * (which fails its slot), and the new one lands while the row is judged:
 * nothing verifies in what was read, but the row read again has changed, and
 * judged again the data verifies (the parity rewritten if the write left it
 * wrong): nothing left unresolved, the array whole (offline and online).
 */
static void test_cscrub_lands_during_judgement(void **state)
{
	static const struct geo_case cases[] = {{5, 4, 4}, {6, 5, 2}};

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(cases) * 2; gi++) {
		bool online = gi & 1;
		struct t_env e;
		struct raid_scrub_counts c = {0};
		struct raid_resync_report rep = {0};
		uint8_t *all;
		unsigned int m;
		uint64_t mblk, b;
		uint8_t *nb;

		t_setup(&e, &cases[gi / 2]);
		t_where(&e.g, 0, &m, &mblk, &b);
		nb = e.ref + b * JG_BLOCK_SIZE; /* the new version: in the reference only */
		t_fill(nb, 1, 4242);
		e.o.kind[b] = T_SLOT;
		e.o.slot = jg_crc32c(T_SEED, nb, JG_BLOCK_SIZE);
		t_damage(&e, e.g.ndata, 900); /* P */
		e.o.hook = t_hook_land;
		e.o.hook_ctx = &e;
		if (online) {
			assert_int_equal(raid_scrub_rows(e.t.a, 0, e.g.rows, true, NULL, NULL, &c),
					 0);
			assert_int_equal(c.unresolved, 0);
			assert_int_equal(c.busy, 0);
		} else {
			assert_int_equal(raid_scrub(e.t.a, true, NULL, NULL, &rep), 1);
			assert_int_equal(rep.rows_unresolved, 0);
		}
		assert_null(e.o.hook); /* it landed during the judgement */
		assert_int_equal(raid_scrub(e.t.a, false, NULL, NULL, &rep), 0);
		all = jg_alloc_blocks(e.nblk);
		assert_int_equal(t_io(&e.t, BLK_OP_READ, 0, (uint32_t)e.nblk, all, 0), 0);
		assert_memory_equal(all, e.ref, e.nblk * JG_BLOCK_SIZE);
		free(all);
		t_teardown(&e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cscrub_data_rebuilt),
	    cmocka_unit_test(test_cscrub_parity_rewritten),
	    cmocka_unit_test(test_cscrub_unknown_unresolved),
	    cmocka_unit_test(test_cscrub_raid6_two),
	    cmocka_unit_test(test_cscrub_free_space),
	    cmocka_unit_test(test_cscrub_rows),
	    cmocka_unit_test(test_cscrub_write_during_judgement),
	    cmocka_unit_test(test_cscrub_busy),
	    cmocka_unit_test(test_cscrub_lands_during_judgement),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
