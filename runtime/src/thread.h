/* thread.h -- the state of one thread, and what happens at its exit
 * (thread.c).
 *
 * Regions and coroutines are per thread: a thread's regions, coroutines,
 * retired regions, descriptor pages, pooled stacks and cached blocks all
 * hang off its gb__thread. thread.c gives all of it back when the thread
 * exits, and holds the two entry points that tidy a thread while it runs,
 * gb_sweep and gb_safepoint.
 */
#ifndef GB_THREAD_H
#define GB_THREAD_H

#include "chunk.h"
#include "index.h"
#include "list.h"
#include "overflow.h"
#include "pin.h"
#include "region.h"

typedef struct gb__stack_pool gb__stack_pool;

/* Per-thread state, on the heap (gb__self makes it), so that the thread's
 * exit hook finds it whole whatever the C library has done to the thread's
 * TLS block by then (thread.c).
 *   - cur is &main_stack while the thread runs on its own stack, else the
 *     running coroutine's region stack; cur_coro is that coroutine or NULL;
 *   - pins is the thread's pinning slice (pin.h): its frozen stacks (the
 *     coroutines suspended, or running but waiting on one they resumed)
 *     and its retired regions, pinned or needing a try. pin.c is handed
 *     this slice, never the thread. */
struct gb__thread {
    gb__rstack main_stack;
    gb__rstack *cur;
    gb_coro *cur_coro;
    void *main_sp;
    gb__pins pins;
    unsigned safepoints;
    void *asan_fake_main;
    gb__stack_pool *pool;
    gb__mem mem; /* its block cache, address index and descriptor pages (region.h) */
    gb__overflow overflow;
    bool made_coros; /* gb_coro_new ran on this thread */
};

/* This thread's state, or NULL before gb__self first sees the thread.
 * initial-exec TLS: on ELF one load from the thread pointer, which
 * coroutine switches hit twice per round trip (Mach-O reaches every
 * thread-local through dyld's accessor). */
extern _Thread_local gb__thread *gb__tls __attribute__((tls_model("initial-exec")));

/* Makes this thread's state: zeroed, its lists initialised, and its exit
 * hook armed (when the thread exits, its regions still entered are left,
 * saying so on stderr, its retired regions freed, its descriptor pages,
 * stack pool, block cache and signal stack given back, and the state
 * freed). Stops the process when malloc fails. */
gb__thread *gb__thread_new(void);

static inline gb__thread *gb__self(void)
{
    gb__thread *t = gb__tls;
    if (GB__UNLIKELY(!t))
        t = gb__thread_new();
    return t;
}

/* ------------------------------------------------------------ pinning
 *
 * A coroutine's frozen-stack record is the first member of its descriptor
 * (coro.h asserts it), so a pointer to the one converts to a pointer to
 * the other (C11 6.7.2.1): what runs on t, as pinning sees it, is read
 * here without the descriptor's layout, which sits above this layer. */

/* The running stack's record, or NULL while t runs on its own stack. */
static inline gb__frozen *gb__thread_run(const gb__thread *t)
{
    return (gb__frozen *)(void *)t->cur_coro;
}

#endif /* GB_THREAD_H */
