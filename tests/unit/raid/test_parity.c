// SPDX-License-Identifier: MIT
/*
 * tests/unit/raid/test_parity.c - ISA-L parity against a byte-wise reference
 * (XOR; GF(2^8) with polynomial 0x11d by shift-and-add), and reconstruction of
 * every one (P only) and two (P+Q) lost positions.
 */
#include "raid_test.h"

#define LEN 4096

static uint8_t t_gf_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = t_gf_mul2(a);
		b >>= 1;
	}
	return r;
}

static void t_ref_parity(unsigned int ndata, uint8_t **d, uint8_t *p, uint8_t *q)
{
	for (size_t i = 0; i < LEN; i++) {
		uint8_t pp = 0, qq = 0, c = 1;

		for (unsigned int k = 0; k < ndata; k++) {
			pp ^= d[k][i];
			qq ^= t_gf_mul(c, d[k][i]);
			c = t_gf_mul2(c);
		}
		p[i] = pp;
		if (q)
			q[i] = qq;
	}
}

static void test_parity_against_reference(void **state)
{
	(void)state;
	for (unsigned int npar = 1; npar <= 2; npar++) {
		for (unsigned int ndata = 1; ndata <= 30; ndata++) {
			uint8_t *d[32], *p = jg_alloc_blocks(1), *q = jg_alloc_blocks(1);
			uint8_t *rp = jg_alloc_blocks(1), *rq = jg_alloc_blocks(1);

			for (unsigned int k = 0; k < ndata; k++) {
				d[k] = jg_alloc_blocks(1);
				t_fill(d[k], 1, 100 * ndata + k);
			}
			raid_parity_gen(ndata, npar, LEN, d, p, npar == 2 ? q : NULL);
			t_ref_parity(ndata, d, rp, npar == 2 ? rq : NULL);
			if (memcmp(p, rp, LEN) || (npar == 2 && memcmp(q, rq, LEN)))
				fail_msg("parity differs from reference: ndata=%u npar=%u", ndata,
					 npar);
			/* Q update for one changed data vector */
			if (npar == 2) {
				uint8_t *delta = jg_alloc_blocks(1);
				unsigned int k = ndata / 2;

				t_fill(delta, 1, 999 + ndata);
				raid_parity_q_mad(k, LEN, q, delta);
				raid_parity_xor_into(LEN, d[k], delta);
				t_ref_parity(ndata, d, rp, rq);
				if (memcmp(q, rq, LEN))
					fail_msg("Q update differs: ndata=%u", ndata);
				free(delta);
			}
			for (unsigned int k = 0; k < ndata; k++)
				free(d[k]);
			free(p);
			free(q);
			free(rp);
			free(rq);
		}
	}
}

static void test_parity_reconstruct_every_loss(void **state)
{
	(void)state;
	for (unsigned int npar = 1; npar <= 2; npar++) {
		for (unsigned int ndata = 1; ndata <= 10; ndata++) {
			unsigned int npos = ndata + npar;
			uint8_t *v[34], *orig[34];

			for (unsigned int k = 0; k < npos; k++) {
				v[k] = jg_alloc_blocks(1);
				orig[k] = jg_alloc_blocks(1);
				if (k < ndata)
					t_fill(v[k], 1, 7 * ndata + k);
			}
			t_ref_parity(ndata, v, v[ndata], npar == 2 ? v[ndata + 1] : NULL);
			for (unsigned int k = 0; k < npos; k++)
				memcpy(orig[k], v[k], LEN);
			for (unsigned int x = 0; x < npos; x++) {
				for (unsigned int y = x; y < npos; y++) {
					uint32_t lost = (1u << x) | (1u << y);

					if (npar == 1 && x != y)
						continue;
					memset(v[x], 0x5a, LEN);
					memset(v[y], 0xa5, LEN);
					assert_int_equal(
					    raid_parity_reconstruct(ndata, npar, LEN, v, lost), 0);
					for (unsigned int k = 0; k < npos; k++)
						if (memcmp(v[k], orig[k], LEN))
							fail_msg(
							    "reconstruct ndata=%u npar=%u lost=%u,%u: position %u wrong",
							    ndata, npar, x, y, k);
				}
			}
			if (npos > npar + 1)
				assert_int_equal(raid_parity_reconstruct(ndata, npar, LEN, v,
									 (1u << (npar + 1)) - 1),
						 -EINVAL);
			for (unsigned int k = 0; k < npos; k++) {
				free(v[k]);
				free(orig[k]);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parity_against_reference),
	    cmocka_unit_test(test_parity_reconstruct_every_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
