/* SPDX-License-Identifier: MIT */
/*
 * tools/cmds.h - the subcommands of jgrfs. Adding one: write tools/cmd_<name>.c with
 * int cmd_<name>(int argc, char **argv), declare it here, add a CLI_CMD line, and
 * list the file in tools/meson.build.
 */
#ifndef JGRFS_TOOLS_CMDS_H
#define JGRFS_TOOLS_CMDS_H

/* One line per subcommand, in the order `jgrfs --help` lists them. */
#define CLI_CMDS \
	/* end */

#endif /* JGRFS_TOOLS_CMDS_H */
