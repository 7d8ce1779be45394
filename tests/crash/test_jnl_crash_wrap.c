// SPDX-License-Identifier: MIT
/*
 * tests/crash/test_jnl_crash_wrap.c - the journal cut at every write position
 * while the log wraps (data=journal: the workload logs > 1024 blocks), with torn
 * writes.
 */
#include "jnl_crash.h"

/* torn writes while the log wraps */
static void test_jnl_crash_journal_torn_wrap(void **state)
{
	(void)state;
	w_crash_all(JNL_DATA_JOURNAL, true, W_STEPS_WRAP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jnl_crash_journal_torn_wrap),
	};

	jg_log_set_level(JG_LOG_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
