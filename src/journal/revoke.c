// SPDX-License-Identifier: MIT
/*
 * src/journal/revoke.c - revoke blocks: written at commit for metadata blocks
 * freed in the transaction; at recovery a revoke record of transaction R for
 * block B stops every logged copy of B from transactions up to and including R
 * from being replayed (jbd2 revoke.c). A copy logged again after the revoke, in
 * the same transaction, cancels the revoke (handle.c).
 */
#include <errno.h>
#include <string.h>

#include "jnl_i.h"

void jnl_revoke_fill(struct jnl *j, uint8_t *img, uint64_t pos, uint64_t tid,
		     const uint64_t *blknos, size_t n)
{
	size_t i = 0;

	while (i < n) {
		struct jnl_list_hdr *h = (struct jnl_list_hdr *)img;
		le64 *e = (le64 *)(img + sizeof(*h));
		size_t cnt = n - i;

		if (cnt > JNL_LIST_ENTRIES)
			cnt = JNL_LIST_ENTRIES;
		memset(img, 0, JG_BLOCK_SIZE);
		h->count = jg_cpu_to_le32((uint32_t)cnt);
		for (size_t k = 0; k < cnt; k++)
			e[k] = jg_cpu_to_le64(blknos[i++]);
		jg_blk_seal(img, JG_BLOCK_SIZE, JNL_MAGIC_REVOKE, JNL_VERSION, 0, tid,
			    jnl_abs(j, pos), j->seed);
		img += JG_BLOCK_SIZE;
		pos = jnl_next_pos(j, pos, 1);
	}
}

int jnl_revoke_table_note(struct jnl_map *table, uint64_t blkno, uint64_t tid)
{
	uint64_t *v;
	bool is_new;
	int rc = jnl_map_get(table, blkno, &v, &is_new);

	if (!rc && (is_new || jg_seq_after(tid, *v)))
		*v = tid;
	return rc;
}

int jnl_revoke_table_add(struct jnl_map *table, const uint8_t *blk, uint64_t tid,
			 uint64_t dev_blocks)
{
	const struct jnl_list_hdr *h = (const struct jnl_list_hdr *)blk;
	const le64 *e = (const le64 *)(blk + sizeof(*h));
	uint32_t cnt = jg_le32(h->count);
	int rc = 0;

	if (cnt > JNL_LIST_ENTRIES)
		return -EUCLEAN;
	for (uint32_t k = 0; k < cnt && !rc; k++) {
		uint64_t b = jg_le64(e[k]);

		/* no copy has such a home (recovery refuses one): nothing to revoke,
		 * and 2^64-1 is the table's empty key */
		if (b < dev_blocks)
			rc = jnl_revoke_table_note(table, b, tid);
	}
	return rc;
}

bool jnl_revoke_table_test(const struct jnl_map *table, uint64_t blkno, uint64_t tid)
{
	const uint64_t *v = jnl_map_find(table, blkno);

	return v && !jg_seq_after(tid, *v);
}
