/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_fs.h - the small filesystem image the fs targets overlay
 * (fuzz_fs_mount_fsck.c, fuzz_dir.c, fuzz_xattr.c), made once per process.
 *
 * 4096 blocks (16 MiB, the journal 2048 of them), holding: /big, a directory of
 * 300 entries (a table and several buckets); /file, 20 blocks with a hole (an
 * indirect block); /short and /long, symlinks (the long one in a block); /x,
 * a file with four user.* attributes (an xattr block); /file2, a hard link to
 * /file; /sub/inner, a nested file. "clean" is that image unmounted; "crashed"
 * adds a transaction of every kind (create, write, setxattr, unlink, rename)
 * committed but not checkpointed: the mount replays it.
 */
#ifndef JGRFS_FUZZ_FS_H
#define JGRFS_FUZZ_FS_H

#include <sys/stat.h>

#include "fuzz_common.h"
#include "fs_format.h"
#include "fs_i.h"
#include "jgrfs/fs.h"

#define FZ_FS_BLOCKS 4096u
#define FZ_FS_BIG_ENTRIES 300u

struct fz_fs {
	struct fz_image clean, crashed;
	uint32_t seed;
	uint64_t big_ino, x_ino, file_ino, root_itable, big_itable, x_itable;
	uint64_t big_blocks[128];
	unsigned int nbig_blocks;
	uint64_t x_xattr_blk;
};

static struct fz_fs fz_fs;

static inline struct fs *fz_fs_mount(struct blk_dev *dev, bool ro)
{
	struct fs_mount_opts o = {.data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				  .readonly = ro, .cache_blocks = 256};
	struct fs *fs = NULL;

	return fs_mount(dev, &o, &fs) == 0 ? fs : NULL;
}

static int fz_fs_collect(void *ctx, uint64_t lblk, uint64_t pblk, unsigned int level)
{
	(void)lblk, (void)level;
	if (fz_fs.nbig_blocks < 128)
		fz_fs.big_blocks[fz_fs.nbig_blocks++] = pblk;
	(void)ctx;
	return 0;
}

static inline void fz_fs_make(void)
{
	struct fs_mkfs_opts mo = {.journal_blocks = 2048, .label = "fuzz"};
	struct fs_attr at;
	struct fs_inode ip;
	struct blk_dev *d = NULL;
	struct fs *fs;
	uint8_t buf[JG_BLOCK_SIZE];
	char name[64];
	uint64_t dir_ino;

	FZ_ASSERT(raid_dev_mem_open("fsmem", FZ_FS_BLOCKS, &d) == 0);
	FZ_ASSERT(fs_mkfs(d, &mo) == 0);
	fs = fz_fs_mount(d, false);
	FZ_ASSERT(fs);
	FZ_ASSERT(fs_mkdir(fs, FS_ROOT_INO, "big", 0755, 0, 0, &at) == 0);
	fz_fs.big_ino = at.ino;
	for (unsigned int i = 0; i < FZ_FS_BIG_ENTRIES; i++) {
		snprintf(name, sizeof(name), "entry-%04u-with-a-longer-name", i);
		FZ_ASSERT(fs_mknod(fs, fz_fs.big_ino, name, S_IFREG | 0644, 0, 0, 0, &at) == 0);
	}
	FZ_ASSERT(fs_mknod(fs, FS_ROOT_INO, "file", S_IFREG | 0644, 0, 0, 0, &at) == 0);
	fz_fs.file_ino = at.ino;
	for (unsigned int b = 0; b < 20; b++) {
		if (b == 5)
			continue; /* a hole */
		memset(buf, (int)('a' + b), sizeof(buf));
		FZ_ASSERT(fs_write(fs, fz_fs.file_ino, (uint64_t)b * JG_BLOCK_SIZE, sizeof(buf), buf) ==
			  (ssize_t)sizeof(buf));
	}
	FZ_ASSERT(fs_link(fs, fz_fs.file_ino, FS_ROOT_INO, "file2", &at) == 0);
	FZ_ASSERT(fs_symlink(fs, FS_ROOT_INO, "short", "file", 0, 0, &at) == 0);
	memset(buf, 'l', 300);
	buf[300] = '\0';
	FZ_ASSERT(fs_symlink(fs, FS_ROOT_INO, "long", (const char *)buf, 0, 0, &at) == 0);
	FZ_ASSERT(fs_mknod(fs, FS_ROOT_INO, "x", S_IFREG | 0600, 0, 0, 0, &at) == 0);
	fz_fs.x_ino = at.ino;
	for (unsigned int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "user.attr%u", i);
		memset(buf, (int)('0' + i), 40 + i * 30);
		FZ_ASSERT(fs_setxattr(fs, fz_fs.x_ino, name, buf, 40 + i * 30, 0) == 0);
	}
	FZ_ASSERT(fs_mkdir(fs, FS_ROOT_INO, "sub", 0755, 0, 0, &at) == 0);
	dir_ino = at.ino;
	FZ_ASSERT(fs_mknod(fs, dir_ino, "inner", S_IFREG | 0644, 0, 0, 0, &at) == 0);

	/* the blocks the dir and xattr targets address */
	fz_fs.root_itable = fs_inode_blkno(fs, FS_ROOT_INO);
	fz_fs.big_itable = fs_inode_blkno(fs, fz_fs.big_ino);
	fz_fs.x_itable = fs_inode_blkno(fs, fz_fs.x_ino);
	FZ_ASSERT(fs_iget(fs, fz_fs.big_ino, &ip) == 0);
	FZ_ASSERT(fs_bmap_walk(fs, &ip, fz_fs_collect, NULL) == 0);
	FZ_ASSERT(fs_iget(fs, fz_fs.x_ino, &ip) == 0);
	fz_fs.x_xattr_blk = ip.xattr_blk;
	FZ_ASSERT(fs_unmount(fs) == 0);
	fz_image_capture(&fz_fs.clean, d);
	fz_fs.seed = jg_crc_seed(((const struct fs_super *)fz_blk(&fz_fs.clean, 0))->uuid);

	/* committed, not checkpointed: a crash after an fsync */
	fs = fz_fs_mount(d, false);
	FZ_ASSERT(fs);
	FZ_ASSERT(fs_mknod(fs, fz_fs.big_ino, "late", S_IFREG | 0644, 0, 0, 0, &at) == 0);
	memset(buf, 'z', sizeof(buf));
	FZ_ASSERT(fs_write(fs, at.ino, 0, 100, buf) == 100);
	FZ_ASSERT(fs_setxattr(fs, fz_fs.x_ino, "user.late", buf, 10, 0) == 0);
	FZ_ASSERT(fs_unlink(fs, fz_fs.big_ino, "entry-0007-with-a-longer-name") == 0);
	FZ_ASSERT(fs_rename(fs, FS_ROOT_INO, "file2", dir_ino, "moved", 0) == 0);
	FZ_ASSERT(fs_sync(fs) == 0);
	fs_abandon(fs);
	fz_image_capture(&fz_fs.crashed, d);
	blk_close(d);
}

/* Seeds: each of @l's entries as in the real image, resealed (a no-op) and as is. */
static inline void fz_fs_seeds(const struct fz_list *l, const uint8_t *hdr, size_t hdr_len,
			       unsigned int max)
{
	struct fz_seed s = {0};
	char name[64];

	fz_seed_bytes(&s, hdr, hdr_len);
	fz_seed_write(&s, "plain");
	for (unsigned int sel = 0; sel < l->n && sel < max; sel++) {
		fz_seed_bytes(&s, hdr, hdr_len);
		fz_seed_record(&s, l, sel, FZ_RESEAL);
		snprintf(name, sizeof(name), "blk%u", sel);
		fz_seed_write(&s, name);
	}
}

#endif /* JGRFS_FUZZ_FS_H */
