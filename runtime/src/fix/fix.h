/* fix.h -- every seam of the fixes, and what the fix files may use.
 *
 * Each fix is one file in runtime/src/fix/, whole: it defines the functions
 * listed under its name in the seam headers, and the poison that takes it
 * out (poisons/) defines the same functions with the old behaviour; CMake
 * links one or the other into each build. The rest of the runtime reaches
 * a fix only through these seams.
 *
 * A fix file, and a poison, includes this header alone: the union of the
 * seam headers. It may call the functions of pin.c listed in
 * seam_pin.h, besides the general facilities of the headers included
 * here (gb__cfg, gb__os and the OS layer, gb__die, the counters,
 * gb__region_contains) and read the structs they declare; only pin.c changes the retired lists and
 * witnesses. Whatever a poison needs beyond that lives in the poison: the
 * shipped libraries hold no poison code (tests/install/check_no_poison.cmake).
 */
#ifndef GB_FIX_H
#define GB_FIX_H

#include "../arena.h"
#include "../init.h"
#include "../os/os.h"
#include "../stats.h"
#include "../seam_arena.h"
#include "../seam_handoff.h"
#include "../seam_mem.h"
#include "../seam_pin.h"

/* ------------------------------------------------------------------ seams
 *
 * Each layer that calls a fix includes the seam header of its layer alone,
 * so that its include lines stay its dependencies:
 *   - seam_mem.h: the memory layers (map.c, small.c, chunk.c, stack.c,
 *     init.c): block_map, small_slab, cache_bound, give_back, threshold;
 *   - seam_arena.h: arena.c: arena_bind;
 *   - seam_pin.h: pin.c: pin_check and retry, and the mechanism of
 *     pin.c those two may call;
 *   - seam_handoff.h: pin.c, gb_enter, gb_sweep and thread exit:
 *     handoff_free, and what of handle.c and region.c it may call. */

#endif /* GB_FIX_H */
