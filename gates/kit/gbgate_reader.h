/* gbgate_reader.h -- the kit's reader in C: run a child, read it from
 * outside at every checkpoint.
 *
 * The other side of gbgate.h, for programs that measure children of their
 * own (benchmarks, probes) rather than being gated by gbgate run: the
 * child stops itself at each gbgate_checkpoint(), and the parent reads
 * its memory while it is stopped from the files ps and top read (Linux
 * /proc/<pid>/statm, with LazyFree and VmHWM beside it; macOS
 * proc_pid_rusage, which also gives phys_footprint; elsewhere ps itself),
 * then continues it. The shell reader (gbgate.bash) reads the same line
 * the same way; the protocol is written down in gbgate.h.
 *
 * Compile gbgate_reader.c with the program (C99 or later; POSIX). The
 * parent sets GBGATE=stop in its own environment at its first
 * gbgate_run(), so that every child (forked or executed) stops at its
 * checkpoints without allocating anything of its own to learn it.
 */
#ifndef GBGATE_READER_H
#define GBGATE_READER_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { GBGATE_MAX_STOPS = 64 };

/* A child's memory as read from outside, in KiB. */
typedef struct gbgate_mem {
    long rss_kib;       /* resident (Linux statm; macOS proc_pid_rusage; else ps) */
    long lazyfree_kib;  /* given back with MADV_FREE but still counted (Linux) */
    long hwm_kib;       /* peak resident so far (Linux VmHWM) */
    long footprint_kib; /* macOS phys_footprint; -1 elsewhere */
} gbgate_mem;

typedef struct gbgate_child {
    int status;                          /* exit status, or -1 if it did not exit normally */
    int stops;                           /* how many times it stopped */
    /* Empty when every stop came after exactly one new checkpoint line and
     * every line was read while the child was stopped there; otherwise
     * what broke the pairing (the first break), and the readings cannot be
     * matched to their names. A checkpoint's lines are its "checkpoint"
     * line and, when the child settles, its "settled" line, each with its
     * own stop. */
    char protocol[192];
    int paired;                          /* the stops read before that break: the readings named */
    gbgate_mem mem[GBGATE_MAX_STOPS];    /* read at each stop, in order */
    char *out;                           /* everything it printed on stdout */
    size_t out_map;                      /* the size of the mapping out is in */
} gbgate_child;

/* The memory of pid now, from outside. */
gbgate_mem gbgate_read(pid_t pid);

/* Checks the line l of len bytes (no newline) that begins with a word of
 * the protocol against its grammar (README.md, "The protocol"): 0 when it
 * keeps it, else -1 with what breaks it in why (size bytes). A reader
 * stops trusting a child at the first line that breaks it (protocol). */
int gbgate_line_check(const char *l, size_t len, char *why, size_t size);

/* Runs fn(arg) in a forked child (if exe is NULL) or exe with argv (if fn
 * is NULL), reads its memory at every stop, continues it, and fills *c
 * with the readings and everything it printed on stdout. extra_env (NULL
 * or a "NAME=value" string) is set in the child only; an executed child
 * also gets GBGATE_PID (its own pid) and GBGATE_STOPS_FILE (the stops
 * read so far), for a checkpoint made by the helper process `gbgate
 * checkpoint`. The child settles at its checkpoints only when extra_env
 * is "GBGATE_SETTLE_S=<seconds>": GBGATE_SETTLE_S in the caller's own
 * environment (a reader gated by gbgate run --settle) is not passed on.
 * Returns 0 when the child exited with status 0 and kept to the protocol
 * (c->protocol empty). */
int gbgate_run(gbgate_child *c, void (*fn)(void *), void *arg, const char *exe, char *const argv[],
               const char *extra_env);

/* The memory read at the child's checkpoint <name>; NULL when it had none,
 * or when the pairing of lines and stops broke before it. */
const gbgate_mem *gbgate_mem_at(const gbgate_child *c, const char *name);

/* The same, read again once the child settled at <name> (its "settled"
 * line; extra_env above); NULL when it did not settle there. */
const gbgate_mem *gbgate_mem_settled_at(const gbgate_child *c, const char *name);

void gbgate_child_free(gbgate_child *c);

#ifdef __cplusplus
}
#endif

#endif /* GBGATE_READER_H */
