/* small_slab.c -- the fix for small blocks kept by malloc.
 *
 * A region's first blocks (4 and 8 KiB) and small container arenas are too
 * small for a mapping of their own. From malloc they stay in malloc after
 * the region is left whenever anything allocated after them is still live
 * (glibc's heap only shrinks from its top; the article's open item: "a
 * program with many small regions can still grow"). With the map source
 * they come from the runtime's own slabs (small.c), which are emptied and
 * unmapped as their chunks go. GB_SMALL=malloc is the explicit opt-out. The
 * poison small-from-malloc replaces this file with one that sends every
 * small chunk to malloc again.
 */
#include "fix.h"

bool gb__fix_small_from_slab(size_t n)
{
    return gb__cfg.small_slabs && n < gb__cfg.map_min;
}
