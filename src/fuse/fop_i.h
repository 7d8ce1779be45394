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
	uid_t owner_uid; /* who mounted: may switch resync-all */
	time_t mount_time;
	/* what recovery did at this mount, kept for the status ioctl */
	struct raid_resync_report raid_resync;
	bool array_was_dirty;
	/* a dirty degraded array mounted by force or ro: what may read wrong (risk.c) */
	uint64_t risk_rows, risk_files, risk_metadata;
	bool risk_all;
	/* online rebuild (FOP_IOC_REPLACE): one at a time, joined before unmount */
	pthread_mutex_t rebuild_lock; /* protects the three fields below */
	pthread_t rebuild_thread;
	bool rebuild_started; /* a thread exists (running or finished) and needs a join */
	bool rebuild_running;
	atomic_bool stopping; /* unmount: a running rebuild stops at its next step */
};

/* The FUSE filesystem inode numbers are ours: the root is the same number. */
_Static_assert(FS_ROOT_INO == FUSE_ROOT_ID, "fs root inode is FUSE_ROOT_ID");

extern const struct fuse_lowlevel_ops fop_ops;

/* ioctl.c: the FUSE ioctl handler and the status it reports. */
/*
 * What fop_ioctl_decode() makes of the arguments the kernel hands over: the
 * command, whether it is for root or the mounting user only, and the error its
 * arguments give once that check passed (0: the arguments are usable; then for
 * FOP_IOC_REPLACE @replace points into the input, its path NUL-terminated and
 * absolute). Pure: no state, no I/O (tests/fuzz/fuzz_fuse_ioctl.c).
 */
struct fop_ioctl_call {
	unsigned int cmd;
	bool privileged;
	int arg_err;
	const struct fop_replace *replace;
};
/* 0, or -ENOSYS (a 32-bit caller), -ENOTTY (a command we do not know). */
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
/* Resume in the background the rebuild of a member assembled being rebuilt (rw mounts). */
void fop_rebuild_resume(struct fop_ctx *c);

#endif /* JGRFS_FOP_I_H */
