// SPDX-License-Identifier: MIT
/*
 * src/fs/inode.c - inodes: the table, encoding, in-memory states, eviction.
 *
 * Inode n (from 1) is slot (n-1) % ipg of group (n-1) / ipg: table block
 * slot / 15 of that group's inode table, at byte 256 * (slot % 15 + 1). An inode
 * table block carries one jg_blk_hdr for its 15 inodes (bytes 0..255 are the
 * header and zeros). A free inode has mode 0 (and its bitmap bit clear).
 *
 * In-memory state (struct fs_istate) is kept per inode referenced through
 * fs_ref (the FUSE lookup counts) until its last fs_forget.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"

bool fs_ino_valid(const struct fs *fs, uint64_t ino)
{
	return ino >= 1 && ino <= fs->ninodes;
}

uint64_t fs_inode_blkno(const struct fs *fs, uint64_t ino)
{
	uint32_t g = (uint32_t)((ino - 1) / fs->ipg), slot = (uint32_t)((ino - 1) % fs->ipg);

	return fs_group_start(fs, g) + 2 + slot / FS_INODES_PER_BLOCK;
}

unsigned int fs_mode_to_ft(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return FS_FT_REG;
	case S_IFDIR: return FS_FT_DIR;
	case S_IFCHR: return FS_FT_CHR;
	case S_IFBLK: return FS_FT_BLK;
	case S_IFIFO: return FS_FT_FIFO;
	case S_IFSOCK: return FS_FT_SOCK;
	case S_IFLNK: return FS_FT_LNK;
	default: return FS_FT_UNKNOWN;
	}
}

uint32_t fs_ft_to_mode(unsigned int ft)
{
	static const uint32_t m[] = { 0, S_IFREG, S_IFDIR, S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK,
				      S_IFLNK };

	return ft < 8 ? m[ft] : 0;
}

static void fs_ts_decode(le64 sec, le32 nsec, struct timespec *ts)
{
	ts->tv_sec = (time_t)jg_le64(sec);
	ts->tv_nsec = jg_le32(nsec);
}

void fs_inode_decode(const struct fs_dinode *d, uint64_t ino, struct fs_inode *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->ino = ino;
	ip->mode = jg_le32(d->mode);
	ip->nlink = jg_le32(d->nlink);
	ip->uid = jg_le32(d->uid);
	ip->gid = jg_le32(d->gid);
	ip->size = jg_le64(d->size);
	ip->blocks = jg_le64(d->blocks);
	ip->rdev = jg_le64(d->rdev);
	ip->generation = jg_le64(d->generation);
	fs_ts_decode(d->atime_sec, d->atime_nsec, &ip->atime);
	fs_ts_decode(d->mtime_sec, d->mtime_nsec, &ip->mtime);
	fs_ts_decode(d->ctime_sec, d->ctime_nsec, &ip->ctime);
	fs_ts_decode(d->btime_sec, d->btime_nsec, &ip->btime);
	ip->xattr_blk = jg_le64(d->xattr_blk);
	ip->orphan_next = jg_le64(d->orphan_next);
	ip->parent = jg_le64(d->parent);
	ip->flags = jg_le32(d->flags);
	ip->dir_depth = jg_le32(d->dir_depth);
	ip->dir_entries = jg_le64(d->dir_entries);
	ip->dir_buckets = jg_le32(d->dir_buckets);
	for (unsigned int i = 0; i < FS_NBLOCKS; i++)
		ip->block[i] = jg_le64(d->block[i]);
}

void fs_inode_encode(const struct fs_inode *ip, struct fs_dinode *d)
{
	memset(d, 0, sizeof(*d));
	d->mode = jg_cpu_to_le32(ip->mode);
	d->nlink = jg_cpu_to_le32(ip->nlink);
	d->uid = jg_cpu_to_le32(ip->uid);
	d->gid = jg_cpu_to_le32(ip->gid);
	d->size = jg_cpu_to_le64(ip->size);
	d->blocks = jg_cpu_to_le64(ip->blocks);
	d->rdev = jg_cpu_to_le64(ip->rdev);
	d->generation = jg_cpu_to_le64(ip->generation);
	d->atime_sec = jg_cpu_to_le64((uint64_t)ip->atime.tv_sec);
	d->mtime_sec = jg_cpu_to_le64((uint64_t)ip->mtime.tv_sec);
	d->ctime_sec = jg_cpu_to_le64((uint64_t)ip->ctime.tv_sec);
	d->btime_sec = jg_cpu_to_le64((uint64_t)ip->btime.tv_sec);
	d->atime_nsec = jg_cpu_to_le32((uint32_t)ip->atime.tv_nsec);
	d->mtime_nsec = jg_cpu_to_le32((uint32_t)ip->mtime.tv_nsec);
	d->ctime_nsec = jg_cpu_to_le32((uint32_t)ip->ctime.tv_nsec);
	d->btime_nsec = jg_cpu_to_le32((uint32_t)ip->btime.tv_nsec);
	d->xattr_blk = jg_cpu_to_le64(ip->xattr_blk);
	d->orphan_next = jg_cpu_to_le64(ip->orphan_next);
	d->parent = jg_cpu_to_le64(ip->parent);
	d->flags = jg_cpu_to_le32(ip->flags);
	d->dir_depth = jg_cpu_to_le32(ip->dir_depth);
	d->dir_entries = jg_cpu_to_le64(ip->dir_entries);
	d->dir_buckets = jg_cpu_to_le32(ip->dir_buckets);
	for (unsigned int i = 0; i < FS_NBLOCKS; i++)
		d->block[i] = jg_cpu_to_le64(ip->block[i]);
}

int fs_inode_check(struct fs *fs, const struct fs_inode *ip, uint64_t blkno)
{
	const char *bad = NULL;
	uint32_t type = ip->mode & S_IFMT;

	if (!fs_mode_to_ft(ip->mode))
		bad = "mode";
	else if (ip->size > FS_MAX_LBLK * JG_BLOCK_SIZE)
		bad = "size";
	else if ((ip->flags & FS_INODE_FL_INLINE) && (type != S_IFLNK || ip->size > FS_INLINE_MAX))
		bad = "inline flag";
	else if (type == S_IFDIR && (ip->dir_depth > FS_DIR_MAX_DEPTH || !fs_ino_valid(fs, ip->parent)))
		bad = "directory fields";
	else if (ip->xattr_blk && !fs_block_valid(fs, ip->xattr_blk))
		bad = "xattr block";
	else if (ip->orphan_next && !fs_ino_valid(fs, ip->orphan_next))
		bad = "orphan link";
	if (!bad && !(ip->flags & FS_INODE_FL_INLINE))
		for (unsigned int i = 0; i < FS_NBLOCKS; i++)
			if (ip->block[i] && !fs_block_valid(fs, ip->block[i]))
				bad = "block pointer";
	if (!bad)
		return 0;
	jg_log(JG_LOG_ERR, FS_SUBSYS, "inode %llu dev=%s blkno=%llu bad %s",
	       (unsigned long long)ip->ino, fs->dev->name, (unsigned long long)blkno, bad);
	return -EUCLEAN;
}

/* Group descriptor field itable_init of the group holding @ino. */
static int fs_itable_init_get(struct fs *fs, uint64_t ino, uint32_t *init)
{
	struct fs_group_desc gd;
	int rc = fs_gd_read(fs, (uint32_t)((ino - 1) / fs->ipg), &gd);

	if (!rc)
		*init = jg_le32(gd.itable_init);
	return rc;
}

/*
 * Read inode @ino. -ENOENT when it is free (mode 0), -EUCLEAN (logged, fs turned
 * read-only) when its block or fields are damaged.
 */
int fs_iget(struct fs *fs, uint64_t ino, struct fs_inode *out)
{
	uint32_t slot, init;
	struct fs_buf *b;
	int rc;

	if (!fs_ino_valid(fs, ino))
		return -ENOENT;
	slot = (uint32_t)((ino - 1) % fs->ipg);
	rc = fs_itable_init_get(fs, ino, &init);
	if (rc)
		return rc;
	if (slot / FS_INODES_PER_BLOCK >= init)
		return -ENOENT;	/* (G2): never written */
	rc = fs_bread(fs, fs_inode_blkno(fs, ino), FS_MAGIC_ITABLE, "inode table", &b);
	if (rc) {
		if (rc == -EUCLEAN)
			fs_set_error(fs, "inode %llu: damaged inode table block",
				     (unsigned long long)ino);
		return rc;
	}
	fs_inode_decode((const struct fs_dinode *)(b->data +
						   FS_INODE_SIZE * (slot % FS_INODES_PER_BLOCK + 1)),
			ino, out);
	fs_bput(fs, b);
	if (!out->mode)
		return -ENOENT;
	rc = fs_inode_check(fs, out, fs_inode_blkno(fs, ino));
	if (rc)
		fs_set_error(fs, "inode %llu: damaged", (unsigned long long)ino);
	return rc;
}

/* Write @ip to its table block, initialising table blocks past itable_init (G2). */
int fs_iput(struct fs_tx *tx, struct fs_inode *ip)
{
	struct fs *fs = tx->fs;
	uint32_t g = (uint32_t)((ip->ino - 1) / fs->ipg), slot = (uint32_t)((ip->ino - 1) % fs->ipg);
	uint32_t idx = slot / FS_INODES_PER_BLOCK, init;
	struct fs_buf *b = NULL, *gb = NULL;
	struct fs_dinode d, old;
	uint8_t *slotp;
	int rc;

	rc = fs_itable_init_get(fs, ip->ino, &init);
	if (rc)
		return rc;
	if (idx >= init) {
		struct fs_group_desc *gd;

		for (uint32_t k = init; k < idx; k++) {
			rc = fs_bget_new(fs, fs_group_start(fs, g) + 2 + k, &b);
			if (rc)
				return rc;
			rc = fs_bdirty(tx, b, FS_MAGIC_ITABLE);
			fs_bput(fs, b);
			if (rc)
				return rc;
		}
		rc = fs_bget_new(fs, fs_group_start(fs, g) + 2 + idx, &b);
		if (rc)
			return rc;
		rc = fs_bread(fs, fs->gdt_start + g / FS_GD_PER_BLOCK, FS_MAGIC_GDT,
			      "group descriptors", &gb);
		if (rc)
			goto out;
		gd = (struct fs_group_desc *)(gb->data + FS_GD_OFFSET) + g % FS_GD_PER_BLOCK;
		gd->itable_init = jg_cpu_to_le32(idx + 1);
		rc = fs_bdirty(tx, gb, FS_MAGIC_GDT);
		if (rc)
			goto out;
	} else {
		rc = fs_bread(fs, fs_inode_blkno(fs, ip->ino), FS_MAGIC_ITABLE, "inode table", &b);
		if (rc)
			return rc;
	}
	slotp = b->data + FS_INODE_SIZE * (slot % FS_INODES_PER_BLOCK + 1);
	fs_inode_encode(ip, &d);
	/* an inode put back as it was is not logged: an overwrite that leaves the
	 * times to the kernel (fs_write_flags) commits its data alone */
	if (idx < init && !memcmp(slotp, &d, sizeof(d)))
		goto out;
	memcpy(&old, slotp, sizeof(old));
	memcpy(slotp, &d, sizeof(d));
	rc = fs_bdirty(tx, b, FS_MAGIC_ITABLE);
	if (rc)
		memcpy(slotp, &old, sizeof(old));	/* the cache keeps the logged copy (F2) */
out:
	fs_bput(fs, b);
	fs_bput(fs, gb);
	return rc;
}

void fs_inode_to_attr(const struct fs_inode *ip, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ip->ino;
	a->mode = ip->mode;
	a->nlink = ip->nlink;
	a->uid = ip->uid;
	a->gid = ip->gid;
	a->size = ip->size;
	a->blocks = ip->blocks * (JG_BLOCK_SIZE / 512);
	a->rdev = ip->rdev;
	a->generation = ip->generation;
	a->atime = ip->atime;
	a->mtime = ip->mtime;
	a->ctime = ip->ctime;
	a->btime = ip->btime;
}

/* ---------------------------------------------------------- inode states */

/* The bucket of @ino in a table of @n buckets (a power of two): the high bits
 * of a multiplicative hash. */
static uint64_t fs_istate_slot(uint64_t ino, uint64_t n)
{
	return (ino * 0x9e3779b97f4a7c15ull >> 20) & (n - 1);
}

/* Twice the buckets, once the chains average 2: the kernel holds an inode for
 * every dentry it caches (60,000 after an untar), and with a fixed 4,096
 * buckets the walk of their chains took 2.9 % of the daemon's CPU (issue 28's
 * profile). Failing to grow only keeps the longer chains. */
static void fs_istate_grow(struct fs *fs)
{
	uint64_t n = fs->nist * 2;
	struct fs_istate **t = calloc(n, sizeof(*t));

	if (!t)
		return;
	for (uint64_t i = 0; i < fs->nist; i++) {
		struct fs_istate *s = fs->ist[i], *next;

		for (; s; s = next) {
			uint64_t slot = fs_istate_slot(s->ino, n);

			next = s->next;
			s->next = t[slot];
			t[slot] = s;
		}
	}
	free(fs->ist);
	fs->ist = t;
	fs->nist = n;
}

struct fs_istate *fs_istate_get(struct fs *fs, uint64_t ino, bool create)
{
	uint64_t slot;
	struct fs_istate *s;

	if (!fs->ist) {
		if (!create)
			return NULL;
		fs->nist = 4096;
		fs->nist_used = 0;
		fs->ist = calloc(fs->nist, sizeof(*fs->ist));
		if (!fs->ist)
			return NULL;
	}
	slot = fs_istate_slot(ino, fs->nist);
	for (s = fs->ist[slot]; s; s = s->next)
		if (s->ino == ino)
			return s;
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->ino = ino;
	s->next = fs->ist[slot];
	fs->ist[slot] = s;
	if (++fs->nist_used > fs->nist * 2)
		fs_istate_grow(fs);
	return s;
}

void fs_istate_drop(struct fs *fs, uint64_t ino)
{
	struct fs_istate **pp;

	if (!fs->ist)
		return;
	pp = &fs->ist[fs_istate_slot(ino, fs->nist)];
	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	if (*pp) {
		struct fs_istate *s = *pp;

		*pp = s->next;
		free(s);
		fs->nist_used--;
	}
}

/* ----------------------------------------------------- eviction, truncate */

static bool fs_inode_meta_blocks(const struct fs_inode *ip)
{
	/* directory blocks are logged as metadata; symlink targets are file data */
	return S_ISDIR(ip->mode);
}

void fs_lock_yield(struct fs *fs)
{
	/* fair: the callers waiting get in before the next step (L1) */
	jg_mutex_yield(&fs->lock);
}

static bool fs_busy_has(const struct fs *fs, uint64_t ino)
{
	for (const struct fs_busy *b = fs->busy; b; b = b->next)
		if (b->ino == ino)
			return true;
	return false;
}

void fs_busy_wait(struct fs *fs, uint64_t ino)
{
	while (fs_busy_has(fs, ino))
		jg_cond_wait(&fs->busy_cv, &fs->lock);
}

void fs_busy_begin(struct fs *fs, struct fs_busy *b, uint64_t ino)
{
	fs_busy_wait(fs, ino);
	b->ino = ino;
	b->next = fs->busy;
	fs->busy = b;
}

void fs_busy_end(struct fs *fs, struct fs_busy *b)
{
	struct fs_busy **pp = &fs->busy;

	while (*pp != b)
		pp = &(*pp)->next;
	*pp = b->next;
	/* waiters on other inodes wake too, see theirs still busy and sleep again */
	pthread_cond_broadcast(&fs->busy_cv);
}

/*
 * Free every block of @ino at and after @from, one handle at a time, letting the
 * lock go between handles (L1); the caller has marked @ino busy (L2).
 */
static int fs_inode_free_from(struct fs *fs, uint64_t ino, uint64_t from)
{
	struct fs_inode ip;
	struct fs_tx *tx;
	bool done = false;
	int rc = 0;

	while (!done) {
		rc = fs_tx_start(fs, FS_CREDITS_TRUNCATE, &tx);
		if (rc)
			return rc;
		rc = fs_iget(fs, ino, &ip);
		if (!rc && (ip.flags & FS_INODE_FL_INLINE))
			done = true;
		else if (!rc)
			rc = fs_bmap_truncate(tx, &ip, from, fs_inode_meta_blocks(&ip), &done);
		if (!rc)
			rc = fs_iput(tx, &ip);
		rc = fs_tx_end(tx, rc);
		if (rc)
			return rc;
		if (!done)
			fs_lock_yield(fs);
	}
	return 0;
}

int fs_inode_evict(struct fs *fs, uint64_t ino)
{
	struct fs_busy busy;
	struct fs_inode ip;
	struct fs_tx *tx;
	int rc;

	/* after a truncate between its steps (L2); then nothing else reaches it */
	fs_busy_begin(fs, &busy, ino);
	rc = fs_inode_free_from(fs, ino, 0);
	if (rc)
		goto end;
	rc = fs_tx_start(fs, FS_CREDITS_EVICT, &tx);
	if (rc)
		goto end;
	rc = fs_iget(fs, ino, &ip);
	if (rc)
		goto out;
	rc = fs_xattr_free(tx, &ip);
	if (!rc)
		rc = fs_orphan_del(tx, &ip);
	if (!rc)
		rc = fs_ifree(tx, ino, S_ISDIR(ip.mode));
	if (rc)
		goto out;
	{
		uint64_t gen = ip.generation;

		memset(&ip, 0, sizeof(ip));
		ip.ino = ino;
		ip.generation = gen;	/* the next life gets gen + 1 */
	}
	rc = fs_iput(tx, &ip);
out:
	rc = fs_tx_end(tx, rc);
	if (!rc)
		fs_istate_drop(fs, ino);
end:
	fs_busy_end(fs, &busy);
	return rc;
}

int fs_inode_truncate_blocks_busy(struct fs *fs, uint64_t ino)
{
	struct fs_inode ip;
	struct fs_tx *tx;
	int rc;

	rc = fs_iget(fs, ino, &ip);
	if (rc)
		return rc;
	/* writers to it wait while it is busy (L2): the lock may go between steps */
	rc = fs_inode_free_from(fs, ino, (ip.size + JG_BLOCK_SIZE - 1) / JG_BLOCK_SIZE);
	if (rc)
		return rc;
	rc = fs_tx_start(fs, FS_CREDITS_ORPHAN_DEL, &tx);
	if (rc)
		return rc;
	rc = fs_iget(fs, ino, &ip);
	/* unlinked meanwhile: it stays an orphan until its eviction (F3) */
	if (!rc && ip.nlink)
		rc = fs_orphan_del(tx, &ip);
	return fs_tx_end(tx, rc);
}

int fs_inode_truncate_blocks(struct fs *fs, uint64_t ino)
{
	struct fs_busy busy;
	int rc;

	fs_busy_begin(fs, &busy, ino);
	rc = fs_inode_truncate_blocks_busy(fs, ino);
	fs_busy_end(fs, &busy);
	return rc;
}
