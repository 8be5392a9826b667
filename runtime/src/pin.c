/* pin.c -- retiring left regions that suspended stacks still point into.
 *
 * A region left while a frozen stack holds a word pointing into it is
 * retired, not freed: the coroutine whose stack it is may read that memory
 * when it resumes. Two facts keep this cheap, and both are exact, not
 * heuristics:
 *   - a frozen stack does not change until its coroutine runs, so each is
 *     scanned at most once between two runs, into a sorted summary of its
 *     words; asking whether it points into a region is then one binary
 *     search per block, whatever the number of regions left meanwhile;
 *   - a retired region remembers the stack that pinned it (its witness).
 *     While that stack has not run, the answer can only be "still pinned",
 *     so the region is not tried again (fix/retry.c). Once the witness has
 *     run and is frozen again, finishes or is freed, its regions need a
 *     try; while it runs, they stay (a live frame may hold the pointer).
 * No region is freed while a frozen stack points into it, and none is kept
 * after the witness has gone and a try has run.
 *
 * This file is the mechanism: the retired lists, witnesses, the words of a
 * frozen stack, a try, and the running stack's live words. It works on
 * frozen-stack records and on a thread's pinning slice (pin.h), never on
 * a coroutine or a thread, which sit above it. The fixes it serves are
 * whole in their files (fix/fix.h): the pin check, the search over frozen
 * stacks (fix/pin_check.c), and the retry fix, which regions a retry tries
 * and how a try asks one stack, by its summary (fix/retry.c).
 */
#include "arena.h"
#include "seam_pin.h"
#include "seam_handoff.h"
#include "handle.h"
#include "pin.h"
#include "sanitizers.h"
#include "stats.h"

#if GB_CHECK
#include <stdlib.h>
#endif

/* ------------------------------------------------------------- witnesses */

/* A retired region is on exactly one of its thread's two lists: pinned
 * (it has a witness, and is on the witness's witnessed list) or dirty (it
 * needs a try). */

static void witness_set(gb__pins *p, gb_region *r, gb__frozen *f)
{
    GB__ASSERT(r->state == GB__RETIRED && !r->witness && !gb__list_linked(&r->wlink) &&
               !gb__list_linked(&r->rlink));
    r->witness = f;
    gb__list_push(&f->witnessed, &r->wlink);
    gb__list_push(&p->retired_pinned, &r->rlink);
    p->npinned++;
}

static void witness_drop(gb__pins *p, gb_region *r)
{
    GB__ASSERT(p->npinned > 0 && r->witness && gb__list_linked(&r->wlink));
    gb__list_remove(&r->wlink);
    gb__list_remove(&r->rlink);
    p->npinned--;
    r->witness = NULL;
    gb__list_push(&p->retired_dirty, &r->rlink);
}

void gb__pin_witness_gone_slow(gb__pins *p, gb__frozen *f)
{
    while (!gb__list_empty(&f->witnessed)) {
        gb_region *r = GB__LIST_ENTRY(f->witnessed.next, gb_region, wlink);
        /* A region on f's list names f: dropping it makes it dirty. */
        GB__ASSERT(r->witness == f);
        witness_drop(p, r);
    }
}

void gb__pin_frozen_sync(gb__pins *p)
{
    GB__LIST_EACH(l, &p->frozen)
        if (!GB__LIST_ENTRY(l, gb__frozen, flink)->frozen)
            gb__list_remove(l);
}

/* ------------------------------------------------------------ stack scan */

/* The words of f's frozen stack. Read without ASan's checks: live frames
 * below a suspended coroutine's sp hold redzones, and the scan reads every
 * word on purpose. */
GB__NO_ASAN size_t gb__pin_frozen_words(const gb__frozen *f, const uintptr_t **words)
{
    /* Only a frozen stack's words stay as read, and its saved sp is a word
     * of its stack, at or below its top. */
    GB__ASSERT(f->frozen && (const char *)f->sp <= f->hi && (uintptr_t)f->sp % sizeof(uintptr_t) == 0);
    *words = (const uintptr_t *)f->sp;
    size_t n = (size_t)((const uintptr_t *)f->hi - (const uintptr_t *)f->sp);
    gb__vg_make_defined(f->sp, n * sizeof(uintptr_t));
    return n;
}

/* Whether the running stack run's live words, from the caller's frame to
 * the top, hold one pointing into r. Called from running_points_into
 * below, whose frame holds every callee-saved register: a pointer that a
 * frame of run keeps only in a register is seen too. */
GB__NO_ASAN __attribute__((noinline)) static bool live_words_hit(const gb__frozen *run, const gb_region *r)
{
    volatile uintptr_t here = 0;
    const uintptr_t *w = (const uintptr_t *)&here;
    /* The words above `here` belong to no object the compiler knows of:
     * hide where w came from, or it may read only `here` itself. */
    __asm__ volatile("" : "+r"(w));
    /* This frame is on run's stack: the walk ends at its top. */
    GB__ASSERT((const char *)w < run->hi);
    size_t n = (size_t)((const uintptr_t *)run->hi - w);
    gb__vg_make_defined(w, n * sizeof *w);
    GB__ADD(pin_words_scanned, n);
    for (size_t i = 0; i < n; i++)
        if (w[i] >= GB__LOWEST_POINTER && gb__region_contains(r, (const void *)w[i]))
            return true;
    return false;
}

GB__NO_ASAN __attribute__((noinline)) static bool running_points_into(const gb__frozen *run, const gb_region *r)
{
    __builtin_unwind_init();
    return live_words_hit(run, r);
}

/* ------------------------------------------------------------ retirement */

/* Gives r's memory back and frees its descriptor; a region handed over
 * from another thread through its seam (fix/handoff_free.c). */
static void free_region(gb_region *r)
{
    if (GB__UNLIKELY(r->lent)) {
        gb__fix_free_lent(r);
        return;
    }
    gb__region_free(r);
    gb__handle_free(r);
}

static size_t region_total(const gb_region *r)
{
    size_t n = r->bytes;
    GB__ARENA_EACH(a, r)
        n += a->chunk.size;
    return n;
}

void gb__pin_retire_with(gb__pins *p, gb_region *r, gb__frozen *witness)
{
    /* The witness was found on the frozen list just now (gb__pin_find):
     * its stack cannot have changed since. */
    GB__ASSERT(!r->stack && !r->parent && !gb__list_linked(&r->rlink) && gb__pin_is_frozen(witness));
    r->state = GB__RETIRED;
    witness_set(p, r, witness);
    GB__ADD(regions_retired, 1);
    GB__ADD(bytes_retired, region_total(r));
    GB__ADD(retirements, 1);
}

void gb__pin_try(gb__pins *p, gb__frozen *run, gb_region *r)
{
    GB__ASSERT(r->state == GB__RETIRED && gb__list_linked(&r->rlink));
    GB__ADD(pin_tries, 1);
    /* A witness that is running may hold the pointer in a live frame that
     * no scan of frozen stacks sees: the region stays while it runs. */
    if (r->witness && !gb__pin_is_frozen(r->witness))
        return;
    if (r->witness)
        witness_drop(p, r);
    gb__pin_frozen_sync(p);
    gb__frozen *f = gb__fix_pinner(p, r);
    /* What the pin check walks is the synced list: frozen stacks only. */
    GB__ASSERT(!f || gb__pin_is_frozen(f));
    /* A retired region was pinned by frozen stacks when it was left; the
     * one of them running now (resumed since) may hold the pointer in a
     * live frame, whether or not it was the one recorded as the witness.
     * Its live stack is read as it is now; found, it is the witness, and
     * the region stays while it runs. (A region left by the running
     * coroutine itself is not asked about its live stack: a pointer it
     * still holds into a region it left is its own bug, as on a thread.) */
    if (!f && run && running_points_into(run, r))
        f = run;
    gb__list_remove(&r->rlink);
    if (f) {
        witness_set(p, r, f);
        return;
    }
    GB__SUB(regions_retired, 1);
    GB__SUB(bytes_retired, region_total(r));
    free_region(r);
}

void gb__pin_free_all(gb__pins *p)
{
    while (!gb__list_empty(&p->retired_pinned))
        witness_drop(p, GB__LIST_ENTRY(p->retired_pinned.next, gb_region, rlink));
    GB__ASSERT(p->npinned == 0);
    while (!gb__list_empty(&p->retired_dirty)) {
        gb_region *r = GB__LIST_ENTRY(p->retired_dirty.next, gb_region, rlink);
        gb__list_remove(&r->rlink);
        GB__SUB(regions_retired, 1);
        GB__SUB(bytes_retired, region_total(r));
        free_region(r);
    }
}

void gb__pin_retry(gb__pins *p, gb__frozen *run)
{
    if (!gb__list_empty(&p->retired_pinned) || !gb__list_empty(&p->retired_dirty))
        gb__fix_retry(p, run);
}

gb__frozen *gb__pin_find(gb__pins *p, gb_region *r)
{
    if (gb__list_empty(&p->frozen))
        return NULL;
    gb__pin_frozen_sync(p);
    return gb__fix_pinner(p, r);
}

void gb__pin_release(gb__pins *p, gb__frozen *run, gb_region *r)
{
    /* Popped: on no stack, so only this call decides its fate; and left
     * by code that runs, on a stack that is not frozen. */
    GB__ASSERT(r->state == GB__LIVE && !r->stack && !r->parent && (!run || !gb__pin_is_frozen(run)));
    gb__frozen *f = gb__pin_find(p, r);
    if (f)
        gb__pin_retire_with(p, r, f);
    else
        free_region(r);
    gb__pin_retry(p, run);
}

void gb__pin_pop(gb__pins *p, gb__frozen *run, gb__rstack *s)
{
    gb__pin_release(p, run, gb__region_pop(s));
}

/* ------------------------------------------------------- checking summaries */

#if GB_CHECK
/* The checkers' condition (base.h). */
#define EXPECT GB__EXPECT

/* The index of x in the sorted v[0, n), or n when it is not there. */
static size_t sorted_find(const uintptr_t *v, size_t n, uintptr_t x)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (v[m] < x)
            a = m + 1;
        else
            b = m;
    }
    return a < n && v[a] == x ? a : n;
}

/* Reads every word of a frozen stack, as the scan does: without ASan's
 * checks (gb__pin_frozen_words). */
GB__NO_ASAN void gb__pin_summary_check(const gb__frozen *f)
{
    if (!f->summary_valid) {
        EXPECT(f->nsummary == 0, "stack %p: its stale summary holds %zu words (a summary is emptied when its stack thaws)",
               (const void *)f, f->nsummary);
        return;
    }
    EXPECT(f->frozen, "stack %p has a valid summary but is not frozen (a summary is stale once its stack runs)",
           (const void *)f);
    EXPECT(f->nsummary <= f->summary_cap, "stack %p: its summary holds %zu words, past the %zu allocated",
           (const void *)f, f->nsummary, f->summary_cap);
    const uintptr_t *v = f->summary;
    for (size_t i = 0; i < f->nsummary; i++) {
        EXPECT(v[i] >= GB__LOWEST_POINTER, "stack %p: summary word %zu is %#jx, below the lowest pointer %#jx",
               (const void *)f, i, (uintmax_t)v[i], (uintmax_t)GB__LOWEST_POINTER);
        EXPECT(i == 0 || v[i - 1] < v[i],
               "stack %p: summary word %zu (%#jx) is not above the one before it (%#jx): sorted and distinct",
               (const void *)f, i, (uintmax_t)v[i], (uintmax_t)(i ? v[i - 1] : 0));
    }
    /* Every word of the stack that may be a pointer is in the summary (it
     * covers the stack), and every word of the summary is one of them (a
     * word that is not would keep a region nothing points into). */
    bool *seen = calloc(f->nsummary + 1, sizeof *seen);
    if (!seen)
        gb__die("out of memory: the summary check of a stack of %zu words", f->nsummary);
    const uintptr_t *w;
    size_t n = gb__pin_frozen_words(f, &w);
    for (size_t i = 0; i < n; i++) {
        if (w[i] < GB__LOWEST_POINTER)
            continue;
        size_t k = sorted_find(v, f->nsummary, w[i]);
        EXPECT(k < f->nsummary, "stack %p: its word %#jx at %p is not in its summary (the summary covers the stack)",
               (const void *)f, (uintmax_t)w[i], (const void *)&w[i]);
        seen[k] = true;
    }
    size_t k = 0;
    while (k < f->nsummary && seen[k])
        k++;
    free(seen);
    EXPECT(k == f->nsummary, "stack %p: summary word %zu (%#jx) is no word of its stack (the summary holds its words only)",
           (const void *)f, k, (uintmax_t)(k < f->nsummary ? v[k] : 0));
}
#endif
