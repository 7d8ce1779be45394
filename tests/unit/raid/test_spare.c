// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_spare.c - hot spares (src/raid/spare.c): written with the
 * array and found at assembly at any event count; a lost member is rebuilt onto
 * one taken by raid_spare_take with exactly its content; added and removed on a
 * running array (removed: no longer found); refused when foreign, too small, a
 * working member's device, one too many, or being rebuilt onto; a rebuild
 * onto an idle spare by another path takes it out of the list (spare.c (P5)).
 */
#include <errno.h>
#include <stdlib.h>

#include "raid_test.h"

#define MB 192
#define NSP_MAX RAID_MAX_SPARES

/* The array of a test, with its spares kept as memory devices. */
struct tsp {
	struct tarr t;
	unsigned int nsp;
	struct blk_dev *sp[NSP_MAX + 1];
};

static void t_spare_open(struct tsp *s, unsigned int i, uint64_t blocks)
{
	char name[16];

	snprintf(name, sizeof(name), "spare%u", i);
	assert_int_equal(raid_dev_mem_open(name, blocks, &s->sp[i]), 0);
}

/* t_make with @nsp spares written by raid_create. */
static void t_make_spares(struct tsp *s, const struct geo_case *gc, unsigned int nsp)
{
	struct raid_create_cfg cfg = { .assume_clean = true, /* zeroed new members */.level = gc->level,
				      .chunk_blocks = gc->chunk,
				      .resync = RAID_RESYNC_BITMAP,
				      .bitmap_region_blocks = 32};
	struct blk_dev *keep[RAID_MAX_MEMBERS], *spk[NSP_MAX];

	memset(s, 0, sizeof(*s));
	s->t.n = gc->n;
	s->t.member_blocks = MB;
	s->nsp = nsp;
	for (unsigned int i = 0; i < gc->n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, MB, &s->t.mem[i]), 0);
		s->t.top[i] = s->t.mem[i];
		keep[i] = t_keep(s->t.mem[i]);
	}
	for (unsigned int i = 0; i < nsp; i++) {
		t_spare_open(s, i, MB);
		spk[i] = t_keep(s->sp[i]);
	}
	cfg.spares = nsp ? spk : NULL;
	cfg.nspares = nsp;
	assert_int_equal(raid_create(keep, gc->n, &cfg, false), 0);
	for (unsigned int i = 0; i < gc->n; i++)
		blk_close(keep[i]);
	for (unsigned int i = 0; i < nsp; i++)
		blk_close(spk[i]);
}

/* Assemble the members in @mask and the spares in @spmask (bit per spare). */
static int t_assemble_sp(struct tsp *s, uint32_t mask, uint32_t spmask)
{
	struct blk_dev *devs[RAID_MAX_MEMBERS + NSP_MAX + 1] = {0};
	unsigned int n = 0;
	int rc;

	for (unsigned int i = 0; i < s->t.n; i++)
		if (mask & (1u << i))
			devs[n++] = t_keep(s->t.mem[i]);
	for (unsigned int i = 0; i <= NSP_MAX; i++)
		if ((spmask & (1u << i)) && s->sp[i])
			devs[n++] = t_keep(s->sp[i]);
	rc = raid_assemble(devs, n, NULL, &s->t.a);
	if (rc) {
		for (unsigned int i = 0; i < n; i++)
			blk_close(devs[i]);
		s->t.a = NULL;
		return rc;
	}
	s->t.dev = raid_array_dev(s->t.a);
	return 0;
}

static void t_free_sp(struct tsp *s)
{
	t_free(&s->t);
	for (unsigned int i = 0; i <= NSP_MAX; i++)
		blk_close(s->sp[i]);
	memset(s, 0, sizeof(*s));
}

/* The superblock copy @home of memory device @d. */
static void t_sb(struct blk_dev *d, uint64_t home, struct raid_sb *out)
{
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(d, BLK_OP_READ, home, 1, b, 0), 0);
	memcpy(out, b, sizeof(*out));
	free(b);
}

static void test_spare_create_and_assemble(void **state)
{
	const struct geo_case gc = {5, 4, 4};
	struct raid_info info;
	struct raid_sb sb0, sb1, msb;
	struct tsp s;

	(void)state;
	t_make_spares(&s, &gc, 2);
	/* (P1) both copies, role spare, this array's uuid and geometry */
	t_sb(s.sp[1], RAID_SB_BLKNO, &sb0);
	t_sb(s.sp[1], RAID_SB_COPY_BLKNO, &sb1);
	t_sb(s.t.mem[0], RAID_SB_BLKNO, &msb);
	assert_int_equal(jg_le32(sb0.hdr.magic), RAID_SB_MAGIC);
	assert_int_equal(jg_le32(sb1.hdr.magic), RAID_SB_MAGIC);
	assert_int_equal(jg_le32(sb0.role), RAID_ROLE_SPARE);
	assert_int_equal(jg_le32(sb1.role), RAID_ROLE_SPARE);
	assert_int_equal(jg_le64(sb1.hdr.blkno), RAID_SB_COPY_BLKNO);
	assert_memory_equal(sb0.uuid, msb.uuid, 16);
	assert_int_equal(jg_le64(sb0.data_blocks), jg_le64(msb.data_blocks));

	assert_int_equal(t_assemble_sp(&s, ~0u, 3), 0);
	raid_info_get(s.t.a, &info);
	assert_int_equal(info.nspares, 2);
	assert_string_equal(info.spares[0].name, "spare0");
	assert_string_equal(info.spares[1].name, "spare1");
	assert_false(info.spares[0].rebuilding);
	assert_false(info.degraded);
	/* nothing to take for: the array is whole */
	{
		unsigned int role;
		struct blk_dev *d;

		assert_int_equal(raid_spare_take(s.t.a, &role, &d), -ENOENT);
	}
	t_stop(&s.t);
	/* members only: as before spares existed */
	assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
	raid_info_get(s.t.a, &info);
	assert_int_equal(info.nspares, 0);
	t_stop(&s.t);
	/* spares only: no array */
	assert_int_equal(t_assemble_sp(&s, 0, 3), -EINVAL);
	t_free_sp(&s);
}

struct t_rm {
	struct raid_array *a;
	const char *name;
	int rc;
	bool called;
};

/* Progress of the rebuild onto a spare: removing that spare is refused meanwhile. */
static int t_rm_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct t_rm *r = ctx;
	struct raid_info info;

	(void)done;
	(void)total;
	if (!r->called) {
		r->called = true;
		r->rc = raid_spare_remove(r->a, r->name);
		raid_info_get(r->a, &info);
		if (info.nspares < 1 || !info.spares[0].rebuilding)
			r->rc = -1000; /* not listed as being rebuilt */
	}
	return 0;
}

/*
 * A member fails online (raid_fail_member, as an I/O error would) or is missing
 * at assembly; raid_spare_take + raid_rebuild put exactly its content on a spare,
 * for every lost role of a RAID5 and both of a RAID6.
 */
static void test_spare_take_rebuilds_exact_content(void **state)
{
	static const struct geo_case *const geos = geo_each_level;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		for (int online = 0; online < 2; online++) {
			const struct geo_case *gc = &geos[gi];
			unsigned int nlost = gc->level == 6 ? 2 : 1, lost[2] = {1, gc->n - 1};
			uint8_t *old[2], *data, *rd;
			struct raid_info info;
			struct raid_geo g;
			struct tsp s;
			uint32_t mask = ~0u;

			t_make_spares(&s, gc, nlost);
			assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
			raid_info_get(s.t.a, &info);
			data = jg_alloc_blocks(info.array_blocks);
			rd = jg_alloc_blocks(info.array_blocks);
			t_fill(data, info.array_blocks, 77 + gi);
			assert_int_equal(
			    t_io(&s.t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, data, 0), 0);
			t_stop(&s.t);
			t_geo(&s.t, &g);
			for (unsigned int j = 0; j < nlost; j++) {
				old[j] = t_member_image(&s.t, lost[j]);
				if (!online)
					mask &= ~(1u << lost[j]);
			}
			assert_int_equal(t_assemble_sp(&s, mask, (1u << nlost) - 1), 0);
			if (online)
				for (unsigned int j = 0; j < nlost; j++)
					assert_int_equal(raid_fail_member(s.t.a, lost[j]), 0);
			raid_info_get(s.t.a, &info);
			assert_true(info.degraded);
			assert_int_equal(info.nspares, nlost);
			for (unsigned int j = 0; j < nlost; j++) {
				struct t_rm rm = {.a = s.t.a};
				struct blk_dev *d;
				unsigned int role, sp;
				char name[64];

				assert_int_equal(raid_spare_take(s.t.a, &role, &d), 0);
				assert_int_equal(role, lost[j]); /* the lowest lost role first */
				snprintf(name, sizeof(name), "%s", d->name);
				sp = (unsigned int)(name[5] - '0');
				rm.name = name;
				assert_int_equal(raid_rebuild(s.t.a, role, d, t_rm_progress, &rm),
						 0);
				assert_true(rm.called);
				assert_int_equal(rm.rc, -EBUSY);
				raid_info_get(s.t.a, &info);
				assert_int_equal(info.nspares, nlost - 1 - j);
				assert_string_equal(info.members[role].name, name);
				assert_false(info.members[role].failed ||
					     info.members[role].rebuilding);
				/* a member now: not a spare to remove */
				assert_int_equal(raid_spare_remove(s.t.a, name), -EBUSY);
				/* the test keeps the spare's memory as the member's */
				blk_close(s.t.mem[role]);
				s.t.mem[role] = s.t.top[role] = s.sp[sp];
				s.sp[sp] = NULL;
			}
			{
				unsigned int role;
				struct blk_dev *d;

				assert_int_equal(raid_spare_take(s.t.a, &role, &d), -ENOENT);
			}
			raid_info_get(s.t.a, &info);
			assert_false(info.degraded);
			assert_int_equal(raid_scrub(s.t.a, false, NULL, NULL, NULL), 0);
			for (unsigned int j = 0; j < nlost; j++) {
				uint8_t *now = t_member_image(&s.t, lost[j]);

				if (memcmp(old[j] + g.data_offset * JG_BLOCK_SIZE,
					   now + g.data_offset * JG_BLOCK_SIZE,
					   g.data_blocks * JG_BLOCK_SIZE))
					fail_msg("level %u online=%d: the spare of role %u differs "
						 "from the lost member",
						 gc->level, online, lost[j]);
				free(now);
				free(old[j]);
			}
			t_stop(&s.t);
			/* whole after reassembly, the spares members for good */
			assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
			raid_info_get(s.t.a, &info);
			assert_false(info.degraded);
			assert_int_equal(
			    t_io(&s.t, BLK_OP_READ, 0, (uint32_t)info.array_blocks, rd, 0), 0);
			assert_memory_equal(rd, data, info.array_blocks * JG_BLOCK_SIZE);
			t_stop(&s.t);
			free(data);
			free(rd);
			t_free_sp(&s);
		}
	}
}

static void test_spare_take_without_spare(void **state)
{
	const struct geo_case gc = {5, 3, 2};
	unsigned int role;
	struct blk_dev *d;
	struct tsp s;

	(void)state;
	t_make_spares(&s, &gc, 0);
	assert_int_equal(t_assemble_sp(&s, ~1u, 0), 0);
	assert_int_equal(raid_spare_take(s.t.a, &role, &d), -ENODEV);
	t_stop(&s.t);
	t_free_sp(&s);
}

/* Added on a running array it is found by the next assembly; removed, no longer. */
static void test_spare_add_remove(void **state)
{
	const struct geo_case gc = {5, 4, 2};
	struct raid_info info;
	struct raid_sb sb;
	struct tsp s;

	(void)state;
	t_make_spares(&s, &gc, 0);
	t_spare_open(&s, 0, MB + 8); /* larger is fine */
	assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
	assert_int_equal(raid_spare_add(s.t.a, t_keep(s.sp[0])), 0);
	raid_info_get(s.t.a, &info);
	assert_int_equal(info.nspares, 1);
	assert_string_equal(info.spares[0].name, "spare0");
	t_sb(s.sp[0], RAID_SB_COPY_BLKNO, &sb);
	assert_int_equal(jg_le32(sb.role), RAID_ROLE_SPARE);
	{ /* the same device again */
		struct blk_dev *again = t_keep(s.sp[0]);

		assert_int_equal(raid_spare_add(s.t.a, again), -EEXIST);
		blk_close(again);
	}
	assert_int_equal(raid_spare_remove(s.t.a, "nosuch"), -ENOENT);
	assert_int_equal(raid_spare_remove(s.t.a, "mem2"), -EBUSY); /* a working member */
	t_stop(&s.t);
	assert_int_equal(t_assemble_sp(&s, ~0u, 1), 0);
	raid_info_get(s.t.a, &info);
	assert_int_equal(info.nspares, 1);
	assert_int_equal(raid_spare_remove(s.t.a, "spare0"), 0);
	raid_info_get(s.t.a, &info);
	assert_int_equal(info.nspares, 0);
	/* (P2) wiped: both copies */
	t_sb(s.sp[0], RAID_SB_BLKNO, &sb);
	assert_int_not_equal(jg_le32(sb.hdr.magic), RAID_SB_MAGIC);
	t_sb(s.sp[0], RAID_SB_COPY_BLKNO, &sb);
	assert_int_not_equal(jg_le32(sb.hdr.magic), RAID_SB_MAGIC);
	t_stop(&s.t);
	/* given again, it is foreign now */
	assert_int_equal(t_assemble_sp(&s, ~0u, 1), -EINVAL);
	assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
	/* and can be added again */
	assert_int_equal(raid_spare_add(s.t.a, t_keep(s.sp[0])), 0);
	t_stop(&s.t);
	t_free_sp(&s);
}

static void test_spare_refusals(void **state)
{
	const struct geo_case gc = {5, 3, 2};
	struct tsp s, o;
	struct raid_geo g;
	struct blk_dev *d;

	(void)state;
	t_make_spares(&s, &gc, 1);
	t_make_spares(&o, &gc, 1); /* another array */
	t_geo(&s.t, &g);

	/* a spare of another array at assembly: "belongs to another array" */
	s.sp[1] = o.sp[0];
	assert_int_equal(t_assemble_sp(&s, ~0u, 2), -EINVAL);
	s.sp[1] = NULL;
	assert_int_equal(t_assemble_sp(&s, ~0u, 1), 0);
	/* a member of another array as a new spare */
	d = t_keep(o.t.mem[0]);
	assert_int_equal(raid_spare_add(s.t.a, d), -EEXIST);
	blk_close(d);
	/* a working member's device (another path to it) */
	d = t_keep(s.t.mem[1]);
	snprintf(d->name, sizeof(d->name), "other-path");
	assert_int_equal(raid_spare_add(s.t.a, d), -EEXIST);
	blk_close(d);
	/* too small for the data area */
	t_spare_open(&s, 2, g.data_offset + g.data_blocks - 1);
	d = t_keep(s.sp[2]);
	assert_int_equal(raid_spare_add(s.t.a, d), -EINVAL);
	blk_close(d);
	/* one too many */
	for (unsigned int i = 3; i <= NSP_MAX; i++) {
		t_spare_open(&s, i, MB);
		assert_int_equal(raid_spare_add(s.t.a, t_keep(s.sp[i])), 0);
	}
	t_spare_open(&s, 1, MB);
	assert_int_equal(raid_spare_add(s.t.a, t_keep(s.sp[1])), 0);
	{
		struct raid_info info;
		struct blk_dev *extra;

		raid_info_get(s.t.a, &info);
		assert_int_equal(info.nspares, RAID_MAX_SPARES);
		assert_int_equal(raid_dev_mem_open("extra", MB, &extra), 0);
		d = t_keep(extra);
		assert_int_equal(raid_spare_add(s.t.a, d), -ENOSPC);
		blk_close(d);
		blk_close(extra);
	}
	t_stop(&s.t);

	/* a spare that shrank (a smaller view of it) is refused at assembly */
	{
		struct blk_dev *devs[4];

		for (unsigned int i = 0; i < 3; i++)
			devs[i] = t_keep(s.t.mem[i]);
		devs[3] = t_keep(s.sp[0]);
		devs[3]->nblocks = g.data_offset + g.data_blocks - 1;
		assert_int_equal(raid_assemble(devs, 4, NULL, &s.t.a), -EUCLEAN);
		for (unsigned int i = 0; i < 4; i++)
			blk_close(devs[i]);
		s.t.a = NULL;
	}
	/* a spare too small for raid_create */
	{
		struct raid_create_cfg cfg = {
		    .level = 5, .chunk_blocks = 2, .resync = RAID_RESYNC_BITMAP};
		struct blk_dev *m[3], *sp, *small;

		for (unsigned int i = 0; i < 3; i++) {
			char name[8];

			snprintf(name, sizeof(name), "c%u", i);
			assert_int_equal(raid_dev_mem_open(name, MB, &m[i]), 0);
		}
		assert_int_equal(raid_dev_mem_open("small", 4, &small), 0);
		sp = small;
		cfg.spares = &sp;
		cfg.nspares = 1;
		assert_int_equal(raid_create(m, 3, &cfg, false), -EINVAL);
		/* a member given as a spare too */
		sp = m[1];
		cfg.spares = &sp;
		assert_int_equal(raid_create(m, 3, &cfg, false), -EINVAL);
		/* one holding a superblock, without force */
		cfg.spares = &o.sp[0];
		assert_int_equal(raid_create(m, 3, &cfg, false), -EEXIST);
		for (unsigned int i = 0; i < 3; i++)
			blk_close(m[i]);
		blk_close(small);
	}
	t_free_sp(&s);
	t_free_sp(&o);
}

/* (P1) a spare written events ago is accepted: it holds nothing that can be stale. */
static void test_spare_any_event_count(void **state)
{
	const struct geo_case gc = {6, 4, 2};
	struct raid_info info;
	struct raid_sb sb;
	struct tsp s;

	(void)state;
	t_make_spares(&s, &gc, 1);
	for (int i = 0; i < 3; i++) { /* each assembly and stop is a superblock round */
		assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
		t_stop(&s.t);
	}
	/* a member failed and the array runs on: more rounds the spare misses */
	assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
	assert_int_equal(raid_fail_member(s.t.a, 2), 0);
	t_stop(&s.t);
	t_sb(s.sp[0], RAID_SB_BLKNO, &sb);
	assert_int_equal(t_assemble_sp(&s, ~(1u << 2), 1), 0);
	raid_info_get(s.t.a, &info);
	assert_true(jg_le64(sb.hdr.seq) + 2 < info.events);
	assert_int_equal(info.nspares, 1);
	assert_false(info.spares[0].rebuilding);
	t_stop(&s.t);
	/* a member that far behind is stale: refused */
	assert_int_equal(t_assemble_sp(&s, ~0u, 1), -EUCLEAN);
	t_free_sp(&s);
}

/* Another handle of memory device @d, named @name: the same disk by another path. */
static struct blk_dev *t_alias(struct blk_dev *d, const char *name)
{
	struct blk_dev *h = t_keep(d);

	snprintf(h->name, sizeof(h->name), "%s", name);
	return h;
}

/*
 * (P5) A rebuild onto an idle spare reached by another handle and path (as
 * `jgrfs replace MNT SPARE` opens it again) takes it out of the spare list:
 * it is not handed to a second role by raid_spare_take, nor wiped by
 * raid_spare_remove; a spare taken for one role is refused for another.
 */
static void test_spare_named_by_rebuild(void **state)
{
	const struct geo_case gc = {6, 5, 2};
	struct raid_info info;
	struct blk_dev *d, *fresh;
	struct raid_sb sb;
	unsigned int role;
	uint8_t *data, *rd;
	struct tsp s;

	(void)state;
	t_make_spares(&s, &gc, 2);
	assert_int_equal(t_assemble_sp(&s, ~0u, 1), 0); /* spare0 given, spare1 not */
	raid_info_get(s.t.a, &info);
	data = jg_alloc_blocks(info.array_blocks);
	rd = jg_alloc_blocks(info.array_blocks);
	t_fill(data, info.array_blocks, 4242);
	assert_int_equal(t_io(&s.t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, data, 0), 0);
	assert_int_equal(raid_fail_member(s.t.a, 1), 0);
	assert_int_equal(raid_fail_member(s.t.a, 3), 0);
	/* replace role 1 onto spare0, named by a path of its own */
	assert_int_equal(raid_rebuild(s.t.a, 1, t_alias(s.sp[0], "/dev/disk/by-id/spare0"), NULL,
				      NULL),
			 0);
	raid_info_get(s.t.a, &info);
	assert_false(info.members[1].failed || info.members[1].rebuilding);
	if (info.nspares)
		fail_msg("spare0 is member 1 and still listed as a spare (%s)",
			 info.spares[0].rebuilding ? "taken" : "idle");
	/* not handed to role 3 as well */
	assert_int_equal(raid_spare_take(s.t.a, &role, &d), -ENODEV);
	/* not wiped: its superblock is member 1's */
	assert_int_not_equal(raid_spare_remove(s.t.a, "spare0"), 0);
	t_sb(s.sp[0], RAID_SB_BLKNO, &sb);
	assert_int_equal(jg_le32(sb.hdr.magic), RAID_SB_MAGIC);
	assert_int_equal(jg_le32(sb.role), 1);
	blk_close(s.t.mem[1]);
	s.t.mem[1] = s.t.top[1] = s.sp[0];
	s.sp[0] = NULL;
	/* spare1 added and taken for role 3: not for role 0 by another path */
	assert_int_equal(raid_spare_add(s.t.a, t_keep(s.sp[1])), 0);
	assert_int_equal(raid_spare_take(s.t.a, &role, &d), 0);
	assert_int_equal(role, 3);
	assert_int_equal(raid_fail_member(s.t.a, 0), 0);
	assert_int_equal(raid_rebuild(s.t.a, 0, t_alias(s.sp[1], "other-path"), NULL, NULL),
			 -EBUSY);
	assert_int_equal(raid_rebuild(s.t.a, 3, d, NULL, NULL), 0);
	blk_close(s.t.mem[3]);
	s.t.mem[3] = s.t.top[3] = s.sp[1];
	s.sp[1] = NULL;
	assert_int_equal(raid_dev_mem_open("fresh0", MB, &fresh), 0);
	assert_int_equal(raid_rebuild(s.t.a, 0, t_keep(fresh), NULL, NULL), 0);
	blk_close(s.t.mem[0]);
	s.t.mem[0] = s.t.top[0] = fresh;
	raid_info_get(s.t.a, &info);
	assert_false(info.degraded);
	assert_int_equal(info.nspares, 0);
	assert_int_equal(raid_scrub(s.t.a, false, NULL, NULL, NULL), 0);
	t_stop(&s.t);
	assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
	raid_info_get(s.t.a, &info);
	assert_false(info.degraded);
	assert_int_equal(t_io(&s.t, BLK_OP_READ, 0, (uint32_t)info.array_blocks, rd, 0), 0);
	assert_memory_equal(rd, data, info.array_blocks * JG_BLOCK_SIZE);
	t_stop(&s.t);
	free(data);
	free(rd);
	t_free_sp(&s);
}

/* raid_create refuses a spare that is a member by another path, writing nothing. */
static void test_spare_create_member_twice(void **state)
{
	struct raid_create_cfg cfg = {.level = 5, .chunk_blocks = 2, .assume_clean = true};
	struct blk_dev *mem[3], *keep[3], *sp;
	uint8_t *b = jg_alloc_blocks(1);

	(void)state;
	for (unsigned int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, MB, &mem[i]), 0);
		keep[i] = t_keep(mem[i]);
	}
	sp = t_alias(mem[1], "/dev/disk/by-id/mem1");
	cfg.spares = &sp;
	cfg.nspares = 1;
	assert_int_equal(raid_create(keep, 3, &cfg, false), -EINVAL);
	for (unsigned int i = 0; i < 3; i++) {
		assert_int_equal(blk_rw(mem[i], BLK_OP_READ, RAID_SB_BLKNO, 1, b, 0), 0);
		assert_int_not_equal(jg_le32(((struct raid_sb *)b)->hdr.magic), RAID_SB_MAGIC);
		blk_close(keep[i]);
		blk_close(mem[i]);
	}
	blk_close(sp);
	free(b);
}

/* ------------------------------------- a spare's activation cut by a crash */

/* The whole device @d of @blocks blocks, in a new buffer. */
static uint8_t *t_dev_image(struct blk_dev *d, uint64_t blocks)
{
	uint8_t *b = jg_alloc_blocks(blocks);

	assert_non_null(b);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 0, (uint32_t)blocks, b, 0), 0);
	return b;
}

/*
 * Role @k of @gc fails on a running array with one hot spare, which is taken
 * and rebuilt onto (as the daemon's spare thread does), every device in one
 * fault domain cut at its @cut_at-th write (0: never), unflushed writes kept,
 * lost or torn. Then, power back, the members and the spare are assembled
 * without force (nothing but the failure and the rebuild was written), and
 * whatever the cut left -- role @k still its old device, failed with the spare
 * still a spare, or the spare a member being rebuilt or whole -- every block
 * reads right before anything is repaired, the device is never both a spare and
 * a member, and after the rebuild is taken up (resumed, or started from the
 * spare) role @k holds exactly the lost member's content and parity is right.
 * Returns the writes of the uncut activation in *@w0 (before) and *@w1 (after).
 */
static void t_crash_spare(const struct geo_case *gc, unsigned int k, uint64_t cut_at,
			  uint64_t *w0, uint64_t *w1)
{
	struct raid_fault_cfg fc = {.seed = cut_at * 13 + 7, .tear = true,
				    .cut_after_writes = cut_at};
	struct blk_dev *f[RAID_MAX_MEMBERS + 1], *devs[RAID_MAX_MEMBERS + 1], *d;
	struct raid_assemble_cfg acfg = t_cfg(NULL);
	struct raid_fault_domain *dom;
	struct raid_info info;
	struct raid_geo g;
	uint8_t *data, *rd, *old, *now;
	unsigned int role;
	bool spare_is_k, all;
	struct tsp s;

	t_make_spares(&s, gc, 1);
	assert_int_equal(t_assemble_sp(&s, ~0u, 0), 0);
	raid_info_get(s.t.a, &info);
	data = jg_alloc_blocks(info.array_blocks);
	rd = jg_alloc_blocks(info.array_blocks);
	t_fill(data, info.array_blocks, 300 + k);
	assert_int_equal(t_io(&s.t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, data, 0), 0);
	t_stop(&s.t);
	t_geo(&s.t, &g);
	old = t_member_image(&s.t, k);

	/* the running array, every device behind the fault domain */
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	for (unsigned int i = 0; i <= s.t.n; i++) {
		assert_int_equal(raid_dev_fault_open(dom, i < s.t.n ? s.t.mem[i] : s.sp[0], &f[i]),
				 0);
		devs[i] = t_keep(f[i]);
	}
	assert_int_equal(raid_assemble(devs, s.t.n + 1, &acfg, &s.t.a), 0);
	*w0 = raid_fault_domain_writes(dom);
	(void)raid_fail_member(s.t.a, k);
	if (!raid_spare_take(s.t.a, &role, &d)) {
		assert_int_equal(role, k);
		(void)raid_rebuild(s.t.a, role, d, NULL, NULL); /* a dead process after the cut */
	}
	*w1 = raid_fault_domain_writes(dom);
	raid_abandon(s.t.a);
	s.t.a = NULL;
	for (unsigned int i = 0; i <= s.t.n; i++)
		blk_close(f[i]);
	raid_fault_domain_free(dom);

	/* power back, every device given (the failed one too: it came back) */
	all = !t_assemble_sp(&s, ~0u, 1);
	/* refused: its failure was recorded, the spare not yet a member, so it is
	 * stale; left out as the refusal says */
	if (!all && t_assemble_sp(&s, ~(1u << k), 1))
		fail_msg("level=%u members=%u cut at write %llu: the array does not assemble without force",
			 gc->level, gc->n, (unsigned long long)cut_at);
	raid_info_get(s.t.a, &info);
	spare_is_k = !strcmp(info.members[k].name, "spare0");
	if (!all && spare_is_k)
		fail_msg("level=%u members=%u cut at write %llu: refused with the failed member given, though the spare holds its role (assemble.c (S14))",
			 gc->level, gc->n, (unsigned long long)cut_at);
	if (spare_is_k == (info.nspares == 1))
		fail_msg("level=%u members=%u cut at write %llu: the spare is %s",
			 gc->level, gc->n, (unsigned long long)cut_at,
			 spare_is_k ? "both a member and a spare" : "neither a member nor a spare");
	assert_int_equal(t_io(&s.t, BLK_OP_READ, 0, (uint32_t)info.array_blocks, rd, 0), 0);
	if (memcmp(rd, data, info.array_blocks * JG_BLOCK_SIZE))
		fail_msg("level=%u members=%u cut at write %llu: data differs after the crash (role %u %s)",
			 gc->level, gc->n, (unsigned long long)cut_at, k,
			 spare_is_k ? "on the spare" : "on its old device");
	if (spare_is_k && info.members[k].rebuilding)
		assert_int_equal(raid_rebuild(s.t.a, k, NULL, NULL, NULL), 0);
	else if (!spare_is_k && info.members[k].failed) {
		assert_int_equal(raid_spare_take(s.t.a, &role, &d), 0);
		assert_int_equal(raid_rebuild(s.t.a, role, d, NULL, NULL), 0);
		spare_is_k = true;
	}
	if (raid_scrub(s.t.a, false, NULL, NULL, NULL) != 0)
		fail_msg("level=%u members=%u cut at write %llu: parity mismatches after the rebuild",
			 gc->level, gc->n, (unsigned long long)cut_at);
	t_stop(&s.t);
	now = spare_is_k ? t_dev_image(s.sp[0], MB) : t_member_image(&s.t, k);
	if (memcmp(old + g.data_offset * JG_BLOCK_SIZE, now + g.data_offset * JG_BLOCK_SIZE,
		   g.data_blocks * JG_BLOCK_SIZE))
		fail_msg("level=%u members=%u cut at write %llu: role %u differs from the lost member",
			 gc->level, gc->n, (unsigned long long)cut_at, k);
	free(now);
	free(old);
	free(data);
	free(rd);
	t_free_sp(&s);
}

/*
 * Issue 43: a spare's activation (the member's failure recorded, the spare's
 * superblock turned into a member's, its rebuild with marks, the last round)
 * cut by a power failure at every write it makes, in each level.
 */
static void test_spare_crash_activation(void **state)
{
	bool quick = getenv("JGRFS_TEST_QUICK"); /* under valgrind: a sample */

	(void)state;
	t_default_knobs.rebuild_mark_always = true;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		const struct geo_case *gc = &geo_each_level[gi];
		unsigned int k = 1 + gi % (gc->n - 1), cuts = 0;
		uint64_t w0, w1, b0, b1;

		t_crash_spare(gc, k, 0, &w0, &w1);
		if (w1 - w0 < 4)
			fail_msg("level=%u: the activation wrote %llu times, too few to cut",
				 gc->level, (unsigned long long)(w1 - w0));
		for (uint64_t at = w0 + 1; at <= w1; at += quick ? 7 : 1) {
			t_crash_spare(gc, k, at, &b0, &b1);
			if (b0 != w0)
				fail_msg("level=%u: the writes before the activation differ from run to run",
					 gc->level);
			cuts++;
		}
		print_message("level=%u members=%u: %u cuts over %llu writes of the activation\n",
			      gc->level, gc->n, cuts, (unsigned long long)(w1 - w0));
	}
	t_default_knobs.rebuild_mark_always = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spare_create_and_assemble),
	    cmocka_unit_test(test_spare_take_rebuilds_exact_content),
	    cmocka_unit_test(test_spare_take_without_spare),
	    cmocka_unit_test(test_spare_add_remove),
	    cmocka_unit_test(test_spare_refusals),
	    cmocka_unit_test(test_spare_any_event_count),
	    cmocka_unit_test(test_spare_named_by_rebuild),
	    cmocka_unit_test(test_spare_create_member_twice),
	    cmocka_unit_test(test_spare_crash_activation),
	};

	jg_log_set_level(JG_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
