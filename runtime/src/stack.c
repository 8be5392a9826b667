/* stack.c -- coroutine stacks: mapped, guarded, pooled.
 *
 * A stack is one mapping with its lowest page made inaccessible, so an
 * overflow faults instead of writing over a neighbour; that is two entries
 * in the kernel's mapping table, and both count against the budget (10,000
 * suspended coroutines take 20,000 of Linux's default 65,530). Past the
 * budget a stack comes from malloc, without a guard, and the fallback is
 * counted. Making and dropping coroutines is the article's hot pattern (an
 * Enumerator per step), so a few freed default-size stacks are kept per
 * thread for reuse, emptied first with the OS's release call (MADV_DONTNEED
 * on Linux), so a pooled stack costs address space, not memory.
 */
#include "internal.h"
#include "sanitizers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* How many freed stacks a thread keeps. */
#define POOL_MAX 8

/* A thread's kept stacks, and the stacks whose munmap failed (the process
 * was at its mapping limit): those are emptied and unmapped at a later
 * stack unmap or sweep. */
struct gb__stack_pool {
    gb__chunk stacks[POOL_MAX];
    size_t n;
    gb__chunk *failed;
    size_t nfailed, failed_cap;
};

/* A thread's regions still entered, its retired ones, its stack pool, block
 * cache and signal stack go back when the thread exits (a key destructor,
 * armed when it first enters a region, makes a coroutine or caches a
 * block), so threads leave nothing behind. */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void adopt_orphans(gb__stack_pool *p);

static void thread_at_exit(void *arg)
{
    gb__thread *t = arg;
    /* Regions first: leaving them may put blocks in the cache and retry
     * what pinned them, which the rest then gives back. */
    gb__regions_at_exit(t);
    gb__stack_pool_trim(t);
    /* Stacks whose munmap still fails would stay on this thread's list,
     * which nothing retries once it has exited: any thread's sweep will. */
    if (t->pool) {
        adopt_orphans(t->pool);
        gb__stack_pool_trim(t);
    }
    gb__chunk_cache_flush(t);
    gb__altstack_release(t);
}

static void exit_key_make(void)
{
    if (pthread_key_create(&exit_key, thread_at_exit) != 0)
        gb__die("pthread_key_create failed: cannot give stacks back at thread exit");
}

void gb__thread_cleanup_at_exit(gb__thread *t)
{
    pthread_once(&exit_key_once, exit_key_make);
    pthread_setspecific(exit_key, t);
}

static gb__stack_pool *pool_of(gb__thread *t)
{
    if (!t->pool) {
        t->pool = calloc(1, sizeof *t->pool);
        if (!t->pool)
            gb__die("out of memory: no stack pool (%zu bytes)", sizeof *t->pool);
        GB__ADD(bytes_meta, sizeof *t->pool);
        gb__thread_cleanup_at_exit(t);
    }
    return t->pool;
}

static size_t guard_size(void)
{
    return gb__os.page_size;
}

static void set_range(gb_coro *c, gb__chunk s, size_t guard)
{
    c->stack = s;
    c->guard_size = guard;
    c->stack_lo = (char *)s.base + guard;
    /* The top is 16-byte aligned for the ABI; a malloc'd stack may not end
     * on such a boundary. */
    c->stack_hi = (char *)(((uintptr_t)s.base + s.size) & ~(uintptr_t)15);
}

void gb__stack_get(gb_coro *c, size_t size)
{
    gb__thread *t = c->thread;
    size_t guard = guard_size();
    size_t total = gb__add(size, guard, "gb_coro_new");
    if (t->pool && t->pool->n && size == gb__round_up(GB_CORO_STACK_DEFAULT, gb__os.page_size)) {
        gb__chunk s = t->pool->stacks[--t->pool->n];
        GB__SUB(stacks_pooled, 1);
        set_range(c, s, guard);
        return;
    }
    if (gb__mapping_reserve(2)) {
        void *p = gb__os.map(total);
        if (p && gb__os.protect_none(p, guard) == 0) {
            GB__ADD(bytes_mapped, total);
            set_range(c, (gb__chunk){.base = p, .size = total, .src = GB__SRC_MAP}, guard);
            return;
        }
        if (p && gb__fix_unmap(p, total) != 0) {
            /* The guard could not be made and the mapping cannot go either
             * (the process is at its mapping limit): it is one plain
             * mapping now, which the chunk layer empties and unmaps later. */
            gb__mapping_unreserve(1);
            GB__ADD(bytes_mapped, total);
            gb__chunk_put((gb__chunk){.base = p, .size = total, .src = GB__SRC_MAP});
        } else {
            gb__mapping_unreserve(2);
        }
        GB__ADD(fallbacks_mmap, 1);
    } else {
        GB__ADD(fallbacks_budget, 1);
    }
    void *p = malloc(size);
    if (!p)
        gb__die("out of memory: no coroutine stack of %zu bytes", size);
    GB__ADD(bytes_heap, size);
    set_range(c, (gb__chunk){.base = p, .size = size, .src = GB__SRC_HEAP}, 0);
}

static bool try_unmap(gb__chunk s)
{
    if (gb__fix_unmap(s.base, s.size) != 0)
        return false;
    GB__SUB(bytes_mapped, s.size);
    gb__mapping_unreserve(2);
    return true;
}

static void retry_failed(gb__stack_pool *p)
{
    for (size_t i = 0; i < p->nfailed;) {
        if (try_unmap(p->failed[i])) {
            p->failed[i] = p->failed[--p->nfailed];
            GB__SUB(unmaps_pending, 1);
        } else {
            i++;
        }
    }
}

static void stack_unmap(gb__thread *t, gb__chunk s)
{
    if (t->pool)
        retry_failed(t->pool);
    if (try_unmap(s))
        return;
    /* At the mapping limit: empty it now, unmap it later. */
    GB__ADD(unmap_failures, 1);
    (void)gb__fix_release(s.base, s.size);
    gb__stack_pool *p = pool_of(t);
    if (p->nfailed == p->failed_cap) {
        size_t cap = p->failed_cap ? p->failed_cap * 2 : 8;
        gb__chunk *v = realloc(p->failed, cap * sizeof *v);
        if (!v)
            gb__die("out of memory: cannot track a stack whose munmap failed");
        GB__ADD(bytes_meta, (cap - p->failed_cap) * sizeof *v);
        p->failed = v;
        p->failed_cap = cap;
    }
    p->failed[p->nfailed++] = s;
    GB__ADD(unmaps_pending, 1);
}

void gb__stack_put(gb_coro *c)
{
    gb__chunk s = c->stack;
    /* Frames that never returned keep their ASan redzones: clear them
     * before the memory is reused or given back. */
    gb__asan_unpoison(c->stack_lo, (size_t)(c->stack_hi - c->stack_lo));
    if (s.src == GB__SRC_HEAP) {
        free(s.base);
        GB__SUB(bytes_heap, s.size);
        return;
    }
    gb__thread *t = c->thread;
    if (s.size - c->guard_size == gb__round_up(GB_CORO_STACK_DEFAULT, gb__os.page_size)) {
        gb__stack_pool *p = pool_of(t);
        if (p->n < POOL_MAX) {
            (void)gb__fix_release(c->stack_lo, s.size - c->guard_size);
            p->stacks[p->n++] = s;
            GB__ADD(stacks_pooled, 1);
            return;
        }
    }
    stack_unmap(t, s);
}

/* Stacks whose munmap failed on threads that have exited (emptied, still
 * mapped and counted), retried at every trim, whichever thread sweeps. */
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;
static gb__chunk *orphans;
static size_t norphans, orphans_cap;

static void adopt_orphans(gb__stack_pool *p)
{
    pthread_mutex_lock(&orphans_lock);
    if (norphans + p->nfailed > orphans_cap) {
        size_t cap = norphans + p->nfailed;
        gb__chunk *v = realloc(orphans, cap * sizeof *v);
        if (!v)
            gb__die("out of memory: cannot track the stacks of an exited thread");
        GB__ADD(bytes_meta, (cap - orphans_cap) * sizeof *v);
        orphans = v;
        orphans_cap = cap;
    }
    memcpy(orphans + norphans, p->failed, p->nfailed * sizeof *p->failed);
    norphans += p->nfailed;
    p->nfailed = 0;
    pthread_mutex_unlock(&orphans_lock);
}

static void retry_orphans(void)
{
    pthread_mutex_lock(&orphans_lock);
    for (size_t i = 0; i < norphans;) {
        if (try_unmap(orphans[i])) {
            orphans[i] = orphans[--norphans];
            GB__SUB(unmaps_pending, 1);
        } else {
            i++;
        }
    }
    if (!norphans && orphans) {
        GB__SUB(bytes_meta, orphans_cap * sizeof *orphans);
        free(orphans);
        orphans = NULL;
        orphans_cap = 0;
    }
    pthread_mutex_unlock(&orphans_lock);
}

void gb__stack_pool_trim(gb__thread *t)
{
    retry_orphans();
    gb__stack_pool *p = t->pool;
    if (!p)
        return;
    while (p->n) {
        GB__SUB(stacks_pooled, 1);
        stack_unmap(t, p->stacks[--p->n]);
    }
    retry_failed(p);
    if (p->nfailed)
        return; /* still at the limit: keep tracking them */
    GB__SUB(bytes_meta, p->failed_cap * sizeof *p->failed + sizeof *p);
    free(p->failed);
    free(p);
    t->pool = NULL;
}
