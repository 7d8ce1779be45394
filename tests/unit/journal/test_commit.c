// SPDX-License-Identifier: MIT
/*
 * tests/unit/journal/test_commit.c - the error paths of a commit (commit.c).
 *
 * A commit that fails must not leave "committing" set with the journal alive:
 * every later fsync would wait for it forever, and a handle start on a full
 * transaction would freeze the volume. An allocation of the commit path is made
 * to fail at each position in turn (jnl_fault_alloc_set(); the device errors
 * are covered in test_journal.c), and after each failure:
 *   - jnl_commit() returned promptly, 0 when the transaction is durable anyway
 *     (a failure after the commit point), else an error and the journal aborted;
 *   - a later jnl_commit(wait) returns at once (-EROFS, or 0 when nothing is
 *     left to commit) and jnl_handle_start() returns -EROFS;
 *   - recovery finds the transaction whole or not at all.
 * A watchdog (alarm) turns a hang into a failure naming the position.
 */
#include <signal.h>
#include <unistd.h>

#include "jnl_test.h"

#define C_FILL_USED 760u	/* log blocks used before the commit under test: it ends
				 * past jnl_cp_sync_mark() (767) and checkpoints */
#define C_T_META 20u		/* the transaction under test, from block C_T_FIRST */
#define C_T_DATA 40u		/* contiguous data blocks: staged in one request */
#define C_T_FIRST 300u
#define C_WATCHDOG_S 20u

static char c_where[128];

static void c_watchdog(int sig)
{
	(void)sig;
	(void)!write(2, c_where, strlen(c_where));
	_exit(1);
}

static void c_arm(const char *what, enum jnl_data_mode mode, unsigned int nth)
{
	snprintf(c_where, sizeof(c_where), "watchdog: %s hung (mode %s, allocation %u failed)\n",
		 what, jnl_data_mode_name(mode), nth);
	signal(SIGALRM, c_watchdog);
	alarm(C_WATCHDOG_S);
}

/* The transaction under test: metadata, contiguous data, revokes; version @ver. */
static void c_txn(struct jnl *j, uint32_t ver)
{
	struct jnl_handle *h;
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(jnl_handle_start(j, C_T_META + 1, &h), 0);
	for (uint64_t i = 0; i < C_T_META; i++) {
		t_fill(b, C_T_FIRST + i, ver);
		assert_int_equal(jnl_handle_dirty_meta(h, C_T_FIRST + i, b), 0);
	}
	for (uint64_t i = 0; i < C_T_DATA; i++) {
		t_fill(b, C_T_FIRST + 100 + i, ver);
		assert_int_equal(jnl_handle_dirty_data(h, C_T_FIRST + 100 + i, b), 0);
	}
	for (uint64_t i = 0; i < 4; i++)
		assert_int_equal(jnl_handle_revoke(h, 1 + i), 0);
	assert_int_equal(jnl_handle_stop(h), 0);
	free(b);
}

/* After the crash: the transaction at version 2 whole, or not at all (version 1). */
static void c_check_atomic(struct blk_dev *d, enum jnl_data_mode mode, unsigned int nth)
{
	struct jnl_recovery_report rep;
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true };
	struct jnl *j = NULL;
	int64_t v0;

	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, &rep), 0);
	v0 = t_read_ver(j, d, C_T_FIRST);
	if (v0 != 1 && v0 != 2)
		fail_msg("mode %s allocation %u: block %u at version %lld", jnl_data_mode_name(mode),
			 nth, C_T_FIRST, (long long)v0);
	for (uint64_t i = 1; i < C_T_META; i++)
		if (t_read_ver(j, d, C_T_FIRST + i) != v0)
			fail_msg("mode %s allocation %u: transaction torn at block %llu",
				 jnl_data_mode_name(mode), nth, (unsigned long long)(C_T_FIRST + i));
	jnl_abandon(j);
}

/* One commit with its @nth allocation failing. Returns false when nothing failed. */
static bool c_commit_fail_at(enum jnl_data_mode mode, unsigned int nth)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, mode, true);
	struct jnl_handle *h = NULL;
	struct jnl_info info;
	unsigned int left;
	int rc;

	c_txn(j, 1);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	for (unsigned int n = 50; n; n = n > 10 ? 10 : 0) {
		for (;;) {
			jnl_info_get(j, &info);
			if (info.log_used_blocks + n + 2 > C_FILL_USED)
				break;
			t_txn(j, 1000, n, 1, true);
			assert_int_equal(jnl_commit(j, 0, true), 0);
		}
	}
	c_txn(j, 2);

	c_arm("jnl_commit", mode, nth);
	jnl_fault_alloc_set(j, nth);
	rc = jnl_commit(j, 0, true);
	left = jnl_fault_alloc_set(j, 0);
	jnl_info_get(j, &info);
	if (left) {	/* past the last allocation: nothing failed */
		alarm(0);
		assert_int_equal(rc, 0);
		assert_false(info.aborted);
		assert_int_equal(jnl_close(j), 0);
		blk_close(d);
		return false;
	}
	if (!rc) {
		/* durable before the failure (the checkpoint after it): alive */
		assert_false(info.aborted);
		c_txn(j, 3);
		c_arm("the next jnl_commit", mode, nth);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		alarm(0);
		assert_int_equal(jnl_close(j), 0);
		blk_close(d);
		return true;
	}
	if (rc != -ENOMEM && rc != -EROFS)
		fail_msg("mode %s allocation %u: jnl_commit -> %d", jnl_data_mode_name(mode), nth, rc);
	/* 0 only when nothing is left to commit: the failure came after the
	 * commit point (the checkpoint after it) */
	c_arm("a later jnl_commit", mode, nth);
	rc = jnl_commit(j, 0, true);
	if (rc != -EROFS && rc != 0)
		fail_msg("mode %s allocation %u: a later jnl_commit -> %d, expected -EROFS",
			 jnl_data_mode_name(mode), nth, rc);
	c_arm("jnl_handle_start", mode, nth);
	rc = jnl_handle_start(j, 1, &h);
	if (rc != -EROFS)
		fail_msg("mode %s allocation %u: jnl_handle_start -> %d, expected -EROFS",
			 jnl_data_mode_name(mode), nth, rc);
	alarm(0);
	jnl_info_get(j, &info);
	assert_true(info.aborted);
	assert_int_equal(jnl_close(j), -EROFS);
	c_check_atomic(d, mode, nth);
	blk_close(d);
	return true;
}

static void test_commit_alloc_failure_aborts(void **state)
{
	static const enum jnl_data_mode modes[] = { JNL_DATA_ORDERED, JNL_DATA_DECLARED,
						    JNL_DATA_JOURNAL };

	(void)state;
	const char *first = getenv("JG_FIRST_FAULT");	/* debugging: start at a position */

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		unsigned int nth = first ? (unsigned int)strtoul(first, NULL, 0) : 1;

		while (c_commit_fail_at(modes[m], nth))
			nth++;
		print_message("mode %s: %u allocation positions on the commit path\n",
			      jnl_data_mode_name(modes[m]), nth - 1);
		/* the transaction, the lists, the image, the checkpoint after it */
		if (!first && nth < 5)
			fail_msg("mode %s: only %u allocations on the commit path",
				 jnl_data_mode_name(modes[m]), nth - 1);
	}
}

/*
 * With the commit thread: a handle that does not fit the running transaction
 * asks the thread to commit it and waits for the next one. The thread's commit
 * fails at its @nth allocation: the start returns -EROFS, or 0 in the next
 * transaction when the failure came after the switch, and an fsync then
 * returns -EROFS; neither waits forever.
 */
static void test_commit_thread_failure_frees_full_start(void **state)
{
	(void)state;
	for (unsigned int nth = 1; nth <= 3; nth++) {
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED };
		struct blk_dev *d = t_mem_dev();
		struct jnl_handle *h = NULL;
		struct jnl *j = NULL;
		int rc;

		assert_int_equal(jnl_open(d, &cfg, &j), 0);
		assert_int_equal(jnl_recover(j, NULL), 0);
		assert_int_equal(jnl_start(j), 0);
		/* the running transaction nearly full (max_txn_blocks 255) */
		t_txn(j, 10, 120, 1, true);
		c_arm("jnl_handle_start on a full transaction", JNL_DATA_DECLARED, nth);
		jnl_fault_alloc_set(j, nth);
		rc = jnl_handle_start(j, 200, &h);
		alarm(0);
		if (rc && rc != -EROFS)
			fail_msg("allocation %u: jnl_handle_start -> %d, expected 0 or -EROFS", nth, rc);
		if (!rc)
			assert_int_equal(jnl_handle_stop(h), 0);
		c_arm("a later jnl_commit", JNL_DATA_DECLARED, nth);
		assert_int_equal(jnl_commit(j, 0, true), -EROFS);
		alarm(0);
		assert_int_equal(jnl_fault_alloc_set(j, 0), 0);	/* it fired */
		assert_int_equal(jnl_close(j), -EROFS);
		blk_close(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_alloc_failure_aborts),
		cmocka_unit_test(test_commit_thread_failure_frees_full_start),
	};

	jg_log_set_level(getenv("JG_TEST_LOG") ? JG_LOG_DEBUG : JG_LOG_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
