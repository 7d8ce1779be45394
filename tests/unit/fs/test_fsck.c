// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_fsck.c - fsck finds and repairs injected damage (a leaked
 * block, a wrong link count, unattached inodes) and a second run is clean; -n
 * never writes; damaged superblock, inode and directory blocks give -EUCLEAN
 * (never a crash) and turn the filesystem read-only; a damaged inode table
 * block is salvaged inode by inode.
 */
#include <errno.h>

#include "fs_test.h"
#include "fs_i.h"

static uint32_t ft_seed_of(struct blk_dev *dev, struct fs_super *sb)
{
	assert_int_equal(blk_rw(dev, BLK_OP_READ, 0, 1, sb, 0), 0);
	return jg_crc_seed(sb->uuid);
}

/* Apply @fn to block @blkno on the device and reseal it (a valid checksum over
 * wrong contents: damage only fsck's cross-checks can see). */
static void ft_edit_block(struct blk_dev *dev, uint64_t blkno, void (*fn)(uint8_t *, void *),
			  void *arg)
{
	struct fs_super *sb = jg_alloc_blocks(1);
	uint8_t *b = jg_alloc_blocks(1);
	uint32_t seed = ft_seed_of(dev, sb);
	struct jg_blk_hdr *h = (void *)b;

	assert_int_equal(blk_rw(dev, BLK_OP_READ, blkno, 1, b, 0), 0);
	fn(b, arg);
	jg_blk_seal(b, JG_BLOCK_SIZE, jg_le32(h->magic), jg_le16(h->version), jg_le16(h->flags),
		    jg_le64(h->seq), blkno, seed);
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, blkno, 1, b, 0), 0);
	free(sb);
	free(b);
}

/* Flip one byte of block @blkno without resealing: the checksum catches it. */
static void ft_flip(struct blk_dev *dev, uint64_t blkno, unsigned int off)
{
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(dev, BLK_OP_READ, blkno, 1, b, 0), 0);
	b[off] ^= 0x40;
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, blkno, 1, b, 0), 0);
	free(b);
}

static uint64_t ft_group0(struct blk_dev *dev)
{
	struct fs_super *sb = jg_alloc_blocks(1);
	uint64_t first;

	ft_seed_of(dev, sb);
	first = jg_le64(sb->first_group_block);
	free(sb);
	return first;
}

static int ft_fsck(struct blk_dev *dev, bool repair, struct fsck_report *r)
{
	struct fsck_opts o = { .repair = repair, .verbose = true };

	return fs_fsck(dev, &o, r);
}

/* -n, -y, then -n again: 4, 1, 0. */
static void ft_fsck_finds_and_repairs(struct blk_dev *dev)
{
	struct fsck_report r;

	assert_int_equal(ft_fsck(dev, false, &r), 4);
	assert_true(r.problems_found >= 1);
	/* -n wrote nothing: the same problems again */
	assert_int_equal(ft_fsck(dev, false, &r), 4);
	assert_int_equal(ft_fsck(dev, true, &r), 1);
	assert_true(r.problems_fixed >= 1);
	assert_int_equal(ft_fsck(dev, false, &r), 0);
	assert_int_equal(r.problems_found, 0);
}

static void test_fsck_clean(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fsck_report r;
	struct fs_attr a;

	(void)state;
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
	assert_int_equal(fs_mknod(fs, a.ino, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_write(fs, a.ino, 0, 3, "abc"), 3);
	assert_int_equal(fs_unmount(fs), 0);
	assert_int_equal(ft_fsck(dev, false, &r), 0);
	assert_int_equal(r.dirs_checked, 2);
	assert_int_equal(r.inodes_checked, 3);
	assert_int_equal(ft_fsck(dev, true, &r), 0);
	assert_int_equal(ft_fsck(dev, false, &r), 0);
	blk_close(dev);
}

static void ft_set_bit_fn(uint8_t *b, void *arg)
{
	fs_bit_set(b, *(uint32_t *)arg);
}

static void test_fsck_leaked_block(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	uint32_t bit = 5000;	/* well inside the free data area of group 0 */
	struct fs_statfs s0, s1;
	struct fs *fs;

	(void)state;
	fs = ft_mount(dev);
	assert_int_equal(fs_statfs(fs, &s0), 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_edit_block(dev, ft_group0(dev), ft_set_bit_fn, &bit);
	ft_fsck_finds_and_repairs(dev);
	fs = ft_mount(dev);
	assert_int_equal(fs_statfs(fs, &s1), 0);
	assert_int_equal(s1.blocks_free, s0.blocks_free);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

struct ft_nlink_arg {
	unsigned int slot;
	uint32_t nlink;
};

static void ft_nlink_fn(uint8_t *b, void *arg)
{
	struct ft_nlink_arg *a = arg;
	struct fs_dinode *d = (void *)(b + FS_INODE_SIZE * (a->slot + 1));

	d->nlink = jg_cpu_to_le32(a->nlink);
}

static void test_fsck_wrong_link_count(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct ft_nlink_arg arg;
	struct fs_attr a, d;

	(void)state;
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	assert_int_equal(fs_mknod(fs, d.ino, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_unmount(fs), 0);
	/* the file says 5 links, the directory says 7 */
	arg = (struct ft_nlink_arg){ .slot = (unsigned int)(a.ino - 1) % 15, .nlink = 5 };
	ft_edit_block(dev, ft_group0(dev) + 2 + (a.ino - 1) / 15, ft_nlink_fn, &arg);
	arg = (struct ft_nlink_arg){ .slot = (unsigned int)(d.ino - 1) % 15, .nlink = 7 };
	ft_edit_block(dev, ft_group0(dev) + 2 + (d.ino - 1) / 15, ft_nlink_fn, &arg);
	ft_fsck_finds_and_repairs(dev);
	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, a.ino, &a), 0);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(fs_getattr(fs, d.ino, &d), 0);
	assert_int_equal(d.nlink, 2);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/* Remove a name without dropping the link (through the internals): the inode is
 * unattached; with @zero_links its count is 0 too, and it is not on the orphan
 * list - an orphaned inode. */
static void ft_detach(struct fs *fs, uint64_t dir, const char *name, bool zero_links)
{
	struct fs_inode dip, ip;
	struct fs_tx *tx;
	uint64_t ino;
	unsigned int ft;

	jg_mutex_lock(&fs->lock);
	assert_int_equal(fs_tx_start(fs, 32, &tx), 0);
	assert_int_equal(fs_iget(fs, dir, &dip), 0);
	assert_int_equal(fs_dir_lookup(fs, &dip, name, strlen(name), &ino, &ft), 0);
	assert_int_equal(fs_dir_remove(tx, &dip, name, strlen(name)), 0);
	assert_int_equal(fs_iput(tx, &dip), 0);
	if (zero_links) {
		assert_int_equal(fs_iget(fs, ino, &ip), 0);
		ip.nlink = 0;
		assert_int_equal(fs_iput(tx, &ip), 0);
	}
	assert_int_equal(fs_tx_stop(tx), 0);
	jg_mutex_unlock(&fs->lock);
}

static void test_fsck_unattached_inodes(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_attr a, b, lf, x;
	char name[32], buf[4];

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_write(fs, a.ino, 0, 4, "data"), 4);
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "sub", 0755, 0, 0, &b), 0);
	assert_int_equal(fs_mknod(fs, b.ino, "inner", S_IFREG | 0644, 0, 0, 0, &x), 0);
	ft_detach(fs, FS_ROOT_INO, "f", true);
	ft_detach(fs, FS_ROOT_INO, "sub", false);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_finds_and_repairs(dev);
	fs = ft_mount(dev);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "lost+found", &lf), 0);
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)a.ino);
	assert_int_equal(fs_lookup(fs, lf.ino, name, &x), 0);
	assert_int_equal(x.nlink, 1);
	assert_int_equal(fs_read(fs, x.ino, 0, 4, buf), 4);
	assert_memory_equal(buf, "data", 4);
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)b.ino);
	assert_int_equal(fs_lookup(fs, lf.ino, name, &x), 0);
	assert_int_equal(fs_lookup(fs, x.ino, "inner", &x), 0);
	assert_int_equal(fs_lookup(fs, b.ino, "..", &x), 0);
	assert_int_equal(x.ino, lf.ino);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

static void test_fsck_corrupt_superblock(void **state)
{
	struct fs_mount_opts o = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true };
	struct blk_dev *dev = ft_dev_new(64);
	struct fsck_report r;
	struct fs *fs = NULL;

	(void)state;
	ft_flip(dev, 0, 0x30);
	assert_int_equal(fs_mount(dev, &o, &fs), -EUCLEAN);
	assert_null(fs);
	assert_int_equal(ft_fsck(dev, false, &r), 4);
	/* mkfs without force refuses only a valid filesystem: this one it replaces */
	blk_close(dev);
}

static void test_fsck_corrupt_inode_block(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_attr a, x;
	struct fs_info info;
	struct fsck_report r;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_flip(dev, ft_group0(dev) + 2 + (a.ino - 1) / 15, 256 * ((a.ino - 1) % 15 + 1) + 4);
	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, a.ino, &x), -EUCLEAN);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "f", &x), -EUCLEAN);
	fs_info_get(fs, &info);
	assert_true(info.readonly);
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "g", S_IFREG | 0644, 0, 0, 0, &x), -EROFS);
	assert_int_equal(fs_unmount(fs), 0);
	/*
	 * The table block is salvaged: its header still names it and every inode
	 * in it passes its checks, so all are kept; the flipped link count is then
	 * an ordinary wrong link count. -y rewrites the block under a fresh crc.
	 */
	ft_fsck_finds_and_repairs(dev);
	assert_int_equal(ft_fsck(dev, false, &r), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "f", &x), 0);
	assert_int_equal(x.ino, a.ino);
	assert_int_equal(x.nlink, 1);
	fs_info_get(fs, &info);
	assert_false(info.readonly);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/* Files f0.. f(n-1) in the root; their inode numbers in @ino. */
static void ft_files(struct fs *fs, unsigned int n, uint64_t *ino)
{
	for (unsigned int i = 0; i < n; i++) {
		char name[16];
		struct fs_attr a;

		snprintf(name, sizeof(name), "f%u", i);
		assert_int_equal(fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
		ino[i] = a.ino;
	}
}

/* How many of f0.. f(n-1) the root still names. */
static unsigned int ft_files_left(struct blk_dev *dev, unsigned int n)
{
	struct fs *fs = ft_mount(dev);
	unsigned int left = 0;

	for (unsigned int i = 0; i < n; i++) {
		char name[16];
		struct fs_attr a;

		snprintf(name, sizeof(name), "f%u", i);
		if (!fs_lookup(fs, FS_ROOT_INO, name, &a))
			left++;
	}
	assert_int_equal(fs_unmount(fs), 0);
	return left;
}

/*
 * A torn inode table block: one inode's 256 bytes are garbage and the crc no
 * longer matches. fsck keeps the 14 others, clears that one and drops the entry
 * naming it; before the salvage, -y left every inode of the block out of the
 * check (and the volume unrepairable).
 */
static void test_fsck_inode_block_salvage(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	uint8_t *b = jg_alloc_blocks(1);
	uint64_t ino[20], blkno;

	(void)state;
	ft_files(fs, 20, ino);
	assert_int_equal(fs_unmount(fs), 0);
	assert_int_equal(ino[16], 18);		/* table block 1 holds inodes 16..30 */
	blkno = ft_group0(dev) + 3;
	assert_int_equal(blk_rw(dev, BLK_OP_READ, blkno, 1, b, 0), 0);
	memset(b + FS_INODE_SIZE * ((ino[16] - 1) % 15 + 1), 0xa5, FS_INODE_SIZE);
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, blkno, 1, b, 0), 0);
	ft_fsck_finds_and_repairs(dev);
	assert_int_equal(ft_files_left(dev, 20), 19);
	free(b);
	blk_close(dev);
}

/*
 * An inode table block overwritten by another block (a misdirected write): its
 * header names another home, so none of its inodes is trusted. The files whose
 * inodes it held are lost, the rest of the volume is repaired and clean.
 */
static void test_fsck_inode_block_foreign(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	uint8_t *b = jg_alloc_blocks(1);
	uint64_t ino[20], first;

	(void)state;
	ft_files(fs, 20, ino);
	assert_int_equal(fs_unmount(fs), 0);
	first = ft_group0(dev);
	/* block 1 of the table (inodes 16..30: f14..f19) gets block 0's bytes */
	assert_int_equal(blk_rw(dev, BLK_OP_READ, first + 2, 1, b, 0), 0);
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, first + 3, 1, b, 0), 0);
	ft_fsck_finds_and_repairs(dev);
	assert_int_equal(ft_files_left(dev, 20), 14);
	free(b);
	blk_close(dev);
}

/*
 * The root's table block lost: no entry can be counted, so -y must not "repair"
 * the link count of every other inode to 0 (it did, before this check).
 */
static void test_fsck_root_lost_keeps_links(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	uint8_t *b = jg_alloc_blocks(1);
	uint64_t ino[20], first;
	struct fsck_report r;
	struct fs_dinode *d;

	(void)state;
	ft_files(fs, 20, ino);
	assert_int_equal(fs_unmount(fs), 0);
	first = ft_group0(dev);
	assert_int_equal(blk_rw(dev, BLK_OP_READ, first + 3, 1, b, 0), 0);
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, first + 2, 1, b, 0), 0);
	assert_int_equal(ft_fsck(dev, false, &r), 4);
	assert_int_equal(ft_fsck(dev, true, &r), 4);
	assert_int_equal(blk_rw(dev, BLK_OP_READ, first + 3, 1, b, 0), 0);
	d = (void *)(b + FS_INODE_SIZE * ((ino[16] - 1) % 15 + 1));
	assert_int_equal(jg_le32(d->nlink), 1);
	free(b);
	blk_close(dev);
}

static void ft_mode_fn(uint8_t *b, void *arg)
{
	struct fs_dinode *d = (void *)(b + FS_INODE_SIZE * (*(unsigned int *)arg + 1));

	d->mode = jg_cpu_to_le32(0170777);	/* no such file type */
}

static void test_fsck_bad_inode_fields(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_attr a, x;
	unsigned int slot;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_unmount(fs), 0);
	slot = (unsigned int)(a.ino - 1) % 15;
	ft_edit_block(dev, ft_group0(dev) + 2 + (a.ino - 1) / 15, ft_mode_fn, &slot);
	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, a.ino, &x), -EUCLEAN);
	assert_int_equal(fs_unmount(fs), 0);
	/* fsck clears the inode, drops the entry naming it, frees its bit */
	ft_fsck_finds_and_repairs(dev);
	fs = ft_mount(dev);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "f", &x), -ENOENT);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

static void test_fsck_corrupt_dir_block(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_inode root;
	struct fsck_report r;
	struct fs_attr x;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &x), 0);
	jg_mutex_lock(&fs->lock);
	assert_int_equal(fs_iget(fs, FS_ROOT_INO, &root), 0);
	jg_mutex_unlock(&fs->lock);
	assert_int_equal(fs_unmount(fs), 0);
	ft_flip(dev, root.block[0], 100);	/* the hash table block */
	fs = ft_mount(dev);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "f", &x), -EUCLEAN);
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "g", S_IFREG | 0644, 0, 0, 0, &x), -EROFS);
	assert_int_equal(fs_unmount(fs), 0);
	assert_int_equal(ft_fsck(dev, false, &r), 4);
	blk_close(dev);
}

static void test_fsck_pending_orphan(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fsck_report r;
	struct fs_attr a;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_write(fs, a.ino, 0, 4, "data"), 4);
	assert_int_equal(fs_ref(fs, a.ino, 1), 0);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "f"), 0);
	assert_int_equal(fs_sync(fs), 0);
	fs_abandon(fs);
	/* an orphan waiting for the next mount is not damage; -y frees it */
	assert_int_equal(ft_fsck(dev, false, &r), 0);
	assert_int_equal(ft_fsck(dev, true, &r), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, a.ino, &a), -ENOENT);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

static void ft_incompat_fn(uint8_t *b, void *arg)
{
	struct fs_super *sb = (void *)b;

	sb->feature_incompat = jg_cpu_to_le32(*(uint32_t *)arg);
}

static void ft_rocompat_fn(uint8_t *b, void *arg)
{
	struct fs_super *sb = (void *)b;

	sb->feature_ro_compat = jg_cpu_to_le32(*(uint32_t *)arg);
}

/* Unknown incompat features refuse the mount; unknown ro_compat mount read-only. */
static void test_fsck_feature_flags(void **state)
{
	struct fs_mount_opts o = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true };
	struct blk_dev *dev = ft_dev_new(64);
	uint32_t v = 1u << 7, zero = 0;
	struct fs_info info;
	struct fs_attr a;
	struct fs *fs = NULL;

	(void)state;
	ft_edit_block(dev, 0, ft_incompat_fn, &v);
	assert_int_equal(fs_mount(dev, &o, &fs), -EOPNOTSUPP);
	ft_edit_block(dev, 0, ft_incompat_fn, &zero);
	ft_edit_block(dev, 0, ft_rocompat_fn, &v);
	assert_int_equal(fs_mount(dev, &o, &fs), 0);
	fs_info_get(fs, &info);
	assert_true(info.readonly);
	assert_int_equal(fs_getattr(fs, FS_ROOT_INO, &a), 0);
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &a), -EROFS);
	assert_int_equal(fs_write(fs, FS_ROOT_INO, 0, 1, "x"), -EROFS);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/* A read-only mount reads everything and changes nothing. */
static void test_fsck_readonly_mount(void **state)
{
	struct fs_mount_opts o = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				   .readonly = true };
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_attr a;
	char buf[8];

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_write(fs, a.ino, 0, 5, "hello"), 5);
	assert_int_equal(fs_sync(fs), 0);
	fs_abandon(fs);	/* recovery needed: a read-only mount replays in memory */
	assert_int_equal(fs_mount(dev, &o, &fs), 0);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "f", &a), 0);
	assert_int_equal(fs_read(fs, a.ino, 0, 5, buf), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "f"), -EROFS);
	assert_int_equal(fs_setxattr(fs, a.ino, "user.x", "1", 1, 0), -EROFS);
	assert_int_equal(fs_unmount(fs), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "f", &a), 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/* Damaged bitmap blocks are rebuilt from the inodes by -y. */
static void test_fsck_damaged_bitmaps(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	static uint8_t data[10000];
	struct fs_statfs s0, s1;
	struct fs_attr a;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_write(fs, a.ino, 0, sizeof(data), data), sizeof(data));
	assert_int_equal(fs_statfs(fs, &s0), 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_flip(dev, ft_group0(dev), 2000);
	ft_flip(dev, ft_group0(dev) + 1, 100);
	ft_fsck_finds_and_repairs(dev);
	fs = ft_mount(dev);
	assert_int_equal(fs_statfs(fs, &s1), 0);
	assert_int_equal(s1.blocks_free, s0.blocks_free);
	assert_int_equal(s1.inodes_free, s0.inodes_free);
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "g", S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fsck_clean),
		cmocka_unit_test(test_fsck_leaked_block),
		cmocka_unit_test(test_fsck_wrong_link_count),
		cmocka_unit_test(test_fsck_unattached_inodes),
		cmocka_unit_test(test_fsck_corrupt_superblock),
		cmocka_unit_test(test_fsck_corrupt_inode_block),
		cmocka_unit_test(test_fsck_inode_block_salvage),
		cmocka_unit_test(test_fsck_inode_block_foreign),
		cmocka_unit_test(test_fsck_root_lost_keeps_links),
		cmocka_unit_test(test_fsck_bad_inode_fields),
		cmocka_unit_test(test_fsck_corrupt_dir_block),
		cmocka_unit_test(test_fsck_pending_orphan),
		cmocka_unit_test(test_fsck_feature_flags),
		cmocka_unit_test(test_fsck_readonly_mount),
		cmocka_unit_test(test_fsck_damaged_bitmaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
