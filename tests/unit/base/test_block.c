// SPDX-License-Identifier: MIT
/*
 * tests/unit/base/test_block.c - crc32c known answers, the block header, and the
 * memory, fault and io_uring member devices.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "jgrfs/base.h"
#include "jgrfs/raid.h"

/* Pins the ISA-L call: standard CRC-32C of "123456789" is 0xe3069283. */
static void test_crc32c_known_answer(void **state)
{
	(void)state;
	assert_int_equal(~jg_crc32c(~0u, "123456789", 9), 0xe3069283u);
	/* seed 0 over zeros gives 0: the trap the never-zero seed avoids */
	uint8_t z[64] = { 0 };
	assert_int_equal(jg_crc32c(0, z, sizeof(z)), 0);
}

static void test_crc_seed_never_zero(void **state)
{
	uint8_t uuid[16] = { 0 };

	(void)state;
	assert_int_not_equal(jg_crc_seed(uuid), 0);
	jg_uuid_generate(uuid);
	assert_int_not_equal(jg_crc_seed(uuid), 0);
	assert_false(jg_uuid_is_zero(uuid));
}

static void test_blk_seal_check(void **state)
{
	uint8_t *b = jg_zalloc_blocks(1);
	uint32_t seed = 0x12345678;

	(void)state;
	memset(b + 64, 0xab, 100);
	jg_blk_seal(b, JG_BLOCK_SIZE, 0x4a470001, 1, 0, 7, 42, seed);
	assert_int_equal(jg_blk_check(b, JG_BLOCK_SIZE, 0x4a470001, 1, 42, seed, "test", "blk", "mem"), 0);
	/* wrong home address, newer version, wrong magic, a flipped bit, a zero block */
	assert_int_equal(jg_blk_check(b, JG_BLOCK_SIZE, 0x4a470001, 1, 43, seed, "test", "blk", "mem"), -EUCLEAN);
	assert_int_equal(jg_blk_check(b, JG_BLOCK_SIZE, 0x4a470001, 0, 42, seed, "test", "blk", "mem"), -EOPNOTSUPP);
	assert_int_equal(jg_blk_check(b, JG_BLOCK_SIZE, 0x4a470002, 1, 42, seed, "test", "blk", "mem"), -EUCLEAN);
	b[100] ^= 1;
	assert_int_equal(jg_blk_check(b, JG_BLOCK_SIZE, 0x4a470001, 1, 42, seed, "test", "blk", "mem"), -EUCLEAN);
	memset(b, 0, JG_BLOCK_SIZE);
	assert_false(jg_blk_crc_ok(b, JG_BLOCK_SIZE, seed));
	free(b);
}

static void test_seq_after_wraps(void **state)
{
	(void)state;
	assert_true(jg_seq_after(2, 1));
	assert_false(jg_seq_after(1, 1));
	assert_true(jg_seq_after(0, UINT64_MAX));
	assert_false(jg_seq_after(UINT64_MAX, 0));
}

static void test_dev_mem_rw(void **state)
{
	struct blk_dev *d;
	uint8_t *w = jg_alloc_blocks(2), *r = jg_alloc_blocks(2);

	(void)state;
	assert_int_equal(raid_dev_mem_open("m", 16, &d), 0);
	memset(w, 0x5a, 2 * JG_BLOCK_SIZE);
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, 14, 2, w, 0), 0);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 14, 2, r, 0), 0);
	assert_memory_equal(w, r, 2 * JG_BLOCK_SIZE);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 15, 2, r, 0), -EINVAL);
	assert_int_equal(blk_flush(d), 0);
	blk_close(d);
	free(w);
	free(r);
}

/* A memory device of @blocks under a fault device of a new domain with @cfg. */
static void t_fault_open(const struct raid_fault_cfg *cfg, uint64_t blocks,
			 struct raid_fault_domain **dom, struct blk_dev **m, struct blk_dev **f)
{
	assert_int_equal(raid_dev_mem_open("m", blocks, m), 0);
	assert_int_equal(raid_fault_domain_new(cfg, dom), 0);
	assert_int_equal(raid_dev_fault_open(*dom, *m, f), 0);
}

static void t_fault_close(struct raid_fault_domain *dom, struct blk_dev *m, struct blk_dev *f)
{
	blk_close(f);
	blk_close(m);
	raid_fault_domain_free(dom);
}

/* A power cut reverts unflushed writes only, and drops every later write. */
static void test_dev_fault_power_cut(void **state)
{
	struct raid_fault_cfg cfg = { .cut_after_writes = 4, .seed = 1, .keep_percent = 0 };
	struct raid_fault_domain *dom;
	struct blk_dev *m, *f;
	uint8_t *b = jg_alloc_blocks(1);

	(void)state;
	t_fault_open(&cfg, 8, &dom, &m, &f);
	memset(b, 1, JG_BLOCK_SIZE);
	assert_int_equal(blk_rw(f, BLK_OP_WRITE, 0, 1, b, 0), 0);	/* write 1, flushed */
	assert_int_equal(blk_flush(f), 0);
	memset(b, 2, JG_BLOCK_SIZE);
	assert_int_equal(blk_rw(f, BLK_OP_WRITE, 0, 1, b, 0), 0);	/* write 2, unflushed */
	assert_int_equal(blk_rw(f, BLK_OP_WRITE, 1, 1, b, BLK_FUA), 0); /* write 3, durable */
	assert_false(raid_fault_domain_is_cut(dom));
	assert_int_equal(blk_rw(f, BLK_OP_WRITE, 2, 1, b, 0), 0);	/* write 4: the cut */
	assert_true(raid_fault_domain_is_cut(dom));
	assert_int_equal(blk_rw(f, BLK_OP_WRITE, 3, 1, b, 0), 0);	/* dropped */
	assert_int_equal(raid_fault_domain_writes(dom), 5);

	assert_int_equal(blk_rw(m, BLK_OP_READ, 0, 1, b, 0), 0);
	assert_int_equal(b[0], 1);	/* keep_percent 0: the unflushed write reverted */
	assert_int_equal(blk_rw(m, BLK_OP_READ, 1, 1, b, 0), 0);
	assert_int_equal(b[0], 2);	/* FUA survived */
	assert_int_equal(blk_rw(m, BLK_OP_READ, 2, 1, b, 0), 0);
	assert_int_equal(b[0], 0);	/* the cut write never happened */
	assert_int_equal(blk_rw(m, BLK_OP_READ, 3, 1, b, 0), 0);
	assert_int_equal(b[0], 0);
	t_fault_close(dom, m, f);
	free(b);
}

/*
 * A FUA write over unflushed writes of the same blocks is what the disk holds
 * after the cut, whole or torn: reverting the older writes must not bring back
 * bytes from before it.
 */
static void test_dev_fault_fua_supersedes_pending(void **state)
{
	(void)state;
	for (int tear = 0; tear < 2; tear++) {
		struct raid_fault_cfg cfg = { .cut_after_writes = 4, .seed = 5, .keep_percent = 0,
					      .tear = tear };
		struct raid_fault_domain *dom;
		struct blk_dev *m, *f;
		uint8_t *b = jg_alloc_blocks(3);

		t_fault_open(&cfg, 8, &dom, &m, &f);
		memset(b, 1, 3 * JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(f, BLK_OP_WRITE, 0, 3, b, 0), 0);	/* 0-2 unflushed */
		memset(b, 2, 3 * JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(f, BLK_OP_WRITE, 1, 1, b, 0), 0);	/* 1 again */
		memset(b, 3, JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(f, BLK_OP_WRITE, 1, 1, b, BLK_FUA), 0); /* 1 durable */
		assert_int_equal(blk_rw(f, BLK_OP_WRITE, 5, 1, b, 0), 0);	/* the cut */
		assert_true(raid_fault_domain_is_cut(dom));
		assert_int_equal(blk_rw(m, BLK_OP_READ, 0, 3, b, 0), 0);
		for (size_t i = 0; i < JG_BLOCK_SIZE; i++) {
			if (b[JG_BLOCK_SIZE + i] != 3)
				fail_msg("tear=%d: block 1 byte %zu is %u after the cut, FUA wrote 3",
					 tear, i, b[JG_BLOCK_SIZE + i]);
			if (!tear && (b[i] != 0 || b[2 * JG_BLOCK_SIZE + i] != 0))
				fail_msg("blocks 0 and 2 were never flushed: reverted to 0");
		}
		t_fault_close(dom, m, f);
		free(b);
	}
}

/*
 * (Z2) Two fault devices over one lower device are one disk opened twice (a
 * member readded on the same file): a flush or a FUA write through the new one
 * covers what landed through the old one, so a cut brings back neither the
 * bytes from before the old write nor, for a FUA write, the old write itself.
 */
static void test_dev_fault_shared_disk(void **state)
{
	(void)state;
	for (int fua = 0; fua < 2; fua++) {
		struct raid_fault_cfg cfg = { .cut_after_writes = 4, .seed = 3, .keep_percent = 0 };
		struct raid_fault_domain *dom;
		struct blk_dev *m, *old, *cur;
		uint8_t *b = jg_alloc_blocks(2);

		t_fault_open(&cfg, 8, &dom, &m, &old);
		assert_int_equal(raid_dev_fault_open(dom, m, &cur), 0);
		memset(b, 1, 2 * JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(old, BLK_OP_WRITE, 0, 2, b, 0), 0);	/* 0-1 unflushed */
		memset(b, 2, JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(cur, BLK_OP_WRITE, 0, 1, b, fua ? BLK_FUA : 0), 0);
		if (!fua)
			assert_int_equal(blk_flush(cur), 0);	/* the disk's whole cache */
		assert_int_equal(blk_rw(cur, BLK_OP_WRITE, 2, 1, b, 0), 0);
		assert_int_equal(blk_rw(cur, BLK_OP_WRITE, 5, 1, b, 0), 0);	/* the cut */
		assert_true(raid_fault_domain_is_cut(dom));
		assert_int_equal(blk_rw(m, BLK_OP_READ, 0, 2, b, 0), 0);
		if (b[0] != 2)
			fail_msg("fua=%d: block 0 holds %u after the cut; the new device's durable write put 2 there",
				 fua, b[0]);
		/* block 1: flushed with the disk (1), or, after only a FUA write of
		 * block 0, still unflushed and reverted (0) */
		if (b[JG_BLOCK_SIZE] != (fua ? 0 : 1))
			fail_msg("fua=%d: block 1 holds %u after the cut", fua, b[JG_BLOCK_SIZE]);
		blk_close(cur);
		t_fault_close(dom, m, old);
		free(b);
	}
}

static void test_dev_fault_tear_is_seeded(void **state)
{
	uint8_t out[2][JG_BLOCK_SIZE];

	(void)state;
	for (int run = 0; run < 2; run++) {
		struct raid_fault_cfg cfg = { .cut_after_writes = 2, .seed = 99, .keep_percent = 0, .tear = true };
		struct raid_fault_domain *dom;
		struct blk_dev *m, *f;
		uint8_t *b = jg_alloc_blocks(1);

		t_fault_open(&cfg, 4, &dom, &m, &f);
		memset(b, 7, JG_BLOCK_SIZE);
		assert_int_equal(blk_rw(f, BLK_OP_WRITE, 0, 1, b, 0), 0);
		assert_int_equal(blk_rw(f, BLK_OP_WRITE, 1, 1, b, 0), 0); /* cut */
		assert_int_equal(blk_rw(m, BLK_OP_READ, 0, 1, b, 0), 0);
		memcpy(out[run], b, JG_BLOCK_SIZE);
		int torn = 0, kept = 0;
		for (int s = 0; s < 8; s++) {
			torn += b[s * 512] == 0;
			kept += b[s * 512] == 7;
		}
		assert_int_equal(torn + kept, 8);
		assert_true(torn > 0 && kept > 0); /* seed 99 tears this block part-way */
		t_fault_close(dom, m, f);
		free(b);
	}
	assert_memory_equal(out[0], out[1], JG_BLOCK_SIZE);
}

static void test_dev_fault_fail_block(void **state)
{
	struct raid_fault_cfg cfg = { 0 };
	struct raid_fault_domain *dom;
	struct blk_dev *m, *f;
	uint8_t *b = jg_zalloc_blocks(2);

	(void)state;
	t_fault_open(&cfg, 4, &dom, &m, &f);
	assert_int_equal(raid_dev_fault_fail_block(f, 2, true, false), 0);
	assert_int_equal(blk_rw(f, BLK_OP_READ, 1, 2, b, 0), -EIO);
	assert_int_equal(blk_rw(f, BLK_OP_WRITE, 1, 2, b, 0), 0);
	assert_int_equal(blk_rw(f, BLK_OP_READ, 0, 1, b, 0), 0);
	assert_int_equal(raid_dev_fault_fail_all(f), 0);
	assert_int_equal(blk_rw(f, BLK_OP_READ, 0, 1, b, 0), -EIO);
	t_fault_close(dom, m, f);
	free(b);
}

/* Real io_uring on a real file: a batch of writes, a flush, reads back. */
static void test_dev_uring_file(void **state)
{
	char path[] = "/tmp/jgrfs-test-uring-XXXXXX";
	int fd = mkstemp(path);
	struct blk_dev *d;
	struct blk_req reqs[64];
	uint8_t *w = jg_alloc_blocks(64), *r = jg_alloc_blocks(64);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(raid_dev_uring_open(path, 1024, &d), 0);
	assert_int_equal(d->nblocks, 1024);
	for (int i = 0; i < 64; i++) {
		memset(w + (size_t)i * JG_BLOCK_SIZE, i + 1, JG_BLOCK_SIZE);
		reqs[i] = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = (uint64_t)i * 16,
					    .nblocks = 1, .buf = w + (size_t)i * JG_BLOCK_SIZE };
	}
	reqs[63].flags = BLK_FUA;
	assert_int_equal(blk_submit(d, reqs, 64), 0);
	assert_int_equal(blk_flush(d), 0);
	for (int i = 0; i < 64; i++) {
		reqs[i].op = BLK_OP_READ;
		reqs[i].flags = 0;
		reqs[i].buf = r + (size_t)i * JG_BLOCK_SIZE;
	}
	assert_int_equal(blk_submit(d, reqs, 64), 0);
	assert_memory_equal(w, r, 64 * JG_BLOCK_SIZE);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 1023, 2, r, 0), -EINVAL);
	blk_close(d);
	unlink(path);
	free(w);
	free(r);
}

static uint64_t t_uring_flushes(struct blk_dev *d)
{
	struct blk_stats st;

	assert_int_equal(blk_ctl(d, BLK_CTL_GET_STATS, &st), 0);
	return st.flushes;
}

/* A flush with no write completed since the last one began is skipped; one after
 * a write and a PREFLUSH with a write before it are not. A FUA write issues no
 * fdatasync (it is written with RWF_DSYNC) and does not count as a flush of the
 * writes before it. */
static void test_dev_uring_flush_elided(void **state)
{
	char path[] = "/tmp/jgrfs-test-flush-XXXXXX";
	uint8_t *b = jg_alloc_blocks(1);
	struct blk_dev *d = NULL;
	struct blk_req r;

	(void)state;
	close(mkstemp(path));
	memset(b, 0x5a, JG_BLOCK_SIZE);
	assert_int_equal(raid_dev_uring_open(path, 16, &d), 0);
	assert_int_equal(blk_flush(d), 0);
	assert_int_equal(t_uring_flushes(d), 0);	/* nothing written yet */
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, 3, 1, b, 0), 0);
	assert_int_equal(blk_flush(d), 0);
	assert_int_equal(t_uring_flushes(d), 1);
	assert_int_equal(blk_flush(d), 0);
	assert_int_equal(t_uring_flushes(d), 1);	/* nothing new */
	assert_int_equal(blk_rw(d, BLK_OP_READ, 3, 1, b, 0), 0);
	assert_int_equal(blk_flush(d), 0);
	assert_int_equal(t_uring_flushes(d), 1);	/* a read dirties nothing */
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, 4, 1, b, BLK_FUA), 0);
	assert_int_equal(t_uring_flushes(d), 1);	/* FUA: RWF_DSYNC, no fdatasync */
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, 5, 1, b, BLK_PREFLUSH), 0);
	assert_int_equal(t_uring_flushes(d), 2);	/* preflush: block 4 before it */
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, 7, 1, b, BLK_PREFLUSH), 0);
	assert_int_equal(t_uring_flushes(d), 3);	/* block 5 before it */
	r = (struct blk_req){ .op = BLK_OP_WRITE, .flags = BLK_PREFLUSH | BLK_FUA, .blkno = 6,
			      .nblocks = 1, .buf = b };
	assert_int_equal(blk_submit(d, &r, 1), 0);
	assert_int_equal(t_uring_flushes(d), 4);	/* block 7 before, block 6 FUA */
	assert_int_equal(blk_flush(d), 0);
	assert_int_equal(t_uring_flushes(d), 5);	/* block 6's FUA flushed nothing else */
	assert_int_equal(blk_flush(d), 0);
	assert_int_equal(t_uring_flushes(d), 5);
	memset(b, 0, JG_BLOCK_SIZE);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 4, 1, b, 0), 0);
	assert_int_equal(b[0], 0x5a);	/* the FUA write landed */
	blk_close(d);
	unlink(path);
	free(b);
}

/* One batch over two files and a memory device: each request lands on its own device. */
static void test_blk_submit_multi(void **state)
{
	char p0[] = "/tmp/jgrfs-test-multi-XXXXXX", p1[] = "/tmp/jgrfs-test-multi-XXXXXX";
	struct blk_dev *d[3];
	struct blk_req reqs[6];
	uint8_t *b = jg_alloc_blocks(6), *r = jg_alloc_blocks(1);

	(void)state;
	close(mkstemp(p0));
	close(mkstemp(p1));
	assert_int_equal(raid_dev_uring_open(p0, 8, &d[0]), 0);
	assert_int_equal(raid_dev_uring_open(p1, 8, &d[1]), 0);
	assert_int_equal(raid_dev_mem_open("m", 8, &d[2]), 0);
	for (int i = 0; i < 6; i++) {
		memset(b + (size_t)i * JG_BLOCK_SIZE, 0x10 + i, JG_BLOCK_SIZE);
		reqs[i] = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = (uint64_t)(i % 2),
					    .nblocks = 1, .buf = b + (size_t)i * JG_BLOCK_SIZE,
					    .dev = d[i / 2] };
	}
	assert_int_equal(blk_submit_multi(reqs, 6), 0);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(blk_rw(d[i / 2], BLK_OP_READ, (uint64_t)(i % 2), 1, r, 0), 0);
		assert_int_equal(r[0], 0x10 + i);
	}
	for (int i = 0; i < 3; i++)
		blk_close(d[i]);
	unlink(p0);
	unlink(p1);
	free(b);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_known_answer),
		cmocka_unit_test(test_crc_seed_never_zero),
		cmocka_unit_test(test_blk_seal_check),
		cmocka_unit_test(test_seq_after_wraps),
		cmocka_unit_test(test_dev_mem_rw),
		cmocka_unit_test(test_dev_fault_power_cut),
		cmocka_unit_test(test_dev_fault_fua_supersedes_pending),
		cmocka_unit_test(test_dev_fault_shared_disk),
		cmocka_unit_test(test_dev_fault_tear_is_seeded),
		cmocka_unit_test(test_dev_fault_fail_block),
		cmocka_unit_test(test_dev_uring_file),
		cmocka_unit_test(test_dev_uring_flush_elided),
		cmocka_unit_test(test_blk_submit_multi),
	};

	jg_log_set_level(JG_LOG_WARN); /* errors and warnings: the tests provoke them */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
