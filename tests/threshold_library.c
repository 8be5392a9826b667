/* threshold_library.c -- a library build never touches malloc's threshold. */
#include "gbtest.h"
#include "giveback.h"
#include "internal.h"
#include "glibc_chunk.h"

#include <stdlib.h>
#include <string.h>

GB_TEST(library_build_leaves_the_threshold_alone)
{
#if defined(__GLIBC__)
    GBT_SKIP_IF(GBT_SANITIZED, "the sanitizer's malloc is not glibc's");
    gb__os_init();
    GBT_SKIP_IF(!gb__os.malloc_threshold_tunable, "this OS layer's malloc has no threshold to leave alone");
    gb_init(NULL);
    CHECK(strcmp(gb_build_kind(), "library") == 0);
    CHECK(!gb__cfg.threshold_fixed);
    CHECK(strcmp(gb_blocks_name(), "map") == 0);
    gb_region *r = gb_enter();
    gb_alloc(10 * 1024 * 1024);
    gb_leave(r);
    /* Still glibc's own dynamic rule: a freed 1 MiB mapped chunk raises the
     * threshold, and 512 KiB then comes from the heap. */
    CHECK(glibc_malloc_maps(1024 * 1024));
    CHECK(!glibc_malloc_maps(512 * 1024));
#else
    GBT_SKIP_IF(1, "the threshold rule is glibc's");
#endif
}
