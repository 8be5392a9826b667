/* small_regions_bench.c -- many small regions, left: from slabs or from malloc.
 *
 * The article's open item: blocks under 16 KiB stay with malloc, so a
 * program with many small regions still grows. Each variant runs in a
 * child process of its own (the block source is settled at init): enter
 * N small regions, allocate a few KiB in each, make a small malloc while
 * they are all live (it lands above them in malloc's heap), leave them all,
 * and read the resident size right after, from the parent (/proc/<pid>/statm
 * while the child is stopped). Prints a table and one "bench" line per
 * figure. A benchmark, not a test: nothing fails on a number.
 */
#include "giveback.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long statm_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    long size = 0, res = 0;
    if (!f || fscanf(f, "%ld %ld", &size, &res) != 2)
        return -1;
    fclose(f);
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The child: prints ns per region on fd, stops after the leaves. */
static void child(gb_small small, int n, int fd)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.small = small;
    gb_init(&o);
    gb_region **r = malloc((size_t)n * sizeof *r);
    double t0 = now();
    for (int i = 0; i < n; i++) {
        r[i] = gb_enter();
        memset(gb_alloc(3000), i, 3000);
    }
    void *volatile kept = malloc(64);
    for (int i = n - 1; i >= 0; i--)
        gb_leave(r[i]);
    double ns = (now() - t0) * 1e9 / n;
    dprintf(fd, "%.1f\n", ns);
    raise(SIGSTOP);
    (void)kept;
    _exit(0);
}

static void variant(const char *name, gb_small small, int n, long base_kib)
{
    int fds[2];
    if (pipe(fds) != 0)
        abort();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(small, n, fds[1]);
    }
    close(fds[1]);
    char line[64] = {0};
    ssize_t got = read(fds[0], line, sizeof line - 1);
    close(fds[0]);
    int status;
    waitpid(pid, &status, WUNTRACED);
    long kib = statm_kib(pid);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    double ns = got > 0 ? atof(line) : 0;
    double mib = (kib - base_kib) / 1024.0;
    printf("  %-8s %12.1f %12.0f\n", name, mib, ns);
    printf("bench small_regions_resident_%s %.1f MiB\n", name, mib);
    printf("bench small_regions_ns_%s %.0f ns\n", name, ns);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    long base = statm_kib(getpid());
    printf("%d small regions of 3,000 bytes, a malloc kept from their peak, all left:\n", n);
    printf("resident right after (MiB above this process's), and cost per region\n");
    printf("  %-8s %12s %12s\n", "chunks", "resident", "ns/region");
    variant("slab", GB_SMALL_SLAB, n, base);
    variant("malloc", GB_SMALL_MALLOC, n, base);
    return 0;
}
