/* SPDX-License-Identifier: MIT */
/*
 * src/fs/fs_i.h - the filesystem's private state and the functions its files share.
 *
 * Locking: fs->lock (the big lock) is held by every public entry point for the
 * whole call, except fs_fsync/fs_sync which drop it while waiting for a commit,
 * the long calls of (L1), and calls waiting for a busy inode (L2). Every
 * function here expects it held.
 *
 * (L1) A call whose work grows with a file's size holds the lock for one bounded
 *      step at a time (a handle's worth: FS_WRITE_CHUNK blocks zeroed, or
 *      FS_CREDITS_TRUNCATE blocks freed) and lets it go between steps
 *      (fs_lock_yield), so one user's huge fallocate, truncate or delete does
 *      not stall every other call. The yield is fair (jg_mutex_yield): the
 *      callers waiting for the lock get it before the next step does. At each step boundary the file is
 *      consistent and its state committed with the step: fallocate's allocated
 *      blocks are zeroed past i_size (F1), a truncated or evicted inode stays on
 *      the orphan list (F3). The inode such a call works on is busy (L2).
 * (L2) A call that maps or frees the blocks of an inode over several steps
 *      (a shrinking truncate, fallocate, eviction) marks it busy for its whole
 *      run (struct fs_busy on fs->busy), and every call that changes an inode's
 *      block map or size (write, fallocate, truncate, eviction) waits on
 *      fs->busy_cv until it is not busy before it reads the inode. So between a
 *      truncate's steps no write lands in a block past the new size that the
 *      next step would free (losing its data), and no eviction frees the inode
 *      under it. Calls on other inodes go on between the steps; so do reads
 *      (i_size is set before the first block is freed, blocks below it stay)
 *      and link changes: an unlinked inode stays on the orphan list, a truncate
 *      takes it off only while it has links, and its eviction waits. Every path
 *      out of a busy call ends it and wakes the waiters. Mount and fsck run the
 *      orphan list single-threaded, holding the lock like any other caller.
 *
 * Invariants:
 * (F1) Bytes of an allocated data block beyond i_size are zero (partial blocks are
 *      zero-filled when written, the tail is zeroed when a file shrinks), so
 *      growing a file never exposes old bytes.
 * (F2) Every metadata block in the buffer cache equals the newest copy the journal
 *      holds (the cache is write-through: each change is handed to the journal
 *      in the same call), so evicting a buffer never loses a change.
 * (F3) An inode whose link count reached 0 is on the orphan list until its blocks
 *      and the inode itself are freed, so a crash in between frees it at mount.
 * (G1) A group's free counts in its descriptor equal the clear bits of its bitmaps.
 * (G3) A block freed in transaction F is not handed out again before F is durable
 *      (the running tid is F + 2 or later: commits run one at a time, so F + 1
 *      began committing only after F was durable). Otherwise a crash before F
 *      commits would leave the block's old owner (still live in the committed
 *      state) holding the new owner's data, written home before its commit
 *      (ordered, declared, writeback modes): ext3's b_committed_data rule.
 * (G2) Inode table blocks at and after a group's itable_init were never written:
 *      they read as all-free; inodes are allocated lowest-first in a group, so the
 *      first write past itable_init is the block at itable_init.
 */
#ifndef JGRFS_FS_I_H
#define JGRFS_FS_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "jgrfs/fs.h"
#include "jgrfs/journal.h"
#include "fs_format.h"

#define FS_SUBSYS "fs"

/* ------------------------------------------------------------ buffer cache */

struct fs_buf {
	uint64_t blkno;
	uint8_t *data;			/* JG_BLOCK_SIZE, aligned */
	unsigned int refs;		/* pinned while > 0 */
	uint32_t magic;			/* verified as this type; 0: not verified */
	struct fs_buf *hnext;
	struct fs_buf *lru_prev, *lru_next;
};

struct fs_bcache {
	struct fs_buf **hash;
	uint64_t nhash;
	uint64_t count, limit;
	uint64_t peak;			/* the most count has been (issue 46) */
	struct fs_buf lru;		/* list head: lru.lru_next is the oldest */
	uint64_t hits, misses, reads;	/* reads: jnl_read calls for metadata */
	uint64_t heals;			/* blocks that failed their check and were healed
					 * (fs_bread: BLK_CTL_HEAL_READ) */
};

/* ---------------------------------------------------------- inode states */

/* In-memory state of a referenced inode: its references. */
struct fs_istate {
	uint64_t ino;
	uint64_t refs;			/* fs_ref - fs_forget */
	struct fs_istate *next;
};

/* A decoded inode (host values). */
struct fs_inode {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid, flags, dir_depth, dir_buckets;
	uint64_t size, blocks, rdev, generation, xattr_blk, orphan_next, parent, dir_entries;
	struct timespec atime, mtime, ctime, btime;
	uint64_t block[FS_NBLOCKS];
};

/* A long call's claim on one inode (L2): on the caller's stack, linked on fs->busy
 * (a few at a time: one per thread in such a call); nothing to allocate or free. */
struct fs_busy {
	uint64_t ino;
	struct fs_busy *next;
};

/* ------------------------------------------------------------ transactions */

#define FS_TX_MAX_TRACK 1024u

/* One journal handle and the distinct blocks it dirtied (credit accounting). */
struct fs_tx {
	struct fs *fs;
	struct jnl_handle *h;
	uint64_t tid;
	unsigned int credits;
	unsigned int used;
	struct fs_buf *dcsum;		/* data checksum block changed, not yet logged (dcsum.c) */
	bool dirtied;			/* the journal took a block of this handle (T1) */
	bool torn;			/* ... and then the update failed: journal aborted (T1) */
	uint64_t blocks[FS_TX_MAX_TRACK];
};

/* Blocks of one group freed by recent transactions (G3): two generations. */
struct fs_pending {
	uint64_t tid[2];
	uint8_t *bits[2];		/* FS_BITMAP_OFFSET-based like the bitmap block; NULL: none */
};

struct fs {
	struct jg_mutex lock;		/* the big lock: protects everything below */
	struct blk_dev *dev;
	struct jnl *jnl;
	struct fs_mount_opts opts;
	struct fs_super sb;		/* in-memory copy; written through handles */
	uint32_t seed;			/* crc seed from sb.uuid */
	uint64_t hash_seed;
	/* geometry, from the superblock */
	uint64_t nblocks, ninodes, first_group, gdt_start, jnl_start, jnl_blocks;
	uint32_t bpg, ipg, ngroups, gdt_blocks, itable_blocks;
	uint64_t free_blocks, free_inodes;	/* sums of the descriptors */
	uint32_t alloc_group;		/* where the last file block went */
	struct fs_pending *pending;	/* per group, (G3) */
	uint64_t durable_tid;		/* newest tid a commit we waited for made durable */
	bool readonly;			/* mounted read-only or turned read-only */
	bool error;			/* an inconsistency was found */
	bool fsck;			/* opened by fsck: no orphan processing */
	bool started;			/* journal started: handles allowed */
	struct fs_bcache bc;
	struct fs_istate **ist;		/* hash table of nist buckets (a power of two) */
	uint64_t nist, nist_used;	/* nist_used: states in it */
	struct jnl_recovery_report recovery;
	uint64_t orphans_freed;
	struct fs_busy *busy;		/* (L2): inodes a long call works on */
	/* data checksums (dcsum.c), with FS_FEATURE_RO_COMPAT_DATA_CSUM; else 0 */
	uint64_t dcsum_start, dcsum_blocks;
	uint64_t dcsum_init;		/* (D3) checksum blocks written: the mark, sb.dcsum_init */
	uint64_t *dcsum_unsettled;	/* sorted: declared at the crash, not yet settled */
	size_t dcsum_nunsettled;
	uint64_t dcsum_heals, dcsum_errors, dcsum_settled;
	pthread_cond_t busy_cv;		/* signalled when one is no longer busy */
};

/* -------------------------------------------------------------- bcache.c */

int fs_bcache_init(struct fs *fs, uint64_t limit);
void fs_bcache_destroy(struct fs *fs);
/* Read and verify (when @magic != 0) block @blkno; pinned until fs_bput. -EUCLEAN logged. */
int fs_bread(struct fs *fs, uint64_t blkno, uint32_t magic, const char *what, struct fs_buf **out);
/* A buffer for a block being (re)initialised: zero-filled, not read. */
int fs_bget_new(struct fs *fs, uint64_t blkno, struct fs_buf **out);
void fs_bput(struct fs *fs, struct fs_buf *b);
/* Seal (header with @magic) and hand to the journal. */
int fs_bdirty(struct fs_tx *tx, struct fs_buf *b, uint32_t magic);
/* Drop @blkno from the cache (freed). */
void fs_bcache_drop(struct fs *fs, uint64_t blkno);

/* ------------------------------------------------------------- super.c */

int fs_tx_start(struct fs *fs, unsigned int credits, struct fs_tx **out);
int fs_tx_stop(struct fs_tx *tx);
/*
 * (T1) The end of an update that returns @rc: fs_tx_stop(), and first, when
 * @rc is an error no update is written to leave consistent (ENOMEM, an I/O
 * error, a damaged block: fs_tx_rc_tears) and the handle had already given
 * the journal a block, fs_tx_tear(). Returns @rc, or fs_tx_stop's error.
 */
int fs_tx_end(struct fs_tx *tx, int rc);
/*
 * (T1) The update of @tx failed after the journal took some of its blocks:
 * those, and the buffers the update changed, cannot be committed nor undone.
 * Abort the journal (jnl_handle_abort): the running transaction never
 * commits, the filesystem turns read-only, and the volume stays as the last
 * commit left it, as after a crash; the next mount recovers it.
 */
void fs_tx_tear(struct fs_tx *tx, int err, const char *what, uint64_t blkno);
/* Count @blkno against the handle's credits (once per distinct block). */
void fs_tx_track(struct fs_tx *tx, uint64_t blkno);
/* true when @need more distinct blocks still fit in the handle's credits. */
bool fs_tx_room(const struct fs_tx *tx, unsigned int need);
int fs_sb_write(struct fs_tx *tx);
/* Record an inconsistency: log, turn read-only, flag the superblock. */
void fs_set_error(struct fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fs_writable(struct fs *fs);
void fs_now(struct timespec *ts);
int fs_orphan_add(struct fs_tx *tx, struct fs_inode *ip);
int fs_orphan_del(struct fs_tx *tx, struct fs_inode *ip);
/* Open (and recover) without starting: used by mount and fsck. */
int fs_open(struct blk_dev *dev, const struct fs_mount_opts *opts, bool fsck, struct fs **out);
void fs_close_mem(struct fs *fs);

/* ------------------------------------------------------------- group.c */

uint64_t fs_group_start(const struct fs *fs, uint32_t g);
uint32_t fs_group_size(const struct fs *fs, uint32_t g);
uint64_t fs_group_data_start(const struct fs *fs, uint32_t g);
int fs_gd_read(struct fs *fs, uint32_t g, struct fs_group_desc *out);
/* group.c (G4): @blkno's bitmap as mkfs left it unwritten, into @out (*@made). */
int fs_bitmap_uninit(struct fs *fs, uint64_t blkno, uint32_t magic, uint8_t *out, bool *made);
int fs_block_alloc(struct fs_tx *tx, uint64_t goal, uint64_t *out);
/* @meta: revoke the block (it may have been logged). */
int fs_block_free(struct fs_tx *tx, uint64_t blkno, bool meta);
int fs_ialloc(struct fs_tx *tx, uint64_t parent, bool dir, uint64_t *out);
int fs_ifree(struct fs_tx *tx, uint64_t ino, bool dir);
bool fs_block_valid(const struct fs *fs, uint64_t blkno);
/* (G3) @blkno was freed by a recent transaction, durable or not (conservative). */
bool fs_block_freed_pending(const struct fs *fs, uint64_t blkno);
int fs_groups_load(struct fs *fs);
/* Bitmap bit helpers, shared with fsck. */
static inline bool fs_bit_test(const uint8_t *blk, uint32_t i)
{
	return blk[FS_BITMAP_OFFSET + i / 8] & (1u << (i % 8));
}

static inline void fs_bit_set(uint8_t *blk, uint32_t i)
{
	blk[FS_BITMAP_OFFSET + i / 8] |= (uint8_t)(1u << (i % 8));
}

static inline void fs_bit_clear(uint8_t *blk, uint32_t i)
{
	blk[FS_BITMAP_OFFSET + i / 8] &= (uint8_t)~(1u << (i % 8));
}

/* ------------------------------------------------------------- inode.c */

int fs_iget(struct fs *fs, uint64_t ino, struct fs_inode *out);
int fs_iput(struct fs_tx *tx, struct fs_inode *ip);
void fs_inode_decode(const struct fs_dinode *d, uint64_t ino, struct fs_inode *out);
void fs_inode_encode(const struct fs_inode *ip, struct fs_dinode *d);
/* -EUCLEAN (logged) when the decoded fields are out of range. */
int fs_inode_check(struct fs *fs, const struct fs_inode *ip, uint64_t blkno);
void fs_inode_to_attr(const struct fs_inode *ip, struct fs_attr *out);
struct fs_istate *fs_istate_get(struct fs *fs, uint64_t ino, bool create);
void fs_istate_drop(struct fs *fs, uint64_t ino);
uint64_t fs_inode_blkno(const struct fs *fs, uint64_t ino);
bool fs_ino_valid(const struct fs *fs, uint64_t ino);
/* Free the blocks and the inode of an unlinked inode (several handles); lets the
 * lock go between them and waits while it is busy (L1, L2): the caller's view of
 * anything may be stale after. */
int fs_inode_evict(struct fs *fs, uint64_t ino);
/* (L1): let other calls take the lock between two steps of a long call. */
void fs_lock_yield(struct fs *fs);
/* (L2): wait (the lock let go) until no long call works on @ino. */
void fs_busy_wait(struct fs *fs, uint64_t ino);
/* (L2): wait, then mark @ino busy until fs_busy_end(@b). */
void fs_busy_begin(struct fs *fs, struct fs_busy *b, uint64_t ino);
void fs_busy_end(struct fs *fs, struct fs_busy *b);
/* Free the blocks past i_size of @ino (several handles, the lock let go between
 * them), then take it off the orphan list unless it lost its last link meanwhile
 * (its eviction does). _busy: the caller has marked @ino busy (L2). */
int fs_inode_truncate_blocks(struct fs *fs, uint64_t ino);
int fs_inode_truncate_blocks_busy(struct fs *fs, uint64_t ino);
unsigned int fs_mode_to_ft(uint32_t mode);
uint32_t fs_ft_to_mode(unsigned int ft);

/* -------------------------------------------------------------- bmap.c */

#define FS_MAX_LBLK (FS_NDIR + FS_PTRS_PER_BLOCK + (uint64_t)FS_PTRS_PER_BLOCK * FS_PTRS_PER_BLOCK + \
		     (uint64_t)FS_PTRS_PER_BLOCK * FS_PTRS_PER_BLOCK * FS_PTRS_PER_BLOCK)
/* Physical block of @lblk (0: a hole); *@run: blocks from @lblk mapped contiguously
 * (or holes), at most @max. */
int fs_bmap_get(struct fs *fs, const struct fs_inode *ip, uint64_t lblk, uint64_t max,
		uint64_t *pblk, uint64_t *run);
/* Map @lblk, allocating it (and indirect blocks) when a hole; *@fresh when new. */
int fs_bmap_alloc(struct fs_tx *tx, struct fs_inode *ip, uint64_t lblk, bool meta,
		  uint64_t *pblk, bool *fresh);
/* Undo fs_bmap_alloc of @lblk in the same handle: free the block, clear its pointer (X1). */
int fs_bmap_unmap(struct fs_tx *tx, struct fs_inode *ip, uint64_t lblk, bool meta);
/* Free blocks at and after @from while the handle has room; *@done when none remain. */
int fs_bmap_truncate(struct fs_tx *tx, struct fs_inode *ip, uint64_t from, bool meta, bool *done);
/* Walk every block (data and indirect) of @ip, in logical order, for fsck and fs_owners:
 * fn(ctx, lblk, pblk, level) with level 0 for the data block @lblk, and 1..3 for a single,
 * double or triple indirect block whose map starts at logical block @lblk (called before
 * the block is read, so a damaged one is still named). Returns the first non-zero. */
typedef int (*fs_bmap_walk_fn)(void *ctx, uint64_t lblk, uint64_t pblk, unsigned int level);
int fs_bmap_walk(struct fs *fs, const struct fs_inode *ip, fs_bmap_walk_fn fn, void *ctx);

/* --------------------------------------------------------------- dir.c */

uint64_t fs_dir_hash(uint64_t seed, const char *name, size_t len);
int fs_dir_init(struct fs_tx *tx, struct fs_inode *dip);
/* 0 with the entry's inode and type; -ENOENT. */
int fs_dir_lookup(struct fs *fs, const struct fs_inode *dip, const char *name, size_t len,
		  uint64_t *ino, unsigned int *ft);
int fs_dir_add(struct fs_tx *tx, struct fs_inode *dip, const char *name, size_t len,
	       uint64_t ino, unsigned int ft);
int fs_dir_remove(struct fs_tx *tx, struct fs_inode *dip, const char *name, size_t len);
/* Point the existing entry @name at @ino/@ft. */
int fs_dir_set(struct fs_tx *tx, struct fs_inode *dip, const char *name, size_t len,
	       uint64_t ino, unsigned int ft);
/* Entries with hash >= @off in hash order; fn returns non-zero to stop. */
typedef int (*fs_dir_iter_fn)(void *ctx, const char *name, size_t len, uint64_t ino,
			      unsigned int ft, uint64_t hash);
int fs_dir_iterate(struct fs *fs, const struct fs_inode *dip, uint64_t off, fs_dir_iter_fn fn,
		   void *ctx);
/*
 * Journal credits: the most distinct metadata blocks one handle may dirty
 * (fs_tx_used() counts them; a handle past its credits fails with -ENOSPC, and
 * the largest, a rename, must fit a quarter of the log: super.c). Each names
 * what its operation dirties at most; the rest of a round figure is spare.
 */
#define FS_CREDITS_DIR_ADD 200u		/* fs_dir_add: bucket splits and mapped blocks, worst case */
#define FS_CREDITS_DIR_REMOVE 4u	/* fs_dir_remove: the entry's block, the directory inode */
/* at most 4 blocks: an inode, the superblock, a group descriptor and its bitmaps */
#define FS_CREDITS_FEW 4u
/* data blocks per write handle, and the metadata they may need: map blocks, the
 * allocation's bitmaps and descriptors, the inode */
#define FS_WRITE_CHUNK 64u
#define FS_CREDITS_WRITE (FS_WRITE_CHUNK + 32u)
/* with data checksums: and the checksum blocks of its data blocks: a contiguous
 * run of FS_WRITE_CHUNK shares at most 2 (1016 slots a block); scattered blocks
 * need one each, and the per-block room check ends such a chunk early (the
 * write goes on in the next handle). Not one per block: a handle's reserved
 * credits count against its transaction's room until it stops */
#define FS_CREDITS_WRITE_DCSUM (FS_CREDITS_WRITE + 8u)
/* create: the entry (worst case), two inodes, allocation, a new directory's blocks
 * or a long symlink's data block and its checksum block */
#define FS_CREDITS_CREATE (FS_CREDITS_DIR_ADD + 24u)
/* unlink: entry, two inodes, orphan list (superblock and one more inode) */
#define FS_CREDITS_UNLINK 16u
/* rename: the new entry (worst case), the old entry, up to four inodes, orphan list */
#define FS_CREDITS_RENAME (FS_CREDITS_DIR_ADD + 32u)
/* a size change: the tail block's map, the inode, the orphan list, the tail
 * block's data checksum block */
#define FS_CREDITS_SETSIZE 16u
/* each step of a truncate: the map blocks and bitmaps of the blocks it frees */
#define FS_CREDITS_TRUNCATE 128u
/* the end of a truncate: the inode off the orphan list (the superblock or the previous orphan) */
#define FS_CREDITS_ORPHAN_DEL 8u
/* eviction: the xattr block freed, off the orphan list, the inode freed (bitmap, descriptor) */
#define FS_CREDITS_EVICT 16u
/* an xattr change: the xattr block, its allocation, the inode */
#define FS_CREDITS_XATTR 8u
/* mkfs: the root directory's inode, allocation and first blocks */
#define FS_CREDITS_MKFS_ROOT (FS_CREDITS_DIR_ADD + 16u)

/* -------------------------------------------------------------- file.c */

/* Hand file data block @pblk to the journal (per the data mode) and set its checksum. */
int fs_data_dirty(struct fs_tx *tx, uint64_t pblk, const void *blk);

/* Commit and wait for everything so far (no handle held); records durable_tid. */
int fs_commit_all_locked(struct fs *fs);
/*
 * (G3) After a try that failed with *@rc: an -ENOSPC while blocks are counted
 * free may come from blocks freed by transactions not yet durable, which are
 * not handed out. Once per call (*@retried): commit everything (no handle held)
 * and return true to try again; false otherwise, *@rc the commit's error if it
 * failed. The failed try must have left nothing behind.
 */
bool fs_nospc_retry_locked(struct fs *fs, int *rc, bool *retried);
/* Shrink or grow @ino to @size (several handles when shrinking, @ino busy: L2). */
int fs_truncate(struct fs *fs, uint64_t ino, uint64_t size);

/* ------------------------------------------------------------- dcsum.c */

/* A settling handle: its slots' checksum blocks (FS_DCSUM_SETTLE_STEP of them at
 * most, one a slot when scattered), with room to spare */
#define FS_CREDITS_SETTLE 72u
/* the slot value of data block @blk (crc32c, FS_DCSUM_ZERO for 0) */
uint32_t fs_dcsum_of(const struct fs *fs, const void *blk);
bool fs_dcsum_in_region(const struct fs *fs, uint64_t blkno);
/* (D3) @blkno is a checksum block at or past the mark: never written, all slots 0 */
bool fs_dcsum_unwritten(const struct fs *fs, uint64_t blkno);
/* (D3) For fs_bread: a checksum block past the mark made in @blk (*@made), not read. */
int fs_dcsum_uninit(struct fs *fs, uint64_t blkno, uint32_t magic, uint8_t *blk, bool *made);
/* Set @blkno's slot for content @blk (nothing without the feature), the value it
 * had in *@old unless NULL; the checksum block is logged when the handle first
 * takes it, and again at fs_dcsum_flush (fs_tx_stop), which then cannot fail
 * short of a journal abort (D1). */
int fs_dcsum_set(struct fs_tx *tx, uint64_t blkno, const void *blk, uint32_t *old);
int fs_dcsum_set_value(struct fs_tx *tx, uint64_t blkno, uint32_t v, uint32_t *old);
/* Right after fs_dcsum_set of @blkno: put back the value it returned in *@old. */
void fs_dcsum_restore(struct fs_tx *tx, uint64_t blkno, uint32_t old);
int fs_dcsum_flush(struct fs_tx *tx);
/* Check the @n blocks read into @buf from array blocks @pblk.. (logical @lblk.. of
 * @ino) against their slots; heal a mismatch in @buf or return -EIO (logged). */
int fs_dcsum_verify_run(struct fs *fs, uint64_t ino, uint64_t lblk, uint64_t pblk, uint64_t n,
			uint8_t *buf);
/* fs_data_csum_check with fs->lock held */
int fs_data_csum_check_locked(struct fs *fs, uint64_t blkno, const void *blk);
/* After recovery: take the journal's declared blocks as not to be verified yet. */
int fs_dcsum_take_unsettled(struct fs *fs);
/* Journal started: set the slots of the unsettled blocks from the array, committed. */
int fs_dcsum_settle(struct fs *fs);

/* ------------------------------------------------------------- xattr.c */

int fs_xattr_free(struct fs_tx *tx, struct fs_inode *ip);

#endif /* JGRFS_FS_I_H */
