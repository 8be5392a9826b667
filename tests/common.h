/* common.h -- what several runtime tests ask of the counters. */
#ifndef GBT_COMMON_H
#define GBT_COMMON_H

#include "gbtest.h"
#include "giveback.h"

#include <stdio.h>
#include <unistd.h>

static inline gb_stats gbt_stats(void)
{
    gb_stats s;
    gb_stats_get(&s);
    return s;
}

/* Every "now" counter is back to zero (map_budget is a setting; the block
 * cache, bounded, is the one thing kept until a sweep). Tests that made
 * coroutines sweep first: freed stacks are pooled until a sweep too. */
#define GBT_ZERO_GB_STAT_NOW(name) CHECK_EQ(s.name, 0);
#define GBT_ZERO_GB_STAT_KEPT(name)
#define GBT_ZERO_GB_STAT_SETTING(name)
#define GBT_ZERO_GB_STAT_SINCE(name)
#define GBT_ZERO(kind, type, name) GBT_ZERO_##kind(name)

/* The address space the process has mapped, in bytes (statm's first
 * field, in pages), or 0 where there is no /proc to read it from. */
static inline size_t gbt_vm_size(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f)
        return 0;
    unsigned long long pages = 0;
    int got = fscanf(f, "%llu", &pages);
    fclose(f);
    return got == 1 ? (size_t)pages * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

/* What the process holds by the OS's reading of what a release drops: the
 * footprint where the OS keeps one (macOS, where pages given back with
 * MADV_FREE_REUSABLE stay in the resident size until the kernel wants
 * them), else the resident size (Linux, where MADV_DONTNEED drops it). */
static inline size_t gbt_held(const gb_resident *r)
{
    return r->footprint ? r->footprint : r->rss;
}

/* The runtime with every block from malloc, so that a block (and an
 * arena) is the size a region asked for, not a mapping's size class:
 * the tests that count a region's bytes to the byte. first_block and
 * block_cap as given, 0 for the default. */
static inline void gbt_init_heap_blocks(size_t first_block, size_t block_cap)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_HEAP;
    o.first_block = first_block;
    o.block_cap = block_cap;
    gb_init(&o);
}

/* The runtime with chunks under a mapping's worth from its slabs, and no
 * block cache, so that a slab given back whole is unmapped at once: the
 * tests of the slabs and of their checker. */
static inline void gbt_init_slabs(void)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.small = GB_SMALL_SLAB;
    o.cache_bytes = GB_CACHE_OFF;
    gb_init(&o);
}

static inline void gbt_check_all_given_back(void)
{
    gb_stats s = gbt_stats();
    GB_STATS_FIELDS(GBT_ZERO)
}

#endif
