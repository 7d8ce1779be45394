// SPDX-License-Identifier: MIT
/*
 * tests/crash/test_jnl_crash.c - the journal cut at every write position of the
 * workload in jnl_crash.h, in each data mode, over a memory device; ordered and
 * declared again with small commits logging their data. And the negative
 * control of the checker (w_verdict): outcomes damaged on purpose are reported.
 */
#include "jnl_crash.h"

static void test_jnl_crash_writeback(void **state) { (void)state; w_crash_all(JNL_DATA_WRITEBACK, false, W_STEPS); }
static void test_jnl_crash_ordered(void **state) { (void)state; w_crash_all(JNL_DATA_ORDERED, false, W_STEPS); }
static void test_jnl_crash_journal(void **state) { (void)state; w_crash_all(JNL_DATA_JOURNAL, false, W_STEPS); }
static void test_jnl_crash_declared(void **state) { (void)state; w_crash_all(JNL_DATA_DECLARED, false, W_STEPS); }
static void test_jnl_crash_ordered_torn(void **state) { (void)state; w_crash_all(JNL_DATA_ORDERED, true, W_STEPS); }
static void test_jnl_crash_ordered_logdata(void **state) { (void)state; w_log_data = true; w_crash_all(JNL_DATA_ORDERED, false, W_STEPS); w_log_data = false; }
static void test_jnl_crash_declared_logdata(void **state) { (void)state; w_log_data = true; w_crash_all(JNL_DATA_DECLARED, false, W_STEPS); w_log_data = false; }
static void test_jnl_crash_declared_logdata_torn(void **state) { (void)state; w_log_data = true; w_crash_all(JNL_DATA_DECLARED, true, W_STEPS); w_log_data = false; }

/* Block @b of @dev set to version @ver (0: a zero block, as never written). */
static void n_put(struct blk_dev *dev, uint64_t b, int64_t ver)
{
	uint8_t *buf = jg_alloc_blocks(1);

	memset(buf, 0, JG_BLOCK_SIZE);
	if (ver > 0)
		t_fill(buf, b, (uint32_t)ver);
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, b, 1, buf, 0), 0);
	free(buf);
}

/* The checker must reject @dev; its reason starts with @want. */
static void n_expect_caught(struct blk_dev *dev, const struct w_model *m, enum jnl_data_mode mode,
			    bool tear, const char *damage, const char *want)
{
	char why[160];

	if (w_verdict(dev, m, mode, tear, why, sizeof(why)))
		fail_msg("mode %s: the checker accepted %s", jnl_data_mode_name(mode), damage);
	if (strncmp(why, want, strlen(want)))
		fail_msg("mode %s, %s: reported \"%s\", expected \"%s...\"", jnl_data_mode_name(mode),
			 damage, why, want);
}

/* The last block of [@first, @last) whose last two events are of @kind and done by step @p. */
static uint64_t n_pick(const struct w_model *m, uint64_t first, uint64_t last, enum w_kind kind, int p)
{
	for (uint64_t b = last; b-- > first;) {
		uint8_t n = m->nev[b];

		if (n >= 2 && m->ev[b][n - 1].kind == kind && m->ev[b][n - 2].kind == kind &&
		    m->ev[b][n - 1].step <= p)
			return b;
	}
	fail_msg("no block with two %s versions: the workload changed", kind == W_META ? "metadata" : "data");
	return 0;
}

/*
 * Negative control of w_verdict: a run with no cut, recovered, passes; then
 * the same outcome damaged four ways, one at a time and put back after, must
 * each be reported: the last acknowledged commit lost (every block the last
 * step wrote back at its state before), an acknowledged metadata block and an
 * acknowledged data block each back at their previous version, and a data
 * block holding garbage with no write of it in flight (checked as a torn run,
 * whose allowance must not excuse it).
 */
static void test_jnl_crash_checker_catches_damage(void **state)
{
	static const enum jnl_data_mode modes[] = { JNL_DATA_WRITEBACK, JNL_DATA_ORDERED,
						    JNL_DATA_JOURNAL, JNL_DATA_DECLARED };
	char why[160], want[64];

	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		enum jnl_data_mode mode = modes[mi];
		struct raid_fault_cfg fc = { .cut_after_writes = 0 };	/* no cut */
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true };
		struct w_model *m = calloc(1, sizeof(*m));
		struct raid_fault_domain *dom;
		struct blk_dev *mem = t_mem_dev(), *f;
		uint8_t *img = jg_alloc_blocks(W_NBLK);
		struct jnl *j = NULL;
		uint64_t b;
		int p, kind;

		assert_non_null(m);
		assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
		assert_int_equal(raid_dev_fault_open(dom, mem, &f), 0);
		assert_true(w_run(f, dom, mode, W_STEPS, m));
		blk_close(f);
		raid_fault_domain_free(dom);
		assert_int_equal(jnl_open(mem, &cfg, &j), 0);
		assert_int_equal(jnl_recover(j, NULL), 0);
		jnl_abandon(j);
		if (!w_verdict(mem, m, mode, false, why, sizeof(why)))
			fail_msg("mode %s: an undamaged run rejected: %s", jnl_data_mode_name(mode), why);
		p = (int)t_read_ver(NULL, mem, 0);
		assert_int_equal(p, W_STEPS);
		assert_int_equal(m->durable, W_STEPS);
		assert_int_equal(blk_rw(mem, BLK_OP_READ, 0, W_NBLK, img, 0), 0);

		/* the last acknowledged commit lost: what step p wrote is back as before */
		for (b = 0; b < W_NBLK; b++)
			if (m->nev[b] && m->ev[b][m->nev[b] - 1].step == p &&
			    m->ev[b][m->nev[b] - 1].kind != W_FREE)
				n_put(mem, b, w_state(m, b, p - 1, &kind));
		n_expect_caught(mem, m, mode, false, "the last acknowledged commit lost",
				"replayed up to step");
		assert_int_equal(blk_rw(mem, BLK_OP_WRITE, 0, W_NBLK, img, 0), 0);

		/* an acknowledged metadata block at its previous version */
		b = n_pick(m, 1, W_META_POOL, W_META, p);
		n_put(mem, b, m->ev[b][m->nev[b] - 2].step);
		snprintf(want, sizeof(want), "block %llu holds", (unsigned long long)b);
		n_expect_caught(mem, m, mode, false, "a metadata block rolled back", want);
		assert_int_equal(blk_rw(mem, BLK_OP_WRITE, 0, W_NBLK, img, 0), 0);

		/* an acknowledged data block at its previous version */
		b = n_pick(m, W_DATA_FIRST, W_NBLK, W_DATA, p);
		n_put(mem, b, m->ev[b][m->nev[b] - 2].step);
		snprintf(want, sizeof(want), "block %llu holds", (unsigned long long)b);
		n_expect_caught(mem, m, mode, false, "a data block rolled back", want);
		assert_int_equal(blk_rw(mem, BLK_OP_WRITE, 0, W_NBLK, img, 0), 0);

		/* garbage in a data block no write was in flight to */
		{
			uint8_t *g = jg_alloc_blocks(1);

			t_fill(g, b + 1, 7);	/* another block's pattern: garbage here */
			assert_int_equal(blk_rw(mem, BLK_OP_WRITE, b, 1, g, 0), 0);
			free(g);
		}
		n_expect_caught(mem, m, mode, true, "garbage in a data block", want);
		assert_int_equal(blk_rw(mem, BLK_OP_WRITE, 0, W_NBLK, img, 0), 0);

		/* put back, it passes again: the damage was what was caught */
		if (!w_verdict(mem, m, mode, false, why, sizeof(why)))
			fail_msg("mode %s: the restored run rejected: %s", jnl_data_mode_name(mode), why);
		free(img);
		free(m);
		blk_close(mem);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jnl_crash_writeback),
		cmocka_unit_test(test_jnl_crash_ordered),
		cmocka_unit_test(test_jnl_crash_journal),
		cmocka_unit_test(test_jnl_crash_declared),
		cmocka_unit_test(test_jnl_crash_ordered_torn),
		cmocka_unit_test(test_jnl_crash_ordered_logdata),
		cmocka_unit_test(test_jnl_crash_declared_logdata),
		cmocka_unit_test(test_jnl_crash_declared_logdata_torn),
		cmocka_unit_test(test_jnl_crash_checker_catches_damage),
	};

	jg_log_set_level(JG_LOG_ERR - 1);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
