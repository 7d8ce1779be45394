// SPDX-License-Identifier: MIT
/*
 * src/raid/stripe.c - the array's I/O path: the struct blk_dev of raid_array_dev().
 *
 * The path is five files. This one holds the batch and its groups
 * (raid_stripe_submit, raid_grp_run), the row locks, the member requests and
 * their failures (raid_mr_submit, raid_members_flush), and states the rules
 * (W1)-(W7) below, which the others cite:
 *   plan.c    each row's path (fast or row path), its lines, the scratch;
 *   read.c    phase A, the member reads;
 *   write.c   the RMW/RCW choice, fast-path parity, phase C, the row cache update;
 *   repair.c  the row path's reconstruct and check, the read error repair, and
 *             the whole-row passes (resync check, scrub, rebuild).
 * Kept in this file: (W1) row locks, (W2) bitmap bits before member writes,
 * (W3) a row resynced once per recovery, (W4) which parity writes get FUA,
 * (W5) a failed user write kept dirty, super.c (S12) failures durable before a
 * write completes, rebuild.c (R6) only the device that failed is failed,
 * away.c (A1) (A2) member writes and flushes noted.
 *
 * A batch (one blk_submit on the array) is cut into per-row segments, sorted by
 * row and handled in *groups* of rows (at most RAID_GROUP_MAX_ROWS rows and
 * RAID_GROUP_MAX_BYTES of scratch). For each group:
 *   1. bitmap: the regions the group writes get their bits set durably, in one
 *      bitmap write round (bitmap.c (B1));
 *   2. row locks: hashed buckets taken in ascending order (shared for plain
 *      reads of a healthy array, exclusive for anything that computes parity);
 *   3. phase A: every member read the group needs -- user reads, RMW/RCW
 *      pre-reads, whole chunks for the row path -- in one blk_submit_multi();
 *      a row in the row cache (rcache.c) needs no pre-read, a row a BLK_APPEND
 *      write brings into it is read whole once;
 *   4. parity: ISA-L, per 4 KiB line for the fast path, per chunk for the row path;
 *   5. phase C: every member write of the group in one blk_submit_multi(), each
 *      with FUA when a request of the group asked for it (data and parity
 *      durable on completion, with no flush round after them; but see (W4));
 *   6. the row cache images take the new contents (or are dropped when
 *      anything failed); an append past the middle of its row has the next row
 *      read ahead (rcache.c (H3)).
 * Contiguous blocks of one member in one row go in one request.
 *
 * Fast path (every member readable, no resync asked): per line k (the k-th block
 * of every chunk of the row) a write covering all data blocks computes parity
 * with no read; a partial line does read-modify-write (read old data and parity)
 * or reconstruct-write (read the other data), whichever reads fewer blocks (MD's
 * rule; a tie goes to reconstruct-write).
 *
 * Row path (a member missing or rebuilding, or the row must be resynced): read
 * every readable chunk of the row, reconstruct what is missing, check parity when
 * asked (resync: count and rewrite a mismatch), merge the writes, recompute the
 * parity, write what changed -- and whole chunks to a member being rebuilt. A
 * user row that needs no resync and has no member being rebuilt works on the
 * lines its requests touch only.
 *
 * Scratch: the fast path holds only the written line range of a partial row;
 * whole-row passes (resync, scrub, rebuild: raid_rows_run) lay their group out
 * member by member, so each member's part of a group is one request.
 *
 * Failure (MD's rule): a member write that fails, with any error (-EIO, or
 * -ENOSPC / -EDQUOT from a sparse member file), marks that member failed
 * (super.c, superblocks updated) and the group is retried on the degraded array.
 * A member read that fails with -EIO is a latent sector error first: the block
 * is reconstructed from the rest of its row, rewritten and read back
 * (raid_read_repair); the member is failed only when that rewrite does not take
 * or it has more corrected errors than max_read_errors. A block nothing can
 * reconstruct is lost alone (-EIO to the caller, the member stays). When the
 * array cannot lose the member, the write fails upward and its rows stay
 * recorded dirty (W5).
 *
 * Invariants:
 * (W1) Writes to a row happen only under its exclusive row lock, so parity is
 *      computed from data nobody else changes meanwhile.
 * (W2) No member write of a group is issued before its bitmap bits are durable.
 * (W3) A row flagged for resync (BLK_SYNCRAID, resync-all) is made consistent,
 *      in the lines the request touches, before the request's data is returned
 *      or merged; a row resynced whole is remembered so it is resynced once per
 *      recovery.
 * (W4) A FUA write flagged BLK_FS_RAIDSYNC makes its data durable on completion;
 *      its parity is written at once but made durable by the next flush. The
 *      flag says the filesystem resyncs the row after a crash (the journal
 *      resyncs the log written since its last flush, src/journal/commit.c
 *      (C6)), and until a crash the parity on the members is right. On an
 *      array with a member missing or being rebuilt the parity is the only
 *      copy of a block, and gets FUA too.
 * (W5) A user write that fails upward may have reached some members and not
 *      others: before it returns, the bitmap bits of every region it wrote are
 *      set durably (BLK_FS_RAIDSYNC or not) and the array is kept dirty with no
 *      bit cleared until it is assembled again (bitmap.c (B4)), so the next
 *      assembly resyncs those rows.
 * (W6) A row at or past the initial sync's mark (sync.c (Y1)) may hold parity
 *      that never matched its data, so a partial write there reconstructs
 *      (RCW: parity from every data chunk's line, read or written), never
 *      read-modify-writes: the lines it writes match their parity after it,
 *      whatever they held. The row path always recomputes parity.
 * (W7) A member read error is repaired from the rest of the row only where the
 *      row's parity is trusted to be that of its data: the checks of heal.c
 *      (H4) (array dirty and not resynced, journal not replayed, row at risk).
 *      Elsewhere a stale parity would rebuild a wrong (older) block, handed
 *      back as good and written over the member: the read fails with -EIO
 *      instead, nothing is written, the member stays (as a block nothing can
 *      give back). A parity block rebuilt from every data block of its line
 *      uses no parity: it is what a resync would write, and is repaired.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_i.h"

/* ------------------------------------------------------------ row locks */

static int raid_u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

static unsigned int raid_grp_buckets(struct raid_grp *g, uint32_t *b)
{
	unsigned int nb = 0, k = 0;

	for (unsigned int i = 0; i < g->nrows; i++)
		b[nb++] = (uint32_t)(g->rows[i].row % RAID_LOCK_BUCKETS);
	qsort(b, nb, sizeof(*b), raid_u32_cmp);
	for (unsigned int i = 0; i < nb; i++)
		if (!k || b[k - 1] != b[i])
			b[k++] = b[i];
	return k;
}

static void raid_grp_lock(struct raid_grp *g, const uint32_t *b, unsigned int nb, bool excl)
{
	/* ascending bucket order: no deadlock between groups */
	for (unsigned int i = 0; i < nb; i++) {
		if (excl)
			pthread_rwlock_wrlock(&g->a->row_lock[b[i]]);
		else
			pthread_rwlock_rdlock(&g->a->row_lock[b[i]]);
	}
}

static void raid_grp_unlock(struct raid_grp *g, const uint32_t *b, unsigned int nb)
{
	for (unsigned int i = nb; i-- > 0;)
		pthread_rwlock_unlock(&g->a->row_lock[b[i]]);
}

/* -------------------------------------------------------- member requests */

int raid_mr_add(struct raid_grp *g, uint8_t op, unsigned int role, uint64_t row, uint32_t k,
		uint32_t nblocks, uint8_t *buf)
{
	const struct raid_geo *geo = &g->a->geo;

	if (g->nmr == g->capmr) {
		unsigned int cap = g->capmr ? 2 * g->capmr : 64;
		struct blk_req *mr = realloc(g->mr, cap * sizeof(*mr));
		unsigned int *ro;

		if (!mr)
			return -ENOMEM;
		g->mr = mr;
		ro = realloc(g->mrole, cap * sizeof(*ro));
		if (!ro)
			return -ENOMEM;
		g->mrole = ro;
		g->capmr = cap;
	}
	g->mr[g->nmr] = (struct blk_req){.op = op,
					 .blkno = geo->data_offset + row * geo->chunk_blocks + k,
					 .nblocks = nblocks,
					 .buf = buf,
					 .flags = op == BLK_OP_WRITE && g->fua &&
							  (g->parity_fua ||
							   raid_layout_pos(geo, row, role) < geo->ndata)
						      ? BLK_FUA
						      : 0,
					 .dev = g->a->m[role].dev};
	g->mrole[g->nmr] = role;
	g->nmr++;
	return 0;
}

/*
 * Reads or writes (@op) of position @q of row @r at the lines where sel[k],
 * coalesced into runs, to or from @base, which holds lines from @base_line.
 */
int raid_line_runs(struct raid_grp *g, struct raid_row *r, unsigned int q, enum blk_op op,
		   uint8_t *base, uint32_t base_line, const bool *sel)
{
	const struct raid_geo *geo = &g->a->geo;
	uint32_t C = geo->chunk_blocks;
	unsigned int role = raid_layout_member(geo, r->row, q);
	int rc = 0;

	for (uint32_t k = 0; k < C && !rc;) {
		uint32_t e;

		if (!sel[k]) {
			k++;
			continue;
		}
		for (e = k; e < C && sel[e]; e++)
			;
		rc = raid_mr_add(g, op, role, r->row, k, e - k,
				 base + (size_t)(k - base_line) * RAID_BS);
		k = e;
	}
	return rc;
}

/*
 * Submit the member requests, grouped by member (blk_submit_multi keeps one
 * device's requests together when it falls back to per-device submits). A read
 * that fails with -EIO is repaired block by block (raid_read_repair). Returns 0,
 * or -EIO with *failed the roles to fail: a write that failed with any error, a
 * read raid_read_repair gave up on; or -EIO alone (a block lost for good), or
 * another errno (a read's).
 */
static int raid_mr_submit(struct raid_grp *g, uint32_t *failed)
{
	struct blk_req *sorted;
	unsigned int cnt[RAID_MAX_MEMBERS + 1] = {0}, pos[RAID_MAX_MEMBERS];
	unsigned int *srole;
	int rc, other = 0;

	*failed = 0;
	if (!g->nmr)
		return 0;
	sorted = malloc(g->nmr * sizeof(*sorted));
	srole = malloc(g->nmr * sizeof(*srole));
	if (!sorted || !srole) {
		free(sorted);
		free(srole);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < g->nmr; i++)
		cnt[g->mrole[i] + 1]++;
	for (unsigned int m = 0; m < RAID_MAX_MEMBERS; m++) {
		pos[m] = cnt[m];
		cnt[m + 1] += cnt[m];
	}
	for (unsigned int i = 0; i < g->nmr; i++) {
		unsigned int at = pos[g->mrole[i]]++;

		sorted[at] = g->mr[i];
		srole[at] = g->mrole[i];
	}
	rc = blk_submit_multi(sorted, g->nmr);
	raid_away_note_reqs(g->a, sorted, g->nmr); /* away.c (A1) */
	if (rc) {
		for (unsigned int i = 0; i < g->nmr; i++) {
			bool fail = false;
			int rr;

			if (!sorted[i].result)
				continue;
			if (sorted[i].op == BLK_OP_WRITE) {
				*failed |= 1u << srole[i];
				continue;
			}
			if (sorted[i].result != -EIO) {
				other = other ? other : sorted[i].result;
				continue;
			}
			if (*failed & (1u << srole[i]))
				continue; /* failing already: the retry reads around it */
			rr = raid_read_repair(g->a, srole[i], &sorted[i], &fail);
			if (fail)
				*failed |= 1u << srole[i];
			else if (rr)
				other = other ? other : rr;
		}
		rc = other ? other : *failed ? -EIO : 0;
	}
	free(sorted);
	free(srole);
	g->nmr = 0;
	return rc;
}

/*
 * Mark the roles in @failed failed, each only while it holds @devs[role]
 * (rebuild.c (R6); @devs NULL: under the row locks, which keep every role's
 * device); 0 when the array can go on degraded.
 */
static int raid_fail_roles(struct raid_array *a, uint32_t failed, struct blk_dev *const *devs)
{
	int rc = failed ? 0 : -EIO;

	for (unsigned int m = 0; m < a->geo.n; m++)
		if ((failed & (1u << m)) &&
		    raid_member_fail_dev(a, m, devs ? devs[m] : NULL, -EIO))
			rc = -EIO;
	return rc;
}

int raid_members_flush(struct raid_array *a, uint32_t roles)
{
	struct blk_req reqs[RAID_MAX_MEMBERS];
	struct blk_dev *devs[RAID_MAX_MEMBERS] = {0}; /* (R6) no row lock: the flush's own */
	unsigned int role[RAID_MAX_MEMBERS], nr = 0;
	uint32_t wmiss = raid_missing_write(a), failed = 0;
	uint64_t seq;
	int rc;

	for (unsigned int m = 0; m < a->geo.n; m++) {
		if ((wmiss & (1u << m)) || !(roles & (1u << m)))
			continue;
		role[nr] = m;
		devs[m] = a->m[m].dev;
		reqs[nr++] = (struct blk_req){.op = BLK_OP_FLUSH, .dev = devs[m]};
	}
	seq = raid_away_flush_begin(a); /* (A2) */
	rc = blk_submit_multi(reqs, nr);
	for (unsigned int i = 0; i < nr; i++)
		if (!reqs[i].result)
			raid_away_flush_done(a, role[i], seq);
	if (rc) {
		/* a flush that fails lost writes, whatever the error: the member fails */
		for (unsigned int i = 0; i < nr; i++)
			if (reqs[i].result)
				failed |= 1u << role[i];
		if (!failed || raid_fail_roles(a, failed, devs))
			return rc;
	}
	/*
	 * super.c (S12): a member skipped here, or failed by this flush, may hold
	 * in its cache alone writes that completed before it failed. They are
	 * durable for the caller only once its failure is: until then a power cut
	 * leaves it in sync at the old event, its chunks reverted.
	 */
	return raid_fail_durable(a, (wmiss & roles) | failed);
}

/* ----------------------------------------------------------------- group */

int raid_grp_run(struct raid_grp *g)
{
	struct raid_array *a = g->a;
	uint32_t buckets[RAID_GROUP_MAX_ROWS];
	unsigned int nb = raid_grp_buckets(g, buckets);
	bool excl = g->mode != RAID_GRP_USER;
	uint64_t last = 0;
	int rc = 0;

	for (unsigned int i = 0; i < g->nrows && !excl; i++)
		excl = g->rows[i].write || g->rows[i].sync;
	if (raid_missing_read(a))
		excl = true;
	raid_grp_lock(g, buckets, nb, excl); /* (W1) */
	for (unsigned int i = 0; i < g->nrows; i++)
		last = g->rows[i].row > last ? g->rows[i].row : last;
	for (unsigned int attempt = 0; attempt <= a->geo.npar + 1; attempt++) {
		/* a member being rebuilt is read in the rows the rebuild has passed */
		uint32_t rmiss = raid_missing_read_upto(a, last), wmiss = raid_missing_write(a);
		uint32_t failed = 0;
		bool any_slow = false, wrote;

		if ((unsigned int)__builtin_popcount(rmiss) > a->geo.npar) {
			rc = -EIO;
			break;
		}
		g->nmr = 0;
		/* (W4) */
		g->parity_fua = g->fua && (g->fua_strict || rmiss || wmiss);
		rc = raid_grp_plan(g, rmiss, wmiss);
		if (rc)
			break;
		for (unsigned int i = 0; i < g->nrows; i++)
			any_slow |= g->rows[i].row_path;
		if (any_slow && !excl) {
			/* degraded since we looked: redo under exclusive locks */
			raid_grp_cache_done(g, false);
			raid_grp_unlock(g, buckets, nb);
			excl = true;
			raid_grp_lock(g, buckets, nb, excl);
			attempt--;
			continue;
		}
		for (unsigned int i = 0; i < g->nrows; i++)
			g->rows[i].checked = g->rows[i].mismatch = false;
		rc = raid_grp_reads(g, rmiss);
		if (!rc)
			rc = raid_mr_submit(g, &failed);
		if (rc == -EIO && failed && !raid_fail_roles(a, failed, NULL)) {
			raid_grp_cache_done(g, false);
			continue;
		}
		if (rc)
			break;
		for (unsigned int i = 0; i < g->nrows && !rc; i++) {
			struct raid_row *r = &g->rows[i];

			if (r->row_path)
				rc = raid_row_slow_compute(g, r, rmiss);
			else if (r->write)
				raid_row_fast_parity(g, r);
		}
		if (rc)
			break;
		rc = raid_grp_writes(g, rmiss, wmiss);
		wrote = g->nmr != 0;
		if (!rc)
			rc = raid_mr_submit(g, &failed);
		if (rc == -EIO && failed && !raid_fail_roles(a, failed, NULL)) {
			raid_grp_cache_done(g, false);
			continue;
		}
		/* (S12) written without members whose failure must be durable first */
		if (!rc && wrote)
			rc = raid_fail_durable(a, wmiss);
		break;
	}
	raid_grp_cache_done(g, rc == 0);
	raid_grp_unlock(g, buckets, nb);
	if (rc)
		return rc;
	for (unsigned int i = 0; i < g->nrows; i++) {
		struct raid_row *r = &g->rows[i];

		g->checked += r->checked;
		g->mismatched += r->mismatch;
		if (r->mismatch && g->mism_fn)
			g->mism_fn(g->mism_ctx, r->row);
		g->repaired += raid_row_fix(g, r);
		if (r->sync) {
			/* (W3) remembered only when every line was resynced */
			if (r->l0 == 0 && r->nl == a->geo.chunk_blocks)
				raid_sync_row_done(a, r->row);
			g->syncraid++;
		}
	}
	return 0;
}

void raid_scratch_count(struct raid_array *a, int64_t delta)
{
	uint64_t n = __atomic_add_fetch(&a->scratch_bytes, (uint64_t)delta, __ATOMIC_RELAXED);
	uint64_t peak = __atomic_load_n(&a->scratch_peak, __ATOMIC_RELAXED);

	while (delta > 0 && n > peak &&
	       !__atomic_compare_exchange_n(&a->scratch_peak, &peak, n, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

void raid_grp_free(struct raid_grp *g)
{
	struct raid_array *a = g->a;
	size_t drop = g->arena_bytes; /* the size of what is freed below */

	/* the larger scratch is the one worth keeping */
	pthread_mutex_lock(&a->spare_lock);
	if (g->arena_bytes > a->spare_bytes) {
		uint8_t *old = a->spare_arena;

		drop = a->spare_bytes;
		a->spare_arena = g->arena;
		a->spare_bytes = g->arena_bytes;
		g->arena = old;
	}
	pthread_mutex_unlock(&a->spare_lock);
	raid_scratch_count(a, -(int64_t)drop);
	if (g->arena_counted)
		__atomic_sub_fetch(&a->scratch_calls, 1, __ATOMIC_RELAXED);
	g->arena_counted = false;
	free(g->arena);
	g->arena = NULL;
	g->arena_bytes = 0;
	free(g->mr);
	free(g->mrole);
	free(g->tmp);
	free(g->regions);
}

/* Rows per group: bounded by RAID_GROUP_MAX_ROWS and the worst-case scratch. */
unsigned int raid_grp_max_rows(const struct raid_geo *geo)
{
	size_t per = (geo->ndata + 2 * geo->npar) * raid_chunk_bytes(geo);
	size_t n = RAID_GROUP_MAX_BYTES / per;

	if (n < 1)
		n = 1;
	return n > RAID_GROUP_MAX_ROWS ? RAID_GROUP_MAX_ROWS : (unsigned int)n;
}

uint64_t raid_scratch_call_max(const struct raid_geo *geo)
{
	return (uint64_t)raid_grp_max_rows(geo) * (geo->ndata + 2 * geo->npar) *
	       raid_chunk_bytes(geo);
}

/* -------------------------------------------------- user requests (bdev.c) */

static int raid_seg_cmp(const void *x, const void *y)
{
	const struct raid_seg *a = x, *b = y;

	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	return a->slot < b->slot ? -1 : a->slot > b->slot;
}

static int raid_u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Sort g->regions and drop duplicates. */
static void raid_grp_regions_unique(struct raid_grp *g)
{
	unsigned int k = 0;

	if (!g->nregions)
		return;
	qsort(g->regions, g->nregions, sizeof(*g->regions), raid_u64_cmp);
	for (unsigned int i = 0; i < g->nregions; i++)
		if (!k || g->regions[k - 1] != g->regions[i])
			g->regions[k++] = g->regions[i];
	g->nregions = k;
}

/*
 * (W5) The writes of segs[s0, s1) failed upward with @err: some members may
 * hold them and others not. Record every region they wrote dirty, whatever
 * their flags, and keep the array dirty.
 */
static void raid_grp_write_failed(struct raid_grp *g, unsigned int s0, unsigned int s1, int err)
{
	struct raid_array *a = g->a;
	const struct raid_geo *geo = &a->geo;
	bool wrote = false;

	g->nregions = 0;
	for (unsigned int s = s0; s < s1; s++) {
		const struct raid_seg *sg = &g->segs[s];

		if (!sg->write)
			continue;
		wrote = true;
		if (a->bm_blocks) {
			uint64_t b0 = sg->row * geo->row_blocks + sg->slot;
			uint64_t r0 = b0 / a->bm_region_blocks,
				 r1 = (b0 + sg->nblocks - 1) / a->bm_region_blocks;

			for (uint64_t x = r0; x <= r1; x++)
				g->regions[g->nregions++] = x;
		}
	}
	if (!wrote)
		return;
	raid_grp_regions_unique(g);
	jg_log(JG_LOG_ERR, "raid",
	       "%s rows=%llu..%llu write failed (%s): rows kept dirty for the next assembly",
	       a->dev.name, (unsigned long long)g->segs[s0].row,
	       (unsigned long long)g->segs[s1 - 1].row, strerror(-err));
	raid_bitmap_keep_dirty(a, g->regions, g->nregions);
}

/* Build group rows from segs[s0, s1) (sorted, rows ascending) and run it. */
static int raid_grp_user(struct raid_grp *g, struct raid_seg *segs, unsigned int s0,
			 unsigned int s1, struct blk_req *reqs)
{
	struct raid_array *a = g->a;
	const struct raid_geo *geo = &a->geo;
	bool resync_all;
	unsigned int nrows = 0;
	uint8_t **wsrc = NULL;
	uint8_t *lines = NULL;
	int rc;

	pthread_mutex_lock(&a->sync_lock);
	resync_all = a->resync_all;
	pthread_mutex_unlock(&a->sync_lock);
	g->segs = segs;
	g->fua = g->fua_strict = false;
	g->nregions = 0;
	for (unsigned int s = s0; s < s1; s++) {
		struct raid_seg *sg = &segs[s];
		struct raid_row *r;

		if (!nrows || g->rows[nrows - 1].row != sg->row) {
			r = &g->rows[nrows++];
			memset(r, 0, sizeof(*r));
			r->row = sg->row;
			r->seg0 = s;
		}
		r = &g->rows[nrows - 1];
		r->nseg++;
		r->write |= sg->write;
		r->read |= !sg->write;
		if ((sg->flags & BLK_SYNCRAID) || resync_all)
			r->sync = true;
		if (sg->write && (sg->flags & BLK_FUA)) {
			g->fua = true;
			if (!(sg->flags & BLK_FS_RAIDSYNC))
				g->fua_strict = true;
		}
		if (sg->write && (sg->flags & BLK_APPEND))
			r->append = true;
		if (sg->write && a->bm_blocks) {
			uint64_t b0 = sg->row * geo->row_blocks + sg->slot;
			uint64_t r0 = b0 / a->bm_region_blocks,
				 r1 = (b0 + sg->nblocks - 1) / a->bm_region_blocks;

			for (uint64_t x = r0; x <= r1; x++)
				if (raid_bitmap_tracks(a, x, sg->flags)) /* (B3), (B5) */
					g->regions[g->nregions++] = x;
		}
	}
	g->nrows = nrows;
	for (unsigned int i = 0; i < nrows; i++) {
		struct raid_row *r = &g->rows[i];

		/* (W3) once per recovery */
		if (r->sync && !raid_sync_row_needed(a, r->row))
			r->sync = false;
	}
	wsrc = calloc((size_t)nrows * geo->row_blocks, sizeof(*wsrc));
	lines = calloc((size_t)nrows * geo->chunk_blocks, 1);
	if (!wsrc || !lines) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < nrows; i++) {
		struct raid_row *r = &g->rows[i];

		r->wsrc = wsrc + (size_t)i * geo->row_blocks;
		r->line = lines + (size_t)i * geo->chunk_blocks;
		for (unsigned int s = r->seg0; s < r->seg0 + r->nseg; s++) {
			const struct raid_seg *sg = &segs[s];

			if (!sg->write)
				continue;
			for (uint32_t b = 0; b < sg->nblocks; b++)
				r->wsrc[sg->slot + b] = sg->buf + (size_t)b * RAID_BS;
		}
	}
	/* (W2) bits durable before any member write */
	raid_grp_regions_unique(g);
	rc = raid_bitmap_start(a, g->regions, g->nregions);
	if (rc)
		goto out;
	rc = raid_grp_run(g);
	raid_bitmap_end(a, g->regions, g->nregions);
	if (rc)
		raid_grp_write_failed(g, s0, s1, rc);
out:
	if (rc)
		for (unsigned int s = s0; s < s1; s++)
			if (!reqs[segs[s].req].result)
				reqs[segs[s].req].result = rc;
	free(wsrc);
	free(lines);
	return rc;
}

/*
 * The requests of a batch that raid_array_submit() left to run (reads and writes
 * whose result is 0) cut into row segments and run in row groups; each gets its
 * result. Returns 0, or -ENOMEM when the groups could not start.
 */
int raid_stripe_submit(struct raid_array *a, struct blk_req *reqs, unsigned int n)
{
	const struct raid_geo *geo = &a->geo;
	struct raid_grp g = {.a = a, .mode = RAID_GRP_USER};
	struct raid_seg *segs = NULL;
	unsigned int nseg = 0, cap = 0, maxr = raid_grp_max_rows(geo);
	uint64_t rd = 0, wr = 0, rdb = 0, wrb = 0, syncraid;
	int rc = 0;

	for (unsigned int i = 0; i < n; i++)
		if (reqs[i].op != BLK_OP_FLUSH && !reqs[i].result)
			cap += reqs[i].nblocks / geo->row_blocks + 2;
	segs = calloc(cap ? cap : 1, sizeof(*segs));
	/* a group has at most one row per segment: small I/O, small allocation */
	if (cap && cap < maxr)
		maxr = cap;
	g.rows = calloc(maxr, sizeof(*g.rows));
	g.tmp = jg_alloc_blocks(1);
	if (!segs || !g.rows || !g.tmp) {
		for (unsigned int i = 0; i < n; i++)
			if (!reqs[i].result && reqs[i].op != BLK_OP_FLUSH)
				reqs[i].result = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct blk_req *r = &reqs[i];
		uint64_t b = r->blkno;
		uint32_t left = r->nblocks;
		uint8_t *buf = r->buf;

		if (r->op == BLK_OP_FLUSH || r->result)
			continue;
		while (left) {
			uint64_t row = b / geo->row_blocks;
			uint32_t slot = (uint32_t)(b % geo->row_blocks);
			uint32_t len =
			    geo->row_blocks - slot < left ? geo->row_blocks - slot : left;

			segs[nseg++] = (struct raid_seg){.row = row,
							 .slot = slot,
							 .nblocks = len,
							 .buf = buf,
							 .req = i,
							 .write = r->op == BLK_OP_WRITE,
							 .flags = r->flags};
			b += len;
			left -= len;
			buf += (size_t)len * RAID_BS;
		}
		if (r->op == BLK_OP_WRITE) {
			wr++;
			wrb += r->nblocks;
		} else {
			rd++;
			rdb += r->nblocks;
		}
	}
	qsort(segs, nseg, sizeof(*segs), raid_seg_cmp);
	/* every seg may add two regions at most when regions are smaller than a row */
	g.regions = calloc(
	    (size_t)nseg * (geo->row_blocks / (a->bm_region_blocks ? a->bm_region_blocks : 1) + 2) +
		1,
	    sizeof(*g.regions));
	if (!g.regions) {
		rc = -ENOMEM;
		goto out;
	}
	syncraid = 0;
	for (unsigned int s0 = 0; s0 < nseg;) {
		unsigned int s1 = s0, rows = 0;

		while (s1 < nseg) {
			if (s1 == s0 || segs[s1].row != segs[s1 - 1].row) {
				if (rows == maxr)
					break;
				rows++;
			}
			s1++;
		}
		raid_grp_user(&g, segs, s0, s1, reqs);
		s0 = s1;
	}
	syncraid = g.syncraid;
	pthread_mutex_lock(&a->stats_lock);
	a->stats.reads += rd;
	a->stats.writes += wr;
	a->stats.read_blocks += rdb;
	a->stats.write_blocks += wrb;
	a->stats.syncraid_rows += syncraid;
	a->stats.resync_rows_checked += g.checked;
	a->stats.resync_rows_repaired += g.repaired;
	pthread_mutex_unlock(&a->stats_lock);
out:
	free(segs);
	free(g.rows);
	raid_grp_free(&g);
	return rc;
}
