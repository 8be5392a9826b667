/* scenarios.c -- the article's scenarios (see scenarios.h). */
#include "scenarios.h"

#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1024 * 1024)

/* A malloc of n bytes, written, as a long-lived object of the program. */
static void *kept_malloc(size_t n, int fill)
{
    void *p = malloc(n);
    if (p)
        memset(p, fill, n);
    return p;
}

void gbs_region_round(size_t bytes, size_t piece, size_t kept_bytes, int fill, void **kept)
{
    gb_region *r = gb_enter();
    char *big = gb_alloc(4 * MIB);
    memset(big, fill, 4 * MIB);
    big = gb_realloc(big, 4 * MIB, 32 * MIB);
    memset(big, fill, 32 * MIB);
    for (size_t total = 32 * MIB; total < bytes; total += piece)
        memset(gb_alloc(piece), fill, piece);
    *kept = kept_malloc(kept_bytes, fill);
    gb_leave(r);
}

/* Region i's size: 4 to 32 KiB, spread over the range. */
static size_t small_region_bytes(int i)
{
    return (4 + (size_t)((unsigned)i * 7919u % 29u)) * 1024;
}

static void fill_small_region(int i, int fill)
{
    for (size_t total = 0; total < small_region_bytes(i); total += 1024)
        memset(gb_alloc(1024), fill, 1024);
}

void gbs_small_regions_round(int n, size_t kept_bytes, int fill, void **kept)
{
    gb_region **nested = malloc((size_t)n * sizeof *nested);
    if (!nested)
        abort();
    for (int i = 0; i < n; i++) {
        nested[i] = gb_enter();
        fill_small_region(i, fill);
    }
    kept[0] = kept_malloc(kept_bytes, fill);
    for (int i = n - 1; i >= 0; i--)
        gb_leave(nested[i]);
    free(nested);
    for (int i = 0; i < n; i++) {
        gb_region *r = gb_enter();
        fill_small_region(i, fill);
        kept[i + 1] = kept_malloc(kept_bytes, fill);
        gb_leave(r);
    }
}

void gbs_hold_forever(void *arg)
{
    void *volatile p = arg;
    for (;;)
        gb_coro_yield();
    (void)p;
}

static gb_stats stats(void)
{
    gb_stats s;
    gb_stats_get(&s);
    return s;
}

uint64_t gbs_pin_work(int background, int n, size_t *retired)
{
    gb_coro **bg = malloc((size_t)background * sizeof *bg);
    gb_coro **held = malloc((size_t)n * sizeof *held);
    if (!bg || !held)
        abort();
    for (int i = 0; i < background; i++) {
        bg[i] = gb_coro_new(gbs_hold_forever, NULL, 0);
        gb_coro_resume(bg[i]);
    }
    gb_stats before = stats();
    for (int i = 0; i < n; i++) {
        gb_region *r = gb_enter();
        held[i] = gb_coro_new(gbs_hold_forever, gb_alloc(1000), 0);
        gb_coro_resume(held[i]);
        gb_leave(r);
    }
    gb_stats after = stats();
    *retired = after.regions_retired;
    for (int i = 0; i < n; i++)
        gb_coro_free(held[i]);
    for (int i = 0; i < background; i++)
        gb_coro_free(bg[i]);
    free(held);
    free(bg);
    return (after.pin_words_scanned - before.pin_words_scanned) + (after.pin_probes - before.pin_probes);
}

static void step_once(void *arg)
{
    char *volatile p = arg;
    gb_coro_yield();
    (void)p;
}

size_t gbs_stress(int steps, int live_max, size_t region_bytes)
{
    gb_coro **live = malloc((size_t)live_max * sizeof *live);
    if (!live)
        abort();
    size_t nlive = 0, peak = 0;
    for (int i = 0; i < steps; i++) {
        gb_region *r = gb_enter();
        char *p = gb_alloc(region_bytes);
        memset(p, i, region_bytes);
        gb_coro *c = gb_coro_new(step_once, p, 0);
        gb_coro_resume(c);
        gb_leave(r);
        live[nlive++] = c;
        gb_safepoint();
        if (nlive == (size_t)live_max) {
            for (size_t k = 0; k < nlive; k++)
                gb_coro_free(live[k]);
            nlive = 0;
        }
        gb_stats s = stats();
        if (s.bytes_mapped + s.bytes_heap > peak)
            peak = s.bytes_mapped + s.bytes_heap;
    }
    for (size_t k = 0; k < nlive; k++)
        gb_coro_free(live[k]);
    free(live);
    return peak;
}
