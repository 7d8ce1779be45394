// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_heal.c - a metadata block whose checksum fails is healed
 * through the RAID array (issue 27): the filesystem over a RAID5 or RAID6 of
 * memory members, one byte of an inode table block (or a directory block)
 * flipped on its member while unmounted; after a remount the file's attributes
 * and content are right, the member holds the block again and its corrected
 * count names it. Two damaged members on RAID5: the error as before, nothing
 * written.
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
#include "jnl_format.h"

#define T_MEMBER_BLOCKS 4096
#define T_FILE_BYTES (3 * 4096 + 100)

static void t_vol_new(struct t_vol *v, unsigned int level, unsigned int n, uint32_t chunk)
{
	struct fs_mkfs_opts mk = {.label = "heal"};

	t_vol_make(v, level, n, chunk, T_MEMBER_BLOCKS, &mk);
}

static struct fs *t_mount(struct t_vol *v)
{
	struct fs_mount_opts o = {.data_mode = JNL_DATA_ORDERED, .no_commit_thread = true};
	struct fs *fs = NULL;

	assert_int_equal(fs_mount(raid_array_dev(v->a), &o, &fs), 0);
	return fs;
}

struct t_files {
	uint64_t ino, dir_ino, itable_blk, dir_blk;
	uint8_t data[T_FILE_BYTES];
};

static int t_find_dir(void *ctx, const struct fs_owner *o)
{
	struct t_files *f = ctx;

	if (o->kind == FS_OWNER_DIR && o->ino == f->dir_ino && o->lblk == 0)
		f->dir_blk = o->blkno;
	return 0;
}

/*
 * Padding files so that the victim's inode is in another inode table block
 * than the root's (the mount reads the root), a directory "d" holding the
 * victim, its content; unmounted. Its inode table block and d's first block.
 */
static void t_populate(struct t_vol *v, struct t_files *f)
{
	struct fs *fs = t_mount(v);
	struct fs_extent all = {.start = 0, .count = v->geo.array_blocks};
	struct fs_attr at;

	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &at), 0);
	f->dir_ino = at.ino;
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "pad%d", i);
		assert_int_equal(fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &at), 0);
	}
	assert_int_equal(fs_mknod(fs, f->dir_ino, "victim", S_IFREG | 0600, 0, 0, 0, &at), 0);
	f->ino = at.ino;
	for (size_t i = 0; i < sizeof(f->data); i++)
		f->data[i] = (uint8_t)(i * 7 + 3);
	assert_int_equal(fs_write(fs, f->ino, 0, sizeof(f->data), f->data),
			 (ssize_t)sizeof(f->data));
	f->itable_blk = fs_inode_blkno(fs, f->ino);
	assert_true(f->itable_blk != fs_inode_blkno(fs, FS_ROOT_INO));
	assert_true(f->itable_blk != fs_inode_blkno(fs, f->dir_ino));
	assert_int_equal(fs_owners(fs, &all, 1, NULL, t_find_dir, f, NULL), 0);
	assert_true(f->dir_blk != 0);
	assert_int_equal(fs_unmount(fs), 0); /* home, out of the buffer cache */
}

/* Look the victim up through d and read it: 0 when everything is right. */
static int t_check(struct fs *fs, const struct t_files *f)
{
	uint8_t got[T_FILE_BYTES];
	struct fs_attr at;
	int rc;

	rc = fs_lookup(fs, f->dir_ino, "victim", &at);
	if (rc)
		return rc;
	assert_int_equal(at.ino, f->ino);
	rc = fs_getattr(fs, f->ino, &at);
	if (rc)
		return rc;
	assert_int_equal(at.size, sizeof(f->data));
	assert_int_equal(at.mode & 07777, 0600);
	assert_int_equal(fs_read(fs, f->ino, 0, sizeof(got), got), (ssize_t)sizeof(got));
	assert_memory_equal(got, f->data, sizeof(got));
	return 0;
}

/*
 * One damaged inode table block and one damaged directory block (each on its
 * member), RAID5 and RAID6; RAID6 also with the P of the inode block's line
 * damaged (two members in one line). Remounted: right answers, members
 * rewritten, counted on them only, scrub clean, fsck clean.
 */
static void test_heal_fs_metadata(void **state)
{
	static const unsigned int geo[][3] = {{5, 4, 4}, {6, 5, 2}};

	(void)state;
	for (unsigned int gi = 0; gi < 2; gi++) {
		struct t_files *f = calloc(1, sizeof(*f));
		unsigned int irole, drole, prole = 0;
		uint64_t imblk, dmblk, irow;
		uint8_t *igood, *dgood, *pgood = NULL;
		struct raid_scrub_counts sc = {0};
		struct t_vol v;
		struct fs *fs;

		t_vol_new(&v, geo[gi][0], geo[gi][1], geo[gi][2]);
		t_populate(&v, f);
		raid_layout_map(&v.geo, f->itable_blk, &irole, &imblk);
		raid_layout_map(&v.geo, f->dir_blk, &drole, &dmblk);
		irow = (imblk - v.geo.data_offset) / v.geo.chunk_blocks;
		t_stop(&v);
		igood = t_member_block(&v, irole, imblk);
		dgood = t_member_block(&v, drole, dmblk);
		t_damage(&v, irole, imblk, 300);
		t_damage(&v, drole, dmblk, 1000);
		if (v.geo.npar == 2) {
			prole = raid_layout_member(&v.geo, irow, RAID_POS_P(&v.geo));
			pgood = t_member_block(&v, prole, imblk);
			t_damage(&v, prole, imblk, 2000);
		}

		t_assemble(&v);
		fs = t_mount(&v);
		assert_int_equal(t_check(fs, f), 0);
		assert_int_equal(fs->bc.heals, 2);
		for (unsigned int m = 0; m < v.n; m++) {
			uint64_t want = (m == irole) + (m == drole) + (pgood && m == prole);

			if (t_corrected(&v, m) != want)
				fail_msg("level %u member %u: %llu corrected, want %llu",
					 geo[gi][0], m, (unsigned long long)t_corrected(&v, m),
					 (unsigned long long)want);
		}
		assert_int_equal(fs_unmount(fs), 0);
		assert_int_equal(raid_scrub_rows(v.a, 0, v.geo.rows, false, NULL, NULL, &sc), 0);
		assert_int_equal(sc.mismatches, 0);
		t_stop(&v);
		{
			uint8_t *now = t_member_block(&v, irole, imblk);

			assert_memory_equal(now, igood, JG_BLOCK_SIZE);
			free(now);
			now = t_member_block(&v, drole, dmblk);
			assert_memory_equal(now, dgood, JG_BLOCK_SIZE);
			free(now);
			if (pgood) {
				now = t_member_block(&v, prole, imblk);
				assert_memory_equal(now, pgood, JG_BLOCK_SIZE);
				free(now);
			}
		}
		t_assemble(&v);
		{
			struct fsck_opts o = {.repair = false};
			struct fsck_report r;

			assert_int_equal(fs_fsck(raid_array_dev(v.a), &o, &r), 0);
			assert_int_equal(r.problems_found, 0);
		}
		t_vol_free(&v);
		free(igood);
		free(dgood);
		free(pgood);
		free(f);
	}
}

/*
 * RAID5, the inode table block and the other data member of its line damaged:
 * nothing verifies, the error stays as before the heal existed (-EUCLEAN),
 * and no member is written or counted.
 */
static void test_heal_fs_uncorrectable(void **state)
{
	struct t_files *f = calloc(1, sizeof(*f));
	unsigned int irole, orole;
	uint64_t imblk, irow;
	uint8_t *before[RAID_MAX_MEMBERS];
	struct t_vol v;
	struct fs *fs;
	struct fs_attr at;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	t_populate(&v, f);
	raid_layout_map(&v.geo, f->itable_blk, &irole, &imblk);
	irow = (imblk - v.geo.data_offset) / v.geo.chunk_blocks;
	orole = raid_layout_member(&v.geo, irow, raid_layout_pos(&v.geo, irow, irole) ? 0 : 1);
	t_stop(&v);
	t_damage(&v, irole, imblk, 300);
	t_damage(&v, orole, imblk, 301);
	for (unsigned int m = 0; m < v.n; m++)
		before[m] = t_member_block(&v, m, imblk);
	t_assemble(&v);
	fs = t_mount(&v);
	assert_int_equal(fs_getattr(fs, f->ino, &at), -EUCLEAN);
	assert_int_equal(fs->bc.heals, 0);
	t_corrected_only(&v, T_NONE, 0);
	(void)fs_unmount(fs); /* the damage was recorded: an error state */
	t_stop(&v);
	for (unsigned int m = 0; m < v.n; m++) {
		uint8_t *now = t_member_block(&v, m, imblk);

		assert_memory_equal(now, before[m], JG_BLOCK_SIZE);
		free(now);
		free(before[m]);
	}
	t_vol_free(&v);
	free(f);
}

/*
 * The journal's superblock (first block of its region) damaged on its member:
 * the mount heals it from the row, the member holds it again, and the damage is
 * counted on that member only. Without the heal one rotten member stopped every
 * mount (the 1000-copy bit rot campaign of issue 27 found it).
 */
static void test_heal_journal_superblock(void **state)
{
	struct t_files *f = calloc(1, sizeof(*f));
	unsigned int role;
	uint64_t mblk, jstart;
	uint8_t *good, *now;
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	t_populate(&v, f);
	fs = t_mount(&v);
	jstart = fs->jnl_start;
	assert_int_equal(fs_unmount(fs), 0);
	raid_layout_map(&v.geo, jstart, &role, &mblk);
	t_stop(&v);
	good = t_member_block(&v, role, mblk);
	t_damage(&v, role, mblk, 200);

	t_assemble(&v);
	fs = t_mount(&v);
	t_corrected_only(&v, role, 1);
	/* the member holds a superblock that verifies again (the mount has
	 * since written a newer one: the same check, not the same bytes) */
	now = t_member_block(&v, role, mblk);
	assert_int_equal(jg_blk_verify(now, JG_BLOCK_SIZE, JNL_MAGIC_SB, JNL_VERSION, jstart,
				       jg_crc_seed(((struct jnl_sb *)good)->uuid)),
			 0);
	free(now);
	assert_int_equal(t_check(fs, f), 0);
	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
	free(good);
	free(f);
}

/*
 * The filesystem's superblock (array block 0) damaged on its member: the mount
 * heals it (read before the journal is open, and again after recovery) and the
 * member holds it again. A read-only assembly mounted read-only heals it in
 * memory only: the member keeps the damage, and it is counted.
 */
static void test_heal_fs_superblock(void **state)
{
	struct t_files *f = calloc(1, sizeof(*f));
	struct raid_assemble_cfg ro = {.readonly = true};
	struct fs_mount_opts o = {
	    .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true, .readonly = true};
	struct blk_dev *devs[RAID_MAX_MEMBERS];
	unsigned int role;
	uint64_t mblk;
	uint8_t *good, *bad, *now;
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	t_populate(&v, f);
	raid_layout_map(&v.geo, FS_SB_BLKNO, &role, &mblk);
	t_stop(&v);
	good = t_member_block(&v, role, mblk);
	t_damage(&v, role, mblk, 600);
	bad = t_member_block(&v, role, mblk);

	/* read-only: healed in memory, not written */
	for (unsigned int i = 0; i < v.n; i++)
		devs[i] = t_keep(v.mem[i]);
	assert_int_equal(raid_assemble(devs, v.n, &ro, &v.a), 0);
	assert_int_equal(fs_mount(raid_array_dev(v.a), &o, &fs), 0);
	assert_int_equal(t_check(fs, f), 0);
	assert_true(t_corrected(&v, role) >= 1);
	assert_int_equal(fs_unmount(fs), 0);
	t_stop(&v);
	now = t_member_block(&v, role, mblk);
	assert_memory_equal(now, bad, JG_BLOCK_SIZE);
	free(now);

	/* writable: healed and rewritten */
	t_assemble(&v);
	fs = t_mount(&v);
	t_corrected_only(&v, role, 1);
	now = t_member_block(&v, role, mblk);
	assert_memory_equal(now, good, JG_BLOCK_SIZE); /* before the unmount rewrites it */
	free(now);
	assert_int_equal(t_check(fs, f), 0);
	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
	free(good);
	free(bad);
	free(f);
}

static int t_never(void *ctx, const void *blk)
{
	(void)ctx;
	(void)blk;
	return -1;
}

/*
 * jnl_read_heal hands back the journal's copy of a block it holds (a change
 * not yet home): the device's copy is not the newest, nothing is asked of it.
 * A block the journal does not hold goes to the device, which finds no version
 * the (never satisfied) check accepts: -EBADMSG, nothing written.
 */
static void test_heal_fs_journal_copy(void **state)
{
	struct t_files *f = calloc(1, sizeof(*f));
	uint8_t *buf = jg_alloc_blocks(1);
	struct fs_buf *b;
	struct fs_attr at;
	uint32_t rw = 7;
	struct t_vol v;
	struct fs *fs;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	t_populate(&v, f);
	fs = t_mount(&v);
	/* the victim's inode changes: its table block is the journal's now */
	assert_int_equal(fs_mknod(fs, f->dir_ino, "new", S_IFREG | 0600, 0, 0, 0, &at), 0);
	assert_int_equal(jnl_read_heal(fs->jnl, fs_inode_blkno(fs, at.ino), buf, t_never, NULL, &rw),
			 0);
	assert_int_equal(rw, 0);
	assert_int_equal(fs_bread(fs, fs_inode_blkno(fs, at.ino), FS_MAGIC_ITABLE, "t", &b), 0);
	assert_memory_equal(buf, b->data, JG_BLOCK_SIZE);
	fs_bput(fs, b);
	/* a block it does not hold: the array's verdict */
	assert_int_equal(jnl_read_heal(fs->jnl, v.geo.array_blocks - 1, buf, t_never, NULL, &rw),
			 -EBADMSG);
	assert_int_equal(rw, 0);
	t_corrected_only(&v, T_NONE, 0);
	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
	free(buf);
	free(f);
}

/* ------------------------------------------ fs_block_verify (issue 27, verify.c) */

struct t_find {
	uint64_t ino, data_blk, free_blk;
};

static int t_find_blocks(void *ctx, const struct fs_owner *o)
{
	struct t_find *f = ctx;

	if (o->kind == FS_OWNER_DATA && o->ino == f->ino && !f->data_blk)
		f->data_blk = o->blkno;
	if (o->kind == FS_OWNER_FREE && !f->free_blk)
		f->free_blk = o->blkno;
	return 0;
}

/* The array block @b as the filesystem's device holds it, into @out. */
static void t_array_read(struct t_vol *v, uint64_t b, uint8_t *out)
{
	assert_int_equal(blk_rw(raid_array_dev(v->a), BLK_OP_READ, b, 1, out, 0), 0);
}

/* The verdict on block @b as stored, and on it with byte @at flipped. */
static void t_verdicts(struct t_vol *v, struct fs *fs, uint64_t b, size_t at, int stored,
		       int flipped)
{
	uint8_t *blk = jg_alloc_blocks(1);

	t_array_read(v, b, blk);
	assert_int_equal(fs_block_verify(fs, b, blk), stored);
	blk[at] ^= 0x11;
	assert_int_equal(fs_block_verify(fs, b, blk), flipped);
	free(blk);
}

/*
 * What fs_block_verify says of each kind of block: the superblock, the group
 * descriptors, a bitmap, an inode table block and a directory block verify and
 * fail when a byte flips (and a table block of zeros fails: a metadata-only
 * place); file data and the journal cannot tell; free space, an inode table
 * block never written and the array past the filesystem are free whatever
 * they hold; a block just freed is not free yet (G3).
 */
static void test_verify_kinds(void **state)
{
	struct t_files *f = calloc(1, sizeof(*f));
	struct fs_extent all;
	struct t_find fd = {0};
	struct fs_attr at;
	uint8_t *zero = jg_zalloc_blocks(1);
	struct t_vol v;
	struct fs *fs;
	uint64_t gone_blk;

	(void)state;
	t_vol_new(&v, 5, 4, 4);
	t_populate(&v, f);
	fs = t_mount(&v);
	all = (struct fs_extent){.start = 0, .count = fs->nblocks};
	fd.ino = f->ino;
	assert_int_equal(fs_owners(fs, &all, 1, NULL, t_find_blocks, &fd, NULL), 0);
	assert_true(fd.data_blk && fd.free_blk);
	/* the mount's changes home: a block in flight is BLK_BUSY when it fails (V5) */
	assert_int_equal(fs_checkpoint(fs), 0);

	t_verdicts(&v, fs, 0, 100, BLK_VERIFIES, BLK_FAILS);		   /* superblock */
	t_verdicts(&v, fs, fs->gdt_start, 40, BLK_VERIFIES, BLK_FAILS); /* descriptors */
	t_verdicts(&v, fs, fs->first_group, 100, BLK_VERIFIES, BLK_FAILS); /* block bitmap */
	t_verdicts(&v, fs, f->itable_blk, 300, BLK_VERIFIES, BLK_FAILS);
	t_verdicts(&v, fs, f->dir_blk, 1000, BLK_VERIFIES, BLK_FAILS);
	assert_int_equal(fs_block_verify(fs, f->itable_blk, zero), BLK_FAILS);
	t_verdicts(&v, fs, fd.data_blk, 10, BLK_UNKNOWN, BLK_UNKNOWN);	  /* file data */
	t_verdicts(&v, fs, fs->jnl_start + 1, 10, BLK_UNKNOWN, BLK_UNKNOWN); /* journal */
	t_verdicts(&v, fs, fd.free_blk, 10, BLK_FREE, BLK_FREE);
	/* the last inode table block of group 0: never written (G2) */
	t_verdicts(&v, fs, fs->first_group + 2 + fs->itable_blocks - 1, 10, BLK_FREE, BLK_FREE);
	if (fs->nblocks < v.geo.array_blocks)
		assert_int_equal(fs_block_verify(fs, fs->nblocks, zero), BLK_FREE);

	/* a block freed by a transaction that may not be durable: not free (G3) */
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "gone", S_IFREG | 0644, 0, 0, 0, &at), 0);
	assert_int_equal(fs_write(fs, at.ino, 0, 4096, zero), 4096);
	fd = (struct t_find){.ino = at.ino};
	assert_int_equal(fs_owners(fs, &all, 1, NULL, t_find_blocks, &fd, NULL), 0);
	gone_blk = fd.data_blk;
	assert_true(gone_blk != 0);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "gone"), 0);
	assert_true(fs_block_freed_pending(fs, gone_blk));
	assert_int_not_equal(fs_block_verify(fs, gone_blk, zero), BLK_FREE);

	assert_int_equal(fs_unmount(fs), 0);
	t_vol_free(&v);
	free(zero);
	free(f);
}

/*
 * The scrub of the array with the mounted filesystem as its oracle: a damaged
 * inode table block (RAID5), and a damaged directory block with the P of its
 * line (RAID6) are rebuilt on their members, each counted once; the parity
 * is rewritten only when it was damaged; fsck and a second scrub are clean.
 */
static void test_verify_scrub(void **state)
{
	static const unsigned int geo[][3] = {{5, 4, 4}, {6, 5, 2}};

	(void)state;
	for (unsigned int gi = 0; gi < 2; gi++) {
		struct t_files *f = calloc(1, sizeof(*f));
		unsigned int role, prole;
		uint64_t blk, mblk, row;
		uint8_t *good, *pgood, *now;
		struct raid_scrub_counts sc = {0};
		struct t_vol v;
		struct fs *fs;

		t_vol_new(&v, geo[gi][0], geo[gi][1], geo[gi][2]);
		t_populate(&v, f);
		blk = gi ? f->dir_blk : f->itable_blk;
		raid_layout_map(&v.geo, blk, &role, &mblk);
		row = (mblk - v.geo.data_offset) / v.geo.chunk_blocks;
		prole = raid_layout_member(&v.geo, row, RAID_POS_P(&v.geo));
		t_stop(&v);
		good = t_member_block(&v, role, mblk);
		pgood = t_member_block(&v, prole, mblk);
		t_damage(&v, role, mblk, 500);
		if (gi)
			t_damage(&v, prole, mblk, 700);
		t_assemble(&v);
		fs = t_mount(&v);
		raid_set_verifier(v.a, fs_block_verify_fn, fs);
		assert_int_equal(raid_scrub_rows(v.a, 0, v.geo.rows, true, NULL, NULL, &sc), 0);
		assert_int_equal(sc.mismatches, 1);
		assert_int_equal(sc.repaired, 1);
		assert_int_equal(sc.rebuilt, gi ? 2 : 1);
		assert_int_equal(sc.unresolved, 0);
		now = t_member_block(&v, role, mblk);
		assert_memory_equal(now, good, JG_BLOCK_SIZE);
		free(now);
		now = t_member_block(&v, prole, mblk);
		assert_memory_equal(now, pgood, JG_BLOCK_SIZE); /* untouched, or restored */
		free(now);
		for (unsigned int m = 0; m < v.n; m++)
			assert_int_equal(t_corrected(&v, m), m == role || (gi && m == prole) ? 1 : 0);
		memset(&sc, 0, sizeof(sc));
		assert_int_equal(raid_scrub_rows(v.a, 0, v.geo.rows, false, NULL, NULL, &sc), 0);
		assert_int_equal(sc.mismatches, 0);
		raid_set_verifier(v.a, NULL, NULL);
		assert_int_equal(t_check(fs, f), 0);
		assert_int_equal(fs_unmount(fs), 0);
		{
			struct fsck_opts o = {.repair = false};
			struct fsck_report r;

			assert_int_equal(fs_fsck(raid_array_dev(v.a), &o, &r), 0);
			assert_int_equal(r.problems_found, 0);
		}
		t_vol_free(&v);
		free(good);
		free(pgood);
		free(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_heal_fs_metadata),
	    cmocka_unit_test(test_heal_fs_uncorrectable),
	    cmocka_unit_test(test_heal_fs_superblock),
	    cmocka_unit_test(test_heal_journal_superblock),
	    cmocka_unit_test(test_heal_fs_journal_copy),
	    cmocka_unit_test(test_verify_kinds),
	    cmocka_unit_test(test_verify_scrub),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
