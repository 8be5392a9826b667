/* gbgate_reader.c -- the kit's reader in C (gbgate_reader.h).
 *
 * The parent never trusts a child's own view of its memory: it reads it
 * while the child is stopped, which is what a user would see at that
 * moment. The child's stdout comes back on a pipe that is drained while it
 * runs, so a chatty child cannot block on a full pipe while the parent
 * waits for it to stop.
 *
 * A forked child starts with a copy of the parent's malloc heap, and what
 * it measures can depend on that heap's holes: a small allocation the
 * child keeps from its peak lands in a hole instead of on top of the heap,
 * and glibc's ratchet no longer shows (gbprobe's 256 KB and 1 MB rows lost
 * it while this buffer came from malloc and was freed after each child).
 * So the parent keeps what a child printed in a mapping of its own, and
 * running a child leaves the parent's heap as it was; and GBGATE=stop is
 * set once, in the parent, before its first child, rather than in each
 * child, where setenv would allocate.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#if defined(__APPLE__) && !defined(_DARWIN_C_SOURCE)
#define _DARWIN_C_SOURCE
#endif
#include "gbgate_reader.h"

#include "gbgate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <libproc.h>
#include <sys/resource.h>
#endif

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#if defined(__linux__)
static long field_kib(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    size_t n = strlen(key);
    long v = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) {
            v = strtol(line + n, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}
#endif

gbgate_mem gbgate_read(pid_t pid)
{
    gbgate_mem m = {0, 0, 0, -1};
#if defined(__linux__)
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "r");
    if (f) {
        long size, resident;
        if (fscanf(f, "%ld %ld", &size, &resident) == 2)
            m.rss_kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    m.lazyfree_kib = field_kib(path, "LazyFree:");
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    m.hwm_kib = field_kib(path, "VmHWM:");
#elif defined(__APPLE__)
    struct rusage_info_v2 ri;
    if (proc_pid_rusage(pid, RUSAGE_INFO_V2, (rusage_info_t *)&ri) == 0) {
        m.rss_kib = (long)(ri.ri_resident_size / 1024);
        m.footprint_kib = (long)(ri.ri_phys_footprint / 1024);
    }
#else
    /* Elsewhere: what ps says. */
    char cmd[64];
    snprintf(cmd, sizeof cmd, "ps -o rss= -p %d", (int)pid);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%ld", &m.rss_kib) != 1)
            m.rss_kib = 0;
        pclose(p);
    }
#endif
    return m;
}

typedef struct buffer {
    char *p;
    size_t len, cap;
} buffer;

/* Grows the buffer by mapping a larger one (not from malloc: see above). */
static void grow(buffer *b)
{
    size_t cap = b->cap ? b->cap * 2 : 16384;
    char *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("gbgate: mmap");
        exit(1);
    }
    if (b->p) {
        memcpy(p, b->p, b->len);
        munmap(b->p, b->cap);
    }
    b->p = p;
    b->cap = cap;
}

static void drain(int fd, buffer *b)
{
    for (;;) {
        if (b->cap - b->len < 4096)
            grow(b);
        ssize_t n = read(fd, b->p + b->len, b->cap - b->len - 1);
        if (n > 0) {
            /* A NUL the child printed is kept as \001, so that what it
             * printed is one string whose every line is seen (and a line
             * of the protocol with one breaks its grammar, as it does for
             * the shell's reader). */
            for (char *p = b->p + b->len, *e = p + n; (p = memchr(p, '\0', (size_t)(e - p))) != NULL; p++)
                *p = '\001';
            b->len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break;
    }
    b->p[b->len] = '\0';
}

/* The line after l, or NULL after the last. */
static const char *line_after(const char *l)
{
    const char *nl = strchr(l, '\n');
    return nl ? nl + 1 : NULL;
}

/* The word a line of the protocol starts with: a checkpoint's own line
 * (0), or its settled line (1), printed after the settle when the child
 * settles (gbgate.h); -1 for any other line. Each comes with one stop.
 * The words are reserved: a line that begins with one, followed by a
 * blank or alone, is the protocol's, and must keep its grammar
 * (gbgate_line_check). */
static const char *const kinds[] = {GBGATE_PREFIX " ", "settled "};

static int kind_of(const char *l)
{
    for (int k = 0; k < 2; k++) {
        size_t w = strlen(kinds[k]) - 1;
        if (strncmp(l, kinds[k], w) == 0 && strchr(" \t\n", l[w]))
            return k;
    }
    return -1;
}

/* The figures a reader reads itself: unsigned decimal numbers. */
static const char *const figures[] = {"held_kib", "footprint_kib"};

static int is_word_char(char ch, int key)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           (!key && (ch == '.' || ch == '-'));
}

int gbgate_line_check(const char *l, size_t len, char *why, size_t size)
{
#define BREAK(...) return (snprintf(why, size, __VA_ARGS__), -1)
    if (len > 4096)
        BREAK("it is %zu bytes long, more than the 4096 a line may be", len);
    for (size_t i = 0; i < len; i++)
        if (l[i] < ' ' || l[i] > '~')
            BREAK("byte %zu is not printable ASCII (a tab, a control character, NUL or a byte of another encoding)",
                  i + 1);
    size_t at = l[0] == 'c' ? strlen(GBGATE_PREFIX) : strlen("settled");
    if (at >= len)
        BREAK("it names no checkpoint");
    for (size_t i = at; i + 1 < len; i++)
        if (l[i] == ' ' && l[i + 1] == ' ')
            BREAK("it has two spaces together: fields are separated by one space");
    if (l[len - 1] == ' ')
        BREAK("it has a space at its end: fields are separated by one space");
    /* The name: from after the word's space to the next space. */
    size_t name = at + 1, end = name;
    while (end < len && l[end] != ' ')
        end++;
    if (end == name || end - name > 64)
        BREAK("its name is not 1 to 64 letters, digits, \".\", \"_\" and \"-\"");
    for (size_t i = name; i < end; i++)
        if (!is_word_char(l[i], 0))
            BREAK("its name is not 1 to 64 letters, digits, \".\", \"_\" and \"-\"");
    /* KEY=VALUE fields, each key once. */
    for (size_t f = end; f < len;) {
        size_t k = f + 1, e = k, eq = 0;
        while (e < len && l[e] != ' ') {
            if (!eq && l[e] == '=')
                eq = e;
            e++;
        }
        if (!eq)
            BREAK("the field at byte %zu is not KEY=VALUE", k + 1);
        if (eq == k || eq - k > 64 || (l[k] >= '0' && l[k] <= '9'))
            BREAK("the key at byte %zu is not a letter or \"_\" followed by letters, digits and \"_\" (at most 64)",
                  k + 1);
        for (size_t i = k; i < eq; i++)
            if (!is_word_char(l[i], 1))
                BREAK("the key at byte %zu is not a letter or \"_\" followed by letters, digits and \"_\" (at most "
                      "64)",
                      k + 1);
        for (size_t g = end; g < f; g++)
            if (l[g] == ' ' && strncmp(l + g + 1, l + k, eq - k + 1) == 0)
                BREAK("the key at byte %zu is given twice", k + 1);
        if (e - eq - 1 > 256)
            BREAK("the value at byte %zu is %zu bytes long, more than 256", eq + 2, e - eq - 1);
        for (size_t n = 0; n < sizeof figures / sizeof *figures; n++) {
            if (strlen(figures[n]) != eq - k || strncmp(l + k, figures[n], eq - k) != 0)
                continue;
            size_t digits = 0, frac = 0, dot = 0;
            for (size_t i = eq + 1; i < e; i++) {
                if (l[i] == '.' && !dot)
                    dot = 1;
                else if (l[i] >= '0' && l[i] <= '9')
                    dot ? frac++ : digits++;
                else
                    digits = 99;
            }
            if (digits == 0 || digits > 15 || (dot && frac == 0))
                BREAK("%s at byte %zu is not an unsigned decimal number of at most 15 digits (KiB; a fraction "
                      "is rounded)",
                      figures[n], k + 1);
        }
        f = e;
    }
    return 0;
#undef BREAK
}

/* The first line of the protocol from l on (l may be NULL), or NULL. */
static const char *checkpoint_line(const char *l)
{
    for (; l && *l; l = line_after(l))
        if (kind_of(l) >= 0)
            return l;
    return NULL;
}

/* How many lines of the protocol the child has printed so far. */
static int lines_printed(const buffer *b)
{
    int n = 0;
    for (const char *l = checkpoint_line(b->p); l; l = checkpoint_line(line_after(l)))
        n++;
    return n;
}

/* The first break of the pairing is kept; the readings after it cannot be
 * matched to names, so one message is the whole story. */
static void protocol_break(gbgate_child *c, const char *fmt, int a, int b)
{
    if (!c->protocol[0])
        snprintf(c->protocol, sizeof c->protocol, fmt, a, b);
}

/* The n-th line of the protocol in b (1 for the first), or NULL. */
static const char *nth_line(const buffer *b, int n)
{
    const char *l = checkpoint_line(b->p);
    while (l && --n > 0)
        l = checkpoint_line(line_after(l));
    return l;
}

/* Checks the line of stop n against the grammar: a break otherwise. */
static void check_line(gbgate_child *c, const buffer *b, int n)
{
    const char *l = nth_line(b, n);
    const char *nl = l ? strchr(l, '\n') : NULL;
    char why[128];
    if (l && gbgate_line_check(l, nl ? (size_t)(nl - l) : strlen(l), why, sizeof why) != 0 && !c->protocol[0])
        snprintf(c->protocol, sizeof c->protocol, "the line of stop %d breaks the protocol's grammar: %s", n, why);
}

int gbgate_run(gbgate_child *c, void (*fn)(void *), void *arg, const char *exe, char *const argv[],
               const char *extra_env)
{
    memset(c, 0, sizeof *c);
    c->status = -1;
    /* Every child inherits it: a forked one reads it at its first
     * checkpoint, an executed one with its environment. */
    if (gbgate_mode() != 2 && setenv(GBGATE_ENV, GBGATE_STOP, 1) != 0) {
        perror("gbgate: setenv");
        exit(1);
    }
    int fds[2];
    if (pipe(fds) != 0) {
        perror("gbgate: pipe");
        exit(1);
    }
    /* What the parent printed but has not flushed would be printed twice. */
    fflush(stdout);
    fflush(stderr);
    /* The runner's count of stops read, for a checkpoint made by a helper
     * process (gbgate checkpoint): the helper takes a higher count as the
     * proof that its stop happened, when the parent read and continued
     * the child between two of its polls. */
    char stops_path[4096];
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > sizeof stops_path - 32)
        tmp = "/tmp";
    snprintf(stops_path, sizeof stops_path, "%s/gbgate-stops-XXXXXX", tmp);
    int stops_fd = fn ? -1 : mkstemp(stops_path);
    static char stops_env[sizeof "GBGATE_STOPS_FILE=" + sizeof stops_path];
    if (stops_fd >= 0) {
        /* The child reads the file by its name: the program it runs is
         * given no descriptor of the reader's. */
        (void)fcntl(stops_fd, F_SETFD, FD_CLOEXEC);
        snprintf(stops_env, sizeof stops_env, "GBGATE_STOPS_FILE=%s", stops_path);
        (void)write(stops_fd, "0\n", 2);
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("gbgate: fork");
        exit(1);
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        /* A reader run under gbgate run --settle has GBGATE_SETTLE_S; its
         * children settle only when its caller asks (extra_env), never
         * because the reader itself is gated. */
        if (unsetenv(GBGATE_SETTLE_ENV) != 0 || (extra_env && putenv((char *)extra_env) != 0))
            _exit(126);
        if (!fn) {
            /* Only before an exec: a forked child's heap is left as the
             * parent's was (see above). */
            static char pid_env[32];
            snprintf(pid_env, sizeof pid_env, "GBGATE_PID=%d", (int)getpid());
            if (putenv(pid_env) != 0 || (stops_fd >= 0 && putenv(stops_env) != 0))
                _exit(126);
        }
        if (fn) {
            fn(arg);
            fflush(stdout);
            _exit(0);
        }
        execv(exe, argv);
        fprintf(stderr, "gbgate: cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    buffer b = {0};
    for (;;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        (void)poll(&p, 1, 5);
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG | WUNTRACED);
        /* After the wait, never before: a child that stopped flushed its
         * line first, so all of it is in the pipe now; one that runs has
         * its output taken, so that a full pipe never blocks it. */
        drain(fds[0], &b);
        if (w == 0)
            continue;
        if (w < 0) {
            /* WNOHANG never blocks, so no signal interrupts it (EINTR). */
            perror("gbgate: waitpid");
            exit(1);
        }
        if (WIFSTOPPED(st)) {
            if (c->stops < GBGATE_MAX_STOPS)
                c->mem[c->stops] = gbgate_read(pid);
            c->stops++;
            int n = lines_printed(&b);
            if (n > c->stops)
                protocol_break(c,
                               "at stop %d it had printed %d checkpoint lines: a stop lost or late "
                               "(a SIGSTOP sent to the process, not the thread?)",
                               c->stops, n);
            else if (n < c->stops)
                protocol_break(c, "stop %d came with no new checkpoint line (%d printed; stdout not flushed?)",
                               c->stops, n);
            else
                check_line(c, &b, c->stops);
            if (!c->protocol[0])
                c->paired = c->stops;
            if (stops_fd >= 0) {
                char count[24];
                int len = snprintf(count, sizeof count, "%d\n", c->stops);
                (void)ftruncate(stops_fd, 0);
                (void)pwrite(stops_fd, count, (size_t)len, 0);
            }
            kill(pid, SIGCONT);
            continue;
        }
        c->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        break;
    }
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) & ~O_NONBLOCK);
    drain(fds[0], &b);
    close(fds[0]);
    if (stops_fd >= 0) {
        close(stops_fd);
        unlink(stops_path);
    }
    int n = lines_printed(&b);
    if (n > c->stops)
        protocol_break(c, "%d checkpoint lines printed, %d read while stopped there: a line printed and never read",
                       n, c->stops);
    c->out = b.p;
    c->out_map = b.cap;
    return c->status == 0 && !c->protocol[0] ? 0 : -1;
}

/* The reading at the first line of kind `kind` for checkpoint name. */
static const gbgate_mem *mem_at(const gbgate_child *c, const char *name, int kind)
{
    size_t n = strlen(name), prefix = strlen(kinds[kind]);
    int k = 0;
    for (const char *l = checkpoint_line(c->out); l; l = checkpoint_line(line_after(l)), k++)
        /* The name ends the line or is followed by its figures. */
        if (kind_of(l) == kind && strncmp(l + prefix, name, n) == 0 && strchr(" \n", l[prefix + n]))
            return k < c->paired && k < GBGATE_MAX_STOPS ? &c->mem[k] : NULL;
    return NULL;
}

const gbgate_mem *gbgate_mem_at(const gbgate_child *c, const char *name)
{
    return mem_at(c, name, 0);
}

const gbgate_mem *gbgate_mem_settled_at(const gbgate_child *c, const char *name)
{
    return mem_at(c, name, 1);
}

void gbgate_child_free(gbgate_child *c)
{
    if (c->out)
        munmap(c->out, c->out_map);
    c->out = NULL;
}
