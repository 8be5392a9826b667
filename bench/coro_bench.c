/* coro_bench.c -- coroutine switches and pin-check cost, measured side by side.
 *
 * Prints three tables and one machine-readable line per figure
 * ("bench <name> <value> <unit>"):
 *   1. a resume+yield round trip against ucontext's swapcontext, in the same
 *      run, and their ratio (the target: 0.03 or less); and against
 *      Boost.Context's fcontext where libboost_context was found at build
 *      time (GB_BENCH_FCONTEXT: its jump_fcontext and make_fcontext have C
 *      linkage, so C declares them itself; the target: 1.2 or less). With
 *      it, the breakdown of the round trip: the runtime's switch alone,
 *      then with the handle check, the pinning bookkeeping (freeze, thaw)
 *      and the region-stack swap added, built from the runtime's own
 *      resume and yield paths (coro_path.h) with the later stages left out
 *      (GB_BENCH_STAGES: not under the sanitizers, whose fiber hooks the
 *      partial paths would skip). Every figure is the median of the rounds,
 *      the rounds interleaving the runtime's stages and the peers; the two
 *      targets are verdicts (verdict.h) on the rounds' ratios, from 9
 *      rounds up to 31 while either is undecided;
 *   2. create+free of a coroutine that runs to its end, against the same
 *      with ucontext (getcontext + makecontext on a malloc'd stack) and
 *      fcontext (make_fcontext on a malloc'd stack);
 *   3. the pin-check work and time of leaving a region, as suspended
 *      coroutines grow from 10 to 10,000 (10 retired regions), and as
 *      retired regions grow from 10 to 10,000 (10 suspended coroutines).
 *      The work is the runtime's own counters: stack words scanned plus
 *      summary probes, per leave.
 * A benchmark, not a test: nothing here fails on a number.
 */
/* ucontext is deprecated: macOS hides it unless _XOPEN_SOURCE is defined,
 * and that in turn hides the BSD names both libcs keep behind their own
 * feature macros. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#define _DARWIN_C_SOURCE
#include "giveback.h"
#include "scenarios.h"
#include "verdict.h"

#ifdef GB_BENCH_STAGES
#include "coro_path.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#ifdef GB_BENCH_FCONTEXT
/* boost/context/detail/fcontext.hpp, as C: the functions are extern "C". */
typedef void *fcontext_t;
typedef struct transfer_t {
    fcontext_t fctx;
    void *data;
} transfer_t;
transfer_t jump_fcontext(fcontext_t const to, void *vp);
fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));
#endif

/* swapcontext is the peer being measured, deprecated or not. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ round trip */

static void spin(void *arg)
{
    (void)arg;
    for (;;)
        gb_coro_yield();
}

static ucontext_t main_uc, coro_uc;

static void uc_spin(void)
{
    for (;;)
        swapcontext(&coro_uc, &main_uc);
}

#ifdef GB_BENCH_FCONTEXT
static void fc_spin(transfer_t t)
{
    for (;;)
        t = jump_fcontext(t.fctx, NULL);
}

static void fc_once(transfer_t t)
{
    jump_fcontext(t.fctx, NULL);
}
#endif

/* Rounds of the round trips: at least ROUNDS_MIN, more while a target is
 * undecided, up to ROUNDS_CAP; a round takes a few milliseconds. */
enum { STACK_BYTES = 256 * 1024, ROUNDS_MIN = 9, ROUNDS_CAP = 31 };

#ifdef GB_BENCH_STAGES
/* The partial round trips. Each stage's coroutine is a real one (made,
 * entered and first yielded through the API, so the runtime's state stays
 * whole), which then yields through the partial path forever; the resume
 * side is the same partial path. The partial functions are out of line,
 * as gb_coro_resume and gb_coro_yield are, so each stage pays the calls
 * the API pays; the bare switch is called directly, as fcontext is. */
enum { STAGE_BARE, STAGE_HANDLE, STAGE_FREEZE, STAGE_RSTACK, NSTAGES };

__attribute__((noinline)) static bool resume_handle(gb_coro *h)
{
    return gb__coro_resume_path(gb__self(), h, NULL, GB__CP_HANDLE);
}
__attribute__((noinline)) static void yield_handle(void)
{
    gb__coro_yield_path(gb__self(), NULL, GB__CP_HANDLE);
}
__attribute__((noinline)) static bool resume_freeze(gb_coro *h)
{
    return gb__coro_resume_path(gb__self(), h, NULL, GB__CP_HANDLE | GB__CP_FREEZE);
}
__attribute__((noinline)) static void yield_freeze(void)
{
    gb__coro_yield_path(gb__self(), NULL, GB__CP_HANDLE | GB__CP_FREEZE);
}
__attribute__((noinline)) static bool resume_rstack(gb_coro *h)
{
    return gb__coro_resume_path(gb__self(), h, NULL, GB__CP_HANDLE | GB__CP_FREEZE | GB__CP_RSTACK);
}
__attribute__((noinline)) static void yield_rstack(void)
{
    gb__coro_yield_path(gb__self(), NULL, GB__CP_HANDLE | GB__CP_FREEZE | GB__CP_RSTACK);
}

static void stage_spin(void *arg)
{
    int stage = (int)(intptr_t)arg;
    gb__thread *t = gb__self();
    gb_coro *c = t->cur_coro;
    gb_coro_yield();
    switch (stage) {
    case STAGE_BARE:
        for (;;)
            gb__switch(&c->fz.sp, t->main_sp, 1);
    case STAGE_HANDLE:
        for (;;)
            yield_handle();
    case STAGE_FREEZE:
        for (;;)
            yield_freeze();
    default:
        for (;;)
            yield_rstack();
    }
}

/* n round trips of stage s on coroutine h; ns per trip. */
static double stage_trips(int s, gb_coro *h, long n)
{
    gb__thread *t = gb__self();
    gb_coro *c = gb__coro_of(t, "coro_bench", h);
    double t0 = now();
    switch (s) {
    case STAGE_BARE:
        for (long i = 0; i < n; i++)
            gb__switch(&t->main_sp, c->fz.sp, 0);
        break;
    case STAGE_HANDLE:
        for (long i = 0; i < n; i++)
            resume_handle(h);
        break;
    case STAGE_FREEZE:
        for (long i = 0; i < n; i++)
            resume_freeze(h);
        break;
    default:
        for (long i = 0; i < n; i++)
            resume_rstack(h);
        break;
    }
    return (now() - t0) * 1e9 / (double)n;
}
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* n round trips of each kind; ns per trip. */
static double gb_trips(gb_coro *c, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        gb_coro_resume(c);
    return (now() - t0) * 1e9 / (double)n;
}

static double uc_trips(long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        swapcontext(&main_uc, &coro_uc);
    return (now() - t0) * 1e9 / (double)n;
}

#ifdef GB_BENCH_FCONTEXT
static transfer_t ft;

static double fc_trips(long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        ft = jump_fcontext(ft.fctx, NULL);
    return (now() - t0) * 1e9 / (double)n;
}
#endif

static void round_trips(long n)
{
    long per = n / ROUNDS_MIN > 0 ? n / ROUNDS_MIN : 1;
    /* swapcontext makes a system call per switch: a hundredth of the
     * trips gives it as many microseconds as the others get. */
    long uc_per = per / 100 > 0 ? per / 100 : 1;
    double gb[ROUNDS_CAP], uc[ROUNDS_CAP];
    gb_coro *c = gb_coro_new(spin, NULL, 0);
    gb_coro_resume(c);

    static char stack[STACK_BYTES];
    getcontext(&coro_uc);
    coro_uc.uc_stack.ss_sp = stack;
    coro_uc.uc_stack.ss_size = sizeof stack;
    coro_uc.uc_link = NULL;
    makecontext(&coro_uc, uc_spin, 0);
    swapcontext(&main_uc, &coro_uc);
    /* The targets, each judged from the rounds' ratios (verdict.h). */
    verdict vs, vf;
    verdict_init(&vs, "coro_vs_swapcontext", VERDICT_AT_MOST, 0.03, ROUNDS_MIN, ROUNDS_CAP);
    verdict_init(&vf, "coro_vs_fcontext", VERDICT_AT_MOST, 1.2, ROUNDS_MIN, ROUNDS_CAP);
#ifdef GB_BENCH_FCONTEXT
    double fc[ROUNDS_CAP];
    static char fstack[STACK_BYTES];
    ft = jump_fcontext(make_fcontext(fstack + sizeof fstack, sizeof fstack, fc_spin), NULL);
    bool fc_wants = true;
#else
    bool fc_wants = false;
#endif
#ifdef GB_BENCH_STAGES
    double st[NSTAGES][ROUNDS_CAP];
    gb_coro *sc[NSTAGES];
    for (int s = 0; s < NSTAGES; s++) {
        sc[s] = gb_coro_new(stage_spin, (void *)(intptr_t)s, 0);
        gb_coro_resume(sc[s]);
    }
#endif

    /* Each round times the runtime between its two peers, so that each
     * pair is measured back to back, and reverses the order every other
     * round (fcontext, giveback, swapcontext; then swapcontext, giveback,
     * fcontext), so that a drift of the machine within a round falls on
     * each side of a pair alike over the rounds. Rounds go on while
     * either target wants them. */
    int rounds = 0;
    while (rounds < ROUNDS_CAP && (verdict_wants(&vs) || (fc_wants && verdict_wants(&vf)))) {
        int r = rounds++;
#ifdef GB_BENCH_STAGES
        for (int s = 0; s < NSTAGES; s++)
            st[s][r] = stage_trips(s, sc[s], per);
#endif
        if (verdict_a_first(r)) {
#ifdef GB_BENCH_FCONTEXT
            fc[r] = fc_trips(per);
#endif
            gb[r] = gb_trips(c, per);
            uc[r] = uc_trips(uc_per);
        } else {
            uc[r] = uc_trips(uc_per);
            gb[r] = gb_trips(c, per);
#ifdef GB_BENCH_FCONTEXT
            fc[r] = fc_trips(per);
#endif
        }
        verdict_offer(&vs, gb[r] / uc[r]);
#ifdef GB_BENCH_FCONTEXT
        verdict_offer(&vf, gb[r] / fc[r]);
#endif
    }
    gb_coro_free(c);

    double gb_ns = median(gb, rounds), uc_ns = median(uc, rounds);
#ifdef GB_BENCH_FCONTEXT
    double fc_ns = median(fc, rounds);
#endif
    printf("resume+yield round trip (median of %d rounds of %ld trips; swapcontext %ld)\n", rounds, per,
           uc_per);
#ifdef GB_BENCH_STAGES
    static const char *const stage_name[NSTAGES] = {
        "switch alone (gb__switch)", "+ handle check, status", "+ freeze/thaw (pinning)",
        "+ region-stack swap"};
    static const char *const stage_bench[NSTAGES] = {
        "switch_bare_roundtrip_ns", "switch_handle_roundtrip_ns", "switch_freeze_roundtrip_ns",
        "switch_rstack_roundtrip_ns"};
    double st_ns[NSTAGES];
    for (int s = 0; s < NSTAGES; s++) {
        st_ns[s] = median(st[s], rounds);
        gb_coro_free(sc[s]);
    }
    printf("  %-32s %10s %10s\n", "", "ns", "/ fcontext");
    for (int s = 0; s < NSTAGES; s++)
#ifdef GB_BENCH_FCONTEXT
        printf("  %-32s %10.1f %10.3f\n", stage_name[s], st_ns[s], st_ns[s] / fc_ns);
#else
        printf("  %-32s %10.1f %10s\n", stage_name[s], st_ns[s], "-");
#endif
#else
    printf("  (the breakdown by stage is not built: a sanitizer build)\n");
#endif
    printf("  %-32s %10.1f\n", "giveback (gb_coro_resume+yield)", gb_ns);
    printf("  %-32s %10.1f\n", "swapcontext", uc_ns);
#ifdef GB_BENCH_FCONTEXT
    printf("  %-32s %10.1f\n", "Boost.Context fcontext", fc_ns);
#endif
    printf("  %-32s %10.3f (target <= 0.03)\n", "giveback / swapcontext", gb_ns / uc_ns);
#ifdef GB_BENCH_FCONTEXT
    printf("  %-32s %10.3f (target <= 1.2)\n", "giveback / fcontext", gb_ns / fc_ns);
#else
    printf("  %-32s %10s (libboost_context not found at build time)\n", "giveback / fcontext", "-");
#endif
    printf("\n");
    const verdict *judged[] = {&vs, &vf};
    verdict_report(judged, 2);
#ifdef GB_BENCH_STAGES
    for (int s = 0; s < NSTAGES; s++)
        printf("bench %s %.2f ns\n", stage_bench[s], st_ns[s]);
#endif
    printf("bench coro_roundtrip_ns %.2f ns\n", gb_ns);
    printf("bench swapcontext_roundtrip_ns %.2f ns\n", uc_ns);
    printf("bench coro_vs_swapcontext_ratio %.4f ratio\n", gb_ns / uc_ns);
#ifdef GB_BENCH_FCONTEXT
    printf("bench fcontext_roundtrip_ns %.2f ns\n", fc_ns);
    printf("bench coro_vs_fcontext_ratio %.4f ratio\n", gb_ns / fc_ns);
#endif
}

/* ----------------------------------------------------------- create+free */

static void nothing(void *arg)
{
    (void)arg;
}

static void uc_nothing(void)
{
}

static void *must_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        fputs("coro_bench: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

/* A coroutine made, run to its end and freed, n times; each peer gets a
 * stack of the same size. giveback keeps freed stacks in a small pool,
 * emptied (so a reused stack faults its pages in again). The others run
 * twice: on one stack reused as is (the cheapest pool there is) and on a
 * stack from malloc each time (minicoro's way); in this program build
 * glibc's threshold is fixed at 64 KiB, so a 256 KiB stack is glibc's own
 * mapping, mapped and unmapped each time. */
static void create_free(long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++) {
        gb_coro *c = gb_coro_new(nothing, NULL, 0);
        gb_coro_resume(c);
        gb_coro_free(c);
    }
    double gb_ns = (now() - t0) * 1e9 / (double)n;

    t0 = now();
    for (long i = 0; i < n; i++) {
        ucontext_t uc;
        char *stk = must_malloc(STACK_BYTES);
        getcontext(&uc);
        uc.uc_stack.ss_sp = stk;
        uc.uc_stack.ss_size = STACK_BYTES;
        uc.uc_link = &main_uc;
        makecontext(&uc, uc_nothing, 0);
        swapcontext(&main_uc, &uc);
        free(stk);
    }
    double uc_ns = (now() - t0) * 1e9 / (double)n;

    static char reused[STACK_BYTES];
    t0 = now();
    /* volatile: getcontext returns twice as far as the compiler knows. */
    for (volatile long i = 0; i < n; i++) {
        ucontext_t uc;
        getcontext(&uc);
        uc.uc_stack.ss_sp = reused;
        uc.uc_stack.ss_size = STACK_BYTES;
        uc.uc_link = &main_uc;
        makecontext(&uc, uc_nothing, 0);
        swapcontext(&main_uc, &uc);
    }
    double uc_reused_ns = (now() - t0) * 1e9 / (double)n;

    printf("\ncreate, run to the end and free a coroutine (%ld times, %d KiB stacks)\n", n, STACK_BYTES / 1024);
    printf("  %-32s %10.1f ns\n", "giveback (pooled, emptied stack)", gb_ns);
    printf("  %-32s %10.1f ns\n", "ucontext, one reused stack", uc_reused_ns);
    printf("  %-32s %10.1f ns\n", "ucontext + malloc'd stack", uc_ns);
#ifdef GB_BENCH_FCONTEXT
    t0 = now();
    for (long i = 0; i < n; i++) {
        char *stk = must_malloc(STACK_BYTES);
        jump_fcontext(make_fcontext(stk + STACK_BYTES, STACK_BYTES, fc_once), NULL);
        free(stk);
    }
    double fc_ns = (now() - t0) * 1e9 / (double)n;
    t0 = now();
    for (long i = 0; i < n; i++)
        jump_fcontext(make_fcontext(reused + STACK_BYTES, STACK_BYTES, fc_once), NULL);
    double fc_reused_ns = (now() - t0) * 1e9 / (double)n;
    printf("  %-32s %10.1f ns\n", "fcontext, one reused stack", fc_reused_ns);
    printf("  %-32s %10.1f ns\n", "fcontext + malloc'd stack", fc_ns);
#endif
    printf("  %-32s %10.3f\n", "giveback / ucontext reused", gb_ns / uc_reused_ns);
    printf("  %-32s %10.3f\n", "giveback / ucontext malloc'd", gb_ns / uc_ns);
#ifdef GB_BENCH_FCONTEXT
    printf("  %-32s %10.3f\n", "giveback / fcontext reused", gb_ns / fc_reused_ns);
    printf("  %-32s %10.3f\n", "giveback / fcontext malloc'd", gb_ns / fc_ns);
#endif
    printf("bench coro_create_free_ns %.2f ns\n", gb_ns);
    printf("bench ucontext_reused_create_free_ns %.2f ns\n", uc_reused_ns);
    printf("bench ucontext_create_free_ns %.2f ns\n", uc_ns);
    printf("bench coro_create_vs_ucontext_reused_ratio %.4f ratio\n", gb_ns / uc_reused_ns);
    printf("bench coro_create_vs_ucontext_ratio %.4f ratio\n", gb_ns / uc_ns);
#ifdef GB_BENCH_FCONTEXT
    printf("bench fcontext_reused_create_free_ns %.2f ns\n", fc_reused_ns);
    printf("bench fcontext_create_free_ns %.2f ns\n", fc_ns);
    printf("bench coro_create_vs_fcontext_reused_ratio %.4f ratio\n", gb_ns / fc_reused_ns);
    printf("bench coro_create_vs_fcontext_ratio %.4f ratio\n", gb_ns / fc_ns);
#endif
}

/* ------------------------------------------------------------ leave cost */

/* A coroutine that keeps every pointer handed to it on its stack. */
typedef struct holder {
    void *volatile in;
    int n;
} holder;

static void hold_all(void *arg)
{
    holder *h = arg;
    void *volatile kept[10000];
    (void)kept;
    for (;;) {
        kept[h->n++] = h->in;
        gb_coro_yield();
    }
}

/* Leaves `leaves` fresh regions with `suspended` idle coroutines and
 * `retired` retired regions (pinned by one holder) around; prints a row. */
static void leave_cost(int suspended, int retired, int leaves)
{
    gb_coro **idle = gbs_idle_coroutines(suspended);
    holder h = {0};
    gb_coro *hc = gb_coro_new(hold_all, &h, 0);
    for (int i = 0; i < retired; i++) {
        gb_region *r = gb_enter();
        h.in = gb_alloc(64);
        gb_coro_resume(hc);
        gb_leave(r);
    }
    h.in = NULL;
    /* One leave to settle: the holder's witnessed regions are tried once
     * after its last run. */
    gb_leave(gb_enter());
    gb_stats before = gbs_stats();
    double t0 = now();
    for (int i = 0; i < leaves; i++) {
        gb_region *r = gb_enter();
        gb_alloc(64);
        gb_leave(r);
    }
    double ns = (now() - t0) * 1e9 / leaves;
    gb_stats after = gbs_stats();
    double words = (double)(after.pin_words_scanned - before.pin_words_scanned) / leaves;
    double probes = (double)(after.pin_probes - before.pin_probes) / leaves;
    double tries = (double)(after.pin_tries - before.pin_tries) / leaves;
    printf("  %10d %10d %14.1f %10.1f %10.2f %12.0f\n", suspended, (int)after.regions_retired, words,
           probes, tries, ns);
    printf("bench leave_work_s%d_r%d %.1f words+probes\n", suspended, retired, words + probes);
    printf("bench leave_ns_s%d_r%d %.0f ns\n", suspended, retired, ns);
    gb_coro_free(hc);
    gbs_free_coroutines(idle, suspended);
    gb_sweep();
}

int main(int argc, char **argv)
{
    long trips = argc > 1 ? atol(argv[1]) : 2000000;
    round_trips(trips);
    create_free(trips / 100);
    printf("\nleaving an unpinned region (pin check per leave)\n");
    printf("  %10s %10s %14s %10s %10s %12s\n", "suspended", "retired", "words scanned", "probes",
           "tries", "ns/leave");
    static const int sizes[] = {10, 100, 1000, 10000};
    for (int i = 0; i < 4; i++)
        leave_cost(sizes[i], 10, 1000);
    for (int i = 1; i < 4; i++)
        leave_cost(10, sizes[i], 1000);
    return 0;
}
