// SPDX-License-Identifier: MIT
/*
 * tests/unit/journal/test_recovery.c - replay after a crash: committed
 * transactions replay exactly, uncommitted and torn ones never, revokes are
 * honoured, readonly recovery writes nothing; fsync durability with the commit
 * thread.
 */
#include "jnl_test.h"
#include "../../../src/journal/jnl_format.h"

static const enum jnl_data_mode t_modes[] = {
	JNL_DATA_WRITEBACK, JNL_DATA_ORDERED, JNL_DATA_JOURNAL, JNL_DATA_DECLARED,
};

/* Committed transactions replay exactly; the running one does not. */
static void test_recovery_replays_committed_only(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, t_modes[mi], true);
		struct jnl_recovery_report rep;

		t_txn(j, 10, 4, 1, true);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		t_txn(j, 12, 4, 2, true);	/* 12..15 at version 2 */
		t_txn(j, 300, 3, 2, false);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		t_txn(j, 10, 2, 3, true);	/* never committed */
		t_txn(j, 300, 1, 3, false);
		jnl_abandon(j);
		j = t_reopen(d, t_modes[mi], false, &rep);
		assert_false(rep.was_clean);
		assert_int_equal(rep.transactions_replayed, 2);
		assert_int_equal(rep.blocks_replayed, t_modes[mi] == JNL_DATA_JOURNAL ? 9 : 6);
		assert_int_equal(t_read_ver(NULL, d, 10), 1);
		assert_int_equal(t_read_ver(NULL, d, 11), 1);
		for (unsigned int i = 12; i < 16; i++)
			assert_int_equal(t_read_ver(NULL, d, i), 2);
		for (unsigned int i = 300; i < 303; i++)
			assert_int_equal(t_read_ver(NULL, d, i), 2);
		assert_false(jnl_needs_recovery(j));
		/* the journal continues after recovery */
		assert_int_equal(jnl_start(j), 0);
		t_txn(j, 10, 1, 4, true);
		assert_int_equal(jnl_close(j), 0);
		assert_int_equal(t_read_ver(NULL, d, 10), 4);
		blk_close(d);
	}
}

enum t_corrupt { T_CORRUPT_LOGGED, T_CORRUPT_DESC, T_CORRUPT_COMMIT, T_CORRUPT_DESC_SEQ };

/*
 * Three committed transactions of 5 metadata blocks each (ordered mode, log from
 * relative block 1: each takes descriptor, 5 copies, commit = 7 blocks). Damage
 * one block of the second: neither it nor the third may replay.
 */
static void test_recovery_torn_transaction_dropped(void **state)
{
	(void)state;
	for (int c = T_CORRUPT_LOGGED; c <= T_CORRUPT_DESC_SEQ; c++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
		struct jnl_recovery_report rep;
		uint8_t *b = jg_alloc_blocks(1);
		uint64_t victim;

		for (uint32_t t = 1; t <= 3; t++) {
			t_txn(j, 100, 5, t, true);
			assert_int_equal(jnl_commit(j, 0, true), 0);
		}
		jnl_abandon(j);
		victim = T_JSTART + 1 + 7;	/* second transaction's descriptor */
		if (c == T_CORRUPT_LOGGED)
			victim += 3;
		else if (c == T_CORRUPT_COMMIT)
			victim += 6;
		assert_int_equal(blk_rw(d, BLK_OP_READ, victim, 1, b, 0), 0);
		if (c == T_CORRUPT_DESC_SEQ) {
			/* valid crc, wrong transaction id: a stale block */
			((struct jg_blk_hdr *)b)->seq = jg_cpu_to_le64(jg_le64(((struct jg_blk_hdr *)b)->seq) + 7);
			jg_blk_crc_set(b, JG_BLOCK_SIZE, jg_crc_seed(t_uuid));
		} else {
			b[1000] ^= 0x40;
		}
		assert_int_equal(blk_rw(d, BLK_OP_WRITE, victim, 1, b, 0), 0);
		j = t_reopen(d, JNL_DATA_ORDERED, false, &rep);
		assert_int_equal(rep.transactions_replayed, 1);
		for (unsigned int i = 100; i < 105; i++)
			if (t_read_ver(NULL, d, i) != 1)
				fail_msg("corruption %d: block %u holds %lld", c, i,
					 (long long)t_read_ver(NULL, d, i));
		jnl_abandon(j);
		free(b);
		blk_close(d);
	}
}

/* Revoked blocks are not replayed; a copy logged after the revoke is. */
/*
 * Declared mode: the last commit block goes out with its data (C3). Recovery
 * replays that transaction only when its declared data at home matches the
 * crc32c of the declare tags; an earlier one is proven complete by the blocks
 * of the next. Case 0: all there; 1: a data block not home, the transaction is
 * dropped; 2: the same, but a later transaction proves it; 3: a transaction
 * larger than JNL_COMMIT_CSUM_MAX_DATA wrote its commit block after its data
 * (C2), so recovery neither checks nor reads its data.
 */
static void test_recovery_declared_last_commit_checks_data(void **state)
{
	(void)state;
	for (int c = 0; c < 4; c++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl *j = t_open(d, JNL_DATA_DECLARED, true);
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
				       .no_commit_thread = true };
		struct jnl_recovery_report rep;
		struct jnl_info info;
		uint8_t *b = jg_alloc_blocks(1);

		t_txn(j, 10, 2, 1, true);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		t_txn(j, 10, 2, 2, true);
		t_txn(j, 500, c == 3 ? JNL_COMMIT_CSUM_MAX_DATA + 1 : 4, 2, false);
		assert_int_equal(jnl_commit(j, 0, true), 0);
		if (c == 2) {
			t_txn(j, 20, 1, 3, true);
			assert_int_equal(jnl_commit(j, 0, true), 0);
		}
		jnl_info_get(j, &info);
		jnl_abandon(j);
		if (c) {	/* block 501 still holds what was there before */
			t_fill(b, 501, 1);
			assert_int_equal(blk_rw(d, BLK_OP_WRITE, 501, 1, b, 0), 0);
		}
		assert_int_equal(jnl_open(d, &cfg, &j), 0);
		assert_int_equal(jnl_recover(j, &rep), 0);
		assert_int_equal(rep.transactions_replayed, c == 1 ? 1 : c == 2 ? 3 : 2);
		assert_int_equal(t_read_ver(NULL, d, 10), c == 1 ? 1 : 2);
		assert_int_equal(t_read_ver(NULL, d, 11), c == 1 ? 1 : 2);
		if (c < 2)	/* the checked (or dropped) transaction's data was resynced */
			assert_true(rep.declared_blocks_resynced >= 4);
		else
			assert_int_equal(rep.declared_blocks_resynced, 0);
		/* log resynced: the superblock, the live log (a log write's parity is
		 * durable only at the next flush) and the window after it */
		if (c == 3) {
			assert_true(info.log_used_blocks > 2);
			assert_int_equal(rep.log_blocks_resynced,
					 1 + info.log_used_blocks + (T_JBLOCKS - 1) / 4);
		}
		jnl_abandon(j);
		free(b);
		blk_close(d);
	}
}

static void test_recovery_revoke_honoured(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_recovery_report rep;
	struct jnl_handle *h;
	uint8_t *b = jg_alloc_blocks(1);

	(void)state;
	t_txn(j, 200, 4, 1, true);		/* 200..203 */
	assert_int_equal(jnl_commit(j, 0, true), 0);
	assert_int_equal(jnl_handle_start(j, 4, &h), 0);
	assert_int_equal(jnl_handle_revoke(h, 200), 0);
	assert_int_equal(jnl_handle_forget(h, 200), 0);
	assert_int_equal(jnl_handle_revoke(h, 201), 0);
	assert_int_equal(jnl_handle_forget(h, 201), 0);
	/* revoked and re-logged in the same transaction: the revoke is cancelled */
	assert_int_equal(jnl_handle_revoke(h, 202), 0);
	t_fill(b, 202, 2);
	assert_int_equal(jnl_handle_dirty_meta(h, 202, b), 0);
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	/* 201 reused as metadata in a later transaction: replayed */
	t_txn(j, 201, 1, 3, true);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	jnl_abandon(j);
	j = t_reopen(d, JNL_DATA_ORDERED, false, &rep);
	assert_int_equal(rep.transactions_replayed, 3);
	assert_int_equal(rep.blocks_revoked, 2);	/* tid 1 copies of 200 and 201 */
	assert_int_equal(t_read_ver(NULL, d, 200), 0);
	assert_int_equal(t_read_ver(NULL, d, 201), 3);
	assert_int_equal(t_read_ver(NULL, d, 202), 2);
	assert_int_equal(t_read_ver(NULL, d, 203), 1);
	jnl_abandon(j);
	free(b);
	blk_close(d);
}

/* A logged copy that looks like a log block is escaped and restored. */
static void test_recovery_escaped_copy(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_handle *h;
	uint8_t *b = jg_alloc_blocks(1), *r = jg_alloc_blocks(1);
	uint32_t m = JNL_MAGIC_COMMIT;

	(void)state;
	memset(b, 0x5a, JG_BLOCK_SIZE);
	memcpy(b, &m, 4);
	assert_int_equal(jnl_handle_start(j, 1, &h), 0);
	assert_int_equal(jnl_handle_dirty_meta(h, 7, b), 0);
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	jnl_abandon(j);
	j = t_reopen(d, JNL_DATA_ORDERED, false, NULL);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 7, 1, r, 0), 0);
	assert_memory_equal(b, r, JG_BLOCK_SIZE);
	jnl_abandon(j);
	free(b);
	free(r);
	blk_close(d);
}

/* Readonly recovery writes nothing and serves the replayed blocks from memory. */
static void test_recovery_readonly_in_memory(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_recovery_report rep;
	uint8_t *before = jg_alloc_blocks(T_DEV_BLOCKS), *after = jg_alloc_blocks(T_DEV_BLOCKS);

	(void)state;
	t_txn(j, 60, 3, 1, true);
	assert_int_equal(jnl_commit(j, 0, true), 0);
	jnl_abandon(j);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 0, T_DEV_BLOCKS, before, 0), 0);
	j = t_reopen(d, JNL_DATA_ORDERED, true, &rep);
	assert_int_equal(rep.blocks_replayed, 3);
	assert_int_equal(t_read_ver(j, d, 61), 1);
	assert_int_equal(t_read_ver(NULL, d, 61), 0);
	assert_int_equal(jnl_start(j), -EROFS);
	assert_int_equal(jnl_close(j), 0);
	assert_int_equal(blk_rw(d, BLK_OP_READ, 0, T_DEV_BLOCKS, after, 0), 0);
	assert_memory_equal(before, after, (size_t)T_DEV_BLOCKS * JG_BLOCK_SIZE);
	free(before);
	free(after);
	blk_close(d);
}

/* With the commit thread: jnl_commit(wait) makes a handle's transaction durable. */
static void test_recovery_fsync_durable_with_thread(void **state)
{
	(void)state;
	for (unsigned int mi = 0; mi < 4; mi++) {
		struct blk_dev *d = t_mem_dev();
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = t_modes[mi] };
		struct jnl_recovery_report rep;
		struct jnl *j;
		uint64_t tid;

		assert_int_equal(jnl_open(d, &cfg, &j), 0);
		assert_int_equal(jnl_recover(j, NULL), 0);
		assert_int_equal(jnl_start(j), 0);
		for (uint32_t v = 1; v <= 20; v++) {
			tid = t_txn(j, 400 + v, 2, v, v % 2);
			if (v % 4 == 0)
				assert_int_equal(jnl_commit(j, tid, true), 0);
		}
		/* everything up to v = 20 was fsynced (tid of v 20 covers all before) */
		jnl_abandon(j);
		j = t_reopen(d, t_modes[mi], false, &rep);
		for (uint32_t v = 1; v <= 20; v++)
			assert_int_equal(t_read_ver(NULL, d, 400 + v), v);
		assert_int_equal(t_read_ver(NULL, d, 421), 20);
		jnl_abandon(j);
		blk_close(d);
	}
}

/* After a checkpoint the tail has moved: recovery replays only what came after it. */
static void test_recovery_starts_at_tail(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_recovery_report rep;

	(void)state;
	for (uint32_t v = 1; v <= 3; v++) {
		t_txn(j, 70, 3, v, true);
		assert_int_equal(jnl_commit(j, 0, true), 0);
	}
	assert_int_equal(jnl_checkpoint(j), 0);
	for (uint32_t v = 4; v <= 5; v++) {
		t_txn(j, 71, 1, v, true);
		assert_int_equal(jnl_commit(j, 0, true), 0);
	}
	jnl_abandon(j);
	j = t_reopen(d, JNL_DATA_ORDERED, false, &rep);
	assert_int_equal(rep.transactions_replayed, 2);
	assert_int_equal(rep.blocks_replayed, 1);
	assert_int_equal(t_read_ver(NULL, d, 70), 3);
	assert_int_equal(t_read_ver(NULL, d, 71), 5);
	assert_int_equal(t_read_ver(NULL, d, 72), 3);
	jnl_abandon(j);
	blk_close(d);
}

/* The whole device, to show that a refused recovery wrote nothing. */
static uint8_t *t_snapshot(struct blk_dev *d)
{
	uint8_t *img = jg_alloc_blocks(T_DEV_BLOCKS);

	assert_int_equal(blk_rw(d, BLK_OP_READ, 0, T_DEV_BLOCKS, img, 0), 0);
	return img;
}

/* Rewrite log block @blkno through @edit and seal it again: a crafted image. */
static void t_craft(struct blk_dev *d, uint64_t blkno, uint32_t magic,
		    void (*edit)(uint8_t *blk, uint64_t arg), uint64_t arg)
{
	uint8_t *b = jg_alloc_blocks(1);

	assert_int_equal(blk_rw(d, BLK_OP_READ, blkno, 1, b, 0), 0);
	assert_int_equal(jg_le32(((struct jg_blk_hdr *)b)->magic), magic);
	edit(b, arg);
	jg_blk_crc_set(b, JG_BLOCK_SIZE, jg_crc_seed(t_uuid));
	assert_int_equal(blk_rw(d, BLK_OP_WRITE, blkno, 1, b, 0), 0);
	free(b);
}

static void t_edit_tag_home(uint8_t *blk, uint64_t home)
{
	struct jnl_tag *tags = (struct jnl_tag *)(blk + sizeof(struct jnl_list_hdr));

	tags[1].blkno = jg_cpu_to_le64(home);
}

/*
 * A committed transaction whose descriptor (valid crc) names a home inside the
 * journal region or past the device: replay would write over the log or past
 * the array. Recovery refuses the log (-EUCLEAN), readonly or not, and writes
 * nothing; the journal cannot start.
 */
static void test_recovery_refuses_bad_home(void **state)
{
	static const uint64_t homes[] = { T_JSTART, T_JSTART + 3, T_JSTART + T_JBLOCKS - 1,
					  T_DEV_BLOCKS, T_DEV_BLOCKS + 100, UINT64_MAX };
	static const enum jnl_data_mode modes[] = { JNL_DATA_ORDERED, JNL_DATA_DECLARED };

	(void)state;
	for (size_t m = 0; m < 2; m++) {
		for (size_t c = 0; c < sizeof(homes) / sizeof(homes[0]); c++) {
			struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = modes[m],
					       .no_commit_thread = true };
			struct blk_dev *d = t_mem_dev();
			struct jnl *j = t_open(d, modes[m], true);
			struct jnl_recovery_report rep;
			uint8_t *before, *after;
			int rc;

			t_txn(j, 100, 5, 1, true);
			assert_int_equal(jnl_commit(j, 0, true), 0);
			t_txn(j, 200, 3, 2, true);
			assert_int_equal(jnl_commit(j, 0, true), 0);
			jnl_abandon(j);
			/* the second transaction's descriptor: after desc, 5 copies, commit */
			t_craft(d, T_JSTART + 1 + 7, JNL_MAGIC_DESC, t_edit_tag_home, homes[c]);
			before = t_snapshot(d);
			for (int ro = 0; ro < 2; ro++) {
				cfg.readonly = ro;
				assert_int_equal(jnl_open(d, &cfg, &j), 0);
				rc = jnl_recover(j, &rep);
				if (rc != -EUCLEAN)
					fail_msg("mode %s home %llu readonly %d: recovery -> %d, expected -EUCLEAN",
						 jnl_data_mode_name(modes[m]), (unsigned long long)homes[c],
						 ro, rc);
				if (!ro)
					assert_int_equal(jnl_start(j), -EINVAL);
				jnl_abandon(j);
			}
			after = t_snapshot(d);
			if (memcmp(before, after, (size_t)T_DEV_BLOCKS * JG_BLOCK_SIZE))
				fail_msg("mode %s home %llu: the refused recovery wrote",
					 jnl_data_mode_name(modes[m]), (unsigned long long)homes[c]);
			free(before);
			free(after);
			blk_close(d);
		}
	}
}

static void t_edit_revoke_list(uint8_t *blk, uint64_t first)
{
	struct jnl_list_hdr *h = (struct jnl_list_hdr *)blk;
	le64 *e = (le64 *)(blk + sizeof(*h));

	assert_int_equal(jg_le32(h->count), 1);
	e[0] = jg_cpu_to_le64(first);
	e[1] = jg_cpu_to_le64(UINT64_MAX);
	e[2] = jg_cpu_to_le64(T_DEV_BLOCKS + 5);
	h->count = jg_cpu_to_le32(3);
}

/* Revoke records of blocks no copy can have (2^64-1, past the device) revoke
 * nothing: recovery goes on and honours the others. */
static void test_recovery_revoke_impossible_block(void **state)
{
	struct blk_dev *d = t_mem_dev();
	struct jnl *j = t_open(d, JNL_DATA_ORDERED, true);
	struct jnl_recovery_report rep;
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_ORDERED,
			       .no_commit_thread = true };
	struct jnl_handle *h;
	int rc;

	(void)state;
	t_txn(j, 200, 4, 1, true);		/* 200..203: desc, 4 copies, commit */
	assert_int_equal(jnl_commit(j, 0, true), 0);
	assert_int_equal(jnl_handle_start(j, 1, &h), 0);
	assert_int_equal(jnl_handle_revoke(h, 201), 0);
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);	/* revoke, commit */
	jnl_abandon(j);
	t_craft(d, T_JSTART + 1 + 6, JNL_MAGIC_REVOKE, t_edit_revoke_list, 201);
	assert_int_equal(jnl_open(d, &cfg, &j), 0);
	rc = jnl_recover(j, &rep);
	if (rc)
		fail_msg("a revoke of block 2^64-1 failed recovery: %d", rc);
	assert_int_equal(rep.transactions_replayed, 2);
	assert_int_equal(rep.blocks_revoked, 1);
	assert_int_equal(t_read_ver(NULL, d, 200), 1);
	assert_int_equal(t_read_ver(NULL, d, 201), 0);
	assert_int_equal(t_read_ver(NULL, d, 202), 1);
	assert_int_equal(t_read_ver(NULL, d, 203), 1);
	jnl_abandon(j);
	blk_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recovery_replays_committed_only),
		cmocka_unit_test(test_recovery_torn_transaction_dropped),
		cmocka_unit_test(test_recovery_declared_last_commit_checks_data),
		cmocka_unit_test(test_recovery_revoke_honoured),
		cmocka_unit_test(test_recovery_escaped_copy),
		cmocka_unit_test(test_recovery_readonly_in_memory),
		cmocka_unit_test(test_recovery_fsync_durable_with_thread),
		cmocka_unit_test(test_recovery_starts_at_tail),
		cmocka_unit_test(test_recovery_refuses_bad_home),
		cmocka_unit_test(test_recovery_revoke_impossible_block),
	};

	jg_log_set_level(JG_LOG_ERR - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
