/* give_back.c -- the fix for pages given back that still count as resident.
 *
 * Every range the runtime gives back passes through here: whole mappings
 * are unmapped, and pages it keeps mapped (a slab's freed units, a pooled
 * stack, a range whose munmap failed) are emptied with the OS's release
 * call, MADV_DONTNEED on Linux, after which they no longer count in the
 * resident size. Linux's MADV_FREE would be cheaper, but its pages stay in
 * RSS (as LazyFree) until the kernel is short of memory, so ps, a
 * container's memory limit and the user all still see them. The poison
 * lazy-free replaces this file with one that gives everything back that
 * way.
 */
#include "fix.h"

int gb__fix_unmap(void *p, size_t n)
{
    return gb__os.unmap(p, n);
}

int gb__fix_release(void *p, size_t n)
{
    return gb__os.release(p, n);
}
