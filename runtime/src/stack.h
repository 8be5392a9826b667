/* stack.h -- coroutine stacks: mapped, guarded, pooled (stack.c).
 *
 * Below the coroutines: a stack is handed out as a value, and each call
 * takes the pool of the thread it runs for, so nothing here knows a
 * coroutine or a thread.
 */
#ifndef GB_STACK_H
#define GB_STACK_H

#include "map.h"

/* A coroutine stack.
 *   - chunk is what was taken: a mapping (MAP) whose first guard bytes are
 *     inaccessible, or malloc'd memory (HEAP, guard 0);
 *   - [lo, hi) is the usable part: lo is chunk.base + guard, and hi the
 *     chunk's end rounded down to 16 bytes (the ABI's alignment). */
typedef struct gb__stack {
    gb__chunk chunk;
    char *lo, *hi;
    size_t guard;
} gb__stack;

/* A thread's kept stacks (stack.c); NULL until the thread first keeps one. */
typedef struct gb__stack_pool gb__stack_pool;

/* A stack of `size` usable bytes for the thread whose pool is *pool: a
 * pooled one, a mapping with a PROT_NONE guard below (counted as two
 * mappings), or, past the budget or when mmap fails, malloc'd memory
 * without a guard (counted as a fallback). */
gb__stack gb__stack_get(gb__stack_pool **pool, size_t size);

/* Gives s back: into the pool (emptied first) when it has the default size
 * and the pool has room, else to the OS. */
void gb__stack_put(gb__stack_pool **pool, gb__stack s);

/* Unmaps the stacks the pool keeps, and the pool (gb_sweep, thread exit). */
void gb__stack_pool_trim(gb__stack_pool **pool);

#endif /* GB_STACK_H */
