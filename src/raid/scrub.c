// SPDX-License-Identifier: MIT
/*
 * src/raid/scrub.c - read every row, count rows whose parity does not match the
 * data (MD's mismatch_cnt), optionally rewrite their parity. The comparison is
 * the row check of stripe.c (RAID_GRP_SCRUB) under the row locks, so the array
 * stays in use. A degraded array is refused: with a chunk missing there is
 * nothing to compare. With jnl-pending set the filesystem has not replayed its
 * journal: the rows it declared may legitimately mismatch, and a repair would
 * trust their data over the journal's -- hence the warning.
 */
#include <errno.h>

#include "raid_i.h"

int64_t raid_scrub(struct raid_array *a, bool repair, raid_progress_fn fn, void *ctx,
		   struct raid_resync_report *rep)
{
	const struct raid_geo *g = &a->geo;
	uint64_t checked = 0, mism = 0, repaired = 0, step = RAID_GROUP_MAX_ROWS;
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
	pthread_mutex_lock(&a->sb_lock);
	if (a->sb_flags & RAID_SB_FLAG_JNL_PENDING)
		jg_log(
		    JG_LOG_WARN, "raid",
		    "scrub %s: the filesystem journal has not been replayed (jnl-pending): mismatches may be expected there",
		    a->dev.name);
	pthread_mutex_unlock(&a->sb_lock);
	for (uint64_t r = 0; r < g->rows; r += step) {
		uint64_t cnt = g->rows - r < step ? g->rows - r : step;

		rc = raid_rows_scrub(a, r, cnt, repair, &checked, &mism, &repaired);
		if (rc)
			break;
		if (fn && fn(ctx, r + cnt, g->rows)) {
			rc = -ECANCELED;
			break;
		}
	}
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
	uint64_t checked = 0, mism = 0, repaired = 0;
	int rc;

	if (first > a->geo.rows || count > a->geo.rows - first)
		return -EINVAL;
	if (raid_missing_read(a))
		return -EAGAIN; /* degraded: nothing to compare; the caller says so */
	if (repair && a->readonly)
		return -EROFS;
	rc = raid_rows_scrub_fn(a, first, count, repair, fn, ctx, &checked, &mism, &repaired);
	raid_stats_add_resync(a, checked, repaired, 0);
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
	pthread_mutex_lock(&a->sb_lock);
	a->scrub_flags = running ? RAID_SCRUB_RUNNING | (repair ? RAID_SCRUB_REPAIR : 0) : 0;
	a->scrub_rows = running ? row : 0;
	a->scrub_mismatches = running ? mismatches : 0;
	rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
	pthread_mutex_unlock(&a->sb_lock);
	return rc;
}
