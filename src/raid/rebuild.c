// SPDX-License-Identifier: MIT
/*
 * src/raid/rebuild.c - online rebuild of a lost member onto a new device, and its
 * resumption after a stop or a crash.
 *
 * The new device takes the role at once, as *rebuilding*, and from the same
 * superblock round is recorded as such in every member's superblock
 * (recovery_mask, RAID_FEATURE_INCOMPAT_RECOVERY) with its own mark,
 * recovery_rows: the rows [0, mark) hold their chunks on it (MD's
 * recovery_offset). Below the in-memory mark it is read like any member; above,
 * its chunks are reconstructed from the others, and the row path (repair.c, write.c)
 * writes it whole chunks, so a row written while the rebuild runs is whole on it
 * whether the rebuild has passed it or not. The rebuild walks the rows from the
 * mark in groups under the row locks (RAID_ROWS_REBUILD).
 * (R1) The mark in the superblocks never passes rows not durable on the new
 *      member: it is flushed before each superblock round that moves the mark,
 *      one every RAID_MARK_SECONDS or sixteenth of the rows (as MD
 *      checkpoints a resync), so a crash costs at most that much rebuild. At the end its bitmap is written and flushed, then the round
 *      that makes it a full member.
 * (R2) A rebuild reconstructs from parity, so it is refused while a journal of an
 *      earlier run has not replayed (super.c (S6)), and onto a device that holds
 *      the superblock of a working member of this array (a second path to it).
 * (R3) The failed device a rebuild replaces stays open until raid_stop (I/O may
 *      still reference it); the table that keeps it is bounded, and a rebuild
 *      that would overflow it is refused (-EMFILE) before it starts.
 * (R4) Stopped by its caller (-ECANCELED: an unmount), a rebuild records its
 *      mark and the member stays rebuilding: the next raid_rebuild(NULL), at the
 *      next assembly or mount, goes on from the mark. Stopped by an error, the
 *      member is failed.
 * (R5) A readd (raid_readd) brings back the member that failed in this run,
 *      on its own device: the rebuild as above, walking only the rows it
 *      missed (away.c) and skipping the others, which it holds already. The
 *      map is taken after every write planned without the member has ended;
 *      the rows written from then on are written whole on it, as in any
 *      rebuild. Its superblock must name this array and role (a wrong device
 *      is refused), at the event it left at (else, or without a map, all the
 *      rows). A crash or stop during a readd leaves a rebuild with its mark,
 *      which resumes as a full rebuild from there: the map is in memory only.
 * (R6) A role changes device (a rebuild, replace, readd or hot spare taking
 *      it) only under every row lock, taken exclusively, and sb_lock: a group
 *      holds its rows' locks from its plan to its last member I/O and the
 *      action on its failures (stripe.c raid_grp_run, repair.c raid_read_repair), so
 *      all of it meets one device per role, and a failed read of the old
 *      device is never re-read from, nor blamed on, the new one (which holds
 *      nothing yet). Code that acts on a failed member I/O after dropping its
 *      row lock (heal.c, scrub.c, a flush of the members) fails the role only
 *      while it still holds the device the I/O went to (raid_member_fail_dev).
 * (R7) A member whose connection ended with writes its server had not answered
 *      (BLK_CTL_UNFENCED: an NBD timeout, a lost connection) may still get
 *      them from that server, late, over the rows rebuilt on its export since:
 *      no request of ours can stop them. The role remembers the device
 *      (m.unfenced, in memory), and until the caller says that connection is
 *      dead (RAID_READD_FENCED, which clears it) a readd of the role is
 *      refused, and so is a rebuild onto a device holding this role's
 *      superblock (that export again), both -EAGAIN before anything is
 *      written. A rebuild onto another device goes on: the writes that may
 *      come go to the old export, which stays remembered.
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

int raid_dev_sb_role(struct raid_array *a, struct blk_dev *dev, unsigned int *role,
		     uint8_t *uuid)
{
	uint8_t *buf = jg_alloc_blocks(1);
	const struct raid_sb *sb = (const struct raid_sb *)buf;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = blk_rw(dev, BLK_OP_READ, RAID_SB_BLKNO, 1, buf, 0);
	if (!rc) {
		rc = RAID_DEV_SB_NONE;
		if (jg_le32(sb->hdr.magic) == RAID_SB_MAGIC &&
		    jg_blk_crc_ok(buf, RAID_BS, jg_crc_seed(sb->uuid)))
			rc = memcmp(sb->uuid, a->uuid, 16) ? RAID_DEV_SB_OTHER : RAID_DEV_SB_OURS;
		*role = jg_le32(sb->role);
		if (uuid)
			memcpy(uuid, sb->uuid, 16);
	}
	free(buf);
	return rc;
}

/*
 * (R2) -EEXIST after a message when block 0 of @newdev is a superblock of this
 * array for a working role other than @role: the device is a member already,
 * reached by another path, and the rebuild would overwrite it. An old superblock
 * of a role since rebuilt elsewhere is refused too: wiping its block 0 is the
 * user's call. Also the check of a new spare (spare.c, @role RAID_ROLE_SPARE),
 * which with @other_too also refuses a superblock of another array (P3).
 * sb_lock held.
 */
int raid_newdev_check_locked(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
			     const char *what, bool other_too)
{
	uint8_t uuid[16];
	unsigned int r;
	char u[37];
	int rc;

	JG_ASSERT_HELD(&a->sb_lock);
	rc = raid_dev_sb_role(a, newdev, &r, uuid);
	if (rc < 0) {
		jg_log(JG_LOG_ERR, "raid", "%s: dev=%s cannot read block 0: %s", what, newdev->name,
		       strerror(-rc));
		return rc;
	}
	if (rc == RAID_DEV_SB_OURS && r < a->geo.n && r != role && a->m[r].dev && !a->m[r].failed) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "%s: dev=%s holds the superblock of role %u of this array, a working member (dev=%s): refusing to overwrite it (if it is an old copy, wipe its first block)",
		    what, newdev->name, r, a->m[r].name);
		return -EEXIST;
	}
	if (other_too && rc == RAID_DEV_SB_OTHER) {
		jg_uuid_format(uuid, u);
		jg_log(JG_LOG_ERR, "raid",
		       "%s: dev=%s belongs to another array (uuid=%s): refusing to overwrite it "
		       "(wipe its first two blocks if it is no longer used)",
		       what, newdev->name, u);
		return -EEXIST;
	}
	return 0;
}

/* (R7) */
const char *raid_role_unfenced_locked(struct raid_array *a, unsigned int role)
{
	struct raid_member *m = &a->m[role];

	JG_ASSERT_HELD(&a->sb_lock);
	if (!m->unfenced[0] && m->dev && m->failed && blk_ctl(m->dev, BLK_CTL_UNFENCED, NULL) == 1)
		snprintf(m->unfenced, sizeof(m->unfenced), "%s", m->dev->name);
	return m->unfenced[0] ? m->unfenced : NULL;
}

/*
 * (R7) -EAGAIN after a message when @newdev may be the export of @role that a
 * connection left with writes unanswered, and the caller did not say that
 * connection is dead (@fenced). sb_lock held.
 */
static int raid_fence_check_locked(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
				   bool readd, bool fenced)
{
	const char *old = raid_role_unfenced_locked(a, role);
	unsigned int r;

	if (!old || fenced)
		return 0;
	/* a replace: only onto that export again (its superblock names the role) */
	if (!readd && (raid_dev_sb_role(a, newdev, &r, NULL) != RAID_DEV_SB_OURS || r != role))
		return 0;
	jg_log(JG_LOG_ERR, "raid",
	       "%s: role %u: the connection of dev=%s ended with writes its server had not answered: they may still land on that export, over the rows rebuilt: refused until that connection is known dead (its server stopped or restarted), then readd with --fenced",
	       readd ? "readd" : "rebuild", role, old);
	return -EAGAIN;
}

/* (R1) Make rows [0, @mark) durable on the new member, then record the mark. */
static int raid_rebuild_mark(struct raid_array *a, unsigned int role, uint64_t mark)
{
	int rc = raid_members_flush(a, 1u << role);

	jg_mutex_lock(&a->sb_lock);
	if (!rc && !a->m[role].rebuilding)
		rc = -EIO; /* failed meanwhile */
	if (!rc) {
		/* (R1) never past the rows rebuilt (and flushed above) */
		JG_ASSERT(mark <= __atomic_load_n(&a->m[role].recovered, __ATOMIC_ACQUIRE));
		a->m[role].recovered_sb = mark;
		rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
	}
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

/* (R6) Every row lock, exclusively, in ascending order as groups take them. */
static void raid_rows_lock_all(struct raid_array *a)
{
	for (unsigned int i = 0; i < RAID_LOCK_BUCKETS; i++)
		pthread_rwlock_wrlock(&a->row_lock[i]);
}

static void raid_rows_unlock_all(struct raid_array *a)
{
	for (unsigned int i = RAID_LOCK_BUCKETS; i-- > 0;)
		pthread_rwlock_unlock(&a->row_lock[i]);
}

/*
 * Checks, and the new device @newdev in the role as rebuilding from row 0,
 * recorded in the superblocks; with @newdev NULL the member assembled
 * rebuilding goes on from its mark. 0, or -errno after a message; *@installed
 * when the array took @newdev (then a failure is the rebuild's own).
 */
static int raid_rebuild_begin(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
			      bool readd, bool fenced, bool *installed)
{
	const struct raid_geo *g = &a->geo;
	struct blk_dev *spare_handle = NULL;
	int rc = 0;

	if (a->readonly)
		return -EROFS;
	if (role >= g->n) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: bad role %u", role);
		return -EINVAL;
	}
	if (newdev && newdev->nblocks < g->data_offset + g->data_blocks) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: dev=%s too small: %llu blocks, need %llu",
		       newdev->name, (unsigned long long)newdev->nblocks,
		       (unsigned long long)(g->data_offset + g->data_blocks));
		return -EINVAL;
	}
	if (newdev) /* (R6) no group in flight sees the role change device */
		raid_rows_lock_all(a);
	jg_mutex_lock(&a->sb_lock);
	if (!newdev) {
		if (!a->m[role].dev || a->m[role].failed || !a->m[role].rebuilding) {
			jg_log(JG_LOG_ERR, "raid",
			       "rebuild: role %u (dev=%s) has no rebuild to resume", role,
			       a->m[role].name);
			rc = -EINVAL;
		}
		goto out;
	}
	if (a->m[role].dev && !a->m[role].failed) {
		jg_log(JG_LOG_ERR, "raid", "rebuild: role %u (dev=%s) is %s; fail it first", role,
		       a->m[role].name, a->m[role].rebuilding ? "being rebuilt" : "working");
		rc = -EBUSY;
		goto out;
	}
	rc = raid_jnl_unreplayed_locked(a, "rebuild"); /* (R2) */
	if (!rc)
		rc = raid_newdev_check_locked(a, role, newdev, "rebuild", false);
	if (!rc)
		rc = raid_fence_check_locked(a, role, newdev, readd, fenced); /* (R7) */
	if (rc)
		goto out;
	if (a->m[role].dev && a->nretired == RAID_MAX_MEMBERS) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "rebuild: %u replaced devices are held open until the array stops: stop and assemble it again before another rebuild",
		    a->nretired);
		rc = -EMFILE; /* (R3) */
		goto out;
	}
	rc = raid_spare_adopt_sb_locked(a, role, newdev, &spare_handle); /* spare.c (P5) */
	if (rc)
		goto out;
	if (!readd)
		raid_away_forget(a, role); /* (R5) the new device missed every row */
	if (fenced)
		a->m[role].unfenced[0] = '\0'; /* (R7) the caller's word */
	if (a->m[role].dev) /* the failed device: I/O may still reference it, close at stop */
		a->retired[a->nretired++] = a->m[role].dev;
	a->m[role].dev = newdev;
	a->m[role].failed = false;
	a->m[role].rebuilding = true;
	a->m[role].recovered = 0;
	a->m[role].recovered_sb = 0;
	snprintf(a->m[role].name, sizeof(a->m[role].name), "%s", newdev->name);
	raid_masks_update_locked(a);
	*installed = true;
	/* the new member and its mark 0 in every superblock (R1); a failure fails it */
	rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
	if (!rc && a->m[role].failed)
		rc = -EIO;
out:
	jg_mutex_unlock(&a->sb_lock);
	if (newdev)
		raid_rows_unlock_all(a);
	blk_close(spare_handle);
	return rc;
}

/* The end: the member whole (@rc 0), failed (an error), or paused (R4). */
static int raid_rebuild_end(struct raid_array *a, unsigned int role, int rc, uint64_t rows,
			    double t0, bool readd)
{
	if (!rc)
		rc = raid_bitmap_write(a, 0, a->bm_blocks, (int)role);
	if (!rc)
		rc = raid_members_flush(a, 1u << role); /* (R1) */
	if (rc == -ECANCELED) {
		int mrc = raid_rebuild_mark(a, role, __atomic_load_n(&a->m[role].recovered,
								   __ATOMIC_ACQUIRE));

		if (!mrc) {
			jg_log(JG_LOG_INFO, "raid",
			       "rebuild dev=%s role=%u paused at row %llu of %llu: it resumes from there",
			       a->m[role].name, role, (unsigned long long)a->m[role].recovered_sb,
			       (unsigned long long)a->geo.rows);
			return rc;
		}
		rc = mrc;
	}
	jg_mutex_lock(&a->sb_lock);
	a->m[role].rebuilding = false;
	raid_spare_forget_sb_locked(a, a->m[role].dev); /* a spare's rebuild: it is a member now */
	if (rc) {
		/* the member is not usable: failed, the superblocks say so (S12) */
		raid_member_mark_failed_locked(a, role);
		raid_masks_update_locked(a);
		raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
		raid_event(a, RAID_EV_REBUILD_FAILED, role, -1, rc);
	} else {
		/* (R1) only now is the member whole */
		raid_masks_update_locked(a);
		rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
		raid_event_detail(a, RAID_EV_REBUILD_FINISHED, role, -1, 0,
				  "rows=%llu seconds=%.3f", (unsigned long long)rows,
				  jg_now_seconds() - t0);
		if (!rc) /* the superblocks name it: a working member */
			raid_event(a, RAID_EV_SPARE_TAKEN, role, -1, 0);
		pthread_mutex_lock(&a->stats_lock);
		a->rebuild_last.done = !rc;
		a->rebuild_last.readd = readd;
		a->rebuild_last.role = role;
		a->rebuild_last.rows = rows;
		a->rebuild_last.seconds = jg_now_seconds() - t0;
		pthread_mutex_unlock(&a->stats_lock);
	}
	a->m[role].recovered = a->m[role].recovered_sb = 0;
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

/*
 * (R5) Wait for every row update in flight: each holds its rows' locks from its
 * plan to its last member write, so one planned while the role was failed has
 * completed (and been noted in its map, away.c (A1)) when this returns, and
 * every later one writes the role.
 */
static void raid_rows_quiesce(struct raid_array *a)
{
	for (unsigned int i = 0; i < RAID_LOCK_BUCKETS; i++) {
		pthread_rwlock_wrlock(&a->row_lock[i]);
		pthread_rwlock_unlock(&a->row_lock[i]);
	}
}

/* Rows [r, r + cnt): the runs marked in @only rebuilt (all with @only NULL); *@done += rows. */
static int raid_rebuild_rows(struct raid_array *a, const uint8_t *only, uint64_t r, uint64_t cnt,
			     uint64_t *checked, uint64_t *repaired, uint64_t *done)
{
	int rc = 0;

	if (!only) {
		*done += cnt;
		return raid_rows_run(a, r, cnt, RAID_ROWS_REBUILD, checked, repaired);
	}
	for (uint64_t x = r; x < r + cnt && !rc;) {
		uint64_t e = x;

		if (!(only[x / 8] & (1u << (x % 8)))) {
			x++;
			continue;
		}
		while (e < r + cnt && (only[e / 8] & (1u << (e % 8))))
			e++;
		*done += e - x;
		rc = raid_rows_run(a, x, e - x, RAID_ROWS_REBUILD, checked, repaired);
		x = e;
	}
	return rc;
}

static int raid_rebuild_run(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
			    bool readd, bool fenced, raid_progress_fn fn, void *ctx)
{
	const struct raid_geo *g = &a->geo;
	uint64_t step = RAID_GROUP_MAX_ROWS, checked = 0, repaired = 0, first, done = 0;
	double t0 = jg_now_seconds(), tmark = t0;
	bool installed = false;
	uint8_t *only = NULL;
	const char *why = NULL;
	int rc;

	rc = raid_rebuild_begin(a, role, newdev, readd, fenced, &installed);
	if (rc && !installed) {
		if (newdev) {
			jg_mutex_lock(&a->sb_lock);
			raid_spare_forget_sb_locked(a, newdev);
			jg_mutex_unlock(&a->sb_lock);
		}
		blk_close(newdev);
		return rc;
	}
	first = a->m[role].recovered_sb;
	if (!rc && readd) {
		/* (R5) every write that skipped the role is in its map from here on */
		raid_rows_quiesce(a);
		only = raid_away_take(a, role, &why);
		if (!only)
			jg_log(JG_LOG_WARN, "raid",
			       "readd dev=%s role=%u: the rows it missed are not known (%s): rebuilding all of them",
			       a->m[role].name, role, why);
	}
	if (!rc)
		raid_event_detail(a, RAID_EV_REBUILD_STARTED, role, -1, 0, "rows=%llu from=%llu%s",
				  (unsigned long long)g->rows, (unsigned long long)first,
				  only ? " readd=1" : "");
	raid_rebuild_progress(a, (double)first / (double)g->rows);
	for (uint64_t r = first; r < g->rows && !rc; r += step) {
		uint64_t cnt = g->rows - r < step ? g->rows - r : step;
		double now;

		rc = raid_rebuild_rows(a, only, r, cnt, &checked, &repaired, &done);
		if (!rc && (raid_missing_write(a) & (1u << role)))
			rc = -EIO; /* the new member failed */
		if (rc)
			break;
		/* readable there from now on; durable at the next mark */
		__atomic_store_n(&a->m[role].recovered, r + cnt, __ATOMIC_RELEASE);
		raid_rebuild_progress(a, (double)(r + cnt) / (double)g->rows);
		raid_event(a, RAID_EV_REBUILD_PROGRESS, role, (double)(r + cnt) / (double)g->rows,
			   0);
		now = jg_now_seconds();
		/* (R1) as MD: after some seconds, or a sixteenth of the rows */
		if (r + cnt < g->rows && (now - tmark >= raid_mark_seconds(a->test.rebuild_mark_always) ||
					  r + cnt - a->m[role].recovered_sb >= g->rows / 16)) {
			rc = raid_rebuild_mark(a, role, r + cnt);
			tmark = now;
		}
		if (!rc && fn && fn(ctx, r + cnt, g->rows))
			rc = -ECANCELED;
	}
	rc = raid_rebuild_end(a, role, rc, done, t0, only != NULL);
	free(only);
	raid_rebuild_progress(a, -1);
	return rc;
}

int raid_rebuild(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
		 raid_progress_fn fn, void *ctx)
{
	enum jg_opoint op = jg_opoint_set(JG_OP_RAID_REBUILD);
	int rc = raid_rebuild_run(a, role, newdev, false, false, fn, ctx);

	jg_opoint_set(op);
	return rc;
}

/*
 * (R5) Whether @dev is the member of @role that left this run: its superblock
 * names this array and @role (else -ENODEV after a message), and *@same: its
 * event is the one it had when it failed (if not, it changed since: only a
 * full rebuild is safe). A member never tracked is *@same, and has no map.
 */
static int raid_readd_check(struct raid_array *a, unsigned int role, struct blk_dev *dev,
			    bool *same)
{
	struct raid_sb sb;
	uint64_t ev, left;
	bool in_round;
	int rc = raid_sb_read_dev(dev, &sb, &ev);

	*same = false;
	if (rc || memcmp(sb.uuid, a->uuid, 16) || jg_le32(sb.role) != role) {
		jg_log(JG_LOG_ERR, "raid",
		       "readd: dev=%s is not the member of role %u of this array (its superblock %s): to rebuild onto it, use replace",
		       dev->name, role,
		       rc ? "is not valid" : memcmp(sb.uuid, a->uuid, 16) ? "names another array"
									   : "names another role");
		return -ENODEV;
	}
	jg_mutex_lock(&a->sb_lock);
	left = a->away.left_events[role];
	in_round = a->away.left_in_round[role];
	jg_mutex_unlock(&a->sb_lock);
	if (!left) {
		*same = true;
		return 0; /* never tracked: raid_away_take says why */
	}
	/* a superblock round that failed on it may have reached it or not */
	*same = ev == left || (in_round && ev + 1 == left);
	if (!*same)
		jg_log(JG_LOG_WARN, "raid",
		       "readd: dev=%s role=%u: its superblock is at event %llu, it left at %llu: it changed since, rebuilding all of it",
		       dev->name, role, (unsigned long long)ev, (unsigned long long)left);
	return 0;
}

bool raid_readd_probe(struct raid_array *a, unsigned int role, struct blk_dev *dev)
{
	unsigned int r;

	return raid_dev_sb_role(a, dev, &r, NULL) == RAID_DEV_SB_OURS && r == role;
}

int raid_readd(struct raid_array *a, unsigned int role, struct blk_dev *dev, unsigned int flags,
	       raid_progress_fn fn, void *ctx)
{
	enum jg_opoint op;
	bool same;
	int rc;

	if (role >= a->geo.n) {
		jg_log(JG_LOG_ERR, "raid", "readd: bad role %u", role);
		blk_close(dev);
		return -EINVAL;
	}
	rc = raid_readd_check(a, role, dev, &same);
	if (rc) {
		blk_close(dev);
		return rc;
	}
	op = jg_opoint_set(JG_OP_RAID_REBUILD);
	rc = raid_rebuild_run(a, role, dev, same, flags & RAID_READD_FENCED, fn, ctx);
	jg_opoint_set(op);
	return rc;
}
