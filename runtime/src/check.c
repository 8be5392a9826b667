/* check.c -- the runtime's invariants, checked (built only with GB_CHECK).
 *
 * One file holds every debug check, so that the modules keep their code
 * and the checked build differs from the shipped one by this file and the
 * GB__ASSERT lines alone. Each checker reads what a module's structs say
 * of themselves (the comments at the structs, in the headers) and nothing
 * the code does not promise; none writes anything, and each costs time
 * linear in the state it walks. A broken invariant stops the process
 * through gb__die, with the checker, its line here, and the invariant in
 * words, with the numbers that break it.
 */
#include "check.h"

#include "arena.h"
#include "coro.h"
#include "handle.h"
#include "index.h"
#include "init.h"
#include "pin.h"
#include "region.h"
#include "os/os.h"
#include "sanitizers.h"
#include "small.h"
#include "stats.h"
#include "thread.h"

#include <stdarg.h>
#include <stdio.h>

GB__NORETURN GB__PRINTF(3, 4) static void broken(const char *checker, int line, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gb__die("invariant broken: %s (%s, check.c:%d)", msg, checker, line);
}

/* Stops naming the invariant (the message) unless cond holds. */
#define EXPECT(cond, ...)                                                                            \
    do {                                                                                             \
        if (GB__UNLIKELY(!(cond)))                                                                   \
            broken(__func__, __LINE__, __VA_ARGS__);                                                 \
    } while (0)

/* A list walk that meets more links than this is taken for a cycle: no
 * list of the runtime holds nearly as many. */
#define MOST_LINKS ((size_t)1 << 32)

/* ------------------------------------------------ descriptor pages */

/* Page pg of t, whole (handle.h, struct gb__dpage): every slot of
 * [0, nfresh) is free with handle 0 or used (LIVE or RETIRED) with a
 * handle that decodes to it, nused counts the used ones, the free list
 * holds free slots of this page only, generations lie in [floor, gen_hi],
 * and the page is on t's available list exactly when it has a slot to
 * give and is not t's spare; only the spare is empty. */
static void page_check(const gb__thread *t, const gb__dpage *pg)
{
    EXPECT(pg->owner == &t->mem, "descriptor page %p is owned by the memory %p, not its thread's %p",
           (const void *)pg, (const void *)pg->owner, (const void *)&t->mem);
    EXPECT(pg->nfresh <= pg->cap && pg->floor <= pg->gen_hi,
           "descriptor page %p: nfresh %u > cap %u, or floor %ju > gen_hi %ju", (const void *)pg,
           pg->nfresh, pg->cap, (uintmax_t)pg->floor, (uintmax_t)pg->gen_hi);
    size_t used = 0;
    for (uint32_t i = 0; i < pg->nfresh; i++) {
        const gb_region *s = &pg->slot[i];
        uintptr_t where = (uintptr_t)pg->entry << GB__H_SLOT_BITS | i;
        EXPECT(s->page == pg && s->where == where,
               "descriptor page %p: slot %u names page %p and place %#jx, not its own", (const void *)pg, i,
               (const void *)s->page, (uintmax_t)s->where);
        if (!s->handle) {
            EXPECT(s->state == GB__FREE, "descriptor page %p: slot %u has handle 0 but state %d, not FREE",
                   (const void *)pg, i, (int)s->state);
            EXPECT(s->gen <= pg->gen_hi, "descriptor page %p: free slot %u has generation %ju above gen_hi %ju",
                   (const void *)pg, i, (uintmax_t)s->gen, (uintmax_t)pg->gen_hi);
            continue;
        }
        used++;
        EXPECT(s->state == GB__LIVE || s->state == GB__RETIRED,
               "descriptor page %p: slot %u has handle %p but state %d (a slot with a handle is LIVE or "
               "RETIRED)",
               (const void *)pg, i, (void *)s->handle, (int)s->state);
        EXPECT(pg->floor <= s->gen && s->gen <= pg->gen_hi,
               "descriptor page %p: slot %u's generation %ju is outside [floor %ju, gen_hi %ju]",
               (const void *)pg, i, (uintmax_t)s->gen, (uintmax_t)pg->floor, (uintmax_t)pg->gen_hi);
        EXPECT(s->handle == ((uintptr_t)(s->gen << GB__H_GEN_SHIFT) | where),
               "descriptor page %p: slot %u's handle %p is not its generation %ju and place %#jx",
               (const void *)pg, i, (void *)s->handle, (uintmax_t)s->gen, (uintmax_t)where);
        EXPECT(gb__handle_lookup("gb__handle_check", (gb__mem *)&t->mem, (const gb_region *)s->handle) == s,
               "region %p does not decode to its own slot (page %p, slot %u)", (void *)s->handle,
               (const void *)pg, i);
    }
    EXPECT(used == pg->nused, "descriptor page %p: nused is %u, but %zu of its slots are LIVE or RETIRED",
           (const void *)pg, pg->nused, used);
    size_t nfree = 0;
    for (const gb_region *s = pg->free; s; s = s->parent) {
        EXPECT(++nfree <= pg->nfresh - used,
               "descriptor page %p: its free list holds more than its %zu free slots", (const void *)pg,
               (size_t)(pg->nfresh - used));
        EXPECT(s >= pg->slot && s < pg->slot + pg->nfresh,
               "descriptor page %p: its free list holds %p, not one of its used slots", (const void *)pg,
               (const void *)s);
        EXPECT(s->handle == 0 && s->state == GB__FREE,
               "descriptor page %p: slot %zu is on its free list with handle %p and state %d",
               (const void *)pg, (size_t)(s - pg->slot), (void *)s->handle, (int)s->state);
    }
    bool spare = pg == t->mem.dspare;
    bool has_slot = pg->free || pg->nfresh < pg->cap;
    EXPECT(gb__handle_in_avail(pg) == (has_slot && !spare),
           "descriptor page %p is %son the available list, with %s slot to give%s", (const void *)pg,
           gb__handle_in_avail(pg) ? "" : "not ", has_slot ? "a" : "no", spare ? " (the spare)" : "");
    EXPECT(spare ? pg->nused == 0 : pg->nused > 0,
           "descriptor page %p holds %u regions%s (only the spare is kept empty)", (const void *)pg,
           pg->nused, spare ? " but is the spare" : "");
}

void gb__handle_check(const gb__thread *t)
{
    size_t n = 0;
    GB__LIST_EACH(l, &t->mem.davail)
    {
        EXPECT(++n < MOST_LINKS, "the list of descriptor pages with a free slot does not end");
        page_check(t, GB__LIST_ENTRY(l, gb__dpage, alink));
    }
    if (t->mem.dspare)
        page_check(t, t->mem.dspare);
    /* Pages full of regions are on no list: region_check reaches them. */
}

/* ------------------------------------------------------------- regions */

/* Whether the address index holds exactly the range at base under value
 * val and owner. */
static bool indexed(const gb__thread *t, const void *base, uintptr_t val, const void *owner)
{
    void *o = NULL;
    return gb__index_find(&t->mem.index, base, &o) == val && o == owner;
}

void gb__region_check(const gb__thread *t, const gb_region *r, const gb__rstack *on)
{
    const void *h = (const void *)r->handle;
    /* State against where it is (region.h, struct gb_region). */
    if (r->state == GB__LIVE) {
        EXPECT(on && r->stack == on, "region %p is LIVE on stack %p but its stack field says %p", h,
               (const void *)on, (const void *)r->stack);
        EXPECT(!gb__list_linked(&r->rlink) && !r->witness,
               "region %p is LIVE but on a retired list or with a witness", h);
    } else {
        EXPECT(r->state == GB__RETIRED, "region %p is %s, in state %d (expected %s)", h,
               on ? "on a region stack" : "on a retired list", (int)r->state, on ? "LIVE" : "RETIRED");
        EXPECT(!on && !r->stack && !r->parent, "region %p is RETIRED but on a stack (stack %p, parent %p)", h,
               (const void *)r->stack, (const void *)r->parent);
        EXPECT(gb__list_linked(&r->rlink), "region %p is RETIRED but on no retired list", h);
    }

    /* The handle names this slot (handle.h). */
    const gb__dpage *pg = r->page;
    EXPECT(r->handle != 0 && pg && pg->owner == &t->mem,
           "region %p: a region in use has a handle and a page of this thread (page %p)", h, (const void *)pg);
    EXPECT(r->home == &t->mem, "region %p: its home is %p, not its thread's memory %p", h, (const void *)r->home,
           (const void *)&t->mem);
    size_t i = (size_t)(r - pg->slot);
    EXPECT(r >= pg->slot && i < pg->nfresh, "region %p is not a used slot of its page %p", h, (const void *)pg);
    EXPECT(r->handle == ((uintptr_t)(r->gen << GB__H_GEN_SHIFT) | r->where) &&
               r->where == ((uintptr_t)pg->entry << GB__H_SLOT_BITS | i),
           "region %p: its handle is not its generation %ju and place %#jx (page entry %u, slot %zu)", h,
           (uintmax_t)r->gen, (uintmax_t)r->where, pg->entry, i);
    EXPECT(gb__handle_lookup("gb__region_check", (gb__mem *)&t->mem, (const gb_region *)h) == r,
           "region %p: its handle does not decode to its own slot", h);
    /* A page full of regions is on no list: the region in its first used
     * slot has it checked. */
    if (!gb__handle_in_avail(pg) && pg != t->mem.dspare) {
        size_t j = 0;
        while (j < i && !pg->slot[j].handle)
            j++;
        if (j == i)
            page_check(t, pg);
    }

    /* Blocks: owner, the index, count and bytes; cur_block is the newest
     * chained (non-solo) block and last_block one of them. */
    size_t n = 0, bytes = 0;
    const gb__block *chained = NULL;
    bool cur_seen = false, last_seen = false;
    for (const gb__block *b = r->blocks; b; b = b->next) {
        EXPECT(++n <= r->nblocks, "region %p: its block list holds more than nblocks (%zu) blocks", h,
               r->nblocks);
        EXPECT(b->owner == r && b->chunk.base == (const void *)b && b->chunk.size > GB__BLOCK_HDR,
               "region %p: block %p has owner %p, chunk %p of %zu bytes (expected the region, the block "
               "itself, more than a header)",
               h, (const void *)b, (const void *)b->owner, b->chunk.base, b->chunk.size);
        EXPECT(indexed(t, b, (uintptr_t)b | GB__INDEX_BLOCK, r),
               "region %p: block %p is not in the thread's address index under the region", h, (const void *)b);
        if (!b->solo && !chained)
            chained = b;
        cur_seen |= b == r->cur_block;
        last_seen |= b == r->last_block;
        bytes += b->chunk.size;
    }
    EXPECT(n == r->nblocks, "region %p: nblocks is %zu, its block list holds %zu", h, r->nblocks, n);
    EXPECT(bytes == r->bytes, "region %p: bytes is %zu, the sum of its blocks' sizes is %zu", h, r->bytes,
           bytes);
    const gb__block *cur = r->cur_block;
    if (!cur) {
        EXPECT(!r->bump && !r->end, "region %p: bump %p and end %p with no current block", h, (void *)r->bump,
               (void *)r->end);
        /* A retired reset's contents have blocks and no current one. */
        EXPECT(r->state != GB__LIVE || !chained,
               "region %p: no current block, but chained block %p (cur_block is the newest chained block)", h,
               (const void *)chained);
    } else {
        EXPECT(cur_seen && cur == chained,
               "region %p: cur_block %p is not its newest chained block (%p)%s", h, (const void *)cur,
               (const void *)chained, cur_seen ? "" : ", nor on its block list");
        const char *lo = (const char *)cur + GB__BLOCK_HDR, *hi = (const char *)cur + cur->chunk.size;
        EXPECT(lo <= r->bump && r->bump <= r->end && r->end <= hi,
               "region %p: bump %p <= end %p, both inside cur_block [%p, %p), does not hold", h, (void *)r->bump,
               (void *)r->end, (const void *)lo, (const void *)hi);
    }
    EXPECT(!r->last == !r->last_block, "region %p: last %p and last_block %p (both or neither)", h, r->last,
           (const void *)r->last_block);
    if (r->last) {
        const gb__block *lb = r->last_block;
        EXPECT(last_seen, "region %p: last_block %p is not one of its blocks", h, (const void *)lb);
        const char *p = r->last, *lo = (const char *)lb + GB__BLOCK_HDR, *hi = (const char *)lb + lb->chunk.size;
        EXPECT(lo <= p && p < hi, "region %p: last %p is not inside last_block's payload [%p, %p)", h, r->last,
               (const void *)lo, (const void *)hi);
        EXPECT(lb != cur || p < r->bump, "region %p: last %p is at or above bump %p (below bump is taken)", h,
               r->last, (void *)r->bump);
    }

    /* Kept blocks: on no other list, owner NULL (in the index too),
     * counted in nkept and kept_bytes. */
    n = bytes = 0;
    for (const gb__block *b = r->kept; b; b = b->next) {
        EXPECT(++n <= r->nkept, "region %p: its kept list holds more than nkept (%zu) blocks", h, r->nkept);
        EXPECT(!b->owner && indexed(t, b, (uintptr_t)b | GB__INDEX_BLOCK, NULL),
               "region %p: kept block %p has owner %p, here or in the address index (a kept block has none)", h,
               (const void *)b, (const void *)b->owner);
        bytes += b->chunk.size;
    }
    EXPECT(n == r->nkept && bytes == r->kept_bytes,
           "region %p: nkept %zu and kept_bytes %zu, but its kept list holds %zu blocks of %zu bytes", h,
           r->nkept, r->kept_bytes, n, bytes);

    /* Arenas: each bound to this region (arena.h). */
    n = 0;
    GB__ARENA_EACH(a, r)
    {
        EXPECT(++n < MOST_LINKS, "region %p: its arena list does not end", h);
        EXPECT(a->holder == r, "region %p: arena %p on its list is held by %p", h, (const void *)a,
               (const void *)a->holder);
        EXPECT(!a->chunk.base || indexed(t, a->chunk.base, (uintptr_t)a | GB__INDEX_ARENA, NULL),
               "region %p: arena %p (chunk %p) is not in the thread's address index", h, (const void *)a,
               a->chunk.base);
    }
}

/* Stack s of t (region.h, gb__rstack): top, then each parent, depth long,
 * each region LIVE on s. */
static void stack_check(const gb__thread *t, const gb__rstack *s, const char *whose)
{
    size_t d = 0;
    if (s == &t->main_stack)
        EXPECT(!s->owner && !s->resumer, "the thread's own region stack names an owner (%p) or a resumer (%p)",
               (const void *)s->owner, (const void *)s->resumer);
    for (const gb_region *r = s->top; r; r = r->parent) {
        EXPECT(++d <= s->depth, "%s region stack: more regions on it than its depth %zu", whose, s->depth);
        gb__region_check(t, r, s);
    }
    EXPECT(d == s->depth, "%s region stack: depth is %zu, %zu regions are on it", whose, s->depth, d);
}

void gb__stacks_check(const gb__thread *t)
{
    const gb__rstack *want = t->cur_coro ? &t->cur_coro->rstack : &t->main_stack;
    EXPECT(t->cur == want, "the thread's cur is %p, not the running context's stack %p", (const void *)t->cur,
           (const void *)want);
    stack_check(t, &t->main_stack, "the thread's own");
    if (t->cur_coro)
        stack_check(t, &t->cur_coro->rstack, "the running coroutine's");
    /* Both walks are bounded as in gb__pin_check: this checker may run
     * before that one, on a list that loops. */
    size_t frozen = 0, chain = 0;
    GB__LIST_EACH(l, &t->pins.frozen)
    {
        EXPECT(++frozen < MOST_LINKS, "the frozen list does not end");
        gb__frozen *f = GB__LIST_ENTRY(l, gb__frozen, flink);
        if (gb__pin_is_frozen(f))
            stack_check(t, &gb__coro_of_frozen(f)->rstack, "a frozen coroutine's");
    }
    /* Each coroutine's stack names it; one running or waiting on the one
     * it resumed names the stack of the context that resumed it, so that
     * following resumer from t->cur visits exactly its resumers. */
    for (const gb_coro *c = t->cur_coro; c; c = c->caller) {
        EXPECT(++chain < MOST_LINKS, "the chain of resumers does not end");
        EXPECT(c->rstack.owner == gb__coro_handle_of(c), "coroutine %p's region stack names %p as its owner",
               (const void *)gb__coro_handle_of(c), (const void *)c->rstack.owner);
        const gb__rstack *by = c->caller ? &c->caller->rstack : &t->main_stack;
        EXPECT(c->rstack.resumer == by, "coroutine %p's region stack names %p as its resumer's, not %p",
               (const void *)gb__coro_handle_of(c), (const void *)c->rstack.resumer, (const void *)by);
    }
}

/* ------------------------------------------------------------- pinning */

/* The handle of the coroutine whose frozen-stack record f is, or NULL. */
static void *handle_of(gb__frozen *f)
{
    return f ? (void *)gb__coro_handle_of(gb__coro_of_frozen(f)) : NULL;
}

/* Whether f may be a witness (pin.h, region.h): the stack of one of t's
 * coroutines, frozen since it was found, or running (a witness that ran
 * and froze again, finished or was freed has been dropped). */
static bool may_witness(const gb__thread *t, gb__frozen *f)
{
    return f && gb__coro_of_frozen(f)->thread == t && (gb__pin_is_frozen(f) || gb__coro_of_frozen(f) == t->cur_coro);
}

/* The regions on c's witnessed list name c's stack and are retired; their
 * number. */
static size_t witnessed_check(gb_coro *c)
{
    size_t n = 0;
    GB__LIST_EACH(l, &c->fz.witnessed)
    {
        const gb_region *r = GB__LIST_ENTRY(l, gb_region, wlink);
        EXPECT(++n < MOST_LINKS, "coroutine %p: its witnessed list does not end",
               (void *)gb__coro_handle_of(c));
        EXPECT(r->witness == &c->fz && r->state == GB__RETIRED,
               "coroutine %p witnesses region %p, whose witness is %p and state %d (RETIRED, naming it)",
               (void *)gb__coro_handle_of(c), (void *)r->handle, handle_of(r->witness), (int)r->state);
    }
    return n;
}

void gb__pin_check(const gb__thread *t)
{
    /* The retired lists (thread.h): pinned ones have a witness that may
     * be one, on its witnessed list, counted in npinned; dirty ones have
     * none. */
    const gb__pins *p = &t->pins;
    size_t n = 0;
    GB__LIST_EACH(l, &p->retired_pinned)
    {
        const gb_region *r = GB__LIST_ENTRY(l, gb_region, rlink);
        EXPECT(++n <= p->npinned, "retired_pinned holds more regions than npinned (%zu)", p->npinned);
        EXPECT(may_witness(t, r->witness) && gb__list_linked(&r->wlink),
               "region %p is on retired_pinned with witness %p%s", (void *)r->handle, handle_of(r->witness),
               !r->witness ? " (a pinned region has one)"
               : gb__list_linked(&r->wlink) ? ", which is neither frozen nor running"
                                            : ", on no witnessed list");
        gb__region_check(t, r, NULL);
    }
    EXPECT(n == p->npinned, "npinned is %zu, retired_pinned holds %zu regions", p->npinned, n);
    n = 0;
    GB__LIST_EACH(l, &p->retired_dirty)
    {
        const gb_region *r = GB__LIST_ENTRY(l, gb_region, rlink);
        EXPECT(++n < MOST_LINKS, "retired_dirty does not end");
        EXPECT(!r->witness && !gb__list_linked(&r->wlink),
               "region %p is on retired_dirty but has witness %p (a region that needs a try has none)",
               (void *)r->handle, handle_of(r->witness));
        gb__region_check(t, r, NULL);
    }
    /* The frozen list: this thread's coroutines, suspended or waiting on
     * one they resumed; never the running one (thread.h). Those that
     * thawed since it was last read may still be on it: the running one,
     * or one that has finished (pin.h). */
    gb_coro *run = t->cur_coro;
    size_t waiting = 0, witnessed = 0;
    n = 0;
    GB__LIST_EACH(l, &p->frozen)
    {
        gb__frozen *f = GB__LIST_ENTRY(l, gb__frozen, flink);
        gb_coro *c = gb__coro_of_frozen(f);
        EXPECT(++n < MOST_LINKS, "the frozen list does not end");
        if (!gb__pin_is_frozen(f)) {
            EXPECT(c->thread == t && (c == run || c->status == GB_CORO_FINISHED),
                   "coroutine %p is on the frozen list thawed, in status %d, but is neither running nor "
                   "finished (every other one is frozen)",
                   (void *)gb__coro_handle_of(c), (int)c->status);
            /* A thawed stack's summary is stale: empty (pin.c). */
            gb__pin_summary_check(f);
            continue;
        }
        EXPECT(c->thread == t && c != run &&
                   (c->status == GB_CORO_SUSPENDED || c->status == GB_CORO_RUNNING),
               "coroutine %p on the frozen list is %s, in status %d (frozen: suspended, or waiting on one "
               "it resumed)",
               (void *)gb__coro_handle_of(c),
               c->thread != t ? "another thread's" : c == run ? "the running one" : "this thread's",
               (int)c->status);
        waiting += c->status == GB_CORO_RUNNING;
        witnessed += witnessed_check(c);
        /* Its summary, against its stack as it is now (pin.c). */
        gb__pin_summary_check(f);
    }
    /* The running coroutine, and the chain of those waiting on it. */
    size_t chain = 0;
    if (run) {
        EXPECT(run->thread == t && run->status == GB_CORO_RUNNING && !gb__pin_is_frozen(&run->fz),
               "the running coroutine %p is in status %d%s", (void *)gb__coro_handle_of(run), (int)run->status,
               gb__pin_is_frozen(&run->fz) ? " and on the frozen list" : "");
        gb__pin_summary_check(&run->fz);
        witnessed += witnessed_check(run);
        for (const gb_coro *x = run->caller; x; x = x->caller) {
            EXPECT(++chain < MOST_LINKS, "the chain of resumers does not end");
            EXPECT(x->thread == t && x->status == GB_CORO_RUNNING && gb__pin_is_frozen(&x->fz) &&
                       gb__list_linked(&x->fz.flink),
                   "coroutine %p waits on the running one but is in status %d%s",
                   (void *)gb__coro_handle_of(x), (int)x->status,
                   gb__pin_is_frozen(&x->fz) ? "" : " and not on the frozen list");
        }
    }
    EXPECT(waiting == chain,
           "%zu frozen coroutines are RUNNING (waiting on one they resumed), but %zu wait on the running one",
           waiting, chain);

    EXPECT(witnessed == p->npinned,
           "the witnessed lists hold %zu regions, npinned is %zu (each pinned region is on its witness's)",
           witnessed, p->npinned);
}

/* ---------------------------------------------------------------- cache */

/* Reads the links in the cached blocks' first words, which ASan keeps
 * poisoned while they are cached. */
GB__NO_ASAN void gb__chunk_check(const gb__thread *t)
{
    size_t bound = gb__cfg.cache_bytes, bytes = 0;
    for (int k = 0; k < GB__CACHE_CLASSES; k++) {
        /* The size of class k's blocks (chunk.c): four classes per
         * doubling from map_min. */
        size_t octave = gb__cfg.map_min << (k / 4);
        size_t size = octave + (size_t)(k % 4) * (octave / 4);
        size_t n = 0;
        for (void *const *p = t->mem.cache.head[k]; p; p = *p) {
            EXPECT(++n <= bound / size,
                   "the cache's list of class %d holds more %zu-byte blocks than the bound (%zu bytes) admits",
                   k, size, bound);
            bytes += size;
        }
    }
    EXPECT(bytes == t->mem.cache.bytes, "the thread's cache.bytes is %zu, its lists hold %zu bytes", t->mem.cache.bytes,
           bytes);
    size_t spare = t->mem.dspare ? t->mem.dspare->chunk.size : 0;
    EXPECT(t->mem.cache.bytes + spare <= bound,
           "the thread caches %zu bytes and a spare page of %zu, past the bound of %zu", t->mem.cache.bytes, spare,
           bound);
    size_t cached = atomic_load_explicit(&gb__stat.bytes_cached, memory_order_relaxed);
    EXPECT(cached <= bound, "bytes_cached is %zu, past the process's bound of %zu", cached, bound);
}

/* ---------------------------------------------------------------- slabs */

static unsigned count_bits(const uint64_t *v)
{
    unsigned n = 0;
    for (unsigned w = 0; w < GB__SLAB_WORDS; w++)
        n += (unsigned)__builtin_popcountll(v[w]);
    return n;
}

/* Slab s whole (small.h, struct gb__slab); `full_seen` says whether a
 * full slab came before it on the list. Its dirty bytes are added to
 * *dirty. */
static void slab_check(const gb__slab *s, bool full_seen, size_t *dirty)
{
    const size_t u = gb__os.page_size;
    unsigned used = count_bits(s->used), ndirty = count_bits(s->dirty), released = count_bits(s->released);
    EXPECT(used == s->nused && ndirty == s->ndirty && released == s->nreleased,
           "slab %p counts %u used, %u dirty and %u released units, but its bits say %u, %u and %u",
           (const void *)s, s->nused, s->ndirty, s->nreleased, used, ndirty, released);
    for (unsigned w = 0; w < GB__SLAB_WORDS; w++)
        EXPECT(!(s->used[w] & s->dirty[w]) && !(s->used[w] & s->released[w]) && !(s->dirty[w] & s->released[w]),
               "slab %p: a unit of units %u-%u is two of used, dirty and released", (const void *)s, w * 64,
               w * 64 + 63);
    EXPECT(used > 0, "slab %p holds no unit in use but was not given back", (const void *)s);
    EXPECT((size_t)ndirty * u < GB__SLAB_RELEASE_BATCH,
           "slab %p holds %u dirty units (%zu bytes), a batch or more, not emptied", (const void *)s, ndirty,
           (size_t)ndirty * u);
    EXPECT(s->size >= GB__SLAB_UNITS * u, "slab %p's mapping of %zu bytes is smaller than its %u units",
           (const void *)s, s->size, GB__SLAB_UNITS);
    EXPECT(!full_seen || used == GB__SLAB_UNITS, "slab %p, with %u of %u units in use, comes after a full one",
           (const void *)s, used, GB__SLAB_UNITS);
    *dirty += (size_t)ndirty * u;
}

void gb__small_check(void)
{
    size_t n = 0, dirty = 0;
    bool full_seen = false;
    const gb__list *slabs = gb__small_slabs_lock();
    GB__LIST_EACH(l, slabs)
    {
        EXPECT(++n < MOST_LINKS, "the list of slabs does not end");
        const gb__slab *s = GB__LIST_ENTRY(l, gb__slab, link);
        slab_check(s, full_seen, &dirty);
        full_seen = s->nused == GB__SLAB_UNITS;
    }
    size_t counted = atomic_load_explicit(&gb__stat.slabs, memory_order_relaxed);
    size_t said = atomic_load_explicit(&gb__stat.bytes_small_dirty, memory_order_relaxed);
    gb__small_slabs_unlock();
    EXPECT(n == counted, "%zu slabs are on the list, but gb__stat.slabs says %zu", n, counted);
    EXPECT(dirty == said, "the slabs hold %zu bytes of dirty units, but gb__stat.bytes_small_dirty says %zu",
           dirty, said);
}

/* ---------------------------------------------------------------- all */

void gb__check_thread(const gb__thread *t)
{
    gb__stacks_check(t);
    gb__pin_check(t);
    gb__handle_check(t);
    gb__chunk_check(t);
}

void gb__check_current(void)
{
    if (gb__tls)
        gb__check_thread(gb__tls);
    gb__small_check();
}
