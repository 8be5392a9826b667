/* cache_bound.c -- the process's one cache bound, with another thread in
 * between.
 *
 * All threads' block caches together hold at most gb_options.cache_bytes,
 * and bytes_cached, read from any thread at any moment, says no more
 * (giveback.h: each gb_stats field is exact). Each thread takes and gives
 * its cached blocks without a lock, so the bound is kept by the order of
 * two steps on each side: a block is admitted by reserving its size before
 * it is counted, and leaves by being taken off the counter before its
 * reservation is given back. The runtime's cache hook (chunk.h) stops the
 * main thread between the two steps, and the test has a second thread
 * give a block back right there: the interleaving a stress run would hit
 * now and then, every time. bytes_cached is read at every step of both
 * threads.
 */
#include "common.h"
#include "internal.h"

#include <pthread.h>
#include <stdbool.h>

/* A block of 64 KiB: a class size (a power of two) at least map_min
 * whatever the page size, so the cache keeps it; the bound holds two. */
enum { BLOCK = 64 * 1024, BOUND = 2 * BLOCK };

/* ------------------------------------------------------- the other thread
 *
 * A thread that runs what the main thread hands it, one task at a time,
 * while the main thread waits: the main thread may hand it a task from
 * inside the hook, in the middle of one of its own cache steps. */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static void (*task)(void); /* for the other thread; NULL when it has none */
static bool quit;
static pthread_t main_thread, other;

static void *other_loop(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!quit) {
        if (!task) {
            pthread_cond_wait(&changed, &lock);
            continue;
        }
        void (*fn)(void) = task;
        pthread_mutex_unlock(&lock);
        fn();
        pthread_mutex_lock(&lock);
        task = NULL;
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
    return NULL; /* and the thread's exit gives its cache back */
}

/* Runs fn on the other thread and returns once it has returned. */
static void on_other(void (*fn)(void))
{
    pthread_mutex_lock(&lock);
    task = fn;
    pthread_cond_broadcast(&changed);
    while (task)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
}

static void other_start(void)
{
    main_thread = pthread_self();
    CHECK_EQ(pthread_create(&other, NULL, other_loop, NULL), 0);
}

static void other_stop(void)
{
    pthread_mutex_lock(&lock);
    quit = true;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    CHECK_EQ(pthread_join(other, NULL), 0);
}

/* The other thread's one block, taken and given back by its tasks. */
static gb__chunk other_block;

static void other_takes(void)
{
    other_block = gb__chunk_get(&gb__self()->mem.cache, BLOCK);
}

static void other_gives_back(void)
{
    gb__chunk_put(&gb__self()->mem.cache, other_block);
}

/* -------------------------------------------------------------- the hook */

static size_t most_cached; /* the most bytes_cached read at any step */
static int steps_seen;
static gb__cache_step armed; /* the step at which the other thread gives back; 0: none */
static int fired;
static size_t cached_when_fired; /* bytes_cached at the armed step, before the other thread's put */

/* Reads bytes_cached. Only one thread runs at a time in these tests (the
 * main thread waits in on_other while the other runs), and the hand-over
 * orders the two threads' writes. */
static void read_cached(void)
{
    size_t now = gbt_stats().bytes_cached;
    if (now > most_cached)
        most_cached = now;
    steps_seen++;
}

/* Every reading so far was within the bound. */
static void check_readings(void)
{
    if (most_cached > BOUND)
        gbt_fail(__FILE__, __LINE__, "bytes_cached read %zu bytes at a step, over the bound of %d", most_cached,
                 BOUND);
}

static void at_step(gb__cache_step step, size_t size)
{
    (void)size;
    read_cached();
    if (!pthread_equal(pthread_self(), main_thread) || step != armed)
        return;
    armed = 0; /* once: the main thread's next steps run undisturbed */
    fired++;
    cached_when_fired = gbt_stats().bytes_cached;
    on_other(other_gives_back);
    read_cached();
}

/* The map source and a bound of two blocks, the hook in place, the other
 * thread started and holding one block of its own. */
static void init_two_block_bound(void)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.cache_bytes = BOUND;
    gb_init(&o);
    gb__map_cache_hook = at_step; /* before the other thread starts */
    other_start();
    on_other(other_takes);
    CHECK_EQ(other_block.src, GB__SRC_MAP);
    CHECK_EQ(other_block.size, BLOCK);
}

/* Stops the other thread (its exit gives its cache back), sweeps this
 * one's, and judges every reading. */
static void finish(void)
{
    gb__map_cache_hook = NULL; /* before the other thread's exit reads it */
    other_stop();
    fprintf(stderr, "%d steps read: at most %zu KiB cached (bound %zu KiB)\n", steps_seen,
            most_cached / 1024, (size_t)BOUND / 1024);
    check_readings();
    gb_sweep();
    gbt_check_all_given_back();
    CHECK_EQ(gbt_stats().bytes_cached, 0);
}

static gb__chunk take(void)
{
    gb__chunk c = gb__chunk_get(&gb__self()->mem.cache, BLOCK);
    CHECK_EQ(c.src, GB__SRC_MAP);
    CHECK_EQ(c.size, BLOCK);
    return c;
}

/* ------------------------------------------------------------- the tests */

/* This thread's cache holds one block and it gives back a second; the
 * bound has room for it, but between the check and the reservation the
 * other thread gives its block back and takes that room. The reservation
 * must see it and check again: this thread then makes room by unmapping
 * its own older block, and the two caches hold the bound, no more. */
GB_TEST(a_put_between_another_threads_check_and_reservation_keeps_the_bound)
{
    init_two_block_bound();
    gb__chunk older = take(), newer = take();
    gb__chunk_put(&gb__self()->mem.cache, older);
    CHECK_EQ(gbt_stats().bytes_cached, BLOCK);
    armed = GB__CACHE_STEP_ADMITTED;
    gb__chunk_put(&gb__self()->mem.cache, newer);
    CHECK_EQ(fired, 1);
    CHECK_EQ(cached_when_fired, BLOCK); /* admitted, not counted yet */
    read_cached();
    check_readings();
    /* The bound is used, not refused: each thread keeps one block. */
    CHECK_EQ(gbt_stats().bytes_cached, BOUND);
    CHECK_EQ(gbt_stats().mappings_cached, 2);
    CHECK_EQ(gb__self()->mem.cache.bytes, BLOCK);
    finish();
}

/* This thread's cache holds the bound, two blocks, and it takes one for a
 * new chunk; between the two steps of the take the other thread gives its
 * block back. While the block taken is still counted in bytes_cached its
 * reservation must stand, else the other thread's block is counted too
 * and bytes_cached reads a block over the bound. */
GB_TEST(a_put_while_a_block_is_taken_from_the_cache_keeps_bytes_cached_within_the_bound)
{
    init_two_block_bound();
    gb__chunk a = take(), b = take();
    gb__chunk_put(&gb__self()->mem.cache, a);
    gb__chunk_put(&gb__self()->mem.cache, b);
    CHECK_EQ(gbt_stats().bytes_cached, BOUND);
    uint64_t hits = gbt_stats().cache_hits;
    armed = GB__CACHE_STEP_UNCOUNTED;
    gb__chunk c = take();
    CHECK_EQ(fired, 1);
    CHECK_EQ(cached_when_fired, BOUND - BLOCK); /* the block taken is off the counter at that step */
    CHECK_EQ(gbt_stats().cache_hits, hits + 1);
    read_cached();
    check_readings();
    /* The other thread's block found no room, and went back to the OS. */
    CHECK_EQ(gbt_stats().bytes_cached, BLOCK);
    gb__chunk_put(&gb__self()->mem.cache, c);
    read_cached();
    finish();
}

/* The same between the two steps of a drop: this thread's cache holds the
 * bound and a sweep unmaps it block by block. */
GB_TEST(a_put_while_a_cached_block_is_dropped_keeps_bytes_cached_within_the_bound)
{
    init_two_block_bound();
    gb__chunk a = take(), b = take();
    gb__chunk_put(&gb__self()->mem.cache, a);
    gb__chunk_put(&gb__self()->mem.cache, b);
    CHECK_EQ(gbt_stats().bytes_cached, BOUND);
    armed = GB__CACHE_STEP_UNCOUNTED;
    gb_sweep();
    CHECK_EQ(fired, 1);
    CHECK_EQ(cached_when_fired, BOUND - BLOCK); /* the block dropped is off the counter at that step */
    read_cached();
    check_readings();
    /* The other thread's block found no room, and went back to the OS. */
    CHECK_EQ(gbt_stats().bytes_cached, 0);
    finish();
}
