/* replay.c -- runs fuzz inputs through the fuzz target without a fuzzer.
 *
 * The committed corpus is a regression suite: every input in it once
 * reached something new, and each must still run clean on every OS and
 * compiler, including those with no libFuzzer (gcc, Apple clang) and under
 * qemu-user. This main() stands in for the engine: it calls
 * LLVMFuzzerInitialize once, then LLVMFuzzerTestOneInput on each file named
 * on the command line, or on each file of each directory named (in sorted
 * order, so a run is reproducible). When an input fails, the harness or a
 * sanitizer stops the process; this program then names the input, so the
 * failure can be replayed alone.
 *
 * The runtime's counters come back to zero after every input, but they
 * only see what the runtime counts. REPLAY_PASSES=N runs the inputs N times
 * in this one process, and with REPLAY_MAX_GROWTH_KIB=K the process's
 * mapped address space may grow by at most K KiB from the end of the first
 * pass to the end of the last: memory kept per input that no counter sees
 * (a thread's signal stack orphaned at every thread exit was one) shows as
 * steady growth, as it would over a long fuzzing run. With
 * REPLAY_MAX_HEAP_GROWTH_KIB=H the C library's brk heap is read apart and
 * may grow by at most H KiB, K then bounding the rest: the heap holds the
 * fuzzer's own model and the runtime's malloc'd metadata, and its layout
 * moves by a few hundred KiB with the lengths of the paths it is given (a
 * step at the third pass, then flat up to the sixteenth; measured), where
 * the runtime's own mappings stay put. Linux only (it reads
 * /proc/self/statm and /proc/self/maps).
 *
 * Usage: [REPLAY_PASSES=N [REPLAY_MAX_GROWTH_KIB=K [REPLAY_MAX_HEAP_GROWTH_KIB=H]]]
 *        fuzz_runtime_replay FILE_OR_DIR...
 */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sanitizers.h"

/* Under ASan or UBSan a report ends the process without SIGABRT, so the
 * input is named from the sanitizer's death callback instead. */
#if (defined(GB__ASAN) || defined(GB__UBSAN)) && defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define REPLAY_DEATH_CALLBACK 1
#endif
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input being run, for the failure report. */
static const char *current;

static void say_which(void)
{
    if (!current)
        return;
    /* Only async-signal-safe calls: this runs from a signal handler. */
    static const char pre[] = "replay: FAILED on input ";
    ssize_t w = write(2, pre, sizeof pre - 1);
    w = write(2, current, strlen(current));
    w = write(2, "\n", 1);
    (void)w;
}

static void on_abort(int sig)
{
    say_which();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **paths;
static size_t npaths, cap;

static void add_path(const char *p)
{
    if (npaths == cap) {
        cap = cap ? cap * 2 : 64;
        paths = realloc(paths, cap * sizeof *paths);
        if (!paths) {
            perror("replay");
            exit(2);
        }
    }
    paths[npaths] = strdup(p);
    if (!paths[npaths]) {
        perror("replay");
        exit(2);
    }
    npaths++;
}

/* Adds a file, or every regular file directly in a directory (sorted). */
static void add_arg(const char *arg)
{
    struct stat st;
    if (stat(arg, &st) != 0) {
        fprintf(stderr, "replay: %s: cannot stat\n", arg);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        add_path(arg);
        return;
    }
    DIR *d = opendir(arg);
    if (!d) {
        fprintf(stderr, "replay: %s: cannot open the directory\n", arg);
        exit(2);
    }
    size_t first = npaths;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(arg) + strlen(e->d_name) + 2;
        char *p = malloc(n);
        if (!p) {
            perror("replay");
            exit(2);
        }
        snprintf(p, n, "%s/%s", arg, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            add_path(p);
        free(p);
    }
    closedir(d);
    qsort(paths + first, npaths - first, sizeof *paths, cmp_str);
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        exit(2);
    }
    size_t cap_bytes = 4096, n = 0;
    unsigned char *buf = malloc(cap_bytes);
    for (;;) {
        if (!buf) {
            perror("replay");
            exit(2);
        }
        n += fread(buf + n, 1, cap_bytes - n, f);
        if (n < cap_bytes)
            break;
        cap_bytes *= 2;
        buf = realloc(buf, cap_bytes);
    }
    fclose(f);
    *size = n;
    return buf;
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || n == 0) {
        fprintf(stderr, "replay: %s=%s: a positive whole number is needed\n", name, v);
        exit(2);
    }
    return (size_t)n;
}

/* The process's mapped address space in KiB (VmSize). */
static size_t address_space_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) {
        fprintf(stderr, "replay: cannot read /proc/self/statm: the growth check needs Linux\n");
        exit(2);
    }
    fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE) / 1024;
}

/* The size of the brk heap (the [heap] line of /proc/self/maps), in KiB;
 * 0 when there is none. */
static size_t heap_kib(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) {
        fprintf(stderr, "replay: cannot read /proc/self/maps: the growth check needs Linux\n");
        exit(2);
    }
    char line[512];
    size_t kib = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (strstr(line, "[heap]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            kib += (size_t)(hi - lo) / 1024;
    }
    fclose(f);
    return kib;
}

/* How much a reading grew from `first` to `last`, printed; false when more
 * than `most`. */
static bool grew_within(const char *what, size_t first, size_t last, size_t most, size_t passes)
{
    size_t grew = last > first ? last - first : 0;
    printf("replay: %s %zu KiB after the first pass, %zu KiB after the last: grew %zu KiB (at most %zu)\n",
           what, first, last, grew, most);
    if (grew <= most)
        return true;
    fprintf(stderr,
            "replay: FAILED: the %s grew %zu KiB over %zu passes of the same inputs, though the "
            "runtime's counters were zero after each (at most %zu KiB allowed)\n",
            what, grew, passes - 1, most);
    return false;
}

static size_t run_pass(void)
{
    size_t total = 0;
    for (size_t i = 0; i < npaths; i++) {
        size_t n;
        unsigned char *data = slurp(paths[i], &n);
        current = paths[i];
        LLVMFuzzerTestOneInput(data, n);
        current = NULL;
        total += n;
        free(data);
    }
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++)
        add_arg(argv[i]);
    if (npaths == 0) {
        fprintf(stderr, "replay: no inputs in %s\n", argv[1]);
        return 2;
    }
    signal(SIGABRT, on_abort);
#if defined(REPLAY_DEATH_CALLBACK)
    __sanitizer_set_death_callback(say_which);
#endif
    size_t passes = env_size("REPLAY_PASSES", 1);
    size_t max_growth = env_size("REPLAY_MAX_GROWTH_KIB", SIZE_MAX);
    size_t max_heap = env_size("REPLAY_MAX_HEAP_GROWTH_KIB", SIZE_MAX);
    bool apart = max_heap != SIZE_MAX;
    size_t total = run_pass();
    size_t first = max_growth != SIZE_MAX ? address_space_kib() : 0;
    size_t heap_first = apart ? heap_kib() : 0;
    for (size_t p = 1; p < passes; p++)
        run_pass();
    for (size_t i = 0; i < npaths; i++)
        free(paths[i]);
    free(paths);
    printf("replay: %zu inputs (%zu bytes) ran clean", npaths, total);
    if (passes > 1)
        printf(", %zu passes", passes);
    printf("\n");
    if (max_growth != SIZE_MAX) {
        /* Read both before printing: the heap is read apart from the rest. */
        size_t last = address_space_kib(), heap_last = apart ? heap_kib() : 0;
        bool ok = apart ? grew_within("address space but the brk heap", first - heap_first,
                                      last - heap_last, max_growth, passes)
                        : grew_within("address space", first, last, max_growth, passes);
        if (apart)
            ok = grew_within("brk heap", heap_first, heap_last, max_heap, passes) && ok;
        if (!ok)
            return 1;
    }
    return 0;
}
