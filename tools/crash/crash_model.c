// SPDX-License-Identifier: MIT
/*
 * tools/crash/crash_model.c - the crash harness's seeded workload and the model that
 * says what may be found after a crash at any point of it (tools/crash/crash.h states
 * the rules (M1)-(M3)).
 *
 * Sector format (512 bytes, everything the workload writes):
 *   0x00 le32 magic 0x5443474a ("JGCT")   0x04 le32 file id
 *   0x08 le32 write sequence number        0x0c le32 sector index in the file
 *   0x10 496 bytes of fill, a splitmix64 stream of (id, seq, index)
 * A zero sector is a hole or truncated space; anything else is garbage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "crash.h"

#define CT_MAGIC 0x5443474au
#define CT_MAX_SECTORS 12288u	/* 6 MiB per file */
#define CT_BLOCK 4096u		/* the filesystem's block */
#define CT_BULK_FILES 3u	/* a bulk write: 18 MiB, more than a transaction's data
				 * (jnl_cfg.max_txn_data_blocks, 16 MiB): early writeback */

enum ct_ev_type { CT_EV_WRITE, CT_EV_TRUNC, CT_EV_XATTR };

struct ct_event {
	uint8_t type;
	uint32_t seq;		/* CT_EV_WRITE, CT_EV_XATTR (the value set) */
	uint32_t s0, n;		/* CT_EV_WRITE: sectors [s0, s0+n) */
	uint64_t size_after;	/* the file's size after this event */
	uint64_t size_before;	/* CT_EV_WRITE: the size before it (failed: any size
				 * between is possible; else the block-aligned ones) */
	bool failed;
};

struct ct_file {
	uint32_t id;
	bool live;		/* in the model's current namespace */
	bool large;
	char path[64];
	char link[64];		/* a second name (hard link), "" when none */
	unsigned int last_op;	/* the last operation that changed it (its inode) */
	uint64_t size;		/* model size now, bytes, multiple of CT_SECTOR */
	uint32_t *cur;		/* value per sector now (0: zero) */
	bool fsynced;		/* an fsync of it was acknowledged */
	uint64_t dur_size;	/* at that fsync */
	uint32_t *dur;		/* values per sector at that fsync */
	uint32_t xattr;		/* user.ct now: the seq of its value, 0 when never set */
	uint32_t dur_xattr;	/* at that fsync */
	struct ct_event *ev;	/* since that fsync, or since creation */
	unsigned int nev, evcap;
};

struct ct_ns {			/* a namespace snapshot: path -> file id */
	unsigned int op;	/* the state after this operation (1-based; 0: the start) */
	unsigned int n;
	struct { char path[64]; uint32_t id; } *e;
};

struct ct_model {
	uint64_t rng;
	unsigned int nops;
	struct ct_file *files;	/* files[id - 1] */
	unsigned int nfiles, fcap;
	struct ct_ns *snaps;	/* snaps[0]: the newest state known durable; then one per
				 * namespace operation issued since */
	unsigned int nsnaps, scap;
	unsigned int issued, fsyncs;
	uint32_t next_seq;
	unsigned int rename_ctr;
	const struct ct_ops *ops;
	const bool *cut;	/* set by the crashing thread before the power goes */
	bool fsync_phase;
	bool bulk_done;
};

/* ------------------------------------------------------------ randomness */

static uint64_t ct_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t ct_rand(struct ct_model *m, uint32_t bound)
{
	return bound ? (uint32_t)(ct_splitmix(&m->rng) % bound) : 0;
}

static void ct_sector_fill(uint8_t *p, uint32_t id, uint32_t seq, uint32_t idx)
{
	uint64_t x = ((uint64_t)id << 40) ^ ((uint64_t)seq << 12) ^ idx;
	uint32_t hdr[4] = { CT_MAGIC, id, seq, idx };

	memcpy(p, hdr, sizeof(hdr));
	for (unsigned int off = 16; off < CT_SECTOR; off += 8) {
		uint64_t v = ct_splitmix(&x);

		memcpy(p + off, &v, 8);
	}
}

/* The value a sector holds: 0 (zero), a write seq, or UINT32_MAX (garbage). */
static uint32_t ct_sector_value(const uint8_t *p, uint32_t id, uint32_t idx)
{
	uint8_t want[CT_SECTOR];
	uint32_t hdr[4];
	unsigned int i;

	for (i = 0; i < CT_SECTOR && !p[i]; i++)
		;
	if (i == CT_SECTOR)
		return 0;
	memcpy(hdr, p, sizeof(hdr));
	if (hdr[0] != CT_MAGIC || hdr[1] != id || hdr[3] != idx || hdr[2] == 0)
		return UINT32_MAX;
	ct_sector_fill(want, id, hdr[2], idx);
	return memcmp(want, p, CT_SECTOR) ? UINT32_MAX : hdr[2];
}

/* ------------------------------------------------------------ the model */

int ct_model_new(uint64_t seed, unsigned int nops, struct ct_model **out)
{
	struct ct_model *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->rng = seed ^ 0x6a67726673ull;
	m->nops = nops;
	m->next_seq = 1;
	m->snaps = calloc(1, sizeof(*m->snaps));
	if (!m->snaps) {
		free(m);
		return -ENOMEM;
	}
	m->nsnaps = m->scap = 1;
	*out = m;
	return 0;
}

static void ct_ns_free(struct ct_ns *ns)
{
	free(ns->e);
	ns->e = NULL;
	ns->n = 0;
}

void ct_model_free(struct ct_model *m)
{
	if (!m)
		return;
	for (unsigned int i = 0; i < m->nfiles; i++) {
		free(m->files[i].cur);
		free(m->files[i].dur);
		free(m->files[i].ev);
	}
	for (unsigned int i = 0; i < m->nsnaps; i++)
		ct_ns_free(&m->snaps[i]);
	free(m->snaps);
	free(m->files);
	free(m);
}

unsigned int ct_model_issued(const struct ct_model *m)
{
	return m->issued;
}

unsigned int ct_model_fsyncs(const struct ct_model *m)
{
	return m->fsyncs;
}

/* The current namespace, built from the live files. */
static int ct_ns_current(const struct ct_model *m, struct ct_ns *ns)
{
	ns->n = 0;
	ns->e = calloc(m->nfiles ? 2 * m->nfiles : 1, sizeof(*ns->e));
	if (!ns->e)
		return -ENOMEM;
	for (unsigned int i = 0; i < m->nfiles; i++) {
		if (!m->files[i].live)
			continue;
		snprintf(ns->e[ns->n].path, sizeof(ns->e[0].path), "%s", m->files[i].path);
		ns->e[ns->n].id = m->files[i].id;
		ns->n++;
		if (!m->files[i].link[0])
			continue;
		snprintf(ns->e[ns->n].path, sizeof(ns->e[0].path), "%s", m->files[i].link);
		ns->e[ns->n].id = m->files[i].id;
		ns->n++;
	}
	return 0;
}

/* After a namespace operation is issued: its outcome is one more possible state. */
static int ct_ns_push(struct ct_model *m)
{
	int rc;

	if (m->nsnaps == m->scap) {
		struct ct_ns *n = realloc(m->snaps, 2 * m->scap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->snaps = n;
		m->scap *= 2;
	}
	rc = ct_ns_current(m, &m->snaps[m->nsnaps]);
	if (!rc)
		m->snaps[m->nsnaps++].op = m->issued;
	return rc;
}

/*
 * An fsync of a file was acknowledged: the transaction holding the file's last
 * change is committed, and with it every operation before that change (the
 * journal commits transactions in order). Operations after it -- on other
 * files -- need not be durable, as in ext3: fsync is not sync. (M1)
 */
static void ct_ns_durable(struct ct_model *m, unsigned int op)
{
	unsigned int k = 0;

	while (k + 1 < m->nsnaps && m->snaps[k + 1].op <= op)
		k++;
	for (unsigned int i = 0; i < k; i++)
		ct_ns_free(&m->snaps[i]);
	memmove(m->snaps, m->snaps + k, (m->nsnaps - k) * sizeof(*m->snaps));
	m->nsnaps -= k;
}

static int ct_event_add(struct ct_file *f, const struct ct_event *e)
{
	if (f->nev == f->evcap) {
		unsigned int cap = f->evcap ? 2 * f->evcap : 16;
		struct ct_event *n = realloc(f->ev, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		f->ev = n;
		f->evcap = cap;
	}
	f->ev[f->nev++] = *e;
	return 0;
}

/* ------------------------------------------------------------ the workload */

static int ct_do_write(struct ct_model *m, struct ct_file *f, uint32_t s0, uint32_t n,
		       bool create)
{
	struct ct_event e = { .type = CT_EV_WRITE, .s0 = s0, .n = n };
	uint64_t size_before = f->size;
	uint8_t *buf;
	int rc = 0;

	if (s0 + n > CT_MAX_SECTORS)
		n = CT_MAX_SECTORS - s0;
	if (n == 0)
		return 0;
	e.n = n;
	e.seq = m->next_seq++;
	buf = malloc((size_t)n * CT_SECTOR);
	if (!buf)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		ct_sector_fill(buf + (size_t)i * CT_SECTOR, f->id, e.seq, s0 + i);
	/* the model first: an issued write may have landed even if the call fails */
	for (uint32_t i = 0; i < n; i++)
		f->cur[s0 + i] = e.seq;
	if ((uint64_t)(s0 + n) * CT_SECTOR > f->size)
		f->size = (uint64_t)(s0 + n) * CT_SECTOR;
	e.size_after = f->size;
	e.size_before = size_before;
	f->last_op = m->issued;
	rc = ct_event_add(f, &e);
	if (!rc)
		rc = m->ops->pwrite(m->ops->ctx, f->path, buf, (size_t)n * CT_SECTOR,
				    (uint64_t)s0 * CT_SECTOR, create);
	if (rc && rc != -ENOMEM) {
		/* part of it may have landed (ENOSPC part-way, a dying daemon): the
		 * model cannot say which blocks, so the size may be any between */
		f->ev[f->nev - 1].failed = true;
	}
	free(buf);
	return rc;
}

static int ct_do_fsync(struct ct_model *m, struct ct_file *f)
{
	int rc = m->ops->fsync(m->ops->ctx, f->path);

	if (rc)
		return rc;
	/* an acknowledgement after the cut is a dying daemon's: it proves nothing */
	if (m->cut && __atomic_load_n(m->cut, __ATOMIC_ACQUIRE))
		return 0;
	/* acknowledged: (M2) from here on, (M1) for everything before */
	f->fsynced = true;
	f->dur_size = f->size;
	f->dur_xattr = f->xattr;
	memcpy(f->dur, f->cur, CT_MAX_SECTORS * sizeof(*f->cur));
	f->nev = 0;
	m->fsyncs++;
	ct_ns_durable(m, f->last_op);
	return 0;
}

static struct ct_file *ct_pick_live(struct ct_model *m, bool nonempty, const struct ct_file *not)
{
	unsigned int live = 0, k;

	for (unsigned int i = 0; i < m->nfiles; i++)
		live += m->files[i].live && (!nonempty || m->files[i].size) && &m->files[i] != not;
	if (!live)
		return NULL;
	k = ct_rand(m, live);
	for (unsigned int i = 0; i < m->nfiles; i++) {
		if (!(m->files[i].live && (!nonempty || m->files[i].size) && &m->files[i] != not))
			continue;
		if (k-- == 0)
			return &m->files[i];
	}
	return NULL;
}

/* A new file in directory @dir (a random one when >= CT_NDIRS) of @sectors (0: random). */
static int ct_do_create(struct ct_model *m, unsigned int dir, uint32_t sectors,
			struct ct_file **out)
{
	unsigned int large = 0;
	struct ct_file *f;
	int rc;

	if (m->nfiles == m->fcap) {
		unsigned int cap = m->fcap ? 2 * m->fcap : 64;
		struct ct_file *n = realloc(m->files, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->files = n;
		m->fcap = cap;
	}
	for (unsigned int i = 0; i < m->nfiles; i++)
		large += m->files[i].live && m->files[i].large;
	f = &m->files[m->nfiles];
	memset(f, 0, sizeof(*f));
	f->cur = calloc(CT_MAX_SECTORS, sizeof(*f->cur));
	f->dur = calloc(CT_MAX_SECTORS, sizeof(*f->dur));
	if (!f->cur || !f->dur) {
		free(f->cur);
		free(f->dur);
		return -ENOMEM;
	}
	m->nfiles++;
	f->id = m->nfiles;
	f->live = true;
	f->large = sectors ? sectors >= 256 : large < 3 && ct_rand(m, 10) == 0;
	if (dir >= CT_NDIRS)
		dir = ct_rand(m, CT_NDIRS);
	snprintf(f->path, sizeof(f->path), "d%u/f%u", dir, f->id);
	rc = ct_ns_push(m);
	if (rc)
		return rc;
	*out = f;
	if (!sectors)
		sectors = f->large ? 256 + ct_rand(m, 768) : 1 + ct_rand(m, 16);
	return ct_do_write(m, f, 0, sectors, true);
}

int ct_workload_setup_ops(const struct ct_ops *ops)
{
	char path[16];
	int rc;

	for (unsigned int d = 0; d < CT_NDIRS; d++) {
		snprintf(path, sizeof(path), "d%u", d);
		rc = ops->mkdir(ops->ctx, path);
		if (rc && rc != -EEXIST)
			return rc;
	}
	return ops->fsync(ops->ctx, "");
}

int ct_workload_setup(const char *mnt)
{
	struct ct_ops ops;

	ct_posix_ops(&ops, mnt);
	return ct_workload_setup_ops(&ops);
}

/*
 * @f's name @path goes away (unlink, or replaced by a rename): the file lives on
 * under its other name if it has one. Either way its inode changed (nlink).
 */
static void ct_name_gone(struct ct_model *m, struct ct_file *f, const char *path)
{
	f->last_op = m->issued;
	if (!strcmp(f->link, path)) {
		f->link[0] = '\0';
	} else if (f->link[0]) {
		memcpy(f->path, f->link, sizeof(f->path));
		f->link[0] = '\0';
	} else {
		f->live = false;
	}
}

/* One operation; returns 0 or the failed call's -errno. */
static int ct_op(struct ct_model *m)
{
	const struct ct_ops *ops = m->ops;
	struct ct_file *f = NULL, *g;
	uint32_t r = ct_rand(m, 100), nsect;
	bool wrote = false;
	char a[64];
	int rc = 0;

	if (m->issued % 25 == 0)
		m->fsync_phase = !m->fsync_phase;
	f = ct_pick_live(m, false, NULL);
	if (!f || r < 12) {
		rc = ct_do_create(m, CT_NDIRS, 0, &f);
		wrote = true;
	} else if (r < 36) {
		nsect = (uint32_t)(f->size / CT_SECTOR);
		rc = ct_do_write(m, f, nsect, f->large ? 64 + ct_rand(m, 512) : 1 + ct_rand(m, 8),
				 false);
		wrote = true;
	} else if (r < 56 && f->size) {
		nsect = (uint32_t)(f->size / CT_SECTOR);
		rc = ct_do_write(m, f, ct_rand(m, nsect),
				 f->large ? 1 + ct_rand(m, 256) : 1 + ct_rand(m, 8), false);
		wrote = true;
	} else if (r < 62) {
		memcpy(a, f->path, sizeof(a));
		snprintf(f->path, sizeof(f->path), "d%u/r%u", ct_rand(m, CT_NDIRS), ++m->rename_ctr);
		f->last_op = m->issued;
		rc = ct_ns_push(m);
		if (!rc)
			rc = ops->rename(ops->ctx, a, f->path);
	} else if (r < 67 && (g = ct_pick_live(m, false, f))) {
		/* over an existing file: its name now names @f; its inode loses a link */
		memcpy(a, f->path, sizeof(a));
		memcpy(f->path, g->path, sizeof(f->path));
		ct_name_gone(m, g, g->path);
		f->last_op = m->issued;
		rc = ct_ns_push(m);
		if (!rc)
			rc = ops->rename(ops->ctx, a, f->path);
	} else if (r < 72) {
		memcpy(a, f->path, sizeof(a));
		ct_name_gone(m, f, a);
		rc = ct_ns_push(m);
		if (!rc)
			rc = ops->unlink(ops->ctx, a);
	} else if (r < 78) {
		struct ct_event e = { .type = CT_EV_TRUNC };
		uint32_t keep = ct_rand(m, (uint32_t)(f->size / CT_SECTOR) + 1);

		for (uint32_t s = keep; s < CT_MAX_SECTORS; s++)
			f->cur[s] = 0;
		f->size = (uint64_t)keep * CT_SECTOR;
		f->last_op = m->issued;
		e.size_after = f->size;
		rc = ct_event_add(f, &e);
		if (!rc)
			rc = ops->truncate(ops->ctx, f->path, f->size);
		wrote = true;
	} else if (r < 82 && !f->link[0]) {
		snprintf(f->link, sizeof(f->link), "d%u/l%u", ct_rand(m, CT_NDIRS), ++m->rename_ctr);
		f->last_op = m->issued;
		rc = ct_ns_push(m);
		if (!rc)
			rc = ops->link(ops->ctx, f->path, f->link);
	} else if (r < 87) {
		struct ct_event e = { .type = CT_EV_XATTR, .seq = m->next_seq++ };
		char val[32];

		f->xattr = e.seq;
		f->last_op = m->issued;
		e.size_after = f->size;
		snprintf(val, sizeof(val), "ct%u.%u", f->id, e.seq);
		rc = ct_event_add(f, &e);
		if (!rc)
			rc = ops->setxattr(ops->ctx, f->path, "user.ct", val, strlen(val));
		wrote = true;
	} else if (r < 88 && !m->fsync_phase && !m->bulk_done) {
		/* once: whole large files, no fsync until the phase ends, more data
		 * than a transaction holds */
		m->bulk_done = true;
		for (unsigned int i = 0; i < CT_BULK_FILES && !rc; i++)
			rc = ct_do_create(m, CT_NDIRS, CT_MAX_SECTORS, &f);
		wrote = true;
	} else if (r < 89) {
		/* a burst of small files in d0: a directory of many blocks */
		unsigned int k = 8 + ct_rand(m, 24);

		for (unsigned int i = 0; i < k && !rc; i++)
			rc = ct_do_create(m, 0, 1, &f);
		wrote = true;
	} else {
		rc = ct_do_fsync(m, f);
	}
	if (!rc && wrote && f && f->live && m->fsync_phase)
		rc = ct_do_fsync(m, f);
	return rc;
}

unsigned int ct_workload_run_ops(struct ct_model *m, const struct ct_ops *ops,
				 unsigned int *progress, const bool *cut)
{
	unsigned int done = 0;

	m->ops = ops;
	m->cut = cut;
	while (m->issued < m->nops) {
		__atomic_store_n(progress, m->issued + 1, __ATOMIC_RELEASE);
		m->issued++;
		if (ct_op(m))
			break;
		done++;
	}
	return done;
}

unsigned int ct_workload_run(struct ct_model *m, const char *mnt, unsigned int *progress,
			     const bool *cut)
{
	struct ct_ops ops;

	ct_posix_ops(&ops, mnt);
	return ct_workload_run_ops(m, &ops, progress, cut);
}

/* ------------------------------------------------------------ the volume */

/* Takes @data (freed on failure). */
int ct_tree_add(struct ct_tree *t, const char *path, uint8_t *data, uint64_t size)
{
	if (strlen(path) >= sizeof(t->files[0].path)) {
		free(data);
		return -ENAMETOOLONG;	/* never ours: the check would see a wrong name */
	}
	if (t->n == t->cap) {
		unsigned int cap = t->cap ? 2 * t->cap : 64;
		struct ct_found *n = realloc(t->files, cap * sizeof(*n));

		if (!n) {
			free(data);
			return -ENOMEM;
		}
		t->files = n;
		t->cap = cap;
	}
	memset(&t->files[t->n], 0, sizeof(t->files[0]));
	memcpy(t->files[t->n].path, path, strlen(path) + 1);
	t->files[t->n].data = data;
	t->files[t->n].size = size;
	t->n++;
	return 0;
}

void ct_tree_free(struct ct_tree *t)
{
	for (unsigned int i = 0; i < t->n; i++)
		free(t->files[i].data);
	free(t->files);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------ POSIX operations */

static void ct_px_path(void *ctx, const char *rel, char *out, size_t n)
{
	snprintf(out, n, "%s%s%s", (const char *)ctx, rel[0] ? "/" : "", rel);
}

static int ct_px_mkdir(void *ctx, const char *path)
{
	char p[512];

	ct_px_path(ctx, path, p, sizeof(p));
	return mkdir(p, 0755) ? -errno : 0;
}

static int ct_px_pwrite(void *ctx, const char *path, const void *buf, size_t len, uint64_t off,
			bool create)
{
	char p[512];
	ssize_t w;
	int fd, rc = 0;

	ct_px_path(ctx, path, p, sizeof(p));
	fd = open(p, O_WRONLY | (create ? O_CREAT | O_EXCL : 0), 0644);
	if (fd < 0)
		return -errno;
	w = pwrite(fd, buf, len, (off_t)off);
	if (w != (ssize_t)len)
		rc = w < 0 ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

static int ct_px_truncate(void *ctx, const char *path, uint64_t size)
{
	char p[512];

	ct_px_path(ctx, path, p, sizeof(p));
	return truncate(p, (off_t)size) ? -errno : 0;
}

static int ct_px_fsync(void *ctx, const char *path)
{
	char p[512];
	int fd, rc = 0;

	ct_px_path(ctx, path, p, sizeof(p));
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

static int ct_px_rename(void *ctx, const char *from, const char *to)
{
	char a[512], b[512];

	ct_px_path(ctx, from, a, sizeof(a));
	ct_px_path(ctx, to, b, sizeof(b));
	return rename(a, b) ? -errno : 0;
}

static int ct_px_unlink(void *ctx, const char *path)
{
	char p[512];

	ct_px_path(ctx, path, p, sizeof(p));
	return unlink(p) ? -errno : 0;
}

static int ct_px_link(void *ctx, const char *from, const char *to)
{
	char a[512], b[512];

	ct_px_path(ctx, from, a, sizeof(a));
	ct_px_path(ctx, to, b, sizeof(b));
	return link(a, b) ? -errno : 0;
}

static int ct_px_setxattr(void *ctx, const char *path, const char *name, const void *val,
			  size_t len)
{
	char p[512];

	ct_px_path(ctx, path, p, sizeof(p));
	return setxattr(p, name, val, len, 0) ? -errno : 0;
}

static ssize_t ct_px_getxattr(void *ctx, const char *path, const char *name, void *val,
			      size_t len)
{
	char p[512];
	ssize_t r;

	ct_px_path(ctx, path, p, sizeof(p));
	r = getxattr(p, name, val, len);
	return r < 0 ? -errno : r;
}

static int ct_px_readdir(void *ctx, const char *dir,
			 int (*fn)(void *arg, const char *name, bool isdir), void *arg)
{
	char p[512], q[1024];
	struct dirent *de;
	struct stat st;
	int rc = 0;
	DIR *d;

	ct_px_path(ctx, dir, p, sizeof(p));
	d = opendir(p);
	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(q, sizeof(q), "%s/%s", p, de->d_name);
		rc = lstat(q, &st) ? -errno : fn(arg, de->d_name, S_ISDIR(st.st_mode));
	}
	closedir(d);
	return rc;
}

static int ct_px_read_file(void *ctx, const char *path, uint8_t **data, uint64_t *size)
{
	struct stat st;
	uint8_t *buf;
	uint64_t got = 0;
	char p[512];
	int fd;

	ct_px_path(ctx, path, p, sizeof(p));
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (uint64_t)st.st_size) {
		ssize_t r = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

		if (r <= 0) {
			int rc = r < 0 ? -errno : -EIO;

			free(buf);
			close(fd);
			return rc;
		}
		got += (uint64_t)r;
	}
	close(fd);
	*data = buf;
	*size = got;
	return 0;
}

void ct_posix_ops(struct ct_ops *ops, const char *root)
{
	*ops = (struct ct_ops){
		.ctx = (void *)root,
		.mkdir = ct_px_mkdir,
		.pwrite = ct_px_pwrite,
		.truncate = ct_px_truncate,
		.fsync = ct_px_fsync,
		.rename = ct_px_rename,
		.unlink = ct_px_unlink,
		.link = ct_px_link,
		.setxattr = ct_px_setxattr,
		.getxattr = ct_px_getxattr,
		.readdir = ct_px_readdir,
		.read_file = ct_px_read_file,
	};
}

/* ------------------------------------------------------------ reading back */

struct ct_walk {
	const struct ct_ops *ops;
	struct ct_tree *t;
	const char *dir;	/* NULL at the top */
};

static int ct_walk_file(void *arg, const char *name, bool isdir)
{
	struct ct_walk *w = arg;
	char rel[128];
	uint8_t *data = NULL;
	uint64_t size = 0;
	ssize_t x;
	int rc;

	if (!w->dir) {
		struct ct_walk sub = { w->ops, w->t, name };

		/* not one of our directories: record it so the namespace check fails */
		if (!isdir)
			return ct_tree_add(w->t, name, NULL, 0);
		return w->ops->readdir(w->ops->ctx, name, ct_walk_file, &sub);
	}
	snprintf(rel, sizeof(rel), "%.40s/%.80s", w->dir, name);
	rc = w->ops->read_file(w->ops->ctx, rel, &data, &size);
	if (!rc)
		rc = ct_tree_add(w->t, rel, data, size);
	if (rc)
		return rc;
	x = w->ops->getxattr(w->ops->ctx, rel, "user.ct", w->t->files[w->t->n - 1].xattr,
			     sizeof(w->t->files[0].xattr) - 1);
	if (x == -ENODATA)
		return 0;
	if (x < 0)
		return (int)x;
	w->t->files[w->t->n - 1].xattr[x] = '\0';
	return 0;
}

int ct_tree_read_ops(const struct ct_ops *ops, struct ct_tree *t)
{
	struct ct_walk w = { ops, t, NULL };

	return ops->readdir(ops->ctx, "", ct_walk_file, &w);
}

int ct_tree_read_dir(const char *root, struct ct_tree *t)
{
	struct ct_ops ops;

	ct_posix_ops(&ops, root);
	return ct_tree_read_ops(&ops, t);
}

/* ------------------------------------------------------------ the check */

static bool ct_size_allowed(const struct ct_file *f, uint64_t size)
{
	if (f->fsynced ? size == f->dur_size : size == 0)
		return true;
	for (unsigned int i = 0; i < f->nev; i++) {
		const struct ct_event *e = &f->ev[i];

		if (e->size_after == size ||
		    (e->failed && size >= e->size_before && size <= e->size_after))
			return true;
		/* (M2) an extending write passes through the block-aligned sizes
		 * between, one handle a chunk (src/fs/file.c fs_write_chunk): a
		 * commit between two of its chunks makes such a size durable */
		if (e->type == CT_EV_WRITE && size > e->size_before && size < e->size_after &&
		    size % CT_BLOCK == 0)
			return true;
	}
	return false;
}

static bool ct_value_allowed(const struct ct_file *f, uint32_t s, uint32_t v)
{
	uint32_t base = 0;

	if (f->fsynced && (uint64_t)s * CT_SECTOR < f->dur_size)
		base = f->dur[s];
	if (v == base)
		return true;
	for (unsigned int i = 0; i < f->nev; i++) {
		const struct ct_event *e = &f->ev[i];

		if (e->type == CT_EV_WRITE && s >= e->s0 && s < e->s0 + e->n && e->seq == v)
			return true;
		if (e->type == CT_EV_TRUNC && v == 0 && e->size_after <= (uint64_t)s * CT_SECTOR)
			return true;
	}
	return false;
}

/* user.ct: its value at the last fsync, or one set since (as (M2)); absent only when
 * no value was durable. */
static bool ct_xattr_allowed(const struct ct_file *f, const char *found)
{
	char want[32];

	if (!found[0])
		return !f->fsynced || !f->dur_xattr;
	snprintf(want, sizeof(want), "ct%u.%u", f->id, f->fsynced ? f->dur_xattr : 0);
	if (f->fsynced && f->dur_xattr && !strcmp(found, want))
		return true;
	for (unsigned int i = 0; i < f->nev; i++) {
		snprintf(want, sizeof(want), "ct%u.%u", f->id, f->ev[i].seq);
		if (f->ev[i].type == CT_EV_XATTR && !strcmp(found, want))
			return true;
	}
	return false;
}

/* (M2), (M3) for one file. */
static int ct_file_check(const struct ct_file *f, const struct ct_found *x, char *why)
{
	if (!ct_xattr_allowed(f, x->xattr)) {
		snprintf(why, 256, "%s (file %u): user.ct \"%s\" not its durable value (seq %u) "
			 "nor a later one", x->path, f->id, x->xattr, f->fsynced ? f->dur_xattr : 0);
		return 1;
	}
	if (!ct_size_allowed(f, x->size)) {
		snprintf(why, 256, "%s (file %u): size %llu not one it had since its last fsync",
			 x->path, f->id, (unsigned long long)x->size);
		return 1;
	}
	for (uint32_t s = 0; (uint64_t)s * CT_SECTOR < x->size; s++) {
		uint32_t v = ct_sector_value(x->data + (size_t)s * CT_SECTOR, f->id, s);

		if (v == UINT32_MAX) {
			snprintf(why, 256, "%s (file %u): sector %u holds bytes never written there",
				 x->path, f->id, s);
			return 1;
		}
		if (!ct_value_allowed(f, s, v)) {
			snprintf(why, 256, "%s (file %u): sector %u holds write %u, not its durable "
				 "content (write %u) nor a later one", x->path, f->id, s, v,
				 f->fsynced && (uint64_t)s * CT_SECTOR < f->dur_size ? f->dur[s] : 0);
			return 1;
		}
	}
	return 0;
}

static const struct ct_found *ct_tree_find(const struct ct_tree *t, const char *path)
{
	for (unsigned int i = 0; i < t->n; i++)
		if (!strcmp(t->files[i].path, path))
			return &t->files[i];
	return NULL;
}

static bool ct_skipped(const char *path, const char *const *skip, unsigned int nskip)
{
	for (unsigned int i = 0; i < nskip; i++)
		if (!strcmp(path, skip[i]))
			return true;
	return false;
}

int ct_model_check(const struct ct_model *m, const struct ct_tree *t, char *why)
{
	return ct_model_check_skip(m, t, NULL, 0, why);
}

int ct_model_check_skip(const struct ct_model *m, const struct ct_tree *t,
			const char *const *skip, unsigned int nskip, char *why)
{
	/* the reason given: the newest state's, unless a state with as many files
	 * as were found failed on a file: that one is the closer miss */
	char first[256] = "", close[256] = "";

	/* newest state first: the common case after a crash late in a commit */
	for (unsigned int k = m->nsnaps; k-- > 0;) {
		const struct ct_ns *ns = &m->snaps[k];
		unsigned int i;

		if (ns->n != t->n) {
			if (!first[0])
				snprintf(first, sizeof(first), "namespace: %u files found, %u expected "
					 "at the newest possible state", t->n, ns->n);
			continue;
		}
		for (i = 0; i < ns->n; i++) {
			const struct ct_found *x = ct_tree_find(t, ns->e[i].path);

			if (!x) {
				if (!first[0])
					snprintf(first, sizeof(first), "namespace: %s missing",
						 ns->e[i].path);
				break;
			}
			if (ct_skipped(x->path, skip, nskip))
				continue;
			if (ct_file_check(&m->files[ns->e[i].id - 1], x, why)) {
				if (!close[0])
					snprintf(close, sizeof(close), "%s (state after op %u)", why,
						 ns->op);
				break;
			}
		}
		if (i == ns->n) {
			why[0] = '\0'; /* a state matched: what others failed on is moot */
			return 0;
		}
	}
	snprintf(why, 256, "%s", close[0] ? close : first[0] ? first : "no possible state matches");
	return 1;
}

void ct_model_dump(const struct ct_model *m, const struct ct_tree *t, FILE *out)
{
	fprintf(out, "found %u files:", t->n);
	for (unsigned int i = 0; i < t->n; i++)
		fprintf(out, " %s(%llu)", t->files[i].path, (unsigned long long)t->files[i].size);
	fprintf(out, "\npossible states (oldest is durable):\n");
	for (unsigned int k = 0; k < m->nsnaps; k++) {
		char why[256] = "";
		unsigned int i, bad = 0;

		fprintf(out, "  after op %u:", m->snaps[k].op);
		for (i = 0; i < m->snaps[k].n; i++) {
			const struct ct_found *x = ct_tree_find(t, m->snaps[k].e[i].path);

			fprintf(out, " %s=%u", m->snaps[k].e[i].path, m->snaps[k].e[i].id);
			if (!x)
				bad++;
			else if (ct_file_check(&m->files[m->snaps[k].e[i].id - 1], x, why))
				fprintf(out, "[%s]", why);
		}
		fprintf(out, "  (%u missing)\n", bad);
	}
	for (unsigned int i = 0; i < m->nfiles; i++) {
		const struct ct_file *f = &m->files[i];

		fprintf(out, "  file %u %s live=%d fsynced=%d last_op=%u size=%llu dur_size=%llu events=%u\n",
			f->id, f->path, f->live, f->fsynced, f->last_op, (unsigned long long)f->size,
			(unsigned long long)f->dur_size, f->nev);
	}
}
