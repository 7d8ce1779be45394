// SPDX-License-Identifier: MIT
/*
 * src/fs/bmap.c - the block map: logical block of a file -> device block.
 *
 * As ext2/ext3: inode.block[0..10] map logical blocks 0..10 directly, block[11]
 * is a single indirect block (508 pointers after its 32-byte header), block[12]
 * double, block[13] triple indirect: 11 + 508 + 508^2 + 508^3 blocks (about
 * 500 GiB). A pointer 0 is a hole; holes cost nothing, so sparse files of any
 * size up to that need only the indirect blocks on the paths in use. Indirect
 * blocks are metadata (magic FS_MAGIC_INDIRECT), logged through the journal.
 *
 * (X1) A pointer that fs_bmap_alloc set for a block whose contents the caller
 *      then failed to hand to the journal is cleared, and the block freed, in
 *      the same handle (fs_bmap_unmap): a committed map never names a block
 *      that was not written for its file, or a later partial write would
 *      merge, and a read return, the block's previous owner's bytes.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"

#define FS_P1 ((uint64_t)FS_PTRS_PER_BLOCK)
#define FS_P2 (FS_P1 * FS_P1)
#define FS_P3 (FS_P2 * FS_P1)

static uint64_t fs_ptr_get(const uint8_t *blk, uint32_t i)
{
	le64 v;

	memcpy(&v, blk + FS_PTRS_OFFSET + 8 * i, 8);
	return jg_le64(v);
}

static void fs_ptr_set(uint8_t *blk, uint32_t i, uint64_t p)
{
	le64 v = jg_cpu_to_le64(p);

	memcpy(blk + FS_PTRS_OFFSET + 8 * i, &v, 8);
}

/*
 * Path of @lblk: the inode slot, the depth (0: direct) and the index at each
 * indirect level, outermost first.
 */
static int fs_bmap_path(uint64_t lblk, unsigned int *slot, uint32_t idx[3])
{
	if (lblk < FS_NDIR) {
		*slot = (unsigned int)lblk;
		return 0;
	}
	lblk -= FS_NDIR;
	if (lblk < FS_P1) {
		*slot = FS_IND;
		idx[0] = (uint32_t)lblk;
		return 1;
	}
	lblk -= FS_P1;
	if (lblk < FS_P2) {
		*slot = FS_DIND;
		idx[0] = (uint32_t)(lblk / FS_P1);
		idx[1] = (uint32_t)(lblk % FS_P1);
		return 2;
	}
	lblk -= FS_P2;
	if (lblk < FS_P3) {
		*slot = FS_TIND;
		idx[0] = (uint32_t)(lblk / FS_P2);
		idx[1] = (uint32_t)(lblk / FS_P1 % FS_P1);
		idx[2] = (uint32_t)(lblk % FS_P1);
		return 3;
	}
	return -EFBIG;
}

static int fs_bmap_bad(struct fs *fs, const struct fs_inode *ip, uint64_t at, uint64_t p)
{
	fs_set_error(fs, "inode %llu: indirect block %llu holds pointer %llu out of range",
		     (unsigned long long)ip->ino, (unsigned long long)at, (unsigned long long)p);
	return -EUCLEAN;
}

static int fs_bmap_lookup(struct fs *fs, const struct fs_inode *ip, uint64_t lblk, uint64_t *pblk)
{
	uint32_t idx[3];
	unsigned int slot;
	int depth = fs_bmap_path(lblk, &slot, idx);
	uint64_t p;

	if (depth < 0)
		return depth;
	p = ip->block[slot];
	for (int d = 0; d < depth && p; d++) {
		struct fs_buf *b;
		uint64_t at = p;
		int rc = fs_bread(fs, p, FS_MAGIC_INDIRECT, "indirect block", &b);

		if (rc) {
			if (rc == -EUCLEAN)
				fs_set_error(fs, "inode %llu: damaged indirect block",
					     (unsigned long long)ip->ino);
			return rc;
		}
		p = fs_ptr_get(b->data, idx[d]);
		fs_bput(fs, b);
		if (p && !fs_block_valid(fs, p))
			return fs_bmap_bad(fs, ip, at, p);
	}
	*pblk = p;
	return 0;
}

int fs_bmap_get(struct fs *fs, const struct fs_inode *ip, uint64_t lblk, uint64_t max,
		uint64_t *pblk, uint64_t *run)
{
	uint64_t first, p;
	uint64_t n = 1;
	int rc;

	if (ip->flags & FS_INODE_FL_INLINE) {
		*pblk = 0;
		*run = 1;
		return 0;
	}
	rc = fs_bmap_lookup(fs, ip, lblk, &first);
	if (rc)
		return rc;
	while (n < max) {
		rc = fs_bmap_lookup(fs, ip, lblk + n, &p);
		if (rc == -EFBIG)
			break;
		if (rc)
			return rc;
		if (first ? p != first + n : p != 0)
			break;
		n++;
	}
	*pblk = first;
	*run = n;
	return 0;
}

/* A new, zeroed indirect block, sealed and logged. */
static int fs_bmap_new_indirect(struct fs_tx *tx, struct fs_inode *ip, uint64_t goal,
				uint64_t *out)
{
	struct fs_buf *b;
	int rc = fs_block_alloc(tx, goal, out);

	if (rc)
		return rc;
	ip->blocks++;
	rc = fs_bget_new(tx->fs, *out, &b);
	if (rc)
		return rc;
	rc = fs_bdirty(tx, b, FS_MAGIC_INDIRECT);
	fs_bput(tx->fs, b);
	return rc;
}

int fs_bmap_alloc(struct fs_tx *tx, struct fs_inode *ip, uint64_t lblk, bool meta,
		  uint64_t *pblk, bool *fresh)
{
	struct fs *fs = tx->fs;
	uint32_t idx[3];
	unsigned int slot;
	int depth = fs_bmap_path(lblk, &slot, idx);
	uint64_t goal = 0, p, prev;
	struct fs_buf *b = NULL;
	int rc;

	(void)meta;
	*fresh = false;
	if (depth < 0)
		return depth;
	rc = fs_bmap_lookup(fs, ip, lblk, &p);
	if (rc)
		return rc;
	if (p) {
		*pblk = p;
		return 0;
	}
	/* goal: right after the previous logical block, else the inode's group */
	if (lblk && !fs_bmap_lookup(fs, ip, lblk - 1, &prev) && prev)
		goal = prev + 1;
	if (!goal)
		goal = fs_group_data_start(fs, (uint32_t)((ip->ino - 1) / fs->ipg));

	if (!depth) {
		rc = fs_block_alloc(tx, goal, &p);
		if (rc)
			return rc;
		ip->blocks++;
		ip->block[slot] = p;
		goto done;
	}
	if (!ip->block[slot]) {
		rc = fs_bmap_new_indirect(tx, ip, goal, &ip->block[slot]);
		if (rc)
			return rc;
	}
	p = ip->block[slot];
	for (int d = 0; d < depth; d++) {
		uint64_t next;

		rc = fs_bread(fs, p, FS_MAGIC_INDIRECT, "indirect block", &b);
		if (rc)
			return rc;
		next = fs_ptr_get(b->data, idx[d]);
		if (!next) {
			if (d == depth - 1) {
				rc = fs_block_alloc(tx, goal, &next);
				if (!rc)
					ip->blocks++;
			} else {
				rc = fs_bmap_new_indirect(tx, ip, goal, &next);
			}
			if (rc)
				goto out;
			fs_ptr_set(b->data, idx[d], next);
			rc = fs_bdirty(tx, b, FS_MAGIC_INDIRECT);
			if (rc)
				goto out;
		}
		fs_bput(fs, b);
		b = NULL;
		p = next;
	}
done:
	*pblk = p;
	*fresh = true;
out:
	fs_bput(fs, b);
	return rc;
}

/*
 * Undo the mapping of @lblk made by fs_bmap_alloc in this handle: free the block,
 * clear its pointer (in @ip or in its indirect block, logged again). Indirect
 * blocks on the path stay: an empty one is a valid part of the map. (X1)
 */
int fs_bmap_unmap(struct fs_tx *tx, struct fs_inode *ip, uint64_t lblk, bool meta)
{
	struct fs *fs = tx->fs;
	uint32_t idx[3];
	unsigned int slot;
	int depth = fs_bmap_path(lblk, &slot, idx);
	struct fs_buf *b = NULL;
	uint64_t p;
	int rc;

	if (depth < 0)
		return depth;
	p = ip->block[slot];
	if (!depth) {
		if (!p)
			return 0;
		rc = fs_block_free(tx, p, meta);
		if (!rc) {
			ip->block[slot] = 0;
			ip->blocks--;
		}
		return rc;
	}
	for (int d = 0; d < depth && p; d++) {
		uint64_t at = p;

		fs_bput(fs, b);
		rc = fs_bread(fs, at, FS_MAGIC_INDIRECT, "indirect block", &b);
		if (rc)
			return rc;
		p = fs_ptr_get(b->data, idx[d]);
		if (p && !fs_block_valid(fs, p)) {
			rc = fs_bmap_bad(fs, ip, at, p);
			goto out;
		}
	}
	rc = 0;
	if (!p)
		goto out;
	fs_ptr_set(b->data, idx[depth - 1], 0);
	rc = fs_bdirty(tx, b, FS_MAGIC_INDIRECT);
	if (rc) {
		fs_ptr_set(b->data, idx[depth - 1], p);	/* the cache keeps the logged copy (F2) */
		goto out;
	}
	rc = fs_block_free(tx, p, meta);
	if (!rc)
		ip->blocks--;
out:
	fs_bput(fs, b);
	return rc;
}

/* ---------------------------------------------------------------- truncate */

struct fs_trunc {
	struct fs_tx *tx;
	struct fs_inode *ip;
	uint64_t from;
	bool meta;
	bool stop;
	unsigned int frees;
};

/* Revoke records take log space too: bound the frees of one handle. */
#define FS_TRUNC_MAX_FREES 512u

static bool fs_trunc_room(struct fs_trunc *t)
{
	/* bitmap, descriptor, up to 3 indirect blocks, inode */
	return t->frees < FS_TRUNC_MAX_FREES && fs_tx_room(t->tx, 6);
}

static uint64_t fs_span(int level)
{
	return level == 1 ? FS_P1 : level == 2 ? FS_P2 : FS_P3;
}

/* Free mapped blocks >= t->from under indirect block @pblk (covering @base..). */
static int fs_trunc_tree(struct fs_trunc *t, uint64_t pblk, int level, uint64_t base,
			 bool *empty)
{
	struct fs *fs = t->tx->fs;
	uint64_t child_span = level == 1 ? 1 : fs_span(level - 1);
	bool changed = false, all_zero = true;
	struct fs_buf *b;
	int rc;

	rc = fs_bread(fs, pblk, FS_MAGIC_INDIRECT, "indirect block", &b);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < FS_PTRS_PER_BLOCK; i++) {
		uint64_t p = fs_ptr_get(b->data, i), cbase = base + i * child_span;
		bool cempty = false;

		if (!p)
			continue;
		if (cbase + child_span <= t->from || t->stop) {
			all_zero = false;
			continue;
		}
		if (!fs_block_valid(fs, p)) {
			rc = fs_bmap_bad(fs, t->ip, pblk, p);
			goto out;
		}
		if (level == 1) {
			if (!fs_trunc_room(t)) {
				t->stop = true;
				all_zero = false;
				continue;
			}
			rc = fs_block_free(t->tx, p, t->meta);
			if (rc)
				goto out;
			t->frees++;
			t->ip->blocks--;
			cempty = true;
		} else {
			rc = fs_trunc_tree(t, p, level - 1, cbase, &cempty);
			if (rc)
				goto out;
			if (cempty) {
				rc = fs_block_free(t->tx, p, true);
				if (rc)
					goto out;
				t->frees++;
				t->ip->blocks--;
			}
		}
		if (cempty) {
			fs_ptr_set(b->data, i, 0);
			changed = true;
		} else {
			all_zero = false;
		}
	}
	if (changed)
		rc = fs_bdirty(t->tx, b, FS_MAGIC_INDIRECT);
	*empty = all_zero;
out:
	fs_bput(fs, b);
	return rc;
}

int fs_bmap_truncate(struct fs_tx *tx, struct fs_inode *ip, uint64_t from, bool meta, bool *done)
{
	struct fs_trunc t = { .tx = tx, .ip = ip, .from = from, .meta = meta };
	static const unsigned int slots[3] = { FS_IND, FS_DIND, FS_TIND };
	uint64_t base = FS_NDIR;
	int rc;

	*done = false;
	if (ip->flags & FS_INODE_FL_INLINE) {
		*done = true;
		return 0;
	}
	for (uint64_t i = from; i < FS_NDIR; i++) {
		if (!ip->block[i])
			continue;
		if (!fs_trunc_room(&t))
			return 0;
		rc = fs_block_free(tx, ip->block[i], meta);
		if (rc)
			return rc;
		t.frees++;
		ip->block[i] = 0;
		ip->blocks--;
	}
	for (int l = 1; l <= 3; l++) {
		unsigned int s = slots[l - 1];
		bool empty = false;

		if (ip->block[s] && base + fs_span(l) > from) {
			if (!fs_block_valid(tx->fs, ip->block[s]))
				return fs_bmap_bad(tx->fs, ip, 0, ip->block[s]);
			rc = fs_trunc_tree(&t, ip->block[s], l, base, &empty);
			if (rc)
				return rc;
			if (empty) {
				rc = fs_block_free(tx, ip->block[s], true);
				if (rc)
					return rc;
				ip->block[s] = 0;
				ip->blocks--;
			}
		}
		if (t.stop)
			return 0;
		base += fs_span(l);
	}
	*done = true;
	return 0;
}

/* -------------------------------------------------------------------- walk */

static int fs_walk_tree(struct fs *fs, const struct fs_inode *ip, uint64_t pblk, int level,
			uint64_t base, fs_bmap_walk_fn fn, void *ctx)
{
	uint64_t child_span = level == 1 ? 1 : fs_span(level - 1);
	struct fs_buf *b;
	int rc;

	/* named before it is read: a damaged map block still has an owner */
	rc = fn(ctx, base, pblk, (unsigned int)level);
	if (rc)
		return rc;
	rc = fs_bread(fs, pblk, FS_MAGIC_INDIRECT, "indirect block", &b);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < FS_PTRS_PER_BLOCK && !rc; i++) {
		uint64_t p = fs_ptr_get(b->data, i);

		if (!p)
			continue;
		if (!fs_block_valid(fs, p)) {
			jg_log(JG_LOG_ERR, FS_SUBSYS,
			       "inode %llu dev=%s blkno=%llu bad pointer: %llu out of range",
			       (unsigned long long)ip->ino, fs->dev->name, (unsigned long long)pblk,
			       (unsigned long long)p);
			rc = -EUCLEAN;
		} else if (level == 1) {
			rc = fn(ctx, base + i, p, 0);
		} else {
			rc = fs_walk_tree(fs, ip, p, level - 1, base + i * child_span, fn, ctx);
		}
	}
	fs_bput(fs, b);
	return rc;
}

int fs_bmap_walk(struct fs *fs, const struct fs_inode *ip, fs_bmap_walk_fn fn, void *ctx)
{
	static const unsigned int slots[3] = { FS_IND, FS_DIND, FS_TIND };
	uint64_t base = FS_NDIR;
	int rc;

	if (ip->flags & FS_INODE_FL_INLINE)
		return 0;
	for (unsigned int i = 0; i < FS_NDIR; i++)
		if (ip->block[i]) {
			rc = fn(ctx, i, ip->block[i], 0);
			if (rc)
				return rc;
		}
	for (int l = 1; l <= 3; l++) {
		if (ip->block[slots[l - 1]]) {
			rc = fs_walk_tree(fs, ip, ip->block[slots[l - 1]], l, base, fn, ctx);
			if (rc)
				return rc;
		}
		base += fs_span(l);
	}
	return 0;
}
