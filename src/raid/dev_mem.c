// SPDX-License-Identifier: MIT
/*
 * src/raid/dev_mem.c - a member device in memory, for unit tests.
 *
 * Anonymous mmap, so a large device costs only the pages written. Requests in a
 * batch run one after another; the device is thread-safe for requests that do
 * not overlap (as a disk: overlapping concurrent writes land in either order).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jgrfs/raid.h"

struct dev_mem {
	struct blk_dev dev;	/* first: container_of by cast */
	uint8_t *data;
	size_t bytes;
};

static int raid_dev_mem_submit(struct blk_dev *d, struct blk_req *reqs, unsigned int n)
{
	struct dev_mem *m = (struct dev_mem *)d;
	int first = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct blk_req *r = &reqs[i];
		size_t off = (size_t)r->blkno * JG_BLOCK_SIZE;
		size_t len = (size_t)r->nblocks * JG_BLOCK_SIZE;

		r->result = 0;
		if (r->op == BLK_OP_FLUSH)
			continue;
		if (r->blkno > d->nblocks || r->nblocks > d->nblocks - r->blkno) {
			r->result = -EINVAL;
		} else if (r->op == BLK_OP_READ) {
			memcpy(r->buf, m->data + off, len);
		} else if (r->op == BLK_OP_WRITE) {
			memcpy(m->data + off, r->buf, len);
		} else {
			r->result = -EINVAL;
		}
		if (r->result && !first)
			first = r->result;
	}
	return first;
}

static void raid_dev_mem_close(struct blk_dev *d)
{
	struct dev_mem *m = (struct dev_mem *)d;

	munmap(m->data, m->bytes);
	free(m);
}

static int raid_dev_mem_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	struct dev_mem *m = (struct dev_mem *)d;

	if (cmd != BLK_CTL_GET_ID)
		return -ENOTTY;
	*(struct blk_id *)arg = (struct blk_id){.kind = BLK_ID_MEM, .a = (uintptr_t)m->data};
	return 0;
}

static const struct blk_dev_ops raid_dev_mem_ops = {
	.submit = raid_dev_mem_submit,
	.ctl = raid_dev_mem_ctl,
	.close = raid_dev_mem_close,
};

int raid_dev_mem_open(const char *name, uint64_t nblocks, struct blk_dev **out)
{
	struct dev_mem *m;

	if (nblocks == 0)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->bytes = (size_t)nblocks * JG_BLOCK_SIZE;
	m->data = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m->data == MAP_FAILED) {
		free(m);
		return -ENOMEM;
	}
	m->dev.ops = &raid_dev_mem_ops;
	m->dev.nblocks = nblocks;
	snprintf(m->dev.name, sizeof(m->dev.name), "%s", name ? name : "mem");
	*out = &m->dev;
	return 0;
}
