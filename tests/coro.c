/* coro.c -- coroutines and pinning. */
#include "common.h"
#include "internal.h"
#include "coro_path.h"
#include "scenarios.h"

#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static void check_all_given_back(void)
{
    gb_sweep();
    gbt_check_all_given_back();
}

static void count_to_three(void *arg)
{
    int *n = arg;
    for (int i = 0; i < 3; i++) {
        (*n)++;
        gb_coro_yield();
    }
}

GB_TEST(resume_yield_finish)
{
    int n = 0;
    gb_coro *c = gb_coro_new(count_to_three, &n, 0);
    CHECK_EQ(gb_coro_status_of(c), GB_CORO_SUSPENDED);
    CHECK(gb_coro_current() == NULL);
    CHECK(gb_coro_resume(c));
    CHECK_EQ(n, 1);
    CHECK(gb_coro_resume(c));
    CHECK(gb_coro_resume(c));
    CHECK_EQ(n, 3);
    CHECK(!gb_coro_resume(c)); /* returns from the loop: finished */
    CHECK_EQ(gb_coro_status_of(c), GB_CORO_FINISHED);
    gb_coro_free(c);
    check_all_given_back();
}

static void own_region_stack(void *arg)
{
    gb_region **seen = arg;
    CHECK_EQ(gb_depth(), 0); /* the thread's regions are not on this stack */
    CHECK(gb_current() == NULL);
    gb_region *r = gb_enter();
    seen[0] = gb_current();
    memset(gb_alloc(100000), 1, 100000);
    gb_coro_yield();
    CHECK(gb_current() == r);
    gb_enter(); /* left for it when the coroutine finishes */
}

GB_TEST(each_coroutine_has_its_own_region_stack)
{
    gb_region *mine = gb_enter();
    gb_region *seen[1];
    gb_coro *c = gb_coro_new(own_region_stack, seen, 0);
    gb_coro_resume(c);
    CHECK(gb_current() == mine);
    CHECK_EQ(gb_depth(), 1);
    CHECK(seen[0] != mine);
    CHECK_EQ(gbt_stats().regions_live, 2);
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(gbt_stats().regions_live, 1);
    gb_coro_free(c);
    gb_leave(mine);
    check_all_given_back();
}

/* Holds a pointer into a region that is left while it is suspended, then
 * reads it after it is resumed. */
static void hold_and_read(void *arg)
{
    unsigned char *volatile p = arg;
    gb_coro_yield();
    for (size_t i = 0; i < 200000; i++)
        CHECK_EQ(p[i], (unsigned char)(i * 7));
}

GB_TEST(a_pinned_region_is_kept_and_read_back_intact)
{
    gb_region *r = gb_enter();
    unsigned char *buf = gb_alloc(200000);
    for (size_t i = 0; i < 200000; i++)
        buf[i] = (unsigned char)(i * 7);
    gb_coro *c = gb_coro_new(hold_and_read, buf, 0);
    gb_coro_resume(c);
    buf = NULL;
    gb_leave(r);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_retired, 1);
    CHECK(s.bytes_retired >= 200000);
    /* Other regions come and go meanwhile and must not reuse its memory. */
    gbs_regions_come_and_go(20, 300000, 300000, 0xee);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    CHECK(!gb_coro_resume(c)); /* reads and checks every byte */
    /* It finished: nothing pins the region, and it went at once. */
    CHECK_EQ(gbt_stats().regions_retired, 0);
    gb_coro_free(c);
    check_all_given_back();
}

GB_TEST(freeing_the_pinning_coroutine_frees_the_region)
{
    gb_region *r = gb_enter();
    gb_coro *c = gb_coro_new(gbs_hold_forever, gb_alloc(5000), 0);
    gb_coro_resume(c);
    gb_leave(r);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    gb_coro_free(c);
    CHECK_EQ(gbt_stats().regions_retired, 0);
    check_all_given_back();
}

GB_TEST(an_unpinned_region_is_freed_at_once)
{
    gb_coro *c = gb_coro_new(gbs_hold_forever, NULL, 0);
    gb_coro_resume(c);
    gb_region *r = gb_enter();
    memset(gb_alloc(1 << 20), 3, 1 << 20);
    gb_leave(r);
    CHECK_EQ(gbt_stats().regions_retired, 0);
    CHECK_EQ(gbt_stats().retirements, 0);
    gb_coro_free(c);
    check_all_given_back();
}

/* A coroutine that runs is no pinner, though it stays on the frozen list
 * until the list is next read (freezing and thawing are marks, pin.h): a
 * region it enters and leaves itself goes at once, while its stack as it
 * was when it last yielded, if it were asked, would now hold the pointer
 * its live frame keeps. */
static void enter_and_leave_after_a_yield(void *arg)
{
    (void)arg;
    gb_coro_yield();
    gb_region *r = gb_enter();
    void *volatile p = gb_alloc(4096);
    memset(p, 1, 4096);
    gb_leave(r);
    CHECK_EQ(gbt_stats().retirements, 0);
}

GB_TEST(a_running_coroutine_still_on_the_frozen_list_pins_nothing)
{
    gb_coro *c = gb_coro_new(enter_and_leave_after_a_yield, NULL, 0);
    CHECK(gb_coro_resume(c));
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(gbt_stats().regions_retired, 0);
    CHECK_EQ(gbt_stats().retirements, 0);
    gb_coro_free(c);
    check_all_given_back();
}

/* The pointer lives only in a callee-saved register when the coroutine
 * yields: the switch pushes that register on the coroutine's stack, below
 * no frame of its own, and the scan must include it. The value arrives
 * encoded so no frame holds the plain pointer. */
#define KEY ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
#if defined(__x86_64__)
#define SAVED_REG "r12"
#elif defined(__aarch64__)
#define SAVED_REG "x19"
#endif

static void hold_in_register(void *arg)
{
    uintptr_t enc = *(volatile uintptr_t *)arg;
    register uintptr_t p __asm__(SAVED_REG) = enc ^ KEY;
    __asm__ volatile("" : "+r"(p));
    gb_coro_yield();
    __asm__ volatile("" : "+r"(p));
    CHECK_EQ(*(unsigned char *)p, 0x77);
}

GB_TEST(a_pointer_in_a_saved_register_alone_pins)
{
    gb_region *r = gb_enter();
    unsigned char *buf = gb_alloc(64);
    buf[0] = 0x77;
    uintptr_t enc = (uintptr_t)buf ^ KEY;
    buf = NULL;
    gb_coro *c = gb_coro_new(hold_in_register, &enc, 0);
    gb_coro_resume(c);
    gb_leave(r);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(gbt_stats().regions_retired, 0);
    gb_coro_free(c);
    check_all_given_back();
}

/* The witness runs and yields again: the region it pinned needs a try,
 * and gets it at that yield, while the resumer is still frozen (a yield
 * does its resumer's rare work on the resumer's stack, coro_path.h), not
 * at some later leave or sweep. The try is what is checked: whether it
 * frees the region depends on whether a copy of the pointer is left in a
 * dead slot of the stack, which the compiler decides (under TSan one is). */
static void hold_in_register_then_let_go(void *arg)
{
    uintptr_t enc = *(volatile uintptr_t *)arg;
    register uintptr_t p __asm__(SAVED_REG) = enc ^ KEY;
    __asm__ volatile("" : "+r"(p));
    gb_coro_yield();
    __asm__ volatile("" : "+r"(p));
    CHECK_EQ(*(unsigned char *)p, 0x77);
    p = 0;
    __asm__ volatile("" : "+r"(p));
    gb_coro_yield();
    __asm__ volatile("" : "+r"(p));
}

GB_TEST(a_region_its_witness_pinned_is_tried_when_the_witness_yields)
{
    gb_region *r = gb_enter();
    unsigned char *buf = gb_alloc(64);
    buf[0] = 0x77;
    uintptr_t enc = (uintptr_t)buf ^ KEY;
    buf = NULL;
    gb_coro *c = gb_coro_new(hold_in_register_then_let_go, &enc, 0);
    CHECK(gb_coro_resume(c));
    gb_leave(r);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    uint64_t tries = gbt_stats().pin_tries, cold = gb__coro_cold;
    CHECK(gb_coro_resume(c)); /* lets go, yields: the region is tried */
    CHECK(gbt_stats().pin_tries > tries);
    /* A freeze that hands a region over is the full path's, out of line. */
    CHECK(gb__coro_cold > cold);
    /* Finished: its stack is dead, and the region goes. */
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(gbt_stats().regions_retired, 0);
    gb_coro_free(c);
    check_all_given_back();
}

/* The common case of a round trip never leaves the fast path
 * (coro_path.h): this thread's count of switches that took the full path
 * out of line stays where it was over a thousand round trips, from the
 * thread's own stack and from a coroutine that resumes another, whose
 * freeze moves it to the head of the frozen list every time. Under ASan
 * every yield takes the full path, for its fiber hook, and nothing else
 * does. */
static void yield_n(void *arg)
{
    for (int i = 0; i < *(int *)arg; i++)
        gb_coro_yield();
}

typedef struct nested_trips {
    gb_coro *inner;
    int n;
    uint64_t cold;
    bool frozen_while_running;
} nested_trips;

static void resume_inner_n(void *arg)
{
    nested_trips *x = arg;
    gb__frozen *me = &gb__self()->cur_coro->fz;
    CHECK(gb_coro_resume(x->inner));
    uint64_t cold = gb__coro_cold;
    for (int i = 1; i < x->n; i++) {
        CHECK(gb_coro_resume(x->inner));
        /* Back from the inner one's yield: running, so thawed. */
        x->frozen_while_running |= gb__pin_is_frozen(me);
    }
    x->cold = gb__coro_cold - cold;
}

GB_TEST(round_trips_in_the_common_case_stay_on_the_fast_path)
{
    int n = 1000;
    gb_coro *c = gb_coro_new(yield_n, &n, 0);
    CHECK(gb_coro_resume(c));
    uint64_t cold = gb__coro_cold;
    for (int i = 1; i < n; i++)
        CHECK(gb_coro_resume(c));
    uint64_t yields_cold = GB__CP_ASAN ? (uint64_t)(n - 1) : 0;
    CHECK_EQ(gb__coro_cold - cold, yields_cold);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);

    nested_trips x = {.inner = gb_coro_new(yield_n, &n, 0), .n = n};
    gb_coro *outer = gb_coro_new(resume_inner_n, &x, 0);
    CHECK(!gb_coro_resume(outer));
    CHECK_EQ(x.cold, yields_cold);
    CHECK(!x.frozen_while_running);
    gb_coro_free(outer);
    CHECK(!gb_coro_resume(x.inner));
    gb_coro_free(x.inner);
    check_all_given_back();
}

/* A coroutine that resumed another is frozen too: leaving a region it
 * points into from the inner one retires the region. */
static void inner_leaves(void *arg)
{
    gb_region *r = gb_enter();
    *(void **)arg = gb_alloc(4096);
    gb_coro_yield();
    gb_leave(r); /* the outer coroutine points into r */
}

static void outer_holds(void *arg)
{
    void *volatile p = NULL;
    gb_coro *inner = gb_coro_new(inner_leaves, (void *)&p, 0);
    gb_coro_resume(inner);
    CHECK(p != NULL);
    gb_coro_resume(inner); /* inner leaves r while we wait on it */
    *(int *)arg = (int)gbt_stats().regions_retired;
    gb_coro_free(inner);
    gb_coro_yield();
}

GB_TEST(a_coroutine_waiting_on_another_pins_too)
{
    int retired = -1;
    gb_coro *outer = gb_coro_new(outer_holds, &retired, 0);
    gb_coro_resume(outer);
    CHECK_EQ(retired, 1);
    gb_coro_free(outer);
    check_all_given_back();
}

/* A resume whose resumer hands a region over as it freezes is the full
 * path's, out of line: the one resumed sees the count of this thread's
 * switches that left the fast path one higher than just before. */
typedef struct cold_seen {
    uint64_t before, at_start;
} cold_seen;

static void note_cold(void *arg)
{
    ((cold_seen *)arg)->at_start = gb__coro_cold;
    gb_coro_yield();
}

static void pin_then_resume(void *arg)
{
    cold_seen *seen = arg;
    void *volatile p = NULL;
    gb_coro *inner = gb_coro_new(inner_leaves, (void *)&p, 0);
    gb_coro_resume(inner);
    gb_coro_resume(inner); /* inner leaves r while this one points into it */
    CHECK_EQ(gbt_stats().regions_retired, 1);
    gb_coro *next = gb_coro_new(note_cold, seen, 0);
    seen->before = gb__coro_cold;
    CHECK(gb_coro_resume(next));
    gb_coro_free(next);
    gb_coro_free(inner);
    p = NULL;
}

GB_TEST(a_resume_whose_resumer_hands_a_region_over_takes_the_full_path)
{
    cold_seen seen = {0};
    gb_coro *outer = gb_coro_new(pin_then_resume, &seen, 0);
    CHECK(!gb_coro_resume(outer));
    CHECK_EQ(seen.at_start - seen.before, 1);
    gb_coro_free(outer);
    check_all_given_back();
}

/* The article's shape: an Enumerator per step, each a coroutine stepped
 * once and dropped, thousands of them, under GB_STRESS=50; suspended ones
 * are reclaimed once 1024 are live. Memory must stay bounded. */
GB_TEST(thousands_of_dropped_coroutines_under_stress_stay_bounded)
{
    gb_options o;
    gb_options_init(&o);
    o.stress = 50;
    gb_init(&o);
    /* Under TSan every switch and access costs tens of times more: 5,000
     * steps still cycle the 1,024 live coroutines five times over, which is
     * what the bound is about. */
    enum { LIVE_MAX = 1024 };
    const size_t STEPS = GBT_TSAN ? 5000 : 20000;
    /* The gate program's shape (gates/gateprog.c). */
    const gbs_stress_shape shape = {
        .steps = (int)STEPS, .live_max = LIVE_MAX, .region_bytes = 40 * 1024, .piece = 10 * 1024, .kept_bytes = 16384};
    void *kept;
    size_t peak = gbs_stress(&shape, &kept);
    free(kept);
    gb_stats s = gbt_stats();
    CHECK(s.sweeps >= STEPS / 50);
    CHECK_EQ(s.retirements, STEPS);
    /* Bounded by what 1024 live coroutines hold: their regions (40 KiB in
     * a block of 16 KiB and one of 32 KiB) and their stacks' address
     * space. */
    fprintf(stderr, "peak held %.1f MiB over %zu steps\n", peak / 1048576.0, STEPS);
    CHECK_LT(peak, (size_t)LIVE_MAX * (48 * 1024 + GB_CORO_STACK_DEFAULT + 8192) + 16 * 1048576);
    check_all_given_back();
}

GB_TEST(pin_work_grows_linearly_with_retirements)
{
    size_t r1, r2;
    uint64_t w1 = gbs_pin_work(200, 500, &r1);
    uint64_t w2 = gbs_pin_work(200, 1000, &r2);
    CHECK_EQ(r1, 500);
    CHECK_EQ(r2, 1000);
    CHECK_EQ(gbt_stats().regions_retired, 0);
    double ratio = (double)w2 / (double)w1;
    fprintf(stderr, "pin-check work: %ju for N=500, %ju for 2N=1000: ratio %.2f\n", (uintmax_t)w1,
            (uintmax_t)w2, ratio);
    CHECK(ratio > 1.5 && ratio < 2.5);
    gb_stats s = gbt_stats();
    CHECK(s.pin_tries_skipped > 0);
    check_all_given_back();
}

GB_TEST(ten_thousand_suspended_coroutines_fit_the_mapping_budget)
{
    GBT_SKIP_IF(GBT_TSAN, "TSan allows 8,128 threads and fibers at once");
    enum { N = 10000 };
    gb_coro **c = gbs_idle_coroutines(N);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.fallbacks_budget, 0);
    CHECK(s.mappings <= s.map_budget);
    gbs_free_coroutines(c, N);
    check_all_given_back();
}

GB_TEST(freed_stacks_are_pooled_emptied_and_trimmed)
{
    for (int i = 0; i < 100; i++) {
        gb_coro *c = gb_coro_new(gbs_hold_forever, NULL, 0);
        gb_coro_resume(c);
        gb_coro_free(c);
    }
    gb_stats s = gbt_stats();
    CHECK(s.stacks_pooled >= 1 && s.stacks_pooled <= 8);
    CHECK_LT(s.mappings, 20);
    check_all_given_back();
}

/* ------------------------------------------- stacks given back and taken */

/* What a coroutine of these tests writes of its own stack before it
 * yields, so that the pages stay in use while the test reads them. */
typedef struct touch {
    size_t n;
    char out;
} touch;

static void touch_stack_and_yield(void *arg)
{
    touch *t = arg;
    volatile char buf[t->n];
    for (size_t i = 0; i < t->n; i += 1024)
        buf[i] = (char)i;
    gb_coro_yield();
    t->out = buf[0];
}

/* The resident pages the OS counts outside the footprint: those given back
 * and not said to be in use again. */
static size_t outside_footprint(void)
{
    gb_resident res;
    CHECK(gb_resident_get(&res) == 0);
    return res.rss - res.footprint;
}

GB_TEST(a_pooled_stack_taken_again_counts_in_the_footprint)
{
    gb_init(NULL);
    gb_resident res;
    CHECK(gb_resident_get(&res) == 0);
    GBT_SKIP_IF(res.footprint == 0, "this OS keeps no footprint that a reused page could be missing from");
    touch t = {.n = 192 * 1024};
    gb_coro *c = gb_coro_new(touch_stack_and_yield, &t, 0);
    CHECK(gb_coro_resume(c));
    size_t in_use = outside_footprint();
    gb_coro_free(c); /* pooled, and given back */
    size_t pooled = outside_footprint();
    CHECK_EQ(gbt_stats().stacks_pooled, 1);
    c = gb_coro_new(touch_stack_and_yield, &t, 0);
    CHECK_EQ(gbt_stats().stacks_pooled, 0); /* the same stack */
    CHECK(gb_coro_resume(c));
    size_t again = outside_footprint();
    fprintf(stderr, "outside the footprint: %zu KiB with the stack in use, %zu KiB pooled, %zu KiB in use again\n",
            in_use / 1024, pooled / 1024, again / 1024);
    CHECK(pooled >= in_use + t.n * 3 / 4);
    /* Written again, the pages count again: the OS was told they are in
     * use (MADV_FREE_REUSE on macOS), or they would stay outside it. */
    CHECK(again + t.n * 3 / 4 <= pooled);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    check_all_given_back();
}

static int unmap_fails(void *p, size_t n)
{
    (void)p;
    (void)n;
    errno = ENOMEM;
    return -1;
}

GB_TEST(a_stack_whose_munmap_fails_is_still_given_back)
{
    gb_init(NULL);
    /* A stack of its own size is not pooled: it leaves through the unmap
     * path, with its guard page at the start of the range. */
    touch t = {.n = 1024 * 1024};
    gb_coro *c = gb_coro_new(touch_stack_and_yield, &t, 2 * t.n);
    CHECK(gb_coro_resume(c));
    CHECK(!gb_coro_resume(c));
    gb_resident before;
    CHECK(gb_resident_get(&before) == 0);
    int (*real_unmap)(void *, size_t) = gb__os.unmap;
    gb__os.unmap = unmap_fails;
    gb_coro_free(c);
    gb__os.unmap = real_unmap;
    gb_stats s = gbt_stats();
    CHECK_EQ(s.unmap_failures, 1);
    CHECK_EQ(s.unmaps_pending, 1);
    gb_resident after;
    CHECK(gb_resident_get(&after) == 0);
    fprintf(stderr, "held %zu KiB before the free, %zu KiB after (resident %zu, then %zu KiB)\n",
            gbt_held(&before) / 1024, gbt_held(&after) / 1024, before.rss / 1024, after.rss / 1024);
    /* The release skips the guard: on macOS a release that meets a page
     * that is not writable stops there, and gives nothing back. */
    CHECK(gbt_held(&after) + t.n * 3 / 4 <= gbt_held(&before));
    check_all_given_back(); /* the sweep's unmaps complete the pending one */
}

/* ----------------------------------------------------------- misuse */

static void resume_finished(void)
{
    int n = 0;
    gb_coro *c = gb_coro_new(count_to_three, &n, 0);
    while (gb_coro_resume(c))
        ;
    gb_coro_resume(c);
}

GB_TEST(resuming_a_finished_coroutine_stops)
{
    gbt_expect_death(resume_finished, "has finished; it cannot be resumed");
}

static void resume_self_body(void *arg)
{
    (void)arg;
    gb_coro_resume(gb_coro_current());
}

static void resume_running(void)
{
    gb_coro_resume(gb_coro_new(resume_self_body, NULL, 0));
}

GB_TEST(resuming_a_running_coroutine_stops)
{
    gbt_expect_death(resume_running, "is running (a coroutine cannot resume itself");
}

static void yield_outside(void)
{
    gb_coro_yield();
}

GB_TEST(yielding_outside_a_coroutine_stops)
{
    gbt_expect_death(yield_outside, "gb_coro_yield: called outside any coroutine");
}

/* The same on a thread the runtime already knows: its state is there, no
 * coroutine runs. */
static void yield_outside_known(void)
{
    gb_leave(gb_enter());
    gb_coro_yield();
}

GB_TEST(yielding_outside_a_coroutine_on_a_thread_the_runtime_knows_stops)
{
    gbt_expect_death(yield_outside_known, "gb_coro_yield: called outside any coroutine");
}

static void free_self_body(void *arg)
{
    (void)arg;
    gb_coro_free(gb_coro_current());
}

static void free_running(void)
{
    gb_coro_resume(gb_coro_new(free_self_body, NULL, 0));
}

GB_TEST(freeing_the_running_coroutine_stops)
{
    gbt_expect_death(free_running, "gb_coro_free: coroutine");
}

static gb_coro *foreign;

static void *resume_foreign(void *arg)
{
    (void)arg;
    gb_coro_resume(foreign);
    return NULL;
}

static void cross_thread(void)
{
    foreign = gb_coro_new(gbs_hold_forever, NULL, 0);
    pthread_t t;
    pthread_create(&t, NULL, resume_foreign, NULL);
    pthread_join(t, NULL);
}

GB_TEST(resuming_another_threads_coroutine_stops)
{
    gbt_expect_death(cross_thread, "belongs to another thread");
}

static int deep(int n)
{
    volatile char pad[1024];
    pad[0] = (char)n;
    return n == 0 ? pad[0] : deep(n - 1) + pad[0];
}

static void overflow_body(void *arg)
{
    (void)arg;
    deep(1000000);
}

static void overflow(void)
{
    gb_coro_resume(gb_coro_new(overflow_body, NULL, 32 * 1024));
}

GB_TEST(a_stack_overflow_names_itself)
{
    GBT_SKIP_IF(GBT_SANITIZED, "the sanitizers take SIGSEGV themselves (handle_segv) and report the overflow");
    gbt_expect_death(overflow, "coroutine stack overflow");
}

/* A fault anywhere in the guard is the overflow: a frame larger than
 * what is left of the stack lands at any byte of it, the lowest and the
 * highest too. */
static void touch_the_guard_at(void *arg)
{
    gb_coro *c = gb__self()->cur_coro;
    volatile char *p = arg ? c->stack.lo - 1 : c->stack.lo - c->stack.guard;
    *p = 1;
}

static void overflow_at_the_guards_lowest_byte(void)
{
    gb_coro_resume(gb_coro_new(touch_the_guard_at, NULL, 32 * 1024));
}

static void overflow_at_the_guards_highest_byte(void)
{
    gb_coro_resume(gb_coro_new(touch_the_guard_at, (void *)1, 32 * 1024));
}

GB_TEST(a_fault_at_either_end_of_the_guard_is_named_an_overflow)
{
    GBT_SKIP_IF(GBT_SANITIZED, "the sanitizers take SIGSEGV themselves (handle_segv) and report the overflow");
    gbt_expect_death(overflow_at_the_guards_lowest_byte, "coroutine stack overflow");
    gbt_expect_death(overflow_at_the_guards_highest_byte, "coroutine stack overflow");
}

/* Signal stacks. The overflow report needs one per thread; a thread that
 * has its own (the application's, or a sanitizer's: ASan gives every thread
 * one) must keep it, and one whose stack was too small for the report gets
 * its own back at exit, or its owner could never free it. What is in force
 * at exit is read by a key destructor that runs a second round, after the
 * runtime's (which runs in the first). */
static pthread_key_t late_key;
static stack_t at_exit_stack, before_own;

static void read_at_exit(void *arg)
{
    uintptr_t round = (uintptr_t)arg;
    if (round == 1) {
        pthread_setspecific(late_key, (void *)(uintptr_t)2);
        return;
    }
    sigaltstack(NULL, &at_exit_stack);
    /* A well-behaved owner puts back what it replaced (under ASan, the
     * sanitizer's own signal stack, which it unmaps after this). */
    sigaltstack(&before_own, NULL);
}

typedef struct {
    size_t own_size;
    void *own;
    stack_t while_running;
    size_t later_size; /* a stack the thread installs after the runtime's, if not 0 */
    void *later;
    size_t usable; /* what malloc gave the runtime's stack (glibc), 0 where unknown */
} altstack_case;

static void yield_once(void *arg)
{
    (void)arg;
    gb_coro_yield();
}

static void *altstack_thread(void *arg)
{
    altstack_case *k = arg;
    pthread_setspecific(late_key, (void *)(uintptr_t)1);
    stack_t own;
    memset(&own, 0, sizeof own);
    if (k->own_size == 0) {
        /* None of its own: what it has is read, to be put back. */
        if (sigaltstack(NULL, &before_own) != 0)
            return NULL;
    } else {
        own.ss_sp = k->own = malloc(k->own_size);
        own.ss_size = k->own_size;
        if (sigaltstack(&own, &before_own) != 0)
            return NULL;
    }
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    gb_coro_resume(c);
    sigaltstack(NULL, &k->while_running);
#if defined(__GLIBC__)
    if (k->while_running.ss_sp != k->own)
        k->usable = malloc_usable_size(k->while_running.ss_sp);
#endif
    gb_coro_resume(c);
    gb_coro_free(c);
    if (k->later_size) {
        stack_t later;
        memset(&later, 0, sizeof later);
        later.ss_sp = k->later = malloc(k->later_size);
        later.ss_size = k->later_size;
        if (sigaltstack(&later, NULL) != 0)
            k->later = NULL;
    }
    return NULL;
}

static altstack_case run_altstack_thread_then(size_t own_size, size_t later_size)
{
    altstack_case k = {.own_size = own_size, .later_size = later_size};
    memset(&at_exit_stack, 0, sizeof at_exit_stack);
    CHECK_EQ(pthread_key_create(&late_key, read_at_exit), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, altstack_thread, &k), 0);
    pthread_join(t, NULL);
    pthread_key_delete(late_key);
    return k;
}

static altstack_case run_altstack_thread(size_t own_size)
{
    return run_altstack_thread_then(own_size, 0);
}

GB_TEST(a_threads_own_signal_stack_is_kept)
{
    /* 16 KiB is the least the runtime takes as usable (overflow.c). */
    size_t sizes[] = {64 * 1024, 16 * 1024};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        altstack_case k = run_altstack_thread(sizes[i]);
        CHECK(k.while_running.ss_sp == k.own);
        CHECK(at_exit_stack.ss_sp == k.own);
        CHECK(!(at_exit_stack.ss_flags & SS_DISABLE));
        free(k.own);
    }
}

GB_TEST(a_signal_stack_too_small_is_replaced_and_put_back_at_exit)
{
    altstack_case k = run_altstack_thread(8 * 1024);
    CHECK(k.while_running.ss_sp != k.own);
    CHECK(k.while_running.ss_size >= 16 * 1024);
#if defined(__GLIBC__)
    /* The runtime's stack is as large as it says: a signal handler runs
     * on all of it. */
    CHECK(k.usable >= k.while_running.ss_size);
#endif
    CHECK(at_exit_stack.ss_sp == k.own);
    CHECK_EQ(at_exit_stack.ss_size, (size_t)8 * 1024);
    free(k.own);
}

/* A stack the thread installs after the runtime's is its own: at exit the
 * runtime frees its stack, which is no longer used, and leaves the later
 * one in force rather than put back the one it had replaced. */
/* A thread's pool of stacks goes at its exit with the rest of what it
 * kept: nothing of a thread that ran and freed a coroutine stays mapped or
 * cached once it has exited. */
static void *run_and_free_a_coroutine(void *arg)
{
    (void)arg;
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    gb_coro_resume(c);
    gb_coro_resume(c);
    gb_coro_free(c); /* its stack goes to the thread's pool */
    return NULL;
}

GB_TEST(a_threads_pooled_stacks_go_at_its_exit)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, run_and_free_a_coroutine, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.mappings_cached, 0);
    gbt_check_all_given_back();
}

GB_TEST(a_signal_stack_installed_after_the_runtimes_is_left_in_force_at_exit)
{
    altstack_case k = run_altstack_thread_then(8 * 1024, 64 * 1024);
    CHECK(k.while_running.ss_sp != k.own);
    CHECK(k.later != NULL);
    CHECK(at_exit_stack.ss_sp == k.later);
    CHECK_EQ(at_exit_stack.ss_size, (size_t)64 * 1024);
    free(k.own);
    free(k.later);
}

/* A thread with no signal stack gets the runtime's for as long as it runs
 * coroutines, and none again at exit: the runtime's is taken off (and
 * freed), and the "none" put back is the disabled one it had. */
GB_TEST(a_thread_without_a_signal_stack_has_none_again_at_exit)
{
    GBT_SKIP_IF(GBT_SANITIZED, "ASan gives every thread a signal stack of its own");
    altstack_case k = run_altstack_thread(0);
    CHECK(!(k.while_running.ss_flags & SS_DISABLE));
    CHECK(k.while_running.ss_size >= 16 * 1024);
    CHECK(at_exit_stack.ss_flags & SS_DISABLE);
}

static void overflow_on_own_altstack(void)
{
    stack_t own;
    memset(&own, 0, sizeof own);
    own.ss_size = 32 * 1024;
    own.ss_sp = malloc(own.ss_size);
    if (sigaltstack(&own, NULL) != 0)
        return;
    overflow();
}

GB_TEST(a_stack_overflow_is_named_on_the_threads_own_signal_stack)
{
    GBT_SKIP_IF(GBT_SANITIZED, "the sanitizers take SIGSEGV themselves (handle_segv) and report the overflow");
    gbt_expect_death(overflow_on_own_altstack, "coroutine stack overflow");
}

/* The guard page cannot be made and the mapping cannot be unmapped either
 * (as at the mapping limit): the stack comes from malloc, and the mapping
 * is emptied and unmapped later, not lost. */
static int protect_fails(void *p, size_t n)
{
    (void)p;
    (void)n;
    return -1;
}

static int unmap_fails_once_count;
static int (*real_unmap)(void *, size_t);

static int unmap_fails_once(void *p, size_t n)
{
    if (unmap_fails_once_count-- > 0)
        return -1;
    return real_unmap(p, n);
}

GB_TEST(a_stack_whose_guard_and_unmap_fail_loses_nothing)
{
    gb_init(NULL);
    real_unmap = gb__os.unmap;
    int (*real_protect)(void *, size_t) = gb__os.protect_none;
    gb__os.protect_none = protect_fails;
    gb__os.unmap = unmap_fails_once;
    unmap_fails_once_count = 1; /* the one unmap of the guardless mapping */
    gb_coro *c = gb_coro_new(gbs_hold_forever, NULL, 0);
    gb__os.protect_none = real_protect;
    gb_stats s = gbt_stats();
    CHECK_EQ(s.fallbacks_mmap, 1);
    CHECK_EQ(s.unmaps_pending, 1);
    gb_coro_resume(c);
    gb_coro_free(c);
    check_all_given_back(); /* the sweep retries the pending unmap */
    CHECK_EQ(gbt_stats().unmaps_pending, 0);
}

/* ------------------------------------------ a running witness keeps it
 *
 * A coroutine pins a retired region (it is the region's witness), is
 * resumed, and while it runs something retries retired regions. No scan
 * sees a running coroutine's live frames, so the region must stay until
 * it has frozen again without the pointer or finished (pin.c gb__pin_try).
 * The region spans several mapped blocks, the block cache is off, and
 * fresh regions of the same sizes are written before the read, so a
 * region freed too early faults or reads back another pattern. */
enum { WIT_BLOCKS = 6, WIT_BLOCK = 512 * 1024 };
#define WIT_KEY ((uintptr_t)0x3c3c3c3c3c3c3c3cull)

typedef struct witness_case {
    void (*trigger)(struct witness_case *);
    void (*before_leave)(struct witness_case *); /* optional: after the witness yields */
    uintptr_t enc;          /* the region's table of blocks, encoded */
    size_t retired_before;  /* regions_retired when the witness resumed */
    size_t retired_after;   /* and right after the trigger */
    uint64_t sweeps_before, sweeps_after;
    bool read_back;         /* every byte checked */
    gb_coro *free_later;    /* a coroutine the trigger made, freed at the end */
} witness_case;

static unsigned char witness_pattern(size_t b, size_t i)
{
    return (unsigned char)(i * 13 + b * 101 + 1);
}

static void witness_init(unsigned stress)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.cache_bytes = GB_CACHE_OFF;
    o.block_cap = 1 << 20; /* a block per 512 KiB allocation, with huge pages too */
    o.stress = stress;
    gb_init(&o);
}

/* Regions as large as the witnessed one, entered, written and left: they
 * take the same addresses if the witnessed one was given back. */
static void witness_clobber(void)
{
    gb_region *q = gb_enter();
    for (int b = 0; b < WIT_BLOCKS; b++)
        memset(gb_alloc(WIT_BLOCK), 0xee, WIT_BLOCK);
    gb_leave(q);
}

static void witness_body(void *arg)
{
    witness_case *wc = arg;
    /* The only plain copy of the pointer: this frame (volatile keeps it in
     * a stack slot across the yield and the trigger). */
    unsigned char **volatile tab = (unsigned char **)(wc->enc ^ WIT_KEY);
    gb_coro_yield(); /* the thread leaves the region: this frame pins it */
    gb_stats s = gbt_stats();
    wc->retired_before = s.regions_retired;
    wc->sweeps_before = s.sweeps;
    wc->trigger(wc);
    s = gbt_stats();
    wc->retired_after = s.regions_retired;
    wc->sweeps_after = s.sweeps;
    witness_clobber();
    for (size_t b = 0; b < WIT_BLOCKS; b++) {
        const unsigned char *p = tab[b];
        for (size_t i = 0; i < WIT_BLOCK; i++)
            if (p[i] != witness_pattern(b, i))
                gbt_fail(__FILE__, __LINE__, "block %zu byte %zu: %u, not %u", b, i, p[i],
                         witness_pattern(b, i));
    }
    wc->read_back = true;
}

/* The thread fills a region, a coroutine takes the pointer and yields, the
 * thread leaves the region (retired, witnessed by the coroutine) and
 * resumes it; the coroutine runs the trigger, then reads every byte and
 * finishes, and only then may the region go. */
static void run_witness_case_with(void (*trigger)(witness_case *),
                                  void (*before_leave)(witness_case *))
{
    witness_case wc = {.trigger = trigger, .before_leave = before_leave};
    gb_region *r = gb_enter();
    unsigned char **tab = gb_alloc(WIT_BLOCKS * sizeof *tab);
    for (size_t b = 0; b < WIT_BLOCKS; b++) {
        tab[b] = gb_alloc(WIT_BLOCK);
        for (size_t i = 0; i < WIT_BLOCK; i++)
            tab[b][i] = witness_pattern(b, i);
    }
    CHECK(gbt_stats().blocks_live >= WIT_BLOCKS);
    wc.enc = (uintptr_t)tab ^ WIT_KEY;
    tab = NULL;
    gb_coro *w = gb_coro_new(witness_body, &wc, 0);
    CHECK(gb_coro_resume(w));
    if (before_leave)
        before_leave(&wc);
    gb_leave(r);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_retired, 1);
    CHECK(s.bytes_retired >= WIT_BLOCKS * WIT_BLOCK);
    CHECK(!gb_coro_resume(w)); /* the trigger, the read, the finish */
    CHECK(wc.read_back);
    gb_coro_free(wc.free_later);
    CHECK_EQ(wc.retired_before, 1);
    CHECK_EQ(wc.retired_after, 1);
    /* It finished: nothing pins the region any more, and it went. */
    CHECK_EQ(gbt_stats().regions_retired, 0);
    gb_coro_free(w);
    check_all_given_back();
}

static void run_witness_case(void (*trigger)(witness_case *))
{
    run_witness_case_with(trigger, NULL);
}

static void trigger_sweep(witness_case *wc)
{
    gb_sweep();
    CHECK_EQ(gbt_stats().sweeps, wc->sweeps_before + 1);
}

GB_TEST(a_running_witness_keeps_its_region_through_a_sweep)
{
    witness_init(0);
    run_witness_case(trigger_sweep);
}

static void trigger_safepoint(witness_case *wc)
{
    gb_safepoint(); /* stress 1: every safepoint sweeps */
    CHECK_EQ(gbt_stats().sweeps, wc->sweeps_before + 1);
}

GB_TEST(a_running_witness_keeps_its_region_through_a_stress_safepoint)
{
    witness_init(1);
    run_witness_case(trigger_safepoint);
}

static void trigger_leave(witness_case *wc)
{
    (void)wc;
    uint64_t tries = gbt_stats().pin_tries + gbt_stats().pin_tries_skipped;
    gb_region *q = gb_enter();
    memset(gb_alloc(1 << 20), 0x11, 1 << 20);
    gb_leave(q);
    /* The leave asked about the retired region (tried or skipped). */
    CHECK(gbt_stats().pin_tries + gbt_stats().pin_tries_skipped > tries);
}

GB_TEST(a_running_witness_keeps_its_region_through_a_leave)
{
    witness_init(0);
    run_witness_case(trigger_leave);
}

static void finish_at_once(void *arg)
{
    (void)arg;
}

static void trigger_finish(witness_case *wc)
{
    (void)wc;
    gb_coro *c = gb_coro_new(finish_at_once, NULL, 0);
    CHECK(!gb_coro_resume(c)); /* it finished: retired regions are tried */
    wc->free_later = c;        /* freeing is a trigger of its own */
}

GB_TEST(a_running_witness_keeps_its_region_when_one_it_resumed_finishes)
{
    witness_init(0);
    run_witness_case(trigger_finish);
}

static void witness_other_yields_once(void *arg)
{
    (void)arg;
    gb_coro_yield();
}

static void trigger_free(witness_case *wc)
{
    (void)wc;
    gb_coro *c = gb_coro_new(witness_other_yields_once, NULL, 0);
    CHECK(gb_coro_resume(c)); /* suspended, with a stack that has run */
    gb_coro_free(c);          /* retired regions are tried */
}

GB_TEST(a_running_witness_keeps_its_region_when_it_frees_another)
{
    witness_init(0);
    run_witness_case(trigger_free);
}

/* Two coroutines point into the region when it is left; the one frozen
 * last is found first and recorded as the witness. The other one runs and
 * frees the witness: the region is tried again while a coroutine that
 * pinned it runs with the pointer in its live frame, and must stay. */
static gb_coro *second_pinner;

static void hold_table(void *arg)
{
    witness_case *wc = arg;
    unsigned char **volatile tab = (unsigned char **)(wc->enc ^ WIT_KEY);
    gb_coro_yield();
    (void)tab;
}

static void pin_from_a_second_coroutine(witness_case *wc)
{
    second_pinner = gb_coro_new(hold_table, wc, 0);
    CHECK(gb_coro_resume(second_pinner));
}

static void trigger_free_the_witness(witness_case *wc)
{
    (void)wc;
    gb_coro_free(second_pinner); /* its witnessed region is tried now */
    second_pinner = NULL;
}

GB_TEST(a_running_coroutine_keeps_a_region_it_pinned_when_another_was_the_witness)
{
    witness_init(0);
    run_witness_case_with(trigger_free_the_witness, pin_from_a_second_coroutine);
}

/* ------------------------------------------- asked while it waits for a try
 *
 * A retired region's witness runs and resumes another coroutine: freezing
 * again, the witness's stack may have changed, so the region loses its
 * witness and waits for a try (on the thread's dirty list) until the one
 * it resumed yields or finishes. A question asked meanwhile, from the
 * coroutine the witness resumed, must still see the region as it is:
 * retired, pinned by the witness (frozen, and pointing into it), and the
 * region that holds the pointer. */
enum { ASKED_BYTES = 300000 };
#define ASKED_KEY ((uintptr_t)0x6b6b6b6b6b6b6b6bull)

typedef struct asked_case {
    gb_region *r;
    uintptr_t enc;         /* the allocation, encoded */
    bool waiting;          /* the region waited for a try when asked */
    gb_region_info info;   /* asked from the coroutine the witness resumed */
    gb_region *of_first, *of_last;
    bool read_back;
} asked_case;

static void ask_while_it_waits(void *arg)
{
    asked_case *k = arg;
    /* Not a runtime promise but the state this case is about: the region
     * has no witness now and waits for a try. */
    k->waiting = !gb__list_empty(&gb__self()->pins.retired_dirty);
    gb_region_info_get(k->r, &k->info);
    const unsigned char *p = (const unsigned char *)(k->enc ^ ASKED_KEY);
    k->of_first = gb_region_of(p);
    k->of_last = gb_region_of(p + ASKED_BYTES - 1);
}

static void witness_resumes_an_asker(void *arg)
{
    asked_case *k = arg;
    const unsigned char *volatile p = (const unsigned char *)(k->enc ^ ASKED_KEY);
    gb_coro_yield(); /* the thread leaves the region: this frame pins it */
    gb_coro *asker = gb_coro_new(ask_while_it_waits, k, 0);
    CHECK(!gb_coro_resume(asker));
    gb_coro_free(asker);
    for (size_t i = 0; i < ASKED_BYTES; i++)
        if (p[i] != (unsigned char)(i * 11 + 5))
            gbt_fail(__FILE__, __LINE__, "byte %zu: %u", i, p[i]);
    k->read_back = true;
}

GB_TEST(a_region_waiting_for_a_try_is_named_and_found_from_a_coroutine_its_witness_resumed)
{
    asked_case k;
    memset(&k, 0, sizeof k);
    k.r = gb_enter();
    unsigned char *buf = gb_alloc(ASKED_BYTES);
    for (size_t i = 0; i < ASKED_BYTES; i++)
        buf[i] = (unsigned char)(i * 11 + 5);
    k.enc = (uintptr_t)buf ^ ASKED_KEY;
    buf = NULL;
    gb_coro *w = gb_coro_new(witness_resumes_an_asker, &k, 0);
    CHECK(gb_coro_resume(w));
    gb_leave(k.r);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    CHECK(!gb_coro_resume(w)); /* resumes the asker, then reads and finishes */
    CHECK(k.waiting);
    CHECK_EQ(k.info.state, GB_REGION_RETIRED);
    CHECK(k.info.pinned_by == w);
    CHECK(k.info.bytes >= ASKED_BYTES);
    CHECK(k.of_first == k.r);
    CHECK(k.of_last == k.r);
    CHECK(k.read_back);
    /* It finished: nothing pins the region any more, and it went. */
    CHECK_EQ(gbt_stats().regions_retired, 0);
    gb_region_info i;
    gb_region_info_get(k.r, &i);
    CHECK_EQ(i.state, GB_REGION_FREED);
    gb_coro_free(w);
    check_all_given_back();
}

/* ------------------------------------ the first byte of a compacted arena
 *
 * A compacted vec's elements are in an arena of its own, bound to the
 * region of its struct, and element 0 is the arena's first byte. A
 * suspended coroutine that holds that one pointer, and nothing else into
 * the region, must pin the region (and so the arena) across the leave: a
 * range check that misses a range's first byte would let both go. */
enum { FIRST_ELEMS = 100000 };
#define FIRST_KEY ((uintptr_t)0x1e1e1e1e1e1e1e1eull)

static uint64_t first_elem(uint64_t i)
{
    return i * 0x9e3779b97f4a7c15ull + 7;
}

/* Reads the elements from the first one on: the caller's frame keeps the
 * pointer, this one only reads through it. */
__attribute__((noinline)) static void check_elements(const uint64_t *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (e[i] != first_elem(i))
            gbt_fail(__FILE__, __LINE__, "element %zu: %#jx, not %#jx", i, (uintmax_t)e[i],
                     (uintmax_t)first_elem(i));
}

static void hold_the_first_element(void *arg)
{
    /* The only plain copy of the pointer: this frame's. */
    const uint64_t *volatile first = (const uint64_t *)(*(const uintptr_t *)arg ^ FIRST_KEY);
    gb_coro_yield();
    check_elements(first, FIRST_ELEMS);
}

GB_TEST(a_pointer_to_the_first_byte_of_a_compacted_arena_alone_pins_its_region)
{
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(sizeof(uint64_t));
    for (uint64_t i = 0; i < FIRST_ELEMS; i++) {
        uint64_t e = first_elem(i);
        gb_vec_push(v, &e);
    }
    gb_vec_compact(v);
    size_t arena = gb_vec_arena_bytes(v);
    CHECK(arena >= FIRST_ELEMS * sizeof(uint64_t));
    uintptr_t enc = (uintptr_t)gb_vec_at(v, 0) ^ FIRST_KEY;
    v = NULL;
    gb_coro *c = gb_coro_new(hold_the_first_element, &enc, 0);
    CHECK(gb_coro_resume(c));
    gb_leave(r);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_retired, 1);
    CHECK_EQ(s.arenas_live, 1);
    CHECK(s.bytes_retired >= arena);
    gb_region_info i;
    gb_region_info_get(r, &i);
    CHECK_EQ(i.state, GB_REGION_RETIRED);
    CHECK(i.pinned_by == c);
    CHECK_EQ(i.arenas, 1);
    /* Regions of the same sizes come and go meanwhile: had the arena gone,
     * they would take its memory. */
    gbs_regions_come_and_go(10, arena, arena, 0xee);
    CHECK(!gb_coro_resume(c)); /* reads every element, and finishes */
    CHECK_EQ(gbt_stats().regions_retired, 0);
    CHECK_EQ(gbt_stats().arenas_live, 0);
    gb_coro_free(c);
    check_all_given_back();
}

/* ------------------------------------------------ a witness that lets go
 *
 * Two coroutines point into a region when it is left; the one frozen last
 * is found first and is its witness. The other one runs, frees the
 * witness, and so the region is tried while it runs: its live frame holds
 * the pointer, so it becomes the witness and the region stays (through a
 * sweep too). Then it drops the pointer and yields. Its stack changed
 * while it ran, so the region needs another try, and the next sweep at
 * the latest must find nothing pointing into it and free it. Before the
 * leave a scratch region is left with both coroutines frozen, so that
 * both stacks' summaries are built while they hold the pointer: a summary
 * kept after its coroutine ran would still say "pinned". */
enum { LET_GO_BYTES = 400000 };
#define LET_GO_KEY ((uintptr_t)0x2d2d2d2d2d2d2d2dull)

typedef struct let_go_case {
    gb_region *r;
    uintptr_t enc;          /* the allocation, encoded */
    gb_coro *witness;       /* the other pinner, frozen last */
    gb_region_info running; /* asked while the one that lets go runs */
    size_t retired_running; /* regions_retired after its sweep */
    uint64_t tries_before, tries_running;
    bool read_back;
} let_go_case;

static unsigned char let_go_byte(size_t i)
{
    return (unsigned char)(i * 29 + 3);
}

__attribute__((noinline)) static bool let_go_read(const unsigned char *p)
{
    for (size_t i = 0; i < LET_GO_BYTES; i++)
        if (p[i] != let_go_byte(i))
            return false;
    return true;
}

/* Zeroes the stack below the caller's frame, where the calls it made left
 * their frames, so that no stale copy of the pointer lies where the frames
 * of the next call (the yield's) leave holes the scan would read. */
__attribute__((noinline)) static void scrub_below(void)
{
    uintptr_t pad[2048];
    memset(pad, 0, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory"); /* the stores are kept */
}

/* The region k->r, holding LET_GO_BYTES of a pattern, pinned by two
 * coroutines when it is left: fn's, started with k, and k->witness, frozen
 * last and so the witness. Before the leave a scratch region is left with
 * both frozen, so that both stacks' summaries are built while they hold
 * the pointer. Returns fn's coroutine. */
static gb_coro *two_pinners_then_leave(let_go_case *k, gb_coro_fn fn)
{
    memset(k, 0, sizeof *k);
    k->r = gb_enter();
    unsigned char *buf = gb_alloc(LET_GO_BYTES);
    for (size_t i = 0; i < LET_GO_BYTES; i++)
        buf[i] = let_go_byte(i);
    k->enc = (uintptr_t)buf ^ LET_GO_KEY;
    buf = NULL;
    gb_coro *c = gb_coro_new(fn, k, 0);
    CHECK(gb_coro_resume(c));
    k->witness = gb_coro_new(gbs_hold_forever, (void *)(k->enc ^ LET_GO_KEY), 0);
    CHECK(gb_coro_resume(k->witness));
    gb_region *scratch = gb_enter();
    memset(gb_alloc(5000), 1, 5000);
    gb_leave(scratch); /* asks both stacks: their summaries hold the pointer */
    gb_leave(k->r);
    return c;
}

static void hold_then_let_go(void *arg)
{
    let_go_case *k = arg;
    const unsigned char *volatile p = (const unsigned char *)(k->enc ^ LET_GO_KEY);
    gb_coro_yield(); /* the thread leaves the region */
    k->tries_before = gbt_stats().pin_tries;
    gb_coro_free(k->witness); /* the region is tried while we run */
    k->witness = NULL;
    gb_sweep();
    gb_region_info_get(k->r, &k->running);
    gb_stats s = gbt_stats();
    k->retired_running = s.regions_retired;
    k->tries_running = s.pin_tries;
    k->read_back = let_go_read(p);
    p = NULL; /* let go */
    scrub_below();
    gb_coro_yield();
}

GB_TEST(a_witness_that_lets_go_of_its_region_lets_the_next_sweep_free_it)
{
    let_go_case k;
    gb_coro *c = two_pinners_then_leave(&k, hold_then_let_go);
    gb_region_info i;
    gb_region_info_get(k.r, &i);
    CHECK_EQ(i.state, GB_REGION_RETIRED);
    CHECK(i.pinned_by == k.witness);
    CHECK(gb_coro_resume(c)); /* frees the witness, sweeps, lets go, yields */
    CHECK(k.read_back);
    CHECK(k.tries_running > k.tries_before);
    CHECK_EQ(k.retired_running, 1);
    CHECK_EQ(k.running.state, GB_REGION_RETIRED);
    CHECK(k.running.pinned_by == c);
    gb_sweep();
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_retired, 0);
    CHECK_EQ(s.bytes_retired, 0);
    gb_region_info_get(k.r, &i);
    CHECK_EQ(i.state, GB_REGION_FREED);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    check_all_given_back();
}

/* The same two pinners, but the one that runs lets go of the pointer
 * before it frees the witness: the region is tried while it runs, its live
 * frames hold nothing that points into the region, and the region is
 * freed there and then, not kept until the coroutine yields. The pointer
 * is held in a frame below the coroutine's own, which the scrub clears
 * once it has returned: an unoptimised build keeps copies of a value it
 * passes in its frame's spill slots, where no assignment reaches. */
__attribute__((noinline)) static void hold_across_the_leave(let_go_case *k)
{
    const unsigned char *volatile p = (const unsigned char *)(k->enc ^ LET_GO_KEY);
    gb_coro_yield(); /* the thread leaves the region: this frame pins it */
    k->read_back = let_go_read(p);
    p = NULL;
}

static void let_go_then_free_the_witness(void *arg)
{
    let_go_case *k = arg;
    hold_across_the_leave(k);
    scrub_below(); /* let go */
    k->tries_before = gbt_stats().pin_tries;
    gb_coro_free(k->witness); /* the region is tried while we run */
    k->witness = NULL;
    gb_region_info_get(k->r, &k->running);
    gb_stats s = gbt_stats();
    k->retired_running = s.regions_retired;
    k->tries_running = s.pin_tries;
    gb_coro_yield();
}

GB_TEST(a_running_coroutine_that_let_go_lets_the_witness_free_its_region)
{
    let_go_case k;
    gb_coro *c = two_pinners_then_leave(&k, let_go_then_free_the_witness);
    gb_region_info i;
    gb_region_info_get(k.r, &i);
    CHECK_EQ(i.state, GB_REGION_RETIRED);
    CHECK(i.pinned_by == k.witness);
    CHECK(gb_coro_resume(c)); /* lets go, frees the witness, yields */
    CHECK(k.read_back);
    CHECK(k.tries_running > k.tries_before);
    CHECK_EQ(k.running.state, GB_REGION_FREED);
    CHECK_EQ(k.retired_running, 0);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    check_all_given_back();
}

/* As the let-go case's runner, but it keeps the pointer in a callee-saved
 * register alone while it frees the witness: the live scan, which starts
 * in the runtime's frames, must see that register, whether or not some
 * call between saved it on the stack. */
static void hold_in_register_and_free_the_witness(void *arg)
{
    let_go_case *k = arg;
    register uintptr_t p __asm__(SAVED_REG) = k->enc ^ LET_GO_KEY;
    __asm__ volatile("" : "+r"(p));
    gb_coro_yield(); /* the thread leaves the region */
    __asm__ volatile("" : "+r"(p));
    gb_coro *w = k->witness;
    k->witness = NULL;
    gb_coro_free(w); /* the region is tried while we run */
    __asm__ volatile("" : "+r"(p));
    gb_region_info_get(k->r, &k->running);
    __asm__ volatile("" : "+r"(p));
    k->read_back = let_go_read((const unsigned char *)p);
}

GB_TEST(a_running_coroutine_keeps_a_region_it_points_into_from_a_saved_register)
{
    let_go_case k;
    gb_coro *c = two_pinners_then_leave(&k, hold_in_register_and_free_the_witness);
    CHECK(!gb_coro_resume(c));
    CHECK_EQ(k.running.state, GB_REGION_RETIRED);
    CHECK(k.read_back);
    gb_coro_free(c);
    check_all_given_back();
}

/* A frozen stack that holds the address of a block's header, and nothing
 * past it, pins nothing: the header is the runtime's, never a program's
 * (region.h), and the runtime's own frames hold it while they walk a
 * region's blocks. The same stack holding the first byte past the header
 * pins the region. */
static void hold_word(void *arg)
{
    volatile uintptr_t w = (uintptr_t)arg;
    gb_coro_yield();
    (void)w;
}

/* The state of a region of one block, left while a frozen coroutine holds
 * the word the block's address and size give. */
static gb_region_state state_when_held(uintptr_t (*word_of)(const gb__block *b, size_t k), size_t k)
{
    gb_region *h = gb_enter();
    memset(gb_alloc(1000), 1, 1000);
    const gb_region *r = gb__handle_region("tests/coro.c", &gb__self()->mem, h);
    CHECK(r->blocks && !r->blocks->next);
    uintptr_t word = word_of(r->blocks, k);
    gb_coro *c = gb_coro_new(hold_word, (void *)word, 0);
    CHECK(gb_coro_resume(c));
    gb_leave(h);
    gb_region_info i;
    gb_region_info_get(h, &i);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    return i.state;
}

/* The k-th byte past the block's header (k = 0: its header's last). */
static uintptr_t past_the_header(const gb__block *b, size_t k)
{
    return (uintptr_t)b + GB__BLOCK_HDR + k - 1;
}

/* The k-th byte before the block's end (k = 0: the first byte past it). */
static uintptr_t before_the_end(const gb__block *b, size_t k)
{
    return (uintptr_t)b + b->chunk.size - k;
}

GB_TEST(a_frozen_stack_that_holds_only_a_block_header_pins_nothing)
{
    CHECK_EQ(state_when_held(past_the_header, 0), GB_REGION_FREED);
    CHECK_EQ(state_when_held(past_the_header, 1), GB_REGION_RETIRED);
    check_all_given_back();
}

/* Nor does the address just past a block, which is no byte of it (the
 * region has that one block only); its last byte pins. */
GB_TEST(a_frozen_stack_that_holds_only_the_end_of_a_block_pins_nothing)
{
    CHECK_EQ(state_when_held(before_the_end, 0), GB_REGION_FREED);
    CHECK_EQ(state_when_held(before_the_end, 1), GB_REGION_RETIRED);
    check_all_given_back();
}

/* A running coroutine whose only pointer into a retired region is to the
 * first element of a compacted vec, the very first byte of the vec's
 * arena: the region stays while it runs, and the element reads back. */
typedef struct first_element_case {
    gb_coro *pinner;
    uintptr_t enc; /* the element's address, encoded */
    size_t retired_after;
    uint64_t scanned; /* stack words read by the try at the pinner's free */
    int read_back;
} first_element_case;

static void free_the_pinner_holding_the_first_element(void *arg)
{
    first_element_case *k = arg;
    int *volatile first = (int *)(k->enc ^ WIT_KEY);
    uint64_t scanned = gbt_stats().pin_words_scanned;
    gb_coro_free(k->pinner); /* the region is tried now */
    gb_stats s = gbt_stats();
    k->scanned = s.pin_words_scanned - scanned;
    k->retired_after = s.regions_retired;
    witness_clobber();
    k->read_back = *first;
}

GB_TEST(a_running_coroutine_holding_the_first_byte_of_an_arena_keeps_its_region)
{
    witness_init(0);
    first_element_case k = {0};
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(sizeof(int));
    for (int i = 0; i < 1000; i++)
        gb_vec_push(v, &(int){i + 4242});
    gb_vec_compact(v);
    CHECK(gb_vec_arena_bytes(v) > 0);
    k.enc = (uintptr_t)gb_vec_at(v, 0) ^ WIT_KEY;
    k.pinner = gb_coro_new(gbs_hold_once, gb_alloc(64), 0);
    CHECK(gb_coro_resume(k.pinner));
    gb_leave(r);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    gb_coro *c = gb_coro_new(free_the_pinner_holding_the_first_element, &k, 0);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    CHECK_EQ(k.retired_after, 1);
    CHECK(k.scanned > 0); /* the running stack's words, counted */
    CHECK_EQ(k.read_back, 4242);
    CHECK_EQ(gbt_stats().regions_retired, 0); /* gone when it finished */
    check_all_given_back();
}

/* --------------------------------------------------------- handle slots */

static uintptr_t slot_of(const gb_coro *h)
{
    return (uintptr_t)h & (GB__CORO_SLOTS - 1);
}

/* A freed coroutine's slot is the next one's, with a newer generation, so
 * the slots in use stay as few as the coroutines alive; two freed are
 * taken back last freed first. */
GB_TEST(a_freed_coroutines_slot_is_taken_by_the_next_with_a_new_generation)
{
    gb_coro *a = gb_coro_new(yield_once, NULL, 0);
    gb_coro *b = gb_coro_new(yield_once, NULL, 0);
    CHECK(slot_of(a) != slot_of(b));
    gb_coro_free(a);
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    CHECK_EQ(slot_of(c), slot_of(a));
    CHECK(c != a); /* the generation moved on */
    gb_coro_free(b);
    gb_coro_free(c);
    gb_coro *d = gb_coro_new(yield_once, NULL, 0);
    gb_coro *e = gb_coro_new(yield_once, NULL, 0);
    CHECK_EQ(slot_of(d), slot_of(c));
    CHECK_EQ(slot_of(e), slot_of(b));
    gb_coro_free(d);
    gb_coro_free(e);
}

static gb_coro *future;

static void resume_a_future_generation(void)
{
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    /* The slot of a live coroutine, with a generation it has not reached. */
    future = (gb_coro *)((uintptr_t)c + ((uintptr_t)1 << GB__CORO_SLOT_BITS));
    gb_coro_resume(future);
}

GB_TEST(a_handle_with_a_generation_its_slot_has_not_reached_is_not_a_coroutine)
{
    gbt_expect_death(resume_a_future_generation, "is not a coroutine handle (gb_coro_new never returned it)");
}

/* The first slot no coroutine has had yet, in a handle of the first
 * generation: never handed out, so never freed either. */
static void resume_the_next_slot(void)
{
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    CHECK_EQ(slot_of(c), 0); /* the first coroutine of the process */
    gb_coro_resume((gb_coro *)((uintptr_t)c + 1));
}

GB_TEST(a_handle_of_a_slot_never_handed_out_is_not_a_coroutine)
{
    gbt_expect_death(resume_the_next_slot, "is not a coroutine handle (gb_coro_new never returned it)");
}

/* A slot in use, in a handle of generation 0, which no slot ever has. */
static void resume_generation_zero(void)
{
    gb_coro *a = gb_coro_new(yield_once, NULL, 0);
    gb_coro *b = gb_coro_new(yield_once, NULL, 0);
    CHECK_EQ(slot_of(b), 1);
    gb_coro_resume((gb_coro *)slot_of(b));
    gb_coro_free(a);
}

GB_TEST(a_handle_of_generation_zero_is_not_a_coroutine)
{
    gbt_expect_death(resume_generation_zero, "is not a coroutine handle (gb_coro_new never returned it)");
}

/* ------------------------------------------- the overflow handler's manners */

static void exit_42(int sig)
{
    (void)sig;
    _exit(42);
}

/* The application's own SIGSEGV handler, then the runtime's (installed by
 * the first gb_coro_new), then a fault outside any coroutine. */
static void fault_outside_coroutines(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exit_42;
    sigaction(SIGSEGV, &sa, NULL);
    gb_coro_free(gb_coro_new(yield_once, NULL, 0));
    volatile uintptr_t nowhere = 16; /* an address no mapping holds */
    *(volatile int *)nowhere = 1;
}

/* An overflow, with a SIGABRT handler of the application's that would
 * exit 42. */
static void overflow_under_an_abort_handler(void)
{
    signal(SIGABRT, exit_42);
    overflow();
}

/* A fault that is no coroutine's overflow goes to the handler that was
 * there before the runtime's; an overflow ends the process by SIGABRT,
 * whatever handler the application set for it. */
GB_TEST(the_overflow_handler_passes_other_faults_on_and_aborts_for_its_own)
{
    GBT_SKIP_IF(GBT_SANITIZED, "the sanitizers take SIGSEGV themselves (handle_segv)");
    int st = gbt_in_child(fault_outside_coroutines);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    st = gbt_in_child(overflow_under_an_abort_handler);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

/* ----------------------------------------------- pooled stacks and the OS */

static int (*real_release)(void *, size_t);
static void *released_at, *reused_at;
static size_t released_n, reused_n;

static int record_release(void *p, size_t n)
{
    released_at = p, released_n = n;
    return real_release(p, n);
}

static int record_reuse(void *p, size_t n)
{
    reused_at = p, reused_n = n;
    return 0;
}

/* A finished coroutine's stack of the default size goes to the thread's
 * pool with its pages given back to the OS, and is said to be written
 * again (the OS table's reuse) before the next coroutine runs on it. */
GB_TEST(a_pooled_stack_is_given_back_to_the_os_and_told_before_it_is_used_again)
{
    gb_leave(gb_enter()); /* the OS table filled in */
    real_release = gb__os.release;
    gb__os.release = record_release;
    gb__os.reuse = record_reuse;
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    CHECK(gb_coro_resume(c));
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    size_t usable = gb__round_up(GB_CORO_STACK_DEFAULT, gb__os.page_size);
    CHECK(released_at != NULL);
    CHECK_EQ(released_n, usable);
    CHECK_EQ(gbt_stats().stacks_pooled, 1);
    CHECK(reused_at == NULL);
    gb_coro *d = gb_coro_new(yield_once, NULL, 0);
    CHECK(reused_at == released_at);
    CHECK_EQ(reused_n, usable);
    CHECK_EQ(gbt_stats().stacks_pooled, 0);
    gb_coro_free(d);
    gb__os.release = real_release;
    gb__os.reuse = NULL;
}

/* With the mapping budget spent, a coroutine's stack comes from malloc,
 * counted as a fallback of the budget's. */
GB_TEST(a_stack_past_the_mapping_budget_comes_from_malloc_and_is_counted)
{
    gb_options o;
    gb_options_init(&o);
    o.map_budget = 1; /* a stack takes two mappings: its guard and itself */
    gb_init(&o);
    gb_stats s0 = gbt_stats();
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.fallbacks_budget - s0.fallbacks_budget, 1);
    CHECK_EQ(s.fallbacks_mmap, s0.fallbacks_mmap);
    CHECK(s.bytes_heap - s0.bytes_heap >= GB_CORO_STACK_DEFAULT);
    CHECK(gb_coro_resume(c));
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
    CHECK_EQ(gbt_stats().bytes_heap, s0.bytes_heap);
}

/* A stack size asked for is rounded up to whole pages, with one guard page
 * below it: what is mapped, and counted, is that much. */
GB_TEST(a_stack_size_is_rounded_up_to_whole_pages_with_a_guard_below)
{
    gb_leave(gb_enter()); /* the OS table filled in */
    size_t page = gb__os.page_size;
    gb_stats s0 = gbt_stats();
    gb_coro *c = gb_coro_new(yield_once, NULL, 10 * page + 1);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.bytes_mapped - s0.bytes_mapped, 11 * page + page);
    CHECK_EQ(s.mappings - s0.mappings, 2); /* the guard and the stack */
    gb_coro_free(c);
    CHECK_EQ(gbt_stats().bytes_mapped, s0.bytes_mapped);
}

/* ------------------------------------------------ a resumer thawed again */

typedef struct thaw_case {
    gb_coro *b;
    uintptr_t shared; /* B's allocation in R, encoded, while A takes it */
    size_t retired_after_leave;
    int read_back;
} thaw_case;

static void thaw_b(void *arg)
{
    thaw_case *k = arg;
    /* A region left at once: its try reads A's frozen stack, whose
     * summary is made now, before A holds any pointer into R. */
    gb_region *r0 = gb_enter();
    memset(gb_alloc(64), 1, 64);
    gb_leave(r0);
    gb_region *r = gb_enter();
    unsigned char *x = gb_alloc(64);
    memset(x, 0x5a, 64);
    k->shared = (uintptr_t)x ^ WIT_KEY;
    x = NULL;
    gb_coro_yield(); /* A runs again, and takes the pointer */
    gb_leave(r);     /* tried against A's stack as it is now */
    k->retired_after_leave = gbt_stats().regions_retired;
}

static void thaw_a(void *arg)
{
    thaw_case *k = arg;
    CHECK(gb_coro_resume(k->b));
    const unsigned char *volatile p = (const unsigned char *)(k->shared ^ WIT_KEY);
    k->shared = 0;
    CHECK(!gb_coro_resume(k->b));
    k->read_back = p[63];
}

/* A coroutine that resumed another and runs again when that one yields is
 * thawed: what was read of its stack while it was frozen is stale, and
 * the next try reads it afresh, finding the pointer it took since. */
GB_TEST(a_resumer_that_runs_again_is_read_afresh_at_the_next_try)
{
    thaw_case k = {0};
    k.b = gb_coro_new(thaw_b, &k, 0);
    gb_coro *a = gb_coro_new(thaw_a, &k, 0);
    CHECK(!gb_coro_resume(a));
    CHECK_EQ(k.retired_after_leave, 1); /* A's pointer pins R */
    CHECK_EQ(k.read_back, 0x5a);
    gb_coro_free(a);
    gb_coro_free(k.b);
    gb_sweep();
    CHECK_EQ(gbt_stats().regions_retired, 0);
}

/* A suspended coroutine's stack is read once between two of its runs:
 * the regions left meanwhile ask the summary made at the first. */
GB_TEST(a_suspended_stack_is_read_once_between_two_of_its_runs)
{
    gb_coro *c = gb_coro_new(yield_once, NULL, 0);
    CHECK(gb_coro_resume(c));
    uint64_t s0 = gbt_stats().pin_words_scanned, probes = gbt_stats().pin_probes;
    for (int i = 0; i < 3; i++) {
        gb_region *r = gb_enter();
        memset(gb_alloc(64), 1, 64);
        gb_leave(r);
        CHECK_EQ(gbt_stats().regions_retired, 0);
    }
    uint64_t once = gbt_stats().pin_words_scanned - s0;
    CHECK(once > 0);
    CHECK(once < GB_CORO_STACK_DEFAULT / sizeof(uintptr_t)); /* one read of its frozen words */
    gb_region *r = gb_enter();
    memset(gb_alloc(64), 1, 64);
    gb_leave(r);
    CHECK_EQ(gbt_stats().pin_words_scanned - s0, once);
    /* Each of the four regions' blocks looked up in the summary. */
    CHECK(gbt_stats().pin_probes - probes >= 4);
    CHECK(!gb_coro_resume(c));
    gb_coro_free(c);
}

static void resume_null(void)
{
    gb_coro_resume(NULL);
}

static void new_without_function(void)
{
    gb_coro_new(NULL, NULL, 0);
}

/* A stack as large as the address space less a page: with its guard page
 * it overflows a size_t. */
static void new_with_a_stack_past_the_address_space(void)
{
    gb_leave(gb_enter());
    gb_coro_new(yield_once, NULL, SIZE_MAX - gb__os.page_size + 1);
}

GB_TEST(a_null_coroutine_a_null_function_and_an_impossible_stack_are_named)
{
    gbt_expect_death(resume_null, "gb_coro_resume: NULL coroutine");
    gbt_expect_death(new_without_function, "gb_coro_new: NULL function");
    gbt_expect_death(new_with_a_stack_past_the_address_space, "gb_coro_new: size overflows");
}

/* The overflow handler takes SIGBUS as well as SIGSEGV: macOS reports a
 * touch of a guard page as SIGBUS. */
GB_TEST(the_overflow_handler_takes_sigbus_as_well_as_sigsegv)
{
    GBT_SKIP_IF(GBT_SANITIZED, "the sanitizers take SIGSEGV and SIGBUS themselves");
    gb_coro_free(gb_coro_new(yield_once, NULL, 0));
    struct sigaction segv, bus;
    CHECK_EQ(sigaction(SIGSEGV, NULL, &segv), 0);
    CHECK_EQ(sigaction(SIGBUS, NULL, &bus), 0);
    CHECK(segv.sa_flags & SA_SIGINFO);
    CHECK(bus.sa_flags & SA_SIGINFO);
    CHECK(bus.sa_sigaction == segv.sa_sigaction);
}
