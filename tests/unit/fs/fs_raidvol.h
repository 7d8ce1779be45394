/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/fs/fs_raidvol.h - a filesystem over a RAID array of memory members,
 * for the tests that damage a member and read through the array (test_heal.c,
 * test_dcsum.c): members that outlive the array, assembly and stop, a member
 * block read or flipped behind the array's back, its corrected-error count.
 */
#ifndef JGRFS_TESTS_FS_RAIDVOL_H
#define JGRFS_TESTS_FS_RAIDVOL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fs_i.h"
#include "jgrfs/raid.h"
#include "raid_i.h"
#include "../keep_dev.h"

struct t_vol {
	unsigned int n;
	struct blk_dev *mem[RAID_MAX_MEMBERS];
	struct raid_array *a;
	struct raid_geo geo;
};

static inline void t_assemble(struct t_vol *v)
{
	struct blk_dev *devs[RAID_MAX_MEMBERS];

	for (unsigned int i = 0; i < v->n; i++)
		devs[i] = t_keep(v->mem[i]);
	assert_int_equal(raid_assemble(devs, v->n, NULL, &v->a), 0);
	v->geo = v->a->geo;
}

static inline void t_stop(struct t_vol *v)
{
	assert_int_equal(raid_stop(v->a), 0);
	v->a = NULL;
}

/* A clean RAID@level of @n members of @member_blocks blocks, bitmap policy, @mk on it; assembled. */
static inline void t_vol_make(struct t_vol *v, unsigned int level, unsigned int n, uint32_t chunk,
			      uint64_t member_blocks, const struct fs_mkfs_opts *mk)
{
	struct raid_create_cfg cc = {.level = level,
				     .chunk_blocks = chunk,
				     .resync = RAID_RESYNC_BITMAP,
				     .assume_clean = true,
				     .bitmap_region_blocks = 64};
	struct blk_dev *devs[RAID_MAX_MEMBERS];

	memset(v, 0, sizeof(*v));
	v->n = n;
	for (unsigned int i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, member_blocks, &v->mem[i]), 0);
		devs[i] = t_keep(v->mem[i]);
	}
	assert_int_equal(raid_create(devs, n, &cc, false), 0);
	for (unsigned int i = 0; i < n; i++)
		blk_close(devs[i]);
	t_assemble(v);
	assert_int_equal(fs_mkfs(raid_array_dev(v->a), mk), 0);
}

static inline void t_vol_free(struct t_vol *v)
{
	if (v->a)
		t_stop(v);
	for (unsigned int i = 0; i < v->n; i++)
		blk_close(v->mem[i]);
}

/* Flip byte @at of member block @mblk of member @m. */
static inline void t_damage(struct t_vol *v, unsigned int m, uint64_t mblk, size_t at)
{
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(v->mem[m], BLK_OP_READ, mblk, 1, b, 0), 0);
	b[at] ^= 0xa5;
	assert_int_equal(blk_rw(v->mem[m], BLK_OP_WRITE, mblk, 1, b, 0), 0);
	free(b);
}

/* Member @m's block @mblk, as the member holds it (the caller frees it). */
static inline uint8_t *t_member_block(struct t_vol *v, unsigned int m, uint64_t mblk)
{
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(v->mem[m], BLK_OP_READ, mblk, 1, b, 0), 0);
	return b;
}

/* Read errors corrected on member @m (heals counted there). */
static inline uint64_t t_corrected(struct t_vol *v, unsigned int m)
{
	struct raid_info info;

	raid_info_get(v->a, &info);
	return info.members[m].read_errors_corrected;
}

#define T_NONE UINT32_MAX
/* Exactly @n read errors corrected on member @role (T_NONE: none) and none elsewhere. */
static inline void t_corrected_only(struct t_vol *v, unsigned int role, uint64_t n)
{
	for (unsigned int m = 0; m < v->n; m++)
		assert_int_equal(t_corrected(v, m), m == role ? n : 0);
}

#endif
