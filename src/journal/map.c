// SPDX-License-Identifier: MIT
/*
 * src/journal/map.c - a u64 -> u64 hash map: the journal's block map (blkno to
 * copies), per-transaction block sets and recovery's revoke and replay tables.
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones), so a map that churns (blocks dirtied and written home all day)
 * keeps short probes. Not thread-safe: callers hold the lock of the owner.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

void jnl_map_init(struct jnl_map *m)
{
	memset(m, 0, sizeof(*m));
}

void jnl_map_free(struct jnl_map *m)
{
	free(m->keys);
	free(m->vals);
	jnl_map_init(m);
}

static size_t jnl_map_hash(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

uint64_t *jnl_map_find(const struct jnl_map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = jnl_map_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return &m->vals[i];
		if (m->keys[i] == JNL_MAP_EMPTY)
			return NULL;
	}
}

static int jnl_map_grow(struct jnl_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	uint64_t *nk = malloc(ncap * sizeof(*nk));
	uint64_t *nv = malloc(ncap * sizeof(*nv));

	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	memset(nk, 0xff, ncap * sizeof(*nk));
	for (size_t i = 0; i < m->cap; i++) {
		size_t k;

		if (m->keys[i] == JNL_MAP_EMPTY)
			continue;
		for (k = jnl_map_hash(m->keys[i], ncap); nk[k] != JNL_MAP_EMPTY; k = (k + 1) & (ncap - 1))
			;
		nk[k] = m->keys[i];
		nv[k] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

int jnl_map_get(struct jnl_map *m, uint64_t key, uint64_t **val_out, bool *is_new)
{
	size_t i;
	int rc;

	if (key == JNL_MAP_EMPTY)
		return -EINVAL;
	if ((m->n + 1) * 4 > m->cap * 3) {	/* load factor at most 3/4 */
		rc = jnl_map_grow(m);
		if (rc)
			return rc;
	}
	for (i = jnl_map_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			if (is_new)
				*is_new = false;
			*val_out = &m->vals[i];
			return 0;
		}
		if (m->keys[i] == JNL_MAP_EMPTY)
			break;
	}
	m->keys[i] = key;
	m->vals[i] = 0;
	m->n++;
	if (is_new)
		*is_new = true;
	*val_out = &m->vals[i];
	return 0;
}

bool jnl_map_del(struct jnl_map *m, uint64_t key)
{
	size_t i, j, mask = m->cap - 1;

	if (!m->cap)
		return false;
	for (i = jnl_map_hash(key, m->cap);; i = (i + 1) & mask) {
		if (m->keys[i] == JNL_MAP_EMPTY)
			return false;
		if (m->keys[i] == key)
			break;
	}
	/* backward shift: move later entries of the probe run into the hole */
	for (j = (i + 1) & mask; m->keys[j] != JNL_MAP_EMPTY; j = (j + 1) & mask) {
		size_t home = jnl_map_hash(m->keys[j], m->cap);

		/* entry j may move to i when its home is not in (i, j] cyclically */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = JNL_MAP_EMPTY;
	m->n--;
	return true;
}
