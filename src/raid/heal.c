// SPDX-License-Identifier: MIT
/*
 * src/raid/heal.c - BLK_CTL_HEAL_READ (include/jgrfs/blkreq.h): a block its
 * reader found wrong (a metadata block whose checksum fails) is rebuilt from
 * the rest of its row until the reader's check accepts a version, and the
 * member that held the wrong version is rewritten (issue 27).
 *
 * A member read error (-EIO) tells which member is wrong (repair.c
 * raid_read_repair). Silent damage does not: any member of the block's line
 * (the k-th block of every chunk of its row) may hold it, the block's own
 * member, another data member or a parity. So the candidates are erasure sets:
 * the positions taken as unknown and reconstructed from the others. Every set
 * holds the block's own position and the positions that cannot be read (a
 * missing or failed member, a rebuilding one the rebuild has not passed); when
 * the parity allows one more (RAID6, no member missing) each other position is
 * left out in turn as well: Q first (the block rebuilt from P), then P (from
 * Q), then each other data member (both rebuilt from P and Q). Only sets as
 * large as the parity allows are tried: a smaller one is inside a larger, and
 * a set that holds every damaged position gives the right block.
 *
 * (H1) The candidate the reader accepts was computed from the positions
 *      outside its set, which it thereby vouches for (a crc32c, magic and home
 *      address, wrong with a chance of 2^-32): every position of the set whose
 *      member holds something else than the reconstruction is damaged, and
 *      only those are rewritten, each its one block; the other positions,
 *      parity included, already agree with the good data and stay. After the
 *      rewrite the line is consistent: a scrub finds nothing.
 * (H2) Everything happens under the row's lock held exclusively: no writer
 *      changes the line between the reads, the choice and the rewrite; the
 *      row cache's image of the row, which may hold the damaged block, is
 *      dropped when a member is rewritten.
 * (H3) Crash safety: a rewrite is one member block of content its row's parity
 *      already agrees with (H1). A crash in the middle leaves the member with
 *      either the old, damaged block or the good one (member writes of a block
 *      are atomic, or torn, which is damage of the same kind): both are read
 *      right by the same heal again, and no other block of the row depends on
 *      which. No bitmap bit or journal record is needed.
 * (H4) No heal when the parity cannot be trusted to be that of the current
 *      data: a dirty array not yet resynced (resync_pending, a read-only
 *      assembly of a dirty array, resync=off after a crash), a filesystem
 *      journal not yet replayed (jnl_unreplayed), a row at risk (A1). There a
 *      stale parity could rebuild an older version of the block, whose
 *      checksum is right: the reader would take it for the current one.
 *      -EUCLEAN, as without a heal.
 * (H5) A read-only array hands back the good version and writes nothing; it
 *      counts the damaged members all the same (as raid_read_repair counts a
 *      read error corrected on a read-only array), and its event says
 *      rewritten=no. A member whose rewrite fails is failed (MD's rule for a
 *      failed write); the reader still gets the good version.
 * A heal never fails a member for the number of its corrected blocks
 * (max_read_errors is the read-error path's rule), it only counts them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

/* (H4) 0 when the parity of @row can be trusted, else -EUCLEAN (logged for @what). */
int raid_heal_trusted(struct raid_array *a, uint64_t row, const char *what)
{
	const char *why = NULL;
	bool b;

	jg_mutex_lock(&a->bm_lock);
	b = a->resync_pending;
	jg_mutex_unlock(&a->bm_lock);
	if (b)
		why = "the array is dirty and not resynced";
	jg_mutex_lock(&a->sb_lock);
	b = a->jnl_unreplayed;
	jg_mutex_unlock(&a->sb_lock);
	if (b)
		why = "the filesystem journal is not replayed";
	if (a->was_dirty && (a->readonly || a->policy == RAID_RESYNC_OFF))
		why = "the array was assembled dirty without a resync";
	pthread_mutex_lock(&a->sync_lock);
	b = a->risk_all || (a->risk && (a->risk[row / 8] & (1u << (row % 8))));
	pthread_mutex_unlock(&a->sync_lock);
	if (b)
		why = "the row is at risk (written dirty and degraded)";
	if (!why)
		return 0;
	jg_log(JG_LOG_ERR, "raid", "%s %s row=%llu: not tried: %s", a->dev.name, what,
	       (unsigned long long)row, why);
	return -EUCLEAN;
}

/*
 * The erasure sets to try, in order (see above): each holds @base (the block's
 * position and the unreadable ones) and is as large as the parity allows.
 */
unsigned int raid_heal_sets(const struct raid_geo *g, uint32_t base, uint32_t *sets)
{
	unsigned int npos = g->ndata + g->npar, ns = 0;
	unsigned int order[RAID_MAX_MEMBERS], no = 0;

	if (raid_popcount(base) > g->npar)
		return 0;
	if (raid_popcount(base) == g->npar) {
		sets[ns++] = base;
		return ns;
	}
	/* one more to leave out (npar is 2, base one position) */
	if (g->npar == 2)
		order[no++] = RAID_POS_Q(g);
	order[no++] = RAID_POS_P(g);
	for (unsigned int p = 0; p < g->ndata; p++)
		order[no++] = p;
	for (unsigned int i = 0; i < no && order[i] < npos; i++)
		if (!(base & (1u << order[i])))
			sets[ns++] = base | (1u << order[i]);
	return ns;
}

/* One heal's line (the damaged block's line of its row) and what was rewritten. */
struct raid_heal_line {
	uint64_t mblk, row;			  /* member block of the line, and its row */
	unsigned int bpos;			  /* the damaged block's position */
	uint8_t *rd[RAID_MAX_MEMBERS];		  /* the line as the members hold it */
	uint8_t *w[RAID_MAX_MEMBERS];		  /* a candidate: rd with a set reconstructed */
	uint8_t *back;				  /* a rewritten block read back */
	uint32_t miss;				  /* positions that could not be read */
	uint32_t found;				  /* the set whose candidate verified, or 0 */
	unsigned int wrole[RAID_MAX_MEMBERS], nw; /* members rewritten (or tried) */
	struct blk_dev *wdev[RAID_MAX_MEMBERS];	  /* what each was written to (rebuild.c (R6)) */
	uint32_t wfail;				  /* members whose rewrite failed */
};

/*
 * Read the line as the members hold it into l->rd, in one submit; a member
 * that cannot be read (missing, failed, not rebuilt that far, or a read that
 * fails) is left out, its position in l->miss. Row lock held (H2).
 */
static void raid_heal_line_read(struct raid_array *a, struct raid_heal_line *l)
{
	const struct raid_geo *g = &a->geo;
	unsigned int npos = g->ndata + g->npar, nr = 0;
	unsigned int rpos[RAID_MAX_MEMBERS];
	struct blk_req r[RAID_MAX_MEMBERS];
	uint32_t rmiss;

	rmiss = raid_missing_read_upto(a, l->row);
	for (unsigned int q = 0; q < npos; q++) {
		unsigned int m = raid_layout_member(g, l->row, q);

		if (rmiss & (1u << m)) {
			l->miss |= 1u << q;
			continue;
		}
		rpos[nr] = q;
		r[nr++] = (struct blk_req){.op = BLK_OP_READ,
					   .blkno = l->mblk,
					   .nblocks = 1,
					   .buf = l->rd[q],
					   .dev = a->m[m].dev};
	}
	if (nr)
		(void)blk_submit_multi(r, nr); /* each result below */
	for (unsigned int i = 0; i < nr; i++)
		if (r[i].result)
			l->miss |= 1u << rpos[i]; /* the read path repairs read errors, not this */
}

/*
 * Whether the block as stored verifies after all (the first candidate): then
 * it is handed back in h->buf and there is nothing to heal.
 */
static bool raid_heal_as_stored(struct blk_heal *h, struct raid_heal_line *l)
{
	if (l->miss & (1u << l->bpos))
		return false;
	h->candidates++;
	if (h->verify(h->ctx, l->rd[l->bpos]))
		return false;
	memcpy(h->buf, l->rd[l->bpos], RAID_BS); /* right this time: nothing to heal */
	return true;
}

/*
 * Try the erasure sets in order (raid_heal_sets) until the reader accepts the
 * block reconstructed: l->found the set, l->w its reconstruction. Returns
 * whether one verified.
 */
static bool raid_heal_find(struct raid_array *a, struct blk_heal *h, struct raid_heal_line *l)
{
	const struct raid_geo *g = &a->geo;
	unsigned int npos = g->ndata + g->npar, ns;
	uint32_t sets[RAID_MAX_MEMBERS + 1];

	ns = raid_heal_sets(g, l->miss | (1u << l->bpos), sets);
	for (unsigned int s = 0; s < ns && !l->found; s++) {
		for (unsigned int q = 0; q < npos; q++)
			memcpy(l->w[q], l->rd[q], RAID_BS);
		if (raid_parity_reconstruct(g->ndata, g->npar, RAID_BS, l->w, sets[s]))
			continue;
		h->candidates++;
		if (!h->verify(h->ctx, l->w[l->bpos]))
			l->found = sets[s];
	}
	return l->found != 0;
}

/*
 * (H1) Rewrite the damaged positions, those of the found set whose member
 * holds something else than the reconstruction, each its one block written
 * with FUA and read back; a failure is noted in l->wfail, acted on once the
 * row lock is released (raid_heal_report). Row lock held (H2).
 */
static void raid_heal_rewrite(struct raid_array *a, struct raid_heal_line *l)
{
	const struct raid_geo *g = &a->geo;
	unsigned int npos = g->ndata + g->npar;
	uint32_t bad = 0;

	/* (H1) the damaged positions: those of the set whose member differs */
	for (unsigned int q = 0; q < npos; q++)
		if ((l->found & ~l->miss & (1u << q)) && memcmp(l->rd[q], l->w[q], RAID_BS))
			bad |= 1u << q;
	for (unsigned int q = 0; q < npos; q++) {
		unsigned int m = raid_layout_member(g, l->row, q);

		if (!(bad & (1u << q)))
			continue;
		l->wdev[l->nw] = a->m[m].dev;
		l->wrole[l->nw++] = m;
		/* (H3) one block the row's parity already agrees with; (H5) */
		if (!a->readonly &&
		    (blk_rw(a->m[m].dev, BLK_OP_WRITE, l->mblk, 1, l->w[q], BLK_FUA) ||
		     blk_rw(a->m[m].dev, BLK_OP_READ, l->mblk, 1, l->back, 0) ||
		     memcmp(l->back, l->w[q], RAID_BS)))
			l->wfail |= 1u << m;
	}
	if (bad && !a->readonly) {
		raid_rcache_drop(a, l->row);  /* (H2) its image may hold the damaged block */
		raid_away_note(a, l->row, 1); /* away.c (A1) */
	}
}

/*
 * With no lock held: fail each member whose rewrite failed (only while it
 * holds the device written, rebuild.c (R6)); count and report each other one
 * as a corrected read error (H5), and tell the reader which were rewritten.
 */
static void raid_heal_report(struct raid_array *a, struct blk_heal *h,
			     const struct raid_heal_line *l)
{
	for (unsigned int i = 0; i < l->nw; i++) {
		unsigned int m = l->wrole[i];
		uint64_t corrected;

		if (l->wfail & (1u << m)) {
			jg_log(
			    JG_LOG_ERR, "raid",
			    "dev=%s heal block=%llu row=%llu: rewrite of member block %llu failed",
			    a->m[m].name, (unsigned long long)h->blkno, (unsigned long long)l->row,
			    (unsigned long long)l->mblk);
			(void)raid_member_fail_dev(a, m, l->wdev[i], -EIO); /* no lock held: (R6) */
			continue;
		}
		h->rewritten |= 1u << m;
		pthread_mutex_lock(&a->stats_lock);
		corrected = ++a->m[m].rd_corrected;
		pthread_mutex_unlock(&a->stats_lock);
		raid_event_detail(
		    a, RAID_EV_READ_ERROR_CORRECTED, m, -1, 0,
		    "cause=checksum array_block=%llu block=%llu row=%llu rewritten=%s "
		    "corrected=%llu",
		    (unsigned long long)h->blkno, (unsigned long long)l->mblk,
		    (unsigned long long)l->row, a->readonly ? "no(read-only)" : "yes",
		    (unsigned long long)corrected);
	}
}

/*
 * Under the row's lock held exclusively (H2), with the parity trusted (H4):
 * read the line, take the block as stored if it verifies, else find the
 * erasure set whose reconstruction verifies and rewrite the damaged members
 * (H1); then, with no lock, act on the rewrites.
 */
int raid_heal_read(struct raid_array *a, struct blk_heal *h)
{
	const struct raid_geo *g = &a->geo;
	unsigned int npos = g->ndata + g->npar, role;
	struct raid_heal_line l = {0};
	pthread_rwlock_t *lock;
	uint8_t *mem;
	int rc = -EBADMSG;

	if (!h || !h->buf || !h->verify || h->blkno >= g->array_blocks)
		return -EINVAL;
	h->rewritten = 0;
	h->candidates = 0;
	raid_layout_map(g, h->blkno, &role, &l.mblk);
	l.row = (l.mblk - g->data_offset) / g->chunk_blocks;
	l.bpos = raid_layout_pos(g, l.row, role);
	mem = jg_alloc_blocks(2 * (size_t)npos + 1);
	if (!mem)
		return -ENOMEM;
	l.back = mem + 2 * (size_t)npos * RAID_BS;
	for (unsigned int q = 0; q < npos; q++) {
		l.rd[q] = mem + (size_t)q * RAID_BS;
		l.w[q] = mem + (size_t)(npos + q) * RAID_BS;
	}

	lock = &a->row_lock[l.row % RAID_LOCK_BUCKETS];
	pthread_rwlock_wrlock(lock); /* (H2) */
	rc = raid_heal_trusted(a, l.row, "heal");
	if (rc)
		goto unlock;
	rc = -EBADMSG;
	raid_heal_line_read(a, &l);
	if (raid_heal_as_stored(h, &l)) {
		rc = 0;
		goto unlock;
	}
	if (!raid_heal_find(a, h, &l))
		goto unlock;
	rc = 0;
	memcpy(h->buf, l.w[l.bpos], RAID_BS);
	raid_heal_rewrite(a, &l);
unlock:
	pthread_rwlock_unlock(lock);

	if (rc == -EBADMSG)
		jg_log(JG_LOG_ERR, "raid",
		       "%s heal block=%llu row=%llu member=%s: no version of the %u tried verified",
		       a->dev.name, (unsigned long long)h->blkno, (unsigned long long)l.row,
		       a->m[role].name, h->candidates);
	raid_heal_report(a, h, &l);
	free(mem);
	return rc;
}
