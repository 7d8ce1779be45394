/* SPDX-License-Identifier: MIT */
/*
 * tools/cli/cli.h - what every subcommand of the jgrfs program shares: the command
 * table, error messages, sizes, member devices, progress display.
 */
#ifndef JGRFS_TOOLS_CLI_H
#define JGRFS_TOOLS_CLI_H

#include <stdbool.h>
#include <getopt.h>
#include <stdint.h>

#include "jgrfs/blkreq.h"
#include "jgrfs/raid.h"

/* Devices one command opens at the most: members and hot spares. */
#define CLI_MAX_DEVICES (RAID_MAX_MEMBERS + (int)RAID_MAX_SPARES)

/* A subcommand: "create", or "bench raid" (two words) for benchmarks. */
struct cli_cmd {
	const char *name;
	const char *summary;	/* one line for `jgrfs --help` */
	int (*main)(int argc, char **argv); /* argv[0]: the name for messages, cli_prog */
};

/* The name used in messages: "jgrfs create", set by the dispatcher. */
extern const char *cli_prog;

/*
 * The program's main: `@argv[0] <command> [options]` runs the command of @cmds
 * (terminated by a zero entry) named by argv[1] (argv[1] argv[2] for two
 * words), and mkfs.jgrfs / fsck.jgrfs / mount.jgrfs by the name called. Returns the exit code.
 */
int cli_main(const struct cli_cmd *cmds, int argc, char **argv);

/* "jgrfs create: <message>" on stderr. Returns 1, for `return cli_err(...)`. */
int cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A usage error, as coreutils say one: "jgrfs create: <message>" (nothing when
 * @fmt is NULL: getopt_long has said what is wrong, under the same name, which
 * cli_main() puts in argv[0]), then "Try 'jgrfs create --help' for more
 * information." Two lines, not the whole help. Returns @code, the command's
 * usage exit status (2; fsck's is 16, as e2fsck's).
 */
int cli_usage_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse "4096", "64K", "1M", "4G", "2T" (powers of 1024) into bytes; -EINVAL when bad. */
int cli_parse_size(const char *s, uint64_t *bytes);
/* Parse an unsigned decimal; -EINVAL when bad or above @max. */
int cli_parse_u64(const char *s, uint64_t max, uint64_t *out);

/*
 * Open each path as a member (raid_dev_open: a file or block device through
 * io_uring, O_DIRECT; or an NBD URI). With @create_bytes, missing files are
 * created sparse at that size (an NBD export must hold as much already). Each
 * file is then locked as cli_lock_mode says (an NBD export is not). On failure
 * prints which path and why, closes what it opened, returns the negative errno.
 * When cli_member_hook is set, its wrap() then puts its layer over the members.
 */
int cli_open_members(char **paths, int n, uint64_t create_bytes, struct blk_dev **devs);
void cli_close_members(struct blk_dev **devs, int n);

/*
 * The member list an fstab source names, as mount(8) and fsck(8) hand the
 * first field to mount.jgrfs and fsck.jgrfs: "members=DEV1:DEV2:..." (the
 * list after "members="), or "DEV1:DEV2:..." naming no file (all of it).
 * NULL when @src is not a list: one device.
 */
const char *cli_member_list(const char *src);
/*
 * Split "a:b:c" in place into @paths (@max at most); returns the count or
 * -EINVAL. An NBD URI keeps the colons of its "scheme://" and its "host:port"
 * (or "[v6addr]:port"); it ends at the first colon after them, so one cannot
 * have a colon in its export name or query (%3A in a URI).
 */
int cli_split_members(char *list, char **paths, int max);

/*
 * Two processes on one array would corrupt it. cli_open_members() holds an
 * advisory lock (flock) on each member until the process exits: exclusive for
 * a mount's daemon and for the commands that write (mkfs, create, fsck -y,
 * scrub --repair, rebuild), shared for the read-only ones (fsck -n, scrub,
 * owners), none for examine (it reads the superblocks of members in use, as
 * mdadm --examine does). A member locked by another process: the command names
 * it ("in use by pid 1234 (jgrfs mount d0.img ... /srv)") and fails with
 * -EBUSY; with --wait (cli_lock_wait) it says so once and waits.
 */
enum cli_lock { CLI_LOCK_EXCLUSIVE, CLI_LOCK_SHARED, CLI_LOCK_NONE };
extern enum cli_lock cli_lock_mode; /* default CLI_LOCK_EXCLUSIVE */
/* "pid 1234 (jgrfs mount ...)" for the process holding a lock on @path, or "another process". */
const char *cli_lock_holder(const char *path, char *buf, size_t len);
extern bool cli_lock_wait;
#define CLI_OPT_WAIT 0x101 /* --wait: no short form */
#define CLI_OPT_DATA_CSUM 0x102 /* mkfs --data-checksums: no short form */
#define CLI_OPT_NO_DATA_CSUM 0x103 /* mkfs --no-data-checksums */
#define CLI_OPT_OVERWRITE 0x104 /* rebuild --overwrite */
#define CLI_WAIT_LONGOPT { "wait", no_argument, NULL, CLI_OPT_WAIT }

/*
 * A layer over the members of each cli_open_members(), for the crash harness
 * only: NULL in the installed jgrfs, which has no way to switch a fault on;
 * jgrfs-crash (tools/crash/faults.h) sets it from its command line.
 *   wrap    over the @n members just opened: may replace devs[i] by a device
 *           over it. On failure prints why and returns -errno, each devs[i]
 *           wrapped or not: cli_close_members() releases either.
 *   unwrap  called by cli_close_members() once it has closed devs[0..n) (or
 *           the array did): closes what wrap put below them.
 */
struct cli_member_hook {
	int (*wrap)(struct blk_dev **devs, int n);
	void (*unwrap)(int n);
};
extern const struct cli_member_hook *cli_member_hook;

/*
 * How much a command says, as mdadm and e2fsprogs do. By default its result on
 * stdout, warnings and errors on stderr, and progress of long work; the
 * layers' own account of their work (assembled, mkfs, resync: JG_LOG_INFO) is
 * not shown. Every subcommand takes:
 *   -q, --quiet     errors only: no warnings, no progress
 *   -v, --verbose   the layers' lines too; twice (-vv) everything (JG_LOG_DEBUG)
 * cli_verbosity is -1 (quiet), 0, 1 or 2; cli_verbosity_opt() takes one of
 * those options found by getopt_long (0 when taken, 1 when not ours) and sets
 * the log level to match. --json turns progress off with cli_progress_off.
 */
extern int cli_verbosity;
extern bool cli_progress_off;
int cli_verbosity_opt(int opt);
/* The log level of cli_verbosity: JG_LOG_ERR, _NOTICE, _INFO or _DEBUG. */
int cli_log_level(void);
#define CLI_VERBOSITY_SHORTOPTS "vq"
#define CLI_VERBOSITY_LONGOPTS \
	{ "verbose", no_argument, NULL, 'v' }, { "quiet", no_argument, NULL, 'q' }

/*
 * Progress of long work on stderr. On a terminal one line, rewritten in place
 * at most five times a second, with the rate and the time left:
 *	scrub:  42% (1720/4095 rows)  540 MiB/s  eta 0:03
 * and erased at the end, so the result follows on a clean line. Elsewhere (a
 * log file) a plain line at each tenth. Nothing with -q or --json. Lines the
 * engine logs meanwhile erase the progress line first; the next update draws it
 * again. @unit names what is counted (NULL: a percentage only, no rate);
 * @unit_bytes, when not 0, the bytes of one, for a rate in bytes.
 */
struct cli_progress {
	const char *label, *unit;
	uint64_t unit_bytes;
	double t0, drawn_at;	/* CLOCK_MONOTONIC seconds */
	int tenth;		/* the last plain line's tenth */
	bool tty, on;
};
void cli_progress_start(struct cli_progress *p, const char *label, const char *unit,
			uint64_t unit_bytes);
/* Show @done of @total; a raid_progress_fn with @p as its context. Returns 0. */
int cli_progress(void *p, uint64_t done, uint64_t total);
/* Erase the line (terminal) and stop. */
void cli_progress_done(struct cli_progress *p);
/* Erase the progress line, if one is drawn, before a line on stdout; the next update draws it. */
void cli_progress_erase(void);
/* Bytes of array data in one stripe row of @info: a row's unit_bytes. */
uint64_t cli_row_bytes(const struct raid_info *info);

/* Format @bytes as "1.5 GiB" into @buf. */
const char *cli_human_bytes(uint64_t bytes, char *buf, int len);

/*
 * The array options shared by `jgrfs create` and `jgrfs mkfs`:
 *   -l, --level 4|5|6          (default 5)
 *   -c, --chunk SIZE           chunk size, 4K..4M, power of two (default 64K)
 *   -r, --resync POLICY        full|bitmap|journal|off (default journal)
 *   -b, --bitmap-region SIZE   array data per bitmap bit (default 64M)
 *   -s, --size SIZE            per member; creates missing member files sparse
 *   -S, --spare DEV            a hot spare (repeatable, up to RAID_MAX_SPARES)
 * cli_raid_opts_init() sets the defaults; cli_raid_opt() takes one option found
 * by getopt_long with cli_raid_longopts (0 when taken, 1 when not ours, -EINVAL
 * with a message when its value is bad).
 */
struct raid_create_cfg;
struct cli_raid_opts {
	struct raid_create_cfg *cfg;
	uint64_t size_bytes;	/* --size, 0 when not given */
	char *spares[8];	/* --spare paths (argv strings), RAID_MAX_SPARES at most */
	unsigned int nspares;
};
#define CLI_RAID_SHORTOPTS "l:c:r:b:s:S:"
#define CLI_RAID_HELP \
	"  -l, --level N            RAID level 4, 5 or 6 (default 5)\n" \
	"  -c, --chunk SIZE         chunk size, 4K to 4M, a power of two (default 64K)\n" \
	"  -r, --resync POLICY      crash protection: journal (default), bitmap, full, or\n" \
	"                           off (UNSAFE: no resync after a crash; for tests)\n" \
	"  -b, --bitmap-region SIZE array data covered by one bitmap bit (default 64M)\n" \
	"  -s, --size SIZE          use SIZE of each member (members of unequal size need\n" \
	"                           it); creates missing member files sparse at that size\n" \
	"  -S, --spare DEV          a hot spare (repeatable, up to 8): a member that fails\n" \
	"                           is rebuilt onto it by the mounted volume, no command\n" \
	"                           needed; give it with the members to jgrfs mount\n" \
	"      --assume-clean       the members hold zeros (new disks, discarded SSDs): no\n" \
	"                           initial sync. Without it, a new array is usable at\n" \
	"                           once and the mounted volume syncs its parity in the\n" \
	"                           background; member files this command creates, or\n" \
	"                           finds with no block allocated, hold zeros: none\n"
#define CLI_OPT_ASSUME_CLEAN 0x100 /* no short form (mdadm's --assume-clean) */
extern const struct option cli_raid_longopts[]; /* terminated by a zero entry */
void cli_raid_opts_init(struct cli_raid_opts *o, struct raid_create_cfg *cfg);
int cli_raid_opt(struct cli_raid_opts *o, int opt, const char *arg);

#endif /* JGRFS_TOOLS_CLI_H */
