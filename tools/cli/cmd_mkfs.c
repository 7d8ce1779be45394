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
	"  -v, --verbose            also the engine's own lines; -vv: everything\n"
	"  -q, --quiet              errors only: no warnings, no progress\n"
	"      --wait               when a member is in use by another jgrfs process\n"
	"                           (a mount being stopped, an fsck), wait for it\n"
	"  -h, --help               this text\n"
	"\n"
	"example:\n"
	"  jgrfs mkfs --size 1G -L data d0.img d1.img d2.img d3.img\n"
	"\n"
	"exit status: 0 created, 1 a device named twice, 2 bad options, refused, or\n"
	"the array or filesystem could not be created\n";

int cmd_mkfs(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "journal-size", required_argument, NULL, 'J' },
		{ "label", required_argument, NULL, 'L' },
		{ "inode-ratio", required_argument, NULL, 'i' },
		{ "data-checksums", no_argument, NULL, CLI_OPT_DATA_CSUM },
		{ "no-data-checksums", no_argument, NULL, CLI_OPT_NO_DATA_CSUM },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERBOSITY_LONGOPTS,
		CLI_WAIT_LONGOPT,
		{ NULL, 0, NULL, 0 },
	};
	struct fs_mkfs_opts fo = { 0 };
	struct raid_assemble_cfg acfg = { 0 };
	struct cli_progress prog;
	struct blk_dev *devs[RAIDCLI_MAX_MEMBERS];
	struct option longopts[32];
	struct raid_create_cfg cfg;
	struct cli_raid_opts ro;
	struct raid_array *a = NULL;
	struct fs_statfs st;
	int data_csum = -1;	/* -1: the default for the resync policy */
	uint64_t v;
	char hb[32];
	int opt, n, rc;

	raidcli_longopts(longopts, 32, extra);
	cli_raid_opts_init(&ro, &cfg);
	optind = 1;
	while ((opt = getopt_long(argc, argv, CLI_RAID_SHORTOPTS "fJ:L:i:h" CLI_VERBOSITY_SHORTOPTS,
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			fo.force = true;
			break;
		case 'J':
			/* fs_mkfs's floor: the largest handle fits a quarter of the log */
			if (cli_parse_size(optarg, &v) || v / JG_BLOCK_SIZE < 2 * JNL_MIN_BLOCKS)
				return cli_usage_err(2, "bad journal size '%s' (at least %uK: %u blocks)", optarg,
					       2 * JNL_MIN_BLOCKS * (JG_BLOCK_SIZE / 1024),
					       2 * JNL_MIN_BLOCKS);
			fo.journal_blocks = v / JG_BLOCK_SIZE;
			break;
		case 'L':
			if (strlen(optarg) > 63)
				return cli_usage_err(2, "label longer than 63 bytes");
			fo.label = optarg;
			break;
		case 'i':
			if (cli_parse_size(optarg, &v) || v < 4096 || v > (1u << 30))
				return cli_usage_err(2, "bad inode ratio '%s' (4K to 1G)", optarg);
			fo.inode_ratio = (uint32_t)v;
			break;
		case CLI_OPT_DATA_CSUM:
		case CLI_OPT_NO_DATA_CSUM:
			data_csum = opt == CLI_OPT_DATA_CSUM;
			break;
		case 'h':
			fputs(cmd_mkfs_help, stdout);
			return 0;
		case 'v':
		case 'q':
			cli_verbosity_opt(opt);
			break;
		case CLI_OPT_WAIT:
			cli_lock_wait = true;
			break;
		default:
			rc = cli_raid_opt(&ro, opt, optarg);
			if (rc) /* cli_raid_opt() said what is wrong, or getopt_long did */
				return cli_usage_err(2, NULL);
		}
	}
	/*
	 * Data checksums by default where the mount's default, data=declared, keeps
	 * them consistent after a crash: on an array made for journal-guided
	 * resync. The other policies are there for data=ordered and writeback,
	 * which a volume with checksums refuses (docs/DESIGN.md, "Data checksums").
	 */
	fo.data_csum = data_csum >= 0 ? data_csum : cfg.resync == RAID_RESYNC_JOURNAL;
	n = argc - optind;
	if (n < 1)
		return cli_usage_err(2, "no member devices given");
	rc = raidcli_create(argv + optind, n, &ro, fo.force, &fo, devs);
	if (rc)
		return rc;
	rc = raid_assemble(devs, (unsigned int)n, &acfg, &a);
	if (rc) {
		cli_err("array created, but it does not assemble: %s", raidcli_assemble_why(rc));
		cli_close_members(devs, n);
		return 2;
	}
	/* the journal (the checksum region is the mounted volume's: dcsum.c (D3)) */
	cli_progress_start(&prog, "mkfs: journal", NULL, JG_BLOCK_SIZE);
	fo.progress = cli_progress;
	fo.progress_ctx = &prog;
	rc = fs_mkfs(raid_array_dev(a), &fo);
	cli_progress_done(&prog);
	if (rc == -EEXIST)
		cli_err("the array holds a jgrfs filesystem; use --force to overwrite it");
	else if (rc)
		cli_err("cannot write the filesystem: %s", strerror(-rc));
	if (!rc) {
		struct fs_mount_opts mo = { .readonly = true, .no_commit_thread = true };
		struct fs_info fi;
		struct fs *fs;

		/* report what a mount will see */
		if (!fs_mount(raid_array_dev(a), &mo, &fs)) {
			fs_statfs(fs, &st);
			fs_info_get(fs, &fi);
			printf("jgrfs filesystem: %s, %llu blocks of 4 KiB, %llu inodes, data checksums %s%s%s\n",
			       cli_human_bytes(st.blocks * st.block_size, hb, sizeof(hb)),
			       (unsigned long long)st.blocks, (unsigned long long)st.inodes,
			       fi.data_csum ? "on" : "off",
			       fo.label ? ", label " : "", fo.label ? fo.label : "");
			fs_unmount(fs);
		}
	}
	{
		int rc2 = raidcli_stop(a, devs, n);

		if (rc2 && !rc) {
			cli_err("stopping the array failed: %s", strerror(-rc2));
			rc = rc2;
		}
	}
	return rc ? 2 : 0;
}
