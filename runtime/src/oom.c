/* oom.c -- the process's handler for memory that cannot be had.
 *
 * One handler for the process, as APR has one abort function for its
 * pools: the host knows what it can give back (a collector to run, a
 * cache to drop), the runtime knows when it is short. It is read under a
 * lock, on a path that runs only when a request has already failed.
 */
#include "oom.h"

#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gb_oom_handler handler;
static void *handler_arg;

/* Set while this thread runs the handler: a request that fails inside it
 * fails at once, rather than call the handler from within itself. */
static _Thread_local bool in_handler;

void gb_set_oom_handler(gb_oom_handler fn, void *arg)
{
    pthread_mutex_lock(&lock);
    handler = fn;
    handler_arg = arg;
    pthread_mutex_unlock(&lock);
}

bool gb__oom_handle(gb_region *r, size_t n, gb_oom_reason why)
{
    if (in_handler)
        return false;
    pthread_mutex_lock(&lock);
    gb_oom_handler fn = handler;
    void *arg = handler_arg;
    pthread_mutex_unlock(&lock);
    if (!fn)
        return false;
    in_handler = true;
    bool again = fn(r, n, why, arg);
    in_handler = false;
    return again;
}
