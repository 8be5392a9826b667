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
 * measured workload runs in a child process that stops itself at each
 * checkpoint while the parent reads it: the gate kit's protocol, both
 * sides (gates/kit/gbgate.h: gbgate_checkpoint in the child;
 * gates/kit/gbgate_reader.h: gbgate_run in the parent). The child reports
 * its timings on the same pipe as "result <key> <value>" lines. A child is
 * either a fork of the parent that runs a function (peers linked into this
 * executable) or another executable (peers that replace malloc, which must
 * not share a process with the others).
 */
#ifndef GB_BENCH_H
#define GB_BENCH_H

#include "gbgate.h"
#include "gbgate_reader.h"

#include <stddef.h>
#include <stdint.h>

/* Seconds on the monotonic clock. */
double bench_now(void);

/* Prints "bench <name> <value> <unit>". */
void bench_line(const char *name, double value, const char *unit);

/* The median of n values (sorts v in place); 0 when n is 0. */
double bench_median(double *v, int n);

/* This process's minor page faults so far (getrusage): each a fresh page
 * the kernel handed out. */
long bench_minor_faults(void);

/* A small, fast, seeded generator, so every peer sees the same sizes. */
uint64_t bench_rand(uint64_t *state);

/* Prints "result <key> <value>" for the parent (in the child). */
void bench_result(const char *key, double value);

/* A "result <key> <value>" the child printed; NaN when it printed none. */
double bench_child_result(const gbgate_child *c, const char *key);

/* The path of a sibling executable (same directory as this one). */
const char *bench_sibling(const char *name);

#endif /* GB_BENCH_H */
