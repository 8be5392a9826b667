/* linux.c -- the OS layer on Linux.
 *
 * Linux can grow a mapping in place (mremap), empties pages at once with
 * MADV_DONTNEED, reports the resident size exactly in /proc/self/statm and
 * LazyFree in /proc/self/smaps_rollup, and bounds the number of mappings a
 * process may hold with vm.max_map_count (65,530 by default), which the
 * runtime must stay under. malloc is glibc's on most systems; its mmap
 * threshold is dynamic, and a program build fixes it (see fix/threshold.c).
 */
#define _GNU_SOURCE
#include "os.h"
#include "unix.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

gb__os_table gb__os;

static int linux_release(void *p, size_t n)
{
    return madvise(p, n, MADV_DONTNEED);
}

static void *linux_remap(void *p, size_t old_n, size_t new_n)
{
    void *q = mremap(p, old_n, new_n, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
}

/* Reads the first number after `key` in a /proc file of "Key: value kB"
 * lines; returns -1 when the file or key is missing. */
static long long proc_kib(const char *path, const char *key)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    size_t klen = strlen(key);
    long long v = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = strtoll(line + klen + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

static int linux_resident(gb_resident *out)
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
    out->rss = (size_t)res * gb__os.page_size;
    long long lazy = proc_kib("/proc/self/smaps_rollup", "LazyFree");
    out->lazy_free = lazy > 0 ? (size_t)lazy * 1024 : 0;
    long long hwm = proc_kib("/proc/self/status", "VmHWM");
    out->peak = hwm > 0 ? (size_t)hwm * 1024 : 0;
    return 0;
}

static size_t linux_map_limit(void)
{
    FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
    if (!f)
        return 65530; /* the kernel's default, when /proc is not mounted */
    unsigned long long v = 0;
    int got = fscanf(f, "%llu", &v);
    fclose(f);
    return got == 1 && v > 0 ? (size_t)v : 65530;
}

void gb__os_init(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    gb__os = (gb__os_table){
        .map = gb__unix_map,
        .unmap = gb__unix_unmap,
        .release = linux_release,
        .protect_none = gb__unix_protect_none,
        .remap = linux_remap,
        .resident = linux_resident,
        .page_size = ps > 0 ? (size_t)ps : 4096,
        .map_limit = linux_map_limit(),
        .name = "linux",
#if defined(__GLIBC__)
        .malloc_threshold_tunable = true,
#else
        .malloc_threshold_tunable = false,
#endif
    };
}

bool gb__os_malloc_set_threshold(size_t n)
{
#if defined(__GLIBC__)
    return mallopt(M_MMAP_THRESHOLD, (int)n) == 1;
#else
    (void)n;
    return false;
#endif
}

bool gb__os_malloc_threshold_chosen(void)
{
    if (getenv("MALLOC_MMAP_THRESHOLD_"))
        return true;
    /* GLIBC_TUNABLES is "name=value:name=value"; a tunable is chosen when
     * its full name starts an entry. */
    const char *t = getenv("GLIBC_TUNABLES");
    static const char name[] = "glibc.malloc.mmap_threshold=";
    for (const char *s = t; s && *s;) {
        if (strncmp(s, name, sizeof name - 1) == 0)
            return true;
        s = strchr(s, ':');
        if (s)
            s++;
    }
    return false;
}
