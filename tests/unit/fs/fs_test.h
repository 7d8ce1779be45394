/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/fs/fs_test.h - helpers shared by the filesystem's unit tests: a
 * memory device with a new filesystem, mount/remount, a read-counting wrapper
 * device, and an fsck that must find nothing.
 */
#ifndef JGRFS_TESTS_FS_TEST_H
#define JGRFS_TESTS_FS_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

/* A device that counts the blocks read (lookup cost) and written through it. */
struct ft_count_dev {
	struct blk_dev dev;
	struct blk_dev *inner;
	uint64_t reads, read_blocks, write_blocks;
};

static int ft_count_submit(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	struct ft_count_dev *c = (struct ft_count_dev *)dev;

	for (unsigned int i = 0; i < n; i++)
		if (reqs[i].op == BLK_OP_READ) {
			c->reads++;
			c->read_blocks += reqs[i].nblocks;
		} else if (reqs[i].op == BLK_OP_WRITE) {
			c->write_blocks += reqs[i].nblocks;
		}
	return blk_submit(c->inner, reqs, n);
}

static void ft_count_close(struct blk_dev *dev)
{
	(void)dev;	/* the inner device belongs to the test */
}

static const struct blk_dev_ops ft_count_ops = {
	.submit = ft_count_submit,
	.close = ft_count_close,
};

static inline void ft_count_init(struct ft_count_dev *c, struct blk_dev *inner)
{
	memset(c, 0, sizeof(*c));
	c->dev.ops = &ft_count_ops;
	c->dev.nblocks = inner->nblocks;
	snprintf(c->dev.name, sizeof(c->dev.name), "count(%.50s)", inner->name);
	c->inner = inner;
}

/* A memory device of @mib MiB with a new filesystem. */
static inline struct blk_dev *ft_dev_new(uint64_t mib)
{
	struct fs_mkfs_opts mo = { .label = "test" };
	struct blk_dev *dev;

	assert_int_equal(raid_dev_mem_open("mem", mib * 256, &dev), 0);
	assert_int_equal(fs_mkfs(dev, &mo), 0);
	return dev;
}

static inline struct fs *ft_mount_mode(struct blk_dev *dev, enum jnl_data_mode mode)
{
	struct fs_mount_opts o = { .data_mode = mode, .no_commit_thread = true };
	struct fs *fs = NULL;

	assert_int_equal(fs_mount(dev, &o, &fs), 0);
	return fs;
}

static inline struct fs *ft_mount(struct blk_dev *dev)
{
	return ft_mount_mode(dev, JNL_DATA_ORDERED);
}

/* fsck -n must find nothing. */
static inline void ft_fsck_clean(struct blk_dev *dev)
{
	struct fsck_opts o = { .repair = false };
	struct fsck_report r;
	int rc = fs_fsck(dev, &o, &r);

	if (rc || r.problems_found)
		fail_msg("fsck: exit %d, %llu problems", rc, (unsigned long long)r.problems_found);
}

/* Fill @buf with bytes from seed @s (a reference independent of the fs). */
static inline void ft_pattern(uint8_t *buf, size_t n, uint64_t s)
{
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = (uint8_t)(s >> 56);
	}
}

#endif /* JGRFS_TESTS_FS_TEST_H */
