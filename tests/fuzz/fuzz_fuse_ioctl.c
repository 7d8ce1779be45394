// SPDX-License-Identifier: MIT
/*
 * tests/fuzz/fuzz_fuse_ioctl.c - the FUSE ioctl argument decoding
 * (fop_ioctl_decode, src/fuse/ioctl.c), which fop_ioctl runs on what the
 * kernel hands over before anything else.
 *
 * Input:
 *	cmd:le32 flags:le32 out_bufsz:le16 in_buf[rest]
 *
 * cmd with its top bit clear is replaced by one of the commands the daemon
 * knows (cmd % 6; the sizes of in_buf and out_bufsz still come from the
 * input), so that every branch is reached; with it set, cmd is taken as is.
 * in_buf is copied to a buffer of exactly its size (ASan sees an overread).
 *
 * Properties (abort): a command accepted with usable arguments is a known one;
 * a replace or spare request handed on lies inside in_buf, its path
 * NUL-terminated and absolute, and needs root or the mounting user; a status
 * request has room for struct fop_status.
 */
#include "fuzz_common.h"
#include "fop_i.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (fz_writing_corpus()) {
		static const uint32_t cmds[] = {FOP_IOC_SET_RESYNC_ALL, FOP_IOC_CLEAR_RESYNC_ALL,
						FOP_IOC_STATUS,		FOP_IOC_REPLACE,
						FOP_IOC_SPARE_ADD,	FOP_IOC_SPARE_REMOVE};
		struct fop_replace rq = {.flags = FOP_REPLACE_ROLE, .role = 1};
		struct fop_spare sp = {0};
		struct fz_seed s = {0};

		strcpy(rq.path, "/dev/sdz");
		strcpy(sp.path, "/dev/sdy");
		for (unsigned int i = 0; i < 6; i++) {
			uint32_t cmd = cmds[i] | 0x80000000u, flags = 0;
			uint16_t out = cmds[i] == FOP_IOC_STATUS ? (uint16_t)sizeof(struct fop_status) : 0;
			char name[32];

			fz_seed_bytes(&s, &cmd, 4);
			fz_seed_bytes(&s, &flags, 4);
			fz_seed_bytes(&s, &out, 2);
			if (cmds[i] == FOP_IOC_REPLACE)
				fz_seed_bytes(&s, &rq, sizeof(rq));
			if (cmds[i] == FOP_IOC_SPARE_ADD || cmds[i] == FOP_IOC_SPARE_REMOVE)
				fz_seed_bytes(&s, &sp, sizeof(sp));
			snprintf(name, sizeof(name), "cmd%u", i);
			fz_seed_write(&s, name);
		}
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned int known[] = {FOP_IOC_SET_RESYNC_ALL, FOP_IOC_CLEAR_RESYNC_ALL,
					     FOP_IOC_STATUS,	     FOP_IOC_REPLACE,
					     FOP_IOC_SPARE_ADD,	     FOP_IOC_SPARE_REMOVE,
					     FOP_IOC_SCRUB_START,    FOP_IOC_SCRUB_CANCEL};
	struct fop_ioctl_call call;
	uint32_t cmd, flags;
	uint16_t out_bufsz;
	uint8_t *in = NULL;
	size_t in_bufsz;
	int rc;

	if (size < 10)
		return 0;
	memcpy(&cmd, data, 4);
	memcpy(&flags, data + 4, 4);
	memcpy(&out_bufsz, data + 8, 2);
	if (!(cmd & 0x80000000u))
		cmd = known[cmd % 8];
	else
		cmd &= 0x7fffffffu;
	in_bufsz = size - 10;
	if (in_bufsz) {
		in = malloc(in_bufsz);
		FZ_ASSERT(in);
		memcpy(in, data + 10, in_bufsz);
	}
	rc = fop_ioctl_decode(cmd, flags, in, in_bufsz, out_bufsz, &call);
	if (rc == 0 && call.arg_err == 0 && call.cmd != cmd) {
		/* another build's status request, answered as ours up to its size */
		FZ_ASSERT(!(flags & FUSE_IOCTL_COMPAT) && !call.privileged);
		FZ_ASSERT(call.cmd == FOP_IOC_STATUS && _IOC_NR(cmd) == _IOC_NR(FOP_IOC_STATUS) &&
			  _IOC_TYPE(cmd) == FOP_IOC_MAGIC && _IOC_DIR(cmd) == _IOC_READ);
		FZ_ASSERT(call.status_bytes >= 8 && call.status_bytes <= out_bufsz &&
			  call.status_bytes <= sizeof(struct fop_status));
	} else if (rc == 0 && call.arg_err == 0) {
		FZ_ASSERT(!(flags & FUSE_IOCTL_COMPAT));
		FZ_ASSERT(cmd == FOP_IOC_SET_RESYNC_ALL || cmd == FOP_IOC_CLEAR_RESYNC_ALL ||
			  cmd == FOP_IOC_STATUS || cmd == FOP_IOC_REPLACE ||
			  cmd == FOP_IOC_SPARE_ADD || cmd == FOP_IOC_SPARE_REMOVE ||
			  cmd == FOP_IOC_SCRUB_START || cmd == FOP_IOC_SCRUB_CANCEL ||
			  cmd == FOP_IOC_REQUESTS);
		if (cmd == FOP_IOC_SCRUB_START) {
			FZ_ASSERT(call.privileged && (const uint8_t *)call.scrub == in);
			FZ_ASSERT(in_bufsz >= sizeof(struct fop_scrub) && !call.scrub->reserved);
			FZ_ASSERT(!(call.scrub->flags & ~FOP_SCRUB_REPAIR));
		}
		if (cmd == FOP_IOC_SCRUB_CANCEL)
			FZ_ASSERT(call.privileged);
		if (cmd == FOP_IOC_REPLACE) {
			const struct fop_replace *rq = call.replace;

			FZ_ASSERT(call.privileged);
			FZ_ASSERT((const uint8_t *)rq == in && in_bufsz >= sizeof(*rq));
			FZ_ASSERT(rq->path[0] == '/' && strnlen(rq->path, sizeof(rq->path)) < sizeof(rq->path));
		}
		if (cmd == FOP_IOC_SPARE_ADD || cmd == FOP_IOC_SPARE_REMOVE) {
			const struct fop_spare *sp = call.spare;

			FZ_ASSERT(call.privileged);
			FZ_ASSERT((const uint8_t *)sp == in && in_bufsz >= sizeof(*sp));
			FZ_ASSERT(sp->path[0] == '/' && strnlen(sp->path, sizeof(sp->path)) < sizeof(sp->path));
		}
		if (cmd == FOP_IOC_STATUS)
			FZ_ASSERT(out_bufsz >= sizeof(struct fop_status) &&
				  call.status_bytes == sizeof(struct fop_status));
		if (cmd == FOP_IOC_REQUESTS)
			FZ_ASSERT(!call.privileged && out_bufsz >= sizeof(struct fop_requests));
		if (cmd == FOP_IOC_SET_RESYNC_ALL || cmd == FOP_IOC_CLEAR_RESYNC_ALL)
			FZ_ASSERT(call.privileged);
	} else if (rc == 0) {
		FZ_ASSERT(call.arg_err == -EINVAL && call.replace == NULL && call.spare == NULL &&
			  call.scrub == NULL);
	} else {
		FZ_ASSERT(rc == -ENOSYS || rc == -ENOTTY);
	}
	free(in);
	return 0;
}
