/* harness.h -- what the files of the fuzz target share: its limits, the
 * model's state and the functions they call in one another.
 *
 * The fuzz target is one program over one global state, split into files
 * by what each part is for: the byte reader (input.c), the model of what
 * the runtime holds and the pin rules it follows (model.c), reading the
 * runtime back against it (check.c), the failing OS entries (fault.c), the
 * operations of each area (ops_region.c, ops_container.c, ops_coro.c,
 * ops_embed.c, ops_stats.c), the per-process configuration (config.c) and
 * the entry points with the end-of-input checks (target.c). This header is
 * internal to them; it is not the runtime's and nothing outside fuzz/
 * includes it.
 * The invariants written at the structs below are what every operation
 * keeps and what the checks rely on.
 */
#ifndef GB_FUZZ_HARNESS_H
#define GB_FUZZ_HARNESS_H

#include "giveback.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* ------------------------------------------------------------------ model */

/* The context of the thread's own stack; coroutines are 0, 1, ...; a
 * region the peer thread holds is on PEER's stack, one in flight between
 * the two threads on none (ops_handoff.c). */
enum { MAIN = -1, PEER = -2, FLIGHT = -3 };

/* A region only moves down this list, never back: R_LIVE until it is left,
 * R_JUST_LEFT from its leave to the retry point of the same operation,
 * which judges it R_LEFT_FULL, R_LEFT_ARENA or R_DROPPED by the frozen
 * stacks of the moment. */
typedef enum rstate {
    R_LIVE = 1,     /* on its context's stack */
    R_JUST_LEFT,    /* left by the current operation, not yet judged */
    R_LEFT_FULL,    /* left, and a frozen stack points into its blocks */
    R_LEFT_ARENA,   /* left, and frozen stacks point only into a vec arena */
    R_DROPPED,      /* may be gone: never read again */
} rstate;

/* A region, by the order it was entered in (records are never reused
 * within an input). The R_LIVE regions of one context form a chain from
 * ctx_top(ctx) through parent to -1, ctx_depth(ctx) long, innermost first,
 * which is what gb_current and gb_depth must say in that context.
 *
 * A reset (ops_embed.c) moves what the region held to a record of its own,
 * `contents`, which starts R_JUST_LEFT and is judged like a left region:
 * the runtime retires a pinned region's contents under a descriptor of
 * their own, whose handle the model learns from gb_region_of (h stays NULL
 * until then, and a record without a handle is not asked about).
 *
 * While limit is set, bytes (gb_region_bytes) never passes cap, which is
 * max(limit, what the region held when the limit was set or it was last
 * seen above it): a limit below what a region holds refuses new blocks,
 * it does not shrink the region. kept is gb_region_info.kept_bytes when
 * last seen, which only a reset may raise; left_kept is what a left region
 * kept when it was left (the runtime keeps those blocks while it is
 * retired). */
typedef struct fz_region {
    gb_region *h; /* compared with gb_current(), never dereferenced */
    int ctx;      /* MAIN, the coroutine whose stack it is on, PEER or FLIGHT */
    int parent;   /* the next region out on the same stack, or -1 */
    rstate st;
    bool fresh;   /* pinned at the last retry point, not yet read in full */
    bool used;    /* something was allocated in it since it was entered or reset */
    bool contents; /* the contents a reset took out of a live region */
    size_t bytes; /* gb_region_bytes when last seen (only a reset shrinks it) */
    size_t limit; /* gb_region_limit's bound, 0 for none */
    size_t cap;   /* the most bytes may be while limit is set */
    size_t kept;
    size_t left_kept;
} fz_region;

/* An allocation. While alive, its region is R_LIVE or R_LEFT_FULL (or
 * R_JUST_LEFT, until the retry point judges it), its first n bytes must
 * equal shadow's (max(n, 1) bytes from malloc, NULL once it is no longer
 * alive), p is 16-byte aligned, and it overlaps no other alive
 * allocation. A realloc ends the record and starts another. */
typedef struct fz_alloc {
    unsigned char *p, *shadow;
    size_t n;
    int region;
    bool alive; /* readable as long as its region is */
} fz_alloc;

/* A vec. struct_ok holds while its region is R_LIVE or R_LEFT_FULL (or
 * not yet judged, as for an allocation); storage_ok holds with it, and
 * without it only when arena is set and the region is R_LEFT_ARENA. Once
 * arena is set it stays set, and garbage never goes down: they are what
 * the runtime reported last. elem is one of the element sizes of
 * ops_container.c, at most 100 bytes. */
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

/* A map of the keys map_key(k) for k < MAP_KEYS: has[k] says whether key k
 * is present, val[k] what it holds, len how many are present. ok holds
 * while its region is R_LIVE or R_LEFT_FULL (a map is never pinned by its
 * arena alone); arena and garbage as for a vec. */
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

/* A pointer a coroutine holds in slot k: the word held[k] of its body's
 * frame always equals value (0 for S_NONE). The slot pins its target's
 * region only while slot_valid says the target is still readable where
 * the pointer points (an element slot's epoch is the vec's when taken). */
typedef struct fz_slot {
    slot_kind kind;
    int target;
    size_t off; /* byte offset (S_ALLOC) or element index (S_ELEM_*) */
    unsigned epoch;
    uintptr_t value; /* what the coroutine's stack must still hold */
} fz_slot;

/* The first three are gb_coro_status's values, so that a status compares
 * as it is; C_FREED is the model's own (the handle is gone). */
typedef enum cstate { C_SUSPENDED = 1, C_RUNNING, C_FINISHED, C_FREED } cstate;

/* A coroutine, by the order it was made in. C_RUNNING is the running
 * context (S.cur) or one waiting on a coroutine it resumed. held points
 * into its body's frame from its first run until the body returns or the
 * coroutine is freed, NULL otherwise; top and depth are its region stack,
 * as main_top and main_depth are the thread's. While it is C_RUNNING,
 * resumer, resumer's resumer and so on up to MAIN are the contexts waiting
 * on it. */
typedef struct fz_coro {
    gb_coro *h;
    int idx;
    int resumer; /* the context that resumed it last: while it runs, that
                    context's live regions take its allocations too */
    cstate st;
    int top;
    size_t depth;
    volatile uintptr_t *held; /* the array in its body's frame, once started */
    fz_slot slot[HOLD];
    bool finish;
} fz_coro;

/* Everything the model knows about one input, zeroed at its start. The
 * arrays only grow (n* counts their records, within the MAX_* limits);
 * bytes, vec_elems and map_entries are the input's budgets spent so far. */
typedef struct fz_state {
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
    bool faults_used; /* a fault was injected: unmaps may be deferred */
} fz_state;

extern fz_state S;

/* Candidate indices, filled by the pickers; each pick overwrites them. */
extern int cand[MAX_ALLOCS + MAX_REGIONS];

/* --------------------------------------------------------------- input.c */

void in_start(const uint8_t *data, size_t size);
bool in_more(void);
unsigned in_ch8(void);
unsigned in_ch16(void);
uint64_t in_pay64(void);
size_t in_pick(size_t n);

/* --------------------------------------------------------------- model.c */

__attribute__((noreturn, format(printf, 1, 2))) void fail(const char *fmt, ...);
uint64_t mix64(uint64_t x);
void pattern(unsigned char *dst, unsigned char *shadow, size_t n, uint64_t seed);
uint64_t map_key(unsigned k);
int ctx_top(int ctx);
size_t ctx_depth(int ctx);
void ctx_set(int ctx, int top, size_t depth);
void region_left(int r);
/* Region r is gone: nothing of it is read again. */
void region_dropped(int r);
void left_all(int ctx);
bool slot_valid(const fz_slot *s);
/* 2: a frozen stack (or with `running`, the running coroutine's) holds a
 * valid pointer into region r's blocks; 1: only into a vec arena; 0: none. */
int pins_of(int r, bool running);
/* Some coroutine's stack is frozen: the runtime's scans have words to read. */
bool any_frozen(void);
/* The depth gb_region_info must report for live region r (1: innermost). */
size_t region_depth(int r);
/* Judges every left region by the stacks frozen now (model.c says how);
 * called wherever the runtime may free a retired region. */
void retry_point(void);

/* --------------------------------------------------------------- check.c */

void check_alloc_full(const fz_alloc *a);
void check_vec(const fz_vec *v, bool full);
void check_map_key(const fz_map *m, unsigned k);
void check_map(const fz_map *m, bool full);
void check_region_full(int r);
void check_pinned_full(void);
void check_held(const fz_coro *c);
void check_after_op(void);
void check_regions_of(void);
void check_region_info(int r, gb_region_info *out);
void check_left_freed(const char *when);
gb_stats stats(void);

/* --------------------------------------------------------------- fault.c */

void faults_install(void);
void faults_off(void);
void op_fault(unsigned v);

/* ---------------------------------------------------------- ops_region.c */

void op_enter(void);
void op_leave(void);
void op_alloc(unsigned v);
void op_alloc_in(unsigned v);
void op_calloc(void);
void op_realloc(unsigned v);
void op_write(void);
void op_check(unsigned v);
size_t take_size(void);
int add_alloc(int r, void *p, size_t n, uint64_t seed, bool zeroed);
/* Like add_alloc for an allocation already written (by the peer): shadow,
 * malloc'd, holds what p holds and is the record's from now on. */
int add_alloc_written(int r, void *p, size_t n, unsigned char *shadow);
/* A live region the running context may name (in_pick over them): its own,
 * innermost first, and with `resumers` those of every context waiting on
 * it, nearest first; -1 when there is none. */
int pick_region(bool resumers);
/* Resizes allocation i in its region, by variant v's rule (ops_region.c);
 * `named` calls the _in form with the region's handle. Under the region's
 * limit the try form is called, and a refusal must change nothing. */
void realloc_alloc(int i, unsigned v, bool named, bool fallible);

/* ----------------------------------------------------------- ops_embed.c */

/* A request that may be refused: what it must leave unchanged if it is. */
typedef struct fz_try {
    int r;
    const char *who;
    size_t request; /* bytes asked for, for the refusal bound */
    bool overflow;  /* the size overflows: it must be refused */
    size_t bytes;
    gb_region_info info;
    gb_stats st;
} fz_try;

void try_begin(fz_try *t, int r, const char *who, size_t request, bool overflow);
bool try_end(const fz_try *t, const void *p);
void op_reset(void);
void op_leave_to(void);
void op_calloc_in(void);
void op_realloc_in(void);
void op_try_alloc(void);
void op_try_alloc_in(void);
void op_try_realloc(void);
void op_limit(void);

/* ------------------------------------------------------- ops_container.c */

/* A readable vec (its index) or map (MAX_VECS + its index), or -1. */
int pick_container(void);
void op_vec_new(unsigned v);
void op_vec_push(unsigned v);
void op_vec_pop(unsigned v);
void op_vec_compact(void);
void op_map_new(void);
void op_map_put(unsigned v);
void op_map_del(unsigned v);
void op_map_get(void);
void op_map_compact(void);

/* ------------------------------------------------------------ ops_coro.c */

void op_coro_new(unsigned v);
void op_resume(void);
void coro_free(fz_coro *c);
void op_coro_free(void);
void op_yield(void);
void op_capture(unsigned v);
void op_drop(void);
void op_sweep(void);
void op_safepoint(unsigned v);

/* ---------------------------------------------------------- ops_handoff.c */

/* Whether the fuzzed thread holds region r, or held it when it was left:
 * not one the peer holds, nor one in flight. */
bool held_here(int r);
int peer_ctx_top(void);
size_t peer_ctx_depth(void);
void op_handoff(unsigned v);
void handoff_teardown(void);
void handoff_reset(void);

/* ----------------------------------------------------------- ops_stats.c */

void op_stats(unsigned v);

/* -------------------------------------------------------------- config.c */

void init_process(const char *argv0);
void sync_safepoints(void);

/* -------------------------------------------------------------- target.c */

/* Runs operations until the input ends, the operation bound is reached,
 * or (in a coroutine) its body is told to return. */
void run(void);
/* FUZZ_TRACE is set: operations say what they do on stderr. */
bool tracing(void);

#endif
