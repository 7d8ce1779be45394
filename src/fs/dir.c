// SPDX-License-Identifier: MIT
/*
 * src/fs/dir.c - directories: extendible hashing of bucket blocks.
 *
 * A name hashes (seeded FNV-1a 64 + a finaliser, kept to 63 bits, at least 2) to
 * h. The directory's table (logical blocks 0..64, 1016 le32 entries a block)
 * has 2^dir_depth entries; entry h >> (63 - dir_depth) names the logical block of
 * the bucket holding h. A bucket of local depth l holds every name whose top l
 * hash bits equal its own; it is shared by 2^(dir_depth - l) consecutive table
 * entries. A full bucket splits on hash bit l+1 (doubling the table first when
 * l == dir_depth), so a lookup reads one table block and one bucket whatever the
 * size of the directory.
 *
 * Inside a bucket, entries are packed and sorted by hash. Because buckets cover
 * contiguous hash ranges in table order, walking the table in order visits names
 * in hash order: readdir offsets are hashes (0 ".", 1 "..", then h + 1 resumes
 * after the name with hash h), unaffected by splits or other names coming and
 * going. Two names of one directory may not share a 63-bit hash: the second is
 * refused with -ENOSPC (logged; odds about n^2 / 2^64).
 *
 * Buckets never merge: an emptied directory keeps its blocks until removed, as
 * ext3 directories do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

uint64_t fs_dir_hash(uint64_t seed, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	/* splitmix64 finaliser: FNV's low-entropy top bits pick the bucket */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	h >>= 64 - FS_HASH_BITS;
	return h < 2 ? h + 2 : h;
}

static uint32_t fs_dtable_get(const uint8_t *blk, uint32_t i)
{
	le32 v;

	memcpy(&v, blk + FS_DTABLE_OFFSET + 4 * i, 4);
	return jg_le32(v);
}

static void fs_dtable_set(uint8_t *blk, uint32_t i, uint32_t lblk)
{
	le32 v = jg_cpu_to_le32(lblk);

	memcpy(blk + FS_DTABLE_OFFSET + 4 * i, &v, 4);
}

static uint32_t fs_dir_index(uint64_t hash, uint32_t depth)
{
	return depth ? (uint32_t)(hash >> (FS_HASH_BITS - depth)) : 0;
}

/* Read logical block @lblk of directory @dip; a hole there is damage. */
static int fs_dir_bread(struct fs *fs, const struct fs_inode *dip, uint64_t lblk, uint32_t magic,
			struct fs_buf **out)
{
	uint64_t pblk, run;
	int rc = fs_bmap_get(fs, dip, lblk, 1, &pblk, &run);

	if (rc)
		return rc;
	if (!pblk) {
		fs_set_error(fs, "directory %llu: logical block %llu missing",
			     (unsigned long long)dip->ino, (unsigned long long)lblk);
		return -EUCLEAN;
	}
	rc = fs_bread(fs, pblk, magic, magic == FS_MAGIC_DTABLE ? "directory table" :
			  "directory bucket", out);
	if (rc == -EUCLEAN)
		fs_set_error(fs, "directory %llu: damaged block %llu", (unsigned long long)dip->ino,
			     (unsigned long long)pblk);
	return rc;
}

/* Structure checks of a bucket: header ranges and the entry chain. */
static int fs_bucket_check(struct fs *fs, const struct fs_inode *dip, const struct fs_buf *b)
{
	const struct fs_dbucket_hdr *bh = (const void *)b->data;
	uint32_t used = jg_le16(bh->used), count = jg_le16(bh->count), off = 0, n = 0;
	uint64_t prev = 0;
	const char *bad = NULL;

	if (used > FS_DBUCKET_SPACE || jg_le32(bh->local_depth) > dip->dir_depth)
		bad = "header";
	while (!bad && off < used) {
		struct fs_dirent de;

		if (used - off < sizeof(de)) {
			bad = "entry";
			break;
		}
		memcpy(&de, b->data + FS_DBUCKET_OFFSET + off, sizeof(de));
		if (!de.name_len || off + sizeof(de) + de.name_len > used ||
		    jg_le64(de.hash) < 2 || jg_le64(de.hash) <= prev ||
		    !fs_ino_valid(fs, jg_le64(de.ino)) || de.type > FS_FT_LNK || !de.type)
			bad = "entry";
		prev = jg_le64(de.hash);
		off += (uint32_t)sizeof(de) + de.name_len;
		n++;
	}
	if (!bad && n != count)
		bad = "count";
	if (!bad)
		return 0;
	jg_log(JG_LOG_ERR, FS_SUBSYS, "directory bucket dev=%s blkno=%llu dir=%llu bad %s",
	       fs->dev->name, (unsigned long long)b->blkno, (unsigned long long)dip->ino, bad);
	fs_set_error(fs, "directory %llu: damaged bucket", (unsigned long long)dip->ino);
	return -EUCLEAN;
}

/* The bucket (logical block and buffer) that holds @hash. */
static int fs_dir_bucket(struct fs *fs, const struct fs_inode *dip, uint64_t hash,
			 uint32_t *lblk, struct fs_buf **out)
{
	uint32_t idx = fs_dir_index(hash, dip->dir_depth);
	struct fs_buf *tb;
	uint32_t bl;
	int rc;

	rc = fs_dir_bread(fs, dip, idx / FS_DTABLE_PER_BLOCK, FS_MAGIC_DTABLE, &tb);
	if (rc)
		return rc;
	bl = fs_dtable_get(tb->data, idx % FS_DTABLE_PER_BLOCK);
	fs_bput(fs, tb);
	if (bl < FS_DIR_FIRST_BUCKET || bl >= FS_DIR_FIRST_BUCKET + dip->dir_buckets) {
		fs_set_error(fs, "directory %llu: table entry %u names block %u", 
			     (unsigned long long)dip->ino, idx, bl);
		return -EUCLEAN;
	}
	rc = fs_dir_bread(fs, dip, bl, FS_MAGIC_DBUCKET, out);
	if (rc)
		return rc;
	rc = fs_bucket_check(fs, dip, *out);
	if (rc) {
		fs_bput(fs, *out);
		return rc;
	}
	*lblk = bl;
	return 0;
}

/*
 * Find @name (hash @hash) in a bucket: 0 with *@off of the entry, -ENOENT with
 * *@off the sorted insert position, -ENOSPC when another name has the same hash.
 */
static int fs_bucket_find(const uint8_t *blk, uint64_t hash, const char *name, size_t len,
			  uint32_t *off)
{
	const struct fs_dbucket_hdr *bh = (const void *)blk;
	uint32_t used = jg_le16(bh->used), o = 0;

	while (o < used) {
		struct fs_dirent de;

		memcpy(&de, blk + FS_DBUCKET_OFFSET + o, sizeof(de));
		if (jg_le64(de.hash) > hash)
			break;
		if (jg_le64(de.hash) == hash) {
			*off = o;
			if (de.name_len == len && !memcmp(blk + FS_DBUCKET_OFFSET + o + sizeof(de),
							  name, len))
				return 0;
			return -ENOSPC;
		}
		o += (uint32_t)sizeof(de) + de.name_len;
	}
	*off = o;
	return -ENOENT;
}

int fs_dir_lookup(struct fs *fs, const struct fs_inode *dip, const char *name, size_t len,
		  uint64_t *ino, unsigned int *ft)
{
	uint64_t hash = fs_dir_hash(fs->hash_seed, name, len);
	struct fs_dirent de;
	struct fs_buf *b;
	uint32_t bl, off;
	int rc;

	rc = fs_dir_bucket(fs, dip, hash, &bl, &b);
	if (rc)
		return rc;
	rc = fs_bucket_find(b->data, hash, name, len, &off);
	if (!rc) {
		memcpy(&de, b->data + FS_DBUCKET_OFFSET + off, sizeof(de));
		*ino = jg_le64(de.ino);
		*ft = de.type;
	} else {
		rc = -ENOENT;
	}
	fs_bput(fs, b);
	return rc;
}

/* A new block at logical @lblk of @dip (table or bucket), zeroed, pinned. */
static int fs_dir_new_block(struct fs_tx *tx, struct fs_inode *dip, uint64_t lblk,
			    struct fs_buf **out)
{
	uint64_t pblk;
	bool fresh;
	int rc = fs_bmap_alloc(tx, dip, lblk, true, &pblk, &fresh);

	if (rc)
		return rc;
	return fs_bget_new(tx->fs, pblk, out);
}

int fs_dir_init(struct fs_tx *tx, struct fs_inode *dip)
{
	struct fs_buf *tb = NULL, *bb = NULL;
	struct fs_dbucket_hdr *bh;
	int rc;

	rc = fs_dir_new_block(tx, dip, 0, &tb);
	if (rc)
		goto out;
	fs_dtable_set(tb->data, 0, FS_DIR_FIRST_BUCKET);
	rc = fs_bdirty(tx, tb, FS_MAGIC_DTABLE);
	if (rc)
		goto out;
	rc = fs_dir_new_block(tx, dip, FS_DIR_FIRST_BUCKET, &bb);
	if (rc)
		goto out;
	bh = (void *)bb->data;
	bh->local_depth = jg_cpu_to_le32(0);
	rc = fs_bdirty(tx, bb, FS_MAGIC_DBUCKET);
	dip->dir_depth = 0;
	dip->dir_buckets = 1;
	dip->dir_entries = 0;
	dip->size = (uint64_t)JG_BLOCK_SIZE * (FS_DIR_FIRST_BUCKET + dip->dir_buckets);
out:
	fs_bput(tx->fs, tb);
	fs_bput(tx->fs, bb);
	return rc;
}

/* Double the table: entry j of depth d+1 is entry j/2 of depth d. A failure leaves
 * the table of depth d as it was (N1 in namei.c). */
static int fs_dir_grow(struct fs_tx *tx, struct fs_inode *dip)
{
	struct fs *fs = tx->fs;
	uint32_t n = 1u << dip->dir_depth;
	uint32_t *tab = malloc(sizeof(*tab) * n);
	uint32_t nblocks_new = (2 * n + FS_DTABLE_PER_BLOCK - 1) / FS_DTABLE_PER_BLOCK;
	uint32_t nblocks_old = (n + FS_DTABLE_PER_BLOCK - 1) / FS_DTABLE_PER_BLOCK;
	struct fs_buf *b = NULL;
	int rc = 0;

	if (!tab)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if (i % FS_DTABLE_PER_BLOCK == 0) {
			fs_bput(fs, b);
			b = NULL;
			rc = fs_dir_bread(fs, dip, i / FS_DTABLE_PER_BLOCK, FS_MAGIC_DTABLE, &b);
			if (rc)
				goto out;
		}
		tab[i] = fs_dtable_get(b->data, i % FS_DTABLE_PER_BLOCK);
	}
	fs_bput(fs, b);
	b = NULL;
	/* new blocks first, old ones last: if an allocation fails, the table of the
	 * current depth is still whole (new blocks past it are never read) */
	for (uint32_t t = nblocks_new; t-- > 0;) {
		if (t < nblocks_old)
			rc = fs_dir_bread(fs, dip, t, FS_MAGIC_DTABLE, &b);
		else
			rc = fs_dir_new_block(tx, dip, t, &b);
		if (rc)
			goto out;
		for (uint32_t k = 0; k < FS_DTABLE_PER_BLOCK; k++) {
			uint32_t j = t * FS_DTABLE_PER_BLOCK + k;

			fs_dtable_set(b->data, k, j < 2 * n ? tab[j / 2] : 0);
		}
		rc = fs_bdirty(tx, b, FS_MAGIC_DTABLE);
		fs_bput(fs, b);
		b = NULL;
		if (rc)
			goto out;
	}
	dip->dir_depth++;
out:
	fs_bput(fs, b);
	free(tab);
	return rc;
}

/* Split bucket @bl (found through hash @hash, local depth l < dir_depth) on bit l+1. */
static int fs_dir_split(struct fs_tx *tx, struct fs_inode *dip, uint64_t hash, uint32_t bl,
			struct fs_buf *ob)
{
	struct fs *fs = tx->fs;
	struct fs_dbucket_hdr *oh = (void *)ob->data, *nh;
	uint32_t l = jg_le32(oh->local_depth), nbl = FS_DIR_FIRST_BUCKET + dip->dir_buckets;
	uint32_t used = jg_le16(oh->used), o = 0, keep = 0, kcount = 0, mcount = 0, moved = 0;
	uint8_t *tmp = malloc(FS_DBUCKET_SPACE);
	uint32_t idx, span, start;
	struct fs_buf *nb = NULL, *tb = NULL;
	int rc;

	if (!tmp)
		return -ENOMEM;
	rc = fs_dir_new_block(tx, dip, nbl, &nb);
	if (rc)
		goto out;
	nh = (void *)nb->data;
	/* entries with hash bit l+1 set move to the new bucket, order kept */
	while (o < used) {
		struct fs_dirent de;
		uint32_t rl;

		memcpy(&de, ob->data + FS_DBUCKET_OFFSET + o, sizeof(de));
		rl = (uint32_t)sizeof(de) + de.name_len;
		if ((jg_le64(de.hash) >> (FS_HASH_BITS - 1 - l)) & 1) {
			memcpy(nb->data + FS_DBUCKET_OFFSET + moved, ob->data + FS_DBUCKET_OFFSET + o, rl);
			moved += rl;
			mcount++;
		} else {
			memcpy(tmp + keep, ob->data + FS_DBUCKET_OFFSET + o, rl);
			keep += rl;
			kcount++;
		}
		o += rl;
	}
	memset(ob->data + FS_DBUCKET_OFFSET, 0, FS_DBUCKET_SPACE);
	memcpy(ob->data + FS_DBUCKET_OFFSET, tmp, keep);
	oh->used = jg_cpu_to_le16((uint16_t)keep);
	oh->count = jg_cpu_to_le16((uint16_t)kcount);
	oh->local_depth = jg_cpu_to_le32(l + 1);
	nh->used = jg_cpu_to_le16((uint16_t)moved);
	nh->count = jg_cpu_to_le16((uint16_t)mcount);
	nh->local_depth = jg_cpu_to_le32(l + 1);
	rc = fs_bdirty(tx, ob, FS_MAGIC_DBUCKET);
	if (!rc)
		rc = fs_bdirty(tx, nb, FS_MAGIC_DBUCKET);
	if (rc)
		goto out;
	dip->dir_buckets++;
	dip->size = (uint64_t)JG_BLOCK_SIZE * (FS_DIR_FIRST_BUCKET + dip->dir_buckets);
	/* the upper half of the bucket's table range now names the new bucket */
	idx = fs_dir_index(hash, dip->dir_depth);
	span = 1u << (dip->dir_depth - l);
	start = idx & ~(span - 1);
	for (uint32_t j = start + span / 2; j < start + span; j++) {
		if (!tb || j % FS_DTABLE_PER_BLOCK == 0) {
			if (tb) {
				rc = fs_bdirty(tx, tb, FS_MAGIC_DTABLE);
				fs_bput(fs, tb);
				tb = NULL;
				if (rc)
					goto out;
			}
			rc = fs_dir_bread(fs, dip, j / FS_DTABLE_PER_BLOCK, FS_MAGIC_DTABLE, &tb);
			if (rc)
				goto out;
		}
		if (fs_dtable_get(tb->data, j % FS_DTABLE_PER_BLOCK) != bl) {
			fs_set_error(fs, "directory %llu: table entry %u does not name bucket %u",
				     (unsigned long long)dip->ino, j, bl);
			rc = -EUCLEAN;
			goto out;
		}
		fs_dtable_set(tb->data, j % FS_DTABLE_PER_BLOCK, nbl);
	}
	if (tb)
		rc = fs_bdirty(tx, tb, FS_MAGIC_DTABLE);
out:
	fs_bput(fs, tb);
	fs_bput(fs, nb);
	free(tmp);
	return rc;
}

int fs_dir_add(struct fs_tx *tx, struct fs_inode *dip, const char *name, size_t len,
	       uint64_t ino, unsigned int ft)
{
	struct fs *fs = tx->fs;
	uint64_t hash = fs_dir_hash(fs->hash_seed, name, len);
	uint32_t rl = (uint32_t)(sizeof(struct fs_dirent) + len);
	int rc;

	for (int tries = 0;; tries++) {
		struct fs_dbucket_hdr *bh;
		struct fs_dirent de;
		struct fs_buf *b;
		uint32_t bl, off, used;

		rc = fs_dir_bucket(fs, dip, hash, &bl, &b);
		if (rc)
			return rc;
		bh = (void *)b->data;
		used = jg_le16(bh->used);
		rc = fs_bucket_find(b->data, hash, name, len, &off);
		if (rc != -ENOENT) {
			fs_bput(fs, b);
			if (!rc)
				return -EEXIST;
			jg_log(JG_LOG_WARN, FS_SUBSYS, "dir=%llu name hash collision for '%.*s'",
			       (unsigned long long)dip->ino, (int)len, name);
			return rc;
		}
		if (used + rl <= FS_DBUCKET_SPACE) {
			uint8_t *at = b->data + FS_DBUCKET_OFFSET + off;

			memmove(at + rl, at, used - off);
			de.hash = jg_cpu_to_le64(hash);
			de.ino = jg_cpu_to_le64(ino);
			de.name_len = (uint8_t)len;
			de.type = (uint8_t)ft;
			memcpy(at, &de, sizeof(de));
			memcpy(at + sizeof(de), name, len);
			bh->used = jg_cpu_to_le16((uint16_t)(used + rl));
			bh->count = jg_cpu_to_le16((uint16_t)(jg_le16(bh->count) + 1));
			rc = fs_bdirty(tx, b, FS_MAGIC_DBUCKET);
			fs_bput(fs, b);
			if (!rc)
				dip->dir_entries++;
			return rc;
		}
		/* full: split (growing the table first when needed) and retry */
		if (tries >= 4 || (jg_le32(bh->local_depth) == dip->dir_depth &&
				   dip->dir_depth >= FS_DIR_MAX_DEPTH)) {
			fs_bput(fs, b);
			jg_log(JG_LOG_WARN, FS_SUBSYS, "dir=%llu full: bucket cannot split",
			       (unsigned long long)dip->ino);
			return -ENOSPC;
		}
		if (jg_le32(bh->local_depth) == dip->dir_depth) {
			rc = fs_dir_grow(tx, dip);
			if (rc) {
				fs_bput(fs, b);
				return rc;
			}
		}
		rc = fs_dir_split(tx, dip, hash, bl, b);
		fs_bput(fs, b);
		if (rc)
			return rc;
	}
}

static int fs_dir_find_entry(struct fs *fs, const struct fs_inode *dip, const char *name,
			     size_t len, struct fs_buf **b, uint32_t *off)
{
	uint64_t hash = fs_dir_hash(fs->hash_seed, name, len);
	uint32_t bl;
	int rc;

	rc = fs_dir_bucket(fs, dip, hash, &bl, b);
	if (rc)
		return rc;
	rc = fs_bucket_find((*b)->data, hash, name, len, off);
	if (rc) {
		fs_bput(fs, *b);
		return -ENOENT;
	}
	return 0;
}

int fs_dir_remove(struct fs_tx *tx, struct fs_inode *dip, const char *name, size_t len)
{
	struct fs_dbucket_hdr *bh;
	uint32_t off, used, rl;
	struct fs_buf *b;
	uint8_t *at;
	int rc;

	rc = fs_dir_find_entry(tx->fs, dip, name, len, &b, &off);
	if (rc)
		return rc;
	bh = (void *)b->data;
	used = jg_le16(bh->used);
	at = b->data + FS_DBUCKET_OFFSET + off;
	rl = (uint32_t)(sizeof(struct fs_dirent) + at[offsetof(struct fs_dirent, name_len)]);
	memmove(at, at + rl, used - off - rl);
	memset(b->data + FS_DBUCKET_OFFSET + used - rl, 0, rl);
	bh->used = jg_cpu_to_le16((uint16_t)(used - rl));
	bh->count = jg_cpu_to_le16((uint16_t)(jg_le16(bh->count) - 1));
	rc = fs_bdirty(tx, b, FS_MAGIC_DBUCKET);
	fs_bput(tx->fs, b);
	if (!rc)
		dip->dir_entries--;
	return rc;
}

int fs_dir_set(struct fs_tx *tx, struct fs_inode *dip, const char *name, size_t len,
	       uint64_t ino, unsigned int ft)
{
	struct fs_dirent de;
	struct fs_buf *b;
	uint32_t off;
	int rc;

	rc = fs_dir_find_entry(tx->fs, dip, name, len, &b, &off);
	if (rc)
		return rc;
	memcpy(&de, b->data + FS_DBUCKET_OFFSET + off, sizeof(de));
	de.ino = jg_cpu_to_le64(ino);
	de.type = (uint8_t)ft;
	memcpy(b->data + FS_DBUCKET_OFFSET + off, &de, sizeof(de));
	rc = fs_bdirty(tx, b, FS_MAGIC_DBUCKET);
	fs_bput(tx->fs, b);
	return rc;
}

int fs_dir_iterate(struct fs *fs, const struct fs_inode *dip, uint64_t off, fs_dir_iter_fn fn,
		   void *ctx)
{
	uint32_t n = 1u << dip->dir_depth, depth = dip->dir_depth;
	uint8_t *copy = malloc(JG_BLOCK_SIZE);
	uint32_t idx = off < 2 ? 0 : fs_dir_index(off, depth);
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	while (idx < n) {
		const struct fs_dbucket_hdr *bh = (const void *)copy;
		uint64_t hash = (uint64_t)idx << (FS_HASH_BITS - depth);
		uint32_t bl, o = 0, used, span;
		struct fs_buf *b;

		if (!depth)
			hash = 0;
		rc = fs_dir_bucket(fs, dip, hash, &bl, &b);
		if (rc)
			break;
		/* work on a copy: the callback may re-enter the filesystem (fsck) */
		memcpy(copy, b->data, JG_BLOCK_SIZE);
		fs_bput(fs, b);
		used = jg_le16(bh->used);
		span = 1u << (depth - jg_le32(bh->local_depth));
		while (o < used) {
			struct fs_dirent de;

			memcpy(&de, copy + FS_DBUCKET_OFFSET + o, sizeof(de));
			if (jg_le64(de.hash) >= off) {
				rc = fn(ctx, (const char *)copy + FS_DBUCKET_OFFSET + o + sizeof(de),
					de.name_len, jg_le64(de.ino), de.type, jg_le64(de.hash));
				if (rc)
					goto out;
			}
			o += (uint32_t)sizeof(de) + de.name_len;
		}
		idx = (idx & ~(span - 1)) + span;
	}
out:
	free(copy);
	return rc < 0 ? rc : 0;
}
