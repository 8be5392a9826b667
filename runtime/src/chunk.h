/* chunk.h -- the unit of memory the runtime takes and gives back (chunk.c).
 *
 * Region blocks, container arenas, slabs and descriptor pages are chunks:
 * taken from the OS (a mapping of the runtime's own) or from malloc, and
 * given back whole. Every byte the runtime holds is counted here, so the
 * counters gates and tests read are exact. Coroutine stacks are mapped by
 * stack.c, which gives them back through the same unmap path.
 */
#ifndef GB_CHUNK_H
#define GB_CHUNK_H

#include "base.h"

typedef struct gb__thread gb__thread;
typedef struct gb__slab gb__slab;

/* Where a chunk of memory came from. */
typedef enum gb__src {
    GB__SRC_MAP = 1,   /* the runtime's own mapping */
    GB__SRC_HEAP = 2,  /* malloc */
    GB__SRC_SMALL = 3, /* part of one of the runtime's slabs (small.c) */
} gb__src;

/* A chunk.
 *   - size is what was taken: a size class for MAP (chunk.c), exact for
 *     HEAP;
 *   - huge: a MAP chunk advised for transparent huge pages, which starts
 *     on a huge page boundary (gb__cfg.huge), counted in bytes_huge from
 *     gb__chunk_get until gb__chunk_put;
 *   - a MAP chunk counts once in gb__stat.mappings and size in bytes_mapped
 *     from gb__chunk_get until gb__chunk_put; a HEAP chunk counts size in
 *     bytes_heap over the same span; a SMALL chunk counts size in
 *     bytes_small, and owner is its slab (whose mapping is counted once). */
typedef struct gb__chunk {
    void *base;
    size_t size;
    gb__src src;
    bool huge;
    gb__slab *owner;
} gb__chunk;

/* Takes a chunk of at least n bytes. The block source decides MAP or HEAP
 * (fix/block_map.c), and a small one may come from a slab
 * (fix/small_slab.c); a MAP request past the mapping budget or whose mmap
 * fails becomes a HEAP chunk and is counted as a fallback. Stops the
 * process when even malloc fails. */
gb__chunk gb__chunk_get(size_t n);

/* How gb__chunk_try_get may take a chunk (flags):
 *   GB__CHUNK_FIT:      a cached block only of n's own size class (the
 *                       cache may otherwise hand over one up to four times
 *                       larger: a region under a limit must not be given
 *                       more than it asked for);
 *   GB__CHUNK_MAP_ONLY: a mapping whose mmap fails is not replaced by
 *                       malloc (a region steps down to a smaller mapping
 *                       first); past the mapping budget malloc is still
 *                       used, as gb__chunk_get does. */
#define GB__CHUNK_FIT 1u
#define GB__CHUNK_MAP_ONLY 2u

/* Like gb__chunk_get, but false, with nothing taken, when the chunk
 * cannot be had (`how` above). */
bool gb__chunk_try_get(size_t n, unsigned how, gb__chunk *out);

/* The size gb__chunk_get gives a fresh chunk of n bytes (its size class,
 * for a mapped one): what a region under a limit would hold. */
size_t gb__chunk_size_for(size_t n);

/* Gives a chunk back: a mapped block into this thread's cache while the
 * process's bound has room (fix/cache_bound.c), else to the OS (gb__chunk_unmap); a slab's
 * chunk to its slab; free for HEAP. */
void gb__chunk_put(gb__chunk c);

/* Grows a chunk to at least n bytes keeping its first `used` bytes: mremap
 * or map-copy-unmap for MAP chunks (by gb__cfg.growth), realloc for HEAP. */
gb__chunk gb__chunk_grow(gb__chunk c, size_t used, size_t n);

/* Like gb__chunk_grow, but false, with c as it was, when the larger chunk
 * cannot be had (`fit` as for gb__chunk_try_get). */
bool gb__chunk_try_grow(gb__chunk c, size_t used, size_t n, bool fit, gb__chunk *out);

/* Reserves n mappings against the budget; false (nothing reserved) past it. */
bool gb__chunk_reserve(size_t n);
void gb__chunk_unreserve(size_t n);

/* The one way a mapping leaves: unmaps [p, p + size), counted as
 * `mappings` mappings and size bytes in bytes_mapped, and uncounts it.
 * Its first `guard` bytes are inaccessible (a stack's guard page), or 0.
 * When munmap fails (the process is at its mapping limit) the pages after
 * the guard are emptied now, which gives the memory back (on macOS a
 * release that meets the guard would stop there and give nothing), and
 * the range is unmapped by a later call or gb__chunk_retry_unmaps on any
 * thread, counted meanwhile in unmaps_pending (and still in bytes_mapped
 * and mappings). The range's last bytes must be writable: the record of a
 * deferred unmap is kept there. */
void gb__chunk_unmap(void *p, size_t size, size_t mappings, size_t guard);

/* Tries again to unmap the ranges whose munmap failed. */
void gb__chunk_retry_unmaps(void);

/* Moves one mapping of `size` bytes that stays mapped from the mapped
 * counters (bytes_mapped, mappings) to the cached ones (bytes_cached,
 * mappings_cached), or back: a block entering or leaving the block cache,
 * or a thread's spare page of region descriptors. */
void gb__chunk_count_cached(size_t size, bool cached);

/* A thread's cache of given-back mapped blocks: one list per size class
 * (four per doubling from map_min, chunk.c), linked through each block's
 * first word; bytes counts this thread's, and all threads' together are
 * at most gb__cfg.cache_bytes. Cached blocks stay resident. */
#define GB__CACHE_CLASSES 96
typedef struct gb__cache {
    void *head[GB__CACHE_CLASSES];
    size_t bytes;
} gb__cache;

/* Reserves `size` bytes of the process's cache bound for something this
 * thread keeps beside its cache (its spare page of region descriptors),
 * unmapping its cached blocks, largest first, to make room; false, with
 * nothing reserved, when the bound cannot hold it. Unreserve gives the
 * bytes back to the bound. */
bool gb__chunk_cache_reserve(size_t size);
void gb__chunk_cache_unreserve(size_t size);

/* Gives t's cached blocks back to the OS (gb_sweep, thread exit). */
void gb__chunk_cache_flush(gb__thread *t);

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
extern void (*gb__chunk_cache_hook)(gb__cache_step step, size_t size);

#endif /* GB_CHUNK_H */
