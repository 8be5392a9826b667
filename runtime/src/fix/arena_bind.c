/* arena_bind.c -- the fix for container arenas bound to nothing.
 *
 * A compacted map or vec owns an arena. The container's struct lives in a
 * region and dies with it, so its arena must too: it is linked into the
 * holder region's list and given back when that region is. The poison
 * unbound-map-arena replaces this file with one that links it nowhere, as
 * the article's runtime did, and the arena outlives its map.
 */
#include "internal.h"

/* a joins the head of holder's list of arenas. */
void gb__fix_arena_bind(gb_region *holder, gb__arena *a)
{
    a->holder = holder;
    a->prev = NULL;
    a->next = holder->arenas;
    if (holder->arenas)
        holder->arenas->prev = a;
    holder->arenas = a;
}

/* a leaves its holder's list, if it is on one. */
void gb__fix_arena_unbind(gb__arena *a)
{
    if (!a->holder)
        return;
    if (a->prev)
        a->prev->next = a->next;
    else
        a->holder->arenas = a->next;
    if (a->next)
        a->next->prev = a->prev;
    a->next = a->prev = NULL;
    a->holder = NULL;
}
