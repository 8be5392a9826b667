/* abi.h -- how large each public struct was when its ABI began.
 *
 * giveback.h's structs only grow at their end (giveback.h, "The ABI"), and
 * their functions are told the size of the caller's struct. No caller's
 * struct is smaller than the struct was at 0.2.0, the first release with
 * sized calls: that size is the end of the last field it had then, which
 * fields appended later do not move. A smaller size is misuse
 * (gb__copy_out in error.c stops on it).
 */
#ifndef GB_ABI_H
#define GB_ABI_H

#include "giveback.h"

#include <stddef.h>

#define GB__LEAST(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
#define GB__OPTIONS_LEAST GB__LEAST(gb_options, huge)
#define GB__REGION_INFO_LEAST GB__LEAST(gb_region_info, pinned_by)
#define GB__STATS_LEAST GB__LEAST(gb_stats, bytes_huge)
#define GB__RESIDENT_LEAST GB__LEAST(gb_resident, anon_huge)

#endif /* GB_ABI_H */
