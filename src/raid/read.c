// SPDX-License-Identifier: MIT
/*
 * src/raid/read.c - phase A of a group (stripe.c): every member read it needs,
 * queued for one blk_submit_multi() (raid_mr_submit in stripe.c runs them; a
 * read error is repaired by repair.c). A row-path row reads its lines on every
 * readable member; fast-path user reads go straight into the caller's buffers,
 * one request per chunk piece; a new row cache image is read whole, the once of
 * rcache.c (H1); a partial write line gets the pre-reads of its mode (write.c):
 * RMW the old data and parity, RCW the other data. Member-major passes read
 * each member's part of the group in one request.
 *
 * No rule is decided here: what is read follows from plan.c and write.c.
 */

#include "stripe_i.h"

int raid_grp_reads(struct raid_grp *g, uint32_t rmiss)
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
