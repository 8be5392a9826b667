/* handoff_bench.c -- work handed from a producer thread to a consumer: a
 * region handed over, against what a program does without the handoff.
 *
 * A producer thread builds a structure and a consumer thread walks it and
 * frees it: a parser and the worker that serves what it parsed. The shape
 * is a linked list of nodes of 32-256 B (uniformly mixed, the same sizes
 * for every contender), each written whole, 1 MiB and 16 MiB of them per
 * pass. The contenders:
 *   handoff   the producer enters a region, builds the list in it and
 *             detaches it (gb_region_detach); the consumer attaches it
 *             (gb_region_attach), walks it and leaves it, so the memory
 *             goes back to the OS from the consumer's thread;
 *   copy      what a program has without the handoff: the producer builds
 *             the list in its own region; the consumer enters one of its
 *             own, copies the list into it node by node and says so; the
 *             producer then leaves its region while the consumer walks the
 *             copy and leaves its own;
 *   glibc, jemalloc, mimalloc
 *             the producer mallocs each node; the consumer walks the list
 *             and frees each node, memory of another thread, which each
 *             allocator sends back to the arena or heap that owns it.
 * A pass is one build and one walk. Its time runs on the producer's
 * thread from its first allocation until the consumer says it is done, so
 * the two wake-ups between them are in it, for every contender alike.
 *
 * Each contender runs at each size in a child process of its own, several
 * passes in a row, read from outside at the gate kit's checkpoints (after
 * the set-up, and after the last pass: what the contender keeps resident,
 * and its peak). The child's figure is the median of its passes after the
 * first; the first, in a fresh process, also faults in what malloc keeps
 * for the next passes, so it is shown apart. jemalloc and mimalloc replace
 * malloc for their whole process, so they run as executables of their own
 * built from this file (HANDOFF_PEER_JEMALLOC, HANDOFF_PEER_MIMALLOC) that
 * only know how to be a child; a build without one skips it and says so.
 *
 * Rounds: two groups a round, copy - handoff - glibc and jemalloc -
 * handoff - mimalloc, each peer run right before or right after a run of
 * the handoff, the order reversed every other round (verdict.h), so a slow
 * spell of the machine falls on both sides of each ratio. A round's ratio
 * is the handoff's pass over the peer's: below 1 the handoff is faster.
 * The one target is a verdict at each size: the handoff at most 1.0x the
 * copy. The copy does all the handoff does (build the list, walk it, leave
 * a region, on the same threads in the same order) and more: it allocates
 * and writes the list a second time and leaves a second region; the
 * handoff adds only a detach and an attach, which move the region's few
 * blocks between two threads' indexes. A ratio above 1 would be a handoff
 * that costs more than the copy it exists to save. What each thread's
 * block cache holds is part of what is measured, as a program would meet
 * it: the copy's regions reuse the blocks each thread's own leaves gave
 * back, where the handoff's leave gives them to the consumer's cache and
 * the producer's next region maps fresh ones (the columns hits and faults
 * show which pass got which). No bound is argued for the malloc peers,
 * whose cost turns on what each keeps between passes (its own trim and
 * purge rules, left at their defaults here): their ratios are figures,
 * with the same distribution-free interval as the verdicts' and no
 * judgement.
 *
 * Usage: handoff_bench [--quick] [--rounds R] [--cap C]   (defaults 8 and 16; --quick: 1, 6, few passes)
 *        <exe> --child <contender> <MiB> <passes>        (what the driver runs)
 * A benchmark, not a test: nothing here fails on a number.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench.h"
#include "verdict.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(HANDOFF_PEER_JEMALLOC)
#include <jemalloc/jemalloc.h>
#define PEER_ONLY "jemalloc"
#elif defined(HANDOFF_PEER_MIMALLOC)
#include <mimalloc.h>
#define PEER_ONLY "mimalloc"
#else
#include "giveback.h"
#endif

#define MIB ((size_t)1 << 20)

/* PASSES_MAX: the most passes of one child; ROUNDS_MAX: the most rounds
 * (--cap); RUNS_MAX: the most runs of one contender at one size, the
 * handoff running twice a round. */
enum { NODE_MIN = 32, NODE_MAX = 256, PASSES_MAX = 256, ROUNDS_MAX = 32, RUNS_MAX = 2 * ROUNDS_MAX };

/* ------------------------------------------------------------ the work */

/* A node: its link, its size, its number, then bytes up to its size. */
typedef struct node {
    struct node *next;
    uint32_t size;
    uint32_t seq;
} node;

/* What the consumer reads of a node: its number and its last byte, which
 * the producer set to the number's low byte. */
static inline uint64_t visit(const node *x)
{
    return x->seq + ((const unsigned char *)x)[x->size - 1];
}

static void *must(void *p)
{
    if (!p) {
        fputs("handoff_bench: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

/* The list, in allocation order, each node written whole; alloc_expr
 * allocates sz bytes. A macro rather than a function taking an allocator,
 * so that no contender pays for an indirect call per node. */
#define BUILD(head, sizes, n, alloc_expr)                        \
    do {                                                         \
        node **tail_ = &(head);                                  \
        for (size_t i_ = 0; i_ < (n); i_++) {                    \
            size_t sz = (sizes)[i_];                             \
            node *x_ = (alloc_expr);                             \
            x_->size = (uint32_t)sz;                             \
            x_->seq = (uint32_t)i_;                              \
            memset(x_ + 1, (int)(i_ & 0xff), sz - sizeof(node)); \
            *tail_ = x_;                                         \
            tail_ = &x_->next;                                   \
        }                                                        \
        *tail_ = NULL;                                           \
    } while (0)

/* What producer and consumer share, under lock. The counters say whether
 * the consumer is ready, and how many passes the producer posted, the
 * consumer copied (copy only) and the consumer finished; each side waits
 * for the other's to reach its pass. */
typedef struct channel {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned ready, posted, copied, done;
    const char *peer;
    node *head;
#ifndef PEER_ONLY
    gb_region *r; /* the handoff's region in flight */
#endif
    double consume_s; /* the consumer's part of the pass */
    uint64_t sum;
    size_t count;
} channel;

static void signal_up(channel *c, unsigned *counter)
{
    pthread_mutex_lock(&c->lock);
    (*counter)++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void wait_for(channel *c, const unsigned *counter, unsigned pass)
{
    pthread_mutex_lock(&c->lock);
    while (*counter < pass)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

static bool is_malloc(const char *peer)
{
    return strcmp(peer, "glibc") == 0 || strcmp(peer, "jemalloc") == 0 || strcmp(peer, "mimalloc") == 0;
}

/* Before the baseline, each thread uses its allocator once (a region
 * entered and left, or a malloc and a free), so that what the runtime or
 * malloc sets up once per thread is in the baseline; the runtime's cache
 * is swept, so the resident size after the passes above the baseline is
 * what they kept. */
static void settle(const char *peer)
{
    if (is_malloc(peer)) {
        void *volatile p = must(malloc(64));
        free(p);
        return;
    }
#ifndef PEER_ONLY
    gb_leave(gb_enter());
    gb_sweep();
#endif
}

/* The consumer: settles, then each pass takes the list, walks it and
 * frees it its contender's way, and reports what it read. A head of NULL
 * ends it. */
static void *consumer(void *arg)
{
    channel *c = arg;
    settle(c->peer);
    signal_up(c, &c->ready);
    for (unsigned pass = 1;; pass++) {
        wait_for(c, &c->posted, pass);
        node *head = c->head;
        if (!head)
            return NULL;
        double t0 = bench_now();
        uint64_t sum = 0;
        size_t count = 0;
        if (is_malloc(c->peer)) {
            for (node *x = head, *next; x; x = next) {
                next = x->next;
                sum += visit(x);
                count++;
                free(x);
            }
        }
#ifndef PEER_ONLY
        else if (strcmp(c->peer, "handoff") == 0) {
            gb_region_attach(c->r);
            for (const node *x = head; x; x = x->next, count++)
                sum += visit(x);
            gb_leave(c->r);
        } else {
            gb_region *mine = gb_enter();
            node *copy = NULL, **tail = &copy;
            for (const node *x = head; x; x = x->next) {
                node *y = gb_alloc(x->size);
                memcpy(y, x, x->size);
                *tail = y;
                tail = &y->next;
            }
            *tail = NULL;
            /* The producer may leave its region from here on. */
            signal_up(c, &c->copied);
            for (const node *x = copy; x; x = x->next, count++)
                sum += visit(x);
            gb_leave(mine);
        }
#endif
        c->consume_s = bench_now() - t0;
        c->sum = sum;
        c->count = count;
        signal_up(c, &c->done);
    }
}

static void *map_touched(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("handoff_bench: mmap");
        exit(1);
    }
    memset(p, 1, bytes);
    return p;
}

/* Whether malloc in this process is the peer's own: a peer executable
 * whose link let glibc's malloc win would measure glibc under its name. */
static bool malloc_is_the_peers(void)
{
#if defined(HANDOFF_PEER_JEMALLOC)
    /* A jemalloc built without statistics cannot say: taken as its own. */
    uint64_t before = 0, after = 0;
    size_t len = sizeof before;
    if (mallctl("thread.allocated", &before, &len, NULL, 0) != 0)
        return true;
    void *volatile p = must(malloc(4000));
    free(p);
    len = sizeof after;
    return mallctl("thread.allocated", &after, &len, NULL, 0) == 0 && after >= before + 4000;
#elif defined(HANDOFF_PEER_MIMALLOC)
    char *p = must(malloc(64));
    p[0] = 0;
    bool ours = mi_is_in_heap_region(p);
    free(p);
    return ours;
#else
    return true;
#endif
}

static double cache_hits(const char *peer)
{
#ifndef PEER_ONLY
    if (!is_malloc(peer)) {
        gb_stats st;
        gb_stats_get(&st);
        return (double)st.cache_hits;
    }
#endif
    (void)peer;
    return 0;
}

/* The child: the sizes, the consumer thread, the baseline, then the
 * passes, each timed on this thread (the producer), and their medians. */
static void child(const char *peer, size_t mib, int passes)
{
    passes = passes < 1 ? 1 : passes > PASSES_MAX ? PASSES_MAX : passes;
    if (!malloc_is_the_peers()) {
        fprintf(stderr, "handoff_bench: malloc in this process is not %s's\n", peer);
        exit(3);
    }
#ifndef PEER_ONLY
    if (!is_malloc(peer)) {
        gb_options o;
        gb_options_init(&o);
        gb_init(&o);
    } else if (strcmp(peer, "glibc") != 0) {
        fprintf(stderr, "handoff_bench: %s runs as its own executable\n", peer);
        exit(2);
    }
    if (!is_malloc(peer) && strcmp(peer, "handoff") != 0 && strcmp(peer, "copy") != 0) {
        fprintf(stderr, "handoff_bench: unknown contender %s\n", peer);
        exit(2);
    }
#endif
    /* The sizes, from one seed, until they hold mib MiB. */
    size_t cap = mib * MIB / NODE_MIN + 1, n = 0, bytes = 0;
    uint16_t *sizes = map_touched(cap * sizeof *sizes);
    uint64_t seed = 42, expect = 0;
    while (bytes < mib * MIB && n < cap) {
        sizes[n] = (uint16_t)(NODE_MIN + bench_rand(&seed) % (NODE_MAX - NODE_MIN + 1));
        bytes += sizes[n];
        expect += n + (n & 0xff);
        n++;
    }
    channel c = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .peer = peer};
    pthread_t th;
    if (pthread_create(&th, NULL, consumer, &c) != 0) {
        fputs("handoff_bench: cannot start a thread\n", stderr);
        exit(1);
    }
    settle(peer);
    wait_for(&c, &c.ready, 1);
    printf("contender %s nodes %zu bytes %zu\n", peer, n, bytes);
    gbgate_checkpoint("baseline", NULL);

    double pass_ns[PASSES_MAX], build_ns[PASSES_MAX], consume_ns[PASSES_MAX], rest_ns[PASSES_MAX], hits0 = 0;
    long faults0 = 0;
    for (int k = 0; k < passes; k++) {
        unsigned pass = (unsigned)k + 1;
        if (k == 1) {
            hits0 = cache_hits(peer);
            faults0 = bench_minor_faults();
        }
        node *head = NULL;
        double t0 = bench_now();
#ifndef PEER_ONLY
        gb_region *r = NULL;
#endif
        if (is_malloc(peer)) {
            BUILD(head, sizes, n, must(malloc(sz)));
        }
#ifndef PEER_ONLY
        else {
            r = gb_enter();
            BUILD(head, sizes, n, gb_alloc(sz));
            if (strcmp(peer, "handoff") == 0) {
                gb_region_detach(r);
                c.r = r;
            }
        }
#endif
        double t1 = bench_now();
        c.head = head;
        signal_up(&c, &c.posted);
#ifndef PEER_ONLY
        if (strcmp(peer, "copy") == 0) {
            wait_for(&c, &c.copied, pass);
            gb_leave(r);
        }
#endif
        wait_for(&c, &c.done, pass);
        double t2 = bench_now();
        if (c.count != n || c.sum != expect) {
            fprintf(stderr,
                    "handoff_bench: %s: the consumer read %zu nodes (sum %llu), the producer built %zu "
                    "(sum %llu)\n",
                    peer, c.count, (unsigned long long)c.sum, n, (unsigned long long)expect);
            exit(1);
        }
        pass_ns[k] = (t2 - t0) * 1e9;
        build_ns[k] = (t1 - t0) * 1e9;
        consume_ns[k] = c.consume_s * 1e9;
        rest_ns[k] = pass_ns[k] - build_ns[k] - consume_ns[k];
    }

    int steady = passes > 1 ? passes - 1 : 1, from = passes > 1 ? 1 : 0;
    bench_result("nodes", (double)n);
    bench_result("first", pass_ns[0]);
    bench_result("pass", bench_median(pass_ns + from, steady));
    bench_result("build", bench_median(build_ns + from, steady));
    bench_result("consume", bench_median(consume_ns + from, steady));
    bench_result("rest", bench_median(rest_ns + from, steady));
    if (passes > 1) {
        bench_result("faults", (double)(bench_minor_faults() - faults0) / steady);
        bench_result("hits", (cache_hits(peer) - hits0) / steady);
    }
#ifndef PEER_ONLY
    if (!is_malloc(peer)) {
        gb_stats st;
        gb_stats_get(&st);
        bench_result("cached_mib", (double)st.bytes_cached / (double)MIB);
    }
#endif
    /* Read while the consumer still lives: a thread that exits gives its
     * block cache back, and a consumer in a program runs on. */
    gbgate_checkpoint("after", NULL);
    /* A NULL head stops the consumer. */
    c.head = NULL;
    signal_up(&c, &c.posted);
    pthread_join(th, NULL);
}

/* ------------------------------------------------------------ the driver */

#ifdef PEER_ONLY

int main(int argc, char **argv)
{
    if (argc != 5 || strcmp(argv[1], "--child") != 0 || strcmp(argv[2], PEER_ONLY) != 0) {
        fprintf(stderr, "usage: %s --child %s MIB PASSES (run by handoff_bench)\n", argv[0], PEER_ONLY);
        return 2;
    }
    child(PEER_ONLY, strtoul(argv[3], NULL, 10), atoi(argv[4]));
    return 0;
}

#else

/* The sizes of a pass and the passes a child runs at each: about 64 MiB
 * and 128 MiB of lists per child, so each child's median has a few dozen
 * passes to stand on at 1 MiB and several at 16 MiB; --quick runs fewer. */
static const struct {
    size_t mib;
    int passes, quick_passes;
} shapes[] = {{1, 64, 8}, {16, 8, 2}};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* A contender's runs at one size. */
typedef struct runs {
    int n;
    double pass[RUNS_MAX], first[RUNS_MAX], build[RUNS_MAX], consume[RUNS_MAX], rest[RUNS_MAX],
        faults[RUNS_MAX], hits[RUNS_MAX];
    int nratios;
    double ratio[ROUNDS_MAX];                    /* the handoff's pass over this contender's, one per round */
    double nodes, cached_mib, rss_mib, peak_mib; /* from the last run */
} runs;

typedef struct peer {
    const char *name;
    const char *what;
    const char *exe;     /* a sibling executable, or NULL: a fork of this one */
    const char *missing; /* the package without which it is not built */
    bool present;
    bool failed;
    runs at[NSHAPES];
} peer;

static peer peers[] = {
    {.name = "handoff",
     .what = "a region built, detached, attached by the consumer and left there",
     .present = true},
    {.name = "copy", .what = "a region built, copied into the consumer's region, both left", .present = true},
    {.name = "glibc", .what = "glibc malloc for each node, free of each on the consumer", .present = true},
    {.name = "jemalloc",
     .what = "jemalloc malloc for each node, free of each on the consumer",
     .exe = "handoff_bench_jemalloc",
     .missing = "libjemalloc-dev"},
    {.name = "mimalloc",
     .what = "mimalloc malloc for each node, free of each on the consumer",
     .exe = "handoff_bench_mimalloc",
     .missing = "libmimalloc-dev"},
};
enum { NPEERS = sizeof peers / sizeof peers[0] };

static verdict targets[NSHAPES];

typedef struct job {
    const char *peer;
    size_t mib;
    int passes;
} job;

static void child_job(void *arg)
{
    const job *j = arg;
    child(j->peer, j->mib, j->passes);
}

/* One run of p at shape s: the index of its figures, -1 when it failed
 * (and it is not run again). */
static int run_one(peer *p, int s, bool quick)
{
    runs *u = &p->at[s];
    if (!p->present || u->n >= RUNS_MAX)
        return -1;
    job j = {.peer = p->name,
             .mib = shapes[s].mib,
             .passes = quick ? shapes[s].quick_passes : shapes[s].passes};
    gbgate_child c;
    int rc;
    if (p->exe) {
        char exe[4096], mib[32], passes[32];
        snprintf(exe, sizeof exe, "%s", bench_sibling(p->exe));
        snprintf(mib, sizeof mib, "%zu", j.mib);
        snprintf(passes, sizeof passes, "%d", j.passes);
        char *argv[] = {exe, "--child", (char *)p->name, mib, passes, NULL};
        rc = gbgate_run(&c, NULL, NULL, exe, argv, NULL);
    } else {
        rc = gbgate_run(&c, child_job, &j, NULL, NULL, NULL);
    }
    const gbgate_mem *base = rc == 0 ? gbgate_mem_at(&c, "baseline") : NULL,
                     *after = rc == 0 ? gbgate_mem_at(&c, "after") : NULL;
    if (!base || !after) {
        fprintf(stderr, "handoff_bench: %s failed (status %d%s%s)\n", p->name, c.status,
                c.protocol[0] ? ", " : "", c.protocol);
        p->present = false;
        p->failed = true;
        gbgate_child_free(&c);
        return -1;
    }
    int r = u->n++;
    u->pass[r] = bench_child_result(&c, "pass");
    u->first[r] = bench_child_result(&c, "first");
    u->build[r] = bench_child_result(&c, "build");
    u->consume[r] = bench_child_result(&c, "consume");
    u->rest[r] = bench_child_result(&c, "rest");
    u->faults[r] = bench_child_result(&c, "faults");
    u->hits[r] = bench_child_result(&c, "hits");
    u->nodes = bench_child_result(&c, "nodes");
    u->cached_mib = bench_child_result(&c, "cached_mib");
    u->rss_mib = (double)(after->rss_kib - base->rss_kib) / 1024.0;
    /* A peak only where the OS keeps one another process can read. */
    u->peak_mib = after->hwm_kib > 0 ? (double)(after->hwm_kib - base->rss_kib) / 1024.0 : NAN;
    gbgate_child_free(&c);
    return r;
}

/* One side of a group: a peer run next to the handoff. */
typedef struct side {
    peer *p;
    bool wanted;
    int run;
} side;

/* A group's round: the handoff runs once, x just before it and y just
 * after it in even rounds and the other way round in odd ones, so that
 * each side is measured next to the handoff and in both orders alike over
 * the rounds. A side not wanted or not present is left out; the handoff
 * runs when either side does. Each side's ratio is kept; the handoff's run
 * index, -1 when it did not run or failed. */
static int group_round(peer *ref, side *x, side *y, int s, int round, bool quick)
{
    side *first = verdict_a_first(round) ? x : y, *last = first == x ? y : x;
    x->run = y->run = -1;
    bool fw = first->wanted && first->p->present, lw = last->wanted && last->p->present;
    if (!fw && !lw)
        return -1;
    if (fw)
        first->run = run_one(first->p, s, quick);
    int ri = run_one(ref, s, quick);
    if (lw)
        last->run = run_one(last->p, s, quick);
    for (side *e = x; e; e = e == x ? y : NULL) {
        runs *u = &e->p->at[s];
        if (ri >= 0 && e->run >= 0 && u->nratios < ROUNDS_MAX)
            u->ratio[u->nratios++] = ref->at[s].pass[ri] / u->pass[e->run];
    }
    return ri;
}

/* Every round at shape s: copy - handoff - glibc and jemalloc - handoff -
 * mimalloc in the first `all` rounds; after them, copy - handoff alone
 * while the verdict wants rounds, up to the cap. */
static void run_rounds(int s, int all, int cap, bool quick)
{
    peer *ref = &peers[0];
    verdict *v = &targets[s];
    for (int r = 0; r < (all > cap ? all : cap); r++) {
        bool every = r < all;
        if (!ref->present || (!every && !verdict_wants(v)))
            break;
        side copy = {.p = &peers[1], .wanted = every || verdict_wants(v)};
        side glibc = {.p = &peers[2], .wanted = every};
        side je = {.p = &peers[3], .wanted = every}, mi = {.p = &peers[4], .wanted = every};
        int ri = group_round(ref, &copy, &glibc, s, r, quick);
        if (ri >= 0 && copy.run >= 0)
            verdict_offer(v, ref->at[s].pass[ri] / peers[1].at[s].pass[copy.run]);
        group_round(ref, &je, &mi, s, r, quick);
    }
}

static double med(const double *v, int n)
{
    double tmp[RUNS_MAX];
    memcpy(tmp, v, (size_t)n * sizeof *v);
    return bench_median(tmp, n);
}

static void report(int s)
{
    size_t mib = shapes[s].mib;
    const runs *h = &peers[0].at[s];
    printf("%zu MiB a pass: a list of %.0f nodes of %d-%d B (uniform) (us a pass: the median of each child's\n"
           "passes after its first, then of the runs; build: the producer's part; consume: the consumer's;\n"
           "rest: the wake-ups between them, and the copy's leave on the producer where it outlasts the\n"
           "consumer's walk; faults: minor page faults a pass, both threads; hits: blocks the runtime's cache\n"
           "handed out a pass; x handoff: the median of the rounds' handoff / contender, with its interval;\n"
           "resident and peak: MiB above the child's baseline after its last pass, read from outside)\n",
           mib, h->n ? h->nodes : 0, NODE_MIN, NODE_MAX);
    printf("  %-9s %9s %9s %9s %9s %9s %7s %6s %8s %-15s %8s %7s %4s\n", "", "pass", "first", "build",
           "consume", "rest", "faults", "hits", "x handoff", "interval", "resident", "peak", "runs");
    for (int i = 0; i < NPEERS; i++) {
        const peer *p = &peers[i];
        const runs *u = &p->at[s];
        if (u->n == 0) {
            printf("  %-9s %s\n", p->name, p->failed ? "(failed: skipped)" : "(not built: skipped)");
            continue;
        }
        char ratio[16] = "", interval[32] = "", peak[16] = "n/a";
        verdict_estimate e = verdict_estimate_of(u->ratio, u->nratios);
        if (i > 0 && u->nratios)
            snprintf(ratio, sizeof ratio, "%.3f", e.ratio);
        if (i > 0 && e.k > 0)
            snprintf(interval, sizeof interval, "%.3f-%.3f", e.lo, e.hi);
        else if (i > 0 && u->nratios)
            snprintf(interval, sizeof interval, "(too few)");
        if (!isnan(u->peak_mib))
            snprintf(peak, sizeof peak, "%.1f", u->peak_mib);
        printf("  %-9s %9.1f %9.1f %9.1f %9.1f %9.1f %7.0f %6.1f %9s %-15s %8.1f %7s %4d\n", p->name,
               med(u->pass, u->n) / 1e3, med(u->first, u->n) / 1e3, med(u->build, u->n) / 1e3,
               med(u->consume, u->n) / 1e3, med(u->rest, u->n) / 1e3, med(u->faults, u->n), med(u->hits, u->n),
               ratio, interval, u->rss_mib, peak, u->n);
    }
    for (int i = 0; i < 2; i++)
        if (peers[i].at[s].n && !isnan(peers[i].at[s].cached_mib))
            printf(
                "  %s: the runtime's block caches held %.1f MiB after the last pass (gb_stats bytes_cached)\n",
                peers[i].name, peers[i].at[s].cached_mib);
    printf("\n");

    char name[96];
    snprintf(name, sizeof name, "handoff_%zumib_nodes", mib);
    if (h->n)
        bench_line(name, h->nodes, "nodes");
    for (int i = 0; i < NPEERS; i++) {
        const runs *u = &peers[i].at[s];
        if (u->n == 0)
            continue;
        const char *pn = peers[i].name;
        snprintf(name, sizeof name, "handoff_%zumib_%s_pass_ns", mib, pn);
        bench_line(name, med(u->pass, u->n), "ns");
        snprintf(name, sizeof name, "handoff_%zumib_%s_first_ns", mib, pn);
        bench_line(name, med(u->first, u->n), "ns");
        snprintf(name, sizeof name, "handoff_%zumib_%s_resident_mib", mib, pn);
        bench_line(name, u->rss_mib, "MiB");
        /* No line for a peak not measured: the readers of these lines
         * take any number as a measurement. */
        if (!isnan(u->peak_mib)) {
            snprintf(name, sizeof name, "handoff_%zumib_%s_peak_mib", mib, pn);
            bench_line(name, u->peak_mib, "MiB");
        }
        if (i == 0 || u->nratios == 0)
            continue;
        verdict_estimate e = verdict_estimate_of(u->ratio, u->nratios);
        snprintf(name, sizeof name, "handoff_%zumib_vs_%s_ratio", mib, pn);
        bench_line(name, e.ratio, "ratio");
        if (e.k > 0) {
            snprintf(name, sizeof name, "handoff_%zumib_vs_%s_ratio_lo", mib, pn);
            bench_line(name, e.lo, "ratio");
            snprintf(name, sizeof name, "handoff_%zumib_vs_%s_ratio_hi", mib, pn);
            bench_line(name, e.hi, "ratio");
        }
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    int rounds = 8, cap = 16;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
            rounds = 1;
            cap = 6;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cap") == 0 && i + 1 < argc)
            cap = atoi(argv[++i]);
        else if (strcmp(argv[i], "--child") == 0 && i + 3 < argc) {
            child(argv[i + 1], strtoul(argv[i + 2], NULL, 10), atoi(argv[i + 3]));
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--quick] [--rounds R] [--cap C]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > ROUNDS_MAX || cap < 1 || cap > ROUNDS_MAX) {
        fprintf(stderr, "handoff_bench: rounds and cap must be 1..%d\n", ROUNDS_MAX);
        return 2;
    }
    for (int i = 0; i < NPEERS; i++)
        if (peers[i].exe)
            peers[i].present = access(bench_sibling(peers[i].exe), X_OK) == 0;

    printf("handing work from a producer thread to a consumer: the producer builds a list, the consumer\n"
           "walks it and frees it; each contender in a child of its own, %d rounds of all, more of the\n"
           "handoff and the copy while their verdict is undecided (up to %d)\n",
           rounds, cap);
    for (int i = 0; i < NPEERS; i++)
        if (peers[i].present)
            printf("  %-9s %s\n", peers[i].name, peers[i].what);
        else
            printf("  %-9s (not built: %s missing, ci/install-deps.sh bench; skipped)\n", peers[i].name,
                   peers[i].missing);
    printf("\n");

    /* A cap below the 6 rounds an interval needs leaves the verdicts
     * undecided (a smoke run). */
    int least = cap < VERDICT_MIN_ROUNDS ? cap : VERDICT_MIN_ROUNDS;
    const verdict *judged[NSHAPES];
    for (int s = 0; s < NSHAPES; s++) {
        static char names[NSHAPES][48];
        snprintf(names[s], sizeof names[s], "handoff_vs_copy_%zumib", shapes[s].mib);
        verdict_init(&targets[s], names[s], VERDICT_AT_MOST, 1.0, least, cap);
        run_rounds(s, rounds, cap, quick);
        report(s);
        judged[s] = &targets[s];
    }
    printf("the handoff against the copy it saves (handoff / copy per round; target <= 1.0x: the copy does\n"
           "all the handoff does and builds the list a second time)\n");
    verdict_report(judged, NSHAPES);
    return 0;
}

#endif
