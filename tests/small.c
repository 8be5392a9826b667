/* small.c -- chunks too small for a mapping come from the runtime's slabs. */
#include "common.h"
#include "init.h"
#include "os/os.h"
#include "scenarios.h"
#include "small.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

enum { REUSED = 64 };

/* REUSED small regions, nested, each with 3,000 bytes written. */
static void enter_and_write(gb_region **r)
{
    for (int i = 0; i < REUSED; i++) {
        r[i] = gb_enter();
        memset(gb_alloc(3000), i, 3000);
    }
}

GB_TEST(slab_units_given_back_and_taken_again_count_in_the_footprint)
{
    init_small(GB_SMALL_SLAB);
    gb_resident res;
    CHECK(gb_resident_get(&res) == 0);
    GBT_SKIP_IF(res.footprint == 0, "this OS keeps no footprint that a reused page could be missing from");
    gb_region *outer = gb_enter(); /* keeps the slab */
    gb_alloc(1);
    gb_region *r[REUSED];
    enter_and_write(r);
    for (int i = REUSED; i-- > 0;)
        gb_leave(r[i]);
    CHECK_EQ(gbt_stats().slabs, 1);
    /* Their units were given back a batch at a time, all but the last. */
    CHECK_LT(gbt_stats().bytes_small_dirty, (size_t)64 * 1024);
    CHECK(gb_resident_get(&res) == 0);
    size_t given = res.footprint;
    enter_and_write(r); /* the same units, in the same slab */
    CHECK_EQ(gbt_stats().slabs, 1);
    CHECK(gb_resident_get(&res) == 0);
    size_t again = res.footprint;
    fprintf(stderr, "footprint: %zu KiB with the units given back, %zu KiB written again\n",
            given / 1024, again / 1024);
    /* Written again, they count again (MADV_FREE_REUSE on macOS): each
     * holds at least the page its 3,000 bytes are on. */
    CHECK(again >= given + REUSED * 3000 * 3 / 4);
    for (int i = REUSED; i-- > 0;)
        gb_leave(r[i]);
    gb_leave(outer);
    CHECK_EQ(gbt_stats().slabs, 0);
}

/* Many small regions at once, then all left, with a long-lived malloc made
 * while they were all live (it lands above their memory in malloc's heap
 * and would stop it being trimmed): the slabs go, and so does the memory.
 * The small-regions gate's scenario, nested only, one 3,000-byte
 * allocation per region. */
static size_t many_small_regions(int n)
{
    const gbs_small_shape shape = {n, 3000, 3000, 3000, 64, false};
    void *kept[1];
    gbs_small_regions_round(&shape, 1, kept);
    gb_resident res;
    CHECK(gb_resident_get(&res) == 0);
    free(kept[0]);
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
    const gbs_small_shape shape = {2000, 4000, 4000, 4000, 0, false};
    gb_region *outer = gb_enter();
    for (int round = 0; round < 5; round++) {
        gbs_small_regions_round(&shape, round, NULL);
        gb_alloc_in(outer, 8); /* the outer region's own block stays */
        gb_stats s = gbt_stats();
        CHECK_LT(s.slabs, 3); /* units are reused, not piled up */
    }
    gb_leave(outer);
    CHECK_EQ(gbt_stats().slabs, 0);
}

/* Thousands of small regions fill many slabs; one chunk in each slab stays
 * in use (an arena of a vec held by an outer region) and every other
 * region is left. No slab can go, so what must go is the pages: at most
 * RELEASE_BATCH (small.c) of freed chunks stays resident per slab, and
 * bytes_small_dirty says how much. The block cache is off: a slab given
 * back whole may wait there, resident, and this test wants the resident
 * size to count only live pages and dirty batches. */
enum { DIRTY_SLABS = 32, SLAB_UNITS = GB__SLAB_UNITS };
#define RELEASE_BATCH GB__SLAB_RELEASE_BATCH

GB_TEST(slabs_kept_in_use_hold_only_live_pages_and_a_batch_each)
{
    gbt_init_slabs();
    /* A unit is the runtime's page, which a simulated OS layer may make
     * larger than the machine's. */
    const size_t page = gb__os.page_size;
    /* One unit per region and per arena: the slab keeps UNITS of them,
     * filled in order, the outer region's own block first. */
    const size_t n = (size_t)DIRTY_SLABS * SLAB_UNITS - 1;
    /* The test's own bookkeeping, made and touched before the baseline. */
    gb_region **r = malloc(n * sizeof *r);
    gb_vec **keep = malloc(DIRTY_SLABS * sizeof *keep);
    memset(r, 0, n * sizeof *r);
    memset(keep, 0, DIRTY_SLABS * sizeof *keep);
    gb_resident before;
    CHECK(gb_resident_get(&before) == 0);
    size_t meta_before = gbt_stats().bytes_meta;

    gb_region *outer = gb_enter();
    for (int k = 0; k < DIRTY_SLABS; k++)
        keep[k] = gb_vec_new(8);
    size_t kept = 0, entered = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % SLAB_UNITS == SLAB_UNITS / 2) {
            gb_vec_compact(keep[kept++]); /* an arena of one unit, bound to outer */
            continue;
        }
        r[entered] = gb_enter();
        memset(gb_alloc(3000), (int)i, 3000);
        entered++;
    }
    gb_stats s = gbt_stats();
    CHECK_EQ(kept, DIRTY_SLABS);
    CHECK_EQ(s.slabs, DIRTY_SLABS);
    CHECK_EQ(s.bytes_small, (size_t)DIRTY_SLABS * SLAB_UNITS * page);
    /* The descriptors of the regions come from malloc and stay in it. */
    size_t meta = s.bytes_meta - meta_before;
    while (entered > 0)
        gb_leave(r[--entered]);

    s = gbt_stats();
    size_t live = gb_region_bytes(outer);
    for (int k = 0; k < DIRTY_SLABS; k++)
        live += gb_vec_arena_bytes(keep[k]);
    CHECK_EQ(live, (DIRTY_SLABS + 1) * page);
    CHECK_EQ(s.slabs, DIRTY_SLABS);
    CHECK_EQ(s.bytes_small, live);
    CHECK(s.bytes_small_dirty <= DIRTY_SLABS * RELEASE_BATCH);
    CHECK_EQ(s.bytes_small_dirty % page, 0);
    gb_resident after;
    CHECK(gb_resident_get(&after) == 0);
    /* The region descriptors, freed into malloc, and a stated 512 KiB for
     * the rest of the process (stdio, the pages a test touches). */
    size_t tolerance = meta + 512 * 1024;
    size_t allowed = gbt_held(&before) + live + DIRTY_SLABS * RELEASE_BATCH + tolerance;
    fprintf(stderr,
            "%zu slabs, %zu small regions left: held %.2f MiB before, %.2f MiB after "
            "(allowed %.2f: live %.0f KiB, batches %.0f KiB, descriptors %.0f KiB); "
            "resident %.2f MiB, dirty %.0f KiB, lazy_free %.0f KiB\n",
            (size_t)DIRTY_SLABS, n - DIRTY_SLABS, gbt_held(&before) / (double)MIB, gbt_held(&after) / (double)MIB,
            allowed / (double)MIB, live / 1024.0, DIRTY_SLABS * RELEASE_BATCH / 1024.0, meta / 1024.0,
            after.rss / (double)MIB, s.bytes_small_dirty / 1024.0, after.lazy_free / 1024.0);
    /* Sanitizers shadow every page touched and keep freed blocks in a
     * quarantine; an emulator's own memory is in the resident size. */
    if (!GBT_SANITIZED && !GBT_EMULATED)
        CHECK_LT(gbt_held(&after), allowed);
    gb_leave(outer);
    s = gbt_stats();
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.bytes_small, 0);
    CHECK_EQ(s.bytes_small_dirty, 0);
    free(keep);
    free(r);
}

/* ------------------------------------------------ the slab's bookkeeping
 *
 * The cases below call the slab layer itself (small.h) with a cache of
 * their own, so that they choose which unit of which slab each chunk is,
 * and swap the OS's release and reuse for fakes that record each call:
 * the units emptied, and the units the OS is told of before they are
 * written again (MADV_FREE_REUSE on macOS; Linux has no such call, so only
 * a record shows that it is made). Built with GB_CHECK, each step also
 * walks every slab's bits and counts (gb__small_check). */

typedef struct call {
    char *p;
    size_t n;
} call;

enum { MOST_CALLS = 2 * SLAB_UNITS };
static call released[MOST_CALLS], reused[MOST_CALLS];
static int nreleased, nreused;
static int (*real_release)(void *p, size_t n), (*real_reuse)(void *p, size_t n);

static int record_release(void *p, size_t n)
{
    CHECK_LT(nreleased, MOST_CALLS);
    released[nreleased++] = (call){p, n};
    return real_release(p, n);
}

static int record_reuse(void *p, size_t n)
{
    CHECK_LT(nreused, MOST_CALLS);
    reused[nreused++] = (call){p, n};
    return real_reuse ? real_reuse(p, n) : 0;
}

static gb__cache cache; /* the cases' own, empty: the block cache is off */
static size_t unit;     /* the runtime's page */
static size_t batch;    /* units emptied together: RELEASE_BATCH's worth, at least one */

static void init_slabs(void)
{
    gbt_init_slabs();
    real_release = gb__os.release;
    real_reuse = gb__os.reuse;
    gb__os.release = record_release;
    gb__os.reuse = record_reuse;
    unit = gb__os.page_size;
    batch = RELEASE_BATCH / unit ? RELEASE_BATCH / unit : 1;
}

/* Weak: only a runtime built with GB_CHECK has the slab checker (the
 * Debug builds); without it, the cases judge by what they see alone. A
 * Mach-O program cannot be linked with an undefined weak symbol, so on
 * macOS they always do. */
#if defined(__APPLE__)
static void (*const slab_checker)(void) = NULL;
#else
void gb__small_check(void) __attribute__((weak));
static void (*const slab_checker)(void) = gb__small_check;
#endif

static void check_slabs(void)
{
    if (slab_checker)
        slab_checker();
}

static gb__chunk get(size_t units)
{
    gb__chunk c;
    CHECK(gb__small_get(&cache, units * unit, &c));
    CHECK_EQ(c.size, (units ? units : 1) * unit);
    check_slabs();
    return c;
}

static void put(gb__chunk c)
{
    gb__small_put(&cache, c);
    check_slabs();
}

/* Whether c lies wholly outside the slab whose first unit is first. */
static bool outside(gb__chunk c, gb__chunk first)
{
    const char *p = c.base, *slab = first.base;
    return p >= slab + SLAB_UNITS * unit || p + c.size <= slab;
}

static void check_call(const call *c, const char *p, size_t n)
{
    CHECK(c->p == p);
    CHECK_EQ(c->n, n);
}

GB_TEST(a_slab_hands_out_its_units_in_order_and_a_unit_given_back_first)
{
    init_slabs();
    size_t meta = gbt_stats().bytes_meta;
    gb__chunk a[SLAB_UNITS], b[SLAB_UNITS];
    /* A request for nothing is a unit's: a chunk has a place of its own. */
    gb__chunk none = get(0);
    put(none);
    CHECK_EQ(gbt_stats().slabs, 0);
    for (unsigned i = 0; i < SLAB_UNITS; i++) {
        a[i] = get(1);
        CHECK(a[i].base == (char *)a[0].base + (size_t)i * unit);
    }
    CHECK_EQ(gbt_stats().slabs, 1);
    /* A full slab: the next unit is a new slab's, and so on, both full. */
    for (unsigned i = 0; i < SLAB_UNITS; i++)
        b[i] = get(1);
    CHECK_EQ(gbt_stats().slabs, 2);
    CHECK(outside(b[0], a[0]));
    CHECK_EQ(gbt_stats().bytes_small, 2 * SLAB_UNITS * unit);
    /* A unit given back in the slab made last, then one in the first: each
     * is the next unit handed out, and no third slab is made. */
    put(b[5]);
    gb__chunk again = get(1);
    CHECK(again.base == b[5].base);
    put(a[200]);
    again = get(1);
    CHECK(again.base == a[200].base);
    CHECK_EQ(gbt_stats().slabs, 2);
    for (unsigned i = 0; i < SLAB_UNITS; i++) {
        put(a[i]);
        put(b[i]);
    }
    CHECK_EQ(gbt_stats().slabs, 0);
    CHECK_EQ(gbt_stats().bytes_small, 0);
    CHECK_EQ(gbt_stats().bytes_small_dirty, 0);
    CHECK_EQ(gbt_stats().bytes_meta, meta);
}

GB_TEST(a_request_no_run_of_free_units_fits_takes_a_new_slab)
{
    init_slabs();
    gb__chunk a[SLAB_UNITS];
    for (unsigned i = 0; i < SLAB_UNITS; i++)
        a[i] = get(1);
    /* Every other unit given back, the last one among them: 128 free,
     * no two side by side. */
    for (unsigned i = 1; i < SLAB_UNITS; i += 2)
        put(a[i]);
    gb__chunk two = get(2);
    CHECK_EQ(gbt_stats().slabs, 2);
    CHECK(outside(two, a[0]));
    put(two);
    for (unsigned i = 0; i < SLAB_UNITS; i += 2)
        put(a[i]);
    CHECK_EQ(gbt_stats().slabs, 0);
}

GB_TEST(freed_units_are_emptied_a_batch_at_a_time_and_only_they)
{
    init_slabs();
    GBT_SKIP_IF(batch >= SLAB_UNITS / 2, "the runtime's page is too large for two batches in a slab");
    gb__chunk a[SLAB_UNITS];
    for (unsigned i = 0; i < SLAB_UNITS; i++)
        a[i] = get(1);
    /* One unit short of a batch stays dirty, counted. */
    for (unsigned i = 0; i + 1 < batch; i++)
        put(a[i]);
    CHECK_EQ(nreleased, 0);
    CHECK_EQ(gbt_stats().bytes_small_dirty, (batch - 1) * unit);
    /* The unit that makes a batch empties the run, in one call. */
    put(a[batch - 1]);
    CHECK_EQ(nreleased, 1);
    check_call(&released[0], a[0].base, batch * unit);
    CHECK_EQ(gbt_stats().bytes_small_dirty, 0);
    /* The slab's last units, while its first ones are emptied: the run
     * ends at the slab's end. */
    for (unsigned i = SLAB_UNITS - (unsigned)batch; i < SLAB_UNITS; i++)
        put(a[i]);
    CHECK_EQ(nreleased, 2);
    check_call(&released[1], a[SLAB_UNITS - batch].base, batch * unit);
    CHECK_EQ(gbt_stats().bytes_small_dirty, 0);
    /* Two runs apart make two calls, neither touching the unit between. */
    for (unsigned i = 100; i < 100 + batch / 2; i++)
        put(a[i]);
    for (unsigned i = 101 + (unsigned)(batch / 2); i < 101 + batch; i++)
        put(a[i]);
    CHECK_EQ(nreleased, 4);
    check_call(&released[2], a[100].base, batch / 2 * unit);
    check_call(&released[3], a[101 + batch / 2].base, (batch - batch / 2) * unit);
    CHECK_EQ(nreused, 0);
}

GB_TEST(an_emptied_unit_is_told_to_the_os_before_it_is_written_again)
{
    init_slabs();
    gb__chunk a[SLAB_UNITS];
    for (unsigned i = 0; i < SLAB_UNITS; i++)
        a[i] = get(1);
    for (unsigned i = 0; i < batch; i++)
        put(a[i]);
    CHECK_EQ(nreleased, 1);
    /* The first unit again: emptied, so the OS hears of it, that unit alone. */
    gb__chunk c = get(1);
    CHECK(c.base == a[0].base);
    CHECK_EQ(nreused, 1);
    check_call(&reused[0], a[0].base, unit);
    CHECK_EQ(gbt_stats().bytes_small_dirty, 0);
    /* Given back and taken again before a batch: dirty, not emptied, so
     * the OS hears nothing, and the dirty bytes go back to none. */
    put(c);
    CHECK_EQ(gbt_stats().bytes_small_dirty, unit);
    c = get(1);
    CHECK(c.base == a[0].base);
    CHECK_EQ(nreused, 1);
    CHECK_EQ(gbt_stats().bytes_small_dirty, 0);
    if (batch >= 3) {
        /* A run of emptied units taken at once: one call for the run. */
        gb__chunk run = get(batch - 1);
        CHECK(run.base == a[1].base);
        CHECK_EQ(nreused, 2);
        check_call(&reused[1], a[1].base, (batch - 1) * unit);
        put(run);
    }
}

GB_TEST(a_slab_goes_back_told_to_the_os_whole_if_a_unit_of_it_was_emptied)
{
    init_slabs();
    /* Never emptied: the slab goes back with no word to the OS. */
    gb__chunk one = get(1), more = get(batch);
    put(one);
    put(more);
    CHECK_EQ(gbt_stats().slabs, 0);
    CHECK_EQ(nreleased, 0);
    CHECK_EQ(nreused, 0);
    /* Emptied, then taken again whole: nothing of it is emptied any more,
     * so again no word. */
    one = get(1);
    more = get(batch);
    put(more);
    CHECK_EQ(nreleased, 1);
    more = get(batch);
    CHECK_EQ(nreused, 1);
    put(one);
    put(more);
    CHECK_EQ(gbt_stats().slabs, 0);
    CHECK_EQ(nreused, 1);
    /* Emptied and not taken again: the whole slab is told of, once, as
     * the block cache may hand its mapping out again as it is. */
    gb__chunk a[SLAB_UNITS];
    for (unsigned i = 0; i < SLAB_UNITS; i++)
        a[i] = get(1);
    for (unsigned i = 0; i < SLAB_UNITS; i++)
        put(a[i]);
    CHECK_EQ(gbt_stats().slabs, 0);
    CHECK_EQ(nreused, 2);
    check_call(&reused[1], a[0].base, SLAB_UNITS * unit);
}

/* A fake mmap that always fails, as at the address space's limit. */
static void *refuse_map(size_t n, size_t align)
{
    (void)n;
    (void)align;
    errno = ENOMEM;
    return NULL;
}

GB_TEST(a_slab_past_the_budget_or_refused_by_the_os_is_counted_and_not_made)
{
    init_slabs();
    gb_stats before = gbt_stats();
    gb__cfg.map_budget = before.mappings; /* no mapping more */
    gb__chunk c;
    CHECK(!gb__small_get(&cache, unit, &c));
    gb_stats s = gbt_stats();
    CHECK_EQ(s.fallbacks_budget, before.fallbacks_budget + 1);
    CHECK_EQ(s.fallbacks_mmap, before.fallbacks_mmap);
    CHECK_EQ(s.slabs, 0);
    gb__cfg.map_budget = before.map_budget;
    gb__os.map = refuse_map;
    CHECK(!gb__small_get(&cache, unit, &c));
    s = gbt_stats();
    CHECK_EQ(s.fallbacks_budget, before.fallbacks_budget + 1);
    CHECK_EQ(s.fallbacks_mmap, before.fallbacks_mmap + 1);
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.mappings, before.mappings);
    check_slabs();
}

/* Threads that take and give back units of the same slabs at once: each
 * thread's own chunks stay its own, and the counts add up after. Under
 * ThreadSanitizer, any access to a slab outside the slabs' lock is a
 * reported race. */
enum { SHARING = 4, ROUNDS = 2000, HELD = 40 };

static void *share_slabs(void *arg)
{
    gb__cache own = {0};
    gb__chunk held[HELD];
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < HELD; i++) {
        CHECK(gb__small_get(&own, unit, &held[i]));
        memset(held[i].base, (int)(uintptr_t)arg, unit);
    }
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245 + 12345;
        int k = (int)(seed >> 16) % HELD;
        CHECK_EQ(((unsigned char *)held[k].base)[unit - 1], (unsigned char)(uintptr_t)arg);
        gb__small_put(&own, held[k]);
        CHECK(gb__small_get(&own, unit, &held[k]));
        memset(held[k].base, (int)(uintptr_t)arg, unit);
    }
    for (int i = 0; i < HELD; i++)
        gb__small_put(&own, held[i]);
    return NULL;
}

static atomic_int sharing;

static void *share_slabs_counted(void *arg)
{
    share_slabs(arg);
    atomic_fetch_sub(&sharing, 1);
    return NULL;
}

GB_TEST(threads_share_the_slabs_under_their_lock)
{
    init_slabs();
    /* The real release and reuse: the records are the single-threaded
     * cases'. */
    gb__os.release = real_release;
    gb__os.reuse = real_reuse;
    atomic_store(&sharing, SHARING);
    pthread_t t[SHARING];
    for (uintptr_t i = 0; i < SHARING; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, share_slabs_counted, (void *)(i + 1)), 0);
    /* The checker walks the slabs while the threads change them: it takes
     * their lock too. */
    while (atomic_load(&sharing) > 0)
        check_slabs();
    for (int i = 0; i < SHARING; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    check_slabs();
    gb_stats s = gbt_stats();
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.bytes_small, 0);
    CHECK_EQ(s.bytes_small_dirty, 0);
}
