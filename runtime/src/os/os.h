/* os.h -- the one interface between the runtime and the operating system.
 *
 * Everything the runtime asks of the OS goes through the table gb__os, one
 * line of promise per primitive. Each OS has one file (os/linux.c,
 * os/macos.c) that fills the table, and CMake compiles only the one for the
 * target, or, for the tests and gates, os/sim_macos.c, which plays macOS's
 * policies on Linux's calls; the code above this header never tests which
 * OS it runs on. The
 * table is writable on purpose: unit tests swap single entries for fakes
 * that count unmaps or fail on demand, as jemalloc's hook tables allow.
 */
#ifndef GB_OS_H
#define GB_OS_H

#include "giveback.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gb__os_table {
    /* Maps n bytes (a multiple of the page size) of zeroed, readable and
     * writable private memory at an address that is a multiple of align (a
     * power of two; the page size asks nothing more). The result is one
     * mapping of exactly n bytes, however it was placed. Returns NULL, with
     * errno set, on failure. */
    void *(*map)(size_t n, size_t align);

    /* Unmaps [p, p+n). Returns 0, or -1 with errno set; on failure the range
     * is still mapped and unchanged (Linux refuses with ENOMEM when the unmap
     * would split a mapping while the process is at vm.max_map_count). */
    int (*unmap)(void *p, size_t n);

    /* Gives the pages of [p, p+n) back to the OS now, keeping the range
     * mapped; its contents are undefined afterwards (zero on Linux; on
     * macOS the old bytes until the kernel reclaims the pages), so no
     * caller may count on them. The memory leaves at once by
     * the OS's own reading of it: on Linux the resident size drops
     * (MADV_DONTNEED; MADV_FREE, which leaves pages counted until the
     * kernel wants them, must not be used); on macOS the footprint drops
     * (MADV_FREE_REUSABLE), while the resident size may keep the pages
     * until the kernel reclaims them. Returns 0 or -1. */
    int (*release)(void *p, size_t n);

    /* Says that [p, p+n), some of which release gave back, is about to be
     * written again. On macOS a page given back with MADV_FREE_REUSABLE
     * and written again stays outside the footprint until MADV_FREE_REUSE
     * says otherwise (xnu's vm_fault.c enters it as reusable), so without
     * this call the footprint would under-count memory in use. Pages that
     * were never given back are left as they are. NULL where release
     * needs no counterpart (Linux: a page emptied with MADV_DONTNEED is
     * counted again at its next fault). Returns 0 or -1. */
    int (*reuse)(void *p, size_t n);

    /* Asks for [p, p+n), which starts on a huge page boundary, to be backed
     * by transparent huge pages (MADV_HUGEPAGE on Linux): one fault then
     * fills huge_page bytes instead of one page. NULL where the OS has
     * nothing to ask (macOS, or Linux with THP off). Returns 0 or -1. */
    int (*advise_huge)(void *p, size_t n);

    /* Makes [p, p+n) resident and writable now, one call for the whole
     * range, where each page would otherwise cost a fault at its first
     * write (MADV_POPULATE_WRITE, Linux 5.14 and later). The contents are
     * unchanged (a fresh mapping stays zero). NULL where the OS has no
     * such call (macOS, older kernels: probed once at init). Returns 0 or
     * -1; a failure leaves the range as it was, to be faulted in. */
    int (*populate)(void *p, size_t n);

    /* The monotonic clock, in nanoseconds from an arbitrary start: what
     * the runtime times its populate calls by, to learn whether huge
     * pages pay on this host (map.c). */
    uint64_t (*now_ns)(void);

    /* Makes [p, p+n) inaccessible (a guard). Returns 0 or -1. */
    int (*protect_none)(void *p, size_t n);

    /* Grows the mapping [p, p+old_n) to new_n bytes, moving it if it must,
     * and returns its new address; the contents are kept. NULL when the OS
     * has no such call (then the caller maps, copies and unmaps) or when it
     * failed, with the old mapping intact. */
    void *(*remap)(void *p, size_t old_n, size_t new_n);

    /* Fills the fields of *out (zeroed by the caller) that the OS knows:
     * the resident size exactly, in bytes, its peak, and the macOS
     * footprint and the Linux LazyFree where those exist. 0, or -1 when the
     * OS would not say. */
    int (*resident)(gb_resident *out);

    /* The page size, in bytes. */
    size_t page_size;

    /* The size of a transparent huge page (2 MiB on x86-64 and on arm64
     * with 4 KiB pages), or 0 when the OS will not give any: no such
     * feature, or THP "never". Read once at init. */
    size_t huge_page;

    /* How the OS hands out huge pages, for messages: Linux's THP mode
     * ("always", "madvise", "never"), or "none". */
    const char *huge_mode;

    /* How many mappings the process may have in all (vm.max_map_count on
     * Linux); 0 when the OS sets no such limit. Read once at init. */
    size_t map_limit;

    /* The OS name, for messages. */
    const char *name;

    /* True when malloc's own policy can be fixed to return large blocks
     * (glibc's mmap threshold), which a program build does at init. */
    bool malloc_threshold_tunable;
} gb__os_table;

extern gb__os_table gb__os;

/* Calls the OS's reuse, where it has one, before memory that release gave
 * back is written again. */
static inline void gb__os_reuse(void *p, size_t n)
{
    if (gb__os.reuse)
        (void)gb__os.reuse(p, n);
}

/* Fills gb__os for this OS. Called once, at init, before anything else. */
void gb__os_init(void);

/* Sets malloc's mmap threshold to n bytes, which also turns its dynamic
 * adjustment off. Returns true when it changed the setting; a no-op
 * returning false where malloc has no such setting. */
bool gb__os_malloc_set_threshold(size_t n);

/* True when the environment already chose malloc's mmap threshold
 * (MALLOC_MMAP_THRESHOLD_, or a glibc.malloc.mmap_threshold tunable in
 * GLIBC_TUNABLES). */
bool gb__os_malloc_threshold_chosen(void);

#endif /* GB_OS_H */
