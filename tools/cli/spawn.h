/* SPDX-License-Identifier: MIT */
/*
 * tools/cli/spawn.h - run this program's own subcommands as child processes: mkfs,
 * fsck and scrub to completion, the daemon (`jgrfs mount -f`) until its mount
 * appears. Shared by `jgrfs-crash crashtest` and `jgrfs bench`, which drive the real
 * daemon exactly as a user would.
 */
#ifndef JGRFS_TOOLS_SPAWN_H
#define JGRFS_TOOLS_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

/* This program's path (/proc/self/exe) into @self (PATH_MAX). 0 or -errno. */
int sp_self(char *self, size_t len);

/*
 * Run @self with @argv (NULL-terminated; argv[0] is only a name), stdout and
 * stderr appended to @log. Returns the exit code, 128 + signal, or -errno.
 */
int sp_run(const char *self, const char *log, char *const argv[]);

/* true when @mnt is a mount point (its device differs from its parent's). */
bool sp_is_mounted(const char *mnt);

/*
 * Start `@self [@pre...] mount -f -o @opts @members... @mnt`, output to @log,
 * and wait (up to @timeout_s) until the mount appears. @pre (NULL-terminated,
 * or NULL) goes before the subcommand: the fault options of jgrfs-crash
 * (tools/crash/faults.h) when @self is that program. Returns the daemon's pid
 * and the seconds it took in @seconds, or -ECHILD (the daemon exited: see the
 * log), -ETIMEDOUT, -errno.
 */
pid_t sp_mount(const char *self, const char *opts, char *const members[], unsigned int n,
	       const char *mnt, const char *log, char *const pre[], double timeout_s,
	       double *seconds);

/* Clean unmount and wait for the daemon: 0 when it exited 0, else negative. */
int sp_umount(const char *mnt, pid_t pid);

/* kill -9 of the daemon, then detach its dead mount. */
void sp_crash(const char *mnt, pid_t pid);

#endif /* JGRFS_TOOLS_SPAWN_H */
