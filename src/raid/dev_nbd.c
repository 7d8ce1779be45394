// SPDX-License-Identifier: MIT
/*
 * src/raid/dev_nbd.c - a member device on another machine: an NBD export, through
 * libnbd.
 *
 *	nbd://HOST[:PORT]/EXPORT		TCP (default port 10809)
 *	nbd+unix:///EXPORT?socket=PATH		a Unix socket
 *	nbds://..., nbds+unix://...		the same over TLS (libnbd with GnuTLS)
 *
 * The URI is the member's name (blk_dev.name), so at most 63 bytes.
 *
 * Threads. One connection (one libnbd handle) per device, and one poller thread
 * per device that owns its socket: it polls it and runs libnbd's state machine
 * (nbd_aio_notify_read/write), so replies are read whoever waits for them. Any
 * thread submits: it issues its batch's commands on the handle (nbd_aio_pread,
 * _pwrite, _flush; libnbd takes the handle's lock per call, commands of several
 * threads interleave on the wire), wakes the poller (an eventfd: a command
 * libnbd could not send whole needs POLLOUT), and waits for its batch on a
 * condition variable that the completions signal. So a batch's requests are all
 * in flight at once, several batches at once too, and submit_multi() puts a
 * whole stripe row on all its members before waiting once. Why one connection
 * and not a pool: an NBD flush covers the writes completed on its own
 * connection only (unless the server advertises multi-conn), and
 * BLK_OP_FLUSH must cover every write completed before it, from any thread.
 *
 * Lock order: libnbd's handle lock, then a batch's lock. Completion callbacks
 * run with the handle's lock held (libnbd(3) "Callbacks and locking"): they only
 * record a result and signal; the submitting thread issues the next step of a
 * request (the write after its preflush) itself.
 *
 * Flags. BLK_PREFLUSH and BLK_OP_FLUSH are an NBD flush (NBD_CMD_FLUSH) that
 * completes before the request goes on; BLK_FUA is NBD's FUA flag when the
 * server offers it (nbd_can_fua), else a flush after the write. A server that
 * cannot flush is refused at open: nothing in the protocol tells its writes
 * are durable without one, and the journal's commit point depends on it. As
 * dev_uring.c, a flush that finds no write completed since the newest
 * successful flush began is skipped (a round trip and a server fdatasync).
 *
 * Failure. The RAID layer fails a member on a write error of any kind, and on
 * a read error only when it is -EIO (repair.c, raid_read_repair). So every
 * failure of a request here completes it with -EIO (a write's -ENOSPC from
 * the server excepted, kept as said), and the cause is logged: the server's
 * error, a lost connection, or a timeout. Timeout: a command not answered
 * within JGRFS_NBD_TIMEOUT seconds (environment, default 30; 0: wait forever;
 * jgrfs(8)) shuts the connection down (shutdown(2) on a duplicate of its
 * socket, so a hung server cannot hold us); libnbd then completes every
 * command in flight with an error. A connection lost is never reopened: every
 * later request fails at once, the array fails the member, and the volume
 * goes on degraded. Opening waits at most the same timeout for the server.
 *
 * Fencing. Shutting our side down does not reach the server: a write it had
 * read, or still has in its socket buffer, may run later (a stopped server
 * that resumes), over whatever was written to the export since. So the device
 * counts the writes sent and not answered with success (a server's error
 * reply, too, is counted: nothing here tells it from libnbd failing the
 * command when the connection dies), and BLK_CTL_UNFENCED answers 1 once the
 * connection is gone while some were: the array then brings that export back
 * only when its operator says the old connection is dead (rebuild.c (R7)).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "jgrfs/raid.h"

#define NBD_TIMEOUT_DEFAULT 30	      /* seconds; JGRFS_NBD_TIMEOUT */
#define NBD_MAX_CMD_BYTES (32u << 20) /* our largest command: libnbd allows 64 MiB */

struct dev_nbd {
	struct blk_dev dev;   /* first: container_of by cast */
	struct nbd_handle *h; /* thread-safe: libnbd locks it per call */
	int sock;	      /* dup of libnbd's socket: poll and shutdown, ours to close */
	int efd;	      /* eventfd: wakes the poller (issue, stop) */
	pthread_t poller;
	bool can_fua;
	uint32_t max_cmd_bytes; /* a request larger than this goes as several commands */
	unsigned int timeout_s; /* 0: none */
	int stop;		/* atomic: the poller exits */
	int dead;		/* atomic: the connection is gone; set once, logged once */
	uint64_t writes_done;	/* atomic: write completions */
	uint64_t writes_open;	/* atomic: write commands issued, not answered with success */
	uint64_t flushed_upto;	/* atomic: writes_done when the newest good flush began */
	struct blk_stats stats; /* reads, writes, flushes; atomics */
};

/* ------------------------------------------------------------ the connection */

static int raid_nbd_timeout(unsigned int *out)
{
	const char *s = getenv("JGRFS_NBD_TIMEOUT");
	char *end;
	unsigned long v;

	*out = NBD_TIMEOUT_DEFAULT;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 86400) {
		jg_log(JG_LOG_ERR, "raid", "JGRFS_NBD_TIMEOUT=%s: expected seconds, 0 to 86400", s);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

/*
 * The connection is gone (or we give it up: @why). Once: log it and shut the
 * socket down, so libnbd fails what is in flight and everything after.
 */
static void raid_nbd_kill(struct dev_nbd *d, const char *why)
{
	if (__atomic_exchange_n(&d->dead, 1, __ATOMIC_ACQ_REL))
		return;
	jg_log(JG_LOG_ERR, "raid", "dev=%s: %s; the member fails, its connection is not reopened",
	       d->dev.name, why);
	shutdown(d->sock, SHUT_RDWR);
	/* the poller sees the socket end and runs libnbd into its dead state */
	(void)!write(d->efd, &(uint64_t){1}, sizeof(uint64_t));
}

/* The poller: owns the socket, runs libnbd's state machine as the socket allows. */
static void *raid_nbd_poll_thread(void *arg)
{
	struct dev_nbd *d = arg;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		unsigned int dir = nbd_aio_is_dead(d->h) || nbd_aio_is_closed(d->h)
				       ? 0
				       : nbd_aio_get_direction(d->h);
		struct pollfd p[2] = {
		    {.fd = dir ? d->sock : -1,
		     .events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
				       (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0))},
		    {.fd = d->efd, .events = POLLIN},
		};
		uint64_t v;
		int rc = 0;

		if (poll(p, 2, -1) < 0)
			continue; /* EINTR */
		if (p[1].revents & POLLIN)
			(void)!read(d->efd, &v, sizeof(v));
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			rc = nbd_aio_notify_read(d->h);
		if (!rc && (p[0].revents & POLLOUT))
			rc = nbd_aio_notify_write(d->h);
		/* a failure here, or in a thread that issued a command: the handle is dead */
		if ((rc || nbd_aio_is_dead(d->h) || nbd_aio_is_closed(d->h)) &&
		    !__atomic_load_n(&d->dead, __ATOMIC_ACQUIRE)) {
			char why[256];

			snprintf(why, sizeof(why), "connection lost: %s",
				 rc && nbd_get_error() ? nbd_get_error() : "the server went away");
			raid_nbd_kill(d, why);
		}
	}
	return NULL;
}

/* Wake the poller: a command issued may wait for the socket to take it. */
static void raid_nbd_kick(struct dev_nbd *d)
{
	(void)!write(d->efd, &(uint64_t){1}, sizeof(uint64_t));
}

/* ------------------------------------------------------------ a batch */

/*
 * A request's steps, in order; each is issued when the one before completed
 * (NBD does not order commands in flight).
 */
enum nbd_stage { ST_PREFLUSH, ST_TRANSFER, ST_POSTFLUSH, ST_DONE };

struct nbd_batch;

struct nbd_op {
	struct blk_req *req;
	struct nbd_batch *b;
	enum nbd_stage stage;
	uint64_t mark;		  /* a flush: writes_done when it was issued */
	struct timespec deadline; /* of the step in flight (timeout_s != 0) */
	/* guarded by b->lock: */
	unsigned int pending; /* commands of the step not yet retired */
	int err;	      /* first error of the step (positive errno) */
	bool finished;	      /* the step is over; the submitter takes it on */
	int cause;	      /* the error that failed the request, as libnbd gave it */
};

struct nbd_batch {
	pthread_mutex_t lock;	/* protects the ops' guarded fields, nfinished */
	pthread_cond_t cond;	/* signalled when a step finishes */
	unsigned int nfinished; /* ops with finished set */
};

/*
 * Set while this thread is inside nbd_aio_pread/_pwrite/_flush. libnbd 1.14
 * reads the new command's cookie after kicking its state machine; when that
 * kick finds the connection gone, every command is completed at once, in this
 * thread, and one whose completion returns 1 is freed, the new one too: a use
 * after free inside libnbd (valgrind saw it in test_dev_nbd). So a completion
 * that runs inside an issue keeps its command (returns 0) and counts it in
 * raid_nbd_kept; once the issue has returned, raid_nbd_retire_kept() retires
 * them, so none piles up (a send that blocks may also read replies inside it).
 */
static _Thread_local bool raid_nbd_issuing;
static _Thread_local unsigned int raid_nbd_kept;

/* One command of @op's step is over, with @err (positive errno, 0: done). */
static void raid_nbd_cmd_end(struct nbd_op *op, int err)
{
	struct nbd_batch *b = op->b;

	pthread_mutex_lock(&b->lock);
	if (err && !op->err)
		op->err = err;
	if (--op->pending == 0) {
		op->finished = true;
		b->nfinished++;
		pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->lock); /* @op may be gone from here */
}

/* Completion, exactly once per command queued; under the handle's lock. */
static int raid_nbd_cmd_done(void *user_data, int *error)
{
	struct nbd_op *op = user_data;

	/* only a success tells the server ran it: see Fencing above */
	if (!*error && op->stage == ST_TRANSFER && op->req->op == BLK_OP_WRITE)
		__atomic_sub_fetch(&((struct dev_nbd *)op->req->dev)->writes_open, 1,
				   __ATOMIC_ACQ_REL);
	raid_nbd_cmd_end(op, *error); /* @op may be gone from here */
	if (!raid_nbd_issuing)
		return 1; /* retire (free) the command now */
	raid_nbd_kept++;
	return 0;
}

/* Retire the commands kept by completions inside an issue: the only ones
 * libnbd holds completed, every other completion retires its own. */
static void raid_nbd_retire_kept(struct dev_nbd *d)
{
	int64_t c;

	if (!raid_nbd_kept)
		return;
	raid_nbd_kept = 0;
	while ((c = nbd_aio_peek_command_completed(d->h)) > 0)
		(void)nbd_aio_command_completed(d->h, (uint64_t)c); /* its error went to the op */
}

static bool raid_nbd_flush_needed(struct dev_nbd *d, struct nbd_op *op)
{
	op->mark = __atomic_load_n(&d->writes_done, __ATOMIC_ACQUIRE);
	return op->mark != __atomic_load_n(&d->flushed_upto, __ATOMIC_ACQUIRE);
}

static void raid_nbd_flush_done(struct dev_nbd *d, const struct nbd_op *op)
{
	uint64_t cur = __atomic_load_n(&d->flushed_upto, __ATOMIC_ACQUIRE);

	while (op->mark > cur &&
	       !__atomic_compare_exchange_n(&d->flushed_upto, &cur, op->mark, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	__atomic_add_fetch(&d->stats.flushes, 1, __ATOMIC_RELAXED);
}

/* Does @op have step @st? */
static bool raid_nbd_has_stage(struct dev_nbd *d, struct nbd_op *op, enum nbd_stage st)
{
	struct blk_req *r = op->req;

	switch (st) {
	case ST_PREFLUSH:
		return (r->op == BLK_OP_FLUSH || (r->flags & BLK_PREFLUSH)) &&
		       raid_nbd_flush_needed(d, op);
	case ST_TRANSFER:
		return r->op != BLK_OP_FLUSH;
	case ST_POSTFLUSH:
		return r->op == BLK_OP_WRITE && (r->flags & BLK_FUA) && !d->can_fua &&
		       raid_nbd_flush_needed(d, op);
	default:
		return false;
	}
}

/*
 * Issue @op's step (op->stage): its commands in flight, or op finished at once
 * with an error. Called without b->lock. A command libnbd refuses to queue
 * (the handle is dead) never completes: it is counted over here.
 */
static void raid_nbd_issue(struct nbd_op *op)
{
	struct blk_req *r = op->req;
	struct dev_nbd *d = (struct dev_nbd *)r->dev;
	struct nbd_batch *b = op->b;
	nbd_completion_callback cb = {.callback = raid_nbd_cmd_done, .user_data = op};
	size_t len = (size_t)r->nblocks * JG_BLOCK_SIZE;
	unsigned int ncmd = op->stage == ST_TRANSFER
				? (unsigned int)((len + d->max_cmd_bytes - 1) / d->max_cmd_bytes)
				: 1;

	if (d->timeout_s) {
		clock_gettime(CLOCK_MONOTONIC, &op->deadline);
		op->deadline.tv_sec += d->timeout_s;
	}
	pthread_mutex_lock(&b->lock);
	op->pending = ncmd + 1; /* + 1: the step cannot finish while we issue it */
	op->err = 0;
	op->finished = false;
	pthread_mutex_unlock(&b->lock);

	for (size_t off = 0, i = 0; i < ncmd; i++, off += d->max_cmd_bytes) {
		size_t n = len - off < d->max_cmd_bytes ? len - off : d->max_cmd_bytes;
		/* not from a flush's buf, which may be NULL */
		uint8_t *p = op->stage == ST_TRANSFER ? (uint8_t *)r->buf + off : NULL;
		uint64_t at = r->blkno * JG_BLOCK_SIZE + off;
		int64_t c;
		int e;

		raid_nbd_issuing = true;
		if (op->stage == ST_TRANSFER && r->op == BLK_OP_WRITE)
			__atomic_add_fetch(&d->writes_open, 1, __ATOMIC_ACQ_REL);
		if (op->stage != ST_TRANSFER)
			c = nbd_aio_flush(d->h, cb, 0);
		else if (r->op == BLK_OP_READ)
			c = nbd_aio_pread(d->h, p, n, at, cb, 0);
		else
			c = nbd_aio_pwrite(d->h, p, n, at, cb,
					   (r->flags & BLK_FUA) && d->can_fua ? LIBNBD_CMD_FLAG_FUA : 0);
		raid_nbd_issuing = false;
		e = c < 0 ? (nbd_get_errno() ? nbd_get_errno() : EIO) : 0;
		if (c < 0 && op->stage == ST_TRANSFER && r->op == BLK_OP_WRITE)
			__atomic_sub_fetch(&d->writes_open, 1, __ATOMIC_ACQ_REL); /* never sent */
		raid_nbd_retire_kept(d);
		if (e)
			raid_nbd_cmd_end(op, e);
	}
	raid_nbd_kick(d);
	raid_nbd_cmd_end(op, 0); /* the + 1 above */
}

/* The step of @op finished (op->err set): count it and go to the next, or end. */
static void raid_nbd_step_done(struct nbd_op *op, int err)
{
	struct blk_req *r = op->req;
	struct dev_nbd *d = (struct dev_nbd *)r->dev;

	if (err) {
		/* the member's failure; the array fails a member on a read only for -EIO */
		r->result = (r->op == BLK_OP_WRITE && err == ENOSPC) ? -ENOSPC : -EIO;
		op->cause = err;
		op->stage = ST_DONE;
		return;
	}
	if (op->stage == ST_TRANSFER) {
		if (r->op == BLK_OP_WRITE)
			__atomic_add_fetch(&d->writes_done, 1, __ATOMIC_ACQ_REL);
		__atomic_add_fetch(r->op == BLK_OP_WRITE ? &d->stats.writes : &d->stats.reads, 1,
				   __ATOMIC_RELAXED);
	} else {
		raid_nbd_flush_done(d, op);
	}
	do
		op->stage++;
	while (op->stage != ST_DONE && !raid_nbd_has_stage(d, op, op->stage));
}

static bool raid_nbd_ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Run a batch; every request's ->dev is a dev_nbd. */
static int raid_dev_nbd_submit_multi(struct blk_req *reqs, unsigned int n)
{
	struct nbd_batch b = {.nfinished = 0};
	pthread_condattr_t ca;
	struct nbd_op *ops;
	unsigned int ndone = 0;
	int first = 0;

	ops = calloc(n ? n : 1, sizeof(*ops));
	if (!ops)
		return -ENOMEM;
	pthread_mutex_init(&b.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b.cond, &ca);
	pthread_condattr_destroy(&ca);

	for (unsigned int i = 0; i < n; i++) {
		struct blk_req *r = &reqs[i];
		struct blk_dev *dv = r->dev;
		struct nbd_op *op = &ops[i];

		op->req = r;
		op->b = &b;
		r->result = 0;
		if (r->op > BLK_OP_FLUSH ||
		    (r->op != BLK_OP_FLUSH && (r->nblocks == 0 || r->blkno > dv->nblocks ||
					       r->nblocks > dv->nblocks - r->blkno))) {
			r->result = -EINVAL;
			op->stage = ST_DONE;
		} else {
			op->stage = ST_PREFLUSH;
			while (op->stage != ST_DONE &&
			       !raid_nbd_has_stage((struct dev_nbd *)dv, op, op->stage))
				op->stage++;
		}
		if (op->stage == ST_DONE)
			ndone++;
		else
			raid_nbd_issue(op);
	}

	pthread_mutex_lock(&b.lock);
	while (ndone < n) {
		struct timespec now, next = {.tv_sec = 0};
		bool have_deadline = false;

		/* take on the steps that finished: next step, or done */
		for (unsigned int i = 0; b.nfinished && i < n; i++) {
			struct nbd_op *op = &ops[i];
			int err;

			if (!op->finished)
				continue;
			op->finished = false;
			b.nfinished--;
			err = op->err;
			pthread_mutex_unlock(&b.lock);
			raid_nbd_step_done(op, err);
			if (op->stage == ST_DONE)
				ndone++;
			else
				raid_nbd_issue(op);
			pthread_mutex_lock(&b.lock);
		}
		if (ndone == n || b.nfinished)
			continue;
		/* a step past its deadline gives its connection up: its commands then fail */
		clock_gettime(CLOCK_MONOTONIC, &now);
		for (unsigned int i = 0; i < n; i++) {
			struct nbd_op *op = &ops[i];
			struct dev_nbd *d = (struct dev_nbd *)op->req->dev;

			if (op->stage == ST_DONE || !d->timeout_s || op->pending == 0)
				continue;
			if (!raid_nbd_ts_before(&now, &op->deadline)) {
				char why[96];

				snprintf(why, sizeof(why),
					 "no answer within %u s (JGRFS_NBD_TIMEOUT)", d->timeout_s);
				pthread_mutex_unlock(&b.lock);
				raid_nbd_kill(d, why);
				pthread_mutex_lock(&b.lock);
			} else if (!have_deadline || raid_nbd_ts_before(&op->deadline, &next)) {
				next = op->deadline;
				have_deadline = true;
			}
		}
		if (b.nfinished)
			continue;
		if (have_deadline)
			pthread_cond_timedwait(&b.cond, &b.lock, &next);
		else
			pthread_cond_wait(&b.cond, &b.lock);
	}
	pthread_mutex_unlock(&b.lock);

	for (unsigned int i = 0; i < n; i++) {
		struct dev_nbd *d = (struct dev_nbd *)reqs[i].dev;

		if (!first && reqs[i].result)
			first = reqs[i].result;
		if (reqs[i].result)
			jg_log(JG_LOG_ERR, "raid",
			       "dev=%s blkno=%llu nblocks=%u op=%u failed: %s%s", d->dev.name,
			       (unsigned long long)reqs[i].blkno, reqs[i].nblocks, reqs[i].op,
			       strerror(ops[i].cause ? ops[i].cause : -reqs[i].result),
			       __atomic_load_n(&d->dead, __ATOMIC_ACQUIRE) ? " (connection lost)"
									   : "");
	}
	pthread_cond_destroy(&b.cond);
	pthread_mutex_destroy(&b.lock);
	free(ops);
	return first;
}

static int raid_dev_nbd_submit(struct blk_dev *dv, struct blk_req *reqs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		reqs[i].dev = dv;
	return raid_dev_nbd_submit_multi(reqs, n);
}

static int raid_dev_nbd_ctl(struct blk_dev *dv, unsigned int cmd, void *arg)
{
	struct dev_nbd *d = (struct dev_nbd *)dv;
	struct blk_stats *st = arg;

	if (cmd == BLK_CTL_UNFENCED)
		return (__atomic_load_n(&d->dead, __ATOMIC_ACQUIRE) || nbd_aio_is_dead(d->h) ||
			nbd_aio_is_closed(d->h)) &&
		       __atomic_load_n(&d->writes_open, __ATOMIC_ACQUIRE) != 0;
	if (cmd != BLK_CTL_GET_STATS)
		return -ENOTTY;
	memset(st, 0, sizeof(*st));
	st->reads = __atomic_load_n(&d->stats.reads, __ATOMIC_RELAXED);
	st->writes = __atomic_load_n(&d->stats.writes, __ATOMIC_RELAXED);
	st->flushes = __atomic_load_n(&d->stats.flushes, __ATOMIC_RELAXED);
	return 0;
}

static void raid_dev_nbd_close(struct blk_dev *dv)
{
	struct dev_nbd *d = (struct dev_nbd *)dv;

	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	raid_nbd_kick(d);
	pthread_join(d->poller, NULL);
	/* a polite goodbye when the server is there; never wait for it */
	if (!nbd_aio_is_dead(d->h) && !nbd_aio_is_closed(d->h))
		nbd_aio_disconnect(d->h, 0);
	nbd_close(d->h);
	close(d->sock);
	close(d->efd);
	free(d);
}

static const struct blk_dev_ops raid_dev_nbd_ops = {
    .submit = raid_dev_nbd_submit,
    .submit_multi = raid_dev_nbd_submit_multi,
    .ctl = raid_dev_nbd_ctl,
    .close = raid_dev_nbd_close,
};

/* ------------------------------------------------------------ open */

/* Connect @h to @uri within @timeout_s seconds (0: no limit). */
static int raid_nbd_connect(struct nbd_handle *h, const char *uri, unsigned int timeout_s)
{
	double end = jg_now_seconds() + timeout_s;

	if (nbd_aio_connect_uri(h, uri) < 0)
		goto fail;
	while (!nbd_aio_is_ready(h)) {
		double left = end - jg_now_seconds();

		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h))
			goto fail;
		if (timeout_s && left <= 0) {
			jg_log(JG_LOG_ERR, "raid",
			       "dev=%s: no answer from the server within %u s "
			       "(JGRFS_NBD_TIMEOUT)",
			       uri, timeout_s);
			return -ETIMEDOUT;
		}
		if (nbd_poll(h, timeout_s ? (int)(left * 1000) + 1 : -1) < 0)
			goto fail;
	}
	return 0;
fail:
	jg_log(JG_LOG_ERR, "raid", "dev=%s: cannot connect: %s", uri,
	       nbd_get_error() ? nbd_get_error() : "unknown error");
	return nbd_get_errno() ? -nbd_get_errno() : -EIO;
}

/* The export as a member: its size, block size and flags. */
static int raid_nbd_check(struct dev_nbd *d, uint64_t create_blocks, uint64_t *bytes)
{
	int64_t size = nbd_get_size(d->h);
	int64_t min = nbd_get_block_size(d->h, LIBNBD_SIZE_MINIMUM);
	int64_t max = nbd_get_block_size(d->h, LIBNBD_SIZE_MAXIMUM);

	if (size < 0 || min < 0 || max < 0) {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: %s", d->dev.name, nbd_get_error());
		return -EIO;
	}
	if (size % JG_BLOCK_SIZE || size < JG_BLOCK_SIZE) {
		jg_log(JG_LOG_ERR, "raid",
		       "dev=%s: export size %lld bytes is not a multiple of "
		       "%u (at least one block)",
		       d->dev.name, (long long)size, JG_BLOCK_SIZE);
		return -EINVAL;
	}
	if (create_blocks && (uint64_t)size / JG_BLOCK_SIZE < create_blocks) {
		jg_log(JG_LOG_ERR, "raid",
		       "dev=%s: export holds %llu blocks, %llu wanted; an NBD "
		       "export cannot be created or grown from here: size it on the server",
		       d->dev.name, (unsigned long long)((uint64_t)size / JG_BLOCK_SIZE),
		       (unsigned long long)create_blocks);
		return -ENOSPC;
	}
	if (min > JG_BLOCK_SIZE) {
		jg_log(JG_LOG_ERR, "raid",
		       "dev=%s: the server's minimum block size %lld is above "
		       "%u",
		       d->dev.name, (long long)min, JG_BLOCK_SIZE);
		return -EINVAL;
	}
	if (max && max < JG_BLOCK_SIZE) {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: the server's maximum request %lld is below %u",
		       d->dev.name, (long long)max, JG_BLOCK_SIZE);
		return -EINVAL;
	}
	d->max_cmd_bytes = NBD_MAX_CMD_BYTES;
	if (max && (uint64_t)max < d->max_cmd_bytes)
		d->max_cmd_bytes = (uint32_t)max / JG_BLOCK_SIZE * JG_BLOCK_SIZE;
	if (nbd_is_read_only(d->h) != 0) {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: the export is read-only", d->dev.name);
		return -EROFS;
	}
	if (nbd_can_flush(d->h) != 1) {
		jg_log(JG_LOG_ERR, "raid",
		       "dev=%s: the server cannot flush, so nothing tells when "
		       "a write is durable; refused (the journal's commit depends on it)",
		       d->dev.name);
		return -EOPNOTSUPP;
	}
	d->can_fua = nbd_can_fua(d->h) == 1;
	*bytes = (uint64_t)size;
	return 0;
}

bool raid_dev_is_nbd(const char *path)
{
	static const char *const schemes[] = {"nbd://", "nbd+unix://", "nbds://", "nbds+unix://"};

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (!strncmp(path, schemes[i], strlen(schemes[i])))
			return true;
	return false;
}

int raid_dev_nbd_open(const char *uri, uint64_t create_blocks, struct blk_dev **out)
{
	struct dev_nbd *d;
	uint64_t bytes = 0;
	int rc, fd;

	/*
	 * The array, its status and `jgrfs umount` know a member by its name, 63
	 * bytes at most (blk_dev.name, fop_status_member.name); a URI cut short
	 * would name another export or none: refused, not cut.
	 */
	if (strlen(uri) >= sizeof(d->dev.name)) {
		jg_log(JG_LOG_ERR, "raid",
		       "dev=%s: URI longer than %zu bytes, too long to name a "
		       "member (a shorter host name or socket path will do)",
		       uri, sizeof(d->dev.name) - 1);
		return -ENAMETOOLONG;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->sock = d->efd = -1;
	snprintf(d->dev.name, sizeof(d->dev.name), "%s", uri); /* whole: checked above */
	rc = raid_nbd_timeout(&d->timeout_s);
	if (rc)
		goto fail;
	d->h = nbd_create();
	if (!d->h) {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: %s", uri, nbd_get_error());
		rc = -ENOMEM;
		goto fail;
	}
	nbd_set_handle_name(d->h, "jgrfs");
	rc = raid_nbd_connect(d->h, uri, d->timeout_s);
	if (rc)
		goto fail;
	rc = raid_nbd_check(d, create_blocks, &bytes);
	if (rc)
		goto fail;
	fd = nbd_aio_get_fd(d->h);
	if (fd < 0) {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: %s", uri, nbd_get_error());
		rc = -EIO;
		goto fail;
	}
	d->sock = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d->sock >= 0)
		d->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->sock < 0 || d->efd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = -pthread_create(&d->poller, NULL, raid_nbd_poll_thread, d);
	if (rc)
		goto fail;
	d->dev.ops = &raid_dev_nbd_ops;
	d->dev.nblocks = bytes / JG_BLOCK_SIZE;
	jg_log(JG_LOG_DEBUG, "raid", "dev=%s: %llu blocks, fua=%d, timeout=%u s", uri,
	       (unsigned long long)d->dev.nblocks, d->can_fua, d->timeout_s);
	*out = &d->dev;
	return 0;
fail:
	nbd_close(d->h);
	if (d->sock >= 0)
		close(d->sock);
	if (d->efd >= 0)
		close(d->efd);
	free(d);
	return rc;
}

int raid_dev_open(const char *path, uint64_t create_blocks, struct blk_dev **out)
{
	if (raid_dev_is_nbd(path))
		return raid_dev_nbd_open(path, create_blocks, out);
	return raid_dev_uring_open(path, create_blocks, out);
}
