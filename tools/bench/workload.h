/* SPDX-License-Identifier: MIT */
/*
 * tools/bench/workload.h - the file workloads of `jgrfs bench`, written once over a
 * small table of file operations so that the same code drives a FUSE mount
 * (POSIX calls) and the filesystem in-process (fs.h), which separates the cost
 * of FUSE from the engine's.
 *
 *   seqwrite    1 MiB writes to one file, then fsync                 MB/s
 *   randfsync   4 KiB writes at random places of a 64 MiB file, each
 *               followed by fsync                                     ops/s
 *   randbuf     4 KiB writes at random places of a 256 MiB file, one
 *               fsync at the end (counted in the time)                ops/s
 *   creates     10,000 files of 4 KiB in 100 directories, then sync   files/s
 *   mixed       a file server: 64 files of 4 MiB, 70% reads and 30%
 *               writes of 4 KiB-1 MiB, fsync every 64 writes          MB/s
 */
#ifndef JGRFS_TOOLS_WORKLOAD_H
#define JGRFS_TOOLS_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* File operations; @h is a file handle (an fd, or an inode number). 0 / -errno. */
struct wl_ops {
	void *ctx;
	int (*mkdir)(void *ctx, const char *path);
	int (*create)(void *ctx, const char *path, uint64_t *h);	/* O_CREAT|O_TRUNC */
	int (*open)(void *ctx, const char *path, uint64_t *h);
	ssize_t (*pwrite)(void *ctx, uint64_t h, const void *buf, size_t len, uint64_t off);
	ssize_t (*pread)(void *ctx, uint64_t h, void *buf, size_t len, uint64_t off);
	int (*fsync)(void *ctx, uint64_t h);
	int (*close)(void *ctx, uint64_t h);
	int (*sync)(void *ctx);					/* everything durable */
};

enum wl_kind { WL_SEQWRITE, WL_RANDFSYNC, WL_RANDBUF, WL_CREATES, WL_MIXED, WL_NKINDS };

struct wl_params {
	double seconds;		/* time-based workloads run this long */
	uint64_t seq_bytes;	/* seqwrite: bytes written */
	unsigned int files;	/* creates: files made */
	uint64_t seed;
};

struct wl_result {
	double value;		/* in the unit of wl_unit() */
	double seconds;
	uint64_t bytes, ops;
};

const char *wl_name(enum wl_kind k);
const char *wl_unit(enum wl_kind k);	/* "MB/s", "ops/s", "files/s" */
/* -1 for an unknown name */
int wl_parse(const char *name);

/* Run one workload in a fresh directory @dir (created) of @ops. 0 or -errno. */
int wl_run(enum wl_kind k, const struct wl_ops *ops, const char *dir, const struct wl_params *p,
	   struct wl_result *res);

/* POSIX operations on paths relative to @root (a mount point). */
void wl_posix_ops(struct wl_ops *ops, const char *root);

#endif /* JGRFS_TOOLS_WORKLOAD_H */
