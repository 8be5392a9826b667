/* small_regions_bench.c -- many small regions, left: from slabs or from malloc.
 *
 * The article's open item: blocks under 16 KiB stay with malloc, so a
 * program with many small regions still grows. Each variant runs in a
 * child process of its own (the block source is settled at init) and runs
 * the small-regions scenario the gate and the tests run
 * (gbs_small_regions_round), with sizes of its own: N nested small regions
 * of a few KiB each, a small malloc made while they are all live (it lands
 * above them in malloc's heap), all left. The parent reads the resident
 * size right after, from outside, while the child is stopped at its
 * checkpoint. Prints a table and one "bench" line per figure. A benchmark,
 * not a test: nothing fails on a number.
 */
#include "bench.h"
#include "giveback.h"
#include "scenarios.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct job {
    gb_small small;
    int n;
} job;

/* The child: reports ns per region, stops after the leaves. */
static void child(void *arg)
{
    const job *j = arg;
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.small = j->small;
    gb_init(&o);
    /* One allocation of 3,000 bytes per region, a 64-byte malloc kept. */
    const gbs_small_shape shape = {j->n, 3000, 3000, 3000, 64, false};
    void *kept[1];
    double t0 = bench_now();
    gbs_small_regions_round(&shape, 1, kept);
    bench_result("ns", (bench_now() - t0) * 1e9 / j->n);
    gbgate_checkpoint("left", NULL);
    free(kept[0]);
}

static void variant(const char *name, gb_small small, int n, long base_kib)
{
    job j = {small, n};
    gbgate_child c;
    int rc = gbgate_run(&c, child, &j, NULL, NULL, NULL);
    const gbgate_mem *m = gbgate_mem_at(&c, "left");
    double ns = bench_child_result(&c, "ns");
    if (rc != 0 || !m) {
        fprintf(stderr, "small_regions_bench: the %s child failed (status %d)\n", name, c.status);
        gbgate_child_free(&c);
        return;
    }
    double mib = (m->rss_kib - base_kib) / 1024.0;
    gbgate_child_free(&c);
    printf("  %-8s %12.1f %12.0f\n", name, mib, ns);
    printf("bench small_regions_resident_%s %.1f MiB\n", name, mib);
    printf("bench small_regions_ns_%s %.0f ns\n", name, ns);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    long base = gbgate_read(getpid()).rss_kib;
    printf("%d small regions of 3,000 bytes, a malloc kept from their peak, all left:\n", n);
    printf("resident right after (MiB above this process's), and cost per region\n");
    printf("  %-8s %12s %12s\n", "chunks", "resident", "ns/region");
    printf("bench small_regions_count %d regions\n", n);
    variant("slab", GB_SMALL_SLAB, n, base);
    variant("malloc", GB_SMALL_MALLOC, n, base);
    return 0;
}
