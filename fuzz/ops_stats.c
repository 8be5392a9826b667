/* ops_stats.c -- operation 0x11: the counters checked against each
 * other, another thread, and the resident size.
 *
 * Some promises are not about one context: a thread that exits must give
 * back everything it took (its regions, its coroutines' stacks, its signal
 * stack), and the counters must agree with each other whatever the model
 * knows. So one variant of this operation runs a second thread that pins
 * one of its own regions from its own coroutine and exits, and compares
 * the counters before and after it is joined; another reads the resident
 * size once per process; the rest checks what the counters say about each
 * other.
 */
#include "harness.h"
#include "sanitizers.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Another thread, on its own region stack, leaves a region that a
 * coroutine of its own still points into, resumes the coroutine (which
 * reads it back), and exits: whatever it took must be back once it has
 * been joined (its stack pool and signal stack go at thread exit). */
typedef struct fz_thread {
    unsigned char *p;
    size_t n;
    unsigned char fill;
    bool ok;
} fz_thread;

GB__NO_ASAN static void thread_coro(void *arg)
{
    fz_thread *t = arg;
    volatile uintptr_t held = (uintptr_t)t->p;
    t->p = NULL;
    gb_coro_yield();
    const unsigned char *p = (const unsigned char *)held;
    for (size_t i = 0; i < t->n; i++)
        t->ok &= p[i] == t->fill;
}

static void *thread_main(void *arg)
{
    fz_thread *t = arg;
    gb_region *r = gb_enter();
    t->p = gb_alloc(t->n);
    memset(t->p, t->fill, t->n);
    gb_coro *c = gb_coro_new(thread_coro, t, 0);
    gb_coro_resume(c);
    gb_leave(r); /* retired: the coroutine points into it */
    t->ok &= !gb_coro_resume(c);
    gb_coro_free(c);
    return NULL;
}

static void op_thread(void)
{
    fz_thread t = {.n = 1 + in_ch16() % (48 * 1024), .fill = (unsigned char)in_ch8(), .ok = true};
    gb_stats before = stats();
    pthread_t th;
    if (pthread_create(&th, NULL, thread_main, &t) != 0)
        return; /* no thread to be had: nothing to check */
    pthread_join(th, NULL);
    if (!t.ok)
        fail("a coroutine on another thread read back something else than it wrote");
    gb_stats after = stats();
    if (S.faults_used)
        return; /* its unmaps may have been made to fail and deferred */
    if (after.regions_live != before.regions_live || after.coros_live != before.coros_live ||
        after.stacks_pooled != before.stacks_pooled || after.bytes_meta != before.bytes_meta ||
        after.bytes_mapped != before.bytes_mapped || after.bytes_heap != before.bytes_heap ||
        after.mappings != before.mappings || after.bytes_small != before.bytes_small ||
        after.blocks_live != before.blocks_live || after.regions_retired != before.regions_retired)
        fail("a thread that exited left something behind: bytes_mapped %zu -> %zu, bytes_heap %zu "
             "-> %zu, bytes_meta %zu -> %zu, mappings %zu -> %zu, stacks_pooled %zu -> %zu",
             before.bytes_mapped, after.bytes_mapped, before.bytes_heap, after.bytes_heap,
             before.bytes_meta, after.bytes_meta, before.mappings, after.mappings,
             before.stacks_pooled, after.stacks_pooled);
}

/* The resident size is read from /proc (smaps_rollup walks every mapping,
 * and ASan has many: half a millisecond), so once per process. Variant 6
 * runs another thread. The rest checks what the counters say about each
 * other. */
void op_stats(unsigned v)
{
    if (v == 6) {
        op_thread();
        return;
    }
    static bool resident_read;
    if (v == 7 && !resident_read) {
        resident_read = true;
        gb_resident res;
        if (gb_resident_get(&res) != 0 || res.rss == 0)
            fail("gb_resident_get could not read the resident size");
        return;
    }
    gb_stats st = stats();
    if (st.bytes_retired && !st.regions_retired)
        fail("bytes_retired is %zu with no retired region", st.bytes_retired);
    if (st.slabs > st.mappings)
        fail("%zu slabs, but only %zu mappings", st.slabs, st.mappings);
    if (st.stacks_pooled > 8)
        fail("%zu stacks pooled, more than the pool holds", st.stacks_pooled);
}
