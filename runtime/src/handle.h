/* handle.h -- region descriptors and the handles that name them (handle.c).
 *
 * gb_region * is the descriptor inside the runtime; what the API hands out
 * is not its address but a handle naming its slot and the slot's
 * generation, so that a handle of a left region never names the region
 * that reuses its slot:
 *   handle = generation << 25 | page << 9 | slot
 * where page indexes the descriptor-page directory (handle.c) and slot the
 * descriptor in that page. A slot's generation grows by one each time it is
 * freed and never repeats: a slot whose generation would pass GB__GEN_MAX
 * is never used again, and a directory entry whose page would start past
 * it is never used again (about 5.5e11 regions per slot first). Generation
 * 0 is never issued, so no handle is NULL. Handles are 64 bits.
 *
 * The descriptor pages are taken like blocks (gb__chunk_get: counted in
 * bytes_mapped and mappings, or bytes_heap) by the thread that enters the
 * region, and given back when their last slot is free. A handle is checked
 * against the slot it names (handle == the slot's handle) through the
 * directory, which is never given back, so a left region's handle is
 * decoded without touching a page that may be gone.
 *
 * Taking a slot for a new region and freeing it are inline: gb_enter and
 * every leave run them, and each is a few loads and stores unless a page
 * must be had or given back, which handle.c does out of line. Telling what
 * a handle names is for the entry points given one that is not the
 * innermost region's, and is off the fast paths.
 */
#ifndef GB_HANDLE_H
#define GB_HANDLE_H

#include "region.h"

#include <string.h>

#define GB__H_SLOT_BITS 9
#define GB__H_PAGE_BITS 16
#define GB__H_GEN_SHIFT (GB__H_SLOT_BITS + GB__H_PAGE_BITS)
#define GB__GEN_MAX ((UINT64_C(1) << (64 - GB__H_GEN_SHIFT)) - 1)

/* A page of region descriptors, owned by the thread that took it (owner
 * is that thread's memory).
 *   - slots [0, nfresh) have been used on this page, the rest never; a used
 *     slot is LIVE or RETIRED (nused counts those), free (on free, linked
 *     through parent), or used up (gen past GB__GEN_MAX, on no list);
 *   - floor <= every used slot's gen <= gen_hi, and every fresh slot starts
 *     at floor;
 *   - alink is on owner->davail exactly when the page has a free or fresh
 *     slot and is not the thread's spare (gb__handle_in_avail);
 *   - nused == 0 only for the thread's spare (owner->dspare): any other page
 *     goes back the moment its last slot is freed. */
struct gb__dpage {
    gb__chunk chunk;
    gb__mem *owner;
    gb__list alink;           /* on owner->davail while it has a slot to give */
    gb_region *free;          /* free slots, linked through parent */
    uint64_t floor;           /* generation of every fresh slot */
    uint64_t gen_hi;          /* the highest slot generation so far, >= floor */
    uint32_t entry;           /* its directory entry */
    uint32_t cap;             /* slots in the page */
    uint32_t nfresh;          /* slots [0, nfresh) have been used */
    uint32_t nused;           /* slots LIVE, RETIRED or in flight, and those on rfree */
    /* Slots other threads freed (regions handed over and left there),
     * linked through parent, which the owner takes back
     * (gb__handle_collect): counted in nused until then. The page is on
     * owner->dremote (rlink) while rfree holds any; both under the
     * directory's lock. A page whose thread exited while it held regions
     * has no owner (NULL), and a thread that frees one of its slots frees
     * it there. */
    gb_region *rfree;
    gb__list rlink;
    gb_region slot[];
};

/* The slow halves of gb__handle_take and gb__handle_free (handle.c): a
 * page of m with a free or fresh slot, put at the head of m->davail (m has
 * none there); and pg's last slot was freed: the page is kept as m's spare
 * or goes back. */
gb__dpage *gb__handle_page_get(gb__mem *m);
void gb__handle_page_empty(gb__mem *m, gb__dpage *pg);

#if GB_CHECK
/* Page pg of m whole, by the invariants at struct gb__dpage: stops naming
 * the one broken (the descriptor pages' checker, beside the code that
 * keeps them). */
void gb__dpage_check(const gb__mem *m, const gb__dpage *pg);
#endif

static inline bool gb__handle_in_avail(const gb__dpage *pg)
{
    return gb__list_linked(&pg->alink);
}

static inline void gb__handle_avail_push(gb__mem *m, gb__dpage *pg)
{
    gb__list_push(&m->davail, &pg->alink);
}

/* A slot for a new region of the thread whose memory is m (gb_enter), with
 * a handle no other region ever had: home is m, everything else above
 * handle is zero, and the caller fills it in. */
static inline gb_region *gb__handle_take(gb__mem *m)
{
    gb__dpage *pg = GB__LIKELY(!gb__list_empty(&m->davail))
                        ? GB__LIST_ENTRY(m->davail.next, gb__dpage, alink)
                        : gb__handle_page_get(m);
    /* A page on the available list has a slot to give (handle.c keeps it
     * so); a slot given is free, with no handle. */
    GB__ASSERT(pg->owner == m && (pg->free || pg->nfresh < pg->cap));
    gb_region *r = pg->free;
    if (r) {
        GB__ASSERT(r->state == GB__FREE && !r->handle && r->page == pg);
        pg->free = r->parent;
    } else {
        r = &pg->slot[pg->nfresh];
        r->where = (uintptr_t)pg->entry << GB__H_SLOT_BITS | pg->nfresh;
        r->gen = pg->floor;
        r->page = pg;
        pg->nfresh++;
    }
    if (!pg->free && pg->nfresh == pg->cap)
        gb__list_remove(&pg->alink);
    pg->nused++;
    memset(r, 0, offsetof(gb_region, handle));
    r->home = m;
    gb__list_init(&r->arenas);
    r->handle = (uintptr_t)(r->gen << GB__H_GEN_SHIFT) | r->where;
    return r;
}

/* Slot r of page pg, whose handle was just cleared and generation
 * raised, back on pg's free list (on m's available list if it was not):
 * the owner's half of a free, by m, the page's owner. A slot past the
 * last generation is never used again; the page still goes back once its
 * other slots are free. The caller counts nused down. */
static inline void gb__handle_slot_release(gb__mem *m, gb__dpage *pg, gb_region *r)
{
    if (r->gen > pg->gen_hi)
        pg->gen_hi = r->gen;
    if (GB__LIKELY(r->gen <= GB__GEN_MAX)) {
        r->parent = pg->free;
        pg->free = r;
        if (m && !gb__handle_in_avail(pg))
            gb__handle_avail_push(m, pg);
    }
}

/* Frees the slot of r, a lent region (gb__handle_free), on the thread
 * that holds it: onto its page's rfree for the page's owner to take back,
 * or, when the page's thread has exited, there and then (the page goes
 * back with its last slot). */
void gb__handle_free_lent(gb_region *r);

/* Frees r's slot (gb__region_free): its handle names no region from now
 * on. Runs on the thread that holds r; unless r is lent, that thread's
 * memory owns r's page (and is r's home). */
static inline void gb__handle_free(gb_region *r)
{
    if (GB__UNLIKELY(r->lent)) {
        gb__handle_free_lent(r);
        return;
    }
    gb__dpage *pg = r->page;
    gb__mem *m = pg->owner;
    /* Only a slot in use is freed, once, by its page's thread. */
    GB__ASSERT(r->handle && r->state != GB__FREE && pg->nused > 0 && r->gen <= pg->gen_hi && m == r->home);
    r->handle = 0;
    r->state = GB__FREE;
    r->gen++;
    gb__handle_slot_release(m, pg, r);
    if (--pg->nused == 0)
        gb__handle_page_empty(m, pg);
}

/* ------------------------------------------------------------- handoff
 *
 * A region detached (gb_region_detach) keeps its slot, and its handle, on
 * the page of the thread that entered it; from then until it is freed or
 * attached again by that thread it is lent (struct gb_region). */

/* Puts r, popped from its stack and taken out of its thread's index, in
 * flight: no home, state GB__FLIGHT, lent. */
void gb__handle_lend(gb_region *r);

/* The region in flight that h names, made the region of the thread whose
 * memory is m (its home, state LIVE; no longer lent if its slot is on
 * one of m's pages); the caller puts it on a stack and in m's index.
 * NULL, with nothing changed, when h names no region in flight. */
gb_region *gb__handle_claim(gb__mem *m, const gb_region *h);

/* Takes back the slots other threads freed on m's pages (m->dremote), and
 * the blocks they gave back (m->dblocks) into m's cache: gb_enter when
 * m->dpending is set (before it takes a slot, so that those slots are
 * taken before a page is), and gb_sweep (gb__handle_at_exit does the same
 * at thread exit). */
void gb__handle_collect(gb__mem *m);

/* Puts chunk c, a block of lent region r that the running thread (r's
 * home) has left, in the cache of the thread that entered r, which is
 * likeliest to want it again (a producer of regions that a consumer
 * leaves): reserved within the process's cache bound now, taken into that
 * thread's cache with the slots it gets back (gb__handle_collect), at its
 * first gb_enter after r's slot is freed (gb__handle_free_lent, which the
 * caller calls next, raises its flag). Where that thread has exited, the
 * bound has no room, or c is not one of the runtime's mappings, c goes
 * as any chunk of the running thread (gb__chunk_put). */
void gb__handle_give_block(gb_region *r, gb__chunk c);

/* The region h names, which the running thread entered and has not left
 * (in the running context or another of its contexts); stops the process
 * naming what h is otherwise. `who` is the public entry point h was given
 * to. */
gb_region *gb__handle_region(const char *who, gb__mem *m, gb_region *h);

/* Like gb__handle_region, but a handle of a region that was left is
 * answered too: its region when it is retired, NULL when it was given
 * back. */
gb_region *gb__handle_lookup(const char *who, gb__mem *m, const gb_region *h);

/* Stops the process for a handle h given to `who`, which takes only the
 * innermost region of the running context (region stack cur), saying what
 * h names instead; remedy ends the message when h is further down cur. */
GB__NORETURN void gb__handle_die_not_innermost(const char *who, gb__mem *m, const gb__rstack *cur, gb_region *h,
                                               const char *remedy);

/* Stops the process for a handle h given to `who` that does not name a
 * region of the running context, whose region stack is cur, saying
 * exactly what it names. r is the LIVE region h names on another context
 * of this thread. */
GB__NORETURN void gb__handle_die_other_context(const char *who, const gb__rstack *cur, gb_region *h,
                                               const gb_region *r);

/* How many directory entries were ever handed out, the process over: an
 * entry goes back to its thread's vacant list when its page does, and to
 * the pool at the thread's exit, so this grows only with the most pages
 * held at once (the tests read it; the handle format allows 65,536). */
uint32_t gb__handle_entries_used(void);

/* Gives back the empty page of region descriptors m keeps (gb_sweep,
 * thread exit). */
void gb__handle_trim(gb__mem *m);

/* At thread exit, once its regions are all freed and its spare page given
 * back (gb__handle_trim): gives the directory entries of m's thread back
 * to the pool, or orphans those whose page still holds regions. */
void gb__handle_at_exit(gb__mem *m);

#endif /* GB_HANDLE_H */
