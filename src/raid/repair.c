// SPDX-License-Identifier: MIT
/*
 * src/raid/repair.c - the array's repair paths: the row path's compute
 * (reconstruct what a missing or rebuilding member lacks, check the parity
 * against the data for a resync or scrub, serve reads, merge writes, new
 * parity), the repair of a member read error (raid_read_repair, from stripe.c
 * raid_mr_submit), and the whole-row passes over a range of rows: the resync's
 * check, the scrub, the rebuild (raid_rows_run, raid_rows_scrub_fn).
 *
 * Rules kept here: (W3) a row flagged for resync is checked in the lines it
 * touches (its parity rewritten by write.c raid_row_fix); (W7) a read error is
 * repaired only where the row's parity is trusted (heal.c (H4)), and a block
 * nothing can give back is lost alone; raid_i.h (A1) a row a dirty array asks
 * to resync while it lacks a member is recorded at risk.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_i.h"

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
int raid_read_repair(struct raid_array *a, unsigned int role, struct blk_req *r, bool *fail)
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

static void raid_row_gen_parity(const struct raid_geo *geo, struct raid_row *r, size_t off,
				size_t len)
{
	uint8_t *data[RAID_MAX_MEMBERS];

	for (unsigned int d = 0; d < geo->ndata; d++)
		data[d] = r->pos_buf[d] + off;
	raid_parity_gen(geo->ndata, geo->npar, len, data, r->newpar[0] + off,
			geo->npar == 2 ? r->newpar[1] + off : NULL);
}

/* Row path: reconstruct, check, serve reads, merge writes, new parity. */
int raid_row_slow_compute(struct raid_grp *g, struct raid_row *r, uint32_t rmiss)
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
