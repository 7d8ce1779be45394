// SPDX-License-Identifier: MIT
/*
 * tools/cli/spawn.c - child processes of the jgrfs program (tools/cli/spawn.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "jgrfs/base.h"
#include "spawn.h"

int sp_self(char *self, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", self, len - 1);

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	return 0;
}

/* In the child: send output to @log, then become @self @argv. */
static void sp_exec(const char *self, const char *log, char *const argv[])
{
	FILE *f = freopen(log, "a", stdout);

	if (f)
		dup2(fileno(stdout), STDERR_FILENO);
	execv(self, argv);
	_exit(127);
}

int sp_run(const char *self, const char *log, char *const argv[])
{
	pid_t pid;
	int st;

	fflush(NULL); /* else the child's freopen writes our buffered output again */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		sp_exec(self, log, argv);
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool sp_is_mounted(const char *mnt)
{
	char parent[4200];
	struct stat a, b;

	snprintf(parent, sizeof(parent), "%s/..", mnt);
	return !stat(mnt, &a) && !stat(parent, &b) && a.st_dev != b.st_dev;
}

pid_t sp_mount(const char *self, const char *opts, char *const members[], unsigned int n,
	       const char *mnt, const char *log, char *const pre[], double timeout_s,
	       double *seconds)
{
	char *argv[8 + 8 + CLI_MAX_DEVICES];
	unsigned int a = 0;
	double t0 = jg_now_seconds();
	pid_t pid;

	if (n > CLI_MAX_DEVICES)
		return -EINVAL;
	argv[a++] = "jgrfs";
	for (unsigned int i = 0; pre && pre[i]; i++) {
		if (i == 8)
			return -EINVAL;
		argv[a++] = pre[i];
	}
	argv[a++] = "mount";
	argv[a++] = "-f";
	argv[a++] = "-o";
	argv[a++] = (char *)opts;
	for (unsigned int i = 0; i < n; i++)
		argv[a++] = members[i];
	argv[a++] = (char *)mnt;
	argv[a] = NULL;

	fflush(NULL); /* else the child's freopen writes our buffered output again */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		sp_exec(self, log, argv);
	while (jg_now_seconds() - t0 < timeout_s) {
		int st;

		if (sp_is_mounted(mnt)) {
			*seconds = jg_now_seconds() - t0;
			return pid;
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -ECHILD;
		usleep(2000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	umount2(mnt, MNT_DETACH);
	return -ETIMEDOUT;
}

int sp_umount(const char *mnt, pid_t pid)
{
	int st;

	if (umount2(mnt, 0)) {
		int rc = -errno;

		sp_crash(mnt, pid);
		return rc;
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

void sp_crash(const char *mnt, pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	umount2(mnt, MNT_DETACH);
}
