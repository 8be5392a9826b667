/* cache_bound.c -- the fix for a block cache that keeps what it was given.
 *
 * The block cache keeps given-back blocks resident so that the next region
 * takes them without a page fault; that is only a speed-up while it stays
 * small. The caches of all threads together admit a block only while they
 * hold at most gb__cfg.cache_bytes with it, so at most that much outlives
 * a leave in the whole process. The poison cache-unbounded replaces this
 * file with one that admits every block, and a left 400 MB region stays
 * resident, counted as cached.
 */
#include "fix.h"

bool gb__fix_cache_admits(size_t cached, size_t add)
{
    return cached + add <= gb__cfg.cache_bytes;
}
