/* check.h -- the runtime's invariants, walked whole (check.c).
 *
 * The structs' comments state what each module keeps true; without a
 * build that checks them, only the tests and the fuzzer's model catch a
 * broken one, and only where it shows at the API, often long after the
 * operation that broke it. base.h says what each level of GB_CHECK
 * checks; this header is the deepest of it: checkers that walk a
 * thread's whole state (regions, their stacks and retired lists, the
 * pinning lists, the descriptor pages, the block cache, the address
 * index) and stop naming the first invariant they find broken. They only
 * read, and cost time linear in the state: the fuzzer calls
 * gb__check_current after every operation, tests call them directly, and
 * with GB_CHECK=2 the entry points call the bounded ones below after the
 * operations that change the most (a leave, a reset) and the thread's
 * exit calls gb__check_thread. The checkers of one module's own structs
 * live in that module, beside the code that keeps them (small.c's slabs,
 * map.c's block cache, index.c's tables, pin.c's stack summaries), so that
 * a module checks itself without calling up into this file.
 * Without GB_CHECK, check.c is not built: the shipped libraries hold none
 * of it.
 */
#ifndef GB_CHECK_H
#define GB_CHECK_H

#include "base.h"

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

/* The bounded checks of the boundaries (GB_CHECK=2, entry.c): r, just
 * entered by t's running context, is the innermost region of its stack,
 * whole, with its descriptor page; the innermost region of t's running
 * context, if any, after a leave or a reset. */
void gb__check_entered(const gb__thread *t, const gb_region *r);
void gb__check_top(const gb__thread *t);

/* All of the above over t's state (the slabs are the process's: not
 * these). */
void gb__check_thread(const gb__thread *t);

/* gb__check_thread over the calling thread's state, if it has one, and
 * gb__small_check: what the fuzz target calls after every operation. */
void gb__check_current(void);
#endif

#endif /* GB_CHECK_H */
