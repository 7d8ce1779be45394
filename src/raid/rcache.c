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
 * (R1) An image is used and changed only by a writer holding its row's lock
 *      exclusively (stripe.c (W1)), pinned between raid_rcache_get() and
 *      raid_rcache_put(); the table itself is under rc.lock, a leaf lock.
 * (R2) A valid image equals what the members hold: it becomes valid only when
 *      the writes that changed both succeeded (raid_rcache_put(ok)); any other
 *      path that writes the row drops it first (raid_rcache_drop()), and a
 *      change of the members (a failure, a rebuild) drops them all, even the
 *      pinned ones, which then never become valid. Reads never use the cache,
 *      so it can only matter to parity, and a lost image costs one read.
 */
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

#define RAID_RCACHE_MAX_BYTES (16u << 20)

static size_t raid_rcache_ent_bytes(const struct raid_geo *geo)
{
	return (size_t)(geo->ndata + geo->npar) * geo->chunk_blocks * RAID_BS;
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

	if (bytes * RAID_RCACHE_ROWS > RAID_RCACHE_MAX_BYTES)
		return NULL;	/* huge chunks: not worth the memory */
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
	e->pins = 1;	/* (R1) one writer per row */
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
		e->valid = ok && !e->stale;	/* (R2) */
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

void raid_rcache_counts(struct raid_array *a, uint64_t *hits, uint64_t *fills)
{
	pthread_mutex_lock(&a->rc.lock);
	*hits = a->rc.hits;
	*fills = a->rc.fills;
	pthread_mutex_unlock(&a->rc.lock);
}

void raid_rcache_free(struct raid_array *a)
{
	for (unsigned int i = 0; i < RAID_RCACHE_ROWS; i++) {
		free(a->rc.ent[i].buf);
		a->rc.ent[i].buf = NULL;
		a->rc.ent[i].live = false;
	}
}
