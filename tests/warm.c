/* warm.c -- a region starts its chain in the block its thread's last
 * region wrote (region.c, alloc_block; region.h, gb__mem.warm).
 *
 * Each test starts with the runtime's own mappings, a 4 KiB first block
 * doubling to a 1 MiB cap and the default cache, and reads which block a
 * region took from its bytes (gb_region_bytes counts its blocks' sizes)
 * and from the address index (the block an allocation lies in).
 */
#include "common.h"
#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)
#define HDR GB__BLOCK_HDR

static void init_map_cached(size_t first_block, size_t cache_bytes)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.first_block = first_block;
    o.block_cap = MIB;
    o.cache_bytes = cache_bytes;
    gb_init(&o);
}

/* The cache bound of 8 MiB (the default), whose eighth is the cap: every
 * warm size is within it. */
static void init_map(size_t first_block)
{
    init_map_cached(first_block, 8 * MIB);
}

/* The block p lies in, by the thread's address index. */
static const gb__block *block_of(const void *p)
{
    const gb__block *b = gb__block_at(&gb__self()->mem, p);
    CHECK(b != NULL);
    return b;
}

/* Allocates `bytes` in pieces of `piece` bytes (a multiple of 16) in the
 * innermost region, writing each; returns the last piece. */
static char *fill(size_t bytes, size_t piece)
{
    char *p = NULL;
    for (size_t done = 0; done < bytes; done += piece)
        memset(p = gb_alloc(piece), 0x5a, piece);
    return p;
}

/* A region's first block, with no warm size: its bytes after one small
 * allocation (the first block's size, or the page where pages are
 * larger). The region leaves the warm size at the first block, which no
 * region takes warm, and the cache is given back after it. */
static size_t first_block_bytes(void)
{
    gb_region *r = gb_enter();
    gb_alloc(16);
    size_t first = gb_region_bytes(r);
    gb_leave(r);
    CHECK(first >= 4 * KIB && first < 512 * KIB);
    /* A slab it emptied, cached, would serve the larger blocks asked for
     * next. */
    gb_sweep();
    return first;
}

/* The thread's warm size, as the last region it freed left it. */
static size_t warm(void)
{
    return gb__self()->mem.warm;
}

/* A region of 200 KiB and then 100 KiB chains a 256 KiB block and a
 * 512 KiB one; the 512 KiB one alone would have held both, and is warm
 * where the cache's bound is 4 MiB or more. */
static const gb__block *chain_two_blocks_warm(size_t want)
{
    gb_region *r = gb_enter();
    memset(gb_alloc(200 * KIB), 0x5a, 200 * KIB);
    char *last = gb_alloc(100 * KIB);
    memset(last, 0x5a, 100 * KIB);
    const gb__block *b = block_of(last);
    CHECK_EQ(b->chunk.size, 512 * KIB);
    CHECK_EQ(gb_region_bytes(r), 256 * KIB + 512 * KIB);
    gb_leave(r);
    CHECK_EQ(warm(), want);
    return b;
}

static const gb__block *chain_two_blocks(void)
{
    return chain_two_blocks_warm(512 * KIB);
}

/* The next region starts in the block the last one wrote last, and
 * holds all of its own 300 KiB there: one block where the first took
 * two. */
GB_TEST(a_region_after_a_like_one_starts_in_the_block_it_wrote_last)
{
    init_map(0);
    const gb__block *wrote = chain_two_blocks();
    uint64_t hits = gbt_stats().cache_hits;
    gb_region *r = gb_enter();
    char *p = gb_alloc(100);
    CHECK(p == (const char *)wrote + HDR);
    CHECK_EQ(gb_region_bytes(r), 512 * KIB);
    CHECK_EQ(gbt_stats().cache_hits, hits + 1);
    fill(300 * KIB, 16 * KIB);
    CHECK_EQ(gbt_stats().blocks_live, 1);
    CHECK_EQ(gb_region_bytes(r), 512 * KIB);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

/* After a region that left the 512 KiB block warm, the next region's
 * first block is the first block's size where the cache was given back
 * in between (sweep) or the region is under a limit (limit, 0 for
 * none). */
static void check_starts_at_the_first_block(bool sweep, size_t limit)
{
    init_map(0);
    size_t first = first_block_bytes();
    chain_two_blocks();
    if (sweep)
        gb_sweep();
    gb_region *r = gb_enter();
    if (limit)
        gb_region_limit(r, limit);
    gb_alloc(100);
    CHECK_EQ(gb_region_bytes(r), first);
    gb_leave(r);
}

/* The warm block only ever comes from the cache: with none of its size
 * there (a sweep gave the cache back), the next region starts at the
 * first block, as a thread's first region does. */
GB_TEST(with_no_cached_block_of_the_warm_size_a_region_starts_at_the_first_block)
{
    check_starts_at_the_first_block(true, 0);
}

/* Under a limit a region grows from the first block, the warm block
 * cached or not: a larger first block could take room the limit leaves
 * for the blocks after it. */
GB_TEST(a_region_under_a_limit_starts_at_the_first_block)
{
    check_starts_at_the_first_block(false, 4 * MIB);
}

/* Only a region's first chained block is warm. A region that started at
 * the first block (no warm size yet) and gained a warm block in the cache
 * while an inner region came and went still doubles its chain. */
GB_TEST(only_the_first_block_of_a_chain_is_taken_warm)
{
    init_map(0);
    size_t first = first_block_bytes();
    gb_region *r = gb_enter();
    gb_alloc(100);
    CHECK_EQ(gb_region_bytes(r), first);
    const gb__block *wrote = chain_two_blocks();
    char *p = gb_alloc(first);
    CHECK(block_of(p) != wrote);
    CHECK(gb_region_bytes(r) - first < 512 * KIB);
    gb_leave(r);
}

/* The warm size is the smallest of the chain's sizes whose payload holds
 * what the last region's chain held: its blocks' payloads less the
 * current block's unused end. Here the chain starts at 16 KiB, and the
 * region fills its first block to the byte and takes `more` bytes of its
 * second, of 32 KiB. */
static size_t warm_after(size_t more)
{
    init_map(16 * KIB);
    gb_region *r = gb_enter();
    gb_alloc(16 * KIB - HDR);
    gb_alloc(more);
    CHECK_EQ(gb_region_bytes(r), 16 * KIB + 32 * KIB);
    gb_leave(r);
    return warm();
}

/* 16 KiB of the second block: 32 KiB less a header in all, a 32 KiB
 * block's payload exactly. */
GB_TEST(a_chain_that_fills_a_blocks_payload_exactly_is_warm_at_that_block)
{
    CHECK_EQ(warm_after(16 * KIB), 32 * KIB);
}

/* 16 bytes more: the 64 KiB block. */
GB_TEST(a_chain_one_allocation_past_a_blocks_payload_is_warm_at_the_next)
{
    CHECK_EQ(warm_after(16 * KIB + 16), 64 * KIB);
}

/* The warm size after a region that wrote `bytes` in 16-byte pieces:
 * payloads are multiples of 16, so its chain held exactly that. */
static size_t warm_after_a_chain_of(size_t bytes)
{
    init_map(0);
    gb_region *r = gb_enter();
    fill(bytes, 16);
    gb_leave(r);
    return warm();
}

/* A chain that held the cap's payload to the byte: the cap. */
GB_TEST(a_chain_of_the_caps_payload_is_warm_at_the_cap)
{
    CHECK_EQ(warm_after_a_chain_of(MIB - HDR), MIB);
}

/* A chain past the cap's payload leaves no warm size: a region like it
 * starts at the first block, though the cache holds blocks of the cap. */
GB_TEST(a_chain_past_the_caps_payload_leaves_no_warm_size)
{
    CHECK_EQ(warm_after_a_chain_of(MIB - HDR + 16), 0);
    gb_region *r = gb_enter();
    gb_alloc(16);
    CHECK(gb_region_bytes(r) < MIB);
    gb_leave(r);
}

/* A solo block held one large allocation: it counts for nothing in the
 * warm size, which is what the chain beside it held (32, 64 and 48 of
 * 128 KiB, less two headers: 256 KiB). */
GB_TEST(a_solo_block_leaves_the_warm_size_to_the_chain)
{
    init_map(0);
    gb_region *r = gb_enter();
    fill(100 * KIB, 16 * KIB);
    memset(gb_alloc(2 * MIB), 0x5a, 2 * MIB);
    CHECK(gb_region_bytes(r) > 2 * MIB);
    gb_leave(r);
    CHECK_EQ(warm(), 256 * KIB);
}

/* The smallest mapping's class (map_min, 16 KiB: the cache's first list)
 * is warm like the others: a region that filled its 4 and 8 KiB blocks
 * (a slab's chunks) and took 16 bytes of a 16 KiB one leaves that block
 * warm, and the next region starts in it. */
GB_TEST(the_smallest_mappings_class_is_warm_like_the_others)
{
    init_map(0);
    size_t first = first_block_bytes();
    GBT_SKIP_IF(first >= gb__cfg.map_min, "the first block is a chunk of the smallest mapping's size or more here "
                                          "(16 KiB pages): the chain never takes a smaller block before one of it");
    CHECK_EQ(first, 4 * KIB);
    CHECK_EQ(gb__cfg.map_min, 16 * KIB);
    gb_region *r = gb_enter();
    gb_alloc(4 * KIB - HDR);
    gb_alloc(8 * KIB - HDR);
    char *last = gb_alloc(16);
    CHECK_EQ(block_of(last)->chunk.size, 16 * KIB);
    gb_leave(r);
    CHECK_EQ(warm(), 16 * KIB);
    r = gb_enter();
    gb_alloc(16);
    CHECK_EQ(gb_region_bytes(r), 16 * KIB);
    gb_leave(r);
}

/* A warm block is at most an eighth of the cache's bound: with a bound
 * of 4 MiB the 512 KiB block is warm, and the next region starts in it. */
GB_TEST(a_warm_block_of_an_eighth_of_the_cache_bound_is_taken)
{
    init_map_cached(0, 4 * MIB);
    const gb__block *wrote = chain_two_blocks_warm(512 * KIB);
    gb_region *r = gb_enter();
    CHECK(gb_alloc(16) == (const char *)wrote + HDR);
    gb_leave(r);
}

/* With a bound of 4 MiB less a page, it is past the eighth: no warm
 * size, and the next region starts at the first block, though the 512
 * KiB block is cached. */
GB_TEST(a_block_past_an_eighth_of_the_cache_bound_is_not_warm)
{
    init_map_cached(0, 4 * MIB - 4 * KIB);
    size_t first = first_block_bytes();
    chain_two_blocks_warm(0);
    CHECK(gb__chunk_cached(&gb__self()->mem.cache, 512 * KIB));
    gb_region *r = gb_enter();
    gb_alloc(16);
    CHECK_EQ(gb_region_bytes(r), first);
    gb_leave(r);
}
