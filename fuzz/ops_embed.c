/* ops_embed.c -- the embedding surface: reset, leave_to, the try family
 * and region limits.
 *
 * A host that embeds giveback (an interpreter bound to one region, a
 * server that resets one per request) leans on promises the core
 * operations do not reach: a reset empties a region that stays entered and
 * keeps some of its blocks, within a bound; gb_leave_to leaves exactly the
 * regions entered after a saved one, after a longjmp skipped their leaves;
 * a try call that cannot be met returns NULL and changes nothing; and a
 * region under a limit never holds more than it. Each operation here
 * checks its own promise at once, against what the runtime said before it
 * (the counters, gb_region_info) and what the model knows, and the
 * readbacks after every operation (check.c) do the rest: what a reset
 * took away is never read again, and what it kept for a pinned region is
 * read as a left region's would be.
 *
 * Sizes that the OS and malloc would both refuse are never asked for (a
 * request of 2^60 bytes would be libFuzzer's out-of-memory report, not
 * the runtime's NULL): a refusal comes from a limit, or from a size whose
 * arithmetic overflows, which is refused before any memory is asked for.
 * Injected mmap failures (fault.c) still reach the step-down paths, and
 * malloc then meets the request.
 */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------- the try family */

void try_begin(fz_try *t, int r, const char *who, size_t request, bool overflow)
{
    t->r = r;
    t->who = who;
    t->request = request;
    t->overflow = overflow;
    t->bytes = gb_region_bytes(S.region[r].h);
    gb_region_info_get(S.region[r].h, &t->info);
    t->st = stats();
}

/* The smallest block that holds a request of n bytes is at most this much
 * (the block header, the size classes of mapped blocks, four per doubling,
 * and rounding to pages of up to 16 KiB): a limit with this much room
 * left must not refuse it. */
static size_t block_bound(size_t n)
{
    return 2 * (n + 128) + 32 * 1024;
}

/* True when the request was met. A refusal must be counted once and
 * change nothing: the region's blocks, bytes and kept blocks, the
 * counters of what is held, and every allocation in it (read in full).
 * Only a limit, or a size that overflows, may refuse: malloc meets what
 * the OS does not. */
bool try_end(const fz_try *t, const void *p)
{
    const fz_region *R = &S.region[t->r];
    gb_stats st = stats();
    uint64_t refusals = st.refusals - t->st.refusals;
    if (tracing())
        fprintf(stderr, "fuzz_runtime: trace:   %s(%zu bytes) in region %d (limit %zu, held %zu): %s\n",
                t->who, t->request, t->r, R->limit, t->bytes, p ? "met" : "refused");
    if (refusals != (p == NULL))
        fail("%s: refusals went up by %llu for a request that was %s", t->who,
             (unsigned long long)refusals, p ? "met" : "refused");
    if (p && t->overflow)
        fail("%s met a request whose size overflows: %p", t->who, p);
    if (p)
        return true;
    if (!t->overflow) {
        if (!R->limit)
            fail("%s refused a request of %zu bytes in region %d, which has no limit", t->who,
                 t->request, t->r);
        size_t room = R->limit > t->bytes ? R->limit - t->bytes : 0;
        if (room >= block_bound(t->request))
            fail("%s refused a request of %zu bytes in region %d, whose limit (%zu) leaves %zu "
                 "bytes of room",
                 t->who, t->request, t->r, R->limit, room);
    }
    gb_region_info in;
    gb_region_info_get(R->h, &in);
    size_t bytes = gb_region_bytes(R->h);
    const gb_region_info *was = &t->info;
    if (bytes != t->bytes || in.bytes != was->bytes || in.blocks != was->blocks ||
        in.kept_bytes != was->kept_bytes || in.kept_blocks != was->kept_blocks ||
        in.arenas != was->arenas)
        fail("%s returned NULL, but region %d changed: %zu bytes, %zu in %zu blocks and %zu kept "
             "in %zu, before %zu bytes, %zu in %zu blocks and %zu kept in %zu",
             t->who, t->r, bytes, in.bytes, in.blocks, in.kept_bytes, in.kept_blocks, t->bytes,
             was->bytes, was->blocks, was->kept_bytes, was->kept_blocks);
    const gb_stats *b = &t->st;
    /* A block the size classes rounded past the limit goes back, to the
     * block cache (where it may stay, as any block given back) or the OS:
     * what is held outside the cache may go down, never up, unless its
     * munmap was made to fail (fault.c), which leaves the range mapped and
     * counted until a later unmap succeeds. */
    bool deferred = st.unmaps_pending > b->unmaps_pending;
    if (st.blocks_live != b->blocks_live || st.bytes_kept != b->bytes_kept ||
        st.regions_live != b->regions_live || st.arenas_live != b->arenas_live ||
        st.bytes_heap > b->bytes_heap || st.bytes_small > b->bytes_small ||
        (!deferred && (st.bytes_mapped > b->bytes_mapped || st.mappings > b->mappings)))
        fail("%s returned NULL, but the counters changed: blocks_live %zu -> %zu, bytes_kept %zu "
             "-> %zu, bytes_heap %zu -> %zu, bytes_mapped %zu -> %zu, mappings %zu -> %zu",
             t->who, b->blocks_live, st.blocks_live, b->bytes_kept, st.bytes_kept, b->bytes_heap,
             st.bytes_heap, b->bytes_mapped, st.bytes_mapped, b->mappings, st.mappings);
    check_region_full(t->r);
    return false;
}

/* gb_try_alloc or gb_try_calloc in the innermost region, or (one time in
 * eight) a size whose arithmetic overflows. */
void op_try_alloc(void)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nallocs >= MAX_ALLOCS)
        return;
    unsigned how = in_ch8() % 8;
    fz_try t;
    if (how == 7) {
        unsigned k = in_ch8();
        try_begin(&t, top, k & 1 ? "gb_try_alloc" : "gb_try_calloc", SIZE_MAX, true);
        try_end(&t, k & 1 ? gb_try_alloc(SIZE_MAX - k % 15) : gb_try_calloc(SIZE_MAX / 2 + 1, 2 + k));
    } else if (how == 6) {
        size_t count = in_ch8() % 17;
        size_t size = take_size() / 8;
        try_begin(&t, top, "gb_try_calloc", count * size, false);
        void *p = gb_try_calloc(count, size);
        if (try_end(&t, p))
            add_alloc(top, p, count * size, 0, true);
    } else {
        size_t n = take_size();
        try_begin(&t, top, "gb_try_alloc", n, false);
        void *p = gb_try_alloc(n);
        if (try_end(&t, p))
            add_alloc(top, p, n, in_pay64(), false);
    }
}

/* gb_try_alloc_in or gb_try_calloc_in in a region the running context may
 * name (its resumers' included), or a size that overflows. */
void op_try_alloc_in(void)
{
    if (S.nallocs >= MAX_ALLOCS)
        return;
    int r = pick_region(true);
    if (r < 0)
        return;
    gb_region *h = S.region[r].h;
    unsigned how = in_ch8() % 8;
    fz_try t;
    if (how == 7) {
        unsigned k = in_ch8();
        try_begin(&t, r, k & 1 ? "gb_try_alloc_in" : "gb_try_calloc_in", SIZE_MAX, true);
        try_end(&t, k & 1 ? gb_try_alloc_in(h, SIZE_MAX - k % 15)
                          : gb_try_calloc_in(h, (size_t)1 << 40, (size_t)1 << 24 | k));
    } else if (how >= 5) {
        size_t count = in_ch8() % 17;
        size_t size = take_size() / 8;
        try_begin(&t, r, "gb_try_calloc_in", count * size, false);
        void *p = gb_try_calloc_in(h, count, size);
        if (try_end(&t, p))
            add_alloc(r, p, count * size, 0, true);
    } else {
        size_t n = take_size();
        try_begin(&t, r, "gb_try_alloc_in", n, false);
        void *p = gb_try_alloc_in(h, n);
        if (try_end(&t, p))
            add_alloc(r, p, n, in_pay64(), false);
    }
}

/* gb_region_limit on a region the running context may name: none, some
 * room above what it holds (up to 64 KiB, or up to 1 MiB), none at all,
 * below what it holds, or a small bound of its own. While it is set, the
 * other operations allocate in that region through the try family, and its
 * containers are left alone (their growth would stop the process). */
void op_limit(void)
{
    int r = pick_region(true);
    if (r < 0)
        return;
    fz_region *R = &S.region[r];
    size_t bytes = gb_region_bytes(R->h);
    size_t limit;
    switch (in_ch8() % 8) {
    case 0:
        limit = 0;
        break;
    case 1:
    case 2:
    case 3:
        limit = bytes + in_ch16();
        break;
    case 4:
        limit = bytes + (size_t)in_ch16() * 16;
        break;
    case 5:
        limit = bytes;
        break;
    case 6:
        limit = bytes / 2 + 1;
        break;
    default:
        limit = 1 + in_ch16();
        break;
    }
    gb_region_limit(R->h, limit);
    R->limit = limit;
    R->cap = limit > bytes ? limit : bytes;
}

/* --------------------------------------------------------------- reset */

/* keep_bytes for a reset of a region that holds `held` bytes: none, about
 * a block's worth, half, all of it exactly, all and more, or just under
 * all (at least one block goes). */
static size_t take_keep(size_t held)
{
    switch (in_ch8() % 8) {
    case 0:
        return 0;
    case 1:
    case 2:
        return in_ch16();
    case 3:
        return held / 2;
    case 4:
        return held;
    case 5:
        return SIZE_MAX;
    case 6:
        return (size_t)in_ch16() * 16;
    default:
        return held ? held - 1 : 0;
    }
}

/* The handle of the descriptor a reset retired region c's contents under,
 * from gb_region_of of something readable in them; stays NULL (and c is
 * not asked about) when nothing is. */
static void learn_contents_handle(int c, int from)
{
    const void *p = NULL;
    for (int i = 0; i < S.nallocs && !p; i++)
        if (S.alloc[i].alive && S.alloc[i].region == c)
            p = S.alloc[i].p;
    for (int i = 0; i < S.nvecs && !p; i++)
        if (S.vec[i].struct_ok && S.vec[i].region == c)
            p = S.vec[i].h;
    for (int i = 0; i < S.nmaps && !p; i++)
        if (S.map[i].ok && S.map[i].region == c)
            p = S.map[i].h;
    for (int i = 0; i < S.ncoros && !p; i++)
        for (int k = 0; k < HOLD && !p; k++) {
            const fz_slot *s = &S.coro[i].slot[k];
            if (s->kind == S_ELEM_ARENA && slot_valid(s) && S.vec[s->target].region == c)
                p = (const void *)s->value;
        }
    if (!p)
        return;
    gb_region *h = gb_region_of(p);
    if (!h || h == S.region[from].h)
        fail("region %d was reset while pinned, but gb_region_of(%p), in its retired contents, is "
             "%p (the region itself is %p)",
             from, p, (void *)h, (void *)S.region[from].h);
    S.region[c].h = h;
}

/* gb_region_reset of the innermost region, with a bound from the input.
 * In the model the region's allocations and containers move to a record
 * of their own, left now, which the retry point judges as any left region:
 * dropped (never read again) unless a frozen stack points into it, and
 * then the runtime must have retired it whole. The region itself stays
 * live, empty, holding only the blocks it kept: at most keep_bytes, and
 * all of them when keep_bytes holds them all. */
void op_reset(void)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nregions >= MAX_REGIONS)
        return;
    fz_region *R = &S.region[top];
    size_t held = gb_region_bytes(R->h);
    size_t keep = take_keep(held);
    gb_region_info was, in;
    gb_region_info_get(R->h, &was);
    check_region_full(top);
    gb_stats st0 = stats();
    gb_region_reset(R->h, keep);
    gb_stats st = stats();

    int c = S.nregions++;
    fz_region *C = &S.region[c];
    memset(C, 0, sizeof *C);
    C->ctx = R->ctx;
    C->parent = -1;
    C->st = R_JUST_LEFT;
    C->contents = true;
    C->used = R->used;
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].region == top)
            S.alloc[i].region = c;
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].region == top)
            S.vec[i].region = c;
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].region == top)
            S.map[i].region = c;
    R->used = false;
    retry_point();
    check_pinned_full();

    if (st.resets != st0.resets + 1)
        fail("resets went from %llu to %llu over one gb_region_reset", (unsigned long long)st0.resets,
             (unsigned long long)st.resets);
    bool retired = st.retirements != st0.retirements;
    if ((C->st == R_LEFT_FULL || C->st == R_LEFT_ARENA) && !retired)
        fail("region %d was reset while a frozen coroutine points into it, but its contents were "
             "not retired",
             top);
    if (retired)
        learn_contents_handle(c, top);

    gb_region_info_get(R->h, &in);
    size_t bytes = gb_region_bytes(R->h);
    if (tracing())
        fprintf(stderr, "fuzz_runtime: trace:   gb_region_reset(region %d, %zu): kept %zu of %zu bytes, "
                "contents %s (model: %s)\n",
                top, keep, in.kept_bytes, held, retired ? "retired" : "given back",
                C->st == R_DROPPED ? "unpinned" : "pinned");
    if (in.state != GB_REGION_LIVE || in.bytes || in.blocks || in.arenas)
        fail("region %d after gb_region_reset: state %d, %zu bytes in %zu blocks and %zu container "
             "arenas in use, expected none",
             top, (int)in.state, in.bytes, in.blocks, in.arenas);
    if (in.kept_bytes > keep)
        fail("gb_region_reset(keep_bytes %zu) of region %d kept %zu bytes", keep, top, in.kept_bytes);
    /* Unpinned, every block it had is a candidate; pinned, its blocks go
     * with the contents and only those it kept before may stay. */
    size_t could = retired ? was.kept_bytes : held;
    if (in.kept_bytes > could || (keep >= could && in.kept_bytes != could))
        fail("gb_region_reset(keep_bytes %zu) of region %d (%s) kept %zu bytes of the %zu it could "
             "keep",
             keep, top, retired ? "its contents retired" : "unpinned", in.kept_bytes, could);
    if (bytes != in.kept_bytes || (in.kept_bytes != 0) != (in.kept_blocks != 0))
        fail("region %d after gb_region_reset holds %zu bytes, and kept %zu in %zu blocks", top,
             bytes, in.kept_bytes, in.kept_blocks);
    /* What the counters must say: the kept blocks are the region's
     * only blocks now; unpinned, its arenas were closed and the blocks it
     * did not keep given back; pinned, those went to the retired contents. */
    size_t arenas = retired ? st0.arenas_live : st0.arenas_live - was.arenas;
    size_t blocks = st0.blocks_live - was.kept_blocks + in.kept_blocks - (retired ? 0 : was.blocks);
    if (st.bytes_kept != st0.bytes_kept - was.kept_bytes + in.kept_bytes || st.arenas_live != arenas ||
        st.blocks_live != blocks)
        fail("after gb_region_reset of region %d (%s): bytes_kept %zu, expected %zu; arenas_live "
             "%zu, expected %zu; blocks_live %zu, expected %zu",
             top, retired ? "its contents retired" : "unpinned", st.bytes_kept,
             st0.bytes_kept - was.kept_bytes + in.kept_bytes, st.arenas_live, arenas,
             st.blocks_live, blocks);
    R->bytes = bytes;
    R->kept = in.kept_bytes;
    if (R->limit)
        R->cap = R->limit > bytes ? R->limit : bytes;
}

/* ------------------------------------------------------------ leave_to */

/* gb_leave_to of a region of the running context's stack (the choice is
 * how many regions it leaves, 0 to all), or NULL (all). Each region it
 * leaves is read in full first, as before a leave. */
void op_leave_to(void)
{
    size_t depth = ctx_depth(S.cur);
    size_t k = in_pick(depth + 1);
    int saved = ctx_top(S.cur);
    for (size_t i = 0; i < k; i++) {
        check_region_full(saved);
        saved = S.region[saved].parent;
    }
    gb_region *h = k < depth ? S.region[saved].h : NULL;
    size_t left = gb_leave_to(h);
    if (tracing())
        fprintf(stderr, "fuzz_runtime: trace:   gb_leave_to(%s) left %zu of %zu regions\n",
                h ? "a region" : "NULL", left, depth);
    for (size_t i = 0; i < k; i++) {
        int top = ctx_top(S.cur);
        region_left(top);
        ctx_set(S.cur, S.region[top].parent, ctx_depth(S.cur) - 1);
    }
    retry_point();
    check_pinned_full();
    if (left != k)
        fail("gb_leave_to(%p) left %zu regions, expected %zu of the %zu entered", (void *)h, left, k,
             depth);
}
