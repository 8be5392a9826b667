/* pin_check.c -- the pin check: a left region stays while a frozen stack
 * points into it.
 *
 * Freeing a region that a suspended coroutine still points into lets the
 * coroutine read freed (unmapped) memory when it resumes. This file asks
 * the frozen stacks before a left region is freed. The poison unpinned-free
 * replaces it with one that never finds a pinner, which the fuzzers and the
 * pinned-kept-then-freed gate must catch.
 */
#include "fix.h"

/* Every frozen coroutine of t is asked (how: fix/retry.c); the first that
 * points into r pins it. */
gb_coro *gb__fix_pinner(gb__thread *t, gb_region *r)
{
    GB__LIST_EACH(l, &t->frozen) {
        gb_coro *c = GB__LIST_ENTRY(l, gb_coro, flink);
        if (gb__fix_coro_points_into(c, r))
            return c;
    }
    return NULL;
}
