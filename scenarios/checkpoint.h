/* checkpoint.h -- stop at a checkpoint; read the resident size from outside.
 *
 * Resident sizes are read the way a user sees them, from outside the
 * process: a program under measure (the child) prints one line,
 * "checkpoint <name>" and any figures as " key=value", flushes it and stops
 * itself with SIGSTOP; whoever runs it (the parent) reads its resident size
 * while it is stopped and then continues it with SIGCONT. The gate
 * programs, the benchmarks and gbprobe all measure this way, so both sides
 * are written here once: a child stops the same way whoever reads it, and
 * every C parent reads the same files. The bats gates are a parent too,
 * written in shell (gates/lib.bash, with ps); they parse the same line.
 *
 * One source, two builds (scenarios/CMakeLists.txt): gb_checkpoint links
 * nothing of the runtime, for gbprobe and the benchmarks' malloc peers;
 * gb_checkpoint_giveback (CHECKPOINT_GIVEBACK defined) adds the runtime's
 * own counters to every checkpoint line, for the gate programs.
 */
#ifndef GB_CHECKPOINT_H
#define GB_CHECKPOINT_H

#include <stddef.h>
#include <sys/types.h>

/* ---------------------------------------------------------- in the child */

/* Prints "checkpoint <name>", then a space and what fmt formats when fmt is
 * not NULL; in the giveback build then " held_kib=.. cached_kib=.." and,
 * where the runtime reads its own resident size, " rss_self=..
 * footprint_self=..". Ends the line, flushes stdout and stops until the
 * parent continues it. */
__attribute__((format(printf, 2, 3))) void checkpoint(const char *name, const char *fmt, ...);

/* --------------------------------------------------------- in the parent */

enum { CHECKPOINT_MAX_STOPS = 64 };

/* A child's memory as read from outside, in KiB. */
typedef struct checkpoint_mem {
    long rss_kib;       /* resident (Linux statm; macOS proc_pid_rusage; else ps) */
    long lazyfree_kib;  /* given back with MADV_FREE but still counted (Linux) */
    long hwm_kib;       /* peak resident so far (Linux VmHWM) */
    long footprint_kib; /* macOS phys_footprint; -1 elsewhere */
} checkpoint_mem;

typedef struct checkpoint_child {
    int status;                               /* exit status, or -1 if it did not exit normally */
    int stops;                                /* how many times it stopped */
    checkpoint_mem mem[CHECKPOINT_MAX_STOPS]; /* read at each stop, in order */
    char *out;                                /* everything it printed on stdout */
    size_t out_map;                           /* the size of the mapping out is in */
} checkpoint_child;

/* The memory of pid now, from outside. */
checkpoint_mem checkpoint_read(pid_t pid);

/* Runs fn(arg) in a forked child (if exe is NULL) or exe with argv (if fn is
 * NULL), reads its memory at every stop, continues it, and fills *c with
 * the readings and everything it printed on stdout. extra_env (NULL or a
 * "NAME=value" string) is set in the child only. Returns 0 when the child
 * exited with status 0. */
int checkpoint_run(checkpoint_child *c, void (*fn)(void *), void *arg, const char *exe, char *const argv[],
                   const char *extra_env);

/* The memory read at the child's checkpoint <name>; NULL when it had none. */
const checkpoint_mem *checkpoint_mem_at(const checkpoint_child *c, const char *name);

void checkpoint_child_free(checkpoint_child *c);

#endif /* GB_CHECKPOINT_H */
