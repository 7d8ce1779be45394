/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_common.h - what the fuzz targets share (docs/FUZZING.md):
 * images kept in memory, the overlay input format, a device that refuses or
 * counts writes, and the seed writer.
 *
 * Overlay input (every target but fuse_ioctl), after the target's own header:
 *
 *	record := sel:u8 flags:u8 bytes[<= 4096]
 *
 * Record i replaces block list[sel % nlist] of the image (the target names its
 * list: the metadata blocks of its structure in the real image made once in
 * LLVMFuzzerInitialize) with its bytes; a short last record replaces the
 * block's start only. flags bit 0 (FZ_RESEAL): recompute the block's
 * jg_blk_hdr crc with the image's seed after the overlay, so that a mutation
 * reaches the parser behind the checksum; without it the checksum check itself
 * is what runs.
 *
 * Seeds: FUZZ_WRITE_CORPUS=<dir> makes LLVMFuzzerInitialize write the target's
 * seeds (records carrying the real blocks unchanged, resealed or not) into
 * <dir> and exit; the replay build (replay_main.c) runs the same code, so the
 * corpus is remade without clang (docs/FUZZING.md).
 */
#ifndef JGRFS_FUZZ_COMMON_H
#define JGRFS_FUZZ_COMMON_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jgrfs/base.h"
#include "jgrfs/blkreq.h"
#include "jgrfs/raid.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_RESEAL 0x01u
#define FZ_REC_HDR 2u
#define FZ_REC_MAX (FZ_REC_HDR + JG_BLOCK_SIZE)

/*
 * The images and so the seeds must be the same on every run: the targets link
 * with -Wl,--wrap for UUIDs (they seed every crc) and the wall clock (the times
 * in superblocks and inodes), tests/fuzz/meson.build.
 */
void __wrap_jg_uuid_generate(uint8_t uuid[16]);
time_t __wrap_time(time_t *t);
int __real_clock_gettime(clockid_t clk, struct timespec *ts);
int __wrap_clock_gettime(clockid_t clk, struct timespec *ts);

void __wrap_jg_uuid_generate(uint8_t uuid[16])
{
	static uint8_t next = 1;

	for (unsigned int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(next * 0x9du + i * 0x3bu + 1u);
	next++;
}

#define FZ_EPOCH 1764979200 /* 2025-12-06 00:00:00 UTC */

time_t __wrap_time(time_t *t)
{
	if (t)
		*t = FZ_EPOCH;
	return FZ_EPOCH;
}

int __wrap_clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clk != CLOCK_REALTIME)
		return __real_clock_gettime(clk, ts);
	ts->tv_sec = FZ_EPOCH;
	ts->tv_nsec = 0;
	return 0;
}

/* Die loudly: the fuzzer reports an abort as a crash, with the input. */
#define FZ_ASSERT(cond)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "fuzz: %s:%d: property violated: %s\n", __FILE__, \
				__LINE__, #cond);                                         \
			abort();                                                          \
		}                                                                         \
	} while (0)

static void fz_log_drop(void *ctx, int level, const char *subsys, const char *msg)
{
	(void)ctx;
	(void)level;
	(void)subsys;
	(void)msg;
}

/* Bad input logs an error per execution: keep the output readable (FUZZ_VERBOSE=1 shows it). */
static inline void fz_quiet(void)
{
	if (!getenv("FUZZ_VERBOSE"))
		jg_log_set_sink(fz_log_drop, NULL);
}

/* ------------------------------------------------------------------ images */

/* A device's whole content, kept between executions. */
struct fz_image {
	uint64_t nblocks;
	uint8_t *data;
	uint64_t *used;		/* the blocks not all zero: all a fresh memory device lacks */
	uint64_t nused;
};

static inline uint8_t *fz_blk(const struct fz_image *im, uint64_t b)
{
	return im->data + b * JG_BLOCK_SIZE;
}

static inline bool fz_zero(const uint8_t *b)
{
	for (size_t i = 0; i < JG_BLOCK_SIZE; i++)
		if (b[i])
			return false;
	return true;
}

static inline void fz_image_index(struct fz_image *im)
{
	free(im->used);
	im->used = calloc(im->nblocks, sizeof(*im->used));
	FZ_ASSERT(im->used);
	im->nused = 0;
	for (uint64_t b = 0; b < im->nblocks; b++)
		if (!fz_zero(fz_blk(im, b)))
			im->used[im->nused++] = b;
}

/* Read all of @dev into @im. */
static inline void fz_image_capture(struct fz_image *im, struct blk_dev *dev)
{
	im->nblocks = dev->nblocks;
	im->data = jg_alloc_blocks(im->nblocks);
	FZ_ASSERT(im->data);
	FZ_ASSERT(blk_rw(dev, BLK_OP_READ, 0, (uint32_t)im->nblocks, im->data, 0) == 0);
	fz_image_index(im);
}

static inline void fz_image_free(struct fz_image *im)
{
	free(im->data);
	free(im->used);
	memset(im, 0, sizeof(*im));
}

/* A memory device holding @im (only its used blocks are written). */
static inline struct blk_dev *fz_image_dev(const struct fz_image *im, const char *name)
{
	struct blk_dev *d = NULL;

	FZ_ASSERT(raid_dev_mem_open(name, im->nblocks, &d) == 0);
	for (uint64_t i = 0; i < im->nused; i++)
		FZ_ASSERT(blk_rw(d, BLK_OP_WRITE, im->used[i], 1, fz_blk(im, im->used[i]), 0) == 0);
	return d;
}

/* true when @dev holds exactly @im. */
static inline bool fz_image_same(const struct fz_image *im, struct blk_dev *dev)
{
	uint8_t *b = jg_alloc_blocks(1);
	bool same = true;

	FZ_ASSERT(b);
	for (uint64_t i = 0; i < im->nblocks && same; i++) {
		FZ_ASSERT(blk_rw(dev, BLK_OP_READ, i, 1, b, 0) == 0);
		same = memcmp(b, fz_blk(im, i), JG_BLOCK_SIZE) == 0;
		if (!same)
			fprintf(stderr, "fuzz: %s: block %llu written\n", dev->name,
				(unsigned long long)i);
	}
	free(b);
	return same;
}

/* --------------------------------------------------------------- overlays */

/* The blocks a target's records address: block @blkno of device @unit, as the real image holds it. */
struct fz_list {
	unsigned int n;
	struct {
		unsigned int unit;
		uint64_t blkno;
		const uint8_t *orig;
	} e[256];
};

static inline void fz_list_add(struct fz_list *l, unsigned int unit, const struct fz_image *im,
			       uint64_t blkno)
{
	if (l->n < 256 && blkno < im->nblocks) {
		l->e[l->n].unit = unit;
		l->e[l->n].blkno = blkno;
		l->e[l->n].orig = fz_blk(im, blkno);
		l->n++;
	}
}

/* Add every block of @im (in [from, to)) whose header carries one of @magics. */
static inline void fz_list_magic(struct fz_list *l, unsigned int unit, const struct fz_image *im,
				 uint64_t from, uint64_t to, const uint32_t *magics,
				 unsigned int nmagics)
{
	for (uint64_t b = from; b < to && b < im->nblocks; b++) {
		const struct jg_blk_hdr *h = (const struct jg_blk_hdr *)fz_blk(im, b);

		for (unsigned int i = 0; i < nmagics; i++)
			if (jg_le32(h->magic) == magics[i])
				fz_list_add(l, unit, im, b);
	}
}

/*
 * Write the records of @data over the devices @devs (indexed by unit), each
 * block taken from the real image, overlaid, resealed when asked. Returns the
 * count of records applied.
 */
static inline unsigned int fz_overlay(const struct fz_list *l, uint32_t seed, const uint8_t *data,
				      size_t size, struct blk_dev *const *devs)
{
	uint8_t *blk;
	unsigned int n = 0;

	if (!l->n)
		return 0;
	blk = jg_alloc_blocks(1);
	FZ_ASSERT(blk);
	while (size >= FZ_REC_HDR) {
		size_t len = size - FZ_REC_HDR < JG_BLOCK_SIZE ? size - FZ_REC_HDR : JG_BLOCK_SIZE;
		unsigned int sel = data[0] % l->n;

		memcpy(blk, l->e[sel].orig, JG_BLOCK_SIZE);
		memcpy(blk, data + FZ_REC_HDR, len);
		if (data[1] & FZ_RESEAL)
			jg_blk_crc_set(blk, JG_BLOCK_SIZE, seed);
		FZ_ASSERT(blk_rw(devs[l->e[sel].unit], BLK_OP_WRITE, l->e[sel].blkno, 1, blk, 0) == 0);
		data += FZ_REC_HDR + len;
		size -= FZ_REC_HDR + len;
		n++;
	}
	free(blk);
	return n;
}

/* ------------------------------------------------------------------- seeds */

struct fz_seed {
	uint8_t *buf;
	size_t len;
};

static inline void fz_seed_bytes(struct fz_seed *s, const void *p, size_t n)
{
	s->buf = realloc(s->buf, s->len + n);
	FZ_ASSERT(s->buf);
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

/* A record that puts list entry @sel back as it is in the real image. */
static inline void fz_seed_record(struct fz_seed *s, const struct fz_list *l, unsigned int sel,
				  uint8_t flags)
{
	uint8_t hdr[FZ_REC_HDR] = {(uint8_t)sel, flags};

	fz_seed_bytes(s, hdr, sizeof(hdr));
	fz_seed_bytes(s, l->e[sel].orig, JG_BLOCK_SIZE);
}

/* Write @s as <FUZZ_WRITE_CORPUS>/@name and free it. */
static inline void fz_seed_write(struct fz_seed *s, const char *name)
{
	const char *dir = getenv("FUZZ_WRITE_CORPUS");
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	FZ_ASSERT(f);
	FZ_ASSERT(fwrite(s->buf, 1, s->len, f) == s->len);
	FZ_ASSERT(fclose(f) == 0);
	fprintf(stderr, "fuzz: wrote %s (%zu bytes)\n", path, s->len);
	free(s->buf);
	s->buf = NULL;
	s->len = 0;
}

static inline bool fz_writing_corpus(void)
{
	return getenv("FUZZ_WRITE_CORPUS") != NULL;
}

/* ----------------------------------------------------- write guard device */

/*
 * Passes every request to @lower (not owned) and counts writes; with @forbid a
 * write is a property violation (abort): fsck -n, readonly assembly.
 */
struct fz_guard {
	struct blk_dev dev;
	struct blk_dev *lower;
	uint64_t writes;
	bool forbid;
};

static inline int fz_guard_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct fz_guard *g = (struct fz_guard *)d;

	for (unsigned int i = 0; i < n; i++) {
		if (r[i].op != BLK_OP_WRITE)
			continue;
		g->writes++;
		if (g->forbid) {
			fprintf(stderr, "fuzz: write to %s block %llu where nothing may be written\n",
				d->name, (unsigned long long)r[i].blkno);
			abort();
		}
	}
	return blk_submit(g->lower, r, n);
}

static inline int fz_guard_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	return blk_ctl(((struct fz_guard *)d)->lower, cmd, arg);
}

static inline void fz_guard_close(struct blk_dev *d)
{
	free(d);
}

static const struct blk_dev_ops fz_guard_ops = {
    .submit = fz_guard_submit,
    .ctl = fz_guard_ctl,
    .close = fz_guard_close,
};

static inline struct fz_guard *fz_guard_new(struct blk_dev *lower, bool forbid)
{
	struct fz_guard *g = calloc(1, sizeof(*g));

	FZ_ASSERT(g);
	g->dev.ops = &fz_guard_ops;
	g->dev.nblocks = lower->nblocks;
	snprintf(g->dev.name, sizeof(g->dev.name), "%s", lower->name);
	g->lower = lower;
	g->forbid = forbid;
	return g;
}

#endif /* JGRFS_FUZZ_COMMON_H */
