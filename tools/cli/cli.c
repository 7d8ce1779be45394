// SPDX-License-Identifier: MIT
/*
 * tools/cli/cli.c - helpers shared by the subcommands (tools/cli/cli.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The fault domain made from JGRFS_POWERCUT, shared by the members of one open. */
static struct raid_fault_domain *cli_domain;
static bool cli_powercut_signal;	/* cut on SIGUSR1 rather than (or before) write N */
static struct blk_dev *cli_lower[64];

/*
 * The power cut of JGRFS_POWERCUT: the process dies at once, as a machine does,
 * so nothing it does after the cut (acknowledging an fsync) can be seen.
 */
static unsigned int cli_powercut_linger_ms;	/* linger=MS: die this much later */

static void *cli_powercut_later(void *arg)
{
	(void)arg;
	usleep(cli_powercut_linger_ms * 1000u);
	kill(getpid(), SIGKILL);
	return NULL;
}

/*
 * JGRFS_OPOINTS=FILE: append the ordering points in flight at the cut to FILE,
 * one line "opoints 0x<mask>" (tools/crash/opcov.h), for the crash harness's coverage
 * table. Called with the domain lock held: touches no device.
 */
static void cli_powercut_record(void)
{
	const char *path = getenv("JGRFS_OPOINTS");
	int fd;

	if (!path || !*path || !cli_domain)
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	dprintf(fd, "opoints 0x%llx\n", (unsigned long long)raid_fault_domain_cut_points(cli_domain));
	close(fd);
}

static void cli_powercut_die(void *arg)
{
	pthread_t t;

	(void)arg;
	cli_powercut_record();
	if (!cli_powercut_linger_ms || pthread_create(&t, NULL, cli_powercut_later, NULL))
		kill(getpid(), SIGKILL);
}

static int cli_parse_powercut(const char *spec, struct raid_fault_cfg *cfg)
{
	char buf[256], *save = NULL;

	memset(cfg, 0, sizeof(*cfg));
	cfg->keep_percent = 50;
	cfg->on_cut = cli_powercut_die;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (!strncmp(tok, "after=", 6) && !cli_parse_u64(tok + 6, UINT64_MAX, &v))
			cfg->cut_after_writes = v;
		else if (!strncmp(tok, "seed=", 5) && !cli_parse_u64(tok + 5, UINT64_MAX, &v))
			cfg->seed = v;
		else if (!strncmp(tok, "keep=", 5) && !cli_parse_u64(tok + 5, 100, &v))
			cfg->keep_percent = (unsigned int)v;
		else if (!strcmp(tok, "tear"))
			cfg->tear = true;
		else if (!strcmp(tok, "flushes"))
			cfg->cut_at_flushes = true;
		else if (!strcmp(tok, "signal"))
			cli_powercut_signal = true;
		else if (!strncmp(tok, "linger=", 7) && !cli_parse_u64(tok + 7, 60000, &v)) {
			cli_powercut_linger_ms = (unsigned int)v;
			cfg->chaos_after_cut = v > 0;
		}
		else
			return -EINVAL;
	}
	return cfg->cut_after_writes || cli_powercut_signal ? 0 : -EINVAL;
}

/* Waits for SIGUSR1 (blocked in every other thread) and cuts the power. */
static void *cli_powercut_waiter(void *arg)
{
	sigset_t set;
	int sig;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	for (;;) {
		if (sigwait(&set, &sig) == 0 && sig == SIGUSR1 && cli_domain) {
			raid_fault_domain_cut(cli_domain); /* kills the process */
			return NULL;
		}
	}
}

/*
 * Block SIGUSR1 here, before the daemon starts its threads (they inherit the
 * mask), so that only the waiter receives it: the cut takes the domain lock,
 * which a signal handler could not do safely.
 */
static int cli_powercut_arm(void)
{
	static pthread_t waiter;
	sigset_t set;
	int rc;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (rc)
		return -rc;
	rc = pthread_create(&waiter, NULL, cli_powercut_waiter, NULL);
	if (rc)
		return -rc;
	pthread_detach(waiter);
	return 0;
}

/*
 * JGRFS_BADBLOCKS="I:B[,I:B...]": reads of member block B of the I-th member
 * given (0-based) fail with -EIO, writes work (tests of unreadable blocks
 * through the real daemon). Returns -EINVAL when the list is bad.
 */
static int cli_badblocks(const char *spec, struct blk_dev **devs, int n)
{
	char buf[1024], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		uint64_t i, b;

		if (!colon)
			return -EINVAL;
		*colon = '\0';
		if (cli_parse_u64(tok, (uint64_t)n - 1, &i) || cli_parse_u64(colon + 1, UINT64_MAX, &b) ||
		    raid_dev_fault_fail_block(devs[i], b, true, false))
			return -EINVAL;
	}
	return 0;
}

int cli_open_members(char **paths, int n, uint64_t create_bytes, struct blk_dev **devs)
{
	const char *spec = getenv("JGRFS_POWERCUT"), *bad = getenv("JGRFS_BADBLOCKS");
	struct raid_fault_cfg fcfg;
	int rc = 0, i;

	if (n <= 0 || n > 64)
		return cli_err("between 1 and 64 member devices, not %d", n), -EINVAL;
	if (spec && *spec) {
		if (cli_parse_powercut(spec, &fcfg))
			return cli_err("JGRFS_POWERCUT=%s: expected after=N|signal[,seed=S][,keep=P][,tear][,flushes][,linger=MS]",
				       spec), -EINVAL;
		rc = raid_fault_domain_new(&fcfg, &cli_domain);
		if (rc)
			return rc;
		if (cli_powercut_signal) {
			rc = cli_powercut_arm();
			if (rc)
				return cli_err("JGRFS_POWERCUT: cannot start the signal waiter: %s",
					       strerror(-rc)), rc;
		}
	}
	if (bad && *bad && !cli_domain) {
		memset(&fcfg, 0, sizeof(fcfg)); /* a domain whose power is never cut */
		rc = raid_fault_domain_new(&fcfg, &cli_domain);
		if (rc)
			return rc;
	}
	for (i = 0; i < n; i++) {
		rc = raid_dev_uring_open(paths[i], create_bytes / JG_BLOCK_SIZE, &devs[i]);
		if (rc) {
			cli_err("%s: cannot open member: %s", paths[i], strerror(-rc));
			break;
		}
		if (cli_domain) {
			cli_lower[i] = devs[i];
			rc = raid_dev_fault_open(cli_domain, cli_lower[i], &devs[i]);
			if (rc) {
				blk_close(cli_lower[i]);
				break;
			}
		}
	}
	if (!rc && bad && *bad && cli_badblocks(bad, devs, n)) {
		cli_err("JGRFS_BADBLOCKS=%s: expected MEMBER_INDEX:MEMBER_BLOCK[,...]", bad);
		rc = -EINVAL;
	}
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
		if (cli_domain) {
			blk_close(cli_lower[i]);
			cli_lower[i] = NULL;
		}
	}
	if (cli_domain) {
		raid_fault_domain_free(cli_domain);
		cli_domain = NULL;
	}
}

int cli_progress(void *label, uint64_t done, uint64_t total)
{
	static int last_decile = -1;
	int pct = total ? (int)(done * 100 / total) : 100;

	if (isatty(STDERR_FILENO)) {
		fprintf(stderr, "\r%s: %3d%% (%llu/%llu)", (const char *)label, pct,
			(unsigned long long)done, (unsigned long long)total);
		fflush(stderr);
	} else if (pct / 10 != last_decile) {
		last_decile = pct / 10;
		fprintf(stderr, "%s: %d%% (%llu/%llu)\n", (const char *)label, pct,
			(unsigned long long)done, (unsigned long long)total);
	}
	return 0;
}

void cli_progress_done(void *label)
{
	(void)label;
	if (isatty(STDERR_FILENO))
		fputc('\n', stderr);
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
		o->cfg->member_blocks = 0; /* the array uses what the members have */
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
