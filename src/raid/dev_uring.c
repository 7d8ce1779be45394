// SPDX-License-Identifier: MIT
/*
 * src/raid/dev_uring.c - a member device over a file or block device: O_DIRECT,
 * io_uring.
 *
 * A ring has one owner thread (liburing io_uring_setup_flags.7): every thread that
 * submits gets its own ring, made on first use and freed when the thread exits,
 * shared by all devices that thread submits to. A batch is one io_uring_submit()
 * (more only when it exceeds the ring), then one wait per completion: no syscall
 * per 4 KiB block.
 *
 * A short transfer (possible on files) is continued for the remainder; -EAGAIN
 * and -EINTR completions are resubmitted. BLK_PREFLUSH is an fdatasync before the
 * request; BLK_FUA a write with RWF_DSYNC (pwritev2(2)): durable when it
 * completes, in one operation -- REQ_FUA on a block device, the write and an
 * fdatasync of its range on a file. Such a write is not counted as a flush of
 * the writes before it: on a block device it is not one.
 *
 * A flush makes durable the writes completed before it began. One that finds no
 * write completed since the newest successful flush began has nothing to do and
 * is skipped: an array flush costs nothing on the members the commit did not
 * write (on member files sharing one disk, each fdatasync is a flush of that
 * disk). Counted per device with atomics: any thread may submit.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <liburing.h>
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#include "jgrfs/raid.h"

#define URING_DEPTH 256u

struct dev_uring {
	struct blk_dev dev;	/* first: container_of by cast */
	int fd;
	bool is_blockdev;
	struct blk_id id;	/* BLK_CTL_GET_ID, from fstat at open */
	uint64_t writes_done;	/* write completions */
	uint64_t flushed_upto;	/* writes_done when the newest successful flush began */
	struct blk_stats stats;	/* reads, writes, flushes (fdatasyncs issued); atomics */
};

struct uring_thread {		/* one per submitting thread */
	struct io_uring ring;
};

static pthread_key_t raid_uring_key;
static pthread_once_t raid_uring_once = PTHREAD_ONCE_INIT;

static void raid_uring_thread_free(void *p)
{
	struct uring_thread *t = p;

	io_uring_queue_exit(&t->ring);
	free(t);
}

static void raid_uring_key_make(void)
{
	pthread_key_create(&raid_uring_key, raid_uring_thread_free);
}

static struct uring_thread *raid_uring_thread_get(int *err)
{
	struct uring_thread *t;

	pthread_once(&raid_uring_once, raid_uring_key_make);
	t = pthread_getspecific(raid_uring_key);
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = io_uring_queue_init(URING_DEPTH, &t->ring, 0);
	if (*err) {
		jg_log(JG_LOG_ERR, "raid", "io_uring_queue_init failed: %s", strerror(-*err));
		free(t);
		return NULL;
	}
	pthread_setspecific(raid_uring_key, t);
	return t;
}

/* Per-request progress while a batch runs. */
struct uring_op {
	struct blk_req *req;
	size_t done;		/* bytes transferred so far */
	enum { OP_PREFLUSH, OP_TRANSFER, OP_DONE } stage;
	uint64_t mark;		/* a flush: writes_done when it was queued */
};

/* Does a flush queued now have a completed write to make durable? Sets op->mark. */
static bool raid_uring_flush_needed(struct dev_uring *u, struct uring_op *op)
{
	op->mark = __atomic_load_n(&u->writes_done, __ATOMIC_ACQUIRE);
	return op->mark != __atomic_load_n(&u->flushed_upto, __ATOMIC_ACQUIRE);
}

/* A flush of @op succeeded: the writes counted in its mark are durable. */
static void raid_uring_flush_done(struct dev_uring *u, const struct uring_op *op)
{
	uint64_t cur = __atomic_load_n(&u->flushed_upto, __ATOMIC_ACQUIRE);

	while (op->mark > cur && !__atomic_compare_exchange_n(&u->flushed_upto, &cur, op->mark, false,
							       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	__atomic_add_fetch(&u->stats.flushes, 1, __ATOMIC_RELAXED);
}

static size_t raid_uring_len(const struct blk_req *r)
{
	return (size_t)r->nblocks * JG_BLOCK_SIZE;
}

/* Queue the next step of @op; returns false when it is finished. */
static bool raid_uring_prep(struct io_uring *ring, struct uring_op *op)
{
	struct dev_uring *u = (struct dev_uring *)op->req->dev;
	struct blk_req *r = op->req;
	struct io_uring_sqe *sqe;

	/* skip the steps this request does not have */
	if (op->stage == OP_PREFLUSH && (!(r->op == BLK_OP_FLUSH || (r->flags & BLK_PREFLUSH)) ||
			       !raid_uring_flush_needed(u, op)))
		op->stage = OP_TRANSFER;
	if (op->stage == OP_TRANSFER && (r->op == BLK_OP_FLUSH || op->done == raid_uring_len(r)))
		op->stage = OP_DONE;
	if (op->stage == OP_DONE)
		return false;
	sqe = io_uring_get_sqe(ring);
	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
	}
	if (op->stage == OP_TRANSFER) {
		uint8_t *p = (uint8_t *)r->buf + op->done;
		unsigned int left = (unsigned int)(raid_uring_len(r) - op->done);
		uint64_t off = r->blkno * JG_BLOCK_SIZE + op->done;

		if (r->op == BLK_OP_READ) {
			io_uring_prep_read(sqe, u->fd, p, left, off);
		} else {
			io_uring_prep_write(sqe, u->fd, p, left, off);
			if (r->flags & BLK_FUA)
				sqe->rw_flags = RWF_DSYNC;
		}
	} else {
		io_uring_prep_fsync(sqe, u->fd, IORING_FSYNC_DATASYNC);
	}
	io_uring_sqe_set_data(sqe, op);
	return true;
}

/* Run a batch; every request's ->dev is a dev_uring. */
static int raid_dev_uring_submit_multi(struct blk_req *reqs, unsigned int n)
{
	struct uring_thread *t;
	struct uring_op *ops;
	unsigned int inflight = 0, next = 0;
	int rc = 0, first = 0;

	t = raid_uring_thread_get(&rc);
	if (!t)
		return rc;
	ops = calloc(n ? n : 1, sizeof(*ops));
	if (!ops)
		return -ENOMEM;

	for (unsigned int i = 0; i < n; i++) {
		struct blk_req *r = &reqs[i];

		struct blk_dev *d = r->dev;

		ops[i].req = r;
		r->result = 0;
		if (r->op > BLK_OP_FLUSH ||
		    (r->op != BLK_OP_FLUSH &&
		     (r->nblocks == 0 || r->blkno > d->nblocks || r->nblocks > d->nblocks - r->blkno))) {
			r->result = -EINVAL;
			ops[i].stage = OP_DONE;
		}
	}

	while (next < n || inflight) {
		struct io_uring_cqe *cqe;
		struct uring_op *op;

		/* fill the ring with first steps of requests not started yet */
		while (next < n && inflight < URING_DEPTH) {
			if (ops[next].stage != OP_DONE && raid_uring_prep(&t->ring, &ops[next]))
				inflight++;
			next++;
		}
		if (!inflight)
			continue;	/* the rest were invalid: nothing to wait for */
		rc = io_uring_submit_and_wait(&t->ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN) {
			jg_log(JG_LOG_ERR, "raid", "io_uring_submit failed: %s", strerror(-rc));
			break;
		}
		rc = 0;
		while (io_uring_peek_cqe(&t->ring, &cqe) == 0) {
			op = io_uring_cqe_get_data(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(&t->ring, cqe);
			inflight--;
			if (res == -EAGAIN || res == -EINTR) {
				/* retry the same step */
			} else if (res < 0) {
				op->req->result = res;
				op->stage = OP_DONE;
			} else if (op->stage == OP_TRANSFER) {
				if (res == 0) {	/* read past the end of a file */
					op->req->result = -EIO;
					op->stage = OP_DONE;
				} else {
					/* valgrind cannot see the kernel fill the buffer */
					if (op->req->op == BLK_OP_READ)
						VALGRIND_MAKE_MEM_DEFINED((uint8_t *)op->req->buf + op->done,
									  (size_t)res);
					op->done += (size_t)res;
					if (op->done == raid_uring_len(op->req)) {
						struct dev_uring *u = (struct dev_uring *)op->req->dev;

						if (op->req->op == BLK_OP_WRITE)
							__atomic_add_fetch(&u->writes_done, 1,
									   __ATOMIC_ACQ_REL);
						__atomic_add_fetch(op->req->op == BLK_OP_WRITE ?
								   &u->stats.writes : &u->stats.reads,
								   1, __ATOMIC_RELAXED);
					}
				}
			} else {
				/* the preflush (or the flush a BLK_OP_FLUSH is) */
				raid_uring_flush_done((struct dev_uring *)op->req->dev, op);
				op->stage = OP_TRANSFER;
			}
			if (op->stage != OP_DONE && raid_uring_prep(&t->ring, op))
				inflight++;
		}
	}
	if (rc) {
		/* the ring failed: drain what is in flight before the buffers go */
		while (inflight) {
			struct io_uring_cqe *cqe;

			if (io_uring_wait_cqe(&t->ring, &cqe))
				break;
			io_uring_cqe_seen(&t->ring, cqe);
			inflight--;
		}
		first = rc;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (!first && reqs[i].result)
			first = reqs[i].result;
		if (reqs[i].result)
			jg_log(JG_LOG_ERR, "raid", "dev=%s blkno=%llu nblocks=%u op=%u failed: %s",
			       reqs[i].dev->name, (unsigned long long)reqs[i].blkno, reqs[i].nblocks,
			       reqs[i].op, strerror(-reqs[i].result));
	}
	free(ops);
	return first;
}

static int raid_dev_uring_submit(struct blk_dev *d, struct blk_req *reqs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		reqs[i].dev = d;
	return raid_dev_uring_submit_multi(reqs, n);
}

static void raid_dev_uring_close(struct blk_dev *d)
{
	struct dev_uring *u = (struct dev_uring *)d;

	close(u->fd);
	free(u);
}

/*
 * (DU1) Every open of a member marks its open file description in use with a
 * shared OFD lock. The kernel drops such a lock only when the description's
 * last reference goes, and each io_uring request in flight holds one: after a
 * kill -9 the lock outlives the process until its writes have ended (the ring
 * is torn down in the background; liburing issue 329). BLK_CTL_DRAIN waits for
 * every other description's mark to go (a write lock it can take), then keeps
 * its own as shared. OFD and flock locks do not interact: the CLI's flock on
 * the members is another matter (tools/cli/cli.c).
 */
static int raid_dev_uring_mark(int fd, short type)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};

	return fcntl(fd, F_OFD_SETLK, &fl) ? -errno : 0;
}

static int raid_dev_uring_drain(struct dev_uring *u)
{
	const unsigned int step_ms = 10, limit_ms = 120000;
	int rc;

	for (unsigned int waited = 0;; waited += step_ms) {
		rc = raid_dev_uring_mark(u->fd, F_WRLCK);
		if (rc != -EAGAIN && rc != -EACCES)
			break;
		if (waited == 500)
			jg_log(JG_LOG_WARN, "raid",
			       "dev=%s: waiting for the I/O of an earlier user to end (a process "
			       "killed with writes in flight)", u->dev.name);
		if (waited >= limit_ms) {
			jg_log(JG_LOG_ERR, "raid", "dev=%s: still in use by another open after %u s",
			       u->dev.name, limit_ms / 1000);
			return -ETIMEDOUT;
		}
		usleep(step_ms * 1000);
	}
	if (rc == -EINVAL || rc == -ENOLCK)
		return 0; /* no locks here: nothing to wait for */
	return rc ?: raid_dev_uring_mark(u->fd, F_RDLCK);
}

static int raid_dev_uring_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	struct dev_uring *u = (struct dev_uring *)d;
	struct blk_stats *st = arg;

	if (cmd == BLK_CTL_GET_ID) {
		*(struct blk_id *)arg = u->id;
		return 0;
	}
	if (cmd == BLK_CTL_DRAIN)
		return raid_dev_uring_drain(u);
	if (cmd != BLK_CTL_GET_STATS)
		return -ENOTTY;
	memset(st, 0, sizeof(*st));
	st->reads = __atomic_load_n(&u->stats.reads, __ATOMIC_RELAXED);
	st->writes = __atomic_load_n(&u->stats.writes, __ATOMIC_RELAXED);
	st->flushes = __atomic_load_n(&u->stats.flushes, __ATOMIC_RELAXED);
	return 0;
}

static const struct blk_dev_ops raid_dev_uring_ops = {
	.submit = raid_dev_uring_submit,
	.submit_multi = raid_dev_uring_submit_multi,
	.ctl = raid_dev_uring_ctl,
	.close = raid_dev_uring_close,
};

int raid_dev_uring_open(const char *path, uint64_t create_blocks, struct blk_dev **out)
{
	struct dev_uring *u;
	struct stat st;
	uint64_t bytes;
	int fd, flags = O_RDWR | O_DIRECT | O_CLOEXEC;

	if (create_blocks)
		flags |= O_CREAT;
	fd = open(path, flags, 0600);
	if (fd < 0 && errno == EINVAL) {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: the filesystem holding it refuses O_DIRECT; "
		       "put member files on ext4, xfs or btrfs, or use block devices", path);
		return -EINVAL;
	}
	if (fd < 0) {
		int err = -errno;

		jg_log(JG_LOG_ERR, "raid", "dev=%s: cannot open: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &bytes)) {
			int err = -errno;

			close(fd);
			return err;
		}
	} else if (S_ISREG(st.st_mode)) {
		bytes = (uint64_t)st.st_size;
		if (create_blocks && bytes < create_blocks * JG_BLOCK_SIZE) {
			if (ftruncate(fd, (off_t)(create_blocks * JG_BLOCK_SIZE))) {
				int err = -errno;

				jg_log(JG_LOG_ERR, "raid", "dev=%s: cannot size to %llu blocks: %s",
				       path, (unsigned long long)create_blocks, strerror(errno));
				close(fd);
				return err;
			}
			bytes = create_blocks * JG_BLOCK_SIZE;
		}
	} else {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: neither a regular file nor a block device", path);
		close(fd);
		return -EINVAL;
	}
	if (bytes < JG_BLOCK_SIZE) {
		jg_log(JG_LOG_ERR, "raid", "dev=%s: too small (%llu bytes)", path,
		       (unsigned long long)bytes);
		close(fd);
		return -EINVAL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		close(fd);
		return -ENOMEM;
	}
	u->fd = fd;
	(void)raid_dev_uring_mark(fd, F_RDLCK); /* (DU1); shared marks never conflict */
	u->is_blockdev = S_ISBLK(st.st_mode);
	if (u->is_blockdev)
		u->id = (struct blk_id){.kind = BLK_ID_BDEV, .a = (uint64_t)st.st_rdev};
	else
		u->id = (struct blk_id){.kind = BLK_ID_FILE, .a = (uint64_t)st.st_dev,
					.b = (uint64_t)st.st_ino};
	u->dev.ops = &raid_dev_uring_ops;
	u->dev.nblocks = bytes / JG_BLOCK_SIZE;
	snprintf(u->dev.name, sizeof(u->dev.name), "%s", path);
	*out = &u->dev;
	return 0;
}
