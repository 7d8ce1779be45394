// SPDX-License-Identifier: MIT
/*
 * tools/cli/cli.c - the dispatcher of jgrfs and jgrfs-crash (cli_main) and the
 * helpers shared by the subcommands (tools/cli/cli.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "jgrfs/raid.h"

const char *cli_prog = "jgrfs";

int cli_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int cli_usage_err(int code, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fprintf(stderr, "%s: ", cli_prog);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
	return code;
}

int cli_split_members(char *list, char **paths, int max)
{
	int n = 0;
	char *p = list;

	while (*p) {
		char *end = p;

		if (raid_dev_is_nbd(p)) {
			end = strstr(p, "://") + 3;
			if (*end == '[')
				end += strcspn(end, "]");
			end += strcspn(end, "/?");
		}
		end += strcspn(end, ":");
		if (end > p) {
			if (n == max)
				return -EINVAL;
			paths[n++] = p;
		}
		if (!*end)
			break;
		*end = '\0';
		p = end + 1;
	}
	return n ? n : -EINVAL;
}

const char *cli_member_list(const char *src)
{
	if (!strncmp(src, "members=", 8))
		return src + 8;
	if (strchr(src, ':') && access(src, F_OK))
		return src;
	return NULL;
}

int cli_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: return -EINVAL;
	}
	if (*end && end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)v << shift;
	return 0;
}

static void cli_log_sink(void *ctx, int level, const char *subsys, const char *msg);

static void cli_usage(FILE *f, const struct cli_cmd *cmds)
{
	fprintf(f, "usage: jgrfs <command> [options] [args]\n\n"
		   "A filesystem on a software RAID5/6 array, with journal-guided resync.\n\n"
		   "commands:\n");
	for (size_t i = 0; cmds[i].name; i++)
		fprintf(f, "  %-14s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nEvery command takes -v (also the engine's own lines; -vv: everything) and\n"
		   "-q (errors only). Run 'jgrfs <command> --help' for the options of one command.\n");
}

static const struct cli_cmd *cli_find(const struct cli_cmd *cmds, const char *name)
{
	for (size_t i = 0; cmds[i].name; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

int cli_main(const struct cli_cmd *cmds, int argc, char **argv)
{
	static char prog[160];
	const char *base = strrchr(argv[0], '/');
	const struct cli_cmd *cmd;
	char name[64];

	base = base ? base + 1 : argv[0];
	/* the engine's lines: warnings and errors; more with -v (cli_verbosity_opt) */
	jg_log_set_sink(cli_log_sink, NULL);
	jg_log_set_level(cli_log_level());
	/* mkfs.jgrfs, fsck.jgrfs, mount.jgrfs: the names the ecosystem calls */
	if (!strcmp(base, "mkfs.jgrfs") || !strcmp(base, "fsck.jgrfs") ||
	    !strcmp(base, "mount.jgrfs")) {
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(base, "."), base);
		cmd = cli_find(cmds, name);
		if (!cmd)
			return fprintf(stderr, "%s: not built in this version\n", base), 8;
		cli_prog = base;
		argv[0] = (char *)base; /* getopt_long's messages: "fsck.jgrfs: invalid option" */
		return cmd->main(argc, argv);
	}

	if (argc < 2)
		return cli_usage_err(2, "no command given");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_usage(stdout, cmds);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("jgrfs 0.1.0\n");
		return 0;
	}
	/* two-word commands: "bench raid" */
	if (argc >= 3 && argv[2][0] != '-') {
		snprintf(name, sizeof(name), "%s %s", argv[1], argv[2]);
		cmd = cli_find(cmds, name);
		if (cmd) {
			snprintf(prog, sizeof(prog), "jgrfs %s", name);
			cli_prog = prog;
			argv[2] = prog;
			return cmd->main(argc - 2, argv + 2);
		}
	}
	cmd = cli_find(cmds, argv[1]);
	if (!cmd)
		return cli_usage_err(2, "unknown command '%s'", argv[1]);
	snprintf(prog, sizeof(prog), "jgrfs %s", cmd->name);
	cli_prog = prog;
	argv[1] = prog; /* getopt_long's messages: "jgrfs mount: invalid option -- 'z'" */
	return cmd->main(argc - 1, argv + 1);
}

const struct cli_member_hook *cli_member_hook;

/* ---------------------------------------------------------------- locks */

enum cli_lock cli_lock_mode = CLI_LOCK_EXCLUSIVE;
bool cli_lock_wait;

/* The files this process has locked, by identity: a second open of one reuses its lock. */
static struct cli_locked {
	dev_t dev;
	ino_t ino;
	int fd;
} cli_locked[2 * CLI_MAX_DEVICES];
static int cli_nlocked;

const char *cli_lock_holder(const char *path, char *buf, size_t len)
{
	char line[256], cmd[160] = "";
	struct stat st;
	long pid = 0;
	FILE *f;

	snprintf(buf, len, "another process");
	if (stat(path, &st))
		return buf;
	f = fopen("/proc/locks", "re");
	if (!f)
		return buf;
	/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->" first;
	 * the members' OFD marks (dev_uring.c (DU1)) name no process (pid -1) */
	while (!pid && fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		unsigned long long ino;
		long p;

		if (strstr(line, "->") || !strstr(line, " FLOCK "))
			continue;
		if (sscanf(line, "%*d: %*s %*s %*s %ld %x:%x:%llu", &p, &maj, &min, &ino) == 4 &&
		    maj == major(st.st_dev) && min == minor(st.st_dev) && ino == st.st_ino &&
		    p != getpid())
			pid = p;
	}
	fclose(f);
	if (pid <= 0)
		return buf;
	snprintf(line, sizeof(line), "/proc/%ld/cmdline", pid);
	f = fopen(line, "re");
	if (f) {
		size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);

		fclose(f);
		cmd[n] = '\0';
		for (size_t i = 0; n && i < n - 1; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		if (n == sizeof(cmd) - 1)
			strcpy(cmd + n - 4, "...");
	}
	snprintf(buf, len, cmd[0] ? "pid %ld (%s)" : "pid %ld", pid, cmd);
	return buf;
}

/* Lock @path as cli_lock_mode says, once per file per process. */
static int cli_lock_member(const char *path)
{
	int op = cli_lock_mode == CLI_LOCK_SHARED ? LOCK_SH : LOCK_EX;
	char who[200];
	struct stat st;
	int fd;

	if (cli_lock_mode == CLI_LOCK_NONE)
		return 0;
	/* an NBD export has no file here to lock; nothing stops a second client */
	if (raid_dev_is_nbd(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		return cli_err("%s: %s", path, strerror(-err)), err;
	}
	for (int i = 0; i < cli_nlocked; i++)
		if (cli_locked[i].dev == st.st_dev && cli_locked[i].ino == st.st_ino) {
			close(fd);
			return 0;
		}
	if (cli_nlocked == (int)(sizeof(cli_locked) / sizeof(cli_locked[0]))) {
		close(fd);
		return cli_err("%s: too many devices", path), -EMFILE;
	}
	if (flock(fd, op | LOCK_NB)) {
		int err = errno;

		if (err != EWOULDBLOCK) {
			close(fd);
			return cli_err("%s: cannot lock: %s", path, strerror(err)), -err;
		}
		cli_lock_holder(path, who, sizeof(who));
		if (!cli_lock_wait) {
			close(fd);
			return cli_err("%s: in use by %s; unmount it first (jgrfs umount "
				       "MOUNTPOINT), or give --wait",
				       path, who),
			       -EBUSY;
		}
		if (cli_verbosity >= 0)
			fprintf(stderr, "%s: %s: in use by %s; waiting\n", cli_prog, path, who);
		while (flock(fd, op))
			if (errno != EINTR) {
				err = errno;
				close(fd);
				return cli_err("%s: cannot lock: %s", path, strerror(err)), -err;
			}
	}
	cli_locked[cli_nlocked].dev = st.st_dev;
	cli_locked[cli_nlocked].ino = st.st_ino;
	cli_locked[cli_nlocked].fd = fd; /* held until exit */
	cli_nlocked++;
	return 0;
}

int cli_open_members(char **paths, int n, uint64_t create_bytes, struct blk_dev **devs)
{
	int rc = 0, i, locked;

	if (n <= 0 || n > CLI_MAX_DEVICES)
		return cli_err("between 1 and %d member devices, not %d", CLI_MAX_DEVICES, n), -EINVAL;
	for (i = 0; i < n; i++) {
		rc = raid_dev_open(paths[i], create_bytes / JG_BLOCK_SIZE, &devs[i]);
		if (rc) {
			cli_err("%s: cannot open member: %s", paths[i], strerror(-rc));
			break;
		}
		/* after the open, which creates a missing file; before any read or write */
		locked = cli_nlocked;
		rc = cli_lock_member(paths[i]);
		/* every other user gone: wait for what a killed one left in flight (DU1) */
		if (!rc && cli_nlocked > locked && cli_lock_mode == CLI_LOCK_EXCLUSIVE) {
			rc = blk_ctl(devs[i], BLK_CTL_DRAIN, NULL);
			if (rc == -ENOTTY)
				rc = 0;
			else if (rc)
				cli_err("%s: %s", paths[i], strerror(-rc));
		}
		if (rc) {
			blk_close(devs[i]);
			devs[i] = NULL;
			break;
		}
	}
	if (!rc && cli_member_hook)
		rc = cli_member_hook->wrap(devs, n);
	if (rc) {
		cli_close_members(devs, i);
		return rc;
	}
	return 0;
}

void cli_close_members(struct blk_dev **devs, int n)
{
	for (int i = 0; i < n; i++) {
		blk_close(devs[i]);
		devs[i] = NULL;
	}
	if (cli_member_hook)
		cli_member_hook->unwrap(n);
}

/* ------------------------------------------------------------ verbosity */

int cli_verbosity;
bool cli_progress_off;

int cli_log_level(void)
{
	return cli_verbosity < 0 ? JG_LOG_ERR
	       : cli_verbosity == 0 ? JG_LOG_NOTICE
	       : cli_verbosity == 1 ? JG_LOG_INFO
				    : JG_LOG_DEBUG;
}

int cli_verbosity_opt(int opt)
{
	if (opt == 'v')
		cli_verbosity = cli_verbosity < 0 ? 1 : cli_verbosity + 1;
	else if (opt == 'q')
		cli_verbosity = -1;
	else
		return 1;
	jg_log_set_level(cli_log_level());
	return 0;
}

/* ------------------------------------------------------------- progress */

/* The progress line on the terminal, if one is drawn: log lines erase it first. */
static struct cli_progress *cli_progress_shown;
static pthread_mutex_t cli_stderr_lock = PTHREAD_MUTEX_INITIALIZER;

static double cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Erase the progress line; cli_stderr_lock held. */
static void cli_progress_erase_locked(void)
{
	if (cli_progress_shown) {
		fputs("\r\033[K", stderr);
		cli_progress_shown = NULL;
	}
}

/* The engine's lines (jg_log) on stderr: "raid: warning: ...", over no progress line. */
static void cli_log_sink(void *ctx, int level, const char *subsys, const char *msg)
{
	static const char *const what[] = { "error: ", "warning: ", "", "", "" };

	(void)ctx;
	pthread_mutex_lock(&cli_stderr_lock);
	cli_progress_erase_locked();
	fprintf(stderr, "%s: %s%s\n", subsys, level >= 0 && level <= JG_LOG_DEBUG ? what[level] : "",
		msg);
	pthread_mutex_unlock(&cli_stderr_lock);
}

void cli_progress_start(struct cli_progress *p, const char *label, const char *unit,
			uint64_t unit_bytes)
{
	memset(p, 0, sizeof(*p));
	p->label = label;
	p->unit = unit;
	p->unit_bytes = unit_bytes;
	p->t0 = cli_now();
	p->tenth = 0; /* plain lines from 10% on: "0%" says nothing */
	p->tty = isatty(STDERR_FILENO);
	p->on = cli_verbosity >= 0 && !cli_progress_off;
}

/* "1:05" or "2:03:04" */
static void cli_hms(double s, char *buf, size_t len)
{
	unsigned long long t = s > 0 && s < 1e9 ? (unsigned long long)(s + 0.5) : 0;

	if (t >= 3600)
		snprintf(buf, len, "%llu:%02llu:%02llu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%llu:%02llu", t / 60, t % 60);
}

int cli_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct cli_progress *p = ctx;
	double now = cli_now(), el = now - p->t0;
	int pct = total ? (int)(done * 100 / total) : 100;
	char count[80] = "", rate[48] = "", eta[48] = "", b[32];

	if (!p->on)
		return 0;
	if (p->tty && done < total && now - p->drawn_at < 0.2)
		return 0;
	if (!p->tty && pct / 10 == p->tenth)
		return 0;
	if (el > 0.5 && done) {
		double per_s = (double)done / el;

		if (p->unit_bytes)
			snprintf(rate, sizeof(rate), "  %s/s",
				 cli_human_bytes((uint64_t)(per_s * (double)p->unit_bytes), b,
						 sizeof(b)));
		else if (p->unit)
			snprintf(rate, sizeof(rate), "  %.0f %s/s", per_s, p->unit);
		if (done < total) {
			cli_hms((double)(total - done) / per_s, b, sizeof(b));
			snprintf(eta, sizeof(eta), "  eta %s", b);
		}
	}
	if (p->unit)
		snprintf(count, sizeof(count), " (%llu/%llu %s)", (unsigned long long)done,
			 (unsigned long long)total, p->unit);
	pthread_mutex_lock(&cli_stderr_lock);
	if (p->tty) {
		fprintf(stderr, "\r\033[K%s: %3d%%%s%s%s", p->label, pct, count, rate, eta);
		cli_progress_shown = p;
		p->drawn_at = now;
	} else {
		p->tenth = pct / 10;
		fprintf(stderr, "%s: %d%%%s%s%s\n", p->label, pct, count, rate, eta);
	}
	fflush(stderr);
	pthread_mutex_unlock(&cli_stderr_lock);
	return 0;
}

void cli_progress_erase(void)
{
	pthread_mutex_lock(&cli_stderr_lock);
	cli_progress_erase_locked();
	fflush(stderr);
	pthread_mutex_unlock(&cli_stderr_lock);
}

void cli_progress_done(struct cli_progress *p)
{
	pthread_mutex_lock(&cli_stderr_lock);
	if (cli_progress_shown == p)
		cli_progress_erase_locked();
	fflush(stderr);
	pthread_mutex_unlock(&cli_stderr_lock);
	p->on = false;
}

uint64_t cli_row_bytes(const struct raid_info *info)
{
	unsigned int parity = info->level == 6 ? 2 : 1;

	return (uint64_t)info->chunk_blocks * JG_BLOCK_SIZE *
	       (info->nmembers > parity ? info->nmembers - parity : 0);
}

const char *cli_human_bytes(uint64_t bytes, char *buf, int len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, (size_t)len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

const struct option cli_raid_longopts[] = {
	{ "level", required_argument, NULL, 'l' },
	{ "chunk", required_argument, NULL, 'c' },
	{ "resync", required_argument, NULL, 'r' },
	{ "bitmap-region", required_argument, NULL, 'b' },
	{ "size", required_argument, NULL, 's' },
	{ "spare", required_argument, NULL, 'S' },
	{ "assume-clean", no_argument, NULL, CLI_OPT_ASSUME_CLEAN },
	{ NULL, 0, NULL, 0 },
};

void cli_raid_opts_init(struct cli_raid_opts *o, struct raid_create_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->level = 5;
	cfg->chunk_blocks = 16;
	cfg->resync = RAID_RESYNC_JOURNAL;
	cfg->bitmap_region_blocks = 16384;
	o->cfg = cfg;
	o->size_bytes = 0;
	o->nspares = 0;
}

static bool cli_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int cli_raid_opt(struct cli_raid_opts *o, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'l':
		if (cli_parse_u64(arg, 6, &v) || v < 4)
			return cli_err("--level %s: expected 4, 5 or 6", arg), -EINVAL;
		o->cfg->level = (unsigned int)v;
		return 0;
	case 'c':
		if (cli_parse_size(arg, &v) || v < JG_BLOCK_SIZE || v > (4u << 20) || !cli_pow2(v))
			return cli_err("--chunk %s: expected a power of two from 4K to 4M", arg),
			       -EINVAL;
		o->cfg->chunk_blocks = (uint32_t)(v / JG_BLOCK_SIZE);
		return 0;
	case 'r': {
		enum raid_resync_policy p;

		if (raid_resync_policy_parse(arg, &p))
			return cli_err("--resync %s: expected journal, bitmap, full or off", arg),
			       -EINVAL;
		o->cfg->resync = p;
		return 0;
	}
	case 'b':
		if (cli_parse_size(arg, &v) || v < JG_BLOCK_SIZE || !cli_pow2(v) ||
		    v / JG_BLOCK_SIZE > UINT32_MAX)
			return cli_err("--bitmap-region %s: expected a power of two of at least 4K",
				       arg), -EINVAL;
		o->cfg->bitmap_region_blocks = (uint32_t)(v / JG_BLOCK_SIZE);
		return 0;
	case 's':
		if (cli_parse_size(arg, &v) || v < 16 * JG_BLOCK_SIZE)
			return cli_err("--size %s: expected a size such as 1G (at least 64K)", arg),
			       -EINVAL;
		o->size_bytes = v - v % JG_BLOCK_SIZE;
		o->cfg->member_blocks = 0; /* probe_create: SIZE of each, once checked */
		return 0;
	case 'S':
		if (o->nspares == sizeof(o->spares) / sizeof(o->spares[0]))
			return cli_err("--spare %s: at most %zu spares", arg,
				       sizeof(o->spares) / sizeof(o->spares[0])),
			       -EINVAL;
		o->spares[o->nspares++] = (char *)arg; /* an argv string: lives on */
		return 0;
	case CLI_OPT_ASSUME_CLEAN:
		o->cfg->assume_clean = true;
		return 0;
	default:
		return 1;
	}
}
