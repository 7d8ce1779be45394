// SPDX-License-Identifier: MIT
/*
 * src/raid/layout.c - address mapping: array block -> row, position, member.
 *
 * Array blocks are numbered over the data chunks only: row r holds array blocks
 * [r * row_blocks, (r + 1) * row_blocks), data position d of the row the blocks
 * [d * chunk, (d + 1) * chunk) of it. Every chunk of row r sits at member block
 * data_offset + r * chunk_blocks + k on its member.
 *
 * Rotation (MD's raid5_compute_sector, ALGORITHM_LEFT_SYMMETRIC):
 *   RAID5: P on member n-1 - r % n, data d on (P + 1 + d) % n
 *   RAID6: P on member n-1 - r % n, Q on (P + 1) % n, data d on (P + 2 + d) % n
 *   RAID4: P on member n-1, data d on member d
 * Q's coefficient of data position d is 2^d (ISA-L pq_gen, MD's raid6 syndrome).
 */
#include <errno.h>

#include "raid_i.h"

int raid_geo_init(struct raid_geo *g, unsigned int level, unsigned int n, uint32_t chunk_blocks,
		  uint64_t data_offset, uint64_t data_blocks)
{
	if (level != 4 && level != 5 && level != 6)
		return -EINVAL;
	if (n > RAID_MAX_MEMBERS || n < (level == 6 ? 3u : 2u))
		return -EINVAL;
	if (!chunk_blocks || chunk_blocks > 1024 || (chunk_blocks & (chunk_blocks - 1)))
		return -EINVAL;
	g->level = level;
	g->layout = level == 4 ? RAID_LAYOUT_PARITY_LAST : RAID_LAYOUT_LEFT_SYMMETRIC;
	g->n = n;
	g->npar = level == 6 ? 2 : 1;
	g->ndata = n - g->npar;
	g->chunk_blocks = chunk_blocks;
	g->row_blocks = g->ndata * chunk_blocks;
	g->data_offset = data_offset;
	g->rows = data_blocks / chunk_blocks;
	g->data_blocks = g->rows * chunk_blocks;
	g->array_blocks = g->rows * g->row_blocks;
	return 0;
}

unsigned int raid_layout_member(const struct raid_geo *g, uint64_t row, unsigned int pos)
{
	unsigned int pd;

	if (g->layout == RAID_LAYOUT_PARITY_LAST)
		return pos == RAID_POS_P(g) ? g->n - 1 : pos;
	pd = g->n - 1 - (unsigned int)(row % g->n);
	if (pos == RAID_POS_P(g))
		return pd;
	if (g->npar == 2 && pos == RAID_POS_Q(g))
		return (pd + 1) % g->n;
	return (pd + g->npar + pos) % g->n;
}

unsigned int raid_layout_pos(const struct raid_geo *g, uint64_t row, unsigned int role)
{
	unsigned int pd;

	if (g->layout == RAID_LAYOUT_PARITY_LAST)
		return role == g->n - 1 ? RAID_POS_P(g) : role;
	pd = g->n - 1 - (unsigned int)(row % g->n);
	if (role == pd)
		return RAID_POS_P(g);
	if (g->npar == 2 && role == (pd + 1) % g->n)
		return RAID_POS_Q(g);
	return (role + g->n - pd - g->npar) % g->n;
}

void raid_layout_map(const struct raid_geo *g, uint64_t blkno, unsigned int *role,
		     uint64_t *member_blkno)
{
	uint64_t row = blkno / g->row_blocks;
	uint32_t slot = (uint32_t)(blkno % g->row_blocks);

	*role = raid_layout_member(g, row, slot / g->chunk_blocks);
	*member_blkno = g->data_offset + row * g->chunk_blocks + slot % g->chunk_blocks;
}
