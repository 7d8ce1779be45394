// SPDX-License-Identifier: MIT
/*
 * tests/faults/test_fault_sweep.c - every failure the filesystem, the journal
 * and the array can meet, met once, in turn, during a scripted workload (as
 * SQLite tests every allocation failure).
 *
 * The binary is linked with -Wl,--wrap (meson.build) for the allocator and the
 * journal calls that can refuse a block; the members sit under a wrapper that
 * can fail one request. A first pass counts the calls of each kind the
 * workload makes; then for each kind and each n, a new volume runs the
 * workload with the n-th call of that kind failing once:
 *
 *   alloc     malloc, calloc, realloc, posix_memalign, aligned_alloc, strdup
 *             in the filesystem, journal or array: NULL (ENOMEM)
 *   nospc     jnl_handle_dirty_data, _meta, _revoke: -ENOSPC (the declare
 *             footprint or the log reservation is exhausted)
 *   mread     a member read: -EIO (a latent sector error)
 *   mwrite    a member write: -EIO (the member fails)
 *
 * The workload stops at its first step that fails. Then:
 *   - every block and size the model holds reads back, without EIO: what
 *     succeeded (with its fsync) is there, and what failed is old or new;
 *   - after an unmount, fsck -n finds nothing, a new mount reads the same,
 *     and a scrub of a whole array finds every row's parity right;
 *   - with the cut variant, the power is cut right where the fault was met
 *     (the next member request): recovery, fsck -n and the model as above,
 *     with only what an fsync acknowledged required.
 *
 * Each run says what it reached: the table printed at the end counts, by
 * kind and by the function that made the call, the faults injected and the
 * steps they failed; a kind never reached fails the test.
 *
 * JGRFS_FAULT_STRIDE=k injects at every k-th call only (make test: a sample;
 * make faults-long: 1, every call). JGRFS_TEST_QUICK=1: a thinner sample.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "jgrfs/fs.h"
#include "jgrfs/journal.h"
#include "jgrfs/raid.h"

/* ----------------------------------------------------------- the faults */

enum sw_kind { SW_ALLOC, SW_NOSPC, SW_MREAD, SW_MWRITE, SW__KINDS };
static const char *const sw_kind_name[SW__KINDS] = { "alloc", "nospc", "mread", "mwrite" };

#define SW_SITES 512

/* One call site (the return address of the call that was failed). */
struct sw_site {
	enum sw_kind kind;
	uintptr_t pc;
	unsigned int injected, step_failed;
};

static struct {
	pthread_mutex_t lock;
	bool counting;			/* count calls (the workload runs) */
	uint64_t calls[SW__KINDS];	/* calls seen since counting began */
	bool armed;
	enum sw_kind kind;
	uint64_t nth;			/* the call (0-based) that fails */
	bool fired;
	uintptr_t fired_pc;
	bool cut;			/* the cut variant of this run */
	bool cut_pending;		/* ... cut at the next member request */
	struct raid_fault_domain *dom;
	struct sw_site sites[SW_SITES];
	unsigned int nsites;
	uint64_t reached[SW__KINDS];	/* faults injected, by kind, over the whole run */
	unsigned int damage;		/* runs that found damage */
} sw = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Set while a request runs below the wrapper: the fault and memory devices
 * are the test's, not the product's; their allocations never fail. */
static __thread bool sw_below;

void __sanitizer_symbolize_pc(void *pc, const char *fmt, char *out_buf, size_t out_buf_size)
	__attribute__((weak));
/* Should this call of @kind fail? Counts it. */
static bool sw_hit(enum sw_kind kind, uintptr_t pc)
{
	bool hit = false;

	if (!__atomic_load_n(&sw.counting, __ATOMIC_ACQUIRE) || sw_below)
		return false;
	pthread_mutex_lock(&sw.lock);
	if (sw.counting) {
		uint64_t n = sw.calls[kind]++;

		if (sw.armed && !sw.fired && sw.kind == kind && n == sw.nth) {
			sw.fired_pc = pc;
			__atomic_store_n(&sw.fired, true, __ATOMIC_RELEASE);
			hit = true;
		}
	}
	pthread_mutex_unlock(&sw.lock);
	return hit;
}

/* The linker's names (--wrap), not ours. */
void *__real_jg_alloc_blocks(size_t n);
void *__wrap_jg_alloc_blocks(size_t n);
void *__real_jg_zalloc_blocks(size_t n);
void *__wrap_jg_zalloc_blocks(size_t n);
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__wrap_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);
int __real_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block);
int __wrap_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block);
int __real_jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block);
int __wrap_jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block);
int __real_jnl_handle_revoke(struct jnl_handle *h, uint64_t blkno);
int __wrap_jnl_handle_revoke(struct jnl_handle *h, uint64_t blkno);

#define SW_PC ((uintptr_t)__builtin_return_address(0))

/*
 * The inodes' clock stands still: a write changes mtime (a metadata block to
 * log) only when the coarse clock has moved, which would make the count of
 * calls depend on the moment.
 */
int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	if (id != CLOCK_REALTIME_COARSE)
		return __real_clock_gettime(id, ts);
	ts->tv_sec = 1700000000;
	ts->tv_nsec = 0;
	return 0;
}

/* Block buffers: the caller of jg_alloc_blocks is the place, not the helper. */
void *__wrap_jg_alloc_blocks(size_t n)
{
	void *p;

	if (sw_hit(SW_ALLOC, SW_PC))
		return NULL;
	sw_below = true; /* its posix_memalign is the same call */
	p = __real_jg_alloc_blocks(n);
	sw_below = false;
	return p;
}

void *__wrap_jg_zalloc_blocks(size_t n)
{
	void *p;

	if (sw_hit(SW_ALLOC, SW_PC))
		return NULL;
	sw_below = true;
	p = __real_jg_zalloc_blocks(n);
	sw_below = false;
	return p;
}

void *__wrap_malloc(size_t n)
{
	return sw_hit(SW_ALLOC, SW_PC) ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	return sw_hit(SW_ALLOC, SW_PC) ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	return sw_hit(SW_ALLOC, SW_PC) ? NULL : __real_realloc(p, n);
}

int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	return sw_hit(SW_ALLOC, SW_PC) ? ENOMEM : __real_posix_memalign(p, a, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	return sw_hit(SW_ALLOC, SW_PC) ? NULL : __real_aligned_alloc(a, n);
}

char *__wrap_strdup(const char *s)
{
	return sw_hit(SW_ALLOC, SW_PC) ? NULL : __real_strdup(s);
}

int __wrap_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block)
{
	if (sw_hit(SW_NOSPC, SW_PC))
		return -ENOSPC;
	return __real_jnl_handle_dirty_data(h, blkno, block);
}

int __wrap_jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block)
{
	if (sw_hit(SW_NOSPC, SW_PC))
		return -ENOSPC;
	return __real_jnl_handle_dirty_meta(h, blkno, block);
}

int __wrap_jnl_handle_revoke(struct jnl_handle *h, uint64_t blkno)
{
	if (sw_hit(SW_NOSPC, SW_PC))
		return -ENOSPC;
	return __real_jnl_handle_revoke(h, blkno);
}

/*
 * A member: fails the chosen read or write request (-EIO), and for the cut
 * variant cuts the power of the fault domain below before passing on the
 * first request after the fault. It does not close its lower device.
 */
struct sw_member {
	struct blk_dev dev;
	struct blk_dev *lower;
};

static int sw_member_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct sw_member *m = (struct sw_member *)d;
	bool failed[64] = { false };
	unsigned int i, nfail = 0;
	int rc;

	if (__atomic_load_n(&sw.fired, __ATOMIC_ACQUIRE) &&
	    __atomic_exchange_n(&sw.cut_pending, false, __ATOMIC_ACQ_REL)) {
		sw_below = true; /* the cut's own allocations are the test's */
		raid_fault_domain_cut(sw.dom);
		sw_below = false;
	}
	for (i = 0; i < n && i < 64; i++) {
		enum sw_kind k = r[i].op == BLK_OP_READ ? SW_MREAD : SW_MWRITE;

		if (r[i].op != BLK_OP_FLUSH && sw_hit(k, 0))
			failed[i] = true, nfail++;
	}
	sw_below = true;
	if (!nfail) {
		rc = blk_submit(m->lower, r, n);
		sw_below = false;
		return rc;
	}
	rc = 0;
	for (i = 0; i < n; i++) {
		if (i < 64 && failed[i]) {
			r[i].result = -EIO;
		} else {
			int one = blk_submit(m->lower, &r[i], 1);

			if (one && !rc)
				rc = one;
		}
	}
	sw_below = false;
	return rc ? rc : -EIO;
}

static int sw_member_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	return blk_ctl(((struct sw_member *)d)->lower, cmd, arg);
}

static void sw_member_close(struct blk_dev *d)
{
	free(d);
}

static const struct blk_dev_ops sw_member_ops = {
	.submit = sw_member_submit,
	.ctl = sw_member_ctl,
	.close = sw_member_close,
};

static struct blk_dev *sw_member(struct blk_dev *lower)
{
	struct sw_member *m = __real_calloc(1, sizeof(*m));

	assert_non_null(m);
	m->dev.ops = &sw_member_ops;
	m->dev.nblocks = lower->nblocks;
	snprintf(m->dev.name, sizeof(m->dev.name), "%s", lower->name);
	m->lower = lower;
	return &m->dev;
}

/* ------------------------------------------------------------ the model */

#define SW_NMEM 4
#define SW_MEMBER_BLOCKS 3072u	/* 12 MiB each: a 36 MiB RAID5 */
#define SW_CHUNK 4u
#define SW_BS 4096u
#define SW_FBLOCKS 40u		/* blocks a model file tracks */
#define SW_TAGS 4		/* versions a block may hold after a failure */

/* A block's content is made from its tag (0: zeros, a hole). */
static void sw_fill(uint8_t *b, uint32_t tag)
{
	uint64_t s = tag * 0x9e3779b97f4a7c15ull;

	if (!tag) {
		memset(b, 0, SW_BS);
		return;
	}
	for (size_t i = 0; i < SW_BS; i += 8) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		memcpy(b + i, &s, 8);
	}
}

/* What a model file may hold: per block the tags it may read as, and its sizes. */
struct sw_file {
	const char *name;	/* NULL: not made yet */
	uint64_t dir;		/* its directory's inode, for lookups */
	uint64_t ino;
	bool may_be_absent, must_be_absent;
	uint64_t size[SW_TAGS];
	unsigned int nsize;
	uint32_t tag[SW_FBLOCKS][SW_TAGS];
	unsigned int ntag[SW_FBLOCKS];
};

enum { F_A, F_B, F_C, F_B2, F_C2, SW_NFILES };

struct sw_model {
	struct sw_file f[SW_NFILES];
	uint64_t dir;		/* "d" */
	uint32_t next_tag;
	bool acked_only;	/* after a cut: a step not yet synced may be old */
};

static void sw_add_tag(struct sw_file *f, unsigned int blk, uint32_t tag)
{
	for (unsigned int i = 0; i < f->ntag[blk]; i++)
		if (f->tag[blk][i] == tag)
			return;
	assert_true(f->ntag[blk] < SW_TAGS);
	f->tag[blk][f->ntag[blk]++] = tag;
}

static void sw_add_size(struct sw_file *f, uint64_t size)
{
	for (unsigned int i = 0; i < f->nsize; i++)
		if (f->size[i] == size)
			return;
	assert_true(f->nsize < SW_TAGS);
	f->size[f->nsize++] = size;
}

/* A step that succeeded: the new state is the only one. */
static void sw_set_tag(struct sw_file *f, unsigned int blk, uint32_t tag)
{
	f->tag[blk][0] = tag;
	f->ntag[blk] = 1;
}

static void sw_set_size(struct sw_file *f, uint64_t size)
{
	f->size[0] = size;
	f->nsize = 1;
}

/*
 * Did a step end in doubt? It failed (@rc), or the power was cut during it:
 * its writes and syncs after the cut were dropped and reported done, so what
 * it did may or may not be on the volume.
 */
static bool sw_doubt(int rc)
{
	return rc || (sw.cut && __atomic_load_n(&sw.fired, __ATOMIC_ACQUIRE));
}

/* ---------------------------------------------------------- a volume */

struct sw_vol {
	struct blk_dev *mem[SW_NMEM];	/* the members' contents */
	struct blk_dev *fd[SW_NMEM];	/* the fault devices over them */
	struct raid_fault_domain *dom;
	struct raid_array *a;
	struct fs *fs;
	bool data_csum;
	enum jnl_data_mode mode;
};

/* The members made once per configuration, copied into each run's volume. */
static uint8_t *sw_image[SW_NMEM];

static void sw_copy_dev(struct blk_dev *to, uint8_t *img, bool load)
{
	for (uint64_t b = 0; b < SW_MEMBER_BLOCKS; b += 256)
		assert_int_equal(blk_rw(to, load ? BLK_OP_WRITE : BLK_OP_READ, b, 256,
					img + b * SW_BS, 0),
				 0);
}

static void sw_disassemble(struct sw_vol *v, bool abandon);

/* Assemble over the memory members, through a fault domain and the injecting wrapper. */
static int sw_assemble(struct sw_vol *v, bool force)
{
	struct raid_fault_cfg fc = { .seed = 1 + v->mem[0]->nblocks, .tear = true };
	/* no read-ahead thread: the n-th call must name the same place in every run */
	struct raid_assemble_cfg ac = { .force = force, .test.no_prefetch = true };
	struct blk_dev *devs[SW_NMEM];
	int rc;

	assert_int_equal(raid_fault_domain_new(&fc, &v->dom), 0);
	for (unsigned int i = 0; i < SW_NMEM; i++) {
		assert_int_equal(raid_dev_fault_open(v->dom, v->mem[i], &v->fd[i]), 0);
		devs[i] = sw_member(v->fd[i]);
	}
	sw.dom = v->dom;
	rc = raid_assemble(devs, SW_NMEM, &ac, &v->a);
	if (rc) {
		for (unsigned int i = 0; i < SW_NMEM; i++)
			blk_close(devs[i]);
		v->a = NULL;
		sw_disassemble(v, true);
	}
	return rc;
}

/*
 * Stop the array (cleanly or abandoned), free the domain. The fault devices
 * belong to sw_member, which does not close its lower device: close them here.
 */
static void sw_disassemble(struct sw_vol *v, bool abandon)
{
	if (v->a) {
		if (abandon)
			raid_abandon(v->a);
		else
			raid_stop(v->a);
	}
	v->a = NULL;
	for (unsigned int i = 0; i < SW_NMEM; i++) {
		if (v->fd[i])
			blk_close(v->fd[i]);
		v->fd[i] = NULL;
	}
	if (v->dom)
		raid_fault_domain_free(v->dom);
	v->dom = NULL;
	sw.dom = NULL;
}

static int sw_mount(struct sw_vol *v)
{
	struct fs_mount_opts o = { .data_mode = v->mode, .no_commit_thread = true };

	v->fs = NULL;
	return fs_mount(raid_array_dev(v->a), &o, &v->fs);
}

static void sw_vol_new(struct sw_vol *v)
{
	for (unsigned int i = 0; i < SW_NMEM; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, SW_MEMBER_BLOCKS, &v->mem[i]), 0);
		sw_copy_dev(v->mem[i], sw_image[i], true);
	}
	assert_int_equal(sw_assemble(v, false), 0);
	assert_int_equal(sw_mount(v), 0);
}

static void sw_vol_free(struct sw_vol *v)
{
	if (v->fs)
		fs_abandon(v->fs);
	v->fs = NULL;
	sw_disassemble(v, true);
	for (unsigned int i = 0; i < SW_NMEM; i++)
		blk_close(v->mem[i]);
}

/* ------------------------------------------------------- the workload */

static uint8_t sw_buf[SW_FBLOCKS * SW_BS] __attribute__((aligned(4096)));
static uint8_t sw_rbuf[SW_FBLOCKS * SW_BS] __attribute__((aligned(4096)));
static uint8_t sw_xattr[3000];

/* Write blocks [@first, @first + @n) of @f with new tags; @ok: the step succeeded. */
static int sw_write(struct sw_model *m, struct fs *fs, struct sw_file *f, unsigned int first,
		    unsigned int n)
{
	uint32_t tag0 = m->next_tag;
	bool doubt;
	ssize_t w;
	int rc;

	m->next_tag += n;
	for (unsigned int i = 0; i < n; i++)
		sw_fill(sw_buf + (size_t)i * SW_BS, tag0 + i);
	w = fs_write(fs, f->ino, (uint64_t)first * SW_BS, (size_t)n * SW_BS, sw_buf);
	/* a short count is a failure too: the rest was not written */
	rc = w < 0 ? (int)w : w < (ssize_t)n * SW_BS ? -EIO : 0;
	if (!rc)
		rc = fs_fsync(fs, f->ino, false);
	doubt = sw_doubt(rc);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t end = (uint64_t)(first + i + 1) * SW_BS;

		if (doubt) {
			sw_add_tag(f, first + i, tag0 + i);
			if (end > f->size[0])
				sw_add_size(f, end > (uint64_t)(first + n) * SW_BS ? end
						: (uint64_t)(first + n) * SW_BS);
		} else {
			sw_set_tag(f, first + i, tag0 + i);
		}
	}
	if (!doubt && (uint64_t)(first + n) * SW_BS > f->size[0])
		sw_set_size(f, (uint64_t)(first + n) * SW_BS);
	if (doubt && w > 0 && (uint64_t)first * SW_BS + (uint64_t)w > f->size[0])
		sw_add_size(f, (uint64_t)first * SW_BS + (uint64_t)w);
	return rc;
}

static int sw_create(struct sw_model *m, struct fs *fs, struct sw_file *f, const char *name,
		     uint64_t dir)
{
	struct fs_attr a;
	int rc = fs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &a);

	f->name = name;
	f->dir = dir;
	f->nsize = 1;
	f->size[0] = 0;
	for (unsigned int i = 0; i < SW_FBLOCKS; i++)
		sw_set_tag(f, i, 0);
	f->must_be_absent = false;
	if (rc) {
		/* a create that failed made nothing (unless the power went) */
		f->may_be_absent = true;
		f->must_be_absent = !sw_doubt(0);
		f->ino = 0;
		return rc;
	}
	f->ino = a.ino;
	rc = fs_sync(fs);
	f->may_be_absent = sw_doubt(rc);
	(void)m;
	return rc;
}

/* The size of @f changes to @size (truncate or extend). */
static int sw_truncate(struct fs *fs, struct sw_file *f, uint64_t size)
{
	struct fs_attr at = { .size = size };
	unsigned int keep = (unsigned int)((size + SW_BS - 1) / SW_BS);
	int rc = fs_setattr(fs, f->ino, &at, FS_SET_SIZE, NULL);
	bool doubt;

	if (!rc)
		rc = fs_fsync(fs, f->ino, false);
	doubt = sw_doubt(rc);
	/* blocks past the new end read as zeros if the size comes back up */
	for (unsigned int i = keep; i < SW_FBLOCKS; i++) {
		if (doubt)
			sw_add_tag(f, i, 0);
		else
			sw_set_tag(f, i, 0);
	}
	if (keep && size % SW_BS) {
		/* the tail of the last block is zeroed: tracked as "the old tag" only
		 * for its first part, so the block is left out of the model */
		f->ntag[keep - 1] = 0;
	}
	if (doubt)
		sw_add_size(f, size);
	else
		sw_set_size(f, size);
	return rc;
}

/* A name moves (rename) or is added (link) or goes (unlink): from @from to @to. */
static int sw_names(struct fs *fs, struct sw_file *from, struct sw_file *to, int rc)
{
	if (to) {
		to->name = to->name ? to->name : "";
		to->ino = from->ino;
		to->nsize = from->nsize;
		memcpy(to->size, from->size, sizeof(to->size));
		memcpy(to->tag, from->tag, sizeof(to->tag));
		memcpy(to->ntag, from->ntag, sizeof(to->ntag));
		to->may_be_absent = sw_doubt(rc);
		to->must_be_absent = false;
	}
	(void)fs;
	return rc;
}

#define SW_STEPS 11

/*
 * One step of the workload (@i in 0 .. SW_STEPS-1). Returns 0 or the first
 * error; the model has learned what may be on the volume either way.
 */
static int sw_step(struct sw_model *m, struct fs *fs, unsigned int i)
{
	struct sw_file *a = &m->f[F_A], *b = &m->f[F_B], *c = &m->f[F_C];
	int rc;

	switch (i) {
	case 0: /* overwrite */
		return sw_write(m, fs, a, 2, 4);
	case 1: /* extend */
		return sw_write(m, fs, a, 8, 16);
	case 2: /* create and write a new file */
		rc = sw_create(m, fs, c, "c", FS_ROOT_INO);
		return rc ? rc : sw_write(m, fs, c, 0, 3);
	case 3: /* fallocate past the end (mode 0: the size grows) */
		rc = fs_fallocate(fs, c->ino, 0, 0, 32 * SW_BS);
		if (!rc)
			rc = fs_fsync(fs, c->ino, false);
		if (sw_doubt(rc))
			sw_add_size(c, 32 * SW_BS);
		else
			sw_set_size(c, 32 * SW_BS);
		return rc;
	case 4: /* write into the fallocated range */
		return sw_write(m, fs, c, 20, 6);
	case 5: /* truncate down, then up */
		rc = sw_truncate(fs, a, 5 * SW_BS);
		return rc ? rc : sw_truncate(fs, a, 30 * SW_BS);
	case 6: /* rename into a directory */
		rc = fs_rename(fs, FS_ROOT_INO, "b", m->dir, "b2", 0);
		if (!rc)
			rc = fs_sync(fs);
		sw_names(fs, b, &m->f[F_B2], rc);
		b->may_be_absent = true;
		b->must_be_absent = !sw_doubt(rc);
		return rc;
	case 7: { /* a hard link */
		struct fs_attr at;

		rc = fs_link(fs, c->ino, m->dir, "c2", &at);
		if (!rc)
			rc = fs_sync(fs);
		return sw_names(fs, c, &m->f[F_C2], rc);
	}
	case 8: /* an xattr too large for the inode: a block of its own */
		rc = fs_setxattr(fs, a->ino, "user.big", sw_xattr, sizeof(sw_xattr), 0);
		return rc ? rc : fs_sync(fs);
	case 9: /* unlink a name of a file with two */
		rc = fs_unlink(fs, FS_ROOT_INO, "c");
		if (!rc)
			rc = fs_sync(fs);
		c->may_be_absent = true;
		c->must_be_absent = !sw_doubt(rc);
		return rc;
	case 10: /* delete a file: its blocks freed */
		rc = fs_unlink(fs, m->dir, "b2");
		if (!rc)
			rc = fs_sync(fs);
		m->f[F_B2].may_be_absent = true;
		m->f[F_B2].must_be_absent = !sw_doubt(rc);
		return rc;
	}
	return 0;
}

/* Files made before the faults: "a" of 8 blocks, "b" of 4, directory "d". */
static void sw_setup(struct sw_model *m, struct fs *fs)
{
	struct fs_attr at;

	memset(m, 0, sizeof(*m));
	m->next_tag = 1;
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &at), 0);
	m->dir = at.ino;
	assert_int_equal(sw_create(m, fs, &m->f[F_A], "a", FS_ROOT_INO), 0);
	assert_int_equal(sw_write(m, fs, &m->f[F_A], 0, 8), 0);
	assert_int_equal(sw_create(m, fs, &m->f[F_B], "b", FS_ROOT_INO), 0);
	assert_int_equal(sw_write(m, fs, &m->f[F_B], 0, 4), 0);
	m->f[F_B2].name = "b2";
	m->f[F_B2].dir = m->dir;
	m->f[F_B2].must_be_absent = true;
	m->f[F_B2].may_be_absent = true;
	m->f[F_C].must_be_absent = true;
	m->f[F_C].may_be_absent = true;
	m->f[F_C].name = "c";
	m->f[F_C].dir = FS_ROOT_INO;
	m->f[F_C2].name = "c2";
	m->f[F_C2].dir = m->dir;
	m->f[F_C2].must_be_absent = true;
	m->f[F_C2].may_be_absent = true;
	assert_int_equal(fs_sync(fs), 0);
	for (unsigned int i = 0; i < sizeof(sw_xattr); i++)
		sw_xattr[i] = (uint8_t)(i * 7);
}

/* ------------------------------------------------------------- checks */

/* Has a failure aborted the journal of this mount, leaving it read-only (T1)? */
static bool sw_live_torn(struct fs *fs)
{
	struct fs_info info;

	fs_info_get(fs, &info);
	return info.readonly;
}

/* Does the volume hold what the model allows? Returns NULL or what differs. */
static const char *sw_check(const struct sw_model *m, struct fs *fs, char *why, size_t len)
{
	static uint8_t want[SW_BS] __attribute__((aligned(4096)));

	for (unsigned int fi = 0; fi < SW_NFILES; fi++) {
		const struct sw_file *f = &m->f[fi];
		struct fs_attr at;
		bool size_ok = false;
		ssize_t r;
		int rc;

		if (!f->name)
			continue;
		rc = fs_lookup(fs, f->dir, f->name, &at);
		if (rc == -ENOENT) {
			if (f->may_be_absent)
				continue;
			snprintf(why, len, "%s: gone (acknowledged)", f->name);
			return why;
		}
		if (rc) {
			snprintf(why, len, "%s: lookup %s", f->name, strerror(-rc));
			return why;
		}
		/* live after an abort (T1), the cache may still show the failed
		 * update's new name: the next mount must not */
		if (f->must_be_absent && !sw_live_torn(fs)) {
			snprintf(why, len, "%s: present, its removal was acknowledged", f->name);
			return why;
		}
		if (f->must_be_absent)
			continue;
		if (at.ino != f->ino) {
			snprintf(why, len, "%s: inode %llu, expected %llu", f->name,
				 (unsigned long long)at.ino, (unsigned long long)f->ino);
			return why;
		}
		for (unsigned int s = 0; s < f->nsize; s++)
			size_ok |= at.size == f->size[s];
		if (!size_ok) {
			snprintf(why, len, "%s: size %llu, none of the %u the model allows (%llu...)",
				 f->name, (unsigned long long)at.size, f->nsize,
				 (unsigned long long)f->size[0]);
			return why;
		}
		r = fs_read(fs, f->ino, 0, sizeof(sw_rbuf), sw_rbuf);
		if (r < 0) {
			snprintf(why, len, "%s: read %s", f->name, strerror((int)-r));
			return why;
		}
		for (unsigned int b = 0; b < SW_FBLOCKS && (uint64_t)b * SW_BS < (uint64_t)r; b++) {
			bool ok = !f->ntag[b];

			for (unsigned int t = 0; t < f->ntag[b] && !ok; t++) {
				size_t n = (uint64_t)(b + 1) * SW_BS <= (uint64_t)r
						   ? SW_BS
						   : (size_t)((uint64_t)r - (uint64_t)b * SW_BS);

				sw_fill(want, f->tag[b][t]);
				ok = !memcmp(sw_rbuf + (size_t)b * SW_BS, want, n);
			}
			if (!ok) {
				snprintf(why, len, "%s: block %u holds none of its %u versions", f->name,
					 b, f->ntag[b]);
				return why;
			}
		}
	}
	return NULL;
}

/* fsck -n over the array finds nothing; scrub (whole arrays) finds every row right. */
static const char *sw_offline(struct sw_vol *v, char *why, size_t len)
{
	struct fsck_opts o = { .repair = false };
	struct fsck_report r;
	struct raid_info info;
	int rc = fs_fsck(raid_array_dev(v->a), &o, &r);

	if (rc || r.problems_found) {
		snprintf(why, len, "fsck -n: exit %d, %llu problems", rc,
			 (unsigned long long)r.problems_found);
		return why;
	}
	raid_info_get(v->a, &info);
	if (!info.degraded) {
		struct raid_resync_report rep;
		int64_t mm = raid_scrub(v->a, false, NULL, NULL, &rep);

		if (mm) {
			snprintf(why, len, "scrub: %lld rows mismatched", (long long)mm);
			return why;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ one run */

struct sw_cfg {
	const char *name;
	enum jnl_data_mode mode;
	bool data_csum;
};

struct sw_result {
	int failed_step;	/* -1: every step succeeded */
	int step_rc;
};

static void sw_run_steps(struct sw_model *m, struct fs *fs, struct sw_result *res)
{
	res->failed_step = -1;
	res->step_rc = 0;
	for (unsigned int i = 0; i < SW_STEPS; i++) {
		int rc = sw_step(m, fs, i);

		if (rc) {
			res->failed_step = (int)i;
			res->step_rc = rc;
			return;
		}
		if (sw_doubt(0))
			return; /* the power is gone: nothing more reaches the volume */
	}
}

static void sw_site_name(uintptr_t pc, char *buf, size_t len);

/* A damage found: said at once, counted, the test fails at the end of the sweep. */
static void sw_fail(const struct sw_cfg *c, enum sw_kind k, uint64_t nth, bool cut,
		    const struct sw_result *res, const char *where, const char *why)
{
	char site[256];

	sw.damage++;
	sw_site_name(sw.fired_pc, site, sizeof(site));
	printf("DAMAGE: %s, %s call #%llu failed in %s%s (step %d returned %d): %s: %s\n",
	       c->name, sw_kind_name[k], (unsigned long long)nth, site,
	       cut ? ", power cut there" : "", res->failed_step, res->step_rc, where, why);
	fflush(stdout);
}

static void sw_note_site(enum sw_kind k, uintptr_t pc, bool step_failed)
{
	unsigned int i;

	for (i = 0; i < sw.nsites; i++)
		if (sw.sites[i].kind == k && sw.sites[i].pc == pc)
			break;
	if (i == sw.nsites) {
		if (sw.nsites == SW_SITES)
			return;
		sw.sites[sw.nsites++] = (struct sw_site){ .kind = k, .pc = pc };
	}
	sw.sites[i].injected++;
	sw.sites[i].step_failed += step_failed;
}

/*
 * A new volume, the workload with call @nth of @k failing once (@nth past the
 * count: no fault, the reference run), then the checks. Returns the calls of
 * each kind the workload made (@calls).
 */
static void sw_run(const struct sw_cfg *c, enum sw_kind k, uint64_t nth, bool cut,
		   uint64_t calls[SW__KINDS])
{
	struct sw_vol v = { .mode = c->mode, .data_csum = c->data_csum };
	struct sw_model m;
	struct sw_result res;
	const char *where = cut ? "after recovery" : "live, after the workload";
	char why[256];
	const char *bad;
	int rc;

	sw_vol_new(&v);
	sw_setup(&m, v.fs);

	pthread_mutex_lock(&sw.lock);
	memset(sw.calls, 0, sizeof(sw.calls));
	sw.armed = true;
	sw.kind = k;
	sw.nth = nth;
	sw.fired = false;
	sw.cut = cut;
	sw.cut_pending = cut;
	__atomic_store_n(&sw.counting, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sw.lock);

	sw_run_steps(&m, v.fs, &res);

	pthread_mutex_lock(&sw.lock);
	__atomic_store_n(&sw.counting, false, __ATOMIC_RELEASE);
	sw.cut = false;
	memcpy(calls, sw.calls, sizeof(sw.calls));
	pthread_mutex_unlock(&sw.lock);

	if (sw.fired) {
		sw.reached[k]++;
		sw_note_site(k, sw.fired_pc, res.failed_step >= 0);
	}
	if (!sw.fired && res.failed_step >= 0) {
		sw_fail(c, k, nth, cut, &res, "no fault was injected", "a step failed anyway");
		goto out;
	}
	if (cut && sw.fired) {
		/* the power goes (if no member request came since the fault, now) */
		if (sw.cut_pending)
			raid_fault_domain_cut(sw.dom);
		sw.cut_pending = false;
		fs_abandon(v.fs);
		v.fs = NULL;
		sw_disassemble(&v, true);
		rc = sw_assemble(&v, false);
		if (rc == -EUCLEAN && k == SW_MWRITE)
			goto out; /* a member failed, then the power went: the write hole
				   * is named and the array refused without force */
		if (rc) {
			sw_fail(c, k, nth, cut, &res, "assembly after the cut", strerror(-rc));
			goto out;
		}
		where = "after recovery";
		if ((rc = sw_mount(&v))) {
			bad = strerror(-rc);
			goto bad;
		}
	}
	if ((bad = sw_check(&m, v.fs, why, sizeof(why))))
		goto bad;
	where = "unmount";
	rc = fs_unmount(v.fs);
	v.fs = NULL;
	if (rc && !sw.fired) {
		bad = strerror(-rc);
		goto bad;
	}
	where = "after unmount";
	if ((bad = sw_offline(&v, why, sizeof(why))))
		goto bad;
	where = "after a new mount";
	if ((rc = sw_mount(&v))) {
		bad = strerror(-rc);
		goto bad;
	}
	if ((bad = sw_check(&m, v.fs, why, sizeof(why))))
		goto bad;
	where = "unmount after the new mount";
	rc = fs_unmount(v.fs);
	v.fs = NULL;
	if (rc) {
		bad = strerror(-rc);
		goto bad;
	}
	goto out;
bad:
	sw_fail(c, k, nth, cut, &res, where, bad);
out:
	sw_vol_free(&v);
}

/* The volume every run of @c starts from: made once, kept as member images. */
static void sw_make_image(const struct sw_cfg *c)
{
	struct raid_create_cfg cc = { .level = 5,
				      .chunk_blocks = SW_CHUNK,
				      .resync = RAID_RESYNC_JOURNAL,
				      .assume_clean = true };
	struct fs_mkfs_opts mo = { .label = "sweep", .data_csum = c->data_csum };
	struct blk_dev *mem[SW_NMEM], *keep[SW_NMEM];
	struct raid_array *a;

	for (unsigned int i = 0; i < SW_NMEM; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, SW_MEMBER_BLOCKS, &mem[i]), 0);
		if (!sw_image[i])
			assert_int_equal(__real_posix_memalign((void **)&sw_image[i], 4096,
							       (size_t)SW_MEMBER_BLOCKS * SW_BS),
					 0);
	}
	assert_int_equal(raid_create(mem, SW_NMEM, &cc, false), 0);
	for (unsigned int i = 0; i < SW_NMEM; i++)
		keep[i] = sw_member(mem[i]); /* raid_stop closes these, not mem[] */
	assert_int_equal(raid_assemble(keep, SW_NMEM, NULL, &a), 0);
	assert_int_equal(fs_mkfs(raid_array_dev(a), &mo), 0);
	assert_int_equal(raid_stop(a), 0);
	for (unsigned int i = 0; i < SW_NMEM; i++) {
		sw_copy_dev(mem[i], sw_image[i], false);
		blk_close(mem[i]);
	}
}

/* ------------------------------------------------------------ the sweep */

static unsigned int sw_env(const char *name, unsigned int dflt)
{
	const char *s = getenv(name);

	return s && *s ? (unsigned int)strtoul(s, NULL, 10) : dflt;
}

/* The function holding @pc, by name where the build can say (ASan's symbolizer). */
void __sanitizer_symbolize_pc(void *pc, const char *fmt, char *out_buf, size_t out_buf_size)
	__attribute__((weak));

static void sw_site_name(uintptr_t pc, char *buf, size_t len)
{
	if (!pc) {
		snprintf(buf, len, "(a member request)");
		return;
	}
	if (__sanitizer_symbolize_pc) {
		__sanitizer_symbolize_pc((void *)(pc - 1), "%f %S", buf, len);
		return;
	}
	snprintf(buf, len, "pc %#lx", (unsigned long)pc);
}

static void sw_table(const char *cfg)
{
	char name[256];

	printf("fault sweep, %s: faults injected by kind and call site\n", cfg);
	printf("  %-7s %8s %11s  %s\n", "kind", "injected", "step failed", "site");
	for (unsigned int i = 0; i < sw.nsites; i++) {
		sw_site_name(sw.sites[i].pc, name, sizeof(name));
		printf("  %-7s %8u %11u  %s\n", sw_kind_name[sw.sites[i].kind], sw.sites[i].injected,
		       sw.sites[i].step_failed, name);
	}
	for (unsigned int k = 0; k < SW__KINDS; k++)
		printf("  %-7s %8llu in all\n", sw_kind_name[k], (unsigned long long)sw.reached[k]);
	fflush(stdout);
}

static void sw_sweep(const struct sw_cfg *c)
{
	unsigned int stride = sw_env("JGRFS_FAULT_STRIDE", getenv("JGRFS_TEST_QUICK") ? 29 : 5);
	bool both = stride == 1;
	uint64_t ref[SW__KINDS], again[SW__KINDS], calls[SW__KINDS];
	unsigned int runs = 0;

	memset(sw.reached, 0, sizeof(sw.reached));
	sw.nsites = 0;
	sw.damage = 0;
	sw_make_image(c);
	/* the reference: no fault; the counts must not vary from run to run, or
	 * the n-th call would not name one place */
	sw_run(c, SW_ALLOC, UINT64_MAX, false, ref);
	sw_run(c, SW_ALLOC, UINT64_MAX, false, again);
	for (unsigned int k = 0; k < SW__KINDS; k++) {
		printf("fault sweep, %s: the workload makes %llu %s calls\n", c->name,
		       (unsigned long long)ref[k], sw_kind_name[k]);
		if (ref[k] != again[k])
			fail_msg("%s: %s calls %llu then %llu: the workload is not deterministic",
				 c->name, sw_kind_name[k], (unsigned long long)ref[k],
				 (unsigned long long)again[k]);
	}
	if (getenv("JGRFS_FAULT_ONLY")) {
		/* "CONFIG:KIND:N[:cut]": the one run to look at (with JG_TEST_LOG=1) */
		char cfg[32], kind[16], cut[8] = "";
		unsigned long long n;

		if (sscanf(getenv("JGRFS_FAULT_ONLY"), "%31[^:]:%15[^:]:%llu:%7s", cfg, kind, &n,
			   cut) < 3)
			fail_msg("JGRFS_FAULT_ONLY: CONFIG:KIND:N[:cut]");
		for (unsigned int k = 0; k < SW__KINDS; k++)
			if (!strcmp(cfg, c->name) && !strcmp(kind, sw_kind_name[k]))
				sw_run(c, (enum sw_kind)k, n, !strcmp(cut, "cut"), calls);
		ref[0] = ref[1] = ref[2] = ref[3] = 0;
	}
	for (unsigned int k = 0; k < SW__KINDS; k++) {
		/* an offset per kind, so a sample does not always hit the first call */
		for (uint64_t n = k % stride; n < ref[k]; n += stride) {
			bool cut = (n / stride) % 2;

			sw_run(c, (enum sw_kind)k, n, both ? false : cut, calls);
			runs++;
			if (both) {
				sw_run(c, (enum sw_kind)k, n, true, calls);
				runs++;
			}
		}
	}
	sw_table(c->name);
	printf("fault sweep, %s: %u runs, stride %u, %u with damage\n", c->name, runs, stride,
	       sw.damage);
	for (unsigned int k = 0; k < SW__KINDS; k++)
		if (!sw.reached[k])
			fail_msg("%s: no %s fault was ever injected: the sweep does not reach it",
				 c->name, sw_kind_name[k]);
	for (unsigned int i = 0; i < SW_NMEM; i++) {
		free(sw_image[i]);
		sw_image[i] = NULL;
	}
	if (sw.damage)
		fail_msg("%s: %u runs found damage (DAMAGE lines above)", c->name, sw.damage);
}

static void test_sweep_declared_csum(void **state)
{
	static const struct sw_cfg c = { "declared+csum", JNL_DATA_DECLARED, true };

	(void)state;
	sw_sweep(&c);
}

static void test_sweep_declared(void **state)
{
	static const struct sw_cfg c = { "declared", JNL_DATA_DECLARED, false };

	(void)state;
	sw_sweep(&c);
}

static void test_sweep_ordered(void **state)
{
	static const struct sw_cfg c = { "ordered", JNL_DATA_ORDERED, false };

	(void)state;
	sw_sweep(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sweep_declared_csum),
		cmocka_unit_test(test_sweep_declared),
		cmocka_unit_test(test_sweep_ordered),
	};

	jg_log_set_level(getenv("JG_TEST_LOG") ? JG_LOG_DEBUG : JG_LOG_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
