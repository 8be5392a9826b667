/* stats.c -- the counters behind gb_stats, and the resident-size reader.
 *
 * The counters are updated where the memory moves (map.c, chunk.c,
 * small.c, region.c, arena.c); this file only copies them out. Nothing is estimated: the
 * tests compare these numbers for equality.
 */
#include "abi.h"
#include "init.h"
#include "os/os.h"
#include "stats.h"

#include <stddef.h>

gb__counters gb__stat;

/* The public struct is written out for its readers; it must be exactly
 * the list, field for field. */
#define GB__MIRROR(kind, type, name) type name;
typedef struct gb__stats_mirror {
    GB_STATS_FIELDS(GB__MIRROR)
} gb__stats_mirror;
#define GB__SAME_OFFSET(kind, type, name)                                                       \
    _Static_assert(offsetof(gb_stats, name) == offsetof(gb__stats_mirror, name),                 \
                   "gb_stats." #name " is not where GB_STATS_FIELDS puts it");
GB_STATS_FIELDS(GB__SAME_OFFSET)
_Static_assert(sizeof(gb_stats) == sizeof(gb__stats_mirror), "gb_stats has fields GB_STATS_FIELDS lacks");

#define GB__LOAD_GB_STAT_NOW(name) out->name = atomic_load_explicit(&gb__stat.name, memory_order_relaxed);
#define GB__LOAD_GB_STAT_KEPT(name) GB__LOAD_GB_STAT_NOW(name)
#define GB__LOAD_GB_STAT_SINCE(name) GB__LOAD_GB_STAT_NOW(name)
#define GB__LOAD_GB_STAT_SETTING(name)
#define GB__LOAD(kind, type, name) GB__LOAD_##kind(name)

void gb_stats_get_sized(gb_stats *caller, size_t size)
{
    gb__ensure_init();
    gb_stats all, *out = &all;
    GB_STATS_FIELDS(GB__LOAD)
    /* The counters hold cached blocks in bytes_mapped and mappings too
     * (map.c, gb__map_count_cached); gb_stats does not. Read while other
     * threads move blocks, the cached figure may be from a moment with
     * more in the cache than the mapped one: such a reading is 0, never a
     * wrapped-around size. */
    out->bytes_mapped = out->bytes_mapped > out->bytes_cached ? out->bytes_mapped - out->bytes_cached : 0;
    out->mappings = out->mappings > out->mappings_cached ? out->mappings - out->mappings_cached : 0;
    out->map_budget = gb__cfg.map_budget;
    gb__copy_out("gb_stats_get", caller, size, &all, sizeof all, GB__STATS_LEAST);
}

static int resident_get(gb_resident *out);

int gb_resident_get_sized(gb_resident *caller, size_t size)
{
    gb_resident all;
    int rc = resident_get(&all);
    gb__copy_out("gb_resident_get", caller, size, &all, sizeof all, GB__RESIDENT_LEAST);
    return rc;
}

static int resident_get(gb_resident *out)
{
    gb__ensure_init();
    *out = (gb_resident){0};
    if (gb__os.resident(out) != 0) {
        *out = (gb_resident){0};
        return -1;
    }
    /* The OS samples its peak (Linux updates VmHWM lazily), so a reading
     * may lag the size read with it, or an earlier reading: the peak
     * answered is the most of every size and peak read so far. */
    static _Atomic(size_t) most;
    size_t seen = out->peak > out->rss ? out->peak : out->rss;
    size_t was = atomic_load_explicit(&most, memory_order_relaxed);
    while (was < seen && !atomic_compare_exchange_weak_explicit(&most, &was, seen, memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
    out->peak = seen > was ? seen : was;
    return 0;
}
