/* threshold.c -- the glibc threshold rule in the program build.
 *
 * A program build on glibc fixes malloc's mmap threshold at 64 KiB at init,
 * unless MALLOC_MMAP_THRESHOLD_ or the glibc.malloc.mmap_threshold tunable
 * chose one (ctest sets those for the two opt-out tests). Whether glibc
 * mapped a chunk is read from the chunk's own header (the IS_MMAPPED bit of
 * its size word), so the test sees what malloc did, not what we asked.
 */
#include "gbtest.h"
#include "giveback.h"
#include "internal.h"
#include "glibc_chunk.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__)
#define malloc_maps glibc_malloc_maps
#define REQUIRE_GLIBC()                                                              \
    do {                                                                             \
        GBT_SKIP_IF(GBT_SANITIZED, "the sanitizer's malloc is not glibc's");         \
        gb__os_init();                                                               \
        GBT_SKIP_IF(!gb__os.malloc_threshold_tunable, "this OS layer's malloc has no threshold to fix"); \
    } while (0)
#else
#define malloc_maps(n) false
#define REQUIRE_GLIBC() GBT_SKIP_IF(1, "the threshold rule is glibc's")
#endif

GB_TEST(program_build_fixes_the_threshold)
{
    REQUIRE_GLIBC();
    /* glibc consults its threshold only when the heap's top cannot serve a
     * request, so every probe asks for more than the small heap holds. */
    gb_init(NULL);
    CHECK(strcmp(gb_build_kind(), "program") == 0);
    CHECK(gb__cfg.threshold_fixed);
    /* Fixed means no ratchet: after a 1 MiB mapped chunk is freed, 512 KiB
     * is still mapped (glibc's own rule would now use the heap). */
    CHECK(malloc_maps(1024 * 1024));
    CHECK(malloc_maps(512 * 1024));
    /* The threshold is fixed for the rest of the process; the runtime's
     * own blocks are its mappings by default in this build too. */
    CHECK(strcmp(gb_blocks_name(), "map") == 0);
}

GB_TEST(user_threshold_env_is_kept)
{
    REQUIRE_GLIBC();
    CHECK(getenv("MALLOC_MMAP_THRESHOLD_") != NULL);
    gb_init(NULL);
    CHECK(!gb__cfg.threshold_fixed);
    CHECK(!malloc_maps(512 * 1024)); /* the user's 1 MiB threshold holds */
}

GB_TEST(user_threshold_tunable_is_kept)
{
    REQUIRE_GLIBC();
    CHECK(getenv("GLIBC_TUNABLES") != NULL);
    gb_init(NULL);
    CHECK(!gb__cfg.threshold_fixed);
    CHECK(!malloc_maps(512 * 1024));
}

GB_TEST(the_block_source_can_be_chosen_by_environment)
{
    setenv("GB_BLOCKS", "map", 1);
    CHECK(strcmp(gb_blocks_name(), "map") == 0);
}
