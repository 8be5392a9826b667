/* lookup_bench.c -- "is this pointer mine?": gb_region_of, per lookup.
 *
 * A free hook asks it on every free, for region memory and for malloc'd
 * memory alike, so its cost must not grow with what the thread holds. Each
 * configuration runs in a child of its own (gb_init once per process):
 *   - blocks: the default chain (4 KiB doubling to the cap), or 64 KiB
 *     blocks only (first_block = block_cap = 64 KiB), which makes the
 *     most blocks for the bytes;
 *   - bytes of blocks in one region: 1 MiB, 64 MiB, 4 GiB (reserved, not
 *     written: only the blocks' headers are touched);
 *   - regions entered on top of it: 1, 100, 10,000, each with a block;
 * and for each, lookups of region pointers, warm (1,024 of them, again
 * and again) and cold (65,536 spread over every block), and of 65,536
 * malloc'd pointers, the fastest of 7 rounds.
 * Usage: lookup_bench [--quick]   (--quick: up to 64 MiB, 1,000 regions)
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include "giveback.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
/* Enough pointers that the index of 4 GiB of blocks is not all in the
 * cache while they are looked up, as a free hook's pointers would not be. */
#define SAMPLE 65536
#define WARM 1024
#define ROUNDS 7

typedef struct config {
    const char *blocks; /* "chain" or "64k" */
    size_t bytes;
    size_t regions;
} config;

static volatile uintptr_t sink;

/* Nanoseconds per gb_region_of over the pointers: the fastest of ROUNDS
 * rounds. A round is short, and on a shared machine a slow one measures
 * the other processes, not the lookup; the fastest is the lookup's own
 * cost (the benchmarks that compare two allocators use medians). */
static double time_lookups(void *const *ptrs, int count, long loops)
{
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = bench_now();
        uintptr_t acc = 0;
        for (long l = 0; l < loops; l++)
            for (int i = 0; i < count; i++)
                acc += (uintptr_t)gb_region_of(ptrs[i]);
        sink = acc;
        v[r] = (bench_now() - t0) * 1e9 / ((double)loops * count);
    }
    double best = v[0];
    for (int r = 1; r < ROUNDS; r++)
        if (v[r] < best)
            best = v[r];
    return best;
}

static void run(const config *c, long loops)
{
    gb_options o;
    gb_options_init(&o);
    if (strcmp(c->blocks, "64k") == 0)
        o.first_block = o.block_cap = 64 * KIB;
    gb_init(&o);
    gb_region *base = gb_enter();
    /* Pieces the size of the region's blocks' payload, or 1 MiB: the
     * region's memory, block after block. */
    size_t piece = strcmp(c->blocks, "64k") == 0 ? 60 * KIB : MIB;
    size_t n = c->bytes / piece ? c->bytes / piece : 1;
    char **pieces = malloc(n * sizeof *pieces);
    for (size_t i = 0; i < n; i++) {
        pieces[i] = gb_alloc(piece);
        pieces[i][0] = 1;
    }
    gb_region **nested = malloc(c->regions * sizeof *nested);
    for (size_t i = 1; i < c->regions; i++) {
        nested[i] = gb_enter();
        *(char *)gb_alloc(64) = 2;
    }
    static void *region_ptrs[SAMPLE], *malloc_ptrs[SAMPLE];
    uint64_t seed = 42;
    for (int i = 0; i < SAMPLE; i++) {
        size_t k = (size_t)(bench_rand(&seed) % n);
        region_ptrs[i] = pieces[k] + bench_rand(&seed) % piece;
        malloc_ptrs[i] = malloc(100);
    }
    if (gb_region_of(region_ptrs[0]) != base || gb_region_of(malloc_ptrs[0]) != NULL) {
        fprintf(stderr, "lookup_bench: gb_region_of answered wrong\n");
        exit(1);
    }
    gb_stats s;
    gb_stats_get(&s);
    /* Warm: the same 1,024 pointers again and again, as a free hook sees
     * what was just allocated; cold: 65,536 spread over every block, as
     * one sees a heap's worth of old objects. */
    bench_result("warm_ns", time_lookups(region_ptrs, WARM, loops * (SAMPLE / WARM)));
    bench_result("region_ns", time_lookups(region_ptrs, SAMPLE, loops));
    bench_result("malloc_ns", time_lookups(malloc_ptrs, SAMPLE, loops));
    bench_result("blocks", (double)s.blocks_live);
    for (size_t i = c->regions; i-- > 1;)
        gb_leave(nested[i]);
    gb_leave(base);
    for (int i = 0; i < SAMPLE; i++)
        free(malloc_ptrs[i]);
    free(nested);
    free(pieces);
}

/* Runs one configuration in a child and reads its results from the pipe. */
static void measure(const config *c, long loops, double *warm_ns, double *region_ns, double *malloc_ns,
                    double *blocks)
{
    int fd[2];
    if (pipe(fd) != 0) {
        perror("pipe");
        exit(1);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], STDOUT_FILENO);
        run(c, loops);
        fflush(stdout);
        _exit(0);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char key[64];
    double v;
    *warm_ns = *region_ns = *malloc_ns = *blocks = -1;
    while (fscanf(f, "result %63s %lf\n", key, &v) == 2) {
        if (strcmp(key, "warm_ns") == 0)
            *warm_ns = v;
        else if (strcmp(key, "region_ns") == 0)
            *region_ns = v;
        else if (strcmp(key, "malloc_ns") == 0)
            *malloc_ns = v;
        else if (strcmp(key, "blocks") == 0)
            *blocks = v;
    }
    fclose(f);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || *region_ns < 0) {
        fprintf(stderr, "lookup_bench: the %s / %zu MiB / %zu regions child failed\n", c->blocks,
                c->bytes / MIB, c->regions);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *kinds[] = {"chain", "64k"};
    size_t sizes[] = {MIB, 64 * MIB, 4096 * MIB};
    size_t regions[] = {1, 100, 10000};
    int nsizes = quick ? 2 : 3;
    long loops = quick ? 1 : 8;
    double lo = 1e30, hi = 0, cold_hi = 0;
    printf("gb_region_of, ns per lookup (fastest of %d rounds of %d pointers x %ld)\n", ROUNDS, SAMPLE, loops);
    printf("%-6s %9s %8s %8s %12s %12s %12s\n", "blocks", "bytes", "regions", "blocks", "region warm",
           "region cold", "malloc ptr");
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < nsizes; s++)
            for (int r = 0; r < 3; r++) {
                config c = {kinds[k], sizes[s], quick && regions[r] > 1000 ? 1000 : regions[r]};
                double wn, rn, mn, nb;
                measure(&c, loops, &wn, &rn, &mn, &nb);
                printf("%-6s %6zu MiB %8zu %8.0f %12.1f %12.1f %12.1f\n", c.blocks, c.bytes / MIB, c.regions, nb,
                       wn, rn, mn);
                if (rn > cold_hi)
                    cold_hi = rn;
                double most = wn > mn ? wn : mn, least = wn < mn ? wn : mn;
                if (most > hi)
                    hi = most;
                if (least < lo)
                    lo = least;
            }
    printf("warm and malloc'd pointers: slowest / fastest configuration %.2f; cold region pointers: "
           "at most %.1f ns\n",
           hi / lo, cold_hi);
    bench_line("lookup_ns_worst", hi, "ns");
    bench_line("lookup_ns_best", lo, "ns");
    bench_line("lookup_spread", hi / lo, "x");
    bench_line("lookup_cold_ns_worst", cold_hi, "ns");
    return 0;
}
