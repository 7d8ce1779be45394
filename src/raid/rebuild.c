// SPDX-License-Identifier: MIT
/*
 * src/raid/rebuild.c - online rebuild of a lost member onto a new device.
 *
 * The new device takes the role at once, as *rebuilding*: never read (its chunks
 * are reconstructed from the others), always written with whole chunks by the
 * row path (stripe.c), so a row written while the rebuild runs is whole on it
 * whether the rebuild has passed it or not. The rebuild walks the rows in
 * groups under the row locks (RAID_ROWS_REBUILD), then writes the bitmap and,
 * last, the superblocks: until that write the new device is no member at all,
 * and a crash leaves the array as degraded as before (R1 below).
 * (R1) The new member's superblock is written after every row and its bitmap are
 *      durable on it.
 */
#include <errno.h>
#include <stdio.h>

#include "raid_i.h"

static int raid_rebuild_progress(struct raid_array *a, double p)
{
	pthread_mutex_lock(&a->stats_lock);
	a->rebuild_progress = p;
	pthread_mutex_unlock(&a->stats_lock);
	return 0;
}

int raid_rebuild(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
		 raid_progress_fn fn, void *ctx)
{
	const struct raid_geo *g = &a->geo;
	uint64_t step = RAID_GROUP_MAX_ROWS, checked = 0, repaired = 0;
	double t0 = jg_now_seconds();
	int rc = 0;

	if (a->readonly)
		return -EROFS;
	if (role >= g->n || !newdev) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: bad role %u", role);
		return -EINVAL;
	}
	if (newdev->nblocks < g->data_offset + g->data_blocks) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: dev=%s too small: %llu blocks, need %llu",
		       newdev->name, (unsigned long long)newdev->nblocks,
		       (unsigned long long)(g->data_offset + g->data_blocks));
		return -EINVAL;
	}
	pthread_mutex_lock(&a->sb_lock);
	if (a->m[role].dev && !a->m[role].failed) {
		pthread_mutex_unlock(&a->sb_lock);
		jg_log(JG_LOG_ERR, "raid", "rebuild: role %u (dev=%s) is working; fail it first",
		       role, a->m[role].name);
		return -EBUSY;
	}
	if (a->m[role].dev) /* the failed device: I/O may still reference it, close at stop */
		a->retired[a->nretired++] = a->m[role].dev;
	a->m[role].dev = newdev;
	a->m[role].failed = false;
	a->m[role].rebuilding = true;
	snprintf(a->m[role].name, sizeof(a->m[role].name), "%s", newdev->name);
	raid_masks_update_locked(a);
	pthread_mutex_unlock(&a->sb_lock);
	jg_log(JG_LOG_INFO, "raid", "rebuild start dev=%s role=%u rows=%llu", newdev->name, role,
	       (unsigned long long)g->rows);
	raid_rebuild_progress(a, 0);
	for (uint64_t r = 0; r < g->rows; r += step) {
		uint64_t cnt = g->rows - r < step ? g->rows - r : step;

		rc = raid_rows_run(a, r, cnt, RAID_ROWS_REBUILD, &checked, &repaired);
		if (!rc && (raid_missing_write(a) & (1u << role)))
			rc = -EIO; /* the new member failed */
		if (rc)
			break;
		raid_rebuild_progress(a, (double)(r + cnt) / (double)g->rows);
		if (fn && fn(ctx, r + cnt, g->rows)) {
			rc = -ECANCELED;
			break;
		}
	}
	if (!rc)
		rc = raid_bitmap_write(a, 0, a->bm_blocks, (int)role);
	if (!rc)
		rc = raid_members_flush(a, 1u << role); /* (R1) */
	pthread_mutex_lock(&a->sb_lock);
	if (rc) {
		/* the member is not usable: failed, the superblocks say so */
		a->m[role].rebuilding = false;
		a->m[role].failed = true;
		raid_masks_update_locked(a);
		raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
		jg_log(JG_LOG_ERR, "raid", "rebuild dev=%s role=%u stopped: %d", newdev->name, role,
		       rc);
	} else {
		/* the superblock last: only now is the member part of the array */
		a->m[role].rebuilding = false;
		raid_masks_update_locked(a);
		rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
		jg_log(JG_LOG_INFO, "raid", "rebuild done dev=%s role=%u rows=%llu seconds=%.3f",
		       newdev->name, role, (unsigned long long)checked, jg_now_seconds() - t0);
	}
	pthread_mutex_unlock(&a->sb_lock);
	raid_rebuild_progress(a, -1);
	return rc;
}
