/* SPDX-License-Identifier: MIT */
/*
 * src/raid/stripe_i.h - what the files of the array's I/O path share: a group
 * of rows and its plan (struct raid_grp, raid_row, raid_seg), and the steps of
 * raid_grp_run() kept in other files. Included by stripe.c, plan.c, read.c,
 * write.c and repair.c only; the rules (W1)-(W7) they keep are stated in
 * stripe.c.
 */
#ifndef JGRFS_RAID_STRIPE_I_H
#define JGRFS_RAID_STRIPE_I_H

#include <stddef.h>

#include "raid_i.h"

enum raid_grp_mode {
	RAID_GRP_USER, /* user requests */
	RAID_GRP_CHECK = RAID_ROWS_CHECK,
	RAID_GRP_SCRUB = RAID_ROWS_SCRUB,
	RAID_GRP_REBUILD = RAID_ROWS_REBUILD,
};
_Static_assert(RAID_ROWS_CHECK != 0 && RAID_ROWS_SCRUB != 0 && RAID_ROWS_REBUILD != 0,
	       "row modes differ from RAID_GRP_USER");

enum raid_line_mode { RAID_LINE_NONE, RAID_LINE_FULL, RAID_LINE_RCW, RAID_LINE_RMW };

struct raid_seg { /* one user request's part inside one row */
	uint64_t row;
	uint32_t slot; /* first array block of the row it covers */
	uint32_t nblocks;
	uint8_t *buf;
	unsigned int req; /* index of the user request */
	bool write;
	uint32_t flags;
};

struct raid_row {
	uint64_t row;
	unsigned int seg0, nseg;
	bool write, read, sync, row_path, mismatch, checked;
	bool append;				/* a write said more will follow (BLK_APPEND) */
	uint8_t *cache;				/* its row cache image, pinned, or NULL */
	bool cache_fill;			/* ... which phase A reads whole first */
	uint32_t l0, nl;			/* row path: lines [l0, l0 + nl) only */
	uint32_t fl0, fnl;			/* fast path: scratch holds lines [fl0, fl0 + fnl) */
	uint8_t *pos_buf[RAID_MAX_MEMBERS]; /* chunk buffers per position */
	uint8_t *newpar[2];		    /* new P, Q */
	uint8_t **wsrc;			    /* per slot: source of its write, or NULL */
	uint8_t *line;			    /* per line: enum raid_line_mode */
};

struct raid_grp {
	struct raid_array *a;
	enum raid_grp_mode mode;
	bool repair;
	bool member_major; /* rows consecutive and all whole: scratch member by member */
	struct raid_row *rows;
	unsigned int nrows;
	struct raid_seg *segs;
	struct blk_req *mr; /* member requests */
	unsigned int *mrole;
	unsigned int nmr, capmr;
	uint8_t *arena; /* scratch of the group */
	size_t arena_bytes;
	bool arena_counted; /* counted in raid_array.scratch_calls */
	uint8_t *tmp;	  /* one block, RAID6 RMW */
	uint64_t checked, mismatched, repaired, syncraid;
	bool fua;	 /* a write of the group asked for FUA: its data writes get it */
	bool fua_strict; /* ... and one without BLK_FS_RAIDSYNC: the parity writes too */
	bool parity_fua; /* this attempt: parity writes with FUA ((W4)) */
	uint64_t *regions; /* bitmap regions written */
	unsigned int nregions;
	raid_row_fn mism_fn; /* RAID_GRP_SCRUB: told each mismatched row, no lock held */
	void *mism_ctx;
};

/* The bytes of one chunk (one member's part of a row). */
static inline size_t raid_chunk_bytes(const struct raid_geo *geo)
{
	return (size_t)geo->chunk_blocks * RAID_BS;
}

/* stripe.c */
/* Queue a member request: @nblocks from line @k of @role's chunk of @row, FUA per (W4). */
int raid_mr_add(struct raid_grp *g, uint8_t op, unsigned int role, uint64_t row, uint32_t k,
		uint32_t nblocks, uint8_t *buf);
/* Queue reads or writes of position @q of @r at the lines where sel[k], in runs. */
int raid_line_runs(struct raid_grp *g, struct raid_row *r, unsigned int q, enum blk_op op,
		   uint8_t *base, uint32_t base_line, const bool *sel);
/* Run one group: lock (W1), plan, read, compute, write; retried degraded when a member fails. */
int raid_grp_run(struct raid_grp *g);
/* Free a group's buffers; the larger scratch is kept for the next call. */
void raid_grp_free(struct raid_grp *g);
/* Count @delta bytes of scratch allocated (or freed), and the most allocated (issue 46). */
void raid_scratch_count(struct raid_array *a, int64_t delta);
/* Rows per group: bounded by RAID_GROUP_MAX_ROWS and the worst-case scratch. */
unsigned int raid_grp_max_rows(const struct raid_geo *geo);

/* plan.c */
/* Decide each row's path and line modes, and carve the group's scratch. */
int raid_grp_plan(struct raid_grp *g, uint32_t rmiss, uint32_t wmiss);

/* read.c */
/* Phase A: queue every member read of the group (user reads, pre-reads, whole chunks). */
int raid_grp_reads(struct raid_grp *g, uint32_t rmiss);

/* write.c */
/* The line modes of a fast-path write row and its line range; whether a line is partial. */
bool raid_row_line_modes(struct raid_grp *g, struct raid_row *r);
/* Fast path: the new parity of the row's written lines. */
void raid_row_fast_parity(struct raid_grp *g, struct raid_row *r);
/* Whether the row's mismatched parity is rewritten. */
bool raid_row_fix(const struct raid_grp *g, const struct raid_row *r);
/* Phase C: queue every member write of the group. */
int raid_grp_writes(struct raid_grp *g, uint32_t rmiss, uint32_t wmiss);
/* Unpin the group's row cache images, brought up to date when @ok (H2). */
void raid_grp_cache_done(struct raid_grp *g, bool ok);

/* repair.c */
/* A member read that failed with -EIO: each block reread, else rebuilt and rewritten (W7). */
int raid_read_repair(struct raid_array *a, unsigned int role, struct blk_req *r, bool *fail);
/* Row path: reconstruct, check, serve reads, merge writes, new parity. */
int raid_row_slow_compute(struct raid_grp *g, struct raid_row *r, uint32_t rmiss);

#endif /* JGRFS_RAID_STRIPE_I_H */
