/* switch_init.c -- builds the first saved frame of a new context.
 *
 * gb__switch_init writes, just below the stack top, a frame that looks
 * exactly like one gb__switch would have pushed, so that the first switch to
 * the new context needs no special case in the assembly: the popped
 * callee-saved registers carry entry and arg, and the popped return address
 * is gb__switch_trampoline, which calls entry(arg). This file is part of the
 * architecture layer; its frame offsets come from switch.h.
 */
#include "switch.h"

#include <stdint.h>
#include <string.h>

/* Frame slots are written with memcpy so that no alignment or aliasing
 * assumption is made about the caller's stack memory. */
static void gb__switch_put(unsigned char *frame, int off, uint64_t value)
{
    memcpy(frame + off, &value, sizeof value);
}

void *gb__switch_init(void *stack_top, void (*entry)(void *), void *arg)
{
    unsigned char *frame = (unsigned char *)stack_top - GB__SWITCH_FRAME_BYTES;

    /* Every slot the switch restores is defined, and unused callee-saved
     * registers start as zero rather than as whatever the memory held, so a
     * conservative scan of a new stack finds nothing but entry and arg. */
    memset(frame, 0, GB__SWITCH_FRAME_BYTES);

#if defined(__x86_64__)
    {
        uint32_t mxcsr;
        uint16_t x87cw;

        /* The new context inherits the creator's control settings, as a new
         * thread would. The sticky exception flags (bits 0-5) are status,
         * not control, and start clear. */
        __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
        __asm__ volatile("fnstcw %0" : "=m"(x87cw));
        mxcsr &= ~(uint32_t)0x3f;

        memcpy(frame + GB__SWITCH_OFF_MXCSR, &mxcsr, sizeof mxcsr);
        memcpy(frame + GB__SWITCH_OFF_X87CW, &x87cw, sizeof x87cw);
        /* rbp = 0 (already zeroed) ends frame-pointer backtraces here. */
        gb__switch_put(frame, GB__SWITCH_OFF_R12, (uint64_t)(uintptr_t)entry);
        gb__switch_put(frame, GB__SWITCH_OFF_R13, (uint64_t)(uintptr_t)arg);
        gb__switch_put(frame, GB__SWITCH_OFF_RET,
                       (uint64_t)(uintptr_t)&gb__switch_trampoline);
    }
#elif defined(__aarch64__)
    /* x29 = 0 (already zeroed) ends frame-record backtraces here. */
    gb__switch_put(frame, GB__SWITCH_OFF_X30,
                   (uint64_t)(uintptr_t)&gb__switch_trampoline);
    gb__switch_put(frame, GB__SWITCH_OFF_X19, (uint64_t)(uintptr_t)entry);
    gb__switch_put(frame, GB__SWITCH_OFF_X19 + 8, (uint64_t)(uintptr_t)arg);
#endif

    return frame;
}
