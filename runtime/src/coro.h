/* coro.h -- a coroutine: a stack, its frozen-stack record and a region
 * stack (coro.c).
 *
 * coro.c makes, switches and frees coroutines, and stack.c maps their
 * stacks. pin.c and the pin fixes never see this struct: they read and
 * keep the frozen-stack record embedded in it (pin.h), which the switch
 * path hands them.
 */
#ifndef GB_CORO_H
#define GB_CORO_H

#include "list.h"
#include "pin.h"
#include "region.h"
#include "sanitizers.h"
#include "stack.h"

typedef struct gb__thread gb__thread;

/* A coroutine.
 *   - fz is its stack as pinning sees it (pin.h): fz.sp is the saved
 *     stack pointer whenever the coroutine is not the running one, fz.hi
 *     is stack.hi, and the record keeps whether the stack is frozen, its
 *     place on the thread's frozen list, its summary and what it
 *     witnesses. It is the first member, so that the thread's state names
 *     a coroutine's record and the record its coroutine without this
 *     struct's layout (thread.h), and fz.sp sits where the switch path
 *     stores it;
 *   - stack is its stack (stack.h): [stack.lo, stack.hi) is the usable
 *     part, with a guard of stack.guard bytes below stack.lo when the
 *     stack is mapped. */
struct gb_coro {
    gb__frozen fz;
    gb__stack stack;
    gb_coro_fn fn;
    void *arg;
    gb_coro_status status;
    uint32_t slot; /* its slot in the handle table */
    gb__rstack rstack;
    gb__thread *thread;
    gb_coro *caller;
    unsigned vg_id;
    void *asan_fake;
    const void *caller_lo;
    size_t caller_size;
#if defined(GB__TSAN)
    void *tsan_fiber, *tsan_caller; /* its fiber, its resumer's (sanitizers.h) */
#endif
    uintptr_t handle; /* what gb_coro_new returned (coro.c) */
#if defined(GB_CORO_PAD) && GB_CORO_PAD > 0
    /* Test builds only (CMake's GB_CORO_PAD): bytes that make the
     * descriptor, which comes from malloc, larger, so that a gate can be
     * shown not to depend on its size. Never read. */
    char pad[GB_CORO_PAD];
#endif
};

_Static_assert(offsetof(struct gb_coro, fz) == 0,
               "a coroutine's frozen-stack record is the first member of its descriptor (thread.h)");

/* The coroutine whose frozen-stack record f is, or NULL for NULL. */
static inline gb_coro *gb__coro_of_frozen(gb__frozen *f)
{
    return (gb_coro *)(void *)f;
}

/* At t's exit: its coroutines never freed are known as an exited
 * thread's from now on. */
void gb__coro_at_exit(gb__thread *t);

/* The handle the API knows c by. */
static inline gb_coro *gb__coro_handle_of(const gb_coro *c)
{
    return (gb_coro *)c->handle;
}

#endif /* GB_CORO_H */
