/* SPDX-License-Identifier: MIT */
/*
 * tools/cli/raidcli.h - what the array subcommands (create, examine, scrub, rebuild)
 * share beyond tools/cli/cli.h: option tables, opening and assembling members with
 * messages that name the devices, the array summary, JSON strings.
 */
#ifndef JGRFS_TOOLS_RAIDCLI_H
#define JGRFS_TOOLS_RAIDCLI_H

#include <getopt.h>
#include <stdio.h>

#include "jgrfs/raid.h"

/* struct raid_info describes at most this many members. */
#define RAIDCLI_MAX_MEMBERS RAID_MAX_MEMBERS

/*
 * Fill @out (room for @room entries) with cli_raid_longopts followed by @extra,
 * both zero-terminated; the result is zero-terminated. Entries that do not fit
 * are dropped (callers pass a table far larger than needed).
 */
void raidcli_longopts(struct option *out, int room, const struct option *extra);

/*
 * Open the @n members named by @paths (cli_open_members: io_uring, O_DIRECT,
 * cli_member_hook) and assemble them with @cfg. On failure prints why, naming
 * the devices, closes them and returns the negative errno; on success the array
 * owns the member devices and raidcli_stop() releases everything.
 */
int raidcli_assemble(char **paths, int n, const struct raid_assemble_cfg *cfg,
		     struct blk_dev **devs, struct raid_array **out);

/* Why raid_assemble() failed with @rc, in words; the engine's log line names the device. */
const char *raidcli_assemble_why(int rc);

/*
 * `create` and `mkfs` (@fo: the filesystem to come, NULL for create): check the
 * member count for @cfg's level and everything probe_create() checks (what the
 * devices hold, the list, sizes; tools/cli/probe.h) before anything is
 * written, then open @paths (creating missing files at ro->size_bytes) and
 * write a new array over them. Returns 0 with @devs open, or prints why,
 * closes what it opened and returns the exit code (1: bad arguments, 2: the
 * array could not be made or was refused).
 */
struct fs_mkfs_opts;
int raidcli_create(char **paths, int n, struct cli_raid_opts *ro, bool force,
		   const struct fs_mkfs_opts *fo, struct blk_dev **devs);

/* raid_stop() then what cli_member_hook put under the members, if any. Returns raid_stop's rc. */
int raidcli_stop(struct raid_array *a, struct blk_dev **devs, int n);

/* The geometry lines shared by create and examine: level, members, chunk, sizes, policy, UUID. */
void raidcli_summary_print(FILE *f, const struct raid_info *info);

/* Undo /proc/self/mountinfo's octal escapes (\040 a space, \011, \012, \134) in place. */
void raidcli_unescape(char *s);

/* @s as a JSON string with quotes and escapes. */
void raidcli_json_str(FILE *f, const char *s);

/* "RAID5", "RAID6", "RAID4" into @buf (at least 8 bytes). */
const char *raidcli_level_name(unsigned int level, char *buf, size_t len);

/* What one member's superblock says, as raidcli_sb_read() found it. */
struct raidcli_sb {
	uint32_t role;		/* 0 .. nmembers-1; meaningless for a spare */
	uint32_t nmembers;
	bool spare;		/* a hot spare: holds no data */
	uint64_t events;	/* the event count of the copy taken */
	bool clean;		/* state RAID_STATE_CLEAN: shut down cleanly */
};

/*
 * Read the superblock of the member open at @fd (blocks 0 and 1: both copies,
 * @fd may be O_DIRECT) and verify it as assembly and `jgrfs examine` do
 * (jg_blk_check: magic, crc seeded from @uuid, version, home address); the
 * newer valid copy wins. Returns 0 and fills @out; -ENOENT, without a message,
 * when no copy holds a superblock of array @uuid (another file, another
 * array); -EUCLEAN when one claims to and does not verify (logged, naming
 * @name); -errno when the read fails.
 */
int raidcli_sb_read(int fd, const char *name, const uint8_t uuid[16], struct raidcli_sb *out);
/* The same through a device (an NBD member, raid_dev_nbd_open). */
int raidcli_sb_read_dev(struct blk_dev *dev, const char *name, const uint8_t uuid[16],
			struct raidcli_sb *out);

/*
 * FOP_IOC_STATUS on @fd, open on the root of the volume mounted at @mnt, into
 * @st (zeroed first). Returns 0, or -errno after a message: "@mnt: not a jgrfs
 * mount" when the filesystem there does not know the ioctl, else "@mnt:
 * @what<why>". The caller checks st->version if it reads more than that the
 * answer came (`jgrfs sync` only tells a jgrfs mount from another).
 */
struct fop_status;
int raidcli_status_ioctl(int fd, const char *mnt, const char *what, struct fop_status *st);

#endif /* JGRFS_TOOLS_RAIDCLI_H */
