/* internal.h -- the runtime's structures and the invariants they keep.
 *
 * Everything here is internal (gb__ names, hidden visibility in the shared
 * library). The invariants are written at the struct they govern, so that a
 * change to one of these structs is checked against them first.
 */
#ifndef GB_INTERNAL_H
#define GB_INTERNAL_H

#include "giveback.h"
#include "os/os.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define GB__NORETURN __attribute__((noreturn))
#define GB__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define GB__LIKELY(x) __builtin_expect(!!(x), 1)
#define GB__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GB__NORETURN
#define GB__PRINTF(f, a)
#define GB__LIKELY(x) (x)
#define GB__UNLIKELY(x) (x)
#endif

#define GB__ALIGN 16
#define GB__KIB ((size_t)1024)
#define GB__MIB (GB__KIB * 1024)

/* The smallest block worth a mapping of its own: 16 KiB, the page size on
 * Apple Silicon, or the page size if larger. Mapping smaller blocks one at a
 * time would round each up to a page. */
#define GB__MAP_MIN (16 * GB__KIB)

/* The glibc mmap threshold a program build fixes (the article's 64 KiB). */
#define GB__FIXED_THRESHOLD (64 * GB__KIB)

/* ---------------------------------------------------------------- errors */

/* Prints "giveback: <message>" and aborts. Misuse and exhaustion both end
 * here; the message names the mistake. */
GB__NORETURN GB__PRINTF(1, 2) void gb__die(const char *fmt, ...);

/* ---------------------------------------------------------------- config */

/* Settled at init and read-only afterwards. */
typedef struct gb__config {
    gb_blocks blocks;     /* MAP or HEAP, never AUTO after init */
    gb_growth growth;     /* REMAP or COPY, never AUTO after init */
    size_t map_min;       /* smallest mapped block: max(GB__MAP_MIN, page) */
    size_t map_budget;
    size_t first_block;
    size_t block_cap;
    unsigned stress;
    bool small_slabs;     /* chunks under map_min from slabs (map source) */
    size_t cache_bytes;   /* per-thread block cache bound; 0 when off */
    bool threshold_fixed; /* this init called mallopt */
} gb__config;

extern gb__config gb__cfg;
extern const int gb__program_build; /* 1 in the program build, 0 in the library */

/* Initialises on first use; cheap once done. */
void gb__init_slow(void);
extern atomic_int gb__inited;
static inline void gb__ensure_init(void)
{
    if (GB__UNLIKELY(atomic_load_explicit(&gb__inited, memory_order_acquire) != 2))
        gb__init_slow();
}

/* ----------------------------------------------------------------- stats */

/* The process-wide counters behind gb_stats, one per field of
 * GB_STATS_FIELDS but the setting. Each is updated with a relaxed atomic
 * add next to the action it counts, never estimated. */
#define GB__COUNTER_GB_STAT_NOW(type, name) _Atomic(type) name;
#define GB__COUNTER_GB_STAT_KEPT(type, name) _Atomic(type) name;
#define GB__COUNTER_GB_STAT_SINCE(type, name) _Atomic(type) name;
#define GB__COUNTER_GB_STAT_SETTING(type, name)
#define GB__COUNTER(kind, type, name) GB__COUNTER_##kind(type, name)
typedef struct gb__counters {
    GB_STATS_FIELDS(GB__COUNTER)
} gb__counters;

extern gb__counters gb__stat;

#define GB__ADD(field, n) atomic_fetch_add_explicit(&gb__stat.field, (n), memory_order_relaxed)
#define GB__SUB(field, n) atomic_fetch_sub_explicit(&gb__stat.field, (n), memory_order_relaxed)

/* ---------------------------------------------------------------- chunks */

/* Where a chunk of memory came from. */
typedef enum gb__src {
    GB__SRC_MAP = 1,   /* the runtime's own mapping */
    GB__SRC_HEAP = 2,  /* malloc */
    GB__SRC_SMALL = 3, /* part of one of the runtime's slabs (small.c) */
} gb__src;

typedef struct gb__slab gb__slab;

/* A chunk: the unit the runtime takes from the OS or malloc and gives back
 * whole. Region blocks and container arenas are chunks.
 *   - size is what was taken: page-rounded for MAP, exact for HEAP;
 *   - a MAP chunk counts once in gb__stat.mappings and size in bytes_mapped
 *     from gb__chunk_get until gb__chunk_put; a HEAP chunk counts size in
 *     bytes_heap over the same span; a SMALL chunk counts size in
 *     bytes_small, and owner is its slab (whose mapping is counted once). */
typedef struct gb__chunk {
    void *base;
    size_t size;
    gb__src src;
    gb__slab *owner;
} gb__chunk;

/* Small chunks from the runtime's slabs (small.c): false when no slab
 * could be had (the caller then uses malloc). */
bool gb__small_get(size_t n, gb__chunk *out);
void gb__small_put(gb__chunk c);

/* Takes a chunk of at least n bytes. The block source decides MAP or HEAP
 * (fix/block_map.c); a MAP request past the mapping budget or whose mmap
 * fails becomes a HEAP chunk and is counted as a fallback. Stops the
 * process when even malloc fails. */
gb__chunk gb__chunk_get(size_t n);

/* Gives a chunk back: munmap for MAP (when munmap fails the pages are
 * emptied now and the range is unmapped later), free for HEAP. */
void gb__chunk_put(gb__chunk c);

/* Grows a chunk to at least n bytes keeping its contents: mremap or
 * map-copy-unmap for MAP chunks (by gb__cfg.growth), realloc for HEAP. */
gb__chunk gb__chunk_grow(gb__chunk c, size_t used, size_t n);

/* Reserves n mappings against the budget; false (nothing reserved) past it. */
bool gb__mapping_reserve(size_t n);
void gb__mapping_unreserve(size_t n);

/* Moves one mapping of `size` bytes that stays mapped from the mapped
 * counters (bytes_mapped, mappings) to the cached ones (bytes_cached,
 * mappings_cached), or back: a block entering or leaving the block cache,
 * or a thread's spare page of region descriptors. */
void gb__chunk_count_cached(size_t size, bool cached);

/* Tries again to unmap the ranges whose munmap failed. */
void gb__chunk_retry_unmaps(void);

/* The fixes' seams, and what of the runtime the fix files may call, are
 * declared in fix/fix.h, included at the end of this file. */

/* --------------------------------------------------------------- regions */

/* A block of a region: a chunk whose first bytes are this header, followed
 * by bump-allocated memory. Blocks of a region form a list, newest first,
 * except that a "solo" block made for one large allocation is linked behind
 * the current block, so the current block's free space is not lost. */
typedef struct gb__block {
    struct gb__block *next;
    gb__chunk chunk;
    bool solo;
} gb__block;

#define GB__BLOCK_HDR ((sizeof(gb__block) + GB__ALIGN - 1) & ~(size_t)(GB__ALIGN - 1))

typedef struct gb__arena gb__arena;

/* The region stack of one context: the thread itself, or one coroutine.
 * top is the innermost live region; each region's parent is the next one
 * out; depth counts them. */
typedef struct gb__rstack {
    gb_region *top;
    size_t depth;
} gb__rstack;

typedef enum gb__rstate {
    GB__FREE = 0,    /* the descriptor slot holds no region */
    GB__LIVE = 1,    /* on its context's stack */
    GB__RETIRED = 2, /* left, kept because a suspended stack pointed into it */
} gb__rstate;

/* Region handles. gb_region * is the descriptor inside the runtime; what
 * the API hands out is not its address but a handle naming its slot and
 * the slot's generation, so that a handle of a left region never names the
 * region that reuses its slot:
 *   handle = generation << 25 | page << 9 | slot
 * where page indexes the descriptor-page directory (handle.c) and slot the
 * descriptor in that page. A slot's generation grows by one each time it is
 * freed and never repeats: a slot whose generation would pass
 * GB__GEN_MAX is never used again, and a directory entry whose page would
 * start past it is never used again (about 5.5e11 regions per slot first).
 * Generation 0 is never issued, so no handle is NULL. Handles are 64 bits. */
#define GB__H_SLOT_BITS 9
#define GB__H_PAGE_BITS 16
#define GB__H_GEN_SHIFT (GB__H_SLOT_BITS + GB__H_PAGE_BITS)
#define GB__GEN_MAX ((UINT64_C(1) << (64 - GB__H_GEN_SHIFT)) - 1)

/* A page of region descriptors (handle.h). */
typedef struct gb__dpage gb__dpage;

/* A region. The descriptor is a slot in a page of descriptors that the
 * thread which entered it takes like a block (gb__chunk_get: counted in
 * bytes_mapped and mappings, or bytes_heap) and gives back when its last
 * slot is free (handle.c). A handle is checked against the slot it names
 * (handle == the slot's handle), through the directory, which is never
 * given back, so a left region's handle is decoded without touching a page
 * that may be gone.
 *   - bump <= end, both inside cur_block, the newest non-solo block (all
 *     three NULL before the first block); everything below bump is taken;
 *   - last is the start of the most recent allocation (NULL if none) and
 *     last_block the block holding it: only that allocation grows in place;
 *   - bytes is the sum of the sizes of blocks (not of arenas);
 *   - arenas lists the container arenas bound to this region, which are
 *     given back when the region is;
 *   - a LIVE region is on exactly one context stack; a RETIRED region is on
 *     its thread's retired list and on no stack. */
struct gb_region {
    char *bump, *end;
    gb__block *cur_block;
    void *last;
    gb__block *last_block;
    gb__block *blocks;
    gb_region *parent;
    gb__rstack *stack;
    size_t next_size;
    size_t nblocks;
    size_t bytes;
    gb__arena *arenas;
    gb__rstate state;
    /* Retirement, owned by pin.c. A RETIRED region is on one of its
     * thread's retired lists (rnext, rprev). witness is a suspended coroutine found
     * pointing into it at its last try, and the region is on that
     * coroutine's witnessed list (wnext, wprev); witness is NULL when the
     * witness has run and frozen again, finished or been freed since it was
     * found, which is exactly when the region needs another try (while the
     * witness runs, it keeps the region: a live frame may hold the pointer). */
    gb_region *rnext, *rprev;
    gb_coro *witness;
    gb_region *wnext, *wprev;
    /* The slot (handle.c); gb_enter clears everything above this line and
     * keeps these across occupants.
     *   - handle is what gb_enter returned for the occupant, and 0 exactly
     *     while the slot is free (state GB__FREE): a handle names a region
     *     iff it equals the handle of the slot it decodes to;
     *   - gen is the occupant's generation, or, while free, the next one's:
     *     every handle ever issued for this slot has a generation below it
     *     unless it is the occupant's;
     *   - where is the handle's low bits (page and slot); page the page the
     *     slot is in; a free slot is on that page's free list (parent). */
    uintptr_t handle;
    uint64_t gen;
    uintptr_t where;
    gb__dpage *page;
};

typedef struct gb__stack_pool gb__stack_pool;

/* A thread's cache of given-back mapped blocks: one list per power-of-two
 * size from map_min (linked through each block's first word), bytes in
 * all at most gb__cfg.cache_bytes. Cached blocks stay resident. */
#define GB__CACHE_CLASSES 24
typedef struct gb__cache {
    void *head[GB__CACHE_CLASSES];
    size_t bytes;
} gb__cache;

/* Per-thread state.
 *   - cur is &main_stack while the thread runs on its own stack, else the
 *     running coroutine's region stack; cur_coro is that coroutine or NULL;
 *   - frozen lists every coroutine of this thread whose stack is frozen
 *     (suspended, or running but waiting on one it resumed), most recently
 *     frozen first: exactly the stacks a pin check must consider;
 *   - a retired region of this thread is on retired_pinned while it has a
 *     witness (npinned counts them) and on retired_dirty while it needs a
 *     try. */
typedef struct gb__thread {
    gb__rstack main_stack;
    gb__rstack *cur;
    gb_coro *cur_coro;
    void *main_sp;
    gb_coro *frozen;
    gb_region *retired_pinned, *retired_dirty;
    size_t npinned;
    unsigned safepoints;
    void *asan_fake_main;
    /* Pages of region descriptors with a free (or never used) slot, the
     * one gb_enter takes from first at the head; dvacant heads this
     * thread's directory entries whose page was given back (index + 1,
     * 0 for none), reused before the shared pool (handle.c). dspare is
     * an empty page kept for the next region, counted as a cached block
     * (bytes_cached, mappings_cached; outside cache.bytes and its bound)
     * until gb_sweep or thread exit (gb__regions_trim). */
    gb__dpage *davail;
    gb__dpage *dspare;
    uint32_t dvacant;
    gb__stack_pool *pool;
    gb__cache cache;
    /* The signal stack the overflow report runs on. A thread that already
     * had a usable one (the application's, a sanitizer's) keeps it and
     * altstack stays NULL; otherwise altstack is ours, installed over
     * altstack_prev, which is put back at thread exit (replacing a stack and
     * only disabling ours would orphan the previous owner's). */
    void *altstack;
    void *altstack_prev_sp;
    size_t altstack_prev_size;
    int altstack_prev_flags;
    bool altstack_checked;
} gb__thread;

/* This thread's state. initial-exec TLS: one load from the thread pointer,
 * which coroutine switches hit twice per round trip; the struct is small
 * enough for the static TLS surplus a dlopen'ed library may use. */
extern _Thread_local gb__thread gb__tls __attribute__((tls_model("initial-exec")));

static inline gb__thread *gb__self(void)
{
    gb__thread *t = &gb__tls;
    if (GB__UNLIKELY(!t->cur))
        t->cur = &t->main_stack;
    return t;
}

/* Allocates n bytes in r, which the caller has checked is LIVE. */
void *gb__region_alloc(gb_region *r, size_t n);

/* Resizes allocation p of r (see gb_realloc); r must be LIVE. */
void *gb__region_realloc(gb_region *r, void *p, size_t old_n, size_t new_n);

/* Gives every block and arena of r back and frees the descriptor. Runs on
 * the thread that entered r (regions are per thread). */
void gb__region_free(gb_region *r);

/* The handle gb_enter returned for r (r is LIVE or RETIRED). */
static inline gb_region *gb__handle_of(const gb_region *r)
{
    return (gb_region *)r->handle;
}

/* At thread exit: leaves the regions still entered on the thread's own
 * stack (saying so on stderr), frees its retired regions and gives its
 * directory entries back (region.c). */
void gb__regions_at_exit(gb__thread *t);

/* Gives back the empty page of region descriptors t keeps (gb_sweep;
 * handle.c). */
void gb__regions_trim(gb__thread *t);

/* Frees every retired region of t, whatever pins it: at thread exit, when
 * the coroutines pinning them can never run again (pin.c). */
void gb__pin_free_all(gb__thread *t);

/* Pops the innermost region of s and leaves it (freed or retired); s must
 * have one. gb_leave, a finished or freed coroutine, and thread exit all
 * leave through here. */
void gb__rstack_pop(gb__rstack *s);

/* Decides what happens to a region that was just popped: freed now, or
 * retired while something pins it (pin.c). */
void gb__region_release(gb_region *r);

/* gb__region_contains, what a pin check asks of each word: fix/fix.h. */

/* ------------------------------------------------------------ coroutines */

/* A coroutine.
 *   - [stack_lo, stack_hi) is the usable stack, with a guard of guard_size
 *     bytes below stack_lo when the stack is mapped;
 *   - sp is the saved stack pointer whenever the coroutine is not the
 *     running one; the words of [sp, stack_hi) are its whole frozen state,
 *     saved registers included (switch/switch.h);
 *   - summary holds the sorted distinct words of [sp, stack_hi) when
 *     summary_valid, built at most once between two runs;
 *   - witnessed lists the retired regions whose witness it is. */
struct gb_coro {
    void *sp;
    char *stack_lo, *stack_hi;
    gb__chunk stack;
    size_t guard_size;
    gb_coro_fn fn;
    void *arg;
    gb_coro_status status;
    gb__rstack rstack;
    gb__thread *thread;
    gb_coro *caller;
    gb_coro *fnext, *fprev;
    bool frozen;
    uintptr_t *summary;
    size_t nsummary, summary_cap;
    bool summary_valid;
    gb_region *witnessed;
    void *asan_fake;
    const void *caller_lo;
    size_t caller_size;
    unsigned vg_id;
    void *tsan_fiber, *tsan_caller; /* under TSan: its fiber, its resumer's */
};

/* Stacks (stack.c): a mapping with a PROT_NONE guard below, counted as two
 * mappings; from malloc, without a guard, past the budget. */
void gb__stack_get(gb_coro *c, size_t size);
void gb__stack_put(gb_coro *c);
void gb__stack_pool_trim(gb__thread *t);
/* Arms the thread-exit hook, which leaves t's regions still entered (see
 * gb__regions_at_exit) and gives its stack pool, block cache and signal
 * stack back when the thread exits. */
void gb__thread_cleanup_at_exit(gb__thread *t);
/* Takes this thread's signal stack off if it is ours, putting back the one
 * it replaced (coro.c; called at thread exit). */
void gb__altstack_release(gb__thread *t);

/* Gives the thread's cached blocks back to the OS (chunk.c). */
void gb__chunk_cache_flush(gb__thread *t);

/* Pinning (pin.c). The bookkeeping of every switch is inline: a resume
 * and yield round trip is a few dozen nanoseconds, calls included. */
void gb__coro_release_witnessed_slow(gb_coro *c);

/* c's stack changed or is gone: what it witnessed needs another try. */
static inline void gb__coro_release_witnessed(gb_coro *c)
{
    if (GB__UNLIKELY(c->witnessed != NULL))
        gb__coro_release_witnessed_slow(c);
}

/* c runs again: its summary is stale. It keeps its witnessed regions: a
 * live frame may still hold the pointer that pinned them; they are tried
 * again once it is frozen again, finishes or is freed. */
static inline void gb__coro_thawed(gb_coro *c)
{
    c->summary_valid = false;
    c->nsummary = 0;
}

/* c's stack stops changing: it joins the head of the frozen list. Its
 * stack changed since it was last frozen, so what it witnessed needs
 * another try against the stack as it is now. */
static inline void gb__coro_frozen_push(gb__thread *t, gb_coro *c)
{
    if (c->frozen)
        return;
    gb__coro_release_witnessed(c);
    c->frozen = true;
    c->fprev = NULL;
    c->fnext = t->frozen;
    if (t->frozen)
        t->frozen->fprev = c;
    t->frozen = c;
}

static inline void gb__coro_frozen_remove(gb__thread *t, gb_coro *c)
{
    if (!c->frozen)
        return;
    c->frozen = false;
    if (c->fprev)
        c->fprev->fnext = c->fnext;
    else
        t->frozen = c->fnext;
    if (c->fnext)
        c->fnext->fprev = c->fprev;
    c->fnext = c->fprev = NULL;
}
/* Tries the retired regions of t that need it (fix/retry.c chooses which). */
void gb__pin_retry(gb__thread *t);
/* The pin check (fix/pin_check.c), the retry fix (fix/retry.c) and what
 * they use of pin.c (gb__pin_try, gb__pin_frozen_words): fix/fix.h. */

/* ---------------------------------------------------------------- arenas */

/* A container's own arena: a chunk holding the container's compacted
 * storage. The descriptor is embedded in the container's struct; chunk.base
 * is NULL until the first compaction. An open arena is bound to the region
 * holding the container's struct (holder non-NULL, on that region's list)
 * and is given back with it; a container gives back a chunk it replaces
 * itself.
 *   - while open, it counts once in gb__stat.arenas_live. */
struct gb__arena {
    gb__chunk chunk;
    gb__arena *next, *prev;
    gb_region *holder;
};

/* Opens a (closed) arena with a chunk of at least n bytes for a container
 * held by region holder. */
void gb__arena_open(gb__arena *a, gb_region *holder, size_t n);
/* Gives the arena's chunk back and unbinds it. */
void gb__arena_close(gb__arena *a);

/* Binding an arena to its holder region and unbinding it are the arena
 * fix (fix/arena_bind.c): fix/fix.h. */

/* Overflow-checked arithmetic that stops the process naming `what`. */
size_t gb__add(size_t a, size_t b, const char *what);
size_t gb__mul(size_t a, size_t b, const char *what);

/* n rounded up to a multiple of `to` (a power of two); the unchecked form
 * is for sizes known to be small. */
static inline size_t gb__round_up(size_t n, size_t to)
{
    return (n + to - 1) & ~(to - 1);
}

static inline size_t gb__round_up_checked(size_t n, size_t to, const char *what)
{
    return gb__add(n, to - 1, what) & ~(to - 1);
}

#include "fix/fix.h"

#endif /* GB_INTERNAL_H */
