/* inspect.c -- what a region holds, and which region holds a pointer.
 *
 * An embedder asks two questions the allocation calls do not answer: did
 * my leave free the region or retire it, and what pins it (a region that
 * stays retired is memory the process still holds); and is this pointer
 * region memory at all (a free hook must not hand region memory to free).
 * Both are read-only walks over this thread's own state, off every fast
 * path.
 */
#include "abi.h"
#include "arena.h"
#include "coro.h"
#include "handle.h"
#include "init.h"
#include "pin.h"
#include "region.h"
#include "thread.h"

#include <string.h>

static void info_get(const gb_region *h, gb_region_info *out);

void gb_region_info_get_sized(const gb_region *h, gb_region_info *caller, size_t size)
{
    gb_region_info all;
    info_get(h, &all);
    gb__copy_out("gb_region_info_get", caller, size, &all, sizeof all, GB__REGION_INFO_LEAST);
}

static void info_get(const gb_region *h, gb_region_info *out)
{
    gb__ensure_init();
    gb__thread *t = gb__self();
    gb_region *r = gb__handle_lookup("gb_region_info_get", &t->mem, h);
    memset(out, 0, sizeof *out);
    if (!r) {
        out->state = GB_REGION_FREED;
        return;
    }
    out->bytes = r->bytes;
    out->blocks = r->nblocks;
    GB__ARENA_EACH(a, r) {
        out->arenas++;
        out->arena_bytes += a->chunk.size;
    }
    if (r->state == GB__RETIRED) {
        out->state = GB_REGION_RETIRED;
        /* A witness that has not run since it was found still points in;
         * without one, the frozen stacks are asked as a try would. */
        gb__frozen *p = r->witness ? r->witness : gb__pin_find(&t->pins, r);
        out->pinned_by = p ? gb__coro_handle_of(gb__coro_of_frozen(p)) : NULL;
        return;
    }
    out->state = GB_REGION_LIVE;
    out->kept_bytes = r->kept_bytes;
    out->limit = r->limit;
    out->kept_blocks = r->nkept;
    size_t d = 1;
    for (const gb_region *x = r->stack->top; x != r; x = x->parent)
        d++;
    out->depth = d;
    out->entered_by = r->stack->owner;
}

/* The region that holds p: the owner of the block whose chunk holds it,
 * from its first byte, its header included (all of it is memory the
 * region holds, and a free hook must hand none of it to free), or the
 * holder of the container arena that does. One lookup in the thread's
 * address index (index.h), whatever the number of regions and blocks.
 * A block a reset kept has no owner: it holds nothing until an allocation
 * takes it again. An arena whose binding the unbound-map-arena poison
 * took out has no holder either. */
gb_region *gb_region_of(const void *p)
{
    gb__ensure_init();
    gb__thread *t = gb__self();
    if (!p)
        return NULL;
    void *owner;
    uintptr_t v = gb__index_find(&t->mem.index, p, &owner);
    if (!v)
        return NULL;
    /* A block's owner is in the index; an arena's holder is read from it
     * (its binding is the fix that a poison takes out). */
    gb_region *r = (v & GB__INDEX_TAG) == GB__INDEX_ARENA ? ((gb__arena *)(v & ~GB__INDEX_TAG))->holder
                                                          : owner;
    return r ? gb__region_handle(r) : NULL;
}
