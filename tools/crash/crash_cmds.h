/* SPDX-License-Identifier: MIT */
/*
 * tools/crash/crash_cmds.h - the command jgrfs-crash has beyond jgrfs's
 * (tools/cli/cmds.h): crashtest (tools/crash/cmd_crashtest.c).
 */
#ifndef JGRFS_TOOLS_CRASH_CMDS_H
#define JGRFS_TOOLS_CRASH_CMDS_H

int cmd_crashtest(int argc, char **argv);

#define CRASH_CMDS \
	{ "crashtest", "crash a mounted volume repeatedly and verify recovery", cmd_crashtest }, \
	/* end */

#endif /* JGRFS_TOOLS_CRASH_CMDS_H */
