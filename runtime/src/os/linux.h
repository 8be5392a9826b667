/* linux.h -- what the Linux OS layer reads from the kernel's files.
 *
 * Each reader takes the file's path, which gb__os_init gives as the
 * kernel's own, so that a test can hand it a file it wrote (every form
 * the kernel prints, and the broken ones it never should) and check the
 * value the runtime would take. Every reader falls back to the kernel's
 * default when the file is missing or says nothing it understands.
 */
#ifndef GB_OS_LINUX_H
#define GB_OS_LINUX_H

#include <stddef.h>

/* The path gb__os_init reads each setting from. */
#define GB__LINUX_MAP_COUNT "/proc/sys/vm/max_map_count"
#define GB__LINUX_THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"
#define GB__LINUX_THP_PMD_SIZE "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"

/* vm.max_map_count: a positive count, else 65530 (the kernel's default). */
size_t gb__linux_map_limit(const char *path);

/* The THP mode: the bracketed word of "always [madvise] never", copied to
 * mode (n bytes); "none" when there is no file, no bracketed word, or one
 * that does not fit. */
void gb__linux_thp_mode(const char *path, char *mode, size_t n);

/* The huge page size for mode: hpage_pmd_size when the mode hands huge
 * pages out ("always" or "madvise"; 2 MiB, the x86-64 value, when the
 * kernel predates the file), if it is a power of two above page; else 0. */
size_t gb__linux_thp_size(const char *path, const char *mode, size_t page);

#endif
