// SPDX-License-Identifier: MIT
/*
 * tests/unit/base/test_assert.c - the contracts that check themselves
 * (include/jgrfs/base.h): jg_mutex knows its holder, across a condition wait
 * too, and a failed JG_ASSERT aborts. The checks are on in every test build
 * (no NDEBUG); this test fails if they are not.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "jgrfs/base.h"

static struct jg_mutex mx;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int other_saw_held = -1, other_took;

static void *other_thread(void *arg)
{
	(void)arg;
	other_saw_held = jg_mutex_held(&mx);	/* main holds it: not this thread */
	jg_mutex_lock(&mx);			/* while main waits on cv */
	other_took = jg_mutex_held(&mx);
	pthread_cond_signal(&cv);
	jg_mutex_unlock(&mx);
	return NULL;
}

static void test_mutex_knows_its_holder(void **state)
{
	pthread_t t;

	(void)state;
	assert_true(JG_ASSERTS);
	jg_mutex_init(&mx, PTHREAD_MUTEX_DEFAULT);
	assert_false(jg_mutex_held(&mx));
	jg_mutex_lock(&mx);
	assert_true(jg_mutex_held(&mx));
	assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
	while (!other_took)
		jg_cond_wait(&cv, &mx);
	assert_true(jg_mutex_held(&mx));	/* back from the wait: ours again */
	jg_mutex_unlock(&mx);
	assert_false(jg_mutex_held(&mx));
	pthread_join(t, NULL);
	assert_int_equal(other_saw_held, 0);
	assert_int_equal(other_took, 1);
	jg_mutex_destroy(&mx);
}

/* The negative control: a function asserting a lock it was not given aborts. */
static void needs_mx_locked(void)
{
	JG_ASSERT_HELD(&mx);
}

static void test_assert_held_aborts(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	jg_mutex_init(&mx, PTHREAD_MUTEX_DEFAULT);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		jg_mutex_lock(&mx);
		needs_mx_locked();	/* held: returns */
		jg_mutex_unlock(&mx);
		needs_mx_locked();	/* not held: aborts */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	jg_mutex_destroy(&mx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mutex_knows_its_holder),
		cmocka_unit_test(test_assert_held_aborts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
