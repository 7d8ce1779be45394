// SPDX-License-Identifier: MIT
/*
 * tests/unit/journal/test_logdata.c - small commits that log their data
 * (jnl_cfg.log_data_max, commit.c C5, docs/FORMAT.md §3.8): one flush and no
 * declare block; the data stays out of its home until a checkpoint and replays
 * after a crash; a later home write of the block revokes the logged copy, so
 * replay never puts an older version over a newer committed one.
 */
#include "jnl_test.h"

#define T_LOG_MAX 16u

static const enum jnl_data_mode t_log_modes[] = { JNL_DATA_ORDERED, JNL_DATA_DECLARED };

static struct jnl *t_open_log(struct blk_dev *d, enum jnl_data_mode mode, unsigned int log_max,
			      uint64_t max_txn_data, struct jnl_recovery_report *rep)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true,
			       .log_data_max = log_max, .max_txn_data_blocks = max_txn_data };
	struct jnl_recovery_report r;
	struct jnl *j = NULL;

	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, rep ? rep : &r), 0);
	assert_int_equal(jnl_start(j), 0);
	return j;
}

/* A small commit logs its data: one flush, no declare block, home untouched. */
static void test_logdata_small_commit(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 2; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open_log(d, t_log_modes[mi], T_LOG_MAX, 0, NULL);
		struct jnl_info a, b;

		jnl_info_get(j, &a);
		t_txn(j, 10, 2, 1, true);
		t_txn(j, 300, 3, 1, false);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		jnl_info_get(j, &b);
		assert_int_equal(b.logged_data_blocks - a.logged_data_blocks, 3);
		assert_int_equal(b.declare_blocks - a.declare_blocks, 0);
		assert_int_equal(b.flushes - a.flushes, 1);
		for (unsigned int i = 300; i < 303; i++) {
			assert_int_equal(t_read_ver(NULL, d, i), 0);	/* in the log only */
			assert_int_equal(t_read_ver(j, d, i), 1);
		}
		assert_int_equal(jnl_checkpoint(j), 0);
		for (unsigned int i = 300; i < 303; i++)
			assert_int_equal(t_read_ver(NULL, d, i), 1);
		assert_int_equal(jnl_close(j), 0);
		blk_close(d);
	}
}

/* What is not logged: more data than the bound, data already written early,
 * log_data_max 0, the writeback and journal modes. */
static void test_logdata_not_logged(void **state)
{
	static const struct {
		enum jnl_data_mode mode;
		unsigned int log_max, ndata;
		uint64_t max_txn_data;
	} c[] = {
		{ JNL_DATA_ORDERED, T_LOG_MAX, T_LOG_MAX + 1, 0 },
		{ JNL_DATA_DECLARED, T_LOG_MAX, T_LOG_MAX + 1, 0 },
		{ JNL_DATA_DECLARED, T_LOG_MAX, 12, 8 },	/* 8 written early, 4 left */
		{ JNL_DATA_ORDERED, T_LOG_MAX, 12, 8 },
		{ JNL_DATA_DECLARED, 0, 3, 0 },
		{ JNL_DATA_WRITEBACK, T_LOG_MAX, 3, 0 },
		{ JNL_DATA_JOURNAL, T_LOG_MAX, 3, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open_log(d, c[i].mode, c[i].log_max, c[i].max_txn_data, NULL);
		struct jnl_info info;

		t_txn(j, 10, 1, 1, true);
		t_txn(j, 300, c[i].ndata, 1, false);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		jnl_info_get(j, &info);
		if (info.logged_data_blocks)
			fail_msg("case %zu (%s, %u data): %llu data blocks logged", i,
				 jnl_data_mode_name(c[i].mode), c[i].ndata,
				 (unsigned long long)info.logged_data_blocks);
		if (c[i].mode != JNL_DATA_JOURNAL)	/* home before any checkpoint */
			assert_int_equal(t_read_ver(NULL, d, 300 + c[i].ndata - 1), 1);
		assert_int_equal(jnl_close(j), 0);
		blk_close(d);
	}
}

/* Logged data replays after a crash. */
static void test_logdata_replayed(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 2; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open_log(d, t_log_modes[mi], T_LOG_MAX, 0, NULL);
		struct jnl_recovery_report rep;

		t_txn(j, 10, 1, 1, true);
		t_txn(j, 300, 4, 1, false);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		jnl_abandon(j);
		assert_int_equal(t_read_ver(NULL, d, 300), 0);
		j = t_open_log(d, t_log_modes[mi], T_LOG_MAX, 0, &rep);
		assert_int_equal(rep.transactions_replayed, 1);
		assert_int_equal(rep.blocks_replayed, 5);
		for (unsigned int i = 300; i < 304; i++)
			assert_int_equal(t_read_ver(NULL, d, i), 1);
		assert_int_equal(jnl_close(j), 0);
		blk_close(d);
	}
}

/*
 * Block 300 logged at version 1; then written home at version 2 by a larger
 * transaction (at its commit, or early), which commits or not; crash before any
 * checkpoint. Recovery must give version 2 when that transaction committed (the
 * logged copy revoked), and version 1 when it did not (replayed over whatever the
 * home write left).
 */
static void test_logdata_home_write_revokes(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 2; mi++) {
		for (int early = 0; early < 2; early++) {
			for (int committed = 0; committed < 2; committed++) {
				struct blk_dev *d = t_mem_dev();
				struct jnl *j = t_open_log(d, t_log_modes[mi], T_LOG_MAX,
							   early ? 8 : 0, NULL);
				struct jnl_recovery_report rep;
				int64_t want = committed ? 2 : 1, got;

				t_txn(j, 10, 1, 1, true);
				t_txn(j, 300, 1, 1, false);
				assert_int_equal(jnl_commit(j, 0, true), 0);
				t_txn(j, 10, 1, 2, true);
				t_txn(j, 290, T_LOG_MAX + 4, 2, false);	/* 290..309 */
				if (committed)
					assert_int_equal(jnl_commit(j, 0, true), 0);
				else if (early)
					assert_int_equal(t_read_ver(NULL, d, 300), 2);
				jnl_abandon(j);
				j = t_open_log(d, t_log_modes[mi], T_LOG_MAX, 0, &rep);
				got = t_read_ver(NULL, d, 300);
				if (got != want)
					fail_msg("%s, home write %s, %scommitted: block 300 holds version %lld, not %lld",
						 jnl_data_mode_name(t_log_modes[mi]),
						 early ? "early" : "at commit", committed ? "" : "not ",
						 (long long)got, (long long)want);
				if (committed)
					assert_true(rep.blocks_revoked >= 1);
				assert_int_equal(jnl_close(j), 0);
				blk_close(d);
			}
		}
	}
}

/*
 * Declared, the same two transactions; the second commits with its data
 * (JNL_COMMIT_DATA_CSUM) and is the last in the log, but its home write of block
 * 300 never reached the disk (its flush did not return before the crash).
 * Recovery checks the declared data of that last transaction, block 300
 * included although the transaction revokes it (JNL_TB_LREVOKE): the check fails,
 * the transaction is dropped, and block 300 is the logged version 1 again.
 */
static void test_logdata_revoked_home_write_checked(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open_log(d, JNL_DATA_DECLARED, T_LOG_MAX, 0, NULL);
	struct jnl_recovery_report rep;
	uint8_t *b = jg_alloc_blocks(1);

	(void)state;
	t_txn(j, 10, 1, 1, true);
	t_txn(j, 300, 1, 1, false);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	t_txn(j, 10, 1, 2, true);
	t_txn(j, 290, T_LOG_MAX + 4, 2, false);	/* 290..309, home, 300 revoked */
	assert_int_equal(jnl_commit(j, 0, true), 0);
	jnl_abandon(j);
	t_fill(b, 300, 99);			/* the home write of version 2, lost */
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, 300, 1, b, 0), 0);
	j = t_open_log(d, JNL_DATA_DECLARED, T_LOG_MAX, 0, &rep);
	if (t_read_ver(NULL, d, 300) != 1)
		fail_msg("block 300 holds version %lld: the transaction whose home write was lost was accepted",
			 (long long)t_read_ver(NULL, d, 300));
	assert_int_equal(rep.transactions_replayed, 1);
	assert_int_equal(t_read_ver(NULL, d, 10), 1);
	assert_int_equal(jnl_close(j), 0);
	blk_close(d);
	free(b);
}

/* Logged again by a later small commit: the newer logged copy wins, and the
 * revoke the home write would need is not written against it. */
static void test_logdata_logged_twice(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 2; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open_log(d, t_log_modes[mi], T_LOG_MAX, 0, NULL);
		struct jnl_recovery_report rep;

		for (uint32_t v = 1; v <= 3; v++) {
			t_txn(j, 10, 1, v, true);
			t_txn(j, 300, 1, v, false);
			assert_int_equal(jnl_commit(j, 0, true), 0);
		}
		jnl_abandon(j);
		j = t_open_log(d, t_log_modes[mi], T_LOG_MAX, 0, &rep);
		assert_int_equal(rep.transactions_replayed, 3);
		assert_int_equal(rep.blocks_revoked, 0);
		assert_int_equal(t_read_ver(NULL, d, 300), 3);
		assert_int_equal(jnl_close(j), 0);
		blk_close(d);
	}
}

/*
 * Transactions of logged data alone (what a FUSE overwrite whose inode does not
 * change commits, fs_write_flags(FS_WRITE_KEEP_TIMES)), fsynced one by one,
 * with checkpoints taking them home and big transactions writing home over
 * them, cut at every write and flush: after recovery each block holds a
 * version that was written to it, no older than the last one made durable
 * and no newer than the last step started.
 */
#define T_DO_STEPS 24
#define T_DO_FIRST 300u
#define T_DO_BLOCKS 20u

struct t_do_model {
	uint32_t durable[T_DO_BLOCKS];	/* the oldest version recovery may show */
	uint32_t last[T_DO_BLOCKS];	/* the newest version written */
	uint64_t written[T_DO_BLOCKS];	/* bit v: version v was written */
};

static void t_do_wrote(struct t_do_model *m, uint64_t first, unsigned int n, uint32_t ver)
{
	for (uint64_t b = first; b < first + n; b++) {
		m->last[b - T_DO_FIRST] = ver;
		m->written[b - T_DO_FIRST] |= 1ull << ver;
	}
}

/* Returns true when the workload ran to the end with no cut. */
static bool t_do_run(struct blk_dev *f, struct raid_fault_domain *dom, enum jnl_data_mode mode,
		     struct t_do_model *m)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true,
			       .log_data_max = T_LOG_MAX };
	struct jnl *j = NULL;
	int rc;

	if (jnl_open(f, &cfg, &j) || jnl_recover(j, NULL) || jnl_start(j))
		goto dead;
	for (uint32_t s = 1; s <= T_DO_STEPS; s++) {
		uint64_t a = T_DO_FIRST + (s * 7) % T_DO_BLOCKS, b = T_DO_FIRST + (s * 3) % T_DO_BLOCKS;

		if (raid_fault_domain_is_cut(dom))
			goto dead;
		if (s % 6 == 0) {
			/* too big to log: home, revoking the logged copies it covers */
			t_txn(j, T_DO_FIRST, T_DO_BLOCKS, s, false);
			t_do_wrote(m, T_DO_FIRST, T_DO_BLOCKS, s);
		} else {
			t_txn(j, a, 1, s, false);
			t_do_wrote(m, a, 1, s);
			if (b != a) {
				t_txn(j, b, 1, s, false);
				t_do_wrote(m, b, 1, s);
			}
		}
		rc = jnl_commit(j, 0, true);
		if (raid_fault_domain_is_cut(dom))
			goto dead;
		assert_int_equal(rc, 0);
		memcpy(m->durable, m->last, sizeof(m->durable));
		if (s % 5 == 0)
			assert_int_equal(jnl_checkpoint(j), 0);
	}
	{
		struct jnl_info info;

		/* it does what it says: the small commits logged their data */
		jnl_info_get(j, &info);
		assert_true(info.logged_data_blocks >= T_DO_STEPS - T_DO_STEPS / 6);
	}
	rc = jnl_close(j);
	if (raid_fault_domain_is_cut(dom))
		return false;
	assert_int_equal(rc, 0);
	return true;
dead:
	jnl_abandon(j);
	return false;
}

static void test_logdata_data_only_crash(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 2; mi++) {
		enum jnl_data_mode mode = t_log_modes[mi];
		uint64_t cut;

		for (cut = 1;; cut++) {
			struct raid_fault_cfg fc = { .cut_after_writes = cut, .seed = cut,
						     .keep_percent = 50, .cut_at_flushes = true };
			struct raid_fault_domain *dom;
			struct blk_dev *mem = t_mem_dev(), *f;
			struct t_do_model m = { 0 };
			struct jnl *j;
			bool done;

			assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
			assert_int_equal(raid_dev_fault_open(dom, mem, &f), 0);
			done = t_do_run(f, dom, mode, &m);
			blk_close(f);
			raid_fault_domain_free(dom);
			j = t_open_log(mem, mode, T_LOG_MAX, 0, NULL);
			jnl_abandon(j);
			for (unsigned int k = 0; k < T_DO_BLOCKS; k++) {
				int64_t v = t_read_ver(NULL, mem, T_DO_FIRST + k);

				if (v < m.durable[k] || v > m.last[k] ||
				    (v > 0 && !(m.written[k] & (1ull << v))) || (v == 0 && m.durable[k]))
					fail_msg("%s cut %llu: block %u holds version %lld; durable %u, "
						 "last %u", jnl_data_mode_name(mode),
						 (unsigned long long)cut, T_DO_FIRST + k, (long long)v,
						 m.durable[k], m.last[k]);
			}
			blk_close(mem);
			if (done) {
				assert_true(cut > 40);	/* the workload really wrote */
				break;
			}
		}
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_logdata_small_commit),
		cmocka_unit_test(test_logdata_not_logged),
		cmocka_unit_test(test_logdata_replayed),
		cmocka_unit_test(test_logdata_home_write_revokes),
		cmocka_unit_test(test_logdata_logged_twice),
		cmocka_unit_test(test_logdata_revoked_home_write_checked),
		cmocka_unit_test(test_logdata_data_only_crash),
	};

	jg_log_set_level(JG_LOG_ERR - 1);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
