/* threads.c -- eight threads use their own regions at once.
 *
 * Regions are per thread; what is shared (init, the counters, the mapping
 * budget, the list of failed unmaps) must hold under concurrent use. Run
 * under ThreadSanitizer by the tsan preset, this is also the race check.
 */
#include "common.h"
#include "gbtest.h"
#include "giveback.h"
#include "internal.h"
#include "scenarios.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define THREADS 8

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int round = 0; round < 50; round++) {
        gb_region *outer = gb_enter();
        for (int i = 0; i < 200; i++) {
            seed = seed * 1103515245u + 12345u;
            size_t n = (seed >> 8) % 40000;
            unsigned char *p = gb_alloc(n);
            memset(p, (int)(seed & 0xff), n);
        }
        gb_region *inner = gb_enter();
        gb_map *m = gb_map_new();
        for (uint64_t k = 0; k < 500; k++)
            gb_map_put(m, k, k * 3);
        gb_map_compact(m);
        uint64_t v;
        if (!gb_map_get(m, 499, &v) || v != 1497)
            return (void *)1;
        gb_leave(inner);
        gb_leave(outer);
    }
    return NULL;
}

static void run_threads(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) == 0);
    for (int i = 0; i < THREADS; i++) {
        void *ret;
        CHECK(pthread_join(t[i], &ret) == 0);
        CHECK(ret == NULL);
    }
    gb_stats s;
    gb_stats_get(&s);
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.bytes_heap, 0);
    CHECK_EQ(s.bytes_meta, 0);
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.regions_live, 0);
    CHECK_EQ(s.blocks_live, 0);
    CHECK_EQ(s.arenas_live, 0);
    CHECK_EQ(s.bytes_cached, 0); /* each thread's cache went with it */
    CHECK(s.compactions >= THREADS * 50);
}

GB_TEST(eight_threads_map_source)
{
    setenv("GB_BLOCKS", "map", 1);
    run_threads();
}

GB_TEST(eight_threads_heap_source)
{
    setenv("GB_BLOCKS", "heap", 1);
    run_threads();
}

GB_TEST(eight_threads_small_budget)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.map_budget = 16;
    gb_init(&o);
    run_threads();
    gb_stats s;
    gb_stats_get(&s);
    CHECK(s.fallbacks_budget > 0);
}

static void *coroutines_then_exit(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        gb_coro *c = gb_coro_new(gbs_hold_forever, NULL, 0);
        gb_coro_resume(c);
        gb_coro_free(c);
    }
    return NULL;
}

GB_TEST(a_thread_that_made_coroutines_leaves_no_stacks_behind)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, coroutines_then_exit, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    gb_stats s;
    gb_stats_get(&s);
    CHECK_EQ(s.stacks_pooled, 0);
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.mappings_cached, 0);
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.bytes_meta, 0);
}

/* ------------------------------------------ regions left at thread exit
 *
 * A thread that exits with regions entered on its own stack has them left
 * at its exit, and says so on stderr. Each case runs in a child whose
 * stderr is read back; the child's checks make it exit 1. */

/* Runs fn in a child; returns its exit status and its stderr in out. */
static int run_capturing_stderr(void (*fn)(void), char *out, size_t cap)
{
    int status = gbt_in_child_capturing(fn, out, cap);
    fprintf(stderr, "the child said:\n%s", out);
    return status;
}

static void *enter_two_and_exit(void *arg)
{
    (void)arg;
    gb_enter();
    memset(gb_alloc(100000), 1, 100000);
    gb_enter();
    memset(gb_alloc(3000), 2, 3000);
    memset(gb_alloc(2 * 1024 * 1024), 3, 2 * 1024 * 1024);
    return NULL;
}

static void exit_with_two_regions(void)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, enter_two_and_exit, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    gb_stats s;
    gb_stats_get(&s);
    CHECK_EQ(s.regions_live, 0);
    CHECK_EQ(s.blocks_live, 0);
    /* The thread's cache went with it; nothing else of it stays. */
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.mappings_cached, 0);
    gb_sweep();
    gb_stats_get(&s);
    CHECK_EQ(s.bytes_mapped, 0);
    CHECK_EQ(s.bytes_heap, 0);
    CHECK_EQ(s.bytes_meta, 0);
    CHECK_EQ(s.mappings, 0);
    CHECK_EQ(s.bytes_small, 0);
    CHECK_EQ(s.slabs, 0);
}

GB_TEST(a_thread_that_exits_with_regions_entered_gives_them_back)
{
    char out[4096];
    int status = run_capturing_stderr(exit_with_two_regions, out, sizeof out);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    CHECK(strstr(out, "giveback: a thread exited with 2 regions entered; they were left at its "
                      "exit") != NULL);
}

/* The thread leaves a region that its own suspended coroutine points into
 * (retired), then exits without freeing the coroutine: the coroutine can
 * never run again, so the region is freed at the exit. The coroutine
 * itself and its stack stay (it was never freed). */
static void *retire_and_exit(void *arg)
{
    (void)arg;
    gb_region *r = gb_enter();
    void *p = gb_alloc(200000);
    gb_coro *c = gb_coro_new(gbs_hold_once, p, 0);
    gb_coro_resume(c);
    gb_leave(r);
    gb_stats s;
    gb_stats_get(&s);
    if (s.regions_retired != 1)
        return (void *)1;
    gb_enter(); /* and one left at the exit */
    return NULL;
}

static void exit_with_a_retired_region(void)
{
    pthread_t t;
    void *ret;
    CHECK_EQ(pthread_create(&t, NULL, retire_and_exit, NULL), 0);
    CHECK_EQ(pthread_join(t, &ret), 0);
    CHECK(ret == NULL);
    gb_stats s;
    gb_stats_get(&s);
    CHECK_EQ(s.regions_live, 0);
    CHECK_EQ(s.regions_retired, 0);
    CHECK_EQ(s.bytes_retired, 0);
    CHECK_EQ(s.blocks_live, 0);
    CHECK_EQ(s.coros_live, 1);
}

GB_TEST(a_thread_that_exits_frees_the_regions_its_coroutines_pinned)
{
    char out[4096];
    int status = run_capturing_stderr(exit_with_a_retired_region, out, sizeof out);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    CHECK(strstr(out, "giveback: a thread exited with 1 region entered; it was left at its exit") !=
          NULL);
}

/* The region the thread still has entered when it exits is the one its
 * own suspended coroutine points into: the exit leaves it, the coroutine
 * pins it (retired), and since the coroutine can never run again the
 * retired region must then be freed too. Leaving has to come before
 * freeing what is retired, or the region retires after the last chance to
 * free it and every byte of it (blocks, solo block, arena) stays for the
 * life of the process. After the join only the coroutine's stack may be
 * held: the coroutine itself was never freed. */
enum { PINNED_AT_EXIT_SOLO = 3 << 20, PINNED_AT_EXIT_ELEMS = 20000 };

typedef struct pinned_at_exit {
    size_t stack_bytes;   /* bytes_mapped + bytes_heap the coroutine's stack took */
    size_t stack_maps;    /* and mappings */
    size_t region_bytes;  /* the region's blocks, and its vec's arena */
    size_t arena_bytes;
    uint64_t retirements; /* before the exit */
} pinned_at_exit;

static void *pin_the_entered_region_and_exit(void *arg)
{
    pinned_at_exit *k = arg;
    gb_region *r = gb_enter();
    unsigned char *p = gb_alloc(100000);
    memset(p, 1, 100000);
    memset(gb_alloc(PINNED_AT_EXIT_SOLO), 2, PINNED_AT_EXIT_SOLO);
    gb_vec *v = gb_vec_new(sizeof(uint64_t));
    for (uint64_t i = 0; i < PINNED_AT_EXIT_ELEMS; i++)
        gb_vec_push(v, &i);
    gb_vec_compact(v);
    k->region_bytes = gb_region_bytes(r);
    k->arena_bytes = gb_vec_arena_bytes(v);
    gb_stats s;
    gb_stats_get(&s);
    size_t held = s.bytes_mapped + s.bytes_heap, maps = s.mappings;
    gb_coro *c = gb_coro_new(gbs_hold_once, p, 0);
    gb_coro_resume(c); /* suspended, holding p */
    gb_stats_get(&s);
    k->stack_bytes = s.bytes_mapped + s.bytes_heap - held;
    k->stack_maps = s.mappings - maps;
    k->retirements = s.retirements;
    CHECK_EQ(s.regions_live, 1);
    CHECK_EQ(s.arenas_live, 1);
    return NULL; /* with r entered */
}

static void exit_with_the_pinned_region_entered(void)
{
    pinned_at_exit k;
    memset(&k, 0, sizeof k);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, pin_the_entered_region_and_exit, &k), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    fprintf(stderr, "the region held %zu bytes of blocks and %zu of arena; the stack %zu\n",
            k.region_bytes, k.arena_bytes, k.stack_bytes);
    CHECK(k.region_bytes >= PINNED_AT_EXIT_SOLO);
    CHECK(k.arena_bytes >= PINNED_AT_EXIT_ELEMS * sizeof(uint64_t));
    gb_stats s;
    gb_stats_get(&s);
    /* The exit's leave found the coroutine pointing into the region. */
    CHECK_EQ(s.retirements, k.retirements + 1);
    CHECK_EQ(s.regions_live, 0);
    CHECK_EQ(s.regions_retired, 0);
    CHECK_EQ(s.bytes_retired, 0);
    CHECK_EQ(s.blocks_live, 0);
    CHECK_EQ(s.arenas_live, 0);
    CHECK_EQ(s.coros_live, 1);
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.bytes_small, 0);
    /* Nothing but the stack: not a byte of the region's blocks or arena. */
    CHECK_EQ(s.bytes_mapped + s.bytes_heap, k.stack_bytes);
    CHECK_EQ(s.mappings, k.stack_maps);
}

GB_TEST(a_thread_that_exits_inside_the_region_its_coroutine_pins_gives_it_all_back)
{
    char out[4096];
    int status = run_capturing_stderr(exit_with_the_pinned_region_entered, out, sizeof out);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    CHECK(strstr(out, "giveback: a thread exited with 1 region entered; it was left at its exit") !=
          NULL);
}

/* ------------------------------------------ thread-locals gone first
 *
 * On Darwin a thread's thread-locals live in a block dyld frees (and
 * libmalloc zeroes) in a key destructor of its own, created before the
 * runtime's and so run before it: the runtime's exit hook must find the
 * thread's state whole without them. Here a key made before the runtime's
 * does the same to the runtime's one thread-local, in the same order, and
 * a thread that kept cached blocks, a pooled stack and a signal stack must
 * still give them all back. */

static pthread_key_t tls_eater;

static void eat_tls(void *arg)
{
    (void)arg;
    memset(&gb__tls, 0, sizeof gb__tls);
}

static void *keep_things_then_exit(void *arg)
{
    (void)arg;
    CHECK_EQ(pthread_setspecific(tls_eater, (void *)1), 0);
    gb_region *r = gb_enter();
    memset(gb_alloc(256 * 1024), 1, 256 * 1024);
    gb_leave(r);
    gb_coro *c = gb_coro_new(gbs_hold_once, NULL, 0);
    gb_coro_resume(c);
    gb_coro_resume(c);
    gb_coro_free(c);
    gb_stats s;
    gb_stats_get(&s);
    CHECK(s.bytes_cached > 0);
    CHECK(s.stacks_pooled > 0);
    return NULL;
}

static void tls_gone_before_the_hook(void)
{
    /* Before the runtime makes its key (with this thread's state). */
    CHECK_EQ(pthread_key_create(&tls_eater, eat_tls), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, keep_things_then_exit, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    gbt_check_all_given_back();
    gb_stats s;
    gb_stats_get(&s);
    CHECK_EQ(s.bytes_cached, 0);
    CHECK_EQ(s.mappings_cached, 0);
    CHECK_EQ(s.stacks_pooled, 0);
}

GB_TEST(a_thread_whose_thread_locals_go_first_still_gives_everything_back)
{
    CHECK_EQ(gbt_in_child(tls_gone_before_the_hook), 0);
}
