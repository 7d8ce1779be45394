// SPDX-License-Identifier: MIT
/*
 * src/raid/parity.c - P and Q with ISA-L, and reconstruction of lost chunks.
 *
 * P = D0 ^ D1 ^ ... ; Q = sum 2^d * Dd over GF(2^8) with polynomial 0x11d (ISA-L
 * pq_gen, the same code as MD's RAID6). ISA-L wants at least two sources for
 * xor_gen/pq_gen; one data chunk (RAID5 on 2 members, RAID6 on 3) is a copy.
 *
 * Reconstruction is generic: the row's generator matrix (identity for data, a row
 * of ones for P, powers of 2 for Q) restricted to ndata surviving positions is
 * inverted with gf_invert_matrix(), and the lost data is ec_encode_data() of the
 * survivors; lost parity is then regenerated. One lost data chunk with P present
 * takes the XOR shortcut.
 */
#include <errno.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/gf_vect_mul.h>
#include <isa-l/raid.h>

#include "raid_i.h"

void raid_parity_xor_into(size_t len, uint8_t *dest, const uint8_t *src)
{
	uint64_t *d = (uint64_t *)dest;
	const uint64_t *s = (const uint64_t *)src;

	for (size_t i = 0; i < len / 8; i++)
		d[i] ^= s[i];
}

void raid_parity_gen(unsigned int ndata, unsigned int npar, size_t len, uint8_t **data, uint8_t *p,
		     uint8_t *q)
{
	void *v[RAID_MAX_MEMBERS + 2];

	if (ndata == 1) {
		memcpy(p, data[0], len);
		if (npar == 2)
			memcpy(q, data[0], len); /* 2^0 * D0 */
		return;
	}
	for (unsigned int i = 0; i < ndata; i++)
		v[i] = data[i];
	v[ndata] = p;
	if (npar == 1) {
		xor_gen((int)ndata + 1, (int)len, v);
	} else {
		v[ndata + 1] = q;
		pq_gen((int)ndata + 2, (int)len, v);
	}
}

void raid_parity_q_mad(unsigned int pos, size_t len, uint8_t *dest, uint8_t *src)
{
	unsigned char tbl[32];
	unsigned char c = 1;

	for (unsigned int i = 0; i < pos; i++)
		c = gf_mul(c, 2);
	gf_vect_mul_init(c, tbl);
	gf_vect_mad((int)len, 1, 0, tbl, src, dest);
}

static uint8_t raid_parity_coef(unsigned int ndata, unsigned int pos, unsigned int col)
{
	uint8_t c = 1;

	if (pos < ndata)
		return pos == col;
	if (pos == ndata)
		return 1;
	for (unsigned int i = 0; i < col; i++)
		c = gf_mul(c, 2);
	return c;
}

int raid_parity_reconstruct(unsigned int ndata, unsigned int npar, size_t len, uint8_t **vec,
			    uint32_t missing)
{
	unsigned int npos = ndata + npar, nlost = 0, lost_data[2], nld = 0;
	unsigned char mat[RAID_MAX_MEMBERS * RAID_MAX_MEMBERS],
	    inv[RAID_MAX_MEMBERS * RAID_MAX_MEMBERS];
	unsigned char coefs[2 * RAID_MAX_MEMBERS], tbls[32 * 2 * RAID_MAX_MEMBERS];
	unsigned char *src[RAID_MAX_MEMBERS], *out[2];
	unsigned int srcpos[RAID_MAX_MEMBERS], ns = 0;

	for (unsigned int p = 0; p < npos; p++) {
		if (!(missing & (1u << p)))
			continue;
		nlost++;
		if (p < ndata) {
			if (nld == 2)
				return -EINVAL;
			lost_data[nld++] = p;
		}
	}
	if (nlost > npar)
		return -EINVAL;
	if (nld == 1 && !(missing & (1u << ndata))) {
		/* D = P ^ the other data */
		uint8_t *d = vec[lost_data[0]];

		memcpy(d, vec[ndata], len);
		for (unsigned int p = 0; p < ndata; p++)
			if (p != lost_data[0])
				raid_parity_xor_into(len, d, vec[p]);
	} else if (nld) {
		/* ndata surviving positions, data first, then P, then Q */
		for (unsigned int p = 0; p < npos && ns < ndata; p++)
			if (!(missing & (1u << p)))
				srcpos[ns++] = p;
		if (ns < ndata)
			return -EINVAL;
		for (unsigned int r = 0; r < ndata; r++)
			for (unsigned int c = 0; c < ndata; c++)
				mat[r * ndata + c] = raid_parity_coef(ndata, srcpos[r], c);
		if (gf_invert_matrix(mat, inv, (int)ndata))
			return -EINVAL;
		for (unsigned int i = 0; i < nld; i++) {
			memcpy(coefs + i * ndata, inv + lost_data[i] * ndata, ndata);
			out[i] = vec[lost_data[i]];
		}
		for (unsigned int r = 0; r < ndata; r++)
			src[r] = vec[srcpos[r]];
		ec_init_tables((int)ndata, (int)nld, coefs, tbls);
		ec_encode_data((int)len, (int)ndata, (int)nld, tbls, src, out);
	}
	/* lost parity from complete data */
	if (missing & (1u << ndata))
		raid_parity_gen(ndata, 1, len, vec, vec[ndata], NULL);
	if (npar == 2 && (missing & (1u << (ndata + 1)))) {
		memset(vec[ndata + 1], 0, len);
		for (unsigned int d = 0; d < ndata; d++)
			raid_parity_q_mad(d, len, vec[ndata + 1], vec[d]);
	}
	return 0;
}
