/* huge.c -- transparent huge pages for large blocks, and their goodbye.
 *
 * A block of a huge page or more starts on a huge page boundary and is
 * advised MADV_HUGEPAGE, so one fault fills 2 MiB; leaving gives it back
 * with munmap like any block, so the huge pages leave at once. Two
 * readings of each run: the runtime's bytes_huge, and the kernel's
 * AnonHugePages (gb_resident.anon_huge). The tests that need the kernel's
 * huge pages skip, naming the THP mode, where it gives none; the rest run
 * on a fake OS table everywhere huge pages are on.
 */

/* mremap with MREMAP_FIXED, for the fake remap (Linux only). */
#define _GNU_SOURCE

#include "common.h"
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static void fill(size_t bytes)
{
    for (size_t t = 0; t < bytes; t += 64 * 1024)
        memset(gb_alloc(64 * 1024), 0x5a, 64 * 1024);
}

static gb_resident resident(void)
{
    gb_resident r;
    CHECK(gb_resident_get(&r) == 0);
    return r;
}

static void skip_without_huge_pages(void)
{
    static char why[96];
    snprintf(why, sizeof why, "%s gives no transparent huge pages (mode %s)", gb__os.name, gb__os.huge_mode);
    GBT_SKIP_IF(gb_huge_page() == 0, why);
}

/* Where THP is "madvise" or "always", with auto's huge pages and nothing
 * populated (so every block of huge size is advised: the tests of the host's
 * choice are at the end): a 32 MiB region is mostly in huge pages while entered, and none
 * are left after the leave (the cache keeps none of its 2 MiB-and-up
 * blocks, which are past room). */
GB_TEST(large_blocks_are_huge_and_leave_at_once)
{
    gb_options o;
    gb_options_init(&o);
    o.populate = GB_POPULATE_OFF;
    gb_init(&o);
    skip_without_huge_pages();
    gb_resident base = resident();
    gb_region *r = gb_enter();
    fill(32 * MIB);
    gb_stats s = gbt_stats();
    gb_resident peak = resident();
    fprintf(stderr, "32 MiB entered: bytes_huge %zu MiB, AnonHugePages %zu MiB (%zu before), rss %zu MiB\n",
            s.bytes_huge / MIB, peak.anon_huge / MIB, base.anon_huge / MIB, peak.rss / MIB);
    /* Chains double to 64 MiB: 2, 4, 8 and 16 MiB blocks and one of 32
     * (the 16 MiB it fills of it are in huge pages too). */
    CHECK(s.bytes_huge >= 30 * MIB);
    /* The kernel gives huge pages where it finds free 2 MiB runs; on a
     * fragmented machine it may give some in 4 KiB pages instead. Under
     * qemu-user the advice does not take (measured: AnonHugePages did not
     * move while 32 MiB were entered), so only the leave is judged. */
    if (GBT_EMULATED)
        fprintf(stderr, "not judged under emulation: AnonHugePages while entered\n");
    else
        CHECK(peak.anon_huge > base.anon_huge);
    gb_leave(r);
    gb_resident after = resident();
    fprintf(stderr, "left: AnonHugePages %zu KiB, rss %zu MiB (%zu at start)\n", after.anon_huge / 1024,
            after.rss / MIB, base.rss / MIB);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
    CHECK_EQ(after.anon_huge, base.anon_huge);
    CHECK_LT(after.rss, base.rss + GB_CACHE_DEFAULT + 2 * MIB);
    gb_sweep();
    gbt_check_all_given_back();
}

/* GB_HUGE=off, as the option: no block is advised, chains stop at 1 MiB,
 * and the kernel holds no huge page of the runtime's (in "madvise" mode;
 * in "always" mode it may give any aligned range some by itself). */
GB_TEST(off_advises_nothing_and_caps_blocks_at_1_mib)
{
    gb_options o;
    gb_options_init(&o);
    o.huge = GB_HUGE_OFF;
    gb_init(&o);
    CHECK_EQ(gb_huge_page(), 0);
    gb_resident base = resident();
    gb_region *r = gb_enter();
    fill(16 * MIB);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.bytes_huge, 0);
    /* The first 64 KiB piece takes a 128 KiB block, and the chain doubles
     * from there: 128, 256 and 512 KiB hold 1, 3 and 7 pieces, and the
     * other 245 of the 256 take 17 blocks of 1 MiB (15 pieces each). */
    CHECK_EQ(s.blocks_live, 20);
    if (strcmp(gb__os.huge_mode, "always") != 0)
        CHECK_EQ(resident().anon_huge, base.anon_huge);
    gb_leave(r);
}

static int maps_aligned, maps_plain, advised, advise_fails;
static void *(*real_map)(size_t, size_t);
static int (*real_advise)(void *, size_t);

static void *recording_map(size_t n, size_t align)
{
    void *p = real_map(n, align);
    if (align > gb__os.page_size) {
        maps_aligned++;
        CHECK(n >= gb_huge_page());
        CHECK(((uintptr_t)p & (align - 1)) == 0);
    } else {
        maps_plain++;
    }
    return p;
}

/* The mappings advised for huge pages and not unmapped since, for the
 * tests that judge bytes_huge against what is really huge. */
enum { ADVISED_MAX = 16 };
static struct {
    char *base;
    size_t size;
} advised_ranges[ADVISED_MAX];

static int recording_advise(void *p, size_t n)
{
    advised++;
    CHECK(((uintptr_t)p & (gb_huge_page() - 1)) == 0);
    CHECK(n >= gb_huge_page());
    if (advise_fails) {
        errno = EINVAL;
        return -1;
    }
    int rc = real_advise(p, n);
    if (rc == 0) {
        int i = 0;
        while (i < ADVISED_MAX && advised_ranges[i].base)
            i++;
        CHECK(i < ADVISED_MAX);
        advised_ranges[i].base = p;
        advised_ranges[i].size = n;
    }
    return rc;
}

static int (*real_unmap)(void *, size_t);

/* An unmapped range takes its advice with it. */
static int recording_unmap(void *p, size_t n)
{
    int rc = real_unmap(p, n);
    for (int i = 0; rc == 0 && i < ADVISED_MAX; i++)
        if (advised_ranges[i].base && advised_ranges[i].base < (char *)p + n &&
            (char *)p < advised_ranges[i].base + advised_ranges[i].size)
            advised_ranges[i].base = NULL;
    return rc;
}

/* Whether chunk c is really huge: it starts on a huge page boundary and
 * lies in a mapping that was advised. */
static bool really_huge(gb__chunk c)
{
    if (((uintptr_t)c.base & (gb_huge_page() - 1)) != 0)
        return false;
    for (int i = 0; i < ADVISED_MAX; i++)
        if (advised_ranges[i].base && advised_ranges[i].base <= (char *)c.base &&
            (char *)c.base + c.size <= advised_ranges[i].base + advised_ranges[i].size)
            return true;
    return false;
}

/* Huge pages as auto takes them, with nothing populated: then nothing
 * is timed and every block of huge size is advised (the tests of the
 * host's choice are at the end). */
static void init_recording_with_cache(size_t cache_bytes)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = cache_bytes;
    o.populate = GB_POPULATE_OFF;
    gb_init(&o);
    skip_without_huge_pages();
    real_map = gb__os.map;
    real_advise = gb__os.advise_huge;
    real_unmap = gb__os.unmap;
    gb__os.map = recording_map;
    gb__os.advise_huge = recording_advise;
    gb__os.unmap = recording_unmap;
}

static void init_recording(void)
{
    init_recording_with_cache(GB_CACHE_OFF); /* every block mapped afresh */
}

/* Every mapping of a huge page or more is asked aligned and advised once;
 * the smaller ones are neither. */
GB_TEST(each_huge_block_is_mapped_aligned_and_advised)
{
    init_recording();
    gb_region *r = gb_enter();
    fill(24 * MIB);
    gb_stats s = gbt_stats();
    /* The chain of 64 KiB pieces: 128 KiB to 1 MiB plain (and the page of
     * region descriptors, 16 KiB, and the address index's table of 1 MiB
     * granules, which the blocks of 1 to 16 MiB fill past the thread's
     * own); 2, 4, 8 and 16 MiB huge. */
    CHECK_EQ(maps_aligned, 4);
    CHECK_EQ(advised, 4);
    CHECK(gb__self()->mem.index.coarse.mapped);
    CHECK_EQ(maps_plain, 4 + 1 + 1);
    CHECK_EQ(s.bytes_huge, 30 * MIB);
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
    gbt_check_all_given_back();
}

/* Advice refused: the blocks are used as they are, not counted as huge. */
GB_TEST(refused_advice_leaves_ordinary_blocks)
{
    init_recording();
    advise_fails = 1;
    gb_region *r = gb_enter();
    fill(8 * MIB);
    CHECK(advised > 0);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
    gb_leave(r);
    gbt_check_all_given_back();
}

static void *unaligned_only_map(size_t n, size_t align)
{
    if (align > gb__os.page_size) {
        maps_aligned++;
        errno = ENOMEM;
        return NULL;
    }
    maps_plain++;
    return real_map(n, align);
}

/* No aligned mapping to be had (an address space short of 2 MiB to
 * spare): the block is mapped unaligned and not advised; nothing falls
 * back to malloc. */
GB_TEST(a_failing_aligned_map_maps_unaligned)
{
    init_recording();
    gb__os.map = unaligned_only_map;
    gb_region *r = gb_enter();
    fill(8 * MIB);
    gb_stats s = gbt_stats();
    CHECK(maps_aligned > 0);
    CHECK_EQ(advised, 0);
    CHECK_EQ(s.bytes_huge, 0);
    CHECK_EQ(s.fallbacks_mmap, 0);
    CHECK_EQ(s.bytes_heap, 0);
    gb_leave(r);
    gbt_check_all_given_back();
}

/* ------------------------------------------ huge-size blocks and the cache
 *
 * bytes_huge counts only blocks that start on a huge page boundary and
 * were advised. A block of huge size whose huge-page path fell back is an
 * ordinary block; given back with the block cache on, and a block of its
 * size taken again, what comes back must be counted as what it is. */

/* Room in the cache for huge blocks, which it keeps only where there is
 * room (chunk.c). */
#define ROOMY_CACHE (64 * MIB)

/* Takes a chunk of two huge pages while `fault` is in place, gives it back,
 * then, with the OS table's real map and advice again, takes one of that
 * size and judges its count. */
static void fallen_back_block_goes_through_the_cache(void (*fault)(void), void (*mend)(void))
{
    init_recording_with_cache(ROOMY_CACHE);
    size_t n = 2 * gb_huge_page();
    fault();
    gb__chunk c = gb__chunk_get(&gb__self()->mem.cache, n);
    CHECK_EQ(c.src, GB__SRC_MAP);
    CHECK(!really_huge(c));
    CHECK(!c.huge);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
    gb__chunk_put(&gb__self()->mem.cache, c);
    mend();
    uint64_t hits = gbt_stats().cache_hits;
    gb__chunk d = gb__chunk_get(&gb__self()->mem.cache, n);
    gb_stats s = gbt_stats();
    fprintf(stderr, "taken again: %s, %s, counted %s; bytes_huge %zu KiB\n",
            s.cache_hits > hits ? "from the cache" : "mapped afresh", really_huge(d) ? "huge" : "not huge",
            d.huge ? "huge" : "not huge", s.bytes_huge / 1024);
    CHECK_EQ(d.huge, really_huge(d));
    CHECK_EQ(s.bytes_huge, really_huge(d) ? d.size : 0);
    gb__chunk_put(&gb__self()->mem.cache, d);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
    gb_sweep();
    gbt_check_all_given_back();
}

static void aligned_maps_fail(void)
{
    gb__os.map = unaligned_only_map;
}

static void aligned_maps_work(void)
{
    gb__os.map = recording_map;
}

GB_TEST(a_huge_size_block_mapped_unaligned_never_comes_back_from_the_cache_as_huge)
{
    fallen_back_block_goes_through_the_cache(aligned_maps_fail, aligned_maps_work);
    CHECK(maps_aligned > 0);
}

static void advice_refused(void)
{
    advise_fails = 1;
}

static void advice_taken(void)
{
    advise_fails = 0;
}

GB_TEST(a_huge_size_block_refused_advice_never_comes_back_from_the_cache_as_huge)
{
    fallen_back_block_goes_through_the_cache(advice_refused, advice_taken);
    CHECK(advised > 0);
}

/* A cached huge block may be taken for a slab (a request takes a cached
 * block of up to four times its size): the slab holds it counted as huge,
 * and when the slab goes, it must go uncounted, whatever the slab does
 * with it. */
GB_TEST(a_cached_huge_block_made_a_slab_is_uncounted_when_the_slab_goes)
{
    init_recording_with_cache(ROOMY_CACHE);
    /* small.c's slab: 256 pages. */
    size_t slab = 256 * gb__os.page_size;
    GBT_SKIP_IF(slab >= gb_huge_page() || 4 * slab < gb_huge_page(),
                "a slab request cannot take a cached block of one huge page at this page size");
    gb__chunk c = gb__chunk_get(&gb__self()->mem.cache, gb_huge_page());
    CHECK(c.huge && really_huge(c));
    gb__chunk_put(&gb__self()->mem.cache, c);
    CHECK_EQ(gbt_stats().bytes_cached, c.size);
    gb_region *r = gb_enter();
    memset(gb_alloc(100), 1, 100); /* from a slab */
    gb_stats s = gbt_stats();
    CHECK_EQ(s.slabs, 1);
    fprintf(stderr, "slab over a cached huge block: bytes_huge %zu KiB\n", s.bytes_huge / 1024);
    CHECK_EQ(s.bytes_huge, c.size);
    gb_leave(r);
    CHECK_EQ(gbt_stats().slabs, 0);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
    gb_sweep();
    gbt_check_all_given_back();
}

/* ------------------------------------------------ a huge block that moves
 *
 * A solo block grown with mremap (GB_GROW_REMAP) may move. The advice
 * moves with the mapping, but the block is huge only where it still
 * starts on a huge page boundary: bytes_huge must say which. A fake remap
 * moves the block with the real mremap to a place of the test's choosing,
 * on a huge page boundary or a page past one, and the kernel's reading of
 * the advice (VmFlags "hg" in /proc/self/smaps) is the judge of the
 * advice. */

#if defined(__linux__)
/* Whether the kernel holds the mapping that contains p advised for huge
 * pages: 1 or 0, or -1 where there is no smaps to read it from. */
static int kernel_says_advised(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f)
        return -1;
    char line[512];
    bool in = false;
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = lo <= (uintptr_t)p && (uintptr_t)p < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0)
            found = strstr(line, " hg") != NULL;
    }
    fclose(f);
    return found;
}

static size_t remap_offset; /* how far past a huge page boundary the fake remap moves a block */
static int remaps;

static void *remap_placed(void *p, size_t old_n, size_t new_n)
{
    size_t huge = gb_huge_page(), span = new_n + 2 * huge;
    /* Address space to place it in, of which the rest is given back. */
    char *area = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED)
        return NULL;
    char *at = (char *)(((uintptr_t)area + huge - 1) & ~(uintptr_t)(huge - 1)) + remap_offset;
    void *q = mremap(p, old_n, new_n, MREMAP_MAYMOVE | MREMAP_FIXED, at);
    if (at > area)
        CHECK_EQ(munmap(area, (size_t)(at - area)), 0);
    CHECK_EQ(munmap(at + new_n, (size_t)(area + span - (at + new_n))), 0);
    if (q == MAP_FAILED) {
        CHECK_EQ(munmap(at, new_n), 0);
        return NULL;
    }
    remaps++;
    return q;
}
#endif

/* A huge solo block of 2.5 MiB grows to 7 MiB, moved `offset` bytes past a
 * huge page boundary. */
static void grow_a_huge_block_moving_it(size_t offset)
{
#if defined(__linux__)
    /* Asked of the OS layer before gb_init, which stops the process when
     * remap is asked for where there is none. */
    gb__os_init();
    static char why[96];
    snprintf(why, sizeof why, "%s gives no transparent huge pages (mode %s)", gb__os.name, gb__os.huge_mode);
    GBT_SKIP_IF(!gb__os.huge_page || !gb__os.advise_huge, why);
    GBT_SKIP_IF(!gb__os.remap, "this OS has no mremap");
    GBT_SKIP_IF(kernel_says_advised(&offset) < 0, "no /proc/self/smaps to read the advice from");
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.growth = GB_GROW_REMAP;
    o.block_cap = MIB; /* 2 MiB and up: blocks of their own */
    gb_init(&o);
    skip_without_huge_pages();
    remap_offset = offset;
    gb__os.remap = remap_placed;
    gb_region *r = gb_enter();
    char *p = gb_alloc(2 * MIB);
    memset(p, 0x33, 2 * MIB);
    gb__chunk c = ((gb__block *)(p - GB__BLOCK_HDR))->chunk;
    CHECK(c.huge);
    /* qemu-user takes MADV_HUGEPAGE without passing it to the host
     * (measured: no "hg" in the mapping's VmFlags), so there the kernel's
     * reading is printed and the runtime's counters alone are judged. */
    bool kernel_judged = !GBT_EMULATED;
    if (kernel_judged)
        CHECK_EQ(kernel_says_advised(c.base), 1);
    CHECK_EQ(gbt_stats().bytes_huge, c.size);
    p = gb_realloc(p, 2 * MIB, 6 * MIB);
    CHECK_EQ(remaps, 1);
    CHECK_EQ(gbt_stats().grows_remap, 1);
    CHECK(p[0] == 0x33 && p[2 * MIB - 1] == 0x33);
    gb__chunk d = ((gb__block *)(p - GB__BLOCK_HDR))->chunk;
    CHECK(d.base != c.base);
    bool aligned = ((uintptr_t)d.base & (gb_huge_page() - 1)) == 0;
    int advice = kernel_says_advised(d.base);
    gb_stats s = gbt_stats();
    fprintf(stderr, "grown to %zu KiB at %s huge page boundary, advised %d: counted %s, bytes_huge %zu KiB\n",
            d.size / 1024, aligned ? "a" : "no", advice, d.huge ? "huge" : "not huge", s.bytes_huge / 1024);
    CHECK_EQ(aligned, offset == 0);
    if (kernel_judged)
        CHECK_EQ(advice, 1); /* the advice moved with the mapping */
    else
        fprintf(stderr, "not judged under emulation: the kernel's advice flag\n");
    CHECK_EQ(d.huge, aligned);
    CHECK_EQ(s.bytes_huge, aligned ? d.size : 0);
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
    gb_sweep();
    gbt_check_all_given_back();
#else
    (void)offset;
    GBT_SKIP_IF(1, "the fake remap moves blocks with Linux's mremap");
#endif
}

GB_TEST(a_huge_block_remapped_onto_a_huge_page_boundary_stays_counted_huge)
{
    grow_a_huge_block_moving_it(0);
}

GB_TEST(a_huge_block_remapped_off_a_huge_page_boundary_is_no_longer_counted_huge)
{
    gb__os_init();
    grow_a_huge_block_moving_it(gb__os.page_size);
}

static size_t vm_size(void)
{
    size_t v = gbt_vm_size();
    if (!v)
        gbt_fail(__FILE__, __LINE__, "cannot read /proc/self/statm");
    return v;
}

/* The OS layer's aligned mapping takes exactly its size: what it mapped
 * beyond, to find the boundary, is trimmed at once. */
GB_TEST(an_aligned_mapping_is_trimmed_to_its_size)
{
    gb_init(NULL);
    GBT_SKIP_IF(access("/proc/self/statm", R_OK) != 0, "no /proc to size the address space with");
    /* Under qemu-user the size read is the emulator's own, which maps
     * memory for itself while the test runs (measured: 37 pages more). */
    GBT_SKIP_IF(GBT_EMULATED, "the address space read is the emulator's");
    size_t align = 2 * MIB;
    (void)vm_size(); /* stdio's buffer is malloc'd once, here */
    for (size_t n = gb__os.page_size; n <= 6 * MIB; n += 3 * MIB / 2) {
        size_t size = gb__round_up(n, gb__os.page_size), before = vm_size();
        char *p = gb__os.map(size, align);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p & (align - 1)) == 0);
        CHECK_EQ(vm_size() - before, size);
        memset(p, 1, size);
        CHECK_EQ(gb__os.unmap(p, size), 0);
        CHECK_EQ(vm_size(), before);
    }
}

static void huge_with_heap_source(void)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_HEAP;
    o.huge = GB_HUGE_ON;
    gb_init(&o);
}

GB_TEST(on_with_the_heap_source_stops_with_the_reason)
{
    gbt_expect_death(huge_with_heap_source,
                     "huge pages asked for, but the heap block source takes every block from malloc");
}

static void huge_bad_word(void)
{
    setenv("GB_HUGE", "yes", 1);
    gb_init(NULL);
}

GB_TEST(a_malformed_gb_huge_stops_naming_the_words)
{
    gbt_expect_death(huge_bad_word, "GB_HUGE=yes: expected on, off or auto");
}

/* ------------------------------------------------- the host's choice
 *
 * Under auto, with blocks populated, each block of huge size takes the
 * kind whose populate steps cost less here (map.c): first the kinds
 * alternate until each has two steps timed, then the cheaper is taken,
 * and one choice in 32 the other; huge pages count as the cheaper up to
 * 1.5 times the 4 KiB pages' cost. */

GB_TEST(the_kinds_alternate_until_each_is_timed_then_the_cheaper_is_taken)
{
    gb__map_learning l;
    CHECK(gb__map_choose_huge()); /* nothing timed: huge first */
    gb__map_learn(true, 100);
    CHECK(!gb__map_choose_huge()); /* 4 KiB pages have fewer */
    gb__map_learn(false, 300);
    CHECK(gb__map_choose_huge()); /* even again: huge */
    gb__map_learn(true, 100);
    CHECK(!gb__map_choose_huge());
    gb__map_learn(false, 300);
    /* Two each: huge costs less, and one choice in 32 tries the other. */
    int other = 0, first_other = -1;
    for (int i = 0; i < 64; i++)
        if (!gb__map_choose_huge()) {
            other++;
            first_other = first_other < 0 ? i : first_other;
        }
    CHECK_EQ(other, 2);
    CHECK_EQ(first_other, 31);
    gb__map_learnt(&l);
    CHECK_EQ(l.step_ns[1], 100);
    CHECK_EQ(l.step_ns[0], 300);
    CHECK_EQ(l.steps[0], 2);
    CHECK_EQ(l.steps[1], 2);
    /* Dearer now than 4 KiB pages (100 rising by a quarter a step: 125,
     * 156, 195, 243, 303, 378, 472): those are taken, but for one in 32. */
    for (int i = 0; i < 7; i++)
        gb__map_learn(true, 10000);
    gb__map_learnt(&l);
    CHECK_EQ(l.step_ns[1], 472);
    other = 0;
    for (int i = 0; i < 64; i++)
        other += gb__map_choose_huge();
    CHECK_EQ(other, 2);
}

/* Times each kind's two first steps as given, and counts the huge
 * choices of the next 31 (one of which tries the other kind). */
static int huge_choices_after(uint64_t huge_ns, uint64_t small_ns)
{
    for (int i = 0; i < 2; i++) {
        gb__map_learn(true, huge_ns);
        gb__map_learn(false, small_ns);
    }
    gb__map_learning l;
    gb__map_learnt(&l);
    CHECK_EQ(l.step_ns[1], huge_ns);
    CHECK_EQ(l.step_ns[0], small_ns);
    int huge = 0;
    for (int i = 0; i < 31; i++)
        huge += gb__map_choose_huge();
    return huge;
}

GB_TEST(huge_pages_up_to_half_as_dear_again_are_still_taken)
{
    CHECK_EQ(huge_choices_after(280, 200), 31);
}

GB_TEST(huge_pages_exactly_half_as_dear_again_are_still_taken)
{
    CHECK_EQ(huge_choices_after(300, 200), 31);
}

GB_TEST(huge_pages_dearer_than_half_again_give_way_to_4k_pages)
{
    CHECK_EQ(huge_choices_after(301, 200), 0);
}

/* Huge pages dearer, so 4 KiB pages are taken; but after 256 steps in 4
 * KiB pages with no huge page timed, that estimate is too old to compare,
 * and the next block is huge, whatever it said; a huge step timed then
 * decides again. */
GB_TEST(a_huge_page_estimate_too_old_to_compare_is_timed_again)
{
    /* The last huge step came before the second 4 KiB one. */
    CHECK_EQ(huge_choices_after(1000, 100), 0);
    CHECK(gb__map_choose_huge()); /* the 32nd choice tries the other */
    for (int i = 0; i < 254; i++)
        gb__map_learn(false, 100);
    CHECK(!gb__map_choose_huge()); /* 255 since: still 4 KiB pages */
    gb__map_learn(false, 100);
    CHECK(gb__map_choose_huge()); /* 256: huge, to time it */
    CHECK(gb__map_choose_huge());
    gb__map_learn(true, 1000);
    CHECK(!gb__map_choose_huge()); /* dearer still: 4 KiB pages again */
    gb__map_learn(false, 100);
    CHECK(!gb__map_choose_huge());
}

/* The estimate is the least of the recent steps: one slower step raises it
 * by a quarter at most, a faster one lowers it to itself. */
GB_TEST(a_kind_estimate_is_its_least_recent_step_rising_a_quarter_at_most)
{
    gb__map_learning l;
    gb__map_learn(false, 400);
    gb__map_learn(false, 1000);
    gb__map_learnt(&l);
    CHECK_EQ(l.step_ns[0], 500);
    gb__map_learn(false, 550);
    gb__map_learnt(&l);
    CHECK_EQ(l.step_ns[0], 550);
    gb__map_learn(false, 100);
    gb__map_learnt(&l);
    CHECK_EQ(l.step_ns[0], 100);
    gb__map_learn(false, 125);
    gb__map_learnt(&l);
    CHECK_EQ(l.step_ns[0], 125);
    CHECK_EQ(l.steps[0], 5);
}

/* A fake clock that the populate entry moves: slow_huge says which kind's
 * steps cost more. */
static uint64_t fake_ns;
static int slow_huge;
static int (*real_populate)(void *, size_t);

static uint64_t fake_now(void)
{
    return fake_ns;
}

static int timed_populate(void *p, size_t n)
{
    gb__chunk c = {.base = p, .size = n};
    bool in_huge = really_huge(c);
    fake_ns += (in_huge == (slow_huge != 0) ? 900 : 300) * (n / (64 * 1024));
    return real_populate(p, n);
}

/* 62 MiB in a region whose blocks of huge size (2, 4, 8, 16 and 32 MiB)
 * are populated under the fake clock; returns how many were advised. */
static int advised_of_a_region_with(int slow)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = GB_CACHE_OFF;
    gb_init(&o);
    skip_without_huge_pages();
    GBT_SKIP_IF(gb__os.populate == NULL, "no call that populates a range here");
    CHECK(gb__cfg.huge_learn);
    real_map = gb__os.map;
    real_advise = gb__os.advise_huge;
    real_unmap = gb__os.unmap;
    real_populate = gb__os.populate;
    gb__os.map = recording_map;
    gb__os.advise_huge = recording_advise;
    gb__os.unmap = recording_unmap;
    gb__os.populate = timed_populate;
    gb__os.now_ns = fake_now;
    slow_huge = slow;
    gb_region *r = gb_enter();
    fill(62 * MIB);
    gb__map_learning l;
    gb__map_learnt(&l);
    fprintf(stderr, "huge steps %s: %d advised, %d aligned maps, %d plain; steps timed %u/%u, %llu/%llu ns\n",
            slow ? "slow" : "fast", advised, maps_aligned, maps_plain, l.steps[0], l.steps[1],
            (unsigned long long)l.step_ns[0], (unsigned long long)l.step_ns[1]);
    CHECK(l.steps[0] >= 2 && l.steps[1] >= 2);
    CHECK_EQ(l.step_ns[slow != 0], 900 * 32);
    CHECK_EQ(l.step_ns[slow == 0], 300 * 32);
    gb_leave(r);
    gbt_check_all_given_back();
    return advised;
}

/* On: every block of huge size is advised, and no step is timed. */
GB_TEST(on_times_no_step)
{
    gb_options o;
    gb_options_init(&o);
    o.huge = GB_HUGE_ON;
    o.populate = GB_POPULATE_ON;
    gb__os_init(); /* on stops where there are none: ask the OS layer first */
    GBT_SKIP_IF(gb__os.huge_page == 0 || gb__os.advise_huge == NULL, "no transparent huge pages here");
    GBT_SKIP_IF(gb__os.populate == NULL, "no call that populates a range here");
    gb_init(&o);
    gb_region *r = gb_enter();
    fill(16 * MIB);
    gb__map_learning l;
    gb__map_learnt(&l);
    CHECK_EQ(l.steps[0] + l.steps[1], 0);
    CHECK(gbt_stats().bytes_huge >= 14 * MIB);
    CHECK(gbt_stats().bytes_populated >= 16 * MIB);
    gb_leave(r);
}

/* Huge pages slow here: after the first 2 and 8 MiB blocks (the
 * alternation), the 16 and 32 MiB ones are in 4 KiB pages. */
GB_TEST(a_host_whose_huge_pages_cost_more_gets_4k_pages)
{
    CHECK_EQ(advised_of_a_region_with(1), 2);
    CHECK_EQ(gbt_stats().bytes_huge, 0);
}

/* Huge pages cheap here: all but the alternation's 4 MiB block are huge. */
GB_TEST(a_host_whose_huge_pages_cost_less_gets_huge_pages)
{
    CHECK_EQ(advised_of_a_region_with(0), 4);
}
