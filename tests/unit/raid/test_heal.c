// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_heal.c - BLK_CTL_HEAL_READ (issue 27, src/raid/heal.c):
 * a block whose checksum fails is rebuilt from the rest of its row (each
 * member left out in turn, RAID6 two), handed back right, and the member(s)
 * that held damage rewritten and counted; nothing verifies: -EBADMSG and
 * nothing written.
 *
 * Every array block holds a sealed metadata block (magic, home address,
 * crc32c); damage is one flipped byte on a memory member, under the array.
 */
#include <pthread.h>

#include "raid_test.h"

#define MEMBER_BLOCKS 96
#define T_MAGIC 0x4845414cu /* "HEAL" */
#define T_SEED 0x1234567u

static int t_verify(void *ctx, const void *blk)
{
	return jg_blk_verify(blk, JG_BLOCK_SIZE, T_MAGIC, 1, *(const uint64_t *)ctx, T_SEED);
}

/* The reference: block b sealed with home b, random payload. */
static uint8_t *t_ref(uint64_t nblk, uint64_t seed)
{
	uint8_t *ref = jg_alloc_blocks(nblk);

	assert_non_null(ref);
	t_fill(ref, nblk, seed);
	for (uint64_t b = 0; b < nblk; b++)
		jg_blk_seal(ref + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE, T_MAGIC, 1, 0, 7, b, T_SEED);
	return ref;
}

/* A new array of @gc holding the reference, stopped; geometry in *@g. */
static uint8_t *t_setup(struct tarr *t, const struct geo_case *gc, uint64_t *nblk,
			struct raid_geo *g)
{
	struct raid_info info;
	uint8_t *ref;

	t_make(t, gc, MEMBER_BLOCKS, RAID_RESYNC_JOURNAL, 0, NULL);
	t_assemble(t);
	raid_info_get(t->a, &info);
	*nblk = info.array_blocks;
	ref = t_ref(*nblk, 40 + gc->level * 10 + gc->n);
	assert_int_equal(t_io(t, BLK_OP_WRITE, 0, (uint32_t)*nblk, ref, 0), 0);
	t_stop(t);
	t_geo(t, g);
	return ref;
}

/* Flip byte @at of member block @mblk of role @m (straight on the memory member). */
static void t_damage(struct tarr *t, unsigned int m, uint64_t mblk, size_t at)
{
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(t->mem[m], BLK_OP_READ, mblk, 1, b, 0), 0);
	b[at] ^= 0x5a;
	assert_int_equal(blk_rw(t->mem[m], BLK_OP_WRITE, mblk, 1, b, 0), 0);
	free(b);
}

/* Member block @mblk of role @m equals @want. */
static bool t_member_is(struct tarr *t, unsigned int m, uint64_t mblk, const uint8_t *want)
{
	uint8_t *b = jg_alloc_blocks(1);
	bool same;

	assert_int_equal(blk_rw(t->mem[m], BLK_OP_READ, mblk, 1, b, 0), 0);
	same = !memcmp(b, want, JG_BLOCK_SIZE);
	free(b);
	return same;
}

/* The data areas of two images of a member are equal (superblocks change at assembly). */
static void t_data_same(const uint8_t *x, const uint8_t *y, const struct raid_geo *g,
			const struct tarr *t)
{
	size_t off = g->data_offset * JG_BLOCK_SIZE;

	assert_memory_equal(x + off, y + off, (t->member_blocks - g->data_offset) * JG_BLOCK_SIZE);
}

static uint64_t t_corrected(struct tarr *t, unsigned int role)
{
	struct raid_info info;

	raid_info_get(t->a, &info);
	return info.members[role].read_errors_corrected;
}

static int t_heal(struct tarr *t, uint64_t blkno, uint8_t *out, struct blk_heal *h)
{
	*h = (struct blk_heal){.blkno = blkno, .buf = out, .verify = t_verify, .ctx = &blkno};
	return blk_ctl(t->dev, BLK_CTL_HEAL_READ, h);
}

static uint64_t t_scrub_mismatches(struct tarr *t, const struct raid_geo *g)
{
	struct raid_scrub_counts c = {0};

	assert_int_equal(raid_scrub_rows(t->a, 0, g->rows, false, NULL, NULL, &c), 0);
	assert_int_equal(c.rows_checked, g->rows);
	return c.mismatches;
}

/*
 * Which blocks to damage: the array block @b of row 1, at line 1 of its chunk
 * when the chunk has one, and its member; @other the role of another position
 * of the same line (data when @other_pos < ndata, else P or Q).
 */
struct t_case {
	uint64_t b, mblk, row;
	unsigned int role, pos;
};

static struct t_case t_pick(const struct raid_geo *g, unsigned int dpos)
{
	struct t_case c;

	c.row = 1;
	c.pos = dpos;
	c.b = c.row * g->row_blocks + (uint64_t)dpos * g->chunk_blocks + (g->chunk_blocks > 1);
	raid_layout_map(g, c.b, &c.role, &c.mblk);
	assert_int_equal(raid_layout_pos(g, c.row, c.role), dpos);
	return c;
}

/*
 * One damaged data block, each level and each data position of a row: the
 * plain read returns the damage (the test can fail), the heal returns the
 * reference, the member holds it again, only that member counts one
 * correction, the line is consistent (scrub), a second heal rewrites nothing.
 */
static void test_heal_one(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		const struct geo_case *gc = &geo_each_level[gi];
		struct raid_geo g;
		struct tarr t;
		uint64_t nblk;
		uint8_t *ref = t_setup(&t, gc, &nblk, &g), *buf = jg_alloc_blocks(1);

		t_assemble(&t);
		for (unsigned int d = 0; d < g.ndata; d++) {
			struct t_case c = t_pick(&g, d);
			const uint8_t *want = ref + c.b * JG_BLOCK_SIZE;
			struct blk_heal h;

			t_damage(&t, c.role, c.mblk, 100 + d);
			assert_int_equal(t_io(&t, BLK_OP_READ, c.b, 1, buf, 0), 0);
			assert_int_not_equal(t_verify(&c.b, buf), 0); /* the damage shows */
			assert_int_equal(t_heal(&t, c.b, buf, &h), 0);
			assert_memory_equal(buf, want, JG_BLOCK_SIZE);
			assert_int_equal(h.rewritten, 1u << c.role);
			assert_true(t_member_is(&t, c.role, c.mblk, want));
			for (unsigned int m = 0; m < g.n; m++)
				assert_int_equal(t_corrected(&t, m), m == c.role ? 1 : 0);
			assert_int_equal(t_scrub_mismatches(&t, &g), 0);
			/* healed for good: the read is right, another heal writes nothing */
			assert_int_equal(t_io(&t, BLK_OP_READ, c.b, 1, buf, 0), 0);
			assert_memory_equal(buf, want, JG_BLOCK_SIZE);
			assert_int_equal(t_heal(&t, c.b, buf, &h), 0);
			assert_int_equal(h.rewritten, 0);
			assert_int_equal(h.candidates, 1);
			t_stop(&t);
			t_assemble(&t); /* the counters start again */
		}
		{ /* and the whole array reads as written */
			uint8_t *all = jg_alloc_blocks(nblk);

			assert_int_equal(t_io(&t, BLK_OP_READ, 0, (uint32_t)nblk, all, 0), 0);
			assert_memory_equal(all, ref, nblk * JG_BLOCK_SIZE);
			free(all);
		}
		t_stop(&t);
		assert_int_equal(t_ref_mismatches(&t, &g), 0);
		free(buf);
		free(ref);
		t_free(&t);
	}
}

/*
 * Two damaged members in one line: the block's and another data member's, or
 * the block's and P's. RAID6 rebuilds both and rewrites both (parity rewritten
 * only when it was the damaged one); RAID5 has nothing to rebuild them from:
 * -EBADMSG, no member changed, nothing counted.
 */
static void test_heal_two(void **state)
{
	static const struct geo_case cases[] = {
	    {6, 5, 2}, {6, 6, 1}, {6, 8, 8}, {5, 4, 4}, {5, 3, 2}};

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(cases); gi++) {
		const struct geo_case *gc = &cases[gi];
		struct raid_geo g;
		struct tarr t;
		uint64_t nblk;
		uint8_t *ref = t_setup(&t, gc, &nblk, &g), *buf = jg_alloc_blocks(1);

		for (unsigned int kind = 0; kind < 3; kind++) {
			/* kind 0: another data member; 1: P; 2 (RAID6): Q */
			struct t_case c = t_pick(&g, 0);
			unsigned int opos = kind == 0	? g.ndata - 1
					    : kind == 1 ? RAID_POS_P(&g)
							: RAID_POS_Q(&g);
			unsigned int orole;
			uint8_t *img[RAID_MAX_MEMBERS], *good;
			struct blk_heal h;
			int rc;

			if (kind == 2 && g.npar < 2)
				break;
			orole = raid_layout_member(&g, c.row, opos);
			good = jg_alloc_blocks(1);
			assert_true(orole != c.role);
			assert_int_equal(blk_rw(t.mem[orole], BLK_OP_READ, c.mblk, 1, good, 0), 0);
			t_damage(&t, c.role, c.mblk, 7);
			t_damage(&t, orole, c.mblk, 3000);
			for (unsigned int m = 0; m < g.n; m++)
				img[m] = t_member_image(&t, m);
			t_assemble(&t);
			rc = t_heal(&t, c.b, buf, &h);
			if (g.npar == 2) {
				assert_int_equal(rc, 0);
				assert_memory_equal(buf, ref + c.b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
				assert_int_equal(h.rewritten, (1u << c.role) | (1u << orole));
				assert_true(
				    t_member_is(&t, c.role, c.mblk, ref + c.b * JG_BLOCK_SIZE));
				assert_true(t_member_is(&t, orole, c.mblk, good));
				for (unsigned int m = 0; m < g.n; m++)
					assert_int_equal(t_corrected(&t, m),
							 m == c.role || m == orole ? 1 : 0);
				assert_int_equal(t_scrub_mismatches(&t, &g), 0);
			} else {
				assert_int_equal(rc, -EBADMSG);
				assert_int_equal(h.rewritten, 0);
				assert_int_equal(h.candidates, 2); /* as read, and from P */
				for (unsigned int m = 0; m < g.n; m++) {
					uint8_t *now = t_member_image(&t, m);

					t_data_same(now, img[m], &g, &t);
					assert_int_equal(t_corrected(&t, m), 0);
					free(now);
				}
				/* put the two blocks back for the next kind */
				t_stop(&t);
				t_damage(&t, c.role, c.mblk, 7);
				t_damage(&t, orole, c.mblk, 3000);
				t_assemble(&t);
				assert_int_equal(t_scrub_mismatches(&t, &g), 0);
			}
			t_stop(&t);
			for (unsigned int m = 0; m < g.n; m++)
				free(img[m]);
			free(good);
		}
		assert_int_equal(t_ref_mismatches(&t, &g), 0);
		free(buf);
		free(ref);
		t_free(&t);
	}
}

/*
 * Damage elsewhere in the line only (another data member, or P): the block
 * reads right, the heal says so and writes nothing -- a heal rewrites only
 * what it rebuilt for the block asked about.
 */
static void test_heal_other_only(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk;
	uint8_t *ref = t_setup(&t, &gc, &nblk, &g), *buf = jg_alloc_blocks(1);
	struct t_case c = t_pick(&g, 0);
	unsigned int prole = raid_layout_member(&g, c.row, RAID_POS_P(&g));
	uint8_t *pimg;
	struct blk_heal h;

	(void)state;
	t_damage(&t, prole, c.mblk, 9);
	pimg = t_member_image(&t, prole);
	t_assemble(&t);
	assert_int_equal(t_heal(&t, c.b, buf, &h), 0);
	assert_memory_equal(buf, ref + c.b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
	assert_int_equal(h.rewritten, 0);
	assert_int_equal(h.candidates, 1);
	t_stop(&t);
	{
		uint8_t *now = t_member_image(&t, prole);

		t_data_same(now, pimg, &g, &t);
		free(now);
	}
	assert_int_equal(t_ref_mismatches(&t, &g), 1); /* the scrub's job, not the heal's */
	free(pimg);
	free(buf);
	free(ref);
	t_free(&t);
}

/*
 * A degraded array: only what the remaining members allow. RAID6 with one
 * member missing still heals the block (from the parity left); RAID5 with one
 * missing has nothing to rebuild from: -EBADMSG, nothing written.
 */
static void test_heal_degraded(void **state)
{
	static const struct geo_case cases[] = {{6, 5, 2}, {5, 4, 4}};

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(cases); gi++) {
		const struct geo_case *gc = &cases[gi];
		struct raid_geo g;
		struct tarr t;
		uint64_t nblk;
		uint8_t *ref = t_setup(&t, gc, &nblk, &g), *buf = jg_alloc_blocks(1), *img;
		struct t_case c = t_pick(&g, 0);
		unsigned int gone = raid_layout_member(&g, c.row, 1); /* another data member */
		struct blk_heal h;
		int rc;

		t_damage(&t, c.role, c.mblk, 11);
		img = t_member_image(&t, c.role);
		assert_int_equal(t_assemble_mask(&t, ~(1u << gone), NULL), 0);
		rc = t_heal(&t, c.b, buf, &h);
		if (g.npar == 2) {
			assert_int_equal(rc, 0);
			assert_memory_equal(buf, ref + c.b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
			assert_int_equal(h.rewritten, 1u << c.role);
			assert_int_equal(h.candidates, 2); /* as read; without it and the gone */
			assert_true(t_member_is(&t, c.role, c.mblk, ref + c.b * JG_BLOCK_SIZE));
			assert_int_equal(t_corrected(&t, c.role), 1);
		} else {
			uint8_t *now;

			assert_int_equal(rc, -EBADMSG);
			assert_int_equal(h.candidates, 1);
			now = t_member_image(&t, c.role);
			t_data_same(now, img, &g, &t);
			free(now);
			assert_int_equal(t_corrected(&t, c.role), 0);
		}
		t_stop(&t);
		free(img);
		free(buf);
		free(ref);
		t_free(&t);
	}
}

/*
 * A read-only assembly hands the good version back and writes nothing; the
 * damaged member is counted all the same (heal.c (H5)).
 */
static void test_heal_readonly(void **state)
{
	static const struct geo_case gc = {6, 5, 2};
	struct raid_assemble_cfg cfg = {.readonly = true};
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk;
	uint8_t *ref = t_setup(&t, &gc, &nblk, &g), *buf = jg_alloc_blocks(1), *img, *now;
	struct t_case c = t_pick(&g, 1);
	struct blk_heal h;

	(void)state;
	t_damage(&t, c.role, c.mblk, 5);
	img = t_member_image(&t, c.role);
	assert_int_equal(t_assemble_mask(&t, ~0u, &cfg), 0);
	assert_int_equal(t_heal(&t, c.b, buf, &h), 0);
	assert_memory_equal(buf, ref + c.b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
	assert_int_equal(h.rewritten, 1u << c.role);
	assert_int_equal(t_corrected(&t, c.role), 1);
	now = t_member_image(&t, c.role);
	t_data_same(now, img, &g, &t);
	free(now);
	t_stop(&t);
	free(img);
	free(buf);
	free(ref);
	t_free(&t);
}

/*
 * (H4) An array whose filesystem journal is not replayed yet may hold stale
 * parity (the rows the journal would resync): a rebuilt block could be an
 * older version with a right checksum. No heal: -EUCLEAN, nothing written.
 * Once the journal says it replayed (BLK_CTL_CLEAR_JNL_PENDING), it heals.
 */
static void test_heal_untrusted(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk;
	uint8_t *ref = t_setup(&t, &gc, &nblk, &g), *buf = jg_alloc_blocks(1), *img, *now;
	struct t_case c = t_pick(&g, 2);
	struct blk_heal h;

	(void)state;
	t_assemble(&t);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
	t_stop(&t);
	t_damage(&t, c.role, c.mblk, 13);
	img = t_member_image(&t, c.role);
	t_assemble(&t);
	assert_int_equal(t_heal(&t, c.b, buf, &h), -EUCLEAN);
	assert_int_equal(h.rewritten, 0);
	now = t_member_image(&t, c.role);
	t_data_same(now, img, &g, &t);
	free(now);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_CLEAR_JNL_PENDING, NULL), 0);
	assert_int_equal(t_heal(&t, c.b, buf, &h), 0);
	assert_memory_equal(buf, ref + c.b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
	assert_int_equal(h.rewritten, 1u << c.role);
	t_stop(&t);
	free(img);
	free(buf);
	free(ref);
	t_free(&t);
}

struct t_conc {
	struct tarr *t;
	const uint8_t *ref;
	uint64_t b;    /* the damaged block, healed by every healer */
	uint64_t row0; /* first array block of its row */
	uint32_t row_blocks, chunk;
	int rc;		    /* first failure of a thread */
	uint32_t rewritten; /* OR of the healers' */
};

static void *t_healer(void *arg)
{
	struct t_conc *c = arg;
	uint8_t *buf = jg_alloc_blocks(1);
	uint64_t b = c->b;
	struct blk_heal h = {.blkno = b, .buf = buf, .verify = t_verify, .ctx = &b};
	int rc = blk_ctl(c->t->dev, BLK_CTL_HEAL_READ, &h);

	if (!rc && memcmp(buf, c->ref + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE))
		rc = -EILSEQ;
	if (rc)
		__atomic_store_n(&c->rc, rc, __ATOMIC_RELAXED);
	__atomic_fetch_or(&c->rewritten, h.rewritten, __ATOMIC_RELAXED);
	free(buf);
	return NULL;
}

/* Rewrites (with the same content) and reads the other lines of the row. */
static void *t_row_writer(void *arg)
{
	struct t_conc *c = arg;
	uint8_t *buf = jg_alloc_blocks(1);
	uint32_t line = (uint32_t)((c->b - c->row0) % c->chunk);

	for (unsigned int i = 0; i < 200; i++) {
		uint64_t x = c->row0 + (i * 7) % c->row_blocks;
		int rc;

		if ((x - c->row0) % c->chunk == line)
			continue; /* the damaged line: a reconstruct-write would fold the damage in
				   */
		if (i % 2)
			rc =
			    t_io(c->t, BLK_OP_WRITE, x, 1, (void *)(c->ref + x * JG_BLOCK_SIZE), 0);
		else
			rc = t_io(c->t, BLK_OP_READ, x, 1, buf, 0) ||
			     memcmp(buf, c->ref + x * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
		if (rc)
			__atomic_store_n(&c->rc, rc < 0 ? rc : -EILSEQ, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
}

/*
 * Four heals of one damaged block at once, while a thread writes and reads
 * the other lines of its row: every heal hands back the right block, the
 * member is rewritten and counted once (the row's lock serialises the heals:
 * the later ones find it right), the row is consistent after.
 */
static void test_heal_concurrent(void **state)
{
	static const struct geo_case gc = {6, 5, 4};
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, sum = 0;
	uint8_t *ref = t_setup(&t, &gc, &nblk, &g);
	struct t_case tc = t_pick(&g, 1);
	struct t_conc c = {.t = &t,
			   .ref = ref,
			   .b = tc.b,
			   .row0 = tc.row * g.row_blocks,
			   .row_blocks = g.row_blocks,
			   .chunk = g.chunk_blocks};
	pthread_t th[5];

	(void)state;
	t_damage(&t, tc.role, tc.mblk, 77);
	t_assemble(&t);
	assert_int_equal(pthread_create(&th[0], NULL, t_row_writer, &c), 0);
	for (unsigned int i = 1; i < 5; i++)
		assert_int_equal(pthread_create(&th[i], NULL, t_healer, &c), 0);
	for (unsigned int i = 0; i < 5; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.rewritten, 1u << tc.role);
	for (unsigned int m = 0; m < g.n; m++)
		sum += t_corrected(&t, m);
	assert_int_equal(sum, 1);
	assert_int_equal(t_corrected(&t, tc.role), 1);
	assert_int_equal(t_scrub_mismatches(&t, &g), 0);
	t_stop(&t);
	assert_true(t_member_is(&t, tc.role, tc.mblk, ref + tc.b * JG_BLOCK_SIZE));
	assert_int_equal(t_ref_mismatches(&t, &g), 0);
	free(ref);
	t_free(&t);
}

/* A plain device has no redundancy: -ENOTTY, the caller keeps its error. */
static void test_heal_plain_device(void **state)
{
	struct blk_dev *mem;
	uint8_t *buf = jg_alloc_blocks(1);
	uint64_t b = 3;
	struct blk_heal h = {.blkno = b, .buf = buf, .verify = t_verify, .ctx = &b};

	(void)state;
	assert_int_equal(raid_dev_mem_open("plain", 8, &mem), 0);
	assert_int_equal(blk_ctl(mem, BLK_CTL_HEAL_READ, &h), -ENOTTY);
	blk_close(mem);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_heal_one),	    cmocka_unit_test(test_heal_two),
	    cmocka_unit_test(test_heal_other_only), cmocka_unit_test(test_heal_degraded),
	    cmocka_unit_test(test_heal_readonly),   cmocka_unit_test(test_heal_untrusted),
	    cmocka_unit_test(test_heal_concurrent), cmocka_unit_test(test_heal_plain_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
