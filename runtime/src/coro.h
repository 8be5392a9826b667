/* coro.h -- a coroutine: a stack, a saved stack pointer and a region stack
 * (coro.c).
 *
 * The struct is read by pin.c and the pin fixes, which scan frozen stacks
 * and keep the witnessed lists; coro.c makes, switches and frees them, and
 * stack.c maps their stacks.
 */
#ifndef GB_CORO_H
#define GB_CORO_H

#include "list.h"
#include "region.h"
#include "sanitizers.h"
#include "stack.h"

typedef struct gb__thread gb__thread;

/* A coroutine.
 *   - stack is its stack (stack.h): [stack.lo, stack.hi) is the usable
 *     part, with a guard of stack.guard bytes below stack.lo when the
 *     stack is mapped;
 *   - sp is the saved stack pointer whenever the coroutine is not the
 *     running one; the words of [sp, stack.hi) are its whole frozen state,
 *     saved registers included (switch/switch.h);
 *   - frozen says whether its stack is frozen (pin.h); flink is on its
 *     thread's frozen list while it is, and may stay there after it thaws
 *     (pin.h: the list work is done when the list is read);
 *   - summary holds the sorted distinct words of [sp, stack.hi) when
 *     summary_valid, built at most once between two runs (fix/retry.c);
 *   - witnessed lists the retired regions whose witness it is (through
 *     gb_region.wlink). */
struct gb_coro {
    void *sp;
    gb__stack stack;
    gb_coro_fn fn;
    void *arg;
    gb_coro_status status;
    uint32_t slot; /* its slot in the handle table */
    gb__rstack rstack;
    gb__thread *thread;
    gb_coro *caller;
    gb__list flink;
    uintptr_t *summary;
    size_t nsummary, summary_cap;
    bool summary_valid;
    bool frozen;
    unsigned vg_id;
    gb__list witnessed;
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

/* At t's exit: its coroutines never freed are known as an exited
 * thread's from now on. */
void gb__coro_at_exit(gb__thread *t);

/* The handle the API knows c by. */
static inline gb_coro *gb__coro_handle_of(const gb_coro *c)
{
    return (gb_coro *)c->handle;
}

#endif /* GB_CORO_H */
