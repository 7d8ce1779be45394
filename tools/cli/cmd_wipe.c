// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_wipe.c - `jgrfs wipe`: remove the jgrfs member superblocks of
 * devices no array should assemble again (mdadm --zero-superblock).
 *
 *	jgrfs wipe [--dry-run] [--force] DEV...
 *
 * Only a block that holds a jgrfs member superblock (either copy, blocks 0 and
 * 1, found by its magic, damaged or not) is written, with zeros; whatever else
 * the device holds is left alone. A
 * device is opened as a writing command opens a member (cli_open_members): a
 * member of a mounted volume, or of an array another jgrfs process has open,
 * is locked, and refused. Every device is opened and locked before the first
 * is written, so a refusal writes nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "jgrfs/raid.h"
#include "../../src/raid/raid_format.h"

static const char cmd_wipe_help[] =
	"usage: jgrfs wipe [options] DEV...\n"
	"\n"
	"Remove the jgrfs member superblocks (both copies) from each DEV, a file, block\n"
	"device or NBD URI, so that no array assembles it again and mkfs, create,\n"
	"replace and spare add take it without --force (mdadm --zero-superblock).\n"
	"Only a block that holds a jgrfs superblock is written; anything else on DEV\n"
	"is left as it is. A member of a mounted volume, or of an array another\n"
	"jgrfs command has open, is refused; so is every DEV then: nothing is wiped.\n"
	"\n"
	"options:\n"
	"  -n, --dry-run            say what would be wiped, write nothing\n"
	"  -f, --force              wipe an NBD export too (whether another machine\n"
	"                           uses it cannot be seen from here)\n"
	"  -v, --verbose            also the engine's own lines; -vv: everything\n"
	"  -q, --quiet              errors only\n"
	"      --wait               when a member is in use by another jgrfs process\n"
	"                           (a mount being stopped, an fsck), wait for it\n"
	"  -h, --help               this text\n"
	"\n"
	"exit status: 0 wiped, or nothing to wipe; 2 bad options, refused, or a\n"
	"write failed\n";

/* The blocks of @dev that hold a jgrfs superblock, as a mask of copies; -errno unreadable. */
static int wipe_find(struct blk_dev *dev, uint8_t *blk, char *what, size_t len)
{
	int mask = 0;

	what[0] = '\0';
	for (uint64_t c = RAID_SB_BLKNO; c <= RAID_SB_COPY_BLKNO && c < dev->nblocks; c++) {
		const struct raid_sb *sb = (const struct raid_sb *)blk;
		int rc = blk_rw(dev, BLK_OP_READ, c, 1, blk, 0);
		char u[37];

		if (rc)
			return rc;
		if (jg_le32(sb->hdr.magic) != RAID_SB_MAGIC)
			continue;
		mask |= 1 << c;
		if (what[0])
			continue;
		jg_uuid_format(sb->uuid, u);
		if (jg_le32(sb->role) == RAID_ROLE_SPARE)
			snprintf(what, len, "a hot spare of array %s", u);
		else
			snprintf(what, len, "member %u of %u of array %s", jg_le32(sb->role),
				 jg_le32(sb->nmembers), u);
	}
	return mask;
}

/* Zero the copies in @mask and flush. 0 or -errno. */
static int wipe_dev(struct blk_dev *dev, int mask, uint8_t *blk)
{
	int rc = 0;

	memset(blk, 0, JG_BLOCK_SIZE);
	for (uint64_t c = RAID_SB_BLKNO; c <= RAID_SB_COPY_BLKNO && !rc; c++)
		if (mask & (1 << c))
			rc = blk_rw(dev, BLK_OP_WRITE, c, 1, blk, 0);
	return rc ? rc : blk_flush(dev);
}

int cmd_wipe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		RAIDCLI_COMMON_LONGOPTS,
	};
	struct raidcli_array ra = { 0 };
	bool dry = false, force = false;
	uint8_t *blk;
	char what[128];
	int opt, n, ret = 0;

	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, "nfh" CLI_VERBOSITY_SHORTOPTS, longopts,
				     cmd_wipe_help)) != -1) {
		switch (opt) {
		case RAIDCLI_OPT_HELP:
			return 0;
		case 'n':
			dry = true;
			break;
		case 'f':
			force = true;
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	n = argc - optind;
	if (n < 1) {
		return cli_usage_err(2, "no devices given");
	}
	if (n > CLI_MAX_DEVICES)
		return cli_err("at most %d devices, not %d", CLI_MAX_DEVICES, n);
	for (int i = 0; i < n; i++)
		if (raid_dev_is_nbd(argv[optind + i]) && !force)
			return cli_err("%s: an NBD export may be a member of an array mounted on "
				       "another machine, which cannot be seen from here; give "
				       "--force to wipe it", argv[optind + i]), 2;
	/* the lock of a writer: refused while a volume or a command has the member */
	ra.lock = dry ? CLI_LOCK_SHARED : CLI_LOCK_EXCLUSIVE;
	ra.paths = argv + optind;
	ra.n = n;
	if (raidcli_open_members(&ra))
		return 2;
	blk = jg_alloc_blocks(1);
	for (int i = 0; i < n && blk; i++) {
		const char *p = argv[optind + i];
		int mask = wipe_find(ra.devs[i], blk, what, sizeof(what)), rc;

		if (mask < 0) {
			ret = cli_err("%s: cannot read its first blocks: %s", p, strerror(-mask)) + 1;
			continue;
		}
		if (!mask) {
			if (cli_verbosity >= 0)
				printf("%s: no jgrfs superblock: nothing wiped\n", p);
			continue;
		}
		rc = dry ? 0 : wipe_dev(ra.devs[i], mask, blk);
		if (rc) {
			ret = cli_err("%s: wiping its superblock failed: %s", p, strerror(-rc)) + 1;
			continue;
		}
		printf("%s: %s the jgrfs superblock (%s, %s)\n", p, dry ? "would wipe" : "wiped",
		       what, mask == 3 ? "both copies" : mask == 1 ? "copy 0" : "copy 1");
	}
	if (!blk)
		ret = cli_err("out of memory") + 1;
	free(blk);
	cli_close_members(ra.devs, n);
	return ret;
}
