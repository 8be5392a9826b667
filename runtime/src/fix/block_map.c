/* block_map.c -- the fix for malloc keeping freed region blocks.
 *
 * macOS's malloc keeps every freed block resident, and glibc keeps those it
 * served from the heap. With the map source, a chunk of at least
 * max(16 KiB, page size) is the runtime's own mapping and munmap returns it;
 * smaller ones still come from malloc, since a mapping is a whole page. The
 * poison malloc-back replaces this file with one that always says no.
 */
#include "fix.h"

bool gb__fix_chunk_is_mapped(size_t n)
{
    return gb__cfg.blocks == GB_BLOCKS_MAP && n >= gb__cfg.map_min;
}
