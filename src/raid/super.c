// SPDX-License-Identifier: MIT
/*
 * src/raid/super.c - member superblocks, array creation, failing members, stop.
 * Assembly, which reads and checks the superblocks, is in assemble.c: (S2),
 * (S4), (S5), (S7), (S10) and (S11) are stated there.
 *
 * Invariants:
 * (S1) Every superblock update advances the event counter (jg_blk_hdr.seq) and is
 *      written to every writable member, then flushed; a member that missed an
 *      update (failed, absent) is stale and is refused at assembly.
 * (S3) A dirty array is marked dirty in the superblocks before its first write,
 *      and clean only after every write has been flushed (raid_stop).
 * (S6) jnl-pending counts as dirty: the rows the journal declared may have parity
 *      that does not match, and only its replay resyncs them. So raid_stop leaves
 *      a pending array dirty (only the journal clears the flag), (S4) treats a
 *      pending array as dirty, and an array assembled pending (a journal of an
 *      earlier run not yet replayed: a->jnl_unreplayed) refuses raid_rebuild and
 *      raid_fail_member (-EUCLEAN), which would trust that parity, unless it was
 *      assembled with cfg->force. Mounting once (the journal replays and clears
 *      the flag) makes them safe.
 * (S8) Each member holds two copies of its superblock (blocks 0 and 1,
 *      RAID_FEATURE_INCOMPAT_SB_COPY). An update writes copy 0 to every member
 *      and flushes, then copy 1 and flushes: a power cut can tear at most the one
 *      copy being written (a 512-byte-sector disk tears a 4 KiB block), and the
 *      other holds this update or the one before. Assembly takes the newer valid
 *      copy of each member, so a torn copy costs at most one event (S5), and
 *      its own update rewrites both. Arrays made before the feature keep one copy.
 * (S9) Every superblock round starts with every writable member's two copies
 *      at one event, so a round cut part way leaves members at most one event
 *      apart, which (S5) accepts, and a copy torn by the cut still leaves the
 *      other at the event before. Before its first round, assembly rewrites
 *      both copies of each member that is one event behind or whose other copy
 *      is torn or older, at the freshest event and with the freshest
 *      superblock's state, flags and failed mask (nothing it says changes),
 *      the copy it did not take first. Without it, a recovering assembly whose
 *      round was cut after reaching only the freshest member left the others
 *      two events behind; and a round that tore copy 0 of a member whose copy
 *      1 an earlier cut had left old left it two behind: refused as stale.
 * (S12) A member's failure is durable before any write that skips it is
 *      acknowledged (MD's MD_SB_CHANGE_PENDING). A member failed in this run
 *      is marked failed in memory at once (so that every write from then on
 *      skips it, and reads go around it) and pending (a->fail_pending), and
 *      the superblock round that records it runs under sb_lock in the same
 *      critical section. A write that skipped a pending member (stripe.c
 *      raid_grp_run) waits for that round before it completes by taking
 *      sb_lock, and fails (-EIO, its rows kept dirty: (W5)) when the round
 *      could not be written to enough members and the member is still
 *      pending. Without it, a power cut before the round leaves every member
 *      at the old event with no failed bit; assembly takes the stale member as
 *      in sync, and a read or a resync returns its stale chunk in place of
 *      the acknowledged data. A write that skipped it and was not yet
 *      acknowledged is an ordinary write in flight at a crash: its regions
 *      are in the bitmap (W2) or the journal's, and resynced. Reads need no
 *      wait: they change nothing on the members.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raid_i.h"

#define RAID_DEFAULT_CHUNK 16u
#define RAID_DEFAULT_REGION 16384u

uint32_t raid_missing_read(struct raid_array *a)
{
	return __atomic_load_n(&a->read_missing, __ATOMIC_ACQUIRE);
}

uint32_t raid_missing_write(struct raid_array *a)
{
	return __atomic_load_n(&a->write_missing, __ATOMIC_ACQUIRE);
}

uint32_t raid_recovering(struct raid_array *a)
{
	return __atomic_load_n(&a->recovering, __ATOMIC_ACQUIRE);
}

uint32_t raid_missing_read_upto(struct raid_array *a, uint64_t last)
{
	uint32_t miss = raid_missing_read(a), rec = raid_recovering(a) & miss;

	for (unsigned int i = 0; rec; i++, rec >>= 1)
		if ((rec & 1u) && last < __atomic_load_n(&a->m[i].recovered, __ATOMIC_ACQUIRE))
			miss &= ~(1u << i);
	return miss;
}

/* Recompute the masks from members[]. sb_lock held. */
void raid_masks_update_locked(struct raid_array *a)
{
	unsigned int n = a->geo.n < RAID_MAX_MEMBERS ? a->geo.n : RAID_MAX_MEMBERS;
	uint32_t r = 0, w = 0, rec = 0;

	JG_ASSERT_HELD(&a->sb_lock);
	for (unsigned int i = 0; i < n; i++) {
		if (!a->m[i].dev || a->m[i].failed)
			w |= 1u << i;
		if (!a->m[i].dev || a->m[i].failed || a->m[i].rebuilding)
			r |= 1u << i;
		if (a->m[i].dev && !a->m[i].failed && a->m[i].rebuilding)
			rec |= 1u << i;
	}
	/* recovering first: a reader that sees the role missing sees its mark too */
	__atomic_store_n(&a->recovering, rec, __ATOMIC_RELEASE);
	__atomic_store_n(&a->read_missing, r, __ATOMIC_RELEASE);
	__atomic_store_n(&a->write_missing, w, __ATOMIC_RELEASE);
	raid_rcache_drop_all(a);	/* (H2) the members changed */
}

static uint32_t raid_failed_mask_locked(struct raid_array *a)
{
	uint32_t f = 0;

	JG_ASSERT_HELD(&a->sb_lock);
	for (unsigned int i = 0; i < a->geo.n; i++)
		if (a->m[i].failed)
			f |= 1u << i;
	return f;
}

/* ------------------------------------------------------------ superblock */

void raid_sb_fill(struct raid_array *a, void *blk, unsigned int role, uint32_t state,
		  uint32_t failed, uint64_t events, uint64_t home)
{
	struct raid_sb *sb = blk;
	uint32_t rec = raid_recovering(a);

	memset(blk, 0, RAID_BS);
	memcpy(sb->uuid, a->uuid, 16);
	sb->version_minor = jg_cpu_to_le16(RAID_FORMAT_MINOR);
	sb->feature_incompat = jg_cpu_to_le32(a->sb_incompat);
	if (a->sync_rows < a->geo.rows) { /* sync.c (Y1) */
		sb->feature_incompat =
		    jg_cpu_to_le32(jg_le32(sb->feature_incompat) | RAID_FEATURE_INCOMPAT_SYNCING);
		sb->sync_rows = jg_cpu_to_le64(a->sync_rows);
	}
	if (rec && role != RAID_ROLE_SPARE) { /* a spare's says nothing of rebuilds (P1) */
		sb->feature_incompat =
		    jg_cpu_to_le32(jg_le32(sb->feature_incompat) | RAID_FEATURE_INCOMPAT_RECOVERY);
		sb->recovery_mask = jg_cpu_to_le32(rec);
		if (rec & (1u << role))
			sb->recovery_rows = jg_cpu_to_le64(a->m[role].recovered_sb);
	}
	if (a->scrub_flags & RAID_SCRUB_RUNNING) { /* the online scrub's mark */
		sb->feature_compat = jg_cpu_to_le32(RAID_FEATURE_COMPAT_SCRUB);
		sb->scrub_rows = jg_cpu_to_le64(a->scrub_rows);
		sb->scrub_flags = jg_cpu_to_le32(a->scrub_flags);
		sb->scrub_mismatches = jg_cpu_to_le64(a->scrub_mismatches);
	}
	sb->role = jg_cpu_to_le32(role);
	sb->nmembers = jg_cpu_to_le32(a->geo.n);
	sb->level = jg_cpu_to_le32(a->geo.level);
	sb->layout = jg_cpu_to_le32(a->geo.layout);
	sb->chunk_blocks = jg_cpu_to_le32(a->geo.chunk_blocks);
	sb->resync_policy = jg_cpu_to_le32((uint32_t)a->policy);
	sb->state = jg_cpu_to_le32(state);
	sb->flags = jg_cpu_to_le32(a->sb_flags);
	sb->data_offset = jg_cpu_to_le64(a->geo.data_offset);
	sb->data_blocks = jg_cpu_to_le64(a->geo.data_blocks);
	sb->array_blocks = jg_cpu_to_le64(a->geo.array_blocks);
	sb->bitmap_region_blocks = jg_cpu_to_le32(a->bm_region_blocks);
	sb->bitmap_blocks = jg_cpu_to_le32(a->bm_blocks);
	sb->bitmap_regions = jg_cpu_to_le64(a->bm_regions);
	sb->failed_mask = jg_cpu_to_le32(failed);
	sb->ctime = jg_cpu_to_le64(a->ctime);
	sb->utime = jg_cpu_to_le64((uint64_t)time(NULL));
	jg_blk_seal(blk, RAID_BS, RAID_SB_MAGIC, RAID_FORMAT_VERSION, 0, events, home, a->seed);
}

/*
 * (S1) A round whose write failed on some member: flush the members whose
 * write landed before the next round is written, recording a failed flush in
 * @reqs[nr + i] as for the others. Left unflushed, this round's copy and the
 * next one's could both be lost at a cut on one member and kept on another:
 * two rounds behind, it would be refused as stale (S5 takes one).
 */
static void raid_sb_flush_written(struct blk_req *reqs, unsigned int nr)
{
	struct blk_req fl[RAID_MAX_MEMBERS];
	unsigned int idx[RAID_MAX_MEMBERS], n = 0;

	for (unsigned int i = 0; i < nr; i++) {
		if (reqs[i].result)
			continue;
		idx[n] = i;
		fl[n++] = reqs[nr + i];
	}
	if (n)
		(void)blk_submit_multi(fl, n); /* each result is read below */
	for (unsigned int k = 0; k < n; k++)
		reqs[nr + idx[k]].result = fl[k].result;
}

/*
 * Write superblock copies (S8) at @events to the members in @who: copy 0 to each
 * and a flush, then copy 1 and a flush -- copy 1 first for the members in
 * @one_first (S9). A member whose write or flush fails (any error: one that
 * cannot record the update is out) is marked failed; *@again is set if any was.
 * Returns -EIO when that leaves too few members. sb_lock held.
 */
static int raid_sb_put_copies_locked(struct raid_array *a, uint32_t who, uint32_t one_first,
				     uint32_t state, uint32_t failed, uint64_t events, bool *again)
{
	static const uint64_t home[2] = {RAID_SB_BLKNO, RAID_SB_COPY_BLKNO};
	unsigned int ncopies = RAID_SB_COPIES(a->sb_incompat);
	struct blk_req reqs[2 * RAID_MAX_MEMBERS];
	unsigned int roles[RAID_MAX_MEMBERS];
	unsigned int nr = 0;
	uint8_t *bufs;
	int rc = 0;

	JG_ASSERT_HELD(&a->sb_lock);
	*again = false;
	bufs = jg_alloc_blocks(a->geo.n);
	if (!bufs)
		return -ENOMEM;
	for (unsigned int c = 0; c < ncopies && !rc; c++) {
		nr = 0;
		for (unsigned int i = 0; i < a->geo.n; i++) {
			uint64_t at = home[ncopies == 2 && (one_first & (1u << i)) ? c ^ 1 : c];

			if (!(who & (1u << i)))
				continue;
			raid_sb_fill(a, bufs + (size_t)i * RAID_BS, i, state, failed, events, at);
			roles[nr] = i;
			reqs[nr] = (struct blk_req){.op = BLK_OP_WRITE,
						    .blkno = at,
						    .nblocks = 1,
						    .buf = bufs + (size_t)i * RAID_BS,
						    .dev = a->m[i].dev};
			nr++;
		}
		for (unsigned int i = 0; i < nr; i++)
			reqs[nr + i] = (struct blk_req){.op = BLK_OP_FLUSH, .dev = reqs[i].dev};
		/* (S8) crash after this flush: one copy holds the update on every member */
		rc = blk_submit_multi(reqs, nr);
		if (!rc)
			rc = blk_submit_multi(reqs + nr, nr);
		else
			raid_sb_flush_written(reqs, nr);
	}
	for (unsigned int i = 0; rc && i < 2 * nr; i++) {
		unsigned int role = roles[i % nr];

		if (!reqs[i].result || a->m[role].failed)
			continue;
		if (raid_popcount(raid_missing_write(a) | (1u << role)) > a->geo.npar)
			goto out;
		raid_away_fail_locked(a, role, true); /* (A3) */
		raid_member_mark_failed_locked(a, role);
		raid_masks_update_locked(a);
		raid_event_detail(a, RAID_EV_MEMBER_FAILED, role, -1, reqs[i].result,
				  "reason=superblock-write degraded=1");
		*again = true;
	}
	if (*again)
		rc = 0;
out:
	free(bufs);
	return rc;
}

/*
 * (S9) Rewrite both copies of the members in @who at the freshest event, saying
 * what it says; for those in @one_first copy 1 (the one not taken) first.
 */
int raid_sb_catch_up(struct raid_array *a, uint32_t who, uint32_t one_first,
			    const struct raid_sb *fresh)
{
	enum jg_opoint op = jg_opoint_set(JG_OP_RAID_SB);
	bool again;
	int rc;

	jg_mutex_lock(&a->sb_lock);
	rc = raid_sb_put_copies_locked(a, who, one_first, jg_le32(fresh->state),
				       jg_le32(fresh->failed_mask), a->events, &again);
	jg_mutex_unlock(&a->sb_lock);
	jg_opoint_set(op);
	return rc;
}

/* The members a superblock update goes to. sb_lock held. */
static uint32_t raid_sb_writers_locked(struct raid_array *a)
{
	uint32_t who = 0;

	JG_ASSERT_HELD(&a->sb_lock);
	for (unsigned int i = 0; i < a->geo.n; i++)
		if (a->m[i].dev && !a->m[i].failed)
			who |= 1u << i;
	return who;
}

/*
 * (S1) Write the superblock, with @state, to every writable member and flush
 * (S8). A member whose write fails is marked failed and the update is repeated
 * on the others, at a new event, so that they record it. sb_lock held.
 */
static int raid_sb_write_copies_locked(struct raid_array *a, uint32_t state)
{
	JG_ASSERT_HELD(&a->sb_lock);
	if (a->readonly)
		return -EROFS;
	for (int attempt = 0; attempt <= (int)a->geo.npar; attempt++) {
		bool again;
		int rc;

		/* (S1) read without sb_lock by bitmap.c: atomic */
		__atomic_add_fetch(&a->events, 1, __ATOMIC_RELAXED);
		rc = raid_sb_put_copies_locked(a, raid_sb_writers_locked(a), 0, state,
					       raid_failed_mask_locked(a), a->events, &again);
		if (!rc && !again) /* (S12) every failure is recorded */
			__atomic_store_n(&a->fail_pending, 0, __ATOMIC_RELEASE);
		if (rc || !again)
			return rc;
	}
	return -EIO;
}

int raid_sb_write_all_locked(struct raid_array *a, uint32_t state)
{
	enum jg_opoint op;
	int rc;

	JG_ASSERT_HELD(&a->sb_lock);
	op = jg_opoint_set(JG_OP_RAID_SB);
	rc = raid_sb_write_copies_locked(a, state);
	jg_opoint_set(op);
	return rc;
}

int raid_sb_write_all(struct raid_array *a, uint32_t state)
{
	int rc;

	jg_mutex_lock(&a->sb_lock);
	rc = raid_sb_write_all_locked(a, state);
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

void raid_member_mark_failed_locked(struct raid_array *a, unsigned int role)
{
	JG_ASSERT_HELD(&a->sb_lock);
	a->m[role].failed = true;
	/* before the masks: whoever sees the role missing sees it pending */
	if (!a->readonly)
		__atomic_or_fetch(&a->fail_pending, 1u << role, __ATOMIC_RELEASE);
}

int raid_fail_durable(struct raid_array *a, uint32_t skipped)
{
	char roles[64];
	uint32_t p;

	if (!(__atomic_load_n(&a->fail_pending, __ATOMIC_ACQUIRE) & skipped))
		return 0;
	/* the round that records the failure holds sb_lock from the marking on */
	jg_mutex_lock(&a->sb_lock);
	p = a->fail_pending & skipped;
	jg_mutex_unlock(&a->sb_lock);
	if (!p)
		return 0;
	jg_log(JG_LOG_ERR, "raid",
	       "%s: failed members (%s) are not recorded in the superblocks: a write that skipped "
	       "them fails",
	       a->dev.name, jg_roles_str(p, roles, sizeof(roles)));
	return -EIO;
}

int raid_member_fail(struct raid_array *a, unsigned int role, int err)
{
	return raid_member_fail_dev(a, role, NULL, err);
}

int raid_member_fail_dev(struct raid_array *a, unsigned int role, const struct blk_dev *dev,
			 int err)
{
	int rc = 0;

	jg_mutex_lock(&a->sb_lock);
	if (role >= a->geo.n || !a->m[role].dev) {
		rc = -EINVAL;
		goto out;
	}
	if (a->m[role].failed || (dev && a->m[role].dev != dev))
		goto out; /* (R6) the failed I/O went to a device the role no longer holds */
	if (raid_popcount(raid_missing_write(a) | (1u << role)) > a->geo.npar) {
		jg_log(JG_LOG_ERR, "raid",
		       "dev=%s role=%u error=%d: no redundancy left, not failing it",
		       a->m[role].name, role, err);
		rc = -EIO;
		goto out;
	}
	raid_away_fail_locked(a, role, false); /* (A3) */
	raid_member_mark_failed_locked(a, role); /* (S12) durable before a write skips it */
	a->m[role].rebuilding = false;
	raid_masks_update_locked(a);
	raid_event_detail(a, RAID_EV_MEMBER_FAILED, role, -1, err, "reason=%s degraded=1",
			  err ? "io-error" : "request");
	if (!a->readonly)
		rc = raid_sb_write_all_locked(a, RAID_STATE_DIRTY);
out:
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

int raid_fail_member(struct raid_array *a, unsigned int role)
{
	int rc;

	jg_mutex_lock(&a->sb_lock);
	rc = raid_jnl_unreplayed_locked(a, "fail member");
	jg_mutex_unlock(&a->sb_lock);
	if (!rc)
		rc = raid_member_fail(a, role, 0);

	jg_log(JG_LOG_DEBUG, "raid", "fail_member role=%u -> %d", role, rc);
	return rc;
}

/*
 * (S6) -EUCLEAN after a message when the array was assembled jnl-pending and the
 * journal has not cleared the flag since, unless assembled with force. sb_lock held.
 */
int raid_jnl_unreplayed_locked(struct raid_array *a, const char *what)
{
	JG_ASSERT_HELD(&a->sb_lock);
	if (!a->jnl_unreplayed || a->forced)
		return 0;
	jg_log(
	    JG_LOG_ERR, "raid",
	    "%s %s: refused: a filesystem-guided resync is pending (jnl-pending: the journal has not been replayed), so parity of the rows it was writing may not match their data; mount the filesystem once so its journal replays, or use force",
	    what, a->dev.name);
	return -EUCLEAN;
}

/* ------------------------------------------------------------ array object */

struct raid_array *raid_array_alloc(void)
{
	struct raid_array *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	/* event.c (E1): EDEADLK tells raid_event() its caller holds sb_lock */
	jg_mutex_init(&a->sb_lock, PTHREAD_MUTEX_ERRORCHECK);
	jg_mutex_init(&a->bm_lock, PTHREAD_MUTEX_DEFAULT);
	pthread_mutex_init(&a->sync_lock, NULL);
	pthread_mutex_init(&a->stats_lock, NULL);
	raid_rcache_init(a);
	raid_away_init(a);
	pthread_mutex_init(&a->spare_lock, NULL);
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	/* writers (parity updates) must not starve behind a stream of readers */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (unsigned int i = 0; i < RAID_LOCK_BUCKETS; i++)
		pthread_rwlock_init(&a->row_lock[i], &attr);
	pthread_rwlockattr_destroy(&attr);
	a->dev.ops = &raid_array_ops;
	a->rebuild_progress = -1;
	return a;
}

/* Free without touching the members. */
void raid_array_free(struct raid_array *a)
{
	if (!a)
		return;
	raid_bitmap_free(a);
	raid_rcache_free(a);
	raid_away_free(a);
	free(a->spare_arena);
	pthread_mutex_destroy(&a->spare_lock);
	free(a->synced);
	free(a->risk);
	for (unsigned int i = 0; i < RAID_LOCK_BUCKETS; i++)
		pthread_rwlock_destroy(&a->row_lock[i]);
	jg_mutex_destroy(&a->sb_lock);
	jg_mutex_destroy(&a->bm_lock);
	pthread_mutex_destroy(&a->sync_lock);
	pthread_mutex_destroy(&a->stats_lock);
	free(a);
}

static void raid_array_close_members(struct raid_array *a)
{
	raid_rcache_stop(a); /* (H3) its reads use the members */
	for (unsigned int i = 0; i < a->geo.n; i++) {
		blk_close(a->m[i].dev);
		a->m[i].dev = NULL;
	}
	for (unsigned int i = 0; i < a->nretired; i++)
		blk_close(a->retired[i]);
	a->nretired = 0;
	for (unsigned int i = 0; i < a->nspares; i++)
		if (!a->spares[i].taken) /* spare.c (P2): a taken one is a member's */
			blk_close(a->spares[i].dev);
	a->nspares = 0;
}

void raid_array_name(struct raid_array *a)
{
	snprintf(a->dev.name, sizeof(a->dev.name), "raid%u(%u)", a->geo.level, a->geo.n);
	a->dev.nblocks = a->geo.array_blocks;
}

/* ------------------------------------------------------------------ create */

/* -EEXIST after a message when @dev holds a jgrfs superblock in either copy, unless @force. */
static int raid_create_check_dev(struct blk_dev *dev, uint8_t *buf, bool force)
{
	/* either copy (S8): copy 0 may be the torn one */
	for (uint64_t home = RAID_SB_BLKNO; home <= RAID_SB_COPY_BLKNO; home++) {
		int rc = blk_rw(dev, BLK_OP_READ, home, 1, buf, 0);

		if (rc) {
			jg_log(JG_LOG_ERR, "raid", "create: dev=%s cannot read block %llu: %s",
			       dev->name, (unsigned long long)home, strerror(-rc));
			return rc;
		}
		if (jg_le32(((struct raid_sb *)buf)->hdr.magic) == RAID_SB_MAGIC && !force) {
			jg_log(JG_LOG_ERR, "raid",
			       "create: dev=%s already holds a jgrfs raid superblock (use force)",
			       dev->name);
			return -EEXIST;
		}
	}
	return 0;
}

/*
 * The geometry raid_create() lays over @n members of @mblocks blocks: the data
 * area after the superblocks and the bitmap (*@bm_blocks), chunk-aligned. 0;
 * -EINVAL for a bad @cfg; -ENOSPC when @mblocks holds no row (@g's data_offset
 * then says where the data area would start).
 */
static int raid_create_geo(const struct raid_create_cfg *cfg, unsigned int n, uint64_t mblocks,
			   struct raid_geo *g, uint32_t *bm_blocks)
{
	uint32_t chunk = cfg->chunk_blocks ? cfg->chunk_blocks : RAID_DEFAULT_CHUNK;
	uint32_t region =
	    cfg->bitmap_region_blocks ? cfg->bitmap_region_blocks : RAID_DEFAULT_REGION;
	uint64_t off;
	int rc = raid_geo_init(g, cfg->level, n, chunk, 0, 0);

	if (rc || (region & (region - 1)))
		return -EINVAL;
	*bm_blocks = 0;
	if (cfg->resync == RAID_RESYNC_BITMAP || cfg->resync == RAID_RESYNC_JOURNAL)
		*bm_blocks = (uint32_t)raid_div_up(raid_div_up(mblocks * g->ndata, region),
						   RAID_BITMAP_BITS_PER_BLOCK);
	off = raid_div_up(RAID_BITMAP_BLKNO + (uint64_t)*bm_blocks, chunk) * chunk;
	if (mblocks < off + chunk) {
		g->data_offset = off;
		return -ENOSPC;
	}
	return raid_geo_init(g, cfg->level, n, chunk, off, mblocks - off);
}

int raid_create_size(const struct raid_create_cfg *cfg, unsigned int n, uint64_t member_blocks,
		     uint64_t *array_blocks)
{
	struct raid_geo g;
	uint32_t bm_blocks;
	int rc;

	if (cfg->member_blocks)
		member_blocks = cfg->member_blocks;
	rc = raid_create_geo(cfg, n, member_blocks, &g, &bm_blocks);
	*array_blocks = rc ? 0 : g.array_blocks;
	return rc;
}

int raid_create_map(const struct raid_create_cfg *cfg, unsigned int n, uint64_t member_blocks,
		    uint64_t blkno, unsigned int *role, uint64_t *member_blkno)
{
	struct raid_geo g;
	uint32_t bm_blocks;
	int rc;

	if (cfg->member_blocks)
		member_blocks = cfg->member_blocks;
	rc = raid_create_geo(cfg, n, member_blocks, &g, &bm_blocks);
	if (!rc && blkno >= g.array_blocks)
		rc = -EINVAL;
	if (!rc)
		raid_layout_map(&g, blkno, role, member_blkno);
	return rc;
}

/*
 * What raid_create() checks before reading any device: the member count, the
 * resync policy, the region size (a power of two), and the geometry of @n
 * members at @chunk (into @g). 0, or an error after a message.
 */
static int raid_create_check_args(struct blk_dev **members, unsigned int n,
				  const struct raid_create_cfg *cfg, uint32_t chunk,
				  uint32_t region, struct raid_geo *g)
{
	int rc;

	if (!members || n < 2 || n > RAID_MAX_MEMBERS ||
	    (unsigned int)cfg->resync > RAID_RESYNC_JOURNAL || (region & (region - 1))) {
		jg_log(JG_LOG_ERR, "raid", "create: bad arguments n=%u resync=%d region=%u", n,
		       (int)cfg->resync, region);
		return -EINVAL;
	}
	rc = raid_geo_init(g, cfg->level, n, chunk, 0, 0);
	if (rc) {
		jg_log(JG_LOG_ERR, "raid",
		       "create: bad geometry level=%u members=%u chunk_blocks=%u", cfg->level, n,
		       chunk);
		return rc;
	}
	return 0;
}

/*
 * Every member present, as large as cfg->member_blocks when that is set, and
 * holding no superblock unless @force (raid_create_check_dev, @buf one block);
 * *@mblocks becomes the smallest member's size when cfg->member_blocks is 0.
 */
static int raid_create_check_members(struct blk_dev **members, unsigned int n,
				     const struct raid_create_cfg *cfg, uint8_t *buf, bool force,
				     uint64_t *mblocks)
{
	int rc;

	for (unsigned int i = 0; i < n; i++) {
		if (!members[i]) {
			jg_log(JG_LOG_ERR, "raid", "create: member %u missing", i);
			return -EINVAL;
		}
		if (!cfg->member_blocks && (!*mblocks || members[i]->nblocks < *mblocks))
			*mblocks = members[i]->nblocks;
		if (cfg->member_blocks && members[i]->nblocks < cfg->member_blocks) {
			jg_log(JG_LOG_ERR, "raid",
			       "create: dev=%s too small: %llu blocks < member_blocks=%llu",
			       members[i]->name, (unsigned long long)members[i]->nblocks,
			       (unsigned long long)cfg->member_blocks);
			return -EINVAL;
		}
		rc = raid_create_check_dev(members[i], buf, force);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The spares: at most RAID_MAX_SPARES, each present and holding no superblock
 * unless @force, and no device given twice among the members and spares.
 */
static int raid_create_check_spares(struct blk_dev **members, unsigned int n,
				    const struct raid_create_cfg *cfg, uint8_t *buf, bool force)
{
	int rc;

	if (cfg->nspares > RAID_MAX_SPARES || (cfg->nspares && !cfg->spares)) {
		jg_log(JG_LOG_ERR, "raid", "create: %u spares, at most %u", cfg->nspares,
		       RAID_MAX_SPARES);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < cfg->nspares; i++) {
		rc = cfg->spares[i] ? raid_create_check_dev(cfg->spares[i], buf, force) : -EINVAL;
		if (rc)
			return rc;
		/* the same device twice: its last superblock would win */
		for (unsigned int j = 0; j < n + i; j++) {
			struct blk_dev *o = j < n ? members[j] : cfg->spares[j - n];

			if (raid_dev_same(o, cfg->spares[i]) || !strcmp(o->name, cfg->spares[i]->name)) {
				jg_log(JG_LOG_ERR, "raid", "create: dev=%s is given twice",
				       cfg->spares[i]->name);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/*
 * The geometry over members of @mblocks blocks (raid_create_geo), -EINVAL
 * after a message when they hold no row; then each spare must be able to
 * stand in for a member.
 */
static int raid_create_layout(const struct raid_create_cfg *cfg, unsigned int n, uint64_t mblocks,
			      struct raid_geo *g, uint32_t *bm_blocks)
{
	int rc = raid_create_geo(cfg, n, mblocks, g, bm_blocks);

	if (rc == -ENOSPC) {
		jg_log(JG_LOG_ERR, "raid", "create: members too small: %llu blocks, need %llu",
		       (unsigned long long)mblocks,
		       (unsigned long long)(g->data_offset + g->chunk_blocks));
		rc = -EINVAL;
	}
	if (rc)
		return rc;
	for (unsigned int i = 0; i < cfg->nspares; i++)
		if (cfg->spares[i]->nblocks < g->data_offset + g->data_blocks) {
			jg_log(JG_LOG_ERR, "raid",
			       "create: spare dev=%s too small: %llu blocks, a member uses %llu",
			       cfg->spares[i]->name, (unsigned long long)cfg->spares[i]->nblocks,
			       (unsigned long long)(g->data_offset + g->data_blocks));
			return -EINVAL;
		}
	return 0;
}

/*
 * The new array object over @members with geometry @g, private to the caller:
 * a fresh uuid, superblocks in two copies (S8), the members' names and the
 * masks. NULL: out of memory.
 */
static struct raid_array *raid_create_array(struct blk_dev **members, unsigned int n,
					    const struct raid_create_cfg *cfg,
					    const struct raid_geo *g)
{
	struct raid_array *a = raid_array_alloc();

	if (!a)
		return NULL;
	a->geo = *g;
	jg_uuid_generate(a->uuid);
	a->seed = jg_crc_seed(a->uuid);
	a->policy = cfg->resync;
	a->ctime = (uint64_t)time(NULL);
	a->sb_incompat = RAID_FEATURE_INCOMPAT_SB_COPY; /* (S8) */
	a->bm_first = RAID_BITMAP_FIRST(a->sb_incompat);
	raid_array_name(a);
	for (unsigned int i = 0; i < n; i++) {
		a->m[i].dev = members[i];
		snprintf(a->m[i].name, sizeof(a->m[i].name), "%s", members[i]->name);
	}
	jg_mutex_lock(&a->sb_lock); /* @a is private: for the _locked contract only */
	raid_masks_update_locked(a);
	jg_mutex_unlock(&a->sb_lock);
	return a;
}

/*
 * Write the new array to its devices. Nothing of the data area is touched:
 * the array starts with its sync mark at row 0 (sync.c (Y1)) -- or at the end
 * when the caller knows the members hold zeros -- and clean, since nothing was
 * written. Bitmap blocks first (all clear), the superblocks last: a crash
 * before them leaves no array.
 */
static int raid_create_write(struct raid_array *a, const struct raid_create_cfg *cfg,
			     uint32_t bm_blocks)
{
	int rc = 0;

	a->sync_rows = a->sync_done = cfg->assume_clean ? a->geo.rows : 0;
	if (bm_blocks)
		rc = raid_bitmap_write(a, 0, bm_blocks, -1);
	if (!rc)
		rc = raid_members_flush(a, ~0u);
	if (!rc)
		rc = raid_sb_write_all(a, RAID_STATE_CLEAN);
	/* spare.c (P1): the spares' superblocks last, the array private still */
	jg_mutex_lock(&a->sb_lock);
	for (unsigned int i = 0; i < cfg->nspares && !rc; i++)
		rc = raid_spare_sb_write_sb_locked(a, cfg->spares[i]);
	jg_mutex_unlock(&a->sb_lock);
	return rc;
}

/*
 * Check the arguments and every device, lay out the geometry, make the array
 * object and write it (raid_create_write says in which order); the array is
 * freed at the end, the caller keeps the members.
 */
int raid_create(struct blk_dev **members, unsigned int n, const struct raid_create_cfg *cfg,
		bool force)
{
	struct raid_array *a = NULL;
	uint32_t chunk = cfg->chunk_blocks ? cfg->chunk_blocks : RAID_DEFAULT_CHUNK;
	uint32_t region =
	    cfg->bitmap_region_blocks ? cfg->bitmap_region_blocks : RAID_DEFAULT_REGION;
	uint64_t mblocks = cfg->member_blocks, regions = 0;
	uint32_t bm_blocks = 0;
	struct raid_geo g;
	uint8_t *buf = NULL;
	bool use_bitmap = cfg->resync == RAID_RESYNC_BITMAP || cfg->resync == RAID_RESYNC_JOURNAL;
	int rc;

	rc = raid_create_check_args(members, n, cfg, chunk, region, &g);
	if (rc)
		return rc;
	buf = jg_alloc_blocks(1);
	if (!buf)
		return -ENOMEM;
	rc = raid_create_check_members(members, n, cfg, buf, force, &mblocks);
	if (!rc)
		rc = raid_create_check_spares(members, n, cfg, buf, force);
	if (!rc)
		rc = raid_create_layout(cfg, n, mblocks, &g, &bm_blocks);
	if (rc)
		goto out;
	if (use_bitmap)
		regions = raid_div_up(g.array_blocks, region);
	a = raid_create_array(members, n, cfg, &g);
	if (!a) {
		rc = -ENOMEM;
		goto out;
	}
	rc = raid_bitmap_init(a, use_bitmap ? region : 0, bm_blocks, regions);
	if (!rc)
		rc = raid_create_write(a, cfg, bm_blocks);
	if (!rc) {
		char u[37];

		jg_uuid_format(a->uuid, u);
		jg_log(
		    JG_LOG_INFO, "raid",
		    "created uuid=%s level=%u members=%u spares=%u chunk_blocks=%u array_blocks=%llu resync=%s initial_sync=%s",
		    u, g.level, n, cfg->nspares, chunk, (unsigned long long)g.array_blocks,
		    raid_resync_policy_name(a->policy),
		    cfg->assume_clean ? "none (assume clean)" : "pending");
	}
out:
	free(buf);
	raid_array_free(a); /* the caller keeps the members */
	jg_log(JG_LOG_DEBUG, "raid", "create level=%u members=%u chunk_blocks=%u force=%d -> %d",
	       cfg->level, n, chunk, force, rc);
	return rc;
}

struct blk_dev *raid_array_dev(struct raid_array *a)
{
	return &a->dev;
}

int raid_stop(struct raid_array *a)
{
	bool pending;
	int rc = 0, rc2;

	if (!a)
		return 0;
	jg_mutex_lock(&a->sb_lock);
	pending = a->sb_flags & RAID_SB_FLAG_JNL_PENDING;
	jg_mutex_unlock(&a->sb_lock);
	if (!a->readonly && (a->resync_pending || pending)) {
		rc = raid_members_flush(a, ~0u);
		if (!rc)
			rc = raid_sb_write_all(a, RAID_STATE_DIRTY);
		if (a->resync_pending)
			jg_log(
			    JG_LOG_WARN, "raid",
			    "stop %s: left dirty, the recovery resync has not run (next assembly does it)",
			    a->dev.name);
		else /* (S6) only the journal's replay or clean close clears it */
			jg_log(
			    JG_LOG_WARN, "raid",
			    "stop %s: left dirty, jnl-pending is set (the filesystem journal has not replayed or closed cleanly)",
			    a->dev.name);
	} else if (!a->readonly) {
		/* (S3) every write flushed before clean is written */
		rc = raid_members_flush(a, ~0u);
		if (!rc)
			rc = raid_bitmap_clear_all(a);
		if (!rc)
			rc = raid_members_flush(a, ~0u);
		if (!rc) {
			rc2 = raid_sb_write_all(a, RAID_STATE_CLEAN);
			if (rc2)
				rc = rc2;
		}
		if (rc)
			jg_log(JG_LOG_ERR, "raid", "stop %s: could not mark clean: %s", a->dev.name,
			       strerror(-rc));
	}
	raid_array_close_members(a);
	raid_array_free(a);
	jg_log(JG_LOG_DEBUG, "raid", "stop -> %d", rc);
	return rc;
}

void raid_abandon(struct raid_array *a)
{
	if (!a)
		return;
	raid_array_close_members(a);
	raid_array_free(a);
}

void raid_info_get(struct raid_array *a, struct raid_info *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->uuid, a->uuid, 16);
	out->level = a->geo.level;
	out->nmembers = a->geo.n;
	out->ndata = a->geo.ndata;
	out->chunk_blocks = a->geo.chunk_blocks;
	out->member_blocks = a->geo.data_blocks;
	out->array_blocks = a->geo.array_blocks;
	out->rows = a->geo.rows;
	out->resync = a->policy;
	out->bitmap_region_blocks = a->bm_region_blocks;
	out->was_dirty = a->was_dirty;
	jg_mutex_lock(&a->bm_lock);
	out->bitmap_dirty_regions = a->bm_dirty;
	jg_mutex_unlock(&a->bm_lock);
	pthread_mutex_lock(&a->sync_lock);
	out->resync_all = a->resync_all;
	pthread_mutex_unlock(&a->sync_lock);
	jg_mutex_lock(&a->sb_lock);
	out->degraded = raid_missing_read(a) != 0;
	out->scrub_marked = a->scrub_flags & RAID_SCRUB_RUNNING;
	out->scrub_repair = a->scrub_flags & RAID_SCRUB_REPAIR;
	out->scrub_rows = a->scrub_rows;
	out->scrub_mismatches = a->scrub_mismatches;
	out->jnl_pending = a->sb_flags & RAID_SB_FLAG_JNL_PENDING;
	out->events = a->events;
	for (unsigned int i = 0; i < a->geo.n; i++) {
		struct raid_member_info *mi = &out->members[i];

		snprintf(mi->name, sizeof(mi->name), "%s", a->m[i].name);
		mi->role = i;
		mi->present = a->m[i].dev != NULL;
		mi->failed = a->m[i].failed;
		mi->rebuilding = a->m[i].rebuilding;
		mi->recovered_rows = __atomic_load_n(&a->m[i].recovered, __ATOMIC_ACQUIRE);
		mi->unfenced =
		    (!a->m[i].dev || a->m[i].failed) && raid_role_unfenced_locked(a, i) != NULL;
	}
	out->nspares = a->nspares;
	for (unsigned int i = 0; i < a->nspares; i++) {
		snprintf(out->spares[i].name, sizeof(out->spares[i].name), "%s",
			 a->spares[i].name);
		out->spares[i].rebuilding = a->spares[i].taken;
		out->spares[i].role = a->spares[i].role;
	}
	jg_mutex_unlock(&a->sb_lock);
	pthread_mutex_lock(&a->stats_lock);
	for (unsigned int i = 0; i < a->geo.n; i++) {
		out->members[i].read_errors_corrected = a->m[i].rd_corrected;
		out->members[i].read_errors_uncorrectable = a->m[i].rd_uncorrectable;
	}
	out->rebuild_progress = a->rebuild_progress;
	out->rebuild_last_done = a->rebuild_last.done;
	out->rebuild_last_readd = a->rebuild_last.readd;
	out->rebuild_last_role = a->rebuild_last.role;
	out->rebuild_last_rows = a->rebuild_last.rows;
	out->rebuild_last_seconds = a->rebuild_last.seconds;
	out->sync_rate = a->sync_rate;
	out->sync_rows = __atomic_load_n(&a->sync_rows, __ATOMIC_ACQUIRE);
	out->sync_done = __atomic_load_n(&a->sync_done, __ATOMIC_ACQUIRE);
	out->last_resync = a->last_resync;
	memcpy(out->event_counts, a->ev_counts, sizeof(out->event_counts));
	pthread_mutex_unlock(&a->stats_lock);
	for (unsigned int i = 0; i < a->geo.n; i++)
		out->members[i].missed_rows = raid_away_rows(a, i);
	raid_rcache_mem(a, &out->rcache_bytes, &out->rcache_bound_bytes);
	out->scratch_bytes = __atomic_load_n(&a->scratch_bytes, __ATOMIC_RELAXED);
	out->scratch_peak_bytes = __atomic_load_n(&a->scratch_peak, __ATOMIC_RELAXED);
	out->scratch_calls = (uint32_t)__atomic_load_n(&a->scratch_calls, __ATOMIC_RELAXED);
	out->scratch_calls_peak =
	    (uint32_t)__atomic_load_n(&a->scratch_calls_peak, __ATOMIC_RELAXED);
	out->scratch_call_max_bytes = raid_scratch_call_max(&a->geo);
}

size_t raid_lost_blocks(struct raid_array *a, uint64_t *seq, uint64_t *blocks, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&a->stats_lock);
	if (a->lost_seq - *seq > RAID_LOST_RING)
		*seq = a->lost_seq - RAID_LOST_RING; /* the older ones are gone */
	for (; *seq < a->lost_seq && n < max; (*seq)++)
		blocks[n++] = a->lost[*seq % RAID_LOST_RING];
	pthread_mutex_unlock(&a->stats_lock);
	return n;
}
