/* macos.c -- the OS layer on macOS.
 *
 * macOS has no mremap, so a mapped block grows by mapping anew, copying and
 * unmapping (the caller does that when remap is NULL). Pages are emptied
 * with MADV_FREE_REUSABLE, which drops them from phys_footprint at once; the
 * resident size and the footprint come from task_info. There is no
 * per-process mapping count limit like Linux's, and the default malloc
 * (xzone) keeps freed blocks, with no threshold to fix: that is why
 * GB_BLOCKS=auto maps blocks here.
 */
#include "os.h"
#include "unix.h"

#include <mach/mach.h>
#include <sys/mman.h>
#include <unistd.h>

gb__os_table gb__os;

static int macos_release(void *p, size_t n)
{
    /* MADV_FREE_REUSABLE takes the pages out of the footprint now; ps's RSS
     * may lag until the kernel reclaims them, as the design notes say. */
    return madvise(p, n, MADV_FREE_REUSABLE);
}

static int macos_reuse(void *p, size_t n)
{
    return madvise(p, n, MADV_FREE_REUSE);
}

static int macos_resident(gb_resident *out)
{
    task_vm_info_data_t info;
    /* Revision 1 is the first with phys_footprint. A count past the
     * running kernel's (a binary built with a newer SDK) would be logged
     * on every call. */
    mach_msg_type_number_t count = TASK_VM_INFO_REV1_COUNT;
    if (task_info(mach_task_self(), TASK_VM_INFO, (task_info_t)&info, &count) != KERN_SUCCESS)
        return -1;
    out->rss = (size_t)info.resident_size;
    out->footprint = (size_t)info.phys_footprint;
    out->peak = (size_t)info.resident_size_peak;
    return 0;
}

void gb__os_init(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    gb__os = (gb__os_table){
        .map = gb__unix_map,
        .unmap = gb__unix_unmap,
        .release = macos_release,
        .reuse = macos_reuse,
        .protect_none = gb__unix_protect_none,
        .remap = NULL,
        /* macOS hands out no transparent huge pages to ask for (its
         * superpages are a mmap flag of VM_FLAGS_SUPERPAGE_SIZE_2MB on
         * x86-64 only, wired and never paged): nothing to do. */
        .advise_huge = NULL,
        .populate = NULL, /* macOS has no call that populates a range */
        .huge_page = 0,
        .huge_mode = "none",
        .now_ns = gb__unix_now_ns,
        .resident = macos_resident,
        .page_size = ps > 0 ? (size_t)ps : 16384,
        .map_limit = 0,
        .name = "macos",
        .malloc_threshold_tunable = false,
    };
}

bool gb__os_malloc_set_threshold(size_t n)
{
    (void)n;
    return false;
}

bool gb__os_malloc_threshold_chosen(void)
{
    return false;
}
