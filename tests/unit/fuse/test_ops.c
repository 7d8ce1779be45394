// SPDX-License-Identifier: MIT
/*
 * tests/unit/fuse/test_ops.c - the FUSE handlers of src/fuse/ops.c, called
 * in-process on a memory volume with libfuse's reply calls replaced
 * (-Wl,--wrap, tests/unit/fuse/meson.build): what each handler replies is
 * recorded instead of sent.
 *
 * Entry replies (V1): another thread may run whenever a handler lets go of the
 * fs lock. pthread_mutex_unlock is wrapped too, and after the Nth release of the
 * fs lock during one handler the test runs, in that thread, what such another
 * thread would: it unlinks the name the handler works on (the inode, with no
 * reference, is freed at once) and creates a file, which takes the lowest free
 * inode number - the one just freed. For every N up to the handler's last
 * release, the entry replied must name a live inode of the generation replied,
 * kept alive by the reference the reply carries.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fop_i.h"
#include "fs_i.h"
#include "jgrfs/raid.h"
#include "raid_i.h"

/* ------------------------------------------------- libfuse, recorded */

#define T_ENTS_MAX 16

static struct {
	struct fop_ctx *ctx;
	int replies;			/* replies sent for the request: must be 1 */
	int err;			/* fuse_reply_err's errno; -1: none */
	bool entry;			/* an entry (lookup, create, ...) was replied */
	struct fuse_entry_param e;
	unsigned int nents;		/* readdirplus entries added */
	char ent_name[T_ENTS_MAX][FS_NAME_MAX + 1];
	struct fuse_entry_param ent[T_ENTS_MAX];
} t_rep;

static char t_req_dummy;
#define T_REQ ((fuse_req_t)(void *)&t_req_dummy)

void *__wrap_fuse_req_userdata(fuse_req_t req);
const struct fuse_ctx *__wrap_fuse_req_ctx(fuse_req_t req);
int __wrap_fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e);
int __wrap_fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi);
int __wrap_fuse_reply_err(fuse_req_t req, int err);
int __wrap_fuse_reply_buf(fuse_req_t req, const char *buf, size_t size);
size_t __real_fuse_add_direntry_plus(fuse_req_t req, char *buf, size_t bufsize, const char *name,
				     const struct fuse_entry_param *e, off_t off);
size_t __wrap_fuse_add_direntry_plus(fuse_req_t req, char *buf, size_t bufsize, const char *name,
				     const struct fuse_entry_param *e, off_t off);
int __real_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);

void *__wrap_fuse_req_userdata(fuse_req_t req)
{
	return t_rep.ctx;
}

const struct fuse_ctx *__wrap_fuse_req_ctx(fuse_req_t req)
{
	static const struct fuse_ctx who = { .uid = 0, .gid = 0 };

	return &who;
}

int __wrap_fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	t_rep.replies++;
	t_rep.entry = true;
	t_rep.e = *e;
	return 0;
}

int __wrap_fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi)
{
	return __wrap_fuse_reply_entry(req, e);
}

int __wrap_fuse_reply_err(fuse_req_t req, int err)
{
	t_rep.replies++;
	t_rep.err = err;
	return 0;
}

int __wrap_fuse_reply_buf(fuse_req_t req, const char *buf, size_t size)
{
	t_rep.replies++;
	return 0;
}

size_t __wrap_fuse_add_direntry_plus(fuse_req_t req, char *buf, size_t bufsize, const char *name,
				     const struct fuse_entry_param *e, off_t off)
{
	size_t len = __real_fuse_add_direntry_plus(req, buf, bufsize, name, e, off);

	if (buf && len <= bufsize && t_rep.nents < T_ENTS_MAX) {
		snprintf(t_rep.ent_name[t_rep.nents], sizeof(t_rep.ent_name[0]), "%s", name);
		t_rep.ent[t_rep.nents++] = *e;
	}
	return len;
}

/* ------------------------------------------- the other thread, in this one */

static struct {
	struct fs *fs;
	unsigned int at;		/* run the intruder after this release; 0: never */
	unsigned int releases;		/* of the fs lock, during the handler */
	bool running;			/* the intruder's own releases do not count */
	uint64_t dir;			/* where the victim names are */
	const char *victim[2];		/* names the intruder unlinks (NULL: none) */
	unsigned int fillers;
} t_x;

static void t_intrude(void)
{
	struct fs_attr a;
	char name[32];

	for (int i = 0; i < 2 && t_x.victim[i]; i++)
		if (fs_unlink(t_x.fs, t_x.dir, t_x.victim[i]) == -EISDIR)
			fs_rmdir(t_x.fs, t_x.dir, t_x.victim[i]);
	snprintf(name, sizeof(name), "filler%u", t_x.fillers++);
	assert_int_equal(fs_mknod(t_x.fs, t_x.dir, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
}

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
	int rc = __real_pthread_mutex_unlock(m);

	if (t_x.fs && m == &t_x.fs->lock.m && !t_x.running) {
		t_x.releases++;
		if (t_x.releases == t_x.at) {
			t_x.running = true;
			t_intrude();
			t_x.running = false;
		}
	}
	return rc;
}

/* ----------------------------------------------------------------- cases */

struct t_vol {
	struct blk_dev *dev;
	struct fs *fs;
	struct fop_opts opts;
	struct fop_ctx ctx;
};

static void t_vol_open(struct t_vol *v)
{
	struct fs_mkfs_opts mo = { .label = "ops" };
	struct fs_mount_opts o = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true };

	memset(v, 0, sizeof(*v));
	assert_int_equal(raid_dev_mem_open("mem", 64 * 256, &v->dev), 0);
	assert_int_equal(fs_mkfs(v->dev, &mo), 0);
	assert_int_equal(fs_mount(v->dev, &o, &v->fs), 0);
	fop_opts_init(&v->opts);
	v->ctx.fs = v->fs;
	v->ctx.opts = &v->opts;
	t_rep.ctx = &v->ctx;
	memset(&t_x, 0, sizeof(t_x));
	t_x.fs = v->fs;
}

static void t_vol_close(struct t_vol *v)
{
	struct fsck_opts fo = { .repair = false };
	struct fsck_report r;
	int rc;

	t_x.fs = NULL;
	assert_int_equal(fs_unmount(v->fs), 0);
	rc = fs_fsck(v->dev, &fo, &r);
	if (rc || r.problems_found)
		fail_msg("fsck: exit %d, %llu problems", rc, (unsigned long long)r.problems_found);
	blk_close(v->dev);
	fop_opts_free(&v->opts);
}

/* The entry @e, replied as @name: a live inode of its generation (@gen when not 0:
 * the inode the name named). Drops the reference the reply carried. */
static void t_entry_check(struct fs *fs, const char *op, unsigned int at, const char *name,
			  const struct fuse_entry_param *e, uint64_t gen)
{
	struct fs_attr a;
	int rc;

	if (!e->ino)
		return;	/* a negative entry */
	rc = fs_getattr(fs, e->ino, &a);
	if (rc)
		fail_msg("%s, intruder after release %u: entry %s names inode %llu, which is free (%d)",
			 op, at, name, (unsigned long long)e->ino, rc);
	if (a.generation != e->generation || (gen && e->generation != gen))
		fail_msg("%s, intruder after release %u: entry %s names inode %llu generation %llu, "
			 "which is now generation %llu (the name's inode: %llu)",
			 op, at, name, (unsigned long long)e->ino, (unsigned long long)e->generation,
			 (unsigned long long)a.generation, (unsigned long long)gen);
	assert_int_equal(fs_forget(fs, e->ino, 1), 0);
}

enum t_op { T_LOOKUP, T_CREATE, T_MKNOD, T_MKDIR, T_SYMLINK, T_LINK, T_READDIRPLUS };
static const char *const t_op_name[] = { "lookup", "create", "mknod", "mkdir", "symlink", "link",
					 "readdirplus" };

/*
 * One request of @op with the intruder after release @at (0: none). Returns the
 * fs-lock releases the handler made.
 */
static unsigned int t_run(struct t_vol *v, enum t_op op, unsigned int at, unsigned int round)
{
	struct fuse_file_info fi = { .flags = O_RDWR };
	char dname[32], name[32] = "x", lname[32];
	uint64_t gen = 0, dir;
	struct fs_attr a;
	unsigned int rel;

	/* each round in its own directory: names and the intruder's fillers stay apart */
	snprintf(dname, sizeof(dname), "%s%u", t_op_name[op], round);
	assert_int_equal(fs_mkdir(v->fs, FS_ROOT_INO, dname, 0755, 0, 0, &a), 0);
	dir = a.ino;
	memset(&t_rep, 0, offsetof(typeof(t_rep), ent_name));
	t_rep.ctx = &v->ctx;
	t_rep.err = -1;
	t_x.dir = dir;
	t_x.victim[0] = name;
	t_x.victim[1] = NULL;
	if (op == T_LOOKUP || op == T_READDIRPLUS || op == T_LINK) {
		assert_int_equal(fs_mknod(v->fs, dir, name, S_IFREG | 0644, 0, 0, 0, &a), 0);
		gen = a.generation;
	}
	if (op == T_LINK) {
		snprintf(lname, sizeof(lname), "y");
		t_x.victim[1] = lname;
	}
	t_x.at = at;
	t_x.releases = 0;
	switch (op) {
	case T_LOOKUP:
		fop_ops.lookup(T_REQ, dir, name);
		break;
	case T_CREATE:
		fop_ops.create(T_REQ, dir, name, 0644, &fi);
		break;
	case T_MKNOD:
		fop_ops.mknod(T_REQ, dir, name, S_IFIFO | 0644, 0);
		break;
	case T_MKDIR:
		fop_ops.mkdir(T_REQ, dir, name, 0755);
		break;
	case T_SYMLINK:
		fop_ops.symlink(T_REQ, "target", dir, name);
		break;
	case T_LINK:
		fop_ops.link(T_REQ, a.ino, dir, lname);
		break;
	case T_READDIRPLUS:
		fop_ops.readdirplus(T_REQ, dir, 4096, 0, &fi);
		break;
	}
	rel = t_x.releases;
	t_x.at = 0;
	if (t_rep.replies != 1)
		fail_msg("%s, intruder after release %u: %d replies", t_op_name[op], at,
			 t_rep.replies);
	if (op == T_READDIRPLUS) {
		for (unsigned int i = 0; i < t_rep.nents; i++)
			t_entry_check(v->fs, t_op_name[op], at, t_rep.ent_name[i], &t_rep.ent[i],
				      strcmp(t_rep.ent_name[i], name) ? 0 : gen);
	} else if (t_rep.entry) {
		t_entry_check(v->fs, t_op_name[op], at, op == T_LINK ? lname : name, &t_rep.e,
			      op == T_LOOKUP || op == T_LINK ? gen : 0);
	} else if (at == 0 || t_rep.err != ENOENT) {
		fail_msg("%s, intruder after release %u: error %d", t_op_name[op], at, t_rep.err);
	}
	return rel;
}

static void test_ops_entry_reference_one_hold(void **state)
{
	for (enum t_op op = T_LOOKUP; op <= T_READDIRPLUS; op++) {
		struct t_vol v;
		unsigned int n, round = 0;

		t_vol_open(&v);
		/* a dry run counts the handler's releases of the fs lock */
		n = t_run(&v, op, 0, round++);
		assert_true(n >= 1);
		for (unsigned int at = 1; at <= n; at++)
			t_run(&v, op, at, round++);
		t_vol_close(&v);
	}
}

/* ------------------------------------------------ a lost block is named */

static struct {
	char line[16][512];
	unsigned int n;
} t_log;

static void t_log_sink(void *ctx, int level, const char *subsys, const char *msg)
{
	(void)ctx;
	(void)level;
	if (t_log.n < 16)
		snprintf(t_log.line[t_log.n++], sizeof(t_log.line[0]), "%s: %s", subsys, msg);
}

static unsigned int t_log_count(const char *needle)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < t_log.n; i++)
		k += strstr(t_log.line[i], needle) != NULL;
	return k;
}

struct t_find {
	uint64_t ino, lblk, blkno;
};

static int t_find_block(void *ctx, const struct fs_owner *o)
{
	struct t_find *f = ctx;

	if (o->kind == FS_OWNER_DATA && o->ino == f->ino && f->lblk >= o->lblk &&
	    f->lblk < o->lblk + o->count)
		f->blkno = o->blkno + (f->lblk - o->lblk);
	return 0;
}

/*
 * A degraded RAID5 with a read error in a row: only that block is lost. The
 * read of that file range fails with EIO, the file is named in the log once
 * (not at every re-read), and the rest of the file reads.
 */
static void test_ops_lost_block_named(void **state)
{
	struct raid_create_cfg cc = {.level = 5, .chunk_blocks = 4, .resync = RAID_RESYNC_BITMAP,
				     .assume_clean = true,
				     .bitmap_region_blocks = 64};
	struct fs_mount_opts mo = {.data_mode = JNL_DATA_ORDERED, .no_commit_thread = true};
	struct fs_mkfs_opts mk = {.label = "lost"};
	struct blk_dev *mem[4], *top[4];
	struct fuse_file_info fi = {.flags = O_RDONLY};
	struct raid_fault_domain *dom;
	struct raid_fault_cfg fc = {.seed = 1};
	struct t_find f = {.lblk = 3};
	struct fs_extent all;
	struct raid_array *a;
	struct fop_opts opts;
	struct fop_ctx ctx;
	struct fs_attr at;
	struct fs *fs;
	unsigned int role, other;
	uint64_t mblk;
	uint8_t *buf = calloc(16, 4096);

	(void)state;
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(raid_dev_mem_open("m", 4096, &mem[i]), 0);
		assert_int_equal(raid_dev_fault_open(dom, mem[i], &top[i]), 0);
	}
	assert_int_equal(raid_create(top, 4, &cc, false), 0);
	assert_int_equal(raid_assemble(top, 4, NULL, &a), 0);
	assert_int_equal(fs_mkfs(raid_array_dev(a), &mk), 0);
	assert_int_equal(fs_mount(raid_array_dev(a), &mo, &fs), 0);
	assert_int_equal(fs_mknod(fs, FS_ROOT_INO, "victim", S_IFREG | 0644, 0, 0, 0, &at), 0);
	memset(buf, 0x5a, 16 * 4096);
	assert_int_equal(fs_write(fs, at.ino, 0, 16 * 4096, buf), 16 * 4096);
	assert_int_equal(fs_unmount(fs), 0); /* home, and out of the buffer cache */

	/* where block 3 of the file is, on which member */
	assert_int_equal(fs_mount(raid_array_dev(a), &mo, &fs), 0);
	f.ino = at.ino;
	all = (struct fs_extent){.start = 0, .count = a->geo.array_blocks};
	assert_int_equal(fs_owners(fs, &all, 1, NULL, t_find_block, &f, NULL), 0);
	assert_true(f.blkno != 0);
	raid_layout_map(&a->geo, f.blkno, &role, &mblk);
	assert_int_equal(fs_unmount(fs), 0);
	/* another member lost, then a latent error under the block: nothing can give it back */
	other = (role + 1) % 4;
	assert_int_equal(raid_fail_member(a, other), 0);
	assert_int_equal(raid_dev_fault_latent_block(top[role], mblk), 0);

	assert_int_equal(fs_mount(raid_array_dev(a), &mo, &fs), 0);
	memset(&ctx, 0, sizeof(ctx));
	fop_opts_init(&opts);
	ctx.fs = fs;
	ctx.array = a;
	ctx.opts = &opts;
	pthread_mutex_init(&ctx.lost_lock, NULL);
	memset(&t_x, 0, sizeof(t_x));
	memset(&t_log, 0, sizeof(t_log));
	jg_log_set_sink(t_log_sink, NULL);
	for (int pass = 0; pass < 2; pass++) {
		memset(&t_rep, 0, offsetof(typeof(t_rep), ent_name));
		t_rep.ctx = &ctx;
		t_rep.err = -1;
		fop_ops.read(T_REQ, at.ino, 4096, 3 * 4096, &fi);
		assert_int_equal(t_rep.err, EIO);
	}
	memset(&t_rep, 0, offsetof(typeof(t_rep), ent_name));
	t_rep.ctx = &ctx;
	t_rep.err = -1;
	fop_ops.read(T_REQ, at.ino, 4096, 8 * 4096, &fi); /* another row: whole */
	jg_log_set_sink(NULL, NULL);
	assert_int_equal(t_rep.err, -1);
	assert_int_equal(t_rep.replies, 1);
	if (t_log_count("lost: /victim inode=") != 1 || t_log_count("data block 3 ") != 1)
		fail_msg("the lost block's file not named once in the log");
	/* and kept for status */
	assert_int_equal(ctx.lost_named, 1);
	assert_non_null(strstr(ctx.lost_last, "/victim inode"));

	assert_int_equal(fs_unmount(fs), 0);
	pthread_mutex_destroy(&ctx.lost_lock);
	fop_opts_free(&opts);
	assert_int_equal(raid_stop(a), 0); /* closes the fault devices, not their lower ones */
	for (int i = 0; i < 4; i++)
		blk_close(mem[i]);
	raid_fault_domain_free(dom);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_entry_reference_one_hold),
		cmocka_unit_test(test_ops_lost_block_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
