/* SPDX-License-Identifier: MIT */
/*
 * tools/cli/raidcli.h - what the subcommands share beyond tools/cli/cli.h: option
 * tables and the options all take, one way to open an array (the member list,
 * lock, open and assembly with messages that name the devices; open.c), the
 * array summary, JSON strings, the status ioctl.
 */
#ifndef JGRFS_TOOLS_RAIDCLI_H
#define JGRFS_TOOLS_RAIDCLI_H

#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "jgrfs/raid.h"

/* struct raid_info describes at most this many members. */
#define RAIDCLI_MAX_MEMBERS RAID_MAX_MEMBERS

/*
 * Fill @out (room for @room entries) with cli_raid_longopts followed by @extra,
 * both zero-terminated; the result is zero-terminated. Entries that do not fit
 * are dropped (callers pass a table far larger than needed).
 */
void raidcli_longopts(struct option *out, int room, const struct option *extra);

/* ---------------------------------------------------- Opening an array
 * (tools/cli/open.c) One way for every command to reach an array's members:
 * the options all take, the member list, the count, the lock, the open, the
 * assembly and its messages, the stop. Separate calls, as a command may do
 * its own work between two; each refusal comes before the first write.
 */

/* Help lines of -v, -q, --wait and -h, in the columns of create, mkfs, scrub, rebuild. */
#define RAIDCLI_COMMON_HELP \
	"  -v, --verbose            also the engine's own lines; -vv: everything\n" \
	"  -q, --quiet              errors only: no warnings, no progress\n" \
	"      --wait               when a member is in use by another jgrfs process\n" \
	"                           (a mount being stopped, an fsck), wait for it\n" \
	"  -h, --help               this text\n"

/*
 * getopt_long() over the options every command takes: -h prints @help and
 * returns RAIDCLI_OPT_HELP (the command exits 0); -v and -q (the verbosity,
 * cli_verbosity_opt) and --wait (cli_lock_wait) are taken here and not
 * returned; any other option, '?' and -1 come back as getopt_long returns them.
 */
#define RAIDCLI_OPT_HELP (-2)
/* The end of such a command's longopts: -h, -v, -q, --wait, then the zero entry. */
#define RAIDCLI_COMMON_LONGOPTS \
	{ "help", no_argument, NULL, 'h' }, CLI_VERBOSITY_LONGOPTS, CLI_WAIT_LONGOPT, \
	{ NULL, 0, NULL, 0 }
int raidcli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		   const char *help);

/*
 * The members a command is given as arguments: each a device, or a list
 * (cli_member_list(): "members=DEV1:DEV2:..." or "DEV1:DEV2:...", the fstab's
 * first field, which fsck(8) passes); one "UUID=<uuid>" is resolved into the
 * devices found (scan_args(), the config file of scan.h).
 */
struct raidcli_members {
	char *paths[RAIDCLI_MAX_MEMBERS];
	char *lists[RAIDCLI_MAX_MEMBERS]; /* copies of the list arguments, split */
	char *found[RAIDCLI_MAX_MEMBERS]; /* UUID=<uuid>: the devices found (scan.h) */
	int n, nlists;
};

/*
 * Fill @m (zeroed by the caller) from the @argc arguments @argv. Returns 0;
 * @usage_code after a usage error (none given, more than
 * RAIDCLI_MAX_MEMBERS); @error_code after a message (out of memory, UUID=
 * not resolved). raidcli_members_free() releases the lists, also on error.
 */
int raidcli_members_parse(struct raidcli_members *m, char **argv, int argc, int usage_code,
			  int error_code);
void raidcli_members_free(struct raidcli_members *m);

/* More than RAIDCLI_MAX_MEMBERS members: says so and returns -EINVAL; else 0. */
int raidcli_count_check(int n);

/*
 * One array a command opens. The command fills the first part (zero: an
 * exclusive lock, raid_assemble's defaults); the calls fill the rest.
 */
struct raidcli_array {
	char **paths;		/* the members, then @nextra devices more */
	int n;			/* members: the first @n of @paths are assembled */
	int nextra;		/* opened with the members (one fault domain under
				 * jgrfs-crash) but not assembled: rebuild's new device */
	enum cli_lock lock;	/* cli.h: exclusive to write, shared to read, none */
	struct raid_assemble_cfg cfg;
	/* need_all refused a member left out (-ENODEV): how to opt in, said next */
	const char *missing_hint;
	bool quiet;		/* the command says itself why assembly failed */
	bool name_count;	/* "cannot assemble A and 0 more" for one member too */

	struct blk_dev *devs[CLI_MAX_DEVICES];
	struct raid_array *a;	/* NULL until assembled, and after raidcli_close() */
	struct raid_info info;	/* raid_info_get() right after the assembly */
};

/*
 * Lock and open the @n + @nextra devices of @ra (cli_open_members: io_uring,
 * O_DIRECT, cli_member_hook; the lock as @ra->lock says, waiting with
 * --wait). 0, or -errno after a message naming the device, nothing left open.
 */
int raidcli_open_members(struct raidcli_array *ra);

/*
 * Assemble the first @n open devices of @ra with @ra->cfg and fill @ra->info.
 * On failure, unless @ra->quiet, says why (naming the first member; the
 * engine's line names the device) and @ra->missing_hint for -ENODEV; closes
 * every device of @ra and returns the negative errno. On success the array
 * owns the members and raidcli_close() releases everything.
 */
int raidcli_open_assemble(struct raidcli_array *ra);

/* raidcli_count_check(), raidcli_open_members(), raidcli_open_assemble(). */
int raidcli_open(struct raidcli_array *ra);

/* raidcli_stop() of @ra's array and devices. Returns raid_stop's rc. */
int raidcli_close(struct raidcli_array *ra);

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
