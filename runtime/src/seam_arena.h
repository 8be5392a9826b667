/* seam_arena.h -- the seam of the fix the arena layer calls (arena.c).
 *
 * arena.c includes this header, not fix.h, so that it sees only its own
 * fix and nothing of coroutines or threads; fix/fix.h says how a fix and
 * its poison define the functions below.
 */
#ifndef GB_SEAM_ARENA_H
#define GB_SEAM_ARENA_H

#include "arena.h"

/* fix/arena_bind.c (poison unbound-map-arena): binds a newly opened arena
 * to the region holding its container's struct (onto holder's list of
 * arenas, given back with it), and unbinds it when it is closed. Called by
 * arena.c. */
void gb__fix_arena_bind(gb_region *holder, gb__arena *a);
void gb__fix_arena_unbind(gb__arena *a);

#endif /* GB_SEAM_ARENA_H */
