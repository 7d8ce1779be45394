/* SPDX-License-Identifier: MIT */
/*
 * tools/cli/cmds.h - the subcommands of jgrfs. Adding one: write
 * tools/cli/cmd_<name>.c (a benchmark: tools/bench/) with int cmd_<name>(int
 * argc, char **argv), declare it here, add a CLI_CMD line, and list the file in
 * the meson.build of its folder.
 */
#ifndef JGRFS_TOOLS_CMDS_H
#define JGRFS_TOOLS_CMDS_H

int cmd_bench(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_resync(int argc, char **argv);
int cmd_replace(int argc, char **argv);
int cmd_readd(int argc, char **argv); /* in cmd_replace.c */
int cmd_spare(int argc, char **argv);

/* the array: tools/cli/cmd_{create,examine,scrub,rebuild,wipe}.c, tools/bench/cmd_bench_raid.c */
int cmd_create(int argc, char **argv);
int cmd_examine(int argc, char **argv);
int cmd_scrub(int argc, char **argv);
int cmd_scrub_online(int argc, char **argv); /* cmd_scrub with a mount point */
int cmd_rebuild(int argc, char **argv);
int cmd_wipe(int argc, char **argv);
int cmd_bench_raid(int argc, char **argv);

/* the filesystem: tools/cli/cmd_{mkfs,fsck,owners}.c, tools/bench/cmd_bench_fs.c */
int cmd_mkfs(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_owners(int argc, char **argv);
int cmd_bench_fs(int argc, char **argv);

/* the journal: tools/bench/cmd_bench_jnl.c */
int cmd_bench_jnl(int argc, char **argv);

/* One line per subcommand, in the order `jgrfs --help` lists them. */
#define CLI_CMDS \
	{ "mkfs", "create an array and a filesystem on it (mkfs.jgrfs)", cmd_mkfs }, \
	{ "mount", "mount a volume through FUSE (daemon)", cmd_mount }, \
	{ "umount", "unmount a volume, wait for its daemon, check the array is clean", cmd_umount }, \
	{ "status", "state of a mounted volume: array, journal, recovery", cmd_status }, \
	{ "sync", "make a mounted volume durable now (sync(1) does not reach FUSE)", cmd_sync }, \
	{ "fsck", "check (-n) or repair (-y) the filesystem of an array (fsck.jgrfs)", cmd_fsck }, \
	{ "owners", "name the files and metadata in array blocks or stripe rows", cmd_owners }, \
	{ "resync-all", "switch resync-all on or off on a mounted volume", cmd_resync }, \
	{ "replace", "rebuild a failed member of a mounted volume online", cmd_replace }, \
	{ "readd", "bring back a member that left, resyncing only the rows it missed", cmd_readd }, \
	{ "spare", "add or remove a hot spare of a mounted volume", cmd_spare }, \
	{ "create", "create a RAID4/5/6 array over member files or devices", cmd_create }, \
	{ "examine", "show the member superblocks of an array (read-only)", cmd_examine }, \
	{ "scrub", "check (and --repair) the parity of every stripe row, online or not", cmd_scrub }, \
	{ "rebuild", "reconstruct a missing or failed member onto a new device", cmd_rebuild }, \
	{ "wipe", "remove the jgrfs superblocks of devices no array should use again", cmd_wipe }, \
	{ "bench", "what crash protection costs: throughput and recovery, by mode", cmd_bench }, \
	{ "bench raid", "measure array throughput against the raw members", cmd_bench_raid }, \
	{ "bench jnl", "journal commit throughput per data mode; declared recovery time", cmd_bench_jnl }, \
	{ "bench fs", "filesystem throughput in-process, per data mode", cmd_bench_fs }, \
	/* end */

#endif /* JGRFS_TOOLS_CMDS_H */
