// SPDX-License-Identifier: MIT
/*
 * src/raid/scrub.c - read every row, count rows whose parity does not match the
 * data (MD's mismatch_cnt), optionally rewrite their parity. The comparison is
 * the row check of repair.c (RAID_GRP_SCRUB) under the row locks, so the array
 * stays in use. A degraded array is refused: with a chunk missing there is
 * nothing to compare. With jnl-pending set the filesystem has not replayed its
 * journal: the rows it declared may legitimately mismatch, and a repair would
 * trust their data over the journal's -- hence the warning.
 *
 * An array whose initial sync has not ended (sync.c) has rows past its mark
 * whose parity never matched: a mismatch there says nothing of the disks. A
 * scrub that only counts leaves them out (and says so); --repair rewrites
 * their parity as the initial sync would, and moves the mark to the end.
 *
 * Which member of a mismatched row is wrong (issue 27). Parity that disagrees
 * with its data says a line is damaged, not where: rewriting the parity from
 * the data, as a scrub without more knowledge does (MD's repair), makes damage
 * in a data chunk permanent. With a verifier from the array's user
 * (raid_set_verifier: the filesystem says of each block whether its content
 * verifies, fails its check, is free space, or holds data without a check),
 * each mismatched line (the same block of every chunk of the row) is judged:
 * (K1) every data block as stored verifies or is free: the parity is the wrong
 *      one (or the damage is in free space, where any content is right): the
 *      parity is rewritten from the data, as before.
 * (K2) a data block fails its check, and reconstructed from the others (the
 *      erasure sets of heal.c: the block alone on RAID5; with Q, P or another
 *      data block on RAID6) it verifies, and no data block outside the set
 *      fails nor any inside it fails after: the set's members whose blocks
 *      differ from the reconstruction are rewritten (each one block, FUA, read
 *      back), each counted as a corrected read error of its member (the
 *      heal's counter and event); the parity stays unless it was in the set.
 *      The verified reconstruction vouches for the positions outside the set,
 *      as in heal.c (H1).
 * (K3) otherwise (data without a check and nothing fails, or nothing verifies)
 *      nothing tells which member is wrong: nothing is written, the row is
 *      counted unresolved and its line logged, for its owners to be named.
 * (K4) Locks: the verifier may read the array (a bitmap through the
 *      filesystem, which takes its own lock before row locks), so it is never
 *      called under a row lock. The row is read under its lock, judged with
 *      no lock held, and before anything is written the row is read again
 *      under the lock held exclusively: only when it is unchanged is the
 *      judgement applied, under that same lock (else judged again, at most
 *      RAID_SCRUB_TRIES times). A rebuild from parity also needs the parity
 *      trusted (heal.c (H4)).
 * (K5) A write in flight (issue 43): the filesystem may set a block's checksum
 *      slot before the block reaches the array, so a block on its way fails
 *      its check as stored. The verifier says BLK_BUSY of such a block; and a
 *      row judged unresolved or busy is read again under its lock: changed
 *      (a write landed after the first read), it is judged again. A row still
 *      busy is neither repaired nor counted unresolved nor mismatched: the
 *      online scrub is given it (raid_scrub_counts.busy_rows) to scrub again
 *      later in its pass; the offline one, with no writer, counts it
 *      unresolved.
 * Only the rows the parity check found mismatched are judged, so the verifier
 * costs nothing on a healthy array.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

#define RAID_SCRUB_TRIES 4	/* (K4) judgements of a row that keeps changing */
#define RAID_SCRUB_LOG_LINES 4u /* lines of a row logged one by one */

void raid_set_verifier(struct raid_array *a, blk_verify_fn fn, void *ctx)
{
	a->verify = fn;
	a->verify_ctx = ctx;
}

/* What a scrub with a verifier did, added up over rows. */
struct raid_scrub_res {
	uint64_t repaired, rebuilt, unresolved;
	struct raid_scrub_counts *busy; /* (K5) busy rows go there; NULL: count them unresolved */
	bool row_busy;			/* the row last judged was busy */
};

enum raid_line_verdict {
	RAID_LV_OK,
	RAID_LV_PARITY,
	RAID_LV_REBUILD,
	RAID_LV_UNRESOLVED,
	RAID_LV_BUSY, /* (K5) */
};

static int raid_verdict(struct raid_array *a, uint64_t blkno, const uint8_t *blk)
{
	int v = a->verify(a->verify_ctx, blkno, blk);

	return v < BLK_VERIFIES || v > BLK_BUSY ? BLK_UNKNOWN : v; /* an error: cannot tell */
}

/*
 * Judge the mismatched line @k of @row, @line[q] its blocks as the members
 * hold them: into @w[q] what each position should hold, *@wmask the
 * positions to rewrite (K1)-(K3).
 */
static enum raid_line_verdict raid_scrub_judge(struct raid_array *a, uint64_t row, uint32_t k,
					       uint8_t **line, uint8_t **w, uint32_t *wmask)
{
	const struct raid_geo *g = &a->geo;
	unsigned int npos = g->ndata + g->npar, ns;
	uint32_t fails = 0, unknown = 0, busy = 0, sets[RAID_MAX_MEMBERS + 1];
	uint64_t b0 = row * g->row_blocks + k;

	*wmask = 0;
	for (unsigned int d = 0; d < g->ndata; d++) {
		int v = raid_verdict(a, b0 + (uint64_t)d * g->chunk_blocks, line[d]);

		jg_log(JG_LOG_DEBUG, "raid", "scrub %s row=%llu line=%u block=%llu: verdict %d",
		       a->dev.name, (unsigned long long)row, k,
		       (unsigned long long)(b0 + (uint64_t)d * g->chunk_blocks), v);
		fails |= (uint32_t)(v == BLK_FAILS) << d;
		unknown |= (uint32_t)(v == BLK_UNKNOWN) << d;
		busy |= (uint32_t)(v == BLK_BUSY) << d;
	}
	if (busy) /* (K5) the line is not what it will be: nothing to tell yet */
		return RAID_LV_BUSY;
	if (!fails && !unknown) { /* (K1) */
		for (unsigned int q = 0; q < npos; q++)
			memcpy(w[q], line[q], RAID_BS);
		raid_parity_gen(g->ndata, g->npar, RAID_BS, w, w[RAID_POS_P(g)],
				g->npar == 2 ? w[RAID_POS_Q(g)] : NULL);
		for (unsigned int q = g->ndata; q < npos; q++)
			if (memcmp(w[q], line[q], RAID_BS))
				*wmask |= 1u << q;
		return RAID_LV_PARITY;
	}
	for (unsigned int f = 0; f < g->ndata; f++) { /* (K2) each failing block an anchor */
		if (!(fails & (1u << f)))
			continue;
		ns = raid_heal_sets(g, 1u << f, sets);
		for (unsigned int s = 0; s < ns; s++) {
			bool ok = true;

			for (unsigned int q = 0; q < npos; q++)
				memcpy(w[q], line[q], RAID_BS);
			if (raid_parity_reconstruct(g->ndata, g->npar, RAID_BS, w, sets[s]))
				continue;
			for (unsigned int d = 0; d < g->ndata && ok; d++) {
				uint64_t b = b0 + (uint64_t)d * g->chunk_blocks;

				if (!(sets[s] & (1u << d)))
					ok = !(fails & (1u << d));
				else if (d == f)
					ok = raid_verdict(a, b, w[d]) == BLK_VERIFIES;
				else
					ok = raid_verdict(a, b, w[d]) != BLK_FAILS;
			}
			if (!ok)
				continue;
			for (unsigned int q = 0; q < npos; q++)
				if ((sets[s] & (1u << q)) && memcmp(w[q], line[q], RAID_BS))
					*wmask |= 1u << q;
			return RAID_LV_REBUILD;
		}
	}
	return RAID_LV_UNRESOLVED; /* (K3) */
}

/* Every position's chunk of @row into @buf (chunk q at q * chunk bytes); row lock held. */
static int raid_scrub_row_read(struct raid_array *a, uint64_t row, uint8_t *buf)
{
	const struct raid_geo *g = &a->geo;
	unsigned int npos = g->ndata + g->npar;
	struct blk_req r[RAID_MAX_MEMBERS];

	if (raid_missing_read(a))
		return -EAGAIN;
	for (unsigned int q = 0; q < npos; q++)
		r[q] = (struct blk_req){.op = BLK_OP_READ,
					.blkno = g->data_offset + row * g->chunk_blocks,
					.nblocks = g->chunk_blocks,
					.buf = buf + (size_t)q * g->chunk_blocks * RAID_BS,
					.dev = a->m[raid_layout_member(g, row, q)].dev};
	return blk_submit_multi(r, npos) ? -EIO : 0;
}

/* One row being judged and mended (raid_scrub_resolve): its buffers and what was done. */
struct raid_scrub_rv {
	struct raid_array *a;
	uint64_t row;
	bool repair; /* mend; cleared when the row keeps changing (K4) */
	struct raid_scrub_res *res;
	size_t cb;		      /* bytes of a chunk */
	uint8_t *mem;		      /* rd, want, again, then w: one allocation */
	uint8_t *rd;		      /* the row as read, chunk q at q * cb */
	uint8_t *want;		      /* what each position to rewrite should hold */
	uint8_t *again;		      /* the row read again, to see it unchanged (K4, K5) */
	uint8_t *w[RAID_MAX_MEMBERS]; /* one line's scratch per position */
	uint8_t *verdict;	      /* per line: enum raid_line_verdict */
	uint32_t *wmask;	      /* per line: the positions to rewrite */
	uint32_t wfail;		      /* members a rewrite failed on */
	uint32_t corrected_roles[RAID_MAX_MEMBERS]; /* blocks rebuilt per member */
	struct blk_dev *wdev[RAID_MAX_MEMBERS];	    /* what each was written to (R6) */
	uint64_t mblk0;				    /* member block of the row's line 0 */
	uint64_t rebuilt;	/* blocks rewritten from a verified reconstruction */
	pthread_rwlock_t *lock; /* the row's lock */
	bool unresolved, wrote, any, busy;
};

/* The buffers of @v, for its row. -ENOMEM with nothing left allocated. */
static int raid_scrub_resolve_alloc(struct raid_scrub_rv *v)
{
	const struct raid_geo *g = &v->a->geo;
	uint32_t C = g->chunk_blocks;
	unsigned int npos = g->ndata + g->npar;

	v->cb = (size_t)C * RAID_BS;
	v->mblk0 = g->data_offset + v->row * C;
	v->lock = &v->a->row_lock[v->row % RAID_LOCK_BUCKETS];
	v->mem = jg_alloc_blocks(3 * (size_t)npos * C + npos);
	v->wmask = calloc(C, sizeof(*v->wmask));
	v->verdict = calloc(C, 1);
	if (!v->mem || !v->wmask || !v->verdict) {
		free(v->mem);
		free(v->wmask);
		free(v->verdict);
		return -ENOMEM;
	}
	v->rd = v->mem;
	v->want = v->rd + (size_t)npos * v->cb;
	v->again = v->want + (size_t)npos * v->cb;
	for (unsigned int q = 0; q < npos; q++)
		v->w[q] = v->again + (size_t)npos * v->cb + (size_t)q * RAID_BS;
	return 0;
}

/*
 * (K4) With no lock held (the verifier may read the array): each line of the
 * row as read whose parity does not match its data is judged (K1)-(K3), what
 * its positions to rewrite should hold kept in v->want. *@rebuild: a line is
 * to be rebuilt (K2); *@doubt: a line is unresolved or busy (K5).
 */
static void raid_scrub_resolve_judge(struct raid_scrub_rv *v, bool *rebuild, bool *doubt)
{
	const struct raid_geo *g = &v->a->geo;
	uint32_t C = g->chunk_blocks;
	unsigned int npos = g->ndata + g->npar;
	uint8_t *line[RAID_MAX_MEMBERS];

	v->any = false;
	for (uint32_t k = 0; k < C; k++) { /* (K4) no lock held: the verifier may read */
		bool mism = false;

		for (unsigned int q = 0; q < npos; q++)
			line[q] = v->rd + (size_t)q * v->cb + (size_t)k * RAID_BS;
		raid_parity_gen(g->ndata, g->npar, RAID_BS, line, v->w[RAID_POS_P(g)],
				g->npar == 2 ? v->w[RAID_POS_Q(g)] : NULL);
		for (unsigned int q = g->ndata; q < npos; q++)
			mism |= memcmp(v->w[q], line[q], RAID_BS) != 0;
		v->wmask[k] = 0;
		v->verdict[k] = RAID_LV_OK;
		if (!mism)
			continue;
		v->verdict[k] =
		    (uint8_t)raid_scrub_judge(v->a, v->row, k, line, v->w, &v->wmask[k]);
		for (unsigned int q = 0; q < npos; q++)
			if (v->wmask[k] & (1u << q))
				memcpy(v->want + (size_t)q * v->cb + (size_t)k * RAID_BS, v->w[q],
				       RAID_BS);
		*rebuild |= v->verdict[k] == RAID_LV_REBUILD;
		v->any |= v->wmask[k] != 0;
		*doubt |= v->verdict[k] == RAID_LV_UNRESOLVED || v->verdict[k] == RAID_LV_BUSY;
	}
}

/*
 * (K5) A line was judged unresolved or busy: read the row again under its
 * lock, *@changed when a write landed since it was read (then it is judged
 * again).
 */
static int raid_scrub_resolve_reread(struct raid_scrub_rv *v, bool *changed)
{
	const struct raid_geo *g = &v->a->geo;
	unsigned int npos = g->ndata + g->npar;
	int rc;

	pthread_rwlock_wrlock(v->lock);
	rc = raid_scrub_row_read(v->a, v->row, v->again);
	*changed = !rc && memcmp(v->again, v->rd, (size_t)npos * v->cb);
	pthread_rwlock_unlock(v->lock);
	return rc;
}

/* (K2) The row's parity is not trusted (heal.c (H4)): no line is rebuilt from it. */
static void raid_scrub_resolve_distrust(struct raid_scrub_rv *v)
{
	for (uint32_t k = 0; k < v->a->geo.chunk_blocks; k++)
		if (v->verdict[k] == RAID_LV_REBUILD) {
			v->verdict[k] = RAID_LV_UNRESOLVED;
			v->wmask[k] = 0;
		}
}

/*
 * Apply the judgement, the row's lock held exclusively and the row found
 * unchanged (K4): each position to rewrite gets its block, FUA, read back; a
 * member it fails on is noted in v->wfail and written no more (failed once
 * the lock is released: raid_scrub_resolve_members).
 */
static void raid_scrub_resolve_apply(struct raid_scrub_rv *v)
{
	struct raid_array *a = v->a;
	const struct raid_geo *g = &a->geo;
	uint32_t C = g->chunk_blocks;
	unsigned int npos = g->ndata + g->npar;

	for (uint32_t k = 0; k < C; k++)
		for (unsigned int q = 0; q < npos; q++) {
			unsigned int m = raid_layout_member(g, v->row, q);
			uint8_t *src = v->want + (size_t)q * v->cb + (size_t)k * RAID_BS;

			if (!(v->wmask[k] & (1u << q)) || (v->wfail & (1u << m)))
				continue;
			v->wrote = true;
			v->wdev[m] = a->m[m].dev;
			if (blk_rw(a->m[m].dev, BLK_OP_WRITE, v->mblk0 + k, 1, src, BLK_FUA) ||
			    blk_rw(a->m[m].dev, BLK_OP_READ, v->mblk0 + k, 1, v->w[0], 0) ||
			    memcmp(v->w[0], src, RAID_BS)) {
				v->wfail |= 1u << m;
				continue;
			}
			if (v->verdict[k] == RAID_LV_REBUILD) {
				v->corrected_roles[m]++;
				v->rebuilt++;
			}
		}
	if (v->wrote) {
		raid_rcache_drop(a, v->row);  /* its image may hold the damage */
		raid_away_note(a, v->row, 1); /* away.c (A1) */
	}
}

/*
 * Log the judged lines (the first RAID_SCRUB_LOG_LINES one by one, then how
 * many more) and note an unresolved one; nothing when the row could not be
 * read (@rc) or is busy (judged later).
 */
static void raid_scrub_resolve_log(struct raid_scrub_rv *v, int rc)
{
	struct raid_array *a = v->a;
	const struct raid_geo *g = &a->geo;
	uint32_t C = g->chunk_blocks;
	unsigned int npos = g->ndata + g->npar, nlog = 0;
	uint64_t row = v->row;

	for (uint32_t k = 0; k < C && !rc && !v->busy; k++) {
		const char *what = v->repair ? "rewritten" : "not repaired (no --repair)";

		if (v->verdict[k] == RAID_LV_OK)
			continue;
		/* busy without a later look (offline): as unresolved */
		v->unresolved |=
		    v->verdict[k] == RAID_LV_UNRESOLVED || v->verdict[k] == RAID_LV_BUSY;
		if (nlog++ >= RAID_SCRUB_LOG_LINES)
			continue;
		if (v->verdict[k] == RAID_LV_PARITY)
			jg_log(JG_LOG_WARN, "raid",
			       "scrub %s row=%llu line=%u: the data verifies or is free: the parity is wrong: %s",
			       a->dev.name, (unsigned long long)row, k, what);
		else if (v->verdict[k] == RAID_LV_BUSY)
			jg_log(
			    JG_LOG_WARN, "raid",
			    "scrub %s row=%llu line=%u: a write of it stayed in flight: not judged",
			    a->dev.name, (unsigned long long)row, k);
		else if (v->verdict[k] == RAID_LV_UNRESOLVED)
			jg_log(JG_LOG_WARN, "raid",
			       "scrub %s row=%llu line=%u: cannot tell which member is wrong (data without a checksum, or nothing verifies): not repaired",
			       a->dev.name, (unsigned long long)row, k);
		else
			for (unsigned int q = 0; q < npos; q++)
				if (v->wmask[k] & (1u << q)) {
					unsigned int m = raid_layout_member(g, row, q);

					jg_log(JG_LOG_WARN, "raid",
					       "scrub %s row=%llu line=%u: dev=%s block=%llu (%s) is wrong: its reconstruction from the row verifies: %s",
					       a->dev.name, (unsigned long long)row, k, a->m[m].name,
					       (unsigned long long)(v->mblk0 + k),
					       q < g->ndata ? "data" : q == RAID_POS_P(g) ? "P" : "Q",
					       (v->wfail & (1u << m)) ? "rewrite failed" : what);
				}
	}
	if (nlog > RAID_SCRUB_LOG_LINES)
		jg_log(JG_LOG_WARN, "raid", "scrub %s row=%llu: %u more mismatched lines", a->dev.name,
		       (unsigned long long)row, nlog - RAID_SCRUB_LOG_LINES);
}

/*
 * With no lock held: fail each member a rewrite failed on (only while it
 * holds the device written, rebuild.c (R6)); count each other one's rebuilt
 * blocks as corrected read errors, with their event (K2).
 */
static void raid_scrub_resolve_members(struct raid_scrub_rv *v)
{
	struct raid_array *a = v->a;

	for (unsigned int m = 0; m < a->geo.n; m++) {
		uint64_t corrected;

		if (v->wfail & (1u << m)) {
			jg_log(JG_LOG_ERR, "raid",
			       "dev=%s scrub row=%llu: rewrite of a block failed", a->m[m].name,
			       (unsigned long long)v->row);
			/* no lock held: only while it holds the device written (rebuild.c (R6)) */
			(void)raid_member_fail_dev(a, m, v->wdev[m], -EIO);
			continue;
		}
		if (!v->corrected_roles[m])
			continue;
		pthread_mutex_lock(&a->stats_lock);
		a->m[m].rd_corrected += v->corrected_roles[m];
		corrected = a->m[m].rd_corrected;
		pthread_mutex_unlock(&a->stats_lock);
		raid_event_detail(a, RAID_EV_READ_ERROR_CORRECTED, m, -1, 0,
				  "cause=scrub-checksum row=%llu blocks=%u corrected=%llu",
				  (unsigned long long)v->row, v->corrected_roles[m],
				  (unsigned long long)corrected);
	}
}

/* Add the row's outcome to v->res: a busy row handed to the online scrub (K5), or its counts. */
static void raid_scrub_resolve_account(struct raid_scrub_rv *v, int rc)
{
	struct raid_scrub_res *res = v->res;

	res->row_busy = !rc && v->busy;
	if (res->row_busy) {
		struct raid_scrub_counts *out = res->busy;

		jg_log(JG_LOG_DEBUG, "raid", "scrub %s row=%llu: a write in flight: judged later",
		       v->a->dev.name, (unsigned long long)v->row);
		if (out->busy < RAID_SCRUB_BUSY_ROWS)
			out->busy_rows[out->busy] = v->row;
		out->busy++;
	}
	if (!rc) {
		res->repaired += v->wrote && !v->wfail;
		res->rebuilt += v->rebuilt;
		res->unresolved += v->unresolved;
	}
}

/*
 * Judge (and with @repair mend) the mismatched lines of @row (K1)-(K4): read
 * the row under its lock, judge it with none held, read it again when a line
 * is in doubt (K5), and apply the judgement under the lock only to the row as
 * judged; then log, act on failed rewrites and count, with no lock held.
 */
static int raid_scrub_resolve(struct raid_array *a, uint64_t row, bool repair,
			      struct raid_scrub_res *res)
{
	struct raid_scrub_rv v = {.a = a, .row = row, .repair = repair, .res = res};
	const struct raid_geo *g = &a->geo;
	unsigned int npos = g->ndata + g->npar;
	int rc = raid_scrub_resolve_alloc(&v);

	if (rc)
		return rc;
	for (unsigned int attempt = 0;; attempt++) {
		bool rebuild = false, doubt = false, changed;

		pthread_rwlock_wrlock(v.lock);
		rc = raid_scrub_row_read(a, row, v.rd);
		pthread_rwlock_unlock(v.lock);
		if (rc)
			break;
		raid_scrub_resolve_judge(&v, &rebuild, &doubt);
		if (doubt && attempt + 1 < RAID_SCRUB_TRIES) { /* (K5) a write landed since? */
			rc = raid_scrub_resolve_reread(&v, &changed);
			if (rc)
				break;
			if (changed)
				continue;
		}
		for (uint32_t k = 0; k < g->chunk_blocks && res->busy; k++)
			v.busy |= v.verdict[k] == RAID_LV_BUSY;
		if (v.busy) /* (K5) nothing applied: the whole row is looked at again later */
			break;
		if (!v.repair || !v.any)
			break;
		/* (K2) needs trusted parity */
		if (rebuild && raid_heal_trusted(a, row, "scrub rebuild"))
			raid_scrub_resolve_distrust(&v);
		pthread_rwlock_wrlock(v.lock); /* (K4) */
		rc = raid_scrub_row_read(a, row, v.again);
		if (!rc && memcmp(v.again, v.rd, (size_t)npos * v.cb)) {
			pthread_rwlock_unlock(v.lock);
			if (attempt + 1 < RAID_SCRUB_TRIES)
				continue;
			jg_log(JG_LOG_WARN, "raid",
			       "scrub %s row=%llu: changed under each of %u judgements: left as is",
			       a->dev.name, (unsigned long long)row, RAID_SCRUB_TRIES);
			v.repair = false;
			v.unresolved = true;
			break;
		}
		if (!rc)
			raid_scrub_resolve_apply(&v);
		pthread_rwlock_unlock(v.lock);
		break;
	}
	raid_scrub_resolve_log(&v, rc);
	raid_scrub_resolve_members(&v);
	raid_scrub_resolve_account(&v, rc);
	free(v.mem);
	free(v.wmask);
	free(v.verdict);
	return rc;
}

struct raid_scrub_col { /* the mismatched rows of a pass */
	uint64_t *rows;
	size_t n, cap;
	bool nomem;
};

static void raid_scrub_col_row(void *ctx, uint64_t row)
{
	struct raid_scrub_col *c = ctx;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		uint64_t *r = realloc(c->rows, cap * sizeof(*r));

		if (!r) {
			c->nomem = true;
			return;
		}
		c->rows = r;
		c->cap = cap;
	}
	c->rows[c->n++] = row;
}

/*
 * Scrub rows [@first, @first + @count) below the sync mark: the row check of
 * repair.c, then with a verifier each mismatched row judged (K1)-(K4); @fn told
 * each mismatched row after that.
 */
static int raid_scrub_judged(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
			     raid_row_fn fn, void *ctx, uint64_t *checked, uint64_t *mism,
			     struct raid_scrub_res *res)
{
	struct raid_scrub_col col = {0};
	uint64_t none = 0;
	int rc;

	if (!a->verify)
		return raid_rows_scrub_fn(a, first, count, repair, fn, ctx, checked, mism,
					  &res->repaired);
	rc = raid_rows_scrub_fn(a, first, count, false, raid_scrub_col_row, &col, checked, mism,
				&none);
	if (!rc && col.nomem)
		rc = -ENOMEM;
	for (size_t i = 0; i < col.n && !rc; i++) {
		rc = raid_scrub_resolve(a, col.rows[i], repair, res);
		if (!rc && res->row_busy) {
			(*mism)--; /* (K5) not a finding yet: the caller looks again */
			continue;
		}
		if (fn)
			fn(ctx, col.rows[i]);
	}
	free(col.rows);
	return rc;
}

int64_t raid_scrub(struct raid_array *a, bool repair, raid_progress_fn fn, void *ctx,
		   struct raid_resync_report *rep)
{
	const struct raid_geo *g = &a->geo;
	uint64_t checked = 0, mism = 0, synced = 0, step = RAID_GROUP_MAX_ROWS;
	uint64_t end, unsynced;
	struct raid_scrub_res res = {0};
	double t0 = jg_now_seconds();
	int rc = 0;

	if (raid_missing_read(a)) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "scrub %s: the array is degraded; parity cannot be checked without every member (rebuild first)",
		    a->dev.name);
		return -EINVAL;
	}
	if (repair && a->readonly)
		return -EROFS;
	jg_mutex_lock(&a->sb_lock);
	if (a->sb_flags & RAID_SB_FLAG_JNL_PENDING)
		jg_log(
		    JG_LOG_WARN, "raid",
		    "scrub %s: the filesystem journal has not been replayed (jnl-pending): mismatches may be expected there",
		    a->dev.name);
	jg_mutex_unlock(&a->sb_lock);
	end = repair ? g->rows : __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	if (end < g->rows)
		jg_log(
		    JG_LOG_WARN, "raid",
		    "scrub %s: the initial sync has reached row %llu of %llu: the rows past it are not checked (scrub --repair syncs them)",
		    a->dev.name, (unsigned long long)end, (unsigned long long)g->rows);
	unsynced = __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	for (uint64_t r = 0, cnt; r < end; r += cnt) {
		cnt = end - r < step ? end - r : step;
		if (r < unsynced && r + cnt > unsynced)
			cnt = unsynced - r;

		if (r >= unsynced) /* the initial sync's rows, not mismatches */
			rc = raid_rows_run(a, r, cnt, RAID_ROWS_CHECK, &checked, &synced);
		else
			rc = raid_scrub_judged(a, r, cnt, repair, NULL, NULL, &checked, &mism, &res);
		if (rc)
			break;
		if (fn && fn(ctx, r + cnt, end)) {
			rc = -ECANCELED;
			break;
		}
	}
	if (!rc && unsynced < g->rows && end == g->rows)
		rc = raid_sync_mark(a, g->rows);
	raid_stats_add_resync(a, checked, res.repaired, 0);
	if (rep) {
		rep->rows_checked = checked;
		rep->rows_repaired = res.repaired;
		rep->blocks_rebuilt = res.rebuilt;
		rep->rows_unresolved = res.unresolved;
		rep->seconds = jg_now_seconds() - t0;
	}
	jg_log(JG_LOG_INFO, "raid",
	       "scrub %s rows_checked=%llu mismatches=%llu rows_repaired=%llu blocks_rebuilt=%llu rows_unresolved=%llu checksums=%s seconds=%.3f rc=%d",
	       a->dev.name, (unsigned long long)checked, (unsigned long long)mism,
	       (unsigned long long)res.repaired, (unsigned long long)res.rebuilt,
	       (unsigned long long)res.unresolved, a->verify ? "yes" : "no",
	       jg_now_seconds() - t0, rc);
	return rc ? rc : (int64_t)mism;
}

/* ------------------------------------------------------------ online scrub */

int raid_scrub_rows(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
		    raid_row_fn fn, void *ctx, struct raid_scrub_counts *out)
{
	uint64_t checked = 0, mism = 0, synced = 0, mark, n;
	struct raid_scrub_res res = {.busy = out};
	int rc = 0;

	if (first > a->geo.rows || count > a->geo.rows - first)
		return -EINVAL;
	if (raid_missing_read(a))
		return -EAGAIN; /* degraded: nothing to compare; the caller says so */
	if (repair && a->readonly)
		return -EROFS;
	/* rows past the initial sync's mark never matched: no mismatch there (sync.c) */
	mark = __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	n = first >= mark ? 0 : mark - first < count ? mark - first : count;
	if (n)
		rc = raid_scrub_judged(a, first, n, repair, fn, ctx, &checked, &mism, &res);
	if (!rc && n < count) {
		out->unsynced += count - n;
		if (repair)
			rc = raid_rows_run(a, first + n, count - n, RAID_ROWS_CHECK, &checked,
					   &synced);
	}
	raid_stats_add_resync(a, checked, res.repaired + synced, 0);
	out->rows_checked += checked;
	out->mismatches += mism;
	out->repaired += res.repaired;
	out->rebuilt += res.rebuilt;
	out->unresolved += res.unresolved;
	return rc;
}

int raid_scrub_mark(struct raid_array *a, bool running, bool repair, uint64_t row,
		    uint64_t mismatches)
{
	int rc;

	if (a->readonly)
		return -EROFS;
	jg_mutex_lock(&a->sb_lock);
	a->scrub_flags = running ? RAID_SCRUB_RUNNING | (repair ? RAID_SCRUB_REPAIR : 0) : 0;
	a->scrub_rows = running ? row : 0;
	a->scrub_mismatches = running ? mismatches : 0;
	rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}
