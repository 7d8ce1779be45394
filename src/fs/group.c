// SPDX-License-Identifier: MIT
/*
 * src/fs/group.c - block groups: block and inode allocation.
 *
 * A group g covers blocks [first_group_block + g * bpg, + group_size(g)); its
 * first block is the block bitmap, then the inode bitmap, then itable_blocks of
 * inode table. Bit i of the block bitmap is block group_start + i. The group
 * descriptor (free counts) lives in the descriptor table after the superblock;
 * totals are kept in memory (fs->free_blocks, fs->free_inodes) and recomputed
 * from the descriptors at mount. Allocation changes the bitmap and the
 * descriptor in the same handle (G1).
 * (G4) With FS_FEATURE_INCOMPAT_LAZY_BITMAPS a bitmap never written is made in
 * memory when read (fs_bitmap_uninit, from fs_bread); its first change clears
 * the descriptor's flag in the handle that logs it.
 *
 * A change whose logging fails is put back in the cache and, where the bitmap
 * was logged already, logged back (fs_group_log): the running transaction never
 * commits half an allocation or free, and the cache keeps what the journal
 * holds (F2).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

uint64_t fs_group_start(const struct fs *fs, uint32_t g)
{
	return fs->first_group + (uint64_t)g * fs->bpg;
}

uint32_t fs_group_size(const struct fs *fs, uint32_t g)
{
	uint64_t start = fs_group_start(fs, g);

	return (uint32_t)(fs->nblocks - start < fs->bpg ? fs->nblocks - start : fs->bpg);
}

uint64_t fs_group_data_start(const struct fs *fs, uint32_t g)
{
	return fs_group_start(fs, g) + 2 + fs->itable_blocks;
}

bool fs_block_valid(const struct fs *fs, uint64_t blkno)
{
	uint32_t g;

	if (blkno < fs->first_group || blkno >= fs->nblocks)
		return false;
	g = (uint32_t)((blkno - fs->first_group) / fs->bpg);
	return g < fs->ngroups && blkno >= fs_group_data_start(fs, g);
}

static int fs_gd_get(struct fs *fs, uint32_t g, struct fs_buf **b, struct fs_group_desc **gd)
{
	int rc = fs_bread(fs, fs->gdt_start + g / FS_GD_PER_BLOCK, FS_MAGIC_GDT,
			  "group descriptors", b);

	if (rc)
		return rc;
	*gd = (struct fs_group_desc *)((*b)->data + FS_GD_OFFSET) + g % FS_GD_PER_BLOCK;
	return 0;
}

int fs_gd_read(struct fs *fs, uint32_t g, struct fs_group_desc *out)
{
	struct fs_group_desc *gd;
	struct fs_buf *b;
	int rc = fs_gd_get(fs, g, &b, &gd);

	if (rc)
		return rc;
	*out = *gd;
	fs_bput(fs, b);
	return 0;
}

/*
 * (G4) A bitmap a descriptor says was never written (FS_GD_*_UNINIT, with
 * FS_FEATURE_INCOMPAT_LAZY_BITMAPS): what mkfs would have written, sealed as if
 * read -- the block bitmap holds the group's own metadata (its two bitmaps and
 * inode table) and the bits past its size, the inode bitmap the bits past
 * inodes_per_group. Into @out when @blkno is such a bitmap (*@made); else
 * nothing. The first change of a bitmap logs it with its descriptor, flag
 * cleared, in one handle (fs_group_log), so the journal makes both durable or
 * neither.
 */
int fs_bitmap_uninit(struct fs *fs, uint64_t blkno, uint32_t magic, uint8_t *out, bool *made)
{
	bool inode = magic == FS_MAGIC_IBITMAP;
	struct fs_group_desc gd;
	uint32_t g, size;
	int rc;

	*made = false;
	if (!(jg_le32(fs->sb.feature_incompat) & FS_FEATURE_INCOMPAT_LAZY_BITMAPS) ||
	    (magic != FS_MAGIC_BBITMAP && !inode) || blkno < fs->first_group)
		return 0;
	g = (uint32_t)((blkno - fs->first_group) / fs->bpg);
	if (g >= fs->ngroups || blkno != fs_group_start(fs, g) + inode)
		return 0;
	rc = fs_gd_read(fs, g, &gd);
	if (rc)
		return rc;
	if (!(jg_le32(gd.flags) & (inode ? FS_GD_IBITMAP_UNINIT : FS_GD_BBITMAP_UNINIT)))
		return 0;
	size = fs_group_size(fs, g);
	memset(out, 0, JG_BLOCK_SIZE);
	for (uint32_t i = 0; i < FS_BITMAP_BITS; i++)
		if (inode ? i >= fs->ipg : i < 2 + fs->itable_blocks || i >= size)
			fs_bit_set(out, i);
	jg_blk_seal(out, JG_BLOCK_SIZE, magic, FS_FORMAT_VERSION, 0, 0, blkno, fs->seed);
	*made = true;
	return 0;
}

/* (G4) Clear the flag of bitmap @bm in its group's descriptor @gb; the old flags. */
static uint32_t fs_gd_bitmap_written(struct fs *fs, struct fs_buf *bm, uint32_t magic,
				     struct fs_buf *gb)
{
	uint32_t g = (uint32_t)((bm->blkno - fs->first_group) / fs->bpg);
	struct fs_group_desc *gd = (struct fs_group_desc *)(gb->data + FS_GD_OFFSET) +
				   g % FS_GD_PER_BLOCK;
	uint32_t old = jg_le32(gd->flags);

	gd->flags = jg_cpu_to_le32(old & ~(magic == FS_MAGIC_IBITMAP ? FS_GD_IBITMAP_UNINIT
								    : FS_GD_BBITMAP_UNINIT));
	return old;
}

static void fs_gd_flags_put(struct fs *fs, struct fs_buf *bm, struct fs_buf *gb, uint32_t flags)
{
	uint32_t g = (uint32_t)((bm->blkno - fs->first_group) / fs->bpg);

	((struct fs_group_desc *)(gb->data + FS_GD_OFFSET) + g % FS_GD_PER_BLOCK)->flags =
	    jg_cpu_to_le32(flags);
}

/* descriptor blocks fs_groups_load reads in one request */
#define FS_GD_LOAD_BATCH 64u

/*
 * The descriptor blocks [@first, @first + @n) of the table read in one request
 * into @buf (a mount reads them all: 3096 at 4 x 16 TiB, which read one by one
 * made mkfs's and every mount's time grow with the array). A block that does
 * not verify as read is marked in @bad: its groups go by fs_gd_read, whose
 * fs_bread heals it from the array's redundancy.
 */
static void fs_gd_load_batch(struct fs *fs, uint32_t first, uint32_t n, uint8_t *buf, bool *bad)
{
	int rc = jnl_read(fs->jnl, fs->gdt_start + first, n, buf);

	for (uint32_t i = 0; i < n; i++)
		bad[i] = rc || jg_blk_verify(buf + (size_t)i * JG_BLOCK_SIZE, JG_BLOCK_SIZE,
					     FS_MAGIC_GDT, FS_FORMAT_VERSION,
					     fs->gdt_start + first + i, fs->seed);
}

/* Sum the descriptors; check their counts are in range. */
int fs_groups_load(struct fs *fs)
{
	uint8_t *buf = jg_alloc_blocks(FS_GD_LOAD_BATCH);
	bool bad[FS_GD_LOAD_BATCH];
	struct fs_group_desc gd;
	uint32_t first = 0, n = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	fs->free_blocks = fs->free_inodes = 0;
	for (uint32_t g = 0; g < fs->ngroups && !rc; g++) {
		uint32_t blk = g / FS_GD_PER_BLOCK;

		if (blk >= first + n) {
			first = blk;
			n = fs->gdt_blocks - blk < FS_GD_LOAD_BATCH ? fs->gdt_blocks - blk
								    : FS_GD_LOAD_BATCH;
			fs_gd_load_batch(fs, first, n, buf, bad);
		}
		if (bad[blk - first])
			rc = fs_gd_read(fs, g, &gd);
		else
			gd = ((const struct fs_group_desc *)(buf + (size_t)(blk - first) * JG_BLOCK_SIZE +
							     FS_GD_OFFSET))[g % FS_GD_PER_BLOCK];
		if (rc)
			break;
		if (jg_le32(gd.free_blocks) > fs_group_size(fs, g) ||
		    jg_le32(gd.free_inodes) > fs->ipg || jg_le32(gd.itable_init) > fs->itable_blocks ||
		    (jg_le32(gd.flags) & ~FS_GD_FLAGS_KNOWN) ||
		    (jg_le32(gd.flags) &&
		     !(jg_le32(fs->sb.feature_incompat) & FS_FEATURE_INCOMPAT_LAZY_BITMAPS))) {
			jg_log(JG_LOG_ERR, FS_SUBSYS,
			       "group descriptor dev=%s group=%u bad range: free_blocks=%u free_inodes=%u itable_init=%u flags=0x%x",
			       fs->dev->name, g, jg_le32(gd.free_blocks), jg_le32(gd.free_inodes),
			       jg_le32(gd.itable_init), jg_le32(gd.flags));
			rc = -EUCLEAN;
			break;
		}
		fs->free_blocks += jg_le32(gd.free_blocks);
		fs->free_inodes += jg_le32(gd.free_inodes);
	}
	free(buf);
	return rc;
}

/* First clear bit in [from, n) of a bitmap block, or -1. */
static int64_t fs_bitmap_find(const uint8_t *blk, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < n;) {
		if (i % 64 == 0 && i + 64 <= n) {
			uint64_t w;

			memcpy(&w, blk + FS_BITMAP_OFFSET + i / 8, 8);
			if (w == UINT64_MAX) {
				i += 64;
				continue;
			}
		}
		if (!fs_bit_test(blk, i))
			return i;
		i++;
	}
	return -1;
}

/* ------------------------------------------------ blocks freed recently (G3) */

static bool fs_pending_safe(const struct fs *fs, uint64_t freed_tid, uint64_t now_tid)
{
	return !jg_seq_after(freed_tid + 2, now_tid) ||
	       (fs->durable_tid && !jg_seq_after(freed_tid, fs->durable_tid));
}

/* Is bit @i of group @g freed by a transaction not yet durable? */
static bool fs_pending_test(const struct fs *fs, uint32_t g, uint32_t i, uint64_t now_tid)
{
	const struct fs_pending *p;

	if (!fs->pending)
		return false;
	p = &fs->pending[g];
	for (int k = 0; k < 2; k++)
		if (p->bits[k] && !fs_pending_safe(fs, p->tid[k], now_tid) && fs_bit_test(p->bits[k], i))
			return true;
	return false;
}

bool fs_block_freed_pending(const struct fs *fs, uint64_t blkno)
{
	const struct fs_pending *p;
	uint32_t g, i;

	if (!fs->pending || blkno < fs->first_group)
		return false;
	g = (uint32_t)((blkno - fs->first_group) / fs->bpg);
	i = (uint32_t)((blkno - fs->first_group) % fs->bpg);
	if (g >= fs->ngroups)
		return false;
	p = &fs->pending[g];
	for (int k = 0; k < 2; k++)
		if (p->bits[k] && fs_bit_test(p->bits[k], i))
			return true;
	return false;
}

/* Remember that bit @i of group @g was freed in @tid. */
static int fs_pending_add(struct fs *fs, uint32_t g, uint32_t i, uint64_t tid)
{
	struct fs_pending *p;
	int k;

	if (!fs->pending) {
		fs->pending = calloc(fs->ngroups, sizeof(*fs->pending));
		if (!fs->pending)
			return -ENOMEM;
	}
	p = &fs->pending[g];
	for (k = 0; k < 2; k++)
		if (p->bits[k] && p->tid[k] == tid)
			goto set;
	/* a generation already durable (or unused) takes this transaction */
	for (k = 0; k < 2; k++)
		if (!p->bits[k] || fs_pending_safe(fs, p->tid[k], tid))
			break;
	if (k == 2) {
		/* both generations still pending: merge into the newer (conservative) */
		k = jg_seq_after(p->tid[0], p->tid[1]) ? 0 : 1;
		p->tid[k] = tid;
		goto set;
	}
	if (!p->bits[k]) {
		p->bits[k] = jg_alloc_blocks(1);
		if (!p->bits[k])
			return -ENOMEM;
	}
	memset(p->bits[k], 0, JG_BLOCK_SIZE);
	p->tid[k] = tid;
set:
	fs_bit_set(p->bits[k], i);
	return 0;
}

static void fs_bit_flip(uint8_t *blk, uint32_t i)
{
	blk[FS_BITMAP_OFFSET + i / 8] ^= (uint8_t)(1u << (i % 8));
}

/* Flip bit @bit of the logged bitmap @bm back and log it again (G1). */
static void fs_group_unlog(struct fs_tx *tx, struct fs_buf *bm, uint32_t magic, uint32_t bit)
{
	fs_bit_flip(bm->data, bit);
	/* a failure here tore the handle (T1): nothing of it commits */
	(void)fs_bdirty(tx, bm, magic);
}

/*
 * Log bitmap @bm, whose bit @bit was just flipped, and descriptor block @gb. On
 * failure the bit is back as it was, in the cache and the journal; the caller
 * puts back its descriptor fields.
 */
static int fs_group_log(struct fs_tx *tx, struct fs_buf *bm, uint32_t magic, uint32_t bit,
			struct fs_buf *gb)
{
	int rc = fs_bdirty(tx, bm, magic);
	uint32_t flags;

	if (rc) {
		fs_bit_flip(bm->data, bit);
		return rc;
	}
	flags = fs_gd_bitmap_written(tx->fs, bm, magic, gb); /* (G4) logged with it */
	rc = fs_bdirty(tx, gb, FS_MAGIC_GDT);
	if (rc) {
		fs_gd_flags_put(tx->fs, bm, gb, flags);
		fs_group_unlog(tx, bm, magic, bit);
	}
	return rc;
}

/* Allocate one block in group @g at or after @from; -ENOSPC when the group is full. */
static int fs_block_alloc_group(struct fs_tx *tx, uint32_t g, uint32_t from, uint64_t *out)
{
	struct fs *fs = tx->fs;
	struct fs_buf *bb = NULL, *gb = NULL;
	struct fs_group_desc *gd;
	uint32_t n = fs_group_size(fs, g);
	int64_t bit;
	int rc;

	rc = fs_gd_get(fs, g, &gb, &gd);
	if (rc)
		goto out;
	if (!jg_le32(gd->free_blocks)) {
		rc = -ENOSPC;
		goto out;
	}
	rc = fs_bread(fs, fs_group_start(fs, g), FS_MAGIC_BBITMAP, "block bitmap", &bb);
	if (rc)
		goto out;
	/* (G3): skip blocks freed by transactions not yet durable */
	for (int pass = 0, any = 0;; pass++) {
		bit = fs_bitmap_find(bb->data, pass ? 0 : from, n);
		while (bit >= 0 && fs_pending_test(fs, g, (uint32_t)bit, tx->tid)) {
			any = 1;
			bit = fs_bitmap_find(bb->data, (uint32_t)bit + 1, n);
		}
		if (bit >= 0)
			break;
		if (pass || !from) {
			if (any) {
				rc = -ENOSPC;	/* free, but not yet reusable */
				goto out;
			}
			fs_set_error(fs, "group=%u descriptor says %u blocks free, bitmap has none",
				     g, jg_le32(gd->free_blocks));
			rc = -EUCLEAN;
			goto out;
		}
	}
	fs_bit_set(bb->data, (uint32_t)bit);
	gd->free_blocks = jg_cpu_to_le32(jg_le32(gd->free_blocks) - 1);
	rc = fs_group_log(tx, bb, FS_MAGIC_BBITMAP, (uint32_t)bit, gb);
	if (rc) {
		gd->free_blocks = jg_cpu_to_le32(jg_le32(gd->free_blocks) + 1);
		goto out;
	}
	fs->free_blocks--;
	*out = fs_group_start(fs, g) + (uint64_t)bit;
	/* a block handed out anew must not be served from an older cached life */
	fs_bcache_drop(fs, *out);
out:
	fs_bput(fs, bb);
	fs_bput(fs, gb);
	return rc;
}

int fs_block_alloc(struct fs_tx *tx, uint64_t goal, uint64_t *out)
{
	struct fs *fs = tx->fs;
	uint32_t g = fs->alloc_group % fs->ngroups, from = 0;
	int rc;

	if (!fs->free_blocks)
		return -ENOSPC;
	if (goal >= fs->first_group && goal < fs->nblocks) {
		g = (uint32_t)((goal - fs->first_group) / fs->bpg);
		from = (uint32_t)(goal - fs_group_start(fs, g));
	}
	for (uint32_t i = 0; i < fs->ngroups; i++) {
		uint32_t gg = (g + i) % fs->ngroups;

		rc = fs_block_alloc_group(tx, gg, i ? 0 : from, out);
		if (rc != -ENOSPC) {
			if (!rc)
				fs->alloc_group = gg;
			return rc;
		}
	}
	return -ENOSPC;
}

int fs_block_free(struct fs_tx *tx, uint64_t blkno, bool meta)
{
	struct fs *fs = tx->fs;
	struct fs_buf *bb = NULL, *gb = NULL;
	struct fs_group_desc *gd;
	uint32_t g, bit;
	int rc;

	if (!fs_block_valid(fs, blkno)) {
		fs_set_error(fs, "freeing block %llu outside the data area",
			     (unsigned long long)blkno);
		return -EUCLEAN;
	}
	g = (uint32_t)((blkno - fs->first_group) / fs->bpg);
	bit = (uint32_t)(blkno - fs_group_start(fs, g));
	rc = fs_gd_get(fs, g, &gb, &gd);
	if (rc)
		goto out;
	rc = fs_bread(fs, fs_group_start(fs, g), FS_MAGIC_BBITMAP, "block bitmap", &bb);
	if (rc)
		goto out;
	if (!fs_bit_test(bb->data, bit)) {
		fs_set_error(fs, "freeing free block %llu (group %u)", (unsigned long long)blkno, g);
		rc = -EUCLEAN;
		goto out;
	}
	/* first: a pending bit of a block that stays allocated is harmless */
	rc = fs_pending_add(fs, g, bit, tx->tid);
	if (rc)
		goto out;
	fs_bit_clear(bb->data, bit);
	gd->free_blocks = jg_cpu_to_le32(jg_le32(gd->free_blocks) + 1);
	rc = fs_group_log(tx, bb, FS_MAGIC_BBITMAP, bit, gb);
	if (rc) {
		gd->free_blocks = jg_cpu_to_le32(jg_le32(gd->free_blocks) - 1);
		goto out;
	}
	/* logged copies of a metadata block (or of data in journal mode) must not be
	 * replayed over the block's next life */
	if (meta || fs->opts.data_mode == JNL_DATA_JOURNAL)
		rc = jnl_handle_revoke(tx->h, blkno);
	if (!rc)
		rc = jnl_handle_forget(tx->h, blkno);
	if (rc)
		fs_tx_tear(tx, rc, "revoking a freed block", blkno); /* (T1) */
	if (rc) {
		/* still allocated: log bitmap and descriptor back */
		gd->free_blocks = jg_cpu_to_le32(jg_le32(gd->free_blocks) - 1);
		fs_group_unlog(tx, bb, FS_MAGIC_BBITMAP, bit);
		if (fs_bdirty(tx, gb, FS_MAGIC_GDT))
			fs_set_error(fs, "group=%u descriptor: a failed free not undone", g);
		goto out;
	}
	fs->free_blocks++;
	fs_bcache_drop(fs, blkno);
out:
	fs_bput(fs, bb);
	fs_bput(fs, gb);
	return rc;
}

/* Pick a group for a new inode: directories spread to the group with most free
 * inodes among those with room, files stay near their parent. */
static uint32_t fs_ialloc_group(struct fs *fs, uint64_t parent, bool dir)
{
	struct fs_group_desc gd;
	uint32_t pg = parent ? (uint32_t)((parent - 1) / fs->ipg) : 0, best = pg;
	uint32_t best_free = 0;

	if (!dir || fs->ngroups == 1)
		return pg;
	for (uint32_t i = 0; i < fs->ngroups && i < 64; i++) {
		uint32_t g = (pg + i) % fs->ngroups;

		if (fs_gd_read(fs, g, &gd))
			break;
		if (jg_le32(gd.free_inodes) > best_free) {
			best_free = jg_le32(gd.free_inodes);
			best = g;
		}
	}
	return best;
}

static int fs_ialloc_group_try(struct fs_tx *tx, uint32_t g, bool dir, uint64_t *out)
{
	struct fs *fs = tx->fs;
	struct fs_buf *ib = NULL, *gb = NULL;
	struct fs_group_desc *gd;
	int64_t bit;
	int rc;

	rc = fs_gd_get(fs, g, &gb, &gd);
	if (rc)
		goto out;
	if (!jg_le32(gd->free_inodes)) {
		rc = -ENOSPC;
		goto out;
	}
	rc = fs_bread(fs, fs_group_start(fs, g) + 1, FS_MAGIC_IBITMAP, "inode bitmap", &ib);
	if (rc)
		goto out;
	/* (G2): lowest free first */
	bit = fs_bitmap_find(ib->data, 0, fs->ipg);
	if (bit < 0) {
		fs_set_error(fs, "group=%u descriptor says %u inodes free, bitmap has none", g,
			     jg_le32(gd->free_inodes));
		rc = -EUCLEAN;
		goto out;
	}
	fs_bit_set(ib->data, (uint32_t)bit);
	gd->free_inodes = jg_cpu_to_le32(jg_le32(gd->free_inodes) - 1);
	if (dir)
		gd->used_dirs = jg_cpu_to_le32(jg_le32(gd->used_dirs) + 1);
	rc = fs_group_log(tx, ib, FS_MAGIC_IBITMAP, (uint32_t)bit, gb);
	if (rc) {
		gd->free_inodes = jg_cpu_to_le32(jg_le32(gd->free_inodes) + 1);
		if (dir)
			gd->used_dirs = jg_cpu_to_le32(jg_le32(gd->used_dirs) - 1);
		goto out;
	}
	fs->free_inodes--;
	*out = (uint64_t)g * fs->ipg + (uint64_t)bit + 1;
out:
	fs_bput(fs, ib);
	fs_bput(fs, gb);
	return rc;
}

int fs_ialloc(struct fs_tx *tx, uint64_t parent, bool dir, uint64_t *out)
{
	struct fs *fs = tx->fs;
	uint32_t g;
	int rc;

	if (!fs->free_inodes)
		return -ENOSPC;
	g = fs_ialloc_group(fs, parent, dir);
	for (uint32_t i = 0; i < fs->ngroups; i++) {
		rc = fs_ialloc_group_try(tx, (g + i) % fs->ngroups, dir, out);
		if (rc != -ENOSPC)
			return rc;
	}
	return -ENOSPC;
}

int fs_ifree(struct fs_tx *tx, uint64_t ino, bool dir)
{
	struct fs *fs = tx->fs;
	struct fs_buf *ib = NULL, *gb = NULL;
	struct fs_group_desc *gd, old;
	uint32_t g = (uint32_t)((ino - 1) / fs->ipg), bit = (uint32_t)((ino - 1) % fs->ipg);
	int rc;

	rc = fs_gd_get(fs, g, &gb, &gd);
	if (rc)
		goto out;
	rc = fs_bread(fs, fs_group_start(fs, g) + 1, FS_MAGIC_IBITMAP, "inode bitmap", &ib);
	if (rc)
		goto out;
	if (!fs_bit_test(ib->data, bit)) {
		fs_set_error(fs, "freeing free inode %llu", (unsigned long long)ino);
		rc = -EUCLEAN;
		goto out;
	}
	old = *gd;
	fs_bit_clear(ib->data, bit);
	gd->free_inodes = jg_cpu_to_le32(jg_le32(gd->free_inodes) + 1);
	if (dir && jg_le32(gd->used_dirs))
		gd->used_dirs = jg_cpu_to_le32(jg_le32(gd->used_dirs) - 1);
	rc = fs_group_log(tx, ib, FS_MAGIC_IBITMAP, bit, gb);
	if (rc)
		*gd = old;
	else
		fs->free_inodes++;
out:
	fs_bput(fs, ib);
	fs_bput(fs, gb);
	return rc;
}
