/* index.c -- the address index: a granule's ranges, by hash
 * (index.h says what it holds and why).
 */
#include "index.h"
#include "map.h"
#include "os/os.h"
#include "stats.h"

#include <stdlib.h>
#include <string.h>

/* 64 KiB granules for ranges under 1 MiB: small ones (slab chunks, the
 * first blocks of a chain) share a granule with few others; 1 MiB
 * granules for the rest, so that a 64 MiB block takes 65 entries. */
#define FINE_SHIFT 16
#define COARSE_SHIFT 20
#define COARSE_MIN ((size_t)1 << COARSE_SHIFT)

static gb__index_table *table_for(gb__index *ix, size_t size)
{
    gb__index_table *t = size >= COARSE_MIN ? &ix->coarse : &ix->fine;
    if (!t->shift)
        t->shift = size >= COARSE_MIN ? COARSE_SHIFT : FINE_SHIFT;
    /* A range's size says its table, and each table keeps one granule
     * size: a range of 1 MiB is never entered in 64 KiB granules. */
    GB__ASSERT(t->shift == (size >= COARSE_MIN ? COARSE_SHIFT : FINE_SHIFT));
    return t;
}

static size_t home(const gb__index_table *ix, uintptr_t key)
{
    /* The mask below is a modulo only for a power of two. */
    GB__ASSERT(ix->cap && (ix->cap & (ix->cap - 1)) == 0);
    /* Fibonacci hashing: neighbouring granules, the common case, spread
     * over the table. */
    return (size_t)((key * (uintptr_t)0x9E3779B97F4A7C15ull) >> 32) & (ix->cap - 1);
}

/* Enters e in the first empty slot of its probe run. */
static void put(gb__index_table *ix, const gb__index_slot *e)
{
    /* The probe below ends only because an empty slot is left: the load
     * stays at half at most (gb__index_prepare made the room). */
    GB__ASSERT(e->key && (ix->count + 1) * 2 <= ix->cap);
    size_t i = home(ix, e->key);
    while (ix->slots[i].key)
        i = (i + 1) & (ix->cap - 1);
    ix->slots[i] = *e;
    ix->count++;
}

#if GB_CHECK
/* ------------------------------------------------------------- checks
 *
 * The invariants of index.h, read: each table's shape, each entry's part
 * of its granule and its place in its probe run, and the count and load.
 * The checker only reads, and walks each entry's run from its home: what
 * a lookup of every entry costs, linear in the table at the load it
 * keeps. */

/* The checkers' condition (base.h). */
#define EXPECT GB__EXPECT

/* The entry in slot i of t (a table whose shape table_check found sound):
 * a part [lo, hi) of its granule, a value that names a block or an arena,
 * and reachable from its home, with no empty slot before it on the way
 * and no earlier entry of the same granule and value. */
static void entry_check(const gb__index_table *t, const char *name, size_t i)
{
    const gb__index_slot *e = &t->slots[i];
    uint32_t granule = (uint32_t)1 << t->shift;
    EXPECT(e->lo < e->hi && e->hi <= granule,
           "the %s index table: slot %zu (granule %#jx) covers [%u, %u), not a part of its %u-byte granule", name,
           i, (uintmax_t)(e->key - 1), e->lo, e->hi, granule);
    uintptr_t tag = e->val & GB__INDEX_TAG;
    EXPECT(tag == GB__INDEX_BLOCK || tag == GB__INDEX_ARENA,
           "the %s index table: slot %zu holds value %#jx, whose tag %ju names neither a block nor an arena", name,
           i, (uintmax_t)e->val, (uintmax_t)tag);
    size_t h = home(t, e->key);
    for (size_t j = h; j != i; j = (j + 1) & (t->cap - 1)) {
        EXPECT(t->slots[j].key, "the %s index table: slot %zu (granule %#jx) lies past the empty slot %zu of its "
               "probe run from slot %zu, where no lookup reaches it", name, i, (uintmax_t)(e->key - 1), j, h);
        EXPECT(t->slots[j].key != e->key || t->slots[j].val != e->val,
               "the %s index table: slots %zu and %zu both hold granule %#jx for value %#jx", name, j, i,
               (uintmax_t)(e->key - 1), (uintmax_t)e->val);
    }
}

/* Table t whole (index.h): slots NULL exactly when cap is 0; cap a power
 * of two of at least GB__INDEX_INLINE, and that one exactly when slots is
 * the thread's own table, which is no mapping; granules of its own size;
 * every entry sound; count its entries, at most half of cap. */
static void table_check(const gb__index_table *t, const char *name, unsigned shift)
{
    EXPECT(!t->slots == !t->cap, "the %s index table: slots %p with cap %zu (NULL exactly when cap is 0)", name,
           (void *)t->slots, t->cap);
    EXPECT(!t->cap || (t->cap >= GB__INDEX_INLINE && (t->cap & (t->cap - 1)) == 0),
           "the %s index table: cap %zu is not a power of two of at least %d", name, t->cap, GB__INDEX_INLINE);
    EXPECT(!t->cap || (t->slots == t->small) == (t->cap == GB__INDEX_INLINE),
           "the %s index table: cap %zu %s the thread's own table (which holds %d entries, and only it)", name,
           t->cap, t->slots == t->small ? "in" : "outside", GB__INDEX_INLINE);
    EXPECT(!(t->mapped && t->slots == t->small), "the %s index table: the thread's own table is taken for a mapping",
           name);
    EXPECT(!t->cap || t->shift == shift, "the %s index table: granules of 2^%u bytes, not 2^%u", name, t->shift,
           shift);
    size_t used = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].key) {
            used++;
            entry_check(t, name, i);
        }
    EXPECT(used == t->count, "the %s index table: count is %zu, but %zu of its %zu slots are in use", name,
           t->count, used, t->cap);
    EXPECT(t->count * 2 <= t->cap, "the %s index table holds %zu entries in %zu slots, more than half full", name,
           t->count, t->cap);
}

void gb__index_check(const gb__index *ix)
{
    table_check(&ix->fine, "fine", FINE_SHIFT);
    table_check(&ix->coarse, "coarse", COARSE_SHIFT);
}
#endif

#if GB_CHECK >= 2
static const char *name_of(const gb__index_table *t)
{
    return t->shift == COARSE_SHIFT ? "coarse" : "fine";
}

/* After an entry of granule key - 1 for val: it is in the run from its
 * home, and sound there. Bounded by that run. */
static void added_check(const gb__index_table *t, uintptr_t key, uintptr_t val)
{
    size_t i = home(t, key);
    while (t->slots[i].key && !(t->slots[i].key == key && t->slots[i].val == val))
        i = (i + 1) & (t->cap - 1);
    EXPECT(t->slots[i].key, "the %s index table: granule %#jx of value %#jx is in no slot of its run once entered",
           name_of(t), (uintmax_t)(key - 1), (uintmax_t)val);
    entry_check(t, name_of(t), i);
}

/* After a removal that emptied slot i: the rest of the run from i, where
 * take_out may have moved entries back and left one hole, is sound (each
 * entry reachable from its home and the rest of entry_check), and the
 * granule and value removed are in no slot of their run. Bounded by those
 * two runs, not the table. */
static void removed_check(const gb__index_table *t, size_t i, uintptr_t key, uintptr_t val)
{
    size_t mask = t->cap - 1;
    /* The run ended at an empty slot, and the removal made one more in
     * it: the walk stops at the second. */
    for (int empty = 0; empty < 2; i = (i + 1) & mask) {
        if (!t->slots[i].key)
            empty++;
        else
            entry_check(t, name_of(t), i);
    }
    for (size_t j = home(t, key); t->slots[j].key; j = (j + 1) & mask)
        EXPECT(t->slots[j].key != key || t->slots[j].val != val,
               "the %s index table: granule %#jx of value %#jx is still in slot %zu after its removal", name_of(t),
               (uintmax_t)(key - 1), (uintmax_t)val, j);
}
#endif

/* A table past the one in the thread's state is a mapping of its own.
 * From malloc, a table freed would leave a hole in malloc's heap that the
 * host's next small allocation fills, below the top where it would have
 * kept the heap from trimming (which the small-regions gate relies on to
 * catch the malloc-back poison), a large one would raise glibc's mmap
 * threshold in a library build (the article's fault), and under ASan it
 * would wait in the quarantine, resident. It is mapped through the OS
 * table and leaves by map.c's one way out (gb__map_unmap_meta), as every
 * mapping does, so a test's fake OS sees and may refuse it, and a failed
 * munmap empties it and unmaps it later instead of leaving it behind. It
 * counts in bytes_meta, the mapping's bytes, not among the runtime's
 * mappings: at most two a thread, outside the mapping budget. A table
 * whose mapping is refused comes from malloc instead, counted in
 * bytes_meta too and freed when it goes: a block is not refused for that,
 * and nothing is lost but the heap's trouble above, for that one table. */
static size_t table_bytes(size_t cap, bool mapped)
{
    size_t bytes = cap * sizeof(gb__index_slot);
    return mapped ? gb__round_up(bytes, gb__os.page_size) : bytes;
}

static gb__index_slot *table_new(size_t cap, bool *mapped)
{
    /* Only a table larger than the thread's own is ever taken. */
    GB__ASSERT(cap > GB__INDEX_INLINE && (cap & (cap - 1)) == 0);
    void *p = gb__os.map(table_bytes(cap, true), gb__os.page_size); /* a fresh mapping is zero */
    *mapped = p != NULL;
    if (!p)
        p = calloc(cap, sizeof(gb__index_slot));
    if (p)
        GB__ADD(bytes_meta, table_bytes(cap, *mapped));
    return p;
}

static void table_free(gb__index_slot *slots, size_t cap, bool mapped)
{
    /* The thread's own table is never given back, and a mapping is one
     * whole range from its first page. */
    GB__ASSERT(cap > GB__INDEX_INLINE);
    GB__ASSERT(!mapped || ((uintptr_t)slots & (gb__os.page_size - 1)) == 0);
    if (mapped) {
        gb__map_unmap_meta(slots, table_bytes(cap, true));
        return;
    }
    GB__SUB(bytes_meta, table_bytes(cap, false));
    free(slots);
}

/* The most granules of t a range of size bytes touches. */
static size_t span(const gb__index_table *t, size_t size)
{
    return (size >> t->shift) + 2;
}

bool gb__index_prepare(gb__index *index, size_t size, gb__index_grow *g)
{
    gb__index_table *ix = table_for(index, size);
    size_t need = ix->count + span(ix, size);
    /* The table in place, when it has the room: commit and abandon then
     * find nothing to put in place or to give back. */
    *g = (gb__index_grow){.table = ix, .slots = ix->slots, .cap = ix->cap, .mapped = ix->mapped};
    if (need * 2 <= ix->cap)
        return true;
    size_t cap = ix->cap ? ix->cap : GB__INDEX_INLINE;
    while (need * 2 > cap)
        cap *= 2;
    g->cap = cap;
    if (cap == GB__INDEX_INLINE) {
        /* Only before the first entry: the table in the thread's state,
         * zero and unused so far, costs nothing to take. */
        GB__ASSERT(!ix->slots && ix->count == 0);
        g->slots = ix->small; /* g->mapped is false, as ix's is before its first table */
        return true;
    }
    g->slots = table_new(cap, &g->mapped);
    return g->slots != NULL;
}

void gb__index_commit(gb__index_grow *g)
{
    gb__index_table *ix = g->table;
    if (g->slots == ix->slots)
        return;
    /* A table put in place is larger than the one it replaces, so every
     * entry of the old one fits at half the load. */
    GB__ASSERT(g->cap > ix->cap && ix->count * 2 <= g->cap / 2);
    gb__index_slot *old = ix->slots;
    size_t old_cap = ix->cap, old_count = ix->count;
    bool old_mapped = ix->mapped;
    ix->slots = g->slots;
    ix->cap = g->cap;
    ix->mapped = g->mapped;
    ix->count = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key)
            put(ix, &old[i]);
    /* Every entry moved: none lost, none entered twice. */
    GB__ASSERT(ix->count == old_count);
    if (old && old != ix->small)
        table_free(old, old_cap, old_mapped);
    GB__CHECK_AT(table_check(ix, name_of(ix), ix->shift));
}

void gb__index_abandon(gb__index_grow *g)
{
    if (g->slots != g->table->slots && g->slots != g->table->small)
        table_free(g->slots, g->cap, g->mapped);
}

bool gb__index_reserve(gb__index *index, size_t size)
{
    gb__index_grow g;
    if (!gb__index_prepare(index, size, &g))
        return false;
    gb__index_commit(&g);
    return true;
}

void gb__index_add(gb__index *index, const void *base, size_t size, uintptr_t val, void *owner)
{
    gb__index_table *ix = table_for(index, size);
    uintptr_t first = (uintptr_t)base >> ix->shift, last = ((uintptr_t)base + size - 1) >> ix->shift;
    uintptr_t granule = (uintptr_t)1 << ix->shift;
    /* A range of no bytes would have no last granule; the value is what
     * a lookup hands back, a block or an arena by its tag. */
    GB__ASSERT(size > 0 && (uintptr_t)base + size - 1 >= (uintptr_t)base);
    GB__ASSERT((val & GB__INDEX_TAG) == GB__INDEX_BLOCK || (val & GB__INDEX_TAG) == GB__INDEX_ARENA);
    /* The room reserved below is span's: the granules the range touches
     * must be no more. */
    GB__ASSERT(last - first + 1 <= span(ix, size));
    if (!gb__index_reserve(index, size))
        gb__die("out of memory: no room in the address index for %zu more entries", span(ix, size));
    uintptr_t lo = (uintptr_t)base, hi = lo + size;
    for (uintptr_t g = first; g <= last; g++) {
        uintptr_t start = g << ix->shift;
        gb__index_slot e = {g + 1, val, owner, 0, (uint32_t)granule};
        if (lo > start)
            e.lo = (uint32_t)(lo - start);
        if (hi < start + granule)
            e.hi = (uint32_t)(hi - start);
        /* Each entry covers a part of its granule, which the range
         * touches: the first starts where the range does, the last ends
         * where it ends. */
        GB__ASSERT(e.lo < e.hi && e.hi <= granule);
        put(ix, &e);
        GB__CHECK_AT(added_check(ix, e.key, val));
    }
    GB__ASSERT(ix->count * 2 <= ix->cap);
}

/* The slot of granule g entered for val, or the process stops: every
 * caller names a range it entered. */
static size_t slot_of(const gb__index_table *ix, uintptr_t g, uintptr_t val, const void *base, size_t size)
{
    size_t i = home(ix, g + 1);
    while (ix->slots[i].key && !(ix->slots[i].key == g + 1 && ix->slots[i].val == val))
        i = (i + 1) & (ix->cap - 1);
    if (!ix->slots[i].key)
        gb__die("internal error: the address index has no entry for %p (+%zu)", base, size);
    return i;
}

void gb__index_set_owner(gb__index *index, const void *base, size_t size, uintptr_t val, void *owner)
{
    gb__index_table *ix = table_for(index, size);
    uintptr_t first = (uintptr_t)base >> ix->shift, last = ((uintptr_t)base + size - 1) >> ix->shift;
    for (uintptr_t g = first; g <= last; g++)
        ix->slots[slot_of(ix, g, val, base, size)].owner = owner;
}

/* Removes slot i, moving later entries of its probe run back so that
 * every entry stays reachable from its home without tombstones. */
static void take_out(gb__index_table *ix, size_t i)
{
    /* What is removed was entered: slot_of found it. */
    GB__ASSERT(ix->slots[i].key && ix->count > 0);
    size_t mask = ix->cap - 1;
    for (size_t j = (i + 1) & mask; ix->slots[j].key; j = (j + 1) & mask) {
        /* The run ends at an empty slot before it comes round to the
         * hole: the table is never full. */
        GB__ASSERT(j != i);
        size_t h = home(ix, ix->slots[j].key);
        /* j's entry may fill the hole at i when its home is not in the
         * cyclic range (i, j]. */
        if (((j - h) & mask) >= ((j - i) & mask)) {
            ix->slots[i] = ix->slots[j];
            i = j;
        }
    }
    ix->slots[i] = (gb__index_slot){0, 0, NULL, 0, 0};
    ix->count--;
}

void gb__index_remove(gb__index *index, const void *base, size_t size, uintptr_t val)
{
    gb__index_table *ix = table_for(index, size);
    uintptr_t first = (uintptr_t)base >> ix->shift, last = ((uintptr_t)base + size - 1) >> ix->shift;
    size_t count = ix->count;
    for (uintptr_t g = first; g <= last; g++) {
        size_t i = slot_of(ix, g, val, base, size);
        take_out(ix, i);
        GB__CHECK_AT(removed_check(ix, i, g + 1, val));
    }
    /* One entry a granule the range touches, as gb__index_add entered. */
    GB__ASSERT(count - ix->count == last - first + 1);
    /* Empty again: back to the table in the thread's state. */
    if (ix->count == 0 && ix->slots != ix->small) {
        table_free(ix->slots, ix->cap, ix->mapped);
        ix->slots = ix->small;
        ix->cap = GB__INDEX_INLINE;
        ix->mapped = false;
        memset(ix->small, 0, sizeof ix->small);
        GB__CHECK_AT(table_check(ix, name_of(ix), ix->shift));
    }
}

static uintptr_t find_in(const gb__index_table *ix, const void *p, void **owner)
{
    if (!ix->cap)
        return 0;
    /* A table with entries has its granule size: the key below is the
     * granule's of that size. */
    GB__ASSERT(ix->shift == FINE_SHIFT || ix->shift == COARSE_SHIFT);
    uintptr_t key = ((uintptr_t)p >> ix->shift) + 1;
    uint32_t off = (uint32_t)((uintptr_t)p & (((uintptr_t)1 << ix->shift) - 1));
    for (size_t i = home(ix, key); ix->slots[i].key; i = (i + 1) & (ix->cap - 1)) {
        const gb__index_slot *e = &ix->slots[i];
        if (e->key == key && off >= e->lo && off < e->hi) {
            *owner = e->owner;
            return e->val;
        }
    }
    return 0;
}

uintptr_t gb__index_find(const gb__index *ix, const void *p, void **owner)
{
    *owner = NULL;
    uintptr_t v = find_in(&ix->coarse, p, owner);
    return v ? v : find_in(&ix->fine, p, owner);
}

static void release(gb__index_table *ix)
{
    if (ix->slots && ix->slots != ix->small)
        table_free(ix->slots, ix->cap, ix->mapped);
}

void gb__index_release(gb__index *ix)
{
    release(&ix->fine);
    release(&ix->coarse);
}
