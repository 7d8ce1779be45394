// SPDX-License-Identifier: MIT
/*
 * src/raid/resync.c - making parity match data again: the recovery resync of a
 * dirty array (by policy), the once-per-recovery set of rows resynced on demand
 * (BLK_SYNCRAID, resync-all; seeds 003 and 006).
 *
 * Recovery by policy (raid_resync_recovery, from raid_assemble of a dirty array):
 *   full     every row
 *   bitmap,  the rows of every dirty bitmap region; then the bitmap is cleared
 *   journal  (journal: rows written with BLK_FS_RAIDSYNC are the filesystem's
 *            to resync, through SYNCRAID reads after its journal replay)
 *   off      nothing: UNSAFE, the write hole stays (tests prove it exists)
 * A resync trusts the data chunks and rewrites parity that does not match.
 * Scrub (scrub.c) shares the row check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

void raid_stats_add_resync(struct raid_array *a, uint64_t checked, uint64_t repaired,
			   uint64_t syncraid)
{
	pthread_mutex_lock(&a->stats_lock);
	a->stats.resync_rows_checked += checked;
	a->stats.resync_rows_repaired += repaired;
	a->stats.syncraid_rows += syncraid;
	pthread_mutex_unlock(&a->stats_lock);
}

/* ----------------------------------------------------- once per recovery */

bool raid_sync_row_needed(struct raid_array *a, uint64_t row)
{
	bool need;

	pthread_mutex_lock(&a->sync_lock);
	need = !a->synced || !(a->synced[row / 8] & (1u << (row % 8)));
	pthread_mutex_unlock(&a->sync_lock);
	return need;
}

void raid_sync_row_done(struct raid_array *a, uint64_t row)
{
	pthread_mutex_lock(&a->sync_lock);
	if (!a->synced)
		a->synced = calloc(a->geo.rows / 8 + 1, 1);
	/* without memory the row is resynced again next time: slower, still right */
	if (a->synced)
		a->synced[row / 8] |= (uint8_t)(1u << (row % 8));
	pthread_mutex_unlock(&a->sync_lock);
}

void raid_sync_reset(struct raid_array *a)
{
	pthread_mutex_lock(&a->sync_lock);
	free(a->synced);
	a->synced = NULL;
	pthread_mutex_unlock(&a->sync_lock);
}

/* ---------------------------------------------------------- rows at risk */

void raid_risk_add(struct raid_array *a, uint64_t first, uint64_t count)
{
	pthread_mutex_lock(&a->sync_lock);
	if (!a->risk)
		a->risk = calloc(a->geo.rows / 8 + 1, 1);
	if (!a->risk)
		a->risk_all = true; /* no memory to say which: say any */
	for (uint64_t row = first; row < first + count && !a->risk_all; row++) {
		if (a->risk[row / 8] & (1u << (row % 8)))
			continue;
		a->risk[row / 8] |= (uint8_t)(1u << (row % 8));
		a->risk_n++;
	}
	pthread_mutex_unlock(&a->sync_lock);
}

void raid_risk_from_bitmap(struct raid_array *a, uint32_t missing, bool pending)
{
	const struct raid_geo *g = &a->geo;
	uint32_t rec = raid_recovering(a);
	uint64_t low = UINT64_MAX;

	if (a->policy != RAID_RESYNC_BITMAP && a->policy != RAID_RESYNC_JOURNAL) {
		/* full or off: no record of what was in flight, any row may be */
		pthread_mutex_lock(&a->sync_lock);
		a->risk_all = true;
		pthread_mutex_unlock(&a->sync_lock);
		return;
	}
	for (unsigned int i = 0; i < g->n; i++)
		if ((rec & (1u << i)) && a->m[i].recovered < low)
			low = a->m[i].recovered;
	if (missing)
		low = 0;
	/* bits set before writes (bitmap.c (B1)); the journal's own rows come by SYNCRAID */
	(void)pending;
	for (uint64_t reg = 0; reg < a->bm_regions; reg++) {
		uint64_t b0 = reg * a->bm_region_blocks, b1 = b0 + a->bm_region_blocks, r0, r1;

		if (!(a->bm_bits[reg / 8] & (1u << (reg % 8))))
			continue;
		if (b1 > g->array_blocks)
			b1 = g->array_blocks;
		r0 = b0 / g->row_blocks;
		r1 = (b1 - 1) / g->row_blocks;
		if (r1 < low)
			continue;
		if (r0 < low)
			r0 = low;
		raid_risk_add(a, r0, r1 - r0 + 1);
	}
}

int raid_rows_at_risk(struct raid_array *a, uint64_t *rows, size_t max, size_t *n,
		      uint64_t *more, bool *all)
{
	pthread_mutex_lock(&a->sync_lock);
	*n = 0;
	for (uint64_t row = 0; a->risk && row < a->geo.rows && *n < max; row++)
		if (a->risk[row / 8] & (1u << (row % 8)))
			rows[(*n)++] = row;
	*more = a->risk_n - *n;
	*all = a->risk_all;
	pthread_mutex_unlock(&a->sync_lock);
	return 0;
}

/* ------------------------------------------------------------- recovery */

static int raid_resync_rows(struct raid_array *a, uint64_t first, uint64_t count,
			    struct raid_resync_report *rep)
{
	return raid_rows_run(a, first, count, RAID_ROWS_CHECK, &rep->rows_checked,
			     &rep->rows_repaired);
}

int raid_resync_recovery(struct raid_array *a)
{
	struct raid_resync_report rep = {0};
	const struct raid_geo *g = &a->geo;
	enum jg_opoint op = jg_opoint_set(JG_OP_RAID_RESYNC);
	double t0 = jg_now_seconds();
	int rc = 0;

	/* (S10) rows being rebuilt are whole below the rebuild's mark */
	if (raid_missing_read(a) &&
	    !raid_dirty_rows_whole(a, raid_missing_read(a) & ~raid_recovering(a),
				   a->sb_flags & RAID_SB_FLAG_JNL_PENDING)) {
		/* nothing to compare against: forced assembly of a dirty degraded array */
		jg_log(JG_LOG_WARN, "raid",
		       "%s: dirty and degraded: recovery resync skipped; the array stays dirty",
		       a->dev.name);
		a->resync_pending = true;
		goto out;
	}
	switch (a->policy) {
	case RAID_RESYNC_OFF:
		jg_log(JG_LOG_WARN, "raid",
		       "%s: dirty array and resync=off: parity is NOT resynced (unsafe)",
		       a->dev.name);
		break;
	case RAID_RESYNC_FULL:
		rc = raid_resync_rows(a, 0, g->rows, &rep);
		break;
	case RAID_RESYNC_BITMAP:
	case RAID_RESYNC_JOURNAL:
		for (uint64_t reg = 0; reg < a->bm_regions && !rc; reg++) {
			uint64_t b0, b1, r0, r1;

			if (!(a->bm_bits[reg / 8] & (1u << (reg % 8))))
				continue;
			b0 = reg * a->bm_region_blocks;
			b1 = b0 + a->bm_region_blocks;
			if (b1 > g->array_blocks)
				b1 = g->array_blocks;
			r0 = b0 / g->row_blocks;
			r1 = (b1 - 1) / g->row_blocks;
			rc = raid_resync_rows(a, r0, r1 - r0 + 1, &rep);
		}
		if (!rc)
			rc = raid_members_flush(a, ~0u);
		if (!rc)
			rc = raid_bitmap_clear_all(a);
		break;
	}
out:
	rep.seconds = jg_now_seconds() - t0;
	raid_stats_add_resync(a, rep.rows_checked, rep.rows_repaired, 0);
	pthread_mutex_lock(&a->stats_lock);
	a->last_resync = rep;
	pthread_mutex_unlock(&a->stats_lock);
	jg_log(
	    JG_LOG_INFO, "raid",
	    "recovery resync %s policy=%s rows_checked=%llu rows_repaired=%llu seconds=%.3f rc=%d",
	    a->dev.name, raid_resync_policy_name(a->policy), (unsigned long long)rep.rows_checked,
	    (unsigned long long)rep.rows_repaired, rep.seconds, rc);
	jg_opoint_set(op);
	return rc;
}
