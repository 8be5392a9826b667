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

/* Every frozen stack of p's thread is asked (how: fix/retry.c); the first
 * that points into r pins it. */
gb__frozen *gb__fix_pinner(gb__pins *p, gb_region *r)
{
    GB__LIST_EACH(l, &p->frozen) {
        gb__frozen *f = GB__LIST_ENTRY(l, gb__frozen, flink);
        if (gb__fix_frozen_points_into(f, r))
            return f;
    }
    return NULL;
}
