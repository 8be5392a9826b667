/* dynamic-threshold.c -- poison: glibc's mmap threshold is left dynamic.
 *
 * Takes out fix/threshold.c: a program build no longer fixes the threshold
 * at init. glibc then raises it to the size of each freed mapped chunk, and
 * from the second round on a region's blocks come from the heap, where a
 * small allocation kept from the region's peak stops every trim (the
 * article: 405 MB held on Linux against 5 MB).
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

bool gb__fix_malloc_threshold(void)
{
    return false;
}
