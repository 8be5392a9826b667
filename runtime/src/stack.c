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
#include "fix/seam_mem.h"
#include "init.h"
#include "map.h"
#include "os/os.h"
#include "sanitizers.h"
#include "stack.h"
#include "stats.h"

#include <stdlib.h>

/* How many freed stacks a thread keeps. */
#define POOL_MAX 8

/* A thread's kept stacks: mapped, guarded, emptied. */
struct gb__stack_pool {
    gb__chunk stacks[POOL_MAX];
    size_t n;
};

static gb__stack_pool *pool_of(gb__thread *t)
{
    if (!t->pool) {
        t->pool = calloc(1, sizeof *t->pool);
        if (!t->pool)
            gb__die("out of memory: no stack pool (%zu bytes)", sizeof *t->pool);
        GB__ADD(bytes_meta, sizeof *t->pool);
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
        /* gb__stack_put gave the usable part back when it pooled it. */
        gb__os_reuse(c->stack_lo, s.size - guard);
        return;
    }
    if (gb__map_reserve(2)) {
        void *p = gb__os.map(total, gb__os.page_size);
        if (p && gb__os.protect_none(p, guard) == 0) {
            GB__ADD(bytes_mapped, total);
            set_range(c, (gb__chunk){.base = p, .size = total, .src = GB__SRC_MAP}, guard);
            return;
        }
        if (p) {
            /* The guard could not be made (the process is at its mapping
             * limit): it is one plain mapping, which goes back now, or is
             * emptied now and unmapped later. */
            gb__map_unreserve(1);
            GB__ADD(bytes_mapped, total);
            gb__map_unmap(p, total, 1, 0);
        } else {
            gb__map_unreserve(2);
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
    /* The guard and the stack are two mappings, unmapped as one range. */
    gb__map_unmap(s.base, s.size, 2, c->guard_size);
}

void gb__stack_pool_trim(gb__thread *t)
{
    gb__stack_pool *p = t->pool;
    if (!p)
        return;
    while (p->n) {
        gb__chunk s = p->stacks[--p->n];
        GB__SUB(stacks_pooled, 1);
        gb__map_unmap(s.base, s.size, 2, guard_size());
    }
    GB__SUB(bytes_meta, sizeof *p);
    free(p);
    t->pool = NULL;
}
