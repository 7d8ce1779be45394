// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_scrub.c - `jgrfs scrub`: read every stripe row of an array and count
 * the rows whose parity does not match their data (MD's mismatch_cnt); with
 * --repair rewrite that parity from the data.
 *
 *	jgrfs scrub [--repair] [--json] DEV...
 *
 * A scrub that only counts writes nothing: the members are assembled read-only
 * and without the recovery resync, so a degraded set is refused before its
 * absent member could turn stale, and a dirty array is judged as it lies on
 * disk. --repair assembles the array for use (a dirty array gets its recovery
 * resync first, as at mount) and rewrites the parity of mismatched rows.
 * An array whose filesystem journal still has to be replayed (jnl-pending) is
 * refused: rows the journal names may legitimately disagree with their parity
 * until recovery, and "repairing" them from stale data would hide that.
 *
 * When the array holds a jgrfs filesystem it is opened read-only in process
 * (as `jgrfs owners` does: the journal replayed in memory, nothing written)
 * and tells the scrub which member of a mismatched line is wrong
 * (fs_block_verify; src/raid/scrub.c (K1)-(K4)): a block failing its checksum
 * is rebuilt, the parity rewritten only when the data verifies, a line of
 * unchecked data left as it is and counted unresolved. Without a filesystem
 * (an array made by `jgrfs create`), --repair rewrites parity from the data
 * as before, and says that nothing could tell.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

static const char cmd_scrub_help[] =
	"usage: jgrfs scrub [--repair [--trust-data]] [--json] DEV...\n"
	"       jgrfs scrub [--repair] [--json] [--max-rate MIB] [--background|--cancel|--status]\n"
	"                   MOUNTPOINT   (online: jgrfs scrub --help MOUNTPOINT)\n"
	"\n"
	"Read every stripe row of the array on the members DEV and count the rows whose\n"
	"parity does not match the data; nothing is written. With --repair, assemble\n"
	"the array for use (running its recovery resync if it was not shut down\n"
	"cleanly) and mend mismatched rows. When the array holds a jgrfs filesystem,\n"
	"its checksums say which member of a mismatched row is wrong: a block that\n"
	"fails its checksum is rebuilt from the others, the parity is rewritten only\n"
	"when the data verifies, and a row of data without checksums is left as it\n"
	"is (unresolved: check the files `jgrfs owners --row` names, then\n"
	"--repair --trust-data rewrites such parity from the data). Without a\n"
	"filesystem the parity is rewritten from the data.\n"
	"The array\n"
	"must not be degraded and not mounted: a mounted volume is scrubbed online by\n"
	"its daemon, given its mount point (a directory).\n"
	"\n"
	"options:\n"
	"  -R, --repair             mend mismatched rows (default: only count)\n"
	"  -T, --trust-data         with --repair: do not use the filesystem's checksums;\n"
	"                           rewrite every mismatched parity from the data\n"
	"  -j, --json               one JSON object on stdout, no progress display\n"
	"  -f, --force              scrub even though a filesystem-guided resync is\n"
	"                           pending (the journal has not been replayed)\n"
	"  -v, --verbose            also the engine's own lines; -vv: everything\n"
	"  -q, --quiet              errors only: no warnings, no progress\n"
	"      --wait               when a member is in use by another jgrfs process\n"
	"                           (a mount being stopped, an fsck), wait for it\n"
	"  -h, --help               this text\n"
	"\n"
	"examples:\n"
	"  jgrfs scrub d0.img d1.img d2.img d3.img\n"
	"  jgrfs scrub --repair --json /dev/sd[b-e]\n"
	"\n"
	"exit status: 0 no mismatches, or all repaired; 1 mismatches found and not\n"
	"repaired; 2 or more: bad options, or the scrub could not run\n";

int cmd_scrub(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "repair", no_argument, NULL, 'R' },
		{ "trust-data", no_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERBOSITY_LONGOPTS,
		CLI_WAIT_LONGOPT,
		{ NULL, 0, NULL, 0 },
	};
	/* first look: never write (a degraded set must not make its absent member stale) */
	struct raid_assemble_cfg probe = { .force = true, .readonly = true, .no_resync = true,
					   .need_all = true }; /* names an absent role */
	struct raid_assemble_cfg cfg = { .need_all = true };
	struct raid_resync_report rep = { 0 };
	struct blk_dev *devs[RAIDCLI_MAX_MEMBERS];
	struct raid_array *a;
	struct raid_info info;
	struct cli_progress prog;
	struct fs_mount_opts mo = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				    .readonly = true };
	struct fs *fs = NULL;
	bool repair = false, json = false, force = false, trust_data = false;
	int64_t mismatches;
	int opt, n, rc, ret;

	/* a directory among the arguments: a mount point, the online scrub */
	for (int i = 1; i < argc; i++) {
		struct stat sb;

		if (argv[i][0] != '-' && !stat(argv[i], &sb) && S_ISDIR(sb.st_mode))
			return cmd_scrub_online(argc, argv);
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "RTjfh" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'R':
			repair = true;
			break;
		case 'T':
			trust_data = true;
			break;
		case 'j':
			json = true;
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			fputs(cmd_scrub_help, stdout);
			return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		case CLI_OPT_WAIT:
			cli_lock_wait = true;
			break;
		default:
			return cli_usage_err(2, NULL); /* 1 means mismatches */
		}
	}
	if (trust_data && !repair) {
		return cli_usage_err(2, "--trust-data goes with --repair");
	}
	n = argc - optind;
	if (n < 1)
		return cli_usage_err(2, "no member devices given");
	/* the lock is taken once, for both assemblies: exclusive to repair */
	cli_lock_mode = repair ? CLI_LOCK_EXCLUSIVE : CLI_LOCK_SHARED;
	if (raidcli_assemble(argv + optind, n, &probe, devs, &a))
		return 2;
	raid_info_get(a, &info);
	if (info.degraded) {
		ret = cli_err("%s...: the array is degraded; rebuild the missing member first "
			      "(jgrfs rebuild)", argv[optind]) + 2;
		goto out;
	}
	if (info.jnl_pending && !force) {
		ret = cli_err("%s...: a filesystem-guided resync is pending (the journal has not "
			      "been replayed); mount or fsck first, or use --force",
			      argv[optind]) + 2;
		goto out;
	}
	if (repair) {
		rc = raidcli_stop(a, devs, n);
		a = NULL;
		if (rc)
			return cli_err("closing the read-only array failed: %s", strerror(-rc)) + 1;
		if (raidcli_assemble(argv + optind, n, &cfg, devs, &a))
			return 2;
	} else if (info.was_dirty) {
		fprintf(stderr, "%s: note: the array was not shut down cleanly; mismatches may be "
			"rows its recovery resync would repair (--repair runs that resync first)\n",
			cli_prog);
	}
	if (!trust_data && fs_probe(raid_array_dev(a))) {
		/* the checksums tell which member is wrong (read-only: writes nothing) */
		rc = fs_mount(raid_array_dev(a), &mo, &fs);
		if (rc && repair) {
			/* without its checksums a repair would trust the data blindly */
			fs = NULL;
			ret = cli_err("%s...: cannot open the filesystem: %s; its checksums "
				      "cannot judge the rows (fsck it first, or --trust-data)",
				      argv[optind], strerror(-rc)) + 1;
			goto out;
		}
		if (rc) {
			fs = NULL;
			fprintf(stderr, "%s: warning: cannot open the filesystem on %s...: %s; "
				"scrubbing without its checksums\n", cli_prog, argv[optind],
				strerror(-rc));
		} else {
			raid_set_verifier(a, fs_block_verify_fn, fs);
		}
	}
	cli_progress_off = json;
	cli_progress_start(&prog, repair ? "repair" : "scrub", "rows", cli_row_bytes(&info));
	mismatches = raid_scrub(a, repair, cli_progress, &prog, &rep);
	cli_progress_done(&prog);
	raid_set_verifier(a, NULL, NULL);
	if (mismatches < 0) {
		ret = cli_err("scrub of %s... failed: %s", argv[optind],
			      strerror((int)-mismatches)) + 2;
		goto out;
	}
	if (json) {
		printf("{\"rows_checked\":%" PRIu64 ",\"mismatches\":%" PRId64 ",\"repaired\":%"
		       PRIu64 ",\"rebuilt\":%" PRIu64 ",\"unresolved\":%" PRIu64
		       ",\"checksums\":%s,\"seconds\":%.3f,\"repair\":%s}\n", rep.rows_checked,
		       mismatches, rep.rows_repaired, rep.blocks_rebuilt, rep.rows_unresolved,
		       fs ? "true" : "false", rep.seconds, repair ? "true" : "false");
	} else {
		printf("rows checked  %" PRIu64 "\n", rep.rows_checked);
		printf("mismatches    %" PRId64 "\n", mismatches);
		printf("repaired      %" PRIu64 "\n", rep.rows_repaired);
		printf("rebuilt       %" PRIu64 " blocks (failed their checksums)\n",
		       rep.blocks_rebuilt);
		printf("unresolved    %" PRIu64 " rows (cannot tell which member is wrong)\n",
		       rep.rows_unresolved);
		printf("checksums     %s\n", fs ? "yes (the filesystem's)" : "no (no filesystem)");
		printf("seconds       %.2f\n", rep.seconds);
		if (!fs && repair && rep.rows_repaired)
			printf("note: parity was rewritten from the data: with no filesystem "
			       "checksums, nothing told whether a data block was the wrong one\n");
	}
	if (mismatches == 0)
		ret = 0;
	else if (rep.rows_unresolved)
		ret = 1;
	else if (repair && rep.rows_repaired >= (uint64_t)mismatches)
		ret = 0;
	else
		ret = 1;
out:
	if (fs)
		fs_unmount(fs); /* read-only: never started, writes nothing */
	rc = raidcli_stop(a, devs, n);
	if (rc) {
		cli_err("stopping the array failed: %s", strerror(-rc));
		if (ret < 2)
			ret = 2;
	}
	return ret;
}
