/* churn_bench.c -- the program that allocates and frees hardest: regions of
 * 1-8 MB entered, written and left 10,000 times, per block source.
 *
 * Giving memory back has a price: a page that leaves must be faulted in
 * again when the next region wants it, while malloc reuses what it kept.
 * The article measured its own mapping at about +16% on a whole program;
 * the target is the map source within 1.2x of malloc-back (the
 * poison whose blocks come from malloc and go back to it) on this churn,
 * with the resident size right after leaving small. This benchmark measures
 * every part of that, side by side in one run:
 *   - the churn itself: map source, heap source (program build), the
 *     malloc-back poison in a program build (glibc's threshold fixed at
 *     64 KiB, so its large blocks are glibc's own mappings) and in a library
 *     build (glibc's dynamic threshold: malloc as users have it, reusing
 *     what it kept), 10,000 regions in segments that take turns, with the
 *     resident size read from outside right after the last leave;
 *   - the cost against region size, 64 KB ... 64 MB, the median of the
 *     rounds with each source's spread over them (slowest round over
 *     fastest), with the resident size after each size's last leave, and
 *     per region the blocks the
 *     runtime's cache handed out (gb_stats: cache_hits) and the minor page
 *     faults (getrusage): a size whose regions fault as often as they have
 *     pages is one the cache does not serve;
 *   - the physics underneath (no runtime involved): a page fault, mmap +
 *     munmap of 16 KiB against malloc reuse, and 8 MiB mapped, written and
 *     unmapped with and without transparent huge pages; per MiB, the
 *     huge-page mapping and writing 8 MiB already resident are the two
 *     floors a region that gives everything back is measured against.
 * The malloc-back variants are separate executables built from this file
 * (a poison is a different link of the runtime); each variant runs in a
 * child of its own, stopped at checkpoints so the parent can read it.
 *
 * The targets are verdicts (verdict.h) on paired rounds: a segment of the
 * churn is a round of map against each build of malloc-back (S segments,
 * then more of a pair while its verdict is undecided, up to --churn-cap);
 * a round of the curve is map against malloc-back-lib at each size (R
 * rounds of every size, then more of the sizes up to the largest
 * undecided one, up to --cap), and the curve as a whole is met at 10 or
 * more of its 11 sizes.
 *
 * Usage: churn_bench [--iterations N] [--segments S] [--churn-cap C] [--rounds R] [--cap C]
 *                    [--point-mib M] [--peer-mib P]   (defaults 10000 8 12 5 31 1024 64)
 *        <exe> --child churn|curve <map|heap|default> <N|M> <segment|first sizes>  (run by the driver)
 * A benchmark, not a test: nothing here fails on a number.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench.h"
#include "floor.h"
#include "verdict.h"
#include "giveback.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)

/* ROUNDS_MAX: the most rounds of the curve (--cap); SEGMENTS_MAX: of the
 * whole churn (--churn-cap). */
enum { ROUNDS_MAX = 32, SEGMENTS_MAX = 32, CURVE_POINTS = 11 };

/* ------------------------------------------------------------ the work */

/* A piece size, log-uniform over [16 B, 2 * cap): an octave first, then a
 * point inside it. Most pieces are small; most bytes are in large ones,
 * some larger than 1 MiB (blocks of their own without huge pages, where
 * chains stop at 1 MiB). */
static size_t piece(uint64_t *seed, size_t cap)
{
    int octaves = 0;
    while (((size_t)16 << (octaves + 1)) <= cap)
        octaves++;
    size_t base = (size_t)16 << (bench_rand(seed) % (uint64_t)(octaves + 1));
    return base + bench_rand(seed) % base;
}

/* Enters a region, allocates and writes pieces until it holds `bytes`,
 * leaves it. */
static void one_region(uint64_t *seed, size_t bytes, size_t piece_cap, int fill)
{
    gb_region *r = gb_enter();
    for (size_t total = 0; total < bytes;) {
        size_t n = piece(seed, piece_cap);
        if (n > bytes - total)
            n = bytes - total;
        memset(gb_alloc(n), fill, n);
        total += n;
    }
    gb_leave(r);
}

static const size_t curve_sizes[CURVE_POINTS] = {
    64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB,
    4 * MIB,  8 * MIB,   16 * MIB,  32 * MIB,  64 * MIB,
};

/* Before the baseline: one region entered and left, a sweep, and the
 * child's first line of output, so that what the runtime sets up once
 * and stdio's buffer are in the baseline, and the resident size after a
 * leave above it is what the leaves kept. */
static void settle(void)
{
    gb_leave(gb_enter());
    gb_sweep();
    printf("source %s build %s\n", gb_blocks_name(), gb_build_kind());
}

static void init_source(const char *source)
{
    gb_options o;
    gb_options_init(&o);
    if (strcmp(source, "map") == 0)
        o.blocks = GB_BLOCKS_MAP;
    else if (strcmp(source, "heap") == 0)
        o.blocks = GB_BLOCKS_HEAP;
    else if (strcmp(source, "default") != 0) {
        fprintf(stderr, "churn_bench: source %s: expected map, heap or default\n", source);
        exit(2);
    }
    gb_init(&o);
}

/* One segment of the churn: its own seeds, the same for every variant. */
static void child_churn(const char *source, long iterations, int segment)
{
    init_source(source);
    settle();
    gbgate_checkpoint("baseline", NULL);
    uint64_t seed = 7 + (uint64_t)segment * 1000003u, sizes = 1234 + (uint64_t)segment * 7919u;
    double bytes = 0, t0 = bench_now();
    for (long i = 0; i < iterations; i++) {
        size_t target = MIB + bench_rand(&sizes) % (7 * MIB + 1);
        one_region(&seed, target, MIB, (int)i);
        bytes += (double)target;
    }
    double t = bench_now() - t0;
    bench_result("seconds", t);
    bench_result("mean_mib", bytes / (double)iterations / (double)MIB);
    gbgate_checkpoint("left", NULL);
}

static uint64_t cache_hits(void)
{
    gb_stats st;
    gb_stats_get(&st);
    return st.cache_hits;
}

/* The first `upto` sizes (0: all), smallest first, from one seed. A round
 * that adds rounds to some sizes runs every size up to the largest of
 * them, never those sizes alone: what a size costs depends on the state
 * the sizes before it leave (glibc's heap and thresholds under
 * malloc-back-lib: run alone, its 8 MiB regions faulted more than twice as
 * often as after the smaller sizes), so every round of a size starts from
 * the same history. */
static void child_curve(const char *source, long point_mib, int upto)
{
    init_source(source);
    settle();
    gbgate_checkpoint("baseline", NULL);
    uint64_t seed = 11;
    for (int k = 0; k < (upto > 0 && upto < CURVE_POINTS ? upto : CURVE_POINTS); k++) {
        size_t size = curve_sizes[k];
        long n = (long)((size_t)point_mib * MIB / size);
        if (n < 4)
            n = 4;
        /* The counters are read outside the timed loop, so counting costs
         * the figure nothing. */
        uint64_t hits0 = cache_hits();
        long faults0 = bench_minor_faults();
        double t0 = bench_now();
        for (long i = 0; i < n; i++)
            one_region(&seed, size, size < MIB ? size : MIB, (int)i);
        double t = bench_now() - t0;
        long faults = bench_minor_faults() - faults0;
        uint64_t hits = cache_hits() - hits0;
        char key[32];
        snprintf(key, sizeof key, "curve%d", k);
        /* Microseconds per MiB allocated and written. */
        bench_result(key, t * 1e6 / ((double)n * (double)size / (double)MIB));
        snprintf(key, sizeof key, "hits%d", k);
        bench_result(key, (double)hits / (double)n);
        snprintf(key, sizeof key, "faults%d", k);
        bench_result(key, (double)faults / (double)n);
        snprintf(key, sizeof key, "left%d", k);
        gbgate_checkpoint(key, NULL);
    }
}

/* ------------------------------------------------------------ physics */

static void *must_map(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("churn_bench: mmap");
        exit(1);
    }
    return p;
}

static void touch(char *p, size_t n, size_t step)
{
    for (size_t i = 0; i < n; i += step)
        ((volatile char *)p)[i] = 1;
}

/* The floors, in microseconds per MiB (from the 8 MiB figures). */
static double floor_huge, floor_resident;

static void physics(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    printf("the physics underneath (no runtime involved; this machine, %zu-byte pages)\n", page);

    /* A fresh page: one write per page of a new 64 MiB mapping. */
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        char *p = must_map(64 * MIB);
        double t0 = bench_now();
        touch(p, 64 * MIB, page);
        double t = (bench_now() - t0) / (double)(64 * MIB / page);
        munmap(p, 64 * MIB);
        best = t < best ? t : best;
    }
    printf("  %-52s %10.3f us\n", "fault in a fresh page (write one byte)", best * 1e6);
    bench_line("physics_fault_us", best * 1e6, "us");

    /* 16 KiB: a mapping of its own, written, unmapped; against malloc
     * reuse of the same size (glibc keeps it: it is below its threshold). */
    enum { SMALL_N = 20000 };
    double t0 = bench_now();
    for (int i = 0; i < SMALL_N; i++) {
        char *p = must_map(16 * KIB);
        memset(p, i, 16 * KIB);
        munmap(p, 16 * KIB);
    }
    double map16 = (bench_now() - t0) / SMALL_N;
    t0 = bench_now();
    for (int i = 0; i < SMALL_N; i++) {
        char *p = must_map(16 * KIB);
        ((volatile char *)p)[0] = 1;
        munmap(p, 16 * KIB);
    }
    double map16_one = (bench_now() - t0) / SMALL_N;
    t0 = bench_now();
    for (int i = 0; i < SMALL_N; i++) {
        char *p = malloc(16 * KIB);
        if (!p)
            exit(1);
        memset(p, i, 16 * KIB);
        free(p);
    }
    double malloc16 = (bench_now() - t0) / SMALL_N;
    t0 = bench_now();
    for (int i = 0; i < SMALL_N * 10; i++) {
        char *volatile p = malloc(16 * KIB);
        free(p);
    }
    double malloc16_bare = (bench_now() - t0) / (SMALL_N * 10);
    printf("  %-52s %10.3f us\n", "mmap + write 16 KiB + munmap", map16 * 1e6);
    printf("  %-52s %10.3f us\n", "mmap + write one byte of 16 KiB + munmap", map16_one * 1e6);
    printf("  %-52s %10.3f us\n", "malloc + write 16 KiB + free (reused)", malloc16 * 1e6);
    printf("  %-52s %10.3f us\n", "malloc + free 16 KiB (reused, untouched)", malloc16_bare * 1e6);
    bench_line("physics_map16k_us", map16 * 1e6, "us");
    bench_line("physics_map16k_onepage_us", map16_one * 1e6, "us");
    bench_line("physics_malloc16k_us", malloc16 * 1e6, "us");
    bench_line("physics_malloc16k_bare_us", malloc16_bare * 1e6, "us");

    /* 8 MiB mapped, written, unmapped: 4 KiB pages, and a 2 MiB-aligned
     * mapping with MADV_HUGEPAGE (THP in madvise mode takes it); against
     * writing 8 MiB that is already resident. */
    enum { BIG_N = 40 };
    size_t big = 8 * MIB, huge = 2 * MIB;
    t0 = bench_now();
    for (int i = 0; i < BIG_N; i++) {
        char *p = must_map(big);
        memset(p, i, big);
        munmap(p, big);
    }
    double map8 = (bench_now() - t0) / BIG_N;
    t0 = bench_now();
    for (int i = 0; i < BIG_N; i++) {
        char *raw = must_map(big + huge);
        char *p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
        (void)madvise(p, big, MADV_HUGEPAGE);
#endif
        memset(p, i, big);
        munmap(raw, big + huge);
    }
    double map8_thp = (bench_now() - t0) / BIG_N;
    char *res = must_map(big);
    memset(res, 0, big);
    t0 = bench_now();
    for (int i = 0; i < BIG_N; i++)
        memset(res, i, big);
    double write8 = (bench_now() - t0) / BIG_N;
    munmap(res, big);
    printf("  %-52s %10.3f ms\n", "mmap + write 8 MiB + munmap (4 KiB pages)", map8 * 1e3);
    printf("  %-52s %10.3f ms\n", "the same, 2 MiB-aligned with MADV_HUGEPAGE", map8_thp * 1e3);
    printf("  %-52s %10.3f ms\n", "write 8 MiB already resident", write8 * 1e3);
    bench_line("physics_map8m_ms", map8 * 1e3, "ms");
    bench_line("physics_map8m_thp_ms", map8_thp * 1e3, "ms");
    bench_line("physics_write8m_resident_ms", write8 * 1e3, "ms");
    /* Per MiB, what no region that gives its memory back can beat: its
     * pages must come from the kernel again, at best as huge pages; and
     * what one that kept them would still pay, writing them (regions small
     * enough to stay in the CPU's caches write faster). */
    floor_huge = map8_thp * 1e6 / 8;
    floor_resident = write8 * 1e6 / 8;
    printf("  %-52s %10.1f us\n", "floor per MiB: mapped with huge pages, written, unmapped", floor_huge);
    printf("  %-52s %10.1f us\n", "floor per MiB: written, already resident", floor_resident);
    bench_line("physics_floor_huge_us_per_mib", floor_huge, "us");
    bench_line("physics_floor_resident_us_per_mib", floor_resident, "us");

    /* The ways to get 8 MiB of fresh memory resident and written (mapped,
     * made resident, written, unmapped; floor.c), the median of 7 rounds
     * each; a way this kernel refuses prints "not available" and no line.
     * The cheapest fresh one is the floor a region's fresh blocks meet. */
    double secs[FLOOR_METHODS], cheapest_s;
    int cheapest = floor_cheapest_fresh(big, 7, &cheapest_s, secs);
    for (int m = 0; m < FLOOR_METHODS; m++) {
        char name[64];
        snprintf(name, sizeof name, "physics_%s_us_per_mib", floor_name((floor_method)m));
        if (secs[m] < 0) {
            printf("  %-52s %13s\n", floor_what((floor_method)m), "not available");
            continue;
        }
        printf("  %-52s %10.1f us per MiB\n", floor_what((floor_method)m), secs[m] * 1e6 / 8);
        bench_line(name, secs[m] * 1e6 / 8, "us");
    }
    if (cheapest >= 0) {
        printf("  %-52s %10.1f us per MiB (%s)\n", "floor: the cheapest fresh way", cheapest_s * 1e6 / 8,
               floor_name((floor_method)cheapest));
        bench_line("physics_floor_fresh_us_per_mib", cheapest_s * 1e6 / 8, "us");
    }
    printf("\n");
}

/* ------------------------------------------------------------ the driver */

typedef struct variant {
    const char *name;
    const char *what;
    const char *exe;    /* sibling executable, or NULL: a fork of this one */
    const char *source; /* map, heap, or default */
    bool present;
    bool judged; /* in the per-size verdict: the map source and malloc-back-lib */
    int segs;    /* churn segments of the first rounds run (the figure's regions) */
    int runs;    /* curve children run */
    double seconds[SEGMENTS_MAX]; /* a churn round's seconds, NaN where it did not run */
    int cn[CURVE_POINTS];         /* the curve's runs of each size */
    double curve[CURVE_POINTS][ROUNDS_MAX];
    double hits[CURVE_POINTS][ROUNDS_MAX], faults[CURVE_POINTS][ROUNDS_MAX]; /* per region */
    double after_mib, curve_after_mib[CURVE_POINTS], mean_mib;
    char blocks[64];
} variant;

static variant variants[] = {
    {.name = "map", .what = "map source (own mappings), program build", .source = "map", .present = true,
     .judged = true},
    {.name = "heap", .what = "heap source (malloc, threshold fixed)", .source = "heap", .present = true},
    {.name = "malloc-back", .what = "poison malloc-back, program build", .exe = "churn_malloc_back",
     .source = "default"},
    {.name = "malloc-back-lib", .what = "poison malloc-back, library build", .exe = "churn_malloc_back_library",
     .source = "default", .judged = true},
};
enum { NVARIANTS = sizeof variants / sizeof variants[0] };

/* A child's work: a churn's regions (arg) of one segment (extra: its
 * seeds), or the curve's MiB per size (arg) over its first sizes (extra:
 * how many, 0 for all). */
typedef struct job {
    const char *what;
    const char *source;
    long arg;
    long extra;
} job;

static void child_job(void *arg)
{
    job *j = arg;
    if (strcmp(j->what, "churn") == 0)
        child_churn(j->source, j->arg, (int)j->extra);
    else
        child_curve(j->source, j->arg, (int)j->extra);
}

static int run_variant(variant *v, const char *what, long arg, long extra, gbgate_child *c)
{
    char abuf[32], sbuf[32];
    snprintf(abuf, sizeof abuf, "%ld", arg);
    snprintf(sbuf, sizeof sbuf, "%ld", extra);
    if (v->exe) {
        char exe[4096];
        snprintf(exe, sizeof exe, "%s", bench_sibling(v->exe));
        char *argv[] = {exe, "--child", (char *)what, (char *)v->source, abuf, sbuf, NULL};
        return gbgate_run(c, NULL, NULL, exe, argv, NULL);
    }
    job j = {what, v->source, arg, extra};
    return gbgate_run(c, child_job, &j, NULL, NULL, NULL);
}

static double sum(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

static double kib_above(const gbgate_child *c, const char *name)
{
    const gbgate_mem *base = gbgate_mem_at(c, "baseline"), *m = gbgate_mem_at(c, name);
    return base && m ? (double)(m->rss_kib - base->rss_kib) / 1024.0 : -1;
}

static double med(const double *v, int n)
{
    double tmp[ROUNDS_MAX];
    memcpy(tmp, v, (size_t)n * sizeof *v);
    return bench_median(tmp, n);
}

/* The cache's bound in MiB as the children run it: the most a region
 * source that gives its blocks back may keep resident once every region is
 * left. -1 when it is not the default (GB_CACHE set) or this runtime names
 * no default. */
static double cache_bound_mib(void)
{
#ifdef GB_CACHE_DEFAULT
    if (!getenv("GB_CACHE"))
        return (double)GB_CACHE_DEFAULT / (double)MIB;
#endif
    return -1;
}

static double extreme(const double *v, int n, bool high)
{
    double x = v[0];
    for (int i = 1; i < n; i++)
        x = high ? (v[i] > x ? v[i] : x) : (v[i] < x ? v[i] : x);
    return x;
}

/* How far a size's figure moved between rounds: the slowest round over
 * the fastest (1.00 when they agree); 0 with no rounds. */
static double spread(const double *v, int n)
{
    if (n <= 0)
        return 0;
    double lo = extreme(v, n, false);
    return lo > 0 ? extreme(v, n, true) / lo : 0;
}

/* The targets, each a verdict (verdict.h): the whole churn, map against
 * each build of malloc-back; map against malloc-back-lib at each size of
 * the curve; and the resident sizes, counters read once. */
static verdict churn_vs_mb, churn_vs_mbl, churn_resident, size_verdict[CURVE_POINTS], sizes_resident;
static char size_verdict_name[CURVE_POINTS][32];

/* The rounds' map / malloc-back-lib at size p, the lowest and highest in
 * *lo and *hi (the rounds of its verdict); false when it has none. */
static bool round_ratios(int p, double *lo, double *hi)
{
    const verdict *v = &size_verdict[p];
    if (v->n == 0)
        return false;
    *lo = extreme(v->r, v->n, false);
    *hi = extreme(v->r, v->n, true);
    return true;
}

/* One variant's segment of the churn, round r (its seeds): its seconds,
 * NaN when it failed (it is not run again). The first `segments` rounds
 * are the churn's figure, kept in v->seconds. */
static double churn_round(variant *v, long per_segment, int r, int segments)
{
    gbgate_child c;
    if (!v->present)
        return NAN;
    if (run_variant(v, "churn", per_segment, r, &c) != 0) {
        fprintf(stderr, "churn_bench: variant %s failed\n", v->name);
        v->present = false;
        v->segs = 0;
        return NAN;
    }
    double t = bench_child_result(&c, "seconds");
    if (r < segments && r < SEGMENTS_MAX) {
        v->seconds[r] = t;
        v->segs++;
    }
    v->mean_mib = bench_child_result(&c, "mean_mib");
    double after = kib_above(&c, "left");
    v->after_mib = after > v->after_mib ? after : v->after_mib;
    const char *src = strstr(c.out, "source ");
    if (src)
        snprintf(v->blocks, sizeof v->blocks, "%.*s", (int)strcspn(src + 7, "\n"), src + 7);
    gbgate_child_free(&c);
    return t;
}

/* The whole churn's rounds: the map source between the two builds of
 * malloc-back, one before it and one after it, the order reversed every
 * other round, so that each pair is measured back to back and in both
 * orders alike (a drift of the machine cancels); then, in the first
 * `segments` rounds, the heap source. After those rounds a build of
 * malloc-back runs only while its verdict is undecided, up to the cap. */
static void run_churn(long per_segment, int segments, int cap)
{
    variant *map = &variants[0], *heap = &variants[1], *mb = &variants[2], *mbl = &variants[3];
    for (int r = 0; r < (segments > cap ? segments : cap) && r < SEGMENTS_MAX; r++) {
        bool base = r < segments;
        bool want_b = mb->present && (base || verdict_wants(&churn_vs_mb));
        bool want_l = mbl->present && (base || verdict_wants(&churn_vs_mbl));
        if (!base && !want_b && !want_l)
            break;
        variant *first = verdict_a_first(r) ? mb : mbl;
        bool want_first = first == mb ? want_b : want_l, want_last = first == mb ? want_l : want_b;
        double tf = want_first ? churn_round(first, per_segment, r, segments) : NAN;
        double tm = churn_round(map, per_segment, r, segments);
        variant *last = first == mb ? mbl : mb;
        double tl = want_last ? churn_round(last, per_segment, r, segments) : NAN;
        double tb = first == mb ? tf : tl, tlib = first == mb ? tl : tf;
        verdict_offer(&churn_vs_mb, tm / tb);
        verdict_offer(&churn_vs_mbl, tm / tlib);
        if (base)
            churn_round(heap, per_segment, r, segments);
    }
}

/* One curve child of variant v over its first `upto` sizes (0: all):
 * each size's figures go into v's arrays and its us per MiB into out[]
 * (NaN for a size not run); false when the child failed (it is not run
 * again). */
static bool curve_round(variant *v, long mib, int upto, double out[CURVE_POINTS])
{
    for (int p = 0; p < CURVE_POINTS; p++)
        out[p] = NAN;
    if (!v->present)
        return false;
    gbgate_child d;
    if (run_variant(v, "curve", mib, upto, &d) != 0) {
        fprintf(stderr, "churn_bench: variant %s failed\n", v->name);
        v->present = false;
        return false;
    }
    v->runs++;
    for (int p = 0; p < (upto > 0 ? upto : CURVE_POINTS); p++) {
        if (v->cn[p] >= ROUNDS_MAX)
            continue;
        char key[32];
        int k = v->cn[p]++;
        snprintf(key, sizeof key, "curve%d", p);
        v->curve[p][k] = out[p] = bench_child_result(&d, key);
        snprintf(key, sizeof key, "hits%d", p);
        v->hits[p][k] = bench_child_result(&d, key);
        snprintf(key, sizeof key, "faults%d", p);
        v->faults[p][k] = bench_child_result(&d, key);
        snprintf(key, sizeof key, "left%d", p);
        double after = kib_above(&d, key);
        v->curve_after_mib[p] = k == 0 || after > v->curve_after_mib[p] ? after : v->curve_after_mib[p];
    }
    gbgate_child_free(&d);
    return true;
}

/* The curve's rounds: the map source and malloc-back-lib back to back,
 * their order reversed every other round; in the first `rounds` rounds
 * over every size, then, up to the cap, over the sizes up to the largest
 * whose verdict is undecided (the small sizes, the close ones, cost
 * little; the large ones, slow for malloc-back-lib, are rarely close). A
 * size whose verdict is decided takes no more rounds, though it runs in
 * them. The heap source and the program build of malloc-back, figures
 * beside them, run in the first `rounds` rounds only. */
static void run_curve(long point_mib, long peer_mib, int rounds, int cap)
{
    variant *map = &variants[0], *heap = &variants[1], *mb = &variants[2], *mbl = &variants[3];
    for (int r = 0; r < (rounds > cap ? rounds : cap) && r < ROUNDS_MAX; r++) {
        int upto = 0;
        for (int p = 0; p < CURVE_POINTS; p++)
            if (verdict_wants(&size_verdict[p]))
                upto = p + 1;
        if (r >= rounds && !upto)
            break;
        if (r < rounds)
            upto = 0;
        double a[CURVE_POINTS], b[CURVE_POINTS];
        if (verdict_a_first(r)) {
            curve_round(map, point_mib, upto, a);
            curve_round(mbl, point_mib, upto, b);
        } else {
            curve_round(mbl, point_mib, upto, b);
            curve_round(map, point_mib, upto, a);
        }
        for (int p = 0; p < CURVE_POINTS; p++)
            verdict_offer(&size_verdict[p], a[p] / b[p]);
        if (r < rounds) {
            curve_round(heap, peer_mib, 0, a);
            curve_round(mb, peer_mib, 0, a);
        }
    }
}

static const char *size_name(size_t s, char *buf, size_t n)
{
    if (s >= MIB)
        snprintf(buf, n, "%zu MB", s / MIB);
    else
        snprintf(buf, n, "%zu KB", s / KIB);
    return buf;
}

int main(int argc, char **argv)
{
    /* The per-size verdict compares the map source with malloc-back-lib:
     * both are cheap per MiB (tens of us below 4 MB), so they get 1 GiB of
     * regions per size, enough that a small size is timed over tens of
     * milliseconds, not a few, and at least five rounds; the sizes still
     * undecided then get more, up to 31 (a round of the small sizes takes
     * a fraction of a second). The heap source and the program build of
     * malloc-back fault every page (about 4 ms per MiB at every size):
     * printed beside them, they get 64 MiB per size in five rounds. The
     * whole churn's 10,000 regions are 8 segments, 8 rounds of its
     * verdicts; a segment of malloc-back's program build takes about 20 s,
     * so its pairs stop at 12. */
    long iterations = 10000, point_mib = 1024, peer_mib = -1;
    int rounds = 5, segments = 8, cap = 31, churn_cap = 12;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = atol(argv[++i]);
        else if (strcmp(argv[i], "--segments") == 0 && i + 1 < argc)
            segments = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cap") == 0 && i + 1 < argc)
            cap = atoi(argv[++i]);
        else if (strcmp(argv[i], "--churn-cap") == 0 && i + 1 < argc)
            churn_cap = atoi(argv[++i]);
        else if (strcmp(argv[i], "--point-mib") == 0 && i + 1 < argc)
            point_mib = atol(argv[++i]);
        else if (strcmp(argv[i], "--peer-mib") == 0 && i + 1 < argc)
            peer_mib = atol(argv[++i]);
        else if (strcmp(argv[i], "--child") == 0 && i + 4 < argc) {
            job j = {argv[i + 1], argv[i + 2], atol(argv[i + 3]), atol(argv[i + 4])};
            child_job(&j);
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--iterations N] [--segments S] [--churn-cap C] [--rounds R] [--cap C] "
                            "[--point-mib M] [--peer-mib P]\n", argv[0]);
            return 2;
        }
    }
    if (peer_mib < 0)
        peer_mib = point_mib < 64 ? point_mib : 64;
    if (rounds < 1 || rounds > ROUNDS_MAX || cap < 1 || cap > ROUNDS_MAX || segments < 1 ||
        segments > SEGMENTS_MAX || churn_cap < 1 || churn_cap > SEGMENTS_MAX || iterations < segments ||
        point_mib < 1 || peer_mib < 1) {
        fprintf(stderr, "churn_bench: rounds and cap 1..%d, segments and churn-cap 1..%d, iterations at least "
                        "segments, point-mib and peer-mib at least 1\n", ROUNDS_MAX, SEGMENTS_MAX);
        return 2;
    }
    for (int i = 0; i < NVARIANTS; i++)
        if (variants[i].exe)
            variants[i].present = access(bench_sibling(variants[i].exe), X_OK) == 0;

    physics();

    /* The churn: each variant's regions are cut into segments, and the
     * segments of all variants take turns, so a slow spell of the machine
     * hits every variant alike; a variant's figure is the sum of its
     * segments (all of its regions), and each segment is a round of the
     * verdicts against malloc-back. */
    long per_segment = iterations / segments;
    iterations = per_segment * segments;
    int least = churn_cap < VERDICT_MIN_ROUNDS ? churn_cap : VERDICT_MIN_ROUNDS;
    verdict_init(&churn_vs_mb, "churn_vs_malloc_back", VERDICT_AT_MOST, 1.2, least, churn_cap);
    verdict_init(&churn_vs_mbl, "churn_vs_malloc_back_lib", VERDICT_AT_MOST, 1.2, least, churn_cap);
    for (int s = 0; s < SEGMENTS_MAX; s++)
        for (int i = 0; i < NVARIANTS; i++)
            variants[i].seconds[s] = NAN;
    run_churn(per_segment, segments, churn_cap);

    /* The curve: map against malloc-back-lib at most 1.0 at each size, a
     * verdict each. */
    least = cap < VERDICT_MIN_ROUNDS ? cap : VERDICT_MIN_ROUNDS;
    for (int p = 0; p < CURVE_POINTS; p++) {
        snprintf(size_verdict_name[p], sizeof size_verdict_name[p], "churn_size_%zuk", curve_sizes[p] / KIB);
        verdict_init(&size_verdict[p], size_verdict_name[p], VERDICT_AT_MOST, 1.0, least, cap);
    }
    run_curve(point_mib, peer_mib, rounds, cap);

    variant *map = &variants[0], *mb = &variants[2], *mbl = &variants[3];
    printf("churn: %ld regions of 1-8 MB (mean %.2f MiB), pieces 16 B - 2 MiB log-uniform, each written;\n"
           "%d segments of %ld regions per variant, taking turns; seconds are the sum, the ratio range is\n"
           "over segments; resident size read from outside right after a segment's last leave, MiB above\n"
           "the child's baseline before its first region (the largest of the segments)\n",
           iterations, map->mean_mib, segments, per_segment);
    double mb_s = mb->segs == segments ? sum(mb->seconds, segments) : 0;
    double mbl_s = mbl->segs == segments ? sum(mbl->seconds, segments) : 0;
    printf("  %-16s %-42s %8s %10s %8s %13s %8s %9s\n", "variant", "what", "seconds", "us/region", "/ m-back",
           "(range)", "/ m-b-lib", "resident");
    for (int i = 0; i < NVARIANTS; i++) {
        variant *v = &variants[i];
        if (v->segs != segments) {
            printf("  %-16s %-42s (not built or failed: skipped)\n", v->name, v->what);
            continue;
        }
        double t = sum(v->seconds, segments), lo = 1e9, hi = 0;
        for (int k = 0; mb_s && k < segments; k++) {
            double r = v->seconds[k] / mb->seconds[k];
            lo = r < lo ? r : lo;
            hi = r > hi ? r : hi;
        }
        char range[32] = "-";
        if (mb_s)
            snprintf(range, sizeof range, "%.2f-%.2f", lo, hi);
        printf("  %-16s %-42s %8.2f %10.1f %8.3f %13s %8.3f %9.1f\n", v->name, v->what, t,
               t * 1e6 / (double)iterations, mb_s ? t / mb_s : 0, range, mbl_s ? t / mbl_s : 0, v->after_mib);
    }
    printf("\n");
    /* What was run, so a table made from these lines can say so. */
    bench_line("churn_regions_count", (double)iterations, "regions");
    for (int i = 0; i < NVARIANTS; i++) {
        variant *v = &variants[i];
        if (v->segs != segments)
            continue;
        char name[96];
        double t = sum(v->seconds, segments);
        snprintf(name, sizeof name, "churn_%s_s", v->name);
        bench_line(name, t, "s");
        snprintf(name, sizeof name, "churn_%s_us_per_region", v->name);
        bench_line(name, t * 1e6 / (double)iterations, "us");
        snprintf(name, sizeof name, "churn_%s_resident_mib", v->name);
        bench_line(name, v->after_mib, "MiB");
        if (mb_s && v != mb) {
            snprintf(name, sizeof name, "churn_ratio_%s_vs_malloc-back", v->name);
            bench_line(name, t / mb_s, "ratio");
        }
        if (mbl_s && v != mbl) {
            snprintf(name, sizeof name, "churn_ratio_%s_vs_malloc-back-lib", v->name);
            bench_line(name, t / mbl_s, "ratio");
        }
    }
    double map_s = map->segs == segments ? sum(map->seconds, segments) : 0;
    if (map_s && mb_s)
        printf("map against malloc-back (program build): %.3fx over the segments (target <= 1.2x)\n",
               map_s / mb_s);
    if (map_s && mbl_s)
        printf("map against malloc-back (library build: glibc's dynamic threshold, reuse): %.3fx over the "
               "segments (target <= 1.2x)\n", map_s / mbl_s);
    /* The resident size is a counter, not a timing: its verdict is the
     * largest reading of any segment's, against the bound. */
    verdict_init(&churn_resident, "churn_resident", VERDICT_AT_MOST, 64, 1, 1);
    if (map_s)
        verdict_reading(&churn_resident, map->after_mib);
    printf("\ncost against region size (us per MiB allocated and written, median of at least %d rounds, more\n"
           "for the judged sizes while undecided, see the verdicts below; %ld MiB of regions\n"
           "per size for map and malloc-back-lib, %ld MiB for heap and malloc-back, which fault every page) and the\n"
           "resident size right after each size's last leave (MiB above baseline, largest)\n",
           rounds, point_mib, peer_mib);
    printf("  %-7s", "region");
    for (int i = 0; i < NVARIANTS; i++)
        if (variants[i].runs)
            printf(" %15s", variants[i].name);
    printf(" %10s %10s |", "map/m-back", "map/m-b-l");
    for (int i = 0; i < NVARIANTS; i++)
        if (variants[i].runs)
            printf(" %7.7s", variants[i].name);
    printf("\n");
    for (int p = 0; p < CURVE_POINTS; p++) {
        char sz[24];
        printf("  %-7s", size_name(curve_sizes[p], sz, sizeof sz));
        for (int i = 0; i < NVARIANTS; i++)
            if (variants[i].runs)
                printf(" %15.1f", med(variants[i].curve[p], variants[i].cn[p]));
        double m = map->runs ? med(map->curve[p], map->cn[p]) : 0;
        double b = mb->runs ? med(mb->curve[p], mb->cn[p]) : 0;
        double bl = mbl->runs ? med(mbl->curve[p], mbl->cn[p]) : 0;
        printf(" %10.3f %10.3f |", b ? m / b : 0, bl ? m / bl : 0);
        for (int i = 0; i < NVARIANTS; i++)
            if (variants[i].runs)
                printf(" %7.1f", variants[i].curve_after_mib[p]);
        printf("\n");
    }
    /* The spread: how far the rounds moved, beside the verdicts that take
     * it into account. */
    printf("\nthe spread over the rounds: each source's slowest round over its fastest per size, and the\n"
           "lowest and highest of the rounds' map / malloc-back-lib (each round runs them back to back)\n");
    printf("  %-7s", "region");
    for (int i = 0; i < NVARIANTS; i++)
        if (variants[i].runs)
            printf(" %15s", variants[i].name);
    printf(" %15s\n", "map/m-b-l range");
    for (int p = 0; p < CURVE_POINTS; p++) {
        char sz[24], cell[40] = "-";
        double lo, hi;
        printf("  %-7s", size_name(curve_sizes[p], sz, sizeof sz));
        for (int i = 0; i < NVARIANTS; i++)
            if (variants[i].runs)
                printf(" %14.2fx", spread(variants[i].curve[p], variants[i].cn[p]));
        if (round_ratios(p, &lo, &hi))
            snprintf(cell, sizeof cell, "%.2f-%.2f", lo, hi);
        printf(" %15s\n", cell);
    }
    /* The churn target per size: the map source at or below the
     * library build of malloc-back (glibc reusing what it kept) at every
     * size, while giving back all but the cache's bound: a cache of
     * recently returned blocks is what lets it reuse warm pages too. The
     * program build is printed beside it. */
    /* Resident after leave is read from outside: beside what the runtime
     * kept, the child's own stack and stdio touch a page or so after its
     * baseline (4 KiB, measured); 64 KiB is allowed for them. */
    const double slack = 64.0 / 1024;
    double bound = cache_bound_mib();
    for (int pass = 0; pass < 2; pass++) {
        variant *base = pass == 0 ? mbl : mb;
        if (!map->runs || !base->runs)
            continue;
        printf("map against %s by size, the ratio of the medians%s:\n ", base->name,
               pass == 0 ? " (the target: at most 1.0x at each size; the verdicts below)" : "");
        for (int p = 0; p < CURVE_POINTS; p++) {
            char sz[24];
            printf(" %s %.2fx", size_name(curve_sizes[p], sz, sizeof sz),
                   med(map->curve[p], map->cn[p]) / med(base->curve[p], base->cn[p]));
        }
        printf("\n");
    }
    int p8 = 0;
    while (curve_sizes[p8] != 8 * MIB)
        p8++;
    if (map->runs && floor_huge > 0)
        printf("8 MiB regions against the huge-page floor: map %.1f us per MiB, %.2fx the floor (%.1f us)\n",
               med(map->curve[p8], map->cn[p8]), med(map->curve[p8], map->cn[p8]) / floor_huge, floor_huge);
    /* The resident size after each size's last leave is a counter: at most
     * the cache's bound and the child's own slack at every size, judged on
     * the largest reading of any size (not judged when the bound is not
     * known). */
    verdict_init(&sizes_resident, "churn_sizes_resident", VERDICT_AT_MOST, bound + slack, 1, 1);
    if (bound >= 0 && map->runs) {
        double worst = 0;
        for (int p = 0; p < CURVE_POINTS; p++)
            if (map->cn[p] && map->curve_after_mib[p] > worst)
                worst = map->curve_after_mib[p];
        verdict_reading(&sizes_resident, worst);
    }
    /* The curve as a whole: map at or below malloc-back-lib at 10 or more
     * of the 11 sizes. Each size's verdict is met, missed or undecided, so
     * the sizes met are at least those met and at most those not missed;
     * that interval is judged against 10: met when 10 or more sizes are
     * met, missed when 2 or more are missed (then at most 9 can be met),
     * undecided otherwise. A size not measured counts as undecided. */
    verdict sizes;
    verdict_init(&sizes, "churn_sizes", VERDICT_AT_LEAST, CURVE_POINTS - 1, 1, 1);
    int sizes_met = 0, sizes_missed = 0;
    for (int p = 0; p < CURVE_POINTS; p++) {
        sizes_met += size_verdict[p].state == VERDICT_MET;
        sizes_missed += size_verdict[p].state == VERDICT_MISSED;
    }
    if (map->runs && mbl->runs)
        verdict_fixed(&sizes, sizes_met, sizes_met, CURVE_POINTS - sizes_missed);
    printf("\n");
    const verdict *judged[CURVE_POINTS + 5] = {&churn_vs_mb, &churn_vs_mbl, &churn_resident};
    int nj = 3;
    for (int p = 0; p < CURVE_POINTS; p++)
        judged[nj++] = &size_verdict[p];
    judged[nj++] = &sizes;
    judged[nj++] = &sizes_resident;
    verdict_report(judged, nj);

    /* Why a size is or is not served by the cache: per region, the blocks
     * the cache handed out and the minor faults, beside the region's pages
     * (a region whose every page faults was given fresh memory). */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    printf("\nper region: blocks the cache handed out (gb_stats cache_hits) / minor page faults (getrusage),\n"
           "median of the rounds, beside the region's pages\n");
    printf("  %-7s %8s", "region", "pages");
    for (int i = 0; i < NVARIANTS; i++)
        if (variants[i].runs)
            printf(" %20s", variants[i].name);
    printf("\n");
    for (int p = 0; p < CURVE_POINTS; p++) {
        char sz[24], cell[48];
        printf("  %-7s %8zu", size_name(curve_sizes[p], sz, sizeof sz), curve_sizes[p] / page);
        for (int i = 0; i < NVARIANTS; i++) {
            variant *v = &variants[i];
            if (!v->runs)
                continue;
            snprintf(cell, sizeof cell, "%.1f / %.0f", med(v->hits[p], v->cn[p]), med(v->faults[p], v->cn[p]));
            printf(" %20s", cell);
        }
        printf("\n");
    }
    printf("\n");
    bench_line("curve_mib_per_size", (double)point_mib, "MiB");
    bench_line("curve_rounds", rounds, "rounds");
    bench_line("curve_peer_mib_per_size", (double)peer_mib, "MiB");
    if (bound >= 0) {
        bench_line("churn_cache_bound_mib", bound, "MiB");
        bench_line("churn_resident_slack_mib", slack, "MiB");
    }
    for (int p = 0; p < CURVE_POINTS; p++) {
        size_t kib = curve_sizes[p] / KIB;
        for (int i = 0; i < NVARIANTS; i++) {
            variant *v = &variants[i];
            if (!v->runs)
                continue;
            char name[96];
            double c = med(v->curve[p], v->cn[p]);
            snprintf(name, sizeof name, "curve_%s_%zuk_us_per_mib", v->name, kib);
            bench_line(name, c, "us");
            snprintf(name, sizeof name, "curve_%s_%zuk_spread", v->name, kib);
            bench_line(name, spread(v->curve[p], v->cn[p]), "ratio");
            snprintf(name, sizeof name, "curve_%s_%zuk_resident_mib", v->name, kib);
            bench_line(name, v->curve_after_mib[p], "MiB");
            snprintf(name, sizeof name, "curve_%s_%zuk_cache_hits_per_region", v->name, kib);
            bench_line(name, med(v->hits[p], v->cn[p]), "hits");
            snprintf(name, sizeof name, "curve_%s_%zuk_faults_per_region", v->name, kib);
            bench_line(name, med(v->faults[p], v->cn[p]), "faults");
            if (v != mb && mb->runs) {
                snprintf(name, sizeof name, "curve_ratio_%s_vs_malloc-back_%zuk", v->name, kib);
                bench_line(name, c / med(mb->curve[p], mb->cn[p]), "ratio");
            }
            if (v != mbl && mbl->runs) {
                snprintf(name, sizeof name, "curve_ratio_%s_vs_malloc-back-lib_%zuk", v->name, kib);
                bench_line(name, c / med(mbl->curve[p], mbl->cn[p]), "ratio");
                double lo, hi;
                if (v == map && round_ratios(p, &lo, &hi)) {
                    snprintf(name, sizeof name, "curve_ratio_%s_vs_malloc-back-lib_%zuk_min", v->name, kib);
                    bench_line(name, lo, "ratio");
                    snprintf(name, sizeof name, "curve_ratio_%s_vs_malloc-back-lib_%zuk_max", v->name, kib);
                    bench_line(name, hi, "ratio");
                }
            }
            if (floor_huge > 0) {
                snprintf(name, sizeof name, "curve_ratio_%s_vs_floor-huge_%zuk", v->name, kib);
                bench_line(name, c / floor_huge, "ratio");
            }
            if (floor_resident > 0) {
                snprintf(name, sizeof name, "curve_ratio_%s_vs_floor-resident_%zuk", v->name, kib);
                bench_line(name, c / floor_resident, "ratio");
            }
        }
    }
    return 0;
}
