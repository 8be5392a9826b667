/* scenarios.c -- the article's scenarios (see scenarios.h). */
#include "scenarios.h"

#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1024 * 1024)

gb_stats gbs_stats(void)
{
    gb_stats s;
    gb_stats_get(&s);
    return s;
}

/* A malloc of n bytes, written, as a long-lived object of the program. */
static void *kept_malloc(size_t n, int fill)
{
    void *p = malloc(n);
    if (p)
        memset(p, fill, n);
    return p;
}

static void *must_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

void gbs_fill(size_t bytes, size_t piece, int fill)
{
    for (size_t total = 0; total < bytes; total += piece)
        memset(gb_alloc(piece), fill, piece);
}

/* The large allocation of the 400 MB region, before and after its
 * realloc: past the 64 MiB cap of chains with huge pages. */
#define GROW_FROM (72 * MIB)
#define GROW_TO (96 * MIB)

void gbs_region_round(size_t bytes, size_t piece, size_t kept_bytes, int fill, void **kept)
{
    gb_region *r = gb_enter();
    char *big = gb_alloc(GROW_FROM);
    memset(big, fill, GROW_FROM);
    big = gb_realloc(big, GROW_FROM, GROW_TO);
    memset(big, fill, GROW_TO);
    gbs_fill(bytes > GROW_TO ? bytes - GROW_TO : 0, piece, fill);
    *kept = kept_malloc(kept_bytes, fill);
    gb_leave(r);
}

/* Region i's size: bytes_min to bytes_max in steps of a piece, spread over
 * the range by a prime multiplier, so that neighbouring regions differ. */
static size_t small_region_bytes(const gbs_small_shape *sh, int i)
{
    size_t steps = (sh->bytes_max - sh->bytes_min) / sh->piece + 1;
    return sh->bytes_min + ((size_t)i * 7919u % steps) * sh->piece;
}

static void small_kept(const gbs_small_shape *sh, int fill, void **kept, int k)
{
    if (sh->kept_bytes)
        kept[k] = kept_malloc(sh->kept_bytes, fill);
}

void gbs_small_regions_round(const gbs_small_shape *sh, int fill, void **kept)
{
    gb_region **nested = must_malloc((size_t)sh->n * sizeof *nested);
    for (int i = 0; i < sh->n; i++) {
        nested[i] = gb_enter();
        gbs_fill(small_region_bytes(sh, i), sh->piece, fill);
    }
    small_kept(sh, fill, kept, 0);
    for (int i = sh->n - 1; i >= 0; i--)
        gb_leave(nested[i]);
    free(nested);
    if (!sh->in_sequence)
        return;
    for (int i = 0; i < sh->n; i++) {
        gb_region *r = gb_enter();
        gbs_fill(small_region_bytes(sh, i), sh->piece, fill);
        small_kept(sh, fill, kept, i + 1);
        gb_leave(r);
    }
}

void gbs_compacted_maps(int count, int entries)
{
    for (int i = 0; i < count; i++) {
        gb_map *m = gb_map_new();
        for (uint64_t k = 0; k < (uint64_t)entries; k++)
            gb_map_put(m, k * 2654435761u, k);
        gb_map_compact(m);
    }
}

void gbs_regions_come_and_go(int n, size_t bytes, size_t piece, int fill)
{
    for (int i = 0; i < n; i++) {
        gb_region *r = gb_enter();
        gbs_fill(bytes, piece, fill);
        gb_leave(r);
    }
}

volatile unsigned char *gbs_left_block(size_t bytes, int fill, int rounds)
{
    volatile unsigned char *addr = NULL;
    for (int round = 0; round < rounds; round++) {
        gb_region *r = gb_enter();
        unsigned char *p = gb_alloc(bytes);
        memset(p, fill, bytes);
        addr = p + 4096;
        gb_leave(r);
    }
    return addr;
}

void gbs_hold_forever(void *arg)
{
    void *volatile p = arg;
    for (;;)
        gb_coro_yield();
    (void)p;
}

void gbs_hold_once(void *arg)
{
    void *volatile p = arg;
    gb_coro_yield();
    (void)p;
}

gb_coro **gbs_idle_coroutines(int n)
{
    gb_coro **c = must_malloc((size_t)n * sizeof *c);
    for (int i = 0; i < n; i++) {
        c[i] = gb_coro_new(gbs_hold_forever, NULL, 0);
        gb_coro_resume(c[i]);
    }
    return c;
}

void gbs_free_coroutines(gb_coro **c, int n)
{
    for (int i = 0; i < n; i++)
        gb_coro_free(c[i]);
    free(c);
}

uint64_t gbs_pin_work(int background, int n, size_t *retired)
{
    gb_coro **bg = gbs_idle_coroutines(background);
    gb_coro **held = must_malloc((size_t)n * sizeof *held);
    gb_stats before = gbs_stats();
    for (int i = 0; i < n; i++) {
        gb_region *r = gb_enter();
        held[i] = gb_coro_new(gbs_hold_forever, gb_alloc(1000), 0);
        gb_coro_resume(held[i]);
        gb_leave(r);
    }
    gb_stats after = gbs_stats();
    *retired = after.regions_retired;
    gbs_free_coroutines(held, n);
    gbs_free_coroutines(bg, background);
    return (after.pin_words_scanned - before.pin_words_scanned) + (after.pin_probes - before.pin_probes);
}

/* The stress shape is made so that, were its blocks from malloc, glibc's
 * own rules would keep the first batch's blocks in the process after the
 * final sweep, whatever else the heap holds: the malloc-back poison's red
 * must not rest on where glibc happens to place things, such as the
 * coroutine descriptors between the blocks (one region of 64 KiB in a
 * single 128 KiB block turned green when the descriptor grew from 248 to
 * 264 bytes).
 *
 * First, every block is one glibc serves from its heap. Each region is
 * filled in pieces, so its blocks are small ones of the chain (in the gate
 * one of 16 KiB and one of 32 KiB, both of a mapping's worth in the clean
 * builds, so that the small-from-malloc poison does not come into it): all
 * under the 64 KiB threshold that a program build fixes and under the 128
 * KiB that a library build's dynamic threshold starts at and only raises. glibc maps a request only when it "meets the
 * mmap threshold" and no free chunk holds it (sysmalloc in malloc.c), so
 * these come from the heap in both builds, on the main thread from the
 * main arena's heap. A single block of 128 KiB would be mapped by a
 * program build whenever no free chunk held it, and unmapped on free.
 *
 * Second, a malloc made when the first batch is complete lands above all of
 * its blocks. Nothing the shape allocated has been freed by then: every
 * region is retired, pinned by its coroutine, and every coroutine is still
 * live. What was freed before is the start-up's: stdio's buffers and FILEs
 * of a few files read, about 10 KiB in all on glibc 2.36. The kept malloc
 * (16 KiB in the gate) is larger than all of them together and than the
 * largest size the tcache holds (1,032 bytes), so no free chunk holds it,
 * and glibc splits it off the top chunk, which "is treated as larger (and
 * thus less well fitting) than any other available chunk" (_int_malloc,
 * use_top): above every chunk in use.
 *
 * Third, free gives back memory of the main heap only from its top: when
 * the top chunk passes the trim threshold, systrim "gives memory back to
 * the system (via negative arguments to sbrk) if there is unused memory at
 * the `high' end of the malloc pool" (malloc.c), and nothing in free gives
 * back the pages of a free chunk below a chunk in use (only malloc_trim
 * does, which neither the runtime nor the gate program calls). So from the
 * first batch's end to the kept malloc's free, every page the first batch
 * wrote (region_bytes times live_max, 40 MiB in the gate) stays resident,
 * reused or not by the batches after it, and the gate reads it after the
 * final sweep.
 *
 * With the runtime's own blocks (the clean builds), the kept malloc holds
 * only its own few KiB. */
size_t gbs_stress(const gbs_stress_shape *sh, void **kept)
{
    *kept = NULL;
    gb_coro **live = must_malloc((size_t)sh->live_max * sizeof *live);
    size_t nlive = 0, peak = 0;
    for (int i = 0; i < sh->steps; i++) {
        gb_region *r = gb_enter();
        char *p = gb_alloc(sh->piece);
        memset(p, i, sh->piece);
        gbs_fill(sh->region_bytes - sh->piece, sh->piece, i);
        gb_coro *c = gb_coro_new(gbs_hold_once, p, 0);
        gb_coro_resume(c);
        gb_leave(r);
        live[nlive++] = c;
        gb_safepoint();
        if (nlive == (size_t)sh->live_max) {
            if (i + 1 == sh->live_max)
                *kept = kept_malloc(sh->kept_bytes, i);
            for (size_t k = 0; k < nlive; k++)
                gb_coro_free(live[k]);
            nlive = 0;
        }
        gb_stats s = gbs_stats();
        if (s.bytes_mapped + s.bytes_heap > peak)
            peak = s.bytes_mapped + s.bytes_heap;
    }
    for (size_t k = 0; k < nlive; k++)
        gb_coro_free(live[k]);
    free(live);
    return peak;
}
