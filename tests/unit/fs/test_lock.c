// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_lock.c - (L1) in src/fs/fs_i.h: a call whose work grows with
 * a file's size holds the big lock one bounded step at a time.
 *
 * pthread_mutex_unlock is wrapped (-Wl,--wrap, meson.build). The first time the
 * long call's thread lets the fs lock go, it waits there (the lock free) while
 * the main thread, another user, runs a stat, a create and a statfs. The free
 * block count that statfs sees must lie strictly between the counts before and
 * after the long call: the other user got in while the long call was still in
 * progress, not only once it was over. No clocks: the order is forced.
 */
#include <errno.h>
#include <pthread.h>

#include "fs_test.h"
#include "fs_i.h"

int __real_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);

static struct {
	pthread_mutex_t *fs_lock;	/* the lock watched */
	pthread_t thread;		/* the long call's thread */
	bool armed;			/* the long call runs; not yet stopped */
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool stopped;			/* the long call waits at its first release */
	bool other_done;		/* the other user is through */
	bool long_done;			/* the long call returned */
} t_lk = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
	int rc = __real_pthread_mutex_unlock(m);

	if (m == t_lk.fs_lock && t_lk.armed && pthread_equal(pthread_self(), t_lk.thread)) {
		t_lk.armed = false;
		pthread_mutex_lock(&t_lk.m);
		t_lk.stopped = true;
		pthread_cond_broadcast(&t_lk.cv);
		while (!t_lk.other_done)
			pthread_cond_wait(&t_lk.cv, &t_lk.m);
		__real_pthread_mutex_unlock(&t_lk.m);
	}
	return rc;
}

struct t_long {
	struct fs *fs;
	bool unlink;			/* else fallocate */
	uint64_t ino, bytes;
	int rc;
};

static void *t_long_run(void *arg)
{
	struct t_long *l = arg;

	if (l->unlink)
		l->rc = fs_unlink(l->fs, FS_ROOT_INO, "huge");
	else
		l->rc = fs_fallocate(l->fs, l->ino, 0, 0, l->bytes);
	pthread_mutex_lock(&t_lk.m);
	t_lk.long_done = true;
	pthread_cond_broadcast(&t_lk.cv);
	__real_pthread_mutex_unlock(&t_lk.m);
	return NULL;
}

/* Run @l in a thread; the other user goes in at its first release of the lock. */
static void t_long_with_other(struct fs *fs, struct t_long *l, const char *what)
{
	struct fs_statfs before, seen, after;
	struct fs_attr a;
	char name[32];

	assert_int_equal(fs_statfs(fs, &before), 0);
	t_lk.fs_lock = &fs->lock;
	t_lk.stopped = t_lk.other_done = t_lk.long_done = false;
	t_lk.armed = true;
	assert_int_equal(pthread_create(&t_lk.thread, NULL, t_long_run, l), 0);
	pthread_mutex_lock(&t_lk.m);
	while (!t_lk.stopped && !t_lk.long_done)
		pthread_cond_wait(&t_lk.cv, &t_lk.m);
	__real_pthread_mutex_unlock(&t_lk.m);
	/* the other user: small calls, each one hold of the lock */
	assert_int_equal(fs_getattr(fs, FS_ROOT_INO, &a), 0);
	snprintf(name, sizeof(name), "small-%s", what);
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	assert_int_equal(fs_statfs(fs, &seen), 0);
	pthread_mutex_lock(&t_lk.m);
	t_lk.other_done = true;
	pthread_cond_broadcast(&t_lk.cv);
	__real_pthread_mutex_unlock(&t_lk.m);
	assert_int_equal(pthread_join(t_lk.thread, NULL), 0);
	t_lk.armed = false;
	assert_int_equal(l->rc, 0);
	assert_int_equal(fs_statfs(fs, &after), 0);
	/* the small file took no data block: the counts are the long call's alone */
	if (!(seen.blocks_free != before.blocks_free && seen.blocks_free != after.blocks_free))
		fail_msg("%s: the other user's calls ran only %s the long call: free blocks "
			 "before %llu, seen %llu, after %llu",
			 what, seen.blocks_free == after.blocks_free ? "after" : "before",
			 (unsigned long long)before.blocks_free,
			 (unsigned long long)seen.blocks_free,
			 (unsigned long long)after.blocks_free);
}

static void test_lock_huge_fallocate_and_delete(void **state)
{
	struct blk_dev *dev = ft_dev_new(128);
	struct fs *fs = ft_mount(dev);
	struct t_long l = { .fs = fs, .bytes = 64ull << 20 };	/* 16384 blocks: 256 steps */
	struct fs_attr a;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "huge", S_IFREG | 0644, 0, 0, 0, &a), 0);
	l.ino = a.ino;
	t_long_with_other(fs, &l, "fallocate");
	assert_int_equal(fs_getattr(fs, l.ino, &a), 0);
	assert_int_equal(a.size, l.bytes);
	/* no reference: the unlink frees every block, 128 credits a handle */
	l.unlink = true;
	t_long_with_other(fs, &l, "unlink");
	assert_int_equal(fs_getattr(fs, l.ino, &a), -ENOENT);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lock_huge_fallocate_and_delete),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
