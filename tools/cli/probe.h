/* SPDX-License-Identifier: MIT */
/*
 * tools/cli/probe.h - look before writing (issue 44): every command that writes
 * a member superblock (mkfs, create, spare add, replace, rebuild --new) first
 * looks at each device it will write, and checks the member list as a whole,
 * so that a refusal leaves every device's bytes as they were.
 *
 *	probe_dev()      what a device holds: a jgrfs member of another array, any
 *	                 filesystem, RAID, LVM, swap or partition-table signature
 *	                 libblkid knows; refused unless the command's --force
 *	probe_distinct() the same file or device named twice
 *	probe_create()   both, then sizes and geometry, for mkfs and create
 */
#ifndef JGRFS_TOOLS_PROBE_H
#define JGRFS_TOOLS_PROBE_H

#include <stdbool.h>
#include <stdint.h>

struct cli_raid_opts;
struct fs_mkfs_opts;

/* What a command tells probe_dev() about the device it will write. */
struct probe_cfg {
	bool force;		/* report what is found ("overwriting ...") and go on */
	const char *force_opt;	/* the option a refusal names: "--force" */
	/* the array the device joins (rebuild --new, replace, spare add); its own
	 * member superblocks pass: the engine judges those. NULL: a new array, any
	 * jgrfs superblock is another array's. */
	const uint8_t *uuid;
	/* this process will not lock the device (a daemon opens it): refuse one
	 * that another process holds, --force or not, unless it is of @uuid */
	bool check_lock;
	/* a member of another jgrfs array is refused even with force: the daemon
	 * refuses it (spare add); the message says jgrfs wipe */
	bool other_array_final;
};

/*
 * Look at @path (a file, block device or NBD URI) before it is written: a jgrfs
 * member superblock (either copy) of another array than cfg->uuid, damaged or
 * not; a block device the system holds (mounted, an MD or LVM member: O_EXCL);
 * and, except on a member of cfg->uuid, every filesystem, RAID, LVM, swap,
 * crypto or partition-table signature libblkid finds, named with its label,
 * UUID and offset. An NBD export is probed from its first and last MiB. A
 * path that does not exist holds nothing. Sets *@bytes to the device's size
 * (0 when missing) when @bytes is not NULL.
 * Returns 0 (nothing found, or forced: said on stderr unless -q), 1 refused
 * after a message per finding, 2 after a message when it cannot be read.
 */
int probe_dev(const char *path, const struct probe_cfg *cfg, uint64_t *bytes);

/*
 * Refuse a list naming one device twice: the same file by any path (symlink,
 * hard link: device and inode), the same block device, a partition and its
 * disk, a loop device and its backing file (or two loops over one file), the
 * same NBD URI. 0, or 1 after a message naming both.
 */
int probe_distinct(char **paths, int n);

/*
 * mkfs (@fo set) and create (@fo NULL), before anything is written: the
 * members and spares distinct, each probed (probe_dev, @force), the members of
 * equal size unless --size or @force, spares at least as large, and the array
 * large enough for a stripe row and, with @fo, for the filesystem: a refusal
 * states the size each member needs. May set ro->cfg->member_blocks (--size).
 * Returns 0, or the exit code after a message: 1 a bad member list, 2 refused.
 */
int probe_create(char **paths, int n, struct cli_raid_opts *ro, bool force,
		 const struct fs_mkfs_opts *fo);

/*
 * The jgrfs member superblock of @path (a file, device or URI), either copy,
 * of whatever array: 0 and its array's @uuid and @role (RAID_ROLE_SPARE for a
 * spare) and @nmembers; -ENOENT none (or a missing file); -EUCLEAN one whose
 * checksum fails (no uuid to trust); -errno unreadable, after a message.
 */
int probe_jgrfs_sb(const char *path, uint8_t uuid[16], uint32_t *role, uint32_t *nmembers);

#endif /* JGRFS_TOOLS_PROBE_H */
