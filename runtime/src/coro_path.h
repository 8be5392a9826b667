/* coro_path.h -- the resume and yield paths of coroutines, inline (coro.c).
 *
 * gb_coro_resume and gb_coro_yield are built here from their stages, so
 * that bench/coro_bench.c can time the same code with stages left out
 * (the breakdown of a round trip) instead of a copy that would drift:
 *   - the switch itself (switch/switch.h), always;
 *   - GB__CP_HANDLE: the handle decoded and checked, the status checked and
 *     set, which coroutine runs and which one resumed it;
 *   - GB__CP_FREEZE: the pinning bookkeeping: the stack that stops running
 *     frozen, the one that runs thawed, and the rare work (a retry of the
 *     retired regions that need one) behind one branch;
 *   - GB__CP_RSTACK: the region stack in force swapped.
 * The runtime runs all of them (GB__CP_ALL); a path with some left out is
 * for the benchmark alone, on a coroutine it keeps to itself.
 *
 * Each path switches in the middle: a resume does the coroutine's
 * bookkeeping, switches, and when the coroutine yields or ends does its
 * own (the running context set back, the rare work, thawing itself).
 */
#ifndef GB_CORO_PATH_H
#define GB_CORO_PATH_H

#include "coro.h"
#include "pin.h"
#include "sanitizers.h"
#include "switch/switch.h"
#include "thread.h"

/* ------------------------------------------------------------ handles
 *
 * A handle is generation << GB__CORO_SLOT_BITS | slot (coro.c says why);
 * slot s of the table says which coroutine is in it and whose it is. */
#define GB__CORO_SLOT_BITS 18
#define GB__CORO_SLOTS ((uint32_t)1 << GB__CORO_SLOT_BITS)

/* A slot: c is its coroutine, or NULL while free; gen is the occupant's
 * generation, or while free the next one's (every handle issued for this
 * slot before has a lower one); owner is the occupant's thread; next_free
 * links free slots (index + 1) under coro.c's lock. */
typedef struct gb__coro_slot {
    _Atomic(gb_coro *) c;
    _Atomic(uint32_t) gen;
    uint32_t next_free;
    _Atomic(gb__thread *) owner;
} gb__coro_slot;

extern gb__coro_slot gb__coro_slots[GB__CORO_SLOTS];

/* The full decode of h for `who` (coro.c): the coroutine of this thread h
 * names, or the process stops naming what h is. */
gb_coro *gb__coro_of_slow(const char *who, const gb_coro *h);

/* The coroutine of thread t that h names. */
static inline gb_coro *gb__coro_of(gb__thread *t, const char *who, const gb_coro *h)
{
    (void)t;
    return gb__coro_of_slow(who, h);
}

/* Stops the process: c, named by h, is not suspended (coro.c). */
GB__NORETURN void gb__coro_die_resume(const gb_coro *c, const gb_coro *h);

/* ------------------------------------------------------------- stages */

enum {
    GB__CP_HANDLE = 1,
    GB__CP_FREEZE = 2,
    GB__CP_RSTACK = 4,
    GB__CP_ALL = 7,
};

#if defined(GB__ASAN)
#define GB__CP_ASAN 1
#else
#define GB__CP_ASAN 0
#endif

/* Resumes c (named by h when GB__CP_HANDLE is in stages, else c is given)
 * on thread t: true while c has not finished. */
__attribute__((always_inline)) static inline bool gb__coro_resume_path(gb__thread *t, gb_coro *h,
                                                                       gb_coro *c, unsigned stages)
{
    if (stages & GB__CP_HANDLE) {
        c = gb__coro_of(t, "gb_coro_resume", h);
        if (GB__UNLIKELY(c->status != GB_CORO_SUSPENDED))
            gb__coro_die_resume(c, h);
    }
    gb_coro *me = t->cur_coro;
    if (stages & GB__CP_FREEZE) {
        if (me)
            gb__pin_frozen_push(t, me);
        gb__pin_frozen_remove(c);
        gb__pin_thawed(c);
    }
    if (stages & GB__CP_HANDLE) {
        c->caller = me;
        c->status = GB_CORO_RUNNING;
        t->cur_coro = c;
    }
    if (stages & GB__CP_RSTACK) {
        c->rstack.resumer = t->cur;
        t->cur = &c->rstack;
    }
    c->tsan_caller = gb__tsan_current();
    gb__asan_start(me ? &me->asan_fake : &t->asan_fake_main, c->stack.lo,
                   (size_t)(c->stack.hi - c->stack.lo));
    gb__tsan_switch(c->tsan_fiber);
    gb__switch(me ? &me->sp : &t->main_sp, c->sp);
    /* Back: c yielded or finished. */
    gb__asan_finish(me ? me->asan_fake : t->asan_fake_main, NULL, NULL);
    if (stages & GB__CP_HANDLE)
        t->cur_coro = me;
    if (stages & GB__CP_RSTACK)
        t->cur = me ? &me->rstack : &t->main_stack;
    bool finished = c->status == GB_CORO_FINISHED;
    if (stages & GB__CP_FREEZE) {
        /* Its stack is dead: what it pinned may go now. */
        if (finished)
            gb__pin_witness_gone(c);
        /* Regions that need a try get it before we thaw, while our stack
         * is still frozen with its sp saved by the switch: what we
         * witnessed was dropped for a try when we froze to resume c, and
         * once we run no scan sees our live frames, so a try then would
         * free a region a frame of ours still points into. */
        if (finished || !gb__list_empty(&t->retired_dirty))
            gb__pin_retry(t);
        if (me) {
            gb__pin_frozen_remove(me);
            gb__pin_thawed(me);
        }
    }
    return !finished;
}

/* Yields the running coroutine of thread t (c, given, when GB__CP_HANDLE
 * is not in stages) back to its resumer. */
__attribute__((always_inline)) static inline void gb__coro_yield_path(gb__thread *t, gb_coro *c,
                                                                      unsigned stages)
{
    if (stages & GB__CP_HANDLE) {
        c = t->cur_coro;
        if (GB__UNLIKELY(!c))
            gb__die("gb_coro_yield: called outside any coroutine");
        c->status = GB_CORO_SUSPENDED;
    }
    if (stages & GB__CP_FREEZE)
        gb__pin_frozen_push(t, c);
    void *to = c->caller ? c->caller->sp : t->main_sp;
    gb__asan_start(&c->asan_fake, c->caller_lo, c->caller_size);
    gb__tsan_switch(c->tsan_caller);
    gb__switch(&c->sp, to);
    /* Resumed: the resume path has set the thread's state. */
    gb__asan_finish(c->asan_fake, &c->caller_lo, &c->caller_size);
}

#endif /* GB_CORO_PATH_H */
