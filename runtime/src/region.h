/* region.h -- regions, their blocks and the region stacks (region.c).
 *
 * A region is a descriptor in a slot of a page of descriptors (handle.h)
 * and a list of blocks; a context (the thread itself, or a coroutine) keeps
 * the regions it entered on its own stack. Leaving pops the innermost
 * region, and pin.c decides whether it is freed now or retired.
 */
#ifndef GB_REGION_H
#define GB_REGION_H

#include "chunk.h"
#include "index.h"
#include "list.h"

#include <stdatomic.h>

typedef struct gb__dpage gb__dpage;
/* A frozen stack, as pinning sees it (pin.h): a retired region's witness. */
typedef struct gb__frozen gb__frozen;

/* The slice of a thread's state the region layer works in (gb__thread.mem):
 * the cache its blocks come from and go back to (map.h), the address index
 * that finds its blocks and arenas (index.h), and its pages of region
 * descriptors (handle.c). Each region points to the memory of the thread
 * that holds it (home): the one that entered it, or the one that attached
 * it since (gb_region_attach), so every block of a region comes from and
 * goes back to that thread's cache, and is in that thread's index.
 *   - davail holds the pages with a free (or never used) slot, the one
 *     gb_enter takes from first at the head; dvacant heads this thread's
 *     directory entries whose page was given back (index + 1, 0 for none),
 *     reused before the shared pool; dspare is an empty page kept for the
 *     next region, counted as a cached block (bytes_cached,
 *     mappings_cached; within the process's bound, outside cache.bytes)
 *     until gb_sweep or thread exit (gb__handle_trim);
 *   - warm is the chain block that would have held the whole chain of
 *     the last region this thread freed (gb__region_free), or 0 when no
 *     block within the cap and an eighth of the cache's bound would have
 *     (region.c, warm_size): a region's first chained block is taken at
 *     that size where the cache holds a block of it (alloc_block). */
typedef struct gb__mem {
    gb__cache cache;
    gb__index index;
    gb__list davail;
    gb__dpage *dspare;
    uint32_t dvacant;
    /* Slots of this thread's pages that other threads freed (a region
     * handed over and left there, handle.c): the pages holding such slots
     * (through gb__dpage.rlink), under the directory's lock; dpending is
     * set with the first, and read without the lock by gb_enter, which
     * takes them back (gb__handle_collect). */
    gb__list dremote;
    _Atomic bool dpending;
    /* Blocks of regions this thread entered that another thread left,
     * given back to this thread's cache (handle.c, gb__handle_give_block):
     * linked through their first bytes, under the directory's lock,
     * reserved within the process's cache bound and counted as cached;
     * taken into the cache with the slots (gb__handle_collect). */
    void *dblocks;
    size_t warm;
} gb__mem;

/* A block of a region: a chunk whose first bytes are this header, followed
 * by bump-allocated memory. Blocks of a region form a list, newest first,
 * except that a "solo" block made for one large allocation is linked behind
 * the current block, so the current block's free space is not lost. */
typedef struct gb__block {
    gb__chunk chunk;
    struct gb__block *next;
    /* The region whose block it is, or NULL while a reset keeps it (its
     * contents are gone, and gb_region_of says so). Every block is in its
     * thread's address index from install to give-back. */
    gb_region *owner;
    bool solo;
} gb__block;

#define GB__BLOCK_HDR ((sizeof(gb__block) + GB__ALIGN - 1) & ~(size_t)(GB__ALIGN - 1))

/* The region stack of one context: the thread itself, or one coroutine.
 *   - top is the innermost live region; each region's parent is the next
 *     one out; depth counts them;
 *   - owner is the handle of the coroutine whose stack it is (what
 *     gb_coro_new returned), NULL for the thread's own: what a message or
 *     gb_region_info_get names as the context that entered a region;
 *   - resumer is, while the owner runs or waits on a coroutine it resumed,
 *     the stack of the context that resumed it (coro.c sets it at each
 *     resume); NULL for the thread's own. Following resumer from the
 *     running context's stack visits exactly the contexts that resumed it,
 *     directly or through others: their regions are live while it runs,
 *     and it may allocate in them. */
typedef struct gb__rstack {
    gb_region *top;
    size_t depth;
    gb_coro *owner;
    struct gb__rstack *resumer;
} gb__rstack;

/* Whether s belongs to a context that resumed the context running on cur
 * (directly or through others). */
static inline bool gb__rstack_resumed(const gb__rstack *cur, const gb__rstack *s)
{
    for (const gb__rstack *x = cur->resumer; x; x = x->resumer)
        if (x == s)
            return true;
    return false;
}

typedef enum gb__rstate {
    GB__FREE = 0,    /* the descriptor slot holds no region */
    GB__LIVE = 1,    /* on its context's stack */
    GB__RETIRED = 2, /* left, kept because a suspended stack pointed into it */
    GB__FLIGHT = 3,  /* detached (gb_region_detach), on no stack and in no index */
} gb__rstate;

/* A region. The descriptor is a slot in a page of descriptors that the
 * thread which entered it takes like a block and gives back when its last
 * slot is free (handle.c), which also says how a handle names it.
 *   - bump <= end, both inside cur_block, the newest non-solo block (all
 *     three NULL before the first block); everything below bump is taken;
 *   - last is the start of the most recent allocation (NULL if none) and
 *     last_block the block holding it: only that allocation grows in place;
 *   - bytes is the sum of the sizes of blocks (not of arenas, nor of the
 *     kept ones);
 *   - arenas lists the container arenas bound to this region (through
 *     gb__arena.link), which are given back when the region is;
 *   - a LIVE region is on exactly one context stack; a RETIRED region is on
 *     its thread's retired list and on no stack;
 *   - home is the memory of the thread that holds r: the one that entered
 *     it (set with the slot, handle.c) or attached it since; its blocks,
 *     kept blocks and arenas are in home->index and go back to
 *     home->cache. A region in flight (GB__FLIGHT) has no home and is in
 *     no index. */
struct gb_region {
    gb__mem *home;
    char *bump, *end;
    gb__block *cur_block;
    void *last;
    gb__block *last_block;
    gb__block *blocks;
    gb_region *parent;
    gb__rstack *stack;
    size_t next_size;
    size_t nblocks;
    size_t bytes;
    /* Blocks gb_region_reset kept (gb__region_empty), empty, for the next allocations: linked
     * through next, on no other list, counted in nkept and kept_bytes (and
     * in gb__stat.bytes_kept), not in nblocks or bytes; their payload holds
     * nothing, so no pin check asks about them. */
    gb__block *kept;
    size_t nkept;
    size_t kept_bytes;
    /* gb_region_limit's bound on bytes + kept_bytes, or 0 for none: a new
     * block that would pass it is not taken (region.c). */
    size_t limit;
    /* How many times r was reset (gb__region_empty): what the out-of-memory
     * handler's rule is checked by (region.c, retry_or_refuse). */
    uint32_t resets;
    gb__list arenas;
    gb__rstate state;
    /* Retirement, owned by pin.c. A RETIRED region is on one of its
     * thread's two retired lists (rlink). witness is the frozen stack (of
     * a suspended coroutine) found pointing into it at its last try, and
     * the region is on that stack's witnessed list (wlink); witness is
     * NULL when the witness has run and frozen again, finished or been
     * freed since it was found, which is exactly when the region needs
     * another try (while the witness runs, it keeps the region: a live
     * frame may hold the pointer). */
    gb__list rlink;
    gb__frozen *witness;
    gb__list wlink;
    /* Handoff (handle.c). lent is set while r is in flight, or held by a
     * thread other than the one whose page its slot is on (home is not
     * page->owner); a lent region is in the directory's table of lent
     * slots (through lent_next), so that any thread can tell what its
     * handle names without reading another thread's page. lent, home and
     * state change under the directory's lock while r is lent. */
    gb_region *lent_next;
    bool lent;
    /* The slot (handle.c); gb_enter clears everything above this line and
     * keeps these across occupants.
     *   - handle is what gb_enter returned for the occupant, and 0 exactly
     *     while the slot is free (state GB__FREE): a handle names a region
     *     iff it equals the handle of the slot it decodes to;
     *   - gen is the occupant's generation, or, while free, the next one's:
     *     every handle ever issued for this slot has a generation below it
     *     unless it is the occupant's;
     *   - where is the handle's low bits (page and slot); page the page the
     *     slot is in; a free slot is on that page's free list (parent). */
    uintptr_t handle;
    uint64_t gen;
    uintptr_t where;
    gb__dpage *page;
};

/* The handle gb_enter returned for r (r is LIVE or RETIRED; handle.h). */
static inline gb_region *gb__region_handle(const gb_region *r)
{
    return (gb_region *)r->handle;
}

/* Enters block b (its chunk as it is now) in m's address index, or takes
 * it out (index.h): at install and give-back, and around a move. */
void gb__block_index(gb__mem *m, gb__block *b, bool in);

/* Sets b's owner, in its header and in m's index: a reset keeps it (NULL)
 * or takes it again, or retires it with the rest of a region's contents. */
void gb__block_set_owner(gb__mem *m, gb__block *b, gb_region *owner);

/* The block in m's index that holds p (its header included), kept by a
 * reset or not; NULL when none does. */
gb__block *gb__block_at(gb__mem *m, const void *p);

/* Allocates n bytes in r, which the caller has checked is LIVE; stops the
 * process, naming r and the request, when the memory cannot be had. */
void *gb__region_alloc(gb_region *r, size_t n);

/* Like gb__region_alloc, for `who`: NULL when the memory cannot be had
 * (the OS and malloc refused, or r's limit), with r unchanged. */
void *gb__region_try_alloc(const char *who, gb_region *r, size_t n);

/* Resizes allocation p of r (see gb_realloc); r must be LIVE. With `try`,
 * NULL when the memory cannot be had, p and r unchanged; else it stops. */
void *gb__region_realloc(const char *who, gb_region *r, void *p, size_t old_n, size_t new_n, bool try);

/* True when p points into the memory of r that a program may hold: past
 * the header of one of its blocks, or into one of its arenas. What a pin
 * check asks of each word; a block's header is the runtime's own, which
 * its frames hold while they walk a region's blocks, and which no
 * allocation ever returns. */
bool gb__region_contains(const gb_region *r, const void *p);

/* Pops the innermost region of s, which must have one, and returns it, on
 * no stack and no longer LIVE, with its kept blocks given back; pin.c
 * then frees or retires it (gb__pin_pop). */
gb_region *gb__region_pop(gb__rstack *s);

/* The block of r whose payload holds p, or NULL. */
gb__block *gb__region_block_of(const gb_region *r, const void *p);

/* Empties r, which stays entered (gb_region_reset): its arenas are closed,
 * its blocks join its kept list, newest first, and the kept list is cut
 * back to its first keep_bytes; r's next allocation starts afresh. */
void gb__region_empty(gb_region *r, size_t keep_bytes);

/* Moves r's blocks and arenas to g, a fresh descriptor of r's thread
 * (gb__handle_take), and leaves r holding none of them: a reset of a region
 * a frozen stack points into, whose contents pin.c then retires under g. */
void gb__region_move(gb_region *g, gb_region *r);

/* Gives every block, kept block and arena of r back; the descriptor's slot
 * is the caller's to free (gb__handle_free). Runs on the thread that
 * holds r (whose memory is r->home). */
void gb__region_free(gb_region *r);

/* gb__region_free but for the blocks: closes r's arenas, takes its blocks
 * out of the index and the counters, and returns them, linked through
 * next, for the caller to put each chunk where it belongs (a region handed
 * over: fix/handoff_free.c). */
gb__block *gb__region_unhook(gb_region *r);

/* Enters every block, kept block and arena of r in m's address index, or
 * takes them out: a handoff moves r from the index of the thread that
 * detaches it to that of the thread that attaches it. */
void gb__region_index(gb__mem *m, gb_region *r, bool in);

/* Closes every arena bound to r (gb_leave, gb_region_reset). */
void gb__region_close_arenas(gb_region *r);


#endif /* GB_REGION_H */
