/* SPDX-License-Identifier: MIT */
/*
 * src/raid/raid_i.h - the body of struct raid_array and the RAID layer's internal
 * interfaces between its files (layout, parity, stripe, bitmap, resync, super);
 * the I/O path's own (stripe.c and the files it names) are in stripe_i.h.
 * Included by src/raid and by tests/unit/raid only.
 *
 * Lock order (docs/DESIGN.md: ... raid stripe -> member queue):
 *	row locks (ascending bucket) -> bm_lock -> sb_lock -> sync_lock / stats_lock / rc.lock
 *	spare_lock is a leaf too. raid_event() takes sb_lock unless its caller holds
 *	it, then stats_lock (event.c (E1)).
 * Nothing that holds a later lock takes an earlier one.
 */
#ifndef JGRFS_RAID_I_H
#define JGRFS_RAID_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "jgrfs/raid.h"
#include "raid_format.h"

#define RAID_BS JG_BLOCK_SIZE
#define RAID_LOCK_BUCKETS 1024u		 /* hashed row locks: row % RAID_LOCK_BUCKETS */
#define RAID_GROUP_MAX_ROWS 256u
#define RAID_LOST_RING 16u	 /* lost array blocks remembered (raid_lost_blocks) */	 /* rows handled per member batch */
#define RAID_GROUP_MAX_BYTES (32u << 20) /* scratch per member batch */
#define RAID_TRACK_ALWAYS_MAX 4u	 /* regions BLK_CTL_TRACK_ALWAYS can name */

/* ------------------------------------------------------------------ layout */

struct raid_geo {
	unsigned int level;  /* 4, 5, 6 */
	unsigned int layout; /* RAID_LAYOUT_* */
	unsigned int n;	     /* members */
	unsigned int ndata;  /* data chunks per row */
	unsigned int npar;   /* parity chunks per row: 1 or 2 */
	uint32_t chunk_blocks;
	uint32_t row_blocks;  /* ndata * chunk_blocks: array blocks per row */
	uint64_t data_offset; /* member block of the data area */
	uint64_t data_blocks; /* per member */
	uint64_t rows;
	uint64_t array_blocks;
};

/* The most scratch one call holds: a group of raid_grp_max_rows() rows, each
 * (ndata + 2 npar) chunks at worst (stripe.c; issue 46) */
uint64_t raid_scratch_call_max(const struct raid_geo *geo);

/*
 * Positions in a row: 0 .. ndata-1 the data chunks in array order, ndata = P,
 * ndata + 1 = Q (RAID6). raid_layout_member() maps a position to a member role.
 */
#define RAID_POS_P(g) ((g)->ndata)
#define RAID_POS_Q(g) ((g)->ndata + 1)
int raid_geo_init(struct raid_geo *g, unsigned int level, unsigned int n, uint32_t chunk_blocks,
		  uint64_t data_offset, uint64_t data_blocks);
unsigned int raid_layout_member(const struct raid_geo *g, uint64_t row, unsigned int pos);
/* The position of member @role in @row (inverse of raid_layout_member). */
unsigned int raid_layout_pos(const struct raid_geo *g, uint64_t row, unsigned int role);
/* Array block -> member role and member block. */
void raid_layout_map(const struct raid_geo *g, uint64_t blkno, unsigned int *role,
		     uint64_t *member_blkno);

/* ------------------------------------------------------------------ parity */

/* P (and Q) of @ndata data vectors of @len bytes (32-byte aligned) into p (q). */
void raid_parity_gen(unsigned int ndata, unsigned int npar, size_t len, uint8_t **data, uint8_t *p,
		     uint8_t *q);
/*
 * Rebuild the positions set in @missing (bit = position, at most npar bits) of a
 * row whose vectors are @vec[0 .. ndata+npar-1] (data, P, Q), in place. The other
 * vectors must hold good contents. Returns 0 or -EINVAL (too many missing).
 */
int raid_parity_reconstruct(unsigned int ndata, unsigned int npar, size_t len, uint8_t **vec,
			    uint32_t missing);
/* dest ^= src (len bytes). */
void raid_parity_xor_into(size_t len, uint8_t *dest, const uint8_t *src);
/* dest ^= 2^pos * src over GF(2^8) (0x11d), len >= 64. */
void raid_parity_q_mad(unsigned int pos, size_t len, uint8_t *dest, uint8_t *src);

/* ------------------------------------------------------------------- array */

struct raid_member {
	struct blk_dev *dev; /* NULL: missing */
	bool failed;	     /* I/O error or raid_fail_member(); never read or written */
	bool rebuilding;     /* written; readable only in rows below @recovered */
	/*
	 * A member being rebuilt: rows [0, recovered) hold their chunks (readable,
	 * atomic: raid_missing_read_rows), rows [0, recovered_sb) are durable and
	 * recorded in its superblock (recovery_rows). Under sb_lock otherwise.
	 */
	uint64_t recovered;
	uint64_t recovered_sb;
	char name[64];
	/*
	 * rebuild.c (R7): a device of this role whose connection ended with writes
	 * unanswered (BLK_CTL_UNFENCED), "" when none; under sb_lock.
	 */
	char unfenced[64];
	/* read errors (repair.c raid_read_repair), under stats_lock */
	uint64_t rd_corrected;	    /* reconstructed, rewritten and read back right (also heal.c) */
	uint64_t rd_uncorrectable;  /* no other member could reconstruct the block */
};

/*
 * A hot spare (spare.c): idle (@dev open, owned by the array, closed at stop), or
 * taken for @role until that rebuild ends: then raid_rebuild owns @dev, which
 * is kept only to know the entry again, never used.
 */
struct raid_spare {
	struct blk_dev *dev;
	bool taken;
	unsigned int role;
	char name[64];
};

/* rcache.c: the row cache (its invariants are there) */
#define RAID_RCACHE_ROWS 8u
#define RAID_RCACHE_NONE UINT64_MAX
struct raid_rcache_ent {
	uint64_t row;
	uint64_t used;	/* rc.clock at the last use: least recently used goes first */
	unsigned int pins; /* 0 or 1: the writer holding the row lock */
	bool live;	/* holds @row */
	bool valid;	/* equals the members (H2) */
	bool stale;	/* dropped while pinned: not valid at put */
	uint8_t *buf;	/* (ndata + npar) chunks, by position (data, P, Q) */
};
struct raid_rcache {
	pthread_mutex_t lock; /* a leaf */
	struct raid_rcache_ent ent[RAID_RCACHE_ROWS];
	uint64_t clock, hits, fills, prefetches;
	/* the prefetch thread (H3), started at the first hint */
	pthread_cond_t work, idle;	/* with lock: a row is wanted; none is */
	pthread_t thread;
	bool started, start_failed, stop, busy;
	uint64_t want;			/* the row to read ahead, or RAID_RCACHE_NONE */
};

/* away.c: the rows a failed member missed (raid_readd) */
#define RAID_AWAY_RING (1u << 18) /* recent row ranges remembered (16 bytes each) */
struct raid_away_range {
	uint64_t row0, nrows;
};
struct raid_away {
	pthread_mutex_t lock; /* a leaf: protects the rest */
	struct raid_away_range *ring; /* range number s at ring[s % size], made at the first */
	uint64_t size;		      /* RAID_AWAY_RING, or the test knob away_ring */
	uint64_t head;		      /* ranges noted so far */
	uint64_t lost;		      /* ranges below it are overwritten */
	uint64_t flushed_at;	      /* head when the last flush was issued */
	uint64_t durable[RAID_MAX_MEMBERS]; /* ranges below it are durable on the member */
	uint8_t *map[RAID_MAX_MEMBERS];	    /* a failed member's rows to resync, a bit each */
	const char *marked_why[RAID_MAX_MEMBERS]; /* why it has no map, when it failed */
	/* under sb_lock: a->events when it failed, and whether it failed in the
	 * superblock round of that event (then it holds that event or the one before) */
	uint64_t left_events[RAID_MAX_MEMBERS];
	bool left_in_round[RAID_MAX_MEMBERS];
};

struct raid_array {
	struct blk_dev dev; /* first: container_of by cast; raid_array_dev() */
	struct raid_geo geo;
	uint8_t uuid[16];
	uint32_t seed; /* jg_crc_seed(uuid) */
	enum raid_resync_policy policy;
	bool readonly;
	bool was_dirty;
	bool resync_pending;		/* dirty, and the recovery resync did not run (set at
					 * assembly), or a write failed upward (bitmap.c (B4),
					 * under bm_lock): keep the bitmap, stop leaves the
					 * array dirty */
	bool forced;			/* assembled with cfg->force: (S6) does not refuse */
	uint64_t ctime;
	/*
	 * The initial sync (sync.c): rows [0, sync_rows) have parity known to
	 * match their data, as the superblocks say (written under sb_lock, read
	 * atomically by the write path: stripe.c (W6)); sync_done the rows the
	 * sync has passed in memory, >= sync_rows. Both geo.rows once in sync.
	 */
	uint64_t sync_rows;
	uint64_t sync_done;
	uint32_t sb_incompat;		/* feature_incompat of its superblocks (fixed) */
	uint64_t bm_first;		/* member block of bitmap block 0: RAID_BITMAP_FIRST() */

	/* protects members, events, sb_flags, masks, retired; error-checking (event.c (E1)) */
	struct jg_mutex sb_lock;
	struct raid_member m[RAID_MAX_MEMBERS];
	uint64_t events;
	uint32_t sb_flags;	/* RAID_SB_FLAG_* */
	bool jnl_unreplayed;	/* assembled jnl-pending, not cleared since (S6) */
	uint32_t read_missing;	/* roles not readable: absent, failed, rebuilding (atomic) */
	uint32_t write_missing; /* roles not writable: absent, failed (atomic) */
	uint32_t recovering;	/* roles being rebuilt, a subset of read_missing (atomic) */
	uint32_t fail_pending;	/* roles failed in this run that no completed superblock
				 * round records yet (super.c (S12)); written under
				 * sb_lock, read atomically */
	/* the online scrub's mark (RAID_FEATURE_COMPAT_SCRUB; raid_scrub_mark) */
	uint64_t scrub_rows, scrub_mismatches;
	uint32_t scrub_flags;	/* RAID_SCRUB_*; 0: no mark */
	blk_verify_fn verify;	/* the scrub's oracle (raid_set_verifier), or NULL */
	void *verify_ctx;
	struct blk_dev *retired[RAID_MAX_MEMBERS]; /* replaced failed devices, closed at stop */
	unsigned int nretired;
	/* hot spares (spare.c), under sb_lock; unrelated to spare_lock below */
	struct raid_spare spares[RAID_MAX_SPARES];
	unsigned int nspares;

	pthread_rwlock_t row_lock[RAID_LOCK_BUCKETS]; /* serialise row updates (hashed) */
	struct raid_rcache rc;				/* rcache.c */
	pthread_mutex_t spare_lock;	/* a leaf: protects the two below */
	uint8_t *spare_arena;		/* a group's scratch kept for the next (plan.c, stripe.c) */
	size_t spare_bytes;
	uint64_t scratch_bytes, scratch_peak; /* atomics: groups' scratch allocated, kept or
					      * in use, now and the most (issue 46) */
	uint64_t scratch_calls, scratch_calls_peak; /* atomics: calls holding scratch */

	/* write-intent bitmap (bitmap.c); everything below up to sync_lock under bm_lock */
	struct jg_mutex bm_lock;
	uint32_t bm_region_blocks;
	uint32_t bm_blocks; /* per member; 0: no bitmap */
	uint64_t bm_regions;
	uint8_t *bm_bits;	 /* in-memory bits, durable when set */
	uint32_t *bm_inflight;	 /* writes in flight per region */
	uint64_t *bm_last_epoch; /* flush epoch of the region's last write completion */
	double *bm_last_time;	 /* time of the region's last write completion */
	uint64_t bm_epoch;	 /* array flushes completed */
	uint64_t bm_dirty;	 /* set bits */
	/* (B5) regions tracked whatever the write's flags (BLK_CTL_TRACK_ALWAYS);
	 * set before the journal's first write, read without bm_lock */
	uint64_t bm_always[RAID_TRACK_ALWAYS_MAX];
	unsigned int bm_nalways;

	pthread_mutex_t sync_lock; /* protects synced, resync_all, risk_* */
	uint8_t *synced;	   /* rows resynced this recovery (SYNCRAID / resync-all) */
	/*
	 * (A1) Rows a dirty degraded array could not make consistent (the write
	 * hole): their reconstructed chunks may be wrong. A bit per row, as
	 * synced, made at the first; risk_n bits set. risk_all: any row.
	 */
	uint8_t *risk;
	uint64_t risk_n;
	bool risk_all;
	bool resync_all;

	unsigned int max_read_errors; /* corrected read errors a member may have (fixed) */

	/* the array blocks lost last (a read no member could correct), a ring; lost_seq
	 * counts them all */
	uint64_t lost[RAID_LOST_RING];
	uint64_t lost_seq;

	struct raid_away away; /* away.c */

	pthread_mutex_t stats_lock; /* protects stats, last_resync, rebuild_progress, sync_rate, rd_*, ev_*,
				     * lost* */
	struct blk_stats stats;
	struct raid_resync_report last_resync;
	double rebuild_progress;
	struct { /* raid_info.rebuild_last_* */
		bool done, readd;
		unsigned int role;
		uint64_t rows;
		double seconds;
	} rebuild_last;
	double sync_rate;		    /* rows per second of the running initial sync, or 0 */
	uint64_t ev_counts[RAID_EV__COUNT]; /* events reported (event.c) */
	unsigned int ev_rebuild_step;	    /* 5% steps of the rebuild reported so far */

	raid_event_fn ev_fn; /* raid_assemble_cfg.event_fn: fixed from assembly on */
	void *ev_ctx;
	/* raid_assemble_cfg.test; a unit test may change it between its requests */
	struct raid_test_knobs test;
};

/* Bitmap clearing delay (seconds a region must be idle; knob bitmap_clear_now: 0). */
#define RAID_BITMAP_CLEAR_DELAY 2.0
/* Seconds of rebuild between two records of its mark (rebuild.c (R1); knob
 * rebuild_mark_always: 0), and of the initial sync (sync.c (Y2); sync_mark_always). */
#define RAID_MARK_SECONDS 2.0
static inline double raid_mark_seconds(bool always)
{
	return always ? 0 : RAID_MARK_SECONDS;
}

static inline unsigned int raid_popcount(uint32_t x)
{
	return (unsigned int)__builtin_popcount(x);
}

static inline uint64_t raid_div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* super.c */
/* A new array object: locks made, no member; raid_array_free frees it without the members. */
struct raid_array *raid_array_alloc(void);
void raid_array_free(struct raid_array *a);
/* Name the array device and size it from its geometry. */
void raid_array_name(struct raid_array *a);
/*
 * (S9) Rewrite both copies of the members in @who at the freshest event, saying
 * what @fresh says; for those in @one_first copy 1 (the one not taken) first.
 */
int raid_sb_catch_up(struct raid_array *a, uint32_t who, uint32_t one_first,
		     const struct raid_sb *fresh);
/* Fill @blk with the superblock of @role (RAID_ROLE_SPARE: a spare's), sealed. */
void raid_sb_fill(struct raid_array *a, void *blk, unsigned int role, uint32_t state,
		  uint32_t failed, uint64_t events, uint64_t home);
int raid_sb_write_all(struct raid_array *a, uint32_t state);
int raid_sb_write_all_locked(struct raid_array *a, uint32_t state);
/* Recompute read_missing / write_missing from members[]. sb_lock held. */
void raid_masks_update_locked(struct raid_array *a);
int raid_member_fail(struct raid_array *a, unsigned int role, int err);
/*
 * As raid_member_fail, for a failed I/O that went to @dev: only while @role
 * still holds @dev (rebuild.c (R6)); 0 when it holds another by now.
 */
int raid_member_fail_dev(struct raid_array *a, unsigned int role, const struct blk_dev *dev,
			 int err);
/* (S12) Mark @role failed in memory, its failure pending; masks not updated. sb_lock held. */
void raid_member_mark_failed_locked(struct raid_array *a, unsigned int role);
/*
 * (S12) A write that skipped the roles in @skipped completed: 0 when the
 * failure of each is durable (waits for the superblock round under way),
 * -EIO (logged) when the round that would record one failed.
 */
int raid_fail_durable(struct raid_array *a, uint32_t skipped);
/* (S6) -EUCLEAN, logged with @what, while a journal of an earlier run is unreplayed. */
int raid_jnl_unreplayed_locked(struct raid_array *a, const char *what);
uint32_t raid_missing_read(struct raid_array *a);
uint32_t raid_missing_write(struct raid_array *a);
/*
 * raid_missing_read() for rows up to @last: a member being rebuilt is readable
 * there when the rebuild has passed @last.
 */
uint32_t raid_missing_read_upto(struct raid_array *a, uint64_t last);
/* Roles being rebuilt (atomic). */
uint32_t raid_recovering(struct raid_array *a);
/*
 * assemble.c: read and verify the superblock copies of @dev (the newer valid
 * one into @sb, its event into *@events), as assembly does. Never writes;
 * -EUCLEAN when no copy is valid, -EINVAL when none has the magic.
 */
int raid_sb_read_dev(struct blk_dev *dev, struct raid_sb *sb, uint64_t *events);
/* assemble.c (S10) No row a dirty array may have left inconsistent lacks a member. */
bool raid_dirty_rows_whole(struct raid_array *a, uint32_t missing, bool pending);

/* spare.c */
/*
 * Write both superblock copies of @dev as a spare of @a, at its event count,
 * each flushed (superblock rounds do not include spares: spare.c (P1)).
 * sb_lock held (create takes it too, on its private array).
 */
int raid_spare_sb_write_sb_locked(struct raid_array *a, struct blk_dev *dev);
/*
 * Whether @x and @y reach the same device: the same handle, or the same
 * identity (BLK_CTL_GET_ID), or when neither has one the same name. NULL: false.
 */
bool raid_dev_same(struct blk_dev *x, struct blk_dev *y);
/*
 * (P5) A rebuild of @role onto @newdev is about to make it a member: if it is
 * an idle spare of the array (by another handle too), take it from the list
 * for @role; *@drop the list's own handle, to close once sb_lock is released.
 * -EBUSY after a message when it is a spare taken for another rebuild.
 * sb_lock held.
 */
int raid_spare_adopt_sb_locked(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
			       struct blk_dev **drop);
/* A rebuild onto @dev ended (or never began): forget @dev if it was a taken spare. sb_lock held. */
void raid_spare_forget_sb_locked(struct raid_array *a, const struct blk_dev *dev);
/*
 * -EEXIST after a message when block 0 of @dev is a superblock of this array
 * for a working role other than @role (rebuild.c (R2)), or with @other_too one
 * of another array (spare.c (P3)); @what names the caller in the message.
 * sb_lock held.
 */
int raid_newdev_check_locked(struct raid_array *a, unsigned int role, struct blk_dev *dev,
			     const char *what, bool other_too);
/*
 * rebuild.c: block 0 of @dev, read once: RAID_DEV_SB_OURS (a superblock of this
 * array), RAID_DEV_SB_OTHER (a valid one of another array), RAID_DEV_SB_NONE,
 * with *@role and @uuid (16 bytes, or NULL) from it; -errno when unreadable.
 * Checks magic and crc only. Logs nothing.
 */
#define RAID_DEV_SB_OURS 0
#define RAID_DEV_SB_NONE 1
#define RAID_DEV_SB_OTHER 2
int raid_dev_sb_role(struct raid_array *a, struct blk_dev *dev, unsigned int *role,
		     uint8_t *uuid);
/*
 * rebuild.c (R7): the device of @role whose connection ended with writes
 * unanswered, remembered from here on; NULL when none. sb_lock held.
 */
const char *raid_role_unfenced_locked(struct raid_array *a, unsigned int role);

/* away.c (its rules A1-A4 are there) */
void raid_away_init(struct raid_array *a);
void raid_away_free(struct raid_array *a);
/* (A1) Member writes of rows [@row0, @row0 + @nrows) completed (or failed). */
void raid_away_note(struct raid_array *a, uint64_t row0, uint64_t nrows);
/* (A1) The member writes among @reqs (of the data area), done or failed; one lock. */
void raid_away_note_reqs(struct raid_array *a, const struct blk_req *reqs, unsigned int n);
/* (A2) Before flushing members: the position to hand to raid_away_flush_done. */
uint64_t raid_away_flush_begin(struct raid_array *a);
void raid_away_flush_done(struct raid_array *a, unsigned int role, uint64_t seq);
/*
 * (A3) Member @role fails now, before the masks say so; @in_round: its
 * superblock write of the round at a->events failed. One being rebuilt gets
 * no map (A4). sb_lock held.
 */
void raid_away_fail_locked(struct raid_array *a, unsigned int role, bool in_round);
/* Forget @role's map: a rebuild takes the role. */
void raid_away_forget(struct raid_array *a, unsigned int role);
/* Stop tracking @role; its map (the caller frees it), or NULL and *@why (A3, A4). */
uint8_t *raid_away_take(struct raid_array *a, unsigned int role, const char **why);
/* Rows marked in @role's map so far, or -1 when it has none. */
int64_t raid_away_rows(struct raid_array *a, unsigned int role);

/* event.c */
/*
 * Report an event (include/jgrfs/raid.h): one log line, one count in
 * raid_info.event_counts, then the handler. @role names the member, whose
 * device name is looked up; @progress is for RAID_EV_REBUILD_PROGRESS (0..1;
 * reported only when it crosses another 5% step since the last
 * RAID_EV_REBUILD_STARTED, and not at 100%: RAID_EV_REBUILD_FINISHED says it),
 * else -1; @err the negative errno behind a failure, or 0.
 * Any thread, with or without sb_lock held (E1), but with no lock after sb_lock
 * (stats_lock, sync_lock, rc.lock, spare_lock) held.
 */
void raid_event(struct raid_array *a, enum raid_event_kind kind, unsigned int role, double progress,
		int err);
/* As raid_event(), with @fmt's key=value details added to the log line only. */
void raid_event_detail(struct raid_array *a, enum raid_event_kind kind, unsigned int role,
		       double progress, int err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* bdev.c: the ops of raid_array_dev() */
extern const struct blk_dev_ops raid_array_ops;

/* stripe.c; raid_rows_* in repair.c */
/*
 * Run the reads and writes of a batch that bdev.c checked (those whose result
 * is still 0) through row groups, setting each one's result. Returns 0, or
 * -ENOMEM when the groups could not start.
 */
int raid_stripe_submit(struct raid_array *a, struct blk_req *reqs, unsigned int n);
enum raid_row_mode {
	RAID_ROWS_CHECK = 1, /* compare parity, rewrite it when it differs */
	RAID_ROWS_SCRUB,     /* compare parity only */
	RAID_ROWS_REBUILD,   /* reconstruct rebuilding members */
};
/*
 * Run @mode over rows [first, first + count) in member batches. Adds to
 * @checked and @repaired (mismatched rows). Takes row locks.
 */
int raid_rows_run(struct raid_array *a, uint64_t first, uint64_t count, enum raid_row_mode mode,
		  uint64_t *checked, uint64_t *repaired);
/* Scrub rows: count mismatches, with @repair rewrite their parity. */
/* sync.c (Y2): flush every member, then record the sync mark @mark if it is higher. */
int raid_sync_mark(struct raid_array *a, uint64_t mark);
int raid_rows_scrub(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
		    uint64_t *checked, uint64_t *mismatched, uint64_t *repaired);
/* As raid_rows_scrub, telling @fn (may be NULL) each mismatched row, after its locks. */
int raid_rows_scrub_fn(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
		       raid_row_fn fn, void *ctx, uint64_t *checked, uint64_t *mismatched,
		       uint64_t *repaired);
/* Flush the writable members in @roles; a member failing with -EIO is failed. */
int raid_members_flush(struct raid_array *a, uint32_t roles);

/* rcache.c; the caller holds the row's lock exclusively (H1) */
/*
 * The image of @row, pinned: its members' chunks by position. *fresh: it must be
 * read whole before use (a new entry, only when @fill). NULL: not cached.
 */
uint8_t *raid_rcache_get(struct raid_array *a, uint64_t row, bool fill, bool *fresh);
/* Unpin; @ok: the image was updated with writes that all succeeded. */
void raid_rcache_put(struct raid_array *a, uint64_t row, bool ok);
/* Forget @row: it is written another way. */
void raid_rcache_drop(struct raid_array *a, uint64_t row);
/* Forget every row: the members changed (any thread, no row lock needed). */
void raid_rcache_drop_all(struct raid_array *a);
/*
 * An append ended in the second half of @row - 1: read @row into the cache in
 * the prefetch thread, before the log gets there (any thread, no lock needed).
 */
void raid_rcache_hint(struct raid_array *a, uint64_t row);
/* Tests: wait until the prefetch thread has nothing to do. */
void raid_rcache_wait_idle(struct raid_array *a);
/* The images' memory now and its bound, bytes (issue 46; images are never freed
 * before raid_rcache_free, so now is also the most). */
void raid_rcache_mem(struct raid_array *a, uint64_t *bytes, uint64_t *bound);
/* Stop the prefetch thread; before the members are closed. */
void raid_rcache_stop(struct raid_array *a);
void raid_rcache_counts(struct raid_array *a, uint64_t *hits, uint64_t *fills,
			uint64_t *prefetches);
void raid_rcache_init(struct raid_array *a);
void raid_rcache_free(struct raid_array *a);

/* heal.c: BLK_CTL_HEAL_READ (blkreq.h struct blk_heal); takes the row's lock */
int raid_heal_read(struct raid_array *a, struct blk_heal *h);
/*
 * heal.c (H4): 0 when the parity of @row can be trusted, else -EUCLEAN (logged,
 * @what naming the caller). Also the read error repair's (stripe.c (W7)).
 */
int raid_heal_trusted(struct raid_array *a, uint64_t row, const char *what);
/*
 * heal.c: the erasure sets to try for a line, in order: each holds @base (the
 * damaged position and the unreadable ones) and is as large as the parity
 * allows; into @sets (RAID_MAX_MEMBERS + 1), their number returned.
 */
unsigned int raid_heal_sets(const struct raid_geo *g, uint32_t base, uint32_t *sets);

/* bitmap.c */
int raid_bitmap_init(struct raid_array *a, uint32_t region_blocks, uint32_t blocks,
		     uint64_t regions);
void raid_bitmap_free(struct raid_array *a);
/* Read and OR the bitmaps of every readable member (assembly). Never writes. */
int raid_bitmap_load(struct raid_array *a);
/* Write bitmap blocks [first, first+count) to every writable member (or @only_role). */
int raid_bitmap_write(struct raid_array *a, uint32_t first, uint32_t count, int only_role);
/* Regions [r0, r1] gain a writer: set their bits durably first. */
int raid_bitmap_start(struct raid_array *a, const uint64_t *regions, unsigned int n);
void raid_bitmap_end(struct raid_array *a, const uint64_t *regions, unsigned int n);
/*
 * (B4) A write failed upward: set the bits of @regions durably (best effort:
 * members that fail are failed) and clear no bit again before the next assembly.
 */
void raid_bitmap_keep_dirty(struct raid_array *a, const uint64_t *regions, unsigned int n);
/* After an array flush: clear idle regions. */
void raid_bitmap_flushed(struct raid_array *a);
/* Clear every bit (all regions in sync), write the bitmap. */
int raid_bitmap_clear_all(struct raid_array *a);
/* Whether every dirty region lies in rows below @row (false without a bitmap). */
bool raid_bitmap_dirty_below(struct raid_array *a, uint64_t row);
/* (B5) Track writes to the region of @blkno whatever their flags; -ENOSPC past
 * RAID_TRACK_ALWAYS_MAX regions, 0 without a bitmap (nothing to track in). */
int raid_bitmap_track_always(struct raid_array *a, uint64_t blkno);
/* (B3), (B5): does a write to region @reg flagged @flags set its bit? */
bool raid_bitmap_tracks(const struct raid_array *a, uint64_t reg, uint32_t flags);

/* resync.c */
int raid_resync_recovery(struct raid_array *a);
bool raid_sync_row_needed(struct raid_array *a, uint64_t row);
void raid_sync_row_done(struct raid_array *a, uint64_t row);
void raid_sync_reset(struct raid_array *a);
/* (A1) Record rows [@first, @first + @count) at risk. */
void raid_risk_add(struct raid_array *a, uint64_t first, uint64_t count);
/* (A1) At assembly of a dirty degraded array: the rows its policy says were in flight. */
void raid_risk_from_bitmap(struct raid_array *a, uint32_t missing, bool pending);

void raid_stats_add_resync(struct raid_array *a, uint64_t checked, uint64_t repaired,
			   uint64_t syncraid);

#endif /* JGRFS_RAID_I_H */
