// SPDX-License-Identifier: MIT
/*
 * src/fuse/opts.c - the -o options of `jgrfs mount` (include/jgrfs/fop.h).
 *
 * Options arrive as one or more comma-separated strings: from the command line
 * (-o, repeated) or from /etc/fstab through mount(8) and mount.fuse3. Ours are
 * taken here; the ones mount(8) adds for itself are dropped; the rest are handed
 * to libfuse, which knows the generic FUSE and VFS options and refuses the others
 * with a message of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fop_i.h"

#define FOP_MAX_WRITE_LIMIT (1u << 20) /* libfuse 3.14's buffer: 256 pages */

void fop_opts_init(struct fop_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->data_mode = JNL_DATA_DECLARED;
	o->resync = RAID_RESYNC_JOURNAL;
	o->writeback_cache = true;
	o->max_write_bytes = FOP_MAX_WRITE_LIMIT;
	o->max_threads = 8;
	/* the test suites run over either transport without changing a command line */
	o->uring = getenv("JGRFS_FUSE_URING") && !strcmp(getenv("JGRFS_FUSE_URING"), "1");
	o->uring_poll_us = 50;
	o->timeout_s = 86400.0;
	o->sync_rate_mb = 128;
	o->log_level = JG_LOG_NOTICE;
}

void fop_opts_free(struct fop_opts *o)
{
	free(o->members);
	free(o->fuse_opts);
	free(o->notify);
	o->members = NULL;
	o->fuse_opts = NULL;
	o->notify = NULL;
}

/* Append @opt to the comma-separated list *@list (malloc'd). */
static int fop_opts_append(char **list, const char *opt)
{
	size_t old = *list ? strlen(*list) : 0, add = strlen(opt);
	char *p = realloc(*list, old + add + 2);

	if (!p)
		return -ENOMEM;
	if (old)
		p[old++] = ',';
	memcpy(p + old, opt, add + 1);
	*list = p;
	return 0;
}

static int fop_opts_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "4096", "64K", "1M", "2G" (powers of 1024). */
static int fop_opts_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1])
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* Options mount(8) and mount.fuse3 keep for themselves: never for libfuse. */
static bool fop_opts_mount_only(const char *opt)
{
	static const char *const names[] = {"defaults", "auto",	 "noauto", "nofail", "_netdev",
					    "user",	"users", "nouser", "owner",  "group"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(opt, names[i]))
			return true;
	return !strncmp(opt, "x-", 2) || !strncmp(opt, "comment=", 8);
}

/* The options NAME and no_NAME that turn a feature on and off: true if @opt is one. */
static bool fop_opts_switch(struct fop_opts *o, const char *opt)
{
	const struct {
		const char *name;
		bool *flag;
	} sw[] = {{"writeback_cache", &o->writeback_cache}, {"uring", &o->uring}};
	bool on = strncmp(opt, "no_", 3) != 0;

	for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++)
		if (!strcmp(on ? opt : opt + 3, sw[i].name)) {
			*sw[i].flag = on;
			return true;
		}
	return false;
}

/*
 * The options of the FUSE session: max_write=, threads=, uring_poll=, timeout=.
 * True if @opt is one; *@rc is then 0 or -EINVAL (logged).
 */
static bool fop_opts_fuse(struct fop_opts *o, const char *opt, const char *val, int *rc)
{
	uint64_t v = 0;
	int r = 0;

	if (!strncmp(opt, "max_write=", 10)) {
		r = fop_opts_size(val, &v);
		if (r || v < JG_BLOCK_SIZE || v > FOP_MAX_WRITE_LIMIT) {
			r = -EINVAL;
			jg_log(JG_LOG_ERR, "fuse", "%s: expected 4K to 1M", opt);
		}
		o->max_write_bytes = (unsigned int)v;
	} else if (!strncmp(opt, "threads=", 8)) {
		r = fop_opts_u64(val, 64, &v);
		if (r || v == 0) {
			r = -EINVAL;
			jg_log(JG_LOG_ERR, "fuse", "%s: expected 1 to 64", opt);
		}
		o->max_threads = (unsigned int)v;
	} else if (!strncmp(opt, "uring_poll=", 11)) {
		r = fop_opts_u64(val, 1000, &v);
		if (r)
			jg_log(JG_LOG_ERR, "fuse", "%s: expected microseconds, 0 to 1000", opt);
		o->uring_poll_us = (unsigned int)v;
	} else if (!strncmp(opt, "timeout=", 8)) {
		char *end;
		double t = strtod(val, &end);

		if (*end || !(t >= 0 && t <= 86400)) {
			r = -EINVAL;
			jg_log(JG_LOG_ERR, "fuse", "%s: expected seconds, 0 to 86400", opt);
		}
		o->timeout_s = t;
	} else {
		return false;
	}
	*rc = r;
	return true;
}

/* Take one option; returns 0 or -EINVAL (logged). */
static int fop_opts_one(struct fop_opts *o, const char *opt)
{
	const char *val = strchr(opt, '=');
	uint64_t v = 0;
	int rc = 0;

	val = val ? val + 1 : NULL;
	if (!strncmp(opt, "data=", 5)) {
		rc = jnl_data_mode_parse(val, &o->data_mode);
		if (rc)
			jg_log(JG_LOG_ERR, "fuse",
			       "%s: expected declared, ordered, journal or writeback", opt);
	} else if (!strncmp(opt, "resync=", 7)) {
		rc = raid_resync_policy_parse(val, &o->resync);
		if (rc)
			jg_log(JG_LOG_ERR, "fuse", "%s: expected journal, bitmap, full or off",
			       opt);
		o->resync_given = !rc;
	} else if (!strncmp(opt, "commit=", 7)) {
		rc = fop_opts_u64(val, 3600, &v);
		if (rc || v == 0) {
			rc = -EINVAL;
			jg_log(JG_LOG_ERR, "fuse", "%s: expected seconds, 1 to 3600", opt);
		}
		o->commit_s = (unsigned int)v;
	} else if (!strncmp(opt, "logdata=", 8)) {
		rc = fop_opts_u64(val, 1024, &v);
		if (rc)
			jg_log(JG_LOG_ERR, "fuse", "%s: expected blocks, 0 to 1024", opt);
		o->log_data_blocks = v ? (int)v : -1;
	} else if (!strncmp(opt, "cache=", 6)) {
		rc = fop_opts_size(val, &v);
		if (rc || v < 64 * JG_BLOCK_SIZE) {
			rc = -EINVAL;
			jg_log(JG_LOG_ERR, "fuse", "%s: expected a size of at least 256K", opt);
		}
		o->cache_blocks = v / JG_BLOCK_SIZE;
	} else if (!strncmp(opt, "max_read_errors=", 16)) {
		rc = fop_opts_u64(val, 1000000, &v);
		if (rc || v == 0) {
			rc = -EINVAL;
			jg_log(JG_LOG_ERR, "fuse", "%s: expected 1 to 1000000", opt);
		}
		o->max_read_errors = (unsigned int)v;
	} else if (fop_opts_fuse(o, opt, val, &rc)) {
		/* max_write=, threads=, uring_poll=, timeout= */
	} else if (!strncmp(opt, "sync_rate=", 10)) {
		rc = fop_opts_u64(val, 1000000, &v);
		if (rc)
			jg_log(JG_LOG_ERR, "fuse", "%s: expected MiB/s, 0 (no limit) to 1000000",
			       opt);
		o->sync_rate_mb = (unsigned int)v;
	} else if (!strncmp(opt, "readd=", 6)) {
		rc = fop_opts_u64(val, 86400, &v);
		if (rc)
			jg_log(JG_LOG_ERR, "fuse", "%s: expected seconds, 0 (never) to 86400", opt);
		o->readd_s = (unsigned int)v;
	} else if (!strncmp(opt, "notify=", 7)) {
		/* the daemon runs it from / (background mode): a relative path would move */
		if (val[0] != '/') {
			rc = -EINVAL;
			jg_log(JG_LOG_ERR, "fuse", "%s: expected an absolute path", opt);
		} else {
			free(o->notify);
			o->notify = strdup(val);
			if (!o->notify)
				rc = -ENOMEM;
		}
	} else if (!strncmp(opt, "members=", 8)) {
		free(o->members);
		o->members = strdup(val);
		if (!o->members)
			rc = -ENOMEM;
	} else if (!strcmp(opt, "force")) {
		o->force = true;
	} else if (!strcmp(opt, "degraded")) {
		o->degraded = true;
	} else if (fop_opts_switch(o, opt)) {
		/* NAME or no_NAME */
	} else if (!strcmp(opt, "debug")) {
		o->debug = true;
		o->foreground = true;
	} else if (!strcmp(opt, "default_permissions")) {
		/* always on */
	} else if (fop_opts_mount_only(opt)) {
		/* mount(8)'s business */
	} else {
		/* generic options: libfuse takes them; some we also need to know */
		if (!strcmp(opt, "ro"))
			o->readonly = true;
		else if (!strcmp(opt, "rw"))
			o->readonly = false, o->rw_given = true;
		else if (!strcmp(opt, "allow_other"))
			o->allow_other = true;
		rc = fop_opts_append(&o->fuse_opts, opt);
	}
	return rc;
}

int fop_opts_parse(struct fop_opts *o, const char *optstr)
{
	char *buf, *save = NULL;
	int rc = 0;

	buf = strdup(optstr);
	if (!buf)
		return -ENOMEM;
	for (char *opt = strtok_r(buf, ",", &save); opt && !rc; opt = strtok_r(NULL, ",", &save))
		rc = fop_opts_one(o, opt);
	free(buf);
	return rc;
}
