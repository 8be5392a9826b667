/* populate.c -- fresh chained blocks made resident in one call, not faulted.
 *
 * With GB_POPULATE on, a region that chains a freshly mapped block asks
 * the OS (MADV_POPULATE_WRITE on Linux) to make all of it resident at
 * once, and counts its bytes in bytes_populated; a block from the cache or
 * a kept one is resident already and is not asked again; off asks nothing;
 * an OS that refuses, or has no such call, leaves the pages to be faulted
 * in and the region works as before. Two readings: the counter against
 * what the OS table was asked (a recording entry), and the resident size
 * from /proc (gb_resident_get). The cases that need the call skip where
 * the OS layer has none (macOS, the simulated one, kernels before 5.14).
 */
#include "common.h"
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static int (*real_populate)(void *, size_t);
static size_t calls, asked_bytes;
static int fail_with; /* 0: pass the call on; else fail it with this errno */
static bool below_regions; /* chunks asked for without a region */

static int recording_populate(void *p, size_t n)
{
    calls++;
    asked_bytes += n;
    /* Every range asked for is one whole block of a live region. */
    CHECK(below_regions || gb_region_of(p) != NULL);
    if (fail_with) {
        errno = fail_with;
        return -1;
    }
    return real_populate(p, n);
}

static void skip_without_populate(void)
{
    static char why[96];
    snprintf(why, sizeof why, "the %s OS layer has no call that populates a range", gb__os.name);
    GBT_SKIP_IF(gb__os.populate == NULL, why);
}

/* The runtime with populate and the cache as asked, 4 KiB pages (so the
 * chain's blocks are known: 128 KiB doubling to 1 MiB), and the OS
 * table's populate entry recording. */
static void init_recording(gb_populate populate, size_t cache_bytes)
{
    gb_options o;
    gb_options_init(&o);
    o.populate = populate;
    o.huge = GB_HUGE_OFF;
    o.cache_bytes = cache_bytes;
    gb_init(&o);
    skip_without_populate();
    real_populate = gb__os.populate;
    gb__os.populate = recording_populate;
}

/* 16 MiB in pieces of 64 KiB, each written whole, and checked back. */
static void fill_and_check(size_t bytes)
{
    size_t n = bytes / (64 * KIB);
    unsigned char **p = malloc(n * sizeof *p);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) {
        p[i] = gb_alloc(64 * KIB);
        memset(p[i], (int)(i & 0xff), 64 * KIB);
    }
    for (size_t i = 0; i < n; i++)
        CHECK(p[i][0] == (unsigned char)(i & 0xff) && p[i][64 * KIB - 1] == (unsigned char)(i & 0xff));
    free(p);
}

/* The chain for 16 MiB of 64 KiB pieces in 4 KiB pages (tests/huge.c):
 * blocks of 128, 256 and 512 KiB, then 17 of 1 MiB, every one fresh with
 * the cache off. */
#define CHAIN_16M ((128 + 256 + 512) * KIB + 17 * MIB)

GB_TEST(fresh_chained_blocks_are_populated_and_counted_exactly)
{
    init_recording(GB_POPULATE_ON, GB_CACHE_OFF);
    CHECK(strcmp(gb_populate_name(), "4k") == 0);
    gb_region *r = gb_enter();
    fill_and_check(16 * MIB);
    gb_stats s = gbt_stats();
    fprintf(stderr, "16 MiB: %zu calls, %zu bytes asked, bytes_populated %llu, blocks %zu\n", calls,
            asked_bytes, (unsigned long long)s.bytes_populated, s.blocks_live);
    CHECK_EQ(s.blocks_live, 20);
    CHECK_EQ(calls, 20);
    CHECK_EQ(asked_bytes, CHAIN_16M);
    CHECK_EQ(s.bytes_populated, CHAIN_16M);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

/* Read from outside: blocks taken and not yet written are resident when
 * populated (by nearly all their bytes), and not when off. */
static size_t resident_growth_of_unwritten_chain(void)
{
    gb_resident before, after;
    CHECK(gb_resident_get(&before) == 0);
    gb_region *r = gb_enter();
    /* 60 pieces of 64 KiB, none written: blocks of 128 KiB to 1 MiB and
     * four of 1 MiB; only their headers are written by the runtime. */
    for (int i = 0; i < 60; i++)
        CHECK(gb_alloc(64 * KIB) != NULL);
    CHECK(gb_resident_get(&after) == 0);
    gb_leave(r);
    return after.rss > before.rss ? after.rss - before.rss : 0;
}

GB_TEST(populated_blocks_are_resident_before_they_are_written)
{
    init_recording(GB_POPULATE_ON, GB_CACHE_OFF);
    GBT_SKIP_IF(GBT_EMULATED, "qemu-user accepts the advice and does nothing with it");
    size_t grew = resident_growth_of_unwritten_chain();
    uint64_t populated = gbt_stats().bytes_populated;
    fprintf(stderr, "unwritten chain: resident grew %zu KiB, bytes_populated %llu KiB\n", grew / KIB,
            (unsigned long long)populated / KIB);
    CHECK_EQ(populated, (128 + 256 + 512) * KIB + 4 * MIB);
    CHECK(grew + 256 * KIB >= populated);
}

/* map.h's promise, below the region: a chunk is populated once, however
 * often it is asked (the flag cleared by the first call). */
GB_TEST(a_fresh_chunk_is_populated_once)
{
    init_recording(GB_POPULATE_ON, GB_CACHE_OFF);
    below_regions = true;
    gb__mem *m = &gb__self()->mem;
    gb__chunk c = gb__chunk_get(&m->cache, 256 * KIB);
    CHECK(c.src == GB__SRC_MAP && c.fresh);
    gb__map_populate(&c);
    CHECK(!c.fresh);
    gb__map_populate(&c);
    CHECK_EQ(calls, 1);
    CHECK_EQ(asked_bytes, c.size);
    CHECK_EQ(gbt_stats().bytes_populated, c.size);
    gb__chunk_put(&m->cache, c);
    gbt_check_all_given_back();
}

GB_TEST(off_populates_nothing)
{
    init_recording(GB_POPULATE_OFF, GB_CACHE_OFF);
    CHECK(strcmp(gb_populate_name(), "off") == 0);
    gb_region *r = gb_enter();
    fill_and_check(16 * MIB);
    gb_leave(r);
    CHECK_EQ(calls, 0);
    CHECK_EQ(gbt_stats().bytes_populated, 0);
    GBT_SKIP_IF(GBT_EMULATED, "qemu-user's resident size is not judged");
    /* Nothing populated, nothing resident that was not written. */
    size_t grew = resident_growth_of_unwritten_chain();
    fprintf(stderr, "unwritten chain, off: resident grew %zu KiB\n", grew / KIB);
    CHECK_LT(grew, 1 * MIB);
    CHECK_EQ(calls, 0);
}

/* The OS refuses every populate: the blocks are faulted in as before,
 * nothing is counted, and the contents are right. */
GB_TEST(a_refused_populate_falls_back_to_faults)
{
    init_recording(GB_POPULATE_ON, GB_CACHE_OFF);
    fail_with = ENOMEM;
    gb_region *r = gb_enter();
    fill_and_check(16 * MIB);
    CHECK_EQ(calls, 20);
    CHECK_EQ(gbt_stats().bytes_populated, 0);
    CHECK_EQ(gbt_stats().blocks_live, 20);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

/* The OS has no such call (an older kernel, macOS): nothing is asked,
 * nothing counted, and the region works. */
GB_TEST(an_os_without_populate_faults_as_before)
{
    init_recording(GB_POPULATE_ON, GB_CACHE_OFF);
    gb__os.populate = NULL;
    gb_region *r = gb_enter();
    fill_and_check(16 * MIB);
    gb_leave(r);
    CHECK_EQ(calls, 0);
    CHECK_EQ(gbt_stats().bytes_populated, 0);
    gb_sweep();
    gbt_check_all_given_back();
}

/* Blocks from the cache, and blocks a reset kept, were written before:
 * they are resident and are not populated again. */
GB_TEST(cached_and_kept_blocks_are_not_populated_again)
{
    init_recording(GB_POPULATE_ON, 8 * MIB);
    gb_region *r = gb_enter();
    fill_and_check(2 * MIB);
    gb_leave(r);
    uint64_t first = gbt_stats().bytes_populated, hits = gbt_stats().cache_hits;
    size_t first_calls = calls;
    CHECK(first > 0);
    CHECK_EQ(first, asked_bytes);

    /* The same shape again: every block comes from the cache. */
    r = gb_enter();
    fill_and_check(2 * MIB);
    gb_stats s = gbt_stats();
    fprintf(stderr, "again: %llu cache hits, bytes_populated %llu (%llu before)\n",
            (unsigned long long)(s.cache_hits - hits), (unsigned long long)s.bytes_populated,
            (unsigned long long)first);
    CHECK(s.cache_hits > hits);
    CHECK_EQ(s.bytes_populated, first);
    CHECK_EQ(calls, first_calls);

    /* Reset keeping everything, and the same again: kept blocks only. */
    gb_region_reset(r, SIZE_MAX);
    CHECK(gbt_stats().bytes_kept > 0);
    fill_and_check(2 * MIB);
    CHECK_EQ(gbt_stats().bytes_populated, first);
    CHECK_EQ(calls, first_calls);
    gb_leave(r);

    /* A block of one large allocation is never populated; written, kept
     * by a reset and then taken for the chain, it is resident and is not
     * populated either. */
    r = gb_enter();
    memset(gb_alloc(2 * MIB), 0x5a, 2 * MIB);
    CHECK_EQ(gbt_stats().bytes_populated, first);
    gb_region_reset(r, SIZE_MAX);
    CHECK(gbt_stats().bytes_kept >= 2 * MIB);
    memset(gb_alloc(64 * KIB), 0x5a, 64 * KIB);
    CHECK(gbt_stats().bytes_kept < 2 * MIB); /* the kept block was taken */
    CHECK_EQ(gbt_stats().bytes_populated, first);
    CHECK_EQ(calls, first_calls);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

static void bad_populate_env(void)
{
    setenv("GB_POPULATE", "bogus", 1);
    gb_enter();
}

GB_TEST(a_malformed_populate_setting_stops)
{
    gbt_expect_death(bad_populate_env, "GB_POPULATE=bogus: expected on, off or auto");
}

/* With huge pages, auto leaves them to their one fault per 2 MiB and
 * populates the blocks in 4 KiB pages only; on populates both ("all").
 * Huge pages are asked for as auto does, on where the OS has them: on
 * alone would stop where it has none (the simulated macOS layer). */
static void init_huge_with(gb_populate populate)
{
    gb_options o;
    gb_options_init(&o);
    o.huge = GB_HUGE_AUTO;
    o.populate = populate;
    gb_init(&o);
}

static void auto_with_huge_pages(void)
{
    init_huge_with(GB_POPULATE_AUTO);
    fprintf(stderr, "populate %s, huge %zu\n", gb_populate_name(), gb__cfg.huge);
}

GB_TEST(auto_leaves_huge_pages_to_their_fault_and_on_populates_them)
{
    char out[256];
    CHECK_EQ(gbt_in_child_capturing(auto_with_huge_pages, out, sizeof out), 0); /* before this process's init */
    init_huge_with(GB_POPULATE_ON);
    skip_without_populate();
    GBT_SKIP_IF(gb__os.huge_page == 0, "no transparent huge pages here (off, or the OS has none)");
    CHECK_EQ(gb__cfg.huge, gb__os.huge_page); /* the OS has them, and auto takes them */
    CHECK(strcmp(gb_populate_name(), "all") == 0);
    CHECK(strstr(out, "populate 4k, huge ") != NULL);
}

/* By default (auto), blocks in 4 KiB pages are populated where the OS
 * can, and the name says so. */
GB_TEST(auto_populates_blocks_in_4k_pages)
{
    gb_options o;
    gb_options_init(&o);
    o.huge = GB_HUGE_OFF;
    gb_init(&o);
    CHECK(strcmp(gb_populate_name(), gb__os.populate ? "4k" : "off") == 0);
}
