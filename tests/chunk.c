/* chunk.c -- the mapping budget, failing mmap and failing munmap.
 *
 * The OS table is swapped for fakes that fail on demand (as jemalloc's hook
 * tests do), and the real limits are reached in child processes: RLIMIT_AS
 * for mmap, and vm.max_map_count itself for munmap. In every case the
 * runtime must fall back, count it, lose nothing and crash nowhere.
 */

#include "common.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024 * 1024)

/* The map source with the block cache off: these tests follow every
 * block to its munmap. */
static void init_map_huge(size_t budget, gb_huge huge)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.cache_bytes = GB_CACHE_OFF;
    o.map_budget = budget;
    o.huge = huge;
    gb_init(&o);
}

static void init_map(size_t budget)
{
    init_map_huge(budget, GB_HUGE_AUTO);
}

static void fill(size_t bytes)
{
    for (size_t t = 0; t < bytes; t += 32 * 1024)
        memset(gb_alloc(32 * 1024), 0x5a, 32 * 1024);
}

GB_TEST(past_the_budget_blocks_come_from_malloc)
{
    init_map(5);
    gb_region *r = gb_enter();
    fill(64 * MIB);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.mappings, 5);
    CHECK(s.fallbacks_budget > 0);
    CHECK(s.bytes_heap > 50 * MIB);
    gb_leave(r);
    s = gbt_stats();
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.bytes_heap, 0);
}

GB_TEST(the_default_budget_stays_under_the_os_limit)
{
    gb_init(NULL);
    size_t limit = gb__os.map_limit;
    GBT_SKIP_IF(limit == 0, "this OS sets no mapping limit");
    CHECK(gbt_stats().map_budget < limit);
    CHECK(gbt_stats().map_budget + 1024 <= limit);
}

static int map_calls, aligned_map_calls, unmap_calls, release_calls, fail_unmaps;
static void *(*real_map)(size_t, size_t);
static int (*real_unmap)(void *, size_t);
static int (*real_release)(void *, size_t);

static void *failing_map(size_t n, size_t align)
{
    map_calls++;
    aligned_map_calls += align > gb__os.page_size;
    (void)n;
    errno = ENOMEM;
    return NULL;
}

GB_TEST(a_failing_mmap_falls_back_to_malloc)
{
    init_map(0);
    gb__os.map = failing_map;
    gb_region *r = gb_enter();
    fill(8 * MIB);
    gb_stats s = gbt_stats();
    CHECK(map_calls > 0);
    /* A block of a huge page or more asks for an aligned mapping first,
     * then for any mapping; a region asks for smaller mappings down to
     * the smallest that holds the request (exhaustion.c), then falls back
     * to malloc: at least one refused map per fallback, and every block
     * from malloc. */
    CHECK(s.fallbacks_mmap > 0);
    CHECK((uint64_t)(map_calls - aligned_map_calls) >= s.fallbacks_mmap);
    CHECK_EQ(aligned_map_calls > 0, gb_huge_page() > 0);
    CHECK_EQ(s.mappings, 0);
    CHECK(s.bytes_heap >= gb_region_bytes(r)); /* and the page of region descriptors */
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_heap, 0);
}

static int unmap_fails_then_works(void *p, size_t n)
{
    unmap_calls++;
    if (fail_unmaps > 0) {
        fail_unmaps--;
        errno = ENOMEM;
        return -1;
    }
    return real_unmap(p, n);
}

static int counting_release(void *p, size_t n)
{
    release_calls++;
    return real_release(p, n);
}

GB_TEST(a_failing_munmap_empties_the_range_and_unmaps_it_later)
{
    init_map(0);
    real_unmap = gb__os.unmap;
    real_release = gb__os.release;
    gb__os.unmap = unmap_fails_then_works;
    gb__os.release = counting_release;
    gb_region *r = gb_enter();
    fill(32 * MIB);
    size_t maps = gbt_stats().mappings;
    CHECK(maps > 10);
    /* The address index's tables past the thread's own are mappings too,
     * counted in bytes_meta, not in mappings (index.c): the leave empties
     * them, and their unmaps fail the same way. */
    const gb__index *ix = &gb__self()->mem.index;
    size_t tables = (size_t)ix->fine.mapped + (size_t)ix->coarse.mapped;
    CHECK_EQ(tables, 1);
    size_t meta = gbt_stats().bytes_meta;
    fail_unmaps = 1000; /* every unmap fails while leaving */
    gb_leave(r);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.unmaps_pending, maps + tables);
    CHECK_EQ(s.unmap_failures, maps + tables);
    CHECK_EQ((size_t)release_calls, maps + tables);
    CHECK_EQ(s.mappings, maps); /* still mapped, still counted */
    CHECK_EQ(s.bytes_meta, meta);
    gb_resident res;
    gb_resident_get(&res);
    /* But empty: the memory left, by the OS's reading of a release. */
    CHECK_LT(gbt_held(&res), 24 * MIB);
    fail_unmaps = 0;
    /* The next region's first unmap retries the pending ones. */
    r = gb_enter();
    fill(1 * MIB);
    gb_leave(r);
    s = gbt_stats();
    CHECK_EQ(s.unmaps_pending, 0);
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.bytes_meta, 0);
}

static void *counting_map(size_t n, size_t align)
{
    map_calls++;
    return real_map(n, align);
}

GB_TEST(growth_by_copy_maps_copies_and_unmaps)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.growth = GB_GROW_COPY;
    o.block_cap = MIB; /* 2 MiB and up: blocks of their own */
    gb_init(&o);
    real_map = gb__os.map;
    gb__os.map = counting_map;
    gb_region *r = gb_enter();
    char *p = gb_alloc(2 * MIB);
    memset(p, 0x11, 2 * MIB);
    int before = map_calls;
    p = gb_realloc(p, 2 * MIB, 6 * MIB);
    CHECK_EQ(map_calls, before + 1);
    CHECK(p[2 * MIB - 1] == 0x11);
    CHECK_EQ(gbt_stats().grows_copy, 1);
    CHECK_EQ(gbt_stats().grows_remap, 0);
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_mapped, 0);
}

GB_TEST(growth_by_remap_keeps_contents)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.growth = GB_GROW_REMAP;
    o.block_cap = MIB; /* 2 MiB and up: blocks of their own */
    /* Asked of the OS layer before gb_init, which stops the process when
     * remap is asked for where there is none (macOS). */
    gb__os_init();
    GBT_SKIP_IF(!gb__os.remap, "this OS has no mremap");
    gb_init(&o);
    gb_region *r = gb_enter();
    char *p = gb_alloc(2 * MIB);
    memset(p, 0x22, 2 * MIB);
    for (int i = 0; i < 5; i++) {
        gb_alloc(100); /* other allocations do not stop the solo block growing */
        p = gb_realloc(p, (size_t)(2 + i) * MIB, (size_t)(3 + i) * MIB);
        CHECK(p[0] == 0x22 && p[2 * MIB - 1] == 0x22);
        p[(2 + i) * MIB] = 0x22;
    }
    CHECK_EQ(gbt_stats().grows_remap, 5);
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_mapped, 0);
}

static void under_rlimit_as(void)
{
    init_map(0);
    /* Warm malloc's heap: 8 MiB freed inside it, held open by a small chunk
     * on top, so malloc can still serve blocks when mmap cannot. */
    void *volatile warm[256]; /* volatile: the compiler may not drop the pairs */
    for (int i = 0; i < 256; i++)
        warm[i] = malloc(32 * 1024);
    void *volatile keep = malloc(32 * 1024); /* from the top, like the ones before it */
    for (int i = 0; i < 256; i++)
        free(warm[i]);
    /* Then let the address space grow by 1 MiB at most: every mmap of a
     * block fails from here on. */
    size_t vm = gbt_vm_size();
    if (!vm)
        _exit(77);
    struct rlimit rl = {vm + MIB, vm + MIB};
    CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
    gb_region *r = gb_enter();
    for (int i = 0; i < 64; i++)
        memset(gb_alloc(64 * 1024), 1, 64 * 1024);
    gb_stats s = gbt_stats();
    fprintf(stderr, "under RLIMIT_AS: %ju mmap fallbacks, %zu bytes from malloc, %zu mapped\n",
            (uintmax_t)s.fallbacks_mmap, s.bytes_heap, s.bytes_mapped);
    CHECK(s.fallbacks_mmap > 0);
    gb_leave(r);
    s = gbt_stats();
    CHECK_EQ(s.bytes_heap, 0);
    free(keep);
}

GB_TEST(mmap_failing_under_rlimit_as_falls_back)
{
    GBT_SKIP_IF(GBT_SANITIZED, "sanitizers reserve terabytes of address space up front");
    GBT_SKIP_IF(GBT_EMULATED, "the address-space limit would bind the emulator");
    GBT_SKIP_IF(access("/proc/self/statm", R_OK) != 0, "no /proc to size the address space with");
    int status = gbt_in_child(under_rlimit_as);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Fills the process's mapping table: single pages of alternating
 * protection, so the kernel cannot merge them, until mmap says no. */
static size_t exhaust_mappings(void ***pages)
{
    size_t n = 0, cap = 1 << 17;
    void **v = malloc(cap * sizeof *v);
    CHECK(v != NULL);
    for (;;) {
        int prot = n % 2 ? PROT_READ : PROT_NONE;
        void *p = mmap(NULL, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            break;
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            CHECK(v != NULL);
        }
        v[n++] = p;
    }
    *pages = v;
    return n;
}

static void at_the_map_limit(void)
{
    /* Without huge pages the blocks are 1 MiB at most and side by side,
     * so the kernel merges them and unmapping one splits a mapping. */
    init_map_huge(0, GB_HUGE_OFF);
    gb_region *r = gb_enter();
    fill(48 * MIB);
    size_t maps = gbt_stats().mappings;
    void **pages;
    size_t filler = exhaust_mappings(&pages);
    gb_leave(r); /* unmaps that would split a merged mapping now fail */
    gb_stats s = gbt_stats();
    gb_resident res;
    gb_resident_get(&res);
    fprintf(stderr, "at vm.max_map_count: %zu filler mappings; %zu runtime mappings; %ju munmap failures, "
            "%zu pending; %.1f MiB resident\n",
            filler, maps, (uintmax_t)s.unmap_failures, s.unmaps_pending, res.rss / (double)MIB);
    CHECK(s.unmap_failures > 0);
    CHECK_EQ(s.unmaps_pending + 0, s.mappings);
    CHECK_LT(res.rss, 32 * MIB);
    /* Below the limit again, the pending unmaps complete at the next one. */
    for (size_t i = 0; i < 256 && i < filler; i++)
        munmap(pages[i], 4096);
    r = gb_enter();
    fill(1 * MIB);
    gb_leave(r);
    s = gbt_stats();
    CHECK_EQ(s.unmaps_pending, 0);
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.bytes_mapped, 0);
}

GB_TEST(at_the_real_mapping_limit_nothing_is_lost)
{
    GBT_SKIP_IF(GBT_SANITIZED, "the sanitizers' own mappings change what the limit means");
    /* The OS layer's word, not /proc's: a simulated layer with no limit
     * runs on a kernel that has one. */
    gb__os_init();
    GBT_SKIP_IF(gb__os.map_limit == 0, "this OS sets no mapping limit");
    int status = gbt_in_child(at_the_map_limit);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ------------------------------------------------------------ the cache */

static void init_cache_huge(size_t bytes, gb_huge huge)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.cache_bytes = bytes;
    o.huge = huge;
    gb_init(&o);
}

static void init_cache(size_t bytes)
{
    init_cache_huge(bytes, GB_HUGE_AUTO);
}

/* A request of one of the largest classes looks for a cached block in
 * its own list and the ones above it, and no further than the last list:
 * past it lies the cache's byte count, not a list. The cache holds a block
 * (so that count is not zero); the request is refused or mapped, by the
 * host's overcommit rule, and the cached block is still there. */
GB_TEST(a_request_of_the_largest_classes_looks_no_further_than_the_last_list)
{
    init_cache(0);
    gb_region *r = gb_enter();
    fill(4 * MIB);
    gb_leave(r);
    uint64_t cached = gbt_stats().bytes_cached;
    CHECK(cached > 0);
    r = gb_enter();
    void *p = gb_try_alloc((size_t)64 << 30);
    gb_leave(r);
    (void)p;
    CHECK(gbt_stats().bytes_cached >= cached);
}

/* The cache keeps blocks of its classes only: a mapping of another size
 * given back (below the smallest class, or between two classes) is
 * unmapped, since a list holds blocks of one size. Every chunk the
 * runtime maps has a class size; these are mapped here, counted as the
 * runtime counts its own. */
static void give_back_a_mapping_of(size_t size)
{
    CHECK(gb__map_reserve(1)); /* counts the mapping */
    char *p = gb__os.map(size, gb__os.page_size);
    CHECK(p != NULL);
    GB__ADD(bytes_mapped, size);
    gb__chunk_put(&gb__self()->mem.cache, (gb__chunk){.base = p, .size = size, .src = GB__SRC_MAP});
}

GB_TEST(a_mapping_of_no_class_size_is_unmapped_not_cached)
{
    init_cache(0);
    gb_stats before = gbt_stats();
    size_t min = gb__cfg.map_min, page = gb__os.page_size;
    if (min / 2 >= page && (min / 2) % page == 0)
        give_back_a_mapping_of(min / 2);
    /* Between the classes of 2 min and 2.5 min: a quarter-octave step is
     * min / 2 there, so 2 min + a page is on no class when page < min / 2. */
    if (page < min / 2)
        give_back_a_mapping_of(2 * min + page);
    gb_stats after = gbt_stats();
    CHECK_EQ(after.bytes_cached, before.bytes_cached);
    CHECK_EQ(after.bytes_mapped, before.bytes_mapped);
    CHECK_EQ(after.mappings, before.mappings);
}

GB_TEST(given_back_blocks_are_cached_up_to_the_bound_and_reused)
{
    init_cache(0); /* the default bound */
    gb_region *r = gb_enter();
    fill(64 * MIB);
    gb_leave(r);
    gb_stats s = gbt_stats();
    CHECK(s.bytes_cached > 0);
    CHECK(s.bytes_cached <= GB_CACHE_DEFAULT); /* the spare descriptor page within it */
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.mappings, 0);
    uint64_t hits = s.cache_hits;
    r = gb_enter();
    fill(4 * MIB);
    gb_leave(r);
    CHECK(gbt_stats().cache_hits > hits);
    gb_sweep();
    s = gbt_stats();
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.mappings_cached, 0);
}

/* A cached block is still a mapping: it counts against the budget, so the
 * runtime's mappings, cached or not, stay within it however full the cache
 * is; gb_stats shows it in mappings_cached and not in mappings. Four
 * nested regions leave four blocks of 16 KiB in the cache, which no block
 * of the large region below is served from. */
GB_TEST(cached_blocks_count_against_the_budget)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.huge = GB_HUGE_OFF;
    o.map_budget = 8;
    gb_init(&o);
    gb_region *r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = gb_enter();
        memset(gb_alloc(14 * 1024), 0x5a, 14 * 1024);
    }
    for (int i = 3; i >= 0; i--)
        gb_leave(r[i]);
    gb_stats s = gbt_stats();
    CHECK(s.mappings_cached >= 4);
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.bytes_mapped, 0);
    size_t cached = s.mappings_cached;
    gb_region *big = gb_enter();
    fill(8 * MIB);
    s = gbt_stats();
    /* The region's descriptor page may come from the cache (its spare
     * page); the four blocks stay. */
    CHECK(s.mappings_cached + 1 >= cached);
    CHECK(s.mappings_cached >= 4);
    CHECK(s.fallbacks_budget > 0);
    CHECK(s.mappings > 0);
    CHECK(s.mappings + s.mappings_cached <= s.map_budget);
    gb_leave(big);
    s = gbt_stats();
    CHECK_EQ(s.mappings, 0);
    CHECK(s.mappings_cached <= s.map_budget);
}

/* The cache hands a block out only for a request its size class holds:
 * a block of 1.5 MiB (a solo block, its class between 1.25 and 1.75 MiB)
 * given back serves a request of 1.4 MiB, and not one of 1.7 MiB, which a
 * block of its size cannot hold. */
/* The smallest class, map_min bytes (a page of region descriptors is
 * one), is a class like the others: a block of it given back is taken
 * again from the cache. */
GB_TEST(a_block_of_the_smallest_class_comes_back_from_the_cache)
{
    init_cache(0); /* the default bound */
    gb__cache *cache = &gb__self()->mem.cache;
    gb__chunk c = gb__chunk_get(cache, gb__cfg.map_min);
    CHECK_EQ(c.src, GB__SRC_MAP);
    CHECK_EQ(c.size, gb__cfg.map_min);
    gb__chunk_put(cache, c);
    CHECK_EQ(gbt_stats().bytes_cached, gb__cfg.map_min);
    uint64_t hits = gbt_stats().cache_hits;
    gb__chunk again = gb__chunk_get(cache, gb__cfg.map_min);
    CHECK_EQ(gbt_stats().cache_hits, hits + 1);
    CHECK(again.base == c.base);
    CHECK_EQ(gbt_stats().bytes_cached, 0);
    gb__chunk_put(cache, again);
    gb_sweep();
    gbt_check_all_given_back();
}

/* A request takes a cached block of its class or of the next eight, up to
 * four times its size (map.c): one exactly four times larger serves it,
 * one of the class after does not. */
GB_TEST(a_cached_block_up_to_four_times_the_request_serves_it)
{
    init_cache_huge(0, GB_HUGE_OFF);
    gb__cache *cache = &gb__self()->mem.cache;
    size_t s = gb__cfg.map_min, four = 4 * s, five = 5 * s;
    gb__chunk c = gb__chunk_get(cache, four);
    CHECK_EQ(c.size, four);
    gb__chunk_put(cache, c);
    uint64_t hits = gbt_stats().cache_hits;
    gb__chunk got = gb__chunk_get(cache, s);
    CHECK_EQ(gbt_stats().cache_hits, hits + 1);
    CHECK(got.base == c.base && got.size == four);
    gb__chunk_put(cache, got);
    gb_sweep(); /* the cache empty again */
    c = gb__chunk_get(cache, five);
    CHECK_EQ(c.size, five);
    gb__chunk_put(cache, c);
    hits = gbt_stats().cache_hits;
    got = gb__chunk_get(cache, s);
    CHECK_EQ(gbt_stats().cache_hits, hits);
    CHECK_EQ(got.size, s);
    gb__chunk_put(cache, got);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_cached_block_serves_only_requests_its_class_holds)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.huge = GB_HUGE_OFF;
    gb_init(&o);
    const size_t small = 1400 * 1024, mid = 1450 * 1024, large = 1700 * 1024;
    gb_region *r = gb_enter();
    memset(gb_alloc(mid), 1, mid);
    gb_leave(r);
    gb_stats s = gbt_stats();
    CHECK(s.bytes_cached >= 1536 * 1024);
    uint64_t hits = s.cache_hits;
    r = gb_enter();
    char *p = gb_alloc(large);
    memset(p, 2, large);
    CHECK(p[large - 1] == 2);
    CHECK_EQ(gbt_stats().cache_hits, hits);
    gb_leave(r);
    hits = gbt_stats().cache_hits;
    r = gb_enter();
    p = gb_alloc(small);
    memset(p, 3, small);
    CHECK(gbt_stats().cache_hits > hits);
    gb_leave(r);
}

GB_TEST(the_cache_can_be_turned_off_by_environment)
{
    setenv("GB_CACHE", "off", 1);
    setenv("GB_BLOCKS", "map", 1);
    gb_region *r = gb_enter();
    fill(8 * MIB);
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_cached, 0);
}

GB_TEST(a_small_cache_bound_holds)
{
    setenv("GB_CACHE", "64", 1); /* KiB */
    setenv("GB_BLOCKS", "map", 1);
    gb_region *r = gb_enter();
    fill(8 * MIB);
    gb_leave(r);
    /* The bound, the spare descriptor page within it. */
    CHECK(gbt_stats().bytes_cached <= 64 * 1024);
    CHECK(gbt_stats().bytes_cached > 0);
}

static void bad_cache_env(void)
{
    setenv("GB_CACHE", "lots", 1);
    gb_enter();
}

GB_TEST(a_malformed_cache_setting_stops)
{
    gbt_expect_death(bad_cache_env, "GB_CACHE=lots: expected a size in KiB or off");
}

/* A thread left a large region, so its cache is full of that region's
 * blocks; then it enters and leaves small regions one at a time. Each
 * leave gives back a slab (its last chunk went) and the region's
 * descriptor page (its last slot went): neither may cost a map at the
 * next enter, so the cache makes room for the newest block, and the
 * descriptor page is kept whatever the cache holds. */
/* Room is made from every class, the smallest too: a cache full of
 * blocks of map_min bytes gives them up for a larger newest block. */
GB_TEST(a_cache_full_of_the_smallest_blocks_makes_room_from_them)
{
    init_cache_huge(2 * GB__MAP_MIN, GB_HUGE_OFF);
    CHECK_EQ(gb__cfg.map_min, GB__MAP_MIN);
    gb__cache *cache = &gb__self()->mem.cache;
    gb__chunk a = gb__chunk_get(cache, GB__MAP_MIN), b = gb__chunk_get(cache, GB__MAP_MIN);
    gb__chunk c = gb__chunk_get(cache, GB__MAP_MIN + GB__MAP_MIN / 4); /* the next class */
    gb__chunk_put(cache, a);
    gb__chunk_put(cache, b);
    CHECK_EQ(gbt_stats().bytes_cached, 2 * GB__MAP_MIN);
    gb__chunk_put(cache, c);
    /* The small blocks went, one by one until there was room (one left
     * 16 KiB, short of the newest's 20): the newest is cached. */
    CHECK_EQ(gbt_stats().bytes_cached, c.size);
    uint64_t hits = gbt_stats().cache_hits;
    gb__chunk again = gb__chunk_get(cache, c.size);
    CHECK_EQ(gbt_stats().cache_hits, hits + 1);
    CHECK(again.base == c.base);
    gb__chunk_put(cache, again);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_full_cache_makes_room_for_the_newest_block)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.block_cap = 512 * 1024; /* the large region's blocks: 512 KiB, not a slab's 1 MiB */
    gb_init(&o);
    gb_region *r = gb_enter();
    fill(32 * MIB);
    gb_leave(r);
    CHECK(gbt_stats().bytes_cached >= GB_CACHE_DEFAULT - 512 * 1024);
    real_map = gb__os.map;
    gb__os.map = counting_map;
    map_calls = 0;
    for (int i = 0; i < 1000; i++) {
        gb_region *s = gb_enter();
        memset(gb_alloc(100), i, 100);
        gb_leave(s);
    }
    gb__os.map = real_map;
    fprintf(stderr, "1,000 small regions after a full cache: %d maps\n", map_calls);
    CHECK_LT(map_calls, 2); /* the first slab at most */
    CHECK(gbt_stats().bytes_cached <= GB_CACHE_DEFAULT + gb__cfg.map_min);
    gb_sweep();
    gbt_check_all_given_back();
    CHECK_EQ(gbt_stats().bytes_cached, 0);
}

/* The cache holds the bound in one block, and a smaller block is given
 * back: the cache makes room by unmapping the one it holds, and the room
 * that makes is the newest block's, which is kept. */
GB_TEST(a_cache_full_with_one_block_keeps_the_newest_in_its_place)
{
    init_cache(128 * 1024);
    gb__chunk big = gb__chunk_get(&gb__self()->mem.cache, 128 * 1024), small = gb__chunk_get(&gb__self()->mem.cache, 64 * 1024);
    CHECK(big.src == GB__SRC_MAP && small.src == GB__SRC_MAP);
    gb__chunk_put(&gb__self()->mem.cache, big);
    CHECK_EQ(gbt_stats().bytes_cached, 128 * 1024);
    gb__chunk_put(&gb__self()->mem.cache, small);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.bytes_cached, 64 * 1024);
    CHECK_EQ(s.mappings_cached, 1);
    CHECK_EQ(s.mappings, 0);
    /* The next chunk of that size is the cached one. */
    gb__chunk again = gb__chunk_get(&gb__self()->mem.cache, 64 * 1024);
    CHECK(again.base == small.base);
    gb__chunk_put(&gb__self()->mem.cache, again);
    gb_sweep();
    gbt_check_all_given_back();
    CHECK_EQ(gbt_stats().bytes_cached, 0);
}

/* --------------------------------------------- one bound for the process
 *
 * Eight threads each leave a region of 8 MiB at once and wait: with a bound
 * per thread they would keep eight bounds between them; the process keeps
 * one. A fake unmap counts what does not fit and goes back. */
enum { CACHE_THREADS = 8 };
/* The threads and the main thread meet twice; macOS has no
 * pthread_barrier_t, so counters stand in for it. */
static atomic_int threads_left, counters_read;
static atomic_int unmaps;
static int (*real_unmap_for_count)(void *, size_t);

static int counting_unmap(void *p, size_t n)
{
    atomic_fetch_add(&unmaps, 1);
    return real_unmap_for_count(p, n);
}

static void *leave_and_wait(void *arg)
{
    (void)arg;
    gb_region *r = gb_enter();
    fill(8 * MIB);
    gb_leave(r);
    atomic_fetch_add(&threads_left, 1);
    while (!atomic_load(&counters_read)) /* the main thread reads the counters */
        usleep(1000);
    return NULL; /* and the exit gives the cache back */
}

GB_TEST(eight_threads_share_one_cache_bound)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.cache_bytes = 2 * MIB;
    gb_init(&o);
    real_unmap_for_count = gb__os.unmap;
    gb__os.unmap = counting_unmap;
    pthread_t th[CACHE_THREADS];
    for (int i = 0; i < CACHE_THREADS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, leave_and_wait, NULL), 0);
    while (atomic_load(&threads_left) < CACHE_THREADS)
        usleep(1000);
    gb_stats s = gbt_stats();
    /* Each thread's one spare page of descriptors is within the bound. */
    fprintf(stderr, "%d threads left 8 MiB each: %zu KiB cached (bound %zu KiB), %d unmaps\n",
            CACHE_THREADS, s.bytes_cached / 1024, o.cache_bytes / 1024, atomic_load(&unmaps));
    CHECK(s.bytes_cached <= o.cache_bytes);
    CHECK(s.bytes_cached >= o.cache_bytes / 2); /* the bound is used, not refused */
    CHECK(atomic_load(&unmaps) > 0);            /* the rest went back */
    CHECK_EQ(s.regions_live, 0);
    atomic_store(&counters_read, 1);
    for (int i = 0; i < CACHE_THREADS; i++)
        pthread_join(th[i], NULL);
    gb__os.unmap = real_unmap_for_count;
    s = gbt_stats();
    CHECK_EQ(s.bytes_cached, 0); /* the threads' exits gave it back */
    gb_sweep();
    gbt_check_all_given_back();
}

/* A container's arena that cannot grow: neither mmap nor malloc has 2^59
 * bytes. The stopping family stops, naming the size and each refusal:
 * both where the arena's blocks are mappings, malloc's alone where they
 * come from malloc. A vec of 2^56-byte elements, compacted into an arena
 * while empty, asks for eight of them at its first push. */
static void grow_an_arena_past_memory(gb_blocks blocks)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = blocks;
    gb_init(&o);
    gb_enter();
    gb_vec *v = gb_vec_new((size_t)1 << 56);
    gb_vec_compact(v);
    CHECK(gb_vec_arena_bytes(v) > 0);
    gb_vec_push(v, NULL);
}

static void grow_a_mapped_arena_past_memory(void)
{
    grow_an_arena_past_memory(GB_BLOCKS_MAP);
}

static void grow_a_malloced_arena_past_memory(void)
{
    grow_an_arena_past_memory(GB_BLOCKS_HEAP);
}

GB_TEST(an_arena_that_cannot_grow_stops_naming_each_refusal)
{
    gbt_expect_death(grow_a_mapped_arena_past_memory,
                     "out of memory: no chunk of 576460752303423488 bytes (mmap: Cannot allocate memory; malloc "
                     "failed too)");
    gbt_expect_death(grow_a_malloced_arena_past_memory,
                     "out of memory: malloc of 576460752303423488 bytes failed");
}
