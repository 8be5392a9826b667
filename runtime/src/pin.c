/* pin.c -- what happens to a region that was just left.
 *
 * A left region is given back at once unless something may still read it.
 * Until coroutines exist nothing can, and the region is freed here; this is
 * the one place that decides, so retirement hooks in without touching the
 * region code.
 */
#include "internal.h"

void gb__region_release(gb_region *r)
{
    gb__region_free(r);
}
