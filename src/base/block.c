// SPDX-License-Identifier: MIT
/*
 * src/base/block.c - crc32c, the common metadata block header, aligned buffers,
 * UUIDs and the synchronous single-request helpers of blkreq.h.
 *
 * crc32c is ISA-L's crc32_iscsi (no table of ours). It applies no inversion, so
 * the seed matters: jg_crc_seed() derives a never-zero seed from the array UUID,
 * and an all-zero block therefore never verifies (FORMAT.md §1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <isa-l/crc.h>

#include "jgrfs/base.h"
#include "jgrfs/blkreq.h"

uint32_t jg_crc32c(uint32_t seed, const void *p, size_t n)
{
	return crc32_iscsi((unsigned char *)p, (int)n, seed);
}

uint32_t jg_crc_seed(const uint8_t uuid[16])
{
	/* ~0 start, as standard CRC-32C; the UUID makes each array's seed its own */
	uint32_t s = ~jg_crc32c(~0u, uuid, 16);

	return s ? s : 0x4a475246; /* "JGRF": never 0 */
}

void jg_blk_crc_set(void *blk, size_t len, uint32_t seed)
{
	struct jg_blk_hdr *h = blk;

	h->crc = jg_cpu_to_le32(0);
	h->crc = jg_cpu_to_le32(jg_crc32c(seed, blk, len));
}

bool jg_blk_crc_ok(const void *blk, size_t len, uint32_t seed)
{
	const struct jg_blk_hdr *h = blk;
	uint32_t stored = jg_le32(h->crc);
	static const uint8_t zero4[4];
	uint32_t c;

	/* crc over the block with the crc field read as zero, without copying it */
	c = jg_crc32c(seed, blk, offsetof(struct jg_blk_hdr, crc));
	c = jg_crc32c(c, zero4, sizeof(zero4));
	c = jg_crc32c(c, (const uint8_t *)blk + offsetof(struct jg_blk_hdr, reserved),
		      len - offsetof(struct jg_blk_hdr, reserved));
	return c == stored;
}

void jg_blk_seal(void *blk, size_t len, uint32_t magic, uint16_t version, uint16_t flags,
		 uint64_t seq, uint64_t blkno, uint32_t seed)
{
	struct jg_blk_hdr *h = blk;

	h->magic = jg_cpu_to_le32(magic);
	h->version = jg_cpu_to_le16(version);
	h->flags = jg_cpu_to_le16(flags);
	h->seq = jg_cpu_to_le64(seq);
	h->blkno = jg_cpu_to_le64(blkno);
	h->reserved = jg_cpu_to_le32(0);
	jg_blk_crc_set(blk, len, seed);
}

int jg_blk_check(const void *blk, size_t len, uint32_t magic, uint16_t max_version,
		 uint64_t blkno, uint32_t seed, const char *subsys, const char *what,
		 const char *dev)
{
	const struct jg_blk_hdr *h = blk;

	if (jg_le32(h->magic) != magic) {
		jg_log(JG_LOG_ERR, subsys,
		       "%s dev=%s blkno=%llu bad magic: expected 0x%08x found 0x%08x", what,
		       dev, (unsigned long long)blkno, magic, jg_le32(h->magic));
		return -EUCLEAN;
	}
	if (!jg_blk_crc_ok(blk, len, seed)) {
		jg_log(JG_LOG_ERR, subsys, "%s dev=%s blkno=%llu bad crc: stored 0x%08x", what,
		       dev, (unsigned long long)blkno, jg_le32(h->crc));
		return -EUCLEAN;
	}
	if (jg_le16(h->version) > max_version) {
		jg_log(JG_LOG_ERR, subsys,
		       "%s dev=%s blkno=%llu unsupported version: %u (this build reads <= %u)",
		       what, dev, (unsigned long long)blkno, jg_le16(h->version), max_version);
		return -EOPNOTSUPP;
	}
	if (blkno != JG_BLKNO_ANY && jg_le64(h->blkno) != blkno) {
		jg_log(JG_LOG_ERR, subsys,
		       "%s dev=%s blkno=%llu misdirected: block says home is %llu", what, dev,
		       (unsigned long long)blkno, (unsigned long long)jg_le64(h->blkno));
		return -EUCLEAN;
	}
	return 0;
}

int jg_blk_verify(const void *blk, size_t len, uint32_t magic, uint16_t max_version,
		  uint64_t blkno, uint32_t seed)
{
	const struct jg_blk_hdr *h = blk;

	if (jg_le32(h->magic) != magic || !jg_blk_crc_ok(blk, len, seed))
		return -EUCLEAN;
	if (jg_le16(h->version) > max_version)
		return -EOPNOTSUPP;
	if (blkno != JG_BLKNO_ANY && jg_le64(h->blkno) != blkno)
		return -EUCLEAN;
	return 0;
}

void *jg_alloc_blocks(size_t nblocks)
{
	void *p = NULL;

	if (nblocks == 0)
		nblocks = 1;
	if (posix_memalign(&p, JG_BLOCK_SIZE, nblocks * JG_BLOCK_SIZE))
		return NULL;
	return p;
}

void *jg_zalloc_blocks(size_t nblocks)
{
	void *p = jg_alloc_blocks(nblocks);

	if (p)
		memset(p, 0, (nblocks ? nblocks : 1) * JG_BLOCK_SIZE);
	return p;
}

void jg_uuid_generate(uint8_t uuid[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t r = getrandom(uuid + got, 16 - got, 0);

		if (r > 0)
			got += (size_t)r;
	}
	uuid[6] = (uuid[6] & 0x0f) | 0x40; /* version 4 */
	uuid[8] = (uuid[8] & 0x3f) | 0x80; /* RFC 4122 variant */
}

void jg_uuid_format(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

bool jg_uuid_is_zero(const uint8_t uuid[16])
{
	for (int i = 0; i < 16; i++)
		if (uuid[i])
			return false;
	return true;
}

double jg_now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int blk_rw(struct blk_dev *dev, int op, uint64_t blkno, uint32_t nblocks, void *buf,
	   uint32_t flags)
{
	struct blk_req r = {
		.op = (uint8_t)op, .flags = flags, .blkno = blkno, .nblocks = nblocks, .buf = buf,
	};

	return blk_submit(dev, &r, 1);
}

/* ------------------------------------------------ the device contract (JG_ASSERTS) */

/* Batches up to this many requests are checked for overlapping writes (n^2). */
#define BLK_CHECK_OVERLAP_MAX 64u

static bool blk_req_rw(const struct blk_req *r)
{
	return r->op == BLK_OP_READ || r->op == BLK_OP_WRITE;
}

/*
 * What a caller promises of a batch (struct blk_dev_ops.submit, struct
 * blk_req): known flags; a buffer of a read or write JG_BLOCK_SIZE-aligned; no
 * two requests of the batch to one device overlapping unless both read.
 * A bad op, an empty or out-of-range request is not checked: the device
 * answers it with -EINVAL, and tests ask for that answer.
 */
static void blk_req_check(const struct blk_req *reqs, unsigned int n, const struct blk_dev *dev)
{
	JG_ASSERT(n == 0 || reqs);
	for (unsigned int i = 0; i < n; i++) {
		const struct blk_req *r = &reqs[i];

		JG_ASSERT(!(r->flags & ~BLK_FLAGS_KNOWN));
		JG_ASSERT(!blk_req_rw(r) || !r->nblocks ||
			  ((uintptr_t)r->buf % JG_BLOCK_SIZE == 0 && r->buf));
	}
	if (n > BLK_CHECK_OVERLAP_MAX)
		return;
	for (unsigned int i = 0; i < n; i++) {
		const struct blk_req *x = &reqs[i];

		if (!blk_req_rw(x) || !x->nblocks)
			continue;
		for (unsigned int j = i + 1; j < n; j++) {
			const struct blk_req *y = &reqs[j];

			if (!blk_req_rw(y) || !y->nblocks ||
			    (x->op == BLK_OP_READ && y->op == BLK_OP_READ) ||
			    (dev ? false : x->dev != y->dev))
				continue;
			JG_ASSERT(x->blkno >= y->blkno + y->nblocks ||
				  y->blkno >= x->blkno + x->nblocks);
		}
	}
}

/* What a device does (submit, submit_multi): results 0 or -errno, a failure fails the call. */
static void blk_result_check(const struct blk_req *reqs, unsigned int n, int rc)
{
	bool failed = false;

	JG_ASSERT(rc <= 0);
	for (unsigned int i = 0; i < n; i++) {
		JG_ASSERT(reqs[i].result <= 0);
		failed |= reqs[i].result != 0;
	}
	JG_ASSERT(!failed || rc);
}

int blk_submit_checked(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	int rc;

	JG_ASSERT(dev && dev->ops && dev->ops->submit);
	blk_req_check(reqs, n, dev);
	rc = dev->ops->submit(dev, reqs, n);
	blk_result_check(reqs, n, rc);
	return rc;
}

int blk_submit_multi(struct blk_req *reqs, unsigned int n)
{
	unsigned int i = 0;
	int first = 0;

	for (unsigned int k = 0; JG_ASSERTS && k < n; k++)
		JG_ASSERT(reqs[k].dev && reqs[k].dev->ops);
	if (JG_ASSERTS)
		blk_req_check(reqs, n, NULL);

	/*
	 * Runs of requests whose devices share an ops table with submit_multi go in
	 * one call; the rest go device by device. Callers group requests by device
	 * (the RAID layer builds them member by member), so runs are long.
	 */
	while (i < n) {
		const struct blk_dev_ops *ops = reqs[i].dev->ops;
		unsigned int j = i + 1;
		int rc;

		if (ops->submit_multi) {
			while (j < n && reqs[j].dev->ops == ops)
				j++;
			rc = ops->submit_multi(reqs + i, j - i);
			if (JG_ASSERTS)
				blk_result_check(reqs + i, j - i, rc);
		} else {
			while (j < n && reqs[j].dev == reqs[i].dev)
				j++;
			rc = blk_submit(reqs[i].dev, reqs + i, j - i);
		}
		if (rc && !first)
			first = rc;
		i = j;
	}
	return first;
}

int blk_flush(struct blk_dev *dev)
{
	struct blk_req r = { .op = BLK_OP_FLUSH };

	return blk_submit(dev, &r, 1);
}
