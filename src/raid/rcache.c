// SPDX-License-Identifier: MIT
/*
 * src/raid/rcache.c - the row cache: the members' contents of the few rows the
 * journal is appending its log to, so that each partial write of such a row
 * computes its parity without reading (MD's stripe cache, kept to what the log
 * needs).
 *
 * A commit writes a few log blocks: a partial row, whose parity needs the old
 * data and parity of its lines (read-modify-write), an O_DIRECT read of two
 * members before the write. The log is written in order, so the next commits
 * write the next lines of the same row. A write that says so (BLK_APPEND) has
 * its row read whole once, kept here, and the following partial writes of that
 * row read nothing: they take the old contents from the image and put the new
 * ones into it.
 *
 * Invariants:
 * (H1) An image is used and changed only by a writer holding its row's lock
 *      exclusively (stripe.c (W1)), pinned between raid_rcache_get() and
 *      raid_rcache_put(); the table itself is under rc.lock, a leaf lock.
 * (H2) A valid image equals what the members hold: it becomes valid only when
 *      the writes that changed both succeeded (raid_rcache_put(ok)); any other
 *      path that writes the row drops it first (raid_rcache_drop()), and a
 *      change of the members (a failure, a rebuild) drops them all, even the
 *      pinned ones, which then never become valid. Reads never use the cache,
 *      so it can only matter to parity, and a lost image costs one read.
 * (H3) Read-ahead: the read of a row the log is about to enter cost as much as
 *      the commit's own write, on the commit's path. An append that ends in the
 *      second half of its row hints the next row (raid_rcache_hint); the
 *      prefetch thread reads it as a writer does -- the row's lock exclusive,
 *      get, read every position whole, put(ok) -- while the log's commits go on
 *      in the row before. So (H1) and (H2) hold as they do for a write's own
 *      fill: the image is filled under the row lock, becomes valid only when
 *      every read succeeded and no change of the members dropped it meanwhile,
 *      and a write that arrives first simply fills the row itself. A row
 *      whose hint a newer one replaced before its read began is skipped: the
 *      log may be past it, and the image evicted. A degraded
 *      array reads nothing ahead; a failed read leaves no image and fails no
 *      member (the next write of the row meets the error itself). The thread
 *      is stopped before the members are closed (raid_stop, raid_abandon).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

#define RAID_RCACHE_MAX_BYTES (16u << 20)

static size_t raid_rcache_ent_bytes(const struct raid_geo *geo)
{
	return (size_t)(geo->ndata + geo->npar) * geo->chunk_blocks * RAID_BS;
}

/* Huge chunks: the images are not worth the memory, nothing is cached. */
static bool raid_rcache_off(const struct raid_geo *geo)
{
	return raid_rcache_ent_bytes(geo) * RAID_RCACHE_ROWS > RAID_RCACHE_MAX_BYTES;
}

static struct raid_rcache_ent *raid_rcache_find(struct raid_rcache *rc, uint64_t row)
{
	for (unsigned int i = 0; i < RAID_RCACHE_ROWS; i++)
		if (rc->ent[i].live && rc->ent[i].row == row)
			return &rc->ent[i];
	return NULL;
}

/* An entry to hold a new row: a free one, else the least recently used unpinned. */
static struct raid_rcache_ent *raid_rcache_victim(struct raid_array *a)
{
	struct raid_rcache *rc = &a->rc;
	struct raid_rcache_ent *v = NULL;
	size_t bytes = raid_rcache_ent_bytes(&a->geo);

	if (raid_rcache_off(&a->geo))
		return NULL;
	for (unsigned int i = 0; i < RAID_RCACHE_ROWS; i++) {
		struct raid_rcache_ent *e = &rc->ent[i];

		if (e->pins)
			continue;
		if (!e->live) {
			v = e;
			break;
		}
		if (!v || e->used < v->used)
			v = e;
	}
	if (v && !v->buf) {
		v->buf = jg_alloc_blocks(bytes / RAID_BS);
		if (!v->buf)
			return NULL;
	}
	return v;
}

uint8_t *raid_rcache_get(struct raid_array *a, uint64_t row, bool fill, bool *fresh)
{
	struct raid_rcache *rc = &a->rc;
	struct raid_rcache_ent *e;
	uint8_t *buf = NULL;

	*fresh = false;
	pthread_mutex_lock(&rc->lock);
	e = raid_rcache_find(rc, row);
	if (e && !e->valid)
		e->live = false;	/* never filled or left stale: a free entry */
	if (!e || !e->valid) {
		e = fill ? raid_rcache_victim(a) : NULL;
		if (!e)
			goto out;
		e->live = true;
		e->valid = false;	/* until put(ok) after the fill and the write */
		e->row = row;
		*fresh = true;
		rc->fills++;
	} else {
		rc->hits++;
	}
	JG_ASSERT(!e->pins); /* (H1) one writer per row: the one holding its lock */
	e->pins = 1;
	e->stale = false;
	e->used = ++rc->clock;
	buf = e->buf;
out:
	pthread_mutex_unlock(&rc->lock);
	return buf;
}

void raid_rcache_put(struct raid_array *a, uint64_t row, bool ok)
{
	struct raid_rcache *rc = &a->rc;
	struct raid_rcache_ent *e;

	pthread_mutex_lock(&rc->lock);
	e = raid_rcache_find(rc, row);
	if (e && e->pins) {
		e->pins = 0;
		e->valid = ok && !e->stale;	/* (H2) */
		if (!e->valid)
			e->live = false;
	}
	pthread_mutex_unlock(&rc->lock);
}

void raid_rcache_drop(struct raid_array *a, uint64_t row)
{
	struct raid_rcache *rc = &a->rc;
	struct raid_rcache_ent *e;

	pthread_mutex_lock(&rc->lock);
	e = raid_rcache_find(rc, row);
	if (e && !e->pins)
		e->live = false;
	else if (e)
		e->stale = true;
	pthread_mutex_unlock(&rc->lock);
}

void raid_rcache_drop_all(struct raid_array *a)
{
	struct raid_rcache *rc = &a->rc;

	pthread_mutex_lock(&rc->lock);
	for (unsigned int i = 0; i < RAID_RCACHE_ROWS; i++) {
		struct raid_rcache_ent *e = &rc->ent[i];

		if (e->pins)
			e->stale = true;
		else
			e->live = false;
	}
	pthread_mutex_unlock(&rc->lock);
}

void raid_rcache_counts(struct raid_array *a, uint64_t *hits, uint64_t *fills,
			uint64_t *prefetches)
{
	pthread_mutex_lock(&a->rc.lock);
	*hits = a->rc.hits;
	*fills = a->rc.fills;
	*prefetches = a->rc.prefetches;
	pthread_mutex_unlock(&a->rc.lock);
}

/* ------------------------------------------------------------ read-ahead (H3) */

/* Read @row whole into its image, as a writer's fill does (H1). */
static void raid_rcache_read_ahead(struct raid_array *a, uint64_t row)
{
	const struct raid_geo *geo = &a->geo;
	unsigned int npos = geo->ndata + geo->npar;
	pthread_rwlock_t *lock = &a->row_lock[row % RAID_LOCK_BUCKETS];
	struct blk_req reqs[RAID_MAX_MEMBERS];
	uint8_t *img;
	bool fresh, moved_on;
	int rc = 0;

	if (raid_missing_read(a) || raid_missing_write(a))
		return;	/* degraded: writes take the row path, which uses no image */
	pthread_rwlock_wrlock(lock);
	/* a newer hint: the log has moved on, maybe past this row already (then
	 * evicted: reading it again would only push out a row still in use) */
	pthread_mutex_lock(&a->rc.lock);
	moved_on = a->rc.want != RAID_RCACHE_NONE && a->rc.want != row;
	pthread_mutex_unlock(&a->rc.lock);
	if (moved_on) {
		pthread_rwlock_unlock(lock);
		return;
	}
	img = raid_rcache_get(a, row, true, &fresh);
	if (img && fresh) {
		for (unsigned int q = 0; q < npos; q++)
			reqs[q] = (struct blk_req){
			    .op = BLK_OP_READ,
			    .blkno = geo->data_offset + row * geo->chunk_blocks,
			    .nblocks = geo->chunk_blocks,
			    .buf = img + (size_t)q * geo->chunk_blocks * RAID_BS,
			    .dev = a->m[raid_layout_member(geo, row, q)].dev};
		rc = blk_submit_multi(reqs, npos);
		pthread_mutex_lock(&a->rc.lock);
		a->rc.prefetches++;
		pthread_mutex_unlock(&a->rc.lock);
	}
	/* a member that failed meanwhile dropped the image already (H2); a
	 * degraded array never uses one: keep none */
	if (img)
		raid_rcache_put(a, row, !rc && !raid_missing_read(a) && !raid_missing_write(a));
	pthread_rwlock_unlock(lock);
}

static void *raid_rcache_thread(void *arg)
{
	struct raid_array *a = arg;
	struct raid_rcache *rc = &a->rc;

	pthread_mutex_lock(&rc->lock);
	while (!rc->stop) {
		uint64_t row = rc->want;
		struct raid_rcache_ent *e;

		if (row == RAID_RCACHE_NONE) {
			rc->busy = false;
			pthread_cond_broadcast(&rc->idle);
			pthread_cond_wait(&rc->work, &rc->lock);
			continue;
		}
		rc->want = RAID_RCACHE_NONE;
		rc->busy = true;
		e = raid_rcache_find(rc, row);
		if (e && e->valid)
			continue;
		pthread_mutex_unlock(&rc->lock);
		raid_rcache_read_ahead(a, row);
		pthread_mutex_lock(&rc->lock);
	}
	rc->busy = false;
	pthread_cond_broadcast(&rc->idle);
	pthread_mutex_unlock(&rc->lock);
	return NULL;
}

void raid_rcache_hint(struct raid_array *a, uint64_t row)
{
	struct raid_rcache *rc = &a->rc;
	struct raid_rcache_ent *e;

	if (a->test.no_prefetch || row >= a->geo.rows || raid_rcache_off(&a->geo))
		return;
	pthread_mutex_lock(&rc->lock);
	e = raid_rcache_find(rc, row);
	if ((e && e->valid) || rc->stop)
		goto out;
	if (!rc->started && !rc->start_failed) {
		rc->started = !pthread_create(&rc->thread, NULL, raid_rcache_thread, a);
		rc->start_failed = !rc->started; /* then the writes fill rows themselves */
	}
	if (rc->started) {
		rc->want = row;	/* the newest hint wins: the log has moved on */
		rc->busy = true;
		pthread_cond_signal(&rc->work);
	}
out:
	pthread_mutex_unlock(&rc->lock);
}

void raid_rcache_wait_idle(struct raid_array *a)
{
	struct raid_rcache *rc = &a->rc;

	pthread_mutex_lock(&rc->lock);
	while (rc->started && rc->busy)
		pthread_cond_wait(&rc->idle, &rc->lock);
	pthread_mutex_unlock(&rc->lock);
}

void raid_rcache_stop(struct raid_array *a)
{
	struct raid_rcache *rc = &a->rc;
	bool started;

	pthread_mutex_lock(&rc->lock);
	rc->stop = true;
	started = rc->started;
	rc->started = false;
	pthread_cond_signal(&rc->work);
	pthread_mutex_unlock(&rc->lock);
	if (started)
		pthread_join(rc->thread, NULL);
}

void raid_rcache_mem(struct raid_array *a, uint64_t *bytes, uint64_t *bound)
{
	size_t each = raid_rcache_ent_bytes(&a->geo);
	unsigned int n = 0;

	pthread_mutex_lock(&a->rc.lock);
	for (unsigned int i = 0; i < RAID_RCACHE_ROWS; i++)
		n += a->rc.ent[i].buf != NULL;
	pthread_mutex_unlock(&a->rc.lock);
	*bytes = (uint64_t)n * each;
	*bound = raid_rcache_off(&a->geo) ? 0 : (uint64_t)RAID_RCACHE_ROWS * each;
}

void raid_rcache_init(struct raid_array *a)
{
	pthread_mutex_init(&a->rc.lock, NULL);
	pthread_cond_init(&a->rc.work, NULL);
	pthread_cond_init(&a->rc.idle, NULL);
	a->rc.want = RAID_RCACHE_NONE;
}

void raid_rcache_free(struct raid_array *a)
{
	raid_rcache_stop(a);
	pthread_cond_destroy(&a->rc.work);
	pthread_cond_destroy(&a->rc.idle);
	pthread_mutex_destroy(&a->rc.lock);
	for (unsigned int i = 0; i < RAID_RCACHE_ROWS; i++) {
		free(a->rc.ent[i].buf);
		a->rc.ent[i].buf = NULL;
		a->rc.ent[i].live = false;
	}
}
