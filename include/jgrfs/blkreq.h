/* SPDX-License-Identifier: MIT */
/*
 * include/jgrfs/blkreq.h - the block request: the one interface between layers.
 *
 * Everything below the filesystem is a struct blk_dev: a member device (a file or
 * block device over io_uring, a memory device, a fault-injecting wrapper) and the
 * RAID array itself. A user hands a device a batch of requests and waits once:
 *
 *	struct blk_req r[2] = {
 *		{ .op = BLK_OP_WRITE, .blkno = 10, .nblocks = 1, .buf = a, .flags = BLK_FS_RAIDSYNC },
 *		{ .op = BLK_OP_WRITE, .blkno = 99, .nblocks = 4, .buf = b },
 *	};
 *	rc = blk_submit(dev, r, 2);
 *
 * The flags carry the journal-guided resync protocol of shared/seeds/:
 *   BLK_FS_RAIDSYNC  on writes: the filesystem has declared this write in its
 *                    journal and takes responsibility for resyncing the stripe
 *                    after a crash; the RAID layer does not record it in its
 *                    write-intent bitmap (seed 002).
 *   BLK_SYNCRAID     on reads and writes issued by journal recovery: resync the
 *                    parity of the stripe holding each block first (the block's
 *                    line across the members, as MD's stripe); a device may skip
 *                    what it resynced already in this recovery (seed 003).
 *   BLK_PREFLUSH     flush the device's volatile state before this request.
 *   BLK_FUA          this write is durable when the request completes.
 * And one hint:
 *   BLK_APPEND       on writes: the blocks that follow will be written soon (the
 *                    journal's log); the array keeps the row in its row cache, so
 *                    the next partial write of it reads nothing (src/raid/rcache.c).
 * A device ignores flags it has no use for (a memory device ignores them all).
 *
 * A block its reader finds damaged (a metadata checksum) is read again with
 * the reader's check as an oracle through a control, not a flag:
 * BLK_CTL_HEAL_READ (struct blk_heal below); only the RAID array answers it.
 */
#ifndef JGRFS_BLKREQ_H
#define JGRFS_BLKREQ_H

#include <errno.h>
#include <stdint.h>

#include "jgrfs/base.h"

enum blk_op {
	BLK_OP_READ = 0,
	BLK_OP_WRITE = 1,
	BLK_OP_FLUSH = 2,	/* make every completed write durable; blkno/nblocks/buf unused */
};

#define BLK_FS_RAIDSYNC (1u << 0)
#define BLK_SYNCRAID (1u << 1)
#define BLK_PREFLUSH (1u << 2)
#define BLK_FUA (1u << 3)
#define BLK_APPEND (1u << 4)
#define BLK_FLAGS_KNOWN (BLK_FS_RAIDSYNC | BLK_SYNCRAID | BLK_PREFLUSH | BLK_FUA | BLK_APPEND)

struct blk_req {
	uint8_t op;		/* enum blk_op */
	uint32_t flags;		/* BLK_* above */
	uint64_t blkno;		/* first block, in JG_BLOCK_SIZE units */
	uint32_t nblocks;	/* count of blocks; 0 only for BLK_OP_FLUSH */
	void *buf;		/* nblocks * JG_BLOCK_SIZE bytes, JG_BLOCK_SIZE-aligned */
	int result;		/* out: 0 or -errno, set by the device */
	struct blk_dev *dev;	/* the target, for blk_submit_multi() only; else unused */
};

struct blk_dev;

/*
 * Operations of a device. Every member is called from any thread; a device is
 * thread-safe unless its constructor says otherwise.
 */
struct blk_dev_ops {
	/*
	 * Required. Carry out @n requests and return when all have completed.
	 * Requests in one batch may run in any order and concurrently, so a batch
	 * must not hold two requests that overlap unless both are reads. A
	 * BLK_OP_FLUSH in a batch covers the writes completed before the batch
	 * began. Sets every req->result. Returns 0 when every request succeeded,
	 * else the first negative errno found (-EIO, -EINVAL for an out-of-range
	 * block, -ENOMEM).
	 */
	int (*submit)(struct blk_dev *dev, struct blk_req *reqs, unsigned int n);

	/*
	 * Optional (NULL: every command answers -ENOTTY). Control commands, as an
	 * ioctl on a block device: BLK_CTL_* below. Returns 0, a positive value
	 * where the command says so, or a negative errno; -ENOTTY for a command the
	 * device does not know.
	 */
	int (*ctl)(struct blk_dev *dev, unsigned int cmd, void *arg);

	/*
	 * Optional. As submit, for requests to several devices that share this ops
	 * table, each naming its device in req->dev, all in flight together (one
	 * io_uring submit for a whole stripe row). NULL: blk_submit_multi() falls
	 * back to one submit per device, one after another.
	 */
	int (*submit_multi)(struct blk_req *reqs, unsigned int n);

	/* Required. Release the device; no request may be in flight. */
	void (*close)(struct blk_dev *dev);
};

struct blk_dev {
	const struct blk_dev_ops *ops;
	uint64_t nblocks;	/* size in JG_BLOCK_SIZE blocks */
	char name[64];		/* for messages: a path, "mem0", "raid5(4)" */
};

/* Control commands (struct blk_dev_ops.ctl). @arg is per command. */
enum blk_ctl_cmd {
	/* Seeds' SET_RESYNC_ALL / CLEAR_RESYNC_ALL: while on, every read resyncs the
	 * stripe it touches (once per stripe until BLK_CTL_SYNCRAID_DONE). arg NULL. */
	BLK_CTL_SET_RESYNC_ALL = 1,
	BLK_CTL_CLEAR_RESYNC_ALL = 2,
	/* Recovery is over: forget which stripes SYNCRAID already resynced. arg NULL. */
	BLK_CTL_SYNCRAID_DONE = 3,
	/* The member-superblock flag "filesystem-guided resync pending": set at mount in
	 * declared mode (durably, before the first declared write), cleared once the
	 * journal has been replayed and at clean unmount. arg NULL. */
	BLK_CTL_SET_JNL_PENDING = 4,
	BLK_CTL_CLEAR_JNL_PENDING = 5,
	/* Returns 1 when the flag above is set, 0 when not. arg NULL. */
	BLK_CTL_GET_JNL_PENDING = 6,
	/* Fill a struct blk_stats (arg). */
	BLK_CTL_GET_STATS = 7,
	/*
	 * A block read that failed its caller's check (a metadata block whose
	 * checksum, magic or home address is wrong: jg_blk_check) is read again
	 * with the caller's check as an oracle (struct blk_heal, arg). Only a
	 * device with redundancy answers it (the RAID array: src/raid/heal.c); any
	 * other answers -ENOTTY, and the caller keeps its error. See struct blk_heal.
	 */
	BLK_CTL_HEAL_READ = 8,
	/*
	 * Fill a struct blk_id (arg): what the device is, whichever handle or path
	 * reaches it. -ENOTTY when the device cannot tell (an NBD export: one
	 * export has many URIs); its name is then all there is.
	 */
	BLK_CTL_GET_ID = 9,
	/*
	 * Whether the device's storage may still receive writes it was sent: 1
	 * when its connection ended (timed out, lost) while writes were not
	 * answered, so a server may still run them later (an NBD export:
	 * dev_nbd.c), else 0. A device with no connection answers -ENOTTY: every
	 * write it took has ended when its request completed. arg NULL.
	 */
	BLK_CTL_UNFENCED = 10,
	/*
	 * Writes near this block (arg: const uint64_t *, a block number) are
	 * recorded in the array's write-intent bitmap even when flagged
	 * BLK_FS_RAIDSYNC: it holds what a recovery reads before the journal can
	 * name any row (a superblock), so after a crash the array itself must know
	 * those rows may be torn. Given before the first such write; kept until
	 * the array stops. A device without a write-intent bitmap answers 0 and
	 * records nothing; -ENOSPC past a few blocks in distinct regions.
	 */
	BLK_CTL_TRACK_ALWAYS = 11,
	/*
	 * Wait until no other open of the device's file or block device is in use
	 * (arg NULL): a process killed with I/O in flight on it (io_uring) dies
	 * before that I/O ends, and the kernel finishes it in the background.
	 * Only for a caller that holds the members' exclusive lock, so that every
	 * other user it could wait for is gone. 0, or -ETIMEDOUT after two
	 * minutes; -ENOTTY for a device that has no such file (NBD, memory).
	 */
	BLK_CTL_DRAIN = 12,
};

/*
 * BLK_CTL_HEAL_READ: one block, read again and rebuilt from the redundancy the
 * device has until @verify accepts a version of it.
 *
 * The RAID array, under the row's lock: the block as the members hold it, then
 * the block reconstructed with its own member left out and, where the parity
 * allows it (RAID6, or fewer members missing), with one more member left out
 * in turn; the first candidate @verify accepts is copied to @buf, and every
 * member left out whose block differs from the reconstruction is rewritten
 * with it (a read-only array only reads) and counted as a corrected read error
 * of that member (raid_info.members[].read_errors_corrected). Nothing
 * verifies: -EBADMSG, nothing written.
 *
 * Returns 0 (@buf verified; @rewritten may be 0: the block read right this
 * time, or it was rebuilt around a missing member), -EBADMSG (no candidate
 * verified), -EUCLEAN (the device cannot trust its parity now: the array is
 * dirty and not yet resynced, or this row is at risk; a rebuilt block could
 * be an older version that verifies), -ENOTTY (no redundancy: a plain
 * device), -EINVAL, -ENOMEM, -EIO.
 */
struct blk_heal {
	uint64_t blkno;	/* in: the block (JG_BLOCK_SIZE units) */
	void *buf;	/* out: JG_BLOCK_SIZE bytes, JG_BLOCK_SIZE-aligned; undefined on error */
	/*
	 * in: 0 when @blk is a right version of the block, nonzero when not. Called
	 * several times, with device locks held: it must not log (each rejected
	 * candidate is expected), sleep, or call into the device.
	 */
	int (*verify)(void *ctx, const void *blk);
	void *ctx;		/* in: for @verify */
	uint32_t rewritten;	/* out: bit per member role rewritten (or found bad, read-only) */
	uint32_t candidates;	/* out: versions tried, the first as read included */
};

/*
 * What the user of a device says of one of its blocks as a device holds it: a
 * scrub's oracle (issue 27) when a line's parity disagrees with its data
 * (include/jgrfs/raid.h raid_set_verifier; the filesystem's fs_block_verify).
 */
enum blk_verdict {
	BLK_VERIFIES = 0, /* holds something with a check (magic, crc, home) that passes */
	BLK_FAILS = 1,	  /* holds something whose check fails: damaged */
	BLK_FREE = 2,	  /* holds nothing: any content is right (free space) */
	BLK_UNKNOWN = 3,  /* holds something without a check (file data): cannot tell */
	BLK_BUSY = 4,	  /* a write of it is in flight: what the device holds may be older
			   * than what its check expects; ask again later */
};
/*
 * The verdict (enum blk_verdict) on @blk as the content of device block
 * @blkno. May sleep and read the device, but is called with none of the
 * device's locks held.
 */
typedef int (*blk_verify_fn)(void *ctx, uint64_t blkno, const void *blk);

/* BLK_CTL_GET_ID: two handles of one device give equal ones, two devices never. */
enum blk_id_kind { BLK_ID_FILE = 1, BLK_ID_BDEV = 2, BLK_ID_MEM = 3 };
struct blk_id {
	uint64_t kind; /* enum blk_id_kind */
	uint64_t a, b; /* file: st_dev, st_ino; block device: st_rdev, 0; memory: its address, 0 */
};

/* Counters a device keeps since it was opened (BLK_CTL_GET_STATS). */
struct blk_stats {
	uint64_t reads, writes, flushes;	/* requests completed */
	uint64_t read_blocks, write_blocks;
	uint64_t syncraid_rows;		/* stripe rows resynced because of BLK_SYNCRAID or resync-all */
	uint64_t resync_rows_checked;	/* every row resync looked at (syncraid, bitmap, full) */
	uint64_t resync_rows_repaired;	/* of those, rows whose parity was wrong and was rewritten */
	uint64_t bitmap_bits_set;	/* write-intent bits set durably (a bitmap write each) */
};

/*
 * ops->submit with the contract above checked around it (JG_ASSERTS builds):
 * before, what the caller promises (src/base/block.c blk_req_check); after,
 * what the device does (every result 0 or a negative errno, a failed request
 * makes the call fail).
 */
int blk_submit_checked(struct blk_dev *dev, struct blk_req *reqs, unsigned int n);

static inline int blk_submit(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	if (JG_ASSERTS)
		return blk_submit_checked(dev, reqs, n);
	return dev->ops->submit(dev, reqs, n);
}

static inline int blk_ctl(struct blk_dev *dev, unsigned int cmd, void *arg)
{
	return dev->ops->ctl ? dev->ops->ctl(dev, cmd, arg) : -ENOTTY;
}

static inline void blk_close(struct blk_dev *dev)
{
	if (dev)
		dev->ops->close(dev);
}

/*
 * Submit @n requests to several devices (req->dev names each) and wait for all:
 * how the RAID layer reaches its members in parallel. Requests of one device keep
 * their relative order in the arrays handed to the device. Returns 0 or the first
 * negative errno; every req->result is set.
 */
int blk_submit_multi(struct blk_req *reqs, unsigned int n);

/* One request, synchronously: convenience for cold paths (superblocks, tools). */
int blk_rw(struct blk_dev *dev, int op, uint64_t blkno, uint32_t nblocks, void *buf,
	   uint32_t flags);
/* A BLK_OP_FLUSH on its own. */
int blk_flush(struct blk_dev *dev);

#endif /* JGRFS_BLKREQ_H */
