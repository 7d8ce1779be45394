// SPDX-License-Identifier: MIT
/*
 * src/journal/journal.c - the journal object: format, open, start, close, the
 * journal superblock, jnl_read() and the block-copy map.
 *
 * Life of a journal: jnl_format() at mkfs; at mount jnl_open() verifies the
 * superblock, jnl_recover() empties the log, jnl_start() marks the log in use
 * (superblock start != 0, the declare feature in declared mode) and starts the
 * commit thread; jnl_close() commits, checkpoints and marks the log clean
 * (start = 0, declare off). A superblock with start != 0 at open means the
 * journal was not closed: jnl_needs_recovery().
 *
 * The superblock is always written with FUA (and PREFLUSH where home writes must
 * be durable before the tail moves), so a power cut leaves it whole: old or new.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

/* ---------------------------------------------------------------- names */

static const char *const jnl_mode_names[] = {
	[JNL_DATA_WRITEBACK] = "writeback",
	[JNL_DATA_ORDERED] = "ordered",
	[JNL_DATA_JOURNAL] = "journal",
	[JNL_DATA_DECLARED] = "declared",
};

const char *jnl_data_mode_name(enum jnl_data_mode m)
{
	if ((unsigned int)m >= sizeof(jnl_mode_names) / sizeof(jnl_mode_names[0]))
		return NULL;
	return jnl_mode_names[m];
}

int jnl_data_mode_parse(const char *s, enum jnl_data_mode *out)
{
	for (unsigned int i = 0; s && i < sizeof(jnl_mode_names) / sizeof(jnl_mode_names[0]); i++) {
		if (!strcmp(s, jnl_mode_names[i])) {
			*out = (enum jnl_data_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---------------------------------------------------------------- helpers */

unsigned int jnl_fault_alloc_set(struct jnl *j, unsigned int nth)
{
	return __atomic_exchange_n(&j->fault_alloc_nth, nth, __ATOMIC_RELAXED);
}

bool jnl_fault_alloc(struct jnl *j)
{
	unsigned int n = __atomic_load_n(&j->fault_alloc_nth, __ATOMIC_RELAXED);

	while (n && !__atomic_compare_exchange_n(&j->fault_alloc_nth, &n, n - 1, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return n == 1;
}

int jnl_io(struct jnl *j, struct blk_req *r, unsigned int n)
{
	uint64_t fl = 0;
	bool fua = false;

	/* durability points: each flush and preflush; the FUA writes of a batch,
	 * which complete together, as one */
	for (unsigned int i = 0; i < n; i++) {
		if (r[i].op == BLK_OP_FLUSH)
			fl++;
		if (r[i].flags & BLK_PREFLUSH)
			fl++;
		if (r[i].flags & BLK_FUA)
			fua = true;
	}
	fl += fua;
	if (fl)
		__atomic_add_fetch(&j->flushes, fl, __ATOMIC_RELAXED);
	return blk_submit(j->dev, r, n);
}

void jnl_abort(struct jnl *j, int err, const char *why)
{
	jg_mutex_lock(&j->lock);
	if (!j->aborted)
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "dev=%s aborted: %s failed: %d", j->dev->name, why, err);
	j->aborted = true;
	pthread_cond_broadcast(&j->cond);
	pthread_cond_signal(&j->kick);
	jg_mutex_unlock(&j->lock);
}

struct jnl_txn *jnl_txn_new(uint64_t tid)
{
	struct jnl_txn *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = tid;
	jnl_map_init(&t->blocks);
	t->start_time = jg_now_seconds();
	return t;
}

void jnl_txn_free(struct jnl_txn *t)
{
	if (!t)
		return;
	jnl_map_free(&t->blocks);
	free(t->pend);
	free(t);
}

uint64_t jnl_txn_footprint(const struct jnl *j, const struct jnl_txn *t, uint64_t extra_meta)
{
	uint64_t meta = (t->credits > t->nmeta ? t->credits : t->nmeta) + extra_meta;
	uint64_t ndecl = j->cfg.mode == JNL_DATA_DECLARED ? jnl_declare_blocks_for(t->ndata_pending) : 0;

	return t->declare_written + jnl_log_footprint(ndecl, meta, t->nrevoke);
}

struct jnl_bh *jnl_bh_find(struct jnl *j, uint64_t blkno)
{
	uint64_t *v = jnl_map_find(&j->map, blkno);

	return v ? (struct jnl_bh *)(uintptr_t)*v : NULL;
}

struct jnl_bh *jnl_bh_get(struct jnl *j, uint64_t blkno)
{
	uint64_t *v;
	bool is_new;
	struct jnl_bh *bh;

	if (jnl_map_get(&j->map, blkno, &v, &is_new))
		return NULL;
	if (!is_new)
		return (struct jnl_bh *)(uintptr_t)*v;
	bh = calloc(1, sizeof(*bh));
	if (!bh) {
		jnl_map_del(&j->map, blkno);
		return NULL;
	}
	bh->blkno = blkno;
	*v = (uint64_t)(uintptr_t)bh;
	return bh;
}

void jnl_bh_gc(struct jnl *j, struct jnl_bh *bh)
{
	if (bh->run || bh->com || bh->inflight || bh->cp || bh->cp_listed)
		return;
	jnl_map_del(&j->map, bh->blkno);
	free(bh);
}

int jnl_cp_add(struct jnl *j, struct jnl_bh *bh)
{
	if (bh->cp_listed)
		return 0;
	if (j->cp_n == j->cp_cap) {
		size_t ncap = j->cp_cap ? j->cp_cap * 2 : 256;
		uint64_t *n = realloc(j->cp_list, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		j->cp_list = n;
		j->cp_cap = ncap;
	}
	j->cp_list[j->cp_n++] = bh->blkno;
	bh->cp_listed = true;
	return 0;
}

static int jnl_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void jnl_sort_u64(uint64_t *a, size_t n)
{
	qsort(a, n, sizeof(*a), jnl_u64_cmp);
}

unsigned int jnl_log_reqs(const struct jnl *j, enum blk_op op, uint32_t flags, uint64_t pos,
			  uint64_t n, uint8_t *buf, uint64_t max, struct blk_req *r)
{
	unsigned int nr = 0;

	while (n) {
		uint64_t run = j->nblocks - pos;

		if (run > n)
			run = n;
		if (max && run > max)
			run = max;
		r[nr++] = (struct blk_req){ .op = op, .flags = flags, .blkno = jnl_abs(j, pos),
					    .nblocks = (uint32_t)run, .buf = buf };
		buf += run * JG_BLOCK_SIZE;
		n -= run;
		pos = jnl_next_pos(j, pos, run);
	}
	return nr;
}

static int jnl_wb_cmp(const void *a, const void *b)
{
	const struct jnl_wb *x = a, *y = b;

	return x->blkno < y->blkno ? -1 : x->blkno > y->blkno;
}

void jnl_wb_sort(struct jnl_wb *w, size_t n)
{
	qsort(w, n, sizeof(*w), jnl_wb_cmp);
}

/*
 * Under AddressSanitizer a block of the arena is poisoned while it holds no
 * copy, so that a use of a copy after its free is caught there as it is in a
 * copy allocated alone.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define JNL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define JNL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define JNL_POISON(p, n) ((void)(p), (void)(n))
#define JNL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* One more of *@n is held; *@peak follows. */
static void jnl_count_up(uint64_t *n, uint64_t *peak)
{
	uint64_t v = __atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
	uint64_t p = __atomic_load_n(peak, __ATOMIC_RELAXED);

	while (v > p && !__atomic_compare_exchange_n(peak, &p, v, true, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
}

void *jnl_copy_alloc(struct jnl *j)
{
	void *p = jg_alloc_blocks(1);

	if (p) {
		jnl_count_up(&j->copies, &j->copies_peak);
		jnl_count_up(&j->copies_alone, &j->copies_alone_peak);
	}
	return p;
}

/*
 * The arena: room for two early batches of data copies and two slabs more (the
 * batch being filled, and slabs kept by copies that live longer: data a commit
 * logged stays until its checkpoint). Only the slabs used are ever touched.
 * Tried once; without it every copy is allocated alone. stage_lock held.
 */
static size_t jnl_arena_slabs_for(const struct jnl *j)
{
	size_t n = 2 * ((j->cfg.max_txn_data_blocks + JNL_SLAB_BLOCKS - 1) / JNL_SLAB_BLOCKS) + 2;

	return n > JNL_ARENA_MAX_SLABS ? JNL_ARENA_MAX_SLABS : n;
}

static void jnl_arena_make_locked(struct jnl *j)
{
	size_t n = jnl_arena_slabs_for(j);
	void *a = NULL;

	j->arena_tried = true;
	j->slab_refs = calloc(n, sizeof(*j->slab_refs));
	if (!j->slab_refs || posix_memalign(&a, JNL_SLAB_BYTES, n * JNL_SLAB_BYTES)) {
		free(j->slab_refs);
		j->slab_refs = NULL;
		return;
	}
	j->nslabs = n;
	JNL_POISON(a, n * JNL_SLAB_BYTES);
	__atomic_store_n(&j->arena, (uint8_t *)a, __ATOMIC_RELEASE);
}

/* Slabs in use: holding copies, or the one copies are taken from. stage_lock held. */
static size_t jnl_slabs_busy_locked(const struct jnl *j)
{
	size_t n = 0;

	for (size_t s = 0; s < j->nslabs; s++)
		n += j->slab_refs[s] || s == j->slab;
	return n;
}

/* The current slab is used up: the first one whose copies are all freed, if
 * any. stage_lock held. */
static void jnl_slab_next_locked(struct jnl *j)
{
	size_t busy;

	j->slab = JNL_NO_SLAB;
	if (!j->arena_tried)
		jnl_arena_make_locked(j);
	for (size_t s = 0; s < j->nslabs; s++) {
		if (!j->slab_refs[s]) {
			j->slab = s;
			j->slab_used = 0;
			break;
		}
	}
	if (j->slab == JNL_NO_SLAB)
		return;
	if (j->slab + 1 > j->slabs_touched)
		j->slabs_touched = j->slab + 1;
	busy = jnl_slabs_busy_locked(j);
	if (busy > j->slabs_busy_peak)
		j->slabs_busy_peak = busy;
}

void *jnl_copy_alloc_data(struct jnl *j)
{
	uint8_t *p = NULL;

	pthread_mutex_lock(&j->stage_lock);
	if (j->slab == JNL_NO_SLAB || j->slab_used == JNL_SLAB_BLOCKS)
		jnl_slab_next_locked(j);
	if (j->slab != JNL_NO_SLAB) {
		p = j->arena + (j->slab * JNL_SLAB_BLOCKS + j->slab_used++) * JG_BLOCK_SIZE;
		j->slab_refs[j->slab]++;
		JNL_UNPOISON(p, JG_BLOCK_SIZE);
	}
	pthread_mutex_unlock(&j->stage_lock);
	if (!p)
		return jnl_copy_alloc(j);
	jnl_count_up(&j->copies, &j->copies_peak);
	return p;
}

void jnl_copy_free(struct jnl *j, void *copy)
{
	uint8_t *a = __atomic_load_n(&j->arena, __ATOMIC_ACQUIRE);
	uintptr_t off = (uintptr_t)copy - (uintptr_t)a;

	if (!copy)
		return;
	__atomic_sub_fetch(&j->copies, 1, __ATOMIC_RELAXED);
	if (a && (uintptr_t)copy >= (uintptr_t)a && off < j->nslabs * JNL_SLAB_BYTES) {
		/* in the arena: its slab is free again with its last copy */
		pthread_mutex_lock(&j->stage_lock);
		JG_ASSERT(j->slab_refs[off / JNL_SLAB_BYTES]);
		j->slab_refs[off / JNL_SLAB_BYTES]--;
		JNL_POISON(copy, JG_BLOCK_SIZE);
		pthread_mutex_unlock(&j->stage_lock);
		return;
	}
	__atomic_sub_fetch(&j->copies_alone, 1, __ATOMIC_RELAXED);
	free(copy);
}

/*
 * Staging buffers are kept for reuse, up to one early batch's worth: fresh
 * memory costs a page fault and a page clearing per 4 KiB, which took more time
 * than the copy itself (a 64 MiB batch: ~30 ms of staging, ~15 ms with reuse;
 * batches are 16 MiB by default since).
 */
static void *jnl_stage_get(struct jnl *j)
{
	void *b = NULL;

	pthread_mutex_lock(&j->stage_lock);
	if (j->stage_n)
		b = j->stage_pool[--j->stage_n];
	pthread_mutex_unlock(&j->stage_lock);
	if (!b)
		b = jg_alloc_blocks(JNL_MERGE_MAX);
	if (!b)
		return NULL;
	pthread_mutex_lock(&j->stage_lock);
	if (++j->stage_out + j->stage_n > j->stage_peak)
		j->stage_peak = j->stage_out + j->stage_n;
	pthread_mutex_unlock(&j->stage_lock);
	return b;
}

void jnl_stage_free(struct jnl *j, void **stage, size_t nstage)
{
	pthread_mutex_lock(&j->stage_lock);
	JG_ASSERT(j->stage_out >= nstage);
	j->stage_out -= nstage;
	for (size_t i = 0; i < nstage; i++) {
		if (j->stage_n < j->stage_cap)
			j->stage_pool[j->stage_n++] = stage[i];
		else
			free(stage[i]);
	}
	pthread_mutex_unlock(&j->stage_lock);
	free(stage);
}

/*
 * A staging buffer for a run of @nb blocks: the rest of the current one (*@b,
 * *@used blocks taken) when the run fits there, else a new one, so that runs
 * share buffers and a write stages at most twice its blocks' size (plus one
 * buffer), however short its runs. NULL: out of memory.
 */
static uint8_t *jnl_stage_run(struct jnl *j, size_t nb, uint8_t **b, size_t *used,
			      void ***st, size_t *ns)
{
	uint8_t *nbuf;
	void **nst;

	if (*b && *used + nb <= JNL_MERGE_MAX) {
		*used += nb;
		return *b + (*used - nb) * JG_BLOCK_SIZE;
	}
	nst = realloc(*st, (*ns + 1) * sizeof(**st));
	if (!nst)
		return NULL;
	*st = nst;
	nbuf = jnl_fault_alloc(j) ? NULL : jnl_stage_get(j);
	if (!nbuf)
		return NULL;
	(*st)[(*ns)++] = nbuf;
	*b = nbuf;
	*used = nb;
	return nbuf;
}

int jnl_wb_reqs(struct jnl *j, struct jnl_wb *w, size_t n, uint32_t flags, struct blk_req *reqs,
		void ***stage, size_t *nstage)
{
	size_t i = 0, nr = 0, used = 0;
	uint8_t *cur = NULL;
	void **st = NULL;
	size_t ns = 0;

	while (i < n) {
		size_t k = i + 1, c = i + 1;

		while (k < n && k - i < JNL_MERGE_MAX && w[k].blkno == w[k - 1].blkno + 1)
			k++;
		/* copies side by side in memory (the arena's): written from there, as
		 * one request or, cut where a slab ends, as two */
		while (c < k && (uint8_t *)w[c].buf == (uint8_t *)w[c - 1].buf + JG_BLOCK_SIZE)
			c++;
		if (c - i >= JNL_DIRECT_MIN)
			k = c;
		reqs[nr] = (struct blk_req){ .op = BLK_OP_WRITE, .flags = flags,
					     .blkno = w[i].blkno, .nblocks = (uint32_t)(k - i) };
		if (k == c) {
			reqs[nr].buf = w[i].buf;
		} else {
			uint8_t *b = jnl_stage_run(j, k - i, &cur, &used, &st, &ns);

			if (!b) {
				jnl_stage_free(j, st, ns);
				return -ENOMEM;
			}
			for (size_t m = i; m < k; m++)
				memcpy(b + (m - i) * JG_BLOCK_SIZE, w[m].buf, JG_BLOCK_SIZE);
			reqs[nr].buf = b;
		}
		nr++;
		i = k;
	}
	*stage = st;
	*nstage = ns;
	return (int)nr;
}


/* ---------------------------------------------------------------- superblock */

static void jnl_sb_fill(uint8_t *blk, uint64_t start_blkno, uint64_t nblocks, uint64_t start,
			uint64_t sequence, uint32_t compat, uint32_t incompat, uint32_t ro_compat,
			uint64_t max_txn, const uint8_t uuid[16], uint32_t mode, uint32_t seed,
			uint64_t settle_start, uint64_t settle_sequence)
{
	struct jnl_sb *sb = (struct jnl_sb *)blk;

	memset(blk, 0, JG_BLOCK_SIZE);
	sb->nblocks = jg_cpu_to_le64(nblocks);
	sb->first = jg_cpu_to_le64(1);
	sb->start = jg_cpu_to_le64(start);
	sb->sequence = jg_cpu_to_le64(sequence);
	sb->feature_compat = jg_cpu_to_le32(compat);
	sb->feature_incompat = jg_cpu_to_le32(incompat);
	sb->feature_ro_compat = jg_cpu_to_le32(ro_compat);
	sb->max_txn_blocks = jg_cpu_to_le32((uint32_t)max_txn);
	memcpy(sb->uuid, uuid, 16);
	sb->data_mode = jg_cpu_to_le32(mode);
	sb->settle_start = jg_cpu_to_le64(settle_start);
	sb->settle_sequence = jg_cpu_to_le64(settle_sequence);
	jg_blk_seal(blk, JG_BLOCK_SIZE, JNL_MAGIC_SB, JNL_VERSION, 0, sequence, start_blkno, seed);
}

/*
 * The largest log footprint of one transaction. It also bounds the log window
 * declared-mode recovery resyncs (the commit under way at a crash writes at most
 * this much past the head), so it is capped: a quarter of the log would make
 * recovery grow with the journal, which mkfs sizes from the array.
 */
static uint64_t jnl_max_txn_for(uint64_t nblocks)
{
	uint64_t quarter = (nblocks - 1) / 4;

	return quarter < JNL_MAX_TXN_CAP ? quarter : JNL_MAX_TXN_CAP;
}

int jnl_sb_write_iolocked(struct jnl *j, uint64_t start, uint64_t sequence, bool declare,
			bool preflush)
{
	uint8_t *blk = jnl_fault_alloc(j) ? NULL : jg_alloc_blocks(1);
	enum jg_opoint op;
	struct blk_req r;
	int rc;

	JG_ASSERT_HELD(&j->io_lock);

	if (!blk)
		return -ENOMEM;
	if (declare)
		j->feat_incompat |= JNL_FEAT_INCOMPAT_DECLARE | JNL_FEAT_INCOMPAT_DECLARE_CSUM;
	else
		j->feat_incompat &= ~(JNL_FEAT_INCOMPAT_DECLARE | JNL_FEAT_INCOMPAT_DECLARE_CSUM);
	jnl_sb_fill(blk, j->start_blkno, j->nblocks, start, sequence, j->feat_compat,
		    j->feat_incompat, j->feat_ro_compat, j->max_txn_blocks, j->uuid,
		    (uint32_t)j->cfg.mode, j->seed, j->settle_start, j->settle_sequence);
	r = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = j->start_blkno, .nblocks = 1, .buf = blk,
			      .flags = BLK_FUA | (preflush ? BLK_PREFLUSH : 0) | j->write_flags };
	op = jg_opoint_set(JG_OP_JNL_SB);
	rc = jnl_io(j, &r, 1);
	jg_opoint_set(op);
	free(blk);
	if (!rc) {
		j->sb_last_start = start;
		j->sb_last_sequence = sequence;
	}
	return rc;
}

int jnl_format(struct blk_dev *dev, uint64_t start_blkno, uint64_t nblocks, const uint8_t uuid[16])
{
	uint8_t *blk = NULL;
	struct blk_req r[2];
	int rc = -EINVAL;

	if (nblocks < JNL_MIN_BLOCKS || start_blkno >= dev->nblocks ||
	    nblocks > dev->nblocks - start_blkno) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "format dev=%s start=%llu nblocks=%llu: bad region",
		       dev->name, (unsigned long long)start_blkno, (unsigned long long)nblocks);
		goto out;
	}
	rc = -ENOMEM;
	blk = jg_zalloc_blocks(2);
	if (!blk)
		goto out;
	jnl_sb_fill(blk, start_blkno, nblocks, 0, 1, 0,
		    JNL_FEAT_INCOMPAT_REVOKE | JNL_FEAT_INCOMPAT_CSUM, 0, jnl_max_txn_for(nblocks),
		    uuid, JNL_DATA_ORDERED, jg_crc_seed(uuid), 0, 0);
	/* the first log block zeroed too: nothing stale at the first start position */
	r[0] = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = start_blkno + 1, .nblocks = 1,
				 .buf = blk + JG_BLOCK_SIZE };
	r[1] = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = start_blkno, .nblocks = 1, .buf = blk };
	rc = blk_submit(dev, r, 1);
	if (!rc)
		rc = blk_submit(dev, &r[1], 1);
	if (!rc)
		rc = blk_flush(dev);
out:
	free(blk);
	return rc;
}

/* Verify the superblock: magic -> crc -> version -> home -> ranges -> features. Never writes. */
static int jnl_sb_verify(struct jnl *j, const uint8_t *blk)
{
	const struct jnl_sb *sb = (const struct jnl_sb *)blk;
	uint32_t seed = jg_crc_seed(sb->uuid);
	uint64_t nblocks, start, max_txn;
	const char *bad = NULL;
	int rc;

	rc = jg_blk_check(blk, JG_BLOCK_SIZE, JNL_MAGIC_SB, JNL_VERSION, j->start_blkno, seed,
			  JNL_SUBSYS, "superblock", j->dev->name);
	if (rc)
		return rc;
	nblocks = jg_le64(sb->nblocks);
	start = jg_le64(sb->start);
	max_txn = jg_le32(sb->max_txn_blocks);
	if (nblocks < JNL_MIN_BLOCKS || nblocks > j->dev->nblocks - j->start_blkno)
		bad = "nblocks";
	else if (jg_le64(sb->first) != 1)
		bad = "first";
	else if (start >= nblocks)
		bad = "start";
	else if (max_txn < 8 || max_txn > (nblocks - 1) / 2)
		bad = "max_txn_blocks";
	if (bad) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "superblock dev=%s blkno=%llu bad %s",
		       j->dev->name, (unsigned long long)j->start_blkno, bad);
		return -EUCLEAN;
	}
	if (j->cfg.nblocks && nblocks != j->cfg.nblocks) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS,
		       "superblock dev=%s blkno=%llu bad nblocks: %llu does not match the journal "
		       "region of %llu blocks",
		       j->dev->name, (unsigned long long)j->start_blkno, (unsigned long long)nblocks,
		       (unsigned long long)j->cfg.nblocks);
		return -EUCLEAN;
	}
	if (jg_le32(sb->feature_incompat) & ~JNL_FEAT_INCOMPAT_KNOWN) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "superblock dev=%s unknown incompat features 0x%x",
		       j->dev->name, jg_le32(sb->feature_incompat) & ~JNL_FEAT_INCOMPAT_KNOWN);
		return -EOPNOTSUPP;
	}
	if ((jg_le32(sb->feature_incompat) & JNL_FEAT_INCOMPAT_DECLARE) &&
	    !(jg_le32(sb->feature_incompat) & JNL_FEAT_INCOMPAT_DECLARE_CSUM)) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS,
		       "superblock dev=%s declared-mode log with declare blocks of the first format "
		       "(no data checksums): recover it with the jgrfs that wrote it",
		       j->dev->name);
		return -EOPNOTSUPP;
	}
	if ((jg_le32(sb->feature_ro_compat) & ~JNL_FEAT_RO_COMPAT_KNOWN) && !j->cfg.readonly) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "superblock dev=%s unknown ro_compat features 0x%x: read-only only",
		       j->dev->name, jg_le32(sb->feature_ro_compat) & ~JNL_FEAT_RO_COMPAT_KNOWN);
		return -EROFS;
	}
	memcpy(j->uuid, sb->uuid, 16);
	j->seed = seed;
	j->nblocks = nblocks;
	j->cap = nblocks - 1;
	j->max_txn_blocks = max_txn;
	j->soft_txn_blocks = max_txn / 2;
	j->feat_compat = jg_le32(sb->feature_compat);
	j->feat_incompat = jg_le32(sb->feature_incompat);
	j->feat_ro_compat = jg_le32(sb->feature_ro_compat);
	j->sb_start = start;
	j->sb_sequence = jg_le64(sb->sequence);
	j->sb_last_start = j->sb_start;
	j->sb_last_sequence = j->sb_sequence;
	j->settle_start = jg_le64(sb->settle_start);
	j->settle_sequence = jg_le64(sb->settle_sequence);
	if (j->settle_start > j->cap) {
		jg_log(JG_LOG_WARN, JNL_SUBSYS, "superblock dev=%s bad settle_start %llu: ignored",
		       j->dev->name, (unsigned long long)j->settle_start);
		j->settle_start = j->settle_sequence = 0;
	}
	return 0;
}

/* BLK_CTL_HEAL_READ's oracle for the superblock: its own check, silent. */
static int jnl_sb_heal_verify(void *ctx, const void *blk)
{
	const struct jnl *j = ctx;

	return jg_blk_verify(blk, JG_BLOCK_SIZE, JNL_MAGIC_SB, JNL_VERSION, j->start_blkno,
			     jg_crc_seed(((const struct jnl_sb *)blk)->uuid));
}

/*
 * The superblock as read failed its check (-EUCLEAN): ask the device to rebuild
 * it from its redundancy, as the filesystem does for its own superblock (a
 * member that rotted under it; the array rewrites that member, or only reads
 * when read-only). Returns the verdict on what @blk holds then; @rc when the
 * device has no redundancy or no version verifies.
 */
static int jnl_sb_heal(struct jnl *j, uint8_t *blk, int rc)
{
	struct blk_heal h = {.blkno = j->start_blkno, .buf = blk, .verify = jnl_sb_heal_verify,
			     .ctx = j};
	int hr;

	if (rc != -EUCLEAN)
		return rc;
	hr = blk_ctl(j->dev, BLK_CTL_HEAL_READ, &h);
	if (hr) {
		if (hr != -ENOTTY)
			jg_log(JG_LOG_ERR, JNL_SUBSYS, "superblock dev=%s blkno=%llu heal failed: %d",
			       j->dev->name, (unsigned long long)j->start_blkno, hr);
		return rc;
	}
	rc = jnl_sb_verify(j, blk);
	if (!rc)
		jg_log(JG_LOG_WARN, JNL_SUBSYS,
		       "superblock dev=%s blkno=%llu healed: members rewritten 0x%x", j->dev->name,
		       (unsigned long long)j->start_blkno, h.rewritten);
	return rc;
}

int jnl_open(struct blk_dev *dev, const struct jnl_cfg *cfg, struct jnl **out)
{
	struct jnl *j = NULL;
	uint8_t *blk = NULL;
	int rc = -EINVAL;

	if (!dev || !cfg || (unsigned int)cfg->mode > JNL_DATA_DECLARED ||
	    cfg->start_blkno >= dev->nblocks)
		goto out;
	rc = -ENOMEM;
	j = calloc(1, sizeof(*j));
	blk = jg_alloc_blocks(1);
	if (!j || !blk)
		goto out;
	j->dev = dev;
	j->cfg = *cfg;
	if (!j->cfg.commit_interval_ms)
		j->cfg.commit_interval_ms = 5000;
	/* 16 MiB: a sequential write runs as fast as with 64 MiB batches, in half
	 * the daemon's memory (docs/design/fuse.md "Memory the daemon keeps") */
	if (!j->cfg.max_txn_data_blocks)
		j->cfg.max_txn_data_blocks = 4096;
	j->start_blkno = cfg->start_blkno;
	j->slab = JNL_NO_SLAB;
	jnl_map_init(&j->map);
	jnl_map_init(&j->logged);
	jg_mutex_init(&j->lock, PTHREAD_MUTEX_DEFAULT);
	jg_mutex_init(&j->io_lock, PTHREAD_MUTEX_DEFAULT);
	pthread_mutex_init(&j->stage_lock, NULL);
	j->stage_cap = (j->cfg.max_txn_data_blocks + JNL_MERGE_MAX - 1) / JNL_MERGE_MAX;
	j->stage_pool = calloc(j->stage_cap, sizeof(*j->stage_pool));
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&j->cond, &ca);
		pthread_cond_init(&j->kick, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (!j->stage_pool) {
		rc = -ENOMEM;
		goto out;
	}
	rc = blk_rw(dev, BLK_OP_READ, j->start_blkno, 1, blk, 0);
	if (rc) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "superblock dev=%s blkno=%llu read failed: %d",
		       dev->name, (unsigned long long)j->start_blkno, rc);
		goto out;
	}
	rc = jnl_sb_heal(j, blk, jnl_sb_verify(j, blk));
	if (rc)
		goto out;
	j->head = j->tail = j->unflushed_from = 1;
	j->committed_tid = j->sb_sequence - 1;
	*out = j;
	j = NULL;
out:
	jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "open dev=%s start=%llu mode=%s readonly=%d -> %d",
	       dev ? dev->name : "-", cfg ? (unsigned long long)cfg->start_blkno : 0ull,
	       cfg ? jnl_data_mode_name(cfg->mode) : "-", cfg ? cfg->readonly : 0, rc);
	free(blk);
	if (j) {
		jg_mutex_destroy(&j->lock);
		jg_mutex_destroy(&j->io_lock);
		pthread_mutex_destroy(&j->stage_lock);
		pthread_cond_destroy(&j->cond);
		pthread_cond_destroy(&j->kick);
		free(j->stage_pool);
		free(j);
	}
	return rc;
}

bool jnl_needs_recovery(const struct jnl *j)
{
	return j->sb_start != 0 && !j->recovered;
}

int jnl_start(struct jnl *j)
{
	bool declared = j->cfg.mode == JNL_DATA_DECLARED;
	int rc;

	if (j->cfg.readonly)
		return -EROFS;
	if (j->started)
		return -EINVAL;
	if (jnl_needs_recovery(j)) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "dev=%s start refused: the log needs recovery", j->dev->name);
		return -EINVAL;
	}
	if (declared) {
		/* before the first declared write: the array must know that the journal,
		 * not its bitmap, will resync declared stripes after a crash */
		rc = blk_ctl(j->dev, BLK_CTL_SET_JNL_PENDING, NULL);
		if (rc && rc != -ENOTTY) {
			jg_log(JG_LOG_ERR, JNL_SUBSYS, "dev=%s set jnl_pending failed: %d", j->dev->name, rc);
			return rc;
		}
		j->write_flags = BLK_FS_RAIDSYNC;
	}
	j->running = jnl_txn_new(j->committed_tid + 1);
	if (!j->running)
		return -ENOMEM;
	jg_mutex_lock(&j->io_lock);
	/* in use: start != 0 even while the log is empty, so a crash is noticed */
	rc = jnl_sb_write_iolocked(j, j->head, j->running->tid, declared, false);
	jg_mutex_unlock(&j->io_lock);
	if (rc) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "dev=%s superblock write failed: %d", j->dev->name, rc);
		goto fail;
	}
	j->started = true;
	jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "start dev=%s mode=%s tid=%llu -> 0", j->dev->name,
	       jnl_data_mode_name(j->cfg.mode), (unsigned long long)j->running->tid);
	j->commits = j->declare_blocks = j->logged_data_blocks = 0;
	j->checkpoints = j->cp_passes = 0;
	__atomic_store_n(&j->flushes, 0, __ATOMIC_RELAXED);
	if (!j->cfg.no_commit_thread) {
		rc = jnl_thread_start(j);
		if (rc)
			goto fail;
	}
	return 0;
fail:
	j->started = false;
	jnl_txn_free(j->running);
	j->running = NULL;
	return rc;
}

static void jnl_free(struct jnl *j)
{
	for (size_t i = 0; i < j->map.cap; i++) {
		struct jnl_bh *bh;

		if (j->map.keys[i] == JNL_MAP_EMPTY)
			continue;
		bh = (struct jnl_bh *)(uintptr_t)j->map.vals[i];
		jnl_copy_free(j, bh->run);
		jnl_copy_free(j, bh->com);
		jnl_copy_free(j, bh->inflight);
		jnl_copy_free(j, bh->cp);
		free(bh);
	}
	jnl_map_free(&j->map);
	jnl_map_free(&j->logged);
	jnl_txn_free(j->running);
	jnl_txn_free(j->committing);
	free(j->cp_list);
	free(j->cpp_list);
	free(j->rec_declared);
	for (size_t s = 0; s < j->nslabs; s++)
		JG_ASSERT(!j->slab_refs[s]);	/* every copy was freed above */
	if (j->arena)
		JNL_UNPOISON(j->arena, j->nslabs * JNL_SLAB_BYTES);
	free(j->arena);
	free(j->slab_refs);
	for (size_t i = 0; i < j->stage_n; i++)
		free(j->stage_pool[i]);
	free(j->stage_pool);
	pthread_mutex_destroy(&j->stage_lock);
	jg_mutex_destroy(&j->lock);
	jg_mutex_destroy(&j->io_lock);
	pthread_cond_destroy(&j->cond);
	pthread_cond_destroy(&j->kick);
	free(j);
}

int jnl_close(struct jnl *j)
{
	int rc = 0;

	if (!j)
		return 0;
	if (j->started) {
		jnl_thread_stop(j);
		if (!j->aborted)
			rc = jnl_commit_running(j);
		jg_mutex_lock(&j->io_lock);
		if (!rc && !j->aborted)
			rc = jnl_checkpoint_iolocked(j, true);
		jg_mutex_unlock(&j->io_lock);
		if (!rc && !j->aborted && j->cfg.mode == JNL_DATA_DECLARED) {
			int crc = blk_ctl(j->dev, BLK_CTL_CLEAR_JNL_PENDING, NULL);

			if (crc && crc != -ENOTTY)
				rc = crc;
		}
		if (!rc && j->aborted)
			rc = -EROFS;
	}
	jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "close dev=%s -> %d", j->dev->name, rc);
	jnl_free(j);
	return rc;
}

void jnl_abandon(struct jnl *j)
{
	if (!j)
		return;
	jnl_thread_stop(j);
	jnl_free(j);
}

/* ---------------------------------------------------------------- read */

/* The newest copy the journal holds of a block (jnl_i.h: the order jnl_read() keeps), or NULL. */
static const uint8_t *jnl_bh_newest(const struct jnl_bh *bh)
{
	if (bh->run)
		return bh->run;
	if (bh->com)
		return bh->com;
	return bh->inflight ? bh->inflight : bh->cp;
}

int jnl_read(struct jnl *j, uint64_t blkno, uint32_t nblocks, void *buf)
{
	struct blk_req *reqs = NULL;
	unsigned int nr = 0;
	uint8_t *dst = buf;
	int rc = 0;

	if (!nblocks || blkno >= j->dev->nblocks || nblocks > j->dev->nblocks - blkno)
		return -EINVAL;
	reqs = malloc(((size_t)nblocks / 2 + 1) * sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	jg_mutex_lock(&j->lock);
	for (uint32_t i = 0; i < nblocks; i++) {
		struct jnl_bh *bh = j->map.n ? jnl_bh_find(j, blkno + i) : NULL;
		const uint8_t *src = NULL;

		if (bh)
			src = jnl_bh_newest(bh);
		if (src) {
			memcpy(dst + (size_t)i * JG_BLOCK_SIZE, src, JG_BLOCK_SIZE);
			continue;
		}
		if (nr && reqs[nr - 1].blkno + reqs[nr - 1].nblocks == blkno + i) {
			reqs[nr - 1].nblocks++;
			continue;
		}
		reqs[nr++] = (struct blk_req){ .op = BLK_OP_READ, .blkno = blkno + i, .nblocks = 1,
					       .buf = dst + (size_t)i * JG_BLOCK_SIZE };
	}
	jg_mutex_unlock(&j->lock);
	if (nr)
		rc = blk_submit(j->dev, reqs, nr);
	free(reqs);
	return rc;
}

bool jnl_block_pending(struct jnl *j, uint64_t blkno)
{
	struct jnl_bh *bh;
	bool yes;

	jg_mutex_lock(&j->lock);
	bh = j->map.n ? jnl_bh_find(j, blkno) : NULL;
	yes = bh && jnl_bh_newest(bh);
	jg_mutex_unlock(&j->lock);
	return yes;
}

int jnl_read_heal(struct jnl *j, uint64_t blkno, void *buf, int (*verify)(void *, const void *),
		  void *ctx, uint32_t *rewritten)
{
	struct blk_heal h = {.blkno = blkno, .buf = buf, .verify = verify, .ctx = ctx};
	const uint8_t *src = NULL;
	int rc;

	if (rewritten)
		*rewritten = 0;
	if (blkno >= j->dev->nblocks)
		return -EINVAL;
	jg_mutex_lock(&j->lock);
	if (j->map.n) {
		struct jnl_bh *bh = jnl_bh_find(j, blkno);

		if (bh)
			src = jnl_bh_newest(bh);
		if (src)
			memcpy(buf, src, JG_BLOCK_SIZE);
	}
	jg_mutex_unlock(&j->lock);
	if (src)
		return 0; /* the newest copy is ours, not the device's: nothing to heal there */
	/*
	 * A checkpoint may write the block home meanwhile: the heal reads under
	 * the row's lock, so it sees the old or the new version whole, and the
	 * caller checks what it gets.
	 */
	rc = blk_ctl(j->dev, BLK_CTL_HEAL_READ, &h);
	if (!rc && rewritten)
		*rewritten = h.rewritten;
	return rc;
}

/* The memory the journal holds (issue 46): block copies, the arena, staging buffers. */
static void jnl_info_mem(struct jnl *j, struct jnl_info *out)
{
	const uint64_t stage_bytes = (uint64_t)JNL_MERGE_MAX * JG_BLOCK_SIZE;

	out->copy_bytes = __atomic_load_n(&j->copies, __ATOMIC_RELAXED) * JG_BLOCK_SIZE;
	out->copy_peak_bytes = __atomic_load_n(&j->copies_peak, __ATOMIC_RELAXED) * JG_BLOCK_SIZE;
	out->copy_alone_bytes = __atomic_load_n(&j->copies_alone, __ATOMIC_RELAXED) * JG_BLOCK_SIZE;
	out->copy_alone_peak_bytes =
	    __atomic_load_n(&j->copies_alone_peak, __ATOMIC_RELAXED) * JG_BLOCK_SIZE;
	out->log_cap_blocks = j->cap;
	out->max_txn_blocks = j->max_txn_blocks;
	out->batch_blocks = j->cfg.max_txn_data_blocks;
	out->arena_slab_bytes = JNL_SLAB_BYTES;
	pthread_mutex_lock(&j->stage_lock);
	out->stage_bytes = (j->stage_n + j->stage_out) * stage_bytes;
	out->stage_peak_bytes = j->stage_peak * stage_bytes;
	out->stage_keep_bytes = j->stage_cap * stage_bytes;
	/* before the first data write, the slabs it will have */
	out->arena_slabs = (uint32_t)(j->arena_tried ? j->nslabs : jnl_arena_slabs_for(j));
	out->arena_slabs_busy = (uint32_t)(j->arena ? jnl_slabs_busy_locked(j) : 0);
	out->arena_slabs_busy_peak = (uint32_t)j->slabs_busy_peak;
	out->arena_slabs_touched = (uint32_t)j->slabs_touched;
	pthread_mutex_unlock(&j->stage_lock);
}

void jnl_info_get(struct jnl *j, struct jnl_info *out)
{
	memset(out, 0, sizeof(*out));
	jg_mutex_lock(&j->lock);
	out->mode = j->cfg.mode;
	out->log_blocks = j->nblocks;
	out->log_used_blocks = j->used;
	out->running_tid = j->running ? j->running->tid : j->committed_tid + 1;
	out->commits = j->commits;
	out->declare_blocks = j->declare_blocks;
	out->logged_data_blocks = j->logged_data_blocks;
	out->thread_wakeups = j->thread_wakeups;
	out->timed_commits = j->timed_commits;
	out->early_batches = j->early_batches;
	out->early_waits = j->early_waits;
	out->checkpoints = j->checkpoints;
	out->checkpoint_passes = j->cp_passes;
	out->flushes = __atomic_load_n(&j->flushes, __ATOMIC_RELAXED);
	out->aborted = j->aborted;
	out->last_recovery = j->last_recovery;
	jg_mutex_unlock(&j->lock);
	jnl_info_mem(j, out);
}
