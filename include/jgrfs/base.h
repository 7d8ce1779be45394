/* SPDX-License-Identifier: MIT */
/*
 * include/jgrfs/base.h - helpers shared by every layer: logging, little-endian
 * on-disk integers, crc32c (ISA-L), sequence comparison, the common metadata
 * block header and aligned block buffers.
 *
 * Interface:
 *   jg_log()                 one logging call for every layer (STYLE.md §9)
 *   le16/le32/le64           on-disk integers; only jg_le*()/jg_cpu_to_le*() touch them
 *   jg_crc32c()              ISA-L crc32_iscsi with a seed; jg_crc_seed() from a UUID
 *   jg_blk_seal/jg_blk_check every metadata block's 32-byte header (FORMAT.md §1)
 *   jg_seq_after()           wrap-safe comparison of sequence numbers
 *   jg_opoint_set()          names the write-ordering point a thread's writes serve
 */
#ifndef JGRFS_BASE_H
#define JGRFS_BASE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The block size of every layer: filesystem block, journal block, RAID block. */
#define JG_BLOCK_SIZE 4096u
#define JG_BLOCK_SHIFT 12

/* ---------------------------------------------------------------- logging */

/*
 * ERR and WARN are for what went wrong; NOTICE for what a command's user
 * should read without asking (what recovery did at a mount); INFO for the
 * layers' account of their work (assembled, mkfs, resync); DEBUG for more. The
 * jgrfs program shows up to NOTICE on stderr (-q: ERR, -v: INFO, -vv: DEBUG);
 * the daemon sends up to INFO to syslog.
 */
enum jg_log_level {
	JG_LOG_ERR = 0,
	JG_LOG_WARN = 1,
	JG_LOG_NOTICE = 2,
	JG_LOG_INFO = 3,
	JG_LOG_DEBUG = 4,
};

typedef void (*jg_log_sink_fn)(void *ctx, int level, const char *subsys, const char *msg);

/* Log "subsys: msg" at @level. Thread-safe. Messages above the set level are dropped. */
void jg_log(int level, const char *subsys, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Member roles of @mask as a message says them: "role 2", "roles 0, 3", "no
 * role"; into @buf (64 bytes hold any mask of 32 roles cut with "..."). Returns @buf.
 */
const char *jg_roles_str(uint32_t mask, char *buf, size_t len);
/* Replace the sink (default: stderr). NULL restores the default. Not thread-safe:
 * call at start-up. */
void jg_log_set_sink(jg_log_sink_fn fn, void *ctx);
/* Messages with level > @level are dropped (default JG_LOG_INFO). */
void jg_log_set_level(int level);
int jg_log_get_level(void);
/* This thread's messages more severe than @level are logged at @level instead
 * (JG_LOG_ERR, the default: none); returns the setting it replaces. For a call
 * whose failure is expected and which its caller reports once (a periodic
 * probe of a device that is away). */
int jg_log_demote(int level);

/* ------------------------------------------------------------- assertions */

/*
 * JG_ASSERT(cond): a contract the code states (a comment's "held", "aligned",
 * "at most"), checked in every build without NDEBUG -- build/ and
 * build-valgrind/ (meson's b_ndebug is false by default). A failed check logs
 * the expression, file, line and function, then aborts. With NDEBUG the
 * condition is not evaluated: it must have no side effect, and be cheap.
 */
#ifndef NDEBUG
#define JG_ASSERTS 1
#else
#define JG_ASSERTS 0
#endif
__attribute__((noreturn)) void jg_assert_fail(const char *expr, const char *file, int line,
					      const char *func);
#if JG_ASSERTS
#define JG_ASSERT(cond)                                                                          \
	(__builtin_expect(!!(cond), 1) ? (void)0 : jg_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
#define JG_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

/*
 * A mutex that knows the thread holding it, so that a function named after a
 * lock (`_locked`) can check it is held: JG_ASSERT_HELD(&a->sb_lock). The
 * owner is recorded on lock and cleared on unlock with JG_ASSERTS only; a
 * thread can only ever see its own id there while it holds the lock.
 * jg_mutex_lock returns pthread_mutex_lock's result (EDEADLK: an
 * error-checking mutex this thread holds already, left as it was).
 *
 * Fair yield (jg_mutex_yield): a holder that lets the lock go between the
 * steps of a long call must let the threads waiting for it in before it takes
 * it again. A pthread mutex does not: the releaser, still running, takes it
 * back before a waiter it woke is scheduled (issue 43: a stat waited a second
 * behind a fallocate). So each jg_mutex_lock takes a ticket (@tickets, before
 * it waits) and counts as served once it holds the lock (@served): the
 * tickets not served are the waiters. A yielder notes how many there are and
 * the next ticket (its horizon), and sleeps on @turn, the lock free, until
 * every ticket below its horizon was served; each serve while a yielder
 * sleeps counts against it (jg_mutex_served). A sleeping yielder waits with a
 * ticket of its own, so two long calls take turns too.
 */
struct jg_yield;
struct jg_mutex {
	pthread_mutex_t m;
	pthread_t owner; /* the holder, valid while @held (JG_ASSERTS only) */
	int held;
	uint64_t tickets;	   /* jg_mutex_lock calls begun (atomic): each one's ticket */
	uint64_t served;	   /* of them, those that took the lock (or held it): under @m */
	struct jg_yield *yielders; /* threads asleep in jg_mutex_yield: under @m */
	pthread_cond_t turn;	   /* where they sleep */
};
/* @type: PTHREAD_MUTEX_DEFAULT or PTHREAD_MUTEX_ERRORCHECK. */
void jg_mutex_init(struct jg_mutex *mx, int type);
void jg_mutex_destroy(struct jg_mutex *mx);
/* Ticket @t was served while a yielder sleeps; @mx held. */
void jg_mutex_served(struct jg_mutex *mx, uint64_t t);
/* Let @mx (held) go; take it back once every thread that was waiting for it
 * has had it (at once when none waits). */
void jg_mutex_yield(struct jg_mutex *mx);

static inline int jg_mutex_lock(struct jg_mutex *mx)
{
	uint64_t t = __atomic_fetch_add(&mx->tickets, 1, __ATOMIC_RELAXED);
	int rc = pthread_mutex_lock(&mx->m);

	/* DEFAULT and ERRORCHECK mutexes fail only with EDEADLK: held by us */
	mx->served++;
	if (mx->yielders)
		jg_mutex_served(mx, t);
	if (JG_ASSERTS && !rc) {
		__atomic_store_n(&mx->owner, pthread_self(), __ATOMIC_RELAXED);
		__atomic_store_n(&mx->held, 1, __ATOMIC_RELAXED);
	}
	return rc;
}

static inline void jg_mutex_unlock(struct jg_mutex *mx)
{
	if (JG_ASSERTS)
		__atomic_store_n(&mx->held, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mx->m);
}

/* Whether the calling thread holds @mx (always true without JG_ASSERTS). */
static inline bool jg_mutex_held(const struct jg_mutex *mx)
{
	return !JG_ASSERTS || (__atomic_load_n(&mx->held, __ATOMIC_RELAXED) &&
			       pthread_equal(__atomic_load_n(&mx->owner, __ATOMIC_RELAXED),
					     pthread_self()));
}
#define JG_ASSERT_HELD(mx) JG_ASSERT(jg_mutex_held(mx))

/* pthread_cond_wait and _timedwait on a jg_mutex: the holder is cleared while
 * the waiter sleeps (another thread takes the lock meanwhile) and recorded again
 * when it wakes holding it. */
static inline int jg_cond_wait(pthread_cond_t *c, struct jg_mutex *mx)
{
	int rc;

	if (JG_ASSERTS)
		__atomic_store_n(&mx->held, 0, __ATOMIC_RELAXED);
	rc = pthread_cond_wait(c, &mx->m);
	if (JG_ASSERTS) {
		__atomic_store_n(&mx->owner, pthread_self(), __ATOMIC_RELAXED);
		__atomic_store_n(&mx->held, 1, __ATOMIC_RELAXED);
	}
	return rc;
}

static inline int jg_cond_timedwait(pthread_cond_t *c, struct jg_mutex *mx,
				    const struct timespec *ts)
{
	int rc;

	if (JG_ASSERTS)
		__atomic_store_n(&mx->held, 0, __ATOMIC_RELAXED);
	rc = pthread_cond_timedwait(c, &mx->m, ts);
	if (JG_ASSERTS) {
		__atomic_store_n(&mx->owner, pthread_self(), __ATOMIC_RELAXED);
		__atomic_store_n(&mx->held, 1, __ATOMIC_RELAXED);
	}
	return rc;
}

/* ------------------------------------------------------- on-disk integers */

/* One-member structs, so that a missed conversion fails to compile. */
typedef struct { uint16_t v; } le16;
typedef struct { uint32_t v; } le32;
typedef struct { uint64_t v; } le64;

static inline uint16_t jg_le16(le16 x) { return x.v; }
static inline uint32_t jg_le32(le32 x) { return x.v; }
static inline uint64_t jg_le64(le64 x) { return x.v; }
static inline le16 jg_cpu_to_le16(uint16_t v) { le16 x = { v }; return x; }
static inline le32 jg_cpu_to_le32(uint32_t v) { le32 x = { v }; return x; }
static inline le64 jg_cpu_to_le64(uint64_t v) { le64 x = { v }; return x; }
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "jgrfs stores little-endian fields natively; add byte swapping for big-endian hosts"
#endif

/* ------------------------------------------------------------------ crc32c */

/*
 * CRC-32C (Castagnoli) by ISA-L's crc32_iscsi. crc32_iscsi applies no inversion:
 * the standard CRC-32C of a buffer is ~jg_crc32c(~0u, p, n) (0xe3069283 for
 * "123456789"). On-disk checksums use a seed from jg_crc_seed(), never 0, so that
 * an all-zero block never verifies.
 */
uint32_t jg_crc32c(uint32_t seed, const void *p, size_t n);
/* Seed for an array's checksums, derived from its UUID; never 0. */
uint32_t jg_crc_seed(const uint8_t uuid[16]);

/* ---------------------------------------------------------------- sequence */

/* true when sequence number @a is after @b, modulo 2^64 wrap (jbd2 tid_gt). */
static inline bool jg_seq_after(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) > 0;
}

/* --------------------------------------------------------- ordering points */

/*
 * The registry of write-ordering points: every kind of write whose order
 * against other writes (or whose durability) recovery relies on, named with the
 * label of the invariant in the code that states it. A thread names the point
 * it is about to issue writes for with jg_opoint_set(); the fault device
 * (src/raid/dev_fault.c) tags each member write with it and, at a power cut,
 * records every point that had a write in flight -- issued and not yet made
 * durable by a flush or FUA, or the very write the cut fell on. The crash
 * harness adds these up into its coverage table (`jgrfs crashtest`), which
 * must show every point reached. Setting the point is a thread-local store,
 * so it stays in every build.
 *
 *	X(id, label, what)
 */
#define JG_OPOINT_LIST(X)                                                                        \
	X(NONE, "-", "a write no point names")                                                   \
	X(JNL_DECLARE, "(C3)", "declare blocks, FUA, before their data")                         \
	X(JNL_DATA, "(C2) data", "a commit's data and log blocks, before its commit block")      \
	X(JNL_COMMIT, "(C2) commit", "commit block with PREFLUSH|FUA")                           \
	X(JNL_LOG_FUA, "(C1) FUA", "log image and commit block, FUA (no data home)")            \
	X(JNL_LOG_BATCH, "(C1) batch", "log, data and commit block in one batch, then a flush") \
	X(JNL_LOG_FLUSH, "(C6)", "flush bounding the log whose parity may be stale")            \
	X(JNL_EARLY_DATA, "(D1) early", "an early batch's data, after its declare blocks")      \
	X(JNL_CP_STEP, "(K2)", "a background checkpoint step's home writes")                    \
	X(JNL_CP_FULL, "(K1)", "a full checkpoint's home writes")                                \
	X(JNL_SB, "journal sb", "journal superblock: tail, start, clean")                        \
	X(JNL_REPLAY, "replay", "recovery's replayed home writes (SYNCRAID)")                    \
	X(JNL_RESYNC, "resync", "recovery's SYNCRAID reads repairing parity")                    \
	X(RAID_SB, "(S1)", "member superblocks, then a flush")                                   \
	X(RAID_BITMAP_SET, "(B1)", "write-intent bits set before the writes they cover")         \
	X(RAID_BITMAP_CLEAR, "(B2)", "write-intent bits cleared after a flush")                  \
	X(RAID_RESYNC, "(W3)", "assembly's resync of dirty rows (bitmap, full)")                 \
	X(RAID_REBUILD, "(R1)", "rebuild of a member: rows, then its superblock")              \
	X(RAID_SYNC, "(Y2)", "initial sync: parity of rows, a flush, then its mark")              \
	X(FS_DCSUM_INIT, "(D3)", "checksum blocks past the lazy mark, a flush, then the mark")

enum jg_opoint {
#define JG_OPOINT_ENUM(id, label, what) JG_OP_##id,
	JG_OPOINT_LIST(JG_OPOINT_ENUM)
#undef JG_OPOINT_ENUM
	JG_OP_COUNT
};
_Static_assert(JG_OP_COUNT <= 64, "ordering points fit a 64-bit mask");

extern __thread enum jg_opoint jg_opoint_cur;

/* Name the point of the writes this thread issues next; returns the previous one. */
static inline enum jg_opoint jg_opoint_set(enum jg_opoint p)
{
	enum jg_opoint old = jg_opoint_cur;

	jg_opoint_cur = p;
	return old;
}

static inline enum jg_opoint jg_opoint_get(void)
{
	return jg_opoint_cur;
}

/* The label and a line on what it orders; "?" for an out-of-range value. */
const char *jg_opoint_label(enum jg_opoint p);
const char *jg_opoint_what(enum jg_opoint p);
/* "JNL_DECLARE": the registry's name, for machine-readable output. */
const char *jg_opoint_id(enum jg_opoint p);

/* ------------------------------------------------------------ block header */

/* 32 bytes at offset 0 of every metadata block; FORMAT.md §1. */
struct jg_blk_hdr {
/*00*/	le32 magic;	/* one value per block type */
/*04*/	le16 version;	/* format version of the writer */
/*06*/	le16 flags;	/* per block type */
/*08*/	le64 seq;	/* tid or event count; compare only with jg_seq_after() */
/*10*/	le64 blkno;	/* the block's home address: catches misdirected writes */
/*18*/	le32 crc;	/* crc32c of the whole block with this field zero */
/*1c*/	le32 reserved;	/* written as zero, ignored on read */
};
_Static_assert(sizeof(struct jg_blk_hdr) == 32, "jg_blk_hdr size");
_Static_assert(offsetof(struct jg_blk_hdr, seq) == 0x08, "jg_blk_hdr.seq offset");
_Static_assert(offsetof(struct jg_blk_hdr, blkno) == 0x10, "jg_blk_hdr.blkno offset");
_Static_assert(offsetof(struct jg_blk_hdr, crc) == 0x18, "jg_blk_hdr.crc offset");

/*
 * Fill the header of the @len-byte block @blk and set its crc (over @len bytes
 * with the crc field zero, seeded with @seed). Call last, after the body is final.
 */
void jg_blk_seal(void *blk, size_t len, uint32_t magic, uint16_t version, uint16_t flags,
		 uint64_t seq, uint64_t blkno, uint32_t seed);
/* Recompute and store the crc only (header fields already set). */
void jg_blk_crc_set(void *blk, size_t len, uint32_t seed);
/* true when the stored crc matches. Does not log. */
bool jg_blk_crc_ok(const void *blk, size_t len, uint32_t seed);

/*
 * Verify a block in the fixed order magic -> crc -> version (<= @max_version) ->
 * home address (@blkno, or skip with JG_BLKNO_ANY). On failure logs
 * "<subsys>: <what> dev=<dev> blkno=<n> bad <check>: expected ... found ..." and
 * returns -EUCLEAN (-EOPNOTSUPP for a newer version). Never writes.
 */
#define JG_BLKNO_ANY UINT64_MAX
int jg_blk_check(const void *blk, size_t len, uint32_t magic, uint16_t max_version,
		 uint64_t blkno, uint32_t seed, const char *subsys, const char *what,
		 const char *dev);
/* As jg_blk_check, silent: for trying candidates of a block (BLK_CTL_HEAL_READ). */
int jg_blk_verify(const void *blk, size_t len, uint32_t magic, uint16_t max_version,
		  uint64_t blkno, uint32_t seed);

/* ------------------------------------------------------------------ memory */

/* @nblocks * JG_BLOCK_SIZE bytes aligned for O_DIRECT; NULL on failure. free() it. */
void *jg_alloc_blocks(size_t nblocks);
/* As jg_alloc_blocks, zero-filled. */
void *jg_zalloc_blocks(size_t nblocks);

/* ------------------------------------------------------------------- UUIDs */

void jg_uuid_generate(uint8_t uuid[16]);
/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into @out (at least 37 bytes). */
void jg_uuid_format(const uint8_t uuid[16], char out[37]);
bool jg_uuid_is_zero(const uint8_t uuid[16]);

/* Monotonic time in seconds, for reports. */
double jg_now_seconds(void);

#endif /* JGRFS_BASE_H */
