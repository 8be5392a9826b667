/* small.c -- chunks under a mapping's worth, carved from the runtime's own slabs.
 *
 * A region's first blocks (4 and 8 KiB) and small container arenas are too
 * small for a mapping of their own; from malloc they are kept by malloc
 * after the region is left (the article's open item: "a program with many
 * small regions can still grow"). With the map source they come instead
 * from slabs the runtime maps itself: 256 units of one page each. A slab
 * is unmapped as soon as its last chunk is given back; while it still
 * holds some, the pages of chunks given back are emptied (MADV_DONTNEED on
 * Linux) once they add up to RELEASE_BATCH, so at most that much freed
 * memory stays resident per slab. A slab whose mapping fails, or past the
 * budget, leaves the chunk to malloc, as chunk.c does for large ones.
 */
#include "internal.h"
#include "tools.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define UNITS 256
#define WORDS (UNITS / 64)
#define RELEASE_BATCH (64 * GB__KIB)

/* A slab. Invariants: a unit is in use iff its bit in used is set; a free
 * unit is dirty (its page may be resident) iff its bit in dirty is set;
 * nused and ndirty count those bits; a slab with nused == 0 does not
 * exist (it is unmapped at once). Every slab is on the list, full ones
 * after all the others. */
struct gb__slab {
    gb__slab *next, *prev;
    char *base;
    uint64_t used[WORDS];
    uint64_t dirty[WORDS];
    unsigned nused, ndirty;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Slabs with free units come first, full ones after them, so a search
 * stops at the first slab in the common case. */
static gb__slab *slabs, *slabs_tail;

static void list_unlink(gb__slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        slabs = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        slabs_tail = s->prev;
    s->next = s->prev = NULL;
}

static void list_push_head(gb__slab *s)
{
    s->next = slabs;
    if (slabs)
        slabs->prev = s;
    else
        slabs_tail = s;
    slabs = s;
}

static void list_push_tail(gb__slab *s)
{
    s->prev = slabs_tail;
    if (slabs_tail)
        slabs_tail->next = s;
    else
        slabs = s;
    slabs_tail = s;
}

static size_t unit_size(void)
{
    return gb__os.page_size;
}

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

/* The first run of n free units in s, or UNITS. */
static unsigned find_run(const gb__slab *s, unsigned n)
{
    unsigned run = 0;
    for (unsigned i = 0; i < UNITS; i++) {
        if (bit(s->used, i)) {
            run = 0;
            continue;
        }
        if (++run == n)
            return i + 1 - n;
    }
    return UNITS;
}

static gb__slab *slab_new(void)
{
    size_t bytes = (size_t)UNITS * unit_size();
    if (!gb__mapping_reserve(1)) {
        GB__ADD(fallbacks_budget, 1);
        return NULL;
    }
    void *p = gb__os.map(bytes);
    if (!p) {
        gb__mapping_unreserve(1);
        GB__ADD(fallbacks_mmap, 1);
        return NULL;
    }
    gb__slab *s = calloc(1, sizeof *s);
    if (!s) {
        gb__os.unmap(p, bytes);
        gb__mapping_unreserve(1);
        return NULL;
    }
    GB__ADD(bytes_meta, sizeof *s);
    GB__ADD(bytes_mapped, bytes);
    GB__ADD(slabs, 1);
    s->base = p;
    list_push_head(s);
    return s;
}

static void slab_free(gb__slab *s)
{
    /* A later mapping may reuse these addresses: ASan must not think them
     * freed. */
    gb__asan_unpoison(s->base, (size_t)UNITS * unit_size());
    list_unlink(s);
    GB__SUB(slabs, 1);
    GB__SUB(bytes_meta, sizeof *s);
    /* The chunk layer unmaps it, or empties it and unmaps it later when
     * the process is at its mapping limit. */
    gb__chunk_put((gb__chunk){.base = s->base, .size = (size_t)UNITS * unit_size(), .src = GB__SRC_MAP});
    free(s);
}

bool gb__small_get(size_t n, gb__chunk *out)
{
    size_t u = unit_size();
    unsigned units = (unsigned)((n + u - 1) / u);
    if (units == 0)
        units = 1;
    pthread_mutex_lock(&lock);
    gb__slab *s;
    unsigned at = UNITS;
    for (s = slabs; s && s->nused < UNITS; s = s->next)
        if (UNITS - s->nused >= units && (at = find_run(s, units)) < UNITS)
            break;
    if (s && s->nused == UNITS)
        s = NULL;
    if (!s) {
        s = slab_new();
        at = 0;
    }
    if (!s) {
        pthread_mutex_unlock(&lock);
        return false;
    }
    for (unsigned i = at; i < at + units; i++)
        if (bit(s->dirty, i))
            s->ndirty--;
    set_bits(s->dirty, at, units, false);
    set_bits(s->used, at, units, true);
    s->nused += units;
    if (s->nused == UNITS) {
        list_unlink(s);
        list_push_tail(s);
    }
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
        (void)gb__os.release(s->base + (size_t)i * u, (size_t)(j - i) * u);
        i = j;
    }
    memset(s->dirty, 0, sizeof s->dirty);
    s->ndirty = 0;
}

void gb__small_put(gb__chunk c)
{
    size_t u = unit_size();
    gb__slab *s = c.owner;
    unsigned at = (unsigned)(((char *)c.base - s->base) / u), units = (unsigned)(c.size / u);
    GB__SUB(bytes_small, c.size);
    /* Given back, it stays mapped in its slab: under ASan, any touch of it
     * from now on is reported, as a freed heap block's would be. */
    gb__asan_poison(c.base, c.size);
    pthread_mutex_lock(&lock);
    if (s->nused == UNITS) {
        list_unlink(s);
        list_push_head(s);
    }
    set_bits(s->used, at, units, false);
    set_bits(s->dirty, at, units, true);
    s->nused -= units;
    s->ndirty += units;
    if (s->nused == 0)
        slab_free(s);
    else if ((size_t)s->ndirty * u >= RELEASE_BATCH)
        release_dirty(s);
    pthread_mutex_unlock(&lock);
}
