// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_file.c - file data through fs.h: read/write at every
 * alignment in each data mode, batched reads, truncate, fallocate, a 100 GiB
 * sparse file, setattr, user.* xattrs, and fsync'd data surviving a crash.
 */
#include <errno.h>
#include <linux/falloc.h>
#include <sys/xattr.h>
#include <time.h>

#include "fs_test.h"

static const enum jnl_data_mode ft_modes[] = { JNL_DATA_WRITEBACK, JNL_DATA_ORDERED,
					       JNL_DATA_JOURNAL, JNL_DATA_DECLARED };

static uint64_t ft_create(struct fs *fs, const char *name)
{
	struct fs_attr a;

	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	return a.ino;
}

/* Random writes mirrored in a plain buffer, read back whole, in every mode. */
static void test_file_write_read_modes(void **state)
{
	const size_t fsize = 300 * 1024;
	uint8_t *ref = calloc(1, fsize), *got = malloc(fsize), *chunk = malloc(70000);

	(void)state;
	for (unsigned int m = 0; m < 4; m++) {
		struct blk_dev *dev = ft_dev_new(64);
		struct fs *fs = ft_mount_mode(dev, ft_modes[m]);
		uint64_t ino = ft_create(fs, "f"), seed = 1000 + m, size = 0;
		struct fs_attr a;

		memset(ref, 0, fsize);
		for (int i = 0; i < 60; i++) {
			uint64_t off, len;

			seed = seed * 6364136223846793005ull + 1;
			off = (seed >> 20) % (fsize - 70000);
			len = 1 + (seed >> 40) % 70000;
			ft_pattern(chunk, len, seed);
			assert_int_equal(fs_write(fs, ino, off, len, chunk), (ssize_t)len);
			memcpy(ref + off, chunk, len);
			if (off + len > size)
				size = off + len;
		}
		assert_int_equal(fs_getattr(fs, ino, &a), 0);
		assert_int_equal(a.size, size);
		memset(got, 0xee, fsize);
		assert_int_equal(fs_read(fs, ino, 0, fsize, got), (ssize_t)size);
		if (memcmp(got, ref, size))
			fail_msg("mode %s: data differs before remount", jnl_data_mode_name(ft_modes[m]));
		/* reading past the end returns 0, a straddling read is short */
		assert_int_equal(fs_read(fs, ino, size, 10, got), 0);
		assert_int_equal(fs_read(fs, ino, size - 5, 10, got), 5);
		assert_int_equal(fs_unmount(fs), 0);
		fs = ft_mount_mode(dev, ft_modes[m]);
		memset(got, 0xee, fsize);
		assert_int_equal(fs_read(fs, ino, 0, fsize, got), (ssize_t)size);
		if (memcmp(got, ref, size))
			fail_msg("mode %s: data differs after remount", jnl_data_mode_name(ft_modes[m]));
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		blk_close(dev);
	}
	free(ref);
	free(got);
	free(chunk);
}

/* A 1 MiB read of a contiguous file costs a few device reads, not 256. */
static void test_file_read_batched(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct ft_count_dev cnt;
	uint8_t *buf = malloc(1 << 20), *got = malloc(1 << 20);
	struct fs *fs;
	uint64_t ino, before;

	(void)state;
	fs = ft_mount(dev);
	ino = ft_create(fs, "big");
	ft_pattern(buf, 1 << 20, 42);
	assert_int_equal(fs_write(fs, ino, 0, 1 << 20, buf), 1 << 20);
	assert_int_equal(fs_unmount(fs), 0);
	ft_count_init(&cnt, dev);
	fs = ft_mount(&cnt.dev);
	/* warm the metadata (inode, indirect block), then count the data read */
	assert_int_equal(fs_read(fs, ino, 0, 1, got), 1);
	before = cnt.reads;
	assert_int_equal(fs_read(fs, ino, 0, 1 << 20, got), 1 << 20);
	assert_memory_equal(got, buf, 1 << 20);
	assert_true(cnt.reads - before <= 3);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
	free(buf);
	free(got);
}

static void test_file_truncate(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	uint8_t *buf = malloc(200000), *got = malloc(200000);
	struct fs_attr a, set = { 0 };
	struct fs_statfs s0, s1;
	uint64_t ino;

	(void)state;
	assert_int_equal(fs_statfs(fs, &s0), 0);
	ino = ft_create(fs, "t");
	ft_pattern(buf, 200000, 7);
	assert_int_equal(fs_write(fs, ino, 0, 200000, buf), 200000);
	/* shrink to the middle of a block, grow again: the tail reads as zeros */
	set.size = 5000;
	assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_SIZE, &a), 0);
	assert_int_equal(a.size, 5000);
	assert_int_equal(a.blocks, 2 * 8);
	set.size = 100000;
	assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_SIZE, &a), 0);
	assert_int_equal(fs_read(fs, ino, 0, 200000, got), 100000);
	assert_memory_equal(got, buf, 5000);
	for (int i = 5000; i < 100000; i++)
		if (got[i])
			fail_msg("byte %d not zero after truncate and extend", i);
	set.size = 0;
	assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_SIZE, &a), 0);
	assert_int_equal(a.blocks, 0);
	assert_int_equal(fs_statfs(fs, &s1), 0);
	assert_int_equal(s1.blocks_free, s0.blocks_free);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
	free(buf);
	free(got);
}

static void test_file_fallocate(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	uint8_t got[8192], one = 0x77;
	struct fs_attr a;
	uint64_t ino;

	(void)state;
	ino = ft_create(fs, "fa");
	assert_int_equal(fs_fallocate(fs, ino, 0, 1000, 10000), 0);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, 11000);
	assert_int_equal(a.blocks, 3 * 8);
	assert_int_equal(fs_fallocate(fs, ino, FALLOC_FL_KEEP_SIZE, 20000, 8192), 0);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, 11000);
	assert_int_equal(a.blocks, 6 * 8);
	assert_int_equal(fs_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096),
			 -EOPNOTSUPP);
	assert_int_equal(fs_read(fs, ino, 0, sizeof(got), got), 8192);
	for (size_t i = 0; i < sizeof(got); i++)
		assert_int_equal(got[i], 0);
	/* writing into preallocated space past the size grows it */
	assert_int_equal(fs_write(fs, ino, 24000, 1, &one), 1);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, 24001);
	assert_int_equal(a.blocks, 6 * 8);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/* A sparse file of more than 100 GiB costs a handful of blocks. */
static void test_file_sparse_100g(void **state)
{
	const uint64_t G = 1ull << 30;
	const uint64_t offs[] = { 0, 3 * G + 123, 50 * G, 100 * G + 4096 * 7 + 1, 120 * G - 10 };
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_statfs s0, s1;
	uint8_t buf[9000], got[9000];
	struct fs_attr a, set = { 0 };
	uint64_t ino;

	(void)state;
	assert_int_equal(fs_statfs(fs, &s0), 0);
	ino = ft_create(fs, "sparse");
	for (unsigned int i = 0; i < 5; i++) {
		ft_pattern(buf, 5000, i);
		assert_int_equal(fs_write(fs, ino, offs[i], 5000, buf), 5000);
	}
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, 120 * G - 10 + 5000);
	assert_true(a.blocks < 40 * 8);	/* data and a few indirect blocks */
	assert_int_equal(fs_unmount(fs), 0);
	fs = ft_mount(dev);
	for (unsigned int i = 0; i < 5; i++) {
		ft_pattern(buf, 5000, i);
		assert_int_equal(fs_read(fs, ino, offs[i], 5000, got), 5000);
		assert_memory_equal(got, buf, 5000);
	}
	/* holes read as zeros, also across a hole/data boundary */
	assert_int_equal(fs_read(fs, ino, 70 * G, 9000, got), 9000);
	for (size_t i = 0; i < 9000; i++)
		assert_int_equal(got[i], 0);
	assert_int_equal(fs_read(fs, ino, 50 * G - 4000, 9000, got), 9000);
	ft_pattern(buf, 5000, 2);
	assert_memory_equal(got + 4000, buf, 5000);
	for (size_t i = 0; i < 4000; i++)
		assert_int_equal(got[i], 0);
	/* cutting it back to nothing frees everything */
	set.size = 0;
	assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_SIZE, &a), 0);
	assert_int_equal(a.blocks, 0);
	assert_int_equal(fs_statfs(fs, &s1), 0);
	assert_int_equal(s1.blocks_free, s0.blocks_free);
	assert_int_equal(fs_write(fs, ino, 600 * G, 1, buf), -EFBIG);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

static void test_file_setattr(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_attr a, set = { 0 }, b;
	uint64_t ino;

	(void)state;
	ino = ft_create(fs, "s");
	set.mode = 04711;
	set.uid = 1234;
	set.gid = 99;
	set.atime.tv_sec = 1000000000;
	set.atime.tv_nsec = 123456789;
	set.mtime.tv_sec = 1100000000;
	set.mtime.tv_nsec = 987654321;
	assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_MODE | FS_SET_UID | FS_SET_GID |
				    FS_SET_ATIME | FS_SET_MTIME, &a), 0);
	assert_int_equal(a.mode, S_IFREG | 04711);
	assert_int_equal(fs_unmount(fs), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, ino, &b), 0);
	assert_int_equal(b.mode, S_IFREG | 04711);
	assert_int_equal(b.uid, 1234);
	assert_int_equal(b.gid, 99);
	assert_int_equal(b.atime.tv_sec, 1000000000);
	assert_int_equal(b.atime.tv_nsec, 123456789);
	assert_int_equal(b.mtime.tv_sec, 1100000000);
	assert_int_equal(b.mtime.tv_nsec, 987654321);
	assert_int_equal(fs_setattr(fs, FS_ROOT_INO, &set, FS_SET_SIZE, &a), -EISDIR);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

static bool ft_ts_le(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

/*
 * Times are stamped with the kernel's coarse clock, the one it stamps a write
 * through the writeback cache with (issue 28: a write in the tick of the create
 * then sends no SETATTR at close). A stamp from the fine clock is nearly always
 * past a coarse reading taken just after it; ten in a row never are.
 */
static void test_file_times_coarse(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct timespec before, after;
	struct fs_attr a[2], set = { 0 };
	char name[16];

	(void)state;
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		clock_gettime(CLOCK_REALTIME_COARSE, &before);
		/* the create's stamp, and utimensat(UTIME_NOW)'s */
		assert_int_equal(fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &a[0]), 0);
		assert_int_equal(fs_setattr(fs, a[0].ino, &set, FS_SET_MTIME_NOW, &a[1]), 0);
		clock_gettime(CLOCK_REALTIME_COARSE, &after);
		for (int k = 0; k < 2; k++)
			if (!ft_ts_le(&before, &a[k].mtime) || !ft_ts_le(&a[k].mtime, &after) ||
			    !ft_ts_le(&before, &a[k].ctime) || !ft_ts_le(&a[k].ctime, &after))
				fail_msg("file %d (%s): mtime %lld.%09ld ctime %lld.%09ld not within "
					 "the coarse clock's %lld.%09ld..%lld.%09ld", i,
					 k ? "setattr" : "create", (long long)a[k].mtime.tv_sec,
					 a[k].mtime.tv_nsec, (long long)a[k].ctime.tv_sec,
					 a[k].ctime.tv_nsec, (long long)before.tv_sec, before.tv_nsec,
					 (long long)after.tv_sec, after.tv_nsec);
	}
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/*
 * FS_WRITE_KEEP_TIMES (FUSE's writeback cache: the kernel owns the times): the
 * write leaves mtime and ctime alone, and an overwrite, changing no inode field,
 * commits without the inode's block -- one block fewer than a plain overwrite.
 */
static void test_file_write_keep_times(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct ft_count_dev cnt;
	uint8_t *buf = malloc(8 * JG_BLOCK_SIZE), *got = malloc(8 * JG_BLOCK_SIZE);
	struct fs_attr a0, a, set = { 0 };
	uint64_t ino, w0, kept, plain;
	struct fs *fs;

	(void)state;
	ft_count_init(&cnt, dev);
	fs = ft_mount_mode(&cnt.dev, JNL_DATA_DECLARED);
	ino = ft_create(fs, "k");
	ft_pattern(buf, 8 * JG_BLOCK_SIZE, 1);
	assert_int_equal(fs_write(fs, ino, 0, 8 * JG_BLOCK_SIZE, buf), 8 * JG_BLOCK_SIZE);
	set.mtime.tv_sec = 1200000000;
	set.mtime.tv_nsec = 5;
	set.ctime.tv_sec = 1200000001;
	set.ctime.tv_nsec = 6;
	assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_MTIME | FS_SET_CTIME, &a0), 0);
	assert_int_equal(fs_fsync(fs, ino, false), 0);

	ft_pattern(buf + 3 * JG_BLOCK_SIZE, JG_BLOCK_SIZE, 2);
	w0 = cnt.write_blocks;
	assert_int_equal(fs_write_flags(fs, ino, 3 * JG_BLOCK_SIZE, JG_BLOCK_SIZE,
					buf + 3 * JG_BLOCK_SIZE, FS_WRITE_KEEP_TIMES),
			 JG_BLOCK_SIZE);
	assert_int_equal(fs_fsync(fs, ino, false), 0);
	kept = cnt.write_blocks - w0;
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_memory_equal(&a.mtime, &a0.mtime, sizeof(a.mtime));
	assert_memory_equal(&a.ctime, &a0.ctime, sizeof(a.ctime));

	ft_pattern(buf + 3 * JG_BLOCK_SIZE, JG_BLOCK_SIZE, 3);
	w0 = cnt.write_blocks;
	assert_int_equal(fs_write(fs, ino, 3 * JG_BLOCK_SIZE, JG_BLOCK_SIZE,
				  buf + 3 * JG_BLOCK_SIZE), JG_BLOCK_SIZE);
	assert_int_equal(fs_fsync(fs, ino, false), 0);
	plain = cnt.write_blocks - w0;
	if (plain != kept + 1)
		fail_msg("an fsync'd overwrite wrote %llu blocks keeping the times, %llu stamping "
			 "them: expected one block (the inode's) fewer", (unsigned long long)kept,
			 (unsigned long long)plain);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_true(a.mtime.tv_sec > a0.mtime.tv_sec && a.ctime.tv_sec > a0.ctime.tv_sec);

	/* extending keeps the times too, but the size moves */
	assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_MTIME | FS_SET_CTIME, &a0), 0);
	ft_pattern(buf, 8 * JG_BLOCK_SIZE, 4);
	assert_int_equal(fs_write_flags(fs, ino, 8 * JG_BLOCK_SIZE, 100, buf, FS_WRITE_KEEP_TIMES),
			 100);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, 8 * JG_BLOCK_SIZE + 100);
	assert_memory_equal(&a.mtime, &a0.mtime, sizeof(a.mtime));
	assert_memory_equal(&a.ctime, &a0.ctime, sizeof(a.ctime));
	assert_int_equal(fs_write_flags(fs, ino, 0, 1, buf, 0x2), -EINVAL);
	assert_int_equal(fs_unmount(fs), 0);

	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, 8 * JG_BLOCK_SIZE + 100);
	assert_memory_equal(&a.mtime, &a0.mtime, sizeof(a.mtime));
	assert_int_equal(fs_read(fs, ino, 8 * JG_BLOCK_SIZE, 200, got), 100);
	assert_memory_equal(got, buf, 100);
	ft_pattern(buf, JG_BLOCK_SIZE, 3);
	assert_int_equal(fs_read(fs, ino, 3 * JG_BLOCK_SIZE, JG_BLOCK_SIZE, got), JG_BLOCK_SIZE);
	assert_memory_equal(got, buf, JG_BLOCK_SIZE);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
	free(buf);
	free(got);
}

static void test_file_xattr(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	char list[256], val[64];
	uint8_t big[5000] = { 0 };
	struct fs_statfs s0, s1;
	uint64_t ino;

	(void)state;
	ino = ft_create(fs, "x");
	assert_int_equal(fs_statfs(fs, &s0), 0);
	assert_int_equal(fs_getxattr(fs, ino, "user.a", val, sizeof(val)), -ENODATA);
	assert_int_equal(fs_setxattr(fs, ino, "user.a", "hello", 5, 0), 0);
	assert_int_equal(fs_setxattr(fs, ino, "user.bb", "", 0, 0), 0);
	assert_int_equal(fs_setxattr(fs, ino, "trusted.x", "1", 1, 0), -EOPNOTSUPP);
	assert_int_equal(fs_setxattr(fs, ino, "user.a", "x", 1, XATTR_CREATE), -EEXIST);
	assert_int_equal(fs_setxattr(fs, ino, "user.c", "x", 1, XATTR_REPLACE), -ENODATA);
	assert_int_equal(fs_setxattr(fs, ino, "user.big", big, sizeof(big), 0), -E2BIG);
	assert_int_equal(fs_getxattr(fs, ino, "user.a", NULL, 0), 5);
	assert_int_equal(fs_getxattr(fs, ino, "user.a", val, 2), -ERANGE);
	assert_int_equal(fs_listxattr(fs, ino, NULL, 0), 15);
	assert_int_equal(fs_listxattr(fs, ino, list, 3), -ERANGE);
	assert_int_equal(fs_unmount(fs), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_setxattr(fs, ino, "user.a", "replaced", 8, XATTR_REPLACE), 0);
	assert_int_equal(fs_getxattr(fs, ino, "user.a", val, sizeof(val)), 8);
	assert_memory_equal(val, "replaced", 8);
	assert_int_equal(fs_listxattr(fs, ino, list, sizeof(list)), 15);
	assert_memory_equal(list, "user.bb\0user.a\0", 15);
	assert_int_equal(fs_removexattr(fs, ino, "user.a"), 0);
	assert_int_equal(fs_removexattr(fs, ino, "user.a"), -ENODATA);
	assert_int_equal(fs_removexattr(fs, ino, "user.bb"), 0);
	assert_int_equal(fs_listxattr(fs, ino, list, sizeof(list)), 0);
	assert_int_equal(fs_statfs(fs, &s1), 0);
	assert_int_equal(s1.blocks_free, s0.blocks_free);
	/* an inode with attributes frees its block when removed */
	assert_int_equal(fs_setxattr(fs, ino, "user.z", "1", 1, 0), 0);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "x"), 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/* fsync'd data survives a crash (fs_abandon) in every mode; unsynced writes of
 * other files may go, but the filesystem stays consistent. */
static void test_file_fsync_crash(void **state)
{
	uint8_t buf[20000], got[20000];

	(void)state;
	for (unsigned int m = 0; m < 4; m++) {
		struct blk_dev *dev = ft_dev_new(64);
		struct fs *fs = ft_mount_mode(dev, ft_modes[m]);
		uint64_t a = ft_create(fs, "a"), b;
		struct fs_attr at;

		ft_pattern(buf, sizeof(buf), m);
		assert_int_equal(fs_write(fs, a, 100, sizeof(buf), buf), (ssize_t)sizeof(buf));
		assert_int_equal(fs_fsync(fs, a, false), 0);
		b = ft_create(fs, "b");
		assert_int_equal(fs_write(fs, b, 0, 5000, buf), 5000);
		fs_abandon(fs);
		fs = ft_mount_mode(dev, ft_modes[m]);
		assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "a", &at), 0);
		assert_int_equal(at.size, 100 + sizeof(buf));
		assert_int_equal(fs_read(fs, a, 100, sizeof(buf), got), (ssize_t)sizeof(buf));
		if (memcmp(got, buf, sizeof(buf)))
			fail_msg("mode %s: fsync'd data lost", jnl_data_mode_name(ft_modes[m]));
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		blk_close(dev);
	}
}

/* Far more data than the log holds, in every mode: forced commits and
 * checkpoints in the middle of writes keep every byte. */
static void test_file_large_through_small_log(void **state)
{
	const size_t total = 48u << 20, io = 1u << 20;
	uint8_t *buf = malloc(io), *got = malloc(io);

	(void)state;
	for (unsigned int m = 0; m < 4; m++) {
		struct fs_mkfs_opts mo = { .journal_blocks = 2048 };
		struct blk_dev *dev;
		struct fs *fs;
		uint64_t ino;

		assert_int_equal(raid_dev_mem_open("mem", 32768, &dev), 0);
		assert_int_equal(fs_mkfs(dev, &mo), 0);
		fs = ft_mount_mode(dev, ft_modes[m]);
		ino = ft_create(fs, "big");
		for (size_t off = 0; off < total; off += io) {
			ft_pattern(buf, io, off + m);
			assert_int_equal(fs_write(fs, ino, off, io, buf), (ssize_t)io);
		}
		assert_int_equal(fs_unmount(fs), 0);
		fs = ft_mount_mode(dev, ft_modes[m]);
		for (size_t off = 0; off < total; off += io) {
			ft_pattern(buf, io, off + m);
			assert_int_equal(fs_read(fs, ino, off, io, got), (ssize_t)io);
			if (memcmp(got, buf, io))
				fail_msg("mode %s: MiB at %zu differs", jnl_data_mode_name(ft_modes[m]), off);
		}
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		blk_close(dev);
	}
	free(buf);
	free(got);
}

/* Blocks freed by an uncommitted transaction are not reused before it commits
 * (a crash would leave their old owner with the new data), yet a full filesystem
 * can be emptied and refilled without an explicit sync. */
static void test_file_refill_after_delete(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	uint8_t *buf = malloc(1 << 20);
	struct fs_statfs st;
	uint64_t ino, total = 0;
	ssize_t n;

	(void)state;
	memset(buf, 0xab, 1 << 20);
	ino = ft_create(fs, "fill");
	while ((n = fs_write(fs, ino, total, 1 << 20, buf)) == 1 << 20)
		total += (uint64_t)n;
	assert_true(n >= 0 || n == -ENOSPC);
	assert_true(total > (32u << 20));
	assert_int_equal(fs_statfs(fs, &st), 0);
	assert_true(st.blocks_free < 64);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "fill"), 0);
	ino = ft_create(fs, "again");
	for (uint64_t off = 0; off < total; off += 1 << 20)
		assert_int_equal(fs_write(fs, ino, off, 1 << 20, buf), 1 << 20);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_write_read_modes),
		cmocka_unit_test(test_file_read_batched),
		cmocka_unit_test(test_file_truncate),
		cmocka_unit_test(test_file_fallocate),
		cmocka_unit_test(test_file_sparse_100g),
		cmocka_unit_test(test_file_setattr),
		cmocka_unit_test(test_file_times_coarse),
		cmocka_unit_test(test_file_write_keep_times),
		cmocka_unit_test(test_file_xattr),
		cmocka_unit_test(test_file_fsync_crash),
		cmocka_unit_test(test_file_large_through_small_log),
		cmocka_unit_test(test_file_refill_after_delete),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
