/* gcov-flush.c -- linked into every program and library of ci/mutants.sh's
 * coverage pass (cc-coverage), with the linker told to send these calls
 * here first. gcov writes a process's counts when it returns from main or
 * calls exit; a child that execs, leaves by _exit or dies by abort never
 * gets there, so the lines a forked child runs before exec, and those a
 * death test runs before it stops, counted as run by no test. Each wrapper
 * writes the counts of the module it is linked into, then does the call. */
#include <unistd.h>

void __gcov_dump(void);
void __gcov_reset(void);

void __real__exit(int status) __attribute__((noreturn));
void __real__Exit(int status) __attribute__((noreturn));
void __real_abort(void) __attribute__((noreturn));
int __real_execv(const char *path, char *const argv[]);
int __real_execve(const char *path, char *const argv[], char *const envp[]);
int __real_execvp(const char *file, char *const argv[]);

void __wrap__exit(int status) __attribute__((noreturn));
void __wrap__Exit(int status) __attribute__((noreturn));
void __wrap_abort(void) __attribute__((noreturn));
int __wrap_execv(const char *path, char *const argv[]);
int __wrap_execve(const char *path, char *const argv[], char *const envp[]);
int __wrap_execvp(const char *file, char *const argv[]);

void __wrap__exit(int status)
{
    __gcov_dump();
    __real__exit(status);
}

void __wrap__Exit(int status)
{
    __gcov_dump();
    __real__Exit(status);
}

void __wrap_abort(void)
{
    __gcov_dump();
    __real_abort();
}

/* A failed exec returns to a program whose counts were written, and gcov
 * writes a process's counts once: they are cleared and the mark taken off,
 * so that what it runs next is written at its end (gcov adds each write to
 * the file's counts). */
int __wrap_execv(const char *path, char *const argv[])
{
    __gcov_dump();
    int r = __real_execv(path, argv);
    __gcov_reset();
    return r;
}

int __wrap_execve(const char *path, char *const argv[], char *const envp[])
{
    __gcov_dump();
    int r = __real_execve(path, argv, envp);
    __gcov_reset();
    return r;
}

int __wrap_execvp(const char *file, char *const argv[])
{
    __gcov_dump();
    int r = __real_execvp(file, argv);
    __gcov_reset();
    return r;
}
