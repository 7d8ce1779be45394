// SPDX-License-Identifier: MIT
/*
 * src/fs/namei.c - the namespace operations of fs.h: lookup, getattr, mknod,
 * mkdir, symlink, readlink, link, unlink, rmdir, rename, readdir, references.
 *
 * Each modifying call is one journal handle (atomic), except that freeing an
 * unlinked inode's blocks may take several more; the inode stays on the orphan
 * list meanwhile (F3). A directory's link count is 2 plus its subdirectories; its
 * ".." is the inode's parent field, not an entry.
 *
 * (N1) A call that fails part way leaves, in its handle, a filesystem fsck finds
 *      whole: the journal keeps every block a handle dirtied, so a failure is
 *      undone by dirtying again, not by dropping. A failed create frees what
 *      the new inode got (its blocks, its bitmap bit) and clears it; a failed
 *      fs_dir_add may still have split buckets or mapped blocks, a directory
 *      without the new entry, so the directory inode is written all the same.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"

static int fs_name_check(const char *name, size_t *len)
{
	size_t n = strnlen(name, FS_NAME_MAX + 1);

	if (!n)
		return -ENOENT;
	if (n > FS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', n))
		return -EINVAL;
	*len = n;
	return 0;
}

static bool fs_name_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

static int fs_iget_dir(struct fs *fs, uint64_t ino, struct fs_inode *dip)
{
	int rc = fs_iget(fs, ino, dip);

	if (!rc && !S_ISDIR(dip->mode))
		rc = -ENOTDIR;
	return rc;
}

/* The inode a directory entry names: it must exist. */
static int fs_iget_entry(struct fs *fs, const struct fs_inode *dip, uint64_t ino,
			 struct fs_inode *ip)
{
	int rc = fs_iget(fs, ino, ip);

	if (rc == -ENOENT || (!rc && !ip->nlink)) {
		fs_set_error(fs, "directory %llu names inode %llu, which is free",
			     (unsigned long long)dip->ino, (unsigned long long)ino);
		rc = -EUCLEAN;
	}
	return rc;
}

static uint64_t fs_refs(struct fs *fs, uint64_t ino)
{
	struct fs_istate *s = fs_istate_get(fs, ino, false);

	return s ? s->refs : 0;
}

/* One more reference on @ino (the caller holds the lock). */
static int fs_ref_locked(struct fs *fs, uint64_t ino, uint64_t n)
{
	struct fs_istate *s;

	JG_ASSERT_HELD(&fs->lock);
	s = fs_istate_get(fs, ino, true);
	if (!s)
		return -ENOMEM;
	s->refs += n;
	return 0;
}

static int fs_lookup_common(struct fs *fs, uint64_t parent, const char *name, bool ref,
			    struct fs_attr *out)
{
	struct fs_inode dip, ip;
	unsigned int ft;
	uint64_t ino;
	size_t len;
	int rc;

	rc = fs_name_check(name, &len);
	if (rc)
		return rc;
	jg_mutex_lock(&fs->lock);
	rc = fs_iget_dir(fs, parent, &dip);
	if (rc)
		goto out;
	if (fs_name_dot(name, len)) {
		rc = fs_iget(fs, len == 1 ? dip.ino : dip.parent, &ip);
	} else {
		rc = fs_dir_lookup(fs, &dip, name, len, &ino, &ft);
		if (!rc)
			rc = fs_iget_entry(fs, &dip, ino, &ip);
	}
	if (!rc && ref)
		rc = fs_ref_locked(fs, ip.ino, 1);
	if (!rc)
		fs_inode_to_attr(&ip, out);
out:
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_lookup(struct fs *fs, uint64_t parent, const char *name, struct fs_attr *out)
{
	return fs_lookup_common(fs, parent, name, false, out);
}

int fs_lookup_ref(struct fs *fs, uint64_t parent, const char *name, struct fs_attr *out)
{
	return fs_lookup_common(fs, parent, name, true, out);
}

int fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *out)
{
	struct fs_inode ip;
	int rc;

	jg_mutex_lock(&fs->lock);
	rc = fs_iget(fs, ino, &ip);
	if (!rc)
		fs_inode_to_attr(&ip, out);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

/* ------------------------------------------------------------------ create */

static int fs_symlink_store(struct fs_tx *tx, struct fs_inode *ip, const char *target, size_t len)
{
	uint8_t *buf;
	uint64_t pblk;
	bool fresh;
	int rc;

	ip->size = len;
	if (len <= FS_INLINE_MAX) {
		ip->flags |= FS_INODE_FL_INLINE;
		memset(ip->block, 0, sizeof(ip->block));
		memcpy(ip->block, target, len);
		return 0;
	}
	/* a long target is file data: block 0, zero-padded (F1) */
	buf = jg_zalloc_blocks(1);
	if (!buf)
		return -ENOMEM;
	rc = fs_bmap_alloc(tx, ip, 0, false, &pblk, &fresh);
	if (!rc) {
		memcpy(buf, target, len);
		rc = fs_data_dirty(tx, pblk, buf);
	}
	free(buf);
	return rc;
}

/* fs_dir_add(@dip) failed with @rc: keep what it did to the directory (N1). */
static int fs_dir_add_failed(struct fs_tx *tx, struct fs_inode *dip, int rc)
{
	return fs_iput(tx, dip) ?: rc;
}

/*
 * A create failed with @rc after fs_ialloc gave it @ip: free its blocks and the
 * inode, write it cleared (N1). If that fails too, the handle would commit a
 * half-created inode: stop all writes.
 */
static int fs_create_undo(struct fs_tx *tx, struct fs_inode *ip, int rc)
{
	uint64_t ino = ip->ino, gen = ip->generation;
	bool dir = S_ISDIR(ip->mode), done = false;
	int urc;

	urc = fs_bmap_truncate(tx, ip, 0, dir, &done);
	if (!urc && !done)
		urc = -ENOSPC;	/* the handle's credits ran out: cannot happen for a new inode */
	if (!urc)
		urc = fs_ifree(tx, ino, dir);
	if (!urc) {
		memset(ip, 0, sizeof(*ip));
		ip->ino = ino;
		ip->generation = gen;
		urc = fs_iput(tx, ip);
	}
	if (urc)
		fs_set_error(tx->fs, "inode %llu: failed create (%d) not undone (%d)",
			     (unsigned long long)ino, rc, urc);
	return rc;
}

/* One try of fs_create, in one handle; the big lock held. */
static int fs_create_locked(struct fs *fs, uint64_t parent, const char *name, size_t len,
			    uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid,
			    const char *target, size_t tlen, struct fs_attr *out)
{
	struct fs_inode dip, ip;
	struct fs_tx *tx = NULL;
	struct timespec now;
	unsigned int ft;
	uint64_t ino;
	int rc;

	JG_ASSERT_HELD(&fs->lock);
	rc = fs_tx_start(fs, FS_CREDITS_CREATE, &tx);
	if (rc)
		goto out;
	rc = fs_iget_dir(fs, parent, &dip);
	if (rc)
		goto out;
	if (!dip.nlink) {
		rc = -ENOENT;	/* a removed directory */
		goto out;
	}
	if (fs_name_dot(name, len)) {
		rc = -EEXIST;
		goto out;
	}
	rc = fs_dir_lookup(fs, &dip, name, len, &ino, &ft);
	if (rc != -ENOENT) {
		rc = rc ?: -EEXIST;
		goto out;
	}
	rc = fs_ialloc(tx, parent, S_ISDIR(mode), &ino);
	if (rc)
		goto out;
	fs_now(&now);
	memset(&ip, 0, sizeof(ip));
	ip.ino = ino;
	ip.mode = mode;
	ip.nlink = S_ISDIR(mode) ? 2 : 1;
	ip.uid = uid;
	ip.gid = gid;
	ip.rdev = (S_ISCHR(mode) || S_ISBLK(mode)) ? rdev : 0;
	ip.generation = ((uint64_t)now.tv_sec << 30) ^ (uint64_t)now.tv_nsec ^ ino;
	ip.atime = ip.mtime = ip.ctime = ip.btime = now;
	if (S_ISDIR(mode)) {
		ip.parent = parent;
		rc = fs_dir_init(tx, &ip);
	} else if (S_ISLNK(mode)) {
		rc = fs_symlink_store(tx, &ip, target, tlen);
	}
	if (!rc)
		rc = fs_iput(tx, &ip);
	if (rc) {
		rc = fs_create_undo(tx, &ip, rc);
		goto out;
	}
	rc = fs_dir_add(tx, &dip, name, len, ino, fs_mode_to_ft(mode));
	if (rc) {
		rc = fs_create_undo(tx, &ip, fs_dir_add_failed(tx, &dip, rc));
		goto out;
	}
	if (S_ISDIR(mode))
		dip.nlink++;
	dip.mtime = dip.ctime = now;
	rc = fs_iput(tx, &dip);
	if (!rc && out)
		fs_inode_to_attr(&ip, out);
out:
	if (tx)
		rc = fs_tx_end(tx, rc);
	return rc;
}

static int fs_create(struct fs *fs, uint64_t parent, const char *name, uint32_t mode,
		     uint64_t rdev, uint32_t uid, uint32_t gid, const char *target, bool ref,
		     struct fs_attr *out)
{
	struct fs_attr attr;
	size_t len, tlen = 0;
	bool retried = false;
	int rc;

	rc = fs_name_check(name, &len);
	if (rc)
		return rc;
	if (target) {
		tlen = strnlen(target, FS_SYMLINK_MAX + 1);
		if (tlen > FS_SYMLINK_MAX)
			return -ENAMETOOLONG;
		if (!tlen)
			return -ENOENT;
	}
	if (!fs_mode_to_ft(mode))
		return -EINVAL;
	jg_mutex_lock(&fs->lock);
	rc = fs_writable(fs);
	if (!rc)
		rc = fs_create_locked(fs, parent, name, len, mode, rdev, uid, gid, target, tlen,
				      &attr);
	/* the failed try left nothing behind (N1); with no inode free, no block helps */
	if (fs->free_inodes && fs_nospc_retry_locked(fs, &rc, &retried))
		rc = fs_create_locked(fs, parent, name, len, mode, rdev, uid, gid, target, tlen,
				      &attr);
	/* the kernel's reference before the lock is let go (F1) */
	if (!rc && ref)
		rc = fs_ref_locked(fs, attr.ino, 1);
	if (!rc && out)
		*out = attr;
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_mknod(struct fs *fs, uint64_t parent, const char *name, uint32_t mode, uint64_t rdev,
	     uint32_t uid, uint32_t gid, struct fs_attr *out)
{
	if (S_ISDIR(mode) || S_ISLNK(mode))
		return -EINVAL;
	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	return fs_create(fs, parent, name, mode, rdev, uid, gid, NULL, false, out);
}

int fs_mkdir(struct fs *fs, uint64_t parent, const char *name, uint32_t mode, uint32_t uid,
	     uint32_t gid, struct fs_attr *out)
{
	return fs_create(fs, parent, name, S_IFDIR | (mode & 07777), 0, uid, gid, NULL, false,
			 out);
}

int fs_symlink(struct fs *fs, uint64_t parent, const char *name, const char *target,
	       uint32_t uid, uint32_t gid, struct fs_attr *out)
{
	return fs_create(fs, parent, name, S_IFLNK | 0777, 0, uid, gid, target, false, out);
}

int fs_create_ref(struct fs *fs, uint64_t parent, const char *name, uint32_t mode, uint64_t rdev,
		  const char *target, uint32_t uid, uint32_t gid, struct fs_attr *out)
{
	if (S_ISLNK(mode) != (target != NULL))
		return -EINVAL;
	return fs_create(fs, parent, name, mode, rdev, uid, gid, target, true, out);
}

ssize_t fs_readlink(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct fs_inode ip;
	uint8_t *blk = NULL;
	uint64_t pblk, run;
	ssize_t rc;
	size_t n;

	jg_mutex_lock(&fs->lock);
	rc = fs_iget(fs, ino, &ip);
	if (rc)
		goto out;
	if (!S_ISLNK(ip.mode)) {
		rc = -EINVAL;
		goto out;
	}
	n = ip.size < size ? ip.size : size;
	if (ip.flags & FS_INODE_FL_INLINE) {
		memcpy(buf, ip.block, n);
		rc = (ssize_t)ip.size;
		goto out;
	}
	rc = fs_bmap_get(fs, &ip, 0, 1, &pblk, &run);
	if (rc)
		goto out;
	if (!pblk || ip.size > FS_SYMLINK_MAX) {
		fs_set_error(fs, "symlink %llu: target block missing", (unsigned long long)ino);
		rc = -EUCLEAN;
		goto out;
	}
	blk = jg_alloc_blocks(1);
	if (!blk) {
		rc = -ENOMEM;
		goto out;
	}
	rc = jnl_read(fs->jnl, pblk, 1, blk) ?: fs_dcsum_verify_run(fs, ino, 0, pblk, 1, blk);
	if (!rc) {
		memcpy(buf, blk, n);
		rc = (ssize_t)ip.size;
	}
out:
	free(blk);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

/* ------------------------------------------------------------ link, unlink */

/* One try of a link, in one handle; *@add_failed: the new entry could not be added
 * (then nothing else changed). */
static int fs_link_locked(struct fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
			  size_t len, struct fs_attr *out, bool *add_failed)
{
	struct fs_inode dip, ip;
	struct fs_tx *tx = NULL;
	struct timespec now;
	unsigned int ft;
	uint64_t other;
	int rc;

	rc = fs_tx_start(fs, FS_CREDITS_CREATE, &tx);
	if (rc)
		goto out;
	rc = fs_iget(fs, ino, &ip);
	if (rc)
		goto out;
	if (S_ISDIR(ip.mode)) {
		rc = -EPERM;
		goto out;
	}
	if (!ip.nlink) {
		rc = -ENOENT;
		goto out;
	}
	if (ip.nlink >= 65000) {
		rc = -EMLINK;
		goto out;
	}
	rc = fs_iget_dir(fs, newparent, &dip);
	if (rc)
		goto out;
	if (!dip.nlink) {
		rc = -ENOENT;
		goto out;
	}
	if (fs_name_dot(newname, len)) {
		rc = -EEXIST;
		goto out;
	}
	rc = fs_dir_lookup(fs, &dip, newname, len, &other, &ft);
	if (rc != -ENOENT) {
		rc = rc ?: -EEXIST;
		goto out;
	}
	rc = fs_dir_add(tx, &dip, newname, len, ino, fs_mode_to_ft(ip.mode));
	if (rc) {
		*add_failed = true;
		rc = fs_dir_add_failed(tx, &dip, rc);
		goto out;
	}
	fs_now(&now);
	ip.nlink++;
	ip.ctime = now;
	dip.mtime = dip.ctime = now;
	rc = fs_iput(tx, &ip);
	if (!rc)
		rc = fs_iput(tx, &dip);
	if (!rc && out)
		fs_inode_to_attr(&ip, out);
out:
	if (tx)
		rc = fs_tx_end(tx, rc);
	return rc;
}

static int fs_link_common(struct fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
			  bool ref, struct fs_attr *out)
{
	bool add_failed = false, retried = false;
	size_t len;
	int rc;

	rc = fs_name_check(newname, &len);
	if (rc)
		return rc;
	jg_mutex_lock(&fs->lock);
	rc = fs_writable(fs);
	if (!rc)
		rc = fs_link_locked(fs, ino, newparent, newname, len, out, &add_failed);
	/* the entry's blocks, and nothing else, were wanting (a failed fs_dir_add
	 * leaves the directory whole) */
	if (add_failed && fs_nospc_retry_locked(fs, &rc, &retried))
		rc = fs_link_locked(fs, ino, newparent, newname, len, out, &add_failed);
	if (!rc && ref)
		rc = fs_ref_locked(fs, ino, 1);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_link(struct fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
	    struct fs_attr *out)
{
	return fs_link_common(fs, ino, newparent, newname, false, out);
}

int fs_link_ref(struct fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
		struct fs_attr *out)
{
	return fs_link_common(fs, ino, newparent, newname, true, out);
}

/*
 * Drop one link of @ip (already removed from its directory) in @tx: an inode left
 * without links goes on the orphan list (F3). *@evict when it has no references
 * either: the caller frees it after the handle.
 */
static int fs_drop_link(struct fs_tx *tx, struct fs_inode *ip, const struct timespec *now,
			bool *evict)
{
	if (S_ISDIR(ip->mode))
		ip->nlink = 0;
	else if (ip->nlink)
		ip->nlink--;
	ip->ctime = *now;
	if (ip->nlink)
		return fs_iput(tx, ip);
	*evict = !fs_refs(tx->fs, ip->ino);
	return fs_orphan_add(tx, ip);
}

static int fs_remove(struct fs *fs, uint64_t parent, const char *name, bool dir)
{
	struct fs_inode dip, ip;
	struct fs_tx *tx = NULL;
	struct timespec now;
	bool evict = false;
	unsigned int ft;
	uint64_t ino = 0;
	size_t len;
	int rc;

	rc = fs_name_check(name, &len);
	if (rc)
		return rc;
	if (fs_name_dot(name, len))
		return dir ? (len == 1 ? -EINVAL : -ENOTEMPTY) : -EISDIR;
	jg_mutex_lock(&fs->lock);
	rc = fs_writable(fs);
	if (rc)
		goto out;
	rc = fs_tx_start(fs, FS_CREDITS_UNLINK, &tx);
	if (rc)
		goto out;
	rc = fs_iget_dir(fs, parent, &dip);
	if (!rc)
		rc = fs_dir_lookup(fs, &dip, name, len, &ino, &ft);
	if (!rc)
		rc = fs_iget_entry(fs, &dip, ino, &ip);
	if (rc)
		goto out;
	if (dir && !S_ISDIR(ip.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	if (!dir && S_ISDIR(ip.mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (dir && ip.dir_entries) {
		rc = -ENOTEMPTY;
		goto out;
	}
	rc = fs_dir_remove(tx, &dip, name, len);
	if (rc)
		goto out;
	fs_now(&now);
	if (dir && dip.nlink > 2)
		dip.nlink--;
	dip.mtime = dip.ctime = now;
	rc = fs_iput(tx, &dip);
	if (!rc)
		rc = fs_drop_link(tx, &ip, &now, &evict);
out:
	if (tx)
		rc = fs_tx_end(tx, rc);
	if (!rc && evict)
		rc = fs_inode_evict(fs, ino);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_unlink(struct fs *fs, uint64_t parent, const char *name)
{
	return fs_remove(fs, parent, name, false);
}

int fs_rmdir(struct fs *fs, uint64_t parent, const char *name)
{
	return fs_remove(fs, parent, name, true);
}

/* ------------------------------------------------------------------ rename */

/* Is directory @anc an ancestor of (or the same as) directory @ino? */
static int fs_is_ancestor(struct fs *fs, uint64_t anc, uint64_t ino)
{
	struct fs_inode ip;
	int rc;

	for (uint64_t n = 0; n <= fs->ninodes; n++) {
		if (ino == anc)
			return 1;
		if (ino == FS_ROOT_INO)
			return 0;
		rc = fs_iget(fs, ino, &ip);
		if (rc)
			return rc == -ENOENT ? -EUCLEAN : rc;
		ino = ip.parent;
	}
	fs_set_error(fs, "directory parent chain loops");
	return -EUCLEAN;
}

/* Re-read an inode that may be the same as one already modified in memory. */
static void fs_sync_copy(struct fs_inode *dst, const struct fs_inode *src)
{
	if (dst->ino == src->ino)
		*dst = *src;
}

/* One rename: its names, and the directories and inodes it reads and changes. */
struct fs_rename {
	uint64_t parent, newparent;
	const char *name, *newname;
	size_t slen, dlen;
	unsigned int flags;		/* FS_RENAME_* */
	struct fs_inode sdp, ddp;	/* source and destination directories */
	struct fs_inode sip, dip;	/* the source inode; the destination's, if have_dst */
	uint64_t sino, dino;
	unsigned int sft, dft;
	bool have_dst;
	bool evict;			/* the replaced inode lost its last link and reference */
	struct timespec now;
};

/* Read both directories, the source entry and inode, and the destination's if any. */
static int fs_rename_lookup(struct fs *fs, struct fs_rename *r)
{
	int rc;

	rc = fs_iget_dir(fs, r->parent, &r->sdp);
	if (!rc)
		rc = fs_iget_dir(fs, r->newparent, &r->ddp);
	if (!rc)
		rc = fs_dir_lookup(fs, &r->sdp, r->name, r->slen, &r->sino, &r->sft);
	if (!rc)
		rc = fs_iget_entry(fs, &r->sdp, r->sino, &r->sip);
	if (rc)
		return rc;
	rc = fs_dir_lookup(fs, &r->ddp, r->newname, r->dlen, &r->dino, &r->dft);
	if (!rc) {
		r->have_dst = true;
		rc = fs_iget_entry(fs, &r->ddp, r->dino, &r->dip);
	} else if (rc == -ENOENT) {
		rc = 0;
	}
	return rc;
}

/*
 * What POSIX and the flags refuse, before anything changes: -errno, or 0 with
 * *@noop set when there is nothing to do.
 */
static int fs_rename_check(struct fs *fs, const struct fs_rename *r, bool *noop)
{
	int rc;

	if (r->flags & FS_RENAME_EXCHANGE) {
		if (!r->have_dst)
			return -ENOENT;
	} else if (r->have_dst && (r->flags & FS_RENAME_NOREPLACE)) {
		return -EEXIST;
	}
	if (r->have_dst && r->dino == r->sino) {
		*noop = true;	/* two links of one inode: nothing to do (POSIX) */
		return 0;
	}
	if (r->have_dst && !(r->flags & FS_RENAME_EXCHANGE)) {
		if (S_ISDIR(r->sip.mode) && !S_ISDIR(r->dip.mode))
			return -ENOTDIR;
		if (!S_ISDIR(r->sip.mode) && S_ISDIR(r->dip.mode))
			return -EISDIR;
		if (S_ISDIR(r->dip.mode) && r->dip.dir_entries)
			return -ENOTEMPTY;
	}
	/* a directory may not move below itself */
	if (S_ISDIR(r->sip.mode) && r->parent != r->newparent) {
		rc = fs_is_ancestor(fs, r->sino, r->newparent);
		if (rc)
			return rc > 0 ? -EINVAL : rc;
	}
	if ((r->flags & FS_RENAME_EXCHANGE) && S_ISDIR(r->dip.mode) && r->parent != r->newparent) {
		rc = fs_is_ancestor(fs, r->dino, r->parent);
		if (rc)
			return rc > 0 ? -EINVAL : rc;
	}
	return 0;
}

/* FS_RENAME_EXCHANGE: each entry names the other inode; moved directories follow. */
static int fs_rename_exchange(struct fs_tx *tx, struct fs_rename *r)
{
	int rc;

	rc = fs_dir_set(tx, &r->sdp, r->name, r->slen, r->dino, r->dft);
	fs_sync_copy(&r->ddp, &r->sdp);
	if (!rc)
		rc = fs_dir_set(tx, &r->ddp, r->newname, r->dlen, r->sino, r->sft);
	fs_sync_copy(&r->sdp, &r->ddp);
	if (rc)
		return rc;
	if (r->parent != r->newparent) {
		if (S_ISDIR(r->sip.mode)) {
			r->sip.parent = r->newparent;
			r->sdp.nlink--;
			r->ddp.nlink++;
		}
		if (S_ISDIR(r->dip.mode)) {
			r->dip.parent = r->parent;
			r->ddp.nlink--;
			r->sdp.nlink++;
		}
	}
	r->sip.ctime = r->dip.ctime = r->now;
	rc = fs_iput(tx, &r->sip);
	if (!rc)
		rc = fs_iput(tx, &r->dip);
	return rc;
}

/*
 * A move: the destination entry names the source inode (replacing one, which
 * drops a link, or added: *@add_failed when that fails, and then nothing else
 * changed), then the source entry goes.
 */
static int fs_rename_move(struct fs_tx *tx, struct fs_rename *r, bool *add_failed)
{
	int rc;

	if (r->have_dst) {
		rc = fs_dir_set(tx, &r->ddp, r->newname, r->dlen, r->sino, r->sft);
		if (!rc && S_ISDIR(r->dip.mode))
			r->ddp.nlink--;	/* the replaced directory's ".." */
		if (!rc)
			rc = fs_drop_link(tx, &r->dip, &r->now, &r->evict);
	} else {
		rc = fs_dir_add(tx, &r->ddp, r->newname, r->dlen, r->sino, r->sft);
		if (rc) {
			*add_failed = true;
			return fs_dir_add_failed(tx, &r->ddp, rc);
		}
	}
	fs_sync_copy(&r->sdp, &r->ddp);
	if (!rc)
		rc = fs_dir_remove(tx, &r->sdp, r->name, r->slen);
	fs_sync_copy(&r->ddp, &r->sdp);
	if (rc)
		return rc;
	if (S_ISDIR(r->sip.mode) && r->parent != r->newparent) {
		r->sip.parent = r->newparent;
		r->sdp.nlink--;
		r->ddp.nlink++;
	}
	r->sip.ctime = r->now;
	return fs_iput(tx, &r->sip);
}

/* Both directories changed: their times, and their inodes written once each. */
static int fs_rename_dirs_put(struct fs_tx *tx, struct fs_rename *r)
{
	int rc;

	r->sdp.mtime = r->sdp.ctime = r->now;
	r->ddp.mtime = r->ddp.ctime = r->now;
	if (r->parent == r->newparent) {
		/* one directory: both copies carry every change */
		return fs_iput(tx, &r->ddp);
	}
	rc = fs_iput(tx, &r->sdp);
	if (!rc)
		rc = fs_iput(tx, &r->ddp);
	return rc;
}

/* One try of a rename, in one handle; *@evict_ino: the replaced inode to free after,
 * or 0; *@add_failed: the new entry could not be added (then nothing else changed). */
static int fs_rename_locked(struct fs *fs, uint64_t parent, const char *name, size_t slen,
			    uint64_t newparent, const char *newname, size_t dlen,
			    unsigned int flags, uint64_t *evict_ino, bool *add_failed)
{
	struct fs_rename r = { .parent = parent, .newparent = newparent, .name = name,
			       .newname = newname, .slen = slen, .dlen = dlen, .flags = flags };
	struct fs_tx *tx = NULL;
	bool noop = false;
	int rc;

	rc = fs_tx_start(fs, FS_CREDITS_RENAME, &tx);
	if (!rc)
		rc = fs_rename_lookup(fs, &r);
	if (!rc)
		rc = fs_rename_check(fs, &r, &noop);
	if (rc || noop)
		goto out;
	fs_now(&r.now);
	if (flags & FS_RENAME_EXCHANGE)
		rc = fs_rename_exchange(tx, &r);
	else
		rc = fs_rename_move(tx, &r, add_failed);
	if (!rc)
		rc = fs_rename_dirs_put(tx, &r);
out:
	if (tx)
		rc = fs_tx_end(tx, rc);
	*evict_ino = !rc && r.evict ? r.dino : 0;
	return rc;
}

int fs_rename(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
	      const char *newname, unsigned int flags)
{
	bool add_failed = false, retried = false;
	uint64_t evict = 0;
	size_t slen, dlen;
	int rc;

	if ((flags & ~(FS_RENAME_NOREPLACE | FS_RENAME_EXCHANGE)) ||
	    (flags == (FS_RENAME_NOREPLACE | FS_RENAME_EXCHANGE)))
		return -EINVAL;
	rc = fs_name_check(name, &slen);
	if (!rc)
		rc = fs_name_check(newname, &dlen);
	if (rc)
		return rc;
	if (fs_name_dot(name, slen) || fs_name_dot(newname, dlen))
		return -EBUSY;
	jg_mutex_lock(&fs->lock);
	rc = fs_writable(fs);
	if (!rc)
		rc = fs_rename_locked(fs, parent, name, slen, newparent, newname, dlen, flags,
				      &evict, &add_failed);
	/* only the new entry takes blocks (a failed fs_dir_add leaves the directory whole) */
	if (add_failed && fs_nospc_retry_locked(fs, &rc, &retried))
		rc = fs_rename_locked(fs, parent, name, slen, newparent, newname, dlen, flags,
				      &evict, &add_failed);
	if (!rc && evict)
		rc = fs_inode_evict(fs, evict);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

/* -------------------------------------------------------------- references */

int fs_ref(struct fs *fs, uint64_t ino, uint64_t n)
{
	int rc;

	jg_mutex_lock(&fs->lock);
	rc = fs_ref_locked(fs, ino, n);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_forget(struct fs *fs, uint64_t ino, uint64_t n)
{
	struct fs_istate *s;
	struct fs_inode ip;
	int rc = 0;

	jg_mutex_lock(&fs->lock);
	s = fs_istate_get(fs, ino, false);
	if (!s)
		goto out;
	s->refs = s->refs > n ? s->refs - n : 0;
	if (s->refs)
		goto out;
	rc = fs_iget(fs, ino, &ip);
	if (rc == -ENOENT)
		rc = 0;
	else if (!rc && !ip.nlink && !fs_writable(fs))
		/* unlinked and unreferenced: free now (read-only: the next mount does) */
		rc = fs_inode_evict(fs, ino);
	fs_istate_drop(fs, ino);
out:
	jg_mutex_unlock(&fs->lock);
	return rc;
}

/* ----------------------------------------------------------------- readdir */

struct fs_readdir_ctx {
	fs_readdir_fn fn;
	void *ctx;
	char name[FS_NAME_MAX + 1];
};

static int fs_readdir_one(void *c, const char *name, size_t len, uint64_t ino, unsigned int ft,
			  uint64_t hash)
{
	struct fs_readdir_ctx *rc = c;

	memcpy(rc->name, name, len);
	rc->name[len] = 0;
	return rc->fn(rc->ctx, rc->name, ino, fs_ft_to_mode(ft), hash + 1);
}

int fs_readdir(struct fs *fs, uint64_t ino, uint64_t off, fs_readdir_fn fn, void *ctx)
{
	struct fs_readdir_ctx rc_ctx = { .fn = fn, .ctx = ctx };
	struct fs_inode dip;
	int rc;

	jg_mutex_lock(&fs->lock);
	rc = fs_iget_dir(fs, ino, &dip);
	if (rc)
		goto out;
	if (off == 0 && fn(ctx, ".", dip.ino, S_IFDIR, 1))
		goto out;
	if (off <= 1 && fn(ctx, "..", dip.parent, S_IFDIR, 2))
		goto out;
	if (!dip.nlink)
		goto out;	/* removed, still open: empty */
	rc = fs_dir_iterate(fs, &dip, off < 2 ? 2 : off, fs_readdir_one, &rc_ctx);
out:
	jg_mutex_unlock(&fs->lock);
	return rc;
}
