// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_readerr.c - latent sector errors (issue 22): a member
 * read that fails is reconstructed from the rest of its row, handed back right,
 * rewritten and counted; the member stays in the array until it has more than
 * max_read_errors, or a rewrite does not take. A block no other member can give
 * back is lost alone: -EIO for it, the member and the rest of the volume stay.
 */
#include "raid_test.h"

#define MEMBER_BLOCKS 160

static void t_fail_geo(const struct geo_case *g, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, g->level, g->n, g->chunk);
}

/*
 * A new array of @gc over fault members, filled with random data and stopped:
 * the reference in a new buffer, its size in *@nblk, the geometry in *@g.
 */
static uint8_t *t_filled(struct tarr *t, const struct geo_case *gc, uint64_t seed,
			 uint64_t *nblk, struct raid_geo *g)
{
	struct raid_fault_cfg fc = {.seed = 1};
	struct raid_info info;
	uint8_t *ref;

	t_make(t, gc, MEMBER_BLOCKS, RAID_RESYNC_JOURNAL, 0, &fc);
	t_assemble(t);
	raid_info_get(t->a, &info);
	*nblk = info.array_blocks;
	ref = jg_alloc_blocks(*nblk);
	assert_non_null(ref);
	t_fill(ref, *nblk, seed);
	assert_int_equal(t_io(t, BLK_OP_WRITE, 0, (uint32_t)*nblk, ref, 0), 0);
	t_stop(t);
	t_geo(t, g);
	return ref;
}

static bool t_reads_right(struct tarr *t, const uint8_t *ref, uint64_t nblk)
{
	uint8_t *buf = jg_alloc_blocks(nblk);
	bool ok = !t_io(t, BLK_OP_READ, 0, (uint32_t)nblk, buf, 0) &&
		  !memcmp(buf, ref, nblk * JG_BLOCK_SIZE);

	free(buf);
	return ok;
}

static uint64_t t_corrected(struct tarr *t, unsigned int role)
{
	struct raid_info info;

	raid_info_get(t->a, &info);
	return info.members[role].read_errors_corrected;
}

/*
 * Latent errors on every member, at data and parity blocks: a read of the whole
 * array corrects those under data, a scrub the rest; every one is counted once,
 * nothing degrades, the members hold consistent parity, a second pass finds none.
 */
static void test_readerr_corrected(void **state)
{
	static const struct geo_case *const cg = geo_readerr;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_readerr); gi++) {
		const struct geo_case *gc = &cg[gi];
		struct raid_info info;
		struct raid_geo g;
		struct tarr t;
		uint64_t nblk, total = 0;
		uint8_t *ref;

		ref = t_filled(&t, gc, 100 + gi, &nblk, &g);
		t_assemble(&t);
		for (unsigned int m = 0; m < gc->n; m++)
			for (uint64_t b = g.data_offset + m; b < t.member_blocks; b += 37) {
				assert_int_equal(raid_dev_fault_latent_block(t.top[m], b), 0);
				total++;
			}
		if (!t_reads_right(&t, ref, nblk))
			t_fail_geo(gc, "wrong data with latent errors");
		assert_int_equal(raid_scrub(t.a, false, NULL, NULL, NULL), 0);
		raid_info_get(t.a, &info);
		if (info.degraded)
			t_fail_geo(gc, "a corrected read error failed a member");
		uint64_t sum = 0;

		for (unsigned int m = 0; m < gc->n; m++) {
			sum += info.members[m].read_errors_corrected;
			assert_int_equal(info.members[m].read_errors_uncorrectable, 0);
		}
		if (sum != total)
			fail_msg("level=%u: %llu corrected, %llu latent errors", gc->level,
				 (unsigned long long)sum, (unsigned long long)total);
		/* healed by the rewrite: a second pass corrects nothing */
		if (!t_reads_right(&t, ref, nblk))
			t_fail_geo(gc, "wrong data after the corrections");
		assert_int_equal(raid_scrub(t.a, false, NULL, NULL, NULL), 0);
		raid_info_get(t.a, &info);
		for (unsigned int m = 0; m < gc->n; m++)
			sum -= info.members[m].read_errors_corrected;
		assert_int_equal(sum, 0);
		t_stop(&t);
		assert_int_equal(t_ref_mismatches(&t, &g), 0);
		free(ref);
		t_free(&t);
	}
}

/* RAID6: two bad blocks in one row (same line, two members) are still read right. */
static void test_readerr_raid6_two_in_a_row(void **state)
{
	static const struct geo_case gc = {6, 5, 4};
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk;
	uint8_t *ref;

	(void)state;
	ref = t_filled(&t, &gc, 7, &nblk, &g);
	t_assemble(&t);
	for (uint64_t row = 0; row < g.rows; row++) {
		uint64_t b = g.data_offset + row * g.chunk_blocks + row % g.chunk_blocks;

		/* the first two data positions of the row */
		assert_int_equal(raid_dev_fault_latent_block(t.top[raid_layout_member(&g, row, 0)], b), 0);
		assert_int_equal(raid_dev_fault_latent_block(t.top[raid_layout_member(&g, row, 1)], b), 0);
	}
	if (!t_reads_right(&t, ref, nblk))
		t_fail_geo(&gc, "two bad blocks in a row read wrong");
	uint64_t sum = 0;

	for (unsigned int m = 0; m < gc.n; m++)
		sum += t_corrected(&t, m);
	assert_int_equal(sum, 2 * g.rows);
	t_stop(&t);
	assert_int_equal(t_ref_mismatches(&t, &g), 0);
	free(ref);
	t_free(&t);
}

/*
 * A degraded RAID5 and a read error: only that block is lost, with the missing
 * member's block of the same line (nothing else can give that one back either).
 * Reads that cover them get -EIO; reads of every other block are right; the
 * member with the error stays in the array, its uncorrectable count says so.
 */
static void test_readerr_degraded_loses_one_block(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct raid_info info;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, lost = UINT64_MAX, lost2 = UINT64_MAX, mblk;
	uint8_t *ref, *buf = jg_alloc_blocks(1);
	unsigned int bad_role = 1, row = 3;

	(void)state;
	ref = t_filled(&t, &gc, 9, &nblk, &g);
	/* member 3 gone; member 1 has a latent error in a data chunk of row 3, line 2 */
	for (unsigned int d = 0; d < g.ndata; d++) {
		uint64_t b = (uint64_t)row * g.ndata * g.chunk_blocks + d * g.chunk_blocks + 2;

		if (raid_layout_member(&g, row, d) == bad_role)
			lost = b;
		if (raid_layout_member(&g, row, d) == 3)
			lost2 = b;
	}
	assert_true(lost != UINT64_MAX);
	mblk = g.data_offset + row * g.chunk_blocks + 2;
	assert_int_equal(raid_dev_fault_latent_block(t.top[bad_role], mblk), 0);
	assert_int_equal(t_assemble_mask(&t, ~(1u << 3), NULL), 0);
	for (uint64_t b = 0; b < nblk; b++) {
		int rc = t_io(&t, BLK_OP_READ, b, 1, buf, 0);

		if (b == lost || b == lost2) {
			assert_int_equal(rc, -EIO);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_memory_equal(buf, ref + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
	}
	raid_info_get(t.a, &info);
	assert_false(info.members[bad_role].failed);
	assert_int_equal(info.members[bad_role].read_errors_uncorrectable, lost2 == UINT64_MAX ? 1 : 2);
	assert_int_equal(info.members[bad_role].read_errors_corrected, 0);
	/*
	 * Not built yet: a write of the lost block cannot heal it, the degraded
	 * row path reads every line of the row first and fails on it (-EIO, the
	 * row kept dirty). The array stays up: another row takes writes.
	 */
	assert_int_equal(t_io(&t, BLK_OP_WRITE, lost, 1, ref + lost * JG_BLOCK_SIZE, 0), -EIO);
	raid_info_get(t.a, &info);
	assert_false(info.members[bad_role].failed);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, 1, ref, 0), 0);
	assert_int_equal(t_io(&t, BLK_OP_READ, 0, 1, buf, 0), 0);
	assert_memory_equal(buf, ref, JG_BLOCK_SIZE);
	t_stop(&t);
	free(buf);
	free(ref);
	t_free(&t);
}

/*
 * An error storm: more corrected errors than max_read_errors fail the member
 * (the data stays right, degraded); a block that reads wrong after its rewrite
 * (a sticky error, not a remappable sector) fails it at once.
 */
static void test_readerr_storm_fails_member(void **state)
{
	static const struct geo_case gc = {5, 4, 4};

	(void)state;
	for (unsigned int sticky = 0; sticky < 2; sticky++) {
		struct raid_assemble_cfg cfg = {.max_read_errors = 3};
		struct raid_info info;
		struct raid_geo g;
		struct tarr t;
		uint64_t nblk;
		uint8_t *ref;

		ref = t_filled(&t, &gc, 11, &nblk, &g);
		for (uint64_t b = g.data_offset; b < t.member_blocks; b += 9)
			assert_int_equal(sticky ? raid_dev_fault_fail_block(t.top[2], b, true, false)
						: raid_dev_fault_latent_block(t.top[2], b),
					 0);
		assert_int_equal(t_assemble_mask(&t, ~0u, &cfg), 0);
		if (!t_reads_right(&t, ref, nblk))
			fail_msg("sticky=%u: wrong data in an error storm", sticky);
		raid_info_get(t.a, &info);
		assert_true(info.members[2].failed);
		assert_true(info.degraded);
		assert_int_equal(info.members[2].read_errors_corrected, sticky ? 0 : 4);
		if (!t_reads_right(&t, ref, nblk))
			fail_msg("sticky=%u: wrong data degraded", sticky);
		t_stop(&t);
		free(ref);
		t_free(&t);
	}
}

/*
 * A read-only array reads around a latent error and writes nothing: the error
 * stays, is met again at every read, and never fails the member.
 */
static void test_readerr_readonly_reads_around(void **state)
{
	static const struct geo_case gc = {5, 3, 4};
	struct raid_assemble_cfg cfg = {.readonly = true, .max_read_errors = 1};
	struct raid_info info;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, writes;
	uint8_t *ref;

	(void)state;
	ref = t_filled(&t, &gc, 15, &nblk, &g);
	for (uint64_t b = g.data_offset; b < t.member_blocks; b += 5)
		assert_int_equal(raid_dev_fault_latent_block(t.top[0], b), 0);
	assert_int_equal(t_assemble_mask(&t, ~0u, &cfg), 0);
	writes = raid_fault_domain_writes(t.dom);
	for (unsigned int pass = 0; pass < 2; pass++)
		if (!t_reads_right(&t, ref, nblk))
			fail_msg("pass %u: wrong data read-only", pass);
	raid_info_get(t.a, &info);
	assert_false(info.degraded);
	assert_true(info.members[0].read_errors_corrected >= 4);
	assert_int_equal(raid_fault_domain_writes(t.dom), writes);
	t_stop(&t);
	free(ref);
	t_free(&t);
}

/* A latent error on a surviving member met by a RAID6 rebuild: read around, rewritten. */
static void test_readerr_during_rebuild(void **state)
{
	static const struct geo_case gc = {6, 5, 4};
	struct raid_info info;
	struct raid_geo g;
	struct blk_dev *nm;
	struct tarr t;
	uint64_t nblk;
	uint8_t *ref;

	(void)state;
	ref = t_filled(&t, &gc, 13, &nblk, &g);
	for (uint64_t b = g.data_offset + 1; b < t.member_blocks; b += 11)
		assert_int_equal(raid_dev_fault_latent_block(t.top[3], b), 0);
	assert_int_equal(t_assemble_mask(&t, ~(1u << 0), NULL), 0);
	assert_int_equal(raid_dev_mem_open("new0", t.member_blocks, &nm), 0);
	assert_int_equal(raid_rebuild(t.a, 0, nm, NULL, NULL), 0);
	raid_info_get(t.a, &info);
	assert_false(info.degraded);
	assert_true(info.members[3].read_errors_corrected > 0);
	assert_int_equal(raid_scrub(t.a, false, NULL, NULL, NULL), 0);
	if (!t_reads_right(&t, ref, nblk))
		t_fail_geo(&gc, "wrong data after a rebuild over latent errors");
	t_stop(&t);
	free(ref);
	t_free(&t);
}

/*
 * (W7) A read error in a row whose parity is not trusted (heal.c (H4)): the
 * array was left dirty with a data block written and its parity not (the
 * write hole), and is assembled without its resync. Rebuilt from that parity
 * the block would be wrong: the read fails with -EIO, and nothing is written
 * back; the member stays. A parity block rebuilt from the data is repaired.
 */
static void test_readerr_untrusted_parity_not_repaired(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct raid_assemble_cfg cfg = {.no_resync = true};
	struct raid_info info;
	struct raid_geo g;
	struct tarr t;
	uint64_t nblk, row = 2, mblk, writes;
	unsigned int r0, r1, rp;
	uint8_t *ref, *buf = jg_alloc_blocks(1), *blk = jg_alloc_blocks(1);

	(void)state;
	ref = t_filled(&t, &gc, 17, &nblk, &g);
	/* dirty: written, then the process dies (no stop) */
	t_assemble(&t);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, 1, ref, 0), 0);
	raid_abandon(t.a);
	t.a = NULL;
	/* the write hole: data position 1 of the row holds a new block, its parity the old */
	r0 = raid_layout_member(&g, row, 0);
	r1 = raid_layout_member(&g, row, 1);
	mblk = g.data_offset + row * g.chunk_blocks;
	t_fill(blk, 1, 99);
	assert_int_equal(blk_rw(t.mem[r1], BLK_OP_WRITE, mblk, 1, blk, 0), 0);
	assert_int_equal(raid_dev_fault_latent_block(t.top[r0], mblk), 0);
	assert_int_equal(t_assemble_mask(&t, ~0u, &cfg), 0);
	writes = raid_fault_domain_writes(t.dom);
	assert_int_equal(t_io(&t, BLK_OP_READ, row * g.row_blocks, 1, buf, 0), -EIO);
	assert_int_equal(raid_fault_domain_writes(t.dom), writes); /* nothing written back */
	raid_info_get(t.a, &info);
	assert_false(info.degraded);
	assert_int_equal(info.members[r0].read_errors_corrected, 0);
	/* the member's block is as it was */
	assert_int_equal(blk_rw(t.mem[r0], BLK_OP_READ, mblk, 1, blk, 0), 0);
	assert_memory_equal(blk, ref + row * g.row_blocks * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
	/*
	 * A parity block needs no trusted parity: rebuilt from the data it is
	 * what a resync writes. A read-modify-write of line 1 reads it: repaired.
	 */
	rp = raid_layout_member(&g, row, RAID_POS_P(&g));
	assert_int_equal(raid_dev_fault_latent_block(t.top[rp], mblk + 1), 0);
	t.a->test.partial = RAID_PARTIAL_RMW;
	t_fill(blk, 1, 98);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, row * g.row_blocks + 1, 1, blk, 0), 0);
	assert_int_equal(t_io(&t, BLK_OP_READ, row * g.row_blocks + 1, 1, buf, 0), 0);
	assert_memory_equal(buf, blk, JG_BLOCK_SIZE);
	raid_info_get(t.a, &info);
	assert_int_equal(info.members[rp].read_errors_corrected, 1);
	assert_false(info.degraded);
	free(buf);
	free(blk);
	free(ref);
	t_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readerr_corrected),
		cmocka_unit_test(test_readerr_raid6_two_in_a_row),
		cmocka_unit_test(test_readerr_degraded_loses_one_block),
		cmocka_unit_test(test_readerr_storm_fails_member),
		cmocka_unit_test(test_readerr_readonly_reads_around),
		cmocka_unit_test(test_readerr_during_rebuild),
		cmocka_unit_test(test_readerr_untrusted_parity_not_repaired),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
