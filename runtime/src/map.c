/* map.c -- the runtime's own mappings: the budget, the size classes, the
 * per-thread cache and the one way out.
 *
 * Two things can go wrong with mappings, and neither may crash or lose
 * memory:
 *   - the process may be near its mapping limit (vm.max_map_count). The
 *     runtime keeps its own mappings under a budget; past it, and whenever
 *     mmap fails, the caller is told (gb__map_take), and chunk.c takes the
 *     chunk from malloc instead and counts the fallback;
 *   - munmap itself can fail (Linux refuses with ENOMEM an unmap that would
 *     split a mapping while the process is at the limit). The pages are
 *     then emptied at once, which gives the memory back, and the range is
 *     kept on a list, recorded in its own last bytes, to be unmapped later.
 *     Every mapping leaves through that one path (unmap_range): blocks,
 *     slabs, descriptor pages and coroutine stacks by gb__map_unmap, the
 *     address index's tables, which count as metadata, by
 *     gb__map_unmap_meta. Every one comes from the OS table (os/os.h),
 *     those tables included (index.c), so a test's fake OS sees them all.
 * Each thread keeps a few MiB of given-back blocks, resident, for its next
 * regions (the cache): a fresh page costs a fault, which dominates the
 * cost of a small region that is entered and left over and over. The
 * caller passes the cache of the thread it runs for; this file never asks
 * which thread is running.
 */
#include "map.h"
#include "seam_mem.h"
#include "init.h"
#include "os/os.h"
#include "sanitizers.h"
#include "stats.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

/* A range whose munmap failed: [base, base + size), counted as `mappings`
 * mappings and size bytes in bytes_mapped, or, for metadata, size bytes in
 * bytes_meta alone. The record sits in the range's last bytes, which every
 * caller keeps writable (a stack's guard is its first page). */
typedef struct pending_unmap {
    struct pending_unmap *next;
    void *base;
    size_t size;
    size_t mappings;
    bool meta;
} pending_unmap;

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_unmap *pending;

/* ------------------------------------------------------------ the budget */

bool gb__map_reserve(size_t n)
{
    /* The cached blocks are in the count (see gb__map_count_cached): they
     * are mappings too. */
    size_t now = atomic_fetch_add_explicit(&gb__stat.mappings, n, memory_order_relaxed);
    if (now + n <= gb__cfg.map_budget)
        return true;
    GB__SUB(mappings, n);
    return false;
}

void gb__map_unreserve(size_t n)
{
    GB__SUB(mappings, n);
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
 * back (gb__map_cache_hook stops a thread between the two steps in the
 * tests). */
static _Atomic(size_t) cache_total;

void (*gb__map_cache_hook)(gb__cache_step step, size_t size);

static inline void cache_step(gb__cache_step step, size_t size)
{
    if (GB__UNLIKELY(gb__map_cache_hook != NULL))
        gb__map_cache_hook(step, size);
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

void gb__map_cache_unreserve(size_t size)
{
    atomic_fetch_sub_explicit(&cache_total, size, memory_order_relaxed);
}

/* A cached block stays in gb__stat.bytes_mapped and mappings, which
 * count every mapping the runtime holds, and is counted in bytes_cached
 * and mappings_cached as well; gb_stats_get takes the cached out of the
 * first two, as gb_stats documents them. A block goes in and out of the
 * cache two or three times per region of a few hundred KiB entered and
 * left in a loop, and every count is an atomic add on memory all threads
 * share: two per move, not four, is about 3% of that loop (perf, 512 KiB
 * regions). */
void gb__map_count_cached(size_t size, bool cached)
{
    if (cached) {
        GB__ADD(bytes_cached, size);
        GB__ADD(mappings_cached, 1);
    } else {
        GB__SUB(bytes_cached, size);
        GB__SUB(mappings_cached, 1);
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
    size_t s = gb__round_up_checked(gb__round_up_checked(n, step, what), gb__os.page_size, what);
    /* At most a quarter more than asked, which the comment above promises. */
    GB__ASSERT(s >= n && s - n < step + gb__os.page_size);
    return s;
}

/* Whether a mapped chunk of `size` bytes is a huge one: aligned and
 * advised when mapped, and, cached, taken back as such. */
static bool huge_size(size_t size)
{
    return gb__cfg.huge && size >= gb__cfg.huge;
}

/* The cache class of a mapped chunk of `size` bytes, or -1 when size is
 * not a class size or is too large for any list. Every chunk the runtime
 * maps, or grows by mremap, has a class size; one of another size given
 * back is unmapped (a list holds blocks of one size). */
static int cache_class(size_t size)
{
    if (size < gb__cfg.map_min)
        return -1;
    /* The step is a quarter of a power of two (size >= map_min, so top >=
     * 2): a mask and a shift, not a division, on every push and pop. */
    unsigned top = log2_floor(size);
    size_t octave = (size_t)1 << top, step = octave / 4;
    if ((size - octave) & (step - 1))
        return -1;
    size_t k = (size_t)(top - log2_floor(gb__cfg.map_min)) * 4 + ((size - octave) >> (top - 2));
    return k < GB__CACHE_CLASSES ? (int)k : -1;
}

/* The size of the blocks of cache class k. */
static size_t class_bytes(int k)
{
    size_t octave = gb__cfg.map_min << (k / 4);
    return octave + (size_t)(k % 4) * (octave / 4);
}

#if GB_CHECK
/* (map.h) Every list of cache, whole. Its blocks are poisoned under ASan:
 * the walk reads their first two words as the cache wrote them. */
GB__NO_ASAN void gb__cache_check(const gb__cache *cache)
{
    size_t bound = gb__cfg.cache_bytes, bytes = 0;
    for (int k = 0; k < GB__CACHE_CLASSES; k++) {
        size_t size = class_bytes(k), n = 0;
        for (void *const *p = cache->head[k]; p; p = *p) {
            GB__EXPECT(++n <= bound / size,
                       "the cache's list of class %d holds more %zu-byte blocks than the bound (%zu bytes) admits", k,
                       size, bound);
            GB__EXPECT(((uintptr_t)p & (gb__os.page_size - 1)) == 0 && (!p[1] || p[1] == (const void *)p),
                       "cached block %p of class %d is not page-aligned, or its kind word is %p (NULL, or the "
                       "block itself for a huge one)",
                       (const void *)p, k, p[1]);
            GB__EXPECT(!p[1] || (gb__cfg.huge && ((uintptr_t)p & (gb__cfg.huge - 1)) == 0),
                       "cached huge block %p of class %d does not start on a huge page", (const void *)p, k);
            bytes += size;
        }
    }
    GB__EXPECT(bytes == cache->bytes, "the thread's cache.bytes is %zu, its lists hold %zu bytes", cache->bytes,
               bytes);
    GB__EXPECT(cache->bytes <= atomic_load_explicit(&cache_total, memory_order_relaxed),
               "the thread caches %zu bytes, more than the %zu reserved by every thread together", cache->bytes,
               atomic_load_explicit(&cache_total, memory_order_relaxed));
    size_t cached = atomic_load_explicit(&gb__stat.bytes_cached, memory_order_relaxed);
    GB__EXPECT(cached <= bound, "bytes_cached is %zu, past the process's bound of %zu", cached, bound);
}
#endif

/* Takes the newest block of class k out of cache, off bytes_cached and
 * then out of the process's bound, and returns it. */
static void *cache_unlink(gb__cache *cache, int k)
{
    size_t size = class_bytes(k);
    void *p = cache->head[k];
    GB__ASSERT(p && ((uintptr_t)p & (gb__os.page_size - 1)) == 0);
    /* Handed out or unmapped, its bytes are no longer a freed block's. */
    gb__asan_unpoison(p, size);
    cache->head[k] = *(void **)p;
    GB__ASSERT(cache->bytes >= size);
    cache->bytes -= size;
    /* Off the counter before the reservation goes: the other way round,
     * another thread could reserve the room and count its block while
     * this one is still counted, and bytes_cached would read above the
     * bound. */
    gb__map_count_cached(size, false);
    cache_step(GB__CACHE_STEP_UNCOUNTED, size);
    gb__map_cache_unreserve(size);
    return p;
}

/* Takes a cached block for a request of `size` bytes (a class size): of
 * its class, else the smallest of the next eight, up to four times the
 * size: a cached block is resident already, and a larger one costs
 * nothing more to write into, where a fresh one would fault (regions of
 * one shape chain blocks of different sizes from one run to the next,
 * since their first large allocation decides where the chain starts).
 * The caller gets the block's own size (gb__chunk_get's "at least n
 * bytes"). */
static bool cache_pop(gb__cache *cache, size_t size, bool fit, gb__chunk *out)
{
    int k = cache_class(size);
    if (k < 0)
        return false;
    int j = k, last = fit ? k : k + 8;
    while (!cache->head[j])
        if (++j > last || j >= GB__CACHE_CLASSES)
            return false;
    /* A class is what cache_class says of its size: the block found fits
     * the request. */
    GB__ASSERT(class_bytes(k) == size && class_bytes(j) >= size);
    size = class_bytes(j);
    void *p = cache_unlink(cache, j);
    GB__ADD(cache_hits, 1);
    /* Its kind, as cache_push recorded it: blocks of one size may be of
     * either kind (the host's choice, or advice refused). */
    *out = (gb__chunk){.base = p, .size = size, .src = GB__SRC_MAP, .huge = ((void **)p)[1] != NULL};
    GB__CHECK_AT(gb__cache_check(cache));
    return true;
}

/* Takes the newest block of class k out of cache and unmaps it. */
static void cache_drop(gb__cache *cache, int k)
{
    gb__map_unmap(cache_unlink(cache, k), class_bytes(k), 1, 0);
}

/* Reserves `size` bytes of the process's bound for cache's thread; when
 * it has no room and `evict` says so, the thread unmaps what cache holds,
 * largest first, until it has. False (nothing reserved) when there is no
 * room to be had. The reservation is tried again after every drop, the
 * last block of the cache included: the room that one makes is what the
 * block waiting for it needs. */
static bool make_room(gb__cache *cache, size_t size, bool evict)
{
    bool room = cache_reserve(size);
    for (int j = GB__CACHE_CLASSES - 1; evict && j >= 0 && !room; j--)
        while (cache->head[j] && !room) {
            cache_drop(cache, j);
            room = cache_reserve(size);
        }
    return room;
}

bool gb__map_cache_reserve(gb__cache *cache, size_t size)
{
    return make_room(cache, size, true);
}

/* Keeps a given-back block in cache. When the process's
 * bound is reached, this thread makes room by unmapping what it holds,
 * largest first (what other threads hold they give back themselves, at
 * their gb_sweep or exit), unless the block is huge: the newest block is
 * the likeliest to be wanted next (a thread that left one large region and
 * then enters small ones in a loop must not map and unmap a slab per
 * region because the cache is full of the large region's blocks), and a
 * large block gives back the most per unmap. */
static bool cache_push(gb__cache *cache, gb__chunk c)
{
    int k = cache_class(c.size);
    if (k < 0)
        return false;
    /* Only the runtime's own mappings are cached, each in the list of its
     * size, and a huge one where it starts on a huge page. */
    GB__ASSERT(c.src == GB__SRC_MAP && class_bytes(k) == c.size && ((uintptr_t)c.base & (gb__os.page_size - 1)) == 0);
    GB__ASSERT(!c.huge || ((uintptr_t)c.base & (gb__cfg.huge - 1)) == 0);
    /* A huge block is kept only where there is room: faulted in afresh it
     * costs one fault per huge page, where the blocks it would push out
     * cost one per 4 KiB page. */
    if (!make_room(cache, c.size, !c.huge))
        return false;
    /* The link in its first word, its kind in its second (a block is at
     * least map_min bytes). */
    ((void **)c.base)[0] = cache->head[k];
    ((void **)c.base)[1] = c.huge ? c.base : NULL;
    /* Given back, it stays mapped: under ASan, any touch of it from now on
     * is reported, as a freed heap block's would be. */
    gb__asan_poison(c.base, c.size);
    cache->head[k] = c.base;
    cache->bytes += c.size;
    GB__ASSERT(cache->bytes <= gb__cfg.cache_bytes);
    gb__map_count_cached(c.size, true);
    GB__CHECK_AT(gb__cache_check(cache));
    return true;
}

void gb__map_cache_flush(gb__cache *cache)
{
    for (int k = 0; k < GB__CACHE_CLASSES; k++)
        while (cache->head[k])
            cache_drop(cache, k);
    GB__ASSERT(cache->bytes == 0);
    GB__CHECK_AT(gb__cache_check(cache));
}

/* ------------------------------------------------------------ the host's choice
 *
 * Whether a block pays in huge pages is the host's to say: a huge page's
 * fault zeroes 2 MiB in one go where 512 faults of 4 KiB cost several
 * times as much on a quiet host, but it may first have to compact memory
 * to find 2 free MiB, and then it costs more than the 512 (init.c cites
 * both). Under GB_HUGE=auto the runtime measures it on its own blocks: a
 * block of huge size is populated a huge page at a time whatever its
 * kind (gb__map_populate_more), every such step is timed, and each kind
 * keeps an estimate of its cost: the least of its recent steps. A step is
 * made longer, never shorter, by what is not its own cost (the thread
 * preempted, the kernel compacting memory for another process, a host
 * backing the guest's memory again), so the least is what the kind costs
 * here when nothing else is in the way; each later step lets the estimate
 * rise by a quarter at most, so that a host whose costs rise for good is
 * followed within a few steps. A host's costs also swing together, both
 * kinds at once (on a VM whose host takes freed memory back, a huge
 * page's step took 2 us while the host still backed the memory and 2 ms
 * when it did not, 4 KiB pages 0.25 and 4 ms): an estimate is only
 * comparable to one of about the same time. So once LEARN_STALE steps in
 * 4 KiB pages (512 MiB) have been timed since the last huge page's, the
 * next block is huge again, whatever its estimate said; the other way, one
 * block in LEARN_AGAIN suffices, as huge pages are the kind favoured. The first blocks of huge size
 * alternate between the kinds until each has LEARN_FIRST steps timed;
 * then each block takes the cheaper kind, except one in LEARN_AGAIN, which
 * takes the other, so a host whose costs change is followed. Huge pages
 * count as the cheaper until their step costs more than HUGE_MARGIN times
 * the 4 KiB one: the step's time is only what making the block resident
 * costs, and a huge page also spares the TLB misses of every later access
 * to it, and the faults of memory given back and taken again while the
 * host still backs it (then a huge page's step is several times cheaper
 * than 512 small ones; on a host that reclaims freed memory, a fresh
 * process can find the two kinds within a few percent). The estimates are
 * shared by all threads: a lost update between two threads is one sample
 * fewer, not a wrong choice. */
enum { LEARN_FIRST = 2, LEARN_AGAIN = 32, LEARN_RISE = 4, LEARN_STALE = 256 };
/* HUGE_MARGIN as a fraction, HUGE_MARGIN_NUM / HUGE_MARGIN_DEN: 1.5. */
enum { HUGE_MARGIN_NUM = 3, HUGE_MARGIN_DEN = 2 };

static struct {
    _Atomic uint64_t step_ns[2]; /* a huge page's populate, ns: [0] 4 KiB pages, [1] huge */
    _Atomic uint32_t steps[2];   /* steps timed, each kind */
    _Atomic uint32_t choices;    /* choices made since both kinds had LEARN_FIRST */
    _Atomic uint32_t small_at;   /* steps[0] when a huge page's step was last timed */
} learnt;

void gb__map_learn(bool huge, uint64_t ns)
{
    uint32_t n = atomic_load_explicit(&learnt.steps[huge], memory_order_relaxed);
    uint64_t was = atomic_load_explicit(&learnt.step_ns[huge], memory_order_relaxed);
    /* The first step sets the estimate; a later one lowers it to itself,
     * or raises it towards itself by at most a quarter of what it was. */
    uint64_t most = was + was / LEARN_RISE;
    uint64_t est = n == 0 || ns < most ? ns : most;
    atomic_store_explicit(&learnt.step_ns[huge], est, memory_order_relaxed);
    atomic_store_explicit(&learnt.steps[huge], n + 1, memory_order_relaxed);
    if (huge)
        atomic_store_explicit(&learnt.small_at, atomic_load_explicit(&learnt.steps[0], memory_order_relaxed),
                              memory_order_relaxed);
}

bool gb__map_choose_huge(void)
{
    uint32_t small = atomic_load_explicit(&learnt.steps[0], memory_order_relaxed);
    uint32_t huge = atomic_load_explicit(&learnt.steps[1], memory_order_relaxed);
    if (small < LEARN_FIRST || huge < LEARN_FIRST)
        return huge <= small;
    if (small - atomic_load_explicit(&learnt.small_at, memory_order_relaxed) >= LEARN_STALE)
        return true;
    bool cheaper = atomic_load_explicit(&learnt.step_ns[1], memory_order_relaxed) * HUGE_MARGIN_DEN <=
                   atomic_load_explicit(&learnt.step_ns[0], memory_order_relaxed) * HUGE_MARGIN_NUM;
    uint32_t k = atomic_fetch_add_explicit(&learnt.choices, 1, memory_order_relaxed);
    return k % LEARN_AGAIN == LEARN_AGAIN - 1 ? !cheaper : cheaper;
}

void gb__map_learnt(gb__map_learning *out)
{
    for (int k = 0; k < 2; k++) {
        out->step_ns[k] = atomic_load_explicit(&learnt.step_ns[k], memory_order_relaxed);
        out->steps[k] = atomic_load_explicit(&learnt.steps[k], memory_order_relaxed);
    }
}

/* Maps a fresh chunk of `size` bytes (a class size). One of at least a
 * huge page is, where huge pages are on and (under auto) the host's
 * measured costs choose them, mapped on a huge page boundary and advised
 * for huge pages; when the aligned mapping cannot be had (the address
 * space is short of a huge page to spare) or the advice is refused, it is
 * an ordinary one. */
static void *map_chunk(size_t size, bool *huge)
{
    *huge = huge_size(size) && (!gb__cfg.huge_learn || gb__map_choose_huge());
    void *p = gb__os.map(size, *huge ? gb__cfg.huge : gb__os.page_size);
    if (!p && *huge) {
        *huge = false;
        p = gb__os.map(size, gb__os.page_size);
    }
    if (p && *huge && gb__os.advise_huge(p, size) != 0)
        *huge = false;
    return p;
}

size_t gb__map_class_size(size_t n, const char *what)
{
    return class_size(n, what);
}

gb__map_result gb__map_take(gb__cache *cache, size_t size, bool fit, gb__chunk *out, int *map_errno)
{
    gb__chunk c;
    if (!(gb__cfg.cache_bytes && cache_pop(cache, size, fit, &c))) {
        if (!gb__map_reserve(1))
            return GB__MAP_BUDGET;
        bool huge;
        void *p = map_chunk(size, &huge);
        if (!p) {
            *map_errno = errno;
            gb__map_unreserve(1);
            return GB__MAP_FAILED;
        }
        GB__ADD(bytes_mapped, size);
        c = (gb__chunk){.base = p, .size = size, .src = GB__SRC_MAP, .huge = huge, .fresh = true};
    }
    if (c.huge)
        GB__ADD(bytes_huge, c.size);
    /* At least the size asked for (exactly it when fit says so), a mapping
     * of the runtime's own. */
    GB__ASSERT(c.base && c.src == GB__SRC_MAP && c.size >= size && (!fit || c.size == size));
    *out = c;
    return GB__MAP_TAKEN;
}

bool gb__map_cached(const gb__cache *cache, size_t size)
{
    int k = cache_class(size);
    return k >= 0 && cache->head[k] != NULL;
}

bool gb__map_populates(gb__chunk *c)
{
    bool fresh = c->fresh;
    c->fresh = false;
    return fresh && gb__os.populate && (c->huge ? gb__cfg.populate_huge : gb__cfg.populate_4k);
}

size_t gb__map_populate_more(const gb__chunk *c, size_t done, size_t want, size_t resident)
{
    GB__ASSERT(done < want && want <= c->size);
    /* A block of huge size goes a huge page at a time, on huge page
     * boundaries, whatever its kind: a huge page is faulted in whole
     * anyway, and steps of one size are what the host's choice compares.
     * A smaller block goes by a sixty-fourth of what its region has
     * resident (at least MAP_STEP_MIN), so the part populated and not yet
     * written is under 2% of the region, and a region of many blocks
     * makes few calls. */
    bool timed = huge_size(c->size);
    size_t step = timed ? gb__cfg.huge : resident / 64;
    if (step < GB__MAP_STEP_MIN)
        step = GB__MAP_STEP_MIN;
    size_t align = timed ? gb__cfg.huge : gb__os.page_size;
    size_t to = want > done + step ? want : done + step;
    to = to > c->size - align ? c->size : (to + align - 1) & ~(align - 1);
    void *p = (char *)c->base + done;
    size_t n = to - done;
    bool time_it = timed && gb__cfg.huge_learn;
    uint64_t t0 = time_it ? gb__os.now_ns() : 0;
    /* A refusal (memory short just now, a kernel that knows the advice but
     * not for this mapping) costs nothing: the rest of the chunk faults in
     * as before, without a call per step that would be refused too. */
    if (gb__os.populate(p, n) != 0)
        return c->size;
    GB__ADD(bytes_populated, n);
    /* Only a whole huge page's step teaches the choice: a partial last
     * step, or one that took several, costs what the others do not. */
    if (time_it && n == gb__cfg.huge)
        gb__map_learn(c->huge, gb__os.now_ns() - t0);
    GB__ASSERT(to >= want && to <= c->size);
    return to;
}

void gb__map_give(gb__cache *cache, gb__chunk c)
{
    GB__ASSERT(c.src == GB__SRC_MAP && c.base && c.size);
    if (c.huge)
        GB__SUB(bytes_huge, c.size);
    if (gb__cfg.cache_bytes && cache_push(cache, c))
        return;
    gb__map_unmap(c.base, c.size, 1, 0);
}

bool gb__map_remap(gb__chunk c, size_t n, gb__chunk *out)
{
    /* A class size, so the grown chunk can be cached when it goes. A huge
     * chunk stays advised where it moves (the advice belongs to the
     * mapping), but it is counted as huge only where it still starts on a
     * huge page boundary, as a cached huge block must. */
    size_t size = class_size(n, "chunk grow");
    GB__ASSERT(c.src == GB__SRC_MAP && size >= n && size > c.size);
    void *q = gb__os.remap(c.base, c.size, size);
    if (!q)
        return false;
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

/* Uncounts a range that has left: from bytes_mapped and mappings, or, for
 * metadata, from bytes_meta. */
static void forget_mapping(size_t size, size_t mappings, bool meta)
{
    if (meta) {
        GB__SUB(bytes_meta, size);
        return;
    }
    GB__SUB(bytes_mapped, size);
    GB__SUB(mappings, mappings);
}

void gb__map_retry_unmaps(void)
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
            forget_mapping(d.size, d.mappings, d.meta);
            GB__SUB(unmaps_pending, 1);
        } else {
            pp = &u->next;
        }
    }
    pthread_mutex_unlock(&pending_lock);
}

/* The one way out, behind both doors (gb__map_unmap, gb__map_unmap_meta):
 * they differ only in the counters the range leaves. */
static void unmap_range(void *p, size_t size, size_t mappings, size_t guard, bool meta)
{
    /* Whole pages of a mapping, with room past the guard for the record of
     * a deferred unmap. */
    GB__ASSERT(p && ((uintptr_t)p & (gb__os.page_size - 1)) == 0 && size % gb__os.page_size == 0);
    GB__ASSERT((mappings > 0) != meta && guard + sizeof(pending_unmap) <= size);
    gb__map_retry_unmaps();
    if (gb__fix_unmap(p, size) == 0) {
        forget_mapping(size, mappings, meta);
        return;
    }
    /* The range stays mapped: empty it now so the memory leaves, and keep
     * it to unmap once the process is below its limit again. */
    GB__ADD(unmap_failures, 1);
    (void)gb__fix_release((char *)p + guard, size - guard);
    pending_unmap *u = (pending_unmap *)((char *)p + size) - 1;
    pthread_mutex_lock(&pending_lock);
    *u = (pending_unmap){.next = pending, .base = p, .size = size, .mappings = mappings, .meta = meta};
    pending = u;
    pthread_mutex_unlock(&pending_lock);
    GB__ADD(unmaps_pending, 1);
}

void gb__map_unmap(void *p, size_t size, size_t mappings, size_t guard)
{
    unmap_range(p, size, mappings, guard, false);
}

void gb__map_unmap_meta(void *p, size_t size)
{
    unmap_range(p, size, 0, 0, true);
}
