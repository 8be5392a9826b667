/* scenarios.h -- the article's scenarios, shared by the gate programs and
 * the tests.
 *
 * A gate reads a scenario from outside (ps); a test reads the same
 * scenario's counters from inside. Writing each shape once keeps the two
 * measuring the same thing; each caller gives its own sizes.
 */
#ifndef GB_SCENARIOS_H
#define GB_SCENARIOS_H

#include "giveback.h"

#include <stddef.h>
#include <stdint.h>

/* One round of the 400 MB region: enter; a large allocation grown by
 * realloc from 4 to 32 MiB (the growth path); `bytes` in all, in pieces of
 * `piece` bytes, each written; a malloc of `kept_bytes` made at the peak and
 * returned in *kept (on glibc it lands on top of the heap and stops
 * trimming, which is what lets the dynamic threshold show: it is larger
 * than any chunk the earlier rounds freed, so it comes from the top); leave. */
void gbs_region_round(size_t bytes, size_t piece, size_t kept_bytes, int fill, void **kept);

/* One round of many small regions, the shape of a parser or a request
 * handler: n nested regions, region i filled in 1 KiB pieces to a size
 * from 4 to 32 KiB (so each has a few blocks of 4 to 32 KiB), a malloc of
 * kept_bytes made at their peak, all left innermost first; then n regions
 * in sequence with the same sizes, each with a malloc of kept_bytes made
 * while it is live. The n + 1 mallocs are returned in kept[0..n] (on glibc
 * each lands above the region blocks freed before it and, from malloc,
 * would keep them). */
void gbs_small_regions_round(int n, size_t kept_bytes, int fill, void **kept);

/* A coroutine body that keeps arg on its stack and yields forever. */
void gbs_hold_forever(void *arg);

/* Pin-check work for n retirements, each pinned by a coroutine of its own,
 * with `background` idle suspended coroutines around: stack words scanned
 * plus summary probes, from the runtime's counters. *retired is how many
 * regions were retired at the end (n when every pin held). */
uint64_t gbs_pin_work(int background, int n, size_t *retired);

/* The article's stress shape: `steps` coroutines, each made with a pointer
 * into a region of `region_bytes` that is then left, stepped once and kept,
 * reclaimed `live_max` at a time, a safepoint after each step. Returns the
 * most bytes the runtime held (mapped plus malloc'd) at any step. */
size_t gbs_stress(int steps, int live_max, size_t region_bytes);

#endif
