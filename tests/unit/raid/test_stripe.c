// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_stripe.c - the array I/O path: reads and writes of any
 * length against a plain reference buffer, RMW vs RCW, zero-read full rows in one
 * member batch, degraded I/O for every single (RAID4/5) and double (RAID6) loss,
 * concurrent writers, a member that dies mid-I/O, and member writes failing with
 * -ENOSPC / -EDQUOT (the member fails, or the rows stay recorded dirty).
 */
#include <pthread.h>
#include <unistd.h>

#include "raid_test.h"

static const struct geo_case *const geos = geo_stripe;
#define NGEO GEO_N(geo_stripe)
#define MEMBER_BLOCKS 160

static void t_fail_geo(const struct geo_case *g, uint64_t seed, const char *what)
{
	fail_msg("%s: level=%u members=%u chunk=%u seed=%llu", what, g->level, g->n, g->chunk,
		 (unsigned long long)seed);
}

/* Random batches of non-overlapping writes, then random reads, all checked. */
static void t_random_io(struct tarr *t, uint8_t *ref, uint64_t nblk, uint64_t seed, int rounds,
			const struct geo_case *gc)
{
	uint64_t s = seed;

	for (int round = 0; round < rounds; round++) {
		struct blk_req r[4];
		unsigned int nr = 1 + t_rand(&s) % 4;
		uint64_t at = t_rand(&s) % nblk;

		/* disjoint requests: increasing, non-overlapping positions */
		for (unsigned int i = 0; i < nr; i++) {
			uint32_t len = 1 + t_rand(&s) % 40;

			if (at >= nblk) {
				nr = i;
				break;
			}
			if (len > nblk - at)
				len = (uint32_t)(nblk - at);
			r[i] = (struct blk_req){.op = BLK_OP_WRITE,
						.blkno = at,
						.nblocks = len,
						.buf = jg_alloc_blocks(len)};
			t_fill(r[i].buf, len, t_rand(&s));
			memcpy(ref + at * JG_BLOCK_SIZE, r[i].buf, (size_t)len * JG_BLOCK_SIZE);
			at += len + t_rand(&s) % 8;
		}
		if (nr && blk_submit(t->dev, r, nr))
			t_fail_geo(gc, seed, "write batch failed");
		for (unsigned int i = 0; i < nr; i++)
			free(r[i].buf);
		/* read back a random range */
		{
			uint64_t b = t_rand(&s) % nblk;
			uint32_t len = 1 + t_rand(&s) % 64;
			uint8_t *buf;

			if (len > nblk - b)
				len = (uint32_t)(nblk - b);
			buf = jg_alloc_blocks(len);
			if (t_io(t, BLK_OP_READ, b, len, buf, 0) ||
			    memcmp(buf, ref + b * JG_BLOCK_SIZE, (size_t)len * JG_BLOCK_SIZE))
				t_fail_geo(gc, seed, "read back differs");
			free(buf);
		}
	}
}

static void t_check_all(struct tarr *t, const uint8_t *ref, uint64_t nblk,
			const struct geo_case *gc, uint64_t seed)
{
	uint8_t *buf = jg_alloc_blocks(nblk);

	if (t_io(t, BLK_OP_READ, 0, (uint32_t)nblk, buf, 0) ||
	    memcmp(buf, ref, nblk * JG_BLOCK_SIZE))
		t_fail_geo(gc, seed, "array content differs from the reference");
	free(buf);
}

static void test_stripe_random_rw(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct tarr t;
		struct raid_info info;
		uint64_t seed = 1000 + gi;
		uint8_t *ref;
		struct raid_geo g;

		t_make(&t, gc, MEMBER_BLOCKS, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		ref = calloc(info.array_blocks, JG_BLOCK_SIZE);
		t_random_io(&t, ref, info.array_blocks, seed, 60, gc);
		t_check_all(&t, ref, info.array_blocks, gc, seed);
		if (raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
			t_fail_geo(gc, seed, "scrub found mismatches");
		t_stop(&t);
		t_geo(&t, &g);
		if (t_ref_mismatches(&t, &g))
			t_fail_geo(gc, seed, "reference parity check found mismatches");
		/* the data survives stop/assemble */
		t_assemble(&t);
		t_check_all(&t, ref, info.array_blocks, gc, seed);
		t_stop(&t);
		free(ref);
		t_free(&t);
	}
}

/*
 * One batch whose second group needs more scratch than its first (whole rows,
 * then partial ones), between calls of other sizes: scratch is kept and reused
 * across groups and calls (stripe.c, spare_arena), never used after it is gone.
 */
static void test_stripe_scratch_grows_and_is_reused(void **state)
{
	static const struct geo_case *const cg = geo_big_chunk;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_big_chunk); gi++) {
		const struct geo_case *gc = &cg[gi];
		struct tarr t;
		struct raid_info info;
		uint32_t rb, C = gc->chunk, rows = RAID_GROUP_MAX_ROWS + 8;
		uint64_t nblk, members = 2ull * rows * C + 4096, seed = 5000 + gi;
		struct blk_req *r;
		uint8_t *ref, *buf;

		t_make(&t, gc, members, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		rb = info.ndata * C;
		nblk = info.array_blocks;
		assert_true(nblk >= 2ull * rows * rb);
		ref = calloc(nblk, JG_BLOCK_SIZE);
		buf = jg_alloc_blocks(nblk);
		r = calloc(rows + 1, sizeof(*r));
		assert_true(ref && buf && r);
		for (int round = 0; round < 3; round++) {
			unsigned int nr = 0;

			t_fill(buf, nblk, seed + (uint64_t)round);
			/* a small partial write first (its own call) */
			assert_int_equal(t_io(&t, BLK_OP_WRITE, 3, 2, buf, 0), 0);
			memcpy(ref + 3 * JG_BLOCK_SIZE, buf, 2 * JG_BLOCK_SIZE);
			/* rows [0, rows): whole; rows [rows, 2 rows): only chunk 0 */
			r[nr++] = (struct blk_req){.op = BLK_OP_WRITE, .blkno = 0,
						   .nblocks = rows * rb, .buf = buf};
			for (uint32_t i = 0; i < rows; i++) {
				uint64_t at = (uint64_t)(rows + i) * rb;

				r[nr++] = (struct blk_req){.op = BLK_OP_WRITE, .blkno = at,
							   .nblocks = C,
							   .buf = buf + at * JG_BLOCK_SIZE};
			}
			assert_int_equal(blk_submit(t.dev, r, nr), 0);
			memcpy(ref, buf, (size_t)rows * rb * JG_BLOCK_SIZE);
			for (uint32_t i = 0; i < rows; i++) {
				uint64_t at = (uint64_t)(rows + i) * rb;

				memcpy(ref + at * JG_BLOCK_SIZE, buf + at * JG_BLOCK_SIZE,
				       (size_t)C * JG_BLOCK_SIZE);
			}
			t_check_all(&t, ref, nblk, gc, seed);
			if (raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
				t_fail_geo(gc, seed, "scrub found mismatches");
		}
		t_stop(&t);
		free(r);
		free(buf);
		free(ref);
		t_free(&t);
	}
}

/* Same writes with forced RMW and forced RCW: identical member data areas. */
static void test_stripe_rmw_rcw_identical(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct tarr t[2];
		uint8_t *img[2][RAID_MAX_MEMBERS];
		uint64_t seed = 2000 + gi;
		struct raid_geo g;

		for (int v = 0; v < 2; v++) {
			struct raid_info info;
			uint8_t *ref;

			t_make(&t[v], gc, MEMBER_BLOCKS, RAID_RESYNC_FULL, 0, NULL);
			t_assemble(&t[v]);
			raid_info_get(t[v].a, &info);
			ref = calloc(info.array_blocks, JG_BLOCK_SIZE);
			/* a full base, then partial writes under the forced mode */
			t_random_io(&t[v], ref, info.array_blocks, seed, 10, gc);
			t[v].a->test.partial = v ? RAID_PARTIAL_RMW : RAID_PARTIAL_RCW;
			t_random_io(&t[v], ref, info.array_blocks, seed + 77, 40, gc);
			t[v].a->test.partial = RAID_PARTIAL_AUTO;
			t_check_all(&t[v], ref, info.array_blocks, gc, seed);
			free(ref);
			t_stop(&t[v]);
			for (unsigned int i = 0; i < gc->n; i++)
				img[v][i] = t_member_image(&t[v], i);
		}
		t_geo(&t[0], &g);
		for (unsigned int i = 0; i < gc->n; i++) {
			if (memcmp(img[0][i] + g.data_offset * JG_BLOCK_SIZE,
				   img[1][i] + g.data_offset * JG_BLOCK_SIZE,
				   g.data_blocks * JG_BLOCK_SIZE))
				t_fail_geo(gc, seed, "RMW and RCW left different member bytes");
			free(img[0][i]);
			free(img[1][i]);
		}
		if (t_ref_mismatches(&t[0], &g) || t_ref_mismatches(&t[1], &g))
			t_fail_geo(gc, seed, "parity mismatch after RMW/RCW");
		t_free(&t[0]);
		t_free(&t[1]);
	}
}

/* A batch of whole rows: no member read, and one submit per member. */
static void test_stripe_full_rows_zero_read(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct tarr t;
		struct raid_info info;
		uint32_t rows = 4, nb;
		uint8_t *buf;

		t_make(&t, gc, MEMBER_BLOCKS, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		nb = rows * info.ndata * info.chunk_blocks;
		buf = jg_alloc_blocks(nb);
		t_fill(buf, nb, gi);
		t_count_reset(&t);
		assert_int_equal(t_io(&t, BLK_OP_WRITE, info.ndata * info.chunk_blocks, nb, buf, 0),
				 0);
		for (unsigned int i = 0; i < gc->n; i++) {
			if (t.count[i].reads || t.count[i].submits != 1)
				t_fail_geo(gc, 0,
					   "full-row batch read a member or took several submits");
			/* one request per chunk written: coalesced */
			if (t.count[i].writes != rows)
				t_fail_geo(gc, 0,
					   "full-row batch not coalesced to one request per chunk");
		}
		t_stop(&t);
		free(buf);
		t_free(&t);
	}
}

/* Every single (RAID4/5) and double (RAID6) member loss reads back exactly. */
static void test_stripe_degraded_every_loss(void **state)
{
	(void)state;
	for (unsigned int gi = 0; gi < NGEO; gi++) {
		const struct geo_case *gc = &geos[gi];
		struct tarr t;
		struct raid_info info;
		uint64_t seed = 3000 + gi;
		uint8_t *ref;

		t_make(&t, gc, MEMBER_BLOCKS, RAID_RESYNC_FULL, 0, NULL);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		ref = calloc(info.array_blocks, JG_BLOCK_SIZE);
		t_random_io(&t, ref, info.array_blocks, seed, 30, gc);
		t_stop(&t);
		for (unsigned int x = 0; x < gc->n; x++) {
			for (unsigned int y = x; y < gc->n; y++) {
				uint32_t lost = (1u << x) | (1u << y);
				uint8_t *img[RAID_MAX_MEMBERS];

				if (gc->level != 6 && x != y)
					continue;
				for (unsigned int i = 0; i < gc->n; i++)
					img[i] = t_member_image(&t, i);
				if (t_assemble_mask(&t, ~lost, NULL))
					t_fail_geo(gc, seed, "degraded assembly refused");
				raid_info_get(t.a, &info);
				if (!info.degraded)
					t_fail_geo(gc, seed, "not degraded");
				t_check_all(&t, ref, info.array_blocks, gc, seed);
				/* abandon: the loss is only for this round, leave members as they
				 * were */
				raid_abandon(t.a);
				t.a = NULL;
				for (unsigned int i = 0; i < gc->n; i++) {
					assert_int_equal(blk_rw(t.mem[i], BLK_OP_WRITE, 0,
								(uint32_t)t.member_blocks, img[i],
								0),
							 0);
					free(img[i]);
				}
			}
		}
		/* writes while degraded (the last roles lost), then read with everything back? no:
		 * the lost members are stale now; read degraded */
		{
			uint32_t lost = gc->level == 6 ? 3u : 1u << (gc->n - 1);

			assert_int_equal(t_assemble_mask(&t, ~lost, NULL), 0);
			t_random_io(&t, ref, info.array_blocks, seed + 1, 30, gc);
			t_check_all(&t, ref, info.array_blocks, gc, seed);
			t_stop(&t);
			assert_int_equal(t_assemble_mask(&t, ~lost, NULL), 0);
			t_check_all(&t, ref, info.array_blocks, gc, seed);
			t_stop(&t);
			/* the stale members are refused */
			if (t_assemble_mask(&t, ~0u, NULL) != -EUCLEAN)
				t_fail_geo(gc, seed, "stale member accepted");
		}
		free(ref);
		t_free(&t);
	}
}

struct t_thread {
	struct tarr *t;
	unsigned int id, nthreads;
	uint64_t nblk;
	uint8_t *ref;
	int rc;
};

/* Thread id owns the blocks b with (b / 2) % nthreads == id: rows are shared. */
static void *t_writer(void *arg)
{
	struct t_thread *th = arg;
	uint64_t s = 77 + th->id;
	uint8_t *buf = jg_alloc_blocks(2);

	for (int i = 0; i < 200 && !th->rc; i++) {
		uint64_t pair = t_rand(&s) % (th->nblk / 2 / th->nthreads);
		uint64_t b = (pair * th->nthreads + th->id) * 2;

		t_fill(buf, 2, t_rand(&s));
		th->rc = t_io(th->t, BLK_OP_WRITE, b, 2, buf, 0);
		memcpy(th->ref + b * JG_BLOCK_SIZE, buf, 2 * JG_BLOCK_SIZE);
	}
	free(buf);
	return NULL;
}

static void test_stripe_concurrent_writers(void **state)
{
	static const struct geo_case *const cg = geo_r5_r6_chunk8;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_r5_r6_chunk8); gi++) {
		struct tarr t;
		struct raid_info info;
		struct t_thread th[4];
		pthread_t tid[4];
		uint8_t *ref;

		t_make(&t, &cg[gi], 128, RAID_RESYNC_BITMAP, 64, NULL);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		ref = calloc(info.array_blocks, JG_BLOCK_SIZE);
		for (unsigned int i = 0; i < 4; i++) {
			th[i] = (struct t_thread){
			    .t = &t, .id = i, .nthreads = 4, .nblk = info.array_blocks, .ref = ref};
			pthread_create(&tid[i], NULL, t_writer, &th[i]);
		}
		for (unsigned int i = 0; i < 4; i++) {
			pthread_join(tid[i], NULL);
			assert_int_equal(th[i].rc, 0);
		}
		t_check_all(&t, ref, info.array_blocks, &cg[gi], 77);
		if (raid_scrub(t.a, false, NULL, NULL, NULL) != 0)
			t_fail_geo(&cg[gi], 77, "concurrent writers left parity mismatches");
		t_stop(&t);
		free(ref);
		t_free(&t);
	}
}

/* A member dies in the middle: the array goes on degraded and records it. */
static void test_stripe_member_dies(void **state)
{
	static const struct geo_case *const cg = geo_each_level;

	(void)state;
	for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
		const struct geo_case *gc = &cg[gi];
		struct raid_fault_cfg fc = {.seed = 1};
		struct tarr t;
		struct raid_info info;
		uint64_t seed = 4000 + gi;
		unsigned int victim = 1;
		uint8_t *ref, *sb = jg_alloc_blocks(1);

		t_make(&t, gc, MEMBER_BLOCKS, RAID_RESYNC_BITMAP, 32, &fc);
		t_assemble(&t);
		raid_info_get(t.a, &info);
		ref = calloc(info.array_blocks, JG_BLOCK_SIZE);
		t_random_io(&t, ref, info.array_blocks, seed, 20, gc);
		assert_int_equal(raid_dev_fault_fail_all(t.top[victim]), 0);
		t_random_io(&t, ref, info.array_blocks, seed + 1, 30, gc);
		t_check_all(&t, ref, info.array_blocks, gc, seed);
		raid_info_get(t.a, &info);
		if (!info.degraded || !info.members[victim].failed)
			t_fail_geo(gc, seed, "dead member not marked failed");
		/* the others' superblocks record the failure */
		assert_int_equal(blk_rw(t.mem[0], BLK_OP_READ, 0, 1, sb, 0), 0);
		if (!(jg_le32(((struct raid_sb *)sb)->failed_mask) & (1u << victim)))
			t_fail_geo(gc, seed, "failed_mask not written");
		t_stop(&t);
		/*
		 * given again, the dead member (no superblock copy readable) is left
		 * out (assemble.c (S12)): the rest assembles degraded and reads right;
		 * and so without it
		 */
		if (t_assemble_mask(&t, ~0u, NULL))
			t_fail_geo(gc, seed, "array refused with its dead member given");
		raid_info_get(t.a, &info);
		if (!info.degraded || info.members[victim].present)
			t_fail_geo(gc, seed, "dead member accepted back");
		t_check_all(&t, ref, info.array_blocks, gc, seed);
		t_stop(&t);
		assert_int_equal(t_assemble_mask(&t, ~(1u << victim), NULL), 0);
		t_check_all(&t, ref, info.array_blocks, gc, seed);
		t_stop(&t);
		free(ref);
		free(sb);
		t_free(&t);
	}
}

/* Writes to member @role's data area fail (with the domain's write_errno). */
static void t_fail_data_writes(struct tarr *t, unsigned int role)
{
	struct raid_geo g;

	t_geo(t, &g);
	for (uint64_t b = g.data_offset; b < t->member_blocks; b++)
		assert_int_equal(raid_dev_fault_fail_block(t->top[role], b, false, true), 0);
}

static const int write_errs[] = {-ENOSPC, -EDQUOT};

/*
 * A member write failing with -ENOSPC or -EDQUOT (a sparse member file on a full
 * filesystem) fails the member as -EIO does (MD's rule): the write succeeds
 * degraded and the data reads back right without that member after a restart.
 */
static void test_stripe_write_error_fails_member(void **state)
{
	static const struct geo_case *const cg = geo_each_level;

	(void)state;
	for (unsigned int ei = 0; ei < 2; ei++) {
		for (unsigned int gi = 0; gi < GEO_N(geo_each_level); gi++) {
			const struct geo_case *gc = &cg[gi];
			struct raid_fault_cfg fc = {.seed = 1, .write_errno = write_errs[ei]};
			struct tarr t;
			struct raid_info info;
			uint64_t seed = 6000 + 10 * ei + gi;
			unsigned int victim = 1;
			uint8_t *ref;

			t_make(&t, gc, MEMBER_BLOCKS, RAID_RESYNC_BITMAP, 32, &fc);
			t_assemble(&t);
			raid_info_get(t.a, &info);
			ref = calloc(info.array_blocks, JG_BLOCK_SIZE);
			t_random_io(&t, ref, info.array_blocks, seed, 10, gc);
			t_fail_data_writes(&t, victim);
			t_random_io(&t, ref, info.array_blocks, seed + 1, 30, gc);
			t_check_all(&t, ref, info.array_blocks, gc, seed);
			raid_info_get(t.a, &info);
			if (!info.members[victim].failed)
				t_fail_geo(gc, seed, "member whose writes fail not marked failed");
			t_stop(&t);
			assert_int_equal(t_assemble_mask(&t, ~(1u << victim), NULL), 0);
			t_check_all(&t, ref, info.array_blocks, gc, seed);
			t_stop(&t);
			free(ref);
			t_free(&t);
		}
	}
}

/*
 * A member write failing when the array cannot lose that member (already
 * degraded) fails upward, and the rows stay recorded dirty: the bits are not
 * cleared at a flush nor at stop, and the array is not marked clean -- also for
 * a BLK_FS_RAIDSYNC write under the journal policy and with no bitmap at all.
 */
static void test_stripe_write_error_keeps_rows_dirty(void **state)
{
	static const struct geo_case *const cg = geo_policies;
	static const enum raid_resync_policy pols[] = {RAID_RESYNC_BITMAP, RAID_RESYNC_JOURNAL,
						       RAID_RESYNC_FULL};

	(void)state;
	t_default_knobs.bitmap_clear_now = true;
	for (unsigned int ei = 0; ei < 2; ei++) {
		for (unsigned int gi = 0; gi < GEO_N(geo_policies); gi++) {
			for (unsigned int pi = 0; pi < 3; pi++) {
				const struct geo_case *gc = &cg[gi];
				struct raid_fault_cfg fc = {.seed = 1, .write_errno = write_errs[ei]};
				struct raid_assemble_cfg ro = {.readonly = true};
				bool bitmap = pols[pi] != RAID_RESYNC_FULL;
				uint32_t mask = gc->level == 6 ? ~3u : ~1u; /* no redundancy left */
				uint64_t seed = 7000 + 100 * ei + 10 * gi + pi;
				struct raid_info info;
				struct tarr t;
				uint8_t *buf;
				int rc;

				t_make(&t, gc, MEMBER_BLOCKS, pols[pi], 32, &fc);
				assert_int_equal(t_assemble_mask(&t, mask, NULL), 0);
				raid_info_get(t.a, &info);
				buf = jg_alloc_blocks(info.array_blocks);
				t_fill(buf, info.array_blocks, seed);
				t_fail_data_writes(&t, gc->n - 1);
				rc = t_io(&t, BLK_OP_WRITE, 0, (uint32_t)info.array_blocks, buf,
					  BLK_FS_RAIDSYNC);
				if (rc >= 0)
					t_fail_geo(gc, seed, "write with no redundancy left succeeded");
				/* two flushes: a bit written before the first may clear at the second (B2) */
				assert_int_equal(blk_flush(t.dev), 0);
				assert_int_equal(blk_flush(t.dev), 0);
				raid_info_get(t.a, &info);
				if (bitmap && !info.bitmap_dirty_regions)
					t_fail_geo(gc, seed, "failed write left no dirty bitmap region");
				t_stop(&t);
				assert_int_equal(t_assemble_mask(&t, mask, &ro), 0);
				raid_info_get(t.a, &info);
				if (!info.was_dirty)
					t_fail_geo(gc, seed, "array with a failed write marked clean");
				if (bitmap && !info.bitmap_dirty_regions)
					t_fail_geo(gc, seed, "failed write's bitmap bits cleared at stop");
				t_stop(&t);
				free(buf);
				t_free(&t);
			}
		}
	}
	t_default_knobs.bitmap_clear_now = false;
}

/* Requests past the end or empty are refused; flush with FUA and PREFLUSH work. */
static void test_stripe_bad_requests_and_flush(void **state)
{
	static const struct geo_case gc = {5, 4, 4};
	struct tarr t;
	struct raid_info info;
	struct blk_stats st;
	uint8_t *buf = jg_zalloc_blocks(2);

	(void)state;
	t_make(&t, &gc, MEMBER_BLOCKS, RAID_RESYNC_FULL, 0, NULL);
	t_assemble(&t);
	raid_info_get(t.a, &info);
	assert_int_equal(t_io(&t, BLK_OP_READ, info.array_blocks - 1, 2, buf, 0), -EINVAL);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 0, 0, buf, 0), -EINVAL);
	t_count_reset(&t);
	assert_int_equal(t_io(&t, BLK_OP_WRITE, 5, 1, buf, BLK_FUA | BLK_PREFLUSH), 0);
	assert_int_equal(blk_flush(t.dev), 0);
	for (unsigned int i = 0; i < gc.n; i++)
		assert_true(t.count[i].flushes >= 1);
	assert_int_equal(blk_ctl(t.dev, BLK_CTL_GET_STATS, &st), 0);
	assert_int_equal(st.writes, 1);
	assert_int_equal(st.write_blocks, 1);
	assert_true(st.flushes >= 2);
	assert_int_equal(blk_ctl(t.dev, 999, NULL), -ENOTTY);
	t_stop(&t);
	free(buf);
	t_free(&t);
}

/* Real io_uring members over files: the batch path with blk_submit_multi. */
static void test_stripe_uring_members(void **state)
{
	static const struct geo_case gc = {6, 5, 4};
	struct raid_create_cfg cfg = { .assume_clean = true, /* zeroed new members */.level = 6,
				      .chunk_blocks = 4,
				      .resync = RAID_RESYNC_BITMAP,
				      .bitmap_region_blocks = 64};
	struct blk_dev *m[5];
	struct raid_array *a;
	struct raid_info info;
	struct tarr t = {.n = 5};
	char path[5][64];
	uint8_t *ref;
	int rc = 0;

	(void)state;
	for (unsigned int i = 0; i < 5; i++) {
		snprintf(path[i], sizeof(path[i]), "/tmp/jgrfs-raid-test-%d-%u", (int)getpid(), i);
		rc = raid_dev_uring_open(path[i], 512, &m[i]);
		if (rc) {
			for (unsigned int j = 0; j < i; j++)
				blk_close(m[j]);
			unlink(path[i]);
			skip(); /* no O_DIRECT on /tmp */
		}
		unlink(path[i]); /* the open file lives on; nothing left behind on failure */
	}
	assert_int_equal(raid_create(m, 5, &cfg, false), 0);
	assert_int_equal(t_raid_assemble(m, 5, NULL, &a), 0);
	t.a = a;
	t.dev = raid_array_dev(a);
	raid_info_get(a, &info);
	ref = calloc(info.array_blocks, JG_BLOCK_SIZE);
	t_random_io(&t, ref, info.array_blocks, 55, 40, &gc);
	t_check_all(&t, ref, info.array_blocks, &gc, 55);
	assert_int_equal(raid_scrub(a, false, NULL, NULL, NULL), 0);
	assert_int_equal(raid_stop(a), 0);
	free(ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stripe_random_rw),
	    cmocka_unit_test(test_stripe_rmw_rcw_identical),
	    cmocka_unit_test(test_stripe_scratch_grows_and_is_reused),
	    cmocka_unit_test(test_stripe_full_rows_zero_read),
	    cmocka_unit_test(test_stripe_degraded_every_loss),
	    cmocka_unit_test(test_stripe_concurrent_writers),
	    cmocka_unit_test(test_stripe_member_dies),
	    cmocka_unit_test(test_stripe_write_error_fails_member),
	    cmocka_unit_test(test_stripe_write_error_keeps_rows_dirty),
	    cmocka_unit_test(test_stripe_bad_requests_and_flush),
	    cmocka_unit_test(test_stripe_uring_members),
	};

	jg_log_set_level(JG_LOG_WARN - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
