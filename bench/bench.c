/* bench.c -- what the benchmarks share: clocks, figures, and the results a
 * child reports.
 *
 * Running a child and reading it from outside is the gate kit's
 * checkpoint protocol (gates/kit/gbgate.h and gbgate_reader.h), which the
 * gate programs and gbprobe use too;
 * what is the benchmarks' own is here: timing, the figure lines, and the
 * "result" lines a child prints beside its checkpoints.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_line(const char *name, double value, const char *unit)
{
    printf("bench %s %.6g %s\n", name, value, unit);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

long bench_minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

uint64_t bench_rand(uint64_t *state)
{
    /* splitmix64: one add, three multiplies and shifts; good enough to mix
     * sizes and cheap enough to leave out of nothing we time. */
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void bench_result(const char *key, double value)
{
    printf("result %s %.9g\n", key, value);
}

double bench_child_result(const gbgate_child *c, const char *key)
{
    size_t n = strlen(key);
    for (const char *l = c->out; l && *l;) {
        if (strncmp(l, "result ", 7) == 0 && strncmp(l + 7, key, n) == 0 && l[7 + n] == ' ')
            return strtod(l + 8 + n, NULL);
        const char *nl = strchr(l, '\n');
        l = nl ? nl + 1 : NULL;
    }
    return NAN;
}

const char *bench_sibling(const char *name)
{
    static char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        return name;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) + 2 + strlen(name) > sizeof path)
        return name;
    strcpy(slash + 1, name);
    return path;
}
