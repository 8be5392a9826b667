/* chunk.c -- taking memory from the OS or malloc, and giving it back.
 *
 * Every byte the runtime holds passes through here, so the counters that
 * gates and tests read are kept here, next to the calls they count. Two
 * things can go wrong with mappings, and neither may crash or lose memory:
 *   - the process may be near its mapping limit (vm.max_map_count). The
 *     runtime keeps its own mappings under a budget; past it, and whenever
 *     mmap fails, the chunk comes from malloc instead and the fallback is
 *     counted;
 *   - munmap itself can fail (Linux refuses with ENOMEM an unmap that would
 *     split a mapping while the process is at the limit). The pages are
 *     then emptied at once, which gives the memory back, and the range is
 *     kept on a list, recorded in its own last bytes, to be unmapped later.
 *     Every mapping leaves through that one path (gb__chunk_unmap): blocks,
 *     slabs, descriptor pages and coroutine stacks alike.
 * Each thread keeps a few MiB of given-back blocks, resident, for its next
 * regions (the cache): a fresh page costs a fault, which dominates the
 * cost of a small region that is entered and left over and over.
 */
#include "check.h"
#include "chunk.h"
#include "fix/fix.h"
#include "init.h"
#include "os/os.h"
#include "sanitizers.h"
#include "small.h"
#include "stats.h"
#include "thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A range whose munmap failed: [base, base + size), counted as `mappings`
 * mappings. The record sits in the range's last bytes, which every caller
 * keeps writable (a stack's guard is its first page). */
typedef struct pending_unmap {
    struct pending_unmap *next;
    void *base;
    size_t size;
    size_t mappings;
} pending_unmap;

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_unmap *pending;

GB__NORETURN static void out_of_memory(size_t n, int map_errno)
{
    if (map_errno)
        gb__die("out of memory: no chunk of %zu bytes (mmap: %s; malloc failed too)", n,
                strerror(map_errno));
    gb__die("out of memory: malloc of %zu bytes failed", n);
}

bool gb__chunk_reserve(size_t n)
{
    size_t now = atomic_fetch_add_explicit(&gb__stat.mappings, n, memory_order_relaxed);
    now += atomic_load_explicit(&gb__stat.mappings_cached, memory_order_relaxed);
    if (now + n <= gb__cfg.map_budget)
        return true;
    GB__SUB(mappings, n);
    return false;
}

void gb__chunk_unreserve(size_t n)
{
    GB__SUB(mappings, n);
}

/* A chunk of n bytes from malloc; false when malloc refuses. */
static bool heap_chunk(size_t n, gb__chunk *out)
{
    void *p = malloc(n);
    if (!p)
        return false;
    GB__ADD(bytes_heap, n);
    *out = (gb__chunk){.base = p, .size = n, .src = GB__SRC_HEAP};
    return true;
}

/* ------------------------------------------------------------ the cache
 *
 * Each thread keeps its own lists, so taking and giving a block needs no
 * lock, but the bound is the process's: cache_total is the bytes in every
 * thread's cache together, and a block is admitted only by reserving its
 * size against gb__cfg.cache_bytes first (fix/cache_bound.c), so the sum
 * never passes the bound, however many threads leave regions at once.
 * bytes_cached follows cache_total and is never above it: a block is
 * counted after its reservation is made and uncounted before it is given
 * back (gb__chunk_cache_hook stops a thread between the two steps in the
 * tests). */
static _Atomic(size_t) cache_total;

void (*gb__chunk_cache_hook)(gb__cache_step step, size_t size);

static inline void cache_step(gb__cache_step step, size_t size)
{
    if (GB__UNLIKELY(gb__chunk_cache_hook != NULL))
        gb__chunk_cache_hook(step, size);
}

/* Reserves `size` bytes of the process's cache bound; false (nothing
 * reserved) when the bound has no room for them. */
static bool cache_reserve(size_t size)
{
    size_t now = atomic_load_explicit(&cache_total, memory_order_relaxed);
    do {
        if (!gb__fix_cache_admits(now, size))
            return false;
        cache_step(GB__CACHE_STEP_ADMITTED, size);
    } while (!atomic_compare_exchange_weak_explicit(&cache_total, &now, now + size,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

void gb__chunk_cache_unreserve(size_t size)
{
    atomic_fetch_sub_explicit(&cache_total, size, memory_order_relaxed);
}

void gb__chunk_count_cached(size_t size, bool cached)
{
    if (cached) {
        GB__SUB(bytes_mapped, size);
        GB__SUB(mappings, 1);
        GB__ADD(bytes_cached, size);
        GB__ADD(mappings_cached, 1);
    } else {
        GB__SUB(bytes_cached, size);
        GB__SUB(mappings_cached, 1);
        GB__ADD(bytes_mapped, size);
        GB__ADD(mappings, 1);
    }
}

/* ------------------------------------------------------------ size classes
 *
 * A mapped chunk takes one of a few sizes, so that a block given back can
 * serve the next request of about its size from the cache: four classes
 * per doubling from map_min (16, 20, 24, 28, 32, 40, 48, ... KiB), rounded
 * up to the page. Powers of two, which is what region chains and slabs
 * ask for, are classes, so they take exactly what they ask; a request
 * between two classes takes at most a quarter more address space, and no
 * more memory, since pages it never touches are never resident. */

static unsigned log2_floor(size_t n)
{
    return (unsigned)(sizeof(unsigned long long) * 8 - 1) - (unsigned)__builtin_clzll((unsigned long long)n);
}

/* The size a mapped chunk of n bytes (n >= map_min) is given. */
static size_t class_size(size_t n, const char *what)
{
    size_t step = ((size_t)1 << log2_floor(n)) / 4;
    size_t s = gb__round_up_checked(n, step, what);
    return gb__round_up_checked(s, gb__os.page_size, what);
}

/* Whether a mapped chunk of `size` bytes is a huge one: aligned and
 * advised when mapped, and, cached, taken back as such. */
static bool huge_size(size_t size)
{
    return gb__cfg.huge && size >= gb__cfg.huge;
}

/* The cache class of a mapped chunk of `size` bytes, or -1 when size is
 * not a class size (a chunk grown by mremap, a stack) or too large for
 * any list. */
static int cache_class(size_t size)
{
    if (size < gb__cfg.map_min)
        return -1;
    unsigned top = log2_floor(size);
    size_t octave = (size_t)1 << top, step = octave / 4;
    if ((size - octave) % step)
        return -1;
    size_t k = (size_t)(top - log2_floor(gb__cfg.map_min)) * 4 + (size - octave) / step;
    return k < GB__CACHE_CLASSES ? (int)k : -1;
}

/* The size of the blocks of cache class k. */
static size_t class_bytes(int k)
{
    size_t octave = gb__cfg.map_min << (k / 4);
    return octave + (size_t)(k % 4) * (octave / 4);
}

/* Takes a cached block for a request of `size` bytes (a class size): of
 * its class, else the smallest of the next eight, up to four times the
 * size: a cached block is resident already, and a larger one costs
 * nothing more to write into, where a fresh one would fault (regions of
 * one shape chain blocks of different sizes from one run to the next,
 * since their first large allocation decides where the chain starts).
 * The caller gets the block's own size (gb__chunk_get's "at least n
 * bytes"). */
static bool cache_pop(size_t size, bool fit, gb__chunk *out)
{
    int k = cache_class(size);
    gb__cache *cache = &gb__self()->cache;
    if (k < 0)
        return false;
    int j = k, last = fit ? k : k + 8;
    while (!cache->head[j])
        if (++j > last || j >= GB__CACHE_CLASSES)
            return false;
    void *p = cache->head[j];
    size = class_bytes(j);
    gb__asan_unpoison(p, size);
    cache->head[j] = *(void **)p;
    GB__ASSERT(cache->bytes >= size);
    cache->bytes -= size;
    /* Off the counter before the reservation goes: the other way round,
     * another thread could reserve the room and count its block while
     * this one is still counted, and bytes_cached would read above the
     * bound. */
    gb__chunk_count_cached(size, false);
    cache_step(GB__CACHE_STEP_UNCOUNTED, size);
    gb__chunk_cache_unreserve(size);
    GB__ADD(cache_hits, 1);
    *out = (gb__chunk){.base = p, .size = size, .src = GB__SRC_MAP, .huge = huge_size(size)};
    return true;
}

/* Takes the newest block of class k out of t's cache and unmaps it. */
static void cache_drop(gb__thread *t, int k)
{
    size_t size = class_bytes(k);
    void *p = t->cache.head[k];
    /* Unmapped, its addresses may come back in another mapping. */
    gb__asan_unpoison(p, size);
    t->cache.head[k] = *(void **)p;
    t->cache.bytes -= size;
    /* Off the counter before the reservation goes, as in cache_pop. */
    gb__chunk_count_cached(size, false);
    cache_step(GB__CACHE_STEP_UNCOUNTED, size);
    gb__chunk_cache_unreserve(size);
    gb__chunk_unmap(p, size, 1, 0);
}

/* Reserves `size` bytes of the process's bound for t; when it has no room
 * and `evict` says so, t unmaps what it holds, largest first, until it
 * has. False (nothing reserved) when there is no room to be had. The
 * reservation is tried again after every drop, the last block of t's
 * cache included: the room that one makes is what the block waiting for
 * it needs. */
static bool make_room(gb__thread *t, size_t size, bool evict)
{
    bool room = cache_reserve(size);
    for (int j = GB__CACHE_CLASSES - 1; evict && j >= 0 && !room; j--)
        while (t->cache.head[j] && !room) {
            cache_drop(t, j);
            room = cache_reserve(size);
        }
    return room;
}

bool gb__chunk_cache_reserve(size_t size)
{
    return make_room(gb__self(), size, true);
}

/* Keeps a given-back block in this thread's cache. When the process's
 * bound is reached, this thread makes room by unmapping what it holds,
 * largest first (what other threads hold they give back themselves, at
 * their gb_sweep or exit), unless the block is huge: the newest block is
 * the likeliest to be wanted next (a thread that left one large region and
 * then enters small ones in a loop must not map and unmap a slab per
 * region because the cache is full of the large region's blocks), and a
 * large block gives back the most per unmap. */
static bool cache_push(gb__chunk c)
{
    int k = cache_class(c.size);
    gb__thread *t = gb__self();
    /* A block of huge size that could not be advised is not kept: every
     * cached block of that size is taken back as advised (cache_pop). */
    if (k < 0 || c.huge != huge_size(c.size))
        return false;
    /* A huge block is kept only where there is room: faulted in afresh it
     * costs one fault per huge page, where the blocks it would push out
     * cost one per 4 KiB page. */
    if (!make_room(t, c.size, !c.huge))
        return false;
    *(void **)c.base = t->cache.head[k];
    /* Given back, it stays mapped: under ASan, any touch of it from now on
     * is reported, as a freed heap block's would be. */
    gb__asan_poison(c.base, c.size);
    t->cache.head[k] = c.base;
    t->cache.bytes += c.size;
    GB__ASSERT(t->cache.bytes <= gb__cfg.cache_bytes);
    gb__chunk_count_cached(c.size, true);
    return true;
}

void gb__chunk_cache_flush(gb__thread *t)
{
    for (int k = 0; k < GB__CACHE_CLASSES; k++)
        while (t->cache.head[k])
            cache_drop(t, k);
}

/* Maps a fresh chunk of `size` bytes (a class size). One of at least a
 * huge page starts on a huge page boundary and is advised for huge pages;
 * when the aligned mapping cannot be had (the address space is short of a
 * huge page to spare) or the advice is refused, it is an ordinary one. */
static void *map_chunk(size_t size, bool *huge)
{
    *huge = huge_size(size);
    void *p = gb__os.map(size, *huge ? gb__cfg.huge : gb__os.page_size);
    if (!p && *huge) {
        *huge = false;
        p = gb__os.map(size, gb__os.page_size);
    }
    if (p && *huge && gb__os.advise_huge(p, size) != 0)
        *huge = false;
    return p;
}

/* A chunk of at least n bytes, as gb__chunk_get takes it; false, with
 * nothing taken and *map_errno the mapping's error (0 if none was tried),
 * when malloc refuses too. */
static bool get(size_t n, unsigned how, gb__chunk *out, int *map_errno)
{
    bool fit = how & GB__CHUNK_FIT;
    *map_errno = 0;
    if (!gb__fix_chunk_is_mapped(n)) {
        if (gb__fix_small_from_slab(n) && gb__small_get(n, out))
            return true;
        return heap_chunk(n, out);
    }
    size_t size = class_size(n, "chunk");
    gb__chunk c;
    if (!(gb__cfg.cache_bytes && cache_pop(size, fit, &c))) {
        if (!gb__chunk_reserve(1)) {
            GB__ADD(fallbacks_budget, 1);
            return heap_chunk(n, out);
        }
        bool huge;
        void *p = map_chunk(size, &huge);
        if (!p) {
            *map_errno = errno;
            GB__SUB(mappings, 1);
            if (how & GB__CHUNK_MAP_ONLY)
                return false;
            GB__ADD(fallbacks_mmap, 1);
            return heap_chunk(n, out);
        }
        GB__ADD(bytes_mapped, size);
        c = (gb__chunk){.base = p, .size = size, .src = GB__SRC_MAP, .huge = huge};
    }
    if (c.huge)
        GB__ADD(bytes_huge, c.size);
    *out = c;
    return true;
}

gb__chunk gb__chunk_get(size_t n)
{
    gb__chunk c;
    int e;
    if (!get(n, 0, &c, &e))
        out_of_memory(n, e);
    return c;
}

bool gb__chunk_try_get(size_t n, unsigned how, gb__chunk *out)
{
    int e;
    return get(n, how, out, &e);
}

size_t gb__chunk_size_for(size_t n)
{
    return gb__fix_chunk_is_mapped(n) ? class_size(n, "chunk") : n;
}

static void forget_mapping(size_t size, size_t mappings)
{
    GB__SUB(bytes_mapped, size);
    GB__SUB(mappings, mappings);
}

void gb__chunk_retry_unmaps(void)
{
    if (atomic_load_explicit(&gb__stat.unmaps_pending, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&pending_lock);
    pending_unmap **pp = &pending;
    while (*pp) {
        pending_unmap *u = *pp;
        pending_unmap d = *u; /* the record goes with the range */
        if (gb__fix_unmap(d.base, d.size) == 0) {
            *pp = d.next;
            forget_mapping(d.size, d.mappings);
            GB__SUB(unmaps_pending, 1);
        } else {
            pp = &u->next;
        }
    }
    pthread_mutex_unlock(&pending_lock);
}

void gb__chunk_unmap(void *p, size_t size, size_t mappings, size_t guard)
{
    gb__chunk_retry_unmaps();
    if (gb__fix_unmap(p, size) == 0) {
        forget_mapping(size, mappings);
        return;
    }
    /* The range stays mapped: empty it now so the memory leaves, and keep
     * it to unmap once the process is below its limit again. */
    GB__ADD(unmap_failures, 1);
    (void)gb__fix_release((char *)p + guard, size - guard);
    pending_unmap *u = (pending_unmap *)((char *)p + size) - 1;
    pthread_mutex_lock(&pending_lock);
    *u = (pending_unmap){.next = pending, .base = p, .size = size, .mappings = mappings};
    pending = u;
    pthread_mutex_unlock(&pending_lock);
    GB__ADD(unmaps_pending, 1);
}

/* Puts a chunk back: a mapped block of a cached size into this thread's
 * cache while it has room, else to the OS. */
void gb__chunk_put(gb__chunk c)
{
    if (c.src == GB__SRC_MAP) {
        if (c.huge)
            GB__SUB(bytes_huge, c.size);
        if (gb__cfg.cache_bytes && cache_push(c))
            return;
        gb__chunk_unmap(c.base, c.size, 1, 0);
    } else if (c.src == GB__SRC_SMALL) {
        gb__small_put(c);
    } else {
        free(c.base);
        GB__SUB(bytes_heap, c.size);
    }
}

/* Grows c as gb__chunk_grow says; false, with c as it was, when the
 * larger chunk cannot be had. */
static bool grow(gb__chunk c, size_t used, size_t n, bool fit, gb__chunk *out, int *map_errno)
{
    *map_errno = 0;
    *out = c;
    if (n <= c.size)
        return true;
    if (c.src == GB__SRC_MAP && gb__cfg.growth == GB_GROW_REMAP) {
        /* A class size, so the grown chunk can be cached when it goes. A
         * huge chunk stays advised where it moves (the advice belongs to
         * the mapping), but it is counted as huge only where it still
         * starts on a huge page boundary, as a cached huge block must. */
        size_t size = class_size(n, "chunk grow");
        void *q = gb__os.remap(c.base, c.size, size);
        if (q) {
            bool huge = c.huge && ((uintptr_t)q & (gb__cfg.huge - 1)) == 0;
            if (c.huge)
                GB__SUB(bytes_huge, c.size);
            if (huge)
                GB__ADD(bytes_huge, size);
            GB__ADD(bytes_mapped, size - c.size);
            GB__ADD(grows_remap, 1);
            *out = (gb__chunk){.base = q, .size = size, .src = GB__SRC_MAP, .huge = huge};
            return true;
        }
        /* mremap failed (address space or limit): copying still works. */
    }
    if (c.src == GB__SRC_HEAP && !gb__fix_chunk_is_mapped(n)) {
        void *q = realloc(c.base, n);
        if (!q)
            return false;
        GB__ADD(bytes_heap, n - c.size);
        *out = (gb__chunk){.base = q, .size = n, .src = GB__SRC_HEAP};
        return true;
    }
    /* Map anew, copy, give the old one back: the only way on an OS without
     * mremap, and how a small malloc'd chunk becomes a mapping. */
    gb__chunk d;
    if (!get(n, fit ? GB__CHUNK_FIT : 0, &d, map_errno))
        return false;
    memcpy(d.base, c.base, used);
    gb__chunk_put(c);
    GB__ADD(grows_copy, 1);
    *out = d;
    return true;
}

gb__chunk gb__chunk_grow(gb__chunk c, size_t used, size_t n)
{
    gb__chunk d;
    int e;
    if (!grow(c, used, n, false, &d, &e))
        out_of_memory(n, e);
    return d;
}

bool gb__chunk_try_grow(gb__chunk c, size_t used, size_t n, bool fit, gb__chunk *out)
{
    int e;
    return grow(c, used, n, fit, out, &e);
}
