/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/raid/raid_geo.h - the geometries the RAID unit tests loop over, in
 * one place: (RAID level, members, chunk in blocks). Each set is named for what
 * it covers and lists the tests that use it; a test that needs its own mix has
 * a set here, not a table in its file, so what each test covers is read here.
 *
 * Order matters: test_sync's crash test takes every second entry of its set,
 * and test_scrub takes entry 1 ({5, 4, 4}) alone in one test. Adding a
 * geometry to a set costs that test's time in proportion (raid_test_super and
 * raid_test_resync run the longest, about 3 minutes each on a loaded 2-core
 * machine under ASan).
 */
#ifndef JGRFS_RAID_GEO_H
#define JGRFS_RAID_GEO_H

#include <stdint.h>

#include "jgrfs/raid.h" /* RAID_MAX_MEMBERS */

struct geo_case {
	unsigned int level, n;
	uint32_t chunk;
};

#define GEO_N(set) (sizeof(set) / sizeof((set)[0]))

/* Every level from 3 members to 8, chunks 1 to 16 blocks (test_stripe). */
static const struct geo_case geo_stripe[] = {
    {5, 3, 1}, {5, 4, 4}, {5, 5, 16}, {5, 8, 2}, {4, 3, 2}, {4, 5, 8},
    {6, 3, 2}, {6, 4, 4}, {6, 5, 16}, {6, 6, 1}, {6, 8, 8},
};

/* Chunks up to 16 blocks, each level (test_rcache). */
static const struct geo_case geo_rcache[] = {
    {5, 4, 16}, {5, 3, 4}, {5, 5, 1}, {6, 4, 16}, {6, 6, 4}, {4, 4, 8},
};

/* Odd and even widths of each level, chunks 2 and 4 (test_super). */
static const struct geo_case geo_super[] = {
    {5, 3, 2}, {5, 5, 4}, {4, 4, 2}, {6, 4, 2}, {6, 6, 4},
};

/* Each level at its smallest and wider, chunks 1 to 4 (test_resync). */
static const struct geo_case geo_resync[] = {
    {5, 3, 2}, {5, 4, 4}, {5, 6, 1}, {4, 4, 2}, {6, 4, 2}, {6, 6, 4},
};

/* As test_resync's, with RAID6 of 5 and 8 members (test_rebuild). */
static const struct geo_case geo_rebuild[] = {
    {5, 3, 2}, {5, 4, 4}, {5, 6, 1}, {4, 4, 2}, {6, 4, 2}, {6, 5, 4}, {6, 8, 2},
};

/* Chunks of 1 and 2 blocks, for the rebuild cut and resumed (test_rebuild). */
static const struct geo_case geo_rebuild_resume[] = {{5, 3, 1}, {5, 4, 2}, {6, 5, 1}};

/* Each level, RAID6 up to 7 members (test_bitmap). */
static const struct geo_case geo_bitmap[] = {
    {5, 3, 2}, {5, 5, 4}, {4, 4, 1}, {6, 4, 2}, {6, 7, 4},
};

/* The initial sync; its crash test takes entries 0, 2 and 4 (test_sync). */
static const struct geo_case geo_sync[] = {
    {5, 3, 2}, {5, 4, 4}, {5, 6, 1}, {4, 4, 2}, {6, 5, 2}, {6, 6, 1},
};

/* The online scrub; entry 1 alone where one geometry is enough (test_scrub). */
static const struct geo_case geo_scrub[] = {
    {5, 3, 2},
    {5, 4, 4},
    {6, 4, 2},
    {6, 6, 1},
};

/* Each level at the most members an array has (test_maxmembers). */
static const struct geo_case geo_max[] = {
    {4, RAID_MAX_MEMBERS, 1}, {5, RAID_MAX_MEMBERS, 2}, {6, RAID_MAX_MEMBERS, 1},
};

/* One of each level, small (test_event, test_spare, test_readerr, test_stripe twice). */
#define GEO_EACH_LEVEL {5, 4, 4}, {6, 5, 2}, {4, 3, 2}
static const struct geo_case geo_each_level[] = {GEO_EACH_LEVEL};

/* Read errors: one of each level, and a 16-block chunk (test_readerr). */
static const struct geo_case geo_readerr[] = {GEO_EACH_LEVEL, {5, 3, 16}};

/* Chunk 1, RAID5 and RAID6: a rebuild over many rows (test_event). */
static const struct geo_case geo_chunk1[] = {{5, 4, 1}, {6, 5, 1}};

/* The smallest RAID5 and RAID6, chunk 2: torn superblock writes (test_super). */
static const struct geo_case geo_r5_r6[] = {{5, 3, 2}, {6, 4, 2}};

/* Chunk 16 (RAID5) and 8 (RAID6): rows of many blocks (test_stripe). */
static const struct geo_case geo_big_chunk[] = {{5, 4, 16}, {6, 5, 8}};

/* RAID5 with chunk 16 and RAID6 with chunk 4 (test_rcache, twice). */
static const struct geo_case geo_rcache_pair[] = {{5, 4, 16}, {6, 5, 4}};

/* RAID5 and RAID6 small, and a RAID5 of 3 with chunk 8 (test_stripe). */
static const struct geo_case geo_r5_r6_chunk8[] = {{5, 4, 4}, {6, 5, 2}, {5, 3, 8}};

/* Small RAID5s and a RAID6, under each resync policy (test_stripe). */
static const struct geo_case geo_policies[] = {{5, 3, 2}, {5, 4, 4}, {6, 4, 2}};

/* RAID5 chunk 2 and RAID6 chunk 1 (test_resync). */
static const struct geo_case geo_r5_r6_small_chunk[] = {{5, 4, 2}, {6, 5, 1}};

#endif /* JGRFS_RAID_GEO_H */
