// SPDX-License-Identifier: MIT
/*
 * src/raid/assemble.c - assembly: read the superblocks of the given devices,
 * check that they make one array, decide whether it may run, build it.
 * The superblock invariants of writing ((S1), (S3), (S6), (S8), (S9)) are
 * stated in super.c.
 *
 * Invariants:
 * (S2) Assembly verifies every given device (magic -> crc -> version -> home ->
 *      ranges -> same array -> unique role -> events) before it writes anything.
 * (S4) A dirty and degraded array may have rows whose parity does not match and
 *      no redundancy left to find out which chunk is wrong (the write hole):
 *      assembly refuses it without cfg->force.
 * (S5) A member absent at assembly is recorded failed in the others' superblocks
 *      before any data is written, so a member that is one event behind the
 *      freshest and not marked failed missed only a superblock round (a crash
 *      during it), never data: it is accepted.
 * (S7) A superblock whose data area does not fit in 64 bits, or whose policy
 *      needs a bitmap it does not have, is refused at assembly (-EUCLEAN),
 *      before anything is written.
 * (S10) A member being rebuilt (recovery_mask) is whole in the rows below its
 *      mark (recovery_rows, its own superblock's: one event behind, the older
 *      and lower mark) and missing above. It counts as missing for (S4) and
 *      for "too few". But (S4) is about rows: a dirty array whose bitmap
 *      records every write in flight, with no dirty region in a row that lacks
 *      a member (raid_dirty_rows_whole: none at all with a member absent, none
 *      at or above the lowest mark otherwise), has no row with the write hole.
 *      It is assembled without force and its recovery resync runs (the dirty
 *      rows are whole). So a crash during a rebuild, or of a degraded array
 *      with nothing in flight, needs no force, and the rebuild resumes
 *      (rebuild.c (R4)).
 * (S11) A device whose superblock says RAID_ROLE_SPARE is a hot spare
 *      (spare.c (P1)): verified as a member's copies are, and it must name this
 *      array's uuid and geometry and be large enough, but it plays no part in
 *      the events, the stale and failed checks or "too few", is accepted at any
 *      event count, and superblock rounds and assembly's catch-up never write
 *      it (raid_sb_writers_locked covers the members only).
 * (S14) A device claiming a role that another given device claims at a later
 *      event count is the member that role had before a hot spare or a rebuild
 *      took it over (a failed disk that came back, listed with its
 *      replacement): it is left out as in (S12), never read or written, with a
 *      warning naming both, as MD kicks a non-fresh device. The role is held,
 *      so nothing runs degraded for it. Two claims at the same event count
 *      cannot be told apart (a copy of a member, or one device given twice by
 *      two paths): refused.
 * (S12) A given device neither of whose superblock copies verifies, but that
 *      is not foreign (a copy has the magic and fails its crc or ranges, or a
 *      read fails: a disk that rotted or fails), is left out as if not given:
 *      never read or written again by this assembly, its role missing. The
 *      array then runs degraded where its parity allows (and (S4) still
 *      refuses a dirty one without force), as MD assembles without a device
 *      whose superblock it cannot read; the device is replaced or rebuilt.
 *      A device with no magic in either copy is refused: given by mistake.
 * (S13) With cfg->need_all, every role the freshest superblock has in sync (not
 *      failed) must be among the given devices, else assembly refuses before
 *      anything is written. Started without it, the absent member would be
 *      recorded failed ((S5): stale, a rebuild or readd to come back) and a hot
 *      spare would take its role: a degraded start is the user's decision
 *      (MD's --run, btrfs's -o degraded), not what a path left out by mistake
 *      decides. A role recorded failed earlier does not count: that array ran
 *      degraded before and starts as it was. A device left out for want of a
 *      valid superblock (S12) leaves its role absent like one not given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raid_i.h"

/*
 * (S10) Whether the rows a dirty array may have left inconsistent all have
 * every member: its bitmap records every write in flight (policy bitmap or
 * journal, and not @pending: the journal's declared writes skip the bitmap),
 * and no dirty region reaches a row that lacks a member -- any row when a
 * member is absent or failed (@missing), the rows at or past the lowest mark of
 * the members being rebuilt otherwise. Then no row has the write hole. Bitmap
 * loaded.
 */
bool raid_dirty_rows_whole(struct raid_array *a, uint32_t missing, bool pending)
{
	uint32_t rec = raid_recovering(a);
	uint64_t low = UINT64_MAX;

	if (pending || (a->policy != RAID_RESYNC_BITMAP && a->policy != RAID_RESYNC_JOURNAL))
		return false;
	for (unsigned int i = 0; i < a->geo.n; i++)
		if ((rec & (1u << i)) && a->m[i].recovered < low)
			low = a->m[i].recovered;
	return raid_bitmap_dirty_below(a, missing ? 0 : low);
}

/* ---------------------------------------------------------------- assembly */

struct raid_cand { /* one given device during assembly */
	struct blk_dev *dev;
	struct raid_sb sb;
	uint64_t events;
	unsigned int role;
	unsigned int copy;	/* the superblock copy taken (S8) */
	bool other_same;	/* the other copy is valid and at the same event */
	unsigned int given;	/* its index among the devices given */
};

/*
 * (S2) Verify one superblock copy read from member block @home: magic -> crc ->
 * version -> home -> features -> ranges. Logs the failed check naming the device
 * and block; returns 0, -EINVAL (not a superblock: foreign), -EUCLEAN, -EOPNOTSUPP.
 */
static int raid_sb_verify(const uint8_t *blk, const char *name, uint64_t home,
			  struct raid_cand *c)
{
	const struct raid_sb *sb = (const struct raid_sb *)blk;
	uint32_t seed = jg_crc_seed(sb->uuid);
	uint32_t level, n, chunk, incompat;
	uint64_t off, dblocks;
	struct raid_geo g;
	int rc;

	if (jg_le32(sb->hdr.magic) != RAID_SB_MAGIC) {
		jg_log(JG_LOG_ERR, "raid",
		       "member superblock dev=%s blkno=%llu: no jgrfs member superblock there: not "
		       "a member of a jgrfs array (foreign device)",
		       name, (unsigned long long)home);
		return -EINVAL;
	}
	rc = jg_blk_check(blk, RAID_BS, RAID_SB_MAGIC, RAID_FORMAT_VERSION, home, seed, "raid",
			  "member superblock", name);
	if (rc)
		return rc;
	incompat = jg_le32(sb->feature_incompat);
	if (incompat & ~RAID_FEATURE_INCOMPAT_SUPP) {
		jg_log(JG_LOG_ERR, "raid",
		       "member superblock dev=%s blkno=%llu unknown incompat features 0x%x", name,
		       (unsigned long long)home, incompat);
		return -EOPNOTSUPP;
	}
	if (home == RAID_SB_COPY_BLKNO && !(incompat & RAID_FEATURE_INCOMPAT_SB_COPY)) {
		jg_log(JG_LOG_ERR, "raid",
		       "member superblock dev=%s blkno=%llu is a second copy but says the array has one",
		       name, (unsigned long long)home);
		return -EUCLEAN;
	}
	level = jg_le32(sb->level);
	n = jg_le32(sb->nmembers);
	chunk = jg_le32(sb->chunk_blocks);
	off = jg_le64(sb->data_offset);
	dblocks = jg_le64(sb->data_blocks);
	if (raid_geo_init(&g, level, n, chunk, off, dblocks) ||
	    (jg_le32(sb->role) >= n && jg_le32(sb->role) != RAID_ROLE_SPARE) ||
	    jg_le32(sb->layout) != g.layout || off % chunk || dblocks % chunk ||
	    g.array_blocks != jg_le64(sb->array_blocks) ||
	    jg_le32(sb->resync_policy) > RAID_RESYNC_JOURNAL ||
	    jg_le32(sb->state) > RAID_STATE_DIRTY ||
	    off < RAID_BITMAP_FIRST(incompat) + (uint64_t)jg_le32(sb->bitmap_blocks) ||
	    (jg_le32(sb->bitmap_blocks) &&
	     (!jg_le32(sb->bitmap_region_blocks) ||
	      (jg_le32(sb->bitmap_region_blocks) & (jg_le32(sb->bitmap_region_blocks) - 1)) ||
	      jg_le64(sb->bitmap_regions) !=
		  raid_div_up(g.array_blocks, jg_le32(sb->bitmap_region_blocks)) ||
	      jg_le64(sb->bitmap_regions) >
		  (uint64_t)jg_le32(sb->bitmap_blocks) * RAID_BITMAP_BITS_PER_BLOCK)) ||
	    (jg_le32(sb->failed_mask) & ~raid_role_mask_all(n)) ||
	    (jg_le32(sb->recovery_mask) & ~raid_role_mask_all(n)) ||
	    (jg_le32(sb->recovery_mask) & jg_le32(sb->failed_mask)) ||
	    !(incompat & RAID_FEATURE_INCOMPAT_RECOVERY) != !jg_le32(sb->recovery_mask) ||
	    jg_le64(sb->recovery_rows) > g.rows ||
	    ((incompat & RAID_FEATURE_INCOMPAT_SYNCING) ? jg_le64(sb->sync_rows) >= g.rows
						       : jg_le64(sb->sync_rows) != 0) ||
	    (jg_le64(sb->recovery_rows) &&
	     (jg_le32(sb->role) == RAID_ROLE_SPARE ||
	      !(jg_le32(sb->recovery_mask) & (1u << jg_le32(sb->role)))))) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "member superblock dev=%s blkno=%llu bad field ranges: level=%u members=%u role=%u chunk_blocks=%u data_offset=%llu data_blocks=%llu",
		    name, (unsigned long long)home, level, n, jg_le32(sb->role), chunk,
		    (unsigned long long)off, (unsigned long long)dblocks);
		return -EUCLEAN;
	}
	memcpy(&c->sb, sb, sizeof(c->sb));
	c->events = jg_le64(sb->hdr.seq);
	c->role = jg_le32(sb->role);
	return 0;
}

/*
 * (S7) Checks of a verified superblock that its verification does not make: the
 * data area's end and the array size fit in 64 bits (a wrapped sum would pass
 * the member size check and map rows onto the superblock), and a bitmap or
 * journal policy has a bitmap to record writes in. -EUCLEAN after a message.
 */
static int raid_sb_check_extent(const struct raid_sb *sb, const char *name)
{
	uint64_t off = jg_le64(sb->data_offset), dblocks = jg_le64(sb->data_blocks);
	uint32_t n = jg_le32(sb->nmembers), level = jg_le32(sb->level);
	uint32_t policy = jg_le32(sb->resync_policy);
	uint64_t ndata = n - (level == 6 ? 2u : 1u);

	if (off > UINT64_MAX - dblocks || dblocks > UINT64_MAX / ndata) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "member superblock dev=%s blkno=0 bad field ranges: data_offset=%llu + data_blocks=%llu overflows 64 bits",
		    name, (unsigned long long)off, (unsigned long long)dblocks);
		return -EUCLEAN;
	}
	if ((policy == RAID_RESYNC_BITMAP || policy == RAID_RESYNC_JOURNAL) &&
	    !jg_le32(sb->bitmap_blocks)) {
		jg_log(
		    JG_LOG_ERR, "raid",
		    "member superblock dev=%s blkno=0 bad field ranges: resync policy %s needs a write-intent bitmap and bitmap_blocks=0",
		    name, raid_resync_policy_name((enum raid_resync_policy)policy));
		return -EUCLEAN;
	}
	return 0;
}

/* raid_sb_read_member(): no copy valid, but the device was a member (S12) */
#define RAID_SB_UNUSABLE 1

/*
 * (S8) Read and verify the superblock copies of @dev into @c: the newer valid
 * copy wins; one valid copy is enough (a cut tore the other). Returns 0;
 * RAID_SB_UNUSABLE when no copy is valid but they were damaged or unreadable
 * rather than foreign (S12); else the error of copy 0 (-EINVAL: no copy has the
 * magic, a foreign device; -EOPNOTSUPP: a newer format). Never writes:
 * assembly's own update rewrites a torn copy.
 */
static int raid_sb_read_member(struct blk_dev *dev, uint8_t *buf, struct raid_cand *c)
{
	struct raid_cand c1 = {0};
	int rc0, rc1;

	rc0 = blk_rw(dev, BLK_OP_READ, RAID_SB_BLKNO, 1, buf, 0);
	if (rc0)
		jg_log(JG_LOG_ERR, "raid", "dev=%s cannot read member superblock blkno=0: %s",
		       dev->name, strerror(-rc0));
	else
		rc0 = raid_sb_verify(buf, dev->name, RAID_SB_BLKNO, c);
	/* an array made before SB_COPY has its bitmap at block 1: no second copy */
	if (!rc0 && RAID_SB_COPIES(jg_le32(c->sb.feature_incompat)) == 1) {
		c->other_same = true;
		return 0;
	}
	rc1 = blk_rw(dev, BLK_OP_READ, RAID_SB_COPY_BLKNO, 1, buf, 0);
	if (rc1)
		jg_log(JG_LOG_ERR, "raid", "dev=%s cannot read member superblock blkno=1: %s",
		       dev->name, strerror(-rc1));
	else
		rc1 = raid_sb_verify(buf, dev->name, RAID_SB_COPY_BLKNO, &c1);
	if (rc0 && rc1) {
		jg_log(JG_LOG_ERR, "raid",
		       "dev=%s no valid member superblock: copy 0 (blkno=0) %d, copy 1 (blkno=1) %d",
		       dev->name, rc0, rc1);
		if (rc0 == -EOPNOTSUPP || rc1 == -EOPNOTSUPP || (rc0 == -EINVAL && rc1 == -EINVAL))
			return rc0;
		return RAID_SB_UNUSABLE;
	}
	c->other_same = !rc0 && !rc1 && c1.events == c->events;
	if (!rc0 && !rc1 &&
	    (memcmp(c1.sb.uuid, c->sb.uuid, 16) || c1.role != c->role)) {
		c->other_same = false;
		jg_log(JG_LOG_WARN, "raid",
		       "dev=%s superblock copy 1 names another array or role than copy 0: using copy 0",
		       dev->name);
		return 0;
	}
	if (rc0 || (!rc1 && jg_seq_after(c1.events, c->events))) {
		if (rc0)
			jg_log(JG_LOG_WARN, "raid",
			       "dev=%s superblock copy 0 not valid (%s): using copy 1, events=%llu",
			       dev->name, strerror(-rc0), (unsigned long long)c1.events);
		*c = c1;
		c->copy = 1;
		c->other_same = false;	/* copy 0 torn or older */
	} else if (rc1) {
		jg_log(JG_LOG_WARN, "raid",
		       "dev=%s superblock copy 1 not valid (%s): using copy 0, events=%llu",
		       dev->name, strerror(-rc1), (unsigned long long)c->events);
	}
	return 0;
}

int raid_sb_read_dev(struct blk_dev *dev, struct raid_sb *sb, uint64_t *events)
{
	struct raid_cand c = {0};
	uint8_t *buf = jg_alloc_blocks(1);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = raid_sb_read_member(dev, buf, &c);
	free(buf);
	if (rc == RAID_SB_UNUSABLE)
		return -EUCLEAN;
	if (!rc) {
		*sb = c.sb;
		*events = c.events;
	}
	return rc;
}

static bool raid_sb_same_geometry(const struct raid_sb *x, const struct raid_sb *y)
{
	return !memcmp(x->uuid, y->uuid, 16) && jg_le32(x->nmembers) == jg_le32(y->nmembers) &&
	       jg_le32(x->level) == jg_le32(y->level) && jg_le32(x->layout) == jg_le32(y->layout) &&
	       jg_le32(x->chunk_blocks) == jg_le32(y->chunk_blocks) &&
	       jg_le64(x->data_offset) == jg_le64(y->data_offset) &&
	       jg_le64(x->data_blocks) == jg_le64(y->data_blocks) &&
	       jg_le32(x->bitmap_blocks) == jg_le32(y->bitmap_blocks) &&
	       jg_le32(x->bitmap_region_blocks) == jg_le32(y->bitmap_region_blocks) &&
	       /* RECOVERY and SYNCING come and go: no part of the geometry */
	       !((jg_le32(x->feature_incompat) ^ jg_le32(y->feature_incompat)) &
		 ~(RAID_FEATURE_INCOMPAT_RECOVERY | RAID_FEATURE_INCOMPAT_SYNCING));
}

/* ------------------------------------------------------------ raid_assemble */

/* What assembly learns of the given devices, step by step. */
struct raid_asm {
	const struct raid_assemble_cfg *cfg;
	struct raid_cand *c; /* the given devices, NULL entries left out */
	unsigned int nc;
	unsigned int ref; /* the candidate whose superblock speaks for the array */
	unsigned int nmem, level;
	int by_role[RAID_MAX_MEMBERS]; /* candidate of each role, -1: none */
	int spare[RAID_MAX_SPARES];    /* candidates that are spares (S11) */
	unsigned int nsp;
	const struct raid_sb *sb; /* c[ref].sb once the freshest is chosen */
	uint64_t maxev;		  /* the freshest event count of a member */
	uint32_t missing;	  /* roles absent or failed */
	uint32_t recovering;	  /* roles being rebuilt (S10) */
	uint32_t state;		  /* RAID_STATE_* of the freshest superblock */
	bool pending;		  /* RAID_SB_FLAG_JNL_PENDING (S6) */
	uint64_t left_out;	  /* devs[i] given without a valid superblock (S12) */
	char u[37];		  /* the array's uuid, for messages */
};

/* (S2) Read and verify the superblocks of every given device. */
static int raid_asm_read(struct raid_asm *x, struct blk_dev **devs, unsigned int n, uint8_t *buf)
{
	int rc;

	for (unsigned int i = 0; i < n; i++) {
		if (!devs[i])
			continue;
		rc = raid_sb_read_member(devs[i], buf, &x->c[x->nc]);
		if (rc == RAID_SB_UNUSABLE) {
			/* (S12) as if not given: never read, never written */
			jg_log(JG_LOG_WARN, "raid",
			       "assemble: dev=%s has no valid superblock copy (damaged or unreadable): assembling without it; its role runs missing until it is replaced or rebuilt",
			       devs[i]->name);
			x->left_out |= 1ull << i;
			continue;
		}
		if (rc)
			return rc;
		x->c[x->nc].dev = devs[i];
		x->c[x->nc].given = i;
		x->nc++;
	}
	if (!x->nc) {
		jg_log(JG_LOG_ERR, "raid", x->left_out ? "assemble: no given device has a valid superblock"
						      : "assemble: no member devices given");
		return x->left_out ? -EUCLEAN : -EINVAL;
	}
	return 0;
}

/* (S2) Same array: the one most of the given devices belong to, with one geometry. */
static int raid_asm_same_array(struct raid_asm *x)
{
	struct raid_cand *c = x->c;
	unsigned int best = 0;

	for (unsigned int i = 0; i < x->nc; i++) {
		unsigned int same = 0;

		for (unsigned int j = 0; j < x->nc; j++)
			same += !memcmp(c[i].sb.uuid, c[j].sb.uuid, 16);
		if (same > best) {
			best = same;
			x->ref = i;
		}
	}
	jg_uuid_format(c[x->ref].sb.uuid, x->u);
	for (unsigned int i = 0; i < x->nc; i++) {
		if (memcmp(c[i].sb.uuid, c[x->ref].sb.uuid, 16)) {
			char o[37];

			jg_uuid_format(c[i].sb.uuid, o);
			jg_log(JG_LOG_ERR, "raid",
			       "assemble: dev=%s belongs to another array (uuid=%s, not %s)",
			       c[i].dev->name, o, x->u);
			return -EINVAL;
		}
		if (!raid_sb_same_geometry(&c[i].sb, &c[x->ref].sb)) {
			jg_log(JG_LOG_ERR, "raid",
			       "assemble: dev=%s geometry differs from dev=%s in array uuid=%s",
			       c[i].dev->name, c[x->ref].dev->name, x->u);
			return -EUCLEAN;
		}
	}
	x->nmem = jg_le32(c[x->ref].sb.nmembers);
	x->level = jg_le32(c[x->ref].sb.level);
	return 0;
}

/* (S14) Leave out every member claim that a later claim of its role replaced. */
static void raid_asm_replaced(struct raid_asm *x)
{
	struct raid_cand *c = x->c;

	for (unsigned int i = 0; i < x->nc; i++) {
		unsigned int newer = x->nc;

		if (c[i].role == RAID_ROLE_SPARE)
			continue;
		for (unsigned int j = 0; j < x->nc && newer == x->nc; j++)
			if (j != i && c[j].role == c[i].role && jg_seq_after(c[j].events, c[i].events))
				newer = j;
		if (newer == x->nc)
			continue;
		jg_log(JG_LOG_WARN, "raid",
		       "assemble: dev=%s claims role %u at events=%llu, but dev=%s holds it at events=%llu: it was replaced; assembling without it, untouched (wipe it, or add it as a spare)",
		       c[i].dev->name, c[i].role, (unsigned long long)c[i].events,
		       c[newer].dev->name, (unsigned long long)c[newer].events);
		x->left_out |= 1ull << c[i].given;
		memmove(&c[i], &c[i + 1], (x->nc - i - 1) * sizeof(c[0]));
		x->nc--;
		i--;
	}
}

/* (S2) Unique roles, the spares set aside (S11), the freshest event count of a member. */
static int raid_asm_roles(struct raid_asm *x)
{
	struct raid_cand *c = x->c;
	bool have_member = false;

	for (unsigned int r = 0; r < RAID_MAX_MEMBERS; r++)
		x->by_role[r] = -1;
	raid_asm_replaced(x);
	x->maxev = 0;
	for (unsigned int i = 0; i < x->nc; i++) {
		if (c[i].role == RAID_ROLE_SPARE) {
			/* (S11) any event count; only uuid, geometry and size matter */
			if (x->nsp == RAID_MAX_SPARES) {
				jg_log(JG_LOG_ERR, "raid",
				       "assemble: dev=%s: more than %u spares given for array uuid=%s",
				       c[i].dev->name, RAID_MAX_SPARES, x->u);
				return -EINVAL;
			}
			x->spare[x->nsp++] = (int)i;
			continue;
		}
		if (x->by_role[c[i].role] >= 0) {
			jg_log(
			    JG_LOG_ERR, "raid",
			    "assemble: dev=%s and dev=%s both claim role %u of array uuid=%s (duplicated member)",
			    c[x->by_role[c[i].role]].dev->name, c[i].dev->name, c[i].role, x->u);
			return -EINVAL;
		}
		x->by_role[c[i].role] = (int)i;
		if (!have_member || jg_seq_after(c[i].events, x->maxev))
			x->maxev = c[i].events;
		have_member = true;
	}
	if (!have_member) {
		jg_log(JG_LOG_ERR, "raid", "assemble: only spares given for array uuid=%s", x->u);
		return -EINVAL;
	}
	return 0;
}

/*
 * The freshest superblock speaks for the array; against it, each device is
 * current (or one round behind (S5)), not marked failed, of a sane extent (S7)
 * and large enough.
 */
static int raid_asm_freshest(struct raid_asm *x)
{
	struct raid_cand *c = x->c;
	const struct raid_sb *sb;
	int rc;

	for (unsigned int i = 0; i < x->nc; i++)
		if (c[i].role != RAID_ROLE_SPARE && c[i].events == x->maxev)
			x->ref = i;
	sb = x->sb = &c[x->ref].sb;
	for (unsigned int i = 0; i < x->nc; i++) {
		if (c[i].role == RAID_ROLE_SPARE) {
			/* (S11) nothing it holds can be stale */
		} else if (c[i].events + 1 == x->maxev &&
			   !(jg_le32(sb->failed_mask) & (1u << c[i].role))) {
			/* (S5) it missed only the last superblock round: a crash during it */
			jg_log(
			    JG_LOG_WARN, "raid",
			    "assemble: dev=%s role=%u missed the last superblock update (events=%llu, array at %llu): accepted",
			    c[i].dev->name, c[i].role, (unsigned long long)c[i].events,
			    (unsigned long long)x->maxev);
		} else if (c[i].events != x->maxev) {
			jg_log(
			    JG_LOG_ERR, "raid",
			    "assemble: dev=%s role=%u is stale: events=%llu, array at %llu; assemble without it and rebuild it",
			    c[i].dev->name, c[i].role, (unsigned long long)c[i].events,
			    (unsigned long long)x->maxev);
			return -EUCLEAN;
		}
		if (c[i].role != RAID_ROLE_SPARE &&
		    (jg_le32(sb->failed_mask) & (1u << c[i].role))) {
			jg_log(
			    JG_LOG_ERR, "raid",
			    "assemble: dev=%s role=%u is marked failed in the array; assemble without it and rebuild it",
			    c[i].dev->name, c[i].role);
			return -EUCLEAN;
		}
		rc = raid_sb_check_extent(&c[i].sb, c[i].dev->name);
		if (rc)
			return rc;
		if (c[i].dev->nblocks < jg_le64(sb->data_offset) + jg_le64(sb->data_blocks)) {
			jg_log(JG_LOG_ERR, "raid",
			       "assemble: %s dev=%s too small: %llu blocks, the array needs %llu",
			       c[i].role == RAID_ROLE_SPARE ? "spare" : "member", c[i].dev->name,
			       (unsigned long long)c[i].dev->nblocks,
			       (unsigned long long)(jg_le64(sb->data_offset) +
						    jg_le64(sb->data_blocks)));
			return -EUCLEAN;
		}
	}
	x->state = jg_le32(sb->state);
	x->pending = jg_le32(sb->flags) & RAID_SB_FLAG_JNL_PENDING;
	return 0;
}

/* The roles missing or being rebuilt (S10): too many and the array cannot run. */
static int raid_asm_enough(struct raid_asm *x)
{
	const struct raid_sb *sb = x->sb;

	for (unsigned int r = 0; r < x->nmem; r++)
		if (x->by_role[r] < 0 || (jg_le32(sb->failed_mask) & (1u << r)))
			x->missing |= 1u << r;
		else if (jg_le32(sb->recovery_mask) & (1u << r))
			x->recovering |= 1u << r;
	if (raid_popcount(x->missing | x->recovering) > (x->level == 6 ? 2u : 1u)) {
		char m[64], r[64];

		jg_log(JG_LOG_ERR, "raid",
		       "assemble: array uuid=%s has %u of %u members, too few to run (missing: %s; "
		       "being rebuilt: %s)",
		       x->u, x->nmem - raid_popcount(x->missing | x->recovering), x->nmem,
		       jg_roles_str(x->missing, m, sizeof(m)),
		       jg_roles_str(x->recovering, r, sizeof(r)));
		return -EINVAL;
	}
	return 0;
}

/* (S13) Roles absent and not recorded failed: refused unless a degraded start was asked. */
static int raid_asm_absent(struct raid_asm *x)
{
	uint32_t failed = jg_le32(x->sb->failed_mask), absent = 0;
	char roles[64] = "", found[512] = "";
	size_t nr = 0, nf = 0;

	for (unsigned int r = 0; r < x->nmem; r++) {
		const struct raid_cand *m = x->by_role[r] >= 0 ? &x->c[x->by_role[r]] : NULL;

		if (!m && !(failed & (1u << r))) {
			absent |= 1u << r;
			nr += (size_t)snprintf(roles + nr, nr < sizeof(roles) ? sizeof(roles) - nr : 0,
					       "%s%u", nr ? "," : "", r);
		} else if (m) {
			nf += (size_t)snprintf(found + nf, nf < sizeof(found) ? sizeof(found) - nf : 0,
					       "%srole %u dev=%s", nf ? ", " : "", r, m->dev->name);
		}
	}
	if (!absent || !x->cfg->need_all)
		return 0;
	jg_log(
	    JG_LOG_ERR, "raid",
	    "assemble: array uuid=%s: role %s of %u not among the devices given (found: %s%s): refused, nothing written; give every member, or ask for a degraded start (the absent member is then marked failed and needs a rebuild or readd)",
	    x->u, roles, x->nmem, found,
	    x->left_out ? "; a device given was left out: named above" : "");
	return -ENODEV;
}

/* The array of the freshest superblock: its fields, members and spares. */
static void raid_asm_fill(struct raid_asm *x, struct raid_array *a)
{
	const struct raid_assemble_cfg *cfg = x->cfg;
	const struct raid_sb *sb = x->sb;

	raid_geo_init(&a->geo, x->level, x->nmem, jg_le32(sb->chunk_blocks),
		      jg_le64(sb->data_offset), jg_le64(sb->data_blocks));
	memcpy(a->uuid, sb->uuid, 16);
	a->seed = jg_crc_seed(a->uuid);
	a->policy = (enum raid_resync_policy)jg_le32(sb->resync_policy);
	a->readonly = cfg->readonly;
	a->was_dirty = x->state == RAID_STATE_DIRTY || x->pending;
	a->forced = cfg->force;
	a->max_read_errors = cfg->max_read_errors ? cfg->max_read_errors : RAID_MAX_READ_ERRORS;
	a->ev_fn = cfg->event_fn;
	a->test = cfg->test;
	a->ev_ctx = cfg->event_ctx;
	a->events = x->maxev;
	a->sb_flags = jg_le32(sb->flags) & RAID_SB_FLAGS_KNOWN;
	a->jnl_unreplayed = x->pending; /* (S6) until the journal clears the flag */
	a->ctime = jg_le64(sb->ctime);
	a->sb_incompat = jg_le32(sb->feature_incompat) &
			 ~(RAID_FEATURE_INCOMPAT_RECOVERY | RAID_FEATURE_INCOMPAT_SYNCING);
	a->bm_first = RAID_BITMAP_FIRST(a->sb_incompat);
	/* sync.c (Y2): the freshest mark, recorded after the rows below it were flushed */
	a->sync_rows = (jg_le32(sb->feature_incompat) & RAID_FEATURE_INCOMPAT_SYNCING)
			   ? jg_le64(sb->sync_rows)
			   : a->geo.rows;
	a->sync_done = a->sync_rows;
	if ((jg_le32(sb->feature_compat) & RAID_FEATURE_COMPAT_SCRUB) &&
	    (jg_le32(sb->scrub_flags) & RAID_SCRUB_RUNNING)) {
		/* an interrupted online scrub: its user resumes it (raid_info.scrub_*) */
		a->scrub_flags = jg_le32(sb->scrub_flags) & (RAID_SCRUB_RUNNING | RAID_SCRUB_REPAIR);
		a->scrub_rows = jg_le64(sb->scrub_rows);
		a->scrub_mismatches = jg_le64(sb->scrub_mismatches);
		if (a->scrub_rows > a->geo.rows)
			a->scrub_rows = 0; /* not ours to trust: start over */
	}
	raid_array_name(a);
	for (unsigned int r = 0; r < x->nmem; r++) {
		if (x->by_role[r] >= 0) {
			const struct raid_sb *own = &x->c[x->by_role[r]].sb;

			a->m[r].dev = x->c[x->by_role[r]].dev;
			snprintf(a->m[r].name, sizeof(a->m[r].name), "%s", a->m[r].dev->name);
			if (x->recovering & (1u << r)) {
				/* (S10) its own mark: one event behind, it is the older one */
				a->m[r].rebuilding = true;
				if (jg_le32(own->recovery_mask) & (1u << r))
					a->m[r].recovered = jg_le64(own->recovery_rows);
				a->m[r].recovered_sb = a->m[r].recovered;
				jg_log(JG_LOG_INFO, "raid",
				       "assemble: dev=%s role=%u is being rebuilt: %llu of %llu rows done",
				       a->m[r].name, r, (unsigned long long)a->m[r].recovered,
				       (unsigned long long)a->geo.rows);
			}
		} else {
			snprintf(a->m[r].name, sizeof(a->m[r].name), "(missing)");
			/* (S5) recorded as failed: it misses the writes from now on */
			a->m[r].failed = true;
		}
	}
	for (unsigned int k = 0; k < x->nsp; k++) {
		struct raid_spare *sp = &a->spares[a->nspares++];

		sp->dev = x->c[x->spare[k]].dev;
		snprintf(sp->name, sizeof(sp->name), "%s", sp->dev->name);
	}
	jg_mutex_lock(&a->sb_lock); /* @a is private yet: for the _locked contract only */
	raid_masks_update_locked(a);
	jg_mutex_unlock(&a->sb_lock);
}

/*
 * (S4) (S6) (S10) A dirty (or jnl-pending) and degraded array with a row that
 * may have the write hole: refused, or with force or readonly assembled with
 * those rows recorded at risk (A1). Bitmap loaded.
 */
static int raid_asm_write_hole(struct raid_asm *x, struct raid_array *a)
{
	const struct raid_assemble_cfg *cfg = x->cfg;

	/* (S6) pending counts as dirty, also for an array a failed run stopped clean */
	if ((x->state == RAID_STATE_DIRTY || x->pending) && (x->missing || x->recovering) &&
	    !raid_dirty_rows_whole(a, x->missing, x->pending) && (cfg->force || cfg->readonly)) {
		/* (A1) assembled anyway: say which rows may read wrong */
		raid_risk_from_bitmap(a, x->missing, x->pending);
		jg_log(JG_LOG_WARN, "raid",
		       "assemble: array uuid=%s is dirty and degraded, assembled %s: rows written at the crash may read wrong where a member is missing (the write hole)%s",
		       x->u, cfg->readonly ? "read-only" : "by force",
		       x->pending ? "; the filesystem journal names its own rows when it replays"
				  : "");
	} else if ((x->state == RAID_STATE_DIRTY || x->pending) && (x->missing || x->recovering) &&
		   !raid_dirty_rows_whole(a, x->missing, x->pending)) {
		char m[64], r[64];

		jg_log(
		    JG_LOG_ERR, "raid",
		    "assemble: array uuid=%s is dirty (or its filesystem journal has not been "
		    "replayed: jnl-pending) and degraded (missing: %s; being rebuilt: %s): rows "
		    "written at the crash may have parity that does not match their data, and with "
		    "a member missing that cannot be checked (the write hole); data reconstructed "
		    "for the missing member may be wrong. Use force to assemble anyway",
		    x->u, jg_roles_str(x->missing, m, sizeof(m)),
		    jg_roles_str(x->recovering, r, sizeof(r)));
		return -EUCLEAN;
	}
	if (a->sb_flags & RAID_SB_FLAG_JNL_PENDING)
		jg_log(JG_LOG_INFO, "raid", "array uuid=%s: filesystem-guided resync pending", x->u);
	return 0;
}

/*
 * A writable array starts: (S9) every member at one event, (S3) dirty on disk
 * before anything else, then the recovery resync of a dirty array.
 */
static int raid_asm_start(struct raid_asm *x, struct raid_array *a)
{
	uint32_t who = 0, one_first = 0;
	int rc;

	for (unsigned int r = 0; r < x->nmem; r++) {
		const struct raid_cand *m = x->by_role[r] >= 0 ? &x->c[x->by_role[r]] : NULL;

		if (!m || (m->events == x->maxev && m->other_same))
			continue;
		who |= 1u << r;
		if (m->copy == 0)
			one_first |= 1u << r;
	}
	rc = who ? raid_sb_catch_up(a, who, one_first, x->sb) : 0;
	if (!rc)
		rc = raid_sb_write_all(a, RAID_STATE_DIRTY);
	if (rc)
		return rc;
	if (a->was_dirty && !x->cfg->no_resync)
		return raid_resync_recovery(a);
	if (a->was_dirty) /* the next assembly must still resync: keep bits, stay dirty */
		a->resync_pending = true;
	return 0;
}

/* The events and the log line of an assembled array. */
static void raid_asm_report(struct raid_asm *x, struct raid_array *a)
{
	char sp[24] = ""; /* only when there are: the line older tools print otherwise */

	for (unsigned int r = 0; r < x->nmem; r++)
		if (x->missing & (1u << r))
			raid_event_detail(a, RAID_EV_DEGRADED_ARRAY, r, -1, 0, "uuid=%s", x->u);
	if (x->nsp)
		snprintf(sp, sizeof(sp), " spares=%u", x->nsp);
	jg_log(JG_LOG_INFO, "raid",
	       "assembled uuid=%s level=%u members=%u%s missing=0x%x was_dirty=%d resync=%s events=%llu",
	       x->u, x->level, x->nmem, sp, x->missing, a->was_dirty,
	       raid_resync_policy_name(a->policy), (unsigned long long)a->events);
}

/* (S2) Every device checked before the array is built and anything written. */
static int raid_asm_check(struct raid_asm *x, struct blk_dev **devs, unsigned int n)
{
	uint8_t *buf = jg_alloc_blocks(1);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = raid_asm_read(x, devs, n, buf);
	if (!rc)
		rc = raid_asm_same_array(x);
	if (!rc)
		rc = raid_asm_roles(x);
	if (!rc)
		rc = raid_asm_freshest(x);
	if (!rc)
		rc = raid_asm_enough(x);
	if (!rc)
		rc = raid_asm_absent(x);
	free(buf);
	return rc;
}

/* Build the checked array, decide whether it may run, start it. */
static int raid_asm_build(struct raid_asm *x, struct raid_array **out)
{
	const struct raid_sb *sb = x->sb;
	struct raid_array *a = raid_array_alloc();
	int rc;

	if (!a)
		return -ENOMEM;
	raid_asm_fill(x, a);
	rc = raid_bitmap_init(a, jg_le32(sb->bitmap_region_blocks), jg_le32(sb->bitmap_blocks),
			      jg_le64(sb->bitmap_regions));
	if (!rc)
		rc = raid_bitmap_load(a);
	if (!rc)
		rc = raid_asm_write_hole(x, a);
	if (!rc && x->cfg->check_fn) {
		/* the caller's checks read only: no read error rewritten, nothing marked */
		bool ro = a->readonly;

		a->readonly = true;
		rc = x->cfg->check_fn(x->cfg->check_ctx, a);
		a->readonly = ro;
	}
	if (!rc && !a->readonly)
		rc = raid_asm_start(x, a);
	if (rc) {
		raid_array_free(a); /* the caller keeps the devices */
		return rc;
	}
	raid_asm_report(x, a);
	*out = a;
	return 0;
}

int raid_assemble(struct blk_dev **devs, unsigned int n, const struct raid_assemble_cfg *cfg,
		  struct raid_array **out)
{
	struct raid_assemble_cfg dflt = {0};
	struct raid_asm x = {.cfg = cfg ? cfg : &dflt};
	int rc;

	*out = NULL;
	if (!devs || !n || n > 2 * RAID_MAX_MEMBERS)
		return -EINVAL;
	x.c = calloc(n, sizeof(*x.c));
	rc = x.c ? raid_asm_check(&x, devs, n) : -ENOMEM;
	if (!rc)
		rc = raid_asm_build(&x, out);
	/* ownership passed with the rest: the array never uses one left out (S12) */
	for (unsigned int i = 0; !rc && i < n; i++)
		if (x.left_out & (1ull << i))
			blk_close(devs[i]);
	free(x.c);
	jg_log(JG_LOG_DEBUG, "raid", "assemble devs=%u force=%d readonly=%d no_resync=%d -> %d", n,
	       x.cfg->force, x.cfg->readonly, x.cfg->no_resync, rc);
	return rc;
}
