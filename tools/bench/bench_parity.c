// SPDX-License-Identifier: MIT
/*
 * tools/bench/bench_parity.c - ISA-L parity speed on one core for `jgrfs bench raid`
 * (tools/bench/bench.h): xor_gen (RAID4/5 P) and pq_gen (RAID6 P and Q) over rows of
 * the array's chunk geometry, as the engine calls them for a full-row write.
 *
 * The working set is a few rows (about 4 MiB), the size of a batch of full-row
 * writes in flight, so the figure includes the memory traffic the engine sees
 * rather than a cache-hot loop over one row.
 */
#include <isa-l/raid.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

double bench_parity_run(unsigned int level, unsigned int ndisks, uint32_t chunk_bytes,
			double seconds)
{
	unsigned int ndata = ndisks - (level == 6 ? 2 : 1);
	unsigned int rows = (unsigned int)((4u << 20) / ((size_t)ndisks * chunk_bytes));
	void **vec = NULL;
	uint8_t *buf = NULL;
	uint64_t bytes = 0;
	double t0, t, ret = -1;

	if (rows < 1)
		rows = 1;
	if (ndisks < (level == 6 ? 4u : 3u) || chunk_bytes % 64)
		return -1;
	buf = jg_alloc_blocks((size_t)rows * ndisks * (chunk_bytes / JG_BLOCK_SIZE));
	vec = calloc((size_t)rows * ndisks, sizeof(*vec));
	if (!buf || !vec)
		goto out;
	for (size_t i = 0; i < (size_t)rows * ndisks * chunk_bytes; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	for (size_t i = 0; i < (size_t)rows * ndisks; i++)
		vec[i] = buf + i * chunk_bytes;
	t0 = jg_now_seconds();
	do {
		/* a batch of rows between clock reads keeps the clock out of the figure */
		for (int rep = 0; rep < 8; rep++) {
			for (unsigned int r = 0; r < rows; r++) {
				void **row = vec + (size_t)r * ndisks;
				int rc = level == 6 ? pq_gen((int)ndisks, (int)chunk_bytes, row) :
						      xor_gen((int)ndisks, (int)chunk_bytes, row);

				if (rc)
					goto out;
				bytes += (uint64_t)ndata * chunk_bytes;
			}
		}
		t = jg_now_seconds() - t0;
	} while (t < seconds);
	ret = (double)bytes / t;
out:
	free(vec);
	free(buf);
	return ret;
}
