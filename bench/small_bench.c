/* small_bench.c -- small objects against the allocators users would pick
 * instead, and what each keeps resident once they are freed.
 *
 * A region's promise is cheap allocation and a cheap, complete goodbye. This
 * benchmark allocates 10M objects of 16-256 B (uniformly mixed, the same
 * sizes for every peer), writes one word into each and keeps a pointer to
 * it, then lets them all go: a region is entered and left; malloc (glibc,
 * jemalloc, mimalloc) frees each object; a talloc pool, an APR pool and an
 * obstack are freed whole. It runs twice in each process: pass 1 in a fresh
 * process (every peer must fault its memory in), pass 2 in the same process
 * (peers that kept the memory of pass 1 reuse it; a region gave it back).
 *
 * Each peer runs in a child of its own, read from outside at checkpoints:
 * the resident size after the setup (baseline), after each pass, and after
 * the peer's own purge call (malloc_trim(0) for the peers on glibc's malloc,
 * jemalloc's arena purge, mi_collect(true)). jemalloc and mimalloc replace
 * malloc for their whole process, so they run as separate executables built
 * from this file (SMALL_PEER_JEMALLOC, SMALL_PEER_MIMALLOC) that only know
 * how to be a child.
 *
 * Beside the peers, in the same rounds, the floor: in a child set up the
 * same way, the same objects (the same bytes, rounded as the region
 * rounds them) bumped through one fresh mapping made resident by each way
 * floor.c knows, one word written in each and its pointer stored, then
 * unmapped: what a region could at best cost in a fresh process, since
 * the kernel must hand it the same pages (small_floor_pass1_ns, the
 * cheapest way's).
 *
 * The targets are verdicts (verdict.h) on paired rounds: the region
 * against glibc and obstack in a fresh process, against mimalloc and
 * obstack on reuse, and against the floor. Every peer runs R rounds for
 * its figures; the judged ones run at least 6 and, while a target they
 * serve is undecided, more, up to the cap; the others no more than R.
 *
 * Usage: small_bench [--objects N] [--rounds R] [--cap C]   (defaults 10000000, 3, 12)
 *        <exe> --child <peer> N                             (what the driver runs)
 * A benchmark, not a test: nothing here fails on a number.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench.h"
#include "floor.h"
#include "verdict.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(SMALL_PEER_JEMALLOC)
#include <jemalloc/jemalloc.h>
#define PEER_ONLY "jemalloc"
#elif defined(SMALL_PEER_MIMALLOC)
#include <mimalloc.h>
#define PEER_ONLY "mimalloc"
#else
#include "giveback.h"
#include <malloc.h>
#include <obstack.h>
#ifdef GB_BENCH_TALLOC
#include <talloc.h>
#endif
#ifdef GB_BENCH_APR
#include <apr_pools.h>
#endif
#endif

/* ROUNDS_MAX: the most rounds (--cap); RUNS_MAX: the most runs of one
 * peer, the region running twice a round (run_rounds). */
enum { SIZE_MIN = 16, SIZE_MAX_ = 256, ROUNDS_MAX = 24, RUNS_MAX = 2 * ROUNDS_MAX };

/* ------------------------------------------------------------ the work */

#ifdef GB_BENCH_TALLOC
/* Bytes talloc puts before each object in a pool (measured, with slack). */
static size_t talloc_header;

static void measure_talloc_header(void)
{
    void *pool = talloc_pool(NULL, 4096);
    char *a = pool ? talloc_size(pool, 16) : NULL, *b = pool ? talloc_size(pool, 16) : NULL;
    if (!a || !b || b <= a) {
        fputs("small_bench: cannot measure talloc's header\n", stderr);
        exit(1);
    }
    talloc_header = (size_t)(b - a); /* the header, plus 16 bytes of slack */
    talloc_free(pool);
}
#endif

typedef struct work {
    const char *peer;
    size_t n;
    uint16_t *sizes;
    void **ptrs;
} work;

static void *map_touched(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("small_bench: mmap");
        exit(1);
    }
    memset(p, 1, bytes);
    return p;
}

static void setup(work *w)
{
    w->sizes = map_touched(w->n * sizeof *w->sizes);
    w->ptrs = map_touched(w->n * sizeof *w->ptrs);
    uint64_t seed = 42;
    for (size_t i = 0; i < w->n; i++)
        w->sizes[i] = (uint16_t)(SIZE_MIN + bench_rand(&seed) % (SIZE_MAX_ - SIZE_MIN + 1));
}

/* Each pass stores one word in each object and its pointer in ptrs[], so
 * every peer does the same work per object besides allocating it. */
#define FILL(alloc_expr)                                                                           \
    for (size_t i = 0; i < w->n; i++) {                                                            \
        size_t sz = w->sizes[i];                                                                   \
        uint64_t *p = (alloc_expr);                                                                \
        *p = i;                                                                                    \
        w->ptrs[i] = p;                                                                            \
    }

static void free_each(work *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->ptrs[i]);
}

static void *must(void *p)
{
    if (!p) {
        fputs("small_bench: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

/* One pass: fills, frees, reports the two phases and the page faults. */
static void pass(work *w, int k)
{
    long f0 = bench_minor_faults();
    double t0 = bench_now(), t1;
    const char *peer = w->peer;
    if (strcmp(peer, "glibc") == 0 || strcmp(peer, "jemalloc") == 0 || strcmp(peer, "mimalloc") == 0) {
        FILL(must(malloc(sz)))
        t1 = bench_now();
        free_each(w);
    }
#ifndef PEER_ONLY
    else if (strncmp(peer, "region", 6) == 0) {
        gb_region *r = gb_enter();
        FILL(gb_alloc(sz))
        t1 = bench_now();
        if (k == 1) {
            /* What the huge page setting chose for the region's blocks,
             * read while they are held (after the clock stopped): the
             * share of their bytes in huge pages. */
            gb_stats st;
            gb_stats_get(&st);
            bench_result("huge_share", st.bytes_mapped ? (double)st.bytes_huge / (double)st.bytes_mapped : 0);
        }
        gb_leave(r);
    } else if (strcmp(peer, "obstack") == 0) {
#define obstack_chunk_alloc malloc
#define obstack_chunk_free free
        struct obstack ob;
        obstack_init(&ob);
        FILL(must(obstack_alloc(&ob, sz)))
        t1 = bench_now();
        obstack_free(&ob, NULL);
    }
#ifdef GB_BENCH_TALLOC
    else if (strcmp(peer, "talloc") == 0) {
        /* talloc refuses any allocation over 256 MiB, pools included, so
         * the objects go into a chain of 128 MiB pools under one context,
         * each opened when the last is full (by talloc's own header size,
         * measured in setup), so talloc never falls back to malloc. */
        enum { POOL_BYTES = 128 << 20 };
        void *top = must(talloc_new(NULL)), *pool = NULL;
        size_t used = POOL_BYTES;
        for (size_t i = 0; i < w->n; i++) {
            size_t sz = w->sizes[i], need = (sz + 15) / 16 * 16 + talloc_header;
            if (used + need > POOL_BYTES) {
                pool = must(talloc_pool(top, POOL_BYTES));
                used = 0;
            }
            used += need;
            uint64_t *p = must(talloc_size(pool, sz));
            *p = i;
            w->ptrs[i] = p;
        }
        t1 = bench_now();
        talloc_free(top);
    }
#endif
#ifdef GB_BENCH_APR
    else if (strcmp(peer, "apr") == 0) {
        apr_pool_t *pool;
        if (apr_pool_create(&pool, NULL) != APR_SUCCESS)
            must(NULL);
        FILL(must(apr_palloc(pool, sz)))
        t1 = bench_now();
        apr_pool_destroy(pool);
    }
#endif
#endif
    else {
        fprintf(stderr, "small_bench: unknown peer %s\n", peer);
        exit(2);
    }
    double t2 = bench_now();
    long f1 = bench_minor_faults();
    char key[32];
    snprintf(key, sizeof key, "faults%d", k);
    bench_result(key, (double)(f1 - f0) * 1000.0 / (double)w->n);
    snprintf(key, sizeof key, "alloc%d", k);
    bench_result(key, (t1 - t0) * 1e9 / (double)w->n);
    snprintf(key, sizeof key, "free%d", k);
    bench_result(key, (t2 - t1) * 1e9 / (double)w->n);
}

/* The peer's own call for giving back what it keeps; its name. */
static const char *purge(const char *peer)
{
#if defined(SMALL_PEER_JEMALLOC)
    (void)peer;
    if (mallctl("arena." "4096" ".purge", NULL, NULL, NULL, 0) != 0)
        return "arena purge failed";
    return "mallctl arena.<all>.purge";
#elif defined(SMALL_PEER_MIMALLOC)
    (void)peer;
    mi_collect(true);
    return "mi_collect(true)";
#else
    if (strncmp(peer, "region", 6) == 0)
        return "(none needed)";
    malloc_trim(0);
    return "malloc_trim(0)";
#endif
}

/* The floor's child ("floor-<method>"): the same set-up, then the
 * objects bumped through fresh memory made resident by that method. */
static void floor_child(work *w)
{
    int m = 0;
    while (m < FLOOR_METHODS && strcmp(w->peer + 6, floor_name((floor_method)m)) != 0)
        m++;
    if (m == FLOOR_METHODS) {
        fprintf(stderr, "small_bench: unknown floor %s\n", w->peer);
        exit(2);
    }
    setup(w);
    gbgate_checkpoint("baseline", NULL);
    /* The region rounds each object up to 16 bytes (its alignment). */
    double s = floor_fill((floor_method)m, w->sizes, w->n, 16, w->ptrs);
    bench_result("floor", s < 0 ? -1 : s * 1e9 / (double)w->n);
    gbgate_checkpoint("pass1", NULL);
}

static void child(void *arg)
{
    work *w = arg;
    if (strncmp(w->peer, "floor-", 6) == 0) {
        floor_child(w);
        return;
    }
#ifndef PEER_ONLY
    if (strncmp(w->peer, "region", 6) == 0) {
        gb_options o;
        gb_options_init(&o);
        o.blocks = strcmp(w->peer, "region-heap") == 0 ? GB_BLOCKS_HEAP : GB_BLOCKS_MAP;
        /* Beside the default (region-map: huge pages and populating as
         * the host's measured costs choose), each policy forced, so one
         * run shows what each costs a fresh process on this machine and
         * which the default took: region-4k and region-huge set the pages,
         * region-nopop leaves every page to be faulted in as written. */
        if (strcmp(w->peer, "region-4k") == 0)
            o.huge = GB_HUGE_OFF;
        if (strcmp(w->peer, "region-huge") == 0)
            o.huge = GB_HUGE_ON;
        if (strcmp(w->peer, "region-nopop") == 0)
            o.populate = GB_POPULATE_OFF;
        gb_init(&o);
    }
#ifdef GB_BENCH_APR
    if (strcmp(w->peer, "apr") == 0)
        apr_initialize();
#endif
#ifdef GB_BENCH_TALLOC
    if (strcmp(w->peer, "talloc") == 0)
        measure_talloc_header();
#endif
#endif
    setup(w);
    gbgate_checkpoint("baseline", NULL);
    pass(w, 1);
    gbgate_checkpoint("pass1", NULL);
    pass(w, 2);
    gbgate_checkpoint("pass2", NULL);
#ifndef PEER_ONLY
    if (strncmp(w->peer, "region", 6) == 0) {
        /* The allocation alone: the same sizes, nothing written, so the
         * pages are never faulted in (the runtime writes only its block
         * headers). What a region costs besides the kernel's faults. */
        long f0 = bench_minor_faults();
        double t0 = bench_now();
        gb_region *r = gb_enter();
        for (size_t i = 0; i < w->n; i++)
            gb_alloc(w->sizes[i]);
        gb_leave(r);
        bench_result("bare", (bench_now() - t0) * 1e9 / (double)w->n);
        bench_result("bare_faults", (double)(bench_minor_faults() - f0) * 1000.0 / (double)w->n);
    }
#endif
    printf("purge %s\n", purge(w->peer));
    gbgate_checkpoint("purged", NULL);
}

/* ------------------------------------------------------------ the driver */

#ifdef PEER_ONLY

int main(int argc, char **argv)
{
    if (argc != 4 || strcmp(argv[1], "--child") != 0 || strcmp(argv[2], PEER_ONLY) != 0) {
        fprintf(stderr, "usage: %s --child %s N (run by small_bench)\n", argv[0], PEER_ONLY);
        return 2;
    }
    work w = {.peer = PEER_ONLY, .n = strtoul(argv[3], NULL, 10)};
    child(&w);
    return 0;
}

#else

typedef struct peer {
    const char *name;
    const char *what;
    const char *exe; /* a sibling executable, or NULL: a fork of this one */
    bool present;
    double alloc[2][RUNS_MAX], release[2][RUNS_MAX], total[2][RUNS_MAX], faults[2][RUNS_MAX];
    double bare[RUNS_MAX], bare_faults[RUNS_MAX];
    int runs;
    double huge_share[RUNS_MAX]; /* a region's bytes in huge pages at the end of pass 1 */
    double peak_mib; /* NaN where the reader has no peak (see run_one) */
    double base_mib, kept_mib[2], lazy_mib, purged_mib;
    char purge[48];
} peer;

static peer peers[] = {
    {.name = "region-map", .what = "giveback region, map source", .present = true},
    {.name = "region-4k", .what = "giveback region, map source, GB_HUGE=off", .present = true},
    {.name = "region-huge", .what = "giveback region, map source, GB_HUGE=on"},
    {.name = "region-nopop", .what = "giveback region, map source, GB_POPULATE=off", .present = true},
    {.name = "region-heap", .what = "giveback region, heap source", .present = true},
    {.name = "glibc", .what = "glibc malloc + free each", .present = true},
    {.name = "jemalloc", .what = "jemalloc malloc + free each", .exe = "small_bench_jemalloc"},
    {.name = "mimalloc", .what = "mimalloc malloc + free each", .exe = "small_bench_mimalloc"},
#ifdef GB_BENCH_TALLOC
    {.name = "talloc", .what = "talloc 128 MiB pools, talloc_free", .present = true},
#else
    {.name = "talloc", .what = "talloc (not built: libtalloc-dev missing)", .present = false},
#endif
#ifdef GB_BENCH_APR
    {.name = "apr", .what = "APR pool, apr_pool_destroy", .present = true},
#else
    {.name = "apr", .what = "APR pool (not built: libapr1-dev missing)", .present = false},
#endif
    {.name = "obstack", .what = "glibc obstack, obstack_free(NULL)", .present = true},
};
enum { NPEERS = sizeof peers / sizeof peers[0] };

/* The floor's runs: fresh memory by each way that can be the cheapest,
 * and reused memory (resident already) for pass 2's comparison. */
static const floor_method floor_methods[] = {FLOOR_TOUCH_4K, FLOOR_TOUCH_HUGE, FLOOR_POPULATE_4K,
                                             FLOOR_POPULATE_HUGE, FLOOR_MEMSET_RESIDENT};
enum { NFLOORS = sizeof floor_methods / sizeof floor_methods[0] };
static double floor_ns[NFLOORS][ROUNDS_MAX];
/* Fresh methods that were the cheapest of their round at least once. */
static bool floor_won[NFLOORS];
static int floor_runs[NFLOORS];
static bool floor_refused[NFLOORS];

/* One run of floor method k: its ns per object, NaN when the OS refused
 * the method (it is not run again). */
static double run_floor(int k, size_t n)
{
    double v = NAN;
    char name[64];
    snprintf(name, sizeof name, "floor-%s", floor_name(floor_methods[k]));
    work w = {.peer = name, .n = n};
    gbgate_child c;
    if (gbgate_run(&c, child, &w, NULL, NULL, NULL) != 0) {
        fprintf(stderr, "small_bench: %s failed (status %d)\n", name, c.status);
        floor_refused[k] = true;
    } else {
        v = bench_child_result(&c, "floor");
        if (isnan(v) || v < 0) {
            floor_refused[k] = true;
            v = NAN;
        } else if (floor_runs[k] < ROUNDS_MAX) {
            floor_ns[k][floor_runs[k]++] = v;
        }
    }
    gbgate_child_free(&c);
    return v;
}

static double mib(long kib)
{
    return (double)kib / 1024.0;
}

/* One run of peer p: the index of its figures in p's arrays, -1 when it
 * failed (and it is not run again). */
static int run_one(peer *p, size_t n)
{
    if (!p->present || p->runs >= RUNS_MAX)
        return -1;
    gbgate_child c;
    work w = {.peer = p->name, .n = n};
    char nbuf[32];
    snprintf(nbuf, sizeof nbuf, "%zu", n);
    int rc;
    if (p->exe) {
        char exe[4096];
        snprintf(exe, sizeof exe, "%s", bench_sibling(p->exe));
        char *argv[] = {exe, "--child", (char *)p->name, nbuf, NULL};
        rc = gbgate_run(&c, NULL, NULL, exe, argv, NULL);
    } else {
        rc = gbgate_run(&c, child, &w, NULL, NULL, NULL);
    }
    if (rc != 0) {
        fprintf(stderr, "small_bench: peer %s failed (status %d)\n", p->name, c.status);
        p->present = false;
        gbgate_child_free(&c);
        return -1;
    }
    int r = p->runs++;
    for (int k = 0; k < 2; k++) {
        char key[16];
        snprintf(key, sizeof key, "alloc%d", k + 1);
        p->alloc[k][r] = bench_child_result(&c, key);
        snprintf(key, sizeof key, "free%d", k + 1);
        p->release[k][r] = bench_child_result(&c, key);
        p->total[k][r] = p->alloc[k][r] + p->release[k][r];
        snprintf(key, sizeof key, "faults%d", k + 1);
        p->faults[k][r] = bench_child_result(&c, key);
    }
    p->huge_share[r] = bench_child_result(&c, "huge_share");
    p->bare[r] = bench_child_result(&c, "bare");
    p->bare_faults[r] = bench_child_result(&c, "bare_faults");
    /* Memory from the last round (they agree to within noise). */
    const gbgate_mem *base = gbgate_mem_at(&c, "baseline"), *m1 = gbgate_mem_at(&c, "pass1"),
                         *m2 = gbgate_mem_at(&c, "pass2"), *mp = gbgate_mem_at(&c, "purged");
    if (base && m1 && m2 && mp) {
        p->base_mib = mib(base->rss_kib);
        /* The reader has a peak only where the OS keeps one that another
         * process can read (Linux VmHWM). Elsewhere hwm_kib is 0, and the
         * peak would come out as minus the baseline, so it is NaN there:
         * not measured, as in bench_child_result. */
        p->peak_mib = m2->hwm_kib > 0 ? mib(m2->hwm_kib) - p->base_mib : NAN;
        p->kept_mib[0] = mib(m1->rss_kib) - p->base_mib;
        p->kept_mib[1] = mib(m2->rss_kib) - p->base_mib;
        p->lazy_mib = mib(m2->lazyfree_kib);
        p->purged_mib = mib(mp->rss_kib) - p->base_mib;
    }
    const char *pl = strstr(c.out, "\npurge ");
    if (pl) {
        pl += 7;
        size_t len = strcspn(pl, "\n");
        snprintf(p->purge, sizeof p->purge, "%.*s", (int)len, pl);
    }
    gbgate_child_free(&c);
    return r;
}

static double med(peer *p, double v[2][RUNS_MAX], int k)
{
    double tmp[RUNS_MAX];
    memcpy(tmp, v[k], sizeof tmp);
    return bench_median(tmp, p->runs);
}

/* ------------------------------------------------------------ the rounds */

/* The judged targets, each a verdict on paired rounds (verdict.h): the
 * ratio is the peer's time over the region's (above 1 the region is
 * faster), or the region's over the floor's. */
enum { T_GLIBC1, T_FLOOR1, T_MIMALLOC2, T_OBSTACK1, T_OBSTACK2, NTARGETS };
static verdict targets[NTARGETS];

/* One side of a pair with the region: a peer, or (p NULL) the floor. */
typedef struct side {
    peer *p;
    bool wanted; /* runs this round */
    int run;     /* the peer's run index this round, -1 when none */
    double ns;   /* the floor this round: its cheapest fresh method, NaN when none */
} side;

/* The floor's round: every fresh method in a child of its own, in the
 * round's order (reversed every other round, as the pairs are), the
 * cheapest of them the round's floor. In the first `all` rounds every
 * method runs; after them only those that were the cheapest of some round:
 * a method that was never the cheapest then is far behind (4 KiB pages
 * against huge ones), and a method's run costs seconds. */
static double floor_round(size_t n, int r, int all)
{
    int order[NFLOORS], m = 0;
    for (int k = 0; k < NFLOORS; k++)
        if (floor_is_fresh(floor_methods[k]) && !floor_refused[k] && (r < all || floor_won[k]))
            order[m++] = k;
    double best = NAN;
    int won = -1;
    for (int i = 0; i < m; i++) {
        int k = order[verdict_a_first(r) ? i : m - 1 - i];
        double v = run_floor(k, n);
        if (!isnan(v) && (isnan(best) || v < best)) {
            best = v;
            won = k;
        }
    }
    if (won >= 0)
        floor_won[won] = true;
    return best;
}

static void run_side(side *s, size_t n, int r, int all)
{
    if (!s->wanted)
        return;
    if (s->p)
        s->run = run_one(s->p, n);
    else
        s->ns = floor_round(n, r, all);
}

/* A group's round: the region runs once, x just before it and y just
 * after it in even rounds and the other way round in odd ones, so that
 * each side is measured next to the region and in both orders alike over
 * the rounds (a drift of the machine cancels). A side not wanted this
 * round is left out; the region runs when either is wanted. The region's
 * run index, -1 when it did not run or failed. */
static int group_round(peer *ref, side *x, side *y, size_t n, int r, int all)
{
    side *first = verdict_a_first(r) ? x : y, *last = first == x ? y : x;
    x->run = y->run = -1;
    x->ns = y->ns = NAN;
    if (!x->wanted && !y->wanted)
        return -1;
    run_side(first, n, r, all);
    int ri = run_one(ref, n);
    run_side(last, n, r, all);
    return ri;
}

/* The peer's time over the region's in pass k (0 or 1) of their runs of
 * this round; NaN when either did not run. */
static double paired(const peer *p, int pi, const peer *ref, int ri, int k)
{
    if (pi < 0 || ri < 0)
        return NAN;
    return p->total[k][pi] / ref->total[k][ri];
}

/* Whether the OS gives transparent huge pages to a process that asks
 * (GB_HUGE=on stops at init where it does not). Read here rather than by
 * the runtime, which the driver must not initialise: its children set
 * their own options. */
static bool thp_available(void)
{
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return false;
    bool ok = fgets(mode, sizeof mode, f) && !strstr(mode, "[never]");
    fclose(f);
    return ok;
}

static peer *peer_named(const char *name)
{
    for (int i = 0; i < NPEERS; i++)
        if (strcmp(peers[i].name, name) == 0)
            return &peers[i];
    return NULL;
}

/* Whether peer p runs in round r: in the first `all` rounds when it is
 * present at all, after them while a target it serves wants rounds. */
static bool runs(const peer *p, int r, int all, bool wants)
{
    return p && p->present && (r < all || wants);
}

/* Every round: two groups, glibc - region - obstack and mimalloc - region
 * - floor, then (in the first `all` rounds) the peers that are not judged
 * and the floor of resident memory. */
static void run_rounds(size_t n, int all, int cap)
{
    peer *ref = &peers[0], *glibc = peer_named("glibc"), *mimalloc = peer_named("mimalloc"),
         *obstack = peer_named("obstack");
    verdict *t = targets;
    for (int r = 0; r < (all > cap ? all : cap); r++) {
        side gl = {.p = glibc, .wanted = runs(glibc, r, all, verdict_wants(&t[T_GLIBC1]))};
        side ob = {.p = obstack,
                   .wanted = runs(obstack, r, all,
                                  verdict_wants(&t[T_OBSTACK1]) || verdict_wants(&t[T_OBSTACK2]))};
        side mi = {.p = mimalloc, .wanted = runs(mimalloc, r, all, verdict_wants(&t[T_MIMALLOC2]))};
        side fl = {.p = NULL, .wanted = r < all || verdict_wants(&t[T_FLOOR1])};
        if (!ref->present || (r >= all && !gl.wanted && !ob.wanted && !mi.wanted && !fl.wanted))
            break;
        int r1 = group_round(ref, &gl, &ob, n, r, all);
        verdict_offer(&t[T_GLIBC1], paired(glibc, gl.run, ref, r1, 0));
        verdict_offer(&t[T_OBSTACK1], paired(obstack, ob.run, ref, r1, 0));
        verdict_offer(&t[T_OBSTACK2], paired(obstack, ob.run, ref, r1, 1));
        int r2 = group_round(ref, &mi, &fl, n, r, all);
        verdict_offer(&t[T_MIMALLOC2], paired(mimalloc, mi.run, ref, r2, 1));
        if (r2 >= 0)
            verdict_offer(&t[T_FLOOR1], ref->total[0][r2] / fl.ns);
        if (r >= all)
            continue;
        for (int i = 1; i < NPEERS; i++)
            if (&peers[i] != glibc && &peers[i] != mimalloc && &peers[i] != obstack)
                run_one(&peers[i], n);
        for (int k = 0; k < NFLOORS; k++)
            if (!floor_is_fresh(floor_methods[k]) && !floor_refused[k])
                run_floor(k, n);
    }
}

int main(int argc, char **argv)
{
    size_t n = 10000000;
    int rounds = 3, cap = 12;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--objects") == 0 && i + 1 < argc)
            n = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cap") == 0 && i + 1 < argc)
            cap = atoi(argv[++i]);
        else if (strcmp(argv[i], "--child") == 0 && i + 2 < argc) {
            work w = {.peer = argv[i + 1], .n = strtoul(argv[i + 2], NULL, 10)};
            child(&w);
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--objects N] [--rounds R] [--cap C]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > ROUNDS_MAX || cap < 1 || cap > ROUNDS_MAX || n == 0) {
        fprintf(stderr, "small_bench: rounds and cap must be 1..%d and objects at least 1\n", ROUNDS_MAX);
        return 2;
    }
    for (int i = 0; i < NPEERS; i++)
        if (peers[i].exe)
            peers[i].present = access(bench_sibling(peers[i].exe), X_OK) == 0;
    peer_named("region-huge")->present = thp_available();

    /* Rounds go through every peer in turn, so a slow spell of the machine
     * hits them all alike; each figure is the median of the peer's runs.
     * A cap below the 6 rounds an interval needs leaves every target
     * undecided (a smoke run). */
    int least = cap < VERDICT_MIN_ROUNDS ? cap : VERDICT_MIN_ROUNDS;
    verdict_init(&targets[T_GLIBC1], "small_glibc_pass1", VERDICT_AT_LEAST, 1.0, least, cap);
    verdict_init(&targets[T_FLOOR1], "small_floor_pass1", VERDICT_AT_MOST, 1.5, least, cap);
    verdict_init(&targets[T_MIMALLOC2], "small_mimalloc_pass2", VERDICT_AT_LEAST, 1.0, least, cap);
    verdict_init(&targets[T_OBSTACK1], "small_obstack_pass1", VERDICT_AT_LEAST, 1.0, least, cap);
    verdict_init(&targets[T_OBSTACK2], "small_obstack_pass2", VERDICT_AT_LEAST, 1.0, least, cap);
    run_rounds(n, rounds, cap);

    peer *ref = &peers[0];
    printf("small objects: %zu objects of %d-%d B (uniform), one word written in each, then all freed\n", n,
           SIZE_MIN, SIZE_MAX_);
    printf("(ns per object, median of the peer's runs: %d rounds of every peer, more of the region and of\n"
           " the judged peers, see the verdicts below; pass 1 in a fresh process, pass 2 right after in the same\n"
           " one; \"x region\" is the peer's time over the region's, map source: above 1 the region is faster;\n"
           " faults are minor page faults per 1000 objects, each a fresh page the kernel zeroes)\n",
           rounds);
    printf("  %-12s %-34s %8s %8s %8s %8s %8s %8s %8s %8s %5s\n", "peer", "what", "alloc", "free", "pass 1",
           "faults", "pass 2", "faults", "x region", "x region", "runs");
    printf("  %-12s %-34s %8s %8s %8s %8s %8s %8s %8s %8s\n", "", "", "(pass 1)", "(pass 1)", "", "(pass 1)", "",
           "(pass 2)", "(pass 1)", "(pass 2)");
    double ref1 = med(ref, ref->total, 0), ref2 = med(ref, ref->total, 1);
    for (int i = 0; i < NPEERS; i++) {
        peer *p = &peers[i];
        if (!p->present || p->runs == 0) {
            printf("  %-12s %-34s %s\n", p->name, p->what, "(not built or failed: skipped)");
            continue;
        }
        double a = med(p, p->alloc, 0), f = med(p, p->release, 0), t1 = med(p, p->total, 0),
               t2 = med(p, p->total, 1);
        printf("  %-12s %-34s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.2f %8.2f %5d\n", p->name, p->what, a, f,
               t1, med(p, p->faults, 0), t2, med(p, p->faults, 1), t1 / ref1, t2 / ref2, p->runs);
    }
    printf("\n");
    bench_line("small_objects_count", (double)n, "objects");
    for (int i = 0; i < NPEERS; i++) {
        peer *p = &peers[i];
        if (!p->present || p->runs == 0)
            continue;
        char name[96];
        snprintf(name, sizeof name, "small_%s_pass1_ns", p->name);
        bench_line(name, med(p, p->total, 0), "ns");
        snprintf(name, sizeof name, "small_%s_pass2_ns", p->name);
        bench_line(name, med(p, p->total, 1), "ns");
        snprintf(name, sizeof name, "small_%s_pass1_faults_per_1k", p->name);
        bench_line(name, med(p, p->faults, 0), "faults");
        snprintf(name, sizeof name, "small_%s_pass2_faults_per_1k", p->name);
        bench_line(name, med(p, p->faults, 1), "faults");
        if (p != ref) {
            snprintf(name, sizeof name, "small_x_%s_pass1", p->name);
            bench_line(name, med(p, p->total, 0) / ref1, "ratio");
            snprintf(name, sizeof name, "small_x_%s_pass2", p->name);
            bench_line(name, med(p, p->total, 1) / ref2, "ratio");
        }
    }
    peer *glibc = NULL, *mimalloc = NULL, *obstack = &peers[NPEERS - 1];
    for (int i = 0; i < NPEERS; i++) {
        if (strcmp(peers[i].name, "glibc") == 0)
            glibc = &peers[i];
        if (strcmp(peers[i].name, "mimalloc") == 0)
            mimalloc = &peers[i];
    }

    /* The floor: the same objects bumped through fresh memory, by each
     * way of making it resident; the cheapest fresh one is the floor. */
    printf("the floor: the same objects (the same bytes) bumped through one fresh mapping, one word written\n"
           "in each, then unmapped, in a child set up like the peers' (ns per object, median of its runs)\n");
    double floor1 = -1, reused = -1;
    const char *floor_by = "";
    for (int k = 0; k < NFLOORS; k++) {
        if (floor_refused[k] || floor_runs[k] == 0) {
            printf("  %-46s %13s\n", floor_what(floor_methods[k]), "not available");
            continue;
        }
        double v = bench_median(floor_ns[k], floor_runs[k]);
        printf("  %-46s %8.1f (%d runs)\n", floor_what(floor_methods[k]), v, floor_runs[k]);
        if (!floor_is_fresh(floor_methods[k]))
            reused = v;
        else if (floor1 < 0 || v < floor1) {
            floor1 = v;
            floor_by = floor_name(floor_methods[k]);
        }
    }
    printf("\n");
    if (floor1 > 0) {
        bench_line("small_floor_pass1_ns", floor1, "ns");
        bench_line("small_region_vs_floor_pass1_ratio", ref1 / floor1, "ratio");
        printf("the region against the fresh-memory floor (%s, %.1f ns) in a fresh process: pass 1 %.2fx "
               "(target <= 1.5x)\n", floor_by, floor1, ref1 / floor1);
    }
    if (reused > 0)
        printf("beside it, the floor on resident memory (%.1f ns): pass 2 %.2fx of it\n", reused, ref2 / reused);
    if (glibc && glibc->runs) {
        double g1 = med(glibc, glibc->total, 0) / ref1, g2 = med(glibc, glibc->total, 1) / ref2;
        printf("the region against glibc malloc+free: pass 1 %.2fx (target >= 1.0x in a fresh process); pass 2 "
               "%.2fx\n", g1, g2);
    }
    if (mimalloc && mimalloc->runs) {
        double m2 = med(mimalloc, mimalloc->total, 1) / ref2;
        printf("the region against mimalloc on reuse: pass 2 %.2fx (target >= 1.0x)\n", m2);
    }
    if (obstack->runs) {
        double o1 = med(obstack, obstack->total, 0) / ref1, o2 = med(obstack, obstack->total, 1) / ref2;
        printf("the region against obstack: pass 1 %.2fx, pass 2 %.2fx (target >= 1.0x in both)\n", o1, o2);
    }
    /* The pools users would pick instead of a region, in the same run. */
    for (int i = 0; i < NPEERS; i++) {
        peer *p = &peers[i];
        if (p->runs && (strcmp(p->name, "talloc") == 0 || strcmp(p->name, "apr") == 0))
            printf("beside it, %s: pass 1 %.2fx, pass 2 %.2fx\n", p->name, med(p, p->total, 0) / ref1,
                   med(p, p->total, 1) / ref2);
    }
    printf("\n");
    const verdict *judged[NTARGETS];
    for (int i = 0; i < NTARGETS; i++)
        judged[i] = &targets[i];
    verdict_report(judged, NTARGETS);
    printf("\n");

    for (int i = 0; i < 2; i++) {
        peer *p = &peers[i];
        if (!p->runs)
            continue;
        double tmp[RUNS_MAX], f[RUNS_MAX];
        memcpy(tmp, p->bare, sizeof tmp);
        memcpy(f, p->bare_faults, sizeof f);
        double b = bench_median(tmp, p->runs), bf = bench_median(f, p->runs);
        printf("%s: the allocation alone (same sizes, nothing written): %.1f ns per object, %.2f faults per "
               "1000\n", p->name, b, bf);
        char name[96];
        snprintf(name, sizeof name, "small_%s_alloc_only_ns", p->name);
        bench_line(name, b, "ns");
    }

    /* The policies: each forced, and what the default chose. */
    peer *k4 = peer_named("region-4k"), *hu = peer_named("region-huge"), *np = peer_named("region-nopop");
    if (ref->runs) {
        double share[RUNS_MAX];
        memcpy(share, ref->huge_share, sizeof share);
        double chosen = bench_median(share, ref->runs);
        printf("\nthe policies in a fresh process (pass 1, ns per object): default (GB_HUGE=auto, GB_POPULATE=auto) "
               "%.1f", ref1);
        if (k4->runs)
            printf(", 4 KiB pages %.1f", med(k4, k4->total, 0));
        if (hu->runs)
            printf(", huge pages %.1f", med(hu, hu->total, 0));
        if (np->runs)
            printf(", not populated %.1f", med(np, np->total, 0));
        printf("\nthe default chose on this host: %.0f%% of the region's block bytes in huge pages at the end of "
               "pass 1 (median of %d runs)\n", 100 * chosen, ref->runs);
        bench_line("small_region_map_huge_share", chosen, "ratio");
    }

    printf("\nresident size after the objects are freed, read from outside (/proc/<pid>/statm), MiB above\n"
           "the child's baseline (its size and pointer arrays); LazyFree pages (MADV_FREE) still count\n");
    printf("  %-12s %9s %9s %9s %9s  %-26s %9s\n", "peer", "peak", "pass 1", "pass 2", "LazyFree", "purge call",
           "purged");
    bool peak_missing = false;
    for (int i = 0; i < NPEERS; i++) {
        peer *p = &peers[i];
        if (!p->present || p->runs == 0)
            continue;
        char peak[16] = "n/a";
        if (isnan(p->peak_mib))
            peak_missing = true;
        else
            snprintf(peak, sizeof peak, "%.1f", p->peak_mib);
        printf("  %-12s %9s %9.1f %9.1f %9.1f  %-26s %9.1f\n", p->name, peak, p->kept_mib[0], p->kept_mib[1],
               p->lazy_mib, p->purge, p->purged_mib);
    }
    if (peak_missing)
        printf("  (peak n/a: this OS reports no resident peak of another process)\n");
    printf("\n");
    for (int i = 0; i < NPEERS; i++) {
        peer *p = &peers[i];
        if (!p->present || p->runs == 0)
            continue;
        char name[96];
        /* No line for a peak not measured: the readers of these lines
         * (ci/bench_readme.sh, ci/charts.sh) take a missing figure as not
         * measured, and any number as a measurement. */
        if (!isnan(p->peak_mib)) {
            snprintf(name, sizeof name, "resident_%s_peak_mib", p->name);
            bench_line(name, p->peak_mib, "MiB");
        }
        snprintf(name, sizeof name, "resident_%s_after_mib", p->name);
        bench_line(name, p->kept_mib[1], "MiB");
        snprintf(name, sizeof name, "resident_%s_lazyfree_mib", p->name);
        bench_line(name, p->lazy_mib, "MiB");
        snprintf(name, sizeof name, "resident_%s_purged_mib", p->name);
        bench_line(name, p->purged_mib, "MiB");
    }
    return 0;
}

#endif
