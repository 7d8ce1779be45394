/* SPDX-License-Identifier: MIT */
/*
 * tools/crash/opcov.h - the crash harness's coverage of write-ordering points.
 *
 * Each power cut yields the set of ordering points that had a write in flight
 * (raid_fault_domain_cut_points(), include/jgrfs/base.h's registry). A table
 * adds them up per column (a mode of `jgrfs-crash crashtest`): how many cuts fell
 * while each point was in flight. A harness that never cuts while a point is in
 * flight has not tested what recovery does for it, so a run can require every
 * point to be hit at least N times (opcov_check()).
 */
#ifndef JGRFS_TOOLS_OPCOV_H
#define JGRFS_TOOLS_OPCOV_H

#include <stdint.h>
#include <stdio.h>

#include "jgrfs/base.h"

struct opcov {
	uint64_t cuts;			/* cuts counted */
	uint64_t hits[JG_OP_COUNT];	/* cuts with the point in flight */
};

/* Count one cut whose points in flight are @mask (bit per enum jg_opoint). */
void opcov_add(struct opcov *c, uint64_t mask);
/* c += d */
void opcov_merge(struct opcov *c, const struct opcov *d);

/*
 * The table: a row per point (label, registry name, what it orders), a column
 * per entry of @cols named by @names, and a total column. JG_OP_NONE (writes
 * no point names) is shown only when hit.
 */
void opcov_print(FILE *out, const struct opcov *cols, const char *const *names, unsigned int n);

/*
 * Every point but those in @skip (bit per point; JG_OP_NONE is always skipped)
 * must have at least @min hits summed over @cols. Prints a line naming each one
 * that has not to @out. Returns the number of such points.
 */
unsigned int opcov_check(FILE *out, const struct opcov *cols, unsigned int n, uint64_t min,
			 uint64_t skip);

/* Read the lines "opoints 0x<mask>" a dying daemon appended to @path
 * (jgrfs-crash --opoints) into @c, then remove the file. Returns the number of
 * cuts read. */
unsigned int opcov_read_file(const char *path, struct opcov *c);

#endif /* JGRFS_TOOLS_OPCOV_H */
