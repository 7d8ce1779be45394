// SPDX-License-Identifier: MIT
/*
 * tools/cli/cmd_examine.c - `jgrfs examine`: show what the member superblocks say
 * (mdadm --examine), without changing anything.
 *
 *	jgrfs examine [--json] DEV...
 *	jgrfs examine [--json] UUID=<uuid>       (the members found: scan.h)
 *	jgrfs examine --scan                     (every array found: scan.h)
 *
 * raid.h has no call that reads one member's superblock on its own, so the
 * members given are first assembled together with readonly and no_resync: the
 * engine verifies every superblock (magic, crc, version, home address, UUID,
 * roles, events) and writes nothing, and raid_info_get() reports the array and
 * each role. Per device, the tool then shows what its own superblock says
 * (role, event count, state, data offset: src/raid/raid_format.h, which tools
 * may read), verified again with jg_blk_check() against the array's UUID.
 *
 * When the devices do not assemble (one member of a larger array, or members
 * of different arrays), each superblock is verified on its own (seeded with the
 * UUID it names) and shown, as mdadm --examine does; a device whose superblock
 * does not verify - foreign, damaged, never a member - makes the exit status 2.
 *
 * A member holds two superblock copies (blocks 0 and 1, FORMAT.md §2.2, with
 * SB_COPY): both are verified and listed; the one shown is the newer valid one,
 * as assembly takes it. One damaged copy is reported, not an error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "raidcli.h"
#include "scan.h"
#include "jgrfs/raid.h"
#include "../../src/raid/raid_format.h"

static const char cmd_examine_help[] =
	"usage: jgrfs examine [--json] DEV...\n"
	"       jgrfs examine [--json] [--config FILE] UUID=<uuid>\n"
	"       jgrfs examine --scan [--config FILE]\n"
	"\n"
	"Show the superblocks of the members DEV of one array: UUID, level, role of\n"
	"each device, chunk, sizes, event count, clean/dirty state, resync policy,\n"
	"bitmap geometry and dirty regions, failed members and whether a\n"
	"filesystem-guided (journal) resync is pending. Nothing is written: the\n"
	"members are assembled read-only and without the recovery resync. When they\n"
	"do not assemble (say, one member of a larger array), each device's own\n"
	"superblock is verified and shown.\n"
	"UUID=<uuid> examines the members and spares of that array found among the\n"
	"block devices and the files of the config file; --scan lists every array\n"
	"found there, one line each: UUID, level, roles found of how many, spares\n"
	"and devices.\n"
	"\n"
	"options:\n"
	"  -j, --json               one JSON object on stdout\n"
	"  -s, --scan               list the arrays on the block devices and in the\n"
	"                           config file\n"
	"      --config FILE        the config file (default $JGRFS_CONF, else\n"
	"                           /etc/jgrfs.conf): ARRAY UUID=<uuid> DEVICES=PATH,...\n"
	"  -v, --verbose            also the engine's own lines; -vv: everything\n"
	"  -q, --quiet              errors only: no warnings, no progress\n"
	"  -h, --help               this text\n"
	"\n"
	"examples:\n"
	"  jgrfs examine d0.img d1.img d2.img d3.img\n"
	"  jgrfs examine --json /dev/sd[b-e]\n"
	"  jgrfs examine --scan\n"
	"\n"
	"exit status: 0 shown, 2 bad options, a device is not a jgrfs member, its\n"
	"superblock is damaged, or it cannot be read; no array of UUID=, or (--scan)\n"
	"none at all, found\n";

/* One device given on the command line and its superblock as read. */
struct examine_dev {
	const char *path;
	uint8_t *blk;		/* member blocks RAID_SB_BLKNO, RAID_SB_COPY_BLKNO */
	int rc;			/* 0: read and verified; else why not (-errno) */
	unsigned int copies;	/* superblock copies the format has: 1 or 2 */
	int copy_rc[2];		/* per copy: 0 verified, else why not */
	unsigned int use;	/* the copy shown: the newer valid one */
	uint8_t *bm;		/* its bitmap blocks, from RAID_BITMAP_FIRST() */
	uint32_t bm_blocks;	/* read into bm */
	uint64_t bm_dirty;	/* set bits; a block that does not verify counts all dirty */
	uint32_t bm_bad;	/* bitmap blocks that did not verify */
};

#define EXAMINE_OPT_CONFIG 0x120 /* --config FILE: no short form */

/* Bitmap blocks read per device at most (16 MiB, a 32 TiB array at 64 MiB regions). */
#define EXAMINE_MAX_BITMAP_BLOCKS 4096u

static const struct raid_sb *cmd_examine_copy(const struct examine_dev *d, unsigned int c)
{
	return (const struct raid_sb *)(d->blk + (size_t)c * JG_BLOCK_SIZE);
}

static const struct raid_sb *cmd_examine_sb(const struct examine_dev *d)
{
	return cmd_examine_copy(d, d->use);
}

/*
 * Count the dirty regions in @d's bitmap blocks, each verified (magic, crc,
 * version, home address) as the engine does at assembly; like the engine, a
 * block that does not verify counts all its regions dirty. @d->rc must be 0.
 */
static void cmd_examine_bitmap(struct examine_dev *d)
{
	const struct raid_sb *sb = cmd_examine_sb(d);
	uint64_t regions = jg_le64(sb->bitmap_regions);
	uint32_t seed = jg_crc_seed(sb->uuid);

	d->bm_dirty = 0;
	d->bm_bad = 0;
	for (uint32_t i = 0; i < d->bm_blocks; i++) {
		const struct raid_bitmap_blk *b =
			(const struct raid_bitmap_blk *)(d->bm + (size_t)i * JG_BLOCK_SIZE);
		uint64_t first = (uint64_t)i * RAID_BITMAP_BITS_PER_BLOCK;
		uint64_t nbits = regions > first ? regions - first : 0;

		if (nbits > RAID_BITMAP_BITS_PER_BLOCK)
			nbits = RAID_BITMAP_BITS_PER_BLOCK;
		if (jg_blk_check(b, JG_BLOCK_SIZE, RAID_BITMAP_MAGIC, RAID_FORMAT_VERSION,
				 RAID_BITMAP_FIRST(jg_le32(sb->feature_incompat)) + i, seed,
				 "examine", "bitmap block", d->path)) {
			d->bm_bad++;
			d->bm_dirty += nbits;
			continue;
		}
		for (uint64_t bit = 0; bit < nbits; bit++)
			if (b->bits[bit / 8] & (1u << (bit % 8)))
				d->bm_dirty++;
	}
}

/*
 * Verify superblock copy @c of @d (jg_blk_check: magic, crc, version, home
 * address, then the fields shown) seeded from @uuid, or from the UUID it names
 * when NULL. Logs the failed check naming the device; never writes.
 */
static int cmd_examine_verify_copy(struct examine_dev *d, unsigned int c, const uint8_t *uuid)
{
	const struct raid_sb *sb = cmd_examine_copy(d, c);
	uint32_t level, n, role, chunk, incompat;
	int rc;

	rc = jg_blk_check(sb, JG_BLOCK_SIZE, RAID_SB_MAGIC, RAID_FORMAT_VERSION, c,
			  jg_crc_seed(uuid ? uuid : sb->uuid), "examine", "member superblock",
			  d->path);
	if (rc)
		return rc;
	level = jg_le32(sb->level);
	n = jg_le32(sb->nmembers);
	role = jg_le32(sb->role);
	chunk = jg_le32(sb->chunk_blocks);
	incompat = jg_le32(sb->feature_incompat);
	if (incompat & ~RAID_FEATURE_INCOMPAT_SUPP)
		return -EOPNOTSUPP;
	if ((level != 4 && level != 5 && level != 6) || n < 2 || n > RAID_MAX_MEMBERS ||
	    (role >= n && role != RAID_ROLE_SPARE) || !chunk || chunk > 1024 ||
	    (chunk & (chunk - 1)) ||
	    RAID_SB_COPIES(incompat) <= c) {
		jg_log(JG_LOG_ERR, "examine", "member superblock dev=%s blkno=%u bad geometry: "
		       "level=%u members=%u role=%u chunk_blocks=%u copies=%u", d->path, c,
		       level, n, role, chunk, RAID_SB_COPIES(incompat));
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Verify @d's superblock copies, as assembly does: copy 0, and copy 1 when the
 * format has two (or copy 0 is damaged); show the newer valid one. d->rc is 0
 * when one copy verifies, else the error of copy 0.
 */
static int cmd_examine_verify(struct examine_dev *d, const uint8_t *uuid)
{
	if (d->rc)
		return d->rc;
	d->copies = 1;
	d->use = 0;
	d->copy_rc[0] = cmd_examine_verify_copy(d, 0, uuid);
	if (!d->copy_rc[0] &&
	    RAID_SB_COPIES(jg_le32(cmd_examine_copy(d, 0)->feature_incompat)) == 1)
		goto out;
	d->copies = 2;
	d->copy_rc[1] = cmd_examine_verify_copy(d, 1, uuid);
	if (d->copy_rc[0] && d->copy_rc[1]) {
		d->rc = d->copy_rc[0];
		return d->rc;
	}
	if (d->copy_rc[0] ||
	    (!d->copy_rc[1] && jg_seq_after(jg_le64(cmd_examine_copy(d, 1)->hdr.seq),
					    jg_le64(cmd_examine_copy(d, 0)->hdr.seq))))
		d->use = 1;
out:
	cmd_examine_bitmap(d);
	return 0;
}

static const char *cmd_examine_why(int rc)
{
	switch (rc) {
	case -EUCLEAN:
		return "not a jgrfs member, or its superblock is damaged (see the message above)";
	case -EOPNOTSUPP:
		return "written by a newer jgrfs";
	default:
		return strerror(-rc);
	}
}

static const char *cmd_examine_member_state(const struct raid_member_info *m)
{
	if (m->failed)
		return "failed";
	if (!m->present)
		return "missing";
	if (m->rebuilding)
		return "rebuilding";
	return "active";
}

/*
 * Read @d's bitmap blocks while the device is ours (before assembly takes it).
 * The count comes from the superblock not yet verified: it is only bounded
 * here, and used once the superblock verifies. A failed read leaves no bitmap
 * to count (bm_blocks 0) and says so.
 */
static void cmd_examine_read_bitmap(struct examine_dev *d, struct blk_dev *dev)
{
	/* copy 0 unless its magic is gone (then copy 1, of the two-copy format) */
	const struct raid_sb *sb =
	    cmd_examine_copy(d, jg_le32(cmd_examine_copy(d, 0)->hdr.magic) != RAID_SB_MAGIC);
	uint32_t nb = jg_le32(sb->bitmap_blocks);
	uint64_t first = RAID_BITMAP_FIRST(jg_le32(sb->feature_incompat));
	int rc;

	/* a spare's bitmap blocks were never written: it holds nothing */
	if (jg_le32(sb->hdr.magic) != RAID_SB_MAGIC || !nb || jg_le32(sb->role) == RAID_ROLE_SPARE)
		return;
	if (nb > EXAMINE_MAX_BITMAP_BLOCKS)
		nb = EXAMINE_MAX_BITMAP_BLOCKS;
	if (first + nb > dev->nblocks)
		return;
	d->bm = jg_alloc_blocks(nb);
	if (!d->bm)
		return;
	rc = blk_rw(dev, BLK_OP_READ, first, nb, d->bm, 0);
	if (rc) {
		cli_err("%s: cannot read the bitmap: %s", d->path, strerror(-rc));
		return;
	}
	d->bm_blocks = nb;
}

/* ------------------------------------------------------------ text */

/* One line per superblock copy: its events and state, or why it does not verify. */
static void cmd_examine_copies_text(const struct examine_dev *d, const char *indent)
{
	for (unsigned int c = 0; c < d->copies; c++) {
		const struct raid_sb *sb = cmd_examine_copy(d, c);

		if (d->copy_rc[c]) {
			printf("%scopy %u (block %u): damaged: %s\n", indent, c, c,
			       cmd_examine_why(d->copy_rc[c]));
			continue;
		}
		printf("%scopy %u (block %u): events %" PRIu64 ", %s%s\n", indent, c, c,
		       jg_le64(sb->hdr.seq),
		       jg_le32(sb->state) == RAID_STATE_CLEAN ? "clean" : "dirty",
		       c == d->use ? " (in use)" : "");
	}
}

/* The whole superblock of a device that did not assemble. */
static void cmd_examine_sb_text(const struct examine_dev *d)
{
	const struct raid_sb *sb = cmd_examine_sb(d);
	const char *pol = raid_resync_policy_name(jg_le32(sb->resync_policy));
	uint32_t failed = jg_le32(sb->failed_mask), n = jg_le32(sb->nmembers);
	uint32_t chunk = jg_le32(sb->chunk_blocks);
	unsigned int npar = jg_le32(sb->level) == 6 ? 2 : 1;
	char uuid[37], b[32];

	jg_uuid_format(sb->uuid, uuid);
	printf("%s:\n", d->path);
	printf("  uuid          %s\n", uuid);
	printf("  level         RAID%u, %u members (%u data + %u parity per row)\n",
	       jg_le32(sb->level), n, n - npar, npar);
	if (jg_le32(sb->role) == RAID_ROLE_SPARE)
		printf("  role          spare (holds no data)\n");
	else
		printf("  role          %u\n", jg_le32(sb->role));
	printf("  chunk         %s (%u blocks)\n",
	       cli_human_bytes((uint64_t)chunk * JG_BLOCK_SIZE, b, sizeof(b)), chunk);
	printf("  data offset   %" PRIu64 " blocks\n", jg_le64(sb->data_offset));
	printf("  member size   %s (%" PRIu64 " blocks of data area)\n",
	       cli_human_bytes(jg_le64(sb->data_blocks) * JG_BLOCK_SIZE, b, sizeof(b)),
	       jg_le64(sb->data_blocks));
	printf("  usable size   %s (%" PRIu64 " blocks)\n",
	       cli_human_bytes(jg_le64(sb->array_blocks) * JG_BLOCK_SIZE, b, sizeof(b)),
	       jg_le64(sb->array_blocks));
	printf("  events        %" PRIu64 "\n", jg_le64(sb->hdr.seq));
	printf("  state         %s\n", jg_le32(sb->state) == RAID_STATE_CLEAN ? "clean" : "dirty");
	if (jg_le32(sb->feature_incompat) & RAID_FEATURE_INCOMPAT_SYNCING)
		printf("  initial sync  at row %" PRIu64 "\n", jg_le64(sb->sync_rows));
	printf("  policy        %s\n", pol ? pol : "unknown");
	if (jg_le32(sb->bitmap_blocks))
		printf("  bitmap        %s per bit, %" PRIu64 " regions in %u blocks per member, "
		       "%" PRIu64 " dirty%s\n",
		       cli_human_bytes((uint64_t)jg_le32(sb->bitmap_region_blocks) * JG_BLOCK_SIZE,
				       b, sizeof(b)),
		       jg_le64(sb->bitmap_regions), jg_le32(sb->bitmap_blocks), d->bm_dirty,
		       d->bm_bad ? " (blocks that do not verify count as dirty)" : "");
	else
		printf("  bitmap        none\n");
	printf("  jnl pending   %s\n",
	       jg_le32(sb->flags) & RAID_SB_FLAG_JNL_PENDING ? "yes" : "no");
	printf("  failed        ");
	if (!failed)
		printf("none");
	for (unsigned int r = 0, k = 0; r < 32; r++)
		if (failed & (1u << r))
			printf("%srole %u", k++ ? ", " : "", r);
	printf("\n");
	printf("  superblocks\n");
	cmd_examine_copies_text(d, "    ");
}

/*
 * assemble.c (S14): a device whose role another device given holds in the
 * assembled array was replaced (or outdated) and left out, untouched: that
 * device's name, else NULL. @info may be NULL (not assembled).
 */
static const char *cmd_examine_holder(const struct raid_info *info, const struct examine_dev *d)
{
	const struct raid_sb *sb = cmd_examine_sb(d);

	if (!info || d->rc || jg_le32(sb->role) == RAID_ROLE_SPARE)
		return NULL;
	for (unsigned int i = 0; i < info->nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
		const struct raid_member_info *m = &info->members[i];

		if (m->role == jg_le32(sb->role) && m->present &&
		    strncmp(m->name, d->path, sizeof(m->name) - 1))
			return m->name;
	}
	return NULL;
}

static void cmd_examine_text(const struct raid_info *info, const struct examine_dev *devs, int n)
{
	char b[32];
	unsigned int nfailed = 0;

	printf("array (assembled read-only, nothing written):\n");
	raidcli_summary_print(stdout, info);
	printf("  events        %" PRIu64 "\n", info->events);
	printf("  state         %s\n", info->was_dirty ? "dirty (not shut down cleanly)" :
		"clean");
	printf("  degraded      %s\n", info->degraded ? "yes" : "no");
	if (info->resync == RAID_RESYNC_BITMAP || info->resync == RAID_RESYNC_JOURNAL)
		printf("  bitmap        %s per bit, %" PRIu64 " dirty region%s\n",
		       cli_human_bytes((uint64_t)info->bitmap_region_blocks * JG_BLOCK_SIZE, b,
				       sizeof(b)),
		       info->bitmap_dirty_regions, info->bitmap_dirty_regions == 1 ? "" : "s");
	else
		printf("  bitmap        none\n");
	printf("  jnl pending   %s\n", info->jnl_pending ?
		"yes (filesystem-guided resync pending: replay the journal before trusting parity)" :
		"no");
	printf("  resync all    %s\n", info->resync_all ? "yes" : "no");
	if (info->scrub_marked) /* only then: older outputs stay as they were */
		printf("  scrub         interrupted at row %" PRIu64 " of %" PRIu64 "%s, %" PRIu64
		       " mismatches so far (the next read-write mount resumes it)\n",
		       info->scrub_rows, info->rows, info->scrub_repair ? " (repair)" : "",
		       info->scrub_mismatches);
	printf("  failed        ");
	for (unsigned int i = 0; i < info->nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
		if (!info->members[i].failed)
			continue;
		printf("%srole %u", nfailed ? ", " : "", info->members[i].role);
		nfailed++;
	}
	printf("%s\n", nfailed ? "" : "none");
	if (info->rebuild_progress >= 0)
		printf("  rebuild       %.0f%%\n", info->rebuild_progress * 100);
	if (info->sync_rows < info->rows)
		printf("  initial sync  %.1f%% (rows 0 to %" PRIu64 " of %" PRIu64
		       " in sync): the mounted volume goes on from there\n",
		       100.0 * (double)info->sync_rows / (double)info->rows, info->sync_rows,
		       info->rows);
	printf("roles:\n");
	for (unsigned int i = 0; i < info->nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
		const struct raid_member_info *m = &info->members[i];

		printf("  role %-3u %-10s %s", m->role, cmd_examine_member_state(m),
		       m->present ? m->name : "-");
		if (m->rebuilding)
			printf(" (rows 0 to %" PRIu64 " of %" PRIu64 " rebuilt; the rebuild "
			       "resumes at the next mount or jgrfs rebuild)", m->recovered_rows,
			       info->rows);
		printf("\n");
	}
	for (unsigned int i = 0; i < info->nspares && i < RAID_MAX_SPARES; i++)
		printf("  spare    %-10s %s\n", "idle", info->spares[i].name);
	printf("devices (their own superblocks):\n");
	for (int i = 0; i < n; i++) {
		const struct raid_sb *sb = cmd_examine_sb(&devs[i]);

		if (devs[i].rc) {
			printf("  %s: %s\n", devs[i].path, cmd_examine_why(devs[i].rc));
			continue;
		}
		if (jg_le32(sb->role) == RAID_ROLE_SPARE)
			printf("  %s: spare, events %" PRIu64 " (any count: a spare holds no data)\n",
			       devs[i].path, jg_le64(sb->hdr.seq));
		if (jg_le32(sb->role) == RAID_ROLE_SPARE)
			continue;
		printf("  %s: role %u, events %" PRIu64 ", %s, data offset %" PRIu64 " blocks",
		       devs[i].path, jg_le32(sb->role), jg_le64(sb->hdr.seq),
		       jg_le32(sb->state) == RAID_STATE_CLEAN ? "clean" : "dirty",
		       jg_le64(sb->data_offset));
		if (jg_le32(sb->bitmap_blocks))
			printf(", bitmap %" PRIu64 " dirty", devs[i].bm_dirty);
		if (cmd_examine_holder(info, &devs[i]))
			printf(", left out: its role is %s's now (replaced; wipe it, or add it "
			       "as a spare)", cmd_examine_holder(info, &devs[i]));
		printf("\n");
		cmd_examine_copies_text(&devs[i], "    ");
	}
}

/* ------------------------------------------------------------ JSON */

static void cmd_examine_sb_json(const struct examine_dev *d, const struct raid_info *info)
{
	const struct raid_sb *sb = cmd_examine_sb(d);
	const char *pol;
	char uuid[37];

	printf("{\"path\":");
	raidcli_json_str(stdout, d->path);
	if (d->rc) {
		printf(",\"ok\":false,\"error\":");
		raidcli_json_str(stdout, cmd_examine_why(d->rc));
		printf("}");
		return;
	}
	pol = raid_resync_policy_name(jg_le32(sb->resync_policy));
	jg_uuid_format(sb->uuid, uuid);
	printf(",\"ok\":true,\"spare\":%s", jg_le32(sb->role) == RAID_ROLE_SPARE ? "true" : "false");
	printf(",\"uuid\":\"%s\",\"level\":%u,\"members\":%u,\"role\":%u,"
	       "\"chunk_bytes\":%" PRIu64 ",\"data_offset_blocks\":%" PRIu64 ","
	       "\"data_blocks\":%" PRIu64 ",\"array_blocks\":%" PRIu64 ",\"events\":%" PRIu64 ","
	       "\"state\":\"%s\",\"policy\":", uuid, jg_le32(sb->level), jg_le32(sb->nmembers),
	       jg_le32(sb->role), (uint64_t)jg_le32(sb->chunk_blocks) * JG_BLOCK_SIZE,
	       jg_le64(sb->data_offset), jg_le64(sb->data_blocks), jg_le64(sb->array_blocks),
	       jg_le64(sb->hdr.seq), jg_le32(sb->state) == RAID_STATE_CLEAN ? "clean" : "dirty");
	raidcli_json_str(stdout, pol ? pol : "unknown");
	printf(",\"bitmap_region_bytes\":%" PRIu64 ",\"bitmap_blocks\":%u,"
	       "\"bitmap_dirty_regions\":%" PRIu64 ",\"bitmap_bad_blocks\":%u,"
	       "\"jnl_pending\":%s,\"failed_mask\":%u",
	       (uint64_t)jg_le32(sb->bitmap_region_blocks) * JG_BLOCK_SIZE,
	       jg_le32(sb->bitmap_blocks), d->bm_dirty, d->bm_bad,
	       jg_le32(sb->flags) & RAID_SB_FLAG_JNL_PENDING ? "true" : "false",
	       jg_le32(sb->failed_mask));
	if (cmd_examine_holder(info, d)) {
		printf(",\"replaced_by\":");
		raidcli_json_str(stdout, cmd_examine_holder(info, d));
	}
	printf(",\"copies\":[");
	for (unsigned int c = 0; c < d->copies; c++) {
		const struct raid_sb *cs = cmd_examine_copy(d, c);

		printf("%s{\"blkno\":%u,", c ? "," : "", c);
		if (d->copy_rc[c]) {
			printf("\"ok\":false,\"error\":");
			raidcli_json_str(stdout, cmd_examine_why(d->copy_rc[c]));
		} else {
			printf("\"ok\":true,\"events\":%" PRIu64 ",\"state\":\"%s\",\"in_use\":%s",
			       jg_le64(cs->hdr.seq),
			       jg_le32(cs->state) == RAID_STATE_CLEAN ? "clean" : "dirty",
			       c == d->use ? "true" : "false");
		}
		printf("}");
	}
	printf("]}");
}

static void cmd_examine_json(const struct raid_info *info, const struct examine_dev *devs, int n)
{
	char uuid[37];
	const char *pol;
	bool first = true;

	printf("{\"assembled\":%s,", info ? "true" : "false");
	if (info) {
		pol = raid_resync_policy_name(info->resync);
		jg_uuid_format(info->uuid, uuid);
		printf("\"uuid\":\"%s\",\"level\":%u,\"members\":%u,\"data_members\":%u,", uuid,
		       info->level, info->nmembers, info->ndata);
		printf("\"chunk_bytes\":%" PRIu64 ",\"member_blocks\":%" PRIu64
		       ",\"array_blocks\":%" PRIu64 ",\"rows\":%" PRIu64 ",",
		       (uint64_t)info->chunk_blocks * JG_BLOCK_SIZE, info->member_blocks,
		       info->array_blocks, info->rows);
		printf("\"block_bytes\":%u,\"policy\":", JG_BLOCK_SIZE);
		raidcli_json_str(stdout, pol ? pol : "unknown");
		printf(",\"bitmap_region_bytes\":%" PRIu64 ",\"bitmap_dirty_regions\":%" PRIu64
		       ",", (uint64_t)info->bitmap_region_blocks * JG_BLOCK_SIZE,
		       info->bitmap_dirty_regions);
		printf("\"events\":%" PRIu64 ",\"state\":\"%s\",\"degraded\":%s,"
		       "\"jnl_pending\":%s,\"resync_all\":%s,\"rebuild_progress\":%.3f,", info->events, info->was_dirty ? "dirty" : "clean",
		       info->degraded ? "true" : "false", info->jnl_pending ? "true" : "false",
		       info->resync_all ? "true" : "false", info->rebuild_progress);
		printf("\"sync_rows\":%" PRIu64 ",\"failed\":[", info->sync_rows);
		for (unsigned int i = 0; i < info->nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
			if (!info->members[i].failed)
				continue;
			printf("%s%u", first ? "" : ",", info->members[i].role);
			first = false;
		}
		printf("],\"roles\":[");
		for (unsigned int i = 0; i < info->nmembers && i < RAIDCLI_MAX_MEMBERS; i++) {
			const struct raid_member_info *m = &info->members[i];

			printf("%s{\"role\":%u,\"state\":\"%s\",", i ? "," : "", m->role,
			       cmd_examine_member_state(m));
			if (m->rebuilding)
				printf("\"recovered_rows\":%" PRIu64 ",", m->recovered_rows);
			printf("\"name\":");
			if (m->present)
				raidcli_json_str(stdout, m->name);
			else
				printf("null");
			printf("}");
		}
		printf("],\"spares\":[");
		for (unsigned int i = 0; i < info->nspares && i < RAID_MAX_SPARES; i++) {
			printf("%s", i ? "," : "");
			raidcli_json_str(stdout, info->spares[i].name);
		}
		printf("],");
	}
	printf("\"devices\":[");
	for (int i = 0; i < n; i++) {
		if (i)
			printf(",");
		cmd_examine_sb_json(&devs[i], info);
	}
	printf("]}\n");
}

/* ------------------------------------------------------------ command */

/* What the command line asks. */
struct examine_cmd {
	bool json, scan;
	char **args;		/* the devices given (or found for UUID=) */
	char *found[RAIDCLI_MAX_MEMBERS];
	int n;
};

/* Options and the devices into @ec: -1 to go on, else the exit status. */
static int cmd_examine_opts(struct examine_cmd *ec, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "scan", no_argument, NULL, 's' },
		{ "config", required_argument, NULL, EXAMINE_OPT_CONFIG },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERBOSITY_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	optind = 1;
	while ((opt = raidcli_getopt(argc, argv, "jsh" CLI_VERBOSITY_SHORTOPTS, longopts,
				     cmd_examine_help)) != -1) {
		switch (opt) {
		case RAIDCLI_OPT_HELP:
			return 0;
		case 'j':
			ec->json = true;
			break;
		case 's':
			ec->scan = true;
			break;
		case EXAMINE_OPT_CONFIG:
			scan_config = optarg;
			break;
		default:
			return cli_usage_err(2, NULL);
		}
	}
	ec->n = argc - optind;
	if (ec->scan && (ec->n || ec->json))
		return cli_usage_err(2, "--scan takes no device and no --json");
	if (ec->scan)
		return scan_list();
	if (ec->n < 1)
		return cli_usage_err(2, "no member devices given");
	ec->args = argv + optind;
	ec->n = scan_args(&ec->args, ec->n, ec->found, RAIDCLI_MAX_MEMBERS);
	if (ec->n < 0)
		return 2;
	if (ec->n > RAIDCLI_MAX_MEMBERS)
		return cli_usage_err(2, "at most %d devices, not %d", RAIDCLI_MAX_MEMBERS, ec->n);
	return -1;
}

/*
 * Both superblock copies and the bitmap of each open device of @ra into @ed.
 * 0, or the exit status after a message (out of memory: @ra closed).
 */
static int cmd_examine_read(struct raidcli_array *ra, struct examine_dev *ed)
{
	struct blk_dev **devs = ra->devs;

	for (int i = 0; i < ra->n; i++) {
		ed[i].path = ra->paths[i];
		ed[i].blk = jg_zalloc_blocks(2);
		if (!ed[i].blk) {
			cli_close_members(devs, ra->n);
			return cli_err("out of memory") + 1;
		}
		/* both copies (a one-copy array has a bitmap block at 1: only read) */
		ed[i].rc = blk_rw(devs[i], BLK_OP_READ, RAID_SB_BLKNO, devs[i]->nblocks > 1 ? 2 : 1,
				  ed[i].blk, 0);
		if (ed[i].rc) {
			cli_err("%s: cannot read the superblock: %s", ed[i].path,
				strerror(-ed[i].rc));
			continue;
		}
		cmd_examine_read_bitmap(&ed[i], devs[i]);
	}
	return 0;
}

/* The devices of one array: each verified against it, and the array's view. */
static int cmd_examine_array(const struct examine_cmd *ec, struct raidcli_array *ra,
			     struct examine_dev *ed)
{
	int ret = 0, rc;

	for (int i = 0; i < ra->n; i++)
		if (cmd_examine_verify(&ed[i], ra->info.uuid))
			ret = 2;
	if (ec->json)
		cmd_examine_json(&ra->info, ed, ra->n);
	else
		cmd_examine_text(&ra->info, ed, ra->n);
	rc = raidcli_close(ra);
	if (rc) {
		cli_err("closing the array failed: %s", strerror(-rc));
		ret = 2;
	}
	return ret;
}

/* Not one array (@arc: why): each device's own superblock, as mdadm --examine. */
static int cmd_examine_devices(const struct examine_cmd *ec, struct examine_dev *ed, int arc)
{
	int ret = 0;

	for (int i = 0; i < ec->n; i++) {
		if (!cmd_examine_verify(&ed[i], NULL))
			continue;
		cli_err("%s: %s", ed[i].path, cmd_examine_why(ed[i].rc));
		ret = 2;
	}
	if (ec->json) {
		cmd_examine_json(NULL, ed, ec->n);
	} else {
		for (int i = 0; i < ec->n; i++)
			if (!ed[i].rc)
				cmd_examine_sb_text(&ed[i]);
	}
	if (!ret && !ec->json)
		printf("(not assembled: %s; each device's own superblock shown)\n",
		       arc == -EINVAL || arc == -ENODEV ?
		       "not enough members of one array given" : strerror(-arc));
	return ret;
}

int cmd_examine(int argc, char **argv)
{
	struct examine_cmd ec = { 0 };
	/* never write: no superblock update, no recovery resync; members in use
	 * too, as mdadm --examine (no lock); assembly's failure is shown below */
	struct raidcli_array ra = {
		.lock = CLI_LOCK_NONE,
		.cfg = { .force = true, .readonly = true, .no_resync = true },
		.quiet = true,
	};
	struct examine_dev ed[RAIDCLI_MAX_MEMBERS] = { 0 };
	int arc, ret;

	ret = cmd_examine_opts(&ec, argc, argv);
	if (ret >= 0)
		return ret;
	ra.paths = ec.args;
	ra.n = ec.n;
	if (raidcli_open_members(&ra))
		return 2;
	ret = cmd_examine_read(&ra, ed);
	if (ret)
		goto out;
	/*
	 * Only a try: the devices given need not make a whole array (examining one
	 * disk is what this is for). What assembly would warn about - roles
	 * missing, too few to run - the output below shows per device; its lines
	 * only with -v.
	 */
	if (cli_verbosity < 1)
		jg_log_set_level(JG_LOG_ERR - 1);
	arc = raidcli_open_assemble(&ra);
	jg_log_set_level(cli_log_level());
	if (!arc)
		ret = cmd_examine_array(&ec, &ra, ed);
	else
		ret = cmd_examine_devices(&ec, ed, arc);
out:
	for (int i = 0; i < ec.n; i++) {
		free(ed[i].blk);
		free(ed[i].bm);
	}
	return ret;
}
