/* gateprog.c -- the gate programs: scenarios that stop at checkpoints.
 *
 * Each scenario builds a situation, leaves its region and stops itself
 * (SIGSTOP) at a checkpoint, so the bats gates can read its resident size
 * from outside with ps, the way a user would see it, and then let it go on
 * (SIGCONT): the gate kit's checkpoint (gates/kit/gbgate.h). Before each
 * stop it prints one line, "checkpoint <name>", followed by any figures as
 * "key=value" and the runtime's own counters (runtime_figures, below). The
 * shapes are the shared scenarios (scenarios/scenarios.h), which the tests
 * and benchmarks run too. What the gates judge (caps, bounds) lives in
 * gates/gates.tsv, not here; the scenario sizes live here, in one table,
 * since they are what the program does.
 *
 * The same source is linked against the clean runtime and each poison
 * variant, in a program build and a library build (CMake: gates/).
 */

#include "giveback.h"
#include "scenarios.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(GB_GATE_ZLIB)
#include <zlib.h>
#endif

/* held_kib is the second reading of every gate's cell: what the runtime's
 * own counters say it holds (its mappings, its malloc'd blocks and
 * descriptors, its block cache), beside the resident size read from
 * outside; when the process holds far more than the runtime does, the
 * memory was given back by the runtime and kept by the allocator under it
 * (the kit's "retained-below"). The self-read figures are for the record;
 * the gates judge what they read with ps. The kit's header adds macOS's
 * footprint itself, as footprint_kib, where it can read one; where the
 * runtime's OS layer keeps one the header cannot read (the simulated
 * macOS layer), the program prints it under that name too, after the
 * header's, and the kit takes the first. */
static void runtime_figures(FILE *out)
{
    gb_stats s;
    gb_stats_get(&s);
    size_t held = s.bytes_mapped + s.bytes_heap + s.bytes_meta + s.bytes_cached;
    fprintf(out, " held_kib=%zu cached_kib=%zu", held / 1024, s.bytes_cached / 1024);
    gb_resident res;
    if (gb_resident_get(&res) == 0) {
        fprintf(out, " rss_self=%zu footprint_self=%zu", res.rss / 1024, res.footprint / 1024);
        if (res.footprint)
            fprintf(out, " footprint_kib=%zu", res.footprint / 1024);
    }
}
#define GBGATE_FIGURES runtime_figures
#include "gbgate.h"

#define MIB ((size_t)1024 * 1024)

/* Scenario sizes. */
enum {
    REGION_ROUNDS = 3,
    MAP_COUNT = 8000,      /* maps in the map-arenas region */
    MAP_ENTRIES = 2000,    /* entries per map: a 4096-slot table, 68 KiB */
    PIN_BACKGROUND = 50,   /* idle suspended coroutines in pin-walk */
    PIN_N = 100,           /* retirements in pin-walk's first phase (then 2N) */
    STRESS_STEPS = 20000,  /* coroutines made, stepped once and dropped */
    STRESS_LIVE_MAX = 1024,
    STRESS_REGION = 40960, /* each one's region, filled STRESS_PIECE at a time: */
    STRESS_PIECE = 10240,  /* a block of 16 KiB and one of 32 KiB (scenarios.c) */
    STRESS_KEPT = 16384,   /* bytes of the malloc kept from the first batch's peak */
    SMALL_REGIONS = 4096,  /* small regions per round, nested, then again in sequence */
    SMALL_KEPT = 100,      /* bytes of each malloc kept from a small region's peak */
    SMALL_MIN = 4096,      /* a small region's size: SMALL_MIN to SMALL_MAX bytes, */
    SMALL_MAX = 32768,     /* filled SMALL_PIECE at a time, so a few blocks each */
    SMALL_PIECE = 1024,
    THREADS = 8,           /* threads-leave: each grows and leaves a 400 MB region */
    STREAM_ROUNDS = 3,     /* foreign-library: one zlib stream per region, per round */
};
static const size_t REGION_BYTES = 400 * MIB;
static const size_t REGION_PIECE = 64 * 1024;
static const size_t KEPT_BYTES = 256 * 1024;
static const size_t PINNED_BYTES = 256 * MIB;

/* ------------------------------------------------------- region-400mb */

static int region_400mb(void)
{
    void *kept[REGION_ROUNDS];
    for (int round = 1; round <= REGION_ROUNDS; round++) {
        gbs_region_round(REGION_BYTES, REGION_PIECE, KEPT_BYTES, round, &kept[round - 1]);
        char name[32];
        snprintf(name, sizeof name, "round-%d", round);
        gbgate_checkpoint(name, "blocks=%s build=%s", gb_blocks_name(), gb_build_kind());
    }
    for (int i = 0; i < REGION_ROUNDS; i++)
        free(kept[i]);
    return 0;
}

/* --------------------------------------------------------- map-arenas */

static int map_arenas(void)
{
    gb_region *r = gb_enter();
    gbs_compacted_maps(MAP_COUNT, MAP_ENTRIES);
    gbgate_checkpoint("built", "arenas=%zu", gbs_stats().arenas_live);
    gb_leave(r);
    gbgate_checkpoint("left", "arenas=%zu", gbs_stats().arenas_live);
    return 0;
}

/* ------------------------------------------------------------ pin-walk */

static int pin_walk(void)
{
    size_t r1, r2;
    uint64_t w1 = gbs_pin_work(PIN_BACKGROUND, PIN_N, &r1), w2 = gbs_pin_work(PIN_BACKGROUND, 2 * PIN_N, &r2);
    gbgate_checkpoint("measured", "n=%d retired_n=%zu retired_2n=%zu work_n=%ju work_2n=%ju", PIN_N, r1, r2,
               (uintmax_t)w1, (uintmax_t)w2);
    return 0;
}

/* ---------------------------------------------- pinned-kept-then-freed */

static volatile sig_atomic_t reading;

static void on_fault(int sig)
{
    (void)sig;
    static const char msg[] = "contents lost: reading the pinned region faulted\n";
    if (reading) {
        ssize_t w = write(1, msg, sizeof msg - 1);
        (void)w;
        _exit(3);
    }
    _exit(4);
}

/* The region is a chain of pieces, each starting with a pointer to the
 * next; the coroutine holds only the head, reads the chain when resumed. */
static void read_chain(void *arg)
{
    unsigned char *volatile head = arg;
    gb_coro_yield();
    reading = 1;
    size_t n = 0;
    for (unsigned char *p = head; p; p = *(unsigned char **)p, n++) {
        for (size_t i = sizeof(void *); i < REGION_PIECE; i += 4096)
            if (p[i] != (unsigned char)(n * 31 + 7)) {
                printf("contents lost: piece %zu byte %zu reads %d\n", n, i, p[i]);
                fflush(stdout);
                _exit(3);
            }
    }
    reading = 0;
    printf("contents intact: %zu pieces\n", n);
    fflush(stdout);
}

static int pinned_kept_then_freed(void)
{
    signal(SIGSEGV, on_fault);
    signal(SIGBUS, on_fault);
    gb_region *r = gb_enter();
    unsigned char *head = NULL, **link = &head;
    for (size_t n = 0, total = 0; total < PINNED_BYTES; total += REGION_PIECE, n++) {
        unsigned char *p = gb_alloc(REGION_PIECE);
        memset(p, (int)(unsigned char)(n * 31 + 7), REGION_PIECE);
        *(unsigned char **)p = NULL;
        *link = p;
        link = (unsigned char **)p;
    }
    gb_coro *c = gb_coro_new(read_chain, head, 0);
    gb_coro_resume(c);
    head = NULL;
    link = NULL;
    gb_leave(r);
    gbgate_checkpoint("left-pinned", "retired=%zu", gbs_stats().regions_retired);
    /* If the pinned region was freed, these take its memory and its
     * contents change. */
    gbs_regions_come_and_go(8, PINNED_BYTES / 4, REGION_PIECE, 0xee);
    gb_coro_resume(c); /* reads the chain and finishes */
    gb_coro_free(c);
    gb_sweep();
    gbgate_checkpoint("swept", "retired=%zu", gbs_stats().regions_retired);
    return 0;
}

/* --------------------------------------------------- released-is-gone */

static int released_is_gone(void)
{
    /* Two rounds: the second is the one glibc would serve from its heap
     * once the first round's free raised its threshold. An allocation of
     * the block cache's bound (8 MiB) takes a block larger than the bound,
     * which the cache cannot keep, so on leave it must be unmapped; and
     * that block (16 MiB when chains double to 64 MiB) is under glibc's
     * largest dynamic threshold (32 MiB), so malloc-back keeps it. */
    volatile unsigned char *addr = gbs_left_block(GB_CACHE_DEFAULT, 0x42, 2);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* The child touches the left block: it must fault. */
        unsigned char v = *addr;
        _exit(v == 0x42 ? 10 : 11);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS)) {
        printf("faulted: touching the left block killed the child with signal %d\n", WTERMSIG(status));
        return 0;
    }
    printf("no-fault: the left block is still readable (child %s %d)\n",
           WIFEXITED(status) ? "exited" : "signal",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return 5;
}

/* ------------------------------------------------------ small-regions */

static int small_regions(void)
{
    static const gbs_small_shape shape = {SMALL_REGIONS, SMALL_MIN, SMALL_MAX, SMALL_PIECE, SMALL_KEPT, true};
    void **kept[REGION_ROUNDS];
    for (int round = 1; round <= REGION_ROUNDS; round++) {
        kept[round - 1] = malloc((SMALL_REGIONS + 1) * sizeof(void *));
        if (!kept[round - 1])
            return 6;
        gbs_small_regions_round(&shape, round, kept[round - 1]);
        char name[32];
        snprintf(name, sizeof name, "round-%d", round);
        gbgate_checkpoint(name, "regions=%d blocks=%s build=%s", 2 * SMALL_REGIONS, gb_blocks_name(),
                   gb_build_kind());
    }
    for (int round = 0; round < REGION_ROUNDS; round++) {
        for (int i = 0; i <= SMALL_REGIONS; i++)
            free(kept[round][i]);
        free(kept[round]);
    }
    return 0;
}

/* ------------------------------------------------------ threads-leave */

/* The threads that have arrived at the start; they go when all have
 * (macOS has no pthread barrier). */
static atomic_int arrived;
static void *thread_kept[THREADS];

/* Each thread grows its own 400 MB region and leaves it; a small malloc
 * from its peak is kept (in its own malloc arena, on glibc). A thread given
 * i >= 0 starts with the others; -i - 1, on its own. */
static void *grow_and_leave(void *arg)
{
    int i = (int)(intptr_t)arg;
    if (i >= 0) {
        atomic_fetch_add(&arrived, 1);
        while (atomic_load(&arrived) < THREADS)
            sched_yield();
    } else {
        i = -i - 1;
    }
    gbs_region_round(REGION_BYTES, REGION_PIECE, KEPT_BYTES, i + 1, &thread_kept[i]);
    return NULL;
}

static int threads_leave(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, grow_and_leave, (void *)(intptr_t)i) != 0)
            return 6;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    gbgate_checkpoint("together", "threads=%d live=%zu", THREADS, gbs_stats().regions_live);
    for (int i = 0; i < THREADS; i++) {
        free(thread_kept[i]);
        if (pthread_create(&t[i], NULL, grow_and_leave, (void *)(intptr_t)(-i - 1)) != 0)
            return 6;
        pthread_join(t[i], NULL);
    }
    gbgate_checkpoint("in-turns", "threads=%d live=%zu", THREADS, gbs_stats().regions_live);
    for (int i = 0; i < THREADS; i++)
        free(thread_kept[i]);
    return 0;
}

/* ----------------------------------------------------------- handoff */

/* A producer thread fills a 400 MB region and detaches it; the main
 * thread, the consumer, attaches it, checks that it finds the memory,
 * allocates in it and leaves it; then a checkpoint, with the producer
 * alive and idle, waiting for the next round, as an I/O thread between
 * requests is. The memory must have left the process at the consumer's
 * leave, whatever the producer does meanwhile. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int asked;          /* rounds the consumer asked for; -1: stop */
    gb_region *ready;   /* the region in flight, or NULL */
    unsigned char *first;
} handed = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, NULL};

static void *handoff_producer(void *arg)
{
    (void)arg;
    for (int done = 0;;) {
        pthread_mutex_lock(&handed.lock);
        while (handed.asked == done)
            pthread_cond_wait(&handed.cond, &handed.lock);
        int asked = handed.asked;
        pthread_mutex_unlock(&handed.lock);
        if (asked < 0)
            return NULL;
        gb_region *r = gb_enter();
        unsigned char *first = gb_alloc(64);
        memset(first, 0x5a, 64);
        gbs_fill(REGION_BYTES, REGION_PIECE, asked);
        gb_region_detach(r);
        pthread_mutex_lock(&handed.lock);
        handed.ready = r;
        handed.first = first;
        done = asked;
        pthread_cond_broadcast(&handed.cond);
        pthread_mutex_unlock(&handed.lock);
    }
}

static int handoff(void)
{
    pthread_t producer;
    if (pthread_create(&producer, NULL, handoff_producer, NULL) != 0)
        return 6;
    int rc = 0;
    for (int round = 1; round <= REGION_ROUNDS && !rc; round++) {
        pthread_mutex_lock(&handed.lock);
        handed.asked = round;
        pthread_cond_broadcast(&handed.cond);
        while (!handed.ready)
            pthread_cond_wait(&handed.cond, &handed.lock);
        gb_region *r = handed.ready;
        unsigned char *first = handed.first;
        handed.ready = NULL;
        pthread_mutex_unlock(&handed.lock);
        gb_region_attach(r);
        if (gb_region_of(first) != r || first[0] != 0x5a || first[63] != 0x5a)
            rc = 7; /* the memory handed over is not what this thread finds */
        gbs_fill(4 * MIB, REGION_PIECE, round);
        gb_leave(r);
        char name[32];
        snprintf(name, sizeof name, "round-%d", round);
        gbgate_checkpoint(name, "handed_mib=%zu in_flight=%zu build=%s", REGION_BYTES / MIB,
                          gbs_stats().regions_in_flight, gb_build_kind());
    }
    pthread_mutex_lock(&handed.lock);
    handed.asked = -1;
    pthread_cond_broadcast(&handed.cond);
    pthread_mutex_unlock(&handed.lock);
    pthread_join(producer, NULL);
    return rc;
}

/* ---------------------------------------------------- foreign-library */

#if defined(GB_GATE_ZLIB)
static const size_t STREAM_BYTES = 24 * MIB; /* input of each stream, compressed and back */
static const size_t STREAM_PIECE = 64 * 1024;

/* zlib takes its memory from the stream's region through its allocator
 * hooks, the way a runtime hands a C library its arena; zfree does nothing,
 * since the region gives everything back at once. */
static voidpf zalloc_region(voidpf opaque, uInt items, uInt size)
{
    return gb_alloc_in(opaque, (size_t)items * size);
}

static void zfree_none(voidpf opaque, voidpf p)
{
    (void)opaque;
    (void)p;
}

/* Text with words from a small vocabulary, as compressible as prose. */
static void make_text(unsigned char *p, size_t n, uint32_t *seed)
{
    static const char *const words[] = {"region ", "leave ", "memory ", "block ", "malloc ",
                                        "returned ", "the ", "of ", "to ", "kept\n"};
    size_t k = 0;
    while (k < n) {
        *seed = *seed * 1103515245u + 12345u;
        const char *w = words[(*seed >> 16) % 10];
        while (*w && k < n)
            p[k++] = (unsigned char)*w++;
    }
}

/* One stream in its own region: the input made in pieces, deflated into
 * pieces, inflated again and compared. Returns 0 when it round-trips. */
static int zlib_stream(int round, void **kept)
{
    gb_region *r = gb_enter();
    size_t npieces = STREAM_BYTES / STREAM_PIECE;
    unsigned char **in = gb_alloc(npieces * sizeof *in);
    uint32_t seed = (uint32_t)round;
    for (size_t i = 0; i < npieces; i++) {
        in[i] = gb_alloc(STREAM_PIECE);
        make_text(in[i], STREAM_PIECE, &seed);
    }
    z_stream d = {.zalloc = zalloc_region, .zfree = zfree_none, .opaque = r};
    if (deflateInit(&d, Z_BEST_SPEED) != Z_OK)
        return 7;
    gb_vec *out = gb_vec_new(sizeof(unsigned char *));
    for (size_t i = 0; i <= npieces; i++) {
        d.next_in = i < npieces ? in[i] : NULL;
        d.avail_in = i < npieces ? (uInt)STREAM_PIECE : 0;
        int flush = i < npieces ? Z_NO_FLUSH : Z_FINISH, rc;
        do {
            if (d.avail_out == 0) {
                unsigned char *piece = gb_alloc(STREAM_PIECE);
                gb_vec_push(out, &piece);
                d.next_out = piece;
                d.avail_out = (uInt)STREAM_PIECE;
            }
            rc = deflate(&d, flush);
        } while (d.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    }
    size_t compressed = d.total_out;
    deflateEnd(&d);
    z_stream f = {.zalloc = zalloc_region, .zfree = zfree_none, .opaque = r};
    if (inflateInit(&f) != Z_OK)
        return 7;
    unsigned char *back = gb_alloc(STREAM_PIECE);
    size_t checked = 0;
    int rc = Z_OK;
    for (size_t i = 0; i < gb_vec_len(out) && rc != Z_STREAM_END; i++) {
        f.next_in = *(unsigned char **)gb_vec_at(out, i);
        f.avail_in = (uInt)(i + 1 < gb_vec_len(out) ? STREAM_PIECE : compressed - i * STREAM_PIECE);
        /* Inflate until this piece is used up and no output is pending
         * (a full output buffer may hide more). */
        do {
            f.next_out = back;
            f.avail_out = (uInt)STREAM_PIECE;
            rc = inflate(&f, Z_NO_FLUSH);
            if (rc == Z_BUF_ERROR)
                break; /* no progress without more input */
            if (rc != Z_OK && rc != Z_STREAM_END)
                return 8;
            size_t got = STREAM_PIECE - f.avail_out;
            if (checked + got > STREAM_BYTES)
                return 8;
            for (size_t k = 0; k < got; k++, checked++)
                if (back[k] != in[checked / STREAM_PIECE][checked % STREAM_PIECE])
                    return 8;
        } while ((f.avail_in > 0 || f.avail_out == 0) && rc != Z_STREAM_END);
    }
    inflateEnd(&f);
    if (checked != STREAM_BYTES)
        return 8;
    *kept = malloc(KEPT_BYTES);
    if (*kept)
        memset(*kept, round, KEPT_BYTES);
    printf("stream %d: %zu bytes deflated to %zu and back, in a region of %zu KiB\n", round,
           STREAM_BYTES, compressed, gb_region_bytes(r) / 1024);
    gb_leave(r);
    return 0;
}

static int foreign_library(void)
{
    void *kept[STREAM_ROUNDS];
    for (int round = 1; round <= STREAM_ROUNDS; round++) {
        int rc = zlib_stream(round, &kept[round - 1]);
        if (rc) {
            printf("zlib stream %d failed (%s)\n", round, rc == 8 ? "did not round-trip" : "init");
            return rc;
        }
        char name[32];
        snprintf(name, sizeof name, "round-%d", round);
        gbgate_checkpoint(name, "library=zlib-%s blocks=%s build=%s", zlibVersion(), gb_blocks_name(),
                   gb_build_kind());
    }
    for (int i = 0; i < STREAM_ROUNDS; i++)
        free(kept[i]);
    return 0;
}
#else
static int foreign_library(void)
{
    printf("foreign-library: this gate program was built without zlib (ci/install-deps.sh gate)\n");
    return 6;
}
#endif

/* -------------------------------------------------------------- stress */

static int stress(void)
{
    const gbs_stress_shape shape = {.steps = STRESS_STEPS,
                                    .live_max = STRESS_LIVE_MAX,
                                    .region_bytes = STRESS_REGION,
                                    .piece = STRESS_PIECE,
                                    .kept_bytes = STRESS_KEPT};
    void *kept;
    size_t held = gbs_stress(&shape, &kept);
    gb_sweep();
    /* The peak as the runtime reads it, in bytes on every OS (getrusage's
     * ru_maxrss is in KiB on Linux and in bytes on macOS). */
    gb_resident res;
    gb_resident_get(&res);
    gb_stats s = gbs_stats();
    gbgate_checkpoint("done", "steps=%d retired=%zu sweeps=%ju held_peak=%zu peak_self_kib=%zu", STRESS_STEPS,
               s.regions_retired, (uintmax_t)s.sweeps, held / 1024, res.peak / 1024);
    free(kept);
    return 0;
}

/* ---------------------------------------------------------------- hold */

/* The failsafe's scenario: it never leaves its region, so the region gate
 * run on it must go red. */
static int hold(void)
{
    gb_region *r = gb_enter();
    gbs_fill(REGION_BYTES, REGION_PIECE, 1);
    for (int round = 1; round <= REGION_ROUNDS; round++) {
        char name[32];
        snprintf(name, sizeof name, "round-%d", round);
        gbgate_checkpoint(name, NULL);
    }
    gb_leave(r);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(void);
    } scenarios[] = {
        {"region-400mb", region_400mb},
        {"map-arenas", map_arenas},
        {"pin-walk", pin_walk},
        {"pinned-kept-then-freed", pinned_kept_then_freed},
        {"released-is-gone", released_is_gone},
        {"stress", stress},
        {"small-regions", small_regions},
        {"threads-leave", threads_leave},
        {"handoff", handoff},
        {"foreign-library", foreign_library},
        {"hold", hold},
    };
    if (argc == 2) {
        if (strcmp(argv[1], "stress") == 0)
            setenv("GB_STRESS", "50", 0);
        for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
            if (strcmp(argv[1], scenarios[i].name) == 0)
                return scenarios[i].run();
    }
    fprintf(stderr, "usage: %s <scenario>; scenarios:", argv[0]);
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        fprintf(stderr, " %s", scenarios[i].name);
    fputc('\n', stderr);
    return 2;
}
