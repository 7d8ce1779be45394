// SPDX-License-Identifier: MIT
/*
 * tools/cli/jgrfs.c - the jgrfs program: finds the subcommand and runs it.
 *
 *	jgrfs <command> [options] ...    jgrfs <command> --help for each
 *	mkfs.jgrfs ... = jgrfs mkfs ...  fsck.jgrfs ... = jgrfs fsck ...
 *
 * Each subcommand lives in tools/cli/cmd_<name>.c (a benchmark in tools/bench/)
 * and is listed in CLI_CMDS (tools/cli/cmds.h). The crash harness and its fault
 * injection are not here: they are the test program jgrfs-crash (tools/crash/).
 */
#include "cli.h"
#include "cmds.h"

#ifdef JGRFS_JEMALLOC
/*
 * Linked with jemalloc (make release), which reads its options from this symbol
 * at start. thp:always backs its memory with transparent huge pages where the
 * system allows them (madvise): the journal's copy of every block written is a
 * fresh 4 KiB allocation, and with 4 KiB pages the daemon took a page fault for
 * most of them (106,000 for a 512 MiB write; 13,000 with huge pages, for a
 * third more throughput). narenas:1: those copies are made by the FUSE threads
 * and freed by the commit thread; with jemalloc's default of four arenas per
 * CPU each arena kept the pages freed into it for the next allocation of its
 * own threads, and a 512 MiB write left 105-116 MiB resident beyond what was
 * allocated (one arena: 46-48 MiB; the daemon's peak 173-185 MB against
 * 108-118, and a sixth of the page faults; docs/design/memory.md). MALLOC_CONF
 * in the environment still applies on top.
 */
const char *malloc_conf = "thp:always,metadata_thp:auto,narenas:1";
#endif

static const struct cli_cmd cli_cmds[] = {
	/* the table: name, summary, entry point (tools/cli/cmds.h) */
	CLI_CMDS
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	return cli_main(cli_cmds, argc, argv);
}
