/* stack.h -- coroutine stacks: mapped, guarded, pooled (stack.c). */
#ifndef GB_STACK_H
#define GB_STACK_H

#include "coro.h"
#include "thread.h"

/* Gives c a stack of `size` usable bytes: a pooled one, a mapping with a
 * PROT_NONE guard below (counted as two mappings), or, past the budget or
 * when mmap fails, malloc'd memory without a guard (counted as a
 * fallback). Sets c->stack, stack_lo, stack_hi and guard_size. */
void gb__stack_get(gb_coro *c, size_t size);

/* Gives c's stack back: into its thread's pool (emptied first) when it has
 * the default size and the pool has room, else to the OS. */
void gb__stack_put(gb_coro *c);

/* Unmaps the stacks t's pool keeps (gb_sweep, thread exit). */
void gb__stack_pool_trim(gb__thread *t);

#endif /* GB_STACK_H */
