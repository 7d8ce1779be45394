// SPDX-License-Identifier: MIT
/*
 * src/fs/owners.c - who owns these array blocks (fs_owners; issues 22 and 23).
 *
 * The array reports rows and blocks (a scrub mismatch, a block no member could
 * give back) and knows nothing of files; this names what the filesystem keeps
 * there. Three passes over the question Q, a set of array block runs:
 *
 *   1 places  blocks of Q in the fixed places of FORMAT.md §4.1 (superblock,
 *             descriptors, journal, each group's bitmaps and inode table), from
 *             the geometry alone: nothing is read
 *   2 maps    every inode in use: its block map (fs_bmap_walk, the walker of
 *             fsck pass 1) and its xattr block; each block in Q is a hit. Then
 *             the blocks of Q in data areas no inode mapped: free or unclaimed,
 *             as the group's block bitmap says
 *   3 names   every directory's entries (fs_dir_iterate, as fsck pass 2): an
 *             entry naming a hit inode is one of its names; then the path of each
 *             such directory, up the parent fields of directory inodes, each
 *             component found in its parent. The orphan list marks open-unlinked
 *             inodes.
 * The reports are then sorted by array block and passed to the caller.
 *
 * (O1) Memory is bounded by the question and the hits, never by the size of the
 *      filesystem: a bit per block of Q inside the filesystem (was it mapped?),
 *      at most max_reports reports, at most max_paths names per hit inode, and
 *      one entry per directory on the way from a named one to the root.
 * (O2) Nothing is written: only fs_bread, fs_gd_read, fs_iget, fs_bmap_walk and
 *      fs_dir_iterate, which read through the journal (in memory on a read-only
 *      mount).
 * (O3) The big lock is held for one step at a time and let go between steps: an
 *      inode table block with the maps of its inodes; a group's part of Q in its
 *      block bitmap; one directory; one parent lookup; the orphan list. Each
 *      inode's map is read whole in one hold (between the steps of a long
 *      truncate, L1/L2, a map is consistent). Across steps only copies are kept
 *      (inode numbers, names), never a buffer or a decoded inode, so a change
 *      between steps can make a name stale (renamed, unlinked, the inode number
 *      reused), never a pointer dangle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"

/* A directory chain longer than this is taken for a loop (damage). */
#define FS_OWNERS_DEPTH_MAX 2048u

/* One directory entry naming a hit inode. */
struct fs_owners_name {
	uint64_t dir;
	char *name;
};

/* An inode that owns a block of Q (pass 3 names it). */
struct fs_owners_ino {
	uint64_t ino;
	bool orphan;
	struct fs_owners_name *names;	/* max_paths of them */
	unsigned int nnames;
	uint64_t left_out;		/* names found beyond max_paths */
	char **paths;			/* nnames, built from names */
};

/* A directory on the way to the root: its parent and its name there. */
struct fs_owners_dir {
	uint64_t ino, parent;		/* parent 0: unknown, the chain stops */
	char *name;			/* NULL: not found in the parent */
};

struct fs_owners {
	struct fs *fs;
	const struct fs_extent *ext;
	size_t n;
	uint64_t *bit_base;		/* per run: bit of its first block in @claimed */
	uint8_t *claimed;		/* (O1): blocks of Q inside the fs that an inode maps */
	struct fs_owner *rec;		/* reports, paths not yet set */
	size_t nrec, rec_room;
	uint64_t max_reports;
	unsigned int max_paths;
	struct fs_owners_summary *sum;
	const struct fs_inode *cur;	/* pass 2: the inode being walked */
	struct fs_owners_ino *hit;	/* pass 3: sorted by ino */
	size_t nhit;
	struct fs_owners_dir *dir;	/* pass 3: sorted by ino */
	size_t ndir, dir_room;
	uint64_t cur_dir;		/* pass 3: the directory being read */
};

static const char *const fs_owner_kinds[] = {
	[FS_OWNER_DATA] = "data",
	[FS_OWNER_DIR] = "directory",
	[FS_OWNER_SYMLINK] = "symlink",
	[FS_OWNER_INDIRECT] = "indirect",
	[FS_OWNER_XATTR] = "xattr",
	[FS_OWNER_ITABLE] = "inode-table",
	[FS_OWNER_BBITMAP] = "block-bitmap",
	[FS_OWNER_IBITMAP] = "inode-bitmap",
	[FS_OWNER_GDT] = "group-descriptors",
	[FS_OWNER_SUPER] = "superblock",
	[FS_OWNER_JOURNAL] = "journal",
	[FS_OWNER_FREE] = "free",
	[FS_OWNER_UNCLAIMED] = "unclaimed",
	[FS_OWNER_OUTSIDE] = "outside",
	[FS_OWNER_DCSUM] = "data-checksums",
};

const char *fs_owner_kind_name(enum fs_owner_kind kind)
{
	if ((unsigned int)kind >= sizeof(fs_owner_kinds) / sizeof(fs_owner_kinds[0]) ||
	    !fs_owner_kinds[kind])
		return "unknown";
	return fs_owner_kinds[kind];
}

static bool fs_owners_is_inode_kind(enum fs_owner_kind kind)
{
	return kind == FS_OWNER_DATA || kind == FS_OWNER_DIR || kind == FS_OWNER_SYMLINK ||
	       kind == FS_OWNER_INDIRECT || kind == FS_OWNER_XATTR;
}

/* ------------------------------------------------------------- the question */

/* Index of the run of Q holding @b, or -1. */
static ssize_t fs_owners_find(const struct fs_owners *o, uint64_t b)
{
	size_t lo = 0, hi = o->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->ext[mid].start + o->ext[mid].count <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < o->n && o->ext[lo].start <= b)
		return (ssize_t)lo;
	return -1;
}

/* The bit of @b (in run @i, inside the fs) in @claimed. */
static uint64_t fs_owners_bit(const struct fs_owners *o, size_t i, uint64_t b)
{
	return o->bit_base[i] + (b - o->ext[i].start);
}

/* Runs sorted, not overlapping, not empty, not wrapping. */
static int fs_owners_check(const struct fs_extent *ext, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!ext[i].count || ext[i].start + ext[i].count < ext[i].start)
			return -EINVAL;
		if (i && ext[i].start < ext[i - 1].start + ext[i - 1].count)
			return -EINVAL;
	}
	return 0;
}

/* ----------------------------------------------------------------- reports */

/* Does @b continue @a (one owner, consecutive blocks and, in a file, logical blocks)? */
static bool fs_owners_extends(const struct fs_owner *a, const struct fs_owner *b)
{
	if (a->kind != b->kind || a->ino != b->ino || a->level != b->level ||
	    a->blkno + a->count != b->blkno)
		return false;
	switch (a->kind) {
	case FS_OWNER_DATA:
	case FS_OWNER_DIR:
	case FS_OWNER_SYMLINK:
		return a->lblk + a->count == b->lblk;
	case FS_OWNER_FREE:
	case FS_OWNER_UNCLAIMED:
	case FS_OWNER_JOURNAL:
	case FS_OWNER_GDT:
	case FS_OWNER_OUTSIDE:
	case FS_OWNER_DCSUM:
		return true;
	default:
		return false;
	}
}

/* Keep @r, merged into the last report when it continues it; past max_reports only
 * count its blocks (O1). */
static int fs_owners_add(struct fs_owners *o, const struct fs_owner *r)
{
	if (o->nrec && fs_owners_extends(&o->rec[o->nrec - 1], r)) {
		o->rec[o->nrec - 1].count += r->count;
		return 0;
	}
	if (o->nrec >= o->max_reports) {
		o->sum->blocks_left_out += r->count;
		return 0;
	}
	if (o->nrec == o->rec_room) {
		size_t room = o->rec_room ? o->rec_room * 2 : 64;
		struct fs_owner *rec;

		if (room > o->max_reports)
			room = (size_t)o->max_reports;
		rec = realloc(o->rec, room * sizeof(*rec));
		if (!rec)
			return -ENOMEM;
		o->rec = rec;
		o->rec_room = room;
	}
	o->rec[o->nrec++] = *r;
	return 0;
}

/* --------------------------------------------------------- pass 1: places */

/*
 * The fixed place of block @b (FORMAT.md §4.1), 0 for a group's data area; *@end is
 * where that place ends, *@group its group.
 */
static enum fs_owner_kind fs_owners_place(const struct fs *fs, uint64_t b, uint64_t *end,
					  uint32_t *group)
{
	uint64_t gs;
	uint32_t g;

	*group = 0;
	if (fs_dcsum_in_region(fs, b)) {
		*end = fs->dcsum_start + fs->dcsum_blocks;
		return FS_OWNER_DCSUM;
	}
	if (b >= fs->nblocks) {
		*end = UINT64_MAX; /* the checksum region, when kept, starts at nblocks */
		return FS_OWNER_OUTSIDE;
	}
	if (b == FS_SB_BLKNO) {
		*end = FS_SB_BLKNO + 1;
		return FS_OWNER_SUPER;
	}
	if (b >= fs->gdt_start && b < fs->gdt_start + fs->gdt_blocks) {
		*end = fs->gdt_start + fs->gdt_blocks;
		return FS_OWNER_GDT;
	}
	if (b >= fs->jnl_start && b < fs->jnl_start + fs->jnl_blocks) {
		*end = fs->jnl_start + fs->jnl_blocks;
		return FS_OWNER_JOURNAL;
	}
	if (b < fs->first_group) {
		/* no such gap in a valid layout: owned by nothing we know */
		*end = fs->first_group;
		return FS_OWNER_OUTSIDE;
	}
	g = (uint32_t)((b - fs->first_group) / fs->bpg);
	gs = fs_group_start(fs, g);
	*group = g;
	if (b == gs) {
		*end = gs + 1;
		return FS_OWNER_BBITMAP;
	}
	if (b == gs + 1) {
		*end = gs + 2;
		return FS_OWNER_IBITMAP;
	}
	if (b < gs + 2 + fs->itable_blocks) {
		*end = gs + 2 + fs->itable_blocks;
		return FS_OWNER_ITABLE;
	}
	*end = gs + fs_group_size(fs, g);
	return 0;
}

static int fs_owners_places(struct fs_owners *o)
{
	const struct fs *fs = o->fs;
	int rc;

	for (size_t i = 0; i < o->n; i++) {
		uint64_t b = o->ext[i].start, end = b + o->ext[i].count;

		while (b < end) {
			struct fs_owner r = { .blkno = b };
			uint64_t place_end, run_end;

			r.kind = fs_owners_place(fs, b, &place_end, &r.group);
			run_end = place_end < end ? place_end : end;
			r.count = run_end - b;
			if (r.kind == FS_OWNER_ITABLE) {
				uint64_t first = b - fs_group_start(fs, r.group) - 2;

				r.ino = (uint64_t)r.group * fs->ipg +
					first * FS_INODES_PER_BLOCK + 1;
				r.ino_last = r.ino + r.count * FS_INODES_PER_BLOCK - 1;
			}
			if (r.kind) {
				rc = fs_owners_add(o, &r);
				if (rc)
					return rc;
			}
			b = run_end;
		}
	}
	return 0;
}

/* ----------------------------------------------------------- pass 2: maps */

static int fs_owners_hit(struct fs_owners *o, enum fs_owner_kind kind, uint64_t lblk,
			 uint64_t pblk, unsigned int level)
{
	const struct fs_inode *ip = o->cur;
	struct fs_owner r = { .blkno = pblk, .count = 1, .kind = kind, .ino = ip->ino,
			      .ino_last = ip->ino, .lblk = lblk, .level = level,
			      .mode = ip->mode, .nlink = ip->nlink };
	ssize_t i = fs_owners_find(o, pblk);

	if (i < 0)
		return 0;
	if (pblk < o->fs->nblocks) {
		uint64_t bit = fs_owners_bit(o, (size_t)i, pblk);

		o->claimed[bit / 8] |= (uint8_t)(1u << (bit % 8));
	}
	return fs_owners_add(o, &r);
}

static int fs_owners_claim(void *ctx, uint64_t lblk, uint64_t pblk, unsigned int level)
{
	struct fs_owners *o = ctx;
	uint32_t mode = o->cur->mode;
	enum fs_owner_kind kind = level ? FS_OWNER_INDIRECT :
				  S_ISDIR(mode) ? FS_OWNER_DIR :
				  S_ISLNK(mode) ? FS_OWNER_SYMLINK : FS_OWNER_DATA;

	return fs_owners_hit(o, kind, lblk, pblk, level);
}

/*
 * The inodes of inode table block @t of group @g, with their maps, in one hold of
 * the lock (O3). -ENOMEM stops the scan; anything unreadable is counted and logged.
 */
static int fs_owners_itable_block(struct fs_owners *o, uint32_t g, uint32_t t)
{
	struct fs *fs = o->fs;
	uint64_t blkno = fs_group_start(fs, g) + 2 + t;
	struct fs_buf *b;
	int rc;

	rc = fs_bread(fs, blkno, FS_MAGIC_ITABLE, "inode table", &b);
	if (rc) {
		jg_log(JG_LOG_WARN, FS_SUBSYS, "owners: dev=%s inode table block %llu unreadable: %d",
		       fs->dev->name, (unsigned long long)blkno, rc);
		o->sum->unreadable++;
		return rc == -ENOMEM ? rc : 0;
	}
	for (uint32_t s = 0; s < FS_INODES_PER_BLOCK && !rc; s++) {
		uint64_t ino = (uint64_t)g * fs->ipg + (uint64_t)t * FS_INODES_PER_BLOCK + s + 1;
		struct fs_inode ip;

		fs_inode_decode((const struct fs_dinode *)(b->data + FS_INODE_SIZE * (s + 1)), ino,
				&ip);
		if (!ip.mode)
			continue;
		if (fs_inode_check(fs, &ip, blkno)) {
			o->sum->unreadable++;	/* logged by the check */
			continue;
		}
		o->sum->inodes_scanned++;
		o->cur = &ip;
		rc = fs_bmap_walk(fs, &ip, fs_owners_claim, o);
		if (!rc && ip.xattr_blk)
			rc = fs_owners_hit(o, FS_OWNER_XATTR, 0, ip.xattr_blk, 0);
		o->cur = NULL;
		if (rc && rc != -ENOMEM) {
			jg_log(JG_LOG_WARN, FS_SUBSYS, "owners: dev=%s inode %llu block map unreadable: %d",
			       fs->dev->name, (unsigned long long)ino, rc);
			o->sum->unreadable++;
			rc = 0;
		}
	}
	fs_bput(fs, b);
	return rc;
}

static int fs_owners_maps(struct fs_owners *o)
{
	struct fs *fs = o->fs;
	int rc = 0;

	for (uint32_t g = 0; g < fs->ngroups && !rc; g++) {
		struct fs_group_desc gd;
		uint32_t init;

		jg_mutex_lock(&fs->lock);
		rc = fs_gd_read(fs, g, &gd);
		jg_mutex_unlock(&fs->lock);
		if (rc) {
			jg_log(JG_LOG_WARN, FS_SUBSYS, "owners: dev=%s group %u descriptor unreadable: %d",
			       fs->dev->name, g, rc);
			o->sum->unreadable++;
			rc = rc == -ENOMEM ? rc : 0;
			continue;
		}
		/* (G2): blocks past itable_init hold no inode in use; an inode made in this
		 * group after this read is missed, as any change during the scan may be */
		init = jg_le32(gd.itable_init);
		for (uint32_t t = 0; t < init && t < fs->itable_blocks && !rc; t++) {
			jg_mutex_lock(&fs->lock);
			rc = fs_owners_itable_block(o, g, t);
			jg_mutex_unlock(&fs->lock);
		}
	}
	return rc;
}

/* The blocks of Q in the data area [@b, @end) of group @g that no inode maps. */
static int fs_owners_unmapped(struct fs_owners *o, size_t i, uint32_t g, uint64_t b,
			      uint64_t end)
{
	struct fs *fs = o->fs;
	uint64_t gs = fs_group_start(fs, g);
	struct fs_buf *bb = NULL;
	int rc;

	rc = fs_bread(fs, gs, FS_MAGIC_BBITMAP, "block bitmap", &bb);
	if (rc) {
		/* unknown: reported as unclaimed, which holds (no inode maps them) */
		jg_log(JG_LOG_WARN, FS_SUBSYS, "owners: dev=%s block bitmap %llu unreadable: %d",
		       fs->dev->name, (unsigned long long)gs, rc);
		o->sum->unreadable++;
		if (rc == -ENOMEM)
			return rc;
		bb = NULL;
	}
	rc = 0;
	for (; b < end && !rc; b++) {
		uint64_t bit = fs_owners_bit(o, i, b);
		struct fs_owner r = { .blkno = b, .count = 1, .kind = FS_OWNER_UNCLAIMED,
				      .group = g };

		if (o->claimed[bit / 8] & (1u << (bit % 8)))
			continue;
		if (bb && !fs_bit_test(bb->data, (uint32_t)(b - gs)))
			r.kind = FS_OWNER_FREE;
		rc = fs_owners_add(o, &r);
	}
	fs_bput(fs, bb);
	return rc;
}

static int fs_owners_free(struct fs_owners *o)
{
	struct fs *fs = o->fs;
	int rc = 0;

	for (size_t i = 0; i < o->n && !rc; i++) {
		uint64_t b = o->ext[i].start, end = b + o->ext[i].count;

		while (b < end && !rc) {
			uint64_t place_end, run_end;
			uint32_t g;
			enum fs_owner_kind kind = fs_owners_place(fs, b, &place_end, &g);

			run_end = place_end < end ? place_end : end;
			if (!kind) {
				jg_mutex_lock(&fs->lock);
				rc = fs_owners_unmapped(o, i, g, b, run_end);
				jg_mutex_unlock(&fs->lock);
			}
			b = run_end;
		}
	}
	return rc;
}

/* ---------------------------------------------------------- pass 3: names */

static struct fs_owners_ino *fs_owners_hit_find(const struct fs_owners *o, uint64_t ino)
{
	size_t lo = 0, hi = o->nhit;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->hit[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < o->nhit && o->hit[lo].ino == ino ? &o->hit[lo] : NULL;
}

static int fs_owners_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The distinct inodes the reports name, sorted. */
static int fs_owners_hits_collect(struct fs_owners *o)
{
	uint64_t *inos = malloc((o->nrec ? o->nrec : 1) * sizeof(*inos));
	size_t n = 0;

	if (!inos)
		return -ENOMEM;
	for (size_t i = 0; i < o->nrec; i++)
		if (fs_owners_is_inode_kind(o->rec[i].kind))
			inos[n++] = o->rec[i].ino;
	qsort(inos, n, sizeof(*inos), fs_owners_cmp_u64);
	o->hit = calloc(n ? n : 1, sizeof(*o->hit));
	if (!o->hit) {
		free(inos);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (!o->nhit || o->hit[o->nhit - 1].ino != inos[i])
			o->hit[o->nhit++].ino = inos[i];
	free(inos);
	return 0;
}

/* Mark the hit inodes on the orphan list (open-unlinked, or being truncated). */
static void fs_owners_orphans(struct fs_owners *o)
{
	struct fs *fs = o->fs;
	struct fs_inode ip;
	uint64_t ino;

	jg_mutex_lock(&fs->lock);
	ino = jg_le64(fs->sb.orphan_head);
	for (uint64_t k = 0; ino && k < fs->ninodes; k++) {
		struct fs_owners_ino *h = fs_owners_hit_find(o, ino);

		if (h)
			h->orphan = true;
		if (fs_iget(fs, ino, &ip))
			break;	/* damage: fsck's to report */
		ino = ip.orphan_next;
	}
	jg_mutex_unlock(&fs->lock);
}

static int fs_owners_entry(void *ctx, const char *name, size_t len, uint64_t ino,
			   unsigned int ft, uint64_t hash)
{
	struct fs_owners *o = ctx;
	struct fs_owners_ino *h = fs_owners_hit_find(o, ino);
	struct fs_owners_name *nm;

	(void)ft, (void)hash;
	if (!h)
		return 0;
	if (h->nnames >= o->max_paths) {
		h->left_out++;
		return 0;
	}
	if (!h->names) {
		h->names = calloc(o->max_paths, sizeof(*h->names));
		if (!h->names)
			return -ENOMEM;
	}
	nm = &h->names[h->nnames];
	nm->name = strndup(name, len);
	if (!nm->name)
		return -ENOMEM;
	nm->dir = o->cur_dir;
	h->nnames++;
	return 0;
}

/* Read directory @ino's entries for names of hit inodes, in one hold of the lock. */
static int fs_owners_dir_names(struct fs_owners *o, uint64_t ino)
{
	struct fs *fs = o->fs;
	struct fs_inode dip;
	int rc;

	jg_mutex_lock(&fs->lock);
	/* read again under this hold: the copy of the table step may be stale (O3) */
	rc = fs_iget(fs, ino, &dip);
	if (rc || !S_ISDIR(dip.mode) || !dip.nlink) {
		rc = rc == -ENOENT ? 0 : rc;	/* removed since: nothing to name */
		goto out;
	}
	o->cur_dir = ino;
	rc = fs_dir_iterate(fs, &dip, 2, fs_owners_entry, o);
out:
	jg_mutex_unlock(&fs->lock);
	if (rc && rc != -ENOMEM) {
		jg_log(JG_LOG_WARN, FS_SUBSYS, "owners: dev=%s directory %llu unreadable: %d",
		       fs->dev->name, (unsigned long long)ino, rc);
		o->sum->unreadable++;
		rc = 0;
	}
	return rc;
}

static int fs_owners_dirs_scan(struct fs_owners *o)
{
	struct fs *fs = o->fs;
	int rc = 0;

	for (uint32_t g = 0; g < fs->ngroups && !rc; g++) {
		struct fs_group_desc gd;
		uint32_t init;

		jg_mutex_lock(&fs->lock);
		rc = fs_gd_read(fs, g, &gd);
		jg_mutex_unlock(&fs->lock);
		if (rc) {
			rc = rc == -ENOMEM ? rc : 0;	/* counted by pass 2 */
			continue;
		}
		init = jg_le32(gd.itable_init);
		for (uint32_t t = 0; t < init && t < fs->itable_blocks && !rc; t++) {
			uint64_t blkno = fs_group_start(fs, g) + 2 + t, dirs[FS_INODES_PER_BLOCK];
			unsigned int ndirs = 0;
			struct fs_buf *b;

			jg_mutex_lock(&fs->lock);
			rc = fs_bread(fs, blkno, FS_MAGIC_ITABLE, "inode table", &b);
			if (!rc) {
				for (uint32_t s = 0; s < FS_INODES_PER_BLOCK; s++) {
					uint64_t ino = (uint64_t)g * fs->ipg +
						       (uint64_t)t * FS_INODES_PER_BLOCK + s + 1;
					struct fs_inode ip;

					fs_inode_decode((const struct fs_dinode *)(b->data +
							FS_INODE_SIZE * (s + 1)), ino, &ip);
					/* a damaged inode was counted by pass 2; fs_iget would
					 * flag the mounted fs for it */
					if (S_ISDIR(ip.mode) && ip.nlink &&
					    !fs_inode_check(fs, &ip, blkno))
						dirs[ndirs++] = ino;
				}
				fs_bput(fs, b);
			}
			jg_mutex_unlock(&fs->lock);
			if (rc) {
				rc = rc == -ENOMEM ? rc : 0;	/* counted by pass 2 */
				continue;
			}
			for (unsigned int k = 0; k < ndirs && !rc; k++)
				rc = fs_owners_dir_names(o, dirs[k]);
		}
	}
	return rc;
}

struct fs_owners_seek {
	uint64_t ino;
	char *name;
};

static int fs_owners_seek_entry(void *ctx, const char *name, size_t len, uint64_t ino,
				unsigned int ft, uint64_t hash)
{
	struct fs_owners_seek *s = ctx;

	(void)ft, (void)hash;
	if (ino != s->ino)
		return 0;
	s->name = strndup(name, len);
	return s->name ? 1 : -ENOMEM;
}

/* The chain entry of directory @ino: found, or read now (one hold of the lock). */
static int fs_owners_dir_get(struct fs_owners *o, uint64_t ino, struct fs_owners_dir **out)
{
	struct fs *fs = o->fs;
	struct fs_owners_seek seek = { .ino = ino };
	struct fs_inode dip, pip;
	size_t lo = 0, hi = o->ndir;
	int rc;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->dir[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < o->ndir && o->dir[lo].ino == ino) {
		*out = &o->dir[lo];
		return 0;
	}
	if (o->ndir == o->dir_room) {
		size_t room = o->dir_room ? o->dir_room * 2 : 16;
		struct fs_owners_dir *d = realloc(o->dir, room * sizeof(*d));

		if (!d)
			return -ENOMEM;
		o->dir = d;
		o->dir_room = room;
	}
	memmove(&o->dir[lo + 1], &o->dir[lo], (o->ndir - lo) * sizeof(*o->dir));
	o->ndir++;
	o->dir[lo] = (struct fs_owners_dir){ .ino = ino };
	*out = &o->dir[lo];

	jg_mutex_lock(&fs->lock);
	rc = fs_iget(fs, ino, &dip);
	if (!rc && S_ISDIR(dip.mode) && dip.parent != ino) {
		(*out)->parent = dip.parent;
		rc = fs_iget(fs, dip.parent, &pip);
		if (!rc && S_ISDIR(pip.mode))
			rc = fs_dir_iterate(fs, &pip, 2, fs_owners_seek_entry, &seek);
	}
	jg_mutex_unlock(&fs->lock);
	(*out)->name = seek.name;
	if (rc == -ENOMEM)
		return rc;
	if (rc && rc != -ENOENT)	/* removed since: stale, not unreadable */
		o->sum->unreadable++;
	return 0;
}

/*
 * "/a/b/@name" for an entry @name of directory @dir, up the parent fields; a
 * component not found is "?", and a chain that breaks off (unreadable, or a loop)
 * starts with "?" instead of "/".
 */
static int fs_owners_path(struct fs_owners *o, uint64_t dir, const char *name, char **out)
{
	const char **comp = NULL;
	unsigned int ncomp = 0;
	size_t len = strlen(name) + 2;
	bool broken = false;
	char *p;
	int rc = 0;

	comp = malloc(FS_OWNERS_DEPTH_MAX * sizeof(*comp));
	if (!comp)
		return -ENOMEM;
	while (dir != FS_ROOT_INO) {
		struct fs_owners_dir *d;

		if (ncomp == FS_OWNERS_DEPTH_MAX) {
			broken = true;
			break;
		}
		rc = fs_owners_dir_get(o, dir, &d);
		if (rc)
			goto out;
		comp[ncomp] = d->name ? d->name : "?";
		len += strlen(comp[ncomp]) + 1;
		ncomp++;
		if (!d->parent) {
			broken = true;
			break;
		}
		dir = d->parent;
	}
	p = malloc(len + 1);
	if (!p) {
		rc = -ENOMEM;
		goto out;
	}
	*out = p;
	*p = 0;
	if (broken)
		*p++ = '?';
	while (ncomp) {
		const char *c = comp[--ncomp];

		*p++ = '/';
		memcpy(p, c, strlen(c));
		p += strlen(c);
	}
	*p++ = '/';
	strcpy(p, name);
out:
	free(comp);
	return rc;
}

static int fs_owners_names(struct fs_owners *o)
{
	int rc;

	rc = fs_owners_hits_collect(o);
	if (rc || !o->nhit)
		return rc;
	fs_owners_orphans(o);
	rc = fs_owners_dirs_scan(o);
	for (size_t i = 0; i < o->nhit && !rc; i++) {
		struct fs_owners_ino *h = &o->hit[i];
		unsigned int n = h->nnames + (h->ino == FS_ROOT_INO);

		if (!n)
			continue;
		h->paths = calloc(n, sizeof(*h->paths));
		if (!h->paths)
			return -ENOMEM;
		if (h->ino == FS_ROOT_INO) {
			/* no entry names the root */
			h->paths[0] = strdup("/");
			if (!h->paths[0])
				return -ENOMEM;
		}
		for (unsigned int k = 0; k < h->nnames && !rc; k++)
			rc = fs_owners_path(o, h->names[k].dir, h->names[k].name,
					    &h->paths[k + (h->ino == FS_ROOT_INO)]);
	}
	return rc;
}

/* ---------------------------------------------------------------- reporting */

static int fs_owners_cmp_rec(const void *a, const void *b)
{
	const struct fs_owner *x = a, *y = b;

	if (x->blkno != y->blkno)
		return x->blkno < y->blkno ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

static int fs_owners_report(struct fs_owners *o, fs_owners_fn fn, void *ctx)
{
	qsort(o->rec, o->nrec, sizeof(*o->rec), fs_owners_cmp_rec);
	for (size_t i = 0; i < o->nrec; i++) {
		struct fs_owner *r = &o->rec[i];
		struct fs_owners_ino *h = fs_owners_is_inode_kind(r->kind) ?
					  fs_owners_hit_find(o, r->ino) : NULL;
		int rc;

		if (h) {
			r->orphan = h->orphan;
			r->paths = (const char *const *)h->paths;
			r->npaths = h->paths ? h->nnames + (h->ino == FS_ROOT_INO) : 0;
			r->paths_left_out = h->left_out;
		}
		rc = fn(ctx, r);
		o->sum->reports++;
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return 0;
}

int fs_owners(struct fs *fs, const struct fs_extent *ext, size_t n,
	      const struct fs_owners_opts *opts, fs_owners_fn fn, void *ctx,
	      struct fs_owners_summary *sum)
{
	static const struct fs_owners_opts defaults;
	struct fs_owners_summary local;
	struct fs_owners o = { .fs = fs, .ext = ext, .n = n };
	uint64_t bits = 0;
	int rc;

	if (!opts)
		opts = &defaults;
	if (!sum)
		sum = &local;
	memset(sum, 0, sizeof(*sum));
	o.sum = sum;
	o.max_reports = opts->max_reports ? opts->max_reports : FS_OWNERS_MAX_REPORTS;
	o.max_paths = opts->max_paths ? opts->max_paths : FS_OWNERS_MAX_PATHS;
	rc = fs_owners_check(ext, n);
	if (rc)
		return rc;
	/* (O1): bits only for the blocks of Q inside the filesystem */
	o.bit_base = malloc((n ? n : 1) * sizeof(*o.bit_base));
	if (!o.bit_base)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t s = ext[i].start, e = s + ext[i].count;

		sum->blocks += ext[i].count;
		o.bit_base[i] = bits;
		if (s < fs->nblocks)
			bits += (e < fs->nblocks ? e : fs->nblocks) - s;
	}
	o.claimed = calloc(bits / 8 + 1, 1);
	if (!o.claimed) {
		rc = -ENOMEM;
		goto out;
	}
	jg_log(JG_LOG_DEBUG, FS_SUBSYS, "owners: dev=%s runs=%zu blocks=%llu", fs->dev->name, n,
	       (unsigned long long)sum->blocks);
	rc = fs_owners_places(&o);
	if (!rc)
		rc = fs_owners_maps(&o);
	if (!rc)
		rc = fs_owners_free(&o);
	if (!rc && !opts->no_paths)
		rc = fs_owners_names(&o);
	if (!rc)
		rc = fs_owners_report(&o, fn, ctx);
out:
	for (size_t i = 0; i < o.nhit; i++) {
		struct fs_owners_ino *h = &o.hit[i];

		for (unsigned int k = 0; k < h->nnames; k++)
			free(h->names[k].name);
		if (h->paths)
			for (unsigned int k = 0; k < h->nnames + (h->ino == FS_ROOT_INO); k++)
				free(h->paths[k]);
		free(h->names);
		free(h->paths);
	}
	for (size_t i = 0; i < o.ndir; i++)
		free(o.dir[i].name);
	free(o.dir);
	free(o.hit);
	free(o.rec);
	free(o.claimed);
	free(o.bit_base);
	jg_log(JG_LOG_DEBUG, FS_SUBSYS, "owners: dev=%s reports=%llu left_out=%llu -> %d",
	       fs->dev->name, (unsigned long long)sum->reports,
	       (unsigned long long)sum->blocks_left_out, rc);
	return rc;
}
