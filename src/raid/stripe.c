// SPDX-License-Identifier: MIT
/*
 * src/raid/stripe.c - the array's I/O path: the struct blk_dev of raid_array_dev().
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

#include "raid_i.h"

enum raid_grp_mode {
	RAID_GRP_USER, /* user requests */
	RAID_GRP_CHECK = RAID_ROWS_CHECK,
	RAID_GRP_SCRUB = RAID_ROWS_SCRUB,
	RAID_GRP_REBUILD = RAID_ROWS_REBUILD,
};
_Static_assert(RAID_ROWS_CHECK != 0 && RAID_ROWS_SCRUB != 0 && RAID_ROWS_REBUILD != 0,
	       "row modes differ from RAID_GRP_USER");

enum raid_line_mode { RAID_LINE_NONE, RAID_LINE_FULL, RAID_LINE_RCW, RAID_LINE_RMW };

struct raid_seg { /* one user request's part inside one row */
	uint64_t row;
	uint32_t slot; /* first array block of the row it covers */
	uint32_t nblocks;
	uint8_t *buf;
	unsigned int req; /* index of the user request */
	bool write;
	uint32_t flags;
};

struct raid_row {
	uint64_t row;
	unsigned int seg0, nseg;
	bool write, read, sync, row_path, mismatch, checked;
	bool append;				/* a write said more will follow (BLK_APPEND) */
	uint8_t *cache;				/* its row cache image, pinned, or NULL */
	bool cache_fill;			/* ... which phase A reads whole first */
	uint32_t l0, nl;			/* row path: lines [l0, l0 + nl) only */
	uint32_t fl0, fnl;			/* fast path: scratch holds lines [fl0, fl0 + fnl) */
	uint8_t *pos_buf[RAID_MAX_MEMBERS]; /* chunk buffers per position */
	uint8_t *newpar[2];		    /* new P, Q */
	uint8_t **wsrc;			    /* per slot: source of its write, or NULL */
	uint8_t *line;			    /* per line: enum raid_line_mode */
};

struct raid_grp {
	struct raid_array *a;
	enum raid_grp_mode mode;
	bool repair;
	bool member_major; /* rows consecutive and all whole: scratch member by member */
	struct raid_row *rows;
	unsigned int nrows;
	struct raid_seg *segs;
	struct blk_req *mr; /* member requests */
	unsigned int *mrole;
	unsigned int nmr, capmr;
	uint8_t *arena; /* scratch of the group */
	size_t arena_bytes;
	uint8_t *tmp;	  /* one block, RAID6 RMW */
	uint64_t checked, mismatched, repaired, syncraid;
	bool fua;	 /* a write of the group asked for FUA: its data writes get it */
	bool fua_strict; /* ... and one without BLK_FS_RAIDSYNC: the parity writes too */
	bool parity_fua; /* this attempt: parity writes with FUA ((W4)) */
	uint64_t *regions; /* bitmap regions written */
	unsigned int nregions;
	raid_row_fn mism_fn; /* RAID_GRP_SCRUB: told each mismatched row, no lock held */
	void *mism_ctx;
};

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

static int raid_mr_add(struct raid_grp *g, uint8_t op, unsigned int role, uint64_t row, uint32_t k,
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
 * A member read that failed with -EIO: a latent sector error, as disks in
 * service have them. Each block of @r is read again alone; one that fails again
 * is reconstructed from the rest of its row, handed back in @r's buffer, written
 * back to the member (a disk remaps a sector it is asked to write) and read back
 * to compare: MD's "read error corrected". A read-only array only reads around it.
 *
 * Called with the group's row locks held, shared ones at least: every writer of
 * the row is excluded, and the block written back holds what the row's data and
 * parity already say, so it changes nothing another reader could see.
 *
 * Returns 0 (every block read or corrected); -EIO with *@fail (fail the member:
 * a block outside the data area, a rewrite or read-back that failed, or more
 * corrected errors than max_read_errors); or -EIO alone (a block no other member
 * can give back, or whose row's parity is not trusted (W7): lost, the member
 * stays and the caller gets -EIO).
 */
static int raid_read_repair(struct raid_array *a, unsigned int role, struct blk_req *r, bool *fail)
{
	const struct raid_geo *geo = &a->geo;
	unsigned int npos = geo->ndata + geo->npar;
	struct blk_dev *dev = a->m[role].dev;
	uint8_t *vec[RAID_MAX_MEMBERS], *tmp = jg_alloc_blocks(npos + 1);
	uint8_t *back = tmp + (size_t)npos * RAID_BS;
	int rc = 0;

	*fail = false;
	if (!tmp)
		return -ENOMEM;
	for (uint32_t b = 0; b < r->nblocks && !rc; b++) {
		uint64_t mblk = r->blkno + b, row, corrected;
		uint8_t *out = (uint8_t *)r->buf + (size_t)b * RAID_BS;
		uint32_t rmiss = raid_missing_read(a), lost = 0;
		unsigned int pos = 0;
		bool untrusted;

		if (!blk_rw(dev, BLK_OP_READ, mblk, 1, out, 0))
			continue; /* another block of the request, or a transient error */
		if (mblk < geo->data_offset) {
			*fail = true; /* superblock or bitmap: the member's own metadata */
			rc = -EIO;
			break;
		}
		row = (mblk - geo->data_offset) / geo->chunk_blocks;
		for (unsigned int q = 0; q < npos; q++) {
			unsigned int m = raid_layout_member(geo, row, q);

			vec[q] = tmp + (size_t)q * RAID_BS;
			if (m == role)
				pos = q;
			if (m == role || (rmiss & (1u << m)) ||
			    blk_rw(a->m[m].dev, BLK_OP_READ, mblk, 1, vec[q], 0))
				lost |= 1u << q;
		}
		/* (W7) a data block (or parity with data missing) needs parity that is trusted */
		untrusted = (lost & ((1u << geo->ndata) - 1)) &&
			    raid_heal_trusted(a, row, "read error repair");
		if (untrusted || (unsigned int)__builtin_popcount(lost) > geo->npar ||
		    raid_parity_reconstruct(geo->ndata, geo->npar, RAID_BS, vec, lost)) {
			pthread_mutex_lock(&a->stats_lock);
			a->m[role].rd_uncorrectable++;
			if (pos < geo->ndata) /* a data block: which array block it was */
				a->lost[a->lost_seq++ % RAID_LOST_RING] =
				    row * geo->row_blocks + (uint64_t)pos * geo->chunk_blocks +
				    (mblk - geo->data_offset) % geo->chunk_blocks;
			pthread_mutex_unlock(&a->stats_lock);
			/* no other member can give it back (or be trusted to) */
			raid_event_detail(a, RAID_EV_READ_ERROR_UNCORRECTABLE, role, -1, -EIO,
					  "block=%llu row=%llu%s", (unsigned long long)mblk,
					  (unsigned long long)row,
					  untrusted ? " parity=untrusted" : "");
			rc = -EIO;
			break;
		}
		memcpy(out, vec[pos], RAID_BS);
		if (!a->readonly &&
		    (blk_rw(dev, BLK_OP_WRITE, mblk, 1, out, 0) ||
		     blk_rw(dev, BLK_OP_READ, mblk, 1, back, 0) || memcmp(back, out, RAID_BS))) {
			jg_log(JG_LOG_ERR, "raid",
			       "dev=%s read error at member block %llu: rewrite failed", a->m[role].name,
			       (unsigned long long)mblk);
			*fail = true;
			rc = -EIO;
			break;
		}
		pthread_mutex_lock(&a->stats_lock);
		corrected = ++a->m[role].rd_corrected;
		pthread_mutex_unlock(&a->stats_lock);
		raid_event_detail(a, RAID_EV_READ_ERROR_CORRECTED, role, -1, 0,
				  "block=%llu row=%llu rewritten=%s corrected=%llu",
				  (unsigned long long)mblk, (unsigned long long)row,
				  a->readonly ? "no(read-only)" : "yes",
				  (unsigned long long)corrected);
		/* read-only, the same sector is met again at every read: no verdict */
		if (!a->readonly && corrected > a->max_read_errors) {
			jg_log(JG_LOG_ERR, "raid",
			       "dev=%s %llu read errors corrected, more than %u: failing it",
			       a->m[role].name, (unsigned long long)corrected, a->max_read_errors);
			*fail = true;
			rc = -EIO;
		}
	}
	free(tmp);
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
	if (!rc)
		return 0;
	/* a flush that fails lost writes, whatever the error: the member fails */
	for (unsigned int i = 0; i < nr; i++)
		if (reqs[i].result)
			failed |= 1u << role[i];
	if (failed && !raid_fail_roles(a, failed, devs))
		return 0; /* the others are durable; the failed one is out */
	return rc;
}

/* ------------------------------------------------------------------ plan */

static size_t raid_chunk_bytes(const struct raid_geo *geo)
{
	return (size_t)geo->chunk_blocks * RAID_BS;
}

/*
 * The lines (blocks of a chunk) a user row needs on the row path: those its
 * requests touch, unless a member being rebuilt needs whole chunks. A resync a
 * user request asks for (BLK_SYNCRAID) covers those lines too: a write in
 * flight at a crash can only have left its own lines inconsistent, as MD
 * resyncs stripe by stripe.
 */
static void raid_row_lines(struct raid_grp *g, struct raid_row *r, uint32_t rebuilding)
{
	uint32_t C = g->a->geo.chunk_blocks, lo = C, hi = 0;

	r->l0 = 0;
	r->nl = C;
	if (g->mode != RAID_GRP_USER || rebuilding)
		return;
	for (unsigned int s = r->seg0; s < r->seg0 + r->nseg; s++) {
		const struct raid_seg *sg = &g->segs[s];
		uint32_t a = sg->slot % C, b = a + sg->nblocks - 1;

		if (b >= C) /* crosses a chunk: every line */
			return;
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	if (lo <= hi) {
		r->l0 = lo;
		r->nl = hi - lo + 1;
	}
}

/* Forget what a previous attempt at the row planned. */
static void raid_row_plan_reset(struct raid_row *r)
{
	r->mismatch = false;
	r->checked = false;
	r->cache = NULL;
	r->cache_fill = false;
	memset(r->pos_buf, 0, sizeof(r->pos_buf));
	r->newpar[0] = r->newpar[1] = NULL;
	r->fl0 = r->fnl = 0;
}

/*
 * Whether the row takes the row path: any pass but user requests, a resync, a
 * write with a member unreadable (@rmiss), or a read of a chunk that is.
 */
static bool raid_row_path(const struct raid_grp *g, const struct raid_row *r, uint32_t rmiss)
{
	const struct raid_geo *geo = &g->a->geo;
	uint32_t C = geo->chunk_blocks;

	if (g->mode != RAID_GRP_USER || r->sync || (rmiss && r->write))
		return true;
	for (unsigned int s = r->seg0; s < r->seg0 + r->nseg && rmiss; s++) {
		const struct raid_seg *sg = &g->segs[s];

		for (uint32_t d = sg->slot / C; d <= (sg->slot + sg->nblocks - 1) / C; d++)
			if (rmiss & (1u << raid_layout_member(geo, r->row, d)))
				return true;
	}
	return false;
}

/*
 * How a fast-path line with @w of its data blocks written is written: in full,
 * or partially by read-modify-write or reconstruct-write (MD's rule: fewer
 * blocks read; a tie goes to reconstruct-write).
 */
static enum raid_line_mode raid_line_choose(const struct raid_array *a, unsigned int w,
					    bool unsynced)
{
	const struct raid_geo *geo = &a->geo;

	if (!w)
		return RAID_LINE_NONE;
	if (w == geo->ndata)
		return RAID_LINE_FULL;
	if (unsynced) /* (W6) */
		return RAID_LINE_RCW;
	if (a->test.partial)
		return a->test.partial == RAID_PARTIAL_RCW ? RAID_LINE_RCW : RAID_LINE_RMW;
	if (w + geo->npar < geo->ndata - w)
		return RAID_LINE_RMW;
	return RAID_LINE_RCW;
}

/*
 * The line modes of a fast-path write row, and the line range [fl0, fl0 + fnl)
 * it writes. Returns whether a line is written partially.
 */
static bool raid_row_line_modes(struct raid_grp *g, struct raid_row *r)
{
	struct raid_array *a = g->a;
	const struct raid_geo *geo = &a->geo;
	uint32_t C = geo->chunk_blocks;
	/* (W6) past the sync mark parity may never have matched */
	bool unsynced = r->row >= __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	bool partial = false;

	for (uint32_t k = 0; k < C; k++) {
		unsigned int w = 0;

		for (unsigned int d = 0; d < geo->ndata; d++)
			w += r->wsrc[d * C + k] != NULL;
		r->line[k] = raid_line_choose(a, w, unsynced);
		partial |= w && w < geo->ndata;
		if (w) {
			if (!r->fnl)
				r->fl0 = k;
			r->fnl = k - r->fl0 + 1;
		}
	}
	return partial;
}

/* Plan one row: its path, lines and row cache image. Returns the scratch bytes it needs. */
static size_t raid_row_plan(struct raid_grp *g, struct raid_row *r, uint32_t rmiss, uint32_t wmiss)
{
	struct raid_array *a = g->a;
	const struct raid_geo *geo = &a->geo;
	unsigned int npos = geo->ndata + geo->npar;
	bool partial;

	raid_row_plan_reset(r);
	r->row_path = raid_row_path(g, r, rmiss);
	raid_row_lines(g, r, rmiss & ~wmiss);
	if (r->row_path) {
		raid_rcache_drop(a, r->row); /* (H2) written here, if at all */
		return (npos + geo->npar) * raid_chunk_bytes(geo);
	}
	if (!r->write)
		return 0;
	partial = raid_row_line_modes(g, r);
	/* (H1) a row the log is appending to: its image, read once */
	r->cache = raid_rcache_get(a, r->row, r->append && partial, &r->cache_fill);
	return (partial && !r->cache ? npos + geo->npar : geo->npar) * (size_t)r->fnl * RAID_BS;
}

/* Count @delta bytes of scratch allocated (or freed), and the most allocated. */
static void raid_scratch_count(struct raid_array *a, int64_t delta)
{
	uint64_t n = __atomic_add_fetch(&a->scratch_bytes, (uint64_t)delta, __ATOMIC_RELAXED);
	uint64_t peak = __atomic_load_n(&a->scratch_peak, __ATOMIC_RELAXED);

	while (delta > 0 && n > peak &&
	       !__atomic_compare_exchange_n(&a->scratch_peak, &peak, n, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

/*
 * Scratch of at least @need bytes in g->arena: kept across groups of one call,
 * and one is kept for the next call (a->spare_arena): fresh memory costs a page
 * fault and a clearing per 4 KiB.
 */
static int raid_grp_arena(struct raid_grp *g, size_t need)
{
	struct raid_array *a = g->a;

	if (need <= g->arena_bytes)
		return 0;
	raid_scratch_count(a, -(int64_t)g->arena_bytes);
	free(g->arena);
	g->arena = NULL;
	g->arena_bytes = 0;
	pthread_mutex_lock(&a->spare_lock);
	if (a->spare_bytes >= need) {
		g->arena = a->spare_arena;
		g->arena_bytes = a->spare_bytes;
		a->spare_arena = NULL;
		a->spare_bytes = 0;
	}
	pthread_mutex_unlock(&a->spare_lock);
	if (!g->arena) {
		g->arena = jg_alloc_blocks(need / RAID_BS);
		if (!g->arena)
			return -ENOMEM;
		g->arena_bytes = need;
		raid_scratch_count(a, (int64_t)need);
	}
	return 0;
}

/*
 * Consecutive whole rows (resync, scrub, rebuild): chunk of member m in row i
 * at arena[(m * nrows + i) * chunk], so each member's part of the group is one
 * buffer and one request (raid_grp_reads/writes).
 */
static void raid_grp_carve_member_major(struct raid_grp *g)
{
	const struct raid_geo *geo = &g->a->geo;
	unsigned int npos = geo->ndata + geo->npar;
	size_t cb = raid_chunk_bytes(geo);
	uint8_t *p = g->arena;

	for (unsigned int i = 0; i < g->nrows; i++) {
		struct raid_row *r = &g->rows[i];

		for (unsigned int q = 0; q < npos; q++) {
			unsigned int m = raid_layout_member(geo, r->row, q);

			r->pos_buf[q] = p + ((size_t)m * g->nrows + i) * cb;
		}
		for (unsigned int j = 0; j < geo->npar; j++)
			r->newpar[j] = p + ((size_t)(npos + j) * g->nrows + i) * cb;
	}
}

/* Row by row: whole chunks on the row path, the written lines on the fast path. */
static void raid_grp_carve_rows(struct raid_grp *g)
{
	const struct raid_geo *geo = &g->a->geo;
	unsigned int npos = geo->ndata + geo->npar;
	size_t cb = raid_chunk_bytes(geo);
	uint32_t C = geo->chunk_blocks;
	uint8_t *p = g->arena;

	for (unsigned int i = 0; i < g->nrows; i++) {
		struct raid_row *r = &g->rows[i];
		bool partial = false;

		if (!r->row_path && !r->write)
			continue;
		if (!r->row_path)
			for (uint32_t k = 0; k < C; k++)
				partial |=
				    r->line[k] == RAID_LINE_RCW || r->line[k] == RAID_LINE_RMW;
		if (r->row_path) {
			for (unsigned int q = 0; q < npos; q++, p += cb)
				r->pos_buf[q] = p;
			for (unsigned int j = 0; j < geo->npar; j++, p += cb)
				r->newpar[j] = p;
			continue;
		}
		/* fast path: only the lines written, from line fl0 */
		if (partial && r->cache)
			for (unsigned int q = 0; q < npos; q++)
				r->pos_buf[q] = r->cache + ((size_t)q * C + r->fl0) * RAID_BS;
		else if (partial)
			for (unsigned int q = 0; q < npos; q++, p += (size_t)r->fnl * RAID_BS)
				r->pos_buf[q] = p;
		for (unsigned int j = 0; j < geo->npar; j++, p += (size_t)r->fnl * RAID_BS)
			r->newpar[j] = p;
	}
}

/* Decide fast path or row path, line modes, and carve scratch. */
static int raid_grp_plan(struct raid_grp *g, uint32_t rmiss, uint32_t wmiss)
{
	size_t need = 0;
	int rc;

	for (unsigned int i = 0; i < g->nrows; i++)
		need += raid_row_plan(g, &g->rows[i], rmiss, wmiss);
	rc = raid_grp_arena(g, need);
	if (rc)
		return rc;
	if (g->member_major)
		raid_grp_carve_member_major(g);
	else
		raid_grp_carve_rows(g);
	return 0;
}

/* ------------------------------------------------------------ phase A */

/*
 * Reads or writes (@op) of position @q of row @r at the lines where sel[k],
 * coalesced into runs, to or from @base, which holds lines from @base_line.
 */
static int raid_line_runs(struct raid_grp *g, struct raid_row *r, unsigned int q, enum blk_op op,
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

static int raid_grp_reads(struct raid_grp *g, uint32_t rmiss)
{
	const struct raid_geo *geo = &g->a->geo;
	uint32_t C = geo->chunk_blocks;
	unsigned int npos = geo->ndata + geo->npar;
	bool need[1024];
	int rc = 0;

	if (g->member_major) {
		for (unsigned int m = 0; m < geo->n && !rc; m++)
			if (!(rmiss & (1u << m)))
				rc = raid_mr_add(g, BLK_OP_READ, m, g->rows[0].row, 0, g->nrows * C,
						 g->arena +
						     (size_t)m * g->nrows * raid_chunk_bytes(geo));
		return rc;
	}
	for (unsigned int i = 0; i < g->nrows && !rc; i++) {
		struct raid_row *r = &g->rows[i];

		if (r->row_path) {
			for (unsigned int q = 0; q < npos && !rc; q++) {
				unsigned int role = raid_layout_member(geo, r->row, q);

				if (!(rmiss & (1u << role)))
					rc = raid_mr_add(g, BLK_OP_READ, role, r->row, r->l0, r->nl,
							 r->pos_buf[q] + (size_t)r->l0 * RAID_BS);
			}
			continue;
		}
		/* fast path: user reads straight into their buffers, one request per chunk piece */
		for (unsigned int s = r->seg0; s < r->seg0 + r->nseg && !rc; s++) {
			const struct raid_seg *sg = &g->segs[s];
			uint32_t slot = sg->slot, left = sg->nblocks;
			uint8_t *buf = sg->buf;

			if (sg->write)
				continue;
			while (left && !rc) {
				uint32_t d = slot / C, k = slot % C,
					 len = C - k < left ? C - k : left;

				rc = raid_mr_add(g, BLK_OP_READ, raid_layout_member(geo, r->row, d),
						 r->row, k, len, buf);
				slot += len;
				left -= len;
				buf += (size_t)len * RAID_BS;
			}
		}
		if (r->cache_fill) {
			/* a new row cache image: every position whole */
			for (unsigned int q = 0; q < npos && !rc; q++)
				rc = raid_mr_add(g, BLK_OP_READ, raid_layout_member(geo, r->row, q),
						 r->row, 0, C, r->cache + (size_t)q * C * RAID_BS);
			continue;
		}
		if (!r->write || !r->pos_buf[0] || r->cache)
			continue;
		/* pre-reads of the partial lines */
		for (unsigned int q = 0; q < npos && !rc; q++) {
			bool any = false;

			for (uint32_t k = 0; k < C; k++) {
				bool wr = q < geo->ndata && r->wsrc[q * C + k];

				need[k] = (r->line[k] == RAID_LINE_RCW && q < geo->ndata && !wr) ||
					  (r->line[k] == RAID_LINE_RMW && (q >= geo->ndata || wr));
				any |= need[k];
			}
			if (any)
				rc = raid_line_runs(g, r, q, BLK_OP_READ, r->pos_buf[q], r->fl0, need);
		}
	}
	return rc;
}

/* ------------------------------------------------------------- compute */

static void raid_row_gen_parity(const struct raid_geo *geo, struct raid_row *r, size_t off,
				size_t len)
{
	uint8_t *data[RAID_MAX_MEMBERS];

	for (unsigned int d = 0; d < geo->ndata; d++)
		data[d] = r->pos_buf[d] + off;
	raid_parity_gen(geo->ndata, geo->npar, len, data, r->newpar[0] + off,
			geo->npar == 2 ? r->newpar[1] + off : NULL);
}

/* Fast path parity, line by line. */
static void raid_row_fast_parity(struct raid_grp *g, struct raid_row *r)
{
	const struct raid_geo *geo = &g->a->geo;
	uint32_t C = geo->chunk_blocks;
	uint8_t *whole[RAID_MAX_MEMBERS];
	bool contiguous = true;

	/* a full row whose chunks are contiguous in the caller's buffers: one call */
	for (unsigned int d = 0; d < geo->ndata && contiguous; d++) {
		whole[d] = r->wsrc[d * C];
		for (uint32_t k = 0; k < C && contiguous; k++)
			contiguous = r->line[k] == RAID_LINE_FULL &&
				     r->wsrc[d * C + k] == whole[d] + (size_t)k * RAID_BS;
	}
	if (contiguous) {
		raid_parity_gen(geo->ndata, geo->npar, (size_t)C * RAID_BS, whole, r->newpar[0],
				geo->npar == 2 ? r->newpar[1] : NULL);
		return;
	}
	for (uint32_t k = r->fl0; k < r->fl0 + r->fnl; k++) {
		size_t off = (size_t)(k - r->fl0) * RAID_BS; /* in the scratch */
		uint8_t *data[RAID_MAX_MEMBERS];
		uint8_t *np = r->newpar[0] + off, *nq = geo->npar == 2 ? r->newpar[1] + off : NULL;

		switch (r->line[k]) {
		case RAID_LINE_NONE:
			break;
		case RAID_LINE_FULL:
		case RAID_LINE_RCW:
			for (unsigned int d = 0; d < geo->ndata; d++)
				data[d] =
				    r->wsrc[d * C + k] ? r->wsrc[d * C + k] : r->pos_buf[d] + off;
			raid_parity_gen(geo->ndata, geo->npar, RAID_BS, data, np, nq);
			break;
		case RAID_LINE_RMW:
			memcpy(np, r->pos_buf[RAID_POS_P(geo)] + off, RAID_BS);
			if (nq)
				memcpy(nq, r->pos_buf[RAID_POS_Q(geo)] + off, RAID_BS);
			for (unsigned int d = 0; d < geo->ndata; d++) {
				uint8_t *nw = r->wsrc[d * C + k];

				if (!nw)
					continue;
				/* P ^= old ^ new; Q ^= 2^d (old ^ new) */
				memcpy(g->tmp, r->pos_buf[d] + off, RAID_BS);
				raid_parity_xor_into(RAID_BS, g->tmp, nw);
				raid_parity_xor_into(RAID_BS, np, g->tmp);
				if (nq)
					raid_parity_q_mad(d, RAID_BS, nq, g->tmp);
			}
			break;
		}
	}
}

/* Row path: reconstruct, check, serve reads, merge writes, new parity. */
static int raid_row_slow_compute(struct raid_grp *g, struct raid_row *r, uint32_t rmiss)
{
	const struct raid_geo *geo = &g->a->geo;
	uint32_t C = geo->chunk_blocks, lost = 0;
	unsigned int npos = geo->ndata + geo->npar;
	size_t off = (size_t)r->l0 * RAID_BS;
	size_t len = (size_t)r->nl * RAID_BS;
	uint8_t *vec[RAID_MAX_MEMBERS];
	int rc;

	for (unsigned int q = 0; q < npos; q++) {
		if (rmiss & (1u << raid_layout_member(geo, r->row, q)))
			lost |= 1u << q;
		vec[q] = r->pos_buf[q] + off;
	}
	if (lost) {
		rc = raid_parity_reconstruct(geo->ndata, geo->npar, len, vec, lost);
		if (rc)
			return -EIO;
		/* (A1) asked to resync, after a crash, a row that lacks a member: cannot */
		if (r->sync && g->a->was_dirty)
			raid_risk_add(g->a, r->row, 1);
	}
	if ((r->sync || g->mode == RAID_GRP_CHECK || g->mode == RAID_GRP_SCRUB) && !lost) {
		/* (W3) does the parity on the members match the data (of its lines)? */
		raid_row_gen_parity(geo, r, off, len);
		r->checked = true;
		for (unsigned int j = 0; j < geo->npar; j++)
			if (memcmp(r->newpar[j] + off, r->pos_buf[geo->ndata + j] + off, len))
				r->mismatch = true;
	}
	for (unsigned int s = r->seg0; s < r->seg0 + r->nseg; s++) {
		const struct raid_seg *sg = &g->segs[s];

		if (sg->write)
			continue;
		for (uint32_t b = 0; b < sg->nblocks; b++) {
			uint32_t slot = sg->slot + b;

			memcpy(sg->buf + (size_t)b * RAID_BS,
			       r->pos_buf[slot / C] + (size_t)(slot % C) * RAID_BS, RAID_BS);
		}
	}
	if (r->write) {
		for (uint32_t slot = 0; slot < geo->row_blocks; slot++)
			if (r->wsrc[slot])
				memcpy(r->pos_buf[slot / C] + (size_t)(slot % C) * RAID_BS,
				       r->wsrc[slot], RAID_BS);
		raid_row_gen_parity(geo, r, off, len);
	}
	return 0;
}

/* ------------------------------------------------------------ phase C */

/*
 * Rewrite this row's parity? Resync (user SYNCRAID rows, CHECK) always; scrub on
 * request; a read-only array never (a SYNCRAID read there only checks).
 */
static bool raid_row_fix(const struct raid_grp *g, const struct raid_row *r)
{
	return r->mismatch && (g->repair || g->mode == RAID_GRP_USER) && !g->a->readonly;
}

static int raid_grp_writes(struct raid_grp *g, uint32_t rmiss, uint32_t wmiss)
{
	const struct raid_geo *geo = &g->a->geo;
	uint32_t C = geo->chunk_blocks;
	unsigned int npos = geo->ndata + geo->npar;
	bool sel[1024];
	int rc = 0;

	if (g->member_major && g->mode == RAID_GRP_REBUILD) {
		/* the rebuilt chunks of each member being rebuilt: one buffer, one request */
		for (unsigned int m = 0; m < geo->n && !rc; m++)
			if ((rmiss & (1u << m)) && !(wmiss & (1u << m)))
				rc = raid_mr_add(
				    g, BLK_OP_WRITE, m, g->rows[0].row, 0, g->nrows * C,
				    g->arena + (size_t)m * g->nrows * raid_chunk_bytes(geo));
		return rc;
	}
	for (unsigned int i = 0; i < g->nrows && !rc; i++) {
		struct raid_row *r = &g->rows[i];
		bool fix = raid_row_fix(g, r), par_changed = r->write || fix;

		if (!r->row_path) {
			if (!r->write)
				continue;
			/* data straight from the user's buffers, runs of contiguous sources */
			for (unsigned int d = 0; d < geo->ndata && !rc; d++) {
				unsigned int role = raid_layout_member(geo, r->row, d);

				for (uint32_t k = 0; k < C && !rc;) {
					uint8_t **w = r->wsrc + d * C;
					uint32_t e;

					if (!w[k]) {
						k++;
						continue;
					}
					for (e = k + 1; e < C && w[e] == w[e - 1] + RAID_BS; e++)
						;
					rc = raid_mr_add(g, BLK_OP_WRITE, role, r->row, k, e - k,
							 w[k]);
					k = e;
				}
			}
			for (uint32_t k = 0; k < C; k++)
				sel[k] = r->line[k] != RAID_LINE_NONE;
			for (unsigned int j = 0; j < geo->npar && !rc; j++)
				rc = raid_line_runs(g, r, geo->ndata + j, BLK_OP_WRITE, r->newpar[j], r->fl0, sel);
			continue;
		}
		for (unsigned int q = 0; q < npos && !rc; q++) {
			unsigned int role = raid_layout_member(geo, r->row, q);
			bool rebuilding = (rmiss & (1u << role)) && !(wmiss & (1u << role));
			uint8_t *src = q < geo->ndata ? r->pos_buf[q]
				       : par_changed  ? r->newpar[q - geo->ndata]
						      : r->pos_buf[q];

			if (wmiss & (1u << role))
				continue;
			if (rebuilding) {
				/* a member being rebuilt gets whole chunks: rows stay whole on it
				 */
				if (g->mode == RAID_GRP_REBUILD || r->write)
					rc = raid_mr_add(g, BLK_OP_WRITE, role, r->row, 0, C, src);
				continue;
			}
			if (q >= geo->ndata && fix) {
				rc = raid_mr_add(g, BLK_OP_WRITE, role, r->row, r->l0, r->nl,
						 src + (size_t)r->l0 * RAID_BS);
				continue;
			}
			if (!r->write)
				continue;
			for (uint32_t k = 0; k < C; k++) {
				sel[k] = false;
				for (unsigned int d = 0; d < geo->ndata; d++)
					if (q < geo->ndata ? d == q && r->wsrc[d * C + k]
							   : r->wsrc[d * C + k] != NULL)
						sel[k] = true;
			}
			rc = raid_line_runs(g, r, q, BLK_OP_WRITE, src, 0, sel);
		}
	}
	return rc;
}

/* ----------------------------------------------------------------- group */

/*
 * Unpin the group's row cache images; with @ok (every write succeeded) bring
 * them up to date first: the data written and the new parity of its lines (H2).
 */
static void raid_grp_cache_done(struct raid_grp *g, bool ok)
{
	const struct raid_geo *geo = &g->a->geo;
	uint32_t C = geo->chunk_blocks;

	for (unsigned int i = 0; i < g->nrows; i++) {
		struct raid_row *r = &g->rows[i];

		if (!r->cache)
			continue;
		for (uint32_t slot = 0; ok && slot < geo->row_blocks; slot++)
			if (r->wsrc[slot])
				memcpy(r->cache + (size_t)slot * RAID_BS, r->wsrc[slot], RAID_BS);
		for (unsigned int j = 0; ok && j < geo->npar; j++)
			for (uint32_t k = r->fl0; k < r->fl0 + r->fnl; k++)
				if (r->line[k] != RAID_LINE_NONE)
					memcpy(r->cache + ((size_t)(geo->ndata + j) * C + k) * RAID_BS,
					       r->newpar[j] + (size_t)(k - r->fl0) * RAID_BS, RAID_BS);
		raid_rcache_put(g->a, r->row, ok);
		if (ok && r->append) {
			uint32_t last = geo->row_blocks;

			while (last && !r->wsrc[last - 1])
				last--;
			if (last > geo->row_blocks / 2)
				raid_rcache_hint(g->a, r->row + 1); /* (H3) the log goes on there */
		}
		r->cache = NULL;
		r->cache_fill = false;
	}
}

static int raid_grp_run(struct raid_grp *g)
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

static void raid_grp_free(struct raid_grp *g)
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
	free(g->arena);
	g->arena = NULL;
	g->arena_bytes = 0;
	free(g->mr);
	free(g->mrole);
	free(g->tmp);
	free(g->regions);
}

/* Rows per group: bounded by RAID_GROUP_MAX_ROWS and the worst-case scratch. */
static unsigned int raid_grp_max_rows(const struct raid_geo *geo)
{
	size_t per = (geo->ndata + 2 * geo->npar) * raid_chunk_bytes(geo);
	size_t n = RAID_GROUP_MAX_BYTES / per;

	if (n < 1)
		n = 1;
	return n > RAID_GROUP_MAX_ROWS ? RAID_GROUP_MAX_ROWS : (unsigned int)n;
}

/* Run group @g over rows [first, first+count) in groups of at most maxr rows. */
static int raid_rows_walk(struct raid_grp *g, uint64_t first, uint64_t count)
{
	unsigned int maxr = raid_grp_max_rows(&g->a->geo);
	int rc = 0;

	g->rows = calloc(maxr, sizeof(*g->rows));
	g->tmp = jg_alloc_blocks(1);
	if (!g->rows || !g->tmp)
		rc = -ENOMEM;
	for (uint64_t r = first; r < first + count && !rc; r += maxr) {
		uint64_t n = first + count - r < maxr ? first + count - r : maxr;

		memset(g->rows, 0, maxr * sizeof(*g->rows));
		for (unsigned int i = 0; i < n; i++)
			g->rows[i].row = r + i;
		g->nrows = (unsigned int)n;
		rc = raid_grp_run(g);
	}
	free(g->rows);
	g->rows = NULL;
	raid_grp_free(g);
	return rc;
}

int raid_rows_run(struct raid_array *a, uint64_t first, uint64_t count, enum raid_row_mode mode,
		  uint64_t *checked, uint64_t *repaired)
{
	struct raid_grp g = {.a = a,
			     .mode = (enum raid_grp_mode)mode,
			     .repair = mode == RAID_ROWS_CHECK,
			     .member_major = true};
	int rc = raid_rows_walk(&g, first, count);

	*checked += g.checked;
	*repaired += mode == RAID_ROWS_SCRUB ? g.mismatched : g.repaired;
	return rc;
}

int raid_rows_scrub(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
		    uint64_t *checked, uint64_t *mismatched, uint64_t *repaired)
{
	return raid_rows_scrub_fn(a, first, count, repair, NULL, NULL, checked, mismatched,
				  repaired);
}

int raid_rows_scrub_fn(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
		       raid_row_fn fn, void *ctx, uint64_t *checked, uint64_t *mismatched,
		       uint64_t *repaired)
{
	struct raid_grp g = {.a = a,
			     .mode = RAID_GRP_SCRUB,
			     .repair = repair,
			     .member_major = true,
			     .mism_fn = fn,
			     .mism_ctx = ctx};
	int rc = raid_rows_walk(&g, first, count);

	*checked += g.checked;
	*mismatched += g.mismatched;
	*repaired += g.repaired;
	return rc;
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
	bool journal = a->policy == RAID_RESYNC_JOURNAL, resync_all;
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
		if (sg->write && a->bm_blocks && !(journal && (sg->flags & BLK_FS_RAIDSYNC))) {
			uint64_t b0 = sg->row * geo->row_blocks + sg->slot;
			uint64_t r0 = b0 / a->bm_region_blocks,
				 r1 = (b0 + sg->nblocks - 1) / a->bm_region_blocks;

			for (uint64_t x = r0; x <= r1; x++)
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
