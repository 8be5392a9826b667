/* error.c -- how the runtime stops.
 *
 * Misuse (leaving a region that is not innermost, a size that overflows)
 * and exhaustion are not returned as codes that a caller could drop: the
 * process stops with one line on stderr that names the mistake, and abort()
 * leaves a core and a stack for the debugger.
 */
#include "base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

void gb__die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* What the program printed before the mistake is kept: under a pipe
     * or a test runner, stdout is fully buffered and abort() drops it. */
    fflush(stdout);
    fprintf(stderr, "giveback: %s\n", msg);
    fflush(stderr);
    abort();
}

size_t gb__add(size_t a, size_t b, const char *what)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r))
        gb__die("%s: size overflows (%zu + %zu)", what, a, b);
    return r;
}

size_t gb__mul(size_t a, size_t b, const char *what)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        gb__die("%s: size overflows (%zu * %zu)", what, a, b);
    return r;
}

#if GB_CHECK
/* The file a path names, from "runtime/" on when it has that part: what
 * a developer greps for, without the directory it was built in. */
static const char *short_path(const char *file)
{
    const char *p = strstr(file, "runtime/");
    return p ? p : file;
}

void gb__assert_fail(const char *file, int line, const char *func, const char *expr)
{
    gb__die("assertion failed: %s:%d: %s: %s", short_path(file), line, func, expr);
}

void gb__invariant_broken(const char *file, int line, const char *checker, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gb__die("invariant broken: %s (%s, %s:%d)", msg, checker, short_path(file), line);
}
#endif

void gb__copy_out(const char *what, void *out, size_t size, const void *full, size_t full_size, size_t least)
{
    if (size < least)
        gb__die("%s: a struct of %zu bytes is smaller than the %zu of its first ABI "
                "(call through the macro, or pass sizeof of the struct)",
                what, size, least);
    size_t n = size < full_size ? size : full_size;
    memcpy(out, full, n);
    if (size > n)
        memset((char *)out + n, 0, size - n);
}
