/* small.h -- chunks under a mapping's worth, from the runtime's slabs
 * (small.c).
 *
 * chunk.c asks here for a chunk smaller than gb__cfg.map_min when the
 * small-slab fix says so (fix/small_slab.c); a slab is a mapping of the
 * layer below (map.h), taken from and given back to the cache of the
 * thread that asks.
 */
#ifndef GB_SMALL_H
#define GB_SMALL_H

#include "map.h"

/* A chunk of at least n bytes from a slab; false when no slab could be had
 * (the caller then uses malloc). */
bool gb__small_get(gb__cache *cache, size_t n, gb__chunk *out);

/* Gives a SMALL chunk back to its slab; the slab goes back to the mapping
 * layer (into cache, or unmapped) with its last chunk. */
void gb__small_put(gb__cache *cache, gb__chunk c);

#endif /* GB_SMALL_H */
