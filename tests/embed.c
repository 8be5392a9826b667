/* embed.c -- the calls an embedder needs: allocation in a named region,
 * asking what a region holds and which region holds a pointer, resetting a
 * region in a loop, allocation by a coroutine into its resumer's region,
 * the resident peak, and the misuse of each.
 */
#include "common.h"
#include "region.h"
#include "scenarios.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>

static gb_region_info info_of(const gb_region *r)
{
    gb_region_info i;
    gb_region_info_get(r, &i);
    return i;
}

/* ------------------------------------------------ allocation in a region */

/* An interpreter's allocator bound to its region, while the host enters a
 * scratch region around the call: growth stays in place, in its region. */
GB_TEST(realloc_in_grows_in_place_in_an_outer_region)
{
    gb_region *interp = gb_enter();
    char *p = gb_alloc(100);
    memset(p, 'a', 100);
    gb_region *scratch = gb_enter();
    char *tmp = gb_alloc(64);
    char *q = gb_realloc_in(interp, p, 100, 300);
    CHECK(q == p); /* the last allocation of interp grows where it is */
    CHECK(gb_region_of(q) == interp);
    CHECK(gb_region_of(tmp) == scratch);
    gb_leave(scratch);
    for (int i = 0; i < 100; i++)
        CHECK_EQ(q[i], 'a');
    gb_leave(interp);
    gbt_check_all_given_back();
}

/* gb_realloc of an outer region's allocation resizes it in that region. */
GB_TEST(realloc_keeps_an_outer_allocation_in_its_region)
{
    gb_region *outer = gb_enter();
    char *a = gb_alloc(32);
    char *b = gb_alloc(32);
    memset(a, 'x', 32);
    gb_region *inner = gb_enter();
    char *c = gb_realloc(a, 32, 5000); /* not the last of outer: moves, in outer */
    CHECK(c != a);
    CHECK(gb_region_of(c) == outer);
    for (int i = 0; i < 32; i++)
        CHECK_EQ(c[i], 'x');
    char *d = gb_realloc(c, 5000, 6000); /* now the last of outer: in place */
    CHECK(d == c);
    gb_leave(inner);
    CHECK(gb_region_of(b) == outer);
    gb_leave(outer);
    gbt_check_all_given_back();
}

GB_TEST(calloc_in_zeroes_in_the_named_region)
{
    gb_region *r = gb_enter();
    unsigned char *junk = gb_alloc(4096);
    memset(junk, 0xff, 4096);
    gb_realloc(junk, 4096, 0); /* the bump pointer goes back over the junk */
    gb_region *inner = gb_enter();
    unsigned char *z = gb_calloc_in(r, 512, 8);
    CHECK(gb_region_of(z) == r);
    for (int i = 0; i < 4096; i++)
        CHECK_EQ(z[i], 0);
    gb_leave(inner);
    gb_leave(r);
    gbt_check_all_given_back();
}

static void calloc_in_overflows(void)
{
    gb_region *r = gb_enter();
    gb_calloc_in(r, SIZE_MAX / 2, 4);
}

static void realloc_of_malloc_memory(void)
{
    gb_enter();
    void *m = malloc(16);
    gb_realloc(m, 16, 32);
}

static void realloc_in_of_another_regions_pointer(void)
{
    gb_region *a = gb_enter();
    gb_region *b = gb_enter();
    void *p = gb_alloc(16);
    gb_alloc(16);
    gb_realloc_in(a, p, 16, 32);
    (void)b;
}

static void realloc_with_an_old_size_past_the_region(void)
{
    gb_enter();
    void *x = gb_alloc(64);
    gb_alloc(64);
    gb_realloc(x, 1 << 20, 2 << 20);
}

static void realloc_of_a_left_regions_pointer(void)
{
    gb_region *keep = gb_enter();
    gb_region *r = gb_enter();
    void *p = gb_alloc(64);
    gb_alloc(64);
    gb_leave(r);
    gb_realloc(p, 64, 128);
    (void)keep;
}

GB_TEST(misused_allocation_calls_stop_naming_the_mistake)
{
    gbt_expect_death(calloc_in_overflows, "gb_calloc_in: size overflows");
    gbt_expect_death(realloc_of_malloc_memory, "gb_realloc: 0x");
    gbt_expect_death(realloc_of_malloc_memory,
                     "is in no live region of the running context or of one that resumed it");
    gbt_expect_death(realloc_in_of_another_regions_pointer,
                     "gb_realloc_in: 0x");
    gbt_expect_death(realloc_in_of_another_regions_pointer, "is not an allocation of region");
    gbt_expect_death(realloc_with_an_old_size_past_the_region,
                     "gb_realloc: old size 1048576 is larger than what region");
    gbt_expect_death(realloc_of_a_left_regions_pointer, "is in no live region");
}

/* ----------------------------------------------------- asking a region */

GB_TEST(region_of_tells_region_memory_from_malloc_memory)
{
    CHECK(gb_region_of(NULL) == NULL);
    void *m = malloc(64);
    gb_region *r = gb_enter();
    char *p = gb_alloc(100);
    char *big = gb_alloc(3 << 20); /* a solo block */
    gb_map *map = gb_map_new();
    for (uint64_t k = 0; k < 1000; k++)
        gb_map_put(map, k, k);
    gb_map_compact(map);
    CHECK(gb_map_arena_bytes(map) > 0);
    CHECK(gb_region_of(m) == NULL);
    CHECK(gb_region_of(p) == r);
    CHECK(gb_region_of(p + 99) == r);
    CHECK(gb_region_of(big + (3 << 20) - 1) == r);
    gb_region *inner = gb_enter();
    char *q = gb_alloc(8);
    CHECK(gb_region_of(q) == inner);
    CHECK(gb_region_of(p) == r);
    gb_leave(inner);
    gb_leave(r);
    CHECK(gb_region_of(p) == NULL);
    free(m);
    gbt_check_all_given_back();
}

static void hold_and_yield(void *arg)
{
    volatile uintptr_t held = (uintptr_t)arg;
    gb_coro_yield();
    (void)held;
}

GB_TEST(info_says_live_retired_or_freed_and_what_pins_it)
{
    gb_region *outer = gb_enter();
    gb_region *r = gb_enter();
    char *p = gb_alloc(200000);
    gb_region_info i = info_of(r);
    CHECK_EQ(i.state, GB_REGION_LIVE);
    CHECK_EQ(i.depth, 1);
    CHECK_EQ(i.bytes, gb_region_bytes(r));
    CHECK(i.blocks >= 1);
    CHECK(i.entered_by == NULL);
    CHECK_EQ(info_of(outer).depth, 2);
    gb_coro *c = gb_coro_new(hold_and_yield, p + 10, 0);
    gb_coro_resume(c);
    gb_leave(r);
    i = info_of(r);
    CHECK_EQ(i.state, GB_REGION_RETIRED);
    CHECK(i.pinned_by == c);
    CHECK(i.bytes >= 200000);
    CHECK(gb_region_of(p) == r); /* retired memory is still the region's */
    CHECK(!gb_coro_resume(c));  /* finishes: nothing pins r now */
    CHECK_EQ(info_of(r).state, GB_REGION_FREED);
    gb_coro_free(c);
    gb_leave(outer);
    CHECK_EQ(info_of(outer).state, GB_REGION_FREED);
    gb_sweep();
    gbt_check_all_given_back();
}

static void enter_in(void *arg)
{
    gb_region **out = arg;
    out[0] = gb_enter();
    out[1] = gb_alloc(16);
    gb_coro_yield();
    gb_leave(out[0]);
}

GB_TEST(info_names_the_coroutine_a_region_was_entered_in)
{
    gb_region *got[2];
    gb_coro *c = gb_coro_new(enter_in, got, 0);
    gb_coro_resume(c);
    gb_region_info i = info_of(got[0]);
    CHECK_EQ(i.state, GB_REGION_LIVE);
    CHECK(i.entered_by == c);
    CHECK_EQ(i.depth, 1);
    CHECK(gb_region_of(got[1]) == got[0]); /* a suspended coroutine's region */
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(info_of(got[0]).state, GB_REGION_FREED);
    gb_coro_free(c);
    gb_sweep();
    gbt_check_all_given_back();
}

static void info_of_bogus(void)
{
    gb_region_info i;
    gb_region_info_get((gb_region *)(uintptr_t)0x1234, &i);
}

/* Every field of a freed region's info is zero but its state, whatever
 * the region held while it lived and whatever *out held before. */
static void check_freed_info(const gb_region *r)
{
    gb_region_info i;
    memset(&i, 0xaa, sizeof i);
    gb_region_info_get(r, &i);
    CHECK_EQ(i.state, GB_REGION_FREED);
    CHECK_EQ(i.bytes, 0);
    CHECK_EQ(i.blocks, 0);
    CHECK_EQ(i.kept_bytes, 0);
    CHECK_EQ(i.kept_blocks, 0);
    CHECK_EQ(i.arenas, 0);
    CHECK_EQ(i.arena_bytes, 0);
    CHECK_EQ(i.depth, 0);
    CHECK(i.entered_by == NULL);
    CHECK(i.pinned_by == NULL);
}

/* A region that held blocks, kept blocks and an arena, one level out. */
static gb_region *enter_a_full_region(void)
{
    gb_region *r = gb_enter();
    memset(gb_alloc(100000), 1, 100000);
    memset(gb_alloc(300000), 2, 300000);
    gb_region_reset(r, SIZE_MAX);
    memset(gb_alloc(50), 3, 50); /* takes the newer block; the older stays kept */
    gb_vec *v = gb_vec_new(8);
    for (uint64_t k = 0; k < 1000; k++)
        gb_vec_push(v, &k);
    gb_vec_compact(v);
    return r;
}

static void enter_full_and_yield(void *arg)
{
    gb_region **out = arg;
    *out = enter_a_full_region();
    gb_coro_yield();
    gb_leave(*out);
}

GB_TEST(info_of_a_freed_region_is_zero_but_its_state)
{
    /* Entered on the thread's stack. */
    gb_region *r = enter_a_full_region();
    gb_region *inner = gb_enter();
    gb_region_info i = info_of(r);
    CHECK_EQ(i.state, GB_REGION_LIVE);
    CHECK(i.bytes > 0 && i.blocks > 0 && i.kept_bytes > 0 && i.kept_blocks > 0);
    CHECK(i.arenas == 1 && i.arena_bytes > 0);
    CHECK_EQ(i.depth, 2);
    gb_leave(inner);
    gb_leave(r);
    check_freed_info(r);
    check_freed_info(inner);

    /* Entered by a coroutine, left when it finished. */
    gb_region *in_coro = NULL;
    gb_coro *c = gb_coro_new(enter_full_and_yield, &in_coro, 0);
    CHECK(gb_coro_resume(c));
    CHECK(info_of(in_coro).entered_by == c);
    CHECK(!gb_coro_resume(c));
    check_freed_info(in_coro);
    gb_coro_free(c);

    /* Retired while a suspended coroutine pointed into it, then freed. */
    gb_region *pinned = enter_a_full_region();
    gb_coro *h = gb_coro_new(hold_and_yield, gb_alloc(64), 0);
    gb_coro_resume(h);
    gb_leave(pinned);
    CHECK_EQ(info_of(pinned).state, GB_REGION_RETIRED);
    CHECK(info_of(pinned).pinned_by == h);
    CHECK(!gb_coro_resume(h));
    check_freed_info(pinned);
    gb_coro_free(h);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(info_of_a_bogus_handle_stops)
{
    gbt_expect_death(info_of_bogus, "gb_region_info_get: 0x1234 is not a region handle");
}

/* ------------------------------------------------------------- resetting */

static long minor_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* Fills n bytes of the innermost region in 64 KiB pieces, each written. */
static void fill(size_t n)
{
    for (size_t done = 0; done < n; done += 65536)
        memset(gb_alloc(65536), 0x5a, 65536);
}

/* A request loop: a region reset per request keeps its blocks, so the
 * second request takes no new mappings and few page faults, and a reset
 * that keeps nothing gives everything back. Two readings of one run: the
 * counters and the fault count. */
GB_TEST(reset_keeps_at_most_its_bound_and_reuses_it)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = GB_CACHE_OFF; /* only the reset keeps anything */
    gb_init(&o);
    enum { REQ = 4 << 20 };
    gb_region *r = gb_enter();
    fill(REQ);
    size_t held = gb_region_bytes(r);
    gb_region_reset(r, 16 << 20);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.resets, 1); /* (and 3 by the end) */
    CHECK_EQ(s.bytes_kept, held); /* all of it fits the bound */
    CHECK_EQ(gb_region_bytes(r), held);
    CHECK_EQ(info_of(r).kept_bytes, held);
    CHECK_EQ(info_of(r).bytes, 0);
    size_t mappings = s.mappings;
    fill(REQ);
    s = gbt_stats();
    CHECK_EQ(s.mappings, mappings); /* no new block */
    CHECK(s.bytes_kept < held);     /* taken back into use */
    /* The second request used the kept blocks in another order, touching
     * the tails the first left untouched; from the third on, a request
     * finds every page it touches resident. */
    gb_region_reset(r, 16 << 20);
    long before = minor_faults();
    fill(REQ);
    long kept_faults = minor_faults() - before;
    CHECK_EQ(gbt_stats().mappings, mappings);
    /* A bound below one block keeps nothing; the next request faults its
     * pages in again. */
    gb_region_reset(r, 1000);
    s = gbt_stats();
    CHECK_EQ(s.bytes_kept, 0);
    CHECK_EQ(gb_region_bytes(r), 0);
    CHECK_EQ(s.blocks_live, 0);
    before = minor_faults();
    fill(REQ);
    long fresh_faults = minor_faults() - before;
    /* 4 MiB is 1,024 pages of 4 KiB (256 of 16 KiB): kept blocks fault a
     * few times at most, fresh ones once a page. */
    CHECK_LT(kept_faults * 8, fresh_faults);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(reset_bound_keeps_the_newest_blocks_first)
{
    gb_region *r = gb_enter();
    fill(6 << 20); /* blocks up to the 1 MiB cap */
    gb_region_reset(r, 2 << 20);
    gb_stats s = gbt_stats();
    CHECK(s.bytes_kept <= (size_t)2 << 20);
    CHECK(s.bytes_kept >= (size_t)1 << 20); /* at least one capped block */
    gb_region_reset(r, 0);
    CHECK_EQ(gbt_stats().bytes_kept, 0);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

static volatile unsigned char *kept_byte;

static void touch_kept(void)
{
    kept_byte[0] = 1;
    exit(10); /* not reported */
}

GB_TEST(touching_a_kept_block_is_reported_under_asan)
{
    GBT_SKIP_IF(!GBT_SANITIZED || GBT_TSAN, "only an ASan build poisons kept blocks");
    gb_region *r = gb_enter();
    unsigned char *p = gb_alloc(100000);
    memset(p, 1, 100000);
    gb_region_reset(r, 1 << 20);
    CHECK(gbt_stats().bytes_kept > 0);
    kept_byte = p + 5000;
    char out[8192];
    int status = gbt_in_child_capturing(touch_kept, out, sizeof out);
    if (!strstr(out, "use-after-poison"))
        fprintf(stderr, "the child said:\n%s\n", out);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 10));
    CHECK(strstr(out, "use-after-poison") != NULL);
    gb_leave(r);
}

static void check_and_finish(void *arg)
{
    volatile unsigned char *p = arg;
    gb_coro_yield();
    for (int i = 0; i < 100000; i++)
        if (p[i] != 0x77)
            abort();
}

/* A suspended coroutine points into the region being reset: its contents
 * are retired, not kept or reused, and the coroutine reads them intact. */
GB_TEST(reset_of_a_pinned_region_retires_its_contents)
{
    gb_region *r = gb_enter();
    unsigned char *p = gb_alloc(100000);
    memset(p, 0x77, 100000);
    gb_coro *c = gb_coro_new(check_and_finish, p, 0);
    gb_coro_resume(c);
    gb_region_reset(r, 1 << 20);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_retired, 1);
    CHECK_EQ(s.bytes_kept, 0);
    CHECK_EQ(gb_region_bytes(r), 0);
    CHECK(gb_region_of(p) != NULL && gb_region_of(p) != r);
    fill(1 << 20); /* new blocks, not the retired ones */
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(gbt_stats().regions_retired, 0);
    gb_coro_free(c);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

/* A region left while a suspended coroutine points into it is retired,
 * and waits for the coroutine; the blocks a reset kept in it hold nothing
 * and go back at the leave, not with the retired region. */
GB_TEST(blocks_a_reset_kept_go_back_when_their_region_is_left_retired)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = GB_CACHE_OFF;
    gb_init(&o);
    gb_region *r = gb_enter();
    fill(4 << 20);
    gb_region_reset(r, 16 << 20);
    unsigned char *p = gb_alloc(1000); /* one kept block taken back */
    memset(p, 0x77, 1000);
    size_t kept = gbt_stats().bytes_kept;
    CHECK(kept > 0);
    gb_coro *c = gb_coro_new(gbs_hold_once, p, 0);
    gb_coro_resume(c);
    gb_leave(r);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_retired, 1);
    CHECK_EQ(s.bytes_kept, 0);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    gb_sweep();
    gbt_check_all_given_back();
}

/* A block kept from one allocation over the block cap (a solo block),
 * taken back for small ones: it is a chained block now, where the last
 * allocation grows in place after the others, not a solo block's one
 * allocation at its start. */
GB_TEST(a_kept_solo_block_taken_back_for_small_allocations_chains_them)
{
    gb_options o;
    gb_options_init(&o);
    o.block_cap = 1 << 20;
    gb_init(&o);
    gb_region *r = gb_enter();
    gb_alloc(3 << 20);
    gb_region_reset(r, 16 << 20);
    CHECK_EQ(gbt_stats().bytes_kept, gb_region_bytes(r));
    char *p = gb_alloc(100), *q = gb_alloc(100);
    CHECK_EQ(gbt_stats().bytes_kept, 0); /* the kept block is in use again */
    CHECK(q == p + 112);
    memset(q, 0x3c, 100);
    char *q2 = gb_realloc(q, 100, 200);
    CHECK(q2 == q);
    CHECK_EQ(q2[99], 0x3c);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* A reset that keeps nothing starts the region over: its next block is
 * the first block's size again, not the size its growth had reached. */
GB_TEST(a_region_reset_to_nothing_grows_again_from_the_first_block)
{
    gbt_init_heap_blocks(4096, 1 << 20);
    gb_region *r = gb_enter();
    fill(4 << 20);
    gb_region_reset(r, 0);
    CHECK_EQ(gb_region_bytes(r), 0);
    gb_alloc(100);
    CHECK_EQ(gb_region_bytes(r), 4096);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(reset_closes_the_containers_it_holds)
{
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(8);
    for (uint64_t i = 0; i < 10000; i++)
        gb_vec_push(v, &i);
    gb_vec_compact(v);
    CHECK_EQ(gbt_stats().arenas_live, 1);
    gb_region_reset(r, 0);
    CHECK_EQ(gbt_stats().arenas_live, 0);
    gb_leave(r);
    gbt_check_all_given_back();
}

static void reset_not_innermost(void)
{
    gb_region *r = gb_enter();
    gb_enter();
    gb_region_reset(r, 0);
}

static void reset_left(void)
{
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_region_reset(r, 0);
}

GB_TEST(reset_misuse_stops)
{
    gbt_expect_death(reset_not_innermost, "gb_region_reset: region 0x");
    gbt_expect_death(reset_not_innermost, "is not the innermost region (1 regions entered");
    gbt_expect_death(reset_left, "gb_region_reset: region 0x");
    gbt_expect_death(reset_left, "was already left");
}

/* A reset keeps r's one block, of `kept` bytes, whose first allocation was
 * p0 (just past the block's header); the next allocation, of n bytes,
 * must take that block only when n fits what follows the header, and
 * land wholly inside a block of r either way. */
static void check_one_allocation_after_reset(gb_region *r, char *p0, size_t kept, size_t n)
{
    size_t usable = kept - GB__BLOCK_HDR;
    char *block_end = p0 + usable;
    bool fits = ((n + 15) & ~(size_t)15) <= usable;
    char *p = gb_alloc(n);
    CHECK(gb_region_of(p) == r);
    CHECK(gb_region_of(p + n - 1) == r);
    gb_region_info i = info_of(r);
    CHECK_EQ(i.blocks, 1);
    if (fits) {
        CHECK(p == p0); /* the kept block, taken again */
        CHECK(p + n <= block_end);
        CHECK_EQ(i.bytes, kept);
        CHECK_EQ(i.kept_bytes, 0);
        CHECK_EQ(gbt_stats().bytes_kept, 0);
        CHECK_EQ(gb_region_bytes(r), kept);
    } else {
        /* A block of its own: the kept one stays kept, untouched. */
        CHECK(p + n <= p0 - GB__BLOCK_HDR || p >= block_end);
        CHECK(i.bytes >= n + GB__BLOCK_HDR);
        CHECK_EQ(i.kept_bytes, kept);
        CHECK_EQ(gbt_stats().bytes_kept, kept);
        CHECK_EQ(gb_region_bytes(r), i.bytes + kept);
    }
    memset(p, 0xc3, n);
    CHECK_EQ((unsigned char)p[n - 1], 0xc3);
}

/* For each size about a kept block's size less its header: a region whose
 * one block was made for `first` bytes, reset keeping it, then one
 * allocation of that size. */
static void allocations_about_a_kept_blocks_size(size_t first)
{
    for (int k = 0; k < 9; k++) {
        gb_region *r = gb_enter();
        char *p0 = gb_alloc(first);
        CHECK_EQ(info_of(r).blocks, 1);
        size_t kept = gb_region_bytes(r);
        /* The block's header is the region's too. */
        CHECK(gb_region_of(p0 - GB__BLOCK_HDR) == r);
        gb_region_reset(r, SIZE_MAX);
        CHECK_EQ(info_of(r).kept_bytes, kept);
        size_t usable = kept - GB__BLOCK_HDR;
        const size_t n[9] = {usable - GB__BLOCK_HDR - 1, usable - 16, usable - 1, usable,
                             usable + 1, usable + 16, kept - 1, kept, kept + 1};
        check_one_allocation_after_reset(r, p0, kept, n[k]);
        gb_leave(r);
    }
}

GB_TEST(an_allocation_about_a_kept_blocks_size_lands_wholly_inside_the_region)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = GB_CACHE_OFF; /* every block is fresh, of its class's size */
    o.block_cap = (size_t)1 << 20;
    gb_init(&o);
    allocations_about_a_kept_blocks_size(100000);        /* a chained block */
    allocations_about_a_kept_blocks_size((size_t)3 << 20); /* a solo block, over the cap */
    gbt_check_all_given_back();
}

/* ----------------------------------------- a coroutine and its resumer */

typedef struct gen_case {
    gb_region *into;
    char *value;
} gen_case;

/* A generator: each value goes into the region of whoever resumed it. */
static void generator(void *arg)
{
    gen_case *g = arg;
    for (int i = 0; i < 3; i++) {
        g->value = gb_alloc_in(g->into, 32);
        memset(g->value, 'a' + i, 32);
        gb_coro_yield();
    }
    /* Still holding the last value while the resumer leaves its region:
     * the region is retired, and the value is read back intact. */
    char *last = g->value;
    gb_coro_yield();
    for (int i = 0; i < 32; i++)
        if (last[i] != 'c')
            abort();
}

GB_TEST(a_coroutine_allocates_into_its_resumers_region)
{
    gen_case g = {0};
    gb_region *r = gb_enter();
    g.into = r;
    gb_coro *c = gb_coro_new(generator, &g, 0);
    for (int i = 0; i < 3; i++) {
        CHECK(gb_coro_resume(c));
        CHECK(gb_region_of(g.value) == r);
        CHECK_EQ(g.value[0], 'a' + i);
    }
    CHECK(gb_coro_resume(c));
    gb_leave(r);
    CHECK_EQ(info_of(r).state, GB_REGION_RETIRED);
    CHECK(info_of(r).pinned_by == c);
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(info_of(r).state, GB_REGION_FREED);
    gb_coro_free(c);
    gb_sweep();
    gbt_check_all_given_back();
}

typedef struct nest_case {
    gb_region *thread_region, *outer_region;
    char *a, *b;
} nest_case;

static void inner_allocates(void *arg)
{
    nest_case *k = arg;
    k->a = gb_alloc_in(k->thread_region, 16);
    k->b = gb_calloc_in(k->outer_region, 2, 8);
    k->b = gb_realloc_in(k->outer_region, k->b, 16, 64);
}

static void outer_coroutine(void *arg)
{
    nest_case *k = arg;
    k->outer_region = gb_enter();
    gb_coro *inner = gb_coro_new(inner_allocates, k, 0);
    gb_coro_resume(inner);
    gb_coro_free(inner);
    if (gb_region_of(k->b) != k->outer_region)
        abort();
    gb_leave(k->outer_region);
}

/* Through two levels: the inner coroutine allocates in the outer
 * coroutine's region and in the thread's. */
GB_TEST(a_coroutine_allocates_into_every_resumers_region)
{
    nest_case k = {0};
    k.thread_region = gb_enter();
    gb_coro *outer = gb_coro_new(outer_coroutine, &k, 0);
    CHECK(!gb_coro_resume(outer));
    CHECK(gb_region_of(k.a) == k.thread_region);
    gb_coro_free(outer);
    gb_leave(k.thread_region);
    gb_sweep();
    gbt_check_all_given_back();
}

/* gb_realloc, by a coroutine B that A resumed, which the thread resumed,
 * of allocations B made in the thread's region (two levels up) and in A's
 * (one level up): each is resized in the region that holds it, in place
 * when it is that region's last allocation and copied there when it is
 * not, whether B has a region of its own entered or none. */
typedef struct chain_case {
    bool b_enters;              /* B enters a region of its own first */
    gb_region *thread_region, *a_region;
    size_t b_bytes;             /* bytes of B's own region, before and after */
    int failed;                 /* the line of a failed check in B, or 0 */
} chain_case;

#define CHAIN_CHECK(k, cond)                                                 \
    do {                                                                     \
        if (!(cond) && !(k)->failed)                                         \
            (k)->failed = __LINE__;                                          \
    } while (0)

/* Resizes, from B, an allocation B makes in region `in`. */
static void resize_in_a_resumers_region(chain_case *k, gb_region *in, char fill_with)
{
    char *p = gb_alloc_in(in, 100);
    memset(p, fill_with, 100);
    char *q = gb_realloc(p, 100, 1000); /* the last of `in`: in place */
    CHAIN_CHECK(k, q == p);
    CHAIN_CHECK(k, gb_region_of(q) == in);
    memset(q + 100, fill_with, 900);
    gb_alloc_in(in, 16); /* q is no longer the last */
    char *m = gb_realloc(q, 1000, 50000);
    CHAIN_CHECK(k, m != q);
    CHAIN_CHECK(k, gb_region_of(m) == in);
    CHAIN_CHECK(k, gb_region_of(m + 49999) == in);
    for (int i = 0; i < 1000; i++)
        CHAIN_CHECK(k, m[i] == fill_with);
}

static void coroutine_b(void *arg)
{
    chain_case *k = arg;
    gb_region *own = NULL;
    if (k->b_enters) {
        own = gb_enter();
        memset(gb_alloc(64), 0, 64); /* its innermost region has a last allocation */
        k->b_bytes = gb_region_bytes(own);
    }
    resize_in_a_resumers_region(k, k->thread_region, 't');
    resize_in_a_resumers_region(k, k->a_region, 'a');
    if (own) {
        /* Nothing went into B's own region. */
        CHAIN_CHECK(k, gb_region_bytes(own) == k->b_bytes);
        gb_leave(own);
    }
}

static void coroutine_a(void *arg)
{
    chain_case *k = arg;
    k->a_region = gb_enter();
    gb_coro *b = gb_coro_new(coroutine_b, k, 0);
    gb_coro_resume(b);
    gb_coro_free(b);
    gb_leave(k->a_region);
}

static void resize_from_two_levels_down(bool b_enters)
{
    chain_case k = {.b_enters = b_enters};
    k.thread_region = gb_enter();
    gb_coro *a = gb_coro_new(coroutine_a, &k, 0);
    CHECK(!gb_coro_resume(a));
    gb_coro_free(a);
    if (k.failed)
        gbt_fail(__FILE__, k.failed, "check failed in coroutine B (b_enters %d)", b_enters);
    CHECK(gb_region_bytes(k.thread_region) > 50000);
    gb_leave(k.thread_region);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(realloc_resizes_in_a_resumers_region_from_a_coroutine_with_a_region)
{
    resize_from_two_levels_down(true);
}

/* The header promises the same with no region entered in the coroutine:
 * p's region is a resumer's, and the innermost is not needed to find it. */
GB_TEST(realloc_resizes_in_a_resumers_region_from_a_coroutine_without_one)
{
    resize_from_two_levels_down(false);
}

/* With no region of its own, gb_realloc still names each mistake: p in no
 * region it may use, and p == NULL, which allocates as gb_alloc would. */
static void realloc_malloc_memory_in(void *arg)
{
    (void)arg;
    gb_realloc(malloc(16), 16, 32);
}

static void realloc_null_in(void *arg)
{
    (void)arg;
    gb_realloc(NULL, 0, 32);
}

static void realloc_left_memory_in(void *arg)
{
    gb_realloc(arg, 64, 128);
}

static void coroutine_without_a_region_does(gb_coro_fn fn)
{
    gb_region *r = gb_enter();
    gb_region *left = gb_enter();
    void *p = gb_alloc(64);
    gb_alloc(64);
    gb_leave(left);
    gb_coro_resume(gb_coro_new(fn, p, 0));
    (void)r;
}

static void realloc_malloc_memory_from_a_coroutine(void)
{
    coroutine_without_a_region_does(realloc_malloc_memory_in);
}

static void realloc_null_from_a_coroutine(void)
{
    coroutine_without_a_region_does(realloc_null_in);
}

static void realloc_left_memory_from_a_coroutine(void)
{
    coroutine_without_a_region_does(realloc_left_memory_in);
}

static void realloc_malloc_memory_outside_any_region(void)
{
    gb_realloc(malloc(16), 16, 32);
}

static void realloc_null_outside_any_region(void)
{
    gb_realloc(NULL, 0, 32);
}

GB_TEST(realloc_without_a_region_of_its_own_names_the_mistake)
{
    gbt_expect_death(realloc_malloc_memory_from_a_coroutine,
                     "gb_realloc: 0x");
    gbt_expect_death(realloc_malloc_memory_from_a_coroutine,
                     "is in no live region of the running context or of one that resumed it");
    gbt_expect_death(realloc_left_memory_from_a_coroutine,
                     "is in no live region of the running context or of one that resumed it");
    gbt_expect_death(realloc_null_from_a_coroutine,
                     "gb_realloc: no region is entered (call gb_enter first)");
    gbt_expect_death(realloc_malloc_memory_outside_any_region,
                     "is in no live region of the running context");
    gbt_expect_death(realloc_null_outside_any_region,
                     "gb_realloc: no region is entered (call gb_enter first)");
}

static void enter_then_yield(void *arg)
{
    *(gb_region **)arg = gb_enter();
    gb_coro_yield();
}

static void alloc_in_suspended(void *arg)
{
    gb_alloc_in(*(gb_region **)arg, 8);
}

static void alloc_in_a_suspended_coroutines_region(void)
{
    static gb_region *r;
    gb_coro_resume(gb_coro_new(enter_then_yield, &r, 0));
    gb_coro_resume(gb_coro_new(alloc_in_suspended, &r, 0));
}

GB_TEST(allocating_into_a_region_of_a_coroutine_that_did_not_resume_us_stops)
{
    gbt_expect_death(alloc_in_a_suspended_coroutines_region,
                     "(suspended; not one that resumed the running coroutine");
    gbt_expect_death(alloc_in_a_suspended_coroutines_region,
                     "a coroutine may use only regions it entered itself and those of the "
                     "contexts that resumed it");
}

/* ------------------------------------------------------------ the peak */

GB_TEST(resident_peak_is_at_least_what_was_touched)
{
    gb_resident before, after;
    CHECK_EQ(gb_resident_get(&before), 0);
    CHECK(before.peak >= before.rss);
    gb_region *r = gb_enter();
    fill(64 << 20);
    gb_leave(r);
    gb_sweep();
    CHECK_EQ(gb_resident_get(&after), 0);
    CHECK(after.peak >= after.rss);
    CHECK(after.peak >= before.rss + ((size_t)60 << 20));
    /* Never below a peak read before, though the OS samples its own. */
    for (int i = 0; i < 100; i++) {
        gb_resident again;
        CHECK_EQ(gb_resident_get(&again), 0);
        CHECK(again.peak >= after.peak);
        after = again;
    }
    gbt_check_all_given_back();
}

/* ---------------------------------------------------- coroutine handles */

static void yield_once(void *arg)
{
    (void)arg;
    gb_coro_yield();
}

static void resume_freed(void)
{
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    gb_coro_free(c);
    /* The next coroutine may take the freed one's memory: its handle
     * still names no coroutine. */
    gb_coro *d = gb_coro_new(yield_once, NULL, 0);
    (void)d;
    gb_coro_resume(c);
}

static void free_twice(void)
{
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    gb_coro_free(c);
    gb_coro_free(c);
}

static void status_of_freed(void)
{
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    gb_coro_free(c);
    gb_coro_status_of(c);
}

static void resume_bogus(void)
{
    gb_coro_resume((gb_coro *)(uintptr_t)0x40);
}

static gb_coro *made_on_a_thread_that_exited;

static void *make_and_exit(void *arg)
{
    (void)arg;
    made_on_a_thread_that_exited = gb_coro_new(yield_once, NULL, 0);
    return NULL;
}

static void resume_an_exited_threads_coroutine(void)
{
    pthread_t th;
    pthread_create(&th, NULL, make_and_exit, NULL);
    pthread_join(th, NULL);
    gb_coro_resume(made_on_a_thread_that_exited);
}

GB_TEST(a_freed_or_bogus_coroutine_handle_stops_naming_it)
{
    gbt_expect_death(resume_freed, "gb_coro_resume: coroutine 0x");
    gbt_expect_death(resume_freed, "was freed (gb_coro_free); its handle names no coroutine");
    gbt_expect_death(free_twice, "gb_coro_free: coroutine 0x");
    gbt_expect_death(free_twice, "was freed (gb_coro_free)");
    gbt_expect_death(status_of_freed, "gb_coro_status_of: coroutine 0x");
    gbt_expect_death(resume_bogus, "gb_coro_resume: 0x40 is not a coroutine handle");
    gbt_expect_death(resume_an_exited_threads_coroutine,
                     "belongs to a thread that has exited");
}

/* Handles never repeat: many coroutines made and freed one after another
 * in one slot each get a handle of their own. */
GB_TEST(coroutine_handles_never_repeat)
{
    gb_coro *first = gb_coro_new(yield_once, NULL, 0);
    gb_coro_free(first);
    for (int i = 0; i < 1000; i++) {
        gb_coro *c = gb_coro_new(yield_once, NULL, 0);
        CHECK(c != first);
        CHECK(gb_coro_resume(c));
        CHECK(gb_coro_current() == NULL);
        gb_coro_free(c);
    }
    gb_sweep();
    gbt_check_all_given_back();
}

/* ------------------------------------------------------------ unwinding */

static jmp_buf unwind_to;

/* A host function that enters a scratch region, as a C function called by
 * an interpreter would, and raises an error (the interpreter's longjmp)
 * before its gb_leave: the scratch region and one inside it stay entered. */
static void raise_with_scratch_entered(void)
{
    gb_enter();
    memset(gb_alloc(300000), 's', 300000);
    gb_enter();
    gb_alloc(100);
    longjmp(unwind_to, 1);
}

GB_TEST(leave_to_leaves_what_a_longjmp_skipped_and_keeps_r)
{
    gb_region *interp = gb_enter();
    char *keep = gb_alloc(64);
    memset(keep, 'k', 64);
    gb_region *saved = gb_current();
    if (setjmp(unwind_to) == 0)
        raise_with_scratch_entered();
    CHECK_EQ(gb_depth(), 3);
    CHECK_EQ(gb_leave_to(saved), 2);
    CHECK(gb_current() == interp);
    CHECK_EQ(gb_depth(), 1);
    CHECK_EQ(gbt_stats().regions_live, 1);
    CHECK_EQ(gbt_stats().regions_retired, 0);
    /* r's own allocations are untouched, and it is left as usual. */
    CHECK_EQ(keep[0], 'k');
    CHECK_EQ(keep[63], 'k');
    CHECK_EQ(gb_leave_to(interp), 0);
    gb_leave(interp);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(leave_to_null_leaves_every_region_of_the_running_context)
{
    gb_region *a = gb_enter(), *b = gb_enter(), *c = gb_enter();
    gb_alloc(5000);
    CHECK_EQ(gb_leave_to(NULL), 3);
    CHECK_EQ(gb_depth(), 0);
    CHECK(gb_current() == NULL);
    CHECK_EQ(info_of(a).state, GB_REGION_FREED);
    CHECK_EQ(info_of(b).state, GB_REGION_FREED);
    CHECK_EQ(info_of(c).state, GB_REGION_FREED);
    CHECK_EQ(gb_leave_to(NULL), 0);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(leave_to_retires_a_region_a_suspended_coroutine_points_into)
{
    gb_region *r = gb_enter();
    gb_region *pinned = gb_enter();
    char *p = gb_alloc(100000);
    gb_region *above = gb_enter();
    gb_alloc(100);
    gb_coro *c = gb_coro_new(hold_and_yield, p + 8, 0);
    CHECK(gb_coro_resume(c));
    CHECK_EQ(gb_leave_to(r), 2);
    CHECK_EQ(info_of(above).state, GB_REGION_FREED);
    CHECK_EQ(info_of(pinned).state, GB_REGION_RETIRED);
    CHECK(info_of(pinned).pinned_by == c);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    CHECK_EQ(info_of(pinned).state, GB_REGION_FREED);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

static void leave_to_a_left_region(void)
{
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_enter();
    gb_leave_to(r);
}

static void leave_to_from_a_coroutine(void *arg)
{
    gb_enter();
    gb_leave_to((gb_region *)arg);
}

static void leave_to_the_resumers_region(void)
{
    gb_region *r = gb_enter();
    gb_coro *c = gb_coro_new(leave_to_from_a_coroutine, r, 0);
    gb_coro_resume(c);
}

GB_TEST(leave_to_a_left_region_or_another_contexts_stops)
{
    gbt_expect_death(leave_to_a_left_region, "gb_leave_to");
    gbt_expect_death(leave_to_a_left_region, "already left");
    /* The coroutine may not unwind its resumer's stack: the region is
     * named as entered by another context. */
    gbt_expect_death(leave_to_the_resumers_region, "gb_leave_to: region");
}
