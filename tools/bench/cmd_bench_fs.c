// SPDX-License-Identifier: MIT
/*
 * tools/bench/cmd_bench_fs.c - `jgrfs bench fs`: the filesystem's throughput
 * in-process (fs.h, no FUSE), per data mode.
 *
 *	jgrfs bench fs [--dir DIR] [--size SIZE] [--file-size SIZE] [--modes LIST]
 *	jgrfs bench fs --stall [--stall-size SIZE] [--dir DIR] [--size SIZE] [--modes LIST]
 *
 * Over a RAID5 array of 4 member files (of --size each, in a fresh directory
 * under --dir, default the current one: O_DIRECT needs a real filesystem), for
 * each data mode a new filesystem is made and measured:
 *   seq write   --file-size in 1 MiB writes, then fsync
 *   seq read    the same file after a remount (cold cache), 1 MiB reads
 *   rand 4K     4 KiB writes at random block offsets of the file, fsync after each
 *   creates     empty files created in one directory, then syncfs
 * With --stall instead (issue 43, L1 in src/fs/fs_i.h): one thread
 * fallocates --stall-size (default 4G) of a file while another stats another
 * file in a loop, one stat a millisecond; the stat latencies' median, p99 and
 * maximum say how long a long call keeps other callers out. Members are sparse
 * files: the fallocate writes its zeros.
 * The commit thread runs with its default interval, as in the daemon. Figures
 * are one run each; this is a command a person runs, never a timed test.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "../cli/cmds.h"
#include "../cli/raidcli.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

#define BF_MEMBERS 4
#define BF_IO (1u << 20)

static const char cmd_bench_fs_help[] =
	"usage: jgrfs bench fs [options]\n"
	"\n"
	"Measure the filesystem in-process over a RAID5 array of 4 member files, once\n"
	"per data mode: sequential write and read MB/s, 4 KiB random writes with fsync\n"
	"per second, files created per second.\n"
	"\n"
	"options:\n"
	"  -d, --dir DIR          where the member files go (default: current directory)\n"
	"  -s, --size SIZE        size of each member file (default 1G)\n"
	"  -f, --file-size SIZE   sequential file size (default 256M)\n"
	"  -r, --rand-ops N       random 4 KiB fsync'd writes (default 300)\n"
	"  -c, --creates N        files created (default 5000)\n"
	"  -m, --modes LIST       comma-separated data modes (default all four; with\n"
	"                         --stall: declared); MODE+csum: on a volume made with\n"
	"                         data checksums (declared, journal); a mode may repeat\n"
	"                         (rounds in one run)\n"
	"  -S, --stall            instead: fallocate --stall-size of one file while\n"
	"                         another thread stats another file every 1 ms; print\n"
	"                         the stat latency median, p99 and maximum\n"
	"  -z, --stall-size SIZE  the fallocate's size (default 4G; members sized to fit\n"
	"                         unless --size)\n"
	"  -v, --verbose          also the engine's own lines; -vv: everything\n"
	"  -q, --quiet            errors only: no warnings, no progress\n"
	"  -h, --help             this text\n";

struct bf_result {
	double write_mbs, read_mbs, rand_iops, creates_s;
};

static int bf_run_mode(struct raid_array *a, enum jnl_data_mode mode, bool csum,
		       uint64_t file_bytes, unsigned int rand_ops, unsigned int creates,
		       struct bf_result *r)
{
	struct fs_mount_opts mo = { .data_mode = mode };
	struct fs_mkfs_opts mk = { .force = true, .data_csum = csum };
	struct blk_dev *dev = raid_array_dev(a);
	uint8_t *buf = jg_alloc_blocks(BF_IO / JG_BLOCK_SIZE);
	uint64_t seed = 0x62656e6366730001ull;
	struct fs_attr at, dir;
	struct fs *fs = NULL;
	double t0;
	int rc;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < BF_IO; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	rc = fs_mkfs(dev, &mk);
	if (!rc)
		rc = fs_mount(dev, &mo, &fs);
	if (!rc)
		rc = fs_mknod(fs, FS_ROOT_INO, "seq", 0100644, 0, 0, 0, &at);
	if (rc)
		goto out;
	t0 = jg_now_seconds();
	for (uint64_t off = 0; off < file_bytes && !rc; off += BF_IO) {
		ssize_t n = fs_write(fs, at.ino, off, BF_IO, buf);

		rc = n == BF_IO ? 0 : n < 0 ? (int)n : -EIO;
	}
	if (!rc)
		rc = fs_fsync(fs, at.ino, false);
	if (rc)
		goto out;
	r->write_mbs = file_bytes / 1e6 / (jg_now_seconds() - t0);
	rc = fs_unmount(fs);
	fs = NULL;
	if (!rc)
		rc = fs_mount(dev, &mo, &fs);
	if (rc)
		goto out;
	t0 = jg_now_seconds();
	for (uint64_t off = 0; off < file_bytes && !rc; off += BF_IO) {
		ssize_t n = fs_read(fs, at.ino, off, BF_IO, buf);

		rc = n == BF_IO ? 0 : n < 0 ? (int)n : -EIO;
	}
	if (rc)
		goto out;
	r->read_mbs = file_bytes / 1e6 / (jg_now_seconds() - t0);
	t0 = jg_now_seconds();
	for (unsigned int i = 0; i < rand_ops && !rc; i++) {
		ssize_t n;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		n = fs_write(fs, at.ino, (seed >> 20) % (file_bytes / JG_BLOCK_SIZE) * JG_BLOCK_SIZE,
			     JG_BLOCK_SIZE, buf);
		rc = n == JG_BLOCK_SIZE ? fs_fsync(fs, at.ino, false) : n < 0 ? (int)n : -EIO;
	}
	if (rc)
		goto out;
	r->rand_iops = rand_ops / (jg_now_seconds() - t0);
	rc = fs_mkdir(fs, FS_ROOT_INO, "many", 0755, 0, 0, &dir);
	t0 = jg_now_seconds();
	for (unsigned int i = 0; i < creates && !rc; i++) {
		char name[32];

		snprintf(name, sizeof(name), "file-%u", i);
		rc = fs_mknod(fs, dir.ino, name, 0100644, 0, 0, 0, NULL);
	}
	if (!rc)
		rc = fs_sync(fs);
	if (!rc)
		r->creates_s = creates / (jg_now_seconds() - t0);
out:
	if (fs) {
		int rc2 = fs_unmount(fs);

		rc = rc ?: rc2;
	}
	free(buf);
	return rc;
}

/* --stall: the other user, statting its file every 1 ms until told to stop */
#define BF_STALL_GAP_NS 1000000
struct bf_stall {
	struct fs *fs;
	uint64_t ino;
	bool stop;		/* atomic */
	double *lat;		/* seconds, one per stat */
	size_t n, cap;
	int rc;
};

static void *bf_stall_stats(void *arg)
{
	struct bf_stall *s = arg;
	struct fs_attr at;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) && !s->rc) {
		double t0;

		/* a caller arriving now and then, as requests do, not one spinning on
		 * the lock: it sleeps in the lock when it finds it taken */
		nanosleep(&(struct timespec){ .tv_nsec = BF_STALL_GAP_NS }, NULL);
		t0 = jg_now_seconds();

		s->rc = fs_getattr(s->fs, s->ino, &at);
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 4096;
			double *l = realloc(s->lat, cap * sizeof(*l));

			if (!l) {
				s->rc = -ENOMEM;
				break;
			}
			s->lat = l;
			s->cap = cap;
		}
		s->lat[s->n++] = jg_now_seconds() - t0;
	}
	return NULL;
}

static int bf_dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int bf_run_stall(struct raid_array *a, const char *name, enum jnl_data_mode mode,
			bool csum, uint64_t bytes)
{
	struct fs_mount_opts mo = { .data_mode = mode };
	struct fs_mkfs_opts mk = { .force = true, .data_csum = csum };
	struct blk_dev *dev = raid_array_dev(a);
	struct bf_stall s = { 0 };
	struct fs_attr big, other;
	struct fs *fs = NULL;
	double t0, secs;
	pthread_t th;
	int rc, rc2;

	rc = fs_mkfs(dev, &mk);
	if (!rc)
		rc = fs_mount(dev, &mo, &fs);
	if (!rc)
		rc = fs_mknod(fs, FS_ROOT_INO, "big", 0100644, 0, 0, 0, &big);
	if (!rc)
		rc = fs_mknod(fs, FS_ROOT_INO, "other", 0100644, 0, 0, 0, &other);
	if (!rc)
		rc = fs_sync(fs);
	if (rc)
		goto out;
	s.fs = fs;
	s.ino = other.ino;
	rc = -pthread_create(&th, NULL, bf_stall_stats, &s);
	if (rc)
		goto out;
	t0 = jg_now_seconds();
	rc = fs_fallocate(fs, big.ino, 0, 0, bytes);
	secs = jg_now_seconds() - t0;
	__atomic_store_n(&s.stop, true, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	rc = rc ?: s.rc;
	if (rc)
		goto out;
	if (!s.n) {
		rc = -EIO;
		goto out;
	}
	qsort(s.lat, s.n, sizeof(*s.lat), bf_dbl_cmp);
	printf("%-14s %12.2f %10zu %12.3f %12.3f %12.3f\n", name, secs, s.n,
	       s.lat[s.n / 2] * 1e3, s.lat[(s.n - 1) * 99 / 100] * 1e3, s.lat[s.n - 1] * 1e3);
	fflush(stdout);
out:
	if (fs) {
		rc2 = fs_unmount(fs);
		rc = rc ?: rc2;
	}
	free(s.lat);
	return rc;
}

/* What the command line asks for (cmd_bench_fs_help); bf_settle fills the rest. */
struct bf_opts {
	const char *dir, *modes;
	uint64_t member_bytes, file_bytes, stall_bytes;
	bool stall;
	unsigned int rand_ops, creates;
};

#define BF_GO (-1) /* a step's answer: go on (anything else is the exit status) */

/* The command line into @o: BF_GO, or the exit status (help, a bad value). */
static int bf_parse_args(struct bf_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "file-size", required_argument, NULL, 'f' },
		{ "rand-ops", required_argument, NULL, 'r' },
		{ "creates", required_argument, NULL, 'c' },
		{ "modes", required_argument, NULL, 'm' },
		{ "stall", no_argument, NULL, 'S' },
		{ "stall-size", required_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERBOSITY_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "d:s:f:r:c:m:Sz:h" CLI_VERBOSITY_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			o->dir = optarg;
			break;
		case 's':
			if (cli_parse_size(optarg, &o->member_bytes) ||
			    o->member_bytes < (64u << 20))
				return cli_err("bad member size '%s' (at least 64M)", optarg);
			break;
		case 'f':
			if (cli_parse_size(optarg, &o->file_bytes) || o->file_bytes < BF_IO)
				return cli_err("bad file size '%s'", optarg);
			o->file_bytes -= o->file_bytes % BF_IO;
			break;
		case 'r':
			if (cli_parse_u64(optarg, 1000000, &v) || !v)
				return cli_err("bad count '%s'", optarg);
			o->rand_ops = (unsigned int)v;
			break;
		case 'c':
			if (cli_parse_u64(optarg, 10000000, &v) || !v)
				return cli_err("bad count '%s'", optarg);
			o->creates = (unsigned int)v;
			break;
		case 'm':
			o->modes = optarg;
			break;
		case 'S':
			o->stall = true;
			break;
		case 'z':
			if (cli_parse_size(optarg, &o->stall_bytes) ||
			    o->stall_bytes < JG_BLOCK_SIZE)
				return cli_err("bad stall size '%s'", optarg);
			break;
		case 'h':
			fputs(cmd_bench_fs_help, stdout);
			return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		default:
			fputs(cmd_bench_fs_help, stderr);
			return 1;
		}
	}
	return BF_GO;
}

/* The defaults that depend on --stall, and the sizes checked against the array. */
static int bf_settle(struct bf_opts *o)
{
	if (!o->modes)
		o->modes = o->stall ? "declared" : "writeback,ordered,journal,declared";
	if (!o->member_bytes && o->stall) /* room for the file, its map, the journal */
		o->member_bytes = (o->stall_bytes + o->stall_bytes / 16 + (512ull << 20)) /
				  (BF_MEMBERS - 1) / BF_IO * BF_IO + BF_IO;
	if (!o->member_bytes)
		o->member_bytes = 1ull << 30;
	if (o->stall && o->stall_bytes + o->stall_bytes / 32 + (256ull << 20) >
				o->member_bytes * (BF_MEMBERS - 1))
		return cli_err("--stall-size too large for the array");
	if (!o->stall && o->file_bytes * 2 > o->member_bytes * (BF_MEMBERS - 1))
		return cli_err("--file-size too large for the array");
	return BF_GO;
}

/*
 * The member files @paths in the new directory @tmpl, a RAID5 array made over
 * them and assembled into *@a. On failure the members are closed; the caller
 * removes the files and the directory either way.
 */
static int bf_make_array(const struct bf_opts *o, const char *tmpl, char paths[][600],
			 struct blk_dev **devs, struct raid_array **a)
{
	struct raid_create_cfg cfg = { .assume_clean = true, /* zeroed new members */ .level = 5, .chunk_blocks = 16 };
	struct raid_assemble_cfg acfg = { 0 };
	char *pp[BF_MEMBERS];
	int rc;

	for (int i = 0; i < BF_MEMBERS; i++) {
		snprintf(paths[i], 600, "%s/m%d.img", tmpl, i);
		pp[i] = paths[i];
	}
	rc = cli_open_members(pp, BF_MEMBERS, o->member_bytes, devs);
	if (rc)
		return rc;
	rc = raid_create(devs, BF_MEMBERS, &cfg, true);
	if (!rc)
		rc = raid_assemble(devs, BF_MEMBERS, &acfg, a);
	if (rc) {
		cli_err("cannot create the array: %s", strerror(-rc));
		cli_close_members(devs, BF_MEMBERS);
	}
	return rc;
}

/* What is measured, and the table's heading. */
static void bf_print_header(const struct bf_opts *o, const char *tmpl)
{
	printf("jgrfs bench fs: RAID5 over %d member files of %llu MiB in %s (io_uring, O_DIRECT)\n",
	       BF_MEMBERS, (unsigned long long)(o->member_bytes >> 20), tmpl);
	if (o->stall) {
		printf("fallocate of %llu MiB in one call while another thread stats another "
		       "file every 1 ms\n\n", (unsigned long long)(o->stall_bytes >> 20));
		printf("%-14s %12s %10s %12s %12s %12s\n", "mode", "fallocate s", "stats",
		       "median ms", "p99 ms", "max ms");
	} else {
		printf("sequential file %llu MiB in 1 MiB calls; %u random 4 KiB writes with "
		       "fsync; %u creates\n\n", (unsigned long long)(o->file_bytes >> 20),
		       o->rand_ops, o->creates);
		printf("%-14s %14s %14s %16s %14s\n", "mode", "seq write MB/s", "seq read MB/s",
		       "4K fsync writes/s", "creates/s");
	}
}

/* Each mode of --modes in turn on array @a, a line each; the first failure stops. */
static int bf_run_modes(const struct bf_opts *o, struct raid_array *a)
{
	char mlist[1024], *save, *tok;
	int rc = 0;

	snprintf(mlist, sizeof(mlist), "%s", o->modes);
	for (tok = strtok_r(mlist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum jnl_data_mode m;
		struct bf_result r = { 0 };
		char name[32], *plus;
		bool csum = false;

		snprintf(name, sizeof(name), "%s", tok);
		plus = strchr(name, '+');
		if (plus && !strcmp(plus, "+csum")) {
			*plus = '\0';
			csum = true;
		}
		if (jnl_data_mode_parse(name, &m)) {
			rc = cli_err("unknown data mode '%s'", tok);
			break;
		}
		if (o->stall) {
			rc = bf_run_stall(a, tok, m, csum, o->stall_bytes);
			if (rc) {
				cli_err("mode %s failed: %s", tok, strerror(-rc));
				break;
			}
			continue;
		}
		rc = bf_run_mode(a, m, csum, o->file_bytes, o->rand_ops, o->creates, &r);
		if (rc) {
			cli_err("mode %s failed: %s", tok, strerror(-rc));
			break;
		}
		printf("%-14s %14.1f %14.1f %16.1f %14.0f\n", tok, r.write_mbs, r.read_mbs,
		       r.rand_iops, r.creates_s);
		fflush(stdout);
	}
	return rc;
}

int cmd_bench_fs(int argc, char **argv)
{
	struct bf_opts o = { .dir = ".", .file_bytes = 256ull << 20, .stall_bytes = 4ull << 30,
			     .rand_ops = 300, .creates = 5000 };
	struct blk_dev *devs[BF_MEMBERS];
	char tmpl[512], paths[BF_MEMBERS][600];
	struct raid_array *a = NULL;
	int rc;

	rc = bf_parse_args(&o, argc, argv);
	if (rc == BF_GO)
		rc = bf_settle(&o);
	if (rc != BF_GO)
		return rc;
	snprintf(tmpl, sizeof(tmpl), "%s/jgrfs-bench-fs-XXXXXX", o.dir);
	if (!mkdtemp(tmpl))
		return cli_err("cannot create a directory under %s: %s", o.dir, strerror(errno));
	rc = bf_make_array(&o, tmpl, paths, devs, &a);
	if (!rc) {
		bf_print_header(&o, tmpl);
		rc = bf_run_modes(&o, a);
		raidcli_stop(a, devs, BF_MEMBERS);
	}
	for (int i = 0; i < BF_MEMBERS; i++)
		unlink(paths[i]);
	rmdir(tmpl);
	return rc ? 2 : 0;
}
