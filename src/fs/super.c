// SPDX-License-Identifier: MIT
/*
 * src/fs/super.c - superblock, mkfs, mount and unmount, transactions, errors,
 * the orphan list, statfs.
 *
 * Mount: read and verify the superblock from the device; open the journal at
 * sb.journal_start and recover it (the report is kept for fs_info); read the
 * superblock again through the journal (recovery may have replayed a newer
 * one); sum the group descriptors; start the journal; clear FS_STATE_CLEAN in a
 * first transaction ("in use"); free the orphans. Unmount: set FS_STATE_CLEAN
 * (and FS_STATE_ERROR when an inconsistency was found) in a last transaction,
 * then jnl_close commits and checkpoints everything.
 *
 * mkfs writes the superblock, descriptors, bitmaps and the journal superblock
 * directly, then mounts the new filesystem and creates the root directory
 * through an ordinary transaction, so the root is built by the same code as
 * every other directory.
 *
 * Errors: an inconsistency found in a structure (fs_set_error) turns the
 * filesystem read-only at once: later modifications get -EROFS; the superblock
 * records FS_STATE_ERROR at unmount so the next mount and fsck know.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"

/* ----------------------------------------------------------- transactions */

int fs_tx_start(struct fs *fs, unsigned int credits, struct fs_tx **out)
{
	struct fs_tx *tx = malloc(sizeof(*tx));
	int rc;

	if (!tx)
		return -ENOMEM;
	rc = jnl_handle_start(fs->jnl, credits, &tx->h);
	if (rc) {
		if (rc == -EROFS)
			fs->readonly = true;
		free(tx);
		return rc;
	}
	tx->fs = fs;
	tx->tid = jnl_handle_tid(tx->h);
	tx->credits = credits;
	tx->used = 0;
	tx->dcsum = NULL;
	tx->dirtied = false;
	tx->torn = false;
	*out = tx;
	return 0;
}

void fs_tx_tear(struct fs_tx *tx, int err, const char *what, uint64_t blkno)
{
	char why[96];

	if (tx->torn || err == -EROFS) /* aborted already */
		return;
	if (blkno)
		snprintf(why, sizeof(why), "%s (block %llu) in an update", what,
			 (unsigned long long)blkno);
	else
		snprintf(why, sizeof(why), "%s of an update", what);
	jg_log(JG_LOG_ERR, FS_SUBSYS,
	       "dev=%s %s failed: %s; the update cannot be completed nor undone: journal aborted, filesystem read-only (the next mount recovers the last commit)",
	       tx->fs->dev->name, why, strerror(-err));
	jnl_handle_abort(tx->h, err, why);
	tx->torn = true;
	tx->fs->readonly = true;
}

/* Errors an update may meet half way that it is not written to undo (T1). */
static bool fs_tx_rc_tears(int rc)
{
	return rc == -ENOMEM || rc == -EIO || rc == -EUCLEAN || rc == -EBADMSG ||
	       rc == -ENODEV;
}

int fs_tx_end(struct fs_tx *tx, int rc)
{
	bool torn;
	int stop;

	if (rc && tx->dirtied && fs_tx_rc_tears(rc))
		fs_tx_tear(tx, rc, "a step", 0);
	torn = tx->torn;
	stop = fs_tx_stop(tx);
	/* a torn update's stop can only say -EROFS: its own error says why */
	return torn && rc ? rc : stop ?: rc;
}

int fs_tx_stop(struct fs_tx *tx)
{
	int rc = fs_dcsum_flush(tx);

	rc = jnl_handle_stop(tx->h) ?: rc;
	if (rc == -EROFS)
		tx->fs->readonly = true;
	free(tx);
	return rc;
}

void fs_tx_track(struct fs_tx *tx, uint64_t blkno)
{
	for (unsigned int i = 0; i < tx->used && i < FS_TX_MAX_TRACK; i++)
		if (tx->blocks[i] == blkno)
			return;
	if (tx->used < FS_TX_MAX_TRACK)
		tx->blocks[tx->used] = blkno;
	tx->used++;
}

bool fs_tx_room(const struct fs_tx *tx, unsigned int need)
{
	return tx->used + need <= tx->credits;
}

int fs_sb_write(struct fs_tx *tx)
{
	struct fs_buf *b;
	int rc = fs_bget_new(tx->fs, FS_SB_BLKNO, &b);

	if (rc)
		return rc;
	memcpy(b->data, &tx->fs->sb, JG_BLOCK_SIZE);
	rc = fs_bdirty(tx, b, FS_MAGIC_SUPER);
	memcpy(&tx->fs->sb, b->data, JG_BLOCK_SIZE);
	fs_bput(tx->fs, b);
	return rc;
}

/*
 * The time stamped on inodes: the kernel's coarse clock (its tick), the one it
 * stamps with itself (current_time(), on a write through the writeback cache,
 * src/fuse/ops.c (V5)), as kernel filesystems stamp. A write in the tick of the
 * create then finds mtime and ctime current and dirties nothing: no SETATTR of
 * the times at close (issue 28). A finer stamp was also ahead of the kernel's,
 * so that a write in the same tick moved mtime back.
 */
void fs_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME_COARSE, ts);
}

void fs_set_error(struct fs *fs, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (fs->fsck) {
		/* fsck counts and repairs problems itself */
		jg_log(JG_LOG_WARN, FS_SUBSYS, "dev=%s %s", fs->dev->name, msg);
		return;
	}
	jg_log(JG_LOG_ERR, FS_SUBSYS, "dev=%s inconsistency: %s; filesystem now read-only, run fsck",
	       fs->dev->name, msg);
	fs->error = true;
	fs->readonly = true;
}

int fs_writable(struct fs *fs)
{
	return fs->readonly || !fs->started ? -EROFS : 0;
}

/* ----------------------------------------------------------------- orphans */

/* Is @ino on the orphan list? Walks it (the list is short). */
static int fs_orphan_find(struct fs *fs, uint64_t ino, uint64_t *prev)
{
	uint64_t cur = jg_le64(fs->sb.orphan_head), p = 0;
	struct fs_inode ip;
	int rc;

	for (uint64_t n = 0; cur && n <= fs->ninodes; n++) {
		if (cur == ino) {
			*prev = p;
			return 1;
		}
		rc = fs_iget(fs, cur, &ip);
		if (rc) {
			fs_set_error(fs, "orphan list: inode %llu unreadable (%d)",
				     (unsigned long long)cur, rc);
			return rc == -ENOENT ? -EUCLEAN : rc;
		}
		p = cur;
		cur = ip.orphan_next;
	}
	return 0;
}

int fs_orphan_add(struct fs_tx *tx, struct fs_inode *ip)
{
	struct fs *fs = tx->fs;
	uint64_t prev;
	int rc = fs_orphan_find(fs, ip->ino, &prev);

	/* already on it (a truncate, then the last unlink): the caller's change is written */
	if (rc)
		return rc < 0 ? rc : fs_iput(tx, ip);
	ip->orphan_next = jg_le64(fs->sb.orphan_head);
	fs->sb.orphan_head = jg_cpu_to_le64(ip->ino);
	rc = fs_sb_write(tx);
	return rc ?: fs_iput(tx, ip);
}

int fs_orphan_del(struct fs_tx *tx, struct fs_inode *ip)
{
	struct fs *fs = tx->fs;
	struct fs_inode pi;
	uint64_t prev = 0;
	int rc = fs_orphan_find(fs, ip->ino, &prev);

	if (rc <= 0)
		return rc;
	if (!prev) {
		fs->sb.orphan_head = jg_cpu_to_le64(ip->orphan_next);
		rc = fs_sb_write(tx);
	} else {
		rc = fs_iget(fs, prev, &pi);
		if (!rc) {
			pi.orphan_next = ip->orphan_next;
			rc = fs_iput(tx, &pi);
		}
	}
	if (rc)
		return rc;
	ip->orphan_next = 0;
	return fs_iput(tx, ip);
}

/* Mount: finish what the orphan list records (unlinked inodes, truncates). */
static int fs_orphans_process(struct fs *fs)
{
	struct fs_inode ip;
	uint64_t ino;
	int rc = 0;

	for (uint64_t n = 0; (ino = jg_le64(fs->sb.orphan_head)) && n <= fs->ninodes; n++) {
		rc = fs_iget(fs, ino, &ip);
		if (rc) {
			jg_log(JG_LOG_ERR, FS_SUBSYS, "dev=%s orphan inode %llu unreadable: %d",
			       fs->dev->name, (unsigned long long)ino, rc);
			fs_set_error(fs, "orphan list damaged");
			return -EUCLEAN;
		}
		if (!ip.nlink) {
			rc = fs_inode_evict(fs, ino);
			if (!rc)
				fs->orphans_freed++;
		} else {
			rc = fs_inode_truncate_blocks(fs, ino);
		}
		if (rc)
			return rc;
	}
	if (fs->orphans_freed)
		jg_log(JG_LOG_INFO, FS_SUBSYS, "dev=%s freed %llu orphan inodes", fs->dev->name,
		       (unsigned long long)fs->orphans_freed);
	return 0;
}

/* -------------------------------------------------------------- superblock */

/*
 * Verify a superblock image: magic -> crc (seed from its own uuid) -> version ->
 * home address -> features -> geometry. -EUCLEAN (logged), -EOPNOTSUPP.
 */
static int fs_sb_verify(const struct fs_super *sb, const struct blk_dev *dev, bool quiet)
{
	uint32_t seed = jg_crc_seed(sb->uuid);
	uint64_t nb = jg_le64(sb->blocks_count), first = jg_le64(sb->first_group_block);
	uint32_t bpg = jg_le32(sb->blocks_per_group), ipg = jg_le32(sb->inodes_per_group);
	uint32_t ng = jg_le32(sb->groups_count), gdtb = jg_le32(sb->gdt_blocks);
	uint64_t js = jg_le64(sb->journal_start), jb = jg_le64(sb->journal_blocks);
	const char *bad = NULL;
	int rc;

	if (quiet && jg_le32(sb->hdr.magic) != FS_MAGIC_SUPER)
		return -EUCLEAN;
	rc = jg_blk_check(sb, JG_BLOCK_SIZE, FS_MAGIC_SUPER, FS_FORMAT_VERSION, FS_SB_BLKNO, seed,
			  FS_SUBSYS, "superblock", dev->name);
	if (rc)
		return rc;
	if (jg_le32(sb->feature_incompat) & ~FS_FEATURE_INCOMPAT_SUPP) {
		jg_log(JG_LOG_ERR, FS_SUBSYS, "superblock dev=%s unknown incompat features 0x%x",
		       dev->name, jg_le32(sb->feature_incompat));
		return -EOPNOTSUPP;
	}
	if (nb > dev->nblocks || nb < 16)
		bad = "blocks_count";
	else if (!bpg || bpg > FS_BITMAP_BITS)
		bad = "blocks_per_group";
	else if (!ipg || ipg % FS_INODES_PER_BLOCK || ipg > FS_BITMAP_BITS)
		bad = "inodes_per_group";
	else if (jg_le32(sb->itable_blocks) != ipg / FS_INODES_PER_BLOCK)
		bad = "itable_blocks";
	else if (jg_le32(sb->inode_size) != FS_INODE_SIZE)
		bad = "inode_size";
	else if (jg_le64(sb->gdt_start) != 1 || (uint64_t)gdtb * FS_GD_PER_BLOCK < ng ||
		 gdtb >= nb - 1)
		bad = "gdt";
	else if (js != 1 + gdtb)
		bad = "journal_start";
	/* the log lies after the descriptors and ends before the last block, so the
	 * first group follows it inside the filesystem; js + jb is added only once
	 * it cannot wrap (a wrapped sum let groups start over the descriptors) */
	else if (jb < JNL_MIN_BLOCKS || jb >= nb - js)
		bad = "journal_blocks";
	else if (first != js + jb)
		bad = "first_group_block";
	else if (!ng || first + (uint64_t)(ng - 1) * bpg >= nb ||
		 first + (uint64_t)ng * bpg < nb)
		bad = "groups_count";
	else if (jg_le64(sb->inodes_count) != (uint64_t)ng * ipg)
		bad = "inodes_count";
	else if (nb - (first + (uint64_t)(ng - 1) * bpg) < 2 + ipg / FS_INODES_PER_BLOCK + 1)
		bad = "last group size";
	else if (jg_le64(sb->orphan_head) > (uint64_t)ng * ipg)
		bad = "orphan_head";
	else if ((jg_le32(sb->feature_ro_compat) & FS_FEATURE_RO_COMPAT_DATA_CSUM) &&
		 (jg_le64(sb->dcsum_start) != nb ||
		  jg_le64(sb->dcsum_blocks) != (nb + FS_DCSUM_PER_BLOCK - 1) / FS_DCSUM_PER_BLOCK ||
		  jg_le64(sb->dcsum_blocks) > dev->nblocks - nb))
		bad = "dcsum_start or dcsum_blocks";
	/* (D3) a mark needs a region, and lies inside it (at its end the flag goes) */
	else if ((jg_le32(sb->feature_incompat) & FS_FEATURE_INCOMPAT_LAZY_DCSUM) &&
		 (!(jg_le32(sb->feature_ro_compat) & FS_FEATURE_RO_COMPAT_DATA_CSUM) ||
		  jg_le64(sb->dcsum_init) >= jg_le64(sb->dcsum_blocks)))
		bad = "dcsum_init";
	if (!bad)
		return 0;
	jg_log(JG_LOG_ERR, FS_SUBSYS, "superblock dev=%s blkno=0 bad %s", dev->name, bad);
	return -EUCLEAN;
}

static void fs_geometry_load(struct fs *fs)
{
	const struct fs_super *sb = &fs->sb;

	fs->seed = jg_crc_seed(sb->uuid);
	fs->hash_seed = jg_le64(sb->hash_seed);
	fs->nblocks = jg_le64(sb->blocks_count);
	fs->ninodes = jg_le64(sb->inodes_count);
	fs->bpg = jg_le32(sb->blocks_per_group);
	fs->ipg = jg_le32(sb->inodes_per_group);
	fs->ngroups = jg_le32(sb->groups_count);
	fs->gdt_start = jg_le64(sb->gdt_start);
	fs->gdt_blocks = jg_le32(sb->gdt_blocks);
	fs->itable_blocks = jg_le32(sb->itable_blocks);
	fs->jnl_start = jg_le64(sb->journal_start);
	fs->jnl_blocks = jg_le64(sb->journal_blocks);
	fs->first_group = jg_le64(sb->first_group_block);
	fs->dcsum_start = fs->dcsum_blocks = 0;
	if (jg_le32(sb->feature_ro_compat) & FS_FEATURE_RO_COMPAT_DATA_CSUM) {
		fs->dcsum_start = jg_le64(sb->dcsum_start);
		fs->dcsum_blocks = jg_le64(sb->dcsum_blocks);
	}
	/* (D3) without the flag the whole region was written (mkfs before it) */
	fs->dcsum_init = jg_le32(sb->feature_incompat) & FS_FEATURE_INCOMPAT_LAZY_DCSUM
				 ? jg_le64(sb->dcsum_init)
				 : fs->dcsum_blocks;
}

void fs_close_mem(struct fs *fs)
{
	if (!fs)
		return;
	fs_bcache_destroy(fs);
	free(fs->dcsum_unsettled);
	if (fs->pending) {
		for (uint32_t g = 0; g < fs->ngroups; g++)
			for (int k = 0; k < 2; k++)
				free(fs->pending[g].bits[k]);
		free(fs->pending);
	}
	if (fs->ist) {
		for (uint64_t i = 0; i < fs->nist; i++) {
			struct fs_istate *s = fs->ist[i], *n;

			for (; s; s = n) {
				n = s->next;
				free(s);
			}
		}
		free(fs->ist);
	}
	pthread_cond_destroy(&fs->busy_cv);
	jg_mutex_destroy(&fs->lock);
	free(fs);
}

static int fs_sb_heal_verify(void *ctx, const void *blk)
{
	const struct fs_super *sb = blk;

	(void)ctx;
	return jg_blk_verify(blk, JG_BLOCK_SIZE, FS_MAGIC_SUPER, FS_FORMAT_VERSION, FS_SB_BLKNO,
			     jg_crc_seed(sb->uuid));
}

/*
 * The superblock as read failed its check (-EUCLEAN): ask the device to rebuild
 * it from its redundancy (BLK_CTL_HEAL_READ, as fs_bread does for every other
 * metadata block; at the first read the journal is not open (@jnl NULL), so
 * straight to the device: recovery replays a newer copy over it later, as
 * over the one read; a read-only array heals without writing, so the read
 * after recovery (through @jnl) heals again). Returns
 * the verdict on what @blk holds then; @rc when no heal happened. @quiet: a
 * failed heal is not logged (the caller says what it means).
 */
static int fs_sb_heal(struct blk_dev *dev, struct jnl *jnl, uint8_t *blk, int rc, bool quiet)
{
	struct blk_heal h = {.blkno = FS_SB_BLKNO, .buf = blk, .verify = fs_sb_heal_verify};
	char roles[64];
	int hr;

	if (rc != -EUCLEAN)
		return rc;
	if (jnl) /* after recovery: the journal's copy first */
		hr = jnl_read_heal(jnl, FS_SB_BLKNO, blk, fs_sb_heal_verify, NULL, &h.rewritten);
	else
		hr = blk_ctl(dev, BLK_CTL_HEAL_READ, &h);
	if (hr) {
		if (hr != -ENOTTY && !quiet)
			jg_log(JG_LOG_ERR, FS_SUBSYS, "superblock dev=%s heal failed: %s",
			       dev->name, strerror(-hr));
		return rc;
	}
	rc = fs_sb_verify((const struct fs_super *)blk, dev, false);
	if (!rc)
		jg_log(JG_LOG_WARN, FS_SUBSYS, "superblock dev=%s healed: members rewritten: %s",
		       dev->name, jg_roles_str(h.rewritten, roles, sizeof(roles)));
	return rc;
}

static bool fs_blk_blank(const uint8_t *blk)
{
	for (size_t i = 0; i < JG_BLOCK_SIZE; i++)
		if (blk[i])
			return false;
	return true;
}

/*
 * Whether superblock @sb accepts @mode. A volume with data checksums refuses
 * ordered and writeback (read-only aside), before the journal recovers
 * anything: an in-place overwrite in flight at a crash would leave data that
 * does not match its committed checksum, and nothing would say which block
 * (docs/design/checksums.md, "Data checksums"). -EINVAL after a message.
 */
static int fs_mode_check(const struct fs_super *sb, const struct blk_dev *dev,
			 enum jnl_data_mode mode, bool readonly)
{
	if (readonly || !(jg_le32(sb->feature_ro_compat) & FS_FEATURE_RO_COMPAT_DATA_CSUM) ||
	    (mode != JNL_DATA_ORDERED && mode != JNL_DATA_WRITEBACK))
		return 0;
	jg_log(JG_LOG_ERR, FS_SUBSYS,
	       "dev=%s keeps data checksums: data=%s is refused, mount with data=declared or data=journal (or read-only); "
	       "a volume for data=ordered or writeback is made with mkfs --no-data-checksums",
	       dev->name, jnl_data_mode_name(mode));
	return -EINVAL;
}

int fs_mount_check(struct blk_dev *dev, const struct fs_mount_opts *opts)
{
	const struct fs_super *sb;
	uint8_t *blk = jg_alloc_blocks(1);
	int rc;

	if (!blk)
		return -ENOMEM;
	/* one that does not read or verify is fs_mount's to judge (it heals): silent here */
	rc = blk_rw(dev, BLK_OP_READ, FS_SB_BLKNO, 1, blk, 0);
	sb = (const struct fs_super *)blk;
	if (!rc && !fs_sb_heal_verify(NULL, blk))
		rc = fs_mode_check(sb, dev, opts->data_mode,
				   opts->readonly || (jg_le32(sb->feature_ro_compat) &
						      ~FS_FEATURE_RO_COMPAT_SUPP));
	else
		rc = 0;
	free(blk);
	return rc;
}

int fs_open(struct blk_dev *dev, const struct fs_mount_opts *opts, bool fsck, struct fs **out)
{
	struct jnl_cfg jc = { 0 };
	struct fs *fs = calloc(1, sizeof(*fs));
	uint8_t *blk = jg_alloc_blocks(1);
	bool blank;
	int rc;

	if (!fs || !blk) {
		free(fs);
		free(blk);
		return -ENOMEM;
	}
	jg_mutex_init(&fs->lock, PTHREAD_MUTEX_DEFAULT);
	pthread_cond_init(&fs->busy_cv, NULL);
	fs->dev = dev;
	fs->opts = *opts;
	fs->fsck = fsck;
	fs->readonly = opts->readonly;
	rc = blk_rw(dev, BLK_OP_READ, FS_SB_BLKNO, 1, blk, 0);
	if (rc) {
		jg_log(JG_LOG_ERR, FS_SUBSYS, "superblock dev=%s read failed: %s", dev->name,
		       strerror(-rc));
		goto out;
	}
	/*
	 * mkfs writes the superblock last: a blank one is no filesystem yet, or
	 * one whose superblock was lost. Its redundancy is still asked, quietly
	 * (a member may have lost the block); then one line says what it means.
	 */
	blank = fs_blk_blank(blk);
	rc = fs_sb_verify((const struct fs_super *)blk, dev, blank);
	rc = fs_sb_heal(dev, NULL, blk, rc, blank);
	if (rc == -EUCLEAN && blank) {
		jg_log(JG_LOG_ERR, FS_SUBSYS,
		       "dev=%s holds no filesystem superblock (block 0 is blank): an array made by "
		       "jgrfs create, or a mkfs that did not finish, has none yet (jgrfs mkfs --force "
		       "makes one, erasing what the array holds)",
		       dev->name);
		rc = -ENOMEDIUM;
	}
	if (rc)
		goto out;
	memcpy(&fs->sb, blk, JG_BLOCK_SIZE);
	fs_geometry_load(fs);
	if (jg_le32(fs->sb.feature_ro_compat) & ~FS_FEATURE_RO_COMPAT_SUPP) {
		jg_log(JG_LOG_WARN, FS_SUBSYS, "dev=%s unknown ro_compat features 0x%x: read-only",
		       dev->name, jg_le32(fs->sb.feature_ro_compat));
		fs->readonly = true;
	}
	if (!fsck) {
		rc = fs_mode_check(&fs->sb, dev, opts->data_mode, fs->readonly);
		if (rc)
			goto out;
	}
	jc.start_blkno = fs->jnl_start;
	jc.nblocks = fs->jnl_blocks;	/* the journal superblock must say the same */
	jc.mode = opts->data_mode;
	jc.commit_interval_ms = opts->commit_interval_ms;
	jc.no_commit_thread = opts->no_commit_thread;
	jc.log_data_max = opts->log_data_blocks < 0  ? 0u
			  : opts->log_data_blocks ? (unsigned int)opts->log_data_blocks
						  : FS_LOG_DATA_DEFAULT;
	jc.readonly = fs->readonly;
	/* data checksums: the journal keeps the blocks in flight findable until settled */
	jc.keep_declared = fs->dcsum_blocks != 0;
	jc.readonly_syncraid = fs->readonly && opts->readonly_syncraid;
	rc = jnl_open(dev, &jc, &fs->jnl);
	if (rc)
		goto out;
	rc = jnl_recover(fs->jnl, &fs->recovery);
	if (rc)
		goto out;
	/* recovery may have replayed a newer superblock */
	rc = jnl_read(fs->jnl, FS_SB_BLKNO, 1, blk);
	if (!rc)
		rc = fs_sb_heal(dev, fs->jnl, blk,
				fs_sb_verify((const struct fs_super *)blk, dev, false), false);
	if (rc)
		goto out;
	memcpy(&fs->sb, blk, JG_BLOCK_SIZE);
	fs_geometry_load(fs);
	rc = fs_bcache_init(fs, opts->cache_blocks ? opts->cache_blocks : 16384);
	if (!rc)
		rc = fs_groups_load(fs);
	/* the data in flight at the crash: not verified until settled (dcsum.c) */
	if (!rc)
		rc = fs_dcsum_take_unsettled(fs);
out:
	free(blk);
	if (rc) {
		if (fs->jnl)
			jnl_abandon(fs->jnl);
		fs_close_mem(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

/*
 * The two superblocks are what a recovery reads before the journal can name a
 * row to resync, yet in declared mode their writes are flagged for the journal
 * (BLK_FS_RAIDSYNC). The array records writes to their rows in its bitmap
 * anyway (raid (B5)), so that after a crash with a member missing it knows
 * those rows may be torn (at risk) instead of handing back a superblock rebuilt
 * from stale parity. A device without a bitmap or not an array: nothing to do.
 */
static int fs_track_superblocks(struct fs *fs)
{
	const uint64_t blocks[] = { FS_SB_BLKNO, fs->jnl_start };

	for (unsigned int i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		int rc = blk_ctl(fs->dev, BLK_CTL_TRACK_ALWAYS, (void *)&blocks[i]);

		if (rc && rc != -ENOTTY) {
			jg_log(JG_LOG_ERR, FS_SUBSYS, "dev=%s tracking superblock %llu failed: %s",
			       fs->dev->name, (unsigned long long)blocks[i], strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Start the journal and mark the filesystem in use. */
static int fs_start(struct fs *fs)
{
	struct fs_tx *tx;
	struct timespec now;
	int rc;

	rc = fs_track_superblocks(fs);
	if (!rc)
		rc = jnl_start(fs->jnl);
	if (rc)
		return rc;
	fs->started = true;
	rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
	if (rc)
		return rc;
	fs_now(&now);
	fs->sb.state = jg_cpu_to_le32(jg_le32(fs->sb.state) & ~FS_STATE_CLEAN);
	fs->sb.mount_count = jg_cpu_to_le64(jg_le64(fs->sb.mount_count) + 1);
	fs->sb.last_mount_time = jg_cpu_to_le64((uint64_t)now.tv_sec);
	rc = fs_sb_write(tx);
	return fs_tx_end(tx, rc);
}

int fs_mount(struct blk_dev *dev, const struct fs_mount_opts *opts, struct fs **out)
{
	struct fs *fs;
	int rc;

	rc = fs_open(dev, opts, false, &fs);
	if (rc)
		return rc;
	if (jg_le32(fs->sb.state) & FS_STATE_ERROR)
		jg_log(JG_LOG_WARN, FS_SUBSYS, "dev=%s has errors recorded: run fsck", dev->name);
	if (!fs->readonly) {
		rc = fs_start(fs);
		if (!rc) {
			/* held as by any caller: a long eviction lets it go and takes it
			 * back between its steps (L1) */
			jg_mutex_lock(&fs->lock);
			/* before any use: the checksums of the data in flight at the crash */
			rc = fs_dcsum_settle(fs);
			if (!rc)
				rc = fs_orphans_process(fs);
			jg_mutex_unlock(&fs->lock);
		}
		if (rc) {
			jnl_abandon(fs->jnl);
			fs_close_mem(fs);
			return rc;
		}
	}
	jg_log(JG_LOG_DEBUG, FS_SUBSYS, "mounted dev=%s mode=%s%s", dev->name,
	       jnl_data_mode_name(opts->data_mode), fs->readonly ? " readonly" : "");
	*out = fs;
	return 0;
}

int fs_unmount(struct fs *fs)
{
	struct fs_tx *tx;
	int rc = 0, rc2;

	if (!fs)
		return 0;
	if (fs->started) {
		/* the last transaction: clean, or the error for fsck to see */
		rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
		if (!rc) {
			uint32_t st = jg_le32(fs->sb.state);

			if (fs->error) {
				st |= FS_STATE_ERROR;
				fs->sb.error_count = jg_cpu_to_le32(jg_le32(fs->sb.error_count) + 1);
			}
			fs->sb.state = jg_cpu_to_le32(st | FS_STATE_CLEAN);
			rc = fs_sb_write(tx);
			rc = fs_tx_end(tx, rc);
		}
		rc2 = jnl_close(fs->jnl);
		rc = rc ?: rc2;
	} else {
		/* never started: nothing of ours to write */
		jnl_abandon(fs->jnl);
	}
	fs_close_mem(fs);
	return rc;
}

void fs_abandon(struct fs *fs)
{
	if (!fs)
		return;
	jnl_abandon(fs->jnl);
	fs_close_mem(fs);
}

/* -------------------------------------------------------------------- mkfs */

struct fs_geom {
	uint64_t nblocks, jnl_blocks, first, ninodes;
	uint32_t bpg, ipg, ngroups, gdt_blocks, itable_blocks;
};

static int fs_mkfs_geometry(uint64_t dev_blocks, const struct fs_mkfs_opts *opts,
			    struct fs_geom *g)
{
	/* data checksums: their region follows the filesystem's last block */
	if (opts->data_csum) {
		uint64_t c = (dev_blocks + FS_DCSUM_PER_BLOCK - 1) / FS_DCSUM_PER_BLOCK;

		if (c >= dev_blocks)
			return -ENOSPC;
		dev_blocks -= c;
	}
	uint64_t ratio = opts->inode_ratio ? opts->inode_ratio : 16384, per_group, last;
	uint64_t jb = opts->journal_blocks;

	if (!jb) {
		/* 1/64 of the device, 16 MiB .. 1 GiB, at most a quarter of it */
		jb = dev_blocks / 64;
		jb = jb < 4096 ? 4096 : jb > 262144 ? 262144 : jb;
		if (jb > dev_blocks / 4)
			jb = dev_blocks / 4;
	}
	/* the largest handle (a rename, ~230 credits) must fit a quarter of the log */
	if (jb < 2 * JNL_MIN_BLOCKS || ratio < JG_BLOCK_SIZE)
		return -EINVAL;
	g->jnl_blocks = jb;
	g->bpg = FS_BITMAP_BITS;
	g->gdt_blocks = 1;
	for (int pass = 0; pass < 3; pass++) {
		g->first = 1 + g->gdt_blocks + jb;
		if (g->first >= dev_blocks)
			return -ENOSPC;
		g->ngroups = (uint32_t)((dev_blocks - g->first + g->bpg - 1) / g->bpg);
		g->gdt_blocks = (g->ngroups + FS_GD_PER_BLOCK - 1) / FS_GD_PER_BLOCK;
	}
	g->first = 1 + g->gdt_blocks + jb;
	per_group = dev_blocks - g->first < g->bpg ? dev_blocks - g->first : g->bpg;
	g->ipg = (uint32_t)(per_group * JG_BLOCK_SIZE / ratio);
	g->ipg = (g->ipg + FS_INODES_PER_BLOCK - 1) / FS_INODES_PER_BLOCK * FS_INODES_PER_BLOCK;
	if (g->ipg < FS_INODES_PER_BLOCK)
		g->ipg = FS_INODES_PER_BLOCK;
	if (g->ipg > FS_BITMAP_BITS / FS_INODES_PER_BLOCK * FS_INODES_PER_BLOCK)
		g->ipg = FS_BITMAP_BITS / FS_INODES_PER_BLOCK * FS_INODES_PER_BLOCK;
	g->itable_blocks = g->ipg / FS_INODES_PER_BLOCK;
	g->nblocks = dev_blocks;
	/* a last group too small for its metadata and some data is left unused */
	last = dev_blocks - (g->first + (uint64_t)(g->ngroups - 1) * g->bpg);
	if (last < 2 + g->itable_blocks + 16) {
		if (g->ngroups == 1)
			return -ENOSPC;
		g->ngroups--;
		g->nblocks = g->first + (uint64_t)g->ngroups * g->bpg;
	}
	g->ninodes = (uint64_t)g->ngroups * g->ipg;
	return 0;
}

int fs_mkfs_fits(uint64_t dev_blocks, const struct fs_mkfs_opts *opts)
{
	struct fs_mkfs_opts def = { 0 };
	struct fs_geom g;

	return fs_mkfs_geometry(dev_blocks, opts ? opts : &def, &g);
}

/* Is there a jgrfs filesystem on @dev already? */
static bool fs_mkfs_exists(struct blk_dev *dev, uint8_t *blk)
{
	if (blk_rw(dev, BLK_OP_READ, FS_SB_BLKNO, 1, blk, 0))
		return false;
	return jg_le32(((struct fs_super *)blk)->hdr.magic) == FS_MAGIC_SUPER &&
	       jg_blk_crc_ok(blk, JG_BLOCK_SIZE, jg_crc_seed(((struct fs_super *)blk)->uuid));
}

#define FS_MKFS_BATCH 64u

/*
 * The descriptors of every group, written in batches, each saying that its
 * group's two bitmaps were never written (G4): mkfs writes no bitmap, and
 * writes a descriptor block per 127 groups (508 GiB of filesystem).
 */
static int fs_mkfs_groups(struct blk_dev *dev, const struct fs_geom *g, uint32_t seed)
{
	struct blk_req reqs[FS_MKFS_BATCH];
	uint8_t *gdts = jg_alloc_blocks(FS_MKFS_BATCH);
	unsigned int n = 0;
	int rc = 0;

	if (!gdts)
		return -ENOMEM;
	for (uint32_t grp = 0; grp < g->ngroups && !rc; grp++) {
		uint64_t start = g->first + (uint64_t)grp * g->bpg;
		uint32_t size = (uint32_t)(g->nblocks - start < g->bpg ? g->nblocks - start : g->bpg);
		uint8_t *gdt = gdts + (size_t)n * JG_BLOCK_SIZE;
		struct fs_group_desc *gd;

		if (grp % FS_GD_PER_BLOCK == 0)
			memset(gdt, 0, JG_BLOCK_SIZE);
		gd = (struct fs_group_desc *)(gdt + FS_GD_OFFSET) + grp % FS_GD_PER_BLOCK;
		gd->free_blocks = jg_cpu_to_le32(size - 2 - g->itable_blocks);
		gd->free_inodes = jg_cpu_to_le32(g->ipg);
		gd->flags = jg_cpu_to_le32(FS_GD_BBITMAP_UNINIT | FS_GD_IBITMAP_UNINIT);
		if (grp % FS_GD_PER_BLOCK == FS_GD_PER_BLOCK - 1 || grp == g->ngroups - 1) {
			uint64_t at = 1 + grp / FS_GD_PER_BLOCK;

			jg_blk_seal(gdt, JG_BLOCK_SIZE, FS_MAGIC_GDT, FS_FORMAT_VERSION, 0, 0, at, seed);
			reqs[n] = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = at, .nblocks = 1,
						    .buf = gdt };
			if (++n == FS_MKFS_BATCH || grp == g->ngroups - 1) {
				rc = blk_submit(dev, reqs, n);
				n = 0;
			}
		}
	}
	free(gdts);
	return rc;
}

/* What mkfs has written of its parts that grow with the device, for progress. */
struct fs_mkfs_prog {
	const struct fs_mkfs_opts *opts;
	uint64_t done, total;
};

static void fs_mkfs_prog_add(struct fs_mkfs_prog *p, uint64_t n)
{
	p->done += n;
	if (p->opts->progress)
		p->opts->progress(p->opts->progress_ctx, p->done, p->total);
}

/* Blocks of zeros one write of fs_mkfs_zero() carries: 4 MiB. */
#define FS_MKFS_ZERO_BATCH 1024u

/*
 * The log, written whole with zeros before jnl_format() writes its superblock,
 * as mke2fs zeroes ext4's journal. Recovery does not need it (a stale log block
 * fails its checksum, seeded by the new UUID); but where a member is a sparse
 * file or thin storage, the log is allocated now, not by the first commits,
 * each of whose FUA writes would also wait for the host filesystem to allocate
 * the block and commit that (docs/BENCHMARKS-HISTORY.md). At most 1 GiB and its parity.
 */
static int fs_mkfs_zero(struct blk_dev *dev, uint64_t start, uint64_t count,
			struct fs_mkfs_prog *prog)
{
	uint8_t *zero = jg_zalloc_blocks(FS_MKFS_ZERO_BATCH);
	int rc = 0;

	if (!zero)
		return -ENOMEM;
	for (uint64_t i = 0; i < count && !rc; i += FS_MKFS_ZERO_BATCH) {
		uint32_t n = count - i < FS_MKFS_ZERO_BATCH ? (uint32_t)(count - i)
							    : FS_MKFS_ZERO_BATCH;

		rc = blk_rw(dev, BLK_OP_WRITE, start + i, n, zero, 0);
		fs_mkfs_prog_add(prog, n);
	}
	free(zero);
	return rc;
}

/*
 * The root directory, through an ordinary transaction of the new filesystem.
 * It writes no file data, so the mode only has to be one the volume accepts
 * (a volume with data checksums refuses ordered).
 */
static int fs_mkfs_root(struct blk_dev *dev, bool data_csum)
{
	struct fs_mount_opts mo = {.data_mode = data_csum ? JNL_DATA_JOURNAL : JNL_DATA_ORDERED,
				   .no_commit_thread = true};
	struct fs_inode ip;
	struct fs_tx *tx;
	struct fs *fs;
	uint64_t ino;
	int rc, rc2;

	rc = fs_open(dev, &mo, false, &fs);
	if (rc)
		return rc;
	rc = jnl_start(fs->jnl);
	if (rc) {
		jnl_abandon(fs->jnl);
		fs_close_mem(fs);
		return rc;
	}
	fs->started = true;
	rc = fs_tx_start(fs, FS_CREDITS_MKFS_ROOT, &tx);
	if (rc)
		goto out;
	rc = fs_ialloc(tx, 0, true, &ino);
	if (!rc && ino != FS_ROOT_INO)
		rc = -EUCLEAN;
	if (!rc) {
		memset(&ip, 0, sizeof(ip));
		ip.ino = ino;
		ip.mode = S_IFDIR | 0755;
		ip.nlink = 2;
		ip.parent = FS_ROOT_INO;
		ip.generation = 1;
		fs_now(&ip.atime);
		ip.mtime = ip.ctime = ip.btime = ip.atime;
		rc = fs_dir_init(tx, &ip);
	}
	if (!rc)
		rc = fs_iput(tx, &ip);
	rc = fs_tx_end(tx, rc);
out:
	fs->sb.state = jg_cpu_to_le32(FS_STATE_CLEAN);
	if (!rc && !fs_tx_start(fs, FS_CREDITS_FEW, &tx)) {
		rc = fs_sb_write(tx);
		rc = fs_tx_end(tx, rc);
	}
	rc2 = jnl_close(fs->jnl);
	fs_close_mem(fs);
	return rc ?: rc2;
}

int fs_mkfs(struct blk_dev *dev, const struct fs_mkfs_opts *opts)
{
	struct fs_mkfs_opts def = { 0 };
	struct fs_mkfs_prog prog = { 0 };
	struct fs_super *sb = jg_zalloc_blocks(1);
	struct timespec now;
	struct fs_geom g;
	uint32_t seed;
	int rc;

	if (!sb)
		return -ENOMEM;
	if (!opts)
		opts = &def;
	if (!opts->force && fs_mkfs_exists(dev, (uint8_t *)sb)) {
		jg_log(JG_LOG_ERR, FS_SUBSYS, "dev=%s holds a jgrfs filesystem (use force)", dev->name);
		rc = -EEXIST;
		goto out;
	}
	rc = fs_mkfs_geometry(dev->nblocks, opts, &g);
	if (rc) {
		jg_log(JG_LOG_ERR, FS_SUBSYS, "dev=%s too small or bad options for a filesystem (%llu blocks)",
		       dev->name, (unsigned long long)dev->nblocks);
		goto out;
	}
	memset(sb, 0, JG_BLOCK_SIZE);
	jg_uuid_generate(sb->uuid);
	seed = jg_crc_seed(sb->uuid);
	fs_now(&now);
	sb->blocks_count = jg_cpu_to_le64(g.nblocks);
	sb->inodes_count = jg_cpu_to_le64(g.ninodes);
	sb->blocks_per_group = jg_cpu_to_le32(g.bpg);
	sb->inodes_per_group = jg_cpu_to_le32(g.ipg);
	sb->groups_count = jg_cpu_to_le32(g.ngroups);
	sb->inode_size = jg_cpu_to_le32(FS_INODE_SIZE);
	sb->gdt_start = jg_cpu_to_le64(1);
	sb->gdt_blocks = jg_cpu_to_le32(g.gdt_blocks);
	sb->itable_blocks = jg_cpu_to_le32(g.itable_blocks);
	sb->journal_start = jg_cpu_to_le64(1 + g.gdt_blocks);
	sb->journal_blocks = jg_cpu_to_le64(g.jnl_blocks);
	sb->first_group_block = jg_cpu_to_le64(g.first);
	sb->state = jg_cpu_to_le32(0);	/* not clean until the root exists */
	{
		uint8_t hs[16];

		jg_uuid_generate(hs);
		memcpy(&sb->hash_seed, hs, 8);
	}
	sb->mkfs_time = jg_cpu_to_le64((uint64_t)now.tv_sec);
	sb->feature_incompat = jg_cpu_to_le32(FS_FEATURE_INCOMPAT_LAZY_BITMAPS);
	if (opts->data_csum) {
		sb->feature_ro_compat = jg_cpu_to_le32(FS_FEATURE_RO_COMPAT_DATA_CSUM);
		sb->dcsum_start = jg_cpu_to_le64(g.nblocks);
		sb->dcsum_blocks = jg_cpu_to_le64((g.nblocks + FS_DCSUM_PER_BLOCK - 1) /
						  FS_DCSUM_PER_BLOCK);
		/* (D3) the region is not written: every block past the mark (0) reads
		 * as all slots empty until the mount's initialiser or a slot's first
		 * writer writes it */
		sb->feature_incompat = jg_cpu_to_le32(FS_FEATURE_INCOMPAT_LAZY_BITMAPS |
						      FS_FEATURE_INCOMPAT_LAZY_DCSUM);
		sb->dcsum_init = jg_cpu_to_le64(0);
	}
	if (opts->label)
		snprintf(sb->label, sizeof(sb->label), "%s", opts->label);
	prog.opts = opts;
	prog.total = g.jnl_blocks - 1;
	rc = fs_mkfs_groups(dev, &g, seed);
	if (!rc)
		rc = fs_mkfs_zero(dev, 2 + g.gdt_blocks, g.jnl_blocks - 1, &prog);
	if (!rc)
		rc = jnl_format(dev, 1 + g.gdt_blocks, g.jnl_blocks, sb->uuid);
	if (rc)
		goto out;
	/* the superblock last: until it is written the device holds no filesystem */
	jg_blk_seal(sb, JG_BLOCK_SIZE, FS_MAGIC_SUPER, FS_FORMAT_VERSION, 0, 0, FS_SB_BLKNO, seed);
	rc = blk_rw(dev, BLK_OP_WRITE, FS_SB_BLKNO, 1, sb, BLK_FUA);
	if (!rc)
		rc = blk_flush(dev);
	if (!rc)
		rc = fs_mkfs_root(dev, opts->data_csum);
	if (!rc)
		jg_log(JG_LOG_INFO, FS_SUBSYS,
		       "mkfs dev=%s blocks=%llu groups=%u inodes=%llu journal=%llu blocks",
		       dev->name, (unsigned long long)g.nblocks, g.ngroups,
		       (unsigned long long)g.ninodes, (unsigned long long)g.jnl_blocks);
out:
	free(sb);
	return rc;
}

/* ------------------------------------------------------------- statfs, info */

int fs_statfs(struct fs *fs, struct fs_statfs *out)
{
	jg_mutex_lock(&fs->lock);
	out->block_size = JG_BLOCK_SIZE;
	out->blocks = fs->nblocks;
	out->blocks_free = fs->free_blocks;
	out->blocks_avail = fs->free_blocks;
	out->inodes = fs->ninodes;
	out->inodes_free = fs->free_inodes;
	out->name_max = FS_NAME_MAX;
	jg_mutex_unlock(&fs->lock);
	return 0;
}

int fs_checkpoint(struct fs *fs)
{
	/* the journal serialises its own writes home (io_lock): no fs lock needed */
	return fs_sync(fs) ?: jnl_checkpoint(fs->jnl);
}

/* The buffer cache's memory (issue 46): each buffer, its block, the hash table. */
static void fs_info_cache_mem(const struct fs *fs, struct fs_info *out)
{
	const uint64_t each = JG_BLOCK_SIZE + sizeof(struct fs_buf);
	const uint64_t table = fs->bc.nhash * sizeof(*fs->bc.hash);

	out->cache_bytes = fs->bc.count * each + table;
	out->cache_peak_bytes = fs->bc.peak * each + table;
	out->cache_bound_bytes = fs->bc.limit * each + table;
}

void fs_info_get(struct fs *fs, struct fs_info *out)
{
	jg_mutex_lock(&fs->lock);
	memset(out, 0, sizeof(*out));
	out->data_mode = fs->opts.data_mode;
	out->readonly = fs->readonly;
	jnl_info_get(fs->jnl, &out->journal);
	out->recovery = fs->recovery;
	out->orphans_freed = fs->orphans_freed;
	memcpy(out->label, fs->sb.label, sizeof(out->label));
	out->label[sizeof(out->label) - 1] = 0;
	out->data_csum = fs->dcsum_blocks != 0;
	out->data_csum_heals = fs->dcsum_heals;
	out->data_csum_errors = fs->dcsum_errors;
	out->data_csum_settled = fs->dcsum_settled;
	out->data_csum_init = fs->dcsum_init;
	out->data_csum_blocks = fs->dcsum_blocks;
	fs_info_cache_mem(fs, out);
	jg_mutex_unlock(&fs->lock);
}
