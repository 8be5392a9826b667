/* container.c -- vecs and maps, growth garbage, compaction and arenas. */
#include "common.h"
#include "scenarios.h"

#include <stdlib.h>
#include <string.h>

GB_TEST(vec_push_at_pop)
{
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(sizeof(uint32_t));
    for (uint32_t i = 0; i < 100000; i++)
        gb_vec_push(v, &i);
    CHECK_EQ(gb_vec_len(v), 100000);
    for (uint32_t i = 0; i < 100000; i += 997)
        CHECK_EQ(*(uint32_t *)gb_vec_at(v, i), i);
    uint32_t last;
    gb_vec_pop(v, &last);
    CHECK_EQ(last, 99999);
    CHECK_EQ(gb_vec_len(v), 99999);
    gb_leave(r);
    CHECK_EQ(gbt_stats().arenas_live, 0);
}

GB_TEST(vec_growth_garbage_triggers_compaction)
{
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(8);
    /* A vec interleaved with other allocations cannot grow in place: each
     * growth leaves its old storage behind until compaction. */
    uint64_t x = 0;
    while (gb_vec_arena_bytes(v) == 0) {
        gb_vec_push(v, &x);
        x++;
        gb_alloc(8);
        CHECK(x < 10000000);
    }
    /* Doubling from 8 elements of 8 bytes, each growth leaves the old
     * storage behind: 65,472 bytes of garbage at the growth to 8,192
     * elements, under the 64 KiB that compaction waits for, and 131,008
     * at the growth to 16,384 (the 8,193rd push), past it and past half
     * the 128 KiB the vec then takes (GB_COMPACT_GARBAGE_PERCENT): that
     * growth compacts, and it is the first to. */
    CHECK_EQ(x, 8193);
    CHECK_EQ(gbt_stats().compactions, 1);
    CHECK_EQ(gbt_stats().arenas_live, 1);
    size_t garbage = gb_vec_garbage_bytes(v);
    CHECK_EQ(garbage, 131008); /* the storage of 8, 16, ..., 8,192 elements */
    /* Growth after compaction happens in the arena: no more garbage. */
    for (int i = 0; i < 1000000; i++, x++)
        gb_vec_push(v, &x);
    CHECK_EQ(gb_vec_garbage_bytes(v), garbage);
    for (uint64_t i = 0; i < x; i += 4099)
        CHECK_EQ(*(uint64_t *)gb_vec_at(v, i), i);
    gb_leave(r);
    CHECK_EQ(gbt_stats().arenas_live, 0);
    CHECK_EQ(gbt_stats().bytes_mapped, 0);
    CHECK_EQ(gbt_stats().bytes_heap, 0);
}

/* A vec of elements of elem bytes, grown from 8 elements to 16 with
 * other allocations between its pushes (so it cannot grow in place):
 * the growth leaves the storage of 8 behind; returns the compactions it
 * made. */
static uint64_t compactions_growing_to_16(size_t elem)
{
    static char e[8200];
    CHECK(elem <= sizeof e);
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(elem);
    uint64_t before = gbt_stats().compactions;
    for (int i = 0; i < 8; i++) {
        gb_vec_push(v, e);
        gb_alloc(8);
    }
    CHECK_EQ(gbt_stats().compactions, before);
    gb_vec_push(v, e);
    CHECK_EQ(gb_vec_garbage_bytes(v), 8 * elem);
    uint64_t made = gbt_stats().compactions - before;
    gb_leave(r);
    return made;
}

/* Compaction waits for at least 64 KiB of garbage and at least half the
 * vec's new storage; either bound met exactly is enough. 8 elements of
 * 8 KiB leave 65,536 bytes, the first bound exactly (half of 128 KiB is
 * 65,500 by the integer percentage); 8 of 8,200 bytes leave 65,600,
 * exactly half of 131,200. */
GB_TEST(vec_garbage_at_exactly_either_bound_compacts)
{
    CHECK_EQ(compactions_growing_to_16(8192), 1);
    CHECK_EQ(compactions_growing_to_16(8200), 1);
    CHECK_EQ(compactions_growing_to_16(8000), 0); /* 64,000 bytes: under the first */
}

GB_TEST(vec_compact_on_request)
{
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(16);
    char e[16] = "0123456789abcde";
    for (int i = 0; i < 5000; i++)
        gb_vec_push(v, e);
    gb_vec_compact(v);
    CHECK(gb_vec_arena_bytes(v) >= 5000 * 16);
    CHECK(memcmp(gb_vec_at(v, 4999), e, 16) == 0);
    gb_vec_compact(v); /* again: a fresh chunk replaces the old one */
    CHECK_EQ(gbt_stats().arenas_live, 1);
    gb_leave(r);
    CHECK_EQ(gbt_stats().arenas_live, 0);
}

/* A map checked against a plain array of the keys it should hold. */
GB_TEST(map_put_get_del_against_a_reference)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    enum { N = 50000 };
    uint64_t *ref = calloc(N, sizeof *ref); /* 0: absent, else value + 1 */
    unsigned seed = 7;
    for (int step = 0; step < 400000; step++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t k = (seed >> 4) % N;
        int op = (seed >> 24) % 4;
        if (op < 2) {
            gb_map_put(m, k * 0x9e3779b97f4a7c15ull, (uint64_t)step);
            ref[k] = (uint64_t)step + 1;
        } else if (op == 2) {
            CHECK_EQ(gb_map_del(m, k * 0x9e3779b97f4a7c15ull), ref[k] != 0);
            ref[k] = 0;
        } else {
            uint64_t v = 0;
            bool got = gb_map_get(m, k * 0x9e3779b97f4a7c15ull, &v);
            CHECK_EQ(got, ref[k] != 0);
            if (got)
                CHECK_EQ(v + 1, ref[k]);
        }
        if (step == 200000)
            gb_map_compact(m);
    }
    size_t live = 0;
    for (int k = 0; k < N; k++)
        live += ref[k] != 0;
    CHECK_EQ(gb_map_len(m), live);
    free(ref);
    gb_leave(r);
    CHECK_EQ(gbt_stats().arenas_live, 0);
}

GB_TEST(map_compaction_binds_the_arena_to_the_holder_region)
{
    gb_region *outer = gb_enter();
    gb_map *m = gb_map_new();
    gb_region *inner = gb_enter();
    for (uint64_t k = 0; k < 20000; k++)
        gb_map_put(m, k, k + 1); /* grows in outer, its holder */
    gb_map_compact(m);
    CHECK(gb_map_arena_bytes(m) > 0);
    gb_leave(inner); /* not the holder: the arena stays */
    CHECK_EQ(gbt_stats().arenas_live, 1);
    uint64_t v;
    CHECK(gb_map_get(m, 19999, &v) && v == 20000);
    gb_leave(outer);
    CHECK_EQ(gbt_stats().arenas_live, 0);
    CHECK_EQ(gbt_stats().bytes_mapped, 0);
    CHECK_EQ(gbt_stats().bytes_heap, 0);
}

/* A map grown in its region leaves each table behind, 17 bytes a slot
 * (a key, a value and a control byte): 17 * (8 + 16 + ... + 1,024) =
 * 34,680 bytes when it takes 2,048 slots, under the 64 KiB compaction
 * waits for, and 69,496 when it takes 4,096, past it and past half the
 * new table: that growth compacts the map into an arena of its own. */
GB_TEST(map_growth_garbage_compacts_it_at_the_growth_that_passes_64_kib)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    uint64_t k = 0;
    while (gb_map_arena_bytes(m) == 0) {
        gb_map_put(m, k, k + 1);
        k++;
        CHECK(k < 1000000);
    }
    CHECK_EQ(gb_map_garbage_bytes(m), 69496);
    CHECK_EQ(gbt_stats().compactions, 1);
    CHECK(k > 1024 && k <= 2048); /* more than half of 2,048 slots full */
    for (uint64_t i = 0; i < k; i++) {
        uint64_t v;
        CHECK(gb_map_get(m, i, &v) && v == i + 1);
    }
    gb_leave(r);
    CHECK_EQ(gbt_stats().arenas_live, 0);
}

/* A key deleted and put again takes the slot its deletion left (the
 * first tombstone on its probe path): a map that only does that never
 * grows, and leaves no table behind. */
GB_TEST(a_map_key_deleted_and_put_again_takes_its_old_slot)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    gb_map_put(m, 42, 1);
    for (uint64_t i = 0; i < 1000; i++) {
        CHECK(gb_map_del(m, 42));
        gb_map_put(m, 42, i);
    }
    CHECK_EQ(gb_map_len(m), 1);
    CHECK_EQ(gb_map_garbage_bytes(m), 0);
    gb_leave(r);
}

/* Churn: each step puts a new key and deletes the one put 50 steps
 * before, so at most 51 are live and tombstones pile up. A rehash clears
 * them; with 128 slots the next one comes when live keys and tombstones
 * reach 96, which takes at least 45 steps (a step adds one tombstone at
 * most), and each leaves 2,176 bytes behind (17 a slot): the 64 KiB that
 * compaction waits for takes more than 30 rehashes, 1,350 steps. */
GB_TEST(map_churn_rehashes_no_more_often_than_its_tombstones_require)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    for (uint64_t k = 0; k < 1350; k++) {
        gb_map_put(m, k, k);
        if (k >= 50)
            CHECK(gb_map_del(m, k - 50));
    }
    CHECK_EQ(gb_map_len(m), 50);
    CHECK_EQ(gbt_stats().compactions, 0);
    CHECK(gb_map_garbage_bytes(m) < 64 * 1024);
    for (uint64_t k = 1300; k < 1350; k++) {
        uint64_t v;
        CHECK(gb_map_get(m, k, &v) && v == k);
    }
    CHECK(!gb_map_get(m, 1299, NULL));
    gb_leave(r);
}

/* A map grows when a put would fill more than three quarters of its
 * slots: its first table of 8 takes 6 keys, and the 7th moves it to 16,
 * leaving the 8 slots (17 bytes each) behind. */
GB_TEST(a_map_grows_past_three_quarters_full_and_not_before)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    for (uint64_t k = 0; k < 6; k++)
        gb_map_put(m, k, k);
    CHECK_EQ(gb_map_garbage_bytes(m), 0);
    gb_map_put(m, 6, 6);
    CHECK_EQ(gb_map_garbage_bytes(m), 17 * 8);
    gb_leave(r);
}

/* Compacted, a map takes the smallest power of two of slots that holds
 * its keys at most half full: 64 keys in 128 slots, 65 in 256. Blocks
 * from malloc, so that an arena is the size asked. */
GB_TEST(a_compacted_map_takes_the_fewest_slots_that_hold_it_half_full)
{
    gbt_init_heap_blocks(0, 0);
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    for (uint64_t k = 0; k < 64; k++)
        gb_map_put(m, k, k);
    gb_map_compact(m);
    CHECK_EQ(gb_map_arena_bytes(m), 17 * 128);
    gb_map_put(m, 64, 64);
    gb_map_compact(m);
    CHECK_EQ(gb_map_arena_bytes(m), 17 * 256);
    gb_leave(r);
}

/* A key not in the map: false, and the value asked for is left as it
 * was. */
GB_TEST(a_map_get_of_a_missing_key_leaves_the_value_alone)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    for (uint64_t k = 0; k < 5; k++)
        gb_map_put(m, k * 1000, k + 7);
    uint64_t v = 0x5555;
    CHECK(!gb_map_get(m, 1, &v));
    CHECK_EQ(v, 0x5555);
    CHECK(gb_map_get(m, 4000, &v));
    CHECK_EQ(v, 11);
    gb_leave(r);
}

GB_TEST(many_compacted_maps_leave_with_their_region)
{
    gb_region *r = gb_enter();
    gbs_compacted_maps(500, 3000); /* the map-arenas gate's shape */
    CHECK_EQ(gbt_stats().arenas_live, 500);
    gb_leave(r);
    CHECK_EQ(gbt_stats().arenas_live, 0);
    CHECK_EQ(gbt_stats().bytes_mapped, 0);
}

GB_TEST(map_grows_inside_its_arena)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    gb_map_compact(m);
    size_t garbage = gb_map_garbage_bytes(m);
    for (uint64_t k = 0; k < 100000; k++)
        gb_map_put(m, k, ~k);
    CHECK_EQ(gb_map_garbage_bytes(m), garbage);
    CHECK(gb_map_arena_bytes(m) >= 100000 * 16);
    uint64_t v;
    CHECK(gb_map_get(m, 77777, &v) && v == ~(uint64_t)77777);
    gb_leave(r);
    CHECK_EQ(gbt_stats().arenas_live, 0);
}

static void vec_out_of_range(void)
{
    gb_enter();
    gb_vec *v = gb_vec_new(4);
    gb_vec_at(v, 0);
}

GB_TEST(vec_index_out_of_range_stops)
{
    gbt_expect_death(vec_out_of_range, "gb_vec_at: index 0 out of range (length 0)");
}

static void vec_of_nothing(void)
{
    gb_enter();
    gb_vec_new(0);
}

/* A vec of elements of no size holds nothing and is a mistake: named. */
GB_TEST(a_vec_of_elements_of_size_zero_stops)
{
    gbt_expect_death(vec_of_nothing, "gb_vec_new: element size 0");
}

static void vec_pop_empty(void)
{
    gb_enter();
    gb_vec_pop(gb_vec_new(4), NULL);
}

GB_TEST(vec_pop_on_empty_stops)
{
    gbt_expect_death(vec_pop_empty, "gb_vec_pop: the vec is empty");
}

/* A container whose region was left while a suspended coroutine held it:
 * the region is retired, the coroutine may still read the container, but
 * growing it would take memory for a region that is gone. */
static void push_after_the_leave(void *arg)
{
    gb_vec *v = arg;
    gb_coro_yield(); /* the thread leaves the region */
    for (int i = 0; i < 1000; i++)
        gb_vec_push(v, &i);
}

static void put_after_the_leave(void *arg)
{
    gb_map *m = arg;
    gb_coro_yield();
    for (uint64_t k = 0; k < 1000; k++)
        gb_map_put(m, k, k);
}

static void grow_after_the_leave(void (*body)(void *), void *container)
{
    gb_coro *c = gb_coro_new(body, container, 0);
    CHECK(gb_coro_resume(c));
    gb_leave(gb_current());
    CHECK_EQ(gbt_stats().regions_retired, 1);
    gb_coro_resume(c);
}

static void vec_of_a_left_region(void)
{
    gb_enter();
    gb_vec *v = gb_vec_new(sizeof(int));
    gb_vec_push(v, &(int){1});
    grow_after_the_leave(push_after_the_leave, v);
}

static void map_of_a_left_region(void)
{
    gb_enter();
    gb_map *m = gb_map_new();
    gb_map_put(m, 1, 1);
    grow_after_the_leave(put_after_the_leave, m);
}

GB_TEST(a_container_of_a_left_region_stops_when_it_would_grow)
{
    gbt_expect_death(vec_of_a_left_region,
                     "gb_vec_push: the container's region was left; a container cannot grow after that");
    gbt_expect_death(map_of_a_left_region,
                     "gb_map_put: the container's region was left; a container cannot grow after that");
}

static void container_outside(void)
{
    gb_map_new();
}

GB_TEST(container_outside_any_region_stops)
{
    gbt_expect_death(container_outside, "gb_map_new: no region is entered");
}
