/* settle.c -- the kit's test program for --settle: memory a runtime gives
 * back on a thread of its own, after the call that freed it returns.
 *
 * Usage: settle MODE [MIB [DELAY_MS [HELD_KIB]]]   (MIB 64, DELAY_MS 50)
 * With HELD_KIB its checkpoint reports held_kib=HELD_KIB, what a runtime
 * would say it holds.
 *   late    takes MIB, then a checkpoint "freed"; a background thread
 *           gives the MIB back DELAY_MS after the program is first
 *           continued (it waits for SIGCONT, so no reading taken while
 *           the program is stopped there can see it gone): high right
 *           after, low once settled
 *   keeps   takes MIB and never gives it back; checkpoint "freed"
 *   goes-on late, and once continued from its checkpoint it runs on for
 *           three seconds (its next work) before it exits: a reading
 *           taken while it runs on sees the memory gone
 *   ends    goes-on, but it ends one second after it is continued: memory
 *           given back shortly before the program ends, inside the window
 *           the runner reads on in
 *   once    late's memory, and a checkpoint of its own that ignores
 *           GBGATE_SETTLE_S (prints the line, stops once): a runtime that
 *           never settles
 * Its memory comes from mmap, so what it gives back leaves the process.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#define _DARWIN_C_SOURCE
#endif
#include "gbgate.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#define MIB ((size_t)1024 * 1024)

static void *region;
static size_t region_size;
static long delay_ms = 50;
/* A pipe, not a semaphore: macOS has no unnamed ones, and write() is
 * safe in a signal handler. */
static int continued[2];

static void on_cont(int sig)
{
    char c = 1;
    (void)sig;
    if (write(continued[1], &c, 1) < 0) {
        /* Nothing to do in a handler: the thread then never frees. */
    }
}

static void *give_back_late(void *arg)
{
    char c;
    (void)arg;
    if (read(continued[0], &c, 1) != 1)
        return NULL;
    usleep((useconds_t)(delay_ms * 1000));
    munmap(region, region_size);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    size_t mib = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 64;
    if (argc > 3)
        delay_ms = atol(argv[3]);
    if (strcmp(mode, "late") != 0 && strcmp(mode, "keeps") != 0 && strcmp(mode, "once") != 0 &&
        strcmp(mode, "goes-on") != 0 && strcmp(mode, "ends") != 0) {
        fprintf(stderr, "usage: settle late|goes-on|ends|keeps|once [MIB [DELAY_MS [HELD_KIB]]]\n");
        return 2;
    }
    region_size = mib * MIB;
    region = mmap(NULL, region_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {
        perror("settle: mmap");
        return 2;
    }
    memset(region, 0x5a, region_size);
    if (mode[0] != 'k') {
        pthread_t t;
        struct sigaction sa;
        if (pipe(continued) != 0) {
            perror("settle: pipe");
            return 2;
        }
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_cont;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(SIGCONT, &sa, NULL);
        if (pthread_create(&t, NULL, give_back_late, NULL) != 0) {
            fputs("settle: pthread_create failed\n", stderr);
            return 2;
        }
    }
    if (mode[0] == 'o') {
        int stop = getenv(GBGATE_ENV) && strcmp(getenv(GBGATE_ENV), GBGATE_STOP) == 0;
        printf("checkpoint freed\n");
        fflush(stdout);
        if (stop)
            raise(SIGSTOP);
        return 0;
    }
    if (argc > 4)
        gbgate_checkpoint("freed", "mib=%zu held_kib=%ld", mib, atol(argv[4]));
    else
        gbgate_checkpoint("freed", "mib=%zu", mib);
    if (mode[0] == 'g')
        sleep(3);
    if (mode[0] == 'e')
        sleep(1);
    return 0;
}
