/* boundary.c -- with GB_CHECK=2 a bug planted in a module stops at that
 * module's boundary, naming the invariant and the module's file, not at
 * the end of the test as a counter that does not add up.
 *
 * Each case breaks one field as a bug in that module would, in a child
 * (gbt_expect_death), and then does the next ordinary operation: the
 * checker that the operation's module runs at its boundary (base.h,
 * GB__CHECK_AT) must stop the process there, in its own file. Built
 * against giveback_program_check, the program build at GB_CHECK=2, which
 * every build type has (CMakeLists.txt). The cases that call a checker
 * of the boundaries directly reach the conditions that no operation of
 * the public API can break on its own.
 */
#include "common.h"
#include "internal.h"

#include "check.h"
#include "os/os.h"
#include "sanitizers.h"
#include "small.h"

#include <pthread.h>
#include <string.h>

/* Weak, as in tests/check.c: a runtime without the checks of the
 * boundaries makes every case say so rather than fail to link. */
void gb__check_top(const gb__thread *t) __attribute__((weak));
#define SKIP_UNCHECKED()                                                                             \
    GBT_SKIP_IF(!gb__check_top, "this build's runtime has no GB_CHECK=2: no checks at the boundaries to test")

static gb__thread *self(void)
{
    return gb__self();
}

/* The runtime with the map source and the block cache on, so that a
 * region's blocks go to the cache at its leave. */
static void init_cached(void)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.small = GB_SMALL_SLAB;
    o.cache_bytes = 64 << 20;
    gb_init(&o);
}

/* A region entered, filled past its first blocks and left: its mapped
 * blocks wait in the thread's cache. Returns the class of one of them. */
static int cache_a_block(void)
{
    init_cached();
    gb_region *r = gb_enter();
    for (int i = 0; i < 8; i++)
        memset(gb_alloc(64 << 10), i, 64 << 10);
    gb_leave(r);
    for (int k = 0; k < GB__CACHE_CLASSES; k++)
        if (self()->mem.cache.head[k])
            return k;
    gbt_fail(__FILE__, __LINE__, "no block was cached at the leave");
    return -1;
}

/* ---------------------------------------------------------------- map.c */

/* The block cache's byte count off by a page: the next push stops. */
static void cache_bytes_off_then_leave(void)
{
    cache_a_block();
    self()->mem.cache.bytes += gb__os.page_size;
    gb_region *r = gb_enter();
    memset(gb_alloc(256 << 10), 1, 256 << 10);
    gb_leave(r);
}

/* A cached block's kind word overwritten (a write after the give-back,
 * say): the next pop or push stops. */
static void cached_kind_word_overwritten(void)
{
    int k = cache_a_block();
    void **b = self()->mem.cache.head[k];
    gb__asan_unpoison(b, 2 * sizeof(void *));
    b[1] = (char *)b + 64;
    gb__asan_poison(b, 2 * sizeof(void *));
    gb__cache_check(&self()->mem.cache);
}

/* A cached block's kind word that says huge, where the block does not
 * start on a huge page. */
static void cached_block_taken_for_huge(void)
{
    int k = cache_a_block();
    void **b = self()->mem.cache.head[k];
    gb__asan_unpoison(b, 2 * sizeof(void *));
    b[1] = b;
    gb__asan_poison(b, 2 * sizeof(void *));
    /* Unless it does: then no bug was planted. */
    GBT_SKIP_IF(gb__cfg.huge && ((uintptr_t)b & (gb__cfg.huge - 1)) == 0, "the block starts on a huge page");
    gb__cache_check(&self()->mem.cache);
}

/* The process's reservation for the caches below what this thread holds. */
static void cache_reservation_below_the_thread(void)
{
    cache_a_block();
    gb__map_cache_unreserve(self()->mem.cache.bytes + gb__os.page_size);
    gb__cache_check(&self()->mem.cache);
}

GB_TEST(a_block_cache_broken_stops_in_map_c)
{
    SKIP_UNCHECKED();
    gbt_expect_death(cache_bytes_off_then_leave, "its lists hold");
    gbt_expect_death(cache_bytes_off_then_leave, "(gb__cache_check, runtime/src/map.c:");
    gbt_expect_death(cached_kind_word_overwritten, "its kind word is");
}

GB_TEST(a_cached_block_taken_for_huge_off_a_huge_page_stops_the_cache_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(cached_block_taken_for_huge, "does not start on a huge page");
}

GB_TEST(a_thread_caching_more_than_every_thread_reserved_stops_the_cache_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(cache_reservation_below_the_thread, "more than the");
}

/* -------------------------------------------------------------- small.c */

static gb__chunk held[3];
static gb__cache own;

/* Three units of a slab taken: the slab the cases break. */
static gb__slab *a_slab(void)
{
    gbt_init_slabs();
    for (int i = 0; i < 3; i++)
        CHECK(gb__small_get(&own, gb__os.page_size, &held[i]));
    return held[0].owner;
}

/* The slab's count of units in use off by one: the next give-back stops. */
static void slab_count_off_then_put(void)
{
    a_slab()->nused++;
    gb__small_put(&own, held[1]);
}

/* A slab that lost its mapping. */
static void slab_without_its_mapping(void)
{
    gb__slab *s = a_slab();
    s->base = NULL;
    gb__small_slabs_lock();
    gb__slab_check(s);
}

GB_TEST(a_slab_broken_stops_in_small_c)
{
    SKIP_UNCHECKED();
    gbt_expect_death(slab_count_off_then_put, "but its bits say");
    gbt_expect_death(slab_count_off_then_put, "(gb__slab_check, runtime/src/small.c:");
    gbt_expect_death(slab_without_its_mapping, "has no mapping");
}

/* ------------------------------------------------------------- handle.c */

/* The floor of the thread's page of descriptors raised above its highest
 * generation: the next region entered on it stops. */
static void page_floor_raised_then_enter(void)
{
    gb_region *r = gb_enter();
    gb__dpage *pg = gb__handle_lookup("tests/boundary.c", &self()->mem, r)->page;
    pg->floor = pg->gen_hi + 1;
    (void)gb_enter();
}

GB_TEST(a_descriptor_page_broken_stops_in_handle_c)
{
    SKIP_UNCHECKED();
    gbt_expect_death(page_floor_raised_then_enter, "floor");
    gbt_expect_death(page_floor_raised_then_enter, "(gb__dpage_check, runtime/src/handle.c:");
}

/* ------------------------------------------ entry points (region.c's) */

/* The outer region's bump pointer moved past its block's end while an
 * inner region was live: the leave of the inner one stops. */
static void outer_bump_broken_then_leave_inner(void)
{
    gb_region *outer = gb_enter();
    memset(gb_alloc(100), 1, 100);
    gb_region *inner = gb_enter();
    gb_region *r = gb__handle_lookup("tests/boundary.c", &self()->mem, outer);
    r->bump = r->end + 16;
    gb_leave(inner);
}

/* The running context's depth says none while a region is on it. */
static void depth_zero_with_a_region(void)
{
    (void)gb_enter();
    self()->cur->depth = 0;
    gb__check_top(self());
}

/* A region that is not the innermost, checked as the one just entered. */
static void entered_not_innermost(void)
{
    gb_region *outer = gb_enter();
    (void)gb_enter();
    gb__check_entered(self(), gb__handle_lookup("tests/boundary.c", &self()->mem, outer));
}

GB_TEST(a_region_broken_stops_at_the_next_leave)
{
    SKIP_UNCHECKED();
    gbt_expect_death(outer_bump_broken_then_leave_inner, "(gb__region_check, runtime/src/check.c:");
}

/* The innermost region checked as the one just entered, on a stack whose
 * depth says none. */
static void entered_on_a_stack_of_depth_zero(void)
{
    gb_region *h = gb_enter();
    self()->cur->depth = 0;
    gb__check_entered(self(), gb__handle_lookup("tests/boundary.c", &self()->mem, h));
}

/* The region just entered, whose byte count went wrong. */
static void entered_with_its_bytes_off(void)
{
    gb_region *h = gb_enter();
    gb_region *r = gb__handle_lookup("tests/boundary.c", &self()->mem, h);
    r->bytes += 8;
    gb__check_entered(self(), r);
}

GB_TEST(the_checks_of_the_boundaries_name_a_stack_out_of_order)
{
    SKIP_UNCHECKED();
    gbt_expect_death(depth_zero_with_a_region, "has depth 0 and top");
    gbt_expect_death(entered_not_innermost, "is not the innermost of a stack of depth 2");
    gbt_expect_death(entered_on_a_stack_of_depth_zero, "is not the innermost of a stack of depth 0");
    gbt_expect_death(entered_with_its_bytes_off, "(gb__region_check, runtime/src/check.c:");
}

/* ------------------------------------------------------------- index.c */

/* Two ranges in one 64 KiB granule share a probe run of the fine table;
 * the second's part of the granule is broken (empty), and the removal of
 * the first, which moves the second back into the hole, stops in the
 * index's check of the run it left. */
static void index_run_broken_then_remove(void)
{
    static char two[128] __attribute__((aligned(64)));
    (void)gb_enter(); /* the thread's state, with its index */
    gb__index *ix = &self()->mem.index;
    gb__index_add(ix, two, 64, (uintptr_t)two | GB__INDEX_BLOCK, NULL);
    gb__index_add(ix, two + 64, 64, (uintptr_t)(two + 64) | GB__INDEX_BLOCK, NULL);
    gb__index_slot *second = NULL;
    for (size_t i = 0; i < ix->fine.cap; i++)
        if (ix->fine.slots[i].val == (uintptr_t)(two + 64))
            second = &ix->fine.slots[i];
    CHECK(second != NULL);
    second->hi = second->lo;
    gb__index_remove(ix, two, 64, (uintptr_t)two | GB__INDEX_BLOCK);
}

GB_TEST(an_index_entry_broken_stops_at_the_next_removal_in_its_run)
{
    SKIP_UNCHECKED();
    gbt_expect_death(index_run_broken_then_remove, "the fine index table");
    gbt_expect_death(index_run_broken_then_remove, "(entry_check, runtime/src/index.c:");
}

/* A range entered twice under one value (what the index never does: each
 * block and arena is entered once): one removal takes one copy out, and
 * the check after it finds the other still in its run. */
static void index_entered_twice_then_removed(void)
{
    static char one[64] __attribute__((aligned(64)));
    (void)gb_enter();
    gb__index *ix = &self()->mem.index;
    gb__index_add(ix, one, 64, (uintptr_t)one | GB__INDEX_BLOCK, NULL);
    gb__index_add(ix, one, 64, (uintptr_t)one | GB__INDEX_BLOCK, NULL);
    gb__index_remove(ix, one, 64, (uintptr_t)one | GB__INDEX_BLOCK);
}

GB_TEST(a_range_still_in_the_index_after_its_removal_stops_at_the_removal)
{
    SKIP_UNCHECKED();
    gbt_expect_death(index_entered_twice_then_removed, "is still in slot");
    gbt_expect_death(index_entered_twice_then_removed, "after its removal (removed_check, runtime/src/index.c:");
}

/* --------------------------------------------------- thread.c, at exit */

/* A thread whose region's byte count went wrong, and which exits with it
 * still entered: its exit hook stops before it takes the state apart. */
static void *exit_with_a_broken_region(void *arg)
{
    (void)arg;
    gb_region *h = gb_enter();
    memset(gb_alloc(100), 1, 100);
    gb__handle_lookup("tests/boundary.c", &self()->mem, h)->bytes += 8;
    return NULL;
}

static void thread_exits_broken(void)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, exit_with_a_broken_region, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

GB_TEST(a_thread_that_exits_with_its_state_broken_stops_in_its_exit_hook)
{
    SKIP_UNCHECKED();
    gbt_expect_death(thread_exits_broken, "(gb__region_check, runtime/src/check.c:");
}

/* A sound thread passes every boundary: regions nested, reset, left,
 * blocks cached and taken again, slabs shared. */
GB_TEST(a_sound_thread_passes_every_boundary)
{
    SKIP_UNCHECKED();
    init_cached();
    for (int round = 0; round < 3; round++) {
        gb_region *outer = gb_enter();
        for (int i = 0; i < 50; i++)
            memset(gb_alloc(100 + (size_t)i * 97), i, 100);
        gb_region *inner = gb_enter();
        memset(gb_alloc(300 << 10), 2, 300 << 10);
        gb_region_reset(inner, 64 << 10);
        memset(gb_alloc(100 << 10), 3, 100 << 10);
        gb_leave(inner);
        gb__check_top(self());
        gb_leave(outer);
    }
    gb__check_current();
    gbt_check_all_given_back();
}
