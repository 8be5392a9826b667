/* resident_library.c -- the 400 MB region in the library build.
 *
 * A library build may not fix malloc's threshold, so its default source
 * must be map on every OS, and the region must still leave. */
#include "gbtest.h"
#include "giveback.h"
#include "scenarios.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024 * 1024)

GB_TEST(leave_400mb_auto)
{
    CHECK(strcmp(gb_build_kind(), "library") == 0);
    CHECK(strcmp(gb_blocks_name(), "map") == 0);
    void *kept[3];
    for (int round = 0; round < 3; round++) {
        gbs_region_round(400 * MIB, 64 * 1024, 256 * 1024, round + 1, &kept[round]);
        gb_resident res;
        CHECK(gb_resident_get(&res) == 0);
        fprintf(stderr, "library build, map source: round %d: %.1f MiB resident after leave\n", round + 1,
                res.rss / (double)MIB);
        CHECK_LT(res.rss, 64 * MIB + GBT_ASAN_SHADOW(400 * MIB));
    }
    for (int i = 0; i < 3; i++)
        free(kept[i]);
}
