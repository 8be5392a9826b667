/* lazy-free.c -- poison: pages are given back with MADV_FREE.
 *
 * Takes out fix/give_back.c. Every range the runtime gives back is marked
 * with MADV_FREE and left mapped: the kernel may take the pages when it is
 * short of memory, and until then they still count in the resident size
 * (Linux shows them as LazyFree in smaps_rollup). The runtime's counters
 * say everything went back; ps says nothing did. An unmap "succeeds"
 * without unmapping, so the address range itself is never reused.
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"

#include <sys/mman.h>

int gb__fix_unmap(void *p, size_t n)
{
    (void)madvise(p, n, MADV_FREE);
    return 0;
}

int gb__fix_release(void *p, size_t n)
{
    return madvise(p, n, MADV_FREE);
}
