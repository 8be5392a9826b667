/* seam_handoff.h -- the seams of the fix that frees a region handed over
 * from another thread (fix/handoff_free.c), and what of handle.c and
 * region.c that fix and its poison may call.
 *
 * pin.c frees a region through gb__fix_free_lent when it was handed over
 * (r->lent); gb_enter and gb_sweep call gb__fix_collect when other threads
 * have given this thread something back. fix/fix.h says how
 * a fix and its poison define these functions.
 */
#ifndef GB_SEAM_HANDOFF_H
#define GB_SEAM_HANDOFF_H

#include "handle.h"
#include "region.h"

/* fix/handoff_free.c (poison owner-frees): frees r, a lent region that
 * the running thread held and has left, whose descriptor is on a page of
 * another thread (or is in flight's: handle.c). Called by pin.c where it
 * would free any region. */
void gb__fix_free_lent(gb_region *r);

/* fix/handoff_free.c (poison owner-frees): takes back what other threads
 * gave the thread whose memory is m (its slots freed elsewhere:
 * gb__handle_collect). Called by gb_enter when m->dpending is set, and by
 * gb_sweep; at thread exit, gb__handle_at_exit takes them back itself. */
void gb__fix_collect(gb__mem *m);

#endif /* GB_SEAM_HANDOFF_H */
