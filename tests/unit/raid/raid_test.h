/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/raid/raid_test.h - shared helpers of the RAID unit tests: arrays over
 * memory members (optionally behind fault devices of one power domain), seeded
 * patterns, and a plain reference model of the array's content.
 */
#ifndef JGRFS_RAID_TEST_H
#define JGRFS_RAID_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jgrfs/base.h"
#include "jgrfs/raid.h"
#include "raid_format.h"
#include "raid_geo.h"
#include "raid_i.h"
#include "../keep_dev.h"

/*
 * The test knobs (include/jgrfs/raid.h) of every array this test program
 * assembles through t_assemble_mask() or t_cfg(); zero: as in production. A
 * test that needs a knob sets it here around its arrays, or on a running array
 * in a->test.
 */
static struct raid_test_knobs t_default_knobs;

/* @cfg (NULL: the defaults) with the test program's knobs. */
static inline struct raid_assemble_cfg t_cfg(const struct raid_assemble_cfg *cfg)
{
	struct raid_assemble_cfg c = {0};

	if (cfg)
		c = *cfg;
	c.test = t_default_knobs;
	return c;
}

/* raid_assemble() with t_cfg(@cfg). */
static inline int t_raid_assemble(struct blk_dev **devs, unsigned int n,
				  const struct raid_assemble_cfg *cfg, struct raid_array **out)
{
	struct raid_assemble_cfg c = t_cfg(cfg);

	return raid_assemble(devs, n, &c, out);
}

/* A test array: members in memory, optionally wrapped in fault devices. */
struct tarr {
	unsigned int n;
	struct blk_dev *mem[RAID_MAX_MEMBERS]; /* the memory devices, kept by the test */
	struct blk_dev *top[RAID_MAX_MEMBERS]; /* what the array sees (fault or mem) */
	struct raid_fault_domain *dom;
	struct raid_array *a;
	struct blk_dev *dev;
	uint64_t member_blocks;
	struct t_count count[RAID_MAX_MEMBERS];
};

static inline uint64_t t_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline void t_fill(uint8_t *buf, size_t nblocks, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < nblocks * JG_BLOCK_SIZE / 8; i++)
		((uint64_t *)buf)[i] = t_rand(&s);
}

/*
 * Make memory members (and fault wrappers with @fault_cfg), create the array.
 * With @old_seed the members first hold seeded noise, as disks that held
 * something else: the array's initial sync has work (test_sync); else they
 * hold zeros, which are in sync (assume_clean).
 */
static inline void t_make_old(struct tarr *t, const struct geo_case *gc, uint64_t member_blocks,
			      enum raid_resync_policy pol, uint32_t region,
			      const struct raid_fault_cfg *fault_cfg, uint64_t old_seed)
{
	struct raid_create_cfg cfg = {.level = gc->level,
				      .chunk_blocks = gc->chunk,
				      .resync = pol,
				      .bitmap_region_blocks = region,
				      .assume_clean = !old_seed};
	struct blk_dev *keep[RAID_MAX_MEMBERS];

	memset(t, 0, sizeof(*t));
	t->n = gc->n;
	t->member_blocks = member_blocks;
	if (fault_cfg)
		assert_int_equal(raid_fault_domain_new(fault_cfg, &t->dom), 0);
	for (unsigned int i = 0; i < gc->n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, member_blocks, &t->mem[i]), 0);
		if (old_seed) {
			uint8_t *junk = jg_alloc_blocks(member_blocks);

			assert_non_null(junk);
			t_fill(junk, member_blocks, old_seed + i);
			assert_int_equal(blk_rw(t->mem[i], BLK_OP_WRITE, 0, (uint32_t)member_blocks,
						junk, 0), 0);
			free(junk);
		}
		if (t->dom)
			assert_int_equal(raid_dev_fault_open(t->dom, t->mem[i], &t->top[i]), 0);
		else
			t->top[i] = t->mem[i];
		keep[i] = t_keep(t->top[i]);
	}
	assert_int_equal(raid_create(keep, gc->n, &cfg, false), 0);
	for (unsigned int i = 0; i < gc->n; i++)
		blk_close(keep[i]);
}

static inline void t_make(struct tarr *t, const struct geo_case *gc, uint64_t member_blocks,
			  enum raid_resync_policy pol, uint32_t region,
			  const struct raid_fault_cfg *fault_cfg)
{
	t_make_old(t, gc, member_blocks, pol, region, fault_cfg, 0);
}

/* Assemble from the members (all, or @mask of roles given). */
static inline int t_assemble_mask(struct tarr *t, uint32_t mask,
				  const struct raid_assemble_cfg *cfg)
{
	struct blk_dev *devs[RAID_MAX_MEMBERS] = {0};
	int rc;

	for (unsigned int i = 0; i < t->n; i++) {
		if (mask & (1u << i)) {
			devs[i] = t_keep(t->top[i]);
			((struct t_keep *)devs[i])->count = &t->count[i];
		}
	}
	rc = t_raid_assemble(devs, t->n, cfg, &t->a);
	if (rc) {
		for (unsigned int i = 0; i < t->n; i++)
			blk_close(devs[i]);
		t->a = NULL;
		t->dev = NULL;
		return rc;
	}
	t->dev = raid_array_dev(t->a);
	return 0;
}

static inline void t_assemble(struct tarr *t)
{
	assert_int_equal(t_assemble_mask(t, ~0u, NULL), 0);
}

static inline void t_stop(struct tarr *t)
{
	if (t->a)
		assert_int_equal(raid_stop(t->a), 0);
	t->a = NULL;
	t->dev = NULL;
}

static inline void t_free(struct tarr *t)
{
	if (t->a)
		raid_abandon(t->a);
	t->a = NULL;
	for (unsigned int i = 0; i < t->n; i++) {
		if (t->top[i] != t->mem[i])
			blk_close(t->top[i]);
		blk_close(t->mem[i]);
	}
	if (t->dom)
		raid_fault_domain_free(t->dom);
	memset(t, 0, sizeof(*t));
}

/* Read the whole memory member @i (n blocks) into a new buffer. */
static inline uint8_t *t_member_image(struct tarr *t, unsigned int i)
{
	uint8_t *b = jg_alloc_blocks(t->member_blocks);

	assert_non_null(b);
	assert_int_equal(blk_rw(t->mem[i], BLK_OP_READ, 0, (uint32_t)t->member_blocks, b, 0), 0);
	return b;
}

/* The geometry from member 0's superblock (or the first present member). */
static inline void t_geo(struct tarr *t, struct raid_geo *g)
{
	uint8_t *b = jg_alloc_blocks(1);
	struct raid_sb *sb = (struct raid_sb *)b;

	assert_int_equal(blk_rw(t->mem[0], BLK_OP_READ, 0, 1, b, 0), 0);
	assert_int_equal(raid_geo_init(g, jg_le32(sb->level), jg_le32(sb->nmembers),
				       jg_le32(sb->chunk_blocks), jg_le64(sb->data_offset),
				       jg_le64(sb->data_blocks)),
			 0);
	free(b);
}

static inline void t_count_reset(struct tarr *t)
{
	memset(t->count, 0, sizeof(t->count));
}

/* Array I/O of one request. */
static inline int t_io(struct tarr *t, int op, uint64_t blkno, uint32_t n, void *buf,
		       uint32_t flags)
{
	return blk_rw(t->dev, op, blkno, n, buf, flags);
}

/*
 * Count the rows of the members whose parity does not match their data, read
 * straight from the memory members with a byte-wise reference (not the array).
 */
static inline uint8_t t_gf_mul2(uint8_t x)
{
	return (uint8_t)((x << 1) ^ ((x & 0x80) ? 0x1d : 0));
}

/* Whether row @r's parity matches its data on the memory members. */
static inline bool t_row_in_sync(struct tarr *t, const struct raid_geo *g, uint64_t r)
{
	size_t cb = (size_t)g->chunk_blocks * JG_BLOCK_SIZE;
	uint8_t *chunk[RAID_MAX_MEMBERS];
	bool ok = true;

	for (unsigned int p = 0; p < g->n; p++) {
		chunk[p] = jg_alloc_blocks(g->chunk_blocks); /* a device buffer: aligned */
		assert_non_null(chunk[p]);
		assert_int_equal(blk_rw(t->mem[raid_layout_member(g, r, p)], BLK_OP_READ,
					g->data_offset + r * g->chunk_blocks, g->chunk_blocks,
					chunk[p], 0),
				 0);
	}
	for (size_t i = 0; i < cb && ok; i++) {
		uint8_t pp = 0, q = 0;

		for (int d = (int)g->ndata - 1; d >= 0; d--) {
			pp ^= chunk[d][i];
			q = t_gf_mul2(q) ^ chunk[d][i];
		}
		ok = pp == chunk[g->ndata][i] && (g->npar == 1 || q == chunk[g->ndata + 1][i]);
	}
	for (unsigned int p = 0; p < g->n; p++)
		free(chunk[p]);
	return ok;
}

static inline uint64_t t_ref_mismatches(struct tarr *t, const struct raid_geo *g)
{
	uint64_t bad = 0;

	for (uint64_t r = 0; r < g->rows; r++)
		bad += !t_row_in_sync(t, g, r);
	return bad;
}

#endif /* JGRFS_RAID_TEST_H */
