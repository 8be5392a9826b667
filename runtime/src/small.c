/* small.c -- chunks under a mapping's worth, carved from the runtime's own slabs.
 *
 * A region's first blocks (4 and 8 KiB) and small container arenas are too
 * small for a mapping of their own; from malloc they are kept by malloc
 * after the region is left (the article's open item: "a program with many
 * small regions can still grow"). With the map source they come instead
 * from slabs the runtime maps itself: 256 units of one page each. A slab
 * goes back to the chunk layer as soon as its last chunk is given back
 * (into the bounded block cache, or unmapped); while it still holds some,
 * the pages of chunks given back are emptied (MADV_DONTNEED on Linux) once
 * they add up to RELEASE_BATCH, so at most that much freed memory stays
 * resident per slab. A slab whose mapping fails, or past the budget,
 * leaves the chunk to malloc, as chunk.c does for large ones.
 */
#include "seam_mem.h"
#include "list.h"
#include "os/os.h"
#include "sanitizers.h"
#include "small.h"
#include "stats.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define UNITS GB__SLAB_UNITS
#define RELEASE_BATCH GB__SLAB_RELEASE_BATCH

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Slabs with free units come first, full ones after them, so a search
 * stops at the first slab in the common case. */
static gb__list slabs = GB__LIST_INIT(slabs);

#if GB_CHECK
const gb__list *gb__small_slabs_lock(void)
{
    pthread_mutex_lock(&lock);
    return &slabs;
}

void gb__small_slabs_unlock(void)
{
    pthread_mutex_unlock(&lock);
}
#endif

static size_t unit_size(void)
{
    return gb__os.page_size;
}

#if GB_CHECK
static unsigned count_bits(const uint64_t *v)
{
    unsigned n = 0;
    for (unsigned w = 0; w < GB__SLAB_WORDS; w++)
        n += (unsigned)__builtin_popcountll(v[w]);
    return n;
}

size_t gb__slab_check(const gb__slab *s)
{
    const size_t u = unit_size();
    unsigned used = count_bits(s->used), ndirty = count_bits(s->dirty), released = count_bits(s->released);
    GB__EXPECT(used == s->nused && ndirty == s->ndirty && released == s->nreleased,
               "slab %p counts %u used, %u dirty and %u released units, but its bits say %u, %u and %u",
               (const void *)s, s->nused, s->ndirty, s->nreleased, used, ndirty, released);
    for (unsigned w = 0; w < GB__SLAB_WORDS; w++)
        GB__EXPECT(!(s->used[w] & s->dirty[w]) && !(s->used[w] & s->released[w]) && !(s->dirty[w] & s->released[w]),
                   "slab %p: a unit of units %u-%u is two of used, dirty and released", (const void *)s, w * 64,
                   w * 64 + 63);
    GB__EXPECT(used > 0, "slab %p holds no unit in use but was not given back", (const void *)s);
    GB__EXPECT((size_t)ndirty * u < RELEASE_BATCH, "slab %p holds %u dirty units (%zu bytes), a batch or more, not emptied",
               (const void *)s, ndirty, (size_t)ndirty * u);
    GB__EXPECT(s->size >= UNITS * u, "slab %p's mapping of %zu bytes is smaller than its %u units", (const void *)s,
               s->size, UNITS);
    GB__EXPECT(s->base && gb__list_linked(&s->link), "slab %p has no mapping (%p) or is on no list", (const void *)s,
               (const void *)s->base);
    return (size_t)ndirty * u;
}
#endif

static bool bit(const uint64_t *v, unsigned i)
{
    return (v[i / 64] >> (i % 64)) & 1;
}

static void set_bits(uint64_t *v, unsigned from, unsigned n, bool on)
{
    for (unsigned i = from; i < from + n; i++) {
        if (on)
            v[i / 64] |= (uint64_t)1 << (i % 64);
        else
            v[i / 64] &= ~((uint64_t)1 << (i % 64));
    }
}

/* How many of units [from, from + n) have their bit set in v: what the
 * assertions below say of a run before they change it. */
static unsigned bits_in(const uint64_t *v, unsigned from, unsigned n)
{
    unsigned k = 0;
    for (unsigned i = from; i < from + n; i++)
        k += bit(v, i);
    return k;
}

/* The first run of n free units in s, or UNITS. */
static unsigned find_run(const gb__slab *s, unsigned n)
{
    unsigned run = 0;
    for (unsigned i = 0; i < UNITS; i++) {
        if (bit(s->used, i)) {
            run = 0;
            continue;
        }
        if (++run == n) {
            GB__ASSERT(i + 1 >= n && bits_in(s->used, i + 1 - n, n) == 0);
            return i + 1 - n;
        }
    }
    return UNITS;
}

/* A slab's memory comes from the mapping layer and goes back to it, like a
 * region block's: a slab given back whole may wait in the block cache and
 * be the next slab, so regions entered and left one after another do not
 * map and unmap a slab each. A chunk that is not a mapping of its own
 * (past the budget, a failed mmap, or blocks from malloc) makes no slab:
 * the small chunk then comes from malloc, and the fallback was counted. */
static gb__slab *slab_new(gb__cache *cache)
{
    /* A slab that cannot be mapped is no reason to stop: the small chunk
     * then comes from malloc, or the request steps down or fails, as the
     * region that asked decides. */
    size_t size = (size_t)UNITS * unit_size();
    /* Where blocks of a mapping's worth are not mappings (the heap source),
     * slabs are not either. */
    if (!gb__fix_chunk_is_mapped(size))
        return NULL;
    gb__chunk c;
    int e;
    switch (gb__map_take(cache, gb__map_class_size(size, "slab"), false, &c, &e)) {
    case GB__MAP_TAKEN:
        break;
    case GB__MAP_BUDGET:
        GB__ADD(fallbacks_budget, 1);
        return NULL;
    case GB__MAP_FAILED:
        GB__ADD(fallbacks_mmap, 1);
        return NULL;
    }
    /* A slab's units lie in its mapping; its map side says nothing of
     * the kind of the chunk, which the slab keeps to give it back as such. */
    GB__ASSERT(c.size >= size && c.src == GB__SRC_MAP && c.base);
    gb__slab *s = calloc(1, sizeof *s);
    if (!s) {
        gb__map_give(cache, c);
        return NULL;
    }
    GB__ADD(bytes_meta, sizeof *s);
    GB__ADD(slabs, 1);
    s->base = c.base;
    s->size = c.size;
    s->huge = c.huge;
    gb__list_push(&slabs, &s->link);
    return s;
}

static void slab_free(gb__cache *cache, gb__slab *s)
{
    /* Only an empty slab is given back, with its dirty units counted. */
    GB__ASSERT(s->nused == 0 && bits_in(s->used, 0, UNITS) == 0);
    GB__ASSERT(s->ndirty == bits_in(s->dirty, 0, UNITS) && s->nreleased == bits_in(s->released, 0, UNITS));
    /* A later mapping may reuse these addresses: ASan must not think them
     * freed. */
    gb__asan_unpoison(s->base, s->size);
    /* The block cache may hand the whole mapping out again as it is. */
    if (s->nreleased)
        gb__os_reuse(s->base, (size_t)UNITS * unit_size());
    gb__list_remove(&s->link);
    GB__SUB(slabs, 1);
    GB__SUB(bytes_small_dirty, (size_t)s->ndirty * unit_size());
    GB__SUB(bytes_meta, sizeof *s);
    /* The mapping layer keeps it in the block cache while that has room,
     * or unmaps it (or, at the mapping limit, empties it and unmaps it
     * later). It goes back as it came, huge or not, so that it leaves
     * bytes_huge. */
    gb__map_give(cache, (gb__chunk){.base = s->base, .size = s->size, .src = GB__SRC_MAP, .huge = s->huge});
    free(s);
}

bool gb__small_get(gb__cache *cache, size_t n, gb__chunk *out)
{
    size_t u = unit_size();
    unsigned units = (unsigned)((n + u - 1) / u);
    if (units == 0)
        units = 1;
    /* chunk.c asks here only for chunks under a mapping's worth, far under
     * a slab's units. */
    GB__ASSERT(units <= UNITS);
    pthread_mutex_lock(&lock);
    gb__slab *s = NULL;
    unsigned at = UNITS;
    GB__LIST_EACH(l, &slabs) {
        gb__slab *x = GB__LIST_ENTRY(l, gb__slab, link);
        if (x->nused == UNITS)
            break; /* the full ones come last */
        if (UNITS - x->nused >= units && (at = find_run(x, units)) < UNITS) {
            s = x;
            break;
        }
    }
    if (!s) {
        s = slab_new(cache);
        at = 0;
    }
    if (!s) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    GB__ASSERT(at + units <= UNITS && bits_in(s->used, at, units) == 0);
    unsigned reused = 0, given = 0;
    for (unsigned i = at; i < at + units; i++) {
        /* A free unit is dirty or released, not both. */
        GB__ASSERT(!(bit(s->dirty, i) && bit(s->released, i)));
        reused += bit(s->dirty, i);
        given += bit(s->released, i);
    }
    GB__ASSERT(s->ndirty >= reused && s->nreleased >= given && s->nused + units <= UNITS);
    s->ndirty -= reused;
    GB__SUB(bytes_small_dirty, (size_t)reused * u);
    set_bits(s->dirty, at, units, false);
    if (given) {
        s->nreleased -= given;
        set_bits(s->released, at, units, false);
        gb__os_reuse(s->base + (size_t)at * u, (size_t)units * u);
    }
    set_bits(s->used, at, units, true);
    s->nused += units;
    if (s->nused == UNITS) {
        gb__list_remove(&s->link);
        gb__list_push_tail(&slabs, &s->link);
    }
    GB__CHECK_AT(gb__slab_check(s));
    pthread_mutex_unlock(&lock);
    GB__ADD(bytes_small, (size_t)units * u);
    gb__asan_unpoison(s->base + (size_t)at * u, (size_t)units * u);
    *out = (gb__chunk){.base = s->base + (size_t)at * u, .size = (size_t)units * u, .src = GB__SRC_SMALL, .owner = s};
    return true;
}

/* Empties every dirty run of s. */
static void release_dirty(gb__slab *s)
{
    size_t u = unit_size();
    for (unsigned i = 0; i < UNITS;) {
        if (!bit(s->dirty, i)) {
            i++;
            continue;
        }
        unsigned j = i;
        while (j < UNITS && bit(s->dirty, j))
            j++;
        /* A dirty unit is free, and never released already. */
        GB__ASSERT(bits_in(s->used, i, j - i) == 0 && bits_in(s->released, i, j - i) == 0);
        (void)gb__fix_release(s->base + (size_t)i * u, (size_t)(j - i) * u);
        set_bits(s->released, i, j - i, true);
        i = j;
    }
    s->nreleased += s->ndirty;
    memset(s->dirty, 0, sizeof s->dirty);
    GB__SUB(bytes_small_dirty, (size_t)s->ndirty * u);
    s->ndirty = 0;
}

void gb__small_put(gb__cache *cache, gb__chunk c)
{
    size_t u = unit_size();
    gb__slab *s = c.owner;
    /* The chunk is a run of whole units that gb__small_get gave out of s. */
    GB__ASSERT(c.src == GB__SRC_SMALL && s && (char *)c.base >= s->base);
    GB__ASSERT(((size_t)((char *)c.base - s->base) % u) == 0 && c.size % u == 0 && c.size > 0);
    unsigned at = (unsigned)(((char *)c.base - s->base) / u), units = (unsigned)(c.size / u);
    GB__ASSERT(at + units <= UNITS);
    GB__SUB(bytes_small, c.size);
    /* Given back, it stays mapped in its slab: under ASan, any touch of it
     * from now on is reported, as a freed heap block's would be. */
    gb__asan_poison(c.base, c.size);
    pthread_mutex_lock(&lock);
    if (s->nused == UNITS) {
        gb__list_remove(&s->link);
        gb__list_push(&slabs, &s->link);
    }
    /* Every unit of it is in use, so none is dirty or released: a chunk
     * given back twice, or one of another slab, stops here. */
    GB__ASSERT(bits_in(s->used, at, units) == units && s->nused >= units);
    set_bits(s->used, at, units, false);
    set_bits(s->dirty, at, units, true);
    s->nused -= units;
    s->ndirty += units;
    GB__ADD(bytes_small_dirty, c.size);
    if (s->nused == 0) {
        slab_free(cache, s);
    } else {
        if ((size_t)s->ndirty * u >= RELEASE_BATCH)
            release_dirty(s);
        GB__CHECK_AT(gb__slab_check(s));
    }
    pthread_mutex_unlock(&lock);
}
