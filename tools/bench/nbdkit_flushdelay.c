// SPDX-License-Identifier: MIT
/*
 * tools/bench/nbdkit_flushdelay.c - an nbdkit filter that makes a cache flush
 * cost what it costs on a disk, for tools/bench/bench_slow.sh.
 *
 * nbdkit's delay filter delays reads, writes, zeroes and trims, but not a
 * flush (nbdkit-delay-filter(1), up to 1.42 at least), and a disk's flush is
 * what a write-intent bitmap and a journal commit wait for. This filter waits
 * delay-flush before passing a flush on, and before a write with FUA: a FUA
 * write is a write plus the flush of that write (what Linux does for a SATA
 * disk, whose FUA libata leaves off by default). Stack it with the delay
 * filter, which delays the write itself:
 *
 *   nbdkit --filter=delay --filter=./flushdelay.so file disk.img \
 *          delay-write=8ms delay-flush=8ms
 *
 * delay-flush is whole seconds or NNms, as the delay filter's parameters in
 * nbdkit 1.32. Build: gcc -O2 -shared -fPIC (headers: nbdkit-plugin-dev).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nbdkit-filter.h>

static unsigned int flush_ms;

static int fd_config(nbdkit_next_config *next, nbdkit_backend *nxdata, const char *key,
		     const char *value)
{
	size_t len;
	unsigned int v;

	if (strcmp(key, "delay-flush") != 0)
		return next(nxdata, key, value);
	len = strlen(value);
	if (len > 2 && strcmp(value + len - 2, "ms") == 0) {
		char num[32];

		if (len - 2 >= sizeof(num))
			return -1;
		memcpy(num, value, len - 2);
		num[len - 2] = '\0';
		if (nbdkit_parse_unsigned("delay-flush", num, &v) == -1)
			return -1;
	} else {
		if (nbdkit_parse_unsigned("delay-flush", value, &v) == -1)
			return -1;
		if (v > UINT32_MAX / 1000) {
			nbdkit_error("delay-flush: %s: too long", value);
			return -1;
		}
		v *= 1000;
	}
	flush_ms = v;
	return 0;
}

static int fd_wait(int *err)
{
	if (flush_ms && nbdkit_nanosleep(flush_ms / 1000, (flush_ms % 1000) * 1000000) == -1) {
		*err = ESHUTDOWN;
		return -1;
	}
	return 0;
}

static int fd_pwrite(nbdkit_next *next, void *handle, const void *buf, uint32_t count,
		     uint64_t offset, uint32_t flags, int *err)
{
	(void)handle;
	if ((flags & NBDKIT_FLAG_FUA) && fd_wait(err) == -1)
		return -1;
	return next->pwrite(next, buf, count, offset, flags, err);
}

static int fd_flush(nbdkit_next *next, void *handle, uint32_t flags, int *err)
{
	(void)handle;
	if (fd_wait(err) == -1)
		return -1;
	return next->flush(next, flags, err);
}

static struct nbdkit_filter filter = {
	.name = "flushdelay",
	.longname = "jgrfs bench: delay flushes and FUA writes",
	.config = fd_config,
	.config_help = "delay-flush=SECS|NNms  Delay flushes and FUA writes.",
	.pwrite = fd_pwrite,
	.flush = fd_flush,
};

NBDKIT_REGISTER_FILTER(filter)
