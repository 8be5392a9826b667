/* unix.h -- the mapping primitives shared by the Unix OS files. */
#ifndef GB_OS_UNIX_H
#define GB_OS_UNIX_H

#include <stddef.h>
#include <stdint.h>

/* The machine's page size, which a simulated layer's may exceed. */
size_t gb__unix_page_size(void);
void *gb__unix_map(size_t n, size_t align);
int gb__unix_unmap(void *p, size_t n);
int gb__unix_protect_none(void *p, size_t n);
uint64_t gb__unix_now_ns(void);

#endif
