/* SPDX-License-Identifier: MIT */
/*
 * src/fuse/uring.c - FUSE requests over io_uring (the kernel's fuse-io-uring,
 * Linux 6.14+, module parameter fuse.enable_uring), beside /dev/fuse.
 *
 * libfuse 3.14 has no such transport; two of its hooks carry one. The
 * session's custom io (fuse_session_custom_io) sees every read of /dev/fuse
 * and every reply: it notes whether the kernel's FUSE_INIT offers
 * FUSE_OVER_IO_URING, adds the flag to the INIT reply when the rings are set
 * up, and sends a reply to a ring request through the ring. Each kernel
 * queue (one per possible CPU: the kernel queues a request on the queue of
 * the CPU its caller runs on) has a few entries, and each entry its own
 * thread and its own io_uring: the thread waits for a request on its entry,
 * hands it to fuse_session_process_buf() as if read from /dev/fuse, and its
 * reply goes back with the next wait. A request that waits (an fsync) holds
 * its entry's thread only; the kernel gives the next request of that CPU to
 * another entry.
 *
 * The kernel keeps FUSE_INIT, forgets, interrupts and notifications on
 * /dev/fuse, so the session loop goes on reading it; a kernel that refuses the
 * ring (REGISTER fails) turns the connection back to /dev/fuse itself.
 *
 * The protocol's structures are defined here from the kernel's uapi
 * (include/uapi/linux/fuse.h, 7.42): the installed headers predate them.
 *
 * (R1) After its reply, an entry's thread looks for the next request for
 *      uring_poll= microseconds (yielding the CPU between looks) before it
 *      sleeps in the kernel. The kernel (6.18) wakes the caller of a ring
 *      request with a plain wake_up() from the thread that answers it, whose
 *      CPU is busy at that moment, so the scheduler puts the caller on an idle
 *      CPU if there is one: at every request, the wake-up of an idle CPU, tens
 *      of microseconds in a virtual machine (docs/design/fuse-uring.md). With
 *      the CPUs that recently answered still looking, none is idle and the
 *      caller stays where it was; a thread that finds nothing sleeps, so an
 *      idle mount spins for one budget after its last request and no more.
 *      The kernel's own fix wakes the caller on the answering CPU (a patch
 *      after 6.18); with it the budget can be 0.
 */
#include <errno.h>
#include <sched.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
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

/*
 * Entries (and threads) per queue: requests one CPU's queue serves at once.
 * FUR_DEPTH_MAX each, fewer on a machine of many CPUs so that a mount has at
 * most FUR_ENTS_MAX, but never fewer than FUR_DEPTH_MIN a queue (a request
 * that waits must leave its CPU's queue another entry).
 */
#define FUR_DEPTH_MAX 8
#define FUR_DEPTH_MIN 2
#define FUR_ENTS_MAX 32
#define FUR_PRE 256 /* before the payload: room for the in header and op_in */
/*
 * user_data of a message (IORING_OP_MSG_RING) to an entry's ring: stop its
 * thread, or (the entry's address | FUR_MSG_COMMIT) commit the reply another
 * thread wrote into it. A command's own completion carries the entry's
 * address, which is aligned.
 */
#define FUR_MSG_STOP 1
#define FUR_MSG_COMMIT 1

struct fop_uring;
struct fur_queue;

/*
 * One entry of a queue, served by its own thread on its own io_uring: that
 * thread alone submits to the ring and reaps it (liburing is not thread safe
 * per ring, and the kernel runs an entry's request delivery as task work of
 * the thread that submitted its command: the one waiting on it).
 */
struct fur_ent {
	struct fur_queue *q;
	struct io_uring ring;
	bool ring_up, thread_up;
	pthread_t thread;
	struct fur_req_header *hdr;
	char *buf;			/* FUR_PRE bytes, then the payload the kernel fills */
	_Atomic uint64_t unique;	/* the request being served; 0 while fetching */
	uint64_t commit_id;		/* a reply written by another thread: its request */
	struct iovec iov[FUR_IOV_SEGS]; /* REGISTER's: the two buffers */
};

struct fur_queue {
	struct fop_uring *u;
	unsigned int qid;
	struct fur_ent *ent; /* u->depth */
};

struct fop_uring {
	struct fuse_session *se;
	int fd; /* /dev/fuse */
	unsigned int nq, depth;
	struct fur_queue *q;
	struct fur_ent *ents; /* nq x depth, queue by queue */
	struct io_uring msg;  /* sends messages to the entries' rings */
	bool msg_up;
	pthread_mutex_t msg_lock;     /* msg: any thread may send */
	size_t payload;		      /* each entry's payload buffer */
	_Atomic uint64_t init_unique; /* the INIT request's, once read */
	atomic_bool offered;	      /* that INIT offered FUSE_OVER_IO_URING */
	atomic_bool running;	      /* the INIT reply carried the flag: rings serve */
	atomic_bool refused;	      /* a command failed: said once */
	long poll_ns;		      /* (R1): uring_poll= */
	/* the entries' buffers allocated now, and what they take once all are:
	 * for the status (fop_uring_mem), which any thread may ask */
	_Atomic uint64_t mem_bytes, mem_bound;
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

/*
 * Queue one command on @e's ring: REGISTER its buffers, or commit its reply
 * and fetch the next request. Only @e's thread calls this; its wait submits.
 */
static int fur_prep_cmd(struct fur_ent *e, uint32_t cmd_op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
	struct fur_cmd_req *req;

	if (!sqe)
		return -EBUSY; /* cannot happen: one command at a time */
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = e->q->u->fd;
	sqe->cmd_op = cmd_op;
	if (cmd_op == FUR_CMD_REGISTER) {
		/* read at issue; kept in the entry all the same, should the issue be deferred */
		e->iov[0] = (struct iovec){.iov_base = e->hdr, .iov_len = sizeof(*e->hdr)};
		e->iov[1] =
		    (struct iovec){.iov_base = e->buf + FUR_PRE, .iov_len = e->q->u->payload};
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = FUR_IOV_SEGS;
	}
	req = (struct fur_cmd_req *)sqe->cmd;
	req->commit_id = commit_id;
	req->qid = (uint16_t)e->q->qid;
	io_uring_sqe_set_data(sqe, e);
	return 0;
}

/*
 * Post a completion carrying @data on @e's ring, from any thread, without
 * touching that ring's submission queue (IORING_OP_MSG_RING from ours).
 */
static int fur_msg(struct fop_uring *u, struct fur_ent *e, uint64_t data)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int rc;

	pthread_mutex_lock(&u->msg_lock);
	sqe = io_uring_get_sqe(&u->msg);
	if (!sqe) {
		pthread_mutex_unlock(&u->msg_lock);
		return -EBUSY; /* cannot happen: each message is reaped before the next */
	}
	io_uring_prep_msg_ring(sqe, e->ring.ring_fd, 0, data, 0);
	io_uring_sqe_set_data64(sqe, 0);
	rc = io_uring_submit(&u->msg);
	if (rc >= 0) {
		do
			rc = io_uring_wait_cqe(&u->msg, &cqe);
		while (rc == -EINTR);
		if (!rc) {
			rc = cqe->res < 0 ? cqe->res : 0;
			io_uring_cqe_seen(&u->msg, cqe);
		}
	}
	pthread_mutex_unlock(&u->msg_lock);
	return rc;
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
	fur_cur = e; /* its reply is this thread's to submit */
	/* in.len counts all three; what is not payload is the fixed argument */
	if (in.len < sizeof(in) + plen || in.len - sizeof(in) - plen > sizeof(e->hdr->op_in) ||
	    plen > e->q->u->payload) {
		struct fuse_out_header oh = {.len = sizeof(oh), .error = -EIO, .unique = in.unique};
		struct iovec iov = {.iov_base = &oh, .iov_len = sizeof(oh)};

		jg_log(JG_LOG_ERR, "fuse", "io_uring: request %llu opcode %u: len %u, payload %u",
		       (unsigned long long)in.unique, in.opcode, in.len, plen);
		fur_reply(e, &iov, 1); /* the caller gets EIO, the entry fetches again */
		fur_cur = NULL;
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
	fuse_session_process_buf(e->q->u->se, &fb);
	fur_cur = NULL;
}

/* The entry serving request @unique, or NULL: the reply goes to /dev/fuse. */
static struct fur_ent *fur_find(struct fop_uring *u, uint64_t unique)
{
	if (fur_cur && atomic_load(&fur_cur->unique) == unique)
		return fur_cur;
	for (unsigned int i = 0; i < u->nq * u->depth; i++)
		if (atomic_load(&u->ents[i].unique) == unique)
			return &u->ents[i];
	return NULL;
}

/*
 * The reply to a ring request: the out header in the header buffer, the
 * arguments after it in the payload (where the request's were: it is
 * answered), then COMMIT_AND_FETCH sends it and waits for the next. The
 * entry's thread, which normally replies (from the handler it runs), submits
 * the command with its next wait: one system call a request. A reply from
 * another thread asks the entry's thread to, by a message.
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
	if (fur_cur == e) {
		rc = fur_prep_cmd(e, FUR_CMD_COMMIT_AND_FETCH, unique);
	} else {
		e->commit_id = unique; /* read by the entry's thread after the message */
		rc = fur_msg(e->q->u, e, (uint64_t)(uintptr_t)e | FUR_MSG_COMMIT);
	}
	if (rc) {
		errno = -rc;
		return -1;
	}
	return (ssize_t)(sizeof(*oh) + len);
}

/*
 * A completion on @e's ring: its command's (a request, or the command's
 * end), or a message. False: the thread is done.
 */
static bool fur_ent_complete(struct fur_ent *e, uint64_t data, int res)
{
	if (data == FUR_MSG_STOP)
		return false;
	if (data & FUR_MSG_COMMIT) {
		/* a reply another thread wrote: committed with the next wait */
		if (fur_prep_cmd(e, FUR_CMD_COMMIT_AND_FETCH, e->commit_id))
			return false;
		return true;
	}
	if (res < 0) {
		/* refused, or the connection ended (-ENOTCONN): the entry is done */
		if (res != -ENOTCONN && res != -ECONNABORTED && res != -ECANCELED &&
		    !atomic_exchange(&e->q->u->refused, true))
			jg_log(JG_LOG_WARN, "fuse",
			       "io_uring: queue %u: the kernel refused the ring: %s "
			       "(requests stay on /dev/fuse)",
			       e->q->qid, strerror(-res));
		return false;
	}
	fur_dispatch(e);
	return true;
}

/*
 * (R1) Submit @e's command (the reply and the wait for the next request) and
 * wait for a completion: looked for, yielding, up to the poll budget, then
 * slept for. As io_uring_submit_and_wait().
 */
static int fur_submit_and_wait(struct fur_ent *e)
{
	struct io_uring_cqe *cqe;
	struct timespec t0, t;
	int rc;

	if (!e->q->u->poll_ns)
		return io_uring_submit_and_wait(&e->ring, 1);
	rc = io_uring_submit(&e->ring);
	if (rc < 0)
		return rc;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (!io_uring_peek_cqe(&e->ring, &cqe))
			return rc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) >=
		    e->q->u->poll_ns)
			return io_uring_submit_and_wait(&e->ring, 1);
		sched_yield(); /* the caller may be waiting for this CPU */
	}
}

/*
 * One entry: register it, then serve what arrives, the reply to each request
 * submitted with the wait for the next. A REGISTER the kernel refuses
 * completes at once with the error (and the kernel turns the connection back
 * to /dev/fuse); one it takes completes when a request comes.
 */
static void *fur_ent_main(void *arg)
{
	struct fur_ent *e = arg;
	cpu_set_t set;
	int rc;

	/*
	 * On the CPU whose callers it serves, as libfuse 3.17 does (measured
	 * here: creates/s up by a fifth to a half under load). A CPU outside
	 * our cpuset refuses it; the thread then runs anywhere.
	 */
	CPU_ZERO(&set);
	CPU_SET(e->q->qid, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);

	rc = fur_prep_cmd(e, FUR_CMD_REGISTER, 0);
	for (bool on = !rc; on;) {
		struct io_uring_cqe *cqe;
		uint64_t data;
		int res;

		rc = fur_submit_and_wait(e);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			break;
		if (io_uring_peek_cqe(&e->ring, &cqe))
			continue;
		data = cqe->user_data;
		res = cqe->res;
		io_uring_cqe_seen(&e->ring, cqe);
		on = fur_ent_complete(e, data, res);
	}
	if (rc < 0 && rc != -EINTR)
		jg_log(JG_LOG_WARN, "fuse", "io_uring: queue %u: submit: %s", e->q->qid,
		       strerror(-rc));
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
	memset(&p, 0, sizeof(p));
	rc = io_uring_queue_init_params(2, &u->msg, &p);
	if (rc)
		return rc;
	u->msg_up = true;
	atomic_store(&u->mem_bound,
		     (uint64_t)u->nq * u->depth * (sizeof(*u->ents->hdr) + FUR_PRE + u->payload));
	for (unsigned int i = 0; i < u->nq * u->depth; i++) {
		struct fur_ent *e = &u->ents[i];

		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQE128;
		/* one command at a time; messages arrive as completions only */
		rc = io_uring_queue_init_params(2, &e->ring, &p);
		if (rc)
			return rc;
		e->ring_up = true;
		e->hdr = calloc(1, sizeof(*e->hdr));
		if (!e->hdr)
			return -ENOMEM;
		atomic_fetch_add(&u->mem_bytes, sizeof(*e->hdr));
		if (posix_memalign((void **)&e->buf, 4096, FUR_PRE + u->payload))
			return -ENOMEM;
		atomic_fetch_add(&u->mem_bytes, FUR_PRE + u->payload);
	}
	return 0;
}

/*
 * The kernel took the INIT reply that asked for the ring: it is initialised,
 * and holds requests until every queue has registered an entry. A thread per
 * entry; a queue none of whose threads starts ends the connection.
 */
static void fur_threads_start(struct fop_uring *u)
{
	atomic_store(&u->running, true);
	for (unsigned int i = 0; i < u->nq; i++) {
		unsigned int up = 0;
		int rc = 0;

		for (unsigned int k = 0; k < u->depth; k++) {
			struct fur_ent *e = &u->q[i].ent[k];

			rc = pthread_create(&e->thread, NULL, fur_ent_main, e);
			if (rc)
				break;
			e->thread_up = true;
			up++;
			/* the tests look for it: the ring serves this mount */
			pthread_setname_np(e->thread, "fuse-uring");
		}
		if (rc)
			jg_log(up ? JG_LOG_WARN : JG_LOG_ERR, "fuse",
			       "io_uring: queue %u: %u of %u threads: %s", i, up, u->depth,
			       strerror(rc));
		if (!up) {
			fuse_session_exit(u->se);
			return;
		}
	}
	jg_log(JG_LOG_INFO, "fuse", "requests over io_uring: %u queues of %u", u->nq, u->depth);
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
	fur_threads_start(u);
	return n;
}

/* ------------------------------------------------------------ interface */

int fop_uring_attach(struct fuse_session *se, unsigned int poll_us, struct fop_uring **out)
{
	static const struct fuse_custom_io io = {.writev = fur_writev, .read = fur_read};
	struct fop_uring *u;
	int rc;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->se = se;
	u->poll_ns = (long)poll_us * 1000;
	u->fd = fuse_session_fd(se);
	u->nq = fur_nr_queues();
	u->depth = u->nq ? FUR_ENTS_MAX / u->nq : 0;
	u->depth = u->depth > FUR_DEPTH_MAX ? FUR_DEPTH_MAX : u->depth;
	u->depth = u->depth < FUR_DEPTH_MIN ? FUR_DEPTH_MIN : u->depth;
	u->q = calloc(u->nq ? u->nq : 1, sizeof(*u->q));
	u->ents = calloc(u->nq ? (size_t)u->nq * u->depth : 1, sizeof(*u->ents));
	if (!u->nq || !u->q || !u->ents) {
		jg_log(JG_LOG_ERR, "fuse", "-o uring: no CPU count, or no memory");
		free(u->ents);
		free(u->q);
		free(u);
		return -ENOMEM;
	}
	pthread_mutex_init(&u->msg_lock, NULL);
	for (unsigned int i = 0; i < u->nq; i++) {
		u->q[i].u = u;
		u->q[i].qid = i;
		u->q[i].ent = &u->ents[(size_t)i * u->depth];
		for (unsigned int k = 0; k < u->depth; k++)
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

void fop_uring_mem(const struct fop_uring *u, struct fop_uring_mem *out)
{
	*out = (struct fop_uring_mem){0};
	if (!u)
		return;
	/* running only after the kernel took the INIT reply that asked for the
	 * ring; refused once it sent the connection back to /dev/fuse. nq and
	 * depth are set before the session starts, so before any handler runs */
	if (atomic_load(&u->running) && !atomic_load(&u->refused))
		out->entries = u->nq * u->depth;
	out->bytes = atomic_load(&u->mem_bytes);
	out->bound = atomic_load(&u->mem_bound);
}

void fop_uring_detach(struct fop_uring *u)
{
	bool stuck = false;

	if (!u)
		return;
	for (unsigned int i = 0; i < u->nq * u->depth; i++) {
		struct fur_ent *e = &u->ents[i];

		/*
		 * After its request in hand, if any. A thread whose command the
		 * kernel ended (unmount) is gone already: the message is not read.
		 */
		if (e->thread_up) {
			int rc = fur_msg(u, e, FUR_MSG_STOP);

			if (rc) {
				jg_log(JG_LOG_ERR, "fuse", "io_uring: stopping queue %u: %s",
				       e->q->qid, strerror(-rc));
				continue;
			}
			pthread_join(e->thread, NULL);
			e->thread_up = false;
		}
	}
	for (unsigned int i = 0; i < u->nq * u->depth; i++) {
		struct fur_ent *e = &u->ents[i];

		if (e->thread_up) {
			stuck = true;
			continue; /* not stopped: its ring and buffers stay (the process ends) */
		}
		/* cancels the commands the kernel still holds */
		if (e->ring_up)
			io_uring_queue_exit(&e->ring);
		atomic_fetch_sub(&u->mem_bytes, (e->hdr ? sizeof(*e->hdr) : 0) +
						    (e->buf ? FUR_PRE + u->payload : 0));
		free(e->hdr);
		free(e->buf);
	}
	if (stuck)
		return; /* a thread still running uses its entry, its queue and u */
	if (u->msg_up)
		io_uring_queue_exit(&u->msg);
	pthread_mutex_destroy(&u->msg_lock);
	free(u->ents);
	free(u->q);
	if (fur_the == u)
		fur_the = NULL;
	free(u);
}
