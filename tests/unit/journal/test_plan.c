// SPDX-License-Identifier: MIT
/*
 * tests/unit/journal/test_plan.c - the commit as a plan (src/journal/plan.c):
 * a commit issues exactly the steps its plan lists, in order, each as one batch
 * with its ordering point and durability points; and docs/FORMAT.md §3.6 is the
 * plan table printed (a mismatch prints the table to paste).
 *
 * Usage: test_plan FORMAT.md
 */
#include <errno.h>
#include <stdio.h>

#include "jnl_test.h"
#include "../../../src/journal/jnl_format.h"
#include "../../../src/journal/jnl_i.h"

static const char *t_format_md;

/* ---------------------------------------------------------------- the cases */

struct plan_case {
	enum jnl_data_mode mode;
	const char *what;		/* the transaction, as FORMAT.md names it */
	struct jnl_shape shape;
	/* how to make such a commit on a journal: data blocks, logdata= */
	unsigned int data, log_data_max;
};

#define S(m, ...) { .mode = (m), __VA_ARGS__ }
static const struct plan_case cases[] = {
	{ JNL_DATA_WRITEBACK, "metadata only", S(JNL_DATA_WRITEBACK), 0, 0 },
	{ JNL_DATA_WRITEBACK, "with data", S(JNL_DATA_WRITEBACK, .data_home = true), 5, 0 },
	{ JNL_DATA_JOURNAL, "any (data is logged)", S(JNL_DATA_JOURNAL), 5, 0 },
	{ JNL_DATA_ORDERED, "metadata only, or data logged (§3.8)", S(JNL_DATA_ORDERED), 5, 16 },
	{ JNL_DATA_ORDERED, "with data", S(JNL_DATA_ORDERED, .data_home = true), 5, 0 },
	{ JNL_DATA_DECLARED, "metadata only, or data logged (§3.8)",
	  S(JNL_DATA_DECLARED, .csum_commit = true), 5, 16 },
	{ JNL_DATA_DECLARED, "at most 64 data blocks",
	  S(JNL_DATA_DECLARED, .declare = true, .data_home = true, .csum_commit = true), 5, 0 },
	{ JNL_DATA_DECLARED, "more data",
	  S(JNL_DATA_DECLARED, .declare = true, .data_home = true), JNL_COMMIT_CSUM_MAX_DATA + 1, 0 },
	/* (C6): made by the unit tests of test_declare.c, not here */
	{ JNL_DATA_DECLARED, "any, past the (C6) bound of unflushed log",
	  S(JNL_DATA_DECLARED, .log_flush = true, .declare = true, .data_home = true,
	    .csum_commit = true), 0, 0 },
};
#undef S
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* --------------------------------------------- a device recording each batch */

#define OPD_MAX 64

struct opd_batch {
	enum jg_opoint point;
	unsigned int durability;	/* FLUSH and PREFLUSH each, the batch's FUA once */
};

struct opd {
	struct blk_dev dev;
	struct blk_dev *lower;
	struct opd_batch b[OPD_MAX];
	unsigned int n;
};

static int opd_submit(struct blk_dev *d, struct blk_req *r, unsigned int n)
{
	struct opd *o = (struct opd *)d;
	struct opd_batch *b = &o->b[o->n];
	bool fua = false;

	assert_true(o->n < OPD_MAX);
	b->point = jg_opoint_get();
	b->durability = 0;
	for (unsigned int i = 0; i < n; i++) {
		b->durability += (r[i].op == BLK_OP_FLUSH) + !!(r[i].flags & BLK_PREFLUSH);
		fua |= !!(r[i].flags & BLK_FUA);
	}
	b->durability += fua;
	o->n++;
	return blk_submit(o->lower, r, n);
}

static int opd_ctl(struct blk_dev *d, unsigned int cmd, void *arg)
{
	(void)d;
	(void)arg;
	return cmd == BLK_CTL_GET_STATS ? -ENOTTY : 0;
}

static void opd_close(struct blk_dev *d)
{
	free(d);
}

static const struct blk_dev_ops opd_ops = { .submit = opd_submit, .ctl = opd_ctl, .close = opd_close };

/* ------------------------------------------------------------------- tests */

/* A commit of each shape issues its plan's steps, one batch each, in order. */
static void test_plan_commit_runs_its_plan(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < NCASES; i++) {
		const struct plan_case *c = &cases[i];
		struct blk_dev *mem;
		struct opd *o;
		struct jnl_cfg cfg = { .start_blkno = T_JSTART, .mode = c->mode,
				       .no_commit_thread = true, .log_data_max = c->log_data_max };
		struct jnl_plan p;
		struct jnl *j = NULL;

		if (c->shape.log_flush)
			continue;	/* test_declare.c test_declare_log_flush_bound */
		mem = t_mem_dev();
		o = calloc(1, sizeof(*o));
		assert_non_null(o);
		o->dev.ops = &opd_ops;
		o->dev.nblocks = mem->nblocks;
		snprintf(o->dev.name, sizeof(o->dev.name), "opd");
		o->lower = mem;
		assert_int_equal(jnl_open(&o->dev, &cfg, &j), 0);
		assert_int_equal(jnl_recover(j, NULL), 0);
		assert_int_equal(jnl_start(j), 0);
		t_txn(j, 10, 3, 1, true);
		if (c->data)
			t_txn(j, 1000, c->data, 1, false);
		o->n = 0;
		assert_int_equal(jnl_commit(j, 0, true), 0);
		jnl_plan(&c->shape, &p);
		if (o->n != p.n)
			fail_msg("%s, %s: %u batches, the plan has %u steps", jnl_data_mode_name(c->mode),
				 c->what, o->n, p.n);
		for (unsigned int k = 0; k < p.n; k++) {
			const struct jnl_step_def *d = &jnl_steps[p.step[k]];

			if (o->b[k].point != d->point || o->b[k].durability != d->durability)
				fail_msg("%s, %s: batch %u is %s with %u durability points, step %u is %s with %u",
					 jnl_data_mode_name(c->mode), c->what, k, jg_opoint_id(o->b[k].point),
					 o->b[k].durability, k, jg_opoint_id(d->point), d->durability);
		}
		assert_int_equal(jnl_close(j), 0);
		blk_close(&o->dev);
		blk_close(mem);
	}
}

/* The plan of a shape, as the rules say (a check of jnl_plan() itself). */
static void test_plan_rules(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < NCASES; i++) {
		const struct jnl_shape *s = &cases[i].shape;
		unsigned int decl = 0, commit = 0, after_data = 0, durable = 0;
		struct jnl_plan p;

		jnl_plan(s, &p);
		assert_true(p.n >= 1 && p.n <= JNL_PLAN_MAX);
		for (unsigned int k = 0; k < p.n; k++) {
			enum jnl_step st = p.step[k];

			if (st == JNL_STEP_DECLARE)
				decl = k + 1;
			if (st == JNL_STEP_COMMIT)
				after_data = k + 1;
			if (jnl_steps[st].commit_point)
				commit = k + 1;
			durable += jnl_steps[st].durability;
		}
		/* exactly one commit point, the last step */
		assert_int_equal(commit, p.n);
		/* (C6) first; (C3) declare blocks before anything of the data */
		assert_int_equal(p.step[0] == JNL_STEP_LOG_FLUSH, s->log_flush);
		assert_int_equal(!!decl, s->declare);
		if (decl)
			assert_int_equal(decl, 1u + s->log_flush);
		/* (C2) ordered data and large declared data before a PREFLUSH commit block */
		assert_int_equal(!!after_data, (s->mode == JNL_DATA_ORDERED && s->data_home) ||
						       (s->mode == JNL_DATA_DECLARED && !s->csum_commit));
		/* nothing home: one FUA batch */
		if (!s->data_home && !s->log_flush)
			assert_int_equal(durable, 1);
	}
}

/* The table docs/FORMAT.md §3.6 must hold, printed from the plan. */
static size_t plan_table(char *out, size_t cap)
{
	size_t n = 0;

#define P(...) (n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__))
	P("| data mode | transaction | steps, in order (numbered as below) | durability points |\n");
	P("| --- | --- | --- | --- |\n");
	for (unsigned int i = 0; i < NCASES; i++) {
		struct jnl_plan p;
		unsigned int d = 0;

		jnl_plan(&cases[i].shape, &p);
		P("| %s | %s | ", jnl_data_mode_name(cases[i].mode), cases[i].what);
		for (unsigned int k = 0; k < p.n; k++) {
			const struct jnl_step_def *s = &jnl_steps[p.step[k]];

			P("%s%s (%u)", k ? "; " : "", s->writes, p.step[k] + 1);
			d += s->durability;
		}
		P(" | %u |\n", d);
	}
	P("\n| step | ordering point | writes | durability points | a crash after it leaves |\n");
	P("| --- | --- | --- | --- | --- |\n");
	for (unsigned int s = 0; s < JNL_STEP_COUNT; s++)
		P("| %u | `%s` %s | %s | %u | %s%s |\n", s + 1, jg_opoint_id(jnl_steps[s].point),
		  jg_opoint_label(jnl_steps[s].point), jnl_steps[s].writes, jnl_steps[s].durability,
		  jnl_steps[s].commit_point ? "**the commit point.** " : "", jnl_steps[s].crash);
#undef P
	return n;
}

static void test_plan_table_in_format(void **state)
{
	static const char begin[] = "<!-- commit plans: printed by tests/unit/journal/test_plan.c -->\n";
	static const char end[] = "<!-- end of commit plans -->";
	char want[16384], *doc, *b, *e;
	size_t n = plan_table(want, sizeof(want));
	FILE *f = fopen(t_format_md, "r");
	long len;

	(void)state;
	assert_true(n < sizeof(want));
	if (!f)
		fail_msg("%s: %s", t_format_md, strerror(errno));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	doc = calloc(1, (size_t)len + 1);
	assert_non_null(doc);
	assert_int_equal(fread(doc, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	b = strstr(doc, begin);
	e = b ? strstr(b, end) : NULL;
	if (!b || !e || (size_t)(e - b) != strlen(begin) + n || memcmp(b + strlen(begin), want, n)) {
		fprintf(stderr, "%s, between the markers, should read:\n%s%s%s\n", t_format_md, begin, want, end);
		free(doc);
		fail_msg("docs/FORMAT.md §3.6 is not the commit plan table");
	}
	free(doc);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_rules),
		cmocka_unit_test(test_plan_commit_runs_its_plan),
		cmocka_unit_test(test_plan_table_in_format),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s FORMAT.md\n", argv[0]);
		return 2;
	}
	t_format_md = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
