/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/keep_dev.h - a pass-through device that does not close its lower
 * one, shared by the unit tests of every layer: the test keeps its memory
 * members across raid_stop(), which closes what it was given. Optionally it
 * counts the requests it passes (t_keep.count), and answers BLK_CTL_UNFENCED
 * as a connection would (t_keep.unfenced).
 */
#ifndef JGRFS_TESTS_KEEP_DEV_H
#define JGRFS_TESTS_KEEP_DEV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "jgrfs/blkreq.h"

struct t_count { /* per memory member: requests seen through t_keep */
	uint64_t submits, reads, writes, flushes, read_blocks, write_blocks;
};

struct t_keep {
	struct blk_dev dev;
	struct blk_dev *lower;
	struct t_count *count; /* or NULL */
	const int *unfenced;   /* or NULL: BLK_CTL_UNFENCED answers *unfenced */
};

static inline int t_keep_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct t_keep *k = (struct t_keep *)d;

	if (k->count) {
		__atomic_add_fetch(&k->count->submits, 1, __ATOMIC_RELAXED);
		for (unsigned int i = 0; i < n; i++) {
			if (r[i].op == BLK_OP_READ) {
				__atomic_add_fetch(&k->count->reads, 1, __ATOMIC_RELAXED);
				__atomic_add_fetch(&k->count->read_blocks, r[i].nblocks,
						   __ATOMIC_RELAXED);
			} else if (r[i].op == BLK_OP_WRITE) {
				__atomic_add_fetch(&k->count->writes, 1, __ATOMIC_RELAXED);
				__atomic_add_fetch(&k->count->write_blocks, r[i].nblocks,
						   __ATOMIC_RELAXED);
			} else {
				__atomic_add_fetch(&k->count->flushes, 1, __ATOMIC_RELAXED);
			}
		}
	}
	return blk_submit(k->lower, r, n);
}

static inline int t_keep_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	struct t_keep *k = (struct t_keep *)d;

	if (cmd == BLK_CTL_UNFENCED && k->unfenced)
		return *k->unfenced;
	return blk_ctl(k->lower, cmd, arg);
}

static inline void t_keep_close(struct blk_dev *d)
{
	free(d);
}

static const struct blk_dev_ops t_keep_ops = {
    .submit = t_keep_submit,
    .ctl = t_keep_ctl,
    .close = t_keep_close,
};

static inline struct blk_dev *t_keep(struct blk_dev *lower)
{
	struct t_keep *k = calloc(1, sizeof(*k));

	assert_non_null(k);
	k->dev.ops = &t_keep_ops;
	k->dev.nblocks = lower->nblocks;
	snprintf(k->dev.name, sizeof(k->dev.name), "%s", lower->name);
	k->lower = lower;
	return &k->dev;
}

#endif /* JGRFS_TESTS_KEEP_DEV_H */
