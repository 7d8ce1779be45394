// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_dir.c - directories: the name hash, bucket splits and table
 * doubling, readdir order and offsets, and a 100,000-entry directory whose
 * lookups read a few blocks each (counted at the device, not timed).
 */
#include <errno.h>

#include "fs_test.h"
#include "fs_i.h"

static void test_dir_hash_range_and_seed(void **state)
{
	uint64_t seen_top[16] = { 0 };
	char name[32];

	(void)state;
	for (int i = 0; i < 16000; i++) {
		int n = snprintf(name, sizeof(name), "file-%d", i);
		uint64_t h = fs_dir_hash(1234, name, (size_t)n);

		assert_true(h >= 2);
		assert_true(h < (1ull << 63));
		assert_int_equal(h, fs_dir_hash(1234, name, (size_t)n));
		seen_top[h >> 59]++;
		/* another seed gives another hash (with overwhelming odds) */
		assert_true(h != fs_dir_hash(99, name, (size_t)n));
	}
	/* the top bits pick buckets: every one of 16 ranges gets a fair share */
	for (int i = 0; i < 16; i++)
		assert_true(seen_top[i] > 700 && seen_top[i] < 1300);
}

struct ft_collect {
	uint64_t n, last_off, bad_order;
	uint8_t *seen;		/* by entry number */
	uint64_t limit;
};

static int ft_collect_fn(void *ctx, const char *name, uint64_t ino, uint32_t mode, uint64_t next)
{
	struct ft_collect *c = ctx;
	int k;

	(void)ino, (void)mode;
	if (next <= c->last_off)
		c->bad_order++;
	c->last_off = next;
	if (sscanf(name, "entry-%d", &k) == 1) {
		assert_true((uint64_t)k < c->limit);
		assert_int_equal(c->seen[k], 0);
		c->seen[k] = 1;
	}
	c->n++;
	return 0;
}

/* Splits through several table doublings; removals; readdir sees each name once. */
static void test_dir_split_and_readdir(void **state)
{
	const int n = 3000;
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct ft_collect c = { .limit = (uint64_t)n };
	struct fs_attr a, d;
	char name[32];

	(void)state;
	c.seen = calloc((size_t)n, 1);
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &d), 0);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "entry-%d", i);
		assert_int_equal(fs_mknod(fs, d.ino, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	}
	assert_int_equal(fs_getattr(fs, d.ino, &a), 0);
	assert_true(a.size > 20 * 4096);	/* it did split */
	for (int i = 0; i < n; i += 3) {
		snprintf(name, sizeof(name), "entry-%d", i);
		assert_int_equal(fs_unlink(fs, d.ino, name), 0);
	}
	assert_int_equal(fs_unmount(fs), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_readdir(fs, d.ino, 0, ft_collect_fn, &c), 0);
	assert_int_equal(c.bad_order, 0);
	assert_int_equal(c.n, 2 + (uint64_t)(n - (n + 2) / 3));
	for (int i = 0; i < n; i++) {
		assert_int_equal(c.seen[i], i % 3 ? 1 : 0);
		snprintf(name, sizeof(name), "entry-%d", i);
		assert_int_equal(fs_lookup(fs, d.ino, name, &a), i % 3 ? 0 : -ENOENT);
	}
	assert_int_equal(fs_rmdir(fs, FS_ROOT_INO, "d"), -ENOTEMPTY);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
	free(c.seen);
}

/* 100,000 entries; lookups read a few blocks each through a small cache. */
static void test_dir_100k_lookup_cost(void **state)
{
	const int n = 100000;
	struct fs_mkfs_opts mo = { .inode_ratio = 4096 };
	struct fs_mount_opts o = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				   .cache_blocks = 64 };
	struct ft_collect c = { .limit = (uint64_t)n };
	struct ft_count_dev cnt;
	struct blk_dev *dev;
	struct fs_attr a, d;
	struct fs *fs;
	uint64_t before, seed = 77;
	char name[32];

	(void)state;
	assert_int_equal(raid_dev_mem_open("mem", 131072, &dev), 0);
	assert_int_equal(fs_mkfs(dev, &mo), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "big", 0755, 0, 0, &d), 0);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "entry-%d", i);
		assert_int_equal(fs_mknod(fs, d.ino, name, S_IFREG | 0644, 0, 0, 0, NULL), 0);
	}
	assert_int_equal(fs_unmount(fs), 0);

	ft_count_init(&cnt, dev);
	assert_int_equal(fs_mount(&cnt.dev, &o, &fs), 0);
	assert_int_equal(fs_lookup(fs, FS_ROOT_INO, "big", &a), 0);
	before = cnt.read_blocks;
	for (int i = 0; i < 200; i++) {
		int k;

		seed = seed * 6364136223846793005ull + 1;
		k = (int)((seed >> 33) % (uint64_t)n);
		snprintf(name, sizeof(name), "entry-%d", k);
		assert_int_equal(fs_lookup(fs, d.ino, name, &a), 0);
	}
	/* table block, its indirect blocks, bucket, inode block: not a scan of the
	 * ~1000 bucket blocks */
	print_message("100k-entry directory: %.2f blocks read per lookup\n",
		      (double)(cnt.read_blocks - before) / 200);
	if ((cnt.read_blocks - before) / 200 > 6)
		fail_msg("%llu blocks read for 200 lookups",
			 (unsigned long long)(cnt.read_blocks - before));
	assert_int_equal(fs_lookup(fs, d.ino, "entry-100000", &a), -ENOENT);
	c.seen = calloc((size_t)n, 1);
	assert_int_equal(fs_readdir(fs, d.ino, 0, ft_collect_fn, &c), 0);
	assert_int_equal(c.n, (uint64_t)n + 2);
	assert_int_equal(c.bad_order, 0);
	free(c.seen);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dir_hash_range_and_seed),
		cmocka_unit_test(test_dir_split_and_readdir),
		cmocka_unit_test(test_dir_100k_lookup_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
