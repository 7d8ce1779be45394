// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_dir.c - directory blocks (dir.c: hash table, buckets,
 * entries) through lookup, readdir, insert and remove on a mounted image
 * (fuzz_fs.h).
 *
 * Input:
 *	name_len:u8 name[name_len] record*	(records: fuzz_common.h)
 *
 * Records address the blocks of /big (its table and buckets, 300 entries) and
 * the inode table block holding its inode (depth, bucket count, size). The
 * name (clipped to what the input holds; '/' and NUL become 'x', empty
 * becomes "n") is looked up in /big and then created there; readdir walks /big
 * resuming at the offsets it returned, 50 entries a call; one real entry is
 * looked up, one removed.
 */
#include "fuzz_fs.h"

static struct fz_list fz_list;

struct fz_rd {
	unsigned int n, calls;
	uint64_t next;
};

static int fz_rd_entry(void *ctx, const char *name, uint64_t ino, uint32_t mode, uint64_t next_off)
{
	struct fz_rd *r = ctx;

	(void)name;
	(void)ino;
	(void)mode;
	r->next = next_off;
	return ++r->n % 50 == 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	fz_fs_make();
	for (unsigned int i = 0; i < fz_fs.nbig_blocks; i++)
		fz_list_add(&fz_list, 0, &fz_fs.clean, fz_fs.big_blocks[i]);
	fz_list_add(&fz_list, 0, &fz_fs.clean, fz_fs.big_itable);
	if (fz_writing_corpus()) {
		static const uint8_t hdr[] = {9, 'e', 'n', 't', 'r', 'y', '-', '0', '4', '2'};

		fz_fs_seeds(&fz_list, hdr, sizeof(hdr), 8);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[FS_NAME_MAX + 1];
	struct fs_attr at;
	struct fz_rd rd = {0};
	struct blk_dev *mem;
	struct fs *fs;
	size_t len, raw;

	if (size < 1)
		return 0;
	raw = data[0] < size - 1 ? data[0] : size - 1;
	len = raw;
	memcpy(name, data + 1, len);
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/' || name[i] == '\0')
			name[i] = 'x';
	if (!len)
		name[len++] = 'n';
	name[len] = '\0';
	data += 1 + raw;
	size -= 1 + raw;
	mem = fz_image_dev(&fz_fs.clean, "fsmem");
	fz_overlay(&fz_list, fz_fs.seed, data, size, &mem);
	fs = fz_fs_mount(mem, false);
	if (fs) {
		(void)fs_lookup(fs, fz_fs.big_ino, name, &at);
		(void)fs_lookup(fs, fz_fs.big_ino, "entry-0150-with-a-longer-name", &at);
		while (rd.calls++ < 20 && fs_readdir(fs, fz_fs.big_ino, rd.next, fz_rd_entry, &rd) == 0 &&
		       rd.n % 50 == 0 && rd.n)
			;
		(void)fs_mknod(fs, fz_fs.big_ino, name, S_IFREG | 0644, 0, 0, 0, &at);
		(void)fs_lookup(fs, fz_fs.big_ino, name, &at);
		(void)fs_unlink(fs, fz_fs.big_ino, "entry-0100-with-a-longer-name");
		(void)fs_unmount(fs);
	}
	blk_close(mem);
	return 0;
}
