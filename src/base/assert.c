// SPDX-License-Identifier: MIT
/*
 * src/base/assert.c - JG_ASSERT's failure path and the owner-recording mutex
 * (include/jgrfs/base.h, "assertions").
 */
#include <pthread.h>
#include <stdbool.h>
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
	pthread_cond_init(&mx->turn, NULL);
	mx->held = 0;
	mx->tickets = mx->served = 0;
	mx->yielders = NULL;
}

void jg_mutex_destroy(struct jg_mutex *mx)
{
	pthread_cond_destroy(&mx->turn);
	pthread_mutex_destroy(&mx->m);
}

/* A thread in jg_mutex_yield: the waiters it lets in before it goes on. */
struct jg_yield {
	uint64_t horizon; /* the first ticket taken after it let go */
	uint64_t owed;	  /* tickets below @horizon not served yet */
	struct jg_yield *next;
};

void jg_mutex_served(struct jg_mutex *mx, uint64_t t)
{
	bool wake = false;

	for (struct jg_yield *y = mx->yielders; y; y = y->next)
		if (t < y->horizon && y->owed && !--y->owed)
			wake = true;
	if (wake)
		pthread_cond_broadcast(&mx->turn);
}

void jg_mutex_yield(struct jg_mutex *mx)
{
	struct jg_yield me, **pp;

	JG_ASSERT_HELD(mx);
	/* every ticket served so far is below the horizon: none after it got the lock */
	me.horizon = __atomic_load_n(&mx->tickets, __ATOMIC_RELAXED);
	me.owed = me.horizon - mx->served;
	if (!me.owed) {
		/* no waiter with a ticket; a thread back from a condition wait may take it */
		jg_mutex_unlock(mx);
		jg_mutex_lock(mx);
		return;
	}
	/* Yielders asleep now hold tickets counted in @owed: they wake only when
	 * their own waiters are served, maybe after ours; wake them to take theirs. */
	if (mx->yielders)
		pthread_cond_broadcast(&mx->turn);
	me.next = mx->yielders;
	mx->yielders = &me;
	while (me.owed) {
		uint64_t t = __atomic_fetch_add(&mx->tickets, 1, __ATOMIC_RELAXED);

		jg_cond_wait(&mx->turn, mx);
		/* taken back: as any jg_mutex_lock, a ticket served */
		mx->served++;
		jg_mutex_served(mx, t);
	}
	for (pp = &mx->yielders; *pp != &me; pp = &(*pp)->next)
		;
	*pp = me.next;
}
