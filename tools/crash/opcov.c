// SPDX-License-Identifier: MIT
/*
 * tools/crash/opcov.c - the coverage table of write-ordering points (tools/crash/opcov.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "opcov.h"

void opcov_add(struct opcov *c, uint64_t mask)
{
	c->cuts++;
	for (unsigned int p = 0; p < JG_OP_COUNT; p++)
		if (mask & (1ull << p))
			c->hits[p]++;
}

void opcov_merge(struct opcov *c, const struct opcov *d)
{
	c->cuts += d->cuts;
	for (unsigned int p = 0; p < JG_OP_COUNT; p++)
		c->hits[p] += d->hits[p];
}

static uint64_t opcov_total(const struct opcov *cols, unsigned int n, unsigned int p)
{
	uint64_t t = 0;

	for (unsigned int i = 0; i < n; i++)
		t += cols[i].hits[p];
	return t;
}

void opcov_print(FILE *out, const struct opcov *cols, const char *const *names, unsigned int n)
{
	fprintf(out, "\nordering points in flight at the cut (cuts per point)\n");
	fprintf(out, "%-12s %-18s", "point", "name");
	for (unsigned int i = 0; i < n; i++)
		fprintf(out, " %9s", names[i]);
	fprintf(out, " %9s  %s\n", "total", "what");
	for (unsigned int p = 0; p < JG_OP_COUNT; p++) {
		uint64_t t = opcov_total(cols, n, p);

		if (p == JG_OP_NONE && !t)
			continue;
		fprintf(out, "%-12s %-18s", jg_opoint_label(p), jg_opoint_id(p));
		for (unsigned int i = 0; i < n; i++)
			fprintf(out, " %9" PRIu64, cols[i].hits[p]);
		fprintf(out, " %9" PRIu64 "  %s\n", t, jg_opoint_what(p));
	}
	fprintf(out, "%-12s %-18s", "cuts", "");
	for (unsigned int i = 0; i < n; i++)
		fprintf(out, " %9" PRIu64, cols[i].cuts);
	fprintf(out, "\n");
}

unsigned int opcov_check(FILE *out, const struct opcov *cols, unsigned int n, uint64_t min,
			 uint64_t skip)
{
	unsigned int missed = 0;

	for (unsigned int p = JG_OP_NONE + 1; p < JG_OP_COUNT; p++) {
		uint64_t t = opcov_total(cols, n, p);

		if ((skip & (1ull << p)) || t >= min)
			continue;
		fprintf(out, "coverage: ordering point %s %s (%s) in flight at %" PRIu64
			" cuts, fewer than %" PRIu64 "\n", jg_opoint_label(p), jg_opoint_id(p),
			jg_opoint_what(p), t, min);
		missed++;
	}
	return missed;
}

unsigned int opcov_read_file(const char *path, struct opcov *c)
{
	FILE *f = fopen(path, "r");
	unsigned int n = 0;
	uint64_t mask;

	if (!f)
		return 0;
	while (fscanf(f, " opoints %" SCNx64, &mask) == 1) {
		opcov_add(c, mask);
		n++;
	}
	fclose(f);
	unlink(path);
	return n;
}
