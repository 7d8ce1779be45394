/* SPDX-License-Identifier: MIT */
/*
 * include/jgrfs/journal.h - JBD-style write-ahead log on a block device (the
 * array), with the four data modes and journal-guided resync (seeds 004, 005).
 *
 * The journal lives in a contiguous region of the device. The filesystem reads
 * every block through jnl_read() and writes every block through a handle:
 *
 *	jnl_handle_start(j, credits, &h);       join the running transaction
 *	jnl_handle_dirty_meta(h, blkno, buf);   metadata: logged, then checkpointed home
 *	jnl_handle_dirty_data(h, blkno, buf);   file data: written per the data mode
 *	jnl_handle_revoke(h, blkno);            a metadata block was freed
 *	jnl_handle_stop(h);
 *	jnl_commit(j, tid, true);               fsync: wait until tid is durable
 *
 * The journal copies each block it is handed (the caller's buffer is free on
 * return) and keeps the newest copy until it is home on the device; jnl_read()
 * returns that copy, so callers never see a stale block.
 *
 * Data modes (mount option data=):
 *   writeback  data written at or before commit, in no order with the commit block
 *   ordered    data complete on the device before the commit block is written
 *   journal    data logged like metadata
 *   declared   ordered, and before any data block reaches the device a *declare
 *              block* listing it is durable in the log; every write the journal
 *              issues carries BLK_FS_RAIDSYNC
 *
 * Crash behaviour: a transaction is replayed at recovery only when its commit
 * block is on disk and every checksum of it matches; in declared mode recovery
 * also resyncs (BLK_SYNCRAID) the blocks named by declare blocks of transactions
 * that did not commit and the log window being written at the crash.
 *
 * Failure: an I/O error on the log, or any failure of a commit before its
 * commit point (memory too), aborts the journal: later jnl_handle_start()
 * returns -EROFS (sticky), and so does a jnl_commit() waiting for a
 * transaction that did not become durable.
 */
#ifndef JGRFS_JOURNAL_H
#define JGRFS_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "jgrfs/blkreq.h"

enum jnl_data_mode {
	JNL_DATA_WRITEBACK = 0,
	JNL_DATA_ORDERED = 1,
	JNL_DATA_JOURNAL = 2,
	JNL_DATA_DECLARED = 3,
};
/* "writeback", "ordered", "journal", "declared"; NULL for an unknown value. */
const char *jnl_data_mode_name(enum jnl_data_mode m);
/* -EINVAL when unknown. */
int jnl_data_mode_parse(const char *s, enum jnl_data_mode *out);

/* Smallest and default journal sizes, in blocks (mkfs sizes it within these). */
#define JNL_MIN_BLOCKS 1024u

/*
 * mkfs: write an empty journal superblock at @start_blkno covering @nblocks blocks
 * (the superblock included), checksums seeded from @uuid. Does not need the region
 * zeroed.
 */
int jnl_format(struct blk_dev *dev, uint64_t start_blkno, uint64_t nblocks,
	       const uint8_t uuid[16]);

struct jnl_cfg {
	uint64_t start_blkno;		/* the journal superblock (region start) */
	/* blocks of the region the caller gives the journal (the filesystem
	 * superblock's journal_blocks): a journal superblock of another size is
	 * refused (-EUCLEAN). 0: not checked */
	uint64_t nblocks;
	enum jnl_data_mode mode;	/* default JNL_DATA_ORDERED (zero-filled config) */
	unsigned int commit_interval_ms;/* commit timer; default 5000; 0 uses the default */
	bool no_commit_thread;		/* unit tests: commit only when asked or full */
	uint64_t max_txn_data_blocks;	/* buffered data blocks that force early writeback
					 * (ordered/declared) or commit; default 4096 (16 MiB) */
	bool readonly;			/* fsck -n: recover in memory only, never write */
	/* readonly, declared log: still read what the crash may have left
	 * inconsistent with BLK_SYNCRAID, as a writing recovery resyncs it; the
	 * array writes nothing then and notes the rows it cannot resync (a dirty
	 * degraded array names its rows at risk: raid_rows_at_risk) */
	bool readonly_syncraid;
	/* declared: every commit block follows its data with PREFLUSH (C2), as for
	 * transactions of more than JNL_COMMIT_CSUM_MAX_DATA data blocks; tests */
	bool commit_after_data;
	/* ordered and declared: a commit whose data is at most this many blocks,
	 * none of them written early, logs that data like metadata instead of
	 * writing it home first: one durability point instead of two, and no
	 * declare block (docs/FORMAT.md §3.8). 0: never (the default) */
	unsigned int log_data_max;
	/* the caller settles the blocks jnl_recovery_take_declared() names (data
	 * checksums) and says so (jnl_recovery_settled): until then the journal
	 * superblock keeps pointing at the dropped transaction that declared them
	 * (settle_start), so a crash before finds them again */
	bool keep_declared;
};

struct jnl;
struct jnl_handle;

/*
 * Read and verify the journal superblock at cfg->start_blkno of @dev (not owned).
 * -EUCLEAN for a damaged superblock, or one whose size is not cfg->nblocks
 * (logged), -EOPNOTSUPP for unknown incompat features. Does not recover and
 * starts no thread.
 */
int jnl_open(struct blk_dev *dev, const struct jnl_cfg *cfg, struct jnl **out);

/* true when the log holds transactions not yet checkpointed (an unclean stop). */
bool jnl_needs_recovery(const struct jnl *j);

struct jnl_recovery_report {
	bool was_clean;			/* nothing to do */
	uint64_t transactions_replayed;
	uint64_t blocks_replayed;	/* home writes of logged blocks */
	uint64_t blocks_revoked;	/* logged blocks skipped because revoked */
	uint64_t declared_blocks_resynced; /* blocks named by declare blocks, read with SYNCRAID */
	uint64_t log_blocks_resynced;	/* log window read with SYNCRAID */
	uint64_t revoked_blocks_resynced; /* homes of revoked logged copies read with SYNCRAID
					 * (a checkpoint may have written them, checkpoint.c (K3)) */
	uint64_t rows_resynced;		/* from the device's stats (BLK_CTL_GET_STATS), when it keeps them */
	double seconds;
};

/*
 * Recover: scan, revoke and replay passes (jbd2_journal_recover), then, when the
 * log was written in declared mode, the SYNCRAID passes. Empties the log. Call
 * once after jnl_open(), before jnl_start(). In readonly mode the replayed blocks
 * are kept in memory (jnl_read() returns them) and nothing is written.
 */
int jnl_recover(struct jnl *j, struct jnl_recovery_report *rep);

/*
 * After jnl_recover(): the blocks named by the declare blocks of the transaction
 * that did not commit (recovery's pass 2: exactly the data that may have been in
 * flight at the crash), in log order, duplicates possible; the caller owns
 * *@list (free()). None (NULL, 0) when the log was clean or not written in
 * declared mode, and after a first call. Bounded by the log: at most one
 * transaction's declare blocks. The filesystem settles its data checksums of
 * these blocks (docs/design/checksums.md, "Data checksums").
 */
void jnl_recovery_take_declared(struct jnl *j, uint64_t **list, size_t *n);
/* The blocks recovery named are settled, durably: forget the dropped transaction
 * (the superblock's settle pointer, jnl_cfg.keep_declared). No-op when none. */
int jnl_recovery_settled(struct jnl *j);

/*
 * Begin service: mark the log in use (declare feature on in declared mode),
 * start the commit thread. Handles may start after this.
 */
int jnl_start(struct jnl *j);

/*
 * Commit the running transaction, checkpoint everything, mark the log clean and
 * the declare feature off, stop the thread, free. Frees even on error.
 */
int jnl_close(struct jnl *j);

/* Free without writing anything (a simulated crash for tests). */
void jnl_abandon(struct jnl *j);

/*
 * Join the running transaction, reserving @credits: the most blocks (metadata,
 * and data in journal mode) this handle will dirty. May sleep while a commit
 * makes room. -EROFS once aborted; -EINVAL if @credits can never fit.
 */
int jnl_handle_start(struct jnl *j, unsigned int credits, struct jnl_handle **out);
/* The transaction the handle belongs to (for fsync: jnl_commit(j, tid, true)). */
uint64_t jnl_handle_tid(const struct jnl_handle *h);
/*
 * Metadata block @blkno now holds @block (copied). Counts against credits once per
 * block. Errors (also for the calls below): -EROFS aborted; -EINVAL @blkno outside
 * the device or inside the journal region; -ENOSPC the transaction cannot hold
 * one more block (a handle that used more than its credits, or in declared mode
 * more data than one transaction's declare blocks fit); -ENOMEM. A block the
 * handle's transaction already holds as metadata (dirtied by this or another of
 * its handles, not revoked since) fails only with -EROFS: so a caller can log a
 * block first, where failing is harmless, and change it again later.
 */
int jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block);
/*
 * File data block @blkno now holds @block (copied); handled per the data mode. May
 * sleep: once enough data is pending the caller writes it home early (declared:
 * after a declare block), waiting for a commit in progress.
 */
int jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block);
/* Metadata block @blkno was freed: recovery must not replay older logged copies. */
int jnl_handle_revoke(struct jnl_handle *h, uint64_t blkno);
/* Block @blkno (data or metadata) was freed: drop any pending write of it. */
int jnl_handle_forget(struct jnl_handle *h, uint64_t blkno);
/* Leave the transaction; frees @h, also on error. */
int jnl_handle_stop(struct jnl_handle *h);
/*
 * The caller's update through @h failed half way: what it changed cannot be
 * committed, nor undone. Abort the journal (as a failed commit does): the
 * running transaction never commits, later calls get -EROFS, and the volume
 * stays as the last commit left it, which the next mount's recovery replays.
 * @err and @why are for the log line. @h must still be stopped.
 */
void jnl_handle_abort(struct jnl_handle *h, int err, const char *why);

/*
 * Read @nblocks from @blkno: the newest copy the journal holds for each block
 * (running, committing or not yet checkpointed transactions), else the device.
 */
int jnl_read(struct jnl *j, uint64_t blkno, uint32_t nblocks, void *buf);
/*
 * Whether the journal holds a copy of @blkno not yet home on the device (a
 * write in flight: what the device holds may be older than the filesystem's
 * state of the block). True may turn false at any time after the call.
 */
bool jnl_block_pending(struct jnl *j, uint64_t blkno);

/*
 * One block read again after @verify rejected what jnl_read() gave (a
 * metadata block whose checksum fails): the journal's own copy when it holds
 * one (handed back as it is: the caller checks it again), else the device's
 * BLK_CTL_HEAL_READ (blkreq.h struct blk_heal: the RAID array rebuilds it from
 * the rest of its row and rewrites the damaged member). *@rewritten (may be
 * NULL) gets the member roles rewritten. Returns 0 (@buf holds a version
 * @verify accepted, or the journal's copy) or the device's error: -ENOTTY (no
 * redundancy), -EBADMSG (nothing verified), -EUCLEAN (parity not trusted now).
 */
int jnl_read_heal(struct jnl *j, uint64_t blkno, void *buf, int (*verify)(void *, const void *),
		  void *ctx, uint32_t *rewritten);

/*
 * Commit transaction @tid (0: the running one). With @wait, return once it is
 * durable (fsync). Returns 0 at once when @tid is already durable.
 */
int jnl_commit(struct jnl *j, uint64_t tid, bool wait);

/* Write every committed block home and move the log tail. */
int jnl_checkpoint(struct jnl *j);

/*
 * One step of the background checkpoint, which the commit thread runs when it
 * has nothing to commit and the log is a quarter full: start a pass, write a
 * few blocks of it home, or end it by moving the tail. Returns 1 when the pass
 * has steps left, 0 when there is nothing to do, or an error: a failed write
 * aborts the journal; -ENOMEM starts no pass, and a later call tries again.
 */
int jnl_checkpoint_step(struct jnl *j);

/*
 * In data=declared, flush the device once more than half the log blocks a
 * commit may find unflushed were written since the last flush; the commit
 * thread calls it between commits, so that commits seldom flush first. Returns
 * 1 after a flush, 0 when none was due, or an error (the journal is then
 * aborted).
 */
int jnl_background_flush(struct jnl *j);

struct jnl_info {
	enum jnl_data_mode mode;
	uint64_t log_blocks;		/* size of the region */
	uint64_t log_used_blocks;	/* not yet checkpointed */
	uint64_t running_tid;
	uint64_t commits;		/* transactions committed since jnl_start */
	uint64_t declare_blocks;	/* declare blocks written since jnl_start */
	uint64_t flushes;		/* device flushes issued since jnl_start */
	uint64_t logged_data_blocks;	/* data blocks logged by small commits (log_data_max) */
	uint64_t thread_wakeups;	/* the commit thread woke from its idle sleep */
	uint64_t timed_commits;		/* commits the commit thread began because the
					 * running transaction was older than the interval */
	uint64_t early_batches;		/* early writeback batches (data home before commit) */
	uint64_t early_waits;		/* writers that waited for the commit thread's batch */
	uint64_t checkpoints;		/* full checkpoints (log nearly full; close) */
	uint64_t checkpoint_passes;	/* background checkpoint passes completed */
	bool aborted;
	struct jnl_recovery_report last_recovery;
	/*
	 * Memory held now and the most since jnl_start, bytes (issue 46;
	 * docs/design/memory.md has the bounds): copies of blocks in the stages
	 * of a transaction, all of them and those allocated alone (the others
	 * are in the arena); staging buffers, in use and kept for reuse (up to
	 * stage_keep_bytes: one early batch's worth)
	 */
	uint64_t copy_bytes, copy_peak_bytes;
	uint64_t copy_alone_bytes, copy_alone_peak_bytes;
	uint64_t stage_bytes, stage_peak_bytes, stage_keep_bytes;
	/* the arena of data copies (made at the first data write; 0 slabs
	 * before): its slabs, those in use now, the most in use at once, and
	 * those ever used (resident from then on) */
	uint32_t arena_slabs, arena_slabs_busy, arena_slabs_busy_peak, arena_slabs_touched;
	uint64_t arena_slab_bytes;
	/* what the bounds follow from: the log (blocks, without its superblock),
	 * the largest transaction's footprint, the early batch (blocks) */
	uint64_t log_cap_blocks, max_txn_blocks, batch_blocks;
};
void jnl_info_get(struct jnl *j, struct jnl_info *out);

/*
 * Tests, read-only: true when the running transaction is in the state in which
 * a writer of it waits for the commit thread's early batch (a full batch
 * pending while the thread has, or has not yet taken, the one before). A writer
 * that brought it there counted the block and entered that wait under one hold
 * of the journal lock, so a true answer means it is waiting now.
 */
bool jnl_early_writer_waits(struct jnl *j);

/*
 * Tests: the @nth allocation (1-based) from now on the commit path -- the
 * commit itself, its log reservation and checkpoints, the staging of its
 * writes -- of @j fails as if memory were exhausted; 0 turns this off.
 * Returns the count left of the previous setting: 0 when it fired (or was off).
 */
unsigned int jnl_fault_alloc_set(struct jnl *j, unsigned int nth);

#endif /* JGRFS_JOURNAL_H */
