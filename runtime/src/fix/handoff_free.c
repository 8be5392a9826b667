/* handoff_free.c -- fix: a region handed over to another thread is freed
 * by the thread that leaves it, there and then.
 *
 * The thread that leaves a region it attached gives its blocks back
 * through its own cache (gb__region_free, its home being that thread)
 * and lends its descriptor's slot back to the page it lives on
 * (gb__handle_free): the memory leaves the process at the leave, whatever
 * the thread that entered the region does meanwhile. The poison
 * owner-frees hands the whole region back to the thread that entered it
 * instead, the way a cross-thread free list does, and an idle producer
 * then keeps everything its consumers left.
 */
#include "fix.h"

void gb__fix_free_lent(gb_region *r)
{
    gb__region_free(r);
    gb__handle_free(r);
}

void gb__fix_collect(gb__mem *m)
{
    gb__handle_collect(m);
}
