/* ops_region.c -- the operations on regions and allocations: enter,
 * leave, alloc, alloc_in, calloc, calloc_in, realloc, realloc_in, write
 * and check.
 *
 * These are the runtime's core promises, one operation each, and each
 * updates the model as it goes: an allocation is recorded with its pattern
 * the moment it is made, checked for alignment and for overlap with
 * everything still readable, and a region is read back in full before it
 * is left, so that what the leave may free is known to have been intact.
 * Sizes are mostly small, sometimes a chained block's worth and rarely past
 * the block cap (a solo block), within the input's byte budget, because
 * every byte allocated is also written and read back. A region is named by
 * its handle (the _in forms) from its own context or, in a coroutine, from
 * one that waits on it; one under a limit takes every request through the
 * try family (ops_embed.c).
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* A size: mostly small, sometimes a chained block's worth, rarely more
 * than the block cap (a solo block); within the input's byte budget. Every
 * byte allocated is written and read back, and fresh pages cost a fault
 * each, so large sizes are what an execution's time goes to. */
size_t take_size(void)
{
    unsigned b = in_ch8();
    size_t n;
    if (b < 128)
        n = b;
    else if (b < 224)
        n = 128 + in_ch16() % 4096;
    else if (b < 248)
        n = 4096 + in_ch16() % (60 * 1024);
    else
        n = FZ_BLOCK_CAP + (in_ch8() % 192) * 1024 + in_ch8();
    if (S.bytes + n > MAX_BYTES)
        n %= 64;
    S.bytes += n;
    return n;
}

/* Allocation p of n bytes is aligned and overlaps nothing readable. */
FZ_NO_COV static void check_new_alloc(const void *p, size_t n)
{
    if (!p)
        fail("allocation of %zu bytes returned NULL", n);
    if ((uintptr_t)p % 16)
        fail("allocation %p of %zu bytes is not 16-byte aligned", p, n);
    const unsigned char *c = p;
    size_t span = n ? n : 1;
    for (int i = 0; i < S.nallocs; i++) {
        const fz_alloc *a = &S.alloc[i];
        size_t aspan = a->n ? a->n : 1;
        if (a->alive && c < a->p + aspan && a->p < c + span)
            fail("allocation %p (%zu bytes) overlaps allocation %p (%zu bytes)", p, n, (void *)a->p, a->n);
    }
}

static int record_alloc(int r, void *p, size_t n, unsigned char *shadow)
{
    S.region[r].used = true;
    fz_alloc *a = &S.alloc[S.nallocs];
    a->p = p;
    a->n = n;
    a->region = r;
    a->alive = true;
    a->shadow = shadow;
    return S.nallocs++;
}

/* Records allocation p of n bytes in region r, checks it is aligned and
 * overlaps nothing readable, and fills it with the pattern of seed (or
 * checks it is zero and keeps it, for calloc). */
FZ_NO_COV int add_alloc(int r, void *p, size_t n, uint64_t seed, bool zeroed)
{
    check_new_alloc(p, n);
    unsigned char *c = p, *shadow = malloc(n ? n : 1);
    if (!shadow)
        fail("out of memory for the model");
    if (zeroed) {
        for (size_t i = 0; i < n; i++)
            if (c[i])
                fail("gb_calloc memory %p is not zero at byte %zu of %zu", p, i, n);
        memset(shadow, 0, n ? n : 1);
    } else {
        pattern(c, shadow, n, seed);
    }
    return record_alloc(r, p, n, shadow);
}

int add_alloc_written(int r, void *p, size_t n, unsigned char *shadow)
{
    check_new_alloc(p, n);
    return record_alloc(r, p, n, shadow);
}

/* Whether the running context may name a region of context ctx: its own,
 * and with `resumers`, one of a context waiting on it (the coroutine that
 * resumed it, the one that resumed that one, ..., the thread). */
static bool may_name(int ctx, bool resumers)
{
    for (int c = S.cur;; c = S.coro[c].resumer) {
        if (c == ctx)
            return true;
        if (!resumers || c == MAIN)
            return false;
    }
}

/* The regions a handle may name for an allocation: live, of the running
 * context, or with `resumers`, of one waiting on it. Over the running
 * context's own stack alone, the choice is the depth, innermost first. */
int pick_region(bool resumers)
{
    int n = 0;
    for (int c = S.cur;; c = S.coro[c].resumer) {
        for (int r = ctx_top(c); r >= 0; r = S.region[r].parent)
            cand[n++] = r;
        if (!resumers || c == MAIN)
            break;
    }
    return n ? cand[in_pick((size_t)n)] : -1;
}

/* An alive allocation whose region the running context may name (as
 * pick_region), or -1. */
static int pick_named_alloc(bool resumers)
{
    int n = 0;
    for (int i = 0; i < S.nallocs; i++) {
        const fz_alloc *a = &S.alloc[i];
        if (a->alive && S.region[a->region].st == R_LIVE && may_name(S.region[a->region].ctx, resumers))
            cand[n++] = i;
    }
    return n ? cand[in_pick((size_t)n)] : -1;
}

void op_enter(void)
{
    if (ctx_depth(S.cur) >= MAX_DEPTH || S.nregions >= MAX_REGIONS)
        return;
    gb_region *h = gb_enter();
    if (!h)
        fail("gb_enter returned NULL");
    fz_region *R = &S.region[S.nregions];
    R->h = h;
    R->ctx = S.cur;
    R->parent = ctx_top(S.cur);
    R->st = R_LIVE;
    ctx_set(S.cur, S.nregions++, ctx_depth(S.cur) + 1);
}

void op_leave(void)
{
    int top = ctx_top(S.cur);
    if (top < 0)
        return;
    check_region_full(top);
    gb_leave(S.region[top].h);
    region_left(top);
    ctx_set(S.cur, S.region[top].parent, ctx_depth(S.cur) - 1);
    retry_point();
    check_pinned_full();
}

/* A region under a limit may refuse a request, and the stopping family
 * would stop the process there: every allocation in one goes through the
 * try family instead (ops_embed.c's try_begin and try_end check that a
 * refusal changes nothing). */
void op_alloc(unsigned v)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nallocs >= MAX_ALLOCS)
        return;
    size_t n = take_size();
    if (S.region[top].limit) {
        fz_try t;
        try_begin(&t, top, v >= 6 ? "gb_try_realloc" : "gb_try_alloc", n, false);
        void *p = v >= 6 ? gb_try_realloc(NULL, 0, n) : gb_try_alloc(n);
        if (try_end(&t, p))
            add_alloc(top, p, n, in_pay64(), false);
        return;
    }
    void *p = v >= 6 ? gb_realloc(NULL, 0, n) : gb_alloc(n);
    add_alloc(top, p, n, in_pay64(), false);
}

/* Variants 4 to 7 may name a region of a context waiting on the running
 * coroutine: a generator's value allocated where its caller lives. */
void op_alloc_in(unsigned v)
{
    if (S.nallocs >= MAX_ALLOCS)
        return;
    int r = pick_region(v >= 4);
    if (r < 0)
        return;
    size_t n = take_size();
    if (S.region[r].limit) {
        fz_try t;
        try_begin(&t, r, "gb_try_alloc_in", n, false);
        void *p = gb_try_alloc_in(S.region[r].h, n);
        if (try_end(&t, p))
            add_alloc(r, p, n, in_pay64(), false);
        return;
    }
    add_alloc(r, gb_alloc_in(S.region[r].h, n), n, in_pay64(), false);
}

void op_calloc(void)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nallocs >= MAX_ALLOCS)
        return;
    size_t count = in_ch8() % 17;
    size_t size = take_size() / 8;
    if (S.region[top].limit) {
        fz_try t;
        try_begin(&t, top, "gb_try_calloc", count * size, false);
        void *p = gb_try_calloc(count, size);
        if (try_end(&t, p))
            add_alloc(top, p, count * size, 0, true);
        return;
    }
    add_alloc(top, gb_calloc(count, size), count * size, 0, true);
}

/* gb_calloc_in (the try form under a limit) in a region the running
 * context may name, its resumers' included. */
void op_calloc_in(void)
{
    if (S.nallocs >= MAX_ALLOCS)
        return;
    int r = pick_region(true);
    if (r < 0)
        return;
    size_t count = in_ch8() % 17;
    size_t size = take_size() / 8;
    if (S.region[r].limit) {
        fz_try t;
        try_begin(&t, r, "gb_try_calloc_in", count * size, false);
        void *p = gb_try_calloc_in(S.region[r].h, count, size);
        if (try_end(&t, p))
            add_alloc(r, p, count * size, 0, true);
        return;
    }
    add_alloc(r, gb_calloc_in(S.region[r].h, count, size), count * size, 0, true);
}

void op_realloc(unsigned v)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nallocs >= MAX_ALLOCS)
        return;
    int n = 0;
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive && S.alloc[i].region == top)
            cand[n++] = i;
    if (!n)
        return;
    realloc_alloc(cand[in_pick((size_t)n)], v, false, false);
}

/* gb_realloc_in on an allocation of a region the running context may
 * name, whatever region is innermost. */
void op_realloc_in(void)
{
    if (S.nallocs >= MAX_ALLOCS)
        return;
    int i = pick_named_alloc(true);
    if (i >= 0)
        realloc_alloc(i, in_ch8() % 8, true, false);
}

/* gb_try_realloc or gb_try_realloc_in (choice: which, and how it grows),
 * or one whose size overflows, which must be refused. */
void op_try_realloc(void)
{
    if (S.nallocs >= MAX_ALLOCS)
        return;
    int i = pick_named_alloc(true);
    if (i < 0)
        return;
    unsigned how = in_ch8();
    if (how % 16 == 15) {
        fz_alloc *a = &S.alloc[i];
        fz_try t;
        try_begin(&t, a->region, "gb_try_realloc_in", SIZE_MAX, true);
        try_end(&t, gb_try_realloc_in(S.region[a->region].h, a->p, a->n, SIZE_MAX - in_ch8() % 15));
        return;
    }
    realloc_alloc(i, how % 8, how & 8, true);
}

/* Allocation i resized by variant v's rule: a size of its own, a little
 * more (in place when it is the last one), half, or into or within a solo
 * block. */
void realloc_alloc(int i, unsigned v, bool named, bool fallible)
{
    fz_alloc *a = &S.alloc[i];
    int r = a->region;
    size_t old_n = a->n, new_n;
    if (v < 3)
        new_n = take_size();
    else if (v < 5)
        new_n = old_n + in_ch8(); /* grows in place when it is the last one */
    else if (v < 6)
        new_n = old_n / 2;
    else
        new_n = old_n + FZ_BLOCK_CAP / 2 + (size_t)in_ch8() * 1024; /* into or within a solo block */
    if (new_n > old_n && S.bytes + (new_n - old_n) > MAX_BYTES)
        new_n = old_n;
    S.bytes += new_n > old_n ? new_n - old_n : 0;
    fz_region *R = &S.region[r];
    const char *who = named ? "gb_realloc_in" : "gb_realloc";
    unsigned char *q;
    if (fallible || R->limit) {
        who = named ? "gb_try_realloc_in" : "gb_try_realloc";
        fz_try t;
        try_begin(&t, r, who, new_n, false);
        q = named ? gb_try_realloc_in(R->h, a->p, old_n, new_n) : gb_try_realloc(a->p, old_n, new_n);
        if (!try_end(&t, q))
            return; /* a read in full of r, a->p included */
    } else {
        q = named ? gb_realloc_in(R->h, a->p, old_n, new_n) : gb_realloc(a->p, old_n, new_n);
    }
    size_t keep = old_n < new_n ? old_n : new_n;
    if (!q || memcmp(q, a->shadow, keep) != 0)
        fail("%s(%p, %zu, %zu) = %p lost the first %zu bytes", who, (void *)a->p, old_n, new_n,
             (void *)q, keep);
    /* The old record ends here (a solo block may have moved); the new one
     * keeps the bytes and gets a fresh pattern past them. */
    unsigned char *old_shadow = a->shadow;
    a->alive = false;
    a->shadow = NULL;
    int j = add_alloc(r, q, new_n, in_pay64(), false);
    fz_alloc *b = &S.alloc[j];
    memcpy(b->shadow, old_shadow, keep);
    memcpy(b->p, old_shadow, keep);
    free(old_shadow);
}

void op_write(void)
{
    int n = 0;
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive && S.region[S.alloc[i].region].st == R_LIVE && held_here(S.alloc[i].region) &&
            S.alloc[i].n)
            cand[n++] = i;
    if (!n)
        return;
    fz_alloc *a = &S.alloc[cand[in_pick((size_t)n)]];
    size_t off = in_ch16() % a->n;
    size_t len = in_ch16() % (a->n - off) + 1;
    pattern(a->p + off, a->shadow + off, len, in_pay64());
}

void op_check(unsigned v)
{
    if (v < 4) {
        int n = 0;
        for (int i = 0; i < S.nallocs; i++)
            if (S.alloc[i].alive)
                cand[n++] = i;
        if (n)
            check_alloc_full(&S.alloc[cand[in_pick((size_t)n)]]);
        return;
    }
    int c = pick_container();
    if (c < 0)
        return;
    if (c < MAX_VECS)
        check_vec(&S.vec[c], true);
    else
        check_map(&S.map[c - MAX_VECS], true);
}
