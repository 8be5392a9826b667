/* reader.c -- the kit's C reader (gbgate_reader.h) on the test program.
 *
 * Runs "prog frees MIB 2" and "prog keeps MIB 2" as children, reads them
 * from outside at each checkpoint and prints one line per reading,
 * "<mode> <checkpoint> <rss_kib>", then "stops <mode> <n> status <s>", for
 * kit.bats to check: the reader must see both stops, and tell the child
 * that gave its memory back from the one that kept it.
 *
 * With MODE, runs "prog MODE MIB" once and prints the same lines for its
 * round-1 and round-2, then "protocol <what broke the pairing>" or
 * "protocol exact": the program's protocol breaks (lost, unread, mute)
 * must each be named, and no reading filed under a name it was not read
 * at. MODE settle runs "prog frees MIB" asked to settle at each
 * checkpoint (GBGATE_SETTLE_S=0.05, through the reader's extra_env), and
 * prints which stop each reading is, "settle <checkpoint> at stop <n>",
 * and each round's settled reading, "settle <checkpoint>-settled <rss_kib>
 * at stop <n>".
 *
 * Every mode checks, besides, that each reading's peak (Linux VmHWM) is
 * not below its resident size, that gbgate_child_free leaves the child
 * empty and its output unmapped, and that a run leaves no descriptor
 * open and no more than 128 KiB more mapped (Linux); it fails, saying
 * which, if not.
 *
 * MODE lazy runs "prog lazy MIB", which gives its MIB back with MADV_FREE
 * before its one checkpoint, and prints "lazy left <rss_kib> lazyfree
 * <lazyfree_kib>": the pages stay resident, and the reader must say how
 * much of the reading they are (Linux).
 *
 * With --check, reads lines from its standard input and prints for each
 * "ok" or "break <what breaks it>" (gbgate_line_check): the C reader's
 * grammar, beside the shell's (hostile.bats).
 *
 * With --fork, gates a forked child that runs a function (two
 * checkpoints, then a line it does not flush), after printing a line it
 * has not flushed yet: the reader's line must come out once, from the
 * reader, and never in what the child printed; the child's must be in
 * what it printed.
 *
 * With --run, gates PROG ARGS... and prints "protocol <what broke it>"
 * or "protocol exact", and fails if the run wrote past the child's
 * record: a line of the protocol that breaks the grammar,
 * printed by any program, must be named (hostile.bats).
 *
 * With --run-printing, prints then "printed:" and what the program
 * printed. With --run-interrupted, does so under a timer that signals the
 * reader every millisecond, with a handler that does not restart its
 * calls, and prints "ticks some" once it fired: the reader's reads end
 * early with EINTR, and must go on, losing nothing.
 *
 * With --sleep SECONDS, sleeps that long with gbgate_sleep (the settle's
 * sleep) under the same timer, and prints "slept whole" when the sleep
 * lasted at least that long: a signal must not cut it short.
 *
 * Usage: reader PROG [MIB [MODE]]
 *        reader --check < LINES
 *        reader --fork
 *        reader --run PROG [ARGS...]
 *        reader --run-printing PROG [ARGS...]
 *        reader --run-interrupted PROG [ARGS...]
 *        reader --sleep SECONDS
 */
#define _POSIX_C_SOURCE 200809L
#include "gbgate.h"
#include "gbgate_reader.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* How many descriptors the process has open (Linux: /proc/self/fd, less
 * the one that reads it); -1 elsewhere. */
static int open_fds(void)
{
#if defined(__linux__)
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own */
#else
    return -1;
#endif
}

/* The size of the process's address space in KiB (Linux VmSize); -1
 * elsewhere. */
static long mapped_kib(void)
{
    long kib = -1;
#if defined(__linux__)
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmSize:", 7) == 0)
            kib = strtol(line + 7, NULL, 10);
    fclose(f);
#endif
    return kib;
}

/* gbgate_child_free, and whether it left c empty with the mapping of what
 * the child printed gone (msync names an address that is not mapped). */
static int free_checked(gbgate_child *c)
{
    void *out = c->out;
    gbgate_child_free(c);
    if (c->out != NULL) {
        fputs("reader: gbgate_child_free left the child's output in place\n", stderr);
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (out && (msync(out, (size_t)page, MS_ASYNC) == 0 || errno != ENOMEM)) {
        fputs("reader: gbgate_child_free left the child's output mapped\n", stderr);
        return -1;
    }
    return 0;
}

static int run(const char *prog, const char *mode, const char *mib)
{
    int fds_before = open_fds();
    long mapped_before = mapped_kib();
    int settle = strcmp(mode, "settle") == 0;
    char *args[] = {(char *)prog, settle ? "frees" : (char *)mode, (char *)mib, "2", NULL};
    gbgate_child c;
    int rc = gbgate_run(&c, NULL, NULL, prog, args, settle ? "GBGATE_SETTLE_S=0.05" : NULL);
    const char *names[] = {"round-1", "round-2"};
    for (int i = 0; i < 2; i++) {
        const gbgate_mem *mem = gbgate_mem_at(&c, names[i]);
        printf("%s %s %ld\n", mode, names[i], mem ? mem->rss_kib : -1L);
#if defined(__linux__)
        /* The peak so far is read too, and is never below the reading. */
        if (mem && mem->hwm_kib < mem->rss_kib) {
            fprintf(stderr, "reader: %s %s: peak %ld KiB below the resident %ld KiB\n", mode, names[i],
                    mem->hwm_kib, mem->rss_kib);
            rc = -1;
        }
#endif
        if (settle) {
            /* Which stop each reading is, so that a reading filed under
             * the other line of its checkpoint shows. */
            printf("%s %s at stop %d\n", mode, names[i], mem ? (int)(mem - c.mem) : -1);
            mem = gbgate_mem_settled_at(&c, names[i]);
            printf("%s %s-settled %ld at stop %d\n", mode, names[i], mem ? mem->rss_kib : -1L,
                   mem ? (int)(mem - c.mem) : -1);
        }
    }
    printf("stops %s %d status %d\n", mode, c.stops, c.status);
    printf("protocol %s\n", c.protocol[0] ? c.protocol : "exact");
    if (free_checked(&c) != 0)
        rc = -1;
    if (open_fds() != fds_before) {
        fprintf(stderr, "reader: %d descriptors open before the run, %d after\n", fds_before, open_fds());
        rc = -1;
    }
    /* The buffer that held what the child printed, grown as it printed,
     * is unmapped whole: what is left is the C library's own (a stdio
     * buffer, a heap grown by a few pages). */
    long mapped_after = mapped_kib();
    if (mapped_after > mapped_before + 128) {
        fprintf(stderr, "reader: %ld KiB mapped before the run, %ld after\n", mapped_before, mapped_after);
        rc = -1;
    }
    return rc;
}

/* MODE lazy: one checkpoint, "left", after MIB given back with MADV_FREE. */
static int run_lazy(const char *prog, const char *mib)
{
    char *args[] = {(char *)prog, "lazy", (char *)mib, NULL};
    gbgate_child c;
    int rc = gbgate_run(&c, NULL, NULL, prog, args, NULL);
    const gbgate_mem *mem = gbgate_mem_at(&c, "left");
    printf("lazy left %ld lazyfree %ld\n", mem ? mem->rss_kib : -1L, mem ? mem->lazyfree_kib : -1L);
    printf("stops lazy %d status %d\n", c.stops, c.status);
    if (free_checked(&c) != 0)
        rc = -1;
    return rc;
}

static int check(void)
{
    static char line[1 << 17];
    size_t n;
    while ((n = fread(line, 1, 1, stdin)) == 1) {
        size_t len = 0;
        /* A line of any bytes, NUL included, up to its newline. */
        while (line[len] != '\n' && len + 1 < sizeof line && fread(line + len + 1, 1, 1, stdin) == 1)
            len++;
        char why[160];
        if (gbgate_line_check(line, len, why, sizeof why) == 0)
            puts("ok");
        else
            printf("break %s\n", why);
    }
    return 0;
}

static volatile sig_atomic_t ticks;

static void tick(int sig)
{
    (void)sig;
    ticks++;
}

/* Starts the timer of --run-interrupted and --sleep: SIGALRM every
 * millisecond, with a handler that does not restart the calls it
 * interrupts. */
static int every_ms(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tick;
    sigemptyset(&sa.sa_mask);
    struct itimerval ms = {{0, 1000}, {0, 1000}};
    if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &ms, NULL) != 0) {
        perror("reader: the timer");
        return -1;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* --sleep: gbgate_sleep under the timer; a lower bound on its length is
 * all that is asked, which no load can make fail. */
static int sleep_interrupted(double seconds)
{
    if (every_ms() != 0)
        return 1;
    double t0 = now_s();
    gbgate_sleep(seconds);
    double slept = now_s() - t0;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    if (slept >= seconds)
        printf("slept whole, interrupted %s\n", ticks > 0 ? "some" : "never");
    else
        printf("slept %.3f s of %g, interrupted %s\n", slept, seconds, ticks > 0 ? "some" : "never");
    return 0;
}

/* --run: gates PROG ARGS... as a child and prints what broke its
 * protocol, or "protocol exact"; printing, then "printed:" and what the
 * child printed; interrupted, under a timer whose signal interrupts the
 * reader's calls (no SA_RESTART), and "ticks some" once it fired. */
static int run_any(char **argv, int printing, int interrupted)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    if (interrupted && every_ms() != 0)
        return 1;
    /* Bytes right after the record, which no reading may reach: a child
     * with more stops than it has readings for must not write past it. */
    struct {
        gbgate_child c;
        unsigned char after[64];
    } guarded;
    memset(guarded.after, 0xa5, sizeof guarded.after);
    gbgate_child c;
    int rc = gbgate_run(&guarded.c, NULL, NULL, argv[0], argv, NULL);
    c = guarded.c;
    for (size_t i = 0; i < sizeof guarded.after; i++)
        if (guarded.after[i] != 0xa5) {
            fprintf(stderr, "reader: gbgate_run wrote past the child's record (byte %zu after it)\n", i);
            rc = -1;
            break;
        }
    printf("protocol %s\n", c.protocol[0] ? c.protocol : "exact");
    /* Past the readings the record keeps, a checkpoint has none: with
     * prog's rounds (round-N), the last kept and the first beyond. */
    if (c.stops > GBGATE_MAX_STOPS && !c.protocol[0]) {
        char kept[32], beyond[32];
        snprintf(kept, sizeof kept, "round-%d", GBGATE_MAX_STOPS);
        snprintf(beyond, sizeof beyond, "round-%d", GBGATE_MAX_STOPS + 1);
        if (!gbgate_mem_at(&c, kept) || gbgate_mem_at(&c, beyond)) {
            fprintf(stderr, "reader: %s has %s reading, %s has %s\n", kept, gbgate_mem_at(&c, kept) ? "a" : "no",
                    beyond, gbgate_mem_at(&c, beyond) ? "one" : "none");
            rc = -1;
        }
    }
    if (interrupted) {
        setitimer(ITIMER_REAL, &off, NULL);
        printf("ticks %s\n", ticks > 0 ? "some" : "none");
    }
    if (printing)
        printf("printed:\n%s", c.out ? c.out : "");
    if (free_checked(&c) != 0)
        rc = -1;
    return rc == 0 ? 0 : 1;
}

/* --fork: a child forked to run a function, which makes two checkpoints,
 * after the reader printed a line it has not flushed: the line must be
 * printed once (the child inherits the reader's buffers). */
static void two_rounds(void *arg)
{
    (void)arg;
    gbgate_checkpoint("round-1", NULL);
    gbgate_checkpoint("round-2", NULL);
    printf("printed after the rounds, not flushed\n");
}

static int run_forked(void)
{
    printf("printed before the fork\n");
    gbgate_child c;
    int rc = gbgate_run(&c, two_rounds, NULL, NULL, NULL, NULL);
    /* The child's stdout is the reader's pipe: what it inherited unflushed
     * would land there, among its own lines. */
    if (c.out && strstr(c.out, "printed before the fork")) {
        fputs("reader: the forked child printed again what the reader had not flushed\n", stderr);
        rc = -1;
    }
    /* What the function printed last is flushed before the child ends. */
    if (!c.out || !strstr(c.out, "printed after the rounds, not flushed")) {
        fputs("reader: what the forked child printed last was lost\n", stderr);
        rc = -1;
    }
    printf("stops forked %d status %d\n", c.stops, c.status);
    printf("protocol %s\n", c.protocol[0] ? c.protocol : "exact");
    if (free_checked(&c) != 0)
        rc = -1;
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--fork") == 0)
        return run_forked();
    if (argc == 2 && strcmp(argv[1], "--check") == 0)
        return check();
    if (argc > 2 && strcmp(argv[1], "--run") == 0)
        return run_any(argv + 2, 0, 0);
    if (argc > 2 && strcmp(argv[1], "--run-printing") == 0)
        return run_any(argv + 2, 1, 0);
    if (argc > 2 && strcmp(argv[1], "--run-interrupted") == 0)
        return run_any(argv + 2, 1, 1);
    if (argc == 3 && strcmp(argv[1], "--sleep") == 0)
        return sleep_interrupted(strtod(argv[2], NULL));
    if (argc < 2) {
        fputs("usage: reader PROG [MIB [MODE]]\n", stderr);
        return 2;
    }
    const char *mib = argc > 2 ? argv[2] : "64";
    if (argc > 3 && strcmp(argv[3], "lazy") == 0)
        return run_lazy(argv[1], mib) == 0 ? 0 : 1;
    if (argc > 3)
        return run(argv[1], argv[3], mib) == 0 ? 0 : 1;
    const char *modes[] = {"frees", "keeps"};
    for (int m = 0; m < 2; m++)
        if (run(argv[1], modes[m], mib) != 0)
            return 1;
    return 0;
}
