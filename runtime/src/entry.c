/* entry.c -- the public entry points of regions: entering, leaving,
 * resetting, and the alloc, calloc and realloc families.
 *
 * The top of the region path: each entry point finds the running thread's
 * state once (gb__self), checks the handle it was given against the
 * running context's region stack, and then calls straight down: pin.c
 * decides whether a region that was left is freed or retired, region.c
 * allocates and frees, handle.c names what a wrong handle is. Nothing
 * below calls back up here. The fast paths (gb_alloc, gb_leave of the
 * innermost region, gb_alloc_in of the innermost or the next one out)
 * check a handle by equality alone: handles never repeat.
 */
#include "check.h"
#include "handle.h"
#include "init.h"
#include "pin.h"
#include "seam_handoff.h"
#include "region.h"
#include "stats.h"
#include "thread.h"

#include <string.h>

/* ------------------------------------------------------------- the stack */

/* The running thread's state, the runtime initialised. */
static gb__thread *self(void)
{
    gb__ensure_init();
    return gb__self();
}

gb_region *gb_enter(void)
{
    gb__thread *t = self();
    gb__rstack *s = t->cur;
    /* Another thread left a region this one handed it: take back what it
     * freed on this thread's pages (handle.c), one relaxed load here. */
    if (GB__UNLIKELY(atomic_load_explicit(&t->mem.dpending, memory_order_relaxed)))
        gb__fix_collect(&t->mem);
    gb_region *r = gb__handle_take(&t->mem);
    GB__ADD(regions_live, 1);
    r->state = GB__LIVE;
    r->stack = s;
    r->next_size = gb__cfg.first_block;
    r->parent = s->top;
    s->top = r;
    s->depth++;
    GB__CHECK_AT(gb__check_entered(t, r));
    return gb__region_handle(r);
}

void gb_leave(gb_region *h)
{
    gb__thread *t = self();
    gb_region *r = t->cur->top;
    /* The one check of the fast path: a handle equals the innermost
     * region's exactly when it names that region (handles never repeat). */
    if (GB__UNLIKELY(!r || r->handle != (uintptr_t)h))
        gb__handle_die_not_innermost("gb_leave", &t->mem, t->cur, h, "leave them first");
    gb__pin_pop(&t->pins, gb__thread_run(t), t->cur);
    GB__CHECK_AT(gb__check_top(t));
}

size_t gb_leave_to(gb_region *h)
{
    gb__thread *t = self();
    gb__rstack *s = t->cur;
    gb_region *r = NULL;
    if (h) {
        r = gb__handle_region("gb_leave_to", &t->mem, h);
        if (r->stack != s)
            gb__handle_die_other_context("gb_leave_to", s, h, r);
    }
    /* r is on s, so the walk ends there; each region is left as gb_leave
     * leaves it, innermost first, so that pinned ones are retired. */
    size_t n = 0;
    for (; s->top != r; n++)
        gb__pin_pop(&t->pins, gb__thread_run(t), s);
    GB__CHECK_AT(gb__check_top(t));
    return n;
}

gb_region *gb_current(void)
{
    gb_region *r = self()->cur->top;
    return r ? gb__region_handle(r) : NULL;
}

size_t gb_depth(void)
{
    return self()->cur->depth;
}

size_t gb_region_bytes(const gb_region *h)
{
    gb_region *r = gb__handle_region("gb_region_bytes", &self()->mem, (gb_region *)h);
    return r->bytes + r->kept_bytes;
}

/* Empties the innermost region, keeping up to keep_bytes of its blocks
 * (region.c). A reset must not free what a suspended coroutine points
 * into, so a pinned region's contents are retired under a descriptor of
 * their own instead, exactly as a left region would be. */
void gb_region_reset(gb_region *h, size_t keep_bytes)
{
    gb__thread *t = self();
    gb_region *r = t->cur->top;
    if (GB__UNLIKELY(!r || r->handle != (uintptr_t)h))
        gb__handle_die_not_innermost("gb_region_reset", &t->mem, t->cur, h, "leave them first");
    GB__ADD(resets, 1);
    gb__frozen *p = gb__pin_find(&t->pins, r);
    if (p) {
        gb_region *g = gb__handle_take(&t->mem);
        gb__region_move(g, r);
        gb__pin_retire_with(&t->pins, g, p);
    }
    gb__region_empty(r, keep_bytes);
    GB__CHECK_AT(gb__check_top(t));
}

/* ------------------------------------------------------------ allocating */

static gb_region *innermost(const char *who)
{
    gb_region *r = self()->cur->top;
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

/* The region handle h names for an allocation by `who` when it is not the
 * innermost one: a LIVE region of the running context, or of a context
 * that resumed it (its regions are live while the running one runs), or
 * the process stops. */
static gb_region *alloc_in_region(const char *who, gb__thread *t, gb_region *h)
{
    gb_region *r = gb__handle_region(who, &t->mem, h);
    if (r->stack != t->cur && !gb__rstack_resumed(t->cur, r->stack))
        gb__handle_die_other_context(who, t->cur, h, r);
    return r;
}

/* The region of gb_alloc_in and its kin: the innermost region, or the one
 * just outside it, by handle alone; any other through the directory. */
static gb_region *region_for(const char *who, gb_region *h)
{
    gb__thread *t = self();
    gb_region *r = t->cur->top;
    if (GB__LIKELY(r && r->handle == (uintptr_t)h))
        return r;
    if (r && r->parent && r->parent->handle == (uintptr_t)h)
        return r->parent;
    return alloc_in_region(who, t, h);
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

/* ------------------------------------------------------------- resizing */

/* The LIVE region of the running context, or of one that resumed it,
 * whose blocks hold p; the process stops when there is none. */
static gb_region *region_holding(const char *who, gb__thread *t, const void *p)
{
    gb__block *b = gb__block_at(&t->mem, p);
    gb_region *r = b && (const char *)p >= (const char *)b + GB__BLOCK_HDR ? b->owner : NULL;
    if (r && r->state == GB__LIVE && (r->stack == t->cur || gb__rstack_resumed(t->cur, r->stack)))
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
    gb__thread *t = self();
    gb_region *r = t->cur->top;
    if (!r || (p != r->last && !gb__region_block_of(r, p)))
        r = region_holding(who, t, p);
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
