// SPDX-License-Identifier: MIT
/*
 * tools/bench/workload.c - the file workloads of `jgrfs bench` (tools/bench/workload.h).
 *
 * Set-up that is not what a workload measures (prefilling the file that random
 * writes land in) happens before its clock starts. Buffers are filled with a
 * seeded pattern, never zeros, so that no layer can take a short cut on them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jgrfs/base.h"
#include "workload.h"

static const struct {
	const char *name, *unit;
} wl_kinds[WL_NKINDS] = {
	[WL_SEQWRITE] = { "seqwrite", "MB/s" },
	[WL_RANDFSYNC] = { "randfsync", "ops/s" },
	[WL_RANDBUF] = { "randbuf", "ops/s" },
	[WL_CREATES] = { "creates", "files/s" },
	[WL_MIXED] = { "mixed", "MB/s" },
};

const char *wl_name(enum wl_kind k)
{
	return wl_kinds[k].name;
}

const char *wl_unit(enum wl_kind k)
{
	return wl_kinds[k].unit;
}

int wl_parse(const char *name)
{
	for (int k = 0; k < WL_NKINDS; k++)
		if (!strcmp(name, wl_kinds[k].name))
			return k;
	return -1;
}

static uint64_t wl_rand(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void wl_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = wl_rand(&seed);

		memcpy(buf + i, &v, 8);
	}
}

/* Write @size bytes to a new file @path in 1 MiB pieces (set-up, not timed). */
static int wl_prefill(const struct wl_ops *ops, const char *path, uint64_t size, uint8_t *buf,
		      uint64_t *h)
{
	int rc = ops->create(ops->ctx, path, h);

	for (uint64_t off = 0; !rc && off < size; off += 1u << 20) {
		size_t len = size - off < (1u << 20) ? (size_t)(size - off) : 1u << 20;

		if (ops->pwrite(ops->ctx, *h, buf, len, off) != (ssize_t)len)
			rc = -EIO;
	}
	if (!rc)
		rc = ops->fsync(ops->ctx, *h);
	return rc;
}

static int wl_seqwrite(const struct wl_ops *ops, const char *dir, const struct wl_params *p,
		       uint8_t *buf, struct wl_result *res)
{
	char path[512];
	uint64_t h;
	double t0;
	int rc;

	snprintf(path, sizeof(path), "%s/seq", dir);
	t0 = jg_now_seconds();
	rc = ops->create(ops->ctx, path, &h);
	if (rc)
		return rc;
	for (uint64_t off = 0; off < p->seq_bytes; off += 1u << 20) {
		if (ops->pwrite(ops->ctx, h, buf, 1u << 20, off) != 1 << 20) {
			rc = -EIO;
			break;
		}
		res->bytes += 1u << 20;
		res->ops++;
	}
	if (!rc)
		rc = ops->fsync(ops->ctx, h);
	res->seconds = jg_now_seconds() - t0;
	ops->close(ops->ctx, h);
	res->value = (double)res->bytes / 1e6 / res->seconds;
	return rc;
}

static int wl_random(const struct wl_ops *ops, const char *dir, const struct wl_params *p,
		     uint8_t *buf, bool each_fsync, struct wl_result *res)
{
	uint64_t size = each_fsync ? 64ull << 20 : 256ull << 20, seed = p->seed, h;
	char path[512];
	double t0;
	int rc;

	snprintf(path, sizeof(path), "%s/rand", dir);
	rc = wl_prefill(ops, path, size, buf, &h);
	if (rc)
		return rc;
	t0 = jg_now_seconds();
	do {
		for (int i = 0; i < 64 && !rc; i++) {
			uint64_t off = (wl_rand(&seed) % (size / 4096)) * 4096;

			if (ops->pwrite(ops->ctx, h, buf + (res->ops % 256) * 4096, 4096, off) != 4096)
				rc = -EIO;
			else if (each_fsync)
				rc = ops->fsync(ops->ctx, h);
			res->ops++;
		}
	} while (!rc && jg_now_seconds() - t0 < p->seconds);
	if (!rc && !each_fsync)
		rc = ops->fsync(ops->ctx, h);
	res->seconds = jg_now_seconds() - t0;
	res->bytes = res->ops * 4096;
	ops->close(ops->ctx, h);
	res->value = (double)res->ops / res->seconds;
	return rc;
}

static int wl_creates(const struct wl_ops *ops, const char *dir, const struct wl_params *p,
		      uint8_t *buf, struct wl_result *res)
{
	char path[512];
	double t0 = jg_now_seconds();
	int rc = 0;

	for (unsigned int d = 0; d < 100 && !rc; d++) {
		snprintf(path, sizeof(path), "%s/d%u", dir, d);
		rc = ops->mkdir(ops->ctx, path);
	}
	for (unsigned int i = 0; i < p->files && !rc; i++) {
		uint64_t h;

		snprintf(path, sizeof(path), "%s/d%u/f%u", dir, i % 100, i);
		rc = ops->create(ops->ctx, path, &h);
		if (rc)
			break;
		if (ops->pwrite(ops->ctx, h, buf + (i % 256) * 4096, 4096, 0) != 4096)
			rc = -EIO;
		ops->close(ops->ctx, h);
		res->ops++;
	}
	if (!rc)
		rc = ops->sync(ops->ctx);
	res->seconds = jg_now_seconds() - t0;
	res->bytes = res->ops * 4096;
	res->value = (double)res->ops / res->seconds;
	return rc;
}

static int wl_mixed(const struct wl_ops *ops, const char *dir, const struct wl_params *p,
		    uint8_t *buf, uint8_t *rbuf, struct wl_result *res)
{
	enum { NFILES = 64, FILE_BYTES = 4 << 20 };
	static const uint32_t sizes[] = { 4096, 4096, 16384, 65536, 65536, 262144, 1048576 };
	uint64_t h[NFILES], seed = p->seed, writes = 0;
	char path[512];
	double t0;
	int rc = 0, n = 0;

	for (; n < NFILES && !rc; n++) {
		snprintf(path, sizeof(path), "%s/m%d", dir, n);
		rc = wl_prefill(ops, path, FILE_BYTES, buf, &h[n]);
		if (rc)
			ops->close(ops->ctx, h[n]);
	}
	if (rc) {
		n--;
		goto out;
	}
	t0 = jg_now_seconds();
	do {
		for (int i = 0; i < 16 && !rc; i++) {
			uint64_t r = wl_rand(&seed);
			uint32_t len = sizes[r % (sizeof(sizes) / sizeof(sizes[0]))];
			uint64_t f = (r >> 8) % NFILES;
			uint64_t off = ((r >> 16) % (FILE_BYTES / len)) * len;

			if ((r >> 40) % 10 < 7) {
				if (ops->pread(ops->ctx, h[f], rbuf, len, off) != (ssize_t)len)
					rc = -EIO;
			} else {
				if (ops->pwrite(ops->ctx, h[f], buf, len, off) != (ssize_t)len)
					rc = -EIO;
				else if (++writes % 64 == 0)
					rc = ops->fsync(ops->ctx, h[f]);
			}
			res->bytes += len;
			res->ops++;
		}
	} while (!rc && jg_now_seconds() - t0 < p->seconds);
	if (!rc)
		rc = ops->sync(ops->ctx);
	res->seconds = jg_now_seconds() - t0;
	res->value = (double)res->bytes / 1e6 / res->seconds;
out:
	while (n-- > 0)
		ops->close(ops->ctx, h[n]);
	return rc;
}

int wl_run(enum wl_kind k, const struct wl_ops *ops, const char *dir, const struct wl_params *p,
	   struct wl_result *res)
{
	uint8_t *buf = malloc(1u << 20), *rbuf = malloc(1u << 20);
	int rc;

	memset(res, 0, sizeof(*res));
	if (!buf || !rbuf) {
		rc = -ENOMEM;
		goto out;
	}
	wl_fill(buf, 1u << 20, p->seed);
	rc = ops->mkdir(ops->ctx, dir);
	if (rc)
		goto out;
	switch (k) {
	case WL_SEQWRITE: rc = wl_seqwrite(ops, dir, p, buf, res); break;
	case WL_RANDFSYNC: rc = wl_random(ops, dir, p, buf, true, res); break;
	case WL_RANDBUF: rc = wl_random(ops, dir, p, buf, false, res); break;
	case WL_CREATES: rc = wl_creates(ops, dir, p, buf, res); break;
	case WL_MIXED: rc = wl_mixed(ops, dir, p, buf, rbuf, res); break;
	default: rc = -EINVAL;
	}
out:
	free(buf);
	free(rbuf);
	return rc;
}

/* ---------------------------------------------------------------- POSIX */

static const char *wl_posix_path(void *ctx, const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", (const char *)ctx, path);
	return out;
}

static int wl_posix_mkdir(void *ctx, const char *path)
{
	char p[1024];

	return mkdir(wl_posix_path(ctx, path, p, sizeof(p)), 0755) && errno != EEXIST ? -errno : 0;
}

static int wl_posix_openf(void *ctx, const char *path, int flags, uint64_t *h)
{
	char p[1024];
	int fd = open(wl_posix_path(ctx, path, p, sizeof(p)), flags, 0644);

	if (fd < 0)
		return -errno;
	*h = (uint64_t)fd;
	return 0;
}

static int wl_posix_create(void *ctx, const char *path, uint64_t *h)
{
	return wl_posix_openf(ctx, path, O_RDWR | O_CREAT | O_TRUNC, h);
}

static int wl_posix_open(void *ctx, const char *path, uint64_t *h)
{
	return wl_posix_openf(ctx, path, O_RDWR, h);
}

static ssize_t wl_posix_pwrite(void *ctx, uint64_t h, const void *buf, size_t len, uint64_t off)
{
	(void)ctx;
	return pwrite((int)h, buf, len, (off_t)off);
}

static ssize_t wl_posix_pread(void *ctx, uint64_t h, void *buf, size_t len, uint64_t off)
{
	(void)ctx;
	return pread((int)h, buf, len, (off_t)off);
}

static int wl_posix_fsync(void *ctx, uint64_t h)
{
	(void)ctx;
	return fsync((int)h) ? -errno : 0;
}

static int wl_posix_close(void *ctx, uint64_t h)
{
	(void)ctx;
	return close((int)h) ? -errno : 0;
}

/*
 * Everything durable: syncfs pushes the kernel's cached pages to the daemon, and
 * an fsync of the root directory makes the daemon commit. (FUSE passes syncfs on
 * only from Linux 5.15 and libfuse 3.15; fsync of a directory works everywhere,
 * and in a journalling filesystem it commits every earlier change.)
 */
static int wl_posix_sync(void *ctx)
{
	int fd = open((const char *)ctx, O_RDONLY | O_DIRECTORY), rc = 0;

	if (fd < 0)
		return -errno;
	if (syncfs(fd) || fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

void wl_posix_ops(struct wl_ops *ops, const char *root)
{
	ops->ctx = (void *)root;
	ops->mkdir = wl_posix_mkdir;
	ops->create = wl_posix_create;
	ops->open = wl_posix_open;
	ops->pwrite = wl_posix_pwrite;
	ops->pread = wl_posix_pread;
	ops->fsync = wl_posix_fsync;
	ops->close = wl_posix_close;
	ops->sync = wl_posix_sync;
}
