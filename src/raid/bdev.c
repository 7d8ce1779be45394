// SPDX-License-Identifier: MIT
/*
 * src/raid/bdev.c - the array as a struct blk_dev (raid_array_dev()): the ops
 * table the layers above submit to. A batch is checked here (op, range,
 * read-only), a flush in it runs first, and its reads and writes go to the
 * stripe engine (stripe.c raid_stripe_submit); the controls (BLK_CTL_*) act on
 * the array's state.
 */
#include <errno.h>

#include "raid_i.h"

static int raid_array_flush(struct raid_array *a)
{
	int rc = raid_members_flush(a, ~0u);

	if (!rc)
		raid_bitmap_flushed(a);
	pthread_mutex_lock(&a->stats_lock);
	a->stats.flushes++;
	pthread_mutex_unlock(&a->stats_lock);
	return rc;
}

/*
 * Give every request of the batch its first result: -EINVAL for a bad op or a
 * range past the array, -EROFS for a write to a read-only array, else 0.
 * Returns whether the batch asks for a flush (BLK_OP_FLUSH or BLK_PREFLUSH).
 */
static bool raid_array_check_reqs(struct raid_array *a, struct blk_req *reqs, unsigned int n)
{
	const struct raid_geo *geo = &a->geo;
	bool flush = false;

	for (unsigned int i = 0; i < n; i++) {
		struct blk_req *r = &reqs[i];

		r->result = 0;
		if (r->op == BLK_OP_FLUSH || (r->flags & BLK_PREFLUSH))
			flush = true;
		if (r->op == BLK_OP_FLUSH)
			continue;
		if ((r->op != BLK_OP_READ && r->op != BLK_OP_WRITE) || !r->nblocks ||
		    r->blkno > geo->array_blocks || r->nblocks > geo->array_blocks - r->blkno) {
			r->result = -EINVAL;
			continue;
		}
		if (r->op == BLK_OP_WRITE && a->readonly)
			r->result = -EROFS;
	}
	return flush;
}

static int raid_array_submit(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	struct raid_array *a = (struct raid_array *)dev;
	bool flush = raid_array_check_reqs(a, reqs, n);
	int first, rc;

	/* a flush covers the writes completed before the batch: first */
	if (flush && !a->readonly) {
		rc = raid_array_flush(a);
		if (rc) {
			for (unsigned int i = 0; i < n; i++)
				if (reqs[i].op == BLK_OP_FLUSH || (reqs[i].flags & BLK_PREFLUSH))
					reqs[i].result = rc;
		}
	}
	first = raid_stripe_submit(a, reqs, n);
	for (unsigned int i = 0; i < n && !first; i++)
		first = reqs[i].result;
	return first;
}

static int raid_array_ctl(struct blk_dev *dev, unsigned int cmd, void *arg)
{
	struct raid_array *a = (struct raid_array *)dev;
	int rc = 0;

	switch (cmd) {
	case BLK_CTL_SET_RESYNC_ALL:
	case BLK_CTL_CLEAR_RESYNC_ALL:
		pthread_mutex_lock(&a->sync_lock);
		a->resync_all = cmd == BLK_CTL_SET_RESYNC_ALL;
		pthread_mutex_unlock(&a->sync_lock);
		jg_log(JG_LOG_INFO, "raid", "%s resync_all=%d", a->dev.name,
		       cmd == BLK_CTL_SET_RESYNC_ALL);
		return 0;
	case BLK_CTL_SYNCRAID_DONE:
		raid_sync_reset(a);
		return 0;
	case BLK_CTL_SET_JNL_PENDING:
	case BLK_CTL_CLEAR_JNL_PENDING:
		if (a->readonly)
			return -EROFS;
		jg_mutex_lock(&a->sb_lock);
		if (cmd == BLK_CTL_SET_JNL_PENDING) {
			a->sb_flags |= RAID_SB_FLAG_JNL_PENDING;
		} else {
			a->sb_flags &= ~RAID_SB_FLAG_JNL_PENDING;
			a->jnl_unreplayed = false; /* (S6) the journal resynced its rows */
		}
		jg_mutex_unlock(&a->sb_lock);
		/* durable on every member before the caller goes on */
		rc = raid_sb_write_all(a, RAID_STATE_DIRTY);
		return rc;
	case BLK_CTL_GET_JNL_PENDING:
		jg_mutex_lock(&a->sb_lock);
		rc = (a->sb_flags & RAID_SB_FLAG_JNL_PENDING) ? 1 : 0;
		jg_mutex_unlock(&a->sb_lock);
		return rc;
	case BLK_CTL_GET_STATS:
		if (!arg)
			return -EINVAL;
		pthread_mutex_lock(&a->stats_lock);
		*(struct blk_stats *)arg = a->stats;
		pthread_mutex_unlock(&a->stats_lock);
		return 0;
	case BLK_CTL_HEAL_READ:
		return raid_heal_read(a, arg); /* heal.c */
	case BLK_CTL_TRACK_ALWAYS:
		if (!arg)
			return -EINVAL;
		return raid_bitmap_track_always(a, *(const uint64_t *)arg); /* (B5) */
	default:
		return -ENOTTY;
	}
}

static void raid_array_close(struct blk_dev *dev)
{
	/* the array is closed by raid_stop() / raid_abandon(), not through its device */
	(void)dev;
}

const struct blk_dev_ops raid_array_ops = {
    .submit = raid_array_submit,
    .ctl = raid_array_ctl,
    .close = raid_array_close,
};
