/* seam_pin.h -- the seams of the fixes pin.c calls, and what of pin.c
 * those fixes may call.
 *
 * pin.c is the first layer that knows coroutines and threads: a retired
 * region's witness is a coroutine, its lists are the thread's. fix/fix.h
 * says how a fix and its poison define the functions below.
 */
#ifndef GB_SEAM_PIN_H
#define GB_SEAM_PIN_H

#include "coro.h"
#include "thread.h"

/* fix/pin_check.c (poison unpinned-free): the frozen coroutine of thread t
 * whose stack points into r, or NULL when r may be freed. Called by pin.c
 * when a region is left and when a retired one is tried. */
gb_coro *gb__fix_pinner(gb__thread *t, gb_region *r);

/* fix/retry.c (poison quadratic-walk): which retired regions of t a retry
 * tries (each through gb__pin_try). Called by pin.c (gb__pin_retry) when t
 * has retired regions. */
void gb__fix_retry(gb__thread *t);

/* fix/retry.c (poison quadratic-walk): whether frozen coroutine c's stack
 * holds a word pointing into r, the question a try asks each coroutine.
 * Called by the pin check. */
bool gb__fix_coro_points_into(gb_coro *c, const gb_region *r);

/* ------------------------------------------------- pin.c, for the fixes */

/* pin.c: tries retired region r of t now: frees it, or records the
 * coroutine pinning it (gb__fix_pinner, then the running coroutine's live
 * stack) as its witness. */
void gb__pin_try(gb__thread *t, gb_region *r);

/* pin.c: the words of frozen coroutine c's stack, [sp, stack.hi), saved
 * registers included: sets *words, returns their number. A caller reads
 * them without ASan's checks (GB__NO_ASAN, sanitizers.h): frames below a
 * suspended coroutine's sp hold redzones. */
size_t gb__pin_frozen_words(const gb_coro *c, const uintptr_t **words);

#endif /* GB_SEAM_PIN_H */
