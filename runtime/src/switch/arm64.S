/* arm64.S -- gb__switch and the entry trampoline for arm64 (AAPCS64 on
 * Linux and the Apple arm64 ABI).
 *
 * gb__switch stores the callee-saved registers x19-x30 and d8-d15 in a
 * 160-byte frame below the current sp, stores sp in *from_sp, loads to_sp and
 * reloads the other context's registers from the frame it left there. The
 * frame layout is documented in switch.h and must stay in sync with the
 * GB__SWITCH_OFF_* constants there. x18 is never touched, because Apple
 * reserves it as the platform register. The file assembles to nothing (apart
 * from ELF notes) on other architectures, so a build may list it
 * unconditionally.
 *
 * There are no CFI directives: nothing needs to unwind through a switch, and
 * an unwinder that finds no FDE for the trampoline stops there. Frame-record
 * walkers stop too, because gb__switch_init starts every context with
 * x29 = 0.
 *
 * Branch protection: when the compiler builds with BTI by default
 * (-mbranch-protection=bti or standard), both functions begin with a BTI C
 * landing pad (hint #34, a no-op on cores without BTI) and the object
 * carries the GNU property note that says so; otherwise linking this object
 * would silently turn BTI off for the whole binary. gb__switch is reachable
 * by indirect calls; the trampoline is only reached by ret, which BTI does
 * not check, so its pad is merely harmless. Return addresses are saved
 * unsigned: gb__switch never signs x30, and the values it saves are either
 * return addresses into its callers, which authenticate their own signed
 * copies, or the trampoline address written by gb__switch_init.
 */

#if defined(__aarch64__)

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define GB_BTI_C hint #34
#else
#define GB_BTI_C
#endif

/* The symbols are global so that C code in other objects can call them, but
 * hidden (private_extern on Apple) so that a shared build of the runtime does
 * not export them, matching the hidden visibility of the runtime's C code.
 * Apple's arm64 assembler separates statements with %% (";" starts a
 * comment there). */
#if defined(__APPLE__)
#define GB_FUNC_BEGIN(name) \
	.globl _##name %% \
	.private_extern _##name %% \
	.p2align 2 %% \
	_##name:
#define GB_FUNC_END(name)
#define GB_ABORT _abort
#else
#define GB_FUNC_BEGIN(name) \
	.globl name; \
	.hidden name; \
	.type name, %function; \
	.p2align 2; \
	name:
#define GB_FUNC_END(name) .size name, . - name
#define GB_ABORT abort
#endif

	.text

/* The saving half of both switches: the callee-saved registers in the
 * frame of switch.h, sp stored in *from_sp (x0) and to_sp (x1) loaded. */
.macro GB_SAVE_AND_LOAD
	sub	sp, sp, #160
	stp	x29, x30, [sp, #0]
	stp	x19, x20, [sp, #16]
	stp	x21, x22, [sp, #32]
	stp	x23, x24, [sp, #48]
	stp	x25, x26, [sp, #64]
	stp	x27, x28, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mov	x9, sp
	str	x9, [x0]
	mov	sp, x1
.endm

/* The restoring half: reloads the other context's registers and returns
 * into it with x0 = x2 (the value passed). */
.macro GB_LOAD_AND_RETURN
	ldp	x29, x30, [sp, #0]
	ldp	x19, x20, [sp, #16]
	ldp	x21, x22, [sp, #32]
	ldp	x23, x24, [sp, #48]
	ldp	x25, x26, [sp, #64]
	ldp	x27, x28, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #160
	mov	x0, x2
	ret
.endm

/* uintptr_t gb__switch(void **from_sp, void *to_sp, uintptr_t pass)
 * x0 = from_sp, x1 = to_sp, x2 = pass. sp is always 16-byte aligned on
 * arm64, and the frame is a multiple of 16 bytes, so the saved sp is aligned
 * too. */
GB_FUNC_BEGIN(gb__switch)
	GB_BTI_C
	GB_SAVE_AND_LOAD
	GB_LOAD_AND_RETURN
GB_FUNC_END(gb__switch)

/* uintptr_t gb__switch_hook(void **from_sp, void *to_sp, uintptr_t pass,
 *                           void (*hook)(void *), void *arg)
 * x0..x4. The switch of gb__switch, which calls hook(arg) on the other
 * context's stack, below its saved frame, before reloading that context's
 * registers. sp is the saved sp there, 16-byte aligned. pass waits in x19,
 * which the hook preserves and which is reloaded from the frame afterwards;
 * x30 is reloaded from the frame too. */
GB_FUNC_BEGIN(gb__switch_hook)
	GB_BTI_C
	GB_SAVE_AND_LOAD
	mov	x19, x2
	mov	x0, x4
	blr	x3
	mov	x2, x19
	GB_LOAD_AND_RETURN
GB_FUNC_END(gb__switch_hook)

/* Entered by the ret of the first gb__switch into a new context, with
 * sp == stack_top, x19 = entry and x20 = arg as laid out by
 * gb__switch_init, and x29 = 0 so that frame-record walks end here. */
GB_FUNC_BEGIN(gb__switch_trampoline)
	GB_BTI_C
	mov	x0, x20
	blr	x19
	/* entry must not return; if it does, there is no caller to go back to. */
	bl	GB_ABORT
	brk	#0x1
GB_FUNC_END(gb__switch_trampoline)

#endif /* __aarch64__ */

#if defined(__ELF__)
/* Mark the stack non-executable. This is emitted even when the file is
 * otherwise empty, because an ELF object without the note makes the linker
 * assume that the whole program needs an executable stack. */
	.section .note.GNU-stack, "", %progbits

#if defined(__aarch64__) && defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
/* GNU_PROPERTY_AARCH64_FEATURE_1_AND (0xc0000000) with the BTI bit (1): every
 * indirect branch target in this file has a landing pad. The PAC bit is not
 * claimed because the saved return addresses are not signed. */
	.pushsection .note.gnu.property, "a"
	.p2align 3
	.word	4		/* n_namesz: "GNU" plus NUL */
	.word	16		/* n_descsz */
	.word	5		/* n_type: NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.word	0xc0000000	/* pr_type */
	.word	4		/* pr_datasz */
	.word	1		/* pr_data: GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
	.word	0		/* padding to 8 bytes */
	.popsection
#endif
#endif
