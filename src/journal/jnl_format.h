/* SPDX-License-Identifier: MIT */
/*
 * src/journal/jnl_format.h - on-disk structures of the journal (docs/FORMAT.md §3).
 *
 * The journal is a contiguous region of the device: block 0 of the region is the
 * journal superblock, blocks 1..nblocks-1 are the circular log. Every log block
 * starts with struct jg_blk_hdr: magic per type, seq = the transaction id,
 * blkno = the block's own (absolute) device address, crc32c over the whole block
 * seeded with jg_crc_seed(uuid). Logged copies of metadata follow their
 * descriptor block and carry no header of their own; the descriptor's tag holds
 * their crc32c.
 *
 * A transaction in the log:
 *   [declare blocks]  declared mode: every data block of the transaction, with
 *                     the crc32c of what it writes home
 *   [descriptor, logged copies...]*
 *   [revoke blocks]
 *   commit block      THE COMMIT POINT: once it is durable and every checksum of
 *                     the transaction matches (in declared mode, the data's at
 *                     home too), recovery replays the transaction.
 *
 * Included by src/journal, tests and tools only.
 */
#ifndef JGRFS_JNL_FORMAT_H
#define JGRFS_JNL_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "jgrfs/base.h"

#define JNL_VERSION 1

/* mkfs: max_txn_blocks = min((nblocks - 1) / 4, this) (FORMAT.md §3.7) */
#define JNL_MAX_TXN_CAP 2048u

/* Magic per block type: "JNL" and a type byte. */
#define JNL_MAGIC_SB		0x4a4e4c01u
#define JNL_MAGIC_DESC		0x4a4e4c02u
#define JNL_MAGIC_COMMIT	0x4a4e4c03u
#define JNL_MAGIC_REVOKE	0x4a4e4c04u
#define JNL_MAGIC_DECLARE	0x4a4e4c05u

/* Feature masks of the journal superblock. */
#define JNL_FEAT_INCOMPAT_REVOKE	(1u << 0) /* the log may hold revoke blocks */
#define JNL_FEAT_INCOMPAT_CSUM		(1u << 1) /* tags carry crc32c of logged blocks */
#define JNL_FEAT_INCOMPAT_DECLARE	(1u << 2) /* written in declared mode: recovery must resync */
#define JNL_FEAT_INCOMPAT_DECLARE_CSUM	(1u << 3) /* declare blocks hold tags with the data's crc32c */
#define JNL_FEAT_INCOMPAT_KNOWN \
	(JNL_FEAT_INCOMPAT_REVOKE | JNL_FEAT_INCOMPAT_CSUM | JNL_FEAT_INCOMPAT_DECLARE | \
	 JNL_FEAT_INCOMPAT_DECLARE_CSUM)
#define JNL_FEAT_COMPAT_KNOWN		0u
#define JNL_FEAT_RO_COMPAT_KNOWN	0u

/* The journal superblock: block 0 of the region. The rest of the block is zero. */
struct jnl_sb {
/*00*/	struct jg_blk_hdr hdr;		/* JNL_MAGIC_SB; seq = sequence; blkno = region start */
/*20*/	le64 nblocks;			/* blocks of the region, this superblock included */
/*28*/	le64 first;			/* first log block, relative to the region (1) */
/*30*/	le64 start;			/* relative block of the oldest transaction; 0: log empty (clean) */
/*38*/	le64 sequence;			/* tid of the transaction at start (the next one when empty) */
/*40*/	le32 feature_compat;
/*44*/	le32 feature_incompat;
/*48*/	le32 feature_ro_compat;
/*4c*/	le32 max_txn_blocks;		/* largest log footprint of one transaction, in blocks */
/*50*/	uint8_t uuid[16];		/* seeds every checksum of the journal */
/*60*/	le32 data_mode;			/* enum jnl_data_mode of the last writer (informational) */
/*64*/	le32 reserved0;
	/* the transaction a recovery dropped whose declared blocks the filesystem has
	 * not yet settled (jnl_cfg.keep_declared): its first block and tid; 0 none */
/*68*/	le64 settle_start;
/*70*/	le64 settle_sequence;
/*78*/	le64 reserved[17];
};
_Static_assert(sizeof(struct jnl_sb) == 0x100, "jnl_sb size");
_Static_assert(offsetof(struct jnl_sb, nblocks) == 0x20, "jnl_sb.nblocks");
_Static_assert(offsetof(struct jnl_sb, first) == 0x28, "jnl_sb.first");
_Static_assert(offsetof(struct jnl_sb, start) == 0x30, "jnl_sb.start");
_Static_assert(offsetof(struct jnl_sb, sequence) == 0x38, "jnl_sb.sequence");
_Static_assert(offsetof(struct jnl_sb, feature_compat) == 0x40, "jnl_sb.feature_compat");
_Static_assert(offsetof(struct jnl_sb, feature_incompat) == 0x44, "jnl_sb.feature_incompat");
_Static_assert(offsetof(struct jnl_sb, feature_ro_compat) == 0x48, "jnl_sb.feature_ro_compat");
_Static_assert(offsetof(struct jnl_sb, max_txn_blocks) == 0x4c, "jnl_sb.max_txn_blocks");
_Static_assert(offsetof(struct jnl_sb, uuid) == 0x50, "jnl_sb.uuid");
_Static_assert(offsetof(struct jnl_sb, data_mode) == 0x60, "jnl_sb.data_mode");
_Static_assert(offsetof(struct jnl_sb, settle_start) == 0x68, "jnl_sb.settle_start");
_Static_assert(offsetof(struct jnl_sb, settle_sequence) == 0x70, "jnl_sb.settle_sequence");
_Static_assert(offsetof(struct jnl_sb, reserved) == 0x78, "jnl_sb.reserved");

/* Header of descriptor, revoke and declare blocks. */
struct jnl_list_hdr {
/*00*/	struct jg_blk_hdr hdr;
/*20*/	le32 count;			/* entries that follow */
/*24*/	le32 reserved;
};
_Static_assert(sizeof(struct jnl_list_hdr) == 0x28, "jnl_list_hdr size");
_Static_assert(offsetof(struct jnl_list_hdr, count) == 0x20, "jnl_list_hdr.count");

/*
 * One logged block, in a descriptor (the copies follow the descriptor in tag
 * order); or one declared data block, in a declare block (crc of the contents
 * the transaction writes home, flags 0; or JNL_TAG_NO_CRC and crc 0).
 */
struct jnl_tag {
/*00*/	le64 blkno;			/* home address on the device */
/*08*/	le32 flags;			/* JNL_TAG_* */
/*0c*/	le32 crc;			/* crc32c(seed, logged copy as stored in the log, 4096) */
};
_Static_assert(sizeof(struct jnl_tag) == 16, "jnl_tag size");
_Static_assert(offsetof(struct jnl_tag, flags) == 0x08, "jnl_tag.flags");
_Static_assert(offsetof(struct jnl_tag, crc) == 0x0c, "jnl_tag.crc");

/*
 * The logged copy began with a journal magic (0x4a4e4cXX); its first 4 bytes are
 * stored as zero and flags bits 8..15 hold XX, so that no logged copy can pass
 * for a log block.
 */
#define JNL_TAG_ESCAPED (1u << 0)
/*
 * A declare tag without crc (crc 0): written once the transaction has more than
 * JNL_COMMIT_CSUM_MAX_DATA data blocks, so its commit block cannot carry
 * JNL_COMMIT_DATA_CSUM and no recovery reads the crc (FORMAT.md §3.3.3).
 */
#define JNL_TAG_NO_CRC (1u << 1)
#define JNL_TAG_ESCAPE_SHIFT 8
#define JNL_MAGIC_PREFIX 0x4a4e4c00u

/* Descriptor and declare blocks hold tags after the list header. */
#define JNL_DESC_TAGS ((JG_BLOCK_SIZE - sizeof(struct jnl_list_hdr)) / sizeof(struct jnl_tag))
/* Revoke blocks hold le64 block numbers after the list header. */
#define JNL_LIST_ENTRIES ((JG_BLOCK_SIZE - sizeof(struct jnl_list_hdr)) / sizeof(le64))
_Static_assert(JNL_DESC_TAGS == 253, "tags per descriptor or declare block");
_Static_assert(JNL_LIST_ENTRIES == 507, "entries per revoke block");

/* The commit block: the commit point of its transaction. */
struct jnl_commit_blk {
/*00*/	struct jg_blk_hdr hdr;		/* JNL_MAGIC_COMMIT; seq = tid */
/*20*/	le64 txn_first;			/* relative log block where the transaction begins */
/*28*/	le32 txn_blocks;		/* log blocks of the transaction, this one included */
/*2c*/	le32 data_blocks;		/* data blocks the transaction wrote home (informational) */
/*30*/	le64 commit_ns;			/* CLOCK_REALTIME at commit (informational) */
/*38*/	le32 data_mode;			/* enum jnl_data_mode (informational) */
/*3c*/	le32 flags;			/* JNL_COMMIT_* */
};
/*
 * Written in one batch with its data, without PREFLUSH (declared mode, small
 * transactions): it counts only if the data at home matches the declare tags.
 */
#define JNL_COMMIT_DATA_CSUM (1u << 0)
/* Largest declared transaction (data blocks) committed that way: bounds what
 * recovery reads to check it. */
#define JNL_COMMIT_CSUM_MAX_DATA 64u
_Static_assert(sizeof(struct jnl_commit_blk) == 0x40, "jnl_commit_blk size");
_Static_assert(offsetof(struct jnl_commit_blk, txn_first) == 0x20, "jnl_commit_blk.txn_first");
_Static_assert(offsetof(struct jnl_commit_blk, txn_blocks) == 0x28, "jnl_commit_blk.txn_blocks");
_Static_assert(offsetof(struct jnl_commit_blk, data_blocks) == 0x2c, "jnl_commit_blk.data_blocks");
_Static_assert(offsetof(struct jnl_commit_blk, commit_ns) == 0x30, "jnl_commit_blk.commit_ns");
_Static_assert(offsetof(struct jnl_commit_blk, data_mode) == 0x38, "jnl_commit_blk.data_mode");
_Static_assert(offsetof(struct jnl_commit_blk, flags) == 0x3c, "jnl_commit_blk.flags");

#endif /* JGRFS_JNL_FORMAT_H */
