/* arena.c -- a container's own arena, bound to the region of its struct.
 *
 * The article's runtime gave a compacted map an arena of its own and tied
 * it to nothing: the map's struct went with its region, the arena with
 * nothing, and 8,000 maps left 991 MB behind on macOS. Here an arena is
 * bound when it is opened and unbound when it is closed (fix/arena_bind.c),
 * and a region closes the arenas on its list when it is given back.
 */
#include "arena.h"
#include "seam_arena.h"
#include "stats.h"

void gb__arena_index(gb__mem *m, gb__arena *a, bool in)
{
    gb__index *ix = &m->index;
    if (in)
        gb__index_add(ix, a->chunk.base, a->chunk.size, (uintptr_t)a | GB__INDEX_ARENA, NULL);
    else
        gb__index_remove(ix, a->chunk.base, a->chunk.size, (uintptr_t)a | GB__INDEX_ARENA);
}

void gb__arena_open(gb__mem *m, gb__arena *a, gb_region *holder, size_t n)
{
    a->chunk = gb__chunk_get(&m->cache, n);
    a->link = (gb__list){NULL, NULL};
    a->holder = NULL;
    gb__arena_index(m, a, true);
    GB__ADD(arenas_live, 1);
    gb__fix_arena_bind(holder, a);
}

void gb__arena_close(gb__mem *m, gb__arena *a)
{
    gb__fix_arena_unbind(a);
    gb__arena_index(m, a, false);
    gb__chunk_put(&m->cache, a->chunk);
    a->chunk = (gb__chunk){0};
    GB__SUB(arenas_live, 1);
}
