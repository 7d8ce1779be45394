// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_dcsum.c - checksums of file data (issue 27, ro_compat
 * DATA_CSUM), over a RAID5 of memory members: a data block damaged on one
 * member reads back right and the member is rewritten and counted; two damaged
 * members in one row: EIO, never the wrong bytes; an overwrite updates the
 * slot; a volume without the feature works as before; data=ordered and
 * data=writeback are refused; the blocks an uncommitted declared transaction
 * wrote home early are settled by the next mount; a scrub meeting a block
 * whose new checksum is set but which is not on the array yet does not call
 * its row unresolved (issue 43).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fs_raidvol.h"

static uint64_t t_member_blocks = 4096;
static bool t_csum = true;

static void t_vol_new(struct t_vol *v, unsigned int level, unsigned int n, uint32_t chunk)
{
	struct fs_mkfs_opts mk = {.label = "dcsum", .data_csum = t_csum, .journal_blocks = 2048};

	t_vol_make(v, level, n, chunk, t_member_blocks, &mk);
}

static struct fs *t_mount(struct t_vol *v)
{
	struct fs_mount_opts o = {.data_mode = JNL_DATA_DECLARED, .no_commit_thread = true};
	struct fs *fs = NULL;

	assert_int_equal(fs_mount(raid_array_dev(v->a), &o, &fs), 0);
	return fs;
}

static void t_fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 13 + seed * 101 + (i >> 12));
}

/* The array block of logical block @lblk of @ino. */
static uint64_t t_pblk(struct fs *fs, uint64_t ino, uint64_t lblk)
{
	struct fs_inode ip;
	uint64_t pblk = 0, run;

	jg_mutex_lock(&fs->lock);
	assert_int_equal(fs_iget(fs, ino, &ip), 0);
	assert_int_equal(fs_bmap_get(fs, &ip, lblk, 1, &pblk, &run), 0);
	jg_mutex_unlock(&fs->lock);
	assert_true(pblk != 0);
	return pblk;
}

/* A file of @n bytes of pattern @seed in the root; its inode. */
static uint64_t t_file(struct fs *fs, const char *name, size_t n, unsigned int seed)
{
	uint8_t *d = malloc(n);
	struct fs_attr at;

	t_fill(d, n, seed);
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &at), 0);
	assert_int_equal(fs_write(fs, at.ino, 0, n, d), (ssize_t)n);
	free(d);
	return at.ino;
}

static void t_expect(struct fs *fs, uint64_t ino, size_t n, unsigned int seed)
{
	uint8_t *want = malloc(n), *got = malloc(n);

	t_fill(want, n, seed);
	assert_int_equal(fs_read(fs, ino, 0, n, got), (ssize_t)n);
	assert_memory_equal(got, want, n);
	free(want);
	free(got);
}

#define T_BYTES (4 * 4096 + 100)

/*
 * One data block (logical 1 of a file) damaged on its member: the read heals it
 * (right bytes, one heal, the member counted and rewritten); the other members
 * untouched; fsck clean after.
 */
static void test_dcsum_heal_one(void **state)
{
	unsigned int role;
	uint64_t ino, pblk, mblk;
	uint8_t *good, *now;
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	fs = t_mount(&v);
	assert_true(fs->dcsum_blocks > 0);
	ino = t_file(fs, "f", T_BYTES, 1);
	pblk = t_pblk(fs, ino, 1);
	assert_int_equal(fs_unmount(fs), 0);
	raid_layout_map(&v.geo, pblk, &role, &mblk);
	t_stop(&v);
	good = t_member_block(&v, role, mblk);
	t_damage(&v, role, mblk, 777);

	t_assemble(&v);
	fs = t_mount(&v);
	t_expect(fs, ino, T_BYTES, 1);
	assert_int_equal(fs->dcsum_heals, 1);
	assert_int_equal(fs->dcsum_errors, 0);
	t_corrected_only(&v, role, 1);
	/* read again: the member holds the block, no second heal */
	t_expect(fs, ino, T_BYTES, 1);
	assert_int_equal(fs->dcsum_heals, 1);
	assert_int_equal(fs_unmount(fs), 0);
	t_stop(&v);
	now = t_member_block(&v, role, mblk);
	assert_memory_equal(now, good, JG_BLOCK_SIZE);
	free(now);
	free(good);
	t_assemble(&v);
	{
		struct fsck_opts o = {.repair = false};
		struct fsck_report r;

		assert_int_equal(fs_fsck(raid_array_dev(v.a), &o, &r), 0);
		assert_int_equal(r.problems_found, 0);
	}
	t_vol_free(&v);
}

/*
 * The data block and the other data member of its row damaged (RAID5): no
 * version verifies: the read is -EIO, never the damaged bytes; the blocks of
 * other rows still read; nothing written or counted. A partial write into that
 * block is -EIO too (it would merge into damaged bytes and bless them).
 */
static void test_dcsum_two_damaged(void **state)
{
	unsigned int role, orole;
	uint64_t ino, pblk, mblk, row;
	uint8_t buf[4096], want[T_BYTES];
	uint8_t *before[RAID_MAX_MEMBERS];
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	fs = t_mount(&v);
	ino = t_file(fs, "f", T_BYTES, 2);
	pblk = t_pblk(fs, ino, 1);
	assert_int_equal(fs_unmount(fs), 0);
	raid_layout_map(&v.geo, pblk, &role, &mblk);
	row = (mblk - v.geo.data_offset) / v.geo.chunk_blocks;
	orole = raid_layout_member(&v.geo, row, raid_layout_pos(&v.geo, row, role) ? 0 : 1);
	t_stop(&v);
	t_damage(&v, role, mblk, 100);
	t_damage(&v, orole, mblk, 101);
	for (unsigned int m = 0; m < v.n; m++)
		before[m] = t_member_block(&v, m, mblk);

	t_assemble(&v);
	fs = t_mount(&v);
	t_fill(want, sizeof(want), 2);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(fs_read(fs, ino, 4096, 4096, buf), -EIO);
	assert_int_equal(fs_read(fs, ino, 0, T_BYTES, want), -EIO);
	assert_int_equal(fs->dcsum_heals, 0);
	assert_true(fs->dcsum_errors >= 1);
	/* block 0 is elsewhere: fine */
	t_fill(want, sizeof(want), 2);
	assert_int_equal(fs_read(fs, ino, 0, 4096, buf), 4096);
	assert_memory_equal(buf, want, 4096);
	/* a partial write into the damaged block */
	assert_int_equal(fs_write(fs, ino, 4096 + 10, 5, "hello"), -EIO);
	assert_int_equal(fs_read(fs, ino, 4096, 4096, buf), -EIO);
	t_corrected_only(&v, T_NONE, 0);
	(void)fs_unmount(fs);
	t_stop(&v);
	for (unsigned int m = 0; m < v.n; m++) {
		uint8_t *now = t_member_block(&v, m, mblk);

		assert_memory_equal(now, before[m], JG_BLOCK_SIZE);
		free(now);
		free(before[m]);
	}
	t_vol_free(&v);
}

/* The slot follows the data: a write, an overwrite, a partial write, a truncate's tail. */
static void t_slot_is(struct fs *fs, uint64_t pblk, const uint8_t *blk)
{
	uint8_t *other = jg_alloc_blocks(1);

	assert_int_equal(fs_data_csum_check(fs, pblk, blk), 1);
	assert_int_equal(fs_block_verify(fs, pblk, blk), BLK_VERIFIES); /* the scrub's oracle */
	memcpy(other, blk, JG_BLOCK_SIZE);
	other[5] ^= 1;
	assert_int_equal(fs_data_csum_check(fs, pblk, other), 0);
	/* (V5) a block not yet home may be in flight: the scrub looks again later */
	assert_int_equal(fs_block_verify(fs, pblk, other),
			 jnl_block_pending(fs->jnl, pblk) ? BLK_BUSY : BLK_FAILS);
	free(other);
}

static void test_dcsum_overwrite(void **state)
{
	uint8_t *blk = jg_alloc_blocks(1);
	uint64_t ino, pblk;
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	fs = t_mount(&v);
	ino = t_file(fs, "f", 2 * 4096, 3);
	pblk = t_pblk(fs, ino, 1);
	assert_int_equal(fs_read(fs, ino, 4096, 4096, blk), 4096);
	t_slot_is(fs, pblk, blk);
	memset(blk, 0x5a, 4096);
	assert_int_equal(fs_write(fs, ino, 4096, 4096, blk), 4096);
	t_slot_is(fs, pblk, blk);
	assert_int_equal(fs_write(fs, ino, 4096 + 100, 3, "abc"), 3);
	memcpy(blk + 100, "abc", 3);
	t_slot_is(fs, pblk, blk);
	assert_int_equal(fs_setattr(fs, ino, &(struct fs_attr){.size = 4096 + 50}, FS_SET_SIZE, NULL),
			 0);
	memset(blk + 50, 0, 4096 - 50);
	t_slot_is(fs, pblk, blk);
	/* a block never written as data: no checksum */
	assert_int_equal(fs_data_csum_check(fs, fs->nblocks - 1, blk), -ENOENT);
	/* the checksum blocks are metadata to the scrub's oracle, not free space */
	{
		uint64_t cb = fs->dcsum_start + pblk / FS_DCSUM_PER_BLOCK;
		uint8_t *cblk = jg_alloc_blocks(1);

		assert_int_equal(fs_checkpoint(fs), 0); /* the checksum block at home */
		assert_int_equal(jnl_read(fs->jnl, cb, 1, cblk), 0);
		assert_int_equal(fs_block_verify(fs, cb, cblk), BLK_VERIFIES);
		cblk[4000] ^= 1;
		assert_int_equal(fs_block_verify(fs, cb, cblk), BLK_FAILS);
		free(cblk);
	}
	assert_int_equal(fs_unmount(fs), 0);
	/* and after a remount, from the checksum block at home */
	fs = t_mount(&v);
	t_slot_is(fs, pblk, blk);
	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
	free(blk);
}

/*
 * Issue 43: the online scrub judges a mismatched row while a block of it is in
 * flight: overwritten in the running transaction, its slot already the new
 * data's, the array still holding the old. The row's parity is damaged too, so
 * the row mismatches and is judged. That block must not fail its check as
 * stored (the row would be "unresolved, data without a checksum": nothing
 * rebuilt from the damaged parity verifies): the row is handed back busy, not
 * counted, nothing written. After a commit it is judged like any row.
 */
static void test_dcsum_scrub_in_flight(void **state)
{
	uint8_t *blk = jg_alloc_blocks(1), *pold, *dold, *now;
	struct raid_scrub_counts sc = {0};
	unsigned int role, prole;
	uint64_t ino, pblk, mblk, row;
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	fs = t_mount(&v);
	ino = t_file(fs, "f", T_BYTES, 5);
	assert_int_equal(fs_sync(fs), 0);
	pblk = t_pblk(fs, ino, 1);
	raid_layout_map(&v.geo, pblk, &role, &mblk);
	row = pblk / v.geo.row_blocks;
	prole = raid_layout_member(&v.geo, row, RAID_POS_P(&v.geo));
	/* the overwrite: in the running transaction, not home (no commit thread) */
	memset(blk, 0x6b, JG_BLOCK_SIZE);
	assert_int_equal(fs_write(fs, ino, JG_BLOCK_SIZE, JG_BLOCK_SIZE, blk), JG_BLOCK_SIZE);
	assert_true(jnl_block_pending(fs->jnl, pblk));
	dold = t_member_block(&v, role, mblk);
	assert_memory_not_equal(dold, blk, JG_BLOCK_SIZE);
	/* the same line's parity damaged: the row mismatches */
	t_damage(&v, prole, mblk, 321);
	pold = t_member_block(&v, prole, mblk);

	raid_set_verifier(v.a, fs_block_verify_fn, fs);
	assert_int_equal(raid_scrub_rows(v.a, row, 1, true, NULL, NULL, &sc), 0);
	if (sc.unresolved)
		fail_msg("row %llu with a block in flight counted unresolved (%llu mismatches)",
			 (unsigned long long)row, (unsigned long long)sc.mismatches);
	assert_int_equal(sc.busy, 1);
	assert_int_equal(sc.busy_rows[0], row);
	assert_int_equal(sc.mismatches, 0);
	assert_int_equal(sc.repaired + sc.rebuilt, 0);
	/* nothing written: the data member as it was, the parity as damaged */
	now = t_member_block(&v, role, mblk);
	assert_memory_equal(now, dold, JG_BLOCK_SIZE);
	free(now);
	now = t_member_block(&v, prole, mblk);
	assert_memory_equal(now, pold, JG_BLOCK_SIZE);
	free(now);

	/* committed and checkpointed, the block home: judged now, nothing in doubt */
	assert_int_equal(fs_checkpoint(fs), 0);
	assert_false(jnl_block_pending(fs->jnl, pblk));
	memset(&sc, 0, sizeof(sc));
	assert_int_equal(raid_scrub_rows(v.a, row, 1, true, NULL, NULL, &sc), 0);
	assert_int_equal(sc.busy, 0);
	assert_int_equal(sc.unresolved, 0);
	memset(&sc, 0, sizeof(sc));
	assert_int_equal(raid_scrub_rows(v.a, 0, v.geo.rows, false, NULL, NULL, &sc), 0);
	assert_int_equal(sc.mismatches, 0);
	raid_set_verifier(v.a, NULL, NULL);
	now = t_member_block(&v, role, mblk);
	assert_memory_equal(now, blk, JG_BLOCK_SIZE);
	free(now);
	assert_int_equal(fs_read(fs, ino, JG_BLOCK_SIZE, JG_BLOCK_SIZE, blk), JG_BLOCK_SIZE);
	for (size_t i = 0; i < JG_BLOCK_SIZE; i++)
		assert_int_equal(blk[i], 0x6b);
	assert_int_equal(fs_unmount(fs), 0);
	t_corrected_only(&v, T_NONE, 0);
	t_vol_free(&v);
	free(dold);
	free(pold);
	free(blk);
}

/*
 * A volume made without the feature (as every volume before it) mounts in every
 * mode and reads and writes as before; no slot is ever checked. One with it:
 * ordered and writeback refused, read-only allowed, journal and declared work.
 */
static void test_dcsum_modes(void **state)
{
	static const enum jnl_data_mode modes[] = {JNL_DATA_WRITEBACK, JNL_DATA_ORDERED,
						   JNL_DATA_JOURNAL, JNL_DATA_DECLARED};
	struct t_vol v;
	struct fs *fs;
	uint64_t ino;

	(void)state;
	t_csum = false;
	t_vol_new(&v, 5, 4, 4);
	t_csum = true;
	for (unsigned int i = 0; i < 4; i++) {
		struct fs_mount_opts o = {.data_mode = modes[i], .no_commit_thread = true};
		char name[8];

		assert_int_equal(fs_mount(raid_array_dev(v.a), &o, &fs), 0);
		assert_int_equal(fs->dcsum_blocks, 0);
		snprintf(name, sizeof(name), "f%u", i);
		ino = t_file(fs, name, T_BYTES, i);
		t_expect(fs, ino, T_BYTES, i);
		assert_int_equal(fs_data_csum_check(fs, t_pblk(fs, ino, 0), "x"), -ENOENT);
		assert_int_equal(fs_unmount(fs), 0);
	}
	t_vol_free(&v);

	t_vol_new(&v, 5, 4, 4);
	for (unsigned int i = 0; i < 4; i++) {
		struct fs_mount_opts o = {.data_mode = modes[i], .no_commit_thread = true};
		char name[8];

		if (modes[i] == JNL_DATA_WRITEBACK || modes[i] == JNL_DATA_ORDERED) {
			assert_int_equal(fs_mount(raid_array_dev(v.a), &o, &fs), -EINVAL);
			o.readonly = true;
			assert_int_equal(fs_mount(raid_array_dev(v.a), &o, &fs), 0);
			assert_int_equal(fs_unmount(fs), 0);
			continue;
		}
		assert_int_equal(fs_mount(raid_array_dev(v.a), &o, &fs), 0);
		snprintf(name, sizeof(name), "f%u", i);
		ino = t_file(fs, name, T_BYTES, i);
		t_expect(fs, ino, T_BYTES, i);
		{
			uint8_t *blk = jg_alloc_blocks(1);

			assert_int_equal(fs_read(fs, ino, 4096, 4096, blk), 4096);
			t_slot_is(fs, t_pblk(fs, ino, 1), blk);
			free(blk);
		}
		assert_int_equal(fs_unmount(fs), 0);
	}
	t_vol_free(&v);
}

/*
 * Declared mode, a crash: a file written and committed, then overwritten in
 * place with more data than a transaction holds, so the journal declares and
 * writes blocks home before the commit; abandoned there (the commit never
 * written). Those blocks hold data their committed slots do not match. The
 * next mount takes them from the journal's declare blocks and settles their
 * slots: every block reads (old or new bytes, no EIO), and after another
 * remount too (the settled slots are durable). A block damaged by hand
 * outside that set still fails: settling is not a blanket pass.
 */
#define T_BIG (17u << 20)
static void t_settle(unsigned int cuts_after_recovery)
{
	uint8_t *d = malloc(T_BIG), *got = malloc(T_BIG), *blk = jg_alloc_blocks(1);
	struct fs_mount_opts o = {.data_mode = JNL_DATA_DECLARED, .no_commit_thread = true};
	uint64_t ino, settled;
	struct t_vol v;
	struct fs *fs;

	t_member_blocks = 8192;
	t_vol_new(&v, 5, 4, 4);
	t_member_blocks = 4096;
	fs = t_mount(&v);
	ino = t_file(fs, "big", T_BIG, 4);
	assert_int_equal(fs_fsync(fs, ino, false), 0);
	t_fill(d, T_BIG, 5);
	assert_int_equal(fs_write(fs, ino, 0, T_BIG, d), (ssize_t)T_BIG);
	fs_abandon(fs);
	t_stop(&v);

	/* data=ordered is refused before recovery writes anything: not a byte
	 * of any member changes */
	if (!cuts_after_recovery) {
		struct fs_mount_opts ord = {.data_mode = JNL_DATA_ORDERED, .no_commit_thread = true};
		uint64_t bytes = v.mem[0]->nblocks * JG_BLOCK_SIZE;
		uint8_t *img[RAID_MAX_MEMBERS], *now = jg_alloc_blocks(v.mem[0]->nblocks);

		t_assemble(&v);
		for (unsigned int m = 0; m < v.n; m++) {
			img[m] = jg_alloc_blocks(v.mem[m]->nblocks);
			assert_int_equal(blk_rw(v.mem[m], BLK_OP_READ, 0, (uint32_t)v.mem[m]->nblocks,
						img[m], 0), 0);
		}
		assert_int_equal(fs_mount(raid_array_dev(v.a), &ord, &fs), -EINVAL);
		for (unsigned int m = 0; m < v.n; m++) {
			assert_int_equal(blk_rw(v.mem[m], BLK_OP_READ, 0, (uint32_t)v.mem[m]->nblocks,
						now, 0), 0);
			assert_memory_equal(now, img[m], bytes);
			free(img[m]);
		}
		free(now);
		t_stop(&v);
	}

	/* the power cut again right after recovery, before the settling commit:
	 * recovery has emptied the log; its superblock still names the dropped
	 * transaction, whose declare blocks the next recovery reads again */
	for (unsigned int k = 0; k < cuts_after_recovery; k++) {
		t_assemble(&v);
		assert_int_equal(fs_open(raid_array_dev(v.a), &o, false, &fs), 0);
		assert_true(fs->dcsum_nunsettled > 0);
		fs_abandon(fs);
		t_stop(&v);
	}
	t_assemble(&v);
	assert_int_equal(fs_mount(raid_array_dev(v.a), &o, &fs), 0);
	settled = fs->dcsum_settled;
	assert_true(settled > 0);
	assert_int_equal(fs_read(fs, ino, 0, T_BIG, got), (ssize_t)T_BIG);
	assert_int_equal(fs->dcsum_errors, 0);
	assert_int_equal(fs_unmount(fs), 0);
	fs = t_mount(&v);
	assert_int_equal(fs_read(fs, ino, 0, T_BIG, got), (ssize_t)T_BIG);
	assert_int_equal(fs->dcsum_errors, 0);
	assert_int_equal(fs->dcsum_settled, 0);
	/* damage outside the settled set, consistent with parity (written through
	 * the array): detected, not healable */
	{
		uint64_t pblk = t_pblk(fs, ino, 3);

		assert_int_equal(fs_unmount(fs), 0);
		assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_READ, pblk, 1, blk, 0), 0);
		blk[9] ^= 0xff;
		assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_WRITE, pblk, 1, blk, 0), 0);
		fs = t_mount(&v);
		assert_int_equal(fs_read(fs, ino, 3 * 4096, 4096, got), -EIO);
		assert_int_equal(fs_unmount(fs), 0);
	}
	t_vol_free(&v);
	free(d);
	free(got);
	free(blk);
}

/*
 * fsck reads every checksum block; one damaged beyond healing (written through
 * the array: its parity agrees) is a problem; -y writes it again with every
 * slot empty, after which fsck is clean and the file reads (unverified).
 */
static void test_dcsum_fsck(void **state)
{
	uint8_t *blk = jg_alloc_blocks(1);
	struct fsck_opts n = {.repair = false}, y = {.repair = true};
	struct fsck_report r;
	uint64_t ino, pblk, cb;
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	fs = t_mount(&v);
	ino = t_file(fs, "f", T_BYTES, 6);
	pblk = t_pblk(fs, ino, 0);
	cb = fs->dcsum_start + pblk / FS_DCSUM_PER_BLOCK;
	assert_int_equal(fs_unmount(fs), 0);
	assert_int_equal(fs_fsck(raid_array_dev(v.a), &n, &r), 0);
	assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_READ, cb, 1, blk, 0), 0);
	blk[100] ^= 0xff;
	assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_WRITE, cb, 1, blk, 0), 0);
	assert_int_equal(fs_fsck(raid_array_dev(v.a), &n, &r), 4);
	assert_int_equal(r.problems_found, 1);
	assert_int_equal(fs_fsck(raid_array_dev(v.a), &y, &r), 1);
	assert_int_equal(r.problems_fixed, 1);
	assert_int_equal(fs_fsck(raid_array_dev(v.a), &n, &r), 0);
	fs = t_mount(&v);
	t_expect(fs, ino, T_BYTES, 6);
	assert_int_equal(fs_data_csum_check(fs, pblk, blk), -ENOENT);
	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
	free(blk);
}

static void test_dcsum_settle(void **state)
{
	(void)state;
	t_settle(0);
}

/* The same, with the power cut twice between recovery and the settling commit. */
static void test_dcsum_settle_cut(void **state)
{
	(void)state;
	t_settle(2);
}


/* ------------------------------------------------- the lazy region (D3) */

static uint32_t fs_seed_of(struct t_vol *v)
{
	uint8_t *b = jg_alloc_blocks(1);
	uint32_t seed;

	assert_int_equal(blk_rw(raid_array_dev(v->a), BLK_OP_READ, FS_SB_BLKNO, 1, b, 0), 0);
	seed = jg_crc_seed(((const struct fs_super *)b)->uuid);
	free(b);
	return seed;
}

static uint64_t t_sb_mark(struct t_vol *v, bool *lazy)
{
	uint8_t *b = jg_alloc_blocks(1);
	const struct fs_super *sb = (const struct fs_super *)b;
	uint64_t mark;

	assert_int_equal(blk_rw(raid_array_dev(v->a), BLK_OP_READ, FS_SB_BLKNO, 1, b, 0), 0);
	*lazy = jg_le32(sb->feature_incompat) & FS_FEATURE_INCOMPAT_LAZY_DCSUM;
	mark = jg_le64(sb->dcsum_init);
	free(b);
	return mark;
}

/* Garbage (a pattern no checksum block has) in checksum block @i of the region. */
static void t_region_garbage(struct t_vol *v, uint64_t start, uint64_t i)
{
	uint8_t *b = jg_alloc_blocks(1);

	memset(b, 0x5a, JG_BLOCK_SIZE);
	assert_int_equal(blk_rw(raid_array_dev(v->a), BLK_OP_WRITE, start + i, 1, b, 0), 0);
	free(b);
}

/*
 * mkfs writes no checksum block: the superblock says LAZY_DCSUM with the mark
 * at 0. Past the mark nothing is read: garbage there is no checksum (a read of
 * the block is unverified, the scrub's oracle calls the region block free,
 * fsck is clean). The first write moves the mark over its slot's block in its
 * own transaction (the blocks it passes written empty), and the slot is kept
 * and trusted after a remount: damage to the data block is then caught.
 */
static void test_dcsum_lazy_write(void **state)
{
	struct fsck_opts n = {.repair = false};
	struct fsck_report r;
	uint8_t *blk = jg_alloc_blocks(1);
	uint64_t ino, pblk, start, nblocks, k;
	struct t_vol v;
	struct fs *fs;
	bool lazy;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	assert_int_equal(t_sb_mark(&v, &lazy), 0);
	assert_true(lazy);
	fs = t_mount(&v);
	start = fs->dcsum_start;
	nblocks = fs->dcsum_blocks;
	assert_int_equal(fs->dcsum_init, 0);
	assert_true(nblocks > 2);
	assert_int_equal(fs_unmount(fs), 0);
	for (uint64_t i = 0; i < nblocks; i++)
		t_region_garbage(&v, start, i);
	assert_int_equal(fs_fsck(raid_array_dev(v.a), &n, &r), 0);

	fs = t_mount(&v);
	/* a block past the mark, as the scrub would ask about it: free */
	assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_READ, start + 1, 1, blk, 0), 0);
	assert_int_equal(fs_block_verify(fs, start + 1, blk), BLK_FREE);
	ino = t_file(fs, "f", T_BYTES, 7);
	pblk = t_pblk(fs, ino, 0);
	k = pblk / FS_DCSUM_PER_BLOCK;
	assert_true(k + 1 < nblocks);
	assert_int_equal(fs->dcsum_init, k + 1);
	assert_int_equal(fs_unmount(fs), 0);
	/* the blocks the mark passed hold a checksum block each, not the garbage */
	for (uint64_t i = 0; i <= k; i++) {
		assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_READ, start + i, 1, blk, 0), 0);
		assert_int_equal(jg_blk_verify(blk, JG_BLOCK_SIZE, FS_MAGIC_DCSUM, FS_FORMAT_VERSION,
					       start + i, fs_seed_of(&v)), 0);
	}
	assert_int_equal(t_sb_mark(&v, &lazy), k + 1);
	assert_true(lazy);
	assert_int_equal(fs_fsck(raid_array_dev(v.a), &n, &r), 0);

	/* the mark and the slot trusted after a remount */
	fs = t_mount(&v);
	assert_int_equal(fs->dcsum_init, k + 1);
	t_expect(fs, ino, T_BYTES, 7);
	assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_READ, pblk, 1, blk, 0), 0);
	assert_int_equal(fs_data_csum_check(fs, pblk, blk), 1);
	assert_int_equal(fs_unmount(fs), 0);
	blk[9] ^= 0xff; /* through the array: parity agrees, nothing to heal from */
	assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_WRITE, pblk, 1, blk, 0), 0);
	fs = t_mount(&v);
	assert_int_equal(fs_read(fs, ino, 0, 4096, blk), -EIO);
	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
	free(blk);
}

/*
 * The initialiser's steps: blocks written and the mark moved in a transaction
 * not yet committed are forgotten by a power cut (the old mark stands, the
 * blocks past it unwritten to it); committed, the mark is trusted. At the
 * region's end the flag goes: the volume is then as one whose mkfs wrote the
 * region (mark = end), and fsck reads every block of it.
 */
static void test_dcsum_lazy_initialiser(void **state)
{
	struct fsck_opts n = {.repair = false};
	struct fsck_report r;
	uint64_t left, nblocks, ino;
	struct t_vol v;
	struct fs *fs;
	bool lazy;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	fs = t_mount(&v);
	nblocks = fs->dcsum_blocks;
	assert_int_equal(fs_dcsum_init_step(fs, 2, &left), 0);
	assert_int_equal(left, nblocks - 2);
	assert_int_equal(fs_sync(fs), 0);
	assert_int_equal(fs_dcsum_init_step(fs, 3, &left), 0);
	assert_int_equal(fs->dcsum_init, 5);
	fs_abandon(fs); /* the power cut: the second step never committed */
	t_stop(&v);
	t_assemble(&v);
	fs = t_mount(&v);
	assert_int_equal(fs->dcsum_init, 2);
	ino = t_file(fs, "g", T_BYTES, 8);
	while (left)
		assert_int_equal(fs_dcsum_init_step(fs, 1000, &left), 0);
	assert_int_equal(fs->dcsum_init, nblocks);
	assert_int_equal(fs_dcsum_init_step(fs, 1000, &left), 0); /* nothing more */
	assert_int_equal(left, 0);
	assert_int_equal(fs_unmount(fs), 0);
	assert_int_equal(t_sb_mark(&v, &lazy), 0);
	assert_false(lazy);
	assert_int_equal(fs_fsck(raid_array_dev(v.a), &n, &r), 0);
	fs = t_mount(&v);
	assert_int_equal(fs->dcsum_init, nblocks);
	t_expect(fs, ino, T_BYTES, 8);
	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
}

/* A mark at or past the region's end, or without data checksums, is refused. */
static void test_dcsum_lazy_bad_mark(void **state)
{
	uint8_t *b = jg_alloc_blocks(1);
	struct fs_super *sb = (struct fs_super *)b;
	struct fs_mount_opts o = {.data_mode = JNL_DATA_DECLARED, .no_commit_thread = true};
	struct t_vol v;
	struct fs *fs = NULL;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_READ, FS_SB_BLKNO, 1, b, 0), 0);
	sb->dcsum_init = sb->dcsum_blocks;
	jg_blk_seal(b, JG_BLOCK_SIZE, FS_MAGIC_SUPER, FS_FORMAT_VERSION, 0, 0, FS_SB_BLKNO,
		    jg_crc_seed(sb->uuid));
	assert_int_equal(blk_rw(raid_array_dev(v.a), BLK_OP_WRITE, FS_SB_BLKNO, 1, b, 0), 0);
	assert_int_equal(fs_mount(raid_array_dev(v.a), &o, &fs), -EUCLEAN);
	assert_null(fs);
	t_vol_free(&v);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dcsum_heal_one),
	    cmocka_unit_test(test_dcsum_two_damaged),
	    cmocka_unit_test(test_dcsum_overwrite),
	    cmocka_unit_test(test_dcsum_scrub_in_flight),
	    cmocka_unit_test(test_dcsum_modes),
	    cmocka_unit_test(test_dcsum_settle),
	    cmocka_unit_test(test_dcsum_settle_cut),
	    cmocka_unit_test(test_dcsum_fsck),
	    cmocka_unit_test(test_dcsum_lazy_write),
	    cmocka_unit_test(test_dcsum_lazy_initialiser),
	    cmocka_unit_test(test_dcsum_lazy_bad_mark),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
