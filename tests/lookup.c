/* lookup.c -- gb_region_of through the thread's address index (index.c):
 * every block and arena is found from its first byte to its last, from
 * install to give-back, across moves, resets and retirements, and nothing
 * else is; the index grows with the blocks and goes back to the thread's
 * own small table when they go.
 */
#include "common.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

static void check_held(gb_region *r, const char *p, size_t n)
{
    CHECK(gb_region_of(p) == r);
    CHECK(gb_region_of(p + n / 2) == r);
    CHECK(gb_region_of(p + n - 1) == r);
}

/* A small deterministic generator. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

typedef struct alloc {
    char *p;
    size_t n;
    int level; /* the region it is in */
} alloc;

GB_TEST(every_allocation_is_found_through_nested_regions_entered_and_left)
{
    enum { LEVELS = 40, PER = 50 };
    gb_region *regions[LEVELS];
    static alloc allocs[LEVELS * PER];
    size_t count = 0;
    uint64_t seed = 7;
    void *from_malloc[64];
    for (int i = 0; i < 64; i++)
        from_malloc[i] = malloc(16 + (size_t)i * 100);
    for (int round = 0; round < 3; round++) {
        count = 0;
        for (int l = 0; l < LEVELS; l++) {
            regions[l] = gb_enter();
            for (int k = 0; k < PER; k++) {
                /* Slab chunks, chained blocks of every size, and blocks of
                 * their own past the cap. */
                size_t n = (next(&seed) % 4 == 0) ? 1 + next(&seed) % (3 * MIB) : 1 + next(&seed) % 9000;
                int at = (int)(next(&seed) % (uint64_t)(l + 1));
                char *p = gb_alloc_in(regions[at], n);
                p[0] = p[n - 1] = (char)at;
                allocs[count++] = (alloc){p, n, at};
            }
        }
        for (size_t i = 0; i < count; i++)
            check_held(regions[allocs[i].level], allocs[i].p, allocs[i].n);
        for (int i = 0; i < 64; i++)
            CHECK(gb_region_of(from_malloc[i]) == NULL);
        /* Half the levels left, innermost first; what is left is found,
         * and nothing answers for a left region. */
        for (int l = LEVELS - 1; l >= LEVELS / 2; l--)
            gb_leave(regions[l]);
        for (size_t i = 0; i < count; i++)
            if (allocs[i].level < LEVELS / 2)
                check_held(regions[allocs[i].level], allocs[i].p, allocs[i].n);
            else {
                gb_region *h = gb_region_of(allocs[i].p);
                CHECK(h == NULL || gb_depth() > 0);
                if (h) {
                    gb_region_info info;
                    gb_region_info_get(h, &info);
                    CHECK_EQ(info.state, GB_REGION_LIVE); /* only a live region's memory */
                }
            }
        for (int l = LEVELS / 2 - 1; l >= 0; l--)
            gb_leave(regions[l]);
    }
    for (int i = 0; i < 64; i++)
        free(from_malloc[i]);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_block_moved_by_growth_is_found_where_it_went)
{
    gb_options o;
    gb_options_init(&o);
    o.block_cap = MIB;
    gb_init(&o);
    gb_region *r = gb_enter();
    char *p = gb_alloc(2 * MIB);
    memset(p, 1, 2 * MIB);
    for (size_t n = 2 * MIB; n < 64 * MIB; n *= 2) {
        /* Something after it, so that growing in place is less likely. */
        gb_alloc(100);
        char *q = gb_realloc(p, n, 2 * n);
        check_held(r, q, 2 * n);
        if (q != p) {
            gb_region *h = gb_region_of(p);
            CHECK(h == NULL || h == r); /* its old range is no longer its block */
            if (h == r) {
                /* Only if another block of r now lies there. */
                CHECK(p < q || p >= q + 2 * n);
            }
        }
        p = q;
    }
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(a_block_a_reset_kept_answers_for_nothing_until_taken_again)
{
    gb_region *r = gb_enter();
    char *p = gb_alloc(300 * KIB);
    CHECK(gb_region_of(p) == r);
    gb_region_reset(r, 4 * MIB);
    CHECK(gb_region_of(p) == NULL);
    char *q = gb_alloc(100 * KIB);
    check_held(r, q, 100 * KIB);
    gb_leave(r);
    CHECK(gb_region_of(q) == NULL);
    gbt_check_all_given_back();
}

static void hold_and_yield(void *arg)
{
    volatile uintptr_t held = (uintptr_t)arg;
    gb_coro_yield();
    (void)held;
}

GB_TEST(a_reset_that_retires_the_contents_answers_with_the_retired_region)
{
    gb_region *r = gb_enter();
    char *p = gb_alloc(200 * KIB);
    gb_coro *c = gb_coro_new(hold_and_yield, p + 10, 0);
    CHECK(gb_coro_resume(c));
    gb_region_reset(r, 0);
    /* The contents went to a region of their own, retired, pinned by c. */
    gb_region *h = gb_region_of(p);
    CHECK(h != NULL && h != r);
    gb_region_info info;
    gb_region_info_get(h, &info);
    CHECK_EQ(info.state, GB_REGION_RETIRED);
    CHECK(info.pinned_by == c);
    char *q = gb_alloc(1000);
    check_held(r, q, 1000);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    CHECK(gb_region_of(p) == NULL || gb_region_of(p) == r);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_container_arena_is_found_across_its_growth)
{
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(sizeof(uint64_t));
    for (uint64_t i = 0; i < 1000; i++)
        gb_vec_push(v, &i);
    gb_vec_compact(v);
    CHECK(gb_region_of(gb_vec_at(v, 0)) == r);
    for (uint64_t i = 0; i < 300000; i++)
        gb_vec_push(v, &i);
    CHECK(gb_vec_arena_bytes(v) > 0);
    check_held(r, gb_vec_at(v, 0), gb_vec_len(v) * sizeof(uint64_t));
    gb_map *m = gb_map_new();
    for (uint64_t i = 0; i < 20000; i++)
        gb_map_put(m, i, i);
    gb_map_compact(m);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(the_index_grows_with_the_blocks_and_goes_back_when_they_go)
{
    gb_options o;
    gb_options_init(&o);
    o.first_block = o.block_cap = 64 * KIB;
    gb_init(&o);
    size_t meta = gbt_stats().bytes_meta;
    gb_region *r = gb_enter();
    gb_alloc(100);
    /* A few blocks fit the thread's own table: nothing is allocated. */
    CHECK_EQ(gbt_stats().bytes_meta, meta);
    static char *p[4000];
    for (int i = 0; i < 300; i++)
        p[i] = gb_alloc(60 * KIB);
    /* 300 blocks of 64 KiB: a table of its own, counted in bytes_meta. */
    CHECK(gbt_stats().bytes_meta > meta);
    size_t blocks_mapped = gbt_stats().bytes_mapped;
    for (int i = 300; i < 4000; i++)
        p[i] = gb_alloc(60 * KIB);
    /* 4,000: a larger table, a mapping, counted in bytes_meta. It
     * holds an entry per 64 KiB granule a block touches: one for a block
     * that starts on a granule's boundary, two for one that does not, so
     * how many depends on where the OS placed the blocks (4,000 to 8,000
     * entries: a table of 256 or 512 KiB). Its size is held to what it
     * holds: at most half full, and no larger than the smallest power of
     * two that kept the last reservation (three entries more) at half. */
    gb_stats s = gbt_stats();
    const gb__index_table *fine = &gb__self()->mem.index.fine;
    CHECK(fine->mapped);
    CHECK(fine->count >= 4000 && fine->count <= 8000 + 2);
    CHECK(fine->count * 2 <= fine->cap);
    CHECK_LT(fine->cap, 4 * (fine->count + 3));
    CHECK_EQ(s.bytes_meta, meta + fine->cap * sizeof(gb__index_slot));
    CHECK(s.bytes_mapped >= blocks_mapped + 3700 * 64 * KIB);
    for (int i = 0; i < 4000; i += 97)
        check_held(r, p[i], 60 * KIB);
    gb_leave(r);
    CHECK_EQ(gbt_stats().bytes_meta, meta);
    gb_sweep();
    gbt_check_all_given_back();
}

static void *other_thread_asks(void *arg)
{
    return gb_region_of(arg);
}

GB_TEST(another_threads_memory_is_not_this_threads)
{
    gb_region *r = gb_enter();
    char *p = gb_alloc(1000);
    pthread_t th;
    void *answer = (void *)1;
    CHECK(pthread_create(&th, NULL, other_thread_asks, p) == 0);
    CHECK(pthread_join(th, &answer) == 0);
    CHECK(answer == NULL);
    CHECK(gb_region_of(p) == r);
    gb_leave(r);
}

/* Ranges of 1 MiB or more are held in granules of 1 MiB, smaller ones in
 * granules of 64 KiB (index.h): a range of exactly 1 MiB, on a MiB
 * boundary, is one entry of the coarse table, and one a byte shorter
 * sixteen of the fine one. Both are found whole. */
GB_TEST(a_range_of_exactly_one_mib_takes_one_coarse_entry)
{
    static gb__index ix;
    gb_init(NULL);
    uintptr_t a = (uintptr_t)1 << 40, b = a + 4 * MIB;
    CHECK(gb__index_reserve(&ix, MIB));
    gb__index_add(&ix, (void *)a, MIB, a, NULL);
    CHECK_EQ(ix.coarse.count, 1);
    CHECK_EQ(ix.fine.count, 0);
    CHECK(gb__index_reserve(&ix, MIB - 1));
    gb__index_add(&ix, (void *)b, MIB - 1, b, NULL);
    CHECK_EQ(ix.coarse.count, 1);
    CHECK_EQ(ix.fine.count, 16);
    void *owner;
    CHECK_EQ(gb__index_find(&ix, (void *)(a + MIB - 1), &owner), a);
    CHECK_EQ(gb__index_find(&ix, (void *)(b + MIB - 2), &owner), b);
    CHECK_EQ(gb__index_find(&ix, (void *)(a + MIB), &owner), 0);
    gb__index_remove(&ix, (void *)a, MIB, a);
    gb__index_remove(&ix, (void *)b, MIB - 1, b);
    CHECK_EQ(ix.coarse.count + ix.fine.count, 0);
    gb__index_release(&ix);
}

/* The index's room made ready in two steps (index.h): abandoned, it is
 * as it was, whether prepare took a larger table, found room in the one
 * in place, or took the thread's own table before the first entry; put
 * in place, its entries are all still found. */
GB_TEST(the_index_room_made_ready_and_abandoned_leaves_it_as_it_was)
{
    static gb__index ix;
    gb__index_grow g;
    gb_init(NULL); /* the OS table, which large tables are mapped with */
    size_t meta = gbt_stats().bytes_meta;
    /* Empty: the thread's own table is taken, and given back is nothing. */
    CHECK(gb__index_prepare(&ix, 100, &g));
    CHECK(g.slots == ix.fine.small);
    gb__index_abandon(&g);
    CHECK(ix.fine.slots == NULL && ix.fine.cap == 0);
    CHECK(gb__index_prepare(&ix, 100, &g));
    gb__index_commit(&g);
    CHECK(ix.fine.slots == ix.fine.small && ix.fine.cap == GB__INDEX_INLINE);
    CHECK_EQ(gbt_stats().bytes_meta, meta);
    /* A range that fills the thread's own table to exactly half (32
     * granules of 1 MiB, the ends included) still takes it. */
    CHECK(gb__index_prepare(&ix, 30 * MIB, &g));
    CHECK(g.slots == ix.coarse.small && g.cap == GB__INDEX_INLINE);
    gb__index_abandon(&g);
    /* Ranges of 100 bytes, one a 64 KiB granule (an entry each), until
     * the table in place has room for exactly one more such range (two
     * entries reserved fill it to half, as far as it may go) and not for
     * one of just under 1 MiB (seventeen), the largest the table of
     * 64 KiB granules takes. */
    uintptr_t at = (uintptr_t)1 << 40, step = 64 * KIB, n = 0;
    const size_t wide = MIB - 1;
    while (n < 1000 || (ix.fine.count + 2) * 2 != ix.fine.cap) {
        gb__index_add(&ix, (void *)(at + n * step), 100, at + n * step, NULL);
        n++;
    }
    const gb__index_slot *slots = ix.fine.slots;
    size_t cap = ix.fine.cap, count = ix.fine.count;
    size_t with_table = gbt_stats().bytes_meta;
    CHECK(ix.fine.mapped);
    CHECK_EQ(with_table, meta + cap * sizeof(gb__index_slot));
    CHECK((ix.fine.count + 17) * 2 > ix.fine.cap);
    /* Room in place, to exactly half. */
    CHECK(gb__index_prepare(&ix, 100, &g));
    CHECK(g.slots == slots);
    gb__index_abandon(&g);
    CHECK(gb__index_prepare(&ix, 100, &g));
    gb__index_commit(&g);
    CHECK(ix.fine.slots == slots && ix.fine.cap == cap && ix.fine.count == count);
    CHECK_EQ(gbt_stats().bytes_meta, with_table);
    /* A range no table can be had for (2^62 bytes: 2^42 granules of
     * 1 MiB) is refused, with nothing changed. */
    CHECK(!gb__index_reserve(&ix, (size_t)1 << 62));
    CHECK(ix.coarse.cap == 0 && ix.coarse.count == 0);
    CHECK_EQ(gbt_stats().bytes_meta, with_table);
    /* The wide range: a larger table, taken and given back. */
    CHECK(gb__index_prepare(&ix, wide, &g));
    CHECK(g.slots != slots && g.cap > cap);
    CHECK_EQ(gbt_stats().bytes_meta, with_table + g.cap * sizeof(gb__index_slot));
    gb__index_abandon(&g);
    CHECK(ix.fine.slots == slots && ix.fine.cap == cap && ix.fine.count == count);
    CHECK_EQ(gbt_stats().bytes_meta, with_table);
    /* Taken and put in place: the old one goes, every entry is found. */
    CHECK(gb__index_prepare(&ix, wide, &g));
    size_t larger = g.cap;
    gb__index_commit(&g);
    CHECK(ix.fine.cap == larger && ix.fine.count == count);
    CHECK_EQ(gbt_stats().bytes_meta, meta + larger * sizeof(gb__index_slot));
    void *owner;
    for (uintptr_t i = 0; i < n; i++) {
        CHECK_EQ(gb__index_find(&ix, (void *)(at + i * step + 99), &owner), at + i * step);
        CHECK_EQ(gb__index_find(&ix, (void *)(at + i * step + 100), &owner), 0);
    }
    for (uintptr_t i = 0; i < n; i++)
        gb__index_remove(&ix, (void *)(at + i * step), 100, at + i * step);
    CHECK(ix.fine.slots == ix.fine.small);
    CHECK_EQ(gbt_stats().bytes_meta, meta);
}

/* The index alone (index.c), on addresses it never reads: ranges of every
 * size and alignment, entered and removed in a shuffled order, answer for
 * exactly their bytes, first to last, and nothing around them. */
GB_TEST(the_index_answers_for_exactly_its_ranges)
{
    enum { N = 3000 };
    static struct { uintptr_t base; size_t size; bool in; } ranges[N];
    static gb__index ix;
    uint64_t seed = 99;
    gb_init(NULL); /* the OS table, which large tables are mapped with */
    uintptr_t at = (uintptr_t)1 << 40;
    for (int i = 0; i < N; i++) {
        /* Gaps of 16 bytes to 200 KiB between ranges of 16 bytes to
         * 300 KiB, 16-byte aligned, so that granules are shared, whole
         * and partly covered. */
        at += 16 * (1 + next(&seed) % 12800);
        ranges[i].base = at;
        /* One in seven of 1 MiB to 3 MiB, which the index keeps in its
         * table of 1 MiB granules. */
        ranges[i].size = i % 7 ? 16 * (1 + next(&seed) % 19200) : MIB + 16 * (next(&seed) % 131072);
        at += ranges[i].size;
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++)
            if (!ranges[i].in) {
                gb__index_add(&ix, (void *)ranges[i].base, ranges[i].size, (uintptr_t)&ranges[i], &ranges[i]);
                ranges[i].in = true;
            }
        /* Out with a shuffled half. */
        for (int k = 0; k < N / 2; k++) {
            int i = (int)(next(&seed) % N);
            if (ranges[i].in) {
                gb__index_remove(&ix, (void *)ranges[i].base, ranges[i].size, (uintptr_t)&ranges[i]);
                ranges[i].in = false;
            }
        }
        for (int i = 0; i < N; i++) {
            uintptr_t b = ranges[i].base, e = b + ranges[i].size, want = ranges[i].in ? (uintptr_t)&ranges[i] : 0;
            void *owner;
            CHECK_EQ(gb__index_find(&ix, (void *)b, &owner), want);
            CHECK_EQ(gb__index_find(&ix, (void *)(e - 1), &owner), want);
            CHECK_EQ(gb__index_find(&ix, (void *)(b + ranges[i].size / 2), &owner), want);
            CHECK(owner == (ranges[i].in ? (void *)&ranges[i] : NULL));
            /* The bytes around it are the gaps: nobody's. */
            CHECK_EQ(gb__index_find(&ix, (void *)(b - 1), &owner), 0);
            CHECK_EQ(gb__index_find(&ix, (void *)e, &owner), 0);
        }
    }
    for (int i = 0; i < N; i++)
        if (ranges[i].in)
            gb__index_remove(&ix, (void *)ranges[i].base, ranges[i].size, (uintptr_t)&ranges[i]);
    CHECK_EQ(ix.fine.count + ix.coarse.count, 0);
    /* Back to the tables of its own. */
    CHECK(ix.fine.slots == ix.fine.small && ix.coarse.slots == ix.coarse.small);
}

/* ------------------------------------------- the index's tables and the OS
 *
 * A table past the thread's own is a mapping taken through the OS table
 * and given back through map.c's one way out (index.c), so a fake OS sees
 * it, refuses it, or fails its unmap, as it would a block's. */
static void *(*real_map)(size_t, size_t);
static int (*real_unmap)(void *, size_t);
static void *mapped_at;
static size_t mapped_bytes, unmapped_bytes;
static void *unmapped_at;
static int maps, unmaps, refuse_maps, fail_unmaps;

static void *recording_map(size_t n, size_t align)
{
    maps++;
    if (refuse_maps) {
        errno = ENOMEM;
        return NULL;
    }
    mapped_at = real_map(n, align);
    mapped_bytes = n;
    return mapped_at;
}

static int recording_unmap(void *p, size_t n)
{
    unmaps++;
    if (fail_unmaps) {
        fail_unmaps--;
        errno = ENOMEM;
        return -1;
    }
    unmapped_at = p;
    unmapped_bytes = n;
    return real_unmap(p, n);
}

static void fake_os(void)
{
    gb_init(NULL);
    real_map = gb__os.map;
    real_unmap = gb__os.unmap;
    gb__os.map = recording_map;
    gb__os.unmap = recording_unmap;
}

/* Ranges of 100 bytes, one a 64 KiB granule: 100 of them are more than
 * the thread's own table of 64 entries holds at half. */
enum { TABLE_RANGES = 100 };
static const uintptr_t table_at = (uintptr_t)1 << 40;

static void enter_ranges(gb__index *ix)
{
    for (uintptr_t i = 0; i < TABLE_RANGES; i++)
        gb__index_add(ix, (void *)(table_at + i * 64 * KIB), 100, table_at + i * 64 * KIB, NULL);
}

static void check_ranges_found(const gb__index *ix)
{
    void *owner;
    for (uintptr_t i = 0; i < TABLE_RANGES; i++) {
        CHECK_EQ(gb__index_find(ix, (void *)(table_at + i * 64 * KIB + 99), &owner), table_at + i * 64 * KIB);
        CHECK_EQ(gb__index_find(ix, (void *)(table_at + i * 64 * KIB + 100), &owner), 0);
    }
}

static void remove_ranges(gb__index *ix)
{
    for (uintptr_t i = 0; i < TABLE_RANGES; i++)
        gb__index_remove(ix, (void *)(table_at + i * 64 * KIB), 100, table_at + i * 64 * KIB);
}

GB_TEST(the_index_table_is_mapped_and_unmapped_through_the_os_table)
{
    static gb__index ix;
    fake_os();
    size_t meta = gbt_stats().bytes_meta;
    enter_ranges(&ix);
    /* Two maps, the tables': one of 128 entries, given back by the OS's
     * unmap when the one of 256 took its place; that one's bytes rounded
     * up to the page, counted in bytes_meta and not among the runtime's
     * mappings. */
    CHECK_EQ(maps, 2);
    CHECK_EQ(unmaps, 1);
    CHECK_EQ(unmapped_bytes, gb__round_up(128 * sizeof(gb__index_slot), gb__os.page_size));
    CHECK(ix.fine.mapped && (void *)ix.fine.slots == mapped_at);
    CHECK_EQ(ix.fine.cap, 256);
    size_t bytes = gb__round_up(256 * sizeof(gb__index_slot), gb__os.page_size);
    CHECK_EQ(mapped_bytes, bytes);
    CHECK_EQ(gbt_stats().bytes_meta, meta + bytes);
    CHECK_EQ(gbt_stats().mappings, 0);
    check_ranges_found(&ix);
    /* Emptied, it goes back by the OS's unmap, whole. */
    remove_ranges(&ix);
    CHECK_EQ(unmaps, 2);
    CHECK(unmapped_at == mapped_at && unmapped_bytes == bytes);
    CHECK(ix.fine.slots == ix.fine.small && !ix.fine.mapped);
    CHECK_EQ(gbt_stats().bytes_meta, meta);
    gbt_check_all_given_back();
}

GB_TEST(a_refused_index_table_mapping_comes_from_malloc_and_loses_nothing)
{
    static gb__index ix;
    fake_os();
    size_t meta = gbt_stats().bytes_meta;
    refuse_maps = 1;
    enter_ranges(&ix);
    /* Asked of the OS and refused, twice (128 entries, then 256): the
     * tables are malloc's, of the same sizes, counted in bytes_meta, the
     * first freed when the second took its place, and answer for every
     * range. */
    CHECK_EQ(maps, 2);
    CHECK_EQ(unmaps, 0);
    CHECK(!ix.fine.mapped && ix.fine.slots != ix.fine.small);
    CHECK_EQ(ix.fine.cap, 256);
    CHECK_EQ(gbt_stats().bytes_meta, meta + 256 * sizeof(gb__index_slot));
    CHECK_EQ(gbt_stats().fallbacks_mmap, 0); /* no block was refused */
    check_ranges_found(&ix);
    /* A larger one is asked of the OS again, and given there; the malloc'd
     * one is freed, not unmapped. */
    refuse_maps = 0;
    for (uintptr_t i = TABLE_RANGES; i < 2 * TABLE_RANGES; i++)
        gb__index_add(&ix, (void *)(table_at + i * 64 * KIB), 100, table_at + i * 64 * KIB, NULL);
    CHECK_EQ(maps, 3);
    CHECK(ix.fine.mapped && ix.fine.cap == 512);
    CHECK_EQ(unmaps, 0);
    check_ranges_found(&ix);
    CHECK_EQ(gbt_stats().bytes_meta, meta + gb__round_up(512 * sizeof(gb__index_slot), gb__os.page_size));
    for (uintptr_t i = TABLE_RANGES; i < 2 * TABLE_RANGES; i++)
        gb__index_remove(&ix, (void *)(table_at + i * 64 * KIB), 100, table_at + i * 64 * KIB);
    remove_ranges(&ix);
    CHECK_EQ(unmaps, 1);
    CHECK_EQ(gbt_stats().bytes_meta, meta);
    /* Refused and emptied: freed, and nothing is left counted. */
    refuse_maps = 1;
    enter_ranges(&ix);
    CHECK_EQ(maps, 5);
    CHECK(!ix.fine.mapped && ix.fine.cap == 256);
    remove_ranges(&ix);
    CHECK_EQ(unmaps, 1);
    CHECK(ix.fine.slots == ix.fine.small);
    CHECK_EQ(gbt_stats().bytes_meta, meta);
    gbt_check_all_given_back();
}

/* At the mapping limit a table's munmap fails as a block's would: the
 * table is emptied, counted as a pending unmap and still in bytes_meta,
 * and unmapped by the next retry. */
GB_TEST(an_index_table_whose_munmap_fails_is_unmapped_later)
{
    static gb__index ix;
    fake_os();
    size_t meta = gbt_stats().bytes_meta;
    enter_ranges(&ix);
    size_t bytes = mapped_bytes;
    void *table = mapped_at;
    fail_unmaps = 1;
    remove_ranges(&ix);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.unmap_failures, 1);
    CHECK_EQ(s.unmaps_pending, 1);
    CHECK_EQ(s.bytes_meta, meta + bytes);
    CHECK_EQ(s.mappings, 0);
    CHECK(ix.fine.slots == ix.fine.small);
    CHECK_EQ(unmaps, 2);
    CHECK(unmapped_at != table);
    gb__map_retry_unmaps();
    s = gbt_stats();
    CHECK_EQ(s.unmaps_pending, 0);
    CHECK(unmapped_at == table && unmapped_bytes == bytes);
    CHECK_EQ(s.bytes_meta, meta);
    gbt_check_all_given_back();
}
