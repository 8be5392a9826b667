/* stats.h -- the process-wide counters behind gb_stats (stats.c).
 *
 * One counter per field of GB_STATS_FIELDS but the setting, generated from
 * that list, so the public struct, these counters, the copy-out and every
 * test's "all given back" check cannot disagree on what is counted. Each is
 * updated with a relaxed atomic add next to the action it counts, never
 * estimated: the tests compare them for equality.
 */
#ifndef GB_STATS_H
#define GB_STATS_H

#include "base.h"

#define GB__COUNTER_GB_STAT_NOW(type, name) _Atomic(type) name;
#define GB__COUNTER_GB_STAT_KEPT(type, name) _Atomic(type) name;
#define GB__COUNTER_GB_STAT_SINCE(type, name) _Atomic(type) name;
#define GB__COUNTER_GB_STAT_SETTING(type, name)
#define GB__COUNTER(kind, type, name) GB__COUNTER_##kind(type, name)
typedef struct gb__counters {
    GB_STATS_FIELDS(GB__COUNTER)
} gb__counters;

extern gb__counters gb__stat;

#define GB__ADD(field, n) atomic_fetch_add_explicit(&gb__stat.field, (n), memory_order_relaxed)
#define GB__SUB(field, n) atomic_fetch_sub_explicit(&gb__stat.field, (n), memory_order_relaxed)

#endif /* GB_STATS_H */
