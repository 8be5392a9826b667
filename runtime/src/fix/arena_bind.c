/* arena_bind.c -- the fix for container arenas bound to nothing.
 *
 * A compacted map or vec owns an arena. The container's struct lives in a
 * region and dies with it, so its arena must too: it is linked into the
 * holder region's list and given back when that region is. The poison
 * unbound-map-arena replaces this file with one that links it nowhere, as
 * the article's runtime did, and the arena outlives its map.
 */
#include "fix.h"

/* a joins the head of holder's list of arenas. */
void gb__fix_arena_bind(gb_region *holder, gb__arena *a)
{
    a->holder = holder;
    gb__list_push(&holder->arenas, &a->link);
}

/* a leaves its holder's list, if it is on one. */
void gb__fix_arena_unbind(gb__arena *a)
{
    if (!a->holder)
        return;
    gb__list_remove(&a->link);
    a->holder = NULL;
}
