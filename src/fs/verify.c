// SPDX-License-Identifier: MIT
/*
 * src/fs/verify.c - fs_block_verify: what an array block is worth, for a scrub
 * that must tell which member of a mismatched row is wrong (issue 27; the
 * array's side is src/raid/scrub.c (K1)-(K4)).
 *
 * The array asks only about the lines of rows whose parity disagrees, so a
 * call may cost a descriptor and a bitmap read, but no scan: fs_owners (an
 * inode scan) is too slow to ask per block. What is known cheaply:
 *  (V1) the fixed places of FORMAT.md §4.1 hold metadata only: the superblock,
 *       the group descriptor table, each group's two bitmaps and the inode
 *       table blocks written so far (below itable_init, (G2)). Their content
 *       must verify with their magic and home address; anything else there is
 *       damage (BLK_FAILS), whatever its first bytes say. A bitmap never
 *       written (lazy, (G4)) and an inode table block past itable_init hold
 *       nothing yet: BLK_FREE.
 *  (V2) the data area: a block clear in its group's block bitmap (as the
 *       filesystem holds it now, the journal's newest copy) and not freed by a
 *       recent transaction ((G3): a crash could give it back to its old owner)
 *       holds nothing: BLK_FREE. An allocated block that claims a metadata
 *       magic of the data area (directory table or bucket, indirect, xattr) is
 *       checked against it and its home: BLK_VERIFIES or BLK_FAILS. Any other
 *       allocated block is file data, or metadata whose magic is the damage:
 *       BLK_UNKNOWN (the scrub then says it cannot tell rather than guess),
 *       unless (V4) data checksums say.
 *  (V4) on a volume with data checksums, an allocated data-area block that
 *       matches its slot verifies; one that does not, and claims no metadata
 *       magic that verifies, fails. A slot not set or not settled (in flight
 *       at a crash, dcsum.c) says nothing. The checksum blocks themselves, past
 *       the filesystem's end, are metadata: checked with their magic; those
 *       past the lazy mark (dcsum.c (D3)) were never written: BLK_FREE.
 *  (V3) the journal region: BLK_UNKNOWN (its log blocks carry their own checks,
 *       but a block's place in the log says which of them applies; not done).
 *  (V5) a block whose newest version is still in the journal (the running or
 *       committing transaction, a checkpoint not done: jnl_block_pending) is
 *       in flight: its slot, bitmap bit or magic may already be the new
 *       block's while the array holds the old one (issue 43). A verdict that
 *       would fail it or not know is BLK_BUSY instead: the scrub asks again
 *       later rather than calling the row damaged or unresolved. What
 *       verifies or is free as stored keeps its verdict.
 * Past the filesystem's end (and its checksum region) nothing lives: BLK_FREE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

static int fs_verify_magic(const struct fs *fs, uint64_t blkno, const void *blk, uint32_t magic)
{
	return jg_blk_verify(blk, JG_BLOCK_SIZE, magic, FS_FORMAT_VERSION, blkno, fs->seed)
		   ? BLK_FAILS
		   : BLK_VERIFIES;
}

/* (V1) a block of group @g's fixed places, at @off from the group's start */
static int fs_verify_fixed(struct fs *fs, uint32_t g, uint64_t blkno, uint32_t off, const void *blk)
{
	struct fs_group_desc gd;
	uint32_t magic;
	int rc;

	rc = fs_gd_read(fs, g, &gd);
	if (rc)
		return BLK_UNKNOWN;
	if (off < 2) {
		bool lazy = jg_le32(fs->sb.feature_incompat) & FS_FEATURE_INCOMPAT_LAZY_BITMAPS;
		uint32_t uninit = off ? FS_GD_IBITMAP_UNINIT : FS_GD_BBITMAP_UNINIT;

		if (lazy && (jg_le32(gd.flags) & uninit))
			return BLK_FREE; /* (G4) never written */
		magic = off ? FS_MAGIC_IBITMAP : FS_MAGIC_BBITMAP;
		return fs_verify_magic(fs, blkno, blk, magic);
	}
	if (off - 2 >= jg_le32(gd.itable_init))
		return BLK_FREE; /* (G2) never written: reads as all-free */
	return fs_verify_magic(fs, blkno, blk, FS_MAGIC_ITABLE);
}

/* (V2) a block of group @g's data area, bit @bit of its block bitmap */
static int fs_verify_data(struct fs *fs, uint32_t g, uint64_t blkno, uint32_t bit, const void *blk)
{
	const struct jg_blk_hdr *h = blk;
	struct fs_buf *bb;
	uint32_t magic;
	bool used;
	int csum, rc;

	rc = fs_bread(fs, fs_group_start(fs, g), FS_MAGIC_BBITMAP, "block bitmap", &bb);
	if (rc)
		return BLK_UNKNOWN;
	used = fs_bit_test(bb->data, bit);
	fs_bput(fs, bb);
	if (!used && !fs_block_freed_pending(fs, blkno))
		return BLK_FREE;
	/*
	 * (V4) file data has a slot in the data checksum region (dcsum.c) when
	 * the volume keeps them and the slot is set and settled. A match is
	 * decisive. A mismatch is not, before the magic: slots are not cleared
	 * when a block is freed, so a block reused for metadata may keep its
	 * old file's slot.
	 */
	csum = fs_data_csum_check_locked(fs, blkno, blk);
	if (csum == 1)
		return BLK_VERIFIES;
	magic = jg_le32(h->magic);
	if (magic == FS_MAGIC_DTABLE || magic == FS_MAGIC_DBUCKET || magic == FS_MAGIC_INDIRECT ||
	    magic == FS_MAGIC_XATTR)
		return fs_verify_magic(fs, blkno, blk, magic);
	return csum == 0 ? BLK_FAILS : BLK_UNKNOWN;
}

static int fs_block_verify_stored(struct fs *fs, uint64_t blkno, const void *blk)
{
	uint64_t off;
	uint32_t g;

	if (fs_dcsum_unwritten(fs, blkno))
		return BLK_FREE; /* dcsum.c (D3) past the mark: never written */
	if (fs_dcsum_in_region(fs, blkno))
		return fs_verify_magic(fs, blkno, blk, FS_MAGIC_DCSUM);
	if (blkno >= fs->nblocks)
		return BLK_FREE; /* the array past the filesystem: nothing lives there */
	if (blkno == FS_SB_BLKNO)
		return fs_verify_magic(fs, blkno, blk, FS_MAGIC_SUPER);
	if (blkno >= fs->gdt_start && blkno < fs->gdt_start + fs->gdt_blocks)
		return fs_verify_magic(fs, blkno, blk, FS_MAGIC_GDT);
	if (blkno < fs->first_group)
		return BLK_UNKNOWN; /* (V3) the journal region */
	g = (uint32_t)((blkno - fs->first_group) / fs->bpg);
	if (g >= fs->ngroups)
		return BLK_FREE;
	off = blkno - fs_group_start(fs, g);
	if (off < 2 + (uint64_t)fs->itable_blocks)
		return fs_verify_fixed(fs, g, blkno, (uint32_t)off, blk);
	return fs_verify_data(fs, g, blkno, (uint32_t)off, blk);
}

static int fs_block_verify_locked(struct fs *fs, uint64_t blkno, const void *blk)
{
	int v = fs_block_verify_stored(fs, blkno, blk);

	/* (V5) under the fs lock: no new version is handed to the journal meanwhile */
	if ((v == BLK_FAILS || v == BLK_UNKNOWN) && jnl_block_pending(fs->jnl, blkno))
		return BLK_BUSY;
	return v;
}

int fs_block_verify(struct fs *fs, uint64_t blkno, const void *blk)
{
	int v;

	jg_mutex_lock(&fs->lock);
	v = fs_block_verify_locked(fs, blkno, blk);
	jg_mutex_unlock(&fs->lock);
	return v;
}

int fs_block_verify_fn(void *ctx, uint64_t blkno, const void *blk)
{
	return fs_block_verify(ctx, blkno, blk);
}

bool fs_probe(struct blk_dev *dev)
{
	struct jg_blk_hdr *h = jg_alloc_blocks(1);
	bool yes;

	if (!h)
		return false;
	yes =
	    !blk_rw(dev, BLK_OP_READ, FS_SB_BLKNO, 1, h, 0) && jg_le32(h->magic) == FS_MAGIC_SUPER;
	free(h);
	return yes;
}
