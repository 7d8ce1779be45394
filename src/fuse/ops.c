// SPDX-License-Identifier: MIT
/*
 * src/fuse/ops.c - the libfuse low-level handlers: each turns one kernel request
 * into fs_* calls on the filesystem's own inode numbers and replies exactly once,
 * fuse_reply_err(req, -rc) on failure (every layer speaks negative errno, so
 * there is no translation table).
 *
 * Invariants:
 * (V1) Lookup counts. Every reply that hands the kernel an entry (lookup, create,
 *      mknod, mkdir, symlink, link, and each readdirplus entry other than "." and
 *      "..") holds one reference, taken by the same fs call that finds or makes
 *      the inode (fs_lookup_ref, fs_create_ref, fs_link_ref): in one hold of the
 *      fs lock, so no unlink can free the inode, nor a create reuse its number,
 *      between the lookup and the reference. forget and forget_multi drop what
 *      the kernel says it no longer holds with fs_forget(). An entry that is not
 *      replied (an interrupted request, a readdirplus entry that did not fit)
 *      gives its reference back, so an unlinked inode is freed exactly when the
 *      kernel forgets it.
 * (V2) Negative lookups are cached by the kernel (an entry with ino 0) for the
 *      entry timeout: this mount is the only writer of the volume, so a name can
 *      only appear through a request that updates the kernel's dentry cache.
 * (V3) open() truncates nothing: FUSE_CAP_ATOMIC_O_TRUNC is off, so O_TRUNC reaches
 *      us as a setattr(size) and the kernel keeps its page cache consistent.
 * (V4) The writeback cache (FUSE_CAP_WRITEBACK_CACHE) makes the kernel own a
 *      file's size and mtime while it caches pages; it sends them back with
 *      setattr. It is negotiated only when the mount is writable. fsync and close
 *      still write dirty pages back first, so fsync keeps its meaning.
 * (V5) With the writeback cache the kernel's mtime and ctime are the true ones
 *      and reach us by setattr, which background writeback lets overtake the
 *      writes it stamped. So a writeback write leaves the times alone
 *      (FS_WRITE_KEEP_TIMES): otherwise a file's mtime would move by the
 *      writeback delay at remount. An overwrite then leaves the inode as it
 *      was, and its commit logs the data alone.
 * (V6) No flush: close(2) has nothing for us to do (durability is fsync's
 *      business, as on ext4, and the kernel writes a file's cached pages back
 *      before it would send FLUSH), so the first FLUSH gets ENOSYS (from
 *      fop_flush, which only counts it: the answer libfuse gives without a
 *      handler) and the kernel sends no more: one request fewer per close.
 * (V7) Entries and attributes are cached for timeout= seconds, by default a
 *      day: this mount is the volume's only writer (the argument of (V2)), and
 *      every change it makes is a request whose reply updates the kernel's
 *      cache or after which the kernel drops what it cached (dir mtime and
 *      size after a create, size and blocks after a write, ctime after
 *      unlink, link, rename, setxattr). Nothing of the daemon's own changes a
 *      cached attribute: reads do not set atime (src/fs/file.c), scrub, heal and
 *      rebuild change no file. A short timeout only made the kernel ask again:
 *      a lookup per path component and a getattr before a write.
 * (V8) No open either (FUSE_CAP_NO_OPEN_SUPPORT, when the kernel has it): the
 *      first OPEN gets ENOSYS, after which the kernel opens files itself, with
 *      FOPEN_KEEP_CACHE (what fop_open gave) and no file handle (we keep none),
 *      and sends neither OPEN nor RELEASE for any file, created ones included:
 *      two requests fewer per open of an existing file, one per create. Nothing
 *      is lost: permissions are the kernel's (default_permissions), O_TRUNC is
 *      a setattr (V3), and a read-only mount is read-only in the kernel too
 *      (fop_serve passes "ro"), so a write open fails there with EROFS.
 * (V9) A write of the writeback cache is answered all or nothing: the kernel
 *      looks at the error alone (fuse_writepage_end), so a short count (ENOSPC
 *      part way) would pass for the whole range and fsync would return 0 for
 *      a tail that never reached the disks. fop_write writes on until the
 *      range is done or fails, and answers that error.
 * (V10) No create either, where (V8) holds: the kernel learns (V8) from the
 *      first OPEN, and until then each file made by CREATE is open with our
 *      answer's handle, so its close sends a RELEASE. A mount that only makes
 *      files (an untar, a copy into an empty volume) never sends that OPEN:
 *      one RELEASE per file. So CREATE gets ENOSYS, after which the kernel
 *      makes each file with MKNOD and opens it itself (the first such open is
 *      the OPEN of (V8)): a create costs a LOOKUP and a MKNOD from the first
 *      file on. O_EXCL holds (MKNOD fails with EEXIST on a name that exists),
 *      and the creator may still write a file whose mode it cannot (the kernel
 *      skips the permission check of a file its open created). Without (V8)
 *      CREATE is answered: MKNOD and OPEN would be two requests for its one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fop_i.h"

/* Largest readdir reply we fill; the kernel asks for one page at a time. */
#define FOP_READDIR_MAX (128u * 1024u)

static struct fop_ctx *fop_ctx_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fop_attr_to_stat(const struct fs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_rdev = (dev_t)a->rdev;
	st->st_blksize = JG_BLOCK_SIZE;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

static void fop_entry_fill(struct fop_ctx *c, const struct fs_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = a->generation;
	fop_attr_to_stat(a, &e->attr);
	e->attr_timeout = c->opts->timeout_s; /* (V7) */
	e->entry_timeout = c->opts->timeout_s;
}

/*
 * Reply with the entry @a, whose reference the fs call that produced it took
 * (V1); @rc is that call's result.
 */
static void fop_reply_entry(fuse_req_t req, int rc, const struct fs_attr *a)
{
	struct fop_ctx *c = fop_ctx_of(req);
	struct fuse_entry_param e;

	if (rc)
		goto out;
	fop_entry_fill(c, a, &e);
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		/* the request was interrupted: the kernel never saw the entry */
		fs_forget(c->fs, a->ino, 1);
	}
	return;
out:
	fuse_reply_err(req, -rc);
}

/* ------------------------------------------------------------ life cycle */

static void fop_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fop_ctx *c = userdata;
	const struct fop_opts *o = c->opts;

	conn->max_write = o->max_write_bytes;
	/* sequential reads in requests as large as the writes (the kernel caps it) */
	if (conn->max_readahead < o->max_write_bytes)
		conn->max_readahead = o->max_write_bytes;
	/*
	 * O_TRUNC comes as setattr (V3). The kernel clears setuid, setgid and
	 * security.capability itself (by setattr and removexattr), asking first
	 * with a getxattr of security.capability at each write: only
	 * FUSE_HANDLE_KILLPRIV_V2 would spare it (it sets SB_NOSEC, so an inode
	 * found clean is not asked again), and libfuse 3.14 cannot ask for it
	 * (no FUSE_CAP_HANDLE_KILLPRIV_V2). Plain
	 * HANDLE_KILLPRIV saves nothing: with it on, the getxattr still came at
	 * each write (fuse_requests, kernel 6.18), and it would hand us a duty
	 * (clearing the bits unless the writer has CAP_FSETID) we cannot judge.
	 */
	conn->want &= ~(unsigned int)(FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_HANDLE_KILLPRIV);
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR; /* status on the mount root */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* (V8): init comes before any other request, so fop_open reads it unlocked */
	c->no_open = !!(conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
	/* (V4): only for a writable mount */
	if (o->writeback_cache && !o->readonly && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~(unsigned int)FUSE_CAP_WRITEBACK_CACHE;
	conn->time_gran = 1;
	jg_log(JG_LOG_DEBUG, "fuse", "init proto=%u.%u max_write=%u writeback_cache=%d no_open=%d",
	       conn->proto_major, conn->proto_minor, conn->max_write,
	       !!(conn->want & FUSE_CAP_WRITEBACK_CACHE), c->no_open);
}

/*
 * The session is going away (after unmount): make everything durable now, while
 * the volume is still whole; fop_serve() unmounts the filesystem after this.
 */
static void fop_destroy(void *userdata)
{
	struct fop_ctx *c = userdata;
	int rc;

	if (c->opts->readonly)
		return;
	rc = fs_sync(c->fs);
	if (rc)
		jg_log(JG_LOG_ERR, "fuse", "sync at unmount failed: %s", strerror(-rc));
}

/* ---------------------------------------------------------------- names */

static void fop_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fop_ctx *c = fop_ctx_of(req);
	struct fuse_entry_param e;
	struct fs_attr a;
	int rc;

	fop_count(c, FOP_REQ_LOOKUP);
	rc = fs_lookup_ref(c->fs, parent, name, &a);
	if (rc == -ENOENT) {
		/* (V2): a negative entry the kernel may cache */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = c->opts->timeout_s;
		fuse_reply_entry(req, &e);
		return;
	}
	fop_reply_entry(req, rc, &a);
}

static void fop_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fop_ctx *c = fop_ctx_of(req);
	int rc;

	fop_count(c, FOP_REQ_FORGET);
	rc = fs_forget(c->fs, ino, nlookup);
	if (rc)
		jg_log(JG_LOG_WARN, "fuse", "forget ino=%llu n=%llu: %s", (unsigned long long)ino,
		       (unsigned long long)nlookup, strerror(-rc));
	fuse_reply_none(req);
}

static void fop_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fop_ctx *c = fop_ctx_of(req);

	/* the batch is the kernel's choice: count what it forgets, as for forget */
	atomic_fetch_add_explicit(&c->requests[FOP_REQ_FORGET], count, memory_order_relaxed);
	for (size_t i = 0; i < count; i++) {
		int rc = fs_forget(c->fs, forgets[i].ino, forgets[i].nlookup);

		if (rc)
			jg_log(JG_LOG_WARN, "fuse", "forget ino=%llu n=%llu: %s",
			       (unsigned long long)forgets[i].ino,
			       (unsigned long long)forgets[i].nlookup, strerror(-rc));
	}
	fuse_reply_none(req);
}

static void fop_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);
	struct fs_attr a;
	struct stat st;
	int rc;

	fop_count(c, FOP_REQ_GETATTR);
	rc = fs_getattr(c->fs, ino, &a);
	if (rc)
		goto out;
	fop_attr_to_stat(&a, &st);
	fuse_reply_attr(req, &st, c->opts->timeout_s);
	return;
out:
	fuse_reply_err(req, -rc);
}

/* What FUSE asks setattr to set, as fs_setattr's FS_SET_* */
static const struct {
	int fuse;
	unsigned int fs;
} fop_setattr_bits[] = {
	{ FUSE_SET_ATTR_MODE, FS_SET_MODE },		{ FUSE_SET_ATTR_UID, FS_SET_UID },
	{ FUSE_SET_ATTR_GID, FS_SET_GID },		{ FUSE_SET_ATTR_SIZE, FS_SET_SIZE },
	{ FUSE_SET_ATTR_ATIME, FS_SET_ATIME },		{ FUSE_SET_ATTR_MTIME, FS_SET_MTIME },
	{ FUSE_SET_ATTR_ATIME_NOW, FS_SET_ATIME_NOW },	{ FUSE_SET_ATTR_MTIME_NOW, FS_SET_MTIME_NOW },
	{ FUSE_SET_ATTR_CTIME, FS_SET_CTIME },
};

static void fop_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);
	struct fs_attr in, out;
	unsigned int valid = 0;
	struct stat st;
	int rc;

	fop_count(c, FOP_REQ_SETATTR);
	memset(&in, 0, sizeof(in));
	in.mode = attr->st_mode;
	in.uid = attr->st_uid;
	in.gid = attr->st_gid;
	in.size = (uint64_t)attr->st_size;
	in.atime = attr->st_atim;
	in.mtime = attr->st_mtim;
	in.ctime = attr->st_ctim;
	for (size_t i = 0; i < sizeof(fop_setattr_bits) / sizeof(fop_setattr_bits[0]); i++)
		if (to_set & fop_setattr_bits[i].fuse)
			valid |= fop_setattr_bits[i].fs;
	rc = fs_setattr(c->fs, ino, &in, valid, &out);
	if (rc)
		goto out;
	fop_attr_to_stat(&out, &st);
	fuse_reply_attr(req, &st, c->opts->timeout_s);
	return;
out:
	fuse_reply_err(req, -rc);
}

static void fop_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fop_ctx *c = fop_ctx_of(req);
	char buf[FS_SYMLINK_MAX + 1];
	ssize_t n;
	int rc;

	fop_count(c, FOP_REQ_READLINK);
	n = fs_readlink(c->fs, ino, buf, FS_SYMLINK_MAX);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
	return;
out:
	fuse_reply_err(req, -rc);
}

static void fop_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct fop_ctx *c = fop_ctx_of(req);
	const struct fuse_ctx *who = fuse_req_ctx(req);
	struct fs_attr a;
	int rc;

	fop_count(c, FOP_REQ_MKNOD);
	/* as fs_mknod: no directory nor symlink by this call, no type a file */
	if (!(mode & S_IFMT))
		mode |= S_IFREG;
	if (S_ISDIR(mode) || S_ISLNK(mode))
		rc = -EINVAL;
	else
		rc = fs_create_ref(c->fs, parent, name, mode, rdev, NULL, who->uid, who->gid, &a);
	fop_reply_entry(req, rc, &a);
}

static void fop_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fop_ctx *c = fop_ctx_of(req);
	const struct fuse_ctx *who = fuse_req_ctx(req);
	struct fs_attr a;
	int rc;

	fop_count(c, FOP_REQ_MKDIR);
	/* the kernel sends permission bits only; the type is ours to add */
	rc = fs_create_ref(c->fs, parent, name, S_IFDIR | (mode & 07777), 0, NULL, who->uid,
			   who->gid, &a);
	fop_reply_entry(req, rc, &a);
}

static void fop_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fop_ctx *c = fop_ctx_of(req);

	fop_count(c, FOP_REQ_UNLINK);
	fuse_reply_err(req, -fs_unlink(c->fs, parent, name));
}

static void fop_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fop_ctx *c = fop_ctx_of(req);

	fop_count(c, FOP_REQ_RMDIR);
	fuse_reply_err(req, -fs_rmdir(c->fs, parent, name));
}

static void fop_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct fop_ctx *c = fop_ctx_of(req);
	const struct fuse_ctx *who = fuse_req_ctx(req);
	struct fs_attr a;
	int rc;

	fop_count(c, FOP_REQ_SYMLINK);
	rc = fs_create_ref(c->fs, parent, name, S_IFLNK | 0777, 0, link, who->uid, who->gid, &a);
	fop_reply_entry(req, rc, &a);
}

static void fop_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags)
{
	struct fop_ctx *c = fop_ctx_of(req);
	unsigned int fsflags = 0;
	int rc = -EINVAL;

	fop_count(c, FOP_REQ_RENAME);
	/* RENAME_NOREPLACE 1, RENAME_EXCHANGE 2; RENAME_WHITEOUT (overlayfs) is not ours */
	if (flags & ~3u)
		goto out;
	if (flags & 1u)
		fsflags |= FS_RENAME_NOREPLACE;
	if (flags & 2u)
		fsflags |= FS_RENAME_EXCHANGE;
	rc = fs_rename(c->fs, parent, name, newparent, newname, fsflags);
out:
	fuse_reply_err(req, -rc);
}

static void fop_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fop_ctx *c = fop_ctx_of(req);
	struct fs_attr a;
	int rc;

	fop_count(c, FOP_REQ_LINK);
	rc = fs_link_ref(c->fs, ino, newparent, newname, &a);
	fop_reply_entry(req, rc, &a);
}

/* ---------------------------------------------------------------- files */

static void fop_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);

	fop_count(c, FOP_REQ_OPEN);
	if (c->no_open) {
		fuse_reply_err(req, ENOSYS); /* (V8): the kernel sends no more */
		return;
	}
	if (c->opts->readonly && (fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* this mount is the volume's only writer: cached pages stay valid */
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void fop_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);
	void *buf = NULL;
	ssize_t n;
	int rc = -ENOMEM;

	fop_count(c, FOP_REQ_READ);
	if (size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	buf = malloc(size);
	if (!buf)
		goto out;
	n = fs_read(c->fs, ino, (uint64_t)off, size, buf);
	if (n == -EIO)
		fop_name_lost(c); /* a block no member could give back: whose */
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
	return;
out:
	free(buf);
	fuse_reply_err(req, -rc);
}

static void fop_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);
	ssize_t n;

	fop_count(c, FOP_REQ_WRITE);
	/* from the writeback cache: the times are the kernel's (V5) */
	n = fs_write_flags(c->fs, ino, (uint64_t)off, size, buf,
			   fi->writepage ? FS_WRITE_KEEP_TIMES : 0);
	/* (V9) from the writeback cache: all of it, or the error */
	while (fi->writepage && n >= 0 && (size_t)n < size) {
		ssize_t m = fs_write_flags(c->fs, ino, (uint64_t)off + (uint64_t)n,
					   size - (size_t)n, buf + n, FS_WRITE_KEEP_TIMES);

		n = m > 0 ? n + m : m < 0 ? m : -EIO;
	}
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	fuse_reply_write(req, (size_t)n);
}

/*
 * (V6): nothing to do at close, and the kernel should know: ENOSYS, which the
 * kernel remembers (no FLUSH after the first), as libfuse answers when there is
 * no handler. The handler is here only to count that first FLUSH.
 */
static void fop_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fop_count(fop_ctx_of(req), FOP_REQ_FLUSH);
	fuse_reply_err(req, ENOSYS);
}

static void fop_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fop_count(fop_ctx_of(req), FOP_REQ_RELEASE);
	fuse_reply_err(req, 0);
}

static void fop_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);

	fop_count(c, FOP_REQ_FSYNC);
	fuse_reply_err(req, -fs_fsync(c->fs, ino, datasync != 0));
}

static void fop_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			  struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);
	int rc = -EINVAL;

	fop_count(c, FOP_REQ_FALLOCATE);
	if (off < 0 || len <= 0)
		goto out;
	rc = fs_fallocate(c->fs, ino, mode, (uint64_t)off, (uint64_t)len);
out:
	fuse_reply_err(req, -rc);
}

static void fop_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);
	const struct fuse_ctx *who = fuse_req_ctx(req);
	struct fuse_entry_param e;
	struct fs_attr a;
	int rc;

	fop_count(c, FOP_REQ_CREATE);
	if (c->no_open) {
		fuse_reply_err(req, ENOSYS); /* (V10): the kernel sends no more */
		return;
	}
	rc = fs_create_ref(c->fs, parent, name, S_IFREG | (mode & 07777), 0, NULL, who->uid,
			   who->gid, &a); /* (V1) */
	if (rc)
		goto out;
	fop_entry_fill(c, &a, &e);
	fi->keep_cache = 1;
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		fs_forget(c->fs, a.ino, 1); /* interrupted: never seen */
	return;
out:
	fuse_reply_err(req, -rc);
}

/* ---------------------------------------------------------- directories */

static void fop_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fop_count(fop_ctx_of(req), FOP_REQ_OPENDIR);
	fuse_reply_open(req, fi);
}

/* One directory entry gathered from fs_readdir(), sent after it returns. */
struct fop_dirent {
	char *name;
	uint64_t ino;
	uint32_t mode;
	uint64_t next_off;
};

/* What fs_readdir()'s callback collects: as many entries as the reply can hold. */
struct fop_dirbuf {
	fuse_req_t req;
	uint64_t dir;
	bool plus;
	size_t size; /* the kernel's buffer */
	size_t used; /* bytes the gathered entries will take */
	struct fop_dirent *ents;
	size_t n, cap;
	int err;
};

static int fop_readdir_collect(void *ctx, const char *name, uint64_t ino, uint32_t mode,
			       uint64_t next_off)
{
	struct fop_dirbuf *d = ctx;
	size_t len;

	/* with a NULL buffer, the add calls only measure the entry */
	if (d->plus)
		len = fuse_add_direntry_plus(d->req, NULL, 0, name, NULL, 0);
	else
		len = fuse_add_direntry(d->req, NULL, 0, name, NULL, 0);
	if (d->used + len > d->size)
		return 1; /* full: the kernel asks again from next_off */
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 32;
		struct fop_dirent *p = realloc(d->ents, cap * sizeof(*p));

		if (!p)
			goto nomem;
		d->ents = p;
		d->cap = cap;
	}
	d->ents[d->n].name = strdup(name);
	if (!d->ents[d->n].name)
		goto nomem;
	d->ents[d->n].ino = ino;
	d->ents[d->n].mode = mode;
	d->ents[d->n].next_off = next_off;
	d->n++;
	d->used += len;
	return 0;
nomem:
	d->err = -ENOMEM;
	return 1;
}

static bool fop_is_dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/*
 * Add entry @de to the reply at @p (room @left). For readdirplus, every entry but
 * "." and ".." carries attributes and a lookup reference, from looking its name
 * up again (V1): an entry that went away since fs_readdir() saw it is left out,
 * and one whose name now names another inode carries that inode. Returns the
 * bytes used (0: skipped).
 */
static size_t fop_readdir_put(struct fop_ctx *c, struct fop_dirbuf *d, struct fop_dirent *de,
			      char *p, size_t left)
{
	struct fuse_entry_param e;
	struct fs_attr a;
	struct stat st;
	size_t len;

	if (!d->plus) {
		memset(&st, 0, sizeof(st));
		st.st_ino = de->ino;
		st.st_mode = de->mode;
		return fuse_add_direntry(d->req, p, left, de->name, &st, (off_t)de->next_off);
	}
	memset(&e, 0, sizeof(e));
	if (fop_is_dot(de->name)) {
		/* the kernel takes no reference for these: ino 0 says "no entry" */
		e.attr.st_ino = de->ino;
		e.attr.st_mode = de->mode;
	} else {
		if (fs_lookup_ref(c->fs, d->dir, de->name, &a))
			return 0;
		fop_entry_fill(c, &a, &e);
	}
	len = fuse_add_direntry_plus(d->req, p, left, de->name, &e, (off_t)de->next_off);
	if (len > left && e.ino)
		fs_forget(c->fs, e.ino, 1); /* did not fit (cannot happen: measured) */
	return len;
}

static void fop_readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct fop_ctx *c = fop_ctx_of(req);
	struct fop_dirbuf d = {.req = req, .dir = ino, .plus = plus};
	char *buf = NULL;
	size_t pos = 0;
	int rc;

	d.size = size < FOP_READDIR_MAX ? size : FOP_READDIR_MAX;
	rc = fs_readdir(c->fs, ino, (uint64_t)off, fop_readdir_collect, &d);
	if (!rc)
		rc = d.err;
	if (rc)
		goto out;
	rc = -ENOMEM;
	buf = malloc(d.size ? d.size : 1);
	if (!buf)
		goto out;
	for (size_t i = 0; i < d.n; i++) {
		size_t len = fop_readdir_put(c, &d, &d.ents[i], buf + pos, d.size - pos);

		if (len > d.size - pos)
			break;
		pos += len;
	}
	rc = 0;
	fuse_reply_buf(req, buf, pos);
out:
	if (rc)
		fuse_reply_err(req, -rc);
	for (size_t i = 0; i < d.n; i++)
		free(d.ents[i].name);
	free(d.ents);
	free(buf);
}

static void fop_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	fop_count(fop_ctx_of(req), FOP_REQ_READDIR);
	fop_readdir_common(req, ino, size, off, false);
}

static void fop_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	fop_count(fop_ctx_of(req), FOP_REQ_READDIRPLUS);
	fop_readdir_common(req, ino, size, off, true);
}

static void fop_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fop_count(fop_ctx_of(req), FOP_REQ_RELEASEDIR);
	fuse_reply_err(req, 0);
}

static void fop_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fop_ctx *c = fop_ctx_of(req);

	fop_count(c, FOP_REQ_FSYNCDIR);
	fuse_reply_err(req, -fs_fsync(c->fs, ino, datasync != 0));
}

/* ------------------------------------------------------------- volume */

static void fop_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fop_ctx *c = fop_ctx_of(req);
	struct fs_statfs s;
	struct statvfs v;
	int rc;

	fop_count(c, FOP_REQ_STATFS);
	rc = fs_statfs(c->fs, &s);
	if (rc)
		goto out;
	memset(&v, 0, sizeof(v));
	v.f_bsize = s.block_size;
	v.f_frsize = s.block_size;
	v.f_blocks = s.blocks;
	v.f_bfree = s.blocks_free;
	v.f_bavail = s.blocks_avail;
	v.f_files = s.inodes;
	v.f_ffree = s.inodes_free;
	v.f_favail = s.inodes_free;
	v.f_namemax = s.name_max;
	fuse_reply_statfs(req, &v);
	return;
out:
	fuse_reply_err(req, -rc);
}

/* ------------------------------------------------------------- xattrs */

static void fop_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags)
{
	struct fop_ctx *c = fop_ctx_of(req);

	fop_count(c, FOP_REQ_SETXATTR);
	fuse_reply_err(req, -fs_setxattr(c->fs, ino, name, value, size, flags));
}

static void fop_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fop_ctx *c = fop_ctx_of(req);
	char *buf = NULL;
	ssize_t n;
	int rc = -ENOMEM;

	fop_count(c, FOP_REQ_GETXATTR);
	if (size == 0) {
		/* the caller asks how big the value is */
		n = fs_getxattr(c->fs, ino, name, NULL, 0);
		if (n < 0) {
			rc = (int)n;
			goto out;
		}
		fuse_reply_xattr(req, (size_t)n);
		return;
	}
	buf = malloc(size);
	if (!buf)
		goto out;
	n = fs_getxattr(c->fs, ino, name, buf, size);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
	return;
out:
	free(buf);
	fuse_reply_err(req, -rc);
}

static void fop_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fop_ctx *c = fop_ctx_of(req);
	char *buf = NULL;
	ssize_t n;
	int rc = -ENOMEM;

	fop_count(c, FOP_REQ_LISTXATTR);
	if (size == 0) {
		n = fs_listxattr(c->fs, ino, NULL, 0);
		if (n < 0) {
			rc = (int)n;
			goto out;
		}
		fuse_reply_xattr(req, (size_t)n);
		return;
	}
	buf = malloc(size);
	if (!buf)
		goto out;
	n = fs_listxattr(c->fs, ino, buf, size);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
	return;
out:
	free(buf);
	fuse_reply_err(req, -rc);
}

static void fop_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fop_ctx *c = fop_ctx_of(req);

	fop_count(c, FOP_REQ_REMOVEXATTR);
	fuse_reply_err(req, -fs_removexattr(c->fs, ino, name));
}

const struct fuse_lowlevel_ops fop_ops = {
    .init = fop_init,
    .destroy = fop_destroy,
    .lookup = fop_lookup,
    .forget = fop_forget,
    .forget_multi = fop_forget_multi,
    .getattr = fop_getattr,
    .setattr = fop_setattr,
    .readlink = fop_readlink,
    .mknod = fop_mknod,
    .mkdir = fop_mkdir,
    .unlink = fop_unlink,
    .rmdir = fop_rmdir,
    .symlink = fop_symlink,
    .rename = fop_rename,
    .link = fop_link,
    .open = fop_open,
    .read = fop_read,
    .write = fop_write,
    .flush = fop_flush,
    .release = fop_release,
    .fsync = fop_fsync,
    .opendir = fop_opendir,
    .readdir = fop_readdir,
    .readdirplus = fop_readdirplus,
    .releasedir = fop_releasedir,
    .fsyncdir = fop_fsyncdir,
    .statfs = fop_statfs,
    .setxattr = fop_setxattr,
    .getxattr = fop_getxattr,
    .listxattr = fop_listxattr,
    .removexattr = fop_removexattr,
    .create = fop_create,
    .fallocate = fop_fallocate,
    .ioctl = fop_ioctl,
};
