// SPDX-License-Identifier: MIT
/*
 * tools/cli/raidcli.c - helpers of the array subcommands (tools/cli/raidcli.h).
 */
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "probe.h"
#include "raidcli.h"
#include "jgrfs/fop.h"
#include "../../src/raid/raid_format.h"

void raidcli_longopts(struct option *out, int room, const struct option *extra)
{
	int k = 0;

	for (int i = 0; cli_raid_longopts[i].name && k < room - 1; i++)
		out[k++] = cli_raid_longopts[i];
	for (int i = 0; extra && extra[i].name && k < room - 1; i++)
		out[k++] = extra[i];
	memset(&out[k], 0, sizeof(out[k]));
}

const char *raidcli_assemble_why(int rc)
{
	switch (rc) {
	case -EUCLEAN:
	case -EINVAL:
		return "a member is foreign, damaged, stale, duplicated or missing "
		       "(the message above names it)";
	case -EOPNOTSUPP:
		return "a member was written by a newer jgrfs";
	case -ENODEV:
		return "a member is missing (the message above names its role); nothing was written";
	default:
		return strerror(-rc);
	}
}

int raidcli_stop(struct raid_array *a, struct blk_dev **devs, int n)
{
	int rc = raid_stop(a);

	/* the array closed the members; cli_close_members() still frees the
	 * devices below a cli_member_hook wrapper (jgrfs-crash) */
	for (int i = 0; i < n; i++)
		devs[i] = NULL;
	cli_close_members(devs, n);
	return rc;
}

const char *raidcli_level_name(unsigned int level, char *buf, size_t len)
{
	snprintf(buf, len, "RAID%u", level);
	return buf;
}

void raidcli_summary_print(FILE *f, const struct raid_info *info)
{
	char uuid[37], b1[32], b2[32], lvl[16];
	const char *pol = raid_resync_policy_name(info->resync);

	jg_uuid_format(info->uuid, uuid);
	fprintf(f, "  uuid          %s\n", uuid);
	fprintf(f, "  level         %s\n", raidcli_level_name(info->level, lvl, sizeof(lvl)));
	fprintf(f, "  members       %u (%u data + %u parity per row)\n", info->nmembers,
		info->ndata, info->nmembers - info->ndata);
	fprintf(f, "  chunk         %s (%u blocks)\n",
		cli_human_bytes((uint64_t)info->chunk_blocks * JG_BLOCK_SIZE, b1, sizeof(b1)),
		info->chunk_blocks);
	fprintf(f, "  member size   %s (%llu blocks of data area)\n",
		cli_human_bytes(info->member_blocks * JG_BLOCK_SIZE, b1, sizeof(b1)),
		(unsigned long long)info->member_blocks);
	fprintf(f, "  usable size   %s (%llu blocks, %llu rows)\n",
		cli_human_bytes(info->array_blocks * JG_BLOCK_SIZE, b2, sizeof(b2)),
		(unsigned long long)info->array_blocks, (unsigned long long)info->rows);
	fprintf(f, "  policy        %s", pol ? pol : "unknown");
	if (info->resync == RAID_RESYNC_BITMAP || info->resync == RAID_RESYNC_JOURNAL)
		fprintf(f, " (bitmap region %s)",
			cli_human_bytes((uint64_t)info->bitmap_region_blocks * JG_BLOCK_SIZE, b1,
					sizeof(b1)));
	fputc('\n', f);
}

void raidcli_unescape(char *s)
{
	char *d = s;

	for (; *s; s++, d++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d = *s;
		}
	}
	*d = '\0';
}

void raidcli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/*
 * Whether every member is a file that this command creates (absent, --size
 * given) or a regular file with no block allocated (new from truncate): it
 * reads as zeros, and zeros are in sync.
 */
static bool raidcli_all_new(char **paths, int n, uint64_t size_bytes)
{
	for (int i = 0; i < n; i++) {
		struct stat st;

		if (raid_dev_is_nbd(paths[i]))
			return false; /* an export holds what it holds */
		if (stat(paths[i], &st) ? errno != ENOENT || !size_bytes
					: !S_ISREG(st.st_mode) || st.st_blocks)
			return false;
	}
	return true;
}

int raidcli_create(char **paths, int n, struct cli_raid_opts *ro, bool force,
		   const struct fs_mkfs_opts *fo, struct blk_dev **devs)
{
	unsigned int min = ro->cfg->level == 6 ? 4 : 3;
	struct blk_dev *spares[8] = {0};
	char *sp_paths[8];
	int rc;

	if (n > RAIDCLI_MAX_MEMBERS)
		return cli_err("at most %d members, not %d", RAIDCLI_MAX_MEMBERS, n);
	if (n < (int)min)
		return cli_err("RAID%u needs at least %u members, not %d", ro->cfg->level, min, n);
	/* issue 44: every check before the first write (the open creates files) */
	rc = probe_create(paths, n, ro, force, fo);
	if (rc)
		return rc;
	if (!ro->cfg->assume_clean && raidcli_all_new(paths, n, ro->size_bytes))
		ro->cfg->assume_clean = true; /* sparse files this command makes hold zeros */
	if (cli_open_members(paths, n, ro->size_bytes, devs))
		return 2;
	/* the spares' superblocks are written by raid_create; the caller never sees them */
	memcpy(sp_paths, ro->spares, sizeof(sp_paths));
	if (ro->nspares && cli_open_members(sp_paths, (int)ro->nspares, ro->size_bytes, spares)) {
		cli_close_members(devs, n);
		return 2;
	}
	ro->cfg->spares = ro->nspares ? spares : NULL;
	ro->cfg->nspares = ro->nspares;
	rc = raid_create(devs, (unsigned int)n, ro->cfg, force);
	ro->cfg->spares = NULL;
	ro->cfg->nspares = 0;
	cli_close_members(spares, (int)ro->nspares);
	if (rc == -EEXIST)
		cli_err("a member or spare already holds a jgrfs superblock (named above); "
			"use --force to overwrite it");
	else if (rc)
		cli_err("cannot create the array over %s...: %s", paths[0], strerror(-rc));
	if (rc) {
		cli_close_members(devs, n);
		return 2;
	}
	return 0;
}

/* raidcli_sb_read on the first @got bytes of a member, read into @blk. */
static int raidcli_sb_parse(const uint8_t *blk, size_t got, const char *name,
			    const uint8_t uuid[16], struct raidcli_sb *out)
{
	const struct raid_sb *best = NULL;
	int rc = -ENOENT;

	for (unsigned int c = 0; c < 2 && (size_t)got >= (c + 1) * JG_BLOCK_SIZE; c++) {
		const struct raid_sb *sb = (const struct raid_sb *)(blk + (size_t)c * JG_BLOCK_SIZE);

		/* only what claims to be ours is checked: other files stay quiet */
		if (jg_le32(sb->hdr.magic) != RAID_SB_MAGIC || memcmp(sb->uuid, uuid, 16))
			continue;
		if (jg_blk_check(sb, JG_BLOCK_SIZE, RAID_SB_MAGIC, RAID_FORMAT_VERSION, c,
				 jg_crc_seed(uuid), "umount", "member superblock", name)) {
			if (!best)
				rc = -EUCLEAN;
			continue;
		}
		if (!best || jg_seq_after(jg_le64(sb->hdr.seq), jg_le64(best->hdr.seq)))
			best = sb;
	}
	if (best) {
		out->role = jg_le32(best->role);
		out->nmembers = jg_le32(best->nmembers);
		out->spare = out->role == RAID_ROLE_SPARE;
		out->events = jg_le64(best->hdr.seq);
		out->clean = jg_le32(best->state) == RAID_STATE_CLEAN;
		rc = 0;
	}
	return rc;
}

int raidcli_sb_read(int fd, const char *name, const uint8_t uuid[16], struct raidcli_sb *out)
{
	uint8_t *blk = jg_alloc_blocks(2);
	ssize_t got;
	int rc;

	if (!blk)
		return -ENOMEM;
	got = pread(fd, blk, 2 * JG_BLOCK_SIZE, 0);
	rc = got < 0 ? -errno : raidcli_sb_parse(blk, (size_t)got, name, uuid, out);
	free(blk);
	return rc;
}

int raidcli_sb_read_dev(struct blk_dev *dev, const char *name, const uint8_t uuid[16],
			struct raidcli_sb *out)
{
	uint8_t *blk = jg_alloc_blocks(2);
	uint32_t n = dev->nblocks < 2 ? 1 : 2;
	int rc;

	if (!blk)
		return -ENOMEM;
	rc = blk_rw(dev, BLK_OP_READ, 0, n, blk, 0);
	if (!rc)
		rc = raidcli_sb_parse(blk, (size_t)n * JG_BLOCK_SIZE, name, uuid, out);
	free(blk);
	return rc;
}

int raidcli_status_ioctl(int fd, const char *mnt, const char *what, struct fop_status *st)
{
	int rc;

	memset(st, 0, sizeof(*st));
	if (!ioctl(fd, FOP_IOC_STATUS, st))
		return 0;
	rc = -errno;
	if (rc == -ENOTTY || rc == -EINVAL || rc == -ENOSYS)
		cli_err("%s: not a jgrfs mount", mnt);
	else
		cli_err("%s: %s%s", mnt, what, strerror(-rc));
	return rc;
}
