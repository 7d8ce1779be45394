// SPDX-License-Identifier: MIT
/*
 * src/raid/scrub.c - read every row, count rows whose parity does not match the
 * data (MD's mismatch_cnt), optionally rewrite their parity. The comparison is
 * the row check of stripe.c (RAID_GRP_SCRUB) under the row locks, so the array
 * stays in use. A degraded array is refused: with a chunk missing there is
 * nothing to compare. With jnl-pending set the filesystem has not replayed its
 * journal: the rows it declared may legitimately mismatch, and a repair would
 * trust their data over the journal's -- hence the warning.
 *
 * An array whose initial sync has not ended (sync.c) has rows past its mark
 * whose parity never matched: a mismatch there says nothing of the disks. A
 * scrub that only counts leaves them out (and says so); --repair rewrites
 * their parity as the initial sync would, and moves the mark to the end.
 */
#include <errno.h>

#include "raid_i.h"

int64_t raid_scrub(struct raid_array *a, bool repair, raid_progress_fn fn, void *ctx,
		   struct raid_resync_report *rep)
{
	const struct raid_geo *g = &a->geo;
	uint64_t checked = 0, mism = 0, repaired = 0, synced = 0, step = RAID_GROUP_MAX_ROWS;
	uint64_t end, unsynced;
	double t0 = jg_now_seconds();
	int rc = 0;

	if (raid_missing_read(a)) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "scrub %s: the array is degraded; parity cannot be checked without every member (rebuild first)",
		    a->dev.name);
		return -EINVAL;
	}
	if (repair && a->readonly)
		return -EROFS;
	jg_mutex_lock(&a->sb_lock);
	if (a->sb_flags & RAID_SB_FLAG_JNL_PENDING)
		jg_log(
		    JG_LOG_WARN, "raid",
		    "scrub %s: the filesystem journal has not been replayed (jnl-pending): mismatches may be expected there",
		    a->dev.name);
	jg_mutex_unlock(&a->sb_lock);
	end = repair ? g->rows : __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	if (end < g->rows)
		jg_log(
		    JG_LOG_WARN, "raid",
		    "scrub %s: the initial sync has reached row %llu of %llu: the rows past it are not checked (scrub --repair syncs them)",
		    a->dev.name, (unsigned long long)end, (unsigned long long)g->rows);
	unsynced = __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	for (uint64_t r = 0, cnt; r < end; r += cnt) {
		cnt = end - r < step ? end - r : step;
		if (r < unsynced && r + cnt > unsynced)
			cnt = unsynced - r;

		if (r >= unsynced) /* the initial sync's rows, not mismatches */
			rc = raid_rows_run(a, r, cnt, RAID_ROWS_CHECK, &checked, &synced);
		else
			rc = raid_rows_scrub(a, r, cnt, repair, &checked, &mism, &repaired);
		if (rc)
			break;
		if (fn && fn(ctx, r + cnt, end)) {
			rc = -ECANCELED;
			break;
		}
	}
	if (!rc && unsynced < g->rows && end == g->rows)
		rc = raid_sync_mark(a, g->rows);
	raid_stats_add_resync(a, checked, repaired, 0);
	if (rep) {
		rep->rows_checked = checked;
		rep->rows_repaired = repaired;
		rep->seconds = jg_now_seconds() - t0;
	}
	jg_log(JG_LOG_INFO, "raid",
	       "scrub %s rows_checked=%llu mismatches=%llu rows_repaired=%llu seconds=%.3f rc=%d",
	       a->dev.name, (unsigned long long)checked, (unsigned long long)mism,
	       (unsigned long long)repaired, jg_now_seconds() - t0, rc);
	return rc ? rc : (int64_t)mism;
}

/* ------------------------------------------------------------ online scrub */

int raid_scrub_rows(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
		    raid_row_fn fn, void *ctx, struct raid_scrub_counts *out)
{
	uint64_t checked = 0, mism = 0, repaired = 0, synced = 0, mark, n;
	int rc = 0;

	if (first > a->geo.rows || count > a->geo.rows - first)
		return -EINVAL;
	if (raid_missing_read(a))
		return -EAGAIN; /* degraded: nothing to compare; the caller says so */
	if (repair && a->readonly)
		return -EROFS;
	/* rows past the initial sync's mark never matched: no mismatch there (sync.c) */
	mark = __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	n = first >= mark ? 0 : mark - first < count ? mark - first : count;
	if (n)
		rc = raid_rows_scrub_fn(a, first, n, repair, fn, ctx, &checked, &mism, &repaired);
	if (!rc && n < count) {
		out->unsynced += count - n;
		if (repair)
			rc = raid_rows_run(a, first + n, count - n, RAID_ROWS_CHECK, &checked,
					   &synced);
	}
	raid_stats_add_resync(a, checked, repaired + synced, 0);
	out->rows_checked += checked;
	out->mismatches += mism;
	out->repaired += repaired;
	return rc;
}

int raid_scrub_mark(struct raid_array *a, bool running, bool repair, uint64_t row,
		    uint64_t mismatches)
{
	int rc;

	if (a->readonly)
		return -EROFS;
	jg_mutex_lock(&a->sb_lock);
	a->scrub_flags = running ? RAID_SCRUB_RUNNING | (repair ? RAID_SCRUB_REPAIR : 0) : 0;
	a->scrub_rows = running ? row : 0;
	a->scrub_mismatches = running ? mismatches : 0;
	rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}
