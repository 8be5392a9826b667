/* gbgate.h -- a checkpoint for any program, for the gate kit (gates/kit).
 *
 * A gate reads a program's resident size from outside the process, the
 * way a user sees it with ps, at the moments the program names. The
 * program marks those moments with gbgate_checkpoint(): it prints one line
 * on stdout,
 *
 *     checkpoint <name> [key=value ...]
 *
 * flushes it, and stops itself with SIGSTOP; the runner (gbgate run, a
 * bats gate through gate.bash, or the C reader gbgate_reader.h) reads the
 * stopped process's memory and continues it with SIGCONT. Stopping is what
 * makes the reading exact: nothing moves between the line and the reading.
 *
 * The runners check that pairing: at the n-th stop the program must have
 * printed exactly n checkpoint lines, and every line it printed must have
 * been read while it was stopped there. raise() sends the stop to the
 * calling thread, so that thread prints nothing more before the whole
 * process stops; a runtime that stops itself its own way must do the same
 * (a kill(getpid(), SIGSTOP) may land on another thread while the caller
 * prints its next line: red for "protocol").
 *
 * Settling: a runtime may give memory back on threads of its own after
 * the call that freed it returns, and the stop freezes them too. Under
 * gbgate run --settle SECONDS the runner exports GBGATE_SETTLE_S; then the
 * checkpoint, once continued, sleeps that long in the calling thread
 * while the others run, prints "settled <name> [figures]" (the kit's and
 * GBGATE_FIGURES, read again) and stops again for the settled reading.
 * Fractions of a second are slept where the C library declares nanosleep
 * (POSIX.1b; not under a strict -std=c99 without _POSIX_C_SOURCE, where
 * they are rounded up to whole seconds).
 *
 * The checkpoint only stops when a runner asked for it, so checkpoints can
 * stay in a runtime's own tests. The runner sets the environment variable
 * GBGATE (read at every checkpoint):
 *
 *     GBGATE=stop    print the line and stop (what every runner sets);
 *     GBGATE=print   print the line and go on (to see the checkpoints);
 *     unset, or any other value: do nothing at all.
 *
 * Figures: what fmt formats (printf-style, NULL for none) follows the
 * name, then the kit's own figures that only the process can read, then
 * the program's own (GBGATE_FIGURES, below). Keys are words of letters,
 * digits and '_'; values have no spaces. The kit adds, on macOS only,
 *
 *     footprint_kib=<n>   task_info's phys_footprint, in KiB: what macOS
 *                         charges the process (pages given back lazily do
 *                         not count), which no tool on a CI runner reads
 *                         from outside.
 *
 * Keys a runner reads when the program prints them: held_kib (what the
 * program's runtime says it holds, in KiB: with it, a reading over the cap
 * is red for "retained-below" when the process holds more than the cap
 * beyond held_kib, as when a runtime that holds nothing, held_kib=0, sits
 * in a process over its cap: memory the runtime gave back and something
 * under it kept), footprint_kib (above). Any other key is carried to the
 * runner's output as it is.
 *
 * A program adds its own figures to every checkpoint by defining, before
 * including this header, GBGATE_FIGURES as the name of a function
 * "void fn(FILE *out)" that prints " key=value" pairs (each with its
 * leading space) to out. Everything is static inline: include the header
 * in as many files as needed; nothing to link. C99 or later, or C++.
 */
#ifndef GBGATE_H
#define GBGATE_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <mach/mach.h>
#endif

/* The environment variable a runner sets, and its values. */
#define GBGATE_ENV "GBGATE"
#define GBGATE_STOP "stop"
#define GBGATE_PRINT "print"

/* The line's first word. */
#define GBGATE_PREFIX "checkpoint"

#if defined(__GNUC__) || defined(__clang__)
#define GBGATE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GBGATE_PRINTF(f, a)
#endif

/* What a checkpoint does here: 0 nothing, 1 print, 2 print and stop. */
static inline int gbgate_mode(void)
{
    /* Read every time rather than cached: a static cache would be one per
     * file that includes the header, and getenv is cheap beside a stop. */
    const char *v = getenv(GBGATE_ENV);
    if (!v)
        return 0;
    if (strcmp(v, GBGATE_STOP) == 0)
        return 2;
    if (strcmp(v, GBGATE_PRINT) == 0)
        return 1;
    return 0;
}

/* The figures only the process can read, each as " key=value". */
static inline void gbgate_self_figures(FILE *out)
{
#if defined(__APPLE__)
    task_vm_info_data_t info;
    mach_msg_type_number_t count = TASK_VM_INFO_COUNT;
    if (task_info(mach_task_self(), TASK_VM_INFO, (task_info_t)&info, &count) == KERN_SUCCESS)
        fprintf(out, " footprint_kib=%llu", (unsigned long long)(info.phys_footprint / 1024));
#else
    (void)out;
#endif
}

/* The environment variable of --settle: seconds to settle after a stop. */
#define GBGATE_SETTLE_ENV "GBGATE_SETTLE_S"

/* Sleeps SECONDS in the calling thread, the rest of the process running. */
static inline void gbgate_sleep(double seconds)
{
#if defined(__APPLE__) || defined(__USE_POSIX199309) || (defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 199309L)
    struct timespec t;
    t.tv_sec = (time_t)seconds;
    t.tv_nsec = (long)((seconds - (double)t.tv_sec) * 1e9);
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
#else
    unsigned whole = (unsigned)seconds;
    if ((double)whole < seconds)
        whole++;
    while (whole > 0)
        whole = sleep(whole);
#endif
}

/* The settle the runner asked for, in seconds; 0 for none. */
static inline double gbgate_settle_s(void)
{
    const char *v = getenv(GBGATE_SETTLE_ENV);
    double s = v ? strtod(v, NULL) : 0.0;
    return s > 0.0 ? s : 0.0;
}

/* The figures every line carries, then its end, flushed. */
static inline void gbgate_line_end(void)
{
    gbgate_self_figures(stdout);
#if defined(GBGATE_FIGURES)
    GBGATE_FIGURES(stdout);
#endif
    putchar('\n');
    fflush(stdout);
}

/* gbgate_checkpoint with a va_list. */
GBGATE_PRINTF(2, 0) static inline void gbgate_checkpointv(const char *name, const char *fmt, va_list ap)
{
    int mode = gbgate_mode();
    if (mode == 0)
        return;
    /* What the program printed before goes out first, so the checkpoint
     * line leaves in one write at the flush below: a runner that reads the
     * output while the program runs never sees half of it. */
    fflush(stdout);
    printf(GBGATE_PREFIX " %s", name);
    if (fmt && *fmt) {
        putchar(' ');
        vprintf(fmt, ap);
    }
    gbgate_line_end();
    if (mode == 2) {
        double settle = gbgate_settle_s();
        raise(SIGSTOP);
        if (settle > 0.0) {
            gbgate_sleep(settle);
            printf("settled %s", name);
            gbgate_line_end();
            raise(SIGSTOP);
        }
    }
}

/* Prints "checkpoint <name> [figures]" and, under a runner, stops until it
 * is continued. fmt formats the program's figures for this checkpoint
 * ("key=value ..."), or is NULL. */
GBGATE_PRINTF(2, 3) static inline void gbgate_checkpoint(const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gbgate_checkpointv(name, fmt, ap);
    va_end(ap);
}

#endif /* GBGATE_H */
