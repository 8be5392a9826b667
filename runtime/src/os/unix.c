/* unix.c -- the mapping primitives every Unix shares.
 *
 * mmap, munmap and mprotect behave the same on Linux and macOS for what the
 * runtime needs (private anonymous memory), so they are written once here
 * and the per-OS files (linux.c, macos.c) put them in the table next to what
 * really differs: how pages are emptied, whether a mapping can grow in
 * place, how the resident size is read and what limits the mapping count.
 */
#include "os.h"
#include "unix.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void *map_anywhere(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The machine's page size: mmap's granule. A simulated OS layer may give
 * the runtime a larger page size than this (sim_macos.c). Threads may
 * race to read it first; they all store the same value. */
size_t gb__unix_page_size(void)
{
    static _Atomic size_t page;
    size_t p = atomic_load_explicit(&page, memory_order_relaxed);
    if (!p) {
        long v = sysconf(_SC_PAGESIZE);
        p = v > 0 ? (size_t)v : 4096;
        atomic_store_explicit(&page, p, memory_order_relaxed);
    }
    return p;
}

/* mmap places a mapping on a page boundary only, so an aligned one is
 * mapped align - page bytes larger and trimmed at both ends: the trims
 * take the edges of one mapping, so they never split it and cannot fail
 * at the mapping limit. Should one fail anyway, the whole range goes and
 * the mapping is taken unaligned rather than with a hole beside it. */
void *gb__unix_map(size_t n, size_t align)
{
    size_t page = gb__unix_page_size();
    if (align <= page)
        return map_anywhere(n);
    size_t total = n + align - page;
    if (total < n)
        return map_anywhere(n);
    char *raw = map_anywhere(total);
    if (!raw)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    size_t head = (size_t)(p - raw), tail = total - head - n;
    if ((head && munmap(raw, head) != 0) || (tail && munmap(p + n, tail) != 0)) {
        (void)munmap(raw, total);
        return map_anywhere(n);
    }
    return p;
}

int gb__unix_unmap(void *p, size_t n)
{
    return munmap(p, n);
}

int gb__unix_protect_none(void *p, size_t n)
{
    return mprotect(p, n, PROT_NONE);
}

/* The monotonic clock, in nanoseconds: what the runtime times its own
 * populate calls by (map.c), so a wall clock set back must not move it. */
uint64_t gb__unix_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
