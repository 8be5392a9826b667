/* threads.c -- eight threads use their own regions at once.
 *
 * Regions are per thread; what is shared (init, the counters, the mapping
 * budget, the list of failed unmaps) must hold under concurrent use. Run
 * under ThreadSanitizer by the tsan preset, this is also the race check.
 */
#include "gbtest.h"
#include "giveback.h"
#include "scenarios.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
