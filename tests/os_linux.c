/* os_linux.c -- what the Linux OS layer reads from the kernel, taken from
 * files the test writes.
 *
 * The runtime's limits and page sizes come from /proc and /sys, whose
 * contents this machine fixes: the default map count, one THP mode. Each
 * reader takes its file's path (os/linux.h), so the test hands it every
 * form the kernel prints and the broken ones, and checks the value the
 * runtime would take. The layer is built here without the runtime, as the
 * switch is in switch_test.c.
 */
#include "gbtest.h"
#include "os/linux.h"
#include "os/os.h"
#include "os/proc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A file in the test's own directory, holding text; its path. */
static const char *file_of(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "gbt-os-linux-%ld.txt", (long)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK(fputs(text, f) >= 0);
    CHECK_EQ(fclose(f), 0);
    return path;
}

static const char *missing(void)
{
    static char path[64];
    snprintf(path, sizeof path, "gbt-os-linux-%ld.none", (long)getpid());
    remove(path);
    return path;
}

static void drop(const char *path)
{
    remove(path);
}

static size_t map_limit_of(const char *text)
{
    const char *path = file_of(text);
    size_t n = gb__linux_map_limit(path);
    drop(path);
    return n;
}

GB_TEST(the_map_limit_is_the_kernels_count_else_its_default)
{
    CHECK_EQ(map_limit_of("262144\n"), 262144);
    CHECK_EQ(map_limit_of("1\n"), 1);
    /* A count of 0 or none is no limit the runtime could keep under. */
    CHECK_EQ(map_limit_of("0\n"), 65530);
    CHECK_EQ(map_limit_of("many\n"), 65530);
    CHECK_EQ(map_limit_of(""), 65530);
    CHECK_EQ(gb__linux_map_limit(missing()), 65530);
}

/* The mode read from text, into a buffer of 16 bytes (gb__os_init's) that
 * held something else before. */
static const char *mode_of(const char *text)
{
    static char mode[16];
    memset(mode, 'x', sizeof mode - 1);
    mode[sizeof mode - 1] = '\0';
    if (!text) {
        gb__linux_thp_mode(missing(), mode, sizeof mode);
        return mode;
    }
    const char *path = file_of(text);
    gb__linux_thp_mode(path, mode, sizeof mode);
    drop(path);
    return mode;
}

#define CHECK_MODE(text, want)                                               \
    do {                                                                     \
        const char *got_ = mode_of(text);                                    \
        if (strcmp(got_, want) != 0)                                         \
            gbt_fail(__FILE__, __LINE__, "the mode of %s is \"%s\", not \"%s\"", \
                     #text, got_, want);                                     \
    } while (0)

GB_TEST(the_thp_mode_is_the_bracketed_word_else_none)
{
    CHECK_MODE("always [madvise] never\n", "madvise");
    CHECK_MODE("[always] madvise never\n", "always");
    CHECK_MODE("always madvise [never]\n", "never");
    /* No file, no brackets, an unclosed one: nothing the runtime knows. */
    CHECK_MODE(NULL, "none");
    CHECK_MODE("always madvise never\n", "none");
    CHECK_MODE("always [madvise never\n", "none");
    CHECK_MODE("", "none");
    /* A word fits when it leaves room for the terminating zero: 15 of the
     * 16 bytes; one of 16 is no mode, rather than one cut short. */
    CHECK_MODE("[abcdefghijklmno]\n", "abcdefghijklmno");
    CHECK_MODE("[abcdefghijklmnop]\n", "none");
}

static size_t huge_of(const char *text, const char *mode, size_t page)
{
    if (!text)
        return gb__linux_thp_size(missing(), mode, page);
    const char *path = file_of(text);
    size_t n = gb__linux_thp_size(path, mode, page);
    drop(path);
    return n;
}

GB_TEST(the_huge_page_size_is_the_kernels_where_its_mode_hands_them_out)
{
    CHECK_EQ(huge_of("2097152\n", "always", 4096), 2097152);
    CHECK_EQ(huge_of("2097152\n", "madvise", 4096), 2097152);
    CHECK_EQ(huge_of("8192\n", "madvise", 4096), 8192);
    /* A kernel before hpage_pmd_size hands out x86-64's 2 MiB. */
    CHECK_EQ(huge_of(NULL, "always", 4096), 2097152);
    /* No huge pages in the other modes, whatever the size file says. */
    CHECK_EQ(huge_of("2097152\n", "never", 4096), 0);
    CHECK_EQ(huge_of("2097152\n", "none", 4096), 0);
    CHECK_EQ(huge_of("2097152\n", "", 4096), 0);
    /* Nor a size that is no power of two above the page. */
    CHECK_EQ(huge_of("3145728\n", "always", 4096), 0);
    CHECK_EQ(huge_of("4096\n", "always", 4096), 0);
    CHECK_EQ(huge_of("2048\n", "always", 4096), 0);
    CHECK_EQ(huge_of("0\n", "always", 4096), 0);
    CHECK_EQ(huge_of("huge\n", "always", 4096), 0);
}

/* gb__os_init fills the table from the kernel's own files, through the
 * readers above: what it holds is what they read there. */
GB_TEST(the_os_table_holds_what_the_kernels_files_say)
{
    gb__os_init();
    char mode[16];
    gb__linux_thp_mode(GB__LINUX_THP_ENABLED, mode, sizeof mode);
    CHECK_EQ(strcmp(gb__os.huge_mode, mode), 0);
    CHECK_EQ(gb__os.huge_page, gb__linux_thp_size(GB__LINUX_THP_PMD_SIZE, mode, gb__os.page_size));
    CHECK_EQ(gb__os.advise_huge != NULL, gb__os.huge_page != 0);
    CHECK_EQ(gb__os.map_limit, gb__linux_map_limit(GB__LINUX_MAP_COUNT));
    CHECK_EQ(gb__os.page_size, (size_t)sysconf(_SC_PAGESIZE));
    CHECK_EQ(strcmp(gb__os.name, "linux"), 0);
}

/* The table's clock is the monotonic one, in nanoseconds: read between two
 * readings of CLOCK_MONOTONIC, and a sleep of a millisecond moves it by at
 * least that (a lower bound a slow machine cannot break). */
GB_TEST(the_os_clock_is_the_monotonic_one_in_nanoseconds)
{
    gb__os_init();
    struct timespec a, b;
    CHECK_EQ(clock_gettime(CLOCK_MONOTONIC, &a), 0);
    uint64_t t1 = gb__os.now_ns();
    CHECK_EQ(clock_gettime(CLOCK_MONOTONIC, &b), 0);
    CHECK((uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec <= t1);
    CHECK(t1 <= (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec);
    struct timespec ms = {0, 1000000};
    CHECK_EQ(nanosleep(&ms, NULL), 0);
    CHECK(gb__os.now_ns() - t1 >= 1000000u);
}

/* glibc reads its tunables when the process starts; the layer reads the
 * environment again when asked, so the test sets it and asks. */
static bool chosen_with(const char *env, const char *tunables)
{
    if (env)
        CHECK_EQ(setenv("MALLOC_MMAP_THRESHOLD_", env, 1), 0);
    else
        CHECK_EQ(unsetenv("MALLOC_MMAP_THRESHOLD_"), 0);
    if (tunables)
        CHECK_EQ(setenv("GLIBC_TUNABLES", tunables, 1), 0);
    else
        CHECK_EQ(unsetenv("GLIBC_TUNABLES"), 0);
    return gb__os_malloc_threshold_chosen();
}

GB_TEST(the_threshold_is_chosen_by_its_variable_or_a_whole_tunable)
{
    CHECK(!chosen_with(NULL, NULL));
    CHECK(chosen_with("1048576", NULL));
    CHECK(chosen_with(NULL, "glibc.malloc.mmap_threshold=1048576"));
    CHECK(chosen_with(NULL, "glibc.malloc.check=0:glibc.malloc.mmap_threshold=1048576"));
    CHECK(chosen_with(NULL, "glibc.malloc.arena_max=2:glibc.malloc.check=0:glibc.malloc.mmap_threshold=1"));
    /* Other tunables choose nothing, and a name is matched from the start
     * of its entry, whole. */
    CHECK(!chosen_with(NULL, ""));
    CHECK(!chosen_with(NULL, "glibc.malloc.arena_max=2"));
    CHECK(!chosen_with(NULL, "glibc.malloc.arena_max=2:glibc.malloc.check=0"));
    CHECK(!chosen_with(NULL, "my.glibc.malloc.mmap_threshold=1"));
    CHECK(!chosen_with(NULL, "glibc.malloc.arena_max=2:xglibc.malloc.mmap_threshold=1"));
    CHECK(!chosen_with(NULL, "glibc.malloc.mmap_threshold_max=1"));
}

/* Pages given with MADV_FREE stay resident until the kernel wants them,
 * and smaps_rollup counts them as LazyFree: the reading must report them,
 * for the gates judge a resident size by what of it is lazily free. */
GB_TEST(pages_given_with_madv_free_are_read_as_lazy_free)
{
#ifndef MADV_FREE
    GBT_SKIP_IF(1, "this C library has no MADV_FREE");
#else
    GBT_SKIP_IF(GBT_EMULATED, "under qemu-user, the advice goes to the host, whose reading is the emulator's");
    size_t n = (size_t)8 << 20;
    unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 1, n);
    gb_resident before = {0}, after = {0};
    CHECK_EQ(gb__proc_resident(&before), 0);
    GBT_SKIP_IF(madvise(p, n, MADV_FREE) != 0, "the kernel refuses MADV_FREE (before Linux 4.5)");
    CHECK_EQ(gb__proc_resident(&after), 0);
    fprintf(stderr, "lazy free: %zu KiB before the advice, %zu KiB after\n", before.lazy_free >> 10,
            after.lazy_free >> 10);
    /* The kernel may take some of them back at once when memory is short;
     * most stay. */
    CHECK(after.lazy_free >= before.lazy_free + n / 2);
    CHECK(after.rss >= n / 2);
    CHECK_EQ(munmap(p, n), 0);
#endif
}
