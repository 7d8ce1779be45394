/* SPDX-License-Identifier: MIT */
/*
 * src/journal/jnl_i.h - the journal's private state, shared by its files.
 *
 * Copies of blocks. The journal holds, per block number, at most one copy per
 * stage (struct jnl_bh), and jnl_read() returns the first present in this order,
 * newest first:
 *   run       dirtied by a handle of the running transaction
 *   com       dirtied by the committing transaction (frozen when it was locked)
 *   inflight  data of the running transaction being written home early
 *   cp        the newest committed metadata copy not yet written home
 * Invariants:
 *   (J1) A copy is freed only after a newer copy exists or it is on the device.
 *   (J2) Every write the journal issues happens with io_lock held, so writes of
 *        one block reach the device in stage order (inflight/com before newer).
 *   (J3) At most one transaction commits at a time; the log holds transactions
 *        in tid order, each contiguous: early declare blocks of a transaction are
 *        written only while no other transaction is committing.
 *   (J4) The log tail never passes the first log block of a transaction that has
 *        not committed (its early declare blocks must survive a crash).
 *
 * Lock order: io_lock -> lock. Nothing waits for io_lock holding lock. A
 * function named *_locked is called with lock held, *_iolocked with io_lock
 * held; each checks it in debug builds.
 *
 * Wake-ups. Callers wait on cond for a state change (a transaction locked or
 * committed, the last handle of one stopped, an abort). The commit thread sleeps
 * on kick, which only a commit request, stop or abort signals: a handle's end
 * wakes nobody unless it was the last of its transaction.
 */
#ifndef JGRFS_JNL_I_H
#define JGRFS_JNL_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jgrfs/journal.h"
#include "jnl_format.h"

#define JNL_SUBSYS "jnl"

/* ------------------------------------------------------------ u64 map (map.c) */

/* Open addressing, linear probing; key UINT64_MAX is reserved (empty slot). */
struct jnl_map {
	uint64_t *keys;
	uint64_t *vals;
	size_t cap;		/* power of two, or 0 */
	size_t n;
};
#define JNL_MAP_EMPTY UINT64_MAX

void jnl_map_init(struct jnl_map *m);
void jnl_map_free(struct jnl_map *m);
/* Pointer to the value of @key, or NULL. */
uint64_t *jnl_map_find(const struct jnl_map *m, uint64_t key);
/* Insert or find; *@val_out points at the value (0 for a new key). -ENOMEM. */
int jnl_map_get(struct jnl_map *m, uint64_t key, uint64_t **val_out, bool *is_new);
bool jnl_map_del(struct jnl_map *m, uint64_t key);
/* Iterate: for (size_t i = 0; i < m->cap; i++) if (m->keys[i] != JNL_MAP_EMPTY) ... */

/* ------------------------------------------------------- block copies, txns */

enum jnl_kind {
	JNL_KIND_META = 1,
	JNL_KIND_DATA = 2,
};

struct jnl_bh {
	uint64_t blkno;
	uint8_t *run;		/* see the stages above; each NULL or one block */
	uint8_t *com;
	uint8_t *inflight;
	uint8_t *cp;
	uint64_t cp_tid;	/* transaction of the cp copy */
	uint8_t run_kind, com_kind;
	bool cp_listed;		/* in j->cp_list */
};

/* Has @bh (or NULL) a data copy in the running stage: what an entry of
 * jnl_txn.pend stands for while it is live (handle.c, declare.c). */
static inline bool jnl_bh_run_data(const struct jnl_bh *bh)
{
	return bh && bh->run && bh->run_kind == JNL_KIND_DATA;
}

/*
 * The copies of blocks a jnl_bh holds in its stages are allocated by
 * jnl_copy_alloc and freed by jnl_copy_free only, so that the memory they take
 * is counted (jnl_info.copy_bytes, issue 46). Atomics: a copy is allocated
 * before the journal lock is taken.
 */
void *jnl_copy_alloc(struct jnl *j);
void jnl_copy_free(struct jnl *j, void *copy);
/*
 * A copy of a data block, from the journal's arena: slabs of JNL_SLAB_BLOCKS
 * blocks (2 MiB, one huge page), each copy the next block of the current slab.
 * The blocks of a sequential write so lie side by side in memory as on the
 * device, and their early batch is written from the copies themselves, with
 * no staging copy (jnl_wb_reqs). A slab is taken again once every copy in it
 * is freed; with no slab free (or no arena) the copy is allocated alone.
 */
void *jnl_copy_alloc_data(struct jnl *j);
#define JNL_SLAB_BLOCKS 512u
#define JNL_SLAB_BYTES ((size_t)JNL_SLAB_BLOCKS * JG_BLOCK_SIZE)
#define JNL_ARENA_MAX_SLABS 64u
#define JNL_NO_SLAB SIZE_MAX

/* Flags of a block in a transaction (struct jnl_txn.blocks values). */
#define JNL_TB_META	(1u << 0)	/* logged copy (metadata, or data in journal mode) */
#define JNL_TB_DATA	(1u << 1)	/* data written home per the data mode */
#define JNL_TB_REVOKE	(1u << 2)	/* revoke record in this transaction */
#define JNL_TB_FORGET	(1u << 3)	/* freed: older copies are dropped at commit */
#define JNL_TB_LOGGED	(1u << 4)	/* data logged by this (small) commit (§3.8) */
#define JNL_TB_LREVOKE	(1u << 5)	/* the revoke is the journal's own: data going home
					 * while an older logged copy is still in the log */

struct jnl_txn {
	uint64_t tid;
	unsigned int updates;		/* open handles */
	uint64_t credits;		/* reserved by open handles + used by stopped ones */
	struct jnl_map blocks;		/* blkno -> JNL_TB_* */
	uint64_t nmeta;			/* blocks with JNL_TB_META */
	uint64_t nrevoke;		/* blocks with JNL_TB_REVOKE */
	uint64_t ndata_pending;		/* its data copies not yet written (run or com stage) */
	uint64_t *pend;			/* blocks given a run-stage data copy since the last
					 * early batch (some since superseded): what the next
					 * batch takes, without a walk of the whole map */
	size_t npend, pend_cap;
	uint64_t ndata_total;		/* data blocks ever dirtied (for declare estimates) */
	uint64_t declare_written;	/* early declare blocks already in the log */
	uint64_t log_first;		/* relative log block of its first early declare; 0: none */
	uint64_t data_written;		/* data blocks written home early */
	uint64_t nchanges;		/* any dirty/revoke/forget: the transaction is not empty */
	bool log_data;			/* commit logs its data (JNL_TB_LOGGED), see commit.c */
	double start_time;
};

struct jnl_handle {
	struct jnl *j;
	struct jnl_txn *t;
	unsigned int credits;
	unsigned int used;
};

struct jnl {
	struct blk_dev *dev;
	struct jnl_cfg cfg;
	uint8_t uuid[16];
	uint32_t seed;
	uint64_t start_blkno;		/* absolute: the journal superblock */
	uint64_t nblocks;		/* the region */
	uint64_t cap;			/* log blocks: nblocks - 1 */
	uint64_t max_txn_blocks;	/* hard limit of one transaction's log footprint */
	uint64_t soft_txn_blocks;	/* a transaction this large is committed */
	uint32_t feat_compat, feat_incompat, feat_ro_compat;
	uint64_t sb_start, sb_sequence;	/* as read at open */
	/* jnl_sb.settle_*: kept in every superblock write until jnl_recovery_settled() */
	uint64_t settle_start, settle_sequence;
	uint64_t sb_last_start, sb_last_sequence; /* the last superblock written */
	uint32_t write_flags;		/* BLK_FS_RAIDSYNC in declared mode, else 0 */
	unsigned int fault_alloc_nth;	/* tests: jnl_fault_alloc_set(); 0: off (atomic) */

	struct jg_mutex io_lock;	/* serialises every write the journal issues (J2) */

	pthread_mutex_t stage_lock;	/* a leaf: protects the two below */
	void **stage_pool;		/* free staging buffers of JNL_MERGE_MAX blocks */
	size_t stage_n, stage_cap;	/* ... kept up to one early batch's worth */
	size_t stage_out;		/* staging buffers in use by the write under way */
	size_t stage_peak;		/* the most stage_n + stage_out has been (stage_lock) */
	/* jnl_copy_alloc_data's arena, made at the first data copy; stage_lock
	 * protects the fields (the pointer is also read atomically without it) */
	uint8_t *arena;
	bool arena_tried;
	size_t nslabs;			/* its slabs: two early batches and two more */
	uint32_t *slab_refs;		/* per slab: its copies not yet freed */
	size_t slab, slab_used;		/* the slab copies are taken from, its blocks taken */
	size_t slabs_busy_peak;		/* the most slabs in use at once (stage_lock) */
	size_t slabs_touched;		/* slabs ever taken: 0 .. this - 1, first fit */
	/* copies held now and the most held: all of them, and those allocated
	 * alone (outside the arena); atomics */
	uint64_t copies, copies_peak;
	uint64_t copies_alone, copies_alone_peak;

	struct jg_mutex lock;		/* protects everything below */
	pthread_cond_t cond;		/* any state change below that a caller waits for */
	pthread_cond_t kick;		/* the commit thread's idle sleep: a commit request,
					 * stop or abort. Apart from cond, so that the end of
					 * every handle does not wake the thread */
	uint64_t thread_wakeups;	/* returns from that sleep (jnl_info) */
	uint64_t timed_commits;		/* commits begun because the running
					 * transaction aged past the interval */
	uint64_t head, tail;		/* relative log blocks; head: next to write */
	uint64_t unflushed_from;	/* (C6) log blocks from here on: parity maybe not durable */
	uint64_t used;			/* log blocks between tail and head */
	struct jnl_txn *running;
	struct jnl_txn *committing;
	uint64_t committed_tid;		/* newest durable transaction */
	struct jnl_map map;		/* blkno -> struct jnl_bh * */
	struct jnl_map logged;		/* blkno -> tid: data logged by a commit still in the
					 * log (emptied by a checkpoint, pruned by a pass) */
	uint64_t *cp_list;		/* blknos with a cp copy */
	size_t cp_n, cp_cap;
	/* the background checkpoint's pass (checkpoint.c (K2)) */
	bool cpp_on;
	uint64_t *cpp_list;		/* its blocks, sorted; cpp_next: the next to write */
	size_t cpp_n, cpp_next;
	uint64_t cpp_tid;		/* it writes the cp copies of transactions up to this */
	uint64_t cpp_tail, cpp_seq;	/* the tail (and its transaction) once it is done */
	unsigned int io_wanted;		/* commits waiting for io_lock: they go first */
	bool aborted;
	bool recovered, started, readonly_data;
	/* commit thread */
	pthread_t thread;
	bool thread_on, stop;
	uint64_t commit_req;		/* commit up to this tid; 0: none */
	bool commit_req_set;
	bool early_want;		/* a writer asks the thread for early writeback */
	bool early_busy;		/* the thread is writing an early batch */
	/* counters for jnl_info */
	uint64_t commits, declare_blocks, flushes, logged_data_blocks;
	uint64_t early_batches, early_waits;
	uint64_t checkpoints, cp_passes;
	struct jnl_recovery_report last_recovery;
	/* recovery: the blocks the uncommitted transaction declared, until
	 * jnl_recovery_take_declared() hands them over */
	uint64_t *rec_declared;
	size_t rec_ndeclared;
};

/* ------------------------------------------------------------- journal.c */

static inline uint64_t jnl_abs(const struct jnl *j, uint64_t rel)
{
	return j->start_blkno + rel;
}

static inline uint64_t jnl_next_pos(const struct jnl *j, uint64_t rel, uint64_t n)
{
	rel += n;
	while (rel >= j->nblocks)
		rel -= j->cap;
	return rel;
}

/* @n (< cap) log blocks before @rel, wrapping. */
static inline uint64_t jnl_prev_pos(const struct jnl *j, uint64_t rel, uint64_t n)
{
	return rel > n ? rel - n : rel + j->cap - n;
}

/* Log blocks from @from to @to, wrapping. */
static inline uint64_t jnl_dist(const struct jnl *j, uint64_t from, uint64_t to)
{
	return to >= from ? to - from : to + j->cap - from;
}

/* (C6) of commit.c: log blocks a commit may find written since the last flush */
static inline uint64_t jnl_unflushed_max(const struct jnl *j)
{
	return j->max_txn_blocks / 4;
}

/* (C6) ... and past half of that, the commit thread flushes in the background. */
static inline uint64_t jnl_unflushed_bg_mark(const struct jnl *j)
{
	return jnl_unflushed_max(j) / 2;
}

/* A background flush is due (C6). lock held. */
bool jnl_flush_wanted_locked(const struct jnl *j);

/* jnl_fault_alloc_set(): must this allocation of the commit path fail? */
bool jnl_fault_alloc(struct jnl *j);
/* Submit and count durability points (flushes, PREFLUSH, FUA) for jnl_info. */
int jnl_io(struct jnl *j, struct blk_req *r, unsigned int n);
/* Write the journal superblock (FUA, PREFLUSH when @preflush). io_lock held. */
int jnl_sb_write_iolocked(struct jnl *j, uint64_t start, uint64_t sequence, bool declare,
			bool preflush);
void jnl_abort(struct jnl *j, int err, const char *why);
struct jnl_txn *jnl_txn_new(uint64_t tid);
void jnl_txn_free(struct jnl_txn *t);
/* Log blocks of @n copies' descriptors, of @n revoke records. */
static inline uint64_t jnl_desc_blocks_for(uint64_t n)
{
	return (n + JNL_DESC_TAGS - 1) / JNL_DESC_TAGS;
}
static inline uint64_t jnl_revoke_blocks_for(uint64_t n)
{
	return (n + JNL_LIST_ENTRIES - 1) / JNL_LIST_ENTRIES;
}
/* The log image of a commit: @ndecl declare blocks, @nmeta copies with their
 * descriptors, @nrevoke revoke records and the commit block (FORMAT.md §3.7). */
static inline uint64_t jnl_log_footprint(uint64_t ndecl, uint64_t nmeta, uint64_t nrevoke)
{
	return ndecl + jnl_desc_blocks_for(nmeta) + nmeta + jnl_revoke_blocks_for(nrevoke) + 1;
}
/* Log blocks transaction @t would take if committed now (upper bound). */
uint64_t jnl_txn_footprint(const struct jnl *j, const struct jnl_txn *t, uint64_t extra_meta);
/* May a logged copy of @blkno's data be replayed over a newer home write from
 * @t: logged by a transaction still in the log, or by the committing one? lock held. */
bool jnl_logged_copy_locked(const struct jnl *j, const struct jnl_txn *t, uint64_t blkno);
struct jnl_bh *jnl_bh_find(struct jnl *j, uint64_t blkno);
struct jnl_bh *jnl_bh_get(struct jnl *j, uint64_t blkno);
/* Free @bh when it holds no copy. lock held. */
void jnl_bh_gc(struct jnl *j, struct jnl_bh *bh);
int jnl_cp_add(struct jnl *j, struct jnl_bh *bh);
/* One block to write: home address and the copy. */
struct jnl_wb {
	uint64_t blkno;
	uint8_t *buf;
};
void jnl_wb_sort(struct jnl_wb *w, size_t n);
/*
 * Build requests writing @n blocks (sorted, distinct) home, merging contiguous
 * runs into one request through a staging buffer (full-stripe writes on RAID).
 * Appends to @reqs (room for @n) and returns the count; staging buffers go to
 * *@stage (give back with jnl_stage_free). -ENOMEM.
 */
#define JNL_MERGE_MAX 256u	/* blocks per merged request (1 MiB) */
#define JNL_DIRECT_MIN 16u	/* copies side by side written from where they are */
int jnl_wb_reqs(struct jnl *j, struct jnl_wb *w, size_t n, uint32_t flags, struct blk_req *reqs,
		void ***stage, size_t *nstage);
/* Staging buffers back to the journal's pool (or freed past its size). */
void jnl_stage_free(struct jnl *j, void **stage, size_t nstage);
void jnl_sort_u64(uint64_t *a, size_t n);
/*
 * Requests for @n log blocks from log position @pos to or from @buf, split where
 * the log wraps and, if @max, into runs of at most @max blocks. Appends to @r
 * and returns the count (at most 2, or n / max + 2).
 */
unsigned int jnl_log_reqs(const struct jnl *j, enum blk_op op, uint32_t flags, uint64_t pos,
			  uint64_t n, uint8_t *buf, uint64_t max, struct blk_req *r);
/* A log block's magic: what a scan of the log takes for one (FORMAT.md §3.3). */
static inline bool jnl_magic_log(uint32_t m)
{
	return m == JNL_MAGIC_DESC || m == JNL_MAGIC_COMMIT || m == JNL_MAGIC_REVOKE ||
	       m == JNL_MAGIC_DECLARE;
}
/* A copy with this magic is logged escaped (JNL_TAG_ESCAPED): a log block's, or
 * the journal superblock's, which no scan reads but which costs nothing to hide. */
static inline bool jnl_magic_escaped(uint32_t m)
{
	return jnl_magic_log(m) || m == JNL_MAGIC_SB;
}

/* ------------------------------------------------------------- plan.c */

/* The steps a commit can take (plan.c: what each writes and what a crash after it leaves). */
enum jnl_step {
	JNL_STEP_LOG_FLUSH,	/* (C6) FLUSH before the commit's writes */
	JNL_STEP_DECLARE,	/* (C3) declare blocks, FUA */
	JNL_STEP_DATA,		/* (C2) log blocks and data, one batch */
	JNL_STEP_COMMIT,	/* (C2) commit block, PREFLUSH|FUA: the commit point */
	JNL_STEP_LOG_FUA,	/* (C1) log blocks and commit block, FUA: the commit point */
	JNL_STEP_BATCH,		/* (C1) log blocks, data and commit block, one batch */
	JNL_STEP_FLUSH,		/* (C1) FLUSH after the batch: the commit point */
	JNL_STEP_COUNT
};

struct jnl_step_def {
	enum jg_opoint point;	/* what the crash harness counts it as */
	const char *writes;	/* the requests it issues */
	unsigned int durability;	/* durability points it costs (jnl_info.flushes) */
	bool commit_point;	/* once it completes, the transaction is durable */
	const char *crash;	/* what a crash right after it leaves */
};
extern const struct jnl_step_def jnl_steps[JNL_STEP_COUNT];

/* What the plan of a commit depends on. */
struct jnl_shape {
	enum jnl_data_mode mode;
	bool log_flush;		/* (C6) more than jnl_unflushed_max() log blocks unflushed */
	bool declare;		/* declare blocks to write (declared, data to go home) */
	bool data_home;		/* data goes home in this commit, or went early */
	bool csum_commit;	/* (C3) the commit block carries JNL_COMMIT_DATA_CSUM */
};

#define JNL_PLAN_MAX 5
struct jnl_plan {
	unsigned int n;
	enum jnl_step step[JNL_PLAN_MAX];
};

/* The ordered steps of a commit of shape @s. */
void jnl_plan(const struct jnl_shape *s, struct jnl_plan *p);

/* ------------------------------------------------------------- commit.c */

/* Commit the running transaction if it has changes; wait for any other commit first. */
int jnl_commit_running(struct jnl *j);
int jnl_thread_start(struct jnl *j);
void jnl_thread_stop(struct jnl *j);

/* ------------------------------------------------------------- checkpoint.c */

/* Write every cp copy home and move the tail; io_lock held. @clean: empty log, close. */
int jnl_checkpoint_iolocked(struct jnl *j, bool clean);
/* Make room for @need more log blocks; io_lock held. */
int jnl_log_reserve_iolocked(struct jnl *j, uint64_t need);
/* (K2) Has the background checkpoint work to do? lock held. */
bool jnl_cp_step_wanted_locked(const struct jnl *j);
/* Log blocks in use past which the background checkpoint starts a pass, and past
 * which a commit checkpoints everything before it returns (commit.c). */
static inline uint64_t jnl_cp_bg_mark(const struct jnl *j)
{
	return j->cap / 4;
}
static inline uint64_t jnl_cp_sync_mark(const struct jnl *j)
{
	return j->cap / 4 * 3;
}

/* ------------------------------------------------------------- revoke.c */

/*
 * Fill revoke blocks (struct jnl_list_hdr and block numbers, JNL_LIST_ENTRIES
 * per block) at log position @pos with the @n entries of @blknos, sealed for
 * transaction @tid.
 */
void jnl_revoke_fill(struct jnl *j, uint8_t *img, uint64_t pos, uint64_t tid,
		     const uint64_t *blknos, size_t n);

/* Recovery: record revokes of a committed transaction (@tid) in @table; a
 * record of a block at or past @dev_blocks revokes nothing and is skipped. */
int jnl_revoke_table_add(struct jnl_map *table, const uint8_t *blk, uint64_t tid,
			 uint64_t dev_blocks);
/* Record one: the newest revoking tid of @blkno wins. */
int jnl_revoke_table_note(struct jnl_map *table, uint64_t blkno, uint64_t tid);

/* ------------------------------------------------------------- declare.c */

/*
 * Fill declare blocks at log position @pos naming the @n data blocks of @wb
 * (sorted), sealed for transaction @tid. Each tag holds the crc32c of the
 * contents it writes home, unless @crc is false (JNL_TAG_NO_CRC): the
 * transaction has more than JNL_COMMIT_CSUM_MAX_DATA data blocks with these.
 */
void jnl_declare_fill(struct jnl *j, uint8_t *img, uint64_t pos, uint64_t tid,
		      const struct jnl_wb *wb, size_t n, bool crc);

static inline uint64_t jnl_declare_blocks_for(uint64_t ndata)
{
	return (ndata + JNL_DESC_TAGS - 1) / JNL_DESC_TAGS;
}
/* Early writeback of the running transaction's pending data (declared: declare first). */
int jnl_early_writeback(struct jnl *j, struct jnl_txn *t);
void jnl_early_request_locked(struct jnl *j, struct jnl_txn *t);


bool jnl_revoke_table_test(const struct jnl_map *table, uint64_t blkno, uint64_t tid);

#endif /* JGRFS_JNL_I_H */
