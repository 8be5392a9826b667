/* seam_pin.h -- the seams of the fixes pin.c calls, and what of pin.c
 * those fixes may call.
 *
 * The fixes of pinning work where pin.c does: on frozen-stack records and
 * a thread's pinning slice (pin.h), never on coroutines or threads, which
 * sit above them. fix/fix.h says how a fix and its poison define the
 * functions below.
 */
#ifndef GB_SEAM_PIN_H
#define GB_SEAM_PIN_H

#include "pin.h"

/* fix/pin_check.c (poison unpinned-free): the frozen stack of p's thread
 * that points into r, or NULL when r may be freed. Called by pin.c when a
 * region is left and when a retired one is tried, on a synced frozen list
 * (gb__pin_frozen_sync). */
gb__frozen *gb__fix_pinner(gb__pins *p, gb_region *r);

/* fix/retry.c (poison quadratic-walk): which retired regions of p's thread
 * a retry tries (each through gb__pin_try, handed run). Called by pin.c
 * (gb__pin_retry) when the thread has retired regions. */
void gb__fix_retry(gb__pins *p, gb__frozen *run);

/* fix/retry.c (poison quadratic-walk): whether frozen stack f holds a word
 * pointing into r, the question a try asks each stack. Called by the pin
 * check. */
bool gb__fix_frozen_points_into(gb__frozen *f, const gb_region *r);

/* ------------------------------------------------- pin.c, for the fixes */

/* pin.c: tries retired region r of p's thread now: frees it, or records
 * the stack pinning it (gb__fix_pinner, then the running stack run's live
 * words, run NULL on the thread's own stack) as its witness. */
void gb__pin_try(gb__pins *p, gb__frozen *run, gb_region *r);

/* pin.c: the words of frozen stack f, [sp, hi), saved registers included:
 * sets *words, returns their number. A caller reads them without ASan's
 * checks (GB__NO_ASAN, sanitizers.h): frames below a suspended
 * coroutine's sp hold redzones. */
size_t gb__pin_frozen_words(const gb__frozen *f, const uintptr_t **words);

#endif /* GB_SEAM_PIN_H */
