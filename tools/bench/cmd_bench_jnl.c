// SPDX-License-Identifier: MIT
/*
 * tools/bench/cmd_bench_jnl.c - `jgrfs bench jnl`: what the journal costs per data mode,
 * and how long declared-mode recovery takes against the work in flight.
 *
 *	jgrfs bench jnl [--dir DIR] [--size SIZE] [--members N] [--chunk SIZE]
 *			[--txns N] [--meta M] [--data D] [--journal SIZE] [--json]
 *
 * One RAID5 array (resync policy journal) over member files (io_uring, O_DIRECT)
 * in a fresh directory. Part 1, commit throughput: for each data mode, a fresh
 * journal at the end of the array; --txns transactions of --meta metadata blocks
 * and --data data blocks each (data sequential through the data area, metadata
 * in a small hot set), each made durable with jnl_commit(wait) (fsync), through
 * the commit thread. Reported: transactions/s, MB/s of data, durability points
 * and log blocks per commit. Part 2, declared recovery: for N in-flight data
 * blocks (a running transaction that declared and wrote them early, then a
 * crash: jnl_abandon + raid_abandon), reassemble and time jnl_recover(); the
 * rows it resynced, against a scrub of the whole array (what a full resync reads).
 * The files are removed at the end. A command a person runs, never a timed test.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "../cli/cmds.h"
#include "jgrfs/journal.h"
#include "jgrfs/raid.h"

#define BJ_MEMBERS_MAX 16

static const char cmd_bench_jnl_help[] =
	"usage: jgrfs bench jnl [options]\n"
	"\n"
	"Commit throughput of the journal per data mode (writeback, ordered, journal,\n"
	"declared) on one RAID5 array over member files, every transaction fsynced;\n"
	"then data=declared recovery time against the number of in-flight data blocks.\n"
	"\n"
	"options:\n"
	"  -d, --dir DIR        where to put member files (default: a new directory\n"
	"                       ./jgrfs-bench-jnl.XXXXXX, removed at the end); a real\n"
	"                       filesystem (O_DIRECT)\n"
	"  -s, --size SIZE      per member file (default 128M)\n"
	"  -m, --members N      member files, 3 to 16 (default 4)\n"
	"  -c, --chunk SIZE     chunk size, power of two, 4K to 4M (default 64K)\n"
	"  -t, --txns N         transactions per mode (default 300)\n"
	"  -M, --meta M         metadata blocks per transaction (default 8)\n"
	"  -D, --data D         data blocks per transaction (default 64)\n"
	"  -J, --journal SIZE   journal size (default 32M)\n"
	"  -j, --json           one JSON object on stdout\n"
	"  -v, --verbose        also the engine's own lines; -vv: everything\n"
	"  -q, --quiet          errors only: no warnings, no progress\n"
	"  -h, --help           this text\n"
	"\n"
	"Use a release build (make release) for figures.\n"
	"exit status: 0 measured, 1 bad options, 2 a run failed\n";

struct bj_opts {
	const char *dir;
	uint64_t size_bytes, journal_bytes;
	unsigned int members, txns, meta, data;
	uint32_t chunk_blocks;
	bool json;
};

struct bj_state {
	struct bj_opts o;
	char dir[PATH_MAX];
	bool made_dir;
	char *paths[BJ_MEMBERS_MAX];
	struct raid_array *a;
	struct blk_dev *dev;
	uint64_t jstart, jblocks, data_blocks;
	uint8_t uuid[16];
};

struct bj_mode_res {
	double tps, mbs, flushes_per_commit, seconds;
	uint64_t commits, log_blocks;
};

struct bj_rec_res {
	uint64_t inflight;
	double seconds;
	struct jnl_recovery_report rep;
};

static int bj_assemble(struct bj_state *st)
{
	struct blk_dev *devs[BJ_MEMBERS_MAX];
	int rc;

	for (unsigned int i = 0; i < st->o.members; i++) {
		rc = raid_dev_uring_open(st->paths[i], st->o.size_bytes / JG_BLOCK_SIZE, &devs[i]);
		if (rc) {
			cli_err("%s: %s", st->paths[i], strerror(-rc));
			while (i--)
				blk_close(devs[i]);
			return rc;
		}
	}
	rc = raid_assemble(devs, st->o.members, NULL, &st->a);
	if (rc) {
		for (unsigned int i = 0; i < st->o.members; i++)
			blk_close(devs[i]);
		return cli_err("assemble: %s", strerror(-rc)), rc;
	}
	st->dev = raid_array_dev(st->a);
	return 0;
}

static int bj_create(struct bj_state *st)
{
	struct raid_create_cfg cc = { .assume_clean = true, /* zeroed new members */ .level = 5, .chunk_blocks = st->o.chunk_blocks,
				      .resync = RAID_RESYNC_JOURNAL };
	struct blk_dev *devs[BJ_MEMBERS_MAX];
	int rc;

	for (unsigned int i = 0; i < st->o.members; i++) {
		char p[PATH_MAX + 16];

		snprintf(p, sizeof(p), "%s/m%u", st->dir, i);
		st->paths[i] = strdup(p);
		if (!st->paths[i])
			return -ENOMEM;
		rc = raid_dev_uring_open(p, st->o.size_bytes / JG_BLOCK_SIZE, &devs[i]);
		if (rc) {
			cli_err("%s: %s", p, strerror(-rc));
			while (i--)
				blk_close(devs[i]);
			return rc;
		}
	}
	rc = raid_create(devs, st->o.members, &cc, true);
	for (unsigned int i = 0; i < st->o.members; i++)
		blk_close(devs[i]);
	if (rc)
		return cli_err("create: %s", strerror(-rc)), rc;
	rc = bj_assemble(st);
	if (rc)
		return rc;
	st->jblocks = st->o.journal_bytes / JG_BLOCK_SIZE;
	if (st->jblocks < JNL_MIN_BLOCKS || st->jblocks * 2 > st->dev->nblocks)
		return cli_err("journal of %llu blocks does not fit an array of %llu",
			       (unsigned long long)st->jblocks, (unsigned long long)st->dev->nblocks), -EINVAL;
	st->jstart = st->dev->nblocks - st->jblocks;
	st->data_blocks = st->jstart - 1024;	/* blocks 0..1023: the metadata hot set */
	jg_uuid_generate(st->uuid);
	return 0;
}

static int bj_open(struct bj_state *st, enum jnl_data_mode mode, bool thread, struct jnl **out)
{
	struct jnl_cfg cfg = { .start_blkno = st->jstart, .mode = mode, .no_commit_thread = !thread };
	int rc;

	rc = jnl_open(st->dev, &cfg, out);
	if (!rc)
		rc = jnl_recover(*out, NULL);
	if (!rc)
		rc = jnl_start(*out);
	if (rc)
		cli_err("journal (%s): %s", jnl_data_mode_name(mode), strerror(-rc));
	return rc;
}

/* Part 1: fsynced transactions in one mode. */
static int bj_mode(struct bj_state *st, enum jnl_data_mode mode, struct bj_mode_res *res)
{
	uint8_t *blk = jg_alloc_blocks(1);
	struct jnl_info a, b;
	uint64_t dpos = 0, x = 0x9e3779b97f4a7c15ull;
	struct jnl *j = NULL;
	double t0;
	int rc;

	if (!blk)
		return -ENOMEM;
	rc = jnl_format(st->dev, st->jstart, st->jblocks, st->uuid);
	if (!rc)
		rc = bj_open(st, mode, true, &j);
	if (rc)
		goto out;
	memset(blk, 0xa5, JG_BLOCK_SIZE);
	jnl_info_get(j, &a);
	t0 = jg_now_seconds();
	for (unsigned int t = 0; t < st->o.txns && !rc; t++) {
		struct jnl_handle *h;
		unsigned int credits = st->o.meta + (mode == JNL_DATA_JOURNAL ? st->o.data : 0);

		rc = jnl_handle_start(j, credits ? credits : 1, &h);
		if (rc)
			break;
		for (unsigned int k = 0; k < st->o.meta && !rc; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(blk, &t, sizeof(t));
			rc = jnl_handle_dirty_meta(h, x % 1024, blk);
		}
		for (unsigned int k = 0; k < st->o.data && !rc; k++) {
			rc = jnl_handle_dirty_data(h, 1024 + dpos, blk);
			dpos = (dpos + 1) % st->data_blocks;
		}
		{
			uint64_t tid = jnl_handle_tid(h);
			int src = jnl_handle_stop(h);

			if (!rc)
				rc = src;
			if (!rc)
				rc = jnl_commit(j, tid, true);
		}
	}
	res->seconds = jg_now_seconds() - t0;
	jnl_info_get(j, &b);
	if (rc) {
		cli_err("%s: transaction failed: %s", jnl_data_mode_name(mode), strerror(-rc));
		jnl_abandon(j);
		goto out;
	}
	res->commits = b.commits - a.commits;
	res->tps = st->o.txns / res->seconds;
	res->mbs = (double)st->o.txns * st->o.data * JG_BLOCK_SIZE / res->seconds / 1e6;
	res->flushes_per_commit = res->commits ? (double)(b.flushes - a.flushes) / res->commits : 0;
	rc = jnl_close(j);
out:
	free(blk);
	return rc;
}

/* Part 2: a crash with @n declared data blocks in flight, then recovery. */
static int bj_recovery(struct bj_state *st, uint64_t n, struct bj_rec_res *res)
{
	uint8_t *blk = jg_alloc_blocks(1);
	struct jnl_cfg cfg = { .start_blkno = st->jstart, .mode = JNL_DATA_DECLARED,
			       .no_commit_thread = true };
	struct jnl_handle *h = NULL;
	struct jnl *j = NULL;
	int rc;

	if (!blk)
		return -ENOMEM;
	memset(blk, 0x3c, JG_BLOCK_SIZE);
	rc = jnl_format(st->dev, st->jstart, st->jblocks, st->uuid);
	if (!rc)
		rc = bj_open(st, JNL_DATA_DECLARED, false, &j);
	if (rc)
		goto out;
	/* some committed history, then the in-flight transaction */
	rc = jnl_handle_start(j, 16, &h);
	for (unsigned int k = 0; k < 16 && !rc; k++)
		rc = jnl_handle_dirty_meta(h, k, blk);
	if (h)
		jnl_handle_stop(h);
	if (!rc)
		rc = jnl_commit(j, 0, true);
	h = NULL;
	if (!rc)
		rc = jnl_handle_start(j, 1, &h);
	for (uint64_t k = 0; k < n && !rc; k++)
		rc = jnl_handle_dirty_data(h, 1024 + k * 2 % st->data_blocks, blk);
	if (h)
		jnl_handle_stop(h);
	if (rc) {
		cli_err("declared workload: %s", strerror(-rc));
		jnl_abandon(j);
		goto out;
	}
	/* the crash: nothing more is written */
	jnl_abandon(j);
	raid_abandon(st->a);
	st->a = NULL;
	rc = bj_assemble(st);
	if (rc)
		goto out;
	rc = jnl_open(st->dev, &cfg, &j);
	if (!rc) {
		double t0 = jg_now_seconds();

		rc = jnl_recover(j, &res->rep);
		res->seconds = jg_now_seconds() - t0;
		jnl_abandon(j);
	}
	res->inflight = n;
	if (rc)
		cli_err("recovery: %s", strerror(-rc));
out:
	free(blk);
	return rc;
}

static void bj_cleanup(struct bj_state *st)
{
	if (st->a)
		raid_stop(st->a);
	for (unsigned int i = 0; i < st->o.members; i++) {
		if (st->paths[i])
			unlink(st->paths[i]);
		free(st->paths[i]);
	}
	if (st->made_dir)
		rmdir(st->dir);
}

#define BJ_GO (-1) /* a step's answer: go on (anything else is the exit status) */

/* The data modes measured, in the order printed; the declared-recovery sizes. */
static const enum jnl_data_mode bj_modes[] = {
	JNL_DATA_WRITEBACK, JNL_DATA_ORDERED, JNL_DATA_JOURNAL, JNL_DATA_DECLARED,
};
#define BJ_NMODES (sizeof(bj_modes) / sizeof(bj_modes[0]))
static const uint64_t bj_inflight[] = { 0, 512, 2048, 8192, 32768 };
#define BJ_NINFLIGHT (sizeof(bj_inflight) / sizeof(bj_inflight[0]))

/* The command line into @o: BJ_GO, or the exit status (help, a bad value). */
static int bj_parse_args(struct bj_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' }, { "size", required_argument, NULL, 's' },
		{ "members", required_argument, NULL, 'm' }, { "chunk", required_argument, NULL, 'c' },
		{ "txns", required_argument, NULL, 't' }, { "meta", required_argument, NULL, 'M' },
		{ "data", required_argument, NULL, 'D' }, { "journal", required_argument, NULL, 'J' },
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		CLI_VERBOSITY_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:s:m:c:t:M:D:J:jh" CLI_VERBOSITY_SHORTOPTS,
				  lo, NULL)) != -1) {
		switch (opt) {
		case 'd': o->dir = optarg; break;
		case 's':
			if (cli_parse_size(optarg, &o->size_bytes) || o->size_bytes < (16u << 20))
				return cli_err("bad --size '%s' (at least 16M)", optarg);
			break;
		case 'J':
			if (cli_parse_size(optarg, &o->journal_bytes))
				return cli_err("bad --journal '%s'", optarg);
			break;
		case 'c':
			if (cli_parse_size(optarg, &v) || v < 4096 || v > (4u << 20) || (v & (v - 1)))
				return cli_err("bad --chunk '%s'", optarg);
			o->chunk_blocks = (uint32_t)(v / JG_BLOCK_SIZE);
			break;
		case 'm':
			if (cli_parse_u64(optarg, BJ_MEMBERS_MAX, &v) || v < 3)
				return cli_err("bad --members '%s' (3 to %d)", optarg, BJ_MEMBERS_MAX);
			o->members = (unsigned int)v;
			break;
		case 't':
			if (cli_parse_u64(optarg, 1000000, &v) || !v)
				return cli_err("bad --txns '%s'", optarg);
			o->txns = (unsigned int)v;
			break;
		case 'M':
			if (cli_parse_u64(optarg, 64, &v))
				return cli_err("bad --meta '%s' (0 to 64)", optarg);
			o->meta = (unsigned int)v;
			break;
		case 'D':
			if (cli_parse_u64(optarg, 4096, &v))
				return cli_err("bad --data '%s' (0 to 4096)", optarg);
			o->data = (unsigned int)v;
			break;
		case 'j': o->json = true; break;
		case 'h': fputs(cmd_bench_jnl_help, stdout); return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		default: fputs(cmd_bench_jnl_help, stderr); return 1;
		}
	}
	return BJ_GO;
}

/* The directory of the member files: --dir, or a new one removed at the end. */
static int bj_make_dir(struct bj_state *st)
{
	if (st->o.dir) {
		snprintf(st->dir, sizeof(st->dir), "%s", st->o.dir);
	} else {
		snprintf(st->dir, sizeof(st->dir), "./jgrfs-bench-jnl.XXXXXX");
		if (!mkdtemp(st->dir))
			return cli_err("mkdtemp: %s", strerror(errno)), 2;
		st->made_dir = true;
	}
	return BJ_GO;
}

/* Part 1: commit throughput of each data mode into @mr, a line each unless --json. */
static int bj_run_modes(struct bj_state *st, struct bj_mode_res *mr)
{
	for (unsigned int i = 0; i < BJ_NMODES; i++) {
		int rc = bj_mode(st, bj_modes[i], &mr[i]);

		if (rc)
			return rc;
		if (!st->o.json)
			fprintf(stderr, "  %-9s %8.1f txn/s %8.1f MB/s data  %.1f flushes/commit  (%u txns in %.2f s)\n",
				jnl_data_mode_name(bj_modes[i]), mr[i].tps, mr[i].mbs,
				mr[i].flushes_per_commit, st->o.txns, mr[i].seconds);
	}
	return 0;
}

/* Part 2: declared recovery at each in-flight size the journal holds, into @rr. */
static int bj_run_recoveries(struct bj_state *st, struct bj_rec_res *rr, unsigned int *nrec)
{
	for (unsigned int i = 0; i < BJ_NINFLIGHT; i++) {
		int rc;

		if (1024 + bj_inflight[i] * 2 >= st->jstart)
			break;
		rc = bj_recovery(st, bj_inflight[i], &rr[i]);
		if (rc)
			return rc;
		(*nrec)++;
		if (!st->o.json)
			fprintf(stderr, "  declared recovery, %6llu blocks in flight: %.4f s, %llu declared + %llu log blocks resynced, %llu rows\n",
				(unsigned long long)bj_inflight[i], rr[i].seconds,
				(unsigned long long)rr[i].rep.declared_blocks_resynced,
				(unsigned long long)rr[i].rep.log_blocks_resynced,
				(unsigned long long)rr[i].rep.rows_resynced);
	}
	return 0;
}

/* The whole-array scrub recovery is compared with: what a full resync reads. */
static int bj_run_scrub(struct bj_state *st, struct raid_resync_report *scrub)
{
	int64_t m = raid_scrub(st->a, false, NULL, NULL, scrub);

	if (m < 0) {
		cli_err("scrub: %s", strerror((int)-m));
		return (int)m;
	}
	if (!st->o.json)
		fprintf(stderr, "  whole-array scrub (what a full resync reads): %.3f s, %llu rows, %lld mismatches\n",
			scrub->seconds, (unsigned long long)scrub->rows_checked, (long long)m);
	return 0;
}

/* --json: every figure in one object on stdout. */
static void bj_print_json(const struct bj_state *st, const struct bj_mode_res *mr,
			  const struct bj_rec_res *rr, unsigned int nrec,
			  const struct raid_resync_report *scrub)
{
	printf("{\"members\":%u,\"member_bytes\":%llu,\"chunk_blocks\":%u,\"txns\":%u,\"meta\":%u,\"data\":%u,\"modes\":{",
	       st->o.members, (unsigned long long)st->o.size_bytes, st->o.chunk_blocks, st->o.txns,
	       st->o.meta, st->o.data);
	for (unsigned int i = 0; i < BJ_NMODES; i++)
		printf("%s\"%s\":{\"txn_per_s\":%.1f,\"data_mb_per_s\":%.2f,\"flushes_per_commit\":%.2f}",
		       i ? "," : "", jnl_data_mode_name(bj_modes[i]), mr[i].tps, mr[i].mbs,
		       mr[i].flushes_per_commit);
	printf("},\"declared_recovery\":[");
	for (unsigned int i = 0; i < nrec; i++)
		printf("%s{\"inflight_blocks\":%llu,\"seconds\":%.6f,\"declared_blocks\":%llu,\"log_blocks\":%llu,\"rows\":%llu}",
		       i ? "," : "", (unsigned long long)rr[i].inflight, rr[i].seconds,
		       (unsigned long long)rr[i].rep.declared_blocks_resynced,
		       (unsigned long long)rr[i].rep.log_blocks_resynced,
		       (unsigned long long)rr[i].rep.rows_resynced);
	printf("],\"scrub_seconds\":%.4f,\"scrub_rows\":%llu}\n", scrub->seconds,
	       (unsigned long long)scrub->rows_checked);
}

int cmd_bench_jnl(int argc, char **argv)
{
	struct bj_state st = { .o = { .size_bytes = 128ull << 20, .journal_bytes = 32ull << 20,
				      .members = 4, .txns = 300, .meta = 8, .data = 64,
				      .chunk_blocks = 16 } };
	struct bj_mode_res mr[BJ_NMODES] = { 0 };
	struct bj_rec_res rr[BJ_NINFLIGHT] = { 0 };
	struct raid_resync_report scrub = { 0 };
	unsigned int nrec = 0;
	int rc;

	rc = bj_parse_args(&st.o, argc, argv);
	if (rc == BJ_GO)
		rc = bj_make_dir(&st);
	if (rc != BJ_GO)
		return rc;
	rc = bj_create(&st);
	if (rc)
		goto out;
	if (!st.o.json)
		fprintf(stderr, "array: RAID5 %u x %llu MiB, chunk %u KiB, journal %llu MiB at block %llu\n",
			st.o.members, (unsigned long long)(st.o.size_bytes >> 20),
			st.o.chunk_blocks * 4, (unsigned long long)(st.jblocks >> 8),
			(unsigned long long)st.jstart);
	rc = bj_run_modes(&st, mr);
	if (!rc)
		rc = bj_run_recoveries(&st, rr, &nrec);
	if (!rc)
		rc = bj_run_scrub(&st, &scrub);
	if (!rc && st.o.json)
		bj_print_json(&st, mr, rr, nrec, &scrub);
out:
	bj_cleanup(&st);
	return rc ? 2 : 0;
}
