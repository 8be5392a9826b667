/* pin.c -- retiring left regions that suspended stacks still point into.
 *
 * A region left while a frozen coroutine's stack holds a word pointing into
 * it is retired, not freed: the coroutine may read that memory when it
 * resumes. Two facts keep this cheap, and both are exact, not heuristics:
 *   - a frozen stack does not change until its coroutine runs, so each is
 *     scanned at most once between two runs, into a sorted summary of its
 *     words; asking whether it points into a region is then one binary
 *     search per block, whatever the number of regions left meanwhile;
 *   - a retired region remembers the coroutine that pinned it (its witness).
 *     While that coroutine has not run, the answer can only be "still
 *     pinned", so the region is not tried again (fix/retry.c). Once the
 *     witness has run and is frozen again, finishes or is freed, its
 *     regions need a try; while it runs, they stay (a live frame may hold
 *     the pointer).
 * No region is freed while a frozen stack points into it, and none is kept
 * after the witness has gone and a try has run.
 *
 * This file is the mechanism: the retired lists, witnesses, the words of a
 * frozen stack, a try, and the running coroutine's live stack. The fixes
 * it serves are whole in their files (fix/fix.h): the pin check, the
 * search over frozen stacks (fix/pin_check.c), and the retry fix, which
 * regions a retry tries and how a try asks one coroutine, by its summary
 * (fix/retry.c).
 */
#include "arena.h"
#include "seam_pin.h"
#include "handle.h"
#include "pin.h"
#include "sanitizers.h"
#include "stats.h"

/* ------------------------------------------------------------- witnesses */

/* A retired region is on exactly one of its thread's two lists: pinned
 * (it has a witness, and is on the witness's witnessed list) or dirty (it
 * needs a try). */

static void witness_set(gb__thread *t, gb_region *r, gb_coro *c)
{
    r->witness = c;
    gb__list_push(&c->witnessed, &r->wlink);
    gb__list_push(&t->retired_pinned, &r->rlink);
    t->npinned++;
}

static void witness_drop(gb__thread *t, gb_region *r)
{
    GB__ASSERT(t->npinned > 0 && r->witness && gb__list_linked(&r->wlink));
    gb__list_remove(&r->wlink);
    gb__list_remove(&r->rlink);
    t->npinned--;
    r->witness = NULL;
    gb__list_push(&t->retired_dirty, &r->rlink);
}

void gb__pin_witness_gone_slow(gb_coro *c)
{
    while (!gb__list_empty(&c->witnessed))
        witness_drop(c->thread, GB__LIST_ENTRY(c->witnessed.next, gb_region, wlink));
}

void gb__pin_frozen_sync(gb__thread *t)
{
    GB__LIST_EACH(l, &t->frozen)
        if (!GB__LIST_ENTRY(l, gb_coro, flink)->frozen)
            gb__list_remove(l);
}

/* ------------------------------------------------------------ stack scan */

/* The words of c's frozen stack. Read without ASan's checks: live frames
 * below a suspended coroutine's sp hold redzones, and the scan reads every
 * word on purpose. */
GB__NO_ASAN size_t gb__pin_frozen_words(const gb_coro *c, const uintptr_t **words)
{
    *words = (const uintptr_t *)c->sp;
    size_t n = (size_t)((const uintptr_t *)c->stack.hi - (const uintptr_t *)c->sp);
    gb__vg_make_defined(c->sp, n * sizeof(uintptr_t));
    return n;
}

/* Whether the running coroutine c's live stack, from the caller's frame
 * to the top, holds a word pointing into r. Called from running_points_into
 * below, whose frame holds every callee-saved register: a pointer that a
 * frame of c keeps only in a register is seen too. */
GB__NO_ASAN __attribute__((noinline)) static bool live_words_hit(gb_coro *c, const gb_region *r)
{
    volatile uintptr_t here = 0;
    const uintptr_t *w = (const uintptr_t *)&here;
    /* The words above `here` belong to no object the compiler knows of:
     * hide where w came from, or it may read only `here` itself. */
    __asm__ volatile("" : "+r"(w));
    size_t n = (size_t)((const uintptr_t *)c->stack.hi - w);
    gb__vg_make_defined(w, n * sizeof *w);
    GB__ADD(pin_words_scanned, n);
    for (size_t i = 0; i < n; i++)
        if (w[i] >= GB__LOWEST_POINTER && gb__region_contains(r, (const void *)w[i]))
            return true;
    return false;
}

GB__NO_ASAN __attribute__((noinline)) static bool running_points_into(gb_coro *c, const gb_region *r)
{
    __builtin_unwind_init();
    return live_words_hit(c, r);
}

/* ------------------------------------------------------------ retirement */

/* Gives r's memory back and frees its descriptor. */
static void free_region(gb_region *r)
{
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

void gb__pin_retire(gb__thread *t, gb_region *r, gb_coro *witness)
{
    GB__ASSERT(!r->stack && !r->parent && !gb__list_linked(&r->rlink) && witness->thread == t);
    r->state = GB__RETIRED;
    witness_set(t, r, witness);
    GB__ADD(regions_retired, 1);
    GB__ADD(bytes_retired, region_total(r));
    GB__ADD(retirements, 1);
}

void gb__pin_try(gb__thread *t, gb_region *r)
{
    GB__ADD(pin_tries, 1);
    /* A witness that is running may hold the pointer in a live frame that
     * no scan of frozen stacks sees: the region stays while it runs. */
    if (r->witness && !gb__pin_is_frozen(r->witness))
        return;
    if (r->witness)
        witness_drop(t, r);
    gb__pin_frozen_sync(t);
    gb_coro *p = gb__fix_pinner(t, r);
    /* A retired region was pinned by frozen stacks when it was left; the
     * one of them running now (resumed since) may hold the pointer in a
     * live frame, whether or not it was the one recorded as the witness.
     * Its live stack is read as it is now; found, it is the witness, and
     * the region stays while it runs. (A region left by the running
     * coroutine itself is not asked about its live stack: a pointer it
     * still holds into a region it left is its own bug, as on a thread.) */
    if (!p && t->cur_coro && running_points_into(t->cur_coro, r))
        p = t->cur_coro;
    gb__list_remove(&r->rlink);
    if (p) {
        witness_set(t, r, p);
        return;
    }
    GB__SUB(regions_retired, 1);
    GB__SUB(bytes_retired, region_total(r));
    free_region(r);
}

void gb__pin_free_all(gb__thread *t)
{
    while (!gb__list_empty(&t->retired_pinned))
        witness_drop(t, GB__LIST_ENTRY(t->retired_pinned.next, gb_region, rlink));
    while (!gb__list_empty(&t->retired_dirty)) {
        gb_region *r = GB__LIST_ENTRY(t->retired_dirty.next, gb_region, rlink);
        gb__list_remove(&r->rlink);
        GB__SUB(regions_retired, 1);
        GB__SUB(bytes_retired, region_total(r));
        free_region(r);
    }
}

void gb__pin_retry(gb__thread *t)
{
    if (!gb__list_empty(&t->retired_pinned) || !gb__list_empty(&t->retired_dirty))
        gb__fix_retry(t);
}

gb_coro *gb__pin_pinner(gb__thread *t, gb_region *r)
{
    if (gb__list_empty(&t->frozen))
        return NULL;
    gb__pin_frozen_sync(t);
    return gb__fix_pinner(t, r);
}

void gb__pin_release(gb__thread *t, gb_region *r)
{
    gb_coro *p = gb__pin_pinner(t, r);
    if (p)
        gb__pin_retire(t, r, p);
    else
        free_region(r);
    gb__pin_retry(t);
}

void gb__pin_leave(gb__thread *t, gb__rstack *s)
{
    gb__pin_release(t, gb__region_pop(s));
}
