// SPDX-License-Identifier: MIT
/*
 * src/raid/spare.c - hot spares: devices that wait, holding a superblock of the
 * array and no data, for a member to be lost; then a rebuild takes one.
 *
 * A spare's superblock is a member superblock (docs/FORMAT.md §2.2) whose role
 * is RAID_ROLE_SPARE.
 * (P1) It is written when the spare is added (raid_create, raid_spare_add),
 *      both copies, each flushed, and never again: superblock rounds go to the
 *      members only (super.c raid_sb_writers_locked). A spare holds no data, so
 *      nothing it could have missed makes it stale: assembly accepts it at any
 *      event count, and its event count, state, flags and failed mask mean
 *      nothing. What it must match is the array's uuid and geometry.
 * (P2) A spare leaves the list of idle spares only under sb_lock, by
 *      raid_spare_take (then raid_rebuild owns the device and the entry stays,
 *      taken, until that rebuild ends or is refused: raid_spare_forget_sb_locked)
 *      or raid_spare_remove (which wipes both copies so that no later assembly
 *      finds it). A taken spare cannot be removed: its rebuild writes it.
 * (P3) A device that holds the superblock of a working member of the array is
 *      never made a spare (the check raid_rebuild makes, rebuild.c (R2)), nor
 *      one that holds a superblock of another array (its data is someone's).
 * (P4) The array never starts a rebuild itself: its user (the daemon) calls
 *      raid_spare_take and raid_rebuild from a thread of its own, since an
 *      event handler may not call into the array (raid_event_fn).
 * (P5) A rebuild onto an idle spare reached by a handle of its own (`jgrfs
 *      replace` naming the spare, which the daemon opens again by path) takes
 *      that spare, as raid_spare_take would, in the critical section of
 *      sb_lock that makes the device a member (raid_spare_adopt_sb_locked,
 *      as zpool replace and mdadm --replace --with use a spare named): the
 *      list never holds a device that is a member, so neither
 *      raid_spare_remove (which wipes) nor raid_spare_take (which hands it
 *      to a second role) can reach a member. A device is known again by its
 *      identity (BLK_CTL_GET_ID: file, block device), not its path; a device
 *      without one (NBD) by its name. raid_spare_remove checks the members
 *      again before it wipes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

bool raid_dev_same(struct blk_dev *x, struct blk_dev *y)
{
	struct blk_id ix, iy;
	bool kx, ky;

	if (!x || !y)
		return false;
	if (x == y)
		return true;
	kx = !blk_ctl(x, BLK_CTL_GET_ID, &ix);
	ky = !blk_ctl(y, BLK_CTL_GET_ID, &iy);
	if (kx && ky)
		return ix.kind == iy.kind && ix.a == iy.a && ix.b == iy.b;
	return !kx && !ky && !strcmp(x->name, y->name); /* (P5) neither can tell */
}

/* Write @n copies of @buf's superblock (or zeros) at blocks 0 and 1, each flushed. */
static int raid_spare_put(struct blk_dev *dev, uint8_t *buf, unsigned int ncopies,
			  struct raid_array *a)
{
	static const uint64_t home[2] = {RAID_SB_BLKNO, RAID_SB_COPY_BLKNO};
	int rc = 0;

	for (unsigned int c = 0; c < ncopies && !rc; c++) {
		if (a)
			raid_sb_fill(a, buf, RAID_ROLE_SPARE, RAID_STATE_CLEAN, 0, a->events,
				     home[c]);
		rc = blk_rw(dev, BLK_OP_WRITE, home[c], 1, buf, 0);
		if (!rc)
			rc = blk_flush(dev); /* (P1) copy 0 durable before copy 1 */
	}
	return rc;
}

int raid_spare_sb_write_sb_locked(struct raid_array *a, struct blk_dev *dev)
{
	enum jg_opoint op = jg_opoint_set(JG_OP_RAID_SB);
	uint8_t *buf = jg_alloc_blocks(1);
	int rc;

	JG_ASSERT_HELD(&a->sb_lock);
	if (!buf)
		return -ENOMEM;
	rc = raid_spare_put(dev, buf, RAID_SB_COPIES(a->sb_incompat), a);
	if (rc)
		jg_log(JG_LOG_ERR, "raid", "spare dev=%s: cannot write its superblock: %s",
		       dev->name, strerror(-rc));
	free(buf);
	jg_opoint_set(op);
	return rc;
}

int raid_spare_add(struct raid_array *a, struct blk_dev *dev)
{
	const struct raid_geo *g = &a->geo;
	unsigned int n;
	int rc = 0;

	if (a->readonly)
		return -EROFS;
	if (dev->nblocks < g->data_offset + g->data_blocks) {
		jg_log(JG_LOG_ERR, "raid",
		       "spare add: dev=%s too small: %llu blocks, a member uses %llu", dev->name,
		       (unsigned long long)dev->nblocks,
		       (unsigned long long)(g->data_offset + g->data_blocks));
		return -EINVAL;
	}
	jg_mutex_lock(&a->sb_lock);
	for (unsigned int i = 0; i < a->nspares; i++)
		if (raid_dev_same(a->spares[i].dev, dev) || !strcmp(a->spares[i].name, dev->name)) {
			jg_log(JG_LOG_ERR, "raid", "spare add: dev=%s is a spare already",
			       dev->name);
			rc = -EEXIST;
			goto out;
		}
	for (unsigned int r = 0; r < g->n; r++)
		if (a->m[r].dev == dev || (!a->m[r].failed && raid_dev_same(a->m[r].dev, dev))) {
			jg_log(JG_LOG_ERR, "raid", "spare add: dev=%s is member %u", dev->name, r);
			rc = -EEXIST;
			goto out;
		}
	if (a->nspares == RAID_MAX_SPARES) {
		jg_log(JG_LOG_ERR, "raid",
		       "spare add: dev=%s: the array has %u spares, the most it takes", dev->name,
		       RAID_MAX_SPARES);
		rc = -ENOSPC;
		goto out;
	}
	rc = raid_newdev_check_locked(a, RAID_ROLE_SPARE, dev, "spare add", true); /* (P3) */
	if (!rc)
		rc = raid_spare_sb_write_sb_locked(a, dev);
	if (rc)
		goto out;
	a->spares[a->nspares] = (struct raid_spare){.dev = dev};
	snprintf(a->spares[a->nspares].name, sizeof(a->spares[0].name), "%s", dev->name);
	n = ++a->nspares;
	jg_log(JG_LOG_INFO, "raid", "spare added: dev=%s (%u spare%s)", dev->name, n,
	       n == 1 ? "" : "s");
out:
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

static void raid_spare_drop_sb_locked(struct raid_array *a, unsigned int i)
{
	JG_ASSERT_HELD(&a->sb_lock);
	memmove(&a->spares[i], &a->spares[i + 1], (a->nspares - i - 1) * sizeof(a->spares[0]));
	a->nspares--;
	memset(&a->spares[a->nspares], 0, sizeof(a->spares[0]));
}

int raid_spare_remove(struct raid_array *a, const char *name)
{
	struct blk_dev *dev = NULL;
	uint8_t *zero;
	unsigned int i;
	int rc = 0;

	if (a->readonly)
		return -EROFS;
	zero = jg_alloc_blocks(1);
	if (!zero)
		return -ENOMEM;
	memset(zero, 0, RAID_BS);
	jg_mutex_lock(&a->sb_lock);
	for (i = 0; i < a->nspares; i++)
		if (!strcmp(a->spares[i].name, name))
			break;
	if (i == a->nspares) {
		for (unsigned int r = 0; r < a->geo.n; r++)
			if (a->m[r].dev && !a->m[r].failed && !strcmp(a->m[r].name, name)) {
				jg_log(JG_LOG_ERR, "raid",
				       "spare remove: dev=%s is member %u (%s), not a spare", name,
				       r, a->m[r].rebuilding ? "being rebuilt" : "working");
				rc = -EBUSY;
				goto out;
			}
		jg_log(JG_LOG_ERR, "raid", "spare remove: dev=%s is not a spare of this array",
		       name);
		rc = -ENOENT;
		goto out;
	}
	if (a->spares[i].taken) { /* (P2) */
		jg_log(
		    JG_LOG_ERR, "raid",
		    "spare remove: dev=%s is being rebuilt onto role %u: it is no longer a spare",
		    name, a->spares[i].role);
		rc = -EBUSY;
		goto out;
	}
	for (unsigned int r = 0; r < a->geo.n; r++)
		if (raid_dev_same(a->m[r].dev, a->spares[i].dev)) { /* (P5) never reached */
			jg_log(JG_LOG_ERR, "raid",
			       "spare remove: dev=%s is the device of member %u (dev=%s): not wiping it",
			       name, r, a->m[r].name);
			rc = -EBUSY;
			goto out;
		}
	dev = a->spares[i].dev;
	raid_spare_drop_sb_locked(a, i);
	/* (P2) no superblock left: a later assembly does not find it */
	if (raid_spare_put(dev, zero, RAID_SB_COPIES(a->sb_incompat), NULL))
		jg_log(JG_LOG_WARN, "raid",
		       "spare remove: dev=%s: cannot wipe its superblock; forgotten all the same "
		       "(it holds no data)",
		       name);
	jg_log(JG_LOG_INFO, "raid", "spare removed: dev=%s (%u left)", name, a->nspares);
out:
	jg_mutex_unlock(&a->sb_lock);
	blk_close(dev);
	free(zero);
	return rc;
}

int raid_spare_take(struct raid_array *a, unsigned int *role, struct blk_dev **dev)
{
	unsigned int r, i;
	int rc;

	if (a->readonly)
		return -EROFS;
	jg_mutex_lock(&a->sb_lock);
	for (r = 0; r < a->geo.n; r++)
		if (!a->m[r].dev || a->m[r].failed)
			break;
	rc = -ENOENT;
	if (r == a->geo.n)
		goto out;
	for (i = 0; i < a->nspares; i++)
		if (!a->spares[i].taken)
			break;
	rc = -ENODEV;
	if (i == a->nspares)
		goto out;
	rc = raid_jnl_unreplayed_locked(a, "spare take"); /* raid_rebuild would refuse */
	if (rc)
		goto out;
	a->spares[i].taken = true; /* (P2) */
	a->spares[i].role = r;
	*role = r;
	*dev = a->spares[i].dev;
	jg_log(JG_LOG_INFO, "raid", "spare dev=%s taken for role %u (was dev=%s)",
	       a->spares[i].name, r, a->m[r].name);
out:
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

int raid_spare_adopt_sb_locked(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
			       struct blk_dev **drop)
{
	struct raid_spare *sp;
	unsigned int i;

	JG_ASSERT_HELD(&a->sb_lock);
	*drop = NULL;
	for (i = 0; i < a->nspares; i++)
		if (raid_dev_same(a->spares[i].dev, newdev))
			break;
	if (i == a->nspares)
		return 0;
	sp = &a->spares[i];
	if (sp->taken) {
		if (sp->dev == newdev && sp->role == role)
			return 0; /* raid_spare_take's, handed to this rebuild */
		jg_log(JG_LOG_ERR, "raid",
		       "rebuild: dev=%s is the hot spare %s, taken for role %u: not rebuilding role %u onto it",
		       newdev->name, sp->name, sp->role, role);
		return -EBUSY;
	}
	jg_log(JG_LOG_INFO, "raid",
	       "spare dev=%s taken for role %u (named by the rebuild as dev=%s; was dev=%s): no longer a spare",
	       sp->name, role, newdev->name, a->m[role].name);
	if (sp->dev != newdev)
		*drop = sp->dev; /* the list's own handle; the caller closes it */
	sp->dev = newdev;
	sp->taken = true; /* (P2) forgotten when the rebuild ends */
	sp->role = role;
	return 0;
}

void raid_spare_forget_sb_locked(struct raid_array *a, const struct blk_dev *dev)
{
	JG_ASSERT_HELD(&a->sb_lock);
	for (unsigned int i = 0; dev && i < a->nspares; i++)
		if (a->spares[i].taken && a->spares[i].dev == dev) {
			raid_spare_drop_sb_locked(a, i);
			return;
		}
}
