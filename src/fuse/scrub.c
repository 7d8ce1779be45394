// SPDX-License-Identifier: MIT
/*
 * src/fuse/scrub.c - the online scrub of a mounted volume (issue 23): `jgrfs
 * scrub MOUNTPOINT` asks the daemon (FOP_IOC_SCRUB_START), a thread of the
 * daemon reads every row and compares its parity while the volume is in use.
 *
 * Protocol:
 *  (Q1) Locking: raid_scrub_rows() takes the row locks a writer takes (the row
 *       check of stripe.c), so a write to a row being compared waits for it and
 *       a compared row is never seen half written: no false mismatch.
 *  (Q2) Pacing, in this loop and not in the array: steps of at most
 *       FOP_SCRUB_STEP_BYTES of array data (fewer at low rates), each followed
 *       by a sleep that holds that step to max_rate -- or to a
 *       FOP_SCRUB_BUSY_DIV-th of it when the array served foreground requests
 *       during the step or the sleep before it (MD's sync_speed_max and
 *       sync_speed_min, from one limit). Steps are paced one by one, so a scrub
 *       slowed by users does not race to catch up when they stop. Without a
 *       limit, a busy step is followed by FOP_SCRUB_YIELD_MS.
 *  (Q3) Resume: every fop_scrub_mark_seconds the next row and the mismatches so
 *       far go to the member superblocks (raid_scrub_mark, compat feature SCRUB);
 *       an unmount records it once more; a mount finding a mark resumes from it.
 *       A scrub that ends, is cancelled or fails clears it.
 *  (Q4) Naming: the array reports rows and lost blocks, no files; after each
 *       step the mismatched rows and the blocks lost meanwhile
 *       (raid_lost_blocks) go to fs_owners(), with no lock held, and each is
 *       logged with its owners; the first FOP_SCRUB_RESULTS owners are kept for
 *       status (the CLI prints them).
 *  (Q5) A block no member can give back fails its step with -EIO; the step's
 *       rows are scrubbed again one by one, and those that fail so are skipped
 *       (logged), their lost blocks named (Q4): the scrub goes on.
 *  (Q6) The array judges each mismatched line with fs_block_verify (src/fs/
 *       verify.c; src/raid/scrub.c (K1)-(K4)): with repair a block that fails
 *       its checksum is rebuilt on its member and the parity is rewritten only
 *       when the data verifies; a line nothing can tell about is left as it
 *       is and counted (scrub_unresolved). The verifier takes the fs lock and
 *       reads bitmaps; the array calls it with no row lock held (fs lock
 *       before row locks, as every FUSE request). Set for this thread's run.
 *  (Q7) A row with a write in flight (the filesystem's new checksum set, the
 *       block not yet on the array: src/raid/scrub.c (K5)) is not judged when
 *       met: the array hands it back (busy_rows) and it is scrubbed again at
 *       the end of the pass, after a commit and a checkpoint (fs_checkpoint)
 *       have sent the writes of the time home, up to FOP_SCRUB_LATER_ROUNDS
 *       times.
 *       Never counted unresolved for that; one still busy then is logged as
 *       not judged (for a later scrub).
 *
 * scrub_lock is a leaf: nothing holding it calls into the array or the fs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fop_i.h"

#define FOP_SCRUB_STEP_BYTES (4u << 20) /* array data per step (Q2) */
#define FOP_SCRUB_BUSY_DIV 4u		/* with foreground I/O: a quarter of max_rate (Q2) */
#define FOP_SCRUB_YIELD_MS 20u		/* ... without a limit: a pause per step (Q2) */
#define FOP_SCRUB_MAX_ROWS 256u		/* rows per step at most (RAID_GROUP_MAX_ROWS) */
#define FOP_SCRUB_LATER_ROUNDS 3u	/* looks again at a row with a write in flight (Q7) */
#define FOP_SCRUB_LATER_MS 200u		/* ... each after a checkpoint and this pause */

/* Seconds between two records of the mark (Q3). */
static const double fop_scrub_mark_seconds = 5.0;

struct fop_scrub_run {
	struct fop_ctx *c;
	bool repair;
	bool trust_data; /* FOP_SCRUB_TRUST_DATA: no verifier (Q6) */
	uint64_t max_rate; /* bytes/s, 0: none */
	uint64_t first;	   /* row to start at */
	uint64_t mism0;	   /* mismatches found before a resume */
	/* the step's mismatched rows (raid_row_fn) */
	uint64_t rows[FOP_SCRUB_MAX_ROWS];
	unsigned int nrows;
	uint64_t lost_seq;
	/* naming (Q4) */
	uint32_t kind;	     /* FOP_SCRUB_MISMATCH / _UNREADABLE, of the reports below */
	uint64_t row_blocks; /* array blocks per row */
	char line[1024];     /* the log line being built */
	uint64_t line_key;   /* its row or block; UINT64_MAX: none */
	struct {	     /* the owners on it: each named once */
		uint64_t ino;
		uint32_t kind, group;
	} seen[32];
	unsigned int nseen;
	bool *named; /* per row of @rows: an owner was reported */
	/* (Q7) rows with a write in flight, scrubbed again at the end of the pass */
	uint64_t *later;
	size_t nlater, cap_later;
	uint64_t later_lost; /* more than a step could hand back: not looked at again */
};

static double fop_scrub_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep until @until (monotonic seconds) or a cancel or unmount; true: stop now. */
static bool fop_scrub_sleep(struct fop_ctx *c, double until)
{
	struct timespec ts;
	double now = fop_scrub_now(), d;
	bool stop;

	jg_mutex_lock(&c->scrub_lock);
	while (!c->scrub_cancel && !c->scrub_stop && now < until) {
		struct timespec rt;

		clock_gettime(CLOCK_REALTIME, &rt);
		d = until - now;
		ts.tv_sec = rt.tv_sec + (time_t)d;
		ts.tv_nsec = rt.tv_nsec + (long)((d - (double)(time_t)d) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		jg_cond_timedwait(&c->scrub_cond, &c->scrub_lock, &ts);
		now = fop_scrub_now();
	}
	stop = c->scrub_cancel || c->scrub_stop;
	jg_mutex_unlock(&c->scrub_lock);
	return stop;
}

/* raid_row_fn: a mismatched row of this step (no array lock held; calls nothing) */
static void fop_scrub_row(void *ctx, uint64_t row)
{
	struct fop_scrub_run *s = ctx;

	if (s->nrows < FOP_SCRUB_MAX_ROWS)
		s->rows[s->nrows++] = row;
}

/* ------------------------------------------------------------ naming (Q4) */

static void fop_scrub_line_flush(struct fop_scrub_run *s)
{
	if (s->line_key == UINT64_MAX)
		return;
	jg_log(JG_LOG_WARN, "fuse", "%s", s->line);
	s->line_key = UINT64_MAX;
}

/* The owner is a file (an inode's data, directory, map...), not metadata of the volume. */
static bool fop_scrub_is_file(enum fs_owner_kind k)
{
	return k == FS_OWNER_DATA || k == FS_OWNER_DIR || k == FS_OWNER_SYMLINK ||
	       k == FS_OWNER_INDIRECT || k == FS_OWNER_XATTR;
}

static void fop_scrub_result_add(struct fop_scrub_run *s, uint64_t key, const struct fs_owner *o)
{
	struct fop_status *st = &s->c->st_scrub;
	struct fop_scrub_result *r;

	jg_mutex_lock(&s->c->scrub_lock);
	if (st->scrub_nresults < FOP_SCRUB_RESULTS) {
		r = &st->scrub_results[st->scrub_nresults++];
		memset(r, 0, sizeof(*r));
		r->kind = s->kind;
		r->row = s->kind == FOP_SCRUB_MISMATCH ? key : key / s->row_blocks;
		r->blkno = s->kind == FOP_SCRUB_MISMATCH
			       ? (o->blkno > key * s->row_blocks ? o->blkno : key * s->row_blocks)
			       : key;
		r->owner_kind = (uint32_t)o->kind;
		r->group = o->group;
		if (fop_scrub_is_file(o->kind)) { /* metadata: no inode, no path */
			r->ino = o->ino;
			if (o->npaths)
				snprintf(r->path, sizeof(r->path), "%s", o->paths[0]);
			else
				snprintf(r->path, sizeof(r->path), "%s",
					 o->orphan ? "(open-unlinked)" : "(no name)");
		}
	} else {
		st->scrub_results_more++;
	}
	jg_mutex_unlock(&s->c->scrub_lock);
}

/* Append @o to the log line of @key (a row, or a block), starting it if new. */
static void fop_scrub_name(struct fop_scrub_run *s, uint64_t key, const struct fs_owner *o)
{
	bool file = fop_scrub_is_file(o->kind);
	size_t len;
	char who[320];

	if (s->line_key == key) { /* a directory's blocks, maps, run after run: once */
		for (unsigned int i = 0; i < s->nseen; i++)
			if (s->seen[i].kind == (file ? 0u : (uint32_t)o->kind) &&
			    s->seen[i].ino == (file ? o->ino : 0) &&
			    s->seen[i].group == (file ? 0 : o->group))
				return;
	} else {
		s->nseen = 0;
	}
	if (s->nseen < 32) {
		s->seen[s->nseen].ino = file ? o->ino : 0;
		s->seen[s->nseen].kind = file ? 0u : (uint32_t)o->kind;
		s->seen[s->nseen++].group = file ? 0 : o->group;
	}
	if (file)
		snprintf(who, sizeof(who), "%s (inode=%llu%s%s)",
			 o->npaths   ? o->paths[0]
			 : o->orphan ? "(open-unlinked)"
				     : "(no name)",
			 (unsigned long long)o->ino, o->kind == FS_OWNER_DATA ? "" : ", ",
			 o->kind == FS_OWNER_DATA ? "" : fs_owner_kind_name(o->kind));
	else if (o->kind == FS_OWNER_ITABLE)
		snprintf(who, sizeof(who), "metadata: %s group %u (inodes %llu-%llu)",
			 fs_owner_kind_name(o->kind), o->group, (unsigned long long)o->ino,
			 (unsigned long long)o->ino_last);
	else if (o->kind == FS_OWNER_BBITMAP || o->kind == FS_OWNER_IBITMAP)
		snprintf(who, sizeof(who), "metadata: %s group %u", fs_owner_kind_name(o->kind),
			 o->group);
	else
		snprintf(who, sizeof(who), "metadata: %s", fs_owner_kind_name(o->kind));
	if (s->line_key != key) {
		fop_scrub_line_flush(s);
		s->line_key = key;
		if (s->kind == FOP_SCRUB_MISMATCH)
			snprintf(s->line, sizeof(s->line), "scrub: mismatch row=%llu: %s",
				 (unsigned long long)key, who);
		else
			snprintf(s->line, sizeof(s->line), "scrub: unreadable block %llu: %s",
				 (unsigned long long)key, who);
	} else {
		len = strlen(s->line);
		snprintf(s->line + len, sizeof(s->line) - len, ", %s", who);
	}
	fop_scrub_result_add(s, key, o);
}

static int fop_scrub_owner(void *ctx, const struct fs_owner *o)
{
	struct fop_scrub_run *s = ctx;

	if (o->kind == FS_OWNER_FREE || o->kind == FS_OWNER_OUTSIDE)
		return 0;
	if (s->kind == FOP_SCRUB_UNREADABLE) { /* blocks asked about one by one */
		for (uint64_t b = o->blkno; b < o->blkno + o->count; b++)
			fop_scrub_name(s, b, o);
		return 0;
	}
	for (unsigned int i = 0; i < s->nrows; i++) {
		uint64_t b0 = s->rows[i] * s->row_blocks, b1 = b0 + s->row_blocks;

		if (o->blkno < b1 && o->blkno + o->count > b0) {
			s->named[i] = true;
			fop_scrub_name(s, s->rows[i], o);
		}
	}
	return 0;
}

/* The owners of the step's mismatched rows, logged and kept. */
static void fop_scrub_name_rows(struct fop_scrub_run *s)
{
	struct fs_extent ext[FOP_SCRUB_MAX_ROWS];
	bool named[FOP_SCRUB_MAX_ROWS] = {false};
	size_t ne = 0;
	int rc;

	if (!s->nrows)
		return;
	for (unsigned int i = 0; i < s->nrows; i++) {
		uint64_t b0 = s->rows[i] * s->row_blocks;

		if (ne && ext[ne - 1].start + ext[ne - 1].count == b0)
			ext[ne - 1].count += s->row_blocks;
		else
			ext[ne++] = (struct fs_extent){.start = b0, .count = s->row_blocks};
	}
	s->kind = FOP_SCRUB_MISMATCH;
	s->named = named;
	s->line_key = UINT64_MAX;
	rc = fs_owners(s->c->fs, ext, ne, NULL, fop_scrub_owner, s, NULL);
	fop_scrub_line_flush(s);
	if (rc)
		jg_log(JG_LOG_ERR, "fuse", "scrub: naming the owners failed: %s", strerror(-rc));
	for (unsigned int i = 0; i < s->nrows; i++)
		if (!named[i])
			jg_log(JG_LOG_WARN, "fuse",
			       "scrub: mismatch row=%llu: no file or metadata (free space)",
			       (unsigned long long)s->rows[i]);
	s->named = NULL;
}

/* The blocks no member could give back since the last step, logged and counted. */
static void fop_scrub_name_lost(struct fop_scrub_run *s)
{
	uint64_t blocks[16];
	struct fs_extent ext[16];
	size_t n, ne = 0;

	n = raid_lost_blocks(s->c->array, &s->lost_seq, blocks, 16);
	if (!n)
		return;
	for (size_t i = 1; i < n; i++) /* sorted, merged, as fs_owners wants them */
		for (size_t k = i; k > 0 && blocks[k - 1] > blocks[k]; k--) {
			uint64_t t = blocks[k];

			blocks[k] = blocks[k - 1];
			blocks[k - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (ne && ext[ne - 1].start + ext[ne - 1].count > blocks[i])
			continue; /* recorded twice: the step, then its row alone (Q5) */
		if (ne && ext[ne - 1].start + ext[ne - 1].count == blocks[i])
			ext[ne - 1].count++;
		else
			ext[ne++] = (struct fs_extent){.start = blocks[i], .count = 1};
	}
	jg_mutex_lock(&s->c->scrub_lock);
	for (size_t i = 0; i < ne; i++)
		s->c->st_scrub.scrub_unreadable += ext[i].count;
	jg_mutex_unlock(&s->c->scrub_lock);
	s->kind = FOP_SCRUB_UNREADABLE;
	s->line_key = UINT64_MAX;
	fs_owners(s->c->fs, ext, ne, NULL, fop_scrub_owner, s, NULL);
	fop_scrub_line_flush(s);
}

/* ------------------------------------------------------------ the thread */

static uint64_t fop_scrub_fg_requests(struct fop_ctx *c)
{
	struct blk_stats bs;

	memset(&bs, 0, sizeof(bs));
	if (blk_ctl(raid_array_dev(c->array), BLK_CTL_GET_STATS, &bs))
		return 0;
	return bs.reads + bs.writes + bs.flushes;
}

/*
 * (Q5) A step failed with -EIO: a block no member could give back (the array
 * recorded it: raid_lost_blocks; a member that failed instead makes the array
 * degraded, -EAGAIN). Scrub the step's rows one at a time; those that fail so
 * are left unchecked and their lost blocks named after the step, as MD's check
 * goes on past a read error it cannot correct.
 */
static int fop_scrub_rows_one_by_one(struct fop_scrub_run *s, uint64_t row, uint64_t n,
				     struct raid_scrub_counts *cnt)
{
	s->nrows = 0;
	for (uint64_t r = row; r < row + n; r++) {
		int rc = raid_scrub_rows(s->c->array, r, 1, s->repair, fop_scrub_row, s, cnt);

		if (rc == -EIO)
			jg_log(JG_LOG_WARN, "fuse",
			       "scrub: row=%llu not checked: a block in it cannot be read",
			       (unsigned long long)r);
		else if (rc)
			return rc;
	}
	return 0;
}

/* (Q7) Keep the rows a step found busy for a later look. */
static void fop_scrub_keep_busy(struct fop_scrub_run *s, const struct raid_scrub_counts *one)
{
	uint64_t kept = one->busy < RAID_SCRUB_BUSY_ROWS ? one->busy : RAID_SCRUB_BUSY_ROWS;

	s->later_lost += one->busy - kept;
	for (uint64_t i = 0; i < kept; i++) {
		if (s->nlater == s->cap_later) {
			size_t cap = s->cap_later ? 2 * s->cap_later : 16;
			uint64_t *r = realloc(s->later, cap * sizeof(*r));

			if (!r) {
				s->later_lost += kept - i;
				return;
			}
			s->later = r;
			s->cap_later = cap;
		}
		s->later[s->nlater++] = one->busy_rows[i];
	}
}

static void fop_scrub_add(struct raid_scrub_counts *cnt, const struct raid_scrub_counts *one)
{
	cnt->rows_checked += one->rows_checked;
	cnt->mismatches += one->mismatches;
	cnt->repaired += one->repaired;
	cnt->rebuilt += one->rebuilt;
	cnt->unresolved += one->unresolved;
	cnt->unsynced += one->unsynced;
}

/*
 * (Q7) The pass is over: scrub again, one by one, the rows that had a write in
 * flight when met, each round after a commit and a pause; *@cnt counts them.
 */
static int fop_scrub_later(struct fop_scrub_run *s, struct raid_scrub_counts *cnt)
{
	struct fop_ctx *c = s->c;
	int rc = 0;

	for (unsigned int round = 0; round < FOP_SCRUB_LATER_ROUNDS && s->nlater && !rc; round++) {
		uint64_t *rows = s->later;
		size_t n = s->nlater;
		int src;

		s->later = NULL;
		s->nlater = s->cap_later = 0;
		jg_log(JG_LOG_INFO, "fuse",
		       "scrub: %zu rows had writes in flight when met: looked at again", n);
		/* the writes in flight go home: committed, and out of the log */
		src = fs_checkpoint(c->fs);
		if (src)
			jg_log(JG_LOG_DEBUG, "fuse", "scrub: checkpoint before a later look: %d",
			       src);
		if (fop_scrub_sleep(c, fop_scrub_now() + FOP_SCRUB_LATER_MS / 1e3)) {
			free(rows); /* stopped or cancelled: said so by the caller */
			return 0;
		}
		for (size_t i = 0; i < n && !rc; i++) {
			struct raid_scrub_counts one = {0};

			s->nrows = 0;
			rc = raid_scrub_rows(c->array, rows[i], 1, s->repair, fop_scrub_row, s,
					     &one);
			if (rc == -EIO) { /* (Q5) */
				jg_log(JG_LOG_WARN, "fuse",
				       "scrub: row=%llu not checked: a block in it cannot be read",
				       (unsigned long long)rows[i]);
				rc = 0;
			}
			fop_scrub_add(cnt, &one);
			cnt->rows_checked -= one.rows_checked; /* counted in the pass */
			fop_scrub_keep_busy(s, &one);
			fop_scrub_name_rows(s); /* (Q4) */
			fop_scrub_name_lost(s);
		}
		free(rows);
	}
	if (!rc && s->nlater + s->later_lost)
		jg_log(JG_LOG_WARN, "fuse",
		       "scrub: %llu rows had writes in flight at each look: not judged (a later "
		       "scrub checks them)",
		       (unsigned long long)(s->nlater + s->later_lost));
	return rc;
}

/* The counts so far into the status; scrub_lock held. */
static void fop_scrub_counts_locked(struct fop_scrub_run *s, const struct raid_scrub_counts *cnt)
{
	struct fop_status *st = &s->c->st_scrub;

	JG_ASSERT_HELD(&s->c->scrub_lock);
	st->scrub_mismatches = s->mism0 + cnt->mismatches;
	st->scrub_repaired = cnt->repaired;
	st->scrub_rebuilt = cnt->rebuilt;
	st->scrub_unresolved = cnt->unresolved;
}

/*
 * Before the first step: the rows per step (Q2), the lost blocks already
 * reported set aside (Q4), the verifier (Q6), the mark (Q3). Returns the step.
 */
static uint64_t fop_scrub_begin(struct fop_scrub_run *s, const struct raid_info *ri)
{
	struct fop_ctx *c = s->c;
	uint64_t step, step_bytes = FOP_SCRUB_STEP_BYTES;
	int rc;

	s->row_blocks = (uint64_t)ri->ndata * ri->chunk_blocks;
	if (s->max_rate && s->max_rate / 4 < step_bytes)
		step_bytes = s->max_rate / 4 > JG_BLOCK_SIZE ? s->max_rate / 4 : JG_BLOCK_SIZE;
	step = step_bytes / (s->row_blocks * JG_BLOCK_SIZE);
	step = step < 1 ? 1 : step > FOP_SCRUB_MAX_ROWS ? FOP_SCRUB_MAX_ROWS : step;
	while (raid_lost_blocks(c->array, &s->lost_seq, (uint64_t[16]){0}, 16))
		; /* (Q4) only the blocks lost from now on */
	/* (Q6) the filesystem says which member of a mismatched line is wrong */
	if (!s->trust_data)
		raid_set_verifier(c->array, fs_block_verify_fn, c->fs);
	rc = raid_scrub_mark(c->array, true, s->repair, s->first, s->mism0);
	if (rc)
		jg_log(JG_LOG_WARN, "fuse", "scrub: cannot record its mark: %s", strerror(-rc));
	return step;
}

/*
 * The pass: from s->first, a step of rows at a time, each scrubbed (Q1, Q5),
 * its busy rows kept (Q7), its findings named (Q4), the status and now and
 * then the mark (Q3) updated, then paced (Q2). Stops at the end, on an error,
 * or when a cancel or unmount wakes the pause; *@row: the next row. @t0: when
 * the thread started, for the rate and the mark's period.
 */
static int fop_scrub_pass(struct fop_scrub_run *s, const struct raid_info *ri, uint64_t step,
			  double t0, struct raid_scrub_counts *cnt, uint64_t *row)
{
	struct fop_ctx *c = s->c;
	struct fop_status *st = &c->st_scrub;
	uint64_t bytes = 0, fg, fg_last;
	double tmark = t0;
	int rc = 0;

	fg_last = fop_scrub_fg_requests(c);
	while (*row < ri->rows) {
		uint64_t n = ri->rows - *row < step ? ri->rows - *row : step, rate;
		struct raid_scrub_counts one = {0};
		double now, ts = fop_scrub_now(), until;
		bool busy;

		fg = fop_scrub_fg_requests(c); /* (Q2) requests during the last sleep */
		busy = fg != fg_last;
		s->nrows = 0;
		rc = raid_scrub_rows(c->array, *row, n, s->repair, fop_scrub_row, s, &one);
		if (rc == -EIO) { /* (Q5) a block no member could give back: go on around it */
			memset(&one, 0, sizeof(one)); /* the rows are counted again */
			rc = fop_scrub_rows_one_by_one(s, *row, n, &one);
		}
		fop_scrub_add(cnt, &one);
		fop_scrub_keep_busy(s, &one);	    /* (Q7) */
		fg_last = fop_scrub_fg_requests(c); /* ... and during the step */
		busy |= fg_last != fg;
		if (rc)
			break;
		fop_scrub_name_rows(s); /* (Q4) */
		fop_scrub_name_lost(s);
		*row += n;
		bytes += n * s->row_blocks * JG_BLOCK_SIZE;
		now = fop_scrub_now();
		jg_mutex_lock(&c->scrub_lock);
		st->scrub_rows_done = *row;
		fop_scrub_counts_locked(s, cnt);
		st->scrub_rate = now > t0 ? (uint64_t)((double)bytes / (now - t0)) : 0;
		st->scrub_eta = st->scrub_rate ? (ri->rows - *row) * s->row_blocks * JG_BLOCK_SIZE /
						     st->scrub_rate
					       : 0;
		jg_mutex_unlock(&c->scrub_lock);
		if (*row < ri->rows && now - tmark >= fop_scrub_mark_seconds) { /* (Q3) */
			tmark = now;
			raid_scrub_mark(c->array, true, s->repair, *row,
					s->mism0 + cnt->mismatches);
		}
		/* (Q2) each step paced on its own: no catching up after a busy spell */
		rate = busy ? s->max_rate / FOP_SCRUB_BUSY_DIV : s->max_rate;
		if (rate)
			until = ts + (double)(n * s->row_blocks * JG_BLOCK_SIZE) / (double)rate;
		else
			until = busy ? now + FOP_SCRUB_YIELD_MS / 1e3 : 0; /* no limit */
		if (fop_scrub_sleep(c, until))
			break;
	}
	return rc;
}

/* How the scrub ended, from its error, a cancel, and the row it reached. */
static uint32_t fop_scrub_end_state(struct fop_ctx *c, int rc, uint64_t row, uint64_t rows)
{
	uint32_t state;

	jg_mutex_lock(&c->scrub_lock);
	if (rc)
		state = FOP_SCRUB_STATE_FAILED;
	else if (c->scrub_cancel)
		state = FOP_SCRUB_STATE_CANCELLED;
	else if (row < rows)
		state = FOP_SCRUB_STATE_PAUSED;
	else
		state = FOP_SCRUB_STATE_DONE;
	jg_mutex_unlock(&c->scrub_lock);
	return state;
}

/* One line for the log saying how the scrub ended; a finished one also says what it left. */
static void fop_scrub_log_end(struct fop_scrub_run *s, uint32_t state, int rc, uint64_t row,
			      uint64_t rows, const struct raid_scrub_counts *cnt, double t0)
{
	const struct fop_status *st = &s->c->st_scrub;

	switch (state) {
	case FOP_SCRUB_STATE_FAILED:
		jg_log(JG_LOG_ERR, "fuse", "scrub: stopped at row %llu of %llu: %s",
		       (unsigned long long)row, (unsigned long long)rows,
		       rc == -EAGAIN ? "the array is degraded (rebuild first)" : strerror(-rc));
		break;
	case FOP_SCRUB_STATE_CANCELLED:
		jg_log(JG_LOG_INFO, "fuse", "scrub: cancelled at row %llu of %llu",
		       (unsigned long long)row, (unsigned long long)rows);
		break;
	case FOP_SCRUB_STATE_PAUSED:
		jg_log(
		    JG_LOG_INFO, "fuse",
		    "scrub: paused at row %llu of %llu by the unmount; the next mount resumes it",
		    (unsigned long long)row, (unsigned long long)rows);
		break;
	default:
		jg_log(JG_LOG_INFO, "fuse",
		       "scrub: done rows=%llu mismatches=%llu repaired=%llu unreadable=%llu "
		       "rebuilt=%llu unresolved=%llu checksums=%s seconds=%.1f",
		       (unsigned long long)rows, (unsigned long long)(s->mism0 + cnt->mismatches),
		       (unsigned long long)cnt->repaired, (unsigned long long)st->scrub_unreadable,
		       (unsigned long long)cnt->rebuilt, (unsigned long long)cnt->unresolved,
		       s->trust_data ? "no" : "yes", fop_scrub_now() - t0);
		if (cnt->unresolved)
			jg_log(
			    JG_LOG_WARN, "fuse",
			    "scrub: %llu rows: cannot tell which member is wrong (data without a "
			    "checksum): not repaired; check the files named, then scrub --repair "
			    "--trust-data",
			    (unsigned long long)cnt->unresolved);
		if (cnt->unsynced)
			jg_log(JG_LOG_WARN, "fuse",
			       "scrub: %llu rows past the initial sync's mark were %s",
			       (unsigned long long)cnt->unsynced,
			       s->repair ? "synced, not compared (their parity never matched)"
					 : "not compared: the initial sync has not reached them");
	}
}

/*
 * The scrub thread: begin, the pass, the rows found busy looked at again at
 * its end (Q7), then the end: verifier unset (Q6), mark kept or cleared (Q3),
 * logged, and the state for status.
 */
static void *fop_scrub_main(void *arg)
{
	struct fop_scrub_run *s = arg;
	struct fop_ctx *c = s->c;
	struct fop_status *st = &c->st_scrub;
	struct raid_scrub_counts cnt = {0};
	struct raid_info ri;
	uint64_t row = s->first, step;
	double t0 = fop_scrub_now();
	uint32_t state;
	int rc;

	raid_info_get(c->array, &ri);
	step = fop_scrub_begin(s, &ri);
	rc = fop_scrub_pass(s, &ri, step, t0, &cnt, &row);
	if (!rc && row >= ri.rows && s->nlater + s->later_lost) {
		rc = fop_scrub_later(s, &cnt); /* (Q7) */
		jg_mutex_lock(&c->scrub_lock);
		fop_scrub_counts_locked(s, &cnt);
		jg_mutex_unlock(&c->scrub_lock);
	}
	free(s->later);
	state = fop_scrub_end_state(c, rc, row, ri.rows);
	raid_set_verifier(c->array, NULL, NULL); /* (Q6) only this thread scrubs */
	/* (Q3) a pause keeps the mark for the next mount; anything else clears it */
	raid_scrub_mark(c->array, state == FOP_SCRUB_STATE_PAUSED, s->repair, row,
			s->mism0 + cnt.mismatches);
	fop_scrub_log_end(s, state, rc, row, ri.rows, &cnt, t0);
	jg_mutex_lock(&c->scrub_lock);
	st->scrub_state = state;
	st->scrub_error = rc;
	st->scrub_eta = 0;
	st->scrub_end = (uint64_t)time(NULL);
	jg_mutex_unlock(&c->scrub_lock);
	free(s);
	return NULL;
}

/* Start the thread from @first; scrub_lock held, none running (a finished one reaped). */
static int fop_scrub_start_locked(struct fop_ctx *c, bool repair, bool trust_data,
				  uint64_t max_rate, uint64_t first, uint64_t mism0)
{
	struct fop_status *st = &c->st_scrub;
	struct fop_scrub_run *s = calloc(1, sizeof(*s));
	struct raid_info ri;
	int rc;

	JG_ASSERT_HELD(&c->scrub_lock);
	if (!s)
		return -ENOMEM;
	raid_info_get(c->array, &ri);
	s->c = c;
	s->repair = repair;
	s->trust_data = trust_data;
	s->max_rate = max_rate;
	s->first = first;
	s->mism0 = mism0;
	st->scrub_state = FOP_SCRUB_STATE_RUNNING;
	st->scrub_flags = (repair ? FOP_SCRUB_REPAIR : 0) | (trust_data ? FOP_SCRUB_TRUST_DATA : 0);
	st->scrub_rows_done = first;
	st->scrub_rows_total = ri.rows;
	st->scrub_mismatches = mism0;
	st->scrub_repaired = st->scrub_unreadable = st->scrub_rate = st->scrub_eta = 0;
	st->scrub_rebuilt = st->scrub_unresolved = 0;
	st->scrub_max_rate = max_rate;
	st->scrub_start = (uint64_t)time(NULL);
	st->scrub_end = 0;
	st->scrub_error = 0;
	st->scrub_nresults = 0;
	st->scrub_results_more = 0;
	c->scrub_cancel = false;
	rc = -pthread_create(&c->scrub_thread, NULL, fop_scrub_main, s);
	if (rc) {
		st->scrub_state = FOP_SCRUB_STATE_FAILED;
		st->scrub_error = rc;
		free(s);
		return rc;
	}
	c->scrub_started = true;
	return 0;
}

/* A thread that ended is reaped; true: one still runs. scrub_lock held. */
static bool fop_scrub_busy_locked(struct fop_ctx *c)
{
	JG_ASSERT_HELD(&c->scrub_lock);
	if (!c->scrub_started)
		return false;
	if (c->st_scrub.scrub_state == FOP_SCRUB_STATE_RUNNING)
		return true;
	pthread_join(c->scrub_thread, NULL); /* it has set its state: about to return */
	c->scrub_started = false;
	return false;
}

int fop_scrub_start(struct fop_ctx *c, const struct fop_scrub *rq)
{
	uint64_t rate = rq->max_rate == UINT64_MAX ? FOP_SCRUB_MAX_RATE_DEFAULT : rq->max_rate;
	struct raid_info ri;
	int rc;

	if (c->opts->readonly)
		return -EROFS;
	raid_info_get(c->array, &ri);
	if (ri.degraded) {
		jg_log(JG_LOG_ERR, "fuse",
		       "scrub: the array is degraded; parity cannot be checked without every "
		       "member (rebuild first)");
		return -EAGAIN;
	}
	jg_mutex_lock(&c->scrub_lock);
	rc = -EBUSY;
	if (fop_scrub_busy_locked(c) || c->scrub_stop)
		goto out;
	rc = fop_scrub_start_locked(c, rq->flags & FOP_SCRUB_REPAIR,
				    rq->flags & FOP_SCRUB_TRUST_DATA, rate, 0, 0);
out:
	jg_mutex_unlock(&c->scrub_lock);
	if (!rc)
		jg_log(JG_LOG_INFO, "fuse", "scrub: started%s rows=%llu max_rate=%llu",
		       rq->flags & FOP_SCRUB_REPAIR ? " with repair" : "",
		       (unsigned long long)ri.rows, (unsigned long long)rate);
	return rc;
}

int fop_scrub_cancel(struct fop_ctx *c)
{
	int rc = -ENOENT;

	jg_mutex_lock(&c->scrub_lock);
	if (c->scrub_started && c->st_scrub.scrub_state == FOP_SCRUB_STATE_RUNNING) {
		c->scrub_cancel = true;
		pthread_cond_broadcast(&c->scrub_cond);
		rc = 0;
	}
	jg_mutex_unlock(&c->scrub_lock);
	return rc;
}

void fop_scrub_resume(struct fop_ctx *c)
{
	struct raid_info ri;
	int rc;

	raid_info_get(c->array, &ri);
	if (!ri.scrub_marked)
		return;
	if (c->opts->readonly || ri.degraded) {
		jg_log(JG_LOG_INFO, "fuse",
		       "scrub: interrupted at row %llu of %llu; not resumed (%s)",
		       (unsigned long long)ri.scrub_rows, (unsigned long long)ri.rows,
		       c->opts->readonly ? "read-only mount" : "the array is degraded");
		return;
	}
	jg_log(JG_LOG_INFO, "fuse",
	       "scrub: resuming at row %llu of %llu (%llu mismatches found before)%s",
	       (unsigned long long)ri.scrub_rows, (unsigned long long)ri.rows,
	       (unsigned long long)ri.scrub_mismatches, ri.scrub_repair ? " with repair" : "");
	jg_mutex_lock(&c->scrub_lock);
	rc = fop_scrub_start_locked(c, ri.scrub_repair, false, FOP_SCRUB_MAX_RATE_DEFAULT, ri.scrub_rows,
				    ri.scrub_mismatches);
	jg_mutex_unlock(&c->scrub_lock);
	if (rc)
		jg_log(JG_LOG_ERR, "fuse", "scrub: cannot resume: %s", strerror(-rc));
}

void fop_scrub_join(struct fop_ctx *c)
{
	bool started;

	jg_mutex_lock(&c->scrub_lock);
	c->scrub_stop = true;
	pthread_cond_broadcast(&c->scrub_cond);
	started = c->scrub_started;
	c->scrub_started = false;
	jg_mutex_unlock(&c->scrub_lock);
	if (started)
		pthread_join(c->scrub_thread, NULL);
}

void fop_scrub_status(struct fop_ctx *c, struct fop_status *st)
{
	const struct fop_status *s = &c->st_scrub;

	jg_mutex_lock(&c->scrub_lock);
	st->scrub_state = s->scrub_state;
	st->scrub_flags = s->scrub_flags;
	st->scrub_rows_done = s->scrub_rows_done;
	st->scrub_rows_total = s->scrub_rows_total;
	st->scrub_mismatches = s->scrub_mismatches;
	st->scrub_repaired = s->scrub_repaired;
	st->scrub_rebuilt = s->scrub_rebuilt;
	st->scrub_unresolved = s->scrub_unresolved;
	st->scrub_unreadable = s->scrub_unreadable;
	st->scrub_rate = s->scrub_rate;
	st->scrub_max_rate = s->scrub_max_rate;
	st->scrub_eta = s->scrub_eta;
	st->scrub_start = s->scrub_start;
	st->scrub_end = s->scrub_end;
	st->scrub_error = s->scrub_error;
	st->scrub_nresults = s->scrub_nresults;
	st->scrub_results_more = s->scrub_results_more;
	memcpy(st->scrub_results, s->scrub_results, sizeof(st->scrub_results));
	jg_mutex_unlock(&c->scrub_lock);
}
