/* retry.c -- the fix for the quadratic re-walk of retired regions.
 *
 * The article's runtime re-tried every retired region at every retirement,
 * and every try walked every suspended stack: with thousands of suspended
 * Fibers, 95% of the time went there. A suspended stack does not change
 * until its coroutine runs, so a retired region whose witness (the
 * frozen stack found pinning it) has not run since needs no try, and a try
 * asks each stack's summary, built once between two of its runs, instead
 * of walking the stack. The poison quadratic-walk replaces this file with
 * the old behaviour: always try, always walk.
 */
#include "fix.h"
#include "sanitizers.h"

#include <stdlib.h>

/* ------------------------------------------- which regions a retry tries */

void gb__fix_retry(gb__pins *p, gb__frozen *run)
{
    /* Regions on the pinned list have a witness that has not run since it
     * was found: their answer can only be "still pinned". */
    GB__ADD(pin_tries_skipped, p->npinned);
    while (!gb__list_empty(&p->retired_dirty))
        gb__pin_try(p, run, GB__LIST_ENTRY(p->retired_dirty.next, gb_region, rlink));
}

/* ----------------------------------------------- how a try asks one stack */

static int cmp_word(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* f's summary: the sorted distinct words of its frozen stack (pin.h,
 * struct gb__frozen). Reads every word of the stack (see
 * gb__pin_frozen_words), so without ASan's checks; stale once f runs
 * again (gb__pin_thawed). */
GB__NO_ASAN static void build_summary(gb__frozen *f)
{
    const uintptr_t *w;
    size_t n = gb__pin_frozen_words(f, &w);
    if (n > f->summary_cap) {
        uintptr_t *v = realloc(f->summary, n * sizeof *v);
        if (!v)
            gb__die("out of memory: no stack summary for %zu words", n);
        GB__ADD(bytes_meta, (n - f->summary_cap) * sizeof *v);
        f->summary = v;
        f->summary_cap = n;
    }
    /* Words below the first page cannot point into a block; dropping them
     * keeps summaries short (zeros, small integers, flags). */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] >= GB__LOWEST_POINTER)
            f->summary[k++] = w[i];
    qsort(f->summary, k, sizeof *f->summary, cmp_word);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || f->summary[u - 1] != f->summary[i])
            f->summary[u++] = f->summary[i];
    f->nsummary = u;
    f->summary_valid = true;
    GB__ADD(pin_words_scanned, n);
}

/* Whether the sorted summary holds a word in [lo, hi). */
static bool summary_has_range(const gb__frozen *f, uintptr_t lo, uintptr_t hi)
{
    size_t a = 0, b = f->nsummary;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (f->summary[m] < lo)
            a = m + 1;
        else
            b = m;
    }
    GB__ADD(pin_probes, 1);
    return a < f->nsummary && f->summary[a] < hi;
}

/* One binary search per block and arena of r, whatever the number of
 * regions left since f's summary was built. */
bool gb__fix_frozen_points_into(gb__frozen *f, const gb_region *r)
{
    if (!f->summary_valid)
        build_summary(f);
    /* A block's header is not memory a program holds (region.h). */
    for (const gb__block *b = r->blocks; b; b = b->next)
        if (summary_has_range(f, (uintptr_t)b + GB__BLOCK_HDR, (uintptr_t)b + b->chunk.size))
            return true;
    GB__ARENA_EACH(a, r)
        if (summary_has_range(f, (uintptr_t)a->chunk.base, (uintptr_t)a->chunk.base + a->chunk.size))
            return true;
    return false;
}
