/* floor.h -- what making fresh memory resident and written costs, by each
 * way the OS offers, with no allocator involved.
 *
 * A region that gives its memory back must get it from the kernel again:
 * zeroed pages, mapped and then written. These are the floors its fresh
 * allocations are judged against (churn_bench's physics, small_bench's
 * floor per object). Each fresh method maps n bytes, makes them resident
 * its way, writes every byte and unmaps them, so the figures are the cost
 * of memory that arrives and leaves; memset of already-resident memory is
 * the zeroing floor beneath them all.
 */
#ifndef GB_BENCH_FLOOR_H
#define GB_BENCH_FLOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum floor_method {
    FLOOR_TOUCH_4K = 0,      /* written in 4 KiB pages, a fault each */
    FLOOR_TOUCH_HUGE,        /* 2 MiB-aligned, MADV_HUGEPAGE, written */
    FLOOR_POPULATE_4K,       /* MADV_POPULATE_WRITE in 4 KiB pages, written */
    FLOOR_POPULATE_HUGE,     /* MADV_HUGEPAGE, then MADV_POPULATE_WRITE, written */
    FLOOR_MAP_POPULATE,      /* mmap with MAP_POPULATE, written */
    FLOOR_MEMSET_RESIDENT,   /* memset of memory already resident */
    FLOOR_METHODS
} floor_method;

/* The method's name in bench lines ("touch_4k", ...) and in words. */
const char *floor_name(floor_method m);
const char *floor_what(floor_method m);

/* True for the methods that get fresh memory from the kernel (all but
 * FLOOR_MEMSET_RESIDENT). */
bool floor_is_fresh(floor_method m);

/* Seconds to make n bytes resident and written by m, the median of
 * `rounds` runs; a negative value when the OS refuses the method (no such
 * madvise on this kernel, no huge pages): not available, never a guess. */
double floor_seconds(floor_method m, size_t n, int rounds);

/* The cheapest fresh method for n bytes and its seconds (median of
 * rounds); -1 when none is available. secs[] (FLOOR_METHODS entries, or
 * NULL) receives every method's figure, negative where not available. */
int floor_cheapest_fresh(size_t n, int rounds, double *seconds, double *secs);

/* The floor of small objects: what a bump allocator that did nothing but
 * bump would pay for them. Maps the bytes that n objects of sizes[i] take
 * rounded up to align, makes them resident by m, then, as each peer of
 * small_bench does for its objects, writes i into the first word of the
 * i-th object and stores its address in ptrs[i], and unmaps them (the
 * region's goodbye). For FLOOR_MEMSET_RESIDENT the mapping is made
 * resident first, untimed: the floor of memory reused. Seconds for all of
 * it, or a negative value when the OS refuses the method. */
double floor_fill(floor_method m, const uint16_t *sizes, size_t n, size_t align, void **ptrs);

/* The bytes floor_fill maps for those objects. */
size_t floor_fill_bytes(const uint16_t *sizes, size_t n, size_t align);

#endif /* GB_BENCH_FLOOR_H */
