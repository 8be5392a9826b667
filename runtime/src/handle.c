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
        /* A vacant entry is still the thread's, with no page. */
        GB__ASSERT(e < DIR_ENTRIES && !dir[e].page &&
                   atomic_load_explicit(&dir[e].owner, memory_order_relaxed) == m);
        m->dvacant = dir[e].next;
        return e;
    }
    pthread_mutex_lock(&dir_lock);
    uint32_t e;
    if (dir_pool) {
        e = dir_pool - 1;
        /* An entry in the pool is no thread's and has no page. */
        GB__ASSERT(e < dir_used && !dir[e].page && !atomic_load_explicit(&dir[e].owner, memory_order_relaxed));
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
    /* The page is a fresh chunk, aligned for the descriptors it holds. */
    GB__ASSERT(c.base && c.size >= gb__cfg.map_min && (uintptr_t)c.base % _Alignof(gb__dpage) == 0);
    GB__ASSERT(!dir[e].page && dir[e].floor >= 1);
    pg->chunk = c;
    pg->owner = m;
    pg->free = NULL;
    pg->floor = pg->gen_hi = dir[e].floor;
    pg->entry = e;
    pg->cap = cap < SLOT_MAX ? (uint32_t)cap : SLOT_MAX;
    pg->nfresh = pg->nused = 0;
    pg->rfree = NULL;
    pg->rlink = (gb__list){NULL, NULL};
    dir[e].page = pg;
    gb__handle_avail_push(m, pg); /* writes both of alink's links */
    return pg;
}

/* pg's last slot was freed: the page goes back, its entry is kept for the
 * thread's next page with a floor above every generation it issued. */
static void dpage_release(gb__mem *m, gb__dpage *pg)
{
    /* Only an empty page of this thread goes back, and its entry names it. */
    GB__ASSERT(pg->nused == 0 && pg->owner == m && dir[pg->entry].page == pg && pg->gen_hi >= pg->floor);
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
    GB__CHECK_AT(gb__dpage_check(m, pg));
    return true;
}

static gb__dpage *spare_take(gb__mem *m)
{
    gb__dpage *pg = m->dspare;
    /* The spare is empty and on no list: taking it changes no slot. */
    GB__ASSERT(pg && pg->nused == 0 && !gb__handle_in_avail(pg) && pg->owner == m);
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
    GB__ASSERT(pg->nused == 0 && pg != m->dspare);
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

/* ------------------------------------------------------------- handoff
 *
 * A region handed to another thread keeps its slot on the page of the
 * thread that entered it, so its handle stays what it was; the two
 * threads then share that page, which is why everything of a lent slot
 * (its state, home and lent flag, and its handle and generation when it
 * is freed) changes under dir_lock, and why the page's owner alone
 * changes its lists: another thread that frees a lent slot puts it on the
 * page's rfree, and the owner takes it back at its next gb_enter. A page
 * whose thread exited is no thread's (owner NULL): the thread that frees
 * its last lent slot gives it back.
 *
 * The table below holds every lent region by handle, so that any thread
 * tells what a handle of a lent region names, and gb_region_attach finds
 * the region in flight, without reading a page that another thread may
 * give back meanwhile. Lent regions are those in flight and those held
 * away from their page's thread: a server's requests in progress. */

#define LENT_BITS 12
static gb_region *lent_table[1u << LENT_BITS]; /* under dir_lock, chained through lent_next */

static gb_region **lent_head(uintptr_t h)
{
    return &lent_table[(uint64_t)h * UINT64_C(0x9E3779B97F4A7C15) >> (64 - LENT_BITS)];
}

static gb_region *lent_find(uintptr_t h)
{
    gb_region *r = *lent_head(h);
    while (r && r->handle != h)
        r = r->lent_next;
    return r;
}

static void lent_add(gb_region *r)
{
    gb_region **head = lent_head(r->handle);
    GB__ASSERT(!r->lent && !lent_find(r->handle));
    r->lent_next = *head;
    *head = r;
    r->lent = true;
}

static void lent_remove(gb_region *r)
{
    gb_region **x = lent_head(r->handle);
    while (*x != r) {
        /* A lent region is in the table, once. */
        GB__ASSERT(*x);
        x = &(*x)->lent_next;
    }
    *x = r->lent_next;
    r->lent = false;
}

void gb__handle_lend(gb_region *r)
{
    /* Only a region on no stack and held by this thread is put in flight. */
    GB__ASSERT(r->state == GB__LIVE && !r->stack && !r->parent && r->home);
    pthread_mutex_lock(&dir_lock);
    r->home = NULL;
    r->state = GB__FLIGHT;
    if (!r->lent)
        lent_add(r);
    pthread_mutex_unlock(&dir_lock);
}

gb_region *gb__handle_claim(gb__mem *m, const gb_region *h)
{
    pthread_mutex_lock(&dir_lock);
    gb_region *r = lent_find((uintptr_t)h);
    if (r && r->state == GB__FLIGHT) {
        GB__ASSERT(r->lent && !r->home && !r->stack);
        r->state = GB__LIVE;
        r->home = m;
        if (r->page->owner == m)
            lent_remove(r); /* back on the thread whose page it is on */
    } else {
        r = NULL;
    }
    pthread_mutex_unlock(&dir_lock);
    return r;
}

/* Gives back page pg of no thread, whose last slot was freed: its entry
 * goes to the pool (or is used up), its chunk into cache. dir_lock held;
 * the caller puts the chunk after it lets go. */
static void orphan_release(gb__dpage *pg)
{
    GB__ASSERT(!pg->owner && pg->nused == 0 && !pg->rfree && !gb__handle_in_avail(pg) && dir[pg->entry].page == pg);
    uint32_t e = pg->entry;
    dir[e].page = NULL;
    dir[e].floor = pg->gen_hi;
    if (pg->gen_hi > GB__GEN_MAX) {
        atomic_store_explicit(&dir[e].owner, DIR_SPENT, memory_order_relaxed);
    } else {
        atomic_store_explicit(&dir[e].owner, NULL, memory_order_relaxed);
        dir[e].next = dir_pool;
        dir_pool = e + 1;
    }
}

void gb__handle_free_lent(gb_region *r)
{
    gb__mem *m = r->home;
    gb__dpage *pg = r->page;
    bool release = false;
    pthread_mutex_lock(&dir_lock);
    /* pg's counts are its owner's: not read here but for a page of no thread. */
    GB__ASSERT(r->lent && r->handle && (r->state == GB__LIVE || r->state == GB__RETIRED));
    lent_remove(r);
    r->handle = 0;
    r->state = GB__FREE;
    r->gen++;
    gb__mem *o = pg->owner;
    if (o) {
        r->parent = pg->rfree;
        pg->rfree = r;
        if (!gb__list_linked(&pg->rlink))
            gb__list_push(&o->dremote, &pg->rlink);
        atomic_store_explicit(&o->dpending, true, memory_order_relaxed);
    } else {
        GB__ASSERT(pg->nused > 0);
        gb__handle_slot_release(NULL, pg, r);
        release = --pg->nused == 0;
        if (release)
            orphan_release(pg);
    }
    pthread_mutex_unlock(&dir_lock);
    if (release)
        gb__chunk_put(&m->cache, pg->chunk);
}

/* Takes the slots on pg's rfree back for m, its owner (at a collect, or
 * at its thread's exit); dir_lock held. True when the page's last slot is
 * free. */
static bool rfree_take(gb__mem *m, gb__dpage *pg)
{
    gb__list_remove(&pg->rlink);
    for (gb_region *r = pg->rfree, *next; r; r = next) {
        next = r->parent;
        GB__ASSERT(r->state == GB__FREE && !r->handle && r->page == pg && pg->nused > 0);
        gb__handle_slot_release(m, pg, r);
        pg->nused--;
    }
    pg->rfree = NULL;
    return pg->nused == 0;
}

/* A block given back to another thread's cache: the record in its first
 * bytes (a block is at least map_min bytes, and nothing reads it now). */
typedef struct given {
    struct given *next;
    gb__chunk chunk;
} given;

void gb__handle_give_block(gb_region *r, gb__chunk c)
{
    gb__mem *m = r->home;
    if (c.src == GB__SRC_MAP && gb__map_cache_reserve(&m->cache, c.size)) {
        pthread_mutex_lock(&dir_lock);
        gb__mem *o = r->page->owner;
        if (o && o != m) {
            given *g = c.base;
            g->chunk = c;
            g->next = o->dblocks;
            o->dblocks = g;
            gb__map_count_cached(c.size, true);
            pthread_mutex_unlock(&dir_lock);
            return;
        }
        pthread_mutex_unlock(&dir_lock);
        gb__map_cache_unreserve(c.size);
    }
    gb__chunk_put(&m->cache, c);
}

/* Takes the blocks of list g, given back to m, into m's cache (or to the
 * OS, when the bound has no room for one by then). */
static void given_take(gb__mem *m, given *g)
{
    while (g) {
        given *next = g->next;
        gb__chunk c = g->chunk;
        GB__ASSERT(c.base == (void *)g && c.src == GB__SRC_MAP);
        gb__map_count_cached(c.size, false);
        gb__map_cache_unreserve(c.size);
        gb__chunk_put(&m->cache, c);
        g = next;
    }
}

void gb__handle_collect(gb__mem *m)
{
    gb__list empty;
    gb__list_init(&empty);
    pthread_mutex_lock(&dir_lock);
    atomic_store_explicit(&m->dpending, false, memory_order_relaxed);
    given *blocks = m->dblocks;
    m->dblocks = NULL;
    while (!gb__list_empty(&m->dremote)) {
        gb__dpage *pg = GB__LIST_ENTRY(m->dremote.next, gb__dpage, rlink);
        GB__ASSERT(pg->owner == m && pg->rfree);
        if (rfree_take(m, pg))
            gb__list_push(&empty, &pg->rlink);
    }
    pthread_mutex_unlock(&dir_lock);
    given_take(m, blocks);
    /* A page with no slot in use has no lent slot: no other thread can
     * reach it any more, and it goes as any page whose last slot is freed. */
    while (!gb__list_empty(&empty)) {
        gb__dpage *pg = GB__LIST_ENTRY(empty.next, gb__dpage, rlink);
        gb__list_remove(&pg->rlink);
        gb__handle_page_empty(m, pg);
    }
}

/* ------------------------------------------------------ handle checks */

/* What a handle that is not the running context's innermost region is. */
typedef enum hkind {
    H_REGION,  /* names a region of this thread, LIVE or RETIRED */
    H_LEFT,    /* names a region that was left (its slot moved on) */
    H_BOGUS,   /* no gb_enter returned it */
    H_THREAD,  /* issued by another thread, which is running */
    H_EXITED,  /* issued by a thread that has exited */
    H_FLIGHT,  /* names a region in flight (detached, not attached since) */
    H_HELD,    /* names a region another thread holds (attached there) */
} hkind;

/* What lent region r is to the thread whose memory is m; dir_lock held. */
static hkind lent_kind(const gb__mem *m, const gb_region *r)
{
    if (r->state == GB__FLIGHT)
        return H_FLIGHT;
    return r->home == m ? H_REGION : H_HELD;
}

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
    const gb_region *own = NULL; /* a lent slot of this thread's page that h names */
    if (o == m) {
        /* Ours: only this thread changes the entry's page and floor. */
        gb__dpage *pg = dir[e].page;
        if (!pg)
            return gen < dir[e].floor ? H_LEFT : H_BOGUS;
        /* The entry's page is the thread's and knows its entry. */
        GB__ASSERT(pg->owner == m && pg->entry == e && pg->nfresh <= pg->cap);
        if (s >= pg->nfresh)
            return gen < pg->floor ? H_LEFT : H_BOGUS;
        gb_region *r = &pg->slot[s];
        /* A lent slot another thread may change: asked in the table of lent
         * regions, under the lock, as another thread's handle is. Reading
         * lent here races only with a thread that holds a region this one
         * handed over, whose handle this one is misusing. */
        if (!r->lent) {
            if (r->handle != h)
                return gen < r->gen ? H_LEFT : H_BOGUS;
            /* A slot with a handle is in use, and its handle is its own. */
            GB__ASSERT(r->state != GB__FREE && r->page == pg && r->gen == gen);
            *out = r;
            return H_REGION;
        }
        own = r;
    }
    pthread_mutex_lock(&dir_lock);
    gb_region *lent = lent_find(h);
    if (lent || own) {
        /* h names a lent region, or else a slot of this thread's page that
         * was lent when read above. A generation up to the slot's was
         * given out, and h is not lent now: its region was left, since or
         * before (a region left on another thread between the read and
         * the lock keeps the slot's generation until this thread takes
         * the slot back). A generation past the slot's never was. */
        hkind k = lent ? lent_kind(m, lent) : gen <= own->gen ? H_LEFT : H_BOGUS;
        pthread_mutex_unlock(&dir_lock);
        *out = k == H_REGION ? lent : NULL;
        return k;
    }
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

GB__NORETURN void gb__handle_die_not_innermost(const char *who, gb__mem *m, const gb__rstack *cur, gb_region *h,
                                               const char *remedy)
{
    gb_region *r = gb__handle_region(who, m, h);
    if (r->stack == cur) {
        size_t above = 0;
        for (const gb_region *x = cur->top; x != r; x = x->parent)
            above++;
        gb__die("%s: region %p is not the innermost region (%zu regions entered after it are "
                "still live; %s)",
                who, (void *)h, above, remedy);
    }
    gb__handle_die_other_context(who, cur, h, r);
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
        gb__die("%s: region %p was entered by another thread, and this thread does not hold it; "
                "a region is used and left only by the thread that holds it (gb_region_detach "
                "and gb_region_attach hand it over)",
                who, (void *)h);
    case H_EXITED:
        gb__die("%s: region %p was entered by another thread, which has exited, and this thread "
                "does not hold it; a region is used and left only by the thread that holds it",
                who, (void *)h);
    case H_FLIGHT:
        gb__die("%s: region %p is in flight: it was detached (gb_region_detach) and not attached "
                "since; no thread may use, reset, leave or detach it before gb_region_attach",
                who, (void *)h);
    case H_HELD:
        gb__die("%s: region %p is held by another thread, which attached it "
                "(gb_region_attach); a region is used and left only by the thread that holds it",
                who, (void *)h);
    case H_BOGUS:
        break;
    }
    gb__die("%s: %p is not a region handle (gb_enter never returned it)", who, (void *)h);
}

#if GB_CHECK
/* (handle.h) Page pg of m, whole: every slot of
 * [0, nfresh) is free with handle 0 or used (LIVE or RETIRED) with a
 * handle that decodes to it, nused counts the used ones, the free list
 * holds free slots of this page only, generations lie in [floor, gen_hi],
 * and the page is on m's available list exactly when it has a slot to
 * give and is not m's spare; only the spare is empty. */
static bool on_rfree(const gb__dpage *pg, const gb_region *r)
{
    for (const gb_region *x = pg->rfree; x; x = x->parent)
        if (x == r)
            return true;
    return false;
}

void gb__dpage_check(const gb__mem *m, const gb__dpage *pg)
{
    /* Lent slots and rfree change under the lock: read them under it. */
    pthread_mutex_lock(&dir_lock);
    GB__EXPECT(pg->owner == m, "descriptor page %p is owned by the memory %p, not its thread's %p",
           (const void *)pg, (const void *)pg->owner, (const void *)m);
    GB__EXPECT(pg->nfresh <= pg->cap && pg->floor <= pg->gen_hi,
           "descriptor page %p: nfresh %u > cap %u, or floor %ju > gen_hi %ju", (const void *)pg,
           pg->nfresh, pg->cap, (uintmax_t)pg->floor, (uintmax_t)pg->gen_hi);
    size_t used = 0, nremote = 0;
    for (uint32_t i = 0; i < pg->nfresh; i++) {
        const gb_region *s = &pg->slot[i];
        uintptr_t where = (uintptr_t)pg->entry << GB__H_SLOT_BITS | i;
        GB__EXPECT(s->page == pg && s->where == where,
               "descriptor page %p: slot %u names page %p and place %#jx, not its own", (const void *)pg, i,
               (const void *)s->page, (uintmax_t)s->where);
        if (!s->handle) {
            GB__EXPECT(s->state == GB__FREE && !s->lent,
                   "descriptor page %p: slot %u has handle 0 but state %d%s, not FREE", (const void *)pg, i,
                   (int)s->state, s->lent ? " and is lent" : "");
            /* One freed elsewhere raises gen_hi when its owner takes it back. */
            GB__EXPECT(s->gen <= pg->gen_hi || on_rfree(pg, s),
                   "descriptor page %p: free slot %u has generation %ju above gen_hi %ju", (const void *)pg, i,
                   (uintmax_t)s->gen, (uintmax_t)pg->gen_hi);
            continue;
        }
        used++;
        GB__EXPECT(s->lent || s->state == GB__LIVE || s->state == GB__RETIRED,
               "descriptor page %p: slot %u has handle %p but state %d, and is not lent (a slot with a handle is LIVE or "
               "RETIRED)",
               (const void *)pg, i, (void *)s->handle, (int)s->state);
        GB__EXPECT(pg->floor <= s->gen && s->gen <= pg->gen_hi,
               "descriptor page %p: slot %u's generation %ju is outside [floor %ju, gen_hi %ju]",
               (const void *)pg, i, (uintmax_t)s->gen, (uintmax_t)pg->floor, (uintmax_t)pg->gen_hi);
        GB__EXPECT(s->handle == ((uintptr_t)(s->gen << GB__H_GEN_SHIFT) | where),
               "descriptor page %p: slot %u's handle %p is not its generation %ju and place %#jx",
               (const void *)pg, i, (void *)s->handle, (uintmax_t)s->gen, (uintmax_t)where);
        if (s->lent) {
            /* Another thread may hold it and change the rest (its state at
             * a leave): its holder's checkers read that. */
            GB__EXPECT(lent_find(s->handle) == s, "descriptor page %p: slot %u is lent but not in the table of lent regions",
                   (const void *)pg, i);
            continue;
        }
        GB__EXPECT(gb__handle_lookup("gb__handle_check", (gb__mem *)m, (const gb_region *)s->handle) == s,
               "region %p does not decode to its own slot (page %p, slot %u)", (void *)s->handle,
               (const void *)pg, i);
    }
    for (const gb_region *s = pg->rfree; s; s = s->parent) {
        GB__EXPECT(++nremote <= pg->nfresh - used && s >= pg->slot && s < pg->slot + pg->nfresh && !s->handle,
               "descriptor page %p: its rfree holds %p, not one of its free slots, or more than them",
               (const void *)pg, (const void *)s);
    }
    GB__EXPECT(gb__list_linked(&pg->rlink) == (nremote > 0),
           "descriptor page %p is %son its thread's list of pages with slots freed elsewhere, with %zu",
           (const void *)pg, gb__list_linked(&pg->rlink) ? "" : "not ", nremote);
    GB__EXPECT(used + nremote == pg->nused,
           "descriptor page %p: nused is %u, but %zu of its slots are LIVE or RETIRED (or lent), and %zu "
           "were freed elsewhere",
           (const void *)pg, pg->nused, used, nremote);
    size_t nfree = 0;
    for (const gb_region *s = pg->free; s; s = s->parent) {
        GB__EXPECT(++nfree <= pg->nfresh - used - nremote,
               "descriptor page %p: its free list holds more than its %zu free slots", (const void *)pg,
               (size_t)(pg->nfresh - used - nremote));
        GB__EXPECT(s >= pg->slot && s < pg->slot + pg->nfresh,
               "descriptor page %p: its free list holds %p, not one of its used slots", (const void *)pg,
               (const void *)s);
        GB__EXPECT(s->handle == 0 && s->state == GB__FREE,
               "descriptor page %p: slot %zu is on its free list with handle %p and state %d",
               (const void *)pg, (size_t)(s - pg->slot), (void *)s->handle, (int)s->state);
    }
    bool spare = pg == m->dspare;
    bool has_slot = pg->free || pg->nfresh < pg->cap;
    GB__EXPECT(gb__handle_in_avail(pg) == (has_slot && !spare),
           "descriptor page %p is %son the available list, with %s slot to give%s", (const void *)pg,
           gb__handle_in_avail(pg) ? "" : "not ", has_slot ? "a" : "no", spare ? " (the spare)" : "");
    GB__EXPECT(spare ? pg->nused == 0 : pg->nused > 0,
           "descriptor page %p holds %u regions%s (only the spare is kept empty)", (const void *)pg,
           pg->nused, spare ? " but is the spare" : "");
    pthread_mutex_unlock(&dir_lock);
}

#endif

/* ---------------------------------------------------------- thread exit */

void gb__handle_at_exit(gb__mem *m)
{
    /* Entries whose page still holds regions (entered by coroutines the
     * thread never freed, or handed to other threads) are orphaned: their
     * page is no thread's, and the thread that frees its last lent slot
     * gives it back. The rest go back to the pool. */
    gb__list empty;
    gb__list_init(&empty);
    pthread_mutex_lock(&dir_lock);
    for (uint32_t e = 0; e < dir_used; e++) {
        if (atomic_load_explicit(&dir[e].owner, memory_order_relaxed) != m)
            continue;
        gb__dpage *pg = dir[e].page;
        if (pg) {
            /* Only pages holding regions outlive the thread: the spare was
             * given back before (gb__handle_trim), and the slots freed
             * elsewhere were taken back (gb__handle_collect) but for those
             * freed since. */
            GB__ASSERT(pg->nused > 0 && pg != m->dspare);
            if (pg->rfree && rfree_take(m, pg)) {
                gb__list_push(&empty, &pg->rlink);
                continue;
            }
            if (gb__handle_in_avail(pg))
                gb__list_remove(&pg->alink);
            pg->owner = NULL;
            atomic_store_explicit(&dir[e].owner, DIR_ORPHAN, memory_order_relaxed);
            continue;
        }
        atomic_store_explicit(&dir[e].owner, NULL, memory_order_relaxed);
        dir[e].next = dir_pool;
        dir_pool = e + 1;
    }
    /* Its pages are no thread's now: no block is given to it after this. */
    given *blocks = m->dblocks;
    m->dblocks = NULL;
    pthread_mutex_unlock(&dir_lock);
    given_take(m, blocks);
    /* A page whose last lent slot came back just now goes as any other,
     * its entry to the vacant list, and that to the pool below. */
    if (!gb__list_empty(&empty)) {
        while (!gb__list_empty(&empty)) {
            gb__dpage *pg = GB__LIST_ENTRY(empty.next, gb__dpage, rlink);
            gb__list_remove(&pg->rlink);
            dpage_release(m, pg);
        }
        gb__handle_at_exit(m);
        return;
    }
    /* m's lists of pages and vacant entries are not emptied: the thread's
     * state is freed next (thread.c), and nothing before reads them. */
}
