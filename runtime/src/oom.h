/* oom.h -- the process's handler for memory that cannot be had (oom.c).
 *
 * region.c asks it once per failed request, before the request fails
 * (gb_set_oom_handler in giveback.h says what the handler may do).
 */
#ifndef GB_OOM_H
#define GB_OOM_H

#include "base.h"

/* Calls the handler, if one is set and this thread is not running it
 * already, for a request of n bytes in region r (a handle) that failed
 * for `why`; true when it asks for the request to be tried again. */
bool gb__oom_handle(gb_region *r, size_t n, gb_oom_reason why);

#endif /* GB_OOM_H */
