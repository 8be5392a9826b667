/* overflow.h -- the report of a coroutine stack overflow (overflow.c).
 *
 * A coroutine that runs past the bottom of its stack hits the guard page
 * below it; the fault is reported as what it is, naming the fix, instead of
 * a bare SIGSEGV. The handler needs a signal stack of its own (the
 * overflowing one has no room left), which each thread that makes a
 * coroutine gets, and gives back at its exit.
 */
#ifndef GB_OVERFLOW_H
#define GB_OVERFLOW_H

#include "base.h"

typedef struct gb__thread gb__thread;

/* A thread's signal stack for the report. A thread that already had a
 * usable one (the application's, a sanitizer's) keeps it and altstack
 * stays NULL; otherwise altstack is ours, installed over the stack
 * described by prev_*, which is put back at thread exit (replacing a stack
 * and only disabling ours would orphan the previous owner's). checked is
 * set once the thread's signal stack has been looked at. */
typedef struct gb__overflow {
    void *altstack;
    void *prev_sp;
    size_t prev_size;
    int prev_flags;
    bool checked;
} gb__overflow;

/* Installs the process's handler (once) and t's signal stack (once per
 * thread); gb_coro_new calls it. */
void gb__overflow_install(gb__thread *t);

/* Takes t's signal stack off if it is ours, putting back the one it
 * replaced (thread exit). */
void gb__overflow_release(gb__thread *t);

#endif /* GB_OVERFLOW_H */
