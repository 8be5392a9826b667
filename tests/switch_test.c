/* switch_test.c -- the coroutine context switch on its own, without the
 * runtime.
 *
 * It builds from nothing but runtime/src/switch/ (switch.h, switch_init.c
 * and the assembly file of the host architecture), runtime/src/sanitizers.h
 * and the test harness, e.g.
 *
 *   cc -O2 -Itests -Iruntime/src tests/switch_test.c tests/gbtest.c \
 *      runtime/src/switch/switch_init.c runtime/src/switch/x86_64_sysv.S \
 *      runtime/src/switch/arm64.S
 *
 * Its tests check that gb__switch preserves every callee-saved register,
 * keeps the per-context floating-point control state apart on x86-64,
 * starts new contexts on an ABI-aligned stack with the right argument,
 * aborts when an entry function returns, and leaves the saved registers
 * where a conservative scan from the saved sp to the stack top will find
 * them. Each test runs in its own process (ctest runs `switch <test>`), so
 * a switch that crashes fails only the test that made it, under its name.
 *
 * Code running on a coroutine stack never calls CHECK: it records what it
 * saw in statics, and the test checks them back on main's stack. A failed
 * check then ends the process from the thread's own stack, not from a
 * coroutine's, and no check needs stdio on a coroutine stack, where it
 * faults if the stack is misaligned, which is one of the things checked.
 *
 * Under AddressSanitizer the test announces every switch with
 * __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, as the
 * runtime must, and the scan of a suspended stack is compiled without ASan
 * instrumentation because it reads the redzones of live frames on purpose.
 * Under Valgrind the coroutine stacks are registered with
 * VALGRIND_STACK_REGISTER when <valgrind/valgrind.h> is available. Both
 * come from sanitizers.h, as they do for the runtime.
 */
#include "gbtest.h"
#include "sanitizers.h"
#include "switch/switch.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(GB__VALGRIND)
#define T_ON_VALGRIND RUNNING_ON_VALGRIND
#else
#define T_ON_VALGRIND 0
#endif

/* The FP control state and the d registers are one architecture's each;
 * their tests are registered on both and skip on the other. */
#if defined(__x86_64__)
#define T_X86_64 1
#else
#define T_X86_64 0
#endif

#if defined(__APPLE__)
#define T_ASM_SYM(name) "_" #name
#else
#define T_ASM_SYM(name) #name
#endif

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

/* Contexts are made and freed on main's stack only, so they may check. A
 * fill of 0 or more writes every byte of the stack with it first, as a
 * stack given out again would hold its last user's bytes. */
static void ctx_make_over(ctx *c, void (*entry)(void *), void *arg, int fill)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = T_STACK_BYTES + page;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(m != MAP_FAILED);
    CHECK_EQ(mprotect(m, page, PROT_NONE), 0);
    memset(c, 0, sizeof *c);
    c->map = m;
    c->map_size = size;
    c->lo = (unsigned char *)m + page;
    c->top = (unsigned char *)m + size;
    c->vg_id = gb__vg_register(c->lo, c->top);
    if (fill >= 0)
        memset(c->lo, fill, (size_t)(c->top - c->lo));
    c->sp = gb__switch_init(c->top, entry, arg);
}

static void ctx_make(ctx *c, void (*entry)(void *), void *arg)
{
    ctx_make_over(c, entry, arg, -1);
}

static void ctx_free(ctx *c)
{
    gb__vg_deregister(c->vg_id);
    /* Frames of a coroutine that never returned leave their redzones
     * poisoned; a later mapping at the same address must not inherit them. */
    gb__asan_unpoison(c->lo, (size_t)(c->top - c->lo));
    munmap(c->map, c->map_size);
}

static void ann_start(void **fake, const ctx *to)
{
    gb__asan_start(fake, to->lo, (size_t)(to->top - to->lo));
}

static void ann_finish(void *fake)
{
    const void *lo = NULL;
    size_t size = 0;

    /* Without ASan this leaves lo NULL, and no bounds are recorded. */
    gb__asan_finish(fake, &lo, &size);
    if (g_from != NULL && g_from->lo == NULL && lo != NULL) {
        g_from->lo = (unsigned char *)lo;
        g_from->top = (unsigned char *)lo + size;
    }
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
    gb__switch(&from->sp, to->sp, 0);
    ann_finish(fake);
}

/* The same switch made through a function pointer, so that an indirect call
 * reaches gb__switch; with BTI enforced it needs its landing pad. */
static uintptr_t (*volatile g_switch_fn)(void **, void *, uintptr_t) = gb__switch;

static void ctx_switch_indirect(ctx *from, ctx *to)
{
    void *fake = NULL;

    g_from = from;
    ann_start(&fake, to);
    g_switch_fn(&from->sp, to->sp, 0);
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

/* Only records: stdio itself faults on a misaligned stack. */
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

/* Every test whose entry functions note their alignment ends with this, on
 * main's stack, so each of them also checks that its own contexts started
 * aligned. */
static void check_entries_started_aligned(void)
{
    if (g_align_bad != 0)
        fprintf(stderr, "misaligned stack in %s\n", g_align_where);
    CHECK_EQ(g_align_bad, 0);
}

/* Alignment alone, with an entry that does nothing else, so that a
 * misaligned start fails this test by its check rather than by a crash in
 * code that relies on the alignment. */

static ctx al_ctx;

static void al_entry(void *arg)
{
    (void)arg;
    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    for (;;)
        ctx_switch(&al_ctx, &g_main);
}

GB_TEST(an_entry_starts_on_a_16_byte_aligned_stack)
{
    ctx_make(&al_ctx, al_entry, NULL);
    ctx_switch(&g_main, &al_ctx);
    check_entries_started_aligned();
    ctx_free(&al_ctx);
}

/* Ping-pong: main -> a -> b -> main, with a counter that each side checks
 * and advances. b returns to main through an indirect call. */

#define PP_ROUNDS 1000000UL

static ctx pp_a;
static ctx pp_b;
static unsigned long pp_counter;
static unsigned long pp_bad;
static void *pp_arg_a;
static void *pp_arg_b;

static void pp_entry_a(void *arg)
{
    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    pp_arg_a = arg;
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
    pp_arg_b = arg;
    for (;;) {
        if (pp_counter % 3 != 1)
            pp_bad++;
        pp_counter++;
        ctx_switch_indirect(&pp_b, &g_main);
    }
}

/* Runs that many rounds and returns how many times main found the counter
 * out of step. */
static unsigned long pp_run(unsigned long rounds)
{
    unsigned long bad = 0;

    ctx_make(&pp_a, pp_entry_a, &pp_a);
    ctx_make(&pp_b, pp_entry_b, &pp_b);
    for (unsigned long i = 0; i < rounds; i++) {
        ctx_switch(&g_main, &pp_a);
        if (pp_counter % 3 != 2)
            bad++;
        pp_counter++;
    }
    check_entries_started_aligned();
    return bad;
}

GB_TEST(a_million_rounds_through_two_contexts_stay_in_step)
{
    CHECK_EQ(pp_run(PP_ROUNDS), 0);
    CHECK_EQ(pp_bad, 0);
    CHECK_EQ(pp_counter, 3 * PP_ROUNDS);
    ctx_free(&pp_a);
    ctx_free(&pp_b);
}

GB_TEST(an_entry_receives_the_arg_given_to_switch_init)
{
    CHECK_EQ(pp_run(1), 0);
    CHECK(pp_arg_a == &pp_a);
    CHECK(pp_arg_b == &pp_b);
    ctx_free(&pp_a);
    ctx_free(&pp_b);
}

/* Callee-saved registers. regs_switch loads every callee-saved register
 * the compiler lets inline asm own (and the frame pointer, which it saves and
 * restores itself) from io[0..T_NREGS-1], calls gb__switch, and stores the
 * registers as they are after the switch back into io[T_NREGS..]. Both
 * contexts of the scenario do this with different patterns, so each one's
 * values are clobbered by the other's before it resumes. While a context is
 * away, main looks at its stack for the values; the tests below each check
 * one thing the scenario saw. */

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

/* What main saw of a suspended context: its saved sp, whether the scan
 * found each register's value, and the word at each register's documented
 * offset. */
typedef struct rg_seen {
    uintptr_t sp;
    int found[T_NREGS];
    uint64_t at_offset[T_NREGS];
} rg_seen;

static rg_seen rg_seen_a;
static rg_seen rg_seen_b;

/* Patterns are odd multiples of a large odd constant: distinct, never zero
 * and not plausible addresses, so a hit in the scan is not a coincidence. */
static uint64_t rg_pattern(unsigned who, unsigned reg)
{
    return 0x9e3779b97f4a7c15ULL * (2u * (who * 64u + reg) + 1u);
}

static void rg_fill(uint64_t *io, unsigned who)
{
    for (unsigned i = 0; i < T_NREGS; i++) {
        io[i] = rg_pattern(who, i);
        io[T_NREGS + i] = 0;
    }
}

static void rg_entry(void *arg)
{
    ctx *self = (ctx *)arg;
    uint64_t *io = self == &rg_a ? rg_io_a : rg_io_b;

    ctx_started();
    NOTE_ENTRY_ALIGNMENT();
    ctx_regs_switch(self, &g_main, io);
    for (;;)
        ctx_switch(self, &g_main);
}

/* Looks at a suspended stack the way the runtime's conservative scanner
 * will: every aligned word from the saved sp to the stack top. It reads
 * redzones and dead slots deliberately, so it is not ASan-instrumented, and
 * it reads through volatile so the compiler cannot reason about the bytes. */
static GB__NO_ASAN int scan_has(const ctx *c, uint64_t value)
{
    const volatile uint64_t *p = (const volatile uint64_t *)c->sp;
    const volatile uint64_t *end = (const volatile uint64_t *)c->top;

    for (; p < end; p++)
        if (*p == value)
            return 1;
    return 0;
}

static GB__NO_ASAN uint64_t frame_word(const ctx *c, int offset)
{
    return *(const volatile uint64_t *)((const unsigned char *)c->sp + offset);
}

static void rg_inspect(const ctx *c, const uint64_t *io, rg_seen *seen)
{
    seen->sp = (uintptr_t)c->sp;
    for (unsigned i = 0; i < T_NREGS; i++) {
        seen->found[i] = scan_has(c, io[i]);
        seen->at_offset[i] = frame_word(c, t_reg_offsets[i]);
    }
}

/* a and b load their patterns and switch back in turn, each inspected
 * while it is away; then each resumes, stores its registers as it found
 * them and parks. */
static void rg_run(void)
{
    rg_fill(rg_io_a, 1);
    rg_fill(rg_io_b, 2);
    ctx_make(&rg_a, rg_entry, &rg_a);
    ctx_make(&rg_b, rg_entry, &rg_b);
    ctx_switch(&g_main, &rg_a);
    rg_inspect(&rg_a, rg_io_a, &rg_seen_a);
    ctx_switch(&g_main, &rg_b); /* b overwrites the same registers. */
    rg_inspect(&rg_b, rg_io_b, &rg_seen_b);
    ctx_switch(&g_main, &rg_a);
    ctx_switch(&g_main, &rg_b);
    check_entries_started_aligned();
}

static void rg_done(void)
{
    ctx_free(&rg_a);
    ctx_free(&rg_b);
}

/* Counts the registers of one kind (the d registers, or the others) whose
 * value after the switch was not the one loaded before it, and names each
 * on stderr. */
static int rg_changed(const uint64_t *io, int d_registers)
{
    int changed = 0;

    for (unsigned i = 0; i < T_NREGS; i++) {
        if ((t_reg_names[i][0] == 'd') != d_registers)
            continue;
        if (io[T_NREGS + i] != io[i]) {
            fprintf(stderr, "%s was %#llx after the switch, expected %#llx\n",
                    t_reg_names[i], (unsigned long long)io[T_NREGS + i],
                    (unsigned long long)io[i]);
            changed++;
        }
    }
    return changed;
}

/* A fresh stack holds entry and arg in its fake frame, so a scan of a
 * coroutine that has not run yet already pins its argument. */
GB_TEST(a_scan_of_a_fresh_stack_finds_its_entry_and_arg)
{
    ctx_make(&rg_a, rg_entry, &rg_a);
    CHECK(scan_has(&rg_a, (uint64_t)(uintptr_t)&rg_a));
    CHECK(scan_has(&rg_a, (uint64_t)(uintptr_t)rg_entry));
    ctx_free(&rg_a);
}

/* Every byte of a new frame is set by switch_init: one built over a stack
 * full of old bytes is the one built over a fresh, zeroed stack, so a
 * conservative scan of a coroutine that has not run finds only its entry
 * and arg, never what the stack's last user left there. */
GB_TEST(a_new_frame_is_the_same_whatever_its_stack_held)
{
    ctx fresh, used;
    ctx_make(&fresh, rg_entry, &rg_a);
    ctx_make_over(&used, rg_entry, &rg_a, 0xa5);
    size_t bytes = (size_t)(fresh.top - (unsigned char *)fresh.sp);
    CHECK_EQ(bytes, (size_t)(used.top - (unsigned char *)used.sp));
    CHECK(bytes > 0);
    CHECK_EQ(memcmp(fresh.sp, used.sp, bytes), 0);
    ctx_free(&fresh);
    ctx_free(&used);
}

/* rbx, rbp and r12-r15 on x86-64; x19-x29 on arm64. */
GB_TEST(callee_saved_integer_registers_survive_a_switch_away_and_back)
{
    rg_run();
    CHECK_EQ(rg_changed(rg_io_a, 0) + rg_changed(rg_io_b, 0), 0);
    rg_done();
}

GB_TEST(d8_to_d15_survive_a_switch_away_and_back)
{
    GBT_SKIP_IF(T_X86_64, "x86-64 System V has no callee-saved vector registers; "
                          "its callee-saved FP control state has tests of its own");
    rg_run();
    CHECK_EQ(rg_changed(rg_io_a, 1) + rg_changed(rg_io_b, 1), 0);
    rg_done();
}

/* The property the runtime's pinning relies on: whatever a coroutine held
 * in a register when it switched away is in the words from its saved sp to
 * its stack top. */
GB_TEST(a_scan_of_a_suspended_stack_finds_every_saved_register)
{
    int missing = 0;

    rg_run();
    for (unsigned i = 0; i < T_NREGS; i++) {
        if (!rg_seen_a.found[i] || !rg_seen_b.found[i]) {
            fprintf(stderr, "%s value not found scanning the saved stack\n",
                    t_reg_names[i]);
            missing++;
        }
    }
    CHECK_EQ(missing, 0);
    rg_done();
}

GB_TEST(saved_registers_sit_at_the_offsets_switch_h_documents)
{
    int misplaced = 0;

    rg_run();
    for (unsigned i = 0; i < T_NREGS; i++) {
        if (rg_seen_a.at_offset[i] != rg_io_a[i] ||
            rg_seen_b.at_offset[i] != rg_io_b[i]) {
            fprintf(stderr, "%s not at its documented frame offset %d\n",
                    t_reg_names[i], t_reg_offsets[i]);
            misplaced++;
        }
    }
    CHECK_EQ(misplaced, 0);
    rg_done();
}

/* switch.h promises it, and a scanner walks the saved stack in aligned
 * 8-byte words from there. */
GB_TEST(a_suspended_context_saves_a_16_byte_aligned_sp)
{
    rg_run();
    CHECK_EQ(rg_seen_a.sp & 15, 0);
    CHECK_EQ(rg_seen_b.sp & 15, 0);
    rg_done();
}

/* Doubles kept live across a switch by ordinary compiled code: twelve of
 * them, more than the eight callee-saved d registers of arm64, so the
 * compiler keeps some in d8-d15 and spills the rest. Two contexts do this
 * with different values and interleave, each clobbering the other's. */

static ctx fp_a;
static ctx fp_b;
static int fp_bad;
static int fp_checked;
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
    /* a -> b (b starts and computes its own), b -> a, a -> b; b checks and
     * goes to main, which resumes a, which checks. */
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
    fp_checked++;
    for (;;)
        ctx_switch(self, &g_main);
}

GB_TEST(double_locals_survive_interleaved_switches)
{
    ctx_make(&fp_a, fp_entry, &fp_a);
    ctx_make(&fp_b, fp_entry, &fp_b);
    ctx_switch(&g_main, &fp_a); /* Back here from b, which has checked. */
    ctx_switch(&g_main, &fp_a); /* a, parked in its switch to b, checks. */
    CHECK_EQ(fp_checked, 2);
    CHECK_EQ(fp_bad, 0);
    check_entries_started_aligned();
    ctx_free(&fp_a);
    ctx_free(&fp_b);
}

/* Floating-point control state on x86-64: each context has its own MXCSR
 * and x87 control word, and a new context inherits its creator's control
 * bits with the status flags cleared. On arm64 the FPCR is not switched
 * (AAPCS64 makes it thread-global), so these tests skip there. */

#define T_SKIP_UNLESS_X86_64()                                               \
    GBT_SKIP_IF(!T_X86_64, "FP control state is not switched on arm64 "       \
                           "(FPCR is thread-global in AAPCS64)")

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
static double fx_third_nearest;
static double fx_third_zero;
static double fx_third_up;
static double fx_third_zero_again;
static double fx_third_up_again;

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
    fx_third_zero_again = fx_one / fx_three;
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
    fx_third_up_again = fx_one / fx_three;
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

/* a sets round-toward-zero (x87: down) and switches to b, which sets
 * round-up (x87: up) and switches back; a switches to main, and main
 * resumes b once more. Every side notes whether it found its own modes. */
static void fx_run_a_and_b(void)
{
    /* Leave the inexact flag set in main so inheritance must clear it. */
    fx_third_nearest = fx_one / fx_three;
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
}

/* c is made while main rounds down (x87: up) and started after main has
 * put its own modes back. */
static void fx_run_c(void)
{
    set_mxcsr((fx_main_mxcsr & ~MXCSR_RC_MASK) | MXCSR_RC_DOWN);
    set_x87cw((uint16_t)((fx_main_x87cw & ~X87_RC_MASK) | X87_RC_UP));
    ctx_make(&fx_c, fx_entry_c, NULL);
    set_mxcsr(fx_main_mxcsr);
    set_x87cw(fx_main_x87cw);
    ctx_switch(&g_main, &fx_c);
}

static void fx_done(void)
{
    ctx_free(&fx_a);
    ctx_free(&fx_b);
}

#endif /* __x86_64__ */

GB_TEST(mxcsr_and_x87_control_word_are_per_context_and_restored)
{
    T_SKIP_UNLESS_X86_64();
#if defined(__x86_64__)
    fx_run_a_and_b();
    CHECK_EQ(fx_leak_bad, 0);
    fx_done();
#endif
}

/* The divisions really ran under the modes each context set: 1/3 rounds
 * down to nearest, so toward zero agrees with nearest and up differs. Each
 * context divides again after it is resumed, when only the switch can have
 * put its mode back. */
GB_TEST(sse_division_follows_the_rounding_mode_of_its_own_context)
{
    T_SKIP_UNLESS_X86_64();
    GBT_SKIP_IF(T_ON_VALGRIND, "Valgrind's CPU emulation always rounds SSE "
                               "arithmetic to nearest, whatever the MXCSR says");
#if defined(__x86_64__)
    fx_run_a_and_b();
    CHECK(fx_third_up > fx_third_zero);
    CHECK(fx_third_nearest == fx_third_zero);
    CHECK(fx_third_zero_again == fx_third_zero);
    CHECK(fx_third_up_again == fx_third_up);
    fx_done();
#endif
}

/* a is made while main rounds to nearest and must start so; c is made
 * while main rounds down (x87: up) with its inexact flag set, and must
 * start with those modes and the flag clear. */
GB_TEST(a_new_context_inherits_its_creators_fp_control_with_flags_clear)
{
    T_SKIP_UNLESS_X86_64();
#if defined(__x86_64__)
    fx_run_a_and_b();
    fx_run_c();
    CHECK_EQ(fx_inherit_bad, 0);
    fx_done();
    ctx_free(&fx_c);
#endif
}

/* An entry function that returns lands in the trampoline's abort(). It runs
 * in a child process so the abort does not end the test, with core dumps
 * off because the abort is the expected outcome. */

static ctx ret_ctx;

static void ret_entry(void *arg)
{
    (void)arg;
    ctx_started();
}

static void return_from_an_entry(void)
{
    struct rlimit no_core = {0, 0};

    setrlimit(RLIMIT_CORE, &no_core);
    ctx_make(&ret_ctx, ret_entry, NULL);
    ctx_switch(&g_main, &ret_ctx);
    /* Only a trampoline that lets entry return comes back here; the child
     * then exits 0 and the test fails. */
}

GB_TEST(an_entry_that_returns_ends_in_abort)
{
    int status = gbt_in_child(return_from_an_entry);

    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGABRT);
}

/* A switch carries a value: the gb__switch (or gb__switch_hook) call that
 * suspended a context returns what the switch that resumed it passed, so a
 * resume can return a coroutine's answer without a word of shared state.
 * gb__switch_hook runs its hook on the resumed context's stack, below its
 * saved frame (so the frame, and the sp it published, are intact when the
 * hook reads them), before that context runs on. */

static ctx pass_ctx;
static uintptr_t pass_seen[3];
static void *hook_sp_seen, *hook_frame_seen;
static uintptr_t hook_word_seen;
static int hook_runs;

/* Runs on main's stack: main's saved sp is published, and its frame there
 * holds the return address of its switch. */
static GB__NO_ASAN __attribute__((noinline)) void pass_hook(void *arg)
{
    ctx *m = arg;
    hook_runs++;
    hook_sp_seen = m->sp;
    hook_frame_seen = __builtin_frame_address(0);
#if defined(__x86_64__)
    memcpy(&hook_word_seen, (char *)m->sp + GB__SWITCH_OFF_RET, sizeof hook_word_seen);
#else
    memcpy(&hook_word_seen, (char *)m->sp + GB__SWITCH_OFF_X30, sizeof hook_word_seen);
#endif
}

static void pass_entry(void *arg)
{
    (void)arg;
    ctx_started();
    void *fake = NULL;
    g_from = &pass_ctx;
    ann_start(&fake, &g_main);
    pass_seen[1] = gb__switch(&pass_ctx.sp, g_main.sp, 0x1234);
    ann_finish(fake);
    g_from = &pass_ctx;
    ann_start(&fake, &g_main);
    pass_seen[2] = gb__switch_hook(&pass_ctx.sp, g_main.sp, 0x5678, pass_hook, &g_main);
    ann_finish(fake);
    for (;;) {
        ann_start(&fake, &g_main);
        gb__switch(&pass_ctx.sp, g_main.sp, 0);
        ann_finish(fake);
    }
}

GB_TEST(a_switch_returns_the_value_the_resuming_switch_passed)
{
    void *fake = NULL;

    ctx_make(&pass_ctx, pass_entry, NULL);
    g_from = &g_main;
    ann_start(&fake, &pass_ctx);
    pass_seen[0] = gb__switch(&g_main.sp, pass_ctx.sp, 0);
    ann_finish(fake);
    CHECK_EQ(pass_seen[0], (uintptr_t)0x1234);
    g_from = &g_main;
    ann_start(&fake, &pass_ctx);
    pass_seen[0] = gb__switch(&g_main.sp, pass_ctx.sp, 0x9abc);
    ann_finish(fake);
    CHECK_EQ(pass_seen[1], (uintptr_t)0x9abc);
    /* Came back through gb__switch_hook: the hook ran once, on main's stack
     * below main's saved sp, with main's saved frame intact there. */
    CHECK_EQ(pass_seen[0], (uintptr_t)0x5678);
    CHECK_EQ(hook_runs, 1);
    CHECK((uintptr_t)hook_frame_seen < (uintptr_t)hook_sp_seen);
    CHECK(hook_sp_seen == g_main.sp);
    g_from = &g_main;
    ann_start(&fake, &pass_ctx);
    gb__switch(&g_main.sp, pass_ctx.sp, 0x4321);
    ann_finish(fake);
    CHECK_EQ(pass_seen[2], (uintptr_t)0x4321);
    CHECK(hook_word_seen != 0);
    ctx_free(&pass_ctx);
}
