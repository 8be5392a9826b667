/* quadratic-walk.c -- poison: every leave re-tries every retired region,
 * walking every suspended stack.
 *
 * Takes out fix/retry.c: a retired region is tried again whether or not
 * the coroutine that pinned it has run since, and each try walks the
 * frozen stacks word by word instead of asking their summaries. With
 * thousands of suspended coroutines this is where the article's runtime
 * spent 95% of its time.
 * Caught by: see poisons/faults.tsv.
 */
#include "fix/fix.h"
#include "sanitizers.h"

/* ---------------------------------------- every retry tries every region */

void gb__fix_retry(gb__pins *p, gb__frozen *run)
{
    /* A try moves a region to the head of the pinned list or frees it, so
     * walking on from the saved successor visits each region once. */
    GB__LIST_EACH(l, &p->retired_pinned)
        gb__pin_try(p, run, GB__LIST_ENTRY(l, gb_region, rlink));
    GB__LIST_EACH(l, &p->retired_dirty)
        gb__pin_try(p, run, GB__LIST_ENTRY(l, gb_region, rlink));
}

/* ----------------------------- every try walks the stack word by word */

/* Reads every word of the frozen stack (see gb__pin_frozen_words), so
 * without ASan's checks; nothing is kept for the next try. */
GB__NO_ASAN bool gb__fix_frozen_points_into(gb__frozen *f, const gb_region *r)
{
    const uintptr_t *w;
    size_t n = gb__pin_frozen_words(f, &w);
    GB__ADD(pin_words_scanned, n);
    for (size_t i = 0; i < n; i++)
        if (w[i] >= 4096 && gb__region_contains(r, (const void *)w[i]))
            return true;
    return false;
}
