/* SPDX-License-Identifier: MIT */
/*
 * tools/crash/crash.h - the crash harness's workload and model (tools/crash/crash_model.c),
 * used by `jgrfs-crash crashtest` (tools/crash/cmd_crashtest.c).
 *
 * The workload is a seeded sequence of file operations on a mounted volume:
 * create, append, overwrite in place, rename, unlink, truncate, fsync, in
 * alternating fsync-heavy and buffered phases, over many small files and a few
 * large ones. Every 512-byte sector it writes is self-describing (file id, write
 * sequence number, sector index, and a fill derived from them), so that after a
 * crash each sector read back is known to be zero, one of the writes made to it,
 * or garbage.
 *
 * The model records, as the workload runs, what the volume must hold after a
 * crash at any point:
 *   (M1) the namespace equals the model's namespace after some operation between
 *        the last change to a file whose fsync was acknowledged and the last
 *        operation issued (the journal commits operations in order, and an fsync
 *        commits the transaction of the file's last change, so every operation
 *        before it; not, as sync would, the operations after it);
 *   (M2) a file that was fsynced holds, in each sector, the value it had at its
 *        last acknowledged fsync or a value written to that sector afterwards;
 *        its size is its size at that fsync or a size it had afterwards --
 *        among them the block-aligned sizes an extending write passes through,
 *        one chunk (handle) at a time: a commit between two chunks (the timer,
 *        a full transaction) makes such a size durable, as POSIX allows a
 *        write cut short by a crash;
 *   (M3) no sector holds bytes never written to that file at that place.
 */
#ifndef JGRFS_TOOLS_CRASH_H
#define JGRFS_TOOLS_CRASH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CT_SECTOR 512u
#define CT_NDIRS 4u

struct ct_model;

/*
 * The file operations the workload and the read-back use, on paths relative to
 * the volume's root ("d2/f17"; "" is the root). 0 or -errno. Two
 * implementations: POSIX calls under a mount (ct_posix_ops) and the filesystem
 * in-process (tools/crash/crash_inproc.c, over include/jgrfs/fs.h).
 */
struct ct_ops {
	void *ctx;
	int (*mkdir)(void *ctx, const char *path);
	/* @create: the file must not exist (O_CREAT|O_EXCL) */
	int (*pwrite)(void *ctx, const char *path, const void *buf, size_t len, uint64_t off,
		      bool create);
	int (*truncate)(void *ctx, const char *path, uint64_t size);
	int (*fsync)(void *ctx, const char *path);	/* a file or a directory */
	int (*rename)(void *ctx, const char *from, const char *to);	/* replaces @to */
	int (*unlink)(void *ctx, const char *path);
	int (*link)(void *ctx, const char *from, const char *to);
	int (*setxattr)(void *ctx, const char *path, const char *name, const void *val,
			size_t len);
	/* -ENODATA when absent; else the value's length (copied up to @len) */
	ssize_t (*getxattr)(void *ctx, const char *path, const char *name, void *val, size_t len);
	/* @fn for each entry but . and ..; @fn returns non-zero to stop with that value */
	int (*readdir)(void *ctx, const char *dir,
		       int (*fn)(void *arg, const char *name, bool isdir), void *arg);
	/* the whole file, in a malloc'd buffer */
	int (*read_file)(void *ctx, const char *path, uint8_t **data, uint64_t *size);
};

/* POSIX calls on paths under @root (a mount); @root must outlive @ops. */
void ct_posix_ops(struct ct_ops *ops, const char *root);

/* A file as found on the volume after recovery. */
struct ct_found {
	char path[64];		/* "d2/f17", relative to the mount */
	uint64_t size;
	uint8_t *data;		/* size bytes */
	char xattr[32];		/* the value of user.ct, "" when absent */
};

struct ct_tree {
	struct ct_found *files;
	unsigned int n, cap;
};

int ct_model_new(uint64_t seed, unsigned int nops, struct ct_model **out);
void ct_model_free(struct ct_model *m);

/*
 * Run the workload through @ops, in the calling thread. @progress is advanced
 * (atomically) before each operation starts, so another thread can crash the
 * volume at a chosen operation; that thread sets *@cut (atomically) before it
 * cuts the power, and from then on no fsync counts as durable, even if the
 * dying daemon acknowledges it. Stops at the first failed call (the daemon
 * died): that operation counts as issued. Returns the number of operations
 * completed.
 */
unsigned int ct_workload_run_ops(struct ct_model *m, const struct ct_ops *ops,
				 unsigned int *progress, const bool *cut);
/* The same on the volume mounted at @mnt (POSIX). */
unsigned int ct_workload_run(struct ct_model *m, const char *mnt, unsigned int *progress,
			     const bool *cut);
/* Make the directories d0..d3 and fsync them (before the crash window). */
int ct_workload_setup_ops(const struct ct_ops *ops);
int ct_workload_setup(const char *mnt);

/* Read every file under the d* directories into @t. 0 or -errno. */
int ct_tree_read_ops(const struct ct_ops *ops, struct ct_tree *t);
int ct_tree_read_dir(const char *root, struct ct_tree *t);
void ct_tree_free(struct ct_tree *t);
/* Add a file to @t (takes @data). */
int ct_tree_add(struct ct_tree *t, const char *path, uint8_t *data, uint64_t size);

/*
 * Check @t against (M1)-(M3). Writes a one-line reason into @why (>= 256 bytes)
 * on failure. Returns 0 when consistent, 1 when not.
 */
int ct_model_check(const struct ct_model *m, const struct ct_tree *t, char *why);
/* The same, the content of the files named in @skip (paths as in struct ct_found)
 * not compared: files a forced degraded recovery names at risk (the write hole). */
int ct_model_check_skip(const struct ct_model *m, const struct ct_tree *t,
			const char *const *skip, unsigned int nskip, char *why);

/* Everything the check compares, for a failure's log. */
void ct_model_dump(const struct ct_model *m, const struct ct_tree *t, FILE *out);

/* Operations issued / acknowledged fsyncs, for the report. */
unsigned int ct_model_issued(const struct ct_model *m);
unsigned int ct_model_fsyncs(const struct ct_model *m);

#endif /* JGRFS_TOOLS_CRASH_H */
