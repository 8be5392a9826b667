/* init.h -- the settings the runtime runs with, settled once (init.c).
 *
 * Options come from gb_init, else from the environment (GB_BLOCKS,
 * GB_GROW, GB_SMALL, GB_CACHE, GB_HUGE, GB_POPULATE), else from defaults
 * measured for this OS. Every entry point calls gb__ensure_init first, so
 * a program that never calls gb_init gets the defaults on first use.
 */
#ifndef GB_INIT_H
#define GB_INIT_H

#include "base.h"

/* The smallest block worth a mapping of its own: 16 KiB, the page size on
 * Apple Silicon, or the page size if larger. Mapping smaller blocks one at a
 * time would round each up to a page. */
#define GB__MAP_MIN (16 * GB__KIB)

/* The glibc mmap threshold a program build fixes (the article's 64 KiB). */
#define GB__FIXED_THRESHOLD (64 * GB__KIB)

/* Settled at init and read-only afterwards. */
typedef struct gb__config {
    gb_blocks blocks;     /* MAP or HEAP, never AUTO after init */
    gb_growth growth;     /* REMAP or COPY, never AUTO after init */
    size_t map_min;       /* smallest mapped block: max(GB__MAP_MIN, page) */
    size_t map_budget;
    size_t first_block;
    size_t block_cap;
    size_t huge;          /* huge page size chunks from it up are advised for; 0 off */
    bool populate_4k;     /* populate fresh chained blocks in 4 KiB pages (gb_populate) */
    bool populate_huge;   /* populate fresh chained blocks advised for huge pages */
    bool huge_learn;      /* GB_HUGE=auto: each huge-size block's kind is chosen by the
                             measured cost of the populate steps of each (map.c) */
    unsigned stress;
    bool small_slabs;     /* chunks under map_min from slabs (map source) */
    size_t cache_bytes;   /* the process's block cache bound; 0 when off */
    bool threshold_fixed; /* this init called mallopt */
} gb__config;

extern gb__config gb__cfg;
extern const int gb__program_build; /* 1 in the program build, 0 in the library (build_kind.c) */

/* Initialises on first use; cheap once done. gb__inited is 0 before, 1
 * while one thread initialises, 2 after. */
void gb__init_slow(void);
extern atomic_int gb__inited;
static inline void gb__ensure_init(void)
{
    if (GB__UNLIKELY(atomic_load_explicit(&gb__inited, memory_order_acquire) != 2))
        gb__init_slow();
}

#endif /* GB_INIT_H */
