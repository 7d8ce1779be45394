// SPDX-License-Identifier: MIT
/*
 * tools/cli/probe.c - look before writing (tools/cli/probe.h, issue 44).
 *
 * An operator's mistake -- a disk of another array, an ext4 scratch disk, one
 * file named twice -- must cost nothing: so a writing command reads first,
 * decides, and writes only when every check has passed. jgrfs's own member
 * superblock is read here (libblkid does not know it); everything else a disk
 * may hold is libblkid's to name, probed as wipefs(8) lists signatures: every
 * superblock and partition table it recognises, with the offset of its magic.
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/fs.h>

#include "cli.h"
#include "probe.h"
#include "raidcli.h"
#include "jgrfs/fs.h"
#include "jgrfs/raid.h"
#include "../../src/fs/fs_format.h"
#include "../../src/raid/raid_format.h"

/* What an NBD export gives libblkid: its head and its tail (MD 1.0, GPT backup). */
#define PROBE_NBD_BYTES (1u << 20)

/* ------------------------------------------------------------ reading */

/*
 * A descriptor libblkid and the superblock read can use for @path: the file or
 * device itself, or for an NBD export a sparse memfd of its size holding its
 * first and last PROBE_NBD_BYTES. 0 and *@fd, *@bytes; -ENOENT missing,
 * -ENOTBLK neither a file nor a block device (quiet); -errno after a message.
 */
static int probe_open(const char *path, int *fd, uint64_t *bytes)
{
	struct blk_dev *dev;
	uint8_t *buf;
	uint64_t n, at[2];
	struct stat st;
	int rc;

	if (!raid_dev_is_nbd(path)) {
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0 && errno == ENOENT)
			return -ENOENT;
		if (*fd < 0 || fstat(*fd, &st)) {
			rc = -errno;
			if (*fd >= 0)
				close(*fd);
			return cli_err("%s: cannot read it to check what it holds: %s", path,
				       strerror(-rc)), rc;
		}
		if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
			close(*fd);
			return -ENOTBLK; /* not a member at all: its open says so */
		}
		*bytes = (uint64_t)st.st_size;
		if (S_ISBLK(st.st_mode) && ioctl(*fd, BLKGETSIZE64, bytes))
			*bytes = 0;
		return 0;
	}
	rc = raid_dev_nbd_open(path, 0, &dev); /* says why it cannot */
	if (rc)
		return rc;
	*bytes = dev->nblocks * JG_BLOCK_SIZE;
	n = dev->nblocks < PROBE_NBD_BYTES / JG_BLOCK_SIZE ? dev->nblocks
							   : PROBE_NBD_BYTES / JG_BLOCK_SIZE;
	at[0] = 0;
	at[1] = dev->nblocks - n;
	buf = jg_alloc_blocks(n);
	*fd = memfd_create("jgrfs-probe", MFD_CLOEXEC);
	rc = !buf ? -ENOMEM : *fd < 0 || ftruncate(*fd, (off_t)*bytes) ? -errno : 0;
	for (int i = 0; i < 2 && !rc; i++) {
		rc = blk_rw(dev, BLK_OP_READ, at[i], (uint32_t)n, buf, 0);
		if (!rc && pwrite(*fd, buf, n * JG_BLOCK_SIZE, (off_t)(at[i] * JG_BLOCK_SIZE)) !=
				   (ssize_t)(n * JG_BLOCK_SIZE))
			rc = -EIO;
	}
	free(buf);
	blk_close(dev);
	if (rc) {
		if (*fd >= 0)
			close(*fd);
		return cli_err("%s: cannot read it to check what it holds: %s", path,
			       strerror(-rc)), rc;
	}
	return 0;
}

/* The newest verified jgrfs member superblock in the first two blocks of @fd. */
static int probe_sb_fd(int fd, uint8_t uuid[16], uint32_t *role, uint32_t *nmembers)
{
	uint64_t words[2 * JG_BLOCK_SIZE / 8]; /* aligned for the superblock's fields */
	const uint8_t *blk = (const uint8_t *)words;
	const struct raid_sb *best = NULL;
	ssize_t got = pread(fd, words, sizeof(words), 0);
	int rc = -ENOENT;

	if (got < 0)
		return -errno;
	for (unsigned int c = 0; c < 2 && (size_t)got >= (c + 1) * JG_BLOCK_SIZE; c++) {
		const struct raid_sb *sb = (const struct raid_sb *)(blk + c * JG_BLOCK_SIZE);
		int v;

		if (jg_le32(sb->hdr.magic) != RAID_SB_MAGIC)
			continue;
		/* a newer version is still ours: its uuid is checksummed all the same */
		v = jg_blk_verify(sb, JG_BLOCK_SIZE, RAID_SB_MAGIC, RAID_FORMAT_VERSION, c,
				  jg_crc_seed(sb->uuid));
		if (v && v != -EOPNOTSUPP) {
			rc = best ? rc : -EUCLEAN;
			continue;
		}
		if (!best || jg_seq_after(jg_le64(sb->hdr.seq), jg_le64(best->hdr.seq)))
			best = sb;
	}
	if (!best)
		return rc;
	memcpy(uuid, best->uuid, 16);
	*role = jg_le32(best->role);
	*nmembers = jg_le32(best->nmembers);
	return 0;
}

int probe_jgrfs_sb(const char *path, uint8_t uuid[16], uint32_t *role, uint32_t *nmembers)
{
	uint64_t bytes;
	int fd, rc = probe_open(path, &fd, &bytes);

	if (rc)
		return rc;
	rc = probe_sb_fd(fd, uuid, role, nmembers);
	close(fd);
	return rc;
}

/* ------------------------------------------------------------ findings */

/*
 * One finding about @path: refused (a message naming cfg->force_opt) or, with
 * force, said and passed over. @final: refused whatever the options. 1 refused, 0 not.
 */
static int probe_found(const char *path, const struct probe_cfg *cfg, bool final,
		       const char *what)
{
	if (final)
		return cli_err("%s %s", path, what);
	if (!cfg->force)
		return cli_err("%s %s; use %s to overwrite it", path, what, cfg->force_opt);
	if (cli_verbosity >= 0)
		fprintf(stderr, "%s: %s %s; overwriting it (%s)\n", cli_prog, path, what,
			cfg->force_opt);
	return 0;
}

/* "an ext4 filesystem", "a gpt partition table", "an LVM2_member RAID or LVM member" */
static void probe_blkid_what(blkid_probe pr, char *out, size_t len)
{
	const char *type = NULL, *usage = "", *label = NULL, *uuid = NULL, *off = NULL, *kind;
	char more[256] = "";
	bool pt = false;

	if (blkid_probe_lookup_value(pr, "TYPE", &type, NULL)) {
		pt = !blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL);
		blkid_probe_lookup_value(pr, "PTMAGIC_OFFSET", &off, NULL);
		blkid_probe_lookup_value(pr, "PTUUID", &uuid, NULL);
	} else {
		blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
		blkid_probe_lookup_value(pr, "LABEL", &label, NULL);
		blkid_probe_lookup_value(pr, "UUID", &uuid, NULL);
		blkid_probe_lookup_value(pr, "SBMAGIC_OFFSET", &off, NULL);
	}
	if (!type)
		type = "unknown";
	kind = pt ? "partition table"
	       : !strcmp(type, "swap") ? "area"
	       : !strcmp(usage, "filesystem") ? "filesystem"
	       : !strcmp(usage, "raid") ? "RAID or LVM member"
	       : !strcmp(usage, "crypto") ? "encrypted volume"
				       : "signature";
	if (label && *label)
		snprintf(more + strlen(more), sizeof(more) - strlen(more), "label '%s', ", label);
	if (uuid && *uuid)
		snprintf(more + strlen(more), sizeof(more) - strlen(more), "UUID %s, ", uuid);
	snprintf(more + strlen(more), sizeof(more) - strlen(more), "magic at offset %s%s",
		 off ? off : "?",
		 blkid_probe_has_value(pr, "SBBADCSUM") ? ", its checksum fails" : "");
	snprintf(out, len, "contains %s %s %s (%s)", strchr("aeiouAEIOU", type[0]) ? "an" : "a",
		 type, kind, more);
}

/* Every signature libblkid finds on @fd, one finding each. The count refused. */
static int probe_blkid(const char *path, int fd, const struct probe_cfg *cfg)
{
	blkid_probe pr = blkid_new_probe();
	char what[512];
	int refused = 0, found = 0;

	if (!pr || blkid_probe_set_device(pr, fd, 0, 0)) {
		if (pr)
			blkid_free_probe(pr);
		return cli_err("%s: libblkid cannot probe it", path);
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_LABEL |
						  BLKID_SUBLKS_UUID | BLKID_SUBLKS_USAGE |
						  BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	/* as wipefs: each call goes on to the next prober that matches */
	while (found < 16 && blkid_do_probe(pr) == 0) {
		if (!blkid_probe_has_value(pr, "TYPE") && !blkid_probe_has_value(pr, "PTTYPE"))
			break;
		probe_blkid_what(pr, what, sizeof(what));
		refused += probe_found(path, cfg, false, what);
		found++;
	}
	blkid_free_probe(pr);
	return refused;
}

/*
 * A block device the system holds: mounted, a member of MD or LVM, swap. O_EXCL
 * on a block device fails with EBUSY then (open(2)). Refused whatever the
 * options: writing it under its holder is never what is meant.
 */
static int probe_blk_busy(const char *path)
{
	struct stat st;
	int fd;

	if (raid_dev_is_nbd(path) || stat(path, &st) || !S_ISBLK(st.st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd >= 0)
		return close(fd), 0;
	if (errno != EBUSY)
		return 0; /* probe_open says why it cannot be read */
	return cli_err("%s is in use by the system (mounted, swap, or held by MD, LVM or "
		       "device-mapper): not writing it", path);
}

/* A local file another process has locked (a mounted jgrfs volume's member). 1 after a message. */
static int probe_locked(const char *path)
{
	char who[200];
	int fd, rc = 0;

	if (raid_dev_is_nbd(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK)
		rc = cli_err("%s is in use by %s: not writing it", path,
			     cli_lock_holder(path, who, sizeof(who)));
	close(fd);
	return rc;
}

/* The jgrfs superblock of @fd as a finding. The count refused. */
static int probe_jgrfs(const char *path, int fd, const struct probe_cfg *cfg, bool *ours)
{
	uint8_t uuid[16];
	uint32_t role, nmembers;
	char u[37], what[200];
	int rc = probe_sb_fd(fd, uuid, &role, &nmembers);

	*ours = false;
	if (rc == -ENOENT)
		return 0;
	if (rc == -EUCLEAN)
		return probe_found(path, cfg, false,
				   "holds a damaged jgrfs member superblock (its checksum fails)");
	if (rc)
		return cli_err("%s: cannot read its first blocks: %s", path, strerror(-rc));
	if (cfg->uuid && !memcmp(uuid, cfg->uuid, 16)) {
		*ours = true; /* the array's own: the engine judges which role */
		return 0;
	}
	jg_uuid_format(uuid, u);
	if (cfg->other_array_final && cfg->uuid) {
		snprintf(what, sizeof(what), "is %s of another jgrfs array (%s): the volume never "
			 "takes it; if that array is gone, jgrfs wipe it first",
			 role == RAID_ROLE_SPARE ? "a hot spare" : "a member", u);
		return probe_found(path, cfg, true, what);
	}
	if (role == RAID_ROLE_SPARE)
		snprintf(what, sizeof(what), "is a hot spare of %sjgrfs array %s",
			 cfg->uuid ? "another " : "", u);
	else
		snprintf(what, sizeof(what), "is member %u of %u of %sjgrfs array %s", role,
			 nmembers, cfg->uuid ? "another " : "", u);
	return probe_found(path, cfg, false, what);
}

int probe_dev(const char *path, const struct probe_cfg *cfg, uint64_t *bytes)
{
	uint64_t b = 0;
	bool ours;
	int fd, rc, refused;

	if (bytes)
		*bytes = 0;
	if (probe_blk_busy(path))
		return 1;
	rc = probe_open(path, &fd, &b);
	if (rc == -ENOENT || rc == -ENOTBLK)
		return 0;
	if (rc)
		return 2;
	if (bytes)
		*bytes = b;
	refused = probe_jgrfs(path, fd, cfg, &ours);
	if (cfg->check_lock && !ours)
		refused += probe_locked(path);
	/* a member of the array joined is jgrfs's: what its data area holds is the array's */
	if (!ours)
		refused += probe_blkid(path, fd, cfg);
	close(fd);
	return refused ? 1 : 0;
}

/* ------------------------------------------------------------ identity */

/* What makes two names one device. */
struct probe_id {
	const char *uri;	/* an NBD export */
	bool file;		/* dev/ino of a regular file */
	bool blk;		/* rdev of a block device, whole: its disk if a partition */
	dev_t dev, rdev, whole, back_dev;
	ino_t ino, back_ino;	/* back_*: a loop device's backing file */
	char missing[PATH_MAX];	/* a file still to be created: its canonical path */
};

/* The disk of partition @rdev (sysfs), or 0. */
static dev_t probe_whole(dev_t rdev)
{
	char p[PATH_MAX], real[PATH_MAX];
	unsigned int maj, min;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(rdev), minor(rdev));
	if (access(p, F_OK))
		return 0;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	if (!realpath(p, real) || strlen(real) + 8 >= sizeof(p))
		return 0;
	snprintf(p, sizeof(p), "%s/../dev", real);
	f = fopen(p, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%u:%u", &maj, &min) != 2)
		maj = min = 0;
	fclose(f);
	return maj ? makedev(maj, min) : 0;
}

static void probe_id_get(const char *path, struct probe_id *id)
{
	struct loop_info64 li;
	struct stat st;
	char dir[PATH_MAX], base[PATH_MAX], real[PATH_MAX];
	int fd;

	memset(id, 0, sizeof(*id));
	if (raid_dev_is_nbd(path)) {
		id->uri = path;
		return;
	}
	if (stat(path, &st)) {
		/* to be created (--size): two names of one new file are one file */
		snprintf(dir, sizeof(dir), "%s", path);
		snprintf(base, sizeof(base), "%s", path);
		if (realpath(dirname(dir), real))
			snprintf(id->missing, sizeof(id->missing), "%.*s/%s", PATH_MAX / 2, real,
				 basename(base));
		return;
	}
	if (S_ISREG(st.st_mode)) {
		id->file = true;
		id->dev = st.st_dev;
		id->ino = st.st_ino;
	} else if (S_ISBLK(st.st_mode)) {
		id->blk = true;
		id->rdev = st.st_rdev;
		id->whole = probe_whole(st.st_rdev);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !ioctl(fd, LOOP_GET_STATUS64, &li)) {
			id->back_dev = (dev_t)li.lo_device;
			id->back_ino = (ino_t)li.lo_inode;
		}
		if (fd >= 0)
			close(fd);
	}
}

/* Whether @a and @b name one device, and how, in @how. */
static bool probe_id_same(const struct probe_id *a, const struct probe_id *b, const char **how)
{
	*how = "";
	if (a->uri || b->uri)
		return a->uri && b->uri && !strcmp(a->uri, b->uri);
	if (a->missing[0] || b->missing[0])
		return !strcmp(a->missing, b->missing);
	if (a->file && b->file)
		return a->dev == b->dev && a->ino == b->ino;
	if (a->blk && b->blk) {
		if (a->rdev == b->rdev)
			return true;
		*how = " (a partition of it)";
		if (a->whole == b->rdev || b->whole == a->rdev)
			return true;
		*how = " (loop devices over one file)";
		return a->back_ino && a->back_dev == b->back_dev && a->back_ino == b->back_ino;
	}
	*how = " (a loop device over it)";
	if (a->file)
		return b->back_ino && b->back_dev == a->dev && b->back_ino == a->ino;
	return a->back_ino && a->back_dev == b->dev && a->back_ino == b->ino;
}

int probe_distinct(char **paths, int n)
{
	struct probe_id *ids = calloc((size_t)n, sizeof(*ids));
	const char *how;
	int rc = 0;

	if (!ids)
		return cli_err("out of memory");
	for (int i = 0; i < n; i++)
		probe_id_get(paths[i], &ids[i]);
	for (int i = 0; i < n && !rc; i++)
		for (int j = 0; j < i && !rc; j++)
			if (probe_id_same(&ids[j], &ids[i], &how))
				rc = cli_err("%s and %s are the same %s%s: give each device once",
					     paths[j], paths[i],
					     ids[i].uri ? "export" : ids[i].blk ? "device" : "file",
					     how);
	free(ids);
	return rc;
}

/* ------------------------------------------------------------ create */

/* Whether @n members of @mblocks blocks make an array of @ro (and a filesystem of @fo). */
static bool probe_fits(const struct cli_raid_opts *ro, const struct fs_mkfs_opts *fo, int n,
		       uint64_t mblocks, uint64_t *array_blocks)
{
	struct raid_create_cfg cfg = *ro->cfg;

	cfg.member_blocks = 0; /* @mblocks is what is tried */
	if (raid_create_size(&cfg, (unsigned int)n, mblocks, array_blocks))
		return false;
	return !fo || !fs_mkfs_fits(*array_blocks, fo);
}

/* The array too small: say how large each member must be. Returns 2. */
static int probe_too_small(const struct cli_raid_opts *ro, const struct fs_mkfs_opts *fo, int n,
			   uint64_t mblocks, uint64_t array_blocks)
{
	uint64_t lo = mblocks, hi = mblocks ? mblocks : 1, ab;
	char b1[32], b2[32];

	while (hi < (1ull << 40) && !probe_fits(ro, fo, n, hi, &ab))
		hi *= 2;
	if (hi >= (1ull << 40))
		return cli_err("no member size fits these options"), 2;
	while (lo + 1 < hi) { /* probe_fits(hi) holds, probe_fits(lo) does not */
		uint64_t mid = lo + (hi - lo) / 2;

		if (probe_fits(ro, fo, n, mid, &ab))
			hi = mid;
		else
			lo = mid;
	}
	snprintf(b1, sizeof(b1), "%lluK", (unsigned long long)(mblocks * (JG_BLOCK_SIZE / 1024)));
	cli_human_bytes(hi * JG_BLOCK_SIZE, b2, sizeof(b2));
	if (!fo || !array_blocks)
		return cli_err("members of %s are too small for this array: each needs at least "
			       "%lluK (%s; --size %lluK)", b1,
			       (unsigned long long)(hi * (JG_BLOCK_SIZE / 1024)), b2,
			       (unsigned long long)(hi * (JG_BLOCK_SIZE / 1024))), 2;
	return cli_err("members of %s make an array of %llu blocks, too small for a "
		       "filesystem with these options: each member needs at least %lluK (%s; "
		       "--size %lluK)", b1, (unsigned long long)array_blocks,
		       (unsigned long long)(hi * (JG_BLOCK_SIZE / 1024)), b2,
		       (unsigned long long)(hi * (JG_BLOCK_SIZE / 1024))), 2;
}

/*
 * Every member's size in blocks as the array will see it (a regular file given
 * --size grows to it; a missing one is made at it) into @blocks, 0 unknown.
 * Members unequal without --size: refused unless @force. Spares smaller than a
 * member: refused. 0, or 2 after a message.
 */
static int probe_sizes(char **paths, int n, const uint64_t *bytes, const struct cli_raid_opts *ro,
		       bool force, uint64_t *mblocks)
{
	uint64_t size_blocks = ro->size_bytes / JG_BLOCK_SIZE, lo = 0, hi = 0;
	int ilo = -1, ihi = -1, total = n + (int)ro->nspares;
	char b1[32], b2[32];

	for (int i = 0; i < total; i++) {
		uint64_t b = bytes[i] / JG_BLOCK_SIZE;
		struct stat st;
		const char *p = i < n ? paths[i] : ro->spares[i - n];

		if (size_blocks && !raid_dev_is_nbd(p) &&
		    (stat(p, &st) ? errno == ENOENT : S_ISREG(st.st_mode)) && b < size_blocks)
			b = size_blocks; /* made or grown to --size (cli_open_members) */
		if (!b)
			continue; /* missing, no --size: its open says so */
		if (size_blocks && b < size_blocks)
			return cli_err("%s holds %s, less than --size %s (%s)", p,
				       cli_human_bytes(b * JG_BLOCK_SIZE, b1, sizeof(b1)),
				       cli_human_bytes(ro->size_bytes, b2, sizeof(b2)),
				       raid_dev_is_nbd(p) ? "an NBD export cannot be created or grown"
							  : "a block device cannot be grown"), 2;
		if (i >= n) {
			if (lo && b < (size_blocks ? size_blocks : lo))
				return cli_err("spare %s (%s) is smaller than a member (%s)", p,
					       cli_human_bytes(b * JG_BLOCK_SIZE, b1, sizeof(b1)),
					       cli_human_bytes((size_blocks ? size_blocks : lo) *
							       JG_BLOCK_SIZE, b2, sizeof(b2))), 2;
			continue;
		}
		if (ilo < 0 || b < lo)
			lo = b, ilo = i;
		if (ihi < 0 || b > hi)
			hi = b, ihi = i;
	}
	*mblocks = size_blocks ? size_blocks : lo;
	if (size_blocks || lo == hi)
		return 0;
	cli_human_bytes(lo * JG_BLOCK_SIZE, b1, sizeof(b1));
	cli_human_bytes(hi * JG_BLOCK_SIZE, b2, sizeof(b2));
	if (!force)
		return cli_err("members differ in size (%s holds %s, %s %s): the array would use "
			       "%s of each, the smallest; give --size %lluK to say so, or --force",
			       paths[ilo], b1, paths[ihi], b2, b1,
			       (unsigned long long)(lo * (JG_BLOCK_SIZE / 1024))), 2;
	if (cli_verbosity >= 0)
		fprintf(stderr, "%s: members differ in size (%s to %s): using %s of each (--force)\n",
			cli_prog, b1, b2, b1);
	return 0;
}

/* Block @blkno of @path (a file, device or URI) into @buf. 0 or -errno. */
static int probe_read_block(const char *path, uint64_t blkno, uint8_t *buf)
{
	struct blk_dev *dev;
	int fd, rc;

	if (raid_dev_is_nbd(path)) {
		rc = raid_dev_nbd_open(path, 0, &dev);
		if (!rc) {
			rc = blk_rw(dev, BLK_OP_READ, blkno, 1, buf, 0);
			blk_close(dev);
		}
		return rc;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = pread(fd, buf, JG_BLOCK_SIZE, (off_t)(blkno * JG_BLOCK_SIZE)) == JG_BLOCK_SIZE ? 0
											  : -EIO;
	close(fd);
	return rc;
}

/*
 * mkfs: the filesystem superblock the new array's first block would overwrite
 * (members whose array superblocks were wiped, given again in the same
 * order): fs_mkfs() would refuse it only after the array is written. 0, or 2
 * after a message unless @force.
 */
static int probe_old_fs(char **paths, int n, const struct cli_raid_opts *ro, uint64_t mblocks,
			bool force)
{
	struct probe_cfg pc = { .force = force, .force_opt = "--force" };
	uint8_t *blk = jg_alloc_blocks(1);
	const struct fs_super *sb = (const struct fs_super *)blk;
	unsigned int role;
	uint64_t at;
	char u[37], what[256];
	int rc = 0;

	if (!blk)
		return cli_err("out of memory"), 2;
	if (!raid_create_map(ro->cfg, (unsigned int)n, mblocks, FS_SB_BLKNO, &role, &at) &&
	    !probe_read_block(paths[role], at, blk) &&
	    jg_le32(sb->hdr.magic) == FS_MAGIC_SUPER &&
	    jg_blk_crc_ok(blk, JG_BLOCK_SIZE, jg_crc_seed(sb->uuid))) {
		jg_uuid_format(sb->uuid, u);
		snprintf(what, sizeof(what), "holds the superblock of a jgrfs filesystem (UUID %s%s%.*s%s) "
			 "where the new array's would go",
			 u, sb->label[0] ? ", label '" : "", (int)sizeof(sb->label), sb->label,
			 sb->label[0] ? "'" : "");
		rc = probe_found(paths[role], &pc, false, what) ? 2 : 0;
	}
	free(blk);
	return rc;
}

int probe_create(char **paths, int n, struct cli_raid_opts *ro, bool force,
		 const struct fs_mkfs_opts *fo)
{
	struct probe_cfg pc = { .force = force, .force_opt = "--force" };
	char *all[CLI_MAX_DEVICES];
	uint64_t bytes[CLI_MAX_DEVICES], mblocks = 0, array_blocks = 0;
	int total = n + (int)ro->nspares, refused = 0;

	if (total > CLI_MAX_DEVICES)
		return cli_err("at most %d devices, not %d", CLI_MAX_DEVICES, total);
	for (int i = 0; i < total; i++)
		all[i] = i < n ? paths[i] : ro->spares[i - n];
	if (probe_distinct(all, total))
		return 1;
	for (int i = 0; i < total; i++) {
		int rc = probe_dev(all[i], &pc, &bytes[i]);

		if (rc == 2)
			return 2;
		refused += rc;
	}
	if (refused)
		return 2;
	if (probe_sizes(paths, n, bytes, ro, force, &mblocks))
		return 2;
	if (ro->size_bytes)
		ro->cfg->member_blocks = ro->size_bytes / JG_BLOCK_SIZE; /* SIZE of each */
	if (mblocks && !probe_fits(ro, fo, n, mblocks, &array_blocks))
		return probe_too_small(ro, fo, n, mblocks, array_blocks);
	if (fo && mblocks)
		return probe_old_fs(paths, n, ro, mblocks, force || fo->force);
	return 0;
}
