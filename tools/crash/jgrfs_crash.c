// SPDX-License-Identifier: MIT
/*
 * tools/crash/jgrfs_crash.c - jgrfs-crash, the crash harness's program (built,
 * never installed): every command of jgrfs, plus crashtest, with faults under
 * the member devices switched on by its own options (tools/crash/faults.h).
 *
 *	jgrfs-crash [--powercut SPEC] [--badblocks LIST] [--opoints FILE] [--]
 *		    <command> [options] [args]
 *
 * The installed jgrfs has no fault injection at all: no option, no environment
 * variable; an inherited environment cannot make a daemon drop writes.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../cli/cli.h"
#include "../cli/cmds.h"
#include "crash_cmds.h"
#include "faults.h"

#ifdef JGRFS_JEMALLOC
const char *malloc_conf = "thp:always,metadata_thp:auto"; /* as tools/cli/jgrfs.c */
#endif

static const struct cli_cmd crash_cmds[] = {
	CRASH_CMDS
	CLI_CMDS
	{ NULL, NULL, NULL },
};

static void crash_usage(FILE *f)
{
	fprintf(f,
		"usage: jgrfs-crash [FAULTS] [--] <command> [options] [args]\n\n"
		"The crash harness's program (a test program, not installed): the commands of\n"
		"jgrfs and crashtest, with faults under the member devices that each open of\n"
		"the command makes (one fault domain per open).\n\n"
		"faults:\n"
		"  --powercut SPEC    SPEC: " CRASH_FAULTS_POWERCUT_SYNTAX "\n"
		"                     the power goes at member write N (flushes: write or flush\n"
		"                     N) or on SIGUSR1 (signal; foreground only); unflushed\n"
		"                     writes are kept (keep=P percent), dropped or torn (tear);\n"
		"                     linger=MS runs on MS ms with writes kept, dropped or torn\n"
		"                     at random; then the process kills itself (SIGKILL)\n"
		"  --badblocks LIST   LIST: I:B[,I:B...]: reads of member block B of the I-th\n"
		"                     member given (from 0) fail with EIO; writes work\n"
		"  --opoints FILE     at a power cut, append the ordering points in flight to\n"
		"                     FILE (a line \"opoints 0x<mask>\", for crashtest)\n"
		"  -h, --help         this text\n\n"
		"commands:\n");
	for (size_t i = 0; crash_cmds[i].name; i++)
		fprintf(f, "  %-14s %s\n", crash_cmds[i].name, crash_cmds[i].summary);
	fprintf(f, "\nRun 'jgrfs-crash <command> --help' for the options of one command.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "powercut", required_argument, NULL, 'p' },
		{ "badblocks", required_argument, NULL, 'b' },
		{ "opoints", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *powercut = NULL, *badblocks = NULL, *opoints = NULL;
	int opt;

	cli_prog = "jgrfs-crash";
	/* "+": the options end at the command, whose own options follow it */
	while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': powercut = optarg; break;
		case 'b': badblocks = optarg; break;
		case 'o': opoints = optarg; break;
		case 'h': crash_usage(stdout); return 0;
		default: fprintf(stderr, "Try 'jgrfs-crash --help'.\n"); return 2;
		}
	}
	if (optind >= argc) {
		crash_usage(stderr);
		return 2;
	}
	if (crash_faults_set(powercut, badblocks, opoints))
		return 2;
	cli_prog = "jgrfs";
	/* the command's name in argv[1], as jgrfs sees it */
	argv[optind - 1] = argv[0];
	argv += optind - 1;
	argc -= optind - 1;
	optind = 0;	/* the command's getopt starts afresh, in its own (GNU) order */
	return cli_main(crash_cmds, argc, argv);
}
