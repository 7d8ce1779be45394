// SPDX-License-Identifier: MIT
/*
 * tools/cli/jgrfs.c - the jgrfs program: finds the subcommand and runs it.
 *
 *	jgrfs <command> [options] ...    jgrfs <command> --help for each
 *	mkfs.jgrfs ... = jgrfs mkfs ...  fsck.jgrfs ... = jgrfs fsck ...
 *
 * Each subcommand lives in tools/{cli,bench,crash}/cmd_<name>.c and is listed in cli_cmds[] below.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"

#ifdef JGRFS_JEMALLOC
/*
 * Linked with jemalloc (make release), which reads its options from this symbol
 * at start. thp:always backs its memory with transparent huge pages where the
 * system allows them (madvise): the journal's copy of every block written is a
 * fresh 4 KiB allocation, and with 4 KiB pages the daemon took a page fault for
 * most of them (106,000 for a 512 MiB write; 13,000 with huge pages, for a
 * third more throughput). MALLOC_CONF in the environment still applies on top.
 */
const char *malloc_conf = "thp:always,metadata_thp:auto";
#endif

static const struct cli_cmd cli_cmds[] = {
	/* the table: name, summary, entry point (tools/cli/cmds.h) */
	CLI_CMDS
	{ NULL, NULL, NULL },
};

static void jgrfs_usage(FILE *f)
{
	fprintf(f, "usage: jgrfs <command> [options] [args]\n\n"
		   "A filesystem on a software RAID5/6 array, with journal-guided resync.\n\n"
		   "commands:\n");
	for (size_t i = 0; cli_cmds[i].name; i++)
		fprintf(f, "  %-14s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
	fprintf(f, "\nRun 'jgrfs <command> --help' for the options of one command.\n");
}

static const struct cli_cmd *jgrfs_find(const char *name)
{
	for (size_t i = 0; cli_cmds[i].name; i++)
		if (!strcmp(cli_cmds[i].name, name))
			return &cli_cmds[i];
	return NULL;
}

int main(int argc, char **argv)
{
	static char prog[160];
	const char *base = strrchr(argv[0], '/');
	const struct cli_cmd *cmd;
	char name[64];

	base = base ? base + 1 : argv[0];
	/* mkfs.jgrfs, fsck.jgrfs: the names the ecosystem calls */
	if (!strcmp(base, "mkfs.jgrfs") || !strcmp(base, "fsck.jgrfs")) {
		snprintf(name, sizeof(name), "%.4s", base);
		cmd = jgrfs_find(name);
		if (!cmd)
			return fprintf(stderr, "%s: not built in this version\n", base), 8;
		cli_prog = base;
		return cmd->main(argc, argv);
	}

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		jgrfs_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("jgrfs 0.1.0\n");
		return 0;
	}
	/* two-word commands: "bench raid" */
	if (argc >= 3 && argv[2][0] != '-') {
		snprintf(name, sizeof(name), "%s %s", argv[1], argv[2]);
		cmd = jgrfs_find(name);
		if (cmd) {
			snprintf(prog, sizeof(prog), "jgrfs %s", name);
			cli_prog = prog;
			return cmd->main(argc - 2, argv + 2);
		}
	}
	cmd = jgrfs_find(argv[1]);
	if (!cmd) {
		fprintf(stderr, "jgrfs: unknown command '%s'\n\n", argv[1]);
		jgrfs_usage(stderr);
		return 2;
	}
	snprintf(prog, sizeof(prog), "jgrfs %s", cmd->name);
	cli_prog = prog;
	return cmd->main(argc - 1, argv + 1);
}
