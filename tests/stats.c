/* stats.c -- what gb_stats_get and gb_resident_get answer.
 *
 * The readings go through the OS table (gb__os.resident), which these
 * tests swap for a fake that answers what each case needs, as the mapping
 * tests swap mmap (chunk.c): a failed reading, and peaks that lag the size
 * read with them or an earlier reading, as Linux's VmHWM does.
 */
#include "common.h"
#include "internal.h"

#include <string.h>

GB_TEST(the_first_reading_of_the_counters_initialises_the_runtime)
{
    /* No gb_init before it: the reading must still see the settings the
     * runtime starts with, not a zeroed table. */
    gb_stats s;
    gb_stats_get(&s);
    CHECK(s.map_budget > 0);
    CHECK_EQ(s.map_budget, gb__cfg.map_budget);
    CHECK_EQ(s.bytes_mapped, 0);
}

/* A fake reading: the next answers, one per call. */
static gb_resident answers[4];
static int answered, failing;

static int fake_resident(gb_resident *out)
{
    if (failing) {
        out->rss = 12345; /* a failed reading may leave half a struct behind */
        return -1;
    }
    *out = answers[answered++];
    return 0;
}

GB_TEST(a_failed_reading_of_the_resident_size_answers_minus_one_and_zeros)
{
    gb_init(NULL);
    gb__os.resident = fake_resident;
    failing = 1;
    gb_resident r;
    memset(&r, 0xff, sizeof r);
    CHECK_EQ(gb_resident_get(&r), -1);
    CHECK_EQ(r.rss, 0);
    CHECK_EQ(r.footprint, 0);
    CHECK_EQ(r.peak, 0);
    CHECK_EQ(r.lazy_free, 0);
    CHECK_EQ(r.anon_huge, 0);
}

GB_TEST(the_peak_answered_is_the_most_of_every_size_and_peak_read)
{
    gb_init(NULL);
    gb__os.resident = fake_resident;
    answers[0] = (gb_resident){.rss = 10 * 4096, .peak = 6 * 4096};  /* the OS's peak lags its size */
    answers[1] = (gb_resident){.rss = 3 * 4096, .peak = 8 * 4096};   /* and an earlier size */
    answers[2] = (gb_resident){.rss = 4 * 4096, .peak = 14 * 4096};  /* a new peak */
    answers[3] = (gb_resident){.rss = 14 * 4096, .peak = 14 * 4096}; /* as much as the most: no change */
    gb_resident r;
    CHECK_EQ(gb_resident_get(&r), 0);
    CHECK_EQ(r.rss, 10 * 4096);
    CHECK_EQ(r.peak, 10 * 4096);
    CHECK_EQ(gb_resident_get(&r), 0);
    CHECK_EQ(r.rss, 3 * 4096);
    CHECK_EQ(r.peak, 10 * 4096);
    CHECK_EQ(gb_resident_get(&r), 0);
    CHECK_EQ(r.peak, 14 * 4096);
    CHECK_EQ(gb_resident_get(&r), 0);
    CHECK_EQ(r.peak, 14 * 4096);
    CHECK_EQ(answered, 4);
}

/* The default mapping budget leaves the host an eighth of the OS's limit
 * on mappings, and at least 1024 of them, but takes at least half of it;
 * with no limit known, it is as good as none. Read on this machine's
 * limit (vm.max_map_count on Linux). */
GB_TEST(the_default_mapping_budget_leaves_the_host_an_eighth_of_the_limit)
{
    gb_stats s = gbt_stats();
    size_t limit = gb__os.map_limit;
    fprintf(stderr, "map_limit %zu, map_budget %zu\n", limit, s.map_budget);
    if (limit == 0) {
        CHECK_EQ(s.map_budget, SIZE_MAX / 2);
        return;
    }
    size_t leave = limit / 8 < 1024 ? 1024 : limit / 8;
    size_t want = limit - leave >= limit / 2 ? limit - leave : limit / 2;
    CHECK_EQ(s.map_budget, want);
    CHECK(s.map_budget < limit);
}
