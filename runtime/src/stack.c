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
#include "seam_mem.h"
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

static gb__stack_pool *pool_of(gb__stack_pool **pool)
{
    if (!*pool) {
        *pool = calloc(1, sizeof **pool);
        if (!*pool)
            gb__die("out of memory: no stack pool (%zu bytes)", sizeof **pool);
        GB__ADD(bytes_meta, sizeof **pool);
    }
    return *pool;
}

static size_t guard_size(void)
{
    return gb__os.page_size;
}

/* Chunk s as a stack whose first guard bytes are its guard. */
static gb__stack stack_of(gb__chunk s, size_t guard)
{
    /* The top is 16-byte aligned for the ABI; a malloc'd stack may not end
     * on such a boundary. */
    return (gb__stack){.chunk = s,
                       .lo = (char *)s.base + guard,
                       .hi = (char *)(((uintptr_t)s.base + s.size) & ~(uintptr_t)15),
                       .guard = guard};
}

gb__stack gb__stack_get(gb__stack_pool **pool, size_t size)
{
    size_t guard = guard_size();
    size_t total = gb__add(size, guard, "gb_coro_new");
    gb__stack_pool *p = *pool;
    if (p && p->n && size == gb__round_up(GB_CORO_STACK_DEFAULT, gb__os.page_size)) {
        gb__stack s = stack_of(p->stacks[--p->n], guard);
        GB__SUB(stacks_pooled, 1);
        /* gb__stack_put gave the usable part back when it pooled it. */
        gb__os_reuse(s.lo, s.chunk.size - guard);
        return s;
    }
    if (gb__map_reserve(2)) {
        void *m = gb__os.map(total, gb__os.page_size);
        if (m && gb__os.protect_none(m, guard) == 0) {
            GB__ADD(bytes_mapped, total);
            return stack_of((gb__chunk){.base = m, .size = total, .src = GB__SRC_MAP}, guard);
        }
        if (m) {
            /* The guard could not be made (the process is at its mapping
             * limit): it is one plain mapping, which goes back now, or is
             * emptied now and unmapped later. */
            gb__map_unreserve(1);
            GB__ADD(bytes_mapped, total);
            gb__map_unmap(m, total, 1, 0);
        } else {
            gb__map_unreserve(2);
        }
        GB__ADD(fallbacks_mmap, 1);
    } else {
        GB__ADD(fallbacks_budget, 1);
    }
    void *h = malloc(size);
    if (!h)
        gb__die("out of memory: no coroutine stack of %zu bytes", size);
    GB__ADD(bytes_heap, size);
    return stack_of((gb__chunk){.base = h, .size = size, .src = GB__SRC_HEAP}, 0);
}

void gb__stack_put(gb__stack_pool **pool, gb__stack s)
{
    /* Frames that never returned keep their ASan redzones: clear them
     * before the memory is reused or given back. */
    gb__asan_unpoison(s.lo, (size_t)(s.hi - s.lo));
    if (s.chunk.src == GB__SRC_HEAP) {
        free(s.chunk.base);
        GB__SUB(bytes_heap, s.chunk.size);
        return;
    }
    if (s.chunk.size - s.guard == gb__round_up(GB_CORO_STACK_DEFAULT, gb__os.page_size)) {
        gb__stack_pool *p = pool_of(pool);
        if (p->n < POOL_MAX) {
            (void)gb__fix_release(s.lo, s.chunk.size - s.guard);
            p->stacks[p->n++] = s.chunk;
            GB__ADD(stacks_pooled, 1);
            return;
        }
    }
    /* The guard and the stack are two mappings, unmapped as one range. */
    gb__map_unmap(s.chunk.base, s.chunk.size, 2, s.guard);
}

void gb__stack_pool_trim(gb__stack_pool **pool)
{
    gb__stack_pool *p = *pool;
    if (!p)
        return;
    while (p->n) {
        gb__chunk s = p->stacks[--p->n];
        GB__SUB(stacks_pooled, 1);
        gb__map_unmap(s.base, s.size, 2, guard_size());
    }
    GB__SUB(bytes_meta, sizeof *p);
    free(p);
    *pool = NULL;
}
