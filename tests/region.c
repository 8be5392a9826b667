/* region.c -- regions: entering, allocating, growing, leaving, misuse. */
#include "common.h"

#include <stdlib.h>
#include <string.h>

GB_TEST(enter_leave_gives_everything_back)
{
    gb_region *r = gb_enter();
    CHECK(gb_current() == r);
    CHECK_EQ(gb_depth(), 1);
    for (int i = 0; i < 10000; i++)
        memset(gb_alloc(1000), 0xab, 1000);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_live, 1);
    CHECK(s.blocks_live > 1);
    CHECK(s.bytes_mapped + s.bytes_heap >= 10000 * 1000);
    gb_leave(r);
    CHECK(gb_current() == NULL);
    gbt_check_all_given_back();
}

GB_TEST(allocations_are_16_byte_aligned_and_disjoint)
{
    gb_region *r = gb_enter();
    char *prev = NULL;
    size_t prev_n = 0;
    for (size_t n = 0; n < 3000; n++) {
        char *p = gb_alloc(n);
        CHECK_EQ((uintptr_t)p % 16, 0);
        CHECK(p != NULL);
        memset(p, (int)n, n);
        if (prev && p > prev)
            CHECK(p >= prev + prev_n);
        prev = p;
        prev_n = n;
    }
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(zero_size_allocations_are_unique)
{
    gb_region *r = gb_enter();
    void *a = gb_alloc(0), *b = gb_alloc(0);
    CHECK(a && b && a != b);
    gb_leave(r);
}

GB_TEST(small_allocations_bump_within_a_block)
{
    gb_region *r = gb_enter();
    char *a = gb_alloc(16), *b = gb_alloc(32), *c = gb_alloc(1);
    CHECK(b == a + 16);
    CHECK(c == b + 32);
    gb_leave(r);
}

GB_TEST(blocks_grow_geometrically_up_to_the_cap)
{
    gb_region *r = gb_enter();
    /* Fill with 64-byte allocations and watch the block count: with a 4 KiB
     * first block doubling to a 1 MiB cap, 8 MiB needs 9 growing blocks
     * (4K..1M, 2 MiB in all) and then 6 more of 1 MiB. */
    size_t total = 0;
    while (total < 8 * 1024 * 1024) {
        gb_alloc(64);
        total += 64;
    }
    gb_stats s = gbt_stats();
    CHECK(s.blocks_live >= 14 && s.blocks_live <= 16);
    CHECK(gb_region_bytes(r) >= total);
    CHECK(gb_region_bytes(r) < total + 2 * 1024 * 1024);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(an_allocation_over_the_cap_gets_its_own_block)
{
    gb_region *r = gb_enter();
    char *small = gb_alloc(100);
    size_t before = gbt_stats().blocks_live;
    char *big = gb_alloc(5 * 1024 * 1024);
    memset(big, 1, 5 * 1024 * 1024);
    CHECK_EQ(gbt_stats().blocks_live, before + 1);
    /* The current block's free space is still used after the big one. */
    char *next = gb_alloc(100);
    CHECK(next == small + 112);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(realloc_of_the_last_allocation_grows_in_place)
{
    gb_region *r = gb_enter();
    char *p = gb_alloc(100);
    memset(p, 7, 100);
    char *q = gb_realloc(p, 100, 1000);
    CHECK(q == p);
    CHECK(q[99] == 7);
    char *after = gb_alloc(16);
    CHECK(after == p + 1008);
    gb_leave(r);
}

GB_TEST(realloc_of_an_earlier_allocation_copies)
{
    gb_region *r = gb_enter();
    char *p = gb_alloc(100);
    memset(p, 9, 100);
    gb_alloc(16);
    char *q = gb_realloc(p, 100, 200);
    CHECK(q != p);
    for (int i = 0; i < 100; i++)
        CHECK(q[i] == 9);
    gb_leave(r);
}

GB_TEST(realloc_null_allocates)
{
    gb_region *r = gb_enter();
    CHECK(gb_realloc(NULL, 0, 64) != NULL);
    gb_leave(r);
}

GB_TEST(calloc_zeroes)
{
    gb_region *r = gb_enter();
    char *p = gb_alloc(64);
    memset(p, 0xff, 64);
    gb_realloc(p, 64, 0); /* hands the bytes back to the bump pointer */
    unsigned char *z = gb_calloc(8, 8);
    for (int i = 0; i < 64; i++)
        CHECK(z[i] == 0);
    gb_leave(r);
}

GB_TEST(nested_regions_and_alloc_in_an_outer_one)
{
    gb_region *outer = gb_enter();
    gb_region *inner = gb_enter();
    CHECK_EQ(gb_depth(), 2);
    CHECK(gb_current() == inner);
    int *kept = gb_alloc_in(outer, sizeof *kept);
    *kept = 42;
    gb_alloc(1 << 20);
    gb_leave(inner);
    CHECK(gb_current() == outer);
    CHECK(*kept == 42);
    gb_leave(outer);
    gbt_check_all_given_back();
}

/* ----------------------------------------------------------- misuse */

static void leave_outer_first(void)
{
    gb_region *outer = gb_enter();
    gb_enter();
    gb_leave(outer);
}

GB_TEST(leaving_a_region_that_is_not_innermost_stops)
{
    gbt_expect_death(leave_outer_first, "is not the innermost region (1 regions entered after it");
}

static void leave_twice(void)
{
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_leave(r);
}

GB_TEST(leaving_a_region_twice_stops)
{
    gbt_expect_death(leave_twice, "was already left");
}

static void leave_twice_nested(void)
{
    gb_enter();
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_leave(r);
}

GB_TEST(leaving_a_left_region_under_another_stops)
{
    gbt_expect_death(leave_twice_nested, "is not on this context's region stack: it was already left");
}

static void alloc_outside(void)
{
    gb_alloc(8);
}

GB_TEST(allocating_outside_any_region_stops)
{
    gbt_expect_death(alloc_outside, "gb_alloc: no region is entered");
}

static void alloc_in_left(void)
{
    gb_enter();
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_alloc_in(r, 8);
}

GB_TEST(allocating_in_a_left_region_stops)
{
    gbt_expect_death(alloc_in_left, "gb_alloc_in: region");
}

static void alloc_huge(void)
{
    gb_enter();
    gb_alloc(SIZE_MAX - 3);
}

GB_TEST(an_overflowing_size_stops)
{
    gbt_expect_death(alloc_huge, "gb_alloc: size overflows");
}

static void calloc_huge(void)
{
    gb_enter();
    gb_calloc(SIZE_MAX / 2, 3);
}

GB_TEST(an_overflowing_calloc_stops)
{
    gbt_expect_death(calloc_huge, "gb_calloc: size overflows");
}

static void realloc_lies(void)
{
    gb_enter();
    void *p = gb_alloc(32);
    gb_realloc(p, 4096, 8192);
}

GB_TEST(realloc_with_a_wrong_old_size_stops)
{
    gbt_expect_death(realloc_lies, "gb_realloc: old size 4096 is larger than the allocation");
}

static void exhaust(void)
{
    gb_enter();
    /* Far more than any machine has: mmap and malloc both fail. */
    gb_alloc((size_t)1 << 60);
}

GB_TEST(exhaustion_stops_with_out_of_memory)
{
    gbt_expect_death(exhaust, "out of memory");
}

static void init_late(void)
{
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_init(NULL);
}

GB_TEST(init_after_first_use_stops)
{
    gbt_expect_death(init_late, "gb_init called after the runtime was already initialised");
}

static void bad_env(void)
{
    setenv("GB_BLOCKS", "mmap", 1);
    gb_enter();
}

GB_TEST(a_malformed_block_source_stops)
{
    gbt_expect_death(bad_env, "GB_BLOCKS=mmap: expected map, heap or auto");
}

static void bad_stress(void)
{
    setenv("GB_STRESS", "fifty", 1);
    gb_enter();
}

GB_TEST(a_malformed_stress_setting_stops)
{
    gbt_expect_death(bad_stress, "GB_STRESS=fifty");
}
