/* check.h -- the runtime's invariants, checked while it runs (check.c).
 *
 * The structs' comments state what each module keeps true; without a
 * build that checks them, only the tests and the fuzzer's model catch a
 * broken one, and only where it shows at the API, often long after the
 * operation that broke it. A build with GB_CHECK=1 (CMake's GB_CHECK
 * option: on for Debug builds and the fuzz builds, off otherwise) checks
 * them at two depths:
 *   - GB__ASSERT(cond) at the places where an invariant is established or
 *     relied on: a failed one stops the process through gb__die, naming
 *     the file, line, function and expression;
 *   - the checkers below walk a thread's whole state (regions, their
 *     stacks and retired lists, the pinning lists, the descriptor pages,
 *     the block cache) and stop naming the first invariant they find
 *     broken. They only read, and cost time linear in the state: the
 *     fuzzer calls gb__check_current after every operation, tests call
 *     them directly.
 * Without GB_CHECK, GB__ASSERT compiles to nothing (its expression is not
 * evaluated, and names used only there still count as used) and check.c
 * is not built: the shipped libraries hold none of it.
 */
#ifndef GB_CHECK_H
#define GB_CHECK_H

#include "base.h"

#ifndef GB_CHECK
#define GB_CHECK 0
#endif

#if GB_CHECK
/* Stops the process: "giveback: assertion failed: file:line: func: expr". */
GB__NORETURN void gb__assert_fail(const char *file, int line, const char *func, const char *expr);
#define GB__ASSERT(cond)                                                                             \
    (GB__LIKELY(cond) ? (void)0 : gb__assert_fail(__FILE__, __LINE__, __func__, #cond))
#else
/* sizeof does not evaluate its operand, but the operand's names are used. */
#define GB__ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#if GB_CHECK
typedef struct gb__thread gb__thread;
typedef struct gb__rstack gb__rstack;

/* Each stops the process, naming the invariant, when one of t's does not
 * hold; t must be the calling thread's state (the checks decode handles
 * and look blocks up in the thread's own directory entries and index). */

/* r, a region of t: its blocks, bump pointer, last allocation, counts,
 * kept blocks, arenas, state and handle. `on` is the stack it must be on
 * when LIVE (NULL for a RETIRED one). */
void gb__region_check(const gb__thread *t, const gb_region *r, const gb__rstack *on);

/* Every region stack of t (the thread's own, the running coroutine's and
 * each frozen coroutine's): parent chains, depths, and each region on it. */
void gb__stacks_check(const gb__thread *t);

/* t's block cache: each list's blocks and the byte count, t's share and
 * the process's cached bytes within the bound. */
void gb__chunk_check(const gb__thread *t);

/* The pinning lists: frozen coroutines, the running one's chain of
 * resumers, the retired lists, witnesses and their witnessed lists. */
void gb__pin_check(const gb__thread *t);

/* t's descriptor pages (those with a free slot, the spare, and those
 * holding t's regions): slot states, free lists, counts, generations,
 * and that each used slot's handle decodes to it. */
void gb__handle_check(const gb__thread *t);

/* Every slab of the process (small.h, struct gb__slab): its bits and
 * counts, its place on the list of slabs, and the counters of slabs and
 * dirty bytes. Takes the slabs' lock. */
void gb__small_check(void);

/* All of the above over t's state (the slabs are the process's: not
 * these). */
void gb__check_thread(const gb__thread *t);

/* gb__check_thread over the calling thread's state, if it has one, and
 * gb__small_check: what the fuzz target calls after every operation. */
void gb__check_current(void);
#endif

#endif /* GB_CHECK_H */
