/* reset.h -- the blocks gb_region_reset keeps for a region (reset.c). */
#ifndef GB_RESET_H
#define GB_RESET_H

#include "region.h"

/* The first kept block of r whose payload holds a bytes, taken off the
 * kept list and counted as one of r's blocks again (solo or chained), or
 * NULL. */
gb__block *gb__reset_take(gb_region *r, size_t a, bool solo);

/* Gives back the kept blocks of r beyond the first `keep` bytes of them
 * (all with 0: when r is freed). */
void gb__reset_trim(gb_region *r, size_t keep);

#endif /* GB_RESET_H */
