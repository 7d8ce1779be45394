// SPDX-License-Identifier: MIT
/*
 * src/journal/declare.c - declare blocks and early data writeback (seed 004).
 *
 * In declared mode the journal, not the array's write-intent bitmap, answers for
 * the parity of every stripe it writes. Invariants:
 *   (D1) A data block of a declared transaction reaches the device only after a
 *        declare block naming it is durable in the log.
 *   (D2) Every write the journal issues in declared mode carries BLK_FS_RAIDSYNC
 *        (j->write_flags): data, log blocks, checkpoint writes, the superblock.
 *   (D3) The commit block counts only with the transaction's data durable: it
 *        is submitted after its data and log blocks are complete and flushed
 *        (commit.c, C2), or, for a small transaction, in one batch with them,
 *        the declare tags' crc32c letting recovery check the data (C3).
 *
 * Early writeback: once cfg.max_txn_data_blocks data blocks are pending in the
 * running transaction, they are written home and their copies freed, so memory
 * stays bounded and writeback does not wait for the commit. In declared mode the
 * batch is first declared: all its declare blocks in one write with FUA, one
 * durability point per batch (the seeds declared every declare block's worth,
 * 507 blocks, which costs a device flush per 2 MiB of data).
 *
 * With a commit thread the batch is the thread's, double-buffered: the writer
 * asks (jnl_early_request_locked) and goes on filling the next batch while the
 * thread writes this one; it waits only when the next batch is full too. At
 * most two batches of copies are held. Without a thread the writer writes the
 * batch itself. Either way the batch is taken under io_lock, so it is written
 * whole before or after a commit's I/O, never beside it (J2).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

void jnl_declare_fill(struct jnl *j, uint8_t *img, uint64_t pos, uint64_t tid,
		      const struct jnl_wb *wb, size_t n, bool crc)
{
	size_t i = 0;

	while (i < n) {
		struct jnl_list_hdr *h = (struct jnl_list_hdr *)img;
		struct jnl_tag *tags = (struct jnl_tag *)(img + sizeof(*h));
		size_t cnt = n - i;

		if (cnt > JNL_DESC_TAGS)
			cnt = JNL_DESC_TAGS;
		memset(img, 0, JG_BLOCK_SIZE);
		h->count = jg_cpu_to_le32((uint32_t)cnt);
		for (size_t k = 0; k < cnt; k++, i++) {
			tags[k].blkno = jg_cpu_to_le64(wb[i].blkno);
			if (crc)
				tags[k].crc = jg_cpu_to_le32(
				    jg_crc32c(j->seed, wb[i].buf, JG_BLOCK_SIZE));
			else
				tags[k].flags = jg_cpu_to_le32(JNL_TAG_NO_CRC);
		}
		jg_blk_seal(img, JG_BLOCK_SIZE, JNL_MAGIC_DECLARE, JNL_VERSION, 0, tid,
			    jnl_abs(j, pos), j->seed);
		img += JG_BLOCK_SIZE;
		pos = jnl_next_pos(j, pos, 1);
	}
}

/* One early batch of @t: its copies, and what writing them takes. */
struct jnl_early {
	struct jnl_wb *wb;	/* the batch, by home block (jnl_wb_sort) */
	size_t n;
	struct blk_req *reqs;	/* its declare write, then its data writes */
	uint8_t *img;		/* its declare blocks */
	void **stage;
	size_t nstage;
	bool crc;		/* the declare tags carry the data's crc32c */
};

static void jnl_early_free(struct jnl *j, struct jnl_early *e)
{
	jnl_stage_free(j, e->stage, e->nstage);
	free(e->wb);
	free(e->reqs);
	free(e->img);
}

/*
 * 1. Take the batch: every run-stage data copy of @t becomes its in-flight
 * copy, and @t starts a new batch. Nothing taken (e->n 0) when @t is being
 * committed: the commit writes the data. io_lock and lock held.
 */
static int jnl_early_take_locked(struct jnl *j, struct jnl_txn *t, struct jnl_early *e)
{
	JG_ASSERT_HELD(&j->lock);

	if (j->aborted)
		return -EROFS;
	if (j->running != t || j->committing)
		return 0;	/* being committed: the commit writes the data */
	e->wb = malloc((t->ndata_pending + 1) * sizeof(*e->wb));
	if (!e->wb)
		return -ENOMEM;
	/* every run-stage data copy was listed in t->pend when it was made; the
	 * entries of copies forgotten or made metadata since have none */
	for (size_t i = 0; i < t->npend && e->n < t->ndata_pending; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, t->pend[i]);

		if (!jnl_bh_run_data(bh))
			continue;
		/* readers see the inflight copy until it is home (J1) */
		bh->inflight = bh->run;
		bh->run = NULL;
		e->wb[e->n++] = (struct jnl_wb){ bh->blkno, bh->inflight };
	}
	t->ndata_pending = 0;
	t->npend = 0;
	pthread_cond_broadcast(&j->cond);	/* a writer waiting for this batch to be taken */
	/* only a commit of at most JNL_COMMIT_CSUM_MAX_DATA data blocks reads them */
	e->crc = t->data_written + e->n <= JNL_COMMIT_CSUM_MAX_DATA;
	return 0;
}

/*
 * 2. Declared mode: declare the batch, all its declare blocks in one write with
 * FUA, before any of its data goes home (D1). io_lock held.
 */
static int jnl_early_declare(struct jnl *j, struct jnl_txn *t, struct jnl_early *e)
{
	uint64_t ndecl, pos;
	unsigned int nr;
	int rc;

	ndecl = jnl_declare_blocks_for(e->n);
	rc = jnl_log_reserve_iolocked(j, ndecl);
	if (rc)
		return rc;
	e->img = jg_alloc_blocks(ndecl);
	if (!e->img)
		return -ENOMEM;
	jg_mutex_lock(&j->lock);
	pos = j->head;
	if (!t->log_first)
		t->log_first = pos;	/* (J4) from now on the tail stays before it */
	jg_mutex_unlock(&j->lock);
	jnl_declare_fill(j, e->img, pos, t->tid, e->wb, e->n, e->crc);
	nr = jnl_log_reqs(j, BLK_OP_WRITE, j->write_flags | BLK_FUA | BLK_APPEND, pos, ndecl,
			  e->img, 0, e->reqs);
	jg_opoint_set(JG_OP_JNL_DECLARE);
	rc = jnl_io(j, e->reqs, nr);	/* (D1) durable before the data below */
	if (rc)
		return rc;
	/* crash after this: declare blocks, no commit -> recovery resyncs the
	 * listed blocks; the transaction is not replayed */
	jg_mutex_lock(&j->lock);
	j->head = jnl_next_pos(j, pos, ndecl);
	j->used += ndecl;
	t->declare_written += ndecl;
	j->declare_blocks += ndecl;
	jg_mutex_unlock(&j->lock);
	return 0;
}

/* 3. Write the batch home, in one submission. io_lock held. */
static int jnl_early_data(struct jnl *j, struct jnl_early *e)
{
	int nd;

	nd = jnl_wb_reqs(j, e->wb, e->n, j->write_flags, e->reqs, &e->stage, &e->nstage);
	if (nd < 0)
		return nd;
	jg_opoint_set(JG_OP_JNL_EARLY_DATA);
	return jnl_io(j, e->reqs, (unsigned int)nd);
}

/* 4. The batch is home: its in-flight copies, and older logged ones, go. lock held. */
static void jnl_early_done_locked(struct jnl *j, struct jnl_txn *t, const struct jnl_early *e)
{
	JG_ASSERT_HELD(&j->lock);

	for (size_t i = 0; i < e->n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, e->wb[i].blkno);

		jnl_copy_free(j, bh->inflight);
		bh->inflight = NULL;
		/* home now holds newer contents than any older logged copy */
		jnl_copy_free(j, bh->cp);
		bh->cp = NULL;
		jnl_bh_gc(j, bh);
	}
	t->data_written += e->n;
	j->early_batches++;
}

/*
 * A step after the take failed: the journal is aborted, and the copies stay
 * readable, back in the run stage unless re-dirtied since. io_lock held.
 */
static void jnl_early_fail(struct jnl *j, int rc, const struct jnl_early *e)
{
	jnl_abort(j, rc, "early data writeback");
	jg_mutex_lock(&j->lock);
	/* keep the copies readable: back to the run stage unless re-dirtied */
	for (size_t i = 0; i < e->n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, e->wb[i].blkno);

		if (!bh->run) {
			bh->run = bh->inflight;
			bh->run_kind = JNL_KIND_DATA;
		} else {
			jnl_copy_free(j, bh->inflight);
		}
		bh->inflight = NULL;
	}
	jg_mutex_unlock(&j->lock);
}

/*
 * Write @t's pending data early: take the batch, declare it (declared mode),
 * write it home, free its copies; all under io_lock (J2).
 */
int jnl_early_writeback(struct jnl *j, struct jnl_txn *t)
{
	struct jnl_early e = { 0 };
	int rc;

	jg_mutex_lock(&j->lock);
	/* (J3) our declare blocks must follow the committing transaction's log */
	while (j->committing && j->running == t && !j->aborted)
		jg_cond_wait(&j->cond, &j->lock);
	jg_mutex_unlock(&j->lock);

	jg_mutex_lock(&j->io_lock);
	jg_mutex_lock(&j->lock);
	rc = jnl_early_take_locked(j, t, &e);
	jg_mutex_unlock(&j->lock);
	if (rc || !e.n)
		goto out;

	jnl_wb_sort(e.wb, e.n);
	rc = -ENOMEM;
	e.reqs = malloc((e.n + 2) * sizeof(*e.reqs));
	if (e.reqs)
		rc = j->cfg.mode == JNL_DATA_DECLARED ? jnl_early_declare(j, t, &e) : 0;
	if (!rc)
		rc = jnl_early_data(j, &e);
	if (rc) {
		jnl_early_fail(j, rc, &e);
		goto out;
	}
	jg_mutex_lock(&j->lock);
	jnl_early_done_locked(j, t, &e);
	jg_mutex_unlock(&j->lock);
out:
	jg_mutex_unlock(&j->io_lock);
	jnl_early_free(j, &e);
	return rc;
}

/*
 * A writer of @t has a full batch pending: ask the commit thread to write it
 * (jnl_thread_main), waiting first while the thread still has the batch before
 * it, or has not taken it yet. lock held; the thread is on.
 */
void jnl_early_request_locked(struct jnl *j, struct jnl_txn *t)
{
	bool waited = false;

	JG_ASSERT_HELD(&j->lock);

	while ((j->early_busy || j->early_want) && j->running == t && !j->aborted && !j->stop &&
	       t->ndata_pending >= j->cfg.max_txn_data_blocks) {
		if (!waited)
			j->early_waits++;
		waited = true;
		jg_cond_wait(&j->cond, &j->lock);
	}
	if (j->running == t && !j->early_want && t->ndata_pending >= j->cfg.max_txn_data_blocks) {
		j->early_want = true;
		pthread_cond_signal(&j->kick);
	}
}
