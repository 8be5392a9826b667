/* small.h -- chunks under a mapping's worth, from the runtime's slabs
 * (small.c).
 *
 * chunk.c asks here for a chunk smaller than gb__cfg.map_min when the
 * small-slab fix says so (fix/small_slab.c); a slab is itself a chunk of
 * the chunk layer, taken from it and put back to it.
 */
#ifndef GB_SMALL_H
#define GB_SMALL_H

#include "chunk.h"

/* A chunk of at least n bytes from a slab; false when no slab could be had
 * (the caller then uses malloc). */
bool gb__small_get(size_t n, gb__chunk *out);

/* Gives a SMALL chunk back to its slab; the slab goes back to the chunk
 * layer with its last chunk. */
void gb__small_put(gb__chunk c);

#endif /* GB_SMALL_H */
