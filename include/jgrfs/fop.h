/* SPDX-License-Identifier: MIT */
/*
 * include/jgrfs/fop.h - the FUSE daemon: mount options, the serving loop, and the
 * ioctls a mounted volume answers (resync-all on/off, status, online replace).
 *
 * Interface (tools/cli/cmd_mount.c is the one caller):
 *
 *	fop_opts_init(&o);
 *	fop_opts_parse(&o, "data=declared,commit=5");  each -o string, in order
 *	fop_background_start(&code);     background mode: fork now, before any thread
 *	fop_notify_start(o.notify, mnt, &nt);   with -o notify=PROGRAM
 *	fop_watch_new(nt, &w);           the array's event handler: notify= and spares
 *	... open the members, raid_assemble() with event_fn = fop_watch_event, ctx w ...
 *	fop_serve(array, mountpoint, &o, w);    mount, tell the parent, serve, unmount
 *	fop_watch_free(w); fop_notify_stop(nt);  after the array stopped: no event comes later
 *
 * fop_serve() owns the array from its call on: the filesystem is mounted on it
 * (journal replay and journal-guided resync happen there, reported in one log
 * line), the FUSE session is mounted, and in background mode the waiting parent
 * is told "mounted" only then, so that every error before that point reaches the
 * user's terminal and the parent's exit status. On fusermount3 -u, umount, SIGTERM,
 * SIGINT or SIGHUP the volume is unmounted cleanly: fs_unmount() (commit,
 * checkpoint, mark clean), raid_stop() (array clean).
 *
 * ioctls: issued on any file or directory of a mounted jgrfs (FUSE restricted
 * ioctls, so every command has a fixed size encoded in its number). The seeds'
 * SET_RESYNC_ALL / CLEAR_RESYNC_ALL (shared/seeds/006) become FOP_IOC_SET_RESYNC_ALL
 * and FOP_IOC_CLEAR_RESYNC_ALL; they, FOP_IOC_REPLACE and FOP_IOC_SPARE_ADD /
 * _REMOVE need root or the user who mounted. Tools: jgrfs status, jgrfs
 * resync-all, jgrfs replace, jgrfs spare.
 */
#ifndef JGRFS_FOP_H
#define JGRFS_FOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "jgrfs/journal.h"
#include "jgrfs/raid.h"

/* ------------------------------------------------------------ mount options */

/*
 * The options of `jgrfs mount -o ...`. fop_opts_init() sets every default;
 * fop_opts_parse() applies one comma-separated option string.
 */
struct fop_opts {
	enum jnl_data_mode data_mode;	/* data=; default JNL_DATA_DECLARED */
	bool resync_given;		/* resync= was given: must equal the array's policy */
	enum raid_resync_policy resync; /* resync=; chosen at create/mkfs, checked here */
	unsigned int commit_s;		/* commit=SECONDS, 1..3600; 0: journal default (5 s) */
	uint64_t cache_blocks;		/* cache=SIZE: buffer cache bound; 0: fs default (64 MiB) */
	int log_data_blocks;		/* logdata=BLOCKS, as fs_mount_opts (0 given: -1) */
	bool readonly;			/* ro */
	bool rw_given;			/* rw: with force, mount read-write */
	bool force;			/* force: assemble a dirty degraded array (the write
					 * hole); read-only unless rw is given too */
	bool degraded;			/* degraded: start with a member absent (it is then
					 * recorded failed and a spare may take its role);
					 * without it such a mount is refused, nothing written */
	bool allow_other;		/* allow_other: other users may use the mount */
	bool foreground;		/* -f: do not fork (also -d) */
	bool debug;			/* -d / debug: libfuse traces every request on stderr */
	int log_level;			/* lines up to this JG_LOG_* on stderr while it is the
					 * terminal (jgrfs -q/-v/-vv); default JG_LOG_NOTICE */
	bool writeback_cache;		/* kernel writeback cache; default on (writeback_cache,
					 * no_writeback_cache) */
	unsigned int max_write_bytes;	/* max_write=; 4K..1M, default 1 MiB (libfuse limit) */
	unsigned int max_threads;	/* threads=; FUSE worker threads, 1..64, default 8 */
	bool uring;			/* uring: requests over io_uring where the kernel
					 * offers it (src/fuse/uring.c); default off, or on
					 * with JGRFS_FUSE_URING=1 in the environment (tests) */
	unsigned int uring_poll_us;	/* uring_poll=; how long a ring entry's thread looks
					 * for the next request before it sleeps (uring.c
					 * (R1)); 0..1000 us, default 50 */
	unsigned int max_read_errors;	/* max_read_errors=; 0: RAID_MAX_READ_ERRORS */
	double timeout_s;		/* timeout=: entry and attribute cache, default 86400 s */
	unsigned int sync_rate_mb;	/* sync_rate=: initial sync's MiB/s when idle; 0: no limit */
	unsigned int readd_s;		/* readd=SECONDS: look for a failed member that came
					 * back that often and readd it (spare.c (U4)); 0: never */
	char *members;	 /* members=DEV1:DEV2:... (the fstab form); malloc'd or NULL */
	char *fuse_opts; /* options handed on to libfuse (nodev, noatime, fsname=, ...);
			  * malloc'd, comma-separated, or NULL */
	char *notify;	 /* notify=PROGRAM, an absolute path, run on each array event
			  * (fop_notify_start); malloc'd or NULL */
};

/* Defaults as above. */
void fop_opts_init(struct fop_opts *o);
/*
 * Route the daemon's log as @o says, from before assembly on: in the
 * background, to syslog up to JG_LOG_INFO (all with -d or log_level DEBUG),
 * and to stderr up to @o->log_level until the daemon detaches; in the
 * foreground, to stderr up to @o->log_level. fop_serve() undoes it.
 */
void fop_log_start(const struct fop_opts *o);
/*
 * Apply @optstr ("data=journal,ro,noatime"). Options jgrfs does not know are kept
 * for libfuse, which refuses the ones it does not know either (at fop_serve()).
 * Options mount(8) and mount.fuse3 pass along (defaults, auto, noauto, nofail,
 * _netdev, user, users, x-*, comment=*) are ignored. Returns 0, or -EINVAL after
 * logging which option is wrong and why.
 */
int fop_opts_parse(struct fop_opts *o, const char *optstr);
/* Free what parsing allocated. */
void fop_opts_free(struct fop_opts *o);
/*
 * Before anything is opened: the options libfuse takes (@o->fuse_opts), tried
 * on a session that is never mounted, so that an unknown one is refused before
 * assembly writes a member. 0, or -EINVAL after libfuse's message.
 */
int fop_opts_check(const struct fop_opts *o);
/*
 * A raid_assemble_cfg.check_fn (ctx: the struct fop_opts): the options against
 * the array and its filesystem's superblock (resync=, data= on a volume with
 * data checksums), read before assembly writes anything. 0 or -EINVAL (logged).
 */
int fop_assemble_check(void *ctx, struct raid_array *a);
/* The -o options, for --help. */
#define FOP_OPTS_HELP                                                                              \
	"  data=MODE           declared (default), ordered, journal or writeback\n"                \
	"  resync=POLICY       must equal the array's crash protection policy (journal,\n"         \
	"                      bitmap, full, off), which is chosen by `jgrfs mkfs -r`;\n"          \
	"                      any other value is refused with a message that names\n"             \
	"                      the array's policy\n"                                               \
	"  commit=SECONDS      journal commit interval (default 5)\n"                              \
	"  cache=SIZE          buffer cache size (default 64M)\n"                                  \
	"  logdata=BLOCKS      a commit of at most this many 4K data blocks logs them in\n"       \
	"                      the journal: one flush instead of two (default 16; 0: never;\n"   \
	"                      data=ordered and data=declared)\n"                                  \
	"  ro                  read-only (a dirty journal is replayed in memory only)\n"           \
	"  allow_other         let other users use the mount (root, or user_allow_other\n"         \
	"                      in /etc/fuse.conf)\n"                                               \
	"  no_writeback_cache  send every write to the daemon at once (default: the\n"             \
	"                      kernel's writeback cache; fsync and close still flush)\n"           \
	"  max_write=SIZE      largest write request, 4K..1M (default 1M)\n"                       \
	"  threads=N           FUSE worker threads (default 8)\n"                                  \
	"  uring               FUSE requests over io_uring where the kernel offers it\n"          \
	"                      (Linux 6.14+, fuse.enable_uring=1), else /dev/fuse\n"             \
	"  uring_poll=USEC     with uring, how long a queue's thread looks for the next\n"        \
	"                      request before it sleeps, 0..1000 (default 50; 0: never)\n"        \
	"  max_read_errors=N   read errors of a member corrected (reconstructed from the\n"      \
	"                      others and rewritten) before it is failed (default 20)\n"         \
	"  timeout=SECONDS     kernel cache of names and attributes (default 86400)\n"             \
	"  notify=PROGRAM      on each array event run PROGRAM (an absolute path) with\n"          \
	"                      EVENT MOUNTPOINT DEVICE, as mdadm --monitor does: Fail,\n"          \
	"                      DegradedArray, ReadErrorCorrected, ReadErrorUncorrectable,\n"       \
	"                      RebuildStarted, RebuildNN (NN: 05..95), RebuildFinished,\n"         \
	"                      RebuildFailed, SpareActive; one at a time, in order\n"              \
	"  degraded            mount with a member absent: it is marked failed (a rebuild\n"    \
	"                      or readd brings it back) and a hot spare given takes its\n"     \
	"                      role; without it such a mount is refused, nothing written\n"    \
	"                      (an array with a member failed earlier mounts as it is)\n"      \
	"  force               mount a dirty and degraded array (a crash with a member\n"         \
	"                      missing), read-only unless rw is given too; the files in\n"        \
	"                      the rows written at the crash are named in the log\n"              \
	"  sync_rate=MB        the initial sync of a new array runs in the background at\n"     \
	"                      most MB MiB/s of array data, an eighth of it while the\n"        \
	"                      volume is in use (default 128; 0: no limit)\n"                   \
	"  readd=SECONDS       every SECONDS, look for a member that failed on its own\n"         \
	"                      device again (a rebooted NBD server): when it is that\n"          \
	"                      member, bring it back as jgrfs readd does (default 0: never)\n"   \
	"  members=D1:D2:...   the member devices (for /etc/fstab, see below)\n"                   \
	"  debug               trace every FUSE request (implies -f)\n"                            \
	"  and the generic FUSE and mount options (nodev, nosuid, noatime, fsname=, ...)\n"

/* ------------------------------------------------------------------ daemon */

/*
 * Background mode, called before any thread exists and before the members are
 * opened: fork. In the child returns 0 and sets *@exit_code to -1: carry on, then
 * call fop_serve() (or just return on error: the parent sees the child's exit
 * status). In the parent returns 1 once the child has mounted the volume (exit
 * code 0) or has died (its exit code, at least 1): the caller exits with
 * *@exit_code. Returns a negative errno when fork fails.
 */
int fop_background_start(int *exit_code);

struct fop_notify; /* -o notify=PROGRAM: below */
struct fop_watch;  /* the array's event handler: below */

/*
 * Mount the filesystem on array @a at @mountpoint and serve it until unmounted
 * or signalled; then unmount cleanly and stop the array. Owns @a from the call on
 * (raid_stop() before return, also on error). Before serving, logs one
 * line with what recovery did when the array or the journal was not clean.
 * @watch (may be NULL: no spare is taken by itself): the event handler the
 * array was assembled with; on a read-write mount its thread rebuilds a lost
 * member onto a spare (after a paused rebuild resumed). Its notifier's counters
 * are shown by status. The caller frees it after this returns.
 * Returns 0 after a clean unmount, else a negative errno (logged).
 */
int fop_serve(struct raid_array *a, const char *mountpoint, const struct fop_opts *o,
	      struct fop_watch *watch);

/* ------------------------------------------------------------------ watch */

/*
 * The event handler of a mounted volume's array (src/fuse/spare.c): hands each
 * event to the notifier (@notify, may be NULL), and on a member lost (Fail,
 * DegradedArray, RebuildFailed) wakes the spare thread of fop_serve(), which
 * takes an idle spare and starts a rebuild onto it. The handler only sets a
 * flag and signals (raid_event_fn: it may not call into the array).
 */
int fop_watch_new(struct fop_notify *notify, struct fop_watch **out);
/* A raid_event_fn (raid_assemble_cfg.event_fn, ctx: the watch): never waits. */
void fop_watch_event(void *ctx, const struct raid_event *ev);
/* After fop_serve() returned (or was never called). NULL: nothing to do. */
void fop_watch_free(struct fop_watch *w);

/* ------------------------------------------------------------------ notify */

/*
 * -o notify=PROGRAM (src/fuse/notify.c): every array event runs
 *	PROGRAM EVENT MOUNTPOINT DEVICE
 * (EVENT as struct raid_event.name: "Fail", "Rebuild40", ...; MOUNTPOINT stands
 * in for mdadm's md device; DEVICE is the member's device, "(missing)" for
 * DegradedArray) in a thread of its own, one run at a time, in order, each
 * reaped. Events that find 64 waiting are dropped and counted.
 */
struct fop_notify_counts {
	uint64_t runs;	  /* programs started */
	uint64_t failed;  /* that could not start, exited non-zero or were killed */
	uint64_t dropped; /* events not run: the queue was full, or the unmount came */
};
/*
 * Check that @program (absolute) is executable and start the thread; @volume is
 * the MOUNTPOINT argument. In background mode, after fop_background_start().
 * 0, or a negative errno after a message.
 */
int fop_notify_start(const char *program, const char *volume, struct fop_notify **out);
/* A raid_event_fn (raid_assemble_cfg.event_fn, ctx: the notifier): queues, never waits. */
void fop_notify_event(void *ctx, const struct raid_event *ev);
void fop_notify_counts_get(struct fop_notify *n, struct fop_notify_counts *out);
/*
 * Run what is queued and stop the thread (a program still running 5 s on is
 * killed); free. After the array stopped. NULL: nothing to do.
 */
void fop_notify_stop(struct fop_notify *n);

/* ------------------------------------------------------------------ ioctls */

#define FOP_IOC_MAGIC 'J'

/* Seeds' SET_RESYNC_ALL: every read of the array resyncs the stripe row it touches. */
#define FOP_IOC_SET_RESYNC_ALL _IO(FOP_IOC_MAGIC, 0x35)
/* Seeds' CLEAR_RESYNC_ALL: back to normal reads. */
#define FOP_IOC_CLEAR_RESYNC_ALL _IO(FOP_IOC_MAGIC, 0x36)
/* Fill a struct fop_status. */
#define FOP_IOC_STATUS _IOR(FOP_IOC_MAGIC, 0x40, struct fop_status)

/*
 * Rebuild a failed or missing member online onto a new device (an existing file
 * or block device at least as large as the others), in a thread of the daemon;
 * the volume stays in use and FOP_IOC_STATUS shows the progress. Root or the
 * user who mounted only. -EBUSY while a rebuild runs; -EINVAL when no member
 * needs one (or the role given does not).
 */
#define FOP_IOC_REPLACE _IOW(FOP_IOC_MAGIC, 0x41, struct fop_replace)
#define FOP_REPLACE_ROLE (1u << 0) /* role is given; else the one failed or missing */
/* jgrfs readd: the device is the member that left, back: only the rows it missed (raid_readd) */
#define FOP_REPLACE_READD (1u << 1)
/*
 * jgrfs readd --fenced: the operator knows that the connection a member lost
 * with writes unanswered is dead (FOP_MEMBER_UNFENCED; raid_readd
 * RAID_READD_FENCED). Without it such a readd fails -EAGAIN.
 */
#define FOP_REPLACE_FENCED (1u << 2)
struct fop_replace {
	uint32_t flags; /* FOP_REPLACE_* */
	uint32_t role;
	char path[1024]; /* the new device, NUL-terminated: an absolute path or an NBD URI */
};

/*
 * Make a device a hot spare of the mounted array (raid_spare_add: its superblock
 * written, role spare): a member lost later is rebuilt onto it without a command;
 * at once if a member is missing now. Remove an idle spare (raid_spare_remove:
 * its superblock wiped). Root or the user who mounted only. Errors as
 * raid_spare_add / raid_spare_remove; the daemon's log says which check refused.
 */
#define FOP_IOC_SPARE_ADD _IOW(FOP_IOC_MAGIC, 0x42, struct fop_spare)
#define FOP_IOC_SPARE_REMOVE _IOW(FOP_IOC_MAGIC, 0x43, struct fop_spare)
struct fop_spare {
	uint32_t flags; /* 0 */
	uint32_t reserved;
	char path[1024]; /* the device, NUL-terminated: an absolute path or an NBD URI */
};

/*
 * Online scrub (issue 23): read every row under the row locks a writer takes,
 * compare parity, with FOP_SCRUB_REPAIR rewrite it, in a thread of the daemon
 * paced to @max_rate and yielding to foreground I/O. Its position is recorded
 * in the member superblocks every few seconds: an unmount (or a crash) pauses
 * it, the next read-write mount resumes it. Each mismatched row and each block
 * no member could give back is logged with the files and metadata that own
 * blocks there; FOP_IOC_STATUS shows progress and the last names. Root or the
 * user who mounted only. START: -EBUSY while one runs, -EROFS, -EAGAIN
 * (degraded: rebuild first). CANCEL: -ENOENT when none runs; the mark is
 * cleared (no resume).
 */
#define FOP_IOC_SCRUB_START _IOW(FOP_IOC_MAGIC, 0x44, struct fop_scrub)
#define FOP_IOC_SCRUB_CANCEL _IO(FOP_IOC_MAGIC, 0x45)
#define FOP_SCRUB_REPAIR (1u << 0) /* rewrite the parity of mismatched rows */
/* with REPAIR: rewrite parity from the data even where the checksums cannot tell
 * which member is wrong (the repair before issue 27; for rows whose files were
 * checked); without it such rows are left and counted (scrub_unresolved) */
#define FOP_SCRUB_TRUST_DATA (1u << 1)
#define FOP_SCRUB_MAX_RATE_DEFAULT (64ull << 20) /* bytes of array data per second */
struct fop_scrub {
	uint32_t flags;	   /* FOP_SCRUB_* */
	uint32_t reserved; /* 0 */
	uint64_t max_rate; /* bytes of array data per second; 0: no limit;
			    * UINT64_MAX: FOP_SCRUB_MAX_RATE_DEFAULT */
};

/*
 * FUSE requests this daemon answered since mount, by kind (issue 28): one
 * counter per handler of src/fuse/ops.c, counted as the handler starts, before
 * it replies. A request the kernel sends that has no handler (access, lseek,
 * copy_file_range, ...) is answered ENOSYS by libfuse and not counted; flush has
 * a handler that counts it and answers the same ENOSYS (V6 of ops.c). Cheap:
 * relaxed atomics, no lock. The values of enum fop_req are fixed (new kinds
 * only at the end): tools index fop_requests.count with them.
 */
enum fop_req {
	FOP_REQ_LOOKUP = 0,
	FOP_REQ_FORGET = 1, /* forget and each inode of a batch forget */
	FOP_REQ_GETATTR = 2,
	FOP_REQ_SETATTR = 3,
	FOP_REQ_READLINK = 4,
	FOP_REQ_MKNOD = 5,
	FOP_REQ_MKDIR = 6,
	FOP_REQ_UNLINK = 7,
	FOP_REQ_RMDIR = 8,
	FOP_REQ_SYMLINK = 9,
	FOP_REQ_RENAME = 10,
	FOP_REQ_LINK = 11,
	FOP_REQ_OPEN = 12,
	FOP_REQ_READ = 13,
	FOP_REQ_WRITE = 14,
	FOP_REQ_FLUSH = 15,
	FOP_REQ_RELEASE = 16,
	FOP_REQ_FSYNC = 17,
	FOP_REQ_OPENDIR = 18,
	FOP_REQ_READDIR = 19,
	FOP_REQ_READDIRPLUS = 20,
	FOP_REQ_RELEASEDIR = 21,
	FOP_REQ_FSYNCDIR = 22,
	FOP_REQ_STATFS = 23,
	FOP_REQ_SETXATTR = 24,
	FOP_REQ_GETXATTR = 25,
	FOP_REQ_LISTXATTR = 26,
	FOP_REQ_REMOVEXATTR = 27,
	FOP_REQ_CREATE = 28,
	FOP_REQ_FALLOCATE = 29,
	FOP_REQ_IOCTL = 30,
	FOP_REQ__COUNT
};
#define FOP_REQUESTS_MAX 64u /* room in struct fop_requests */
_Static_assert(FOP_REQ__COUNT <= FOP_REQUESTS_MAX, "fop_requests.count holds every kind");

/* The answer to FOP_IOC_REQUESTS: fixed size, so that its command number is too. */
struct fop_requests {
	uint32_t version; /* FOP_REQUESTS_VERSION */
	uint32_t nkinds;  /* FOP_REQ__COUNT of the daemon: entries of @count it fills */
	uint64_t count[FOP_REQUESTS_MAX]; /* indexed by enum fop_req; since mount */
};
#define FOP_REQUESTS_VERSION 1u
_Static_assert(sizeof(struct fop_requests) == 520, "fop_requests size");
/*
 * Fill a struct fop_requests (anyone may ask, as for FOP_IOC_STATUS). The
 * ioctl is itself a request: the count it returns includes it.
 */
#define FOP_IOC_REQUESTS _IOR(FOP_IOC_MAGIC, 0x46, struct fop_requests)

/* Version 6: files at risk and lost blocks. Version 7: the online scrub. Version 8:
 * the scrub's blocks rebuilt by their checksums and rows it could not tell.
 * Version 9: the rows a failed member missed, the last rebuild. Version 10:
 * data checksums (FOP_ST_DATA_CSUM, dcsum_*). Version 11: the memory by pool
 * (mem[], mem_*, arena_*, scratch_*). Version 12: the threads that run
 * request handlers (fuse_threads, fuse_ring_entries) and the ring's pool
 * (FOP_MEM_FUSE_RING). */
#define FOP_STATUS_VERSION 12u
#define FOP_STATUS_MEMBERS 32u
#define FOP_STATUS_EVENTS 16u /* room for enum raid_event_kind */
#define FOP_STATUS_SPARES 8u
_Static_assert(RAID_MAX_MEMBERS <= FOP_STATUS_MEMBERS, "fop_status.members holds every member");
_Static_assert(RAID_MAX_SPARES <= FOP_STATUS_SPARES, "fop_status.spares holds every spare");
_Static_assert(RAID_EV__COUNT <= FOP_STATUS_EVENTS, "fop_status.event_counts holds every kind");

/* fop_status_member.flags */
#define FOP_MEMBER_PRESENT (1u << 0)
#define FOP_MEMBER_FAILED (1u << 1)
#define FOP_MEMBER_REBUILDING (1u << 2)
#define FOP_MEMBER_MISSED_KNOWN (1u << 3) /* failed in this run: missed_rows is valid */
/* its connection ended with writes unanswered: readd needs FOP_REPLACE_FENCED */
#define FOP_MEMBER_UNFENCED (1u << 4)

struct fop_status_member {
	char name[64]; /* path the member was opened by */
	uint32_t role;
	uint32_t flags; /* FOP_MEMBER_* */
	uint64_t read_errors_corrected;	    /* reconstructed and rewritten */
	uint64_t read_errors_uncorrectable; /* blocks no other member could give back */
	uint64_t missed_rows; /* FOP_MEMBER_MISSED_KNOWN: rows written since it left (readd) */
};

/* fop_status_spare.flags */
#define FOP_SPARE_REBUILDING (1u << 0) /* taken: being rebuilt onto @role */

struct fop_status_spare {
	char name[64];	/* path it was opened by */
	uint32_t flags; /* FOP_SPARE_* */
	uint32_t role;	/* FOP_SPARE_REBUILDING: the role it takes */
};

/* fop_status.scrub_state */
#define FOP_SCRUB_STATE_IDLE 0u	     /* none since mount */
#define FOP_SCRUB_STATE_RUNNING 1u
#define FOP_SCRUB_STATE_CANCELLED 2u
#define FOP_SCRUB_STATE_DONE 3u
#define FOP_SCRUB_STATE_FAILED 4u
#define FOP_SCRUB_STATE_PAUSED 5u    /* stopped by the unmount: the next mount resumes */

/* One owner of blocks in a row a scrub found wrong: fop_scrub_result.kind */
#define FOP_SCRUB_MISMATCH 1u	/* @row's parity did not match its data */
#define FOP_SCRUB_UNREADABLE 2u /* array block @blkno could not be read */
#define FOP_SCRUB_RESULTS 16u
struct fop_scrub_result {
	uint64_t row;	     /* stripe row */
	uint64_t blkno;	     /* UNREADABLE: the array block; MISMATCH: first block owned */
	uint64_t ino;	     /* owning inode; 0: metadata (@owner_kind says which) */
	uint32_t kind;	     /* FOP_SCRUB_MISMATCH, FOP_SCRUB_UNREADABLE */
	uint32_t owner_kind; /* enum fs_owner_kind */
	uint32_t group;	     /* metadata of a block group: the group */
	uint32_t reserved;
	char path[216];	     /* the owner's first name ("/dir/file"), "" for metadata */
};
_Static_assert(sizeof(struct fop_scrub_result) == 256, "fop_scrub_result size");

/*
 * fop_status.mem[], indexed by enum fop_mem_pool (values fixed: tools index with
 * them): each pool's bytes now, the most since mount (0: not tracked), and the
 * bound the mount's options give it (0: none).
 */
enum fop_mem_pool {
	FOP_MEM_CACHE = 0,	/* the buffer cache (-o cache=): buffers, blocks, hash table */
	FOP_MEM_JNL_COPIES = 1, /* the journal's block copies allocated alone (not in its arena) */
	FOP_MEM_JNL_STAGE = 2,	/* the journal's staging buffers, in use and kept for reuse */
	FOP_MEM_ROW_CACHE = 3,	/* the array's row cache images */
	FOP_MEM_SCRATCH = 4,	/* the array's parity scratch, in use and kept */
	FOP_MEM_FUSE = 5,	/* libfuse's request buffers: the bound only (not counted) */
	FOP_MEM_JNL_ARENA = 6,	/* the journal's arena of data copies: the slabs ever used */
	FOP_MEM_LOG_IMG = 7,	/* the journal's commit and declare images: the bound only */
	FOP_MEM_FUSE_RING = 8,	/* -o uring: the ring entries' buffers (0 without the ring) */
	FOP_MEM__COUNT = 9
};
#define FOP_MEM_POOLS 12u /* room in fop_status.mem */
_Static_assert(FOP_MEM__COUNT <= FOP_MEM_POOLS, "fop_status.mem holds every pool");
struct fop_status_mem {
	uint64_t bytes, peak, bound;
};

/* fop_status.flags */
#define FOP_ST_DEGRADED (1u << 0)	 /* a member is missing or failed */
#define FOP_ST_RESYNC_ALL (1u << 1)	 /* resync-all is on */
#define FOP_ST_JNL_PENDING (1u << 2)	 /* filesystem-guided resync pending (declared mode) */
#define FOP_ST_READONLY (1u << 3)	 /* mounted ro, or turned ro by an error */
#define FOP_ST_JNL_ABORTED (1u << 4)	 /* the journal aborted after an I/O error */
#define FOP_ST_ARRAY_WAS_DIRTY (1u << 5) /* this mount followed an unclean stop */
#define FOP_ST_JNL_WAS_CLEAN (1u << 6)	 /* journal recovery had nothing to do */
#define FOP_ST_REBUILDING (1u << 7)	 /* rebuild_ppm is valid */
#define FOP_ST_NOTIFY (1u << 8)		 /* mounted with notify=: notify_* are valid */
#define FOP_ST_RISK_ALL (1u << 9)	 /* dirty degraded, no record of the rows: any file */
#define FOP_ST_SYNCING (1u << 10)	 /* the initial sync has not ended: sync_* are valid */
#define FOP_ST_DATA_CSUM (1u << 11)	 /* the volume keeps data checksums: dcsum_* are valid */

/*
 * The answer to FOP_IOC_STATUS: fixed size, integers only (no pointers, no
 * doubles), so that a status tool of another build reads it; version first.
 */
struct fop_status {
	uint32_t version; /* FOP_STATUS_VERSION */
	uint32_t size;	  /* sizeof(struct fop_status) */
	uint32_t flags;	  /* FOP_ST_* */
	uint32_t daemon_pid;
	/* the array */
	uint8_t uuid[16];
	uint32_t level; /* 4, 5, 6 */
	uint32_t nmembers;
	uint32_t ndata;	  /* data members per row */
	uint32_t nfailed; /* members missing or failed */
	uint32_t chunk_blocks;
	uint32_t resync_policy; /* enum raid_resync_policy */
	uint64_t array_blocks;
	uint64_t rows;
	uint64_t bitmap_dirty_regions;
	uint64_t events;
	uint32_t rebuild_ppm; /* rebuild progress, parts per million (FOP_ST_REBUILDING) */
	uint32_t data_mode;   /* enum jnl_data_mode */
	/* the journal */
	uint64_t log_blocks;
	uint64_t log_used_blocks;
	uint64_t commits;	 /* since mount */
	uint64_t declare_blocks; /* since mount */
	uint64_t logged_data_blocks; /* since mount: data logged by small commits */
	uint64_t running_tid;
	uint64_t checkpoint_passes; /* since mount: background checkpoint passes done */
	uint64_t checkpoints;	    /* since mount: full checkpoints (log 3/4 full) */
	/* the array device's counters since assembly (struct blk_stats) */
	uint64_t reads, writes, flushes, read_blocks, write_blocks;
	uint64_t syncraid_rows, resync_rows_checked, resync_rows_repaired, bitmap_bits_set;
	/* recovery at this mount: the array's resync (raid_info.last_resync) */
	uint64_t raid_resync_rows_checked;
	uint64_t raid_resync_rows_repaired;
	uint64_t raid_resync_usec;
	/* ... and the journal's (fs_info.recovery) */
	uint64_t rec_transactions_replayed;
	uint64_t rec_blocks_replayed;
	uint64_t rec_blocks_revoked;
	uint64_t rec_declared_blocks_resynced;
	uint64_t rec_log_blocks_resynced;
	uint64_t rec_rows_resynced;
	uint64_t rec_usec;
	uint64_t orphans_freed;
	uint64_t mount_time; /* seconds since the epoch */
	/* array events since mount, indexed by enum raid_event_kind (its values are fixed) */
	uint64_t event_counts[FOP_STATUS_EVENTS];
	/* notify=PROGRAM (FOP_ST_NOTIFY): struct fop_notify_counts */
	uint64_t notify_runs, notify_failed, notify_dropped;
	char label[64];
	struct fop_status_member members[FOP_STATUS_MEMBERS];
	/* hot spares: idle, or taken by a rebuild still running (raid_info.spares) */
	uint32_t nspares;
	uint32_t reserved1;
	struct fop_status_spare spares[FOP_STATUS_SPARES];
	/* a dirty degraded array mounted (force, ro): rows in flight that lack a
	 * member, and the files and metadata in them, each named in the log */
	uint64_t risk_rows, risk_files, risk_metadata;
	/* blocks no member could give back whose owners were named, and the last */
	uint64_t lost_named;
	char lost_last[256];
	/* the initial sync (FOP_ST_SYNCING): rows recorded in sync, rows passed, and
	 * its rate in rows per second (0: not running: degraded, read-only, paused) */
	uint64_t sync_rows, sync_done, sync_rate;
	/* the online scrub of this mount (FOP_IOC_SCRUB_START, or resumed at mount) */
	uint32_t scrub_state; /* FOP_SCRUB_STATE_* */
	uint32_t scrub_flags; /* FOP_SCRUB_* it runs with */
	uint64_t scrub_rows_done, scrub_rows_total;
	uint64_t scrub_mismatches; /* rows, including those found before a resume */
	uint64_t scrub_repaired;
	uint64_t scrub_unreadable; /* blocks no member could give back, met meanwhile */
	uint64_t scrub_rate;	   /* bytes of array data per second, measured */
	uint64_t scrub_max_rate;   /* its limit; 0: none */
	uint64_t scrub_eta;	   /* seconds left at the measured rate; 0: unknown */
	uint64_t scrub_start;	   /* seconds since the epoch */
	uint64_t scrub_end;	   /* ... when it ended; 0: running */
	int32_t scrub_error;	   /* FAILED: the negative errno */
	uint32_t scrub_nresults;   /* entries of scrub_results */
	uint64_t scrub_results_more; /* owners found beyond them */
	struct fop_scrub_result scrub_results[FOP_SCRUB_RESULTS];
	/* the scrub judges each mismatched line by the filesystem's checksums
	 * (src/raid/scrub.c (K1)-(K4)): member blocks rebuilt because they failed
	 * theirs (repair), and rows where nothing told which member is wrong */
	uint64_t scrub_rebuilt;
	uint64_t scrub_unresolved;
	/* the last rebuild that ended whole since mount (replace, spare, readd) */
	uint32_t rebuild_last_flags; /* FOP_REBUILD_LAST_* */
	uint32_t rebuild_last_role;
	uint64_t rebuild_last_rows; /* rows it rebuilt: a readd only those missed */
	uint64_t rebuild_last_usec;
	/* data checksums since mount (FOP_ST_DATA_CSUM; fs_info.data_csum_*): data
	 * blocks that failed theirs and were healed from their row, those nothing
	 * healed (the read got EIO), and the slots recovery settled at this mount */
	uint64_t dcsum_healed, dcsum_errors, dcsum_settled;
	/* the memory the daemon keeps, by pool (issue 46; docs/design/memory.md) */
	struct fop_status_mem mem[FOP_MEM_POOLS];
	uint64_t mem_rss, mem_rss_peak; /* the process: VmRSS, VmHWM, bytes */
	/* the allocator's own figures where it gives them (jemalloc: stats.allocated,
	 * stats.resident), bytes; 0: not known (another allocator) */
	uint64_t mem_allocated, mem_resident;
	/* the journal's arena (fop_status.mem[FOP_MEM_JNL_ARENA]): its slabs, those
	 * in use now, the most in use at once, those ever used */
	uint32_t arena_slabs, arena_slabs_busy, arena_slabs_busy_peak, arena_slabs_touched;
	/* the array's calls holding parity scratch now, the most at once, and
	 * the most a call may hold at once (how its bound is made) */
	uint32_t scratch_calls, scratch_calls_peak;
	uint64_t scratch_call_max;
	/* the threads that run request handlers, the bounds' T: the FUSE workers
	 * (-o threads=) and, while the ring serves requests (-o uring), its
	 * entries, a thread each (0: no ring, or it does not serve) */
	uint32_t fuse_threads, fuse_ring_entries;
};
#define FOP_REBUILD_LAST_DONE (1u << 0)	 /* the rebuild_last_* fields are valid */
#define FOP_REBUILD_LAST_READD (1u << 1) /* it was a readd of only the rows missed */
_Static_assert(sizeof(struct fop_status) < (1u << 14), "fop_status fits an ioctl size field");

#endif /* JGRFS_FOP_H */
