/* giveback.h -- a region runtime whose freed memory leaves the process.
 *
 * A thread (and each coroutine) has a stack of regions. Allocation bumps a
 * pointer in the innermost region; leaving a region gives all of its memory
 * back at once, and "back" means back to the operating system: large blocks
 * are the runtime's own mappings and are unmapped, or come from a malloc whose
 * policy is known to return them. Suspended coroutines whose stacks still
 * point into a left region keep it alive (it is retired, not freed) until
 * nothing points into it any more.
 *
 * Every function here either does what its comment promises or stops the
 * process with a message on stderr that names the mistake ("giveback: ...").
 * Misuse is never silently ignored and never returns an error code that could
 * be forgotten. Running out of memory is not misuse: the gb_try_ family
 * returns NULL for it, changing nothing, and the rest stop the process with
 * a message that names the request and the region.
 *
 * The runtime is built on the article "Freed, Not Returned: A Blowup in
 * Mere's Runtime, mmap on macOS, and a Fixed Threshold on Linux" (README.md,
 * "The article"); "the article" in giveback's comments means it.
 */
#ifndef GIVEBACK_H
#define GIVEBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GB_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define GB_API __attribute__((visibility("default")))
#else
#define GB_API
#endif

#define GB_VERSION_MAJOR 0
#define GB_VERSION_MINOR 2
#define GB_VERSION_PATCH 0

/* The ABI. The public structs (gb_options, gb_region_info, gb_stats,
 * gb_resident) only ever grow at their end, and each function that takes
 * one is called through a macro that passes the size of the struct the
 * caller was compiled with: a program built against an older header gets
 * the fields it knows, and one built against a newer header run with an
 * older library gets its newer fields zeroed (gb_options: left at their
 * defaults). Any other change of the ABI changes the library's SONAME
 * (libgiveback.so.0.2 for 0.2.x; while the major version is 0, the minor
 * one names the ABI), checked by CI against the ABI of the last release
 * (abi/, ci/abi.sh). A binding that cannot use the macros (an FFI) calls
 * the *_sized functions with the size of the struct it declares. */

/* ------------------------------------------------------------------ init */

/* Where region blocks come from.
 *   GB_BLOCKS_MAP:  blocks of at least max(16 KiB, page size) are the
 *                   runtime's own mappings (munmap on leave); smaller ones
 *                   come from the runtime's own slabs (see gb_small).
 *   GB_BLOCKS_HEAP: every block comes from malloc. On glibc a program build
 *                   fixes malloc's mmap threshold so large blocks still
 *                   leave; blocks under it stay in malloc's heap whenever
 *                   something allocated after them is live, so this source
 *                   does not keep the promise for small regions.
 *   GB_BLOCKS_AUTO: the environment variable GB_BLOCKS (map|heap|auto)
 *                   decides; unset or auto means map, in every build on
 *                   every OS. */
typedef enum gb_blocks { GB_BLOCKS_AUTO = 0, GB_BLOCKS_MAP, GB_BLOCKS_HEAP } gb_blocks;

/* How a mapped block grows in place of realloc.
 *   GB_GROW_REMAP: mremap where the OS has it (Linux).
 *   GB_GROW_COPY:  map a new block, copy, unmap the old one (the only way on
 *                  macOS; selectable everywhere so the path is tested).
 *   GB_GROW_AUTO:  GB_GROW (remap|copy|auto) decides; default remap where
 *                  the OS has it, else copy. */
typedef enum gb_growth { GB_GROW_AUTO = 0, GB_GROW_REMAP, GB_GROW_COPY } gb_growth;

/* Where chunks too small for a mapping of their own come from, with the
 * map source (the heap source takes everything from malloc).
 *   GB_SMALL_SLAB:   from slabs the runtime maps itself; a slab is unmapped
 *                    when its last chunk goes, so small regions leave too.
 *   GB_SMALL_MALLOC: from malloc, which may keep them after a leave.
 *   GB_SMALL_AUTO:   GB_SMALL (slab|malloc|auto) decides; default slab. */
typedef enum gb_small { GB_SMALL_AUTO = 0, GB_SMALL_SLAB, GB_SMALL_MALLOC } gb_small;

/* Whether mapped blocks use transparent huge pages.
 *   GB_HUGE_ON:   mapped chunks of at least one huge page (2 MiB on x86-64)
 *                 start on a huge page boundary and are advised for huge
 *                 pages (MADV_HUGEPAGE), and a region's chained blocks grow
 *                 to 64 MiB instead of 1 MiB: one fault fills 2 MiB, where
 *                 it filled 4 KiB. Given back with munmap like any block.
 *                 Stops the process at init when the OS has no huge pages
 *                 to give (Linux with THP "never"; macOS).
 *   GB_HUGE_OFF:  never; blocks grow to 1 MiB.
 *   GB_HUGE_AUTO: GB_HUGE (on|off|auto) decides; auto means on where the
 *                 OS gives huge pages (Linux with THP "madvise" or "always",
 *                 the usual defaults), else off; and where blocks are
 *                 populated (gb_populate), each block of huge size takes
 *                 the kind its host's timed populate steps favour: huge
 *                 pages unless theirs cost more than 1.5 times the 4 KiB
 *                 pages' (the README's "Where blocks come from"). */
typedef enum gb_huge { GB_HUGE_AUTO = 0, GB_HUGE_ON, GB_HUGE_OFF } gb_huge;

/* Whether a region's fresh blocks are populated when it starts using
 * them: one call to the OS (MADV_POPULATE_WRITE, Linux 5.14 and later)
 * makes a freshly mapped chained block resident at once, where each of its
 * pages would cost a fault at its first write. Only freshly mapped blocks:
 * a block from the cache or a region's kept list is resident already, a
 * block of one large allocation (gb_alloc past the chain's cap) is left
 * to be faulted in as it is written, and the heap source's blocks are
 * malloc's. Counted in gb_stats.bytes_populated. A populate the OS
 * refuses, or an OS without the call (macOS, older kernels), leaves the
 * block to be faulted in: never an error. A populated block is resident
 * whole, so a region's peak may hold the unwritten rest of its last block
 * (at most the chain's cap: measured on the 400 MB gate with huge pages,
 * a peak of 420 MiB with ON against 406 with AUTO or OFF; the size after
 * the leave is the same).
 *   GB_POPULATE_ON:   every fresh chained block, where the OS can.
 *   GB_POPULATE_OFF:  none; pages are faulted in as they are written.
 *   GB_POPULATE_AUTO: GB_POPULATE (on|off|auto) decides; auto means the
 *                     blocks in 4 KiB pages (below a huge page, or all of
 *                     them with huge pages off), where populating costs
 *                     less than the faults it saves (churn_bench's
 *                     physics); a huge page's single fault is already
 *                     that cheap. */
typedef enum gb_populate { GB_POPULATE_AUTO = 0, GB_POPULATE_ON, GB_POPULATE_OFF } gb_populate;

typedef struct gb_options {
    gb_blocks blocks;
    gb_growth growth;
    gb_small small;
    /* Most mappings the runtime keeps at once (blocks, arenas, stacks).
     * 0: derived from the OS limit (on Linux vm.max_map_count less an eighth
     * left to the host, at least 1024 below it). Past it blocks come from
     * malloc and the fallback is counted. */
    size_t map_budget;
    /* First block of a region and the cap of the geometric growth, in bytes.
     * 0: defaults (4 KiB, and 64 MiB with huge pages or 1 MiB without). An
     * allocation larger than the cap gets a block of its own. A region
     * starts instead in the block of the chain's sizes that would have held
     * the last region its thread freed, where the thread's block cache
     * holds one and it is at most an eighth of the cache's bound (never a
     * fresh mapping, nor under gb_region_limit): the memory that region
     * wrote, still in the CPU's caches. */
    size_t first_block;
    size_t block_cap;
    /* Bytes of recently given-back mapped blocks the process keeps, all
     * threads' caches together (each thread keeps its own), resident,
     * to hand to the next regions of the thread that gave them back
     * without a page fault (mapped blocks of any size class, four per
     * doubling from 16 KiB; a request takes a block of its class, else the
     * smallest cached one of up to four times its size). 0: GB_CACHE (KiB,
     * or "off") decides, else the default GB_CACHE_DEFAULT; GB_CACHE_OFF:
     * none.
     * The cache, with each thread's spare page of region descriptors in
     * it (see gb_stats), and the pooled coroutine stacks are what the
     * runtime keeps after every region is left; gb_sweep and thread exit
     * give both back. */
    size_t cache_bytes;
    /* Run a sweep every N calls of gb_safepoint(); 0 means never, unless the
     * environment variable GB_STRESS=N is set. */
    unsigned stress;
    gb_huge huge;
    /* Fields from 0.2 on are appended below (giveback.h, "The ABI"). */
    gb_populate populate;
} gb_options;

/* 8 MiB: a region chains blocks of about twice what it allocates, so a
 * bound of 4 MiB could not hold one 2 MB region's blocks (churn_bench:
 * 2.6 times glibc reusing its heap at that size, which itself keeps 10 MiB
 * after the same churn). */
#define GB_CACHE_DEFAULT ((size_t)8 * 1024 * 1024)
#define GB_CACHE_OFF ((size_t)-1)

/* Fills *o with the defaults (all AUTO / 0). */
GB_API void gb_options_init_sized(gb_options *o, size_t size);
#define gb_options_init(o) gb_options_init_sized((o), sizeof(gb_options))

/* Initialises the runtime for the process. Optional: the first call into
 * the runtime initialises it with the defaults (o NULL means the defaults
 * too). It may be called again, by a library and its host that both use
 * giveback, or after the first use: a call asking for the settings in
 * force (o's settings with the environment and the defaults filled in, as
 * the first call resolved them) returns and changes nothing. A call asking
 * for other settings stops the process, naming each setting that differs
 * with both values, who set them first (the gb_init of which program or
 * library, or the first use) and who asks now: options that silently did
 * nothing would hide bugs. A malformed environment variable of an option
 * (the README's "Options" lists every one) stops it too, naming the
 * variable and what it takes. Thread-safe. */
GB_API void gb_init_sized(const gb_options *o, size_t size);
#define gb_init(o) gb_init_sized((o), sizeof(gb_options))

/* "program" or "library": a program build may tune process-wide malloc
 * settings at init (the glibc mmap threshold); a library build never does. */
GB_API const char *gb_build_kind(void);

/* The block source and growth path in force ("map"/"heap", "remap"/"copy"). */
GB_API const char *gb_blocks_name(void);
GB_API const char *gb_growth_name(void);

/* The huge page size mapped blocks are advised for, in bytes; 0 when huge
 * pages are off (gb_huge). */
GB_API size_t gb_huge_page(void);

/* Which fresh blocks are populated (gb_populate): "all", "4k" (those in
 * 4 KiB pages), or "off" (the setting, or an OS without the call). */
GB_API const char *gb_populate_name(void);

/* --------------------------------------------------------------- regions */

/* A region handle. It is not the address of anything: it names the
 * region's descriptor slot and that slot's generation, so the handle of a
 * left region is known as left for good, even after any number of regions
 * have reused the slot (a slot's generation never repeats: a slot is
 * retired for good before its 39-bit generation would wrap, after about
 * 5.5e11 regions). Handles are never NULL; they are 64-bit values, so the
 * runtime needs 64-bit pointers.
 *
 * Regions belong to the thread that holds them (the one that entered
 * them, or attached them since: see "handing a region to another thread"
 * below), and to the context (the thread's own stack, or one coroutine)
 * that entered or attached them. Every function below that takes a
 * gb_region * stops the process, naming the mistake, when the handle was
 * already left (or is retired), is held by another thread, is in flight
 * between two threads, or was entered by another context of this thread
 * (it says which coroutine, and whether that one resumed the running one);
 * gb_leave also when the region is not the innermost one.
 *
 * A thread that exits with regions still entered on its own stack has them
 * left at its exit (their memory goes back as at gb_leave) and prints
 * "giveback: a thread exited with N regions entered; they were left at its
 * exit" on stderr: it is a leak the thread can no longer fix, reported,
 * but not fatal. Regions it left that were retired, pinned by its own
 * suspended coroutines, are freed then too: those coroutines can never run
 * again (a coroutine runs only on the thread that made it). Coroutines it
 * never freed stay, with their stacks and the regions they had entered. */
typedef struct gb_region gb_region;
typedef struct gb_coro gb_coro; /* a coroutine: see "coroutines" below */

/* Pushes a new, empty region on the running context's region stack (the
 * thread's, or the running coroutine's) and returns its handle. Takes no
 * memory for blocks until the first allocation; its descriptor is a slot
 * in a page of descriptors the thread maps like a block. */
GB_API gb_region *gb_enter(void);

/* Pops r, which must be the innermost region of the running context, and
 * gives its memory back to the OS at once, or retires it while a suspended
 * coroutine's stack points into it. Stops the process if r is not innermost,
 * was already left, or belongs to another thread or coroutine. */
GB_API void gb_leave(gb_region *r);

/* Leaves every region the running context entered after r, innermost
 * first, each as gb_leave would (a region a suspended coroutine points
 * into is retired), and keeps r entered; with r NULL, leaves every region
 * of the running context. Returns how many it left. For a host whose
 * errors longjmp or throw past its own gb_leave calls (a Lua error raised
 * in a C function that had a scratch region entered, a C++ exception):
 * remember the region that was innermost before the protected call, and
 * call gb_leave_to on it after the call returns, whether or not it
 * failed. Stops the process if r was left (or is retired), belongs to
 * another thread, or to another context of this thread. */
GB_API size_t gb_leave_to(gb_region *r);

/* ------------------------------------ handing a region to another thread
 *
 * A server parses a request on one thread and serves it on another; a
 * producer builds what a consumer frees. gb_region_detach takes the
 * innermost region off the running context's stack, with everything in
 * it: its blocks and kept blocks, the arenas of the maps and vecs it
 * holds, its limit and its counters. The region is then in flight: no
 * thread may allocate in it, reset it or leave it, and gb_region_of finds
 * its memory on no thread (it returns NULL). gb_region_attach, on any thread (the same one included), makes it
 * that context's innermost region: gb_alloc goes there, gb_region_of finds
 * its memory from that thread, and gb_leave there gives its memory back to
 * the OS. The handle stays the same through it all, and the handles of
 * left regions stay known as left.
 *
 * The memory is handed over, not the right to use it from two threads at
 * once: the program orders the detach before the attach (a queue, a mutex,
 * a join), and the thread that detached does not use the region's memory
 * after it. A region in flight outlives the thread that detached it; one
 * that is never attached again holds its memory until the process exits.
 * A thread that exits with an attached region still entered leaves it, as
 * it leaves the regions it entered.
 *
 * Pinning: a region that a suspended coroutine of this thread points into
 * is not detached. Its memory must stay while that coroutine may resume,
 * and another thread's leave could not know of it, so gb_region_detach
 * stops the process naming the coroutine, and gb_try_region_detach
 * returns false. Once attached, the region is pinned as any other by the
 * suspended coroutines of the thread that holds it. */

/* Detaches r, the innermost region of the running context, without
 * freeing anything: it leaves the context's stack and is in flight until
 * gb_region_attach. Stops the process when r is not the innermost region
 * of the running context (it names what r is: a region entered after
 * others, one in flight already, one held by another thread or by a
 * suspended coroutine), or when a suspended coroutine of this thread
 * points into it. */
GB_API void gb_region_detach(gb_region *r);

/* Like gb_region_detach, but when a suspended coroutine of this thread
 * points into r, returns false with r still entered, and sets *pinned_by
 * (unless pinned_by is NULL) to that coroutine; true when r was detached.
 * Misuse stops the process as under gb_region_detach. */
GB_API bool gb_try_region_detach(gb_region *r, gb_coro **pinned_by);

/* Makes r, which is in flight, the innermost region of the running
 * context, on this thread. Stops the process when r is not in flight: it
 * says whether this thread holds it already (attached twice, or never
 * detached), another thread does, or it was left. */
GB_API void gb_region_attach(gb_region *r);

/* The innermost region of the running context, or NULL if there is none. */
GB_API gb_region *gb_current(void);

/* How many regions the running context has entered and not left. */
GB_API size_t gb_depth(void);

/* n bytes, 16-byte aligned, in the innermost region; valid until it is left.
 * n == 0 returns a unique non-NULL pointer. Stops the process when there is
 * no region, when n overflows, or when memory is exhausted. */
GB_API void *gb_alloc(size_t n);

/* Like gb_alloc, zeroed, for count elements of size bytes; stops on overflow
 * of count * size. */
GB_API void *gb_calloc(size_t count, size_t size);

/* Like gb_alloc in region r, which need not be innermost: a live region of
 * the running context, or, in a coroutine, of a context that resumed it
 * (directly or through others: the natural place for a value a generator
 * hands its caller). Pinning covers such memory as any other: when the
 * resumer leaves r while the coroutine, suspended, still points into it,
 * r is retired, not freed. Stops the process if r was left (or is
 * retired), belongs to another thread, or to a context of this thread that
 * is neither the running one nor one that resumed it. */
GB_API void *gb_alloc_in(gb_region *r, size_t n);

/* Like gb_calloc in region r (which regions: see gb_alloc_in). */
GB_API void *gb_calloc_in(gb_region *r, size_t count, size_t size);

/* Resizes the allocation p (old_n bytes) to new_n bytes, in the region
 * that holds p: the innermost region, or an outer one of the running
 * context, or one of a context that resumed it (p is never moved into
 * another region). The last allocation of a region grows in place while
 * its block has room; a large allocation that has a mapped block of its
 * own grows that block (mremap, or map-copy-unmap). Otherwise a new
 * allocation is made in the same region and old_n bytes copied; the old
 * bytes stay until the region is left. p == NULL behaves as gb_alloc.
 * Stops the process when p is in none of those regions (malloc'd memory,
 * a left region's, a container's arena), when old_n is larger than what
 * the region handed out from p on (a region keeps no size per allocation,
 * so an old_n too large but within that is not caught), on overflow and on
 * exhaustion. */
GB_API void *gb_realloc(void *p, size_t old_n, size_t new_n);

/* Like gb_realloc for an allocation p of region r (which regions: see
 * gb_alloc_in), whatever region is innermost: an interpreter's allocator
 * callback bound to its own region keeps growth in place while its host
 * enters and leaves scratch regions around it. Stops the process as
 * gb_realloc does, and when p is not in r. */
GB_API void *gb_realloc_in(gb_region *r, void *p, size_t old_n, size_t new_n);

/* ------------------------------------------------- when memory runs out */

/* The fallible family: each is the call without "try_", except that when
 * the memory cannot be had it returns NULL and changes nothing: r, its
 * blocks, its counters and every earlier allocation (p included, for the
 * reallocs) are exactly as they were, as with malloc and realloc. Memory
 * cannot be had when the OS refuses a mapping and malloc refuses too (the
 * mapping budget used up counts the same way), after the runtime tried a
 * smaller block down to the smallest that holds the request; or when r
 * would pass its limit (gb_region_limit). An interpreter's allocator
 * (Lua's lua_Alloc, which must return NULL when it cannot satisfy a
 * request), or a server that fails one request rather than the process,
 * calls these. A size whose arithmetic overflows (count * size, n plus
 * the alignment) is a request no memory can satisfy: NULL too. Misuse
 * stops the process as in the stopping family (no region entered, a left
 * or foreign region, p in no region of r, an old size too large). Each
 * NULL is counted in gb_stats.refusals; the stopping family stops instead,
 * with a message naming the request, the region and, for a limit, the
 * limit. */
GB_API void *gb_try_alloc(size_t n);
GB_API void *gb_try_calloc(size_t count, size_t size);
GB_API void *gb_try_alloc_in(gb_region *r, size_t n);
GB_API void *gb_try_calloc_in(gb_region *r, size_t count, size_t size);
GB_API void *gb_try_realloc(void *p, size_t old_n, size_t new_n);
GB_API void *gb_try_realloc_in(gb_region *r, void *p, size_t old_n, size_t new_n);

/* Sets the most bytes r may hold: its blocks, whole, and the blocks a
 * reset kept (gb_region_bytes; not its containers' arenas). An
 * allocation that needs a new block past it is refused: NULL from the try
 * family, a stop from the others. 0 removes the limit. A limit below what
 * r holds already refuses every new block until r is reset or left; a
 * block larger than the chain would take is never the reason: blocks step
 * down to the smallest that holds the request before it is refused. r
 * must be a live region of the running context or of one that resumed
 * it (as for gb_alloc_in); stops the process otherwise. The limit is read
 * back in gb_region_info.limit. An interpreter's memory limit in one line:
 * gb_region_limit(interp_region, 64 << 20). */
GB_API void gb_region_limit(gb_region *r, size_t bytes);

/* Why a request could not be met, for the handler below. */
typedef enum gb_oom_reason {
    GB_OOM_SYSTEM = 1, /* the OS and malloc refused (or the mapping budget and malloc) */
    GB_OOM_LIMIT = 2,  /* the region's limit (gb_region_limit) */
} gb_oom_reason;

/* Called on the allocating thread when a request of `request` bytes in
 * region r cannot be met, before the try family returns NULL or the
 * stopping family stops. It may give memory back (run a collector, leave
 * or reset other regions, gb_sweep, free a cache, raise r's limit) and
 * return true to have the request tried once more; false lets it fail.
 * It must not leave or reset r itself (the request is still for r, and a
 * realloc still holds a pointer into it): a handler that does stops the
 * process, named, once it returns. A request that fails while the
 * handler runs on this thread fails without calling it again. */
typedef bool (*gb_oom_handler)(gb_region *r, size_t request, gb_oom_reason why, void *arg);

/* Sets the process's handler and its argument (NULL: none, the default).
 * Process-wide, like APR's apr_pool_abort_set; thread-safe. */
GB_API void gb_set_oom_handler(gb_oom_handler fn, void *arg);

/* Empties r, which must be the innermost region of the running context,
 * and keeps it entered: every allocation in it and every container it
 * holds is gone, as at gb_leave, and the next allocations start afresh.
 * Of its blocks, whole blocks of at most keep_bytes in all are kept,
 * resident, for those allocations (newest and largest first; 0 keeps
 * none): a region reset per request pays its page faults once, not per
 * request. The rest go back as at gb_leave, and the kept ones go back when
 * r is left or reset with less. Kept bytes are counted in gb_stats
 * (bytes_kept; resets counts the calls) and in gb_region_bytes.
 * When a suspended coroutine's stack points into r, its contents are
 * retired as a left region's would be (the pointer stays good until
 * nothing points there) and none of them is kept. Stops the process if r is
 * not innermost, was left, or belongs to another thread or context. Under
 * ASan a touch of a kept block before it is used again is reported. */
GB_API void gb_region_reset(gb_region *r, size_t keep_bytes);

/* Bytes the region holds from the OS or malloc (whole blocks, not what was
 * asked for, kept ones included; not its containers' arenas). r must be a
 * region this thread holds (entered or attached, in any of its contexts)
 * and has not left; stops the process otherwise. */
GB_API size_t gb_region_bytes(const gb_region *r);

/* What a region handle names now. */
typedef enum gb_region_state {
    GB_REGION_LIVE = 1,    /* entered, not left */
    GB_REGION_RETIRED = 2, /* left, kept while a suspended stack points into it */
    GB_REGION_FREED = 3,   /* left and given back */
} gb_region_state;

typedef struct gb_region_info {
    gb_region_state state;
    size_t bytes;       /* blocks in use, whole (0 once freed) */
    size_t blocks;
    size_t kept_bytes;  /* blocks gb_region_reset kept, empty (LIVE only) */
    size_t kept_blocks;
    size_t arenas;      /* container arenas bound to it */
    size_t arena_bytes;
    size_t depth;       /* LIVE: 1 for the innermost region of its context, 2 for
                           the next one out, ...; 0 otherwise */
    gb_coro *entered_by; /* LIVE: the coroutine whose region stack it is on, or
                            NULL for the thread's own stack */
    gb_coro *pinned_by;  /* RETIRED: the coroutine found pointing into it
                            (suspended, or running since it was found), or
                            NULL when no suspended stack does any more (it is
                            freed at the next try: a leave, gb_sweep) */
    /* Fields from 0.2 on are appended below (giveback.h, "The ABI"). */
    size_t limit;        /* LIVE: gb_region_limit's bound, 0 for none */
} gb_region_info;

/* Fills *out for r, a handle this thread's gb_enter returned, live,
 * retired or left, or one of a region this thread holds by
 * gb_region_attach: after gb_leave(r) it says whether the leave freed r or
 * retired it, and which coroutine pins it. Stops the process for a region
 * in flight or held by another thread, for one another thread entered that
 * is not this thread's (one attached here and left since included: ask
 * before the leave), and for a value gb_enter never returned. Reads the
 * state only: it frees nothing and moves nothing. */
GB_API void gb_region_info_get_sized(const gb_region *r, gb_region_info *out, size_t size);
#define gb_region_info_get(r, out) gb_region_info_get_sized((r), (out), sizeof(gb_region_info))

/* The region of this thread (in any of its contexts, live or retired)
 * whose blocks or container arenas hold p, or NULL when none does:
 * memory from malloc, of another thread, or of a region given back (whose
 * addresses may be reused by anything since), or a block a reset emptied.
 * What an allocator's free hook asks to tell region memory from malloc'd
 * memory, on every free: one lookup in the thread's index of its blocks
 * by address, in constant expected time, however many regions and blocks
 * the thread has (bench/lookup_bench.c). */
GB_API gb_region *gb_region_of(const void *p);

/* ------------------------------------------------------------ containers */

/* A growable array of fixed-size elements, and a hash map from uint64_t keys
 * to uint64_t values (a value may hold a pointer cast to uintptr_t). The
 * container's struct lives in the region that was innermost when it was
 * made (its holder region) and dies with it; using a container after its
 * holder region was left is undefined, like any pointer into that region.
 *
 * Growth leaves the old storage as garbage in the holder region. Compaction
 * moves the live contents into an arena of the container's own, which is
 * bound to the holder region and given back when that region is left (or
 * freed, if it was retired). Compaction runs by itself once the garbage a
 * container left reaches GB_COMPACT_GARBAGE_PERCENT of its live storage (and
 * 64 KiB): growth by doubling leaves about as much garbage as it keeps,
 * and on request. A compacted container grows inside its arena. */
#define GB_COMPACT_GARBAGE_PERCENT 50

typedef struct gb_vec gb_vec;
typedef struct gb_map gb_map;

/* A new empty vec in the innermost region; stops if elem_size is 0. */
GB_API gb_vec *gb_vec_new(size_t elem_size);
/* Appends a copy of elem_size bytes at elem; returns where it was stored
 * (valid until the next growth or compaction). */
GB_API void *gb_vec_push(gb_vec *v, const void *elem);
/* The element at i; stops the process if i >= length. */
GB_API void *gb_vec_at(const gb_vec *v, size_t i);
/* Copies the last element to out (if non-NULL) and removes it; stops if empty. */
GB_API void gb_vec_pop(gb_vec *v, void *out);
GB_API size_t gb_vec_len(const gb_vec *v);
/* Moves the live elements into the vec's own arena now. */
GB_API void gb_vec_compact(gb_vec *v);

/* A new empty map in the innermost region. */
GB_API gb_map *gb_map_new(void);
/* Inserts or replaces. */
GB_API void gb_map_put(gb_map *m, uint64_t key, uint64_t value);
/* True and *value (if non-NULL) set when key is present. */
GB_API bool gb_map_get(const gb_map *m, uint64_t key, uint64_t *value);
/* True when key was present and is now removed. */
GB_API bool gb_map_del(gb_map *m, uint64_t key);
GB_API size_t gb_map_len(const gb_map *m);
/* Moves the live entries into the map's own arena now. */
GB_API void gb_map_compact(gb_map *m);

/* Bytes of the container's own arena (0 until it is compacted), and bytes of
 * garbage it has left in its holder region so far. */
GB_API size_t gb_vec_arena_bytes(const gb_vec *v);
GB_API size_t gb_map_arena_bytes(const gb_map *m);
GB_API size_t gb_vec_garbage_bytes(const gb_vec *v);
GB_API size_t gb_map_garbage_bytes(const gb_map *m);

/* ------------------------------------------------------------ coroutines */

/* Coroutines with stacks of their own, run on the thread that made them.
 * Each has its own region stack: gb_enter inside a coroutine pushes on it.
 *
 * Pinning: when a region is left, any suspended coroutine whose stack (from
 * its saved stack pointer to the top, saved registers included) holds a word
 * that points into one of the region's blocks or arenas may still read it
 * when it resumes, so the region is retired, not freed. A retired region is
 * tried again at later leaves, when a coroutine that pinned it finishes or
 * is freed, at gb_sweep, and every GB_STRESS-th gb_safepoint; it is freed as
 * soon as a try finds nothing pointing into it. Coroutines that are running
 * but have resumed another one are scanned too; the thread's own stack is
 * not (leaving a region the thread still points into is the caller's bug, as
 * with free).
 *
 * Only stacks pin. A pointer that a suspended coroutine keeps only in heap
 * memory (a malloc'd struct, a global, another region's block) does not:
 * the region it points into is freed at its leave, and the coroutine reads
 * freed memory when it resumes. Keep the pointer in a local variable of the
 * coroutine across the yield (a copy is enough), or allocate the value in
 * the region of the context that resumes it (gb_alloc_in), which lives at
 * least as long as that context needs it.
 *
 * A gb_coro * is a handle, not the descriptor's address: it names a slot
 * and the slot's generation, which never repeats, so resuming, freeing or
 * asking the status of a freed coroutine stops the process saying so, and
 * a handle of another thread's coroutine (or of a thread that has exited)
 * is named as such. (The type gb_coro is declared with gb_region above.) */
typedef void (*gb_coro_fn)(void *arg);

typedef enum gb_coro_status {
    GB_CORO_SUSPENDED = 1, /* made and not yet run, or yielded */
    GB_CORO_RUNNING = 2,   /* running, or waiting on one it resumed */
    GB_CORO_FINISHED = 3,  /* its function returned */
} gb_coro_status;

/* The stack size used when gb_coro_new is given 0: 256 KiB, plus one guard
 * page below it that stops an overflow with a message. */
#define GB_CORO_STACK_DEFAULT ((size_t)256 * 1024)

/* A new suspended coroutine that will run fn(arg) on a stack of stack_size
 * bytes (0: the default; rounded up to whole pages, at least 16 KiB). */
GB_API gb_coro *gb_coro_new(gb_coro_fn fn, void *arg, size_t stack_size);

/* Runs c until it yields (returns true) or finishes (returns false). Stops
 * the process if c is finished, running (itself or one that resumed the
 * caller), or belongs to another thread. */
GB_API bool gb_coro_resume(gb_coro *c);

/* Suspends the running coroutine and returns to the one that resumed it.
 * Stops the process when called outside any coroutine. */
GB_API void gb_coro_yield(void);

/* Frees c, suspended or finished: its stack goes back, regions it still had
 * entered are left, and what it pinned is tried again. Stops the process if
 * c is running. */
GB_API void gb_coro_free(gb_coro *c);

GB_API gb_coro_status gb_coro_status_of(const gb_coro *c);

/* The running coroutine, or NULL on the thread's own stack. */
GB_API gb_coro *gb_coro_current(void);

/* Tries every retired region of this thread that may have been unpinned,
 * frees those nothing points into, and gives this thread's pooled
 * coroutine stacks and block cache (its spare descriptor page included)
 * back to the OS. */
GB_API void gb_sweep(void);

/* Marks a safepoint; with a stress setting of N, every N-th one sweeps. */
GB_API void gb_safepoint(void);

/* ----------------------------------------------------------------- stats */

/* Exact counters, process-wide, read without stopping other threads (each
 * field is exact; fields read while other threads work may be from slightly
 * different moments).
 *
 * When every region has been left, every retired one freed and every
 * coroutine freed, what each thread still holds is exactly:
 *   - its block cache (bytes_cached, mappings_cached; all threads' caches
 *     together are at most cache_bytes), which includes the one empty page
 *     of region descriptors a thread keeps for its next region (its size is
 *     map_min, within the bound; none with GB_CACHE_OFF or the heap
 *     source);
 *   - its pooled coroutine stacks, emptied (stacks_pooled; each counts its
 *     size and guard page in bytes_mapped and two mappings), and the pool's
 *     own descriptor in bytes_meta;
 * and every other "now" field but map_budget is 0. After gb_sweep on each
 * such thread (or its exit) every "now" field but map_budget is 0. */
typedef struct gb_stats {
    /* now */
    size_t bytes_mapped;     /* the runtime's own mappings, in bytes: blocks,
                                arenas, slabs, stacks, region descriptor pages */
    size_t bytes_heap;       /* bytes held from malloc for blocks, arenas and
                                region descriptor pages (heap source, fallbacks) */
    size_t bytes_meta;       /* bytes held from malloc for the rest: coroutine
                                descriptors, stack summaries, stack pools */
    size_t mappings;         /* the runtime's own mappings */
    size_t map_budget;       /* the most it will keep */
    size_t regions_live;     /* entered, not left */
    size_t regions_retired;  /* left, kept because something pinned them */
    size_t bytes_retired;    /* bytes held by retired regions */
    size_t blocks_live;      /* blocks held by live and retired regions */
    size_t arenas_live;      /* container arenas not yet given back */
    size_t unmaps_pending;   /* ranges whose munmap failed, emptied, to unmap later */
    /* since init */
    uint64_t fallbacks_budget; /* blocks from malloc because the budget was used up */
    uint64_t fallbacks_mmap;   /* blocks from malloc because mmap failed */
    uint64_t unmap_failures;   /* munmap calls that failed (the range is emptied instead) */
    uint64_t grows_remap;      /* blocks grown with mremap */
    uint64_t grows_copy;       /* blocks grown by map-copy-unmap */
    uint64_t compactions;      /* container compactions */
    /* coroutines, now */
    size_t coros_live;         /* made and not yet freed */
    size_t stacks_pooled;      /* freed stacks kept (emptied) for reuse */
    /* pin checks, since init */
    uint64_t pin_words_scanned; /* stack words read by pin checks */
    uint64_t pin_probes;        /* lookups of a region's range in a stack summary */
    uint64_t pin_tries;         /* retired regions tried again */
    uint64_t pin_tries_skipped; /* tries skipped: nothing that pinned them has run */
    uint64_t retirements;       /* regions retired on leave */
    uint64_t sweeps;
    /* small chunks, now */
    size_t slabs;               /* slabs mapped (counted in mappings, bytes_mapped) */
    size_t bytes_small;         /* bytes of small chunks handed out from them */
    size_t bytes_small_dirty;   /* freed small-chunk bytes in slabs still in use,
                                   not yet emptied (at most 64 KiB a slab) */
    /* the block cache, kept until a sweep (not in bytes_mapped or mappings) */
    size_t bytes_cached;        /* given-back blocks kept for reuse, resident
                                   (and each thread's spare descriptor page) */
    size_t mappings_cached;
    uint64_t cache_hits;        /* blocks handed out from the cache, since init */
    /* resets */
    size_t bytes_kept;          /* blocks gb_region_reset kept for live regions'
                                   next allocations (in bytes_mapped or bytes_heap) */
    uint64_t resets;            /* gb_region_reset calls, since init */
    /* huge pages, now */
    size_t bytes_huge;          /* bytes of blocks held (not cached) that start
                                   on a huge page boundary, advised for huge
                                   pages (in bytes_mapped; see gb_huge) */
    /* Fields from 0.2 on are appended below (giveback.h, "The ABI"). */
    /* when memory runs out, since init */
    uint64_t refusals;          /* requests that could not be met: a NULL from
                                   the try family, or the stop of the others */
    uint64_t step_downs;        /* blocks taken smaller than the chain wanted,
                                   because the larger one could not be had or
                                   would pass the region's limit */
    /* populating fresh blocks, since init */
    uint64_t bytes_populated;   /* bytes of freshly mapped blocks the OS made
                                   resident in one call (see gb_populate) */
    /* handing regions between threads */
    size_t regions_in_flight;   /* detached and not attached since (also in
                                   regions_live: none of them was left) */
    uint64_t handoffs;          /* gb_region_detach calls that detached, since init */
} gb_stats;

/* Every field of gb_stats once, in order, as X(kind, type, name), so that a
 * caller can walk them (print them all, check a set of them, diff two
 * readings) without naming each one; the runtime's own counters, their
 * copy-out and its tests are made from this list too. kind is one of the
 * tokens (not macros; paste them, e.g. MY_##kind):
 *   GB_STAT_NOW      held now; 0 once every region is left, every retired one
 *                    freed, every coroutine freed and gb_sweep has run;
 *   GB_STAT_KEPT     held now, and kept by design until gb_sweep or thread
 *                    exit even then (the block cache);
 *   GB_STAT_SETTING  a setting, not a counter (map_budget);
 *   GB_STAT_SINCE    counted since init. */
#define GB_STATS_FIELDS(X)                                                   \
    X(GB_STAT_NOW, size_t, bytes_mapped)                                     \
    X(GB_STAT_NOW, size_t, bytes_heap)                                       \
    X(GB_STAT_NOW, size_t, bytes_meta)                                       \
    X(GB_STAT_NOW, size_t, mappings)                                         \
    X(GB_STAT_SETTING, size_t, map_budget)                                   \
    X(GB_STAT_NOW, size_t, regions_live)                                     \
    X(GB_STAT_NOW, size_t, regions_retired)                                  \
    X(GB_STAT_NOW, size_t, bytes_retired)                                    \
    X(GB_STAT_NOW, size_t, blocks_live)                                      \
    X(GB_STAT_NOW, size_t, arenas_live)                                      \
    X(GB_STAT_NOW, size_t, unmaps_pending)                                   \
    X(GB_STAT_SINCE, uint64_t, fallbacks_budget)                             \
    X(GB_STAT_SINCE, uint64_t, fallbacks_mmap)                               \
    X(GB_STAT_SINCE, uint64_t, unmap_failures)                               \
    X(GB_STAT_SINCE, uint64_t, grows_remap)                                  \
    X(GB_STAT_SINCE, uint64_t, grows_copy)                                   \
    X(GB_STAT_SINCE, uint64_t, compactions)                                  \
    X(GB_STAT_NOW, size_t, coros_live)                                       \
    X(GB_STAT_NOW, size_t, stacks_pooled)                                    \
    X(GB_STAT_SINCE, uint64_t, pin_words_scanned)                            \
    X(GB_STAT_SINCE, uint64_t, pin_probes)                                   \
    X(GB_STAT_SINCE, uint64_t, pin_tries)                                    \
    X(GB_STAT_SINCE, uint64_t, pin_tries_skipped)                            \
    X(GB_STAT_SINCE, uint64_t, retirements)                                  \
    X(GB_STAT_SINCE, uint64_t, sweeps)                                       \
    X(GB_STAT_NOW, size_t, slabs)                                            \
    X(GB_STAT_NOW, size_t, bytes_small)                                      \
    X(GB_STAT_NOW, size_t, bytes_small_dirty)                                \
    X(GB_STAT_KEPT, size_t, bytes_cached)                                    \
    X(GB_STAT_KEPT, size_t, mappings_cached)                                 \
    X(GB_STAT_SINCE, uint64_t, cache_hits)                                   \
    X(GB_STAT_NOW, size_t, bytes_kept)                                       \
    X(GB_STAT_SINCE, uint64_t, resets)                                       \
    X(GB_STAT_NOW, size_t, bytes_huge)                                       \
    X(GB_STAT_SINCE, uint64_t, refusals)                                     \
    X(GB_STAT_SINCE, uint64_t, step_downs)                                   \
    X(GB_STAT_SINCE, uint64_t, bytes_populated)                             \
    X(GB_STAT_NOW, size_t, regions_in_flight)                                \
    X(GB_STAT_SINCE, uint64_t, handoffs)

GB_API void gb_stats_get_sized(gb_stats *out, size_t size);
#define gb_stats_get(out) gb_stats_get_sized((out), sizeof(gb_stats))

/* The process's resident size as the OS reports it, in bytes. footprint is
 * macOS's phys_footprint (0 elsewhere); lazy_free is Linux's LazyFree (pages
 * given back with MADV_FREE that still count as resident; 0 elsewhere);
 * peak is the most the process has been resident since it started (Linux's
 * VmHWM, macOS's resident_size_peak), never below rss nor below a peak an
 * earlier call returned (the OS samples its own lazily); anon_huge is the
 * part of rss in transparent huge pages (Linux's AnonHugePages; 0
 * elsewhere). Returns 0, or -1 if the OS would not say (then *out is all
 * zero). */
typedef struct gb_resident {
    size_t rss;
    size_t footprint;
    size_t lazy_free;
    size_t peak;
    size_t anon_huge;
} gb_resident;

GB_API int gb_resident_get_sized(gb_resident *out, size_t size);
#define gb_resident_get(out) gb_resident_get_sized((out), sizeof(gb_resident))

#ifdef __cplusplus
}
#endif

#endif /* GIVEBACK_H */
