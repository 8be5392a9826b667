/* init_guest.h -- the one function of the guest library (init_guest.c). */
#ifndef GBT_INIT_GUEST_H
#define GBT_INIT_GUEST_H

#include "giveback.h"

/* Initialises giveback with a cache bound of cache_bytes (0: the
 * default), as a library's set-up function would, then allocates in a
 * region of its own and leaves it. Returns true when the bytes it wrote
 * read back. */
bool gbt_guest_start(size_t cache_bytes);

#endif
