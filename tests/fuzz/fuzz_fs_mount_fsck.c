// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_fs_mount_fsck.c - `fsck -n` (fs_fsck, repair off) then mount
 * (fs_mount: superblock, journal recovery, groups, orphans) and a walk of the
 * tree over a whole small filesystem image (fuzz_fs.h).
 *
 * Input:
 *	variant:u8 cfg:u8 record*	(records: fuzz_common.h)
 *
 * variant % 2: 0 the clean image, 1 the crashed one (a journal to replay).
 * Records address every metadata block of the image: superblock, group
 * descriptors, bitmaps, inode tables, indirect, directory and xattr blocks,
 * and the journal's superblock and log blocks. cfg: bit 0 mount read-only,
 * bit 1 skip the mount (fsck only).
 *
 * Properties (abort): fsck -n writes nothing; a read-only mount writes nothing.
 */
#include "fuzz_fs.h"
#include "jnl_format.h"

static struct fz_list fz_lists[2];

static void fz_lists_make(void)
{
	static const uint32_t magics[] = {
	    FS_MAGIC_SUPER,   FS_MAGIC_GDT,	FS_MAGIC_BBITMAP, FS_MAGIC_IBITMAP, FS_MAGIC_ITABLE,
	    FS_MAGIC_INDIRECT, FS_MAGIC_DTABLE, FS_MAGIC_DBUCKET, FS_MAGIC_XATTR,   JNL_MAGIC_SB,
	    JNL_MAGIC_DESC,   JNL_MAGIC_COMMIT, JNL_MAGIC_REVOKE};
	const unsigned int nm = sizeof(magics) / sizeof(magics[0]);

	fz_list_magic(&fz_lists[0], 0, &fz_fs.clean, 0, FZ_FS_BLOCKS, magics, nm);
	fz_list_magic(&fz_lists[1], 0, &fz_fs.crashed, 0, FZ_FS_BLOCKS, magics, nm);
}

/* readdir's callback runs under the fs lock: it only collects, the walk visits after. */
struct fz_names {
	unsigned int n;
	uint64_t ino[64];
	uint32_t mode[64];
};

static int fz_collect(void *ctx, const char *name, uint64_t ino, uint32_t mode, uint64_t next_off)
{
	struct fz_names *l = ctx;

	(void)next_off;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	l->ino[l->n] = ino;
	l->mode[l->n] = mode;
	return ++l->n == 64; /* the first 64 of each directory */
}

/* Visit entries: stat each, read a file's first blocks, a symlink's target, a directory below. */
static void fz_walk_dir(struct fs *fs, uint64_t ino, unsigned int depth)
{
	struct fz_names l = {0};
	char buf[8192];

	if (depth >= 4 || fs_readdir(fs, ino, 0, fz_collect, &l) != 0)
		return;
	for (unsigned int i = 0; i < l.n; i++) {
		struct fs_attr at;

		if (fs_getattr(fs, l.ino[i], &at) != 0)
			continue;
		if (S_ISREG(at.mode))
			(void)fs_read(fs, l.ino[i], 0, sizeof(buf), buf);
		else if (S_ISLNK(at.mode))
			(void)fs_readlink(fs, l.ino[i], buf, sizeof(buf));
		else if (S_ISDIR(at.mode) && S_ISDIR(l.mode[i]))
			fz_walk_dir(fs, l.ino[i], depth + 1);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	fz_fs_make();
	fz_lists_make();
	if (fz_writing_corpus()) {
		for (uint8_t v = 0; v < 2; v++) {
			uint8_t hdr[2] = {v, 0};
			char name[64];
			struct fz_seed s = {0};

			fz_seed_bytes(&s, hdr, sizeof(hdr));
			snprintf(name, sizeof(name), "v%u-plain", v);
			fz_seed_write(&s, name);
			/* the superblock, group descriptors, bitmaps, first inode table blocks */
			for (unsigned int sel = 0; sel < fz_lists[v].n && sel < 6; sel++) {
				hdr[1] = (uint8_t)(sel & 1);
				fz_seed_bytes(&s, hdr, sizeof(hdr));
				fz_seed_record(&s, &fz_lists[v], sel, FZ_RESEAL);
				snprintf(name, sizeof(name), "v%u-blk%u", v, sel);
				fz_seed_write(&s, name);
			}
		}
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fsck_opts fo = {.repair = false};
	struct fsck_report rep;
	const struct fz_image *im;
	struct blk_dev *mem;
	struct fz_guard *g;
	struct fs *fs;
	unsigned int v;
	bool ro;

	if (size < 2)
		return 0;
	v = data[0] % 2;
	ro = data[1] & 1;
	im = v ? &fz_fs.crashed : &fz_fs.clean;
	mem = fz_image_dev(im, "fsmem");
	fz_overlay(&fz_lists[v], fz_fs.seed, data + 2, size - 2, &mem);

	g = fz_guard_new(mem, true); /* fsck -n: a write aborts */
	(void)fs_fsck(&g->dev, &fo, &rep);
	g->forbid = ro;
	if (!(data[1] & 2)) {
		fs = fz_fs_mount(&g->dev, ro);
		if (fs) {
			struct fs_statfs st;

			(void)fs_statfs(fs, &st);
			fz_walk_dir(fs, FS_ROOT_INO, 0);
			(void)fs_unmount(fs);
		}
	}
	blk_close(&g->dev);
	blk_close(mem);
	return 0;
}
