/* model.c -- the model: what the runtime must still hold after each
 * operation, and the pin rules that decide it.
 *
 * The harness checks the runtime against an expectation of its own, so
 * the model shares no code with what it checks: its pattern hash is its
 * own copy of splitmix64's finaliser (the runtime's maps hash keys with
 * the same function, written separately: a change there must change
 * neither what the corpus writes nor what the model expects), and it
 * decides what stays readable from the API's promises alone. It promises
 * this, and nothing more (it must never ask the runtime for what the API
 * does not promise):
 *   - an allocation in a live region is readable with its contents;
 *   - a left region stays readable while a frozen coroutine (suspended, or
 *     running but waiting on one it resumed; never the running one) holds,
 *     in its stack, a pointer into the region's blocks. The model checks
 *     this at every point where the runtime may free a retired region (a
 *     leave, a finish or free of a coroutine, a sweep, a safepoint), and a
 *     region found unpinned at one such point is dropped for good, even if
 *     the runtime keeps it longer (a conservative scan may see stale words);
 *   - a pointer into a compacted vec's arena pins the arena only, as far as
 *     the model is concerned: reading the rest of that region would make a
 *     poisoned arena binding look like a use-after-free instead of the leak
 *     it is;
 *   - a coroutine reads the pointers it holds right after it resumes, before
 *     any other call into the runtime (check.c, check_held);
 *   - a reset takes everything out of a region that stays entered: the model
 *     moves the region's allocations and containers to a record of their
 *     own, left at the reset, and judges it by the same rules (the runtime
 *     retires a pinned region's contents under a descriptor of their own);
 *   - while a coroutine runs, the live regions of the contexts waiting on
 *     it take its allocations as its own regions do (fz_coro.resumer).
 */
#include "harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fz_state S;
int cand[MAX_ALLOCS + MAX_REGIONS];

/* ------------------------------------------------------------- reporting */

/* The prefix "fuzz_runtime: operation N (...)" is what ci/fuzz.sh's teeth
 * match, so it stays as it is. */
void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz_runtime: operation %u (%s): ", S.ops,
            S.cur == MAIN ? "thread" : "coroutine");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

/* ---------------------------------------------------------------- pattern */

FZ_NO_COV uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Writes n bytes of the pattern of seed into dst and into shadow: each
 * word differs from its neighbours and from the same word of another
 * seed, so a misplaced or stale byte shows. */
FZ_NO_COV void pattern(unsigned char *dst, unsigned char *shadow, size_t n, uint64_t seed)
{
    uint64_t base = mix64(seed), step = mix64(seed + 1) | 1;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = base + step * i;
        size_t k = n - i < 8 ? n - i : 8;
        memcpy(shadow + i, &w, k);
    }
    memcpy(dst, shadow, n);
}

/* The key the model's index k stands for in a map. */
uint64_t map_key(unsigned k)
{
    return (uint64_t)k * 0x9e3779b97f4a7c15ull;
}

/* ------------------------------------------------------------- contexts */

int ctx_top(int ctx)
{
    if (ctx < MAIN)
        return ctx == PEER ? peer_ctx_top() : -1;
    return ctx == MAIN ? S.main_top : S.coro[ctx].top;
}

size_t ctx_depth(int ctx)
{
    if (ctx < MAIN)
        return ctx == PEER ? peer_ctx_depth() : 0;
    return ctx == MAIN ? S.main_depth : S.coro[ctx].depth;
}

void ctx_set(int ctx, int top, size_t depth)
{
    if (ctx == MAIN) {
        S.main_top = top;
        S.main_depth = depth;
    } else {
        S.coro[ctx].top = top;
        S.coro[ctx].depth = depth;
    }
}

/* Live region r is left now: the retry point of this operation judges
 * it. What it kept from its last reset stays with it while it is retired
 * (bounded in check.c). */
void region_left(int r)
{
    S.region[r].st = R_JUST_LEFT;
    S.region[r].left_kept = S.region[r].kept;
}

/* Marks the regions of a finished or freed coroutine as left, innermost
 * first, as the runtime leaves them. */
void left_all(int ctx)
{
    for (int r = ctx_top(ctx); r >= 0; r = S.region[r].parent)
        region_left(r);
    ctx_set(ctx, -1, 0);
}

size_t region_depth(int r)
{
    size_t d = 1;
    for (int x = ctx_top(S.region[r].ctx); x >= 0 && x != r; x = S.region[x].parent)
        d++;
    return d;
}

/* A frozen coroutine's stack is what pin checks scan. */
static bool frozen(const fz_coro *c)
{
    return c->st == C_SUSPENDED || (c->st == C_RUNNING && c->idx != S.cur);
}

bool any_frozen(void)
{
    for (int i = 0; i < S.ncoros; i++)
        if (frozen(&S.coro[i]))
            return true;
    return false;
}

/* ------------------------------------------------------------ pin model */

bool slot_valid(const fz_slot *s)
{
    switch (s->kind) {
    case S_ALLOC:
        return S.alloc[s->target].alive;
    case S_VEC:
        return S.vec[s->target].struct_ok;
    case S_MAP:
        return S.map[s->target].ok;
    case S_ELEM_REGION:
        return S.vec[s->target].struct_ok && S.vec[s->target].epoch == s->epoch;
    case S_ELEM_ARENA:
        return S.vec[s->target].storage_ok && S.vec[s->target].epoch == s->epoch;
    default:
        return false;
    }
}

static int slot_region(const fz_slot *s)
{
    switch (s->kind) {
    case S_ALLOC:
        return S.alloc[s->target].region;
    case S_MAP:
        return S.map[s->target].region;
    case S_VEC:
    case S_ELEM_REGION:
    case S_ELEM_ARENA:
        return S.vec[s->target].region;
    default:
        return -1;
    }
}

/* The coroutine running now (not one waiting on another), or -2. */
static int running_coro(void)
{
    return S.cur != MAIN && S.coro[S.cur].st == C_RUNNING ? S.cur : -2;
}

/* 2: a frozen stack points into region r's blocks; 1: only into a vec
 * arena of r; 0: nothing pins r. With `running`, the running coroutine's
 * stack counts too: the runtime reads its live stack when it tries a
 * retired region again (pin.c gb__pin_try), though not at the leave (nor
 * at a reset). */
int pins_of(int r, bool running)
{
    int found = 0;
    for (int i = 0; i < S.ncoros; i++) {
        const fz_coro *c = &S.coro[i];
        if (!frozen(c) && !(running && i == running_coro()))
            continue;
        for (int k = 0; k < HOLD; k++) {
            const fz_slot *s = &c->slot[k];
            if (!slot_valid(s) || slot_region(s) != r)
                continue;
            if (s->kind != S_ELEM_ARENA)
                return 2;
            found = 1;
        }
    }
    return found;
}

/* Nothing of r's blocks may be read again; a compacted vec's elements stay
 * readable unless the arena goes too. */
static void region_kill(int r, bool arenas_too)
{
    for (int i = 0; i < S.nallocs; i++) {
        fz_alloc *a = &S.alloc[i];
        if (a->region == r && a->alive) {
            a->alive = false;
            free(a->shadow);
            a->shadow = NULL;
        }
    }
    for (int i = 0; i < S.nvecs; i++) {
        fz_vec *v = &S.vec[i];
        if (v->region != r)
            continue;
        v->struct_ok = false;
        if (arenas_too || !v->arena)
            v->storage_ok = false;
    }
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].region == r)
            S.map[i].ok = false;
}

void region_dropped(int r)
{
    region_kill(r, true);
    S.region[r].st = R_DROPPED;
}

/* The runtime may free a retired region here: judge every left region by
 * the frozen stacks as they are now. */
void retry_point(void)
{
    for (int r = 0; r < S.nregions; r++) {
        fz_region *R = &S.region[r];
        if (R->st != R_JUST_LEFT && R->st != R_LEFT_FULL && R->st != R_LEFT_ARENA)
            continue;
        /* A region left by this operation is judged by the frozen stacks
         * alone; one retired before, by the running coroutine's stack as
         * well, which the runtime reads when it tries the region again: a
         * coroutine that pinned it may have been resumed and still hold
         * the pointer. (The runtime may keep a region longer, while the
         * coroutine it recorded as the witness runs; the model then no
         * longer reads it.) */
        int p = pins_of(r, R->st != R_JUST_LEFT);
        if (p == 2 && R->st != R_LEFT_ARENA) {
            R->fresh = R->st == R_JUST_LEFT;
            R->st = R_LEFT_FULL;
        } else if (p >= 1) {
            if (R->st != R_LEFT_ARENA)
                region_kill(r, false);
            R->st = R_LEFT_ARENA;
        } else {
            region_kill(r, true);
            R->st = R_DROPPED;
        }
    }
}
