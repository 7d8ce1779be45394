// SPDX-License-Identifier: MIT
/*
 * src/raid/scrub.c - read every row, count rows whose parity does not match the
 * data (MD's mismatch_cnt), optionally rewrite their parity. The comparison is
 * the row check of stripe.c (RAID_GRP_SCRUB) under the row locks, so the array
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

/* Judge (and with @repair mend) the mismatched lines of @row (K1)-(K4). */
static int raid_scrub_resolve(struct raid_array *a, uint64_t row, bool repair,
			      struct raid_scrub_res *res)
{
	const struct raid_geo *g = &a->geo;
	uint32_t C = g->chunk_blocks;
	unsigned int npos = g->ndata + g->npar, nlog = 0;
	size_t cb = (size_t)C * RAID_BS;
	uint8_t *mem, *rd, *want, *again, *w[RAID_MAX_MEMBERS], *line[RAID_MAX_MEMBERS];
	uint8_t *verdict;
	uint32_t *wmask, wfail = 0, corrected_roles[RAID_MAX_MEMBERS] = {0};
	struct blk_dev *wdev[RAID_MAX_MEMBERS] = {0}; /* what each was written to (R6) */
	uint64_t mblk0 = g->data_offset + row * C, rebuilt = 0;
	pthread_rwlock_t *lock = &a->row_lock[row % RAID_LOCK_BUCKETS];
	bool unresolved = false, wrote = false, any = false, busy = false;
	int rc = 0;

	mem = jg_alloc_blocks(3 * (size_t)npos * C + npos);
	wmask = calloc(C, sizeof(*wmask));
	verdict = calloc(C, 1);
	if (!mem || !wmask || !verdict) {
		free(mem);
		free(wmask);
		free(verdict);
		return -ENOMEM;
	}
	rd = mem;
	want = rd + (size_t)npos * cb;
	again = want + (size_t)npos * cb;
	for (unsigned int q = 0; q < npos; q++)
		w[q] = again + (size_t)npos * cb + (size_t)q * RAID_BS;
	for (unsigned int attempt = 0;; attempt++) {
		bool rebuild = false, doubt = false;

		pthread_rwlock_wrlock(lock);
		rc = raid_scrub_row_read(a, row, rd);
		pthread_rwlock_unlock(lock);
		if (rc)
			break;
		any = false;
		for (uint32_t k = 0; k < C; k++) { /* (K4) no lock held: the verifier may read */
			bool mism = false;

			for (unsigned int q = 0; q < npos; q++)
				line[q] = rd + (size_t)q * cb + (size_t)k * RAID_BS;
			raid_parity_gen(g->ndata, g->npar, RAID_BS, line, w[RAID_POS_P(g)],
					g->npar == 2 ? w[RAID_POS_Q(g)] : NULL);
			for (unsigned int q = g->ndata; q < npos; q++)
				mism |= memcmp(w[q], line[q], RAID_BS) != 0;
			wmask[k] = 0;
			verdict[k] = RAID_LV_OK;
			if (!mism)
				continue;
			verdict[k] = (uint8_t)raid_scrub_judge(a, row, k, line, w, &wmask[k]);
			for (unsigned int q = 0; q < npos; q++)
				if (wmask[k] & (1u << q))
					memcpy(want + (size_t)q * cb + (size_t)k * RAID_BS, w[q],
					       RAID_BS);
			rebuild |= verdict[k] == RAID_LV_REBUILD;
			any |= wmask[k] != 0;
			doubt |= verdict[k] == RAID_LV_UNRESOLVED || verdict[k] == RAID_LV_BUSY;
		}
		if (doubt && attempt + 1 < RAID_SCRUB_TRIES) { /* (K5) a write landed since? */
			bool changed;

			pthread_rwlock_wrlock(lock);
			rc = raid_scrub_row_read(a, row, again);
			changed = !rc && memcmp(again, rd, (size_t)npos * cb);
			pthread_rwlock_unlock(lock);
			if (rc)
				break;
			if (changed)
				continue;
		}
		for (uint32_t k = 0; k < C && res->busy; k++)
			busy |= verdict[k] == RAID_LV_BUSY;
		if (busy) /* (K5) nothing applied: the whole row is looked at again later */
			break;
		if (!repair || !any)
			break;
		/* (K2) needs trusted parity */
		if (rebuild && raid_heal_trusted(a, row, "scrub rebuild"))
			for (uint32_t k = 0; k < C; k++)
				if (verdict[k] == RAID_LV_REBUILD) {
					verdict[k] = RAID_LV_UNRESOLVED;
					wmask[k] = 0;
				}
		pthread_rwlock_wrlock(lock); /* (K4) */
		rc = raid_scrub_row_read(a, row, again);
		if (!rc && memcmp(again, rd, (size_t)npos * cb)) {
			pthread_rwlock_unlock(lock);
			if (attempt + 1 < RAID_SCRUB_TRIES)
				continue;
			jg_log(JG_LOG_WARN, "raid",
			       "scrub %s row=%llu: changed under each of %u judgements: left as is",
			       a->dev.name, (unsigned long long)row, RAID_SCRUB_TRIES);
			repair = false;
			unresolved = true;
			break;
		}
		for (uint32_t k = 0; k < C && !rc; k++)
			for (unsigned int q = 0; q < npos; q++) {
				unsigned int m = raid_layout_member(g, row, q);
				uint8_t *src = want + (size_t)q * cb + (size_t)k * RAID_BS;

				if (!(wmask[k] & (1u << q)) || (wfail & (1u << m)))
					continue;
				wrote = true;
				wdev[m] = a->m[m].dev;
				if (blk_rw(a->m[m].dev, BLK_OP_WRITE, mblk0 + k, 1, src, BLK_FUA) ||
				    blk_rw(a->m[m].dev, BLK_OP_READ, mblk0 + k, 1, w[0], 0) ||
				    memcmp(w[0], src, RAID_BS)) {
					wfail |= 1u << m;
					continue;
				}
				if (verdict[k] == RAID_LV_REBUILD) {
					corrected_roles[m]++;
					rebuilt++;
				}
			}
		if (wrote) {
			raid_rcache_drop(a, row); /* its image may hold the damage */
			raid_away_note(a, row, 1); /* away.c (A1) */
		}
		pthread_rwlock_unlock(lock);
		break;
	}
	for (uint32_t k = 0; k < C && !rc && !busy; k++) {
		const char *what = repair ? "rewritten" : "not repaired (no --repair)";

		if (verdict[k] == RAID_LV_OK)
			continue;
		/* busy without a later look (offline): as unresolved */
		unresolved |= verdict[k] == RAID_LV_UNRESOLVED || verdict[k] == RAID_LV_BUSY;
		if (nlog++ >= RAID_SCRUB_LOG_LINES)
			continue;
		if (verdict[k] == RAID_LV_PARITY)
			jg_log(JG_LOG_WARN, "raid",
			       "scrub %s row=%llu line=%u: the data verifies or is free: the parity is wrong: %s",
			       a->dev.name, (unsigned long long)row, k, what);
		else if (verdict[k] == RAID_LV_BUSY)
			jg_log(
			    JG_LOG_WARN, "raid",
			    "scrub %s row=%llu line=%u: a write of it stayed in flight: not judged",
			    a->dev.name, (unsigned long long)row, k);
		else if (verdict[k] == RAID_LV_UNRESOLVED)
			jg_log(JG_LOG_WARN, "raid",
			       "scrub %s row=%llu line=%u: cannot tell which member is wrong (data without a checksum, or nothing verifies): not repaired",
			       a->dev.name, (unsigned long long)row, k);
		else
			for (unsigned int q = 0; q < npos; q++)
				if (wmask[k] & (1u << q)) {
					unsigned int m = raid_layout_member(g, row, q);

					jg_log(JG_LOG_WARN, "raid",
					       "scrub %s row=%llu line=%u: dev=%s block=%llu (%s) is wrong: its reconstruction from the row verifies: %s",
					       a->dev.name, (unsigned long long)row, k, a->m[m].name,
					       (unsigned long long)(mblk0 + k),
					       q < g->ndata ? "data" : q == RAID_POS_P(g) ? "P" : "Q",
					       (wfail & (1u << m)) ? "rewrite failed" : what);
				}
	}
	if (nlog > RAID_SCRUB_LOG_LINES)
		jg_log(JG_LOG_WARN, "raid", "scrub %s row=%llu: %u more mismatched lines", a->dev.name,
		       (unsigned long long)row, nlog - RAID_SCRUB_LOG_LINES);
	for (unsigned int m = 0; m < g->n; m++) {
		uint64_t corrected;

		if (wfail & (1u << m)) {
			jg_log(JG_LOG_ERR, "raid", "dev=%s scrub row=%llu: rewrite of a block failed",
			       a->m[m].name, (unsigned long long)row);
			/* no lock held: only while it holds the device written (rebuild.c (R6)) */
			(void)raid_member_fail_dev(a, m, wdev[m], -EIO);
			continue;
		}
		if (!corrected_roles[m])
			continue;
		pthread_mutex_lock(&a->stats_lock);
		a->m[m].rd_corrected += corrected_roles[m];
		corrected = a->m[m].rd_corrected;
		pthread_mutex_unlock(&a->stats_lock);
		raid_event_detail(a, RAID_EV_READ_ERROR_CORRECTED, m, -1, 0,
				  "cause=scrub-checksum row=%llu blocks=%u corrected=%llu",
				  (unsigned long long)row, corrected_roles[m],
				  (unsigned long long)corrected);
	}
	res->row_busy = !rc && busy;
	if (res->row_busy) {
		struct raid_scrub_counts *out = res->busy;

		jg_log(JG_LOG_DEBUG, "raid", "scrub %s row=%llu: a write in flight: judged later",
		       a->dev.name, (unsigned long long)row);
		if (out->busy < RAID_SCRUB_BUSY_ROWS)
			out->busy_rows[out->busy] = row;
		out->busy++;
	}
	if (!rc) {
		res->repaired += wrote && !wfail;
		res->rebuilt += rebuilt;
		res->unresolved += unresolved;
	}
	free(mem);
	free(wmask);
	free(verdict);
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
 * stripe.c, then with a verifier each mismatched row judged (K1)-(K4); @fn told
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
