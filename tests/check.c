/* check.c -- the runtime's checkers (runtime/src/check.c) pass over a
 * thread holding every kind of state, and stop, naming the invariant,
 * when one field of it is wrong; GB__ASSERT stops with its place and
 * expression.
 *
 * Built against giveback_program_check, the program build with GB_CHECK
 * (tests/CMakeLists.txt), so it runs in every build type. Each corruption
 * is made in a child (gbt_expect_death), on a state built the same way as
 * one a test here finds sound (build(), or the pages, regions, coroutines
 * and caches of "states the checkers accept"): the message then comes
 * from the field changed, not from the state. Where the checker that
 * gb__check_thread runs first would name the change through another
 * invariant, the case calls the checker it is about (gb__handle_check,
 * gb__region_check) itself.
 */
#include "common.h"
#include "internal.h"
#include "scenarios.h"

#include "check.h"
#include "coro_path.h"
#include "os/os.h"
#include "small.h"

#include <pthread.h>
#include <stdatomic.h>
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

/* What the holder runs each time it is resumed, before it yields again:
 * NULL, or a step of a test that must run inside the witness of a pinned
 * region. */
static void (*witness_job)(void);

/* Holds a pointer into a region across its yields, as gbs_hold_forever
 * does, and runs witness_job, if any, each time it is resumed. */
static void hold_and_work(void *arg)
{
    void *volatile p = arg;
    for (;;) {
        if (witness_job)
            witness_job();
        gb_coro_yield();
    }
    (void)p;
}

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
    state.holder = gb_coro_new(hold_and_work, gb_alloc(5000), 0);
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
    CHECK(!gb__list_empty(&self()->pins.retired_pinned));
    return GB__LIST_ENTRY(self()->pins.retired_pinned.next, gb_region, rlink);
}

/* The descriptor of the coroutine h names. */
static gb_coro *coro(gb_coro *h)
{
    return gb__coro_of_slow("tests/check.c", h);
}

/* The region on t's dirty list: a region whose witness resumed another
 * coroutine waits there for its try until that one yields or finishes. */
static gb_region *dirty(void)
{
    CHECK(!gb__list_empty(&self()->pins.retired_dirty));
    return GB__LIST_ENTRY(self()->pins.retired_dirty.next, gb_region, rlink);
}

/* The second chained (not solo) block of r, newest first: one of its
 * blocks that is not its current one. */
static gb__block *older_chained(const gb_region *r)
{
    const gb__block *newest = NULL;
    for (gb__block *b = r->blocks; b; b = b->next) {
        if (b->solo)
            continue;
        if (newest)
            return b;
        newest = b;
    }
    gbt_fail(__FILE__, __LINE__, "region %p has fewer than two chained blocks", (void *)r->handle);
}

/* Another thread's state, as far as a checker can tell: an address that is
 * not the calling thread's. */
static gb__thread another;

/* A step of a test, run inside a coroutine (do_job). */
typedef struct job {
    void (*fn)(void);
} job;

static void do_job(void *arg)
{
    ((const job *)arg)->fn();
}

/* Runs j inside a new coroutine resumed from the running context, which
 * is then freed. */
static void run_inside(const job *j)
{
    gb_coro *c = gb_coro_new(do_job, (void *)j, 0);
    gb_coro_resume(c);
    CHECK_EQ(gb_coro_status_of(c), GB_CORO_FINISHED);
    gb_coro_free(c);
}

/* What the coroutine the witness resumes runs (witness_resumes). */
static job in_resumed;

/* A witness_job: the witness resumes a coroutine that runs in_resumed.
 * Frozen to resume it, the witness has dropped what it witnessed: the
 * region it pins waits on the dirty list for its try until that coroutine
 * yields or finishes, and the witness waits on it (status RUNNING). */
static void witness_resumes(void)
{
    run_inside(&in_resumed);
}

static void check_here(void)
{
    gb__check_thread(self());
}

/* Regions entered until the first page of descriptors is full and a
 * second is taken; *first is the first region (slot 0 of the full page),
 * the one returned is on the second page. */
static gb_region *fill_a_page(gb_region **first)
{
    *first = gb_enter();
    const gb__dpage *pg = slot_of(*first)->page;
    gb_region *h;
    do
        h = gb_enter();
    while (slot_of(h)->page == pg);
    return h;
}

/* The descriptor page of the region h names. */
static gb__dpage *page_of(gb_region *h)
{
    return slot_of(h)->page;
}

/* A page that was emptied and kept as this thread's spare, its free list
 * holding slot 0: the region entered and left for it was the thread's
 * first. */
static gb__dpage *make_spare(void)
{
    gb_leave(gb_enter());
    gb__dpage *pg = self()->mem.dspare;
    CHECK(pg != NULL);
    CHECK(pg->free == &pg->slot[0]);
    return pg;
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
    CHECK_EQ(self()->pins.npinned, 1);
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
    self()->pins.npinned++;
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
    retired()->witness = GB__LIST_ENTRY(self()->pins.frozen.next, gb__frozen, flink);
    CHECK(retired()->witness != NULL);
    gb__check_thread(self());
}

GB_TEST(a_witnessed_region_naming_another_witness_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(witness_names_another, "witnesses region");
    /* The witness it names is printed as its coroutine's handle. */
    gbt_expect_death(witness_names_another, ", whose witness is 0x");
}

static void frozen_finished(void)
{
    build();
    gb__coro_of_frozen(GB__LIST_ENTRY(self()->pins.frozen.next, gb__frozen, flink))->status = GB_CORO_FINISHED;
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

/* ------------------------------------------ states the checkers accept */

/* The states of a thread's descriptor pages, each at the edge of what a
 * checker asks of a page: a fresh page (its floor is its gen_hi, its free
 * list is empty), a full page (nfresh == cap, on no list: the region
 * checker reaches it), the spare (empty, its free list starting at slot
 * 0), and a page whose free slots are of two generations. */
GB_TEST(the_checkers_pass_over_descriptor_pages_fresh_full_spare_and_reused)
{
    SKIP_UNCHECKED();
    gb_region *h[2 * 512 + 2];
    size_t n = 0;
    h[n++] = gb_enter();
    gb__dpage *a = page_of(h[0]);
    CHECK_EQ(a->floor, a->gen_hi);
    CHECK(a->free == NULL && a->nfresh < a->cap);
    gb__check_thread(self());

    do
        h[n++] = gb_enter();
    while (page_of(h[n - 1]) == a);
    CHECK_EQ(a->nfresh, a->cap);
    CHECK(a->free == NULL && !gb__handle_in_avail(a));
    gb__check_thread(self());

    /* The second page's only region left: the page is kept as the spare. */
    gb__dpage *b = page_of(h[n - 1]);
    gb_leave(h[--n]);
    CHECK(self()->mem.dspare == b);
    CHECK(b->free == &b->slot[0]);
    gb__check_thread(self());

    /* Two slots of the full page freed, one of them taken and freed again:
     * its generation passes the other's. */
    gb_leave(h[--n]);
    gb_leave(h[--n]);
    gb_leave(gb_enter());
    CHECK(a->free != NULL && a->free->parent != NULL);
    CHECK_LT(a->free->parent->gen, a->gen_hi);
    gb__check_thread(self());

    while (n)
        gb_leave(h[--n]);
    gb_sweep();
    gb__check_thread(self());
    gbt_check_all_given_back();
}

/* A pointer into the reset region, held by the coroutine that pins its
 * contents. */
static void *reset_pin;

/* Regions at the edges of what the region checker asks: one with no block
 * yet, one whose current block is full to its last byte, and the contents
 * of a reset that a suspended coroutine points into, retired with blocks
 * but no current one. */
GB_TEST(the_checkers_pass_over_an_empty_region_a_full_block_and_a_retired_reset)
{
    SKIP_UNCHECKED();
    gb_region *h = gb_enter();
    gb_region *r = slot_of(h);
    CHECK(r->cur_block == NULL && r->last == NULL);
    gb__check_thread(self());

    reset_pin = gb_alloc(100);
    gb_alloc((size_t)(r->end - r->bump));
    CHECK(r->bump == r->end);
    gb__check_thread(self());

    gb_coro *c = gb_coro_new(gbs_hold_forever, reset_pin, 0);
    gb_coro_resume(c);
    gb_region_reset(h, 0);
    CHECK_EQ(gbt_stats().regions_retired, 1);
    gb_region *g = retired();
    CHECK(g->state == GB__RETIRED && g->cur_block == NULL && g->blocks != NULL);
    CHECK(r->cur_block == NULL && r->blocks == NULL);
    gb__check_thread(self());

    gb_coro_free(c);
    gb_leave(h);
    gb_sweep();
    gb__check_thread(self());
    gbt_check_all_given_back();
}

static void check_inside_the_witness(void)
{
    const gb__thread *t = self();
    CHECK(t->cur_coro == coro(state.holder));
    CHECK(!gb__pin_is_frozen(&t->cur_coro->fz) && gb__list_linked(&t->cur_coro->fz.flink));
    CHECK(!gb__list_empty(&t->cur_coro->fz.witnessed));
    gb__check_thread(t);
}

static void check_with_a_region_dirty(void)
{
    const gb__thread *t = self();
    CHECK(dirty()->witness == NULL);
    CHECK(t->cur_coro->caller == coro(state.holder));
    CHECK_EQ(t->cur_coro->caller->status, GB_CORO_RUNNING);
    gb__check_thread(t);
}

static void check_off_the_frozen_list(void)
{
    /* A leave reads the frozen list, taking the thawed ones off it. */
    gb_leave(gb_enter());
    CHECK(!gb__list_linked(&self()->cur_coro->fz.flink));
    gb__check_thread(self());
}

/* The coroutines' states a checker meets: two regions pinned, a finished
 * coroutine still on the frozen list, the checkers run inside a coroutine
 * (thawed on the frozen list, or off it), inside the witness of a pinned
 * region, and inside a coroutine that witness resumed (which waits on it,
 * RUNNING, and whose region waits on the dirty list). */
GB_TEST(the_checkers_pass_inside_coroutines_and_over_their_pinned_finished_and_waiting_states)
{
    SKIP_UNCHECKED();
    build();
    gb_region *p = gb_enter();
    gb_coro *second = gb_coro_new(gbs_hold_forever, gb_alloc(100), 0);
    gb_coro_resume(second);
    gb_leave(p);
    CHECK_EQ(self()->pins.npinned, 2);
    gb__check_thread(self());

    gb_coro *once = gb_coro_new(gbs_hold_once, NULL, 0);
    gb_coro_resume(once);
    gb_coro_resume(once);
    CHECK_EQ(gb_coro_status_of(once), GB_CORO_FINISHED);
    CHECK(gb__list_linked(&coro(once)->fz.flink) && !gb__pin_is_frozen(&coro(once)->fz));
    gb__check_thread(self());

    static const job here = {check_here};
    run_inside(&here);
    static const job off = {check_off_the_frozen_list};
    run_inside(&off);

    witness_job = check_inside_the_witness;
    gb_coro_resume(state.holder);
    in_resumed.fn = check_with_a_region_dirty;
    witness_job = witness_resumes;
    gb_coro_resume(state.holder);
    witness_job = NULL;
    CHECK_EQ(self()->pins.npinned, 2);
    gb__check_thread(self());

    gb_coro_free(once);
    gb_coro_free(second);
    gb_coro_free(state.holder);
    gb_coro_free(state.idle);
    gb_leave(state.inner);
    gb_leave(state.outer);
    gb_sweep();
    gb__check_thread(self());
    gbt_check_all_given_back();
}

/* The map source and a cache bound of `blocks` times 64 KiB, a whole
 * number of map_min blocks (class 0 of the cache) for any page size up to
 * 64 KiB; returns map_min. */
static size_t init_cache_of(size_t blocks)
{
    gb_options o;
    gb_options_init(&o);
    o.blocks = GB_BLOCKS_MAP;
    o.cache_bytes = blocks * (GB__MAP_MIN > 65536 ? GB__MAP_MIN : 65536);
    gb_init(&o);
    CHECK_EQ(o.cache_bytes % gb__cfg.map_min, 0);
    return gb__cfg.map_min;
}

/* Fills class 0 of this thread's cache with n fresh blocks. */
static void cache_fill(size_t n)
{
    gb__cache *cache = &self()->mem.cache;
    gb__chunk c[64];
    CHECK(n <= 64);
    for (size_t i = 0; i < n; i++) {
        c[i] = gb__chunk_get(cache, gb__cfg.map_min);
        CHECK(c[i].src == GB__SRC_MAP && c[i].size == gb__cfg.map_min);
    }
    for (size_t i = 0; i < n; i++)
        gb__chunk_put(cache, c[i]);
}

/* A cache holding exactly its bound: one list as long as the bound admits,
 * the thread's bytes and the process's at the bound, none past it. */
GB_TEST(the_checkers_pass_over_a_cache_full_to_its_bound)
{
    SKIP_UNCHECKED();
    size_t size = init_cache_of(4);
    size_t n = gb__cfg.cache_bytes / size;
    cache_fill(n);
    CHECK_EQ(self()->mem.cache.bytes, gb__cfg.cache_bytes);
    CHECK_EQ(gbt_stats().bytes_cached, gb__cfg.cache_bytes);
    gb__check_thread(self());
    gb_sweep();
    gbt_check_all_given_back();
}

static void *check_current_from_a_new_thread(void *arg)
{
    (void)arg;
    gb__check_current();
    return gb__tls;
}

/* The fuzz target checks after every operation, on threads that may not
 * have used the runtime yet: there is nothing to check then. */
GB_TEST(checking_the_current_thread_before_it_has_any_state_does_nothing)
{
    SKIP_UNCHECKED();
    pthread_t th;
    void *tls = &th;
    CHECK_EQ(pthread_create(&th, NULL, check_current_from_a_new_thread, NULL), 0);
    CHECK_EQ(pthread_join(th, &tls), 0);
    CHECK(tls == NULL);
}

/* ------------------------------------------------- descriptor pages */

/* The handle checker alone: the region checker, which runs first in
 * gb__check_thread, also reads a page's owner. */
static void page_of_other_memory(void)
{
    build();
    page_of(state.outer)->owner = NULL;
    gb__handle_check(self());
}

GB_TEST(a_descriptor_page_owned_by_other_memory_stops_the_handle_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(page_of_other_memory, "is owned by the memory (nil), not its thread's");
}

static void page_floor_above_gen_hi(void)
{
    build();
    gb__dpage *pg = page_of(state.outer);
    pg->floor = pg->gen_hi + 1;
    gb__check_thread(self());
}

GB_TEST(a_descriptor_page_whose_floor_is_above_its_gen_hi_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(page_floor_above_gen_hi, ", or floor ");
}

/* Free slots are read by the handle checker only. */
static void free_slot_elsewhere(void)
{
    build();
    page_of(state.outer)->free->where ^= 1;
    gb__check_thread(self());
}

GB_TEST(a_free_descriptor_slot_that_names_another_place_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(free_slot_elsewhere, ", not its own");
}

static void handle_0_not_free(void)
{
    build();
    page_of(state.outer)->free->state = GB__LIVE;
    gb__check_thread(self());
}

GB_TEST(a_descriptor_slot_with_handle_0_that_is_not_free_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(handle_0_not_free, "has handle 0 but state 1, not FREE");
}

static void free_slot_past_gen_hi(void)
{
    build();
    gb__dpage *pg = page_of(state.outer);
    pg->free->gen = pg->gen_hi + 1;
    gb__check_thread(self());
}

GB_TEST(a_free_descriptor_slot_whose_generation_is_past_gen_hi_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(free_slot_past_gen_hi, "above gen_hi");
}

/* Its handle made anew for that generation, so that the region checker
 * finds the region whole: only the page's bounds are broken. */
static void region_past_gen_hi(void)
{
    build();
    gb_region *r = slot_of(state.outer);
    r->gen = r->page->gen_hi + 1;
    r->handle = (uintptr_t)(r->gen << GB__H_GEN_SHIFT) | r->where;
    gb__check_thread(self());
}

GB_TEST(a_region_whose_generation_is_past_its_pages_gen_hi_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(region_past_gen_hi, "'s generation 3 is outside [floor 1, gen_hi 2]");
}

/* The handle checker alone: the region checker sees it first otherwise. */
static void used_slot_handle_off(void)
{
    build();
    slot_of(state.inner)->handle += (uintptr_t)1 << GB__H_GEN_SHIFT;
    gb__handle_check(self());
}

GB_TEST(a_used_descriptor_slot_whose_handle_is_not_its_generation_stops_the_handle_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(used_slot_handle_off, "'s handle 0x");
}

/* The second page made to name the full page's directory entry, with its
 * one region's place and handle made anew to match: each field agrees
 * with the others, but the handle decodes to slot 0 of the full page. */
static gb_region *entry_of_the_full_page(void)
{
    gb_region *first, *h = fill_a_page(&first);
    gb_region *r = slot_of(h), *other = slot_of(first);
    CHECK(r == &r->page->slot[0] && other == &other->page->slot[0]);
    r->page->entry = other->page->entry;
    r->where = other->where;
    r->handle = (uintptr_t)(r->gen << GB__H_GEN_SHIFT) | r->where;
    CHECK_EQ(r->handle, other->handle);
    return r;
}

static void page_slot_decodes_elsewhere(void)
{
    entry_of_the_full_page();
    gb__handle_check(self());
}

static void region_decodes_elsewhere(void)
{
    entry_of_the_full_page();
    gb__check_thread(self());
}

GB_TEST(a_handle_that_decodes_to_another_pages_slot_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(page_slot_decodes_elsewhere, "does not decode to its own slot (page");
    gbt_expect_death(region_decodes_elsewhere, "its handle does not decode to its own slot");
}

static void nused_off(void)
{
    build();
    page_of(state.outer)->nused++;
    gb__check_thread(self());
}

GB_TEST(a_descriptor_page_whose_nused_is_not_its_used_slots_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(nused_off, "nused is 4, but 3 of its slots are LIVE or RETIRED");
}

/* The outermost region's slot (its parent is NULL) linked behind the free
 * one. */
static void free_list_too_long(void)
{
    build();
    gb_region *outer = slot_of(state.outer);
    CHECK(outer->parent == NULL);
    outer->page->free->parent = outer;
    gb__check_thread(self());
}

GB_TEST(a_free_list_longer_than_the_free_slots_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(free_list_too_long, "its free list holds more than its 1 free slots");
}

/* The first slot never used, made free-looking, in place of the free
 * slot: one past the used ones. */
static void free_list_holds_a_fresh_slot(void)
{
    build();
    gb__dpage *pg = page_of(state.outer);
    CHECK(pg->nfresh < pg->cap);
    gb_region *s = &pg->slot[pg->nfresh];
    s->handle = 0;
    s->state = GB__FREE;
    s->parent = NULL;
    pg->free = s;
    gb__check_thread(self());
}

GB_TEST(a_free_list_holding_a_slot_never_used_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(free_list_holds_a_fresh_slot, "not one of its used slots");
}

static void free_list_holds_a_region(void)
{
    build();
    gb_region *outer = slot_of(state.outer);
    outer->page->free = outer;
    gb__check_thread(self());
}

GB_TEST(a_free_list_holding_a_region_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(free_list_holds_a_region, "is on its free list with handle 0x");
}

static void page_with_a_slot_off_the_list(void)
{
    build();
    gb__list_remove(&page_of(state.outer)->alink);
    gb__check_thread(self());
}

/* One region on a page whose slot 0 was freed: the coroutine that entered
 * the first region left it once the thread's own was entered. */
static void enter_yield_leave(void *arg)
{
    (void)arg;
    gb_region *r = gb_enter();
    gb_coro_yield();
    gb_leave(r);
}

static gb_region *after_a_freed_slot_0(void)
{
    gb_coro *c = gb_coro_new(enter_yield_leave, NULL, 0);
    gb_coro_resume(c);
    gb_region *h = gb_enter();
    gb_coro_resume(c);
    gb_coro_free(c);
    gb_region *r = slot_of(h);
    CHECK(r == &r->page->slot[1] && r->page->free == &r->page->slot[0]);
    CHECK_EQ(r->page->nused, 1);
    return h;
}

static void page_after_slot_0_off_the_list(void)
{
    gb__list_remove(&page_of(after_a_freed_slot_0())->alink);
    gb__check_thread(self());
}

/* A page off the available list is checked through the region in its
 * first used slot, whichever slot that is. */
GB_TEST(a_page_with_a_free_slot_off_the_available_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(page_with_a_slot_off_the_list, "is not on the available list, with a slot to give");
    gbt_expect_death(page_after_slot_0_off_the_list, "is not on the available list, with a slot to give");
}

/* The spare put on the available list and no longer kept as the spare. */
static void empty_page_on_the_list(void)
{
    gb__dpage *pg = make_spare();
    self()->mem.dspare = NULL;
    gb__handle_avail_push(&self()->mem, pg);
    gb__check_thread(self());
}

GB_TEST(an_empty_descriptor_page_that_is_not_the_spare_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(empty_page_on_the_list, "holds 0 regions (only the spare is kept empty)");
}

/* Slot 0 of the spare made a LIVE region's, whole: its handle, off the free
 * list, counted in nused. */
static void spare_holds_a_region(void)
{
    gb__dpage *pg = make_spare();
    gb_region *s = &pg->slot[0];
    pg->free = s->parent;
    s->handle = (uintptr_t)(s->gen << GB__H_GEN_SHIFT) | s->where;
    s->state = GB__LIVE;
    pg->nused = 1;
    gb__check_thread(self());
}

GB_TEST(a_spare_descriptor_page_holding_a_region_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(spare_holds_a_region, "holds 1 regions but is the spare");
}

static void full_page_nused_off(void)
{
    gb_region *first;
    fill_a_page(&first);
    page_of(first)->nused--;
    gb__check_thread(self());
}

static gb_region *full_first, *full_second;

static void full_page_checked_from_its_first_region(void)
{
    gb__region_check(self(), slot_of(full_first), slot_of(full_first)->stack);
}

/* A full page is on no list: the region checker checks it, once, from the
 * region in its first used slot, so that checking each region of a full
 * page costs time linear in them; a page with a free slot is the handle
 * checker's, which walks the available list. */
GB_TEST(a_full_page_is_checked_from_its_first_region_and_a_page_with_a_slot_by_the_handle_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(full_page_nused_off, "nused is");

    full_second = fill_a_page(&full_first);
    gb__dpage *pg = page_of(full_first);
    gb_region *second = &pg->slot[1];
    CHECK(second->handle != 0);
    pg->nused--;
    gb__region_check(self(), second, second->stack);
    gbt_expect_death(full_page_checked_from_its_first_region, "nused is");
    pg->nused++;

    /* The second page, with a free slot, is on the available list. */
    gb_region *r = slot_of(full_second);
    CHECK(gb__handle_in_avail(r->page));
    r->page->nused++;
    gb__region_check(self(), r, r->stack);
    gbt_expect_death(check_here, "nused is 2, but 1 of its slots");
    r->page->nused--;
    gb__check_thread(self());
}

/* Pages whose slots other threads free. A region handed to another
 * thread and left there gives its slot to its page's rfree, which the
 * page's thread takes back at its next gb_enter; until then the checkers
 * read it, with the page's other free slots beside it. */
static void *attach_and_leave(void *arg)
{
    gb_region *r = arg;
    gb_region_attach(r);
    gb_leave(r);
    return NULL;
}

static void leave_on_a_thread(gb_region *r)
{
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, attach_and_leave, r), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
}

/* This thread's page with three slots fresh: one used, one free, one
 * freed on another thread and not yet taken back. */
static gb_region *page_with_a_slot_freed_elsewhere(void)
{
    gb_init(NULL);
    gb_region *kept = gb_enter();
    gb_region *below = gb_enter();
    gb_region *r = gb_enter();
    gb_region_detach(r);
    gb_leave(below);
    leave_on_a_thread(r);
    gb__dpage *pg = page_of(kept);
    CHECK(pg->rfree && pg->nfresh == 3 && pg->nused == 2 && pg->free);
    return kept;
}

static void rfree_holding_a_used_slot(void)
{
    gb_region *kept = page_with_a_slot_freed_elsewhere();
    page_of(kept)->rfree->parent = slot_of(kept);
    gb__handle_check(self());
}

static void rfree_looping(void)
{
    gb_region *s = page_of(page_with_a_slot_freed_elsewhere())->rfree;
    s->parent = s;
    gb__handle_check(self());
}

/* The page's first slot never handed out: its handle is 0, as a free
 * slot's is, but it is past the page's fresh ones. */
static void rfree_past_the_fresh_slots(void)
{
    gb__dpage *pg = page_of(page_with_a_slot_freed_elsewhere());
    pg->rfree->parent = &pg->slot[pg->nfresh];
    gb__handle_check(self());
}

/* A slot of a page below another, with handle 0 as a free slot has, on
 * the rfree of the page above. */
static void rfree_holding_a_slot_of_a_page_below(void)
{
    gb_init(NULL);
    gb_region *first, *h = fill_a_page(&first);
    gb__dpage *a = page_of(first), *b = page_of(h);
    gb__dpage *low = a < b ? a : b, *high = a < b ? b : a;
    gb_region *s = &low->slot[0];
    s->handle = 0;
    s->parent = NULL;
    high->rfree = s;
    gb__dpage_check(&self()->mem, high);
}

static void lent_slot_not_in_the_table(void)
{
    gb_region *kept = page_with_a_slot_freed_elsewhere();
    slot_of(kept)->lent = true;
    gb__handle_check(self());
}

static void rfree_off_the_threads_list(void)
{
    gb_region *kept = page_with_a_slot_freed_elsewhere();
    gb__list_remove(&page_of(kept)->rlink);
    gb__handle_check(self());
}

GB_TEST(a_page_with_a_slot_freed_elsewhere_passes_the_checkers_until_one_is_wrong)
{
    SKIP_UNCHECKED();
    gb_region *kept = page_with_a_slot_freed_elsewhere();
    gb__check_thread(self());
    gb_leave(gb_enter()); /* takes the slot back */
    CHECK(!page_of(kept)->rfree);
    gb__check_thread(self());
    gb_leave(kept);
    gbt_expect_death(rfree_holding_a_used_slot, "its rfree holds 0x");
    gbt_expect_death(rfree_looping, "its rfree holds 0x");
    gbt_expect_death(rfree_past_the_fresh_slots, "its rfree holds 0x");
    gbt_expect_death(rfree_holding_a_slot_of_a_page_below, "its rfree holds 0x");
    gbt_expect_death(lent_slot_not_in_the_table, "is lent but not in the table of lent regions");
    gbt_expect_death(rfree_off_the_threads_list, "is not on its thread's list of pages with slots freed elsewhere, with 1");
    gb_sweep();
    gbt_check_all_given_back();
}

/* Other threads leave regions of this thread's page, writing its rfree
 * under the directory's lock, while this thread checks its pages again
 * and again: the checker reads them under that lock (under
 * ThreadSanitizer, a read outside it is a reported race). */
enum { PAGE_SHARERS = 2, PAGE_REGIONS = 600 };
static gb_region *page_regions[PAGE_REGIONS];
static atomic_int page_next, page_sharers;

static void *leave_page_regions(void *arg)
{
    (void)arg;
    for (int i; (i = atomic_fetch_add(&page_next, 1)) < PAGE_REGIONS;) {
        gb_region_attach(page_regions[i]);
        gb_leave(page_regions[i]);
    }
    atomic_fetch_sub(&page_sharers, 1);
    return NULL;
}

GB_TEST(threads_share_descriptor_pages_with_the_checker_which_reads_them_under_the_lock)
{
    SKIP_UNCHECKED();
    gb_init(NULL);
    for (int i = 0; i < PAGE_REGIONS; i++) {
        page_regions[i] = gb_enter();
        gb_region_detach(page_regions[i]);
    }
    atomic_store(&page_next, 0);
    atomic_store(&page_sharers, PAGE_SHARERS);
    pthread_t t[PAGE_SHARERS];
    for (int i = 0; i < PAGE_SHARERS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, leave_page_regions, NULL), 0);
    int checks = 0;
    while (atomic_load(&page_sharers) > 0 || checks == 0) {
        gb__handle_check(self());
        checks++;
    }
    for (int i = 0; i < PAGE_SHARERS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    gb_leave(gb_enter()); /* takes the slots back */
    gb__check_thread(self());
    CHECK_EQ(gbt_stats().regions_live, 0);
    gb_sweep();
    gbt_check_all_given_back();
}

/* ------------------------------------------------------------- regions */

static void live_region_names_no_stack(void)
{
    build();
    slot_of(state.inner)->stack = NULL;
    gb__check_thread(self());
}

GB_TEST(a_live_region_whose_stack_field_is_not_its_stack_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(live_region_names_no_stack, "but its stack field says (nil)");
}

static void live_region_with_a_witness(void)
{
    build();
    slot_of(state.inner)->witness = &coro(state.idle)->fz;
    gb__check_thread(self());
}

GB_TEST(a_live_region_with_a_witness_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(live_region_with_a_witness, "is LIVE but on a retired list or with a witness");
}

static void region_on_a_stack_not_live(void)
{
    build();
    slot_of(state.inner)->state = GB__FREE;
    gb__check_thread(self());
}

GB_TEST(a_region_on_a_stack_that_is_not_live_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(region_on_a_stack_not_live, "is on a region stack, in state 0 (expected LIVE)");
}

static void retired_region_names_a_stack(void)
{
    build();
    retired()->stack = &self()->main_stack;
    gb__check_thread(self());
}

GB_TEST(a_retired_region_that_names_a_stack_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(retired_region_names_a_stack, "is RETIRED but on a stack");
}

/* Off its retired list, the region is reached by no walk of the thread's
 * checkers: the region checker is given it, as the pin checker would. */
static void retired_region_on_no_list(void)
{
    build();
    gb_region *r = retired();
    gb__list_remove(&r->rlink);
    gb__region_check(self(), r, NULL);
}

GB_TEST(a_retired_region_on_no_retired_list_stops_the_region_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(retired_region_on_no_list, "is RETIRED but on no retired list");
}

static void live_region_without_a_handle(void)
{
    build();
    slot_of(state.inner)->handle = 0;
    gb__check_thread(self());
}

GB_TEST(a_live_region_without_a_handle_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(live_region_without_a_handle, "a region in use has a handle and a page of this thread");
}

static void region_of_another_home(void)
{
    build();
    slot_of(state.inner)->home = NULL;
    gb__check_thread(self());
}

GB_TEST(a_region_whose_home_is_not_its_threads_memory_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(region_of_another_home, "its home is (nil), not its thread's memory");
}

/* The page's fresh slots start at the inner region's: its slot reads as
 * never used. */
static void region_past_nfresh(void)
{
    build();
    gb_region *r = slot_of(state.inner);
    r->page->nfresh = (uint32_t)(r - r->page->slot);
    gb__region_check(self(), r, &self()->main_stack);
}

GB_TEST(a_region_in_a_slot_its_page_never_used_stops_the_region_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(region_past_nfresh, "is not a used slot of its page");
}

static void block_without_owner(void)
{
    build();
    older_chained(slot_of(state.outer))->owner = NULL;
    gb__check_thread(self());
}

static void block_no_larger_than_its_header(void)
{
    build();
    older_chained(slot_of(state.outer))->chunk.size = GB__BLOCK_HDR;
    gb__check_thread(self());
}

GB_TEST(a_block_without_its_owner_or_larger_than_its_header_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(block_without_owner, "has owner (nil), chunk");
    gbt_expect_death(block_no_larger_than_its_header, "more than a header");
}

/* The index names the other region as the block's owner; the block's
 * own header still names its region. */
static void block_indexed_under_another(void)
{
    build();
    gb__block *b = older_chained(slot_of(state.outer));
    gb__index_set_owner(&self()->mem.index, b->chunk.base, b->chunk.size, (uintptr_t)b | GB__INDEX_BLOCK,
                        slot_of(state.inner));
    gb__check_thread(self());
}

GB_TEST(a_block_indexed_under_another_region_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(block_indexed_under_another, "is not in the thread's address index under the region");
}

static void nblocks_short(void)
{
    build();
    slot_of(state.outer)->nblocks--;
    gb__check_thread(self());
}

static void nblocks_long(void)
{
    build();
    slot_of(state.outer)->nblocks++;
    gb__check_thread(self());
}

GB_TEST(nblocks_that_does_not_count_the_block_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(nblocks_short, "its block list holds more than nblocks");
    gbt_expect_death(nblocks_long, ", its block list holds ");
}

static void current_block_not_the_newest(void)
{
    build();
    gb_region *r = slot_of(state.outer);
    r->cur_block = older_chained(r);
    gb__check_thread(self());
}

GB_TEST(a_current_block_that_is_not_the_newest_chained_one_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(current_block_not_the_newest, "is not its newest chained block");
}

/* A region entered with no allocation yet, given a bump pointer. */
static void bump_without_a_block(void)
{
    build();
    gb_region *r = slot_of(gb_enter());
    r->bump = slot_of(state.inner)->bump;
    gb__check_thread(self());
}

static void chained_blocks_without_a_current_one(void)
{
    build();
    gb_region *r = slot_of(state.outer);
    r->cur_block = NULL;
    r->bump = r->end = NULL;
    gb__check_thread(self());
}

GB_TEST(a_live_region_without_a_current_block_but_a_bump_or_blocks_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(bump_without_a_block, "with no current block");
    gbt_expect_death(chained_blocks_without_a_current_one, "no current block, but chained block");
}

/* The payload of the outer region's current block: [*lo, *hi). */
static gb_region *outer_payload(char **lo, char **hi)
{
    gb_region *r = slot_of(state.outer);
    *lo = (char *)r->cur_block + GB__BLOCK_HDR;
    *hi = (char *)r->cur_block + r->cur_block->chunk.size;
    CHECK(*lo < r->bump && r->bump < r->end && r->end <= *hi);
    return r;
}

static void bump_below_its_block(void)
{
    build();
    char *lo, *hi;
    gb_region *r = outer_payload(&lo, &hi);
    r->bump = lo - 16;
    gb__check_thread(self());
}

static void end_below_bump_checked(void)
{
    build();
    char *lo, *hi;
    gb_region *r = outer_payload(&lo, &hi);
    r->end = r->bump - 16;
    gb__check_thread(self());
}

static void end_past_its_block(void)
{
    build();
    char *lo, *hi;
    gb_region *r = outer_payload(&lo, &hi);
    r->end = hi + 16;
    gb__check_thread(self());
}

GB_TEST(a_bump_or_end_outside_its_block_or_out_of_order_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(bump_below_its_block, "both inside cur_block");
    gbt_expect_death(end_below_bump_checked, "both inside cur_block");
    gbt_expect_death(end_past_its_block, "both inside cur_block");
}

static void last_without_last_block(void)
{
    build();
    slot_of(state.outer)->last = NULL;
    gb__check_thread(self());
}

GB_TEST(a_last_allocation_and_its_block_one_without_the_other_stop_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(last_without_last_block, "(both or neither)");
}

/* The inner region's last allocation moved to a block of the outer one. */
static void last_in_another_regions_block(void)
{
    build();
    gb_region *r = slot_of(state.inner);
    gb__block *b = older_chained(slot_of(state.outer));
    r->last_block = b;
    r->last = (char *)b + GB__BLOCK_HDR;
    gb__check_thread(self());
}

GB_TEST(a_last_allocation_in_a_block_that_is_not_the_regions_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(last_in_another_regions_block, "is not one of its blocks");
}

/* The end of the block is one past its payload. */
static void last_at_its_blocks_end(void)
{
    build();
    gb_region *r = slot_of(state.outer);
    r->last = (char *)r->last_block + r->last_block->chunk.size;
    gb__check_thread(self());
}

GB_TEST(a_last_allocation_at_its_blocks_end_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(last_at_its_blocks_end, "is not inside last_block's payload");
}

/* The inner region's last allocation is the first of its current block:
 * bump moved back there leaves it inside the block, and the allocation
 * above bump, as if not taken. */
static void bump_back_at_the_last_allocation(void)
{
    build();
    gb_region *r = slot_of(state.inner);
    CHECK(r->last_block == r->cur_block && (char *)r->last == (char *)r->cur_block + GB__BLOCK_HDR);
    r->bump = r->last;
    gb__check_thread(self());
}

GB_TEST(a_bump_pointer_back_at_the_last_allocation_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(bump_back_at_the_last_allocation, "is at or above bump");
}

static void kept_block_with_owner(void)
{
    build();
    gb_region *r = slot_of(state.inner);
    r->kept->owner = r;
    gb__check_thread(self());
}

GB_TEST(a_kept_block_with_an_owner_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(kept_block_with_owner, "(a kept block has none)");
}

static void kept_bytes_off(void)
{
    build();
    slot_of(state.inner)->kept_bytes += 16;
    gb__check_thread(self());
}

GB_TEST(kept_bytes_that_is_not_the_kept_blocks_sizes_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(kept_bytes_off, "and kept_bytes");
}

static gb__arena *outer_arena(void)
{
    gb_region *r = slot_of(state.outer);
    CHECK(!gb__list_empty(&r->arenas));
    gb__arena *a = GB__LIST_ENTRY(r->arenas.next, gb__arena, link);
    CHECK(a->chunk.base != NULL);
    return a;
}

static void arena_of_another_holder(void)
{
    build();
    outer_arena()->holder = slot_of(state.inner);
    gb__check_thread(self());
}

/* An arena's index entry has no owner: it names the arena itself. */
static void arena_indexed_with_an_owner(void)
{
    build();
    gb__arena *a = outer_arena();
    gb__index_set_owner(&self()->mem.index, a->chunk.base, a->chunk.size, (uintptr_t)a | GB__INDEX_ARENA,
                        slot_of(state.outer));
    gb__check_thread(self());
}

GB_TEST(an_arena_held_by_another_region_or_indexed_wrong_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(arena_of_another_holder, "on its list is held by");
    gbt_expect_death(arena_indexed_with_an_owner, ") is not in the thread's address index");
}

/* -------------------------------------------------------- region stacks */

static void main_stack_with_an_owner(void)
{
    build();
    self()->main_stack.owner = state.idle;
    gb__check_thread(self());
}

GB_TEST(the_threads_own_stack_naming_an_owner_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(main_stack_with_an_owner, "the thread's own region stack names an owner");
}

static void depth_short(void)
{
    build();
    self()->main_stack.depth--;
    gb__check_thread(self());
}

static void depth_long(void)
{
    build();
    self()->main_stack.depth++;
    gb__check_thread(self());
}

/* The outermost region's parent made a free slot: the stack holds one
 * more than its depth, and the walk stops there, before it reads that
 * slot as a region. */
static void parent_past_the_depth(void)
{
    build();
    gb_region *outer = slot_of(state.outer);
    outer->parent = outer->page->free;
    gb__check_thread(self());
}

GB_TEST(a_stack_depth_that_does_not_count_its_regions_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(depth_short, "the thread's own region stack: more regions on it than its depth 1");
    gbt_expect_death(depth_long, "the thread's own region stack: depth is 3, 2 regions are on it");
    gbt_expect_death(parent_past_the_depth, "the thread's own region stack: more regions on it than its depth 2");
}

static void cur_names_another_stack(void)
{
    build();
    self()->cur = &coro(state.idle)->rstack;
    gb__check_thread(self());
}

GB_TEST(a_cur_that_is_not_the_running_contexts_stack_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(cur_names_another_stack, "the thread's cur is");
}

static void own_region_off(void)
{
    gb_region *h = gb_enter();
    gb_alloc(100);
    slot_of(h)->bytes += 16;
    gb__check_thread(self());
}

static void running_coroutines_region_off(void)
{
    build();
    static const job j = {own_region_off};
    run_inside(&j);
}

/* A coroutine that entered a region and yields, holding it. */
static void enter_and_hold(void *arg)
{
    (void)arg;
    gb_enter();
    gb_alloc(100);
    for (;;)
        gb_coro_yield();
}

static void frozen_coroutines_region_off(void)
{
    build();
    gb_coro *c = gb_coro_new(enter_and_hold, NULL, 0);
    gb_coro_resume(c);
    coro(c)->rstack.top->bytes += 16;
    gb__check_thread(self());
}

GB_TEST(a_broken_region_on_a_running_or_frozen_coroutines_stack_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(running_coroutines_region_off, "bytes is");
    gbt_expect_death(frozen_coroutines_region_off, "bytes is");
}

static void own_stack_owner_off(void)
{
    coro(gb_coro_current())->rstack.owner = NULL;
    gb__check_thread(self());
}

static void own_stack_resumer_off(void)
{
    coro(gb_coro_current())->rstack.resumer = NULL;
    gb__check_thread(self());
}

static void running_stack_owner_off(void)
{
    static const job j = {own_stack_owner_off};
    run_inside(&j);
}

static void running_stack_resumer_off(void)
{
    static const job j = {own_stack_resumer_off};
    run_inside(&j);
}

GB_TEST(a_running_coroutines_stack_naming_another_owner_or_resumer_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(running_stack_owner_off, "region stack names (nil) as its owner");
    gbt_expect_death(running_stack_resumer_off, "region stack names (nil) as its resumer's");
}

/* -------------------------------------------------------------- pinning */

static void witness_of_another_thread(void)
{
    build();
    coro(state.holder)->thread = &another;
    gb__check_thread(self());
}

GB_TEST(a_pinned_regions_witness_of_another_thread_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(witness_of_another_thread, ", which is neither frozen nor running");
}

static void pinned_on_no_witnessed_list(void)
{
    build();
    gb__list_remove(&retired()->wlink);
    gb__check_thread(self());
}

GB_TEST(a_pinned_region_on_no_witnessed_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(pinned_on_no_witnessed_list, ", on no witnessed list");
}

static void pinned_region_off(void)
{
    build();
    retired()->bytes += 16;
    gb__check_thread(self());
}

GB_TEST(a_broken_pinned_region_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(pinned_region_off, "bytes is");
}

static void npinned_short(void)
{
    build();
    self()->pins.npinned--;
    gb__check_thread(self());
}

GB_TEST(npinned_short_of_the_pinned_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(npinned_short, "retired_pinned holds more regions than npinned (0)");
}

/* A witnessed region taken off the pinned list, and npinned with it. */
static void witnessed_on_no_retired_list(void)
{
    build();
    gb__list_remove(&retired()->rlink);
    self()->pins.npinned--;
    gb__check_thread(self());
}

GB_TEST(a_witnessed_region_on_no_retired_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(witnessed_on_no_retired_list, "the witnessed lists hold 1 regions, npinned is 0");
}

static void dirty_with_a_witness(void)
{
    dirty()->witness = &coro(state.idle)->fz;
    gb__check_thread(self());
}

static void dirty_region_off(void)
{
    dirty()->bytes += 16;
    gb__check_thread(self());
}

/* Inside a coroutine the witness resumed: the pinned region is dirty. */
static void inside_with_a_region_dirty(void (*fn)(void))
{
    build();
    in_resumed.fn = fn;
    witness_job = witness_resumes;
    gb_coro_resume(state.holder);
}

static void dirty_region_with_a_witness(void)
{
    inside_with_a_region_dirty(dirty_with_a_witness);
}

static void broken_dirty_region(void)
{
    inside_with_a_region_dirty(dirty_region_off);
}

GB_TEST(a_dirty_region_with_a_witness_or_broken_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(dirty_region_with_a_witness, "is on retired_dirty but has witness");
    gbt_expect_death(broken_dirty_region, "bytes is");
}

static void frozen_one_thawed(void)
{
    build();
    coro(state.idle)->fz.frozen = false;
    gb__check_thread(self());
}

/* A finished coroutine stays on the frozen list until the list is read. */
static void finished_one_of_another_thread(void)
{
    build();
    gb_coro *once = gb_coro_new(gbs_hold_once, NULL, 0);
    gb_coro_resume(once);
    gb_coro_resume(once);
    CHECK(gb__list_linked(&coro(once)->fz.flink));
    coro(once)->thread = &another;
    gb__check_thread(self());
}

GB_TEST(a_thawed_coroutine_on_the_frozen_list_neither_running_nor_this_threads_finished_one_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(frozen_one_thawed, "is on the frozen list thawed, in status 1");
    gbt_expect_death(finished_one_of_another_thread, "is on the frozen list thawed, in status 3");
}

static void frozen_one_of_another_thread(void)
{
    build();
    coro(state.idle)->thread = &another;
    gb__check_thread(self());
}

GB_TEST(another_threads_coroutine_on_the_frozen_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(frozen_one_of_another_thread, "on the frozen list is another thread's");
}

static void running_one_of_another_thread_off_the_list(void)
{
    gb_leave(gb_enter());
    CHECK(!gb__list_linked(&self()->cur_coro->fz.flink));
    self()->cur_coro->thread = &another;
    gb__check_thread(self());
}

static void running_one_of_another_thread(void)
{
    static const job j = {running_one_of_another_thread_off_the_list};
    run_inside(&j);
}

GB_TEST(a_running_coroutine_of_another_thread_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(running_one_of_another_thread, "the running coroutine 0x");
}

static void waiting_one_off_the_list(void)
{
    gb__list_remove(&self()->cur_coro->caller->fz.flink);
    gb__check_thread(self());
}

static void resumer_off_the_frozen_list(void)
{
    inside_with_a_region_dirty(waiting_one_off_the_list);
}

GB_TEST(a_coroutine_waiting_on_the_running_one_off_the_frozen_list_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(resumer_off_the_frozen_list, "waits on the running one but is in status 2");
}

/* A suspended coroutine marked as waiting on one it resumed, which none
 * is. */
static void waiting_on_none(void)
{
    build();
    coro(state.idle)->status = GB_CORO_RUNNING;
    gb__check_thread(self());
}

GB_TEST(a_frozen_coroutine_running_with_none_waited_on_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(waiting_on_none, "1 frozen coroutines are RUNNING (waiting on one they resumed), but 0");
}

/* ------------------------------------------------------ stack summaries
 *
 * build() leaves both suspended coroutines with a summary: the leave that
 * retired the pinned region asked the idle one first (the most recently
 * frozen) and then the holder. Each case breaks one promise of struct
 * gb__frozen (pin.h) in the idle one's and runs the summary checker. */

/* The idle coroutine's stack record, its summary built and sound. */
static gb__frozen *idle_summary(void)
{
    build();
    gb__frozen *f = &coro(state.idle)->fz;
    CHECK(f->summary_valid && f->frozen);
    CHECK(f->nsummary >= 2 && f->nsummary < f->summary_cap);
    gb__pin_summary_check(f);
    return f;
}

static void stale_summary_not_emptied(void)
{
    idle_summary()->summary_valid = false;
    gb__check_thread(self());
}

GB_TEST(a_stale_summary_that_still_holds_words_stops_the_pin_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(stale_summary_not_emptied, "its stale summary holds ");
    gbt_expect_death(stale_summary_not_emptied, "(gb__pin_summary_check, runtime/src/pin.c:");
}

static void valid_summary_of_a_thawed_stack(void)
{
    idle_summary()->frozen = false;
    gb__pin_summary_check(&coro(state.idle)->fz);
}

GB_TEST(a_valid_summary_of_a_stack_that_is_not_frozen_stops_the_summary_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(valid_summary_of_a_thawed_stack, "has a valid summary but is not frozen");
}

static void summary_past_its_capacity(void)
{
    gb__frozen *f = idle_summary();
    f->nsummary = f->summary_cap + 1;
    gb__pin_summary_check(f);
}

GB_TEST(a_summary_longer_than_its_allocation_stops_the_summary_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(summary_past_its_capacity, "words, past the ");
}

static void summary_word_below_the_lowest_pointer(void)
{
    gb__frozen *f = idle_summary();
    f->summary[0] = GB__LOWEST_POINTER - 1;
    gb__pin_summary_check(f);
}

GB_TEST(a_summary_word_below_the_lowest_pointer_stops_the_summary_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(summary_word_below_the_lowest_pointer, "summary word 0 is 0xfff, below the lowest pointer");
}

/* The second word made equal to the first: sorted, but not distinct. */
static void summary_word_repeated(void)
{
    gb__frozen *f = idle_summary();
    f->summary[1] = f->summary[0];
    gb__pin_summary_check(f);
}

/* The last word made smaller than the one before it. */
static void summary_out_of_order(void)
{
    gb__frozen *f = idle_summary();
    f->summary[f->nsummary - 1] = f->summary[f->nsummary - 2] - 1;
    gb__pin_summary_check(f);
}

GB_TEST(a_summary_out_of_order_or_repeating_a_word_stops_the_summary_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(summary_word_repeated, "summary word 1 (");
    gbt_expect_death(summary_word_repeated, "is not above the one before it");
    gbt_expect_death(summary_out_of_order, "is not above the one before it");
}

/* The summary's last word dropped: a word of the stack it no longer
 * holds. */
static void summary_missing_a_word(void)
{
    gb__frozen *f = idle_summary();
    f->nsummary--;
    gb__pin_summary_check(f);
}

GB_TEST(a_summary_missing_a_word_of_its_stack_stops_the_summary_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(summary_missing_a_word, "is not in its summary (the summary covers the stack)");
}

/* A word past the summary's largest, which no word of the stack is,
 * appended where the allocation has room. */
static void summary_with_a_word_of_no_stack(void)
{
    gb__frozen *f = idle_summary();
    f->summary[f->nsummary] = f->summary[f->nsummary - 1] + 8;
    f->nsummary++;
    gb__pin_summary_check(f);
}

GB_TEST(a_summary_holding_a_word_that_is_not_on_its_stack_stops_the_summary_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(summary_with_a_word_of_no_stack, "is no word of its stack");
}

/* A finished coroutine, thawed on the frozen list, whose stale summary
 * still holds words: the checker asks the thawed ones too. */
static void finished_one_with_a_stale_summary(void)
{
    build();
    gb_coro *once = gb_coro_new(gbs_hold_once, NULL, 0);
    gb_coro_resume(once);
    gb_coro_resume(once);
    gb__frozen *f = &coro(once)->fz;
    CHECK(gb__list_linked(&f->flink) && !f->frozen && !f->summary_valid);
    f->nsummary = 3;
    gb__check_thread(self());
}

/* The running coroutine, taken off the frozen list by a leave, with a
 * stale summary that still holds words. */
static void running_one_with_a_stale_summary_inside(void)
{
    gb_leave(gb_enter());
    gb__frozen *f = &self()->cur_coro->fz;
    CHECK(!gb__list_linked(&f->flink) && !f->summary_valid);
    f->nsummary = 2;
    gb__check_thread(self());
}

static void running_one_with_a_stale_summary(void)
{
    static const job j = {running_one_with_a_stale_summary_inside};
    build();
    run_inside(&j);
}

GB_TEST(a_stale_summary_holding_words_of_a_thawed_or_running_stack_stops_the_pin_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(finished_one_with_a_stale_summary, "its stale summary holds 3 words");
    gbt_expect_death(running_one_with_a_stale_summary, "its stale summary holds 2 words");
}

GB_TEST(a_summary_that_fills_its_allocation_passes_the_summary_checker)
{
    SKIP_UNCHECKED();
    gb__frozen *f = idle_summary();
    size_t cap = f->summary_cap;
    f->summary_cap = f->nsummary;
    gb__pin_summary_check(f);
    f->summary_cap = cap;
    gb_coro_free(state.holder);
    gb_coro_free(state.idle);
    gb_leave(state.inner);
    gb_leave(state.outer);
    gb_sweep();
    gbt_check_all_given_back();
}

/* The lowest pointer itself put in front of the summary, where no word
 * of the stack is: a pointer, so the checker names it as a word of no
 * stack, not as one below the lowest pointer. */
static void summary_led_by_the_lowest_pointer(void)
{
    gb__frozen *f = idle_summary();
    CHECK(f->summary[0] > GB__LOWEST_POINTER);
    memmove(&f->summary[1], &f->summary[0], f->nsummary * sizeof *f->summary);
    f->summary[0] = GB__LOWEST_POINTER;
    f->nsummary++;
    gb__pin_summary_check(f);
}

/* A word of the frozen stack below every pointer made the lowest pointer
 * itself, which the summary, built before, does not hold. Reads and
 * writes the frozen frames, which hold ASan's redzones, as the scan does:
 * without its checks. */
GB__NO_ASAN static void stack_word_at_the_lowest_pointer(void)
{
    gb__frozen *f = idle_summary();
    uintptr_t *w = f->sp;
    size_t i = 0;
    while (&w[i] < (uintptr_t *)(void *)f->hi && w[i] >= GB__LOWEST_POINTER)
        i++;
    CHECK(&w[i] < (uintptr_t *)(void *)f->hi);
    w[i] = GB__LOWEST_POINTER;
    gb__pin_summary_check(f);
}

GB_TEST(the_lowest_pointer_counts_as_a_pointer_in_a_summary_and_on_its_stack)
{
    SKIP_UNCHECKED();
    gbt_expect_death(summary_led_by_the_lowest_pointer, "summary word 0 (0x1000) is no word of its stack");
    gbt_expect_death(stack_word_at_the_lowest_pointer, "its word 0x1000 at ");
}

/* ---------------------------------------------------------------- cache */

/* A block of class 0 linked onto the full list as if the put had not made
 * room, counted in cache.bytes: the list holds more than the bound. */
static void cache_list_past_the_bound(void)
{
    size_t size = init_cache_of(4);
    gb__cache *cache = &self()->mem.cache;
    gb__chunk extra = gb__chunk_get(cache, size);
    cache_fill(gb__cfg.cache_bytes / size);
    *(void **)extra.base = cache->head[0];
    cache->head[0] = extra.base;
    cache->bytes += size;
    gb__check_thread(self());
}

GB_TEST(a_cache_list_longer_than_the_bound_admits_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(cache_list_past_the_bound, "-byte blocks than the bound");
}

/* A spare page reserved room for its size; the one here reads larger. */
static void spare_past_the_bound(void)
{
    size_t size = init_cache_of(4);
    gb__dpage *pg = make_spare();
    cache_fill(gb__cfg.cache_bytes / size - 1);
    CHECK_EQ(gbt_stats().bytes_cached, gb__cfg.cache_bytes);
    gb__check_thread(self());
    pg->chunk.size += size;
    gb__check_thread(self());
}

GB_TEST(a_spare_page_past_the_cache_bound_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(spare_past_the_bound, "and a spare page of");
}

static void bytes_cached_past_the_bound(void)
{
    build();
    GB__ADD(bytes_cached, gb__cfg.cache_bytes);
    gb__check_thread(self());
}

GB_TEST(bytes_cached_past_the_bound_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(bytes_cached_past_the_bound, "bytes_cached is");
}

/* ------------------------------------------------------------ the fuzzer's */

static void current_thread_broken(void)
{
    build();
    slot_of(state.inner)->bytes += 16;
    gb__check_current();
}

GB_TEST(checking_the_current_thread_checks_its_state)
{
    SKIP_UNCHECKED();
    gbt_expect_death(current_thread_broken, "bytes is");
}

/* ---------------------------------------------------------------- slabs */

/* Two slabs of the process's, built through the slab layer itself: the
 * first full, the second with three units in use and one given back
 * (dirty), as the slab checker must accept them; the case then breaks
 * one invariant and checks again. */
static gb__chunk slab_units[GB__SLAB_UNITS + 4];

static gb__slab *two_slabs(void)
{
    gbt_init_slabs();
    gb__cache *cache = &self()->mem.cache;
    for (int i = 0; i < GB__SLAB_UNITS + 4; i++)
        CHECK(gb__small_get(cache, gb__os.page_size, &slab_units[i]));
    gb__small_put(cache, slab_units[GB__SLAB_UNITS + 1]);
    CHECK_EQ(gbt_stats().slabs, 2);
    gb__small_check();
    return slab_units[GB__SLAB_UNITS].owner;
}

GB_TEST(the_slab_checker_passes_over_full_partial_and_dirty_slabs)
{
    SKIP_UNCHECKED();
    gb__slab *s = two_slabs();
    CHECK_EQ(s->nused, 3);
    CHECK_EQ(s->ndirty, 1);
    gb__check_current();
}

static void slab_count_off(void)
{
    two_slabs()->nused++;
    gb__small_check();
}

static void slab_dirty_count_off(void)
{
    two_slabs()->ndirty++;
    gb__small_check();
}

static void slab_released_count_off(void)
{
    two_slabs()->nreleased++;
    gb__small_check();
}

static void slab_unit_used_and_dirty(void)
{
    gb__slab *s = two_slabs();
    s->dirty[0] |= 1; /* unit 0 is in use */
    s->ndirty++;
    gb__small_check();
}

static void slab_unit_dirty_and_released(void)
{
    gb__slab *s = two_slabs();
    s->released[0] |= 2; /* unit 1 is dirty */
    s->nreleased++;
    gb__small_check();
}

static void slab_unit_used_and_released(void)
{
    gb__slab *s = two_slabs();
    s->released[0] |= 4; /* unit 2 is in use */
    s->nreleased++;
    gb__small_check();
}

static void slab_with_nothing_in_use(void)
{
    gb__slab *s = two_slabs();
    memset(s->used, 0, sizeof s->used);
    s->nused = 0;
    gb__small_check();
}

static void slab_a_batch_dirty(void)
{
    gb__slab *s = two_slabs();
    /* Units from 4 on are free and clean: as many as a batch made dirty. */
    unsigned add = (unsigned)(GB__SLAB_RELEASE_BATCH / gb__os.page_size) - s->ndirty;
    for (unsigned i = 4; i < 4 + add; i++)
        s->dirty[i / 64] |= (uint64_t)1 << (i % 64);
    s->ndirty += add;
    GB__ADD(bytes_small_dirty, (size_t)add * gb__os.page_size);
    gb__small_check();
}

static void slab_smaller_than_its_units(void)
{
    two_slabs()->size = gb__os.page_size;
    gb__small_check();
}

static void slab_after_a_full_one(void)
{
    gb__slab *s = two_slabs();
    /* The full slab moved to the head, before the one with free units. */
    gb__slab *full = slab_units[0].owner;
    CHECK(full != s);
    gb__list_remove(&full->link);
    gb__list_push((gb__list *)gb__small_slabs_lock(), &full->link);
    gb__small_slabs_unlock();
    gb__small_check();
}

static void slabs_miscounted(void)
{
    two_slabs();
    GB__ADD(slabs, 1);
    gb__small_check();
}

static void slab_dirty_bytes_miscounted(void)
{
    two_slabs();
    GB__ADD(bytes_small_dirty, gb__os.page_size);
    gb__small_check();
}

/* What the fuzz target calls after every operation checks the slabs too. */
static void slabs_miscounted_seen_by_the_current_check(void)
{
    two_slabs();
    GB__ADD(slabs, 1);
    gb__check_current();
}

GB_TEST(each_broken_slab_invariant_stops_the_slab_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(slab_count_off, "counts 4 used, 1 dirty and 0 released units, but its bits say 3, 1 and 0");
    gbt_expect_death(slab_dirty_count_off, "counts 3 used, 2 dirty and 0 released units, but its bits say 3, 1 and 0");
    gbt_expect_death(slab_released_count_off,
                     "counts 3 used, 1 dirty and 1 released units, but its bits say 3, 1 and 0");
    gbt_expect_death(slab_unit_used_and_dirty, "a unit of units 0-63 is two of used, dirty and released");
    gbt_expect_death(slab_unit_dirty_and_released, "a unit of units 0-63 is two of used, dirty and released");
    gbt_expect_death(slab_unit_used_and_released, "a unit of units 0-63 is two of used, dirty and released");
    gbt_expect_death(slab_with_nothing_in_use, "holds no unit in use but was not given back");
    gbt_expect_death(slab_a_batch_dirty, "a batch or more, not emptied");
    gbt_expect_death(slab_smaller_than_its_units, "is smaller than its 256 units");
    gbt_expect_death(slab_after_a_full_one, "with 3 of 256 units in use, comes after a full one");
    gbt_expect_death(slabs_miscounted, "2 slabs are on the list, but gb__stat.slabs says 3");
    gbt_expect_death(slabs_miscounted_seen_by_the_current_check, "2 slabs are on the list, but gb__stat.slabs says 3");
    gbt_expect_death(slab_dirty_bytes_miscounted, "bytes of dirty units, but gb__stat.bytes_small_dirty says");
}

/* Threads take and give back slab units while this one checks the slabs
 * again and again: the checker reads them under their lock, so it sees
 * only whole states (and under ThreadSanitizer, a read outside the lock
 * is a reported race). */
enum { SLAB_SHARERS = 3, SLAB_ROUNDS = 3000 };
static atomic_int slab_sharers;

static void *take_and_give_units(void *arg)
{
    gb__cache own = {0};
    gb__chunk held[8];
    for (int i = 0; i < 8; i++)
        CHECK(gb__small_get(&own, gb__os.page_size * (size_t)(1 + i % 3), &held[i]));
    for (int i = 0; i < SLAB_ROUNDS; i++) {
        int k = (i * 5 + (int)(uintptr_t)arg) % 8;
        gb__small_put(&own, held[k]);
        CHECK(gb__small_get(&own, gb__os.page_size * (size_t)(1 + i % 3), &held[k]));
    }
    for (int i = 0; i < 8; i++)
        gb__small_put(&own, held[i]);
    atomic_fetch_sub(&slab_sharers, 1);
    return NULL;
}

GB_TEST(threads_share_the_slabs_with_the_checker_which_reads_them_under_their_lock)
{
    SKIP_UNCHECKED();
    gbt_init_slabs();
    atomic_store(&slab_sharers, SLAB_SHARERS);
    pthread_t t[SLAB_SHARERS];
    for (uintptr_t i = 0; i < SLAB_SHARERS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, take_and_give_units, (void *)i), 0);
    int checks = 0;
    while (atomic_load(&slab_sharers) > 0 || checks == 0) {
        gb__small_check();
        checks++;
    }
    for (int i = 0; i < SLAB_SHARERS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    gb__small_check();
    CHECK_EQ(gbt_stats().slabs, 0);
}

/* ------------------------------------------------------------ the index
 *
 * The thread's address index (index.h) after index_build(): its table of
 * 64 KiB granules is one of its own, larger than the thread's, and its
 * table of 1 MiB granules (the solo block's) is the thread's own. Each
 * case breaks one invariant of one table and asks gb__check_thread, which
 * checks the index before the checkers that look blocks up in it. */

/* build(), and 40 regions more, nested, each with a block of its own: more
 * entries than the thread's own table holds at half. */
static void index_build(void)
{
    build();
    for (int i = 0; i < 40; i++)
        memset(gb_alloc_in(gb_enter(), 100), i, 100);
}

static gb__index_table *fine_table(void)
{
    gb__index_table *t = &self()->mem.index.fine;
    CHECK(t->cap > GB__INDEX_INLINE && t->slots != t->small);
    return t;
}

static gb__index_table *coarse_table(void)
{
    gb__index_table *t = &self()->mem.index.coarse;
    CHECK(t->cap == GB__INDEX_INLINE && t->slots == t->small && t->count > 0);
    return t;
}

/* A used slot of t that the next `free` slots, all empty, follow. */
static size_t slot_before_empty(const gb__index_table *t, size_t free)
{
    for (size_t i = 0; i < t->cap; i++) {
        bool room = t->slots[i].key != 0;
        for (size_t k = 1; k <= free && room; k++)
            room = t->slots[(i + k) & (t->cap - 1)].key == 0;
        if (room)
            return i;
    }
    CHECK(!"a used slot followed by empty ones");
    return 0;
}

static void index_slots_null(void)
{
    index_build();
    fine_table()->slots = NULL;
    gb__check_thread(self());
}

static void index_cap_not_a_power_of_two(void)
{
    index_build();
    fine_table()->cap--;
    gb__check_thread(self());
}

static void index_cap_below_the_threads_table(void)
{
    index_build();
    coarse_table()->cap = GB__INDEX_INLINE / 2;
    gb__check_thread(self());
}

static void index_own_table_with_a_larger_cap(void)
{
    index_build();
    coarse_table()->cap = 2 * GB__INDEX_INLINE;
    gb__check_thread(self());
}

static void index_table_of_its_own_with_the_threads_cap(void)
{
    index_build();
    fine_table()->cap = GB__INDEX_INLINE;
    gb__check_thread(self());
}

static void index_own_table_taken_for_a_mapping(void)
{
    index_build();
    coarse_table()->mapped = true;
    gb__check_thread(self());
}

static void index_granules_of_the_other_size(void)
{
    index_build();
    fine_table()->shift = 20;
    gb__check_thread(self());
}

static void index_entry_covering_nothing(void)
{
    index_build();
    gb__index_table *t = fine_table();
    gb__index_slot *e = &t->slots[slot_before_empty(t, 0)];
    e->hi = e->lo;
    gb__check_thread(self());
}

static void index_entry_past_its_granule(void)
{
    index_build();
    gb__index_table *t = fine_table();
    t->slots[slot_before_empty(t, 0)].hi = 64 * 1024 + 1;
    gb__check_thread(self());
}

static void index_value_of_no_kind(void)
{
    index_build();
    gb__index_table *t = fine_table();
    gb__index_slot *e = &t->slots[slot_before_empty(t, 0)];
    e->val = (e->val & ~GB__INDEX_TAG) | 2; /* a block's or an arena's, that one may be */
    gb__check_thread(self());
}

/* Moved two slots on, past an empty one: its run from home has a hole. */
static void index_entry_past_a_hole(void)
{
    index_build();
    gb__index_table *t = fine_table();
    size_t i = slot_before_empty(t, 2), to = (i + 2) & (t->cap - 1);
    t->slots[to] = t->slots[i];
    t->slots[i] = (gb__index_slot){0, 0, NULL, 0, 0};
    gb__check_thread(self());
}

static void index_entry_twice(void)
{
    index_build();
    gb__index_table *t = fine_table();
    size_t i = slot_before_empty(t, 1);
    t->slots[(i + 1) & (t->cap - 1)] = t->slots[i];
    t->count++;
    gb__check_thread(self());
}

static void index_count_off(void)
{
    index_build();
    fine_table()->count++;
    gb__check_thread(self());
}

/* Entries of one granule under values of no range, in every empty slot
 * from a used one on, so that each is in its run, until t holds count. */
static void index_fill_to(gb__index_table *t, size_t count)
{
    size_t i = slot_before_empty(t, 0);
    uintptr_t key = t->slots[i].key, n = 0;
    while (t->count < count) {
        i = (i + 1) & (t->cap - 1);
        if (!t->slots[i].key) {
            t->slots[i] = (gb__index_slot){key, ++n * 8, NULL, 0, 1};
            t->count++;
        }
    }
}

static void index_past_half_full(void)
{
    index_build();
    gb__index_table *t = coarse_table();
    index_fill_to(t, t->cap / 2 + 1);
    gb__check_thread(self());
}

GB_TEST(the_index_checker_passes_over_a_table_of_its_own_and_the_threads)
{
    SKIP_UNCHECKED();
    index_build();
    gb__index_check(&self()->mem.index);
    const gb__index_table *f = fine_table(), *c = coarse_table();
    CHECK(f->mapped);
    /* Both tags and whole granules are there: a vec's arena, and the
     * inside of a block of several granules. */
    bool arena = false, whole = false;
    for (size_t i = 0; i < f->cap; i++) {
        arena |= f->slots[i].key && (f->slots[i].val & GB__INDEX_TAG) == GB__INDEX_ARENA;
        whole |= f->slots[i].key && f->slots[i].lo == 0 && f->slots[i].hi == 64 * 1024;
    }
    CHECK(arena && whole);
    CHECK(c->count > 0);
    gb__check_thread(self());
    /* Half full is within the bound (gb__index_prepare keeps it below,
     * as each reservation counts a granule more than a range touches). */
    index_fill_to(coarse_table(), GB__INDEX_INLINE / 2);
    gb__index_check(&self()->mem.index);
}

GB_TEST(each_broken_index_invariant_stops_the_checker)
{
    SKIP_UNCHECKED();
    gbt_expect_death(index_slots_null, "the fine index table: slots (nil) with cap");
    gbt_expect_death(index_cap_not_a_power_of_two, "is not a power of two of at least 64");
    gbt_expect_death(index_cap_below_the_threads_table, "the coarse index table: cap 32 is not a power of two");
    gbt_expect_death(index_own_table_with_a_larger_cap, "the coarse index table: cap 128 in the thread's own table");
    gbt_expect_death(index_table_of_its_own_with_the_threads_cap, "the fine index table: cap 64 outside the thread's own");
    gbt_expect_death(index_own_table_taken_for_a_mapping, "the thread's own table is taken for a mapping");
    gbt_expect_death(index_granules_of_the_other_size, "the fine index table: granules of 2^20 bytes, not 2^16");
    gbt_expect_death(index_entry_covering_nothing, "not a part of its 65536-byte granule");
    gbt_expect_death(index_entry_past_its_granule, ", 65537), not a part of its 65536-byte granule");
    gbt_expect_death(index_value_of_no_kind, "whose tag 2 names neither a block nor an arena");
    gbt_expect_death(index_entry_past_a_hole, "lies past the empty slot");
    gbt_expect_death(index_entry_twice, "both hold granule");
    gbt_expect_death(index_count_off, "count is");
    gbt_expect_death(index_past_half_full, "the coarse index table holds 33 entries in 64 slots, more than half full");
}
