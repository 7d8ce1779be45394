// SPDX-License-Identifier: MIT
/*
 * tests/unit/journal/test_declare.c - data=declared and the ordering rules, on a
 * device that records every request: (D1) a data block reaches the device only
 * after a durable declare block lists it; (D2) every write carries
 * BLK_FS_RAIDSYNC; (D3) the commit block follows the data with PREFLUSH; early
 * declare of large transactions; jnl_pending set before the first declared write
 * and cleared at close; the SYNCRAID passes of recovery; flushes per commit per
 * mode as docs/FORMAT.md §3 states, and the background flush of the log.
 */
#include <pthread.h>
#include <unistd.h>

#include "jnl_test.h"
#include "../../../src/journal/jnl_format.h"
#include "../../../src/journal/jnl_i.h"

#define REC_MAX 20000

struct rec_ev {
	int op;			/* BLK_OP_*, or 100 + ctl command */
	uint32_t flags;
	uint64_t blkno;
	uint32_t nblocks;
	uint32_t magic;		/* first le32 of a journal-region write */
	uint64_t *list;		/* declare block entries */
	uint32_t *tflags, *tcrc; /* ... their tags' flags and crc */
	uint32_t nlist;
	size_t batch;		/* which blk_submit() call: one batch completes as a whole */
	uint32_t cflags;	/* a commit block's flags */
};

struct rec_dev {
	struct blk_dev dev;
	struct blk_dev *lower;
	struct rec_ev ev[REC_MAX];
	size_t n, nbatch;
};

static int rec_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct rec_dev *rd = (struct rec_dev *)d;

	for (unsigned int i = 0; i < n; i++) {
		struct rec_ev *e = &rd->ev[rd->n++];

		assert_true(rd->n < REC_MAX);
		memset(e, 0, sizeof(*e));
		e->op = r[i].op;
		e->flags = r[i].flags;
		e->blkno = r[i].blkno;
		e->nblocks = r[i].nblocks;
		e->batch = rd->nbatch;
		if (r[i].op == BLK_OP_WRITE && r[i].blkno >= T_JSTART) {
			for (uint32_t k = 0; k < r[i].nblocks; k++) {
				const uint8_t *b = (const uint8_t *)r[i].buf + (size_t)k * JG_BLOCK_SIZE;
				const struct jnl_list_hdr *h = (const struct jnl_list_hdr *)b;

				if (!k)
					e->magic = jg_le32(h->hdr.magic);
				if (!k && e->magic == JNL_MAGIC_COMMIT)
					e->cflags = jg_le32(((const struct jnl_commit_blk *)b)->flags);
				if (jg_le32(h->hdr.magic) != JNL_MAGIC_DECLARE)
					continue;
				e->list = realloc(e->list, (e->nlist + jg_le32(h->count)) * sizeof(uint64_t));
				e->tflags = realloc(e->tflags, (e->nlist + jg_le32(h->count)) * sizeof(uint32_t));
				e->tcrc = realloc(e->tcrc, (e->nlist + jg_le32(h->count)) * sizeof(uint32_t));
				assert_true(e->list && e->tflags && e->tcrc);
				for (uint32_t x = 0; x < jg_le32(h->count); x++) {
					const struct jnl_tag *tg = (const struct jnl_tag *)(b + sizeof(*h)) + x;

					e->tflags[e->nlist] = jg_le32(tg->flags);
					e->tcrc[e->nlist] = jg_le32(tg->crc);
					e->list[e->nlist++] = jg_le64(tg->blkno);
				}
			}
		}
	}
	rd->nbatch++;
	return blk_submit(rd->lower, r, n);
}

static int rec_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	struct rec_dev *rd = (struct rec_dev *)d;

	memset(&rd->ev[rd->n], 0, sizeof(rd->ev[rd->n]));
	rd->ev[rd->n].op = 100 + (int)cmd;
	rd->n++;
	if (cmd == BLK_CTL_GET_STATS)
		return -ENOTTY;
	return 0;
}

static void rec_close(struct blk_dev *d)
{
	struct rec_dev *rd = (struct rec_dev *)d;

	for (size_t i = 0; i < rd->n; i++) {
		free(rd->ev[i].list);
		free(rd->ev[i].tflags);
		free(rd->ev[i].tcrc);
	}
	free(rd);
}

static const struct blk_dev_ops rec_ops = { .submit = rec_submit, .ctl = rec_ctl, .close = rec_close };

static struct rec_dev *rec_open(struct blk_dev *lower)
{
	struct rec_dev *rd = calloc(1, sizeof(*rd));

	assert_non_null(rd);
	rd->dev.ops = &rec_ops;
	rd->dev.nblocks = lower->nblocks;
	snprintf(rd->dev.name, sizeof(rd->dev.name), "rec");
	rd->lower = lower;
	return rd;
}

static struct jnl *rec_jnl(struct rec_dev *rd, enum jnl_data_mode mode, uint64_t max_data)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true,
			       .max_txn_data_blocks = max_data };
	struct jnl *j = NULL;

	assert_int_equal(jnl_open(&rd->dev, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, NULL), 0);
	assert_int_equal(jnl_start(j), 0);
	return j;
}

/*
 * Check D1, D2, D3 over the recorded events: every data write (outside the
 * journal) is listed by a declare block written before it with a durability
 * point (FUA on it, or a FLUSH) in between; every write carries FS_RAIDSYNC;
 * a commit block either has PREFLUSH (C2: after its data) or says
 * JNL_COMMIT_DATA_CSUM and is followed by a FLUSH before anything else (C3: it
 * goes out with its data, whose crc32c the declare tags hold).
 */
static void rec_check_declared(struct rec_dev *rd, size_t from)
{
	for (size_t i = from; i < rd->n; i++) {
		const struct rec_ev *e = &rd->ev[i];

		if (e->op != BLK_OP_WRITE)
			continue;
		if (!(e->flags & BLK_FS_RAIDSYNC))
			fail_msg("event %zu: write blkno=%llu without BLK_FS_RAIDSYNC", i,
				 (unsigned long long)e->blkno);
		if (e->magic == JNL_MAGIC_COMMIT && !(e->cflags & JNL_COMMIT_DATA_CSUM) &&
		    !(e->flags & BLK_PREFLUSH))
			fail_msg("event %zu: commit block without PREFLUSH nor DATA_CSUM", i);
		if (e->magic == JNL_MAGIC_COMMIT && (e->cflags & JNL_COMMIT_DATA_CSUM)) {
			size_t k = i + 1;

			while (k < rd->n && rd->ev[k].batch == e->batch)
				k++;
			if (k == rd->n || rd->ev[k].op != BLK_OP_FLUSH)
				fail_msg("event %zu: commit block not followed by a FLUSH", i);
		}
		if (e->blkno >= T_JSTART)
			continue;
		for (uint32_t k = 0; k < e->nblocks; k++) {
			uint64_t b = e->blkno + k;
			bool ok = false;

			/* metadata (blocks < 100 in these tests) is logged, not declared */
			if (b < 100)
				continue;
			for (size_t x = i; x-- > from && !ok;) {
				const struct rec_ev *d = &rd->ev[x];
				bool listed = false;

				for (uint32_t y = 0; y < d->nlist; y++)
					listed |= d->list[y] == b;
				if (!listed)
					continue;
				/* FUA makes the declare block durable when its batch completes,
				 * so the data must come in a later batch */
				ok = (d->flags & BLK_FUA) && d->batch < e->batch;
				for (size_t z = x + 1; z < i && !ok; z++)
					ok = rd->ev[z].op == BLK_OP_FLUSH ||
					     (rd->ev[z].flags & BLK_PREFLUSH);
				if (!ok)
					fail_msg("event %zu: data block %llu written before its declare block (event %zu) was durable",
						 i, (unsigned long long)b, x);
			}
			if (!ok)
				fail_msg("event %zu: data block %llu written without a declare block",
					 i, (unsigned long long)b);
		}
	}
}

static size_t rec_find(struct rec_dev *rd, size_t from, int op)
{
	for (size_t i = from; i < rd->n; i++)
		if (rd->ev[i].op == op)
			return i;
	return SIZE_MAX;
}

/* Declared: pending set before the first write; D1-D3; declare off and pending cleared at close. */
static void test_declare_ordering_rules(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 0);
	uint8_t *sb = jg_alloc_blocks(1);
	size_t set, first_write, clr, last_write = 0;

	(void)state;
	set = rec_find(rd, 0, 100 + BLK_CTL_SET_JNL_PENDING);
	first_write = rec_find(rd, set == SIZE_MAX ? 0 : set, BLK_OP_WRITE);
	assert_true(set != SIZE_MAX);
	assert_true(first_write > set && first_write != SIZE_MAX);
	assert_int_equal(blk_rw(mem, BLK_OP_READ, T_JSTART, 1, sb, 0), 0);
	assert_true(jg_le32(((struct jnl_sb *)sb)->feature_incompat) & JNL_FEAT_INCOMPAT_DECLARE);
	for (uint32_t v = 1; v <= 5; v++) {
		t_txn(j, 10 * v, 3, v, true);
		t_txn(j, 1000 + 20 * v, 15, v, false);
		assert_int_equal(jnl_commit(j, 0, true), 0);
	}
	t_txn(j, 1000, 7, 9, false);
	assert_int_equal(jnl_close(j), 0);
	rec_check_declared(rd, first_write);
	for (size_t i = 0; i < rd->n; i++)
		if (rd->ev[i].op == BLK_OP_WRITE)
			last_write = i;
	clr = rec_find(rd, last_write, 100 + BLK_CTL_CLEAR_JNL_PENDING);
	assert_true(clr != SIZE_MAX);
	assert_int_equal(blk_rw(mem, BLK_OP_READ, T_JSTART, 1, sb, 0), 0);
	assert_false(jg_le32(((struct jnl_sb *)sb)->feature_incompat) & JNL_FEAT_INCOMPAT_DECLARE);
	assert_int_equal(jg_le64(((struct jnl_sb *)sb)->start), 0);
	for (uint32_t i = 0; i < 7; i++)
		assert_int_equal(t_read_ver(NULL, mem, 1000 + i), 9);
	free(sb);
	blk_close(&rd->dev);
	blk_close(mem);
}

/* A large transaction declares early: data reaches the device before any commit block. */
static void test_declare_early_writeback(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 507);
	struct jnl_info info;
	size_t from = rd->n, first_data = SIZE_MAX, first_commit = SIZE_MAX, nfua = 0;

	(void)state;
	t_txn(j, 100, 1100, 1, false);		/* > 2 declare blocks' worth */
	for (size_t i = from; i < rd->n; i++) {
		if (rd->ev[i].op != BLK_OP_WRITE)
			continue;
		if (rd->ev[i].blkno < T_JSTART && first_data == SIZE_MAX)
			first_data = i;
		if (rd->ev[i].magic == JNL_MAGIC_COMMIT && first_commit == SIZE_MAX)
			first_commit = i;
	}
	assert_true(first_data != SIZE_MAX);
	assert_true(first_commit == SIZE_MAX);
	jnl_info_get(j, &info);
	/* two batches of 507 written early, each declared with one FUA write */
	for (size_t i = from; i < rd->n; i++)
		nfua += rd->ev[i].magic == JNL_MAGIC_DECLARE && (rd->ev[i].flags & BLK_FUA);
	assert_int_equal(nfua, 2);
	assert_int_equal(info.declare_blocks, 2 * ((507 + JNL_DESC_TAGS - 1) / JNL_DESC_TAGS));
	assert_int_equal(info.commits, 0);
	assert_int_equal(t_read_ver(NULL, mem, 100), 1);
	/* a crash now: the transaction is dropped, its declared blocks resynced */
	assert_int_equal(jnl_commit(j, 0, false), 0);
	assert_int_equal(jnl_close(j), 0);
	rec_check_declared(rd, from);
	blk_close(&rd->dev);
	blk_close(mem);
}

/*
 * Early writeback declares a whole batch at once: every declare block of it in
 * one write with FUA, the batch's only durability point before its data.
 */
static void test_declare_early_batch_one_point(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 1100);
	struct jnl_info info;
	size_t from = rd->n, first_data = SIZE_MAX, ndecl_writes = 0, points = 0;

	(void)state;
	t_txn(j, 100, 1100, 1, false);		/* 1100 pending: 5 declare blocks */
	for (size_t i = from; i < rd->n; i++) {
		const struct rec_ev *e = &rd->ev[i];

		if (e->op == BLK_OP_WRITE && e->blkno < T_JSTART && first_data == SIZE_MAX)
			first_data = i;
		if (first_data != SIZE_MAX)
			continue;
		ndecl_writes += e->op == BLK_OP_WRITE && e->magic == JNL_MAGIC_DECLARE;
		points += (e->op == BLK_OP_FLUSH) + !!(e->flags & BLK_PREFLUSH) + !!(e->flags & BLK_FUA);
		if (e->magic == JNL_MAGIC_DECLARE)
			assert_int_equal(e->nlist, 1100);
	}
	assert_true(first_data != SIZE_MAX);
	assert_int_equal(ndecl_writes, 1);
	assert_int_equal(points, 1);
	jnl_info_get(j, &info);
	assert_int_equal(info.declare_blocks, (1100 + JNL_DESC_TAGS - 1) / JNL_DESC_TAGS);
	assert_int_equal(info.commits, 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	assert_int_equal(jnl_close(j), 0);
	rec_check_declared(rd, from);
	blk_close(&rd->dev);
	blk_close(mem);
}

/*
 * An early batch takes the data copies made since the one before, from the list
 * of them the handles keep: a block listed and then forgotten, or made
 * metadata, is not written home by it; a block dirtied twice is declared and
 * written once, with its newest contents; a block forgotten and dirtied again
 * (listed twice) too.
 */
static void test_declare_early_takes_live_copies(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 8);
	static const uint64_t want[] = { 200, 201, 203, 204, 205, 206, 207, 208 };
	struct jnl_handle *h = NULL;
	uint8_t *b = jg_alloc_blocks(1);
	size_t from = rd->n, ndecl = 0;
	unsigned int homes[16] = { 0 };

	(void)state;
	assert_int_equal(jnl_handle_start(j, 4, &h), 0);
	for (uint64_t x = 200; x < 206; x++) {
		t_fill(b, x, 1);
		assert_int_equal(jnl_handle_dirty_data(h, x, b), 0);
	}
	assert_int_equal(jnl_handle_forget(h, 201), 0);
	t_fill(b, 202, 1);
	assert_int_equal(jnl_handle_dirty_meta(h, 202, b), 0);
	t_fill(b, 203, 2);
	assert_int_equal(jnl_handle_dirty_data(h, 203, b), 0);
	t_fill(b, 201, 3);
	assert_int_equal(jnl_handle_dirty_data(h, 201, b), 0);
	/* five pending; the eighth is written early, here (no commit thread) */
	for (uint64_t x = 206; x < 209; x++) {
		t_fill(b, x, 1);
		assert_int_equal(jnl_handle_dirty_data(h, x, b), 0);
	}
	for (size_t i = from; i < rd->n; i++) {
		const struct rec_ev *e = &rd->ev[i];

		if (e->op == BLK_OP_WRITE && e->magic == JNL_MAGIC_DECLARE) {
			ndecl++;
			assert_int_equal(e->nlist, 8);
			for (uint32_t k = 0; k < e->nlist; k++)
				assert_int_equal(e->list[k], want[k]);
		}
		if (e->op == BLK_OP_WRITE && e->blkno < T_JSTART)
			for (uint32_t k = 0; k < e->nblocks; k++) {
				assert_in_range(e->blkno + k, 200, 215);
				homes[e->blkno + k - 200]++;
			}
	}
	assert_int_equal(ndecl, 1);
	for (unsigned int x = 0; x < 16; x++) {
		bool in = false;

		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			in |= want[k] == 200 + x;
		if (homes[x] != (in ? 1u : 0u))
			fail_msg("block %u written home %u times by the early batch", 200 + x, homes[x]);
	}
	assert_int_equal(t_read_ver(NULL, mem, 201), 3);
	assert_int_equal(t_read_ver(NULL, mem, 203), 2);
	assert_int_equal(t_read_ver(NULL, mem, 202), 0);
	/* (202 is metadata now, which the checker takes for data: check up to here) */
	rec_check_declared(rd, from);
	/* taken blocks dirtied again go in the next batch */
	t_fill(b, 200, 4);
	assert_int_equal(jnl_handle_dirty_data(h, 200, b), 0);
	for (uint64_t x = 209; x < 216; x++) {
		t_fill(b, x, 1);
		assert_int_equal(jnl_handle_dirty_data(h, x, b), 0);
	}
	assert_int_equal(t_read_ver(NULL, mem, 200), 4);
	assert_int_equal(t_read_ver(NULL, mem, 215), 1);
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	assert_int_equal(t_read_ver(j, NULL, 202), 1);
	assert_int_equal(jnl_close(j), 0);
	free(b);
	blk_close(&rd->dev);
	blk_close(mem);
}

/*
 * A block forgotten and dirtied again, over and over in one transaction, is
 * listed for the next early batch each time; the list keeps one entry per live
 * copy instead of growing with the repeats (and keeps the block listed before
 * them), and the batch writes the block once, its newest contents.
 */
static void test_declare_pend_list_bounded(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 8);
	struct jnl_handle *h = NULL;
	uint8_t *b = jg_alloc_blocks(1);
	size_t from = rd->n, homes = 0;

	(void)state;
	assert_int_equal(jnl_handle_start(j, 4, &h), 0);
	t_fill(b, 299, 1);
	assert_int_equal(jnl_handle_dirty_data(h, 299, b), 0);
	for (uint32_t v = 1; v <= 10000; v++) {
		t_fill(b, 300, v);
		assert_int_equal(jnl_handle_dirty_data(h, 300, b), 0);
		if (v < 10000)
			assert_int_equal(jnl_handle_forget(h, 300), 0);
	}
	jg_mutex_lock(&j->lock);
	assert_in_range(j->running->pend_cap, 1, 512);
	jg_mutex_unlock(&j->lock);
	for (uint64_t x = 301; x < 307; x++) {
		t_fill(b, x, 1);
		assert_int_equal(jnl_handle_dirty_data(h, x, b), 0);
	}
	for (size_t i = from; i < rd->n; i++)
		if (rd->ev[i].op == BLK_OP_WRITE && rd->ev[i].blkno <= 300 &&
		    rd->ev[i].blkno + rd->ev[i].nblocks > 300)
			homes++;
	assert_int_equal(homes, 1);
	assert_int_equal(t_read_ver(NULL, mem, 300), 10000);
	assert_int_equal(t_read_ver(NULL, mem, 299), 1);
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_close(j), 0);
	rec_check_declared(rd, from);
	free(b);
	blk_close(&rd->dev);
	blk_close(mem);
}

/*
 * Declare tags hold the crc32c of the data only while the transaction could still
 * commit with JNL_COMMIT_DATA_CSUM (at most 64 data blocks); past that they say
 * JNL_TAG_NO_CRC, in early batches and at commit alike (FORMAT.md §3.3.3).
 */
static void test_declare_tag_crc_only_when_read(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 16);
	uint32_t seed = jg_crc_seed(t_uuid);
	uint8_t *b = jg_alloc_blocks(1);
	size_t from = rd->n, with = 0, without = 0;

	(void)state;
	/* 100 blocks: six early batches of 16, then 4 at commit */
	t_txn(j, 100, 100, 3, false);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	for (size_t i = from; i < rd->n; i++) {
		const struct rec_ev *e = &rd->ev[i];

		for (uint32_t x = 0; x < e->nlist; x++) {
			bool want_crc = with + without < JNL_COMMIT_CSUM_MAX_DATA;

			if (!want_crc) {
				if (e->tflags[x] != JNL_TAG_NO_CRC || e->tcrc[x])
					fail_msg("tag %zu (block %llu): crc computed past 64 blocks",
						 with + without, (unsigned long long)e->list[x]);
				without++;
				continue;
			}
			t_fill(b, e->list[x], 3);
			if (e->tflags[x] || e->tcrc[x] != jg_crc32c(seed, b, JG_BLOCK_SIZE))
				fail_msg("tag %zu (block %llu): crc missing or wrong", with + without,
					 (unsigned long long)e->list[x]);
			with++;
		}
	}
	assert_int_equal(with, 64);
	assert_int_equal(without, 36);
	assert_int_equal(jnl_close(j), 0);
	rec_check_declared(rd, from);
	free(b);
	blk_close(&rd->dev);
	blk_close(mem);
}

/* Recovery of a declared log: SYNCRAID on replayed writes, declared blocks, the log window. */
static void test_declare_recovery_syncraid(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 507);
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .no_commit_thread = true };
	struct jnl_recovery_report rep;
	size_t from, done, clr, nsync_reads = 0, nsync_writes = 0;
	bool listed[T_DEV_BLOCKS] = { 0 };

	(void)state;
	t_txn(j, 5, 4, 1, true);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	t_txn(j, 200, 600, 2, false);		/* declared early, never committed */
	jnl_abandon(j);
	from = rd->n;
	assert_int_equal(jnl_open(&rd->dev, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, &rep), 0);
	assert_int_equal(rep.transactions_replayed, 1);
	assert_int_equal(rep.blocks_replayed, 4);
	assert_int_equal(rep.declared_blocks_resynced, 507);
	/* the superblock, the last committed transaction (descriptor, 4 copies,
	 * commit block: they went out with the commit block) and the window after */
	assert_int_equal(rep.log_blocks_resynced, 1 + 6 + (T_JBLOCKS - 1) / 4);
	for (size_t i = from; i < rd->n; i++) {
		const struct rec_ev *e = &rd->ev[i];

		if (e->op == BLK_OP_WRITE && e->blkno < T_JSTART) {
			assert_true(e->flags & BLK_SYNCRAID);
			nsync_writes += e->nblocks;
		}
		if (e->op == BLK_OP_READ && (e->flags & BLK_SYNCRAID)) {
			nsync_reads += e->nblocks;
			for (uint32_t k = 0; k < e->nblocks; k++)
				if (e->blkno + k < T_JSTART)
					listed[e->blkno + k] = true;
		}
	}
	assert_int_equal(nsync_writes, 4);
	for (uint64_t b = 200; b < 200 + 507; b++)
		assert_true(listed[b]);
	assert_true(nsync_reads >= 507 + 1 + (T_JBLOCKS - 1) / 4);
	done = rec_find(rd, from, 100 + BLK_CTL_SYNCRAID_DONE);
	clr = rec_find(rd, from, 100 + BLK_CTL_CLEAR_JNL_PENDING);
	assert_true(done != SIZE_MAX && clr != SIZE_MAX);
	assert_int_equal(t_read_ver(NULL, mem, 6), 1);
	jnl_abandon(j);
	blk_close(&rd->dev);
	blk_close(mem);
}

/* Durability points of one commit per mode, as FORMAT.md §3.6 states. */
static void test_declare_flushes_per_commit(void **state)
{
	static const struct { enum jnl_data_mode mode; unsigned int data; uint64_t flushes; } c[] = {
		{ JNL_DATA_WRITEBACK, 5, 1 }, { JNL_DATA_JOURNAL, 5, 1 },
		{ JNL_DATA_ORDERED, 5, 2 }, { JNL_DATA_DECLARED, 5, 2 },
		{ JNL_DATA_ORDERED, 0, 1 }, { JNL_DATA_DECLARED, 0, 1 },
		/* more than JNL_COMMIT_CSUM_MAX_DATA: the commit block follows the data */
		{ JNL_DATA_DECLARED, JNL_COMMIT_CSUM_MAX_DATA + 1, 3 },
	};

	(void)state;
	for (unsigned int i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct blk_dev *mem = t_mem_dev();
		struct rec_dev *rd = rec_open(mem);
		struct jnl *j = rec_jnl(rd, c[i].mode, 0);
		struct jnl_info a, b;
		uint64_t dev_points = 0;
		size_t from;

		jnl_info_get(j, &a);
		from = rd->n;
		t_txn(j, 10, 3, 1, true);
		if (c[i].data)
			t_txn(j, 1000, c[i].data, 1, false);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		jnl_info_get(j, &b);
		for (size_t k = from; k < rd->n; k++)
			dev_points += (rd->ev[k].op == BLK_OP_FLUSH) + !!(rd->ev[k].flags & BLK_PREFLUSH) +
				      !!(rd->ev[k].flags & BLK_FUA);
		if (b.flushes - a.flushes != c[i].flushes || dev_points != c[i].flushes)
			fail_msg("mode %s, %u data blocks: %llu durability points (device saw %llu), documented %llu",
				 jnl_data_mode_name(c[i].mode), c[i].data,
				 (unsigned long long)(b.flushes - a.flushes),
				 (unsigned long long)dev_points, (unsigned long long)c[i].flushes);
		assert_int_equal(jnl_close(j), 0);
		blk_close(&rd->dev);
		blk_close(mem);
	}
}

/* Over the events from @from: log blocks written (not the journal superblock),
 * flushes (FLUSH or PREFLUSH), and the most log blocks written between two. */
static void rec_log_flushes(const struct rec_dev *rd, size_t from, uint64_t *logged,
			    uint64_t *flushes, uint64_t *most)
{
	uint64_t since = 0;

	*logged = *flushes = *most = 0;
	for (size_t k = from; k < rd->n; k++) {
		const struct rec_ev *e = &rd->ev[k];

		if (e->op == BLK_OP_FLUSH || (e->flags & BLK_PREFLUSH)) {
			(*flushes)++;
			since = 0;
		}
		if (e->op == BLK_OP_WRITE && e->blkno > T_JSTART && e->blkno < T_JSTART + T_JBLOCKS) {
			since += e->nblocks;
			*logged += e->nblocks;
			*most = since > *most ? since : *most;
		}
	}
}

/*
 * (C6) of commit.c: a FUA log write's parity is durable only at the next flush,
 * so in declared mode a commit that finds more than jnl_unflushed_max() log
 * blocks written since the last flush flushes first; recovery resyncs no more
 * log than that before the last commit. Metadata-only commits (log blocks and
 * commit block, FUA), fewer than a checkpoint would take: the log blocks
 * written between two flushes stay within the bound plus one commit.
 */
static void test_declare_log_flushed_every_so_often(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 0);
	uint64_t bound = (T_JBLOCKS - 1) / 4 / 4, most, flushes, logged;
	size_t from = rd->n;

	(void)state;
	for (int i = 0; i < 40; i++) {
		t_txn(j, 10 + 4 * (uint64_t)i, 3, 1, true);
		assert_int_equal(jnl_commit(j, 0, true), 0);
	}
	rec_log_flushes(rd, from, &logged, &flushes, &most);
	/* ... and no more flushes than that takes */
	if (logged <= 2 * bound || !flushes || flushes > logged / bound + 1 || most > bound + 8)
		fail_msg("%llu log blocks, %llu flushes, at most %llu log blocks between two (bound %llu + a commit)",
			 (unsigned long long)logged, (unsigned long long)flushes, (unsigned long long)most,
			 (unsigned long long)bound);
	assert_int_equal(jnl_close(j), 0);
	blk_close(&rd->dev);
	blk_close(mem);
}

/*
 * (C6) Past half that bound, the commit thread flushes between commits
 * (jnl_background_flush(), called here after each commit as the thread
 * would): then no commit has to flush first, and no more than half the bound
 * plus one commit is ever written between two flushes. Below the mark it does
 * nothing.
 */
static void test_declare_log_flushed_in_background(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_DECLARED, 0);
	uint64_t half = (T_JBLOCKS - 1) / 4 / 4 / 2, logged, most, flushes, bg = 0;
	size_t from = rd->n;

	(void)state;
	assert_int_equal(jnl_background_flush(j), 0);	/* nothing written yet */
	assert_int_equal(rd->n, from);
	for (int i = 0; i < 40; i++) {
		size_t before;
		int rc;

		t_txn(j, 10 + 4 * (uint64_t)i, 3, 1, true);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		before = rd->n;
		rc = jnl_background_flush(j);
		assert_true(rc == 0 || rc == 1);
		/* a flush and nothing else, or nothing */
		assert_int_equal(rd->n - before, (size_t)rc);
		if (rc) {
			assert_int_equal(rd->ev[before].op, BLK_OP_FLUSH);
			bg++;
		}
	}
	rec_log_flushes(rd, from, &logged, &flushes, &most);
	/* 40 commits of 5 log blocks: a flush once past the mark, every 7 commits;
	 * none by a commit */
	if (bg != 40 / (half / 5 + 1) || flushes != bg || most > half + 5)
		fail_msg("%llu background flushes, %llu in all, at most %llu log blocks between two (mark %llu + a commit)",
			 (unsigned long long)bg, (unsigned long long)flushes, (unsigned long long)most,
			 (unsigned long long)half);
	assert_int_equal(jnl_close(j), 0);
	blk_close(&rd->dev);
	blk_close(mem);
}

/* Ordered: buffered data is bounded by max_txn_data_blocks (early writeback, no declare). */
static void test_declare_ordered_early_writeback_bounds_memory(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct jnl *j = rec_jnl(rd, JNL_DATA_ORDERED, 16);
	struct jnl_info info;
	size_t data_writes = 0, from = rd->n;

	(void)state;
	t_txn(j, 1000, 100, 1, false);
	for (size_t i = from; i < rd->n; i++)
		if (rd->ev[i].op == BLK_OP_WRITE && rd->ev[i].blkno < T_JSTART)
			data_writes += rd->ev[i].nblocks;
	assert_int_equal(data_writes, 96);	/* 6 batches of 16; 4 still buffered */
	jnl_info_get(j, &info);
	assert_int_equal(info.commits, 0);
	assert_int_equal(info.declare_blocks, 0);
	assert_int_equal(t_read_ver(j, mem, 1099), 1);
	assert_int_equal(t_read_ver(NULL, mem, 1099), 0);
	assert_int_equal(jnl_close(j), 0);
	assert_int_equal(t_read_ver(NULL, mem, 1099), 1);
	blk_close(&rd->dev);
	blk_close(mem);
}

/*
 * One declared handle may not outgrow one transaction's log footprint: -ENOSPC,
 * journal intact. Early writeback every 16 blocks adds a declare block per batch
 * (rewriting a block still pending would not: it needs no second declare).
 */
static void test_declare_handle_too_large(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .no_commit_thread = true, .max_txn_data_blocks = 16 };
	struct jnl *j = NULL;
	struct jnl_handle *h;
	struct jnl_info info;
	uint8_t *b = jg_alloc_blocks(1);
	uint64_t n = 0;
	int rc = 0;

	(void)state;
	assert_int_equal(jnl_open(mem, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, NULL), 0);
	assert_int_equal(jnl_start(j), 0);
	assert_int_equal(jnl_handle_start(j, 1, &h), 0);
	for (n = 0; n < 300 * 16 && !rc; n++) {
		t_fill(b, 100 + n % 1000, (uint32_t)(n / 1000 + 1));
		rc = jnl_handle_dirty_data(h, 100 + n % 1000, b);
	}
	assert_int_equal(rc, -ENOSPC);
	/* 255-block footprint: commit block + at most 254 declare blocks */
	assert_true(n > 250 * 16 && n <= 255 * 16);
	assert_int_equal(jnl_handle_stop(h), 0);
	jnl_info_get(j, &info);
	assert_false(info.aborted);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	t_txn(j, 10, 2, 1, true);
	assert_int_equal(jnl_close(j), 0);
	assert_int_equal(t_read_ver(NULL, mem, 11), 1);
	free(b);
	blk_close(mem);
}

/*
 * A device that holds home (data) writes until opened: an early batch can be
 * kept in flight while a writer goes on.
 */
struct gate_dev {
	struct blk_dev dev;
	struct blk_dev *lower;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	unsigned int held;	/* home write batches waiting at the gate */
};

static int gate_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct gate_dev *g = (struct gate_dev *)d;
	bool home = false;

	for (unsigned int i = 0; i < n; i++)
		home |= r[i].op == BLK_OP_WRITE && r[i].blkno < T_JSTART;
	pthread_mutex_lock(&g->lock);
	g->held += home;
	while (home && !g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	g->held -= home;
	pthread_mutex_unlock(&g->lock);
	return blk_submit(g->lower, r, n);
}

static int gate_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	return blk_ctl(((struct gate_dev *)d)->lower, cmd, arg);
}

static void gate_close(struct blk_dev *d)
{
	struct gate_dev *g = (struct gate_dev *)d;

	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
}

static const struct blk_dev_ops gate_ops = { .submit = gate_submit, .ctl = gate_ctl,
					     .close = gate_close };

static void gate_set(struct gate_dev *g, bool open)
{
	pthread_mutex_lock(&g->lock);
	g->open = open;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

struct early_writer {
	struct jnl *j;
	unsigned int nblocks;
	unsigned int done;	/* blocks dirtied (atomic) */
	int rc;
};

/* No cmocka assertion off the main thread: the first error is kept in ->rc. */
static void *early_writer_main(void *arg)
{
	struct early_writer *w = arg;
	uint8_t *b = jg_alloc_blocks(1);
	struct jnl_handle *h;

	w->rc = b ? 0 : -ENOMEM;
	for (unsigned int i = 0; i < w->nblocks && !w->rc; i++) {
		w->rc = jnl_handle_start(w->j, 1, &h);
		if (w->rc)
			break;
		t_fill(b, 100 + i, 1);
		w->rc = jnl_handle_dirty_data(h, 100 + i, b);
		w->rc = jnl_handle_stop(h) ?: w->rc;
		__atomic_store_n(&w->done, i + 1, __ATOMIC_RELEASE);
	}
	free(b);
	return NULL;
}

/*
 * With a commit thread, early writeback is the thread's and double-buffered:
 * while the first batch of 16 is held at the device, the writer fills the
 * second, and only then waits. Every declare rule still holds and nothing is
 * lost. (A writer that wrote its own batch would stop at 16 with no wait.)
 */
static void test_declare_early_by_thread(void **state)
{
	struct blk_dev *mem = t_mem_dev();
	struct rec_dev *rd = rec_open(mem);
	struct gate_dev *g = calloc(1, sizeof(*g));
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .max_txn_data_blocks = 16, .commit_interval_ms = 60000 };
	struct early_writer w = { .nblocks = 40 };
	struct jnl_info info = { 0 };
	unsigned int done = 0;
	size_t from;
	pthread_t th;
	int tries;

	(void)state;
	assert_non_null(g);
	g->dev.ops = &gate_ops;
	g->dev.nblocks = mem->nblocks;
	snprintf(g->dev.name, sizeof(g->dev.name), "gate");
	g->lower = &rd->dev;
	g->open = true;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	assert_int_equal(jnl_open(&g->dev, &cfg, &w.j), 0);
	assert_int_equal(jnl_recover(w.j, NULL), 0);
	assert_int_equal(jnl_start(w.j), 0);
	from = rd->n;
	gate_set(g, false);
	assert_int_equal(pthread_create(&th, NULL, early_writer_main, &w), 0);
	/*
	 * The writer fills a second batch while the first is held, then waits.
	 * early_waits alone does not say it is waiting now: a writer that outran
	 * the thread waits once at block 17 (the thread not having taken the first
	 * batch yet) and goes on. So wait (at most 10 s) for both states that last
	 * until the gate opens: the first batch's home writes held at the gate
	 * (the thread declares it first, so taking it is not yet reaching the
	 * gate), and the journal in the waiting state with 31 blocks or more done
	 * (progress is read first; the only wait that can begin after block 31 is
	 * the one for the held batch).
	 */
	for (tries = 0; tries < 10000; tries++) {
		unsigned int held;

		done = __atomic_load_n(&w.done, __ATOMIC_ACQUIRE);
		pthread_mutex_lock(&g->lock);
		held = g->held;
		pthread_mutex_unlock(&g->lock);
		if (held && done >= 31 && jnl_early_writer_waits(w.j))
			break;
		usleep(1000);
	}
	jnl_info_get(w.j, &info);
	if (tries == 10000 || !info.early_waits)
		fail_msg("the writer stopped at block %u with %llu waits for the thread", done,
			 (unsigned long long)info.early_waits);
	/* waiting, it makes no progress: what is read now is where it stopped */
	assert_int_equal(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), done);
	/* two batches at most (the first may have taken one block more if the
	 * writer outran the thread) */
	assert_true(done <= 32);
	pthread_mutex_lock(&g->lock);
	assert_int_equal(g->held, 1);
	pthread_mutex_unlock(&g->lock);
	jnl_info_get(w.j, &info);
	assert_int_equal(info.early_batches, 0);
	gate_set(g, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.rc, 0);
	assert_int_equal(jnl_commit(w.j, 0, true), 0);
	jnl_info_get(w.j, &info);
	assert_int_equal(info.early_batches, 2);
	assert_int_equal(info.commits, 1);
	assert_int_equal(jnl_close(w.j), 0);
	rec_check_declared(rd, from);
	for (unsigned int i = 0; i < w.nblocks; i++)
		assert_int_equal(t_read_ver(NULL, mem, 100 + i), 1);
	blk_close(&g->dev);
	blk_close(&rd->dev);
	blk_close(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_declare_ordering_rules),
		cmocka_unit_test(test_declare_early_writeback),
		cmocka_unit_test(test_declare_early_batch_one_point),
		cmocka_unit_test(test_declare_early_takes_live_copies),
		cmocka_unit_test(test_declare_pend_list_bounded),
		cmocka_unit_test(test_declare_tag_crc_only_when_read),
		cmocka_unit_test(test_declare_recovery_syncraid),
		cmocka_unit_test(test_declare_flushes_per_commit),
		cmocka_unit_test(test_declare_log_flushed_every_so_often),
		cmocka_unit_test(test_declare_log_flushed_in_background),
		cmocka_unit_test(test_declare_ordered_early_writeback_bounds_memory),
		cmocka_unit_test(test_declare_handle_too_large),
		cmocka_unit_test(test_declare_early_by_thread),
	};

	jg_log_set_level(JG_LOG_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
