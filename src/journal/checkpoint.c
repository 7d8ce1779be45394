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
 */
#include <errno.h>
#include <stdlib.h>

#include "jnl_i.h"

int jnl_checkpoint_locked(struct jnl *j, bool clean)
{
	struct jnl_wb *wb = NULL;
	struct blk_req *reqs = NULL;
	void **stage = NULL;
	size_t nstage = 0, n = 0;
	uint64_t tail, seq;
	struct jnl_txn *c;
	int rc = 0, nr;

	if (j->cfg.readonly)
		return 0;
	pthread_mutex_lock(&j->lock);
	if (j->aborted) {
		pthread_mutex_unlock(&j->lock);
		return -EROFS;
	}
	wb = malloc((j->cp_n + 1) * sizeof(*wb));
	reqs = malloc((j->cp_n + 1) * sizeof(*reqs));
	if (!wb || !reqs) {
		pthread_mutex_unlock(&j->lock);
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < j->cp_n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, j->cp_list[i]);

		if (bh && bh->cp)
			wb[n++] = (struct jnl_wb){ bh->blkno, bh->cp };
	}
	/* (K1) */
	c = j->committing ? j->committing : j->running;
	if (c && c->log_first)
		tail = c->log_first;
	else
		tail = j->head;
	seq = c ? c->tid : j->committed_tid + 1;
	pthread_mutex_unlock(&j->lock);

	if (!n && tail == j->tail && !clean)
		goto out;
	jnl_wb_sort(wb, n);
	nr = jnl_wb_reqs(j, wb, n, j->write_flags, reqs, &stage, &nstage);
	if (nr < 0) {
		rc = nr;
		goto out;
	}
	if (nr)
		rc = jnl_io(j, reqs, (unsigned int)nr);
	/* PREFLUSH: the home writes are durable before the tail moves past them */
	if (!rc)
		rc = jnl_sb_write_locked(j, clean ? 0 : tail, seq,
					 j->cfg.mode == JNL_DATA_DECLARED && !clean, true);
	if (rc) {
		jnl_abort(j, rc, "checkpoint write");
		goto out;
	}
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, wb[i].blkno);

		if (bh && bh->cp == wb[i].buf) {
			free(bh->cp);
			bh->cp = NULL;
		}
	}
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
	pthread_mutex_unlock(&j->lock);
out:
	jnl_stage_free(j, stage, nstage);
	free(wb);
	free(reqs);
	return rc;
}

int jnl_log_reserve_locked(struct jnl *j, uint64_t need)
{
	int rc;

	/* keep one block free: head == tail means empty */
	if (j->used + need < j->cap)
		return 0;
	rc = jnl_checkpoint_locked(j, false);
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
	pthread_mutex_lock(&j->io_lock);
	rc = jnl_checkpoint_locked(j, false);
	pthread_mutex_unlock(&j->io_lock);
	jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "checkpoint dev=%s -> %d", j->dev->name, rc);
	return rc;
}
