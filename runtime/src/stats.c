/* stats.c -- the counters behind gb_stats, and the resident-size reader.
 *
 * The counters are updated where the memory moves (chunk.c, region.c,
 * arena.c); this file only copies them out. Nothing is estimated: the
 * tests compare these numbers for equality.
 */
#include "internal.h"

gb__counters gb__stat;

#define LOAD(f) atomic_load_explicit(&gb__stat.f, memory_order_relaxed)

void gb_stats_get(gb_stats *out)
{
    gb__ensure_init();
    *out = (gb_stats){
        .bytes_mapped = LOAD(bytes_mapped),
        .bytes_heap = LOAD(bytes_heap),
        .bytes_meta = LOAD(bytes_meta),
        .mappings = LOAD(mappings),
        .map_budget = gb__cfg.map_budget,
        .regions_live = LOAD(regions_live),
        .regions_retired = LOAD(regions_retired),
        .bytes_retired = LOAD(bytes_retired),
        .blocks_live = LOAD(blocks_live),
        .arenas_live = LOAD(arenas_live),
        .unmaps_pending = LOAD(unmaps_pending),
        .fallbacks_budget = LOAD(fallbacks_budget),
        .fallbacks_mmap = LOAD(fallbacks_mmap),
        .unmap_failures = LOAD(unmap_failures),
        .grows_remap = LOAD(grows_remap),
        .grows_copy = LOAD(grows_copy),
        .compactions = LOAD(compactions),
        .coros_live = LOAD(coros_live),
        .stacks_pooled = LOAD(stacks_pooled),
        .pin_words_scanned = LOAD(pin_words_scanned),
        .pin_probes = LOAD(pin_probes),
        .pin_tries = LOAD(pin_tries),
        .pin_tries_skipped = LOAD(pin_tries_skipped),
        .retirements = LOAD(retirements),
        .sweeps = LOAD(sweeps),
        .slabs = LOAD(slabs),
        .bytes_small = LOAD(bytes_small),
        .bytes_small_dirty = LOAD(bytes_small_dirty),
        .bytes_cached = LOAD(bytes_cached),
        .mappings_cached = LOAD(mappings_cached),
        .cache_hits = LOAD(cache_hits),
    };
}

int gb_resident_get(gb_resident *out)
{
    gb__ensure_init();
    *out = (gb_resident){0};
    return gb__os.resident(&out->rss, &out->footprint, &out->lazy_free);
}
