// SPDX-License-Identifier: MIT
/*
 * src/fuse/spare.c - the array's event handler of a mounted volume, and the
 * spare thread that rebuilds a lost member onto a hot spare without anyone
 * typing a command (include/jgrfs/fop.h, src/raid/spare.c).
 *
 * (U1) The handler (fop_watch_event) runs in the thread that met the event,
 *      maybe under row locks or sb_lock: it hands the event to the notifier
 *      and, for a member lost (Fail, DegradedArray, RebuildFailed), sets
 *      @lost and signals, under the leaf lock of the watch. It never calls
 *      into the array.
 * (U2) The spare thread waits for @lost, clears it, then -- holding no lock of
 *      the watch -- asks the array for a spare (raid_spare_take) and starts the
 *      rebuild thread on it (fop_rebuild_start_locked). One rebuild at a time:
 *      while one runs it does nothing, and the rebuild thread kicks it when it
 *      ends, so a RAID6 that lost two members goes on with the second spare.
 *      A mount sets @lost at start, so an array assembled degraded with a spare
 *      is rebuilt too, after a paused rebuild resumed (which comes first).
 * (U3) At unmount the spare thread is stopped and joined before the rebuild
 *      thread is (fop_rebuild_join), so no rebuild starts after that join.
 * (U4) With readd=SECONDS the same thread also wakes every SECONDS and, while
 *      no rebuild runs, opens the device of each member that failed in this
 *      run and whose missed rows are known (raid_info missed_rows), holding no
 *      lock (an NBD connect may wait its timeout). When its first block is the
 *      superblock of this array for that role, the rebuild thread brings it
 *      back with raid_readd, which checks it again. A readd that fails leaves
 *      the member failed with no map, so it is not tried again: a device that
 *      keeps failing is not brought back in a loop. A device that does not
 *      open is said once per absence (a notice), its open's own errors
 *      demoted to debug: a server down for an hour is one line, not one a
 *      wake-up.
 * (U5) Never a member whose connection ended with writes unanswered
 *      (raid_info unfenced, src/raid/rebuild.c (R7)): that its old connection
 *      is dead only its operator can say (jgrfs readd --fenced). Said once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fop_i.h"

int fop_watch_new(struct fop_notify *notify, struct fop_watch **out)
{
	struct fop_watch *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->notify = notify;
	w->lost = true; /* (U2) look once at mount */
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	*out = w;
	return 0;
}

void fop_watch_free(struct fop_watch *w)
{
	if (!w)
		return;
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void fop_watch_kick(struct fop_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->lost = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void fop_watch_event(void *ctx, const struct raid_event *ev)
{
	struct fop_watch *w = ctx;

	if (w->notify)
		fop_notify_event(w->notify, ev);
	/* (U1) a flag and a signal: never a call into the array */
	if (ev->kind == RAID_EV_MEMBER_FAILED || ev->kind == RAID_EV_DEGRADED_ARRAY ||
	    ev->kind == RAID_EV_REBUILD_FAILED)
		fop_watch_kick(w);
}

/* (U2) A lost role and an idle spare, and no rebuild running: start one. */
static void fop_watch_try(struct fop_ctx *c)
{
	struct blk_dev *dev;
	unsigned int role;
	int rc;

	jg_mutex_lock(&c->rebuild_lock);
	if (c->rebuild_running || atomic_load(&c->stopping))
		goto out; /* the rebuild thread kicks us when it ends */
	if (c->rebuild_started) {
		pthread_join(c->rebuild_thread, NULL); /* it finished: reap it */
		c->rebuild_started = false;
	}
	rc = raid_spare_take(c->array, &role, &dev);
	if (rc)
		goto out; /* -ENOENT nothing lost, -ENODEV no spare: nothing to do */
	rc = fop_rebuild_start_locked(c, role, dev, false, 0); /* takes dev */
	if (rc)
		jg_log(JG_LOG_ERR, "fuse", "cannot start the rebuild of role %u onto a spare: %s",
		       role, strerror(-rc));
out:
	jg_mutex_unlock(&c->rebuild_lock);
}

/* (U4) A member that failed in this run back on its device: readd it. */
static void fop_watch_readd(struct fop_ctx *c)
{
	struct raid_info ri;

	raid_info_get(c->array, &ri);
	for (unsigned int i = 0; i < ri.nmembers && i < RAID_MAX_MEMBERS; i++) {
		const struct raid_member_info *m = &ri.members[i];
		uint32_t bit = 1u << m->role;
		struct blk_dev *dev;
		int rc, was;

		if (!m->failed)
			c->readd_told &= ~bit; /* a next absence is said again */
		if (!m->failed || m->missed_rows < 0 || atomic_load(&c->stopping))
			continue;
		if (m->unfenced) { /* (U5) */
			if (!(c->readd_told & bit))
				jg_log(JG_LOG_WARN, "fuse",
				       "readd: role %u (%s): its connection ended with writes its server had not answered, which may still land: not brought back without an operator (jgrfs readd --fenced once that connection is known dead)",
				       m->role, m->name);
			c->readd_told |= bit;
			continue;
		}
		was = jg_log_demote(JG_LOG_DEBUG);
		rc = raid_dev_open(m->name, 0, &dev);
		jg_log_demote(was);
		if (rc) {
			if (!(c->readd_told & bit))
				jg_log(JG_LOG_NOTICE, "fuse",
				       "readd: role %u (%s) cannot be opened (%s); trying again every %u s",
				       m->role, m->name, strerror(-rc), c->opts->readd_s);
			c->readd_told |= bit;
			continue;
		}
		if (!raid_readd_probe(c->array, m->role, dev)) {
			blk_close(dev);
			continue;
		}
		jg_mutex_lock(&c->rebuild_lock);
		if (c->rebuild_running || atomic_load(&c->stopping)) {
			jg_mutex_unlock(&c->rebuild_lock);
			blk_close(dev);
			return; /* one at a time: the next wake-up looks again */
		}
		if (c->rebuild_started) {
			pthread_join(c->rebuild_thread, NULL); /* it finished: reap it */
			c->rebuild_started = false;
		}
		jg_log(JG_LOG_INFO, "fuse", "readd: role %u (%s) answers again: bringing it back",
		       m->role, m->name);
		rc = fop_rebuild_start_locked(c, m->role, dev, true, 0); /* takes dev */
		jg_mutex_unlock(&c->rebuild_lock);
		if (rc)
			jg_log(JG_LOG_ERR, "fuse", "cannot start the readd of role %u: %s", m->role,
			       strerror(-rc));
		return;
	}
}

static void *fop_watch_main(void *arg)
{
	struct fop_ctx *c = arg;
	struct fop_watch *w = c->watch;
	unsigned int every = c->opts->readd_s;
	double next = jg_now_seconds() + every;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		if (every && jg_now_seconds() >= next) {
			pthread_mutex_unlock(&w->lock);
			fop_watch_readd(c); /* (U4) no lock of the watch held */
			pthread_mutex_lock(&w->lock);
			next = jg_now_seconds() + every;
			continue;
		}
		if (!w->lost) {
			if (every) {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += every;
				pthread_cond_timedwait(&w->cond, &w->lock, &ts);
			} else {
				pthread_cond_wait(&w->cond, &w->lock);
			}
			continue;
		}
		w->lost = false;
		pthread_mutex_unlock(&w->lock);
		fop_watch_try(c); /* (U2) no lock of the watch held */
		pthread_mutex_lock(&w->lock);
		w->looks++;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

void fop_watch_start(struct fop_ctx *c)
{
	struct fop_watch *w = c->watch;
	int rc;

	if (!w || c->opts->readonly)
		return;
	rc = pthread_create(&w->thread, NULL, fop_watch_main, c);
	if (rc) {
		jg_log(JG_LOG_ERR, "fuse",
		       "cannot start the spare thread: %s; a lost member waits for jgrfs replace",
		       strerror(rc));
		return;
	}
	w->started = true;
}

void fop_watch_stop(struct fop_ctx *c)
{
	struct fop_watch *w = c->watch;

	if (!w || !w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL); /* (U3) */
	w->started = false;
}
