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
 * open; it fails, saying which, if not.
 *
 * With --check, reads lines from its standard input and prints for each
 * "ok" or "break <what breaks it>" (gbgate_line_check): the C reader's
 * grammar, beside the shell's (hostile.bats).
 *
 * With --fork, gates a forked child that runs a function (two
 * checkpoints), after printing a line it has not flushed yet: the line
 * must come out once, from the reader, and never in what the child
 * printed.
 *
 * With --run, gates PROG ARGS... and prints "protocol <what broke it>"
 * or "protocol exact": a line of the protocol that breaks the grammar,
 * printed by any program, must be named (hostile.bats).
 *
 * Usage: reader PROG [MIB [MODE]]
 *        reader --check < LINES
 *        reader --fork
 *        reader --run PROG [ARGS...]
 */
#define _POSIX_C_SOURCE 200809L
#include "gbgate.h"
#include "gbgate_reader.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* --run: gates PROG ARGS... as a child and prints what broke its
 * protocol, or "protocol exact". */
static int run_any(char **argv)
{
    gbgate_child c;
    int rc = gbgate_run(&c, NULL, NULL, argv[0], argv, NULL);
    printf("protocol %s\n", c.protocol[0] ? c.protocol : "exact");
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
        return run_any(argv + 2);
    if (argc < 2) {
        fputs("usage: reader PROG [MIB [MODE]]\n", stderr);
        return 2;
    }
    const char *mib = argc > 2 ? argv[2] : "64";
    if (argc > 3)
        return run(argv[1], argv[3], mib) == 0 ? 0 : 1;
    const char *modes[] = {"frees", "keeps"};
    for (int m = 0; m < 2; m++)
        if (run(argv[1], modes[m], mib) != 0)
            return 1;
    return 0;
}
