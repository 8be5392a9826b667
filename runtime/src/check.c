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


/* The checkers' condition (base.h). */
#define EXPECT GB__EXPECT

/* A list walk that meets more links than this is taken for a cycle: no
 * list of the runtime holds nearly as many. */
#define MOST_LINKS ((size_t)1 << 32)

/* ------------------------------------------------ descriptor pages */

void gb__handle_check(const gb__thread *t)
{
    size_t n = 0;
    GB__LIST_EACH(l, &t->mem.davail)
    {
        EXPECT(++n < MOST_LINKS, "the list of descriptor pages with a free slot does not end");
        gb__dpage_check(&t->mem, GB__LIST_ENTRY(l, gb__dpage, alink));
    }
    if (t->mem.dspare)
        gb__dpage_check(&t->mem, t->mem.dspare);
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
    /* A lent region's page is another thread's (or no thread's, handle.c):
     * of it, only what never changes is read here. */
    EXPECT(r->handle != 0 && pg && (r->lent || pg->owner == &t->mem),
           "region %p: a region in use has a handle and a page of this thread, or is lent (page %p)", h,
           (const void *)pg);
    EXPECT(r->home == &t->mem, "region %p: its home is %p, not its thread's memory %p", h, (const void *)r->home,
           (const void *)&t->mem);
    size_t i = (size_t)(r - pg->slot);
    EXPECT(r >= pg->slot && i < (r->lent ? pg->cap : pg->nfresh), "region %p is not a used slot of its page %p", h,
           (const void *)pg);
    EXPECT(r->handle == ((uintptr_t)(r->gen << GB__H_GEN_SHIFT) | r->where) &&
               r->where == ((uintptr_t)pg->entry << GB__H_SLOT_BITS | i),
           "region %p: its handle is not its generation %ju and place %#jx (page entry %u, slot %zu)", h,
           (uintmax_t)r->gen, (uintmax_t)r->where, pg->entry, i);
    EXPECT(gb__handle_lookup("gb__region_check", (gb__mem *)&t->mem, (const gb_region *)h) == r,
           "region %p: its handle does not decode to its own slot", h);
    /* A page full of regions is on no list: the region in its first used
     * slot has it checked. */
    if (!r->lent && !gb__handle_in_avail(pg) && pg != t->mem.dspare) {
        size_t j = 0;
        while (j < i && !pg->slot[j].handle)
            j++;
        if (j == i)
            gb__dpage_check(&t->mem, pg);
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

/* t's block cache (gb__cache_check, map.c, walks its poisoned blocks)
 * and, with its spare page of descriptors, within the bound. */
void gb__chunk_check(const gb__thread *t)
{
    size_t bound = gb__cfg.cache_bytes;
    gb__cache_check(&t->mem.cache);
    size_t spare = t->mem.dspare ? t->mem.dspare->chunk.size : 0;
    EXPECT(t->mem.cache.bytes + spare <= bound,
           "the thread caches %zu bytes and a spare page of %zu, past the bound of %zu", t->mem.cache.bytes, spare,
           bound);
}

/* ---------------------------------------------------------------- slabs */

void gb__small_check(void)
{
    size_t n = 0, dirty = 0;
    bool full_seen = false;
    const gb__list *slabs = gb__small_slabs_lock();
    GB__LIST_EACH(l, slabs)
    {
        EXPECT(++n < MOST_LINKS, "the list of slabs does not end");
        const gb__slab *s = GB__LIST_ENTRY(l, gb__slab, link);
        EXPECT(!full_seen || s->nused == GB__SLAB_UNITS,
               "slab %p, with %u of %u units in use, comes after a full one", (const void *)s, s->nused,
               GB__SLAB_UNITS);
        dirty += gb__slab_check(s);
        full_seen = s->nused == GB__SLAB_UNITS;
    }
    size_t counted = atomic_load_explicit(&gb__stat.slabs, memory_order_relaxed);
    size_t said = atomic_load_explicit(&gb__stat.bytes_small_dirty, memory_order_relaxed);
    gb__small_slabs_unlock();
    EXPECT(n == counted, "%zu slabs are on the list, but gb__stat.slabs says %zu", n, counted);
    EXPECT(dirty == said, "the slabs hold %zu bytes of dirty units, but gb__stat.bytes_small_dirty says %zu",
           dirty, said);
}

/* ------------------------------------------------------ the boundaries
 *
 * What the entry points check after an operation with GB_CHECK=2: what
 * the operation changed, bounded by it, not the thread's whole state, so
 * that a debug test of ten thousand regions stays linear. */

void gb__check_entered(const gb__thread *t, const gb_region *r)
{
    EXPECT(t->cur->top == r && t->cur->depth > 0, "gb_enter: region %p is not the innermost of a stack of depth %zu",
           (void *)r->handle, t->cur->depth);
    gb__region_check(t, r, t->cur);
    if (!r->lent) /* else its page is another thread's (an attach) */
        gb__dpage_check(&t->mem, r->page);
}

void gb__check_top(const gb__thread *t)
{
    const gb__rstack *s = t->cur;
    EXPECT(!s->top == !s->depth, "the running context's region stack has depth %zu and top %p", s->depth,
           (const void *)s->top);
    if (s->top)
        gb__region_check(t, s->top, s);
}

/* ---------------------------------------------------------------- all */

void gb__check_thread(const gb__thread *t)
{
    gb__index_check(&t->mem.index);
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
