// SPDX-License-Identifier: MIT
/*
 * src/raid/plan.c - the plan of a group of rows (stripe.c, before its reads):
 * which path each row takes (fast path or row path), the lines a row-path row
 * works on, its row cache image, and the group's scratch carved out of one
 * arena kept across calls.
 *
 * Rules kept here: rcache.c (H1) a fast-path row the log appends to uses its
 * cached image, read once; (H2) a row taking the row path is dropped from the
 * row cache first, being written another way. The line modes of a fast-path
 * write row, (W6) among them, are chosen in write.c.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_i.h"

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
	if (!g->arena_counted) {
		uint64_t n = __atomic_add_fetch(&a->scratch_calls, 1, __ATOMIC_RELAXED);
		uint64_t p = __atomic_load_n(&a->scratch_calls_peak, __ATOMIC_RELAXED);

		while (n > p && !__atomic_compare_exchange_n(&a->scratch_calls_peak, &p, n, true,
							     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		g->arena_counted = true;
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
int raid_grp_plan(struct raid_grp *g, uint32_t rmiss, uint32_t wmiss)
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
