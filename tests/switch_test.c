/* switch_test.c -- standalone test of the coroutine context switch.
 *
 * Builds with nothing but runtime/src/switch/switch.h, switch_init.c and the
 * assembly file of the host architecture, e.g.
 *
 *   cc -O2 tests/switch_test.c runtime/src/switch/switch_init.c \
 *      runtime/src/switch/x86_64_sysv.S runtime/src/switch/arm64.S
 *
 * It checks that gb__switch preserves every callee-saved register, keeps the
 * per-context floating-point control state apart on x86-64, starts new
 * contexts on an ABI-aligned stack with the right argument, aborts when an
 * entry function returns, and leaves the saved registers where a
 * conservative scan from the saved sp to the stack top will find them.
 *
 * Under AddressSanitizer the test announces every switch with
 * __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, as the
 * runtime must, and the scan of a suspended stack is compiled without ASan
 * instrumentation because it reads the redzones of live frames on purpose.
 * Under Valgrind the coroutine stacks are registered with
 * VALGRIND_STACK_REGISTER when <valgrind/valgrind.h> is available.
 */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS on glibc with -std=c11. */
#endif

#include "../runtime/src/switch/switch.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif
#if !defined(T_ASAN)
#define T_ASAN 0
#endif

#if T_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define T_NO_ASAN __attribute__((no_sanitize_address))
#else
#define T_NO_ASAN
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define T_VALGRIND 1
#endif
#endif
#if !defined(T_VALGRIND)
#define T_VALGRIND 0
#endif

#if defined(__APPLE__)
#define T_ASM_SYM(name) "_" #name
#else
#define T_ASM_SYM(name) #name
#endif

/* Results. Checks that run inside coroutines record failures here and main
 * reports them, so every message names the check that failed. */

static int g_passed;
static int g_failed;

static void check(int ok, const char *name)
{
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        fprintf(stderr, "FAIL: %s\n", name);
    }
}

static void die(const char *what)
{
    fprintf(stderr, "FATAL: %s\n", what);
    exit(2);
}

/* A broken switch usually crashes rather than failing a comparison, so a
 * fatal signal is reported with the name of the check that was running. The
 * handler runs on its own stack because the faulting one may be unusable.
 * Under ASan the sanitizer's own report is more useful, so it is kept. */

static const char *volatile g_running = "startup";

#if !T_ASAN
static void crash_handler(int sig)
{
    const char *name = g_running;
    static const char head[] = "FAIL: crashed (fatal signal) during check: ";

    ssize_t ignored;

    /* Only async-signal-safe calls; a failed write cannot be reported. */
    (void)sig;
    ignored = write(2, head, sizeof head - 1);
    ignored = write(2, name, strlen(name));
    ignored = write(2, "\n", 1);
    (void)ignored;
    _exit(3);
}
#endif

static void install_crash_handler(void)
{
#if !T_ASAN
    static unsigned char alt[64 * 1024];
    stack_t ss;
    struct sigaction sa;
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};
    unsigned i;

    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) != 0)
        die("sigaltstack failed");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = crash_handler;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
#endif
}

/* Contexts. A context is its saved sp plus the bounds of its stack, which the
 * sanitizer annotations and the stack scan need. Stacks are mmap'd with a
 * PROT_NONE guard page below them, as the runtime does. */

typedef struct ctx {
    void *sp;
    unsigned char *lo;  /* Lowest usable address. */
    unsigned char *top; /* One past the highest usable address. */
    void *map;
    size_t map_size;
    unsigned vg_id;
} ctx;

#define T_STACK_BYTES ((size_t)256 * 1024)

/* main's own context. Its stack bounds are only needed for the ASan
 * annotations, and the first context to start learns them from
 * __sanitizer_finish_switch_fiber. */
static ctx g_main;

/* The context that most recently switched away, so that the resumed side can
 * record the bounds ASan reports for it. */
static ctx *g_from;

static void ctx_make(ctx *c, void (*entry)(void *), void *arg)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = T_STACK_BYTES + page;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (m == MAP_FAILED)
        die("mmap of a coroutine stack failed");
    if (mprotect(m, page, PROT_NONE) != 0)
        die("mprotect of a guard page failed");
    memset(c, 0, sizeof *c);
    c->map = m;
    c->map_size = size;
    c->lo = (unsigned char *)m + page;
    c->top = (unsigned char *)m + size;
#if T_VALGRIND
    c->vg_id = VALGRIND_STACK_REGISTER(c->lo, c->top);
#endif
    c->sp = gb__switch_init(c->top, entry, arg);
}

static void ctx_free(ctx *c)
{
#if T_VALGRIND
    VALGRIND_STACK_DEREGISTER(c->vg_id);
#endif
#if T_ASAN
    /* Frames of a coroutine that never returned leave their redzones
     * poisoned; a later mapping at the same address must not inherit them. */
    ASAN_UNPOISON_MEMORY_REGION(c->lo, (size_t)(c->top - c->lo));
#endif
    munmap(c->map, c->map_size);
}

static void ann_start(void **fake, const ctx *to)
{
#if T_ASAN
    __sanitizer_start_switch_fiber(fake, to->lo, (size_t)(to->top - to->lo));
#else
    (void)fake;
    (void)to;
#endif
}

static void ann_finish(void *fake)
{
#if T_ASAN
    const void *lo;
    size_t size;

    __sanitizer_finish_switch_fiber(fake, &lo, &size);
    if (g_from != NULL && g_from->lo == NULL) {
        g_from->lo = (unsigned char *)lo;
        g_from->top = (unsigned char *)lo + size;
    }
#else
    (void)fake;
#endif
}

/* First statement-level action of every entry function. */
static void ctx_started(void)
{
    ann_finish(NULL);
}

static void ctx_switch(ctx *from, ctx *to)
{
    void *fake = NULL;

    g_from = from;
    ann_start(&fake, to);
    gb__switch(&from->sp, to->sp);
    ann_finish(fake);
}

/* The same switch made through a function pointer, so that an indirect call
 * reaches gb__switch; with BTI enforced it needs its landing pad. */
static void (*volatile g_switch_fn)(void **, void *) = gb__switch;

static void ctx_switch_indirect(ctx *from, ctx *to)
{
    void *fake = NULL;

    g_from = from;
    ann_start(&fake, to);
    g_switch_fn(&from->sp, to->sp);
    ann_finish(fake);
}

/* Stack alignment. __builtin_frame_address forces a frame pointer, which on
 * x86-64 is the entry rsp minus 8 and on arm64 is sp after the prologue, so
 * on both it is 16-byte aligned exactly when the function was entered with
 * the ABI alignment. The helper's _Alignas local is placed by a compiler that
 * assumes that alignment, and the snprintf of a double uses aligned vector
 * stores in glibc on x86-64, which fault on a misaligned stack. */

static int g_align_bad;
static const char *g_align_where;

/* Only records: stdio itself faults on a misaligned stack. main reports. */
static void align_bad(const char *where)
{
    g_align_where = where;
    g_align_bad++;
}

static __attribute__((noinline)) void note_alignment_callee(void)
{
    _Alignas(16) volatile unsigned char buf[16];
    char text[32];

    buf[0] = 1;
    if (((uintptr_t)__builtin_frame_address(0) & 15) != 0 ||
        ((uintptr_t)buf & 15) != 0) {
        align_bad("a function called from an entry function");
        return; /* snprintf would fault on this stack. */
    }
    snprintf(text, sizeof text, "%f", 1.5 + buf[0]);
    if (strcmp(text, "2.500000") != 0)
        align_bad("snprintf called from an entry function");
}

#define NOTE_ENTRY_ALIGNMENT()                                         \
    do {                                                               \
        if (((uintptr_t)__builtin_frame_address(0) & 15) != 0)         \
            align_bad(__func__);                                       \
        else                                                           \
            note_alignment_callee();                                   \
    } while (0)

/* 0. Alignment first, with an entry that does nothing else, so that a
 * misaligned start is reported before code that relies on alignment crashes.
 * Every other entry function checks it again. */

static ctx al_ctx;

static void al_entry(void *arg)
{
    (void)arg;
    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    for (;;)
        ctx_switch(&al_ctx, &g_main);
}

static void test_alignment(void)
{
    g_running = "entry stack alignment";
    ctx_make(&al_ctx, al_entry, NULL);
    ctx_switch(&g_main, &al_ctx);
    if (g_align_bad != 0)
        fprintf(stderr, "  misaligned stack in %s\n", g_align_where);
    check(g_align_bad == 0,
          "an entry function starts with a 16-byte aligned stack");
    ctx_free(&al_ctx);
}

/* 1. Ping-pong: main -> a -> b -> main, a million rounds, with a counter that
 * each side checks and advances. b returns to main through an indirect
 * call. */

#define PP_ROUNDS 1000000UL

static ctx pp_a;
static ctx pp_b;
static unsigned long pp_counter;
static unsigned long pp_bad;
static int pp_arg_bad;

static void pp_entry_a(void *arg)
{
    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    if (arg != &pp_a)
        pp_arg_bad++;
    for (;;) {
        if (pp_counter % 3 != 0)
            pp_bad++;
        pp_counter++;
        ctx_switch(&pp_a, &pp_b);
    }
}

static void pp_entry_b(void *arg)
{
    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    if (arg != &pp_b)
        pp_arg_bad++;
    for (;;) {
        if (pp_counter % 3 != 1)
            pp_bad++;
        pp_counter++;
        ctx_switch_indirect(&pp_b, &g_main);
    }
}

static void test_ping_pong(void)
{
    unsigned long i;
    unsigned long bad = 0;

    g_running = "ping-pong";

    ctx_make(&pp_a, pp_entry_a, &pp_a);
    ctx_make(&pp_b, pp_entry_b, &pp_b);
    for (i = 0; i < PP_ROUNDS; i++) {
        ctx_switch(&g_main, &pp_a);
        if (pp_counter % 3 != 2)
            bad++;
        pp_counter++;
    }
    check(bad == 0 && pp_bad == 0 && pp_counter == 3 * PP_ROUNDS,
          "ping-pong: a million main->a->b->main rounds keep the counter in step");
    check(pp_arg_bad == 0, "entry receives the arg given to gb__switch_init");
    ctx_free(&pp_a);
    ctx_free(&pp_b);
}

/* 2. Callee-saved registers. regs_switch loads every callee-saved register
 * the compiler lets inline asm own (and the frame pointer, which it saves and
 * restores itself) from io[0..T_NREGS-1], calls gb__switch, and stores the
 * registers as they are after the switch back into io[T_NREGS..]. Both
 * contexts of the test do this with different patterns, so each one's values
 * are clobbered by the other's before it resumes. While a context is away,
 * main scans its stack for the values. */

#if defined(__x86_64__)
/* rbx, rbp, r12, r13, r14, r15. */
#define T_NREGS 6
static const char *const t_reg_names[T_NREGS] = {"rbx", "rbp", "r12",
                                                 "r13", "r14", "r15"};
static const int t_reg_offsets[T_NREGS] = {
    GB__SWITCH_OFF_RBX, GB__SWITCH_OFF_RBP, GB__SWITCH_OFF_R12,
    GB__SWITCH_OFF_R13, GB__SWITCH_OFF_R14, GB__SWITCH_OFF_R15};
#elif defined(__aarch64__)
/* x19..x28, x29, d8..d15. */
#define T_NREGS 19
static const char *const t_reg_names[T_NREGS] = {
    "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
    "x29", "d8",  "d9",  "d10", "d11", "d12", "d13", "d14", "d15"};
static const int t_reg_offsets[T_NREGS] = {
    GB__SWITCH_OFF_X19 + 0,  GB__SWITCH_OFF_X19 + 8,  GB__SWITCH_OFF_X19 + 16,
    GB__SWITCH_OFF_X19 + 24, GB__SWITCH_OFF_X19 + 32, GB__SWITCH_OFF_X19 + 40,
    GB__SWITCH_OFF_X19 + 48, GB__SWITCH_OFF_X19 + 56, GB__SWITCH_OFF_X19 + 64,
    GB__SWITCH_OFF_X19 + 72, GB__SWITCH_OFF_X29,      GB__SWITCH_OFF_D8 + 0,
    GB__SWITCH_OFF_D8 + 8,   GB__SWITCH_OFF_D8 + 16,  GB__SWITCH_OFF_D8 + 24,
    GB__SWITCH_OFF_D8 + 32,  GB__SWITCH_OFF_D8 + 40,  GB__SWITCH_OFF_D8 + 48,
    GB__SWITCH_OFF_D8 + 56};
#endif

static __attribute__((noinline)) void regs_switch(void **from_sp, void *to_sp,
                                                   uint64_t *io)
{
#if defined(__x86_64__)
    /* The asm moves rsp below the red zone and aligns it for the call, and
     * keeps the old rsp, the old rbp and io in that scratch area, because
     * every register that would survive the call is being tested. */
    __asm__ volatile(
        "movq %%rsp, %%rax\n\t"
        "subq $256, %%rsp\n\t"
        "andq $-16, %%rsp\n\t"
        "movq %%rax, 0(%%rsp)\n\t"
        "movq %%rdx, 8(%%rsp)\n\t"
        "movq %%rbp, 16(%%rsp)\n\t"
        "movq 0(%%rdx), %%rbx\n\t"
        "movq 8(%%rdx), %%rbp\n\t"
        "movq 16(%%rdx), %%r12\n\t"
        "movq 24(%%rdx), %%r13\n\t"
        "movq 32(%%rdx), %%r14\n\t"
        "movq 40(%%rdx), %%r15\n\t"
        "call " T_ASM_SYM(gb__switch) "\n\t"
        "movq 8(%%rsp), %%rdx\n\t"
        "movq %%rbx, 48(%%rdx)\n\t"
        "movq %%rbp, 56(%%rdx)\n\t"
        "movq %%r12, 64(%%rdx)\n\t"
        "movq %%r13, 72(%%rdx)\n\t"
        "movq %%r14, 80(%%rdx)\n\t"
        "movq %%r15, 88(%%rdx)\n\t"
        "movq 16(%%rsp), %%rbp\n\t"
        "movq 0(%%rsp), %%rsp\n\t"
        : "+D"(from_sp), "+S"(to_sp), "+d"(io)
        :
        : "rax", "rcx", "r8", "r9", "r10", "r11", "rbx", "r12", "r13", "r14",
          "r15", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
          "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
          "xmm15", "memory", "cc");
#elif defined(__aarch64__)
    register void **r0 __asm__("x0") = from_sp;
    register void *r1 __asm__("x1") = to_sp;
    register uint64_t *r2 __asm__("x2") = io;

    /* sp stays 16-byte aligned; the 144 bytes also step over the 128-byte
     * red zone of the Apple ABI. The scratch area keeps io and the old x29,
     * because every register that would survive the call is being tested. */
    __asm__ volatile(
        "sub sp, sp, #144\n\t"
        "str x2, [sp, #0]\n\t"
        "str x29, [sp, #8]\n\t"
        "ldp x19, x20, [x2, #0]\n\t"
        "ldp x21, x22, [x2, #16]\n\t"
        "ldp x23, x24, [x2, #32]\n\t"
        "ldp x25, x26, [x2, #48]\n\t"
        "ldp x27, x28, [x2, #64]\n\t"
        "ldr x29, [x2, #80]\n\t"
        "ldp d8, d9, [x2, #88]\n\t"
        "ldp d10, d11, [x2, #104]\n\t"
        "ldp d12, d13, [x2, #120]\n\t"
        "ldp d14, d15, [x2, #136]\n\t"
        "bl " T_ASM_SYM(gb__switch) "\n\t"
        "ldr x2, [sp, #0]\n\t"
        "stp x19, x20, [x2, #152]\n\t"
        "stp x21, x22, [x2, #168]\n\t"
        "stp x23, x24, [x2, #184]\n\t"
        "stp x25, x26, [x2, #200]\n\t"
        "stp x27, x28, [x2, #216]\n\t"
        "str x29, [x2, #232]\n\t"
        "stp d8, d9, [x2, #240]\n\t"
        "stp d10, d11, [x2, #256]\n\t"
        "stp d12, d13, [x2, #272]\n\t"
        "stp d14, d15, [x2, #288]\n\t"
        "ldr x29, [sp, #8]\n\t"
        "add sp, sp, #144\n\t"
        : "+r"(r0), "+r"(r1), "+r"(r2)
        :
        : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
          "x14", "x15", "x16", "x17",
#if !defined(__APPLE__)
          "x18",
#endif
          "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
          "x30", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9",
          "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19",
          "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29",
          "v30", "v31", "memory", "cc");
#endif
}

static void ctx_regs_switch(ctx *from, ctx *to, uint64_t *io)
{
    void *fake = NULL;

    g_from = from;
    ann_start(&fake, to);
    regs_switch(&from->sp, to->sp, io);
    ann_finish(fake);
}

static ctx rg_a;
static ctx rg_b;
static uint64_t rg_io_a[2 * T_NREGS];
static uint64_t rg_io_b[2 * T_NREGS];
static int rg_int_bad;
static int rg_fp_bad;

/* Patterns are odd multiples of a large odd constant: distinct, never zero
 * and not plausible addresses, so a hit in the scan is not a coincidence. */
static uint64_t rg_pattern(unsigned who, unsigned reg)
{
    return 0x9e3779b97f4a7c15ULL * (2u * (who * 64u + reg) + 1u);
}

static void rg_fill(uint64_t *io, unsigned who)
{
    unsigned i;

    for (i = 0; i < T_NREGS; i++) {
        io[i] = rg_pattern(who, i);
        io[T_NREGS + i] = 0;
    }
}

static void rg_verify(const uint64_t *io)
{
    unsigned i;

    for (i = 0; i < T_NREGS; i++) {
        if (io[T_NREGS + i] != io[i]) {
            fprintf(stderr, "  %s was %#llx after the switch, expected %#llx\n",
                    t_reg_names[i], (unsigned long long)io[T_NREGS + i],
                    (unsigned long long)io[i]);
            if (t_reg_names[i][0] == 'd')
                rg_fp_bad++;
            else
                rg_int_bad++;
        }
    }
}

static void rg_entry(void *arg)
{
    ctx *self = (ctx *)arg;
    uint64_t *io = self == &rg_a ? rg_io_a : rg_io_b;

    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    ctx_regs_switch(self, &g_main, io);
    rg_verify(io);
    for (;;)
        ctx_switch(self, &g_main);
}

/* Looks at a suspended stack the way the runtime's conservative scanner
 * will: every aligned word from the saved sp to the stack top. It reads
 * redzones and dead slots deliberately, so it is not ASan-instrumented, and
 * it reads through volatile so the compiler cannot reason about the bytes. */
static T_NO_ASAN int scan_has(const ctx *c, uint64_t value)
{
    const volatile uint64_t *p = (const volatile uint64_t *)c->sp;
    const volatile uint64_t *end = (const volatile uint64_t *)c->top;

    for (; p < end; p++)
        if (*p == value)
            return 1;
    return 0;
}

static T_NO_ASAN uint64_t frame_word(const ctx *c, int offset)
{
    return *(const volatile uint64_t *)((const unsigned char *)c->sp + offset);
}

static void rg_inspect(const ctx *c, const uint64_t *io, int *scan_bad,
                       int *layout_bad)
{
    unsigned i;

    if (((uintptr_t)c->sp & 15) != 0)
        (*layout_bad)++;
    for (i = 0; i < T_NREGS; i++) {
        if (!scan_has(c, io[i])) {
            fprintf(stderr, "  %s value not found scanning the saved stack\n",
                    t_reg_names[i]);
            (*scan_bad)++;
        }
        if (frame_word(c, t_reg_offsets[i]) != io[i]) {
            fprintf(stderr, "  %s not at its documented frame offset %d\n",
                    t_reg_names[i], t_reg_offsets[i]);
            (*layout_bad)++;
        }
    }
}

static void test_registers(void)
{
    int scan_bad = 0;
    int layout_bad = 0;

    g_running = "callee-saved registers and stack scan";

    rg_fill(rg_io_a, 1);
    rg_fill(rg_io_b, 2);
    ctx_make(&rg_a, rg_entry, &rg_a);
    ctx_make(&rg_b, rg_entry, &rg_b);

    /* A fresh stack holds entry and arg in its fake frame, so a scan of a
     * coroutine that has not run yet already pins its argument. */
    check(scan_has(&rg_a, (uint64_t)(uintptr_t)&rg_a) &&
              scan_has(&rg_a, (uint64_t)(uintptr_t)rg_entry),
          "scan of a fresh stack finds entry and arg");

    ctx_switch(&g_main, &rg_a); /* a loads its patterns and switches back. */
    rg_inspect(&rg_a, rg_io_a, &scan_bad, &layout_bad);
    ctx_switch(&g_main, &rg_b); /* b overwrites the same registers. */
    rg_inspect(&rg_b, rg_io_b, &scan_bad, &layout_bad);
    ctx_switch(&g_main, &rg_a); /* a verifies and parks. */
    ctx_switch(&g_main, &rg_b); /* b verifies and parks. */

#if defined(__x86_64__)
    check(rg_int_bad == 0,
          "callee-saved rbx, rbp, r12-r15 survive a switch away and back");
#else
    check(rg_int_bad == 0,
          "callee-saved x19-x29 survive a switch away and back");
    check(rg_fp_bad == 0, "callee-saved d8-d15 survive a switch away and back");
#endif
    check(scan_bad == 0,
          "scan from the saved sp to the stack top finds every saved register");
    check(layout_bad == 0,
          "saved registers sit at the offsets documented in switch.h");
    ctx_free(&rg_a);
    ctx_free(&rg_b);
}

/* 3. Doubles kept live across a switch by ordinary compiled code: twelve of
 * them, more than the eight callee-saved d registers of arm64, so the
 * compiler keeps some in d8-d15 and spills the rest. Two contexts do this
 * with different values and interleave, each clobbering the other's. */

static ctx fp_a;
static ctx fp_b;
static int fp_bad;
static volatile double fp_seed_a = 1.25;
static volatile double fp_seed_b = -3.5;

static void fp_entry(void *arg)
{
    ctx *self = (ctx *)arg;
    ctx *other = self == &fp_a ? &fp_b : &fp_a;
    double s = self == &fp_a ? fp_seed_a : fp_seed_b;
    /* Sums and products of these small binary fractions are exact, so the
     * recomputation below must match bit for bit. */
    double v0 = s + 0.5, v1 = s * 3.0, v2 = s - 7.25, v3 = s * s;
    double v4 = s + 11.0, v5 = s * 0.25, v6 = s - 0.125, v7 = s * 5.0;
    double v8 = s + 100.0, v9 = s * 9.0, v10 = s - 1.5, v11 = s * 6.5;
    double t;

    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    /* a -> b (b starts and computes its own), b -> a, a -> b, b -> main. */
    if (self == &fp_a) {
        ctx_switch(self, other);
        ctx_switch(self, other);
    } else {
        ctx_switch(self, other);
    }
    s = self == &fp_a ? fp_seed_a : fp_seed_b;
    t = (v0 - (s + 0.5)) + (v1 - s * 3.0) + (v2 - (s - 7.25)) + (v3 - s * s) +
        (v4 - (s + 11.0)) + (v5 - s * 0.25) + (v6 - (s - 0.125)) +
        (v7 - s * 5.0) + (v8 - (s + 100.0)) + (v9 - s * 9.0) +
        (v10 - (s - 1.5)) + (v11 - s * 6.5);
    if (t != 0.0 || v3 != s * s || v11 != s * 6.5)
        fp_bad++;
    for (;;)
        ctx_switch(self, &g_main);
}

static void test_doubles(void)
{

    g_running = "double locals across switches";
    ctx_make(&fp_a, fp_entry, &fp_a);
    ctx_make(&fp_b, fp_entry, &fp_b);
    ctx_switch(&g_main, &fp_a);
    /* Both have verified by now: a finished first and switched to b, and b
     * switched here. a is parked in its ctx_switch to b. */
    check(fp_bad == 0, "double locals stay intact across switches");
    ctx_free(&fp_a);
    ctx_free(&fp_b);
}

/* 4. Floating-point control state on x86-64: each context has its own MXCSR
 * and x87 control word, and a new context inherits its creator's control
 * bits with the status flags cleared. */

#if defined(__x86_64__)

#define MXCSR_RC_MASK 0x6000u
#define MXCSR_RC_NEAREST 0x0000u
#define MXCSR_RC_UP 0x4000u
#define MXCSR_RC_ZERO 0x6000u
#define MXCSR_RC_DOWN 0x2000u
#define MXCSR_FLAGS 0x003fu
#define X87_RC_MASK 0x0c00u
#define X87_RC_DOWN 0x0400u
#define X87_RC_UP 0x0800u

static uint32_t get_mxcsr(void)
{
    uint32_t v;
    __asm__ volatile("stmxcsr %0" : "=m"(v));
    return v;
}

static void set_mxcsr(uint32_t v)
{
    /* The memory clobber keeps the surrounding volatile loads and stores of
     * the arithmetic check on the intended side of the mode change. */
    __asm__ volatile("ldmxcsr %0" : : "m"(v) : "memory");
}

static uint16_t get_x87cw(void)
{
    uint16_t v;
    __asm__ volatile("fnstcw %0" : "=m"(v));
    return v;
}

static void set_x87cw(uint16_t v)
{
    __asm__ volatile("fldcw %0" : : "m"(v) : "memory");
}

static ctx fx_a;
static ctx fx_b;
static ctx fx_c;
static uint32_t fx_main_mxcsr;
static uint16_t fx_main_x87cw;
static int fx_leak_bad;
static int fx_inherit_bad;
static volatile double fx_one = 1.0;
static volatile double fx_three = 3.0;
static double fx_third_zero;
static double fx_third_up;

static void fx_entry_a(void *arg)
{
    uint32_t m = get_mxcsr();

    (void)arg;
    ctx_started();
    /* Created while main rounded to nearest. */
    if ((m & MXCSR_RC_MASK) != (fx_main_mxcsr & MXCSR_RC_MASK))
        fx_inherit_bad++;
    set_mxcsr((m & ~MXCSR_RC_MASK) | MXCSR_RC_ZERO);
    set_x87cw((uint16_t)((get_x87cw() & ~X87_RC_MASK) | X87_RC_DOWN));
    fx_third_zero = fx_one / fx_three;
    ctx_switch(&fx_a, &fx_b);
    /* b has set round-up meanwhile; ours must be back. */
    if ((get_mxcsr() & MXCSR_RC_MASK) != MXCSR_RC_ZERO ||
        (get_x87cw() & X87_RC_MASK) != X87_RC_DOWN)
        fx_leak_bad++;
    for (;;)
        ctx_switch(&fx_a, &g_main);
}

static void fx_entry_b(void *arg)
{
    uint32_t m = get_mxcsr();
    uint16_t cw = get_x87cw();

    (void)arg;
    ctx_started();
    /* a's round-toward-zero must not have leaked into b. */
    if ((m & MXCSR_RC_MASK) != MXCSR_RC_NEAREST || cw != fx_main_x87cw)
        fx_leak_bad++;
    set_mxcsr((m & ~MXCSR_RC_MASK) | MXCSR_RC_UP);
    set_x87cw((uint16_t)((cw & ~X87_RC_MASK) | X87_RC_UP));
    fx_third_up = fx_one / fx_three;
    ctx_switch(&fx_b, &fx_a);
    if ((get_mxcsr() & MXCSR_RC_MASK) != MXCSR_RC_UP ||
        (get_x87cw() & X87_RC_MASK) != X87_RC_UP)
        fx_leak_bad++;
    for (;;)
        ctx_switch(&fx_b, &g_main);
}

static void fx_entry_c(void *arg)
{
    uint32_t m = get_mxcsr();
    uint16_t cw = get_x87cw();

    (void)arg;
    ctx_started();
    if ((m & MXCSR_RC_MASK) != MXCSR_RC_DOWN || (m & MXCSR_FLAGS) != 0 ||
        (cw & X87_RC_MASK) != X87_RC_UP)
        fx_inherit_bad++;
    for (;;)
        ctx_switch(&fx_c, &g_main);
}

static void test_fp_control(void)
{
    volatile double third_nearest;

    g_running = "MXCSR / x87 control word";

    /* Leave the inexact flag set in main so inheritance must clear it. */
    third_nearest = fx_one / fx_three;
    fx_main_mxcsr = get_mxcsr();
    fx_main_x87cw = get_x87cw();

    ctx_make(&fx_a, fx_entry_a, NULL);
    ctx_make(&fx_b, fx_entry_b, NULL);
    ctx_switch(&g_main, &fx_a); /* a: zero/down, -> b: up/up, -> a, -> main */
    if ((get_mxcsr() & MXCSR_RC_MASK) != (fx_main_mxcsr & MXCSR_RC_MASK) ||
        get_x87cw() != fx_main_x87cw)
        fx_leak_bad++;
    ctx_switch(&g_main, &fx_b); /* b re-checks its own and parks. */
    if ((get_mxcsr() & MXCSR_RC_MASK) != (fx_main_mxcsr & MXCSR_RC_MASK) ||
        get_x87cw() != fx_main_x87cw)
        fx_leak_bad++;
    check(fx_leak_bad == 0,
          "MXCSR and x87 control word are per context and restored on return");
    /* The divisions really ran under the modes each context set: 1/3 rounds
     * down to nearest, so toward zero agrees with nearest and up differs.
     * Valgrind's CPU emulation always rounds SSE arithmetic to nearest, so
     * there only the register values above can be checked. */
#if T_VALGRIND
    if (RUNNING_ON_VALGRIND) {
        printf("note: skipped the SSE rounding arithmetic check under "
               "Valgrind, which ignores the MXCSR rounding mode\n");
    } else
#endif
    {
        check(fx_third_up > fx_third_zero && third_nearest == fx_third_zero,
              "SSE division follows the rounding mode of its own context");
    }

    set_mxcsr((fx_main_mxcsr & ~MXCSR_RC_MASK) | MXCSR_RC_DOWN);
    set_x87cw((uint16_t)((fx_main_x87cw & ~X87_RC_MASK) | X87_RC_UP));
    ctx_make(&fx_c, fx_entry_c, NULL);
    set_mxcsr(fx_main_mxcsr);
    set_x87cw(fx_main_x87cw);
    ctx_switch(&g_main, &fx_c);
    check(fx_inherit_bad == 0,
          "new context inherits the creator's MXCSR/x87 control, flags clear");
    ctx_free(&fx_a);
    ctx_free(&fx_b);
    ctx_free(&fx_c);
}

#endif /* __x86_64__ */

/* 5. An entry function that returns lands in the trampoline's abort(). This
 * runs in a child process so the abort does not end the test. */

static ctx ret_ctx;

static void ret_entry(void *arg)
{
    (void)arg;
    ctx_started();
}

static void test_entry_return_aborts(void)
{
    pid_t pid;
    int status = 0;

    g_running = "entry return aborts";

    fflush(NULL);
    pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        struct rlimit no_core = {0, 0};

        setrlimit(RLIMIT_CORE, &no_core);
        ctx_make(&ret_ctx, ret_entry, NULL);
        ctx_switch(&g_main, &ret_ctx);
        _exit(0); /* Not reached if the trampoline works. */
    }
    if (waitpid(pid, &status, 0) != pid)
        die("waitpid failed");
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
          "an entry function that returns ends in abort()");
}

int main(void)
{
    install_crash_handler();
    test_alignment();
    test_ping_pong();
    test_registers();
    test_doubles();
#if defined(__x86_64__)
    test_fp_control();
#else
    printf("note: FP control state is not switched on arm64 (FPCR is "
           "thread-global in AAPCS64); MXCSR checks are x86-64 only\n");
#endif
    if (g_align_bad != 0)
        fprintf(stderr, "  misaligned stack in %s\n", g_align_where);
    check(g_align_bad == 0,
          "every entry function of the other checks started aligned too");
    test_entry_return_aborts();

    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
