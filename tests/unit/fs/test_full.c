// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_full.c - operations that fail part way leave the filesystem
 * as fsck expects: a data write that fails after its block was mapped.
 *
 * The binary is linked with -Wl,--wrap=jnl_handle_dirty_data (meson.build): the
 * wrapper below fails the journal's data call on demand, as a declared
 * transaction whose declare footprint is exhausted (-ENOSPC) or an allocation
 * failure (-ENOMEM) would, after the filesystem has mapped the block.
 */
#include <errno.h>
#include <linux/falloc.h>

#include "fs_test.h"

/* ------------------------------------------------------ failure injection */

static struct {
	bool armed;
	unsigned int pass;	/* calls let through before failing */
	int rc;			/* what the failing calls return */
	unsigned int failed;
} ft_inj;

/* The names are the linker's (--wrap), not ours. */
int __real_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block);
int __wrap_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block);

int __wrap_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block)
{
	if (ft_inj.armed) {
		if (!ft_inj.pass) {
			ft_inj.failed++;
			return ft_inj.rc;
		}
		ft_inj.pass--;
	}
	return __real_jnl_handle_dirty_data(h, blkno, block);
}

static void ft_inj_arm(unsigned int pass, int rc)
{
	ft_inj.armed = true;
	ft_inj.pass = pass;
	ft_inj.rc = rc;
	ft_inj.failed = 0;
}

static void ft_inj_disarm(void)
{
	ft_inj.armed = false;
}

/* ---------------------------------------------------------------- helpers */

static const enum jnl_data_mode ft_modes[] = { JNL_DATA_WRITEBACK, JNL_DATA_ORDERED,
					       JNL_DATA_JOURNAL, JNL_DATA_DECLARED };

/* Commit what is done so far and check it as a crash right now would leave it. */
static void ft_check(struct fs *fs, struct blk_dev *dev, enum jnl_data_mode m, const char *what)
{
	struct fsck_opts o = { .repair = false };
	struct fsck_report r;
	int rc;

	assert_int_equal(fs_sync(fs), 0);
	rc = fs_fsck(dev, &o, &r);
	if (rc || r.problems_found)
		fail_msg("mode %s, after %s: fsck exit %d, %llu problems", jnl_data_mode_name(m),
			 what, rc, (unsigned long long)r.problems_found);
}

static uint64_t ft_create(struct fs *fs, uint64_t dir, const char *name)
{
	struct fs_attr a;

	assert_int_equal(fs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	return a.ino;
}

/* ------------------------------------------------- mapped before written */

#define FT_OLD_BYTE 0xa5	/* the deleted file's bytes: must never be read back */
#define FT_NEW_BYTE 0x11

/*
 * A volume whose first data blocks held another file's bytes (deleted, and the
 * deletion durable, so the blocks are handed out again first): @victim is a new
 * empty file in the same group.
 */
static struct fs *ft_stale_setup(struct blk_dev *dev, enum jnl_data_mode m, uint64_t *victim)
{
	uint8_t *buf = malloc(1 << 20);
	struct fs *fs = ft_mount_mode(dev, m);
	uint64_t old;

	memset(buf, FT_OLD_BYTE, 1 << 20);
	old = ft_create(fs, FS_ROOT_INO, "old");
	for (int i = 0; i < 4; i++)
		assert_int_equal(fs_write(fs, old, (uint64_t)i << 20, 1 << 20, buf), 1 << 20);
	/* on the device before the delete (a delete drops data not yet written) */
	assert_int_equal(fs_sync(fs), 0);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "old"), 0);
	/* a remount makes the frees durable (G3): the blocks are reused at once */
	assert_int_equal(fs_unmount(fs), 0);
	fs = ft_mount_mode(dev, m);
	*victim = ft_create(fs, FS_ROOT_INO, "victim");
	free(buf);
	return fs;
}

/* Every byte of @ino in [0, @len) reads as zero or @ok, never as the old file's. */
static void ft_no_stale(struct fs *fs, uint64_t ino, uint64_t len, const char *what,
			enum jnl_data_mode m)
{
	uint8_t *got = malloc(len);
	ssize_t n = fs_read(fs, ino, 0, len, got);

	assert_true(n >= 0);
	for (ssize_t i = 0; i < n; i++)
		if (got[i] == FT_OLD_BYTE)
			fail_msg("mode %s, %s: byte %zd of the new file holds the deleted file's data",
				 jnl_data_mode_name(m), what, i);
	free(got);
}

/*
 * The journal's data call fails after the block was mapped (first block, a later
 * block of the same handle, a block under an indirect block): the file must not
 * keep a pointer to the unwritten block, so neither growing the file nor a
 * partial write into that block shows the old owner's bytes; fsck clean, also
 * after a remount. Then the same for fallocate.
 */
static void test_full_write_fails_after_map(void **state)
{
	static const struct {
		uint64_t lblk;
		unsigned int pass;
	} cases[] = { { 0, 0 }, { 0, 3 }, { 40, 0 }, { 40, 2 } };
	uint8_t *buf = malloc(8 * 4096);
	struct fs_attr set = { 0 }, a;

	(void)state;
	memset(buf, FT_NEW_BYTE, 8 * 4096);
	for (unsigned int mi = 0; mi < 4; mi++) {
		for (unsigned int c = 0; c < 2 * (sizeof(cases) / sizeof(cases[0])); c++) {
			enum jnl_data_mode m = ft_modes[mi];
			bool falloc = c % 2;
			uint64_t off = cases[c / 2].lblk * 4096, end = off + 8 * 4096, ino;
			struct blk_dev *dev = ft_dev_new(64);
			struct fs *fs = ft_stale_setup(dev, m, &ino);
			char what[80];
			int rc;

			snprintf(what, sizeof(what), "%s at block %llu failing after %u blocks",
				 falloc ? "fallocate" : "write", (unsigned long long)cases[c / 2].lblk,
				 cases[c / 2].pass);
			ft_inj_arm(cases[c / 2].pass, c / 2 % 2 ? -ENOMEM : -ENOSPC);
			if (falloc)
				rc = fs_fallocate(fs, ino, 0, off, 8 * 4096);
			else
				rc = (int)fs_write(fs, ino, off, 8 * 4096, buf);
			ft_inj_disarm();
			assert_true(ft_inj.failed > 0);
			if (cases[c / 2].pass && !falloc)
				assert_int_equal(rc, (int)cases[c / 2].pass * 4096);
			else
				assert_true(rc < 0);
			/* grow over the range: unwritten blocks read as zeros or holes */
			set.size = end + 4096;
			assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_SIZE, &a), 0);
			ft_no_stale(fs, ino, end + 4096, what, m);
			/* a partial write into each block merges with what the block holds */
			for (uint64_t o = off; o < end; o += 4096)
				assert_int_equal(fs_write(fs, ino, o + 1000, 1, buf), 1);
			ft_no_stale(fs, ino, end + 4096, what, m);
			ft_check(fs, dev, m, what);
			assert_int_equal(fs_unmount(fs), 0);
			ft_fsck_clean(dev);
			fs = ft_mount_mode(dev, m);
			ft_no_stale(fs, ino, end + 4096, what, m);
			assert_int_equal(fs_unmount(fs), 0);
			blk_close(dev);
		}
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_write_fails_after_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
