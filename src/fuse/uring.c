/* SPDX-License-Identifier: MIT */
/*
 * src/fuse/uring.c - FUSE requests over io_uring (the kernel's fuse-io-uring,
 * Linux 6.14+, module parameter fuse.enable_uring), beside /dev/fuse.
 *
 * libfuse 3.14 has no such transport; two of its hooks carry one. The
 * session's custom io (fuse_session_custom_io) sees every read of /dev/fuse
 * and every reply: it notes whether the kernel's FUSE_INIT offers
 * FUSE_OVER_IO_URING, adds the flag to the INIT reply when the rings are set
 * up, and sends a reply to a ring request through the ring. A thread per
 * kernel queue (one per possible CPU: the kernel queues a request on the
 * queue of the CPU its caller runs on) waits on its own io_uring and hands
 * each request to fuse_session_process_buf() as if read from /dev/fuse.
 *
 * The kernel keeps FUSE_INIT, forgets, interrupts and notifications on
 * /dev/fuse, so the session loop goes on reading it; a kernel that refuses the
 * ring (REGISTER fails) turns the connection back to /dev/fuse itself.
 *
 * The protocol's structures are defined here from the kernel's uapi
 * (include/uapi/linux/fuse.h, 7.42): the installed headers predate them.
 */
#include <errno.h>
#include <sched.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fop_i.h"

#define FUR_OVER_IO_URING (1ULL << 41) /* FUSE_OVER_IO_URING: bit 9 of flags2 */
#define FUR_INIT_EXT (1u << 30)	       /* FUSE_INIT_EXT: flags2 is read */
#define FUR_CMD_REGISTER 1u	       /* FUSE_IO_URING_CMD_REGISTER */
#define FUR_CMD_COMMIT_AND_FETCH 2u    /* FUSE_IO_URING_CMD_COMMIT_AND_FETCH */
#define FUR_IOV_SEGS 2		       /* headers, payload */

/* struct fuse_uring_ent_in_out */
struct fur_ent_in_out {
	uint64_t flags;
	uint64_t commit_id; /* the request's: named again by the commit */
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

/* struct fuse_uring_req_header: the first of an entry's two buffers */
struct fur_req_header {
	char in_out[128]; /* struct fuse_in_header in, struct fuse_out_header out */
	char op_in[128];  /* the opcode's fixed argument (fuse_write_in, ...) */
	struct fur_ent_in_out ent_in_out;
};

/* struct fuse_uring_cmd_req: in the SQE's command area (128-byte SQEs) */
struct fur_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

_Static_assert(sizeof(struct fur_req_header) == 288, "fuse_uring_req_header");
_Static_assert(sizeof(struct fur_cmd_req) == 24, "fuse_uring_cmd_req");

#define FUR_DEPTH 8 /* entries per queue: requests in flight on one CPU's queue */
#define FUR_PRE 256 /* before the payload: room for the in header and op_in */
#define FUR_STOP 1  /* user_data of the NOP that stops a queue's thread */

struct fop_uring;
struct fur_queue;

struct fur_ent {
	struct fur_queue *q;
	struct fur_req_header *hdr;
	char *buf;			/* FUR_PRE bytes, then the payload the kernel fills */
	_Atomic uint64_t unique;	/* the request being served; 0 while fetching */
	struct iovec iov[FUR_IOV_SEGS]; /* REGISTER's: the two buffers */
};

struct fur_queue {
	struct fop_uring *u;
	unsigned int qid;
	struct io_uring ring;
	bool ring_up, thread_up;
	pthread_mutex_t sq_lock; /* the submission queue: a reply may come from any thread */
	pthread_t thread;
	struct fur_ent ent[FUR_DEPTH];
};

struct fop_uring {
	struct fuse_session *se;
	int fd; /* /dev/fuse */
	unsigned int nq;
	struct fur_queue *q;
	size_t payload;		      /* each entry's payload buffer */
	_Atomic uint64_t init_unique; /* the INIT request's, once read */
	atomic_bool offered;	      /* that INIT offered FUSE_OVER_IO_URING */
	atomic_bool running;	      /* the INIT reply carried the flag: rings serve */
	atomic_bool refused;	      /* a command failed: said once */
};

static __thread struct fur_ent *fur_cur; /* the ring request this thread serves */

/*
 * The session's transport. libfuse 3.14 hands its custom io the session's
 * userdata (the handlers' context), not one of its own: one session per
 * process, so one pointer here.
 */
static struct fop_uring *fur_the;

/* The kernel's queue count: nr_cpu_ids, the possible CPUs ("0-1" -> 2). */
static unsigned int fur_nr_queues(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	unsigned int lo = 0, hi = 0, n = 0;
	char sep;

	if (f) {
		int k = fscanf(f, "%u%c%u", &lo, &sep, &hi);

		n = k == 3 && sep == '-' ? hi + 1 : (k >= 1 ? lo + 1 : 0);
		fclose(f);
	}
	return n;
}

/* ------------------------------------------------------------- requests */

/* Submit one command for @e: REGISTER its buffers, or commit its reply and fetch. */
static int fur_submit_cmd(struct fur_ent *e, uint32_t cmd_op, uint64_t commit_id)
{
	struct fur_queue *q = e->q;
	struct io_uring_sqe *sqe;
	struct fur_cmd_req *req;
	int rc;

	pthread_mutex_lock(&q->sq_lock);
	sqe = io_uring_get_sqe(&q->ring);
	if (!sqe) {
		pthread_mutex_unlock(&q->sq_lock);
		return -EBUSY; /* cannot happen: the ring has room for every entry */
	}
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->u->fd;
	sqe->cmd_op = cmd_op;
	if (cmd_op == FUR_CMD_REGISTER) {
		/* read at issue; kept in the entry all the same, should the issue be deferred */
		e->iov[0] = (struct iovec){.iov_base = e->hdr, .iov_len = sizeof(*e->hdr)};
		e->iov[1] = (struct iovec){.iov_base = e->buf + FUR_PRE, .iov_len = q->u->payload};
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = FUR_IOV_SEGS;
	}
	req = (struct fur_cmd_req *)sqe->cmd;
	req->commit_id = commit_id;
	req->qid = (uint16_t)q->qid;
	io_uring_sqe_set_data(sqe, e);
	rc = io_uring_submit(&q->ring);
	pthread_mutex_unlock(&q->sq_lock);
	return rc < 0 ? rc : 0;
}

static ssize_t fur_reply(struct fur_ent *e, const struct iovec *iov, int count);

/*
 * A request arrived in @e: the in header and the opcode's fixed argument in
 * the header buffer, the rest (names, data) in the payload. libfuse 3.14
 * reads them contiguous, as /dev/fuse gives them: the two headers go just
 * before the payload, which stays where it is (a write's data is not copied).
 */
static void fur_dispatch(struct fur_ent *e)
{
	struct fuse_in_header in;
	char *payload = e->buf + FUR_PRE;
	uint32_t plen = e->hdr->ent_in_out.payload_sz;
	struct fuse_buf fb = {0};
	size_t oplen;

	memcpy(&in, e->hdr->in_out, sizeof(in));
	/* in.len counts all three; what is not payload is the fixed argument */
	if (in.len < sizeof(in) + plen || in.len - sizeof(in) - plen > sizeof(e->hdr->op_in) ||
	    plen > e->q->u->payload) {
		struct fuse_out_header oh = {.len = sizeof(oh), .error = -EIO, .unique = in.unique};
		struct iovec iov = {.iov_base = &oh, .iov_len = sizeof(oh)};

		jg_log(JG_LOG_ERR, "fuse", "io_uring: request %llu opcode %u: len %u, payload %u",
		       (unsigned long long)in.unique, in.opcode, in.len, plen);
		fur_reply(e, &iov, 1); /* the caller gets EIO, the entry fetches again */
		return;
	}
	oplen = in.len - sizeof(in) - plen;
#ifdef FUR_TRACE
	jg_log(JG_LOG_DEBUG, "fuse",
	       "io_uring: queue %u: unique %llu opcode %u len %u op_in %zu payload %u", e->q->qid,
	       (unsigned long long)in.unique, in.opcode, in.len, oplen, plen);
#endif
	memcpy(payload - oplen, e->hdr->op_in, oplen);
	memcpy(payload - oplen - sizeof(in), &in, sizeof(in));
	fb.mem = payload - oplen - sizeof(in);
	fb.size = in.len;
	atomic_store(&e->unique, in.unique);
	fur_cur = e;
	fuse_session_process_buf(e->q->u->se, &fb);
	fur_cur = NULL;
}

/* The entry serving request @unique, or NULL: the reply goes to /dev/fuse. */
static struct fur_ent *fur_find(struct fop_uring *u, uint64_t unique)
{
	if (fur_cur && atomic_load(&fur_cur->unique) == unique)
		return fur_cur;
	for (unsigned int i = 0; i < u->nq; i++)
		for (unsigned int k = 0; k < FUR_DEPTH; k++)
			if (atomic_load(&u->q[i].ent[k].unique) == unique)
				return &u->q[i].ent[k];
	return NULL;
}

/*
 * The reply to a ring request: the out header in the header buffer, the
 * arguments after it in the payload (where the request's were: it is
 * answered), then COMMIT_AND_FETCH sends it and waits for the next.
 */
static ssize_t fur_reply(struct fur_ent *e, const struct iovec *iov, int count)
{
	struct fuse_out_header *oh = iov[0].iov_base;
	char *payload = e->buf + FUR_PRE;
	size_t len = 0;
	uint64_t unique = oh->unique;
	int rc;

	for (int i = 1; i < count; i++) {
		if (len + iov[i].iov_len > e->q->u->payload) {
			errno = EINVAL; /* libfuse logs it; the kernel never asks this much */
			return -1;
		}
		memmove(payload + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	memset(e->hdr->in_out, 0, sizeof(e->hdr->in_out));
	memcpy(e->hdr->in_out, oh, sizeof(*oh));
	e->hdr->ent_in_out.payload_sz = (uint32_t)len;
	atomic_store(&e->unique, 0);
	rc = fur_submit_cmd(e, FUR_CMD_COMMIT_AND_FETCH, unique);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return (ssize_t)(sizeof(*oh) + len);
}

/* Stop the queue's thread: after its request in hand, if any. */
static void fur_queue_wake(struct fur_queue *q)
{
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&q->sq_lock);
	sqe = io_uring_get_sqe(&q->ring);
	if (sqe) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, FUR_STOP);
		io_uring_submit(&q->ring);
	}
	pthread_mutex_unlock(&q->sq_lock);
}

/*
 * One queue: register its entries, then serve what arrives. A REGISTER the
 * kernel refuses completes at once with the error (and the kernel turns the
 * connection back to /dev/fuse); one it takes completes when a request comes.
 */
static void *fur_queue_main(void *arg)
{
	struct fur_queue *q = arg;
	unsigned int live = 0;
	cpu_set_t set;

	/*
	 * On the CPU whose callers it serves, as libfuse 3.17 does (measured
	 * here: creates/s up by a fifth to a half under load). A CPU outside
	 * our cpuset refuses it; the thread then runs anywhere.
	 */
	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);

	for (unsigned int k = 0; k < FUR_DEPTH; k++) {
		int rc = fur_submit_cmd(&q->ent[k], FUR_CMD_REGISTER, 0);

		if (rc) {
			jg_log(JG_LOG_WARN, "fuse", "io_uring: queue %u: submit: %s", q->qid,
			       strerror(-rc));
			break;
		}
		live++;
	}
	while (live) {
		struct io_uring_cqe *cqe;
		struct fur_ent *e;
		int res, rc;

		rc = io_uring_wait_cqe(&q->ring, &cqe);
		if (rc == -EINTR)
			continue;
		if (rc)
			break;
		e = io_uring_cqe_get_data(cqe);
		res = cqe->res;
		io_uring_cqe_seen(&q->ring, cqe);
		if ((uintptr_t)e == FUR_STOP)
			break;
		if (res < 0) {
			/* refused, or the connection ended (-ENOTCONN): the entry is done */
			if (res != -ENOTCONN && res != -ECONNABORTED && res != -ECANCELED &&
			    !atomic_exchange(&q->u->refused, true))
				jg_log(JG_LOG_WARN, "fuse",
				       "io_uring: queue %u: the kernel refused the ring: %s "
				       "(requests stay on /dev/fuse)",
				       q->qid, strerror(-res));
			live--;
			continue;
		}
		fur_dispatch(e);
	}
	return NULL;
}

/* ------------------------------------------------------------ custom io */

/* Reads /dev/fuse as libfuse would, noting what the kernel's INIT offers. */
static ssize_t fur_read(int fd, void *buf, size_t len, void *ud)
{
	struct fop_uring *u = fur_the;
	ssize_t n = read(fd, buf, len);

	(void)ud;
	const struct fuse_in_header *in = buf;
	const struct fuse_init_in *ii = (const void *)(in + 1);

	if (n >= (ssize_t)(sizeof(*in) + sizeof(*ii)) && in->opcode == FUSE_INIT) {
		uint64_t flags = ii->flags;

		if (flags & FUR_INIT_EXT)
			flags |= (uint64_t)ii->flags2 << 32;
		atomic_store(&u->offered, !!(flags & FUR_OVER_IO_URING));
#ifdef FUR_TRACE
		jg_log(JG_LOG_DEBUG, "fuse", "io_uring: INIT %u.%u flags 0x%llx", ii->major,
		       ii->minor, (unsigned long long)flags);
#endif
		atomic_store(&u->init_unique, in->unique);
	}
	return n;
}

/* The rings and their buffers, before the INIT reply offers them. */
static int fur_rings_setup(struct fop_uring *u, const struct fuse_init_out *io)
{
	size_t pages = io->flags & FUSE_MAX_PAGES ? io->max_pages : 32;
	struct io_uring_params p;
	int rc;

	/* the kernel's max_payload_sz: max(8192, max_write, max_pages pages) */
	u->payload = io->max_write > 8192 ? io->max_write : 8192;
	if (u->payload < pages * 4096)
		u->payload = pages * 4096;
	for (unsigned int i = 0; i < u->nq; i++) {
		struct fur_queue *q = &u->q[i];

		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQE128;
		/* each entry's command, and the stop NOP */
		rc = io_uring_queue_init_params(FUR_DEPTH * 2, &q->ring, &p);
		if (rc)
			return rc;
		q->ring_up = true;
		for (unsigned int k = 0; k < FUR_DEPTH; k++) {
			struct fur_ent *e = &q->ent[k];

			e->hdr = calloc(1, sizeof(*e->hdr));
			if (!e->hdr || posix_memalign((void **)&e->buf, 4096, FUR_PRE + u->payload))
				return -ENOMEM;
		}
	}
	return 0;
}

static ssize_t fur_writev(int fd, struct iovec *iov, int count, void *ud)
{
	struct fop_uring *u = fur_the;
	struct fuse_out_header *oh = iov[0].iov_base;

	(void)ud;
	struct fuse_init_out *io = count > 1 ? iov[1].iov_base : NULL;
	bool ring = false;
	ssize_t n;
	int rc;

	if (oh->unique && atomic_load(&u->running)) {
		struct fur_ent *e = fur_find(u, oh->unique);

		if (e)
			return fur_reply(e, iov, count);
	}
	if (!oh->unique || oh->unique != atomic_load(&u->init_unique) || oh->error || !io ||
	    iov[1].iov_len < sizeof(*io) || atomic_load(&u->running))
		return writev(fd, iov, count);

	/* the INIT reply: the flag only once the rings are up (or the kernel waits on them) */
	if (!atomic_load(&u->offered)) {
		jg_log(JG_LOG_WARN, "fuse",
		       "-o uring: the kernel does not offer FUSE over "
		       "io_uring (Linux 6.14+, fuse.enable_uring=1): requests stay on /dev/fuse");
	} else if ((rc = fur_rings_setup(u, io))) {
		jg_log(JG_LOG_WARN, "fuse",
		       "-o uring: io_uring setup: %s: requests stay on "
		       "/dev/fuse",
		       strerror(-rc));
	} else {
		io->flags |= FUR_INIT_EXT;
		io->flags2 |= (uint32_t)(FUR_OVER_IO_URING >> 32);
		ring = true;
	}
	n = writev(fd, iov, count);
	if (n < 0 || !ring)
		return n;
	/* the kernel took the reply: it is initialised, and waits for every queue */
	atomic_store(&u->running, true);
	for (unsigned int i = 0; i < u->nq; i++) {
		rc = pthread_create(&u->q[i].thread, NULL, fur_queue_main, &u->q[i]);
		if (rc) {
			/* the kernel's requests wait for this queue: end the connection */
			jg_log(JG_LOG_ERR, "fuse", "io_uring: queue thread: %s", strerror(rc));
			fuse_session_exit(u->se);
			break;
		}
		u->q[i].thread_up = true;
		/* the tests look for it: the ring serves this mount */
		pthread_setname_np(u->q[i].thread, "fuse-uring");
	}
	jg_log(JG_LOG_INFO, "fuse", "requests over io_uring: %u queues of %u", u->nq, FUR_DEPTH);
	return n;
}

/* ------------------------------------------------------------ interface */

int fop_uring_attach(struct fuse_session *se, struct fop_uring **out)
{
	static const struct fuse_custom_io io = {.writev = fur_writev, .read = fur_read};
	struct fop_uring *u;
	int rc;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->se = se;
	u->fd = fuse_session_fd(se);
	u->nq = fur_nr_queues();
	u->q = calloc(u->nq ? u->nq : 1, sizeof(*u->q));
	if (!u->nq || !u->q) {
		jg_log(JG_LOG_ERR, "fuse", "-o uring: no CPU count, or no memory");
		free(u->q);
		free(u);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < u->nq; i++) {
		u->q[i].u = u;
		u->q[i].qid = i;
		pthread_mutex_init(&u->q[i].sq_lock, NULL);
		for (unsigned int k = 0; k < FUR_DEPTH; k++)
			u->q[i].ent[k].q = &u->q[i];
	}
	fur_the = u;
	/* libfuse copies the io and keeps the descriptor it was given: the session's own */
	rc = fuse_session_custom_io(se, &io, u->fd);
	if (rc) {
		jg_log(JG_LOG_ERR, "fuse", "-o uring: fuse_session_custom_io: %s", strerror(-rc));
		fop_uring_detach(u);
		return rc;
	}
	*out = u;
	return 0;
}

void fop_uring_detach(struct fop_uring *u)
{
	if (!u)
		return;
	for (unsigned int i = 0; i < u->nq; i++) {
		struct fur_queue *q = &u->q[i];

		if (q->thread_up) {
			fur_queue_wake(q);
			pthread_join(q->thread, NULL);
		}
		/* cancels the commands the kernel still holds */
		if (q->ring_up)
			io_uring_queue_exit(&q->ring);
		for (unsigned int k = 0; k < FUR_DEPTH; k++) {
			free(q->ent[k].hdr);
			free(q->ent[k].buf);
		}
		pthread_mutex_destroy(&q->sq_lock);
	}
	free(u->q);
	if (fur_the == u)
		fur_the = NULL;
	free(u);
}
