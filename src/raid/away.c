// SPDX-License-Identifier: MIT
/*
 * src/raid/away.c - the rows a member missed while it was away, so that
 * raid_readd() resyncs only those when it comes back (MD's re-add with a
 * bitmap), in every resync policy: declared writes (BLK_FS_RAIDSYNC) are
 * counted here too, although the write-intent bitmap never sees them.
 *
 * A member that fails has missed two kinds of row:
 *   - the rows written after it failed: none of them reached it;
 *   - the rows written before, whose writes it acknowledged but which no flush
 *     has made durable since: a member that lost power (a rebooted NBD server)
 *     has lost them from its cache.
 * (A1) Every member write of a row group is noted when it completes, whatever
 *      its flags and result (stripe.c raid_mr_submit): in a ring of recent row
 *      ranges, and in the map of every member being tracked.
 * (A2) A flush of member m that succeeds makes durable there every range noted
 *      before it was issued: durable[m] = the ring position taken then.
 * (A3) When a working member fails (under sb_lock, before the masks say so, so
 *      that every write planned without it completes after), its map starts
 *      with the ring's ranges from durable[m] on, and tracks every later note.
 *      If the ring has already overwritten some of those, or the map cannot be
 *      allocated, the rows are unknown: the readd is a full rebuild.
 * (A4) The map lives in memory only. A member missing since assembly, or still
 *      failed after a restart, or failed while being rebuilt, has no map: its
 *      readd is a full rebuild.
 * The lock is a leaf.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

void raid_away_init(struct raid_array *a)
{
	pthread_mutex_init(&a->away.lock, NULL);
}

void raid_away_free(struct raid_array *a)
{
	free(a->away.ring);
	for (unsigned int i = 0; i < RAID_MAX_MEMBERS; i++)
		free(a->away.map[i]);
	pthread_mutex_destroy(&a->away.lock);
}

static void raid_away_mark(uint8_t *map, uint64_t row0, uint64_t nrows)
{
	for (uint64_t r = row0; r < row0 + nrows; r++)
		map[r / 8] |= (uint8_t)(1u << (r % 8));
}

/* (A1) Rows [@row0, @row0 + @nrows) within the array. Lock held. */
static void raid_away_note_locked(struct raid_array *a, uint64_t row0, uint64_t nrows)
{
	struct raid_away *w = &a->away;
	struct raid_away_range *last;

	if (!nrows || row0 >= a->geo.rows)
		return;
	if (nrows > a->geo.rows - row0)
		nrows = a->geo.rows - row0; /* the maps hold geo.rows bits */
	for (unsigned int m = 0; m < RAID_MAX_MEMBERS; m++)
		if (w->map[m])
			raid_away_mark(w->map[m], row0, nrows);
	if (!w->ring) {
		w->size = a->test.away_ring ? a->test.away_ring : RAID_AWAY_RING;
		w->ring = calloc(w->size, sizeof(*w->ring));
		if (!w->ring) {
			/* nothing noted from here on: no failure can be tracked */
			w->lost = UINT64_MAX;
			return;
		}
	}
	last = w->head ? &w->ring[(w->head - 1) % w->size] : NULL;
	if (last && w->head > w->flushed_at && row0 >= last->row0 &&
	    row0 <= last->row0 + last->nrows) {
		/* within or just past the last range, not yet seen by a flush: extend it */
		if (row0 + nrows > last->row0 + last->nrows)
			last->nrows = row0 + nrows - last->row0;
		return;
	}
	if (w->head >= w->size)
		w->lost = w->head - w->size + 1; /* the entry overwritten */
	w->ring[w->head % w->size] = (struct raid_away_range){.row0 = row0, .nrows = nrows};
	w->head++;
}

/* (A1) */
void raid_away_note(struct raid_array *a, uint64_t row0, uint64_t nrows)
{
	pthread_mutex_lock(&a->away.lock);
	raid_away_note_locked(a, row0, nrows);
	pthread_mutex_unlock(&a->away.lock);
}

/* (A1) The member writes among @reqs (data area requests), done or failed. */
void raid_away_note_reqs(struct raid_array *a, const struct blk_req *reqs, unsigned int n)
{
	const struct raid_geo *g = &a->geo;

	pthread_mutex_lock(&a->away.lock);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t b0, r0;

		if (reqs[i].op != BLK_OP_WRITE || !reqs[i].nblocks || reqs[i].blkno < g->data_offset)
			continue;
		b0 = reqs[i].blkno - g->data_offset;
		r0 = b0 / g->chunk_blocks;
		raid_away_note_locked(a, r0, (b0 + reqs[i].nblocks - 1) / g->chunk_blocks - r0 + 1);
	}
	pthread_mutex_unlock(&a->away.lock);
}

/* (A2) Before a flush is issued: the ring position it will make durable. */
uint64_t raid_away_flush_begin(struct raid_array *a)
{
	uint64_t seq;

	pthread_mutex_lock(&a->away.lock);
	seq = a->away.head;
	a->away.flushed_at = seq; /* the last range must not grow past this flush */
	pthread_mutex_unlock(&a->away.lock);
	return seq;
}

/* (A2) The flush of member @role issued at @seq succeeded. */
void raid_away_flush_done(struct raid_array *a, unsigned int role, uint64_t seq)
{
	pthread_mutex_lock(&a->away.lock);
	if (seq > a->away.durable[role])
		a->away.durable[role] = seq;
	pthread_mutex_unlock(&a->away.lock);
}

/* (A3) Member @role fails now; (A4) none for one being rebuilt. sb_lock held. */
void raid_away_fail_locked(struct raid_array *a, unsigned int role, bool in_round)
{
	struct raid_away *w = &a->away;
	uint64_t bytes = raid_div_up(a->geo.rows, 8);

	JG_ASSERT_HELD(&a->sb_lock);
	if (a->m[role].rebuilding) {
		raid_away_forget(a, role);
		return;
	}
	/* under sb_lock: raid_readd compares them with the device's superblock */
	w->left_events[role] = a->events;
	w->left_in_round[role] = in_round;
	pthread_mutex_lock(&w->lock);
	free(w->map[role]);
	w->map[role] = NULL;
	w->marked_why[role] = NULL;
	if (w->durable[role] < w->lost) {
		w->marked_why[role] = "more writes were in flight when it failed than are remembered";
		goto out;
	}
	w->map[role] = calloc(bytes, 1);
	if (!w->map[role]) {
		w->marked_why[role] = "no memory to track them";
		goto out;
	}
	for (uint64_t s = w->durable[role]; s < w->head; s++) {
		const struct raid_away_range *e = &w->ring[s % w->size];

		raid_away_mark(w->map[role], e->row0, e->nrows);
	}
out:
	pthread_mutex_unlock(&w->lock);
}

/* Stop tracking @role and forget its map (a rebuild takes the role). */
void raid_away_forget(struct raid_array *a, unsigned int role)
{
	pthread_mutex_lock(&a->away.lock);
	free(a->away.map[role]);
	a->away.map[role] = NULL;
	a->away.marked_why[role] = NULL;
	pthread_mutex_unlock(&a->away.lock);
}

/*
 * Stop tracking @role and hand over its map (the caller frees it); NULL when
 * the rows it missed are unknown, *@why then says why (A3, A4).
 */
uint8_t *raid_away_take(struct raid_array *a, unsigned int role, const char **why)
{
	uint8_t *map;

	pthread_mutex_lock(&a->away.lock);
	map = a->away.map[role];
	a->away.map[role] = NULL;
	*why = a->away.marked_why[role]
		   ? a->away.marked_why[role]
		   : "it was missing when the array was assembled, or failed while being rebuilt";
	a->away.marked_why[role] = NULL;
	pthread_mutex_unlock(&a->away.lock);
	return map;
}

/* Rows marked in @role's map, or -1 when it has none. */
int64_t raid_away_rows(struct raid_array *a, unsigned int role)
{
	int64_t n = -1;

	pthread_mutex_lock(&a->away.lock);
	if (a->away.map[role]) {
		n = 0;
		for (uint64_t i = 0; i < raid_div_up(a->geo.rows, 8); i++)
			n += __builtin_popcount(a->away.map[role][i]);
	}
	pthread_mutex_unlock(&a->away.lock);
	return n;
}
