/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/journal/jnl_test.h - helpers shared by the journal tests: a memory
 * device with a journal region, block patterns and an expected-contents model.
 */
#ifndef JGRFS_TESTS_JNL_TEST_H
#define JGRFS_TESTS_JNL_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jgrfs/journal.h"
#include "jgrfs/raid.h"

#define T_DEV_BLOCKS 2304u	/* device: blocks 0..1279 fs, journal from 1280 */
#define T_JSTART 1280u
#define T_JBLOCKS 1024u

static const uint8_t t_uuid[16] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
				    0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 0x01 };

/* Block @blkno, version @ver: a pattern no other (blkno, ver) produces. */
static inline void t_fill(uint8_t *b, uint64_t blkno, uint32_t ver)
{
	uint64_t x = blkno * 0x9e3779b97f4a7c15ull ^ ((uint64_t)ver << 32) ^ ver;

	for (size_t i = 0; i < JG_BLOCK_SIZE; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, 8);
	}
	memcpy(b, &blkno, 8);
	memcpy(b + 8, &ver, 4);
}

/* The version a block holds (0 for a never-written, zero block); -1 for garbage. */
static inline int64_t t_version_of(const uint8_t *b, uint64_t blkno)
{
	uint8_t ref[JG_BLOCK_SIZE];	/* on the stack: threads call this */
	uint32_t ver;
	uint64_t bn;

	memcpy(&bn, b, 8);
	memcpy(&ver, b + 8, 4);
	if (bn == 0 && ver == 0) {
		for (size_t i = 0; i < JG_BLOCK_SIZE; i++)
			if (b[i])
				goto pattern;
		return 0;
	}
pattern:
	if (bn != blkno)
		return -1;
	t_fill(ref, blkno, ver);
	return memcmp(ref, b, JG_BLOCK_SIZE) ? -1 : (int64_t)ver;
}

static inline struct blk_dev *t_mem_dev(void)
{
	struct blk_dev *d = NULL;

	assert_int_equal(raid_dev_mem_open("mem0", T_DEV_BLOCKS, &d), 0);
	assert_int_equal(jnl_format(d, T_JSTART, T_JBLOCKS, t_uuid), 0);
	return d;
}

static inline struct jnl *t_open(struct blk_dev *d, enum jnl_data_mode mode, bool start)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true };
	struct jnl_recovery_report rep;
	struct jnl *j = NULL;

	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, &rep), 0);
	if (start)
		assert_int_equal(jnl_start(j), 0);
	return j;
}

/* Open the journal of @d after a crash (jnl_abandon) and recover it. */
static inline struct jnl *t_reopen(struct blk_dev *d, enum jnl_data_mode mode, bool ro,
				   struct jnl_recovery_report *rep)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true,
			       .readonly = ro };
	struct jnl *j = NULL;

	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	assert_true(jnl_needs_recovery(j));
	assert_int_equal(jnl_recover(j, rep), 0);
	return j;
}

/* Read through the journal (or the device when @j is NULL) and return the version. */
static inline int64_t t_read_ver(struct jnl *j, struct blk_dev *d, uint64_t blkno)
{
	uint8_t *b = jg_alloc_blocks(1);
	int64_t v;

	if (j)
		assert_int_equal(jnl_read(j, blkno, 1, b), 0);
	else
		assert_int_equal(blk_rw(d, BLK_OP_READ, blkno, 1, b, 0), 0);
	v = t_version_of(b, blkno);
	free(b);
	return v;
}

static inline bool jnl_is_journal_mode(struct jnl *j)
{
	struct jnl_info info;

	jnl_info_get(j, &info);
	return info.mode == JNL_DATA_JOURNAL;
}

/* One handle writing @n blocks from @first (metadata or data) at version @ver. */
static inline uint64_t t_txn(struct jnl *j, uint64_t first, unsigned int n, uint32_t ver, bool meta)
{
	struct jnl_handle *h = NULL;
	uint8_t *b = jg_alloc_blocks(1);
	uint64_t tid;

	/* data takes no credits except in data=journal mode, where it is logged */
	assert_int_equal(jnl_handle_start(j, meta || jnl_is_journal_mode(j) ? n + 1 : 1, &h), 0);
	for (unsigned int i = 0; i < n; i++) {
		t_fill(b, first + i, ver);
		if (meta)
			assert_int_equal(jnl_handle_dirty_meta(h, first + i, b), 0);
		else
			assert_int_equal(jnl_handle_dirty_data(h, first + i, b), 0);
	}
	tid = jnl_handle_tid(h);
	assert_int_equal(jnl_handle_stop(h), 0);
	free(b);
	return tid;
}

#endif /* JGRFS_TESTS_JNL_TEST_H */
