/* SPDX-License-Identifier: MIT */
/*
 * tools/crash/faults.h - the fault layer of jgrfs-crash: power cuts and
 * unreadable blocks under the members of a real command (the daemon, rebuild),
 * switched on by jgrfs-crash's own options and by nothing else. The installed
 * jgrfs does not contain this file's code (tools/cli/cli.h, cli_member_hook).
 *
 * --powercut "after=N|signal[,seed=S][,keep=P][,tear][,flushes][,linger=MS]"
 *   wraps the members of each open in one fault domain: the power goes at
 *   member write N (with flushes, at member write or flush N:
 *   raid_fault_cfg.cut_at_flushes), or when the process receives SIGUSR1
 *   (foreground processes only: the waiter thread does not survive a fork);
 *   with linger=MS the process runs on MS milliseconds while each member write
 *   is kept, dropped or torn at random (raid_fault_cfg.chaos_after_cut). When
 *   the power is cut the process kills itself with SIGKILL, on the spot or
 *   after the linger (raid_fault_cfg.on_cut), as a machine dies: nothing it
 *   does after the cut (acknowledging an fsync) can be seen.
 * --badblocks "I:B[,I:B...]"
 *   reads of member block B of the I-th member given (0-based) fail with -EIO
 *   (raid_dev_fault_fail_block), writes work.
 * --opoints FILE
 *   at a power cut, append the ordering points in flight to FILE, one line
 *   "opoints 0x<mask>" (tools/crash/opcov.h), for crashtest's coverage table.
 */
#ifndef JGRFS_TOOLS_CRASH_FAULTS_H
#define JGRFS_TOOLS_CRASH_FAULTS_H

#define CRASH_FAULTS_POWERCUT_SYNTAX \
	"after=N|signal[,seed=S][,keep=P][,tear][,flushes][,linger=MS]"
#define CRASH_FAULTS_BADBLOCKS_SYNTAX "MEMBER_INDEX:MEMBER_BLOCK[,...]"

/*
 * Check and keep the faults (each NULL when not given) and set cli_member_hook
 * so that every cli_open_members() from now on puts them under its members.
 * A power cut on a signal is armed here, before the program starts a thread.
 * Returns 0, or prints why and returns -EINVAL (a bad spec) or -errno.
 */
int crash_faults_set(const char *powercut, const char *badblocks, const char *opoints);

#endif /* JGRFS_TOOLS_CRASH_FAULTS_H */
