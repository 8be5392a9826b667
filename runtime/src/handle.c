/* handle.c -- region descriptors and the handles that name them.
 *
 * gb_enter hands out a handle, not the descriptor's address, so that the
 * handle of a region that was left never names the region that reuses its
 * slot, and so that every public entry point can say exactly what a wrong
 * handle is instead of reading a descriptor that may be gone. Here are the
 * pages the descriptors live in, the directory the handles index, and the
 * decoding of a handle. entry.c takes slots (gb_enter, and a reset that
 * retires a pinned region's contents) and decodes a handle only when it is
 * not the innermost region's; pin.c frees a slot when it frees a region.
 */
#include "handle.h"
#include "init.h"
#include "stats.h"

#include <pthread.h>

/* ----------------------------------------------------- descriptor pages
 *
 * Region descriptors live in pages of slots that each thread takes like a
 * block (gb__chunk_get of map_min bytes: a mapping of its own, counted in
 * bytes_mapped and mappings and against the budget, or malloc'd with the
 * heap source) and gives back with gb__chunk_put as soon as its last slot
 * is free, so 100,000 regions left leave no descriptors behind; the block
 * cache may keep the page like any block. Entering and leaving touch only
 * the thread's own pages and lists: no lock, no shared line but the
 * counters.
 *
 * A handle names a directory entry, a slot in the entry's page and the
 * slot's generation (handle.h). The directory is static and never given
 * back, so any handle, however stale, decodes without reading a page that
 * may be gone:
 *   - an entry is owned by one thread from when it takes it from the pool
 *     until that thread exits; only the owner maps pages on it, so only the
 *     owner reads page and floor, without a lock. owner and base change
 *     under dir_lock only, and another thread reads them under it;
 *   - base is the generation the entry had when its owner took it: every
 *     handle of the entry with a smaller generation was issued before
 *     (under an earlier owner, or on an earlier page) and its region left;
 *   - floor is where the fresh slots of the entry's next page start: above
 *     every generation issued on the entry so far. A slot's generation
 *     starts at its page's floor and grows by one at every free, so no
 *     (entry, slot, generation) is ever issued twice. */

/* struct gb__dpage, the page, is in handle.h: gb__handle_take and
 * gb__handle_free are inline. */

_Static_assert(sizeof(uintptr_t) == 8, "a region handle packs 64 bits into a gb_region *");

#define DIR_ENTRIES ((uint32_t)1 << GB__H_PAGE_BITS)
#define SLOT_MAX ((uint32_t)1 << GB__H_SLOT_BITS)
/* owner of an entry whose thread exited while regions on it were still
 * entered (by coroutines it never freed), and of one that is used up. */
#define DIR_ORPHAN ((gb__mem *)1)
#define DIR_SPENT ((gb__mem *)2)

typedef struct dir_entry {
    _Atomic(gb__mem *) owner; /* the owner thread's memory; NULL while in the pool */
    uint64_t base;
    uint64_t floor;
    gb__dpage *page; /* NULL while vacant */
    uint32_t next;   /* pool or vacant list: entry index + 1, 0 ends it; written at each push */
} dir_entry;

static dir_entry dir[DIR_ENTRIES];
static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t dir_used; /* entries ever handed out; under dir_lock */
static uint32_t dir_pool; /* entries given back by exited threads */

/* A directory entry for a new page of the thread whose memory is m: one
 * of its vacant ones, else one from the pool (the thread's first, the
 * first time it enters a region: that is also when its exit hook is
 * armed). */
static uint32_t entry_take(gb__mem *m)
{
    if (m->dvacant) {
        uint32_t e = m->dvacant - 1;
        m->dvacant = dir[e].next;
        return e;
    }
    pthread_mutex_lock(&dir_lock);
    uint32_t e;
    if (dir_pool) {
        e = dir_pool - 1;
        dir_pool = dir[e].next;
    } else if (dir_used < DIR_ENTRIES) {
        e = dir_used++;
        dir[e].floor = 1;
    } else {
        pthread_mutex_unlock(&dir_lock);
        gb__die("too many regions at once: %u pages of region descriptors are in use, the most "
                "the handle format allows",
                DIR_ENTRIES);
    }
    dir[e].base = dir[e].floor;
    atomic_store_explicit(&dir[e].owner, m, memory_order_relaxed);
    pthread_mutex_unlock(&dir_lock);
    return e;
}

static gb__dpage *dpage_new(gb__mem *m)
{
    uint32_t e = entry_take(m);
    gb__chunk c = gb__chunk_get(&m->cache, gb__cfg.map_min);
    gb__dpage *pg = c.base;
    size_t cap = (c.size - offsetof(gb__dpage, slot)) / sizeof(gb_region);
    if (cap == 0)
        gb__die("internal error: a page of %zu bytes holds no region descriptor", c.size);
    pg->chunk = c;
    pg->owner = m;
    pg->free = NULL;
    pg->floor = pg->gen_hi = dir[e].floor;
    pg->entry = e;
    pg->cap = cap < SLOT_MAX ? (uint32_t)cap : SLOT_MAX;
    pg->nfresh = pg->nused = 0;
    dir[e].page = pg;
    gb__handle_avail_push(m, pg); /* writes both of alink's links */
    return pg;
}

/* pg's last slot was freed: the page goes back, its entry is kept for the
 * thread's next page with a floor above every generation it issued. */
static void dpage_release(gb__mem *m, gb__dpage *pg)
{
    if (gb__handle_in_avail(pg))
        gb__list_remove(&pg->alink);
    uint32_t e = pg->entry;
    dir[e].page = NULL;
    dir[e].floor = pg->gen_hi;
    if (pg->gen_hi > GB__GEN_MAX) {
        /* Used up: no generation is left to issue on it. */
        pthread_mutex_lock(&dir_lock);
        atomic_store_explicit(&dir[e].owner, DIR_SPENT, memory_order_relaxed);
        pthread_mutex_unlock(&dir_lock);
    } else {
        dir[e].next = m->dvacant;
        m->dvacant = e + 1;
    }
    gb__chunk_put(&m->cache, pg->chunk);
}

/* A thread that enters and leaves one region at a time empties its only
 * page at every leave: the page is kept, mapped and with its slots as they
 * are, so the next gb_enter needs no page. It is counted as a cached
 * block, within the cache's bound, and kept before any block of the cache
 * (which makes room for it): a full cache would otherwise cost a map and
 * an unmap per region. With the cache off (GB_CACHE=off) nothing is kept. */
static bool spare_keep(gb__mem *m, gb__dpage *pg)
{
    size_t size = pg->chunk.size;
    if (m->dspare || pg->chunk.src != GB__SRC_MAP || !gb__cfg.cache_bytes)
        return false;
    if (!pg->free && pg->nfresh == pg->cap)
        return false; /* every slot used up: nothing to keep it for */
    if (!gb__map_cache_reserve(&m->cache, size))
        return false;
    if (gb__handle_in_avail(pg))
        gb__list_remove(&pg->alink);
    m->dspare = pg;
    gb__map_count_cached(size, true);
    return true;
}

static gb__dpage *spare_take(gb__mem *m)
{
    gb__dpage *pg = m->dspare;
    size_t size = pg->chunk.size;
    m->dspare = NULL;
    gb__map_count_cached(size, false);
    gb__map_cache_unreserve(size);
    return pg;
}

gb__dpage *gb__handle_page_get(gb__mem *m)
{
    if (m->dspare) {
        gb__dpage *pg = spare_take(m);
        gb__handle_avail_push(m, pg);
        return pg;
    }
    return dpage_new(m);
}

void gb__handle_trim(gb__mem *m)
{
    if (m->dspare)
        dpage_release(m, spare_take(m));
}

void gb__handle_page_empty(gb__mem *m, gb__dpage *pg)
{
    if (!spare_keep(m, pg))
        dpage_release(m, pg);
}

uint32_t gb__handle_entries_used(void)
{
    pthread_mutex_lock(&dir_lock);
    uint32_t n = dir_used;
    pthread_mutex_unlock(&dir_lock);
    return n;
}

/* ------------------------------------------------------ handle checks */

/* What a handle that is not the running context's innermost region is. */
typedef enum hkind {
    H_REGION,  /* names a region of this thread, LIVE or RETIRED */
    H_LEFT,    /* names a region that was left (its slot moved on) */
    H_BOGUS,   /* no gb_enter returned it */
    H_THREAD,  /* issued by another thread, which is running */
    H_EXITED,  /* issued by a thread that has exited */
} hkind;

/* Decodes h for the thread whose memory is m. Reads only the directory,
 * and a page only when that thread owns it, so a stale handle of any age
 * is safe to decode. A value gb_enter never returned may be taken for one
 * of another thread's. */
static hkind decode(gb__mem *m, uintptr_t h, gb_region **out)
{
    uint64_t gen = h >> GB__H_GEN_SHIFT;
    uint32_t e = (uint32_t)(h >> GB__H_SLOT_BITS) & (DIR_ENTRIES - 1);
    uint32_t s = (uint32_t)h & (SLOT_MAX - 1);
    *out = NULL;
    if (gen == 0)
        return H_BOGUS;
    gb__mem *o = atomic_load_explicit(&dir[e].owner, memory_order_relaxed);
    if (o == m) {
        /* Ours: only this thread changes the entry's page and floor. */
        gb__dpage *pg = dir[e].page;
        if (!pg)
            return gen < dir[e].floor ? H_LEFT : H_BOGUS;
        if (s >= pg->nfresh)
            return gen < pg->floor ? H_LEFT : H_BOGUS;
        gb_region *r = &pg->slot[s];
        if (r->handle == h) {
            *out = r;
            return H_REGION;
        }
        return gen < r->gen ? H_LEFT : H_BOGUS;
    }
    pthread_mutex_lock(&dir_lock);
    o = atomic_load_explicit(&dir[e].owner, memory_order_relaxed);
    bool used = e < dir_used;
    uint64_t base = dir[e].base;
    /* An entry in the pool or used up is no thread's: its floor is still. */
    uint64_t floor = o == NULL || o == DIR_SPENT ? dir[e].floor : 0;
    pthread_mutex_unlock(&dir_lock);
    if (!used)
        return H_BOGUS;
    if (o == NULL || o == DIR_SPENT)
        return gen < floor ? H_LEFT : H_BOGUS;
    if (gen < base)
        return H_LEFT;
    return o == DIR_ORPHAN ? H_EXITED : H_THREAD;
}

/* Stops the process for a handle h given to `who` that does not name a
 * region of the running context, whose region stack is cur, saying
 * exactly what it names. r is the LIVE region h names on another context
 * of this thread. */
GB__NORETURN void gb__handle_die_other_context(const char *who, const gb__rstack *cur, gb_region *h,
                                               const gb_region *r)
{
    const gb__rstack *st = r->stack;
    gb_coro *running = cur->owner, *x = st->owner;
    if (!x)
        gb__die("%s: region %p was entered by this thread outside any coroutine, which resumed "
                "the running coroutine %p; only the context that entered a region leaves or "
                "resets it (a coroutine may allocate in its resumers' regions)",
                who, (void *)h, (void *)running);
    if (running && gb__rstack_resumed(cur, st))
        gb__die("%s: region %p was entered by another coroutine, %p, which resumed the running "
                "coroutine %p; only the context that entered a region leaves or resets it (a "
                "coroutine may allocate in its resumers' regions)",
                who, (void *)h, (void *)x, (void *)running);
    if (running)
        gb__die("%s: region %p was entered by another coroutine, %p (suspended; not one that "
                "resumed the running coroutine %p); a coroutine may use only regions it entered "
                "itself and those of the contexts that resumed it",
                who, (void *)h, (void *)x, (void *)running);
    gb__die("%s: region %p was entered by another coroutine, %p (suspended; the caller runs "
            "outside any coroutine); regions are used only in the context that entered them",
            who, (void *)h, (void *)x);
}

/* The region h names, which the running thread entered and has not left
 * (in the running context or another of its contexts); stops the process
 * naming what h is otherwise. */
gb_region *gb__handle_region(const char *who, gb__mem *m, gb_region *h)
{
    gb_region *r = gb__handle_lookup(who, m, h);
    if (!r)
        gb__die("%s: region %p was already left", who, (void *)h);
    if (r->state == GB__RETIRED)
        gb__die("%s: region %p was already left (it is retired: a suspended coroutine "
                "still points into it)",
                who, (void *)h);
    return r;
}

gb_region *gb__handle_lookup(const char *who, gb__mem *m, const gb_region *h)
{
    if (!h)
        gb__die("%s: NULL region", who);
    gb_region *r;
    switch (decode(m, (uintptr_t)h, &r)) {
    case H_REGION:
        return r;
    case H_LEFT:
        return NULL;
    case H_THREAD:
        gb__die("%s: region %p was entered by another thread; a region is used and left only "
                "on the thread that entered it",
                who, (void *)h);
    case H_EXITED:
        gb__die("%s: region %p was entered by another thread, which has exited; a region is "
                "used and left only on the thread that entered it",
                who, (void *)h);
    case H_BOGUS:
        break;
    }
    gb__die("%s: %p is not a region handle (gb_enter never returned it)", who, (void *)h);
}

/* ---------------------------------------------------------- thread exit */

void gb__handle_at_exit(gb__mem *m)
{
    /* Entries whose page still holds regions (entered by coroutines the
     * thread never freed) are orphaned, the rest go back to the pool. */
    pthread_mutex_lock(&dir_lock);
    for (uint32_t e = 0; e < dir_used; e++) {
        if (atomic_load_explicit(&dir[e].owner, memory_order_relaxed) != m)
            continue;
        if (dir[e].page) {
            atomic_store_explicit(&dir[e].owner, DIR_ORPHAN, memory_order_relaxed);
            continue;
        }
        atomic_store_explicit(&dir[e].owner, NULL, memory_order_relaxed);
        dir[e].next = dir_pool;
        dir_pool = e + 1;
    }
    pthread_mutex_unlock(&dir_lock);
    /* m's lists of pages and vacant entries are not emptied: the thread's
     * state is freed next (thread.c), and nothing before reads them. */
}
