/* bench.h -- what the benchmarks share: clocks, figures, and children read
 * from outside.
 *
 * Every benchmark prints a table for people and one line per figure for
 * machines ("bench <name> <value> <unit>", collected by ci/bench.sh and
 * charted by ci/charts.sh). The machines are noisy, so each figure that
 * matters is a ratio of two measurements taken in the same run, and each
 * measurement is the median of a few rounds run one after the other.
 *
 * Resident sizes are read the way a user sees them: from outside. A
 * measured workload runs in a child process that stops itself (SIGSTOP) at
 * each checkpoint; the parent reads /proc/<pid>/statm while the child is
 * stopped and then lets it go on. The child reports its timings on a pipe
 * as "result <key> <value>" lines. A child is either a fork of the parent
 * that runs a function (peers linked into this executable) or another
 * executable (peers that replace malloc, which must not share a process
 * with the others).
 */
#ifndef GB_BENCH_H
#define GB_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Seconds on the monotonic clock. */
double bench_now(void);

/* Prints "bench <name> <value> <unit>". */
void bench_line(const char *name, double value, const char *unit);

/* The median of n values (sorts v in place); 0 when n is 0. */
double bench_median(double *v, int n);

/* A small, fast, seeded generator, so every peer sees the same sizes. */
uint64_t bench_rand(uint64_t *state);

/* ---------------------------------------------------------- in the child */

/* Prints "result <key> <value>" for the parent. */
void bench_result(const char *key, double value);

/* Prints "checkpoint <name>", flushes, and stops until the parent has read
 * the resident size and continued it. */
void bench_checkpoint(const char *name);

/* --------------------------------------------------------- in the parent */

enum { BENCH_MAX_STOPS = 64 };

typedef struct bench_mem {
    long rss_kib;       /* resident (statm), KiB */
    long lazyfree_kib;  /* given back with MADV_FREE but still counted */
    long hwm_kib;       /* peak resident so far (VmHWM) */
} bench_mem;

typedef struct bench_child {
    int status;                     /* exit status, or -1 if it did not exit normally */
    int stops;
    bench_mem mem[BENCH_MAX_STOPS]; /* read at each stop, in order */
    char *out;                      /* everything it printed on stdout */
} bench_child;

/* Runs fn(arg) in a forked child (if exe is NULL) or exe with argv (if fn is
 * NULL), reads the resident size at every checkpoint, and fills *c. extra_env
 * (NULL or a "NAME=value" string) is set in the child only. Returns 0 when the
 * child exited with status 0. */
int bench_run_child(bench_child *c, void (*fn)(void *), void *arg, const char *exe, char *const argv[],
                    const char *extra_env);

/* A "result <key> <value>" the child printed; NaN when it printed none. */
double bench_child_result(const bench_child *c, const char *key);

/* The memory read at the child's checkpoint <name>; NULL when it had none. */
const bench_mem *bench_child_mem(const bench_child *c, const char *name);

void bench_child_free(bench_child *c);

/* The resident size of pid now, from outside (Linux /proc). */
bench_mem bench_mem_of(pid_t pid);

/* The path of a sibling executable (same directory as this one). */
const char *bench_sibling(const char *name);

#endif /* GB_BENCH_H */
