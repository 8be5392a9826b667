/* threshold.c -- the fix for glibc's dynamic mmap threshold.
 *
 * glibc maps allocations of 128 KiB and more, but when a mapped chunk is
 * freed it raises its threshold to that chunk's size (up to 32 MiB). From
 * the second round on, a region's blocks then come from the heap, where
 * freed memory stays. A program build fixes the threshold at 64 KiB once at
 * init, which also turns the adjustment off, unless the user already chose
 * a threshold; a library build never gets here. The poison
 * dynamic-threshold replaces this file with one that does nothing.
 */
#include "fix.h"

bool gb__fix_malloc_threshold(void)
{
    if (gb__os_malloc_threshold_chosen())
        return false;
    return gb__os_malloc_set_threshold(GB__FIXED_THRESHOLD);
}
