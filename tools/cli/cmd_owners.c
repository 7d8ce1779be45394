// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_owners.c - `jgrfs owners`: which files and metadata own array blocks
 * or stripe rows (issues 22, 23: a scrub mismatch, a block no member could give
 * back, the rows in flight at a crash).
 *
 *	jgrfs owners [--json] [--max N] [--no-paths] --block LIST | --row LIST DEV...
 *
 * Never writes, as fsck -n: the members are assembled read-only, without the
 * recovery resync, degraded or dirty alike (force), and the filesystem is mounted
 * read-only (its journal replayed in memory). fs_owners() does the work; rows are
 * turned into array blocks with the array's geometry (raid_info: row r holds the
 * ndata * chunk_blocks array blocks from r * ndata * chunk_blocks, FORMAT.md §2.1).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

static const char cmd_owners_help[] =
	"usage: jgrfs owners [options] --block LIST DEV...\n"
	"       jgrfs owners [options] --row LIST DEV...\n"
	"\n"
	"Name what the filesystem on the array of members DEV keeps in the given array\n"
	"blocks or stripe rows: for each run of blocks with one owner, the array blocks,\n"
	"the stripe row, the kind (data, directory, symlink, indirect, xattr,\n"
	"inode-table, block-bitmap, inode-bitmap, group-descriptors, superblock,\n"
	"journal, free, unclaimed, outside, data-checksums), the inode, the logical\n"
	"block in the file and every path naming it (an open-unlinked file is named as\n"
	"an orphan).\n"
	"Nothing is written: the array is assembled read-only (degraded or not shut down\n"
	"cleanly, too) and the journal is replayed in memory. The volume must not be\n"
	"mounted: changes a mount has not written out would be missed.\n"
	"\n"
	"options:\n"
	"  -b, --block LIST   array blocks: N or N-M (inclusive), comma-separated\n"
	"  -r, --row LIST     stripe rows, as scrub and status number them: N or N-M,\n"
	"                     comma-separated; a row is its data blocks (parity has no\n"
	"                     owner of its own: it covers the row)\n"
	"  -m, --max N        at most N reports (default 4096); blocks past them are\n"
	"                     counted as left out\n"
	"  -P, --no-paths     do not look up names (skips the scan of directories)\n"
	"  -j, --json         one JSON object on stdout\n"
	"  -v, --verbose      also the engine's own lines; -vv: everything\n"
	"  -q, --quiet        errors only: no warnings, no progress\n"
	"      --wait         when a member is in use by another jgrfs process\n"
	"                     (a mount being stopped, an fsck), wait for it\n"
	"  -h, --help         this text\n"
	"\n"
	"examples:\n"
	"  jgrfs owners --row 812 d0.img d1.img d2.img d3.img\n"
	"  jgrfs owners --json --block 40960-40975,52000 /dev/sd[b-e]\n"
	"\n"
	"exit status: 0 answered; 1 answered, but some structures could not be read\n"
	"(owners in them may be missing; the log names them); 2 bad options, or the\n"
	"array or filesystem could not be opened\n";

/* The question: runs of array blocks, sorted and merged before fs_owners. */
struct owners_q {
	struct fs_extent *ext;
	size_t n, room;
};

static int owners_q_add(struct owners_q *q, uint64_t start, uint64_t count)
{
	if (q->n == q->room) {
		size_t room = q->room ? q->room * 2 : 16;
		struct fs_extent *e = realloc(q->ext, room * sizeof(*e));

		if (!e)
			return -ENOMEM;
		q->ext = e;
		q->room = room;
	}
	q->ext[q->n++] = (struct fs_extent){ .start = start, .count = count };
	return 0;
}

static int owners_ext_cmp(const void *a, const void *b)
{
	const struct fs_extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void owners_q_merge(struct owners_q *q)
{
	size_t out = 0;

	qsort(q->ext, q->n, sizeof(*q->ext), owners_ext_cmp);
	for (size_t i = 0; i < q->n; i++) {
		struct fs_extent *last = out ? &q->ext[out - 1] : NULL;

		if (last && q->ext[i].start <= last->start + last->count) {
			uint64_t end = q->ext[i].start + q->ext[i].count;

			if (end > last->start + last->count)
				last->count = end - last->start;
		} else {
			q->ext[out++] = q->ext[i];
		}
	}
	q->n = out;
}

/* "N", "N-M", comma-separated, into @q as runs of numbers (blocks or rows). */
static int owners_parse_list(const char *list, const char *what, struct owners_q *q)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t a, b;

		if (dash)
			*dash = 0;
		if (cli_parse_u64(tok, UINT64_MAX - 1, &a) ||
		    (dash ? cli_parse_u64(dash + 1, UINT64_MAX - 1, &b) : (b = a, 0)) || b < a) {
			if (dash)
				*dash = '-';
			cli_err("bad %s '%s': give N or N-M (N <= M), comma-separated", what, tok);
			rc = -EINVAL;
			break;
		}
		rc = owners_q_add(q, a, b - a + 1);
	}
	if (!rc && !q->n) {
		cli_err("no %s given", what);
		rc = -EINVAL;
	}
	free(copy);
	return rc;
}

/* Check the runs of @q against @limit, then make each number @unit blocks (rows). */
static int owners_q_scale(struct owners_q *q, const char *what, uint64_t limit, uint64_t unit)
{
	for (size_t i = 0; i < q->n; i++) {
		uint64_t last = q->ext[i].start + q->ext[i].count - 1;

		if (last >= limit) {
			cli_err("%s %" PRIu64 " is past the array's end (%" PRIu64 " %ss)", what,
				last, limit, what);
			return -EINVAL;
		}
		q->ext[i].start *= unit;
		q->ext[i].count *= unit;
	}
	return 0;
}

struct owners_out {
	bool json;
	uint64_t row_blocks;
	unsigned int nreports;
};

/* @s with control bytes shown as \xNN (a name may hold any byte but '/' and NUL). */
static void owners_text_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static bool owners_has_inode(enum fs_owner_kind k)
{
	return k == FS_OWNER_DATA || k == FS_OWNER_DIR || k == FS_OWNER_SYMLINK ||
	       k == FS_OWNER_INDIRECT || k == FS_OWNER_XATTR;
}

static bool owners_has_lblk(enum fs_owner_kind k)
{
	return k == FS_OWNER_DATA || k == FS_OWNER_DIR || k == FS_OWNER_SYMLINK;
}

static void owners_print_json(struct owners_out *out, const struct fs_owner *o)
{
	printf("%s{\"block\":%" PRIu64 ",\"count\":%" PRIu64 ",\"row\":%" PRIu64 ",\"kind\":\"%s\"",
	       out->nreports ? "," : "", o->blkno, o->count, o->blkno / out->row_blocks,
	       fs_owner_kind_name(o->kind));
	if (o->kind == FS_OWNER_ITABLE || o->kind == FS_OWNER_BBITMAP ||
	    o->kind == FS_OWNER_IBITMAP)
		printf(",\"group\":%u", o->group);
	if (o->kind == FS_OWNER_ITABLE)
		printf(",\"inode_first\":%" PRIu64 ",\"inode_last\":%" PRIu64, o->ino, o->ino_last);
	if (owners_has_inode(o->kind)) {
		printf(",\"inode\":%" PRIu64 ",\"type\":\"%s\",\"nlink\":%u,\"orphan\":%s", o->ino,
		       S_ISDIR(o->mode) ? "directory" : S_ISLNK(o->mode) ? "symlink" :
		       S_ISREG(o->mode) ? "file" : "other", o->nlink, o->orphan ? "true" : "false");
		if (owners_has_lblk(o->kind))
			printf(",\"logical\":%" PRIu64, o->lblk);
		if (o->kind == FS_OWNER_INDIRECT)
			printf(",\"level\":%u,\"maps_from\":%" PRIu64, o->level, o->lblk);
		printf(",\"paths\":[");
		for (unsigned int i = 0; i < o->npaths; i++) {
			if (i)
				putchar(',');
			raidcli_json_str(stdout, o->paths[i]);
		}
		printf("],\"paths_left_out\":%" PRIu64, o->paths_left_out);
	}
	putchar('}');
}

static void owners_print_text(struct owners_out *out, const struct fs_owner *o)
{
	char blocks[48], rows[48], detail[96] = "";
	uint64_t row = o->blkno / out->row_blocks, row_last = (o->blkno + o->count - 1) /
							     out->row_blocks;

	if (o->count == 1)
		snprintf(blocks, sizeof(blocks), "%" PRIu64, o->blkno);
	else
		snprintf(blocks, sizeof(blocks), "%" PRIu64 "-%" PRIu64, o->blkno,
			 o->blkno + o->count - 1);
	if (!out->nreports)
		printf("%-10s %-23s %-17s %-9s %-13s %s\n", "ROW", "BLOCKS", "KIND", "INODE",
		       "LOGICAL", "OWNER");
	switch (o->kind) {
	case FS_OWNER_ITABLE:
		snprintf(detail, sizeof(detail), "group %u, inodes %" PRIu64 "-%" PRIu64, o->group,
			 o->ino, o->ino_last);
		break;
	case FS_OWNER_BBITMAP:
	case FS_OWNER_IBITMAP:
		snprintf(detail, sizeof(detail), "group %u", o->group);
		break;
	case FS_OWNER_INDIRECT:
		snprintf(detail, sizeof(detail), "level %u, maps from logical %" PRIu64 ": ",
			 o->level, o->lblk);
		break;
	default:
		break;
	}
	if (row == row_last)
		snprintf(rows, sizeof(rows), "%" PRIu64, row);
	else
		snprintf(rows, sizeof(rows), "%" PRIu64 "-%" PRIu64, row, row_last);
	printf("%-10s %-23s %-17s ", rows, blocks, fs_owner_kind_name(o->kind));
	if (!owners_has_inode(o->kind)) {
		if (*detail)
			printf("%-9s %-13s %s\n", "-", "-", detail);
		else
			printf("%-9s -\n", "-");
		return;
	}
	if (owners_has_lblk(o->kind)) {
		char lb[40];

		if (o->count == 1)
			snprintf(lb, sizeof(lb), "%" PRIu64, o->lblk);
		else
			snprintf(lb, sizeof(lb), "%" PRIu64 "-%" PRIu64, o->lblk,
				 o->lblk + o->count - 1);
		printf("%-9" PRIu64 " %-13s %s", o->ino, lb, detail);
	} else {
		printf("%-9" PRIu64 " %-13s %s", o->ino, "-", detail);
	}
	if (o->npaths)
		owners_text_str(o->paths[0]);
	else if (o->orphan && !o->nlink)
		printf("(open-unlinked: on the orphan list, no name)");
	else
		printf("(no name found)");
	if (o->orphan && o->nlink)
		printf(" (on the orphan list: being truncated)");
	putchar('\n');
	for (unsigned int i = 1; i < o->npaths; i++) {
		printf("%-10s %-23s %-17s %-9s %-13s %s", "", "", "", "", "", "also ");
		owners_text_str(o->paths[i]);
		putchar('\n');
	}
	if (o->paths_left_out)
		printf("%-10s %-23s %-17s %-9s %-13s and %" PRIu64 " more names\n", "", "", "", "",
		       "", o->paths_left_out);
}

static int owners_print(void *ctx, const struct fs_owner *o)
{
	struct owners_out *out = ctx;

	if (out->json)
		owners_print_json(out, o);
	else
		owners_print_text(out, o);
	out->nreports++;
	return 0;
}

/* What the command line asks. */
struct owners_cmd {
	const char *blocks, *rows;	/* --block or --row LIST: one of them */
	struct fs_owners_opts oo;
	struct owners_out out;
	char **paths;			/* the members */
	int n;
};

/* Options into @oc: -1 to go on, else the exit status. */
static int owners_opts_parse(struct owners_cmd *oc, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "block", required_argument, NULL, 'b' },
		{ "row", required_argument, NULL, 'r' },
		{ "max", required_argument, NULL, 'm' },
		{ "no-paths", no_argument, NULL, 'P' },
		{ "json", no_argument, NULL, 'j' },
		RAIDCLI_COMMON_LONGOPTS,
	};
	int opt;
	uint64_t v;

	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, "b:r:m:Pjh" CLI_VERBOSITY_SHORTOPTS, longopts,
				     cmd_owners_help)) != -1) {
		switch (opt) {
		case RAIDCLI_OPT_HELP:
			return 0;
		case 'b':
			oc->blocks = optarg;
			break;
		case 'r':
			oc->rows = optarg;
			break;
		case 'm':
			if (cli_parse_u64(optarg, UINT64_MAX, &v) || !v)
				return cli_usage_err(2, "bad --max '%s': a count, at least 1",
						     optarg);
			oc->oo.max_reports = v;
			break;
		case 'P':
			oc->oo.no_paths = true;
			break;
		case 'j':
			oc->out.json = true;
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	oc->paths = argv + optind;
	oc->n = argc - optind;
	if (!oc->blocks == !oc->rows)
		return cli_usage_err(2, oc->blocks ? "give --block or --row, not both"
						   : "give --block or --row");
	if (oc->n < 1)
		return cli_usage_err(2, "no member devices given");
	if (raidcli_count_check(oc->n))
		return 2;
	return -1;
}

/* The summary after the reports. */
static void owners_print_summary(const struct owners_cmd *oc, const struct fs_owners_summary *sum)
{
	if (oc->out.json) {
		printf("],\"blocks_asked\":%" PRIu64 ",\"reports_made\":%" PRIu64
		       ",\"blocks_left_out\":%" PRIu64 ",\"inodes_scanned\":%" PRIu64
		       ",\"unreadable\":%" PRIu64 "}\n", sum->blocks, sum->reports,
		       sum->blocks_left_out, sum->inodes_scanned, sum->unreadable);
		return;
	}
	printf("\nblocks asked about: %" PRIu64 ", reports: %" PRIu64
	       ", inodes scanned: %" PRIu64 "\n", sum->blocks, sum->reports,
	       sum->inodes_scanned);
	if (sum->blocks_left_out)
		printf("%" PRIu64 " blocks left out: more than %" PRIu64
		       " reports (--max)\n", sum->blocks_left_out,
		       oc->oo.max_reports ? oc->oo.max_reports : (uint64_t)FS_OWNERS_MAX_REPORTS);
	if (sum->unreadable)
		printf("%" PRIu64 " structures could not be read (see the log above): "
		       "owners in them may be missing\n", sum->unreadable);
}

/*
 * The question @q against the assembled array @ra: checked against its size,
 * the filesystem opened read-only (its journal replayed in memory), the
 * owners reported. Returns the exit status; *@fs for the caller to unmount.
 */
static int owners_answer(struct owners_cmd *oc, struct raidcli_array *ra, struct owners_q *q,
			 struct fs **fs)
{
	struct fs_mount_opts mo = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				    .readonly = true };
	struct fs_owners_summary sum;
	int rc;

	oc->out.row_blocks = (uint64_t)ra->info.ndata * ra->info.chunk_blocks;
	if (oc->blocks)
		rc = owners_q_scale(q, "block", ra->info.array_blocks, 1);
	else
		rc = owners_q_scale(q, "row", ra->info.rows, oc->out.row_blocks);
	if (rc)
		return 2;
	owners_q_merge(q);
	if (ra->info.degraded && !oc->out.json)
		fprintf(stderr, "%s: note: the array is degraded\n", cli_prog);
	rc = fs_mount(raid_array_dev(ra->a), &mo, fs);
	if (rc) {
		cli_err("%s...: cannot open the filesystem: %s", oc->paths[0], strerror(-rc));
		return 2;
	}
	if (oc->out.json)
		printf("{\"row_blocks\":%" PRIu64 ",\"reports\":[", oc->out.row_blocks);
	rc = fs_owners(*fs, q->ext, q->n, &oc->oo, owners_print, &oc->out, &sum);
	if (rc) {
		if (oc->out.json)
			printf("]}\n");
		cli_err("finding the owners failed: %s", strerror(-rc));
		return 2;
	}
	owners_print_summary(oc, &sum);
	return sum.unreadable ? 1 : 0;
}

int cmd_owners(int argc, char **argv)
{
	struct owners_cmd oc = { 0 };
	/* never write: degraded and dirty arrays are read as they lie (fsck -n) */
	struct raidcli_array ra = {
		.lock = CLI_LOCK_SHARED, /* read-only: beside another reader */
		.cfg = { .force = true, .readonly = true, .no_resync = true },
	};
	struct owners_q q = { 0 };
	struct fs *fs = NULL;
	int rc, ret;

	ret = owners_opts_parse(&oc, argc, argv);
	if (ret >= 0)
		return ret;
	rc = owners_parse_list(oc.blocks ? oc.blocks : oc.rows, oc.blocks ? "block" : "row", &q);
	if (rc) {
		if (rc == -ENOMEM)
			cli_err("out of memory");
		free(q.ext);
		return 2;
	}
	ra.paths = oc.paths;
	ra.n = oc.n;
	if (raidcli_open(&ra)) {
		free(q.ext);
		return 2;
	}
	ret = owners_answer(&oc, &ra, &q, &fs);
	if (fs)
		fs_unmount(fs);	/* read-only: never started, writes nothing */
	free(q.ext);
	rc = raidcli_close(&ra);
	if (rc && ret < 2)
		ret = cli_err("stopping the array failed: %s", strerror(-rc)) + 1;
	return ret;
}
