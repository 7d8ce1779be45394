// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_jnl_recover.c - journal recovery (jnl_open, jnl_recover: scan,
 * revoke, replay and the declared passes, then jnl_close) over a log region on
 * a memory device.
 *
 * Input:
 *	variant:u8 cfg:u8 record*	(records: fuzz_common.h)
 *
 * variant % 2 picks a real log made once and left by a crash (jnl_abandon):
 * 0 data=declared: committed transactions of metadata, of declared data
 * (declare blocks), of small data logged like metadata (log_data_max), a revoke,
 * and a last transaction whose data went home early under its declare block but
 * never committed; 1 data=journal: logged data (one copy beginning with a log
 * magic, so escaped), metadata, revokes. Records address the journal
 * superblock and every log block written (and the two after the last).
 * cfg: bit 0 readonly recovery (fsck -n: must write nothing), bit 1 read
 * every block the transactions touched through the journal afterwards.
 */
#include "fuzz_common.h"
#include "jnl_format.h"
#include "jgrfs/journal.h"

#define FZ_DEV_BLOCKS 1400u
#define FZ_JSTART 320u
#define FZ_JBLOCKS 1024u

struct fz_variant {
	enum jnl_data_mode mode;
	struct fz_image im;
	struct fz_list list;
};

static struct fz_variant fz_v[2] = {{.mode = JNL_DATA_DECLARED}, {.mode = JNL_DATA_JOURNAL}};
static uint32_t fz_seed;
static const uint8_t fz_uuid[16] = {0x6a, 0x67, 0x72, 0x66, 0x73, 0x2d, 0x66, 0x75,
				    0x7a, 0x7a, 0x2d, 0x6a, 0x6e, 0x6c, 0x00, 0x01};

static void fz_fill(uint8_t *b, uint64_t blkno, uint32_t ver)
{
	for (size_t i = 0; i < JG_BLOCK_SIZE; i++)
		b[i] = (uint8_t)(blkno * 7 + ver * 13 + i);
}

/* One handle: @n blocks from @first, metadata or data; @revoke: then revoke @first. */
static void fz_txn(struct jnl *j, uint64_t first, unsigned int n, uint32_t ver, bool meta,
		   bool journal_mode)
{
	struct jnl_handle *h = NULL;
	uint8_t *b = jg_alloc_blocks(1);

	FZ_ASSERT(jnl_handle_start(j, meta || journal_mode ? n + 1 : 1, &h) == 0);
	for (unsigned int i = 0; i < n; i++) {
		fz_fill(b, first + i, ver);
		if (meta)
			FZ_ASSERT(jnl_handle_dirty_meta(h, first + i, b) == 0);
		else
			FZ_ASSERT(jnl_handle_dirty_data(h, first + i, b) == 0);
	}
	FZ_ASSERT(jnl_handle_stop(h) == 0);
	free(b);
}

static void fz_revoke(struct jnl *j, uint64_t blkno)
{
	struct jnl_handle *h = NULL;

	FZ_ASSERT(jnl_handle_start(j, 1, &h) == 0);
	FZ_ASSERT(jnl_handle_revoke(h, blkno) == 0);
	FZ_ASSERT(jnl_handle_stop(h) == 0);
}

static void fz_make(struct fz_variant *v, unsigned int unit)
{
	struct jnl_cfg cfg = {.start_blkno = FZ_JSTART, .nblocks = FZ_JBLOCKS, .mode = v->mode,
			      .no_commit_thread = true, .max_txn_data_blocks = 8,
			      .log_data_max = v->mode == JNL_DATA_DECLARED ? 2 : 0};
	struct jnl_recovery_report rep;
	bool jm = v->mode == JNL_DATA_JOURNAL;
	struct blk_dev *d = NULL;
	struct jnl *j = NULL;
	uint64_t last = FZ_JSTART;

	FZ_ASSERT(raid_dev_mem_open("mem0", FZ_DEV_BLOCKS, &d) == 0);
	FZ_ASSERT(jnl_format(d, FZ_JSTART, FZ_JBLOCKS, fz_uuid) == 0);
	FZ_ASSERT(jnl_open(d, &cfg, &j) == 0);
	FZ_ASSERT(jnl_recover(j, &rep) == 0);
	FZ_ASSERT(jnl_start(j) == 0);
	fz_txn(j, 10, 3, 1, true, jm);		/* metadata */
	fz_txn(j, 100, 4, 1, false, jm);	/* data: declared, or logged */
	FZ_ASSERT(jnl_commit(j, 0, true) == 0);
	fz_txn(j, 11, 2, 2, true, jm);
	fz_revoke(j, 12);			/* revokes the copy of tid 1 */
	fz_txn(j, 110, 1, 2, false, jm);	/* declared: small, logged (log_data_max) */
	FZ_ASSERT(jnl_commit(j, 0, true) == 0);
	if (jm) {
		struct jnl_handle *h = NULL;
		uint8_t *b = jg_alloc_blocks(1);
		le32 magic = jg_cpu_to_le32(JNL_MAGIC_DESC);

		/* a data block that looks like a log block: logged escaped (FORMAT.md §3.3) */
		fz_fill(b, 120, 3);
		memcpy(b, &magic, sizeof(magic));
		FZ_ASSERT(jnl_handle_start(j, 2, &h) == 0);
		FZ_ASSERT(jnl_handle_dirty_data(h, 120, b) == 0);
		FZ_ASSERT(jnl_handle_stop(h) == 0);
		FZ_ASSERT(jnl_commit(j, 0, true) == 0);
		free(b);
	} else {
		/* more data than max_txn_data_blocks: early batches under declare blocks,
		 * then the crash before the commit */
		fz_txn(j, 10, 1, 3, true, jm);
		fz_txn(j, 200, 12, 3, false, jm);
	}
	jnl_abandon(j);
	fz_image_capture(&v->im, d);
	blk_close(d);

	fz_list_add(&v->list, unit, &v->im, FZ_JSTART);
	for (uint64_t b = FZ_JSTART + 1; b < FZ_JSTART + FZ_JBLOCKS; b++) {
		if (!fz_zero(fz_blk(&v->im, b))) {
			fz_list_add(&v->list, unit, &v->im, b);
			last = b;
		}
	}
	fz_list_add(&v->list, unit, &v->im, last + 1);
	fz_list_add(&v->list, unit, &v->im, last + 2);
}

/* Seeds: the log as the crash left it, and each of its first blocks resealed. */
static void fz_write_corpus(void)
{
	for (unsigned int vi = 0; vi < 2; vi++) {
		const struct fz_variant *v = &fz_v[vi];
		struct fz_seed s = {0};
		char name[64];
		uint8_t hdr[2] = {(uint8_t)vi, 0};

		fz_seed_bytes(&s, hdr, sizeof(hdr));
		snprintf(name, sizeof(name), "v%u-plain", vi);
		fz_seed_write(&s, name);
		for (unsigned int sel = 0; sel < v->list.n && sel < 6; sel++) {
			const struct jg_blk_hdr *h = (const struct jg_blk_hdr *)v->list.e[sel].orig;
			bool logblk = (jg_le32(h->magic) & 0xffffff00u) == JNL_MAGIC_PREFIX;

			hdr[1] = (uint8_t)(sel & 3);
			fz_seed_bytes(&s, hdr, sizeof(hdr));
			/* logged copies carry no header: a reseal would change them */
			fz_seed_record(&s, &v->list, sel, logblk ? FZ_RESEAL : 0);
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
	fz_seed = jg_crc_seed(fz_uuid);
	for (unsigned int vi = 0; vi < 2; vi++)
		fz_make(&fz_v[vi], 0);
	if (fz_writing_corpus()) {
		fz_write_corpus();
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jnl_recovery_report rep;
	struct fz_variant *v;
	struct blk_dev *mem;
	struct fz_guard *g;
	struct jnl_cfg cfg;
	struct jnl *j = NULL;
	bool ro;
	int rc;

	if (size < 2)
		return 0;
	v = &fz_v[data[0] % 2];
	ro = data[1] & 1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.start_blkno = FZ_JSTART;
	cfg.nblocks = FZ_JBLOCKS;
	cfg.mode = v->mode;
	cfg.no_commit_thread = true;
	cfg.readonly = ro;
	mem = fz_image_dev(&v->im, "mem0");
	fz_overlay(&v->list, fz_seed, data + 2, size - 2, &mem);
	g = fz_guard_new(mem, ro);
	rc = jnl_open(&g->dev, &cfg, &j);
	FZ_ASSERT(rc == 0 || g->writes == 0); /* a refused log is left as it is */
	if (rc == 0) {
		rc = jnl_recover(j, &rep);
		if (rc == 0 && (data[1] & 2)) {
			uint8_t *b = jg_alloc_blocks(1);
			static const uint64_t blks[] = {10, 11, 12, 13, 100, 103, 110, 120, 200, 211};

			FZ_ASSERT(b);
			for (size_t i = 0; i < sizeof(blks) / sizeof(blks[0]); i++)
				(void)jnl_read(j, blks[i], 1, b);
			free(b);
		}
		if (rc == 0 && !ro) {
			rc = jnl_start(j);
			if (rc == 0)
				(void)jnl_close(j);
			else
				jnl_abandon(j);
		} else {
			jnl_abandon(j);
		}
	}
	FZ_ASSERT(!ro || g->writes == 0);
	blk_close(&g->dev);
	blk_close(mem);
	return 0;
}
