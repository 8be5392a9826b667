/* reset.c -- emptying a region that stays entered, keeping some blocks.
 *
 * A server that enters one region per request, or resets one, pays every
 * page of a fresh block in faults each time: the block cache keeps a few
 * MiB per thread, shared by every region. gb_region_reset empties a region
 * and keeps whole blocks of it, up to a bound the caller gives, on the
 * region's own kept list, resident, for the next allocations (region.c's
 * slow path takes from it before it asks the chunk layer). Kept blocks
 * hold nothing: no pin check asks about them, and under ASan they are
 * poisoned until used again. A reset must not free what a suspended
 * coroutine points into, so a pinned region's contents are retired under
 * a descriptor of their own instead, exactly as a left region would be.
 */
#include "arena.h"
#include "check.h"
#include "handle.h"
#include "init.h"
#include "pin.h"
#include "region.h"
#include "reset.h"
#include "sanitizers.h"
#include "stats.h"
#include "thread.h"

gb__block *gb__reset_take(gb_region *r, size_t a, bool solo)
{
    for (gb__block **pp = &r->kept; *pp; pp = &(*pp)->next) {
        gb__block *b = *pp;
        size_t size = b->chunk.size;
        if (size - GB__BLOCK_HDR < a)
            continue;
        *pp = b->next;
        GB__ASSERT(r->nkept > 0 && r->kept_bytes >= size && !b->owner);
        r->nkept--;
        r->kept_bytes -= size;
        GB__SUB(bytes_kept, size);
        gb__asan_unpoison((char *)b + GB__BLOCK_HDR, size - GB__BLOCK_HDR);
        b->solo = solo;
        gb__block_set_owner(b, r);
        r->nblocks++;
        r->bytes += size;
        return b;
    }
    return NULL;
}

void gb__reset_trim(gb_region *r, size_t keep)
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
        gb__block_index(b, false);
        gb__chunk_put(b->chunk);
    }
}

/* A frozen stack points into r, which is being reset: its blocks and
 * arenas move to a fresh descriptor of their own, retired with witness p
 * as a left region would be, so the pointer stays good; r goes on with
 * none of them. */
static void retire_contents(gb__thread *t, gb_region *r, gb_coro *p)
{
    gb_region *g = gb__handle_take(t);
    g->blocks = r->blocks;
    for (gb__block *b = g->blocks; b; b = b->next)
        gb__block_set_owner(b, g);
    g->nblocks = r->nblocks;
    g->bytes = r->bytes;
    gb__list_move(&r->arenas, &g->arenas);
    GB__ARENA_EACH(a, g)
        a->holder = g;
    r->blocks = NULL;
    r->nblocks = 0;
    r->bytes = 0;
    gb__pin_retire(t, g, p);
}

void gb_region_reset(gb_region *h, size_t keep_bytes)
{
    gb__ensure_init();
    gb__thread *t = gb__self();
    gb__rstack *s = t->cur;
    gb_region *r = s->top;
    if (GB__UNLIKELY(!r || r->handle != (uintptr_t)h))
        gb__region_not_innermost("gb_region_reset", s, h);
    GB__ADD(resets, 1);
    gb_coro *p = gb__pin_pinner(t, r);
    if (p) {
        retire_contents(t, r, p);
    } else {
        gb__region_close_arenas(r);
        /* The blocks just emptied go, newest first, in front of those kept
         * before: the newest are the largest, the likeliest to fit what
         * comes, and the first the bound keeps. */
        gb__block **tail = &r->kept;
        for (gb__block *b = r->blocks; b; b = b->next) {
            size_t size = b->chunk.size;
            gb__asan_poison((char *)b + GB__BLOCK_HDR, size - GB__BLOCK_HDR);
            gb__block_set_owner(b, NULL); /* emptied: gb_region_of no longer names r */
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
    }
    gb__reset_trim(r, keep_bytes);
    r->bump = r->end = NULL;
    r->cur_block = r->last_block = NULL;
    r->last = NULL;
    r->next_size = gb__cfg.first_block;
}
