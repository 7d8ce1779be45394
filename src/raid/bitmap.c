// SPDX-License-Identifier: MIT
/*
 * src/raid/bitmap.c - the write-intent bitmap (policies bitmap and journal).
 *
 * One bit per bitmap_region_blocks array blocks, the same bits on every member
 * (member blocks a->bm_first .., raid_format.h). Protocol, after MD's md/bitmap.c:
 * (B1) A region's bit is set durably -- its bitmap block written to every
 *      writable member and flushed -- before the first write into a clean region
 *      is issued. One call sets every bit a member batch needs: one bitmap write
 *      round per batch, not per region. The flush round goes to the devices the
 *      writes went to, named again by each request's ->dev, which a member's
 *      device stack therefore leaves alone (dev_fault.c (Z1)).
 * (B2) A bit is cleared lazily, at an array flush (BLK_OP_FLUSH, BLK_PREFLUSH,
 *      raid_stop), when the region has no write in flight, no write completed
 *      since the flush before this one began (so every write to it has been made
 *      durable by a completed flush), and it has been idle for
 *      RAID_BITMAP_CLEAR_DELAY seconds (2 s, MD's daemon_sleep is 5 s).
 *      Clearing is not flushed: a lost clear leaves a set bit, which only costs
 *      a resync of that region.
 * (B3) Under the journal policy writes flagged BLK_FS_RAIDSYNC never reach (B1):
 *      the filesystem's journal names their rows after a crash.
 * (B5) ... except in the regions named by BLK_CTL_TRACK_ALWAYS: the filesystem's
 *      and its journal's superblocks, which a recovery reads before the journal
 *      can name any row. Their writes set the region's bit like any other, so a
 *      dirty and degraded assembly knows those rows may be torn (at risk), and a
 *      clean one resyncs them before they are read.
 * (B4) A user write that failed upward (stripe.c (W5)) leaves its rows recorded
 *      dirty: the bits of its regions are set durably, whatever its flags, and
 *      resync_pending stops (B2) and raid_stop from clearing any bit or marking
 *      the array clean, so the next assembly resyncs them.
 * A bitmap write that fails on a member, with any error, fails that member.
 * bm_lock is held across bitmap I/O so that a set and a clear of one block can
 * never be reordered on a member.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

int raid_bitmap_track_always(struct raid_array *a, uint64_t blkno)
{
	uint64_t reg;

	if (!a->bm_blocks)
		return 0;
	if (blkno >= a->geo.array_blocks)
		return -EINVAL;
	reg = blkno / a->bm_region_blocks;
	for (unsigned int i = 0; i < a->bm_nalways; i++)
		if (a->bm_always[i] == reg)
			return 0;
	if (a->bm_nalways == RAID_TRACK_ALWAYS_MAX)
		return -ENOSPC;
	a->bm_always[a->bm_nalways] = reg;
	__atomic_store_n(&a->bm_nalways, a->bm_nalways + 1, __ATOMIC_RELEASE);
	return 0;
}

bool raid_bitmap_tracks(const struct raid_array *a, uint64_t reg, uint32_t flags)
{
	unsigned int n;

	if (a->policy != RAID_RESYNC_JOURNAL || !(flags & BLK_FS_RAIDSYNC))
		return true;
	n = __atomic_load_n(&a->bm_nalways, __ATOMIC_ACQUIRE);
	for (unsigned int i = 0; i < n; i++)
		if (a->bm_always[i] == reg)
			return true;
	return false;
}

/* (B2) Seconds a region must be idle before its bit is cleared. */
static double raid_bitmap_clear_delay(const struct raid_array *a)
{
	return a->test.bitmap_clear_now ? 0 : RAID_BITMAP_CLEAR_DELAY;
}

static bool raid_bit_get(const uint8_t *b, uint64_t i)
{
	return b[i / 8] & (1u << (i % 8));
}

static void raid_bit_set(uint8_t *b, uint64_t i, bool v)
{
	if (v)
		b[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		b[i / 8] &= (uint8_t) ~(1u << (i % 8));
}

int raid_bitmap_init(struct raid_array *a, uint32_t region_blocks, uint32_t blocks,
		     uint64_t regions)
{
	a->bm_region_blocks = region_blocks;
	a->bm_blocks = blocks;
	a->bm_regions = blocks ? regions : 0;
	if (!blocks)
		return 0;
	a->bm_bits = calloc((size_t)blocks * RAID_BITMAP_BITS_PER_BLOCK / 8, 1);
	a->bm_inflight = calloc(regions, sizeof(*a->bm_inflight));
	a->bm_last_epoch = calloc(regions, sizeof(*a->bm_last_epoch));
	a->bm_last_time = calloc(regions, sizeof(*a->bm_last_time));
	if (!a->bm_bits || !a->bm_inflight || !a->bm_last_epoch || !a->bm_last_time)
		return -ENOMEM;
	return 0;
}

void raid_bitmap_free(struct raid_array *a)
{
	free(a->bm_bits);
	free(a->bm_inflight);
	free(a->bm_last_epoch);
	free(a->bm_last_time);
	a->bm_bits = NULL;
	a->bm_inflight = NULL;
	a->bm_last_epoch = NULL;
	a->bm_last_time = NULL;
}

static void raid_bitmap_fill_block(struct raid_array *a, uint32_t i, uint8_t *blk)
{
	struct raid_bitmap_blk *b = (struct raid_bitmap_blk *)blk;
	uint64_t first = (uint64_t)i * RAID_BITMAP_BITS_PER_BLOCK;
	uint64_t nbits = a->bm_regions > first ? a->bm_regions - first : 0;

	if (nbits > RAID_BITMAP_BITS_PER_BLOCK)
		nbits = RAID_BITMAP_BITS_PER_BLOCK;
	memset(blk, 0, RAID_BS);
	b->first_region = jg_cpu_to_le64(first);
	b->nbits = jg_cpu_to_le32((uint32_t)nbits);
	memcpy(b->bits, a->bm_bits + first / 8, sizeof(b->bits));
	jg_blk_seal(blk, RAID_BS, RAID_BITMAP_MAGIC, RAID_FORMAT_VERSION, 0,
		    __atomic_load_n(&a->events, __ATOMIC_RELAXED), a->bm_first + i, a->seed);
}

int raid_bitmap_load(struct raid_array *a)
{
	uint32_t miss = raid_missing_read(a);
	uint8_t *blk;
	int rc = 0;

	if (!a->bm_blocks)
		return 0;
	blk = jg_alloc_blocks(1);
	if (!blk)
		return -ENOMEM;
	for (unsigned int m = 0; m < a->geo.n; m++) {
		if (miss & (1u << m))
			continue;
		for (uint32_t i = 0; i < a->bm_blocks; i++) {
			struct raid_bitmap_blk *b = (struct raid_bitmap_blk *)blk;
			uint64_t first = (uint64_t)i * RAID_BITMAP_BITS_PER_BLOCK;

			rc = blk_rw(a->m[m].dev, BLK_OP_READ, a->bm_first + i, 1, blk, 0);
			if (!rc)
				rc = jg_blk_check(blk, RAID_BS, RAID_BITMAP_MAGIC,
						  RAID_FORMAT_VERSION, a->bm_first + i,
						  a->seed, "raid", "bitmap block", a->m[m].name);
			if (rc || jg_le64(b->first_region) != first) {
				/* untrusted: every region of this block may be dirty */
				jg_log(JG_LOG_WARN, "raid",
				       "dev=%s bitmap block %u unreadable (%s): treating its "
				       "regions as dirty",
				       a->m[m].name, i,
				       rc ? strerror(-rc) : "it names other regions");
				memset(a->bm_bits + first / 8, 0xff,
				       RAID_BITMAP_BITS_PER_BLOCK / 8);
				rc = 0;
				continue;
			}
			for (size_t k = 0; k < sizeof(b->bits); k++)
				a->bm_bits[first / 8 + k] |= b->bits[k];
		}
	}
	/* bits past the last region mean nothing */
	for (uint64_t r = a->bm_regions; r < (uint64_t)a->bm_blocks * RAID_BITMAP_BITS_PER_BLOCK;
	     r++)
		raid_bit_set(a->bm_bits, r, false);
	a->bm_dirty = 0;
	for (uint64_t r = 0; r < a->bm_regions; r++)
		a->bm_dirty += raid_bit_get(a->bm_bits, r);
	free(blk);
	return rc;
}

/* Write bitmap blocks [first, first+count) to the writable members. bm_lock held or
 * single-threaded. */
static int raid_bitmap_write_locked(struct raid_array *a, uint32_t first, uint32_t count,
				    int only_role, bool flush)
{
	struct blk_req *reqs = NULL;
	uint8_t *bufs = NULL;
	unsigned int nr = 0;
	int rc = 0;

	JG_ASSERT_HELD(&a->bm_lock);
	if (!count)
		return 0;
	for (int attempt = 0; attempt <= (int)a->geo.npar; attempt++) {
		uint32_t miss = raid_missing_write(a);
		bool again = false;

		reqs = calloc((size_t)a->geo.n * 2, sizeof(*reqs));
		bufs = jg_alloc_blocks(count);
		if (!reqs || !bufs) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < count; i++)
			raid_bitmap_fill_block(a, first + i, bufs + (size_t)i * RAID_BS);
		nr = 0;
		for (unsigned int m = 0; m < a->geo.n; m++) {
			if ((miss & (1u << m)) || (only_role >= 0 && (unsigned int)only_role != m))
				continue;
			reqs[nr++] = (struct blk_req){.op = BLK_OP_WRITE,
						      .blkno = a->bm_first + first,
						      .nblocks = count,
						      .buf = bufs,
						      .dev = a->m[m].dev};
		}
		rc = blk_submit_multi(reqs, nr);
		if (!rc && flush) {
			for (unsigned int i = 0; i < nr; i++)
				reqs[nr + i] =
				    (struct blk_req){.op = BLK_OP_FLUSH, .dev = reqs[i].dev};
			rc = blk_submit_multi(reqs + nr, nr);
		}
		if (rc) {
			for (unsigned int i = 0; i < (flush ? 2 * nr : nr); i++) {
				if (!reqs[i].result)
					continue;
				for (unsigned int m = 0; m < a->geo.n; m++)
					if (a->m[m].dev == reqs[i].dev && /* rebuild.c (R6) */
					    !raid_member_fail_dev(a, m, reqs[i].dev,
								  reqs[i].result))
						again = true;
			}
		}
		free(reqs);
		free(bufs);
		reqs = NULL;
		bufs = NULL;
		if (!rc || !again)
			break;
	}
out:
	free(reqs);
	free(bufs);
	return rc;
}

/* raid_bitmap_write_locked() for the ordering point @p: bits set (B1) or cleared (B2). */
static int raid_bitmap_write_at(struct raid_array *a, enum jg_opoint p, uint32_t first,
				uint32_t count, bool flush)
{
	enum jg_opoint op = jg_opoint_set(p);
	int rc = raid_bitmap_write_locked(a, first, count, -1, flush);

	jg_opoint_set(op);
	return rc;
}

int raid_bitmap_write(struct raid_array *a, uint32_t first, uint32_t count, int only_role)
{
	int rc;

	jg_mutex_lock(&a->bm_lock);
	rc = raid_bitmap_write_locked(a, first, count, only_role, true);
	jg_mutex_unlock(&a->bm_lock);
	return rc;
}

int raid_bitmap_start(struct raid_array *a, const uint64_t *regions, unsigned int n)
{
	uint32_t lo = UINT32_MAX, hi = 0;
	uint64_t newbits = 0;
	int rc = 0;

	if (!a->bm_blocks || !n)
		return 0;
	jg_mutex_lock(&a->bm_lock);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t r = regions[i];

		a->bm_inflight[r]++;
		if (!raid_bit_get(a->bm_bits, r)) {
			uint32_t blk = (uint32_t)(r / RAID_BITMAP_BITS_PER_BLOCK);

			raid_bit_set(a->bm_bits, r, true);
			a->bm_dirty++;
			newbits++;
			lo = blk < lo ? blk : lo;
			hi = blk > hi ? blk : hi;
		}
	}
	/* (B1) durable before the caller writes */
	if (newbits)
		rc = raid_bitmap_write_at(a, JG_OP_RAID_BITMAP_SET, lo, hi - lo + 1, true);
	if (rc) {
		for (unsigned int i = 0; i < n; i++)
			a->bm_inflight[regions[i]]--;
	}
	jg_mutex_unlock(&a->bm_lock);
	if (newbits && !rc) {
		pthread_mutex_lock(&a->stats_lock);
		a->stats.bitmap_bits_set += newbits;
		pthread_mutex_unlock(&a->stats_lock);
	}
	return rc;
}

void raid_bitmap_end(struct raid_array *a, const uint64_t *regions, unsigned int n)
{
	double now;

	if (!a->bm_blocks || !n)
		return;
	now = jg_now_seconds();
	jg_mutex_lock(&a->bm_lock);
	for (unsigned int i = 0; i < n; i++) {
		JG_ASSERT(a->bm_inflight[regions[i]] > 0); /* ended as often as started */
		a->bm_inflight[regions[i]]--;
		a->bm_last_epoch[regions[i]] = a->bm_epoch;
		a->bm_last_time[regions[i]] = now;
	}
	jg_mutex_unlock(&a->bm_lock);
}

void raid_bitmap_keep_dirty(struct raid_array *a, const uint64_t *regions, unsigned int n)
{
	uint32_t lo = UINT32_MAX, hi = 0;

	jg_mutex_lock(&a->bm_lock);
	a->resync_pending = true; /* (B4) */
	for (unsigned int i = 0; i < n && a->bm_blocks; i++) {
		uint32_t blk = (uint32_t)(regions[i] / RAID_BITMAP_BITS_PER_BLOCK);

		if (raid_bit_get(a->bm_bits, regions[i]))
			continue;
		raid_bit_set(a->bm_bits, regions[i], true);
		a->bm_dirty++;
		lo = blk < lo ? blk : lo;
		hi = blk > hi ? blk : hi;
	}
	/* a member that cannot take it is failed; the others record the rows */
	if (lo <= hi)
		raid_bitmap_write_at(a, JG_OP_RAID_BITMAP_SET, lo, hi - lo + 1, true);
	jg_mutex_unlock(&a->bm_lock);
}

void raid_bitmap_flushed(struct raid_array *a)
{
	uint32_t lo = UINT32_MAX, hi = 0;
	double now;

	if (!a->bm_blocks)
		return;
	now = jg_now_seconds();
	jg_mutex_lock(&a->bm_lock);
	a->bm_epoch++;
	/* bits loaded from a crash that was not resynced must survive (S3 of super.c) */
	for (uint64_t r = 0; r < a->bm_regions && !a->resync_pending; r++) {
		uint32_t blk;

		if (!raid_bit_get(a->bm_bits, r) || a->bm_inflight[r])
			continue;
		/* (B2) */
		if (a->bm_last_epoch[r] + 1 >= a->bm_epoch ||
		    now - a->bm_last_time[r] < raid_bitmap_clear_delay(a))
			continue;
		raid_bit_set(a->bm_bits, r, false);
		a->bm_dirty--;
		blk = (uint32_t)(r / RAID_BITMAP_BITS_PER_BLOCK);
		lo = blk < lo ? blk : lo;
		hi = blk > hi ? blk : hi;
	}
	if (lo <= hi)
		raid_bitmap_write_at(a, JG_OP_RAID_BITMAP_CLEAR, lo, hi - lo + 1, false);
	jg_mutex_unlock(&a->bm_lock);
}

int raid_bitmap_clear_all(struct raid_array *a)
{
	int rc;

	if (!a->bm_blocks)
		return 0;
	jg_mutex_lock(&a->bm_lock);
	memset(a->bm_bits, 0, (size_t)a->bm_blocks * RAID_BITMAP_BITS_PER_BLOCK / 8);
	a->bm_dirty = 0;
	rc = raid_bitmap_write_at(a, JG_OP_RAID_BITMAP_CLEAR, 0, a->bm_blocks, true);
	jg_mutex_unlock(&a->bm_lock);
	return rc;
}

bool raid_bitmap_dirty_below(struct raid_array *a, uint64_t row)
{
	const struct raid_geo *g = &a->geo;
	bool below = true;

	if (!a->bm_blocks)
		return false;
	jg_mutex_lock(&a->bm_lock);
	for (uint64_t reg = 0; reg < a->bm_regions && below; reg++) {
		uint64_t end = (reg + 1) * a->bm_region_blocks;

		if (!raid_bit_get(a->bm_bits, reg))
			continue;
		if (end > g->array_blocks)
			end = g->array_blocks;
		below = (end - 1) / g->row_blocks < row;
	}
	jg_mutex_unlock(&a->bm_lock);
	return below;
}
