// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_maxmembers.c - arrays of RAID_MAX_MEMBERS (32) members,
 * RAID4, RAID5 and RAID6, where a role mask has every bit in use and roles
 * 31 and 30 are the ones lost: written, a member failed (two for RAID6), stopped
 * and assembled again (a superblock's failed_mask was once tested by a shift
 * of 32 bits, which rejected every superblock of such an array), read
 * degraded; a rebuild paused, assembled again (recovery_mask) and resumed; the
 * other lost member rebuilt; a member failed in the run brought back by readd
 * (only the rows it missed); scrubbed with no mismatch, by the array and by a
 * byte-wise reference; assembled whole and read back.
 */
#include <errno.h>
#include <stdlib.h>

#include "raid_test.h"

static const struct geo_case *const geos = geo_max;
#define NGEO GEO_N(geo_max)
#define MB 288 /* blocks per member: with chunk 1 a rebuild pauses after its first group */

static void t_fail(const struct geo_case *gc, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, gc->level, gc->n, gc->chunk);
}

/* The whole array read back must be @model. */
static void t_read_check(struct tarr *t, const struct geo_case *gc, const uint8_t *model,
			 const char *when)
{
	struct raid_info info;
	uint8_t *rd;

	raid_info_get(t->a, &info);
	rd = jg_alloc_blocks(info.array_blocks);
	assert_non_null(rd);
	assert_int_equal(t_io(t, BLK_OP_READ, 0, (uint32_t)info.array_blocks, rd, 0), 0);
	for (uint64_t b = 0; b < info.array_blocks; b++)
		if (memcmp(rd + b * JG_BLOCK_SIZE, model + b * JG_BLOCK_SIZE, JG_BLOCK_SIZE)) {
			free(rd);
			fail_msg("%s: level=%u members=%u: array block %llu differs", when,
				 gc->level, gc->n, (unsigned long long)b);
		}
	free(rd);
}

/* Write every @every-th row's first block anew from @seed, in the model too. */
static void t_write_rows(struct tarr *t, const struct raid_geo *g, uint8_t *model, uint64_t every,
			 uint64_t seed)
{
	for (uint64_t r = 0; r < g->rows; r += every) {
		uint64_t b = r * g->row_blocks;

		t_fill(model + b * JG_BLOCK_SIZE, 1, seed + r);
		assert_int_equal(t_io(t, BLK_OP_WRITE, b, 1, model + b * JG_BLOCK_SIZE, 0), 0);
	}
	assert_int_equal(t_io(t, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);
}

/* Stop, then assemble from the members in @mask; must come up. */
static void t_reassemble(struct tarr *t, const struct geo_case *gc, uint32_t mask,
			 const char *when)
{
	int rc;

	t_stop(t);
	rc = t_assemble_mask(t, mask, NULL);
	if (rc)
		fail_msg("%s: level=%u members=%u: assembly refused: %d", when, gc->level, gc->n,
			 rc);
}

/* A rebuild's progress callback that stops it at its first call. */
static int t_pause(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	(void)done;
	(void)total;
	return 1;
}

/*
 * Rebuild role @k onto a new memory device, which the test keeps and adds to
 * *@given; with @pause stopped at once, assembled again and resumed.
 */
static void t_rebuild_new(struct tarr *t, const struct geo_case *gc, unsigned int k,
			  uint32_t *given, bool pause)
{
	struct raid_info info;
	struct blk_dev *nd;
	char name[16];

	snprintf(name, sizeof(name), "new%u", k);
	assert_int_equal(raid_dev_mem_open(name, t->member_blocks, &nd), 0);
	if (pause) {
		/* (R4) paused: the role is recorded being rebuilt (recovery_mask bit @k) */
		assert_int_equal(raid_rebuild(t->a, k, t_keep(nd), t_pause, NULL), -ECANCELED);
	}
	blk_close(t->mem[k]);
	t->mem[k] = t->top[k] = nd;
	*given |= 1u << k;
	if (pause) {
		t_reassemble(t, gc, *given, "assembled with role 31 being rebuilt");
		raid_info_get(t->a, &info);
		if (!info.members[k].rebuilding)
			t_fail(gc, "the paused rebuild is not assembled being rebuilt");
		assert_int_equal(raid_rebuild(t->a, k, NULL, NULL, NULL), 0);
	} else {
		assert_int_equal(raid_rebuild(t->a, k, t_keep(nd), NULL, NULL), 0);
	}
	raid_info_get(t->a, &info);
	if (info.members[k].failed || info.members[k].rebuilding)
		t_fail(gc, "the rebuilt member is not a working member");
}

static void t_max_one(const struct geo_case *gc)
{
	unsigned int nlost = gc->level == 6 ? 2 : 1, lost[2] = {gc->n - 1, gc->n - 2}, k = 5;
	uint32_t given = raid_role_mask_all(gc->n);
	struct raid_info info;
	struct raid_geo g;
	uint8_t *model;
	struct tarr t;

	t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 8, NULL);
	t_geo(&t, &g);
	t_assemble(&t);
	raid_info_get(t.a, &info);
	assert_int_equal(info.nmembers, RAID_MAX_MEMBERS);
	model = jg_alloc_blocks(info.array_blocks);
	assert_non_null(model);
	t_fill(model, info.array_blocks, 100 + gc->level);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, model, 0), 0);
	assert_int_equal(t_io(&t, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);

	/* lose the highest roles: failed_mask bit 31 (and 30) in the superblocks */
	for (unsigned int j = 0; j < nlost; j++) {
		assert_int_equal(raid_fail_member(t.a, lost[j]), 0);
		given &= ~(1u << lost[j]);
	}
	t_write_rows(&t, &g, model, 3, 1000);
	t_reassemble(&t, gc, given, "assembled degraded, roles 31 (30) failed and not given");
	t_reassemble(&t, gc, given, "assembled degraded a second time");
	raid_info_get(t.a, &info);
	if (!info.degraded)
		t_fail(gc, "assembled whole with its failed members");
	t_read_check(&t, gc, model, "read degraded after assembly");

	/* role 31 rebuilt with a pause and an assembly between; role 30 at once */
	t_rebuild_new(&t, gc, lost[0], &given, true);
	if (nlost == 2)
		t_rebuild_new(&t, gc, lost[1], &given, false);
	raid_info_get(t.a, &info);
	if (info.degraded)
		t_fail(gc, "degraded after the rebuilds");

	/* role @k fails in this run, rows are written, it comes back: readd (the
	 * rebuilds' rows flushed first, else it missed them all: away.c (A1)) */
	assert_int_equal(t_io(&t, BLK_OP_FLUSH, 0, 0, NULL, 0), 0);
	assert_int_equal(raid_fail_member(t.a, k), 0);
	t_write_rows(&t, &g, model, 7, 2000);
	assert_int_equal(raid_readd(t.a, k, t_keep(t.mem[k]), 0, NULL, NULL), 0);
	raid_info_get(t.a, &info);
	if (info.degraded || !info.rebuild_last_readd || info.rebuild_last_rows >= g.rows)
		fail_msg("level=%u members=%u: the readd rebuilt %llu of %llu rows (readd=%d degraded=%d), not only those missed",
			 gc->level, gc->n, (unsigned long long)info.rebuild_last_rows,
			 (unsigned long long)g.rows, info.rebuild_last_readd, info.degraded);

	if (raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
		t_fail(gc, "scrub found mismatches");
	t_read_check(&t, gc, model, "read after rebuild and readd");
	t_stop(&t);
	if (t_ref_mismatches(&t, &g))
		t_fail(gc, "the reference finds rows whose parity does not match");

	t_assemble(&t);
	raid_info_get(t.a, &info);
	if (info.degraded || info.was_dirty)
		t_fail(gc, "not whole and clean at the last assembly");
	t_read_check(&t, gc, model, "read after the last assembly");
	t_stop(&t);
	free(model);
	t_free(&t);
}

static void test_maxmembers_fail_rebuild_readd_scrub(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++)
		t_max_one(&geos[gi]);
}

/* The role mask of every member (include/jgrfs/raid.h) at each width. */
static void test_maxmembers_role_mask(void **state)
{
	(void)state;
	assert_int_equal(raid_role_mask_all(1), 1u);
	assert_int_equal(raid_role_mask_all(3), 7u);
	assert_int_equal(raid_role_mask_all(31), 0x7fffffffu);
	assert_int_equal(raid_role_mask_all(RAID_MAX_MEMBERS), 0xffffffffu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_maxmembers_role_mask),
	    cmocka_unit_test(test_maxmembers_fail_rebuild_readd_scrub),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
