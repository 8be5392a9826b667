/* abi.c -- the public structs across versions (giveback.h, "The ABI"):
 * each function is told the size of its caller's struct, writes that many
 * bytes and no more, zeroes a newer caller's fields this library does not
 * have, and stops on a size no release ever had. */
#include "abi.h"
#include "common.h"

#include <string.h>

/* A caller's struct with room for fields a newer header would add, and a
 * guard past it that nothing may write. */
#define NEWER 64
#define GUARD 64
static unsigned char buf[sizeof(gb_stats) + sizeof(gb_region_info) + sizeof(gb_options) + NEWER + GUARD];

static void fill(unsigned char v)
{
    memset(buf, v, sizeof buf);
}

static void check_bytes(size_t from, size_t to, unsigned char v)
{
    for (size_t i = from; i < to; i++)
        if (buf[i] != v)
            gbt_fail(__FILE__, __LINE__, "byte %zu is 0x%02x, not 0x%02x", i, buf[i], v);
}

GB_TEST(stats_fill_the_callers_size_and_write_nothing_past_it)
{
    gb_region *r = gb_enter();
    gb_alloc(100);
    fill(0xAA);
    gb_stats_get_sized((gb_stats *)buf, sizeof(gb_stats));
    gb_stats s;
    memcpy(&s, buf, sizeof s);
    CHECK_EQ(s.regions_live, 1);
    CHECK_EQ(s.map_budget, gbt_stats().map_budget);
    check_bytes(sizeof(gb_stats), sizeof buf, 0xAA);
    gb_leave(r);
}

GB_TEST(a_newer_callers_fields_are_zeroed)
{
    gb_region *r = gb_enter();
    gb_alloc(100);
    /* A header with NEWER more bytes of fields, run with this library. */
    fill(0xAA);
    gb_stats_get_sized((gb_stats *)buf, sizeof(gb_stats) + NEWER);
    CHECK_EQ(((gb_stats *)buf)->regions_live, 1);
    check_bytes(sizeof(gb_stats), sizeof(gb_stats) + NEWER, 0);
    check_bytes(sizeof(gb_stats) + NEWER, sizeof buf, 0xAA);

    fill(0xAA);
    CHECK_EQ(gb_resident_get_sized((gb_resident *)buf, sizeof(gb_resident) + NEWER), 0);
    CHECK(((gb_resident *)buf)->rss > 0);
    check_bytes(sizeof(gb_resident), sizeof(gb_resident) + NEWER, 0);
    check_bytes(sizeof(gb_resident) + NEWER, sizeof buf, 0xAA);

    fill(0xAA);
    gb_region_info_get_sized(r, (gb_region_info *)buf, sizeof(gb_region_info) + NEWER);
    CHECK_EQ(((gb_region_info *)buf)->state, GB_REGION_LIVE);
    CHECK_EQ(((gb_region_info *)buf)->depth, 1);
    check_bytes(sizeof(gb_region_info), sizeof(gb_region_info) + NEWER, 0);
    check_bytes(sizeof(gb_region_info) + NEWER, sizeof buf, 0xAA);

    fill(0xAA);
    gb_options_init_sized((gb_options *)buf, sizeof(gb_options) + NEWER);
    check_bytes(0, sizeof(gb_options) + NEWER, 0);
    check_bytes(sizeof(gb_options) + NEWER, sizeof buf, 0xAA);
    gb_leave(r);
}

GB_TEST(a_newer_callers_options_are_read_to_this_librarys_size)
{
    /* Its fields past this library's are not read: a value there that no
     * setting could take changes nothing. */
    fill(0);
    gb_options *o = (gb_options *)buf;
    o->cache_bytes = 1 << 20;
    memset(buf + sizeof(gb_options), 0xFF, NEWER);
    gb_init_sized(o, sizeof(gb_options) + NEWER);
    gb_options same;
    gb_options_init(&same);
    same.cache_bytes = 1 << 20;
    gb_init(&same); /* the settings in force: returns */
    CHECK_EQ(strcmp(gb_blocks_name(), "map"), 0);
}

static void stats_too_small(void)
{
    gb_stats_get_sized((gb_stats *)buf, GB__STATS_LEAST - 8);
}

static void options_too_small(void)
{
    fill(0);
    gb_init_sized((gb_options *)buf, GB__OPTIONS_LEAST - 4);
}

/* Options exactly the size of their first ABI are a caller's of that
 * release: taken, with every later field at its default. */
GB_TEST(options_of_exactly_the_first_abis_size_are_taken)
{
    fill(0);
    gb_init_sized((gb_options *)buf, GB__OPTIONS_LEAST);
    gb_region *r = gb_enter();
    gb_alloc(100);
    gb_leave(r);
}

/* gb_region_of is a first use like any call into the runtime: it settles
 * the settings, and a gb_init that asks for others afterwards stops. Here,
 * in a library build, no constructor has settled them before main. */
static void init_after_region_of(void)
{
    int x = 0;
    CHECK(gb_region_of(&x) == NULL);
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = 1 << 20;
    gb_init(&o);
}

GB_TEST(a_region_of_question_is_a_first_use)
{
    gbt_expect_death(init_after_region_of, "set first by the first call into the runtime");
}

GB_TEST(a_struct_smaller_than_its_first_abi_stops)
{
    gbt_expect_death(stats_too_small, "gb_stats_get: a struct of");
    gbt_expect_death(options_too_small, "gb_init: options of");
}
