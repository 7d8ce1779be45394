// SPDX-License-Identifier: MIT
/*
 * src/fs/dcsum.c - checksums of file data blocks (issue 27, ro_compat DATA_CSUM).
 *
 * Where: a region of checksum blocks after the filesystem's last block
 * (fs_format.h, "data checksums"): one le32 slot per array block, in metadata
 * blocks with the common header, so a damaged checksum block is itself healed
 * by fs_bread and its changes go through the journal like a bitmap's.
 *
 * Write: every data block a file hands the journal goes through fs_data_dirty,
 * which sets the block's slot in the same handle (fs_dcsum_set). A handle
 * writing many blocks would log the same checksum block once per data block:
 * the change is made in the cached buffer (pinned, tx->dcsum) and handed to the
 * journal once, when the handle moves to another checksum block or stops
 * (fs_dcsum_flush from fs_tx_stop). Meanwhile the big lock is held, so no other
 * caller sees the buffer differ from the journal's copy (F2) and the
 * transaction cannot commit without it (the handle is open).
 *
 * (D1) A slot and its data block commit together or not at all. The checksum
 * block is logged when the handle first takes it, before any slot changes: a
 * failure there fails the data block too, and once logged, logging it again
 * cannot fail short of a journal abort (journal.h), which commits nothing. A
 * slot whose data block the journal then refuses is set back
 * (fs_dcsum_restore): the journal keeps the block's old contents.
 *
 * Read: a data block read (fs_read, the partial block a write merges into, a
 * truncate's tail) is checked against its slot (fs_dcsum_verify_run); a
 * mismatch is healed from the array's redundancy (jnl_read_heal with the slot
 * as the oracle, as fs_bread heals metadata) or is -EIO, logged with the
 * inode, logical and array block: wrong bytes are never handed back.
 *
 * (D3) Lazy region (FS_FEATURE_INCOMPAT_LAZY_DCSUM): mkfs writes no checksum
 * block. Blocks below the mark (fs->dcsum_init, sb.dcsum_init) are written;
 * those from the mark on were never written and read as every slot 0: a slot
 * there is never read from the array (fs_dcsum_get), and fs_bread makes such a
 * block in memory (fs_dcsum_uninit). The mark moves only by fs_dcsum_advance,
 * under the big lock: the blocks it passes are written with every slot 0
 * straight to the array (nobody else writes them: no slot there was ever set,
 * the journal never held them), made durable by a flush, and only then is the
 * new mark logged in the caller's handle. So a cut anywhere leaves a durable
 * mark below which every block is written: before the commit the old mark
 * stands (the blocks past it, written or not, are unwritten to it). A slot is
 * set only below the mark: the handle that sets one past it first moves the
 * mark over its block (fs_dcsum_buf), in the same transaction as the slot, so
 * the slot is never lost to a mark that did not move nor overwritten by the
 * initialiser, which only writes blocks past the mark. The background
 * initialiser (fs_dcsum_init_step, from the daemon beside the initial sync)
 * calls the same function a step at a time. Why not through the journal:
 * logging the whole region (0.1 % of the array) would write it twice and
 * crowd the log; blocks no one else can write need no log to be atomic, only
 * the order "blocks durable, then the mark". See docs/design/lazy-init.md.
 *
 * Crash: see docs/design/checksums.md, "Data checksums". In declared mode the journal
 * hands over the blocks its uncommitted transaction declared
 * (jnl_recovery_take_declared); fs_dcsum_settle sets their slots from what
 * the array holds, in transactions committed before the filesystem is used.
 * Until then (and for a read-only mount, which cannot write) those blocks are
 * not verified (fs->dcsum_unsettled).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* the slots a settling handle sets at most before it stops and another starts */
#define FS_DCSUM_SETTLE_STEP 64u

uint32_t fs_dcsum_of(const struct fs *fs, const void *blk)
{
	uint32_t c = jg_crc32c(fs->seed, blk, JG_BLOCK_SIZE);

	return c == FS_DCSUM_NONE ? FS_DCSUM_ZERO : c;
}

static uint64_t fs_dcsum_blkno(const struct fs *fs, uint64_t blkno)
{
	return fs->dcsum_start + blkno / FS_DCSUM_PER_BLOCK;
}

static le32 *fs_dcsum_slot(uint8_t *cblk, uint64_t blkno)
{
	return (le32 *)(cblk + FS_DCSUM_OFFSET) + blkno % FS_DCSUM_PER_BLOCK;
}

bool fs_dcsum_in_region(const struct fs *fs, uint64_t blkno)
{
	return fs->dcsum_blocks && blkno >= fs->dcsum_start &&
	       blkno - fs->dcsum_start < fs->dcsum_blocks;
}

bool fs_dcsum_unwritten(const struct fs *fs, uint64_t blkno)
{
	return fs_dcsum_in_region(fs, blkno) && blkno - fs->dcsum_start >= fs->dcsum_init;
}

/* A checksum block as mkfs wrote them before (D3): the header, every slot 0. */
static void fs_dcsum_empty(const struct fs *fs, uint64_t cb, uint8_t *blk)
{
	memset(blk, 0, JG_BLOCK_SIZE);
	jg_blk_seal(blk, JG_BLOCK_SIZE, FS_MAGIC_DCSUM, FS_FORMAT_VERSION, 0, 0, cb, fs->seed);
}

int fs_dcsum_uninit(struct fs *fs, uint64_t blkno, uint32_t magic, uint8_t *blk, bool *made)
{
	*made = false;
	if (magic != FS_MAGIC_DCSUM || !fs_dcsum_unwritten(fs, blkno))
		return 0;
	fs_dcsum_empty(fs, blkno, blk);
	*made = true;
	return 0;
}

/* checksum blocks one request set of fs_dcsum_advance carries */
#define FS_DCSUM_INIT_BATCH 64u

/* (D3) Write checksum blocks [@from, @upto) of the region empty, then a flush. */
static int fs_dcsum_write_empty(struct fs *fs, uint64_t from, uint64_t upto)
{
	struct blk_req reqs[FS_DCSUM_INIT_BATCH];
	uint8_t *blks = jg_alloc_blocks(FS_DCSUM_INIT_BATCH);
	enum jg_opoint op;
	unsigned int n;
	int rc = 0;

	if (!blks)
		return -ENOMEM;
	op = jg_opoint_set(JG_OP_FS_DCSUM_INIT);
	for (uint64_t i = from; i < upto && !rc; i += n) {
		n = upto - i < FS_DCSUM_INIT_BATCH ? (unsigned int)(upto - i) : FS_DCSUM_INIT_BATCH;
		for (unsigned int k = 0; k < n; k++) {
			uint64_t cb = fs->dcsum_start + i + k;
			uint8_t *b = blks + (size_t)k * JG_BLOCK_SIZE;

			fs_dcsum_empty(fs, cb, b);
			reqs[k] = (struct blk_req){ .op = BLK_OP_WRITE, .blkno = cb, .nblocks = 1,
						    .buf = b };
		}
		rc = blk_submit(fs->dev, reqs, n);
	}
	/* durable before any mark that vouches for them is handed to the journal */
	if (!rc)
		rc = blk_flush(fs->dev);
	jg_opoint_set(op);
	free(blks);
	return rc;
}

/*
 * (D3) Move the mark to checksum block @upto of the region: the blocks it passes
 * written empty and durable first, then the new mark logged in @tx (at the
 * region's end: the flag cleared and the field 0, a volume like a fully written
 * one). The big lock is held: nobody sets a slot or moves the mark meanwhile.
 */
static int fs_dcsum_advance(struct fs_tx *tx, uint64_t upto)
{
	struct fs *fs = tx->fs;
	le32 incompat = fs->sb.feature_incompat;
	le64 mark = fs->sb.dcsum_init;
	int rc;

	JG_ASSERT_HELD(&fs->lock);
	if (upto <= fs->dcsum_init)
		return 0;
	JG_ASSERT(upto <= fs->dcsum_blocks);
	rc = fs_dcsum_write_empty(fs, fs->dcsum_init, upto);
	if (rc) {
		jg_log(JG_LOG_ERR, FS_SUBSYS,
		       "dev=%s data checksum blocks %llu..%llu not written: %s", fs->dev->name,
		       (unsigned long long)(fs->dcsum_start + fs->dcsum_init),
		       (unsigned long long)(fs->dcsum_start + upto - 1), strerror(-rc));
		return rc;
	}
	if (upto == fs->dcsum_blocks) {
		fs->sb.feature_incompat = jg_cpu_to_le32(jg_le32(incompat) &
							 ~FS_FEATURE_INCOMPAT_LAZY_DCSUM);
		fs->sb.dcsum_init = jg_cpu_to_le64(0);
	} else {
		fs->sb.dcsum_init = jg_cpu_to_le64(upto);
	}
	fs_tx_track(tx, FS_SB_BLKNO);
	rc = fs_sb_write(tx);
	if (rc) {
		/* the blocks written stay past the old mark: unwritten to it */
		fs->sb.feature_incompat = incompat;
		fs->sb.dcsum_init = mark;
		return rc;
	}
	fs->dcsum_init = upto;
	if (upto == fs->dcsum_blocks)
		jg_log(JG_LOG_INFO, FS_SUBSYS,
		       "dev=%s data checksum region written whole (%llu blocks)", fs->dev->name,
		       (unsigned long long)fs->dcsum_blocks);
	return 0;
}

int fs_dcsum_init_step(struct fs *fs, uint64_t max, uint64_t *left)
{
	struct fs_tx *tx;
	uint64_t n;
	int rc;

	jg_mutex_lock(&fs->lock);
	n = fs->dcsum_blocks - fs->dcsum_init;
	rc = 0;
	if (n && (fs->readonly || !fs->started))
		rc = -EROFS;
	else if (n)
		rc = fs_tx_start(fs, FS_CREDITS_FEW, &tx);
	if (n && !rc) {
		rc = fs_dcsum_advance(tx, fs->dcsum_init + (max < n ? max : n));
		rc = fs_tx_end(tx, rc);
	}
	*left = fs->dcsum_blocks - fs->dcsum_init;
	jg_mutex_unlock(&fs->lock);
	return rc;
}

int fs_dcsum_flush(struct fs_tx *tx)
{
	struct fs_buf *b = tx->dcsum;
	struct fs *fs = tx->fs;
	uint64_t cb;
	int rc;

	if (!b)
		return 0;
	tx->dcsum = NULL;
	cb = b->blkno;
	rc = fs_bdirty(tx, b, FS_MAGIC_DCSUM);
	fs_bput(fs, b);
	if (rc) {
		/* (D1) logged when taken: only an abort (nothing commits) gets here.
		 * The slots stay as the cache has them: each names the data block the
		 * journal took with it (a refused one got its old slot back), which
		 * is what reads see until the volume is mounted again (T1) */
		jg_log(JG_LOG_ERR, FS_SUBSYS, "dev=%s data checksum block %llu not logged: %d",
		       fs->dev->name, (unsigned long long)cb, rc);
	}
	return rc;
}

/* The pinned checksum buffer holding @blkno's slot, made tx->dcsum. */
static int fs_dcsum_buf(struct fs_tx *tx, uint64_t blkno, struct fs_buf **out)
{
	uint64_t cb = fs_dcsum_blkno(tx->fs, blkno);
	int rc;

	if (tx->dcsum && tx->dcsum->blkno != cb) {
		rc = fs_dcsum_flush(tx);
		if (rc)
			return rc;
	}
	if (!tx->dcsum) {
		/* (D3) a slot is set only below the mark: moved over this block first */
		rc = fs_dcsum_advance(tx, cb - tx->fs->dcsum_start + 1);
		if (rc)
			return rc;
		rc = fs_bread(tx->fs, cb, FS_MAGIC_DCSUM, "data checksums", &tx->dcsum);
		if (rc)
			return rc;
		/* (D1) logged unchanged now, so that logging its changes cannot fail */
		rc = fs_bdirty(tx, tx->dcsum, FS_MAGIC_DCSUM);
		if (rc) {
			fs_bput(tx->fs, tx->dcsum);
			tx->dcsum = NULL;
			fs_bcache_drop(tx->fs, cb);	/* its header was sealed anew (F2) */
			return rc;
		}
	}
	fs_tx_track(tx, cb);
	*out = tx->dcsum;
	return 0;
}

int fs_dcsum_set_value(struct fs_tx *tx, uint64_t blkno, uint32_t v, uint32_t *old)
{
	struct fs_buf *b;
	le32 *slot;
	int rc;

	if (blkno >= tx->fs->nblocks)
		return -EINVAL;
	rc = fs_dcsum_buf(tx, blkno, &b);
	if (rc)
		return rc;
	slot = fs_dcsum_slot(b->data, blkno);
	if (old)
		*old = jg_le32(*slot);
	*slot = jg_cpu_to_le32(v);
	return 0;
}

int fs_dcsum_set(struct fs_tx *tx, uint64_t blkno, const void *blk, uint32_t *old)
{
	if (!tx->fs->dcsum_blocks)
		return 0;
	return fs_dcsum_set_value(tx, blkno, fs_dcsum_of(tx->fs, blk), old);
}

void fs_dcsum_restore(struct fs_tx *tx, uint64_t blkno, uint32_t old)
{
	if (!tx->fs->dcsum_blocks)
		return;
	/* fs_dcsum_set just took this block's checksum buffer: nothing to read nor log */
	JG_ASSERT(tx->dcsum && tx->dcsum->blkno == fs_dcsum_blkno(tx->fs, blkno));
	*fs_dcsum_slot(tx->dcsum->data, blkno) = jg_cpu_to_le32(old);
}

static int fs_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool fs_dcsum_unsettled(const struct fs *fs, uint64_t blkno)
{
	return fs->dcsum_nunsettled && bsearch(&blkno, fs->dcsum_unsettled, fs->dcsum_nunsettled,
					       sizeof(blkno), fs_u64_cmp);
}

/* @blkno's slot: FS_DCSUM_NONE when none is recorded or it is not to be trusted now. */
static int fs_dcsum_get(struct fs *fs, struct fs_buf **cache, uint64_t blkno, uint32_t *out)
{
	uint64_t cb;
	int rc;

	*out = FS_DCSUM_NONE;
	if (!fs->dcsum_blocks || blkno >= fs->nblocks || fs_dcsum_unsettled(fs, blkno))
		return 0;
	cb = fs_dcsum_blkno(fs, blkno);
	if (fs_dcsum_unwritten(fs, cb))
		return 0; /* (D3) past the mark: never set, never read from the array */
	if (*cache && (*cache)->blkno != cb) {
		fs_bput(fs, *cache);
		*cache = NULL;
	}
	if (!*cache) {
		rc = fs_bread(fs, cb, FS_MAGIC_DCSUM, "data checksums", cache);
		if (rc)
			return rc;
	}
	*out = jg_le32(*fs_dcsum_slot((*cache)->data, blkno));
	return 0;
}

int fs_data_csum_check_locked(struct fs *fs, uint64_t blkno, const void *blk)
{
	struct fs_buf *cache = NULL;
	uint32_t want;
	int rc = fs_dcsum_get(fs, &cache, blkno, &want);

	fs_bput(fs, cache);
	if (rc)
		return rc;
	if (want == FS_DCSUM_NONE)
		return -ENOENT;
	return fs_dcsum_of(fs, blk) == want;
}

int fs_data_csum_check(struct fs *fs, uint64_t blkno, const void *blk)
{
	int rc;

	jg_mutex_lock(&fs->lock);
	rc = fs_data_csum_check_locked(fs, blkno, blk);
	jg_mutex_unlock(&fs->lock);
	return rc;
}

struct fs_dcsum_heal_ctx {
	const struct fs *fs;
	uint32_t want;
};

static int fs_dcsum_heal_verify(void *ctx, const void *blk)
{
	const struct fs_dcsum_heal_ctx *c = ctx;

	return fs_dcsum_of(c->fs, blk) == c->want ? 0 : -EUCLEAN;
}

/* @blk, array block @pblk (logical @lblk of @ino), does not match slot @want. */
static int fs_dcsum_heal(struct fs *fs, uint64_t ino, uint64_t lblk, uint64_t pblk, uint8_t *blk,
			 uint32_t want)
{
	struct fs_dcsum_heal_ctx c = {.fs = fs, .want = want};
	uint32_t rewritten = 0, got = fs_dcsum_of(fs, blk);
	char roles[64];
	int hr;

	hr = jnl_read_heal(fs->jnl, pblk, blk, fs_dcsum_heal_verify, &c, &rewritten);
	if (!hr && fs_dcsum_of(fs, blk) == want) {
		fs->dcsum_heals++;
		jg_log(JG_LOG_WARN, FS_SUBSYS,
		       "data dev=%s ino=%llu lblk=%llu blkno=%llu failed its checksum, healed: "
		       "members rewritten: %s",
		       fs->dev->name, (unsigned long long)ino, (unsigned long long)lblk,
		       (unsigned long long)pblk, jg_roles_str(rewritten, roles, sizeof(roles)));
		return 0;
	}
	fs->dcsum_errors++;
	jg_log(JG_LOG_ERR, FS_SUBSYS,
	       "data dev=%s ino=%llu lblk=%llu blkno=%llu checksum error: crc 0x%08x, recorded "
	       "0x%08x, not healed (%s): EIO",
	       fs->dev->name, (unsigned long long)ino, (unsigned long long)lblk,
	       (unsigned long long)pblk, got, want, hr ? strerror(-hr) : "no version verified");
	return -EIO;
}

int fs_dcsum_verify_run(struct fs *fs, uint64_t ino, uint64_t lblk, uint64_t pblk, uint64_t n,
			uint8_t *buf)
{
	struct fs_buf *cache = NULL;
	int rc = 0;

	if (!fs->dcsum_blocks)
		return 0;
	for (uint64_t i = 0; i < n && !rc; i++) {
		uint8_t *blk = buf + i * JG_BLOCK_SIZE;
		uint32_t want;

		rc = fs_dcsum_get(fs, &cache, pblk + i, &want);
		if (rc) {
			/* the checksum block itself is damaged beyond healing: no verdict */
			rc = -EIO;
			break;
		}
		if (want != FS_DCSUM_NONE && fs_dcsum_of(fs, blk) != want)
			rc = fs_dcsum_heal(fs, ino, lblk + i, pblk + i, blk, want);
	}
	fs_bput(fs, cache);
	return rc;
}

int fs_dcsum_take_unsettled(struct fs *fs)
{
	uint64_t *list;
	size_t n, m = 0;

	jnl_recovery_take_declared(fs->jnl, &list, &n);
	if (!fs->dcsum_blocks || !n) {
		free(list);
		return 0;
	}
	qsort(list, n, sizeof(*list), fs_u64_cmp);
	for (size_t i = 0; i < n; i++)
		if (!m || list[m - 1] != list[i])
			list[m++] = list[i];
	fs->dcsum_unsettled = list;
	fs->dcsum_nunsettled = m;
	return 0;
}

int fs_dcsum_settle(struct fs *fs)
{
	uint8_t *blk;
	struct fs_tx *tx = NULL;
	uint64_t done = 0;
	int rc = 0;

	JG_ASSERT_HELD(&fs->lock);
	if (!fs->dcsum_blocks)
		return 0;
	if (!fs->dcsum_nunsettled)
		return jnl_recovery_settled(fs->jnl); /* a pointer that named nothing */
	blk = jg_alloc_blocks(1);
	if (!blk)
		return -ENOMEM;
	for (size_t i = 0; i < fs->dcsum_nunsettled && !rc; i++) {
		uint64_t b = fs->dcsum_unsettled[i];

		if (b >= fs->nblocks)
			continue;
		if (tx && !fs_tx_room(tx, 1)) {
			rc = fs_tx_stop(tx);
			tx = NULL;
			if (rc)
				break;
		}
		if (!tx) {
			rc = fs_tx_start(fs, FS_CREDITS_SETTLE, &tx);
			if (rc)
				break;
		}
		rc = jnl_read(fs->jnl, b, 1, blk);
		if (rc) {
			/* unreadable: its slot stays; a read of it fails anyway */
			jg_log(JG_LOG_WARN, FS_SUBSYS, "dev=%s settle blkno=%llu read failed: %s",
			       fs->dev->name, (unsigned long long)b, strerror(-rc));
			rc = 0;
			continue;
		}
		rc = fs_dcsum_set(tx, b, blk, NULL);
		done++;
	}
	if (tx)
		rc = fs_tx_end(tx, rc);
	free(blk);
	/* durable before the list is forgotten and the filesystem used */
	if (!rc)
		rc = fs_commit_all_locked(fs);
	if (rc) {
		jg_log(JG_LOG_ERR, FS_SUBSYS, "dev=%s settling data checksums failed: %s",
		       fs->dev->name, strerror(-rc));
		return rc;
	}
	/* only now may the journal forget which blocks they were */
	rc = jnl_recovery_settled(fs->jnl);
	if (rc)
		return rc;
	jg_log(JG_LOG_INFO, FS_SUBSYS,
	       "dev=%s data checksums of %llu blocks in flight at the crash settled", fs->dev->name,
	       (unsigned long long)done);
	fs->dcsum_settled += done;
	free(fs->dcsum_unsettled);
	fs->dcsum_unsettled = NULL;
	fs->dcsum_nunsettled = 0;
	return 0;
}
