/* chunk.h -- where a chunk comes from and goes back to (chunk.c).
 *
 * Region blocks, container arenas and descriptor pages are chunks (map.h):
 * a mapping of the runtime's own (map.c), part of a slab (small.c), or
 * malloc'd. chunk.c only chooses among the three sources, as the fixes of
 * the block source say, and counts malloc's bytes; every call takes the
 * cache of the thread it runs for, which the mapped chunks come from and
 * go back to. Every byte the runtime holds is counted below it, so the
 * counters gates and tests read are exact.
 */
#ifndef GB_CHUNK_H
#define GB_CHUNK_H

#include "map.h"

/* Takes a chunk of at least n bytes. The block source decides MAP or HEAP
 * (fix/block_map.c), and a small one may come from a slab
 * (fix/small_slab.c); a MAP request past the mapping budget or whose mmap
 * fails becomes a HEAP chunk and is counted as a fallback. Stops the
 * process when even malloc fails. */
gb__chunk gb__chunk_get(gb__cache *cache, size_t n);

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
bool gb__chunk_try_get(gb__cache *cache, size_t n, unsigned how, gb__chunk *out);

/* The size gb__chunk_get gives a fresh chunk of n bytes (its size class,
 * for a mapped one): what a region under a limit would hold. */
size_t gb__chunk_size_for(size_t n);

/* Whether gb__chunk_try_get of n bytes would take a cached mapping of
 * exactly the size a fresh one would have: one given back to cache, still
 * resident. */
bool gb__chunk_cached(const gb__cache *cache, size_t n);

/* Gives a chunk back: a mapped block into cache while the process's bound
 * has room (fix/cache_bound.c), else to the OS (gb__map_give); a slab's
 * chunk to its slab; free for HEAP. */
void gb__chunk_put(gb__cache *cache, gb__chunk c);

/* Grows a chunk to at least n bytes, n larger than its size (a chunk that
 * holds n already is not grown: its callers ask only when it does not),
 * keeping its first `used` bytes: mremap or map-copy-unmap for MAP chunks
 * (by gb__cfg.growth), realloc for HEAP. */
gb__chunk gb__chunk_grow(gb__cache *cache, gb__chunk c, size_t used, size_t n);

/* Like gb__chunk_grow, but false, with c as it was, when the larger chunk
 * cannot be had (`fit` as for gb__chunk_try_get). */
bool gb__chunk_try_grow(gb__cache *cache, gb__chunk c, size_t used, size_t n, bool fit, gb__chunk *out);

#endif /* GB_CHUNK_H */
