/* index.c -- the address index: a granule's ranges, by hash
 * (index.h says what it holds and why).
 */
#include "index.h"
#include "chunk.h"
#include "os/os.h"
#include "os/unix.h"
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
    return t;
}

static size_t home(const gb__index_table *ix, uintptr_t key)
{
    /* Fibonacci hashing: neighbouring granules, the common case, spread
     * over the table. */
    return (size_t)((key * (uintptr_t)0x9E3779B97F4A7C15ull) >> 32) & (ix->cap - 1);
}

static void put(gb__index_table *ix, const gb__index_slot *e)
{
    size_t i = home(ix, e->key);
    while (ix->slots[i].key)
        i = (i + 1) & (ix->cap - 1);
    ix->slots[i] = *e;
    ix->count++;
}

/* A table past the one in the thread's state is a mapping of its own,
 * given back with munmap. From malloc, a table freed would leave a hole in
 * malloc's heap that the host's next small allocation fills, below the top
 * where it would have kept the heap from trimming (which the small-regions
 * gate relies on to catch the malloc-back poison), a large one would raise
 * glibc's mmap threshold in a library build (the article's fault), and
 * under ASan it would wait in the quarantine, resident. It is mapped by
 * the OS layer's own call, not through the OS table that tests replace to
 * fake refusals of blocks, and counts in bytes_meta: at most two mappings
 * a thread, outside the mapping budget. A table whose mapping fails comes
 * from malloc (a block is not refused for that). */
static size_t table_bytes(size_t cap)
{
    return gb__round_up(cap * sizeof(gb__index_slot), gb__os.page_size);
}

static gb__index_slot *table_new(size_t cap, bool *mapped)
{
    void *p = gb__unix_map(table_bytes(cap), gb__os.page_size); /* a fresh mapping is zero */
    *mapped = p != NULL;
    if (!p)
        p = calloc(cap, sizeof(gb__index_slot));
    if (p)
        GB__ADD(bytes_meta, cap * sizeof(gb__index_slot));
    return p;
}

static void table_free(gb__index_slot *slots, size_t cap, bool mapped)
{
    size_t bytes = table_bytes(cap);
    GB__SUB(bytes_meta, cap * sizeof *slots);
    if (!mapped) {
        free(slots);
    } else if (gb__unix_unmap(slots, bytes) != 0) {
        /* At the mapping limit: the chunk layer's way for a mapping that
         * cannot be unmapped yet (emptied now, unmapped later, counted
         * meanwhile as one of the runtime's). */
        GB__ADD(bytes_mapped, bytes);
        GB__ADD(mappings, 1);
        gb__map_unmap(slots, bytes, 1, 0);
    }
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
    gb__index_slot *old = ix->slots;
    size_t old_cap = ix->cap;
    bool old_mapped = ix->mapped;
    ix->slots = g->slots;
    ix->cap = g->cap;
    ix->mapped = g->mapped;
    ix->count = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key)
            put(ix, &old[i]);
    if (old && old != ix->small)
        table_free(old, old_cap, old_mapped);
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
        put(ix, &e);
    }
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
    size_t mask = ix->cap - 1;
    for (size_t j = (i + 1) & mask; ix->slots[j].key; j = (j + 1) & mask) {
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
    for (uintptr_t g = first; g <= last; g++)
        take_out(ix, slot_of(ix, g, val, base, size));
    /* Empty again: back to the table in the thread's state. */
    if (ix->count == 0 && ix->slots != ix->small) {
        table_free(ix->slots, ix->cap, ix->mapped);
        ix->slots = ix->small;
        ix->cap = GB__INDEX_INLINE;
        ix->mapped = false;
        memset(ix->small, 0, sizeof ix->small);
    }
}

static uintptr_t find_in(const gb__index_table *ix, const void *p, void **owner)
{
    if (!ix->cap)
        return 0;
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
