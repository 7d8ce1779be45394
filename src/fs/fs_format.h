/* SPDX-License-Identifier: MIT */
/*
 * src/fs/fs_format.h - the filesystem's on-disk structures (docs/FORMAT.md §4 is
 * the authority; this file follows it). Structs, constants and static asserts only.
 *
 * Device layout, in 4 KiB blocks:
 *
 *	0                      superblock
 *	1 .. gdt_blocks        group descriptor table (127 descriptors a block)
 *	journal_start ..       journal region (journal_blocks), formatted by jnl_format
 *	first_group_block ..   groups of blocks_per_group blocks, each:
 *	    +0  block bitmap   +1 inode bitmap   +2 .. inode table   then data blocks
 *
 * Every metadata block begins with struct jg_blk_hdr (FORMAT.md §1): magic per
 * type, version FS_FORMAT_VERSION, seq = tid of the transaction that wrote it,
 * blkno = home address, crc32c seeded with jg_crc_seed(superblock uuid).
 */
#ifndef JGRFS_FS_FORMAT_H
#define JGRFS_FS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "jgrfs/base.h"

#define FS_FORMAT_VERSION 1u

/* magics: "JG" + two letters, little-endian */
#define FS_MAGIC_SUPER 0x5346474au	/* "JGFS" */
#define FS_MAGIC_GDT 0x4447474au	/* "JGGD" */
#define FS_MAGIC_BBITMAP 0x4242474au	/* "JGBB" */
#define FS_MAGIC_IBITMAP 0x4249474au	/* "JGIB" */
#define FS_MAGIC_ITABLE 0x5449474au	/* "JGIT" */
#define FS_MAGIC_INDIRECT 0x4e49474au	/* "JGIN" */
#define FS_MAGIC_DTABLE 0x5444474au	/* "JGDT" */
#define FS_MAGIC_DBUCKET 0x4244474au	/* "JGDB" */
#define FS_MAGIC_XATTR 0x4158474au	/* "JGXA" */
#define FS_MAGIC_DCSUM 0x4344474au	/* "JGDC" */

/* ------------------------------------------------------------ superblock */

#define FS_SB_BLKNO 0u
#define FS_STATE_CLEAN (1u << 0)	/* unmounted cleanly */
#define FS_STATE_ERROR (1u << 1)	/* an inconsistency was detected: run fsck */

/*
 * Incompat features (any other bit set is refused).
 * LAZY_BITMAPS: a group descriptor may say its block or inode bitmap was never
 * written (FS_GD_*_UNINIT): it is what mkfs would have written, made in memory
 * when read (group.c (G4)); its first change writes it. So mkfs writes no
 * bitmap and takes the same time whatever the size (ext4's BLOCK_UNINIT).
 */
#define FS_FEATURE_INCOMPAT_LAZY_BITMAPS (1u << 0)
/*
 * LAZY_DCSUM (with DATA_CSUM): the checksum region is written only below
 * dcsum_init (checksum blocks [dcsum_start, dcsum_start + dcsum_init)); the
 * blocks from there to the region's end were never written and read as every
 * slot 0 (dcsum.c (D3)). mkfs leaves the region unwritten, so it takes the same
 * time whatever the size (ext4's lazy_itable_init). Incompat: a build without
 * it would read the unwritten blocks as damaged checksum blocks (fsck, scrub).
 * The flag is cleared, dcsum_init set to 0, in the transaction that moves the
 * mark to the region's end: the volume is then as mkfs made it before.
 */
#define FS_FEATURE_INCOMPAT_LAZY_DCSUM (1u << 1)
/*
 * Ro_compat features (a build that does not know one mounts read-only).
 * DATA_CSUM: a crc32c of every file data block, kept in a region of checksum
 * blocks after the filesystem's last block (dcsum_start = blocks_count,
 * dcsum_blocks of them; see "data checksums" below). An old build never looks
 * past blocks_count, so it can read the volume; it must not write it (its
 * writes would leave the checksums stale).
 */
#define FS_FEATURE_RO_COMPAT_DATA_CSUM (1u << 0)
#define FS_FEATURE_COMPAT_SUPP 0u
#define FS_FEATURE_RO_COMPAT_SUPP FS_FEATURE_RO_COMPAT_DATA_CSUM
#define FS_FEATURE_INCOMPAT_SUPP (FS_FEATURE_INCOMPAT_LAZY_BITMAPS | FS_FEATURE_INCOMPAT_LAZY_DCSUM)

struct fs_super {
/*000*/	struct jg_blk_hdr hdr;
/*020*/	le64 blocks_count;		/* blocks of the device the filesystem uses */
/*028*/	le64 inodes_count;		/* groups_count * inodes_per_group */
/*030*/	le32 blocks_per_group;		/* <= FS_BITMAP_BITS */
/*034*/	le32 inodes_per_group;		/* multiple of FS_INODES_PER_BLOCK, <= FS_BITMAP_BITS */
/*038*/	le32 groups_count;
/*03c*/	le32 inode_size;		/* 256 */
/*040*/	le64 gdt_start;			/* 1 */
/*048*/	le32 gdt_blocks;
/*04c*/	le32 itable_blocks;		/* inode table blocks per group */
/*050*/	le64 journal_start;
/*058*/	le64 journal_blocks;
/*060*/	le64 first_group_block;
/*068*/	le32 feature_compat;
/*06c*/	le32 feature_ro_compat;
/*070*/	le32 feature_incompat;
/*074*/	le32 state;			/* FS_STATE_* */
/*078*/	le64 orphan_head;		/* first inode of the orphan list, 0 when empty */
/*080*/	uint8_t uuid[16];
/*090*/	char label[64];			/* NUL-padded */
/*0d0*/	le64 hash_seed;			/* seeds directory name hashes */
/*0d8*/	le64 mkfs_time;			/* seconds since the epoch */
/*0e0*/	le64 mount_count;
/*0e8*/	le64 last_mount_time;
/*0f0*/	le32 error_count;
/*0f4*/	le32 reserved0;
/*0f8*/	le64 dcsum_start;		/* DATA_CSUM: first checksum block (= blocks_count), else 0 */
/*100*/	le64 dcsum_blocks;		/* DATA_CSUM: ceil(blocks_count / FS_DCSUM_PER_BLOCK), else 0 */
/*108*/	le64 dcsum_init;		/* LAZY_DCSUM: checksum blocks written (the mark), else 0 */
/*110*/	uint8_t reserved[4096 - 0x110];
};
_Static_assert(sizeof(struct fs_super) == 4096, "fs_super size");
_Static_assert(offsetof(struct fs_super, blocks_count) == 0x20, "sb.blocks_count");
_Static_assert(offsetof(struct fs_super, inodes_count) == 0x28, "sb.inodes_count");
_Static_assert(offsetof(struct fs_super, blocks_per_group) == 0x30, "sb.bpg");
_Static_assert(offsetof(struct fs_super, inodes_per_group) == 0x34, "sb.ipg");
_Static_assert(offsetof(struct fs_super, groups_count) == 0x38, "sb.groups_count");
_Static_assert(offsetof(struct fs_super, inode_size) == 0x3c, "sb.inode_size");
_Static_assert(offsetof(struct fs_super, gdt_start) == 0x40, "sb.gdt_start");
_Static_assert(offsetof(struct fs_super, gdt_blocks) == 0x48, "sb.gdt_blocks");
_Static_assert(offsetof(struct fs_super, itable_blocks) == 0x4c, "sb.itable_blocks");
_Static_assert(offsetof(struct fs_super, journal_start) == 0x50, "sb.journal_start");
_Static_assert(offsetof(struct fs_super, journal_blocks) == 0x58, "sb.journal_blocks");
_Static_assert(offsetof(struct fs_super, first_group_block) == 0x60, "sb.first_group_block");
_Static_assert(offsetof(struct fs_super, feature_compat) == 0x68, "sb.feature_compat");
_Static_assert(offsetof(struct fs_super, feature_ro_compat) == 0x6c, "sb.feature_ro_compat");
_Static_assert(offsetof(struct fs_super, feature_incompat) == 0x70, "sb.feature_incompat");
_Static_assert(offsetof(struct fs_super, state) == 0x74, "sb.state");
_Static_assert(offsetof(struct fs_super, orphan_head) == 0x78, "sb.orphan_head");
_Static_assert(offsetof(struct fs_super, uuid) == 0x80, "sb.uuid");
_Static_assert(offsetof(struct fs_super, label) == 0x90, "sb.label");
_Static_assert(offsetof(struct fs_super, hash_seed) == 0xd0, "sb.hash_seed");
_Static_assert(offsetof(struct fs_super, mkfs_time) == 0xd8, "sb.mkfs_time");
_Static_assert(offsetof(struct fs_super, mount_count) == 0xe0, "sb.mount_count");
_Static_assert(offsetof(struct fs_super, last_mount_time) == 0xe8, "sb.last_mount_time");
_Static_assert(offsetof(struct fs_super, error_count) == 0xf0, "sb.error_count");
_Static_assert(offsetof(struct fs_super, dcsum_start) == 0xf8, "sb.dcsum_start");
_Static_assert(offsetof(struct fs_super, dcsum_blocks) == 0x100, "sb.dcsum_blocks");
_Static_assert(offsetof(struct fs_super, dcsum_init) == 0x108, "sb.dcsum_init");

/* ----------------------------------------------------- group descriptors */

struct fs_group_desc {
/*00*/	le32 free_blocks;
/*04*/	le32 free_inodes;
/*08*/	le32 used_dirs;
/*0c*/	le32 itable_init;	/* inode table blocks written (lazy init, see (G2)) */
/*10*/	le32 flags;		/* FS_GD_* (with FS_FEATURE_INCOMPAT_LAZY_BITMAPS), else 0 */
/*14*/	le32 reserved0;
/*18*/	le64 reserved;
};
/* the block bitmap, the inode bitmap, was never written: it is mkfs's (G4) */
#define FS_GD_BBITMAP_UNINIT (1u << 0)
#define FS_GD_IBITMAP_UNINIT (1u << 1)
#define FS_GD_FLAGS_KNOWN (FS_GD_BBITMAP_UNINIT | FS_GD_IBITMAP_UNINIT)
_Static_assert(sizeof(struct fs_group_desc) == 32, "fs_group_desc size");
_Static_assert(offsetof(struct fs_group_desc, free_inodes) == 0x04, "gd.free_inodes");
_Static_assert(offsetof(struct fs_group_desc, used_dirs) == 0x08, "gd.used_dirs");
_Static_assert(offsetof(struct fs_group_desc, itable_init) == 0x0c, "gd.itable_init");
_Static_assert(offsetof(struct fs_group_desc, flags) == 0x10, "gd.flags");
_Static_assert(offsetof(struct fs_group_desc, reserved) == 0x18, "gd.reserved");

/* descriptors follow the header: 32 + 127 * 32 = 4096 */
#define FS_GD_PER_BLOCK 127u
#define FS_GD_OFFSET 32u

/* --------------------------------------------------------------- bitmaps */

/* bit i of a group's bitmap is (byte FS_BITMAP_OFFSET + i/8, bit i%8) */
#define FS_BITMAP_OFFSET 64u
#define FS_BITMAP_BITS ((JG_BLOCK_SIZE - FS_BITMAP_OFFSET) * 8u)	/* 32256 */

/* ---------------------------------------------------------------- inodes */

#define FS_INODE_SIZE 256u
#define FS_INODES_PER_BLOCK 15u	/* slot i at offset 256 * (i + 1); 0..255 header */
#define FS_NDIR 11u		/* direct pointers */
#define FS_IND 11u		/* block[11]: single indirect */
#define FS_DIND 12u		/* block[12]: double indirect */
#define FS_TIND 13u		/* block[13]: triple indirect */
#define FS_NBLOCKS 14u
#define FS_INLINE_MAX (FS_NBLOCKS * 8u) /* 112: symlink targets stored in block[] */

#define FS_INODE_FL_INLINE (1u << 0)	/* block[] holds the symlink target */

struct fs_dinode {
/*00*/	le32 mode;
/*04*/	le32 nlink;
/*08*/	le32 uid;
/*0c*/	le32 gid;
/*10*/	le64 size;		/* bytes */
/*18*/	le64 blocks;		/* 4 KiB blocks held: data, indirect, dir and xattr blocks */
/*20*/	le64 rdev;
/*28*/	le64 generation;
/*30*/	le64 atime_sec;
/*38*/	le64 mtime_sec;
/*40*/	le64 ctime_sec;
/*48*/	le64 btime_sec;
/*50*/	le32 atime_nsec;
/*54*/	le32 mtime_nsec;
/*58*/	le32 ctime_nsec;
/*5c*/	le32 btime_nsec;
/*60*/	le64 xattr_blk;		/* block of user.* attributes, 0 when none */
/*68*/	le64 orphan_next;	/* next inode on the orphan list, 0 at the end */
/*70*/	le64 parent;		/* directories: the parent directory ("..") */
/*78*/	le32 flags;		/* FS_INODE_FL_* */
/*7c*/	le32 dir_depth;		/* directories: global depth of the hash table */
/*80*/	le64 dir_entries;	/* directories: entries, "." and ".." excluded */
/*88*/	le32 dir_buckets;	/* directories: bucket blocks allocated */
/*8c*/	le32 reserved;
/*90*/	le64 block[FS_NBLOCKS];	/* 11 direct, single, double, triple indirect */
};
_Static_assert(sizeof(struct fs_dinode) == FS_INODE_SIZE, "fs_dinode size");
_Static_assert(offsetof(struct fs_dinode, nlink) == 0x04, "di.nlink");
_Static_assert(offsetof(struct fs_dinode, uid) == 0x08, "di.uid");
_Static_assert(offsetof(struct fs_dinode, gid) == 0x0c, "di.gid");
_Static_assert(offsetof(struct fs_dinode, size) == 0x10, "di.size");
_Static_assert(offsetof(struct fs_dinode, blocks) == 0x18, "di.blocks");
_Static_assert(offsetof(struct fs_dinode, rdev) == 0x20, "di.rdev");
_Static_assert(offsetof(struct fs_dinode, generation) == 0x28, "di.generation");
_Static_assert(offsetof(struct fs_dinode, atime_sec) == 0x30, "di.atime_sec");
_Static_assert(offsetof(struct fs_dinode, btime_sec) == 0x48, "di.btime_sec");
_Static_assert(offsetof(struct fs_dinode, atime_nsec) == 0x50, "di.atime_nsec");
_Static_assert(offsetof(struct fs_dinode, btime_nsec) == 0x5c, "di.btime_nsec");
_Static_assert(offsetof(struct fs_dinode, xattr_blk) == 0x60, "di.xattr_blk");
_Static_assert(offsetof(struct fs_dinode, orphan_next) == 0x68, "di.orphan_next");
_Static_assert(offsetof(struct fs_dinode, parent) == 0x70, "di.parent");
_Static_assert(offsetof(struct fs_dinode, flags) == 0x78, "di.flags");
_Static_assert(offsetof(struct fs_dinode, dir_depth) == 0x7c, "di.dir_depth");
_Static_assert(offsetof(struct fs_dinode, dir_entries) == 0x80, "di.dir_entries");
_Static_assert(offsetof(struct fs_dinode, dir_buckets) == 0x88, "di.dir_buckets");
_Static_assert(offsetof(struct fs_dinode, block) == 0x90, "di.block");

/* ------------------------------------------------------- indirect blocks */

#define FS_PTRS_OFFSET 32u
#define FS_PTRS_PER_BLOCK ((JG_BLOCK_SIZE - FS_PTRS_OFFSET) / 8u)	/* 508 */

/* ----------------------------------------------------------- directories */

/*
 * Extendible hashing. A directory's logical blocks 0 .. FS_DIR_TABLE_BLOCKS-1 hold
 * the table (FS_DTABLE_PER_BLOCK le32 entries a block, 2^dir_depth entries used):
 * entry i names the logical block of the bucket holding names whose hash has i as
 * its top dir_depth bits (of 63). Buckets start at logical FS_DIR_FIRST_BUCKET.
 */
#define FS_DIR_MAX_DEPTH 16u
#define FS_DTABLE_OFFSET 32u
#define FS_DTABLE_PER_BLOCK ((JG_BLOCK_SIZE - FS_DTABLE_OFFSET) / 4u)	/* 1016 */
#define FS_DIR_TABLE_BLOCKS 65u		/* ceil(2^16 / 1016) */
#define FS_DIR_FIRST_BUCKET FS_DIR_TABLE_BLOCKS
#define FS_HASH_BITS 63u

struct fs_dbucket_hdr {
/*00*/	struct jg_blk_hdr hdr;
/*20*/	le32 local_depth;	/* top bits of the hash shared by every name here */
/*24*/	le16 count;		/* entries */
/*26*/	le16 used;		/* bytes of entries from FS_DBUCKET_OFFSET */
};
_Static_assert(sizeof(struct fs_dbucket_hdr) == 40, "fs_dbucket_hdr size");
_Static_assert(offsetof(struct fs_dbucket_hdr, local_depth) == 0x20, "db.local_depth");
_Static_assert(offsetof(struct fs_dbucket_hdr, count) == 0x24, "db.count");
_Static_assert(offsetof(struct fs_dbucket_hdr, used) == 0x26, "db.used");

#define FS_DBUCKET_OFFSET 40u
#define FS_DBUCKET_SPACE (JG_BLOCK_SIZE - FS_DBUCKET_OFFSET)

/* entries are packed (unaligned, 18 bytes then the name, no NUL), sorted by hash */
struct __attribute__((packed)) fs_dirent {
/*00*/	le64 hash;		/* 63-bit name hash, >= 2 (readdir offset) */
/*08*/	le64 ino;
/*10*/	uint8_t name_len;	/* 1 .. 255 */
/*11*/	uint8_t type;		/* FS_FT_* */
/*12*/	/* name[name_len] follows */
};
_Static_assert(sizeof(struct fs_dirent) == 18, "fs_dirent size");
_Static_assert(offsetof(struct fs_dirent, name_len) == 0x10, "de.name_len");
_Static_assert(offsetof(struct fs_dirent, type) == 0x11, "de.type");

/* file types in entries, as ext2 */
#define FS_FT_UNKNOWN 0u
#define FS_FT_REG 1u
#define FS_FT_DIR 2u
#define FS_FT_CHR 3u
#define FS_FT_BLK 4u
#define FS_FT_FIFO 5u
#define FS_FT_SOCK 6u
#define FS_FT_LNK 7u

/* ------------------------------------------------------------------ xattr */

struct fs_xattr_hdr {
/*00*/	struct jg_blk_hdr hdr;
/*20*/	le16 count;
/*22*/	le16 used;		/* bytes of entries from FS_XATTR_OFFSET */
/*24*/	le32 reserved;
};
_Static_assert(sizeof(struct fs_xattr_hdr) == 40, "fs_xattr_hdr size");
_Static_assert(offsetof(struct fs_xattr_hdr, used) == 0x22, "xa.used");

#define FS_XATTR_OFFSET 40u
#define FS_XATTR_SPACE (JG_BLOCK_SIZE - FS_XATTR_OFFSET)
/* entry: u8 name_len, le16 value_len (bytes 1-2, unaligned), full name, value */
#define FS_XATTR_ENTRY_HDR 3u

/* --------------------------------------------------------- data checksums */

/*
 * With FS_FEATURE_RO_COMPAT_DATA_CSUM: checksum block i (at dcsum_start + i,
 * magic FS_MAGIC_DCSUM, the common header) holds the slots of array blocks
 * [i * FS_DCSUM_PER_BLOCK, (i + 1) * FS_DCSUM_PER_BLOCK): slot k, a le32 at
 * byte FS_DCSUM_OFFSET + 4 * k, is for block i * FS_DCSUM_PER_BLOCK + k.
 * A slot holds crc32c(seed, the block's 4096 bytes) (seed = jg_crc_seed(uuid),
 * as every metadata crc), except: 0 = no checksum recorded (never verified),
 * and a crc that computes to 0 is stored as FS_DCSUM_ZERO (a block whose crc
 * is FS_DCSUM_ZERO verifies against it too).
 */
#define FS_DCSUM_OFFSET 32u
#define FS_DCSUM_PER_BLOCK ((JG_BLOCK_SIZE - FS_DCSUM_OFFSET) / 4u)	/* 1016 */
#define FS_DCSUM_NONE 0u
#define FS_DCSUM_ZERO 0xffffffffu
_Static_assert(FS_DCSUM_OFFSET == sizeof(struct jg_blk_hdr), "dcsum slots follow the header");
_Static_assert(FS_DCSUM_PER_BLOCK == 1016u, "dcsum slots per block");

#endif /* JGRFS_FS_FORMAT_H */
