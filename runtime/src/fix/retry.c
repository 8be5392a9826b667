/* retry.c -- the fix for the quadratic re-walk of retired regions.
 *
 * The article's runtime re-tried every retired region at every retirement,
 * and every try walked every suspended stack: with thousands of suspended
 * Fibers, 95% of the time went there. A suspended stack does not change
 * until its coroutine runs, so a retired region whose witness (the
 * coroutine found pinning it) has not run since needs no try, and a try
 * asks each stack's summary, built once between two of its runs, instead
 * of walking the stack. The poison quadratic-walk replaces this file with
 * the old behaviour: always try, always walk.
 */
#include "internal.h"

void gb__fix_retry(gb__thread *t)
{
    /* Regions on the pinned list have a witness that has not run since it
     * was found: their answer can only be "still pinned". */
    GB__ADD(pin_tries_skipped, t->npinned);
    while (t->retired_dirty)
        gb__pin_try(t, t->retired_dirty);
}

bool gb__fix_coro_points_into(gb_coro *c, const gb_region *r)
{
    return gb__pin_summary_hits(c, r);
}
