// SPDX-License-Identifier: MIT
/*
 * src/fs/file.c - file data: read, write, fallocate, truncate, setattr, fsync.
 *
 * Data blocks never enter the buffer cache: writes hand whole blocks to the
 * journal (jnl_handle_dirty_data: written per the data mode), reads ask the
 * journal for contiguous runs (jnl_read returns buffered data first), so a 1 MiB
 * read of a contiguous file is one call.
 *
 * Large writes, fallocates and truncates are split into several handles, as
 * ext3 does, each bounded by its credits; a write is not atomic as a whole, each
 * piece is (the size only grows over data already handed to the journal, F1).
 * fallocate and a shrinking truncate let the lock go between their handles (L1),
 * the inode busy meanwhile (L2): writes, fallocates and truncates of it wait.
 * A shrinking truncate first sets the new size and puts the inode on the orphan
 * list, then frees blocks handle by handle, then takes it off (F3): a crash in
 * between finishes the truncate at the next mount.
 *
 * atime is not updated by reads (as noatime); fs_setattr sets it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif

/* read runs: at most this many blocks per jnl_read */
#define FS_READ_RUN 256u

static int fs_iget_reg(struct fs *fs, uint64_t ino, struct fs_inode *ip)
{
	int rc = fs_iget(fs, ino, ip);

	if (!rc && S_ISDIR(ip->mode))
		return -EISDIR;
	if (!rc && !S_ISREG(ip->mode))
		return -EINVAL;
	return rc;
}

ssize_t fs_read(struct fs *fs, uint64_t ino, uint64_t off, size_t size, void *buf)
{
	uint8_t *bounce = NULL, *dst = buf;
	struct fs_inode ip;
	uint64_t end, pos;
	ssize_t rc;

	jg_mutex_lock(&fs->lock);
	rc = fs_iget_reg(fs, ino, &ip);
	if (rc)
		goto out;
	if (off >= ip.size || !size) {
		rc = 0;
		goto out;
	}
	end = off + size < ip.size ? off + size : ip.size;
	bounce = jg_alloc_blocks(FS_READ_RUN);
	if (!bounce) {
		rc = -ENOMEM;
		goto out;
	}
	for (pos = off; pos < end;) {
		uint64_t lblk = pos / JG_BLOCK_SIZE, last = (end - 1) / JG_BLOCK_SIZE;
		uint64_t want = last - lblk + 1, pblk, run, skip, n;

		if (want > FS_READ_RUN)
			want = FS_READ_RUN;
		rc = fs_bmap_get(fs, &ip, lblk, want, &pblk, &run);
		if (rc)
			goto out;
		if (pblk) {
			rc = jnl_read(fs->jnl, pblk, (uint32_t)run, bounce);
			/* never bytes that fail their checksum: healed, or EIO */
			if (!rc)
				rc = fs_dcsum_verify_run(fs, ino, lblk, pblk, run, bounce);
			if (rc)
				goto out;
		}
		skip = pos % JG_BLOCK_SIZE;
		n = run * JG_BLOCK_SIZE - skip;
		if (n > end - pos)
			n = end - pos;
		if (pblk)
			memcpy(dst + (pos - off), bounce + skip, n);
		else
			memset(dst + (pos - off), 0, n);
		pos += n;
	}
	rc = (ssize_t)(end - off);
out:
	free(bounce);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

/* Every data block a file writes home comes here: its checksum is set in the
 * same handle (dcsum.c), so both commit together, or neither (D1). */
int fs_data_dirty(struct fs_tx *tx, uint64_t pblk, const void *blk)
{
	uint32_t old = 0;
	int rc;

	if (tx->fs->opts.data_mode == JNL_DATA_JOURNAL)
		fs_tx_track(tx, pblk);
	rc = fs_dcsum_set(tx, pblk, blk, &old);
	if (rc)
		return rc;
	rc = jnl_handle_dirty_data(tx->h, pblk, blk);
	/* refused without an abort (-ENOMEM, -ENOSPC), the handle still commits:
	 * the slot must go on naming the contents the journal keeps */
	if (rc)
		fs_dcsum_restore(tx, pblk, old);
	else
		tx->dirtied = true;
	return rc;
}

/* Undo the mapping of a new block whose data the journal refused (X1). If even
 * that fails the map would name an unwritten block: stop all writes. */
static int fs_file_unmap(struct fs_tx *tx, struct fs_inode *ip, uint64_t lblk)
{
	int rc = fs_bmap_unmap(tx, ip, lblk, false);

	if (rc)
		fs_set_error(tx->fs, "inode %llu: block %llu mapped, not written, not unmapped (%d)",
			     (unsigned long long)ip->ino, (unsigned long long)lblk, rc);
	return rc;
}

/* The logical blocks a fallocate allocated, in runs: given back if it fails. */
struct fs_runs {
	uint64_t (*run)[2];	/* first block, count */
	size_t n, cap;
};

/* Record @lblk; without memory it is not recorded (and stays allocated). */
static void fs_runs_add(struct fs_runs *r, uint64_t lblk)
{
	uint64_t(*p)[2];
	size_t cap;

	if (r->n && r->run[r->n - 1][0] + r->run[r->n - 1][1] == lblk) {
		r->run[r->n - 1][1]++;
		return;
	}
	if (r->n == r->cap) {
		cap = r->cap ? 2 * r->cap : 16;
		p = realloc(r->run, cap * sizeof(*p));
		if (!p)
			return;
		r->run = p;
		r->cap = cap;
	}
	r->run[r->n][0] = lblk;
	r->run[r->n][1] = 1;
	r->n++;
}

/*
 * Write one handle's worth (up to FS_WRITE_CHUNK blocks) of [@off, @off + @size)
 * of @ino; *@done is the count of bytes written. With @src NULL, allocate holes
 * and zero them (fallocate) without touching mapped blocks, recording them in
 * @fresh_runs. @times: stamp ctime (and mtime for a write).
 */
static int fs_write_chunk(struct fs *fs, uint64_t ino, uint64_t off, uint64_t size,
			  const uint8_t *src, bool extend, bool times, uint64_t *done,
			  struct fs_runs *fresh_runs)
{
	uint64_t lblk = off / JG_BLOCK_SIZE, pos = off, end;
	uint8_t *blk = jg_alloc_blocks(1);
	struct fs_inode ip;
	struct fs_tx *tx = NULL;
	struct timespec now;
	/* a block's allocation (bitmap, descriptor, 3 indirect) and its checksum block */
	unsigned int room = fs->dcsum_blocks ? 9 : 8;
	int rc;

	*done = 0; /* also when nothing could start: the caller adds it up */
	if (!blk)
		return -ENOMEM;
	rc = fs_tx_start(fs, fs->dcsum_blocks ? FS_CREDITS_WRITE_DCSUM : FS_CREDITS_WRITE, &tx);
	if (rc)
		goto out;
	rc = fs_iget_reg(fs, ino, &ip);
	if (rc)
		goto out;
	end = (lblk + FS_WRITE_CHUNK) * JG_BLOCK_SIZE;
	if (end > off + size)
		end = off + size;
	for (; pos < end; lblk++) {
		uint64_t bstart = lblk * JG_BLOCK_SIZE, skip = pos - bstart, n, pblk;
		bool fresh;

		n = JG_BLOCK_SIZE - skip;
		if (n > end - pos)
			n = end - pos;
		/* room for this block's allocation: bitmap, descriptor, 3 indirect */
		if (!fs_tx_room(tx, room))
			break;
		/* a failure here may leave indirect blocks mapped: the inode is written below */
		rc = fs_bmap_alloc(tx, &ip, lblk, false, &pblk, &fresh);
		if (rc)
			break;
		if (!src) {
			if (fresh) {
				memset(blk, 0, JG_BLOCK_SIZE);
				rc = fs_data_dirty(tx, pblk, blk);
				if (!rc && fresh_runs)
					fs_runs_add(fresh_runs, lblk);
			}
		} else if (n == JG_BLOCK_SIZE) {
			/* a whole block straight from the caller's buffer, which stays as
			 * it is for the call: its checksum and the journal's copy are of
			 * the same bytes, and no bounce copy is made */
			rc = fs_data_dirty(tx, pblk, src + (pos - off));
		} else {
			/* partial block: merge with what is there (F1: zeros when new) */
			if (fresh)
				memset(blk, 0, JG_BLOCK_SIZE);
			else
				rc = jnl_read(fs->jnl, pblk, 1, blk) ?:
				     fs_dcsum_verify_run(fs, ino, lblk, pblk, 1, blk);
			if (!rc) {
				memcpy(blk + skip, src + (pos - off), n);
				rc = fs_data_dirty(tx, pblk, blk);
			}
		}
		if (rc) {
			/* (X1): the new block's contents never reached the journal */
			if (fresh)
				rc = fs_file_unmap(tx, &ip, lblk) ?: rc;
			break;
		}
		pos += n;
	}
	if (pos > off) {
		if (extend && pos > ip.size)
			ip.size = pos;
		if (times) {
			fs_now(&now);
			if (src)
				ip.mtime = now;
			ip.ctime = now;
		}
		*done = pos - off;
	}
	/* also after a failure: the map may have changed (fs_iput skips an unchanged inode) */
	rc = fs_iput(tx, &ip) ?: rc;
out:
	if (tx)
		rc = fs_tx_end(tx, rc);
	free(blk);
	return rc;
}

ssize_t fs_write(struct fs *fs, uint64_t ino, uint64_t off, size_t size, const void *buf)
{
	return fs_write_flags(fs, ino, off, size, buf, 0);
}

ssize_t fs_write_flags(struct fs *fs, uint64_t ino, uint64_t off, size_t size, const void *buf,
		       unsigned int flags)
{
	uint64_t written = 0, n;
	bool retried = false;
	int rc;

	if (flags & ~FS_WRITE_KEEP_TIMES)
		return -EINVAL;
	if (off + size < off || off + size > FS_MAX_LBLK * JG_BLOCK_SIZE)
		return -EFBIG;

	jg_mutex_lock(&fs->lock);
	fs_busy_wait(fs, ino);	/* (L2): not into blocks a truncate is freeing */
	rc = fs_writable(fs);
	while (!rc && written < size) {
		rc = fs_write_chunk(fs, ino, off + written, size - written,
				    (const uint8_t *)buf + written, true,
				    !(flags & FS_WRITE_KEEP_TIMES), &n, NULL);
		written += n;
		if (!rc && !n)
			rc = -ENOSPC;
		fs_nospc_retry_locked(fs, &rc, &retried);
	}
	jg_mutex_unlock(&fs->lock);
	/* as write(2): a short count when something was written */
	return written ? (ssize_t)written : rc;
}

/*
 * A fallocate that failed gives back the blocks it allocated, as its try after
 * a commit has already failed: a failed call leaves the file's blocks as they
 * were (ext4 would keep them). They are zeroed, and nobody wrote them since (the
 * inode is busy, L2). Handles of FS_CREDITS_TRUNCATE, the lock let go between
 * them (L1); a crash or an error part way leaves the rest mapped and zeroed, a
 * valid map, as a fallocate stopped there would.
 */
static void fs_fallocate_undo(struct fs *fs, uint64_t ino, const struct fs_runs *r)
{
	struct fs_inode ip;
	struct fs_tx *tx;
	uint64_t k = 0;
	size_t i = 0;
	int rc = 0;

	while (!rc && i < r->n) {
		unsigned int frees = 0;

		rc = fs_writable(fs) ?: fs_tx_start(fs, FS_CREDITS_TRUNCATE, &tx);
		if (rc)
			break;
		rc = fs_iget_reg(fs, ino, &ip);
		if (!rc) {
			/* an unmap: the indirect block, the bitmap and descriptor; a
			 * bound on the frees, as a truncate's (their revokes) */
			while (!rc && i < r->n && fs_tx_room(tx, 6) && frees++ < 512) {
				rc = fs_bmap_unmap(tx, &ip, r->run[i][0] + k, false);
				if (++k == r->run[i][1]) {
					i++;
					k = 0;
				}
			}
			rc = fs_iput(tx, &ip) ?: rc;
		}
		rc = fs_tx_end(tx, rc);
		if (!rc && i < r->n)
			fs_lock_yield(fs);
	}
	if (rc)
		jg_log(JG_LOG_WARN, FS_SUBSYS,
		       "dev=%s inode %llu: blocks of a failed fallocate not given back: %d",
		       fs->dev->name, (unsigned long long)ino, rc);
}

int fs_fallocate(struct fs *fs, uint64_t ino, int mode, uint64_t off, uint64_t len)
{
	struct fs_runs fresh = { 0 };
	uint64_t done = 0, n;
	struct fs_busy busy;
	struct fs_inode ip;
	struct fs_tx *tx;
	bool retried = false;
	int rc;

	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (!len)
		return -EINVAL;
	if (off + len < off || off + len > FS_MAX_LBLK * JG_BLOCK_SIZE)
		return -EFBIG;
	jg_mutex_lock(&fs->lock);
	fs_busy_begin(fs, &busy, ino);
	rc = fs_writable(fs);
	if (!rc)
		rc = fs_iget_reg(fs, ino, &ip);
	/* whole blocks, allocated and zeroed; the size moves last (mode 0) */
	while (!rc && done < len) {
		rc = fs_write_chunk(fs, ino, off + done, len - done, NULL, false, true, &n, &fresh);
		done += n;
		if (!rc && !n)
			rc = -ENOSPC;
		if (fs_nospc_retry_locked(fs, &rc, &retried))
			continue;
		if (rc || done == len)
			break;
		/* (L1): one chunk per hold; blocks past i_size are zeroed (F1); busy (L2):
		 * the inode is not truncated nor evicted meanwhile */
		fs_lock_yield(fs);
		rc = fs_writable(fs);
	}
	if (!rc && !(mode & FALLOC_FL_KEEP_SIZE)) {
		rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
		if (!rc) {
			rc = fs_iget_reg(fs, ino, &ip);
			if (!rc && off + len > ip.size) {
				ip.size = off + len;
				rc = fs_iput(tx, &ip);
			}
			rc = fs_tx_end(tx, rc);
		}
	}
	if (rc)
		fs_fallocate_undo(fs, ino, &fresh);
	free(fresh.run);
	fs_busy_end(fs, &busy);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

/* Zero the bytes of the last block past @size (F1). */
static int fs_zero_tail(struct fs_tx *tx, struct fs_inode *ip, uint64_t size)
{
	uint64_t pblk, run;
	uint8_t *blk;
	int rc;

	if (!(size % JG_BLOCK_SIZE))
		return 0;
	rc = fs_bmap_get(tx->fs, ip, size / JG_BLOCK_SIZE, 1, &pblk, &run);
	if (rc || !pblk)
		return rc;
	blk = jg_alloc_blocks(1);
	if (!blk)
		return -ENOMEM;
	rc = jnl_read(tx->fs->jnl, pblk, 1, blk) ?:
	     fs_dcsum_verify_run(tx->fs, ip->ino, size / JG_BLOCK_SIZE, pblk, 1, blk);
	if (!rc) {
		memset(blk + size % JG_BLOCK_SIZE, 0, JG_BLOCK_SIZE - size % JG_BLOCK_SIZE);
		rc = fs_data_dirty(tx, pblk, blk);
	}
	free(blk);
	return rc;
}

int fs_truncate(struct fs *fs, uint64_t ino, uint64_t size)
{
	struct fs_busy busy;
	struct fs_inode ip;
	struct fs_tx *tx;
	struct timespec now;
	bool shrink = false;
	int rc;

	if (size > FS_MAX_LBLK * JG_BLOCK_SIZE)
		return -EFBIG;
	/* (L2): busy from before the size is read to the last block freed */
	fs_busy_begin(fs, &busy, ino);
	rc = fs_writable(fs);
	if (rc)
		goto end;
	rc = fs_tx_start(fs, FS_CREDITS_SETSIZE, &tx);
	if (rc)
		goto end;
	rc = fs_iget_reg(fs, ino, &ip);
	if (rc)
		goto out;
	shrink = size < ip.size;
	fs_now(&now);
	if (shrink)
		rc = fs_zero_tail(tx, &ip, size);
	if (rc)
		goto out;
	ip.size = size;
	ip.mtime = ip.ctime = now;
	/* (F3): the blocks past the size are freed by the next handles or the next mount */
	rc = shrink ? fs_orphan_add(tx, &ip) : fs_iput(tx, &ip);
out:
	rc = fs_tx_end(tx, rc);
	if (!rc && shrink)
		rc = fs_inode_truncate_blocks_busy(fs, ino);
end:
	fs_busy_end(fs, &busy);
	return rc;
}

int fs_setattr(struct fs *fs, uint64_t ino, const struct fs_attr *attr, unsigned int valid,
	       struct fs_attr *out)
{
	struct fs_inode ip;
	struct fs_tx *tx = NULL;
	struct timespec now;
	int rc;

	jg_mutex_lock(&fs->lock);
	rc = fs_writable(fs);
	if (rc)
		goto out;
	if (valid & FS_SET_SIZE) {
		rc = fs_iget(fs, ino, &ip);
		if (!rc && S_ISDIR(ip.mode))
			rc = -EISDIR;
		else if (!rc && !S_ISREG(ip.mode))
			rc = -EINVAL;
		if (!rc)
			rc = fs_truncate(fs, ino, attr->size);
		if (rc)
			goto out;
	}
	rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
	if (rc)
		goto out;
	rc = fs_iget(fs, ino, &ip);
	if (rc)
		goto out;
	fs_now(&now);
	if (valid & FS_SET_MODE)
		ip.mode = (ip.mode & S_IFMT) | (attr->mode & 07777);
	if (valid & FS_SET_UID)
		ip.uid = attr->uid;
	if (valid & FS_SET_GID)
		ip.gid = attr->gid;
	if (valid & FS_SET_ATIME_NOW)
		ip.atime = now;
	else if (valid & FS_SET_ATIME)
		ip.atime = attr->atime;
	if (valid & FS_SET_MTIME_NOW)
		ip.mtime = now;
	else if (valid & FS_SET_MTIME)
		ip.mtime = attr->mtime;
	ip.ctime = (valid & FS_SET_CTIME) ? attr->ctime : now;
	rc = fs_iput(tx, &ip);
	if (!rc && out)
		fs_inode_to_attr(&ip, out);
out:
	if (tx)
		rc = fs_tx_end(tx, rc);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

/*
 * Durable on return: the transaction running now is committed, and with it every
 * earlier one (commits are in order) - so everything done before this call
 * survives a crash, not only this inode's changes: what ext3 gives in practice
 * with its single running transaction, and what the crash harness's model (M1)
 * relies on. The inode's own last change is in that transaction or an earlier one.
 */
int fs_fsync(struct fs *fs, uint64_t ino, bool datasync)
{
	struct jnl_info info;
	bool started;
	int rc;

	(void)ino;
	(void)datasync;
	jg_mutex_lock(&fs->lock);
	started = fs->started;
	if (started)
		jnl_info_get(fs->jnl, &info);
	jg_mutex_unlock(&fs->lock);
	/* the journal waits without the big lock: other calls go on meanwhile */
	if (!started)
		return 0;
	/* the one before first: an empty running transaction commits at once, even
	 * while the one before it is still being written */
	if (info.running_tid > 1) {
		rc = jnl_commit(fs->jnl, info.running_tid - 1, true);
		if (rc)
			return rc;
	}
	rc = jnl_commit(fs->jnl, info.running_tid, true);
	if (!rc && info.running_tid > 1) {
		/* (G3) only the one before: without the big lock another thread may have
		 * joined running_tid after an empty-transaction early return */
		jg_mutex_lock(&fs->lock);
		if (jg_seq_after(info.running_tid - 1, fs->durable_tid))
			fs->durable_tid = info.running_tid - 1;
		jg_mutex_unlock(&fs->lock);
	}
	return rc;
}

/* The big lock is held, so no handle can join the running transaction meanwhile:
 * once both commits return, everything before the transaction running then is
 * durable. Not running_tid itself: an empty running transaction is not
 * committed but goes on taking handles, and a block freed in it would count
 * as durable (G3). */
int fs_commit_all_locked(struct fs *fs)
{
	struct jnl_info info;
	int rc = 0;

	JG_ASSERT_HELD(&fs->lock);
	jnl_info_get(fs->jnl, &info);
	if (info.running_tid > 1)
		rc = jnl_commit(fs->jnl, info.running_tid - 1, true);
	if (!rc)
		rc = jnl_commit(fs->jnl, info.running_tid, true);
	if (rc)
		return rc;
	jnl_info_get(fs->jnl, &info);
	if (jg_seq_after(info.running_tid - 1, fs->durable_tid))
		fs->durable_tid = info.running_tid - 1;
	return 0;
}

bool fs_nospc_retry_locked(struct fs *fs, int *rc, bool *retried)
{
	JG_ASSERT_HELD(&fs->lock);
	if (*rc != -ENOSPC || *retried || !fs->free_blocks)
		return false;
	*retried = true;
	*rc = fs_commit_all_locked(fs);
	return !*rc;
}

int fs_sync(struct fs *fs)
{
	/* fs_fsync already makes everything earlier durable */
	return fs_fsync(fs, FS_ROOT_INO, false);
}
