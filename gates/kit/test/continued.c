/* continued.c -- a library the helper's tests preload into the checkpoint
 * helper (LD_PRELOAD, Linux): its kill() sends SIGSTOP as libc's does, waits
 * until the process is stopped, and then, as CONTINUED says:
 *   read   plays a runner that read the stop at once: writes 1 to
 *          GBGATE_STOPS_FILE (the count of stops read) and continues the
 *          process, before kill() returns: the helper never sees it stopped
 *   exit   leaves it stopped, and continues it when the helper exits: the
 *          helper sees the stop itself, and returns before anything runs on
 *   late   continues it as read does, but writes the count only 200 ms
 *          later (from a process of its own): the helper polls meanwhile
 * Every other signal, and kill() in any other process, is libc's own. With
 * CONTINUED_FORKS set, the helper's exit writes there how many processes it
 * started (fork) after the stop.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static pid_t stopped;
static pid_t stopper;
static int forks;

typedef int (*kill_fn)(pid_t, int);
typedef pid_t (*fork_fn)(void);

static fork_fn real_fork(void)
{
    static fork_fn real;
    if (real == NULL) {
        *(void **)&real = dlsym(RTLD_NEXT, "fork");
    }
    return real;
}

pid_t fork(void)
{
    pid_t pid = real_fork()();
    if (pid > 0 && stopper != 0 && getpid() == stopper) {
        forks++;
    }
    return pid;
}

static void write_count(void)
{
    const char *stops = getenv("GBGATE_STOPS_FILE");
    FILE *f = stops != NULL ? fopen(stops, "w") : NULL;
    if (f != NULL) {
        fputs("1\n", f);
        fclose(f);
    }
}

static kill_fn real_kill(void)
{
    static kill_fn real;
    if (real == NULL) {
        *(void **)&real = dlsym(RTLD_NEXT, "kill");
    }
    return real;
}

/* The state letter of PID, from /proc/PID/stat ('?' when it is gone). */
static char state_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return '?';
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' ? p[2] : '?';
}

static void pause_ms(void)
{
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
}

int kill(pid_t pid, int sig)
{
    int rc = real_kill()(pid, sig);
    const char *mode = getenv("CONTINUED");
    if (rc != 0 || sig != SIGSTOP || mode == NULL) {
        return rc;
    }
    while (state_of(pid) != 'T') {
        pause_ms();
    }
    if (strcmp(mode, "read") == 0 || strcmp(mode, "late") == 0) {
        if (strcmp(mode, "read") == 0) {
            write_count();
        } else if (real_fork()() == 0) {
            struct timespec t = {0, 200000000};
            nanosleep(&t, NULL);
            write_count();
            _exit(0);
        }
        real_kill()(pid, SIGCONT);
        while (state_of(pid) == 'T') {
            pause_ms();
        }
    } else {
        stopped = pid;
    }
    stopper = getpid();
    return rc;
}

/* The helper's own exit, not a child's it forked after the stop. */
__attribute__((destructor)) static void continue_at_exit(void)
{
    if (stopper == 0 || getpid() != stopper) {
        return;
    }
    if (stopped != 0) {
        real_kill()(stopped, SIGCONT);
    }
    const char *path = getenv("CONTINUED_FORKS");
    FILE *f = path != NULL ? fopen(path, "w") : NULL;
    if (f != NULL) {
        fprintf(f, "%d\n", forks);
        fclose(f);
    }
}
