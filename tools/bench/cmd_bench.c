// SPDX-License-Identifier: MIT
/*
 * tools/bench/cmd_bench.c - `jgrfs bench`: what crash protection costs, measured.
 *
 * The seeds claim declared mode costs 3-5% of write throughput where the MD
 * write-intent bitmap costs ~30%, and that declared recovery depends on the work
 * in flight, not the array size. This command measures both, on the same member
 * files and in one run, so the ratios compare like with like:
 *
 *   throughput  each configuration (unprotected = data=ordered resync=full; bitmap
 *               = data=ordered resync=bitmap at one or more region sizes; declared
 *               = data=declared resync=journal; journal = data=journal, for
 *               reference) runs every workload (tools/bench/workload.h) through the real
 *               FUSE mount (fio where installed, the built-in generator otherwise)
 *               and in-process through fs.h; configurations are interleaved within
 *               each repeat, each repeat starting at the next one, so machine noise
 *               hits them alike; medians are reported with each configuration's
 *               ratio to unprotected, then the best of the repeats.
 *   recovery    (--recovery) each of unprotected, bitmap and declared is crashed
 *               with kill -9 at the same point of the same workload, on arrays of
 *               each size asked for; remount-to-ready time and stripe rows
 *               resynced are reported.
 *
 * Output: a table, and with --csv / --svg a CSV file and an SVG chart.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "../cli/cmds.h"
#include "jgrfs/fop.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"
#include "../cli/spawn.h"
#include "workload.h"

#define BC_MAX_CONFIGS 12
#define BC_MAX_REPEATS 50
#define BC_MAX_SIZES 8
#define BC_MEMBERS 4

enum bc_iface { BC_FUSE, BC_INPROC, BC_NIFACES };
static const char *const bc_iface_names[BC_NIFACES] = { "fuse", "inproc" };

struct bc_config {
	char name[32];
	const char *data;	/* data= mode */
	const char *resync;	/* --resync policy at mkfs */
	uint64_t region_bytes;	/* bitmap region; 0: default */
	bool csum;		/* mkfs --data-checksums */
};

struct bc_opts {
	struct bc_config cfg[BC_MAX_CONFIGS];
	unsigned int ncfg;
	bool wl[WL_NKINDS];
	bool iface[BC_NIFACES];
	unsigned int repeats;
	struct wl_params params;
	uint64_t member_bytes;
	bool prealloc;			/* throughput members zero-filled once, reused */
	bool given;			/* --members: used as they are, never made or removed */
	int log_data;			/* --logdata: fs_mount_opts.log_data_blocks */
	bool use_fio;
	bool recovery;
	bool throughput;
	uint64_t rec_sizes[BC_MAX_SIZES];
	unsigned int nrec_sizes;
	uint64_t rec_ops;	/* random writes before the crash */
	char dir[512];
	char csv[512];
	char svg[512];
	char self[PATH_MAX];
	char log[600];
};

/* results[iface][workload][config][repeat] */
static double bc_res[BC_NIFACES][WL_NKINDS][BC_MAX_CONFIGS][BC_MAX_REPEATS];
/* recovery[size][config][repeat]: seconds and rows */
static double bc_rec_s[BC_MAX_SIZES][BC_MAX_CONFIGS][BC_MAX_REPEATS];
static double bc_rec_rows[BC_MAX_SIZES][BC_MAX_CONFIGS][BC_MAX_REPEATS];

/* ---------------------------------------------------------------- fs.h operations */

struct bc_fs_ctx {
	struct fs *fs;
};

/* Resolve "a/b/c": the inode of the parent directory and the last name. */
static int bc_fs_walk(struct fs *fs, const char *path, uint64_t *parent, const char **name)
{
	char comp[256];
	const char *p = path, *slash;
	struct fs_attr a;
	uint64_t ino = FS_ROOT_INO;
	int rc;

	while ((slash = strchr(p, '/'))) {
		size_t len = (size_t)(slash - p);

		if (len >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, len);
		comp[len] = '\0';
		rc = fs_lookup(fs, ino, comp, &a);
		if (rc)
			return rc;
		ino = a.ino;
		p = slash + 1;
	}
	*parent = ino;
	*name = p;
	return 0;
}

static int bc_fs_mkdir(void *ctx, const char *path)
{
	struct bc_fs_ctx *c = ctx;
	struct fs_attr a;
	const char *name;
	uint64_t parent;
	int rc = bc_fs_walk(c->fs, path, &parent, &name);

	if (rc)
		return rc;
	rc = fs_mkdir(c->fs, parent, name, 0755, 0, 0, &a);
	return rc == -EEXIST ? 0 : rc;
}

static int bc_fs_open_or_create(void *ctx, const char *path, uint64_t *h, bool create)
{
	struct bc_fs_ctx *c = ctx;
	struct fs_attr a;
	const char *name;
	uint64_t parent;
	int rc = bc_fs_walk(c->fs, path, &parent, &name);

	if (rc)
		return rc;
	rc = fs_lookup(c->fs, parent, name, &a);
	if (rc == -ENOENT && create)
		rc = fs_mknod(c->fs, parent, name, S_IFREG | 0644, 0, 0, 0, &a);
	else if (!rc && create && a.size) {
		struct fs_attr t = { .size = 0 };

		rc = fs_setattr(c->fs, a.ino, &t, FS_SET_SIZE, &a);
	}
	if (!rc)
		*h = a.ino;
	return rc;
}

static int bc_fs_create(void *ctx, const char *path, uint64_t *h)
{
	return bc_fs_open_or_create(ctx, path, h, true);
}

static int bc_fs_open(void *ctx, const char *path, uint64_t *h)
{
	return bc_fs_open_or_create(ctx, path, h, false);
}

static ssize_t bc_fs_pwrite(void *ctx, uint64_t h, const void *buf, size_t len, uint64_t off)
{
	return fs_write(((struct bc_fs_ctx *)ctx)->fs, h, off, len, buf);
}

static ssize_t bc_fs_pread(void *ctx, uint64_t h, void *buf, size_t len, uint64_t off)
{
	return fs_read(((struct bc_fs_ctx *)ctx)->fs, h, off, len, buf);
}

static int bc_fs_fsync(void *ctx, uint64_t h)
{
	return fs_fsync(((struct bc_fs_ctx *)ctx)->fs, h, false);
}

static int bc_fs_close(void *ctx, uint64_t h)
{
	(void)ctx;
	(void)h;
	return 0;
}

static int bc_fs_sync(void *ctx)
{
	return fs_sync(((struct bc_fs_ctx *)ctx)->fs);
}

static void bc_fs_ops(struct wl_ops *ops, struct bc_fs_ctx *c)
{
	ops->ctx = c;
	ops->mkdir = bc_fs_mkdir;
	ops->create = bc_fs_create;
	ops->open = bc_fs_open;
	ops->pwrite = bc_fs_pwrite;
	ops->pread = bc_fs_pread;
	ops->fsync = bc_fs_fsync;
	ops->close = bc_fs_close;
	ops->sync = bc_fs_sync;
}

/* ---------------------------------------------------------------- fio */

/* The number after "key" : within the JSON object that starts at @obj. */
static double bc_json_num(const char *obj, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\" :", key);
	p = strstr(obj, pat);
	return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static int bc_fio(const struct bc_opts *o, enum wl_kind k, const char *dir, double *value)
{
	char cmd[2048], runtime[32], size[64], *out = NULL;
	const char *rd, *wr;
	size_t cap = 0, len = 0;
	FILE *p;
	int st;

	snprintf(runtime, sizeof(runtime), "--time_based --runtime=%.0f",
		 o->params.seconds < 1 ? 1 : o->params.seconds);
	snprintf(size, sizeof(size), "%llu", (unsigned long long)o->params.seq_bytes);
	switch (k) {
	case WL_SEQWRITE:
		snprintf(cmd, sizeof(cmd), "fio --name=seqwrite --directory=%s --rw=write --bs=1M "
			 "--size=%s --end_fsync=1 --ioengine=psync --output-format=json", dir, size);
		break;
	case WL_RANDFSYNC:
		snprintf(cmd, sizeof(cmd), "fio --name=randfsync --directory=%s --rw=randwrite "
			 "--bs=4k --size=64M --fsync=1 --ioengine=psync %s --output-format=json",
			 dir, runtime);
		break;
	case WL_RANDBUF:
		snprintf(cmd, sizeof(cmd), "fio --name=randbuf --directory=%s --rw=randwrite "
			 "--bs=4k --size=256M --end_fsync=1 --ioengine=psync %s --output-format=json",
			 dir, runtime);
		break;
	case WL_MIXED:
		snprintf(cmd, sizeof(cmd), "fio --name=mixed --directory=%s --rw=randrw "
			 "--rwmixread=70 --bssplit=4k/30:16k/20:64k/30:256k/10:1m/10 --nrfiles=64 "
			 "--filesize=4M --size=256M --fsync=64 --ioengine=psync %s "
			 "--output-format=json", dir, runtime);
		break;
	default:
		return -EINVAL;
	}
	strncat(cmd, " 2>>", sizeof(cmd) - strlen(cmd) - 1);
	strncat(cmd, o->log, sizeof(cmd) - strlen(cmd) - 1);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *n = realloc(out, cap + 65536);

			if (!n) {
				free(out);
				pclose(p);
				return -ENOMEM;
			}
			out = n;
			cap += 65536;
		}
		size_t r = fread(out + len, 1, 4096, p);

		if (!r)
			break;
		len += r;
	}
	st = pclose(p);
	if (!out || st) {
		free(out);
		return -EIO;
	}
	out[len] = '\0';
	rd = strstr(out, "\"read\" : {");
	wr = strstr(out, "\"write\" : {");
	if (!rd || !wr) {
		free(out);
		return -EIO;
	}
	switch (k) {
	case WL_SEQWRITE: *value = bc_json_num(wr, "bw_bytes") / 1e6; break;
	case WL_RANDFSYNC:
	case WL_RANDBUF: *value = bc_json_num(wr, "iops"); break;
	default: *value = (bc_json_num(rd, "bw_bytes") + bc_json_num(wr, "bw_bytes")) / 1e6;
	}
	free(out);
	return isnan(*value) ? -EIO : 0;
}

/* ---------------------------------------------------------------- one configuration */

static void bc_member_paths(const struct bc_opts *o, char **members, char *storage, size_t each)
{
	for (unsigned int i = 0; i < BC_MEMBERS; i++) {
		members[i] = storage + i * each;
		snprintf(members[i], each, "%s/disk%u.img", o->dir, i);
	}
}

/*
 * @keep: mkfs over the member files as they are (--prealloc), else new sparse
 * ones. Members given (--members) are kept and keep their size, and the array
 * is made --assume-clean: an export holds what the last configuration left, and
 * the initial sync would otherwise run under the measurement (over a slow
 * member, for minutes). Nothing here reads a block it has not written, and
 * nothing crashes or degrades the array, so parity of lines never written is
 * never used.
 */
static int bc_mkfs(const struct bc_opts *o, const struct bc_config *c, char **members,
		   uint64_t member_bytes, bool keep)
{
	char size[32], region[32], *argv[20];
	unsigned int a = 0;

	snprintf(size, sizeof(size), "%llu", (unsigned long long)member_bytes);
	argv[a++] = "jgrfs";
	argv[a++] = "mkfs";
	argv[a++] = "--force";
	argv[a++] = "--resync";
	argv[a++] = (char *)c->resync;
	if (o->given) {
		argv[a++] = "--assume-clean";
		keep = true;
	} else {
		argv[a++] = "--size";
		argv[a++] = size;
	}
	if (c->region_bytes) {
		snprintf(region, sizeof(region), "%llu", (unsigned long long)c->region_bytes);
		argv[a++] = "--bitmap-region";
		argv[a++] = region;
	}
	/* explicit: mkfs keeps them by default with --resync journal */
	argv[a++] = c->csum ? "--data-checksums" : "--no-data-checksums";
	for (unsigned int i = 0; i < BC_MEMBERS; i++) {
		if (!keep)
			unlink(members[i]);
		argv[a++] = members[i];
	}
	argv[a] = NULL;
	return sp_run(o->self, o->log, argv);
}

/* --prealloc: every member file fully written with zeros, durable. */
static int bc_zero_members(const struct bc_opts *o, char **members)
{
	size_t chunk = 8u << 20;
	uint8_t *zero = calloc(1, chunk);
	int rc = 0;

	if (!zero)
		return -ENOMEM;
	printf("writing %llu MiB of zeros to each of the %d member files (--prealloc)\n",
	       (unsigned long long)(o->member_bytes >> 20), BC_MEMBERS);
	fflush(stdout);
	for (int i = 0; i < BC_MEMBERS && !rc; i++) {
		int fd = open(members[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0) {
			rc = cli_err("%s: %s", members[i], strerror(errno));
			break;
		}
		for (uint64_t off = 0; off < o->member_bytes && !rc; off += chunk) {
			size_t n = o->member_bytes - off < chunk ? (size_t)(o->member_bytes - off) : chunk;

			if (pwrite(fd, zero, n, (off_t)off) != (ssize_t)n)
				rc = cli_err("%s: write: %s", members[i], strerror(errno));
		}
		if (!rc && fsync(fd))
			rc = cli_err("%s: fsync: %s", members[i], strerror(errno));
		close(fd);
	}
	free(zero);
	return rc ? -EIO : 0;
}

static int bc_run_fuse(const struct bc_opts *o, unsigned int ci, unsigned int rep, char **members)
{
	char mnt[600], opts[64], dir[700];
	double secs;
	pid_t pid;
	int rc = 0;

	snprintf(mnt, sizeof(mnt), "%s/mnt", o->dir);
	if (o->log_data)
		snprintf(opts, sizeof(opts), "data=%s,logdata=%d", o->cfg[ci].data,
			 o->log_data < 0 ? 0 : o->log_data);
	else
		snprintf(opts, sizeof(opts), "data=%s", o->cfg[ci].data);
	mkdir(mnt, 0755);
	pid = sp_mount(o->self, opts, members, BC_MEMBERS, mnt, o->log, NULL, 600, &secs);
	if (pid < 0)
		return cli_err("%s: mount failed: %s (see %s)", o->cfg[ci].name, strerror((int)-pid),
			       o->log), (int)pid;
	for (int k = 0; k < WL_NKINDS && !rc; k++) {
		struct wl_result r;
		struct wl_ops ops;

		if (!o->wl[k])
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", mnt, wl_name(k));
		if (o->use_fio && k != WL_CREATES) {
			mkdir(dir, 0755);
			rc = bc_fio(o, k, dir, &r.value);
		} else {
			wl_posix_ops(&ops, mnt);
			rc = wl_run(k, &ops, wl_name(k), &o->params, &r);
		}
		if (rc) {
			cli_err("%s: fuse %s failed: %s (see %s)", o->cfg[ci].name, wl_name(k),
				strerror(-rc), o->log);
			break;
		}
		bc_res[BC_FUSE][k][ci][rep] = r.value;
		printf("  %-8s %-6s %-12s %10.1f %s\n", o->cfg[ci].name, "fuse", wl_name(k),
		       r.value, wl_unit(k));
		fflush(stdout);
	}
	if (sp_umount(mnt, pid) && !rc) {
		cli_err("%s: unmount failed (see %s)", o->cfg[ci].name, o->log);
		rc = -EIO;
	}
	return rc;
}

static int bc_run_inproc(const struct bc_opts *o, unsigned int ci, unsigned int rep,
			 char **members)
{
	struct raid_assemble_cfg acfg = { 0 };
	struct fs_mount_opts mo = { 0 };
	struct blk_dev *devs[BC_MEMBERS];
	struct raid_array *a;
	struct bc_fs_ctx c;
	struct wl_ops ops;
	int rc;

	rc = cli_open_members(members, BC_MEMBERS, 0, devs);
	if (rc)
		return rc;
	rc = raid_assemble(devs, BC_MEMBERS, &acfg, &a);
	if (rc) {
		cli_close_members(devs, BC_MEMBERS);
		return cli_err("%s: assembly failed: %s", o->cfg[ci].name, strerror(-rc)), rc;
	}
	mo.log_data_blocks = o->log_data;
	rc = jnl_data_mode_parse(o->cfg[ci].data, &mo.data_mode);
	if (!rc)
		rc = fs_mount(raid_array_dev(a), &mo, &c.fs);
	if (rc) {
		raid_stop(a);
		return cli_err("%s: in-process mount failed: %s", o->cfg[ci].name, strerror(-rc)), rc;
	}
	bc_fs_ops(&ops, &c);
	for (int k = 0; k < WL_NKINDS && !rc; k++) {
		struct wl_result r;

		if (!o->wl[k])
			continue;
		rc = wl_run(k, &ops, wl_name(k), &o->params, &r);
		if (rc) {
			cli_err("%s: inproc %s failed: %s", o->cfg[ci].name, wl_name(k), strerror(-rc));
			break;
		}
		bc_res[BC_INPROC][k][ci][rep] = r.value;
		printf("  %-8s %-6s %-12s %10.1f %s\n", o->cfg[ci].name, "inproc", wl_name(k),
		       r.value, wl_unit(k));
		fflush(stdout);
	}
	if (fs_unmount(c.fs) && !rc)
		rc = -EIO;
	if (raid_stop(a) && !rc)
		rc = -EIO;
	return rc;
}

/* ---------------------------------------------------------------- recovery */

struct bc_crash_arg {
	const char *mnt;
	uint64_t ops;
	pid_t daemon;
	int rc;
};

/*
 * The same work before every crash: a 256 MiB file written and fsynced, then
 * random 4 KiB writes with an fsync every 512, and kill -9 of the daemon right
 * after write number @ops is issued (while the next ones are in flight).
 */
static void *bc_crash_workload(void *p)
{
	struct bc_crash_arg *a = p;
	uint64_t seed = 7, size = 256ull << 20;
	char path[700];
	uint8_t *buf = malloc(1u << 20);
	int fd;

	snprintf(path, sizeof(path), "%s/crashfile", a->mnt);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0 || !buf) {
		a->rc = -errno;
		free(buf);
		return NULL;
	}
	memset(buf, 0x5a, 1u << 20);
	for (uint64_t off = 0; off < size; off += 1u << 20)
		if (pwrite(fd, buf, 1u << 20, (off_t)off) != 1 << 20)
			a->rc = -EIO;
	if (fsync(fd))
		a->rc = -errno;
	for (uint64_t i = 0; !a->rc; i++) {
		uint64_t off;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		off = ((seed >> 17) % (size / 4096)) * 4096;
		if (i == a->ops)
			kill(a->daemon, SIGKILL);
		if (pwrite(fd, buf, 4096, (off_t)off) != 4096 || (i % 512 == 511 && fsync(fd)))
			break; /* the daemon is gone */
	}
	close(fd);
	free(buf);
	return NULL;
}

static int bc_recovery_one(const struct bc_opts *o, unsigned int si, unsigned int ci,
			   unsigned int rep, char **members)
{
	char mnt[600], opts[64];
	struct bc_crash_arg arg = { 0 };
	struct fop_status st;
	pthread_t th;
	double secs;
	pid_t pid;
	int rc, fd;

	rc = bc_mkfs(o, &o->cfg[ci], members, o->rec_sizes[si], false);
	if (rc)
		return cli_err("%s: mkfs exited %d (see %s)", o->cfg[ci].name, rc, o->log), -EIO;
	snprintf(mnt, sizeof(mnt), "%s/mnt", o->dir);
	snprintf(opts, sizeof(opts), "data=%s", o->cfg[ci].data);
	mkdir(mnt, 0755);
	pid = sp_mount(o->self, opts, members, BC_MEMBERS, mnt, o->log, NULL, 600, &secs);
	if (pid < 0)
		return cli_err("%s: mount failed (see %s)", o->cfg[ci].name, o->log), (int)pid;
	arg.mnt = mnt;
	arg.ops = o->rec_ops;
	arg.daemon = pid;
	pthread_create(&th, NULL, bc_crash_workload, &arg);
	pthread_join(th, NULL);
	sp_crash(mnt, pid);
	if (arg.rc)
		return cli_err("%s: crash workload failed: %s", o->cfg[ci].name, strerror(-arg.rc)),
		       arg.rc;

	pid = sp_mount(o->self, opts, members, BC_MEMBERS, mnt, o->log, NULL, 3600, &secs);
	if (pid < 0)
		return cli_err("%s: remount after the crash failed (see %s)", o->cfg[ci].name,
			       o->log), (int)pid;
	bc_rec_s[si][ci][rep] = secs;
	bc_rec_rows[si][ci][rep] = -1;
	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	memset(&st, 0, sizeof(st));
	if (fd >= 0 && !ioctl(fd, FOP_IOC_STATUS, &st) && st.version == FOP_STATUS_VERSION)
		bc_rec_rows[si][ci][rep] = (double)(st.raid_resync_rows_checked + st.rec_rows_resynced);
	if (fd >= 0)
		close(fd);
	rc = sp_umount(mnt, pid);
	printf("  %-8s %6.0f MiB members: remount %.3f s, %.0f rows resynced\n",
	       o->cfg[ci].name, (double)o->rec_sizes[si] / (1 << 20), secs,
	       bc_rec_rows[si][ci][rep]);
	fflush(stdout);
	return rc;
}

/* ---------------------------------------------------------------- report */

/* data=journal is a throughput reference only: recovery is not measured for it */
static bool bc_in_recovery(const struct bc_config *c)
{
	return strcmp(c->data, "journal") != 0;
}

static int bc_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double bc_median(const double *v, unsigned int n)
{
	double tmp[BC_MAX_REPEATS];

	memcpy(tmp, v, n * sizeof(double));
	qsort(tmp, n, sizeof(double), bc_cmp);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static double bc_best(const double *v, unsigned int n)
{
	double b = v[0];

	for (unsigned int i = 1; i < n; i++)
		b = fmax(b, v[i]);
	return b;
}

/* One throughput table: @stat of the repeats (median, best), ratios to cfg[0]. */
static void bc_report_table(const struct bc_opts *o, FILE *csv, const char *kind, const char *what,
			    double (*stat)(const double *, unsigned int))
{
	printf("\nthroughput: %s of %u, and ratio to %s\n", what, o->repeats, o->cfg[0].name);
	printf("%-7s %-10s", "iface", "workload");
	for (unsigned int c = 0; c < o->ncfg; c++)
		printf(" %20s", o->cfg[c].name);
	printf("\n");
	for (int i = 0; i < BC_NIFACES; i++) {
		if (!o->iface[i])
			continue;
		for (int k = 0; k < WL_NKINDS; k++) {
			double base;

			if (!o->wl[k])
				continue;
			base = stat(bc_res[i][k][0], o->repeats);
			printf("%-7s %-10s", bc_iface_names[i], wl_name(k));
			for (unsigned int c = 0; c < o->ncfg; c++) {
				double m = stat(bc_res[i][k][c], o->repeats);

				printf(" %9.1f (%6.1f%%)", m, base > 0 ? 100 * m / base : 0);
				if (csv)
					fprintf(csv, "%s,%s,%s,%s,%.3f,%s,%.4f,%u\n", kind,
						bc_iface_names[i], wl_name(k), o->cfg[c].name, m,
						wl_unit(k), base > 0 ? m / base : 0, o->repeats);
			}
			printf("   %s\n", wl_unit(k));
		}
	}
}

static void bc_report(const struct bc_opts *o)
{
	FILE *csv = o->csv[0] ? fopen(o->csv, "w") : NULL;

	if (o->csv[0] && !csv)
		cli_err("%s: %s", o->csv, strerror(errno));
	if (csv)
		fprintf(csv, "kind,interface,workload,config,value,unit,ratio_to_unprotected,"
			     "repeats\n");
	if (o->throughput) {
		bc_report_table(o, csv, "throughput", "median", bc_median);
		/* interference only slows a run: on a shared machine the best run is
		 * the other honest reading */
		if (o->repeats > 1)
			bc_report_table(o, csv, "throughput_best", "best", bc_best);
	}
	if (o->recovery) {
		printf("\nrecovery after kill -9 (same work, %llu random writes): remount seconds / "
		       "rows resynced, median of %u\n%-14s", (unsigned long long)o->rec_ops,
		       o->repeats, "member size");
		for (unsigned int c = 0; c < o->ncfg; c++)
			if (bc_in_recovery(&o->cfg[c]))
				printf(" %22s", o->cfg[c].name);
		printf("\n");
		for (unsigned int s = 0; s < o->nrec_sizes; s++) {
			printf("%10.0f MiB", (double)o->rec_sizes[s] / (1 << 20));
			for (unsigned int c = 0; c < o->ncfg; c++) {
				if (!bc_in_recovery(&o->cfg[c]))
					continue;
				double ms = bc_median(bc_rec_s[s][c], o->repeats);
				double mr = bc_median(bc_rec_rows[s][c], o->repeats);

				printf(" %9.3fs %10.0fr", ms, mr);
				if (csv)
					fprintf(csv, "recovery,fuse,%llu,%s,%.4f,s,,%u\n"
						     "recovery_rows,fuse,%llu,%s,%.0f,rows,,%u\n",
						(unsigned long long)o->rec_sizes[s], o->cfg[c].name, ms,
						o->repeats, (unsigned long long)o->rec_sizes[s],
						o->cfg[c].name, mr, o->repeats);
			}
			printf("\n");
		}
	}
	if (csv)
		fclose(csv);
}

/* An SVG a person can look at: ratios to unprotected, and recovery time by size. */
static void bc_svg(const struct bc_opts *o)
{
	static const char *const colors[] = { "#888888", "#d9534f", "#f0ad4e", "#5cb85c",
					      "#5bc0de", "#337ab7", "#9b59b6", "#34495e" };
	FILE *f = fopen(o->svg, "w");
	int W = 900, H = (o->throughput ? 420 : 0) + (o->recovery ? 380 : 0), x0 = 70, y0 = 60,
	    ph = 260, nw = 0;
	double maxr = 1.2;

	if (!f) {
		cli_err("%s: %s", o->svg, strerror(errno));
		return;
	}
	for (int k = 0; k < WL_NKINDS; k++)
		nw += o->wl[k] && o->iface[BC_FUSE];
	fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
		   "font-family='sans-serif' font-size='12'>\n<rect width='100%%' height='100%%' "
		   "fill='white'/>\n", W, H);
	if (!o->throughput)
		goto recovery;
	fprintf(f, "<text x='%d' y='25' font-size='16'>Throughput through FUSE, ratio to %s "
		   "(median of %u)</text>\n", x0, o->cfg[0].name, o->repeats);
	for (double r = 0; r <= maxr + 1e-9; r += 0.2) {
		int y = y0 + ph - (int)(r / maxr * ph);

		fprintf(f, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='%s'/>"
			   "<text x='%d' y='%d' text-anchor='end'>%.0f%%</text>\n",
			x0, W - 20, y, y, r == 1.0 ? "black" : "#dddddd", x0 - 5, y + 4, r * 100);
	}
	if (nw && o->throughput) {
		int gw = (W - x0 - 40) / nw, bw = (gw - 20) / (int)o->ncfg, g = 0;

		for (int k = 0; k < WL_NKINDS; k++) {
			double base;

			if (!o->wl[k])
				continue;
			base = bc_median(bc_res[BC_FUSE][k][0], o->repeats);
			for (unsigned int c = 0; c < o->ncfg; c++) {
				double r = base > 0 ? bc_median(bc_res[BC_FUSE][k][c], o->repeats) / base : 0;
				int h = (int)(fmin(r, maxr) / maxr * ph);

				fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='%s'>"
					   "<title>%s %s: %.1f%%</title></rect>\n",
					x0 + g * gw + 10 + (int)c * bw, y0 + ph - h, bw - 2, h,
					colors[c % 8], wl_name(k), o->cfg[c].name, r * 100);
			}
			fprintf(f, "<text x='%d' y='%d' text-anchor='middle'>%s</text>\n",
				x0 + g * gw + gw / 2, y0 + ph + 18, wl_name(k));
			g++;
		}
	}
	for (unsigned int c = 0; c < o->ncfg; c++)
		fprintf(f, "<rect x='%d' y='%d' width='12' height='12' fill='%s'/>"
			   "<text x='%d' y='%d'>%s</text>\n", x0 + (int)c * 130, y0 + ph + 32,
			colors[c % 8], x0 + (int)c * 130 + 16, y0 + ph + 43, o->cfg[c].name);
recovery:
	if (o->recovery && o->nrec_sizes) {
		int ry = o->throughput ? 440 : 60, rh = 260;

		for (unsigned int c = 0, k = 0; !o->throughput && c < o->ncfg; c++) {
			if (!bc_in_recovery(&o->cfg[c]))
				continue;
			fprintf(f, "<rect x='%d' y='%d' width='12' height='12' fill='%s'/>"
				   "<text x='%d' y='%d'>%s</text>\n", x0 + (int)k * 130, ry + rh + 32,
				colors[c % 8], x0 + (int)k * 130 + 16, ry + rh + 43, o->cfg[c].name);
			k++;
		}
		double maxs = 0.01;

		for (unsigned int s = 0; s < o->nrec_sizes; s++)
			for (unsigned int c = 0; c < o->ncfg; c++)
				maxs = fmax(maxs, bc_median(bc_rec_s[s][c], o->repeats));
		fprintf(f, "<text x='%d' y='%d' font-size='16'>Remount after kill -9: seconds, by "
			   "member size (log scale)</text>\n", x0, ry - 20);
		for (double t = 0.01; t <= maxs * 10; t *= 10) {
			int y = ry + rh - (int)(log10(t / 0.01) / log10(maxs * 10 / 0.01) * rh);

			fprintf(f, "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='#dddddd'/>"
				   "<text x='%d' y='%d' text-anchor='end'>%gs</text>\n",
				x0, W - 20, y, y, x0 - 5, y + 4, t);
		}
		for (unsigned int c = 0; c < o->ncfg; c++) {
			if (!bc_in_recovery(&o->cfg[c]))
				continue;
			fprintf(f, "<polyline fill='none' stroke-width='2' stroke='%s' points='",
				colors[c % 8]);
			for (unsigned int s = 0; s < o->nrec_sizes; s++) {
				double t = fmax(bc_median(bc_rec_s[s][c], o->repeats), 0.01);
				int x = x0 + 40 + (int)s * (W - x0 - 120) / (int)(o->nrec_sizes > 1 ? o->nrec_sizes - 1 : 1);
				int y = ry + rh - (int)(log10(t / 0.01) / log10(maxs * 10 / 0.01) * rh);

				fprintf(f, "%d,%d ", x, y);
			}
			fprintf(f, "'/>\n");
		}
		for (unsigned int s = 0; s < o->nrec_sizes; s++)
			fprintf(f, "<text x='%d' y='%d' text-anchor='middle'>4 x %.0f MiB</text>\n",
				x0 + 40 + (int)s * (W - x0 - 120) / (int)(o->nrec_sizes > 1 ? o->nrec_sizes - 1 : 1),
				ry + rh + 18, (double)o->rec_sizes[s] / (1 << 20));
	}
	fprintf(f, "</svg>\n");
	fclose(f);
}

/* ---------------------------------------------------------------- main */

static void bc_usage(FILE *f)
{
	fprintf(f,
		"usage: jgrfs bench [options]\n"
		"       jgrfs bench raid|jnl|fs ... (engine benchmarks; see their --help)\n\n"
		"What crash protection costs: each configuration runs the same workloads on the\n"
		"same member files (4 x RAID5), through the FUSE mount and in-process; medians\n"
		"and ratios to 'unprotected' (data=ordered, resync=full), then, with --recovery,\n"
		"the time to remount after kill -9 at the same point, by array size.\n\n"
		"options:\n"
		"  --workloads LIST   of seqwrite,randfsync,randbuf,creates,mixed (default all)\n"
		"  --iface LIST       fuse,inproc (default both)\n"
		"  --bitmap-sweep LIST  more bitmap region sizes to compare, e.g. 4M,512M\n"
		"  --no-journal       leave out data=journal\n"
		"  --data-checksums   also 'declared+csum': data=declared on a volume made with\n"
		"                     mkfs --data-checksums (the others are made without)\n"
		"  --repeats N        runs of everything, interleaved (default 3)\n"
		"  --seconds S        length of each time-based workload (default 5)\n"
		"  --seq-size SIZE    bytes of the sequential write (default 512M)\n"
		"  --files N          files of the create workload (default 10000)\n"
		"  --size SIZE        member file size for throughput (default 2G, sparse)\n"
		"  --prealloc         throughput members written with zeros once and reused, as\n"
		"                     disks are: no block allocation in the host filesystem\n"
		"  --members LIST     the 4 members to use, comma-separated (files or NBD URIs),\n"
		"                     as they are (no --size, --prealloc, --recovery): each\n"
		"                     configuration's mkfs --force overwrites them\n"
		"  --no-fio           built-in generator through FUSE even where fio is installed\n"
		"  --logdata N        mount option logdata=N (default 16): 0 writes every fsync's\n"
		"                     data home before its commit, as ext3 did\n"
		"  --recovery         also measure recovery after kill -9\n"
		"  --recovery-only    only that\n"
		"  --recovery-sizes LIST  member sizes (default 1G,4G,16G, sparse)\n"
		"  --recovery-ops N   random writes before the crash (default 20000)\n"
		"  --dir DIR          where member files go (default ./bench.tmp; not tmpfs);\n"
		"                     with --members, the log and the mount point\n"
		"  --csv FILE         write every median as CSV\n"
		"  --svg FILE         write a chart\n"
		"  -v, --verbose      also the engine's own lines; -vv: everything\n"
		"  -q, --quiet        errors only\n"
		"  -h, --help         this text\n\n"
		"Needs root and /dev/fuse. Build with `make release` for figures.\n");
}

static int bc_parse_list(const char *arg, uint64_t *out, unsigned int max, unsigned int *n)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", arg);
	*n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n == max || cli_parse_size(t, &out[*n]))
			return -EINVAL;
		(*n)++;
	}
	return *n ? 0 : -EINVAL;
}

/*
 * --members: exactly BC_MEMBERS names into @out. A file must exist (the bench
 * makes no member it is given); an NBD URI is checked by mkfs, which opens it.
 */
static int bc_parse_members(const char *arg, char out[BC_MEMBERS][600])
{
	char buf[BC_MEMBERS * 600], *save = NULL;
	unsigned int n = 0;
	struct stat st;

	if (strlen(arg) >= sizeof(buf))
		return cli_err("--members: too long"), -EINVAL;
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == BC_MEMBERS)
			return cli_err("--members: exactly %d members, not more", BC_MEMBERS),
			       -EINVAL;
		if (!raid_dev_is_nbd(t) && stat(t, &st))
			return cli_err("--members: %s: %s (members given are used, not made)", t,
				       strerror(errno)), -EINVAL;
		snprintf(out[n++], 600, "%s", t);
	}
	if (n != BC_MEMBERS)
		return cli_err("--members: exactly %d members, not %u", BC_MEMBERS, n), -EINVAL;
	return 0;
}

static void bc_add_cfg(struct bc_opts *o, const char *name, const char *data, const char *resync,
		       uint64_t region)
{
	struct bc_config *c = &o->cfg[o->ncfg++];

	snprintf(c->name, sizeof(c->name), "%s", name);
	c->data = data;
	c->resync = resync;
	c->region_bytes = region;
}

/*
 * What the command line says that is not a struct bc_opts field itself: turned
 * into configurations (bc_add_configs) and member names (bc_prepare) once every
 * option is read, as --members and --size must be checked against each other.
 */
struct bc_args {
	uint64_t sweep[6]; /* --bitmap-sweep */
	unsigned int nsweep;
	bool journal, csum, no_fio, sized;
	char storage[BC_MEMBERS][600]; /* --members, or the files made in --dir */
};

#define BC_GO (-1) /* a step's answer: go on (anything else is the exit status) */

/* The defaults: every workload through both interfaces, 3 repeats, members of 2G. */
static void bc_defaults(struct bc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->repeats = 3;
	o->params = (struct wl_params){ .seconds = 5, .seq_bytes = 512ull << 20, .files = 10000,
					.seed = 1 };
	o->member_bytes = 2ull << 30;
	o->throughput = true;
	o->rec_ops = 20000;
	o->nrec_sizes = 3;
	o->rec_sizes[0] = 1ull << 30;
	o->rec_sizes[1] = 4ull << 30;
	o->rec_sizes[2] = 16ull << 30;
	for (int k = 0; k < WL_NKINDS; k++)
		o->wl[k] = true;
	o->iface[BC_FUSE] = o->iface[BC_INPROC] = true;
	snprintf(o->dir, sizeof(o->dir), "bench.tmp");
}

/* --workloads LIST: only those; an unknown name is refused. */
static int bc_parse_workloads(struct bc_opts *o, const char *arg)
{
	char buf[256], *save = NULL;

	memset(o->wl, 0, sizeof(o->wl));
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k = wl_parse(t);

		if (k < 0)
			return cli_err("--workloads: unknown workload '%s'", t), 2;
		o->wl[k] = true;
	}
	return BC_GO;
}

/* One option @c (its value in optarg): BC_GO, or the exit status (help, a bad value). */
static int bc_parse_opt(struct bc_opts *o, struct bc_args *a, int c)
{
	uint64_t v;

	switch (c) {
	case 'w':
		return bc_parse_workloads(o, optarg);
	case 'i':
		o->iface[BC_FUSE] = strstr(optarg, "fuse") != NULL;
		o->iface[BC_INPROC] = strstr(optarg, "inproc") != NULL;
		if (!o->iface[BC_FUSE] && !o->iface[BC_INPROC])
			return cli_err("--iface %s: expected fuse, inproc or both", optarg), 2;
		break;
	case 'b':
		if (bc_parse_list(optarg, a->sweep, 6, &a->nsweep))
			return cli_err("--bitmap-sweep %s: expected sizes such as 4M,512M",
				       optarg), 2;
		break;
	case 'J':
		a->journal = false;
		break;
	case 'K':
		a->csum = true;
		break;
	case 'r':
		if (cli_parse_u64(optarg, BC_MAX_REPEATS, &v) || !v)
			return cli_err("--repeats: 1 to %d", BC_MAX_REPEATS), 2;
		o->repeats = (unsigned int)v;
		break;
	case 's':
		if (cli_parse_u64(optarg, 3600, &v) || !v)
			return cli_err("--seconds: 1 to 3600"), 2;
		o->params.seconds = (double)v;
		break;
	case 'q':
		if (cli_parse_size(optarg, &o->params.seq_bytes) ||
		    o->params.seq_bytes < (1u << 20))
			return cli_err("--seq-size %s: at least 1M", optarg), 2;
		o->params.seq_bytes &= ~((1ull << 20) - 1);
		break;
	case 'n':
		if (cli_parse_u64(optarg, 10000000, &v) || !v)
			return cli_err("--files %s: expected a count", optarg), 2;
		o->params.files = (unsigned int)v;
		break;
	case 'S':
		if (cli_parse_size(optarg, &o->member_bytes) || o->member_bytes < (256u << 20))
			return cli_err("--size %s: at least 256M", optarg), 2;
		a->sized = true;
		break;
	case 'm':
		if (bc_parse_members(optarg, a->storage))
			return 2;
		o->given = true;
		break;
	case 'F':
		a->no_fio = true;
		break;
	case 'L':
		if (cli_parse_u64(optarg, 1024, &v))
			return cli_err("--logdata %s: expected blocks, 0 to 1024", optarg), 2;
		o->log_data = v ? (int)v : -1;
		break;
	case 'P':
		o->prealloc = true;
		break;
	case 'R':
		o->recovery = true;
		break;
	case 'O':
		o->recovery = true;
		o->throughput = false;
		break;
	case 'z':
		if (bc_parse_list(optarg, o->rec_sizes, BC_MAX_SIZES, &o->nrec_sizes))
			return cli_err("--recovery-sizes %s: expected sizes such as 1G,4G",
				       optarg), 2;
		break;
	case 'o':
		if (cli_parse_u64(optarg, 100000000, &o->rec_ops))
			return cli_err("--recovery-ops %s: expected a count", optarg), 2;
		break;
	case 'd':
		snprintf(o->dir, sizeof(o->dir), "%s", optarg);
		break;
	case 'c':
		snprintf(o->csv, sizeof(o->csv), "%s", optarg);
		break;
	case 'g':
		snprintf(o->svg, sizeof(o->svg), "%s", optarg);
		break;
	case 'h':
		bc_usage(stdout);
		return 0;
	default:
		if (!cli_verbosity_opt(c))
			break;
		bc_usage(stderr);
		return 2;
	}
	return BC_GO;
}

/* The command line into @o and @a, and the options that exclude each other refused. */
static int bc_parse_args(struct bc_opts *o, struct bc_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "workloads", required_argument, NULL, 'w' },
		{ "iface", required_argument, NULL, 'i' },
		{ "bitmap-sweep", required_argument, NULL, 'b' },
		{ "no-journal", no_argument, NULL, 'J' },
		{ "data-checksums", no_argument, NULL, 'K' },
		{ "repeats", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "seq-size", required_argument, NULL, 'q' },
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'S' },
		{ "no-fio", no_argument, NULL, 'F' },
		{ "prealloc", no_argument, NULL, 'P' },
		{ "members", required_argument, NULL, 'm' },
		{ "logdata", required_argument, NULL, 'L' },
		{ "recovery", no_argument, NULL, 'R' },
		{ "recovery-only", no_argument, NULL, 'O' },
		{ "recovery-sizes", required_argument, NULL, 'z' },
		{ "recovery-ops", required_argument, NULL, 'o' },
		{ "dir", required_argument, NULL, 'd' },
		{ "csv", required_argument, NULL, 'c' },
		{ "svg", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERBOSITY_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	while ((c = getopt_long(argc, argv, "h" CLI_VERBOSITY_SHORTOPTS, longopts, NULL)) != -1) {
		rc = bc_parse_opt(o, a, c);
		if (rc != BC_GO)
			return rc;
	}
	if (optind != argc)
		return cli_err("unexpected argument '%s'", argv[optind]), 2;
	if (o->given && (a->sized || o->prealloc || o->recovery))
		return cli_err("--members: the members are used as they are, at their size; "
			       "--size, --prealloc and --recovery make their own"), 2;
	return BC_GO;
}

/* Root, /dev/fuse and this program's path (the daemon is run from it); fio or not. */
static int bc_check_env(struct bc_opts *o, const struct bc_args *a)
{
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK))
		return cli_err("needs root and /dev/fuse"), 2;
	/* No member lock in this process: a lock is held until the process exits,
	 * one per file, and every in-process configuration opens new files (after
	 * 64 the table was full: "too many devices"). Each mkfs (a child) still
	 * takes its exclusive lock, so a member in use elsewhere is refused. */
	cli_lock_mode = CLI_LOCK_NONE;
	if (sp_self(o->self, sizeof(o->self)))
		return cli_err("cannot find this program"), 2;
	/* fio through FUSE unless told otherwise or not installed */
	o->use_fio = !a->no_fio && system("fio --version >/dev/null 2>&1") == 0;
	return BC_GO;
}

/* The configurations compared, in the order each repeat starts from. */
static void bc_add_configs(struct bc_opts *o, const struct bc_args *a)
{
	bc_add_cfg(o, "unprotected", "ordered", "full", 0);
	bc_add_cfg(o, "bitmap", "ordered", "bitmap", 0);
	for (unsigned int i = 0; i < a->nsweep && o->ncfg < BC_MAX_CONFIGS - 3; i++) {
		char name[32];

		/* mdadm's old defaults are below a MiB (4K for a 1 GiB member) */
		if (a->sweep[i] < (1u << 20))
			snprintf(name, sizeof(name), "bitmap-%lluK",
				 (unsigned long long)(a->sweep[i] >> 10));
		else
			snprintf(name, sizeof(name), "bitmap-%lluM",
				 (unsigned long long)(a->sweep[i] >> 20));
		bc_add_cfg(o, name, "ordered", "bitmap", a->sweep[i]);
	}
	bc_add_cfg(o, "declared", "declared", "journal", 0);
	if (a->csum) {
		bc_add_cfg(o, "declared+csum", "declared", "journal", 0);
		o->cfg[o->ncfg - 1].csum = true;
	}
	if (a->journal)
		bc_add_cfg(o, "journal", "journal", "full", 0);
}

/* --dir made, the log named, @members pointed at their names; the first line printed. */
static int bc_prepare(struct bc_opts *o, struct bc_args *a, char **members)
{
	if (mkdir(o->dir, 0755) && errno != EEXIST)
		return cli_err("%s: %s", o->dir, strerror(errno)), 2;
	snprintf(o->log, sizeof(o->log), "%s/bench.log", o->dir);
	for (int i = 0; i < BC_MEMBERS; i++)
		members[i] = a->storage[i];
	if (!o->given)
		bc_member_paths(o, members, &a->storage[0][0], sizeof(a->storage[0]));
	signal(SIGPIPE, SIG_IGN);
	if (o->given)
		printf("jgrfs bench: RAID5 over %s, %s, %s, %s; %s through FUSE; log in %s\n",
		       members[0], members[1], members[2], members[3],
		       o->use_fio ? "fio" : "built-in generator", o->log);
	else
		printf("jgrfs bench: RAID5 over %d files in %s; %s through FUSE; log in %s\n",
		       BC_MEMBERS, o->dir, o->use_fio ? "fio" : "built-in generator", o->log);
	return BC_GO;
}

/* Every configuration through each interface asked for, --repeats times. */
static int bc_throughput(struct bc_opts *o, char **members)
{
	int rc = 0;

	if (o->prealloc)
		rc = bc_zero_members(o, members);
	for (unsigned int rep = 0; rep < o->repeats && !rc; rep++) {
		printf("repeat %u/%u\n", rep + 1, o->repeats);
		/* each repeat starts at the next configuration: a slow spell of the
		 * machine does not always fall on the same one */
		for (unsigned int step = 0, ci = rep % o->ncfg; step < o->ncfg && !rc;
		     step++, ci = (ci + 1) % o->ncfg) {
			rc = bc_mkfs(o, &o->cfg[ci], members, o->member_bytes, o->prealloc);
			if (rc) {
				rc = cli_err("%s: mkfs exited %d (see %s)", o->cfg[ci].name, rc, o->log);
				break;
			}
			if (o->iface[BC_FUSE])
				rc = bc_run_fuse(o, ci, rep, members);
			if (!rc && o->iface[BC_INPROC])
				rc = bc_run_inproc(o, ci, rep, members);
		}
	}
	return rc;
}

/* Recovery after kill -9 of each configuration that differs there, at each size. */
static int bc_recovery(struct bc_opts *o, char **members)
{
	int rc = 0;

	/* repeats outermost, as for throughput: noise hits every size alike */
	for (unsigned int rep = 0; rep < o->repeats && !rc; rep++) {
		printf("recovery, repeat %u/%u\n", rep + 1, o->repeats);
		for (unsigned int s = 0; s < o->nrec_sizes && !rc; s++)
			for (unsigned int ci = 0; ci < o->ncfg && !rc; ci++)
				if (bc_in_recovery(&o->cfg[ci]))
					rc = bc_recovery_one(o, s, ci, rep, members);
	}
	return rc;
}

int cmd_bench(int argc, char **argv)
{
	static struct bc_opts o;
	struct bc_args a = { .journal = true };
	char *members[BC_MEMBERS];
	int rc;

	bc_defaults(&o);
	rc = bc_parse_args(&o, &a, argc, argv);
	if (rc == BC_GO)
		rc = bc_check_env(&o, &a);
	if (rc != BC_GO)
		return rc;
	bc_add_configs(&o, &a);
	rc = bc_prepare(&o, &a, members);
	if (rc != BC_GO)
		return rc;
	rc = 0;
	if (o.throughput)
		rc = bc_throughput(&o, members);
	if (!rc && o.recovery)
		rc = bc_recovery(&o, members);
	for (int i = 0; i < BC_MEMBERS && !o.given; i++)
		unlink(members[i]);
	if (rc)
		return 1;
	bc_report(&o);
	if (o.svg[0])
		bc_svg(&o);
	return 0;
}
