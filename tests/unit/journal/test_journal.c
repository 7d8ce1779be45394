// SPDX-License-Identifier: MIT
/*
 * tests/unit/journal/test_journal.c - the journal object: format/open/start/close,
 * jnl_read() overlay at every stage, commit, checkpoint and tail, wrap, abort,
 * superblock verification.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jnl_test.h"
#include "../../../src/journal/jnl_format.h"
#include "../../../src/journal/jnl_i.h"

static const enum jnl_data_mode t_modes[] = {
	JNL_DATA_WRITEBACK, JNL_DATA_ORDERED, JNL_DATA_JOURNAL, JNL_DATA_DECLARED,
};

static void test_jnl_mode_names(void **state)
{
	enum jnl_data_mode m;

	(void)state;
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(jnl_data_mode_parse(jnl_data_mode_name(t_modes[i]), &m), 0);
		assert_int_equal(m, t_modes[i]);
	}
	assert_null(jnl_data_mode_name((enum jnl_data_mode)7));
	assert_int_equal(jnl_data_mode_parse("bogus", &m), -EINVAL);
}

/* Close writes everything home and marks the log clean; reopen needs no recovery. */
static void test_jnl_close_clean(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, t_modes[mi], true);
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = t_modes[mi] };

		t_txn(j, 10, 5, 1, true);
		t_txn(j, 100, 7, 1, false);
		assert_int_equal(jnl_close(j), 0);
		for (unsigned int i = 0; i < 5; i++)
			assert_int_equal(t_read_ver(NULL, d, 10 + i), 1);
		for (unsigned int i = 0; i < 7; i++)
			assert_int_equal(t_read_ver(NULL, d, 100 + i), 1);
		assert_int_equal(jnl_open(d, &cfg, &j), 0);
		assert_false(jnl_needs_recovery(j));
		jnl_abandon(j);
		blk_close(d);
	}
}

/* jnl_read returns the newest copy: running, committing-era, checkpoint, home. */
static void test_jnl_read_newest_every_stage(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, t_modes[mi], true);
		struct jnl_handle *h;
		uint8_t *b = jg_alloc_blocks(4);
		uint64_t tid;

		/* running: visible through the journal, not on the device */
		tid = t_txn(j, 20, 3, 1, true);
		t_txn(j, 30, 2, 1, false);
		assert_int_equal(t_read_ver(j, d, 20), 1);
		assert_int_equal(t_read_ver(j, d, 31), 1);
		assert_int_equal(t_read_ver(NULL, d, 20), 0);
		/* a handle overwrites within the running transaction */
		t_txn(j, 21, 1, 2, true);
		assert_int_equal(t_read_ver(j, d, 21), 2);
		/* committed: meta in the log, not home yet; data home (except journal mode) */
		assert_int_equal(jnl_commit(j, tid, true), 0);
		assert_int_equal(t_read_ver(j, d, 21), 2);
		assert_int_equal(t_read_ver(NULL, d, 20), 0);
		if (t_modes[mi] != JNL_DATA_JOURNAL)
			assert_int_equal(t_read_ver(NULL, d, 30), 1);
		/* a newer running copy over a committed one */
		t_txn(j, 20, 1, 3, true);
		assert_int_equal(t_read_ver(j, d, 20), 3);
		/* multi-block read mixing copies and device blocks */
		assert_int_equal(jnl_read(j, 19, 4, b), 0);
		assert_int_equal(t_version_of(b, 19), 0);
		assert_int_equal(t_version_of(b + JG_BLOCK_SIZE, 20), 3);
		assert_int_equal(t_version_of(b + 2 * JG_BLOCK_SIZE, 21), 2);
		assert_int_equal(t_version_of(b + 3 * JG_BLOCK_SIZE, 22), 1);
		/* checkpoint: committed copies home, running copy still newest */
		assert_int_equal(jnl_checkpoint(j), 0);
		assert_int_equal(t_read_ver(NULL, d, 21), 2);
		assert_int_equal(t_read_ver(NULL, d, 20), 1);
		assert_int_equal(t_read_ver(j, d, 20), 3);
		/* forget drops a pending write */
		assert_int_equal(jnl_handle_start(j, 2, &h), 0);
		t_fill(b, 40, 9);
		assert_int_equal(jnl_handle_dirty_meta(h, 40, b), 0);
		assert_int_equal(jnl_handle_forget(h, 40), 0);
		assert_int_equal(jnl_handle_stop(h), 0);
		assert_int_equal(t_read_ver(j, d, 40), 0);
		assert_int_equal(jnl_close(j), 0);
		assert_int_equal(t_read_ver(NULL, d, 20), 3);
		assert_int_equal(t_read_ver(NULL, d, 40), 0);
		free(b);
		blk_close(d);
	}
}

/* Checkpoint moves the tail: used blocks drop to zero and the superblock follows. */
static void test_jnl_checkpoint_moves_tail(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_info info;
	uint8_t *sb = jg_alloc_blocks(1);
	uint64_t start0, start1;

	(void)state;
	assert_int_equal(blk_rw(d, BLK_OP_READ, T_JSTART, 1, sb, 0), 0);
	start0 = jg_le64(((struct jnl_sb *)sb)->start);
	assert_int_not_equal(start0, 0);	/* in use */
	assert_int_equal(jnl_commit(j, t_txn(j, 50, 10, 1, true), true), 0);
	jnl_info_get(j, &info);
	assert_int_equal(info.log_used_blocks, 12);	/* descriptor + 10 + commit */
	assert_int_equal(info.commits, 1);
	assert_int_equal(jnl_checkpoint(j), 0);
	jnl_info_get(j, &info);
	assert_int_equal(info.log_used_blocks, 0);
	assert_int_equal(blk_rw(d, BLK_OP_READ, T_JSTART, 1, sb, 0), 0);
	start1 = jg_le64(((struct jnl_sb *)sb)->start);
	assert_int_equal(start1, start0 + 12);
	assert_int_equal(t_read_ver(NULL, d, 55), 1);
	assert_int_equal(jnl_close(j), 0);
	assert_int_equal(blk_rw(d, BLK_OP_READ, T_JSTART, 1, sb, 0), 0);
	assert_int_equal(jg_le64(((struct jnl_sb *)sb)->start), 0);
	free(sb);
	blk_close(d);
}

/*
 * (K2) The background checkpoint: a pass fixes the copies committed so far,
 * writes them home a few at a time while commits go on between its steps, and
 * then moves the tail to the first transaction after them. A copy a later
 * transaction replaced is not written; a crash after the pass replays only the
 * transactions after the new tail, and every block reads its newest version.
 */
static void test_jnl_checkpoint_background(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_recovery_report rep;
	struct jnl_info info;
	uint8_t *sb = jg_alloc_blocks(1);
	uint64_t used_after = 0;
	unsigned int steps = 0;
	int rc;

	(void)state;
	assert_int_equal(jnl_checkpoint_step(j), 0);	/* an empty log: nothing to do */
	/* 30 transactions of 10 blocks: 360 log blocks, past a quarter of 1023 */
	for (uint32_t v = 1; v <= 30; v++)
		assert_int_equal(jnl_commit(j, t_txn(j, 100 + (v - 1) * 10, 10, v, true), true), 0);
	jnl_info_get(j, &info);
	assert_int_equal(info.log_used_blocks, 360);
	assert_int_equal(jnl_checkpoint_step(j), 1);	/* the pass starts */
	assert_int_equal(jnl_checkpoint_step(j), 1);	/* its first blocks go home */
	assert_int_equal(t_read_ver(NULL, d, 100), 1);
	/* between steps: block 399 (version 30, not home yet) is logged again, and
	 * block 398 is freed; both transactions stay past the new tail */
	assert_int_equal(jnl_commit(j, t_txn(j, 399, 1, 31, true), true), 0);
	{
		struct jnl_handle *h = NULL;

		assert_int_equal(jnl_handle_start(j, 2, &h), 0);
		assert_int_equal(jnl_handle_revoke(h, 398), 0);
		assert_int_equal(jnl_handle_stop(h), 0);
		assert_int_equal(jnl_commit(j, 0, true), 0);
	}
	jnl_info_get(j, &info);
	used_after = info.log_used_blocks - 360;
	while ((rc = jnl_checkpoint_step(j)) == 1)
		assert_true(++steps < 100);
	assert_int_equal(rc, 0);
	jnl_info_get(j, &info);
	assert_int_equal(info.checkpoint_passes, 1);
	assert_int_equal(info.checkpoints, 0);
	assert_int_equal(info.log_used_blocks, used_after);
	/* the superblock names the new tail; home has the pass's blocks */
	assert_int_equal(blk_rw(d, BLK_OP_READ, T_JSTART, 1, sb, 0), 0);
	assert_int_equal(jg_le64(((struct jnl_sb *)sb)->start), 1 + 360);
	for (uint64_t b = 100; b < 398; b++)
		assert_int_equal(t_read_ver(NULL, d, b), (b - 100) / 10 + 1);
	assert_int_equal(t_read_ver(NULL, d, 398), 0);	/* freed: never written */
	assert_int_equal(t_read_ver(NULL, d, 399), 0);	/* replaced: not written */
	assert_int_equal(t_read_ver(j, d, 399), 31);
	assert_int_equal(jnl_checkpoint_step(j), 0);	/* below the mark again */

	/* crash: recovery replays the two transactions after the tail */
	jnl_abandon(j);
	j = t_reopen(d, JNL_DATA_ORDERED, false, &rep);
	assert_int_equal(rep.transactions_replayed, 2);
	assert_int_equal(t_read_ver(NULL, d, 399), 31);
	assert_int_equal(t_read_ver(NULL, d, 397), 30);
	assert_int_equal(t_read_ver(NULL, d, 398), 0);
	jnl_abandon(j);
	free(sb);
	blk_close(d);
}

/* Many transactions through a small log: it wraps, each state stays right. */
static void test_jnl_log_wraps(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, t_modes[mi], true);
		uint32_t ver[64] = { 0 };
		uint64_t seed = 12345 + mi, x = seed;

		for (unsigned int t = 0; t < 400; t++) {
			struct jnl_handle *h;
			uint8_t *b = jg_alloc_blocks(1);

			assert_int_equal(jnl_handle_start(j, 20, &h), 0);
			for (unsigned int k = 0; k < 17; k++) {
				uint64_t blk;

				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				blk = x % 64;
				t_fill(b, blk, ++ver[blk]);
				if (blk < 40)
					assert_int_equal(jnl_handle_dirty_meta(h, blk, b), 0);
				else
					assert_int_equal(jnl_handle_dirty_data(h, blk, b), 0);
			}
			assert_int_equal(jnl_handle_stop(h), 0);
			free(b);
			if (t % 3 == 0)
				assert_int_equal(jnl_commit(j, 0, true), 0);
			if (t % 50 == 0)
				for (unsigned int k = 0; k < 64; k++)
					if (t_read_ver(j, d, k) != ver[k])
						fail_msg("mode %s seed %llu txn %u blk %u: %lld != %u",
							 jnl_data_mode_name(t_modes[mi]),
							 (unsigned long long)seed, t, k,
							 (long long)t_read_ver(j, d, k), ver[k]);
		}
		/* crash with everything committed: recovery must give the same state */
		assert_int_equal(jnl_commit(j, 0, true), 0);
		jnl_abandon(j);
		j = t_open(d, t_modes[mi], false);
		for (unsigned int k = 0; k < 64; k++)
			if (t_read_ver(NULL, d, k) != ver[k])
				fail_msg("mode %s after recovery blk %u: %lld != %u",
					 jnl_data_mode_name(t_modes[mi]), k,
					 (long long)t_read_ver(NULL, d, k), ver[k]);
		jnl_abandon(j);
		blk_close(d);
	}
}

/* An I/O error on the log aborts the journal: handle_start returns -EROFS from then on. */
static void test_jnl_abort_on_log_error(void **state)
{
	struct raid_fault_cfg fc = { 0 };
	struct raid_fault_domain *dom;
	struct blk_dev *mem = t_mem_dev(), *f;
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .no_commit_thread = true };
	struct jnl_handle *h;
	struct jnl_info info;
	struct jnl *j;

	(void)state;
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	assert_int_equal(raid_dev_fault_open(dom, mem, &f), 0);
	assert_int_equal(jnl_open(f, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, NULL), 0);
	assert_int_equal(jnl_start(j), 0);
	for (uint64_t b = T_JSTART + 1; b < T_JSTART + T_JBLOCKS; b++)
		assert_int_equal(raid_dev_fault_fail_block(f, b, false, true), 0);
	t_txn(j, 5, 2, 1, true);
	assert_int_not_equal(jnl_commit(j, 0, true), 0);
	jnl_info_get(j, &info);
	assert_true(info.aborted);
	assert_int_equal(jnl_handle_start(j, 1, &h), -EROFS);
	assert_int_equal(jnl_handle_start(j, 1, &h), -EROFS);
	assert_int_not_equal(jnl_close(j), 0);
	blk_close(f);
	blk_close(mem);
	raid_fault_domain_free(dom);
}

/* The superblock verifier: bad crc -> -EUCLEAN, unknown incompat -> -EOPNOTSUPP. */
static void test_jnl_open_verifies_superblock(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl_cfg cfg = { .start_blkno = T_JSTART };
	uint8_t *sb = jg_alloc_blocks(1);
	struct jnl_sb *s = (struct jnl_sb *)sb;
	struct jnl *j;

	(void)state;
	assert_int_equal(blk_rw(d, BLK_OP_READ, T_JSTART, 1, sb, 0), 0);
	sb[200] ^= 1;
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, T_JSTART, 1, sb, 0), 0);
	assert_int_equal(jnl_open(d, &cfg, &j), -EUCLEAN);
	sb[200] ^= 1;
	s->feature_incompat = jg_cpu_to_le32(jg_le32(s->feature_incompat) | 0x80000000u);
	jg_blk_crc_set(sb, JG_BLOCK_SIZE, jg_crc_seed(t_uuid));
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, T_JSTART, 1, sb, 0), 0);
	assert_int_equal(jnl_open(d, &cfg, &j), -EOPNOTSUPP);
	/* wrong home address: the superblock of another place */
	assert_int_equal(jnl_format(d, T_JSTART, T_JBLOCKS, t_uuid), 0);
	cfg.start_blkno = T_JSTART + 1;
	assert_int_equal(jnl_open(d, &cfg, &j), -EUCLEAN);
	free(sb);
	blk_close(d);
}

/* Credits that can never fit are refused; a full transaction commits and a new one starts. */
static void test_jnl_credits(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_handle *h;
	struct jnl_info info;
	uint64_t tid0;

	(void)state;
	assert_int_equal(jnl_handle_start(j, T_JBLOCKS, &h), -EINVAL);
	tid0 = t_txn(j, 0, 100, 1, true);
	t_txn(j, 100, 100, 1, true);
	jnl_info_get(j, &info);
	assert_int_equal(info.commits, 0);
	t_txn(j, 200, 100, 1, true);	/* 255-block limit: this one forces a commit */
	jnl_info_get(j, &info);
	assert_int_equal(info.commits, 1);
	assert_true(info.running_tid > tid0);
	assert_int_equal(jnl_close(j), 0);
	for (unsigned int i = 0; i < 300; i++)
		assert_int_equal(t_read_ver(NULL, d, i), 1);
	blk_close(d);
}

/* Worker of the concurrency test: its own blocks, read-your-writes through jnl_read. */
struct t_worker {
	struct jnl *j;
	struct blk_dev *d;
	unsigned int id;
	uint32_t ver[5];
	int err;
};

static void *t_worker_main(void *arg)
{
	struct t_worker *w = arg;
	uint8_t *b = jg_alloc_blocks(1);
	uint64_t base = 100 + w->id * 10;

	for (uint32_t t = 1; t <= 150 && !w->err; t++) {
		struct jnl_handle *h;
		uint64_t tid;

		if (jnl_handle_start(w->j, 4, &h)) {
			w->err = 1;
			break;
		}
		for (unsigned int k = 0; k < 5; k++) {
			if ((t + k) % 2)
				continue;
			t_fill(b, base + k, t);
			if ((k < 3 ? jnl_handle_dirty_meta(h, base + k, b) :
				     jnl_handle_dirty_data(h, base + k, b)))
				w->err = 2;
			w->ver[k] = t;
		}
		tid = jnl_handle_tid(h);
		jnl_handle_stop(h);
		for (unsigned int k = 0; k < 5 && !w->err; k++) {
			int64_t v1;

			if (jnl_read(w->j, base + k, 1, b))
				w->err = 5;
			v1 = t_version_of(b, base + k);
			if (v1 != w->ver[k]) {
				print_error("worker %u step %u block %llu: read version %lld, wrote %u\n",
					    w->id, t, (unsigned long long)(base + k), (long long)v1, w->ver[k]);
				w->err = 3;
			}
		}
		if (t % 10 == 0 && jnl_commit(w->j, tid, true))
			w->err = 4;
	}
	free(b);
	return NULL;
}

/* Handles from several threads with the commit thread on a short timer. */
static void test_jnl_threads_concurrent_handles(void **state)
{
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = t_modes[mi],
				       .commit_interval_ms = 1, .max_txn_data_blocks = 4 };
		struct t_worker w[3];
		pthread_t th[3];
		struct jnl *j;

		(void)state;
		assert_int_equal(jnl_open(d, &cfg, &j), 0);
		assert_int_equal(jnl_recover(j, NULL), 0);
		assert_int_equal(jnl_start(j), 0);
		for (unsigned int i = 0; i < 3; i++) {
			w[i] = (struct t_worker){ .j = j, .d = d, .id = i };
			assert_int_equal(pthread_create(&th[i], NULL, t_worker_main, &w[i]), 0);
		}
		for (unsigned int i = 0; i < 3; i++)
			pthread_join(th[i], NULL);
		assert_int_equal(jnl_close(j), 0);
		for (unsigned int i = 0; i < 3; i++) {
			if (w[i].err)
				fail_msg("mode %s worker %u failed at step %d", jnl_data_mode_name(t_modes[mi]),
					 i, w[i].err);
			for (unsigned int k = 0; k < 5; k++)
				assert_int_equal(t_read_ver(NULL, d, 100 + i * 10 + k), w[i].ver[k]);
		}
		blk_close(d);
	}
}

/*
 * The commit thread sleeps until a commit is due or asked for: handles that
 * start and stop do not wake it (each wake-up is two context switches per
 * filesystem operation); a waiting commit runs in its caller, without it; a
 * commit request that does not wait wakes it.
 */
static void test_jnl_thread_sleeps_through_handles(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .commit_interval_ms = 60000 };
	struct jnl_info before, after;
	struct jnl *j;

	(void)state;
	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, NULL), 0);
	assert_int_equal(jnl_start(j), 0);
	jnl_info_get(j, &before);
	for (unsigned int i = 0; i < 2000; i++)
		t_txn(j, 40 + i % 8, 1, i + 1, false);
	jnl_info_get(j, &after);
	/* a few for the scheduler's sake, never one per handle */
	if (after.thread_wakeups - before.thread_wakeups > 20)
		fail_msg("2000 handles woke the commit thread %llu times",
			 (unsigned long long)(after.thread_wakeups - before.thread_wakeups));
	assert_int_equal(after.commits, before.commits);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	jnl_info_get(j, &after);
	assert_int_equal(after.commits, before.commits + 1);
	if (after.thread_wakeups - before.thread_wakeups > 20)
		fail_msg("a waiting commit woke the commit thread %llu times",
			 (unsigned long long)(after.thread_wakeups - before.thread_wakeups));
	before = after;
	t_txn(j, 40, 1, 2001, false);
	assert_int_equal(jnl_commit(j, 0, false), 0);
	for (unsigned int ms = 0; ms < 10000 && after.commits == before.commits; ms++) {
		usleep(1000);
		jnl_info_get(j, &after);
	}
	assert_int_equal(after.commits, before.commits + 1);
	assert_true(after.thread_wakeups > before.thread_wakeups);
	assert_int_equal(jnl_close(j), 0);
	assert_int_equal(t_read_ver(NULL, d, 40), 2001);
	for (unsigned int k = 1; k < 8; k++)
		assert_int_equal(t_read_ver(NULL, d, 40 + k), 1993 + k);
	blk_close(d);
}

/* Transactions with no logged block (only a forget, only a revoke) commit and replay. */
static void test_jnl_transactions_without_copies(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, t_modes[mi], true);
		struct jnl_recovery_report rep;
		struct jnl_handle *h;
		struct jnl_info info;
		uint8_t *b = jg_alloc_blocks(1);

		t_txn(j, 30, 2, 1, true);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		assert_int_equal(jnl_handle_start(j, 1, &h), 0);
		assert_int_equal(jnl_handle_forget(h, 30), 0);
		assert_int_equal(jnl_handle_stop(h), 0);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		assert_int_equal(jnl_handle_start(j, 1, &h), 0);
		assert_int_equal(jnl_handle_revoke(h, 31), 0);
		assert_int_equal(jnl_handle_stop(h), 0);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		/* data dirtied then forgotten in one transaction */
		assert_int_equal(jnl_handle_start(j, 1, &h), 0);
		t_fill(b, 500, 7);
		assert_int_equal(jnl_handle_dirty_data(h, 500, b), 0);
		assert_int_equal(jnl_handle_forget(h, 500), 0);
		assert_int_equal(jnl_handle_stop(h), 0);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		jnl_info_get(j, &info);
		assert_int_equal(info.commits, 4);
		jnl_abandon(j);
		j = t_open(d, t_modes[mi], false);
		jnl_info_get(j, &info);
		rep = info.last_recovery;
		assert_int_equal(rep.transactions_replayed, 4);
		assert_int_equal(rep.blocks_revoked, 1);	/* 31's copy of the first */
		assert_int_equal(t_read_ver(NULL, d, 30), 1);	/* forget does not revoke */
		assert_int_equal(t_read_ver(NULL, d, 31), 0);
		assert_int_equal(t_read_ver(NULL, d, 500), 0);
		jnl_abandon(j);
		free(b);
		blk_close(d);
	}
}

/*
 * The caller's idea of the region (jnl_cfg.nblocks, the filesystem superblock's
 * journal_blocks) must match the journal superblock's: a journal superblock of
 * another size is refused, naming it, without a write. 0: not checked.
 */
static void test_jnl_open_checks_region_size(void **state)
{
	static const uint64_t sizes[] = { T_JBLOCKS - 1, T_JBLOCKS + 1, T_JBLOCKS * 2, UINT64_MAX };
	struct blk_dev *d = t_mem_dev();
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .no_commit_thread = true };
	struct jnl *j = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int rc;

		cfg.nblocks = sizes[i];
		rc = jnl_open(d, &cfg, &j);
		if (rc != -EUCLEAN)
			fail_msg("region of %llu blocks for a journal of %u: open -> %d",
				 (unsigned long long)sizes[i], T_JBLOCKS, rc);
	}
	cfg.nblocks = T_JBLOCKS;
	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	jnl_abandon(j);
	cfg.nblocks = 0;
	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	jnl_abandon(j);
	blk_close(d);
}

/* A journal function named after its lock checks the lock is held: called
 * without it, it aborts (the negative control of the held-lock assertions). */
static void test_jnl_locked_asserts_its_lock(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_DECLARED, true);
	int status;
	pid_t pid;

	(void)state;
	jg_mutex_lock(&j->lock);
	(void)jnl_flush_wanted_locked(j);	/* held: fine */
	jg_mutex_unlock(&j->lock);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		(void)jnl_flush_wanted_locked(j);	/* not held: aborts */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	assert_int_equal(jnl_close(j), 0);
	blk_close(d);
}

/*
 * Issue 46: jnl_info counts the memory of the journal's block copies, now and
 * the most held, through every stage: a copy per block dirtied (one for a block
 * dirtied again in the same transaction), those committed kept until
 * checkpointed, a forgotten block's copy dropped, data written early freed.
 */
static void t_copies_are(struct jnl *j, uint64_t now, uint64_t peak)
{
	struct jnl_info info;

	jnl_info_get(j, &info);
	assert_int_equal(info.copy_bytes, now * JG_BLOCK_SIZE);
	assert_int_equal(info.copy_peak_bytes, peak * JG_BLOCK_SIZE);
}

static void test_jnl_info_counts_copies(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, t_modes[mi], true);
		struct jnl_handle *h;
		uint8_t *b = jg_alloc_blocks(1);
		uint64_t tid;

		t_copies_are(j, 0, 0);
		tid = t_txn(j, 20, 3, 1, true);
		t_txn(j, 30, 2, 1, false);
		t_copies_are(j, 5, 5);
		t_txn(j, 20, 1, 2, true); /* the same copy, changed */
		t_copies_are(j, 5, 5);
		assert_int_equal(jnl_commit(j, tid, true), 0);
		/* the data is home, except in data=journal mode (logged: kept as metadata) */
		t_copies_are(j, t_modes[mi] == JNL_DATA_JOURNAL ? 5 : 3, 5);
		assert_int_equal(jnl_checkpoint(j), 0);
		t_copies_are(j, 0, 5);
		assert_int_equal(jnl_handle_start(j, 2, &h), 0);
		t_fill(b, 40, 9);
		assert_int_equal(jnl_handle_dirty_meta(h, 40, b), 0);
		t_copies_are(j, 1, 5);
		assert_int_equal(jnl_handle_forget(h, 40), 0);
		assert_int_equal(jnl_handle_stop(h), 0);
		t_copies_are(j, 0, 5);
		assert_int_equal(jnl_close(j), 0);
		free(b);
		blk_close(d);
	}
}

/* A journal on @d opened, recovered (nothing to replay) and started. */
static struct jnl *t_jnl_started(struct blk_dev *d, const struct jnl_cfg *cfg)
{
	struct jnl_recovery_report rep;
	struct jnl *j = NULL;

	assert_int_equal(jnl_open(d, cfg, &j), 0);
	assert_int_equal(jnl_recover(j, &rep), 0);
	assert_int_equal(jnl_start(j), 0);
	return j;
}

/* ... and data written home early, a batch at a time, is counted out. */
static void test_jnl_info_counts_early_copies(void **state)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .no_commit_thread = true, .max_txn_data_blocks = 4 };
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = NULL;

	(void)state;
	j = t_jnl_started(d, &cfg);
	t_txn(j, 100, 10, 1, false);	/* two batches of 4 written early, 2 left */
	t_copies_are(j, 2, 4);
	assert_int_equal(jnl_close(j), 0);
	assert_int_equal(t_read_ver(NULL, d, 109), 1);
	blk_close(d);
}

/*
 * Issue 46: data copies are taken side by side from the journal's arena, so an
 * early batch of a sequential write goes home from the copies themselves, with
 * no staging buffer, even across the end of a slab (512 blocks); copies that
 * are not side by side (blocks dirtied in descending order) are staged into
 * one request as before. Either way the device ends up with every block.
 */
static void test_jnl_early_data_from_copies(void **state)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .no_commit_thread = true, .max_txn_data_blocks = 600 };
	struct blk_dev *d = t_mem_dev();
	struct jnl_handle *h = NULL;
	uint8_t *b = jg_alloc_blocks(1);
	struct jnl_info info;
	struct jnl *j = NULL;

	(void)state;
	j = t_jnl_started(d, &cfg);
	t_txn(j, 100, 600, 1, false);	/* one early batch: blocks 100..611 in the first slab */
	jnl_info_get(j, &info);
	assert_int_equal(info.copy_bytes, 0);
	assert_int_equal(info.stage_peak_bytes, 0);
	for (unsigned int i = 100; i < 700; i++)
		assert_int_equal(t_read_ver(NULL, d, i), 1);

	assert_int_equal(jnl_handle_start(j, 1, &h), 0);
	for (unsigned int i = 0; i < 20; i++) {
		t_fill(b, 1019 - i, 2);
		assert_int_equal(jnl_handle_dirty_data(h, 1019 - i, b), 0);
	}
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	jnl_info_get(j, &info);
	assert_int_equal(info.stage_peak_bytes, (uint64_t)JNL_MERGE_MAX * JG_BLOCK_SIZE);
	assert_int_equal(jnl_close(j), 0);
	for (unsigned int i = 0; i < 20; i++)
		assert_int_equal(t_read_ver(NULL, d, 1000 + i), 2);
	free(b);
	blk_close(d);
}

/*
 * Issue 46: short runs share staging buffers. A commit whose data is 40 pairs
 * of contiguous blocks (staged: each pair one request, its copies not side by
 * side) stages them all in one buffer, not one buffer a pair (40 MiB
 * before), and the pool keeps it; the device ends up with every block.
 */
static void test_jnl_short_runs_share_staging(void **state)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_ORDERED,
			       .no_commit_thread = true, .max_txn_data_blocks = 600 };
	struct blk_dev *d = t_mem_dev();
	struct jnl_handle *h = NULL;
	uint8_t *b = jg_alloc_blocks(1);
	struct jnl_info info;
	struct jnl *j = NULL;

	(void)state;
	j = t_jnl_started(d, &cfg);
	assert_int_equal(jnl_handle_start(j, 1, &h), 0);
	for (unsigned int i = 0; i < 80; i++) {
		/* each pair's second block first: copies not side by side */
		uint64_t blk = 300 + (i / 2) * 10 + 1 - i % 2;

		t_fill(b, blk, 3);
		assert_int_equal(jnl_handle_dirty_data(h, blk, b), 0);
	}
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	jnl_info_get(j, &info);
	assert_int_equal(info.stage_peak_bytes, (uint64_t)JNL_MERGE_MAX * JG_BLOCK_SIZE);
	assert_int_equal(info.stage_bytes, (uint64_t)JNL_MERGE_MAX * JG_BLOCK_SIZE);
	assert_int_equal(jnl_close(j), 0);
	for (unsigned int i = 0; i < 80; i++)
		assert_int_equal(t_read_ver(NULL, d, 300 + (i / 2) * 10 + i % 2), 3);
	free(b);
	blk_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jnl_mode_names),
		cmocka_unit_test(test_jnl_close_clean),
		cmocka_unit_test(test_jnl_read_newest_every_stage),
		cmocka_unit_test(test_jnl_checkpoint_moves_tail),
		cmocka_unit_test(test_jnl_checkpoint_background),
		cmocka_unit_test(test_jnl_log_wraps),
		cmocka_unit_test(test_jnl_abort_on_log_error),
		cmocka_unit_test(test_jnl_open_verifies_superblock),
		cmocka_unit_test(test_jnl_open_checks_region_size),
		cmocka_unit_test(test_jnl_credits),
		cmocka_unit_test(test_jnl_threads_concurrent_handles),
		cmocka_unit_test(test_jnl_thread_sleeps_through_handles),
		cmocka_unit_test(test_jnl_transactions_without_copies),
		cmocka_unit_test(test_jnl_locked_asserts_its_lock),
		cmocka_unit_test(test_jnl_info_counts_copies),
		cmocka_unit_test(test_jnl_info_counts_early_copies),
		cmocka_unit_test(test_jnl_early_data_from_copies),
		cmocka_unit_test(test_jnl_short_runs_share_staging),
	};

	jg_log_set_level(JG_LOG_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
