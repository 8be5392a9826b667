/* linux.c -- the OS layer on Linux.
 *
 * Linux can grow a mapping in place (mremap), empties pages at once with
 * MADV_DONTNEED, reports the resident size exactly in /proc/self/statm and
 * LazyFree in /proc/self/smaps_rollup (both read in proc.c), and bounds
 * the number of mappings a process may hold with vm.max_map_count (65,530
 * by default), which the runtime must stay under. malloc is glibc's on most systems; its mmap
 * threshold is dynamic, and a program build fixes it (see fix/threshold.c).
 */
#define _GNU_SOURCE
#include "linux.h"
#include "os.h"
#include "proc.h"
#include "unix.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

gb__os_table gb__os;

static int linux_release(void *p, size_t n)
{
    return madvise(p, n, MADV_DONTNEED);
}

static int linux_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    return madvise(p, n, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
    errno = ENOSYS;
    return -1;
#endif
}

/* Linux 5.14's advice, where the C library's headers predate it. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static int linux_populate(void *p, size_t n)
{
    return madvise(p, n, MADV_POPULATE_WRITE);
}

/* Whether the kernel knows MADV_POPULATE_WRITE: it checks the advice
 * before the range, so an empty range at 0 answers without touching
 * anything (EINVAL before 5.14). */
static bool linux_has_populate(void)
{
    return madvise(NULL, 0, MADV_POPULATE_WRITE) == 0;
}

static void *linux_remap(void *p, size_t old_n, size_t new_n)
{
    void *q = mremap(p, old_n, new_n, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
}

size_t gb__linux_map_limit(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 65530; /* the kernel's default, when /proc is not mounted */
    unsigned long long v = 0;
    int got = fscanf(f, "%llu", &v);
    fclose(f);
    return got == 1 && v > 0 ? (size_t)v : 65530;
}

void gb__linux_thp_mode(const char *path, char *mode, size_t n)
{
    snprintf(mode, n, "none");
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[128];
    if (fgets(line, sizeof line, f)) {
        char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;
        if (open && close && close - open - 1 < (ptrdiff_t)n)
            snprintf(mode, n, "%.*s", (int)(close - open - 1), open + 1);
    }
    fclose(f);
}

size_t gb__linux_thp_size(const char *path, const char *mode, size_t page)
{
    if (strcmp(mode, "always") != 0 && strcmp(mode, "madvise") != 0)
        return 0;
    FILE *f = fopen(path, "re");
    unsigned long long v = 2u << 20;
    if (f) {
        if (fscanf(f, "%llu", &v) != 1)
            v = 0;
        fclose(f);
    }
    /* A usable size is a power of two above the page size. */
    return v > page && (v & (v - 1)) == 0 ? (size_t)v : 0;
}

void gb__os_init(void)
{
    static char mode[16];
    size_t page = gb__unix_page_size();
    gb__linux_thp_mode(GB__LINUX_THP_ENABLED, mode, sizeof mode);
    size_t huge = gb__linux_thp_size(GB__LINUX_THP_PMD_SIZE, mode, page);
    gb__os = (gb__os_table){
        .map = gb__unix_map,
        .unmap = gb__unix_unmap,
        .release = linux_release,
        .reuse = NULL, /* a page emptied with MADV_DONTNEED counts again at its next fault */
        .advise_huge = huge ? linux_advise_huge : NULL,
        .populate = linux_has_populate() ? linux_populate : NULL,
        .protect_none = gb__unix_protect_none,
        .remap = linux_remap,
        .now_ns = gb__unix_now_ns,
        .resident = gb__proc_resident,
        .page_size = page,
        .huge_page = huge,
        .huge_mode = mode,
        .map_limit = gb__linux_map_limit(GB__LINUX_MAP_COUNT),
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
