// SPDX-License-Identifier: MIT
/*
 * src/fs/xattr.c - user.* extended attributes: one block per inode.
 *
 * The block (magic FS_MAGIC_XATTR) holds packed entries after its header: u8
 * name_len, le16 value_len, the full name ("user.x", no NUL), the value. All of
 * an inode's attributes share the block (at most FS_XATTR_SPACE bytes with
 * entry headers: -ENOSPC beyond). A change rewrites the block in one handle; the
 * block is freed with its last attribute, or in the handle that allocated it
 * when the change fails (N1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs_i.h"

static int fs_xattr_name(const char *name, size_t *len)
{
	size_t n = strnlen(name, 256);

	if (strncmp(name, "user.", 5))
		return -EOPNOTSUPP;
	if (n == 5)
		return -EINVAL;
	if (n > 255)
		return -ERANGE;
	*len = n;
	return 0;
}

/* Load and check the attribute block of @ip (NULL *out when it has none). */
static int fs_xattr_load(struct fs *fs, const struct fs_inode *ip, struct fs_buf **out)
{
	const struct fs_xattr_hdr *xh;
	uint32_t used, off = 0, n = 0;
	int rc;

	*out = NULL;
	if (!ip->xattr_blk)
		return 0;
	rc = fs_bread(fs, ip->xattr_blk, FS_MAGIC_XATTR, "xattr block", out);
	if (rc) {
		if (rc == -EUCLEAN)
			fs_set_error(fs, "inode %llu: damaged xattr block", (unsigned long long)ip->ino);
		return rc;
	}
	xh = (const void *)(*out)->data;
	used = jg_le16(xh->used);
	while (used <= FS_XATTR_SPACE && off + FS_XATTR_ENTRY_HDR <= used) {
		const uint8_t *e = (*out)->data + FS_XATTR_OFFSET + off;
		uint16_t vl;

		memcpy(&vl, e + 1, 2);
		if (!e[0])
			break;
		off += FS_XATTR_ENTRY_HDR + e[0] + vl;
		n++;
	}
	if (used > FS_XATTR_SPACE || off != used || n != jg_le16(xh->count)) {
		jg_log(JG_LOG_ERR, FS_SUBSYS, "xattr block dev=%s blkno=%llu bad entries",
		       fs->dev->name, (unsigned long long)ip->xattr_blk);
		fs_set_error(fs, "inode %llu: damaged xattr block", (unsigned long long)ip->ino);
		fs_bput(fs, *out);
		*out = NULL;
		return -EUCLEAN;
	}
	return 0;
}

/* Offset of attribute @name in the block, or -ENODATA. */
static int fs_xattr_find(const uint8_t *blk, const char *name, size_t len, uint32_t *at)
{
	const struct fs_xattr_hdr *xh = (const void *)blk;
	uint32_t used = jg_le16(xh->used), off = 0;

	while (off < used) {
		const uint8_t *e = blk + FS_XATTR_OFFSET + off;
		uint16_t vl;

		memcpy(&vl, e + 1, 2);
		if (e[0] == len && !memcmp(e + FS_XATTR_ENTRY_HDR, name, len)) {
			*at = off;
			return 0;
		}
		off += FS_XATTR_ENTRY_HDR + e[0] + vl;
	}
	return -ENODATA;
}

/* One try of a setxattr, in one handle; *@no_block: the attribute block could not
 * be allocated (else -ENOSPC is a full block). */
static int fs_setxattr_locked(struct fs *fs, uint64_t ino, const char *name, size_t len,
			      const void *value, size_t size, int flags, bool *no_block)
{
	struct fs_buf *b = NULL;
	struct fs_xattr_hdr *xh;
	struct fs_inode ip;
	struct fs_tx *tx = NULL;
	uint32_t at, used;
	bool fresh = false;
	int rc;

	rc = fs_tx_start(fs, FS_CREDITS_XATTR, &tx);
	if (!rc)
		rc = fs_iget(fs, ino, &ip);
	if (!rc)
		rc = fs_xattr_load(fs, &ip, &b);
	if (rc)
		goto out;
	if (!b) {
		if (flags & XATTR_REPLACE) {
			rc = -ENODATA;
			goto out;
		}
		rc = fs_block_alloc(tx, fs_group_data_start(fs, (uint32_t)((ino - 1) / fs->ipg)),
				    &ip.xattr_blk);
		fresh = !rc;
		*no_block = rc == -ENOSPC;
		if (!rc)
			rc = fs_bget_new(fs, ip.xattr_blk, &b);
		if (rc)
			goto out;
		ip.blocks++;
	}
	xh = (void *)b->data;
	used = jg_le16(xh->used);
	rc = fs_xattr_find(b->data, name, len, &at);
	if (!rc && (flags & XATTR_CREATE)) {
		rc = -EEXIST;
		goto out;
	}
	if (rc && (flags & XATTR_REPLACE))
		goto out;
	if (!rc) {
		/* drop the old value first */
		uint8_t *e = b->data + FS_XATTR_OFFSET + at;
		uint16_t vl;
		uint32_t el;

		memcpy(&vl, e + 1, 2);
		el = FS_XATTR_ENTRY_HDR + e[0] + vl;
		memmove(e, e + el, used - at - el);
		used -= el;
		memset(b->data + FS_XATTR_OFFSET + used, 0, el);
		xh->count = jg_cpu_to_le16((uint16_t)(jg_le16(xh->count) - 1));
	}
	if (used + FS_XATTR_ENTRY_HDR + len + size > FS_XATTR_SPACE) {
		rc = -ENOSPC;
		goto out;	/* the cached block is re-read: this change is not dirtied */
	}
	{
		uint8_t *e = b->data + FS_XATTR_OFFSET + used;
		uint16_t vl = (uint16_t)size;

		e[0] = (uint8_t)len;
		memcpy(e + 1, &vl, 2);
		memcpy(e + FS_XATTR_ENTRY_HDR, name, len);
		memcpy(e + FS_XATTR_ENTRY_HDR + len, value, size);
		used += (uint32_t)(FS_XATTR_ENTRY_HDR + len + size);
	}
	xh->used = jg_cpu_to_le16((uint16_t)used);
	xh->count = jg_cpu_to_le16((uint16_t)(jg_le16(xh->count) + 1));
	rc = fs_bdirty(tx, b, FS_MAGIC_XATTR);
	if (!rc) {
		fs_now(&ip.ctime);
		rc = fs_iput(tx, &ip);
	}
out:
	if (b && rc) {
		/* an undirtied change must not stay in the cache (F2) */
		uint64_t blkno = b->blkno;

		fs_bput(fs, b);
		fs_bcache_drop(fs, blkno);
		b = NULL;
	}
	fs_bput(fs, b);
	if (rc && fresh && fs_block_free(tx, ip.xattr_blk, true))
		/* the handle would commit a block no inode names */
		fs_set_error(fs, "inode %llu: new xattr block %llu not freed",
			     (unsigned long long)ino, (unsigned long long)ip.xattr_blk);
	if (tx)
		rc = fs_tx_end(tx, rc);
	return rc;
}

int fs_setxattr(struct fs *fs, uint64_t ino, const char *name, const void *value, size_t size,
		int flags)
{
	bool no_block = false, retried = false;
	size_t len;
	int rc;

	rc = fs_xattr_name(name, &len);
	if (rc)
		return rc;
	if (FS_XATTR_ENTRY_HDR + len + size > FS_XATTR_SPACE)
		return -E2BIG;
	jg_mutex_lock(&fs->lock);
	rc = fs_writable(fs);
	if (!rc)
		rc = fs_setxattr_locked(fs, ino, name, len, value, size, flags, &no_block);
	/* a failed try changed nothing: the new block is freed, the cached one dropped */
	if (no_block && fs_nospc_retry_locked(fs, &rc, &retried))
		rc = fs_setxattr_locked(fs, ino, name, len, value, size, flags, &no_block);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void *value, size_t size)
{
	struct fs_buf *b = NULL;
	struct fs_inode ip;
	uint32_t at;
	size_t len;
	ssize_t rc;

	rc = fs_xattr_name(name, &len);
	if (rc)
		return rc == -EOPNOTSUPP ? -ENODATA : rc;
	jg_mutex_lock(&fs->lock);
	rc = fs_iget(fs, ino, &ip);
	if (!rc)
		rc = fs_xattr_load(fs, &ip, &b);
	if (rc)
		goto out;
	if (!b) {
		rc = -ENODATA;
		goto out;
	}
	rc = fs_xattr_find(b->data, name, len, &at);
	if (!rc) {
		const uint8_t *e = b->data + FS_XATTR_OFFSET + at;
		uint16_t vl;

		memcpy(&vl, e + 1, 2);
		if (size && size < vl)
			rc = -ERANGE;
		else if (size)
			memcpy(value, e + FS_XATTR_ENTRY_HDR + e[0], vl);
		if (!rc)
			rc = vl;
	}
out:
	fs_bput(fs, b);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t fs_listxattr(struct fs *fs, uint64_t ino, char *list, size_t size)
{
	struct fs_buf *b = NULL;
	struct fs_inode ip;
	size_t need = 0;
	ssize_t rc;

	jg_mutex_lock(&fs->lock);
	rc = fs_iget(fs, ino, &ip);
	if (!rc)
		rc = fs_xattr_load(fs, &ip, &b);
	if (rc || !b)
		goto out;
	for (uint32_t off = 0; off < jg_le16(((struct fs_xattr_hdr *)b->data)->used);) {
		const uint8_t *e = b->data + FS_XATTR_OFFSET + off;
		uint16_t vl;

		memcpy(&vl, e + 1, 2);
		if (size && need + e[0] + 1 <= size) {
			memcpy(list + need, e + FS_XATTR_ENTRY_HDR, e[0]);
			list[need + e[0]] = 0;
		}
		need += e[0] + 1u;
		off += FS_XATTR_ENTRY_HDR + e[0] + vl;
	}
out:
	fs_bput(fs, b);
	if (!rc)
		rc = size && need > size ? -ERANGE : (ssize_t)need;
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_removexattr(struct fs *fs, uint64_t ino, const char *name)
{
	struct fs_buf *b = NULL;
	struct fs_xattr_hdr *xh;
	struct fs_inode ip;
	struct fs_tx *tx = NULL;
	uint32_t at, used, el;
	uint16_t vl;
	uint8_t *e;
	size_t len;
	int rc;

	rc = fs_xattr_name(name, &len);
	if (rc)
		return rc;
	jg_mutex_lock(&fs->lock);
	rc = fs_writable(fs);
	if (!rc)
		rc = fs_tx_start(fs, FS_CREDITS_XATTR, &tx);
	if (!rc)
		rc = fs_iget(fs, ino, &ip);
	if (!rc)
		rc = fs_xattr_load(fs, &ip, &b);
	if (!rc && !b)
		rc = -ENODATA;
	if (!rc)
		rc = fs_xattr_find(b->data, name, len, &at);
	if (rc)
		goto out;
	xh = (void *)b->data;
	used = jg_le16(xh->used);
	e = b->data + FS_XATTR_OFFSET + at;
	memcpy(&vl, e + 1, 2);
	el = FS_XATTR_ENTRY_HDR + e[0] + vl;
	memmove(e, e + el, used - at - el);
	memset(b->data + FS_XATTR_OFFSET + used - el, 0, el);
	xh->used = jg_cpu_to_le16((uint16_t)(used - el));
	xh->count = jg_cpu_to_le16((uint16_t)(jg_le16(xh->count) - 1));
	if (!jg_le16(xh->count)) {
		fs_bput(fs, b);
		b = NULL;
		rc = fs_xattr_free(tx, &ip);
	} else {
		rc = fs_bdirty(tx, b, FS_MAGIC_XATTR);
	}
	if (!rc) {
		fs_now(&ip.ctime);
		rc = fs_iput(tx, &ip);
	}
out:
	fs_bput(fs, b);
	if (tx)
		rc = fs_tx_end(tx, rc);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_xattr_free(struct fs_tx *tx, struct fs_inode *ip)
{
	int rc;

	if (!ip->xattr_blk)
		return 0;
	rc = fs_block_free(tx, ip->xattr_blk, true);
	if (!rc) {
		ip->xattr_blk = 0;
		ip->blocks--;
	}
	return rc;
}
