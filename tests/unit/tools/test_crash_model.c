// SPDX-License-Identifier: MIT
/*
 * tests/unit/tools/test_crash_model.c - the crash harness's model must accept
 * what a correct volume holds and reject damage: run the seeded workload on a
 * plain directory, then check it untouched (accepted), and with one sector
 * corrupted, a durable file removed, a file shortened, a stale sector (each
 * rejected). A checker that accepts everything would pass every crash test.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../tools/crash/crash.h"

struct fixture {
	char dir[64];
	struct ct_model *m;
	struct ct_tree t;
};

static int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	unsigned int progress = 0;

	snprintf(f->dir, sizeof(f->dir), "/tmp/jgrfs-ct-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	if (ct_model_new(42, 300, &f->m) || ct_workload_setup(f->dir))
		return -1;
	if (ct_workload_run(f->m, f->dir, &progress, NULL) != 300 || progress != 300)
		return -1;
	if (ct_tree_read_dir(f->dir, &f->t))
		return -1;
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	ct_tree_free(&f->t);
	ct_model_free(f->m);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd))
		return -1;
	free(f);
	return 0;
}

static void test_ct_model_accepts_intact(void **state)
{
	struct fixture *f = *state;
	char why[256] = "";

	assert_true(f->t.n > 3);
	assert_true(ct_model_fsyncs(f->m) > 10);
	if (ct_model_check(f->m, &f->t, why))
		fail_msg("intact volume rejected: %s", why);
}

/* The largest file found, to damage. */
static struct ct_found *pick(struct fixture *f)
{
	struct ct_found *best = &f->t.files[0];

	for (unsigned int i = 1; i < f->t.n; i++)
		if (f->t.files[i].size > best->size)
			best = &f->t.files[i];
	return best;
}

static void test_ct_model_rejects_garbage_sector(void **state)
{
	struct fixture *f = *state;
	struct ct_found *x = pick(f);
	char why[256] = "";

	assert_true(x->size >= CT_SECTOR);
	x->data[CT_SECTOR / 2] ^= 0x5a;
	assert_int_equal(ct_model_check(f->m, &f->t, why), 1);
	x->data[CT_SECTOR / 2] ^= 0x5a;
	assert_int_equal(ct_model_check(f->m, &f->t, why), 0);
}

static void test_ct_model_rejects_missing_file(void **state)
{
	struct fixture *f = *state;
	struct ct_found saved = f->t.files[0];
	char why[256] = "";

	f->t.files[0] = f->t.files[f->t.n - 1];
	f->t.n--;
	assert_int_equal(ct_model_check(f->m, &f->t, why), 1);
	f->t.files[f->t.n++] = f->t.files[0];
	f->t.files[0] = saved;
	assert_int_equal(ct_model_check(f->m, &f->t, why), 0);
}

static void test_ct_model_rejects_short_file(void **state)
{
	struct fixture *f = *state;
	struct ct_found *x = pick(f);
	uint64_t size = x->size;
	char why[256] = "";

	x->size = size - CT_SECTOR / 2; /* a size never written */
	assert_int_equal(ct_model_check(f->m, &f->t, why), 1);
	x->size = size;
}

/*
 * The check of a forced degraded recovery: a file named at risk is not compared
 * (its content may be the write hole's), every other file still is, and the
 * namespace is compared whatever is named.
 */
static void test_ct_model_skip_at_risk(void **state)
{
	struct fixture *f = *state;
	struct ct_found *x = pick(f), saved = f->t.files[0];
	const char *skip[1] = { x->path }, *other[1] = { "no/such" };
	char why[256] = "";

	x->data[CT_SECTOR / 2] ^= 0x5a;
	assert_int_equal(ct_model_check_skip(f->m, &f->t, other, 1, why), 1);
	if (ct_model_check_skip(f->m, &f->t, skip, 1, why))
		fail_msg("damage in a file named at risk rejected: %s", why);
	x->data[CT_SECTOR / 2] ^= 0x5a;
	/* a file missing: rejected even when named */
	skip[0] = saved.path;
	f->t.files[0] = f->t.files[f->t.n - 1];
	f->t.n--;
	assert_int_equal(ct_model_check_skip(f->m, &f->t, skip, 1, why), 1);
	f->t.files[f->t.n++] = f->t.files[0];
	f->t.files[0] = saved;
	assert_int_equal(ct_model_check_skip(f->m, &f->t, skip, 1, why), 0);
}

/* A sector from another file (a misdirected write) is garbage, not data. */
static void test_ct_model_rejects_foreign_sector(void **state)
{
	struct fixture *f = *state;
	struct ct_found *x = pick(f), *y = NULL;
	uint8_t saved[CT_SECTOR];
	char why[256] = "";

	for (unsigned int i = 0; i < f->t.n; i++)
		if (&f->t.files[i] != x && f->t.files[i].size >= CT_SECTOR)
			y = &f->t.files[i];
	assert_non_null(y);
	memcpy(saved, x->data, CT_SECTOR);
	memcpy(x->data, y->data, CT_SECTOR);
	assert_int_equal(ct_model_check(f->m, &f->t, why), 1);
	memcpy(x->data, saved, CT_SECTOR);
}

/* The workload reaches hard links and xattrs: a file found under two names, and
 * user.ct values the check holds to what was set on that file. */
static void test_ct_model_links_and_xattrs(void **state)
{
	struct fixture *f = *state;
	struct ct_found *x = NULL;
	unsigned int links = 0;
	char saved[32], why[256] = "";

	for (unsigned int i = 0; i < f->t.n; i++) {
		links += strchr(f->t.files[i].path, '/')[1] == 'l';
		if (f->t.files[i].xattr[0])
			x = &f->t.files[i];
	}
	assert_true(links > 0);
	assert_non_null(x);
	memcpy(saved, x->xattr, sizeof(saved));
	snprintf(x->xattr, sizeof(x->xattr), "ct999999.1");	/* another file's value */
	assert_int_equal(ct_model_check(f->m, &f->t, why), 1);
	x->xattr[0] = '\0';					/* a durable value lost */
	assert_int_equal(ct_model_check(f->m, &f->t, why), 1);
	memcpy(x->xattr, saved, sizeof(saved));
	assert_int_equal(ct_model_check(f->m, &f->t, why), 0);
}

/* POSIX operations whose first appending write of 2+ sectors after the 30th write
 * lands half of its bytes and fails with ENOSPC, as a full volume does. */
static struct ct_ops posix;
static unsigned int pw_calls;
static bool pw_failed;

static int pw_half_enospc(void *ctx, const char *path, const void *buf, size_t len,
			  uint64_t off, bool create)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", (const char *)ctx, path);
	if (++pw_calls > 30 && !pw_failed && len >= 2 * CT_SECTOR && !stat(p, &st) &&
	    (uint64_t)st.st_size == off) {
		int rc = posix.pwrite(ctx, path, buf, len / CT_SECTOR / 2 * CT_SECTOR, off, create);

		pw_failed = true;
		return rc ? rc : -ENOSPC;
	}
	return posix.pwrite(ctx, path, buf, len, off, create);
}

/* A write that fails part-way leaves a size the model cannot name: the check
 * takes any between the sizes before and after it, and still checks the bytes. */
static void test_ct_model_write_fails_part_way(void **state)
{
	char dir[64] = "/tmp/jgrfs-ct-XXXXXX", cmd[128], why[256] = "";
	struct ct_tree t = { 0 };
	struct ct_model *m;
	struct ct_ops ops;
	unsigned int progress = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	ct_posix_ops(&posix, dir);
	ops = posix;
	ops.pwrite = pw_half_enospc;
	assert_int_equal(ct_model_new(7, 300, &m), 0);
	assert_int_equal(ct_workload_setup_ops(&ops), 0);
	assert_true(ct_workload_run_ops(m, &ops, &progress, NULL) < 300);
	assert_true(pw_failed);
	assert_int_equal(ct_tree_read_ops(&ops, &t), 0);
	if (ct_model_check(m, &t, why))
		fail_msg("a write that failed part-way rejected: %s", why);
	ct_tree_free(&t);
	ct_model_free(m);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * (M2) An extending write of several blocks is written one chunk (handle) at a
 * time, and a commit between two chunks makes the size between durable: the
 * check takes a block-aligned size the write passed through, not one inside a
 * block. The hooks below keep the last appending write of 3+ whole blocks that
 * no later fsync, truncate, rename or unlink of its path made moot.
 */
static struct {
	char path[64];
	uint64_t off, len;
	bool live;
} lastw;

static void lw_forget(const char *path)
{
	if (!strcmp(path, lastw.path))
		lastw.live = false;
}

static int lw_pwrite(void *ctx, const char *path, const void *buf, size_t len, uint64_t off,
		     bool create)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", (const char *)ctx, path);
	if (len >= 3 * 4096 && off % 4096 == 0 && (create || (!stat(p, &st) &&
						     (uint64_t)st.st_size == off))) {
		snprintf(lastw.path, sizeof(lastw.path), "%s", path);
		lastw.off = off;
		lastw.len = len;
		lastw.live = true;
	} else if (!strcmp(path, lastw.path) && !stat(p, &st) && off + len > (uint64_t)st.st_size) {
		lastw.live = false;	/* extended again: sizes of its own */
	}
	return posix.pwrite(ctx, path, buf, len, off, create);
}

static int lw_fsync(void *ctx, const char *path)
{
	lw_forget(path);
	return posix.fsync(ctx, path);
}

static int lw_truncate(void *ctx, const char *path, uint64_t size)
{
	lw_forget(path);
	return posix.truncate(ctx, path, size);
}

static int lw_rename(void *ctx, const char *from, const char *to)
{
	lw_forget(from);
	lw_forget(to);
	return posix.rename(ctx, from, to);
}

static int lw_unlink(void *ctx, const char *path)
{
	lw_forget(path);
	return posix.unlink(ctx, path);
}

static int lw_link(void *ctx, const char *from, const char *to)
{
	lw_forget(from);	/* a second name: an fsync through it is not seen */
	return posix.link(ctx, from, to);
}

static void test_ct_model_write_chunk_sizes(void **state)
{
	char dir[64], cmd[128], why[256] = "";
	struct ct_found *x = NULL;
	unsigned int tried = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 40 && !x; seed++, tried++) {
		struct ct_tree t = { 0 };
		struct ct_model *m;
		struct ct_ops ops;
		unsigned int progress = 0;

		snprintf(dir, sizeof(dir), "/tmp/jgrfs-ct-XXXXXX");
		assert_non_null(mkdtemp(dir));
		ct_posix_ops(&posix, dir);
		ops = posix;
		ops.pwrite = lw_pwrite;
		ops.fsync = lw_fsync;
		ops.truncate = lw_truncate;
		ops.rename = lw_rename;
		ops.unlink = lw_unlink;
		ops.link = lw_link;
		memset(&lastw, 0, sizeof(lastw));
		assert_int_equal(ct_model_new(seed, 200, &m), 0);
		assert_int_equal(ct_workload_setup_ops(&ops), 0);
		assert_int_equal(ct_workload_run_ops(m, &ops, &progress, NULL), 200);
		assert_int_equal(ct_tree_read_ops(&ops, &t), 0);
		for (unsigned int i = 0; i < t.n && lastw.live; i++)
			if (!strcmp(t.files[i].path, lastw.path) &&
			    t.files[i].size == lastw.off + lastw.len)
				x = &t.files[i];
		if (x) {
			uint64_t size = x->size;

			if (ct_model_check(m, &t, why))
				fail_msg("seed %llu: intact volume rejected: %s",
					 (unsigned long long)seed, why);
			x->size = lastw.off + 4096;	/* its first chunk's end */
			if (ct_model_check(m, &t, why))
				fail_msg("seed %llu: %s at %llu, a size its write of %llu at %llu "
					 "passed through, rejected: %s", (unsigned long long)seed,
					 x->path, (unsigned long long)x->size,
					 (unsigned long long)lastw.len, (unsigned long long)lastw.off,
					 why);
			x->size = lastw.off + 4096 + CT_SECTOR;	/* inside a block */
			assert_int_equal(ct_model_check(m, &t, why), 1);
			x->size = size;
		}
		ct_tree_free(&t);
		ct_model_free(m);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		assert_int_equal(system(cmd), 0);
	}
	if (!x)
		fail_msg("no seed of %u left a multi-block appending write unsynced", tried);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ct_model_accepts_intact),
		cmocka_unit_test(test_ct_model_rejects_garbage_sector),
		cmocka_unit_test(test_ct_model_rejects_missing_file),
		cmocka_unit_test(test_ct_model_rejects_short_file),
		cmocka_unit_test(test_ct_model_rejects_foreign_sector),
		cmocka_unit_test(test_ct_model_skip_at_risk),
		cmocka_unit_test(test_ct_model_links_and_xattrs),
	};
	const struct CMUnitTest alone[] = {
		cmocka_unit_test(test_ct_model_write_fails_part_way),
		cmocka_unit_test(test_ct_model_write_chunk_sizes),
	};

	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown) |
	       cmocka_run_group_tests(alone, NULL, NULL);
}
