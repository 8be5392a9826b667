/* bench.c -- what the benchmarks share: clocks, figures, and children read
 * from outside.
 *
 * The parent never trusts a child's own view of its memory: it reads
 * /proc/<pid>/statm (and LazyFree, and VmHWM) while the child is stopped at a
 * checkpoint, which is what ps or top would show a user at that moment. The
 * pipe is drained while the child runs, so a chatty child cannot block on a
 * full pipe while the parent waits for it to stop.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

uint64_t bench_rand(uint64_t *state)
{
    /* splitmix64: one add, three multiplies and shifts; good enough to mix
     * sizes and cheap enough to leave out of nothing we time. */
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------ the child */

void bench_result(const char *key, double value)
{
    printf("result %s %.9g\n", key, value);
}

void bench_checkpoint(const char *name)
{
    printf("checkpoint %s\n", name);
    fflush(stdout);
    raise(SIGSTOP);
}

/* ----------------------------------------------------------- the parent */

static long field_kib(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    size_t n = strlen(key);
    long v = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) {
            v = strtol(line + n, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

bench_mem bench_mem_of(pid_t pid)
{
    bench_mem m = {0};
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    if (f) {
        long size, resident;
        if (fscanf(f, "%ld %ld", &size, &resident) == 2)
            m.rss_kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    m.lazyfree_kib = field_kib(path, "LazyFree:");
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    m.hwm_kib = field_kib(path, "VmHWM:");
    return m;
}

typedef struct buffer {
    char *p;
    size_t len, cap;
} buffer;

static void drain(int fd, buffer *b)
{
    for (;;) {
        if (b->cap - b->len < 4096) {
            b->cap = b->cap ? b->cap * 2 : 16384;
            b->p = realloc(b->p, b->cap);
            if (!b->p) {
                perror("bench: realloc");
                exit(1);
            }
        }
        ssize_t n = read(fd, b->p + b->len, b->cap - b->len - 1);
        if (n > 0) {
            b->len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break;
    }
    b->p[b->len] = '\0';
}

int bench_run_child(bench_child *c, void (*fn)(void *), void *arg, const char *exe, char *const argv[],
                    const char *extra_env)
{
    memset(c, 0, sizeof *c);
    c->status = -1;
    int fds[2];
    if (pipe(fds) != 0) {
        perror("bench: pipe");
        exit(1);
    }
    /* What the parent printed but has not flushed would be printed twice. */
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench: fork");
        exit(1);
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        if (extra_env && putenv((char *)extra_env) != 0)
            _exit(126);
        if (fn) {
            fn(arg);
            fflush(stdout);
            _exit(0);
        }
        execv(exe, argv);
        fprintf(stderr, "bench: cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    buffer b = {0};
    for (;;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        (void)poll(&p, 1, 5);
        drain(fds[0], &b);
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG | WUNTRACED);
        if (w == 0)
            continue;
        if (w < 0) {
            if (errno == EINTR)
                continue;
            perror("bench: waitpid");
            exit(1);
        }
        if (WIFSTOPPED(st)) {
            if (c->stops < BENCH_MAX_STOPS)
                c->mem[c->stops] = bench_mem_of(pid);
            c->stops++;
            drain(fds[0], &b);
            kill(pid, SIGCONT);
            continue;
        }
        c->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        break;
    }
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) & ~O_NONBLOCK);
    drain(fds[0], &b);
    close(fds[0]);
    c->out = b.p ? b.p : strdup("");
    return c->status == 0 ? 0 : -1;
}

double bench_child_result(const bench_child *c, const char *key)
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

const bench_mem *bench_child_mem(const bench_child *c, const char *name)
{
    size_t n = strlen(name);
    int k = 0;
    for (const char *l = c->out; l && *l;) {
        if (strncmp(l, "checkpoint ", 11) == 0) {
            if (strncmp(l + 11, name, n) == 0 && (l[11 + n] == '\n' || l[11 + n] == '\0'))
                return k < c->stops && k < BENCH_MAX_STOPS ? &c->mem[k] : NULL;
            k++;
        }
        const char *nl = strchr(l, '\n');
        l = nl ? nl + 1 : NULL;
    }
    return NULL;
}

void bench_child_free(bench_child *c)
{
    free(c->out);
    c->out = NULL;
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
