// SPDX-License-Identifier: MIT
/*
 * tests/unit/base/test_log.c - jg_log's level filter and jg_log_demote(): a
 * demoted thread's errors arrive at the demoted level (and are dropped below
 * the set level), other threads' are untouched, and the setting comes back.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jgrfs/base.h"

static int seen_level, seen_n;
static char seen_msg[256];

static void sink(void *ctx, int level, const char *subsys, const char *msg)
{
	(void)ctx;
	(void)subsys;
	seen_level = level;
	seen_n++;
	snprintf(seen_msg, sizeof(seen_msg), "%s", msg);
}

static void *other_thread(void *arg)
{
	(void)arg;
	jg_log(JG_LOG_ERR, "t", "from the other thread");
	return NULL;
}

static void test_log_demote(void **state)
{
	pthread_t t;
	int was;

	(void)state;
	jg_log_set_sink(sink, NULL);
	jg_log_set_level(JG_LOG_INFO);

	jg_log(JG_LOG_ERR, "t", "plain");
	assert_int_equal(seen_n, 1);
	assert_int_equal(seen_level, JG_LOG_ERR);
	jg_log(JG_LOG_DEBUG, "t", "dropped");
	assert_int_equal(seen_n, 1);

	was = jg_log_demote(JG_LOG_NOTICE);
	assert_int_equal(was, JG_LOG_ERR);
	jg_log(JG_LOG_ERR, "t", "demoted");
	assert_int_equal(seen_n, 2);
	assert_int_equal(seen_level, JG_LOG_NOTICE);
	assert_string_equal(seen_msg, "demoted");
	jg_log(JG_LOG_INFO, "t", "less severe: kept as it is");
	assert_int_equal(seen_level, JG_LOG_INFO);

	/* the demotion is this thread's only */
	assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
	pthread_join(t, NULL);
	assert_int_equal(seen_n, 4);
	assert_int_equal(seen_level, JG_LOG_ERR);

	/* demoted below the set level: dropped */
	assert_int_equal(jg_log_demote(JG_LOG_DEBUG), JG_LOG_NOTICE);
	jg_log(JG_LOG_ERR, "t", "probe failed");
	assert_int_equal(seen_n, 4);

	assert_int_equal(jg_log_demote(was), JG_LOG_DEBUG);
	jg_log(JG_LOG_ERR, "t", "restored");
	assert_int_equal(seen_n, 5);
	assert_int_equal(seen_level, JG_LOG_ERR);
	jg_log_set_sink(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_demote),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
