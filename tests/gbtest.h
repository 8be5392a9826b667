/* gbtest.h -- the little the tests need beyond ctest: registration, checks
 * that say what differed, and death tests in a child process.
 *
 * Each test file holds several tests; ctest runs each in its own process as
 * `<binary> <test name>` (CMake reads the names from GB_TEST lines), so one
 * failing or crashing test never hides another.
 */
#ifndef GBTEST_H
#define GBTEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Which sanitizers are on is said once, in the runtime's sanitizers.h
 * (GB__ASAN, GB__TSAN, GB__UBSAN), for the tests as for the runtime. */
#include "sanitizers.h"

/* GBT_SANITIZED is 1 in builds under ASan or TSan, whose malloc is not
 * the C library's and whose shadow memory fills the address space. */
#if defined(GB__ASAN) || defined(GB__TSAN)
#define GBT_SANITIZED 1
#else
#define GBT_SANITIZED 0
#endif

/* What ASan keeps resident for `bytes` of memory the runtime poisoned,
 * and 0 in other builds: the runtime poisons a block it caches, and the
 * shadow pages that writes (an eighth of the block) stay resident after
 * the block is unmapped, so a resident-size cap on a region that went
 * through the cache takes them in: they are ASan's, not the runtime's. */
#if defined(GB__ASAN)
#define GBT_ASAN_SHADOW(bytes) ((bytes) / 8)
#else
#define GBT_ASAN_SHADOW(bytes) 0
#endif

/* GBT_TSAN is 1 under ThreadSanitizer, which counts every coroutine (a
 * fiber) as a thread and allows 8,128 at once in gcc 12's runtime. */
#if defined(GB__TSAN)
#define GBT_TSAN 1
#else
#define GBT_TSAN 0
#endif

/* True when the test runs under an emulator (qemu-user), whose own memory
 * is in the resident size the OS reports. */
#define GBT_EMULATED (getenv("GBT_EMULATED") != NULL)

/* Ends the test as skipped (ctest shows it as such, never as passed). */
#define GBT_SKIP_IF(cond, why)                                               \
    do {                                                                     \
        if (cond) {                                                          \
            fprintf(stderr, "skipped: %s\n", why);                          \
            exit(77);                                                        \
        }                                                                    \
    } while (0)

typedef struct gbt_case {
    const char *name;
    void (*fn)(void);
    struct gbt_case *next;
} gbt_case;

void gbt_register(gbt_case *c);
void gbt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

#define GB_TEST(name)                                                        \
    static void name(void);                                                  \
    static gbt_case gbt_case_##name = {#name, name, NULL};                   \
    __attribute__((constructor)) static void gbt_reg_##name(void)            \
    {                                                                        \
        gbt_register(&gbt_case_##name);                                      \
    }                                                                        \
    static void name(void)

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond))                                                         \
            gbt_fail(__FILE__, __LINE__, "check failed: %s", #cond);        \
    } while (0)

/* Compares two unsigned integers and prints both on failure. */
#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        uintmax_t gbt_a = (uintmax_t)(a), gbt_b = (uintmax_t)(b);            \
        if (gbt_a != gbt_b)                                                  \
            gbt_fail(__FILE__, __LINE__, "%s == %s: %ju != %ju", #a, #b,     \
                     gbt_a, gbt_b);                                          \
    } while (0)

#define CHECK_LT(a, b)                                                       \
    do {                                                                     \
        uintmax_t gbt_a = (uintmax_t)(a), gbt_b = (uintmax_t)(b);            \
        if (!(gbt_a < gbt_b))                                                \
            gbt_fail(__FILE__, __LINE__, "%s < %s: %ju >= %ju", #a, #b,      \
                     gbt_a, gbt_b);                                          \
    } while (0)

/* Runs fn in a child process and checks that it aborted (SIGABRT) with a
 * line on stderr that contains `message`. */
void gbt_expect_death(void (*fn)(void), const char *message);

/* Runs fn in a child process and returns its exit status as waitpid gives it
 * (fn returning means exit 0); its stderr goes to the test's stderr. */
int gbt_in_child(void (*fn)(void));

/* Like gbt_in_child, with the child's stderr read into out (size bytes at
 * most, NUL-terminated). */
int gbt_in_child_capturing(void (*fn)(void), char *out, size_t size);

#endif
