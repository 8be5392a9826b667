/* small.h -- chunks under a mapping's worth, from the runtime's slabs
 * (small.c).
 *
 * chunk.c asks here for a chunk smaller than gb__cfg.map_min when the
 * small-slab fix says so (fix/small_slab.c); a slab is a mapping of the
 * layer below (map.h), taken from and given back to the cache of the
 * thread that asks.
 */
#ifndef GB_SMALL_H
#define GB_SMALL_H

#include "list.h"
#include "map.h"

/* A slab is GB__SLAB_UNITS units of the runtime's page; its freed units
 * are emptied once they add up to GB__SLAB_RELEASE_BATCH bytes. */
#define GB__SLAB_UNITS 256
#define GB__SLAB_WORDS (GB__SLAB_UNITS / 64)
#define GB__SLAB_RELEASE_BATCH (64 * GB__KIB)

/* A slab. Invariants: a unit is in use iff its bit in used is set; a free
 * unit is dirty (its page may be resident) iff its bit in dirty is set; a
 * free unit that is not dirty was given back to the OS iff its bit in
 * released is set (the OS is told before it is used again, gb__os_reuse),
 * so no unit has two of the three bits; nused, ndirty and nreleased count
 * those bits; a slab with nused == 0 does not exist (it is given back at
 * once), and one holds fewer than GB__SLAB_RELEASE_BATCH bytes of dirty
 * units (the put that reaches it empties them). Every slab is on the list
 * of slabs (link), full ones after all the others; gb__stat.slabs counts
 * them, and gb__stat.bytes_small_dirty is the sum over all slabs of their
 * dirty units' bytes: freed memory that may still be resident. */
struct gb__slab {
    gb__list link;
    char *base;
    size_t size; /* of its mapping, which may be larger than its units (a cached block) */
    bool huge;   /* the mapping is a huge block taken from the cache, counted in bytes_huge */
    uint64_t used[GB__SLAB_WORDS];
    uint64_t dirty[GB__SLAB_WORDS];
    uint64_t released[GB__SLAB_WORDS];
    unsigned nused, ndirty, nreleased;
};

/* A chunk of at least n bytes from a slab; false when no slab could be had
 * (the caller then uses malloc). */
bool gb__small_get(gb__cache *cache, size_t n, gb__chunk *out);

/* Gives a SMALL chunk back to its slab; the slab goes back to the mapping
 * layer (into cache, or unmapped) with its last chunk. */
void gb__small_put(gb__cache *cache, gb__chunk c);

#if GB_CHECK
/* Slab s whole, by the invariants above that are its own (bits and counts,
 * units in use, dirty bytes under a batch, a mapping that holds its
 * units): stops naming the one broken. Returns its dirty units' bytes,
 * for gb__small_check's sum. The caller holds the slabs' lock. */
size_t gb__slab_check(const gb__slab *s);

/* The list of slabs, with the lock that guards it held until
 * gb__small_slabs_unlock: for gb__small_check (check.c), which walks it. */
const gb__list *gb__small_slabs_lock(void);
void gb__small_slabs_unlock(void);
#endif

#endif /* GB_SMALL_H */
