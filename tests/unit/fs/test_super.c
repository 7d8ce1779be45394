// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_super.c - mount, recovery and crashes: a workload runs over
 * a power-cut device (tests' dev_fault: writes not yet flushed at the cut are
 * kept, dropped or torn at random), cut at write positions spread over the whole
 * workload; after each cut the filesystem must mount, fsck must find nothing,
 * and every file whose fsync returned before the cut must hold its data.
 */
#include <errno.h>

#include "fs_test.h"
#include "fs_format.h"
#include "jnl_format.h"

#define FT_FILES 24

struct ft_crash_state {
	bool durable[FT_FILES];	/* fsync returned before the cut */
	uint64_t size[FT_FILES];
};

static uint64_t ft_file_size(int i)
{
	return 1000 + (uint64_t)i * 3001;
}

/* Create, write and fsync files; junk files and unlinks in between, not synced. */
static void ft_crash_workload(struct fs *fs, struct raid_fault_domain *dom,
			      struct ft_crash_state *st)
{
	static uint8_t buf[1000 + FT_FILES * 3001];
	struct fs_attr a, d;
	char name[32];

	if (fs_mkdir(fs, FS_ROOT_INO, "dir", 0755, 0, 0, &d))
		return;
	for (int i = 0; i < FT_FILES; i++) {
		uint64_t n = ft_file_size(i);

		/* the unlinked file's blocks are free for the writes that follow */
		if (i % 3 == 2) {
			snprintf(name, sizeof(name), "junk%d", i - 1);
			if (fs_unlink(fs, FS_ROOT_INO, name))
				return;
		}
		snprintf(name, sizeof(name), "f%d", i);
		if (fs_mknod(fs, d.ino, name, S_IFREG | 0644, 0, 0, 0, &a))
			return;
		ft_pattern(buf, n, (uint64_t)i);
		if (fs_write(fs, a.ino, 0, n, buf) != (ssize_t)n)
			return;
		snprintf(name, sizeof(name), "junk%d", i);
		ft_pattern(buf, 5000, 1000 + (uint64_t)i);
		if (fs_mknod(fs, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &a) ||
		    fs_write(fs, a.ino, 0, 5000, buf) != 5000)
			return;
		if (fs_fsync(fs, a.ino, false))
			return;
		/* only an fsync completed before the cut promises anything */
		if (!raid_fault_domain_is_cut(dom)) {
			for (int k = 0; k <= i; k++)
				st->durable[k] = true;
		}
	}
}

static uint64_t ft_crash_run(uint64_t cut_after, enum jnl_data_mode mode, bool check)
{
	struct raid_fault_cfg fc = { .cut_after_writes = cut_after, .seed = cut_after * 7 + 1,
				     .keep_percent = 50, .tear = true };
	struct fs_mount_opts o = { .data_mode = mode, .no_commit_thread = true };
	struct ft_crash_state st;
	struct blk_dev *mem = ft_dev_new(64), *fdev;
	struct raid_fault_domain *dom;
	static uint8_t want[1000 + FT_FILES * 3001], got[1000 + FT_FILES * 3001];
	struct fs_attr d, a;
	uint64_t writes;
	struct fs *fs;
	char name[32];

	memset(&st, 0, sizeof(st));
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	assert_int_equal(raid_dev_fault_open(dom, mem, &fdev), 0);
	assert_int_equal(fs_mount(fdev, &o, &fs), 0);
	ft_crash_workload(fs, dom, &st);
	writes = raid_fault_domain_writes(dom);
	if (!cut_after) {
		assert_int_equal(fs_unmount(fs), 0);
	} else {
		raid_fault_domain_cut(dom);
		fs_abandon(fs);
	}
	blk_close(fdev);
	raid_fault_domain_free(dom);
	if (!check) {
		blk_close(mem);
		return writes;
	}
	/* recovery by fsck (in memory), then by a mount */
	ft_fsck_clean(mem);
	fs = ft_mount_mode(mem, mode);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(mem);
	fs = ft_mount_mode(mem, mode);
	for (int i = 0; i < FT_FILES; i++) {
		uint64_t n = ft_file_size(i);

		if (!st.durable[i])
			continue;
		if (fs_lookup(fs, FS_ROOT_INO, "dir", &d))
			fail_msg("cut at write %llu mode %s: dir lost", (unsigned long long)cut_after,
				 jnl_data_mode_name(mode));
		snprintf(name, sizeof(name), "f%d", i);
		if (fs_lookup(fs, d.ino, name, &a) || a.size != n)
			fail_msg("cut at write %llu mode %s: fsync'd %s lost",
				 (unsigned long long)cut_after, jnl_data_mode_name(mode), name);
		ft_pattern(want, n, (uint64_t)i);
		assert_int_equal(fs_read(fs, a.ino, 0, n, got), (ssize_t)n);
		if (memcmp(got, want, n))
			fail_msg("cut at write %llu mode %s: fsync'd %s has wrong data",
				 (unsigned long long)cut_after, jnl_data_mode_name(mode), name);
	}
	/* every junk file still there holds its own bytes: none got blocks of
	 * another file while its old owner could still come back */
	for (int i = 0; i < FT_FILES; i++) {
		snprintf(name, sizeof(name), "junk%d", i);
		if (fs_lookup(fs, FS_ROOT_INO, name, &a))
			continue;
		ft_pattern(want, 5000, 1000 + (uint64_t)i);
		if (a.size == 5000 && fs_read(fs, a.ino, 0, 5000, got) == 5000 &&
		    !memcmp(got, want, 5000))
			continue;
		if (a.size == 0 && !st.durable[i])
			continue;	/* created, its write not durable */
		fail_msg("cut at write %llu mode %s: %s (size %llu) holds wrong data",
			 (unsigned long long)cut_after, jnl_data_mode_name(mode), name,
			 (unsigned long long)a.size);
	}
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(mem);
	return writes;
}

static void test_super_power_cut_positions(void **state)
{
	static const enum jnl_data_mode modes[] = { JNL_DATA_ORDERED, JNL_DATA_DECLARED,
						    JNL_DATA_JOURNAL, JNL_DATA_WRITEBACK };

	(void)state;
	for (unsigned int m = 0; m < 4; m++) {
		uint64_t total = ft_crash_run(0, modes[m], true);

		assert_true(total > 20);
		/* 30 cut positions spread over the workload's writes */
		for (uint64_t k = 1; k <= 30; k++)
			ft_crash_run(1 + (total * k) / 31, modes[m], true);
	}
}

struct ft_mkfs_prog {
	uint64_t calls, last, total;
	bool backwards;
};

static int ft_mkfs_prog(void *ctx, uint64_t done, uint64_t total)
{
	struct ft_mkfs_prog *p = ctx;

	p->backwards |= done < p->last || (p->total && total != p->total);
	p->calls++;
	p->last = done;
	p->total = total;
	return 0;
}

/*
 * mkfs writes the log whole, with zeros (so member files have it allocated
 * before the first commit), and reports progress over that (the checksum
 * region is left unwritten): monotonic, ending at its total, the log's size.
 */
static void test_super_mkfs_zeroes_log(void **state)
{
	struct ft_mkfs_prog p = { 0 };
	struct fs_mkfs_opts mo = { .data_csum = true, .progress = ft_mkfs_prog, .progress_ctx = &p };
	uint8_t *b = jg_alloc_blocks(1);
	const struct fs_super *sb = (const struct fs_super *)b;
	uint64_t dev_blocks = 64 * 256, jstart, jblocks;
	struct blk_dev *dev;

	(void)state;
	assert_int_equal(raid_dev_mem_open("mem", dev_blocks, &dev), 0);
	memset(b, 0xa5, JG_BLOCK_SIZE);
	for (uint64_t i = 0; i < dev_blocks; i++)
		assert_int_equal(blk_rw(dev, BLK_OP_WRITE, i, 1, b, 0), 0);
	assert_int_equal(fs_mkfs(dev, &mo), 0);
	assert_int_equal(blk_rw(dev, BLK_OP_READ, FS_SB_BLKNO, 1, b, 0), 0);
	jstart = jg_le64(sb->journal_start);
	jblocks = jg_le64(sb->journal_blocks);
	assert_false(p.backwards);
	assert_true(p.calls > 1);
	/* the checksum region is not written (dcsum.c (D3)): the log alone */
	assert_int_equal(p.total, jblocks - 1);
	assert_int_equal(p.last, p.total);
	/* the root directory's transaction used the log's first blocks: the
	 * second half was written by nothing but the zeroing */
	for (uint64_t i = jstart + jblocks / 2; i < jstart + jblocks; i++) {
		assert_int_equal(blk_rw(dev, BLK_OP_READ, i, 1, b, 0), 0);
		for (size_t k = 0; k < JG_BLOCK_SIZE; k++)
			if (b[k])
				fail_msg("log block %llu byte %zu is 0x%02x, not zero",
					 (unsigned long long)i, k, b[k]);
	}
	ft_fsck_clean(dev);
	free(b);
	blk_close(dev);
}

/* A blank superblock block is no filesystem (-ENOMEDIUM); a damaged one is -EUCLEAN. */
static void test_super_mount_blank(void **state)
{
	struct fs_mount_opts o = { .data_mode = JNL_DATA_DECLARED, .no_commit_thread = true };
	uint8_t *b = jg_zalloc_blocks(1);
	struct blk_dev *dev;
	struct fs *fs = NULL;

	(void)state;
	assert_int_equal(raid_dev_mem_open("mem", 64 * 256, &dev), 0);
	assert_int_equal(fs_mount(dev, &o, &fs), -ENOMEDIUM);
	assert_null(fs);
	blk_close(dev);
	dev = ft_dev_new(64);
	b[100] = 1;	/* one byte set: damaged, not blank */
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, FS_SB_BLKNO, 1, b, 0), 0);
	assert_int_equal(fs_mount(dev, &o, &fs), -EUCLEAN);
	free(b);
	blk_close(dev);
}

static void test_super_mount_info(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs_mount_opts o = { .data_mode = JNL_DATA_DECLARED, .no_commit_thread = true };
	struct fs_info info;
	struct fs_statfs s;
	struct fs *fs;

	(void)state;
	assert_int_equal(fs_mount(dev, &o, &fs), 0);
	fs_info_get(fs, &info);
	assert_int_equal(info.data_mode, JNL_DATA_DECLARED);
	assert_false(info.readonly);
	assert_string_equal(info.label, "test");
	assert_true(info.recovery.was_clean);
	assert_int_equal(fs_statfs(fs, &s), 0);
	assert_int_equal(s.block_size, 4096);
	assert_int_equal(s.blocks, 16384);
	assert_true(s.blocks_free > 10000 && s.blocks_free < s.blocks);
	assert_true(s.inodes_free == s.inodes - 1);
	assert_int_equal(s.name_max, 255);
	assert_int_equal(fs_unmount(fs), 0);
	/* mkfs refuses an existing filesystem unless forced */
	{
		struct fs_mkfs_opts mo = { 0 };

		assert_int_equal(fs_mkfs(dev, &mo), -EEXIST);
		mo.force = true;
		assert_int_equal(fs_mkfs(dev, &mo), 0);
	}
	blk_close(dev);
}

/* ------------------------------------------------------- lazy bitmaps (G4) */

/* The raw descriptor of group @g, and its group's first block, read from @dev. */
static struct fs_group_desc ft_gd_raw(struct blk_dev *dev, uint32_t g, uint64_t *start)
{
	uint8_t *b = jg_alloc_blocks(1);
	const struct fs_super *sb = (const struct fs_super *)b;
	struct fs_group_desc gd;

	assert_int_equal(blk_rw(dev, BLK_OP_READ, FS_SB_BLKNO, 1, b, 0), 0);
	*start = jg_le64(sb->first_group_block) + (uint64_t)g * jg_le32(sb->blocks_per_group);
	assert_int_equal(blk_rw(dev, BLK_OP_READ, jg_le64(sb->gdt_start) + g / FS_GD_PER_BLOCK, 1,
				b, 0), 0);
	gd = ((const struct fs_group_desc *)(b + FS_GD_OFFSET))[g % FS_GD_PER_BLOCK];
	free(b);
	return gd;
}

static bool ft_block_zero(struct blk_dev *dev, uint64_t blkno)
{
	uint8_t *b = jg_alloc_blocks(1);
	bool zero = true;

	assert_int_equal(blk_rw(dev, BLK_OP_READ, blkno, 1, b, 0), 0);
	for (size_t i = 0; i < JG_BLOCK_SIZE && zero; i++)
		zero = !b[i];
	free(b);
	return zero;
}

/*
 * (G4) mkfs writes no bitmap: the groups' descriptors say both are unwritten,
 * fsck finds the filesystem clean, and a file that fills the groups makes each
 * bitmap it changes real, its flag cleared, so that a remount and fsck agree.
 */
static void test_super_lazy_bitmaps(void **state)
{
	struct blk_dev *dev = ft_dev_new(384);
	struct fsck_opts fo = { .repair = false };
	struct fsck_report rep = { 0 };
	static uint8_t buf[1 << 20];
	struct fs_statfs st;
	struct fs_group_desc gd;
	struct fs_attr a;
	uint64_t start, used;
	struct fs *fs;

	(void)state;
	gd = ft_gd_raw(dev, 2, &start);
	assert_int_equal(jg_le32(gd.flags), FS_GD_BBITMAP_UNINIT | FS_GD_IBITMAP_UNINIT);
	assert_true(ft_block_zero(dev, start) && ft_block_zero(dev, start + 1));
	assert_int_equal(fs_fsck(dev, &fo, &rep), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_statfs(fs, &st), 0);
	used = st.blocks - st.blocks_free;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "big", S_IFREG | 0644, 0, 0, 0, &a), 0);
	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t off = 0; off < 200ull << 20; off += sizeof(buf))
		assert_int_equal(fs_write(fs, a.ino, off, sizeof(buf), buf), (ssize_t)sizeof(buf));
	assert_int_equal(fs_statfs(fs, &st), 0);
	assert_true(st.blocks - st.blocks_free >= used + (200u << 20) / JG_BLOCK_SIZE);
	assert_int_equal(fs_unmount(fs), 0);
	gd = ft_gd_raw(dev, 1, &start);
	assert_int_equal(jg_le32(gd.flags) & FS_GD_BBITMAP_UNINIT, 0);
	assert_false(ft_block_zero(dev, start));
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(fs_fsck(dev, &fo, &rep), 0);
	fs = ft_mount(dev);
	assert_int_equal(fs_statfs(fs, &st), 0);
	assert_true(st.blocks - st.blocks_free >= used + (200u << 20) / JG_BLOCK_SIZE);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/* ------------------------------------------------ crafted journal geometry */

/* The error messages logged: the verifier must name what it refused. */
static char ft_log_msgs[4096];

static void ft_log_keep(void *ctx, int level, const char *subsys, const char *msg)
{
	size_t n = strlen(ft_log_msgs);

	(void)ctx;
	if (level == JG_LOG_ERR)
		snprintf(ft_log_msgs + n, sizeof(ft_log_msgs) - n, "%s: %s\n", subsys, msg);
}

/* Rewrite block @blkno of @dev through @edit, its checksum recomputed (a crafted,
 * not a damaged, image). */
static void ft_block_edit(struct blk_dev *dev, uint64_t blkno, const uint8_t *uuid,
			  void (*edit)(void *blk, uint64_t arg), uint64_t arg)
{
	uint8_t *blk = jg_alloc_blocks(1);

	assert_non_null(blk);
	assert_int_equal(blk_rw(dev, BLK_OP_READ, blkno, 1, blk, 0), 0);
	edit(blk, arg);
	jg_blk_crc_set(blk, JG_BLOCK_SIZE, jg_crc_seed(uuid));
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, blkno, 1, blk, 0), 0);
	free(blk);
}

/* journal_blocks := @arg, first_group_block := journal_start + journal_blocks (mod 2^64) */
static void ft_edit_journal_blocks(void *blk, uint64_t arg)
{
	struct fs_super *sb = blk;

	sb->journal_blocks = jg_cpu_to_le64(arg);
	sb->first_group_block = jg_cpu_to_le64(jg_le64(sb->journal_start) + arg);
}

/* the journal superblock's nblocks += (int64_t)@arg */
static void ft_edit_jnl_nblocks(void *blk, uint64_t arg)
{
	struct jnl_sb *jsb = blk;

	jsb->nblocks = jg_cpu_to_le64(jg_le64(jsb->nblocks) + arg);
}

/*
 * Crafted images, each with valid checksums: mount and fsck -n refuse them with an
 * error naming the field, and write nothing.
 */
static void test_super_crafted_journal_geometry(void **state)
{
	struct ft_case {
		const char *what;
		bool jnl;		/* edit the journal superblock, else the fs one */
		int64_t arg;		/* per edit function; for the fs: INT64_MIN marks nb-relative */
		const char *msg;	/* the error message must contain this */
	};
	const struct ft_case cases[] = {
		/* journal_start + journal_blocks wraps to 1: groups over the descriptors */
		{ "sum wraps", false, -1, "superblock dev=count(mem) blkno=0 bad journal_blocks" },
		{ "region past the filesystem", false, 10, "bad journal_blocks" },
		{ "region to the last block", false, 0, "bad journal_blocks" },
		{ "journal superblock larger", true, 8, "jnl: superblock dev=count(mem) blkno=2 bad nblocks: " },
		{ "journal superblock smaller", true, -8, "bad nblocks" },
	};

	(void)state;
	jg_log_set_sink(ft_log_keep, NULL);
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ft_case *c = &cases[i];
		struct fs_mount_opts o = { .data_mode = JNL_DATA_DECLARED, .no_commit_thread = true };
		struct fsck_opts fo = { .repair = true };
		struct blk_dev *mem = ft_dev_new(64);
		struct fs_super *sb = jg_alloc_blocks(1);
		struct ft_count_dev cnt;
		struct fsck_report r;
		struct fs *fs = NULL;
		uint64_t js, nb;
		int rc;

		assert_non_null(sb);
		assert_int_equal(blk_rw(mem, BLK_OP_READ, 0, 1, sb, 0), 0);
		js = jg_le64(sb->journal_start);
		nb = jg_le64(sb->blocks_count);
		if (c->jnl)
			ft_block_edit(mem, js, sb->uuid, ft_edit_jnl_nblocks, (uint64_t)c->arg);
		else if (c->arg < 0)
			ft_block_edit(mem, 0, sb->uuid, ft_edit_journal_blocks, (uint64_t)c->arg - js + 2);
		else
			ft_block_edit(mem, 0, sb->uuid, ft_edit_journal_blocks, nb - js + (uint64_t)c->arg);
		ft_count_init(&cnt, mem);
		ft_log_msgs[0] = 0;
		rc = fs_mount(&cnt.dev, &o, &fs);
		if (rc != -EUCLEAN || cnt.write_blocks || !strstr(ft_log_msgs, c->msg)) {
			if (!rc)
				fs_abandon(fs);
			jg_log_set_sink(NULL, NULL);
			fail_msg("%s: mount -> %d (want %d), %llu blocks written, logged:\n%s(want \"%s\")",
				 c->what, rc, -EUCLEAN, (unsigned long long)cnt.write_blocks,
				 ft_log_msgs, c->msg);
		}
		/* fsck -y: problems left (4), nothing "repaired" on a geometry it refuses */
		rc = fs_fsck(&cnt.dev, &fo, &r);
		if (rc != 4 || cnt.write_blocks) {
			jg_log_set_sink(NULL, NULL);
			fail_msg("%s: fsck -y -> %d (want 4), %llu blocks written", c->what, rc,
				 (unsigned long long)cnt.write_blocks);
		}
		free(sb);
		blk_close(mem);
	}
	jg_log_set_sink(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_super_crafted_journal_geometry),
		cmocka_unit_test(test_super_mount_blank),
		cmocka_unit_test(test_super_mount_info),
		cmocka_unit_test(test_super_mkfs_zeroes_log),
		cmocka_unit_test(test_super_lazy_bitmaps),
		cmocka_unit_test(test_super_power_cut_positions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
