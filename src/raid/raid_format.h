/* SPDX-License-Identifier: MIT */
/*
 * src/raid/raid_format.h - on-disk structures of the RAID layer (docs/FORMAT.md §2).
 *
 * Every member holds, in member blocks:
 *
 *	0                     member superblock (struct raid_sb), copy 0
 *	1                     member superblock, copy 1 (RAID_FEATURE_INCOMPAT_SB_COPY)
 *	2 .. 1 + bitmap_blocks  write-intent bitmap blocks (struct raid_bitmap_blk), the
 *	                      same bits on every member; none for policies off/full
 *	data_offset ..        data area: chunk-aligned, data_blocks blocks, row r's
 *	                      chunk at data_offset + r * chunk_blocks
 *
 * Arrays without RAID_FEATURE_INCOMPAT_SB_COPY (made before it) have one copy
 * and their bitmap from block 1: RAID_BITMAP_FIRST(feature_incompat).
 *
 * Structures, constants and static asserts only; included by src/raid, tests and
 * tools.
 */
#ifndef JGRFS_RAID_FORMAT_H
#define JGRFS_RAID_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "jgrfs/base.h"
#include "jgrfs/raid.h" /* RAID_MAX_MEMBERS */

#define RAID_SB_MAGIC 0x5352474au	/* "JGRS" */
#define RAID_BITMAP_MAGIC 0x4252474au	/* "JGRB" */
#define RAID_FORMAT_VERSION 1		/* major: jg_blk_hdr.version */
#define RAID_FORMAT_MINOR 0
#define RAID_SB_BLKNO 0			/* superblock copy 0 */
#define RAID_SB_COPY_BLKNO 1		/* superblock copy 1, with RAID_FEATURE_INCOMPAT_SB_COPY */
#define RAID_BITMAP_BLKNO 2		/* first bitmap block, with RAID_FEATURE_INCOMPAT_SB_COPY */
#define RAID_BITMAP_BLKNO_ONE_COPY 1	/* first bitmap block without it */
/* nmembers <= RAID_MAX_MEMBERS (include/jgrfs/raid.h): a bit per role in the masks below */
/*
 * The role of a hot spare: a device that holds a superblock of the array (same
 * uuid and geometry) and no data, taken by a rebuild when a member is lost.
 */
#define RAID_ROLE_SPARE 0xffffffffu

/* layout */
#define RAID_LAYOUT_LEFT_SYMMETRIC 0	/* RAID5/6: MD's default rotation */
#define RAID_LAYOUT_PARITY_LAST 1	/* RAID4: parity on the last member */

/* state */
#define RAID_STATE_CLEAN 0		/* shut down cleanly: parity matches data */
#define RAID_STATE_DIRTY 1		/* in use, or crashed while in use */

/* flags */
#define RAID_SB_FLAG_JNL_PENDING (1u << 0) /* filesystem-guided resync pending */
#define RAID_SB_FLAGS_KNOWN RAID_SB_FLAG_JNL_PENDING

/*
 * Incompat features; any other incompat bit set is refused.
 * SB_COPY: a second copy of the superblock at member block 1, written after
 * copy 0 is flushed; the bitmap starts at member block 2. Set on every array
 * created since; an older reader would take block 1 for a bitmap block.
 */
#define RAID_FEATURE_INCOMPAT_SB_COPY (1u << 0)
/*
 * RECOVERY: a member is being rebuilt (recovery_mask); set only while one is,
 * so that a reader without it refuses the array instead of reading the rows a
 * rebuild has not reached yet from that member (MD's recovery_offset).
 */
#define RAID_FEATURE_INCOMPAT_RECOVERY (1u << 1)
/*
 * SYNCING: the initial sync has not reached the last row (sync_rows < rows):
 * rows from sync_rows on may hold parity that never matched their data (what
 * the disks held before create). Set only until the sync ends, so that a
 * reader without it refuses the array instead of updating those rows by
 * read-modify-write, which keeps a parity that is wrong wrong (MD's
 * resync_offset).
 */
#define RAID_FEATURE_INCOMPAT_SYNCING (1u << 2)
#define RAID_FEATURE_INCOMPAT_SUPP                                                           \
	(RAID_FEATURE_INCOMPAT_SB_COPY | RAID_FEATURE_INCOMPAT_RECOVERY |                    \
	 RAID_FEATURE_INCOMPAT_SYNCING)
#define RAID_FEATURE_RO_COMPAT_SUPP 0u
/*
 * Compat features (a reader without them ignores them).
 * SCRUB: an online scrub was running or interrupted; scrub_rows, scrub_flags
 * and scrub_mismatches are its mark (the mount resumes it from there).
 */
#define RAID_FEATURE_COMPAT_SCRUB (1u << 0)
/* scrub_flags */
#define RAID_SCRUB_RUNNING (1u << 0) /* a scrub was running or interrupted: resume it */
#define RAID_SCRUB_REPAIR (1u << 1)  /* ... with repair */

/* Superblock copies per member, and the first bitmap block, by feature_incompat. */
#define RAID_SB_COPIES(incompat) (((incompat) & RAID_FEATURE_INCOMPAT_SB_COPY) ? 2u : 1u)
#define RAID_BITMAP_FIRST(incompat)                                                          \
	(((incompat) & RAID_FEATURE_INCOMPAT_SB_COPY) ? RAID_BITMAP_BLKNO : RAID_BITMAP_BLKNO_ONE_COPY)

/*
 * Member superblock, member block 0 (and 1 with RAID_FEATURE_INCOMPAT_SB_COPY:
 * the same contents but the home address). jg_blk_hdr: magic RAID_SB_MAGIC,
 * version RAID_FORMAT_VERSION, flags 0, seq = the array's event counter
 * (advanced on every superblock update; the highest value wins at assembly, and
 * within a member the newer valid copy), blkno = its member block (0 or 1), crc
 * over the whole 4096-byte block seeded with jg_crc_seed(uuid). Bytes after the
 * struct are zero.
 */
struct raid_sb {
/*000*/	struct jg_blk_hdr hdr;
/*020*/	uint8_t uuid[16];		/* the array's UUID, the same on every member */
/*030*/	le16 version_minor;		/* RAID_FORMAT_MINOR */
/*032*/	le16 reserved0;
/*034*/	le32 feature_compat;
/*038*/	le32 feature_ro_compat;
/*03c*/	le32 feature_incompat;
/*040*/	le32 role;			/* this member's slot: 0 .. nmembers-1, or RAID_ROLE_SPARE */
/*044*/	le32 nmembers;			/* 2 .. RAID_MAX_MEMBERS */
/*048*/	le32 level;			/* 4, 5 or 6 */
/*04c*/	le32 layout;			/* RAID_LAYOUT_* */
/*050*/	le32 chunk_blocks;		/* power of two, 1 .. 1024 */
/*054*/	le32 resync_policy;		/* enum raid_resync_policy */
/*058*/	le32 state;			/* RAID_STATE_* */
/*05c*/	le32 flags;			/* RAID_SB_FLAG_* */
/*060*/	le64 data_offset;		/* member block of the data area; multiple of chunk_blocks */
/*068*/	le64 data_blocks;		/* data area per member, multiple of chunk_blocks */
/*070*/	le64 array_blocks;		/* usable array size: data_blocks / chunk * ndata * chunk */
/*078*/	le32 bitmap_region_blocks;	/* array blocks per bitmap bit; power of two */
/*07c*/	le32 bitmap_blocks;		/* bitmap blocks per member, from RAID_BITMAP_FIRST() */
/*080*/	le64 bitmap_regions;		/* bits in use: ceil(array_blocks / region) */
/*088*/	le32 failed_mask;		/* bit r: member of role r has failed */
/*08c*/	le32 recovery_mask;		/* bit r: role r is being rebuilt (INCOMPAT_RECOVERY) */
/*090*/	le64 ctime;			/* creation, seconds since the Unix epoch */
/*098*/	le64 utime;			/* last superblock update, seconds since the epoch */
/*0a0*/	le64 recovery_rows;		/* in recovery_mask: rows of this member rebuilt */
/*0a8*/	le64 sync_rows;			/* INCOMPAT_SYNCING: rows [0, sync_rows) in sync */
/*0b0*/	le64 scrub_rows;		/* COMPAT_SCRUB: next row the scrub checks */
/*0b8*/	le32 scrub_flags;		/* COMPAT_SCRUB: RAID_SCRUB_* */
/*0bc*/	le32 reserved3;			/* zero */
/*0c0*/	le64 scrub_mismatches;		/* COMPAT_SCRUB: mismatched rows found so far */
/*0c8*/	uint8_t reserved4[0x38];	/* zero */
};
_Static_assert(sizeof(struct raid_sb) == 0x100, "raid_sb size");
_Static_assert(RAID_MAX_MEMBERS <= 8 * sizeof(le32), "a role mask bit per member");
_Static_assert(offsetof(struct raid_sb, uuid) == 0x20, "raid_sb.uuid");
_Static_assert(offsetof(struct raid_sb, version_minor) == 0x30, "raid_sb.version_minor");
_Static_assert(offsetof(struct raid_sb, feature_compat) == 0x34, "raid_sb.feature_compat");
_Static_assert(offsetof(struct raid_sb, feature_ro_compat) == 0x38, "raid_sb.feature_ro_compat");
_Static_assert(offsetof(struct raid_sb, feature_incompat) == 0x3c, "raid_sb.feature_incompat");
_Static_assert(offsetof(struct raid_sb, role) == 0x40, "raid_sb.role");
_Static_assert(offsetof(struct raid_sb, nmembers) == 0x44, "raid_sb.nmembers");
_Static_assert(offsetof(struct raid_sb, level) == 0x48, "raid_sb.level");
_Static_assert(offsetof(struct raid_sb, layout) == 0x4c, "raid_sb.layout");
_Static_assert(offsetof(struct raid_sb, chunk_blocks) == 0x50, "raid_sb.chunk_blocks");
_Static_assert(offsetof(struct raid_sb, resync_policy) == 0x54, "raid_sb.resync_policy");
_Static_assert(offsetof(struct raid_sb, state) == 0x58, "raid_sb.state");
_Static_assert(offsetof(struct raid_sb, flags) == 0x5c, "raid_sb.flags");
_Static_assert(offsetof(struct raid_sb, data_offset) == 0x60, "raid_sb.data_offset");
_Static_assert(offsetof(struct raid_sb, data_blocks) == 0x68, "raid_sb.data_blocks");
_Static_assert(offsetof(struct raid_sb, array_blocks) == 0x70, "raid_sb.array_blocks");
_Static_assert(offsetof(struct raid_sb, bitmap_region_blocks) == 0x78, "raid_sb.bitmap_region_blocks");
_Static_assert(offsetof(struct raid_sb, bitmap_blocks) == 0x7c, "raid_sb.bitmap_blocks");
_Static_assert(offsetof(struct raid_sb, bitmap_regions) == 0x80, "raid_sb.bitmap_regions");
_Static_assert(offsetof(struct raid_sb, failed_mask) == 0x88, "raid_sb.failed_mask");
_Static_assert(offsetof(struct raid_sb, ctime) == 0x90, "raid_sb.ctime");
_Static_assert(offsetof(struct raid_sb, utime) == 0x98, "raid_sb.utime");
_Static_assert(offsetof(struct raid_sb, recovery_mask) == 0x8c, "raid_sb.recovery_mask");
_Static_assert(offsetof(struct raid_sb, recovery_rows) == 0xa0, "raid_sb.recovery_rows");
_Static_assert(offsetof(struct raid_sb, sync_rows) == 0xa8, "raid_sb.sync_rows");
_Static_assert(offsetof(struct raid_sb, scrub_rows) == 0xb0, "raid_sb.scrub_rows");
_Static_assert(offsetof(struct raid_sb, scrub_flags) == 0xb8, "raid_sb.scrub_flags");
_Static_assert(offsetof(struct raid_sb, reserved3) == 0xbc, "raid_sb.reserved3");
_Static_assert(offsetof(struct raid_sb, scrub_mismatches) == 0xc0, "raid_sb.scrub_mismatches");
_Static_assert(offsetof(struct raid_sb, reserved4) == 0xc8, "raid_sb.reserved4");

/*
 * Write-intent bitmap block, member blocks RAID_BITMAP_FIRST() + i. jg_blk_hdr:
 * magic RAID_BITMAP_MAGIC, seq = event counter when written (informational),
 * blkno = its member block, crc as the superblock. Bit b of bits[] (byte b / 8,
 * bit b % 8, LSB first) is region first_region + b; a set bit means array blocks
 * [region * bitmap_region_blocks, +bitmap_region_blocks) may have parity that
 * does not match the data.
 */
#define RAID_BITMAP_BITS_OFF 0x40
#define RAID_BITMAP_BITS_PER_BLOCK ((JG_BLOCK_SIZE - RAID_BITMAP_BITS_OFF) * 8u) /* 32256 */
struct raid_bitmap_blk {
/*000*/	struct jg_blk_hdr hdr;
/*020*/	le64 first_region;		/* i * RAID_BITMAP_BITS_PER_BLOCK */
/*028*/	le32 nbits;			/* bits used in this block */
/*02c*/	le32 reserved0;
/*030*/	uint8_t reserved1[0x10];
/*040*/	uint8_t bits[JG_BLOCK_SIZE - RAID_BITMAP_BITS_OFF];
};
_Static_assert(sizeof(struct raid_bitmap_blk) == JG_BLOCK_SIZE, "raid_bitmap_blk size");
_Static_assert(offsetof(struct raid_bitmap_blk, first_region) == 0x20, "raid_bitmap_blk.first_region");
_Static_assert(offsetof(struct raid_bitmap_blk, nbits) == 0x28, "raid_bitmap_blk.nbits");
_Static_assert(offsetof(struct raid_bitmap_blk, bits) == RAID_BITMAP_BITS_OFF, "raid_bitmap_blk.bits");

#endif /* JGRFS_RAID_FORMAT_H */
