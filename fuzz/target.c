/* target.c -- the fuzz target: the entry points the engines call, the
 * loop that decodes an input into operations, and the end-of-input checks.
 *
 * The runtime's promises are about sequences: a region left while a
 * suspended coroutine points into it must stay readable until that pointer
 * is gone, and must go back to the OS once it is; a container's arena must
 * go with its region; after everything is left, every counter is zero. A
 * unit test checks the sequences someone thought of. Here the input bytes
 * are the sequence: region operations, allocations, containers, and
 * coroutines whose bodies are driven by the same bytes, so which coroutine
 * runs next and when it yields is fuzzed, not fixed. The model (model.c)
 * knows, after every operation, what must still be readable and with what
 * contents; the harness reads all of it back and compares (check.c), so a
 * region freed too early is a use-after-free that ASan reports (or a wrong
 * byte the model reports), and a byte kept too long shows up in the exact
 * counters at the end of each input. One target serves libFuzzer, AFL++
 * and the corpus replay (replay.c).
 */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The runtime's own checker of a thread's whole state (runtime/src/
 * check.h), which only a runtime built with GB_CHECK has: the replay and
 * the engines link one (fuzz/CMakeLists.txt). Weak, so that the harness
 * also links with the runtimes that do not have it (the poison variants
 * of the teeth tests, GB_FUZZ_CHECK=OFF), where it is NULL. */
void gb__check_current(void) __attribute__((weak));

/* ------------------------------------------------------------- the loop */

enum {
    OP_ENTER, OP_LEAVE, OP_ALLOC, OP_ALLOC_IN, OP_CALLOC, OP_REALLOC, OP_WRITE, OP_CHECK,
    OP_VEC_NEW, OP_VEC_PUSH, OP_VEC_POP, OP_VEC_COMPACT,
    OP_MAP_NEW, OP_MAP_PUT, OP_MAP_DEL, OP_MAP_GET, OP_MAP_COMPACT,
    OP_STATS, OP_CORO_NEW, OP_RESUME, OP_CORO_FREE, OP_SWEEP, OP_SAFEPOINT, OP_FAULT,
    OP_EMBED, /* the variant names the operation (embed[] below) */
    /* In a coroutine; on the thread's own stack they mean the op after the
     * arrow. */
    OP_YIELD,    /* -> OP_RESUME */
    OP_CAPTURE,  /* -> OP_ALLOC */
    OP_DROP,     /* -> OP_LEAVE */
    OP_FINISH,   /* -> OP_ENTER */
    OP_YIELD2,   /* -> OP_CORO_NEW */
    OP_CAPTURE2, /* -> OP_RESUME */
    OP_HANDOFF,  /* the variant names the operation (ops_handoff.c) */
};

static const unsigned char on_thread[32] = {
    [OP_YIELD] = OP_RESUME,    [OP_CAPTURE] = OP_ALLOC,     [OP_DROP] = OP_LEAVE,
    [OP_FINISH] = OP_ENTER,    [OP_YIELD2] = OP_CORO_NEW,   [OP_CAPTURE2] = OP_RESUME,
};

/* The embedding surface (ops_embed.c, ops_region.c), one operation per
 * variant of OP_EMBED: 0x18 reset, 0x38 leave_to, 0x58 calloc_in, 0x78
 * realloc_in, 0x98 try_alloc, 0xb8 try_alloc_in, 0xd8 try_realloc, 0xf8
 * limit. */
static void (*const embed[8])(void) = {
    op_reset, op_leave_to, op_calloc_in, op_realloc_in,
    op_try_alloc, op_try_alloc_in, op_try_realloc, op_limit,
};

/* FUZZ_TRACE=1 prints each operation as it is decoded (its number, the
 * context, its name and variant), to check that a hand-written input
 * does what it was written for. */
static const char *const op_names[32] = {
    "enter", "leave", "alloc", "alloc_in", "calloc", "realloc", "write", "check",
    "vec_new", "vec_push", "vec_pop", "vec_compact", "map_new", "map_put", "map_del", "map_get",
    "map_compact", "stats", "coro_new", "resume", "coro_free", "sweep", "safepoint", "fault",
    "embed", "yield", "capture", "drop", "finish", "yield", "capture", "handoff",
};
static const char *const embed_names[8] = {
    "reset", "leave_to", "calloc_in", "realloc_in", "try_alloc", "try_alloc_in", "try_realloc", "limit",
};
static int trace = -1;

bool tracing(void)
{
    if (trace < 0) {
        const char *e = getenv("FUZZ_TRACE");
        trace = e && *e && strcmp(e, "0") != 0;
    }
    return trace;
}

static void trace_op(unsigned op, unsigned v)
{
    if (!tracing())
        return;
    char ctx[16];
    if (S.cur == MAIN)
        snprintf(ctx, sizeof ctx, "thread");
    else
        snprintf(ctx, sizeof ctx, "coro %d", S.cur);
    fprintf(stderr, "fuzz_runtime: trace: %u %s: %s v%u (depth %zu)\n", S.ops, ctx,
            op == OP_EMBED ? embed_names[v] : op_names[op], v, ctx_depth(S.cur));
}

/* Runs operations until the input ends, the operation bound is reached,
 * or (in a coroutine) its body is told to return. */
FZ_NOINLINE void run(void)
{
    while (in_more() && S.ops < MAX_OPS) {
        unsigned b = in_ch8(), op = b & 31, v = b >> 5;
        S.ops++;
        if (S.cur == MAIN && op >= OP_YIELD && op <= OP_CAPTURE2)
            op = on_thread[op];
        trace_op(op, v);
        switch (op) {
        case OP_ENTER: op_enter(); break;
        case OP_LEAVE: op_leave(); break;
        case OP_HANDOFF: op_handoff(v); break;
        case OP_ALLOC: op_alloc(v); break;
        case OP_ALLOC_IN: op_alloc_in(v); break;
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
        case OP_EMBED: embed[v](); break;
        case OP_YIELD: case OP_YIELD2: op_yield(); break;
        case OP_CAPTURE: case OP_CAPTURE2: op_capture(v); break;
        case OP_DROP: op_drop(); break;
        case OP_FINISH:
            S.coro[S.cur].finish = true;
            return;
        default: break;
        }
        check_after_op();
        if (gb__check_current)
            gb__check_current();
    }
    if (S.cur != MAIN)
        S.coro[S.cur].finish = true;
}

/* -------------------------------------------------------------- an input */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    init_process(argc && argv && *argc > 0 ? (*argv)[0] : NULL);
    return 0;
}

/* The end of an input: every region is left (the thread's innermost first,
 * then each coroutine's by freeing it), a sweep runs, and every counter of
 * what the runtime holds must be zero. */
static void teardown(void)
{
    faults_off();
    handoff_teardown();
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
    check_left_freed("at the end of the input");
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
    handoff_reset();
    in_start(data, size);
    sync_safepoints();
    run();
    teardown();
    return 0;
}
