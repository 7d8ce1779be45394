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

int jnl_early_writeback(struct jnl *j, struct jnl_txn *t)
{
	bool declared = j->cfg.mode == JNL_DATA_DECLARED;
	struct jnl_wb *wb = NULL;
	struct blk_req *reqs = NULL;
	uint8_t *img = NULL;
	void **stage = NULL;
	size_t nstage = 0, n = 0;
	uint64_t ndecl = 0, pos = 0;
	bool crc = false;
	int rc = 0, nd;

	jg_mutex_lock(&j->lock);
	/* (J3) our declare blocks must follow the committing transaction's log */
	while (j->committing && j->running == t && !j->aborted)
		jg_cond_wait(&j->cond, &j->lock);
	jg_mutex_unlock(&j->lock);

	jg_mutex_lock(&j->io_lock);
	jg_mutex_lock(&j->lock);
	if (j->aborted) {
		rc = -EROFS;
		goto out_unlock;
	}
	if (j->running != t || j->committing)
		goto out_unlock;	/* being committed: the commit writes the data */
	wb = malloc((t->ndata_pending + 1) * sizeof(*wb));
	if (!wb) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	/* every run-stage data copy was listed in t->pend when it was made; the
	 * entries of copies forgotten or made metadata since have none */
	for (size_t i = 0; i < t->npend && n < t->ndata_pending; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, t->pend[i]);

		if (!jnl_bh_run_data(bh))
			continue;
		/* readers see the inflight copy until it is home (J1) */
		bh->inflight = bh->run;
		bh->run = NULL;
		wb[n++] = (struct jnl_wb){ bh->blkno, bh->inflight };
	}
	t->ndata_pending = 0;
	t->npend = 0;
	pthread_cond_broadcast(&j->cond);	/* a writer waiting for this batch to be taken */
	/* only a commit of at most JNL_COMMIT_CSUM_MAX_DATA data blocks reads them */
	crc = t->data_written + n <= JNL_COMMIT_CSUM_MAX_DATA;
	jg_mutex_unlock(&j->lock);
	if (!n)
		goto out_io;

	jnl_wb_sort(wb, n);
	rc = -ENOMEM;
	reqs = malloc((n + 2) * sizeof(*reqs));
	if (!reqs)
		goto out_fail;
	if (declared) {
		unsigned int nr;

		ndecl = jnl_declare_blocks_for(n);
		rc = jnl_log_reserve_iolocked(j, ndecl);
		if (rc)
			goto out_fail;
		rc = -ENOMEM;
		img = jg_alloc_blocks(ndecl);
		if (!img)
			goto out_fail;
		jg_mutex_lock(&j->lock);
		pos = j->head;
		if (!t->log_first)
			t->log_first = pos;	/* (J4) from now on the tail stays before it */
		jg_mutex_unlock(&j->lock);
		jnl_declare_fill(j, img, pos, t->tid, wb, n, crc);
		nr = jnl_log_reqs(j, BLK_OP_WRITE, j->write_flags | BLK_FUA | BLK_APPEND, pos, ndecl,
				  img, 0, reqs);
		jg_opoint_set(JG_OP_JNL_DECLARE);
		rc = jnl_io(j, reqs, nr);	/* (D1) durable before the data below */
		if (rc)
			goto out_fail;
		/* crash after this: declare blocks, no commit -> recovery resyncs the
		 * listed blocks; the transaction is not replayed */
		jg_mutex_lock(&j->lock);
		j->head = jnl_next_pos(j, pos, ndecl);
		j->used += ndecl;
		t->declare_written += ndecl;
		j->declare_blocks += ndecl;
		jg_mutex_unlock(&j->lock);
	}
	nd = jnl_wb_reqs(j, wb, n, j->write_flags, reqs, &stage, &nstage);
	if (nd < 0) {
		rc = nd;
		goto out_fail;
	}
	jg_opoint_set(JG_OP_JNL_EARLY_DATA);
	rc = jnl_io(j, reqs, (unsigned int)nd);
	if (rc)
		goto out_fail;
	jg_mutex_lock(&j->lock);
	for (size_t i = 0; i < n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, wb[i].blkno);

		jnl_copy_free(j, bh->inflight);
		bh->inflight = NULL;
		/* home now holds newer contents than any older logged copy */
		jnl_copy_free(j, bh->cp);
		bh->cp = NULL;
		jnl_bh_gc(j, bh);
	}
	t->data_written += n;
	j->early_batches++;
	goto out_unlock;

out_fail:
	jnl_abort(j, rc, "early data writeback");
	jg_mutex_lock(&j->lock);
	/* keep the copies readable: back to the run stage unless re-dirtied */
	for (size_t i = 0; i < n; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, wb[i].blkno);

		if (!bh->run) {
			bh->run = bh->inflight;
			bh->run_kind = JNL_KIND_DATA;
		} else {
			jnl_copy_free(j, bh->inflight);
		}
		bh->inflight = NULL;
	}
out_unlock:
	jg_mutex_unlock(&j->lock);
out_io:
	jg_mutex_unlock(&j->io_lock);
	jnl_stage_free(j, stage, nstage);
	free(wb);
	free(reqs);
	free(img);
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
