/* unix.c -- the mapping primitives every Unix shares.
 *
 * mmap, munmap and mprotect behave the same on Linux and macOS for what the
 * runtime needs (private anonymous memory), so they are written once here
 * and the per-OS files (linux.c, macos.c) put them in the table next to what
 * really differs: how pages are emptied, whether a mapping can grow in
 * place, how the resident size is read and what limits the mapping count.
 */
#include "unix.h"

#include <sys/mman.h>

void *gb__unix_map(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int gb__unix_unmap(void *p, size_t n)
{
    return munmap(p, n);
}

int gb__unix_protect_none(void *p, size_t n)
{
    return mprotect(p, n, PROT_NONE);
}
