/* handoff.c -- regions handed from one thread to another:
 * gb_region_detach, gb_try_region_detach, gb_region_attach.
 *
 * What travels (blocks, kept blocks, arenas, the limit, the counters),
 * what each thread finds with gb_region_of, where the memory goes back,
 * the descriptor's slot coming back to the page it lives on, thread exit
 * on either side, pinning, the misuse each entry point names, and four
 * threads passing regions round-robin (run under ThreadSanitizer by the
 * tsan preset, the race check).
 */
#include "common.h"
#include "gbtest.h"
#include "giveback.h"
#include "handles.h"
#include "internal.h"
#include "scenarios.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

/* Runs fn(arg) on a thread of its own and waits for it. */
static void *on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    void *ret;
    CHECK(pthread_create(&th, NULL, fn, arg) == 0);
    CHECK(pthread_join(th, &ret) == 0);
    return ret;
}

/* A list of nodes filling about `bytes` of a region, with a map whose
 * arena is bound to the region. */
typedef struct node {
    struct node *next;
    uint64_t value;
    unsigned char pad[240];
} node;

typedef struct work {
    gb_region *r;
    node *head;
    gb_map *map;
    size_t count;
    uint64_t sum;
} work;

static void fill(work *w, size_t bytes)
{
    w->head = NULL;
    w->count = bytes / sizeof(node);
    w->sum = 0;
    for (size_t i = 0; i < w->count; i++) {
        node *n = gb_alloc(sizeof *n);
        n->value = i * 2654435761u;
        memset(n->pad, (int)(i & 0xff), sizeof n->pad);
        n->next = w->head;
        w->head = n;
        w->sum += n->value;
    }
    w->map = gb_map_new();
    for (uint64_t k = 0; k < 5000; k++)
        gb_map_put(w->map, k, k + 7);
    gb_map_compact(w->map);
}

/* Walks w's list on the calling thread: every node is found in w->r by
 * gb_region_of, holds what fill wrote, and the map reads back. */
static void walk(const work *w)
{
    uint64_t sum = 0;
    size_t n = 0;
    for (const node *x = w->head; x; x = x->next, n++) {
        CHECK(gb_region_of(x) == w->r);
        CHECK(x->pad[0] == x->pad[sizeof x->pad - 1]);
        sum += x->value;
    }
    CHECK_EQ(n, w->count);
    CHECK_EQ(sum, w->sum);
    uint64_t v;
    CHECK(gb_map_get(w->map, 4999, &v) && v == 5006);
    CHECK(gb_region_of(w->map) == w->r);
}

static void *produce(void *arg)
{
    work *w = arg;
    w->r = gb_enter();
    fill(w, 16 * MIB);
    gb_region_detach(w->r);
    /* In flight: in no thread's index, and off this context's stack. */
    CHECK(gb_region_of(w->head) == NULL);
    CHECK(gb_current() == NULL);
    CHECK_EQ(gbt_stats().regions_in_flight, 1);
    return NULL;
}

static void *consume(void *arg)
{
    work *w = arg;
    gb_region_attach(w->r);
    CHECK(gb_current() == w->r);
    CHECK_EQ(gbt_stats().regions_in_flight, 0);
    walk(w);
    /* It is this thread's now: it allocates, grows in place, and leaves. */
    char *more = gb_alloc(3 * MIB);
    memset(more, 1, 3 * MIB);
    CHECK(gb_region_of(more + 3 * MIB - 1) == w->r);
    more = gb_realloc(more, 3 * MIB, 5 * MIB);
    CHECK(gb_region_of(more + 5 * MIB - 1) == w->r);
    CHECK(gb_region_bytes(w->r) >= 21 * MIB);
    gb_map_put(w->map, 9999, 1);
    gb_leave(w->r);
    CHECK(gb_region_of(w->head) == NULL);
    return NULL;
}

GB_TEST(a_region_filled_on_one_thread_is_found_used_and_left_on_another)
{
    work w;
    on_thread(produce, &w);
    on_thread(consume, &w);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.handoffs, 1);
    gbt_check_all_given_back();
}

GB_TEST(a_region_in_flight_is_found_by_no_thread_until_it_is_attached)
{
    gb_region *r = gb_enter();
    int *p = gb_alloc(sizeof *p);
    *p = 42;
    gb_region_detach(r);
    CHECK(gb_region_of(p) == NULL);
    CHECK_EQ(gb_depth(), 0);
    CHECK_EQ(gbt_stats().regions_live, 1);
    gb_region_attach(r); /* the same thread may take it back */
    CHECK(gb_region_of(p) == r);
    CHECK(*p == 42);
    gb_leave(r);
    gbt_check_all_given_back();
}

GB_TEST(an_attached_region_is_the_innermost_above_the_ones_entered_before)
{
    work w;
    on_thread(produce, &w);
    gb_region *outer = gb_enter();
    gb_region_attach(w.r);
    CHECK_EQ(gb_depth(), 2);
    CHECK(gb_current() == w.r);
    void *p = gb_alloc(100);
    CHECK(gb_region_of(p) == w.r);
    walk(&w);
    gb_leave(w.r);
    CHECK(gb_current() == outer);
    gb_leave(outer);
    gbt_check_all_given_back();
}

/* Its limit and its kept blocks go with it. */
static void *limited_producer(void *arg)
{
    gb_region **out = arg;
    gb_region *r = gb_enter();
    gb_alloc(6 * MIB);
    gb_region_reset(r, 8 * MIB); /* kept, for the next allocations */
    gb_region_limit(r, 10 * MIB);
    gb_region_detach(r);
    *out = r;
    return NULL;
}

static void *limited_consumer(void *arg)
{
    gb_region *r = *(gb_region **)arg;
    gb_region_attach(r);
    size_t kept = gbt_stats().bytes_kept;
    CHECK(kept >= 6 * MIB);
    size_t mapped = gbt_stats().bytes_mapped;
    CHECK(gb_alloc(5 * MIB) != NULL); /* from the kept blocks: nothing new mapped */
    CHECK_EQ(gbt_stats().bytes_mapped, mapped);
    CHECK(gb_try_alloc(8 * MIB) == NULL); /* past the limit it brought */
    gb_leave(r);
    return NULL;
}

GB_TEST(a_region_takes_its_limit_and_kept_blocks_with_it)
{
    gb_region *r;
    on_thread(limited_producer, &r);
    on_thread(limited_consumer, &r);
    gbt_check_all_given_back();
}

/* ------------------------------------------------ thread exit, slots */

GB_TEST(a_region_in_flight_outlives_the_thread_that_detached_it)
{
    work w;
    on_thread(produce, &w); /* its thread has exited: its page is no thread's */
    gb_region_attach(w.r);
    walk(&w);
    gb_leave(w.r);
    /* The descriptor page went back with its last slot, on this thread. */
    gb_sweep();
    gbt_check_all_given_back();
}

/* The page of an exited thread goes back with its last lent slot, and its
 * directory entry to the pool with a floor above every generation it
 * issued: a thread that takes the entry next issues new handles on it, and
 * the handle of the region left is still known as left. */
static gb_region *orphaned_h;

static void *enter_on_the_pooled_entry(void *arg)
{
    (void)arg;
    gb_region *r = gb_enter();
    CHECK(r != orphaned_h);
    gb_region_bytes(orphaned_h);
    return NULL;
}

static void stale_handle_after_the_orphan_page_went(void)
{
    work w;
    on_thread(produce, &w);
    orphaned_h = w.r;
    gb_region_attach(w.r);
    gb_leave(w.r);
    on_thread(enter_on_the_pooled_entry, NULL);
}

GB_TEST(a_handle_left_on_an_exited_threads_page_stays_left_after_its_entry_is_reused)
{
    gbt_expect_death(stale_handle_after_the_orphan_page_went, "gb_region_bytes: region 0x");
    gbt_expect_death(stale_handle_after_the_orphan_page_went, "was already left");
}

/* The same with the slot at generation g (moved there by the test, as
 * tests/region.c does): left, it brings the exited thread's page to g + 1,
 * and past the last generation the entry is used up, never pooled. */
static uint64_t orphan_gen;

static void *enter_at_generation_and_detach(void *arg)
{
    gb_region *r = gbt_at_generation(gb_enter(), orphan_gen);
    gb_region_detach((gb_region *)r->handle);
    *(gb_region **)arg = (gb_region *)r->handle;
    return NULL;
}

static void *enter_once(void *arg)
{
    gb_region *r = gb_enter();
    *(uint32_t *)arg = gbt_entry_of(r);
    gb_leave(r);
    return NULL;
}

/* Leaves a region at generation g of an exited thread's page; returns the
 * entry the next thread's first page is on. */
static uint32_t entry_after_an_orphan_leave_at(uint64_t g, gb_region **h)
{
    orphan_gen = g;
    on_thread(enter_at_generation_and_detach, h);
    gb_region_attach(*h);
    gb_leave(*h);
    uint32_t e;
    on_thread(enter_once, &e);
    return e;
}

static gb_region *stale;

static void ask_about_stale(void)
{
    gb_region_bytes(stale);
}

GB_TEST(an_exited_threads_page_gives_its_entry_to_the_pool_unless_it_is_used_up)
{
    gb_region *h;
    CHECK_EQ(entry_after_an_orphan_leave_at(GB__GEN_MAX - 1, &h), gbt_entry_of(h));
    stale = h;
    gbt_expect_death(ask_about_stale, "was already left");
    CHECK(entry_after_an_orphan_leave_at(GB__GEN_MAX, &h) != gbt_entry_of(h));
    stale = h;
    gbt_expect_death(ask_about_stale, "was already left");
}

/* The pool keeps what it held when an exited thread's entry joins it:
 * the two threads that enter next take that entry, then the one pooled
 * before it. */
static void *enter_then_another_thread(void *arg)
{
    gb_region *r = gb_enter();
    on_thread(enter_once, arg);
    gb_leave(r);
    return NULL;
}

GB_TEST(an_exited_threads_entry_joins_the_pool_before_what_it_held)
{
    work w;
    on_thread(produce, &w);
    uint32_t pooled;
    on_thread(enter_once, &pooled); /* its entry goes to the pool at its exit */
    gb_region_attach(w.r);
    gb_leave(w.r); /* the exited producer's page goes, its entry to the pool */
    uint32_t second;
    on_thread(enter_then_another_thread, &second);
    CHECK_EQ(second, pooled);
}

static void attach_null(void)
{
    gb_region_attach(NULL);
}

static void *attach_and_exit(void *arg)
{
    gb_region_attach(((work *)arg)->r);
    walk(arg);
    return NULL; /* exits holding it */
}

static void attached_left_at_exit(void)
{
    work w;
    on_thread(produce, &w);
    on_thread(attach_and_exit, &w);
    gb_sweep();
    gbt_check_all_given_back();
}

GB_TEST(a_thread_that_exits_holding_an_attached_region_leaves_it)
{
    char err[4096];
    int st = gbt_in_child_capturing(attached_left_at_exit, err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(strstr(err, "a thread exited with 1 region entered; it was left at its exit"));
}

/* Many regions entered on one thread and left on another: their slots
 * come back to the pages of the thread that entered them (at its next
 * gb_enter), so its pages do not grow with the regions handed over. */
typedef struct relay {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    gb_region *slot;
    int done;
} relay;

static void relay_put(relay *q, gb_region *r)
{
    pthread_mutex_lock(&q->lock);
    while (q->slot)
        pthread_cond_wait(&q->cond, &q->lock);
    q->slot = r;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

static gb_region *relay_take(relay *q)
{
    pthread_mutex_lock(&q->lock);
    while (!q->slot && !q->done)
        pthread_cond_wait(&q->cond, &q->lock);
    gb_region *r = q->slot;
    q->slot = NULL;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return r;
}

static void relay_close(relay *q)
{
    pthread_mutex_lock(&q->lock);
    q->done = 1;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

#define RELAYED 5000

static void *relay_consumer(void *arg)
{
    relay *q = arg;
    gb_region *r;
    while ((r = relay_take(q))) {
        gb_region_attach(r);
        uint32_t *p = gb_alloc(sizeof *p);
        *p = 7;
        gb_leave(r);
    }
    return NULL;
}

GB_TEST(slots_freed_on_another_thread_come_back_to_their_page)
{
    relay q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, relay_consumer, &q) == 0);
    size_t most = 0;
    for (int i = 0; i < RELAYED; i++) {
        gb_region *r = gb_enter();
        gb_alloc(100);
        gb_region_detach(r);
        relay_put(&q, r);
        size_t entries = gb__handle_entries_used();
        most = entries > most ? entries : most;
    }
    relay_close(&q);
    CHECK(pthread_join(th, NULL) == 0);
    /* One page holds 500 descriptors or so: 5,000 regions handed over
     * would take ten or more pages if their slots did not come back. */
    CHECK(most <= 3);
    gb_sweep();
    gbt_check_all_given_back();
}

/* A producer's regions, left by a consumer: their blocks go back to the
 * producer's cache, within the process's bound, so that its next region
 * reuses them instead of mapping and faulting every block afresh, and the
 * consumer's cache does not fill the bound with blocks it never reuses. */
static void *leave_relayed(void *arg)
{
    gb_region *r = *(gb_region **)arg;
    gb_region_attach(r);
    gb_leave(r);
    return NULL;
}

static gb_region *filled_and_detached(size_t bytes)
{
    gb_region *r = gb_enter();
    for (size_t done = 0; done < bytes; done += 4096)
        memset(gb_alloc(4096), 3, 4096);
    gb_region_detach(r);
    return r;
}

GB_TEST(blocks_left_on_another_thread_go_back_to_the_cache_of_the_thread_that_entered_them)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.huge = GB_HUGE_OFF; /* blocks of 4 KiB to 1 MiB, each of a cached size */
    o.cache_bytes = 8 * MIB;
    gb_init(&o);
    gb_region *r = filled_and_detached(4 * MIB);
    size_t blocks = gbt_stats().blocks_live;
    CHECK(blocks >= 4);
    on_thread(leave_relayed, &r);
    gb_stats s = gbt_stats();
    CHECK(s.bytes_cached >= 4 * MIB); /* given to this thread, reserved within the bound */
    CHECK(s.bytes_cached <= 8 * MIB);
    /* The next region of this thread takes them: hits, and nothing mapped. */
    uint64_t hits = s.cache_hits;
    size_t held = s.bytes_mapped + s.bytes_cached;
    gb_region *again = gb_enter();
    for (size_t done = 0; done < 4 * MIB; done += 4096)
        memset(gb_alloc(4096), 4, 4096);
    s = gbt_stats();
    CHECK(s.cache_hits >= hits + blocks - 1);
    /* One mapping afresh at most: the slab of the region's first block
     * (small.c), which went back to the OS when that block, its only
     * unit in use, was given back on the other thread. A slab is 256
     * pages: 1 MiB of 4 KiB pages, 4 MiB of macOS's 16 KiB. */
    CHECK(s.bytes_mapped + s.bytes_cached <= held + GB__SLAB_UNITS * gb__os.page_size);
    gb_leave(again);
    gb_sweep();
    gbt_check_all_given_back();
    /* The bound is whole again: what was reserved for the blocks given
     * over was given back when they were taken in, so 6 MiB left here are
     * cached. */
    gb_region *more = filled_and_detached(6 * MIB);
    gb_region_attach(more);
    gb_leave(more);
    CHECK(gbt_stats().bytes_cached >= 5 * MIB);
    gb_sweep();
    gbt_check_all_given_back();
}

/* Blocks given over up to the bound are all kept: each one's reservation
 * goes before it is put in the cache, else the last ones would find the
 * bound full of their own reservations and push out those put before. */
GB_TEST(blocks_given_over_up_to_the_cache_bound_are_all_kept)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.huge = GB_HUGE_OFF;
    o.cache_bytes = 7 * MIB + 512 * 1024;
    gb_init(&o);
    gb_region *r = filled_and_detached(6 * MIB + 512 * 1024);
    on_thread(leave_relayed, &r);
    gb_stats s = gbt_stats();
    size_t given = s.bytes_cached;
    /* Within a block (1 MiB at most) of the bound: the last one put
     * needs the reservations of the others gone. */
    CHECK(given <= o.cache_bytes && given + MIB > o.cache_bytes);
    gb_leave(gb_enter()); /* takes them in (and may keep a descriptor page) */
    s = gbt_stats();
    CHECK(s.bytes_cached >= given);
    gb_sweep();
    gbt_check_all_given_back();
}

static void *exit_after_entering(void *arg)
{
    *(gb_region **)arg = filled_and_detached(4 * MIB);
    return NULL;
}

GB_TEST(blocks_of_a_region_whose_thread_exited_go_back_with_the_thread_that_leaves_it)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.huge = GB_HUGE_OFF;
    o.cache_bytes = 8 * MIB;
    gb_init(&o);
    gb_region *r;
    on_thread(exit_after_entering, &r);
    size_t cached = gbt_stats().bytes_cached;
    gb_region_attach(r);
    gb_leave(r);
    /* No thread to give them to: they are this thread's, cached or unmapped. */
    CHECK(gbt_stats().bytes_cached >= cached);
    gb_sweep();
    gbt_check_all_given_back();
    /* And the bound is whole again: what was reserved for a thread that
     * was gone was given back, so 6 MiB left here are cached. */
    gb_region *again = filled_and_detached(6 * MIB);
    gb_region_attach(again);
    gb_leave(again);
    CHECK(gbt_stats().bytes_cached >= 5 * MIB);
    gb_sweep();
    gbt_check_all_given_back();
}

/* Ten thousand regions in flight at once share the table of lent regions'
 * buckets: each is found by its own handle, attached, left (out of the
 * table from the middle of a chain as well as its head), and the handles
 * stay known as left. */
#define MANY 10000

static gb_region *many[MANY];
static int *vals[MANY];

/* Region i, attached here: its value found in it, from this thread. */
static void attach_many(int i)
{
    gb_region_attach(many[i]);
    CHECK(gb_region_of(vals[i]) == many[i] && *vals[i] == i);
    gb_leave(many[i]);
}

static void *attach_and_leave_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < MANY; i += 2)
        attach_many(i);
    for (int i = MANY - 1; i > 0; i -= 2)
        attach_many(i);
    return NULL;
}

GB_TEST(ten_thousand_regions_in_flight_are_each_found_by_their_handle)
{
    for (int i = 0; i < MANY; i++) {
        many[i] = gb_enter();
        vals[i] = gb_alloc(sizeof(int));
        *vals[i] = i;
        gb_region_detach(many[i]);
    }
    CHECK_EQ(gbt_stats().regions_in_flight, MANY);
    on_thread(attach_and_leave_many, NULL);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.regions_in_flight, 0);
    CHECK_EQ(s.regions_live, 0);
    gb_sweep();
    gbt_check_all_given_back();
}

/* A producer that exits after its region was left on another thread,
 * without entering again: the slot freed there comes back to its page at
 * its exit, and the page, empty, goes back then, its directory entry to
 * the pool. A region entered and left below the one handed over leaves
 * the page a free slot besides, so that the exit's checks (GB_CHECK=2)
 * read a page whose slots freed elsewhere are fewer than its free ones. */
static void *produce_hand_over_and_exit(void *arg)
{
    relay *q = arg;
    gb_region *below = gb_enter();
    gb_region *r = gb_enter();
    gb_alloc(1000);
    gb_region_detach(r);
    gb_leave(below);
    relay_put(q, r);
    pthread_mutex_lock(&q->lock);
    while (!q->done) /* the consumer has left it */
        pthread_cond_wait(&q->cond, &q->lock);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static void hand_over_from_a_thread_that_exits(void)
{
    relay q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, produce_hand_over_and_exit, &q) == 0);
    gb_region *r = relay_take(&q);
    gb_region_attach(r);
    gb_leave(r);
    relay_close(&q);
    CHECK(pthread_join(th, NULL) == 0);
}

GB_TEST(a_producer_that_exits_after_its_region_was_left_elsewhere_gives_its_page_back)
{
    gb_init(NULL);
    gb_leave(gb_enter()); /* this thread's own page and entry, first */
    hand_over_from_a_thread_that_exits();
    /* The next producers take the entry the first one gave the pool. */
    uint32_t entries = gb__handle_entries_used();
    hand_over_from_a_thread_that_exits();
    hand_over_from_a_thread_that_exits();
    CHECK_EQ(gb__handle_entries_used(), entries);
    gb_sweep();
    gbt_check_all_given_back();
}

/* --------------------------------------------------------------- pinning */

static void pinned_detach(void)
{
    gb_region *r = gb_enter();
    gb_coro *c = gb_coro_new(gbs_hold_forever, gb_alloc(64), 0);
    gb_coro_resume(c);
    gb_region_detach(r);
}

GB_TEST(detaching_a_region_a_suspended_coroutine_points_into_is_refused)
{
    gb_region *r = gb_enter();
    gb_coro *c = gb_coro_new(gbs_hold_forever, gb_alloc(64), 0);
    gb_coro_resume(c);
    gb_coro *by = NULL;
    CHECK(!gb_try_region_detach(r, &by));
    CHECK(by == c);
    CHECK(gb_current() == r); /* still entered, still this context's */
    CHECK_EQ(gbt_stats().regions_in_flight, 0);
    gb_coro_free(c);
    CHECK(gb_try_region_detach(r, &by));
    CHECK(by == NULL);
    gb_region_attach(r);
    gb_leave(r);
    gb_sweep();
    gbt_check_all_given_back();
    gbt_expect_death(pinned_detach, "gb_region_detach: region 0x");
    gbt_expect_death(pinned_detach, "is pinned: the suspended coroutine 0x");
}

/* ------------------------------------------------------------------ misuse */

static gb_region *in_flight(void)
{
    gb_region *r = gb_enter();
    gb_alloc(10);
    gb_region_detach(r);
    return r;
}

static void detach_not_innermost(void)
{
    gb_region *r = gb_enter();
    gb_enter();
    gb_region_detach(r);
}

static void detach_twice(void)
{
    gb_region_detach(in_flight());
}

static void attach_held(void)
{
    gb_region_attach(gb_enter());
}

static void attach_twice(void)
{
    gb_region *r = in_flight();
    gb_region_attach(r);
    gb_region_attach(r);
}

static gb_region *shared_r;

static void *attach_shared(void *arg)
{
    (void)arg;
    gb_region_attach(shared_r);
    return NULL;
}

static void attach_twice_on_two_threads(void)
{
    shared_r = in_flight();
    pthread_t th;
    pthread_create(&th, NULL, attach_shared, NULL);
    pthread_join(th, NULL); /* that thread exited holding it: it was left */
    gb_region_attach(shared_r);
}

static pthread_mutex_t producer_hold = PTHREAD_MUTEX_INITIALIZER;

/* Enters and detaches a region, hands it over through the relay arg,
 * then stays alive (its pages with it) until the process ends. */
static void *produce_and_stay(void *arg)
{
    relay_put(arg, in_flight());
    pthread_mutex_lock(&producer_hold);
    return NULL;
}

static void *attach_and_leave_shared(void *arg)
{
    (void)arg;
    gb_region_attach(shared_r);
    gb_leave(shared_r);
    return NULL;
}

static void attach_after_a_third_thread_left_it(void)
{
    relay made = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};
    pthread_mutex_lock(&producer_hold);
    pthread_t a, b;
    pthread_create(&a, NULL, produce_and_stay, &made);
    shared_r = relay_take(&made);
    pthread_create(&b, NULL, attach_and_leave_shared, NULL);
    pthread_join(b, NULL);
    gb_region_attach(shared_r);
}

static void *attach_shared_and_wait(void *arg)
{
    gb_region_attach(shared_r);
    pthread_mutex_lock(arg);
    pthread_mutex_unlock(arg);
    return NULL;
}

static void attach_while_another_thread_holds_it(void)
{
    static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
    shared_r = in_flight();
    pthread_mutex_lock(&hold);
    pthread_t th;
    pthread_create(&th, NULL, attach_shared_and_wait, &hold);
    while (gbt_stats().regions_in_flight)
        sched_yield();
    gb_region_attach(shared_r);
}

static void attach_left(void)
{
    gb_region *r = gb_enter();
    gb_leave(r);
    gb_region_attach(r);
}

/* A handle of a region left, whose slot another region took and lent. */
static void stale_handle_of_a_lent_slot(void)
{
    gb_region *a = gb_enter();
    gb_leave(a);
    gb_region *b = gb_enter(); /* the same slot, the next generation */
    uintptr_t where = ((uintptr_t)1 << GB__H_GEN_SHIFT) - 1;
    CHECK(((uintptr_t)a & where) == ((uintptr_t)b & where));
    gb_region_detach(b);
    gb_region_bytes(a);
}

static void attach_bogus(void)
{
    gb_region_attach((gb_region *)(uintptr_t)0x1234);
}

static void alloc_in_flight(void)
{
    gb_alloc_in(in_flight(), 8);
}

static void reset_in_flight(void)
{
    gb_region_reset(in_flight(), 0);
}

static void leave_in_flight(void)
{
    gb_leave(in_flight());
}

static void leave_to_in_flight(void)
{
    gb_leave_to(in_flight());
}

static void *alloc_in_shared(void *arg)
{
    (void)arg;
    gb_alloc_in(shared_r, 8);
    return NULL;
}

static void alloc_in_flight_on_another_thread(void)
{
    shared_r = in_flight();
    pthread_t th;
    pthread_create(&th, NULL, alloc_in_shared, NULL);
    pthread_join(th, NULL);
}

static void coro_enters_and_yields(void *arg)
{
    *(gb_region **)arg = gb_enter();
    gb_coro_yield();
}

static void detach_suspended_coroutines_region(void)
{
    gb_region *r = NULL;
    gb_coro *c = gb_coro_new(coro_enters_and_yields, &r, 0);
    gb_coro_resume(c);
    gb_region_detach(r);
}

static gb_map *map_in_flight(bool compacted)
{
    gb_region *r = gb_enter();
    gb_map *m = gb_map_new();
    for (uint64_t k = 0; k < 100; k++)
        gb_map_put(m, k, k);
    if (compacted)
        gb_map_compact(m);
    gb_region_detach(r);
    return m;
}

static void grow_map_in_flight(void)
{
    gb_map *m = map_in_flight(false);
    for (uint64_t k = 100; k < 10000; k++)
        gb_map_put(m, k, k);
}

static void grow_compacted_map_in_flight(void)
{
    gb_map *m = map_in_flight(true);
    for (uint64_t k = 100; k < 10000; k++)
        gb_map_put(m, k, k);
}

static void compact_vec_in_flight(void)
{
    gb_region *r = gb_enter();
    gb_vec *v = gb_vec_new(8);
    gb_region_detach(r);
    gb_vec_compact(v);
}

static gb_map *shared_map;

static void *attach_shared_holding(void *arg)
{
    gb_region_attach(shared_r);
    relay_put(arg, shared_r); /* says it holds it */
    pause(); /* holds it until the process ends */
    return NULL;
}

/* The thread that handed a map's region over grows the map while
 * another thread holds the region. */
static void grow_map_held_elsewhere(void)
{
    relay attached = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};
    gb_region *r = gb_enter();
    shared_map = gb_map_new();
    gb_region_detach(r);
    shared_r = r;
    pthread_t th;
    pthread_create(&th, NULL, attach_shared_holding, &attached);
    relay_take(&attached);
    for (uint64_t k = 0; k < 10000; k++)
        gb_map_put(shared_map, k, k);
}

GB_TEST(misuse_of_detach_and_attach_is_named)
{
    gbt_expect_death(grow_map_in_flight, "gb_map_put: the container's region 0x");
    gbt_expect_death(grow_map_in_flight, "is in flight (detached, not attached since)");
    gbt_expect_death(grow_compacted_map_in_flight, "gb_map_put: the container's region 0x");
    gbt_expect_death(grow_compacted_map_in_flight, "is in flight (detached, not attached since)");
    gbt_expect_death(compact_vec_in_flight, "gb_vec_compact: the container's region 0x");
    gbt_expect_death(grow_map_held_elsewhere, "gb_map_put: the container's region 0x");
    gbt_expect_death(grow_map_held_elsewhere, "is held by another thread; a container changes only on");
    gbt_expect_death(detach_not_innermost,
                     "gb_region_detach: region 0x");
    gbt_expect_death(detach_not_innermost, "is not the innermost region (1 regions entered after it");
    gbt_expect_death(detach_twice, "gb_region_detach: region 0x");
    gbt_expect_death(detach_twice, "is in flight: it was detached (gb_region_detach) and not attached since");
    gbt_expect_death(attach_held, "is not in flight: this thread holds it already");
    gbt_expect_death(attach_twice, "is not in flight: this thread holds it already");
    /* The first to attach it exited holding it, so it was left there. */
    gbt_expect_death(attach_twice_on_two_threads, "gb_region_attach: region 0x");
    gbt_expect_death(attach_twice_on_two_threads, "was already left");
    gbt_expect_death(attach_after_a_third_thread_left_it, "gb_region_attach: region 0x");
    gbt_expect_death(attach_after_a_third_thread_left_it,
                     "was entered by another thread, and this thread does not hold it");
    gbt_expect_death(attach_while_another_thread_holds_it,
                     "is held by another thread, which attached it (gb_region_attach)");
    gbt_expect_death(attach_left, "gb_region_attach: region 0x");
    gbt_expect_death(attach_left, "was already left");
    gbt_expect_death(attach_bogus, "gb_region_attach: 0x1234 is not a region handle");
    gbt_expect_death(attach_null, "gb_region_attach: NULL region");
    gbt_expect_death(stale_handle_of_a_lent_slot, "gb_region_bytes: region 0x");
    gbt_expect_death(stale_handle_of_a_lent_slot, "was already left");
    gbt_expect_death(alloc_in_flight, "gb_alloc_in: region 0x");
    gbt_expect_death(alloc_in_flight, "is in flight");
    gbt_expect_death(alloc_in_flight_on_another_thread, "gb_alloc_in: region 0x");
    gbt_expect_death(alloc_in_flight_on_another_thread, "is in flight");
    gbt_expect_death(reset_in_flight, "gb_region_reset: region 0x");
    gbt_expect_death(reset_in_flight, "is in flight");
    gbt_expect_death(leave_in_flight, "gb_leave: region 0x");
    gbt_expect_death(leave_in_flight, "is in flight");
    gbt_expect_death(leave_to_in_flight, "gb_leave_to: region 0x");
    gbt_expect_death(leave_to_in_flight, "is in flight");
    gbt_expect_death(detach_suspended_coroutines_region,
                     "gb_region_detach: region 0x");
    gbt_expect_death(detach_suspended_coroutines_region, "was entered by another coroutine, 0x");
}

/* ----------------------------------------------- four threads, round-robin */

#define RING 4
#define HOPS 40
#define TRAVELLERS 12

typedef struct traveller {
    gb_region *r;
    uint64_t *words;
    size_t nwords;
    int hops;
} traveller;

typedef struct ring_queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    traveller *items[TRAVELLERS];
    int n;
} ring_queue;

static ring_queue ring[RING];
static int ring_left; /* travellers not yet left; under ring[0].lock */

static void ring_push(int to, traveller *t)
{
    ring_queue *q = &ring[to];
    pthread_mutex_lock(&q->lock);
    q->items[q->n++] = t;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

static bool ring_all_left(void)
{
    pthread_mutex_lock(&ring[0].lock);
    bool done = ring_left == 0;
    pthread_mutex_unlock(&ring[0].lock);
    return done;
}

static traveller *ring_pop(int me)
{
    ring_queue *q = &ring[me];
    pthread_mutex_lock(&q->lock);
    while (q->n == 0) {
        pthread_mutex_unlock(&q->lock);
        if (ring_all_left())
            return NULL;
        pthread_mutex_lock(&q->lock);
        if (q->n == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 2000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&q->cond, &q->lock, &ts);
        }
    }
    traveller *t = q->items[--q->n];
    pthread_mutex_unlock(&q->lock);
    return t;
}

static void *ring_member(void *arg)
{
    int me = (int)(intptr_t)arg;
    traveller *t;
    while ((t = ring_pop(me))) {
        gb_region_attach(t->r);
        /* Every word written on earlier hops is there, and its own. */
        for (size_t i = 0; i < t->nwords; i++)
            CHECK_EQ(t->words[i], i * 31 + 7);
        CHECK(!t->words || gb_region_of(t->words) == t->r);
        /* Grow it on this thread: more words, in a fresh allocation. */
        size_t more = 512;
        uint64_t *w = gb_alloc((t->nwords + more) * sizeof *w);
        if (t->nwords)
            memcpy(w, t->words, t->nwords * sizeof *w);
        for (size_t i = t->nwords; i < t->nwords + more; i++)
            w[i] = i * 31 + 7;
        t->words = w;
        t->nwords += more;
        if (++t->hops == HOPS) {
            gb_leave(t->r);
            pthread_mutex_lock(&ring[0].lock);
            ring_left--;
            pthread_mutex_unlock(&ring[0].lock);
            continue;
        }
        gb_region_detach(t->r);
        ring_push((me + 1) % RING, t);
    }
    return NULL;
}

GB_TEST(four_threads_pass_regions_round_robin)
{
    static traveller ts[TRAVELLERS];
    for (int i = 0; i < RING; i++) {
        pthread_mutex_init(&ring[i].lock, NULL);
        pthread_cond_init(&ring[i].cond, NULL);
        ring[i].n = 0;
    }
    ring_left = TRAVELLERS;
    for (int i = 0; i < TRAVELLERS; i++) {
        ts[i].r = gb_enter();
        ts[i].words = NULL;
        ts[i].nwords = 0;
        ts[i].hops = 0;
        gb_region_detach(ts[i].r);
        ring_push(i % RING, &ts[i]);
    }
    pthread_t th[RING];
    for (int i = 0; i < RING; i++)
        CHECK(pthread_create(&th[i], NULL, ring_member, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < RING; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    gb_stats s = gbt_stats();
    CHECK_EQ(s.handoffs, (uint64_t)TRAVELLERS * HOPS);
    CHECK_EQ(s.regions_in_flight, 0);
    gb_sweep();
    gbt_check_all_given_back();
}
