// SPDX-License-Identifier: MIT
/*
 * tools/bench/bench_io.c - the I/O workloads of `jgrfs bench raid` (tools/bench/bench.h).
 *
 * Threads share one job; sequential work is handed out by an atomic unit
 * counter, so the threads together walk the region in order with up to
 * threads x batch units in flight. Each thread owns its buffers and request
 * arrays (and, through dev_uring, its own io_uring ring).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"

#define BENCH_MAX_THREADS 16

volatile sig_atomic_t bench_interrupted;

struct bench_run {
	const struct bench_job *job;
	atomic_uint_fast64_t next_unit;
	atomic_uint_fast64_t bytes, ops, units;
	atomic_int err;
	double deadline;
};

static uint64_t bench_xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static void bench_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = bench_xorshift(&s);

		memcpy(buf + i, &v, 8);
	}
}

/* Sequential: take batches of units until the region is done or time is up. */
static int bench_io_seq(struct bench_run *run, uint8_t *buf, struct blk_req *reqs)
{
	const struct bench_job *job = run->job;
	uint8_t op = job->pattern == BENCH_SEQ_READ ? BLK_OP_READ : BLK_OP_WRITE;
	size_t unit_bytes = (size_t)job->unit_blocks * JG_BLOCK_SIZE;
	bool first = true; /* a thread started late on a loaded machine still measures a batch */

	while (!atomic_load(&run->err) && !bench_interrupted &&
	       (first || jg_now_seconds() < run->deadline)) {
		uint64_t u0 = atomic_fetch_add(&run->next_unit, job->batch);
		unsigned int cnt, nreq = 0;
		uint64_t bytes;
		int rc;

		first = false;
		if (job->once && u0 >= job->units)
			break;
		u0 %= job->units;
		/* a batch never wraps: the tail of the region is a short batch */
		cnt = (unsigned int)(job->units - u0 < job->batch ? job->units - u0 : job->batch);
		if (job->raw) {
			/* the batch's chunks of one member are contiguous: one large request
			 * per member (or, split, one per chunk), all members in one
			 * blk_submit_multi() */
			for (unsigned int d = 0; d < job->ndevs; d++) {
				for (unsigned int k = 0; k < (job->split ? cnt : 1); k++) {
					struct blk_req *r = &reqs[nreq];

					memset(r, 0, sizeof(*r));
					r->op = op;
					r->blkno = (u0 + k) * job->unit_blocks;
					r->nblocks = (job->split ? 1 : cnt) * job->unit_blocks;
					r->buf = buf + ((size_t)d * job->batch + k) * unit_bytes;
					r->dev = job->devs[d];
					nreq++;
				}
			}
			rc = blk_submit_multi(reqs, nreq);
			bytes = (uint64_t)cnt * job->ndevs * unit_bytes;
		} else {
			/* one request per full stripe row, the batch in one blk_submit() */
			for (unsigned int k = 0; k < cnt; k++) {
				struct blk_req *r = &reqs[nreq];

				memset(r, 0, sizeof(*r));
				r->op = op;
				r->blkno = (u0 + k) * job->unit_blocks;
				r->nblocks = job->unit_blocks;
				r->buf = buf + (size_t)k * unit_bytes;
				nreq++;
			}
			rc = blk_submit(job->devs[0], reqs, nreq);
			bytes = (uint64_t)cnt * unit_bytes;
		}
		if (rc)
			return rc;
		atomic_fetch_add(&run->bytes, bytes);
		atomic_fetch_add(&run->ops, nreq);
		atomic_fetch_add(&run->units, cnt);
	}
	return 0;
}

/* Random 4 KiB writes, a batch per submit, no block twice in one batch. */
static int bench_io_rand(struct bench_run *run, uint8_t *buf, struct blk_req *reqs,
			 uint64_t seed)
{
	const struct bench_job *job = run->job;
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	bool first = true; /* as in bench_io_seq */

	while (!atomic_load(&run->err) && !bench_interrupted &&
	       (first || jg_now_seconds() < run->deadline)) {
		int rc;

		first = false;
		for (unsigned int i = 0; i < job->batch; i++) {
			struct blk_req *r = &reqs[i];
			bool dup;

			memset(r, 0, sizeof(*r));
			r->op = BLK_OP_WRITE;
			r->nblocks = 1;
			r->buf = buf + (size_t)i * JG_BLOCK_SIZE;
			do {
				r->dev = job->devs[job->raw ? bench_xorshift(&s) % job->ndevs : 0];
				r->blkno = bench_xorshift(&s) % job->rand_blocks;
				dup = false;
				for (unsigned int j = 0; j < i && !dup; j++)
					dup = reqs[j].dev == r->dev && reqs[j].blkno == r->blkno;
			} while (dup);
		}
		rc = job->raw ? blk_submit_multi(reqs, job->batch) :
				blk_submit(job->devs[0], reqs, job->batch);
		if (rc)
			return rc;
		atomic_fetch_add(&run->bytes, (uint64_t)job->batch * JG_BLOCK_SIZE);
		atomic_fetch_add(&run->ops, job->batch);
	}
	return 0;
}

struct bench_thread {
	struct bench_run *run;
	unsigned int id;
	pthread_t tid;
};

static void *bench_io_thread(void *p)
{
	struct bench_thread *t = p;
	struct bench_run *run = t->run;
	const struct bench_job *job = run->job;
	unsigned int nreq, per_req;
	struct blk_req *reqs;
	uint8_t *buf;
	int rc;

	if (job->pattern == BENCH_RAND_WRITE) {
		nreq = job->batch;
		per_req = 1;
	} else {
		nreq = job->batch * (job->raw ? job->ndevs : 1);
		per_req = job->unit_blocks;
	}
	buf = jg_alloc_blocks((size_t)nreq * per_req);
	reqs = calloc(nreq, sizeof(*reqs));
	if (!buf || !reqs) {
		rc = -ENOMEM;
		goto out;
	}
	bench_fill(buf, (size_t)nreq * per_req * JG_BLOCK_SIZE, job->seed + t->id);
	if (job->pattern == BENCH_RAND_WRITE)
		rc = bench_io_rand(run, buf, reqs, job->seed + t->id);
	else
		rc = bench_io_seq(run, buf, reqs);
out:
	if (rc) {
		int zero = 0;

		atomic_compare_exchange_strong(&run->err, &zero, rc);
	}
	free(reqs);
	free(buf);
	return NULL;
}

static double bench_cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int bench_io_run(const struct bench_job *job, struct bench_result *res)
{
	struct bench_thread th[BENCH_MAX_THREADS];
	struct bench_run run;
	unsigned int nth = job->threads, started = 0;
	double t0, c0;

	memset(res, 0, sizeof(*res));
	if (!nth || nth > BENCH_MAX_THREADS || !job->batch || !job->ndevs ||
	    (job->pattern == BENCH_RAND_WRITE ? !job->rand_blocks : !job->unit_blocks))
		return res->err = -EINVAL;
	run.job = job;
	atomic_init(&run.next_unit, 0);
	atomic_init(&run.bytes, 0);
	atomic_init(&run.ops, 0);
	atomic_init(&run.units, 0);
	atomic_init(&run.err, 0);
	c0 = bench_cpu_seconds();
	t0 = jg_now_seconds();
	run.deadline = t0 + job->seconds;
	for (unsigned int i = 0; i < nth; i++) {
		th[i].run = &run;
		th[i].id = i;
		if (pthread_create(&th[i].tid, NULL, bench_io_thread, &th[i])) {
			int zero = 0;

			atomic_compare_exchange_strong(&run.err, &zero, -EAGAIN);
			break;
		}
		started++;
	}
	for (unsigned int i = 0; i < started; i++)
		pthread_join(th[i].tid, NULL);
	res->seconds = jg_now_seconds() - t0;
	res->cpu = bench_cpu_seconds() - c0;
	res->bytes = atomic_load(&run.bytes);
	res->ops = atomic_load(&run.ops);
	res->units = atomic_load(&run.units);
	res->err = atomic_load(&run.err);
	if (!res->err && bench_interrupted)
		res->err = -EINTR;
	return res->err;
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
