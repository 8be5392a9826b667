/* handoff.c -- handing a region from one thread to another:
 * gb_region_detach, gb_try_region_detach and gb_region_attach.
 *
 * A region is held by one thread at a time, because everything that
 * makes allocating in it cheap is that thread's: the region stack it is
 * on, the address index its blocks are in, the cache they come from and
 * go back to. A handoff moves exactly those: the detach takes the region
 * off its context's stack and its blocks, kept blocks and arenas out of
 * the thread's index; the attach puts them in the attaching thread's
 * index and the region on its running context's stack, and makes that
 * thread its home, so that the leave there gives the memory back through
 * that thread's cache. The descriptor stays in its slot, so the handle
 * stays valid and stale handles stay known (handle.c lends the slot).
 *
 * Pinning: a region that a suspended coroutine of the detaching thread
 * points into is refused. Retiring it across threads would leave the
 * region's fate to a thread that cannot scan the stack that pins it; the
 * refusal keeps every pin check on the thread whose stacks it reads.
 *
 * None of the three initialises the runtime: a region to detach was
 * entered, and one to attach was detached, after gb_init or a first use
 * did (a handle that names neither is named as such without it).
 */
#include "check.h"
#include "coro.h"
#include "handle.h"
#include "pin.h"
#include "region.h"
#include "stats.h"
#include "thread.h"

/* Detaches the innermost region of t's running context, named h, unless
 * a suspended coroutine points into it: then returns that coroutine. */
static gb_coro *detach(gb__thread *t, gb_region *h)
{
    gb__rstack *s = t->cur;
    gb_region *r = s->top;
    if (GB__UNLIKELY(!r || r->handle != (uintptr_t)h))
        gb__handle_die_not_innermost("gb_region_detach", &t->mem, s, h,
                                     "only the innermost region is detached");
    gb__frozen *f = gb__pin_find(&t->pins, r);
    if (f)
        return gb__coro_handle_of(gb__coro_of_frozen(f));
    s->top = r->parent;
    s->depth--;
    r->parent = NULL;
    r->stack = NULL;
    gb__region_index(r->home, r, false);
    gb__handle_lend(r);
    GB__ADD(regions_in_flight, 1);
    GB__ADD(handoffs, 1);
    GB__CHECK_AT(gb__check_top(t));
    return NULL;
}

void gb_region_detach(gb_region *h)
{
    gb_coro *c = detach(gb__self(), h);
    if (c)
        gb__die("gb_region_detach: region %p is pinned: the suspended coroutine %p points into "
                "it, and may read it when it resumes; a region is detached only when no "
                "suspended coroutine of its thread points into it (gb_try_region_detach says "
                "so without stopping)",
                (void *)h, (void *)c);
}

bool gb_try_region_detach(gb_region *h, gb_coro **pinned_by)
{
    gb_coro *c = detach(gb__self(), h);
    if (pinned_by)
        *pinned_by = c;
    return !c;
}

/* Stops the process for h given to gb_region_attach, which names no
 * region in flight, saying what it names. */
GB__NORETURN static void attach_not_in_flight(gb__thread *t, gb_region *h)
{
    const char *who = "gb_region_attach";
    /* Stops itself for a handle that was left, is held by another thread,
     * or was never a region's; else the region is this thread's. */
    gb_region *r = gb__handle_region(who, &t->mem, h);
    (void)r;
    gb__die("%s: region %p is not in flight: this thread holds it already (it was attached "
            "here, or entered here and not detached since); a region is attached once after "
            "each gb_region_detach",
            who, (void *)h);
}

void gb_region_attach(gb_region *h)
{
    gb__thread *t = gb__self();
    /* NULL names no region in flight: the stop below names it NULL. */
    gb_region *r = gb__handle_claim(&t->mem, h);
    if (!r)
        attach_not_in_flight(t, h);
    GB__SUB(regions_in_flight, 1);
    gb__region_index(&t->mem, r, true);
    gb__rstack *s = t->cur;
    r->stack = s;
    r->parent = s->top;
    s->top = r;
    s->depth++;
    GB__CHECK_AT(gb__check_entered(t, r));
}
