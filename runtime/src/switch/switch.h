/* switch.h -- coroutine context switch, the architecture layer.
 *
 * A suspended coroutine is nothing but a stack pointer: gb__switch pushes
 * every callee-saved register of the running context onto that context's own
 * stack, publishes the resulting stack pointer, and resumes another context
 * by popping the registers that the other context pushed when it last
 * switched away. Because all saved state lives on the suspended stack below
 * its previous stack pointer, a conservative scan of the words from the saved
 * stack pointer up to the stack top sees every pointer the coroutine held,
 * whether it was in memory or in a register at the time of the switch. The
 * runtime's pinning of objects referenced from suspended stacks relies on
 * exactly this property.
 *
 * The implementations are runtime/src/switch/x86_64_sysv.S and
 * runtime/src/switch/arm64.S (each assembles to nothing on the other
 * architecture, so a build may list both) and switch_init.c. The assembly
 * symbols have hidden visibility, so they link within one module only.
 *
 * gb__switch tells no tool about the switch. Under AddressSanitizer the
 * caller must bracket it with __sanitizer_start_switch_fiber and
 * __sanitizer_finish_switch_fiber, a conservative scanner must not be
 * ASan-instrumented (it reads the redzones of live frames), and a stack that
 * is freed or reused must be unpoisoned first, because frames of a coroutine
 * that never returned keep their redzones poisoned. Under Valgrind each stack
 * must be registered with VALGRIND_STACK_REGISTER, or Memcheck reports every
 * switch as invalid stack accesses. tests/switch_test.c shows all of this.
 */
#ifndef GB_SWITCH_SWITCH_H
#define GB_SWITCH_SWITCH_H

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "giveback: gb__switch is implemented for x86-64 System V and arm64 only"
#endif

#if defined(_WIN32)
#error "giveback: gb__switch implements the System V / AAPCS64 conventions, not the Windows x64 or ARM64 ABIs"
#endif

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Saves the callee-saved registers of the running context by pushing them on
 * its own stack, stores the resulting stack pointer in *from_sp, loads to_sp,
 * pops that context's registers and returns into it, where the gb__switch
 * (or gb__switch_hook) call that suspended it returns pass. So a switch
 * carries a value, and a caller that tail-calls gb__switch makes the other
 * context return straight into its own caller with that value: no frame of
 * the switching function is left to return through.
 *
 * to_sp must be a value previously stored by gb__switch or returned by
 * gb__switch_init, and each such value may be resumed only once. from_sp may
 * point anywhere (typically into the coroutine object); it is written before
 * the other context runs. Caller-saved registers are not preserved, which is
 * what the compiler already assumes for an ordinary call. The first switch
 * into a new context ignores pass. */
uintptr_t gb__switch(void **from_sp, void *to_sp, uintptr_t pass);

/* gb__switch, which calls hook(arg) on the other context's stack, below its
 * saved frame and before its registers are restored: the work that context
 * would have done after its switch returned, done while its stack is still
 * as it was saved (its sp published in the word it was stored in). The
 * hook runs with the other context's control words, must return, and must
 * not switch. to_sp must not be a fresh context's (gb__switch_init). */
uintptr_t gb__switch_hook(void **from_sp, void *to_sp, uintptr_t pass, void (*hook)(void *),
                          void *arg);

/* Prepares a fresh stack whose highest usable address is stack_top (16-byte
 * aligned) so that the first gb__switch to the returned sp calls entry(arg) on
 * that stack with a correctly aligned frame. entry must never return (it
 * switches away for the last time instead); if it does return, the trampoline
 * calls abort().
 *
 * "Highest usable address" means the stack occupies addresses below
 * stack_top: for an mmap'd region [base, base + size), pass base + size. The
 * function writes GB__SWITCH_FRAME_BYTES bytes just below stack_top and the
 * returned sp is stack_top - GB__SWITCH_FRAME_BYTES. entry and arg are stored
 * in that fake frame, so they are visible to a conservative scan of the new
 * stack before it has ever run.
 *
 * Floating-point control state of the new context: on x86-64 the new context
 * inherits the creator's current MXCSR control bits (rounding mode, FTZ/DAZ,
 * exception masks) with the six sticky exception-status flags cleared, and the
 * creator's current x87 control word, just as a new thread inherits them from
 * the thread that created it. On arm64 the FPCR is not part of the switched
 * state (AAPCS64 makes it thread-global rather than callee-saved), so all
 * contexts of a thread share it. */
void *gb__switch_init(void *stack_top, void (*entry)(void *), void *arg);

/* The assembly entry trampoline. It is the return address of the fake frame
 * that gb__switch_init builds; it is never called from C. */
void gb__switch_trampoline(void);

#ifdef __cplusplus
}
#endif

/* Saved-frame layout.
 *
 * GB__SWITCH_FRAME_BYTES is the number of bytes gb__switch leaves on a
 * suspended stack, counted from the saved sp upwards. The saved sp itself is
 * always 16-byte aligned (provided the caller obeyed the ABI), so a scanner
 * may walk it in 8-byte words. The GB__SWITCH_OFF_* constants give the
 * offset of each saved register from the saved sp; they are used by
 * gb__switch_init to build the first frame and by the test to check that the
 * assembly matches this documentation.
 *
 * x86-64 System V (64 bytes; the return address pushed by the call into
 * gb__switch is part of the frame):
 *
 *   sp + 0   MXCSR (32 bits), then x87 control word (16 bits) at sp + 4,
 *            then 16 zero bits; the word is pushed as zero first so the
 *            padding never carries stale data.
 *   sp + 8   r15
 *   sp + 16  r14
 *   sp + 24  r13
 *   sp + 32  r12
 *   sp + 40  rbx
 *   sp + 48  rbp
 *   sp + 56  return address (rip of the suspended context)
 *
 * arm64, AAPCS64 and Apple arm64 (160 bytes; the frame begins with a frame
 * record, as an ordinary prologue would):
 *
 *   sp + 0   x29 (fp)      sp + 8   x30 (lr, where gb__switch returns to)
 *   sp + 16  x19           sp + 24  x20
 *   sp + 32  x21           sp + 40  x22
 *   sp + 48  x23           sp + 56  x24
 *   sp + 64  x25           sp + 72  x26
 *   sp + 80  x27           sp + 88  x28
 *   sp + 96  d8            sp + 104 d9
 *   sp + 112 d10           sp + 120 d11
 *   sp + 128 d12           sp + 136 d13
 *   sp + 144 d14           sp + 152 d15
 *
 * sp is saved in *from_sp rather than in the frame. x18 is not touched: it
 * is the platform register on Apple and a temporary on Linux. Only the low
 * 64 bits (d8-d15) of v8-v15 are callee-saved in AAPCS64, so only they are
 * saved.
 */
#if defined(__x86_64__)

#define GB__SWITCH_FRAME_BYTES 64
#define GB__SWITCH_OFF_MXCSR 0
#define GB__SWITCH_OFF_X87CW 4
#define GB__SWITCH_OFF_R15 8
#define GB__SWITCH_OFF_R14 16
#define GB__SWITCH_OFF_R13 24
#define GB__SWITCH_OFF_R12 32
#define GB__SWITCH_OFF_RBX 40
#define GB__SWITCH_OFF_RBP 48
#define GB__SWITCH_OFF_RET 56

#elif defined(__aarch64__)

#define GB__SWITCH_FRAME_BYTES 160
#define GB__SWITCH_OFF_X29 0
#define GB__SWITCH_OFF_X30 8
/* x19 + n for n in 0..9 (x19..x28) is at GB__SWITCH_OFF_X19 + 8 * n. */
#define GB__SWITCH_OFF_X19 16
/* d8 + n for n in 0..7 (d8..d15) is at GB__SWITCH_OFF_D8 + 8 * n. */
#define GB__SWITCH_OFF_D8 96

#endif

#endif /* GB_SWITCH_SWITCH_H */
