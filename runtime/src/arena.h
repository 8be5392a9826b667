/* arena.h -- a container's own arena, bound to the region of its struct
 * (arena.c).
 *
 * The article's runtime gave a compacted map an arena of its own and bound
 * it to nothing; here opening an arena binds it to the region holding the
 * container's struct (fix/arena_bind.c), and that region closes it when it
 * is given back.
 */
#ifndef GB_ARENA_H
#define GB_ARENA_H

#include "region.h"

/* A container's arena: a chunk holding the container's compacted storage.
 * The descriptor is embedded in the container's struct, which never moves;
 * chunk.base is NULL until the first compaction. An open arena is bound to
 * the region holding the container's struct (holder non-NULL, on that
 * region's arenas through link) and is given back with it; a container
 * gives back a chunk it replaces itself.
 *   - while open, it counts once in gb__stat.arenas_live. */
typedef struct gb__arena {
    gb__chunk chunk;
    gb__list link;
    gb_region *holder;
} gb__arena;

/* Opens a (closed) arena with a chunk of at least n bytes for a container
 * held by region holder. */
void gb__arena_open(gb__mem *m, gb__arena *a, gb_region *holder, size_t n);

/* Enters the arena's chunk (as it is now) in this thread's address index,
 * or takes it out (index.h): at open and close, and around a new chunk. */
void gb__arena_index(gb__mem *m, gb__arena *a, bool in);

/* Gives the arena's chunk back and unbinds it. */
void gb__arena_close(gb__mem *m, gb__arena *a);

/* Every arena bound to r, as a gb__arena *a in the body. */
#define GB__ARENA_EACH(a, r)                                                                         \
    for (gb__arena *a = GB__LIST_ENTRY((r)->arenas.next, gb__arena, link);                          \
         &a->link != &(r)->arenas; a = GB__LIST_ENTRY(a->link.next, gb__arena, link))

#endif /* GB_ARENA_H */
