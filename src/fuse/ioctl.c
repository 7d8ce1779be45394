// SPDX-License-Identifier: MIT
/*
 * src/fuse/ioctl.c - the ioctls of a mounted volume (include/jgrfs/fop.h):
 * resync-all on/off, the seeds' SET_RESYNC_ALL / CLEAR_RESYNC_ALL (seed 006),
 * passed to the array as blk_ctl(BLK_CTL_SET_RESYNC_ALL / CLEAR_RESYNC_ALL), and
 * the status that `jgrfs status` prints, the FUSE requests counted by kind
 * (issue 28), the online scrub (scrub.c), the online rebuild of a failed
 * member (`jgrfs replace`), which runs in a thread of its own, and hot spares
 * added and removed (`jgrfs spare`).
 *
 * FUSE forwards only "restricted" ioctls from a normal mount: the kernel copies
 * in and out the number of bytes encoded in the command, so every command here
 * is _IO or _IOR with a fixed-size argument and the handler checks the sizes the
 * kernel announces before trusting them.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fop_i.h"

static uint64_t fop_usec(double seconds)
{
	return seconds > 0 ? (uint64_t)(seconds * 1e6) : 0;
}

/*
 * jemalloc's control interface, where the program links it (the release build):
 * weak, so that a build with another allocator links without it and reports
 * the allocator's figures as unknown.
 */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
	__attribute__((weak));

/* The allocator's bytes allocated and resident (jemalloc), 0 where unknown. */
static void fop_status_allocator(struct fop_status *st)
{
	uint64_t epoch = 1;
	size_t v, len = sizeof(v), elen = sizeof(epoch);

	if (!mallctl || mallctl("epoch", &epoch, &elen, &epoch, elen)) /* refresh the stats */
		return;
	if (!mallctl("stats.allocated", &v, &len, NULL, 0))
		st->mem_allocated = v;
	len = sizeof(v);
	if (!mallctl("stats.resident", &v, &len, NULL, 0))
		st->mem_resident = v;
}

/* The process's VmRSS and VmHWM (/proc/self/status), bytes. */
static void fop_status_rss(struct fop_status *st)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	unsigned long long kb;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			st->mem_rss = kb * 1024;
		else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			st->mem_rss_peak = kb * 1024;
	}
	fclose(f);
}

/*
 * The journal's pools and their bounds (docs/design/memory.md, "Bounds"), from
 * the volume's log and the mount's options: @threads that run request
 * handlers (the FUSE workers, and the ring's entries when it serves), which
 * are the writers of data; metadata has one writer more, the checksum
 * initialiser.
 */
static void fop_status_mem_jnl(const struct jnl_info *ji, uint64_t threads, struct fop_status *st)
{
	const uint64_t B = JG_BLOCK_SIZE, stage_buf = 256 * B;
	/* copies: one per block in the log not yet checkpointed, in the stages
	 * of the running and the committing transactions (their footprints),
	 * one made but not yet installed per writer, and the data of two early
	 * batches, each over by at most a block a writer */
	uint64_t copies = ji->log_cap_blocks + 2 * ji->max_txn_blocks + (threads + 1) +
			  2 * (ji->batch_blocks + threads);
	/* staging: the writes are one at a time (io_lock); one stages at most
	 * twice its blocks and a buffer, the largest being a full checkpoint
	 * (the log) or a commit's data (a batch); the pool keeps a batch's worth */
	uint64_t wmax = ji->log_cap_blocks > ji->batch_blocks + threads ? ji->log_cap_blocks
									 : ji->batch_blocks + threads;
	uint64_t stage = 2 * wmax * B + stage_buf;

	st->mem[FOP_MEM_JNL_COPIES] = (struct fop_status_mem){
		ji->copy_alone_bytes, ji->copy_alone_peak_bytes, copies * B };
	st->mem[FOP_MEM_JNL_STAGE] = (struct fop_status_mem){
		ji->stage_bytes, ji->stage_peak_bytes,
		stage > ji->stage_keep_bytes ? stage : ji->stage_keep_bytes };
	/* the arena: the slabs ever used stay resident; it is made whole */
	st->mem[FOP_MEM_JNL_ARENA] = (struct fop_status_mem){
		ji->arena_slabs_touched * ji->arena_slab_bytes,
		ji->arena_slabs_touched * ji->arena_slab_bytes,
		(uint64_t)ji->arena_slabs * ji->arena_slab_bytes };
	st->arena_slabs = ji->arena_slabs;
	st->arena_slabs_busy = ji->arena_slabs_busy;
	st->arena_slabs_busy_peak = ji->arena_slabs_busy_peak;
	st->arena_slabs_touched = ji->arena_slabs_touched;
	/* a commit's log image (its footprint) and an early batch's declare
	 * blocks (within the footprint too); not counted */
	st->mem[FOP_MEM_LOG_IMG] = (struct fop_status_mem){ 0, 0, 2 * ji->max_txn_blocks * B };
}

/*
 * The memory the daemon keeps, pool by pool (issue 46; docs/design/memory.md):
 * what each layer counts, the bound the mount's options give it, and the
 * process's and the allocator's totals, which the pools should explain.
 */
static void fop_status_mem(struct fop_ctx *c, struct fop_status *st)
{
	/* libfuse 3.14: each worker thread keeps one buffer of FUSE_MAX_MAX_PAGES
	 * (256) pages and a header page, whatever max_write is */
	const uint64_t fuse_buf = 256 * 4096 + 4096;
	struct fop_uring_mem um;
	uint64_t threads;
	struct raid_info ri;
	struct fs_info fi;

	/* T: the threads that run request handlers, the FUSE workers and, with
	 * -o uring while the ring serves, a thread per entry */
	fop_uring_mem(c->uring, &um);
	threads = (uint64_t)c->opts->max_threads + um.entries;
	st->fuse_threads = c->opts->max_threads;
	st->fuse_ring_entries = um.entries;
	raid_info_get(c->array, &ri);
	fs_info_get(c->fs, &fi);
	st->mem[FOP_MEM_CACHE] = (struct fop_status_mem){ fi.cache_bytes, fi.cache_peak_bytes,
							  fi.cache_bound_bytes };
	fop_status_mem_jnl(&fi.journal, threads, st);
	st->mem[FOP_MEM_ROW_CACHE] =
		(struct fop_status_mem){ ri.rcache_bytes, ri.rcache_bytes, ri.rcache_bound_bytes };
	/* parity scratch: a call holds one group's at a time, and one more is
	 * kept. The threads that may be in such a call at once: each that
	 * runs request handlers (a read taking the row path, a heal), the
	 * holder of the journal's io_lock (every journal write), the checksum
	 * initialiser, the initial sync, the rebuild and the scrub: threads +
	 * 5. (The row cache's read-ahead reads into its image, with no scratch.) */
	st->mem[FOP_MEM_SCRATCH] = (struct fop_status_mem){
		ri.scratch_bytes, ri.scratch_peak_bytes, (threads + 6) * ri.scratch_call_max_bytes };
	st->scratch_calls = ri.scratch_calls;
	st->scratch_calls_peak = ri.scratch_calls_peak;
	st->scratch_call_max = ri.scratch_call_max_bytes;
	/* libfuse's buffers are the workers' only; the ring's entries have
	 * theirs, allocated whole when the ring is set up: its peak is now */
	st->mem[FOP_MEM_FUSE] = (struct fop_status_mem){ 0, 0, c->opts->max_threads * fuse_buf };
	st->mem[FOP_MEM_FUSE_RING] = (struct fop_status_mem){ um.bytes, um.bytes, um.bound };
	fop_status_rss(st);
	fop_status_allocator(st);
}

/* The array's shape and state, from raid_info. */
static void fop_status_fill_array(struct fop_status *st, const struct raid_info *ri)
{
	memcpy(st->uuid, ri->uuid, sizeof(st->uuid));
	st->level = ri->level;
	st->nmembers = ri->nmembers;
	st->ndata = ri->ndata;
	st->chunk_blocks = ri->chunk_blocks;
	st->resync_policy = ri->resync;
	st->array_blocks = ri->array_blocks;
	st->rows = ri->rows;
	st->bitmap_dirty_regions = ri->bitmap_dirty_regions;
	st->events = ri->events;
	if (ri->degraded)
		st->flags |= FOP_ST_DEGRADED;
	if (ri->resync_all)
		st->flags |= FOP_ST_RESYNC_ALL;
	if (ri->jnl_pending)
		st->flags |= FOP_ST_JNL_PENDING;
	if (ri->sync_rows < ri->rows) {
		st->flags |= FOP_ST_SYNCING;
		st->sync_rows = ri->sync_rows;
		st->sync_done = ri->sync_done;
		st->sync_rate = (uint64_t)ri->sync_rate;
	}
	if (ri->rebuild_progress >= 0) {
		st->flags |= FOP_ST_REBUILDING;
		st->rebuild_ppm = (uint32_t)(ri->rebuild_progress * 1e6);
	}
	if (ri->rebuild_last_done) {
		st->rebuild_last_flags =
		    FOP_REBUILD_LAST_DONE | (ri->rebuild_last_readd ? FOP_REBUILD_LAST_READD : 0);
		st->rebuild_last_role = ri->rebuild_last_role;
		st->rebuild_last_rows = ri->rebuild_last_rows;
		st->rebuild_last_usec = (uint64_t)(ri->rebuild_last_seconds * 1e6);
	}
}

/* Each member and hot spare, as many as the status has room for. */
static void fop_status_fill_members(struct fop_status *st, const struct raid_info *ri)
{
	unsigned int n = ri->nmembers < FOP_STATUS_MEMBERS ? ri->nmembers : FOP_STATUS_MEMBERS;

	for (unsigned int i = 0; i < n; i++) {
		const struct raid_member_info *m = &ri->members[i];
		struct fop_status_member *sm = &st->members[i];

		memcpy(sm->name, m->name, sizeof(sm->name));
		sm->name[sizeof(sm->name) - 1] = '\0';
		sm->role = m->role;
		sm->read_errors_corrected = m->read_errors_corrected;
		sm->read_errors_uncorrectable = m->read_errors_uncorrectable;
		if (m->present)
			sm->flags |= FOP_MEMBER_PRESENT;
		if (m->failed)
			sm->flags |= FOP_MEMBER_FAILED;
		if (m->rebuilding)
			sm->flags |= FOP_MEMBER_REBUILDING;
		if (m->failed && m->missed_rows >= 0) {
			sm->flags |= FOP_MEMBER_MISSED_KNOWN;
			sm->missed_rows = (uint64_t)m->missed_rows;
		}
		if (m->unfenced)
			sm->flags |= FOP_MEMBER_UNFENCED;
		if (!m->present || m->failed)
			st->nfailed++;
	}
	st->nspares = ri->nspares < FOP_STATUS_SPARES ? ri->nspares : FOP_STATUS_SPARES;
	for (unsigned int i = 0; i < st->nspares; i++) {
		memcpy(st->spares[i].name, ri->spares[i].name, sizeof(st->spares[i].name));
		st->spares[i].name[sizeof(st->spares[i].name) - 1] = '\0';
		if (ri->spares[i].rebuilding) {
			st->spares[i].flags |= FOP_SPARE_REBUILDING;
			st->spares[i].role = ri->spares[i].role;
		}
	}
}

/* The filesystem and its journal, from fs_info. */
static void fop_status_fill_fs(struct fop_status *st, const struct fs_info *fi)
{
	const struct jnl_info *jn = &fi->journal;

	st->data_mode = fi->data_mode;
	if (fi->readonly)
		st->flags |= FOP_ST_READONLY;
	if (fi->data_csum) {
		st->flags |= FOP_ST_DATA_CSUM;
		st->dcsum_healed = fi->data_csum_heals;
		st->dcsum_errors = fi->data_csum_errors;
		st->dcsum_settled = fi->data_csum_settled;
	}
	if (jn->aborted)
		st->flags |= FOP_ST_JNL_ABORTED;
	st->log_blocks = jn->log_blocks;
	st->log_used_blocks = jn->log_used_blocks;
	st->commits = jn->commits;
	st->declare_blocks = jn->declare_blocks;
	st->logged_data_blocks = jn->logged_data_blocks;
	st->running_tid = jn->running_tid;
	st->checkpoint_passes = jn->checkpoint_passes;
	st->checkpoints = jn->checkpoints;
}

/* The array device's I/O counters (left 0 when it has none). */
static void fop_status_fill_io(struct fop_ctx *c, struct fop_status *st)
{
	struct blk_stats bs;

	memset(&bs, 0, sizeof(bs));
	if (blk_ctl(raid_array_dev(c->array), BLK_CTL_GET_STATS, &bs) == 0) {
		st->reads = bs.reads;
		st->writes = bs.writes;
		st->flushes = bs.flushes;
		st->read_blocks = bs.read_blocks;
		st->write_blocks = bs.write_blocks;
		st->syncraid_rows = bs.syncraid_rows;
		st->resync_rows_checked = bs.resync_rows_checked;
		st->resync_rows_repaired = bs.resync_rows_repaired;
		st->bitmap_bits_set = bs.bitmap_bits_set;
	}
}

/*
 * What this mount found and has done since: the array's and the journal's
 * recovery, events, notifications, the label, the data at risk and the files
 * named lost.
 */
static void fop_status_fill_mount(struct fop_ctx *c, struct fop_status *st,
				  const struct raid_info *ri, const struct fs_info *fi)
{
	const struct jnl_recovery_report *rec = &fi->recovery;

	if (c->array_was_dirty)
		st->flags |= FOP_ST_ARRAY_WAS_DIRTY;
	st->raid_resync_rows_checked = c->raid_resync.rows_checked;
	st->raid_resync_rows_repaired = c->raid_resync.rows_repaired;
	st->raid_resync_usec = fop_usec(c->raid_resync.seconds);
	if (rec->was_clean)
		st->flags |= FOP_ST_JNL_WAS_CLEAN;
	st->rec_transactions_replayed = rec->transactions_replayed;
	st->rec_blocks_replayed = rec->blocks_replayed;
	st->rec_blocks_revoked = rec->blocks_revoked;
	st->rec_declared_blocks_resynced = rec->declared_blocks_resynced;
	st->rec_log_blocks_resynced = rec->log_blocks_resynced;
	st->rec_rows_resynced = rec->rows_resynced;
	st->rec_usec = fop_usec(rec->seconds);
	st->orphans_freed = fi->orphans_freed;
	st->mount_time = (uint64_t)c->mount_time;
	for (unsigned int k = 0; k < RAID_EV__COUNT; k++)
		st->event_counts[k] = ri->event_counts[k];
	if (c->notify) {
		struct fop_notify_counts nc;

		fop_notify_counts_get(c->notify, &nc);
		st->flags |= FOP_ST_NOTIFY;
		st->notify_runs = nc.runs;
		st->notify_failed = nc.failed;
		st->notify_dropped = nc.dropped;
	}
	memcpy(st->label, fi->label, sizeof(st->label));
	st->label[sizeof(st->label) - 1] = '\0';
	st->risk_rows = c->risk_rows; /* set once, before the session started */
	st->risk_files = c->risk_files;
	st->risk_metadata = c->risk_metadata;
	if (c->risk_all)
		st->flags |= FOP_ST_RISK_ALL;
	pthread_mutex_lock(&c->lost_lock);
	st->lost_named = c->lost_named;
	snprintf(st->lost_last, sizeof(st->lost_last), "%s", c->lost_last);
	pthread_mutex_unlock(&c->lost_lock);
}

/*
 * The status `jgrfs status` prints: the array, its members, the filesystem,
 * the I/O counters, this mount's record, and the scrub (scrub.c), each from
 * its own source.
 */
void fop_status_fill(struct fop_ctx *c, struct fop_status *st)
{
	struct raid_info ri;
	struct fs_info fi;

	raid_info_get(c->array, &ri);
	fs_info_get(c->fs, &fi);
	memset(st, 0, sizeof(*st));
	st->version = FOP_STATUS_VERSION;
	st->size = sizeof(*st);
	st->daemon_pid = (uint32_t)getpid();
	fop_status_fill_array(st, &ri);
	fop_status_fill_members(st, &ri);
	fop_status_fill_fs(st, &fi);
	fop_status_fill_io(c, st);
	fop_status_fill_mount(c, st, &ri, &fi);
	fop_scrub_status(c, st);
	fop_status_mem(c, st);
}

/* ------------------------------------------------------- online rebuild */

struct fop_rebuild {
	struct fop_ctx *c;
	unsigned int role;
	struct blk_dev *dev;
	bool readd; /* jgrfs readd: the member that left, back on @dev (raid_readd) */
	unsigned int readd_flags; /* RAID_READD_* */
};

/* raid_rebuild()'s progress callback: non-zero stops it (unmount under way). */
static int fop_rebuild_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct fop_ctx *c = ctx;

	return atomic_load(&c->stopping);
}

/* A member assembled being rebuilt (its rebuild paused or cut by a crash): 0 and its role. */
static int fop_rebuild_paused(struct fop_ctx *c, unsigned int *role)
{
	struct raid_info ri;

	raid_info_get(c->array, &ri);
	for (unsigned int i = 0; i < ri.nmembers && i < RAID_MAX_MEMBERS; i++)
		if (ri.members[i].present && !ri.members[i].failed && ri.members[i].rebuilding) {
			*role = ri.members[i].role;
			return 0;
		}
	return -ENOENT;
}

static void *fop_rebuild_main(void *arg)
{
	struct fop_rebuild *r = arg;
	struct fop_ctx *c = r->c;
	int rc;

	/* the array owns r->dev from this call on, whatever it returns */
	if (r->readd)
		rc = raid_readd(c->array, r->role, r->dev, r->readd_flags, fop_rebuild_progress, c);
	else
		rc = raid_rebuild(c->array, r->role, r->dev, fop_rebuild_progress, c);
	/* the array logged the outcome: RebuildFinished or RebuildFailed, or why it refused */
	jg_log(JG_LOG_DEBUG, "fuse", "rebuild of role %u -> %d", r->role, rc);
	/* a RAID6 may have a second member whose rebuild was paused */
	while (!rc && !fop_rebuild_paused(c, &r->role)) {
		rc = raid_rebuild(c->array, r->role, NULL, fop_rebuild_progress, c);
		jg_log(JG_LOG_DEBUG, "fuse", "resumed rebuild of role %u -> %d", r->role, rc);
	}
	jg_mutex_lock(&c->rebuild_lock);
	c->rebuild_running = false;
	jg_mutex_unlock(&c->rebuild_lock);
	fop_watch_kick(c->watch); /* spare.c (U2): another role may wait for a spare */
	free(r);
	return NULL;
}

/* The role to rebuild: the one given, or the only member failed or missing. */
static int fop_rebuild_role(struct fop_ctx *c, const struct fop_replace *rq, unsigned int *role)
{
	struct raid_info ri;
	unsigned int found = 0;

	raid_info_get(c->array, &ri);
	for (unsigned int i = 0; i < ri.nmembers && i < RAID_MAX_MEMBERS; i++) {
		const struct raid_member_info *m = &ri.members[i];
		bool broken = !m->present || m->failed;

		if (rq->flags & FOP_REPLACE_ROLE) {
			if (m->role == rq->role) {
				*role = m->role;
				return broken ? 0 : -EINVAL;
			}
		} else if (broken) {
			*role = m->role;
			found++;
		}
	}
	return found == 1 ? 0 : -EINVAL;
}

int fop_rebuild_start_locked(struct fop_ctx *c, unsigned int role, struct blk_dev *dev, bool readd,
			     unsigned int readd_flags)
{
	struct fop_rebuild *r = calloc(1, sizeof(*r));
	int rc = -ENOMEM;

	JG_ASSERT_HELD(&c->rebuild_lock);
	if (!r)
		goto fail;
	r->c = c;
	r->role = role;
	r->dev = dev;
	r->readd = readd;
	r->readd_flags = readd_flags;
	rc = -pthread_create(&c->rebuild_thread, NULL, fop_rebuild_main, r);
	if (rc)
		goto fail;
	c->rebuild_started = true;
	c->rebuild_running = true;
	return 0;
fail:
	free(r);
	blk_close(dev);
	return rc;
}

void fop_rebuild_join(struct fop_ctx *c)
{
	bool started;

	atomic_store(&c->stopping, true);
	jg_mutex_lock(&c->rebuild_lock);
	started = c->rebuild_started;
	c->rebuild_started = false;
	jg_mutex_unlock(&c->rebuild_lock);
	if (started)
		pthread_join(c->rebuild_thread, NULL);
}

/*
 * A readd of @role whose connection ended with writes unanswered, without the
 * operator's --fenced: -EAGAIN after a message (rebuild.c (R7)).
 */
static int fop_readd_unfenced(struct fop_ctx *c, unsigned int role, uint32_t flags)
{
	struct raid_info ri;

	if (!(flags & FOP_REPLACE_READD) || (flags & FOP_REPLACE_FENCED))
		return 0;
	raid_info_get(c->array, &ri);
	if (role >= ri.nmembers || !ri.members[role].unfenced)
		return 0;
	jg_log(JG_LOG_ERR, "fuse",
	       "readd: role %u: its connection ended with writes its server had not answered: refused without --fenced",
	       role);
	return -EAGAIN;
}

static int fop_ioctl_replace(struct fop_ctx *c, const struct fop_replace *rq)
{
	const char *what = rq->flags & FOP_REPLACE_READD ? "readd" : "replace";
	struct blk_dev *dev = NULL;
	unsigned int role;
	int rc;

	jg_mutex_lock(&c->rebuild_lock);
	rc = -EBUSY;
	if (c->rebuild_running)
		goto out;
	if (c->rebuild_started) {
		/* the last rebuild finished: reap its thread before starting another */
		pthread_join(c->rebuild_thread, NULL);
		c->rebuild_started = false;
	}
	rc = fop_rebuild_role(c, rq, &role);
	if (rc) {
		jg_log(JG_LOG_ERR, "fuse", "%s: no member to rebuild%s", what,
		       rq->flags & FOP_REPLACE_ROLE ? " at that role (working or unknown)" : "");
		goto out;
	}
	/* raid_readd refuses it too, but in the rebuild thread: say it here */
	rc = fop_readd_unfenced(c, role, rq->flags);
	if (rc)
		goto out;
	rc = raid_dev_open(rq->path, 0, &dev);
	if (!rc) /* takes dev */
		rc = fop_rebuild_start_locked(c, role, dev, rq->flags & FOP_REPLACE_READD,
					      rq->flags & FOP_REPLACE_FENCED ? RAID_READD_FENCED
									     : 0);
	/* the array says RebuildStarted when the rebuild takes the role */
	jg_log(JG_LOG_DEBUG, "fuse", "%s: rebuilding role %u onto %s -> %d", what, role, rq->path,
	       rc);
out:
	jg_mutex_unlock(&c->rebuild_lock);
	return rc;
}

void fop_rebuild_resume(struct fop_ctx *c)
{
	unsigned int role;
	int rc;

	if (c->opts->readonly || fop_rebuild_paused(c, &role))
		return;
	jg_mutex_lock(&c->rebuild_lock);
	rc = fop_rebuild_start_locked(c, role, NULL, false, 0);
	jg_mutex_unlock(&c->rebuild_lock);
	if (rc)
		jg_log(JG_LOG_ERR, "fuse", "cannot resume the rebuild of role %u: %s", role,
		       strerror(-rc));
}

/* ------------------------------------------------------------ hot spares */

static int fop_ioctl_spare_add(struct fop_ctx *c, const struct fop_spare *rq)
{
	struct blk_dev *dev = NULL;
	int rc;

	if (c->opts->readonly)
		return -EROFS;
	rc = raid_dev_open(rq->path, 0, &dev);
	if (!rc)
		rc = raid_spare_add(c->array, dev); /* the array logs a refusal */
	if (rc) {
		blk_close(dev);
		return rc;
	}
	/* a member missing now is rebuilt onto it at once (spare.c (U2)) */
	fop_watch_kick(c->watch);
	return 0;
}

/*
 * The spare @rq names: its name as the array knows it (the path it was opened
 * by, maybe relative to where the mount ran) into @name, matched by real path.
 */
static void fop_spare_name(struct fop_ctx *c, const char *path, char *name, size_t len)
{
	struct raid_info ri;
	char real[PATH_MAX];

	raid_info_get(c->array, &ri);
	for (unsigned int i = 0; i < ri.nspares; i++) {
		const char *n = ri.spares[i].name;

		if (!strcmp(n, path) || (realpath(n, real) && !strcmp(real, path))) {
			snprintf(name, len, "%s", n);
			return;
		}
	}
	snprintf(name, len, "%s", path); /* a member's, or nobody's: the array says */
}

static int fop_ioctl_spare_remove(struct fop_ctx *c, const struct fop_spare *rq)
{
	char name[sizeof(rq->path)];

	if (c->opts->readonly)
		return -EROFS;
	fop_spare_name(c, rq->path, name, sizeof(name));
	return raid_spare_remove(c->array, name);
}

/* Switching resync-all changes how the array reads: root or the mounting user only. */
static bool fop_ioctl_allowed(fuse_req_t req, struct fop_ctx *c)
{
	const struct fuse_ctx *who = fuse_req_ctx(req);

	return who->uid == 0 || who->uid == c->owner_uid;
}

/* A snapshot of the request counters (relaxed loads: see fop_ctx.requests). */
static void fop_requests_fill(struct fop_ctx *c, struct fop_requests *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->version = FOP_REQUESTS_VERSION;
	rq->nkinds = FOP_REQ__COUNT;
	for (unsigned int i = 0; i < FOP_REQ__COUNT; i++)
		rq->count[i] = atomic_load_explicit(&c->requests[i], memory_order_relaxed);
}

/*
 * The checks in the order the handler answers them: a 32-bit caller, an unknown
 * command, then (the caller's) permission, then the sizes the kernel announces
 * and the replace or spare request's path.
 */
int fop_ioctl_decode(unsigned int cmd, unsigned int flags, const void *in_buf, size_t in_bufsz,
		     size_t out_bufsz, struct fop_ioctl_call *out)
{
	const struct fop_replace *rq;
	const struct fop_spare *sp;
	const struct fop_scrub *sc;

	memset(out, 0, sizeof(*out));
	out->cmd = cmd;
	if (flags & FUSE_IOCTL_COMPAT)
		return -ENOSYS; /* 32-bit callers on a 64-bit kernel: not supported */
	switch (cmd) {
	case FOP_IOC_SET_RESYNC_ALL:
	case FOP_IOC_CLEAR_RESYNC_ALL:
		out->privileged = true;
		return 0;
	case FOP_IOC_REPLACE:
		out->privileged = true;
		rq = in_buf;
		if (in_bufsz < sizeof(struct fop_replace) || !rq ||
		    (rq->flags & ~(FOP_REPLACE_ROLE | FOP_REPLACE_READD | FOP_REPLACE_FENCED)) ||
		    memchr(rq->path, '\0', sizeof(rq->path)) == NULL ||
		    (rq->path[0] != '/' && !raid_dev_is_nbd(rq->path)))
			out->arg_err = -EINVAL;
		else
			out->replace = rq;
		return 0;
	case FOP_IOC_SPARE_ADD:
	case FOP_IOC_SPARE_REMOVE:
		out->privileged = true;
		sp = in_buf;
		if (in_bufsz < sizeof(struct fop_spare) || !sp || sp->flags ||
		    memchr(sp->path, '\0', sizeof(sp->path)) == NULL ||
		    (sp->path[0] != '/' && !raid_dev_is_nbd(sp->path)))
			out->arg_err = -EINVAL;
		else
			out->spare = sp;
		return 0;
	case FOP_IOC_SCRUB_START:
		out->privileged = true;
		sc = in_buf;
		if (in_bufsz < sizeof(struct fop_scrub) || !sc || (sc->flags & ~(FOP_SCRUB_REPAIR | FOP_SCRUB_TRUST_DATA)) ||
		    sc->reserved)
			out->arg_err = -EINVAL;
		else
			out->scrub = sc;
		return 0;
	case FOP_IOC_SCRUB_CANCEL:
		out->privileged = true;
		return 0;
	case FOP_IOC_STATUS:
		if (out_bufsz < sizeof(struct fop_status))
			out->arg_err = -EINVAL;
		out->status_bytes = sizeof(struct fop_status);
		return 0;
	case FOP_IOC_REQUESTS:
		if (out_bufsz < sizeof(struct fop_requests))
			out->arg_err = -EINVAL;
		return 0;
	default:
		if (_IOC_TYPE(cmd) == FOP_IOC_MAGIC && _IOC_NR(cmd) == _IOC_NR(FOP_IOC_STATUS) &&
		    _IOC_DIR(cmd) == _IOC_READ && out_bufsz >= 2 * sizeof(uint32_t)) {
			out->cmd = FOP_IOC_STATUS; /* another build's: version and size first */
			out->status_bytes = out_bufsz < sizeof(struct fop_status)
						? out_bufsz
						: sizeof(struct fop_status);
			return 0;
		}
		return -ENOTTY;
	}
}

void fop_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	       struct fuse_file_info *fi, unsigned int flags, const void *in_buf, size_t in_bufsz,
	       size_t out_bufsz)
{
	struct fop_ctx *c = fuse_req_userdata(req);
	struct fop_ioctl_call call;
	struct fop_status st;
	struct fop_requests rq;
	int rc;

	fop_count(c, FOP_REQ_IOCTL);
	rc = fop_ioctl_decode(cmd, flags, in_buf, in_bufsz, out_bufsz, &call);
	if (rc)
		goto out;
	rc = -EPERM;
	if (call.privileged && !fop_ioctl_allowed(req, c))
		goto out;
	rc = call.arg_err;
	if (rc)
		goto out;
	switch (call.cmd) {
	case FOP_IOC_SET_RESYNC_ALL:
	case FOP_IOC_CLEAR_RESYNC_ALL:
		rc = blk_ctl(raid_array_dev(c->array),
			     cmd == FOP_IOC_SET_RESYNC_ALL ? BLK_CTL_SET_RESYNC_ALL
							   : BLK_CTL_CLEAR_RESYNC_ALL,
			     NULL);
		if (rc < 0)
			goto out;
		jg_log(JG_LOG_INFO, "fuse", "resync-all %s",
		       cmd == FOP_IOC_SET_RESYNC_ALL ? "on" : "off");
		fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	case FOP_IOC_REPLACE:
		rc = fop_ioctl_replace(c, call.replace);
		if (rc)
			goto out;
		fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	case FOP_IOC_SPARE_ADD:
	case FOP_IOC_SPARE_REMOVE:
		rc = call.cmd == FOP_IOC_SPARE_ADD ? fop_ioctl_spare_add(c, call.spare)
						   : fop_ioctl_spare_remove(c, call.spare);
		if (rc)
			goto out;
		fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	case FOP_IOC_SCRUB_START:
	case FOP_IOC_SCRUB_CANCEL:
		rc = call.cmd == FOP_IOC_SCRUB_START ? fop_scrub_start(c, call.scrub)
						     : fop_scrub_cancel(c);
		if (rc)
			goto out;
		fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	case FOP_IOC_REQUESTS:
		fop_requests_fill(c, &rq);
		fuse_reply_ioctl(req, 0, &rq, sizeof(rq));
		return;
	default: /* FOP_IOC_STATUS: decode knows no other */
		fop_status_fill(c, &st);
		fuse_reply_ioctl(req, 0, &st, call.status_bytes);
		return;
	}
out:
	fuse_reply_err(req, -rc);
}
