/* sim_macos.c -- macOS's policies applied through Linux's calls, for tests and gates only.
 *
 * Every macOS line of the runtime is compiled and linked on Linux, but
 * what differs on macOS is mostly policy, and policy can run here. This
 * layer fills the OS table the way os/macos.c does, with Linux's calls
 * underneath, so that the tests and the kill matrix run under macOS's
 * rules on a Linux machine (CMake's GB_OS_LAYER=sim-macos; never
 * installed, like the poisons):
 *   - a 16 KiB page (Apple silicon's) in every rounding, guard, stack and
 *     slab the runtime computes, with mappings that really start on 16 KiB
 *     boundaries (mapped larger and trimmed, unix.c);
 *   - no remap: a mapped block grows by map, copy and unmap;
 *   - release keeps the pages counted in the resident size, as
 *     MADV_FREE_REUSABLE does until the kernel reclaims them: here they are
 *     marked with MADV_FREE, which Linux also reclaims only when short of
 *     memory. The footprint is simulated as macOS keeps it: the resident
 *     pages less those given back and not yet said to be in use again
 *     (reuse, MADV_FREE_REUSE on macOS). A page written again without
 *     that call stays outside the footprint, as it does on macOS;
 *   - a release whose range holds a guard page fails with EPERM at the
 *     guard, as vm_map_reusable_pages stops at the first entry that is not
 *     writable;
 *   - no mapping-count limit, no transparent huge pages, no malloc
 *     threshold to fix;
 *   - malloc keeps every block it is given back, as the article found
 *     macOS's did: glibc's malloc with mmap and trimming both off, set by
 *     a constructor before the program's own first allocation.
 * The ranges given back and the guards are kept in two ledgers of sorted,
 * disjoint page ranges in memory of their own, under one lock.
 */
#define _GNU_SOURCE
#include "os.h"
#include "proc.h"
#include "unix.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

gb__os_table gb__os;

/* The simulated page: arm64 macOS's. */
#define SIM_PAGE ((size_t)16 * 1024)

/* A set of byte ranges [lo, hi): sorted, disjoint and never adjacent (two
 * ranges that touch are one). */
typedef struct sim_range {
    uintptr_t lo, hi;
} sim_range;

typedef struct sim_ledger {
    sim_range *r;
    size_t n, cap;
} sim_ledger;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sim_ledger reusable; /* given back, not yet in use again */
static sim_ledger guards;   /* made inaccessible */

/* Makes room for two more ranges (an add may insert one, a removal may
 * split one in two). The ledger's own memory is mapped directly, so that
 * it shows in no malloc and no runtime counter. Returns false when no
 * memory could be had (the caller then leaves the ledger as it was). */
static bool ledger_room(sim_ledger *l)
{
    if (l->n + 2 <= l->cap)
        return true;
    size_t cap = l->cap ? l->cap * 2 : 1024;
    void *p = mmap(NULL, cap * sizeof *l->r, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return false;
    if (l->r) {
        memcpy(p, l->r, l->n * sizeof *l->r);
        munmap(l->r, l->cap * sizeof *l->r);
    }
    l->r = p;
    l->cap = cap;
    return true;
}

/* The index of the first range that ends after lo. */
static size_t ledger_find(const sim_ledger *l, uintptr_t lo)
{
    size_t a = 0, b = l->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (l->r[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

static void ledger_remove(sim_ledger *l, uintptr_t lo, uintptr_t hi)
{
    size_t i = ledger_find(l, lo);
    if (i < l->n && l->r[i].lo < lo && l->r[i].hi > hi) {
        /* [lo, hi) is inside one range: it splits in two. Without room the
         * whole range goes, which at worst over-counts the footprint. */
        if (!ledger_room(l)) {
            memmove(&l->r[i], &l->r[i + 1], (l->n - i - 1) * sizeof *l->r);
            l->n--;
            return;
        }
        memmove(&l->r[i + 2], &l->r[i + 1], (l->n - i - 1) * sizeof *l->r);
        l->r[i + 1] = (sim_range){hi, l->r[i].hi};
        l->r[i].hi = lo;
        l->n++;
        return;
    }
    if (i < l->n && l->r[i].lo < lo) {
        l->r[i].hi = lo;
        i++;
    }
    size_t j = i;
    while (j < l->n && l->r[j].hi <= hi)
        j++;
    if (j < l->n && l->r[j].lo < hi)
        l->r[j].lo = hi;
    memmove(&l->r[i], &l->r[j], (l->n - j) * sizeof *l->r);
    l->n -= j - i;
}

static void ledger_add(sim_ledger *l, uintptr_t lo, uintptr_t hi)
{
    if (lo >= hi || !ledger_room(l))
        return;
    /* Ranges that overlap or touch [lo, hi) merge into it. */
    size_t i = ledger_find(l, lo ? lo - 1 : 0);
    size_t j = i;
    while (j < l->n && l->r[j].lo <= hi) {
        if (l->r[j].lo < lo)
            lo = l->r[j].lo;
        if (l->r[j].hi > hi)
            hi = l->r[j].hi;
        j++;
    }
    if (j == i) {
        memmove(&l->r[i + 1], &l->r[i], (l->n - i) * sizeof *l->r);
        l->n++;
    } else {
        memmove(&l->r[i + 1], &l->r[j], (l->n - j) * sizeof *l->r);
        l->n -= j - i - 1;
    }
    l->r[i] = (sim_range){lo, hi};
}

/* The start of the first range of l that meets [lo, hi), or hi. */
static uintptr_t ledger_first(const sim_ledger *l, uintptr_t lo, uintptr_t hi)
{
    size_t i = ledger_find(l, lo);
    if (i < l->n && l->r[i].lo < hi)
        return l->r[i].lo > lo ? l->r[i].lo : lo;
    return hi;
}

/* The bytes of l's ranges that are resident, by mincore, in the
 * machine's pages. */
static size_t ledger_resident(const sim_ledger *l)
{
    static unsigned char vec[4096];
    size_t page = gb__unix_page_size(), bytes = 0;
    for (size_t i = 0; i < l->n; i++) {
        for (uintptr_t p = l->r[i].lo; p < l->r[i].hi;) {
            size_t pages = (l->r[i].hi - p) / page;
            if (pages > sizeof vec)
                pages = sizeof vec;
            if (mincore((void *)p, pages * page, vec) == 0)
                for (size_t k = 0; k < pages; k++)
                    bytes += (vec[k] & 1) ? page : 0;
            p += pages * page;
        }
    }
    return bytes;
}

static void *sim_map(size_t n, size_t align)
{
    return gb__unix_map(n, align < SIM_PAGE ? SIM_PAGE : align);
}

static int sim_unmap(void *p, size_t n)
{
    if (gb__unix_unmap(p, n) != 0)
        return -1;
    pthread_mutex_lock(&lock);
    ledger_remove(&reusable, (uintptr_t)p, (uintptr_t)p + n);
    ledger_remove(&guards, (uintptr_t)p, (uintptr_t)p + n);
    pthread_mutex_unlock(&lock);
    return 0;
}

static int sim_release(void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    int rc = 0;
    pthread_mutex_lock(&lock);
    uintptr_t guard = ledger_first(&guards, lo, hi);
    if (guard > lo) {
        if (madvise(p, guard - lo, MADV_FREE) == 0)
            ledger_add(&reusable, lo, guard);
        else
            rc = -1; /* errno is madvise's */
    }
    pthread_mutex_unlock(&lock);
    if (rc == 0 && guard < hi) {
        errno = EPERM;
        rc = -1;
    }
    return rc;
}

static int sim_reuse(void *p, size_t n)
{
    pthread_mutex_lock(&lock);
    ledger_remove(&reusable, (uintptr_t)p, (uintptr_t)p + n);
    pthread_mutex_unlock(&lock);
    return 0;
}

static int sim_protect_none(void *p, size_t n)
{
    if (gb__unix_protect_none(p, n) != 0)
        return -1;
    pthread_mutex_lock(&lock);
    ledger_add(&guards, (uintptr_t)p, (uintptr_t)p + n);
    pthread_mutex_unlock(&lock);
    return 0;
}

/* The resident size and its peak are Linux's (proc.c); the footprint is
 * what macOS would count of them, and macOS has no LazyFree nor huge
 * pages to report. */
static int sim_resident(gb_resident *out)
{
    if (gb__proc_resident(out) != 0)
        return -1;
    out->lazy_free = 0;
    out->anon_huge = 0;
    pthread_mutex_lock(&lock);
    size_t given = ledger_resident(&reusable);
    pthread_mutex_unlock(&lock);
    out->footprint = out->rss > given ? out->rss - given : 0;
    return 0;
}

void gb__os_init(void)
{
    gb__os = (gb__os_table){
        .map = sim_map,
        .unmap = sim_unmap,
        .release = sim_release,
        .reuse = sim_reuse,
        .protect_none = sim_protect_none,
        .remap = NULL,
        .advise_huge = NULL,
        .populate = NULL, /* macOS has no call that populates a range */
        .huge_page = 0,
        .huge_mode = "none",
        .now_ns = gb__unix_now_ns,
        .resident = sim_resident,
        .page_size = SIM_PAGE,
        .map_limit = 0,
        .name = "macos-sim",
        .malloc_threshold_tunable = false,
    };
}

/* Before main, and before the runtime's first allocation: from here on
 * malloc never maps a block of its own and never trims its heap, so
 * whatever it is given back stays in the process. */
__attribute__((constructor(101))) static void sim_malloc_keeps_everything(void)
{
    (void)mallopt(M_MMAP_MAX, 0);
    (void)mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

bool gb__os_malloc_set_threshold(size_t n)
{
    (void)n;
    return false;
}

bool gb__os_malloc_threshold_chosen(void)
{
    return false;
}
