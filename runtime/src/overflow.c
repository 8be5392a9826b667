/* overflow.c -- reporting a coroutine stack overflow as what it is.
 *
 * A coroutine's mapped stack has a PROT_NONE guard page below it (stack.c),
 * so running past its bottom faults instead of writing over a neighbour.
 * Left alone, that fault is a bare SIGSEGV in whatever frame overflowed;
 * here a handler tells a fault in the running coroutine's guard from any
 * other, reports it naming the fix, and hands every other fault to the
 * handler that was there before.
 */
#include "coro.h"
#include "overflow.h"
#include "thread.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sigaction old_segv, old_bus;
static atomic_int handler_installed;

static void overflow_handler(int sig, siginfo_t *si, void *uctx)
{
    gb__thread *t = gb__self();
    gb_coro *c = t->cur_coro;
    char *addr = si->si_addr;
    if (c && c->stack.guard && addr >= c->stack.lo - c->stack.guard && addr < c->stack.lo) {
        static const char msg[] = "giveback: coroutine stack overflow: the running coroutine "
                                  "ran past the bottom of its stack into the guard page "
                                  "(give gb_coro_new a larger stack_size)\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        signal(SIGABRT, SIG_DFL);
        abort();
    }
    /* Not ours: put the previous handler back and return; the faulting
     * instruction runs again and meets it. */
    sigaction(sig, sig == SIGSEGV ? &old_segv : &old_bus, NULL);
    (void)uctx;
}

/* The handler runs on an alternate stack: on the overflowing stack itself
 * there is no room left to run anything. It needs little (a write and an
 * abort), so a signal stack the thread already has is used if it holds
 * ALTSTACK_MIN; a sanitizer or the application installed it and will take
 * it off itself. Otherwise the thread gets one of ours (not counted in the
 * stats: it lives as long as the thread), and at thread exit the stack it
 * replaced is put back. */
#define ALTSTACK_MIN (16 * GB__KIB)
#define ALTSTACK_SIZE (64 * GB__KIB)

static void install_altstack(gb__thread *t)
{
    t->overflow.checked = true;
    stack_t cur;
    memset(&cur, 0, sizeof cur);
    if (sigaltstack(NULL, &cur) != 0)
        return;
    if (!(cur.ss_flags & SS_DISABLE) && cur.ss_size >= ALTSTACK_MIN)
        return; /* usable as it is */
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_size = ALTSTACK_SIZE;
    ss.ss_sp = malloc(ss.ss_size);
    if (!ss.ss_sp)
        return; /* an overflow will then be reported as a plain SIGSEGV */
    if (sigaltstack(&ss, NULL) != 0) {
        free(ss.ss_sp);
        return;
    }
    t->overflow.altstack = ss.ss_sp;
    t->overflow.prev_sp = cur.ss_sp;
    t->overflow.prev_size = cur.ss_size;
    t->overflow.prev_flags = cur.ss_flags & SS_DISABLE;
}

void gb__overflow_release(gb__thread *t)
{
    if (!t->overflow.altstack)
        return;
    stack_t cur, prev;
    memset(&cur, 0, sizeof cur);
    memset(&prev, 0, sizeof prev);
    prev.ss_sp = t->overflow.prev_sp;
    prev.ss_size = t->overflow.prev_size;
    prev.ss_flags = t->overflow.prev_flags;
    /* Only if ours is still the one in force: a stack installed after ours
     * belongs to someone else, and ours is simply no longer used. A thread
     * that ends inside a handler running on ours keeps it (it is in use). */
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == t->overflow.altstack) {
        if (cur.ss_flags & SS_ONSTACK)
            return;
        if (sigaltstack(&prev, NULL) != 0) {
            stack_t off;
            memset(&off, 0, sizeof off);
            off.ss_flags = SS_DISABLE;
            sigaltstack(&off, NULL);
        }
    }
    free(t->overflow.altstack);
    t->overflow.altstack = NULL;
}

void gb__overflow_install(gb__thread *t)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&handler_installed, &expected, 1)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = overflow_handler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &old_segv);
        sigaction(SIGBUS, &sa, &old_bus);
    }
    if (!t->overflow.checked)
        install_altstack(t);
}
