/* seam_mem.h -- the seams of the fixes the memory layers call (map.c,
 * small.c, chunk.c, stack.c, init.c).
 *
 * A file of those layers includes this header, not fix.h, so that it sees
 * only the fixes of its own layer and nothing of regions, coroutines or
 * threads. The fix files define these functions, and the poisons that
 * take them out define the same ones (fix/fix.h says how).
 */
#ifndef GB_SEAM_MEM_H
#define GB_SEAM_MEM_H

#include "base.h"

/* fix/block_map.c (poison malloc-back): whether a chunk of n bytes should
 * be the runtime's own mapping. Called by chunk.c. */
bool gb__fix_chunk_is_mapped(size_t n);

/* fix/small_slab.c (poison small-from-malloc): whether a chunk of n bytes
 * that is not mapped on its own comes from the runtime's slabs (else
 * malloc). Called by chunk.c. */
bool gb__fix_small_from_slab(size_t n);

/* fix/cache_bound.c (poison cache-unbounded): whether the block caches of
 * all threads, which hold `cached` bytes together, may keep `add` more.
 * Called by map.c. */
bool gb__fix_cache_admits(size_t cached, size_t add);

/* fix/give_back.c (poison lazy-free): every unmap, and every release of
 * pages the runtime keeps mapped, with the promises of gb__os.unmap and
 * gb__os.release. Called by map.c, small.c and stack.c. */
int gb__fix_unmap(void *p, size_t n);
int gb__fix_release(void *p, size_t n);

/* fix/threshold.c (poison dynamic-threshold): at init of a program build,
 * fixes glibc's mmap threshold unless the user chose one; true when it
 * did. Called by init.c. */
bool gb__fix_malloc_threshold(void);

#endif /* GB_SEAM_MEM_H */
