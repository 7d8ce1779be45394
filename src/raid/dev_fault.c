// SPDX-License-Identifier: MIT
/*
 * src/raid/dev_fault.c - a fault-injecting member: failing blocks and power cuts.
 *
 * Model of a power cut (as SQLite's test6.c and littlefs's emubd): a disk keeps
 * completed writes in a volatile cache until a flush. Each fault device remembers,
 * for every write completed since its last flush, the bytes it overwrote. The
 * power domain, shared by the members of one array, counts writes over all of
 * them; when the count reaches cut_after_writes:
 * (With cfg.cut_at_flushes a FLUSH counts as a position as well: cut there, it
 * is lost with everything after it.)
 *   1. that write and every later write or flush on any member is dropped (and
 *      reported as success: the process that issued it is about to die) -- or,
 *      with cfg.chaos_after_cut, while the process runs on for a moment, each
 *      later write is kept, dropped or torn at random, and a flush, a
 *      PREFLUSH write (not issued: its flush never ends) and a FUA write (it
 *      lands like a plain one) never return: nothing is acknowledged durable;
 *   2. each member's unflushed writes are visited newest first, and each is kept
 *      (with probability keep_percent) or reverted to the bytes it overwrote --
 *      whole, or with cfg.tear, on a random subset of its 512-byte sectors (of
 *      its cfg.tear_unit_bytes units: a device that tears inside a sector).
 * Every block then holds one of the versions it had since the last flush, which
 * is what a real disk may show after losing power, and members disagree: the
 * RAID write hole. Same seed, same outcome.
 *
 * (Z2) Fault devices of one domain over the same lower device are one disk
 *      opened twice (a member failed, then readded on the same file): they share
 *      its cache. A flush (or a PREFLUSH) through either makes durable the
 *      writes of both, and a FUA write supersedes the unflushed writes of both.
 *      Without that, a cut would revert a write that landed through the old
 *      device over what a later, flushed write through the new one put there,
 *      which no disk does. The newer device's writes are visited first at the
 *      cut (the list is newest first).
 *
 * Each write is tagged with its thread's ordering point (jg_opoint_set(),
 * include/jgrfs/base.h). The cut records the points in flight: those of the
 * unflushed writes and of the write or flush it fell on (cut_points), which the
 * crash harness adds up into its coverage table.
 *
 * A failing block (or a dead member) fails reads with -EIO and writes with
 * cfg.write_errno (-EIO by default; -ENOSPC, -EDQUOT model a full sparse file).
 *
 * Writes are serialised on the domain lock: fault devices are for tests, and
 * serial writes make "the Nth write" well defined.
 *
 * A stall (raid_dev_fault_stall_block) holds one chosen request before it is
 * issued, without the domain lock, until the test releases it: the other
 * members go on meanwhile.
 *
 * (Z1) The lower device gets a copy of each request, never the caller's: a
 *      device may take req->dev for its own (dev_uring's submit does), and the
 *      caller's must keep naming the fault device. A caller that reuses it --
 *      the bitmap's flush round after its writes (bitmap.c (B1)) -- would
 *      otherwise flush the lower device behind the model's back, and a cut would
 *      revert a bitmap write already flushed while the data it covers stays.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jgrfs/raid.h"

#define FAULT_SECTOR 512u

struct fault_pending {		/* one write completed since the last flush */
	uint64_t blkno;
	uint32_t nblocks;
	enum jg_opoint point;	/* what it was written for */
	uint8_t *old;		/* the bytes it overwrote */
	struct fault_pending *next; /* newer first */
};

struct fault_bad {		/* a block whose I/O fails */
	uint64_t blkno;
	bool on_read, on_write;
	bool latent;		/* reads fail until a write heals it */
	struct fault_bad *next;
};

struct dev_fault;

struct raid_fault_domain {
	struct jg_mutex lock;	/* protects everything below and every member's lists */
	struct raid_fault_cfg cfg;
	uint64_t writes;	/* writes seen, over all members */
	unsigned int point_writes;	/* plain writes of cfg.cut_point_mask's points */
	bool cut;
	uint64_t cut_points;	/* bit per enum jg_opoint in flight at the cut */
	uint64_t rng;		/* xorshift64* state */
	struct dev_fault *members;
};

struct dev_fault {
	struct blk_dev dev;	/* first: container_of by cast */
	struct raid_fault_domain *dom;
	struct blk_dev *lower;
	struct fault_pending *pending;
	struct fault_bad *bad;
	bool fail_all;
	struct dev_fault *next_member;
	/* the stall (tests): under stall_lock, a leaf */
	pthread_mutex_t stall_lock;
	pthread_cond_t stall_cond;
	bool stall_armed, stall_waiting;
	uint64_t stall_blkno;
	enum blk_op stall_op;
};

static uint64_t raid_fault_rand(struct raid_fault_domain *d)
{
	uint64_t x = d->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	d->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

int raid_fault_domain_new(const struct raid_fault_cfg *cfg, struct raid_fault_domain **out)
{
	struct raid_fault_domain *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	jg_mutex_init(&d->lock, PTHREAD_MUTEX_DEFAULT);
	d->cfg = *cfg;
	if (d->cfg.keep_percent > 100)
		d->cfg.keep_percent = 100;
	if (!d->cfg.tear_unit_bytes)
		d->cfg.tear_unit_bytes = FAULT_SECTOR;
	if (d->cfg.tear_unit_bytes > JG_BLOCK_SIZE ||
	    (d->cfg.tear_unit_bytes & (d->cfg.tear_unit_bytes - 1))) {
		free(d);
		return -EINVAL;
	}
	d->rng = cfg->seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	if (!d->rng)
		d->rng = 1;
	*out = d;
	return 0;
}

void raid_fault_domain_free(struct raid_fault_domain *d)
{
	if (!d)
		return;
	jg_mutex_destroy(&d->lock);
	free(d);
}

bool raid_fault_domain_is_cut(const struct raid_fault_domain *d)
{
	return __atomic_load_n(&d->cut, __ATOMIC_ACQUIRE);
}

uint64_t raid_fault_domain_writes(const struct raid_fault_domain *d)
{
	return __atomic_load_n(&d->writes, __ATOMIC_ACQUIRE);
}

static void raid_fault_pending_drop(struct dev_fault *f)
{
	while (f->pending) {
		struct fault_pending *p = f->pending;

		f->pending = p->next;
		free(p->old);
		free(p);
	}
}

/* (Z2) A flush of @f's disk: the unflushed writes of every device over it are
 * durable. Domain lock held. */
static void raid_fault_disk_flushed_locked(struct dev_fault *f)
{
	JG_ASSERT_HELD(&f->dom->lock);
	for (struct dev_fault *s = f->dom->members; s; s = s->next_member)
		if (s == f || s->lower == f->lower)
			raid_fault_pending_drop(s);
}

/* One request to the lower device, as a copy (Z1); its result into @r. */
static int raid_fault_lower(struct dev_fault *f, struct blk_req *r)
{
	struct blk_req c = *r;
	int rc = blk_submit(f->lower, &c, 1);

	r->result = c.result;
	return rc;
}

/* Revert one unflushed write, whole or sector by sector. Domain lock held. */
static void raid_fault_revert_locked(struct dev_fault *f, struct fault_pending *p)
{
	struct raid_fault_domain *d = f->dom;
	size_t len = (size_t)p->nblocks * JG_BLOCK_SIZE, unit = d->cfg.tear_unit_bytes;
	uint8_t *cur;

	JG_ASSERT_HELD(&f->dom->lock);
	if (!d->cfg.tear) {
		blk_rw(f->lower, BLK_OP_WRITE, p->blkno, p->nblocks, p->old, 0);
		return;
	}
	cur = jg_alloc_blocks(p->nblocks);
	if (!cur || blk_rw(f->lower, BLK_OP_READ, p->blkno, p->nblocks, cur, 0)) {
		/* cannot tear without the current bytes: revert whole */
		blk_rw(f->lower, BLK_OP_WRITE, p->blkno, p->nblocks, p->old, 0);
		free(cur);
		return;
	}
	for (size_t s = 0; s < len; s += unit)
		if (raid_fault_rand(d) & 1)
			memcpy(cur + s, p->old + s, unit);
	blk_rw(f->lower, BLK_OP_WRITE, p->blkno, p->nblocks, cur, 0);
	free(cur);
}

/* @on: the point of the write or flush the cut falls on; JG_OP_COUNT for none. */
static void raid_fault_cut_locked(struct raid_fault_domain *d, enum jg_opoint on)
{
	uint64_t points = on < JG_OP_COUNT ? 1ull << on : 0;

	JG_ASSERT_HELD(&d->lock);
	if (d->cut)
		return;
	d->cut = true;
	for (struct dev_fault *f = d->members; f; f = f->next_member)
		for (struct fault_pending *p = f->pending; p; p = p->next)
			points |= 1ull << p->point;
	__atomic_store_n(&d->cut_points, points, __ATOMIC_RELEASE);
	for (struct dev_fault *f = d->members; f; f = f->next_member) {
		for (struct fault_pending *p = f->pending; p; p = p->next)
			if (raid_fault_rand(d) % 100 >= d->cfg.keep_percent)
				raid_fault_revert_locked(f, p);
		raid_fault_pending_drop(f);
	}
	__atomic_store_n(&d->cut, true, __ATOMIC_RELEASE);
	if (d->cfg.on_cut)
		d->cfg.on_cut(d->cfg.on_cut_arg);
}

void raid_fault_domain_cut(struct raid_fault_domain *d)
{
	jg_mutex_lock(&d->lock);
	raid_fault_cut_locked(d, JG_OP_COUNT);
	jg_mutex_unlock(&d->lock);
}

uint64_t raid_fault_domain_cut_points(const struct raid_fault_domain *d)
{
	return __atomic_load_n(&d->cut_points, __ATOMIC_ACQUIRE);
}

static bool raid_fault_is_bad_locked(struct dev_fault *f, const struct blk_req *r)
{
	JG_ASSERT_HELD(&f->dom->lock);
	if (f->fail_all)
		return true;
	for (struct fault_bad *b = f->bad; b; b = b->next) {
		if (b->blkno < r->blkno || b->blkno >= r->blkno + r->nblocks)
			continue;
		if ((r->op == BLK_OP_READ && b->on_read) || (r->op == BLK_OP_WRITE && b->on_write))
			return true;
	}
	return false;
}

/*
 * After the cut with chaos_after_cut, nothing is acknowledged durable: a flush,
 * or a write that asks for durability (FUA, PREFLUSH), never completes -- the
 * caller sleeps until the process is killed -- so no ordering the upper layers
 * built on flushes is broken. A PREFLUSH write is not issued (its flush never
 * ends); a FUA write was, and lands kept, dropped or torn like a plain one, as a
 * write in flight at a power cut does: a FUA write to one member and none to
 * the other is the write hole. Called without the domain lock.
 */
static void raid_fault_hang(void)
{
	for (;;)
		pause();
}

/* Before it is issued: a flush, or a write behind one, after the cut. */
static bool raid_fault_chaos_hangs(const struct raid_fault_domain *d, const struct blk_req *r)
{
	return d->cfg.chaos_after_cut && raid_fault_domain_is_cut(d) &&
	       (r->op == BLK_OP_FLUSH || (r->op == BLK_OP_WRITE && (r->flags & BLK_PREFLUSH)));
}

/* After it landed (or not): a FUA write after the cut is never acknowledged. */
static bool raid_fault_chaos_hangs_after(const struct raid_fault_domain *d, const struct blk_req *r)
{
	return d->cfg.chaos_after_cut && raid_fault_domain_is_cut(d) && r->op == BLK_OP_WRITE &&
	       (r->flags & BLK_FUA);
}

/* A plain write after the cut with chaos_after_cut: kept, dropped or torn. Domain lock held. */
static int raid_fault_chaos_write_locked(struct dev_fault *f, struct blk_req *r)
{
	struct raid_fault_domain *d = f->dom;
	size_t len = (size_t)r->nblocks * JG_BLOCK_SIZE, unit = d->cfg.tear_unit_bytes;
	uint64_t pick = raid_fault_rand(d) % 3;
	uint8_t *cur;
	int rc;

	JG_ASSERT_HELD(&f->dom->lock);
	if (pick == 0)
		return 0;			/* dropped */
	if (pick == 1) {
		struct blk_req w = *r;		/* kept whole */

		w.flags = 0;
		return blk_submit(f->lower, &w, 1);
	}
	cur = jg_alloc_blocks(r->nblocks);	/* torn: some sectors new, the rest old */
	if (!cur)
		return -ENOMEM;
	rc = blk_rw(f->lower, BLK_OP_READ, r->blkno, r->nblocks, cur, 0);
	if (!rc) {
		for (size_t s = 0; s < len; s += unit)
			if (raid_fault_rand(d) & 1)
				memcpy(cur + s, (uint8_t *)r->buf + s, unit);
		rc = blk_rw(f->lower, BLK_OP_WRITE, r->blkno, r->nblocks, cur, 0);
	}
	free(cur);
	return rc;
}

/*
 * A FUA write is durable when it completes, and so it supersedes the unflushed
 * writes it overwrites: a cut must not revert those blocks to bytes older than
 * it. Each pending write's saved bytes for the overlap become the FUA data, so
 * reverting it (whole or torn) leaves what a real disk holds. Domain lock held.
 */
static int raid_fault_fua_write_locked(struct dev_fault *f, struct blk_req *r)
{
	uint64_t b0 = r->blkno, b1 = r->blkno + r->nblocks;
	int rc;

	JG_ASSERT_HELD(&f->dom->lock);
	rc = raid_fault_lower(f, r);
	if (rc)
		return rc;
	for (struct dev_fault *s = f->dom->members; s; s = s->next_member) {
		if (s != f && s->lower != f->lower)
			continue; /* (Z2) only the disk written to */
		for (struct fault_pending *p = s->pending; p; p = p->next) {
			uint64_t lo = p->blkno > b0 ? p->blkno : b0;
			uint64_t hi = p->blkno + p->nblocks < b1 ? p->blkno + p->nblocks : b1;

			if (lo < hi)
				memcpy(p->old + (lo - p->blkno) * JG_BLOCK_SIZE,
				       (const uint8_t *)r->buf + (lo - b0) * JG_BLOCK_SIZE,
				       (hi - lo) * JG_BLOCK_SIZE);
		}
	}
	return 0;
}

/* One write: remember what it overwrites, then write. Domain lock held. */
static int raid_fault_write_locked(struct dev_fault *f, struct blk_req *r)
{
	struct raid_fault_domain *d = f->dom;
	struct fault_pending *p;
	int rc;

	JG_ASSERT_HELD(&f->dom->lock);
	d->writes++;
	if (d->cfg.cut_after_writes && d->writes >= d->cfg.cut_after_writes)
		raid_fault_cut_locked(d, jg_opoint_get());
	if (d->cut && d->cfg.chaos_after_cut) {
		if (r->flags & BLK_PREFLUSH) {
			/* the cut came with this very write: its flush never ends */
			jg_mutex_unlock(&d->lock);
			raid_fault_hang();
		}
		return raid_fault_chaos_write_locked(f, r); /* FUA: the caller hangs */
	}
	if (d->cut)
		return 0; /* lost with the power */
	if (r->flags & BLK_PREFLUSH)
		raid_fault_disk_flushed_locked(f);
	if (r->flags & BLK_FUA)
		return raid_fault_fua_write_locked(f, r);

	p = calloc(1, sizeof(*p));
	if (p)
		p->old = jg_alloc_blocks(r->nblocks);
	if (!p || !p->old) {
		free(p);
		return -ENOMEM;
	}
	p->blkno = r->blkno;
	p->nblocks = r->nblocks;
	p->point = jg_opoint_get();
	rc = blk_rw(f->lower, BLK_OP_READ, r->blkno, r->nblocks, p->old, 0);
	if (!rc)
		rc = raid_fault_lower(f, r);
	if (rc) {
		free(p->old);
		free(p);
		return rc;
	}
	p->next = f->pending;
	f->pending = p;
	if (((d->cfg.cut_point_mask >> p->point) & 1) && ++d->point_writes == d->cfg.cut_point_nth)
		raid_fault_cut_locked(d, JG_OP_COUNT);	/* p is in flight: pending */
	return 0;
}

/* A request the armed stall names waits here until raid_dev_fault_release(). */
static void raid_fault_stall(struct dev_fault *f, const struct blk_req *r)
{
	pthread_mutex_lock(&f->stall_lock);
	if (f->stall_armed && !f->stall_waiting && r->op == f->stall_op &&
	    f->stall_blkno >= r->blkno && f->stall_blkno < r->blkno + r->nblocks) {
		f->stall_waiting = true;
		pthread_cond_broadcast(&f->stall_cond);
		while (f->stall_armed)
			pthread_cond_wait(&f->stall_cond, &f->stall_lock);
		f->stall_waiting = false;
		pthread_cond_broadcast(&f->stall_cond);
	}
	pthread_mutex_unlock(&f->stall_lock);
}

static int raid_dev_fault_submit(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	struct dev_fault *f = (struct dev_fault *)dev;
	struct raid_fault_domain *d = f->dom;
	int first = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct blk_req *r = &reqs[i];
		int rc = 0;

		if (r->op != BLK_OP_FLUSH)
			raid_fault_stall(f, r);
		if (raid_fault_chaos_hangs(d, r))
			raid_fault_hang();
		jg_mutex_lock(&d->lock);
		if (r->op != BLK_OP_FLUSH && raid_fault_is_bad_locked(f, r)) {
			rc = r->op == BLK_OP_WRITE && d->cfg.write_errno ? d->cfg.write_errno : -EIO;
		} else if (r->op == BLK_OP_READ) {
			rc = raid_fault_lower(f, r);
		} else if (r->op == BLK_OP_WRITE) {
			rc = raid_fault_write_locked(f, r);
			for (struct fault_bad *b = f->bad; b && !rc; b = b->next)
				if (b->latent && b->blkno >= r->blkno &&
				    b->blkno < r->blkno + r->nblocks)
					b->on_read = false;	/* remapped */
		} else if (r->op == BLK_OP_FLUSH) {
			if (d->cfg.cut_at_flushes && !d->cut && ++d->writes >= d->cfg.cut_after_writes &&
			    d->cfg.cut_after_writes)
				raid_fault_cut_locked(d, jg_opoint_get()); /* this flush is lost */
			if (!d->cut && ((d->cfg.cut_point_mask >> jg_opoint_get()) & 1) &&
			    ++d->point_writes == d->cfg.cut_point_nth)
				raid_fault_cut_locked(d, jg_opoint_get()); /* aimed: lost too */
			if (f->fail_all) {
				rc = -EIO;
			} else if (!d->cut) {
				rc = raid_fault_lower(f, r);
				if (!rc)
					raid_fault_disk_flushed_locked(f);
			}
		} else {
			rc = -EINVAL;
		}
		jg_mutex_unlock(&d->lock);
		if (raid_fault_chaos_hangs_after(d, r))
			raid_fault_hang();
		r->result = rc;
		if (rc && !first)
			first = rc;
	}
	return first;
}

static int raid_dev_fault_ctl(struct blk_dev *dev, unsigned int cmd, void *arg)
{
	struct dev_fault *f = (struct dev_fault *)dev;

	return blk_ctl(f->lower, cmd, arg);
}

static void raid_dev_fault_close(struct blk_dev *dev)
{
	struct dev_fault *f = (struct dev_fault *)dev;
	struct raid_fault_domain *d = f->dom;

	jg_mutex_lock(&d->lock);
	for (struct dev_fault **pp = &d->members; *pp; pp = &(*pp)->next_member) {
		if (*pp == f) {
			*pp = f->next_member;
			break;
		}
	}
	raid_fault_pending_drop(f);
	while (f->bad) {
		struct fault_bad *b = f->bad;

		f->bad = b->next;
		free(b);
	}
	jg_mutex_unlock(&d->lock);
	pthread_cond_destroy(&f->stall_cond);
	pthread_mutex_destroy(&f->stall_lock);
	free(f);
}

static const struct blk_dev_ops raid_dev_fault_ops = {
	.submit = raid_dev_fault_submit,
	.ctl = raid_dev_fault_ctl,
	.close = raid_dev_fault_close,
};

int raid_dev_fault_open(struct raid_fault_domain *d, struct blk_dev *lower, struct blk_dev **out)
{
	struct dev_fault *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->dev.ops = &raid_dev_fault_ops;
	f->dev.nblocks = lower->nblocks;
	snprintf(f->dev.name, sizeof(f->dev.name), "%s", lower->name);
	f->dom = d;
	f->lower = lower;
	pthread_mutex_init(&f->stall_lock, NULL);
	pthread_cond_init(&f->stall_cond, NULL);
	jg_mutex_lock(&d->lock);
	f->next_member = d->members;
	d->members = f;
	jg_mutex_unlock(&d->lock);
	*out = &f->dev;
	return 0;
}

int raid_dev_fault_fail_block(struct blk_dev *dev, uint64_t blkno, bool on_read, bool on_write)
{
	struct dev_fault *f = (struct dev_fault *)dev;
	struct fault_bad *b;

	if (dev->ops != &raid_dev_fault_ops)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->blkno = blkno;
	b->on_read = on_read;
	b->on_write = on_write;
	jg_mutex_lock(&f->dom->lock);
	b->next = f->bad;
	f->bad = b;
	jg_mutex_unlock(&f->dom->lock);
	return 0;
}

int raid_dev_fault_latent_block(struct blk_dev *dev, uint64_t blkno)
{
	struct dev_fault *f = (struct dev_fault *)dev;
	int rc = raid_dev_fault_fail_block(dev, blkno, true, false);

	if (!rc) {
		jg_mutex_lock(&f->dom->lock);
		f->bad->latent = true;
		jg_mutex_unlock(&f->dom->lock);
	}
	return rc;
}

int raid_dev_fault_fail_all(struct blk_dev *dev)
{
	struct dev_fault *f = (struct dev_fault *)dev;

	if (dev->ops != &raid_dev_fault_ops)
		return -EINVAL;
	jg_mutex_lock(&f->dom->lock);
	f->fail_all = true;
	jg_mutex_unlock(&f->dom->lock);
	return 0;
}

int raid_dev_fault_stall_block(struct blk_dev *dev, uint64_t blkno, enum blk_op op)
{
	struct dev_fault *f = (struct dev_fault *)dev;

	if (dev->ops != &raid_dev_fault_ops || (op != BLK_OP_READ && op != BLK_OP_WRITE))
		return -EINVAL;
	pthread_mutex_lock(&f->stall_lock);
	if (f->stall_armed) {
		pthread_mutex_unlock(&f->stall_lock);
		return -EBUSY;
	}
	f->stall_blkno = blkno;
	f->stall_op = op;
	f->stall_armed = true;
	pthread_mutex_unlock(&f->stall_lock);
	return 0;
}

void raid_dev_fault_wait_stalled(struct blk_dev *dev)
{
	struct dev_fault *f = (struct dev_fault *)dev;

	pthread_mutex_lock(&f->stall_lock);
	while (f->stall_armed && !f->stall_waiting)
		pthread_cond_wait(&f->stall_cond, &f->stall_lock);
	pthread_mutex_unlock(&f->stall_lock);
}

void raid_dev_fault_release(struct blk_dev *dev)
{
	struct dev_fault *f = (struct dev_fault *)dev;

	pthread_mutex_lock(&f->stall_lock);
	f->stall_armed = false;
	pthread_cond_broadcast(&f->stall_cond);
	pthread_mutex_unlock(&f->stall_lock);
}
