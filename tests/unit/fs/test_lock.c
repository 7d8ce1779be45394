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
 *
 * (L2): pthread_cond_wait is wrapped too, to see a call on the same inode wait
 * for the busy inode (fs->busy_cv) while the long call is stopped between steps.
 *
 * Fair yield (issue 43): pthread_mutex_lock is wrapped to hold another caller,
 * already waiting for the fs lock (its jg_mutex_lock begun), off the mutex
 * until the yielding thread sleeps (a condition wait) or is done: the worst
 * schedule, where the releaser always takes the lock back first. A fair yield
 * must still let it in at the first yield. Counted in yields, not time.
 */
#include <errno.h>
#include <pthread.h>

#include "fs_test.h"
#include "fs_i.h"

int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);
int __real_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);
int __real_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __real_jnl_handle_start(struct jnl *j, unsigned int credits, struct jnl_handle **out);
int __wrap_jnl_handle_start(struct jnl *j, unsigned int credits, struct jnl_handle **out);

static struct {
	pthread_mutex_t *fs_lock;	/* the lock watched */
	pthread_t thread;		/* the long call's thread */
	bool armed;			/* the long call runs; not yet stopped */
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool stopped;			/* the long call waits at its first release */
	bool other_done;		/* the other user is through */
	bool long_done;			/* the long call returned */
	pthread_cond_t *busy_cv;	/* the condition watched (L2) */
	bool busy_waited;		/* a thread waited on it */
	bool same_done;			/* the call on the same inode returned */
	bool fail_after_stop;		/* the long call's handles fail once it stopped */
} t_lk = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* An aborted journal, as the long call's next handle sees it. */
int __wrap_jnl_handle_start(struct jnl *j, unsigned int credits, struct jnl_handle **out)
{
	if (t_lk.fail_after_stop && t_lk.stopped && pthread_equal(pthread_self(), t_lk.thread))
		return -EROFS;
	return __real_jnl_handle_start(j, credits, out);
}

/* Fair yield: the waiter held off the fs lock while the yielder runs (sync on t_lk). */
static struct {
	pthread_mutex_t *fs_lock; /* the lock watched; NULL: off */
	pthread_t yielder, waiter;
	bool waiting;	   /* the waiter's jg_mutex_lock has begun */
	bool gate;	   /* the yielder sleeps, the lock free */
	bool yielder_done; /* the yielder let the lock go for good */
	int yields;	   /* the yielder's yields returned (under the fs lock) */
	int got_at;	   /* @yields when the waiter had the lock; -1: not yet */
} t_fair;

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	int rc;

	if (!t_fair.fs_lock || m != t_fair.fs_lock || !pthread_equal(pthread_self(), t_fair.waiter))
		return __real_pthread_mutex_lock(m);
	__real_pthread_mutex_lock(&t_lk.m);
	t_fair.waiting = true;
	pthread_cond_broadcast(&t_lk.cv);
	while (!t_fair.gate && !t_fair.yielder_done)
		__real_pthread_cond_wait(&t_lk.cv, &t_lk.m);
	__real_pthread_mutex_unlock(&t_lk.m);
	rc = __real_pthread_mutex_lock(m);
	t_fair.got_at = t_fair.yields;
	return rc;
}

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (t_fair.fs_lock && m == t_fair.fs_lock &&
	    pthread_equal(pthread_self(), t_fair.yielder)) {
		__real_pthread_mutex_lock(&t_lk.m);
		t_fair.gate = true;
		pthread_cond_broadcast(&t_lk.cv);
		__real_pthread_mutex_unlock(&t_lk.m);
	}
	if (c == t_lk.busy_cv && c) {
		pthread_mutex_lock(&t_lk.m);
		t_lk.busy_waited = true;
		pthread_cond_broadcast(&t_lk.cv);
		__real_pthread_mutex_unlock(&t_lk.m);
	}
	return __real_pthread_cond_wait(c, m);
}

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

enum t_op { T_FALLOCATE, T_UNLINK, T_TRUNCATE };

struct t_long {
	struct fs *fs;
	enum t_op op;
	uint64_t ino, bytes;		/* fallocate: to @bytes; truncate: to @bytes */
	int rc;
};

static void *t_long_run(void *arg)
{
	struct t_long *l = arg;
	struct fs_attr a = { .size = l->bytes };

	if (l->op == T_UNLINK)
		l->rc = fs_unlink(l->fs, FS_ROOT_INO, "huge");
	else if (l->op == T_TRUNCATE)
		l->rc = fs_setattr(l->fs, l->ino, &a, FS_SET_SIZE, NULL);
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
	t_lk.fs_lock = &fs->lock.m;
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
	l.op = T_UNLINK;
	t_long_with_other(fs, &l, "unlink");
	assert_int_equal(fs_getattr(fs, l.ino, &a), -ENOENT);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/* 8 MiB: 2048 data blocks, a few truncate handles (at most 512 frees each) */
#define T_BIG (8ull << 20)

/* A file @name of T_BIG bytes, every block allocated and written. */
static uint64_t t_big_file_named(struct fs *fs, const char *name)
{
	uint8_t *buf = malloc(1 << 20);
	struct fs_attr a;

	assert_non_null(buf);
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	for (uint64_t off = 0; off < T_BIG; off += 1 << 20) {
		ft_pattern(buf, 1 << 20, off);
		assert_int_equal(fs_write(fs, a.ino, off, 1 << 20, buf), 1 << 20);
	}
	free(buf);
	return a.ino;
}

static uint64_t t_big_file(struct fs *fs)
{
	return t_big_file_named(fs, "huge");
}

/* (L1) a shrinking truncate of a file with many blocks lets the lock go between its
 * handles: a stat, a create and a statfs of another user run in the middle (3). */
static void test_lock_huge_truncate(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct t_long l = { .fs = fs, .op = T_TRUNCATE, .bytes = 5000 };
	struct fs_attr a;
	uint8_t got[5000], want[5000];

	(void)state;
	l.ino = t_big_file(fs);
	t_long_with_other(fs, &l, "truncate");
	assert_int_equal(fs_getattr(fs, l.ino, &a), 0);
	assert_int_equal(a.size, 5000);
	assert_int_equal(a.blocks, 2 * (JG_BLOCK_SIZE / 512));
	/* what stays below the new size is intact, the tail of the last block zero (F1) */
	ft_pattern(want, sizeof(want), 0);
	assert_int_equal(fs_read(fs, l.ino, 0, sizeof(got), got), sizeof(got));
	assert_memory_equal(got, want, sizeof(got));
	assert_int_equal(fs_setattr(fs, l.ino, &(struct fs_attr){ .size = 8192 }, FS_SET_SIZE,
				    NULL), 0);
	assert_int_equal(fs_read(fs, l.ino, 5000, 3192, got), 3192);
	for (int i = 0; i < 3192; i++)
		assert_int_equal(got[i], 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

struct t_same {
	struct fs *fs;
	bool unlink;			/* else write @buf */
	uint64_t ino, off;
	const uint8_t *buf;
	size_t len;
	ssize_t rc;
};

static void *t_same_run(void *arg)
{
	struct t_same *w = arg;

	if (w->unlink)
		w->rc = fs_unlink(w->fs, FS_ROOT_INO, "huge");
	else
		w->rc = fs_write(w->fs, w->ino, w->off, w->len, w->buf);
	pthread_mutex_lock(&t_lk.m);
	t_lk.same_done = true;
	pthread_cond_broadcast(&t_lk.cv);
	__real_pthread_mutex_unlock(&t_lk.m);
	return NULL;
}

/*
 * Truncate "huge" (@l, to 0) in a thread; while it is stopped between handles,
 * run @w on the same file in another thread until it waits for the busy inode or
 * returns, then write and read @other in this one; then let both finish. A stat
 * and a read of "huge" between the handles see its new size.
 */
static void t_truncate_with_same(struct fs *fs, struct t_long *l, struct t_same *w,
				 uint64_t other)
{
	uint64_t blocks_mid, left;
	struct fs_attr a;
	uint8_t got[5];
	pthread_t wt;

	t_lk.fs_lock = &fs->lock.m;
	t_lk.busy_cv = &fs->busy_cv;
	t_lk.stopped = t_lk.other_done = t_lk.long_done = false;
	t_lk.busy_waited = t_lk.same_done = false;
	t_lk.armed = true;
	assert_int_equal(pthread_create(&t_lk.thread, NULL, t_long_run, l), 0);
	pthread_mutex_lock(&t_lk.m);
	while (!t_lk.stopped && !t_lk.long_done)
		pthread_cond_wait(&t_lk.cv, &t_lk.m);
	__real_pthread_mutex_unlock(&t_lk.m);
	/* the truncate is between handles (or done, before the fix); a stat and a
	 * read of the file see the new size, the blocks not all freed yet (L2) */
	assert_int_equal(fs_getattr(fs, l->ino, &a), 0);
	assert_int_equal(a.size, l->bytes);
	assert_int_equal(fs_read(fs, l->ino, 0, sizeof(got), got), 0);
	blocks_mid = a.blocks;
	assert_int_equal(pthread_create(&wt, NULL, t_same_run, w), 0);
	pthread_mutex_lock(&t_lk.m);
	while (!t_lk.busy_waited && !t_lk.same_done)
		pthread_cond_wait(&t_lk.cv, &t_lk.m);
	__real_pthread_mutex_unlock(&t_lk.m);
	/* another file's write and read go on meanwhile (3) */
	assert_int_equal(fs_write(fs, other, 0, 5, "other"), 5);
	assert_int_equal(fs_read(fs, other, 0, 5, got), 5);
	assert_memory_equal(got, "other", 5);
	pthread_mutex_lock(&t_lk.m);
	t_lk.other_done = true;
	pthread_cond_broadcast(&t_lk.cv);
	__real_pthread_mutex_unlock(&t_lk.m);
	assert_int_equal(pthread_join(t_lk.thread, NULL), 0);
	/* the long call is over: whatever its end, nothing is left busy (L2) */
	jg_mutex_lock(&fs->lock);
	left = fs->busy ? fs->busy->ino : 0;
	fs->lock.held = 0;	/* jg_mutex_unlock, past the wrapper */
	__real_pthread_mutex_unlock(&fs->lock.m);
	if (left)
		fail_msg("inode %llu still busy after the truncate returned %d",
			 (unsigned long long)left, l->rc);
	assert_int_equal(pthread_join(wt, NULL), 0);
	t_lk.armed = false;
	t_lk.busy_cv = NULL;
	if (!blocks_mid)
		fail_msg("the truncate was not stopped between its handles: no block left");
}

/*
 * (L2) a write past the new size into the file a truncate is shrinking, issued
 * while the truncate is stopped between handles: it waits for the truncate, and
 * its data is there after. Were it let in, it would land in a block the next
 * handle frees (or map a block there that the next handle frees) and be lost.
 * Meanwhile a write to another file goes through (3).
 */
static void test_lock_truncate_write_waits(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct t_long l = { .fs = fs, .op = T_TRUNCATE, .bytes = 0 };
	uint8_t data[JG_BLOCK_SIZE], got[JG_BLOCK_SIZE];
	struct t_same w = { .fs = fs, .buf = data, .len = sizeof(data) };
	struct fs_attr a, o;

	(void)state;
	l.ino = w.ino = t_big_file(fs);
	w.off = T_BIG - JG_BLOCK_SIZE;	/* the last block: freed by the last handle */
	memset(data, 0xa5, sizeof(data));
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "other", S_IFREG | 0644, 0, 0, 0, &o), 0);
	t_truncate_with_same(fs, &l, &w, o.ino);
	assert_int_equal(l.rc, 0);
	assert_int_equal(w.rc, (ssize_t)sizeof(data));
	assert_int_equal(fs_getattr(fs, l.ino, &a), 0);
	assert_int_equal(a.size, T_BIG);
	memset(got, 0, sizeof(got));
	assert_int_equal(fs_read(fs, l.ino, w.off, sizeof(got), got), sizeof(got));
	if (memcmp(got, data, sizeof(got)))
		fail_msg("the write during the truncate was lost: byte 0 reads 0x%02x, wrote 0xa5",
			 got[0]);
	if (!t_lk.busy_waited)
		fail_msg("the write did not wait for the truncate of its file");
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/*
 * (L2) the file a truncate is shrinking loses its last link between the handles:
 * unreferenced, its eviction waits for the truncate, then frees it all; still
 * referenced, it stays on the orphan list after the truncate (F3), so a crash
 * then frees it at the next mount.
 */
static void test_lock_truncate_unlink(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct t_long l = { .fs = fs, .op = T_TRUNCATE, .bytes = 0 };
	struct t_same w = { .fs = fs, .unlink = true };
	struct fs_statfs before, after;
	struct fs_info info;
	struct fs_attr a, o;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "other", S_IFREG | 0644, 0, 0, 0, &o), 0);
	assert_int_equal(fs_write(fs, o.ino, 0, 5, "other"), 5);
	assert_int_equal(fs_statfs(fs, &before), 0);
	l.ino = t_big_file(fs);
	t_truncate_with_same(fs, &l, &w, o.ino);
	assert_int_equal(l.rc, 0);
	assert_int_equal(w.rc, 0);
	if (!t_lk.busy_waited)
		fail_msg("the eviction did not wait for the truncate of its inode");
	assert_int_equal(fs_getattr(fs, l.ino, &a), -ENOENT);
	assert_int_equal(fs_statfs(fs, &after), 0);
	assert_int_equal(after.blocks_free, before.blocks_free);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);

	/* referenced: the unlink does not evict, the truncate must leave it an orphan */
	l.fs = w.fs = fs = ft_mount(dev);
	l.ino = t_big_file(fs);
	assert_int_equal(fs_ref(fs, l.ino, 1), 0);
	t_truncate_with_same(fs, &l, &w, o.ino);
	assert_int_equal(l.rc, 0);
	assert_int_equal(w.rc, 0);
	assert_int_equal(fs_getattr(fs, l.ino, &a), 0);
	assert_int_equal(a.nlink, 0);
	assert_int_equal(a.blocks, 0);
	assert_int_equal(fs_sync(fs), 0);
	fs_abandon(fs);
	fs = ft_mount(dev);
	fs_info_get(fs, &info);
	if (info.orphans_freed != 1)
		fail_msg("the unlinked, truncated inode was not on the orphan list at mount: "
			 "%llu freed", (unsigned long long)info.orphans_freed);
	assert_int_equal(fs_getattr(fs, l.ino, &a), -ENOENT);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/*
 * (L2) a truncate that fails between its handles (the journal aborted) still ends
 * its busy mark and wakes the write waiting for it, which then fails too; the
 * next mount finishes the truncate from the orphan list (F3).
 */
static void test_lock_truncate_error_wakes(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct t_long l = { .fs = fs, .op = T_TRUNCATE, .bytes = 0 };
	uint8_t data[JG_BLOCK_SIZE];
	struct t_same w = { .fs = fs, .buf = data, .len = sizeof(data) };
	struct fs_attr a, o;

	(void)state;
	l.ino = w.ino = t_big_file(fs);
	w.off = T_BIG - JG_BLOCK_SIZE;
	memset(data, 0xa5, sizeof(data));
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "other", S_IFREG | 0644, 0, 0, 0, &o), 0);
	assert_int_equal(fs_sync(fs), 0);
	t_lk.fail_after_stop = true;
	t_truncate_with_same(fs, &l, &w, o.ino);
	t_lk.fail_after_stop = false;
	assert_int_equal(l.rc, -EROFS);
	assert_true(t_lk.busy_waited);
	assert_int_equal(w.rc, -EROFS);
	assert_int_equal(fs_sync(fs), 0);
	fs_abandon(fs);
	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, l.ino, &a), 0);
	assert_int_equal(a.size, 0);
	assert_int_equal(a.blocks, 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/* A truncate of an unlinked, still referenced file (an orphan already): the new
 * size is written, the blocks past it freed, and it stays an orphan (F3). */
static void test_lock_truncate_orphan(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_attr a = { .size = 0 };
	struct fs_info info;
	uint64_t ino;

	(void)state;
	ino = t_big_file(fs);
	assert_int_equal(fs_ref(fs, ino, 1), 0);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "huge"), 0);
	assert_int_equal(fs_setattr(fs, ino, &a, FS_SET_SIZE, NULL), 0);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	assert_int_equal(a.size, 0);
	assert_int_equal(a.blocks, 0);
	assert_int_equal(fs_sync(fs), 0);
	fs_abandon(fs);
	fs = ft_mount(dev);
	fs_info_get(fs, &info);
	assert_int_equal(info.orphans_freed, 1);
	assert_int_equal(fs_getattr(fs, ino, &a), -ENOENT);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/* Two big orphans left by a crash: @unl unlinked while referenced, @trn cut to 0
 * by a truncate's first handle (its blocks not freed yet). */
static void t_big_orphans(struct blk_dev *dev, uint64_t *unl, uint64_t *trn)
{
	struct fs *fs = ft_mount(dev);
	struct fs_inode ip;
	struct fs_tx *tx;

	*unl = t_big_file_named(fs, "unlinked");
	*trn = t_big_file_named(fs, "truncated");
	assert_int_equal(fs_ref(fs, *unl, 1), 0);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "unlinked"), 0);
	jg_mutex_lock(&fs->lock);
	assert_int_equal(fs_tx_start(fs, 16, &tx), 0);
	assert_int_equal(fs_iget(fs, *trn, &ip), 0);
	ip.size = 0;
	assert_int_equal(fs_orphan_add(tx, &ip), 0);
	assert_int_equal(fs_tx_stop(tx), 0);
	jg_mutex_unlock(&fs->lock);
	assert_int_equal(fs_sync(fs), 0);
	fs_abandon(fs);
}

/* Mount and fsck -y finish big orphans step by step (L1) holding the lock like any
 * caller: it is free again after, not left taken by a step's re-lock. */
static void test_lock_orphans_at_mount(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fsck_opts fo = { .repair = true };
	struct fsck_report r;
	uint64_t unl, trn;
	struct fs_attr a;
	struct fs *fs;
	int rc;

	(void)state;
	t_big_orphans(dev, &unl, &trn);
	fs = ft_mount(dev);
	rc = pthread_mutex_trylock(&fs->lock.m);
	if (rc)
		fail_msg("the fs lock is taken after mount: trylock %d", rc);
	__real_pthread_mutex_unlock(&fs->lock.m);
	assert_int_equal(fs_getattr(fs, unl, &a), -ENOENT);
	assert_int_equal(fs_getattr(fs, trn, &a), 0);
	assert_int_equal(a.size, 0);
	assert_int_equal(a.blocks, 0);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "truncated"), 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	/* fsck -y finishes them the same way */
	t_big_orphans(dev, &unl, &trn);
	assert_int_equal(fs_fsck(dev, &fo, &r), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_getattr(fs, unl, &a), -ENOENT);
	assert_int_equal(fs_getattr(fs, trn, &a), 0);
	assert_int_equal(a.blocks, 0);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

struct t_stat {
	struct fs *fs;
	uint64_t ino;
	int rc;
};

static void *t_stat_run(void *arg)
{
	struct t_stat *st = arg;
	struct fs_attr a;

	t_fair.waiter = pthread_self(); /* before its first lock: the wrapper knows it */
	st->rc = fs_getattr(st->fs, st->ino, &a);
	return NULL;
}

#define T_YIELDS 16

/*
 * (L1), issue 43: a long call yields between its steps while a stat of another
 * file waits for the lock. Whatever the scheduler does, the stat gets the lock
 * at the first yield: the yielder takes it back only after the waiters had it.
 * Before the fix the yield unlocked and relocked an unfair mutex: the stat got
 * in, if ever, only by winning a race against the yielder's relock.
 */
static void test_lock_yield_fair(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct t_stat st = {.fs = fs};
	struct fs_attr a;
	pthread_t wt;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "other", S_IFREG | 0644, 0, 0, 0, &a), 0);
	st.ino = a.ino;
	memset(&t_fair, 0, sizeof(t_fair));
	t_fair.got_at = -1;
	/* the long call: this thread, holding the lock, yielding between steps */
	jg_mutex_lock(&fs->lock);
	t_fair.yielder = pthread_self();
	t_fair.fs_lock = &fs->lock.m;
	assert_int_equal(pthread_create(&wt, NULL, t_stat_run, &st), 0);
	__real_pthread_mutex_lock(&t_lk.m);
	while (!t_fair.waiting)
		__real_pthread_cond_wait(&t_lk.cv, &t_lk.m);
	__real_pthread_mutex_unlock(&t_lk.m);
	for (int i = 0; i < T_YIELDS; i++) {
		fs_lock_yield(fs);
		t_fair.yields++;
	}
	__real_pthread_mutex_lock(&t_lk.m);
	t_fair.yielder_done = true;
	pthread_cond_broadcast(&t_lk.cv);
	__real_pthread_mutex_unlock(&t_lk.m);
	jg_mutex_unlock(&fs->lock);
	assert_int_equal(pthread_join(wt, NULL), 0);
	t_fair.fs_lock = NULL;
	assert_int_equal(st.rc, 0);
	if (t_fair.got_at != 0)
		fail_msg("the waiting stat got the fs lock only after %d yields of the long call "
			 "(of %d): the yield took the lock back before the waiter had it",
			 t_fair.got_at, T_YIELDS);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

#define T_TURNS 2000

struct t_turns {
	struct jg_mutex *mx;
	bool yield;	 /* a long call: yields between steps; else lock, unlock */
	uint64_t *count; /* under @mx */
};

static void *t_turns_run(void *arg)
{
	struct t_turns *t = arg;

	jg_mutex_lock(t->mx);
	for (int i = 0; i < T_TURNS; i++) {
		(*t->count)++;
		if (t->yield) {
			jg_mutex_yield(t->mx);
		} else {
			jg_mutex_unlock(t->mx);
			jg_mutex_lock(t->mx);
		}
	}
	jg_mutex_unlock(t->mx);
	return NULL;
}

/* Two long calls yielding and a plain caller on one lock all finish: the
 * yielders wait for each other's tickets without waiting forever. */
static void test_lock_yield_two_long_calls(void **state)
{
	struct jg_mutex mx;
	uint64_t count = 0;
	struct t_turns t[3] = {{&mx, true, &count}, {&mx, true, &count}, {&mx, false, &count}};
	pthread_t th[3];

	(void)state;
	jg_mutex_init(&mx, PTHREAD_MUTEX_DEFAULT);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, t_turns_run, &t[i]), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(count, 3 * T_TURNS);
	assert_null(mx.yielders);
	assert_int_equal(mx.served, mx.tickets);
	jg_mutex_destroy(&mx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lock_huge_fallocate_and_delete),
	    cmocka_unit_test(test_lock_huge_truncate),
	    cmocka_unit_test(test_lock_truncate_write_waits),
	    cmocka_unit_test(test_lock_truncate_unlink),
	    cmocka_unit_test(test_lock_truncate_error_wakes),
	    cmocka_unit_test(test_lock_truncate_orphan),
	    cmocka_unit_test(test_lock_orphans_at_mount),
	    cmocka_unit_test(test_lock_yield_fair),
	    cmocka_unit_test(test_lock_yield_two_long_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
