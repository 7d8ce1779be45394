// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_fsck.c - `jgrfs fsck` (also fsck.jgrfs): check, and with -y repair,
 * the filesystem on an array.
 *
 *	jgrfs fsck [-n|-y] [-v|-q] [--wait] [--degraded] DEV...
 *
 * The array is assembled read-only and without its recovery resync for -n (the
 * check never writes: the journal is replayed in memory), normally for -y. Then
 * fs_fsck() replays the journal with resync-all on and checks every structure.
 * Exit status as e2fsck: 0 clean, 1 problems repaired, 4 problems left, 8 an
 * operational error. A set with a member absent (not recorded failed) is
 * refused before anything is written unless --degraded (assemble.c (S13)).
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
#include "scan.h"

#define FSCK_OPT_DEGRADED 0x110 /* --degraded: no short form */

static const char cmd_fsck_help[] =
	"usage: jgrfs fsck [-n|-y] [-v] [--degraded] DEV...\n"
	"       fsck.jgrfs [-n|-y] [-v] [--degraded] DEV...\n"
	"       jgrfs fsck [-n|-y] [-v] [--degraded] UUID=<uuid>\n"
	"\n"
	"Check the jgrfs filesystem on the array of member devices DEV: replay its\n"
	"journal (every stripe it reads resynced first), then bitmaps against what the\n"
	"inodes use, link counts, directory structure and connectivity, sizes, blocks\n"
	"out of range or claimed twice, the orphan list. The volume must not be mounted.\n"
	"UUID=<uuid> for DEV... finds the members (jgrfs mount --help says how).\n"
	"Every member must be given: a set with one missing is refused, nothing\n"
	"written, unless --degraded.\n"
	"\n"
	"options:\n"
	"  -n, --no                 only report; never write (the default)\n"
	"  -y, --yes                repair every problem found\n"
	"  -p                       as -y (e2fsck's \"preen\")\n"
	"      --degraded           check with a member absent (-y marks it failed:\n"
	"                           a rebuild or readd brings it back)\n"
	"  -v, --verbose            also the engine's own lines (assembly, journal\n"
	"                           replay); -vv: everything\n"
	"  -q, --quiet              errors only: no warnings, no progress\n"
	"      --wait               when a member is in use by another jgrfs process\n"
	"                           (a mount being stopped), wait for it\n"
	"  -h, --help               this text\n"
	"\n"
	"exit status: 0 clean, 1 problems repaired, 4 problems left unrepaired,\n"
	"8 operational error (the array or filesystem could not be opened)\n";

int cmd_fsck(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "no", no_argument, NULL, 'n' },
		{ "yes", no_argument, NULL, 'y' },
		{ "degraded", no_argument, NULL, FSCK_OPT_DEGRADED },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERBOSITY_LONGOPTS,
		CLI_WAIT_LONGOPT,
		{ NULL, 0, NULL, 0 },
	};
	struct raid_assemble_cfg acfg = { 0 };
	struct blk_dev *devs[RAIDCLI_MAX_MEMBERS];
	char **paths, *found[RAIDCLI_MAX_MEMBERS];
	struct fsck_opts fo = { 0 };
	struct fsck_report rep;
	struct cli_progress prog;
	struct raid_array *a = NULL;
	bool degraded = false;
	int opt, n, rc, rc2;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "nyhp" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			fo.repair = false;
			break;
		case 'y':
		case 'p':
			fo.repair = true;
			break;
		case 'v':
			cli_verbosity_opt(opt); /* the summary is printed anyway */
			break;
		case FSCK_OPT_DEGRADED:
			degraded = true;
			break;
		case 'h':
			fputs(cmd_fsck_help, stdout);
			return 0;
		case 'q':
			cli_verbosity_opt(opt);
			break;
		case CLI_OPT_WAIT:
			cli_lock_wait = true;
			break;
		default:
			fputs(cmd_fsck_help, stderr);
			return 8;
		}
	}
	n = argc - optind;
	if (n < 1) {
		cli_err("no member devices given");
		fputs(cmd_fsck_help, stderr);
		return 8;
	}
	if (n > RAIDCLI_MAX_MEMBERS)
		return cli_err("at most %d members, not %d", RAIDCLI_MAX_MEMBERS, n), 8;
	acfg.readonly = !fo.repair;
	acfg.no_resync = !fo.repair;
	acfg.need_all = !degraded; /* a member left out by mistake: refused */
	cli_lock_mode = fo.repair ? CLI_LOCK_EXCLUSIVE : CLI_LOCK_SHARED;
	paths = argv + optind;
	n = scan_args(&paths, n, found, RAIDCLI_MAX_MEMBERS); /* UUID=<uuid> */
	if (n < 0)
		return 8;
	rc = raidcli_assemble(paths, n, &acfg, devs, &a);
	if (rc == -ENODEV)
		cli_err("give every member, or --degraded to check the array without it");
	if (rc)
		return 8;
	cli_progress_start(&prog, "fsck", "group passes", 0);
	fo.progress = cli_progress;
	fo.progress_ctx = &prog;
	rc = fs_fsck(raid_array_dev(a), &fo, &rep);
	cli_progress_done(&prog);
	if (rep.recovery.transactions_replayed)
		printf("journal: %llu transactions replayed (%llu blocks, %llu revoked)%s\n",
		       (unsigned long long)rep.recovery.transactions_replayed,
		       (unsigned long long)rep.recovery.blocks_replayed,
		       (unsigned long long)rep.recovery.blocks_revoked,
		       fo.repair ? "" : " in memory");
	if (rc < 8)
		printf("%s: %llu inodes, %llu directories, %llu blocks in use; "
		       "%llu problems found, %llu repaired\n",
		       rc == 0 ? "clean" : rc == 1 ? "repaired" : "PROBLEMS LEFT",
		       (unsigned long long)rep.inodes_checked, (unsigned long long)rep.dirs_checked,
		       (unsigned long long)rep.blocks_used, (unsigned long long)rep.problems_found,
		       (unsigned long long)rep.problems_fixed);
	rc2 = raidcli_stop(a, devs, n);
	if (rc2 && fo.repair) {
		cli_err("stopping the array failed: %s", strerror(-rc2));
		return 8;
	}
	return rc;
}
