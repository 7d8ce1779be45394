// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_layout.c - address mapping against a plain reference: the
 * reference walks each row chunk by chunk the way MD draws its layouts (parity
 * member moving one to the left every row, data starting right after the parity,
 * Q just after P for RAID6; RAID4 parity on the last member).
 */
#include "raid_test.h"

/* Reference: the member of each position of row r, by walking the row. */
static void t_ref_row(unsigned int level, unsigned int n, uint64_t r, unsigned int *member_of_pos)
{
	unsigned int npar = level == 6 ? 2 : 1, ndata = n - npar, p, m;

	if (level == 4) {
		for (p = 0; p < ndata; p++)
			member_of_pos[p] = p;
		member_of_pos[ndata] = n - 1;
		return;
	}
	/* parity walks right to left: row 0 on the last member */
	m = n - 1;
	for (uint64_t i = 0; i < r % n; i++)
		m = m == 0 ? n - 1 : m - 1;
	member_of_pos[ndata] = m;
	if (npar == 2) {
		m = m + 1 == n ? 0 : m + 1;
		member_of_pos[ndata + 1] = m;
	}
	for (p = 0; p < ndata; p++) {
		m = m + 1 == n ? 0 : m + 1;
		member_of_pos[p] = m;
	}
}

static void test_layout_against_reference(void **state)
{
	static const uint32_t chunks[] = {1, 2, 16, 128};

	(void)state;
	for (unsigned int level = 4; level <= 6; level++) {
		for (unsigned int n = 3; n <= 8; n++) {
			for (unsigned int ci = 0; ci < 4; ci++) {
				struct raid_geo g;
				uint64_t off = 2 * chunks[ci];

				assert_int_equal(raid_geo_init(&g, level, n, chunks[ci], off,
							       40 * chunks[ci] + chunks[ci] / 2),
						 0);
				assert_int_equal(g.rows, 40);
				assert_int_equal(g.array_blocks, 40ull * chunks[ci] * g.ndata);
				for (uint64_t r = 0; r < g.rows; r++) {
					unsigned int ref[RAID_MAX_MEMBERS + 2];
					uint32_t seen = 0;

					t_ref_row(level, n, r, ref);
					for (unsigned int p = 0; p < n; p++) {
						unsigned int m = raid_layout_member(&g, r, p);

						if (m != ref[p] || raid_layout_pos(&g, r, m) != p)
							fail_msg(
							    "level=%u members=%u chunk=%u row=%llu pos=%u: member %u, reference %u",
							    level, n, chunks[ci],
							    (unsigned long long)r, p, m, ref[p]);
						seen |= 1u << m;
					}
					assert_int_equal(seen, raid_role_mask_all(n));
				}
				/* every array block: reference address */
				for (uint64_t b = 0; b < g.array_blocks; b += 1 + b % 7) {
					unsigned int role, ref[RAID_MAX_MEMBERS + 2];
					uint64_t mb, row = b / (g.ndata * chunks[ci]);
					uint64_t in = b % (g.ndata * chunks[ci]);

					raid_layout_map(&g, b, &role, &mb);
					t_ref_row(level, n, row, ref);
					if (role != ref[in / chunks[ci]] ||
					    mb != off + row * chunks[ci] + in % chunks[ci])
						fail_msg(
						    "level=%u members=%u chunk=%u block=%llu maps to role %u block %llu",
						    level, n, chunks[ci], (unsigned long long)b,
						    role, (unsigned long long)mb);
				}
			}
		}
	}
}

static void test_layout_md_examples(void **state)
{
	struct raid_geo g;

	(void)state;
	/* MD left-symmetric RAID5 on 4 disks: row 0 D0 D1 D2 P, row 1 D1? no: D0 on disk 3 */
	assert_int_equal(raid_geo_init(&g, 5, 4, 16, 16, 1600), 0);
	assert_int_equal(raid_layout_member(&g, 0, RAID_POS_P(&g)), 3);
	assert_int_equal(raid_layout_member(&g, 0, 0), 0);
	assert_int_equal(raid_layout_member(&g, 1, RAID_POS_P(&g)), 2);
	assert_int_equal(raid_layout_member(&g, 1, 0), 3);
	assert_int_equal(raid_layout_member(&g, 1, 1), 0);
	/* RAID6 on 5: row 0 D0 D1 D2 P Q? MD: P on 4, Q on 0, data 1 2 3 */
	assert_int_equal(raid_geo_init(&g, 6, 5, 16, 16, 1600), 0);
	assert_int_equal(raid_layout_member(&g, 0, RAID_POS_P(&g)), 4);
	assert_int_equal(raid_layout_member(&g, 0, RAID_POS_Q(&g)), 0);
	assert_int_equal(raid_layout_member(&g, 0, 0), 1);
	/* bad geometries */
	assert_int_equal(raid_geo_init(&g, 3, 4, 16, 16, 1600), -EINVAL);
	assert_int_equal(raid_geo_init(&g, 5, 4, 24, 16, 1600), -EINVAL);
	assert_int_equal(raid_geo_init(&g, 5, 33, 16, 16, 1600), -EINVAL);
	assert_int_equal(raid_geo_init(&g, 6, 2, 16, 16, 1600), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout_against_reference),
	    cmocka_unit_test(test_layout_md_examples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
