/* released.c -- what touching a left region's block does, in each build.
 *
 * A left region's memory is gone: a block unmapped on leave faults when
 * touched (the released-is-gone gate checks that from outside). The one
 * exception is the block cache: a block of a cached size may stay mapped
 * for this thread's next region, and what a stray touch of it does then
 * depends on the build, which is written down here and tested:
 *   - release build:   the block stays mapped and resident, counted in
 *                      bytes_cached; a touch reads what was there (it is
 *                      the next region's memory) until gb_sweep, after
 *                      which it faults;
 *   - ASan build:      the cached block is poisoned, so a touch is reported
 *                      as a use-after-poison, as a freed heap block's is;
 *   - GB_CACHE off:    nothing is cached, and a touch faults at once.
 */
#include "common.h"
#include "scenarios.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define GBT_ASAN (GBT_SANITIZED && !GBT_TSAN)

/* A 48 KiB allocation takes a 64 KiB block of its own mapping: a power of
 * two, which the block cache keeps. */
enum { BLOCK = 64 * 1024, PAYLOAD = 48 * 1024, PATTERN = 0x5a };

static volatile unsigned char *left_byte;

static void init_cache(size_t bytes)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.cache_bytes = bytes;
    gb_init(&o);
}

/* Enters a region, fills a 64 KiB block, leaves; left_byte points into it
 * (the released-is-gone gate's scenario, with a block the cache keeps). */
static void leave_one_block(void)
{
    left_byte = gbs_left_block(PAYLOAD, PATTERN, 1);
}

static void touch(void)
{
    unsigned char v = *left_byte;
    _exit(v == PATTERN ? 10 : 11);
}

static bool faulted(int status)
{
    return WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS);
}

static bool page_resident(volatile void *p)
{
    long ps = sysconf(_SC_PAGESIZE);
    void *page = (void *)((uintptr_t)p & ~(uintptr_t)(ps - 1));
#if defined(__APPLE__)
    char vec = 0;
#else
    unsigned char vec = 0;
#endif
    return mincore(page, (size_t)ps, &vec) == 0 && (vec & 1);
}

GB_TEST(a_cached_block_stays_resident_and_counted_until_a_sweep)
{
    GBT_SKIP_IF(GBT_ASAN, "under ASan a touch of a cached block is reported instead "
                          "(touching_a_cached_block_is_reported_under_asan)");
    init_cache(0);
    leave_one_block();
    /* The block (and whatever else the leave gave back of a cached size)
     * is in the cache, not in bytes_mapped, and still resident. */
    gb_stats s = gbt_stats();
    CHECK(s.bytes_cached >= BLOCK);
    CHECK(s.mappings_cached >= 1);
    CHECK(page_resident(left_byte));
    int status = gbt_in_child(touch);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 10);
    gb_sweep();
    CHECK_EQ(gbt_stats().bytes_cached, 0);
    CHECK(faulted(gbt_in_child(touch)));
}

GB_TEST(touching_a_cached_block_is_reported_under_asan)
{
    GBT_SKIP_IF(!GBT_ASAN, "only an ASan build poisons cached blocks "
                           "(a_cached_block_stays_resident_and_counted_until_a_sweep)");
    init_cache(0);
    leave_one_block();
    CHECK(gbt_stats().bytes_cached >= BLOCK);
    char out[8192];
    int status = gbt_in_child_capturing(touch, out, sizeof out);
    if (!strstr(out, "use-after-poison"))
        fprintf(stderr, "the child said:\n%s\n", out);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 10));
    CHECK(strstr(out, "use-after-poison") != NULL);
}

GB_TEST(with_the_cache_off_a_left_block_faults)
{
    init_cache(GB_CACHE_OFF);
    leave_one_block();
    CHECK_EQ(gbt_stats().bytes_cached, 0);
    char out[8192];
    int status = gbt_in_child_capturing(touch, out, sizeof out);
    /* ASan catches the fault itself and reports it as a SEGV. */
    bool reported = GBT_ASAN && strstr(out, "SEGV on unknown address") != NULL;
    if (!faulted(status) && !reported)
        fprintf(stderr, "the child touched a left block without a fault (status %d):\n%s\n", status, out);
    CHECK(faulted(status) || reported);
}
