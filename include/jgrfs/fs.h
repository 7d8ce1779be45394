/* SPDX-License-Identifier: MIT */
/*
 * include/jgrfs/fs.h - the ext3-like filesystem, by inode number, independent of
 * FUSE so that tests and benchmarks drive it in-process.
 *
 * The filesystem lives on a struct blk_dev (the array in production, a memory
 * device in unit tests) and does every read through its buffer cache and the
 * journal, every write through a journal handle (include/jgrfs/journal.h).
 *
 * Conventions: every call returns 0 (or a count) on success, a negative errno on
 * failure: -ENOENT, -EEXIST, -ENOTDIR, -EISDIR, -ENOTEMPTY, -ENAMETOOLONG, -ENOSPC,
 * -EFBIG, -EROFS (read-only after an error), -EUCLEAN (a damaged structure,
 * logged with its block), -EIO. The struct fs is thread-safe (one big lock inside
 * at first; see docs/DESIGN.md for the lock order).
 *
 * Inode references: the FUSE layer holds kernel references (lookup counts); an
 * inode whose link count drops to 0 is freed only when the last reference goes
 * (fs_forget), and is kept on the orphan list until then so a crash frees it at
 * the next mount.
 */
#ifndef JGRFS_FS_H
#define JGRFS_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "jgrfs/blkreq.h"
#include "jgrfs/journal.h"

#define FS_ROOT_INO 1u
#define FS_NAME_MAX 255u
#define FS_SYMLINK_MAX 4095u

struct fs;

struct fs_attr {
	uint64_t ino;
	uint32_t mode;		/* S_IFMT type and permission bits */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;		/* bytes */
	uint64_t blocks;	/* 512-byte units allocated, as st_blocks */
	uint64_t rdev;
	uint64_t generation;
	struct timespec atime, mtime, ctime, btime;
};

/* Which fields of fs_setattr's @attr to apply. */
#define FS_SET_MODE (1u << 0)
#define FS_SET_UID (1u << 1)
#define FS_SET_GID (1u << 2)
#define FS_SET_SIZE (1u << 3)
#define FS_SET_ATIME (1u << 4)
#define FS_SET_MTIME (1u << 5)
#define FS_SET_ATIME_NOW (1u << 6)
#define FS_SET_MTIME_NOW (1u << 7)
#define FS_SET_CTIME (1u << 8)

/* fs_rename flags, as renameat2. */
#define FS_RENAME_NOREPLACE (1u << 0)
#define FS_RENAME_EXCHANGE (1u << 1)

struct fs_mkfs_opts {
	uint64_t journal_blocks;	/* 0: sized from the device (mkfs picks; see FORMAT.md) */
	uint32_t inode_ratio;		/* bytes per inode; 0: 16384 */
	const char *label;		/* up to 63 bytes; NULL for none */
	bool force;			/* overwrite an existing jgrfs filesystem */
	/* a crc32c of every file data block, verified on every read (ro_compat
	 * DATA_CSUM, docs/FORMAT.md §4.9); such a volume mounts data=declared or
	 * data=journal only */
	bool data_csum;
	/* when set, called as mkfs writes the parts that grow with the device (the
	 * checksum region, the journal written whole): @done of @total blocks; a
	 * nonzero return is ignored */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

/* Write a new filesystem (superblock, groups, root directory, journal) on @dev. */
int fs_mkfs(struct blk_dev *dev, const struct fs_mkfs_opts *opts);
/*
 * Whether fs_mkfs() with @opts can lay a filesystem over @dev_blocks blocks,
 * without a device: 0; -ENOSPC too small; -EINVAL the options do not fit it
 * (a journal below its floor). For the checks a command makes before it writes.
 */
int fs_mkfs_fits(uint64_t dev_blocks, const struct fs_mkfs_opts *opts);

struct fs_mount_opts {
	enum jnl_data_mode data_mode;	/* default (zero) JNL_DATA_WRITEBACK: callers set it;
					 * the daemon defaults to declared */
	unsigned int commit_interval_ms;/* 0: journal default (5 s) */
	bool no_commit_thread;		/* unit tests */
	bool readonly;
	bool readonly_syncraid;		/* readonly: jnl_cfg.readonly_syncraid */
	uint64_t cache_blocks;		/* buffer cache bound; 0: 16384 (64 MiB) */
	/* ordered and declared: a commit of at most this many data blocks logs them
	 * (jnl_cfg.log_data_max); 0: FS_LOG_DATA_DEFAULT; negative: never */
	int log_data_blocks;
};
#define FS_LOG_DATA_DEFAULT 16	/* 64 KiB: an fsync of a few small writes */

/*
 * Mount: read and verify the superblock, open the journal, recover it (the report
 * is in fs_info.recovery), free orphans, start the journal. @dev is not owned.
 * -ENOMEDIUM: the superblock block is blank (no filesystem yet, or its
 * superblock lost); -EUCLEAN: a superblock that fails its check.
 */
int fs_mount(struct blk_dev *dev, const struct fs_mount_opts *opts, struct fs **out);
/*
 * Whether fs_mount(@dev, @opts) would refuse @opts for the filesystem on @dev,
 * from its superblock alone (read, never written: no heal, no journal), so a
 * caller can refuse before anything is written: a volume with data checksums
 * refuses data=ordered and writeback unless read-only. 0 also when the
 * superblock is blank or does not verify (fs_mount then says why, after
 * trying the device's redundancy); -EINVAL after a message.
 */
int fs_mount_check(struct blk_dev *dev, const struct fs_mount_opts *opts);
/* Commit, checkpoint, mark clean, free. Frees even on error. */
int fs_unmount(struct fs *fs);
/* Free without writing (simulated crash). */
void fs_abandon(struct fs *fs);

int fs_lookup(struct fs *fs, uint64_t parent, const char *name, struct fs_attr *out);
int fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *out);
int fs_setattr(struct fs *fs, uint64_t ino, const struct fs_attr *attr, unsigned int valid,
	       struct fs_attr *out);
/* Create a regular file, device, fifo or socket (@mode carries the type). */
int fs_mknod(struct fs *fs, uint64_t parent, const char *name, uint32_t mode, uint64_t rdev,
	     uint32_t uid, uint32_t gid, struct fs_attr *out);
int fs_mkdir(struct fs *fs, uint64_t parent, const char *name, uint32_t mode, uint32_t uid,
	     uint32_t gid, struct fs_attr *out);
int fs_unlink(struct fs *fs, uint64_t parent, const char *name);
int fs_rmdir(struct fs *fs, uint64_t parent, const char *name);
int fs_symlink(struct fs *fs, uint64_t parent, const char *name, const char *target,
	       uint32_t uid, uint32_t gid, struct fs_attr *out);
/* Copies at most @size bytes of the target (no NUL); returns its length. */
ssize_t fs_readlink(struct fs *fs, uint64_t ino, char *buf, size_t size);
int fs_link(struct fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
	    struct fs_attr *out);
int fs_rename(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
	      const char *newname, unsigned int flags);

/* Take @n references on @ino; fs_lookup/fs_mknod/... do not take one. */
int fs_ref(struct fs *fs, uint64_t ino, uint64_t n);
/*
 * For a caller that hands an entry out and holds a reference for it (a FUSE entry
 * reply): as fs_lookup, fs_mknod/fs_mkdir/fs_symlink and fs_link, and on success
 * each also takes one reference on the inode in the same hold of the lock that
 * found or made it. A reference taken by a later fs_ref could land on an inode
 * freed in between (unlinked and unreferenced: freed at once) or on the next
 * inode given its number. Undo with fs_forget(ino, 1).
 * fs_create_ref makes a node of @mode's type: S_IFDIR a directory, S_IFLNK a
 * symlink to @target (NULL for every other type), else as fs_mknod.
 */
int fs_lookup_ref(struct fs *fs, uint64_t parent, const char *name, struct fs_attr *out);
int fs_create_ref(struct fs *fs, uint64_t parent, const char *name, uint32_t mode, uint64_t rdev,
		  const char *target, uint32_t uid, uint32_t gid, struct fs_attr *out);
int fs_link_ref(struct fs *fs, uint64_t ino, uint64_t newparent, const char *newname,
		struct fs_attr *out);
/* Drop @n references; an unlinked inode with none left is freed. */
int fs_forget(struct fs *fs, uint64_t ino, uint64_t n);

ssize_t fs_read(struct fs *fs, uint64_t ino, uint64_t off, size_t size, void *buf);
/*
 * @buf must not change during the call: a whole block's checksum and the
 * journal's copy of it are both taken from it, one after the other.
 */
ssize_t fs_write(struct fs *fs, uint64_t ino, uint64_t off, size_t size, const void *buf);
/*
 * fs_write with FS_WRITE_KEEP_TIMES: mtime and ctime are left as they are, for a
 * caller that sets them itself (FUSE's writeback cache: the kernel owns them).
 * An overwrite then changes no inode field and commits its data alone.
 */
#define FS_WRITE_KEEP_TIMES 0x1u
ssize_t fs_write_flags(struct fs *fs, uint64_t ino, uint64_t off, size_t size, const void *buf,
		       unsigned int flags);
/* mode 0 (allocate, extend size) and FALLOC_FL_KEEP_SIZE at least; -EOPNOTSUPP otherwise. */
int fs_fallocate(struct fs *fs, uint64_t ino, int mode, uint64_t off, uint64_t len);
/* Durable on return: the inode's last transaction is committed (data per mode). */
int fs_fsync(struct fs *fs, uint64_t ino, bool datasync);
/* Everything durable (syncfs). */
int fs_sync(struct fs *fs);
/* fs_sync, then every committed block written home (the journal's checkpoint):
 * the device holds what the filesystem does, but for later writes. For a scrub
 * that met writes in flight (issue 43). */
int fs_checkpoint(struct fs *fs);

/*
 * Call @fn for each entry of directory @ino from offset @off ("." and ".." first).
 * @next_off is the offset to resume after this entry; offsets stay valid while the
 * directory changes (an entry is never returned twice nor skipped if it stays).
 * @fn returns non-zero to stop (buffer full). Returns 0 or a negative errno.
 */
typedef int (*fs_readdir_fn)(void *ctx, const char *name, uint64_t ino, uint32_t mode,
			     uint64_t next_off);
int fs_readdir(struct fs *fs, uint64_t ino, uint64_t off, fs_readdir_fn fn, void *ctx);

struct fs_statfs {
	uint64_t block_size;
	uint64_t blocks, blocks_free, blocks_avail;
	uint64_t inodes, inodes_free;
	uint32_t name_max;
};
int fs_statfs(struct fs *fs, struct fs_statfs *out);

/* user.* extended attributes (others: -EOPNOTSUPP). As the xattr(7) calls:
 * get/list with @size 0 return the size needed; -ERANGE when too small. */
int fs_setxattr(struct fs *fs, uint64_t ino, const char *name, const void *value,
		size_t size, int flags);
ssize_t fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void *value, size_t size);
ssize_t fs_listxattr(struct fs *fs, uint64_t ino, char *list, size_t size);
int fs_removexattr(struct fs *fs, uint64_t ino, const char *name);

struct fs_info {
	enum jnl_data_mode data_mode;
	bool readonly;			/* mounted read-only, or turned read-only by an error */
	struct jnl_info journal;
	struct jnl_recovery_report recovery; /* what recovery did at this mount */
	uint64_t orphans_freed;		/* at this mount */
	char label[64];
	bool data_csum;			/* the volume keeps data checksums */
	uint64_t data_csum_heals;	/* data blocks that failed their checksum, healed */
	uint64_t data_csum_errors;	/* ... not healed: the read got EIO */
	uint64_t data_csum_settled;	/* slots set by recovery (declared at the crash) */
	uint64_t data_csum_init;	/* checksum blocks written so far (the lazy mark) */
	uint64_t data_csum_blocks;	/* ... of the region's */
	/* the buffer cache's memory, bytes (issue 46): now, the most since mount,
	 * and its bound (fs_mount_opts.cache_blocks unpinned buffers; the pinned
	 * ones, a handful per operation, may pass it briefly) */
	uint64_t cache_bytes, cache_peak_bytes, cache_bound_bytes;
};
void fs_info_get(struct fs *fs, struct fs_info *out);

/*
 * One step of the background initialiser of the data checksum region (dcsum.c
 * (D3)): writes up to @max checksum blocks past the mark, makes them durable and
 * moves the mark over them in a transaction (committed with the next commit).
 * 0 with *@left the blocks still past the mark (0: the region is whole, nothing
 * written); -EROFS on a read-only volume. Takes the filesystem's lock.
 */
int fs_dcsum_init_step(struct fs *fs, uint64_t max, uint64_t *left);

/*
 * Does @blk (4 KiB) match the data checksum recorded for array block @blkno?
 * 1 yes, 0 no (damage), -ENOENT no checksum recorded (feature off, slot empty,
 * or the block was in flight at a crash and not settled yet), <0 an error
 * reading the checksum block. For the scrub's verifier. Takes the filesystem's
 * lock: not to be called from under it, nor from a path an fs call waits on
 * while holding it (an array row lock held by the caller may be one).
 */
int fs_data_csum_check(struct fs *fs, uint64_t blkno, const void *blk);

/* ---------------------------------------------------------------- verify */

/*
 * What array block @blkno holding @blk (JG_BLOCK_SIZE bytes) is worth, for a
 * scrub that must tell which member of a mismatched row is wrong (issue 27;
 * include/jgrfs/raid.h raid_set_verifier): enum blk_verdict
 * (include/jgrfs/blkreq.h) --
 *   BLK_VERIFIES  metadata whose check (magic, crc32c, home address) passes;
 *   BLK_FAILS     a block of a metadata-only place (superblock, descriptors,
 *                 bitmaps, written inode table blocks) that does not verify,
 *                 whatever its first bytes say; or an allocated data-area
 *                 block that claims a metadata magic (directory, indirect,
 *                 xattr) and does not verify;
 *   BLK_FREE      nothing lives there: free in the block bitmap (and not freed
 *                 by a transaction that is not yet durable), an inode table
 *                 block never written, a bitmap never written (lazy), or past
 *                 the filesystem's end;
 *   BLK_VERIFIES/BLK_FAILS also for file data on a volume with data
 *                 checksums whose slot is set (src/fs/verify.c (V4));
 *   BLK_UNKNOWN   other file data, the journal region.
 * Takes the filesystem's lock and may read bitmaps and descriptors (through
 * the buffer cache, so from the device): call it with no device lock held. A
 * bitmap that cannot be read gives BLK_UNKNOWN. Cheap: no inode is scanned.
 */
int fs_block_verify(struct fs *fs, uint64_t blkno, const void *blk);
/* The same as a blk_verify_fn (include/jgrfs/blkreq.h), @ctx the struct fs. */
int fs_block_verify_fn(void *ctx, uint64_t blkno, const void *blk);
/*
 * Does @dev hold a jgrfs filesystem? Block 0 claims the superblock's magic
 * (nothing more is checked: fs_mount says what is wrong with it). Silent; false
 * when it cannot be read.
 */
bool fs_probe(struct blk_dev *dev);

/* ---------------------------------------------------------------- owners */

/*
 * Who owns these array blocks (issues 22, 23): the array reports rows and blocks
 * (a scrub mismatch, a block no member can give back) and knows nothing of files;
 * fs_owners names what the filesystem keeps there.
 */

/* A run of array blocks. Sets of them are sorted by @start, merged (no two touch or
 * overlap) and have @count >= 1. */
struct fs_extent {
	uint64_t start;		/* first array block */
	uint64_t count;		/* blocks */
};

enum fs_owner_kind {
	FS_OWNER_DATA = 1,	/* file data: block @lblk of regular file (or device node) @ino */
	FS_OWNER_DIR,		/* block @lblk of directory @ino (hash table or bucket) */
	FS_OWNER_SYMLINK,	/* the target block of long symlink @ino (@lblk 0) */
	FS_OWNER_INDIRECT,	/* a block-map block of @ino: @level 1 single, 2 double, 3 triple
				 * indirect, mapping logical blocks from @lblk */
	FS_OWNER_XATTR,		/* the extended attribute block of @ino */
	FS_OWNER_ITABLE,	/* inode table of group @group: inodes @ino .. @ino_last */
	FS_OWNER_BBITMAP,	/* block bitmap of group @group */
	FS_OWNER_IBITMAP,	/* inode bitmap of group @group */
	FS_OWNER_GDT,		/* group descriptor table */
	FS_OWNER_SUPER,		/* the superblock (block 0) */
	FS_OWNER_JOURNAL,	/* the journal region */
	FS_OWNER_FREE,		/* data area, free in the block bitmap */
	FS_OWNER_UNCLAIMED,	/* data area, in use in the block bitmap, no inode maps it
				 * (leaked, or allocated after its group was scanned) */
	FS_OWNER_OUTSIDE,	/* past the filesystem's end: array blocks it does not use */
	FS_OWNER_DCSUM,		/* a data checksum block (DATA_CSUM, past the filesystem's end) */
};

/* "data", "directory", "symlink", "indirect", "xattr", "inode-table", "block-bitmap",
 * "inode-bitmap", "group-descriptors", "superblock", "journal", "free", "unclaimed",
 * "outside", "data-checksums"; the names the CLI prints and --json carries. */
const char *fs_owner_kind_name(enum fs_owner_kind kind);

/* One report: @count consecutive array blocks from @blkno with one owner. For an inode's
 * blocks, consecutive array blocks at consecutive logical blocks (an extent of the file). */
struct fs_owner {
	uint64_t blkno;		/* first array block of the run */
	uint64_t count;		/* blocks in the run, >= 1 */
	enum fs_owner_kind kind;
	uint64_t ino;		/* owning inode; ITABLE: first inode of the run; else 0 */
	uint64_t ino_last;	/* ITABLE: last inode of the run; else equal to @ino */
	uint64_t lblk;		/* DATA, DIR, SYMLINK: logical block of @blkno in the file;
				 * INDIRECT: first logical block it maps; else 0 */
	unsigned int level;	/* INDIRECT: 1, 2 or 3; else 0 */
	uint32_t group;		/* ITABLE, BBITMAP, IBITMAP: the block group; else 0 */
	uint32_t mode;		/* @ino's type and permissions when the scan read it; else 0 */
	uint32_t nlink;		/* @ino's links when the scan read it */
	bool orphan;		/* @ino is on the orphan list: nlink 0 means open-unlinked
				 * (no name left), nlink > 0 a truncate in progress */
	/* Names of @ino from the root ("/dir/file"; the root is "/"), one per directory
	 * entry naming it, a hard-linked file has several; valid during the callback only.
	 * A component whose name could not be found (a directory renamed during the scan,
	 * or unreadable) is "?". Empty for an orphan with no links, an unattached inode,
	 * or when paths were not asked for. */
	const char *const *paths;
	unsigned int npaths;
	uint64_t paths_left_out;	/* names found beyond fs_owners_opts.max_paths */
};

struct fs_owners_opts {
	uint64_t max_reports;	/* reports kept (memory bound); 0: FS_OWNERS_MAX_REPORTS */
	unsigned int max_paths;	/* names kept per inode; 0: FS_OWNERS_MAX_PATHS */
	bool no_paths;		/* do not resolve names (skips the directory scan) */
};
#define FS_OWNERS_MAX_REPORTS 4096u
#define FS_OWNERS_MAX_PATHS 16u

struct fs_owners_summary {
	uint64_t blocks;		/* blocks asked about */
	uint64_t reports;		/* reports passed to the callback */
	uint64_t blocks_left_out;	/* blocks owned (or free) that no report covers:
					 * max_reports was reached */
	uint64_t inodes_scanned;	/* inodes in use whose block maps were walked */
	uint64_t unreadable;		/* inode table blocks, block maps and directories that
					 * could not be read (logged): owners in them may be
					 * missing, their blocks reported unclaimed */
};

/* Returns 0 to go on, non-zero to stop (a negative value is returned by fs_owners). */
typedef int (*fs_owners_fn)(void *ctx, const struct fs_owner *o);

/*
 * Report every owner of the @n array block runs @ext (sorted, merged: else -EINVAL),
 * in array block order, through @fn; a block claimed by two inodes (damage) has two
 * reports. Fills @sum when not NULL.
 *
 * Works on a mounted filesystem, concurrently with other calls, and on one mounted
 * read-only (fs_mount_opts.readonly: the journal replayed in memory; nothing is ever
 * written). It takes the big lock for one bounded step at a time (an inode table block
 * with its inodes' block maps, one directory, one parent lookup), so each inode's map
 * is seen whole; a file renamed, unlinked or its inode reused between the block-map
 * scan and the name scan may be named as it was or as it is, or not at all: never a
 * crash. Must be called without the lock (any thread, not from inside another fs_*
 * callback).
 *
 * Memory: one bit per block asked about, at most @opts->max_reports reports, and for the
 * inodes they name their names and the directories on the way to the root: bounded by
 * the question and the hits, not by the size of the filesystem.
 *
 * Returns 0, -EINVAL (bad @ext), -ENOMEM, or @fn's negative return. Damaged or
 * unreadable structures are counted in @sum->unreadable, not returned.
 */
int fs_owners(struct fs *fs, const struct fs_extent *ext, size_t n,
	      const struct fs_owners_opts *opts, fs_owners_fn fn, void *ctx,
	      struct fs_owners_summary *sum);

/* ------------------------------------------------------------------ fsck */

struct fsck_opts {
	bool repair;		/* -y: repair; else (-n) only report, never write */
	bool verbose;
	/* fsck -p without -f: a volume unmounted cleanly, without errors recorded
	 * and with no journal to replay, is not checked (report.skipped_clean) */
	bool skip_clean;
	/* when set, called as the passes go over the groups (pass 1, then pass 5):
	 * @done of @total (twice the groups); a nonzero return is ignored */
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};
struct fsck_report {
	uint64_t problems_found;
	uint64_t problems_fixed;
	uint64_t inodes_checked;
	uint64_t dirs_checked;
	uint64_t blocks_used;
	bool was_clean;	    /* the superblock's state said unmounted cleanly, no errors */
	bool skipped_clean; /* opts.skip_clean and was_clean: no pass was run */
	struct jnl_recovery_report recovery;
};
/*
 * Replay the journal with resync-all on (BLK_CTL_SET_RESYNC_ALL, seeds 006), then
 * check every structure. Logs each problem. Returns the e2fsck exit code: 0 clean,
 * 1 problems repaired, 4 problems left, 8 operational error.
 */
int fs_fsck(struct blk_dev *dev, const struct fsck_opts *opts, struct fsck_report *rep);

#endif /* JGRFS_FS_H */
