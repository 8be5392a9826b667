/* quadratic-walk.c -- poison: every leave re-tries every retired region,
 * walking every suspended stack.
 *
 * Takes out fix/retry.c: a retired region is tried again whether or not
 * the coroutine that pinned it has run since, and each try walks the
 * frozen stacks word by word instead of asking their summaries. With
 * thousands of suspended coroutines this is where the article's runtime
 * spent 95% of its time.
 * Must be caught by: pin-walk (the pin-check work for 2N retirements is
 * about four times that for N, not twice).
 */
#include "internal.h"

void gb__fix_retry(gb__thread *t)
{
    /* A try moves a region to the head of the pinned list or frees it, so
     * walking on from the saved successor visits each region once. */
    for (gb_region *r = t->retired_pinned, *next; r; r = next) {
        next = r->rnext;
        gb__pin_try(t, r);
    }
    for (gb_region *r = t->retired_dirty, *next; r; r = next) {
        next = r->rnext;
        gb__pin_try(t, r);
    }
}

bool gb__fix_coro_points_into(gb_coro *c, const gb_region *r)
{
    return gb__pin_walk_hits(c, r);
}
