// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_scrub_online.c - `jgrfs scrub MOUNTPOINT`: the online scrub of a
 * mounted volume (issue 23), run by its daemon (FOP_IOC_SCRUB_START,
 * src/fuse/scrub.c) while the volume stays in use. This tool starts it, follows
 * it through FOP_IOC_STATUS and prints what it found, with the files and
 * metadata that own blocks in each mismatched row or unreadable block. Ctrl-C
 * while it waits cancels the scrub (FOP_IOC_SCRUB_CANCEL). cmd_scrub.c hands
 * over here when its argument is a directory; `jgrfs scrub DEV...` stays the
 * offline scrub of an unmounted array.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "raidcli.h"
#include "cmds.h"
#include "jgrfs/fop.h"
#include "jgrfs/fs.h"

static const char scrub_online_help[] =
    "usage: jgrfs scrub [--repair [--trust-data]] [--json] [--max-rate MIB] [--background]\n"
    "                   MOUNTPOINT\n"
    "       jgrfs scrub --cancel MOUNTPOINT\n"
    "       jgrfs scrub --status [--json] MOUNTPOINT\n"
    "\n"
    "Scrub a mounted jgrfs volume online: its daemon reads every stripe row under\n"
    "the locks a writer takes (the volume stays in use and concurrent writes stay\n"
    "correct) and compares the parity with the data. With --repair the\n"
    "filesystem's checksums say which member of a mismatched row is wrong: a block\n"
    "that fails its checksum is rebuilt from the others, the parity is rewritten\n"
    "only when the data verifies (or is free space), and a row whose data has no\n"
    "checksum is left as it is and counted unresolved (its files are named: check\n"
    "them, then --repair --trust-data rewrites such parity from the data). The\n"
    "scrub is paced (--max-rate), at a\n"
    "quarter of that rate while the volume serves other I/O; `jgrfs status\n"
    "MOUNTPOINT` shows its progress and an estimate of the time left. An\n"
    "unmount pauses it: the next mount resumes it from where it was. Every\n"
    "mismatched row and every block that could not be read is reported with the\n"
    "files (paths) and the metadata that own blocks there, here and in the\n"
    "daemon's log.\n"
    "\n"
    "By default this waits, showing progress (on a terminal), and prints the\n"
    "result; Ctrl-C while it waits CANCELS the scrub. With --background it\n"
    "returns once the scrub has started.\n"
    "\n"
    "For an unmounted array give its member devices instead: jgrfs scrub DEV...\n"
    "(jgrfs scrub --help without a mount point).\n"
    "\n"
    "options:\n"
    "  -R, --repair          mend mismatched rows (default: only count)\n"
    "  -T, --trust-data      with --repair: rewrite parity from the data where the\n"
    "                        checksums cannot tell which member is wrong\n"
    "  -j, --json            one JSON object on stdout at the end, no progress\n"
    "  -r, --max-rate MIB    at most MIB MiB of array data per second (default 64;\n"
    "                        0: no limit)\n"
    "  -b, --background      start it and return at once\n"
    "  -c, --cancel          cancel the scrub that runs (it does not resume)\n"
    "  -s, --status          print the state and results of the running or last scrub\n"
    "  -v, --verbose         also the engine's own lines; -vv: everything\n"
    "  -q, --quiet           errors only: no warnings, no progress\n"
    "  -h, --help            this text\n"
    "\n"
    "examples:\n"
    "  jgrfs scrub /mnt/vol\n"
    "  jgrfs scrub --repair --max-rate 200 /mnt/vol\n"
    "  jgrfs scrub --background /mnt/vol; jgrfs status /mnt/vol\n"
    "  jgrfs scrub --cancel /mnt/vol\n"
    "  jgrfs scrub --json /mnt/vol | jq '.results[].owners[].path'\n"
    "\n"
    "exit status: 0 no mismatches and no unreadable blocks, or all repaired;\n"
    "1 mismatches left or unreadable blocks; 2 bad options, the scrub could not\n"
    "run or failed; 3 cancelled (--cancel, Ctrl-C) or never run (--status)\n";

static volatile sig_atomic_t scrub_interrupted;

static void scrub_on_signal(int sig)
{
	(void)sig;
	scrub_interrupted = 1;
}

static const char *scrub_state_name(uint32_t s)
{
	switch (s) {
	case FOP_SCRUB_STATE_IDLE:
		return "idle";
	case FOP_SCRUB_STATE_RUNNING:
		return "running";
	case FOP_SCRUB_STATE_CANCELLED:
		return "cancelled";
	case FOP_SCRUB_STATE_DONE:
		return "done";
	case FOP_SCRUB_STATE_FAILED:
		return "failed";
	case FOP_SCRUB_STATE_PAUSED:
		return "paused";
	default:
		return "unknown";
	}
}

static int scrub_status(int fd, const char *mnt, struct fop_status *st)
{
	memset(st, 0, sizeof(*st));
	if (ioctl(fd, FOP_IOC_STATUS, st))
		return cli_err("%s: status: %s", mnt, strerror(errno)), -errno;
	if (st->version != FOP_STATUS_VERSION || st->size != sizeof(*st))
		return cli_err("%s: the daemon speaks status version %u; this tool %u", mnt,
			       st->version, FOP_STATUS_VERSION),
		       -EPROTO;
	return 0;
}

/* "3:04" or "1:02:03" */
static const char *scrub_hms(uint64_t s, char *buf, size_t len)
{
	if (s >= 3600)
		snprintf(buf, len, "%llu:%02llu:%02llu", (unsigned long long)(s / 3600),
			 (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
	else
		snprintf(buf, len, "%llu:%02llu", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	return buf;
}

static void scrub_owner_text(const struct fop_scrub_result *r, char *buf, size_t len)
{
	const char *kind = fs_owner_kind_name((enum fs_owner_kind)r->owner_kind);

	if (r->ino)
		snprintf(buf, len, "%s (inode %llu, %s)", r->path[0] ? r->path : "(no name)",
			 (unsigned long long)r->ino, kind);
	else if (r->owner_kind == FS_OWNER_ITABLE || r->owner_kind == FS_OWNER_BBITMAP ||
		 r->owner_kind == FS_OWNER_IBITMAP)
		snprintf(buf, len, "metadata: %s group %u", kind, r->group);
	else
		snprintf(buf, len, "metadata: %s", kind);
}

static void scrub_print_text(const char *mnt, const struct fop_status *st)
{
	uint64_t end = st->scrub_end ? st->scrub_end : (uint64_t)time(NULL);
	char t[32], who[400];

	printf("scrub of %s: %s%s, %llu of %llu rows checked, %llu mismatches, %llu repaired "
	       "(%llu blocks rebuilt from checksums), %llu rows unresolved, "
	       "%llu unreadable blocks, %s\n",
	       mnt, scrub_state_name(st->scrub_state),
	       st->scrub_flags & FOP_SCRUB_REPAIR ? " (repair)" : "",
	       (unsigned long long)st->scrub_rows_done, (unsigned long long)st->scrub_rows_total,
	       (unsigned long long)st->scrub_mismatches, (unsigned long long)st->scrub_repaired,
	       (unsigned long long)st->scrub_rebuilt, (unsigned long long)st->scrub_unresolved,
	       (unsigned long long)st->scrub_unreadable,
	       scrub_hms(st->scrub_start && end > st->scrub_start ? end - st->scrub_start : 0, t,
			 sizeof(t)));
	if (st->scrub_state == FOP_SCRUB_STATE_FAILED)
		printf("  failed: %s\n", st->scrub_error == -EAGAIN
					     ? "the array is degraded (rebuild first)"
					     : strerror(-st->scrub_error));
	for (uint32_t i = 0; i < st->scrub_nresults && i < FOP_SCRUB_RESULTS; i++) {
		const struct fop_scrub_result *r = &st->scrub_results[i];

		scrub_owner_text(r, who, sizeof(who));
		if (r->kind == FOP_SCRUB_MISMATCH)
			printf("  mismatch row %llu: %s\n", (unsigned long long)r->row, who);
		else
			printf("  unreadable block %llu (row %llu): %s\n",
			       (unsigned long long)r->blkno, (unsigned long long)r->row, who);
	}
	if (st->scrub_results_more)
		printf("  ... and %llu more (named in the daemon's log)\n",
		       (unsigned long long)st->scrub_results_more);
	if (st->scrub_unresolved)
		printf("  %llu rows: cannot tell which member is wrong (data without a checksum): "
		       "not repaired; check the files named above against a backup\n",
		       (unsigned long long)st->scrub_unresolved);
}

static void scrub_print_json(const char *mnt, const struct fop_status *st)
{
	uint64_t end = st->scrub_end ? st->scrub_end : (uint64_t)time(NULL);
	bool open = false;

	printf("{\"mountpoint\":");
	raidcli_json_str(stdout, mnt);
	printf(",\"state\":\"%s\",\"repair\":%s,\"rows_checked\":%llu,\"rows_total\":%llu,"
	       "\"mismatches\":%llu,\"repaired\":%llu,\"rebuilt\":%llu,\"unresolved\":%llu,"
	       "\"unreadable\":%llu,\"seconds\":%llu,"
	       "\"rate_bytes\":%llu,\"max_rate_bytes\":%llu,\"error\":%d,\"results\":[",
	       scrub_state_name(st->scrub_state),
	       st->scrub_flags & FOP_SCRUB_REPAIR ? "true" : "false",
	       (unsigned long long)st->scrub_rows_done, (unsigned long long)st->scrub_rows_total,
	       (unsigned long long)st->scrub_mismatches, (unsigned long long)st->scrub_repaired,
	       (unsigned long long)st->scrub_rebuilt, (unsigned long long)st->scrub_unresolved,
	       (unsigned long long)st->scrub_unreadable,
	       (unsigned long long)(st->scrub_start && end > st->scrub_start ? end - st->scrub_start
									     : 0),
	       (unsigned long long)st->scrub_rate, (unsigned long long)st->scrub_max_rate,
	       st->scrub_error);
	/* results come by row (or block): consecutive owners of one row are one entry */
	for (uint32_t i = 0; i < st->scrub_nresults && i < FOP_SCRUB_RESULTS; i++) {
		const struct fop_scrub_result *r = &st->scrub_results[i], *p = r - 1;
		bool same =
		    i && p->kind == r->kind &&
		    (r->kind == FOP_SCRUB_MISMATCH ? p->row == r->row : p->blkno == r->blkno);

		if (!same) {
			if (open)
				printf("]},");
			printf("{\"row\":%llu,\"kind\":\"%s\",", (unsigned long long)r->row,
			       r->kind == FOP_SCRUB_MISMATCH ? "mismatch" : "unreadable");
			if (r->kind == FOP_SCRUB_UNREADABLE)
				printf("\"block\":%llu,", (unsigned long long)r->blkno);
			printf("\"owners\":[");
			open = true;
		} else {
			putchar(',');
		}
		printf("{\"path\":");
		if (r->path[0])
			raidcli_json_str(stdout, r->path);
		else
			printf("null");
		printf(",\"inode\":%llu,\"kind\":\"%s\"", (unsigned long long)r->ino,
		       fs_owner_kind_name((enum fs_owner_kind)r->owner_kind));
		if (!r->ino)
			printf(",\"group\":%u", r->group);
		putchar('}');
	}
	if (open)
		printf("]}");
	printf("],\"results_more\":%llu}\n", (unsigned long long)st->scrub_results_more);
}

/* The exit status of a finished scrub, as the offline one's. */
static int scrub_exit(const struct fop_status *st)
{
	if (st->scrub_state != FOP_SCRUB_STATE_DONE)
		return st->scrub_state == FOP_SCRUB_STATE_FAILED ? 2 : 3;
	if (st->scrub_unreadable || st->scrub_unresolved)
		return 1;
	if (st->scrub_mismatches &&
	    !((st->scrub_flags & FOP_SCRUB_REPAIR) && st->scrub_repaired >= st->scrub_mismatches))
		return 1;
	return 0;
}

/* Follow the running scrub until it ends, with cli_progress; Ctrl-C cancels it. */
static int scrub_wait(int fd, const char *mnt, bool json, struct fop_status *st)
{
	bool cancelled = false;
	struct cli_progress prog;
	struct sigaction sa;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = scrub_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cli_progress_off = json;
	cli_progress_start(&prog, "scrub", "rows", 0);
	for (;;) {
		rc = scrub_status(fd, mnt, st);
		if (rc || st->scrub_state != FOP_SCRUB_STATE_RUNNING)
			break;
		if (scrub_interrupted && !cancelled) {
			cancelled = true;
			cli_progress_done(&prog);
			if (ioctl(fd, FOP_IOC_SCRUB_CANCEL) && errno != ENOENT)
				cli_err("%s: cancel: %s", mnt, strerror(errno));
			else if (!json)
				fprintf(stderr, "cancelling the scrub\n");
		}
		cli_progress(&prog, st->scrub_rows_done, st->scrub_rows_total);
		usleep(200 * 1000);
	}
	cli_progress_done(&prog);
	return rc;
}

/* What the command line asks. */
struct scrub_online_cmd {
	struct fop_scrub rq;
	bool json, background, cancel, status;
	const char *mnt;
};

/* Options into @so: -1 to go on, else the exit status. */
static int scrub_online_opts(struct scrub_online_cmd *so, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"repair", no_argument, NULL, 'R'},		{"json", no_argument, NULL, 'j'},
	    {"max-rate", required_argument, NULL, 'r'}, {"background", no_argument, NULL, 'b'},
	    {"cancel", no_argument, NULL, 'c'},		{"status", no_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},		CLI_VERBOSITY_LONGOPTS,
	    {"trust-data", no_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},		{NULL, 0, NULL, 0},
	};
	uint64_t mib;
	int opt;

	so->rq.max_rate = UINT64_MAX;
	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, "RTjr:bcsh" CLI_VERBOSITY_SHORTOPTS, longopts,
				     scrub_online_help)) != -1) {
		switch (opt) {
		case RAIDCLI_OPT_HELP:
			return 0;
		case 'R':
			so->rq.flags |= FOP_SCRUB_REPAIR;
			break;
		case 'T':
			so->rq.flags |= FOP_SCRUB_TRUST_DATA;
			break;
		case 'j':
			so->json = true;
			break;
		case 'r':
			if (cli_parse_u64(optarg, 1u << 20, &mib))
				return cli_usage_err(2, "--max-rate %s: MiB per second expected",
						     optarg);
			so->rq.max_rate = mib << 20;
			break;
		case 'b':
			so->background = true;
			break;
		case 'c':
			so->cancel = true;
			break;
		case 's':
			so->status = true;
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	if ((so->rq.flags & FOP_SCRUB_TRUST_DATA) && !(so->rq.flags & FOP_SCRUB_REPAIR)) {
		return cli_usage_err(2, "--trust-data goes with --repair");
	}
	if (argc - optind != 1 || (so->cancel && so->status))
		return cli_usage_err(2, so->cancel && so->status ? "--cancel and --status together"
								 : "expected one MOUNTPOINT");
	so->mnt = argv[optind];
	return -1;
}

/* --cancel: cancel the running scrub and wait until it has stopped. The exit status. */
static int scrub_online_cancel(int fd, const char *mnt)
{
	struct fop_status st;

	if (ioctl(fd, FOP_IOC_SCRUB_CANCEL)) {
		cli_err("%s: %s", mnt,
			errno == ENOENT	  ? "no scrub runs"
			: errno == ENOTTY ? "not a jgrfs mount"
					  : strerror(errno));
		return errno == ENOENT ? 1 : 2;
	}
	if (!scrub_wait(fd, mnt, true, &st))
		printf("scrub of %s: %s at row %llu of %llu\n", mnt,
		       scrub_state_name(st.scrub_state), (unsigned long long)st.scrub_rows_done,
		       (unsigned long long)st.scrub_rows_total);
	return 0;
}

/* Start the scrub @so asks for; 0, or -1 after a message saying why the daemon refused. */
static int scrub_online_start(int fd, const struct scrub_online_cmd *so)
{
	const char *mnt = so->mnt;

	if (!ioctl(fd, FOP_IOC_SCRUB_START, &so->rq))
		return 0;
	switch (errno) {
	case EBUSY:
		cli_err("%s: a scrub already runs (jgrfs status %s; jgrfs scrub --cancel %s)", mnt,
			mnt, mnt);
		break;
	case EAGAIN:
		cli_err("%s: the array is degraded; parity cannot be checked without every "
			"member (rebuild first: jgrfs replace, jgrfs spare)",
			mnt);
		break;
	case EROFS:
		cli_err("%s: mounted read-only: the online scrub needs a read-write mount", mnt);
		break;
	case ENOTTY:
	case ENOSYS:
		cli_err("%s: not a jgrfs mount (or its daemon has no online scrub)", mnt);
		break;
	default:
		cli_err("%s: cannot start the scrub: %s", mnt, strerror(errno));
	}
	return -1;
}

int cmd_scrub_online(int argc, char **argv)
{
	struct scrub_online_cmd so = { 0 };
	struct fop_status st;
	const char *mnt;
	int fd, ret;

	ret = scrub_online_opts(&so, argc, argv);
	if (ret >= 0)
		return ret;
	mnt = so.mnt;
	fd = open(mnt, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	if (fd < 0)
		return cli_err("%s: %s", mnt, strerror(errno)) + 1;
	ret = 2;
	if (so.cancel) {
		ret = scrub_online_cancel(fd, mnt);
		goto out;
	}
	if (so.status) {
		if (scrub_status(fd, mnt, &st))
			goto out;
		if (so.json)
			scrub_print_json(mnt, &st);
		else
			scrub_print_text(mnt, &st);
		ret = st.scrub_state == FOP_SCRUB_STATE_RUNNING ? 0 : scrub_exit(&st);
		goto out;
	}
	if (scrub_online_start(fd, &so))
		goto out;
	if (so.background) {
		if (!so.json)
			printf("scrub of %s started; follow it with: jgrfs status %s\n", mnt, mnt);
		ret = 0;
		goto out;
	}
	if (scrub_wait(fd, mnt, so.json, &st)) {
		cli_err("%s: lost the daemon; if the volume was unmounted, its next mount resumes "
			"the scrub",
			mnt);
		goto out;
	}
	if (so.json)
		scrub_print_json(mnt, &st);
	else
		scrub_print_text(mnt, &st);
	ret = scrub_exit(&st);
out:
	close(fd);
	return ret;
}
