/* small.c -- chunks too small for a mapping come from the runtime's slabs. */
#include "common.h"

#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1024 * 1024)

static void init_small(gb_small small)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.small = small;
    gb_init(&o);
}

GB_TEST(a_small_region_takes_a_slab_unit_and_gives_it_back)
{
    init_small(GB_SMALL_AUTO);
    gb_region *r = gb_enter();
    memset(gb_alloc(100), 1, 100);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.slabs, 1);
    CHECK(s.bytes_small >= 4096);
    CHECK_EQ(s.bytes_heap, 0);
    gb_leave(r);
    s = gbt_stats();
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.bytes_small, 0);
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.mappings, 0);
}

GB_TEST(small_malloc_keeps_them_in_malloc)
{
    init_small(GB_SMALL_MALLOC);
    gb_region *r = gb_enter();
    gb_alloc(100);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.slabs, 0);
    CHECK(s.bytes_heap >= 4096);
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_heap, 0);
}

/* Many small regions at once, then all left, with a long-lived malloc made
 * while they were all live (it lands above their memory in malloc's heap
 * and would stop it being trimmed): the slabs go, and so does the memory. */
static size_t many_small_regions(int n)
{
    gb_region **r = malloc((size_t)n * sizeof *r);
    for (int i = 0; i < n; i++) {
        r[i] = gb_enter();
        memset(gb_alloc(3000), i, 3000);
    }
    void *volatile kept = malloc(64);
    for (int i = n - 1; i >= 0; i--)
        gb_leave(r[i]);
    free(r);
    gb_resident res;
    CHECK(gb_resident_get(&res) == 0);
    free(kept);
    return res.rss;
}

GB_TEST(many_small_regions_leave_with_slabs)
{
    init_small(GB_SMALL_SLAB);
    size_t rss = many_small_regions(50000);
    gb_stats s = gbt_stats();
    fprintf(stderr, "50,000 small regions from slabs, left: %.1f MiB resident\n", rss / (double)MIB);
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_LT(rss, 48 * MIB);
}

GB_TEST(slabs_reuse_units_and_empty_freed_pages)
{
    init_small(GB_SMALL_SLAB);
    /* Two interleaved generations: the even regions stay, the odd ones
     * go, so slabs stay partly used and must empty what was given back. */
    enum { N = 2000 };
    gb_region *outer = gb_enter();
    for (int round = 0; round < 5; round++) {
        gb_region *r[N];
        for (int i = 0; i < N; i++) {
            r[i] = gb_enter();
            memset(gb_alloc(4000), round, 4000);
        }
        for (int i = N - 1; i >= 0; i--)
            gb_leave(r[i]);
        gb_alloc_in(outer, 8); /* the outer region's own block stays */
        gb_stats s = gbt_stats();
        CHECK_LT(s.slabs, 3); /* units are reused, not piled up */
    }
    gb_leave(outer);
    CHECK_EQ(gbt_stats().slabs, 0);
}
