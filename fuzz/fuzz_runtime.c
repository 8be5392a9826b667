/* fuzz_runtime.c -- one fuzz target over giveback's public API, for
 * libFuzzer, AFL++ and the corpus replay.
 *
 * The runtime's promises are about sequences: a region left while a
 * suspended coroutine points into it must stay readable until that pointer
 * is gone, and must go back to the OS once it is; a container's arena must
 * go with its region; after everything is left, every counter is zero. A
 * unit test checks the sequences someone thought of. Here the input bytes
 * are the sequence: region operations, allocations, containers, and
 * coroutines whose bodies are driven by the same bytes, so which coroutine
 * runs next and when it yields is fuzzed, not fixed. A shadow model knows,
 * after every operation, what must still be readable and with what
 * contents; the harness reads all of it back and compares, so a region
 * freed too early is a use-after-free that ASan reports (or a wrong byte
 * the model reports), and a byte kept too long shows up in the exact
 * counters at the end of each input.
 *
 * Input layout: choices (operation codes, indices, sizes) are read from the
 * front of the input and payload (the bytes written into allocations and
 * containers) from the back, so a mutation of one byte changes one choice or
 * one payload word and the rest of the program keeps its meaning. Each
 * operation is one byte: the low five bits name it, the high three bits
 * choose a variant. fuzz/README.md lists the codes.
 *
 * What the model promises, and nothing more (it must never ask the runtime
 * for what the API does not promise):
 *   - an allocation in a live region is readable with its contents;
 *   - a left region stays readable while a frozen coroutine (suspended, or
 *     running but waiting on one it resumed; never the running one) holds,
 *     in its stack, a pointer into the region's blocks. The model checks
 *     this at every point where the runtime may free a retired region (a
 *     leave, a finish or free of a coroutine, a sweep, a safepoint), and a
 *     region found unpinned at one such point is dropped for good, even if
 *     the runtime keeps it longer (a conservative scan may see stale words);
 *   - a pointer into a compacted vec's arena pins the arena only, as far as
 *     the model is concerned: reading the rest of that region would make a
 *     poisoned arena binding look like a use-after-free instead of the leak
 *     it is;
 *   - a coroutine reads the pointers it holds right after it resumes, before
 *     any other call into the runtime.
 * The pointers a coroutine holds live in a volatile array in the frame of
 * its body, which is compiled without ASan instrumentation so that the
 * array is on the real stack (never on ASan's fake stack, which the
 * runtime's conservative scan cannot see).
 *
 * Per process: the block source (GB_BLOCKS, or a "map"/"heap" word in the
 * binary's name), the growth path (GB_GROW, or "copy"), where small chunks
 * come from (GB_SMALL, or "slab"/"malloc"), the block cache (GB_CACHE, or
 * "nocache"), the stress setting (GB_STRESS, or "stressN") and whether the
 * runtime starts as shipped (GB_FUZZ_DEFAULTS=1, or "defaults": no gb_init,
 * default sizes) are chosen once, since gb_init runs once.
 *
 * Beyond the thread's own stack and its coroutines, an operation runs a
 * second thread that pins one of its own regions from its own coroutine and
 * exits: what it took must be back once it is joined. The OS table is the
 * one internal the harness touches, as the unit tests do: an input can make
 * the next few mmap, munmap, mremap or mprotect calls fail, which drives the
 * mapping-failure paths (fallback to malloc, deferred unmaps) that the
 * public API cannot reach on its own. Build with -DGB_FUZZ_NO_FAULTS to stay
 * strictly on the public API.
 */
#include "giveback.h"
#ifndef GB_FUZZ_NO_FAULTS
#include "os/os.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define FZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_ASAN 1
#endif
#endif

#if defined(FZ_ASAN)
#define FZ_NO_ASAN __attribute__((no_sanitize("address")))
#else
#define FZ_NO_ASAN
#endif
#define FZ_NOINLINE __attribute__((noinline))

/* The model's own loops (reading back, comparing, looking for overlaps)
 * are not what the fuzzer should be steered by, and their comparisons
 * would cost a trace call each: no coverage instrumentation there. The
 * operations and the pin model keep theirs. */
#if defined(__clang__) && __clang_major__ >= 13
#define FZ_NO_COV __attribute__((no_sanitize("coverage")))
#else
#define FZ_NO_COV
#endif

/* The engines' entry points, and the sanitizers' default options. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

/* Fake stacks (detect_stack_use_after_return) move locals off the real
 * stack, where the runtime's conservative scan cannot see them; the
 * runtime's pinning is only defined for pointers on the real stack. */
const char *__asan_default_options(void)
{
    return "detect_stack_use_after_return=0";
}

/* Unsigned wrap-around is defined (the hashes rely on it); OSS-Fuzz's
 * undefined build still instruments it, and silences it the same way. */
const char *__ubsan_default_options(void)
{
    return "print_stacktrace=1:halt_on_error=1:silence_unsigned_overflow=1";
}

/* ---------------------------------------------------------------- limits */

/* Small enough that an input runs in a few milliseconds under ASan, large
 * enough to reach every block size, solo blocks, container auto-compaction,
 * a full slab and the mapping budget. */
#define MAX_OPS 4096
#define MAX_REGIONS 96
#define MAX_DEPTH 12
#define MAX_ALLOCS 256
#define MAX_BYTES ((size_t)3 << 19)
#define MAX_VECS 8
#define MAX_VEC_ELEMS 24576
#define MAX_MAPS 8
#define MAP_KEYS 4096
#define MAX_MAP_ENTRIES 12288
#define MAX_COROS 16
#define MAX_LIVE_COROS 8
#define HOLD 8

/* The runtime configuration of most processes (the block source, growth
 * path, small-chunk source and stress setting vary per process). A small
 * first block and cap reach chained blocks, mapped blocks and solo blocks
 * with small inputs, and a first block that is not a power of two makes the
 * doubling overshoot the cap; with the map source, a small mapping budget
 * reaches the fallback to malloc. The "defaults" configuration instead
 * lets the runtime initialise itself on first use, as shipped. */
#define FZ_FIRST_BLOCK 1000
#define FZ_BLOCK_CAP (64 * 1024)
#define FZ_MAP_BUDGET 32

/* ------------------------------------------------------------------ input */

/* Choices come from the front, payload from the back; once they meet the
 * input is over and every read returns zero. */
static struct {
    const uint8_t *d;
    size_t lo, hi;
} in;

static bool in_more(void)
{
    return in.lo < in.hi;
}

static unsigned ch8(void)
{
    return in.lo < in.hi ? in.d[in.lo++] : 0;
}

static unsigned ch16(void)
{
    unsigned a = ch8();
    return a | ch8() << 8;
}

static uint64_t pay64(void)
{
    uint64_t v = 0;
    for (int i = 0; i < 8 && in.hi > in.lo; i++)
        v = v << 8 | in.d[--in.hi];
    return v;
}

/* n ? a choice in [0, n) : 0. */
static size_t pick(size_t n)
{
    if (n <= 1)
        return 0;
    return (n <= 256 ? ch8() : ch16()) % n;
}

/* ---------------------------------------------------------------- pattern */

FZ_NO_COV static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Writes n bytes of the pattern of seed into dst and into shadow: each
 * word differs from its neighbours and from the same word of another
 * seed, so a misplaced or stale byte shows. */
FZ_NO_COV static void pattern(unsigned char *dst, unsigned char *shadow, size_t n, uint64_t seed)
{
    uint64_t base = mix64(seed), step = mix64(seed + 1) | 1;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = base + step * i;
        size_t k = n - i < 8 ? n - i : 8;
        memcpy(shadow + i, &w, k);
    }
    memcpy(dst, shadow, n);
}

/* ------------------------------------------------------------------ model */

enum { MAIN = -1 };

typedef enum rstate {
    R_LIVE = 1,     /* on its context's stack */
    R_JUST_LEFT,    /* left by the current operation, not yet judged */
    R_LEFT_FULL,    /* left, and a frozen stack points into its blocks */
    R_LEFT_ARENA,   /* left, and frozen stacks point only into a vec arena */
    R_DROPPED,      /* may be gone: never read again */
} rstate;

typedef struct fz_region {
    gb_region *h; /* compared with gb_current(), never dereferenced */
    int ctx;      /* MAIN or the coroutine whose stack it is on */
    int parent;   /* the next region out on the same stack, or -1 */
    rstate st;
    bool fresh;   /* pinned at the last retry point, not yet read in full */
    bool used;    /* something was allocated in it */
    size_t bytes; /* gb_region_bytes when last seen (it never shrinks) */
} fz_region;

typedef struct fz_alloc {
    unsigned char *p, *shadow;
    size_t n;
    int region;
    bool alive; /* readable as long as its region is */
} fz_alloc;

typedef struct fz_vec {
    gb_vec *h;
    int region;
    size_t elem, len, cap;
    unsigned char *data; /* the model: len * elem bytes */
    bool struct_ok;      /* the struct (in the region's blocks) is readable */
    bool storage_ok;     /* the elements are readable */
    bool arena;          /* compacted: the elements are in its own arena */
    unsigned epoch;      /* counts moves of the storage */
    size_t garbage;
} fz_vec;

typedef struct fz_map {
    gb_map *h;
    int region;
    uint64_t *val;
    uint8_t *has;
    size_t len;
    bool ok;
    bool arena;
    size_t garbage;
} fz_map;

typedef enum slot_kind {
    S_NONE = 0,
    S_ALLOC,       /* into an allocation, at an offset */
    S_VEC,         /* a vec's handle (its struct) */
    S_MAP,         /* a map's handle */
    S_ELEM_REGION, /* an element of a vec whose storage is in its region */
    S_ELEM_ARENA,  /* an element of a compacted vec */
} slot_kind;

typedef struct fz_slot {
    slot_kind kind;
    int target;
    size_t off; /* byte offset (S_ALLOC) or element index (S_ELEM_*) */
    unsigned epoch;
    uintptr_t value; /* what the coroutine's stack must still hold */
} fz_slot;

typedef enum cstate { C_SUSPENDED = 1, C_RUNNING, C_FINISHED, C_FREED } cstate;

typedef struct fz_coro {
    gb_coro *h;
    int idx;
    cstate st;
    int top;
    size_t depth;
    volatile uintptr_t *held; /* the array in its body's frame, once started */
    fz_slot slot[HOLD];
    bool finish;
} fz_coro;

static struct {
    int cur; /* the running context: MAIN or a coroutine */
    int main_top;
    size_t main_depth;
    fz_region region[MAX_REGIONS];
    int nregions;
    fz_alloc alloc[MAX_ALLOCS];
    int nallocs;
    size_t bytes;
    fz_vec vec[MAX_VECS];
    int nvecs;
    size_t vec_elems;
    fz_map map[MAX_MAPS];
    int nmaps;
    size_t map_entries;
    fz_coro coro[MAX_COROS];
    int ncoros;
    unsigned ops;
    unsigned probe;
    bool faults_used;
} S;

/* Candidate indices, filled by the pickers. */
static int cand[MAX_ALLOCS + MAX_REGIONS];

/* ------------------------------------------------------------- reporting */

__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz_runtime: operation %u (%s): ", S.ops,
            S.cur == MAIN ? "thread" : "coroutine");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

/* ------------------------------------------------------- fault injection */

#ifndef GB_FUZZ_NO_FAULTS
/* The next fail_*[k] calls of that OS primitive fail, as they do at the
 * mapping limit or when the address space is exhausted. */
static gb__os_table real_os;
static unsigned fail_map, fail_unmap, fail_remap, fail_protect;

static void *fault_map(size_t n)
{
    if (fail_map) {
        fail_map--;
        errno = ENOMEM;
        return NULL;
    }
    return real_os.map(n);
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

static void faults_install(void)
{
    real_os = gb__os;
    gb__os.map = fault_map;
    gb__os.unmap = fault_unmap;
    if (real_os.remap)
        gb__os.remap = fault_remap;
    gb__os.protect_none = fault_protect;
}

static void faults_off(void)
{
    fail_map = fail_unmap = fail_remap = fail_protect = 0;
}
#else
static void faults_install(void)
{
}

static void faults_off(void)
{
}
#endif

/* ------------------------------------------------------------- contexts */

static int ctx_top(int ctx)
{
    return ctx == MAIN ? S.main_top : S.coro[ctx].top;
}

static size_t ctx_depth(int ctx)
{
    return ctx == MAIN ? S.main_depth : S.coro[ctx].depth;
}

static void ctx_set(int ctx, int top, size_t depth)
{
    if (ctx == MAIN) {
        S.main_top = top;
        S.main_depth = depth;
    } else {
        S.coro[ctx].top = top;
        S.coro[ctx].depth = depth;
    }
}

/* A frozen coroutine's stack is what pin checks scan. */
static bool frozen(const fz_coro *c)
{
    return c->st == C_SUSPENDED || (c->st == C_RUNNING && c->idx != S.cur);
}

/* ------------------------------------------------------------ pin model */

static bool slot_valid(const fz_slot *s)
{
    switch (s->kind) {
    case S_ALLOC:
        return S.alloc[s->target].alive;
    case S_VEC:
        return S.vec[s->target].struct_ok;
    case S_MAP:
        return S.map[s->target].ok;
    case S_ELEM_REGION:
        return S.vec[s->target].struct_ok && S.vec[s->target].epoch == s->epoch;
    case S_ELEM_ARENA:
        return S.vec[s->target].storage_ok && S.vec[s->target].epoch == s->epoch;
    default:
        return false;
    }
}

static int slot_region(const fz_slot *s)
{
    switch (s->kind) {
    case S_ALLOC:
        return S.alloc[s->target].region;
    case S_MAP:
        return S.map[s->target].region;
    case S_VEC:
    case S_ELEM_REGION:
    case S_ELEM_ARENA:
        return S.vec[s->target].region;
    default:
        return -1;
    }
}

/* The coroutine running now (not one waiting on another), or -2. */
static int running_coro(void)
{
    return S.cur != MAIN && S.coro[S.cur].st == C_RUNNING ? S.cur : -2;
}

/* 2: a frozen stack points into region r's blocks; 1: only into a vec
 * arena of r; 0: nothing pins r. With `running`, the running coroutine's
 * stack counts too: the runtime reads its live stack when it tries a
 * retired region again (pin.c gb__pin_try), though not at the leave. */
static int pins_of(int r, bool running)
{
    int found = 0;
    for (int i = 0; i < S.ncoros; i++) {
        const fz_coro *c = &S.coro[i];
        if (!frozen(c) && !(running && i == running_coro()))
            continue;
        for (int k = 0; k < HOLD; k++) {
            const fz_slot *s = &c->slot[k];
            if (!slot_valid(s) || slot_region(s) != r)
                continue;
            if (s->kind != S_ELEM_ARENA)
                return 2;
            found = 1;
        }
    }
    return found;
}

/* Nothing of r's blocks may be read again; a compacted vec's elements stay
 * readable unless the arena goes too. */
static void region_kill(int r, bool arenas_too)
{
    for (int i = 0; i < S.nallocs; i++) {
        fz_alloc *a = &S.alloc[i];
        if (a->region == r && a->alive) {
            a->alive = false;
            free(a->shadow);
            a->shadow = NULL;
        }
    }
    for (int i = 0; i < S.nvecs; i++) {
        fz_vec *v = &S.vec[i];
        if (v->region != r)
            continue;
        v->struct_ok = false;
        if (arenas_too || !v->arena)
            v->storage_ok = false;
    }
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].region == r)
            S.map[i].ok = false;
}

/* The runtime may free a retired region here: judge every left region by
 * the frozen stacks as they are now. */
static void retry_point(void)
{
    for (int r = 0; r < S.nregions; r++) {
        fz_region *R = &S.region[r];
        if (R->st != R_JUST_LEFT && R->st != R_LEFT_FULL && R->st != R_LEFT_ARENA)
            continue;
        /* A region left by this operation is judged by the frozen stacks
         * alone; one retired before, by the running coroutine's stack as
         * well, which the runtime reads when it tries the region again: a
         * coroutine that pinned it may have been resumed and still hold
         * the pointer. (The runtime may keep a region longer, while the
         * coroutine it recorded as the witness runs; the model then no
         * longer reads it.) */
        int p = pins_of(r, R->st != R_JUST_LEFT);
        if (p == 2 && R->st != R_LEFT_ARENA) {
            R->fresh = R->st == R_JUST_LEFT;
            R->st = R_LEFT_FULL;
        } else if (p >= 1) {
            if (R->st != R_LEFT_ARENA)
                region_kill(r, false);
            R->st = R_LEFT_ARENA;
        } else {
            region_kill(r, true);
            R->st = R_DROPPED;
        }
    }
}

/* ---------------------------------------------------------------- checks */

FZ_NO_COV static void check_alloc_full(const fz_alloc *a)
{
    if (a->n && memcmp(a->p, a->shadow, a->n) != 0) {
        size_t i = 0;
        while (a->p[i] == a->shadow[i])
            i++;
        fail("allocation %p (%zu bytes, region %d) differs at byte %zu: 0x%02x, expected 0x%02x",
             (void *)a->p, a->n, a->region, i, a->p[i], a->shadow[i]);
    }
}

FZ_NO_COV static void check_alloc_quick(const fz_alloc *a)
{
    if (a->n == 0)
        return;
    size_t k = a->n < 8 ? a->n : 8;
    size_t mid = (size_t)(mix64(S.probe) % a->n);
    if (mid > a->n - k)
        mid = a->n - k;
    if (memcmp(a->p, a->shadow, k) != 0 || memcmp(a->p + a->n - k, a->shadow + a->n - k, k) != 0 ||
        memcmp(a->p + mid, a->shadow + mid, k) != 0)
        check_alloc_full(a); /* names the first differing byte */
}

FZ_NO_COV static void check_vec_elem(const fz_vec *v, size_t i, const void *at)
{
    if (memcmp(at, v->data + i * v->elem, v->elem) != 0)
        fail("vec %p element %zu of %zu (%zu bytes each) differs from what was pushed",
             (void *)v->h, i, v->len, v->elem);
}

FZ_NO_COV static void check_vec(const fz_vec *v, bool full)
{
    size_t len = gb_vec_len(v->h);
    if (len != v->len)
        fail("vec %p holds %zu elements, expected %zu", (void *)v->h, len, v->len);
    size_t arena = gb_vec_arena_bytes(v->h);
    if ((arena != 0) != v->arena)
        fail("vec %p arena is %zu bytes, but the vec was %scompacted", (void *)v->h, arena,
             v->arena ? "" : "never ");
    if (arena && arena < v->len * v->elem)
        fail("vec %p arena (%zu bytes) is smaller than its %zu elements", (void *)v->h, arena, v->len);
    if (!len)
        return;
    if (full) {
        for (size_t i = 0; i < len; i++)
            check_vec_elem(v, i, gb_vec_at(v->h, i));
    } else {
        size_t i = (size_t)(mix64(S.probe + 1) % len);
        check_vec_elem(v, i, gb_vec_at(v->h, i));
    }
}

static uint64_t map_key(unsigned k)
{
    return (uint64_t)k * 0x9e3779b97f4a7c15ull;
}

FZ_NO_COV static void check_map_key(const fz_map *m, unsigned k)
{
    uint64_t got = 0;
    bool present = gb_map_get(m->h, map_key(k), &got);
    if (present != (bool)m->has[k])
        fail("map %p key #%u is %s, expected %s", (void *)m->h, k, present ? "present" : "absent",
             m->has[k] ? "present" : "absent");
    if (present && got != m->val[k])
        fail("map %p key #%u holds 0x%llx, expected 0x%llx", (void *)m->h, k,
             (unsigned long long)got, (unsigned long long)m->val[k]);
}

FZ_NO_COV static void check_map(const fz_map *m, bool full)
{
    size_t len = gb_map_len(m->h);
    if (len != m->len)
        fail("map %p holds %zu entries, expected %zu", (void *)m->h, len, m->len);
    if ((gb_map_arena_bytes(m->h) != 0) != m->arena)
        fail("map %p arena is %zu bytes, but the map was %scompacted", (void *)m->h,
             gb_map_arena_bytes(m->h), m->arena ? "" : "never ");
    if (full) {
        for (unsigned k = 0; k < MAP_KEYS; k++)
            if (m->has[k] || k % 61 == 0)
                check_map_key(m, k);
    } else {
        check_map_key(m, (unsigned)(mix64(S.probe + 2) % MAP_KEYS));
    }
}

/* Everything readable in region r, in full. */
FZ_NO_COV static void check_region_full(int r)
{
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive && S.alloc[i].region == r)
            check_alloc_full(&S.alloc[i]);
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok && S.vec[i].region == r)
            check_vec(&S.vec[i], true);
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok && S.map[i].region == r)
            check_map(&S.map[i], true);
}

/* Every region just left that a frozen stack points into, in full: the
 * runtime must have kept it. (Regions pinned before are read by the probe
 * after every operation, which is enough to touch freed memory.) */
static void check_pinned_full(void)
{
    for (int r = 0; r < S.nregions; r++) {
        if (S.region[r].st == R_LEFT_FULL && S.region[r].fresh) {
            S.region[r].fresh = false;
            check_region_full(r);
        }
    }
}

/* The pointers coroutine c holds: its stack must still hold each word, and
 * what each points to must be intact. Called right after c resumes. */
FZ_NO_COV static void check_held(const fz_coro *c)
{
    for (int k = 0; k < HOLD; k++) {
        const fz_slot *s = &c->slot[k];
        if (c->held[k] != s->value)
            fail("coroutine %d: its stack slot %d holds 0x%llx after a switch, expected 0x%llx",
                 c->idx, k, (unsigned long long)c->held[k], (unsigned long long)s->value);
        if (!slot_valid(s))
            continue;
        switch (s->kind) {
        case S_ALLOC:
            check_alloc_full(&S.alloc[s->target]);
            break;
        case S_VEC:
            check_vec(&S.vec[s->target], true);
            break;
        case S_MAP:
            check_map(&S.map[s->target], true);
            break;
        case S_ELEM_REGION:
        case S_ELEM_ARENA: {
            const fz_vec *v = &S.vec[s->target];
            /* A held element pointer is read through the pointer itself:
             * the vec's struct may be gone (arena-only pin). */
            if (s->off < v->len)
                check_vec_elem(v, s->off, (const void *)s->value);
            break;
        }
        default:
            break;
        }
    }
}

static gb_stats stats(void)
{
    gb_stats st;
    gb_stats_get(&st);
    return st;
}

/* After every operation: a probe of everything readable, the running
 * context's region stack, every coroutine's status, and the counters the
 * model knows exactly or bounds. */
FZ_NO_COV static void check_after_op(void)
{
    S.probe++;
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive)
            check_alloc_quick(&S.alloc[i]);
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok)
            check_vec(&S.vec[i], false);
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok)
            check_map(&S.map[i], false);

    int top = ctx_top(S.cur);
    gb_region *want = top >= 0 ? S.region[top].h : NULL;
    if (gb_current() != want)
        fail("gb_current() is %p, expected %p", (void *)gb_current(), (void *)want);
    if (gb_depth() != ctx_depth(S.cur))
        fail("gb_depth() is %zu, expected %zu", gb_depth(), ctx_depth(S.cur));
    gb_coro *running = S.cur == MAIN ? NULL : S.coro[S.cur].h;
    if (gb_coro_current() != running)
        fail("gb_coro_current() is %p, expected %p", (void *)gb_coro_current(), (void *)running);

    size_t live = 0, coros = 0, pinned = 0, arenas = 0;
    for (int r = 0; r < S.nregions; r++) {
        fz_region *R = &S.region[r];
        live += R->st == R_LIVE;
        pinned += R->st == R_LEFT_FULL;
        if (R->st != R_LIVE)
            continue;
        size_t bytes = gb_region_bytes(R->h);
        if (bytes < R->bytes || (R->used && !bytes))
            fail("region %d holds %zu bytes, before %zu%s", r, bytes, R->bytes,
                 R->used ? ", and something was allocated in it" : "");
        R->bytes = bytes;
    }
    for (int i = 0; i < S.ncoros; i++) {
        const fz_coro *c = &S.coro[i];
        if (c->st == C_FREED)
            continue;
        coros++;
        if (gb_coro_status_of(c->h) != (gb_coro_status)c->st)
            fail("coroutine %d has status %d, expected %d", i, (int)gb_coro_status_of(c->h), (int)c->st);
    }
    for (int i = 0; i < S.nvecs; i++)
        arenas += S.vec[i].arena && S.region[S.vec[i].region].st == R_LIVE;
    for (int i = 0; i < S.nmaps; i++)
        arenas += S.map[i].arena && S.region[S.map[i].region].st == R_LIVE;

    gb_stats st = stats();
    if (st.regions_live != live)
        fail("regions_live is %zu, the model has %zu live regions", st.regions_live, live);
    if (st.coros_live != coros)
        fail("coros_live is %zu, the model has %zu coroutines", st.coros_live, coros);
    if (st.regions_retired < pinned)
        fail("regions_retired is %zu, but %zu left regions are pinned by frozen stacks",
             st.regions_retired, pinned);
    if (st.arenas_live < arenas)
        fail("arenas_live is %zu, but %zu compacted containers are in live regions", st.arenas_live,
             arenas);
    if (st.mappings + st.mappings_cached > st.map_budget)
        fail("mappings (%zu, and %zu cached) past the budget (%zu)", st.mappings, st.mappings_cached,
             st.map_budget);
    if (!S.faults_used && st.unmaps_pending)
        fail("unmaps_pending is %zu, but no munmap was made to fail", st.unmaps_pending);
}

/* ------------------------------------------------------------ allocation */

/* A size: mostly small, sometimes a chained block's worth, rarely more
 * than the block cap (a solo block); within the input's byte budget. Every
 * byte allocated is written and read back, and fresh pages cost a fault
 * each, so large sizes are what an execution's time goes to. */
static size_t take_size(void)
{
    unsigned b = ch8();
    size_t n;
    if (b < 128)
        n = b;
    else if (b < 224)
        n = 128 + ch16() % 4096;
    else if (b < 248)
        n = 4096 + ch16() % (60 * 1024);
    else
        n = FZ_BLOCK_CAP + (ch8() % 192) * 1024 + ch8();
    if (S.bytes + n > MAX_BYTES)
        n %= 64;
    S.bytes += n;
    return n;
}

/* Records allocation p of n bytes in region r, checks it is aligned and
 * overlaps nothing readable, and fills it with the pattern of seed (or
 * checks it is zero and keeps it, for calloc). */
FZ_NO_COV static int add_alloc(int r, void *p, size_t n, uint64_t seed, bool zeroed)
{
    if (!p)
        fail("allocation of %zu bytes returned NULL", n);
    if ((uintptr_t)p % 16)
        fail("allocation %p of %zu bytes is not 16-byte aligned", p, n);
    unsigned char *c = p;
    size_t span = n ? n : 1;
    for (int i = 0; i < S.nallocs; i++) {
        const fz_alloc *a = &S.alloc[i];
        size_t aspan = a->n ? a->n : 1;
        if (a->alive && c < a->p + aspan && a->p < c + span)
            fail("allocation %p (%zu bytes) overlaps allocation %p (%zu bytes)", p, n, (void *)a->p, a->n);
    }
    S.region[r].used = true;
    fz_alloc *a = &S.alloc[S.nallocs];
    a->p = c;
    a->n = n;
    a->region = r;
    a->alive = true;
    a->shadow = malloc(span);
    if (!a->shadow)
        fail("out of memory for the model");
    if (zeroed) {
        for (size_t i = 0; i < n; i++)
            if (c[i])
                fail("gb_calloc memory %p is not zero at byte %zu of %zu", p, i, n);
        memset(a->shadow, 0, span);
    } else {
        pattern(c, a->shadow, n, seed);
    }
    return S.nallocs++;
}

static int region_at_depth(int ctx, size_t d)
{
    int r = ctx_top(ctx);
    while (d-- && r >= 0)
        r = S.region[r].parent;
    return r;
}

/* ------------------------------------------------------------ operations */

static void op_enter(void)
{
    if (ctx_depth(S.cur) >= MAX_DEPTH || S.nregions >= MAX_REGIONS)
        return;
    gb_region *h = gb_enter();
    if (!h)
        fail("gb_enter returned NULL");
    fz_region *R = &S.region[S.nregions];
    R->h = h;
    R->ctx = S.cur;
    R->parent = ctx_top(S.cur);
    R->st = R_LIVE;
    ctx_set(S.cur, S.nregions++, ctx_depth(S.cur) + 1);
}

/* Marks the regions of a finished or freed coroutine as left, innermost
 * first, as the runtime leaves them. */
static void left_all(int ctx)
{
    for (int r = ctx_top(ctx); r >= 0; r = S.region[r].parent)
        S.region[r].st = R_JUST_LEFT;
    ctx_set(ctx, -1, 0);
}

static void op_leave(void)
{
    int top = ctx_top(S.cur);
    if (top < 0)
        return;
    check_region_full(top);
    gb_leave(S.region[top].h);
    S.region[top].st = R_JUST_LEFT;
    ctx_set(S.cur, S.region[top].parent, ctx_depth(S.cur) - 1);
    retry_point();
    check_pinned_full();
}

static void op_alloc(unsigned v)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nallocs >= MAX_ALLOCS)
        return;
    size_t n = take_size();
    void *p = v >= 6 ? gb_realloc(NULL, 0, n) : gb_alloc(n);
    add_alloc(top, p, n, pay64(), false);
}

static void op_alloc_in(void)
{
    size_t depth = ctx_depth(S.cur);
    if (!depth || S.nallocs >= MAX_ALLOCS)
        return;
    int r = region_at_depth(S.cur, pick(depth));
    size_t n = take_size();
    add_alloc(r, gb_alloc_in(S.region[r].h, n), n, pay64(), false);
}

static void op_calloc(void)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nallocs >= MAX_ALLOCS)
        return;
    size_t count = ch8() % 17;
    size_t size = take_size() / 8;
    add_alloc(top, gb_calloc(count, size), count * size, 0, true);
}

static void op_realloc(unsigned v)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nallocs >= MAX_ALLOCS)
        return;
    int n = 0;
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive && S.alloc[i].region == top)
            cand[n++] = i;
    if (!n)
        return;
    int i = cand[pick((size_t)n)];
    fz_alloc *a = &S.alloc[i];
    size_t old_n = a->n, new_n;
    if (v < 3)
        new_n = take_size();
    else if (v < 5)
        new_n = old_n + ch8(); /* grows in place when it is the last one */
    else if (v < 6)
        new_n = old_n / 2;
    else
        new_n = old_n + FZ_BLOCK_CAP / 2 + (size_t)ch8() * 1024; /* into or within a solo block */
    if (new_n > old_n && S.bytes + (new_n - old_n) > MAX_BYTES)
        new_n = old_n;
    S.bytes += new_n > old_n ? new_n - old_n : 0;
    unsigned char *q = gb_realloc(a->p, old_n, new_n);
    size_t keep = old_n < new_n ? old_n : new_n;
    if (!q || memcmp(q, a->shadow, keep) != 0)
        fail("gb_realloc(%p, %zu, %zu) = %p lost the first %zu bytes", (void *)a->p, old_n, new_n,
             (void *)q, keep);
    /* The old record ends here (a solo block may have moved); the new one
     * keeps the bytes and gets a fresh pattern past them. */
    unsigned char *old_shadow = a->shadow;
    a->alive = false;
    a->shadow = NULL;
    int j = add_alloc(top, q, new_n, pay64(), false);
    fz_alloc *b = &S.alloc[j];
    memcpy(b->shadow, old_shadow, keep);
    memcpy(b->p, old_shadow, keep);
    free(old_shadow);
}

static void op_write(void)
{
    int n = 0;
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive && S.region[S.alloc[i].region].st == R_LIVE && S.alloc[i].n)
            cand[n++] = i;
    if (!n)
        return;
    fz_alloc *a = &S.alloc[cand[pick((size_t)n)]];
    size_t off = ch16() % a->n;
    size_t len = ch16() % (a->n - off) + 1;
    pattern(a->p + off, a->shadow + off, len, pay64());
}

/* A vec or map whose handle is readable, chosen by the input: its index if
 * a vec, MAX_VECS + its index if a map; -1 if there is none. */
static int pick_container(void)
{
    int n = 0;
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok)
            cand[n++] = i;
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok)
            cand[n++] = MAX_VECS + i;
    return n ? cand[pick((size_t)n)] : -1;
}

static void op_check(unsigned v)
{
    if (v < 4) {
        int n = 0;
        for (int i = 0; i < S.nallocs; i++)
            if (S.alloc[i].alive)
                cand[n++] = i;
        if (n)
            check_alloc_full(&S.alloc[cand[pick((size_t)n)]]);
        return;
    }
    int c = pick_container();
    if (c < 0)
        return;
    if (c < MAX_VECS)
        check_vec(&S.vec[c], true);
    else
        check_map(&S.map[c - MAX_VECS], true);
}

/* ------------------------------------------------------------- containers */

static const size_t elem_sizes[8] = {8, 1, 16, 24, 3, 40, 64, 100};

static void op_vec_new(unsigned v)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nvecs >= MAX_VECS)
        return;
    fz_vec *m = &S.vec[S.nvecs];
    memset(m, 0, sizeof *m);
    m->elem = elem_sizes[v];
    m->h = gb_vec_new(m->elem);
    m->region = top;
    S.region[top].used = true;
    m->struct_ok = m->storage_ok = true;
    S.nvecs++;
    check_vec(m, true);
    if (gb_vec_garbage_bytes(m->h) != 0)
        fail("a new vec has %zu bytes of garbage", gb_vec_garbage_bytes(m->h));
}

/* A container may change while its region is live, from any context. */
static int pick_vec(bool nonempty)
{
    int n = 0;
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok && S.region[S.vec[i].region].st == R_LIVE && (!nonempty || S.vec[i].len))
            cand[n++] = i;
    return n ? cand[pick((size_t)n)] : -1;
}

static int pick_map(void)
{
    int n = 0;
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok && S.region[S.map[i].region].st == R_LIVE)
            cand[n++] = i;
    return n ? cand[pick((size_t)n)] : -1;
}

/* A container's garbage (bytes its storage left behind in the region)
 * never goes down, and once compacted it keeps its arena: what a vec or a
 * map reports of itself is checked against what it reported before. */
static void container_observe(const char *what, const void *h, size_t garbage, bool arena,
                              size_t *seen_garbage, bool *seen_arena)
{
    if (garbage < *seen_garbage)
        fail("%s %p garbage went down from %zu to %zu bytes", what, h, *seen_garbage, garbage);
    *seen_garbage = garbage;
    if (*seen_arena && !arena)
        fail("%s %p lost its arena", what, h);
    *seen_arena = arena;
}

static void vec_observe(fz_vec *m)
{
    container_observe("vec", (const void *)m->h, gb_vec_garbage_bytes(m->h),
                      gb_vec_arena_bytes(m->h) != 0, &m->garbage, &m->arena);
}

static void op_vec_push(unsigned v)
{
    int i = pick_vec(false);
    if (i < 0)
        return;
    fz_vec *m = &S.vec[i];
    size_t count = v < 4 ? 1 + v : v < 6 ? 1 + ch8() % 64 : 64 + ch8() * 4;
    if (S.vec_elems + count > MAX_VEC_ELEMS)
        count = S.vec_elems < MAX_VEC_ELEMS ? MAX_VEC_ELEMS - S.vec_elems : 0;
    S.vec_elems += count;
    uint64_t seed = pay64();
    unsigned char e[104];
    for (size_t j = 0; j < count; j++) {
        unsigned char junk[104];
        pattern(e, junk, m->elem, seed + j);
        void *before = m->len ? gb_vec_at(m->h, 0) : NULL;
        void *slot = gb_vec_push(m->h, e);
        if (memcmp(slot, e, m->elem) != 0)
            fail("gb_vec_push stored something else than the element");
        if (gb_vec_at(m->h, m->len) != slot)
            fail("gb_vec_push returned %p, but element %zu is at %p", slot, m->len,
                 gb_vec_at(m->h, m->len));
        if (m->len == m->cap) {
            size_t cap = m->cap ? m->cap * 2 : 64;
            unsigned char *d = realloc(m->data, cap * m->elem);
            if (!d)
                fail("out of memory for the model");
            m->data = d;
            m->cap = cap;
        }
        memcpy(m->data + m->len * m->elem, e, m->elem);
        m->len++;
        if (before && gb_vec_at(m->h, 0) != before)
            m->epoch++;
    }
    vec_observe(m);
}

static void op_vec_pop(unsigned v)
{
    int i = pick_vec(true);
    if (i < 0)
        return;
    fz_vec *m = &S.vec[i];
    unsigned char out[104];
    gb_vec_pop(m->h, v < 4 ? out : NULL);
    m->len--;
    if (v < 4 && memcmp(out, m->data + m->len * m->elem, m->elem) != 0)
        fail("gb_vec_pop gave back something else than the last element");
}

static void op_vec_compact(void)
{
    int i = pick_vec(false);
    if (i < 0)
        return;
    fz_vec *m = &S.vec[i];
    gb_vec_compact(m->h);
    m->epoch++;
    if (!gb_vec_arena_bytes(m->h))
        fail("vec %p has no arena after gb_vec_compact", (void *)m->h);
    vec_observe(m);
    check_vec(m, true);
}

static void op_map_new(void)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nmaps >= MAX_MAPS)
        return;
    fz_map *m = &S.map[S.nmaps];
    memset(m, 0, sizeof *m);
    m->val = calloc(MAP_KEYS, sizeof *m->val);
    m->has = calloc(MAP_KEYS, 1);
    if (!m->val || !m->has)
        fail("out of memory for the model");
    m->h = gb_map_new();
    m->region = top;
    S.region[top].used = true;
    m->ok = true;
    S.nmaps++;
    check_map(m, false);
}

static void map_observe(fz_map *m)
{
    container_observe("map", (const void *)m->h, gb_map_garbage_bytes(m->h),
                      gb_map_arena_bytes(m->h) != 0, &m->garbage, &m->arena);
}

static void op_map_put(unsigned v)
{
    int i = pick_map();
    if (i < 0)
        return;
    fz_map *m = &S.map[i];
    size_t count = v < 4 ? 1 + v : v < 6 ? 1 + ch8() % 64 : 256 + ch8() * 8;
    unsigned base = ch16() % MAP_KEYS, stride = v < 6 ? 1 + ch8() % 16 : 1;
    uint64_t seed = pay64();
    for (size_t j = 0; j < count; j++) {
        unsigned k = (unsigned)((base + j * stride) % MAP_KEYS);
        if (!m->has[k] && S.map_entries >= MAX_MAP_ENTRIES)
            break;
        uint64_t val = mix64(seed + j);
        gb_map_put(m->h, map_key(k), val);
        if (!m->has[k]) {
            m->has[k] = 1;
            m->len++;
            S.map_entries++;
        }
        m->val[k] = val;
    }
    map_observe(m);
}

static void op_map_del(unsigned v)
{
    int i = pick_map();
    if (i < 0)
        return;
    fz_map *m = &S.map[i];
    size_t count = v < 6 ? 1 : 1 + ch8() % 64;
    unsigned base = ch16() % MAP_KEYS;
    for (size_t j = 0; j < count; j++) {
        unsigned k = (unsigned)((base + j) % MAP_KEYS);
        bool gone = gb_map_del(m->h, map_key(k));
        if (gone != (bool)m->has[k])
            fail("gb_map_del of key #%u returned %d, expected %d", k, gone, m->has[k]);
        if (gone) {
            m->has[k] = 0;
            m->len--;
        }
    }
}

static void op_map_get(void)
{
    int i = pick_map();
    if (i < 0)
        return;
    check_map_key(&S.map[i], ch16() % MAP_KEYS);
}

static void op_map_compact(void)
{
    int i = pick_map();
    if (i < 0)
        return;
    fz_map *m = &S.map[i];
    gb_map_compact(m->h);
    if (!gb_map_arena_bytes(m->h))
        fail("map %p has no arena after gb_map_compact", (void *)m->h);
    map_observe(m);
    check_map(m, true);
}

/* ------------------------------------------------------------ coroutines */

static void coro_body(void *arg);

static void op_coro_new(unsigned v)
{
    int live = 0;
    for (int i = 0; i < S.ncoros; i++)
        live += S.coro[i].st != C_FREED;
    if (live >= MAX_LIVE_COROS || S.ncoros >= MAX_COROS)
        return;
    /* The default size comes from the pool; the others are mapped (or
     * malloc'd past the budget) each time, and 1 rounds up to the least. */
    static const size_t sizes[8] = {0, 0, 0, 0, 64 * 1024, 64 * 1024, 1, 100 * 1000};
    fz_coro *c = &S.coro[S.ncoros];
    memset(c, 0, sizeof *c);
    c->idx = S.ncoros++;
    c->st = C_SUSPENDED;
    c->top = -1;
    c->h = gb_coro_new(coro_body, c, sizes[v]);
    if (!c->h)
        fail("gb_coro_new returned NULL");
}

static void op_resume(void)
{
    int n = 0;
    for (int i = 0; i < S.ncoros; i++)
        if (S.coro[i].st == C_SUSPENDED)
            cand[n++] = i;
    if (!n)
        return;
    fz_coro *c = &S.coro[cand[pick((size_t)n)]];
    int prev = S.cur;
    c->st = C_RUNNING;
    S.cur = c->idx;
    bool yielded = gb_coro_resume(c->h);
    /* Back, the runtime has tried retired regions before the resumer
     * thaws, with c and the resumer both frozen: judge them so too, with
     * the model's running context set back only afterwards. */
    if (yielded) {
        if (c->st != C_SUSPENDED)
            fail("coroutine %d: gb_coro_resume returned true but it did not yield", c->idx);
        retry_point();
        S.cur = prev;
        check_pinned_full();
        return;
    }
    if (c->st != C_RUNNING || !c->finish)
        fail("coroutine %d: gb_coro_resume returned false but its body did not return", c->idx);
    c->st = C_FINISHED;
    left_all(c->idx);
    retry_point();
    S.cur = prev;
    check_pinned_full();
}

static void coro_free(fz_coro *c)
{
    gb_coro_free(c->h);
    c->st = C_FREED;
    c->held = NULL;
    left_all(c->idx);
    retry_point();
    check_pinned_full();
}

static void op_coro_free(void)
{
    int n = 0;
    for (int i = 0; i < S.ncoros; i++)
        if (S.coro[i].st == C_SUSPENDED || S.coro[i].st == C_FINISHED)
            cand[n++] = i;
    if (n)
        coro_free(&S.coro[cand[pick((size_t)n)]]);
}

static void op_yield(void)
{
    fz_coro *c = &S.coro[S.cur];
    c->st = C_SUSPENDED;
    gb_coro_yield();
    /* Resumed: op_resume has made it the running context again. */
    if (S.cur != c->idx || c->st != C_RUNNING)
        fail("coroutine %d resumed, but the model runs %d", c->idx, S.cur);
    check_held(c);
}

static void op_capture(unsigned v)
{
    fz_coro *c = &S.coro[S.cur];
    int k = (int)pick(HOLD);
    fz_slot s = {0};
    int n = 0;
    if (v < 4) {
        for (int i = 0; i < S.nallocs; i++)
            if (S.alloc[i].alive)
                cand[n++] = i;
        if (!n)
            return;
        fz_alloc *a = &S.alloc[cand[pick((size_t)n)]];
        s.kind = S_ALLOC;
        s.target = (int)(a - S.alloc);
        s.off = a->n ? ch16() % a->n : 0;
        s.value = (uintptr_t)(a->p + s.off);
    } else if (v < 6) {
        int t = pick_container();
        if (t < 0)
            return;
        s.kind = t < MAX_VECS ? S_VEC : S_MAP;
        s.target = t < MAX_VECS ? t : t - MAX_VECS;
        s.value = t < MAX_VECS ? (uintptr_t)S.vec[t].h : (uintptr_t)S.map[s.target].h;
    } else {
        for (int i = 0; i < S.nvecs; i++)
            if (S.vec[i].struct_ok && S.vec[i].len)
                cand[n++] = i;
        if (!n)
            return;
        fz_vec *m = &S.vec[cand[pick((size_t)n)]];
        s.kind = m->arena ? S_ELEM_ARENA : S_ELEM_REGION;
        s.target = (int)(m - S.vec);
        s.off = pick(m->len);
        s.epoch = m->epoch;
        s.value = (uintptr_t)gb_vec_at(m->h, s.off);
    }
    c->held[k] = s.value;
    c->slot[k] = s;
}

static void op_drop(void)
{
    fz_coro *c = &S.coro[S.cur];
    int k = (int)pick(HOLD);
    c->held[k] = 0;
    memset(&c->slot[k], 0, sizeof c->slot[k]);
}

/* ----------------------------------------------------------- the others */

static unsigned stress; /* this process's GB_STRESS, for the safepoint sync */

static void op_sweep(void)
{
    gb_sweep();
    retry_point();
    check_pinned_full();
    /* With no coroutine frozen or running, nothing can pin anything: a
     * sweep must have freed every retired region. */
    if (S.cur == MAIN) {
        bool any = false;
        for (int i = 0; i < S.ncoros; i++)
            any |= S.coro[i].st == C_SUSPENDED;
        gb_stats st = stats();
        if (!any && (st.regions_retired || st.bytes_retired))
            fail("a sweep with no suspended coroutine left %zu regions (%zu bytes) retired",
                 st.regions_retired, st.bytes_retired);
    }
}

static void op_safepoint(unsigned v)
{
    for (unsigned i = 0; i <= v; i++)
        gb_safepoint();
    retry_point();
    check_pinned_full();
}

static void op_fault(unsigned v)
{
#ifndef GB_FUZZ_NO_FAULTS
    unsigned count = 1 + ch8() % 4;
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

/* Another thread, on its own region stack, leaves a region that a
 * coroutine of its own still points into, resumes the coroutine (which
 * reads it back), and exits: whatever it took must be back once it has
 * been joined (its stack pool and signal stack go at thread exit). */
typedef struct fz_thread {
    unsigned char *p;
    size_t n;
    unsigned char fill;
    bool ok;
} fz_thread;

FZ_NO_ASAN static void thread_coro(void *arg)
{
    fz_thread *t = arg;
    volatile uintptr_t held = (uintptr_t)t->p;
    t->p = NULL;
    gb_coro_yield();
    const unsigned char *p = (const unsigned char *)held;
    for (size_t i = 0; i < t->n; i++)
        t->ok &= p[i] == t->fill;
}

static void *thread_main(void *arg)
{
    fz_thread *t = arg;
    gb_region *r = gb_enter();
    t->p = gb_alloc(t->n);
    memset(t->p, t->fill, t->n);
    gb_coro *c = gb_coro_new(thread_coro, t, 0);
    gb_coro_resume(c);
    gb_leave(r); /* retired: the coroutine points into it */
    t->ok &= !gb_coro_resume(c);
    gb_coro_free(c);
    return NULL;
}

static void op_thread(void)
{
    fz_thread t = {.n = 1 + ch16() % (48 * 1024), .fill = (unsigned char)ch8(), .ok = true};
    gb_stats before = stats();
    pthread_t th;
    if (pthread_create(&th, NULL, thread_main, &t) != 0)
        return; /* no thread to be had: nothing to check */
    pthread_join(th, NULL);
    if (!t.ok)
        fail("a coroutine on another thread read back something else than it wrote");
    gb_stats after = stats();
    if (S.faults_used)
        return; /* its unmaps may have been made to fail and deferred */
    if (after.regions_live != before.regions_live || after.coros_live != before.coros_live ||
        after.stacks_pooled != before.stacks_pooled || after.bytes_meta != before.bytes_meta ||
        after.bytes_mapped != before.bytes_mapped || after.bytes_heap != before.bytes_heap ||
        after.mappings != before.mappings || after.bytes_small != before.bytes_small ||
        after.blocks_live != before.blocks_live || after.regions_retired != before.regions_retired)
        fail("a thread that exited left something behind: bytes_mapped %zu -> %zu, bytes_heap %zu "
             "-> %zu, bytes_meta %zu -> %zu, mappings %zu -> %zu, stacks_pooled %zu -> %zu",
             before.bytes_mapped, after.bytes_mapped, before.bytes_heap, after.bytes_heap,
             before.bytes_meta, after.bytes_meta, before.mappings, after.mappings,
             before.stacks_pooled, after.stacks_pooled);
}

/* The resident size is read from /proc (smaps_rollup walks every mapping,
 * and ASan has many: half a millisecond), so once per process. Variant 6
 * runs another thread. The rest checks what the counters say about each
 * other. */
static void op_stats(unsigned v)
{
    if (v == 6) {
        op_thread();
        return;
    }
    static bool resident_read;
    if (v == 7 && !resident_read) {
        resident_read = true;
        gb_resident res;
        if (gb_resident_get(&res) != 0 || res.rss == 0)
            fail("gb_resident_get could not read the resident size");
        return;
    }
    gb_stats st = stats();
    if (st.bytes_retired && !st.regions_retired)
        fail("bytes_retired is %zu with no retired region", st.bytes_retired);
    if (st.slabs > st.mappings)
        fail("%zu slabs, but only %zu mappings", st.slabs, st.mappings);
    if (st.stacks_pooled > 8)
        fail("%zu stacks pooled, more than the pool holds", st.stacks_pooled);
}

/* ------------------------------------------------------------- the loop */

enum {
    OP_ENTER, OP_LEAVE, OP_ALLOC, OP_ALLOC_IN, OP_CALLOC, OP_REALLOC, OP_WRITE, OP_CHECK,
    OP_VEC_NEW, OP_VEC_PUSH, OP_VEC_POP, OP_VEC_COMPACT,
    OP_MAP_NEW, OP_MAP_PUT, OP_MAP_DEL, OP_MAP_GET, OP_MAP_COMPACT,
    OP_STATS, OP_CORO_NEW, OP_RESUME, OP_CORO_FREE, OP_SWEEP, OP_SAFEPOINT, OP_FAULT,
    OP_ALLOC2,
    /* In a coroutine; on the thread's own stack they mean the op after the
     * arrow. */
    OP_YIELD,    /* -> OP_RESUME */
    OP_CAPTURE,  /* -> OP_ALLOC */
    OP_DROP,     /* -> OP_LEAVE */
    OP_FINISH,   /* -> OP_ENTER */
    OP_YIELD2,   /* -> OP_CORO_NEW */
    OP_CAPTURE2, /* -> OP_RESUME */
    OP_LEAVE2,
};

static const unsigned char on_thread[32] = {
    [OP_YIELD] = OP_RESUME,    [OP_CAPTURE] = OP_ALLOC,     [OP_DROP] = OP_LEAVE,
    [OP_FINISH] = OP_ENTER,    [OP_YIELD2] = OP_CORO_NEW,   [OP_CAPTURE2] = OP_RESUME,
};

/* Runs operations until the input ends, the operation bound is reached,
 * or (in a coroutine) its body is told to return. */
static FZ_NOINLINE void run(void)
{
    while (in_more() && S.ops < MAX_OPS) {
        unsigned b = ch8(), op = b & 31, v = b >> 5;
        S.ops++;
        if (S.cur == MAIN && op >= OP_YIELD && op <= OP_CAPTURE2)
            op = on_thread[op];
        switch (op) {
        case OP_ENTER: op_enter(); break;
        case OP_LEAVE: case OP_LEAVE2: op_leave(); break;
        case OP_ALLOC: case OP_ALLOC2: op_alloc(v); break;
        case OP_ALLOC_IN: op_alloc_in(); break;
        case OP_CALLOC: op_calloc(); break;
        case OP_REALLOC: op_realloc(v); break;
        case OP_WRITE: op_write(); break;
        case OP_CHECK: op_check(v); break;
        case OP_VEC_NEW: op_vec_new(v); break;
        case OP_VEC_PUSH: op_vec_push(v); break;
        case OP_VEC_POP: op_vec_pop(v); break;
        case OP_VEC_COMPACT: op_vec_compact(); break;
        case OP_MAP_NEW: op_map_new(); break;
        case OP_MAP_PUT: op_map_put(v); break;
        case OP_MAP_DEL: op_map_del(v); break;
        case OP_MAP_GET: op_map_get(); break;
        case OP_MAP_COMPACT: op_map_compact(); break;
        case OP_STATS: op_stats(v); break;
        case OP_CORO_NEW: op_coro_new(v); break;
        case OP_RESUME: op_resume(); break;
        case OP_CORO_FREE: op_coro_free(); break;
        case OP_SWEEP: op_sweep(); break;
        case OP_SAFEPOINT: op_safepoint(v); break;
        case OP_FAULT: op_fault(v); break;
        case OP_YIELD: case OP_YIELD2: op_yield(); break;
        case OP_CAPTURE: case OP_CAPTURE2: op_capture(v); break;
        case OP_DROP: op_drop(); break;
        case OP_FINISH:
            S.coro[S.cur].finish = true;
            return;
        default: break;
        }
        check_after_op();
    }
    if (S.cur != MAIN)
        S.coro[S.cur].finish = true;
}

/* A coroutine's body: the array of pointers it holds lives in this frame,
 * which ASan does not instrument, so it is on the real stack that the
 * runtime scans; the operations themselves run in run(), instrumented. */
FZ_NO_ASAN static void coro_body(void *arg)
{
    fz_coro *c = arg;
    volatile uintptr_t held[HOLD];
    for (int k = 0; k < HOLD; k++)
        held[k] = 0;
    c->held = held;
    run();
    c->held = NULL;
}

/* ------------------------------------------------------- process set-up */

static bool inited;

/* Words of the binary's name, between underscores
 * ("fuzz_runtime_map_copy_malloc_stress3"), choose what the environment
 * (GB_BLOCKS, GB_GROW, GB_SMALL, GB_CACHE, GB_STRESS, GB_FUZZ_DEFAULTS) does not:
 * ClusterFuzzLite runs each binary as it is, with no environment of ours. */
static bool name_has(const char *name, const char *word, unsigned *num)
{
    size_t w = strlen(word);
    for (const char *s = name; (s = strstr(s, word)) != NULL; s += w) {
        bool start = s == name || s[-1] == '_';
        const char *e = s + w;
        if (num) {
            if (!start || *e < '0' || *e > '9')
                continue;
            *num = (unsigned)strtoul(e, NULL, 10);
            return true;
        }
        if (start && (*e == 0 || *e == '_'))
            return true;
    }
    return false;
}

static void init_process(const char *argv0)
{
    if (inited)
        return;
    inited = true;
    const char *name = "";
    if (argv0) {
        const char *slash = strrchr(argv0, '/');
        name = slash ? slash + 1 : argv0;
    }
    gb_options o;
    gb_options_init(&o);
    if (!getenv("GB_BLOCKS"))
        o.blocks = name_has(name, "heap", NULL) ? GB_BLOCKS_HEAP
                   : name_has(name, "map", NULL) ? GB_BLOCKS_MAP
                                                 : GB_BLOCKS_AUTO;
    if (!getenv("GB_GROW"))
        o.growth = name_has(name, "copy", NULL) ? GB_GROW_COPY : GB_GROW_AUTO;
    if (!getenv("GB_CACHE") && name_has(name, "nocache", NULL))
        o.cache_bytes = GB_CACHE_OFF;
    const char *env_small = getenv("GB_SMALL");
    if (!env_small)
        o.small = name_has(name, "malloc", NULL) ? GB_SMALL_MALLOC
                  : name_has(name, "slab", NULL) ? GB_SMALL_SLAB
                                                 : GB_SMALL_AUTO;
    const char *env_stress = getenv("GB_STRESS");
    if (env_stress && *env_stress)
        stress = (unsigned)strtoul(env_stress, NULL, 10);
    else if (name_has(name, "stress", &stress))
        o.stress = stress;
    const char *env_defaults = getenv("GB_FUZZ_DEFAULTS");
    bool defaults = env_defaults ? strcmp(env_defaults, "1") == 0 : name_has(name, "defaults", NULL);
    if (defaults) {
        /* As shipped: no gb_init, the first call initialises the runtime
         * with the default sizes and budget (and the environment). */
        gb_stats st;
        gb_stats_get(&st);
    } else {
        const char *env_blocks = getenv("GB_BLOCKS");
        o.first_block = FZ_FIRST_BLOCK;
        o.block_cap = FZ_BLOCK_CAP;
        if (o.blocks == GB_BLOCKS_MAP || (env_blocks && strcmp(env_blocks, "map") == 0))
            o.map_budget = FZ_MAP_BUDGET;
        gb_init(&o);
    }
    faults_install();
    const char *small = o.small == GB_SMALL_MALLOC ? "malloc"
                        : o.small == GB_SMALL_SLAB    ? "slab"
                        : env_small && *env_small     ? env_small
                                                      : "auto";
    const char *cache = o.cache_bytes == GB_CACHE_OFF ? "off"
                        : getenv("GB_CACHE")          ? getenv("GB_CACHE")
                                                      : "default";
    fprintf(stderr, "fuzz_runtime: %s build, blocks=%s, growth=%s, small=%s, cache=%s, stress=%u, %s\n",
            gb_build_kind(), gb_blocks_name(), gb_growth_name(), small, cache, stress,
            defaults ? "default sizes (lazy init)" : "small blocks (gb_init)");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    init_process(argc && argv && *argc > 0 ? (*argv)[0] : NULL);
    return 0;
}

/* With stress N, every N-th safepoint sweeps; the count carries over from
 * input to input. Bring it to zero so that an input does the same thing
 * alone as after any other. */
static void sync_safepoints(void)
{
    if (!stress)
        return;
    uint64_t sweeps = stats().sweeps;
    for (unsigned i = 0; i < stress && stats().sweeps == sweeps; i++)
        gb_safepoint();
}

/* The end of an input: every region is left (the thread's innermost first,
 * then each coroutine's by freeing it), a sweep runs, and every counter of
 * what the runtime holds must be zero. */
static void teardown(void)
{
    faults_off();
    for (int r = 0; r < S.nregions; r++)
        if (S.region[r].st == R_LIVE || S.region[r].st == R_LEFT_FULL)
            check_region_full(r);
    while (S.main_top >= 0)
        op_leave();
    for (int i = 0; i < S.ncoros; i++)
        if (S.coro[i].st == C_SUSPENDED || S.coro[i].st == C_FINISHED)
            coro_free(&S.coro[i]);
    gb_sweep();
    retry_point();
    for (int r = 0; r < S.nregions; r++)
        if (S.region[r].st != R_DROPPED)
            fail("end of input: the model still has region %d (state %d)", r, (int)S.region[r].st);
    /* Every "now" field but map_budget (the block cache's too: gb_sweep
     * gives it back), each named when it is not zero. */
    gb_stats st = stats();
    char held[1024];
    size_t at = 0;
#define FZ_HELD_GB_STAT_NOW(name)                                                                  \
    if (st.name && at < sizeof held)                                                               \
        at += (size_t)snprintf(held + at, sizeof held - at, " %s=%ju", #name, (uintmax_t)st.name);
#define FZ_HELD_GB_STAT_KEPT(name) FZ_HELD_GB_STAT_NOW(name)
#define FZ_HELD_GB_STAT_SETTING(name)
#define FZ_HELD_GB_STAT_SINCE(name)
#define FZ_HELD(kind, type, name) FZ_HELD_##kind(name)
    GB_STATS_FIELDS(FZ_HELD)
    if (at)
        fail("end of input: the runtime still holds memory after every region was left, every "
             "coroutine freed and gb_sweep() ran:%s",
             held);
    for (int i = 0; i < S.nallocs; i++)
        free(S.alloc[i].shadow);
    for (int i = 0; i < S.nvecs; i++)
        free(S.vec[i].data);
    for (int i = 0; i < S.nmaps; i++) {
        free(S.map[i].val);
        free(S.map[i].has);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_process(NULL);
    memset(&S, 0, sizeof S);
    S.cur = MAIN;
    S.main_top = -1;
    in.d = data;
    in.lo = 0;
    in.hi = size;
    sync_safepoints();
    run();
    teardown();
    return 0;
}
