/* SPDX-License-Identifier: MIT */
/*
 * tests/crash/jnl_crash.h - the scripted journal workload and its model, shared by
 * the journal crash tests (test_jnl_crash.c, test_jnl_crash_wrap.c,
 * test_jnl_crash_raid.c).
 *
 * A scripted workload (metadata and data, revokes, fsyncs, early writeback,
 * checkpoints) runs over a fault device (raid_fault_domain) cut at write or flush
 * N, for N = 1, 2, ... until the workload completes without reaching the cut. After
 * each cut: abandon, recover from the surviving memory device, and compare with
 * a model of every step:
 *   - block 0 is a marker written by every step: its version P names the last
 *     step whose transaction recovery replayed;
 *   - P >= the last step whose jnl_commit(wait) returned before the cut
 *     (durable), and P <= the last step started;
 *   - every metadata block holds exactly its state after step P;
 *   - data blocks: journal mode exact; ordered and declared at least the state
 *     after P (the state after P or a version written later); writeback at least
 *     the state after the last durable step. Never garbage, except a block with
 *     a later write in flight when the cut tears writes.
 * Failures print mode, cut position and seed.
 */
#ifndef JGRFS_TESTS_JNL_CRASH_H
#define JGRFS_TESTS_JNL_CRASH_H

#include "../unit/journal/jnl_test.h"

#define W_STEPS 30
#define W_STEPS_WRAP 64	/* journal mode: > 1024 log blocks, the log wraps */
#define W_META_POOL 50		/* random metadata blocks 1..49; 50..59 freed and reused */
#define W_DATA_FIRST 1000
#define W_DATA_POOL 200
#define W_NBLK (W_DATA_FIRST + W_DATA_POOL)
#define W_MAXEV 64

enum w_kind { W_META = 1, W_DATA = 2, W_FREE = 3 };

struct w_ev {
	uint16_t step;
	uint8_t kind;
};

struct w_model {
	struct w_ev ev[W_NBLK][W_MAXEV];
	uint8_t nev[W_NBLK];
	int durable;			/* last step durable before the cut */
	int started;			/* last step begun */
};

static inline void w_event(struct w_model *m, uint64_t b, int step, enum w_kind k)
{
	uint8_t n = m->nev[b];

	assert_true(n < W_MAXEV);
	if (n && m->ev[b][n - 1].step == step) {	/* same step twice: last wins */
		m->ev[b][n - 1].kind = (uint8_t)k;
		return;
	}
	m->ev[b][n].step = (uint16_t)step;
	m->ev[b][n].kind = (uint8_t)k;
	m->nev[b] = n + 1;
}

static inline uint64_t w_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Dirty @b at version @step as @k through @h, recording the event. */
static inline int w_dirty(struct w_model *m, struct jnl_handle *h, uint64_t b, int step, enum w_kind k)
{
	uint8_t *buf = jg_alloc_blocks(1);
	int rc;

	t_fill(buf, b, (uint32_t)step);
	rc = k == W_META ? jnl_handle_dirty_meta(h, b, buf) : jnl_handle_dirty_data(h, b, buf);
	free(buf);
	if (!rc)
		w_event(m, b, step, k);
	return rc;
}

/* Declared: every commit block after its data (jnl_cfg.commit_after_data). */
static bool w_commit_after_data;
/*
 * Small commits log their data (jnl_cfg.log_data_max). With 12 and early
 * writeback at 16 data blocks, the workload's one-step transactions (10 or 11 data
 * blocks) log their data and its two-step ones write theirs home, early and at
 * commit, over blocks the one before logged.
 */
static bool w_log_data;

/*
 * Run the workload on @dev with @dom's cut; stop at the first step after the cut
 * (the process is dead). Returns true when it completed with no cut.
 */
static inline bool w_run(struct blk_dev *dev, struct raid_fault_domain *dom, enum jnl_data_mode mode,
		  int steps, struct w_model *m)
{
	struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true,
			       .max_txn_data_blocks = w_log_data ? 16 : 8,
			       .commit_after_data = w_commit_after_data,
			       .log_data_max = w_log_data ? 12 : 0 };
	uint64_t x = 0x243f6a8885a308d3ull;
	struct jnl *j = NULL;
	int rc;

	memset(m, 0, sizeof(*m));
	m->durable = 0;
	if (jnl_open(dev, &cfg, &j) || jnl_recover(j, NULL) || jnl_start(j))
		goto dead;
	for (int s = 1; s <= steps; s++) {
		struct jnl_handle *h = NULL;
		uint64_t tid;

		if (raid_fault_domain_is_cut(dom))
			goto dead;
		m->started = s;
		assert_int_equal(jnl_handle_start(j, 16, &h), 0);
		assert_int_equal(w_dirty(m, h, 0, s, W_META), 0);
		for (int k = 0; k < 6; k++)
			assert_int_equal(w_dirty(m, h, 1 + w_rand(&x) % (W_META_POOL - 1), s, W_META), 0);
		for (int k = 0; k < 10; k++)
			assert_int_equal(w_dirty(m, h, W_DATA_FIRST + w_rand(&x) % W_DATA_POOL, s, W_DATA), 0);
		/* a free-and-reuse cycle of 7 steps: metadata at 3, freed (revoke + forget)
		 * at 6 and committed, reused as data at 0 of the next cycle */
		{
			uint64_t f = W_META_POOL + (uint64_t)(s / 7) % 10;

			if (s % 7 == 3)
				assert_int_equal(w_dirty(m, h, f, s, W_META), 0);
			if (s % 7 == 6) {
				assert_int_equal(jnl_handle_revoke(h, f), 0);
				assert_int_equal(jnl_handle_forget(h, f), 0);
				w_event(m, f, s, W_FREE);
			}
			f = W_META_POOL + (uint64_t)(s / 7 + 9) % 10;
			if (s % 7 == 0)
				assert_int_equal(w_dirty(m, h, f, s, W_DATA), 0);
		}
		tid = jnl_handle_tid(h);
		assert_int_equal(jnl_handle_stop(h), 0);
		/* fsync every third step and after each free (reuse needs it committed) */
		if (s % 3 == 0 || s % 7 == 6) {
			rc = jnl_commit(j, tid, true);
			if (raid_fault_domain_is_cut(dom))
				goto dead;
			assert_int_equal(rc, 0);
			m->durable = s;
		} else if (s % 3 == 2) {
			assert_int_equal(jnl_commit(j, 0, false), 0);
		}
		if (s % 10 == 0)
			assert_int_equal(jnl_checkpoint(j), 0);
	}
	if (w_log_data) {	/* the variant does what it says */
		struct jnl_info info;

		jnl_info_get(j, &info);
		assert_true(info.logged_data_blocks >= (uint64_t)steps);
	}
	rc = jnl_close(j);
	j = NULL;
	if (raid_fault_domain_is_cut(dom))
		goto dead;
	assert_int_equal(rc, 0);
	m->durable = steps;
	return true;
dead:
	jnl_abandon(j);
	return false;
}

/* Version of @b after step @p per the model (0: never written); kind through *@k. */
static inline int64_t w_state(const struct w_model *m, uint64_t b, int p, int *k)
{
	int64_t v = 0;

	*k = 0;
	for (unsigned int i = 0; i < m->nev[b] && m->ev[b][i].step <= p; i++) {
		v = m->ev[b][i].step;
		*k = m->ev[b][i].kind;
	}
	return v;
}

static inline bool w_later_data(const struct w_model *m, uint64_t b, int p, int64_t v)
{
	for (unsigned int i = 0; i < m->nev[b]; i++)
		if (m->ev[b][i].step > p && m->ev[b][i].kind == W_DATA &&
		    (v < 0 || m->ev[b][i].step == v))
			return true;
	return false;
}

/*
 * The check of the header comment on @dev, as recovered: true when the model
 * allows what it holds, else false with what is wrong in @why.
 */
static inline bool w_verdict(struct blk_dev *dev, const struct w_model *m, enum jnl_data_mode mode,
			     bool tear, char *why, size_t len)
{
	int64_t p = t_read_ver(NULL, dev, 0);

	if (p < m->durable || p > m->started) {
		snprintf(why, len, "replayed up to step %lld, durable %d, started %d", (long long)p,
			 m->durable, m->started);
		return false;
	}
	for (uint64_t b = 0; b < W_NBLK; b++) {
		int64_t got, want;
		int kind, base;

		if (b >= W_META_POOL + 10 && b < W_DATA_FIRST)
			continue;
		got = t_read_ver(NULL, dev, b);
		want = w_state(m, b, (int)p, &kind);
		if (kind == W_FREE)
			continue;
		if (!kind && m->nev[b])		/* not yet written: it is what it will be */
			kind = m->ev[b][0].kind;
		if (kind != W_DATA || mode == JNL_DATA_JOURNAL) {
			if (got != want)
				goto bad;
			continue;
		}
		/* data: the state at the base step, or a version written after it */
		base = mode == JNL_DATA_WRITEBACK ? m->durable : (int)p;
		want = w_state(m, b, base, &kind);
		if (kind == W_FREE || got == want)
			continue;
		if (got >= 0 && w_later_data(m, b, base, got))
			continue;
		if (got < 0 && tear && w_later_data(m, b, base, -1))
			continue;
		goto bad;
bad:
		snprintf(why, len, "block %llu holds %lld, expected %lld (replayed to step %lld, durable %d)",
			 (unsigned long long)b, (long long)got, (long long)want, (long long)p,
			 m->durable);
		return false;
	}
	return true;
}

static inline void w_check(struct blk_dev *dev, const struct w_model *m, enum jnl_data_mode mode,
		    uint64_t cut, bool tear)
{
	char why[160];

	if (!w_verdict(dev, m, mode, tear, why, sizeof(why)))
		fail_msg("mode %s cut %llu tear %d: %s", jnl_data_mode_name(mode),
			 (unsigned long long)cut, tear, why);
}

static inline void w_crash_all(enum jnl_data_mode mode, bool tear, int steps)
{
	struct w_model *m = calloc(1, sizeof(*m));
	uint64_t cut;

	for (cut = 1;; cut++) {
		struct raid_fault_cfg fc = { .cut_after_writes = cut, .seed = cut, .keep_percent = 50,
					     .tear = tear, .cut_at_flushes = true };
		struct raid_fault_domain *dom;
		struct blk_dev *mem = t_mem_dev(), *f;
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = mode, .no_commit_thread = true };
		struct jnl *j = NULL;
		bool done;
		int rc;

		assert_int_equal(raid_fault_domain_new(&fc, &dom), 0);
		assert_int_equal(raid_dev_fault_open(dom, mem, &f), 0);
		done = w_run(f, dom, mode, steps, m);
		blk_close(f);
		raid_fault_domain_free(dom);
		/* power back: recover from what the memory device kept */
		rc = jnl_open(mem, &cfg, &j);
		if (rc)
			fail_msg("mode %s cut %llu: open after crash: %d", jnl_data_mode_name(mode),
				 (unsigned long long)cut, rc);
		rc = jnl_recover(j, NULL);
		if (rc)
			fail_msg("mode %s cut %llu: recovery: %d", jnl_data_mode_name(mode),
				 (unsigned long long)cut, rc);
		jnl_abandon(j);
		w_check(mem, m, mode, cut, tear);
		blk_close(mem);
		if (done)
			break;
	}
	assert_true(cut > 50);	/* the workload really wrote */
	free(m);
}

#endif /* JGRFS_TESTS_JNL_CRASH_H */
