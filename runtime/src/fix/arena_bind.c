/* arena_bind.c -- the fix for container arenas bound to nothing.
 *
 * A compacted map or vec owns an arena. The container's struct lives in a
 * region and dies with it, so its arena must too: it is linked into the
 * holder region's list and given back when that region is. The poison
 * unbound-map-arena replaces this file with one that links it nowhere, as
 * the article's runtime did, and the arena outlives its map.
 */
#include "internal.h"

void gb__fix_arena_bind(gb_region *holder, gb__arena *a)
{
    gb__arena_link(holder, a);
}
