/* handles.h -- what the tests of handles share: a region's handle moved to
 * a chosen generation, and the directory entry a handle's page is on. */
#ifndef GBT_HANDLES_H
#define GBT_HANDLES_H

#include "internal.h"

/* The region h, entered by the calling thread, with its slot moved by the
 * test to generation g, as a slot that got there would be: its handle
 * says g, and its page's highest generation is at least g (handle.h,
 * struct gb__dpage). Returns the descriptor; its handle is r->handle. */
static inline gb_region *gbt_at_generation(gb_region *h, uint64_t g)
{
    gb_region *r = gb__handle_region("a test", &gb__self()->mem, h);
    r->gen = g;
    r->handle = (uintptr_t)(r->gen << GB__H_GEN_SHIFT) | r->where;
    if (r->page->gen_hi < g)
        r->page->gen_hi = g;
    return r;
}

/* The directory entry of the page that holds h's slot. */
static inline uint32_t gbt_entry_of(const gb_region *h)
{
    return (uint32_t)((uintptr_t)h >> GB__H_SLOT_BITS) & (((uint32_t)1 << GB__H_PAGE_BITS) - 1);
}

#endif
