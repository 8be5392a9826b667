/* map.h -- the runtime's own mappings: taken, cached and given back (map.c).
 *
 * The lowest layer that holds memory, right above the OS table (os/os.h):
 * the mapping budget, the size classes of mapped chunks, the per-thread
 * cache of given-back mappings and its process-wide bound, and the one path
 * every mapping leaves by. It calls only the OS layer and the fixes of its
 * own layer (seam_mem.h); the slabs (small.c) and the chunk dispatcher
 * (chunk.c) are built on it, and each caller passes the cache of the
 * thread it runs for.
 */
#ifndef GB_MAP_H
#define GB_MAP_H

#include "base.h"

typedef struct gb__slab gb__slab;

/* Where a chunk of memory came from. */
typedef enum gb__src {
    GB__SRC_MAP = 1,   /* the runtime's own mapping */
    GB__SRC_HEAP = 2,  /* malloc */
    GB__SRC_SMALL = 3, /* part of one of the runtime's slabs (small.c) */
} gb__src;

/* A chunk: the unit of memory the runtime takes and gives back whole.
 *   - size is what was taken: a size class for MAP (map.c), exact for
 *     HEAP;
 *   - huge: a MAP chunk advised for transparent huge pages, which starts
 *     on a huge page boundary (gb__cfg.huge), counted in bytes_huge from
 *     the moment it is taken until it is given back;
 *   - fresh: a MAP chunk mapped just now, by gb__map_take, not handed
 *     out from the cache: its pages are not resident yet (gb__map_populates);
 *   - a MAP chunk counts once in gb__stat.mappings and size in bytes_mapped
 *     over the same span, cached or not (gb_stats_get takes the cached
 *     ones out); a HEAP chunk counts size in bytes_heap; a SMALL
 *     chunk counts size in bytes_small, and owner is its slab (whose
 *     mapping is counted once). */
typedef struct gb__chunk {
    void *base;
    size_t size;
    gb__src src;
    bool huge;
    bool fresh;
    gb__slab *owner;
} gb__chunk;

/* A thread's cache of given-back mapped blocks: one list per size class
 * (four per doubling from map_min), linked through each block's first
 * word; bytes counts this thread's, and all threads' together are at most
 * gb__cfg.cache_bytes. Cached blocks stay resident. */
#define GB__CACHE_CLASSES 96
typedef struct gb__cache {
    void *head[GB__CACHE_CLASSES];
    size_t bytes;
} gb__cache;

#if GB_CHECK
/* cache's lists whole: each block page-aligned with its kind word (NULL,
 * or the block itself for a huge one, which starts on a huge page), no
 * more of a class than the bound admits, bytes their sum, within what
 * every thread has reserved, and bytes_cached within the bound. Stops
 * naming the invariant broken (the block cache's checker, beside the code
 * that keeps it). */
void gb__cache_check(const gb__cache *cache);
#endif

/* Reserves n mappings against the budget; false (nothing reserved) past it. */
bool gb__map_reserve(size_t n);
void gb__map_unreserve(size_t n);

/* The size a mapped chunk of n bytes is given: its size class (four per
 * doubling, rounded up to the page). `what` names the request in the
 * message when the rounding overflows. */
size_t gb__map_class_size(size_t n, const char *what);

/* What gb__map_take could do. */
typedef enum gb__map_result {
    GB__MAP_TAKEN = 0,  /* *out is a mapping of the runtime's own */
    GB__MAP_BUDGET = 1, /* past the mapping budget: nothing was tried */
    GB__MAP_FAILED = 2, /* the OS refused the mapping (*map_errno says why) */
} gb__map_result;

/* A mapped chunk of `size` bytes (a class size) for the thread whose cache
 * this is: a cached block of its class (with fit), or of the smallest of
 * the next eight classes, up to four times the size (without), else a
 * fresh mapping, aligned and advised for huge pages from gb__cfg.huge up.
 * Counted in bytes_mapped, mappings and bytes_huge. *map_errno is written
 * only when the result is GB__MAP_FAILED: the caller starts it at 0. */
gb__map_result gb__map_take(gb__cache *cache, size_t size, bool fit, gb__chunk *out, int *map_errno);

/* Whether MAP chunk c is to be made resident in steps as it is written:
 * it is fresh, gb__cfg says so for its kind of pages (populate_4k,
 * populate_huge) and the OS has the call. Clears c->fresh either way: a
 * chunk is asked once. */
bool gb__map_populates(gb__chunk *c);

/* Whether cache holds a block of `size` bytes (a class size) exactly: the
 * next gb__map_take of that size is then a cache hit of that size. */
bool gb__map_cached(const gb__cache *cache, size_t size);

/* The least a populate step makes resident. */
#define GB__MAP_STEP_MIN (8 * GB__KIB)

/* Makes chunk c resident from offset done (0, or what an earlier call
 * returned) to at least want (done < want <= c->size) in one call to the
 * OS, and returns where the resident part now ends: want rounded up to a
 * step, which grows with `resident`, the bytes the caller's region has
 * resident, and is a huge page for a chunk of huge size. Counted in
 * bytes_populated; a refusal leaves the rest of the chunk to be faulted
 * in (the result is then c->size) and is not an error. A step of a whole huge page is timed for the host's choice
 * (gb__map_choose_huge). */
size_t gb__map_populate_more(const gb__chunk *c, size_t done, size_t want, size_t resident);

/* The host's choice of kind for a block of huge size under GB_HUGE=auto:
 * true for huge pages. gb__map_learn records the time of one populate
 * step of a huge page's bytes of the kind given; gb__map_learnt reads the
 * estimates (for the tests). */
typedef struct gb__map_learning {
    uint64_t step_ns[2]; /* [0] in 4 KiB pages, [1] in huge pages */
    uint32_t steps[2];
} gb__map_learning;
bool gb__map_choose_huge(void);
void gb__map_learn(bool huge, uint64_t ns);
void gb__map_learnt(gb__map_learning *out);

/* Gives a MAP chunk back: into cache while the process's bound has room
 * (fix/cache_bound.c), else to the OS (gb__map_unmap). */
void gb__map_give(gb__cache *cache, gb__chunk c);

/* Moves MAP chunk c to a mapping of at least n bytes (a class size) with
 * the OS's remap, keeping its contents; false, with c as it was, when the
 * OS cannot. */
bool gb__map_remap(gb__chunk c, size_t n, gb__chunk *out);

/* The one way a mapping leaves: unmaps [p, p + size), counted as
 * `mappings` mappings and size bytes in bytes_mapped, and uncounts it.
 * Its first `guard` bytes are inaccessible (a stack's guard page), or 0.
 * When munmap fails (the process is at its mapping limit) the pages after
 * the guard are emptied now, which gives the memory back (on macOS a
 * release that meets the guard would stop there and give nothing), and
 * the range is unmapped by a later call or gb__map_retry_unmaps on any
 * thread, counted meanwhile in unmaps_pending (and still in bytes_mapped
 * and mappings). The range's last bytes must be writable: the record of a
 * deferred unmap is kept there. */
void gb__map_unmap(void *p, size_t size, size_t mappings, size_t guard);

/* The same way out for a mapping the runtime counts as metadata, not as
 * one of its mappings: an address index's table (index.c), counted as
 * size bytes in bytes_meta and outside the mapping budget. It leaves
 * bytes_meta when it is unmapped; when munmap fails it is emptied now,
 * unmapped later as above, and stays in bytes_meta until then. */
void gb__map_unmap_meta(void *p, size_t size);

/* Tries again to unmap the ranges whose munmap failed. */
void gb__map_retry_unmaps(void);

/* Moves one mapping of `size` bytes that stays mapped from the mapped
 * counters (bytes_mapped, mappings) to the cached ones (bytes_cached,
 * mappings_cached), or back: a block entering or leaving a block cache,
 * or a thread's spare page of region descriptors. */
void gb__map_count_cached(size_t size, bool cached);

/* Reserves `size` bytes of the process's cache bound for something the
 * thread of `cache` keeps beside it (its spare page of region
 * descriptors), unmapping that cache's blocks, largest first, to make
 * room; false, with nothing reserved, when the bound cannot hold it.
 * Unreserve gives the bytes back to the bound. */
bool gb__map_cache_reserve(gb__cache *cache, size_t size);
void gb__map_cache_unreserve(size_t size);

/* Gives every block of cache back to the OS (gb_sweep, thread exit). */
void gb__map_cache_flush(gb__cache *cache);

/* The two places where the cache's bound is kept by the order of two
 * steps, not by a lock: each thread takes and gives its blocks without
 * one, so another thread may run between them.
 *   - ADMITTED: the bound has room for `size` more bytes (cache_reserve),
 *     which are not reserved yet: the reservation is made only if no other
 *     thread's came in between, else the check is made again;
 *   - UNCOUNTED: a block of `size` bytes has left a thread's cache and
 *     bytes_cached (cache_pop, cache_drop), and its reservation is not
 *     given back yet, so no other thread can count it again in its own
 *     cache before it is off the counter. */
typedef enum gb__cache_step {
    GB__CACHE_STEP_ADMITTED = 1,
    GB__CACHE_STEP_UNCOUNTED = 2,
} gb__cache_step;

/* Called at each of those steps, on the thread taking it, when not NULL:
 * a test sets it (before it starts the threads it involves) to run another
 * thread's put right there, the interleaving a stress run would hit only
 * now and then. NULL otherwise. */
extern void (*gb__map_cache_hook)(gb__cache_step step, size_t size);

#endif /* GB_MAP_H */
