// SPDX-License-Identifier: MIT
/*
 * src/journal/handle.c - handles: join the running transaction with credits,
 * dirty metadata and data, revoke, forget, stop (jbd2 transaction.c).
 *
 * A handle belongs to one transaction for its whole life. When that transaction
 * is locked for commit while the handle is open, the handle keeps writing into
 * the transaction's frozen stage (bh->com); handles started afterwards join the
 * next transaction (bh->run). The commit waits until no handle of its
 * transaction is open.
 *
 * Credits bound the log footprint of a transaction (jnl_txn_footprint() <=
 * max_txn_blocks), which bounds the log window recovery resyncs in declared mode.
 * A thread must not start a second handle while it holds one, nor call
 * jnl_commit(wait) holding a handle: the commit waits for that handle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

/* Ask the commit thread (if any) to commit @tid. lock held. */
static void jnl_commit_request_locked(struct jnl *j, uint64_t tid)
{
	JG_ASSERT_HELD(&j->lock);
	if (!j->commit_req_set || jg_seq_after(tid, j->commit_req)) {
		j->commit_req = tid;
		j->commit_req_set = true;
	}
	pthread_cond_signal(&j->kick);
}

int jnl_handle_start(struct jnl *j, unsigned int credits, struct jnl_handle **out)
{
	struct jnl_handle *h = calloc(1, sizeof(*h));
	struct jnl_txn empty = { 0 };
	struct jnl_txn *t;
	int rc = 0;

	if (!h)
		return -ENOMEM;
	empty.credits = credits;
	jg_mutex_lock(&j->lock);
	if (!j->started || jnl_txn_footprint(j, &empty, 0) > j->max_txn_blocks) {
		rc = -EINVAL;
		goto out;
	}
	for (;;) {
		if (j->aborted) {
			rc = -EROFS;
			goto out;
		}
		t = j->running;
		if (jnl_txn_footprint(j, t, credits) <= j->max_txn_blocks)
			break;
		/* the running transaction is full: commit it and join the next one */
		if (j->thread_on) {
			jnl_commit_request_locked(j, t->tid);
			while (j->running == t && !j->aborted)
				jg_cond_wait(&j->cond, &j->lock);
		} else if (!t->updates) {
			jg_mutex_unlock(&j->lock);
			rc = jnl_commit_running(j);
			jg_mutex_lock(&j->lock);
			if (rc)
				goto out;
		} else {
			jg_cond_wait(&j->cond, &j->lock);
		}
	}
	t->updates++;
	t->credits += credits;
	h->j = j;
	h->t = t;
	h->credits = credits;
	*out = h;
	h = NULL;
out:
	jg_mutex_unlock(&j->lock);
	free(h);
	return rc;
}

uint64_t jnl_handle_tid(const struct jnl_handle *h)
{
	return h->t->tid;
}

/* The copy slot of @bh for the stage of @t. lock held. */
static uint8_t **jnl_handle_slot_locked(struct jnl *j, struct jnl_txn *t, struct jnl_bh *bh,
					uint8_t **kind)
{
	JG_ASSERT_HELD(&j->lock);
	if (t == j->running) {
		*kind = &bh->run_kind;
		return &bh->run;
	}
	*kind = &bh->com_kind;
	return &bh->com;
}

static int jnl_handle_check_blkno(struct jnl *j, uint64_t blkno)
{
	if (blkno >= j->dev->nblocks ||
	    (blkno >= j->start_blkno && blkno < j->start_blkno + j->nblocks)) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "dev=%s blkno=%llu outside the device or inside the journal",
		       j->dev->name, (unsigned long long)blkno);
		return -EINVAL;
	}
	return 0;
}

/*
 * Room for one more entry in t->pend, the list of blocks given a run-stage data
 * copy (declare.c takes an early batch from it). Entries of copies forgotten or
 * made metadata since, and repeats of blocks listed again, stay until then: once
 * they are half the list, it keeps one entry per live copy instead of growing.
 * lock held; @t is the running transaction.
 */
static int jnl_pend_room_locked(struct jnl *j, struct jnl_txn *t)
{
	size_t k = 0, cap;
	uint64_t *p;

	JG_ASSERT_HELD(&j->lock);

	if (t->npend < t->pend_cap)
		return 0;
	if (t->npend >= 2 * t->ndata_pending && t->npend >= 256) {
		jnl_sort_u64(t->pend, t->npend);
		for (size_t i = 0; i < t->npend; i++)
			if ((!k || t->pend[k - 1] != t->pend[i]) &&
			    jnl_bh_run_data(jnl_bh_find(j, t->pend[i])))
				t->pend[k++] = t->pend[i];
		t->npend = k;
		if (t->npend < t->pend_cap)
			return 0;
	}
	cap = t->pend_cap ? 2 * t->pend_cap : 256;
	p = realloc(t->pend, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->pend = p;
	t->pend_cap = cap;
	return 0;
}

/*
 * (H1) @blkno already has a metadata copy in @h's stage of its transaction: take
 * the new contents into that copy, allocating nothing and checking no footprint
 * (the block is counted already), so this cannot fail. A caller that logs a
 * block first and changes it again later in the same handle (the data checksum
 * block, src/fs/dcsum.c) relies on it: the later change commits with the data it
 * describes or the journal is aborted. lock held.
 */
static bool jnl_handle_redirty_locked(struct jnl *j, struct jnl_txn *t, uint64_t blkno,
				      const void *block)
{
	struct jnl_bh *bh = jnl_bh_find(j, blkno);
	uint64_t *flags = jnl_map_find(&t->blocks, blkno);
	uint8_t **slot, *slot_kind;

	JG_ASSERT_HELD(&j->lock);
	if (!bh || !flags || (*flags & (JNL_TB_META | JNL_TB_REVOKE)) != JNL_TB_META)
		return false;
	slot = jnl_handle_slot_locked(j, t, bh, &slot_kind);
	if (!*slot || *slot_kind != JNL_KIND_META)
		return false;
	/* no one reads the stage copy outside the lock while a handle of t is open */
	memcpy(*slot, block, JG_BLOCK_SIZE);
	t->nchanges++;
	return true;
}

/* A block being dirtied in a handle's transaction: its entries, found or made. */
struct jnl_dirty {
	uint64_t blkno;
	enum jnl_kind kind;
	bool running;		/* the transaction is the running one (else committing) */
	bool is_new;		/* its entry in t->blocks was made here */
	struct jnl_bh *bh;
	uint64_t *flags;	/* its JNL_TB_* in t->blocks */
	uint8_t **slot, *slot_kind;	/* its copy in the transaction's stage */
};

/*
 * Find or make the block's buffer head and its entry in @t->blocks, and, for a
 * data copy of the running transaction, room in t->pend: everything that may
 * fail for memory, before anything is changed. lock held.
 */
static int jnl_dirty_entry_locked(struct jnl *j, struct jnl_txn *t, struct jnl_dirty *d)
{
	int rc;

	JG_ASSERT_HELD(&j->lock);
	d->running = t == j->running;
	d->bh = jnl_bh_get(j, d->blkno);
	if (!d->bh)
		return -ENOMEM;
	if (d->running && d->kind == JNL_KIND_DATA) {
		rc = jnl_pend_room_locked(j, t);
		if (rc) {
			jnl_bh_gc(j, d->bh);
			return rc;
		}
	}
	rc = jnl_map_get(&t->blocks, d->blkno, &d->flags, &d->is_new);
	if (rc) {
		jnl_bh_gc(j, d->bh);
		return rc;
	}
	d->slot = jnl_handle_slot_locked(j, t, d->bh, &d->slot_kind);
	return 0;
}

/*
 * A data copy may add a declare tag (declared mode) and a revoke of an older
 * logged copy: both must still fit the transaction's log footprint. -ENOSPC,
 * nothing changed, when they do not; else the revoke is recorded. lock held.
 */
static int jnl_dirty_fit_locked(struct jnl *j, struct jnl_txn *t, const struct jnl_dirty *d)
{
	bool lrevoke, more;

	JG_ASSERT_HELD(&j->lock);
	/* data going home while a logged copy of it may still be replayed: revoke
	 * that copy (§3.8) */
	lrevoke = d->kind == JNL_KIND_DATA && !(*d->flags & JNL_TB_REVOKE) &&
		  jnl_logged_copy_locked(j, t, d->blkno);
	more = d->kind == JNL_KIND_DATA && j->cfg.mode == JNL_DATA_DECLARED &&
	       !(*d->slot && *d->slot_kind == JNL_KIND_DATA);
	if (lrevoke || more) {
		bool over;

		/* one more pending data block (its declare block) or revoke must
		 * still fit the transaction's log footprint, which bounds the window
		 * recovery resyncs (a single handle this large is refused) */
		t->ndata_pending += more;
		t->nrevoke += lrevoke;
		over = jnl_txn_footprint(j, t, 0) > j->max_txn_blocks;
		t->ndata_pending -= more;
		t->nrevoke -= lrevoke;
		if (over)
			return -ENOSPC;
	}
	if (lrevoke) {
		*d->flags |= JNL_TB_REVOKE | JNL_TB_LREVOKE;
		t->nrevoke++;
	}
	return 0;
}

/*
 * The block's kind in @t: a new metadata block charges a credit of @h (-ENOSPC,
 * nothing changed, past the footprint bound), a data block leaves the metadata
 * count. lock held.
 */
static int jnl_dirty_kind_locked(struct jnl_handle *h, const struct jnl_dirty *d)
{
	struct jnl *j = h->j;
	struct jnl_txn *t = h->t;
	uint64_t *flags = d->flags;

	JG_ASSERT_HELD(&j->lock);
	if (d->kind == JNL_KIND_META) {
		if (!(*flags & JNL_TB_META)) {
			/* new in this transaction: charge a credit; the footprint bound holds
			 * even for a handle that under-reserved */
			if (h->used >= h->credits &&
			    jnl_txn_footprint(j, t, 1) > j->max_txn_blocks)
				return -ENOSPC;
			h->used++;
			t->nmeta++;
		}
		*flags |= JNL_TB_META;
		*flags &= ~(uint64_t)JNL_TB_DATA;
		if (*flags & JNL_TB_REVOKE) {	/* logged again: cancel the revoke (jbd2 cancel_revoke) */
			*flags &= ~(uint64_t)(JNL_TB_REVOKE | JNL_TB_LREVOKE);
			t->nrevoke--;
		}
	} else {
		if (*flags & JNL_TB_META)
			t->nmeta--;
		*flags |= JNL_TB_DATA;
		*flags &= ~(uint64_t)JNL_TB_META;
		t->ndata_total++;
	}
	return 0;
}

/*
 * @buf becomes the block's copy in @t's stage, replacing any older one, and the
 * pending data count follows. Returns whether the running transaction now has
 * a full early batch. lock held.
 */
static bool jnl_dirty_install_locked(struct jnl *j, struct jnl_txn *t, const struct jnl_dirty *d,
				     uint8_t *buf)
{
	JG_ASSERT_HELD(&j->lock);
	/* data copies not yet written, in either stage: the declare blocks to come */
	if (*d->slot && *d->slot_kind == JNL_KIND_DATA)
		t->ndata_pending--;
	else if (d->running && d->kind == JNL_KIND_DATA)
		t->pend[t->npend++] = d->blkno;	/* room made above */
	if (d->kind == JNL_KIND_DATA)
		t->ndata_pending++;
	jnl_copy_free(j, *d->slot);
	*d->slot = buf;
	*d->slot_kind = (uint8_t)d->kind;
	if (!t->nchanges)
		t->start_time = jg_now_seconds();
	t->nchanges++;
	/* every mode writes buffered data early at the same point; declared
	 * mode declares the whole batch first, with one durability point */
	return d->running && d->kind == JNL_KIND_DATA &&
	       t->ndata_pending >= j->cfg.max_txn_data_blocks;
}

/*
 * Dirty @blkno in @h: (H1) a metadata block already logged in the handle's
 * stage is changed in place; else a copy of @block is made, the block's
 * entries found or made, the footprint and credits checked, and the copy
 * installed. A full early batch goes to the commit thread, or is written here.
 */
static int jnl_handle_dirty(struct jnl_handle *h, uint64_t blkno, const void *block,
			    enum jnl_kind kind)
{
	struct jnl *j = h->j;
	struct jnl_txn *t = h->t;
	struct jnl_dirty d = { .blkno = blkno, .kind = kind };
	uint8_t *buf;
	bool early = false;
	int rc;

	rc = jnl_handle_check_blkno(j, blkno);
	if (rc)
		return rc;
	if (kind == JNL_KIND_META) {
		jg_mutex_lock(&j->lock);
		rc = j->aborted ? -EROFS : 0;
		if (!rc && jnl_handle_redirty_locked(j, t, blkno, block)) {
			jg_mutex_unlock(&j->lock);
			return 0;
		}
		jg_mutex_unlock(&j->lock);
		if (rc)
			return rc;
	}
	buf = kind == JNL_KIND_DATA ? jnl_copy_alloc_data(j) : jnl_copy_alloc(j);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, block, JG_BLOCK_SIZE);
	jg_mutex_lock(&j->lock);
	rc = j->aborted ? -EROFS : jnl_dirty_entry_locked(j, t, &d);
	if (rc)
		goto out;
	rc = jnl_dirty_fit_locked(j, t, &d);
	if (!rc)
		rc = jnl_dirty_kind_locked(h, &d);
	if (rc) {
		if (d.is_new)
			jnl_map_del(&t->blocks, blkno);
		jnl_bh_gc(j, d.bh);
		goto out;
	}
	early = jnl_dirty_install_locked(j, t, &d, buf);
	buf = NULL;
out:
	if (!rc && early && j->thread_on) {
		jnl_early_request_locked(j, t);
		early = false;
	}
	jg_mutex_unlock(&j->lock);
	jnl_copy_free(j, buf);
	if (!rc && early)
		rc = jnl_early_writeback(j, t);
	return rc;
}

int jnl_handle_dirty_meta(struct jnl_handle *h, uint64_t blkno, const void *block)
{
	return jnl_handle_dirty(h, blkno, block, JNL_KIND_META);
}

int jnl_handle_dirty_data(struct jnl_handle *h, uint64_t blkno, const void *block)
{
	/* data=journal: file data is logged like metadata */
	return jnl_handle_dirty(h, blkno, block,
				h->j->cfg.mode == JNL_DATA_JOURNAL ? JNL_KIND_META : JNL_KIND_DATA);
}

int jnl_handle_revoke(struct jnl_handle *h, uint64_t blkno)
{
	struct jnl *j = h->j;
	struct jnl_txn *t = h->t;
	uint64_t *flags;
	bool is_new;
	int rc;

	rc = jnl_handle_check_blkno(j, blkno);
	if (rc)
		return rc;
	jg_mutex_lock(&j->lock);
	if (j->aborted) {
		rc = -EROFS;
		goto out;
	}
	rc = jnl_map_get(&t->blocks, blkno, &flags, &is_new);
	if (rc)
		goto out;
	if (!(*flags & JNL_TB_REVOKE)) {
		t->nrevoke++;
		if (jnl_txn_footprint(j, t, 0) > j->max_txn_blocks) {
			t->nrevoke--;
			if (is_new)
				jnl_map_del(&t->blocks, blkno);
			rc = -ENOSPC;
			goto out;
		}
		*flags |= JNL_TB_REVOKE;
	}
	*flags &= ~(uint64_t)JNL_TB_LREVOKE;	/* the caller's revoke now */
	if (!t->nchanges)
		t->start_time = jg_now_seconds();
	t->nchanges++;
out:
	jg_mutex_unlock(&j->lock);
	return rc;
}

int jnl_handle_forget(struct jnl_handle *h, uint64_t blkno)
{
	struct jnl *j = h->j;
	struct jnl_txn *t = h->t;
	struct jnl_bh *bh;
	uint8_t **slot, *slot_kind;
	uint64_t *flags;
	int rc;

	rc = jnl_handle_check_blkno(j, blkno);
	if (rc)
		return rc;
	jg_mutex_lock(&j->lock);
	if (j->aborted) {
		rc = -EROFS;
		goto out;
	}
	rc = jnl_map_get(&t->blocks, blkno, &flags, NULL);
	if (rc)
		goto out;
	bh = jnl_bh_find(j, blkno);
	if (bh) {
		slot = jnl_handle_slot_locked(j, t, bh, &slot_kind);
		if (*slot && *slot_kind == JNL_KIND_DATA)
			t->ndata_pending--;
		jnl_copy_free(j, *slot);
		*slot = NULL;
		jnl_bh_gc(j, bh);
	}
	if (*flags & JNL_TB_META)
		t->nmeta--;
	/* older committed copies are dropped when this transaction commits */
	*flags &= ~(uint64_t)(JNL_TB_META | JNL_TB_DATA);
	*flags |= JNL_TB_FORGET;
	if (!t->nchanges)
		t->start_time = jg_now_seconds();
	t->nchanges++;
out:
	jg_mutex_unlock(&j->lock);
	return rc;
}

int jnl_handle_stop(struct jnl_handle *h)
{
	struct jnl *j;
	struct jnl_txn *t;

	if (!h)
		return 0;
	j = h->j;
	t = h->t;
	jg_mutex_lock(&j->lock);
	t->updates--;
	if (h->credits > h->used)
		t->credits -= h->credits - h->used;
	/*
	 * The last handle: a commit of t may be waiting for it, and so may a start
	 * that found t full with no commit thread. Nobody waits for any other.
	 */
	if (!t->updates)
		pthread_cond_broadcast(&j->cond);
	if (t == j->running && j->thread_on &&
	    (jnl_txn_footprint(j, t, 0) >= j->soft_txn_blocks ||
	     (j->cfg.mode == JNL_DATA_JOURNAL && t->nmeta >= j->cfg.max_txn_data_blocks)))
		jnl_commit_request_locked(j, t->tid);
	jg_mutex_unlock(&j->lock);
	free(h);
	return 0;
}

void jnl_handle_abort(struct jnl_handle *h, int err, const char *why)
{
	jnl_abort(h->j, err, why);
}

/* The wait's condition in jnl_early_request_locked (declare.c), read under the lock. */
bool jnl_early_writer_waits(struct jnl *j)
{
	bool waits;

	jg_mutex_lock(&j->lock);
	waits = j->thread_on && j->running && (j->early_busy || j->early_want) && !j->aborted &&
		!j->stop && j->running->ndata_pending >= j->cfg.max_txn_data_blocks;
	jg_mutex_unlock(&j->lock);
	return waits;
}
