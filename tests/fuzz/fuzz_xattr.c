// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_xattr.c - xattr blocks (xattr.c) through list, get, set and
 * remove on a mounted image (fuzz_fs.h).
 *
 * Input:
 *	name_len:u8 name[name_len] record*	(records: fuzz_common.h)
 *
 * Records address the xattr block of /x (four user.* attributes) and the inode
 * table block holding its inode (xattr_blk). The name ("user." and the input
 * bytes, clipped, NUL becomes 'x') is read, set to a 100-byte value, read back
 * and removed; every name the list returns is read, and user.attr1 removed.
 */
#include "fuzz_fs.h"

static struct fz_list fz_list;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	fz_fs_make();
	fz_list_add(&fz_list, 0, &fz_fs.clean, fz_fs.x_xattr_blk);
	fz_list_add(&fz_list, 0, &fz_fs.clean, fz_fs.x_itable);
	if (fz_writing_corpus()) {
		static const uint8_t hdr[] = {5, 'a', 't', 't', 'r', '2'};

		fz_fs_seeds(&fz_list, hdr, sizeof(hdr), 2);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[5 + 256 + 1] = "user.";
	char list[4096], value[4096];
	struct blk_dev *mem;
	struct fs *fs;
	size_t raw;

	if (size < 1)
		return 0;
	raw = data[0] < size - 1 ? data[0] : size - 1;
	memcpy(name + 5, data + 1, raw);
	for (size_t i = 5; i < 5 + raw; i++)
		if (name[i] == '\0')
			name[i] = 'x';
	name[5 + raw] = '\0';
	data += 1 + raw;
	size -= 1 + raw;
	mem = fz_image_dev(&fz_fs.clean, "fsmem");
	fz_overlay(&fz_list, fz_fs.seed, data, size, &mem);
	fs = fz_fs_mount(mem, false);
	if (fs) {
		ssize_t n = fs_listxattr(fs, fz_fs.x_ino, NULL, 0);

		if (n > 0 && (size_t)n <= sizeof(list))
			n = fs_listxattr(fs, fz_fs.x_ino, list, sizeof(list));
		if (n > 0 && (size_t)n <= sizeof(list)) {
			/* the list is NUL-terminated names: each must be one */
			FZ_ASSERT(list[n - 1] == '\0');
			for (size_t off = 0; off < (size_t)n; off += strlen(list + off) + 1) {
				(void)fs_getxattr(fs, fz_fs.x_ino, list + off, NULL, 0);
				(void)fs_getxattr(fs, fz_fs.x_ino, list + off, value, sizeof(value));
			}
		}
		(void)fs_getxattr(fs, fz_fs.x_ino, name, value, sizeof(value));
		memset(value, 'v', 100);
		(void)fs_setxattr(fs, fz_fs.x_ino, name, value, 100, 0);
		(void)fs_getxattr(fs, fz_fs.x_ino, name, value, sizeof(value));
		(void)fs_removexattr(fs, fz_fs.x_ino, name);
		(void)fs_removexattr(fs, fz_fs.x_ino, "user.attr1");
		(void)fs_unmount(fs);
	}
	blk_close(mem);
	return 0;
}
