// SPDX-License-Identifier: MIT
/*
 * src/journal/recovery.c - replaying the log after a crash (jbd2 recovery.c),
 * and journal-guided resync (seed 004).
 *
 * Passes:
 *   scan    from the superblock's start and sequence, read log blocks while each
 *           is a valid log block (magic, crc, version, own address) of the
 *           expected tid; a transaction counts only when its commit block is
 *           valid, names the transaction's first block and length, and every
 *           logged copy matches its tag's crc32c. The first transaction that
 *           fails ends the log: neither it nor anything after it is replayed.
 *   revoke  revoke records of committed transactions (built during the scan
 *           when each commit block is accepted).
 *   replay  the newest non-revoked copy of each block is written home.
 * When the superblock has the declare feature (the log was written in declared
 * mode), three SYNCRAID passes follow (not in readonly mode, unless
 * readonly_syncraid: then as reads, into scratch, the array writing nothing):
 *   1. every replayed write carries BLK_SYNCRAID (a checkpoint may have been torn),
 *      and the home of every revoked copy is read with BLK_SYNCRAID (a checkpoint
 *      may have written it before the revoke, checkpoint.c (K3));
 *   2. the declare blocks of the transaction after the last committed one are
 *      read and every block they list is read with BLK_SYNCRAID;
 *   3. the log whose parity may not be durable (a log write's parity is
 *      durable at the next flush, src/raid/stripe.c (W4)): from
 *      jnl_unflushed_max() blocks before the last committed transaction
 *      (commit.c (C6)) to its end, and the window being written at the crash
 *      (max_txn_blocks after it), is read with BLK_SYNCRAID.
 * The journal superblock is read with BLK_SYNCRAID in every recovery that may
 * write (clean or not, as jbd reads it at load): its last write may have been
 * the clean-marking one of a declared-mode close.
 * Then the log is emptied (superblock start = 0), the sequence continues after
 * the dropped transaction, and the array is told (SYNCRAID_DONE,
 * CLEAR_JNL_PENDING). Nothing is written while verifying: the scan comes
 * before any write or SYNCRAID read, and a log it refuses (a descriptor tag
 * naming a home past the device or inside the journal region, -EUCLEAN) is
 * left as found.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

#define JNL_REC_WIN 64u		/* blocks per read batch */

struct jnl_rtag {
	uint64_t home, pos, tid;
	uint32_t flags, crc;
};

struct jnl_rvec {
	struct jnl_rtag *v;
	size_t n, cap;
};

static int jnl_rvec_push(struct jnl_rvec *r, const struct jnl_rtag *t)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 256;
		struct jnl_rtag *nv = realloc(r->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		r->v = nv;
		r->cap = nc;
	}
	r->v[r->n++] = *t;
	return 0;
}

/* A read-ahead window over the log: blocks [pos, pos + n) (no wrap inside). */
struct jnl_rwin {
	uint8_t *buf;
	uint64_t pos, n;
};

static int jnl_rwin_get(struct jnl *j, struct jnl_rwin *w, uint64_t pos, const uint8_t **out)
{
	uint64_t n;
	int rc;

	if (w->n && pos >= w->pos && pos < w->pos + w->n) {
		*out = w->buf + (pos - w->pos) * JG_BLOCK_SIZE;
		return 0;
	}
	n = j->nblocks - pos;
	if (n > JNL_REC_WIN)
		n = JNL_REC_WIN;
	rc = blk_rw(j->dev, BLK_OP_READ, jnl_abs(j, pos), (uint32_t)n, w->buf, 0);
	if (rc) {
		w->n = 0;
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s log read at %llu failed: %d",
		       j->dev->name, (unsigned long long)jnl_abs(j, pos), rc);
		return rc;
	}
	w->pos = pos;
	w->n = n;
	*out = w->buf;
	return 0;
}

/* Is @blk a valid log block of transaction @tid at @pos? Returns its magic or 0. Logs why not at debug. */
static uint32_t jnl_rec_valid(struct jnl *j, const uint8_t *blk, uint64_t pos, uint64_t tid, int *err)
{
	const struct jg_blk_hdr *h = (const struct jg_blk_hdr *)blk;
	uint32_t m = jg_le32(h->magic);
	const char *why = NULL;

	*err = 0;
	if (!jnl_magic_log(m))
		why = "magic";
	else if (!jg_blk_crc_ok(blk, JG_BLOCK_SIZE, j->seed))
		why = "crc";
	else if (jg_le16(h->version) > JNL_VERSION)
		*err = -EOPNOTSUPP;
	else if (jg_le64(h->blkno) != jnl_abs(j, pos))
		why = "blkno";
	else if (jg_le64(h->seq) != tid)
		why = "seq";
	if (*err) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s blkno=%llu log block version %u too new",
		       j->dev->name, (unsigned long long)jnl_abs(j, pos), jg_le16(h->version));
		return 0;
	}
	if (why) {
		jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "recovery dev=%s blkno=%llu end of log: %s (tid %llu)",
		       j->dev->name, (unsigned long long)jnl_abs(j, pos), why, (unsigned long long)tid);
		return 0;
	}
	return m;
}

/*
 * The last transaction with a commit block, held back until it is known to be
 * complete: a valid block of the next transaction proves it (nothing of the
 * next one is written before this one's flush has returned), else its declared
 * data must match the crc32c its declare blocks recorded (FORMAT.md §3.6).
 */
struct jnl_last {
	bool set;
	bool csum;			/* JNL_COMMIT_DATA_CSUM: written with its data */
	uint64_t tid, first, commit, end; /* log positions: first block, commit block, after */
	struct jnl_rvec tags;		/* its logged copies */
	struct jnl_map revoke;		/* its revokes */
	uint64_t *decl;			/* its declare blocks */
	size_t ndecl, decl_cap;
};

struct jnl_scan {
	struct jnl_rvec tags;		/* every copy of committed transactions, log order */
	struct jnl_map revoke;		/* blkno -> newest revoking tid */
	uint64_t *decl;			/* declare blocks of the first uncommitted transaction */
	size_t ndecl, decl_cap;
	struct jnl_last last;
	uint64_t end_tid;		/* first tid not committed */
	uint64_t head;			/* relative block after the last committed transaction */
	uint64_t last_first;		/* relative block where the last committed one begins */
	uint64_t committed;
	uint64_t max_tid_seen;
};

static void jnl_last_clear(struct jnl_last *l)
{
	free(l->tags.v);
	jnl_map_free(&l->revoke);
	free(l->decl);
	memset(l, 0, sizeof(*l));
	jnl_map_init(&l->revoke);
}

/* The held-back transaction is committed: its copies and revokes count. */
static int jnl_last_accept(struct jnl_scan *s)
{
	struct jnl_last *l = &s->last;
	int rc;

	for (size_t i = 0; i < l->tags.n; i++) {
		rc = jnl_rvec_push(&s->tags, &l->tags.v[i]);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < l->revoke.cap; i++) {
		if (l->revoke.keys[i] == JNL_MAP_EMPTY)
			continue;
		rc = jnl_revoke_table_note(&s->revoke, l->revoke.keys[i], l->tid);
		if (rc)
			return rc;
	}
	s->committed++;
	s->head = l->end;
	s->last_first = l->first;
	jnl_last_clear(l);
	return 0;
}

/*
 * A tag of a valid descriptor (@pos, transaction @tid) names home @home: our
 * writer never logs a block past the device or inside the journal region
 * (handle.c), so such a tag is damage or a foreign log, not a torn write, and
 * replaying it would write over the log or past the array. -EUCLEAN.
 */
static int jnl_rec_home_check(struct jnl *j, uint64_t home, uint64_t pos, uint64_t tid, uint32_t k)
{
	const char *why = NULL;

	if (home >= j->dev->nblocks)
		why = "past the device";
	else if (home >= j->start_blkno && home < j->start_blkno + j->nblocks)
		why = "inside the journal region";
	if (!why)
		return 0;
	jg_log(JG_LOG_ERR, JNL_SUBSYS,
	       "recovery dev=%s descriptor blkno=%llu tid=%llu tag %u: home %llu %s "
	       "(journal %llu..%llu, device %llu blocks): log refused, nothing written",
	       j->dev->name, (unsigned long long)jnl_abs(j, pos), (unsigned long long)tid, k,
	       (unsigned long long)home, why, (unsigned long long)j->start_blkno,
	       (unsigned long long)(j->start_blkno + j->nblocks - 1),
	       (unsigned long long)j->dev->nblocks);
	return -EUCLEAN;
}

/* Where the scan is: the transaction being read (tid next, from txn_first). */
struct jnl_rcursor {
	struct jnl_rwin w;
	struct jnl_rvec cur;		/* its logged copies */
	uint64_t *revpos;		/* its revoke blocks */
	size_t nrev, revcap;
	uint64_t pos, next, txn_first, txn_n, scanned;
};

static int jnl_rec_pos_push(uint64_t **vec, size_t *n, size_t *cap, uint64_t pos)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		uint64_t *nv = realloc(*vec, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*vec = nv;
		*cap = nc;
	}
	(*vec)[(*n)++] = pos;
	return 0;
}

/*
 * The scan's steps, one per kind of log block at c->pos: each returns the log
 * blocks it took, 0 where the log ends (a torn or foreign block), or -errno.
 */

/* A declare or revoke block: remembered by position, read when its commit is. */
static int jnl_rec_scan_list(struct jnl_scan *s, struct jnl_rcursor *c, uint32_t m, uint32_t cnt)
{
	int rc;

	if (m == JNL_MAGIC_DECLARE) {
		if (cnt > JNL_DESC_TAGS)
			return 0;
		rc = jnl_rec_pos_push(&s->decl, &s->ndecl, &s->decl_cap, c->pos);
	} else {
		if (cnt > JNL_LIST_ENTRIES)
			return 0;
		rc = jnl_rec_pos_push(&c->revpos, &c->nrev, &c->revcap, c->pos);
	}
	return rc ? rc : 1;
}

/* A descriptor and its copies: every copy's crc32c must match its tag. */
static int jnl_rec_scan_desc(struct jnl *j, struct jnl_rcursor *c, const uint8_t *blk, uint32_t cnt)
{
	struct jnl_tag tags[JNL_DESC_TAGS];
	int rc;

	if (!cnt || cnt > JNL_DESC_TAGS || cnt + 1 > j->cap - c->scanned)
		return 0;
	memcpy(tags, blk + sizeof(struct jnl_list_hdr), cnt * sizeof(tags[0]));
	for (uint32_t k = 0; k < cnt; k++) {
		uint64_t lp = jnl_next_pos(j, c->pos, 1 + k);
		const uint8_t *lb;
		struct jnl_rtag rt = { .home = jg_le64(tags[k].blkno), .pos = lp, .tid = c->next,
				       .flags = jg_le32(tags[k].flags), .crc = jg_le32(tags[k].crc) };

		rc = jnl_rwin_get(j, &c->w, lp, &lb);
		if (!rc)
			rc = jnl_rec_home_check(j, rt.home, c->pos, c->next, k);
		if (rc)
			return rc;
		if (jg_crc32c(j->seed, lb, JG_BLOCK_SIZE) != rt.crc) {
			jg_log(JG_LOG_WARN, JNL_SUBSYS,
			       "recovery dev=%s blkno=%llu tid=%llu logged block bad crc: transaction dropped",
			       j->dev->name, (unsigned long long)jnl_abs(j, lp), (unsigned long long)c->next);
			return 0;
		}
		rc = jnl_rvec_push(&c->cur, &rt);
		if (rc)
			return rc;
	}
	return (int)(1 + cnt);
}

/*
 * A commit block that matches the transaction read: the transaction is held
 * back (s->last) until the next transaction or its data proves it complete.
 */
static int jnl_rec_scan_commit(struct jnl *j, struct jnl_scan *s, struct jnl_rcursor *c,
			       const uint8_t *blk)
{
	const struct jnl_commit_blk *cb = (const struct jnl_commit_blk *)blk;
	struct jnl_last *l = &s->last;
	int rc;

	if (jg_le64(cb->txn_first) != c->txn_first || jg_le32(cb->txn_blocks) != c->txn_n + 1) {
		jg_log(JG_LOG_WARN, JNL_SUBSYS,
		       "recovery dev=%s blkno=%llu tid=%llu commit block does not match the transaction: dropped",
		       j->dev->name, (unsigned long long)jnl_abs(j, c->pos), (unsigned long long)c->next);
		return 0;
	}
	l->set = true;
	l->csum = jg_le32(cb->flags) & JNL_COMMIT_DATA_CSUM;
	l->tid = c->next;
	l->first = c->txn_first;
	l->commit = c->pos;
	l->tags = c->cur;
	memset(&c->cur, 0, sizeof(c->cur));
	for (size_t i = 0; i < c->nrev; i++) {
		const uint8_t *rb;

		rc = jnl_rwin_get(j, &c->w, c->revpos[i], &rb);
		if (!rc)
			rc = jnl_revoke_table_add(&l->revoke, rb, c->next, j->dev->nblocks);
		if (rc)
			return rc;
	}
	c->nrev = 0;
	l->decl = s->decl;
	l->ndecl = s->ndecl;
	l->decl_cap = s->decl_cap;
	s->decl = NULL;
	s->ndecl = s->decl_cap = 0;
	l->end = jnl_next_pos(j, c->pos, 1);
	return 1;
}

/*
 * Read the log from the superblock's start: transactions in tid order, each
 * ending with its commit block, until a block that is not the next one's.
 * The window may hold a block just read under another tid: it is kept, and
 * jnl_rec_valid() checks each block against the tid expected there.
 */
static int jnl_rec_scan(struct jnl *j, struct jnl_scan *s)
{
	struct jnl_rcursor c = { .pos = j->sb_start, .next = j->sb_sequence, .txn_first = j->sb_start };
	int rc = 0;

	c.w.buf = jg_alloc_blocks(JNL_REC_WIN);
	if (!c.w.buf)
		return -ENOMEM;
	s->head = s->last_first = c.pos;
	while (c.scanned < j->cap) {
		const uint8_t *blk;
		uint32_t m, cnt;
		int err, took;

		rc = jnl_rwin_get(j, &c.w, c.pos, &blk);
		if (rc)
			goto out;
		m = jnl_rec_valid(j, blk, c.pos, c.next, &err);
		rc = err;
		if (rc || !m)
			goto out;
		if (s->last.set) {
			/* a block of the next transaction: the last one's flush returned */
			rc = jnl_last_accept(s);
			if (rc)
				goto out;
		}
		cnt = jg_le32(((const struct jnl_list_hdr *)blk)->count);
		if (m == JNL_MAGIC_DECLARE || m == JNL_MAGIC_REVOKE)
			took = jnl_rec_scan_list(s, &c, m, cnt);
		else if (m == JNL_MAGIC_DESC)
			took = jnl_rec_scan_desc(j, &c, blk, cnt);
		else
			took = jnl_rec_scan_commit(j, s, &c, blk);
		if (took <= 0) {
			rc = took;
			goto out;
		}
		c.pos = jnl_next_pos(j, c.pos, (uint64_t)took);
		c.scanned += (uint64_t)took;
		if (m == JNL_MAGIC_COMMIT) {
			c.next++;
			c.txn_first = c.pos;
			c.txn_n = 0;
		} else {
			c.txn_n += (uint64_t)took;
		}
	}
out:
	s->end_tid = c.next;
	free(c.w.buf);
	free(c.cur.v);
	free(c.revpos);
	return rc;
}

/* Read @n device blocks listed in @blknos with BLK_SYNCRAID, merging runs. */
static int jnl_rec_syncraid_list(struct jnl *j, uint64_t *blknos, size_t n, uint8_t *buf,
				 struct blk_req *reqs)
{
	size_t nr = 0, used = 0;

	jnl_sort_u64(blknos, n);
	for (size_t i = 0; i < n; i++) {
		if (blknos[i] >= j->dev->nblocks)
			continue;
		if (nr && reqs[nr - 1].blkno + reqs[nr - 1].nblocks == blknos[i]) {
			reqs[nr - 1].nblocks++;
		} else if (nr && reqs[nr - 1].blkno + reqs[nr - 1].nblocks > blknos[i]) {
			continue;	/* duplicate */
		} else {
			reqs[nr++] = (struct blk_req){ .op = BLK_OP_READ, .flags = BLK_SYNCRAID,
						       .blkno = blknos[i], .nblocks = 1,
						       .buf = buf + used * JG_BLOCK_SIZE };
		}
		used++;
	}
	return nr ? blk_submit(j->dev, reqs, (unsigned int)nr) : 0;
}

/* Read the homes in @revoked with BLK_SYNCRAID, JNL_REC_WIN at a time (K3). */
static int jnl_rec_revoked(struct jnl *j, const struct jnl_map *revoked, uint8_t *buf,
			   struct blk_req *reqs, struct jnl_recovery_report *rep)
{
	uint64_t list[JNL_REC_WIN];
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < revoked->cap && !rc; i++) {
		if (revoked->keys[i] == JNL_MAP_EMPTY)
			continue;
		list[n++] = revoked->keys[i];
		if (n == JNL_REC_WIN) {
			rc = jnl_rec_syncraid_list(j, list, n, buf, reqs);
			rep->revoked_blocks_resynced += n;
			n = 0;
		}
	}
	if (!rc && n) {
		rc = jnl_rec_syncraid_list(j, list, n, buf, reqs);
		rep->revoked_blocks_resynced += n;
	}
	if (rc)
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s revoked homes resync failed: %d",
		       j->dev->name, rc);
	return rc;
}

/* Tags by log position (each copy has its own). */
static int jnl_rtag_pos_cmp(const void *a, const void *b)
{
	const struct jnl_rtag *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * Replay: newest non-revoked copy of each block, home (or into memory when
 * readonly). With @syncraid, the home of every copy scanned is resynced: a
 * replayed one by its BLK_SYNCRAID write, a revoked one by a BLK_SYNCRAID read,
 * since a checkpoint may have written it without a flush (checkpoint.c (K3)).
 */
static int jnl_rec_replay(struct jnl *j, struct jnl_scan *s, bool syncraid,
			  struct jnl_recovery_report *rep)
{
	struct jnl_map newest, revoked;
	struct jnl_rtag *list = NULL;
	struct blk_req *reqs = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	int rc = 0;

	jnl_map_init(&newest);
	jnl_map_init(&revoked);
	for (size_t i = 0; i < s->tags.n; i++) {
		uint64_t *v;

		if (jnl_revoke_table_test(&s->revoke, s->tags.v[i].home, s->tags.v[i].tid)) {
			rep->blocks_revoked++;
			if (syncraid) {
				rc = jnl_map_get(&revoked, s->tags.v[i].home, &v, NULL);
				if (rc)
					goto out;
			}
			continue;
		}
		rc = jnl_map_get(&newest, s->tags.v[i].home, &v, NULL);
		if (rc)
			goto out;
		*v = i;		/* later copies replace earlier ones */
	}
	rc = -ENOMEM;
	list = malloc((newest.n + 1) * sizeof(*list));
	reqs = malloc(JNL_REC_WIN * sizeof(*reqs));
	buf = jg_alloc_blocks(JNL_REC_WIN);
	if (!list || !reqs || !buf)
		goto out;
	rc = 0;
	for (size_t i = 0; i < newest.cap; i++)
		if (newest.keys[i] != JNL_MAP_EMPTY)
			list[n++] = s->tags.v[newest.vals[i]];
	/* in the order of log positions the reads are sequential */
	qsort(list, n, sizeof(*list), jnl_rtag_pos_cmp);
	for (size_t i = 0; i < n; i += JNL_REC_WIN) {
		size_t b = n - i < JNL_REC_WIN ? n - i : JNL_REC_WIN;

		for (size_t k = 0; k < b; k++)
			reqs[k] = (struct blk_req){ .op = BLK_OP_READ, .blkno = jnl_abs(j, list[i + k].pos),
						    .nblocks = 1, .buf = buf + k * JG_BLOCK_SIZE };
		rc = blk_submit(j->dev, reqs, (unsigned int)b);
		if (rc) {
			jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s replay read failed: %d", j->dev->name, rc);
			goto out;
		}
		for (size_t k = 0; k < b; k++) {
			uint8_t *blk = buf + k * JG_BLOCK_SIZE;
			const struct jnl_rtag *t = &list[i + k];

			if (jg_crc32c(j->seed, blk, JG_BLOCK_SIZE) != t->crc) {
				jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s blkno=%llu changed since the scan",
				       j->dev->name, (unsigned long long)jnl_abs(j, t->pos));
				rc = -EIO;
				goto out;
			}
			if (t->flags & JNL_TAG_ESCAPED) {
				uint32_t m = JNL_MAGIC_PREFIX | ((t->flags >> JNL_TAG_ESCAPE_SHIFT) & 0xff);

				memcpy(blk, &m, sizeof(m));
			}
			reqs[k] = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = t->home, .nblocks = 1,
						    .buf = blk, .flags = syncraid ? BLK_SYNCRAID : 0 };
		}
		if (j->cfg.readonly) {
			/* fsck -n: keep the replayed blocks in memory, served by jnl_read() */
			jg_mutex_lock(&j->lock);
			for (size_t k = 0; k < b && !rc; k++) {
				struct jnl_bh *bh = jnl_bh_get(j, list[i + k].home);
				uint8_t *c = jnl_copy_alloc(j);

				if (!bh || !c) {
					jnl_copy_free(j, c);
					rc = -ENOMEM;
					break;
				}
				memcpy(c, buf + k * JG_BLOCK_SIZE, JG_BLOCK_SIZE);
				jnl_copy_free(j, bh->cp);
				bh->cp = c;
				bh->cp_tid = list[i + k].tid;
			}
			jg_mutex_unlock(&j->lock);
			/* readonly_syncraid: the homes read as the writes would resync them */
			for (size_t k = 0; k < b && !rc && syncraid; k++)
				reqs[k].op = BLK_OP_READ;
			if (!rc && syncraid)
				rc = blk_submit(j->dev, reqs, (unsigned int)b);
		} else {
			enum jg_opoint op = jg_opoint_set(JG_OP_JNL_REPLAY);

			rc = blk_submit(j->dev, reqs, (unsigned int)b);
			jg_opoint_set(op);
		}
		if (rc) {
			jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s replay write failed: %d", j->dev->name, rc);
			goto out;
		}
		rep->blocks_replayed += b;
	}
	if (syncraid)
		rc = jnl_rec_revoked(j, &revoked, buf, reqs, rep);
out:
	jnl_map_free(&newest);
	jnl_map_free(&revoked);
	free(list);
	free(reqs);
	free(buf);
	return rc;
}

/* Read the declare block at log position @pos into @blk; its tags, or NULL (*cnt 0). */
static const struct jnl_tag *jnl_rec_declare_read(struct jnl *j, uint64_t pos, uint8_t *blk,
						  uint32_t flags, uint32_t *cnt, int *rc)
{
	const struct jnl_list_hdr *h = (const struct jnl_list_hdr *)blk;

	*cnt = 0;
	*rc = blk_rw(j->dev, BLK_OP_READ, jnl_abs(j, pos), 1, blk, flags);
	if (*rc || !jg_blk_crc_ok(blk, JG_BLOCK_SIZE, j->seed) ||
	    jg_le32(h->hdr.magic) != JNL_MAGIC_DECLARE || jg_le32(h->count) > JNL_DESC_TAGS)
		return NULL;	/* verified in the scan; changed since: nothing to trust */
	*cnt = jg_le32(h->count);
	return (const struct jnl_tag *)(blk + sizeof(*h));
}

/*
 * Is the held-back last transaction complete? When its commit block went out in
 * one batch with its data (C3, JNL_COMMIT_DATA_CSUM), its declared data at home
 * must match the crc32c of the newest declare tag of each block. Blocks it also
 * logs are left out: replay writes them. A block it revokes is not: a declare
 * tag means its home write went out, and the revoke may be the one that keeps an
 * older logged copy from being replayed over that write (JNL_TB_LREVOKE). The
 * reads carry
 * @rflags (BLK_SYNCRAID unless readonly): that data may have been in flight.
 */
static int jnl_rec_check_last(struct jnl *j, struct jnl_scan *s, uint32_t rflags, bool *complete,
			      struct jnl_recovery_report *rep)
{
	struct jnl_last *l = &s->last;
	struct jnl_map want, logged;
	uint64_t *keys = NULL;
	uint8_t *blk = jg_alloc_blocks(1), *buf = jg_alloc_blocks(JNL_REC_WIN);
	struct blk_req reqs[JNL_REC_WIN];
	size_t n = 0;
	int rc = -ENOMEM;

	*complete = true;
	jnl_map_init(&want);
	jnl_map_init(&logged);
	if (!l->csum) {		/* its commit block followed its data (C2) */
		rc = 0;
		goto out;
	}
	if (!blk || !buf)
		goto out;
	rc = 0;
	for (size_t i = 0; i < l->tags.n && !rc; i++) {
		uint64_t *v;

		rc = jnl_map_get(&logged, l->tags.v[i].home, &v, NULL);
	}
	for (size_t i = 0; i < l->ndecl && !rc; i++) {
		const struct jnl_tag *t;
		uint32_t cnt;

		t = jnl_rec_declare_read(j, l->decl[i], blk, 0, &cnt, &rc);
		if (!rc && !t) {
			*complete = false;
			goto out;
		}
		for (uint32_t k = 0; k < cnt && !rc; k++) {
			uint64_t b = jg_le64(t[k].blkno), *v;

			if (b >= j->dev->nblocks || jnl_map_find(&logged, b))
				continue;
			if (jg_le32(t[k].flags) & JNL_TAG_NO_CRC) {
				/* our writer never does this: a damaged or foreign log */
				jg_log(JG_LOG_WARN, JNL_SUBSYS,
				       "recovery dev=%s blkno=%llu tid=%llu declare tag without crc in a transaction committed with data checksums: transaction dropped",
				       j->dev->name, (unsigned long long)b,
				       (unsigned long long)l->tid);
				*complete = false;
				goto out;
			}
			rc = jnl_map_get(&want, b, &v, NULL);
			if (!rc)
				*v = jg_le32(t[k].crc);	/* log order: the newest tag wins */
		}
	}
	if (rc || !want.n)
		goto out;
	rc = -ENOMEM;
	keys = malloc(want.n * sizeof(*keys));
	if (!keys)
		goto out;
	rc = 0;
	for (size_t i = 0; i < want.cap; i++)
		if (want.keys[i] != JNL_MAP_EMPTY)
			keys[n++] = want.keys[i];
	jnl_sort_u64(keys, n);
	for (size_t i = 0; i < n && !rc && *complete; i += JNL_REC_WIN) {
		size_t b = n - i < JNL_REC_WIN ? n - i : JNL_REC_WIN;

		for (size_t k = 0; k < b; k++)
			reqs[k] = (struct blk_req){ .op = BLK_OP_READ, .flags = rflags,
						    .blkno = keys[i + k], .nblocks = 1,
						    .buf = buf + k * JG_BLOCK_SIZE };
		rc = blk_submit(j->dev, reqs, (unsigned int)b);
		for (size_t k = 0; k < b && !rc; k++) {
			uint32_t want_crc = (uint32_t)*jnl_map_find(&want, keys[i + k]);

			if (jg_crc32c(j->seed, buf + k * JG_BLOCK_SIZE, JG_BLOCK_SIZE) != want_crc) {
				jg_log(JG_LOG_WARN, JNL_SUBSYS,
				       "recovery dev=%s blkno=%llu tid=%llu declared data not as committed: transaction dropped",
				       j->dev->name, (unsigned long long)keys[i + k],
				       (unsigned long long)l->tid);
				*complete = false;
				break;
			}
		}
		if (!rc && rflags)
			rep->declared_blocks_resynced += b;
	}
	if (rc)
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s reading declared data failed: %d",
		       j->dev->name, rc);
out:
	jnl_map_free(&want);
	jnl_map_free(&logged);
	free(keys);
	free(blk);
	free(buf);
	return rc;
}

/* Pass 2: every block named by the uncommitted transaction's declare blocks. */
static int jnl_rec_declared(struct jnl *j, struct jnl_scan *s, struct jnl_recovery_report *rep)
{
	uint8_t *blk = jg_alloc_blocks(1), *buf = jg_alloc_blocks(JNL_DESC_TAGS);
	struct blk_req *reqs = malloc(JNL_DESC_TAGS * sizeof(*reqs));
	uint64_t *list = malloc(JNL_DESC_TAGS * sizeof(*list));
	int rc = -ENOMEM;

	if (!blk || !buf || !reqs || !list)
		goto out;
	rc = 0;
	for (size_t i = 0; i < s->ndecl && !rc; i++) {
		const struct jnl_tag *t;
		uint32_t cnt;

		t = jnl_rec_declare_read(j, s->decl[i], blk, BLK_SYNCRAID, &cnt, &rc);
		if (rc)
			break;
		for (uint32_t k = 0; k < cnt; k++)
			list[k] = jg_le64(t[k].blkno);
		rc = jnl_rec_syncraid_list(j, list, cnt, buf, reqs);
		rep->declared_blocks_resynced += cnt;
	}
	if (rc)
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s declared resync failed: %d", j->dev->name, rc);
out:
	free(blk);
	free(buf);
	free(reqs);
	free(list);
	return rc;
}

/*
 * The blocks the uncommitted transaction declared, kept for the filesystem
 * (jnl_recovery_take_declared): read after the SYNCRAID passes, so from resynced
 * rows; a declare block that no longer verifies names nothing (as in pass 2).
 */
static int jnl_rec_keep_declared(struct jnl *j, const uint64_t *decl, size_t ndecl)
{
	uint8_t *blk;
	size_t cap = j->rec_ndeclared;
	int rc = 0;

	if (!ndecl)
		return 0;
	blk = jg_alloc_blocks(1);
	if (!blk)
		return -ENOMEM;
	for (size_t i = 0; i < ndecl && !rc; i++) {
		const struct jnl_tag *t;
		uint32_t cnt;

		t = jnl_rec_declare_read(j, decl[i], blk, 0, &cnt, &rc);
		if (rc || !t)
			break;
		if (j->rec_ndeclared + cnt > cap) {
			size_t nc = (j->rec_ndeclared + cnt) * 2;
			uint64_t *v = realloc(j->rec_declared, nc * sizeof(*v));

			if (!v) {
				rc = -ENOMEM;
				break;
			}
			j->rec_declared = v;
			cap = nc;
		}
		for (uint32_t k = 0; k < cnt; k++) {
			uint64_t b = jg_le64(t[k].blkno);

			if (b < j->dev->nblocks)
				j->rec_declared[j->rec_ndeclared++] = b;
		}
	}
	free(blk);
	if (rc)
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s reading declare blocks failed: %d",
		       j->dev->name, rc);
	return rc;
}

/*
 * The superblock names a transaction an earlier recovery dropped whose declared
 * blocks the filesystem had not settled when the power went (settle_start,
 * settle_sequence): its declare blocks are still in the log (the log since
 * started after its window, and the filesystem settles before anything else),
 * so they are read again: a scan from there, as recovery's, of that one
 * transaction. Nothing of it is replayed.
 */
static int jnl_rec_keep_settle(struct jnl *j)
{
	uint64_t start = j->sb_start, seq = j->sb_sequence;
	struct jnl_scan s = { 0 };
	int rc;

	jnl_map_init(&s.revoke);
	j->sb_start = j->settle_start;
	j->sb_sequence = j->settle_sequence;
	rc = jnl_rec_scan(j, &s);
	j->sb_start = start;
	j->sb_sequence = seq;
	if (!rc && s.committed)
		rc = -EUCLEAN;	/* never ours: that transaction did not commit */
	if (!rc)
		rc = s.last.set ? jnl_rec_keep_declared(j, s.last.decl, s.last.ndecl)
				: jnl_rec_keep_declared(j, s.decl, s.ndecl);
	if (rc)
		jg_log(JG_LOG_ERR, JNL_SUBSYS,
		       "recovery dev=%s blocks declared by dropped transaction %llu at %llu not found: %d",
		       j->dev->name, (unsigned long long)j->settle_sequence,
		       (unsigned long long)j->settle_start, rc);
	free(s.tags.v);
	free(s.decl);
	jnl_map_free(&s.revoke);
	jnl_last_clear(&s.last);
	return rc;
}

int jnl_recovery_settled(struct jnl *j)
{
	int rc = 0;

	jg_mutex_lock(&j->io_lock);
	if (j->settle_start) {
		j->settle_start = j->settle_sequence = 0;
		if (!j->cfg.readonly)
			rc = jnl_sb_write_iolocked(j, j->sb_last_start, j->sb_last_sequence,
						   j->feat_incompat & JNL_FEAT_INCOMPAT_DECLARE,
						   false);
	}
	jg_mutex_unlock(&j->io_lock);
	if (rc)
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "dev=%s superblock write failed: %d", j->dev->name, rc);
	return rc;
}

void jnl_recovery_take_declared(struct jnl *j, uint64_t **list, size_t *n)
{
	*list = j->rec_declared;
	*n = j->rec_ndeclared;
	j->rec_declared = NULL;
	j->rec_ndeclared = 0;
}

/*
 * Pass 3: the log whose parity may not be durable, in one batch. A log write's
 * parity is durable only at the next flush (stripe.c (W4)), and a commit
 * finds at most jnl_unflushed_max() log blocks written since the last one
 * (commit.c (C6)): so from that many before the first block of the last
 * committed transaction (@first; not before the superblock's start, which a
 * checkpoint moves only after its flush) to its end (@head), and the window
 * after it (max_txn_blocks long) that was being written at the crash.
 */
static int jnl_rec_window(struct jnl *j, uint64_t first, uint64_t head,
			  struct jnl_recovery_report *rep)
{
	uint64_t back = jnl_dist(j, j->sb_start, first), last;

	if (back > jnl_unflushed_max(j))
		back = jnl_unflushed_max(j);
	first = jnl_prev_pos(j, first, back);
	last = jnl_dist(j, first, head);
	uint64_t left = last + j->max_txn_blocks < j->cap ? last + j->max_txn_blocks : j->cap;
	struct blk_req *reqs = malloc((left / JNL_REC_WIN + 2) * sizeof(*reqs));
	uint8_t *buf = jg_alloc_blocks(left ? left : 1);
	unsigned int nr;
	int rc = -ENOMEM;

	if (!buf || !reqs)
		goto out;
	/* only the resync the reads cause matters; each has its own buffer */
	nr = jnl_log_reqs(j, BLK_OP_READ, BLK_SYNCRAID, first, left, buf, JNL_REC_WIN, reqs);
	rep->log_blocks_resynced += left;
	rc = nr ? blk_submit(j->dev, reqs, nr) : 0;
	if (rc)
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s log window resync failed: %d", j->dev->name, rc);
out:
	free(buf);
	free(reqs);
	return rc;
}

/*
 * As jbd's journal_get_superblock, with SYNCRAID: the superblock's row may have
 * been cut mid-write even when the log is clean (the final clean-marking write
 * of a declared-mode close).
 */
static int jnl_rec_sb_resync(struct jnl *j, struct jnl_recovery_report *rep)
{
	uint8_t *sbb = jg_alloc_blocks(1);

	if (!sbb)
		return -ENOMEM;
	if (!blk_rw(j->dev, BLK_OP_READ, j->start_blkno, 1, sbb, BLK_SYNCRAID))
		rep->log_blocks_resynced++;
	free(sbb);
	return 0;
}

static void jnl_rec_array_done(struct jnl *j)
{
	int rc = blk_ctl(j->dev, BLK_CTL_SYNCRAID_DONE, NULL);

	if (rc && rc != -ENOTTY)
		jg_log(JG_LOG_WARN, JNL_SUBSYS, "dev=%s syncraid_done failed: %d", j->dev->name, rc);
	rc = blk_ctl(j->dev, BLK_CTL_CLEAR_JNL_PENDING, NULL);
	if (rc && rc != -ENOTTY)
		jg_log(JG_LOG_WARN, JNL_SUBSYS, "dev=%s clear jnl_pending failed: %d", j->dev->name, rc);
}

/*
 * A clean log (the superblock's start is 0): nothing to replay. A recovery that
 * may write still resyncs the superblock's row (the last write may have been
 * the clean-marking one of a declared-mode close: jnl_rec_sb_resync), writes
 * the superblock without the declare feature when it had it, and tells the
 * array (jnl_rec_array_done), the latter whatever the first two returned.
 */
static int jnl_rec_clean(struct jnl *j, bool declared, struct jnl_recovery_report *rep)
{
	int rc;

	if (j->cfg.readonly)
		return 0;
	rc = jnl_rec_sb_resync(j, rep);
	if (!rc && declared) {
		jg_mutex_lock(&j->io_lock);
		rc = jnl_sb_write_iolocked(j, 0, j->sb_sequence, false, false);
		jg_mutex_unlock(&j->io_lock);
	}
	jnl_rec_array_done(j);
	return rc;
}

/*
 * Scan the log and decide about the held-back last transaction: committed when
 * its data is all home (jnl_rec_check_last), else dropped, and what it declared
 * resynced as the uncommitted transaction's. Reads only, with the superblock's
 * row resynced between the scan and the check when recovery may write.
 */
static int jnl_rec_verify(struct jnl *j, struct jnl_scan *s, bool sync,
			  struct jnl_recovery_report *rep)
{
	int rc;

	/* the scan verifies and writes nothing: a log it refuses is left as found */
	rc = jnl_rec_scan(j, s);
	if (!rc && !j->cfg.readonly)
		rc = jnl_rec_sb_resync(j, rep);
	if (!rc && s->last.set) {
		bool complete;

		rc = jnl_rec_check_last(j, s, sync ? BLK_SYNCRAID : 0, &complete, rep);
		if (!rc && complete) {
			rc = jnl_last_accept(s);
		} else if (!rc) {
			/* its data is not all home: not committed; resync what it declared */
			free(s->decl);
			s->decl = s->last.decl;
			s->ndecl = s->last.ndecl;
			s->last.decl = NULL;
			s->end_tid = s->last.tid;
			s->head = s->last_first = s->last.first;
			jnl_last_clear(&s->last);
		}
	}
	return rc;
}

/*
 * The writing passes, in order: replay (with pass 1's SYNCRAID when @sync),
 * then pass 2 (declared blocks) and pass 3 (the log window).
 */
static int jnl_rec_passes(struct jnl *j, struct jnl_scan *s, bool sync,
			  struct jnl_recovery_report *rep)
{
	int rc;

	rep->transactions_replayed = s->committed;
	rc = jnl_rec_replay(j, s, sync, rep);
	if (rc || !sync)
		return rc;
	rc = jnl_rec_declared(j, s, rep);
	if (!rc)
		rc = jnl_rec_window(j, s->last_first, s->head, rep);
	return rc;
}

/*
 * Declared mode: keep the blocks the dropped transaction declared for the
 * filesystem to settle, and point the superblock at that transaction until it
 * has (jnl_recovery_settled).
 */
static int jnl_rec_keep(struct jnl *j, struct jnl_scan *s, bool declared)
{
	int rc;

	if (declared) {
		rc = jnl_rec_keep_declared(j, s->decl, s->ndecl);
		if (rc)
			return rc;
		/*
		 * The caller settles what they name in its first transactions, after
		 * this log is emptied: until it says so (jnl_recovery_settled) the
		 * superblock keeps pointing at the dropped transaction, and the new log
		 * starts past its window, so a crash before then finds its declare
		 * blocks again. (An earlier pointer, not settled, is replaced: its
		 * blocks are in the list now, and this recovery's transaction too.)
		 */
		if (s->ndecl && j->cfg.keep_declared && !j->cfg.readonly) {
			j->settle_start = s->head;
			j->settle_sequence = s->end_tid;
		}
	}
	if (!j->cfg.keep_declared)
		j->settle_start = j->settle_sequence = 0; /* nobody to settle them */
	return 0;
}

/*
 * Empty the log once everything replayed is durable: a flush, then the
 * superblock (start 0), then the array is told. Readonly: nothing written.
 */
static int jnl_rec_empty(struct jnl *j, const struct jnl_scan *s)
{
	int rc;

	if (j->cfg.readonly)
		return 0;
	rc = blk_flush(j->dev);
	if (!rc) {
		/* empty log; the dropped transaction's tid is never reused */
		jg_mutex_lock(&j->io_lock);
		rc = jnl_sb_write_iolocked(j, 0, s->end_tid + 1, false, true);
		jg_mutex_unlock(&j->io_lock);
	}
	if (rc) {
		jg_log(JG_LOG_ERR, JNL_SUBSYS, "recovery dev=%s superblock update failed: %d",
		       j->dev->name, rc);
		return rc;
	}
	jnl_rec_array_done(j);
	return 0;
}

/*
 * Recovery done: the new log starts at 1, or past the window of a dropped
 * transaction still to settle; the report is logged (unless the log was
 * clean) and kept for jnl_info.
 */
static void jnl_rec_finish(struct jnl *j, struct jnl_recovery_report *rep, double t0)
{
	bool ro = j->cfg.readonly;

	j->head = j->tail = j->unflushed_from = 1;
	if (j->settle_start && j->cfg.keep_declared && !ro)
		j->head = j->tail = j->unflushed_from =
			jnl_next_pos(j, j->settle_start, j->max_txn_blocks);
	j->used = 0;
	j->recovered = true;
	rep->seconds = jg_now_seconds() - t0;
	if (!rep->was_clean)
		jg_log(JG_LOG_INFO, JNL_SUBSYS,
		       "recovery dev=%s%s transactions=%llu replayed=%llu revoked=%llu declared_resynced=%llu log_resynced=%llu rows_resynced=%llu seconds=%.3f",
		       j->dev->name, ro ? " (readonly)" : "",
		       (unsigned long long)rep->transactions_replayed,
		       (unsigned long long)rep->blocks_replayed, (unsigned long long)rep->blocks_revoked,
		       (unsigned long long)rep->declared_blocks_resynced,
		       (unsigned long long)rep->log_blocks_resynced,
		       (unsigned long long)rep->rows_resynced, rep->seconds);
	jg_mutex_lock(&j->lock);
	j->last_recovery = *rep;
	jg_mutex_unlock(&j->lock);
}

/*
 * Recover: verify (scan, check the last transaction), replay and resync
 * (passes 1-3), keep what the dropped transaction declared, empty the log,
 * finish. Each step runs only when the one before succeeded.
 */
int jnl_recover(struct jnl *j, struct jnl_recovery_report *rep_out)
{
	struct jnl_recovery_report rep = { 0 };
	struct jnl_scan s = { 0 };
	struct blk_stats st0, st1;
	bool declared = j->feat_incompat & JNL_FEAT_INCOMPAT_DECLARE;
	bool stats, ro = j->cfg.readonly;
	/* resync (or, readonly, only read so) what a declared-mode crash left */
	bool sync = declared && (!ro || j->cfg.readonly_syncraid);
	double t0 = jg_now_seconds();
	enum jg_opoint op0;
	int rc = 0;

	if (j->started || j->recovered)
		return -EINVAL;
	op0 = jg_opoint_set(JG_OP_JNL_RESYNC);
	jnl_map_init(&s.revoke);
	/* an earlier recovery's dropped transaction the filesystem has not settled */
	if (j->settle_start)
		(void)jnl_rec_keep_settle(j);
	if (!j->sb_start) {
		rep.was_clean = true;
		rc = jnl_rec_clean(j, declared, &rep);
		goto done;
	}
	stats = blk_ctl(j->dev, BLK_CTL_GET_STATS, &st0) == 0;

	rc = jnl_rec_verify(j, &s, sync, &rep);
	if (!rc)
		rc = jnl_rec_passes(j, &s, sync, &rep);
	if (!rc)
		rc = jnl_rec_keep(j, &s, declared);
	if (!rc)
		rc = jnl_rec_empty(j, &s);
	if (rc)
		goto out;
	if (stats && blk_ctl(j->dev, BLK_CTL_GET_STATS, &st1) == 0)
		rep.rows_resynced = st1.syncraid_rows - st0.syncraid_rows;
	j->committed_tid = s.end_tid;
	j->sb_sequence = s.end_tid + 1;
	j->sb_start = 0;
done:
	if (rc)
		goto out;
	jnl_rec_finish(j, &rep, t0);
	if (rep_out)
		*rep_out = rep;
out:
	jg_opoint_set(op0);
	jg_log(JG_LOG_DEBUG, JNL_SUBSYS, "recover dev=%s readonly=%d -> %d", j->dev->name, ro, rc);
	free(s.tags.v);
	free(s.decl);
	jnl_map_free(&s.revoke);
	jnl_last_clear(&s.last);
	return rc;
}
