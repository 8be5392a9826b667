/* init.c -- gb_init called more than once: by a library and its host, or
 * after the runtime's first use. Asking for the settings in force returns;
 * asking for others stops, naming both and who set them first. */
#include "common.h"

#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>

#include "init_guest.h"

static gb_options cache_of(size_t bytes)
{
    gb_options o;
    gb_options_init(&o);
    o.cache_bytes = bytes;
    return o;
}

/* Runs fn in a child and checks that it stopped with a message holding
 * every one of the NULL-ended strings that follow. */
static void expect_death_saying(void (*fn)(void), ...)
{
    char err[4096];
    int status = gbt_in_child_capturing(fn, err, sizeof err);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        gbt_fail(__FILE__, __LINE__, "expected SIGABRT, got status %d; stderr:\n%s", status, err);
    va_list ap;
    va_start(ap, fn);
    for (const char *want; (want = va_arg(ap, const char *)) != NULL;)
        if (!strstr(err, want))
            gbt_fail(__FILE__, __LINE__, "the message lacks \"%s\":\n%s", want, err);
    va_end(ap);
}

static void alloc_and_leave(void)
{
    gb_region *r = gb_enter();
    char *p = gb_alloc(64);
    memset(p, 1, 64);
    gb_leave(r);
}

GB_TEST(a_second_gb_init_asking_for_the_settings_in_force_returns)
{
    gb_options o = cache_of(1 << 20);
    gb_init(&o);
    gb_init(&o);
    /* The same settings asked for another way: the source map by name
     * where the first call left it to the default. */
    o.blocks = GB_BLOCKS_MAP;
    gb_init(&o);
    alloc_and_leave();
    CHECK_EQ(strcmp(gb_blocks_name(), "map"), 0);
}

GB_TEST(gb_init_with_the_defaults_after_first_use_returns)
{
    alloc_and_leave();
    gb_init(NULL);
    alloc_and_leave();
}

static void other_cache_bound(void)
{
    gb_options a = cache_of(1 << 20), b = cache_of(2 << 20);
    gb_init(&a);
    gb_init(&b);
}

GB_TEST(a_second_gb_init_asking_for_other_settings_stops_naming_both)
{
    expect_death_saying(other_cache_bound, "already initialised with cache_bytes=1048576",
                        "asks for cache_bytes=2097152", "set first by gb_init called from",
                        NULL);
}

static void other_source_after_first_use(void)
{
    alloc_and_leave();
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_HEAP;
    o.first_block = 8192;
    gb_init(&o);
}

GB_TEST(gb_init_after_first_use_asking_for_other_settings_stops_naming_the_first_use)
{
    /* The settings that differ are named, each with both values (the
     * heap source also turns the slabs off, so "small" differs too). */
    expect_death_saying(other_source_after_first_use, "already initialised with blocks=map, small=slab",
                        "first_block=4096", "asks for blocks=heap, small=malloc", "first_block=8192",
                        "set first by the first call into the runtime", NULL);
}

GB_TEST(a_library_and_its_host_both_initialise_with_the_same_settings)
{
    gb_options o = cache_of(1 << 20);
    gb_init(&o);
    CHECK(gbt_guest_start(1 << 20));
    alloc_and_leave();
    gb_sweep();
    gbt_check_all_given_back();
}

static void guest_asks_for_another_bound(void)
{
    gb_options o = cache_of(1 << 20);
    gb_init(&o);
    gbt_guest_start(4 << 20);
}

GB_TEST(a_library_asking_for_other_settings_than_its_host_stops_naming_both)
{
    /* The host (this program) set the bound first; the library's call
     * is named by the library's file. */
    expect_death_saying(guest_asks_for_another_bound, "cache_bytes=1048576", "asks for cache_bytes=4194304",
                        "set first by gb_init called from", "init_guest", NULL);
}

static void huge_asked(gb_huge huge)
{
    gb_options o;
    gb_options_init(&o);
    o.huge = huge;
    gb_init(&o);
}

static void huge_on(void)
{
    huge_asked(GB_HUGE_ON);
}

static void huge_off(void)
{
    huge_asked(GB_HUGE_OFF);
}

/* Huge pages measured (auto, where blocks are populated), advised always
 * (on) and never (off) are three settings, each named by its word. */
GB_TEST(huge_pages_asked_otherwise_after_auto_measures_them_stops_naming_both)
{
    gb_init(NULL);
    /* Measured where huge pages are on and populated ("all"). */
    GBT_SKIP_IF(strcmp(gb_populate_name(), "all") != 0, "huge pages are not measured here (none, or no call "
                                                       "that populates)");
    expect_death_saying(huge_on, "already initialised with huge=auto", "asks for huge=on", NULL);
    expect_death_saying(huge_off, "already initialised with huge=auto", "asks for huge=off", NULL);
}
