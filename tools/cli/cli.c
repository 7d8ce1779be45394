// SPDX-License-Identifier: MIT
/*
 * tools/cli/cli.c - the dispatcher of jgrfs and jgrfs-crash (cli_main) and the
 * helpers shared by the subcommands (tools/cli/cli.h).
 */
#include <errno.h>
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

static void cli_usage(FILE *f, const struct cli_cmd *cmds)
{
	fprintf(f, "usage: jgrfs <command> [options] [args]\n\n"
		   "A filesystem on a software RAID5/6 array, with journal-guided resync.\n\n"
		   "commands:\n");
	for (size_t i = 0; cmds[i].name; i++)
		fprintf(f, "  %-14s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nRun 'jgrfs <command> --help' for the options of one command.\n");
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
	/* mkfs.jgrfs, fsck.jgrfs: the names the ecosystem calls */
	if (!strcmp(base, "mkfs.jgrfs") || !strcmp(base, "fsck.jgrfs")) {
		snprintf(name, sizeof(name), "%.4s", base);
		cmd = cli_find(cmds, name);
		if (!cmd)
			return fprintf(stderr, "%s: not built in this version\n", base), 8;
		cli_prog = base;
		return cmd->main(argc, argv);
	}

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_usage(argc < 2 ? stderr : stdout, cmds);
		return argc < 2 ? 2 : 0;
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
			return cmd->main(argc - 2, argv + 2);
		}
	}
	cmd = cli_find(cmds, argv[1]);
	if (!cmd) {
		fprintf(stderr, "jgrfs: unknown command '%s'\n\n", argv[1]);
		cli_usage(stderr, cmds);
		return 2;
	}
	snprintf(prog, sizeof(prog), "jgrfs %s", cmd->name);
	cli_prog = prog;
	return cmd->main(argc - 1, argv + 1);
}

const struct cli_member_hook *cli_member_hook;

int cli_open_members(char **paths, int n, uint64_t create_bytes, struct blk_dev **devs)
{
	int rc = 0, i;

	if (n <= 0 || n > CLI_MAX_DEVICES)
		return cli_err("between 1 and %d member devices, not %d", CLI_MAX_DEVICES, n), -EINVAL;
	for (i = 0; i < n; i++) {
		rc = raid_dev_uring_open(paths[i], create_bytes / JG_BLOCK_SIZE, &devs[i]);
		if (rc) {
			cli_err("%s: cannot open member: %s", paths[i], strerror(-rc));
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
