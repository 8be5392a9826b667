/* gbprobe -- what malloc keeps right after a free, measured on this machine.
 *
 * The article behind giveback measured, on each OS, how much of a freed
 * block stays resident "right after free": macOS's malloc kept everything,
 * glibc kept what it served from its heap and, once the first large free
 * raised its mmap threshold, served ever more from there (the ratchet).
 * Those tables were true of one machine on one day; this tool reproduces
 * them wherever it runs, so a user can see what their malloc does before
 * choosing a block source.
 *
 * Each cell is a fresh child process (a block size, a count, a mode): for
 * each of a few rounds it allocates the blocks and writes every byte, keeps
 * one small allocation made at the peak (the shape that stops glibc from
 * trimming its heap), frees the blocks (all, or every other one), and stops
 * itself at a checkpoint. The parent reads the child's resident size from
 * outside while it is stopped (Linux /proc/<pid>/statm; macOS
 * proc_pid_rusage, which also gives phys_footprint), then lets it go on:
 * the gate kit's checkpoint protocol, which the gates and the benchmarks
 * use too (gates/kit/gbgate.h in the child, gbgate_reader.h in the
 * parent), and which links nothing of the runtime.
 *
 * Modes: free (malloc's defaults); malloc_trim(0) after the free (glibc);
 * own mmap/munmap per block (what giveback's map source does); a fixed mmap
 * threshold of 64 KiB (mallopt, glibc; what giveback's program build does);
 * and on macOS the MallocSpaceEfficient=1 and MallocLargeCache=0 settings,
 * which malloc reads at start-up, so each gets a re-executed child with the
 * variable set.
 *
 * Usage: gbprobe [--rounds N] [--kept BYTES] [--csv FILE] [--quick]
 * Prints the table, then one line per cell and round for machines,
 * "bench probe_<blocks>_<mode>_r<round>_mib <MiB above baseline> MiB", the
 * form the benchmarks print (ci/bench.sh collects them); --csv also writes
 * one line per cell and round.
 * Not runtime code: it builds on Linux and macOS (the cross build) with the
 * OS-specific parts behind #ifdef.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#define _DARWIN_C_SOURCE
#endif

#include "gbgate.h"
#include "gbgate_reader.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <gnu/libc-version.h>
#include <malloc.h>
#define HAVE_GLIBC_MALLOC 1
#endif
#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)

enum { ROUNDS_MAX = 8 };

/* ------------------------------------------------------------ the cells */

typedef struct config {
    const char *label;
    const char *slug; /* in the bench lines' names: the shape, not the count */
    size_t size;
    size_t count;
    bool every_other; /* free every other block, keep the rest until the round ends */
} config;

static config configs[] = {
    {"64 KB x 1000", "64k", 64 * KIB, 1000, false},
    {"256 KB x 400", "256k", 256 * KIB, 400, false},
    {"1 MB x 200", "1m", 1 * MIB, 200, false},
    {"16 MB x 12", "16m", 16 * MIB, 12, false},
    {"20 KB x 4000, every other freed", "20k-half", 20 * KIB, 4000, true},
};
enum { NCONFIGS = sizeof configs / sizeof configs[0] };

typedef enum mode_kind { M_FREE, M_TRIM, M_MMAP, M_THRESHOLD, M_ENV } mode_kind;

typedef struct mode {
    const char *label;
    const char *slug; /* in the bench lines' names */
    mode_kind kind;
    const char *env; /* M_ENV: the setting, NAME=value */
} mode;

static const mode modes[] = {
    {"free", "free", M_FREE, NULL},
#ifdef HAVE_GLIBC_MALLOC
    {"malloc_trim(0)", "trim", M_TRIM, NULL},
#endif
    {"mmap/munmap", "mmap", M_MMAP, NULL},
#ifdef HAVE_GLIBC_MALLOC
    {"threshold 64 KiB", "threshold-64k", M_THRESHOLD, NULL},
#endif
#ifdef __APPLE__
    {"MallocSpaceEfficient=1", "space-efficient", M_ENV, "MallocSpaceEfficient=1"},
    {"MallocLargeCache=0", "large-cache-0", M_ENV, "MallocLargeCache=0"},
#endif
};
enum { NMODES = sizeof modes / sizeof modes[0] };

/* --------------------------------------------------------- in the child */

static void *block_get(mode_kind kind, size_t n)
{
    void *p;
    if (kind == M_MMAP) {
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            p = NULL;
    } else {
        p = malloc(n);
    }
    if (!p) {
        fprintf(stderr, "gbprobe: out of memory (%zu bytes)\n", n);
        _exit(3);
    }
    memset(p, 0x5a, n);
    return p;
}

static void block_put(mode_kind kind, void *p, size_t n)
{
    if (kind == M_MMAP)
        munmap(p, n);
    else
        free(p);
}

/* The allocations kept from each peak, where the compiler cannot prove
 * them unused. */
static void *volatile kept_sink[ROUNDS_MAX];

/* The cell's life: baseline stop, then per round allocate, keep, free,
 * stop. The kept allocations stay until the process ends. */
static void run_cell(const config *c, mode_kind kind, int rounds, size_t kept_bytes)
{
#ifdef HAVE_GLIBC_MALLOC
    if (kind == M_THRESHOLD && mallopt(M_MMAP_THRESHOLD, (int)(64 * KIB)) != 1) {
        fputs("gbprobe: mallopt(M_MMAP_THRESHOLD) failed\n", stderr);
        _exit(3);
    }
#endif
    void **blocks = calloc(c->count, sizeof *blocks);
    if (!blocks)
        _exit(3);
    gbgate_checkpoint("baseline", NULL);
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < c->count; i++)
            blocks[i] = block_get(kind, c->size);
        char *k = malloc(kept_bytes);
        if (!k)
            _exit(3);
        memset(k, r, kept_bytes);
        kept_sink[r] = k;
        for (size_t i = 0; i < c->count; i++)
            if (!c->every_other || i % 2 == 0) {
                block_put(kind, blocks[i], c->size);
                blocks[i] = NULL;
            }
#ifdef HAVE_GLIBC_MALLOC
        if (kind == M_TRIM)
            malloc_trim(0);
#endif
        gbgate_checkpoint("freed", "round=%d", r + 1);
        for (size_t i = 0; i < c->count; i++)
            if (blocks[i])
                block_put(kind, blocks[i], c->size);
    }
    free(blocks);
}

/* ------------------------------------------------------- in the parent */

static const char *self_path(const char *argv0)
{
#if defined(__linux__)
    (void)argv0;
    return "/proc/self/exe";
#elif defined(__APPLE__)
    static char path[4096];
    uint32_t size = sizeof path;
    if (_NSGetExecutablePath(path, &size) == 0)
        return path;
    return argv0;
#else
    return argv0;
#endif
}

/* A cell to run in a forked child. */
typedef struct cell_job {
    const config *c;
    mode_kind kind;
    int rounds;
    size_t kept;
} cell_job;

static void run_cell_job(void *arg)
{
    const cell_job *j = arg;
    run_cell(j->c, j->kind, j->rounds, j->kept);
}

/* Runs one cell in a child; fills readings[0] (baseline) .. [rounds].
 * Returns 0 on success. */
static int probe_cell(int ci, int mi, int rounds, size_t kept, const char *self, gbgate_mem *readings)
{
    gbgate_child child;
    int rc;
    if (modes[mi].kind == M_ENV) {
        /* malloc reads its settings once at start-up: a new image. */
        char cbuf[16], mbuf[16], rbuf[16], kbuf[32], nbuf[32];
        snprintf(cbuf, sizeof cbuf, "%d", ci);
        snprintf(nbuf, sizeof nbuf, "%zu", configs[ci].count);
        snprintf(mbuf, sizeof mbuf, "%d", mi);
        snprintf(rbuf, sizeof rbuf, "%d", rounds);
        snprintf(kbuf, sizeof kbuf, "%zu", kept);
        char *args[] = {(char *)self, "--cell", cbuf, mbuf, rbuf, kbuf, nbuf, NULL};
        rc = gbgate_run(&child, NULL, NULL, self, args, modes[mi].env);
    } else {
        cell_job j = {&configs[ci], modes[mi].kind, rounds, kept};
        rc = gbgate_run(&child, run_cell_job, &j, NULL, NULL, NULL);
    }
    gbgate_child_free(&child);
    if (rc != 0 || child.stops != rounds + 1) {
        fprintf(stderr, "gbprobe: cell %s / %s failed (status %d, %d stops)\n", configs[ci].label,
                modes[mi].label, child.status, child.stops);
        return -1;
    }
    for (int k = 0; k <= rounds; k++)
        readings[k] = child.mem[k];
    return 0;
}

static double mib(long kib)
{
    return (double)kib / 1024.0;
}

static void describe_machine(int rounds, size_t kept)
{
    struct utsname u;
    if (uname(&u) == 0)
        printf("machine: %s %s %s", u.sysname, u.release, u.machine);
#ifdef __GLIBC__
    printf(", glibc %s", gnu_get_libc_version());
#endif
    printf(", %ld-byte pages\n", (long)sysconf(_SC_PAGESIZE));
    printf("each cell: a fresh process; %d round%s of: allocate the blocks and write them, keep a %zu-byte\n"
           "allocation made at the peak, free the blocks; resident size read from outside right after the\n"
           "free, in MiB above the process's baseline (",
           rounds, rounds == 1 ? "" : "s", kept);
#if defined(__linux__)
    printf("/proc/<pid>/statm");
#elif defined(__APPLE__)
    printf("proc_pid_rusage; footprint is phys_footprint");
#else
    printf("ps");
#endif
    printf(")\n\n");
}

static void usage(FILE *f, const char *argv0)
{
    fprintf(f, "usage: %s [--rounds N] [--kept BYTES] [--csv FILE] [--quick]\n"
               "  --rounds N    rounds per cell, 1..%d (default 3)\n"
               "  --kept BYTES  the allocation kept from each peak (default 1024)\n"
               "  --csv FILE    also write one line per cell and round\n"
               "  --quick       counts divided by 10 (a smoke run)\n",
            argv0, ROUNDS_MAX);
}

int main(int argc, char **argv)
{
    int rounds = 3;
    size_t kept = 1024;
    const char *csv_path = NULL;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cell") == 0 && i + 5 < argc) {
            /* A re-executed child (a macOS malloc setting). */
            int ci = atoi(argv[i + 1]), mi = atoi(argv[i + 2]), r = atoi(argv[i + 3]);
            if (ci < 0 || ci >= NCONFIGS || mi < 0 || mi >= NMODES || r < 1 || r > ROUNDS_MAX)
                return 2;
            configs[ci].count = strtoul(argv[i + 5], NULL, 10);
            run_cell(&configs[ci], modes[mi].kind, r, strtoul(argv[i + 4], NULL, 10));
            return 0;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--kept") == 0 && i + 1 < argc) {
            kept = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv_path = argv[++i];
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout, argv[0]);
            return 0;
        } else {
            usage(stderr, argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || rounds > ROUNDS_MAX || kept == 0) {
        usage(stderr, argv[0]);
        return 2;
    }
    FILE *csv = NULL;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            fprintf(stderr, "gbprobe: %s: %s\n", csv_path, strerror(errno));
            return 1;
        }
        fprintf(csv, "blocks,block_bytes,count,pattern,mode,round,baseline_kib,rss_kib,above_baseline_kib,"
                     "footprint_kib\n");
    }
    const char *self = self_path(argv[0]);

    printf("gbprobe: resident size right after free\n");
    describe_machine(rounds, kept);

    static gbgate_mem cell[NCONFIGS][NMODES][ROUNDS_MAX + 1];
    static bool ok[NCONFIGS][NMODES];
    for (int c = 0; c < NCONFIGS; c++) {
        if (quick)
            configs[c].count = configs[c].count / 10 ? configs[c].count / 10 : 1;
        for (int m = 0; m < NMODES; m++)
            ok[c][m] = probe_cell(c, m, rounds, kept, self, cell[c][m]) == 0;
    }

    /* The table: one row per block shape and round, one column per mode. */
    bool footprint = false;
    for (int c = 0; c < NCONFIGS; c++)
        for (int m = 0; m < NMODES; m++)
            footprint |= ok[c][m] && cell[c][m][1].footprint_kib >= 0;
    printf("  %-32s %5s %9s %9s", "blocks", "round", "peak", "live");
    for (int m = 0; m < NMODES; m++)
        printf(" %*s", modes[m].kind == M_ENV ? 22 : 16, modes[m].label);
    printf("\n");
    for (int c = 0; c < NCONFIGS; c++) {
        const config *k = &configs[c];
        for (int r = 1; r <= rounds; r++) {
            double peak = (double)(k->size * k->count) / (double)MIB;
            printf("  %-32s %5d %9.1f %9.1f", r == 1 ? k->label : "", r, peak, k->every_other ? peak / 2 : 0.0);
            for (int m = 0; m < NMODES; m++) {
                int w = modes[m].kind == M_ENV ? 22 : 16;
                if (!ok[c][m]) {
                    printf(" %*s", w, "failed");
                    continue;
                }
                long above = cell[c][m][r].rss_kib - cell[c][m][0].rss_kib;
                if (footprint) {
                    char both[48];
                    snprintf(both, sizeof both, "%.1f (fp %.1f)", mib(above),
                             mib(cell[c][m][r].footprint_kib - cell[c][m][0].footprint_kib));
                    printf(" %*s", w, both);
                } else {
                    printf(" %*.1f", w, mib(above));
                }
                if (csv)
                    fprintf(csv, "\"%s\",%zu,%zu,%s,%s,%d,%ld,%ld,%ld,%ld\n", k->label, k->size, k->count,
                            k->every_other ? "every-other" : "all", modes[m].label, r, cell[c][m][0].rss_kib,
                            cell[c][m][r].rss_kib, above, cell[c][m][r].footprint_kib);
            }
            printf("\n");
        }
    }
    printf("(MiB resident above the baseline right after the free; \"peak\" is what each round's blocks held,\n"
           " \"live\" what they still hold after it: anything above \"live\" is freed memory still resident)\n");
    printf("\n");
    for (int c = 0; c < NCONFIGS; c++)
        for (int m = 0; m < NMODES; m++)
            for (int r = 1; ok[c][m] && r <= rounds; r++)
                printf("bench probe_%s_%s_r%d_mib %.1f MiB\n", configs[c].slug, modes[m].slug, r,
                       mib(cell[c][m][r].rss_kib - cell[c][m][0].rss_kib));
    if (csv) {
        fclose(csv);
        printf("wrote %s\n", csv_path);
    }
    return 0;
}
