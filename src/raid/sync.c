// SPDX-License-Identifier: MIT
/*
 * src/raid/sync.c - the initial sync of a new array: parity made to match
 * whatever the members held before create, in the background, while the array
 * is in use (MD's resync after create, with its resync_offset).
 *
 * raid_create() touches nothing of the data area, so a new array holds the
 * disks' old contents with parity that may not match them. Its superblocks
 * carry a sync mark, sync_rows, and the transient feature
 * RAID_FEATURE_INCOMPAT_SYNCING until the mark reaches the last row.
 *
 * (Y1) Rows below the mark are in sync (as any row of an array in use: but for
 *      the writes in flight, which the bitmap or the journal cover). A row at
 *      or past it is written only in ways that leave the lines written
 *      consistent whatever they held (stripe.c (W6): full lines, reconstruct
 *      writes, the row path), so every line of such a row is either one that
 *      nothing has written since create -- it holds no data of the filesystem,
 *      which never reads a block it has not written -- or consistent. A member
 *      lost before the sync ends therefore loses nothing: what is reconstructed
 *      for a line never written is noise that no file references.
 * (Y2) The mark in the superblocks never passes rows whose new parity is not
 *      durable: every member is flushed before the superblock round that moves
 *      it, one every RAID_MARK_SECONDS or sixteenth of the rows (as
 *      rebuild.c (R1)); a stop or crash loses at most that much of the sync,
 *      and the sync resumes from the mark at the next mount. The round that
 *      moves the mark to the end clears RAID_FEATURE_INCOMPAT_SYNCING.
 * (Y3) A row is synced under its exclusive row lock, as a writer holds it
 *      (stripe.c (W1)), reading every chunk and rewriting the parity if it
 *      does not match: a write to the row waits or comes after.
 * (Y4) Nothing can be checked while a member is missing or being rebuilt: the
 *      sync waits (-EAGAIN) for the rebuild, which itself writes the new
 *      member's chunks from the rest of the row, consistent with what it
 *      reconstructs.
 */
#include <errno.h>

#include "raid_i.h"

static void raid_sync_rate(struct raid_array *a, double rate)
{
	pthread_mutex_lock(&a->stats_lock);
	a->sync_rate = rate;
	pthread_mutex_unlock(&a->stats_lock);
}

/* (Y2) Flush every member, then record @mark in the superblocks (never lower). */
int raid_sync_mark(struct raid_array *a, uint64_t mark)
{
	int rc = raid_members_flush(a, ~0u);

	if (rc)
		return rc;
	jg_mutex_lock(&a->sb_lock);
	if (mark > a->sync_rows) {
		__atomic_store_n(&a->sync_rows, mark, __ATOMIC_RELEASE);
		if (__atomic_load_n(&a->sync_done, __ATOMIC_ACQUIRE) < mark)
			__atomic_store_n(&a->sync_done, mark, __ATOMIC_RELEASE);
		rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
	}
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

static int raid_initial_sync_run(struct raid_array *a, raid_progress_fn fn, void *ctx)
{
	const struct raid_geo *g = &a->geo;
	uint64_t step = RAID_GROUP_MAX_ROWS, checked = 0, repaired = 0, first;
	double t0 = jg_now_seconds(), tmark = t0;
	int rc = 0;

	if (__atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE) >= g->rows)
		return 0;
	if (a->readonly)
		return -EROFS;
	if (raid_missing_read(a)) /* (Y4) */
		return -EAGAIN;
	first = a->sync_rows;
	jg_log(JG_LOG_INFO, "raid", "initial sync %s: from row %llu of %llu", a->dev.name,
	       (unsigned long long)first, (unsigned long long)g->rows);
	for (uint64_t r = first; r < g->rows && !rc; r += step) {
		uint64_t cnt = g->rows - r < step ? g->rows - r : step;
		double now;

		rc = raid_rows_run(a, r, cnt, RAID_ROWS_CHECK, &checked, &repaired); /* (Y3) */
		if (!rc && raid_missing_read(a))
			rc = -EAGAIN; /* a member failed meanwhile: the rows may be half done */
		if (rc)
			break;
		__atomic_store_n(&a->sync_done, r + cnt, __ATOMIC_RELEASE);
		now = jg_now_seconds();
		if (now > t0)
			raid_sync_rate(a, (double)(r + cnt - first) / (now - t0));
		if (r + cnt == g->rows ||
		    (now - tmark >= raid_mark_seconds(a->test.sync_mark_always) ||
		     r + cnt - __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE) >= g->rows / 16)) {
			rc = raid_sync_mark(a, r + cnt); /* (Y2) */
			tmark = now;
		}
		if (!rc && r + cnt < g->rows && fn && fn(ctx, r + cnt, g->rows))
			rc = -ECANCELED;
	}
	if (rc == -ECANCELED || rc == -EAGAIN) {
		/* what is done is durable: rows [0, sync_done) were synced and flushed at
		 * the mark, or are flushed now */
		uint64_t done = __atomic_load_n(&a->sync_done, __ATOMIC_ACQUIRE);
		int mrc = raid_sync_mark(a, done);

		if (mrc)
			rc = mrc;
	}
	raid_stats_add_resync(a, checked, repaired, 0);
	raid_sync_rate(a, 0);
	jg_log(JG_LOG_INFO, "raid",
	       "initial sync %s: %s at row %llu of %llu, rows_checked=%llu rows_rewritten=%llu seconds=%.3f",
	       a->dev.name,
	       !rc		    ? "done"
	       : rc == -ECANCELED ? "paused"
	       : rc == -EAGAIN	    ? "waiting for a rebuild"
				    : "stopped by an error",
	       (unsigned long long)a->sync_rows, (unsigned long long)g->rows,
	       (unsigned long long)checked, (unsigned long long)repaired, jg_now_seconds() - t0);
	return rc;
}

int raid_initial_sync(struct raid_array *a, raid_progress_fn fn, void *ctx)
{
	enum jg_opoint op = jg_opoint_set(JG_OP_RAID_SYNC);
	int rc = raid_initial_sync_run(a, fn, ctx);

	jg_opoint_set(op);
	return rc;
}
