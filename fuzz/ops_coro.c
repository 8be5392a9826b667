/* ops_coro.c -- the operations on coroutines and pinning: new, resume,
 * yield, free, hold and drop a pointer, sweep and safepoint.
 *
 * Pinning is the promise most worth fuzzing: a region left while a frozen
 * coroutine's stack points into it must stay readable until nothing points
 * into it, and must go back once nothing does. Which coroutine runs next,
 * when it yields, what it holds and when it lets go all come from the
 * input, so the interleavings are the fuzzer's, not a test author's. The
 * pointers a coroutine holds live in a volatile array in the frame of its
 * body, which is compiled without ASan instrumentation so that the array
 * is on the real stack (never on ASan's fake stack, which the runtime's
 * conservative scan cannot see); the operations themselves run in run()
 * (target.c), instrumented, and a body returns when run() reads the
 * finish operation or the input ends. Every operation here that may free
 * a retired region is a retry point of the model (model.c), followed by
 * reading in full what it found newly pinned.
 */
#include "harness.h"
#include "sanitizers.h"

#include <string.h>

/* A coroutine's body: the array of pointers it holds lives in this frame,
 * which ASan does not instrument, so it is on the real stack that the
 * runtime scans; the operations themselves run in run(), instrumented. */
GB__NO_ASAN static void coro_body(void *arg)
{
    fz_coro *c = arg;
    volatile uintptr_t held[HOLD];
    for (int k = 0; k < HOLD; k++)
        held[k] = 0;
    c->held = held;
    run();
    c->held = NULL;
}

void op_coro_new(unsigned v)
{
    int live = 0;
    for (int i = 0; i < S.ncoros; i++)
        live += S.coro[i].st != C_FREED;
    if (live >= MAX_LIVE_COROS || S.ncoros >= MAX_COROS)
        return;
    /* The default size comes from the pool; the others are mapped (or
     * malloc'd past the budget) each time, and 1 rounds up to the least. */
    static const size_t sizes[8] = {0, 0, 0, 0, 64 * 1024, 64 * 1024, 1, 100 * 1000};
    fz_coro *c = &S.coro[S.ncoros];
    memset(c, 0, sizeof *c);
    c->idx = S.ncoros++;
    c->st = C_SUSPENDED;
    c->top = -1;
    c->h = gb_coro_new(coro_body, c, sizes[v]);
    if (!c->h)
        fail("gb_coro_new returned NULL");
}

void op_resume(void)
{
    int n = 0;
    for (int i = 0; i < S.ncoros; i++)
        if (S.coro[i].st == C_SUSPENDED)
            cand[n++] = i;
    if (!n)
        return;
    fz_coro *c = &S.coro[cand[in_pick((size_t)n)]];
    int prev = S.cur;
    c->st = C_RUNNING;
    c->resumer = prev;
    S.cur = c->idx;
    bool yielded = gb_coro_resume(c->h);
    /* Back, the runtime has tried retired regions before the resumer
     * thaws, with c and the resumer both frozen: judge them so too, with
     * the model's running context set back only afterwards. */
    if (yielded) {
        if (c->st != C_SUSPENDED)
            fail("coroutine %d: gb_coro_resume returned true but it did not yield", c->idx);
        retry_point();
        S.cur = prev;
        check_pinned_full();
        return;
    }
    if (c->st != C_RUNNING || !c->finish)
        fail("coroutine %d: gb_coro_resume returned false but its body did not return", c->idx);
    c->st = C_FINISHED;
    left_all(c->idx);
    retry_point();
    S.cur = prev;
    check_pinned_full();
}

void coro_free(fz_coro *c)
{
    gb_coro_free(c->h);
    c->st = C_FREED;
    c->held = NULL;
    left_all(c->idx);
    retry_point();
    check_pinned_full();
}

void op_coro_free(void)
{
    int n = 0;
    for (int i = 0; i < S.ncoros; i++)
        if (S.coro[i].st == C_SUSPENDED || S.coro[i].st == C_FINISHED)
            cand[n++] = i;
    if (n)
        coro_free(&S.coro[cand[in_pick((size_t)n)]]);
}

void op_yield(void)
{
    fz_coro *c = &S.coro[S.cur];
    c->st = C_SUSPENDED;
    gb_coro_yield();
    /* Resumed: op_resume has made it the running context again. */
    if (S.cur != c->idx || c->st != C_RUNNING)
        fail("coroutine %d resumed, but the model runs %d", c->idx, S.cur);
    check_held(c);
}

void op_capture(unsigned v)
{
    fz_coro *c = &S.coro[S.cur];
    int k = (int)in_pick(HOLD);
    fz_slot s = {0};
    int n = 0;
    if (v < 4) {
        for (int i = 0; i < S.nallocs; i++)
            if (S.alloc[i].alive && held_here(S.alloc[i].region))
                cand[n++] = i;
        if (!n)
            return;
        fz_alloc *a = &S.alloc[cand[in_pick((size_t)n)]];
        s.kind = S_ALLOC;
        s.target = (int)(a - S.alloc);
        s.off = a->n ? in_ch16() % a->n : 0;
        s.value = (uintptr_t)(a->p + s.off);
    } else if (v < 6) {
        int t = pick_container();
        if (t < 0 || !held_here(t < MAX_VECS ? S.vec[t].region : S.map[t - MAX_VECS].region))
            return;
        s.kind = t < MAX_VECS ? S_VEC : S_MAP;
        s.target = t < MAX_VECS ? t : t - MAX_VECS;
        s.value = t < MAX_VECS ? (uintptr_t)S.vec[t].h : (uintptr_t)S.map[s.target].h;
    } else {
        for (int i = 0; i < S.nvecs; i++)
            if (S.vec[i].struct_ok && S.vec[i].len && held_here(S.vec[i].region))
                cand[n++] = i;
        if (!n)
            return;
        fz_vec *m = &S.vec[cand[in_pick((size_t)n)]];
        s.kind = m->arena ? S_ELEM_ARENA : S_ELEM_REGION;
        s.target = (int)(m - S.vec);
        s.off = in_pick(m->len);
        s.epoch = m->epoch;
        s.value = (uintptr_t)gb_vec_at(m->h, s.off);
    }
    c->held[k] = s.value;
    c->slot[k] = s;
}

void op_drop(void)
{
    fz_coro *c = &S.coro[S.cur];
    int k = (int)in_pick(HOLD);
    c->held[k] = 0;
    memset(&c->slot[k], 0, sizeof c->slot[k]);
}

/* ---------------------------------------------------------- retry points */

void op_sweep(void)
{
    gb_sweep();
    retry_point();
    check_pinned_full();
    /* With no coroutine frozen or running, nothing can pin anything: a
     * sweep must have freed every retired region. */
    if (S.cur == MAIN) {
        bool any = false;
        for (int i = 0; i < S.ncoros; i++)
            any |= S.coro[i].st == C_SUSPENDED;
        gb_stats st = stats();
        if (!any && (st.regions_retired || st.bytes_retired))
            fail("a sweep with no suspended coroutine left %zu regions (%zu bytes) retired",
                 st.regions_retired, st.bytes_retired);
        if (!any)
            check_left_freed("after a sweep with no coroutine suspended");
    }
}

void op_safepoint(unsigned v)
{
    for (unsigned i = 0; i <= v; i++)
        gb_safepoint();
    retry_point();
    check_pinned_full();
}
