/* SPDX-License-Identifier: MIT */
/*
 * include/jgrfs/raid.h - the RAID4/5/6 array and its member devices.
 *
 * Member devices (struct blk_dev, include/jgrfs/blkreq.h):
 *   raid_dev_open()         what a user names: an NBD URI, else a path
 *   raid_dev_uring_open()   a file or block device, O_DIRECT, io_uring
 *   raid_dev_nbd_open()     an NBD export on another machine, libnbd
 *   raid_dev_mem_open()     memory, for unit tests
 *   raid_dev_fault_open()   wraps another device: fails chosen blocks, models a
 *                           power cut (writes after the Nth dropped or torn)
 *
 * The array: raid_create() writes member superblocks; raid_assemble() checks that
 * members belong together and returns a struct raid_array; raid_array_dev() is the
 * array as a struct blk_dev that upper layers submit to. Crash protection by
 * policy (enum raid_resync_policy): the recovery resync runs in raid_assemble()
 * for a dirty array; BLK_SYNCRAID reads and writes resync rows on demand.
 *
 * Vocabulary (docs/FORMAT.md): a *chunk* is one member's contiguous part of a
 * stripe row; a *stripe row* ("row") is one chunk from every member; array
 * blocks are numbered over the data chunks only.
 */
#ifndef JGRFS_RAID_H
#define JGRFS_RAID_H

#include <stdbool.h>
#include <stdint.h>

#include "jgrfs/blkreq.h"

/* ------------------------------------------------------------ member devices */

/*
 * Open @path (regular file or block device) O_DIRECT for I/O through io_uring.
 * @create_blocks: when non-zero and @path is missing or a shorter regular file,
 * create/extend it (sparse) to that many blocks. Fails with a message naming the
 * path (-EINVAL where the underlying filesystem refuses O_DIRECT).
 * Thread-safe: any thread may submit.
 */
int raid_dev_uring_open(const char *path, uint64_t create_blocks, struct blk_dev **out);

/*
 * An NBD export (src/raid/dev_nbd.c): @uri is nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH, or nbds:// / nbds+unix:// (TLS). Checks the
 * export: writable, able to flush, a size that is a multiple of JG_BLOCK_SIZE
 * and, with @create_blocks, at least that many blocks (an export cannot be
 * created or grown: -ENOSPC); a server minimum block size of at most
 * JG_BLOCK_SIZE. Waits at most JGRFS_NBD_TIMEOUT seconds (environment, default
 * 30, 0: no limit) for the server, and as long for each answer later: a
 * request not answered in time ends the connection, and it and every later
 * request complete with -EIO. A URI is at most 63 bytes (a member's name; a
 * longer one: -ENAMETOOLONG). Fails with a message naming @uri.
 * Thread-safe: any thread may submit. May sleep.
 */
int raid_dev_nbd_open(const char *uri, uint64_t create_blocks, struct blk_dev **out);

/* Whether @path names an NBD export (nbd://, nbd+unix://, nbds://, nbds+unix://). */
bool raid_dev_is_nbd(const char *path);

/*
 * A member as a user names it: an NBD URI (raid_dev_is_nbd) through
 * raid_dev_nbd_open(), anything else through raid_dev_uring_open(). Same
 * arguments and returns as those.
 */
int raid_dev_open(const char *path, uint64_t create_blocks, struct blk_dev **out);

/* A zero-filled memory device of @nblocks blocks named @name. */
int raid_dev_mem_open(const char *name, uint64_t nblocks, struct blk_dev **out);

/*
 * Fault injection, shared by every member of one array: a *power domain* counts the
 * writes of all its members. When the count reaches @cut_after_writes (0: never)
 * the power is cut: that write and every later write on every member of the
 * domain is dropped (reported as success, as the dying process would see), and of
 * the writes completed since each member's last flush, each is kept or reverted
 * at random (seeded): reverted whole, or with @tear, reverted on a random subset
 * of its 512-byte sectors. Reads keep working on what survived.
 */
struct raid_fault_domain;
struct raid_fault_cfg {
	uint64_t cut_after_writes;	/* 0: never; else the write number (1-based) that is lost */
	uint64_t seed;			/* for the keep/revert choices; same seed, same result */
	unsigned int keep_percent;	/* chance (0..100) that an unflushed write survives; default 50 */
	bool tear;			/* revert partial writes sector by sector */
	/* With tear (and chaos_after_cut): the unit a tear works in, bytes, a power
	 * of two 1..4096; 0: 512, a disk that writes each sector whole. Smaller
	 * models a device that does not write even a sector atomically (an SSD
	 * without power-loss protection): one sector holds old and new bytes. */
	unsigned int tear_unit_bytes;
	/* Count each FLUSH request as a position too: a cut there loses the flush
	 * (the power failed while it ran), so the writes it would have made durable
	 * are kept or reverted as above. Off: only writes count. */
	bool cut_at_flushes;
	/* After the cut, instead of dropping every later write, keep each whole, drop
	 * it, or tear it (a random subset of its sectors), at random: a machine whose
	 * disks go on writing for a moment while the power fails, member by member.
	 * Used with on_cut killing the process a little later. */
	bool chaos_after_cut;
	/* Optional: called once, right after the cut, with the domain lock held (it
	 * must not touch the domain's devices). The daemon under test uses it to die
	 * on the spot, as a machine does when its power goes. */
	void (*on_cut)(void *arg);
	void *on_cut_arg;
	/* The error a write to a failing block (raid_dev_fault_fail_block() on_write,
	 * raid_dev_fault_fail_all()) returns: 0 for -EIO; e.g. -ENOSPC or -EDQUOT, a
	 * sparse member file whose filesystem or quota is full. Reads fail with -EIO. */
	int write_errno;
	/* Cut the power right after the @cut_point_nth (1-based) plain write tagged
	 * with a point in @cut_point_mask (bit per enum jg_opoint) was made: it is in
	 * flight, not yet flushed. For points a wrapper above the array cannot aim
	 * at: the array's own, a full checkpoint's home writes (its first
	 * request is often its FUA superblock alone), and the writes of recovery's
	 * resync (only a row whose parity did not match has any). A member flush
	 * tagged with such a point counts too: the cut falls on it, and it is lost
	 * (a flush bounding the log, (C6)). 0: off. */
	uint64_t cut_point_mask;
	unsigned int cut_point_nth;
};
int raid_fault_domain_new(const struct raid_fault_cfg *cfg, struct raid_fault_domain **out);
void raid_fault_domain_free(struct raid_fault_domain *d);
/* true once the power has been cut. */
bool raid_fault_domain_is_cut(const struct raid_fault_domain *d);
/* Writes seen so far by the domain (to find the write positions of a workload). */
uint64_t raid_fault_domain_writes(const struct raid_fault_domain *d);
/* Cut the power now (as if the count had been reached). */
void raid_fault_domain_cut(struct raid_fault_domain *d);
/*
 * After the cut: a bit (1 << enum jg_opoint) for every ordering point that had
 * a write in flight -- not yet made durable by a flush or FUA, or the write or
 * flush the cut fell on. 0 before the cut.
 */
uint64_t raid_fault_domain_cut_points(const struct raid_fault_domain *d);

/*
 * Wrap @lower (not owned: the caller closes it after this one) in domain @d.
 * raid_dev_fault_fail_block() makes I/O touching @blkno fail with -EIO, writes
 * with cfg.write_errno when set (@on_read/@on_write choose which), to model a
 * failing member.
 */
int raid_dev_fault_open(struct raid_fault_domain *d, struct blk_dev *lower, struct blk_dev **out);
int raid_dev_fault_fail_block(struct blk_dev *fault_dev, uint64_t blkno, bool on_read, bool on_write);
/*
 * A latent sector error at @blkno: its reads fail with -EIO until a write to it
 * succeeds, which heals it (a disk remaps a sector it is asked to write).
 */
int raid_dev_fault_latent_block(struct blk_dev *fault_dev, uint64_t blkno);
/* Every I/O fails with -EIO (writes: cfg.write_errno when set) from now on (a dead member). */
int raid_dev_fault_fail_all(struct blk_dev *fault_dev);
/*
 * Tests: the next request of @op (BLK_OP_READ or BLK_OP_WRITE) touching @blkno
 * waits, before it is issued (and before any failing block fails it), until
 * raid_dev_fault_release(): a request caught in flight at a chosen moment. One
 * stall at a time per device; raid_dev_fault_wait_stalled() returns once the
 * request waits.
 */
int raid_dev_fault_stall_block(struct blk_dev *fault_dev, uint64_t blkno, enum blk_op op);
void raid_dev_fault_wait_stalled(struct blk_dev *fault_dev);
void raid_dev_fault_release(struct blk_dev *fault_dev);

/* ------------------------------------------------------------------ array */

enum raid_resync_policy {
	RAID_RESYNC_OFF = 0,	 /* UNSAFE, for tests: no resync after a crash at all */
	RAID_RESYNC_FULL = 1,	 /* no bitmap; resync every row of a dirty array */
	RAID_RESYNC_BITMAP = 2,	 /* write-intent bitmap; resync dirty regions */
	RAID_RESYNC_JOURNAL = 3, /* bitmap for writes without BLK_FS_RAIDSYNC; the
				  * filesystem's journal resyncs the rest (SYNCRAID) */
};
/* "off", "full", "bitmap", "journal"; NULL for an unknown value. */
const char *raid_resync_policy_name(enum raid_resync_policy p);
/* Parse a name as above; -EINVAL when unknown. */
int raid_resync_policy_parse(const char *s, enum raid_resync_policy *out);

struct raid_create_cfg {
	unsigned int level;		/* 4, 5 or 6 */
	uint32_t chunk_blocks;		/* chunk size in blocks; power of two, 1..1024; default 16 (64 KiB) */
	enum raid_resync_policy resync;	/* default RAID_RESYNC_JOURNAL */
	uint32_t bitmap_region_blocks;	/* blocks of array data per bitmap bit; power of two;
					 * default 16384 (64 MiB); 0: default */
	uint64_t member_blocks;		/* blocks of each member the array uses (superblock,
					 * bitmap and data area); 0: the smallest member */
	/* Hot spares written with the array (raid_spare_add says what one is): 0 ..
	 * RAID_MAX_SPARES devices, each at least as large as the members' used part;
	 * not owned (the caller closes them). NULL with nspares 0: none. */
	struct blk_dev **spares;
	unsigned int nspares;
	/* The members hold zeros (new sparse files, discarded disks), so every row
	 * is in sync already: no initial sync (mdadm's --assume-clean). */
	bool assume_clean;
};

/*
 * Write a new array over @n members (role i = members[i]): member superblocks
 * and bitmaps, then the superblocks of cfg->spares; nothing of the data area is
 * read or written, so it takes the same time whatever the size. The array is
 * usable at once and not yet in sync: raid_initial_sync() makes its parity
 * match, and until then the rows past its mark are written so that each write
 * leaves its lines consistent (docs/design/raid.md, "Instant create"). Refuses
 * (-EEXIST, naming the device) a member or spare that already holds a jgrfs
 * superblock unless @force.
 */
int raid_create(struct blk_dev **members, unsigned int n, const struct raid_create_cfg *cfg,
		bool force);

/*
 * The array raid_create() would make over @n members of @member_blocks blocks
 * each (cfg->member_blocks instead when set), without a device: 0 and its size
 * in *@array_blocks; -ENOSPC when the members are too small for one stripe row;
 * -EINVAL for a bad @cfg. For the checks a command makes before it writes.
 */
int raid_create_size(const struct raid_create_cfg *cfg, unsigned int n, uint64_t member_blocks,
		     uint64_t *array_blocks);
/*
 * Where array block @blkno of that array will be: the role of its member and
 * the member block. 0, or as raid_create_size (-EINVAL past the array's end).
 * mkfs reads there first to see whether a filesystem would be overwritten.
 */
int raid_create_map(const struct raid_create_cfg *cfg, unsigned int n, uint64_t member_blocks,
		    uint64_t blkno, unsigned int *role, uint64_t *member_blkno);

/*
 * Events: what happens to an array that its operator wants to hear about, named
 * as mdadm --monitor names them. raid_event (src/raid/event.c) writes one log
 * line per event ("raid: event=Fail dev=/dev/sdc role=2 err=-5 ..."), counts it
 * (raid_info.event_counts) and hands it to the handler of raid_assemble_cfg.
 * The values index counters a tool of another build reads (fop_status): they
 * never change, new kinds are appended.
 */
enum raid_event_kind {
	RAID_EV_MEMBER_FAILED = 0,	      /* "Fail": an I/O error, an error storm, a request */
	RAID_EV_READ_ERROR_CORRECTED = 1,     /* "ReadErrorCorrected": reconstructed, rewritten */
	RAID_EV_READ_ERROR_UNCORRECTABLE = 2, /* "ReadErrorUncorrectable": a block lost */
	RAID_EV_REBUILD_STARTED = 3,	      /* "RebuildStarted": @dev takes the role */
	RAID_EV_REBUILD_PROGRESS = 4,	      /* "RebuildNN": crossed another 5% (05..95) */
	RAID_EV_REBUILD_FINISHED = 5,	      /* "RebuildFinished": every row is on @dev */
	RAID_EV_REBUILD_FAILED = 6,	      /* "RebuildFailed": stopped (err), @dev failed */
	RAID_EV_SPARE_TAKEN = 7,	      /* "SpareActive": @dev is a working member now */
	RAID_EV_DEGRADED_ARRAY = 8,	      /* "DegradedArray": assembled without this role */
	RAID_EV__COUNT
};

struct raid_event {
	enum raid_event_kind kind;
	const char *name; /* "Fail", "Rebuild40", ...; valid during the call only */
	unsigned int role;
	const char *dev; /* the member's device name, "(missing)"; valid during the call */
	double progress; /* RAID_EV_REBUILD_PROGRESS: 0..1 (rows done); else -1 */
	int err;	 /* the negative errno behind a failure, else 0 */
};

/*
 * An event handler. Called after the event is logged and counted, in the thread
 * that met it (a FUSE worker doing I/O, a rebuild thread), possibly with array
 * locks held (row locks, sb_lock): it must return quickly -- queue the work,
 * never wait for it -- and must not call any raid_* function of the array.
 */
typedef void (*raid_event_fn)(void *ctx, const struct raid_event *ev);

/* "Fail", "ReadErrorCorrected", ..., "RebuildProgress" (the counter's name); NULL if unknown. */
const char *raid_event_kind_name(enum raid_event_kind kind);

/*
 * Test knobs of one array (raid_assemble_cfg.test): each makes a behaviour a
 * unit test needs to reach happen at once or always. All zero, the default, is
 * what every program runs; nothing but tests/ sets them.
 */
enum raid_partial_mode {
	RAID_PARTIAL_AUTO = 0, /* MD's rule: the cheaper of the two by blocks read */
	RAID_PARTIAL_RCW = 1,  /* every partial line reconstruct-write */
	RAID_PARTIAL_RMW = 2,  /* every partial line read-modify-write (a line not yet
				* synced is still reconstruct-written) */
};
struct raid_test_knobs {
	enum raid_partial_mode partial;	/* how a write covering part of a line is done */
	bool bitmap_clear_now;		/* bitmap.c (B2) without the idle delay */
	bool rebuild_mark_always;	/* rebuild.c (R1): a mark after every group */
	bool sync_mark_always;		/* sync.c (Y2): a mark after every group */
	bool no_prefetch;		/* the row cache reads no row ahead (rcache.c) */
	uint32_t away_ring;		/* away.c: ranges its ring keeps; 0: RAID_AWAY_RING */
};

struct raid_array;

struct raid_assemble_cfg {
	bool force;		/* assemble a dirty (or jnl-pending) and degraded array despite
				 * the write hole; let raid_rebuild / raid_fail_member run
				 * while jnl-pending is unreplayed */
	bool readonly;		/* never write: no superblock update, no resync */
	bool no_resync;		/* assemble a dirty array without the recovery resync (fsck -n, examine) */
	/* Refuse (-ENODEV, nothing written) when a role the freshest superblock has
	 * in sync (not failed) is not among the devices: a degraded start only when
	 * the user asked for one (mount -o degraded, fsck --degraded). A role
	 * recorded failed earlier does not count: that array runs degraded already. */
	bool need_all;
	/* Corrected read errors a member may have before it is failed (MD's
	 * max_read_errors); 0: RAID_MAX_READ_ERRORS. */
	unsigned int max_read_errors;
	/* Optional: called for every event from assembly on (raid_event_fn says how). */
	raid_event_fn event_fn;
	void *event_ctx;
	/* Optional: called once the array is built, before assembly writes anything
	 * (the array read-only meanwhile: reads only): a nonzero return refuses the
	 * assembly with it, every member as it was. For the caller's checks that
	 * read the array (the filesystem's superblock against the mount options). */
	int (*check_fn)(void *ctx, struct raid_array *a);
	void *check_ctx;
	struct raid_test_knobs test; /* tests only: zero */
};
#define RAID_MAX_READ_ERRORS 20u

/* Report of one resync pass (recovery, scrub, rebuild). */
struct raid_resync_report {
	uint64_t rows_checked;
	uint64_t rows_repaired;	/* rows whose parity did not match and was rewritten
				 * (a scrub with a verifier: rows with a line repaired) */
	/* a scrub with a verifier (raid_set_verifier): */
	uint64_t blocks_rebuilt;	/* member blocks rebuilt because their data failed
					 * the check (counted on their members) */
	uint64_t rows_unresolved;	/* rows with a mismatched line nothing tells which
					 * member is wrong: not repaired */
	double seconds;
};

/*
 * Assemble an array from @n devices given in any order (NULL entries allowed for
 * missing members); devices whose superblock says spare (same UUID and
 * geometry, any event count: a spare holds nothing) are kept as the array's
 * idle spares, at most RAID_MAX_SPARES. Checks magic, crc, UUIDs, roles, event counts; names the
 * device that is foreign, duplicated, missing or stale (-EUCLEAN, -EINVAL). A
 * dirty array is resynced by its policy before this returns (report in
 * raid_info.last_resync), unless cfg->no_resync or readonly. A dirty and degraded
 * array is refused (-EUCLEAN) unless cfg->force or cfg->readonly (nothing is
 * written then; reads of rows written at the crash may be wrong). With
 * cfg->need_all a member absent and not recorded failed is refused (-ENODEV).
 * Every refusal, cfg->check_fn's included, comes before the first write.
 * On success the array is marked
 * dirty (in use) and the member event counters advanced.
 * A device neither of whose superblock copies verifies but that is not foreign
 * (damaged or unreadable) is left out, its role missing (assemble.c (S12)).
 * The array takes ownership of the given devices on success (raid_stop closes
 * them; one left out is closed before this returns); on failure the caller
 * keeps them.
 */
int raid_assemble(struct blk_dev **devs, unsigned int n, const struct raid_assemble_cfg *cfg,
		  struct raid_array **out);

/* The array as a block device; valid until raid_stop(). */
struct blk_dev *raid_array_dev(struct raid_array *a);

/* Flush, mark clean (unless failed/readonly), close the members, free. Frees even on error. */
int raid_stop(struct raid_array *a);

/* Abandon the array without writing anything (a crash, for tests): close, free. */
void raid_abandon(struct raid_array *a);

struct raid_member_info {
	char name[64];
	unsigned int role;
	bool present;
	bool failed;
	bool rebuilding;
	uint64_t recovered_rows;	    /* rebuilding: rows rebuilt on it so far */
	uint64_t read_errors_corrected;	    /* read errors reconstructed and rewritten, and
					     * blocks healed after a failed checksum
					     * (BLK_CTL_HEAL_READ, src/raid/heal.c) */
	uint64_t read_errors_uncorrectable; /* blocks no other member could give back */
	int64_t missed_rows;		    /* failed in this run: rows written since it left,
					     * those raid_readd() rebuilds; -1 when not known */
	bool unfenced;			    /* failed or missing, and a device of the role lost
					     * its connection with writes unanswered: readd
					     * needs RAID_READD_FENCED */
};

/*
 * Members an array has at most (roles 0 .. RAID_MAX_MEMBERS - 1): the one limit
 * raid_create, raid_assemble, raid_info and the on-disk format share. Bounded by
 * the 32-bit role masks of the superblock (failed_mask, recovery_mask) and of
 * struct raid_array (read_missing, write_missing).
 */
#define RAID_MAX_MEMBERS 32

/*
 * The role mask with a bit for each of roles 0 .. @n - 1 (@n <= RAID_MAX_MEMBERS).
 * At @n == 32 the mask is all ones: never (1u << n) - 1 nor a test of mask >> n,
 * which shift a 32-bit value by its width (undefined; x86 shifts by n % 32).
 */
static inline uint32_t raid_role_mask_all(unsigned int n)
{
	return n >= 32 ? UINT32_MAX : (1u << n) - 1;
}
_Static_assert(RAID_MAX_MEMBERS <= 32, "raid_role_mask_all: a 32-bit role mask");

/* Hot spares an array holds at most (raid_spare_add, raid_create_cfg.spares). */
#define RAID_MAX_SPARES 8u

struct raid_spare_info {
	char name[64];
	bool rebuilding;   /* taken (raid_spare_take): being rebuilt onto @role */
	unsigned int role; /* rebuilding: the role it takes */
};

struct raid_info {
	uint8_t uuid[16];
	unsigned int level;
	unsigned int nmembers;
	unsigned int ndata;		/* data members per row: n-1 (RAID4/5), n-2 (RAID6) */
	uint32_t chunk_blocks;
	uint64_t member_blocks;		/* data area per member */
	uint64_t array_blocks;		/* usable array size */
	uint64_t rows;
	enum raid_resync_policy resync;
	uint32_t bitmap_region_blocks;
	uint64_t bitmap_dirty_regions;
	bool degraded;
	bool was_dirty;			/* the array was not shut down cleanly before this assembly */
	bool jnl_pending;		/* filesystem-guided resync pending */
	bool resync_all;
	uint64_t events;
	double rebuild_progress;	/* 0..1, or -1 when no rebuild runs */
	/* the last rebuild that ended whole since assembly (raid_rebuild, raid_readd) */
	bool rebuild_last_done;
	bool rebuild_last_readd;	/* a readd that rebuilt only the rows missed */
	unsigned int rebuild_last_role;
	uint64_t rebuild_last_rows;	/* rows it rebuilt */
	double rebuild_last_seconds;
	uint64_t sync_rows;		/* initial sync: rows in sync (recorded); rows when done */
	uint64_t sync_done;		/* ... rows the running sync has passed */
	double sync_rate;		/* ... its rows per second, 0 when none runs */
	struct raid_resync_report last_resync; /* the recovery resync of this assembly */
	uint64_t event_counts[RAID_EV__COUNT]; /* events since assembly, by kind */
	struct raid_member_info members[RAID_MAX_MEMBERS];
	unsigned int nspares;
	/* idle spares, then the ones taken whose rebuild runs; a spare whose
	 * rebuild finished is a member (members[]) and no longer listed here */
	struct raid_spare_info spares[RAID_MAX_SPARES];
	/* the online scrub's mark (raid_scrub_mark), as assembled or last recorded */
	bool scrub_marked;		/* a scrub was running or interrupted */
	bool scrub_repair;
	uint64_t scrub_rows;		/* next row to check */
	uint64_t scrub_mismatches;	/* found before the mark */
	/* memory, bytes (issue 46): the row cache's images now and their bound; the
	 * parity scratch of the calls in flight and the one kept, now and the most */
	uint64_t rcache_bytes, rcache_bound_bytes;
	uint64_t scratch_bytes, scratch_peak_bytes;
	/* the calls holding scratch now and the most at once, and the most
	 * scratch one call holds: max(RAID_GROUP_MAX_BYTES, one row's worst) */
	uint32_t scratch_calls, scratch_calls_peak;
	uint64_t scratch_call_max_bytes;
};
void raid_info_get(struct raid_array *a, struct raid_info *out);

/*
 * The scrub's oracle (raid_scrub, raid_scrub_rows): @fn says of an array block
 * whether a content verifies (enum blk_verdict, include/jgrfs/blkreq.h); the
 * filesystem on the array knows (fs_block_verify). Called only for the lines
 * of mismatched rows, with no array lock held (it may read the array); NULL
 * clears it. Set it before a scrub starts, not during one.
 */
void raid_set_verifier(struct raid_array *a, blk_verify_fn fn, void *ctx);

/* Progress callback for long operations: @done of @total rows; return non-zero to stop. */
typedef int (*raid_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/*
 * Read every row and count rows whose parity does not match the data (MD's
 * mismatch_cnt); with @repair rewrite their parity. Needs a non-degraded array.
 * Returns the count of mismatched rows (>= 0) or a negative errno.
 *
 * With a verifier (raid_set_verifier) each mismatched line (the same block of
 * every chunk of the row) is judged by it (src/raid/scrub.c (K1)-(K4)): the
 * data verifies or is free: the parity is rewritten; a member block fails and
 * its reconstruction from the others verifies: that block is rebuilt (a
 * corrected read error of its member), the parity stays; else nothing tells
 * which member is wrong: nothing is written, the row counted unresolved.
 */
int64_t raid_scrub(struct raid_array *a, bool repair, raid_progress_fn fn, void *ctx,
		   struct raid_resync_report *rep);

/* ------------------------------------------------------------ online scrub */

/*
 * The pieces of an online scrub run by the array's user (the daemon, issue 23),
 * which paces it, names the files of what it finds and records where it is.
 */
typedef void (*raid_row_fn)(void *ctx, uint64_t row);
#define RAID_SCRUB_BUSY_ROWS 16
struct raid_scrub_counts {
	uint64_t rows_checked;
	uint64_t mismatches;	/* rows whose parity did not match the data */
	uint64_t repaired;	/* ... and had it rewritten (@repair) */
	uint64_t unsynced;	/* rows past the initial sync's mark: not compared (their
				 * parity never matched); with @repair synced instead */
	uint64_t rebuilt;	/* with a verifier: member blocks rebuilt (raid_scrub) */
	uint64_t unresolved;	/* ... rows with a line nobody can tell: not repaired */
	/* with a verifier: rows with a write in flight (a line's block BLK_BUSY, also
	 * when read again): not judged, nor counted in @mismatches; the first
	 * RAID_SCRUB_BUSY_ROWS of them in @busy_rows, for the caller to scrub again
	 * later (src/raid/scrub.c (K5)) */
	uint64_t busy;
	uint64_t busy_rows[RAID_SCRUB_BUSY_ROWS];
};
/*
 * Scrub rows [@first, @first + @count) under the row locks a writer takes, so
 * concurrent writes stay correct and are never seen half done: each mismatched
 * row is passed to @fn (may be NULL; called with no array lock held, it may
 * not call into the array) and counted into *@out (added to). Rows at or past
 * the initial sync's mark are not compared (counted unsynced); with @repair
 * they are synced as raid_initial_sync() would. -EINVAL (bad
 * range), -EAGAIN (the array is degraded: nothing to compare with),
 * -EROFS (@repair on a read-only array), -EIO, -ENOMEM.
 */
int raid_scrub_rows(struct raid_array *a, uint64_t first, uint64_t count, bool repair,
		    raid_row_fn fn, void *ctx, struct raid_scrub_counts *out);
/*
 * Record the online scrub's mark in every member superblock (flushed): the next
 * row to check, RAID_SCRUB_RUNNING | RAID_SCRUB_REPAIR flags as @running and
 * @repair, and the mismatches found so far. With @running false the mark is
 * cleared (a scrub finished or cancelled). A later assembly reports it in
 * raid_info.scrub_* so that the scrub resumes. Sleeps (superblock writes);
 * -EROFS, -EIO.
 */
int raid_scrub_mark(struct raid_array *a, bool running, bool repair, uint64_t row,
		    uint64_t mismatches);

/*
 * The initial sync of a new array (MD's resync after create): walk the rows from
 * the sync mark under the row locks, rewrite the parity of each row whose parity
 * does not match its data, and record the mark every few seconds, after a flush,
 * so that a stop or crash loses at most that much; at the end the array is in
 * sync (raid_info.sync_rows == rows). Safe while the array is in use. @fn is
 * called after each group of rows (it may sleep: the caller's throttle) and
 * stops the sync by returning non-zero (-ECANCELED, the mark recorded: the next
 * call goes on from it). 0 when done (or nothing to do); -EAGAIN while a member
 * is missing or being rebuilt (nothing can be checked: call again after the
 * rebuild); -EROFS; or the error of a group.
 */
int raid_initial_sync(struct raid_array *a, raid_progress_fn fn, void *ctx);

/*
 * Reconstruct the member of role @role onto @newdev (owned by the array from this
 * call on, whatever it returns) while the array stays usable. The new member is
 * recorded at once as being rebuilt, with a mark of the rows done that moves
 * every few seconds (MD's recovery offset); it is a whole member when this
 * returns 0. With @newdev NULL, resume the rebuild of the member of @role that
 * was assembled being rebuilt (raid_info: rebuilding), from its mark. Refused
 * before it starts, @newdev closed: -EINVAL (bad role, @newdev too small, no
 * rebuild to resume), -EBUSY (the member of @role works or is being rebuilt:
 * raid_fail_member() it first), -EUCLEAN (jnl-pending: the journal of an
 * earlier run has not replayed, parity may be stale; assemble with force to
 * override), -EEXIST (@newdev holds the superblock of a working member of this
 * array), -EMFILE (too many replaced devices held open: stop and assemble
 * again), -EROFS. Stopped by @fn (-ECANCELED), the member stays being rebuilt,
 * its mark recorded: a later call with NULL goes on from there. A rebuild that
 * fails leaves @newdev in the array, marked failed.
 */
int raid_rebuild(struct raid_array *a, unsigned int role, struct blk_dev *newdev,
		 raid_progress_fn fn, void *ctx);

/*
 * Bring back the member of role @role that failed during this run, on @dev
 * (owned by the array from this call on, as in raid_rebuild): the same device,
 * reopened after it came back (a rebooted NBD server). It is rebuilt as by
 * raid_rebuild, but only in the rows it missed: those written since its last
 * flush that succeeded before it failed, and every row written after, tracked
 * in memory whatever the resync policy (src/raid/away.c). Where those rows are
 * not known (it has been missing since assembly, the daemon restarted, its
 * superblock is not at the event it left at, too many writes were unflushed
 * when it failed), every row is rebuilt, after a warning. -ENODEV (@dev closed)
 * when @dev's superblock does not name this array and @role; otherwise as
 * raid_rebuild. Stopped or crashed, it resumes as a full rebuild from its mark.
 * -EAGAIN (@dev closed, nothing written) when a device of @role lost its
 * connection with writes unanswered (raid_member_info.unfenced: its server may
 * still run them on this export), unless @flags has RAID_READD_FENCED: the
 * caller knows that connection is dead (src/raid/rebuild.c (R7)). raid_rebuild
 * onto a device that holds @role's superblock is refused the same way.
 */
#define RAID_READD_FENCED (1u << 0)
int raid_readd(struct raid_array *a, unsigned int role, struct blk_dev *dev, unsigned int flags,
	       raid_progress_fn fn, void *ctx);
/*
 * Whether block 0 of @dev holds a valid superblock of this array for @role (a
 * member that may be handed to raid_readd). Reads one block, logs nothing.
 */
bool raid_readd_probe(struct raid_array *a, unsigned int role, struct blk_dev *dev);

/*
 * The rows that a dirty array assembled degraded (with force, or read-only)
 * could not make consistent: a write was in flight there at the crash (its
 * bitmap says so, or the journal asked for the row by BLK_SYNCRAID) and a
 * member is missing, so the chunks reconstructed for that member may be wrong
 * (the write hole). Copies up to @max rows (sorted) into @rows, *@n of them;
 * *@more counts the rest; *@all when the policy keeps no record (full, off):
 * any row may be. Grows during the journal's recovery; ask after the mount.
 */
int raid_rows_at_risk(struct raid_array *a, uint64_t *rows, size_t max, size_t *n,
		      uint64_t *more, bool *all);

/*
 * The array blocks lost since *@seq (a read no member could correct; the last
 * 16 are kept), at most @max, oldest first; advances *@seq. For naming the
 * files they belong to (the array knows no files).
 */
size_t raid_lost_blocks(struct raid_array *a, uint64_t *seq, uint64_t *blocks, size_t max);

/*
 * Mark member @role failed (as an I/O error would), in the other superblocks.
 * -EUCLEAN while the journal of an earlier run has not replayed (as raid_rebuild),
 * -EIO when no redundancy would be left.
 */
int raid_fail_member(struct raid_array *a, unsigned int role);

/* ------------------------------------------------------------ hot spares */

/*
 * Hot spares (src/raid/spare.c): devices that hold a superblock of the array
 * whose role is "spare" and no data. A member failure is met by the array's
 * user (the daemon): raid_spare_take() picks a lost role and an idle spare, and
 * raid_rebuild() rebuilds the role onto it. The array never starts a rebuild by
 * itself.
 */

/*
 * Make @dev an idle spare of @a: write its superblock (both copies, role spare,
 * flushed) and keep it open (the array owns @dev on success; on failure the
 * caller keeps it). Refused after a message: -EINVAL (@dev smaller than a
 * member's used part), -EEXIST (@dev is a member or spare of this array, or
 * holds the superblock of a working member of it, as raid_rebuild refuses, or
 * of another array: wipe its first blocks), -ENOSPC (RAID_MAX_SPARES spares
 * already), -EROFS, -EIO (its superblock could not be written).
 */
int raid_spare_add(struct raid_array *a, struct blk_dev *dev);

/*
 * Forget the idle spare whose device is named @name: wipe its two superblock
 * copies (a later assembly no longer finds it) and close it. -ENOENT (no spare
 * of that name), -EBUSY (it was taken: a rebuild onto it runs, or it is a
 * member now), -EROFS. A spare that cannot be wiped is forgotten all the same,
 * with a warning (it is not written again; it holds no data).
 */
int raid_spare_remove(struct raid_array *a, const char *name);

/*
 * Take an idle spare for the lowest role that is missing or failed (not being
 * rebuilt): *@role and *@dev, which the caller must hand to raid_rebuild(a,
 * *role, *dev, ...) at once (raid_info lists it as rebuilding from now on, until
 * that rebuild ends). -ENOENT: no role to rebuild; -ENODEV: no idle spare;
 * -EROFS; -EUCLEAN as raid_rebuild (a journal of an earlier run unreplayed).
 * Logs one line when it takes one. Never waits for I/O.
 */
int raid_spare_take(struct raid_array *a, unsigned int *role, struct blk_dev **dev);

#endif /* JGRFS_RAID_H */
