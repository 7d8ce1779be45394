// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_full.c - operations that fail part way leave the filesystem
 * as fsck expects: every kind of operation on a full volume (no blocks, then no
 * inodes), a data write that fails after its block was mapped, a data block and
 * its checksum when a journal call fails (D1), operations that need the blocks
 * of a delete whose transaction is not yet durable (G3), and a failed fallocate
 * giving back its blocks.
 *
 * The binary is linked with -Wl,--wrap for jnl_handle_dirty_data and _meta
 * (meson.build): the wrappers below fail the journal's calls on demand, as a
 * declared transaction whose declare footprint is exhausted (-ENOSPC) or an
 * allocation failure (-ENOMEM) would.
 */
#include <errno.h>
#include <linux/falloc.h>

#include "fs_test.h"
#include "fs_i.h"

/* ------------------------------------------------------ failure injection */

enum ft_inj_call { FT_INJ_DATA, FT_INJ_META };

static struct {
	bool armed;
	enum ft_inj_call call;	/* which journal call fails */
	unsigned int pass;	/* calls let through before failing */
	bool once;		/* fail one call only, then let the rest through */
	int rc;			/* what the failing calls return */
	const struct fs *fs;	/* set: count only calls for bitmap and descriptor blocks */
	/* with fs set: count only calls for data checksum blocks instead, and not
	 * those the journal cannot fail (a block its transaction holds already,
	 * journal.h): the calls logged so far in transaction held_tid */
	bool dcsum;
	uint64_t held_tid, held[64];
	unsigned int nheld;
	unsigned int failed;
} ft_inj;

/* The names are the linker's (--wrap), not ours. */
int __real_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block);
int __wrap_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block);
int __real_jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block);
int __wrap_jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block);

/* Is @blkno a block bitmap, an inode bitmap or a group descriptor block? */
static bool ft_group_block(uint64_t blkno)
{
	const struct fs *fs = ft_inj.fs;

	if (blkno >= fs->gdt_start && blkno < fs->gdt_start + fs->gdt_blocks)
		return true;
	return blkno >= fs->first_group && (blkno - fs->first_group) % fs->bpg < 2;
}

/* Does the journal hold @blkno as metadata in @h's transaction (ft_inj.dcsum)? */
static bool ft_inj_held(struct jnl_handle *h, uint64_t blkno)
{
	if (ft_inj.held_tid != jnl_handle_tid(h))
		return false;
	for (unsigned int i = 0; i < ft_inj.nheld; i++)
		if (ft_inj.held[i] == blkno)
			return true;
	return false;
}

static void ft_inj_hold(struct jnl_handle *h, uint64_t blkno)
{
	if (ft_inj.held_tid != jnl_handle_tid(h)) {
		ft_inj.held_tid = jnl_handle_tid(h);
		ft_inj.nheld = 0;
	}
	if (!ft_inj_held(h, blkno) && ft_inj.nheld < sizeof(ft_inj.held) / sizeof(ft_inj.held[0]))
		ft_inj.held[ft_inj.nheld++] = blkno;
}

static bool ft_inj_fail(enum ft_inj_call call, struct jnl_handle *h, uint64_t blkno)
{
	if (!ft_inj.armed || ft_inj.call != call)
		return false;
	if (ft_inj.fs && ft_inj.dcsum &&
	    (!fs_dcsum_in_region(ft_inj.fs, blkno) || ft_inj_held(h, blkno)))
		return false;
	if (ft_inj.fs && !ft_inj.dcsum && !ft_group_block(blkno))
		return false;
	if (ft_inj.pass) {
		ft_inj.pass--;
		return false;
	}
	ft_inj.failed++;
	if (ft_inj.once)
		ft_inj.armed = false;
	return true;
}

int __wrap_jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block)
{
	if (ft_inj_fail(FT_INJ_DATA, h, blkno))
		return ft_inj.rc;
	return __real_jnl_handle_dirty_data(h, blkno, block);
}

int __wrap_jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block)
{
	int rc;

	if (ft_inj_fail(FT_INJ_META, h, blkno))
		return ft_inj.rc;
	rc = __real_jnl_handle_dirty_meta(h, blkno, block);
	if (!rc)
		ft_inj_hold(h, blkno);
	return rc;
}

static void ft_inj_arm(enum ft_inj_call call, unsigned int pass, bool once, int rc)
{
	ft_inj.armed = true;
	ft_inj.call = call;
	ft_inj.pass = pass;
	ft_inj.once = once;
	ft_inj.rc = rc;
	ft_inj.failed = 0;
	ft_inj.fs = NULL;
	ft_inj.dcsum = false;
}

static void ft_inj_disarm(void)
{
	ft_inj.armed = false;
}

/* ---------------------------------------------------------------- helpers */

static const enum jnl_data_mode ft_modes[] = { JNL_DATA_WRITEBACK, JNL_DATA_ORDERED,
					       JNL_DATA_JOURNAL, JNL_DATA_DECLARED };

/* Did a failure abort the journal (T1): the filesystem turned read-only? */
static bool ft_torn(struct fs *fs)
{
	struct fs_info info;

	fs_info_get(fs, &info);
	return info.readonly;
}

/*
 * Commit what is done so far and check it as a crash right now would leave it.
 * A failure that aborted the journal (T1) left the filesystem read-only: then
 * it is unmounted, fsck must find the volume as the last commit left it, and
 * *@fsp is a new mount of it.
 */
static void ft_check(struct fs **fsp, struct blk_dev *dev, enum jnl_data_mode m, const char *what)
{
	struct fsck_opts o = { .repair = false };
	struct fsck_report r;
	bool torn = ft_torn(*fsp);
	int rc;

	if (torn) {
		(void)fs_unmount(*fsp);
		*fsp = NULL;
	} else {
		assert_int_equal(fs_sync(*fsp), 0);
	}
	rc = fs_fsck(dev, &o, &r);
	if (rc || r.problems_found)
		fail_msg("mode %s, after %s%s: fsck exit %d, %llu problems", jnl_data_mode_name(m),
			 what, torn ? " (journal aborted)" : "", rc,
			 (unsigned long long)r.problems_found);
	if (torn)
		*fsp = ft_mount_mode(dev, m);
}

static uint64_t ft_create(struct fs *fs, uint64_t dir, const char *name)
{
	struct fs_attr a;

	assert_int_equal(fs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	return a.ino;
}

/* An operation expected to run out of space sooner or later: 0 or -ENOSPC. */
static void ft_expect_ok_or_nospc(int rc, const char *what, unsigned int i)
{
	if (rc && rc != -ENOSPC)
		fail_msg("%s #%u: %d, expected 0 or -ENOSPC", what, i, rc);
}

/* ---------------------------------------------------------- a full volume */

#define FT_LOOP_MAX 5000u

/* The files and the directory one round of operations works on. */
struct ft_round {
	uint64_t dir;		/* where names are added */
	uint64_t f0, f1;	/* files made before the volume filled up */
	uint64_t rdir;		/* the directory holding @rname, f1's current name */
	char rname[64];
};

/*
 * Every kind of operation, each repeated until it fails (or gives up), then fsck:
 * those that need blocks first, while @r->dir may still have room for a name,
 * then those that fill the directory.
 */
static void ft_every_op(struct fs *fs, struct blk_dev *dev, enum jnl_data_mode m,
			struct ft_round *r, const char *phase)
{
	static const char target[] = "a-long-symlink-target/that/does-not-fit/in/the/inode/"
				     "so/it/needs/a/data/block/of/its/own/which/a/full/volume/"
				     "cannot/give";
	uint8_t blk[4096];
	struct fs_attr a, set = { .size = 1 << 20 };
	char name[96], what[128];
	unsigned int i;
	int rc;

	_Static_assert(sizeof(target) - 1 > 112, "target must not be inline (FS_INLINE_MAX)");
	memset(blk, 0x3c, sizeof(blk));
	for (i = 0, rc = 0; !rc && i < 64; i++) {
		ssize_t n = fs_write(fs, r->f0, (uint64_t)i * 4096, 4096, blk);

		rc = n < 0 ? (int)n : 0;
		ft_expect_ok_or_nospc(rc, "write", i);
	}
	snprintf(what, sizeof(what), "%s write (%u)", phase, i);
	ft_check(&fs, dev, m, what);
	rc = (int)fs_write(fs, r->f1, 2000 * 4096 + 100, 10, blk);
	if (rc != 10)
		ft_expect_ok_or_nospc(rc, "indirect write", 0);
	snprintf(what, sizeof(what), "%s indirect write", phase);
	ft_check(&fs, dev, m, what);

	rc = fs_fallocate(fs, r->f1, 0, 0, 64 * 4096);
	ft_expect_ok_or_nospc(rc, "fallocate", 0);
	snprintf(what, sizeof(what), "%s fallocate", phase);
	ft_check(&fs, dev, m, what);
	rc = fs_fallocate(fs, r->f1, FALLOC_FL_KEEP_SIZE, 300000 * 4096ull, 64 * 4096);
	ft_expect_ok_or_nospc(rc, "fallocate keep size", 0);
	snprintf(what, sizeof(what), "%s fallocate keep size", phase);
	ft_check(&fs, dev, m, what);

	assert_int_equal(fs_setattr(fs, r->f0, &set, FS_SET_SIZE, &a), 0);
	snprintf(what, sizeof(what), "%s truncate up", phase);
	ft_check(&fs, dev, m, what);

	snprintf(name, sizeof(name), "user.%s", phase);
	rc = fs_setxattr(fs, r->f1, name, "value", 5, 0);
	ft_expect_ok_or_nospc(rc, "setxattr", 0);
	snprintf(what, sizeof(what), "%s setxattr", phase);
	ft_check(&fs, dev, m, what);

	for (i = 0, rc = 0; !rc && i < FT_LOOP_MAX; i++) {
		snprintf(name, sizeof(name), "%s-mkdir-%u", phase, i);
		rc = fs_mkdir(fs, r->dir, name, 0755, 0, 0, &a);
		ft_expect_ok_or_nospc(rc, "mkdir", i);
	}
	snprintf(what, sizeof(what), "%s mkdir (%u)", phase, i);
	ft_check(&fs, dev, m, what);

	for (i = 0, rc = 0; !rc && i < FT_LOOP_MAX; i++) {
		snprintf(name, sizeof(name), "%s-symlink-%u", phase, i);
		rc = fs_symlink(fs, r->dir, name, target, 0, 0, &a);
		ft_expect_ok_or_nospc(rc, "long symlink", i);
	}
	snprintf(what, sizeof(what), "%s long symlink (%u)", phase, i);
	ft_check(&fs, dev, m, what);

	for (i = 0, rc = 0; !rc && i < FT_LOOP_MAX; i++) {
		snprintf(name, sizeof(name), "%s-create-%u", phase, i);
		rc = fs_mknod(fs, r->dir, name, S_IFREG | 0644, 0, 0, 0, &a);
		ft_expect_ok_or_nospc(rc, "create", i);
	}
	snprintf(what, sizeof(what), "%s create (%u)", phase, i);
	ft_check(&fs, dev, m, what);

	for (i = 0, rc = 0; !rc && i < FT_LOOP_MAX; i++) {
		snprintf(name, sizeof(name), "%s-short-%u", phase, i);
		rc = fs_symlink(fs, r->dir, name, "short", 0, 0, &a);
		ft_expect_ok_or_nospc(rc, "short symlink", i);
	}
	snprintf(what, sizeof(what), "%s short symlink (%u)", phase, i);
	ft_check(&fs, dev, m, what);

	for (i = 0, rc = 0; !rc && i < FT_LOOP_MAX; i++) {
		snprintf(name, sizeof(name), "%s-link-%u", phase, i);
		rc = fs_link(fs, r->f0, r->dir, name, &a);
		ft_expect_ok_or_nospc(rc, "link", i);
	}
	snprintf(what, sizeof(what), "%s link (%u)", phase, i);
	ft_check(&fs, dev, m, what);

	/* rename adds the new name before it removes the old one */
	for (i = 0, rc = 0; !rc && i < FT_LOOP_MAX; i++) {
		snprintf(name, sizeof(name), "%s-renamed-to-a-longer-name-%u", phase, i);
		rc = fs_rename(fs, r->rdir, r->rname, r->dir, name, 0);
		ft_expect_ok_or_nospc(rc, "rename", i);
		if (!rc) {
			r->rdir = r->dir;
			memcpy(r->rname, name, sizeof(r->rname));
		}
	}
	snprintf(what, sizeof(what), "%s rename (%u)", phase, i);
	ft_check(&fs, dev, m, what);
}

/*
 * Fill the volume with one large file, try every kind of operation until it
 * fails (in a directory with room, then in the same one full), delete the large
 * file, use up the inodes and try every kind again, then write again and
 * unmount: fsck clean after each failure and at the end.
 */
static void test_full_every_op_fsck_clean(void **state)
{
	const size_t chunk = 1 << 20;
	uint8_t *buf = malloc(chunk);

	(void)state;
	memset(buf, 0xab, chunk);
	/* under valgrind: declared mode only (the default) */
	for (unsigned int k = getenv("JGRFS_TEST_QUICK") ? 1 : 0; k < 2; k++) {
		enum jnl_data_mode m = k ? JNL_DATA_DECLARED : JNL_DATA_ORDERED;
		struct fs_mkfs_opts mo = { .label = "full", .inode_ratio = 65536 };
		struct ft_round r = { .rdir = FS_ROOT_INO, .rname = "f1" };
		struct blk_dev *dev;
		struct fs_attr a;
		struct fs *fs;
		uint64_t big, total = 0, i;
		ssize_t n;
		int rc = 0;

		assert_int_equal(raid_dev_mem_open("mem", 64 * 256, &dev), 0);
		assert_int_equal(fs_mkfs(dev, &mo), 0);
		fs = ft_mount_mode(dev, m);
		assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "roomy", 0755, 0, 0, &a), 0);
		r.dir = a.ino;
		r.f0 = ft_create(fs, FS_ROOT_INO, "f0");
		r.f1 = ft_create(fs, FS_ROOT_INO, "f1");
		big = ft_create(fs, FS_ROOT_INO, "big");
		while ((n = fs_write(fs, big, total, chunk, buf)) == (ssize_t)chunk)
			total += chunk;
		if (n > 0)
			total += (uint64_t)n;
		while ((n = fs_write(fs, big, total, 4096, buf)) > 0)
			total += (uint64_t)n;
		assert_int_equal(n, -ENOSPC);
		ft_check(&fs, dev, m, "fill");
		ft_every_op(fs, dev, m, &r, "blocks");
		ft_every_op(fs, dev, m, &r, "blocks-again");

		/* room for blocks again (a create commits to reuse them, G3); now run
		 * out of inodes */
		assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "big"), 0);
		ft_check(&fs, dev, m, "delete");
		assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "many", 0755, 0, 0, &a), 0);
		for (i = 0; !rc && i < 100000; i++) {
			char name[32];

			snprintf(name, sizeof(name), "ino-%llu", (unsigned long long)i);
			rc = fs_mknod(fs, a.ino, name, S_IFREG | 0644, 0, 0, 0, NULL);
		}
		assert_int_equal(rc, -ENOSPC);
		ft_check(&fs, dev, m, "inode exhaustion");
		r.dir = FS_ROOT_INO;
		ft_every_op(fs, dev, m, &r, "inodes");

		/* write again into the freed space, unmount cleanly, fsck, remount */
		assert_int_equal(fs_unlink(fs, a.ino, "ino-0"), 0);
		big = ft_create(fs, FS_ROOT_INO, "again");
		for (uint64_t off = 0; off + chunk <= total / 2; off += chunk)
			assert_int_equal(fs_write(fs, big, off, chunk, buf), (ssize_t)chunk);
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		fs = ft_mount_mode(dev, m);
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		blk_close(dev);
	}
	free(buf);
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
			fail_msg("mode %s, %s: byte %zd of the new file holds the deleted file's"
				 " data", jnl_data_mode_name(m), what, i);
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
	/* under valgrind: each case in one mode, every mode given two cases */
	bool quick = getenv("JGRFS_TEST_QUICK");
	uint8_t *buf = malloc(8 * 4096);
	struct fs_attr set = { 0 }, a;

	(void)state;
	memset(buf, FT_NEW_BYTE, 8 * 4096);
	for (unsigned int mi = 0; mi < 4; mi++) {
		for (unsigned int c = 0; c < 2 * (sizeof(cases) / sizeof(cases[0])); c++) {
			enum jnl_data_mode m = ft_modes[mi];
			bool falloc = c % 2;
			uint64_t off = cases[c / 2].lblk * 4096, end = off + 8 * 4096, ino;
			struct blk_dev *dev;
			struct fs *fs;
			char what[80];
			int rc;

			if (quick && mi != (c + c / 4) % 4)
				continue;
			dev = ft_dev_new(64);
			fs = ft_stale_setup(dev, m, &ino);
			snprintf(what, sizeof(what), "%s at block %llu failing after %u blocks",
				 falloc ? "fallocate" : "write",
				 (unsigned long long)cases[c / 2].lblk, cases[c / 2].pass);
			/* committed: an abort (T1) loses only the failing call */
			assert_int_equal(fs_sync(fs), 0);
			ft_inj_arm(FT_INJ_DATA, cases[c / 2].pass, false,
				   c / 2 % 2 ? -ENOMEM : -ENOSPC);
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
			/* -ENOMEM after blocks were logged aborts the journal (T1): the
			 * volume is the last commit's; -ENOSPC is undone (B1) */
			if (ft_torn(fs))
				ft_check(&fs, dev, m, what);
			/* grow over the range: unwritten blocks read as zeros or holes */
			set.size = end + 4096;
			assert_int_equal(fs_setattr(fs, ino, &set, FS_SET_SIZE, &a), 0);
			ft_no_stale(fs, ino, end + 4096, what, m);
			/* a partial write into each block merges with what the block holds */
			for (uint64_t o = off; o < end; o += 4096)
				assert_int_equal(fs_write(fs, ino, o + 1000, 1, buf), 1);
			ft_no_stale(fs, ino, end + 4096, what, m);
			ft_check(&fs, dev, m, what);
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

/* ------------------------------------------ every journal call failing */

enum ft_sweep_op {
	FT_OP_CREATE, FT_OP_MKDIR, FT_OP_SYMLINK, FT_OP_LINK, FT_OP_RENAME, FT_OP_XATTR,
	FT_OP_WRITE, FT_OP_FALLOCATE, FT_OP_COUNT
};

static const char *const ft_op_names[] = { "create", "mkdir", "long symlink", "link", "rename",
					   "setxattr", "write", "fallocate" };

/* One try of @op; @k makes its names unique; @f0 a file to link, @fresh a new one. */
static int ft_sweep_run(struct fs *fs, enum ft_sweep_op op, unsigned int k, uint64_t f0,
			uint64_t dir, uint64_t fresh, char *rname)
{
	static const char target[] = "a-long-symlink-target/that/does-not-fit/in/the/inode/"
				     "so/it/needs/a/data/block/of/its/own/which/the/test/"
				     "fails/to/log";
	uint8_t blk[2 * 4096];
	struct fs_attr a;
	char name[64];
	int rc;

	memset(blk, 0x3c, sizeof(blk));
	snprintf(name, sizeof(name), "sweep-%s-%u", ft_op_names[op], k);
	switch (op) {
	case FT_OP_CREATE:
		return fs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &a);
	case FT_OP_MKDIR:
		return fs_mkdir(fs, dir, name, 0755, 0, 0, &a);
	case FT_OP_SYMLINK:
		return fs_symlink(fs, dir, name, target, 0, 0, &a);
	case FT_OP_LINK:
		return fs_link(fs, f0, dir, name, &a);
	case FT_OP_RENAME:
		rc = fs_rename(fs, dir, rname, dir, name, 0);
		if (!rc)
			strcpy(rname, name);
		return rc;
	case FT_OP_XATTR:
		return fs_setxattr(fs, fresh, "user.sweep", "value", 5, 0);
	case FT_OP_WRITE:
		rc = (int)fs_write(fs, fresh, 20 * 4096 + 100, sizeof(blk), blk);
		return rc < 0 ? rc : 0;
	case FT_OP_FALLOCATE:
		return fs_fallocate(fs, fresh, 0, 20 * 4096, 3 * 4096);
	default:
		return -EINVAL;
	}
}

/*
 * Each kind of operation with its n-th logging of a bitmap or group descriptor
 * failing (-ENOMEM), n = 0, 1, ... until it completes: an allocation or free is
 * logged whole or not at all (G1), the operation undoes what it did before (N1,
 * B1), and fsck finds nothing.
 */
static void test_full_meta_call_fails(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi += 3) {
		enum jnl_data_mode m = ft_modes[mi];
		struct blk_dev *dev = ft_dev_new(64);
		struct fs *fs = ft_mount_mode(dev, m);
		uint64_t f0 = ft_create(fs, FS_ROOT_INO, "f0"), dir;
		char rname[64] = "f1";
		struct fs_attr a;

		assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
		dir = a.ino;
		(void)ft_create(fs, dir, "f1");
		assert_int_equal(fs_sync(fs), 0); /* an abort (T1) keeps these */
		for (unsigned int op = 0; op < FT_OP_COUNT; op++) {
			for (unsigned int n = 0;; n++) {
				char fname[32], what[96];
				uint64_t fresh;
				int rc;

				snprintf(fname, sizeof(fname), "fresh-%u-%u", op, n);
				fresh = ft_create(fs, FS_ROOT_INO, fname);
				assert_int_equal(fs_sync(fs), 0);
				ft_inj_arm(FT_INJ_META, n, true, -ENOMEM);
				ft_inj.fs = fs;
				rc = ft_sweep_run(fs, op, n, f0, dir, fresh, rname);
				ft_inj_disarm();
				snprintf(what, sizeof(what), "%s, metadata call %u failing (rc %d)",
					 ft_op_names[op], n, rc);
				ft_check(&fs, dev, m, what);
				if (!ft_inj.failed) {
					if (rc)
						fail_msg("%s", what);
					break;
				}
			}
		}
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		blk_close(dev);
	}
}

/*
 * setxattr on a file without attributes, with its n-th metadata call of any
 * block failing: the new attribute block is freed unless the inode that names
 * it was logged.
 */
static void test_full_xattr_call_fails(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount_mode(dev, JNL_DATA_ORDERED);

	(void)state;
	for (unsigned int n = 0;; n++) {
		char fname[32], what[64];
		uint64_t ino;
		int rc;

		snprintf(fname, sizeof(fname), "x-%u", n);
		ino = ft_create(fs, FS_ROOT_INO, fname);
		ft_inj_arm(FT_INJ_META, n, true, -ENOMEM);
		rc = fs_setxattr(fs, ino, "user.a", "value", 5, 0);
		ft_inj_disarm();
		snprintf(what, sizeof(what), "setxattr, metadata call %u failing (rc %d)", n, rc);
		ft_check(&fs, dev, JNL_DATA_ORDERED, what);
		if (!ft_inj.failed) {
			assert_int_equal(rc, 0);
			break;
		}
	}
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

static uint32_t ft_dir_depth(struct fs *fs, uint64_t dir)
{
	struct fs_inode ip;

	jg_mutex_lock(&fs->lock);
	assert_int_equal(fs_iget(fs, dir, &ip), 0);
	jg_mutex_unlock(&fs->lock);
	return ip.dir_depth;
}

/*
 * The name of link @i. Under valgrind long ones: a bucket holds about a tenth
 * as many, so that about a tenth as many links fill the table's first block.
 */
static void ft_grow_name(char *name, size_t size, unsigned int i, bool quick)
{
	if (quick)
		snprintf(name, size, "n%u-%0200u", i, 0u);
	else
		snprintf(name, size, "n%u", i);
}

/*
 * A directory whose table grows from one block to two (depth 9 to 10), with the
 * allocation of each new block failing once: every name added before still
 * looks up, and fsck finds nothing.
 */
static void test_full_dir_grow_fails(void **state)
{
	bool quick = getenv("JGRFS_TEST_QUICK");
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount_mode(dev, JNL_DATA_ORDERED);
	uint64_t dir, target = 0;
	unsigned int n, grow_failed = 0, since = 0; /* names from @since on: maybe not committed */
	struct fs_attr a;
	char name[FS_NAME_MAX + 1];
	int rc;

	(void)state;
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
	dir = a.ino;
	for (n = 0; ft_dir_depth(fs, dir) < 10; n++) {
		bool deep = ft_dir_depth(fs, dir) == 9;

		if (n % 60000 == 0) {
			snprintf(name, sizeof(name), "target-%u", n);
			target = ft_create(fs, FS_ROOT_INO, name);
			assert_int_equal(fs_sync(fs), 0); /* kept by an abort (T1) */
			since = n;
		}
		ft_grow_name(name, sizeof(name), n, quick);
		ft_inj_arm(FT_INJ_META, 0, true, -ENOMEM);
		ft_inj.fs = fs;
		rc = fs_link(fs, target, dir, name, &a);
		ft_inj_disarm();
		if (rc) {
			/* a bitmap refused: the journal aborted (T1); the volume is
			 * the last commit's, without the names linked since */
			assert_true(ft_torn(fs));
			ft_check(&fs, dev, JNL_DATA_ORDERED, "failed table growth");
			for (unsigned int i = since; i <= n; i++) {
				ft_grow_name(name, sizeof(name), i, quick);
				if (fs_lookup(fs, dir, name, &a) == -ENOENT)
					assert_int_equal(fs_link(fs, target, dir, name, &a), 0);
			}
			assert_int_equal(fs_sync(fs), 0);
			since = n + 1;
			grow_failed += deep && ft_dir_depth(fs, dir) == 10;
		}
	}
	assert_int_equal(grow_failed, 1);
	for (unsigned int i = 0; i < n; i++) {
		ft_grow_name(name, sizeof(name), i, quick);
		if (fs_lookup(fs, dir, name, &a))
			fail_msg("%s lost after a failed table growth (%u names)", name, n);
	}
	ft_check(&fs, dev, JNL_DATA_ORDERED, "failed table growth");
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/* ------------------------------------------ a data block and its checksum */

#define FT_PAIR_BLOCKS 4u
#define FT_PAIR_OLD 0x5e
#define FT_PAIR_NEW 0x17

/*
 * Everything of @ino reads back (no EIO): the first @acked bytes hold the new
 * bytes, the rest of its @size bytes the old or the new ones, block by block.
 */
static void ft_pair_expect(struct fs *fs, uint64_t ino, uint64_t size, uint64_t acked,
			   const char *what)
{
	uint8_t got[FT_PAIR_BLOCKS * 4096], oldb[4096], newb[4096];
	struct fs_attr a;
	ssize_t n;

	memset(oldb, FT_PAIR_OLD, sizeof(oldb));
	memset(newb, FT_PAIR_NEW, sizeof(newb));
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	if (a.size != size)
		fail_msg("%s: size %llu, expected %llu", what, (unsigned long long)a.size,
			 (unsigned long long)size);
	n = fs_read(fs, ino, 0, sizeof(got), got);
	if (n != (ssize_t)size)
		fail_msg("%s: read %zd, expected %llu", what, n, (unsigned long long)size);
	for (uint64_t off = 0; off < size; off += 4096) {
		bool is_new = !memcmp(got + off, newb, 4096);

		if (off < acked ? !is_new : !is_new && memcmp(got + off, oldb, 4096))
			fail_msg("%s: block %llu holds neither the %s bytes", what,
				 (unsigned long long)(off / 4096),
				 off < acked ? "new" : "old nor new");
	}
}

/*
 * A 16 KiB write with data checksums, its journal calls failing: the data call
 * of its n-th block, or the n-th logging of a checksum block, with -ENOMEM once,
 * or -ENOSPC once (the write commits and tries again) or from then on; into a
 * new file and over a file's old bytes. The write fails or
 * says how much it wrote; after fsync, and again after a remount, every byte
 * acknowledged reads back, no block fails its checksum, and fsck finds nothing
 * (D1: a slot and its data block commit together).
 */
static void test_full_dcsum_pair_fails(void **state)
{
	/* once: the call fails once; else every call from the n-th on, so that the
	 * write's try again after a commit (-ENOSPC) fails too */
	static const struct {
		enum ft_inj_call call;
		int rc;
		bool once;
	} kinds[] = { { FT_INJ_DATA, -ENOMEM, true },  { FT_INJ_DATA, -ENOSPC, true },
		      { FT_INJ_DATA, -ENOSPC, false }, { FT_INJ_META, -ENOMEM, true },
		      { FT_INJ_META, -ENOSPC, true },  { FT_INJ_META, -ENOSPC, false } };
	struct fs_mkfs_opts mo = { .label = "pair", .data_csum = true };
	uint8_t buf[FT_PAIR_BLOCKS * 4096];

	(void)state;
	/* the modes a volume with data checksums mounts in */
	for (unsigned int mi = 2; mi < 4; mi++)
		for (unsigned int c = 0; c < 2 * sizeof(kinds) / sizeof(kinds[0]); c++) {
			enum jnl_data_mode m = ft_modes[mi];
			bool over = c % 2;

			for (unsigned int n = 0;; n++) {
				uint64_t size = over ? sizeof(buf) : 0, acked;
				struct blk_dev *dev;
				struct fs *fs;
				uint64_t ino;
				char what[128];
				ssize_t rc;

				assert_int_equal(raid_dev_mem_open("mem", 64 * 256, &dev), 0);
				assert_int_equal(fs_mkfs(dev, &mo), 0);
				fs = ft_mount_mode(dev, m);
				assert_true(fs->dcsum_blocks > 0);
				ino = ft_create(fs, FS_ROOT_INO, "f");
				memset(buf, FT_PAIR_OLD, sizeof(buf));
				if (over)
					assert_int_equal(fs_write(fs, ino, 0, sizeof(buf), buf),
							 (ssize_t)sizeof(buf));
				/* nothing of the checksum blocks in the running transaction */
				assert_int_equal(fs_sync(fs), 0);

				memset(buf, FT_PAIR_NEW, sizeof(buf));
				ft_inj_arm(kinds[c / 2].call, n, kinds[c / 2].once,
					   kinds[c / 2].rc);
				ft_inj.dcsum = kinds[c / 2].call == FT_INJ_META;
				ft_inj.fs = ft_inj.dcsum ? fs : NULL;
				rc = fs_write(fs, ino, 0, sizeof(buf), buf);
				ft_inj_disarm();
				snprintf(what, sizeof(what),
					 "mode %s, %s %s call %u%s failing with %d: write %zd",
					 jnl_data_mode_name(m), over ? "overwrite," : "new file,",
					 kinds[c / 2].call == FT_INJ_DATA ? "data"
									  : "checksum block",
					 n, kinds[c / 2].once ? "" : " and on", kinds[c / 2].rc,
					 rc);
				/* or the abort's -EROFS, met by a later step (T1) */
				if (rc < 0 && rc != kinds[c / 2].rc && !(rc == -EROFS && ft_torn(fs)))
					fail_msg("%s: not the injected error", what);
				acked = rc > 0 ? (uint64_t)rc : 0;
				if (ft_torn(fs)) {
					/* (T1) aborted: what the write did never commits;
					 * the volume is as the last commit left it */
					(void)fs_fsync(fs, ino, false);
					(void)fs_unmount(fs);
					ft_fsck_clean(dev);
					fs = ft_mount_mode(dev, m);
					acked = 0;
				} else if (acked > size) {
					size = acked;
				}
				assert_int_equal(fs_fsync(fs, ino, false), 0);
				ft_pair_expect(fs, ino, size, acked, what);
				assert_int_equal(fs_unmount(fs), 0);
				ft_fsck_clean(dev);
				fs = ft_mount_mode(dev, m);
				ft_pair_expect(fs, ino, size, acked, what);
				assert_int_equal(fs->dcsum_errors, 0);
				assert_int_equal(fs_unmount(fs), 0);
				blk_close(dev);
				if (!ft_inj.failed) {
					assert_int_equal(rc, (ssize_t)sizeof(buf));
					break;
				}
			}
		}
}

/* ------------------------------------------------ right after a delete */

/* Write @ino from its end until the volume is full (write commits to reuse
 * freed blocks, G3). */
static void ft_fill(struct fs *fs, uint64_t ino)
{
	const size_t chunk = 1 << 20;
	uint8_t *buf = malloc(chunk);
	struct fs_attr a;
	ssize_t n;

	memset(buf, 0x6b, chunk);
	assert_int_equal(fs_getattr(fs, ino, &a), 0);
	while ((n = fs_write(fs, ino, a.size, chunk, buf)) > 0)
		a.size += (uint64_t)n;
	assert_int_equal(n, -ENOSPC);
	free(buf);
}

/* Link @f0 into @dir as new names until one needs a block: that name in @name. */
static void ft_fill_dir(struct fs *fs, uint64_t f0, uint64_t dir, unsigned int *k, char *name,
			size_t size)
{
	struct fs_attr a;
	int rc = 0;

	for (unsigned int i = 0; !rc && i < FT_LOOP_MAX; i++, (*k)++) {
		snprintf(name, size, "name-%u", *k);
		rc = fs_link(fs, f0, dir, name, &a);
	}
	assert_int_equal(rc, -ENOSPC);
}

/*
 * (G3) A commit of everything while the running transaction is empty leaves it
 * running, uncommitted: it must not count as durable. A delete's blocks freed
 * in it are then not handed out (on a full volume) before it commits.
 */
static void test_full_durable_not_running(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount_mode(dev, JNL_DATA_ORDERED);
	uint64_t victim = ft_create(fs, FS_ROOT_INO, "victim"), fill, ino;
	struct jnl_info before, after;
	uint8_t blk[4096];

	(void)state;
	memset(blk, 0x42, sizeof(blk));
	assert_int_equal(fs_write(fs, victim, 0, sizeof(blk), blk), (ssize_t)sizeof(blk));
	fill = ft_create(fs, FS_ROOT_INO, "fill");
	ino = ft_create(fs, FS_ROOT_INO, "new");
	ft_fill(fs, fill);
	assert_int_equal(fs_sync(fs), 0);
	jg_mutex_lock(&fs->lock);
	assert_int_equal(fs_commit_all_locked(fs), 0);
	jnl_info_get(fs->jnl, &before);
	if (!jg_seq_after(before.running_tid, fs->durable_tid))
		fail_msg("transaction %llu still running, counted durable (%llu)",
			 (unsigned long long)before.running_tid,
			 (unsigned long long)fs->durable_tid);
	jg_mutex_unlock(&fs->lock);
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "victim"), 0);
	assert_int_equal(fs_write(fs, ino, 0, sizeof(blk), blk), (ssize_t)sizeof(blk));
	jnl_info_get(fs->jnl, &after);
	if (after.running_tid == before.running_tid)
		fail_msg("the delete's block handed out in transaction %llu, which freed it",
			 (unsigned long long)before.running_tid);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/*
 * (G3) On a full volume, a delete's blocks are free once its transaction is
 * durable: each operation that needs blocks right after a delete commits and
 * tries again, as write and create do. A link and a rename whose new name needs
 * a directory block, a setxattr that needs the attribute block, and a
 * fallocate of the deleted file's size (issue 43: ENOSPC with a file's worth
 * free) succeed; fsck finds nothing.
 */
static void test_full_after_delete(void **state)
{
	static const char *const ops[] = { "link", "rename", "setxattr", "fallocate" };
	const uint64_t vsize = 512u << 10;
	uint8_t *buf = malloc(vsize);

	(void)state;
	memset(buf, 0x29, vsize);
	for (unsigned int mi = 1; mi < 4; mi += 2) {
		enum jnl_data_mode m = ft_modes[mi];
		struct blk_dev *dev = ft_dev_new(64);
		struct fs *fs = ft_mount_mode(dev, m);
		uint64_t f0, x, g, fill, dir;
		char failed[256] = "", name[64], what[96];
		unsigned int k = 0;
		struct fs_attr a;

		f0 = ft_create(fs, FS_ROOT_INO, "f0");
		x = ft_create(fs, FS_ROOT_INO, "x");
		g = ft_create(fs, FS_ROOT_INO, "g");
		fill = ft_create(fs, FS_ROOT_INO, "fill");
		(void)ft_create(fs, FS_ROOT_INO, "r");
		assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
		dir = a.ino;
		for (unsigned int i = 0; i < 4; i++) {
			snprintf(name, sizeof(name), "victim-%u", i);
			assert_int_equal(fs_write(fs, ft_create(fs, FS_ROOT_INO, name), 0, vsize,
						  buf), (ssize_t)vsize);
		}
		for (unsigned int op = 0; op < 4; op++) {
			char newname[64];
			int rc;

			ft_fill(fs, fill);
			if (op < 2)
				ft_fill_dir(fs, f0, dir, &k, newname, sizeof(newname));
			snprintf(name, sizeof(name), "victim-%u", op);
			assert_int_equal(fs_unlink(fs, FS_ROOT_INO, name), 0);
			if (op == 0)
				rc = fs_link(fs, f0, dir, newname, &a);
			else if (op == 1)
				rc = fs_rename(fs, FS_ROOT_INO, "r", dir, newname, 0);
			else if (op == 2)
				rc = fs_setxattr(fs, x, "user.a", "value", 5, 0);
			else
				rc = fs_fallocate(fs, g, 0, 0, vsize);
			if (rc)
				snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed),
					 " %s %d;", ops[op], rc);
			snprintf(what, sizeof(what), "%s after a delete (%d)", ops[op], rc);
			ft_check(&fs, dev, m, what);
		}
		if (failed[0])
			fail_msg("mode %s, right after a delete on a full volume:%s",
				 jnl_data_mode_name(m), failed);
		assert_int_equal(fs_getattr(fs, g, &a), 0);
		assert_int_equal(a.size, vsize);
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		blk_close(dev);
	}
	free(buf);
}

static int ft_count_fn(void *ctx, uint64_t lblk, uint64_t pblk, unsigned int level)
{
	uint64_t *c = ctx;

	(void)lblk;
	(void)pblk;
	c[level ? 1 : 0]++;
	return 0;
}

/* @ino's data blocks in c[0], its indirect blocks in c[1]. */
static void ft_count_blocks(struct fs *fs, uint64_t ino, uint64_t c[2])
{
	struct fs_inode ip;

	c[0] = c[1] = 0;
	jg_mutex_lock(&fs->lock);
	assert_int_equal(fs_iget(fs, ino, &ip), 0);
	assert_int_equal(fs_bmap_walk(fs, &ip, ft_count_fn, c), 0);
	jg_mutex_unlock(&fs->lock);
}

/*
 * A fallocate that fails for want of blocks (after its try following a commit)
 * gives back the data blocks it allocated: a new file keeps none (issue 43: 37
 * MB left to a 0-byte file), a file with blocks keeps exactly those, with their
 * bytes; only the (empty) indirect blocks it mapped stay; fsck finds nothing.
 */
static void test_full_fallocate_gives_back(void **state)
{
	const uint64_t vsize = 512u << 10;
	uint8_t *buf = malloc(vsize), got[2 * 4096];

	(void)state;
	memset(buf, 0x3d, vsize);
	for (unsigned int mi = 1; mi < 4; mi += 2) {
		enum jnl_data_mode m = ft_modes[mi];
		struct blk_dev *dev = ft_dev_new(64);
		struct fs *fs = ft_mount_mode(dev, m);
		uint64_t g = ft_create(fs, FS_ROOT_INO, "g"), h = ft_create(fs, FS_ROOT_INO, "h");
		uint64_t fill = ft_create(fs, FS_ROOT_INO, "fill"), free_before;
		uint64_t cg[2], ch[2], ch0[2];
		struct fs_attr a;

		assert_int_equal(fs_write(fs, h, 0, sizeof(got), buf), (ssize_t)sizeof(got));
		ft_count_blocks(fs, h, ch0);
		assert_int_equal(fs_write(fs, ft_create(fs, FS_ROOT_INO, "victim"), 0, vsize, buf),
				 (ssize_t)vsize);
		ft_fill(fs, fill);
		assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "victim"), 0);
		assert_int_equal(fs_sync(fs), 0);
		free_before = fs->free_blocks;
		assert_true(free_before >= vsize / 4096);

		assert_int_equal(fs_fallocate(fs, g, 0, 0, 2 * vsize), -ENOSPC);
		assert_int_equal(fs_getattr(fs, g, &a), 0);
		ft_count_blocks(fs, g, cg);
		if (a.size || cg[0])
			fail_msg("mode %s: a failed fallocate left size %llu, %llu data blocks",
				 jnl_data_mode_name(m), (unsigned long long)a.size,
				 (unsigned long long)cg[0]);
		assert_int_equal(fs->free_blocks, free_before - cg[1]);
		ft_check(&fs, dev, m, "failed fallocate, new file");

		assert_int_equal(fs_fallocate(fs, h, FALLOC_FL_KEEP_SIZE, 0, 2 * vsize), -ENOSPC);
		assert_int_equal(fs_getattr(fs, h, &a), 0);
		assert_int_equal(a.size, sizeof(got));
		ft_count_blocks(fs, h, ch);
		assert_int_equal(ch[0], ch0[0]);
		assert_int_equal(fs_read(fs, h, 0, sizeof(got), got), (ssize_t)sizeof(got));
		assert_memory_equal(got, buf, sizeof(got));
		assert_int_equal(fs->free_blocks, free_before - cg[1] - (ch[1] - ch0[1]));
		ft_check(&fs, dev, m, "failed fallocate, file with blocks");

		/* what was given back serves the next call */
		assert_int_equal(fs_fallocate(fs, g, 0, 0, vsize / 2), 0);
		assert_int_equal(fs_unmount(fs), 0);
		ft_fsck_clean(dev);
		blk_close(dev);
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_write_fails_after_map),
		cmocka_unit_test(test_full_every_op_fsck_clean),
		cmocka_unit_test(test_full_meta_call_fails),
		cmocka_unit_test(test_full_xattr_call_fails),
		cmocka_unit_test(test_full_dir_grow_fails),
		cmocka_unit_test(test_full_dcsum_pair_fails),
		cmocka_unit_test(test_full_durable_not_running),
		cmocka_unit_test(test_full_after_delete),
		cmocka_unit_test(test_full_fallocate_gives_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
