/* SPDX-License-Identifier: MIT */
/*
 * tools/cli/scan.h - assembly by UUID (issue 44): find the members and hot
 * spares of an array among the block devices and the files a config file
 * names, instead of a list typed by hand where a member or spare left out is
 * simply absent.
 *
 * The config file (/etc/jgrfs.conf; $JGRFS_CONF or --config FILE instead) has
 * one ARRAY line per array, as mdadm.conf:
 *	# comment
 *	ARRAY UUID=<uuid> DEVICES=/srv/a.img,/srv/b.img,/srv/jg/d?.img
 * DEVICES are paths or globs; an ARRAY line without UUID= applies to every
 * array. Each device found is verified as assembly does (raidcli_sb_read):
 * only a superblock of the array asked for counts.
 */
#ifndef JGRFS_TOOLS_SCAN_H
#define JGRFS_TOOLS_SCAN_H

#include <stdint.h>

#define SCAN_CONF_DEFAULT "/etc/jgrfs.conf"

/* --config FILE of the command; NULL: $JGRFS_CONF, else SCAN_CONF_DEFAULT. */
extern const char *scan_config;

/*
 * "UUID=<uuid>" (36 characters with dashes, as `jgrfs examine` prints it, or
 * 32 hex digits): 1 with @uuid set; 0 when @arg is not of that form; -EINVAL,
 * said, when the UUID after "UUID=" is malformed.
 */
int scan_uuid_arg(const char *arg, uint8_t uuid[16]);

/*
 * Find every device holding a member or spare superblock of array @uuid: the
 * block devices (/sys/class/block, size not 0), then the DEVICES of the
 * config file's ARRAY lines for it; one device reached twice (a glob of /dev
 * and the block scan) counts once. Says on stderr each device taken, each
 * config device skipped and why (a block device skipped only with -v).
 * Fills @paths (at most @max; the strings live until the next call) and
 * returns their count, or says why and returns -errno: -ENOENT none found,
 * -EEXIST two devices claim one role (both named), -E2BIG more than @max.
 */
int scan_resolve(const uint8_t uuid[16], char **paths, int max);

/*
 * For a command taking DEV...: when the @n args at *@paths are one
 * "UUID=<uuid>", resolve it into @found (room for @max) and point *@paths at
 * it. Returns the device count (unchanged @n otherwise), or -1 once said why.
 */
int scan_args(char ***paths, int n, char **found, int max);

/*
 * A mount given its members by path: each hot spare of their array that the
 * config file lists (when there is one) and @paths leave out gets a warning
 * naming it. Quiet when no config file exists.
 */
void scan_warn_spares(char **paths, int n);

/*
 * `jgrfs examine --scan`: one line per array found on the block devices and
 * in the config file: UUID, level, roles found of how many, spares, devices.
 * Returns the exit code: 0 one or more listed, 2 none found.
 */
int scan_list(void);

#endif /* JGRFS_TOOLS_SCAN_H */
