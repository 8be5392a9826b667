/* small-from-malloc.c -- poison: small chunks come from malloc again.
 *
 * Takes out fix/small_slab.c. A region's first blocks and small arenas
 * come from malloc, as GB_SMALL=malloc asks for explicitly; glibc keeps them
 * after the region is left whenever something allocated after them is
 * still live, so thousands of small regions leave the process holding
 * their memory while every counter of the runtime reads zero (the
 * article's open item: "blocks under 16 KB are still kept by malloc").
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

bool gb__fix_small_from_slab(size_t n)
{
    (void)n;
    return false;
}
