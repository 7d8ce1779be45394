// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_mkfs.c - `jgrfs mkfs` (also mkfs.jgrfs): create the array over the
 * member devices and a filesystem on it.
 *
 *	jgrfs mkfs [array options] [--force] [--journal-size SIZE] [--label L] DEV...
 *
 * raidcli_create() first checks everything (tools/cli/probe.h: what each member
 * holds, the member list, sizes, and that the array will hold the filesystem
 * asked for), so that a refusal writes nothing; then raid_create() writes the
 * member superblocks, raid_assemble() brings the new array up, fs_mkfs()
 * writes the filesystem on it (refusing an existing filesystem unless --force),
 * raid_stop() marks the array clean.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"

static const char cmd_mkfs_help[] =
	"usage: jgrfs mkfs [options] DEV...\n"
	"       mkfs.jgrfs [options] DEV...\n"
	"\n"
	"Create a RAID4/5/6 array over the member files or block devices DEV and a\n"
	"jgrfs filesystem on it (with its journal inside). Before writing anything it\n"
	"looks at every member: one of a jgrfs array, or holding a filesystem, RAID,\n"
	"LVM, swap or partition-table signature, is refused unless --force; so are\n"
	"members of unequal size unless --size, and one device named twice.\n"
	"\n"
	"options:\n"
	CLI_RAID_HELP
	"  -f, --force              overwrite what the members hold (each is named) and\n"
	"                           take members of unequal size (the smallest's size)\n"
	"  -J, --journal-size SIZE  journal size (default: 1/64 of the array, 16M to 1G;\n"
	"                           at least 8M: a small one checkpoints all the time)\n"
	"  -L, --label LABEL        filesystem label, up to 63 bytes\n"
	"  -i, --inode-ratio BYTES  bytes of space per inode (default 16K)\n"
	"      --data-checksums     keep a crc32c of every file data block, checked on\n"
	"                           every read (a damaged block is healed from parity or\n"
	"                           is EIO); mounts with data=declared or data=journal.\n"
	"                           The default with --resync journal\n"
	"      --no-data-checksums  without them: the default with --resync bitmap, full\n"
	"                           or off, whose data=ordered and data=writeback cannot\n"
	"                           keep them\n"
	RAIDCLI_COMMON_HELP
	"\n"
	"example:\n"
	"  jgrfs mkfs --size 1G -L data d0.img d1.img d2.img d3.img\n"
	"\n"
	"exit status: 0 created, 1 a device named twice, 2 bad options, refused, or\n"
	"the array or filesystem could not be created\n";

/* What the command line asks. */
struct mkfs_cmd {
	struct fs_mkfs_opts fo;
	struct raid_create_cfg cfg;
	struct cli_raid_opts ro;
	int data_csum;		/* -1: the default for the resync policy */
};

/* One option of mkfs's own (not the array's): 0 taken, 1 not ours, else the exit status. */
static int mkfs_opt(struct mkfs_cmd *mc, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'f':
		mc->fo.force = true;
		return 0;
	case 'J':
		/* fs_mkfs's floor: the largest handle fits a quarter of the log */
		if (cli_parse_size(arg, &v) || v / JG_BLOCK_SIZE < 2 * JNL_MIN_BLOCKS)
			return cli_usage_err(2, "bad journal size '%s' (at least %uK: %u blocks)", arg,
				       2 * JNL_MIN_BLOCKS * (JG_BLOCK_SIZE / 1024),
				       2 * JNL_MIN_BLOCKS);
		mc->fo.journal_blocks = v / JG_BLOCK_SIZE;
		return 0;
	case 'L':
		if (strlen(arg) > 63)
			return cli_usage_err(2, "label longer than 63 bytes");
		mc->fo.label = arg;
		return 0;
	case 'i':
		if (cli_parse_size(arg, &v) || v < 4096 || v > (1u << 30))
			return cli_usage_err(2, "bad inode ratio '%s' (4K to 1G)", arg);
		mc->fo.inode_ratio = (uint32_t)v;
		return 0;
	case CLI_OPT_DATA_CSUM:
	case CLI_OPT_NO_DATA_CSUM:
		mc->data_csum = opt == CLI_OPT_DATA_CSUM;
		return 0;
	default:
		return 1;
	}
}

/* Options into @mc: -1 to go on, else the exit status. */
static int mkfs_opts_parse(struct mkfs_cmd *mc, int argc, char **argv)
{
	static const struct option extra[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "journal-size", required_argument, NULL, 'J' },
		{ "label", required_argument, NULL, 'L' },
		{ "inode-ratio", required_argument, NULL, 'i' },
		{ "data-checksums", no_argument, NULL, CLI_OPT_DATA_CSUM },
		{ "no-data-checksums", no_argument, NULL, CLI_OPT_NO_DATA_CSUM },
		RAIDCLI_COMMON_LONGOPTS,
	};
	struct option longopts[32];
	int opt, rc;

	raidcli_longopts(longopts, 32, extra);
	cli_raid_opts_init(&mc->ro, &mc->cfg);
	mc->data_csum = -1;
	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, CLI_RAID_SHORTOPTS "fJ:L:i:h" CLI_VERBOSITY_SHORTOPTS,
				     longopts, cmd_mkfs_help)) != -1) {
		if (opt == RAIDCLI_OPT_HELP)
			return 0;
		rc = mkfs_opt(mc, opt, optarg);
		if (rc == 0)
			continue;
		if (rc != 1)
			return rc;
		rc = cli_raid_opt(&mc->ro, opt, optarg);
		if (rc) /* cli_raid_opt() said what is wrong, or getopt_long did */
			return cli_usage_err(2, NULL);
	}
	/*
	 * Data checksums by default where the mount's default, data=declared, keeps
	 * them consistent after a crash: on an array made for journal-guided
	 * resync. The other policies are there for data=ordered and writeback,
	 * which a volume with checksums refuses (docs/design/checksums.md, "Data checksums").
	 */
	mc->fo.data_csum = mc->data_csum >= 0 ? mc->data_csum : mc->cfg.resync == RAID_RESYNC_JOURNAL;
	return -1;
}

/* The filesystem on the new array, then what a mount will see of it. 0 or -errno. */
static int mkfs_write_fs(struct mkfs_cmd *mc, struct raid_array *a)
{
	struct fs_mount_opts mo = { .readonly = true, .no_commit_thread = true };
	struct cli_progress prog;
	struct fs_statfs st;
	struct fs_info fi;
	struct fs *fs;
	char hb[32];
	int rc;

	/* the journal (the checksum region is the mounted volume's: dcsum.c (D3)) */
	cli_progress_start(&prog, "mkfs: journal", NULL, JG_BLOCK_SIZE);
	mc->fo.progress = cli_progress;
	mc->fo.progress_ctx = &prog;
	rc = fs_mkfs(raid_array_dev(a), &mc->fo);
	cli_progress_done(&prog);
	if (rc == -EEXIST)
		cli_err("the array holds a jgrfs filesystem; use --force to overwrite it");
	else if (rc)
		cli_err("cannot write the filesystem: %s", strerror(-rc));
	if (rc)
		return rc;
	/* report what a mount will see */
	if (!fs_mount(raid_array_dev(a), &mo, &fs)) {
		fs_statfs(fs, &st);
		fs_info_get(fs, &fi);
		printf("jgrfs filesystem: %s, %llu blocks of 4 KiB, %llu inodes, data checksums %s%s%s\n",
		       cli_human_bytes(st.blocks * st.block_size, hb, sizeof(hb)),
		       (unsigned long long)st.blocks, (unsigned long long)st.inodes,
		       fi.data_csum ? "on" : "off",
		       mc->fo.label ? ", label " : "", mc->fo.label ? mc->fo.label : "");
		fs_unmount(fs);
	}
	return 0;
}

int cmd_mkfs(int argc, char **argv)
{
	struct mkfs_cmd mc = { 0 };
	struct raidcli_array ra = { .quiet = true };
	int rc, rc2;

	rc = mkfs_opts_parse(&mc, argc, argv);
	if (rc >= 0)
		return rc;
	ra.paths = argv + optind;
	ra.n = argc - optind;
	if (ra.n < 1)
		return cli_usage_err(2, "no member devices given");
	rc = raidcli_create(ra.paths, ra.n, &mc.ro, mc.fo.force, &mc.fo, ra.devs);
	if (rc)
		return rc;
	rc = raidcli_open_assemble(&ra);
	if (rc) {
		cli_err("array created, but it does not assemble: %s", raidcli_assemble_why(rc));
		return 2;
	}
	rc = mkfs_write_fs(&mc, ra.a);
	rc2 = raidcli_close(&ra);
	if (rc2 && !rc) {
		cli_err("stopping the array failed: %s", strerror(-rc2));
		rc = rc2;
	}
	return rc ? 2 : 0;
}
