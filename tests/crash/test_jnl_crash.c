// SPDX-License-Identifier: MIT
/*
 * tests/crash/test_jnl_crash.c - the journal cut at every write position of the
 * workload in jnl_crash.h, in each data mode, over a memory device; ordered and
 * declared again with small commits logging their data.
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
	};

	jg_log_set_level(JG_LOG_ERR - 1);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
