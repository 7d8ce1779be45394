// SPDX-License-Identifier: MIT
/*
 * src/fuse/initsync.c - the initial sync of a new array, run by the mounted
 * volume in the background (raid_initial_sync(), src/raid/sync.c), throttled
 * as MD throttles a resync: at most sync_rate= MiB/s of array data while the
 * volume is idle, an eighth of that while its files are in use (any array
 * request between two steps), and waiting while the array is degraded or
 * being rebuilt. An unmount pauses it at its mark; the next mount resumes it.
 *
 * Beside it, on a volume whose data checksum region mkfs left unwritten
 * (src/fs/dcsum.c (D3)), a second thread writes the region a step at a time
 * (fs_dcsum_init_step: blocks, a flush, then the mark in a transaction),
 * throttled by the same rule at sync_rate= MiB/s of checksum blocks, and
 * paused and resumed the same way. A write that needs a slot past the mark
 * moves the mark itself; this thread only spares it the wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fop_i.h"

/* checksum blocks one step of the region's initialiser writes: 1 MiB */
#define FOP_DCINIT_STEP 256u

struct fop_isync {
	struct fop_ctx *c;
	pthread_t thread;
	pthread_t dthread;	/* the checksum region's initialiser */
	bool sync_on, dcinit_on; /* which of the two threads run */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;		/* under lock: the unmount */
	double row_bytes;	/* array data per row */
	double t_last;		/* time of the last step's end */
	uint64_t done_last;	/* rows done then */
	uint64_t io_last;	/* array requests counted then */
};

/* Wait @seconds or until the unmount; true when stopping. */
static bool fop_isync_wait(struct fop_isync *s, double seconds)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)seconds;
	ts.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
		;
	stop = s->stop;
	pthread_mutex_unlock(&s->lock);
	return stop;
}

static uint64_t fop_isync_io(struct fop_isync *s)
{
	struct blk_stats st;

	if (blk_ctl(raid_array_dev(s->c->array), BLK_CTL_GET_STATS, &st))
		return 0;
	return st.reads + st.writes;
}

/* raid_initial_sync()'s step callback: the throttle, and the unmount's stop. */
static int fop_isync_step(void *ctx, uint64_t done, uint64_t total)
{
	struct fop_isync *s = ctx;
	double rate = s->c->opts->sync_rate_mb * 1048576.0, now = jg_now_seconds(), need;
	uint64_t io = fop_isync_io(s);
	bool stop;

	(void)total;
	if (rate > 0) {
		if (io != s->io_last)
			rate /= 8; /* the volume is in use: give it the disks */
		need = (double)(done - s->done_last) * s->row_bytes / rate - (now - s->t_last);
		if (need > 0 && fop_isync_wait(s, need > 5 ? 5 : need))
			return 1;
	}
	s->t_last = jg_now_seconds();
	s->done_last = done;
	s->io_last = fop_isync_io(s);
	pthread_mutex_lock(&s->lock);
	stop = s->stop;
	pthread_mutex_unlock(&s->lock);
	return stop;
}

static void *fop_isync_main(void *arg)
{
	struct fop_isync *s = arg;
	struct raid_info ri;
	int rc;

	for (;;) {
		raid_info_get(s->c->array, &ri);
		s->t_last = jg_now_seconds();
		s->done_last = ri.sync_done;
		s->io_last = fop_isync_io(s);
		rc = raid_initial_sync(s->c->array, fop_isync_step, s);
		if (rc != -EAGAIN)
			break;
		if (fop_isync_wait(s, 1.0)) /* degraded, or a rebuild runs: wait for it */
			break;
	}
	if (rc && rc != -ECANCELED && rc != -EAGAIN && rc != -EROFS)
		jg_log(JG_LOG_ERR, "fuse", "initial sync stopped: %s; the next mount resumes it",
		       strerror(-rc));
	return NULL;
}

/* The checksum region's initialiser: steps until the region is whole or the unmount. */
static void *fop_dcinit_main(void *arg)
{
	struct fop_isync *s = arg;
	double rate = s->c->opts->sync_rate_mb * 1048576.0, t0 = jg_now_seconds(), t, r;
	uint64_t io = fop_isync_io(s), left = 1;
	int rc = 0;

	while (left && !rc) {
		/* requests since the last step's end are the volume's use: an eighth */
		r = fop_isync_io(s) != io ? rate / 8 : rate;
		t = jg_now_seconds();
		rc = fs_dcsum_init_step(s->c->fs, FOP_DCINIT_STEP, &left);
		t = r > 0 ? (double)FOP_DCINIT_STEP * JG_BLOCK_SIZE / r - (jg_now_seconds() - t) : 0;
		io = fop_isync_io(s);
		if (left && fop_isync_wait(s, t > 0 ? t : 0))
			break;
	}
	if (rc && rc != -EROFS)
		jg_log(JG_LOG_ERR, "fuse",
		       "data checksum region: initialiser stopped: %s; the next mount resumes it",
		       strerror(-rc));
	else if (!left)
		jg_log(JG_LOG_INFO, "fuse", "data checksum region initialised in %.1f s",
		       jg_now_seconds() - t0);
	return NULL;
}

/* Whether the volume's checksum region is written whole; logs where it stands. */
static bool fop_dcinit_needed(struct fop_ctx *c)
{
	struct fs_info fi;

	fs_info_get(c->fs, &fi);
	if (fi.data_csum_init >= fi.data_csum_blocks)
		return false;
	jg_log(JG_LOG_INFO, "fuse", "data checksum region written to block %llu of %llu: %s",
	       (unsigned long long)fi.data_csum_init, (unsigned long long)fi.data_csum_blocks,
	       c->opts->readonly ? "waits for a read-write mount" : "the initialiser resumes");
	return !c->opts->readonly;
}

void fop_isync_start(struct fop_ctx *c)
{
	struct fop_isync *s;
	struct raid_info ri;
	bool sync, dcinit = fop_dcinit_needed(c);

	raid_info_get(c->array, &ri);
	sync = ri.sync_rows < ri.rows;
	if (sync && c->opts->readonly) {
		jg_log(JG_LOG_INFO, "fuse",
		       "initial sync at row %llu of %llu: waits for a read-write mount",
		       (unsigned long long)ri.sync_rows, (unsigned long long)ri.rows);
		sync = false;
	}
	if (!sync && !dcinit)
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->c = c;
	s->row_bytes = (double)ri.ndata * ri.chunk_blocks * JG_BLOCK_SIZE;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (sync && pthread_create(&s->thread, NULL, fop_isync_main, s))
		jg_log(JG_LOG_ERR, "fuse", "initial sync: cannot start its thread");
	else
		s->sync_on = sync;
	if (dcinit && pthread_create(&s->dthread, NULL, fop_dcinit_main, s))
		jg_log(JG_LOG_ERR, "fuse", "data checksum region: cannot start its initialiser");
	else
		s->dcinit_on = dcinit;
	if (!s->sync_on && !s->dcinit_on) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return;
	}
	c->isync = s;
}

void fop_isync_stop(struct fop_ctx *c)
{
	struct fop_isync *s = c->isync;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->sync_on)
		pthread_join(s->thread, NULL);
	if (s->dcinit_on)
		pthread_join(s->dthread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	c->isync = NULL;
}
