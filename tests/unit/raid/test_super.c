// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_super.c - member superblocks, create and assembly: members
 * in any order, bad input (wrong magic, bad crc, two arrays, a duplicated member,
 * too few members, a stale member) refused with nothing written, dirty+degraded
 * refused without force, the jnl-pending flag across stop/assemble (it counts as
 * dirty: stop keeps it, degraded assembly and failing a member are refused), a
 * data area past 64 bits or a bitmap policy without a bitmap refused, read-only,
 * torn superblock copies and power cuts at every superblock write (S8), a member
 * whose copies are both damaged left out (S12), a member left out refused with
 * need_all and the caller's check_fn refusing before any write (S13).
 */
#include "raid_test.h"

static const struct geo_case *const geos = geo_super;
#define NGEO GEO_N(geo_super)
#define MB 96

static void t_fail(const struct geo_case *g, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u", what, g->level, g->n, g->chunk);
}

/* Images of every member, to prove a refused assembly wrote nothing. */
struct t_snap {
	uint8_t *img[RAID_MAX_MEMBERS];
	unsigned int n;
};

static void t_snap_take(struct tarr *t, struct t_snap *s)
{
	s->n = t->n;
	for (unsigned int i = 0; i < t->n; i++)
		s->img[i] = t_member_image(t, i);
}

static void t_snap_same(struct tarr *t, struct t_snap *s, const struct geo_case *gc)
{
	for (unsigned int i = 0; i < s->n; i++) {
		uint8_t *now = t_member_image(t, i);

		if (memcmp(now, s->img[i], t->member_blocks * JG_BLOCK_SIZE))
			t_fail(gc, "a refused assembly wrote to a member");
		free(now);
		free(s->img[i]);
	}
}

static void test_super_any_order(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct blk_dev *devs[RAID_MAX_MEMBERS];
		struct raid_array *a;
		struct raid_info info;
		struct tarr t;
		uint64_t ev;

		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 16, NULL);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		ev = info.events;
		if (info.was_dirty || info.degraded || info.level != gc->level ||
		    info.nmembers != gc->n)
			t_fail(gc, "fresh array info wrong");
		t_stop(&t);
		/* reversed order */
		for (unsigned int i = 0; i < gc->n; i++)
			devs[i] = t_keep(t.top[gc->n - 1 - i]);
		assert_int_equal(raid_assemble(devs, gc->n, NULL, &a), 0);
		raid_info_get(a, &info);
		if (!jg_seq_after(info.events, ev) || info.was_dirty)
			t_fail(gc, "events did not advance or clean array seen dirty");
		for (unsigned int i = 0; i < gc->n; i++)
			if (strcmp(info.members[i].name, t.top[i]->name))
				t_fail(gc, "role order not restored");
		assert_int_equal(raid_stop(a), 0);
		t_free(&t);
	}
}

static void test_super_bad_input_writes_nothing(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct blk_dev *devs[RAID_MAX_MEMBERS + 1];
		struct tarr t, other;
		struct raid_array *a;
		struct t_snap s;
		uint8_t *b = jg_alloc_blocks(2); /* both superblock copies (S8) */
		int rc;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 16, NULL);
		t_make(&other, gc, MB, RAID_RESYNC_BITMAP, 16, NULL);

		/* wrong magic, in both copies */
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 2, b, 0), 0);
		{
			uint8_t *z = jg_zalloc_blocks(2);

			assert_int_equal(blk_rw(t.mem[1], BLK_OP_WRITE, 0, 2, z, 0), 0);
			free(z);
		}
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~0u, NULL) != -EINVAL)
			t_fail(gc, "wrong magic accepted");
		t_snap_same(&t, &s, gc);
		/* (a bad crc in both copies is a damaged member, left out: test_super_damaged_left_out) */
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_WRITE, 0, 2, b, 0), 0);

		/* a member of another array */
		t_snap_take(&t, &s);
		for (unsigned int i = 0; i < gc->n; i++)
			devs[i] = t_keep(i == 2 ? other.top[2] : t.top[i]);
		rc = raid_assemble(devs, gc->n, NULL, &a);
		for (unsigned int i = 0; i < gc->n; i++)
			blk_close(devs[i]);
		if (rc != -EINVAL)
			t_fail(gc, "member of another array accepted");
		t_snap_same(&t, &s, gc);

		/* a duplicated member (given twice, instead of another) */
		t_snap_take(&t, &s);
		for (unsigned int i = 0; i < gc->n; i++)
			devs[i] = t_keep(t.top[i == 1 ? 0 : i]);
		rc = raid_assemble(devs, gc->n, NULL, &a);
		for (unsigned int i = 0; i < gc->n; i++)
			blk_close(devs[i]);
		if (rc != -EINVAL)
			t_fail(gc, "duplicated member accepted");
		t_snap_same(&t, &s, gc);

		/* too few members */
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, gc->level == 6 ? ~7u : ~3u, NULL) != -EINVAL)
			t_fail(gc, "too few members accepted");
		t_snap_same(&t, &s, gc);

		/* a stale member: the array went on without role 0 */
		assert_int_equal(t_assemble_mask(&t, ~1u, NULL), 0);
		t_stop(&t);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~0u, NULL) != -EUCLEAN)
			t_fail(gc, "stale member accepted");
		t_snap_same(&t, &s, gc);

		/* a newer format version */
		assert_int_equal(t_assemble_mask(&t, ~1u, NULL), 0);
		t_stop(&t);
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 2, b, 0), 0);
		for (unsigned int c = 0; c < 2; c++) {
			uint8_t *cb = b + (size_t)c * JG_BLOCK_SIZE;

			((struct raid_sb *)cb)->hdr.version = jg_cpu_to_le16(RAID_FORMAT_VERSION + 1);
			jg_blk_crc_set(cb, JG_BLOCK_SIZE, jg_crc_seed(((struct raid_sb *)cb)->uuid));
		}
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_WRITE, 0, 2, b, 0), 0);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~1u, NULL) != -EOPNOTSUPP)
			t_fail(gc, "newer version accepted");
		t_snap_same(&t, &s, gc);

		free(b);
		t_free(&t);
		t_free(&other);
	}
}

static void test_super_dirty_degraded_needs_force(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct raid_assemble_cfg force = {.force = true};
		struct raid_info info;
		struct tarr t;
		struct t_snap s;

		t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		raid_abandon(t.a); /* crash: dirty */
		t.a = NULL;
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~1u, NULL) != -EUCLEAN)
			t_fail(gc, "dirty degraded array assembled without force");
		t_snap_same(&t, &s, gc);
		assert_int_equal(t_assemble_mask(&t, ~1u, &force), 0);
		raid_info_get(t.a, &info);
		if (!info.was_dirty || !info.degraded)
			t_fail(gc, "forced assembly info wrong");
		t_stop(&t);
		t_free(&t);
	}
}

static void test_super_create_refuses_existing(void **state)
{
	static const struct geo_case gc = {5, 3, 2};
	struct raid_create_cfg cfg = {.level = 5, .chunk_blocks = 2, .resync = RAID_RESYNC_FULL};
	struct blk_dev *devs[3];
	struct tarr t;

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_FULL, 0, NULL);
	for (unsigned int i = 0; i < 3; i++)
		devs[i] = t.mem[i];
	assert_int_equal(raid_create(devs, 3, &cfg, false), -EEXIST);
	assert_int_equal(raid_create(devs, 3, &cfg, true), 0);
	cfg.level = 7;
	assert_int_equal(raid_create(devs, 3, &cfg, true), -EINVAL);
	cfg.level = 5;
	cfg.chunk_blocks = 3;
	assert_int_equal(raid_create(devs, 3, &cfg, true), -EINVAL);
	t_free(&t);
}

/*
 * raid_create_size and raid_create_map (what a command checks before it
 * writes, issue 44) say what raid_create then makes: the array's size for each
 * level and policy, members too small for a row refused by both, and the
 * member block that array blocks land on.
 */
static void test_super_create_size_and_map(void **state)
{
	static const struct {
		unsigned int level, n;
		uint32_t chunk;
		enum raid_resync_policy resync;
		uint64_t mblocks;
	} cs[] = {
		{ 5, 3, 16, RAID_RESYNC_JOURNAL, 6144 }, { 6, 4, 4, RAID_RESYNC_BITMAP, 1000 },
		{ 4, 3, 2, RAID_RESYNC_FULL, 97 },	  { 5, 5, 1, RAID_RESYNC_OFF, 40 },
		{ 6, 5, 8, RAID_RESYNC_JOURNAL, 777 },	  { 5, 3, 16, RAID_RESYNC_JOURNAL, 31 },
		{ 5, 3, 16, RAID_RESYNC_OFF, 31 },
	};
	uint8_t *buf = jg_alloc_blocks(1), *got = jg_alloc_blocks(1);

	(void)state;
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		struct raid_create_cfg cfg = { .level = cs[c].level, .chunk_blocks = cs[c].chunk,
					       .resync = cs[c].resync };
		struct raid_assemble_cfg acfg = { 0 };
		struct blk_dev *devs[8];
		struct raid_array *a;
		struct raid_info info;
		uint64_t ab = 1, at[2], mb;
		unsigned int role;
		int rc;

		for (unsigned int i = 0; i < cs[c].n; i++)
			assert_int_equal(raid_dev_mem_open("m", cs[c].mblocks, &devs[i]), 0);
		rc = raid_create_size(&cfg, cs[c].n, cs[c].mblocks, &ab);
		if (rc) {
			assert_int_equal(rc, -ENOSPC);
			assert_int_equal(ab, 0);
			assert_int_equal(raid_create(devs, cs[c].n, &cfg, false), -EINVAL);
			for (unsigned int i = 0; i < cs[c].n; i++)
				blk_close(devs[i]);
			continue;
		}
		assert_int_equal(raid_create(devs, cs[c].n, &cfg, false), 0);
		assert_int_equal(raid_assemble(devs, cs[c].n, &acfg, &a), 0);
		raid_info_get(a, &info);
		assert_int_equal(info.array_blocks, ab);
		at[0] = 0;
		at[1] = ab - 1;
		for (unsigned int k = 0; k < 2; k++) {
			memset(buf, 0x5a + (int)k, JG_BLOCK_SIZE);
			assert_int_equal(blk_rw(raid_array_dev(a), BLK_OP_WRITE, at[k], 1, buf, 0), 0);
			assert_int_equal(raid_create_map(&cfg, cs[c].n, cs[c].mblocks, at[k], &role,
							 &mb),
					 0);
			assert_true(role < cs[c].n);
			assert_int_equal(blk_rw(devs[role], BLK_OP_READ, mb, 1, got, 0), 0);
			assert_memory_equal(got, buf, JG_BLOCK_SIZE);
		}
		assert_int_equal(raid_create_map(&cfg, cs[c].n, cs[c].mblocks, ab, &role, &mb),
				 -EINVAL);
		assert_int_equal(raid_stop(a), 0);
	}
	free(buf);
	free(got);
}

static void test_super_jnl_pending_persists(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct raid_info info;
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 16, NULL);
		t_assemble(&t);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_JNL_PENDING, NULL), 0);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_JNL_PENDING, NULL), 1);
		t_stop(&t);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		if (blk_ctl(t.dev, BLK_CTL_GET_JNL_PENDING, NULL) != 1 || !info.jnl_pending)
			t_fail(gc, "jnl-pending lost across stop/assemble");
		/* durable at once: a crash right after setting keeps it too */
		raid_abandon(t.a);
		t.a = NULL;
		t_assemble(&t);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_JNL_PENDING, NULL), 1);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_CLEAR_JNL_PENDING, NULL), 0);
		raid_abandon(t.a);
		t.a = NULL;
		t_assemble(&t);
		if (blk_ctl(t.dev, BLK_CTL_GET_JNL_PENDING, NULL) != 0)
			t_fail(gc, "jnl-pending clear lost");
		t_stop(&t);
		t_free(&t);
	}
}

static void test_super_readonly_writes_nothing(void **state)
{
	static const struct geo_case gc = {6, 5, 2};
	struct raid_assemble_cfg ro = {.readonly = true};
	struct tarr t;
	struct t_snap s;
	uint8_t *b = jg_zalloc_blocks(1);

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_FULL, 0, NULL);
	t_assemble(&t);
	raid_abandon(t.a);
	t.a = NULL;
	t_snap_take(&t, &s);
	assert_int_equal(t_assemble_mask(&t, ~0u, &ro), 0);
	assert_int_equal(t_io(&t, BLK_OP_READ, 0, 1, b, 0), 0);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, 1, b, 0), -EROFS);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), -EROFS);
	t_stop(&t);
	t_snap_same(&t, &s, &gc);
	free(b);
	t_free(&t);
}

static void test_super_fail_member(void **state)
{
	static const struct geo_case gc = {6, 5, 2};
	struct raid_info info;
	struct tarr t;
	uint8_t *b = jg_alloc_blocks(1);

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_FULL, 0, NULL);
	t_assemble(&t);
	assert_int_equal(raid_fail_member(t.a, 3), 0);
	assert_int_equal(raid_fail_member(t.a, 1), 0);
	assert_int_equal(raid_fail_member(t.a, 0), -EIO); /* a third: no redundancy left */
	raid_info_get(t.a, &info);
	assert_true(info.degraded && info.members[3].failed && info.members[1].failed);
	assert_false(info.members[0].failed);
	assert_int_equal(blk_rw(t.mem[0], BLK_OP_READ, 0, 1, b, 0), 0);
	assert_int_equal(jg_le32(((struct raid_sb *)b)->failed_mask), (1u << 3) | (1u << 1));
	t_stop(&t);
	free(b);
	t_free(&t);
}

/* A crash during a superblock round leaves members one event apart: accepted. */
static void test_super_crash_during_sb_round(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint8_t *old = jg_alloc_blocks(2); /* both superblock copies (S8) */
		struct raid_info info;
		struct tarr t;
		struct t_snap s;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 16, NULL);
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 2, old, 0), 0);
		/* assembly's dirty round reached every member but member 1 */
		t_assemble(&t);
		raid_abandon(t.a);
		t.a = NULL;
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_WRITE, 0, 2, old, 0), 0);
		if (t_assemble_mask(&t, ~0u, NULL))
			t_fail(gc, "member one superblock round behind refused");
		raid_info_get(t.a, &info);
		if (!info.was_dirty || info.degraded)
			t_fail(gc, "one-behind assembly state wrong");
		t_stop(&t);
		/* two rounds behind: stale */
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 2, old, 0), 0);
		t_assemble(&t);
		t_stop(&t);
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_WRITE, 0, 2, old, 0), 0);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~0u, NULL) != -EUCLEAN)
			t_fail(gc, "member two rounds behind accepted");
		t_snap_same(&t, &s, gc);
		free(old);
		t_free(&t);
	}
}

/* A member absent at a degraded assembly is recorded failed: one behind is not enough. */
static void test_super_absent_member_recorded(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint8_t *b = jg_zalloc_blocks(1);
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL);
		assert_int_equal(t_assemble_mask(&t, ~1u, NULL), 0);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, 1, b, 0), 0);
		raid_abandon(t.a); /* crash: member 0 is exactly one round behind */
		t.a = NULL;
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 1, b, 0), 0);
		if (!(jg_le32(((struct raid_sb *)b)->failed_mask) & 1u))
			t_fail(gc, "absent member not recorded failed");
		if (t_assemble_mask(&t, ~0u, &(struct raid_assemble_cfg){.force = true}) !=
		    -EUCLEAN)
			t_fail(gc, "member absent at the last assembly accepted back");
		free(b);
		t_free(&t);
	}
}

/* Read member @i's superblock into @b. */
static void t_sb_read(struct tarr *t, unsigned int i, uint8_t *b)
{
	assert_int_equal(blk_rw(t->mem[i], BLK_OP_READ, RAID_SB_BLKNO, 1, b, 0), 0);
}

/* Rewrite every member's superblock through @edit, crc resealed. */
static void t_sb_edit_all(struct tarr *t, void (*edit)(struct raid_sb *sb))
{
	uint8_t *b = jg_alloc_blocks(1);

	for (unsigned int i = 0; i < t->n; i++) {
		t_sb_read(t, i, b);
		edit((struct raid_sb *)b);
		jg_blk_crc_set(b, JG_BLOCK_SIZE, jg_crc_seed(((struct raid_sb *)b)->uuid));
		assert_int_equal(blk_rw(t->mem[i], BLK_OP_WRITE, RAID_SB_BLKNO, 1, b, 0), 0);
	}
	free(b);
}

/* (S6) A run that set jnl-pending and stopped without clearing it (a mount that
 * failed after assembly) leaves the array dirty, and still pending. */
static void test_super_stop_keeps_pending_dirty(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint8_t *b = jg_alloc_blocks(1);
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 16, NULL);
		t_assemble(&t);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
		t_stop(&t);
		for (unsigned int i = 0; i < gc->n; i++) {
			const struct raid_sb *sb = (const struct raid_sb *)b;

			t_sb_read(&t, i, b);
			if (jg_le32(sb->state) != RAID_STATE_DIRTY)
				t_fail(gc, "stop of a jnl-pending array marked it clean");
			if (!(jg_le32(sb->flags) & RAID_SB_FLAG_JNL_PENDING))
				t_fail(gc, "stop of a jnl-pending array lost the flag");
		}
		/* cleared by the journal: the next stop is clean */
		t_assemble(&t);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_CLEAR_JNL_PENDING, NULL), 0);
		t_stop(&t);
		t_sb_read(&t, 0, b);
		if (jg_le32(((struct raid_sb *)b)->state) != RAID_STATE_CLEAN)
			t_fail(gc, "stop after the journal cleared jnl-pending not clean");
		free(b);
		t_free(&t);
	}
}

static void t_sb_mark_clean(struct raid_sb *sb)
{
	sb->state = jg_cpu_to_le32(RAID_STATE_CLEAN);
}

/* (S6) with (S4): a pending array is refused degraded without force, even when its
 * superblocks say clean (written by a stop that ignored the flag). */
static void test_super_pending_degraded_needs_force(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct raid_assemble_cfg force = {.force = true};
		struct tarr t;
		struct t_snap s;

		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 16, NULL);
		t_assemble(&t);
		assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
		raid_abandon(t.a);
		t.a = NULL;
		t_sb_edit_all(&t, t_sb_mark_clean);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~1u, NULL) != -EUCLEAN)
			t_fail(gc, "jnl-pending degraded array assembled without force");
		t_snap_same(&t, &s, gc);
		assert_int_equal(t_assemble_mask(&t, ~1u, &force), 0);
		t_stop(&t);
		t_free(&t);
	}
}

/* (S6) an array assembled pending refuses to fail a member on request until the
 * journal clears the flag; force overrides; pending set in this run does not. */
static void test_super_pending_fail_member_refused(void **state)
{
	static const struct geo_case gc = {6, 5, 2};
	struct raid_assemble_cfg force = {.force = true};
	struct tarr t;

	(void)state;
	t_make(&t, &gc, MB, RAID_RESYNC_JOURNAL, 16, NULL);
	t_assemble(&t);
	/* set in this run (a mounted journal): failing a member is allowed */
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
	assert_int_equal(raid_fail_member(t.a, 4), 0);
	raid_abandon(t.a); /* crash: pending, role 4 failed */
	t.a = NULL;
	assert_int_equal(t_assemble_mask(&t, ~(1u << 4), NULL), -EUCLEAN); /* (S4) */
	assert_int_equal(t_assemble_mask(&t, ~(1u << 4), &force), 0);
	assert_int_equal(raid_fail_member(t.a, 3), 0); /* forced */
	t_stop(&t);
	t_free(&t);

	t_make(&t, &gc, MB, RAID_RESYNC_JOURNAL, 16, NULL);
	t_assemble(&t);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
	raid_abandon(t.a);
	t.a = NULL;
	t_assemble(&t);
	if (raid_fail_member(t.a, 1) != -EUCLEAN)
		fail_msg("member failed on request while the journal is unreplayed");
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_CLEAR_JNL_PENDING, NULL), 0);
	assert_int_equal(raid_fail_member(t.a, 1), 0);
	t_stop(&t);
	t_free(&t);
}

static void t_sb_offset_wraps(struct raid_sb *sb)
{
	uint64_t chunk = jg_le32(sb->chunk_blocks);

	/* a multiple of the chunk whose sum with data_blocks wraps to a small number */
	sb->data_offset = jg_cpu_to_le64(UINT64_MAX / chunk * chunk);
}

static void t_sb_policy_bitmap(struct raid_sb *sb)
{
	sb->resync_policy = jg_cpu_to_le32(RAID_RESYNC_BITMAP);
}

static void t_sb_policy_journal(struct raid_sb *sb)
{
	sb->resync_policy = jg_cpu_to_le32(RAID_RESYNC_JOURNAL);
}

/* (S7) a data area past 64 bits, a bitmap policy without a bitmap: refused, nothing written. */
static void test_super_bad_extent_and_policy_refused(void **state)
{
	static void (*const edits[])(struct raid_sb *) = {
	    t_sb_offset_wraps, t_sb_policy_bitmap, t_sb_policy_journal};
	static const char *const what[] = {
	    "data_offset + data_blocks overflow accepted",
	    "resync=bitmap with bitmap_blocks=0 accepted",
	    "resync=journal with bitmap_blocks=0 accepted"};

	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];

		for (unsigned int e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
			struct raid_assemble_cfg force = {.force = true};
			struct tarr t;
			struct t_snap s;

			t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL); /* no bitmap */
			t_sb_edit_all(&t, edits[e]);
			t_snap_take(&t, &s);
			if (t_assemble_mask(&t, ~0u, NULL) != -EUCLEAN ||
			    t_assemble_mask(&t, ~0u, &force) != -EUCLEAN)
				t_fail(gc, what[e]);
			t_snap_same(&t, &s, gc);
			t_free(&t);
		}
	}
}

/* ---------------------------------------------------------- torn superblocks */

/*
 * A superblock copy torn by a cut inside its first sector (a device that does
 * not write a sector atomically): bytes 0x40..0x7f, which hold state and flags,
 * still old, the rest new. All that differs between two superblocks lies in
 * that sector, so only such a tear (or a bad sector) can damage one.
 */
static void t_tear_copy(struct tarr *t, unsigned int member, uint64_t home, const uint8_t *old)
{
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(t->mem[member], BLK_OP_READ, home, 1, b, 0), 0);
	assert_memory_not_equal(b + 0x40, old + 0x40, 0x40);
	memcpy(b + 0x40, old + 0x40, 0x40);
	assert_int_equal(blk_rw(t->mem[member], BLK_OP_WRITE, home, 1, b, 0), 0);
	free(b);
}

/*
 * (S8) One torn superblock copy on a member (either copy) does not stop the
 * array: assembly takes the other copy, keeps the dirty state it records, and
 * its own update rewrites the torn copy. With both copies torn the member is
 * left out (S12), nothing written to it.
 */
static void test_super_torn_copy_assembles(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		for (uint64_t home = RAID_SB_BLKNO; home <= RAID_SB_COPY_BLKNO; home++) {
			const struct geo_case *gc = &geos[gi];
			uint8_t *old = jg_alloc_blocks(2);
			struct raid_info info;
			struct tarr t;

			t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 16, NULL);
			assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 2, old, 0), 0);
			/* in use (dirty), then a crash; the dirty round tore one copy on member 1 */
			t_assemble(&t);
			raid_abandon(t.a);
			t.a = NULL;
			t_tear_copy(&t, 1, home, old + home * JG_BLOCK_SIZE);
			if (t_assemble_mask(&t, ~0u, NULL))
				t_fail(gc, "one torn superblock copy refused the array");
			raid_info_get(t.a, &info);
			if (!info.was_dirty || info.degraded)
				t_fail(gc, "torn copy: dirty array assembled clean or degraded");
			t_stop(&t);
			/* the assembly rewrote the torn copy */
			assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, home, 1, old, 0), 0);
			if (jg_blk_check(old, JG_BLOCK_SIZE, RAID_SB_MAGIC, RAID_FORMAT_VERSION, home,
					 jg_crc_seed(((struct raid_sb *)old)->uuid), "test",
					 "member superblock", "mem1"))
				t_fail(gc, "torn copy not rewritten by the next update");
			/*
			 * both copies torn: the member is left out (S12), nothing
			 * written to it; nothing was in flight, so the dirty array
			 * has no row with the write hole (S10) and runs degraded
			 */
			assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 2, old, 0), 0);
			t_assemble(&t);
			raid_abandon(t.a);
			t.a = NULL;
			t_tear_copy(&t, 1, RAID_SB_BLKNO, old);
			t_tear_copy(&t, 1, RAID_SB_COPY_BLKNO, old + JG_BLOCK_SIZE);
			{
				uint8_t *before = t_member_image(&t, 1), *after;

				if (t_assemble_mask(&t, ~0u, NULL))
					t_fail(gc, "member with both copies torn: array refused");
				raid_info_get(t.a, &info);
				if (!info.degraded || info.members[1].present)
					t_fail(gc, "member with both copies torn taken in");
				t_stop(&t);
				after = t_member_image(&t, 1);
				if (memcmp(before, after, t.member_blocks * JG_BLOCK_SIZE))
					t_fail(gc, "a member left out was written");
				free(before);
				free(after);
			}
			free(old);
			t_free(&t);
		}
	}
}

/*
 * (S12) A member whose two superblock copies both fail their crc (bit rot on one
 * disk) is left out: the array assembles degraded with that role missing,
 * never reads or writes the member, and its data reads back right from the
 * others. The same member with no magic in either copy is foreign: refused.
 */
static void test_super_damaged_left_out(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint8_t *sb = jg_alloc_blocks(2), *data = jg_alloc_blocks(64), *back = jg_alloc_blocks(64);
		uint8_t *before, *after;
		struct raid_info info;
		struct tarr t;
		struct t_snap s;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 16, NULL);
		t_assemble(&t);
		for (size_t i = 0; i < 64 * JG_BLOCK_SIZE; i++)
			data[i] = (uint8_t)(i * 7 + gi);
		assert_int_equal(blk_rw(t.dev, BLK_OP_WRITE, 5, 64, data, 0), 0);
		t_stop(&t);
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_READ, 0, 2, sb, 0), 0);
		sb[0x48] ^= 0x10;
		sb[JG_BLOCK_SIZE + 0x48] ^= 0x10;
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_WRITE, 0, 2, sb, 0), 0);
		before = t_member_image(&t, 1);
		if (t_assemble_mask(&t, ~0u, NULL))
			t_fail(gc, "member with a bad crc in both copies: array refused");
		raid_info_get(t.a, &info);
		if (!info.degraded || info.members[1].present || !info.members[0].present)
			t_fail(gc, "damaged member not left out");
		assert_int_equal(blk_rw(t.dev, BLK_OP_READ, 5, 64, back, 0), 0);
		if (memcmp(data, back, 64 * JG_BLOCK_SIZE))
			t_fail(gc, "data read wrong with the damaged member left out");
		t_stop(&t);
		after = t_member_image(&t, 1);
		if (memcmp(before, after, t.member_blocks * JG_BLOCK_SIZE))
			t_fail(gc, "a member left out was written");
		free(after);

		/* no magic in either copy: a device given by mistake, refused */
		memset(sb, 0, 2 * JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(t.mem[1], BLK_OP_WRITE, 0, 2, sb, 0), 0);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~0u, NULL) != -EINVAL)
			t_fail(gc, "foreign device accepted or left out");
		t_snap_same(&t, &s, gc);
		free(before);
		free(sb);
		free(data);
		free(back);
		t_free(&t);
	}
}

/* Put back member images and wrap them in a new power domain cut at @cut (0: never). */
static void t_rewrap(struct tarr *t, uint8_t **img, uint64_t cut, unsigned int unit)
{
	struct raid_fault_cfg fc = {.cut_after_writes = cut,
				    .seed = 77 + cut,
				    .keep_percent = 50,
				    .tear = true,
				    .tear_unit_bytes = unit};

	for (unsigned int i = 0; i < t->n; i++) {
		if (t->top[i] != t->mem[i])
			blk_close(t->top[i]);
		if (img)
			assert_int_equal(blk_rw(t->mem[i], BLK_OP_WRITE, 0,
						(uint32_t)t->member_blocks, img[i], 0),
					 0);
	}
	if (t->dom)
		raid_fault_domain_free(t->dom);
	assert_int_equal(raid_fault_domain_new(&fc, &t->dom), 0);
	for (unsigned int i = 0; i < t->n; i++)
		assert_int_equal(raid_dev_fault_open(t->dom, t->mem[i], &t->top[i]), 0);
}

/* Domain write counts at the points the expectations depend on. */
struct t_marks {
	uint64_t assembled, set, before_clear, before_stop, total;
};

/*
 * The workload: assemble, set jnl-pending, write, clear it, stop. Returns the
 * write counts seen after each step.
 */
static void t_sb_workload(struct tarr *t, struct t_marks *m, uint64_t seed)
{
	uint8_t *buf = jg_alloc_blocks(8);

	t_fill(buf, 8, seed);
	assert_int_equal(t_assemble_mask(t, ~0u, NULL), 0);
	m->assembled = raid_fault_domain_writes(t->dom);
	assert_int_equal(blk_ctl(t->dev, BLK_CTL_SET_JNL_PENDING, NULL), 0);
	m->set = raid_fault_domain_writes(t->dom);
	assert_int_equal(t_io(t, BLK_OP_WRITE, 3, 8, buf, 0), 0);
	assert_int_equal(blk_flush(t->dev), 0);
	m->before_clear = raid_fault_domain_writes(t->dom);
	assert_int_equal(blk_ctl(t->dev, BLK_CTL_CLEAR_JNL_PENDING, NULL), 0);
	m->before_stop = raid_fault_domain_writes(t->dom);
	t_stop(t);
	m->total = raid_fault_domain_writes(t->dom);
	free(buf);
}

static void t_torn_sb_positions(const struct geo_case *gc, unsigned int unit)
{
	uint8_t *img[RAID_MAX_MEMBERS];
	struct t_marks m;
	struct tarr t;

	t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL);
	for (unsigned int i = 0; i < t.n; i++)
		img[i] = t_member_image(&t, i);
	t_rewrap(&t, img, 0, unit);
	t_sb_workload(&t, &m, gc->n);
	for (uint64_t k = 1; k <= m.total; k++) {
		struct t_marks mk;
		struct raid_info info;
		bool must_dirty = k > m.assembled && k <= m.before_stop + 1;
		bool must_jnl = k > m.set && k <= m.before_clear + 1;
		int rc;

		t_rewrap(&t, img, k, unit);
		t_sb_workload(&t, &mk, gc->n);
		assert_true(raid_fault_domain_is_cut(t.dom));
		t_rewrap(&t, NULL, 0, unit);
		rc = t_assemble_mask(&t, ~0u, NULL);
		if (rc)
			fail_msg("cut at write %llu of %llu, tear unit %u: assembly refused (%d): level=%u members=%u",
				 (unsigned long long)k, (unsigned long long)m.total, unit, rc,
				 gc->level, gc->n);
		raid_info_get(t.a, &info);
		if (must_dirty && !info.was_dirty)
			fail_msg("cut at write %llu, tear unit %u: array written since its clean mark assembled clean: level=%u members=%u",
				 (unsigned long long)k, unit, gc->level, gc->n);
		if (must_jnl && !info.jnl_pending)
			fail_msg("cut at write %llu, tear unit %u: durable jnl-pending lost: level=%u members=%u",
				 (unsigned long long)k, unit, gc->level, gc->n);
		if (raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
			fail_msg("cut at write %llu, tear unit %u: parity mismatches after recovery: level=%u members=%u",
				 (unsigned long long)k, unit, gc->level, gc->n);
		t_stop(&t);
	}
	for (unsigned int i = 0; i < t.n; i++)
		free(img[i]);
	t_free(&t);
}

/*
 * (S8) A power cut at every write position of assembly, set/clear jnl-pending
 * and stop, tearing the unflushed superblock writes by whole 512-byte sectors
 * and by 64-byte pieces (inside the superblock's sector): the array
 * always assembles again, and its state is right -- dirty whenever data may have
 * been written since the last clean mark (never silently clean), jnl-pending
 * set while it was durably set, parity consistent after the recovery resync.
 */
static void test_super_torn_sb_writes_every_position(void **state)
{
	static const unsigned int units[] = {512, 64};

	(void)state;
	for (unsigned int ui = 0; ui < 2; ui++) {
		for (unsigned int gi = 0; gi < GEO_N(geo_r5_r6); gi++)
			t_torn_sb_positions(&geo_r5_r6[gi], units[ui]);
	}
}

/*
 * (S9) Two power cuts in a row: one during any superblock round of a run, the
 * next anywhere in the recovering run's assembly and first rounds (tearing unflushed writes), then an
 * assembly with no cut. No round ever completed with a member left out, so no
 * member may be refused as stale, the array must come back dirty, and its
 * parity must be consistent after the recovery resync. Before (S9), a recovering
 * assembly that accepted a member one event behind (S5) and was cut after its
 * round reached only the freshest member left the others two events behind:
 * refused, and the array would not assemble.
 */
static void t_cut_chain(const struct geo_case *gc, unsigned int unit)
{
	uint8_t *img[RAID_MAX_MEMBERS], *mid[RAID_MAX_MEMBERS];
	struct t_marks m, m2;
	struct tarr t;

	t_make(&t, gc, MB, RAID_RESYNC_FULL, 0, NULL);
	for (unsigned int i = 0; i < t.n; i++)
		img[i] = t_member_image(&t, i);
	t_rewrap(&t, img, 0, unit);
	t_sb_workload(&t, &m, gc->n);
	for (uint64_t k1 = 1; k1 <= m.total; k1++) {
		t_rewrap(&t, img, k1, unit);
		t_sb_workload(&t, &m2, gc->n);
		/* a cut with no superblock write in flight leaves the members at one event */
		if (!(raid_fault_domain_cut_points(t.dom) & (1ull << JG_OP_RAID_SB)))
			continue;
		for (unsigned int i = 0; i < t.n; i++)
			mid[i] = t_member_image(&t, i);
		/* the recovering run, uncut, to count its writes */
		t_rewrap(&t, NULL, 0, unit);
		t_sb_workload(&t, &m2, gc->n);
		for (uint64_t k2 = 1; k2 <= m2.set + 1; k2++) {
			struct t_marks mk;
			struct raid_info info;
			int rc;

			t_rewrap(&t, mid, k2, unit);
			t_sb_workload(&t, &mk, gc->n);
			t_rewrap(&t, NULL, 0, unit);
			rc = t_assemble_mask(&t, ~0u, NULL);
			if (rc)
				fail_msg("cuts at write %llu then %llu, tear unit %u: assembly refused (%d): level=%u members=%u",
					 (unsigned long long)k1, (unsigned long long)k2, unit, rc,
					 gc->level, gc->n);
			raid_info_get(t.a, &info);
			if (info.degraded)
				fail_msg("cuts at write %llu then %llu: assembled degraded: level=%u members=%u",
					 (unsigned long long)k1, (unsigned long long)k2, gc->level, gc->n);
			if (raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
				fail_msg("cuts at write %llu then %llu: parity mismatches after recovery: level=%u members=%u",
					 (unsigned long long)k1, (unsigned long long)k2, gc->level,
					 gc->n);
			t_stop(&t);
		}
		for (unsigned int i = 0; i < t.n; i++)
			free(mid[i]);
	}
	for (unsigned int i = 0; i < t.n; i++)
		free(img[i]);
	t_free(&t);
}

static void test_super_cut_rounds_in_a_row(void **state)
{
	static const struct geo_case r5 = {5, 3, 2}, r6 = {6, 4, 2};

	(void)state;
	/* whole sectors (a real disk), and 64-byte pieces that tear a copy itself */
	t_cut_chain(&r6, 512);
	t_cut_chain(&r5, 64);
}

/*
 * (S1) A round that fails on one member still makes the others durable before
 * the next round is written. Member 1's superblock writes fail from assembly on
 * (its round is repeated on the others, recording it failed); the power is cut
 * at each member write in turn. Every survivor is then at most one round behind
 * the freshest (S5), so a forced assembly of the survivors never refuses one
 * as stale: only member 1 is lost. Before, the failed round's writes stayed unflushed while
 * the next was written, and a cut before that one's flush could leave a
 * survivor two rounds behind: with member 1 gone, the array did not assemble.
 */
static void test_super_failed_round_flushes_survivors(void **state)
{
	static const struct geo_case gc = {5, 4, 2};
	struct raid_assemble_cfg force = {.force = true};
	uint8_t *img[RAID_MAX_MEMBERS], *buf = jg_alloc_blocks(8);
	uint64_t total = 0;
	unsigned int cuts = 0;
	struct tarr t;

	(void)state;
	t_fill(buf, 8, 3);
	t_make(&t, &gc, MB, RAID_RESYNC_FULL, 0, NULL);
	for (unsigned int i = 0; i < t.n; i++)
		img[i] = t_member_image(&t, i);
	for (uint64_t k = 0; k == 0 || k <= total; k++) {
		int rc;

		t_rewrap(&t, img, k, 512);
		assert_int_equal(raid_dev_fault_fail_block(t.top[1], RAID_SB_BLKNO, false, true), 0);
		assert_int_equal(raid_dev_fault_fail_block(t.top[1], RAID_SB_COPY_BLKNO, false, true),
				 0);
		if (t_assemble_mask(&t, ~0u, NULL) == 0) {
			/* errors after the cut are the workload's to meet */
			(void)blk_ctl(t.dev, BLK_CTL_SET_JNL_PENDING, NULL);
			(void)t_io(&t, BLK_OP_WRITE, 3, 8, buf, 0);
			(void)blk_flush(t.dev);
			raid_abandon(t.a);
			t.a = NULL;
			t.dev = NULL;
		}
		if (!k) {
			total = raid_fault_domain_writes(t.dom);
			continue;
		}
		cuts++;
		/* member 1 left out: stale once its failure is recorded, and refused */
		t_rewrap(&t, NULL, 0, 512);
		rc = t_assemble_mask(&t, ~2u, &force);
		if (rc)
			fail_msg("cut at member write %llu of %llu, member 1's superblock writes failing: forced assembly without it refused (%d)",
				 (unsigned long long)k, (unsigned long long)total, rc);
		raid_abandon(t.a);
		t.a = NULL;
		t.dev = NULL;
	}
	assert_true(cuts >= 4);
	for (unsigned int i = 0; i < t.n; i++)
		free(img[i]);
	free(buf);
	t_free(&t);
}

/* Rewrite @t's members to the layout before SB_COPY: one copy, bitmap from block 1. */
static void t_to_one_copy(struct tarr *t)
{
	for (unsigned int i = 0; i < t->n; i++) {
		uint8_t *b = jg_alloc_blocks(1);
		struct raid_sb *sb;
		uint32_t nbm, seed;

		assert_int_equal(blk_rw(t->mem[i], BLK_OP_READ, RAID_SB_BLKNO, 1, b, 0), 0);
		sb = (struct raid_sb *)b;
		nbm = jg_le32(sb->bitmap_blocks);
		seed = jg_crc_seed(sb->uuid);
		sb->feature_incompat = jg_cpu_to_le32(0);
		jg_blk_crc_set(b, JG_BLOCK_SIZE, seed);
		assert_int_equal(blk_rw(t->mem[i], BLK_OP_WRITE, RAID_SB_BLKNO, 1, b, 0), 0);
		for (uint32_t j = 0; j < nbm; j++) {
			struct jg_blk_hdr *h = (struct jg_blk_hdr *)b;

			assert_int_equal(blk_rw(t->mem[i], BLK_OP_READ, RAID_BITMAP_BLKNO + j, 1, b, 0),
					 0);
			h->blkno = jg_cpu_to_le64(RAID_BITMAP_BLKNO_ONE_COPY + j);
			jg_blk_crc_set(b, JG_BLOCK_SIZE, seed);
			assert_int_equal(
			    blk_rw(t->mem[i], BLK_OP_WRITE, RAID_BITMAP_BLKNO_ONE_COPY + j, 1, b, 0), 0);
		}
		memset(b, 0, JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(t->mem[i], BLK_OP_WRITE, RAID_BITMAP_BLKNO_ONE_COPY + nbm, 1,
					b, 0),
				 0);
		free(b);
	}
}

/*
 * An array made before SB_COPY (one superblock copy, bitmap from block 1) still
 * assembles and runs as it is: its bitmap is used at block 1 and never taken
 * for a superblock copy, and its superblock keeps the old layout.
 */
static void test_super_one_copy_array_still_works(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		uint8_t *buf = jg_alloc_blocks(4), *rd = jg_alloc_blocks(4);
		uint8_t *b = jg_alloc_blocks(1);
		struct raid_info info;
		struct tarr t;

		t_make(&t, gc, MB, RAID_RESYNC_BITMAP, 16, NULL);
		t_to_one_copy(&t);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		t_fill(buf, 4, gi);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, 5, 4, buf, 0), 0);
		raid_abandon(t.a); /* crash: the bitmap at block 1 names the region */
		t.a = NULL;
		assert_int_equal(blk_rw(t.mem[0], BLK_OP_READ, RAID_BITMAP_BLKNO_ONE_COPY, 1, b, 0), 0);
		if (jg_blk_check(b, JG_BLOCK_SIZE, RAID_BITMAP_MAGIC, RAID_FORMAT_VERSION,
				 RAID_BITMAP_BLKNO_ONE_COPY, jg_crc_seed(info.uuid), "test", "bitmap block",
				 "mem0") ||
		    !((struct raid_bitmap_blk *)b)->bits[0])
			t_fail(gc, "one-copy array: the write's bit not set at block 1");
		if (t_assemble_mask(&t, ~0u, &(struct raid_assemble_cfg){.readonly = true}))
			t_fail(gc, "one-copy array refused");
		raid_info_get(t.a, &info);
		if (!info.was_dirty || !info.bitmap_dirty_regions)
			t_fail(gc, "one-copy array: dirty state or bitmap at block 1 lost");
		t_stop(&t);
		t_assemble(&t);
		assert_int_equal(t_io(&t, BLK_OP_READ, 5, 4, rd, 0), 0);
		if (memcmp(buf, rd, 4 * JG_BLOCK_SIZE))
			t_fail(gc, "one-copy array: data differs");
		t_stop(&t);
		for (unsigned int i = 0; i < gc->n; i++) {
			assert_int_equal(blk_rw(t.mem[i], BLK_OP_READ, RAID_SB_BLKNO, 1, b, 0), 0);
			if (jg_le32(((struct raid_sb *)b)->feature_incompat))
				t_fail(gc, "one-copy array given a feature");
			assert_int_equal(
			    blk_rw(t.mem[i], BLK_OP_READ, RAID_BITMAP_BLKNO_ONE_COPY, 1, b, 0), 0);
			if (jg_le32(((struct jg_blk_hdr *)b)->magic) != RAID_BITMAP_MAGIC)
				t_fail(gc, "one-copy array: block 1 is no longer its bitmap");
		}
		free(buf);
		free(rd);
		free(b);
		t_free(&t);
	}
}

/* check_fn of test_super_need_all_and_check: reads the array, then says no. */
struct t_check {
	int calls, rc;
	bool read_ok, readonly_meanwhile;
};

static int t_check_fn(void *ctx, struct raid_array *a)
{
	struct t_check *k = ctx;
	uint8_t *b = jg_alloc_blocks(1);

	k->calls++;
	k->read_ok = b && !blk_rw(raid_array_dev(a), BLK_OP_READ, 0, 1, b, 0);
	k->readonly_meanwhile =
	    b && blk_rw(raid_array_dev(a), BLK_OP_WRITE, 0, 1, b, 0) == -EROFS;
	free(b);
	return k->rc;
}

/*
 * (S13) need_all: a member left out is refused (-ENODEV) with nothing written,
 * and accepted without it (recorded failed); then, recorded, need_all accepts
 * the set without it. check_fn reads a read-only array and its refusal writes
 * nothing, with a member absent too.
 */
static void test_super_need_all_and_check(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct t_check k = {.rc = -EINVAL};
		struct raid_assemble_cfg all = {.need_all = true};
		struct raid_assemble_cfg chk = {.check_fn = t_check_fn, .check_ctx = &k};
		struct raid_info info;
		struct tarr t;
		struct t_snap s;

		t_make(&t, gc, MB, RAID_RESYNC_JOURNAL, 16, NULL);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~2u, &all) != -ENODEV)
			t_fail(gc, "need_all: a member left out not refused");
		t_snap_same(&t, &s, gc);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~0u, &chk) != -EINVAL || k.calls != 1)
			t_fail(gc, "check_fn: its refusal not returned");
		if (!k.read_ok || !k.readonly_meanwhile)
			t_fail(gc, "check_fn: the array not readable, or writable, meanwhile");
		t_snap_same(&t, &s, gc);
		t_snap_take(&t, &s);
		if (t_assemble_mask(&t, ~2u, &chk) != -EINVAL || k.calls != 2)
			t_fail(gc, "check_fn: a degraded set's refusal not returned");
		t_snap_same(&t, &s, gc);
		k.rc = 0;
		if (t_assemble_mask(&t, ~0u, &chk) || k.calls != 3)
			t_fail(gc, "check_fn: a whole set refused");
		t_stop(&t);
		/* asked for: degraded, role 1 recorded failed */
		assert_int_equal(t_assemble_mask(&t, ~2u, NULL), 0);
		t_stop(&t);
		if (t_assemble_mask(&t, ~2u, &all))
			t_fail(gc, "need_all: a member recorded failed counted as left out");
		raid_info_get(t.a, &info);
		if (!info.degraded || !info.members[1].failed)
			t_fail(gc, "need_all: the recorded failure not kept");
		t_stop(&t);
		t_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_super_any_order),
	    cmocka_unit_test(test_super_bad_input_writes_nothing),
	    cmocka_unit_test(test_super_dirty_degraded_needs_force),
	    cmocka_unit_test(test_super_create_refuses_existing),
	    cmocka_unit_test(test_super_create_size_and_map),
	    cmocka_unit_test(test_super_jnl_pending_persists),
	    cmocka_unit_test(test_super_readonly_writes_nothing),
	    cmocka_unit_test(test_super_fail_member),
	    cmocka_unit_test(test_super_crash_during_sb_round),
	    cmocka_unit_test(test_super_absent_member_recorded),
	    cmocka_unit_test(test_super_need_all_and_check),
	    cmocka_unit_test(test_super_stop_keeps_pending_dirty),
	    cmocka_unit_test(test_super_pending_degraded_needs_force),
	    cmocka_unit_test(test_super_pending_fail_member_refused),
	    cmocka_unit_test(test_super_bad_extent_and_policy_refused),
	    cmocka_unit_test(test_super_torn_copy_assembles),
	    cmocka_unit_test(test_super_damaged_left_out),
	    cmocka_unit_test(test_super_torn_sb_writes_every_position),
    cmocka_unit_test(test_super_cut_rounds_in_a_row),
    cmocka_unit_test(test_super_failed_round_flushes_survivors),
	    cmocka_unit_test(test_super_one_copy_array_still_works),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
