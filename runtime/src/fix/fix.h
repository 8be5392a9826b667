/* fix.h -- the seams of the fixes, and the mechanism the fix files use.
 *
 * Each fix is one file in runtime/src/fix/, whole: it defines the functions
 * listed under its name below, and the poison that takes it out
 * (poisons/) defines the same functions with the old behaviour; CMake links
 * one or the other into each build. The rest of the runtime reaches a fix
 * only through these seams.
 *
 * A fix file, and a poison, includes this header alone. It may call the
 * functions under "Mechanism" at the end, besides the general facilities
 * of the headers included here (gb__cfg, gb__os and the OS layer,
 * gb__self, gb__die, the counters, gb__region_contains) and read the
 * structs they declare; only pin.c changes the retired lists and
 * witnesses. Whatever a poison needs beyond that lives in the poison: the
 * shipped libraries hold no poison code (tests/install/check_no_poison.cmake).
 */
#ifndef GB_FIX_H
#define GB_FIX_H

#include "../arena.h"
#include "../coro.h"
#include "../init.h"
#include "../os/os.h"
#include "../stats.h"
#include "../thread.h"
#include "seam_mem.h"

/* ------------------------------------------------------------------ seams */

/* The memory layers' seams (fix/block_map.c, fix/small_slab.c,
 * fix/cache_bound.c, fix/give_back.c, fix/threshold.c) are in
 * fix/seam_mem.h, included above. */

/* fix/arena_bind.c (poison unbound-map-arena): binds a newly opened arena
 * to the region holding its container's struct (onto holder's list of
 * arenas, given back with it), and unbinds it when it is closed. Called by
 * arena.c. */
void gb__fix_arena_bind(gb_region *holder, gb__arena *a);
void gb__fix_arena_unbind(gb__arena *a);

/* fix/pin_check.c (poison unpinned-free): the frozen coroutine of this
 * thread whose stack points into r, or NULL when r may be freed. Called by
 * pin.c when a region is left and when a retired one is tried. */
gb_coro *gb__fix_pinner(gb_region *r);

/* fix/retry.c (poison quadratic-walk): which retired regions of t a retry
 * tries (each through gb__pin_try). Called by pin.c (gb__pin_retry) when t
 * has retired regions. */
void gb__fix_retry(gb__thread *t);

/* fix/retry.c (poison quadratic-walk): whether frozen coroutine c's stack
 * holds a word pointing into r, the question a try asks each coroutine.
 * Called by the pin check. */
bool gb__fix_coro_points_into(gb_coro *c, const gb_region *r);

/* -------------------------------------------------------------- mechanism */

/* pin.c: tries retired region r of t now: frees it, or records the
 * coroutine pinning it (gb__fix_pinner, then the running coroutine's live
 * stack) as its witness. */
void gb__pin_try(gb__thread *t, gb_region *r);

/* pin.c: the words of frozen coroutine c's stack, [sp, stack_hi), saved
 * registers included: sets *words, returns their number. A caller reads
 * them without ASan's checks (GB__NO_ASAN, sanitizers.h): frames below a
 * suspended coroutine's sp hold redzones. */
size_t gb__pin_frozen_words(const gb_coro *c, const uintptr_t **words);

#endif /* GB_FIX_H */
