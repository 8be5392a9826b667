/* check.c -- the runtime's checkers (runtime/src/check.c) pass over a
 * thread holding every kind of state, and stop, naming the invariant,
 * when one field of it is wrong; GB__ASSERT stops with its place and
 * expression.
 *
 * Built against giveback_program_check, the program build with GB_CHECK
 * (tests/CMakeLists.txt), so it runs in every build type. Each corruption
 * is made in a child (gbt_expect_death), on a state built the same way as
 * the one the first test finds sound: the message then comes from the
 * field changed, not from the state.
 */
#include "common.h"
#include "internal.h"
#include "scenarios.h"

#include "check.h"

#include <string.h>

/* Weak: a runtime built without GB_CHECK has no checkers, and every case
 * then says so instead of failing to link. tests/CMakeLists.txt links the
 * checked build, so that happens only if it is changed to another. */
void gb__check_thread(const gb__thread *t) __attribute__((weak));
#define SKIP_UNCHECKED()                                                                             \
    GBT_SKIP_IF(!gb__check_thread, "this build's runtime has no GB_CHECK: no checkers or assertions to test")

/* The state the checkers walk, built through the public API: nested
 * regions with chained, solo and kept blocks, a container arena, freed
 * slots on a descriptor page, cached blocks, a region retired by a
 * suspended coroutine that points into it, and a second suspended
 * coroutine. */
typedef struct busy {
    gb_region *outer, *inner;
    gb_coro *holder, *idle;
} busy;

static busy state;

static void build(void)
{
    state.outer = gb_enter();
    for (int i = 0; i < 200; i++)
        memset(gb_alloc(100 + (size_t)i * 13), i, 100);
    memset(gb_alloc(8 << 20), 1, 4096); /* past the block cap: a solo block */
    char *p = gb_alloc(40);
    p = gb_realloc(p, 40, 4000);
    gb_vec *v = gb_vec_new(sizeof(int));
    for (int i = 0; i < 1000; i++)
        gb_vec_push(v, &i);
    gb_vec_compact(v);

    state.inner = gb_enter();
    for (int i = 0; i < 50; i++)
        gb_alloc(3000);
    gb_region_reset(state.inner, SIZE_MAX); /* keeps every block */
    gb_alloc(100);                          /* takes one back */

    /* A region entered and left: its blocks go to the cache, its slot is
     * freed on the page. */
    gb_region *gone = gb_enter();
    for (int i = 0; i < 20; i++)
        gb_alloc(10000);
    gb_region *gone2 = gb_enter();
    gb_leave(gone2);
    gb_leave(gone);

    /* A region pinned by a suspended coroutine is retired when left. */
    gb_region *pinned = gb_enter();
    state.holder = gb_coro_new(gbs_hold_forever, gb_alloc(5000), 0);
    gb_coro_resume(state.holder);
    state.idle = gb_coro_new(gbs_hold_forever, NULL, 0);
    gb_coro_resume(state.idle);
    gb_leave(pinned);
    CHECK_EQ(gbt_stats().regions_retired, 1);
}

static gb__thread *self(void)
{
    return gb__self();
}

static gb_region *slot_of(gb_region *h)
{
    return gb__handle_lookup("tests/check.c", &self()->mem, h);
}

static gb_region *retired(void)
{
    CHECK(!gb__list_empty(&self()->retired_pinned));
    return GB__LIST_ENTRY(self()->retired_pinned.next, gb_region, rlink);
}

GB_TEST(the_checkers_pass_over_a_thread_holding_every_kind_of_state)
{
    SKIP_UNCHECKED();
    gb__check_thread(self());
    build();
    gb__check_thread(self());
    gb_region *r = slot_of(state.inner);
    CHECK(r->nkept > 0);
    CHECK(r->nblocks > 0);
    CHECK(!gb__list_empty(&slot_of(state.outer)->arenas));
    CHECK(self()->mem.cache.bytes > 0);
    CHECK_EQ(self()->npinned, 1);
    gb_leave(state.inner);
    gb__check_thread(self());
    gb_coro_free(state.holder);
    gb__check_thread(self());
    gb_coro_free(state.idle);
    gb_leave(state.outer);
    gb_sweep();
    gb__check_thread(self());
    gbt_check_all_given_back();
}

static void bytes_off_by_one_block(void)
{
    build();
    slot_of(state.inner)->bytes += 16;
    gb__check_thread(self());
}

GB_TEST(a_region_whose_bytes_is_not_the_sum_of_its_blocks_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(bytes_off_by_one_block, "bytes is");
}

static void kept_count_off(void)
{
    build();
    slot_of(state.inner)->nkept--;
    gb__check_thread(self());
}

GB_TEST(a_kept_list_longer_than_nkept_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(kept_count_off, "its kept list holds more than nkept");
}

static void bump_past_end(void)
{
    build();
    gb_region *r = slot_of(state.outer);
    r->bump = r->end + 16;
    gb__check_thread(self());
}

GB_TEST(a_bump_pointer_past_its_block_end_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(bump_past_end, "both inside cur_block");
}

/* The allocation's own check: end below bump makes the room look vast,
 * and the allocation's bump passes end. */
static void end_below_bump(void)
{
    build();
    gb_region *r = slot_of(state.inner);
    r->end = r->bump - 16;
    gb_alloc(32);
}

GB_TEST(an_allocation_that_bumps_past_the_end_stops_at_its_assertion)
{
    SKIP_UNCHECKED();
    gbt_expect_death(end_below_bump, "assertion failed: runtime/src/region.c:");
    gbt_expect_death(end_below_bump, ": bump: r->bump <= r->end");
}

static void pinned_without_witness(void)
{
    build();
    retired()->witness = NULL;
    gb__check_thread(self());
}

GB_TEST(a_pinned_region_without_a_witness_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(pinned_without_witness, "is on retired_pinned with witness (nil)");
}

static void npinned_off(void)
{
    build();
    self()->npinned++;
    gb__check_thread(self());
}

GB_TEST(npinned_that_does_not_count_the_pinned_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(npinned_off, "npinned is 2, retired_pinned holds 1 regions");
}

/* The region names the other suspended coroutine, but stays on its
 * witness's list. */
static void witness_names_another(void)
{
    build();
    retired()->witness = (gb_coro *)((char *)self()->frozen.next - offsetof(gb_coro, flink));
    CHECK(retired()->witness != NULL);
    gb__check_thread(self());
}

GB_TEST(a_witnessed_region_naming_another_witness_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(witness_names_another, "witnesses region");
}

static void frozen_finished(void)
{
    build();
    GB__LIST_ENTRY(self()->frozen.next, gb_coro, flink)->status = GB_CORO_FINISHED;
    gb__check_thread(self());
}

GB_TEST(a_finished_coroutine_on_the_frozen_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(frozen_finished, "on the frozen list is this thread's, in status 3");
}

static void cache_bytes_off(void)
{
    build();
    self()->mem.cache.bytes += 4096;
    gb__check_thread(self());
}

GB_TEST(a_cache_byte_count_that_is_not_its_lists_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(cache_bytes_off, "the thread's cache.bytes is");
}

/* A freed slot on a page that still holds regions, given a handle. */
static void free_slot_with_handle(void)
{
    build();
    gb__dpage *pg = slot_of(state.outer)->page;
    CHECK(pg->free != NULL);
    pg->free->handle = 1;
    gb__check_thread(self());
}

GB_TEST(a_free_descriptor_slot_with_a_handle_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(free_slot_with_handle, "(a slot with a handle is LIVE or RETIRED)");
}

static void handle_of_another_generation(void)
{
    build();
    slot_of(state.inner)->handle += (uintptr_t)1 << GB__H_GEN_SHIFT;
    gb__check_thread(self());
}

GB_TEST(a_live_region_whose_handle_names_another_generation_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(handle_of_another_generation, "its handle is not its generation");
}
