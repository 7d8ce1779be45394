// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_raid_assemble.c - raid_assemble() over member superblocks
 * (both copies) and bitmap blocks of several members, on memory devices.
 *
 * Input:
 *	variant:u8 missing:u8 cfg:u8 record*	(records: fuzz_common.h)
 *
 * variant % 3 picks a real array made once: 0 RAID5 of 3 members, bitmap
 * policy, left dirty with bits set (a crash); 1 RAID6 of 4, journal policy,
 * jnl-pending, dirty; 2 RAID4 of 5, full policy, stopped clean. Members are
 * 48 blocks. Records address the superblock copies and bitmap blocks of every
 * member (member-major order). missing: bit i leaves member i out (NULL);
 * cfg: bit 0 force, bit 1 readonly, bit 2 no_resync, bit 3 hand the members
 * over in reverse order.
 *
 * Properties (abort): a refused assembly writes nothing (every member as it
 * was after the overlay); a readonly assembly never writes.
 */
#include "fuzz_common.h"
#include "raid_format.h"

#define FZ_VARIANTS 3u
#define FZ_MEMBER_BLOCKS 48u

struct fz_variant {
	unsigned int level, n;
	uint32_t chunk;
	enum raid_resync_policy pol;
	struct fz_image im[5];
	struct fz_list list;
	uint32_t seed;
};

static struct fz_variant fz_v[FZ_VARIANTS] = {
	{.level = 5, .n = 3, .chunk = 2, .pol = RAID_RESYNC_BITMAP},
	{.level = 6, .n = 4, .chunk = 1, .pol = RAID_RESYNC_JOURNAL},
	{.level = 4, .n = 5, .chunk = 4, .pol = RAID_RESYNC_FULL},
};

/* A pass-through device that leaves its lower device open on close. */
static struct blk_dev *fz_keep(struct blk_dev *lower, bool forbid)
{
	return &fz_guard_new(lower, forbid)->dev;
}

static void fz_make(unsigned int vi)
{
	struct fz_variant *v = &fz_v[vi];
	struct raid_create_cfg cfg = { .assume_clean = true, /* zeroed new members */.level = v->level, .chunk_blocks = v->chunk, .resync = v->pol,
				      .bitmap_region_blocks = 4};
	struct blk_dev *mem[5], *devs[5];
	struct raid_array *a = NULL;
	uint8_t *buf = jg_alloc_blocks(1);

	for (unsigned int i = 0; i < v->n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "m%u", i);
		FZ_ASSERT(raid_dev_mem_open(name, FZ_MEMBER_BLOCKS, &mem[i]) == 0);
		devs[i] = fz_keep(mem[i], false);
	}
	FZ_ASSERT(raid_create(devs, v->n, &cfg, false) == 0);
	for (unsigned int i = 0; i < v->n; i++) {
		blk_close(devs[i]); /* raid_create leaves them to us */
		devs[i] = fz_keep(mem[i], false);
	}
	FZ_ASSERT(raid_assemble(devs, v->n, NULL, &a) == 0);
	if (v->pol == RAID_RESYNC_JOURNAL)
		FZ_ASSERT(blk_ctl(raid_array_dev(a), BLK_CTL_SET_JNL_PENDING, NULL) == 0);
	for (uint64_t b = 0; b < raid_array_dev(a)->nblocks; b += 5) {
		memset(buf, (int)(b + 1), JG_BLOCK_SIZE);
		FZ_ASSERT(blk_rw(raid_array_dev(a), BLK_OP_WRITE, b, 1, buf, 0) == 0);
	}
	if (v->pol == RAID_RESYNC_FULL)
		FZ_ASSERT(raid_stop(a) == 0);
	else
		raid_abandon(a); /* a crash: dirty, bits set */
	for (unsigned int i = 0; i < v->n; i++) {
		fz_image_capture(&v->im[i], mem[i]);
		blk_close(mem[i]);
	}
	for (unsigned int i = 0; i < v->n; i++) {
		const struct raid_sb *sb = (const struct raid_sb *)fz_blk(&v->im[i], 0);
		uint64_t bitmap_end = RAID_BITMAP_BLKNO + jg_le32(sb->bitmap_blocks);

		fz_list_add(&v->list, i, &v->im[i], RAID_SB_BLKNO);
		fz_list_add(&v->list, i, &v->im[i], RAID_SB_COPY_BLKNO);
		for (uint64_t b = RAID_BITMAP_BLKNO; b < bitmap_end; b++)
			fz_list_add(&v->list, i, &v->im[i], b);
	}
	v->seed = jg_crc_seed(((const struct raid_sb *)fz_blk(&v->im[0], 0))->uuid);
	free(buf);
}

/* Seeds: per variant, the array as it is, and one record per structure kind. */
static void fz_write_corpus(void)
{
	for (unsigned int vi = 0; vi < FZ_VARIANTS; vi++) {
		const struct fz_variant *v = &fz_v[vi];
		struct fz_seed s = {0};
		char name[64];
		uint8_t hdr[3] = {(uint8_t)vi, 0, 0};

		fz_seed_bytes(&s, hdr, sizeof(hdr));
		snprintf(name, sizeof(name), "v%u-plain", vi);
		fz_seed_write(&s, name);
		/* refusals: two members missing (too few for RAID4/5; dirty and degraded
		 * for RAID6), and one missing of a dirty array without force (variant 2
		 * is clean: it assembles degraded) */
		hdr[1] = 3;
		fz_seed_bytes(&s, hdr, sizeof(hdr));
		snprintf(name, sizeof(name), "v%u-two-missing", vi);
		fz_seed_write(&s, name);
		hdr[1] = 4;
		fz_seed_bytes(&s, hdr, sizeof(hdr));
		snprintf(name, sizeof(name), "v%u-degraded", vi);
		fz_seed_write(&s, name);
		hdr[1] = 0;
		for (unsigned int sel = 0; sel < v->list.n && sel < 4; sel++) {
			hdr[1] = (uint8_t)(sel == 3 ? 1u : 0u); /* one with member 0 missing */
			hdr[2] = (uint8_t)sel;			/* force, readonly, both */
			fz_seed_bytes(&s, hdr, sizeof(hdr));
			fz_seed_record(&s, &v->list, sel, FZ_RESEAL);
			snprintf(name, sizeof(name), "v%u-blk%u", vi, sel);
			fz_seed_write(&s, name);
		}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	for (unsigned int vi = 0; vi < FZ_VARIANTS; vi++)
		fz_make(vi);
	if (fz_writing_corpus()) {
		fz_write_corpus();
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct raid_assemble_cfg cfg = {0};
	struct fz_image snap[5] = {{0}};
	struct blk_dev *mem[5], *devs[5] = {0};
	struct fz_variant *v;
	struct raid_array *a = NULL;
	uint8_t missing, flags;
	int rc;

	if (size < 3)
		return 0;
	v = &fz_v[data[0] % FZ_VARIANTS];
	missing = data[1];
	flags = data[2];
	cfg.force = flags & 1;
	cfg.readonly = flags & 2;
	cfg.no_resync = flags & 4;
	for (unsigned int i = 0; i < v->n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "m%u", i);
		mem[i] = fz_image_dev(&v->im[i], name);
	}
	fz_overlay(&v->list, v->seed, data + 3, size - 3, mem);
	for (unsigned int i = 0; i < v->n; i++) {
		unsigned int slot = (flags & 8) ? v->n - 1 - i : i;

		fz_image_capture(&snap[i], mem[i]);
		if (!(missing & (1u << i)))
			devs[slot] = fz_keep(mem[i], cfg.readonly);
	}
	rc = raid_assemble(devs, v->n, &cfg, &a);
	if (rc == 0) {
		struct blk_dev *ad = raid_array_dev(a);
		uint8_t *buf = jg_alloc_blocks(4);

		FZ_ASSERT(buf);
		/* reads may fail on a degraded array with damage; they must not crash */
		for (uint64_t b = 0; b < ad->nblocks; b += 4)
			(void)blk_rw(ad, BLK_OP_READ, b, ad->nblocks - b < 4 ? (uint32_t)(ad->nblocks - b) : 4,
				     buf, 0);
		free(buf);
		(void)raid_stop(a);
	} else {
		for (unsigned int i = 0; i < v->n; i++)
			blk_close(devs[i]);
	}
	for (unsigned int i = 0; i < v->n; i++) {
		if (rc != 0 || cfg.readonly)
			FZ_ASSERT(fz_image_same(&snap[i], mem[i]));
		fz_image_free(&snap[i]);
		blk_close(mem[i]);
	}
	return 0;
}
