/* x86_64_sysv.S -- gb__switch and the entry trampoline for x86-64 System V.
 *
 * gb__switch pushes the callee-saved state of the System V ABI (rbx, rbp,
 * r12-r15, the MXCSR and the x87 control word) on the current stack, stores
 * rsp in *from_sp, loads to_sp and pops the other context's state in reverse.
 * The frame layout is documented in switch.h and must stay in sync with the
 * GB__SWITCH_OFF_* constants there. The file assembles to nothing but ELF
 * notes on other architectures, so a build may list it unconditionally.
 *
 * There are no CFI directives: nothing needs to unwind through a switch, and
 * an unwinder that finds no FDE for the trampoline simply stops there, which
 * is the desired end of a coroutine's backtrace. Frame-pointer walkers stop
 * too, because gb__switch_init starts every context with rbp = 0.
 *
 * There is no GNU property note for CET either, so linking this object turns
 * off IBT and shadow-stack marking for the whole binary. That is deliberate:
 * returning into a different stack is incompatible with a hardware shadow
 * stack.
 */

#if defined(__x86_64__)

/* The symbols are global so that C code in other objects can call them, but
 * hidden (private_extern on Apple) so that a shared build of the runtime does
 * not export them, matching the hidden visibility of the runtime's C code. */
#if defined(__APPLE__)
#define GB_FUNC_BEGIN(name) \
	.globl _##name; \
	.private_extern _##name; \
	.p2align 4; \
	_##name:
#define GB_FUNC_END(name)
#define GB_ABORT _abort
#else
#define GB_FUNC_BEGIN(name) \
	.globl name; \
	.hidden name; \
	.type name, @function; \
	.p2align 4; \
	name:
#define GB_FUNC_END(name) .size name, . - name
/* Through the PLT so that the object also links into a shared library. */
#define GB_ABORT abort@PLT
#endif

	.text

/* The saving half of both switches: pushes the callee-saved registers and
 * the two control words, the frame of switch.h. */
.macro GB_SAVE
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	/* Push a zero word and store the MXCSR in its low half and the x87
	 * control word above it, so the two padding bytes are always zero.
	 * No immediate operand in these macros: Apple's assembler reads $0 to
	 * $9 in a macro's body as the macro's arguments. rax is caller-saved
	 * and carries no argument here. */
	xorl	%eax, %eax
	pushq	%rax
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
.endm

/* The restoring half: pops the other context's registers and jumps to its
 * return address with rax = rdx (the value passed). Not ret: the
 * return-address predictor expects a return to this context's caller and is
 * wrong on every switch; an indirect jump is predicted from its own history,
 * which for coroutines that alternate is right (a raw round trip here: 30 ns
 * with ret, 16 without). rcx is caller-saved, free to use. */
.macro GB_POP_AND_JUMP
	leaq	8(%rsp), %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	movq	%rdx, %rax
	popq	%rcx
	jmpq	*%rcx
.endm

/* uintptr_t gb__switch(void **from_sp, void *to_sp, uintptr_t pass)
 * rdi = from_sp, rsi = to_sp, rdx = pass. On entry rsp is 8 mod 16 (the call
 * pushed the return address), so after seven 8-byte pushes the saved sp is
 * 16-byte aligned. */
GB_FUNC_BEGIN(gb__switch)
	GB_SAVE
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	/* Both control words are loaded whatever they are, as Boost.Context
	 * does: restoring only those that differ read them back right after
	 * stmxcsr and fnstcw stored them, and those loads wait for the stores
	 * (a bare round trip measured 15-21 ns that way against 14-17 ns
	 * loading both, and fcontext's 12-17 ns, in the same runs). */
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	GB_POP_AND_JUMP
GB_FUNC_END(gb__switch)

/* uintptr_t gb__switch_hook(void **from_sp, void *to_sp, uintptr_t pass,
 *                           void (*hook)(void *), void *arg)
 * rdi, rsi, rdx, rcx, r8. The switch of gb__switch, which calls hook(arg) on
 * the other context's stack, below its saved frame, before restoring that
 * context's registers. rsp is the saved sp there, 16-byte aligned, so the
 * call is aligned. pass waits in rbx, which the hook preserves and which
 * is restored from the frame afterwards. */
GB_FUNC_BEGIN(gb__switch_hook)
	GB_SAVE
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	movq	%rdx, %rbx
	movq	%r8, %rdi
	callq	*%rcx
	movq	%rbx, %rdx
	GB_POP_AND_JUMP
GB_FUNC_END(gb__switch_hook)

/* Entered by the ret of the first gb__switch into a new context, with
 * rsp == stack_top (16-byte aligned), r12 = entry and r13 = arg as laid out
 * by gb__switch_init. A call needs rsp to be 0 mod 16 at the call
 * instruction, which it already is. */
GB_FUNC_BEGIN(gb__switch_trampoline)
	movq	%r13, %rdi
	callq	*%r12
	/* entry must not return; if it does, there is no caller to go back to. */
	callq	GB_ABORT
	ud2
GB_FUNC_END(gb__switch_trampoline)

#endif /* __x86_64__ */

/* Mark the stack non-executable. This is emitted even when the file is
 * otherwise empty, because an ELF object without the note makes the linker
 * assume that the whole program needs an executable stack. */
#if defined(__ELF__)
	.section .note.GNU-stack, "", %progbits

/* When this file is assembled for arm64 with BTI on by default it holds no
 * code, but it still becomes an object in the link, and an object without
 * the BTI property note would make the linker drop BTI for the whole binary.
 * So it carries the same note as arm64.S. */
#if defined(__aarch64__) && defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
	.pushsection .note.gnu.property, "a"
	.p2align 3
	.word	4		/* n_namesz: "GNU" plus NUL */
	.word	16		/* n_descsz */
	.word	5		/* n_type: NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.word	0xc0000000	/* pr_type: GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.word	4		/* pr_datasz */
	.word	1		/* pr_data: GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
	.word	0		/* padding to 8 bytes */
	.popsection
#endif
#endif
