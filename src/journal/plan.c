// SPDX-License-Identifier: MIT
/*
 * src/journal/plan.c - a commit as a plan: the ordered steps of one commit.
 *
 * jnl_plan() chooses the steps from the data mode and the shape of the
 * transaction; commit.c runs them in order (jnl_commit_run()). Each step names
 * its ordering point (include/jgrfs/base.h, which the crash harness counts), the
 * requests it issues, and what a crash right after it leaves for recovery.
 * docs/FORMAT.md §3.6 is this table printed (tests/unit/journal/test_plan.c
 * prints it and compares), so the rules live here and nowhere else:
 *
 *   (C1) a commit block written with its log blocks (one batch, then a FLUSH,
 *        or all of it FUA) is safe because recovery accepts a commit block only
 *        when every descriptor tag's crc32c matches its copy (jbd2 async_commit).
 *   (C2) ordered data, and declared data past JNL_COMMIT_CSUM_MAX_DATA blocks,
 *        must be durable before the commit block: the commit block goes last,
 *        PREFLUSH|FUA.
 *   (C3) declared: declare blocks are durable (FUA) before any data (D1). A
 *        small transaction then commits as (C1) with JNL_COMMIT_DATA_CSUM: its
 *        declare tags hold the crc32c of the data, which recovery checks.
 *   (C6) declared: a commit that finds more than jnl_unflushed_max() log blocks
 *        written since the last flush flushes first (commit.c (C6)).
 */
#include "jnl_i.h"

const struct jnl_step_def jnl_steps[JNL_STEP_COUNT] = {
	[JNL_STEP_LOG_FLUSH] = {
		.point = JG_OP_JNL_LOG_FLUSH, .writes = "FLUSH", .durability = 1,
		.crash = "nothing of this transaction is written; the log before it is durable with its parity",
	},
	[JNL_STEP_DECLARE] = {
		.point = JG_OP_JNL_DECLARE, .writes = "declare blocks, FUA", .durability = 1,
		.crash = "no commit block: recovery drops the transaction and resyncs the stripes its declare blocks name",
	},
	[JNL_STEP_DATA] = {
		.point = JG_OP_JNL_DATA, .writes = "one batch {log blocks, data}",
		.crash = "no commit block: recovery drops the transaction (declared: and resyncs what its declare blocks name)",
	},
	[JNL_STEP_COMMIT] = {
		.point = JG_OP_JNL_COMMIT, .writes = "commit block, PREFLUSH+FUA", .durability = 2,
		.commit_point = true,
		.crash = "durable: recovery replays the transaction",
	},
	[JNL_STEP_LOG_FUA] = {
		.point = JG_OP_JNL_LOG_FUA, .writes = "one batch {log blocks, commit block}, FUA",
		.durability = 1, .commit_point = true,
		.crash = "durable: recovery replays the transaction (cut inside it: replayed only if every tag's crc32c matches)",
	},
	[JNL_STEP_BATCH] = {
		.point = JG_OP_JNL_LOG_BATCH, .writes = "one batch {log blocks, data, commit block}",
		.crash = "not yet durable: recovery replays the transaction only if every tag's crc32c matches (declared: and its data's), else drops it",
	},
	[JNL_STEP_FLUSH] = {
		.point = JG_OP_JNL_LOG_BATCH, .writes = "FLUSH", .durability = 1,
		.commit_point = true,
		.crash = "durable: recovery replays the transaction",
	},
};

void jnl_plan(const struct jnl_shape *s, struct jnl_plan *p)
{
	bool after_data = (s->mode == JNL_DATA_DECLARED && !s->csum_commit) ||
			  (s->mode == JNL_DATA_ORDERED && s->data_home);

	p->n = 0;
	if (s->log_flush)			/* (C6) */
		p->step[p->n++] = JNL_STEP_LOG_FLUSH;
	if (s->declare)				/* (C3) */
		p->step[p->n++] = JNL_STEP_DECLARE;
	if (after_data) {			/* (C2) */
		p->step[p->n++] = JNL_STEP_DATA;
		p->step[p->n++] = JNL_STEP_COMMIT;
	} else if (!s->data_home) {		/* (C1), nothing written home */
		p->step[p->n++] = JNL_STEP_LOG_FUA;
	} else {				/* (C1) */
		p->step[p->n++] = JNL_STEP_BATCH;
		p->step[p->n++] = JNL_STEP_FLUSH;
	}
}
