/* SPDX-License-Identifier: MIT */
/*
 * src/fuse/fop_i.h - private to the FUSE daemon: the state every handler sees
 * (the session's userdata) and the pieces ops.c, ioctl.c and daemon.c share.
 */
#ifndef JGRFS_FOP_I_H
#define JGRFS_FOP_I_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

#include "jgrfs/fop.h"
#include "jgrfs/fs.h"

/*
 * One mounted volume. Set up by fop_serve() before the session starts and torn
 * down after it ends; handlers only read the pointers, so no lock guards them
 * (the struct fs and the array are thread-safe themselves).
 */
struct fop_ctx {
	struct fs *fs;
	struct raid_array *array;
	const struct fop_opts *opts;
	struct fuse_session *se;
	struct fop_notify *notify; /* notify=PROGRAM, or NULL: its counters for status */
	/* -o uring: the requests' rings (uring.c), or NULL; set before the
	 * session loop, valid until after it and the ring's threads ended */
	struct fop_uring *uring;
	uid_t owner_uid; /* who mounted: may switch resync-all */
	bool no_open;	 /* the kernel opens files without us (V8 of ops.c); set by init */
	time_t mount_time;
	/* what recovery did at this mount, kept for the status ioctl */
	struct raid_resync_report raid_resync;
	bool array_was_dirty;
	/* a dirty degraded array mounted by force or ro: what may read wrong (risk.c) */
	uint64_t risk_rows, risk_files, risk_metadata;
	bool risk_all;
	/* blocks lost to reads no member could correct, named as met (risk.c) */
	pthread_mutex_t lost_lock;	/* protects the five below */
	uint64_t lost_seq, lost_named;
	uint64_t lost_done[16];		/* blocks named last: a re-read is not named again */
	unsigned int lost_ndone;
	char lost_last[256];		/* the last one named, for status */
	/* online rebuild (FOP_IOC_REPLACE): one at a time, joined before unmount */
	struct jg_mutex rebuild_lock; /* protects the three fields below */
	pthread_t rebuild_thread;
	bool rebuild_started; /* a thread exists (running or finished) and needs a join */
	bool rebuild_running;
	atomic_bool stopping; /* unmount: a running rebuild stops at its next step */
	struct fop_watch *watch; /* the array's event handler, or NULL (spare.c) */
	uint32_t readd_told;	 /* roles whose absence (U4) said; the watch thread's */
	struct fop_isync *isync; /* the initial sync's thread, or NULL (initsync.c) */
	/* online scrub (scrub.c): one at a time, joined before unmount */
	struct jg_mutex scrub_lock; /* protects everything below */
	pthread_cond_t scrub_cond;  /* signalled on cancel and unmount: the pacing sleep ends */
	pthread_t scrub_thread;
	bool scrub_started;	    /* a thread exists and needs a join */
	bool scrub_cancel;	    /* FOP_IOC_SCRUB_CANCEL: stop, clear the mark */
	bool scrub_stop;	    /* unmount: stop, keep the mark */
	struct fop_status st_scrub; /* the scrub_* fields of status, kept here */
	/*
	 * FUSE requests by kind (enum fop_req), for FOP_IOC_REQUESTS. Relaxed
	 * atomics, no lock: each counter only grows, nothing is ordered by it,
	 * and a reader that sees one kind a request behind another is harmless
	 * (a snapshot taken while requests run is approximate anyway).
	 */
	atomic_uint_least64_t requests[FOP_REQ__COUNT];
};

/* Count one request of kind @kind (at the start of its handler). */
static inline void fop_count(struct fop_ctx *c, enum fop_req kind)
{
	atomic_fetch_add_explicit(&c->requests[kind], 1, memory_order_relaxed);
}

/*
 * spare.c: the array's event handler and the spare thread it wakes. @lock is a
 * leaf (the handler takes it under array locks); nothing holding it calls into
 * the array.
 */
struct fop_watch {
	struct fop_notify *notify; /* or NULL */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool lost;    /* a member was lost or a rebuild ended: look for a spare */
	bool stop;    /* unmount: the thread ends */
	bool started; /* the thread runs and needs a join */
	unsigned long looks; /* looks done (fop_watch_try returned), under @lock; read by tests */
	pthread_t thread;
};

/* The FUSE filesystem inode numbers are ours: the root is the same number. */
_Static_assert(FS_ROOT_INO == FUSE_ROOT_ID, "fs root inode is FUSE_ROOT_ID");

extern const struct fuse_lowlevel_ops fop_ops;

/* ioctl.c: the FUSE ioctl handler and the status it reports. */
/*
 * What fop_ioctl_decode() makes of the arguments the kernel hands over: the
 * command, whether it is for root or the mounting user only, and the error its
 * arguments give once that check passed (0: the arguments are usable; then for
 * FOP_IOC_REPLACE @replace, for FOP_IOC_SPARE_* @spare points into the input,
 * its path NUL-terminated and absolute). Pure: no state, no I/O (tests/fuzz/fuzz_fuse_ioctl.c).
 */
struct fop_ioctl_call {
	unsigned int cmd;
	bool privileged;
	int arg_err;
	const struct fop_replace *replace;
	const struct fop_spare *spare; /* FOP_IOC_SPARE_ADD / _REMOVE: path as @replace's */
	const struct fop_scrub *scrub; /* FOP_IOC_SCRUB_START */
	size_t status_bytes;	       /* FOP_IOC_STATUS: bytes of the answer the caller takes */
};
/*
 * 0, or -ENOSYS (a 32-bit caller), -ENOTTY (a command we do not know). A status
 * request of another build (FOP_IOC_STATUS's number with another size) is
 * FOP_IOC_STATUS answered up to that size: the tool reads the version and size
 * first and says they differ, not that this is no jgrfs mount.
 */
int fop_ioctl_decode(unsigned int cmd, unsigned int flags, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz, struct fop_ioctl_call *out);
void fop_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	       struct fuse_file_info *fi, unsigned int flags, const void *in_buf, size_t in_bufsz,
	       size_t out_bufsz);
void fop_status_fill(struct fop_ctx *c, struct fop_status *st);
/* Stop a running online rebuild and wait for its thread (at unmount). */
void fop_rebuild_join(struct fop_ctx *c);
/* risk.c: log the files in the rows the array could not make consistent. */
void fop_name_at_risk(struct fop_ctx *c);
/* risk.c: after a read failed with EIO, log the files of the blocks the array lost. */
void fop_name_lost(struct fop_ctx *c);
/* Resume in the background the rebuild of a member assembled being rebuilt (rw mounts). */
void fop_rebuild_resume(struct fop_ctx *c);
/*
 * Run the rebuild of @role onto @dev (NULL: resume the paused one) in the
 * rebuild thread; with @readd a raid_readd with @readd_flags (RAID_READD_*).
 * Takes @dev whatever it returns. rebuild_lock held, no rebuild running (a
 * finished one reaped).
 */
int fop_rebuild_start_locked(struct fop_ctx *c, unsigned int role, struct blk_dev *dev, bool readd,
			     unsigned int readd_flags);

/* scrub.c: the online scrub thread (FOP_IOC_SCRUB_START / _CANCEL) */
int fop_scrub_start(struct fop_ctx *c, const struct fop_scrub *rq);
int fop_scrub_cancel(struct fop_ctx *c);
/* On a read-write mount: resume a scrub the last unmount or crash interrupted. */
void fop_scrub_resume(struct fop_ctx *c);
/* Stop a running scrub, keeping its mark, and wait for its thread (at unmount). */
void fop_scrub_join(struct fop_ctx *c);
/* Copy the scrub fields into @st. */
void fop_scrub_status(struct fop_ctx *c, struct fop_status *st);

/* spare.c */
/* Wake the spare thread: a member may lack a device and a spare may be idle. */
void fop_watch_kick(struct fop_watch *w);
/* Start the initial sync of a new array in the background (read-write mounts). */
void fop_isync_start(struct fop_ctx *c);
/* Pause it at its mark and join its thread (at unmount). */
void fop_isync_stop(struct fop_ctx *c);
/* Start the spare thread of @c (read-write mounts), after fop_rebuild_resume(). */
void fop_watch_start(struct fop_ctx *c);
/* Stop and join it: before fop_rebuild_join(), so that no rebuild starts after. */
void fop_watch_stop(struct fop_ctx *c);

/* uring.c: FUSE requests over io_uring (-o uring), beside /dev/fuse */
struct fop_uring;
/*
 * Take the session's replies and reads of /dev/fuse (after
 * fuse_session_mount, before the loop): the INIT reply asks for the ring when
 * the kernel offers it, else all stays on /dev/fuse. One session per process.
 * @poll_us: how long an entry's thread looks for the next request before it
 * sleeps (uring.c (R1)); 0: it sleeps at once.
 */
int fop_uring_attach(struct fuse_session *se, unsigned int poll_us, struct fop_uring **out);
/*
 * What the ring holds, for the status (docs/design/memory.md): @entries, its
 * entries while it serves requests, each with a thread that runs request
 * handlers as the FUSE workers do (0: no ring, the kernel did not offer it,
 * its set-up failed, or the kernel refused it and requests went back to
 * /dev/fuse); @bytes, the entries' buffers (a header and FUR_PRE bytes and
 * the payload each) allocated now, and @bound, what they take once all are
 * (0 until the kernel's INIT set the payload's size, and without the ring).
 */
struct fop_uring_mem {
	unsigned int entries;
	uint64_t bytes, bound;
};
/* Fill @out for @u (NULL: all 0). Any thread, lock-free; a snapshot. */
void fop_uring_mem(const struct fop_uring *u, struct fop_uring_mem *out);
/* Stop the queues' threads and free the rings: after the loop, before unmount. NULL: nothing. */
void fop_uring_detach(struct fop_uring *u);

#endif /* JGRFS_FOP_I_H */
