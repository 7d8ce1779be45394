// SPDX-License-Identifier: MIT
/*
 * src/fs/fsck.c - check and repair a filesystem (fs_fsck).
 *
 * Open: the array's resync-all is on while the journal is replayed (seed 006),
 * so every stripe recovery reads is made consistent; with -n the journal is
 * replayed in memory only (jnl_cfg.readonly) and nothing is ever written.
 *
 * Passes, as e2fsck:
 *   1 inodes     each group's inode bitmap against the inodes' modes; each inode's
 *                fields; every block it maps is in range and claimed once; its
 *                block count
 *   2 entries    every directory's buckets; each entry names an inode in use, of
 *                the type it says; entry counts; ".." (the parent field)
 *   3 reach      every inode in use reachable from the root (or on the orphan
 *                list); unattached ones go to /lost+found
 *   4 links      link counts: files the entries naming them, directories 2 plus
 *                their subdirectories
 *   5 bitmaps    block bitmaps and group free counts against what pass 1 found
 * With -y each problem is repaired in its own journal handle, orphans are freed,
 * and the filesystem is unmounted clean. Exit codes as e2fsck.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_i.h"

/* Credits of repairs (fs_i.h): an inode rewritten; @n entries of a directory
 * removed or fixed, each its block and an inode, and the directory inode; the
 * lost+found directory made, with its entry in the root */
#define FSCK_CREDITS_IPUT 8u
#define FSCK_CREDITS_DIR_FIX(n) (8u * (n) + 8u)
#define FSCK_CREDITS_LOST_FOUND (FS_CREDITS_DIR_ADD + 8u)

#define FSCK_IN_USE (1u << 0)
#define FSCK_DIR (1u << 1)
#define FSCK_REACHED (1u << 2)
#define FSCK_ORPHAN (1u << 3)
#define FSCK_BAD (1u << 4)

struct fsck {
	struct fs *fs;
	const struct fsck_opts *opts;
	struct fsck_report *rep;
	uint8_t *used;			/* block bitmap as found by pass 1 */
	uint8_t *iflags;		/* per inode FSCK_* */
	uint32_t *found;		/* entries naming each inode */
	uint32_t *subdirs;		/* subdirectories of each directory */
	uint64_t *dirparent;		/* the directory whose entry names each directory */
	uint64_t cur_ino, cur_blocks;
	uint64_t lf_ino;		/* lost+found, when repairs linked into it */
	bool dir_damaged;		/* a directory could not be read: no link repairs */
	struct fs_buf **salvaged;	/* inode table blocks salvaged, pinned to the end */
	unsigned int nsalvaged;
	bool unrepaired;
	int op_error;
};

static void fsck_problem(struct fsck *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fsck_problem(struct fsck *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->rep->problems_found++;
	jg_log(JG_LOG_WARN, "fsck", "dev=%s %s%s", c->fs->dev->name, msg,
	       c->opts->repair ? "" : " (not repaired: -n)");
}

static void fsck_fixed(struct fsck *c, int rc)
{
	if (!rc) {
		c->rep->problems_fixed++;
	} else {
		jg_log(JG_LOG_ERR, "fsck", "repair failed: %s", strerror(-rc));
		c->unrepaired = true;
	}
}

static bool fsck_test(const uint8_t *bm, uint64_t i)
{
	return bm[i / 8] & (1u << (i % 8));
}

static void fsck_set(uint8_t *bm, uint64_t i)
{
	bm[i / 8] |= (uint8_t)(1u << (i % 8));
}

/*
 * A bitmap block. A damaged one (reported when @report) reads as all clear and is
 * rebuilt whole by pass 5 with -y; *@rebuilt says so.
 */
static int fsck_bitmap_read(struct fsck *c, uint64_t blkno, uint32_t magic, const char *what,
			    bool report, struct fs_buf **out, bool *rebuilt)
{
	int rc = fs_bread(c->fs, blkno, magic, what, out);

	*rebuilt = false;
	if (rc != -EUCLEAN)
		return rc;
	if (report) {
		fsck_problem(c, "%s %llu damaged: rebuilt from the inodes", what,
			     (unsigned long long)blkno);
		if (!c->opts->repair)
			c->unrepaired = true;
	}
	*rebuilt = true;
	return fs_bget_new(c->fs, blkno, out);
}

/* -------------------------------------------------------------- pass 1 */

static int fsck_claim(void *ctx, uint64_t lblk, uint64_t pblk, unsigned int level)
{
	struct fsck *c = ctx;

	(void)lblk, (void)level;
	c->cur_blocks++;
	if (fsck_test(c->used, pblk)) {
		fsck_problem(c, "inode %llu: block %llu claimed twice", (unsigned long long)c->cur_ino,
			     (unsigned long long)pblk);
		c->unrepaired = true;	/* duplicate blocks: left to the user */
		return 0;
	}
	fsck_set(c->used, pblk);
	return 0;
}

static int fsck_mark(void *ctx, uint64_t lblk, uint64_t pblk, unsigned int level)
{
	(void)lblk, (void)level;
	fsck_set(((struct fsck *)ctx)->used, pblk);
	return 0;
}

/* Write @ip in its own handle (repairs). */
static int fsck_iput(struct fsck *c, struct fs_inode *ip)
{
	struct fs_tx *tx;
	int rc = fs_tx_start(c->fs, FSCK_CREDITS_IPUT, &tx);

	if (rc)
		return rc;
	rc = fs_iput(tx, ip);
	return fs_tx_end(tx, rc);
}

static int fsck_ibit_fix(struct fsck *c, uint64_t ino, bool set)
{
	struct fs *fs = c->fs;
	uint32_t g = (uint32_t)((ino - 1) / fs->ipg), bit = (uint32_t)((ino - 1) % fs->ipg);
	struct fs_buf *b;
	struct fs_tx *tx;
	int rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);

	if (rc)
		return rc;
	rc = fs_bread(fs, fs_group_start(fs, g) + 1, FS_MAGIC_IBITMAP, "inode bitmap", &b);
	if (!rc) {
		struct fs_buf *gb;

		if (set)
			fs_bit_set(b->data, bit);
		else
			fs_bit_clear(b->data, bit);
		rc = fs_bdirty(tx, b, FS_MAGIC_IBITMAP);
		fs_bput(fs, b);
		/* group.c (G4): a bitmap written is no longer the one mkfs left unwritten */
		if (!rc)
			rc = fs_bread(fs, fs->gdt_start + g / FS_GD_PER_BLOCK, FS_MAGIC_GDT,
				      "group descriptors", &gb);
		if (!rc) {
			struct fs_group_desc *gd =
			    (struct fs_group_desc *)(gb->data + FS_GD_OFFSET) + g % FS_GD_PER_BLOCK;

			if (jg_le32(gd->flags) & FS_GD_IBITMAP_UNINIT) {
				gd->flags = jg_cpu_to_le32(jg_le32(gd->flags) & ~FS_GD_IBITMAP_UNINIT);
				rc = fs_bdirty(tx, gb, FS_MAGIC_GDT);
			}
			fs_bput(fs, gb);
		}
	}
	return fs_tx_end(tx, rc);
}

/* Clear a damaged inode: mode 0 (pass 5 then frees its blocks and bit). */
static int fsck_iclear(struct fsck *c, uint64_t ino)
{
	struct fs_inode ip;

	memset(&ip, 0, sizeof(ip));
	ip.ino = ino;
	return fsck_iput(c, &ip);
}

static void fsck_inode(struct fsck *c, struct fs_inode *ip, bool bit)
{
	struct fs *fs = c->fs;
	uint64_t ino = ip->ino;
	int rc;

	if (!ip->mode) {
		if (bit) {
			fsck_problem(c, "inode %llu marked in use but free", (unsigned long long)ino);
			if (c->opts->repair)
				fsck_fixed(c, fsck_ibit_fix(c, ino, false));
		}
		return;
	}
	if (!bit) {
		fsck_problem(c, "inode %llu in use but marked free", (unsigned long long)ino);
		if (c->opts->repair)
			fsck_fixed(c, fsck_ibit_fix(c, ino, true));
	}
	c->rep->inodes_checked++;
	if (fs_inode_check(fs, ip, fs_inode_blkno(fs, ino))) {
		fsck_problem(c, "inode %llu damaged: cleared", (unsigned long long)ino);
		c->iflags[ino] |= FSCK_BAD;
		if (c->opts->repair)
			fsck_fixed(c, fsck_iclear(c, ino));
		return;
	}
	c->iflags[ino] |= FSCK_IN_USE | (S_ISDIR(ip->mode) ? FSCK_DIR : 0);
	c->cur_ino = ino;
	c->cur_blocks = 0;
	rc = fs_bmap_walk(fs, ip, fsck_claim, c);
	if (!rc && ip->xattr_blk)
		rc = fsck_claim(c, 0, ip->xattr_blk, 0);
	if (rc) {
		fsck_problem(c, "inode %llu: block map damaged (%s)", (unsigned long long)ino,
			     strerror(-rc));
		c->unrepaired = true;
		return;
	}
	if (c->cur_blocks != ip->blocks) {
		fsck_problem(c, "inode %llu: block count %llu, maps %llu", (unsigned long long)ino,
			     (unsigned long long)ip->blocks, (unsigned long long)c->cur_blocks);
		if (c->opts->repair) {
			ip->blocks = c->cur_blocks;
			fsck_fixed(c, fsck_iput(c, ip));
		}
	}
	if (S_ISLNK(ip->mode) && (!ip->size || ip->size > FS_SYMLINK_MAX)) {
		fsck_problem(c, "symlink %llu: size %llu", (unsigned long long)ino,
			     (unsigned long long)ip->size);
		c->unrepaired = true;
	}
	if (S_ISDIR(ip->mode) &&
	    ip->size != (uint64_t)JG_BLOCK_SIZE * (FS_DIR_FIRST_BUCKET + ip->dir_buckets)) {
		fsck_problem(c, "directory %llu: size %llu", (unsigned long long)ino,
			     (unsigned long long)ip->size);
		if (c->opts->repair) {
			ip->size = (uint64_t)JG_BLOCK_SIZE * (FS_DIR_FIRST_BUCKET + ip->dir_buckets);
			fsck_fixed(c, fsck_iput(c, ip));
		}
	}
}

/*
 * An inode table block that fails its checks. A torn write or a flipped bit
 * leaves most of its 15 inodes whole: when the block's header still names it
 * (magic and home), each inode whose fields pass fs_inode_check is kept and the
 * others are cleared; a block from elsewhere (another magic or home) keeps none.
 * With -y the block is rewritten so, under a fresh crc; with -n the salvaged
 * copy lives only in the cache, sealed so that the later passes read it as they
 * would after the repair, and pinned (a re-read would find the damage again).
 */
static int fsck_itable_salvage(struct fsck *c, uint32_t g, uint64_t blkno, struct fs_buf **out)
{
	struct fs *fs = c->fs;
	struct fs_buf **pins;
	const struct jg_blk_hdr *h;
	unsigned int kept = 0, lost = 0;
	struct fs_buf *b = NULL;
	struct fs_tx *tx;
	uint8_t *raw;
	bool ours;
	int rc;

	pins = realloc(c->salvaged, (c->nsalvaged + 1) * sizeof(*pins));
	if (!pins)
		return -ENOMEM;
	c->salvaged = pins;
	raw = jg_alloc_blocks(1);
	if (!raw)
		return -ENOMEM;
	rc = jnl_read(fs->jnl, blkno, 1, raw);
	if (!rc)
		rc = fs_bget_new(fs, blkno, &b);
	if (rc)
		goto out;
	h = (const struct jg_blk_hdr *)raw;
	ours = jg_le32(h->magic) == FS_MAGIC_ITABLE && jg_le64(h->blkno) == blkno;
	for (uint32_t s = 0; s < FS_INODES_PER_BLOCK; s++) {
		const uint8_t *d = raw + FS_INODE_SIZE * (s + 1);
		uint64_t ino = (uint64_t)g * fs->ipg + (blkno - fs_group_start(fs, g) - 2) *
			       FS_INODES_PER_BLOCK + s + 1;
		struct fs_inode ip;

		fs_inode_decode((const struct fs_dinode *)d, ino, &ip);
		if (!ip.mode)
			continue;
		if (!ours || fs_inode_check(fs, &ip, blkno)) {
			lost++;
			continue;
		}
		memcpy(b->data + FS_INODE_SIZE * (s + 1), d, FS_INODE_SIZE);
		kept++;
	}
	fsck_problem(c, "group %u: inode table block %llu damaged: %u inodes kept, %u cleared", g,
		     (unsigned long long)blkno, kept, lost);
	if (c->opts->repair) {
		rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
		if (!rc) {
			rc = fs_bdirty(tx, b, FS_MAGIC_ITABLE);
			rc = fs_tx_end(tx, rc);
		}
		fsck_fixed(c, rc);
		rc = 0;
	} else {
		jg_blk_seal(b->data, JG_BLOCK_SIZE, FS_MAGIC_ITABLE, FS_FORMAT_VERSION, 0, 0, blkno,
			    fs->seed);
		b->magic = FS_MAGIC_ITABLE;
	}
	/* the pass's reference, and the pin held to the end */
	b->refs++;
	c->salvaged[c->nsalvaged++] = b;
	*out = b;
	b = NULL;
out:
	fs_bput(fs, b);
	free(raw);
	return rc;
}

/* @g groups of pass 1 (@pass5 false) or of pass 5 done: tell the caller's progress. */
static void fsck_progress(struct fsck *c, uint64_t g, bool pass5)
{
	uint64_t n = c->fs->ngroups;

	if (c->opts->progress)
		c->opts->progress(c->opts->progress_ctx, (pass5 ? n : 0) + g, 2 * n);
}

static int fsck_pass1(struct fsck *c)
{
	struct fs *fs = c->fs;
	int rc;

	for (uint32_t g = 0; g < fs->ngroups; g++) {
		uint64_t start = fs_group_start(fs, g);
		struct fs_group_desc gd;
		struct fs_buf *ib;
		bool ib_rebuilt;

		fsck_progress(c, g, false);
		for (uint32_t i = 0; i < 2 + fs->itable_blocks; i++)
			fsck_set(c->used, start + i);
		for (uint64_t i = fs_group_size(fs, g); i < fs->bpg && start + i < fs->nblocks; i++)
			fsck_set(c->used, start + i);
		rc = fs_gd_read(fs, g, &gd);
		if (rc)
			return rc;
		rc = fsck_bitmap_read(c, start + 1, FS_MAGIC_IBITMAP, "inode bitmap", true, &ib,
				      &ib_rebuilt);
		if (rc)
			return rc;
		for (uint32_t t = 0; t < fs->itable_blocks; t++) {
			struct fs_buf *tb = NULL;
			bool init = t < jg_le32(gd.itable_init);

			if (init) {
				rc = fs_bread(fs, start + 2 + t, FS_MAGIC_ITABLE, "inode table", &tb);
				if (rc == -EUCLEAN)
					rc = fsck_itable_salvage(c, g, start + 2 + t, &tb);
				if (rc) {
					fs_bput(fs, ib);
					return rc;
				}
			}
			for (uint32_t s = 0; s < FS_INODES_PER_BLOCK; s++) {
				uint32_t idx = t * FS_INODES_PER_BLOCK + s;
				uint64_t ino = (uint64_t)g * fs->ipg + idx + 1;
				struct fs_inode ip;

				if (tb)
					fs_inode_decode((const struct fs_dinode *)(tb->data +
						FS_INODE_SIZE * (s + 1)), ino, &ip);
				else
					memset(&ip, 0, sizeof(ip));
				ip.ino = ino;
				/* a rebuilt bitmap agrees with the inodes by construction */
				fsck_inode(c, &ip, ib_rebuilt ? ip.mode != 0 :
						   fs_bit_test(ib->data, idx));
			}
			fs_bput(fs, tb);
		}
		fs_bput(fs, ib);
	}
	return 0;
}

/* -------------------------------------------------------------- pass 2 */

struct fsck_dirwalk {
	struct fsck *c;
	struct fs_inode *dip;
	uint64_t entries;
	uint64_t bad[64];		/* entries to remove (names by hash order) */
	char badname[64][FS_NAME_MAX + 1];
	unsigned int nbad;
	uint64_t fixino[64];
	unsigned int fixft[64];
	char fixname[64][FS_NAME_MAX + 1];
	unsigned int nfix;
};

static int fsck_entry(void *ctx, const char *name, size_t len, uint64_t ino, unsigned int ft,
		      uint64_t hash)
{
	struct fsck_dirwalk *w = ctx;
	struct fsck *c = w->c;
	struct fs_inode ip;

	(void)hash;
	w->entries++;
	if (!(c->iflags[ino] & FSCK_IN_USE)) {
		fsck_problem(c, "directory %llu: entry '%.*s' names free inode %llu",
			     (unsigned long long)w->dip->ino, (int)len, name, (unsigned long long)ino);
		if (w->nbad < 64) {
			memcpy(w->badname[w->nbad], name, len);
			w->badname[w->nbad][len] = 0;
			w->bad[w->nbad++] = ino;
		} else {
			c->unrepaired = true;
		}
		return 0;
	}
	c->found[ino]++;
	if (c->iflags[ino] & FSCK_DIR) {
		c->subdirs[w->dip->ino]++;
		if (c->found[ino] > 1) {
			fsck_problem(c, "directory %llu has several entries", (unsigned long long)ino);
			c->unrepaired = true;
		}
		c->dirparent[ino] = w->dip->ino;
	}
	if (!fs_iget(c->fs, ino, &ip) && fs_mode_to_ft(ip.mode) != ft) {
		fsck_problem(c, "directory %llu: entry '%.*s' has type %u, inode %llu is %u",
			     (unsigned long long)w->dip->ino, (int)len, name, ft,
			     (unsigned long long)ino, fs_mode_to_ft(ip.mode));
		if (w->nfix < 64) {
			memcpy(w->fixname[w->nfix], name, len);
			w->fixname[w->nfix][len] = 0;
			w->fixft[w->nfix] = fs_mode_to_ft(ip.mode);
			w->fixino[w->nfix++] = ino;
		} else {
			c->unrepaired = true;
		}
	}
	return 0;
}

static int fsck_dir(struct fsck *c, uint64_t ino)
{
	struct fs *fs = c->fs;
	struct fsck_dirwalk *w = calloc(1, sizeof(*w));
	struct fs_inode dip;
	struct fs_tx *tx;
	int rc;

	if (!w)
		return -ENOMEM;
	rc = fs_iget(fs, ino, &dip);
	if (rc)
		goto out;
	w->c = c;
	w->dip = &dip;
	c->rep->dirs_checked++;
	rc = fs_dir_iterate(fs, &dip, 2, fsck_entry, w);
	if (rc == -EUCLEAN) {
		fsck_problem(c, "directory %llu: damaged blocks", (unsigned long long)ino);
		c->unrepaired = true;
		c->dir_damaged = true;
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	if (c->opts->repair && (w->nbad || w->nfix)) {
		rc = fs_tx_start(fs, FSCK_CREDITS_DIR_FIX(w->nbad + w->nfix), &tx);
		if (rc)
			goto out;
		for (unsigned int i = 0; i < w->nbad && !rc; i++) {
			rc = fs_dir_remove(tx, &dip, w->badname[i], strlen(w->badname[i]));
			w->entries--;
			fsck_fixed(c, rc);
		}
		for (unsigned int i = 0; i < w->nfix && !rc; i++) {
			rc = fs_dir_set(tx, &dip, w->fixname[i], strlen(w->fixname[i]), w->fixino[i],
					w->fixft[i]);
			fsck_fixed(c, rc);
		}
		if (!rc)
			rc = fs_iput(tx, &dip);
		rc = fs_tx_end(tx, rc);
		if (rc)
			goto out;
	}
	if (w->entries != dip.dir_entries) {
		fsck_problem(c, "directory %llu: entry count %llu, holds %llu", (unsigned long long)ino,
			     (unsigned long long)dip.dir_entries, (unsigned long long)w->entries);
		if (c->opts->repair) {
			rc = fs_iget(fs, ino, &dip);
			if (!rc) {
				dip.dir_entries = w->entries;
				rc = fsck_iput(c, &dip);
			}
			fsck_fixed(c, rc);
			rc = 0;
		}
	}
out:
	free(w);
	return rc;
}

static int fsck_pass2(struct fsck *c)
{
	int rc;

	for (uint64_t ino = 1; ino <= c->fs->ninodes; ino++) {
		if (!(c->iflags[ino] & FSCK_DIR))
			continue;
		rc = fsck_dir(c, ino);
		if (rc)
			return rc;
	}
	return 0;
}

/* -------------------------------------------------------------- pass 3 */

static int fsck_mark_orphans(struct fsck *c)
{
	struct fs *fs = c->fs;
	uint64_t ino = jg_le64(fs->sb.orphan_head);
	struct fs_inode ip;

	for (uint64_t n = 0; ino && n <= fs->ninodes; n++) {
		if (!fs_ino_valid(fs, ino) || !(c->iflags[ino] & FSCK_IN_USE) || fs_iget(fs, ino, &ip)) {
			fsck_problem(c, "orphan list names inode %llu, not in use",
				     (unsigned long long)ino);
			c->unrepaired = true;
			return 0;
		}
		c->iflags[ino] |= FSCK_ORPHAN;
		ino = ip.orphan_next;
	}
	return 0;
}

struct fsck_reach {
	struct fsck *c;
	uint64_t *queue;
	uint64_t tail;
};

static int fsck_reach_entry(void *ctx, const char *name, size_t len, uint64_t ino,
			    unsigned int ft, uint64_t hash)
{
	struct fsck_reach *r = ctx;

	(void)name, (void)len, (void)ft, (void)hash;
	if (!(r->c->iflags[ino] & FSCK_IN_USE) || (r->c->iflags[ino] & FSCK_REACHED))
		return 0;
	r->c->iflags[ino] |= FSCK_REACHED;
	if (r->c->iflags[ino] & FSCK_DIR)
		r->queue[r->tail++] = ino;
	return 0;
}

static int fsck_reach_from(struct fsck *c, uint64_t start)
{
	struct fsck_reach r = { .c = c };
	uint64_t head = 0;
	int rc = 0;

	r.queue = malloc(sizeof(*r.queue) * (c->fs->ninodes + 1));
	if (!r.queue)
		return -ENOMEM;
	c->iflags[start] |= FSCK_REACHED;
	r.queue[r.tail++] = start;
	while (head < r.tail && !rc) {
		struct fs_inode dip;

		if (fs_iget(c->fs, r.queue[head++], &dip))
			continue;
		rc = fs_dir_iterate(c->fs, &dip, 2, fsck_reach_entry, &r);
		if (rc == -EUCLEAN)
			rc = 0;	/* reported by pass 2 */
	}
	free(r.queue);
	return rc;
}

/* Link @ino into /lost+found as "#ino". */
static int fsck_reconnect(struct fsck *c, uint64_t ino)
{
	struct fs *fs = c->fs;
	struct fs_inode lf, ip;
	struct fs_attr a;
	struct fs_tx *tx;
	char name[32];
	int rc;

	rc = fs_lookup(fs, FS_ROOT_INO, "lost+found", &a);
	if (rc == -ENOENT) {
		rc = fs_mkdir(fs, FS_ROOT_INO, "lost+found", 0700, 0, 0, &a);
		if (!rc) {
			c->iflags[a.ino] |= FSCK_IN_USE | FSCK_DIR | FSCK_REACHED;
			c->found[a.ino] = 1;
			c->subdirs[FS_ROOT_INO]++;
			c->dirparent[a.ino] = FS_ROOT_INO;
		}
	}
	if (rc)
		return rc;
	c->lf_ino = a.ino;
	rc = fs_tx_start(fs, FSCK_CREDITS_LOST_FOUND, &tx);
	if (rc)
		return rc;
	rc = fs_iget(fs, a.ino, &lf);
	if (!rc)
		rc = fs_iget(fs, ino, &ip);
	if (rc)
		goto out;
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)ino);
	rc = fs_dir_add(tx, &lf, name, strlen(name), ino, fs_mode_to_ft(ip.mode));
	if (rc)
		goto out;
	c->found[ino]++;
	if (S_ISDIR(ip.mode)) {
		ip.parent = a.ino;
		c->subdirs[a.ino]++;
		c->dirparent[ino] = a.ino;
		lf.nlink++;
		rc = fs_iput(tx, &ip);
	}
	if (!rc)
		rc = fs_iput(tx, &lf);
out:
	rc = fs_tx_end(tx, rc);
	if (!rc && S_ISDIR(ip.mode))
		rc = fsck_reach_from(c, ino);
	c->iflags[ino] |= FSCK_REACHED;
	return rc;
}

static int fsck_pass3(struct fsck *c)
{
	struct fs *fs = c->fs;
	int rc;

	if (!(c->iflags[FS_ROOT_INO] & FSCK_DIR)) {
		/* no entry can be counted from it: no link count is known either */
		fsck_problem(c, "root inode is not a directory");
		c->unrepaired = true;
		c->dir_damaged = true;
		return 0;
	}
	rc = fsck_mark_orphans(c);
	if (!rc)
		rc = fsck_reach_from(c, FS_ROOT_INO);
	if (rc)
		return rc;
	for (uint64_t ino = 1; ino <= fs->ninodes; ino++) {
		uint8_t f = c->iflags[ino];

		if (!(f & FSCK_IN_USE) || (f & (FSCK_REACHED | FSCK_ORPHAN)))
			continue;
		if (c->found[ino]) {
			/* inside an unattached subtree: its top is reconnected */
			continue;
		}
		fsck_problem(c, "inode %llu unattached", (unsigned long long)ino);
		if (c->opts->repair && !c->dir_damaged)
			fsck_fixed(c, fsck_reconnect(c, ino));
		else if (c->opts->repair)
			c->unrepaired = true;
	}
	if (c->lf_ino) {
		/* blocks lost+found took while repairing are in use too */
		struct fs_inode lf;

		rc = fs_iget(fs, c->lf_ino, &lf);
		if (!rc)
			rc = fs_bmap_walk(fs, &lf, fsck_mark, c);
		if (rc)
			return rc;
	}
	for (uint64_t ino = 1; ino <= fs->ninodes; ino++) {
		uint8_t f = c->iflags[ino];

		if ((f & FSCK_IN_USE) && !(f & (FSCK_REACHED | FSCK_ORPHAN)) && c->found[ino]) {
			fsck_problem(c, "inode %llu unreachable from the root (loop)",
				     (unsigned long long)ino);
			c->unrepaired = true;
		}
	}
	return 0;
}

/* -------------------------------------------------------------- pass 4 */

static int fsck_pass4(struct fsck *c)
{
	struct fs *fs = c->fs;
	struct fs_inode ip;
	int rc;

	for (uint64_t ino = 1; ino <= fs->ninodes; ino++) {
		uint8_t f = c->iflags[ino];
		uint32_t want;

		if (!(f & FSCK_IN_USE))
			continue;
		rc = fs_iget(fs, ino, &ip);
		if (rc)
			return rc;
		if ((f & FSCK_ORPHAN) && !c->found[ino])
			want = 0;
		else if (f & FSCK_DIR)
			want = 2 + c->subdirs[ino];
		else
			want = c->found[ino];
		if ((f & FSCK_DIR) && ino != FS_ROOT_INO && c->found[ino] &&
		    ip.parent != c->dirparent[ino]) {
			fsck_problem(c, "directory %llu: parent %llu, entry in %llu",
				     (unsigned long long)ino, (unsigned long long)ip.parent,
				     (unsigned long long)c->dirparent[ino]);
			if (c->opts->repair) {
				ip.parent = c->dirparent[ino];
				fsck_fixed(c, fsck_iput(c, &ip));
			}
		}
		if (ip.nlink != want) {
			fsck_problem(c, "inode %llu: link count %u, should be %u",
				     (unsigned long long)ino, ip.nlink, want);
			if (c->dir_damaged) {
				c->unrepaired = true;
			} else if (c->opts->repair) {
				ip.nlink = want;
				fsck_fixed(c, fsck_iput(c, &ip));
			}
		}
	}
	return 0;
}

/* -------------------------------------------------------------- pass 5 */

static int fsck_pass5(struct fsck *c)
{
	struct fs *fs = c->fs;
	int rc = 0;

	for (uint32_t g = 0; g < fs->ngroups && !rc; g++) {
		uint64_t start = fs_group_start(fs, g);
		uint32_t size = fs_group_size(fs, g), free_b = 0, free_i = 0, dirs = 0, diffs = 0;
		struct fs_buf *bb = NULL, *ib = NULL, *gb = NULL;
		struct fs_group_desc *gd;
		bool gd_bad, bb_rebuilt = false, ib_rebuilt = false;

		fsck_progress(c, g, true);

		rc = fsck_bitmap_read(c, start, FS_MAGIC_BBITMAP, "block bitmap", true, &bb,
				      &bb_rebuilt);
		if (!rc)
			rc = fsck_bitmap_read(c, start + 1, FS_MAGIC_IBITMAP, "inode bitmap", false, &ib,
					      &ib_rebuilt);
		if (!rc)
			rc = fs_bread(fs, fs->gdt_start + g / FS_GD_PER_BLOCK, FS_MAGIC_GDT,
				      "group descriptors", &gb);
		if (rc)
			goto next;
		for (uint32_t i = 0; i < size; i++) {
			bool want = fsck_test(c->used, start + i), have = fs_bit_test(bb->data, i);

			if (want != have) {
				/* a rebuilt bitmap was reported once, as the damaged block */
				if (bb_rebuilt)
					diffs++;
				else if (diffs++ < 8)
					fsck_problem(c, "block %llu %s", (unsigned long long)(start + i),
						     want ? "in use but marked free" :
							    "marked in use but unused (leaked)");
				else
					c->rep->problems_found++;
				if (want)
					fs_bit_set(bb->data, i);
				else
					fs_bit_clear(bb->data, i);
			}
			if (!want)
				free_b++;
		}
		if (bb_rebuilt)
			for (uint32_t i = size; i < FS_BITMAP_BITS; i++)
				fs_bit_set(bb->data, i);
		if (ib_rebuilt)
			for (uint32_t i = fs->ipg; i < FS_BITMAP_BITS; i++)
				fs_bit_set(ib->data, i);
		c->rep->blocks_used += size - free_b;
		for (uint32_t i = 0; i < fs->ipg; i++) {
			uint64_t ino = (uint64_t)g * fs->ipg + i + 1;
			uint8_t f = c->iflags[ino];

			if (!(f & FSCK_IN_USE))
				free_i++;
			else if (f & FSCK_DIR)
				dirs++;
			/* keep the inode bitmap as pass 1 left it (repaired there) */
			if (c->opts->repair) {
				if (f & FSCK_IN_USE)
					fs_bit_set(ib->data, i);
				else
					fs_bit_clear(ib->data, i);
			}
		}
		gd = (struct fs_group_desc *)(gb->data + FS_GD_OFFSET) + g % FS_GD_PER_BLOCK;
		gd_bad = jg_le32(gd->free_blocks) != free_b || jg_le32(gd->free_inodes) != free_i ||
			 jg_le32(gd->used_dirs) != dirs;
		if (gd_bad)
			fsck_problem(c, "group %u: free blocks %u/%u, free inodes %u/%u, dirs %u/%u "
				     "(recorded/counted)", g, jg_le32(gd->free_blocks), free_b,
				     jg_le32(gd->free_inodes), free_i, jg_le32(gd->used_dirs), dirs);
		if (c->opts->repair && (diffs || gd_bad || bb_rebuilt || ib_rebuilt)) {
			struct fs_tx *tx;

			gd->free_blocks = jg_cpu_to_le32(free_b);
			gd->free_inodes = jg_cpu_to_le32(free_i);
			gd->used_dirs = jg_cpu_to_le32(dirs);
			gd->flags = jg_cpu_to_le32(0); /* both bitmaps written below (group.c (G4)) */
			rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
			if (!rc) {
				rc = fs_bdirty(tx, bb, FS_MAGIC_BBITMAP);
				if (!rc)
					rc = fs_bdirty(tx, ib, FS_MAGIC_IBITMAP);
				if (!rc)
					rc = fs_bdirty(tx, gb, FS_MAGIC_GDT);
				rc = fs_tx_end(tx, rc);
			}
			for (uint32_t k = 0; k < (bb_rebuilt ? 1 : diffs) + gd_bad + ib_rebuilt; k++)
				fsck_fixed(c, rc);
		} else if (diffs || bb_rebuilt || ib_rebuilt) {
			/* -n: cached bitmaps changed above (or stand-ins): forget them */
			uint64_t at = bb->blkno;

			fs_bput(fs, bb);
			fs_bput(fs, ib);
			bb = ib = NULL;
			fs_bcache_drop(fs, at);
			fs_bcache_drop(fs, at + 1);
		}
next:
		fs_bput(fs, bb);
		fs_bput(fs, ib);
		fs_bput(fs, gb);
	}
	if (!rc && c->opts->repair)
		rc = fs_groups_load(fs);
	return rc;
}

/* ------------------------------------------------------------ data checksums */

/*
 * DATA_CSUM: every checksum block of the region must verify (fs_bread heals one
 * the array can rebuild). One that cannot be read right loses its slots: -y
 * writes it again with every slot 0 ("no checksum recorded": its blocks are
 * not verified until written again), never a slot it cannot vouch for.
 */
static int fsck_dcsum(struct fsck *c)
{
	struct fs *fs = c->fs;
	struct fs_buf *b;
	struct fs_tx *tx;
	int rc;

	/* dcsum.c (D3): the blocks past the mark were never written, nothing to check */
	for (uint64_t i = 0; i < fs->dcsum_init; i++) {
		uint64_t blkno = fs->dcsum_start + i;

		rc = fs_bread(fs, blkno, FS_MAGIC_DCSUM, "data checksums", &b);
		if (!rc) {
			fs_bput(fs, b);
			continue;
		}
		if (rc != -EUCLEAN && rc != -EIO)
			return rc;
		fsck_problem(c, "data checksum block %llu unreadable (%s): its %u slots lost",
			     (unsigned long long)blkno, strerror(-rc), FS_DCSUM_PER_BLOCK);
		if (!c->opts->repair)
			continue;
		rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
		if (!rc) {
			rc = fs_bget_new(fs, blkno, &b);
			if (!rc) {
				rc = fs_bdirty(tx, b, FS_MAGIC_DCSUM);
				fs_bput(fs, b);
			}
			rc = fs_tx_end(tx, rc);
		}
		fsck_fixed(c, rc);
	}
	return 0;
}

/* ------------------------------------------------------------------ main */

static int fsck_run(struct fsck *c)
{
	struct fs *fs = c->fs;
	int rc;

	if (jg_le32(fs->sb.state) & FS_STATE_ERROR) {
		fsck_problem(c, "superblock records errors");
		if (c->opts->repair) {
			fs->sb.state = jg_cpu_to_le32(jg_le32(fs->sb.state) & ~FS_STATE_ERROR);
			c->rep->problems_fixed++;	/* written with the clean state at unmount */
		}
	}
	rc = fsck_pass1(c);
	if (!rc)
		rc = fsck_pass2(c);
	if (!rc)
		rc = fsck_pass3(c);
	if (!rc)
		rc = fsck_pass4(c);
	if (!rc)
		rc = fsck_pass5(c);
	if (!rc)
		rc = fsck_dcsum(c);
	if (!rc)
		fsck_progress(c, fs->ngroups, true);
	return rc;
}

int fs_fsck(struct blk_dev *dev, const struct fsck_opts *opts, struct fsck_report *rep)
{
	struct fs_mount_opts mo = { .data_mode = JNL_DATA_ORDERED, .no_commit_thread = true,
				    .readonly = !opts->repair, .cache_blocks = 4096 };
	struct fsck c = { .opts = opts, .rep = rep };
	struct fs *fs = NULL;
	int rc, rs;

	memset(rep, 0, sizeof(*rep));
	/* replay with every stripe it reads resynced first (seed 006) */
	rs = blk_ctl(dev, BLK_CTL_SET_RESYNC_ALL, NULL);
	rc = fs_open(dev, &mo, true, &fs);
	if (!rs)
		blk_ctl(dev, BLK_CTL_CLEAR_RESYNC_ALL, NULL);
	if (rc) {
		jg_log(JG_LOG_ERR, "fsck", "dev=%s cannot open the filesystem: %s", dev->name, strerror(-rc));
		if (rc == -EUCLEAN) {
			rep->problems_found++;
			return 4;
		}
		return 8;
	}
	rep->recovery = fs->recovery;
	/* the state after replay: a crash while mounted left CLEAN cleared (fs_start) */
	rep->was_clean =
	    (jg_le32(fs->sb.state) & (FS_STATE_CLEAN | FS_STATE_ERROR)) == FS_STATE_CLEAN &&
	    !fs->recovery.transactions_replayed;
	if (opts->skip_clean && rep->was_clean) {
		rep->skipped_clean = true;
		if (opts->repair)
			return fs_unmount(fs) ? 8 : 0;
		fs_abandon(fs);
		return 0;
	}
	c.fs = fs;
	if (opts->repair) {
		rc = jnl_start(fs->jnl);
		if (rc)
			goto out;
		fs->started = true;
		/* the data checksums of the blocks in flight at the crash, as a mount */
		jg_mutex_lock(&fs->lock);
		rc = fs_dcsum_settle(fs);
		jg_mutex_unlock(&fs->lock);
		if (rc)
			goto out;
	}
	c.used = calloc(fs->nblocks / 8 + 1, 1);
	c.iflags = calloc(fs->ninodes + 1, 1);
	c.found = calloc(fs->ninodes + 1, sizeof(*c.found));
	c.subdirs = calloc(fs->ninodes + 1, sizeof(*c.subdirs));
	c.dirparent = calloc(fs->ninodes + 1, sizeof(*c.dirparent));
	if (!c.used || !c.iflags || !c.found || !c.subdirs || !c.dirparent) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fsck_run(&c);
	/* fs_set_error during checks must not stop repairs: fsck owns the errors */
	fs->readonly = !opts->repair;
	fs->error = false;
	if (!rc && opts->repair && jg_le64(fs->sb.orphan_head)) {
		/* finish what the orphan list records, as a mount would */
		struct fs_inode ip;
		uint64_t ino;

		/* held as by any caller: the steps of (L1) let it go and take it back */
		jg_mutex_lock(&fs->lock);
		while (!rc && (ino = jg_le64(fs->sb.orphan_head))) {
			rc = fs_iget(fs, ino, &ip);
			if (!rc)
				rc = ip.nlink ? fs_inode_truncate_blocks(fs, ino) : fs_inode_evict(fs, ino);
		}
		jg_mutex_unlock(&fs->lock);
	}
	if (opts->verbose)
		jg_log(JG_LOG_INFO, "fsck",
		       "dev=%s inodes=%llu dirs=%llu blocks_used=%llu problems=%llu fixed=%llu",
		       dev->name, (unsigned long long)rep->inodes_checked,
		       (unsigned long long)rep->dirs_checked, (unsigned long long)rep->blocks_used,
		       (unsigned long long)rep->problems_found, (unsigned long long)rep->problems_fixed);
out:
	for (unsigned int i = 0; i < c.nsalvaged; i++)
		fs_bput(fs, c.salvaged[i]);
	free(c.salvaged);
	free(c.used);
	free(c.iflags);
	free(c.found);
	free(c.subdirs);
	free(c.dirparent);
	if (opts->repair) {
		int rc2 = fs_unmount(fs);

		rc = rc ?: rc2;
	} else {
		fs_abandon(fs);
	}
	if (rc) {
		jg_log(JG_LOG_ERR, "fsck", "dev=%s check failed: %s", dev->name, strerror(-rc));
		return 8;
	}
	if (!rep->problems_found)
		return 0;
	if (opts->repair && !c.unrepaired && rep->problems_fixed >= rep->problems_found)
		return 1;
	return 4;
}
