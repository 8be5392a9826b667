/* cache-unbounded.c -- poison: the block cache keeps every block it is given.
 *
 * Takes out fix/cache_bound.c. Every given-back block of a cached size
 * stays in its thread's cache, resident, so a left 400 MB region is still
 * resident after the leave; the runtime counts it (bytes_cached), so the
 * gate is red for the resident size, not for retained-below.
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

bool gb__fix_cache_admits(size_t cached, size_t add)
{
    (void)cached;
    (void)add;
    return true;
}
