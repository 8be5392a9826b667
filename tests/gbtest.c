/* gbtest.c -- the test runner behind gbtest.h. */
#include "gbtest.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static gbt_case *cases;

#if GBT_COVERAGE
/* Under gcov (the coverage pass of ci/mutants.sh) the counts are written
 * when the process exits. abort, _exit and exec write them first in every
 * program that pass links (ci/mutants/cc-coverage), so that a death test's
 * lines do not read as lines no test executes; a SIGABRT raised otherwise
 * is caught here. */
void __gcov_dump(void);

static void dump_and_die(int sig)
{
    __gcov_dump();
    signal(sig, SIG_DFL);
    raise(sig);
}
#endif

void gbt_register(gbt_case *c)
{
    c->next = cases;
    cases = c;
}

void gbt_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

int gbt_in_child(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        fn();
        fflush(NULL);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        exit(1);
    }
    return status;
}

int gbt_in_child_capturing(void (*fn)(void), char *out, size_t size)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(1);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn();
        fflush(NULL);
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < size && (n = read(fds[0], out + len, size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return status;
}

void gbt_expect_death(void (*fn)(void), const char *message)
{
    char out[4096];
    int status = gbt_in_child_capturing(fn, out, sizeof out);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
        fprintf(stderr, "expected the child to abort, it %s %d; its stderr:\n%s\n",
                WIFSIGNALED(status) ? "died of signal" : "exited with",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
        exit(1);
    }
    if (!strstr(out, message)) {
        fprintf(stderr, "the child aborted, but its message lacks \"%s\"; it said:\n%s\n", message, out);
        exit(1);
    }
    fprintf(stderr, "died as expected: %s", out);
}

int main(int argc, char **argv)
{
#if GBT_COVERAGE
    signal(SIGABRT, dump_and_die);
#endif
    if (argc != 2) {
        fprintf(stderr, "usage: %s <test>; tests:\n", argv[0]);
        for (gbt_case *c = cases; c; c = c->next)
            fprintf(stderr, "  %s\n", c->name);
        return 2;
    }
    for (gbt_case *c = cases; c; c = c->next) {
        if (strcmp(c->name, argv[1]) == 0) {
            c->fn();
            printf("ok %s\n", c->name);
            return 0;
        }
    }
    fprintf(stderr, "no test named %s\n", argv[1]);
    return 2;
}
