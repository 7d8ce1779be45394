// SPDX-License-Identifier: MIT
/*
 * tests/unit/fs/test_model.c - thousands of seeded random operations through
 * fs.h, mirrored on a plain in-memory model (a tree of names, file contents,
 * modes, link counts). Each result code is compared with the model's, the whole
 * tree every few dozen steps, after remounts and after crashes taken right after
 * a sync (so nothing may be lost). fsck must find nothing at the end.
 *
 * JGRFS_TEST_SEED=<n> reruns one seed; a failure prints the seed and step.
 */
#include <errno.h>

#include "fs_test.h"

#define M_NODES 4096
#define M_ENTRIES 8192
#define M_FILE_MAX (96 * 1024)

enum { M_FREE = 0, M_FILE, M_DIR, M_LINK };

struct m_node {
	int type;
	uint32_t perm;
	uint64_t ino;
	uint8_t *data;
	size_t size;
	char target[200];
};

struct m_entry {
	int used;
	int dir;		/* node index of the directory */
	char name[8];
	int node;
};

static struct m_node nodes[M_NODES];
static struct m_entry ents[M_ENTRIES];
static uint64_t m_seed, m_rng;
static int m_step;
static struct blk_dev *m_dev;
static struct fs *m_fs;
static enum jnl_data_mode m_mode;

#define M_FAIL(...) \
	fail_msg("seed=%llu step=%d mode=%s: %s", (unsigned long long)m_seed, m_step, \
		 jnl_data_mode_name(m_mode), m_msg(__VA_ARGS__))

static const char *m_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static const char *m_msg(const char *fmt, ...)
{
	static char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

#define M_EXPECT(got, want, what) \
	do { \
		long long g_ = (long long)(got), w_ = (long long)(want); \
		if (g_ != w_) \
			M_FAIL("%s: got %lld, want %lld", what, g_, w_); \
	} while (0)

static uint64_t m_rand(uint64_t n)
{
	m_rng ^= m_rng << 13;
	m_rng ^= m_rng >> 7;
	m_rng ^= m_rng << 17;
	return n ? m_rng % n : 0;
}

static int m_find(int dir, const char *name)
{
	for (int i = 0; i < M_ENTRIES; i++)
		if (ents[i].used && ents[i].dir == dir && !strcmp(ents[i].name, name))
			return i;
	return -1;
}

static int m_links(int node)
{
	int n = 0;

	if (nodes[node].type == M_DIR) {
		n = 2;
		for (int i = 0; i < M_ENTRIES; i++)
			if (ents[i].used && ents[i].dir == node && nodes[ents[i].node].type == M_DIR)
				n++;
		return n;
	}
	for (int i = 0; i < M_ENTRIES; i++)
		if (ents[i].used && ents[i].node == node)
			n++;
	return n;
}

static int m_children(int dir)
{
	int n = 0;

	for (int i = 0; i < M_ENTRIES; i++)
		if (ents[i].used && ents[i].dir == dir)
			n++;
	return n;
}

static int m_parent(int dir)
{
	for (int i = 0; i < M_ENTRIES; i++)
		if (ents[i].used && ents[i].node == dir)
			return ents[i].dir;
	return 0;
}

/* @anc is @d or one of its ancestors */
static bool m_is_ancestor(int anc, int d)
{
	for (int n = 0; n < M_NODES; n++) {
		if (d == anc)
			return true;
		if (d == 0)
			return false;
		d = m_parent(d);
	}
	return false;
}

static int m_new_node(int type)
{
	for (int i = 1; i < M_NODES; i++)
		if (nodes[i].type == M_FREE) {
			memset(&nodes[i], 0, sizeof(nodes[i]));
			nodes[i].type = type;
			return i;
		}
	return -1;
}

static int m_new_entry(int dir, const char *name, int node)
{
	for (int i = 0; i < M_ENTRIES; i++)
		if (!ents[i].used) {
			ents[i].used = 1;
			ents[i].dir = dir;
			snprintf(ents[i].name, sizeof(ents[i].name), "%s", name);
			ents[i].node = node;
			return i;
		}
	M_FAIL("model full");
	return -1;
}

static void m_drop_if_unlinked(int node)
{
	if (nodes[node].type != M_DIR && m_links(node) == 0) {
		free(nodes[node].data);
		memset(&nodes[node], 0, sizeof(nodes[node]));
	}
}

/* A random directory of the model. */
static int m_rand_dir(void)
{
	int cand[64], n = 1;

	cand[0] = 0;
	for (int i = 0; i < M_ENTRIES && n < 64; i++)
		if (ents[i].used && nodes[ents[i].node].type == M_DIR)
			cand[n++] = ents[i].node;
	return cand[m_rand((uint64_t)n)];
}

static void m_rand_name(char *name)
{
	/* a small name space, so that names collide often */
	snprintf(name, 8, "%c%d", (char)('a' + m_rand(6)), (int)m_rand(5));
}

static int m_rand_entry(void)
{
	int tries = 0;

	while (tries++ < 200) {
		int i = (int)m_rand(M_ENTRIES);

		if (ents[i].used)
			return i;
	}
	for (int i = 0; i < M_ENTRIES; i++)
		if (ents[i].used)
			return i;
	return -1;
}

/* ----------------------------------------------------------------- checks */

struct m_rd {
	int n;
	char names[128][8];
};

static int m_rd_fn(void *ctx, const char *name, uint64_t ino, uint32_t mode, uint64_t next)
{
	struct m_rd *r = ctx;

	(void)ino, (void)mode, (void)next;
	if (r->n < 128)
		snprintf(r->names[r->n], 8, "%s", name);
	r->n++;
	return 0;
}

static void m_check_node(int node)
{
	struct m_node *m = &nodes[node];
	struct fs_attr a;
	static uint8_t buf[M_FILE_MAX + 10];
	char tbuf[256];

	M_EXPECT(fs_getattr(m_fs, m->ino, &a), 0, "getattr");
	M_EXPECT(a.nlink, m_links(node), "nlink");
	M_EXPECT(a.mode & 07777, m->perm, "perm");
	switch (m->type) {
	case M_FILE:
		M_EXPECT(S_ISREG(a.mode), 1, "type file");
		M_EXPECT(a.size, m->size, "size");
		M_EXPECT(fs_read(m_fs, m->ino, 0, sizeof(buf), buf), m->size, "read");
		if (m->size && memcmp(buf, m->data, m->size))
			M_FAIL("file %llu contents differ", (unsigned long long)m->ino);
		break;
	case M_DIR: {
		struct m_rd r = { 0 };

		M_EXPECT(S_ISDIR(a.mode), 1, "type dir");
		M_EXPECT(fs_readdir(m_fs, m->ino, 0, m_rd_fn, &r), 0, "readdir");
		M_EXPECT(r.n, m_children(node) + 2, "readdir count");
		for (int i = 2; i < r.n && i < 128; i++)
			if (m_find(node, r.names[i]) < 0)
				M_FAIL("readdir: unexpected '%s'", r.names[i]);
		break;
	}
	case M_LINK:
		M_EXPECT(S_ISLNK(a.mode), 1, "type link");
		M_EXPECT(fs_readlink(m_fs, m->ino, tbuf, sizeof(tbuf)), strlen(m->target), "readlink");
		if (memcmp(tbuf, m->target, strlen(m->target)))
			M_FAIL("symlink target differs");
		break;
	}
}

static void m_check_all(void)
{
	struct fs_attr a;

	for (int i = 0; i < M_ENTRIES; i++) {
		if (!ents[i].used)
			continue;
		M_EXPECT(fs_lookup(m_fs, nodes[ents[i].dir].ino, ents[i].name, &a), 0, "lookup");
		M_EXPECT(a.ino, nodes[ents[i].node].ino, "lookup ino");
	}
	for (int n = 0; n < M_NODES; n++)
		if (nodes[n].type != M_FREE)
			m_check_node(n);
}

/* ------------------------------------------------------------- operations */

static void m_op_create(int type)
{
	int dir = m_rand_dir(), e, node;
	char name[8], target[200];
	uint32_t perm = (uint32_t)(0600 | m_rand(0200));
	struct fs_attr a;
	int rc, want;

	m_rand_name(name);
	e = m_find(dir, name);
	want = e >= 0 ? -EEXIST : 0;
	if (type == M_FILE) {
		rc = fs_mknod(m_fs, nodes[dir].ino, name, S_IFREG | perm, 0, 0, 0, &a);
	} else if (type == M_DIR) {
		rc = fs_mkdir(m_fs, nodes[dir].ino, name, perm, 0, 0, &a);
	} else {
		size_t len = 1 + m_rand(m_rand(2) ? 20 : 190);

		for (size_t i = 0; i < len; i++)
			target[i] = (char)('a' + m_rand(26));
		target[len] = 0;
		perm = 0777;
		rc = fs_symlink(m_fs, nodes[dir].ino, name, target, 0, 0, &a);
	}
	M_EXPECT(rc, want, "create");
	if (rc)
		return;
	node = m_new_node(type);
	if (node < 0)
		M_FAIL("model full");
	nodes[node].ino = a.ino;
	nodes[node].perm = perm;
	if (type == M_LINK)
		snprintf(nodes[node].target, sizeof(nodes[node].target), "%s", target);
	m_new_entry(dir, name, node);
}

static int m_rand_file(void)
{
	int cand[256], n = 0;

	for (int i = 1; i < M_NODES && n < 256; i++)
		if (nodes[i].type == M_FILE)
			cand[n++] = i;
	return n ? cand[m_rand((uint64_t)n)] : -1;
}

static void m_op_write(void)
{
	int f = m_rand_file();
	static uint8_t buf[32768];
	uint64_t off, len;
	struct m_node *m;

	if (f < 0)
		return;
	m = &nodes[f];
	off = m_rand(M_FILE_MAX - sizeof(buf));
	len = 1 + m_rand(m_rand(4) ? 5000 : sizeof(buf));
	ft_pattern(buf, len, m_rng);
	/* half as the FUSE writeback cache writes: the times left alone */
	M_EXPECT(fs_write_flags(m_fs, m->ino, off, len, buf, m_rand(2) ? FS_WRITE_KEEP_TIMES : 0),
		 len, "write");
	if (off + len > m->size) {
		m->data = realloc(m->data, off + len);
		memset(m->data + m->size, 0, off + len - m->size);
		m->size = off + len;
	}
	memcpy(m->data + off, buf, len);
}

static void m_op_truncate(void)
{
	int f = m_rand_file();
	struct fs_attr set = { 0 }, a;
	uint64_t size;
	struct m_node *m;

	if (f < 0)
		return;
	m = &nodes[f];
	size = m_rand(M_FILE_MAX);
	set.size = size;
	M_EXPECT(fs_setattr(m_fs, m->ino, &set, FS_SET_SIZE, &a), 0, "truncate");
	if (size > m->size) {
		m->data = realloc(m->data, size);
		memset(m->data + m->size, 0, size - m->size);
	}
	m->size = size;
}

static void m_op_chmod(void)
{
	int e = m_rand_entry();
	struct fs_attr set = { 0 }, a;
	struct m_node *m;

	if (e < 0 || nodes[ents[e].node].type == M_LINK)
		return;
	m = &nodes[ents[e].node];
	set.mode = (uint32_t)m_rand(07777);
	M_EXPECT(fs_setattr(m_fs, m->ino, &set, FS_SET_MODE, &a), 0, "chmod");
	m->perm = set.mode;
}

static void m_op_unlink(void)
{
	int e = m_rand_entry(), node;
	bool dir;
	int rc, want;

	if (e < 0)
		return;
	node = ents[e].node;
	dir = nodes[node].type == M_DIR;
	if (m_rand(2)) {
		want = dir ? (m_children(node) ? -ENOTEMPTY : 0) : -ENOTDIR;
		rc = fs_rmdir(m_fs, nodes[ents[e].dir].ino, ents[e].name);
	} else {
		want = dir ? -EISDIR : 0;
		rc = fs_unlink(m_fs, nodes[ents[e].dir].ino, ents[e].name);
	}
	M_EXPECT(rc, want, "unlink/rmdir");
	if (rc)
		return;
	ents[e].used = 0;
	if (dir)
		memset(&nodes[node], 0, sizeof(nodes[node]));
	else
		m_drop_if_unlinked(node);
}

static void m_op_link(void)
{
	int e = m_rand_entry(), dir = m_rand_dir(), node;
	struct fs_attr a;
	char name[8];
	int want;

	if (e < 0)
		return;
	node = ents[e].node;
	m_rand_name(name);
	want = nodes[node].type == M_DIR ? -EPERM : m_find(dir, name) >= 0 ? -EEXIST : 0;
	M_EXPECT(fs_link(m_fs, nodes[node].ino, nodes[dir].ino, name, &a), want, "link");
	if (!want)
		m_new_entry(dir, name, node);
}

static void m_op_rename(void)
{
	int se = m_rand_entry(), ddir = m_rand_dir(), de, sn, dn = -1;
	unsigned int flags = m_rand(4) == 0 ? FS_RENAME_NOREPLACE :
			     m_rand(4) == 0 ? FS_RENAME_EXCHANGE : 0;
	char name[8];
	int want = 0, sdir, rc;

	if (se < 0)
		return;
	sdir = ents[se].dir;
	sn = ents[se].node;
	m_rand_name(name);
	de = m_find(ddir, name);
	if (de >= 0)
		dn = ents[de].node;
	if (flags & FS_RENAME_EXCHANGE) {
		if (de < 0)
			want = -ENOENT;
	} else if (de >= 0 && (flags & FS_RENAME_NOREPLACE)) {
		want = -EEXIST;
	}
	if (!want && de >= 0 && dn == sn) {
		want = 1;	/* no-op success */
	} else if (!want && de >= 0 && !(flags & FS_RENAME_EXCHANGE)) {
		if (nodes[sn].type == M_DIR && nodes[dn].type != M_DIR)
			want = -ENOTDIR;
		else if (nodes[sn].type != M_DIR && nodes[dn].type == M_DIR)
			want = -EISDIR;
		else if (nodes[dn].type == M_DIR && m_children(dn))
			want = -ENOTEMPTY;
	}
	if (!want && nodes[sn].type == M_DIR && sdir != ddir && m_is_ancestor(sn, ddir))
		want = -EINVAL;
	if (!want && (flags & FS_RENAME_EXCHANGE) && nodes[dn].type == M_DIR && sdir != ddir &&
	    m_is_ancestor(dn, sdir))
		want = -EINVAL;
	rc = fs_rename(m_fs, nodes[sdir].ino, ents[se].name, nodes[ddir].ino, name, flags);
	M_EXPECT(rc, want == 1 ? 0 : want, "rename");
	if (want)
		return;
	if (flags & FS_RENAME_EXCHANGE) {
		ents[se].node = dn;
		ents[de].node = sn;
		return;
	}
	if (de >= 0) {
		ents[de].used = 0;
		if (nodes[dn].type == M_DIR)
			memset(&nodes[dn], 0, sizeof(nodes[dn]));
	}
	ents[se].dir = ddir;
	snprintf(ents[se].name, sizeof(ents[se].name), "%s", name);
	if (de >= 0 && nodes[dn].type != M_FREE)
		m_drop_if_unlinked(dn);
}

static void m_remount(bool crash)
{
	struct fs_mount_opts o = { .data_mode = m_mode, .no_commit_thread = true,
				   .cache_blocks = 256 };

	if (crash) {
		/* everything synced first: a crash now may lose nothing */
		M_EXPECT(fs_sync(m_fs), 0, "sync");
		fs_abandon(m_fs);
	} else {
		M_EXPECT(fs_unmount(m_fs), 0, "unmount");
	}
	m_fs = NULL;
	M_EXPECT(fs_mount(m_dev, &o, &m_fs), 0, "mount");
	m_check_all();
}

static void m_run(uint64_t seed, enum jnl_data_mode mode, int steps)
{
	struct fs_mount_opts o = { .data_mode = mode, .no_commit_thread = true, .cache_blocks = 256 };

	m_seed = seed;
	m_rng = seed * 0x9e3779b97f4a7c15ull + 1;
	m_mode = mode;
	memset(nodes, 0, sizeof(nodes));
	memset(ents, 0, sizeof(ents));
	m_dev = ft_dev_new(64);
	M_EXPECT(fs_mount(m_dev, &o, &m_fs), 0, "mount");
	nodes[0].type = M_DIR;
	nodes[0].ino = FS_ROOT_INO;
	nodes[0].perm = 0755;
	for (m_step = 0; m_step < steps; m_step++) {
		uint64_t r = m_rand(100);

		if (r < 18)
			m_op_create(M_FILE);
		else if (r < 26)
			m_op_create(M_DIR);
		else if (r < 30)
			m_op_create(M_LINK);
		else if (r < 50)
			m_op_write();
		else if (r < 57)
			m_op_truncate();
		else if (r < 62)
			m_op_chmod();
		else if (r < 75)
			m_op_unlink();
		else if (r < 82)
			m_op_link();
		else if (r < 99)
			m_op_rename();
		else
			m_remount(m_rand(2));
		if (m_step % 40 == 0)
			m_check_all();
	}
	m_check_all();
	m_remount(false);
	M_EXPECT(fs_unmount(m_fs), 0, "unmount");
	m_fs = NULL;
	ft_fsck_clean(m_dev);
	blk_close(m_dev);
	for (int i = 0; i < M_NODES; i++)
		free(nodes[i].data);
	memset(nodes, 0, sizeof(nodes));
}

static void test_model_random_ops(void **state)
{
	const char *env = getenv("JGRFS_TEST_SEED");
	static const enum jnl_data_mode modes[] = { JNL_DATA_ORDERED, JNL_DATA_JOURNAL,
						    JNL_DATA_DECLARED, JNL_DATA_WRITEBACK };

	(void)state;
	if (env) {
		m_run(strtoull(env, NULL, 0), JNL_DATA_ORDERED, 3000);
		return;
	}
	for (unsigned int i = 0; i < 4; i++)
		m_run(100 + i, modes[i], 1500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_random_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
