/* proc.c -- the resident size as Linux's /proc tells it.
 *
 * Linux reports the process's memory in files, not calls: statm's resident
 * page count (the number ps prints as RSS), VmHWM in status, and in
 * smaps_rollup the LazyFree and AnonHugePages totals. Both layers that run
 * on Linux read them here: linux.c, and sim_macos.c, which plays macOS's
 * policies on top of Linux's readings.
 */
#include "proc.h"
#include "unix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads, for each of the n keys, the first number after it in a /proc
 * file of "Key: value kB" lines, into v (-1 for a key that is missing, and
 * for all of them when the file is). One pass: smaps_rollup walks every
 * mapping of the process each time it is read. */
static void proc_kib(const char *path, const char *const *keys, long long *v, int n)
{
    for (int i = 0; i < n; i++)
        v[i] = -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        for (int i = 0; i < n; i++) {
            size_t klen = strlen(keys[i]);
            if (v[i] < 0 && strncmp(line, keys[i], klen) == 0 && line[klen] == ':')
                v[i] = strtoll(line + klen + 1, NULL, 10);
        }
    }
    fclose(f);
}

int gb__proc_resident(gb_resident *out)
{
    /* statm's second field is the resident page count, the same number ps
     * prints (in KiB) as RSS. */
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f)
        return -1;
    unsigned long long size = 0, res = 0;
    int got = fscanf(f, "%llu %llu", &size, &res);
    fclose(f);
    if (got != 2)
        return -1;
    out->rss = (size_t)res * gb__unix_page_size();
    static const char *const rollup[] = {"LazyFree", "AnonHugePages"}, *const status[] = {"VmHWM"};
    long long v[2];
    proc_kib("/proc/self/smaps_rollup", rollup, v, 2);
    out->lazy_free = v[0] > 0 ? (size_t)v[0] * 1024 : 0;
    out->anon_huge = v[1] > 0 ? (size_t)v[1] * 1024 : 0;
    proc_kib("/proc/self/status", status, v, 1);
    out->peak = v[0] > 0 ? (size_t)v[0] * 1024 : 0;
    return 0;
}
