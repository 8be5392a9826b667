/* region.c -- a region's blocks: bump allocation, growth, kept blocks,
 * popping and freeing.
 *
 * A region hands out memory by bumping a pointer through its newest block;
 * when the block is full it chains a new one twice as large, up to a cap, so
 * a region of any size needs few blocks and every allocation is a compare
 * and an add in the common case. Freeing a region gives all its blocks back
 * at once; whether a region that was left is freed now or retired while a
 * suspended coroutine points into it is pin.c's to decide, above this file.
 * Every region works in the memory of the thread that entered it (its
 * home: the cache, the address index and the descriptor pages), so nothing
 * here asks which thread is running. The public entry points that lead
 * here are in entry.c.
 */
#include "arena.h"
#include "init.h"
#include "map.h"
#include "oom.h"
#include "region.h"
#include "sanitizers.h"
#include "stats.h"

#include <string.h>

/* ------------------------------------------------------------- sizes */

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

void gb__block_index(gb__mem *m, gb__block *b, bool in)
{
    gb__index *ix = &m->index;
    if (in)
        gb__index_add(ix, b->chunk.base, b->chunk.size, (uintptr_t)b | GB__INDEX_BLOCK, b->owner);
    else
        gb__index_remove(ix, b->chunk.base, b->chunk.size, (uintptr_t)b | GB__INDEX_BLOCK);
}

void gb__block_set_owner(gb__mem *m, gb__block *b, gb_region *owner)
{
    b->owner = owner;
    gb__index_set_owner(&m->index, b->chunk.base, b->chunk.size, (uintptr_t)b | GB__INDEX_BLOCK,
                        owner);
}

gb__block *gb__block_at(gb__mem *m, const void *p)
{
    void *owner;
    uintptr_t v = gb__index_find(&m->index, p, &owner);
    return (v & GB__INDEX_TAG) == GB__INDEX_BLOCK ? (gb__block *)v : NULL;
}

/* ------------------------------------------------------- kept blocks
 *
 * A server that enters one region per request, or resets one, pays every
 * page of a fresh block in faults each time: the block cache keeps a few
 * MiB per thread, shared by every region. gb_region_reset empties a region
 * and keeps whole blocks of it, up to a bound the caller gives, on the
 * region's own kept list, resident, for the next allocations (the slow
 * path below takes from it before it asks the chunk layer). Kept blocks
 * hold nothing: no pin check asks about them, and under ASan they are
 * poisoned until used again. */

/* The first kept block of r whose payload holds a bytes, taken off the
 * kept list and made a block of r again (solo or not); NULL when none
 * does. */
static gb__block *kept_take(gb_region *r, size_t a, bool solo)
{
    for (gb__block **pp = &r->kept; *pp; pp = &(*pp)->next) {
        gb__block *b = *pp;
        size_t size = b->chunk.size;
        if (size - GB__BLOCK_HDR < a)
            continue;
        GB__ASSERT(r->nkept > 0 && r->kept_bytes >= size && !b->owner);
        *pp = b->next;
        r->nkept--;
        r->kept_bytes -= size;
        GB__SUB(bytes_kept, size);
        gb__asan_unpoison((char *)b + GB__BLOCK_HDR, size - GB__BLOCK_HDR);
        b->solo = solo;
        /* Written before, so resident: never populated again. */
        b->chunk.fresh = false;
        gb__block_set_owner(r->home, b, r);
        r->nblocks++;
        r->bytes += size;
        return b;
    }
    return NULL;
}

/* Gives back the kept blocks of r beyond the first `keep` bytes of them
 * (in list order, whole blocks only). */
static void kept_trim(gb_region *r, size_t keep)
{
    size_t total = 0;
    for (gb__block **pp = &r->kept; *pp;) {
        gb__block *b = *pp;
        size_t size = b->chunk.size;
        if (total + size <= keep) {
            total += size;
            pp = &b->next;
            continue;
        }
        *pp = b->next;
        r->nkept--;
        r->kept_bytes -= size;
        GB__SUB(bytes_kept, size);
        GB__SUB(blocks_live, 1);
        gb__asan_unpoison((char *)b + GB__BLOCK_HDR, size - GB__BLOCK_HDR);
        gb__block_index(r->home, b, false);
        gb__chunk_put(&r->home->cache, b->chunk);
    }
}

/* c as a block of r; NULL, with c given back, when the address index has
 * no room for it (the table could not grow: memory is short). */
static gb__block *install_block(gb_region *r, gb__chunk c, bool solo)
{
    if (!gb__index_reserve(&r->home->index, c.size)) {
        gb__chunk_put(&r->home->cache, c);
        return NULL;
    }
    gb__block *b = c.base;
    b->chunk = c;
    b->owner = r;
    b->solo = solo;
    gb__block_index(r->home, b, true);
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
            if (s <= room && gb__chunk_try_get(&r->home->cache, s, how, &c)) {
                gb__block *b = NULL;
                if (c.size > room)
                    gb__chunk_put(&r->home->cache, c); /* the size class rounded it past the limit */
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
                who, (void *)gb__region_handle(r), r->limit, r->bytes + r->kept_bytes, n);
    gb__die("%s: out of memory: region %p could not get a block for a request of %zu bytes "
            "(the OS and malloc refused it, and every smaller block that would hold it; it holds "
            "%zu bytes; gb_try_ functions return NULL)",
            who, (void *)gb__region_handle(r), n, r->bytes + r->kept_bytes);
}

/* Whether r, whose handle was h, is still the live region h on the stack
 * s. Only the descriptors on s are read: r's own may be on a page given
 * back since. */
static bool still_on(const gb__rstack *s, const gb_region *r, uintptr_t h)
{
    for (const gb_region *x = s->top; x; x = x->parent)
        if (x == r)
            return r->handle == h;
    return false;
}

/* After a failed attempt at a request of n bytes in r: true to try once
 * more (the handler gave memory back), else the request fails, counted,
 * and stops the process unless it is fallible. The handler may give back
 * anything but r (giveback.h, gb_oom_handler): the request is still for
 * r, and a realloc still holds a pointer into it. A handler that left or
 * reset r stops the process, named, rather than have the request met in
 * another region or in memory that was given back. */
static bool retry_or_refuse(const char *who, gb_region *r, size_t n, gb_oom_reason why, int *round,
                            bool fallible)
{
    if ((*round)++ == 0) {
        gb__rstack *s = r->stack;
        uintptr_t h = r->handle;
        uint32_t resets = r->resets;
        bool again = gb__oom_handle((gb_region *)h, n, why);
        if (!still_on(s, r, h))
            gb__die("%s: the out-of-memory handler left region %p, which the request of %zu bytes "
                    "is for (a handler may give back any region but that one: gb_set_oom_handler)",
                    who, (void *)h, n);
        if (r->resets != resets)
            gb__die("%s: the out-of-memory handler reset region %p, which the request of %zu bytes "
                    "is for (a handler may give back any region but that one: gb_set_oom_handler)",
                    who, (void *)h, n);
        if (again)
            return true;
    }
    GB__ADD(refusals, 1);
    if (!fallible)
        refuse(who, r, n, why);
    return false;
}

/* The end of block b's memory. */
static inline char *block_top(const gb__block *b)
{
    return (char *)b + b->chunk.size;
}

/* Makes the current block of r resident up to at least `want` (at most its
 * top): one populate step past r->end, the end of its resident part, which
 * then moves there. While a block is populated in steps, r->end is below
 * its top, so the bump's fast path stops at every step and the slow path
 * takes the next one (alloc_slow); what is populated and not yet written
 * is then at most a step, where a whole block at once left a partly
 * filled block's unwritten rest resident in every region that had one. */
static void populate_to(gb_region *r, char *want)
{
    gb__block *b = r->cur_block;
    size_t resident = r->bytes - b->chunk.size + (size_t)(r->end - (char *)b);
    size_t to = gb__map_populate_more(&b->chunk, (size_t)(r->end - (char *)b), (size_t)(want - (char *)b), resident);
    r->end = (char *)b + to;
    GB__ASSERT(want <= r->end && r->end <= block_top(b));
}

/* Takes a block for an allocation of a bytes (aligned) in r and hands out
 * its first a bytes; NULL, with *why, when no block can be had. */
static void *alloc_block(gb_region *r, size_t a, gb_oom_reason *why)
{
    size_t cap = gb__cfg.block_cap;
    if (a > cap - GB__BLOCK_HDR) {
        /* Larger than any chained block: a block of its own, linked behind
         * the current block so the current block's free space stays usable. */
        gb__block *b = r->kept ? kept_take(r, a, true) : NULL;
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
    /* A chain's first block is taken at the thread's warm size (region.h,
     * gb__mem) where the cache holds a block of it: the block the last
     * region freed on this thread, or one like it, whose memory the CPU's
     * caches still hold. Regions entered one after another are often
     * alike, and one that starts in the warm block writes what its
     * predecessor wrote; one that doubles from the first block instead
     * spreads the same bytes over blocks of each size the cache holds,
     * and writes more distinct memory than the caches keep (regions of
     * 256 KiB in a loop wrote 547 KiB of distinct pages per 16 regions
     * that way, against 368 KiB with blocks from glibc's heap, which
     * carves every region's blocks from the same place). Only a cached
     * block is taken so: resident already, what the region leaves
     * unwritten in it costs no memory, where a fresh mapping of that size
     * would be faulted or populated for a region that may want less. A
     * region under a limit grows as it would: the larger block could take
     * room the limit leaves for later ones. */
    gb__mem *m = r->home;
    if (!r->cur_block && !r->limit && m->warm > size && gb__chunk_cached(&m->cache, m->warm))
        size = m->warm;
    while (size - GB__BLOCK_HDR < a)
        size *= 2;
    if (size > cap)
        size = cap;
    gb__block *b = r->kept ? kept_take(r, a, false) : NULL;
    if (!b)
        b = take_block(r, size, a + GB__BLOCK_HDR, false, why);
    if (!b)
        return NULL;
    b->next = r->blocks;
    r->blocks = b;
    r->cur_block = b;
    r->bump = (char *)b + GB__BLOCK_HDR;
    r->end = block_top(b);
    /* The region writes this block from its start to its end: a fresh one
     * is made resident in steps just ahead of the bump pointer where the
     * configuration says it pays (gb_populate), instead of a fault per
     * page. A block of one large allocation above is not: the caller may
     * write little of it. */
    if (gb__map_populates(&b->chunk)) {
        r->end = (char *)b;
        populate_to(r, r->bump + a);
    }
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
    /* The current block has room past its resident part: the next step. */
    if (r->cur_block && a <= (size_t)(block_top(r->cur_block) - r->bump)) {
        populate_to(r, r->bump + a);
        char *p = r->bump;
        r->bump += a;
        r->last = p;
        r->last_block = r->cur_block;
        return p;
    }
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
    /* The index's room is made ready first and put in place only once
     * the block has grown: a refusal changes nothing, the index included
     * (growing to 1 TiB would otherwise leave a table of 128 MiB behind). */
    gb__chunk c, was = b->chunk;
    gb__index_grow room;
    if (!gb__index_prepare(&r->home->index, GB__BLOCK_HDR + a, &room)) {
        *why = GB_OOM_SYSTEM;
        return NULL;
    }
    if (!gb__chunk_try_grow(&r->home->cache, b->chunk, GB__BLOCK_HDR + old_n, GB__BLOCK_HDR + a, r->limit != 0, &c)) {
        gb__index_abandon(&room);
        *why = GB_OOM_SYSTEM;
        return NULL;
    }
    gb__index_commit(&room);
    /* The old range leaves the index by the values it was entered with:
     * where the block moved, its old header is gone. */
    gb__index_remove(&r->home->index, was.base, was.size, (uintptr_t)b | GB__INDEX_BLOCK);
    gb__block *nb = c.base;
    nb->chunk = c;
    gb__block_index(r->home, nb, true);
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

gb__block *gb__region_block_of(const gb_region *r, const void *p)
{
    gb__block *b = gb__block_at(r->home, p);
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
        size_t room = b->solo ? b->chunk.size - GB__BLOCK_HDR : (size_t)(block_top(b) - (char *)p);
        size_t had = b->solo ? room : (size_t)(r->bump - (char *)p);
        if (old_n > had)
            gb__die("%s: old size %zu is larger than the allocation at %p (%zu bytes)", who,
                    old_n, p, had);
        if (b->solo)
            return grow_solo(who, r, b, old_n, a, fallible);
        if (a <= room) {
            /* The last allocation grows (or shrinks) in place, past the
             * resident part of its block once that is populated further. */
            if ((char *)p + a > r->end)
                populate_to(r, (char *)p + a);
            r->bump = (char *)p + a;
            return p;
        }
    }
    gb__block *held = gb__region_block_of(r, p);
    if (!held)
        gb__die("%s: %p is not an allocation of region %p (it is in none of its blocks)", who, p,
                (void *)gb__region_handle(r));
    size_t most = taken_after(r, held, p);
    if (old_n > most)
        gb__die("%s: old size %zu is larger than what region %p handed out from %p on (%zu "
                "bytes)",
                who, old_n, (void *)gb__region_handle(r), p, most);
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

gb_region *gb__region_pop(gb__rstack *s)
{
    gb_region *r = s->top;
    GB__ASSERT(r && r->state == GB__LIVE && r->stack == s && s->depth > 0);
    /* Blocks a reset kept hold nothing, so nothing can point into them:
     * they go back now, whether pin.c frees r or retires it (a retired
     * region keeps only what a suspended stack may still read). */
    kept_trim(r, 0);
    s->top = r->parent;
    s->depth--;
    r->parent = NULL;
    r->stack = NULL;
    GB__SUB(regions_live, 1);
    return r;
}

bool gb__region_contains(const gb_region *r, const void *p)
{
    const char *c = p;
    for (const gb__block *b = r->blocks; b; b = b->next)
        if (c >= (const char *)b + GB__BLOCK_HDR && c < (const char *)b + b->chunk.size)
            return true;
    GB__ARENA_EACH(a, r)
        if (c >= (const char *)a->chunk.base && c < (const char *)a->chunk.base + a->chunk.size)
            return true;
    return false;
}

/* Gives back the blocks of list b, which are in m. */
void gb__region_index(gb__mem *m, gb_region *r, bool in)
{
    for (gb__block *b = r->blocks; b; b = b->next)
        gb__block_index(m, b, in);
    for (gb__block *b = r->kept; b; b = b->next)
        gb__block_index(m, b, in);
    GB__ARENA_EACH(a, r)
        gb__arena_index(m, a, in);
}

void gb__region_close_arenas(gb_region *r)
{
    while (!gb__list_empty(&r->arenas))
        gb__arena_close(r->home, GB__LIST_ENTRY(r->arenas.next, gb__arena, link));
}

gb__block *gb__region_unhook(gb_region *r)
{
    GB__ASSERT(!r->stack && !gb__list_linked(&r->rlink) && !gb__list_linked(&r->wlink));
    gb__region_close_arenas(r);
    /* The leave that came before gave the kept blocks back (a region
     * holding contents a reset retired never had any). */
    GB__ASSERT(!r->kept && r->nkept == 0 && r->kept_bytes == 0);
    for (gb__block *b = r->blocks; b; b = b->next)
        gb__block_index(r->home, b, false);
    GB__SUB(blocks_live, r->nblocks);
    return r->blocks;
}

/* The thread's warm size after it frees a region whose chained blocks
 * held `used` bytes, headers and the current block's unused end left
 * out: the smallest of the chain's sizes (the first block doubled, or the
 * cap) that would have held them all in one block; 0 when even the cap
 * would not, or when that block is more than an eighth of the cache's
 * bound. A region that outgrows its warm block W goes on to blocks of 2W
 * and 4W, where one that started at the first block would have had 2W
 * bytes of smaller blocks before its block of W: only while W, 2W and 4W
 * fit in the bound together can the cache hold what a larger successor
 * takes, else it maps fresh blocks its predecessors' chains never needed
 * (regions of 1 to 8 MB in random order ran 17% slower with no bound on
 * W). The cap's case is the same: its successor would ask for the cap's
 * blocks where its predecessor took smaller ones, which the cache holds. */
static size_t warm_size(size_t used)
{
    size_t cap = gb__cfg.block_cap, size = gb__cfg.first_block;
    if (used > cap - GB__BLOCK_HDR)
        return 0;
    while (size - GB__BLOCK_HDR < used)
        size = size <= cap - size ? size * 2 : cap;
    return size <= gb__cfg.cache_bytes / 8 ? size : 0;
}

void gb__region_free(gb_region *r)
{
    /* What the chain used: its blocks' payloads but the current block's
     * unused end (the descriptor a pinned region's reset retires its
     * contents under has no current block: its chain counts whole). Solo
     * blocks each held one large allocation. */
    size_t used = 0, unused = r->cur_block ? (size_t)(block_top(r->cur_block) - r->bump) : 0;
    for (gb__block *b = gb__region_unhook(r), *next; b; b = next) {
        next = b->next;
        if (!b->solo)
            used += b->chunk.size - GB__BLOCK_HDR;
        gb__chunk_put(&r->home->cache, b->chunk);
    }
    GB__ASSERT(used >= unused);
    r->home->warm = warm_size(used - unused);
}

void gb__region_empty(gb_region *r, size_t keep_bytes)
{
    r->resets++;
    gb__region_close_arenas(r);
    /* The blocks just emptied go, newest first, in front of those kept
     * before: the newest are the largest, the likeliest to fit what comes,
     * and the first the bound keeps. */
    gb__block **tail = &r->kept;
    for (gb__block *b = r->blocks; b; b = b->next) {
        size_t size = b->chunk.size;
        gb__asan_poison((char *)b + GB__BLOCK_HDR, size - GB__BLOCK_HDR);
        gb__block_set_owner(r->home, b, NULL); /* emptied: gb_region_of no longer names r */
        r->nkept++;
        r->kept_bytes += size;
        GB__ADD(bytes_kept, size);
        tail = &b->next;
    }
    *tail = r->kept;
    r->kept = r->blocks ? r->blocks : r->kept;
    r->blocks = NULL;
    r->nblocks = 0;
    r->bytes = 0;
    kept_trim(r, keep_bytes);
    r->bump = r->end = NULL;
    r->cur_block = r->last_block = NULL;
    r->last = NULL;
    r->next_size = gb__cfg.first_block;
}

void gb__region_move(gb_region *g, gb_region *r)
{
    g->blocks = r->blocks;
    for (gb__block *b = g->blocks; b; b = b->next)
        gb__block_set_owner(g->home, b, g);
    g->nblocks = r->nblocks;
    g->bytes = r->bytes;
    gb__list_move(&r->arenas, &g->arenas);
    GB__ARENA_EACH(a, g)
        a->holder = g;
    r->blocks = NULL;
    r->nblocks = 0;
    r->bytes = 0;
}
