/* fault.c -- fault injection: OS table entries that fail on demand.
 *
 * The mapping-failure paths (the fallback to malloc when mmap fails, the
 * deferred unmaps when munmap is refused, the copy when mremap fails, a
 * stack whose guard page cannot be made) are the ones the public API
 * cannot reach on its own, and the ones a process at the mapping limit
 * meets. The runtime's OS table (os/os.h) is the one
 * internal the harness touches, as the unit tests do: an input can make
 * the next few mmap, munmap, mremap or mprotect calls fail. Build with
 * -DGB_FUZZ_NO_FAULTS to stay strictly on the public API; the operation
 * then does nothing.
 */
#include "harness.h"
#ifndef GB_FUZZ_NO_FAULTS
#include "os/os.h"

#include <errno.h>
#endif

#ifndef GB_FUZZ_NO_FAULTS
/* The next fail_*[k] calls of that OS primitive fail, as they do at the
 * mapping limit or when the address space is exhausted. */
static gb__os_table real_os;
static unsigned fail_map, fail_unmap, fail_remap, fail_protect;

static void *fault_map(size_t n, size_t align)
{
    if (fail_map) {
        fail_map--;
        errno = ENOMEM;
        return NULL;
    }
    return real_os.map(n, align);
}

static int fault_unmap(void *p, size_t n)
{
    if (fail_unmap) {
        fail_unmap--;
        errno = ENOMEM;
        return -1;
    }
    return real_os.unmap(p, n);
}

static void *fault_remap(void *p, size_t old_n, size_t new_n)
{
    if (fail_remap) {
        fail_remap--;
        errno = ENOMEM;
        return NULL;
    }
    return real_os.remap(p, old_n, new_n);
}

static int fault_protect(void *p, size_t n)
{
    if (fail_protect) {
        fail_protect--;
        errno = ENOMEM;
        return -1;
    }
    return real_os.protect_none(p, n);
}

void faults_install(void)
{
    real_os = gb__os;
    gb__os.map = fault_map;
    gb__os.unmap = fault_unmap;
    if (real_os.remap)
        gb__os.remap = fault_remap;
    gb__os.protect_none = fault_protect;
}

void faults_off(void)
{
    fail_map = fail_unmap = fail_remap = fail_protect = 0;
}
#else
void faults_install(void)
{
}

void faults_off(void)
{
}
#endif

/* Arms the next one to four calls of one primitive to fail; an input
 * that does so no longer expects its unmaps to be exact (S.faults_used). */
void op_fault(unsigned v)
{
#ifndef GB_FUZZ_NO_FAULTS
    unsigned count = 1 + in_ch8() % 4;
    S.faults_used = true;
    switch (v % 4) {
    case 0:
        fail_map = count;
        break;
    case 1:
        fail_unmap = count;
        break;
    case 2:
        fail_remap = count;
        break;
    default:
        fail_protect = count;
        break;
    }
#else
    (void)v;
#endif
}
