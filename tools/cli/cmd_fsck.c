// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_fsck.c - `jgrfs fsck` (also fsck.jgrfs): check, and with -y or
 * -p repair, the filesystem on an array.
 *
 *	jgrfs fsck [-n|-y|-p|-a] [-f] [-v|-q] [--wait] [--degraded] DEV...
 *	fsck.jgrfs [-n|-y|-p|-a] [-f] members=DEV1:DEV2:...     (fsck(8), fstab)
 *
 * The options and exit status are e2fsck's, so that fsck(8) and the fstab
 * pass number drive it. The array is assembled read-only and without its
 * recovery resync for -n (the check never writes: the journal is replayed in
 * memory), normally for -y. Then fs_fsck() replays the journal with resync-all
 * on and checks every structure. A set with a member absent (not recorded
 * failed) is refused before anything is written unless --degraded
 * (assemble.c (S13)).
 *
 * -p (preen, as fsck(8) runs it at boot) repairs only what needs no judgement:
 * what a mount does anyway (the journal replayed, the array's recovery resync,
 * the orphan list finished). It checks read-only first; a problem found means
 * exit 4 and "UNEXPECTED INCONSISTENCY", nothing written, as e2fsck -p. A
 * volume whose superblock says it was unmounted cleanly, with no errors
 * recorded, is reported clean without the passes unless -f.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

#define FSCK_OPT_DEGRADED 0x110 /* --degraded: no short form */

/* e2fsck's exit status (e2fsck(8)), which fsck(8) ORs over the volumes */
#define FSCK_OK 0
#define FSCK_REPAIRED 1
#define FSCK_UNCORRECTED 4
#define FSCK_ERROR 8
#define FSCK_USAGE 16

static const char cmd_fsck_help[] =
	"usage: jgrfs fsck [-n|-y|-p] [-f] [-v] [--degraded] DEV...\n"
	"       fsck.jgrfs [-n|-y|-p] [-f] [-v] [--degraded] DEV...\n"
	"       fsck.jgrfs [-n|-y|-p] [-f] members=DEV1:DEV2:...\n"
	"       jgrfs fsck [-n|-y|-p] [-f] [-v] [--degraded] UUID=<uuid>\n"
	"\n"
	"Check the jgrfs filesystem on the array of member devices DEV: replay its\n"
	"journal (every stripe it reads resynced first), then bitmaps against what the\n"
	"inodes use, link counts, directory structure and connectivity, sizes, blocks\n"
	"out of range or claimed twice, the orphan list. The volume must not be mounted.\n"
	"UUID=<uuid> for DEV... finds the members (jgrfs mount --help says how).\n"
	"Every member must be given: a set with one missing is refused, nothing\n"
	"written, unless --degraded. The members may be given as one argument,\n"
	"members=DEV1:DEV2:... (or DEV1:DEV2:...), the first field of an /etc/fstab\n"
	"line of type jgrfs, which fsck(8) passes.\n"
	"\n"
	"options:\n"
	"  -n, --no                 only report; never write (the default)\n"
	"  -y, --yes                repair every problem found\n"
	"  -p, --preen              repair only what a mount would (journal replay,\n"
	"                           resync, orphans); any other problem: exit 4,\n"
	"                           nothing written. A volume unmounted cleanly is\n"
	"                           reported clean without a check, unless -f\n"
	"  -a                       as -p (e2fsck's older name for it)\n"
	"  -f, --force              check even a volume unmounted cleanly\n"
	"  -C, --progress-fd FD     taken for fsck(8), which passes it; progress is shown\n"
	"                           on stderr anyway\n"
	"      --degraded           check with a member absent (-y marks it failed:\n"
	"                           a rebuild or readd brings it back)\n"
	"  -v, --verbose            also the engine's own lines (assembly, journal\n"
	"                           replay); -vv: everything\n"
	"  -q, --quiet              errors only: no warnings, no progress\n"
	"      --wait               when a member is in use by another jgrfs process\n"
	"                           (a mount being stopped), wait for it\n"
	"  -V, --version            the version, and exit\n"
	"  -h, --help               this text\n"
	"\n"
	"Only one of -n, -y and -p (-a) may be given.\n"
	"exit status (e2fsck's): 0 clean, 1 problems repaired, 4 problems left\n"
	"unrepaired, 8 operational error (the array or filesystem could not be\n"
	"opened), 16 usage error\n";

struct fsck_cmd {
	struct raidcli_members m;	/* the members given (fstab list, UUID=) */
	bool degraded, force, preen;
	char mode;			/* 'n', 'y' or 'p'; 0 when none was given */
};

/* One check of the array: assembled for @repair (else read-only), checked, stopped. */
static int fsck_once(struct fsck_cmd *fc, const struct fsck_opts *fo, struct fsck_report *rep)
{
	struct raidcli_array ra = {
		.paths = fc->m.paths,
		.n = fc->m.n,
		.lock = fo->repair || fc->mode == 'p' ? CLI_LOCK_EXCLUSIVE : CLI_LOCK_SHARED,
		.cfg = {
			.readonly = !fo->repair,
			.no_resync = !fo->repair,
			.need_all = !fc->degraded, /* a member left out by mistake: refused */
		},
		.missing_hint = "give every member, or --degraded to check the array without it",
	};
	struct fsck_opts o = *fo;
	struct cli_progress prog;
	int rc, rc2;

	if (raidcli_open(&ra))
		return FSCK_ERROR;
	cli_progress_start(&prog, "fsck", "group passes", 0);
	o.progress = cli_progress;
	o.progress_ctx = &prog;
	rc = fs_fsck(raid_array_dev(ra.a), &o, rep);
	cli_progress_done(&prog);
	rc2 = raidcli_close(&ra);
	if (rc2 && fo->repair) {
		cli_err("stopping the array failed: %s", strerror(-rc2));
		return FSCK_ERROR;
	}
	return rc;
}

static void fsck_print(const struct fsck_report *rep, int rc, bool repair)
{
	if (rep->recovery.transactions_replayed)
		printf("journal: %llu transactions replayed (%llu blocks, %llu revoked)%s\n",
		       (unsigned long long)rep->recovery.transactions_replayed,
		       (unsigned long long)rep->recovery.blocks_replayed,
		       (unsigned long long)rep->recovery.blocks_revoked,
		       repair ? "" : " in memory");
	if (rep->skipped_clean)
		printf("clean: unmounted cleanly, not checked (-f checks it)\n");
	else if (rc < FSCK_ERROR)
		printf("%s: %llu inodes, %llu directories, %llu blocks in use; "
		       "%llu problems found, %llu repaired\n",
		       rc == 0 ? "clean" : rc == 1 ? "repaired" : "PROBLEMS LEFT",
		       (unsigned long long)rep->inodes_checked, (unsigned long long)rep->dirs_checked,
		       (unsigned long long)rep->blocks_used, (unsigned long long)rep->problems_found,
		       (unsigned long long)rep->problems_fixed);
}

/*
 * -p: a read-only check first (members locked exclusively, and held until the
 * process exits: nothing mounts between the check and the repair); then, if it
 * found nothing wrong and the volume was not left clean, the repair run that
 * writes what a mount would (journal, resync, orphans) and marks it clean.
 */
static int fsck_preen(struct fsck_cmd *fc, struct fsck_opts *fo, const char *name)
{
	struct fsck_report rep = { 0 };
	int rc;

	fo->repair = false;
	fo->skip_clean = !fc->force;
	rc = fsck_once(fc, fo, &rep);
	if (rc == FSCK_OK && !rep.was_clean) {
		fo->repair = true;
		fo->skip_clean = false;
		rc = fsck_once(fc, fo, &rep);
	}
	if (rc != FSCK_ERROR)
		fsck_print(&rep, rc, fo->repair);
	if (rc == FSCK_UNCORRECTED)
		printf("\n%s: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY.\n"
		       "\t(i.e., without -a or -p options)\n", name);
	return rc;
}

/* Options: fills @fc and @fo; returns -1 to go on, else the exit status. */
static int fsck_opts_parse(struct fsck_cmd *fc, struct fsck_opts *fo, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "no", no_argument, NULL, 'n' },
		{ "yes", no_argument, NULL, 'y' },
		{ "preen", no_argument, NULL, 'p' },
		{ "force", no_argument, NULL, 'f' },
		{ "progress-fd", required_argument, NULL, 'C' },
		{ "degraded", no_argument, NULL, FSCK_OPT_DEGRADED },
		{ "version", no_argument, NULL, 'V' },
		RAIDCLI_COMMON_LONGOPTS,
	};
	int opt;

	optind = 1;
	/* -v and -q taken there: the summary is printed anyway */
	while ((opt = raidcli_getopt(argc, argv, "nypafC:Vh" CLI_VERBOSITY_SHORTOPTS, longopts,
				     cmd_fsck_help)) != -1) {
		switch (opt) {
		case RAIDCLI_OPT_HELP:
			return FSCK_OK;
		case 'n':
		case 'y':
		case 'p':
		case 'a':
			opt = opt == 'a' ? 'p' : opt; /* -a: e2fsck's old name for -p */
			if (fc->mode && fc->mode != opt)
				return cli_usage_err(FSCK_USAGE,
						     "only one of -n, -y and -p (-a) may be given");
			fc->mode = (char)opt;
			break;
		case 'f':
			fc->force = true;
			break;
		case 'C':
			break; /* fsck(8)'s progress fd: our progress goes to stderr */
		case FSCK_OPT_DEGRADED:
			fc->degraded = true;
			break;
		case 'V':
			printf("%s (jgrfs) 0.1.0\n", cli_prog);
			return FSCK_OK;
		default:
			return cli_usage_err(FSCK_USAGE, NULL);
		}
	}
	fo->repair = fc->mode == 'y';
	return -1;
}

int cmd_fsck(int argc, char **argv)
{
	struct fsck_cmd fc = { 0 };
	struct fsck_opts fo = { 0 };
	struct fsck_report rep = { 0 };
	int rc;

	rc = fsck_opts_parse(&fc, &fo, argc, argv);
	if (rc >= 0)
		return rc;
	rc = raidcli_members_parse(&fc.m, argv + optind, argc - optind, FSCK_USAGE, FSCK_ERROR);
	if (rc)
		goto out;
	if (fc.mode == 'p') {
		/* both runs exclusive: nothing mounts between the check and the repair */
		rc = fsck_preen(&fc, &fo, argv[optind]);
		goto out;
	}
	rc = fsck_once(&fc, &fo, &rep);
	if (rc != FSCK_ERROR)
		fsck_print(&rep, rc, fo.repair);
out:
	raidcli_members_free(&fc.m);
	return rc;
}
