/* ops_handoff.c -- regions handed between two threads: gb_region_detach,
 * gb_try_region_detach and gb_region_attach, on the fuzzed thread and on
 * a second one, the peer.
 *
 * The peer is a thread of its own that runs one command at a time for the
 * fuzzed thread, which waits for it: which thread runs, and in what order
 * the two detach, attach, allocate and leave, is the input's, and no two
 * run at once, so every run of an input is the same run. The model knows
 * where each region is (fz_region.ctx): on a stack of the fuzzed thread,
 * on the peer's stack (PEER), or in flight (FLIGHT); the fuzzed thread
 * neither allocates into, nor writes, nor captures pointers into a region
 * it does not hold, as the API asks, but the harness still reads all of it
 * back after every operation (the peer is waiting, so nothing races).
 *
 * What it checks: a detach refused exactly when a frozen stack of the
 * fuzzed thread points into the region (gb_try_region_detach names one of
 * the coroutines that do); a region in flight found by gb_region_of on
 * neither thread, one the peer holds found from the peer and not from the
 * fuzzed thread; contents intact across every hop; a region the peer
 * leaves gone at once (the peer has no coroutine to pin it); and, at the
 * end of an input, every counter at zero on both threads.
 */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the peer */

typedef enum peer_cmd {
    P_IDLE,
    P_ATTACH,   /* gb_region_attach(h) */
    P_ALLOC,    /* p = gb_alloc(n), written with the pattern of seed (shadow: the model's copy) */
    P_DETACH,   /* gb_region_detach(h) */
    P_LEAVE,    /* gb_leave(h) */
    P_REGION_OF, /* got = gb_region_of(p) */
    P_CURRENT,  /* got = gb_current(), depth = gb_depth() */
    P_SWEEP,    /* gb_sweep() */
} peer_cmd;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    bool started;
    peer_cmd cmd;
    gb_region *h;
    void *p;
    unsigned char *shadow;
    size_t n, depth;
    uint64_t seed;
    gb_region *got;
} peer = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void peer_do(void)
{
    switch (peer.cmd) {
    case P_ATTACH: gb_region_attach(peer.h); break;
    case P_ALLOC:
        peer.p = gb_alloc(peer.n);
        pattern(peer.p, peer.shadow, peer.n, peer.seed);
        break;
    case P_DETACH: gb_region_detach(peer.h); break;
    case P_LEAVE: gb_leave(peer.h); break;
    case P_REGION_OF: peer.got = gb_region_of(peer.p); break;
    case P_CURRENT:
        peer.got = gb_current();
        peer.depth = gb_depth();
        break;
    case P_SWEEP: gb_sweep(); break;
    case P_IDLE: break;
    }
}

static void *peer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&peer.lock);
    for (;;) {
        while (peer.cmd == P_IDLE)
            pthread_cond_wait(&peer.cond, &peer.lock);
        peer_do();
        peer.cmd = P_IDLE;
        pthread_cond_broadcast(&peer.cond);
    }
    return NULL;
}

/* Runs cmd on the peer and waits for it: the lock orders everything the
 * peer did before what the fuzzed thread does next, and the other way. */
static void peer_run(peer_cmd cmd)
{
    pthread_mutex_lock(&peer.lock);
    if (!peer.started) {
        if (pthread_create(&peer.thread, NULL, peer_main, NULL) != 0)
            fail("cannot start the peer thread");
        peer.started = true;
    }
    peer.cmd = cmd;
    pthread_cond_broadcast(&peer.cond);
    while (peer.cmd != P_IDLE)
        pthread_cond_wait(&peer.cond, &peer.lock);
    pthread_mutex_unlock(&peer.lock);
}

/* ----------------------------------------------------------- the model */

bool held_here(int r)
{
    const fz_region *R = &S.region[r];
    return !(R->st == R_LIVE && (R->ctx == PEER || R->ctx == FLIGHT));
}

static int peer_top = -1;
static size_t peer_depth;

int peer_ctx_top(void)
{
    return peer_top;
}

size_t peer_ctx_depth(void)
{
    return peer_depth;
}

/* A region in flight, chosen by the input, or -1. */
static int pick_flight(void)
{
    int n = 0;
    for (int r = 0; r < S.nregions; r++)
        if (S.region[r].st == R_LIVE && S.region[r].ctx == FLIGHT)
            cand[n++] = r;
    return n ? cand[in_pick((size_t)n)] : -1;
}

/* The peer's stack as the peer sees it. */
static void peer_check_stack(void)
{
    peer_run(P_CURRENT);
    gb_region *want = peer_top >= 0 ? S.region[peer_top].h : NULL;
    if (peer.got != want || peer.depth != peer_depth)
        fail("the peer's gb_current() is %p at depth %zu, expected %p at depth %zu", (void *)peer.got,
             peer.depth, (void *)want, peer_depth);
}

/* The innermost region of the running context goes in flight, unless a
 * frozen stack of this thread points into it.
 *
 * The runtime reads a frozen stack conservatively: a word a frame still
 * holds after its coroutine stopped using it (a pointer the body's last
 * call left behind) pins as a held pointer does. So a region the model
 * finds pinned is always refused, and one it finds free may be refused
 * too while any stack is frozen, by a coroutine the model knows; with no
 * stack frozen, nothing may refuse it. The plain form, which stops the
 * process on a refusal, is used only where none can come. */
static void detach_here(bool try_form)
{
    int r = ctx_top(S.cur);
    if (r < 0)
        return;
    fz_region *R = &S.region[r];
    check_region_full(r);
    bool pinned = pins_of(r, false) != 0;
    bool frozen_some = any_frozen();
    if (pinned || frozen_some || try_form) {
        gb_coro *by = NULL;
        bool ok = gb_try_region_detach(R->h, &by);
        if (ok ? pinned : !frozen_some)
            fail("gb_try_region_detach of region %d returned %s, but %s", r, ok ? "true" : "false",
                 pinned ? "a frozen stack points into it" : "no stack is frozen");
        if (tracing())
            fprintf(stderr, "fuzz_runtime: trace: region %d %s\n", r,
                    ok ? "detached (gb_try_region_detach)" : "not detached: a frozen stack points into it");
        if (!ok) {
            bool known = false;
            for (int i = 0; i < S.ncoros; i++)
                known |= S.coro[i].h == by && S.coro[i].st != C_FREED && S.coro[i].st != C_FINISHED;
            if (!known)
                fail("gb_try_region_detach of region %d names %p as its pinner, no suspended coroutine",
                     r, (void *)by);
            return;
        }
    } else {
        gb_region_detach(R->h);
    }
    ctx_set(S.cur, R->parent, ctx_depth(S.cur) - 1);
    R->ctx = FLIGHT;
    R->parent = -1;
}

/* A region in flight becomes the running context's innermost. */
static void attach_here(void)
{
    if (ctx_depth(S.cur) >= MAX_DEPTH)
        return;
    int r = pick_flight();
    if (r < 0)
        return;
    fz_region *R = &S.region[r];
    gb_region_attach(R->h);
    R->ctx = S.cur;
    R->parent = ctx_top(S.cur);
    ctx_set(S.cur, r, ctx_depth(S.cur) + 1);
    check_region_full(r);
}

static void peer_attach(void)
{
    if (peer_depth >= MAX_DEPTH)
        return;
    int r = pick_flight();
    if (r < 0)
        return;
    fz_region *R = &S.region[r];
    peer.h = R->h;
    peer_run(P_ATTACH);
    R->ctx = PEER;
    R->parent = peer_top;
    peer_top = r;
    peer_depth++;
    check_region_full(r);
}

/* The peer allocates in its innermost region and writes it; under a
 * limit it does not (gb_alloc would stop at the limit). */
static void peer_alloc(void)
{
    if (peer_top < 0 || S.region[peer_top].limit || S.nallocs >= MAX_ALLOCS)
        return;
    size_t n = take_size();
    unsigned char *shadow = malloc(n ? n : 1);
    if (!shadow)
        fail("out of memory for the model");
    peer.n = n;
    peer.seed = in_pay64();
    peer.shadow = shadow;
    peer_run(P_ALLOC);
    add_alloc_written(peer_top, peer.p, n, shadow);
}

static void peer_detach(void)
{
    if (peer_top < 0)
        return;
    int r = peer_top;
    fz_region *R = &S.region[r];
    peer.h = R->h;
    peer_run(P_DETACH);
    peer_top = R->parent;
    peer_depth--;
    R->ctx = FLIGHT;
    R->parent = -1;
}

/* The peer leaves its innermost region: nothing of the peer's pins it, so
 * it is gone at once; what the fuzzed thread's coroutines hold into it is
 * no longer valid (they may hold it only if they took it before it was
 * handed over, which the refusal above allows for a running coroutine). */
static void peer_leave(void)
{
    if (peer_top < 0)
        return;
    int r = peer_top;
    fz_region *R = &S.region[r];
    check_region_full(r);
    peer.h = R->h;
    peer_run(P_LEAVE);
    peer_top = R->parent;
    peer_depth--;
    R->ctx = PEER;
    region_dropped(r);
}

/* gb_region_of from the peer: the regions it holds are found, no other
 * region is. */
static void peer_region_of(void)
{
    for (int i = 0; i < S.nallocs; i++) {
        const fz_alloc *a = &S.alloc[i];
        if (!a->alive)
            continue;
        const fz_region *R = &S.region[a->region];
        gb_region *want = R->st == R_LIVE && R->ctx == PEER ? R->h : NULL;
        peer.p = a->p;
        peer_run(P_REGION_OF);
        if (peer.got != want)
            fail("allocation %p of region %d: gb_region_of from the peer is %p, expected %p", (void *)a->p,
                 a->region, (void *)peer.got, (void *)want);
    }
    peer_check_stack();
}

/* Variants: 0 detach, 1 try_detach, 2 attach here; 3 the peer attaches,
 * 4 allocates, 5 detaches, 6 leaves, 7 answers gb_region_of. */
void op_handoff(unsigned v)
{
    switch (v) {
    case 0: detach_here(false); break;
    case 1: detach_here(true); break;
    case 2: attach_here(); break;
    case 3: peer_attach(); break;
    case 4: peer_alloc(); break;
    case 5: peer_detach(); break;
    case 6: peer_leave(); break;
    default: peer_region_of(); break;
    }
}

/* The end of an input: the peer leaves what it holds, innermost first,
 * and gives its cache back; what is in flight comes home to the thread's
 * own stack, for teardown's leaves. */
void handoff_teardown(void)
{
    while (peer_top >= 0)
        peer_leave();
    if (peer.started)
        peer_run(P_SWEEP);
    for (int r = 0; r < S.nregions; r++) {
        fz_region *R = &S.region[r];
        if (R->st != R_LIVE || R->ctx != FLIGHT)
            continue;
        gb_region_attach(R->h);
        R->ctx = MAIN;
        R->parent = S.main_top;
        S.main_top = r;
        S.main_depth++;
    }
}

/* A new input starts with the peer holding nothing. */
void handoff_reset(void)
{
    peer_top = -1;
    peer_depth = 0;
}
