/* region.c -- regions: entering, allocating, growing, leaving, misuse. */
#include "common.h"
#include "handles.h"
#include "internal.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

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
    gb_options o;
    gb_options_init(&o);
    o.block_cap = 1024 * 1024; /* the default without huge pages */
    gb_init(&o);
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

/* A cap that is not a power of two times the first block: the doubling
 * that would pass it stops at it. Blocks from malloc, so that a block's
 * size is what the region asked for, not a size class. */
GB_TEST(a_block_that_doubling_would_take_past_the_cap_stops_at_it)
{
    gbt_init_heap_blocks(4096, 3 * 1024 * 1024);
    gb_region *r = gb_enter();
    gb_alloc(100);
    size_t first = gb_region_bytes(r);
    CHECK_EQ(first, 4096);
    /* 2 MiB does not fit a block of 2 MiB with its header: the next size
     * is 4 MiB, over the cap, so the block is the cap's 3 MiB. */
    gb_alloc(2 * 1024 * 1024);
    CHECK_EQ(gb_region_bytes(r) - first, 3 * 1024 * 1024);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* An allocation that fills a block to its last byte (the block's size
 * less its header) takes a block of that size, not the next one. */
GB_TEST(an_allocation_that_fills_the_next_block_exactly_takes_that_block)
{
    gbt_init_heap_blocks(4096, 0);
    gb_region *r = gb_enter();
    gb_alloc(4096 - GB__BLOCK_HDR);
    CHECK_EQ(gb_region_bytes(r), 4096);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* An allocation of exactly the cap's payload (block_cap less the
 * header) is a chained block's, the region's current one: the next small
 * allocation goes after it, in a block of its own, not back into the
 * block before (as it would behind a solo block). */
GB_TEST(an_allocation_of_exactly_the_caps_payload_is_chained)
{
    gbt_init_heap_blocks(4096, 64 * 1024);
    gb_region *r = gb_enter();
    gb_alloc(100);
    gb_alloc(64 * 1024 - GB__BLOCK_HDR);
    CHECK_EQ(gb_region_bytes(r), 4096 + 64 * 1024);
    gb_alloc(100);
    CHECK(gb_region_bytes(r) > 4096 + 64 * 1024);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(an_allocation_over_the_cap_gets_its_own_block)
{
    gb_options o;
    gb_options_init(&o);
    o.block_cap = 1024 * 1024;
    gb_init(&o);
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

/* The last allocation grown to its block's last byte stays where it is;
 * an earlier one "grown" to its own size is not copied either. */
GB_TEST(realloc_to_the_blocks_end_or_to_the_same_size_stays_in_place)
{
    gbt_init_heap_blocks(4096, 0);
    gb_region *r = gb_enter();
    char *p = gb_alloc(100);
    memset(p, 7, 100);
    CHECK(gb_realloc(p, 100, 4096 - GB__BLOCK_HDR) == p);
    CHECK_EQ(gb_region_bytes(r), 4096);
    CHECK_EQ(p[99], 7);
    char *q = gb_alloc(100); /* a new block: p is no longer the last */
    CHECK(gb_realloc(p, 100, 100) == p);
    CHECK(gb_realloc(p, 100, 50) == p);
    (void)q;
    gb_leave(r);
    gbt_check_all_given_back();
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
    gbt_expect_death(leave_twice_nested, "was already left");
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

/* ------------------------------------------------------ stale handles
 *
 * A left region's descriptor slot is reused by the next region entered,
 * at once (the slot is the first free one): the handle must still be
 * known as left, after any number of regions came and went in between. */

static gb_region *stale, *fresh;

/* Enters outer; enters and leaves `stale`; a million regions in between;
 * enters `fresh`, which reuses stale's slot (checked). */
static void make_stale(void)
{
    gb_enter();
    stale = gb_enter();
    gb_leave(stale);
    for (int i = 0; i < 1000000; i++)
        gb_leave(gb_enter());
    fresh = gb_enter();
    CHECK(fresh != stale);
    /* Same slot, later generation: the descriptor was reused. */
    uintptr_t slot_bits = ((uintptr_t)1 << GB__H_GEN_SHIFT) - 1;
    CHECK_EQ((uintptr_t)fresh & slot_bits, (uintptr_t)stale & slot_bits);
    CHECK(gb_current() == fresh);
}

static void leave_stale(void)
{
    make_stale();
    gb_leave(stale);
}

GB_TEST(a_stale_handle_is_known_as_left_after_its_slot_is_reused)
{
    gbt_expect_death(leave_stale, "gb_leave: region");
    gbt_expect_death(leave_stale, "was already left");
}

static void alloc_in_stale(void)
{
    make_stale();
    gb_alloc_in(stale, 64);
}

GB_TEST(allocating_in_a_stale_handle_stops_after_its_slot_is_reused)
{
    gbt_expect_death(alloc_in_stale, "gb_alloc_in: region");
    gbt_expect_death(alloc_in_stale, "was already left");
}

/* The slot reused by a region that is not the innermost: one more region
 * is entered after it, so the stale handle is compared with the region
 * one level out, which the allocation calls check by handle alone before
 * they ask the directory. */
static gb_region *reused_outer;

static void make_stale_one_level_out(void)
{
    gb_enter();
    stale = gb_enter();
    gb_leave(stale);
    fresh = gb_enter(); /* the first free slot: stale's */
    CHECK(fresh != stale);
    uintptr_t slot_bits = ((uintptr_t)1 << GB__H_GEN_SHIFT) - 1;
    CHECK_EQ((uintptr_t)fresh & slot_bits, (uintptr_t)stale & slot_bits);
    CHECK_LT((uintptr_t)stale >> GB__H_GEN_SHIFT, (uintptr_t)fresh >> GB__H_GEN_SHIFT);
    reused_outer = fresh;
    gb_enter();
    CHECK_EQ(gb_depth(), 3);
    CHECK(gb_current() != fresh);
}

static void alloc_in_stale_one_level_out(void)
{
    make_stale_one_level_out();
    gb_alloc_in(stale, 64);
}

static void calloc_in_stale_one_level_out(void)
{
    make_stale_one_level_out();
    gb_calloc_in(stale, 4, 16);
}

static void realloc_in_stale_one_level_out(void)
{
    make_stale_one_level_out();
    /* p is the reusing region's own last allocation: a stale handle taken
     * for that region would grow it quietly. */
    void *p = gb_alloc_in(reused_outer, 64);
    gb_realloc_in(stale, p, 64, 128);
}

GB_TEST(a_stale_handle_stops_when_its_slot_is_reused_one_level_out)
{
    gbt_expect_death(alloc_in_stale_one_level_out, "gb_alloc_in: region");
    gbt_expect_death(alloc_in_stale_one_level_out, "was already left");
    gbt_expect_death(calloc_in_stale_one_level_out, "gb_calloc_in: region");
    gbt_expect_death(calloc_in_stale_one_level_out, "was already left");
    gbt_expect_death(realloc_in_stale_one_level_out, "gb_realloc_in: region");
    gbt_expect_death(realloc_in_stale_one_level_out, "was already left");
}

/* The descriptor's page itself is given back (a sweep) and its memory
 * reused by blocks; the handle is decoded without reading it. */
static void stale_after_page_given_back(void)
{
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_sweep();
    CHECK_EQ(gbt_stats().bytes_cached, 0);
    gb_region *o = gb_enter();
    for (int i = 0; i < 64; i++)
        memset(gb_alloc(16 * 1024), 0xff, 16 * 1024);
    (void)o;
    gb_region_bytes(r);
}

GB_TEST(a_stale_handle_whose_page_was_given_back_is_known_as_left)
{
    gbt_expect_death(stale_after_page_given_back, "gb_region_bytes: region");
    gbt_expect_death(stale_after_page_given_back, "was already left");
}

static void leave_bogus(void)
{
    gb_enter();
    gb_leave((gb_region *)(uintptr_t)0x1234);
}

GB_TEST(a_value_gb_enter_never_returned_is_not_a_region)
{
    gbt_expect_death(leave_bogus, "is not a region handle (gb_enter never returned it)");
}

/* 100,000 regions entered at once, then left: their descriptors were in
 * the runtime's own pages, counted as mappings, and no byte of them stays
 * (but the one empty page each thread keeps, as cached, until a sweep). */
GB_TEST(descriptors_of_a_hundred_thousand_regions_are_given_back)
{
    enum { N = 100000 };
    static gb_region *r[N];
    gb_stats s0 = gbt_stats();
    for (int i = 0; i < N; i++)
        r[i] = gb_enter();
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_live, N);
    CHECK_EQ(s.bytes_meta, s0.bytes_meta); /* nothing from malloc */
    CHECK_EQ(s.blocks_live, 0);
    CHECK(s.bytes_mapped + s.bytes_heap >= (size_t)N * sizeof(struct gb_region));
    CHECK(s.bytes_mapped + s.bytes_heap < (size_t)N * sizeof(struct gb_region) * 2);
    for (int i = N - 1; i >= 0; i--)
        gb_leave(r[i]);
    gbt_check_all_given_back();
    s = gbt_stats();
    CHECK(s.bytes_cached <= GB_CACHE_DEFAULT); /* the spare descriptor page within it */
    gb_sweep();
    s = gbt_stats();
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.mappings_cached, 0);
}

/* ------------------------------------------------- other contexts */

static gb_region *mine;

static void *leave_from_a_thread(void *arg)
{
    (void)arg;
    gb_leave(mine);
    return NULL;
}

static void *alloc_in_from_a_thread(void *arg)
{
    (void)arg;
    gb_enter();
    gb_alloc_in(mine, 8);
    return NULL;
}

static void on_a_thread(void *(*fn)(void *))
{
    mine = gb_enter();
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
    pthread_join(t, NULL);
}

static void leave_other_thread(void)
{
    on_a_thread(leave_from_a_thread);
}

static void alloc_in_other_thread(void)
{
    on_a_thread(alloc_in_from_a_thread);
}

GB_TEST(leaving_another_threads_region_stops)
{
    gbt_expect_death(leave_other_thread, "gb_leave: region");
    gbt_expect_death(leave_other_thread, "was entered by another thread, and this thread does not hold it; a "
                                         "region is used and left only by the thread that holds it");
    gbt_expect_death(alloc_in_other_thread, "gb_alloc_in: region");
    gbt_expect_death(alloc_in_other_thread, "was entered by another thread, and this thread does not hold it");
}

static void enter_in_a_coroutine(void *arg)
{
    (void)arg;
    mine = gb_enter();
    gb_coro_yield();
}

static void *enter_in_a_coroutine_and_exit(void *arg)
{
    (void)arg;
    /* Suspended and never freed: its region stays entered after the
     * thread's exit, and the directory entry of its page is orphaned. */
    gb_coro_resume(gb_coro_new(enter_in_a_coroutine, NULL, 0));
    return NULL;
}

static void leave_an_exited_threads_region(void)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, enter_in_a_coroutine_and_exit, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    gb_leave(mine);
}

GB_TEST(leaving_a_region_of_a_thread_that_exited_stops)
{
    gbt_expect_death(leave_an_exited_threads_region,
                     "gb_leave: region");
    gbt_expect_death(leave_an_exited_threads_region,
                     "was entered by another thread, which has exited, and this thread does not hold it; "
                     "a region is used and left only by the thread that holds it");
}

static void *enter_and_exit(void *arg)
{
    (void)arg;
    mine = gb_enter();
    return NULL;
}

static void leave_after_thread_exit(void)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, enter_and_exit, NULL), 0);
    pthread_join(t, NULL);
    CHECK_EQ(gbt_stats().regions_live, 0); /* left at the thread's exit */
    gb_leave(mine);
}

GB_TEST(a_region_left_at_its_threads_exit_is_already_left)
{
    gbt_expect_death(leave_after_thread_exit, "was already left");
}

/* Enough regions at once to fill four pages of descriptors: a page holds
 * fewer than map_min / sizeof(struct gb_region) of them. */
static size_t four_pages_of_regions(void)
{
    gb_leave(gb_enter()); /* the runtime initialised: gb__cfg is read */
    return 3 * (gb__cfg.map_min / sizeof(struct gb_region)) + 3;
}

/* Enters n regions, names each to gb_alloc_in (every one but the last is
 * decoded through its page's directory entry), and leaves them. */
static void enter_name_and_leave(gb_region **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r[i] = gb_enter();
    for (size_t i = 0; i < n; i++)
        CHECK(gb_alloc_in(r[i], 8) != NULL);
    for (size_t i = n; i-- > 0;)
        gb_leave(r[i]);
}

/* A page emptied goes back and leaves its directory entry vacant for the
 * thread's next page; with several vacant, each new page takes one of its
 * own, and a handle on any of them still names its region. */
GB_TEST(each_new_descriptor_page_takes_a_vacant_directory_entry_of_its_own)
{
    size_t n = four_pages_of_regions();
    gb_region **r = malloc(n * sizeof *r);
    CHECK(r != NULL);
    enter_name_and_leave(r, n);
    uint32_t used = gb__handle_entries_used();
    CHECK(used >= 4); /* four pages at once, an entry each */
    for (int round = 0; round < 4; round++)
        enter_name_and_leave(r, n); /* the pages of the first round's entries */
    CHECK_EQ(gb__handle_entries_used(), used);
    gbt_check_all_given_back();
    free(r);
}

/* Slots moved by the test to a generation (gbt_at_generation, handles.h):
 * the way to a slot's last generations without 2^39 regions. */

/* A region whose slot is moved, by the test, to generation g - 1: left, it
 * brings its page's highest generation to g. The page goes back at once
 * (the cache off), and its entry with it; the entry the next region is
 * on says whether it was kept. */
static uint32_t entry_after_a_leave_at_generation(uint64_t g, uint32_t *entries_before)
{
    gb_region *r = gbt_at_generation(gb_enter(), g - 1);
    *entries_before = gb__handle_entries_used();
    gb_leave((gb_region *)r->handle);
    gb_region *next = gb_enter();
    uint32_t e = gbt_entry_of(next);
    gb_leave(next);
    return e;
}

/* A directory entry whose page issued the last generation there is is
 * still good for one more page, which starts there; one whose page went
 * past it is used up, and the next page takes another entry. */
GB_TEST(a_directory_entry_is_used_up_only_past_the_last_generation)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = GB_CACHE_OFF;
    gb_init(&o);
    gb_region *first = gb_enter();
    uint32_t e0 = gbt_entry_of(first);
    gb_leave(first);
    uint32_t before;
    CHECK_EQ(entry_after_a_leave_at_generation(GB__GEN_MAX, &before), e0);
    CHECK_EQ(gb__handle_entries_used(), before);
    uint32_t e1 = entry_after_a_leave_at_generation(GB__GEN_MAX + 1, &before);
    CHECK(e1 != e0);
    CHECK_EQ(gb__handle_entries_used(), before + 1);
    gbt_check_all_given_back();
}

/* A slot freed at the last generation is still good for one more region:
 * the next region takes it again (the spare page kept, with the cache on),
 * at that generation. */
GB_TEST(a_slot_at_the_last_generation_is_taken_once_more)
{
    gb_init(NULL);
    gb_region *r = gbt_at_generation(gb_enter(), GB__GEN_MAX - 1);
    uintptr_t where = r->where;
    gb_leave((gb_region *)r->handle); /* the slot's generation is now the last */
    gb_region *next = gb_enter();
    CHECK_EQ((uintptr_t)next & (((uintptr_t)1 << GB__H_GEN_SHIFT) - 1), where);
    CHECK_EQ((uintptr_t)next >> GB__H_GEN_SHIFT, GB__GEN_MAX);
    gb_leave(next);
    gbt_check_all_given_back();
}

/* A thread that used up an entry and exited gives the pool its other
 * entries, never that one: the next thread's pages are on other entries. */
static uint32_t spent_entry;

static void *use_up_an_entry_and_exit(void *arg)
{
    (void)arg;
    uint32_t before;
    gb_region *h = gb_enter();
    spent_entry = gbt_entry_of(h);
    gb_leave(h);
    CHECK(entry_after_a_leave_at_generation(GB__GEN_MAX + 1, &before) != spent_entry);
    return NULL;
}

/* A region left on an entry that was used up is named as left, from
 * any thread, as one left on any other entry. */
static gb_region *left_on_a_spent_entry;

static void *leave_at_the_last_generation_and_exit(void *arg)
{
    (void)arg;
    gb_region *r = gbt_at_generation(gb_enter(), GB__GEN_MAX);
    left_on_a_spent_entry = (gb_region *)r->handle;
    gb_leave(left_on_a_spent_entry); /* past the last generation: the entry is used up */
    return NULL;
}

/* The cache off (nothing keeps a page), fn run to its end on a thread of
 * its own, which then exits. */
static void cache_off_then_a_thread_of(void *(*fn)(void *))
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = GB_CACHE_OFF;
    gb_init(&o);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

static void leave_again_on_a_spent_entry(void)
{
    cache_off_then_a_thread_of(leave_at_the_last_generation_and_exit);
    gb_leave(left_on_a_spent_entry);
}

GB_TEST(a_region_left_on_a_used_up_entry_is_named_as_left)
{
    gbt_expect_death(leave_again_on_a_spent_entry, "was already left");
}

GB_TEST(an_entry_used_up_is_not_given_to_another_thread)
{
    cache_off_then_a_thread_of(use_up_an_entry_and_exit);
    /* Pages of this thread's until one is on a second entry: the first
     * comes from the exited thread's pool, the second from the pool too
     * or a new entry, never the used-up one. */
    enum { MANY = 4096 };
    gb_region **hs = malloc(MANY * sizeof *hs);
    CHECK(hs != NULL);
    uint32_t first = 0;
    int n = 0, entries = 0;
    for (; n < MANY && entries < 3; n++) {
        hs[n] = gb_enter();
        uint32_t e = gbt_entry_of(hs[n]);
        CHECK(e != spent_entry);
        if (n == 0 || e != first) {
            entries++;
            first = e;
        }
    }
    CHECK_EQ(entries, 3);
    while (n > 0)
        gb_leave(hs[--n]);
    free(hs);
}

/* A thread uses up its entry while another reads a handle of a region
 * left on it before: the entry's owner turns to used up under the
 * directory's lock, after its floor was written, so the reader, which
 * reads both under the lock, reads the region as freed before, while and
 * after (TSan sees a write of the owner or the floor that the lock does
 * not order). The threads meet through counters, never through time. */
static _Atomic(gb_region *) stale_on_the_entry;
static atomic_bool entry_taken, used_up;
static atomic_int reads_done;

static void *enter_leave_and_exit_on_an_entry(void *arg)
{
    (void)arg;
    gb_region *h = gb_enter();
    gb_leave(h);
    atomic_store(&stale_on_the_entry, h);
    return NULL; /* the entry goes back to the pool */
}

static void *use_up_the_entry_while_it_is_read(void *arg)
{
    (void)arg;
    gb_region *r = gbt_at_generation(gb_enter(), GB__GEN_MAX); /* the pool's entry */
    CHECK_EQ(gbt_entry_of((gb_region *)r->handle), gbt_entry_of(atomic_load(&stale_on_the_entry)));
    atomic_store(&entry_taken, true);
    while (atomic_load(&reads_done) < 100)
        sched_yield();
    gb_leave((gb_region *)r->handle); /* past the last generation: used up */
    atomic_store(&used_up, true);
    return NULL;
}

GB_TEST(threads_share_an_entry_while_it_is_used_up)
{
    cache_off_then_a_thread_of(enter_leave_and_exit_on_an_entry);
    gb_region *h = atomic_load(&stale_on_the_entry);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, use_up_the_entry_while_it_is_read, NULL), 0);
    while (!atomic_load(&entry_taken))
        sched_yield();
    for (int after = 0; after < 100; atomic_fetch_add(&reads_done, 1)) {
        gb_region_info info;
        gb_region_info_get(h, &info);
        CHECK_EQ(info.state, GB_REGION_FREED);
        if (atomic_load(&used_up))
            after++;
    }
    CHECK_EQ(pthread_join(t, NULL), 0);
}

/* A page whose every slot went past the last generation has nothing
 * left to give: emptied, it is not kept as the spare (the next region
 * would find no slot on it) but goes back, with its memory, and its
 * entry is used up. */
GB_TEST(an_emptied_page_whose_every_slot_is_used_up_is_not_kept)
{
    gb_region *h = gb_enter();
    gb__dpage *pg = gb__handle_region("tests/region.c", &gb__self()->mem, h)->page;
    uint32_t cap = pg->cap, e = gbt_entry_of(h);
    gb_leave(h);
    CHECK(gb__self()->mem.dspare == pg); /* kept: it has slots to give */
    gb_region **hs = malloc(cap * sizeof *hs);
    CHECK(hs != NULL);
    for (uint32_t i = 0; i < cap; i++) {
        gb_region *r = gbt_at_generation(gb_enter(), GB__GEN_MAX);
        CHECK(r->page == pg);
        hs[i] = (gb_region *)r->handle;
    }
    while (cap > 0)
        gb_leave(hs[--cap]);
    CHECK(gb__self()->mem.dspare == NULL);
    gb_region *next = gb_enter();
    CHECK(gbt_entry_of(next) != e);
    gb_leave(next);
    free(hs);
    gbt_check_all_given_back(); /* the page too */
}

/* With the cache on, a page emptied by a slot that went past the last
 * generation still has fresh slots: it is kept as the spare, and the next
 * region takes its next fresh slot, on the same entry, though the slot
 * that went past is never used again. */
GB_TEST(an_emptied_page_with_fresh_slots_left_is_kept_though_a_slot_is_used_up)
{
    gb_init(NULL);
    gb_region *r = gbt_at_generation(gb_enter(), GB__GEN_MAX);
    uintptr_t where = r->where;
    gb_leave((gb_region *)r->handle); /* past the last generation */
    gb_region *next = gb_enter();
    CHECK_EQ((uintptr_t)next & (((uintptr_t)1 << GB__H_GEN_SHIFT) - 1), where + 1);
    gb_leave(next);
    gbt_check_all_given_back();
}

/* The one page of a thread's first regions, every slot of it taken once
 * and then freed: emptied, it is kept as the thread's spare (cached) for
 * its next regions, not given back. */
GB_TEST(an_emptied_page_whose_every_slot_was_taken_once_is_kept_as_the_spare)
{
    gb_leave(gb_enter()); /* the runtime initialised: gb__cfg is read */
    size_t cap = (gb__cfg.map_min - offsetof(gb__dpage, slot)) / sizeof(struct gb_region);
    if (cap > ((size_t)1 << GB__H_SLOT_BITS))
        cap = (size_t)1 << GB__H_SLOT_BITS;
    gb_region **r = malloc(cap * sizeof *r);
    CHECK(r != NULL);
    for (size_t i = 0; i < cap; i++)
        r[i] = gb_enter();
    gb_stats s = gbt_stats();
    CHECK_EQ(s.mappings, 1); /* one page holds them all */
    CHECK_EQ(s.mappings_cached, 0);
    for (size_t i = cap; i-- > 0;)
        gb_leave(r[i]);
    s = gbt_stats();
    CHECK_EQ(s.mappings_cached, 1);
    /* The thread's spare, not a block of its cache: its entry stays the
     * page's, and the next gb_enter takes it before any cached block. */
    CHECK(gb__self()->mem.dspare != NULL);
    free(r);
}

static gb_region **pool_handles;
static size_t pool_n;

static void *name_regions(void *arg)
{
    (void)arg;
    enter_name_and_leave(pool_handles, pool_n);
    return NULL;
}

/* A thread's entries go back to a pool at its exit; the next thread takes
 * one of them for each of its pages, never one twice. */
GB_TEST(each_page_of_a_new_thread_takes_its_own_entry_from_the_pool)
{
    pool_n = four_pages_of_regions();
    pool_handles = malloc(pool_n * sizeof *pool_handles);
    CHECK(pool_handles != NULL);
    uint32_t used = 0;
    for (int k = 0; k < 3; k++) {
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, name_regions, NULL), 0);
        CHECK_EQ(pthread_join(t, NULL), 0);
        if (k == 0)
            used = gb__handle_entries_used();
    }
    CHECK(used >= 4);
    CHECK_EQ(gb__handle_entries_used(), used); /* the first thread's entries, from the pool */
    free(pool_handles);
}

static gb_region *left_on_a_thread;
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool holding;

static void *enter_leave_and_exit(void *arg)
{
    (void)arg;
    left_on_a_thread = gb_enter();
    gb_leave(left_on_a_thread);
    return NULL;
}

static void *enter_and_hold(void *arg)
{
    (void)arg;
    gb_enter();
    pthread_mutex_lock(&hold_lock);
    holding = true;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
    for (;;)
        pause(); /* holds its region until the process ends */
    return NULL;
}

/* The handle of an exited thread's region, left, whose directory entry a
 * running thread took from the pool since. */
static void leave_what_an_exited_thread_left(void)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, enter_leave_and_exit, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(pthread_create(&t, NULL, enter_and_hold, NULL), 0);
    pthread_mutex_lock(&hold_lock);
    while (!holding)
        pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    gb_enter();
    gb_leave(left_on_a_thread);
}

/* An entry taken from the pool remembers where its new owner's handles
 * start: one issued before, under the exited owner, names a region that
 * was left, not one of the running thread's. */
GB_TEST(a_handle_from_before_its_entry_changed_threads_names_a_region_left)
{
    gbt_expect_death(leave_what_an_exited_thread_left, "was already left");
}

static atomic_bool cycling;
static atomic_int cycles;

static void *enter_and_leave_one(void *arg)
{
    (void)arg;
    gb_leave(gb_enter());
    return NULL;
}

/* Threads that start, enter and leave a region, and exit, one after the
 * other: each takes the pool's entry and gives it back. */
static void *cycle_threads(void *arg)
{
    (void)arg;
    while (atomic_load(&cycling)) {
        /* Two at once: the first cycle takes an entry never used before. */
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            CHECK_EQ(pthread_create(&t[i], NULL, enter_and_leave_one, NULL), 0);
        for (int i = 0; i < 2; i++)
            CHECK_EQ(pthread_join(t[i], NULL), 0);
        /* Relaxed: no ordering between the cycles and the reader's
         * reads, so that TSan judges the reads by the directory's lock. */
        atomic_fetch_add_explicit(&cycles, 1, memory_order_relaxed);
    }
    return NULL;
}

/* A handle of an exited thread's region, read while other threads take its
 * directory entry and give it back: the entry's owner, base and floor are
 * read under the directory's lock (TSan sees a read without it), and the
 * region reads as freed every time. The count of entries handed out is
 * read under it too. */
GB_TEST(threads_share_the_directory_while_a_left_handle_is_read)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, enter_leave_and_exit, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    atomic_store(&cycling, true);
    CHECK_EQ(pthread_create(&t, NULL, cycle_threads, NULL), 0);
    /* Read for as long as 50 threads take and give back the entry. */
    for (int i = 0; i < 1000 || atomic_load_explicit(&cycles, memory_order_relaxed) < 50; i++) {
        gb_region_info info;
        gb_region_info_get(left_on_a_thread, &info);
        CHECK_EQ(info.state, GB_REGION_FREED);
        CHECK(gb__handle_entries_used() >= 1);
    }
    atomic_store(&cycling, false);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

/* A coroutine given a region its resumer entered. */
typedef struct {
    void (*use)(gb_region *);
    gb_region *r;
    gb_coro *inner;
} ctx_case;

static void use_leave(gb_region *r)
{
    gb_leave(r);
}

static void use_it(void *arg)
{
    ctx_case *k = arg;
    k->use(k->r);
}

static ctx_case k_case;

static void coro_uses_threads_region(void (*use)(gb_region *))
{
    k_case = (ctx_case){.use = use, .r = gb_enter()};
    gb_coro_resume(gb_coro_new(use_it, &k_case, 0));
}

static void coro_leaves_threads_region(void)
{
    coro_uses_threads_region(use_leave);
}

GB_TEST(a_coroutine_leaving_its_resumers_region_stops)
{
    gbt_expect_death(coro_leaves_threads_region,
                     "gb_leave: region");
    gbt_expect_death(coro_leaves_threads_region,
                     "was entered by this thread outside any coroutine, which resumed the running "
                     "coroutine");
    gbt_expect_death(coro_leaves_threads_region, "only the context that entered a region "
                                                 "leaves or resets it");
}

/* The outer coroutine enters a region and resumes the inner one with it. */
static void outer_enters(void *arg)
{
    ctx_case *k = arg;
    k->r = gb_enter();
    gb_coro_resume(gb_coro_new(use_it, k, 0));
}

static void coro_leaves_resumer_coros_region(void)
{
    k_case = (ctx_case){.use = use_leave};
    gb_coro_resume(gb_coro_new(outer_enters, &k_case, 0));
}

GB_TEST(a_coroutine_leaving_its_resuming_coroutines_region_stops)
{
    gbt_expect_death(coro_leaves_resumer_coros_region, "was entered by another coroutine, 0x");
    gbt_expect_death(coro_leaves_resumer_coros_region, ", which resumed the running coroutine");
}

/* A suspended coroutine's region, left by another coroutine and by the
 * thread. */
static void enter_and_yield(void *arg)
{
    *(gb_region **)arg = gb_enter();
    gb_coro_yield();
}

static void suspended_region_left_by(bool by_coroutine)
{
    static gb_region *r;
    gb_coro *a = gb_coro_new(enter_and_yield, &r, 0);
    gb_coro_resume(a);
    if (!by_coroutine)
        gb_leave(r);
    k_case = (ctx_case){.use = use_leave, .r = r};
    gb_coro_resume(gb_coro_new(use_it, &k_case, 0));
}

static void coro_leaves_suspended_coros_region(void)
{
    suspended_region_left_by(true);
}

static void thread_leaves_suspended_coros_region(void)
{
    suspended_region_left_by(false);
}

GB_TEST(leaving_a_suspended_coroutines_region_stops)
{
    gbt_expect_death(coro_leaves_suspended_coros_region,
                     "was entered by another coroutine, 0x");
    gbt_expect_death(coro_leaves_suspended_coros_region,
                     "(suspended; not one that resumed the running coroutine");
    gbt_expect_death(thread_leaves_suspended_coros_region,
                     "was entered by another coroutine, 0x");
    gbt_expect_death(thread_leaves_suspended_coros_region,
                     "(suspended; the caller runs outside any coroutine)");
}

/* Left while a suspended coroutine points into it: retired, and left. */
static void hold_pointer(void *arg)
{
    void *volatile p = arg;
    gb_coro_yield();
    (void)p;
}

static void leave_retired(void)
{
    gb_region *r = gb_enter();
    gb_coro *c = gb_coro_new(hold_pointer, gb_alloc(100), 0);
    gb_coro_resume(c);
    gb_leave(r);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    gb_leave(r);
}

GB_TEST(leaving_a_retired_region_again_stops)
{
    gbt_expect_death(leave_retired, "was already left (it is retired: a suspended coroutine "
                                    "still points into it)");
}

/* --------------------------------------- what stays until a sweep
 *
 * After coroutines were made and freed and every region left, only the
 * block cache (which holds each thread's spare page of region descriptors)
 * and the pooled stacks (emptied: mapped, two mappings each, and the pool's
 * descriptor in bytes_meta) are held; after gb_sweep, nothing. */

static void enter_alloc_yield(void *arg)
{
    (void)arg;
    gb_region *r = gb_enter();
    memset(gb_alloc(50000), 1, 50000);
    gb_coro_yield();
    gb_leave(r);
}

GB_TEST(only_the_cache_and_pooled_stacks_stay_until_a_sweep)
{
    for (int i = 0; i < 20; i++) {
        gb_region *r = gb_enter();
        memset(gb_alloc(100000), 2, 100000);
        gb_coro *c = gb_coro_new(enter_alloc_yield, NULL, 0);
        gb_coro_resume(c);
        if (i % 2)
            gb_coro_resume(c);
        gb_coro_free(c);
        gb_leave(r);
    }
    gb_stats s = gbt_stats();
    size_t stack = (GB_CORO_STACK_DEFAULT + gb__os.page_size - 1) / gb__os.page_size *
                   gb__os.page_size + gb__os.page_size;
    CHECK(s.stacks_pooled >= 1);
    CHECK_EQ(s.bytes_mapped, s.stacks_pooled * stack);
    CHECK_EQ(s.mappings, 2 * s.stacks_pooled);
    CHECK(s.bytes_meta > 0); /* the stack pool */
    CHECK(s.bytes_cached > 0);
    CHECK(s.mappings_cached > 0);
    CHECK_EQ(s.bytes_heap, 0);
    CHECK_EQ(s.regions_live, 0);
    CHECK_EQ(s.regions_retired, 0);
    CHECK_EQ(s.bytes_retired, 0);
    CHECK_EQ(s.blocks_live, 0);
    CHECK_EQ(s.arenas_live, 0);
    CHECK_EQ(s.unmaps_pending, 0);
    CHECK_EQ(s.coros_live, 0);
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.bytes_small, 0);
    gb_sweep();
    gbt_check_all_given_back();
    s = gbt_stats();
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.mappings_cached, 0);
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

/* The bound on old_n is what the region handed out from p on: for the
 * last allocation, its own size rounded to 16; for an earlier one of the
 * current block, everything up to the bump pointer; for one in an older
 * block, the rest of that block (the region does not remember where it
 * stopped there). An old size of exactly that is taken; one byte more
 * stops, though the block has room well past it. The allocations are made
 * here and the wrong calls run in children forked from this state. */
static char *lie_at;
static size_t lie_size;

static void realloc_with_old_size(void)
{
    gb_realloc(lie_at, lie_size, lie_size + 100);
}

GB_TEST(realloc_with_an_old_size_one_past_what_was_handed_out_stops)
{
    gb_region *r = gb_enter();
    char msg[160];

    /* The last allocation of a block with room after it. */
    char *last = gb_alloc(100); /* 112 bytes handed out */
    memset(last, 'l', 100);
    lie_at = last;
    lie_size = 113;
    gbt_expect_death(realloc_with_old_size,
                     "gb_realloc: old size 113 is larger than the allocation at 0x");
    gbt_expect_death(realloc_with_old_size, "(112 bytes)");
    lie_size = 112 + 16;
    gbt_expect_death(realloc_with_old_size, "gb_realloc: old size 128 is larger than the allocation");
    char *q = gb_realloc(last, 112, 200);
    CHECK(q == last); /* grown in place: the block had room */
    for (int i = 0; i < 100; i++)
        CHECK_EQ(q[i], 'l');
    CHECK(gb_alloc(16) == last + 208); /* and still has */

    /* An earlier allocation of the current block: up to the bump pointer. */
    char *early = gb_alloc(100);
    char *after = gb_alloc(50);
    memset(early, 'e', 112);
    memset(after, 'a', 64);
    lie_at = early;
    lie_size = 112 + 64 + 1;
    gbt_expect_death(realloc_with_old_size,
                     "gb_realloc: old size 177 is larger than what region 0x");
    gbt_expect_death(realloc_with_old_size, "on (176 bytes)");
    q = gb_realloc(early, 176, 300);
    CHECK(q != early);
    CHECK(gb_region_of(q) == r);
    for (int i = 0; i < 176; i++)
        CHECK_EQ(q[i], i < 112 ? 'e' : 'a');

    /* An allocation that opens a block the region then moves on from: the
     * rest of that block. */
    gb_region *o = gb_enter();
    char *first = gb_alloc(100);
    memset(first, 'f', 100);
    size_t block = gb_region_bytes(o);
    size_t rest = block - GB__BLOCK_HDR;
    gb_alloc(block); /* does not fit: the next block becomes the current one */
    CHECK(gb_region_bytes(o) > block);
    lie_at = first;
    lie_size = rest + 1;
    snprintf(msg, sizeof msg, "gb_realloc: old size %zu is larger than what region", rest + 1);
    gbt_expect_death(realloc_with_old_size, msg);
    snprintf(msg, sizeof msg, "on (%zu bytes)", rest);
    gbt_expect_death(realloc_with_old_size, msg);
    q = gb_realloc(first, rest, rest + 100);
    CHECK(gb_region_of(q) == o);
    for (int i = 0; i < 100; i++)
        CHECK_EQ(q[i], 'f');
    gb_leave(o);
    gb_leave(r);
    gbt_check_all_given_back();
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

/* A number past the most a setting takes is refused like a word, by its
 * value: GB_STRESS counts at most a billion safepoints. */
static void stress_past_its_most(void)
{
    setenv("GB_STRESS", "1000000001", 1);
    gb_enter();
}

static void stress_at_its_most(void)
{
    setenv("GB_STRESS", "1000000000", 1);
    gb_enter();
}

GB_TEST(a_stress_setting_past_its_most_stops_and_its_most_is_taken)
{
    gbt_expect_death(stress_past_its_most, "GB_STRESS=1000000001: expected a whole number of safepoints");
    CHECK_EQ(gbt_in_child(stress_at_its_most), 0);
}

/* The OS layer's map for the test below: each mapping the runtime asks
 * for lies inside a larger one whose first and last pad bytes are never
 * handed out, so no two chunks of a region abut. The pads stay mapped
 * (untouched, so never resident) until the test's process ends. */
static void *(*real_map)(size_t n, size_t align);

static void *spaced_map(size_t n, size_t align)
{
    size_t pad = align > gb__os.page_size ? align : gb__os.page_size;
    char *p = real_map(n + 2 * pad, align);
    return p ? p + pad : NULL;
}

/* What pins a region to a suspended stack (pin.c) is this answer: every
 * byte of its blocks past their headers and of its arenas is held; the
 * last byte of a header, the byte before each arena, and the byte just
 * past each chunk, which are no chunk's here, are not. A header is the
 * runtime's: no allocation returns it. */
GB_TEST(a_region_holds_exactly_the_bytes_of_its_blocks_and_arenas)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.first_block = 64 * 1024; /* every chunk below is a mapping of its own */
    o.cache_bytes = GB_CACHE_OFF;
    gb_init(&o);
    real_map = gb__os.map;
    gb__os.map = spaced_map;
    gb_region *h = gb_enter();
    memset(gb_alloc(100), 1, 100);
    gb_vec *v = gb_vec_new(sizeof(int));
    for (int i = 0; i < 20000; i++)
        gb_vec_push(v, &i);
    gb_vec_compact(v); /* its elements move to an arena of the region */
    const gb_region *r = gb__handle_region("tests/region.c", &gb__self()->mem, h);
    int blocks = 0, arenas = 0;
    for (const gb__block *b = r->blocks; b; b = b->next, blocks++) {
        const char *base = b->chunk.base, *data = base + GB__BLOCK_HDR, *end = base + b->chunk.size;
        CHECK(gb__region_contains(r, data) && gb__region_contains(r, end - 1));
        CHECK(!gb__region_contains(r, base) && !gb__region_contains(r, data - 1));
        CHECK(!gb__region_contains(r, base - 1) && !gb__region_contains(r, end));
    }
    GB__ARENA_EACH(a, r) {
        const char *base = a->chunk.base, *end = base + a->chunk.size;
        CHECK(gb__region_contains(r, base) && gb__region_contains(r, end - 1));
        CHECK(!gb__region_contains(r, base - 1) && !gb__region_contains(r, end));
        arenas++;
    }
    CHECK(blocks >= 1);
    CHECK_EQ(arenas, 1);
    gb_leave(h);
    gb__os.map = real_map;
}

/* ------------------------------------------------ the environment's words */

static const char *env_var, *env_value;
static const char *(*env_name)(void);
static const char *env_want;

/* In a child: the variable set, the runtime's first use, and the setting
 * in force read back by its name. */
static void first_use_under_env(void)
{
    setenv(env_var, env_value, 1);
    gb_leave(gb_enter());
    const char *got = env_name();
    /* NULL: GB_GROW's default, remap where the OS table has it. */
    const char *want = env_want ? env_want : gb__os.remap ? "remap" : "copy";
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "%s=%s: the setting in force is %s, not %s\n", env_var, env_value, got, want);
        abort();
    }
    exit(0);
}

/* Runs fn in a child, which must exit 0; what names the case if not. */
static void expect_child_passes(void (*fn)(void), const char *what)
{
    char err[4096];
    int status = gbt_in_child_capturing(fn, err, sizeof err);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        gbt_fail(__FILE__, __LINE__, "%s: status %d; stderr:\n%s", what, status, err);
}

static void expect_env_gives(const char *var, const char *value, const char *(*name)(void), const char *want)
{
    char what[128];
    env_var = var, env_value = value, env_name = name, env_want = want;
    snprintf(what, sizeof what, "%s=%s", var, value);
    expect_child_passes(first_use_under_env, what);
}

/* Each word of GB_BLOCKS and GB_GROW means its value, "auto" and an empty
 * variable the default (map; remap where the OS has mremap). */
GB_TEST(each_environment_word_chooses_its_setting)
{
    expect_env_gives("GB_BLOCKS", "heap", gb_blocks_name, "heap");
    expect_env_gives("GB_BLOCKS", "map", gb_blocks_name, "map");
    expect_env_gives("GB_BLOCKS", "auto", gb_blocks_name, "map");
    expect_env_gives("GB_BLOCKS", "", gb_blocks_name, "map");
    expect_env_gives("GB_GROW", "copy", gb_growth_name, "copy");
    expect_env_gives("GB_GROW", "auto", gb_growth_name, NULL);
    expect_env_gives("GB_GROW", "", gb_growth_name, NULL);
}

/* The heap source maps no block, so nothing is populated, whatever the
 * OS can do. */
GB_TEST(the_heap_source_populates_nothing)
{
    expect_env_gives("GB_BLOCKS", "heap", gb_populate_name, "off");
}

static const char *huge_page_word(void)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "%zu", gb_huge_page());
    return buf;
}

static const char *(*read_first)(void);

/* In a child: the setting read as the first call into the runtime, then
 * again after a region; both readings are of the settings in force. */
static void read_before_any_other_call(void)
{
    char first[64];
    snprintf(first, sizeof first, "%s", read_first());
    gb_leave(gb_enter());
    if (strcmp(first, read_first()) != 0) {
        fprintf(stderr, "read first: %s; after a region: %s\n", first, read_first());
        abort();
    }
    exit(0);
}

/* A setting's name read before anything else initialises the runtime, as
 * any first call does: it is never the zeroed configuration's. */
GB_TEST(a_setting_read_first_is_the_one_in_force)
{
    const char *(*readers[])(void) = {gb_blocks_name, gb_growth_name, gb_populate_name, huge_page_word};
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++) {
        char what[32];
        read_first = readers[i];
        snprintf(what, sizeof what, "reader %zu", i);
        expect_child_passes(read_before_any_other_call, what);
    }
}

static gb_growth growth_asked;

/* After the runtime's first use, an OS table without mremap, and gb_init
 * asked for a growth path. */
static void init_growth_without_mremap(void)
{
    gb_leave(gb_enter());
    gb__os.remap = NULL;
    gb_options o;
    gb_options_init(&o);
    o.growth = growth_asked;
    gb_init(&o);
}

static void ask_remap(void)
{
    growth_asked = GB_GROW_REMAP;
    init_growth_without_mremap();
}

static void ask_copy(void)
{
    growth_asked = GB_GROW_COPY;
    init_growth_without_mremap();
}

/* Remap asked of an OS without mremap is refused for that reason; copy is
 * not (here it differs from the settings in force, and that is named). */
GB_TEST(remap_asked_of_an_os_without_mremap_is_refused_and_copy_is_not)
{
    GBT_SKIP_IF(strcmp(gb_growth_name(), "remap") != 0, "this OS layer has no mremap to take away");
    gbt_expect_death(ask_remap, "growth path remap asked for, but");
    gbt_expect_death(ask_copy, "already initialised with growth=remap");
}

/* A coroutine that enters a region of many blocks, small and large (each
 * in the address index: the fine table and the coarse one past what the
 * thread's state holds), and is never resumed again. */
static void enter_many_blocks_and_wait(void *arg)
{
    (void)arg;
    gb_enter();
    for (int i = 0; i < 200; i++)
        CHECK(gb_alloc(32 * 1024) != NULL);
    for (int i = 0; i < 40; i++)
        CHECK(gb_alloc(2 * 1024 * 1024) != NULL);
    gb_coro_yield();
}

static void *orphan_a_region_of_many_blocks(void *arg)
{
    (void)arg;
    gb_coro_resume(gb_coro_new(enter_many_blocks_and_wait, NULL, 0));
    return NULL;
}

/* The exiting thread's address index goes back whole, though its entries
 * name blocks of a region a suspended coroutine still holds: no thread
 * will look them up again. */
GB_TEST(an_exiting_threads_address_index_goes_back_though_it_still_names_blocks)
{
    gb_options o;
    gb_options_init(&o);
    o.first_block = 64 * 1024;
    o.block_cap = 64 * 1024; /* every chained block in the fine table */
    gb_init(&o);
    uint64_t meta = gbt_stats().bytes_meta;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, orphan_a_region_of_many_blocks, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    /* Only the suspended coroutine's own descriptor stays. */
    CHECK_EQ(gbt_stats().bytes_meta, meta + sizeof(struct gb_coro));
}

static void (*first_call)(void);

static void first_use_by_region_of(void)
{
    (void)gb_region_of(&first_call);
}

static void first_call_then_other_settings(void)
{
    first_call();
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = 12345 * 1024;
    gb_init(&o);
}

/* A sweep, a safepoint or an address looked up as the process's first
 * call into the runtime is its first use, as any call is: gb_init asking
 * for other settings after it stops. */
GB_TEST(a_sweep_or_a_safepoint_as_the_first_call_is_the_first_use)
{
    void (*calls[])(void) = {gb_sweep, gb_safepoint, first_use_by_region_of};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        first_call = calls[i];
        gbt_expect_death(first_call_then_other_settings, "set first by the first call into the runtime");
    }
}

/* Under stress n, every n-th safepoint of a thread sweeps, and only it. */
GB_TEST(a_safepoint_sweeps_every_nth_time_under_stress_n)
{
    gb_options o;
    gb_options_init(&o);
    o.stress = 4;
    gb_init(&o);
    uint64_t sweeps = gbt_stats().sweeps;
    for (int i = 0; i < 12; i++)
        gb_safepoint();
    CHECK_EQ(gbt_stats().sweeps - sweeps, 3);
}

/* ------------------------------------------------------------ misuse named */

static void leave_null(void)
{
    gb_leave(NULL);
}

/* A value with a generation, on a directory entry no thread ever took. */
static void leave_on_an_entry_never_taken(void)
{
    gb_leave(gb_enter());
    uintptr_t h = (uintptr_t)1 << GB__H_GEN_SHIFT | (uintptr_t)((1u << GB__H_PAGE_BITS) - 1) << GB__H_SLOT_BITS;
    gb_leave((gb_region *)h);
}

/* Output printed before a misuse, still in stdout's buffer (stdout fully
 * buffered, as under a pipe), and then the misuse. */
static void print_then_leave_null(void)
{
    static char buf[4096];
    dup2(2, 1); /* stdout into what the test reads */
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    printf("printed before the mistake\n");
    leave_null();
}

/* What the program printed before the misuse is kept: stopping flushes
 * stdout before abort() would drop its buffer. */
GB_TEST(what_was_printed_before_a_misuse_is_kept_when_it_stops)
{
    gbt_expect_death(print_then_leave_null, "printed before the mistake");
}

GB_TEST(a_null_or_never_issued_region_handle_is_named)
{
    gbt_expect_death(leave_null, "gb_leave: NULL region");
    gbt_expect_death(leave_on_an_entry_never_taken, "is not a region handle (gb_enter never returned it)");
}

/* The generations a slot has not reached yet, where the decode reads only
 * a floor: above every one issued, none of them names a region left. */
static uintptr_t next_generation(const gb_region *h)
{
    return (uintptr_t)h + ((uintptr_t)1 << GB__H_GEN_SHIFT);
}

/* A slot whose page was given back (the cache off: nothing keeps it): the
 * entry's floor is all that is left of it. */
static void leave_the_next_generation_of_a_page_given_back(void)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = GB_CACHE_OFF;
    gb_init(&o);
    gb_region *h = gb_enter();
    gb_leave(h);
    gb_leave((gb_region *)next_generation(h));
}

/* A slot its page has not handed out yet, at the generation its fresh
 * slots start at. */
static void leave_a_slot_not_handed_out(void)
{
    gb_region *h = gb_enter();
    gb_leave((gb_region *)((uintptr_t)h + 1));
}

/* A slot freed and not taken again, while another region keeps its page:
 * the slot's next generation is not issued until it is taken. */
static void leave_the_next_generation_of_a_free_slot(void)
{
    gb_region *kept = gb_enter();
    gb_region *h = gb_enter();
    gb_leave(h);
    gb_leave((gb_region *)next_generation(h));
    gb_leave(kept);
}

/* A slot of a thread that has exited, whose entry went back to the pool:
 * the entry's floor is all that is left of it. */
static void *enter_and_leave_on_a_thread(void *arg)
{
    (void)arg;
    gb_region *h = gb_enter();
    gb_leave(h);
    return h;
}

static gb_region *left_on_an_exited_thread(void)
{
    pthread_t t;
    void *h;
    CHECK_EQ(pthread_create(&t, NULL, enter_and_leave_on_a_thread, NULL), 0);
    CHECK_EQ(pthread_join(t, &h), 0);
    return h;
}

static void leave_the_next_generation_of_an_exited_threads_slot(void)
{
    gb_leave((gb_region *)next_generation(left_on_an_exited_thread()));
}

static void leave_again_on_an_exited_threads_slot(void)
{
    gb_leave(left_on_an_exited_thread());
}

GB_TEST(a_generation_never_issued_is_no_region_left)
{
    gbt_expect_death(leave_the_next_generation_of_a_free_slot, "is not a region handle (gb_enter never returned it)");
    gbt_expect_death(leave_the_next_generation_of_an_exited_threads_slot,
                     "is not a region handle (gb_enter never returned it)");
    gbt_expect_death(leave_again_on_an_exited_threads_slot, "was already left");
    gbt_expect_death(leave_the_next_generation_of_a_page_given_back,
                     "is not a region handle (gb_enter never returned it)");
    gbt_expect_death(leave_a_slot_not_handed_out, "is not a region handle (gb_enter never returned it)");
}

static gb_options bad;

static void init_bad(void)
{
    gb_init(&bad);
}

/* Each enum option holding no value of its type stops gb_init, naming
 * it (every option of the table: tests/options.c); so do a first block
 * under 256 bytes and one past the cap. */
GB_TEST(an_option_outside_its_type_stops_gb_init_naming_it)
{
    gb_options_init(&bad);
    bad.blocks = (gb_blocks)77;
    gbt_expect_death(init_bad, "gb_init: blocks=77 is not a gb_blocks value");
    gb_options_init(&bad);
    bad.first_block = 255;
    gbt_expect_death(init_bad, "gb_init: first_block (255) must be at least 256");
    gb_options_init(&bad);
    bad.first_block = 64 * 1024;
    bad.block_cap = 32 * 1024;
    gbt_expect_death(init_bad, "gb_init: first_block (65536) must be at least 256 and at most block_cap (32768)");
}

/* The least first block there is, 256 bytes, is taken. */
GB_TEST(a_first_block_of_256_bytes_is_taken)
{
    gb_options o;
    gb_options_init(&o);
    o.first_block = 256;
    gb_init(&o);
    gb_region *r = gb_enter();
    memset(gb_alloc(100), 1, 100);
    gb_leave(r);
}

/* ------------------------------------------------------ the OS layer's reads */

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Initialising reads /proc and /sys (the mapping limit, the huge page
 * mode and size), and the resident size is read from /proc: every file
 * opened is closed again. */
GB_TEST(the_runtime_keeps_no_file_open_once_it_has_read_the_os)
{
    GBT_SKIP_IF(open_fds() < 0, "no /proc/self/fd to count open files by");
    int before = open_fds();
    gb_leave(gb_enter());
    gb_resident r;
    CHECK_EQ(gb_resident_get(&r), 0);
    CHECK_EQ(open_fds(), before);
}

/* Linux from 5.14 has MADV_POPULATE_WRITE, and the OS layer finds it. */
GB_TEST(the_linux_layer_finds_populate_on_a_kernel_that_has_it)
{
    gb_leave(gb_enter());
    GBT_SKIP_IF(strcmp(gb__os.name, "linux") != 0, "not the Linux OS layer");
    GBT_SKIP_IF(GBT_EMULATED, "qemu-user answers for the host's kernel");
    struct utsname u;
    CHECK_EQ(uname(&u), 0);
    int major = 0, minor = 0;
    CHECK_EQ(sscanf(u.release, "%d.%d", &major, &minor), 2);
    bool has = major > 5 || (major == 5 && minor >= 14);
    CHECK_EQ(gb__os.populate != NULL, has);
}

/* The huge page mode the OS layer reads is the bracketed word of the
 * kernel's file, and a mode that hands out huge pages gives a size. */
GB_TEST(the_linux_layer_reads_the_huge_page_mode_the_kernel_says)
{
    gb_leave(gb_enter());
    GBT_SKIP_IF(strcmp(gb__os.name, "linux") != 0, "not the Linux OS layer");
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) {
        CHECK(strcmp(gb__os.huge_mode, "none") == 0);
        CHECK_EQ(gb__os.huge_page, 0);
        return;
    }
    char line[128] = "", want[32] = "";
    CHECK(fgets(line, sizeof line, f) != NULL);
    fclose(f);
    const char *open = strchr(line, '[');
    CHECK(open != NULL && sscanf(open, "[%31[^]]]", want) == 1);
    fprintf(stderr, "kernel: %s", line);
    CHECK(strcmp(gb__os.huge_mode, want) == 0);
    bool hands_out = strcmp(want, "always") == 0 || strcmp(want, "madvise") == 0;
    CHECK_EQ(gb__os.huge_page != 0, hands_out);
}
