/* SPDX-License-Identifier: MIT */
/*
 * tools/bench/bench.h - the measuring parts of `jgrfs bench raid`: an I/O workload run
 * by several submitting threads, against the raw member devices or against the
 * array, and ISA-L parity generation on one core.
 *
 * The same rows are walked for both targets, so that their ratio says what the
 * engine costs:
 *   sequential  the region is cut into units and the threads take batches of
 *               units in order, starting over at the end until time is up.
 *               Raw: a unit is one chunk on every member at the same offset; a
 *               batch is one request of batch x chunk per member, all members in
 *               one blk_submit_multi() (one io_uring batch): what the members
 *               can do, the baseline. Array: a unit is one full stripe row of
 *               data (data members x chunk), one request per row, a batch in one
 *               blk_submit().
 *   random      4 KiB writes at random blocks (seeded xorshift per thread), a
 *               batch per submit, for a fixed time. Raw: a random member per write.
 */
#ifndef JGRFS_TOOLS_BENCH_H
#define JGRFS_TOOLS_BENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "jgrfs/blkreq.h"

enum bench_pattern {
	BENCH_SEQ_WRITE = 0,
	BENCH_SEQ_READ = 1,
	BENCH_RAND_WRITE = 2,
};

struct bench_job {
	enum bench_pattern pattern;
	bool raw;		/* true: devs are the members; false: devs[0] is the array */
	struct blk_dev **devs;
	unsigned int ndevs;
	uint32_t unit_blocks;	/* sequential unit: raw chunk per member, array row data */
	uint64_t units;		/* sequential: units in the region */
	uint64_t rand_blocks;	/* random: blocks to choose from (per member when raw) */
	unsigned int batch;	/* units (sequential) or 4 KiB writes (random) per submit */
	unsigned int threads;	/* submitting threads, 1..16 */
	double seconds;		/* run this long; sequential with !once starts over at the end */
	bool once;		/* sequential: one pass over the region, however long it takes */
	bool split;		/* raw sequential: one request per chunk, as the engine issues */
	uint64_t seed;		/* random block choice; thread t uses seed + t */
};

struct bench_result {
	uint64_t bytes;		/* raw: to all members; array: array data */
	uint64_t ops;		/* requests completed (random: 4 KiB writes) */
	uint64_t units;		/* sequential units completed */
	double seconds;		/* wall time from the first submit to the last completion */
	double cpu;		/* process CPU seconds over the same time (user + system) */
	int err;		/* 0 or the first negative errno */
};

/*
 * Set (from a signal handler) to stop every workload at its next batch; runs
 * then return -EINTR, so that the command can still remove its files.
 */
extern volatile sig_atomic_t bench_interrupted;

/* Run @job; returns 0 or a negative errno (also in res->err). */
int bench_io_run(const struct bench_job *job, struct bench_result *res);

/*
 * Generate parity for rows of @ndisks chunks of @chunk_bytes (level 5: xor_gen,
 * P; level 6: pq_gen, P and Q) on the calling thread for about @seconds, over a
 * working set of a few rows. Returns data bytes per second (parity not counted),
 * or a negative value when ISA-L refused or memory ran out.
 */
double bench_parity_run(unsigned int level, unsigned int ndisks, uint32_t chunk_bytes,
			double seconds);

/*
 * A counting wrapper around a member device (tools/bench/bench_cnt.c), to see what
 * the engine asks of its members: reads during full-row writes, request sizes,
 * requests per submit. All wrappers share one ops table with submit_multi, so
 * the engine still reaches every member in one io_uring batch.
 */
struct bench_cnt {
	uint64_t submits;		/* batches (submit or submit_multi calls) reaching this member */
	uint64_t reads, writes, flushes;
	uint64_t read_bytes, write_bytes;
};
/* Wrap @lower (owned: closing the wrapper closes it) in a counting device. */
int bench_cnt_open(struct blk_dev *lower, struct blk_dev **out);
/* Add @dev's counters (a bench_cnt device) to @sum. */
void bench_cnt_get(struct blk_dev *dev, struct bench_cnt *sum);

/* The median of @n values (sorts @v). */
double bench_median(double *v, unsigned int n);

#endif /* JGRFS_TOOLS_BENCH_H */
