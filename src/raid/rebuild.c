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
 * (R2) A rebuild reconstructs from parity, so it is refused while a journal of an
 *      earlier run has not replayed (super.c (S6)), and onto a device that holds
 *      the superblock of a working member of this array (a second path to it).
 * (R3) The failed device a rebuild replaces stays open until raid_stop (I/O may
 *      still reference it); the table that keeps it is bounded, and a rebuild
 *      that would overflow it is refused (-EMFILE) before it starts.
 * The array takes @newdev in every case: a refused rebuild closes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

static int raid_rebuild_progress(struct raid_array *a, double p)
{
	pthread_mutex_lock(&a->stats_lock);
	a->rebuild_progress = p;
	pthread_mutex_unlock(&a->stats_lock);
	return 0;
}

/*
 * (R2) -EEXIST after a message when block 0 of @newdev is a superblock of this
 * array for a working role other than @role: the device is a member already,
 * reached by another path, and the rebuild would overwrite it. An old superblock
 * of a role since rebuilt elsewhere is refused too: wiping its block 0 is the
 * user's call. sb_lock held.
 */
static int raid_rebuild_check_newdev_locked(struct raid_array *a, unsigned int role,
					    struct blk_dev *newdev)
{
	const struct raid_sb *sb;
	uint8_t *buf = jg_alloc_blocks(1);
	unsigned int r;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = blk_rw(newdev, BLK_OP_READ, RAID_SB_BLKNO, 1, buf, 0);
	if (rc) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: dev=%s cannot read block 0: %d",
		       newdev->name, rc);
		goto out;
	}
	sb = (const struct raid_sb *)buf;
	r = jg_le32(sb->role);
	if (jg_le32(sb->hdr.magic) == RAID_SB_MAGIC && !memcmp(sb->uuid, a->uuid, 16) &&
	    jg_blk_crc_ok(buf, RAID_BS, a->seed) && r < a->geo.n && r != role &&
	    a->m[r].dev && !a->m[r].failed) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "rebuild: dev=%s holds the superblock of role %u of this array, a working member (dev=%s): refusing to overwrite it (if it is an old copy, wipe its first block)",
		    newdev->name, r, a->m[r].name);
		rc = -EEXIST;
	}
out:
	free(buf);
	return rc;
}

static int raid_rebuild_run(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
			    raid_progress_fn fn, void *ctx)
{
	const struct raid_geo *g = &a->geo;
	uint64_t step = RAID_GROUP_MAX_ROWS, checked = 0, repaired = 0;
	double t0 = jg_now_seconds();
	int rc = 0;

	if (!newdev) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: no new device");
		return -EINVAL;
	}
	if (a->readonly) {
		rc = -EROFS;
		goto refused;
	}
	if (role >= g->n) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: bad role %u", role);
		rc = -EINVAL;
		goto refused;
	}
	if (newdev->nblocks < g->data_offset + g->data_blocks) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: dev=%s too small: %llu blocks, need %llu",
		       newdev->name, (unsigned long long)newdev->nblocks,
		       (unsigned long long)(g->data_offset + g->data_blocks));
		rc = -EINVAL;
		goto refused;
	}
	pthread_mutex_lock(&a->sb_lock);
	if (a->m[role].dev && !a->m[role].failed) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: role %u (dev=%s) is working; fail it first",
		       role, a->m[role].name);
		rc = -EBUSY;
		goto refused_locked;
	}
	rc = raid_jnl_unreplayed_locked(a, "rebuild"); /* (R2) */
	if (!rc)
		rc = raid_rebuild_check_newdev_locked(a, role, newdev);
	if (rc)
		goto refused_locked;
	if (a->m[role].dev && a->nretired == RAID_MAX_MEMBERS) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "rebuild: %u replaced devices are held open until the array stops: stop and assemble it again before another rebuild",
		    a->nretired);
		rc = -EMFILE; /* (R3) */
		goto refused_locked;
	}
	if (a->m[role].dev) /* the failed device: I/O may still reference it, close at stop */
		a->retired[a->nretired++] = a->m[role].dev;
	a->m[role].dev = newdev;
	a->m[role].failed = false;
	a->m[role].rebuilding = true;
	snprintf(a->m[role].name, sizeof(a->m[role].name), "%s", newdev->name);
	raid_masks_update_locked(a);
	pthread_mutex_unlock(&a->sb_lock);
	raid_event_detail(a, RAID_EV_REBUILD_STARTED, role, -1, 0, "rows=%llu",
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
		raid_event(a, RAID_EV_REBUILD_PROGRESS, role, (double)(r + cnt) / (double)g->rows,
			   0);
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
		raid_event(a, RAID_EV_REBUILD_FAILED, role, -1, rc);
	} else {
		/* the superblock last: only now is the member part of the array */
		a->m[role].rebuilding = false;
		raid_masks_update_locked(a);
		rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
		raid_event_detail(a, RAID_EV_REBUILD_FINISHED, role, -1, 0,
				  "rows=%llu seconds=%.3f", (unsigned long long)g->rows,
				  jg_now_seconds() - t0);
		if (!rc) /* the superblocks name it: a working member */
			raid_event(a, RAID_EV_SPARE_TAKEN, role, -1, 0);
	}
	pthread_mutex_unlock(&a->sb_lock);
	raid_rebuild_progress(a, -1);
	return rc;

refused_locked:
	pthread_mutex_unlock(&a->sb_lock);
refused:
	blk_close(newdev);
	return rc;
}

int raid_rebuild(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
		 raid_progress_fn fn, void *ctx)
{
	enum jg_opoint op = jg_opoint_set(JG_OP_RAID_REBUILD);
	int rc = raid_rebuild_run(a, role, newdev, fn, ctx);

	jg_opoint_set(op);
	return rc;
}
