/* SPDX-License-Identifier: MIT */
/*
 * tools/crash/crash_inproc.h - the crash harness in-process (tools/crash/crash_inproc.c):
 * the workload of tools/crash/crash.h driven through include/jgrfs/fs.h over a RAID
 * array of member files in one fault domain, cut at a chosen member write, then
 * recovered and checked as `jgrfs-crash crashtest` checks a mount. No FUSE, no daemon:
 * a cut costs tens of milliseconds, not half a second.
 *
 * One iteration (a seed):
 *   (I1) member files (sparse), raid_create, fs_mkfs with a small journal
 *        (background checkpoint passes and log wrap run all the time), the
 *        workload's directories, a clean stop: none of this is counted;
 *   (I2) the members reopened, each wrapped in one fault domain; assembly,
 *        mount (commit thread on) and the workload; the power is cut at member
 *        write N (chosen by the seed within the write count of an uncut run), or
 *        at the end when the workload is shorter: unflushed writes kept, dropped
 *        or torn; then every layer abandoned (fs_abandon, raid_abandon);
 *   (I3) a lifecycle (chosen by the seed, or fixed): what happens between the
 *        crash and the mount that recovers (enum ct_lifecycle);
 *   (I4) the members reopened without the fault wrapper, assembled (resync),
 *        mounted (journal recovery), and checked: content against the model,
 *        fs_fsck finds nothing, raid_scrub finds no parity mismatch, every file
 *        reads back identical with each member left out in turn (the write hole);
 *   (I5) with the initial-sync lifecycle, (I1) fills the members with noise first
 *        (disks that held something else: the array is created not in sync), the
 *        initial sync runs beside the workload in (I2) and dies with the power,
 *        and after (I4) it resumes from its mark and must end with a clean scrub
 *        before a member is lost (a degraded read-write mount, every file right).
 * Each cut's points in flight (raid_fault_domain_cut_points()) are reported, to
 * be added up into the coverage table (tools/crash/opcov.h). A point that few member
 * writes carry (a checkpoint step) is seldom in flight at a cut drawn among all
 * writes: with cfg.aim the cut comes instead right after the k-th request of
 * the point the filesystem hands the array (a wrapper over the array device
 * sees the submitting thread's point), its plain writes then still unflushed.
 *
 *   (I7) two faults (issue 43): with eio-cut, one member fails every I/O (its fault
 *        device's fail_all) from domain write N on and the power goes at write
 *        N+k, k by seed in 0..64: the race between degraded writes and the
 *        superblock round recording the failure. After the cut the member comes
 *        back (a transient fault); recorded failed it is stale, and assembled
 *        without. With lost-before, a member is missing at the recovering
 *        mount. Refused as dirty and degraded (the write hole), the recovery is
 *        forced as `mount -o force`; the files it names at risk (raid_rows_at_risk,
 *        fs_owners: data, maps, xattrs, inode table rows) are not compared, a
 *        directory or every row at risk (resync full, off) waives the content
 *        and fsck checks, allocation metadata the fsck check; then the failed or
 *        lost member is rebuilt and the scrub and write-hole checks run.
 *        With rebuild-run, (I2) assembles the array without one member and
 *        rebuilds it onto a new one (in the fault domain) beside the workload;
 *        the new member takes the old one's place, the recovery is as above,
 *        the rebuild resumes from its mark (or starts again when the cut came
 *        before its first superblock round), and after the checks a member is
 *        lost (a degraded read-write mount, every file right) unless the checks
 *        were waived (the volume may hold what the write hole left).
 *        With scrub-run, an online scrub --repair (raid_scrub_rows, a few rows
 *        at a time under the row locks) runs beside the workload and dies with
 *        the power; recovery and the checks are those of one fault.
 *        ct_ip_result.second says how far the second fault got (a cut before
 *        the member failed tested one fault: counted apart).
 *   (I8) one seed in four has a commit interval of 1..50 ms (ct_ip_commit_interval_ms):
 *        timed commits beside the workload, between the chunks of a write, as
 *        the 5 s default gives only when a cut takes seconds (under load);
 *        ct_ip_result.timed says whether the timer did commit.
 *
 * Faults while running (--eio): one member fails the writes of some blocks with
 * -EIO and no power is cut; the volume is unmounted cleanly (errors allowed)
 * and checked the same way, after a rebuild of the member when the array failed
 * it: nothing acknowledged may be lost.
 */
#ifndef JGRFS_TOOLS_CRASH_INPROC_H
#define JGRFS_TOOLS_CRASH_INPROC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "crash.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

enum ct_check { CT_FSCK, CT_CONTENT, CT_SCRUB, CT_HOLE, CT_ERROR, CT_NCHECKS };
extern const char *const ct_check_names[CT_NCHECKS];

/* (I3) between the crash and the recovering mount */
enum ct_lifecycle {
	CT_LC_REMOUNT,		/* mount again */
	CT_LC_STOP_FIRST,	/* assemble, stop without mounting (a mount that failed), mount */
	CT_LC_FSCK_FIRST,	/* offline fsck -y first */
	CT_LC_SCRUB_FIRST,	/* offline scrub --repair first (refused while the journal is pending) */
	CT_LC_LOST_MEMBER,	/* after recovery, a member lost: read-write degraded, all files right */
	CT_LC_RECOVERY_CUT,	/* the power cut again during recovery (assembly and mount) */
	CT_LC_REBUILD_CUT,	/* after recovery, a member rebuilt, the power cut during the rebuild */
	CT_LC_INITIAL_SYNC,	/* the members held old data: the cut during the initial sync,
				 * which ran with the workload; after recovery a member lost */
	/* two faults (issue 43): */
	CT_LC_EIO_CUT,		/* a member fails every I/O from write N on, the power goes at
				 * write N+k (k by seed, 0..64): the failure's record raced */
	CT_LC_LOST_BEFORE,	/* a member lost before the recovering mount */
	CT_LC_REBUILD_RUN,	/* a member rebuilt onto a new one beside the workload, the
				 * power cut during it; resumed after recovery, then a
				 * member lost */
	CT_LC_SCRUB_RUN,	/* an online scrub --repair beside the workload, the power
				 * cut during it */
	CT_LC_READD_RUN,	/* a member failed beside the workload, then readded (its
				 * missed rows rebuilt), the power cut during either;
				 * the readd resumed after recovery, then a member lost */
	CT_LC_COUNT,
	CT_LC_SEED = CT_LC_COUNT, /* chosen by the seed */
};
extern const char *const ct_lc_names[CT_LC_COUNT];

struct ct_ip_cfg {
	unsigned int level;		/* 5 or 6 */
	unsigned int nmem;
	enum raid_resync_policy resync;
	enum jnl_data_mode data_mode;
	uint64_t member_bytes;
	uint64_t journal_blocks;
	unsigned int ops;		/* workload operations */
	uint64_t cut_span;		/* member writes the cut falls among; 0: no cut */
	uint64_t cut_at;		/* the cut at this write, whatever the seed; 0: by seed */
	uint64_t aim;			/* bit per point: cut right after the k-th request the
					 * filesystem names one of them (chosen by the seed),
					 * instead of at a member write; 0: never */
	enum ct_lifecycle lifecycle;
	bool eio;			/* faults while running instead of a power cut */
	bool data_csum;			/* mkfs --data-checksums: EIO on a read is damage */
	bool calibrate;			/* (I2) only, uncut: count the workload's writes */
	const char *dir;		/* the member files */
	FILE *log;			/* a failure's model dump; NULL: none */
};

#define CT_IP_MAX_CUTS 3

/* How far a lifecycle of two faults got (struct ct_ip_result.second). */
enum ct_second {
	CT_2ND_NONE,		/* one fault only (the lifecycle has no second) */
	CT_2ND_MISSED,		/* eio-cut: the cut came before the member failed */
	CT_2ND_UNRECORDED,	/* eio-cut: failed in memory, not in the superblocks at the cut */
	CT_2ND_RECORDED,	/* eio-cut: the failure recorded in the superblocks;
				 * readd-run: the cut after the member failed, before
				 * its readd began */
	CT_2ND_LOST,		/* lost-before: the member missing at the recovering mount */
	CT_2ND_REBUILDING,	/* rebuild-run, readd-run: the cut during the rebuild or
				 * the readd (missed: after it, or before the failure) */
	CT_2ND_SCRUBBING,	/* scrub-run: the cut during the scrub (missed: after it) */
	CT_2ND_COUNT,
};
extern const char *const ct_second_names[CT_2ND_COUNT];

/* (I8) the workload mount's commit interval for @seed (0: the default). */
unsigned int ct_ip_commit_interval_ms(uint64_t seed);

struct ct_ip_result {
	unsigned int damage[CT_NCHECKS];
	char why[256];
	enum ct_lifecycle lifecycle;
	unsigned int issued;		/* workload operations issued */
	bool timed;			/* (I8) the commit timer began a commit during the
					 * workload (before the cut, or just after it) */
	uint64_t writes;		/* member writes counted by the first domain */
	uint64_t cut_at;		/* the write the cut fell on; 0: at the end */
	int aimed;			/* the point aimed at, -1: none */
	uint64_t points[CT_IP_MAX_CUTS];/* per cut: the ordering points in flight */
	unsigned int ncuts;
	enum ct_second second;		/* how far the second fault got */
	bool forced;			/* the recovering assembly needed force (dirty, degraded) */
	bool waived;			/* forced, and metadata (or, resync full, every row) at
					 * risk: the content and fsck checks prove nothing */
	unsigned int risk_files;	/* forced: files named at risk, left out of the content check */
	bool mount_failed;		/* forced, row 0 at risk: the mount failed (waived) */
};

/* One iteration. 0 when it ran (damage in @r), negative errno when the harness
 * itself could not run it. */
int ct_ip_iteration(const struct ct_ip_cfg *c, uint64_t seed, struct ct_ip_result *r);

/* The operations of tools/crash/crash.h over a mounted fs; after *@cut, every call
 * fails with -ECANCELED (the process died at the power cut). */
struct ct_ip_vol {
	struct fs *fs;
	const bool *cut;
};
void ct_fs_ops(struct ct_ops *ops, struct ct_ip_vol *v);

/*
 * The write hole: assemble @members without member @skip, read-only, and read
 * every file of @ref. Returns 0 when identical, 1 when not (reason in @why),
 * negative on errors.
 */
int ct_hole_check(char **members, unsigned int n, unsigned int skip, const struct ct_tree *ref,
		  char *why);

uint64_t ct_mix(uint64_t a, uint64_t b);

#endif /* JGRFS_TOOLS_CRASH_INPROC_H */
