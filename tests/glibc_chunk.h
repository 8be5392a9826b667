/* glibc_chunk.h -- did glibc's malloc serve this size with mmap?
 *
 * glibc keeps each chunk's size word just before the pointer it returns,
 * with bit 1 (IS_MMAPPED) set for chunks it mapped. Reading it tells what
 * malloc did, whatever threshold was asked for. glibc only.
 */
#ifndef GLIBC_CHUNK_H
#define GLIBC_CHUNK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static inline bool glibc_malloc_maps(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    /* Through an integer, so the compiler does not take the header for an
     * out-of-bounds read of the allocation. */
    const volatile size_t *header = (const volatile size_t *)((uintptr_t)p - sizeof(size_t));
    bool mapped = (*header & 2) != 0;
    free(p);
    return mapped;
}

#endif
