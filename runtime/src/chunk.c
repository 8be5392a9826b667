/* chunk.c -- choosing where a chunk comes from, and giving it back there.
 *
 * Three sources: the runtime's own mappings (map.c), the slabs for chunks
 * under a mapping's worth (small.c), and malloc. The fixes of the block
 * source decide between them (fix/block_map.c, fix/small_slab.c); a mapping
 * that cannot be had, past the budget or refused by the OS, becomes a
 * malloc'd chunk, counted as a fallback, so a request fails only when
 * malloc fails too. Each call takes the cache of the thread it runs for:
 * the mapped chunks come from it and go back to it.
 */
#include "chunk.h"
#include "seam_mem.h"
#include "init.h"
#include "small.h"
#include "stats.h"

#include <stdlib.h>
#include <string.h>

GB__NORETURN static void out_of_memory(size_t n, int map_errno)
{
    if (map_errno)
        gb__die("out of memory: no chunk of %zu bytes (mmap: %s; malloc failed too)", n,
                strerror(map_errno));
    gb__die("out of memory: malloc of %zu bytes failed", n);
}

/* A chunk of n bytes from malloc; false when malloc refuses. */
static bool heap_chunk(size_t n, gb__chunk *out)
{
    void *p = malloc(n);
    if (!p)
        return false;
    GB__ADD(bytes_heap, n);
    *out = (gb__chunk){.base = p, .size = n, .src = GB__SRC_HEAP};
    return true;
}

/* A chunk of at least n bytes, as gb__chunk_get takes it; false, with
 * nothing taken, when malloc refuses too. *map_errno, 0 from the caller,
 * is set to the mapping's error when one was tried and failed. */
static bool get(gb__cache *cache, size_t n, unsigned how, gb__chunk *out, int *map_errno)
{
    if (!gb__fix_chunk_is_mapped(n)) {
        if (gb__fix_small_from_slab(n) && gb__small_get(cache, n, out))
            return true;
        return heap_chunk(n, out);
    }
    size_t size = gb__map_class_size(n, "chunk");
    switch (gb__map_take(cache, size, how & GB__CHUNK_FIT, out, map_errno)) {
    case GB__MAP_TAKEN:
        return true;
    case GB__MAP_BUDGET:
        GB__ADD(fallbacks_budget, 1);
        return heap_chunk(n, out);
    case GB__MAP_FAILED:
        break;
    }
    if (how & GB__CHUNK_MAP_ONLY)
        return false;
    GB__ADD(fallbacks_mmap, 1);
    return heap_chunk(n, out);
}

gb__chunk gb__chunk_get(gb__cache *cache, size_t n)
{
    gb__chunk c;
    int e = 0;
    if (!get(cache, n, 0, &c, &e))
        out_of_memory(n, e);
    return c;
}

bool gb__chunk_try_get(gb__cache *cache, size_t n, unsigned how, gb__chunk *out)
{
    int e = 0;
    return get(cache, n, how, out, &e);
}

size_t gb__chunk_size_for(size_t n)
{
    return gb__fix_chunk_is_mapped(n) ? gb__map_class_size(n, "chunk") : n;
}

bool gb__chunk_cached(const gb__cache *cache, size_t n)
{
    return gb__fix_chunk_is_mapped(n) && gb__map_cached(cache, gb__map_class_size(n, "chunk"));
}

void gb__chunk_put(gb__cache *cache, gb__chunk c)
{
    if (c.src == GB__SRC_MAP) {
        gb__map_give(cache, c);
    } else if (c.src == GB__SRC_SMALL) {
        gb__small_put(cache, c);
    } else {
        free(c.base);
        GB__SUB(bytes_heap, c.size);
    }
}

/* Grows c as gb__chunk_grow says; false, with c as it was, when the
 * larger chunk cannot be had (*map_errno as get sets it). */
static bool grow(gb__cache *cache, gb__chunk c, size_t used, size_t n, bool fit, gb__chunk *out,
                 int *map_errno)
{
    GB__ASSERT(n > c.size);
    /* mremap may fail (address space or limit): copying still works. */
    if (c.src == GB__SRC_MAP && gb__cfg.growth == GB_GROW_REMAP && gb__map_remap(c, n, out))
        return true;
    if (c.src == GB__SRC_HEAP && !gb__fix_chunk_is_mapped(n)) {
        void *q = realloc(c.base, n);
        if (!q)
            return false;
        GB__ADD(bytes_heap, n - c.size);
        *out = (gb__chunk){.base = q, .size = n, .src = GB__SRC_HEAP};
        return true;
    }
    /* Map anew, copy, give the old one back: the only way on an OS without
     * mremap, and how a small malloc'd chunk becomes a mapping. */
    gb__chunk d;
    if (!get(cache, n, fit ? GB__CHUNK_FIT : 0, &d, map_errno))
        return false;
    memcpy(d.base, c.base, used);
    gb__chunk_put(cache, c);
    GB__ADD(grows_copy, 1);
    *out = d;
    return true;
}

gb__chunk gb__chunk_grow(gb__cache *cache, gb__chunk c, size_t used, size_t n)
{
    gb__chunk d;
    int e = 0;
    if (!grow(cache, c, used, n, false, &d, &e))
        out_of_memory(n, e);
    return d;
}

bool gb__chunk_try_grow(gb__cache *cache, gb__chunk c, size_t used, size_t n, bool fit, gb__chunk *out)
{
    int e = 0;
    return grow(cache, c, used, n, fit, out, &e);
}
