// SPDX-License-Identifier: MIT
/*
 * tools/bench/bench_cnt.c - a member device that counts what passes through it, for
 * `jgrfs bench raid` (tools/bench/bench.h): the engine's member I/O per array byte.
 *
 * Requests are copied with ->dev pointing at the lower device and handed on
 * in one batch (blk_submit_multi() for a multi-member batch, so io_uring still
 * sees the whole batch at once); results are copied back. Counters are atomic:
 * any thread may submit.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct bench_cnt_dev {
	struct blk_dev dev;	/* first: container_of by cast */
	struct blk_dev *lower;
	atomic_uint_fast64_t submits, reads, writes, flushes, read_bytes, write_bytes;
};

static void bench_cnt_count(struct blk_req *r)
{
	struct bench_cnt_dev *c = (struct bench_cnt_dev *)r->dev;
	uint64_t bytes = (uint64_t)r->nblocks * JG_BLOCK_SIZE;

	if (r->op == BLK_OP_READ) {
		atomic_fetch_add(&c->reads, 1);
		atomic_fetch_add(&c->read_bytes, bytes);
	} else if (r->op == BLK_OP_WRITE) {
		atomic_fetch_add(&c->writes, 1);
		atomic_fetch_add(&c->write_bytes, bytes);
	} else {
		atomic_fetch_add(&c->flushes, 1);
	}
}

static int bench_cnt_submit_multi(struct blk_req *reqs, unsigned int n)
{
	struct blk_req stack[64], *low = n <= 64 ? stack : calloc(n, sizeof(*low));
	struct bench_cnt_dev *seen[64];
	unsigned int nseen = 0;
	int rc;

	if (!low)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++) {
		struct bench_cnt_dev *c = (struct bench_cnt_dev *)reqs[i].dev;
		unsigned int k = 0;

		bench_cnt_count(&reqs[i]);
		/* count the batch once per member it reaches */
		while (k < nseen && seen[k] != c)
			k++;
		if (k == nseen && nseen < 64) {
			seen[nseen++] = c;
			atomic_fetch_add(&c->submits, 1);
		}
		low[i] = reqs[i];
		low[i].dev = c->lower;
	}
	rc = blk_submit_multi(low, n);
	for (unsigned int i = 0; i < n; i++)
		reqs[i].result = low[i].result;
	if (low != stack)
		free(low);
	return rc;
}

static int bench_cnt_submit(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		reqs[i].dev = dev;
	return bench_cnt_submit_multi(reqs, n);
}

static int bench_cnt_ctl(struct blk_dev *dev, unsigned int cmd, void *arg)
{
	return blk_ctl(((struct bench_cnt_dev *)dev)->lower, cmd, arg);
}

static void bench_cnt_close(struct blk_dev *dev)
{
	struct bench_cnt_dev *c = (struct bench_cnt_dev *)dev;

	blk_close(c->lower);
	free(c);
}

static const struct blk_dev_ops bench_cnt_ops = {
	.submit = bench_cnt_submit,
	.ctl = bench_cnt_ctl,
	.submit_multi = bench_cnt_submit_multi,
	.close = bench_cnt_close,
};

int bench_cnt_open(struct blk_dev *lower, struct blk_dev **out)
{
	struct bench_cnt_dev *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->lower = lower;
	c->dev.ops = &bench_cnt_ops;
	c->dev.nblocks = lower->nblocks;
	snprintf(c->dev.name, sizeof(c->dev.name), "%s", lower->name);
	*out = &c->dev;
	return 0;
}

void bench_cnt_get(struct blk_dev *dev, struct bench_cnt *sum)
{
	struct bench_cnt_dev *c = (struct bench_cnt_dev *)dev;

	sum->submits += atomic_load(&c->submits);
	sum->reads += atomic_load(&c->reads);
	sum->writes += atomic_load(&c->writes);
	sum->flushes += atomic_load(&c->flushes);
	sum->read_bytes += atomic_load(&c->read_bytes);
	sum->write_bytes += atomic_load(&c->write_bytes);
}
