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
 * for the benchmark alone, on a coroutine it keeps to itself. Each path
 * comes twice: the full one, every case, and the fast one, which takes
 * the common case with no call but the switch and hands the rest to the
 * full one out of line (the fast paths' comment says why).
 *
 * The switch carries a value and is the last call of both paths: a resume
 * switches into the coroutine, which returns into its caller of
 * gb_coro_yield; a yield switches straight into the caller of
 * gb_coro_resume, which returns what the yield passed (true: not finished).
 * No frame of either function is returned through after a switch, so every
 * return predicts right, as with Boost.Context's fcontext. What the resumer
 * did after its switch before (setting the running context back, thawing
 * itself) is done by the yielder before it switches; what must run on the
 * resumer's stack while it is still frozen (a retry, which may scan it; the
 * ASan fiber hook) runs there through gb__switch_hook, on the rare path.
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

/* The coroutine of thread t that h names, or NULL when it is not the
 * common case. The common case is one slot read: the slot is t's (only t
 * stores t there, and it clears the owner before the slot is freed, so
 * its occupant is t's own and alive) and its occupant's handle is h,
 * generation included. Anything else (NULL, a freed or bogus handle,
 * another thread's) is for the full decode. */
static inline gb_coro *gb__coro_find(gb__thread *t, const gb_coro *h)
{
    uintptr_t v = (uintptr_t)h;
    gb__coro_slot *sl = &gb__coro_slots[v & (GB__CORO_SLOTS - 1)];
    if (GB__LIKELY(atomic_load_explicit(&sl->owner, memory_order_relaxed) == t)) {
        gb_coro *c = atomic_load_explicit(&sl->c, memory_order_relaxed);
        if (GB__LIKELY(c && c->handle == v))
            return c;
    }
    return NULL;
}

/* gb__coro_find, or the full decode, which stops the process naming what
 * h is when it is not a coroutine of t. */
static inline gb_coro *gb__coro_of(gb__thread *t, const char *who, const gb_coro *h)
{
    gb_coro *c = gb__coro_find(t, h);
    return GB__LIKELY(c != NULL) ? c : gb__coro_of_slow(who, h);
}

/* Stops the process: c, named by h, is not suspended (coro.c). */
GB__NORETURN void gb__coro_die_resume(const gb_coro *c, const gb_coro *h);

/* gb__switch declared as returning bool, for the tail call of the resume
 * path: the value passed is 0 or 1, a valid bool in the return register,
 * and a call whose result must be converted first is no tail call. */
#define GB__CP_STR2(x) #x
#define GB__CP_STR(x) GB__CP_STR2(x)
bool gb__switch_bool(void **from_sp, void *to_sp, uintptr_t pass)
    __asm__(GB__CP_STR(__USER_LABEL_PREFIX__) "gb__switch");

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

/* Runs on the resumer's stack, still frozen, once the yielder or finisher
 * c has switched away (gb__switch_hook): what that resumer must do before
 * it runs again when there is rare work (coro.c). */
void gb__coro_resumer_lands(void *c);

/* ------------------------------------------------------------ the full paths
 *
 * Every case, the rare ones included: the handle decoded in full, a
 * freeze that hands witnessed regions over for a try, the rare work of a
 * yield. The fast paths below take the common case and hand every other
 * one to these, through a cold function (coro.c) that starts again from
 * the thread's state. */

/* The rest of a resume once c is known and its resumer me (NULL: the
 * thread's own stack) is frozen, the same on both paths: c thawed and made
 * the running coroutine, its region stack in force, the switch into it. */
__attribute__((always_inline)) static inline bool gb__coro_resume_to(gb__thread *t, gb_coro *c, gb_coro *me,
                                                                     unsigned stages)
{
    if (stages & GB__CP_FREEZE) {
        gb__pin_frozen_remove(&c->fz);
        gb__pin_thawed(&c->fz);
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
    gb__asan_start(me ? &me->asan_fake : &t->asan_fake_main, c->stack.lo,
                   (size_t)(c->stack.hi - c->stack.lo));
    gb__tsan_enter(c);
    return gb__switch_bool(me ? &me->fz.sp : &t->main_sp, c->fz.sp, 0);
}

/* Resumes c (named by h when GB__CP_HANDLE is in stages, else c is given)
 * on thread t: returns what the yield or end of c passes back (true while
 * c has not finished). */
__attribute__((always_inline)) static inline bool gb__coro_resume_full(gb__thread *t, gb_coro *h,
                                                                       gb_coro *c, unsigned stages)
{
    if (stages & GB__CP_HANDLE) {
        c = gb__coro_of(t, "gb_coro_resume", h);
        if (GB__UNLIKELY(c->status != GB_CORO_SUSPENDED))
            gb__coro_die_resume(c, h);
    }
    gb_coro *me = t->cur_coro;
    if ((stages & GB__CP_FREEZE) && me)
        gb__pin_frozen_push(&t->pins, &me->fz);
    return gb__coro_resume_to(t, c, me, stages);
}

/* Yields the running coroutine of thread t (c, given, when GB__CP_HANDLE
 * is not in stages) back to its resumer, which gets true. */
__attribute__((always_inline)) static inline void gb__coro_yield_full(gb__thread *t, gb_coro *c,
                                                                      unsigned stages)
{
    if (stages & GB__CP_HANDLE) {
        c = t->cur_coro;
        if (GB__UNLIKELY(!c))
            gb__die("gb_coro_yield: called outside any coroutine");
        c->status = GB_CORO_SUSPENDED;
    }
    gb_coro *me = c->caller;
    if (stages & GB__CP_FREEZE)
        gb__pin_frozen_push(&t->pins, &c->fz);
    if (stages & GB__CP_HANDLE)
        t->cur_coro = me;
    if (stages & GB__CP_RSTACK)
        t->cur = me ? &me->rstack : &t->main_stack;
    void **to = me ? &me->fz.sp : &t->main_sp;
    gb__asan_start(&c->asan_fake, c->caller_lo, c->caller_size);
    gb__tsan_leave(c);
    if (stages & GB__CP_FREEZE) {
        /* The one branch of the rare work: regions to try, which must be
         * tried while the resumer is still frozen, and the ASan hook. */
        if (GB__UNLIKELY(GB__CP_ASAN || !gb__list_empty(&t->pins.retired_dirty))) {
            /* The resumer lands still frozen: what a try reads of its
             * stack is the stack its switch saved. */
            GB__ASSERT(!me || gb__pin_is_frozen(&me->fz));
            gb__switch_hook(&c->fz.sp, *to, 1, gb__coro_resumer_lands, c);
            gb__asan_finish(c->asan_fake, &c->caller_lo, &c->caller_size);
            return;
        }
        if (me) {
            gb__pin_frozen_remove(&me->fz);
            gb__pin_thawed(&me->fz);
        }
    }
    gb__switch(&c->fz.sp, *to, 1);
    gb__asan_finish(c->asan_fake, &c->caller_lo, &c->caller_size);
}

/* ------------------------------------------------------------ the fast paths
 *
 * A round trip is a few tens of cycles, and a path that may call out (the
 * full decode, a thread's first state, a freeze that hands regions over)
 * keeps its values in registers the callee must preserve: each function
 * then saves and restores up to six of them around a switch that saves
 * the same six again, 3.3 ns of the 5.1 the runtime added to the bare
 * switch's 12.5 (x86-64, bench/coro_bench.c). So each path below first
 * checks that nothing rare holds, changing nothing, and hands the whole
 * operation to the cold full path when anything does; past the checks it
 * only stores and switches, calls nothing but the switch, and needs no
 * register saved. The common case is the full path's, with every rare
 * branch known not to be taken. */

/* Out of line (coro.c): the full paths, on this thread's state found or
 * made (gb__self), for whatever the fast paths do not take. Each counts
 * itself in gb__coro_cold, this thread's count of switches that left the
 * fast path, which the tests read: the common case never does. */
__attribute__((cold)) bool gb__coro_resume_cold(gb_coro *h, gb_coro *c, unsigned stages);
__attribute__((cold)) void gb__coro_yield_cold(gb_coro *c, unsigned stages);
extern _Thread_local uint64_t gb__coro_cold;

/* gb__coro_resume_full's contract, t being gb__tls (NULL before the
 * thread's first call). */
__attribute__((always_inline)) static inline bool gb__coro_resume_path(gb__thread *t, gb_coro *h,
                                                                       gb_coro *c, unsigned stages)
{
    if (GB__UNLIKELY(!t))
        return gb__coro_resume_cold(h, c, stages);
    if (stages & GB__CP_HANDLE) {
        c = gb__coro_find(t, h);
        if (GB__UNLIKELY(!c || c->status != GB_CORO_SUSPENDED))
            return gb__coro_resume_cold(h, c, stages);
    }
    gb_coro *me = t->cur_coro;
    if ((stages & GB__CP_FREEZE) && me && GB__UNLIKELY(gb__pin_freeze_hands_over(&me->fz)))
        return gb__coro_resume_cold(h, c, stages);
    /* The one running is never frozen, nor the one it resumes running. */
    GB__ASSERT(!me || !gb__pin_is_frozen(&me->fz));
    /* Nothing rare: from here on, the full path's stores alone. */
    if ((stages & GB__CP_FREEZE) && me)
        gb__pin_frozen_mark(&t->pins, &me->fz);
    return gb__coro_resume_to(t, c, me, stages);
}

/* gb__coro_yield_full's contract, t being gb__tls. Rare here: no thread
 * state or no coroutine running (the full path stops the process), a
 * yielder's freeze that hands regions over, and the rare work (regions to
 * try, the ASan hook), which runs on the full path. */
__attribute__((always_inline)) static inline void gb__coro_yield_path(gb__thread *t, gb_coro *c,
                                                                      unsigned stages)
{
    if (GB__UNLIKELY(!t)) {
        gb__coro_yield_cold(c, stages);
        return;
    }
    if (stages & GB__CP_HANDLE) {
        c = t->cur_coro;
        if (GB__UNLIKELY(!c)) {
            gb__coro_yield_cold(c, stages);
            return;
        }
    }
    if ((stages & GB__CP_FREEZE) &&
        GB__UNLIKELY(GB__CP_ASAN || !gb__list_empty(&t->pins.retired_dirty) ||
                     gb__pin_freeze_hands_over(&c->fz))) {
        gb__coro_yield_cold(c, stages);
        return;
    }
    /* Nothing rare: from here on, the full path's stores alone. */
    if (stages & GB__CP_HANDLE)
        c->status = GB_CORO_SUSPENDED;
    gb_coro *me = c->caller;
    if (stages & GB__CP_FREEZE)
        gb__pin_frozen_mark(&t->pins, &c->fz);
    if (stages & GB__CP_HANDLE)
        t->cur_coro = me;
    if (stages & GB__CP_RSTACK)
        t->cur = me ? &me->rstack : &t->main_stack;
    void **to = me ? &me->fz.sp : &t->main_sp;
    gb__asan_start(&c->asan_fake, c->caller_lo, c->caller_size);
    gb__tsan_leave(c);
    if ((stages & GB__CP_FREEZE) && me) {
        gb__pin_frozen_remove(&me->fz);
        gb__pin_thawed(&me->fz);
    }
    gb__switch(&c->fz.sp, *to, 1);
    gb__asan_finish(c->asan_fake, &c->caller_lo, &c->caller_size);
}

#endif /* GB_CORO_PATH_H */
