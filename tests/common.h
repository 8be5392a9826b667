/* common.h -- what several runtime tests ask of the counters. */
#ifndef GBT_COMMON_H
#define GBT_COMMON_H

#include "gbtest.h"
#include "giveback.h"

static inline gb_stats gbt_stats(void)
{
    gb_stats s;
    gb_stats_get(&s);
    return s;
}

/* Every "now" counter is back to zero (map_budget is a setting; the block
 * cache, bounded, is the one thing kept until a sweep). Tests that made
 * coroutines sweep first: freed stacks are pooled until a sweep too. */
static inline void gbt_check_all_given_back(void)
{
    gb_stats s = gbt_stats();
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.bytes_heap, 0);
    CHECK_EQ(s.bytes_meta, 0);
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.regions_live, 0);
    CHECK_EQ(s.regions_retired, 0);
    CHECK_EQ(s.bytes_retired, 0);
    CHECK_EQ(s.blocks_live, 0);
    CHECK_EQ(s.arenas_live, 0);
    CHECK_EQ(s.unmaps_pending, 0);
    CHECK_EQ(s.coros_live, 0);
    CHECK_EQ(s.stacks_pooled, 0);
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.bytes_small, 0);
    CHECK_EQ(s.bytes_small_dirty, 0);
}

#endif
