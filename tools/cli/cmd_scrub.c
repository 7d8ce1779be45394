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
	RAIDCLI_COMMON_HELP
	"\n"
	"examples:\n"
	"  jgrfs scrub d0.img d1.img d2.img d3.img\n"
	"  jgrfs scrub --repair --json /dev/sd[b-e]\n"
	"\n"
	"exit status: 0 no mismatches, or all repaired; 1 mismatches found and not\n"
	"repaired; 2 or more: bad options, or the scrub could not run\n";

/* What the command line asks. */
struct scrub_cmd {
	bool repair, json, force, trust_data;
	char **paths;		/* the members */
	int n;
};

/* Options into @sc: -1 to go on, else the exit status (1 means mismatches: usage is 2). */
static int scrub_opts_parse(struct scrub_cmd *sc, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "repair", no_argument, NULL, 'R' },
		{ "trust-data", no_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		RAIDCLI_COMMON_LONGOPTS,
	};
	int opt;

	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, "RTjfh" CLI_VERBOSITY_SHORTOPTS, longopts,
				     cmd_scrub_help)) != -1) {
		switch (opt) {
		case RAIDCLI_OPT_HELP:
			return 0;
		case 'R':
			sc->repair = true;
			break;
		case 'T':
			sc->trust_data = true;
			break;
		case 'j':
			sc->json = true;
			break;
		case 'f':
			sc->force = true;
			break;
		default:
			return cli_usage_err(2, NULL); /* 1 means mismatches */
		}
	}
	if (sc->trust_data && !sc->repair) {
		return cli_usage_err(2, "--trust-data goes with --repair");
	}
	sc->paths = argv + optind;
	sc->n = argc - optind;
	if (sc->n < 1)
		return cli_usage_err(2, "no member devices given");
	return -1;
}

/*
 * Assemble the array for the scrub: a first look that never writes (a
 * degraded set must not make its absent member stale), refused when degraded
 * or jnl-pending without --force; for --repair, then again for use. The lock
 * is taken once, for both assemblies: exclusive to repair. -1 with @ra
 * assembled, else the exit status (@ra released or left for raidcli_close()).
 */
static int scrub_open(const struct scrub_cmd *sc, struct raidcli_array *ra)
{
	int rc;

	ra->paths = sc->paths;
	ra->n = sc->n;
	ra->lock = sc->repair ? CLI_LOCK_EXCLUSIVE : CLI_LOCK_SHARED;
	ra->cfg = (struct raid_assemble_cfg){ .force = true, .readonly = true, .no_resync = true,
					      .need_all = true }; /* names an absent role */
	if (raidcli_open(ra))
		return 2;
	if (ra->info.degraded)
		return cli_err("%s...: the array is degraded; rebuild the missing member first "
			       "(jgrfs rebuild)", sc->paths[0]) + 2;
	if (ra->info.jnl_pending && !sc->force)
		return cli_err("%s...: a filesystem-guided resync is pending (the journal has not "
			       "been replayed); mount or fsck first, or use --force",
			       sc->paths[0]) + 2;
	if (sc->repair) {
		rc = raidcli_close(ra);
		if (rc)
			return cli_err("closing the read-only array failed: %s", strerror(-rc)) + 1;
		ra->cfg = (struct raid_assemble_cfg){ .need_all = true };
		if (raidcli_open(ra))
			return 2;
	} else if (ra->info.was_dirty) {
		fprintf(stderr, "%s: note: the array was not shut down cleanly; mismatches may be "
			"rows its recovery resync would repair (--repair runs that resync first)\n",
			cli_prog);
	}
	return -1;
}

/*
 * When the array holds a filesystem, open it read-only (writes nothing) and
 * let its checksums tell which member of a mismatched row is wrong. -1 to go
 * on (*@fs NULL without them), else the exit status.
 */
static int scrub_verifier(const struct scrub_cmd *sc, struct raid_array *a, struct fs **fs)
{
	struct fs_mount_opts mo = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				    .readonly = true };
	int rc;

	*fs = NULL;
	if (sc->trust_data || !fs_probe(raid_array_dev(a)))
		return -1;
	rc = fs_mount(raid_array_dev(a), &mo, fs);
	if (rc && sc->repair) {
		/* without its checksums a repair would trust the data blindly */
		*fs = NULL;
		return cli_err("%s...: cannot open the filesystem: %s; its checksums "
			       "cannot judge the rows (fsck it first, or --trust-data)",
			       sc->paths[0], strerror(-rc)) + 1;
	}
	if (rc) {
		*fs = NULL;
		fprintf(stderr, "%s: warning: cannot open the filesystem on %s...: %s; "
			"scrubbing without its checksums\n", cli_prog, sc->paths[0],
			strerror(-rc));
	} else {
		raid_set_verifier(a, fs_block_verify_fn, *fs);
	}
	return -1;
}

/* The result on stdout, and the exit status it makes. */
static int scrub_report(const struct scrub_cmd *sc, const struct raid_resync_report *rep,
			int64_t mismatches, bool checksums)
{
	if (sc->json) {
		printf("{\"rows_checked\":%" PRIu64 ",\"mismatches\":%" PRId64 ",\"repaired\":%"
		       PRIu64 ",\"rebuilt\":%" PRIu64 ",\"unresolved\":%" PRIu64
		       ",\"checksums\":%s,\"seconds\":%.3f,\"repair\":%s}\n", rep->rows_checked,
		       mismatches, rep->rows_repaired, rep->blocks_rebuilt, rep->rows_unresolved,
		       checksums ? "true" : "false", rep->seconds, sc->repair ? "true" : "false");
	} else {
		printf("rows checked  %" PRIu64 "\n", rep->rows_checked);
		printf("mismatches    %" PRId64 "\n", mismatches);
		printf("repaired      %" PRIu64 "\n", rep->rows_repaired);
		printf("rebuilt       %" PRIu64 " blocks (failed their checksums)\n",
		       rep->blocks_rebuilt);
		printf("unresolved    %" PRIu64 " rows (cannot tell which member is wrong)\n",
		       rep->rows_unresolved);
		printf("checksums     %s\n",
		       checksums ? "yes (the filesystem's)" : "no (no filesystem)");
		printf("seconds       %.2f\n", rep->seconds);
		if (!checksums && sc->repair && rep->rows_repaired)
			printf("note: parity was rewritten from the data: with no filesystem "
			       "checksums, nothing told whether a data block was the wrong one\n");
	}
	if (mismatches == 0)
		return 0;
	if (rep->rows_unresolved)
		return 1;
	if (sc->repair && rep->rows_repaired >= (uint64_t)mismatches)
		return 0;
	return 1;
}

int cmd_scrub(int argc, char **argv)
{
	struct scrub_cmd sc = { 0 };
	struct raidcli_array ra = { 0 };
	struct raid_resync_report rep = { 0 };
	struct cli_progress prog;
	struct fs *fs = NULL;
	int64_t mismatches;
	int rc, ret;

	/* a directory among the arguments: a mount point, the online scrub */
	for (int i = 1; i < argc; i++) {
		struct stat sb;

		if (argv[i][0] != '-' && !stat(argv[i], &sb) && S_ISDIR(sb.st_mode))
			return cmd_scrub_online(argc, argv);
	}
	ret = scrub_opts_parse(&sc, argc, argv);
	if (ret >= 0)
		return ret;
	ret = scrub_open(&sc, &ra);
	if (ret >= 0 && !ra.a)
		return ret;
	if (ret < 0)
		ret = scrub_verifier(&sc, ra.a, &fs);
	if (ret >= 0)
		goto out;
	cli_progress_off = sc.json;
	cli_progress_start(&prog, sc.repair ? "repair" : "scrub", "rows", cli_row_bytes(&ra.info));
	mismatches = raid_scrub(ra.a, sc.repair, cli_progress, &prog, &rep);
	cli_progress_done(&prog);
	raid_set_verifier(ra.a, NULL, NULL);
	if (mismatches < 0) {
		ret = cli_err("scrub of %s... failed: %s", sc.paths[0],
			      strerror((int)-mismatches)) + 2;
		goto out;
	}
	ret = scrub_report(&sc, &rep, mismatches, fs != NULL);
out:
	if (fs)
		fs_unmount(fs); /* read-only: never started, writes nothing */
	rc = raidcli_close(&ra);
	if (rc) {
		cli_err("stopping the array failed: %s", strerror(-rc));
		if (ret < 2)
			ret = 2;
	}
	return ret;
}
