// SPDX-License-Identifier: MIT
/*
 * tools/crash_model.c - the crash harness's seeded workload and the model that
 * says what may be found after a crash at any point of it (tools/crash.h states
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
#include <unistd.h>

#include "crash.h"

#define CT_MAGIC 0x5443474au
#define CT_MAX_SECTORS 8192u	/* 4 MiB per file */

enum ct_ev_type { CT_EV_WRITE, CT_EV_TRUNC };

struct ct_event {
	uint8_t type;
	uint32_t seq;		/* CT_EV_WRITE */
	uint32_t s0, n;		/* CT_EV_WRITE: sectors [s0, s0+n) */
	uint64_t size_after;	/* the file's size after this event */
};

struct ct_file {
	uint32_t id;
	bool live;		/* in the model's current namespace */
	bool large;
	char path[64];
	unsigned int last_op;	/* the last operation that changed it (its inode) */
	uint64_t size;		/* model size now, bytes, multiple of CT_SECTOR */
	uint32_t *cur;		/* value per sector now (0: zero) */
	bool fsynced;		/* an fsync of it was acknowledged */
	uint64_t dur_size;	/* at that fsync */
	uint32_t *dur;		/* values per sector at that fsync */
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
	const bool *cut;	/* set by the crashing thread before the power goes */
	bool fsync_phase;
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
	ns->e = calloc(m->nfiles ? m->nfiles : 1, sizeof(*ns->e));
	if (!ns->e)
		return -ENOMEM;
	for (unsigned int i = 0; i < m->nfiles; i++) {
		if (!m->files[i].live)
			continue;
		snprintf(ns->e[ns->n].path, sizeof(ns->e[0].path), "%s", m->files[i].path);
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

static int ct_do_write(struct ct_model *m, const char *mnt, struct ct_file *f, uint32_t s0,
		       uint32_t n, int oflags)
{
	struct ct_event e = { .type = CT_EV_WRITE, .s0 = s0, .n = n };
	char path[512];
	uint8_t *buf;
	ssize_t w;
	int fd, rc = 0;

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
	f->last_op = m->issued;
	rc = ct_event_add(f, &e);
	if (rc)
		goto out;
	snprintf(path, sizeof(path), "%s/%s", mnt, f->path);
	fd = open(path, O_WRONLY | oflags, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	w = pwrite(fd, buf, (size_t)n * CT_SECTOR, (off_t)s0 * CT_SECTOR);
	if (w != (ssize_t)n * CT_SECTOR)
		rc = w < 0 ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
out:
	free(buf);
	return rc;
}

static int ct_do_fsync(struct ct_model *m, const char *mnt, struct ct_file *f)
{
	char path[512];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", mnt, f->path);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	if (rc)
		return rc;
	/* an acknowledgement after the cut is a dying daemon's: it proves nothing */
	if (m->cut && __atomic_load_n(m->cut, __ATOMIC_ACQUIRE))
		return 0;
	/* acknowledged: (M2) from here on, (M1) for everything before */
	f->fsynced = true;
	f->dur_size = f->size;
	memcpy(f->dur, f->cur, CT_MAX_SECTORS * sizeof(*f->cur));
	f->nev = 0;
	m->fsyncs++;
	ct_ns_durable(m, f->last_op);
	return 0;
}

static struct ct_file *ct_pick_live(struct ct_model *m, bool nonempty)
{
	unsigned int live = 0, k;

	for (unsigned int i = 0; i < m->nfiles; i++)
		live += m->files[i].live && (!nonempty || m->files[i].size);
	if (!live)
		return NULL;
	k = ct_rand(m, live);
	for (unsigned int i = 0; i < m->nfiles; i++) {
		if (!(m->files[i].live && (!nonempty || m->files[i].size)))
			continue;
		if (k-- == 0)
			return &m->files[i];
	}
	return NULL;
}

static int ct_do_create(struct ct_model *m, const char *mnt, struct ct_file **out)
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
	f->large = large < 3 && ct_rand(m, 10) == 0;
	snprintf(f->path, sizeof(f->path), "d%u/f%u", ct_rand(m, CT_NDIRS), f->id);
	rc = ct_ns_push(m);
	if (rc)
		return rc;
	*out = f;
	return ct_do_write(m, mnt, f, 0, f->large ? 256 + ct_rand(m, 768) : 1 + ct_rand(m, 16),
			   O_CREAT | O_EXCL);
}

int ct_workload_setup(const char *mnt)
{
	char path[512];
	int fd;

	for (unsigned int d = 0; d < CT_NDIRS; d++) {
		snprintf(path, sizeof(path), "%s/d%u", mnt, d);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
	}
	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	if (fsync(fd)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	close(fd);
	return 0;
}

/* One operation; returns 0 or the failed call's -errno. */
static int ct_op(struct ct_model *m, const char *mnt)
{
	struct ct_file *f = NULL;
	uint32_t r = ct_rand(m, 100), nsect;
	bool wrote = false;
	char a[512], b[512];
	int rc = 0;

	if (m->issued % 25 == 0)
		m->fsync_phase = !m->fsync_phase;
	f = ct_pick_live(m, false);
	if (!f || r < 12) {
		rc = ct_do_create(m, mnt, &f);
		wrote = true;
	} else if (r < 40) {
		nsect = (uint32_t)(f->size / CT_SECTOR);
		rc = ct_do_write(m, mnt, f, nsect, f->large ? 64 + ct_rand(m, 512) : 1 + ct_rand(m, 8), 0);
		wrote = true;
	} else if (r < 62 && f->size) {
		nsect = (uint32_t)(f->size / CT_SECTOR);
		rc = ct_do_write(m, mnt, f, ct_rand(m, nsect),
				 f->large ? 1 + ct_rand(m, 256) : 1 + ct_rand(m, 8), 0);
		wrote = true;
	} else if (r < 70) {
		snprintf(a, sizeof(a), "%s/%s", mnt, f->path);
		snprintf(f->path, sizeof(f->path), "d%u/r%u", ct_rand(m, CT_NDIRS), ++m->rename_ctr);
		snprintf(b, sizeof(b), "%s/%s", mnt, f->path);
		f->last_op = m->issued;
		rc = ct_ns_push(m);
		if (!rc && rename(a, b))
			rc = -errno;
	} else if (r < 76) {
		snprintf(a, sizeof(a), "%s/%s", mnt, f->path);
		f->live = false;
		rc = ct_ns_push(m);
		if (!rc && unlink(a))
			rc = -errno;
	} else if (r < 82) {
		struct ct_event e = { .type = CT_EV_TRUNC };
		uint32_t keep = ct_rand(m, (uint32_t)(f->size / CT_SECTOR) + 1);

		for (uint32_t s = keep; s < CT_MAX_SECTORS; s++)
			f->cur[s] = 0;
		f->size = (uint64_t)keep * CT_SECTOR;
		f->last_op = m->issued;
		e.size_after = f->size;
		rc = ct_event_add(f, &e);
		snprintf(a, sizeof(a), "%s/%s", mnt, f->path);
		if (!rc && truncate(a, (off_t)f->size))
			rc = -errno;
		wrote = true;
	} else {
		rc = ct_do_fsync(m, mnt, f);
	}
	if (!rc && wrote && f && f->live && m->fsync_phase)
		rc = ct_do_fsync(m, mnt, f);
	return rc;
}

unsigned int ct_workload_run(struct ct_model *m, const char *mnt, unsigned int *progress,
			     const bool *cut)
{
	unsigned int done = 0;

	m->cut = cut;
	while (m->issued < m->nops) {
		__atomic_store_n(progress, m->issued + 1, __ATOMIC_RELEASE);
		m->issued++;
		if (ct_op(m, mnt))
			break;
		done++;
	}
	return done;
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

static int ct_read_file(const char *path, uint8_t **data, uint64_t *size)
{
	struct stat st;
	uint8_t *buf;
	uint64_t got = 0;
	int fd = open(path, O_RDONLY);

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

int ct_tree_read_dir(const char *root, struct ct_tree *t)
{
	char dpath[512], fpath[1024], rel[128];
	struct dirent *de;
	DIR *top, *d;
	int rc = 0;

	top = opendir(root);
	if (!top)
		return -errno;
	while (!rc && (de = readdir(top))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(dpath, sizeof(dpath), "%s/%s", root, de->d_name);
		d = opendir(dpath);
		if (!d) {
			/* not one of our directories: record it so the namespace check fails */
			rc = ct_tree_add(t, de->d_name, NULL, 0);
			continue;
		}
		struct dirent *fe;

		while (!rc && (fe = readdir(d))) {
			uint8_t *data = NULL;
			uint64_t size = 0;

			if (!strcmp(fe->d_name, ".") || !strcmp(fe->d_name, ".."))
				continue;
			snprintf(rel, sizeof(rel), "%.40s/%.80s", de->d_name, fe->d_name);
			snprintf(fpath, sizeof(fpath), "%s/%s", root, rel);
			rc = ct_read_file(fpath, &data, &size);
			if (!rc)
				rc = ct_tree_add(t, rel, data, size);
		}
		closedir(d);
	}
	closedir(top);
	return rc;
}

/* ------------------------------------------------------------ the check */

static bool ct_size_allowed(const struct ct_file *f, uint64_t size)
{
	if (f->fsynced ? size == f->dur_size : size == 0)
		return true;
	for (unsigned int i = 0; i < f->nev; i++)
		if (f->ev[i].size_after == size)
			return true;
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

/* (M2), (M3) for one file. */
static int ct_file_check(const struct ct_file *f, const struct ct_found *x, char *why)
{
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

int ct_model_check(const struct ct_model *m, const struct ct_tree *t, char *why)
{
	char first[256] = "";

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
			if (ct_file_check(&m->files[ns->e[i].id - 1], x, why)) {
				if (!first[0])
					snprintf(first, sizeof(first), "%s", why);
				break;
			}
		}
		if (i == ns->n)
			return 0;
	}
	snprintf(why, 256, "%s", first[0] ? first : "no possible state matches");
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
