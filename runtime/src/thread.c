/* thread.c -- a thread's state, its exit, and the entry points that tidy it.
 *
 * Everything the runtime keeps for a thread hangs off its gb__thread:
 * the regions it entered, those it retired, its descriptor pages, pooled
 * stacks, cached blocks and signal stack. A thread may end at any time,
 * with regions still entered, so what it holds is given back by a key
 * destructor, armed when the state is made. The state is on the heap and
 * the key's value points to it: on Darwin, thread-locals live in a block
 * that dyld frees in a key destructor of its own, older than ours, so a
 * destructor handed the TLS block's address would find it freed (and, as
 * libmalloc zeroes on free, empty: nothing would be given back). So
 * nothing the destructor calls may look the thread up through its TLS:
 * every layer below the entry points is handed the state, or its slice of
 * it, by its caller, and the destructor checks that none asked. gb_sweep
 * gives back what a running thread keeps for speed; gb_safepoint does so
 * every GB_STRESS-th call, for tests.
 */
#include "check.h"
#include "chunk.h"
#include "coro.h"
#include "handle.h"
#include "init.h"
#include "pin.h"
#include "seam_handoff.h"
#include "stack.h"
#include "stats.h"
#include "thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Thread_local gb__thread *gb__tls;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static void exit_key_make(void);

gb__thread *gb__thread_new(void)
{
    gb__thread *t = calloc(1, sizeof *t);
    if (!t)
        gb__die("out of memory: no state for this thread (%zu bytes)", sizeof *t);
    t->cur = &t->main_stack;
    gb__pin_init(&t->pins);
    gb__list_init(&t->mem.davail);
    gb__list_init(&t->mem.dremote);
    pthread_once(&exit_key_once, exit_key_make);
    if (pthread_setspecific(exit_key, t) != 0)
        gb__die("pthread_setspecific failed: cannot give this thread's memory back at its exit");
    gb__tls = t;
    return t;
}

/* ---------------------------------------------------------- thread exit */

/* Leaves the regions still entered on t's own stack, saying so: a leak the
 * thread can no longer fix, so the memory is given back and the misuse
 * reported, without stopping the process. */
static void leave_entered(gb__thread *t)
{
    gb__rstack *s = &t->main_stack;
    if (!s->depth)
        return;
    fprintf(stderr, "giveback: a thread exited with %zu region%s entered; %s left at its exit\n",
            s->depth, s->depth == 1 ? "" : "s", s->depth == 1 ? "it was" : "they were");
    fflush(stderr);
    while (s->top)
        gb__pin_pop(&t->pins, gb__thread_run(t), s);
}

static void at_exit(void *arg)
{
    gb__thread *t = arg;
    /* The thread's whole state, once, before it is taken apart: what it
     * leaves behind must have been sound (GB_CHECK=2). */
    GB__CHECK_AT(gb__check_thread(t));
    /* What the TLS holds now is what Darwin's would: nothing to rely on.
     * A call below that looked the thread up anyway would make a new
     * state here (gb__self), which the check at the end names. */
    gb__tls = NULL;
    /* Regions first: leaving them may put blocks in the cache and retry
     * what pinned them, which the rest then gives back. Whatever is still
     * retired is pinned by this thread's coroutines, which can never run
     * again (resuming one on another thread stops the process). */
    leave_entered(t);
    gb__pin_free_all(&t->pins);
    gb__handle_trim(&t->mem);
    /* Takes back, under the lock that orphans its pages, what other
     * threads freed on them or gave it (handle.c): no window between the
     * two in which another thread's free could be lost. */
    gb__handle_at_exit(&t->mem);
    gb__stack_pool_trim(&t->pool);
    gb__map_cache_flush(&t->mem.cache);
    gb__index_release(&t->mem.index);
    gb__overflow_release(t);
    if (t->made_coros)
        gb__coro_at_exit(t);
    if (GB__UNLIKELY(gb__tls != NULL))
        gb__die("internal error: the exit hook of a thread looked the thread up through its "
                "TLS, which a C library may have freed by then");
    /* A destructor of another key that runs after this one and calls into
     * the runtime gets a new state, and this hook again for it. */
    free(t);
}

static void exit_key_make(void)
{
    if (pthread_key_create(&exit_key, at_exit) != 0)
        gb__die("pthread_key_create failed: cannot give a thread's memory back at its exit");
}


/* ------------------------------------------------- tidying a live thread */

void gb_sweep(void)
{
    gb__ensure_init();
    gb__thread *t = gb__self();
    GB__ADD(sweeps, 1);
    gb__pin_retry(&t->pins, gb__thread_run(t));
    gb__fix_collect(&t->mem);
    gb__stack_pool_trim(&t->pool);
    gb__handle_trim(&t->mem); /* before the flush: its page may go to the cache */
    gb__map_cache_flush(&t->mem.cache);
    gb__map_retry_unmaps();
}

void gb_safepoint(void)
{
    gb__ensure_init();
    if (!gb__cfg.stress)
        return;
    gb__thread *t = gb__self();
    if (++t->safepoints >= gb__cfg.stress) {
        t->safepoints = 0;
        gb_sweep();
    }
}
