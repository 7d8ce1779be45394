// SPDX-License-Identifier: MIT
/*
 * src/journal/checkpoint.c - writing committed metadata home and moving the log
 * tail (jbd2 checkpoint.c).
 *
 * A checkpoint writes, for every block with a checkpoint copy, the newest
 * committed copy (older committed copies of a block were replaced when a newer
 * transaction committed, J1), in one batch; then the journal superblock with
 * PREFLUSH|FUA names the new tail. The superblock write is the checkpoint's
 * commit point: a crash before it leaves the old tail, and recovery replays
 * the same transactions again (replay is idempotent).
 *
 * (K1) The tail never passes the first log block of a transaction that has not
 *      committed (J4): the committing one, or the running one once it wrote
 *      early declare blocks.
 * (K2) The background checkpoint. Writing everything at once stalls the next
 *      commit for as long as the home writes take: tens of milliseconds for a
 *      log of small random writes, whose data goes home here (commit.c (C5)).
 *      So once the log is past jnl_cp_bg_mark(), the commit thread, whenever it
 *      has nothing to commit, runs a *pass* in steps (jnl_checkpoint_step()),
 *      each under io_lock so that commits run between them and (J2) holds:
 *      - the first step fixes G, the newest committed transaction; the blocks
 *        whose cp copy is from G or older; and the tail the pass moves to, the
 *        log position of the first transaction after G (K1);
 *      - each next step writes up to JNL_CP_SLICE of those copies home, and
 *        skips a block whose copy a newer transaction replaced: logged again,
 *        its new copy is in a transaction after the new tail; written home as
 *        data or freed, it has no copy left to write;
 *      - the last step writes the superblock with PREFLUSH|FUA naming the new
 *        tail, the pass's commit point; a crash before it replays from the old
 *        tail, as for a full checkpoint.
 *      A full checkpoint (the log past jnl_cp_sync_mark(), or full; close) ends
 *      any pass: it writes every copy and moves the tail further.
 * (K3) Every home write of a checkpoint carries BLK_FS_RAIDSYNC (no bitmap) and
 *      is made durable only by the superblock's PREFLUSH that moves the tail
 *      past its copy: until then the copy is in the log recovery scans. So
 *      recovery resyncs the home of every copy of a committed transaction it
 *      scans: a replayed copy by its BLK_SYNCRAID write, and a revoked one (a
 *      commit after the step freed the block, and went out with FUA, no flush)
 *      by a BLK_SYNCRAID read of its home (recovery.c). A cut anywhere in a
 *      pass leaves no row with stale parity that recovery does not name.
 */
#include <errno.h>
#include <stdlib.h>

#include "jnl_i.h"

/* Copies one background checkpoint step writes (K2): one short batch of I/O,
 * the most a commit arriving meanwhile waits for. */
#define JNL_CP_SLICE 32u

/* The tail a checkpoint may move to now (K1), and the transaction there. lock held. */
static void jnl_cp_target_locked(const struct jnl *j, uint64_t *tail, uint64_t *seq)
{
	const struct jnl_txn *c = j->committing ? j->committing : j->running;

	JG_ASSERT_HELD(&j->lock);

	*tail = c && c->log_first ? c->log_first : j->head;
	*seq = c ? c->tid : j->committed_tid + 1;
}

static void jnl_cp_pass_drop_locked(struct jnl *j)
{
	JG_ASSERT_HELD(&j->lock);
	free(j->cpp_list);
	j->cpp_list = NULL;
	j->cpp_n = j->cpp_next = 0;
	j->cpp_on = false;
}

/* The @n cp copies of @wb are home: free them, unless a commit replaced one. lock held. */
static void jnl_cp_written_locked(struct jnl *j, const struct jnl_wb *wb, size_t n)
{
	JG_ASSERT_HELD(&j->lock);
	for (size_t i = 0; i < n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, wb[i].blkno);

		if (bh && bh->cp == wb[i].buf) {
			jnl_copy_free(j, bh->cp);
			bh->cp = NULL;
		}
	}
}

int jnl_checkpoint_iolocked(struct jnl *j, bool clean)
{
	struct jnl_wb *wb = NULL;
	struct blk_req *reqs = NULL;
	void **stage = NULL;
	size_t nstage = 0, n = 0;
	uint64_t tail, seq;
	int rc = 0, nr;

	JG_ASSERT_HELD(&j->io_lock);

	if (j->cfg.readonly)
		return 0;
	jg_mutex_lock(&j->lock);
	if (j->aborted) {
		jg_mutex_unlock(&j->lock);
		return -EROFS;
	}
	wb = malloc((j->cp_n + 1) * sizeof(*wb));
	reqs = malloc((j->cp_n + 1) * sizeof(*reqs));
	if (jnl_fault_alloc(j) || !wb || !reqs) {
		jg_mutex_unlock(&j->lock);
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < j->cp_n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, j->cp_list[i]);

		if (bh && bh->cp)
			wb[n++] = (struct jnl_wb){ bh->blkno, bh->cp };
	}
	jnl_cp_target_locked(j, &tail, &seq);	/* (K1) */
	jg_mutex_unlock(&j->lock);

	if (!n && tail == j->tail && !clean)
		goto out;
	jnl_wb_sort(wb, n);
	nr = jnl_wb_reqs(j, wb, n, j->write_flags, reqs, &stage, &nstage);
	if (nr < 0) {
		rc = nr;
		goto out;
	}
	jg_opoint_set(JG_OP_JNL_CP_FULL);
	if (nr)
		rc = jnl_io(j, reqs, (unsigned int)nr);
	/* PREFLUSH: the home writes are durable before the tail moves past them */
	if (!rc)
		rc = jnl_sb_write_iolocked(j, clean ? 0 : tail, seq,
					 j->cfg.mode == JNL_DATA_DECLARED && !clean, true);
	if (rc) {
		jnl_abort(j, rc, "checkpoint write");
		goto out;
	}
	jg_mutex_lock(&j->lock);
	jnl_cp_written_locked(j, wb, n);
	for (size_t i = 0; i < j->cp_n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, j->cp_list[i]);

		if (!bh)
			continue;
		bh->cp_listed = false;
		jnl_bh_gc(j, bh);
	}
	j->cp_n = 0;
	/* every committed transaction is behind the new tail: no logged copy of
	 * data can be replayed any more (C5) */
	jnl_map_free(&j->logged);
	j->tail = clean ? j->head : tail;
	j->used = jnl_dist(j, j->tail, j->head);
	j->checkpoints++;
	jnl_cp_pass_drop_locked(j);	/* (K2) this one went further */
	jg_mutex_unlock(&j->lock);
out:
	jnl_stage_free(j, stage, nstage);
	free(wb);
	free(reqs);
	return rc;
}

bool jnl_cp_step_wanted_locked(const struct jnl *j)
{
	uint64_t tail, seq;

	JG_ASSERT_HELD(&j->lock);

	if (j->aborted || j->cfg.readonly || !j->started)
		return false;
	if (j->cpp_on)
		return true;
	if (j->used <= jnl_cp_bg_mark(j))
		return false;
	jnl_cp_target_locked(j, &tail, &seq);
	return tail != j->tail;	/* else nothing could move it */
}

/* (K2) The first step of a pass. lock held. */
static int jnl_cp_pass_start_locked(struct jnl *j)
{
	uint64_t *list = malloc((j->cp_n ? j->cp_n : 1) * sizeof(*list));
	size_t n = 0;

	JG_ASSERT_HELD(&j->lock);

	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < j->cp_n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, j->cp_list[i]);

		if (bh && bh->cp)	/* each from a committed transaction */
			list[n++] = bh->blkno;
	}
	jnl_sort_u64(list, n);
	j->cpp_list = list;
	j->cpp_n = n;
	j->cpp_next = 0;
	j->cpp_tid = j->committed_tid;
	jnl_cp_target_locked(j, &j->cpp_tail, &j->cpp_seq);
	j->cpp_on = true;
	return 0;
}

/* (K2) The pass is durable: move the tail, forget what is behind it. lock held. */
static void jnl_cp_pass_end_locked(struct jnl *j)
{
	struct jnl_map keep;
	size_t k = 0;
	bool ok = true;

	JG_ASSERT_HELD(&j->lock);

	j->tail = j->cpp_tail;
	j->used = jnl_dist(j, j->tail, j->head);
	/* (C5) logged data of transactions behind the tail can no longer be replayed */
	jnl_map_init(&keep);
	for (size_t i = 0; ok && i < j->logged.cap; i++) {
		uint64_t *v;

		if (j->logged.keys[i] == JNL_MAP_EMPTY || !jg_seq_after(j->logged.vals[i], j->cpp_tid))
			continue;
		ok = !jnl_map_get(&keep, j->logged.keys[i], &v, NULL);
		if (ok)
			*v = j->logged.vals[i];
	}
	if (ok) {	/* else keep them all: a needless revoke is harmless */
		jnl_map_free(&j->logged);
		j->logged = keep;
	} else {
		jnl_map_free(&keep);
	}
	for (size_t i = 0; i < j->cp_n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, j->cp_list[i]);

		if (bh && bh->cp) {
			j->cp_list[k++] = bh->blkno;
		} else if (bh) {
			bh->cp_listed = false;
			jnl_bh_gc(j, bh);
		}
	}
	j->cp_n = k;
	j->cp_passes++;
	jnl_cp_pass_drop_locked(j);
}

int jnl_checkpoint_step(struct jnl *j)
{
	struct jnl_wb wb[JNL_CP_SLICE];
	struct blk_req reqs[JNL_CP_SLICE];
	void **stage = NULL;
	size_t nstage = 0, n = 0;
	int rc = 0, nr;

	if (j->cfg.readonly || !j->started)
		return 0;
	jg_mutex_lock(&j->io_lock);
	jg_mutex_lock(&j->lock);
	if (!jnl_cp_step_wanted_locked(j)) {
		jg_mutex_unlock(&j->lock);
		goto out;
	}
	if (!j->cpp_on) {
		rc = jnl_cp_pass_start_locked(j);
		jg_mutex_unlock(&j->lock);
		rc = rc ? rc : 1;
		goto out;
	}
	while (j->cpp_next < j->cpp_n && n < JNL_CP_SLICE) {
		struct jnl_bh *bh = jnl_bh_find(j, j->cpp_list[j->cpp_next++]);

		/* a copy is stable while io_lock is held: only commits replace it */
		if (bh && bh->cp && !jg_seq_after(bh->cp_tid, j->cpp_tid))
			wb[n++] = (struct jnl_wb){ bh->blkno, bh->cp };
	}
	jg_mutex_unlock(&j->lock);
	if (n) {
		/* (K3) no flush: the copies stay in the log until the pass ends */
		nr = jnl_wb_reqs(j, wb, n, j->write_flags, reqs, &stage, &nstage);
		jg_opoint_set(JG_OP_JNL_CP_STEP);
		rc = nr < 0 ? nr : jnl_io(j, reqs, (unsigned int)nr);
		if (rc) {
			jnl_abort(j, rc, "checkpoint write");
			goto out;
		}
		jg_mutex_lock(&j->lock);
		jnl_cp_written_locked(j, wb, n);	/* still listed until the pass ends */
		jg_mutex_unlock(&j->lock);
		rc = 1;
		goto out;
	}
	/* PREFLUSH: the home writes are durable before the tail moves past them */
	rc = jnl_sb_write_iolocked(j, j->cpp_tail, j->cpp_seq, j->cfg.mode == JNL_DATA_DECLARED, true);
	if (rc) {
		jnl_abort(j, rc, "checkpoint superblock write");
		goto out;
	}
	jg_mutex_lock(&j->lock);
	jnl_cp_pass_end_locked(j);
	jg_mutex_unlock(&j->lock);
out:
	jnl_stage_free(j, stage, nstage);
	jg_mutex_unlock(&j->io_lock);
	return rc;
}

int jnl_log_reserve_iolocked(struct jnl *j, uint64_t need)
{
	int rc;

	JG_ASSERT_HELD(&j->io_lock);

	/* keep one block free: head == tail means empty */
	if (j->used + need < j->cap)
		return 0;
	rc = jnl_checkpoint_iolocked(j, false);
	if (rc)
		return rc;
	if (j->used + need < j->cap)
		return 0;
	jg_log(JG_LOG_ERR, JNL_SUBSYS, "dev=%s log full: used=%llu need=%llu cap=%llu", j->dev->name,
	       (unsigned long long)j->used, (unsigned long long)need, (unsigned long long)j->cap);
	return -ENOSPC;
}

int jnl_checkpoint(struct jnl *j)
{
	int rc;

	if (j->cfg.readonly || !j->started)
		return 0;
	jg_mutex_lock(&j->io_lock);
	rc = jnl_checkpoint_iolocked(j, false);
	jg_mutex_unlock(&j->io_lock);
	jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "checkpoint dev=%s -> %d", j->dev->name, rc);
	return rc;
}
