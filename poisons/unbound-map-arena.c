/* unbound-map-arena.c -- poison: a compacted container's arena is bound to
 * no region.
 *
 * Takes out fix/arena_bind.c: the arena a map or vec gets when compacted
 * is linked into no region's list, so when the region holding the
 * container's struct is left, the struct goes and the arena stays (the
 * article: 991 MB held on macOS after leaving a region of 8,000 maps,
 * against 42 MB).
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

void gb__fix_arena_bind(gb_region *holder, gb__arena *a)
{
    (void)holder;
    a->holder = NULL;
}

/* Bound to nothing, it has nothing to be unbound from. */
void gb__fix_arena_unbind(gb__arena *a)
{
    (void)a;
}
