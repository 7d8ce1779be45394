// SPDX-License-Identifier: MIT
/*
 * tools/cmd_bench_raid.c - `jgrfs bench raid`: what the RAID engine costs,
 * measured in one run against the raw member files it sits on.
 *
 *	jgrfs bench raid [--dir DIR] [--size SIZE] [--members N] [--chunk SIZE]
 *			 [--seconds S] [--runs R] [--threads T] [--batch B] [--json]
 *
 * Phases, each measurement repeated --runs times and the median reported:
 *   raw     the member files straight through raid_dev_uring_open() and
 *           blk_submit_multi(): sequential writes and reads of --batch chunks
 *           per member, all members at once, random 4 KiB writes
 *           (tools/bench_io.c, tools/bench.h);
 *   RAID5,  an array created over the same files with resync=full (no bitmap:
 *   RAID6   the engine alone), full-row sequential writes, sequential reads,
 *           random 4 KiB writes, through raid_array_dev();
 *   parity  ISA-L xor_gen / pq_gen on one core over the chunk geometry.
 * An array moves data members/members of what its members move, so the array
 * figures are judged as a ratio to raw against that ideal: targets 85% of it for
 * full-row writes, 90% for reads; parity 4 GB/s. Random writes have no target:
 * each costs a read-modify-write (RAID5: 2 reads + 2 writes, RAID6: 3 + 3).
 *
 * The member files go in a fresh directory under the current one (or --dir), on
 * a real filesystem: O_DIRECT on tmpfs would measure memory. They are removed at
 * the end. This is a command a person runs, never a timed test.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/raid.h"

#define BENCH_MAX_RUNS 15
#define BENCH_MAX_MEMBERS 32
#define BENCH_TMPFS_MAGIC 0x01021994
#define BENCH_SEED 0x6a67726662656e63ull	/* fixed: runs are comparable */

static const char cmd_bench_raid_help[] =
	"usage: jgrfs bench raid [options]\n"
	"\n"
	"Measure, in one run, the raw member files (sequential writes and reads to all\n"
	"members at once, random 4 KiB writes), then RAID5 and RAID6 arrays over the\n"
	"same files (full-row sequential writes, sequential reads, random 4 KiB\n"
	"writes; resync=full, so no bitmap), and ISA-L parity generation on one core.\n"
	"Each figure is the median of --runs runs. Array figures are shown as MB/s of\n"
	"array data and as a ratio to raw; the ideal ratio is data members / members,\n"
	"and the targets are 85% of it for full-row writes, 90% for reads, and 4 GB/s\n"
	"for parity.\n"
	"\n"
	"options:\n"
	"  -d, --dir DIR            where to put the member files (default: a new\n"
	"                           directory ./jgrfs-bench.XXXXXX, removed at the end);\n"
	"                           must be a real filesystem, not tmpfs (O_DIRECT)\n"
	"  -s, --size SIZE          per member file (default 128M)\n"
	"  -m, --members N          member files, 3 to 32 (default 4; RAID6 needs 4)\n"
	"  -c, --chunk SIZE         chunk size, 4K to 4M, a power of two (default 64K)\n"
	"  -S, --seconds S          length of each run (default 1)\n"
	"  -n, --runs R             runs per measurement, 1 to 15 (default 3)\n"
	"  -t, --threads T          submitting threads, 1 to 16 (default 2)\n"
	"  -B, --batch B            stripe rows per submit for sequential I/O (default 8);\n"
	"                           random writes go 4*B per submit\n"
	"  -j, --json               one JSON object on stdout, no progress lines\n"
	"  -h, --help               this text\n"
	"\n"
	"examples:\n"
	"  jgrfs bench raid\n"
	"  jgrfs bench raid --dir /mnt/scratch --size 1G --members 6 --chunk 256K --runs 5\n"
	"\n"
	"Use a release build (make release: build-release/tools/jgrfs) for figures.\n"
	"exit status: 0 measured (targets met or not), 1 bad options, 2 a run failed\n";

struct bench_opts {
	const char *dir;
	uint64_t size_bytes;
	unsigned int members;
	uint32_t chunk_blocks;
	double seconds;
	unsigned int runs;
	unsigned int threads;
	unsigned int batch;
	bool json;
};

/* One measurement: a value per run, reported as the median. */
struct bench_meas {
	double mbs[BENCH_MAX_RUNS];	/* MB/s (10^6 bytes), array data for the array */
	double iops[BENCH_MAX_RUNS];
	double cpu[BENCH_MAX_RUNS];	/* CPU seconds per wall second (1.0: one core busy) */
	unsigned int n;
	double mbs_med, iops_med, cpu_med;
};

/* The figures of one target (raw, RAID5, RAID6). */
struct bench_set {
	bool done;
	unsigned int level;		/* 0 for raw */
	unsigned int ndata;
	double create_seconds;		/* raid_create + raid_assemble */
	struct bench_meas seq_write, seq_read, rand_write;
};

struct bench_state {
	struct bench_opts o;
	char dir[PATH_MAX];
	bool made_dir;
	char *paths[BENCH_MAX_MEMBERS];
	unsigned int nfiles;		/* files created so far (removed at the end) */
	struct bench_set raw, r5, r6;
	struct bench_meas xor_gbs, pq_gbs;
};

/* ------------------------------------------------------------ reporting */

static void bench_meas_add(struct bench_meas *m, const struct bench_result *r)
{
	if (m->n >= BENCH_MAX_RUNS || r->seconds <= 0)
		return;
	m->mbs[m->n] = (double)r->bytes / r->seconds / 1e6;
	m->iops[m->n] = (double)r->ops / r->seconds;
	m->cpu[m->n] = r->cpu / r->seconds;
	m->n++;
}

static void bench_meas_finish(struct bench_meas *m)
{
	double v[BENCH_MAX_RUNS];

	memcpy(v, m->mbs, sizeof(v));
	m->mbs_med = bench_median(v, m->n);
	memcpy(v, m->iops, sizeof(v));
	m->iops_med = bench_median(v, m->n);
	memcpy(v, m->cpu, sizeof(v));
	m->cpu_med = bench_median(v, m->n);
}

static void bench_progress(const struct bench_state *st, const char *what, unsigned int run,
			   const struct bench_result *r)
{
	if (st->o.json)
		return;
	fprintf(stderr, "  %-22s run %u/%u: %8.1f MB/s %9.0f IO/s  cpu %3.0f%%  (%.2f s)\n",
		what, run + 1, st->o.runs, (double)r->bytes / r->seconds / 1e6,
		(double)r->ops / r->seconds, r->cpu / r->seconds * 100, r->seconds);
}

/* ------------------------------------------------------------- workloads */

/*
 * Run the three workloads @runs times against @devs (raw members, or the array
 * as devs[0]) and record them in @set. @unit_blocks/@units describe the
 * sequential region, @rand_blocks the random one.
 */
static int bench_workloads(struct bench_state *st, struct bench_set *set, bool raw,
			   struct blk_dev **devs, unsigned int ndevs, uint32_t unit_blocks,
			   uint64_t units, uint64_t rand_blocks, const char *label)
{
	struct bench_job job = {
		.raw = raw, .devs = devs, .ndevs = ndevs, .unit_blocks = unit_blocks,
		.units = units, .rand_blocks = rand_blocks, .threads = st->o.threads,
		.seconds = st->o.seconds, .seed = BENCH_SEED,
	};
	struct bench_result r;
	char what[64];
	int rc;

	for (unsigned int run = 0; run < st->o.runs; run++) {
		job.pattern = BENCH_SEQ_WRITE;
		job.batch = st->o.batch;
		rc = bench_io_run(&job, &r);
		if (rc)
			return cli_err("%s: sequential write failed: %s", label, strerror(-rc)), rc;
		snprintf(what, sizeof(what), "%s seq write", label);
		bench_progress(st, what, run, &r);
		bench_meas_add(&set->seq_write, &r);

		/* every block read was written by the fill: holes would read for free */
		job.pattern = BENCH_SEQ_READ;
		rc = bench_io_run(&job, &r);
		if (rc)
			return cli_err("%s: sequential read failed: %s", label, strerror(-rc)), rc;
		snprintf(what, sizeof(what), "%s seq read", label);
		bench_progress(st, what, run, &r);
		bench_meas_add(&set->seq_read, &r);

		job.pattern = BENCH_RAND_WRITE;
		job.batch = st->o.batch * 4;
		job.seed = BENCH_SEED + run * 1000;
		rc = bench_io_run(&job, &r);
		if (rc)
			return cli_err("%s: random write failed: %s", label, strerror(-rc)), rc;
		snprintf(what, sizeof(what), "%s rand 4K write", label);
		bench_progress(st, what, run, &r);
		bench_meas_add(&set->rand_write, &r);
	}
	bench_meas_finish(&set->seq_write);
	bench_meas_finish(&set->seq_read);
	bench_meas_finish(&set->rand_write);
	set->done = true;
	return 0;
}

static int bench_open_members(struct bench_state *st, struct blk_dev **devs)
{
	uint64_t blocks = st->o.size_bytes / JG_BLOCK_SIZE;
	unsigned int i;
	int rc = 0;

	for (i = 0; i < st->o.members; i++) {
		rc = raid_dev_uring_open(st->paths[i], blocks, &devs[i]);
		if (rc) {
			cli_err("%s: cannot open member file: %s", st->paths[i], strerror(-rc));
			break;
		}
		if (i >= st->nfiles)
			st->nfiles = i + 1;
	}
	if (rc) {
		while (i--)
			blk_close(devs[i]);
	}
	return rc;
}

/*
 * The raw members: fill them once (untimed) so that no run pays block allocation
 * and every later read, raw or through an array, reads written blocks, then measure.
 */
static int bench_raw(struct bench_state *st)
{
	struct blk_dev *devs[BENCH_MAX_MEMBERS];
	uint64_t units = st->o.size_bytes / JG_BLOCK_SIZE / st->o.chunk_blocks;
	struct bench_job fill = {
		.pattern = BENCH_SEQ_WRITE, .raw = true, .devs = devs, .ndevs = st->o.members,
		.unit_blocks = st->o.chunk_blocks, .units = units, .batch = st->o.batch,
		.threads = st->o.threads, .seconds = 1e9, .once = true, .seed = BENCH_SEED,
	};
	struct bench_result r;
	int rc;

	rc = bench_open_members(st, devs);
	if (rc)
		return rc;
	if (!st->o.json)
		fprintf(stderr, "filling %u member files of %llu MiB (untimed)\n", st->o.members,
			(unsigned long long)(st->o.size_bytes >> 20));
	rc = bench_io_run(&fill, &r);
	if (rc) {
		cli_err("filling the member files failed: %s", strerror(-rc));
		goto out;
	}
	st->raw.level = 0;
	st->raw.ndata = st->o.members;
	rc = bench_workloads(st, &st->raw, true, devs, st->o.members, st->o.chunk_blocks, units,
			     st->o.size_bytes / JG_BLOCK_SIZE, "raw");
out:
	for (unsigned int i = 0; i < st->o.members; i++)
		blk_close(devs[i]);
	return rc;
}

/* An array of @level over the member files, resync=full: the engine without its bitmap. */
static int bench_array(struct bench_state *st, unsigned int level, struct bench_set *set)
{
	struct blk_dev *devs[BENCH_MAX_MEMBERS];
	struct raid_create_cfg cfg = {
		.level = level, .chunk_blocks = st->o.chunk_blocks, .resync = RAID_RESYNC_FULL,
	};
	struct raid_assemble_cfg acfg = { 0 };
	struct raid_array *a = NULL;
	struct raid_info info;
	struct blk_dev *adev;
	char label[16];
	double t0;
	int rc, rc2;

	snprintf(label, sizeof(label), "RAID%u", level);
	rc = bench_open_members(st, devs);
	if (rc)
		return rc;
	if (!st->o.json)
		fprintf(stderr, "creating %s over %u members\n", label, st->o.members);
	t0 = jg_now_seconds();
	rc = raid_create(devs, st->o.members, &cfg, true);
	if (!rc)
		rc = raid_assemble(devs, st->o.members, &acfg, &a);
	if (rc) {
		cli_err("%s: cannot create and assemble the array: %s", label, strerror(-rc));
		for (unsigned int i = 0; i < st->o.members; i++)
			blk_close(devs[i]);
		return rc;
	}
	set->create_seconds = jg_now_seconds() - t0;
	raid_info_get(a, &info);
	set->level = level;
	set->ndata = info.ndata;
	adev = raid_array_dev(a);
	rc = bench_workloads(st, set, false, &adev, 1, info.ndata * info.chunk_blocks,
			     info.array_blocks / ((uint64_t)info.ndata * info.chunk_blocks),
			     info.array_blocks, label);
	rc2 = raid_stop(a);
	if (rc2 && !rc) {
		cli_err("%s: stopping the array failed: %s", label, strerror(-rc2));
		rc = rc2;
	}
	return rc;
}

static int bench_parity(struct bench_state *st)
{
	uint32_t chunk = st->o.chunk_blocks * JG_BLOCK_SIZE;
	double secs = st->o.seconds < 0.5 ? st->o.seconds : 0.5;

	for (unsigned int run = 0; run < st->o.runs; run++) {
		double x = bench_parity_run(5, st->o.members, chunk, secs);
		double q = st->o.members >= 4 ? bench_parity_run(6, st->o.members, chunk, secs) : 0;

		if (x < 0 || q < 0)
			return cli_err("ISA-L parity generation failed"), -EIO;
		st->xor_gbs.mbs[run] = x / 1e9;
		st->pq_gbs.mbs[run] = q / 1e9;
		if (!st->o.json)
			fprintf(stderr, "  parity run %u/%u: xor_gen %.2f GB/s, pq_gen %.2f GB/s\n",
				run + 1, st->o.runs, x / 1e9, q / 1e9);
	}
	st->xor_gbs.n = st->pq_gbs.n = st->o.runs;
	bench_meas_finish(&st->xor_gbs);
	bench_meas_finish(&st->pq_gbs);
	return 0;
}

/* ------------------------------------------------------------ the report */

static void bench_row(const char *name, const struct bench_meas *m, const struct bench_meas *raw,
		      double ideal, double target_pct)
{
	double ratio = raw && raw->mbs_med > 0 ? m->mbs_med / raw->mbs_med : 0;

	double lo = m->mbs[0], hi = m->mbs[0];

	for (unsigned int i = 1; i < m->n; i++) {
		lo = m->mbs[i] < lo ? m->mbs[i] : lo;
		hi = m->mbs[i] > hi ? m->mbs[i] : hi;
	}
	printf("  %-28s %8.1f %4.0f%% %9.0f %4.0f%%", name, m->mbs_med,
	       m->mbs_med > 0 ? (hi - lo) / m->mbs_med * 100 : 0, m->iops_med, m->cpu_med * 100);
	if (!raw) {
		printf("\n");
		return;
	}
	printf("  %5.2f  %5.2f  %5.0f%%", ratio, ideal, ideal > 0 ? ratio / ideal * 100 : 0);
	if (target_pct > 0)
		printf("  >=%.0f%% %s", target_pct,
		       ratio / ideal * 100 >= target_pct ? "met" : "MISSED");
	printf("\n");
}

static void bench_report_text(const struct bench_state *st)
{
	char b[32];

	printf("jgrfs bench raid: %u members x %s in %s, chunk %s, %u threads x %u rows per "
	       "submit, median of %u runs\n\n", st->o.members,
	       cli_human_bytes(st->o.size_bytes, b, sizeof(b)), st->dir,
	       cli_human_bytes((uint64_t)st->o.chunk_blocks * JG_BLOCK_SIZE, b + 16, 16),
	       st->o.threads, st->o.batch, st->o.runs);
	printf("  %-28s %8s %5s %9s %5s  %5s  %5s  %6s  %s\n", "", "MB/s", "+-", "IO/s", "cpu",
	       "ratio", "ideal", "of ideal", "target");
	bench_row("raw seq write (all members)", &st->raw.seq_write, NULL, 0, 0);
	bench_row("raw seq read", &st->raw.seq_read, NULL, 0, 0);
	bench_row("raw rand 4K write", &st->raw.rand_write, NULL, 0, 0);
	for (int k = 0; k < 2; k++) {
		const struct bench_set *s = k ? &st->r6 : &st->r5;
		double ideal = (double)s->ndata / st->o.members;
		char name[40];

		if (!s->done)
			continue;
		snprintf(name, sizeof(name), "RAID%u seq write (full rows)", s->level);
		bench_row(name, &s->seq_write, &st->raw.seq_write, ideal, 85);
		snprintf(name, sizeof(name), "RAID%u seq read", s->level);
		bench_row(name, &s->seq_read, &st->raw.seq_read, ideal, 90);
		snprintf(name, sizeof(name), "RAID%u rand 4K write", s->level);
		/* read-modify-write: (1 + parities) reads and as many writes per write */
		bench_row(name, &s->rand_write, &st->raw.rand_write,
			  1.0 / (2.0 * (1 + st->o.members - s->ndata)), 0);
		printf("  %-28s %.2f s\n", "  create + assemble", s->create_seconds);
	}
	printf("\n  parity on one core, %u x %s chunks:\n", st->o.members,
	       cli_human_bytes((uint64_t)st->o.chunk_blocks * JG_BLOCK_SIZE, b, sizeof(b)));
	printf("  %-28s %6.2f GB/s  >=4 GB/s %s\n", "xor_gen (RAID5 P)", st->xor_gbs.mbs_med,
	       st->xor_gbs.mbs_med >= 4 ? "met" : "MISSED");
	if (st->o.members >= 4)
		printf("  %-28s %6.2f GB/s  >=4 GB/s %s\n", "pq_gen (RAID6 P+Q)",
		       st->pq_gbs.mbs_med, st->pq_gbs.mbs_med >= 4 ? "met" : "MISSED");
	printf("\n  +-: spread of the runs (max - min) / median; ratio: array data MB/s / raw\n"
	       "  MB/s; ideal: data members / members (random writes: 1 / (2 x (1 + parity\n"
	       "  members)), read-modify-write); cpu: process CPU time per wall second\n"
	       "  (100%% = one core)\n");
}

static void bench_json_meas(const char *name, const struct bench_meas *m, bool comma)
{
	printf("\"%s\":{\"mbs\":%.1f,\"iops\":%.0f,\"cpu\":%.3f,\"runs_mbs\":[", name, m->mbs_med,
	       m->iops_med, m->cpu_med);
	for (unsigned int i = 0; i < m->n; i++)
		printf("%s%.1f", i ? "," : "", m->mbs[i]);
	printf("]}%s", comma ? "," : "");
}

static void bench_report_json(const struct bench_state *st)
{
	printf("{\"members\":%u,\"member_bytes\":%" PRIu64 ",\"chunk_bytes\":%u,\"threads\":%u,"
	       "\"batch\":%u,\"runs\":%u,\"dir\":", st->o.members, st->o.size_bytes,
	       st->o.chunk_blocks * JG_BLOCK_SIZE, st->o.threads, st->o.batch, st->o.runs);
	raidcli_json_str(stdout, st->dir);
	printf(",\"raw\":{");
	bench_json_meas("seq_write", &st->raw.seq_write, true);
	bench_json_meas("seq_read", &st->raw.seq_read, true);
	bench_json_meas("rand_write", &st->raw.rand_write, false);
	printf("}");
	for (int k = 0; k < 2; k++) {
		const struct bench_set *s = k ? &st->r6 : &st->r5;
		double ideal = (double)s->ndata / st->o.members;

		if (!s->done)
			continue;
		printf(",\"raid%u\":{\"data_members\":%u,\"ideal_ratio\":%.4f,"
		       "\"create_seconds\":%.3f,\"seq_write_ratio\":%.4f,\"seq_read_ratio\":%.4f,"
		       "\"rand_write_ratio\":%.4f,", s->level, s->ndata, ideal, s->create_seconds,
		       s->seq_write.mbs_med / st->raw.seq_write.mbs_med,
		       s->seq_read.mbs_med / st->raw.seq_read.mbs_med,
		       s->rand_write.mbs_med / st->raw.rand_write.mbs_med);
		bench_json_meas("seq_write", &s->seq_write, true);
		bench_json_meas("seq_read", &s->seq_read, true);
		bench_json_meas("rand_write", &s->rand_write, false);
		printf("}");
	}
	printf(",\"parity\":{\"xor_gen_gbs\":%.3f,\"pq_gen_gbs\":%.3f},", st->xor_gbs.mbs_med,
	       st->pq_gbs.mbs_med);
	printf("\"targets\":{\"seq_write_of_ideal\":0.85,\"seq_read_of_ideal\":0.90,"
	       "\"parity_gbs\":4}}\n");
}

/* ------------------------------------------------------- files and options */

static int bench_dir_setup(struct bench_state *st)
{
	struct statfs sfs;

	if (st->o.dir) {
		snprintf(st->dir, sizeof(st->dir), "%s", st->o.dir);
	} else {
		snprintf(st->dir, sizeof(st->dir), "./jgrfs-bench.XXXXXX");
		if (!mkdtemp(st->dir))
			return cli_err("cannot make a directory in the current one: %s "
				       "(use --dir)", strerror(errno)), -errno;
		st->made_dir = true;
	}
	if (statfs(st->dir, &sfs))
		return cli_err("%s: %s", st->dir, strerror(errno)), -errno;
	if (sfs.f_type == BENCH_TMPFS_MAGIC)
		return cli_err("%s is on tmpfs: O_DIRECT there measures memory, not a disk; "
			       "use --dir on a real filesystem", st->dir), -EINVAL;
	for (unsigned int i = 0; i < st->o.members; i++) {
		if (asprintf(&st->paths[i], "%s/jgrfs-bench-m%u.img", st->dir, i) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void bench_cleanup(struct bench_state *st)
{
	for (unsigned int i = 0; i < st->o.members; i++) {
		if (st->paths[i] && i < st->nfiles)
			unlink(st->paths[i]);
		free(st->paths[i]);
	}
	if (st->made_dir)
		rmdir(st->dir);
}

static int bench_parse(struct bench_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "members", required_argument, NULL, 'm' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "runs", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, 'B' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	char *end;
	int opt;

	*o = (struct bench_opts){
		.size_bytes = 128ull << 20, .members = 4, .chunk_blocks = 16, .seconds = 1,
		.runs = 3, .threads = 2, .batch = 8,
	};
	optind = 1;
	while ((opt = getopt_long(argc, argv, "d:s:m:c:S:n:t:B:jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			o->dir = optarg;
			break;
		case 's':
			if (cli_parse_size(optarg, &v) || v < (1u << 20))
				return cli_err("--size %s: expected a size of at least 1M", optarg);
			o->size_bytes = v;
			break;
		case 'm':
			if (cli_parse_u64(optarg, BENCH_MAX_MEMBERS, &v) || v < 3)
				return cli_err("--members %s: expected 3 to %d", optarg,
					       BENCH_MAX_MEMBERS);
			o->members = (unsigned int)v;
			break;
		case 'c':
			if (cli_parse_size(optarg, &v) || v < JG_BLOCK_SIZE || v > (4u << 20) ||
			    (v & (v - 1)))
				return cli_err("--chunk %s: expected a power of two from 4K to 4M",
					       optarg);
			o->chunk_blocks = (uint32_t)(v / JG_BLOCK_SIZE);
			break;
		case 'S':
			o->seconds = strtod(optarg, &end);
			if (*end || !(o->seconds >= 0.05 && o->seconds <= 600))
				return cli_err("--seconds %s: expected 0.05 to 600", optarg);
			break;
		case 'n':
			if (cli_parse_u64(optarg, BENCH_MAX_RUNS, &v) || !v)
				return cli_err("--runs %s: expected 1 to %d", optarg, BENCH_MAX_RUNS);
			o->runs = (unsigned int)v;
			break;
		case 't':
			if (cli_parse_u64(optarg, 16, &v) || !v)
				return cli_err("--threads %s: expected 1 to 16", optarg);
			o->threads = (unsigned int)v;
			break;
		case 'B':
			if (cli_parse_u64(optarg, 64, &v) || !v)
				return cli_err("--batch %s: expected 1 to 64", optarg);
			o->batch = (unsigned int)v;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			fputs(cmd_bench_raid_help, stdout);
			return -1;
		default:
			fputs(cmd_bench_raid_help, stderr);
			return 1;
		}
	}
	if (optind < argc)
		return cli_err("unexpected argument '%s' (see --help)", argv[optind]);
	o->size_bytes -= o->size_bytes % ((uint64_t)o->chunk_blocks * JG_BLOCK_SIZE);
	if (o->size_bytes < 64ull * o->chunk_blocks * JG_BLOCK_SIZE)
		return cli_err("--size: at least 64 chunks per member needed");
	return 0;
}

int cmd_bench_raid(int argc, char **argv)
{
	struct bench_state *st;
	int rc, ret = 2;

	st = calloc(1, sizeof(*st));
	if (!st)
		return cli_err("out of memory"), 2;
	rc = bench_parse(&st->o, argc, argv);
	if (rc) {
		free(st);
		return rc < 0 ? 0 : 1;
	}
	if (bench_dir_setup(st))
		goto out;
	if (!st->o.json)
		fprintf(stderr, "jgrfs bench raid: member files in %s\n", st->dir);
	if (bench_raw(st))
		goto out;
	if (bench_array(st, 5, &st->r5))
		goto out;
	if (st->o.members >= 4 && bench_array(st, 6, &st->r6))
		goto out;
	if (bench_parity(st))
		goto out;
	if (st->o.json)
		bench_report_json(st);
	else
		bench_report_text(st);
	ret = 0;
out:
	bench_cleanup(st);
	free(st);
	return ret;
}
