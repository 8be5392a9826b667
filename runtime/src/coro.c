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
#include "coro_path.h"
#include "init.h"
#include "os/os.h"
#include "overflow.h"
#include "pin.h"
#include "sanitizers.h"
#include "stack.h"
#include "stats.h"
#include "switch/switch.h"
#include "thread.h"

#include <pthread.h>
#include <stdlib.h>

#define MIN_STACK (16 * GB__KIB)

/* ------------------------------------------------------------ handles
 *
 * What gb_coro_new returns is not the descriptor's address: a freed
 * descriptor goes back to malloc, which may hand its address to the next
 * coroutine, and resuming or freeing a freed coroutine must be told apart
 * from using a live one. A handle names a slot of a process-wide table and
 * the slot's generation,
 *   handle = generation << SLOT_BITS | slot,
 * and a slot's generation grows by one each time its coroutine is freed,
 * so no handle ever names two coroutines. A slot whose generation would
 * pass UINT32_MAX is never used again. Generation 0 is never issued, so no
 * handle is NULL.
 *
 * The table is static: 2^18 slots (6 MiB of address space, resident only
 * where slots have been used; freed slots are reused first), so that a
 * handle of any age decodes without reading memory that may be gone.
 * Each slot says which thread's coroutine is in it, so a handle of another
 * thread's coroutine is named as such without touching its descriptor. */
#define SLOT_BITS GB__CORO_SLOT_BITS
#define SLOTS GB__CORO_SLOTS

/* The slots are in coro_path.h: the resume path reads them inline. */
typedef gb__coro_slot coro_slot;

gb__coro_slot gb__coro_slots[GB__CORO_SLOTS];

/* The owner of the coroutines a thread left behind when it exited: a new
 * thread may have the exited one's gb__thread address. */
#define EXITED ((gb__thread *)(uintptr_t)1)
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(uint32_t) slots_used; /* slots [0, slots_used) have been handed out */
static uint32_t slots_free;          /* head of the free list (index + 1), or 0 */

/* Puts c in a free slot and gives it its handle. */
static void slot_take(gb_coro *c)
{
    pthread_mutex_lock(&slots_lock);
    uint32_t s;
    if (slots_free) {
        s = slots_free - 1;
        slots_free = gb__coro_slots[s].next_free;
    } else {
        s = atomic_load_explicit(&slots_used, memory_order_relaxed);
        if (s == SLOTS) {
            pthread_mutex_unlock(&slots_lock);
            gb__die("gb_coro_new: %u coroutines exist at once, the most there can be (free "
                    "some with gb_coro_free)",
                    SLOTS);
        }
        atomic_store_explicit(&gb__coro_slots[s].gen, 1, memory_order_relaxed);
        atomic_store_explicit(&slots_used, s + 1, memory_order_release);
    }
    pthread_mutex_unlock(&slots_lock);
    uint32_t gen = atomic_load_explicit(&gb__coro_slots[s].gen, memory_order_relaxed);
    atomic_store_explicit(&gb__coro_slots[s].owner, c->thread, memory_order_relaxed);
    atomic_store_explicit(&gb__coro_slots[s].c, c, memory_order_release);
    c->slot = s;
    c->handle = (uintptr_t)gen << SLOT_BITS | s;
}

/* c is freed: its handle names no coroutine from now on. */
static void slot_free(gb_coro *c)
{
    coro_slot *sl = &gb__coro_slots[c->slot];
    uint32_t gen = atomic_load_explicit(&sl->gen, memory_order_relaxed);
    atomic_store_explicit(&sl->c, NULL, memory_order_relaxed);
    atomic_store_explicit(&sl->owner, NULL, memory_order_relaxed);
    atomic_store_explicit(&sl->gen, gen + 1 == 0 ? 0 : gen + 1, memory_order_release);
    if (gen + 1 == 0)
        return; /* its generations are used up: never used again */
    pthread_mutex_lock(&slots_lock);
    sl->next_free = slots_free;
    slots_free = c->slot + 1;
    pthread_mutex_unlock(&slots_lock);
}

void gb__coro_at_exit(gb__thread *t)
{
    uint32_t n = atomic_load_explicit(&slots_used, memory_order_acquire);
    for (uint32_t s = 0; s < n; s++)
        if (atomic_load_explicit(&gb__coro_slots[s].owner, memory_order_relaxed) == t)
            atomic_store_explicit(&gb__coro_slots[s].owner, EXITED, memory_order_relaxed);
}

/* The coroutine of this thread that handle h names, for the entry point
 * `who`; stops the process naming what h is otherwise. The full decode:
 * gb__coro_of (coro_path.h) answers the common case inline. */
gb_coro *gb__coro_of_slow(const char *who, const gb_coro *h)
{
    uintptr_t v = (uintptr_t)h;
    uint32_t s = (uint32_t)(v & (SLOTS - 1));
    uint64_t gen = (uint64_t)v >> SLOT_BITS;
    if (!h)
        gb__die("%s: NULL coroutine", who);
    if (gen == 0 || gen > UINT32_MAX ||
        s >= atomic_load_explicit(&slots_used, memory_order_acquire))
        gb__die("%s: %p is not a coroutine handle (gb_coro_new never returned it)", who,
                (const void *)h);
    coro_slot *sl = &gb__coro_slots[s];
    uint32_t now = atomic_load_explicit(&sl->gen, memory_order_acquire);
    gb_coro *c = atomic_load_explicit(&sl->c, memory_order_acquire);
    gb__thread *owner = atomic_load_explicit(&sl->owner, memory_order_relaxed);
    if (GB__LIKELY(c && now == gen && owner == gb__self()))
        return c;
    if (gen < now || now == 0)
        gb__die("%s: coroutine %p was freed (gb_coro_free); its handle names no coroutine any "
                "more",
                who, (const void *)h);
    if (c && now == gen && owner == EXITED)
        gb__die("%s: coroutine %p belongs to a thread that has exited; a coroutine runs only "
                "on the thread that made it",
                who, (const void *)h);
    if (c && now == gen)
        gb__die("%s: coroutine %p belongs to another thread; a coroutine runs only on the "
                "thread that made it",
                who, (const void *)h);
    gb__die("%s: %p is not a coroutine handle (gb_coro_new never returned it)", who,
            (const void *)h);
}

/* Pops and leaves every region still on c's stack, innermost first. */
static void leave_all(gb_coro *c)
{
    gb__thread *t = c->thread;
    while (c->rstack.top)
        gb__pin_pop(&t->pins, gb__thread_run(t), &c->rstack);
}

void gb__coro_resumer_lands(void *arg)
{
    gb_coro *c = arg;
    gb__thread *t = c->thread;
    gb_coro *me = t->cur_coro;
    gb__asan_finish(me ? me->asan_fake : t->asan_fake_main, NULL, NULL);
    bool finished = c->status == GB_CORO_FINISHED;
    /* c yielded (frozen by its yield) or finished (thawed when it was
     * resumed, never frozen again); its resumer has not thawed yet. */
    GB__ASSERT(gb__pin_is_frozen(&c->fz) == !finished && (!me || gb__pin_is_frozen(&me->fz)));
    /* Its stack is dead: what it pinned may go now. */
    if (finished)
        gb__pin_witness_gone(&t->pins, &c->fz);
    /* Regions that need a try get it before the resumer thaws, while its
     * stack is still frozen with its sp saved by its switch: what it
     * witnessed was dropped for a try when it froze to resume c, and once
     * it runs no scan sees its live frames, so a try then would free a
     * region a frame of it still points into. */
    if (finished || !gb__list_empty(&t->pins.retired_dirty))
        gb__pin_retry(&t->pins, gb__thread_run(t));
    if (me) {
        gb__pin_frozen_remove(&me->fz);
        gb__pin_thawed(&me->fz);
    }
}

GB__NORETURN void gb__coro_die_resume(const gb_coro *c, const gb_coro *h)
{
    if (c->status == GB_CORO_FINISHED)
        gb__die("gb_coro_resume: coroutine %p has finished; it cannot be resumed", (const void *)h);
    gb__die("gb_coro_resume: coroutine %p is running (a coroutine cannot resume itself "
            "or one that is waiting on it)",
            (const void *)h);
}

static void coro_main(void *arg)
{
    gb_coro *c = arg;
    gb__asan_finish(NULL, &c->caller_lo, &c->caller_size);
    c->fn(c->arg);
    /* Regions the function entered and did not leave are left now. */
    leave_all(c);
    /* It runs to its end: thawed, so no try takes its stack for frozen. */
    GB__ASSERT(!gb__pin_is_frozen(&c->fz) && !c->rstack.top);
    c->status = GB_CORO_FINISHED;
    gb__thread *t = c->thread;
    gb_coro *me = c->caller;
    t->cur_coro = me;
    t->cur = me ? &me->rstack : &t->main_stack;
    void *to = me ? me->fz.sp : t->main_sp;
    /* The last switch out: a NULL fake-stack slot tells ASan this stack's
     * fake frames die here. The resumer's gb_coro_resume returns false. */
    gb__asan_start(NULL, c->caller_lo, c->caller_size);
    gb__tsan_leave(c);
    gb__switch_hook(&c->fz.sp, to, 0, gb__coro_resumer_lands, c);
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
    /* Its coroutines must be known as an exited thread's when it exits
     * (gb__coro_at_exit). */
    t->made_coros = true;
    gb_coro *c = calloc(1, sizeof *c);
    if (!c)
        gb__die("out of memory: no coroutine descriptor");
    GB__ADD(bytes_meta, sizeof *c);
    GB__ADD(coros_live, 1);
    c->fn = fn;
    c->arg = arg;
    c->thread = t;
    c->status = GB_CORO_SUSPENDED;
    c->stack = gb__stack_get(&t->pool, size);
    gb__pin_frozen_init(&c->fz, c->stack.hi);
    c->vg_id = gb__vg_register(c->stack.lo, c->stack.hi);
    gb__tsan_create(c);
    c->fz.sp = gb__switch_init(c->stack.hi, coro_main, c);
    gb__pin_frozen_push(&t->pins, &c->fz);
    /* A new stack is frozen, the most recently: a try may read it. */
    GB__ASSERT(t->pins.frozen.next == &c->fz.flink);
    slot_take(c);
    c->rstack.owner = gb__coro_handle_of(c);
    return gb__coro_handle_of(c);
}

_Thread_local uint64_t gb__coro_cold;

bool gb__coro_resume_cold(gb_coro *h, gb_coro *c, unsigned stages)
{
    gb__coro_cold++;
    return gb__coro_resume_full(gb__self(), h, c, stages);
}

void gb__coro_yield_cold(gb_coro *c, unsigned stages)
{
    gb__coro_cold++;
    gb__coro_yield_full(gb__self(), c, stages);
}

bool gb_coro_resume(gb_coro *h)
{
    return gb__coro_resume_path(gb__tls, h, NULL, GB__CP_ALL);
}

void gb_coro_yield(void)
{
    gb__coro_yield_path(gb__tls, NULL, GB__CP_ALL);
}

void gb_coro_free(gb_coro *h)
{
    if (!h)
        return;
    gb_coro *c = gb__coro_of_slow("gb_coro_free", h);
    if (c->status == GB_CORO_RUNNING)
        gb__die("gb_coro_free: coroutine %p is running; free it after it yields or finishes",
                (void *)h);
    gb__thread *t = c->thread;
    gb__pin_frozen_unlink(&c->fz);
    gb__pin_witness_gone(&t->pins, &c->fz);
    /* Nothing may name its record once it is freed: no region it
     * witnessed, no list it is on. */
    GB__ASSERT(gb__list_empty(&c->fz.witnessed) && !gb__list_linked(&c->fz.flink) && c != t->cur_coro);
    /* Regions it entered and never left go now; its own stack no longer
     * counts as a pinner. */
    leave_all(c);
    gb__vg_deregister(c->vg_id);
    gb__tsan_destroy(c);
    gb__stack_put(&t->pool, c->stack);
    free(c->fz.summary);
    GB__SUB(bytes_meta, sizeof *c + c->fz.summary_cap * sizeof *c->fz.summary);
    slot_free(c);
    free(c);
    GB__SUB(coros_live, 1);
    gb__pin_retry(&t->pins, gb__thread_run(t));
}

gb_coro_status gb_coro_status_of(const gb_coro *h)
{
    return gb__coro_of_slow("gb_coro_status_of", h)->status;
}

gb_coro *gb_coro_current(void)
{
    gb_coro *c = gb__self()->cur_coro;
    return c ? gb__coro_handle_of(c) : NULL;
}
