// SPDX-License-Identifier: MIT
/*
 * tests/crash/test_jnl_crash_raid.c - journal-guided resync: data=declared on a
 * RAID5 array (resync policy "journal": no bitmap for BLK_FS_RAIDSYNC writes),
 * power cut at every member write of the workload in jnl_crash.h (unflushed member
 * writes kept, reverted or torn sector by sector).
 *
 * After each cut the array is reassembled on the surviving members, the journal
 * recovers (SYNCRAID passes), and then:
 *   - the model check of jnl_crash.h holds on the array;
 *   - scrub finds zero parity mismatches;
 *   - the rows resynced are bounded by the journal's in-flight work (the live
 *     log and the window after it, declared, replayed and revoked blocks), far
 *     below the array's rows.
 * The same crash recovered with SYNCRAID stripped from every request (declared
 * resync disabled) must leave mismatches at some positions: the check can fail.
 */
#include "jnl_crash.h"

#define R_MEMBERS 4
#define R_CHUNK 4		/* blocks: small rows, many of them */
#define R_MEMBER_BLOCKS 800

/* A pass-through device: does not close its lower device; can strip flags. */
struct r_pass {
	struct blk_dev dev;
	struct blk_dev *lower;
	uint32_t strip;
};

static int r_pass_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct r_pass *p = (struct r_pass *)d;

	for (unsigned int i = 0; i < n; i++)
		r[i].flags &= ~p->strip;
	return blk_submit(p->lower, r, n);
}

static int r_pass_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	return blk_ctl(((struct r_pass *)d)->lower, cmd, arg);
}

static void r_pass_close(struct blk_dev *d)
{
	free(d);
}

static const struct blk_dev_ops r_pass_ops = {
	.submit = r_pass_submit,
	.ctl = r_pass_ctl,
	.close = r_pass_close,
};

static struct blk_dev *r_pass(struct blk_dev *lower, uint32_t strip)
{
	struct r_pass *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->dev.ops = &r_pass_ops;
	p->dev.nblocks = lower->nblocks;
	snprintf(p->dev.name, sizeof(p->dev.name), "%s", lower->name);
	p->lower = lower;
	p->strip = strip;
	return &p->dev;
}

static int r_assemble_rc(struct blk_dev **members, struct raid_array **out)
{
	struct blk_dev *devs[R_MEMBERS];
	int rc;

	for (unsigned int i = 0; i < R_MEMBERS; i++)
		devs[i] = r_pass(members[i], 0);
	rc = raid_assemble(devs, R_MEMBERS, NULL, out);
	if (rc)
		for (unsigned int i = 0; i < R_MEMBERS; i++)
			blk_close(devs[i]);
	return rc;
}

static struct raid_array *r_assemble(struct blk_dev **members)
{
	struct raid_array *a = NULL;

	assert_int_equal(r_assemble_rc(members, &a), 0);
	return a;
}

static uint64_t r_base_writes;	/* member writes of assembly: the cut counts from there */

/* The members of a new array with a formatted journal: their non-zero blocks. */
struct r_tmpl_blk {
	unsigned int member;
	uint64_t blkno;
	uint8_t *data;
};
static struct r_tmpl_blk *r_tmpl;
static size_t r_tmpl_n;

static void r_tmpl_build(void)
{
	struct raid_create_cfg cc = { .level = 5, .chunk_blocks = R_CHUNK, .resync = RAID_RESYNC_JOURNAL,
				      .assume_clean = true /* zeroed memory */ };
	struct blk_dev *mem[R_MEMBERS], *keep[R_MEMBERS];
	uint8_t *img = jg_alloc_blocks(R_MEMBER_BLOCKS);
	struct raid_array *a;

	for (unsigned int i = 0; i < R_MEMBERS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, R_MEMBER_BLOCKS, &mem[i]), 0);
		keep[i] = r_pass(mem[i], 0);
	}
	assert_int_equal(raid_create(keep, R_MEMBERS, &cc, false), 0);
	for (unsigned int i = 0; i < R_MEMBERS; i++)
		blk_close(keep[i]);
	a = r_assemble(mem);
	assert_true(raid_array_dev(a)->nblocks >= T_JSTART + T_JBLOCKS);
	assert_int_equal(jnl_format(raid_array_dev(a), T_JSTART, T_JBLOCKS, t_uuid), 0);
	assert_int_equal(raid_stop(a), 0);
	for (unsigned int i = 0; i < R_MEMBERS; i++) {
		assert_int_equal(blk_rw(mem[i], BLK_OP_READ, 0, R_MEMBER_BLOCKS, img, 0), 0);
		for (uint64_t b = 0; b < R_MEMBER_BLOCKS; b++) {
			const uint8_t *p = img + b * JG_BLOCK_SIZE;
			size_t k = 0;

			while (k < JG_BLOCK_SIZE && !p[k])
				k++;
			if (k == JG_BLOCK_SIZE)
				continue;
			r_tmpl = realloc(r_tmpl, (r_tmpl_n + 1) * sizeof(*r_tmpl));
			assert_non_null(r_tmpl);
			r_tmpl[r_tmpl_n].member = i;
			r_tmpl[r_tmpl_n].blkno = b;
			r_tmpl[r_tmpl_n].data = jg_alloc_blocks(1);
			memcpy(r_tmpl[r_tmpl_n].data, p, JG_BLOCK_SIZE);
			r_tmpl_n++;
		}
		blk_close(mem[i]);
	}
	free(img);
}

static void r_tmpl_free(void)
{
	for (size_t i = 0; i < r_tmpl_n; i++)
		free(r_tmpl[i].data);
	free(r_tmpl);
	r_tmpl = NULL;
	r_tmpl_n = 0;
}

/* Fresh members holding the template. */
static void r_make(struct blk_dev **mem)
{
	for (unsigned int i = 0; i < R_MEMBERS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "mem%u", i);
		assert_int_equal(raid_dev_mem_open(name, R_MEMBER_BLOCKS, &mem[i]), 0);
	}
	for (size_t i = 0; i < r_tmpl_n; i++)
		assert_int_equal(blk_rw(mem[r_tmpl[i].member], BLK_OP_WRITE, r_tmpl[i].blkno, 1,
					r_tmpl[i].data, 0), 0);
}

/*
 * One crash at member write @cut of the workload: run it, cut, recover with or
 * without SYNCRAID. Returns the scrub mismatch count, or -1 when the array itself
 * could not be assembled after the crash (its own superblock update was cut:
 * a RAID-layer case, counted apart, and asserted to be none); *@done when the
 * workload finished.
 */
static int64_t r_crash_once(uint64_t cut, bool syncraid, int steps, bool *done,
			    struct jnl_recovery_report *rep, uint64_t *rows)
{
	struct raid_fault_cfg fc = { .cut_after_writes = cut ? r_base_writes + cut : 0, .seed = cut,
				     .keep_percent = 50, .tear = true, .cut_at_flushes = true };
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .no_commit_thread = true };
	struct blk_dev *mem[R_MEMBERS], *fault[R_MEMBERS], *top;
	struct raid_fault_domain *dom;
	struct w_model *m = calloc(1, sizeof(*m));
	struct raid_array *a;
	struct raid_info info;
	struct jnl *j;
	int64_t mism;
	int rc;

	r_make(mem);
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	for (unsigned int i = 0; i < R_MEMBERS; i++)
		assert_int_equal(raid_dev_fault_open(dom, mem[i], &fault[i]), 0);
	a = r_assemble(fault);
	if (!cut)
		r_base_writes = raid_fault_domain_writes(dom);
	*done = w_run(raid_array_dev(a), dom, JNL_DATA_DECLARED, steps, m);
	if (*done)
		assert_int_equal(raid_stop(a), 0);
	else
		raid_abandon(a);
	for (unsigned int i = 0; i < R_MEMBERS; i++)
		blk_close(fault[i]);
	raid_fault_domain_free(dom);

	/* power back: assemble on what the members kept, recover the journal */
	if (r_assemble_rc(mem, &a)) {
		for (unsigned int i = 0; i < R_MEMBERS; i++)
			blk_close(mem[i]);
		free(m);
		return -1;
	}
	top = r_pass(raid_array_dev(a), syncraid ? 0 : BLK_SYNCRAID);
	rc = jnl_open(top, &cfg, &j);
	if (rc)
		fail_msg("cut %llu: journal open after crash: %d", (unsigned long long)cut, rc);
	rc = jnl_recover(j, rep);
	if (rc)
		fail_msg("cut %llu: recovery: %d", (unsigned long long)cut, rc);
	jnl_abandon(j);
	w_check(top, m, JNL_DATA_DECLARED, cut, true);
	mism = raid_scrub(a, false, NULL, NULL, NULL);
	assert_true(mism >= 0);
	raid_info_get(a, &info);
	*rows = info.rows;
	blk_close(top);
	assert_int_equal(raid_stop(a), 0);
	for (unsigned int i = 0; i < R_MEMBERS; i++)
		blk_close(mem[i]);
	free(m);
	return mism;
}

/*
 * Every cut position of the workload: with @commit_after_data every commit block
 * follows its data (C2, large transactions), else small ones go with it (C3).
 */
static void r_declared_resync(bool commit_after_data, bool log_data)
{
	uint64_t cut, positions_with_damage = 0, max_rows = 0, rows = 0, raid_cases = 0;
	struct jnl_recovery_report rep0;
	bool done = false;
	const char *first = getenv("JG_FIRST_CUT");	/* debugging: start at a position */

	w_commit_after_data = commit_after_data;
	w_log_data = log_data;
	r_tmpl_build();
	r_crash_once(0, true, 12, &done, &rep0, &rows);	/* no cut: counts assembly's writes */
	done = false;
	for (cut = first ? strtoull(first, NULL, 0) : 1; !done; cut++) {
		struct jnl_recovery_report rep = { 0 };
		int64_t mism = r_crash_once(cut, true, 12, &done, &rep, &rows);

		if (mism < 0) {
			raid_cases++;
			if (getenv("JG_TEST_LOG"))
				print_message("cut %llu: the array did not assemble\n", (unsigned long long)cut);
			continue;
		}
		if (mism)
			fail_msg("cut %llu: scrub found %lld parity mismatches after declared recovery",
				 (unsigned long long)cut, (long long)mism);
		if (!rep.was_clean) {
			/* bounded by the in-flight work, not the array */
			if (rep.rows_resynced > rep.log_blocks_resynced + rep.declared_blocks_resynced +
						 rep.blocks_replayed + rep.revoked_blocks_resynced)
				fail_msg("cut %llu: %llu rows resynced for %llu+%llu+%llu+%llu blocks",
					 (unsigned long long)cut, (unsigned long long)rep.rows_resynced,
					 (unsigned long long)rep.log_blocks_resynced,
					 (unsigned long long)rep.declared_blocks_resynced,
					 (unsigned long long)rep.blocks_replayed,
					 (unsigned long long)rep.revoked_blocks_resynced);
			if (rep.rows_resynced > max_rows)
				max_rows = rep.rows_resynced;
		}
		/* the same crash without journal-guided resync, every fourth position */
		if (cut % 4 == 0) {
			bool d2;
			struct jnl_recovery_report rep2;
			uint64_t r2;

			if (r_crash_once(cut, false, 12, &d2, &rep2, &r2) > 0)
				positions_with_damage++;
		}
	}
	print_message("declared%s%s: %llu cut positions (%llu cut the array's own superblock update), "
		      "at most %llu of %llu rows resynced, %llu positions damaged without SYNCRAID\n",
		      commit_after_data ? " (commit after data)" : "",
		      log_data ? " (small commits log their data)" : "",
		      (unsigned long long)cut - 1, (unsigned long long)raid_cases,
		      (unsigned long long)max_rows, (unsigned long long)rows,
		      (unsigned long long)positions_with_damage);
	/*
	 * Every member keeps its superblock twice and an update writes copy 0 everywhere
	 * and flushes before copy 1 (super.c (S8)): a cut is inside one round at most,
	 * so each member keeps a valid copy and the array assembles (docs/design/raid.md,
	 * "Two superblock copies per member"). A cut after which it does not is a bug.
	 */
	assert_true(cut - 1 > 50);	/* the workload really wrote, as in w_crash_all */
	if (raid_cases)
		fail_msg("%llu cut positions left an array that does not assemble (JG_TEST_LOG=1 names them)",
			 (unsigned long long)raid_cases);
	assert_true(max_rows > 0);
	assert_true(max_rows < rows / 2);
	if (!positions_with_damage)
		fail_msg("no crash left a parity mismatch without SYNCRAID: the check cannot fail");
	r_tmpl_free();
	w_log_data = false;
}

static void test_jnl_crash_raid_declared_resync(void **state)
{
	(void)state;
	r_declared_resync(false, false);
}

static void test_jnl_crash_raid_declared_commit_after_data(void **state)
{
	(void)state;
	r_declared_resync(true, false);
}

static void test_jnl_crash_raid_declared_log_data(void **state)
{
	(void)state;
	r_declared_resync(false, true);
}

/*
 * checkpoint.c (K3): a background checkpoint step writes logged metadata home
 * (BLK_FS_RAIDSYNC, no flush), then a commit revokes those blocks (an rm) and
 * goes out with FUA, issuing no flush; the power is cut. Recovery replays no
 * revoked copy, and no declare block or log window names those homes: unless
 * recovery resyncs the homes of revoked copies, their rows keep the stale
 * parity of a half-kept read-modify-write. One metadata block per stripe row
 * (R_ROW_BLOCKS apart), so that no replayed block resyncs a revoked one's row.
 */
#define R_ROW_BLOCKS ((R_MEMBERS - 1) * R_CHUNK)
#define R_CP_BLOCKS 100u	/* three transactions of these: past jnl_cp_bg_mark() */
#define R_CP_REVOKED 32u	/* the first step's blocks (JNL_CP_SLICE) */

static int64_t r_cp_revoke_once(uint64_t seed, bool syncraid, struct jnl_recovery_report *rep)
{
	struct raid_fault_cfg fc = { .seed = seed, .keep_percent = 50, .tear = true };
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = JNL_DATA_DECLARED,
			       .no_commit_thread = true };
	struct blk_dev *mem[R_MEMBERS], *fault[R_MEMBERS], *top;
	struct raid_fault_domain *dom;
	struct jnl_handle *h;
	struct raid_array *a;
	struct jnl *j;
	int64_t mism;

	r_make(mem);
	assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
	for (unsigned int i = 0; i < R_MEMBERS; i++)
		assert_int_equal(raid_dev_fault_open(dom, mem[i], &fault[i]), 0);
	a = r_assemble(fault);
	assert_int_equal(jnl_open(raid_array_dev(a), &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, NULL), 0);
	assert_int_equal(jnl_start(j), 0);
	for (uint32_t v = 1; v <= 3; v++) {
		uint8_t *b = jg_alloc_blocks(1);

		assert_int_equal(jnl_handle_start(j, R_CP_BLOCKS, &h), 0);
		for (uint64_t i = 0; i < R_CP_BLOCKS; i++) {
			t_fill(b, i * R_ROW_BLOCKS, v);
			assert_int_equal(jnl_handle_dirty_meta(h, i * R_ROW_BLOCKS, b), 0);
		}
		assert_int_equal(jnl_handle_stop(h), 0);
		free(b);
		assert_int_equal(jnl_commit(j, 0, true), 0);
	}
	/* everything so far durable (the commit thread's flush, commit.c (C6)), so
	 * the commit below has no log to flush first: only what follows is in the
	 * members' caches */
	assert_int_equal(jnl_background_flush(j), 1);
	assert_int_equal(jnl_checkpoint_step(j), 1);	/* the pass begins */
	assert_int_equal(jnl_checkpoint_step(j), 1);	/* its first R_CP_REVOKED blocks home */
	assert_int_equal(jnl_handle_start(j, 1, &h), 0);
	for (uint64_t i = 0; i < R_CP_REVOKED; i++)
		assert_int_equal(jnl_handle_revoke(h, i * R_ROW_BLOCKS), 0);
	assert_int_equal(jnl_handle_stop(h), 0);
	assert_int_equal(jnl_commit(j, 0, true), 0);	/* durable, with FUA: no flush */
	raid_fault_domain_cut(dom);
	jnl_abandon(j);
	raid_abandon(a);
	for (unsigned int i = 0; i < R_MEMBERS; i++)
		blk_close(fault[i]);
	raid_fault_domain_free(dom);

	a = r_assemble(mem);
	top = r_pass(raid_array_dev(a), syncraid ? 0 : BLK_SYNCRAID);
	assert_int_equal(jnl_open(top, &cfg, &j), 0);
	assert_int_equal(jnl_recover(j, rep), 0);
	jnl_abandon(j);
	/* the blocks not revoked hold the last committed version */
	for (uint64_t i = R_CP_REVOKED; i < R_CP_BLOCKS; i++)
		if (t_read_ver(NULL, top, i * R_ROW_BLOCKS) != 3)
			fail_msg("seed %llu: block %llu not at version 3 after recovery",
				 (unsigned long long)seed, (unsigned long long)(i * R_ROW_BLOCKS));
	mism = raid_scrub(a, false, NULL, NULL, NULL);
	assert_true(mism >= 0);
	blk_close(top);
	assert_int_equal(raid_stop(a), 0);
	for (unsigned int i = 0; i < R_MEMBERS; i++)
		blk_close(mem[i]);
	return mism;
}

static void test_jnl_crash_raid_checkpoint_then_revoke(void **state)
{
	uint64_t damaged = 0;

	(void)state;
	r_tmpl_build();
	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct jnl_recovery_report rep = { 0 };
		int64_t mism = r_cp_revoke_once(seed, true, &rep);

		if (mism)
			fail_msg("seed %llu: scrub found %lld parity mismatches after recovery "
				 "(%llu copies revoked, %llu revoked homes resynced)",
				 (unsigned long long)seed, (long long)mism,
				 (unsigned long long)rep.blocks_revoked,
				 (unsigned long long)rep.revoked_blocks_resynced);
		if (rep.revoked_blocks_resynced != R_CP_REVOKED)
			fail_msg("seed %llu: %llu revoked homes resynced, expected %u",
				 (unsigned long long)seed,
				 (unsigned long long)rep.revoked_blocks_resynced, R_CP_REVOKED);
		/* the same cut recovered without SYNCRAID: the check can fail */
		if (r_cp_revoke_once(seed, false, &rep) > 0)
			damaged++;
	}
	if (!damaged)
		fail_msg("no cut left a parity mismatch without SYNCRAID: the check cannot fail");
	r_tmpl_free();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jnl_crash_raid_declared_resync),
		cmocka_unit_test(test_jnl_crash_raid_declared_commit_after_data),
		cmocka_unit_test(test_jnl_crash_raid_declared_log_data),
		cmocka_unit_test(test_jnl_crash_raid_checkpoint_then_revoke),
	};

	jg_log_set_level(getenv("JG_TEST_LOG") ? JG_LOG_DEBUG : JG_LOG_ERR - 1);
	if (getenv("JG_TEST_FILTER"))	/* debugging: one case, e.g. "*checkpoint*" */
		cmocka_set_test_filter(getenv("JG_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
