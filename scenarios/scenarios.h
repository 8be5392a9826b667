/* scenarios.h -- the article's scenarios, shared by the tests, the gate
 * programs and the benchmarks.
 *
 * A gate reads a scenario from outside (ps); a test reads the same
 * scenario's counters from inside; a benchmark times it. Writing each shape
 * once keeps them all measuring the same thing; each caller gives its own
 * sizes.
 */
#ifndef GB_SCENARIOS_H
#define GB_SCENARIOS_H

#include "giveback.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The runtime's counters now. */
gb_stats gbs_stats(void);

/* Allocates `bytes` in the current region in pieces of `piece` bytes, each
 * written with fill (the last piece may pass `bytes`). */
void gbs_fill(size_t bytes, size_t piece, int fill);

/* One round of the 400 MB region: enter; a large allocation grown by
 * realloc from 72 to 96 MiB (the growth path: larger than any block cap,
 * so it is a block of its own in every configuration); `bytes` in all, in pieces of
 * `piece` bytes, each written; a malloc of `kept_bytes` made at the peak and
 * returned in *kept (on glibc it lands on top of the heap and stops
 * trimming, which is what lets the dynamic threshold show: it is larger
 * than any chunk the earlier rounds freed, so it comes from the top); leave. */
void gbs_region_round(size_t bytes, size_t piece, size_t kept_bytes, int fill, void **kept);

/* The sizes of one round of many small regions (gbs_small_regions_round). */
typedef struct gbs_small_shape {
    int n;             /* regions entered nested (and as many in sequence) */
    size_t bytes_min;  /* region i holds bytes_min to bytes_max, spread */
    size_t bytes_max;  /* over the range in steps of piece */
    size_t piece;      /* each region is filled in pieces of this size */
    size_t kept_bytes; /* each malloc kept from a peak; 0 for none */
    bool in_sequence;  /* after the nested ones, n regions one at a time */
} gbs_small_shape;

/* One round of many small regions, the shape of a parser or a request
 * handler: n nested regions, each filled in pieces to its size (so each has
 * a block or a few of 4 to 32 KiB), a malloc of kept_bytes made at their
 * peak, all left innermost first; then, in_sequence, n regions one after
 * another with the same sizes, each with a malloc of kept_bytes made while
 * it is live. The mallocs are returned in kept[0] (the nested peak's) and
 * kept[1..n] (the sequence's); kept may be NULL when kept_bytes is 0. On
 * glibc each lands above the region blocks freed before it and, were those
 * from malloc, would keep them. */
void gbs_small_regions_round(const gbs_small_shape *shape, int fill, void **kept);

/* In the current region: `count` maps of `entries` entries each, each
 * compacted into an arena bound to the region (the map-arenas shape). */
void gbs_compacted_maps(int count, int entries);

/* Regions come and go: n of them in turn, each filled with `bytes` in
 * pieces of `piece` bytes and left. Whatever memory a left region gave back
 * is theirs to take, so a region freed too early has its contents
 * overwritten. */
void gbs_regions_come_and_go(int n, size_t bytes, size_t piece, int fill);

/* Enters a region, allocates `bytes` (more than a page), writes them with
 * fill and leaves it, `rounds` times. Returns an address a page into the
 * last round's allocation (past anything the block cache links through): a
 * byte of a left region, which a touch must not find. */
volatile unsigned char *gbs_left_block(size_t bytes, int fill, int rounds);

/* A coroutine body that keeps arg on its stack and yields forever. */
void gbs_hold_forever(void *arg);

/* A coroutine body that keeps arg on its stack, yields once and finishes. */
void gbs_hold_once(void *arg);

/* n coroutines, each run to its first yield in gbs_hold_forever holding
 * nothing: the idle suspended coroutines every pin check must consider.
 * gbs_free_coroutines frees them and the array. */
gb_coro **gbs_idle_coroutines(int n);
void gbs_free_coroutines(gb_coro **c, int n);

/* Pin-check work for n retirements, each pinned by a coroutine of its own,
 * with `background` idle suspended coroutines around: stack words scanned
 * plus summary probes, from the runtime's counters. *retired is how many
 * regions were retired at the end (n when every pin held). */
uint64_t gbs_pin_work(int background, int n, size_t *retired);

/* The sizes of the article's stress shape (gbs_stress). */
typedef struct gbs_stress_shape {
    int steps;           /* coroutines made, stepped once and dropped */
    int live_max;        /* dropped ones are reclaimed this many at a time */
    size_t region_bytes; /* each coroutine's region holds this much, */
    size_t piece;        /* allocated and written in pieces of this size */
    size_t kept_bytes;   /* the malloc kept from the first batch's peak */
} gbs_stress_shape;

/* The article's stress shape: `steps` coroutines, each made with a pointer
 * into a region filled with `region_bytes` in pieces and then left, stepped
 * once and kept, reclaimed `live_max` at a time (a batch), a safepoint
 * after each step. When the first batch is complete, before it is
 * reclaimed, a malloc of kept_bytes is made and returned in *kept: on
 * glibc it lands above every block of that batch, and were those from
 * malloc, it would keep them (scenarios.c says why by glibc's rules).
 * Returns the most bytes the runtime held (mapped plus malloc'd) at any
 * step. */
size_t gbs_stress(const gbs_stress_shape *shape, void **kept);

#endif
