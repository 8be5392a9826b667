/* coro.c -- coroutines: making, resuming, yielding, freeing.
 *
 * A coroutine is a stack and a saved stack pointer; switch/ does the
 * register work in a few instructions of assembly. This file keeps the
 * bookkeeping that pinning depends on exact: which coroutines are frozen
 * (their stacks cannot change until they run), which one runs, and which
 * region stack is in force. Misuse (resuming a finished or running
 * coroutine, yielding outside one, freeing the running one, crossing
 * threads) stops the process with a message that names it.
 */
#include "coro.h"
#include "init.h"
#include "os/os.h"
#include "overflow.h"
#include "pin.h"
#include "sanitizers.h"
#include "stack.h"
#include "stats.h"
#include "switch/switch.h"
#include "thread.h"

#include <stdlib.h>

#define MIN_STACK (16 * GB__KIB)

static void check_thread(const gb_coro *c, const char *who)
{
    if (c->thread != gb__self())
        gb__die("%s: coroutine %p belongs to another thread", who, (const void *)c);
}

/* Switches from the running context to `to`, whose saved sp is to_sp and
 * whose TSan fiber is to_fiber. */
static void switch_to(void **from_sp, void **from_fake, void *to_sp, const void *to_lo,
                      size_t to_size, void *to_fiber)
{
    gb__asan_start(from_fake, to_lo, to_size);
    gb__tsan_switch(to_fiber);
    gb__switch(from_sp, to_sp);
}

/* Pops and leaves every region still on c's stack, innermost first. */
static void leave_all(gb_coro *c)
{
    while (c->rstack.top)
        gb__region_pop(&c->rstack);
}

static void coro_main(void *arg)
{
    gb_coro *c = arg;
    gb__asan_finish(NULL, &c->caller_lo, &c->caller_size);
    c->fn(c->arg);
    /* Regions the function entered and did not leave are left now. */
    leave_all(c);
    c->status = GB_CORO_FINISHED;
    gb__thread *t = c->thread;
    void *to = c->caller ? c->caller->sp : t->main_sp;
    /* The last switch out: a NULL fake-stack slot tells ASan this stack's
     * fake frames die here. */
    gb__asan_start(NULL, c->caller_lo, c->caller_size);
    gb__tsan_switch(c->tsan_caller);
    gb__switch(&c->sp, to);
    gb__die("internal error: a finished coroutine was resumed");
}

gb_coro *gb_coro_new(gb_coro_fn fn, void *arg, size_t stack_size)
{
    gb__ensure_init();
    if (!fn)
        gb__die("gb_coro_new: NULL function");
    size_t size = stack_size ? stack_size : GB_CORO_STACK_DEFAULT;
    if (size < MIN_STACK)
        size = MIN_STACK;
    size = gb__round_up_checked(size, gb__os.page_size, "gb_coro_new");
    gb__thread *t = gb__self();
    gb__overflow_install(t);
    gb_coro *c = calloc(1, sizeof *c);
    if (!c)
        gb__die("out of memory: no coroutine descriptor");
    GB__ADD(bytes_meta, sizeof *c);
    GB__ADD(coros_live, 1);
    c->fn = fn;
    c->arg = arg;
    c->thread = t;
    c->status = GB_CORO_SUSPENDED;
    gb__list_init(&c->witnessed);
    gb__stack_get(c, size);
    c->vg_id = gb__vg_register(c->stack_lo, c->stack_hi);
    c->tsan_fiber = gb__tsan_create();
    c->sp = gb__switch_init(c->stack_hi, coro_main, c);
    gb__pin_frozen_push(t, c);
    return c;
}

bool gb_coro_resume(gb_coro *c)
{
    if (!c)
        gb__die("gb_coro_resume: NULL coroutine");
    check_thread(c, "gb_coro_resume");
    if (c->status == GB_CORO_FINISHED)
        gb__die("gb_coro_resume: coroutine %p has finished; it cannot be resumed", (void *)c);
    if (c->status == GB_CORO_RUNNING)
        gb__die("gb_coro_resume: coroutine %p is running (a coroutine cannot resume itself "
                "or one that is waiting on it)",
                (void *)c);
    gb__thread *t = c->thread;
    gb_coro *me = t->cur_coro;
    if (me)
        gb__pin_frozen_push(t, me);
    gb__pin_frozen_remove(c);
    gb__pin_thawed(c);
    c->caller = me;
    c->status = GB_CORO_RUNNING;
    t->cur_coro = c;
    t->cur = &c->rstack;
    c->tsan_caller = gb__tsan_current();
    switch_to(me ? &me->sp : &t->main_sp, me ? &me->asan_fake : &t->asan_fake_main, c->sp,
              c->stack_lo, (size_t)(c->stack_hi - c->stack_lo), c->tsan_fiber);
    /* Back: c yielded or finished. */
    gb__asan_finish(me ? me->asan_fake : t->asan_fake_main, NULL, NULL);
    t->cur_coro = me;
    t->cur = me ? &me->rstack : &t->main_stack;
    bool finished = c->status == GB_CORO_FINISHED;
    /* Its stack is dead: what it pinned may go now. */
    if (finished)
        gb__pin_witness_gone(c);
    /* Regions that need a try get it before we thaw, while our stack is
     * still frozen with its sp saved by the switch: what we witnessed was
     * dropped for a try when we froze to resume c, and once we run no scan
     * sees our live frames, so a try then would free a region a frame of
     * ours still points into. */
    if (finished || !gb__list_empty(&t->retired_dirty))
        gb__pin_retry(t);
    if (me) {
        gb__pin_frozen_remove(me);
        gb__pin_thawed(me);
    }
    return !finished;
}

void gb_coro_yield(void)
{
    gb__thread *t = gb__self();
    gb_coro *c = t->cur_coro;
    if (!c)
        gb__die("gb_coro_yield: called outside any coroutine");
    c->status = GB_CORO_SUSPENDED;
    gb__pin_frozen_push(t, c);
    void *to = c->caller ? c->caller->sp : t->main_sp;
    switch_to(&c->sp, &c->asan_fake, to, c->caller_lo, c->caller_size, c->tsan_caller);
    /* Resumed: gb_coro_resume has set the thread's state. */
    gb__asan_finish(c->asan_fake, &c->caller_lo, &c->caller_size);
}

void gb_coro_free(gb_coro *c)
{
    if (!c)
        return;
    check_thread(c, "gb_coro_free");
    if (c->status == GB_CORO_RUNNING)
        gb__die("gb_coro_free: coroutine %p is running; free it after it yields or finishes",
                (void *)c);
    gb__thread *t = c->thread;
    gb__pin_frozen_remove(c);
    gb__pin_witness_gone(c);
    /* Regions it entered and never left go now; its own stack no longer
     * counts as a pinner. */
    leave_all(c);
    gb__vg_deregister(c->vg_id);
    gb__tsan_destroy(c->tsan_fiber);
    gb__stack_put(c);
    free(c->summary);
    GB__SUB(bytes_meta, sizeof *c + c->summary_cap * sizeof *c->summary);
    free(c);
    GB__SUB(coros_live, 1);
    gb__pin_retry(t);
}

gb_coro_status gb_coro_status_of(const gb_coro *c)
{
    return c->status;
}

gb_coro *gb_coro_current(void)
{
    return gb__self()->cur_coro;
}
