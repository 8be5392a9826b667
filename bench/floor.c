/* floor.c -- the fresh-memory floors (floor.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floor.h"
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* Linux 5.14's madvise, where the C library's headers predate it. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define FLOOR_HUGE ((size_t)2 << 20)

static const char *const names[FLOOR_METHODS] = {
    "touch_4k", "touch_huge", "populate_write_4k", "populate_write_huge", "map_populate", "memset_resident",
};
static const char *const whats[FLOOR_METHODS] = {
    "touched in 4 KiB pages (a fault a page)",
    "touched, 2 MiB-aligned with MADV_HUGEPAGE",
    "MADV_POPULATE_WRITE in 4 KiB pages",
    "MADV_POPULATE_WRITE in huge pages",
    "mmap with MAP_POPULATE",
    "memset of resident memory (zeroing floor)",
};

const char *floor_name(floor_method m)
{
    return names[m];
}

const char *floor_what(floor_method m)
{
    return whats[m];
}

bool floor_is_fresh(floor_method m)
{
    return m != FLOOR_MEMSET_RESIDENT;
}

/* n bytes mapped (with extra flags), 2 MiB-aligned when aligned; the
 * mapping to unmap in *raw, *raw_n. NULL when the OS refuses. */
static char *map_n(size_t n, bool aligned, int flags, char **raw, size_t *raw_n)
{
    size_t len = aligned ? n + FLOOR_HUGE : n;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    *raw = p;
    *raw_n = len;
    return aligned ? (char *)(((uintptr_t)p + FLOOR_HUGE - 1) & ~(uintptr_t)(FLOOR_HUGE - 1)) : p;
}

/* Asks for 4 KiB pages or huge ones; false when huge ones are refused. A
 * machine with THP "always" would otherwise hand the 4 KiB methods huge
 * pages. */
static bool advise_pages(char *p, size_t n, bool huge)
{
    if (huge)
        return madvise(p, n, MADV_HUGEPAGE) == 0;
#ifdef MADV_NOHUGEPAGE
    (void)madvise(p, n, MADV_NOHUGEPAGE);
#endif
    return true;
}

/* One run of a fresh method: seconds, or -1 when the OS refuses it. */
static double fresh_once(floor_method m, size_t n, int fill)
{
    bool huge = m == FLOOR_TOUCH_HUGE || m == FLOOR_POPULATE_HUGE;
    char *raw;
    size_t raw_n;
    double t0 = bench_now();
    char *p = map_n(n, huge, m == FLOOR_MAP_POPULATE ? MAP_POPULATE : 0, &raw, &raw_n);
    if (!p)
        return -1;
    bool ok = m == FLOOR_MAP_POPULATE || advise_pages(p, n, huge);
    if (ok && (m == FLOOR_POPULATE_4K || m == FLOOR_POPULATE_HUGE))
        ok = madvise(p, n, MADV_POPULATE_WRITE) == 0;
    if (ok)
        memset(p, fill, n);
    munmap(raw, raw_n);
    return ok ? bench_now() - t0 : -1;
}

double floor_seconds(floor_method m, size_t n, int rounds)
{
    enum { MAX_ROUNDS = 31 };
    double t[MAX_ROUNDS];
    if (rounds < 1)
        rounds = 1;
    if (rounds > MAX_ROUNDS)
        rounds = MAX_ROUNDS;
    char *res = NULL, *raw = NULL;
    size_t raw_n = 0;
    if (m == FLOOR_MEMSET_RESIDENT) {
        res = map_n(n, false, 0, &raw, &raw_n);
        if (!res)
            return -1;
        memset(res, 0, n);
    }
    for (int r = 0; r < rounds; r++) {
        if (res) {
            double t0 = bench_now();
            memset(res, r + 1, n);
            /* The compiler may not drop a memset whose result is never read. */
            __asm__ volatile("" : : "r"(res) : "memory");
            t[r] = bench_now() - t0;
        } else if ((t[r] = fresh_once(m, n, r + 1)) < 0) {
            return -1;
        }
    }
    if (raw)
        munmap(raw, raw_n);
    return bench_median(t, rounds);
}

int floor_cheapest_fresh(size_t n, int rounds, double *seconds, double *secs)
{
    int best = -1;
    double best_s = 0;
    for (int m = 0; m < FLOOR_METHODS; m++) {
        double s = floor_seconds((floor_method)m, n, rounds);
        if (secs)
            secs[m] = s;
        if (s >= 0 && floor_is_fresh((floor_method)m) && (best < 0 || s < best_s)) {
            best = m;
            best_s = s;
        }
    }
    if (seconds)
        *seconds = best_s;
    return best;
}

size_t floor_fill_bytes(const uint16_t *sizes, size_t n, size_t align)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += ((size_t)sizes[i] + align - 1) & ~(align - 1);
    return bytes;
}

double floor_fill(floor_method m, const uint16_t *sizes, size_t n, size_t align, void **ptrs)
{
    size_t bytes = floor_fill_bytes(sizes, n, align);
    bytes = (bytes + FLOOR_HUGE - 1) & ~(FLOOR_HUGE - 1);
    bool huge = m == FLOOR_TOUCH_HUGE || m == FLOOR_POPULATE_HUGE;
    char *raw, *p;
    size_t raw_n;
    double t0 = 0;
    if (m == FLOOR_MEMSET_RESIDENT) {
        if (!(p = map_n(bytes, false, 0, &raw, &raw_n)))
            return -1;
        memset(p, 0, bytes);
        t0 = bench_now();
    } else {
        t0 = bench_now();
        if (!(p = map_n(bytes, huge, m == FLOOR_MAP_POPULATE ? MAP_POPULATE : 0, &raw, &raw_n)))
            return -1;
        bool ok = m == FLOOR_MAP_POPULATE || advise_pages(p, bytes, huge);
        if (ok && (m == FLOOR_POPULATE_4K || m == FLOOR_POPULATE_HUGE))
            ok = madvise(p, bytes, MADV_POPULATE_WRITE) == 0;
        if (!ok) {
            munmap(raw, raw_n);
            return -1;
        }
    }
    char *bump = p;
    for (size_t i = 0; i < n; i++) {
        uint64_t *o = (uint64_t *)bump;
        bump += ((size_t)sizes[i] + align - 1) & ~(align - 1);
        *o = i;
        ptrs[i] = o;
    }
    __asm__ volatile("" : : "r"(ptrs) : "memory");
    munmap(raw, raw_n);
    return bench_now() - t0;
}
