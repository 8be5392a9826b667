/* exhaustion.c -- when memory cannot be had: the try family's NULL that
 * changes nothing, blocks that step down before a request fails, region
 * limits, and the process's handler.
 *
 * The OS is made to refuse through the OS table (a map that refuses every
 * mapping above a size, or every one), and for real in a child under
 * RLIMIT_AS; a request of 2^60 bytes is refused by mmap and malloc alike.
 */
#include "common.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
#define HUGE_REQUEST ((size_t)1 << 60) /* more than any machine has */

/* The map source with 4 KiB pages' chains (huge pages off, blocks up to
 * 1 MiB) and the block cache as asked. */
static void init_plain(size_t cache_bytes)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.huge = GB_HUGE_OFF;
    o.cache_bytes = cache_bytes;
    gb_init(&o);
}

/* A map that refuses every mapping larger than map_most bytes. */
static void *(*real_map)(size_t, size_t);
static size_t map_most;
static int refused_maps;

static void *refusing_map(size_t size, size_t align)
{
    if (size > map_most) {
        refused_maps++;
        errno = ENOMEM;
        return NULL;
    }
    return real_map(size, align);
}

static void refuse_maps_above(size_t most)
{
    real_map = gb__os.map;
    map_most = most;
    gb__os.map = refusing_map;
}

/* Every field of gb_stats but those a refusal counts, compared. */
static void check_same_but_refusals(const gb_stats *a, const gb_stats *b)
{
#define GBT_SAME(kind, type, name)                                           \
    if (strcmp(#name, "refusals") && strcmp(#name, "fallbacks_mmap"))       \
        CHECK_EQ(a->name, b->name);
    GB_STATS_FIELDS(GBT_SAME)
#undef GBT_SAME
}

GB_TEST(a_refused_try_changes_nothing_and_the_region_goes_on)
{
    init_plain(GB_CACHE_OFF);
    gb_region *r = gb_enter();
    char *p = gb_alloc(3000);
    memset(p, 'a', 3000);
    char *q = gb_alloc(100);
    gb_stats before = gbt_stats();
    size_t bytes = gb_region_bytes(r);
    CHECK(gb_try_alloc(HUGE_REQUEST) == NULL);
    CHECK(gb_try_alloc_in(r, HUGE_REQUEST) == NULL);
    CHECK(gb_try_calloc(HUGE_REQUEST, 1) == NULL);
    CHECK(gb_try_calloc_in(r, 1 << 30, 1 << 30) == NULL); /* overflows size_t */
    CHECK(gb_try_alloc(SIZE_MAX) == NULL);                /* overflows the alignment */
    /* q is the last allocation, which would grow in place: it stays. */
    CHECK(gb_try_realloc(q, 100, HUGE_REQUEST) == NULL);
    CHECK(gb_try_realloc_in(r, p, 3000, HUGE_REQUEST) == NULL);
    gb_stats after = gbt_stats();
    check_same_but_refusals(&before, &after);
    CHECK_EQ(after.refusals - before.refusals, 7);
    CHECK_EQ(gb_region_bytes(r), bytes);
    /* Every earlier allocation is as it was, and the region goes on
     * where it was: the last allocation still grows in place. */
    for (int i = 0; i < 3000; i++)
        CHECK(p[i] == 'a');
    CHECK(gb_try_realloc(q, 100, 200) == q);
    char *s = gb_try_alloc(5000);
    CHECK(s != NULL);
    memset(s, 's', 5000);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

/* A solo block asked to grow to 1 TiB: the address index would need a
 * table of 128 MiB for the range, which can be had; the block cannot. The
 * refusal must not leave that table behind (bytes_meta), nor anything
 * else, and the block still grows in place afterwards. */
GB_TEST(a_refused_growth_of_a_solo_block_changes_nothing_the_index_included)
{
    init_plain(GB_CACHE_OFF);
    gb_region *r = gb_enter();
    char *p = gb_alloc(2 * MIB); /* past the chain's 1 MiB blocks: a solo block */
    memset(p, 'p', 2 * MIB);
    gb_stats before = gbt_stats();
    size_t bytes = gb_region_bytes(r);
    CHECK(gb_try_realloc(p, 2 * MIB, (size_t)1 << 40) == NULL);
    gb_stats after = gbt_stats();
    check_same_but_refusals(&before, &after);
    CHECK_EQ(after.refusals - before.refusals, 1);
    CHECK_EQ(gb_region_bytes(r), bytes);
    /* One the index itself cannot make room for: refused before the
     * block is tried, with nothing changed either. */
    CHECK(gb_try_realloc(p, 2 * MIB, HUGE_REQUEST) == NULL);
    after = gbt_stats();
    check_same_but_refusals(&before, &after);
    CHECK_EQ(after.refusals - before.refusals, 2);
    CHECK_EQ(gb_region_bytes(r), bytes);
    for (size_t i = 0; i < 2 * MIB; i += 4096)
        CHECK(p[i] == 'p');
    char *q = gb_try_realloc(p, 2 * MIB, 3 * MIB);
    CHECK(q != NULL);
    CHECK(q[2 * MIB - 1] == 'p');
    CHECK(gb_region_of(q) == r);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

static void stop_on_huge(void)
{
    gb_enter();
    gb_alloc(HUGE_REQUEST);
}

GB_TEST(the_stopping_family_names_the_request_and_the_region)
{
    gbt_expect_death(stop_on_huge, "gb_alloc: out of memory: region 0x");
    gbt_expect_death(stop_on_huge, "could not get a block for a request of 1152921504606846976 bytes");
}

static void try_without_a_region(void)
{
    gb_try_alloc(10);
}

static void try_in_a_left_region(void)
{
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_try_alloc_in(r, 10);
}

static void try_realloc_too_large_an_old_size(void)
{
    gb_enter();
    char *p = gb_alloc(32);
    gb_alloc(32);
    gb_try_realloc(p, 4096, 8192);
}

GB_TEST(misuse_stops_in_the_try_family_too)
{
    gbt_expect_death(try_without_a_region, "gb_try_alloc: no region is entered");
    gbt_expect_death(try_in_a_left_region, "gb_try_alloc_in: region");
    gbt_expect_death(try_in_a_left_region, "already left");
    gbt_expect_death(try_realloc_too_large_an_old_size, "gb_try_realloc: old size 4096");
}

GB_TEST(a_block_the_os_refuses_steps_down_to_one_that_holds_the_request)
{
    init_plain(GB_CACHE_OFF);
    refuse_maps_above(128 * KIB);
    gb_region *r = gb_enter();
    /* The chain would grow to blocks of 1 MiB; mappings above 128 KiB are
     * refused, so each block halves until it is mapped, before malloc is
     * asked and before the request fails. */
    size_t total = 0;
    for (int i = 0; i < 40; i++) {
        char *p = gb_try_alloc(60 * KIB);
        CHECK(p != NULL);
        memset(p, i, 60 * KIB);
        total += 60 * KIB;
    }
    gb_stats s = gbt_stats();
    CHECK(refused_maps > 0);
    CHECK(s.step_downs > 0);
    CHECK_EQ(s.bytes_heap, 0);      /* every block mapped, none from malloc */
    CHECK_EQ(s.fallbacks_mmap, 0);
    CHECK_EQ(s.refusals, 0);
    CHECK(gb_region_bytes(r) >= total);
    /* A request that only a refused size could hold comes from malloc. */
    char *big = gb_try_alloc(300 * KIB);
    CHECK(big != NULL);
    memset(big, 1, 300 * KIB);
    CHECK(gbt_stats().bytes_heap > 0);
    CHECK_EQ(gbt_stats().fallbacks_mmap, 1);
    gb__os.map = real_map;
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_cached_block_serves_when_the_os_refuses)
{
    init_plain(16 * MIB);
    gb_region *r = gb_enter();
    memset(gb_alloc(600 * KIB), 1, 600 * KIB);
    gb_leave(r);
    CHECK(gbt_stats().bytes_cached >= MIB);
    refuse_maps_above(0);
    uint64_t hits = gbt_stats().cache_hits;
    r = gb_enter();
    char *p = gb_try_alloc(600 * KIB);
    CHECK(p != NULL);
    memset(p, 2, 600 * KIB);
    CHECK(gbt_stats().cache_hits > hits);
    CHECK_EQ(gbt_stats().bytes_heap, 0);
    gb__os.map = real_map;
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

/* ---------------------------------------------------------------- limits */

GB_TEST(a_region_fills_to_its_limit_and_no_further)
{
    init_plain(16 * MIB);
    gb_region *r = gb_enter();
    gb_region_limit(r, MIB);
    gb_region_info i;
    gb_region_info_get(r, &i);
    CHECK_EQ(i.limit, MIB);
    size_t got = 0;
    char *p;
    uint64_t refusals = gbt_stats().refusals;
    while ((p = gb_try_alloc(1000)) != NULL) {
        memset(p, 3, 1000);
        got += 1000;
        CHECK(gb_region_bytes(r) <= MIB);
    }
    fprintf(stderr, "1000-byte allocations under a limit of 1 MiB: %zu bytes in %zu of blocks\n", got,
            gb_region_bytes(r));
    CHECK_EQ(gbt_stats().refusals, refusals + 1);
    /* The blocks stepped down to the smallest that holds 1000 bytes: the
     * region is full to within one such block and the chain's headers. */
    CHECK(gbt_stats().step_downs > 0);
    CHECK(gb_region_bytes(r) > MIB - 16 * KIB);
    CHECK(got > MIB - 64 * KIB);
    /* A request larger than what is left, and one larger than the limit. */
    CHECK(gb_try_alloc(64 * KIB) == NULL);
    CHECK(gb_try_alloc(2 * MIB) == NULL);
    /* Raised, the region goes on; removed, it grows as it likes. */
    gb_region_limit(r, 2 * MIB);
    CHECK(gb_try_alloc(64 * KIB) != NULL);
    gb_region_limit(r, 0);
    CHECK(gb_try_alloc(4 * MIB) != NULL);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_limited_region_is_not_handed_a_larger_cached_block)
{
    /* A cached block of 1 MiB would serve a request of 256 KiB without a
     * limit (up to four times its size); under a limit of 512 KiB the
     * region must get a block of its own size instead. */
    init_plain(16 * MIB);
    gb_region *r = gb_enter();
    memset(gb_alloc(900 * KIB), 1, 900 * KIB);
    gb_leave(r);
    CHECK(gbt_stats().bytes_cached >= MIB);
    uint64_t hits = gbt_stats().cache_hits;
    r = gb_enter();
    gb_region_limit(r, 512 * KIB);
    char *p = gb_try_alloc(200 * KIB);
    CHECK(p != NULL);
    CHECK(gb_region_bytes(r) <= 512 * KIB);
    /* Not even taken and put back. */
    CHECK_EQ(gbt_stats().cache_hits, hits);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_limit_counts_blocks_a_reset_kept)
{
    init_plain(GB_CACHE_OFF);
    gb_region *r = gb_enter();
    memset(gb_alloc(300 * KIB), 1, 300 * KIB);
    gb_region_reset(r, MIB);
    size_t kept = gb_region_bytes(r);
    CHECK(kept >= 300 * KIB);
    gb_region_limit(r, kept + 160 * KIB);
    /* Too large for the kept block, which still counts: only 160 KiB more
     * may be taken. */
    CHECK(gb_try_alloc(kept + 16 * KIB) == NULL);
    /* The kept block serves first, whole; then the 160 KiB. */
    CHECK(gb_try_alloc(kept - 4 * KIB) != NULL);
    CHECK_EQ(gb_region_bytes(r), kept);
    CHECK(gb_try_alloc(200 * KIB) == NULL);
    CHECK(gb_try_alloc(32 * KIB) != NULL);
    CHECK(gb_region_bytes(r) <= kept + 160 * KIB);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(a_growth_past_the_limit_is_refused_and_keeps_the_allocation)
{
    init_plain(GB_CACHE_OFF);
    gb_region *r = gb_enter();
    gb_region_limit(r, 4 * MIB);
    /* Larger than the chain's blocks (1 MiB): a block of its own, which
     * grows by remap or copy, and may not grow past the limit. */
    char *p = gb_try_alloc(2 * MIB);
    CHECK(p != NULL);
    memset(p, 'g', 2 * MIB);
    size_t bytes = gb_region_bytes(r);
    CHECK(gb_try_realloc_in(r, p, 2 * MIB, 5 * MIB) == NULL);
    CHECK_EQ(gb_region_bytes(r), bytes);
    CHECK(p[0] == 'g' && p[2 * MIB - 1] == 'g');
    char *q = gb_try_realloc_in(r, p, 2 * MIB, 3 * MIB);
    CHECK(q != NULL);
    CHECK(q[0] == 'g' && q[2 * MIB - 1] == 'g');
    CHECK(gb_region_bytes(r) <= 4 * MIB);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* The same for a solo block that grows by copy: under a limit of 4 MiB,
 * its growth from 2 MiB to 3 MiB must not take the cached block of 8 MiB
 * that would serve it without one (up to four times its size). */
GB_TEST(a_solo_block_grown_under_a_limit_takes_no_larger_cached_block)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.huge = GB_HUGE_OFF;
    o.cache_bytes = 64 * MIB;
    o.growth = GB_GROW_COPY;
    gb_init(&o);
    gb_region *r = gb_enter();
    memset(gb_alloc(8 * MIB - 64 * KIB), 1, 8 * MIB - 64 * KIB);
    gb_leave(r);
    CHECK(gbt_stats().bytes_cached >= 8 * MIB);
    r = gb_enter();
    gb_region_limit(r, 4 * MIB);
    char *p = gb_try_alloc(2 * MIB);
    CHECK(p != NULL);
    memset(p, 'g', 2 * MIB);
    uint64_t hits = gbt_stats().cache_hits, copies = gbt_stats().grows_copy;
    char *q = gb_try_realloc_in(r, p, 2 * MIB, 3 * MIB);
    CHECK(q != NULL);
    CHECK(q[0] == 'g' && q[2 * MIB - 1] == 'g');
    CHECK_EQ(gbt_stats().grows_copy, copies + 1);
    CHECK_EQ(gbt_stats().cache_hits, hits);
    CHECK(gb_region_bytes(r) <= 4 * MIB);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

static void stop_at_the_limit(void)
{
    gb_region *r = gb_enter();
    gb_region_limit(r, 100 * KIB);
    gb_alloc(200 * KIB);
}

GB_TEST(the_stopping_family_stops_at_a_limit_naming_it)
{
    gbt_expect_death(stop_at_the_limit, "gb_alloc: region 0x");
    gbt_expect_death(stop_at_the_limit, "is at its limit (gb_region_limit: 102400 bytes; it holds 0)");
    gbt_expect_death(stop_at_the_limit, "a request of 204800 bytes");
}

/* --------------------------------------------------------------- handler */

static int handler_calls;
static gb_region *handler_region;
static size_t handler_request;
static gb_oom_reason handler_why;

static bool raise_limit(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    handler_calls++;
    handler_region = r;
    handler_request = request;
    handler_why = why;
    gb_region_limit(r, *(size_t *)arg);
    return true;
}

GB_TEST(the_handler_may_give_room_and_have_the_request_tried_again)
{
    init_plain(GB_CACHE_OFF);
    size_t raised = 4 * MIB;
    gb_set_oom_handler(raise_limit, &raised);
    gb_region *r = gb_enter();
    gb_region_limit(r, 64 * KIB);
    char *p = gb_try_alloc(MIB);
    CHECK(p != NULL);
    memset(p, 1, MIB);
    CHECK_EQ(handler_calls, 1);
    CHECK(handler_region == r);
    CHECK_EQ(handler_request, MIB);
    CHECK_EQ(handler_why, GB_OOM_LIMIT);
    CHECK_EQ(gbt_stats().refusals, 0);
    /* The stopping family asks it too. */
    gb_region_limit(r, gb_region_bytes(r));
    raised = 16 * MIB;
    CHECK(gb_alloc(2 * MIB) != NULL);
    CHECK_EQ(handler_calls, 2);
    gb_set_oom_handler(NULL, NULL);
    gb_leave(r);
    gbt_check_all_given_back();
}

static bool decline(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)request;
    (void)arg;
    handler_calls++;
    handler_why = why;
    /* A request that fails inside the handler fails at once, without
     * calling the handler from within itself. */
    CHECK(gb_try_alloc_in(r, HUGE_REQUEST) == NULL);
    return false;
}

static bool record(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)r;
    (void)request;
    (void)arg;
    handler_calls++;
    handler_why = why;
    return false;
}

/* How many mappings one refused request of 2^60 bytes asks the OS for
 * (the map refuses all): its attempts, step-downs included. */
static int maps_for_a_refusal(gb_region *r)
{
    int before = refused_maps;
    CHECK(gb_try_alloc_in(r, HUGE_REQUEST) == NULL);
    return refused_maps - before;
}

static int inner_maps;

static bool decline_counting_inner(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)request;
    (void)why;
    (void)arg;
    inner_maps = maps_for_a_refusal(r); /* inside the handler: no handler again */
    return false;
}

static bool retry_once(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)r;
    (void)request;
    (void)why;
    (void)arg;
    return true;
}

/* A request the OS refuses is tried once without a handler, once with a
 * handler that declines (and a request inside the handler once, without
 * it), and twice with one that asks for another try: a handler's answer
 * is the only thing that makes a request try again. */
GB_TEST(only_a_handler_that_asks_for_it_makes_a_request_try_again)
{
    init_plain(GB_CACHE_OFF);
    gb_region *r = gb_enter();
    refuse_maps_above(0);
    int none = maps_for_a_refusal(r);
    CHECK(none > 0);
    gb_set_oom_handler(decline_counting_inner, NULL);
    CHECK_EQ(maps_for_a_refusal(r), none + none); /* its own, and the one inside the handler */
    CHECK_EQ(inner_maps, none);
    gb_set_oom_handler(retry_once, NULL);
    CHECK_EQ(maps_for_a_refusal(r), 2 * none);
    gb_set_oom_handler(NULL, NULL);
    CHECK_EQ(maps_for_a_refusal(r), none);
    gb__os.map = real_map;
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

/* A solo block's growth refused for the limit, then (the limit lifted)
 * by the index, which cannot make room for 2^60 bytes, and by the OS,
 * which has no 1 TiB: the handler hears each reason as it is, never the
 * one before's left over. */
GB_TEST(the_handler_hears_why_a_solo_growth_was_refused)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(record, NULL);
    gb_region *r = gb_enter();
    gb_region_limit(r, 4 * MIB);
    char *p = gb_try_alloc(2 * MIB);
    CHECK(p != NULL);
    int calls = handler_calls;
    CHECK(gb_try_realloc_in(r, p, 2 * MIB, 5 * MIB) == NULL);
    CHECK_EQ(handler_calls, calls + 1);
    CHECK_EQ(handler_why, GB_OOM_LIMIT);
    gb_region_limit(r, 0);
    CHECK(gb_try_realloc_in(r, p, 2 * MIB, HUGE_REQUEST) == NULL);
    CHECK_EQ(handler_calls, calls + 2);
    CHECK_EQ(handler_why, GB_OOM_SYSTEM);
    /* Refused for the limit again, then by the OS itself: the index
     * makes room for 1 TiB (a table of 128 MiB), no mapping or malloc
     * holds it. */
    gb_region_limit(r, 4 * MIB);
    CHECK(gb_try_realloc_in(r, p, 2 * MIB, 5 * MIB) == NULL);
    CHECK_EQ(handler_why, GB_OOM_LIMIT);
    gb_region_limit(r, 0);
    CHECK(gb_try_realloc_in(r, p, 2 * MIB, (size_t)1 << 40) == NULL);
    CHECK_EQ(handler_calls, calls + 4);
    CHECK_EQ(handler_why, GB_OOM_SYSTEM);
    gb_set_oom_handler(NULL, NULL);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(a_handler_that_declines_lets_the_request_fail_once)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(decline, NULL);
    gb_region *r = gb_enter();
    uint64_t refusals = gbt_stats().refusals;
    CHECK(gb_try_alloc(HUGE_REQUEST) == NULL);
    CHECK_EQ(handler_calls, 1);
    CHECK_EQ(handler_why, GB_OOM_SYSTEM);
    /* The handler's own refusal and the request's. */
    CHECK_EQ(gbt_stats().refusals, refusals + 2);
    gb_set_oom_handler(NULL, NULL);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* A handler that breaks its rule (giveback.h, gb_oom_handler: it must not
 * leave or reset the region the request is for): it leaves r and enters
 * another, leaves r alone, or resets r, and asks for the request again. */
static bool leave_and_enter(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)request;
    (void)why;
    (void)arg;
    gb_leave(r);
    gb_enter();
    return true;
}

static bool leave_only(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)request;
    (void)why;
    (void)arg;
    gb_leave(r);
    return true;
}

static bool reset_it(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)request;
    (void)why;
    (void)arg;
    gb_region_reset(r, 0);
    gb_region_limit(r, 0);
    return true;
}

static gb_oom_handler rule_breaker;

/* A region of 64 KiB at most, one allocation in it, then a request of
 * 1 MiB past the limit: the handler is called for r. */
static void ask_past_the_limit_try(void)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(rule_breaker, NULL);
    gb_region *r = gb_enter();
    gb_region_limit(r, 64 * KIB);
    gb_alloc(100);
    gb_try_alloc_in(r, MIB);
}

static void ask_past_the_limit_stop(void)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(rule_breaker, NULL);
    gb_region *r = gb_enter();
    gb_region_limit(r, 64 * KIB);
    gb_alloc(MIB);
}

static void grow_past_the_limit(void)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(rule_breaker, NULL);
    gb_region *r = gb_enter();
    gb_region_limit(r, 64 * KIB);
    char *p = gb_alloc(100);
    gb_alloc(100);
    gb_try_realloc_in(r, p, 100, MIB);
}

GB_TEST(a_handler_that_leaves_or_resets_the_region_it_is_called_for_stops_named)
{
    rule_breaker = leave_and_enter;
    gbt_expect_death(ask_past_the_limit_try,
                     "gb_try_alloc_in: the out-of-memory handler left region 0x");
    gbt_expect_death(ask_past_the_limit_try, "which the request of 1048576 bytes is for");
    rule_breaker = leave_only;
    gbt_expect_death(ask_past_the_limit_stop, "gb_alloc: the out-of-memory handler left region 0x");
    rule_breaker = reset_it;
    gbt_expect_death(ask_past_the_limit_try,
                     "gb_try_alloc_in: the out-of-memory handler reset region 0x");
    gbt_expect_death(grow_past_the_limit,
                     "gb_try_realloc_in: the out-of-memory handler reset region 0x");
}

/* A handler may give back any other region: one entered inside r, left
 * in the handler, and the request is met in r. */
static gb_region *inner;

static bool leave_the_inner_one(gb_region *r, size_t request, gb_oom_reason why, void *arg)
{
    (void)request;
    (void)why;
    (void)arg;
    gb_leave(inner);
    gb_region_limit(r, 0);
    return true;
}

GB_TEST(a_handler_may_leave_a_region_other_than_the_one_it_is_called_for)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(leave_the_inner_one, NULL);
    gb_region *r = gb_enter();
    gb_region_limit(r, 64 * KIB);
    inner = gb_enter();
    gb_alloc(MIB);
    char *p = gb_try_alloc_in(r, MIB);
    CHECK(p != NULL);
    CHECK(gb_region_of(p) == r);
    CHECK(gb_current() == r);
    gb_set_oom_handler(NULL, NULL);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* ------------------------------------------------------------- for real */

/* Under RLIMIT_AS, a region filled with gb_try_alloc until the first NULL
 * has taken all but a few MiB of what the limit left, then the process
 * goes on: the region is left, every byte comes back, and a new region
 * serves again. */
static void fill_to_the_address_space_limit(void)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    gb_init(&o); /* the defaults: blocks chain to 64 MiB with huge pages */
    size_t vm = gbt_vm_size();
    if (!vm)
        _exit(77);
    size_t headroom = 256 * MIB;
    struct rlimit rl = {vm + headroom, vm + headroom};
    CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
    gb_region *r = gb_enter();
    size_t got = 0;
    char *p;
    while ((p = gb_try_alloc(64 * KIB)) != NULL) {
        memset(p, 7, 64 * KIB);
        got += 64 * KIB;
    }
    gb_stats s = gbt_stats();
    fprintf(stderr,
            "under RLIMIT_AS of %zu MiB more: %zu MiB allocated in %zu MiB of blocks before the first "
            "NULL; %ju step-downs, %zu bytes from malloc\n",
            headroom / MIB, got / MIB, gb_region_bytes(r) / MIB, (uintmax_t)s.step_downs, s.bytes_heap);
    CHECK(s.step_downs > 0);
    CHECK_EQ(s.refusals, 1);
    /* The blocks fill the address space the limit left (what the
     * allocations use of them depends on the chain's block sizes: with
     * blocks of 1 MiB, a sixteenth of each is the 64 KiB that no longer
     * fits at its end). */
    CHECK(gb_region_bytes(r) > headroom - 8 * MIB);
    CHECK(got > headroom - headroom / 8);
    gb_leave(r);
    r = gb_enter();
    CHECK(gb_try_alloc(MIB) != NULL);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(under_rlimit_as_a_region_fills_to_within_a_few_mib_before_its_first_null)
{
    GBT_SKIP_IF(GBT_SANITIZED, "sanitizers reserve terabytes of address space up front");
    GBT_SKIP_IF(GBT_EMULATED, "the address-space limit would bind the emulator");
    GBT_SKIP_IF(access("/proc/self/statm", R_OK) != 0, "no /proc to size the address space with");
    int status = gbt_in_child(fill_to_the_address_space_limit);
    GBT_SKIP_IF(WIFEXITED(status) && WEXITSTATUS(status) == 77, "no /proc/self/statm");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Handlers set by one thread while another's requests fail: each call
 * hears a handler with its own argument, never one with another's. Under
 * ThreadSanitizer, a handler set or read outside oom.c's lock is a
 * reported race. */
enum { SWAPS = 2000 };
static int arg_a, arg_b;
static atomic_int heard, mismatched;
static atomic_bool swapping;

static bool handler_a(gb_region *r, size_t n, gb_oom_reason why, void *arg)
{
    (void)r, (void)n, (void)why;
    atomic_fetch_add(&heard, 1);
    if (arg != &arg_a)
        atomic_fetch_add(&mismatched, 1);
    return false;
}

static bool handler_b(gb_region *r, size_t n, gb_oom_reason why, void *arg)
{
    (void)r, (void)n, (void)why;
    atomic_fetch_add(&heard, 1);
    if (arg != &arg_b)
        atomic_fetch_add(&mismatched, 1);
    return false;
}

static void *swap_handlers(void *unused)
{
    (void)unused;
    for (int i = 0; atomic_load(&swapping); i++) {
        if (i % 2)
            gb_set_oom_handler(handler_a, &arg_a);
        else
            gb_set_oom_handler(handler_b, &arg_b);
    }
    return NULL;
}

GB_TEST(threads_share_the_handler_and_each_call_hears_its_own_argument)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(handler_a, &arg_a);
    atomic_store(&swapping, true);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, swap_handlers, NULL), 0);
    gb_region *r = gb_enter();
    gb_region_limit(r, 64 * KIB);
    for (int i = 0; i < SWAPS; i++)
        CHECK(gb_try_alloc_in(r, MIB) == NULL);
    atomic_store(&swapping, false);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(atomic_load(&heard), SWAPS);
    CHECK_EQ(atomic_load(&mismatched), 0);
    gb_set_oom_handler(NULL, NULL);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* A block that fills exactly what the limit leaves is taken whole, not
 * stepped down: blocks from malloc (sizes as asked), a first block of
 * 4 KiB, the next of 8 KiB, and a limit of 12 KiB. */
GB_TEST(a_block_that_fills_exactly_what_the_limit_leaves_is_taken_whole)
{
    gbt_init_heap_blocks(4096, 0);
    gb_region *r = gb_enter();
    gb_region_limit(r, 12 * KIB);
    gb_alloc(100);
    CHECK_EQ(gb_region_bytes(r), 4 * KIB);
    CHECK(gb_try_alloc(4000) != NULL); /* past the first block */
    CHECK_EQ(gb_region_bytes(r), 12 * KIB);
    CHECK_EQ(gbt_stats().step_downs, 0);
    CHECK(gb_try_alloc(8000) == NULL); /* nothing left */
    gb_leave(r);
    gbt_check_all_given_back();
}

/* A request that the limit leaves exactly room for, refused by the OS
 * (no 2^59 bytes anywhere): the handler hears the system's refusal, not
 * the limit's. */
GB_TEST(a_request_the_limit_has_exact_room_for_refused_by_the_os_is_the_systems)
{
    init_plain(GB_CACHE_OFF);
    gb_set_oom_handler(record, NULL);
    gb_region *r = gb_enter();
    gb_alloc(100);
    size_t a = (size_t)1 << 59;
    gb_region_limit(r, gb_region_bytes(r) + a + GB__BLOCK_HDR);
    int calls = handler_calls;
    CHECK(gb_try_alloc(a) == NULL);
    CHECK_EQ(handler_calls, calls + 1);
    CHECK_EQ(handler_why, GB_OOM_SYSTEM);
    gb_set_oom_handler(NULL, NULL);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* A solo block grown to exactly what its region's limit leaves: allowed,
 * the region then at its limit to the byte (blocks from malloc, so that a
 * block is the size asked). */
GB_TEST(a_solo_block_grown_to_exactly_the_limit_is_allowed)
{
    gbt_init_heap_blocks(0, MIB);
    gb_region *r = gb_enter();
    char *p = gb_alloc(2 * MIB); /* past the cap: a solo block */
    size_t held = gb_region_bytes(r);
    gb_region_limit(r, held + MIB);
    char *q = gb_try_realloc(p, 2 * MIB, 3 * MIB);
    CHECK(q != NULL);
    CHECK_EQ(gb_region_bytes(r), held + MIB);
    CHECK(gb_try_realloc(q, 3 * MIB, 3 * MIB + 16) == NULL);
    gb_leave(r);
    gbt_check_all_given_back();
}
