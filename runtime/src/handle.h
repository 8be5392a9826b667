/* handle.h -- what region.c asks of the region descriptors (handle.c).
 *
 * Taking a slot for a new region and freeing it are inline: gb_enter and
 * every leave run them, and each is a few loads and stores unless a page
 * must be had or given back, which handle.c does out of line. Telling what
 * a handle names is for the entry points given one that is not the
 * innermost region's, and is off the fast paths.
 */
#ifndef GB_HANDLE_H
#define GB_HANDLE_H

#include "internal.h"

#include <string.h>

/* A page of region descriptors, owned by the thread that took it.
 *   - slots [0, nfresh) have been used on this page, the rest never; a used
 *     slot is LIVE or RETIRED (nused counts those), free (on free, linked
 *     through parent), or used up (gen past GB__GEN_MAX, on no list);
 *   - floor <= every used slot's gen <= gen_hi, and every fresh slot starts
 *     at floor;
 *   - in_avail exactly when it has a free or fresh slot and is not the
 *     thread's spare, and then it is on owner->davail;
 *   - nused == 0 only for the thread's spare (owner->dspare): any other page
 *     goes back the moment its last slot is freed. */
struct gb__dpage {
    gb__chunk chunk;
    gb__thread *owner;
    gb__dpage *anext, *aprev; /* on owner->davail while in_avail */
    gb_region *free;          /* free slots, linked through parent */
    uint64_t floor;           /* generation of every fresh slot */
    uint64_t gen_hi;          /* the highest slot generation so far, >= floor */
    uint32_t entry;           /* its directory entry */
    uint32_t cap;             /* slots in the page */
    uint32_t nfresh;          /* slots [0, nfresh) have been used */
    uint32_t nused;           /* slots LIVE or RETIRED */
    bool in_avail;            /* has a free or fresh slot; on owner->davail */
    gb_region slot[];
};

/* The slow halves of gb__handle_take and gb__handle_free (handle.c): a
 * page of t with a free or fresh slot, put at the head of t->davail (t has
 * none there); and pg's last slot was freed: the page is kept as t's spare
 * or goes back. */
gb__dpage *gb__handle_page_get(gb__thread *t);
void gb__handle_page_empty(gb__thread *t, gb__dpage *pg);

static inline void gb__handle_avail_push(gb__thread *t, gb__dpage *pg)
{
    pg->in_avail = true;
    pg->aprev = NULL;
    pg->anext = t->davail;
    if (t->davail)
        t->davail->aprev = pg;
    t->davail = pg;
}

static inline void gb__handle_avail_remove(gb__thread *t, gb__dpage *pg)
{
    pg->in_avail = false;
    if (pg->aprev)
        pg->aprev->anext = pg->anext;
    else
        t->davail = pg->anext;
    if (pg->anext)
        pg->anext->aprev = pg->aprev;
    pg->anext = pg->aprev = NULL;
}

/* A slot for a new region of t (gb_enter), with a handle no other region
 * ever had: everything above handle is zero, the caller fills it in. */
static inline gb_region *gb__handle_take(gb__thread *t)
{
    gb__dpage *pg = t->davail;
    if (GB__UNLIKELY(!pg))
        pg = gb__handle_page_get(t);
    gb_region *r = pg->free;
    if (r) {
        pg->free = r->parent;
    } else {
        r = &pg->slot[pg->nfresh];
        r->where = (uintptr_t)pg->entry << GB__H_SLOT_BITS | pg->nfresh;
        r->gen = pg->floor;
        r->page = pg;
        pg->nfresh++;
    }
    if (!pg->free && pg->nfresh == pg->cap)
        gb__handle_avail_remove(t, pg);
    pg->nused++;
    memset(r, 0, offsetof(gb_region, handle));
    r->handle = (uintptr_t)(r->gen << GB__H_GEN_SHIFT) | r->where;
    return r;
}

/* Frees r's slot (gb__region_free): its handle names no region from now
 * on. Runs on the thread that entered r. */
static inline void gb__handle_free(gb_region *r)
{
    gb__dpage *pg = r->page;
    gb__thread *t = pg->owner;
    if (GB__UNLIKELY(t != gb__self()))
        gb__die("internal error: region %p freed on a thread that did not enter it",
                (void *)r->handle);
    r->handle = 0;
    r->state = GB__FREE;
    r->gen++;
    if (r->gen > pg->gen_hi)
        pg->gen_hi = r->gen;
    /* A slot past the last generation is never used again; the page still
     * goes back once its other slots are free. */
    if (GB__LIKELY(r->gen <= GB__GEN_MAX)) {
        r->parent = pg->free;
        pg->free = r;
        if (!pg->in_avail)
            gb__handle_avail_push(t, pg);
    }
    if (--pg->nused == 0)
        gb__handle_page_empty(t, pg);
}

/* The region h names, which the running thread entered and has not left
 * (in the running context or another of its contexts); stops the process
 * naming what h is otherwise. `who` is the public entry point h was given
 * to. */
gb_region *gb__handle_region(const char *who, gb__thread *t, gb_region *h);

/* Stops the process for a handle h given to `who` that does not name a
 * region of the running context, saying exactly what it names. r, when
 * not NULL, is the LIVE region h names on this thread's other context. */
GB__NORETURN void gb__handle_die_other_context(const char *who, gb__thread *t, gb_region *h,
                                               const gb_region *r);

/* At thread exit, once t's regions are all freed and its spare page given
 * back (gb__regions_trim): gives t's directory entries back to the pool,
 * or orphans those whose page still holds regions. */
void gb__handle_at_exit(gb__thread *t);

#endif /* GB_HANDLE_H */
