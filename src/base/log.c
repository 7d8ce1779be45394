// SPDX-License-Identifier: MIT
/*
 * src/base/log.c - the one logging call (STYLE.md §9). Messages go to a sink the
 * program sets: stderr by default; the daemon switches to syslog in background.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "jgrfs/base.h"

static const char *const jg_log_names[] = { "error", "warning", "notice", "info", "debug" };

static void jg_log_stderr(void *ctx, int level, const char *subsys, const char *msg)
{
	(void)ctx;
	(void)level;
	fprintf(stderr, "%s: %s\n", subsys, msg);
}

static jg_log_sink_fn jg_log_sink = jg_log_stderr;
static void *jg_log_ctx;
static int jg_log_level = JG_LOG_INFO;
static _Thread_local int jg_log_floor = JG_LOG_ERR; /* jg_log_demote() */
/* Serialises the sink, so concurrent lines never interleave. */
static pthread_mutex_t jg_log_lock = PTHREAD_MUTEX_INITIALIZER;

void jg_log_set_sink(jg_log_sink_fn fn, void *ctx)
{
	jg_log_sink = fn ? fn : jg_log_stderr;
	jg_log_ctx = fn ? ctx : NULL;
}

void jg_log_set_level(int level)
{
	jg_log_level = level;
}

int jg_log_get_level(void)
{
	return jg_log_level;
}

int jg_log_demote(int level)
{
	int was = jg_log_floor;

	jg_log_floor = level;
	return was;
}

void jg_log(int level, const char *subsys, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level < jg_log_floor)
		level = jg_log_floor;
	if (level > jg_log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level <= JG_LOG_WARN && level >= 0 && jg_log_sink == jg_log_stderr) {
		/* stderr readers want to see severity; syslog sinks carry it themselves */
		char line[1100];

		snprintf(line, sizeof(line), "%s: %s", jg_log_names[level], msg);
		pthread_mutex_lock(&jg_log_lock);
		jg_log_sink(jg_log_ctx, level, subsys, line);
		pthread_mutex_unlock(&jg_log_lock);
		return;
	}
	pthread_mutex_lock(&jg_log_lock);
	jg_log_sink(jg_log_ctx, level, subsys, msg);
	pthread_mutex_unlock(&jg_log_lock);
}

const char *jg_roles_str(uint32_t mask, char *buf, size_t len)
{
	size_t off;
	int n = 0;

	off = (size_t)snprintf(buf, len, "%s",
			       mask & (mask - 1) ? "roles"
			       : mask		 ? "role"
						 : "no role");
	for (unsigned int r = 0; r < 32 && off < len; r++) {
		if (!(mask & (1u << r)))
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s %u", n++ ? "," : "", r);
	}
	if (off >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	return buf;
}
