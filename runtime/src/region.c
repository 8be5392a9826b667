/* region.c -- region stacks, bump allocation and leaving.
 *
 * A region hands out memory by bumping a pointer through its newest block;
 * when the block is full it chains a new one twice as large, up to a cap, so
 * a region of any size needs few blocks and every allocation is a compare
 * and an add in the common case. Leaving a region gives all its blocks back
 * at once (or retires the region while a suspended coroutine points into
 * it, which pin.c decides). Each thread, and each coroutine, has its own
 * stack of regions. Shared are only the process-wide counters and the
 * mapping budget, which are atomics, and the directory of descriptor pages,
 * which a thread locks only to take an entry from the shared pool, at its
 * exit, and to tell what another thread's handle is (handle.c).
 */
#include "arena.h"
#include "check.h"
#include "coro.h"
#include "handle.h"
#include "init.h"
#include "oom.h"
#include "pin.h"
#include "region.h"
#include "reset.h"
#include "stats.h"
#include "thread.h"

#include <string.h>

/* ------------------------------------------------------------- regions */

/* The running context's region stack. */
static gb__rstack *cur_stack(void)
{
    gb__ensure_init();
    return gb__self()->cur;
}

gb_region *gb_enter(void)
{
    gb__ensure_init();
    gb__thread *t = gb__self();
    gb__rstack *s = t->cur;
    gb_region *r = gb__handle_take(t);
    GB__ADD(regions_live, 1);
    r->state = GB__LIVE;
    r->stack = s;
    r->next_size = gb__cfg.first_block;
    r->parent = s->top;
    s->top = r;
    s->depth++;
    return gb__handle_of(r);
}

/* How far below the top of s the region r sits, or 0 if it is not on s. */
static size_t depth_of(const gb__rstack *s, const gb_region *r)
{
    size_t d = 1;
    for (const gb_region *x = s->top; x; x = x->parent, d++)
        if (x == r)
            return d;
    return 0;
}

GB__NORETURN void gb__region_not_innermost(const char *who, gb__rstack *s, gb_region *h)
{
    gb__thread *t = gb__self();
    gb_region *r = gb__handle_region(who, t, h);
    if (r->stack == s)
        gb__die("%s: region %p is not the innermost region (%zu regions entered after it "
                "are still live; leave them first)",
                who, (void *)h, depth_of(s, r) - 1);
    gb__handle_die_other_context(who, t, h, r);
}

void gb_leave(gb_region *h)
{
    gb__rstack *s = cur_stack();
    gb_region *r = s->top;
    /* The one check of the fast path: a handle equals the innermost
     * region's exactly when it names that region (handles never repeat). */
    if (GB__UNLIKELY(!r || r->handle != (uintptr_t)h))
        gb__region_not_innermost("gb_leave", s, h);
    gb__region_pop(s);
}

size_t gb_leave_to(gb_region *h)
{
    gb__rstack *s = cur_stack();
    gb_region *r = NULL;
    if (h) {
        gb__thread *t = gb__self();
        r = gb__handle_region("gb_leave_to", t, h);
        if (r->stack != s)
            gb__handle_die_other_context("gb_leave_to", t, h, r);
    }
    /* r is on s, so the walk ends there; each region is left as gb_leave
     * leaves it, innermost first, so that pinned ones are retired. */
    size_t n = 0;
    for (; s->top != r; n++)
        gb__region_pop(s);
    return n;
}

void gb__region_pop(gb__rstack *s)
{
    gb_region *r = s->top;
    GB__ASSERT(r && r->state == GB__LIVE && r->stack == s && s->depth > 0);
    /* Blocks a reset kept hold nothing, so nothing can point into them:
     * they go back now, whether the leave frees r or retires it (a
     * retired region keeps only what a suspended stack may still read). */
    gb__reset_trim(r, 0);
    s->top = r->parent;
    s->depth--;
    r->parent = NULL;
    r->stack = NULL;
    GB__SUB(regions_live, 1);
    gb__pin_release(r);
}

gb_region *gb_current(void)
{
    gb_region *r = cur_stack()->top;
    return r ? gb__handle_of(r) : NULL;
}

size_t gb_depth(void)
{
    return cur_stack()->depth;
}

size_t gb_region_bytes(const gb_region *h)
{
    gb__ensure_init();
    gb_region *r = gb__handle_region("gb_region_bytes", gb__self(), (gb_region *)h);
    return r->bytes + r->kept_bytes;
}

/* n rounded up to the alignment (0 takes one unit), or 0 when that
 * overflows. */
static size_t aligned_or_zero(size_t n)
{
    if (n == 0)
        n = 1;
    size_t a;
    if (__builtin_add_overflow(n, GB__ALIGN - 1, &a))
        return 0;
    return a & ~(size_t)(GB__ALIGN - 1);
}

static size_t aligned_size(size_t n, const char *what)
{
    size_t a = aligned_or_zero(n);
    if (!a)
        gb__die("%s: size overflows (%zu + %d)", what, n, GB__ALIGN - 1);
    return a;
}

/* ------------------------------------------------- when memory runs out
 *
 * A block that cannot be had in the size the chain wants is asked for
 * smaller, halving down to the smallest that holds the request, before
 * the request fails: the last 64 MiB of a region's address space may be
 * missing where 64 KiB are not. A region's limit is met the same way: a
 * block that would pass it steps down too. Only when even the smallest
 * block cannot be had does the request fail, and then the process's
 * handler (oom.c) may give memory back and have it tried once more, before
 * the try family returns NULL and the others stop, naming the request. */

/* Bytes r may still take in new blocks under its limit. */
static size_t room_under_limit(const gb_region *r)
{
    if (!r->limit)
        return SIZE_MAX;
    size_t held = r->bytes + r->kept_bytes;
    return held < r->limit ? r->limit - held : 0;
}

void gb__block_index(gb__block *b, bool in)
{
    gb__index *ix = &gb__self()->index;
    if (in)
        gb__index_add(ix, b->chunk.base, b->chunk.size, (uintptr_t)b | GB__INDEX_BLOCK, b->owner);
    else
        gb__index_remove(ix, b->chunk.base, b->chunk.size, (uintptr_t)b | GB__INDEX_BLOCK);
}

void gb__block_set_owner(gb__block *b, gb_region *owner)
{
    b->owner = owner;
    gb__index_set_owner(&gb__self()->index, b->chunk.base, b->chunk.size, (uintptr_t)b | GB__INDEX_BLOCK,
                        owner);
}

gb__block *gb__block_at(const void *p)
{
    void *owner;
    uintptr_t v = gb__index_find(&gb__self()->index, p, &owner);
    return (v & GB__INDEX_TAG) == GB__INDEX_BLOCK ? (gb__block *)v : NULL;
}

/* c as a block of r; NULL, with c given back, when the address index has
 * no room for it (the table could not grow: memory is short). */
static gb__block *install_block(gb_region *r, gb__chunk c, bool solo)
{
    if (!gb__index_reserve(&gb__self()->index, c.size)) {
        gb__chunk_put(c);
        return NULL;
    }
    gb__block *b = c.base;
    b->chunk = c;
    b->owner = r;
    b->solo = solo;
    gb__block_index(b, true);
    r->nblocks++;
    r->bytes += c.size;
    GB__ADD(blocks_live, 1);
    return b;
}

/* A new block for r of `size` bytes (header included), or one smaller,
 * halving down to `least`: mappings first, at every size, then malloc, at
 * every size; NULL, with *why, when none can be had. */
static gb__block *take_block(gb_region *r, size_t size, size_t least, bool solo, gb_oom_reason *why)
{
    size_t room = room_under_limit(r);
    bool refused = false;
    /* Under a limit the cache may not hand over a block larger than the
     * one asked for: it could pass the limit where a fresh block fits. */
    unsigned fit = r->limit ? GB__CHUNK_FIT : 0;
    for (unsigned how = fit | GB__CHUNK_MAP_ONLY;; how = fit) {
        for (size_t s = size;;) {
            gb__chunk c;
            if (s <= room && gb__chunk_try_get(s, how, &c)) {
                gb__block *b = NULL;
                if (c.size > room)
                    gb__chunk_put(c); /* the size class rounded it past the limit */
                else if ((b = install_block(r, c, solo)) == NULL)
                    refused = true; /* the address index could not grow: memory is short */
                if (b) {
                    GB__ASSERT(!r->limit || r->bytes + r->kept_bytes <= r->limit);
                    if (s < size)
                        GB__ADD(step_downs, 1);
                    return b;
                }
            } else if (s <= room) {
                refused = true;
            }
            if (s == least)
                break;
            s = s / 2 > least ? s / 2 : least;
        }
        if (!(how & GB__CHUNK_MAP_ONLY) || !refused)
            break;
    }
    *why = refused ? GB_OOM_SYSTEM : GB_OOM_LIMIT;
    return NULL;
}

/* Stops the process for a request of n bytes in r that `who` could not
 * meet. */
GB__NORETURN static void refuse(const char *who, gb_region *r, size_t n, gb_oom_reason why)
{
    if (why == GB_OOM_LIMIT)
        gb__die("%s: region %p is at its limit (gb_region_limit: %zu bytes; it holds %zu): no "
                "block for a request of %zu bytes fits under it (gb_try_ functions return NULL)",
                who, (void *)gb__handle_of(r), r->limit, r->bytes + r->kept_bytes, n);
    gb__die("%s: out of memory: region %p could not get a block for a request of %zu bytes "
            "(the OS and malloc refused it, and every smaller block that would hold it; it holds "
            "%zu bytes; gb_try_ functions return NULL)",
            who, (void *)gb__handle_of(r), n, r->bytes + r->kept_bytes);
}

/* After a failed attempt at a request of n bytes in r: true to try once
 * more (the handler gave memory back), else the request fails, counted,
 * and stops the process unless it is fallible. */
static bool retry_or_refuse(const char *who, gb_region *r, size_t n, gb_oom_reason why, int *round,
                            bool fallible)
{
    if ((*round)++ == 0 && gb__oom_handle(gb__handle_of(r), n, why))
        return true;
    GB__ADD(refusals, 1);
    if (!fallible)
        refuse(who, r, n, why);
    return false;
}

/* Takes a block for an allocation of a bytes (aligned) in r and hands out
 * its first a bytes; NULL, with *why, when no block can be had. */
static void *alloc_block(gb_region *r, size_t a, gb_oom_reason *why)
{
    size_t cap = gb__cfg.block_cap;
    if (a > cap - GB__BLOCK_HDR) {
        /* Larger than any chained block: a block of its own, linked behind
         * the current block so the current block's free space stays usable. */
        gb__block *b = r->kept ? gb__reset_take(r, a, true) : NULL;
        if (!b)
            b = take_block(r, a + GB__BLOCK_HDR, a + GB__BLOCK_HDR, true, why);
        if (!b)
            return NULL;
        if (r->cur_block) {
            b->next = r->cur_block->next;
            r->cur_block->next = b;
        } else {
            b->next = r->blocks;
            r->blocks = b;
        }
        void *p = (char *)b + GB__BLOCK_HDR;
        r->last = p;
        r->last_block = b;
        return p;
    }
    size_t size = r->next_size;
    while (size - GB__BLOCK_HDR < a)
        size *= 2;
    if (size > cap)
        size = cap;
    gb__block *b = r->kept ? gb__reset_take(r, a, false) : NULL;
    if (!b)
        b = take_block(r, size, a + GB__BLOCK_HDR, false, why);
    if (!b)
        return NULL;
    b->next = r->blocks;
    r->blocks = b;
    r->cur_block = b;
    r->bump = (char *)b + GB__BLOCK_HDR;
    r->end = (char *)b + b->chunk.size;
    /* The chain grows from its largest block: a region that took a large
     * block for one large allocation will most likely want as much again,
     * and a smaller block after it would be faulted in 4 KiB pages. */
    size_t next = b->chunk.size * 2 < b->chunk.size ? cap : b->chunk.size * 2;
    if (next > r->next_size)
        r->next_size = next > cap ? cap : next;
    char *p = r->bump;
    r->bump += a;
    GB__ASSERT(r->bump <= r->end);
    r->last = p;
    r->last_block = b;
    return p;
}

static void *alloc_slow(const char *who, gb_region *r, size_t a, bool fallible)
{
    gb_oom_reason why;
    int round = 0;
    do {
        void *p = alloc_block(r, a, &why);
        if (p)
            return p;
    } while (retry_or_refuse(who, r, a, why, &round, fallible));
    return NULL;
}

static inline void *bump(gb_region *r, size_t a)
{
    if (GB__LIKELY(a <= (size_t)(r->end - r->bump))) {
        char *p = r->bump;
        r->bump += a;
        GB__ASSERT(r->bump <= r->end);
        r->last = p;
        r->last_block = r->cur_block;
        return p;
    }
    return NULL;
}

void *gb__region_alloc(gb_region *r, size_t n)
{
    size_t a = aligned_size(n, "gb_alloc");
    void *p = bump(r, a);
    return p ? p : alloc_slow("gb_alloc", r, a, false);
}

void *gb__region_try_alloc(const char *who, gb_region *r, size_t n)
{
    size_t a = aligned_or_zero(n);
    if (!a) {
        GB__ADD(refusals, 1);
        return NULL;
    }
    void *p = bump(r, a);
    return p ? p : alloc_slow(who, r, a, true);
}

static gb_region *innermost(const char *who)
{
    gb_region *r = cur_stack()->top;
    if (GB__UNLIKELY(!r))
        gb__die("%s: no region is entered (call gb_enter first)", who);
    return r;
}

void *gb_alloc(size_t n)
{
    return gb__region_alloc(innermost("gb_alloc"), n);
}

void *gb_try_alloc(size_t n)
{
    return gb__region_try_alloc("gb_try_alloc", innermost("gb_try_alloc"), n);
}

/* count * size zeroed bytes in r; with `fallible`, NULL when they cannot
 * be had (an overflowing product included), else the process stops. */
static void *calloc_in(const char *who, gb_region *r, size_t count, size_t size, bool fallible)
{
    size_t n;
    void *p;
    if (!fallible) {
        n = gb__mul(count, size, who);
        p = gb__region_alloc(r, n);
    } else if (__builtin_mul_overflow(count, size, &n)) {
        GB__ADD(refusals, 1);
        return NULL;
    } else if (!(p = gb__region_try_alloc(who, r, n))) {
        return NULL;
    }
    /* Fresh mappings are zero already, but a block reused from malloc or a
     * bump area after a shrinking realloc may not be. */
    memset(p, 0, n);
    return p;
}

void *gb_calloc(size_t count, size_t size)
{
    return calloc_in("gb_calloc", innermost("gb_calloc"), count, size, false);
}

void *gb_try_calloc(size_t count, size_t size)
{
    return calloc_in("gb_try_calloc", innermost("gb_try_calloc"), count, size, true);
}

/* The region stack of the context that resumed coroutine c of t: its
 * caller's, or the thread's own. */
static const gb__rstack *resumer_stack(const gb__thread *t, const gb_coro *c)
{
    return c->caller ? &c->caller->rstack : &t->main_stack;
}

/* Whether the stack s belongs to a context that resumed the running
 * coroutine of t (directly or through others): the regions on it are live
 * while the coroutine runs, and it may allocate in them. */
static bool resumed_us(const gb__thread *t, const gb__rstack *s)
{
    for (const gb_coro *c = t->cur_coro; c; c = c->caller)
        if (resumer_stack(t, c) == s)
            return true;
    return false;
}

/* The region handle h names for an allocation by `who` when it is not the
 * innermost one: a LIVE region of the running context, or of a context
 * that resumed it, or the process stops. */
static gb_region *alloc_in_region(const char *who, gb__rstack *s, gb_region *h)
{
    gb__thread *t = gb__self();
    gb_region *r = gb__handle_region(who, t, h);
    if (r->stack != s && !resumed_us(t, r->stack))
        gb__handle_die_other_context(who, t, h, r);
    return r;
}

/* The region of gb_alloc_in and its kin: the innermost region, or the one
 * just outside it, by handle alone; any other through the directory. */
static gb_region *region_for(const char *who, gb_region *h)
{
    gb__rstack *s = cur_stack();
    gb_region *r = s->top;
    if (GB__LIKELY(r && r->handle == (uintptr_t)h))
        return r;
    if (r && r->parent && r->parent->handle == (uintptr_t)h)
        return r->parent;
    return alloc_in_region(who, s, h);
}

void *gb_alloc_in(gb_region *h, size_t n)
{
    return gb__region_alloc(region_for("gb_alloc_in", h), n);
}

void *gb_try_alloc_in(gb_region *h, size_t n)
{
    return gb__region_try_alloc("gb_try_alloc_in", region_for("gb_try_alloc_in", h), n);
}

void *gb_calloc_in(gb_region *h, size_t count, size_t size)
{
    return calloc_in("gb_calloc_in", region_for("gb_calloc_in", h), count, size, false);
}

void *gb_try_calloc_in(gb_region *h, size_t count, size_t size)
{
    return calloc_in("gb_try_calloc_in", region_for("gb_try_calloc_in", h), count, size, true);
}

void gb_region_limit(gb_region *h, size_t bytes)
{
    region_for("gb_region_limit", h)->limit = bytes;
}

/* Replaces solo block `from` in r's list by `to` (it moved when it grew). */
static void relink_block(gb_region *r, gb__block *from, gb__block *to)
{
    for (gb__block **pp = &r->blocks; *pp; pp = &(*pp)->next) {
        if (*pp == from) {
            *pp = to;
            return;
        }
    }
    gb__die("internal error: block %p is not in region %p", (void *)from, (void *)r);
}

/* Grows the solo block b, whose allocation holds old_n bytes, to hold a;
 * NULL, with *why and b as it was, when the larger block cannot be had. */
static void *grow_solo_once(gb_region *r, gb__block *b, size_t old_n, size_t a, gb_oom_reason *why)
{
    if (a <= b->chunk.size - GB__BLOCK_HDR)
        return (char *)b + GB__BLOCK_HDR;
    size_t before = b->chunk.size;
    /* Under a limit, the block's growth must fit in what the region may
     * still take (a size class may round it up: checked again below). */
    if (r->limit && gb__chunk_size_for(GB__BLOCK_HDR + a) - before > room_under_limit(r)) {
        *why = GB_OOM_LIMIT;
        return NULL;
    }
    gb__chunk c, was = b->chunk;
    if (!gb__index_reserve(&gb__self()->index, GB__BLOCK_HDR + a) ||
        !gb__chunk_try_grow(b->chunk, GB__BLOCK_HDR + old_n, GB__BLOCK_HDR + a, r->limit != 0, &c)) {
        *why = GB_OOM_SYSTEM;
        return NULL;
    }
    /* The old range leaves the index by the values it was entered with:
     * where the block moved, its old header is gone. */
    gb__index_remove(&gb__self()->index, was.base, was.size, (uintptr_t)b | GB__INDEX_BLOCK);
    gb__block *nb = c.base;
    nb->chunk = c;
    gb__block_index(nb, true);
    if (nb != b)
        relink_block(r, b, nb);
    r->bytes += c.size - before;
    if (r->last_block == b) {
        r->last_block = nb;
        r->last = (char *)nb + GB__BLOCK_HDR;
    }
    return (char *)nb + GB__BLOCK_HDR;
}

static void *grow_solo(const char *who, gb_region *r, gb__block *b, size_t old_n, size_t a, bool fallible)
{
    gb_oom_reason why;
    int round = 0;
    do {
        void *p = grow_solo_once(r, b, old_n, a, &why);
        if (p)
            return p;
    } while (retry_or_refuse(who, r, a, why, &round, fallible));
    return NULL;
}

/* The block of r that holds p, or NULL. */
static gb__block *block_of(const gb_region *r, const void *p)
{
    gb__block *b = gb__block_at(p);
    return b && b->owner == r && (const char *)p >= (const char *)b + GB__BLOCK_HDR ? b : NULL;
}

/* The most bytes an allocation at p in block b of r can hold: up to what r
 * has handed out of b (the block's end but in the current block). The
 * region keeps no sizes per allocation, so this bounds old_n, not more. */
static size_t taken_after(const gb_region *r, const gb__block *b, const char *p)
{
    const char *end = b == r->cur_block ? r->bump : (const char *)b->chunk.base + b->chunk.size;
    return (size_t)(end - p);
}

void *gb__region_realloc(const char *who, gb_region *r, void *p, size_t old_n, size_t new_n, bool fallible)
{
    if (!p)
        return fallible ? gb__region_try_alloc(who, r, new_n) : gb__region_alloc(r, new_n);
    size_t a = fallible ? aligned_or_zero(new_n) : aligned_size(new_n, who);
    if (!a) {
        GB__ADD(refusals, 1);
        return NULL;
    }
    if (p == r->last) {
        gb__block *b = r->last_block;
        size_t room = b->solo ? b->chunk.size - GB__BLOCK_HDR : (size_t)(r->end - (char *)p);
        size_t had = b->solo ? room : (size_t)(r->bump - (char *)p);
        if (old_n > had)
            gb__die("%s: old size %zu is larger than the allocation at %p (%zu bytes)", who,
                    old_n, p, had);
        if (b->solo)
            return grow_solo(who, r, b, old_n, a, fallible);
        if (a <= room) {
            /* The last allocation grows (or shrinks) in place. */
            r->bump = (char *)p + a;
            return p;
        }
    }
    gb__block *held = block_of(r, p);
    if (!held)
        gb__die("%s: %p is not an allocation of region %p (it is in none of its blocks)", who, p,
                (void *)gb__handle_of(r));
    size_t most = taken_after(r, held, p);
    if (old_n > most)
        gb__die("%s: old size %zu is larger than what region %p handed out from %p on (%zu "
                "bytes)",
                who, old_n, (void *)gb__handle_of(r), p, most);
    if (new_n <= old_n)
        return p;
    if (old_n > gb__cfg.block_cap - GB__BLOCK_HDR) {
        /* Only a solo block holds an allocation this large: grow it in place
         * of copying, even when it is not the last allocation. */
        for (gb__block *b = r->blocks; b; b = b->next)
            if (b->solo && (char *)b + GB__BLOCK_HDR == (char *)p)
                return grow_solo(who, r, b, old_n, a, fallible);
    }
    void *q = fallible ? gb__region_try_alloc(who, r, new_n) : gb__region_alloc(r, new_n);
    if (q)
        memcpy(q, p, old_n);
    return q;
}

/* The LIVE region of the running context, or of one that resumed it,
 * whose blocks hold p; the process stops when there is none. */
static gb_region *region_holding(const char *who, const void *p)
{
    gb__thread *t = gb__self();
    gb__block *b = gb__block_at(p);
    gb_region *r = b && (const char *)p >= (const char *)b + GB__BLOCK_HDR ? b->owner : NULL;
    if (r && r->state == GB__LIVE && (r->stack == t->cur || resumed_us(t, r->stack)))
        return r;
    gb__die("%s: %p is in no live region of the running context or of one that resumed it "
            "(memory from malloc, from a region left since, or from a container's arena)",
            who, p);
}

static void *realloc_innermost_or_holding(const char *who, void *p, size_t old_n, size_t new_n, bool fallible)
{
    if (!p) {
        gb_region *r = innermost(who);
        return fallible ? gb__region_try_alloc(who, r, new_n) : gb__region_alloc(r, new_n);
    }
    /* An allocation of an outer region is resized there, not moved into
     * the innermost one; and a coroutine with no region of its own entered
     * resizes one of its resumers' regions' allocations all the same, so
     * the innermost region is only where the search starts. */
    gb_region *r = cur_stack()->top;
    if (!r || (p != r->last && !block_of(r, p)))
        r = region_holding(who, p);
    return gb__region_realloc(who, r, p, old_n, new_n, fallible);
}

void *gb_realloc(void *p, size_t old_n, size_t new_n)
{
    return realloc_innermost_or_holding("gb_realloc", p, old_n, new_n, false);
}

void *gb_try_realloc(void *p, size_t old_n, size_t new_n)
{
    return realloc_innermost_or_holding("gb_try_realloc", p, old_n, new_n, true);
}

void *gb_realloc_in(gb_region *h, void *p, size_t old_n, size_t new_n)
{
    return gb__region_realloc("gb_realloc_in", region_for("gb_realloc_in", h), p, old_n, new_n, false);
}

void *gb_try_realloc_in(gb_region *h, void *p, size_t old_n, size_t new_n)
{
    return gb__region_realloc("gb_try_realloc_in", region_for("gb_try_realloc_in", h), p, old_n, new_n,
                              true);
}

bool gb__region_contains(const gb_region *r, const void *p)
{
    const char *c = p;
    for (const gb__block *b = r->blocks; b; b = b->next)
        if (c >= (const char *)b->chunk.base && c < (const char *)b->chunk.base + b->chunk.size)
            return true;
    GB__ARENA_EACH(a, r)
        if (c >= (const char *)a->chunk.base && c < (const char *)a->chunk.base + a->chunk.size)
            return true;
    return false;
}

/* Gives back the blocks of list b. */
static void put_blocks(gb__block *b)
{
    while (b) {
        gb__block *next = b->next;
        gb__block_index(b, false);
        gb__chunk_put(b->chunk);
        b = next;
    }
}

void gb__region_close_arenas(gb_region *r)
{
    while (!gb__list_empty(&r->arenas))
        gb__arena_close(GB__LIST_ENTRY(r->arenas.next, gb__arena, link));
}

void gb__region_free(gb_region *r)
{
    GB__ASSERT(!r->stack && !gb__list_linked(&r->rlink) && !gb__list_linked(&r->wlink));
    gb__region_close_arenas(r);
    put_blocks(r->blocks);
    gb__reset_trim(r, 0);
    GB__SUB(blocks_live, r->nblocks);
    gb__handle_free(r);
}
