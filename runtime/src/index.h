/* index.h -- which block or arena of this thread holds an address, in
 * constant expected time (index.c).
 *
 * gb_region_of, gb_realloc and gb_realloc_in ask "whose memory is this
 * pointer?" for any pointer, region memory or not; a free hook asks it on
 * every free. Walking the thread's regions and their blocks made that cost
 * grow with both (110 µs with 4,096 blocks and 2,000 regions). The index
 * answers from a hash of the pointer's 64 KiB granule instead.
 *
 * Each thread indexes its own blocks and arenas (regions are per thread,
 * and so is the question): no lock, and nothing another thread can free
 * under a reader. A range [base, base + size) is entered once for every
 * granule it touches, with a value that names it (a tagged pointer, below)
 * and the part of the granule it covers; the entries of one granule are
 * the candidates a lookup checks, so a lookup costs a probe sequence in
 * each of two tables (below),
 * reading nothing but the table: a granule is shared only by ranges
 * smaller than it, or by the two ends of ranges that meet in it.
 *   - slots holds cap entries (a power of two, or 0 and NULL before the
 *     first entry), open addressing with linear probing; key 0 is an empty
 *     slot, else granule + 1; every entry lies in the probe run from its
 *     home slot (no empty slot between the two), and no granule is
 *     entered twice for one value;
 *   - count entries are in use, at most half of cap;
 *   - slots is small, inside the thread's state, until more entries are
 *     needed; then a table of its own, larger, a mapping taken through
 *     the OS table (from malloc when that is refused; index.c says why),
 *     counted in bytes_meta, which goes back when the table empties and
 *     slots is small again (cap GB__INDEX_INLINE, and only then).
 * gb__index_check reads all of it.
 */
#ifndef GB_INDEX_H
#define GB_INDEX_H

#include "base.h"

/* An entry: a granule (key), the range that touches it (val), the part of
 * the granule the range covers (offsets [lo, hi) from the granule's
 * start), and, for a block, the region it belongs to (owner). All a
 * lookup needs is in the entry, so it reads one slot and nothing of the
 * block itself: one memory access, where blocks are many and their
 * headers are each on a page of their own. */
typedef struct gb__index_slot {
    uintptr_t key;
    uintptr_t val;
    void *owner;
    uint32_t lo, hi;
} gb__index_slot;

#define GB__INDEX_INLINE 64

/* One table of entries, for one granule size (1 << shift bytes). */
typedef struct gb__index_table {
    gb__index_slot *slots;
    size_t cap;
    size_t count;
    unsigned shift;
    bool mapped; /* slots is a mapping of its own (index.c) */
    /* The first table, in the thread's state: a thread with a few blocks
     * (most threads, most of the time) never allocates one, and entering
     * and leaving a region costs no malloc. */
    gb__index_slot small[GB__INDEX_INLINE];
} gb__index_table;

/* Two tables: ranges of 1 MiB or more in granules of 1 MiB, the rest in
 * granules of 64 KiB, so that a 64 MiB block takes 65 entries, not 1,025
 * (a lookup asks both). */
typedef struct gb__index {
    gb__index_table fine, coarse;
} gb__index;

/* What a value names: its low bits say which. */
#define GB__INDEX_BLOCK ((uintptr_t)0) /* a gb__block * */
#define GB__INDEX_ARENA ((uintptr_t)1) /* a gb__arena * */
#define GB__INDEX_TAG ((uintptr_t)7)

/* Makes room for a range of size bytes, so that the next gb__index_add of
 * one cannot fail; false, with nothing changed, when the larger table
 * cannot be had (a region's block is then refused like any other). */
bool gb__index_reserve(gb__index *ix, size_t size);

/* The same room in two steps, for a caller that must also get the range
 * itself and may fail to: gb__index_prepare takes the larger table the
 * range would need (false, with nothing changed, when it cannot be had)
 * without putting it in place; then, once it returned true,
 * gb__index_commit puts it in place (it cannot fail), or
 * gb__index_abandon gives it back, and the index is as it was. Nothing may be added to or removed from the index between
 * the two. A refused growth of a solo block (region.c) leaves the index
 * exactly as it found it this way, though the table it would have needed
 * could be had. */
typedef struct gb__index_grow {
    gb__index_table *table;
    gb__index_slot *slots; /* the larger table, or the one in place when it has room */
    size_t cap;
    bool mapped;
} gb__index_grow;

bool gb__index_prepare(gb__index *ix, size_t size, gb__index_grow *g);
void gb__index_commit(gb__index_grow *g);
void gb__index_abandon(gb__index_grow *g);

/* Enters the range [base, base + size) with value val and owner; stops
 * the process when the table cannot grow and gb__index_reserve was not
 * asked first. */
void gb__index_add(gb__index *ix, const void *base, size_t size, uintptr_t val, void *owner);

/* Sets the owner of what gb__index_add entered for the range and value. */
void gb__index_set_owner(gb__index *ix, const void *base, size_t size, uintptr_t val, void *owner);

/* Removes what gb__index_add entered for the same range and value. */
void gb__index_remove(gb__index *ix, const void *base, size_t size, uintptr_t val);

/* The value of the range that holds p, or 0 when none does; *owner its
 * owner. */
uintptr_t gb__index_find(const gb__index *ix, const void *p, void **owner);

/* At thread exit: gives the tables back, whatever they hold (the regions
 * of coroutines a thread never freed stay, and no thread can ask about
 * them any more); ix is not used again. A table that comes to hold
 * nothing before then is given back at once (gb__index_remove), so a
 * sweep has none to give back. */
void gb__index_release(gb__index *ix);

#if GB_CHECK
/* Stops the process, naming the invariant, when one of ix's tables breaks
 * what this header says of it: slots NULL exactly when cap is 0, cap a
 * power of two of at least GB__INDEX_INLINE and that one exactly for the
 * thread's own table, which is no mapping, granules of the table's own
 * size, each entry a part [lo, hi) of its granule with a value tagged as a
 * block or an arena, in the probe run from its home and not entered twice,
 * count the slots in use and at most half of cap. Only reads; time linear
 * in the tables at the load they keep (check.h). */
void gb__index_check(const gb__index *ix);
#endif

#endif /* GB_INDEX_H */
