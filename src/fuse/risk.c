// SPDX-License-Identifier: MIT
/*
 * src/fuse/risk.c - name the files behind array blocks that may read wrong or
 * cannot be read (issue 22): after a dirty degraded array was mounted (force,
 * or ro), those in the rows the crash may have left wrong; after a read failed,
 * those of the blocks no member could give back.
 *
 * The array knows the rows (raid_rows_at_risk: the dirty bitmap regions and the
 * rows the journal asked to resync, where a member is missing) and nothing of
 * files; the filesystem knows who owns blocks (fs_owners). Once the journal has
 * replayed, the daemon asks one and then the other, and logs one line per file
 * or metadata structure at risk, and keeps the counts for `jgrfs status`. In
 * declared mode the journal names exactly the rows it had in flight: no other
 * RAID can say which files a write hole may have hit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fop_i.h"

#define FOP_RISK_MAX_ROWS 65536u	/* rows asked about in one question */

struct fop_risk {
	struct fop_ctx *c;
	uint64_t *inos;	/* inodes already named, to name each once */
	size_t ninos, cap;
};

static bool fop_risk_seen(struct fop_risk *r, uint64_t ino)
{
	for (size_t i = 0; i < r->ninos; i++)
		if (r->inos[i] == ino)
			return true;
	if (r->ninos == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		uint64_t *n = realloc(r->inos, cap * sizeof(*n));

		if (!n)
			return false; /* named twice rather than not at all */
		r->inos = n;
		r->cap = cap;
	}
	r->inos[r->ninos++] = ino;
	return false;
}

static int fop_risk_owner(void *ctx, const struct fs_owner *o)
{
	struct fop_risk *r = ctx;
	struct fop_ctx *c = r->c;

	switch (o->kind) {
	case FS_OWNER_FREE:
	case FS_OWNER_OUTSIDE:
		return 0;
	case FS_OWNER_DATA:
	case FS_OWNER_DIR:
	case FS_OWNER_SYMLINK:
	case FS_OWNER_INDIRECT:
	case FS_OWNER_XATTR:
		if (fop_risk_seen(r, o->ino))
			return 0;
		c->risk_files++;
		jg_log(JG_LOG_WARN, "fuse", "at risk: %s inode=%llu%s%s",
		       o->npaths ? o->paths[0] : o->orphan ? "(open-unlinked)" : "(no name)",
		       (unsigned long long)o->ino, o->npaths > 1 ? " also=" : "",
		       o->npaths > 1 ? o->paths[1] : "");
		return 0;
	default:
		c->risk_metadata++;
		jg_log(JG_LOG_WARN, "fuse", "at risk: %s block=%llu blocks=%llu%s",
		       fs_owner_kind_name(o->kind), (unsigned long long)o->blkno,
		       (unsigned long long)o->count,
		       o->kind == FS_OWNER_ITABLE ? " (its inodes' attributes and maps)" : "");
		return 0;
	}
}

void fop_name_at_risk(struct fop_ctx *c)
{
	struct fop_risk r = {.c = c};
	struct fs_owners_summary sum;
	struct fs_extent *ext = NULL;
	struct raid_info ri;
	uint64_t *rows, more;
	size_t n, ne = 0;
	bool all;
	int rc;

	rows = calloc(FOP_RISK_MAX_ROWS, sizeof(*rows));
	if (!rows) {
		jg_log(JG_LOG_ERR, "fuse", "at risk: no memory to ask which rows");
		return;
	}
	raid_rows_at_risk(c->array, rows, FOP_RISK_MAX_ROWS, &n, &more, &all);
	c->risk_rows = n + more;
	c->risk_all = all;
	if (all) {
		jg_log(JG_LOG_WARN, "fuse",
		       "at risk: every file: the resync policy keeps no record of the rows written at the crash, and a member is missing");
		goto out;
	}
	if (!n)
		goto out;
	raid_info_get(c->array, &ri);
	ext = calloc(n, sizeof(*ext));
	if (!ext) {
		jg_log(JG_LOG_ERR, "fuse", "at risk: %zu rows, no memory to name their files", n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t rb = (uint64_t)ri.ndata * ri.chunk_blocks;

		if (ne && ext[ne - 1].start + ext[ne - 1].count == rows[i] * rb)
			ext[ne - 1].count += rb;
		else
			ext[ne++] = (struct fs_extent){.start = rows[i] * rb, .count = rb};
	}
	jg_log(JG_LOG_WARN, "fuse",
	       "at risk: %llu rows were written at the crash with a member missing: what they hold may read wrong (the write hole); naming it",
	       (unsigned long long)c->risk_rows);
	rc = fs_owners(c->fs, ext, ne, NULL, fop_risk_owner, &r, &sum);
	if (rc)
		jg_log(JG_LOG_ERR, "fuse", "at risk: naming the files failed: %s", strerror(-rc));
	jg_log(JG_LOG_WARN, "fuse",
	       "at risk: %llu files, %llu metadata structures%s%s; the rest of the volume is whole",
	       (unsigned long long)c->risk_files, (unsigned long long)c->risk_metadata,
	       more ? " (more rows than asked about: the list is not complete)" : "",
	       sum.blocks_left_out ? " (more owners than reported)" : "");
out:
	free(ext);
	free(rows);
	free(r.inos);
}

static int fop_lost_owner(void *ctx, const struct fs_owner *o)
{
	struct fop_ctx *c = ctx;

	if (o->kind == FS_OWNER_FREE || o->kind == FS_OWNER_OUTSIDE)
		return 0;
	c->lost_named++;
	snprintf(c->lost_last, sizeof(c->lost_last), "%s inode %llu %s block %llu",
		 o->npaths ? o->paths[0] : o->ino ? "(no name)" : "", (unsigned long long)o->ino,
		 fs_owner_kind_name(o->kind), (unsigned long long)o->lblk);
	if (o->ino)
		jg_log(JG_LOG_ERR, "fuse",
		       "lost: %s inode=%llu %s block %llu (array block %llu): no member can give it back; reads of it fail with EIO, the rest of the volume is whole",
		       o->npaths ? o->paths[0] : o->orphan ? "(open-unlinked)" : "(no name)",
		       (unsigned long long)o->ino, fs_owner_kind_name(o->kind),
		       (unsigned long long)o->lblk, (unsigned long long)o->blkno);
	else
		jg_log(JG_LOG_ERR, "fuse",
		       "lost: %s (array block %llu): no member can give it back",
		       fs_owner_kind_name(o->kind), (unsigned long long)o->blkno);
	return 0;
}

void fop_name_lost(struct fop_ctx *c)
{
	uint64_t blocks[16];
	struct fs_extent ext[16];
	size_t n, ne = 0;

	if (!c->array)
		return;
	pthread_mutex_lock(&c->lost_lock);
	n = raid_lost_blocks(c->array, &c->lost_seq, blocks, 16);
	/* sorted, merged, as fs_owners wants them */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && blocks[k - 1] > blocks[k]; k--) {
			uint64_t t = blocks[k];

			blocks[k] = blocks[k - 1];
			blocks[k - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		bool done = false;

		/* a program that reads a lost block again and again: one scan, one line */
		for (unsigned int k = 0; k < 16 && k < c->lost_ndone; k++)
			done |= c->lost_done[k] == blocks[i];
		if (done)
			continue;
		c->lost_done[c->lost_ndone++ % 16] = blocks[i];
		if (ne && ext[ne - 1].start + ext[ne - 1].count >= blocks[i]) {
			if (ext[ne - 1].start + ext[ne - 1].count == blocks[i])
				ext[ne - 1].count++;
			continue;
		}
		ext[ne++] = (struct fs_extent){.start = blocks[i], .count = 1};
	}
	if (ne)
		fs_owners(c->fs, ext, ne, NULL, fop_lost_owner, c, NULL);
	pthread_mutex_unlock(&c->lost_lock);
}
