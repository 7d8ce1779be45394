// SPDX-License-Identifier: MIT
/*
 * src/raid/write.c - the write path of a group (stripe.c): the choice per
 * fast-path line between a full write, read-modify-write and reconstruct-write
 * (MD's rule: fewer blocks read, a tie to RCW), the fast path's parity, phase C
 * (every member write of the group, queued for one blk_submit_multi()), and
 * the row cache images brought up to date after the writes.
 *
 * Rules kept here: (W6) a partial write at or past the sync mark reconstructs,
 * never read-modify-writes; rcache.c (H2) an image takes the group's writes
 * only when all of them succeeded, else it is dropped; (H3) an append past the
 * middle of its row has the next row read ahead. Which writes get FUA ((W4))
 * is decided in stripe.c (raid_grp_run, raid_mr_add).
 */

#include <string.h>

#include "stripe_i.h"

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
bool raid_row_line_modes(struct raid_grp *g, struct raid_row *r)
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

/* Fast path parity, line by line. */
void raid_row_fast_parity(struct raid_grp *g, struct raid_row *r)
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

/*
 * Rewrite this row's parity? Resync (user SYNCRAID rows, CHECK) always; scrub on
 * request; a read-only array never (a SYNCRAID read there only checks).
 */
bool raid_row_fix(const struct raid_grp *g, const struct raid_row *r)
{
	return r->mismatch && (g->repair || g->mode == RAID_GRP_USER) && !g->a->readonly;
}

int raid_grp_writes(struct raid_grp *g, uint32_t rmiss, uint32_t wmiss)
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

/*
 * Unpin the group's row cache images; with @ok (every write succeeded) bring
 * them up to date first: the data written and the new parity of its lines (H2).
 */
void raid_grp_cache_done(struct raid_grp *g, bool ok)
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
