/* base.h -- what every file of the runtime uses: compiler hints, sizes,
 * and how the runtime stops.
 *
 * Misuse and exhaustion are never returned as codes a caller could drop:
 * the process stops with one line that names the mistake (error.c). The
 * size arithmetic that could overflow on a caller's numbers goes through
 * the checked forms here, which stop the same way.
 */
#ifndef GB_BASE_H
#define GB_BASE_H

#include "giveback.h"

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

/* The lowest word the pin scans take for a pointer (pin.c, fix/retry.c).
 * No OS maps the first page, so a word below it cannot point into a block;
 * skipping such words (zeros, small integers, flags) keeps the scans and
 * the stack summaries short. 4096 is the smallest page of any supported
 * OS, not this machine's page size, so it holds on 16 KiB pages too. */
#define GB__LOWEST_POINTER ((uintptr_t)4096)

/* Prints "giveback: <message>" and aborts (error.c). */
GB__NORETURN GB__PRINTF(1, 2) void gb__die(const char *fmt, ...);

/* Overflow-checked arithmetic that stops the process naming `what`
 * (error.c). */
size_t gb__add(size_t a, size_t b, const char *what);
size_t gb__mul(size_t a, size_t b, const char *what);

/* The ABI's copy-out (giveback.h, "The ABI"): copies the first `size`
 * bytes of the full struct at `full` (`full_size` bytes, this library's
 * layout) to `out`, the caller's struct of `size` bytes, and zeroes what
 * the caller has past it (a newer caller's fields). Stops, naming `what`,
 * when size is below `least`, the size of the struct when its ABI began:
 * no caller's struct is smaller (error.c). */
void gb__copy_out(const char *what, void *out, size_t size, const void *full, size_t full_size, size_t least);

/* ------------------------------------------------------------- checks
 *
 * GB_CHECK (CMake's option of that name) says how much of the runtime's
 * invariants a build checks while it runs:
 *   0  nothing: the shipped Release and RelWithDebInfo libraries;
 *   1  GB__ASSERT, at the places where an invariant is established or
 *      relied on, each a few loads and compares; and the checkers of
 *      check.h, which only the fuzzer and the tests call;
 *   2  besides, GB__CHECK_AT: the checkers called at the modules'
 *      boundaries (after a leave, a reset, a cache push or pop, a slab's
 *      change, an index's change, a coroutine's freeze, a thread's exit),
 *      each bounded by the state it walks: the default of Debug builds,
 *      so that every debug test runs with them.
 * A failed check stops the process through gb__die, naming the file and
 * line, the function and the invariant: where it broke, not where it
 * showed. */
#ifndef GB_CHECK
#define GB_CHECK 0
#endif

#if GB_CHECK
/* Stops the process: "giveback: assertion failed: file:line: func: expr"
 * (error.c, the bottom of the runtime, so that every layer may assert). */
GB__NORETURN void gb__assert_fail(const char *file, int line, const char *func, const char *expr);
#define GB__ASSERT(cond)                                                                             \
    (GB__LIKELY(cond) ? (void)0 : gb__assert_fail(__FILE__, __LINE__, __func__, #cond))
#else
/* The condition is never evaluated, but its names are used, and used in
 * code that is evaluated as far as the compiler is concerned: clang warns
 * of a function named only under sizeof (-Wunneeded-internal-declaration),
 * and a helper that only assertions call is such a function. */
#define GB__ASSERT(cond) ((void)(0 && (cond)))
#endif

#if GB_CHECK
/* Stops the process: "giveback: invariant broken: <message> (checker,
 * file:line)" (error.c). The checkers' one way out, wherever they live. */
GB__NORETURN GB__PRINTF(4, 5) void gb__invariant_broken(const char *file, int line, const char *checker,
                                                          const char *fmt, ...);
/* In a checker: stops naming the invariant (the message, with the numbers
 * that break it) unless cond holds. */
#define GB__EXPECT(cond, ...)                                                                        \
    do {                                                                                             \
        if (GB__UNLIKELY(!(cond)))                                                                   \
            gb__invariant_broken(__FILE__, __LINE__, __func__, __VA_ARGS__);                         \
    } while (0)
#endif

#if GB_CHECK >= 2
#define GB__CHECK_AT(call) (call)
#else
#define GB__CHECK_AT(call) ((void)0)
#endif

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

#endif /* GB_BASE_H */
