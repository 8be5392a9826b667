/* prog.c -- the kit's test program: every way a gate can end, on demand.
 *
 * The kit's tests (kit.bats) run it under gbgate run and gbgate matrix and
 * check that each ending is reported as it must be: memory given back is a
 * pass, memory kept is red for rss, a climb is red for growth, memory the
 * program says its runtime no longer holds is red for retained-below, a
 * crash and the guard's kills are red with their reasons. Its memory
 * comes from mmap, not malloc, so what it holds is what it asked for on
 * every system, whatever the allocator keeps.
 *
 * Usage: prog MODE [MIB [ROUNDS]]   (MIB 64, ROUNDS 3 by default)
 *   frees     each round takes MIB and gives it back, then a checkpoint
 *   keeps     each round takes MIB and keeps it (red for rss, or growth)
 *   bump      keeps MIB in round 2 only: one round grew, the rest did not
 *   retained  keeps MIB and says its runtime holds none of it, held_kib=0
 *             (red for retained-below); with a third argument HELD, says
 *             it holds HELD MiB of it, so that the judge must weigh the
 *             process's excess over what its runtime holds; with a fourth,
 *             LAZY, gives the first LAZY MiB back with MADV_FREE (Linux),
 *             still resident, which the judge must take out first
 *   lazy      gives MIB back with MADV_FREE (Linux: red for lazy-free)
 *   peak      holds MIB at checkpoint high, none at checkpoint low
 *   crash     a checkpoint, then abort()
 *   fails     a checkpoint, then exit(3)
 *   none      exits 0 without a checkpoint
 *   balloon   takes MIB after MIB and never stops (the guard's rss kill);
 *             given ROUNDS, stops after ROUNDS of them and sleeps, so that
 *             a guard that misses the size ends it for its time instead of
 *             letting it fill the machine
 *   hang      sleeps without a checkpoint (the guard's time kill)
 *   spin      runs a busy loop for ever, without a checkpoint (the
 *             guard's CPU kill)
 *   spin-child  the same busy loop in a child it forks, while it waits
 *             for the child, using no CPU itself
 *   work      the first argument is MS, not MIB: ROUNDS rounds, each
 *             a busy loop until the process has used MS ms more of CPU,
 *             then a checkpoint; a fixed amount of CPU per checkpoint
 *             interval, however loaded the machine and long it takes
 *   forked    takes MIB, forks a child that reads every page of it and
 *             waits, then a checkpoint: the pages are resident in both,
 *             shared, so that the parent's PSS is about half of them and
 *             its USS none (a runtime that forks workers)
 * Protocol breaks, each checkpoint taking and giving back MIB first (the
 * lines are printed by hand, the way a runtime whose stop is not the
 * header's would print them):
 *   lost      prints round-1 and round-2, then stops twice, then a
 *             round-3 checkpoint: the stop of round-1 landed late, after
 *             the next line (a process-directed SIGSTOP, the calling
 *             thread running on); after it the counts agree again, and
 *             a reader must still not trust the pairing
 *   unread    a round-1 checkpoint, then prints round-2 and exits without
 *             stopping there
 *   mute      a round-1 checkpoint, then stops with no line (stdout not
 *             flushed), then a round-2 checkpoint
 * Any further argument is ignored: a test names its run with one, to find
 * the run's processes with ps.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#define _DARWIN_C_SOURCE
#endif
#include "gbgate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#define MIB ((size_t)1024 * 1024)

/* MIB mebibytes, every page written, so they are resident. */
static void *take(size_t mib)
{
    void *p = mmap(NULL, mib * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("prog: mmap");
        exit(2);
    }
    memset(p, 0x5a, mib * MIB);
    return p;
}

/* The CPU time the process has used, in ms. */
static double cpu_ms(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) {
        perror("prog: clock_gettime");
        exit(2);
    }
    return (double)t.tv_sec * 1000 + (double)t.tv_nsec / 1e6;
}

static void round_checkpoint(int round)
{
    char name[32];
    snprintf(name, sizeof name, "round-%d", round);
    gbgate_checkpoint(name, "round=%d", round);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    size_t mib = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 64;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;

    if (strcmp(mode, "frees") == 0 || strcmp(mode, "keeps") == 0 || strcmp(mode, "bump") == 0) {
        for (int r = 1; r <= rounds; r++) {
            void *p = take(mib);
            int keep = mode[0] == 'k' || (mode[0] == 'b' && r == 2);
            if (!keep)
                munmap(p, mib * MIB);
            round_checkpoint(r);
        }
        return 0;
    }
    if (strcmp(mode, "peak") == 0) {
        /* High at the first checkpoint, low at the second, with a pause
         * before it in which the kit polls the low resident size. */
        void *p = take(mib);
        gbgate_checkpoint("high", NULL);
        munmap(p, mib * MIB);
        gbgate_sleep(0.5);
        gbgate_checkpoint("low", NULL);
        return 0;
    }
    if (strcmp(mode, "retained") == 0) {
        size_t held_mib = argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 0;
        size_t lazy_mib = argc > 4 ? (size_t)strtoul(argv[4], NULL, 10) : 0;
        void *p = take(mib);
        if (lazy_mib > 0) {
#if defined(MADV_FREE)
            if (madvise(p, (lazy_mib < mib ? lazy_mib : mib) * MIB, MADV_FREE) != 0) {
                perror("prog: madvise(MADV_FREE)");
                return 2;
            }
#else
            fputs("prog: no MADV_FREE here\n", stderr);
            return 2;
#endif
        }
        gbgate_checkpoint("left", "held_kib=%zu", held_mib * 1024);
        return 0;
    }
    if (strcmp(mode, "lazy") == 0) {
#if defined(MADV_FREE)
        void *p = take(mib);
        if (madvise(p, mib * MIB, MADV_FREE) != 0) {
            perror("prog: madvise(MADV_FREE)");
            return 2;
        }
        gbgate_checkpoint("left", NULL);
        return 0;
#else
        fputs("prog: no MADV_FREE here\n", stderr);
        return 2;
#endif
    }
    if (strcmp(mode, "crash") == 0 || strcmp(mode, "fails") == 0) {
        gbgate_checkpoint("before", NULL);
        if (mode[0] == 'c')
            abort();
        return 3;
    }
    if (strcmp(mode, "none") == 0)
        return 0;
    if (strcmp(mode, "balloon") == 0) {
        for (int r = 0; argc <= 3 || r < rounds; r++)
            (void)take(mib);
        for (;;)
            sleep(1);
    }
    if (strcmp(mode, "lost") == 0 || strcmp(mode, "unread") == 0 || strcmp(mode, "mute") == 0) {
        int stop = getenv(GBGATE_ENV) && strcmp(getenv(GBGATE_ENV), GBGATE_STOP) == 0;
        munmap(take(mib), mib * MIB);
        if (mode[0] == 'l') {
            printf("checkpoint round-1 round=1\ncheckpoint round-2 round=2\n");
            fflush(stdout);
            if (stop) {
                raise(SIGSTOP);
                raise(SIGSTOP);
            }
            round_checkpoint(3);
        } else if (mode[0] == 'u') {
            round_checkpoint(1);
            printf("checkpoint round-2 round=2\n");
        } else {
            round_checkpoint(1);
            if (stop)
                raise(SIGSTOP);
            round_checkpoint(2);
        }
        return 0;
    }
    if (strcmp(mode, "spin") == 0 || strcmp(mode, "spin-child") == 0) {
        if (mode[4] == '-' && fork() != 0) {
            wait(NULL);
            return 2;
        }
        for (volatile unsigned long n = 0;; n++)
            ;
    }
    if (strcmp(mode, "work") == 0) {
        for (int r = 1; r <= rounds; r++) {
            double start = cpu_ms(), now;
            volatile unsigned long n = 0;
            do {
                for (int i = 0; i < 100000; i++)
                    n++;
                now = cpu_ms();
            } while (now - start < (double)mib);
            round_checkpoint(r);
        }
        return 0;
    }
    if (strcmp(mode, "forked") == 0) {
        volatile unsigned char *p = take(mib);
        int fds[2];
        if (pipe(fds) != 0) {
            perror("prog: pipe");
            return 2;
        }
        pid_t child = fork();
        if (child < 0) {
            perror("prog: fork");
            return 2;
        }
        if (child == 0) {
            /* Every page read, so that each is mapped here as well as in
             * the parent; then the parent is told, and the child waits
             * to be killed. */
            unsigned sum = 0;
            for (size_t i = 0; i < mib * MIB; i += 4096)
                sum += p[i];
            if (write(fds[1], &sum, 1) != 1)
                _exit(2);
            for (;;)
                pause();
        }
        char c;
        if (read(fds[0], &c, 1) != 1) {
            perror("prog: read");
            return 2;
        }
        gbgate_checkpoint("shared", NULL);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return 0;
    }
    if (strcmp(mode, "hang") == 0)
        for (;;)
            sleep(1);
    fprintf(stderr, "usage: prog frees|keeps|bump|retained|lazy|crash|fails|none|balloon|hang|spin|spin-child|work|forked|lost|unread|mute [MIB [ROUNDS]]\n");
    return 2;
}
