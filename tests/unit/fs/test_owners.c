// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_owners.c - fs_owners names the owner of chosen array blocks:
 * file data in direct, single and double indirect reach, the map blocks
 * themselves, a directory's buckets, a long symlink's target, an xattr block, the
 * fixed places (superblock, descriptors, journal, bitmaps, inode table with its
 * inodes), free blocks and blocks past the filesystem; the paths of a nested file
 * and both names of a hard link; an open-unlinked inode; the report cap. The
 * blocks asked about are found through the block map (fs_bmap_get, the inode's
 * pointers), not through fs_owners. On a clean filesystem every block has
 * exactly one owner. A read-only mount answers the same and writes nothing; a
 * damaged map block and a damaged directory bucket are still named, and what
 * they hid is counted as unreadable.
 */
#include <errno.h>
#include <pthread.h>

#include "fs_test.h"
#include "fs_i.h"

/* --------------------------------------------------------- the volume */

#define OT_DIR_FILES 300u	/* enough for /d to split its first bucket */

struct ot_vol {
	uint64_t big, d, sub, nested, lnk, x, root_bucket;
	uint64_t big_l3, big_l100, big_l600;	/* data blocks of /big by logical block */
	uint64_t big_ind, big_dind, big_dind_ind;	/* its map blocks */
	uint64_t d_bucket;		/* a bucket of /d (logical block 65) */
	uint64_t nested_l0, lnk_l0, x_xattr;
};

static void ot_write_block(struct fs *fs, uint64_t ino, uint64_t lblk, uint8_t fill)
{
	uint8_t buf[JG_BLOCK_SIZE];

	memset(buf, fill, sizeof(buf));
	assert_int_equal(fs_write(fs, ino, lblk * JG_BLOCK_SIZE, sizeof(buf), buf),
			 (ssize_t)sizeof(buf));
}

static uint64_t ot_pblk(struct fs *fs, uint64_t ino, uint64_t lblk)
{
	struct fs_inode ip;
	uint64_t pblk, run;

	assert_int_equal(fs_iget(fs, ino, &ip), 0);
	assert_int_equal(fs_bmap_get(fs, &ip, lblk, 1, &pblk, &run), 0);
	assert_true(pblk != 0);
	return pblk;
}

/* Pointer @i of indirect block @blkno. */
static uint64_t ot_ptr(struct fs *fs, uint64_t blkno, uint32_t i)
{
	struct fs_buf *b;
	le64 v;

	assert_int_equal(fs_bread(fs, blkno, FS_MAGIC_INDIRECT, "indirect block", &b), 0);
	memcpy(&v, b->data + FS_PTRS_OFFSET + 8 * i, 8);
	fs_bput(fs, b);
	return jg_le64(v);
}

/*
 * /big          blocks 3, 100 (single indirect) and 600 (double indirect), holes
 *               between; also named /d/sub/big-link (a hard link)
 * /d            OT_DIR_FILES empty files f0..; /d/sub/nested one block
 * /lnk          a 300-byte symlink target (a data block)
 * /x            an xattr block
 */
static void ot_build(struct fs *fs, struct ot_vol *v)
{
	char name[32], target[301];
	struct fs_inode ip;
	struct fs_attr a;

	memset(v, 0, sizeof(*v));
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "big", S_IFREG | 0644, 0, 0, 0, &a), 0);
	v->big = a.ino;
	ot_write_block(fs, v->big, 3, 'a');
	ot_write_block(fs, v->big, 100, 'b');
	ot_write_block(fs, v->big, 600, 'c');
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "d", 0755, 0, 0, &a), 0);
	v->d = a.ino;
	for (unsigned int i = 0; i < OT_DIR_FILES; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		assert_int_equal(fs_mknod(fs, v->d, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
	}
	assert_int_equal(fs_mkdir(fs, v->d, "sub", 0755, 0, 0, &a), 0);
	v->sub = a.ino;
	assert_int_equal(fs_mknod(fs, v->sub, "nested", S_IFREG | 0644, 0, 0, 0, &a), 0);
	v->nested = a.ino;
	ot_write_block(fs, v->nested, 0, 'n');
	assert_int_equal(fs_link(fs, v->big, v->sub, "big-link", &a), 0);
	memset(target, 't', 300);
	target[300] = 0;
	assert_int_equal(fs_symlink(fs, FS_ROOT_INO, "lnk", target, 0, 0, &a), 0);
	v->lnk = a.ino;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "x", S_IFREG | 0644, 0, 0, 0, &a), 0);
	v->x = a.ino;
	assert_int_equal(fs_setxattr(fs, v->x, "user.k", "value", 5, 0), 0);

	/* the blocks, from the block map */
	v->big_l3 = ot_pblk(fs, v->big, 3);
	v->big_l100 = ot_pblk(fs, v->big, 100);
	v->big_l600 = ot_pblk(fs, v->big, 600);
	assert_int_equal(fs_iget(fs, v->big, &ip), 0);
	v->big_ind = ip.block[FS_IND];
	v->big_dind = ip.block[FS_DIND];
	assert_true(v->big_ind && v->big_dind && !ip.block[FS_TIND]);
	v->big_dind_ind = ot_ptr(fs, v->big_dind, 0);
	assert_int_equal(ot_ptr(fs, v->big_ind, 100 - FS_NDIR), v->big_l100);
	assert_int_equal(ot_ptr(fs, v->big_dind_ind, 600 - FS_NDIR - FS_PTRS_PER_BLOCK),
			 v->big_l600);
	assert_int_equal(fs_iget(fs, v->d, &ip), 0);
	assert_true(ip.dir_buckets >= 2);
	v->d_bucket = ot_pblk(fs, v->d, FS_DIR_FIRST_BUCKET);
	v->nested_l0 = ot_pblk(fs, v->nested, 0);
	v->lnk_l0 = ot_pblk(fs, v->lnk, 0);
	assert_int_equal(fs_iget(fs, v->x, &ip), 0);
	v->x_xattr = ip.xattr_blk;
	assert_true(v->x_xattr != 0);
	v->root_bucket = ot_pblk(fs, FS_ROOT_INO, FS_DIR_FIRST_BUCKET);
}

/* ------------------------------------------------------ collecting reports */

#define OT_MAX 64u

struct ot_rep {
	struct fs_owner o;		/* paths cleared: see paths[] */
	char *paths[4];
};

struct ot_reps {
	struct ot_rep r[OT_MAX];
	unsigned int n;
	uint64_t blocks;		/* sum of the counts */
};

static int ot_collect(void *ctx, const struct fs_owner *o)
{
	struct ot_reps *reps = ctx;
	struct ot_rep *r;

	assert_true(reps->n < OT_MAX);
	assert_true(o->count >= 1);
	assert_true(o->npaths <= 4);
	r = &reps->r[reps->n++];
	r->o = *o;
	r->o.paths = NULL;
	for (unsigned int i = 0; i < o->npaths; i++)
		r->paths[i] = strdup(o->paths[i]);
	reps->blocks += o->count;
	return 0;
}

static void ot_reps_free(struct ot_reps *reps)
{
	for (unsigned int i = 0; i < reps->n; i++)
		for (unsigned int k = 0; k < reps->r[i].o.npaths; k++)
			free(reps->r[i].paths[k]);
	reps->n = 0;
	reps->blocks = 0;
}

/* Ask about the single blocks @blk (any order; sorted here). */
static int ot_ask(struct fs *fs, const uint64_t *blk, unsigned int n,
		  const struct fs_owners_opts *opts, struct ot_reps *reps,
		  struct fs_owners_summary *sum)
{
	struct fs_extent ext[OT_MAX];

	assert_true(n <= OT_MAX);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int k = i;

		while (k && ext[k - 1].start > blk[i]) {
			ext[k] = ext[k - 1];
			k--;
		}
		ext[k] = (struct fs_extent){ .start = blk[i], .count = 1 };
	}
	memset(reps, 0, sizeof(*reps));
	return fs_owners(fs, ext, n, opts, ot_collect, reps, sum);
}

/* The report covering @blkno; fails the test when there is not exactly one. */
static const struct ot_rep *ot_find(const struct ot_reps *reps, uint64_t blkno)
{
	const struct ot_rep *found = NULL;

	for (unsigned int i = 0; i < reps->n; i++) {
		const struct fs_owner *o = &reps->r[i].o;

		if (blkno >= o->blkno && blkno < o->blkno + o->count) {
			if (found)
				fail_msg("block %llu: two reports", (unsigned long long)blkno);
			found = &reps->r[i];
		}
	}
	if (!found)
		fail_msg("block %llu: no report", (unsigned long long)blkno);
	return found;
}

/* @blkno is block @lblk of inode @ino, of @kind (INDIRECT: at @level), named @path. */
static void ot_expect_file(const struct ot_reps *reps, uint64_t blkno, enum fs_owner_kind kind,
			   uint64_t ino, uint64_t lblk, unsigned int level, const char *path)
{
	const struct ot_rep *r = ot_find(reps, blkno);
	const struct fs_owner *o = &r->o;

	if (o->kind != kind || o->ino != ino || o->lblk + (blkno - o->blkno) != lblk ||
	    o->level != level)
		fail_msg("block %llu: %s ino %llu lblk %llu level %u, "
			 "expected %s ino %llu lblk %llu level %u",
			 (unsigned long long)blkno, fs_owner_kind_name(o->kind),
			 (unsigned long long)o->ino,
			 (unsigned long long)(o->lblk + (blkno - o->blkno)), o->level,
			 fs_owner_kind_name(kind), (unsigned long long)ino,
			 (unsigned long long)lblk, level);
	if (!path) {
		assert_int_equal(o->npaths, 0);
		return;
	}
	assert_true(o->npaths >= 1);
	assert_string_equal(r->paths[0], path);
}

static void ot_expect_kind(const struct ot_reps *reps, uint64_t blkno, enum fs_owner_kind kind)
{
	const struct fs_owner *o = &ot_find(reps, blkno)->o;

	if (o->kind != kind)
		fail_msg("block %llu: %s, expected %s", (unsigned long long)blkno,
			 fs_owner_kind_name(o->kind), fs_owner_kind_name(kind));
}

/* ------------------------------------------------------------------ tests */

/* Each kind of file block, with inode, logical block and path. */
static void test_owners_file_blocks(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_owners_summary sum;
	struct ot_reps reps;
	struct ot_vol v;
	const struct ot_rep *r;

	(void)state;
	ot_build(fs, &v);
	{
		const uint64_t blk[] = { v.big_l3, v.big_l100, v.big_l600, v.big_ind, v.big_dind,
					 v.big_dind_ind, v.d_bucket, v.nested_l0, v.lnk_l0,
					 v.x_xattr, v.root_bucket };

		assert_int_equal(ot_ask(fs, blk, 11, NULL, &reps, &sum), 0);
		assert_int_equal(sum.blocks, 11);
		assert_int_equal(sum.reports, reps.n);
		assert_int_equal(sum.blocks_left_out, 0);
		assert_int_equal(sum.unreadable, 0);
		assert_int_equal(reps.blocks, 11);
	}
	ot_expect_file(&reps, v.big_l3, FS_OWNER_DATA, v.big, 3, 0, "/big");
	ot_expect_file(&reps, v.big_l100, FS_OWNER_DATA, v.big, 100, 0, "/big");
	ot_expect_file(&reps, v.big_l600, FS_OWNER_DATA, v.big, 600, 0, "/big");
	ot_expect_file(&reps, v.big_ind, FS_OWNER_INDIRECT, v.big, FS_NDIR, 1, "/big");
	ot_expect_file(&reps, v.big_dind, FS_OWNER_INDIRECT, v.big, FS_NDIR + FS_PTRS_PER_BLOCK,
		       2, "/big");
	ot_expect_file(&reps, v.big_dind_ind, FS_OWNER_INDIRECT, v.big,
		       FS_NDIR + FS_PTRS_PER_BLOCK, 1, "/big");
	ot_expect_file(&reps, v.d_bucket, FS_OWNER_DIR, v.d, FS_DIR_FIRST_BUCKET, 0, "/d");
	ot_expect_file(&reps, v.nested_l0, FS_OWNER_DATA, v.nested, 0, 0, "/d/sub/nested");
	ot_expect_file(&reps, v.lnk_l0, FS_OWNER_SYMLINK, v.lnk, 0, 0, "/lnk");
	ot_expect_file(&reps, v.x_xattr, FS_OWNER_XATTR, v.x, 0, 0, "/x");
	ot_expect_file(&reps, v.root_bucket, FS_OWNER_DIR, FS_ROOT_INO, FS_DIR_FIRST_BUCKET, 0,
		       "/");

	/* the hard link: both names, nlink 2, whichever directory was read first */
	r = ot_find(&reps, v.big_l3);
	assert_int_equal(r->o.nlink, 2);
	assert_int_equal(r->o.npaths, 2);
	assert_int_equal(r->o.paths_left_out, 0);
	assert_false(r->o.orphan);
	assert_true(S_ISREG(r->o.mode));
	assert_true((!strcmp(r->paths[0], "/big") && !strcmp(r->paths[1], "/d/sub/big-link")) ||
		    (!strcmp(r->paths[1], "/big") && !strcmp(r->paths[0], "/d/sub/big-link")));
	ot_reps_free(&reps);

	/* max_paths 1: one name kept, the other counted */
	{
		const struct fs_owners_opts one = { .max_paths = 1 };
		const uint64_t blk[] = { v.big_l3 };

		assert_int_equal(ot_ask(fs, blk, 1, &one, &reps, &sum), 0);
		assert_int_equal(reps.n, 1);
		assert_int_equal(reps.r[0].o.npaths, 1);
		assert_int_equal(reps.r[0].o.paths_left_out, 1);
		ot_reps_free(&reps);
	}
	/* no_paths: the owner without its names */
	{
		const struct fs_owners_opts nop = { .no_paths = true };
		const uint64_t blk[] = { v.nested_l0 };

		assert_int_equal(ot_ask(fs, blk, 1, &nop, &reps, &sum), 0);
		ot_expect_file(&reps, v.nested_l0, FS_OWNER_DATA, v.nested, 0, 0, NULL);
		ot_reps_free(&reps);
	}
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

/* The fixed places, free blocks, blocks past the end; a run of a file is one report. */
static void test_owners_places(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_owners_summary sum;
	struct fs_attr a;
	struct ot_reps reps;
	const struct ot_rep *r;
	uint64_t gs = fs_group_start(fs, 0), run_first, run, end = fs->nblocks;
	struct fs_inode ip;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "seq", S_IFREG | 0644, 0, 0, 0, &a), 0);
	for (unsigned int i = 0; i < 8; i++)
		ot_write_block(fs, a.ino, i, (uint8_t)i);
	assert_int_equal(fs_iget(fs, a.ino, &ip), 0);
	assert_int_equal(fs_bmap_get(fs, &ip, 0, 8, &run_first, &run), 0);
	assert_true(run >= 2);	/* a new file in an empty group is laid out in one run */
	{
		/* the last block of the group's data area is free in a new filesystem */
		const struct fs_extent ext[] = {
			{ .start = 0, .count = 1 },
			{ .start = fs->gdt_start, .count = 1 },
			{ .start = fs->jnl_start + 5, .count = 2 },
			{ .start = gs, .count = 2 + 2 },	/* bitmaps, two table blocks */
			{ .start = run_first, .count = run },
			{ .start = end - 1, .count = 3 },	/* free, then 2 past the end */
		};

		memset(&reps, 0, sizeof(reps));
		assert_int_equal(fs_owners(fs, ext, 6, NULL, ot_collect, &reps, &sum), 0);
		assert_int_equal(sum.blocks, 1 + 1 + 2 + 4 + run + 3);
		assert_int_equal(reps.blocks, sum.blocks);
	}
	ot_expect_kind(&reps, 0, FS_OWNER_SUPER);
	ot_expect_kind(&reps, fs->gdt_start, FS_OWNER_GDT);
	ot_expect_kind(&reps, fs->jnl_start + 5, FS_OWNER_JOURNAL);
	assert_int_equal(ot_find(&reps, fs->jnl_start + 6)->o.count, 2);	/* one run */
	ot_expect_kind(&reps, gs, FS_OWNER_BBITMAP);
	ot_expect_kind(&reps, gs + 1, FS_OWNER_IBITMAP);
	r = ot_find(&reps, gs + 2);
	assert_int_equal(r->o.kind, FS_OWNER_ITABLE);
	assert_int_equal(r->o.ino, 1);
	assert_int_equal(r->o.ino_last, 2 * FS_INODES_PER_BLOCK);
	assert_int_equal(r->o.group, 0);
	r = ot_find(&reps, run_first);
	assert_int_equal(r->o.count, run);		/* consecutive blocks: one report */
	ot_expect_file(&reps, run_first + run - 1, FS_OWNER_DATA, a.ino, run - 1, 0, "/seq");
	ot_expect_kind(&reps, end - 1, FS_OWNER_FREE);
	r = ot_find(&reps, end);
	assert_int_equal(r->o.kind, FS_OWNER_OUTSIDE);
	assert_int_equal(r->o.count, 2);
	ot_reps_free(&reps);

	/* bad questions */
	{
		const struct fs_extent unsorted[] = { { 10, 1 }, { 5, 1 } };
		const struct fs_extent overlap[] = { { 5, 3 }, { 7, 1 } };
		const struct fs_extent empty[] = { { 5, 0 } };
		const struct fs_extent wrap[] = { { UINT64_MAX - 1, 4 } };

		assert_int_equal(fs_owners(fs, unsorted, 2, NULL, ot_collect, &reps, NULL),
				 -EINVAL);
		assert_int_equal(fs_owners(fs, overlap, 2, NULL, ot_collect, &reps, NULL),
				 -EINVAL);
		assert_int_equal(fs_owners(fs, empty, 1, NULL, ot_collect, &reps, NULL), -EINVAL);
		assert_int_equal(fs_owners(fs, wrap, 1, NULL, ot_collect, &reps, NULL), -EINVAL);
		assert_int_equal(reps.n, 0);
	}

	/* consecutive array blocks, not consecutive in the file: two reports */
	{
		uint64_t x;
		struct fs_extent ext;

		assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "gap", S_IFREG | 0644, 0, 0, 0, &a), 0);
		ot_write_block(fs, a.ino, 0, 'x');
		ot_write_block(fs, a.ino, 5, 'y');
		x = ot_pblk(fs, a.ino, 0);
		assert_int_equal(ot_pblk(fs, a.ino, 5), x + 1);	/* the allocator's choice */
		ext = (struct fs_extent){ .start = x, .count = 2 };
		memset(&reps, 0, sizeof(reps));
		assert_int_equal(fs_owners(fs, &ext, 1, NULL, ot_collect, &reps, &sum), 0);
		assert_int_equal(reps.n, 2);
		ot_expect_file(&reps, x, FS_OWNER_DATA, a.ino, 0, 0, "/gap");
		ot_expect_file(&reps, x + 1, FS_OWNER_DATA, a.ino, 5, 0, "/gap");
		ot_reps_free(&reps);
	}
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/* An open-unlinked file is named as an orphan; a block it freed is free again. */
static void test_owners_orphan(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct fs_owners_summary sum;
	struct ot_reps reps;
	struct fs_attr a;
	uint64_t blk;

	(void)state;
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "gone", S_IFREG | 0644, 0, 0, 0, &a), 0);
	ot_write_block(fs, a.ino, 0, 'g');
	blk = ot_pblk(fs, a.ino, 0);
	assert_int_equal(fs_ref(fs, a.ino, 1), 0);	/* held open */
	assert_int_equal(fs_unlink(fs, FS_ROOT_INO, "gone"), 0);
	assert_int_equal(ot_ask(fs, &blk, 1, NULL, &reps, &sum), 0);
	ot_expect_file(&reps, blk, FS_OWNER_DATA, a.ino, 0, 0, NULL);
	assert_true(reps.r[0].o.orphan);
	assert_int_equal(reps.r[0].o.nlink, 0);
	ot_reps_free(&reps);
	assert_int_equal(fs_forget(fs, a.ino, 1), 0);	/* closed: freed */
	assert_int_equal(ot_ask(fs, &blk, 1, NULL, &reps, &sum), 0);
	ot_expect_kind(&reps, blk, FS_OWNER_FREE);
	ot_reps_free(&reps);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

struct ot_tally {
	uint64_t blocks, free, reports;
	uint64_t next;			/* reports come in array block order */
};

static int ot_tally(void *ctx, const struct fs_owner *o)
{
	struct ot_tally *t = ctx;

	if (o->blkno < t->next)
		fail_msg("report at %llu after one ending at %llu", (unsigned long long)o->blkno,
			 (unsigned long long)t->next);
	t->next = o->blkno + o->count;
	t->blocks += o->count;
	t->reports++;
	if (o->kind == FS_OWNER_FREE)
		t->free += o->count;
	assert_true(o->kind != FS_OWNER_UNCLAIMED);	/* clean: every used block is mapped */
	return 0;
}

/* As ot_tally, for a filesystem changing under the scan: a block may have been
 * seen in two owners' maps (freed by one, taken by the next) or be unclaimed. */
static int ot_tally_loose(void *ctx, const struct fs_owner *o)
{
	struct ot_tally *t = ctx;

	if (o->blkno + o->count < t->next)
		fail_msg("report at %llu out of order", (unsigned long long)o->blkno);
	if (o->blkno + o->count > t->next)
		t->next = o->blkno + o->count;
	t->blocks += o->count;
	t->reports++;
	return 0;
}

/*
 * The whole filesystem: every block has exactly one owner, reports in array block
 * order, the free ones are what statfs counts. Then the cap: the reports kept, the
 * blocks left out counted, the sum still every block.
 */
static void test_owners_everything_and_cap(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	const struct fs_owners_opts all = { .max_reports = UINT64_MAX };
	const struct fs_owners_opts cap = { .max_reports = 5 };
	struct fs_owners_summary sum;
	struct fs_extent ext;
	struct fs_statfs st;
	struct ot_tally t = { 0 };
	struct ot_vol v;

	(void)state;
	ot_build(fs, &v);
	ext = (struct fs_extent){ .start = 0, .count = fs->nblocks };
	assert_int_equal(fs_owners(fs, &ext, 1, &all, ot_tally, &t, &sum), 0);
	assert_int_equal(t.blocks, fs->nblocks);
	assert_int_equal(sum.blocks_left_out, 0);
	assert_int_equal(sum.reports, t.reports);
	assert_true(sum.inodes_scanned >= OT_DIR_FILES + 6);
	assert_int_equal(fs_statfs(fs, &st), 0);
	assert_int_equal(t.free, st.blocks_free);

	memset(&t, 0, sizeof(t));
	assert_int_equal(fs_owners(fs, &ext, 1, &cap, ot_tally, &t, &sum), 0);
	assert_int_equal(t.reports, 5);
	assert_int_equal(sum.reports, 5);
	assert_true(sum.blocks_left_out > 0);
	assert_int_equal(t.blocks + sum.blocks_left_out, fs->nblocks);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

static int ot_stop(void *ctx, const struct fs_owner *o)
{
	(void)o;
	return ++*(unsigned int *)ctx == 2 ? -ECANCELED : 0;
}

/* The callback's negative return stops the reports and is returned. */
static void test_owners_callback_stops(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	const struct fs_extent ext[] = { { 0, 1 }, { 1, 1 }, { fs->jnl_start + 10, 1 } };
	unsigned int calls = 0;

	(void)state;
	assert_int_equal(fs_owners(fs, ext, 3, NULL, ot_stop, &calls, NULL), -ECANCELED);
	assert_int_equal(calls, 2);
	assert_int_equal(fs_unmount(fs), 0);
	blk_close(dev);
}

/*
 * Read-only mount of an unmounted volume: the same answers, no write reaches the
 * device. Then damage: the single indirect block of /big (its checksum broken) is
 * still named, the block it maps is unclaimed and counted unreadable; a file whose
 * only directory bucket is damaged keeps its owner, not its name, and the bucket
 * itself is named for its directory.
 */
static void test_owners_readonly_and_damage(void **state)
{
	struct fs_mount_opts ro = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				    .readonly = true };
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	struct ft_count_dev cnt;
	struct fs_owners_summary sum;
	struct ot_reps reps;
	struct fs_attr a;
	struct ot_vol v;
	uint64_t e, g, e_bucket, g_l0;
	uint8_t *blk = jg_alloc_blocks(1);

	(void)state;
	ot_build(fs, &v);
	assert_int_equal(fs_mkdir(fs, FS_ROOT_INO, "e", 0755, 0, 0, &a), 0);
	e = a.ino;
	assert_int_equal(fs_mknod(fs, e, "g", S_IFREG | 0644, 0, 0, 0, &a), 0);
	g = a.ino;
	ot_write_block(fs, g, 0, 'g');
	e_bucket = ot_pblk(fs, e, FS_DIR_FIRST_BUCKET);
	g_l0 = ot_pblk(fs, g, 0);
	assert_int_equal(fs_unmount(fs), 0);

	ft_count_init(&cnt, dev);
	fs = NULL;
	assert_int_equal(fs_mount(&cnt.dev, &ro, &fs), 0);
	{
		const uint64_t q[] = { v.big_l100, v.big_ind, v.nested_l0, g_l0, e_bucket };

		assert_int_equal(ot_ask(fs, q, 5, NULL, &reps, &sum), 0);
	}
	ot_expect_file(&reps, v.big_l100, FS_OWNER_DATA, v.big, 100, 0, "/big");
	ot_expect_file(&reps, v.big_ind, FS_OWNER_INDIRECT, v.big, FS_NDIR, 1, "/big");
	ot_expect_file(&reps, v.nested_l0, FS_OWNER_DATA, v.nested, 0, 0, "/d/sub/nested");
	ot_expect_file(&reps, g_l0, FS_OWNER_DATA, g, 0, 0, "/e/g");
	ot_expect_file(&reps, e_bucket, FS_OWNER_DIR, e, FS_DIR_FIRST_BUCKET, 0, "/e");
	assert_int_equal(sum.unreadable, 0);
	ot_reps_free(&reps);
	assert_int_equal(fs_unmount(fs), 0);
	assert_int_equal(cnt.write_blocks, 0);

	/* damage under a file and under a directory: checksums broken, not resealed */
	assert_int_equal(blk_rw(dev, BLK_OP_READ, v.big_ind, 1, blk, 0), 0);
	blk[100] ^= 0x40;
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, v.big_ind, 1, blk, 0), 0);
	assert_int_equal(blk_rw(dev, BLK_OP_READ, e_bucket, 1, blk, 0), 0);
	blk[JG_BLOCK_SIZE - 1] ^= 0x40;
	assert_int_equal(blk_rw(dev, BLK_OP_WRITE, e_bucket, 1, blk, 0), 0);

	ft_count_init(&cnt, dev);
	fs = NULL;
	assert_int_equal(fs_mount(&cnt.dev, &ro, &fs), 0);
	{
		const uint64_t q[] = { v.big_l3, v.big_l100, v.big_ind, g_l0, e_bucket };

		assert_int_equal(ot_ask(fs, q, 5, NULL, &reps, &sum), 0);
	}
	ot_expect_file(&reps, v.big_l3, FS_OWNER_DATA, v.big, 3, 0, "/big");
	ot_expect_file(&reps, v.big_ind, FS_OWNER_INDIRECT, v.big, FS_NDIR, 1, "/big");
	ot_expect_kind(&reps, v.big_l100, FS_OWNER_UNCLAIMED);
	ot_expect_file(&reps, g_l0, FS_OWNER_DATA, g, 0, 0, NULL);
	assert_int_equal(ot_find(&reps, g_l0)->o.nlink, 1);
	ot_expect_file(&reps, e_bucket, FS_OWNER_DIR, e, FS_DIR_FIRST_BUCKET, 0, "/e");
	assert_int_equal(sum.unreadable, 2);	/* /big's map, /e's entries */
	ot_reps_free(&reps);
	assert_int_equal(fs_unmount(fs), 0);
	assert_int_equal(cnt.write_blocks, 0);
	free(blk);
	blk_close(dev);
}

struct ot_churn {
	struct fs *fs;
	uint64_t dir;
	bool stop;			/* __atomic */
	unsigned int rounds;
	int err;			/* the first failure (asserts belong to the main thread) */
	const char *what;
};

static bool ot_churn_ok(struct ot_churn *c, long rc, long want, const char *what)
{
	if (rc == want)
		return true;
	c->err = rc < 0 ? (int)rc : -EIO;
	c->what = what;
	return false;
}

/* Create, grow, rename, truncate and unlink files while fs_owners runs. */
static void *ot_churn_run(void *arg)
{
	struct ot_churn *c = arg;
	static uint8_t buf[JG_BLOCK_SIZE * 4];
	struct fs_attr a;
	char name[32], name2[32];

	memset(buf, 'c', sizeof(buf));
	for (unsigned int i = 0; !__atomic_load_n(&c->stop, __ATOMIC_RELAXED) || i < 8; i++) {
		struct fs_attr sz = { .size = JG_BLOCK_SIZE };

		snprintf(name, sizeof(name), "c%u", i % 16);
		snprintf(name2, sizeof(name2), "r%u", i % 16);
		if (!ot_churn_ok(c, fs_mknod(c->fs, c->dir, name, S_IFREG | 0644, 0, 0, 0, &a), 0,
				 "mknod") ||
		    !ot_churn_ok(c, fs_write(c->fs, a.ino, (i % 7) * sizeof(buf), sizeof(buf), buf),
				 (long)sizeof(buf), "write") ||
		    !ot_churn_ok(c, fs_rename(c->fs, c->dir, name, c->dir, name2, 0), 0,
				 "rename") ||
		    (i % 3 == 0 &&
		     !ot_churn_ok(c, fs_setattr(c->fs, a.ino, &sz, FS_SET_SIZE, &a), 0,
				  "truncate")) ||
		    !ot_churn_ok(c, fs_unlink(c->fs, c->dir, name2), 0, "unlink"))
			break;
		c->rounds++;
	}
	return NULL;
}

/*
 * A mounted filesystem changing under the scan (run under ASan): every scan
 * succeeds, the files left alone are named right, nothing is read after it was
 * freed.
 */
static void test_owners_concurrent(void **state)
{
	struct blk_dev *dev = ft_dev_new(64);
	struct fs *fs = ft_mount(dev);
	const struct fs_owners_opts all = { .max_reports = UINT64_MAX };
	struct ot_churn c = { .fs = fs };
	struct fs_owners_summary sum;
	struct ot_reps reps;
	struct ot_tally t;
	struct fs_extent ext;
	const struct ot_rep *r;
	struct ot_vol v;
	pthread_t th;

	(void)state;
	ot_build(fs, &v);
	c.dir = v.sub;
	assert_int_equal(pthread_create(&th, NULL, ot_churn_run, &c), 0);
	for (unsigned int k = 0; k < 4; k++) {
		const uint64_t q[] = { v.big_l600, v.nested_l0, v.lnk_l0 };

		memset(&t, 0, sizeof(t));
		ext = (struct fs_extent){ .start = 0, .count = fs->nblocks };
		assert_int_equal(fs_owners(fs, &ext, 1, &all, ot_tally_loose, &t, &sum), 0);
		assert_true(t.blocks >= fs->nblocks);
		assert_int_equal(ot_ask(fs, q, 3, NULL, &reps, &sum), 0);
		r = ot_find(&reps, v.big_l600);
		assert_int_equal(r->o.kind, FS_OWNER_DATA);
		assert_int_equal(r->o.ino, v.big);
		assert_int_equal(r->o.lblk, 600);
		assert_int_equal(r->o.npaths, 2);	/* /d/sub changes, its entry stays */
		assert_true(!strcmp(r->paths[0], "/big") || !strcmp(r->paths[1], "/big"));
		assert_true(!strcmp(r->paths[0], "/d/sub/big-link") ||
			    !strcmp(r->paths[1], "/d/sub/big-link"));
		ot_expect_file(&reps, v.nested_l0, FS_OWNER_DATA, v.nested, 0, 0, "/d/sub/nested");
		ot_expect_file(&reps, v.lnk_l0, FS_OWNER_SYMLINK, v.lnk, 0, 0, "/lnk");
		ot_reps_free(&reps);
	}
	__atomic_store_n(&c.stop, true, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (c.err)
		fail_msg("churn: %s failed: %d", c.what, c.err);
	assert_true(c.rounds >= 8);
	assert_int_equal(fs_unmount(fs), 0);
	ft_fsck_clean(dev);
	blk_close(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owners_file_blocks),
		cmocka_unit_test(test_owners_places),
		cmocka_unit_test(test_owners_orphan),
		cmocka_unit_test(test_owners_everything_and_cap),
		cmocka_unit_test(test_owners_callback_stops),
		cmocka_unit_test(test_owners_readonly_and_damage),
		cmocka_unit_test(test_owners_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
