// SPDX-License-Identifier: MIT
/*
 * src/base/assert.c - JG_ASSERT's failure path and the owner-recording mutex
 * (include/jgrfs/base.h, "assertions").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "jgrfs/base.h"

void jg_assert_fail(const char *expr, const char *file, int line, const char *func)
{
	/* straight to stderr: a test's log sink may keep lines in memory, and abort loses them */
	fprintf(stderr, "jgrfs: assertion failed: %s (%s:%d, %s)\n", expr, file, line, func);
	fflush(stderr);
	abort();
}

void jg_mutex_init(struct jg_mutex *mx, int type)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, type);
	pthread_mutex_init(&mx->m, &attr);
	pthread_mutexattr_destroy(&attr);
	mx->held = 0;
}

void jg_mutex_destroy(struct jg_mutex *mx)
{
	pthread_mutex_destroy(&mx->m);
}
