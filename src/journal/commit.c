// SPDX-License-Identifier: MIT
/*
 * src/journal/commit.c - committing a transaction and the commit thread
 * (jbd2 commit.c, kjournald).
 *
 * Steps of a commit (jnl_commit_running, then jnl_commit_io under io_lock):
 *   1. lock: the running transaction becomes the committing one, a new running
 *      transaction takes new handles, the locked one's copies are frozen
 *      (bh->run -> bh->com); wait until its handles have stopped.
 *   2. build the log image: [declare][descriptor, copies]*[revoke]...[commit]
 *      (jnl_commit_image).
 *   3. run the plan of the commit (plan.c: jnl_plan() chooses the steps for the
 *      data mode, (C1)-(C3) and (C6) there; jnl_commit_run() issues them). Its
 *      last step is THE COMMIT POINT: once it completes (and every checksum of
 *      the transaction matches) recovery replays the transaction.
 *   4. the logged copies become checkpoint copies (bh->cp); the data copies,
 *      now home, are freed; logged data is remembered in j->logged (C5)
 *      (jnl_commit_done_locked).
 *
 * The rules (docs/FORMAT.md §3.6 prints the plans):
 *   (C1)-(C3) the order of a commit's writes per data mode: plan.c.
 *   (C4) jnl_commit(wait) returns only after the last step of its mode. It
 *        commits in its caller when no other commit is under way; the commit
 *        thread takes the rest: timed commits, requests that do not wait, early
 *        writeback and the background checkpoint (checkpoint.c (K2)).
 *   (C5) ordered and declared, with cfg.log_data_max: a transaction of at most
 *        that many data blocks, none written early, logs them like metadata
 *        (JNL_TB_LOGGED) and commits as C1: one flush, no declare block, where
 *        C2 and C3 take two. Its data goes home at checkpoint, covered by replay
 *        as metadata is. Until that checkpoint moves the tail past it, a logged
 *        copy could be replayed over a newer home write of the block: a later
 *        transaction writing the block home revokes it (JNL_TB_LREVOKE, set when
 *        the block is dirtied, jnl_logged_copy_locked()).
 *   (C6) declared: a log write's FUA makes its data durable, its parity only at
 *        the next flush (src/raid/stripe.c (W4)), so recovery resyncs the log
 *        a crash may have left with stale parity. To bound it, a commit that
 *        finds more than jnl_unflushed_max() log blocks written since the last
 *        flush (j->unflushed_from) flushes the array first. Past half of that
 *        the commit thread flushes the array in the background, between
 *        commits and without io_lock (jnl_background_flush()), so that a commit
 *        seldom has to: a flush makes durable every log write completed before
 *        it was issued, up to the head read then.
 *   (C7) A commit that fails aborts the journal, whatever failed (an
 *        allocation, the log reservation, staging, a write): "committing" stays
 *        set, and every waiter for it (jnl_commit, jnl_commit_running, a
 *        handle start on a full transaction) wakes on the abort and returns
 *        -EROFS. A failure after the commit point (the checkpoint that follows
 *        when the log is past jnl_cp_sync_mark()) does not fail the commit.
 * A crash before the commit point leaves a transaction recovery drops; in
 * declared mode recovery resyncs the blocks its declare blocks list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jnl_i.h"

/* A block of a transaction whose copy is logged (and then checkpointed). */
static bool jnl_tb_logged(uint64_t f)
{
	return ((f & JNL_TB_META) && !(f & JNL_TB_REVOKE)) || (f & JNL_TB_LOGGED);
}

static bool jnl_txn_empty(const struct jnl_txn *t)
{
	return !t->nchanges && !t->declare_written;
}

struct jnl_commit_lists {
	struct jnl_wb *meta, *data;
	uint64_t *revoke, *forget;
	size_t nmeta, ndata, nrevoke, nforget;
};

static void jnl_commit_lists_free(struct jnl_commit_lists *l)
{
	free(l->meta);
	free(l->data);
	free(l->revoke);
	free(l->forget);
}

bool jnl_logged_copy_locked(const struct jnl *j, const struct jnl_txn *t, uint64_t blkno)
{
	const uint64_t *f;

	JG_ASSERT_HELD(&j->lock);

	if (jnl_map_find(&j->logged, blkno))
		return true;
	if (!j->committing || j->committing == t || !j->committing->log_data)
		return false;
	f = jnl_map_find(&j->committing->blocks, blkno);
	return f && (*f & JNL_TB_LOGGED);
}

/*
 * (C5) May @t, locked and with its handles stopped, log its data (§3.8)? Only a
 * small transaction none of whose data went home early; not a freed block (it
 * goes home, as before); not a block the running transaction already holds: it
 * could be going home without the revoke that jnl_logged_copy_locked() gives
 * blocks dirtied from now on. If so, marks its data blocks JNL_TB_LOGGED. lock held.
 */
static bool jnl_commit_log_data_locked(struct jnl *j, struct jnl_txn *t)
{
	JG_ASSERT_HELD(&j->lock);
	if (!j->cfg.log_data_max ||
	    (j->cfg.mode != JNL_DATA_ORDERED && j->cfg.mode != JNL_DATA_DECLARED) ||
	    !t->ndata_pending || t->ndata_pending > j->cfg.log_data_max || t->data_written ||
	    t->declare_written || jnl_txn_footprint(j, t, t->ndata_pending) > j->max_txn_blocks)
		return false;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->blocks.cap; i++) {
			uint64_t b = t->blocks.keys[i], *f = &t->blocks.vals[i];
			struct jnl_bh *bh;

			if (b == JNL_MAP_EMPTY || !(*f & JNL_TB_DATA))
				continue;
			bh = jnl_bh_find(j, b);
			if (!bh || !bh->com)
				continue;
			if (pass) {
				*f |= JNL_TB_LOGGED;
				continue;
			}
			if (((*f & JNL_TB_REVOKE) && !(*f & JNL_TB_LREVOKE)) ||
			    (j->running && jnl_map_find(&j->running->blocks, b)))
				return false;
		}
	}
	return true;
}

/* Gather the frozen copies of @t. lock held. */
static int jnl_commit_gather_locked(struct jnl *j, struct jnl_txn *t, struct jnl_commit_lists *l)
{
	size_t n = t->blocks.n ? t->blocks.n : 1;

	JG_ASSERT_HELD(&j->lock);

	l->meta = malloc(n * sizeof(*l->meta));
	l->data = malloc(n * sizeof(*l->data));
	l->revoke = malloc(n * sizeof(*l->revoke));
	l->forget = malloc(n * sizeof(*l->forget));
	if (jnl_fault_alloc(j) || !l->meta || !l->data || !l->revoke || !l->forget)
		return -ENOMEM;
	for (size_t i = 0; i < t->blocks.cap; i++) {
		uint64_t b = t->blocks.keys[i], f = t->blocks.vals[i];
		struct jnl_bh *bh;

		if (b == JNL_MAP_EMPTY)
			continue;
		bh = jnl_bh_find(j, b);
		/* a block logged here needs no revoke of its older logged copy */
		if ((f & JNL_TB_REVOKE) && !(f & JNL_TB_LOGGED))
			l->revoke[l->nrevoke++] = b;
		if (f & (JNL_TB_FORGET | JNL_TB_REVOKE))
			l->forget[l->nforget++] = b;
		if (!bh || !bh->com)
			continue;
		/* a copy dirtied and then revoked in one transaction is a freed block:
		 * recovery would not replay it, so it is not logged nor checkpointed */
		if (jnl_tb_logged(f))
			l->meta[l->nmeta++] = (struct jnl_wb){ b, bh->com };
		else if (f & JNL_TB_DATA)
			l->data[l->ndata++] = (struct jnl_wb){ b, bh->com };
	}
	return 0;
}

/* Descriptor blocks and copies from image block @k at log position @pos. */
static void jnl_commit_fill_desc(struct jnl *j, uint8_t *img, uint64_t pos, uint64_t tid,
				 const struct jnl_commit_lists *l)
{
	size_t i = 0;

	while (i < l->nmeta) {
		size_t nt = l->nmeta - i;
		uint8_t *desc = img;
		struct jnl_list_hdr *dh = (struct jnl_list_hdr *)desc;
		struct jnl_tag *tags = (struct jnl_tag *)(desc + sizeof(*dh));
		uint64_t dpos = pos;

		if (nt > JNL_DESC_TAGS)
			nt = JNL_DESC_TAGS;
		memset(desc, 0, JG_BLOCK_SIZE);
		dh->count = jg_cpu_to_le32((uint32_t)nt);
		img += JG_BLOCK_SIZE;
		pos = jnl_next_pos(j, pos, 1);
		for (size_t k = 0; k < nt; k++, i++) {
			uint32_t tf = 0;

			memcpy(img, l->meta[i].buf, JG_BLOCK_SIZE);
			/* a copy that looks like a log block is stored escaped, so that a
			 * scan can never take it for one (jbd2 JBD2_FLAG_ESCAPE) */
			if (jnl_magic_escaped(jg_le32(((const struct jg_blk_hdr *)img)->magic))) {
				tf |= JNL_TAG_ESCAPED | ((uint32_t)img[0] << JNL_TAG_ESCAPE_SHIFT);
				memset(img, 0, 4);
			}
			tags[k].blkno = jg_cpu_to_le64(l->meta[i].blkno);
			tags[k].flags = jg_cpu_to_le32(tf);
			tags[k].crc = jg_cpu_to_le32(jg_crc32c(j->seed, img, JG_BLOCK_SIZE));
			img += JG_BLOCK_SIZE;
			pos = jnl_next_pos(j, pos, 1);
		}
		jg_blk_seal(desc, JG_BLOCK_SIZE, JNL_MAGIC_DESC, JNL_VERSION, 0, tid,
			    jnl_abs(j, dpos), j->seed);
	}
}

/*
 * What one commit writes, built before its first write. The image is the log
 * part: [declare][descriptor, copies]*[revoke][commit], from log position pos0;
 * data are the home writes of its data blocks.
 */
struct jnl_commit_io {
	struct jnl_commit_lists l;
	uint8_t *img;
	uint64_t ndecl, nimg;		/* declare blocks; image blocks, commit block included */
	uint64_t pos0, cpos;		/* log positions of the image and of its commit block */
	bool csum_commit;		/* (C3) */
	struct blk_req *data, *reqs;	/* the data's writes; one step's requests */
	unsigned int ndata;
	void **stage;
	size_t nstage;
	uint64_t uf0, uf;		/* (C6) j->unflushed_from; as this commit leaves it */
};

static void jnl_commit_io_free(struct jnl *j, struct jnl_commit_io *io)
{
	jnl_stage_free(j, io->stage, io->nstage);
	jnl_commit_lists_free(&io->l);
	free(io->img);
	free(io->data);
	free(io->reqs);
}

/* Fill the commit block of @t at image block @p (log position io->cpos). */
static void jnl_commit_fill_commit(struct jnl *j, struct jnl_txn *t, struct jnl_commit_io *io,
				   uint8_t *p)
{
	struct jnl_commit_blk *cb = (struct jnl_commit_blk *)p;
	struct timespec ts;

	memset(p, 0, JG_BLOCK_SIZE);
	cb->txn_first = jg_cpu_to_le64(t->log_first ? t->log_first : io->pos0);
	cb->txn_blocks = jg_cpu_to_le32((uint32_t)(t->declare_written + io->nimg));
	cb->data_blocks = jg_cpu_to_le32((uint32_t)(io->l.ndata + t->data_written));
	clock_gettime(CLOCK_REALTIME, &ts);
	cb->commit_ns = jg_cpu_to_le64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	cb->data_mode = jg_cpu_to_le32((uint32_t)j->cfg.mode);
	cb->flags = jg_cpu_to_le32(io->csum_commit ? JNL_COMMIT_DATA_CSUM : 0);
	jg_blk_seal(p, JG_BLOCK_SIZE, JNL_MAGIC_COMMIT, JNL_VERSION, 0, t->tid,
		    jnl_abs(j, io->cpos), j->seed);
}

/* 2. Reserve the log for @t's image and build it. io_lock held. */
static int jnl_commit_image(struct jnl *j, struct jnl_txn *t, struct jnl_commit_io *io,
			    const char **why)
{
	const struct jnl_commit_lists *l = &io->l;
	bool declared = j->cfg.mode == JNL_DATA_DECLARED;
	uint64_t pos;
	uint8_t *p;
	int rc;

	io->ndecl = declared ? jnl_declare_blocks_for(l->ndata) : 0;
	io->nimg = jnl_log_footprint(io->ndecl, l->nmeta, l->nrevoke);
	*why = "commit log reserve";
	rc = jnl_log_reserve_iolocked(j, io->nimg);
	if (rc)
		return rc;
	*why = "commit allocation";
	io->img = jg_alloc_blocks(io->nimg);
	io->data = malloc((l->ndata + 1) * sizeof(*io->data));
	io->reqs = malloc((l->ndata + 8) * sizeof(*io->reqs));	/* a step: data, 2 log runs, commit */
	if (jnl_fault_alloc(j) || !io->img || !io->data || !io->reqs)
		return -ENOMEM;
	/* (C3) a small declared transaction commits with its data */
	io->csum_commit = declared && !j->cfg.commit_after_data &&
			  l->ndata + t->data_written <= JNL_COMMIT_CSUM_MAX_DATA;
	io->pos0 = pos = j->head;
	p = io->img;
	if (io->ndecl) {
		/* tags hold the data's crc32c whenever the commit could carry
		 * JNL_COMMIT_DATA_CSUM, whether or not it does (commit_after_data) */
		jnl_declare_fill(j, p, pos, t->tid, l->data, l->ndata,
				 l->ndata + t->data_written <= JNL_COMMIT_CSUM_MAX_DATA);
		p += io->ndecl * JG_BLOCK_SIZE;
		pos = jnl_next_pos(j, pos, io->ndecl);
	}
	jnl_commit_fill_desc(j, p, pos, t->tid, l);
	p += (jnl_desc_blocks_for(l->nmeta) + l->nmeta) * JG_BLOCK_SIZE;
	pos = jnl_next_pos(j, pos, jnl_desc_blocks_for(l->nmeta) + l->nmeta);
	if (l->nrevoke) {
		jnl_revoke_fill(j, p, pos, t->tid, l->revoke, l->nrevoke);
		p += jnl_revoke_blocks_for(l->nrevoke) * JG_BLOCK_SIZE;
		pos = jnl_next_pos(j, pos, jnl_revoke_blocks_for(l->nrevoke));
	}
	io->cpos = pos;
	jnl_commit_fill_commit(j, t, io, p);
	return 0;
}

/* The requests of step @s, in io->reqs; returns their count. */
static unsigned int jnl_commit_step_reqs(struct jnl *j, const struct jnl_commit_io *io,
					 enum jnl_step s)
{
	uint32_t wf = j->write_flags, w = wf | BLK_APPEND;
	uint8_t *log = io->img + io->ndecl * JG_BLOCK_SIZE, *cb = io->img + (io->nimg - 1) * JG_BLOCK_SIZE;
	uint64_t logpos = jnl_next_pos(j, io->pos0, io->ndecl), nlog = io->nimg - 1 - io->ndecl;
	struct blk_req *r = io->reqs;
	unsigned int n = 0;

	switch (s) {
	case JNL_STEP_LOG_FLUSH:
	case JNL_STEP_FLUSH:
		r[n++] = (struct blk_req){ .op = BLK_OP_FLUSH, .flags = wf };
		break;
	case JNL_STEP_DECLARE:
		n = jnl_log_reqs(j, BLK_OP_WRITE, w | BLK_FUA, io->pos0, io->ndecl, io->img, 0, r);
		break;
	case JNL_STEP_LOG_FUA:
		n = jnl_log_reqs(j, BLK_OP_WRITE, w | BLK_FUA, io->pos0, io->nimg, io->img, 0, r);
		break;
	case JNL_STEP_DATA:
	case JNL_STEP_BATCH:
		n = jnl_log_reqs(j, BLK_OP_WRITE, w, logpos, nlog, log, 0, r);
		memcpy(r + n, io->data, io->ndata * sizeof(*r));
		n += io->ndata;
		if (s == JNL_STEP_BATCH)
			r[n++] = (struct blk_req){ .op = BLK_OP_WRITE, .flags = w,
						   .blkno = jnl_abs(j, io->cpos), .nblocks = 1, .buf = cb };
		break;
	case JNL_STEP_COMMIT:
		r[n++] = (struct blk_req){ .op = BLK_OP_WRITE, .flags = w | BLK_PREFLUSH | BLK_FUA,
					   .blkno = jnl_abs(j, io->cpos), .nblocks = 1, .buf = cb };
		break;
	default:
		break;
	}
	return n;
}

/*
 * 3. Run plan @p: each step's requests in one batch, in order. A step's flush
 * makes every log block before a position durable with its parity (C6).
 */
static int jnl_commit_run(struct jnl *j, struct jnl_commit_io *io, const struct jnl_plan *p)
{
	for (unsigned int i = 0; i < p->n; i++) {
		enum jnl_step s = p->step[i];
		unsigned int nr;
		int rc;

		if ((unsigned int)s >= JNL_STEP_COUNT)
			return -EINVAL;	/* not a step: jnl_plan() makes none */
		nr = jnl_commit_step_reqs(j, io, s);
		jg_opoint_set(jnl_steps[s].point);
		rc = nr ? jnl_io(j, io->reqs, nr) : 0;
		if (rc)
			return rc;
		if (s == JNL_STEP_LOG_FLUSH)
			io->uf = io->pos0;
		else if (s == JNL_STEP_COMMIT)
			io->uf = io->cpos;
		else if (s == JNL_STEP_FLUSH)
			io->uf = jnl_next_pos(j, io->pos0, io->nimg);
	}
	return 0;
}

/* 4. After the commit point: the copies move on, @t is committed. lock held. */
static void jnl_commit_done_locked(struct jnl *j, struct jnl_txn *t, const struct jnl_commit_io *io)
{
	const struct jnl_commit_lists *l = &io->l;

	JG_ASSERT_HELD(&j->lock);

	if (io->uf != io->uf0)
		j->unflushed_from = io->uf;	/* past any position the thread's flush covers */
	j->head = jnl_next_pos(j, io->pos0, io->nimg);
	j->used += io->nimg;
	for (size_t i = 0; i < l->nforget; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, l->forget[i]);

		/* freed (or revoked) in this transaction: older copies never go home */
		if (bh && bh->cp && jg_seq_after(t->tid, bh->cp_tid)) {
			jnl_copy_free(j, bh->cp);
			bh->cp = NULL;
			jnl_bh_gc(j, bh);
		}
	}
	for (size_t i = 0; i < l->ndata; i++) {
		struct jnl_bh *bh = jnl_bh_find(j, l->data[i].blkno);

		jnl_copy_free(j, bh->com);
		bh->com = NULL;
		/* the device now holds newer contents than any older logged copy */
		jnl_copy_free(j, bh->cp);
		bh->cp = NULL;
		jnl_bh_gc(j, bh);
	}
	for (size_t i = 0; i < t->blocks.cap; i++) {
		uint64_t b = t->blocks.keys[i];
		struct jnl_bh *bh;

		if (b == JNL_MAP_EMPTY)
			continue;
		bh = jnl_bh_find(j, b);
		if (!bh || !bh->com)
			continue;
		if (jnl_tb_logged(t->blocks.vals[i])) {
			uint64_t *ltid = NULL;

			jnl_copy_free(j, bh->cp);
			bh->cp = bh->com;
			bh->cp_tid = t->tid;
			/* (C5) until a checkpoint, a later home write of it is revoked */
			if ((t->blocks.vals[i] & JNL_TB_LOGGED) && !jnl_map_get(&j->logged, b, &ltid, NULL)) {
				*ltid = t->tid;
				j->logged_data_blocks++;
			}
			if (jnl_cp_add(j, bh) || ((t->blocks.vals[i] & JNL_TB_LOGGED) && !ltid)) {
				/* cannot track it for checkpoint: keep correctness by aborting */
				jg_mutex_unlock(&j->lock);
				jnl_abort(j, -ENOMEM, "checkpoint list");
				jg_mutex_lock(&j->lock);
			}
		} else {
			jnl_copy_free(j, bh->com);
		}
		bh->com = NULL;
		jnl_bh_gc(j, bh);
	}
	j->committed_tid = t->tid;
	j->committing = NULL;
	j->commits++;
	j->declare_blocks += io->ndecl;
	pthread_cond_broadcast(&j->cond);
	if (j->thread_on && (jnl_cp_step_wanted_locked(j) || jnl_flush_wanted_locked(j)))
		pthread_cond_signal(&j->kick);	/* committed by a caller: the thread may sleep */
}

/*
 * Write transaction @t (the committing one): gather, image, plan, run, done.
 * io_lock held; no handle of @t is open.
 */
static int jnl_commit_io(struct jnl *j, struct jnl_txn *t)
{
	struct jnl_commit_io io = { 0 };
	const char *why = "commit gather";
	struct jnl_shape shape;
	struct jnl_plan plan;
	int rc, nd;

	jg_mutex_lock(&j->lock);
	rc = jnl_commit_gather_locked(j, t, &io.l);
	io.uf0 = io.uf = j->unflushed_from;
	jg_mutex_unlock(&j->lock);
	if (rc)
		goto out;
	jnl_wb_sort(io.l.data, io.l.ndata);
	jnl_wb_sort(io.l.meta, io.l.nmeta);
	rc = jnl_commit_image(j, t, &io, &why);
	if (rc)
		goto out;
	why = "commit staging";
	nd = jnl_wb_reqs(j, io.l.data, io.l.ndata, j->write_flags, io.data, &io.stage, &io.nstage);
	if (nd < 0) {
		rc = nd;
		goto out;
	}
	io.ndata = (unsigned int)nd;
	shape = (struct jnl_shape){
		.mode = j->cfg.mode,
		.log_flush = j->cfg.mode == JNL_DATA_DECLARED &&
			     jnl_dist(j, io.uf, io.pos0) > jnl_unflushed_max(j),
		.declare = io.ndecl > 0,
		.data_home = io.l.ndata || t->data_written,
		.csum_commit = io.csum_commit,
	};
	jnl_plan(&shape, &plan);
	why = "commit write";
	rc = jnl_commit_run(j, &io, &plan);
	if (rc)
		goto out;

	jg_mutex_lock(&j->lock);
	jnl_commit_done_locked(j, t, &io);
	jg_mutex_unlock(&j->lock);
	jnl_txn_free(t);
	/* the background checkpoint (checkpoint.c (K2)) fell behind. The
	 * transaction is durable whatever this returns: a failed write aborted the
	 * journal, and -ENOMEM changed nothing (the next commit tries again) */
	if (j->used > jnl_cp_sync_mark(j) && jnl_checkpoint_iolocked(j, false) == -ENOMEM)
		jg_log(JG_LOG_WARN, JNL_SUBSYS, "dev=%s checkpoint after commit: out of memory",
		       j->dev->name);
out:
	/* (C7) before the commit point nothing can be undone: the frozen copies
	 * are the committing transaction's, and handles have joined the next one */
	if (rc)
		jnl_abort(j, rc, why);
	jnl_commit_io_free(j, &io);
	return rc;
}

int jnl_commit_running(struct jnl *j)
{
	struct jnl_txn *t, *nt;
	int rc = 0;

	jg_mutex_lock(&j->lock);
	while (j->committing && !j->aborted)	/* (J3) one at a time */
		jg_cond_wait(&j->cond, &j->lock);
	if (j->aborted) {
		rc = -EROFS;
		goto out;
	}
	t = j->running;
	if (!t || jnl_txn_empty(t))
		goto out;
	nt = jnl_fault_alloc(j) ? NULL : jnl_txn_new(t->tid + 1);
	if (!nt) {
		/* (C7) the commit thread would retry at once, and a start that found
		 * t full waits for it: give up, as for any other failed commit */
		rc = -ENOMEM;
		jg_mutex_unlock(&j->lock);
		jnl_abort(j, rc, "commit: new transaction");
		return rc;
	}
	/* 1. lock the transaction: new handles join nt; freeze its copies */
	j->committing = t;
	j->running = nt;
	for (size_t i = 0; i < t->blocks.cap; i++) {
		struct jnl_bh *bh;

		if (t->blocks.keys[i] == JNL_MAP_EMPTY)
			continue;
		bh = jnl_bh_find(j, t->blocks.keys[i]);
		if (!bh || !bh->run)
			continue;
		bh->com = bh->run;
		bh->com_kind = bh->run_kind;
		bh->run = NULL;
	}
	pthread_cond_broadcast(&j->cond);
	while (t->updates && !j->aborted)
		jg_cond_wait(&j->cond, &j->lock);
	if (j->aborted) {
		rc = -EROFS;
		goto out;
	}
	t->log_data = jnl_commit_log_data_locked(j, t);
	j->io_wanted++;		/* the background checkpoint lets it go first (K2) */
	jg_mutex_unlock(&j->lock);
	jg_mutex_lock(&j->io_lock);
	jg_mutex_lock(&j->lock);
	j->io_wanted--;
	jg_mutex_unlock(&j->lock);
	rc = jnl_commit_io(j, t);
	jg_mutex_unlock(&j->io_lock);
	return rc;
out:
	jg_mutex_unlock(&j->lock);
	return rc;
}

bool jnl_flush_wanted_locked(const struct jnl *j)
{
	JG_ASSERT_HELD(&j->lock);
	return j->cfg.mode == JNL_DATA_DECLARED && j->started && !j->aborted && !j->cfg.readonly &&
	       jnl_dist(j, j->unflushed_from, j->head) > jnl_unflushed_bg_mark(j);
}

int jnl_background_flush(struct jnl *j)
{
	struct blk_req fl = { .op = BLK_OP_FLUSH, .flags = j->write_flags };
	uint64_t head;
	int rc;

	jg_mutex_lock(&j->lock);
	if (!jnl_flush_wanted_locked(j)) {
		jg_mutex_unlock(&j->lock);
		return 0;
	}
	head = j->head;	/* every log write before it has completed */
	jg_mutex_unlock(&j->lock);
	jg_opoint_set(JG_OP_JNL_LOG_FLUSH);
	rc = jnl_io(j, &fl, 1);
	if (rc) {
		jnl_abort(j, rc, "log flush");
		return rc;
	}
	jg_mutex_lock(&j->lock);
	/* unless a commit flushed past it meanwhile */
	if (jnl_dist(j, j->unflushed_from, head) <= jnl_dist(j, j->unflushed_from, j->head))
		j->unflushed_from = head;
	jg_mutex_unlock(&j->lock);
	return 1;
}

int jnl_commit(struct jnl *j, uint64_t tid, bool wait)
{
	uint64_t target;
	int rc = 0;

	jg_mutex_lock(&j->lock);
	if (!j->started) {
		rc = j->cfg.readonly ? 0 : -EINVAL;
		goto out;
	}
	if (tid) {
		target = tid;
	} else if (!jnl_txn_empty(j->running)) {
		target = j->running->tid;
	} else if (j->committing) {
		target = j->committing->tid;
	} else {
		goto out;
	}
	if (jg_seq_after(target, j->running->tid)) {
		rc = -EINVAL;
		goto out;
	}
	if (!jg_seq_after(target, j->committed_tid))
		goto out;	/* already durable */
	if (target == j->running->tid && jnl_txn_empty(j->running))
		goto out;	/* nothing in it: nothing to make durable */
	if (j->aborted) {
		rc = -EROFS;
		goto out;
	}
	/* A waiter commits in its own thread when no other commit is under way:
	 * handing the commit to the thread and waiting for its wake-up costs two
	 * context switches, a tenth of a small fsync. Waiters that come while it
	 * commits wait for it (J3) and commit the transaction they joined next. */
	if (j->thread_on && !(wait && !j->committing && !j->early_busy)) {
		if (!j->commit_req_set || jg_seq_after(target, j->commit_req)) {
			j->commit_req = target;
			j->commit_req_set = true;
		}
		pthread_cond_signal(&j->kick);
		while (wait && jg_seq_after(target, j->committed_tid) && !j->aborted)
			jg_cond_wait(&j->cond, &j->lock);
		if (wait && jg_seq_after(target, j->committed_tid))
			rc = -EROFS;
		goto out;
	}
	/* no commit thread: commit here, in the caller */
	while (jg_seq_after(target, j->committed_tid) && !j->aborted) {
		jg_mutex_unlock(&j->lock);
		rc = jnl_commit_running(j);
		jg_mutex_lock(&j->lock);
		if (rc)
			break;
	}
	if (!rc && j->aborted)
		rc = -EROFS;
out:
	jg_mutex_unlock(&j->lock);
	jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "commit dev=%s tid=%llu wait=%d -> %d", j->dev->name,
	       (unsigned long long)tid, wait, rc);
	return rc;
}

/* ---------------------------------------------------------------- thread */

static void *jnl_thread_main(void *arg)
{
	struct jnl *j = arg;

	jg_mutex_lock(&j->lock);
	while (!j->stop) {
		struct jnl_txn *t = j->running;
		double now = jg_now_seconds();
		double interval = j->cfg.commit_interval_ms / 1000.0;
		bool due = false;
		struct timespec ts;
		double wake;

		if (!j->aborted && t && !jnl_txn_empty(t)) {
			if (j->commit_req_set && !jg_seq_after(t->tid, j->commit_req))
				due = true;
			if (now - t->start_time >= interval) {
				due = true;
				j->timed_commits++;
			}
			if (jnl_txn_footprint(j, t, 0) >= j->soft_txn_blocks)
				due = true;
		}
		if (due) {
			jg_mutex_unlock(&j->lock);
			jnl_commit_running(j);
			jg_mutex_lock(&j->lock);
			continue;
		}
		if (j->early_want) {
			/* a full batch of the running transaction (declare.c); a commit
			 * since the request has written it */
			j->early_want = false;
			if (!j->aborted && t && t->ndata_pending >= j->cfg.max_txn_data_blocks) {
				j->early_busy = true;
				jg_mutex_unlock(&j->lock);
				jnl_early_writeback(j, t);
				jg_mutex_lock(&j->lock);
				j->early_busy = false;
			}
			pthread_cond_broadcast(&j->cond);
			continue;
		}
		if (jnl_flush_wanted_locked(j)) {
			/* (C6) no io_lock: commits go on meanwhile */
			jg_mutex_unlock(&j->lock);
			jnl_background_flush(j);
			jg_mutex_lock(&j->lock);
			continue;
		}
		if (jnl_cp_step_wanted_locked(j)) {
			int rc;

			/* nothing to commit: a step of the background checkpoint (K2),
			 * unless a commit waits for io_lock; its end wakes us */
			if (j->io_wanted) {
				jg_cond_wait(&j->cond, &j->lock);
				continue;
			}
			jg_mutex_unlock(&j->lock);
			rc = jnl_checkpoint_step(j);
			jg_mutex_lock(&j->lock);
			if (rc >= 0)
				continue;
		}
		if (j->commit_req_set && t && jg_seq_after(t->tid, j->commit_req))
			j->commit_req_set = false;
		wake = (t && !jnl_txn_empty(t) ? t->start_time : now) + interval;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		{
			double d = wake - now;
			long long ns;

			if (d < 0.001)
				d = 0.001;
			ns = (long long)(d * 1e9) + ts.tv_nsec;
			ts.tv_sec += ns / 1000000000ll;
			ts.tv_nsec = ns % 1000000000ll;
		}
		jg_cond_timedwait(&j->kick, &j->lock, &ts);
		j->thread_wakeups++;
	}
	jg_mutex_unlock(&j->lock);
	return NULL;
}

int jnl_thread_start(struct jnl *j)
{
	int rc;

	j->stop = false;
	rc = -pthread_create(&j->thread, NULL, jnl_thread_main, j);
	if (!rc)
		j->thread_on = true;
	return rc;
}

void jnl_thread_stop(struct jnl *j)
{
	if (!j->thread_on)
		return;
	jg_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_signal(&j->kick);
	pthread_cond_broadcast(&j->cond);	/* a writer waiting for an early batch */
	jg_mutex_unlock(&j->lock);
	pthread_join(j->thread, NULL);
	jg_mutex_lock(&j->lock);
	j->thread_on = false;
	j->early_want = false;	/* the final commit writes what was asked for */
	jg_mutex_unlock(&j->lock);
}
