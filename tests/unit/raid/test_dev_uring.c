// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_dev_uring.c - (U1): an open member marks its open file
 * description in use; BLK_CTL_DRAIN waits until every other open of the file
 * has gone, as the I/O a killed daemon left in flight keeps its description
 * (and the mark) alive until it ends.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "raid_test.h"

static double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct t_holder {
	struct blk_dev *dev;	/* an earlier user's open, its I/O in flight */
	double closed_at;	/* when it let go */
	pthread_mutex_t lock;	/* guards closed_at */
};

static void *t_let_go(void *arg)
{
	struct t_holder *h = arg;

	usleep(300 * 1000);
	pthread_mutex_lock(&h->lock);
	h->closed_at = t_now();
	pthread_mutex_unlock(&h->lock);
	blk_close(h->dev);
	return NULL;
}

static void test_dev_uring_drain_waits_for_other_open(void **state)
{
	char path[] = "/tmp/jgrfs-drain-XXXXXX";
	struct t_holder h = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct blk_dev *dev, *again;
	pthread_t th;
	double done;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	/* nobody else: the drain returns at once, and a second open (shared mark) is fine */
	assert_int_equal(raid_dev_uring_open(path, 0, &dev), 0);
	assert_int_equal(blk_ctl(dev, BLK_CTL_DRAIN, NULL), 0);
	assert_int_equal(raid_dev_uring_open(path, 0, &again), 0);
	blk_close(again);
	/* an earlier user's open still alive (a killed daemon's I/O in flight) */
	assert_int_equal(raid_dev_uring_open(path, 0, &h.dev), 0);
	assert_int_equal(pthread_create(&th, NULL, t_let_go, &h), 0);
	assert_int_equal(blk_ctl(dev, BLK_CTL_DRAIN, NULL), 0);
	done = t_now();
	pthread_join(th, NULL);
	if (!h.closed_at || done < h.closed_at)
		fail_msg("BLK_CTL_DRAIN returned before the other open let go");
	/* our own mark is shared again: another open still works */
	assert_int_equal(raid_dev_uring_open(path, 0, &again), 0);
	blk_close(again);
	blk_close(dev);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dev_uring_drain_waits_for_other_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
