// SPDX-License-Identifier: MIT
/*
 * tools/crash/crash_inproc.c - the crash harness in-process (tools/crash/crash_inproc.h):
 * the workload's operations over fs.h, one iteration of cut, lifecycle,
 * recovery and checks, and the write-hole check shared with the mount runner.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_inproc.h"

const char *const ct_check_names[CT_NCHECKS] = {
	"fsck", "content", "scrub", "writehole", "errors",
};

const char *const ct_lc_names[CT_LC_COUNT] = {
	[CT_LC_REMOUNT] = "remount",
	[CT_LC_STOP_FIRST] = "stop-first",
	[CT_LC_FSCK_FIRST] = "fsck-first",
	[CT_LC_SCRUB_FIRST] = "scrub-first",
	[CT_LC_LOST_MEMBER] = "lost-member",
	[CT_LC_RECOVERY_CUT] = "recovery-cut",
	[CT_LC_REBUILD_CUT] = "rebuild-cut",
	[CT_LC_INITIAL_SYNC] = "initial-sync",
	[CT_LC_EIO_CUT] = "eio-cut",
	[CT_LC_LOST_BEFORE] = "lost-before",
	[CT_LC_REBUILD_RUN] = "rebuild-run",
	[CT_LC_SCRUB_RUN] = "scrub-run",
	[CT_LC_READD_RUN] = "readd-run",
};

const char *const ct_second_names[CT_2ND_COUNT] = {
	[CT_2ND_NONE] = "-",
	[CT_2ND_MISSED] = "missed",
	[CT_2ND_UNRECORDED] = "unrecorded",
	[CT_2ND_RECORDED] = "recorded",
	[CT_2ND_LOST] = "lost",
	[CT_2ND_REBUILDING] = "rebuilding",
	[CT_2ND_SCRUBBING] = "scrubbing",
};

uint64_t ct_mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

/* ------------------------------------------------------------ fs.h operations */

static bool ip_dead(const struct ct_ip_vol *v)
{
	return v->cut && __atomic_load_n(v->cut, __ATOMIC_ACQUIRE);
}

/* The directory holding @path and the last component (a pointer into @path). */
static int ip_parent(struct ct_ip_vol *v, const char *path, uint64_t *parent, const char **name)
{
	char comp[FS_NAME_MAX + 1];
	uint64_t ino = FS_ROOT_INO;
	const char *p = path, *slash;
	struct fs_attr at;
	int rc;

	while ((slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);

		if (n > FS_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(comp, p, n);
		comp[n] = '\0';
		rc = fs_lookup(v->fs, ino, comp, &at);
		if (rc)
			return rc;
		ino = at.ino;
		p = slash + 1;
	}
	*parent = ino;
	*name = p;
	return 0;
}

static int ip_ino(struct ct_ip_vol *v, const char *path, uint64_t *ino)
{
	struct fs_attr at;
	const char *name;
	uint64_t parent;
	int rc;

	if (!path[0]) {
		*ino = FS_ROOT_INO;
		return 0;
	}
	rc = ip_parent(v, path, &parent, &name);
	if (!rc)
		rc = fs_lookup(v->fs, parent, name, &at);
	if (!rc)
		*ino = at.ino;
	return rc;
}

static int ip_mkdir(void *ctx, const char *path)
{
	struct ct_ip_vol *v = ctx;
	struct fs_attr at;
	const char *name;
	uint64_t parent;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	rc = ip_parent(v, path, &parent, &name);
	return rc ? rc : fs_mkdir(v->fs, parent, name, 0755, 0, 0, &at);
}

static int ip_pwrite(void *ctx, const char *path, const void *buf, size_t len, uint64_t off,
		     bool create)
{
	struct ct_ip_vol *v = ctx;
	struct fs_attr at;
	const char *name;
	uint64_t parent, ino;
	size_t done = 0;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	if (create) {
		rc = ip_parent(v, path, &parent, &name);
		if (!rc)
			rc = fs_mknod(v->fs, parent, name, S_IFREG | 0644, 0, 0, 0, &at);
		ino = at.ino;
	} else {
		rc = ip_ino(v, path, &ino);
	}
	while (!rc && done < len) {
		ssize_t w = fs_write(v->fs, ino, off + done, len - done, (const uint8_t *)buf + done);

		if (w <= 0)
			rc = w < 0 ? (int)w : -EIO;
		else
			done += (size_t)w;
	}
	return rc;
}

static int ip_truncate(void *ctx, const char *path, uint64_t size)
{
	struct ct_ip_vol *v = ctx;
	struct fs_attr at = { .size = size }, out;
	uint64_t ino;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	rc = ip_ino(v, path, &ino);
	return rc ? rc : fs_setattr(v->fs, ino, &at, FS_SET_SIZE, &out);
}

static int ip_fsync(void *ctx, const char *path)
{
	struct ct_ip_vol *v = ctx;
	uint64_t ino;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	rc = ip_ino(v, path, &ino);
	return rc ? rc : fs_fsync(v->fs, ino, false);
}

static int ip_rename(void *ctx, const char *from, const char *to)
{
	struct ct_ip_vol *v = ctx;
	const char *n1, *n2;
	uint64_t p1, p2;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	rc = ip_parent(v, from, &p1, &n1);
	if (!rc)
		rc = ip_parent(v, to, &p2, &n2);
	return rc ? rc : fs_rename(v->fs, p1, n1, p2, n2, 0);
}

static int ip_unlink(void *ctx, const char *path)
{
	struct ct_ip_vol *v = ctx;
	const char *name;
	uint64_t parent;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	rc = ip_parent(v, path, &parent, &name);
	return rc ? rc : fs_unlink(v->fs, parent, name);
}

static int ip_link(void *ctx, const char *from, const char *to)
{
	struct ct_ip_vol *v = ctx;
	struct fs_attr at;
	const char *name;
	uint64_t ino, parent;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	rc = ip_ino(v, from, &ino);
	if (!rc)
		rc = ip_parent(v, to, &parent, &name);
	return rc ? rc : fs_link(v->fs, ino, parent, name, &at);
}

static int ip_setxattr(void *ctx, const char *path, const char *name, const void *val,
		       size_t len)
{
	struct ct_ip_vol *v = ctx;
	uint64_t ino;
	int rc;

	if (ip_dead(v))
		return -ECANCELED;
	rc = ip_ino(v, path, &ino);
	return rc ? rc : fs_setxattr(v->fs, ino, name, val, len, 0);
}

static ssize_t ip_getxattr(void *ctx, const char *path, const char *name, void *val, size_t len)
{
	struct ct_ip_vol *v = ctx;
	uint64_t ino;
	int rc;

	rc = ip_ino(v, path, &ino);
	return rc ? rc : fs_getxattr(v->fs, ino, name, val, len);
}

struct ip_names {
	char (*name)[FS_NAME_MAX + 1];
	bool *isdir;
	unsigned int n, cap;
	int rc;
};

static int ip_readdir_cb(void *ctx, const char *name, uint64_t ino, uint32_t mode,
			 uint64_t next_off)
{
	struct ip_names *l = ctx;

	(void)ino;
	(void)next_off;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n == l->cap) {
		unsigned int cap = l->cap ? 2 * l->cap : 64;
		void *a = realloc(l->name, cap * sizeof(*l->name));

		if (!a)
			return l->rc = -ENOMEM;
		l->name = a;
		a = realloc(l->isdir, cap * sizeof(*l->isdir));
		if (!a)
			return l->rc = -ENOMEM;
		l->isdir = a;
		l->cap = cap;
	}
	snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
	l->isdir[l->n++] = S_ISDIR(mode);
	return 0;
}

/* The names first, then @fn on each: @fn may call into the fs again. */
static int ip_readdir(void *ctx, const char *dir, int (*fn)(void *arg, const char *name, bool isdir),
		      void *arg)
{
	struct ct_ip_vol *v = ctx;
	struct ip_names l = { 0 };
	uint64_t ino;
	int rc;

	rc = ip_ino(v, dir, &ino);
	if (!rc)
		rc = fs_readdir(v->fs, ino, 0, ip_readdir_cb, &l);
	rc = rc ? rc : l.rc;
	for (unsigned int i = 0; !rc && i < l.n; i++)
		rc = fn(arg, l.name[i], l.isdir[i]);
	free(l.name);
	free(l.isdir);
	return rc;
}

static int ip_read_file(void *ctx, const char *path, uint8_t **data, uint64_t *size)
{
	struct ct_ip_vol *v = ctx;
	struct fs_attr at;
	uint64_t ino, got = 0;
	uint8_t *buf;
	int rc;

	rc = ip_ino(v, path, &ino);
	if (!rc)
		rc = fs_getattr(v->fs, ino, &at);
	if (rc)
		return rc;
	buf = malloc(at.size ? at.size : 1);
	if (!buf)
		return -ENOMEM;
	while (got < at.size) {
		ssize_t r = fs_read(v->fs, ino, got, at.size - got, buf + got);

		if (r <= 0) {
			free(buf);
			return r < 0 ? (int)r : -EIO;
		}
		got += (uint64_t)r;
	}
	*data = buf;
	*size = got;
	return 0;
}

void ct_fs_ops(struct ct_ops *ops, struct ct_ip_vol *v)
{
	*ops = (struct ct_ops){
		.ctx = v,
		.mkdir = ip_mkdir,
		.pwrite = ip_pwrite,
		.truncate = ip_truncate,
		.fsync = ip_fsync,
		.rename = ip_rename,
		.unlink = ip_unlink,
		.link = ip_link,
		.setxattr = ip_setxattr,
		.getxattr = ip_getxattr,
		.readdir = ip_readdir,
		.read_file = ip_read_file,
	};
}

/* ------------------------------------------------------------ the write hole */

static int ct_fs_read_tree(struct fs *fs, const struct ct_tree *ref, char *why)
{
	struct ct_ip_vol v = { fs, NULL };
	struct ct_ops ops;

	ct_fs_ops(&ops, &v);
	for (unsigned int i = 0; i < ref->n; i++) {
		const struct ct_found *x = &ref->files[i];
		uint8_t *data = NULL;
		uint64_t size = 0;
		int rc;

		if (!strchr(x->path, '/'))
			continue;
		rc = ops.read_file(ops.ctx, x->path, &data, &size);
		if (rc) {
			snprintf(why, 256, "%s: %s", x->path, strerror(-rc));
			return 1;
		}
		if (size != x->size || memcmp(data, x->data, size)) {
			snprintf(why, 256, "%s: %s", x->path, size != x->size ?
				 "size differs from the full array's" :
				 "content differs from the full array's");
			free(data);
			return 1;
		}
		free(data);
	}
	return 0;
}

int ct_hole_check(char **members, unsigned int n, unsigned int skip, const struct ct_tree *ref,
		  char *why)
{
	struct raid_assemble_cfg acfg = { .readonly = true, .no_resync = true };
	struct fs_mount_opts mo = { .data_mode = JNL_DATA_ORDERED, .readonly = true,
				    .no_commit_thread = true };
	struct blk_dev *devs[16];
	struct raid_array *a = NULL;
	struct fs *fs = NULL;
	unsigned int k = 0;
	int rc;

	for (unsigned int i = 0; i < n; i++) {
		if (i == skip)
			continue;
		rc = raid_dev_uring_open(members[i], 0, &devs[k]);
		if (rc)
			goto out_close;
		k++;
	}
	rc = raid_assemble(devs, k, &acfg, &a);
	if (rc) {
		snprintf(why, 256, "member %u left out: assembly failed: %s", skip, strerror(-rc));
		rc = 1;
		goto out_close;
	}
	k = 0; /* the array owns the devices now */
	rc = fs_mount(raid_array_dev(a), &mo, &fs);
	if (rc) {
		snprintf(why, 256, "member %u left out: mount failed: %s", skip, strerror(-rc));
		rc = 1;
		goto out_stop;
	}
	rc = ct_fs_read_tree(fs, ref, why);
	if (rc == 1) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "member %u left out: %.200s", skip, why);
		memcpy(why, tmp, sizeof(tmp));
	}
	fs_unmount(fs);
out_stop:
	raid_stop(a);
out_close:
	for (unsigned int i = 0; i < k; i++)
		blk_close(devs[i]);
	return rc;
}

/* ------------------------------------------------------------ aiming at a point */

/* Over the array device: the cut right after the @nth request naming @point. */
struct ip_aim {
	struct blk_dev dev;	/* first: container_of by cast */
	struct blk_dev *lower;
	struct raid_fault_domain *dom;
	enum jg_opoint point;
	unsigned int nth, seen;
};

static int ip_aim_submit(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	struct ip_aim *a = (struct ip_aim *)dev;
	enum jg_opoint p = jg_opoint_get();	/* the submitting thread's, as dev_fault */
	int rc = blk_submit(a->lower, reqs, n);

	if (p == a->point && __atomic_add_fetch(&a->seen, 1, __ATOMIC_ACQ_REL) == a->nth &&
	    !raid_fault_domain_is_cut(a->dom))
		raid_fault_domain_cut(a->dom);
	return rc;
}

static int ip_aim_ctl(struct blk_dev *dev, unsigned int cmd, void *arg)
{
	return blk_ctl(((struct ip_aim *)dev)->lower, cmd, arg);
}

static void ip_aim_close(struct blk_dev *dev)
{
	free(dev);
}

static const struct blk_dev_ops ip_aim_ops = {
	.submit = ip_aim_submit,
	.ctl = ip_aim_ctl,
	.close = ip_aim_close,
};

/* Points aimed at by the fault domain, at the k-th plain member write (or
 * flush) tagged with them: the array's own, which no wrapper above the array
 * sees; a full checkpoint, whose only request at a mount or an unmount with
 * nothing to write home is its superblock's (PREFLUSH and FUA: never in
 * flight); recovery's resync, whose requests above the array are reads and
 * whose writes exist only for a row it repairs; and (C6), a member flush. */
#define IP_DOMAIN_POINTS (1ull << JG_OP_RAID_SB | 1ull << JG_OP_RAID_BITMAP_SET | \
			  1ull << JG_OP_RAID_BITMAP_CLEAR | 1ull << JG_OP_RAID_RESYNC | \
			  1ull << JG_OP_RAID_REBUILD | 1ull << JG_OP_RAID_SYNC | \
			  1ull << JG_OP_JNL_CP_FULL | 1ull << JG_OP_JNL_RESYNC | \
			  1ull << JG_OP_JNL_LOG_FLUSH)

static bool ip_aim_in_domain(int point)
{
	return point >= 0 && ((IP_DOMAIN_POINTS >> point) & 1);
}

/* Points only recovery writes (the others: only the running volume). */
#define IP_RECOVERY_POINTS (1ull << JG_OP_JNL_REPLAY | 1ull << JG_OP_JNL_RESYNC | \
			    1ull << JG_OP_RAID_RESYNC)

/* The point to aim at in this phase, chosen by @seed; -1: none (cut by count). */
static int ip_aim_pick(const struct ct_ip_cfg *c, uint64_t seed, bool recovery)
{
	uint64_t set = c->aim & (recovery ? IP_RECOVERY_POINTS : ~IP_RECOVERY_POINTS);
	unsigned int npts = 0, k;

	if (c->cut_at || c->calibrate || c->eio)
		return -1;
	for (unsigned int p = 0; p < JG_OP_COUNT; p++)
		npts += (set >> p) & 1;
	if (!npts)
		return -1;
	k = (unsigned int)(ct_mix(seed, 10) % npts);
	for (unsigned int p = 0; p < JG_OP_COUNT; p++)
		if (((set >> p) & 1) && k-- == 0)
			return (int)p;
	return -1;
}

/* A wrapper over @lower cutting @dom after the k-th request of @point (k by
 * @seed); @lower itself when @point is -1. */
static struct blk_dev *ip_aim_open(int point, uint64_t seed, struct raid_fault_domain *dom,
				   struct blk_dev *lower, struct ct_ip_result *r)
{
	struct ip_aim *a;

	if (point < 0 || ip_aim_in_domain(point) || !(a = calloc(1, sizeof(*a))))
		return lower;
	a->dev = (struct blk_dev){ .ops = &ip_aim_ops, .nblocks = lower->nblocks };
	snprintf(a->dev.name, sizeof(a->dev.name), "%s", lower->name);
	a->lower = lower;
	a->dom = dom;
	a->point = (enum jg_opoint)point;
	a->nth = 1 + (unsigned int)(ct_mix(seed, 11) % 2);
	r->aimed = point;
	return &a->dev;
}

static void ip_aim_close_dev(struct blk_dev *dev, struct blk_dev *lower)
{
	if (dev != lower)
		blk_close(dev);
}

/* ------------------------------------------------------------ a member failing at write N */

/* (I7) Shared by the wrappers over every member's fault device. */
struct ip_eio_trig {
	struct raid_fault_domain *dom;
	struct blk_dev *target;		/* the fault device of the member that fails */
	uint64_t at;			/* from this domain write on */
	bool fired;
};

/* Over a member's fault device (owned: closed with it): before a request, once the
 * domain has seen trig->at writes, the target member fails every I/O from then on. */
struct ip_eio {
	struct blk_dev dev;	/* first: container_of by cast */
	struct blk_dev *lower;
	struct ip_eio_trig *trig;
};

static int ip_eio_submit(struct blk_dev *dev, struct blk_req *reqs, unsigned int n)
{
	struct ip_eio *e = (struct ip_eio *)dev;
	struct ip_eio_trig *t = e->trig;

	if (!__atomic_load_n(&t->fired, __ATOMIC_ACQUIRE) &&
	    raid_fault_domain_writes(t->dom) >= t->at &&
	    !__atomic_exchange_n(&t->fired, true, __ATOMIC_ACQ_REL))
		raid_dev_fault_fail_all(t->target);
	return blk_submit(e->lower, reqs, n);
}

static int ip_eio_ctl(struct blk_dev *dev, unsigned int cmd, void *arg)
{
	return blk_ctl(((struct ip_eio *)dev)->lower, cmd, arg);
}

static void ip_eio_close(struct blk_dev *dev)
{
	blk_close(((struct ip_eio *)dev)->lower);
	free(dev);
}

static const struct blk_dev_ops ip_eio_ops = {
	.submit = ip_eio_submit,
	.ctl = ip_eio_ctl,
	.close = ip_eio_close,
};

/* Wrap each of @n fault devices (given up to the wrappers: -ENOMEM frees those done
 * and leaves the rest to the caller). */
static int ip_eio_wrap(struct blk_dev **fault, unsigned int n, struct ip_eio_trig *trig,
		       struct blk_dev **out)
{
	for (unsigned int i = 0; i < n; i++) {
		struct ip_eio *e = calloc(1, sizeof(*e));

		if (!e) {
			while (i--) {
				free(out[i]);
				out[i] = NULL;
			}
			return -ENOMEM;
		}
		e->dev = (struct blk_dev){ .ops = &ip_eio_ops, .nblocks = fault[i]->nblocks };
		snprintf(e->dev.name, sizeof(e->dev.name), "%s", fault[i]->name);
		e->lower = fault[i];
		e->trig = trig;
		out[i] = &e->dev;
	}
	return 0;
}

/* ------------------------------------------------------------ one iteration */

struct ip_run {
	const struct ct_ip_cfg *c;
	uint64_t seed;
	struct ct_ip_result *r;
	char *members[16];
	char spare[PATH_MAX];		/* a rebuild's new member */
	struct blk_dev *lower[16];	/* the member files, under the fault wrappers */
	struct blk_dev *fault[16];
	struct raid_fault_domain *dom;
	bool cut;			/* set by the domain at the cut (on_cut) */
	unsigned int failed_role;	/* (I6) the member the array failed; nmem: none */
	unsigned int eio_role;		/* (I7) eio-cut: the member that fails */
	char **risk;			/* (I7) forced recovery: the files named at risk */
	unsigned int nrisk, riskcap;
	bool fsck_waived;		/* (I7) allocation metadata at risk */
	uint64_t itab[64][2];		/* (I7) inode ranges at risk (inode table rows) */
	unsigned int nitab;
	unsigned int rebuild_role;	/* (I7) rebuild-run: the member rebuilt */
	struct blk_dev *unowned;	/* (I7) rebuild-run: its fault device, left out */
	struct blk_dev *spare_lower;	/* (I7) rebuild-run: the new member's file */
};

static void ip_on_cut(void *arg)
{
	__atomic_store_n((bool *)arg, true, __ATOMIC_RELEASE);
}

static void ip_why(struct ip_run *x, enum ct_check c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ip_why(struct ip_run *x, enum ct_check c, const char *fmt, ...)
{
	va_list ap;

	x->r->damage[c]++;
	if (x->r->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(x->r->why, sizeof(x->r->why), fmt, ap);
	va_end(ap);
}

static int ip_open_members(struct ip_run *x, struct blk_dev **devs, uint64_t create_blocks)
{
	for (unsigned int i = 0; i < x->c->nmem; i++) {
		int rc = raid_dev_uring_open(x->members[i], create_blocks, &devs[i]);

		if (rc) {
			while (i--)
				blk_close(devs[i]);
			return rc;
		}
	}
	return 0;
}

static void ip_close_devs(struct blk_dev **devs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		blk_close(devs[i]);
		devs[i] = NULL;
	}
}

/*
 * (I5) Members that held something else before create: seeded noise over each,
 * so that the array's parity matches nothing until the initial sync passes.
 */
static int ip_old_data(struct ip_run *x, struct blk_dev **devs)
{
	const uint32_t step = 256;
	uint8_t *buf = jg_alloc_blocks(step);	/* the device contract: aligned */
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (unsigned int i = 0; i < x->c->nmem && !rc; i++) {
		uint64_t s = ct_mix(x->seed, 200 + i);

		for (uint64_t b = 0; b < devs[i]->nblocks && !rc; b += step) {
			uint32_t n = devs[i]->nblocks - b < step ? (uint32_t)(devs[i]->nblocks - b)
								   : step;

			for (size_t k = 0; k < (size_t)n * JG_BLOCK_SIZE / 8; k++)
				((uint64_t *)buf)[k] = s = ct_mix(s, k);
			rc = blk_rw(devs[i], BLK_OP_WRITE, b, n, buf, 0);
		}
	}
	free(buf);
	return rc;
}

/* (I1) a fresh volume holding the workload's directories, stopped cleanly. */
static int ip_make(struct ip_run *x)
{
	const struct ct_ip_cfg *c = x->c;
	bool old = x->r->lifecycle == CT_LC_INITIAL_SYNC;
	struct raid_create_cfg cc = { .level = c->level, .resync = c->resync,
				      .assume_clean = !old /* new files: zeros */ };
	struct fs_mkfs_opts mk = { .journal_blocks = c->journal_blocks, .force = true,
				   .data_csum = c->data_csum };
	struct fs_mount_opts mo = { .data_mode = c->data_mode, .no_commit_thread = true };
	struct raid_assemble_cfg acfg = { 0 };
	struct blk_dev *devs[16];
	struct raid_array *a;
	struct ct_ip_vol v = { 0 };
	struct ct_ops ops;
	int rc;

	for (unsigned int i = 0; i < c->nmem; i++)
		unlink(x->members[i]);
	rc = ip_open_members(x, devs, c->member_bytes / JG_BLOCK_SIZE);
	if (rc)
		return rc;
	if (old)
		rc = ip_old_data(x, devs);
	if (!rc)
		rc = raid_create(devs, c->nmem, &cc, true);
	if (!rc)
		rc = raid_assemble(devs, c->nmem, &acfg, &a);
	if (rc) {
		ip_close_devs(devs, c->nmem);
		return rc;
	}
	rc = fs_mkfs(raid_array_dev(a), &mk);
	if (!rc)
		rc = fs_mount(raid_array_dev(a), &mo, &v.fs);
	if (!rc) {
		ct_fs_ops(&ops, &v);
		rc = ct_workload_setup_ops(&ops);
		rc = fs_unmount(v.fs) ?: rc;
	}
	return raid_stop(a) ?: rc;
}

/* Members reopened, each wrapped in a new fault domain cut at write @cut (0: never),
 * or, when @aim is a domain point, right after its k-th write (k by @aim_seed). */
static int ip_domain_open(struct ip_run *x, uint64_t cut, uint64_t salt, int aim,
			  uint64_t aim_seed)
{
	struct raid_fault_cfg fc = {
		.cut_after_writes = cut, .seed = ct_mix(x->seed, salt), .keep_percent = 50,
		.tear = true, .cut_at_flushes = true, .on_cut = ip_on_cut, .on_cut_arg = &x->cut,
	};
	int rc;

	if (ip_aim_in_domain(aim)) {
		fc.cut_point_mask = 1ull << aim;
		fc.cut_point_nth = 1 + (unsigned int)(ct_mix(aim_seed, 11) % 2);
		x->r->aimed = aim;
	}
	x->cut = false;
	rc = raid_fault_domain_new(&fc, &x->dom);
	if (rc)
		return rc;
	rc = ip_open_members(x, x->lower, 0);
	if (rc) {
		raid_fault_domain_free(x->dom);
		x->dom = NULL;
		return rc;
	}
	for (unsigned int i = 0; i < x->c->nmem; i++) {
		rc = raid_dev_fault_open(x->dom, x->lower[i], &x->fault[i]);
		if (rc) {
			ip_close_devs(x->fault, i);
			ip_close_devs(x->lower, x->c->nmem);
			raid_fault_domain_free(x->dom);
			x->dom = NULL;
			return rc;
		}
	}
	return 0;
}

/* The power is gone: the cut (now, if the count was not reached) and its points. */
static void ip_domain_cut(struct ip_run *x)
{
	if (!raid_fault_domain_is_cut(x->dom))
		raid_fault_domain_cut(x->dom);
	if (x->r->ncuts < CT_IP_MAX_CUTS)
		x->r->points[x->r->ncuts++] = raid_fault_domain_cut_points(x->dom);
}

/* After the array and every layer above were abandoned (or stopped). */
static void ip_domain_close(struct ip_run *x, bool array_owns_faults)
{
	if (!array_owns_faults)
		ip_close_devs(x->fault, x->c->nmem);
	if (x->unowned)
		blk_close(x->unowned);
	if (x->spare_lower)
		blk_close(x->spare_lower);
	x->unowned = x->spare_lower = NULL;
	ip_close_devs(x->lower, x->c->nmem);
	raid_fault_domain_free(x->dom);
	x->dom = NULL;
}

/* Plain members, assembled for use (@cfg) with member @skip left out (>= nmem: none). */
static int ip_assemble(struct ip_run *x, const struct raid_assemble_cfg *cfg, unsigned int skip,
		       struct raid_array **a)
{
	struct blk_dev *devs[16];
	unsigned int k = 0;
	int rc = 0;

	for (unsigned int i = 0; i < x->c->nmem && !rc; i++)
		if (i != skip && !(rc = raid_dev_uring_open(x->members[i], 0, &devs[k])))
			k++;
	if (!rc)
		rc = raid_assemble(devs, k, cfg, a);
	if (rc)
		ip_close_devs(devs, k);
	return rc;
}

/* (I5) The initial sync, run beside the workload until done or the power is gone. */
struct ip_sync {
	struct ip_run *x;
	struct raid_array *a;
	struct blk_dev *sf;	/* (I7) rebuild-run: the new member (the array's once given) */
	pthread_t thread;
	bool started;
	bool whole;		/* (I7) the rebuild (scrub) ended before the cut */
	bool scrub;		/* (I7) scrub-run */
	bool readd;		/* (I7) readd-run */
	int phase;		/* (I7) readd-run: 0 running, 1 member failed, 2 readding */
	unsigned int steps;	/* (I7) readd-run: the readd's progress calls so far */
	int rc;
};

static int ip_sync_step(void *ctx, uint64_t done, uint64_t total)
{
	struct ip_sync *s = ctx;

	(void)done;
	(void)total;
	/* spread over the workload, as the daemon's throttle does; a rebuild has
	 * fewer, larger groups */
	usleep(s->sf ? 150000 : 20000);
	return __atomic_load_n(&s->x->cut, __ATOMIC_ACQUIRE);
}

/* (I7) scrub-run: an online scrub --repair, a few rows at a time, paced. */
static int ip_scrub_online(struct ip_sync *s)
{
	struct raid_scrub_counts cnt = { 0 };
	struct raid_info ri;
	int rc = 0;

	raid_info_get(s->a, &ri);
	for (uint64_t row = 0; row < ri.rows && !rc; row += 8) {
		rc = raid_scrub_rows(s->a, row, ri.rows - row < 8 ? ri.rows - row : 8, true, NULL,
				     NULL, &cnt);
		if (!rc && ip_sync_step(s, row, ri.rows))
			rc = -ECANCELED;
	}
	return rc;
}

/* (I7) readd-run: a readd touches few rows and is over in a few groups, seldom
 * under a cut drawn among all writes; half the seeds cut it at its first,
 * second or third group instead. */
static int ip_readd_step(void *ctx, uint64_t done, uint64_t total)
{
	struct ip_sync *s = ctx;
	uint64_t pick = ct_mix(s->x->seed, 22) % 6;

	if (pick < 3 && s->steps++ == pick && !raid_fault_domain_is_cut(s->x->dom))
		raid_fault_domain_cut(s->x->dom);
	return ip_sync_step(s, done, total);
}

/*
 * (I7) readd-run: member x->rebuild_role fails (as raid_fail_member records it,
 * the daemon's answer to an I/O error), the workload writes on without it, and
 * it comes back on the same file through a new device: raid_readd rebuilds the
 * rows it missed. The cut falls anywhere in this.
 */
static int ip_readd_run(struct ip_sync *s)
{
	struct ip_run *x = s->x;
	unsigned int role = x->rebuild_role;
	struct blk_dev *dev = NULL;
	int rc;

	for (int i = 0; i < 2; i++)
		if (ip_sync_step(s, 0, 0))
			return -ECANCELED;
	rc = raid_fail_member(s->a, role);
	if (rc)
		return rc;
	__atomic_store_n(&s->phase, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 3; i++)
		if (ip_sync_step(s, 0, 0))
			return -ECANCELED;
	/* Back on the same file, through a new device over the same disk: the
	 * domain gives the two one cache (dev_fault.c (Z2)), so what the failed
	 * device still held unflushed is made durable by the readd's flushes. */
	rc = raid_dev_fault_open(x->dom, x->lower[role], &dev);
	if (rc)
		return rc;
	__atomic_store_n(&s->phase, 2, __ATOMIC_RELEASE);
	/* fenced: this device has no connection that could deliver old writes */
	return raid_readd(s->a, role, dev, RAID_READD_FENCED, ip_readd_step, s);
}

static void *ip_sync_main(void *arg)
{
	struct ip_sync *s = arg;

	if (s->readd) {
		s->rc = ip_readd_run(s);
		s->whole = !s->rc && !__atomic_load_n(&s->x->cut, __ATOMIC_ACQUIRE);
		return NULL;
	}

	if (s->scrub) {
		s->rc = ip_scrub_online(s);
		s->whole = !s->rc && !__atomic_load_n(&s->x->cut, __ATOMIC_ACQUIRE);
		return NULL;
	}

	if (s->sf) {
		s->rc = raid_rebuild(s->a, s->x->rebuild_role, s->sf, ip_sync_step, s);
		/* ended whole before the power went, or stopped (or failed) by it */
		s->whole = !s->rc && !__atomic_load_n(&s->x->cut, __ATOMIC_ACQUIRE);
	} else
		s->rc = raid_initial_sync(s->a, ip_sync_step, s);
	return NULL;
}

/* (I7) rebuild-run: the new member, in the fault domain, for the rebuild. */
static int ip_sync_spare(struct ip_sync *s, struct ip_run *x)
{
	int rc;

	unlink(x->spare);
	rc = raid_dev_uring_open(x->spare, x->c->member_bytes / JG_BLOCK_SIZE, &x->spare_lower);
	if (!rc)
		rc = raid_dev_fault_open(x->dom, x->spare_lower, &s->sf);
	return rc;
}

static void ip_sync_start(struct ip_sync *s, struct ip_run *x, struct raid_array *a)
{
	s->x = x;
	s->a = a;
	if (x->r->lifecycle == CT_LC_REBUILD_RUN && ip_sync_spare(s, x))
		return;
	s->scrub = x->r->lifecycle == CT_LC_SCRUB_RUN;
	s->readd = x->r->lifecycle == CT_LC_READD_RUN;
	s->started = (x->r->lifecycle == CT_LC_INITIAL_SYNC || s->sf || s->scrub || s->readd) &&
		     !pthread_create(&s->thread, NULL, ip_sync_main, s);
	if (!s->started && s->sf) {
		blk_close(s->sf);
		s->sf = NULL;
	}
}

static void ip_sync_join(struct ip_sync *s)
{
	if (s->started)
		pthread_join(s->thread, NULL);
	s->started = false;
}

/*
 * On a volume with data checksums, the checksum region's initialiser beside the
 * workload, as the daemon runs it (src/fuse/initsync.c): a few blocks a step,
 * paced, until the region is whole, the cut, or an error (the power gone).
 */
struct ip_dcinit {
	struct ip_run *x;
	struct fs *fs;
	pthread_t thread;
	bool started;
};

static void *ip_dcinit_main(void *arg)
{
	struct ip_dcinit *d = arg;
	uint64_t left = 1;

	while (left && !__atomic_load_n(&d->x->cut, __ATOMIC_ACQUIRE) &&
	       !fs_dcsum_init_step(d->fs, 2, &left))
		usleep(20000);
	return NULL;
}

static void ip_dcinit_start(struct ip_dcinit *d, struct ip_run *x, struct fs *fs)
{
	d->x = x;
	d->fs = fs;
	d->started = x->c->data_csum && !pthread_create(&d->thread, NULL, ip_dcinit_main, d);
}

static void ip_dcinit_join(struct ip_dcinit *d)
{
	if (d->started)
		pthread_join(d->thread, NULL);
	d->started = false;
}

/* (I7) How far the work beside the workload got when the power went. */
static void ip_sync_second(const struct ip_sync *s, struct ip_run *x)
{
	if (s->sf || (s->scrub && s->rc != -EAGAIN))
		x->r->second = s->whole ? CT_2ND_MISSED :
			       s->scrub ? CT_2ND_SCRUBBING : CT_2ND_REBUILDING;
	if (!s->readd)
		return;
	x->r->second = s->whole || !s->phase ? CT_2ND_MISSED :
		       s->phase == 1 ? CT_2ND_RECORDED : CT_2ND_REBUILDING;
	if (s->rc && s->rc != -ECANCELED && !x->cut)
		ip_why(x, CT_ERROR, "readd-run: %s of member %u failed: %s",
		       s->phase < 2 ? "the failure" : "the readd", x->rebuild_role,
		       strerror(-s->rc));
}

/* Member @role absent or failed in @ri. */
static bool ip_role_failed(const struct raid_info *ri, unsigned int role)
{
	for (unsigned int i = 0; i < ri->nmembers; i++)
		if (ri->members[i].role == role)
			return !ri->members[i].present || ri->members[i].failed;
	return true;
}

/* (I2) The devices the workload's array is assembled from, into @devs: the fault
 * devices, each wrapped (eio-cut: @cut_at set) so that one member fails k writes
 * before the cut (k by seed, 0..64), or (rebuild-run) the one rebuilt left out. */
static int ip_workload_devs(struct ip_run *x, uint64_t cut_at, struct ip_eio_trig *trig,
			    struct blk_dev **devs)
{
	uint64_t k = ct_mix(x->seed, 20) % 65;

	if (cut_at) {
		*trig = (struct ip_eio_trig){ .dom = x->dom, .target = x->fault[x->eio_role],
					      .at = cut_at > k ? cut_at - k : 1 };
		return ip_eio_wrap(x->fault, x->c->nmem, trig, devs);
	}
	memcpy(devs, x->fault, x->c->nmem * sizeof(devs[0]));
	if (x->r->lifecycle == CT_LC_REBUILD_RUN)
		devs[x->rebuild_role] = NULL;
	return 0;
}

/*
 * (I8) The commit timer: one seed in four runs the workload with a commit
 * interval of 1..50 ms, the rest with the default (5 s), which fires during a
 * workload only when its cut takes seconds (a loaded machine). A timed commit
 * runs on the commit thread beside the operations and can fall between the
 * chunks of one write (a size the write passed through becomes durable).
 */
unsigned int ct_ip_commit_interval_ms(uint64_t seed)
{
	uint64_t r = ct_mix(seed, 23);

	return r % 4 ? 0 : 1 + (unsigned int)((r >> 8) % 50);
}

/* (I2) the workload in the first domain, cut at write @cut_at (0: at the end). */
static int ip_workload(struct ip_run *x, struct ct_model *m, uint64_t cut_at)
{
	struct ip_sync sync = { 0 };
	struct ip_dcinit dci = { 0 };
	const struct ct_ip_cfg *c = x->c;
	struct fs_mount_opts mo = { .data_mode = c->data_mode };
	struct raid_assemble_cfg acfg = { 0 };
	struct ct_ip_vol v = { .cut = &x->cut };
	struct raid_array *a = NULL;
	struct blk_dev *top;
	unsigned int progress = 0;
	bool eio_cut = x->r->lifecycle == CT_LC_EIO_CUT && cut_at;
	struct ip_eio_trig trig = { 0 };
	struct blk_dev *devs[16] = { 0 };
	int aim;
	struct ct_ops ops;
	int rc;

	aim = eio_cut ? -1 : ip_aim_pick(c, x->seed, false);
	rc = ip_domain_open(x, aim >= 0 ? 0 : cut_at, 1, aim, x->seed);
	if (rc)
		return rc;
	rc = ip_workload_devs(x, eio_cut ? cut_at : 0, &trig, devs);
	mo.commit_interval_ms = ct_ip_commit_interval_ms(x->seed);
	if (!rc)
		rc = raid_assemble(devs, c->nmem, &acfg, &a);
	if (rc) {
		if (eio_cut && devs[0])
			for (unsigned int i = 0; i < c->nmem; i++)
				free(devs[i]);	/* not their fault devices: closed below */
		ip_domain_close(x, false);
		return rc;
	}
	if (x->r->lifecycle == CT_LC_REBUILD_RUN) {
		x->unowned = x->fault[x->rebuild_role];
		x->fault[x->rebuild_role] = NULL;
	}
	if (c->eio) {
		/* (I6) some blocks of one member fail their writes */
		struct raid_info ri;
		unsigned int k = (unsigned int)(ct_mix(x->seed, 7) % c->nmem);

		raid_info_get(a, &ri);
		for (unsigned int i = 0; i < 64; i++)
			raid_dev_fault_fail_block(x->fault[k], 16 + ct_mix(x->seed, 100 + i) %
						  (ri.member_blocks - 16), false, true);
	}
	top = ip_aim_open(aim, x->seed, x->dom, raid_array_dev(a), x->r);
	rc = fs_mount(top, &mo, &v.fs);
	if (rc) {
		ip_domain_cut(x);
		ip_aim_close_dev(top, raid_array_dev(a));
		raid_abandon(a);
		ip_domain_close(x, true);
		ip_why(x, CT_ERROR, "mount before the workload failed: %s", strerror(-rc));
		return 0;
	}
	ct_fs_ops(&ops, &v);
	ip_sync_start(&sync, x, a);
	ip_dcinit_start(&dci, x, v.fs);
	ct_workload_run_ops(m, &ops, &progress, &x->cut);
	ip_dcinit_join(&dci);
	/* a sync still running goes on (to its aimed cut, or its end), else it
	 * stopped at the cut: it dies with the power, the volume with it */
	ip_sync_join(&sync);
	ip_sync_second(&sync, x);
	if (v.fs) {
		struct fs_info fi;

		fs_info_get(v.fs, &fi);
		x->r->timed = fi.journal.timed_commits > 0; /* (I8) reached */
	}
	x->r->issued = ct_model_issued(m);
	x->r->writes = raid_fault_domain_writes(x->dom);
	x->r->cut_at = aim < 0 && raid_fault_domain_is_cut(x->dom) ? cut_at : 0;
	if (c->eio) {
		/* no power cut: a clean unmount, errors allowed (the member failed, or the
		 * journal aborted and every later operation failed) */
		struct raid_info ri;

		fs_unmount(v.fs);
		raid_info_get(a, &ri);
		for (unsigned int i = 0; i < ri.nmembers; i++)
			if (ri.members[i].failed)
				x->failed_role = ri.members[i].role;
		raid_stop(a);
		ip_domain_close(x, true);
		return 0;
	}
	if ((aim == JG_OP_JNL_CP_FULL || aim == JG_OP_RAID_BITMAP_CLEAR) &&
	    !raid_fault_domain_is_cut(x->dom)) {
		/* The background checkpoint keeps up and bits are cleared after a
		 * delay: the full checkpoint is the unmount's, the clearing of every
		 * bit the stop's; cut during them by the aim (the model is not told
		 * they ended). */
		fs_unmount(v.fs);
		v.fs = NULL;
		if (aim == JG_OP_RAID_BITMAP_CLEAR) {
			ip_aim_close_dev(top, raid_array_dev(a));
			raid_stop(a);
			a = NULL;
		}
	}
	ip_domain_cut(x);
	if (eio_cut) {
		/* (I7) whether the member failed before the cut (the record: at recovery) */
		struct raid_info ri;

		raid_info_get(a, &ri);
		x->r->second = ip_role_failed(&ri, x->eio_role) ? CT_2ND_UNRECORDED : CT_2ND_MISSED;
	}
	if (v.fs)
		fs_abandon(v.fs);
	if (a) {
		ip_aim_close_dev(top, raid_array_dev(a));
		raid_abandon(a);
	}
	ip_domain_close(x, true);
	return 0;
}

/* (I3) a recovery (assembly and mount) cut at one of its first writes, abandoned. */
static int ip_recovery_cut(struct ip_run *x)
{
	struct fs_mount_opts mo = { .data_mode = x->c->data_mode };
	struct raid_assemble_cfg acfg = { 0 };
	struct raid_array *a = NULL;
	struct fs *fs = NULL;
	int rc;

	int aim = ip_aim_pick(x->c, ct_mix(x->seed, 12), true);

	rc = ip_domain_open(x, aim >= 0 ? 0 : 1 + ct_mix(x->seed, 3) % 96, 2, aim,
			    ct_mix(x->seed, 12));
	if (rc)
		return rc;
	rc = raid_assemble(x->fault, x->c->nmem, &acfg, &a);
	if (!rc) {
		struct blk_dev *top = ip_aim_open(aim, ct_mix(x->seed, 12), x->dom,
						  raid_array_dev(a), x->r);

		if (!fs_mount(top, &mo, &fs))
			fs_abandon(fs);
		ip_aim_close_dev(top, raid_array_dev(a));
	}
	ip_domain_cut(x);
	if (!rc)
		raid_abandon(a);
	ip_domain_close(x, !rc);
	return 0;
}

/* Member @role (failed or missing) rebuilt onto a fresh file, which replaces it. */
static int ip_rebuild_plain(struct ip_run *x, unsigned int role, const struct raid_assemble_cfg *acfg)
{
	struct raid_array *a = NULL;
	struct blk_dev *spare = NULL;
	int rc;

	rc = ip_assemble(x, acfg, role, &a);
	if (rc)
		return rc;
	unlink(x->spare);
	rc = raid_dev_uring_open(x->spare, x->c->member_bytes / JG_BLOCK_SIZE, &spare);
	if (!rc) {
		rc = raid_rebuild(a, role, spare, NULL, NULL);
		if (rc == -EINVAL || rc == -EBUSY || rc == -EROFS)
			blk_close(spare);	/* refused before it started: still ours */
	}
	rc = raid_stop(a) ?: rc;
	if (!rc && rename(x->spare, x->members[role]))
		rc = -errno;
	return rc;
}

struct ip_rebuild_cut {
	struct ip_run *x;
	uint64_t at;		/* the row count at which the power goes */
};

static int ip_rebuild_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct ip_rebuild_cut *rc = ctx;

	(void)total;
	if (done >= rc->at && !raid_fault_domain_is_cut(rc->x->dom))
		raid_fault_domain_cut(rc->x->dom);
	return 0;
}

/*
 * (I3) member @role lost and rebuilt onto x->spare, in a fault domain whose power
 * is cut at a row of the rebuild chosen by the seed (or right after it ends),
 * then abandoned. Then what an administrator does: assemble with the new member
 * and, when it is being rebuilt (recorded from the rebuild's first superblock
 * round, rebuild.c (R1)), let the rebuild go on from its mark, as a mount does;
 * if the assembly is refused (a cut before that round: the new member is no
 * member; or resync=full: dirty and degraded), assemble without it (forced:
 * no row was written since the clean stop but the rebuild's own) and rebuild
 * again without faults.
 */
static int ip_rebuild_cut(struct ip_run *x, unsigned int role)
{
	struct raid_assemble_cfg acfg = { 0 }, force = { .force = true };
	struct ip_rebuild_cut cutpos = { .x = x };
	struct blk_dev *devs[16], *spare = NULL, *sf = NULL;
	struct raid_array *a = NULL;
	struct raid_info ri;
	unsigned int k = 0;
	int rc;

	unlink(x->spare);
	rc = raid_dev_uring_open(x->spare, x->c->member_bytes / JG_BLOCK_SIZE, &spare);
	if (rc)
		return rc;
	rc = ip_domain_open(x, 0, 4, -1, 0);
	if (rc) {
		blk_close(spare);
		return rc;
	}
	for (unsigned int i = 0; i < x->c->nmem; i++)
		if (i != role)
			devs[k++] = x->fault[i];
	rc = raid_dev_fault_open(x->dom, spare, &sf);
	if (!rc)
		rc = raid_assemble(devs, k, &acfg, &a);
	if (rc) {
		blk_close(sf);
		blk_close(spare);
		ip_domain_close(x, false);
		return rc;
	}
	raid_info_get(a, &ri);
	cutpos.at = ct_mix(x->seed, 5) % (ri.rows + 1);
	rc = raid_rebuild(a, role, sf, ip_rebuild_progress, &cutpos);
	ip_domain_cut(x);
	raid_abandon(a);		/* the other members' wrappers and the spare's */
	if (rc == -EINVAL || rc == -EBUSY || rc == -EROFS)
		blk_close(sf);		/* refused before it started: still ours */
	for (unsigned int i = 0; i < x->c->nmem; i++)
		if (i != role)
			x->fault[i] = NULL;
	ip_domain_close(x, false);	/* the lost member's wrapper, unused, and the files */
	blk_close(spare);
	/* the new member in the place of the lost one */
	if (rename(x->spare, x->members[role]))
		return -errno;
	rc = ip_assemble(x, &acfg, x->c->nmem, &a);
	if (!rc) {
		/* recorded as being rebuilt: resumed from its mark, as a mount does */
		raid_info_get(a, &ri);
		if (ri.members[role].rebuilding)
			rc = raid_rebuild(a, role, NULL, NULL, NULL);
		return raid_stop(a) ?: rc;
	}
	return ip_rebuild_plain(x, role, &force);
}

/* (I4) the recovering mount, member @skip left out (>= nmem: none): the volume
 * read back into @t. */
static int ip_recover(struct ip_run *x, struct ct_tree *t, unsigned int skip)
{
	struct fs_mount_opts mo = { .data_mode = x->c->data_mode };
	struct raid_assemble_cfg acfg = { 0 };
	struct raid_array *a = NULL;
	struct ct_ip_vol v = { 0 };
	struct ct_ops ops;
	int rc;

	rc = ip_assemble(x, &acfg, skip, &a);
	if (rc) {
		ip_why(x, CT_ERROR, "assembly after the crash failed: %s", strerror(-rc));
		return 1;
	}
	rc = fs_mount(raid_array_dev(a), &mo, &v.fs);
	if (rc) {
		raid_stop(a);
		ip_why(x, CT_ERROR, "mount after the crash failed: %s", strerror(-rc));
		return 1;
	}
	ct_fs_ops(&ops, &v);
	if (t) {
		rc = ct_tree_read_ops(&ops, t);
		if (rc)
			ip_why(x, CT_CONTENT, "reading the volume back: %s", strerror(-rc));
	}
	rc = fs_unmount(v.fs);
	if (rc)
		ip_why(x, CT_ERROR, "clean unmount after recovery failed: %s", strerror(-rc));
	rc = raid_stop(a);
	if (rc)
		ip_why(x, CT_ERROR, "stopping the array after recovery failed: %s", strerror(-rc));
	return 0;
}

/* ------------------------------------------------------------ (I7) two faults */

static void ip_risk_add(struct ip_run *x, const char *path)
{
	while (*path == '/')
		path++;
	for (unsigned int i = 0; i < x->nrisk; i++)
		if (!strcmp(x->risk[i], path))
			return;
	if (x->nrisk == x->riskcap) {
		unsigned int cap = x->riskcap ? 2 * x->riskcap : 32;
		char **n = realloc(x->risk, cap * sizeof(*n));

		if (!n) {
			x->r->waived = true; /* not named: nothing can be compared */
			return;
		}
		x->risk = n;
		x->riskcap = cap;
	}
	x->risk[x->nrisk] = strdup(path);
	if (!x->risk[x->nrisk]) {
		x->r->waived = true;
		return;
	}
	x->nrisk++;
}

/* fs_owners: a file's data, map or xattr at risk names the file, an inode table
 * block its inodes' files (ip_risk_inodes); allocation metadata at risk waives fsck;
 * a directory at risk can change the namespace, a journal block at risk can have
 * dropped a committed transaction at replay (its crc fails): content and fsck are
 * waived (the daemon reports them as metadata at risk). */
static int ip_risk_owner(void *ctx, const struct fs_owner *o)
{
	struct ip_run *x = ctx;

	switch (o->kind) {
	case FS_OWNER_FREE:
	case FS_OWNER_OUTSIDE:
	case FS_OWNER_UNCLAIMED:
	case FS_OWNER_DCSUM:	/* a data block's checksum: its file is named by the data */
		return 0;
	case FS_OWNER_DATA:
	case FS_OWNER_SYMLINK:
	case FS_OWNER_INDIRECT:
	case FS_OWNER_XATTR:
		for (unsigned int i = 0; i < o->npaths; i++)
			ip_risk_add(x, o->paths[i]);
		if (o->paths_left_out)
			x->r->waived = true;
		return 0;
	case FS_OWNER_ITABLE:
		/* the inodes' sizes and maps: their files, named once the tree is read */
		if (x->nitab == sizeof(x->itab) / sizeof(x->itab[0])) {
			x->r->waived = true;
			return 0;
		}
		x->itab[x->nitab][0] = o->ino;
		x->itab[x->nitab++][1] = o->ino_last;
		return 0;
	case FS_OWNER_BBITMAP:
	case FS_OWNER_IBITMAP:
	case FS_OWNER_GDT:
	case FS_OWNER_SUPER:
		x->fsck_waived = true; /* allocation: fsck may find it, no file reads it */
		return 0;
	default:
		x->r->waived = true;
		return 0;
	}
}

/* The files a forced recovery names at risk (as src/fuse/risk.c does): into x->risk. */
static int ip_risk_collect(struct ip_run *x, struct raid_array *a, struct fs *fs)
{
	const size_t max = 65536;
	uint64_t *rows = calloc(max, sizeof(*rows)), more = 0;
	struct fs_extent *ext = NULL;
	struct raid_info ri;
	size_t n = 0, ne = 0;
	bool all = false;
	int rc = 0;

	if (!rows)
		return -ENOMEM;
	raid_rows_at_risk(a, rows, max, &n, &more, &all);
	if (all || more) {
		x->r->waived = true; /* no record of the rows: every file at risk */
		goto out;
	}
	raid_info_get(a, &ri);
	ext = calloc(n ? n : 1, sizeof(*ext));
	if (!ext) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t rb = (uint64_t)ri.ndata * ri.chunk_blocks;

		if (ne && ext[ne - 1].start + ext[ne - 1].count == rows[i] * rb)
			ext[ne - 1].count += rb;
		else
			ext[ne++] = (struct fs_extent){ .start = rows[i] * rb, .count = rb };
	}
	if (ne)
		rc = fs_owners(fs, ext, ne, NULL, ip_risk_owner, x, NULL);
out:
	free(ext);
	free(rows);
	return rc;
}

/* Row 0 (the superblocks of the filesystem and its journal) at risk in @a. */
static bool ip_row0_at_risk(struct raid_array *a)
{
	uint64_t row, more;
	size_t n = 0;
	bool all = false;

	raid_rows_at_risk(a, &row, 1, &n, &more, &all);
	return all || (n && row == 0);
}

/* The files of @t whose inodes lie in an inode table row at risk: named at risk. */
static void ip_risk_inodes(struct ip_run *x, struct ct_ip_vol *v, const struct ct_tree *t)
{
	for (unsigned int i = 0; i < t->n && x->nitab; i++) {
		uint64_t ino;

		if (ip_ino(v, t->files[i].path, &ino))
			continue;
		for (unsigned int k = 0; k < x->nitab; k++)
			if (ino >= x->itab[k][0] && ino <= x->itab[k][1])
				ip_risk_add(x, t->files[i].path);
	}
}

/*
 * (I7) The recovering mount after two faults, member @skip left out (>= nmem:
 * none): without force as a mount does, or, refused as dirty and degraded (the
 * write hole), with force as `mount -o force` does, the files at risk named. The
 * role the array holds failed or missing then is rebuilt before the checks.
 */
static int ip_recover_two(struct ip_run *x, struct ct_tree *t, unsigned int skip)
{
	struct fs_mount_opts mo = { .data_mode = x->c->data_mode };
	struct raid_assemble_cfg acfg = { 0 };
	struct raid_array *a = NULL;
	struct ct_ip_vol v = { 0 };
	struct raid_info ri;
	struct ct_ops ops;
	int rc;

	if (x->r->lifecycle == CT_LC_EIO_CUT ||
	    (x->r->lifecycle == CT_LC_READD_RUN && x->r->second != CT_2ND_MISSED)) {
		/* the failed member back (a transient fault): stale when its failure
		 * was recorded, and then refused: assembled without it, as the
		 * refusal says (readd-run: until the readd's first round names it
		 * being rebuilt) */
		unsigned int role = x->r->lifecycle == CT_LC_EIO_CUT ? x->eio_role
								     : x->rebuild_role;
		struct raid_assemble_cfg probe = { .force = true, .readonly = true,
						   .no_resync = true };

		rc = ip_assemble(x, &probe, x->c->nmem, &a);
		if (!rc) {
			raid_info_get(a, &ri);
			raid_stop(a);
			a = NULL;
		}
		if (rc == -EUCLEAN || (!rc && ip_role_failed(&ri, role))) {
			if (x->r->lifecycle == CT_LC_EIO_CUT) {
				if (x->r->second != CT_2ND_UNRECORDED)
					ip_why(x, CT_ERROR,
					       "member %u recorded failed, not failed at the cut",
					       role);
				x->r->second = CT_2ND_RECORDED;
			}
			skip = role;
		}
	}
	rc = ip_assemble(x, &acfg, skip, &a);
	if (rc == -EINVAL && x->r->lifecycle == CT_LC_REBUILD_RUN && skip >= x->c->nmem) {
		/* the cut before the rebuild's first superblock round: the new member
		 * is blank (no member), and refused: left out */
		skip = x->rebuild_role;
		rc = ip_assemble(x, &acfg, skip, &a);
	}
	if (rc == -EUCLEAN) {
		x->r->forced = true;
		acfg.force = true;
		rc = ip_assemble(x, &acfg, skip, &a);
	}
	if (rc) {
		ip_why(x, CT_ERROR, "assembly after the crash%s failed: %s",
		       acfg.force ? " (forced)" : "", strerror(-rc));
		return 1;
	}
	raid_info_get(a, &ri);
	for (unsigned int r = 0; r < x->c->nmem; r++)
		if (ip_role_failed(&ri, r))
			x->failed_role = r;
	rc = fs_mount(raid_array_dev(a), &mo, &v.fs);
	if (rc && acfg.force && ip_row0_at_risk(a)) {
		/* the write hole in the row of the filesystem's and the journal's
		 * superblocks: the forced mount may fail (fsck's to repair) */
		raid_stop(a);
		x->r->waived = true;
		x->r->mount_failed = true;
		return 1;
	}
	if (rc) {
		raid_stop(a);
		ip_why(x, CT_ERROR, "mount after the crash%s failed: %s",
		       acfg.force ? " (forced)" : "", strerror(-rc));
		return 1;
	}
	if (acfg.force) {
		rc = ip_risk_collect(x, a, v.fs);
		if (rc)
			ip_why(x, CT_ERROR, "naming the files at risk: %s", strerror(-rc));
	}
	ct_fs_ops(&ops, &v);
	rc = ct_tree_read_ops(&ops, t);
	if (rc && !x->r->waived)
		ip_why(x, CT_CONTENT, "reading the volume back: %s", strerror(-rc));
	ip_risk_inodes(x, &v, t);
	x->r->risk_files = x->nrisk;
	rc = fs_unmount(v.fs);
	if (rc)
		ip_why(x, CT_ERROR, "clean unmount after recovery failed: %s", strerror(-rc));
	rc = raid_stop(a);
	if (rc)
		ip_why(x, CT_ERROR, "stopping the array after recovery failed: %s", strerror(-rc));
	return 0;
}

/* (I3) before the recovering mount. */
static int ip_lifecycle_before(struct ip_run *x)
{
	struct raid_assemble_cfg acfg = { 0 };
	struct raid_assemble_cfg probe = { .force = true, .readonly = true, .no_resync = true };
	struct raid_array *a = NULL;
	struct raid_info ri;
	int rc;

	switch (x->r->lifecycle) {
	case CT_LC_STOP_FIRST:
		/* assembled (its resync runs), then stopped: the mount never came */
		rc = ip_assemble(x, &acfg, x->c->nmem, &a);
		if (rc) {
			ip_why(x, CT_ERROR, "assembly after the crash failed: %s", strerror(-rc));
			return 1;
		}
		rc = raid_stop(a);
		if (rc)
			ip_why(x, CT_ERROR, "stop after assembly failed: %s", strerror(-rc));
		return 0;
	case CT_LC_FSCK_FIRST: {
		struct fsck_opts fo = { .repair = true };
		struct fsck_report rep = { 0 };

		rc = ip_assemble(x, &acfg, x->c->nmem, &a);
		if (rc) {
			ip_why(x, CT_ERROR, "assembly after the crash failed: %s", strerror(-rc));
			return 1;
		}
		rc = fs_fsck(raid_array_dev(a), &fo, &rep);
		if (rc >= 8)
			ip_why(x, CT_ERROR, "offline fsck -y: exit %d", rc);
		else if (rc)
			ip_why(x, CT_FSCK, "offline fsck -y before the mount: %llu problems",
			       (unsigned long long)rep.problems_found);
		rc = raid_stop(a);
		if (rc)
			ip_why(x, CT_ERROR, "stop after fsck failed: %s", strerror(-rc));
		return 0;
	}
	case CT_LC_SCRUB_FIRST: {
		struct raid_resync_report rep;
		int64_t mism;

		/* as `jgrfs scrub --repair`: refused while the journal is pending */
		rc = ip_assemble(x, &probe, x->c->nmem, &a);
		if (rc) {
			ip_why(x, CT_ERROR, "assembly after the crash failed: %s", strerror(-rc));
			return 1;
		}
		raid_info_get(a, &ri);
		raid_stop(a);
		if (ri.jnl_pending)
			return 0;
		rc = ip_assemble(x, &acfg, x->c->nmem, &a);
		if (rc) {
			ip_why(x, CT_ERROR, "assembly after the crash failed: %s", strerror(-rc));
			return 1;
		}
		mism = raid_scrub(a, true, NULL, NULL, &rep);
		if (mism < 0)
			ip_why(x, CT_ERROR, "offline scrub --repair: %s", strerror((int)-mism));
		else if (mism)
			ip_why(x, CT_SCRUB, "offline scrub --repair after the resync: %lld rows "
			       "mismatched", (long long)mism);
		rc = raid_stop(a);
		if (rc)
			ip_why(x, CT_ERROR, "stop after scrub failed: %s", strerror(-rc));
		return 0;
	}
	case CT_LC_RECOVERY_CUT:
		rc = ip_recovery_cut(x);
		if (rc)
			ip_why(x, CT_ERROR, "recovery in a fault domain: %s", strerror(-rc));
		return rc ? 1 : 0;
	case CT_LC_REBUILD_CUT:
		/* recovered first: a dirty array does not rebuild */
		if (ip_recover(x, NULL, x->c->nmem))
			return 1;
		rc = ip_rebuild_cut(x, (unsigned int)(ct_mix(x->seed, 6) % x->c->nmem));
		if (rc)
			ip_why(x, CT_ERROR, "rebuild after a cut during rebuild: %s", strerror(-rc));
		return rc ? 1 : 0;
	default:
		return 0;
	}
}

/* The lost member (CT_LC_LOST_MEMBER): read-write, degraded, every file right. */
static void ip_lost_member(struct ip_run *x, const struct ct_tree *t)
{
	struct fs_mount_opts mo = { .data_mode = x->c->data_mode };
	struct raid_assemble_cfg acfg = { 0 };
	unsigned int role = (unsigned int)(ct_mix(x->seed, 8) % x->c->nmem);
	struct raid_array *a = NULL;
	struct fs *fs = NULL;
	char why[256] = "";
	int rc;

	rc = ip_assemble(x, &acfg, role, &a);
	if (rc) {
		ip_why(x, CT_HOLE, "member %u lost after recovery: assembly failed: %s", role,
		       strerror(-rc));
		return;
	}
	rc = fs_mount(raid_array_dev(a), &mo, &fs);
	if (rc) {
		ip_why(x, CT_HOLE, "member %u lost after recovery: mount failed: %s", role,
		       strerror(-rc));
	} else {
		struct ct_ip_vol v = { fs, NULL };
		struct ct_tree d = { 0 };
		struct ct_ops ops;

		ct_fs_ops(&ops, &v);
		rc = ct_tree_read_ops(&ops, &d);
		if (rc)
			ip_why(x, CT_HOLE, "member %u lost after recovery: %s", role, strerror(-rc));
		else if (d.n != t->n)
			ip_why(x, CT_HOLE, "member %u lost after recovery: %u files, %u with every "
			       "member", role, d.n, t->n);
		else if (ct_fs_read_tree(fs, t, why))
			ip_why(x, CT_HOLE, "member %u lost after recovery: %s", role, why);
		ct_tree_free(&d);
		rc = fs_unmount(fs);
		if (rc)
			ip_why(x, CT_ERROR, "degraded unmount failed: %s", strerror(-rc));
	}
	rc = raid_stop(a);
	if (rc)
		ip_why(x, CT_ERROR, "degraded stop failed: %s", strerror(-rc));
}

/* The checks on a stopped volume after recovery: fsck, scrub, the write hole. */
static void ip_checks(struct ip_run *x, const struct ct_tree *t)
{
	struct raid_assemble_cfg acfg = { 0 };
	struct fsck_opts fo = { .repair = false };
	struct fsck_report rep = { 0 };
	struct raid_resync_report srep;
	struct raid_array *a = NULL;
	int64_t mism;
	int rc;

	rc = ip_assemble(x, &acfg, x->c->nmem, &a);
	if (rc) {
		ip_why(x, CT_ERROR, "assembly for the checks failed: %s", strerror(-rc));
		return;
	}
	rc = fs_fsck(raid_array_dev(a), &fo, &rep);
	if (rc >= 8)
		ip_why(x, CT_ERROR, "fsck -n: exit %d", rc);
	else if (rc && !x->r->waived && !x->fsck_waived)
		ip_why(x, CT_FSCK, "fsck -n: %llu problems", (unsigned long long)rep.problems_found);
	mism = raid_scrub(a, false, NULL, NULL, &srep);
	if (mism < 0)
		ip_why(x, CT_ERROR, "scrub: %s", strerror((int)-mism));
	else if (mism)
		ip_why(x, CT_SCRUB, "scrub: %lld rows with parity mismatches", (long long)mism);
	rc = raid_stop(a);
	if (rc)
		ip_why(x, CT_ERROR, "stop after the scrub failed: %s", strerror(-rc));
	for (unsigned int skip = 0; skip < x->c->nmem; skip++) {
		char why[256] = "";

		rc = ct_hole_check(x->members, x->c->nmem, skip, t, why);
		if (rc) {
			if (rc == 1)
				ip_why(x, CT_HOLE, "%s", why);
			else
				ip_why(x, CT_ERROR, "write-hole check: %s", strerror(-rc));
			break;
		}
	}
}

/* (I5) The initial sync cut by the crash resumes from its mark and ends in sync. */
static void ip_sync_finish(struct ip_run *x)
{
	struct raid_assemble_cfg acfg = { 0 };
	struct raid_array *a = NULL;
	struct raid_info ri;
	int64_t mism;
	int rc;

	rc = ip_assemble(x, &acfg, x->c->nmem, &a);
	if (rc) {
		ip_why(x, CT_ERROR, "assembly to resume the initial sync failed: %s", strerror(-rc));
		return;
	}
	rc = raid_initial_sync(a, NULL, NULL);
	raid_info_get(a, &ri);
	if (rc || ri.sync_rows != ri.rows)
		ip_why(x, CT_ERROR, "the resumed initial sync ended at row %llu of %llu: %s",
		       (unsigned long long)ri.sync_rows, (unsigned long long)ri.rows,
		       rc ? strerror(-rc) : "short of the end");
	mism = raid_scrub(a, false, NULL, NULL, NULL);
	if (mism < 0)
		ip_why(x, CT_ERROR, "scrub after the initial sync: %s", strerror((int)-mism));
	else if (mism)
		ip_why(x, CT_SCRUB, "scrub after the resumed initial sync: %lld rows mismatched",
		       (long long)mism);
	rc = raid_stop(a);
	if (rc)
		ip_why(x, CT_ERROR, "stop after the initial sync failed: %s", strerror(-rc));
}

/*
 * An iteration's member file, at its end: removed, unless the iteration found
 * damage or could not run. Then it is kept as PATH.seed-SEED (the next
 * iteration reuses PATH), its state after the recovery and the checks, and the
 * log says so: a failure that timing made (the cut falls on the n-th member
 * write, and which write that is depends on the threads) may not come back
 * when the seed is run again.
 */
static void ip_member_done(struct ip_run *x, const char *path)
{
	char kept[PATH_MAX + 32];

	if (!x->r->why[0]) {
		unlink(path);
		return;
	}
	snprintf(kept, sizeof(kept), "%s.seed-%016llx", path, (unsigned long long)x->seed);
	if (rename(path, kept) == 0 && x->c->log)
		fprintf(x->c->log, "seed %016llx: kept %s\n", (unsigned long long)x->seed, kept);
}

/* (I7) rebuild-run: the rebuild the cut stopped resumes from its mark, as a mount
 * resumes it, and ends with the member whole. */
static void ip_rebuild_resume(struct ip_run *x)
{
	struct raid_assemble_cfg acfg = { .force = x->r->forced };
	unsigned int role = x->rebuild_role;
	struct raid_array *a = NULL;
	struct raid_info ri;
	int rc;

	rc = ip_assemble(x, &acfg, x->c->nmem, &a);
	if (rc) {
		ip_why(x, CT_ERROR, "assembly to resume the rebuild failed: %s", strerror(-rc));
		return;
	}
	raid_info_get(a, &ri);
	for (unsigned int i = 0; i < ri.nmembers; i++)
		if (ri.members[i].role == role && ri.members[i].rebuilding)
			rc = raid_rebuild(a, role, NULL, NULL, NULL);
	if (rc)
		ip_why(x, CT_ERROR, "the resumed rebuild of member %u: %s", role, strerror(-rc));
	rc = raid_stop(a);
	if (rc)
		ip_why(x, CT_ERROR, "stop after the resumed rebuild failed: %s", strerror(-rc));
}

/* (I7) lost-before: the member missing at the recovering mount (nmem: none). */
static unsigned int ip_lost_before(struct ip_run *x)
{
	if (x->r->lifecycle != CT_LC_LOST_BEFORE)
		return x->c->nmem;
	x->r->second = CT_2ND_LOST;
	return (unsigned int)(ct_mix(x->seed, 8) % x->c->nmem);
}

int ct_ip_iteration(const struct ct_ip_cfg *c, uint64_t seed, struct ct_ip_result *r)
{
	struct ip_run x = { .c = c, .seed = seed, .r = r, .failed_role = c->nmem,
			    .eio_role = (unsigned int)(ct_mix(seed, 7) % c->nmem),
			    .rebuild_role = (unsigned int)(ct_mix(seed, 21) % c->nmem) };
	struct ct_model *m = NULL;
	bool two;
	struct ct_tree t = { 0 };
	uint64_t cut_at = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->aimed = -1;
	r->lifecycle = c->lifecycle < CT_LC_COUNT ? c->lifecycle :
		       (enum ct_lifecycle)(ct_mix(seed, 9) % CT_LC_COUNT);
	if (c->eio)
		r->lifecycle = CT_LC_REMOUNT;
	/* an aimed cut falls at no write count, which eio-cut's failure is placed by */
	if (c->lifecycle >= CT_LC_COUNT && c->aim && r->lifecycle == CT_LC_EIO_CUT)
		r->lifecycle = CT_LC_REMOUNT;
	two = r->lifecycle == CT_LC_EIO_CUT || r->lifecycle == CT_LC_LOST_BEFORE ||
	      r->lifecycle == CT_LC_REBUILD_RUN || r->lifecycle == CT_LC_READD_RUN;
	for (unsigned int i = 0; i < c->nmem; i++) {
		x.members[i] = malloc(PATH_MAX);
		if (!x.members[i]) {
			rc = -ENOMEM;
			goto out;
		}
		snprintf(x.members[i], PATH_MAX, "%.3900s/m%u.img", c->dir, i);
	}
	snprintf(x.spare, sizeof(x.spare), "%.3900s/spare.img", c->dir);
	rc = ct_model_new(seed, c->ops, &m);
	if (!rc)
		rc = ip_make(&x);
	if (rc)
		goto out;
	if (c->cut_span && !c->eio)
		cut_at = c->cut_at ? c->cut_at : 1 + ct_mix(seed, 1) % c->cut_span;
	rc = ip_workload(&x, m, cut_at);
	if (rc || c->calibrate)
		goto out;
	if (r->why[0])
		goto out;
	/* (I7) rebuild-run: the new member in the place of the one it replaces */
	if (r->second != CT_2ND_NONE && r->lifecycle == CT_LC_REBUILD_RUN &&
	    rename(x.spare, x.members[x.rebuild_role])) {
		rc = -errno;
		goto out;
	}
	if (two ? !ip_recover_two(&x, &t, ip_lost_before(&x)) :
		  !ip_lifecycle_before(&x) && !ip_recover(&x, &t, x.failed_role)) {
		char why[256] = "";

		if (r->why[0] || r->waived)
			; /* nothing to compare (the reason is given) */
		else if (ct_model_check_skip(m, &t, (const char *const *)x.risk, x.nrisk, why)) {
			ip_why(&x, CT_CONTENT, "%s", why);
			if (c->log) {
				fprintf(c->log, "seed %016llx: content check failed: %s\n",
					(unsigned long long)seed, why);
				ct_model_dump(m, &t, c->log);
			}
		}
		if (x.failed_role < c->nmem) {
			/* (I6) read back degraded above; now the member rebuilt */
			/* a forced array stays dirty until a rebuild has run: forced again,
			 * as the forced mount's rebuild runs */
			rc = ip_rebuild_plain(&x, x.failed_role,
					      &(struct raid_assemble_cfg){ .force = r->forced });
			if (rc) {
				ip_why(&x, CT_ERROR, "rebuild of failed member %u: %s", x.failed_role,
				       strerror(-rc));
				rc = 0;
				goto out;
			}
		}
		if ((r->lifecycle == CT_LC_REBUILD_RUN || r->lifecycle == CT_LC_READD_RUN) &&
		    x.failed_role == c->nmem)
			ip_rebuild_resume(&x);
		ip_checks(&x, &t);
		if (r->lifecycle == CT_LC_INITIAL_SYNC)
			ip_sync_finish(&x);
		/* waived: the volume may hold what the write hole left (a directory),
		 * which only fsck -y repairs: a degraded mount of it proves nothing */
		if (r->lifecycle == CT_LC_LOST_MEMBER || r->lifecycle == CT_LC_INITIAL_SYNC ||
		    ((r->lifecycle == CT_LC_REBUILD_RUN || r->lifecycle == CT_LC_READD_RUN) &&
		     !r->waived))
			ip_lost_member(&x, &t);
	}
out:
	for (unsigned int i = 0; i < x.nrisk; i++)
		free(x.risk[i]);
	free(x.risk);
	ct_tree_free(&t);
	ct_model_free(m);
	for (unsigned int i = 0; i < c->nmem; i++) {
		if (x.members[i])
			ip_member_done(&x, x.members[i]);
		free(x.members[i]);
	}
	unlink(x.spare);
	return rc;
}
