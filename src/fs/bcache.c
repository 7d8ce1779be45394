// SPDX-License-Identifier: MIT
/*
 * src/fs/bcache.c - the buffer cache between the filesystem and the journal.
 *
 * Interface: fs_bread (read + verify, pinned; a block that fails its check is
 * healed by the device when it can: fs_bread_heal), fs_bget_new (a block being
 * initialised), fs_bput (unpin), fs_bdirty (seal the header and hand the block to
 * the journal handle), fs_bcache_drop (a freed block).
 *
 * The cache holds metadata blocks only; file data goes straight to jnl_read and
 * jnl_handle_dirty_data. It is write-through to the journal (F2), so an unpinned
 * buffer can be evicted at any time: the journal keeps the newest copy until it
 * is home, and a miss reads it back through jnl_read(). The bound is
 * fs_mount_opts.cache_blocks unpinned buffers; pinned buffers (a handful per
 * operation) may exceed it briefly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

static uint64_t fs_bcache_slot(const struct fs_bcache *bc, uint64_t blkno)
{
	return (blkno * 0x9e3779b97f4a7c15ull) >> 20 & (bc->nhash - 1);
}

int fs_bcache_init(struct fs *fs, uint64_t limit)
{
	struct fs_bcache *bc = &fs->bc;
	uint64_t n = 1024;

	while (n < limit && n < (1u << 22))
		n <<= 1;
	bc->hash = calloc(n, sizeof(*bc->hash));
	if (!bc->hash)
		return -ENOMEM;
	bc->nhash = n;
	bc->limit = limit;
	bc->count = 0;
	bc->lru.lru_next = bc->lru.lru_prev = &bc->lru;
	return 0;
}

static void fs_bcache_unlink(struct fs_bcache *bc, struct fs_buf *b)
{
	struct fs_buf **pp = &bc->hash[fs_bcache_slot(bc, b->blkno)];

	while (*pp && *pp != b)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = b->hnext;
	if (b->lru_next) {
		b->lru_next->lru_prev = b->lru_prev;
		b->lru_prev->lru_next = b->lru_next;
		b->lru_next = b->lru_prev = NULL;
	}
	bc->count--;
	free(b->data);
	free(b);
}

void fs_bcache_destroy(struct fs *fs)
{
	struct fs_bcache *bc = &fs->bc;

	if (!bc->hash)
		return;
	for (uint64_t i = 0; i < bc->nhash; i++) {
		struct fs_buf *b = bc->hash[i], *n;

		for (; b; b = n) {
			n = b->hnext;
			free(b->data);
			free(b);
		}
	}
	free(bc->hash);
	bc->hash = NULL;
}

static struct fs_buf *fs_bcache_find(struct fs_bcache *bc, uint64_t blkno)
{
	struct fs_buf *b = bc->hash[fs_bcache_slot(bc, blkno)];

	while (b && b->blkno != blkno)
		b = b->hnext;
	return b;
}

/* Evict unpinned buffers, oldest first, until under the bound. */
static void fs_bcache_shrink(struct fs_bcache *bc)
{
	struct fs_buf *b = bc->lru.lru_next;

	while (bc->count > bc->limit && b != &bc->lru) {
		struct fs_buf *n = b->lru_next;

		fs_bcache_unlink(bc, b);
		b = n;
	}
}

/* Pin: unpinned buffers live on the LRU list, pinned ones do not. */
static void fs_bcache_pin(struct fs_bcache *bc, struct fs_buf *b)
{
	if (b->refs++ == 0 && b->lru_next) {
		b->lru_next->lru_prev = b->lru_prev;
		b->lru_prev->lru_next = b->lru_next;
		b->lru_next = b->lru_prev = NULL;
	}
}

static int fs_bcache_new(struct fs *fs, uint64_t blkno, struct fs_buf **out)
{
	struct fs_bcache *bc = &fs->bc;
	struct fs_buf *b = calloc(1, sizeof(*b));
	uint64_t slot;

	if (!b)
		return -ENOMEM;
	b->data = jg_alloc_blocks(1);
	if (!b->data) {
		free(b);
		return -ENOMEM;
	}
	b->blkno = blkno;
	slot = fs_bcache_slot(bc, blkno);
	b->hnext = bc->hash[slot];
	bc->hash[slot] = b;
	if (++bc->count > bc->peak)
		bc->peak = bc->count;
	fs_bcache_shrink(bc);
	*out = b;
	return 0;
}

/* What the device's heal checks each candidate of a metadata block against. */
struct fs_heal_ctx {
	struct fs *fs;
	uint64_t blkno;
	uint32_t magic;
};

static int fs_heal_verify(void *ctx, const void *blk)
{
	const struct fs_heal_ctx *c = ctx;

	return jg_blk_verify(blk, JG_BLOCK_SIZE, c->magic, FS_FORMAT_VERSION, c->blkno,
			     c->fs->seed);
}

/*
 * Block @b, just read from the device, failed its check (bad magic, crc or home
 * address): ask the device to rebuild it from its redundancy (issue 27; the
 * RAID array rewrites the member that held the damage, src/raid/heal.c) and
 * check it again. 0: @b holds the block, verified. Else the check's error
 * stays (a plain device, nothing verified, or the array's parity not
 * trusted): the caller reports @rc as before.
 */
static int fs_bread_heal(struct fs *fs, struct fs_buf *b, uint32_t magic, const char *what, int rc)
{
	struct fs_heal_ctx c = {.fs = fs, .blkno = b->blkno, .magic = magic};
	uint32_t rewritten = 0;
	char roles[64];
	int hr;

	if (rc != -EUCLEAN)
		return rc; /* a newer version is not damage */
	hr = jnl_read_heal(fs->jnl, b->blkno, b->data, fs_heal_verify, &c, &rewritten);
	if (hr) {
		if (hr != -ENOTTY)
			jg_log(JG_LOG_ERR, FS_SUBSYS, "%s dev=%s blkno=%llu heal failed: %s", what,
			       fs->dev->name, (unsigned long long)b->blkno, strerror(-hr));
		return rc;
	}
	rc = jg_blk_check(b->data, JG_BLOCK_SIZE, magic, FS_FORMAT_VERSION, b->blkno, fs->seed,
			  FS_SUBSYS, what, fs->dev->name);
	if (rc)
		return rc;
	fs->bc.heals++;
	jg_log(JG_LOG_WARN, FS_SUBSYS, "%s dev=%s blkno=%llu healed: members rewritten: %s", what,
	       fs->dev->name, (unsigned long long)b->blkno,
	       jg_roles_str(rewritten, roles, sizeof(roles)));
	return 0;
}

int fs_bread(struct fs *fs, uint64_t blkno, uint32_t magic, const char *what, struct fs_buf **out)
{
	struct fs_bcache *bc = &fs->bc;
	struct fs_buf *b;
	bool fresh = false; /* read from the device by this call: may be healed */
	int rc;

	if (blkno >= fs->nblocks && !fs_dcsum_in_region(fs, blkno)) {
		jg_log(JG_LOG_ERR, FS_SUBSYS, "%s dev=%s blkno=%llu bad range: beyond %llu blocks",
		       what, fs->dev->name, (unsigned long long)blkno,
		       (unsigned long long)fs->nblocks);
		return -EUCLEAN;
	}
	b = fs_bcache_find(bc, blkno);
	if (b) {
		bc->hits++;
		fs_bcache_pin(bc, b);
	} else {
		bool made = false;

		bc->misses++;
		rc = fs_bcache_new(fs, blkno, &b);
		if (rc)
			return rc;
		b->refs = 1;
		bc->reads++;
		rc = fs_bitmap_uninit(fs, blkno, magic, b->data, &made); /* group.c (G4) */
		if (!rc && !made)
			rc = fs_dcsum_uninit(fs, blkno, magic, b->data, &made); /* dcsum.c (D3) */
		if (!rc && !made) {
			rc = jnl_read(fs->jnl, blkno, 1, b->data);
			fresh = true;
		}
		if (rc) {
			jg_log(JG_LOG_ERR, FS_SUBSYS, "%s dev=%s blkno=%llu read failed: %s", what,
			       fs->dev->name, (unsigned long long)blkno, strerror(-rc));
			b->refs = 0;
			fs_bcache_unlink(bc, b);
			return rc;
		}
	}
	if (magic && b->magic != magic) {
		rc = jg_blk_check(b->data, JG_BLOCK_SIZE, magic, FS_FORMAT_VERSION, blkno, fs->seed,
				  FS_SUBSYS, what, fs->dev->name);
		/* only a buffer this call read and alone holds: nobody sees it change */
		if (rc && fresh && b->refs == 1)
			rc = fs_bread_heal(fs, b, magic, what, rc);
		if (rc) {
			/* never keep a block that failed: a later read retries the device */
			b->refs--;
			if (!b->refs)
				fs_bcache_unlink(bc, b);
			return rc;
		}
		b->magic = magic;
	}
	*out = b;
	return 0;
}

int fs_bget_new(struct fs *fs, uint64_t blkno, struct fs_buf **out)
{
	struct fs_buf *b = fs_bcache_find(&fs->bc, blkno);
	int rc;

	if (!b) {
		rc = fs_bcache_new(fs, blkno, &b);
		if (rc)
			return rc;
	}
	fs_bcache_pin(&fs->bc, b);
	memset(b->data, 0, JG_BLOCK_SIZE);
	b->magic = 0;
	*out = b;
	return 0;
}

void fs_bput(struct fs *fs, struct fs_buf *b)
{
	struct fs_bcache *bc = &fs->bc;

	if (!b)
		return;
	if (--b->refs)
		return;
	/* newest at the tail */
	b->lru_prev = bc->lru.lru_prev;
	b->lru_next = &bc->lru;
	bc->lru.lru_prev->lru_next = b;
	bc->lru.lru_prev = b;
	fs_bcache_shrink(bc);
}

int fs_bdirty(struct fs_tx *tx, struct fs_buf *b, uint32_t magic)
{
	int rc;

	jg_blk_seal(b->data, JG_BLOCK_SIZE, magic, FS_FORMAT_VERSION, 0, tx->tid, b->blkno,
		    tx->fs->seed);
	b->magic = magic;
	fs_tx_track(tx, b->blkno);
	rc = jnl_handle_dirty_meta(tx->h, b->blkno, b->data);
	/* (T1) the buffer holds a change the journal did not take: the cache and
	 * the journal disagree from here on, so nothing of this may commit */
	if (rc)
		fs_tx_tear(tx, rc, "logging a metadata block", b->blkno);
	else
		tx->dirtied = true;
	return rc;
}

void fs_bcache_drop(struct fs *fs, uint64_t blkno)
{
	struct fs_buf *b = fs_bcache_find(&fs->bc, blkno);

	/* a pinned buffer is still in use by the caller; it is dropped at its last put */
	if (b && !b->refs)
		fs_bcache_unlink(&fs->bc, b);
	else if (b)
		b->magic = 0;
}
