/* check.c -- reading the runtime back against the model.
 *
 * A region freed too early must show, whatever memory the runtime hands
 * out after it: so after every operation the harness reads a probe (the
 * first, the last and one rotating word) of every allocation the model
 * says is readable, one element of every container, the running context's
 * gb_current and gb_depth, every coroutine's status and the counters the
 * model knows exactly or bounds. A touch of freed memory is then a report
 * from ASan, and a stale or misplaced byte a report from the model. At the
 * points where reading everything matters (a region just found pinned, a
 * coroutine that resumes, a leave) the reads are in full. The embedding
 * API's answers are read back too: gb_region_info_get of every region the
 * model has a handle for (state, depth, context, limit, kept bytes, arenas)
 * and gb_region_of of every readable allocation's first and last byte and
 * every readable container, from whichever context runs.
 */
#include "harness.h"

#include <string.h>

FZ_NO_COV void check_alloc_full(const fz_alloc *a)
{
    if (a->n && memcmp(a->p, a->shadow, a->n) != 0) {
        size_t i = 0;
        while (a->p[i] == a->shadow[i])
            i++;
        fail("allocation %p (%zu bytes, region %d) differs at byte %zu: 0x%02x, expected 0x%02x",
             (void *)a->p, a->n, a->region, i, a->p[i], a->shadow[i]);
    }
}

FZ_NO_COV static void check_alloc_quick(const fz_alloc *a)
{
    if (a->n == 0)
        return;
    size_t k = a->n < 8 ? a->n : 8;
    size_t mid = (size_t)(mix64(S.probe) % a->n);
    if (mid > a->n - k)
        mid = a->n - k;
    if (memcmp(a->p, a->shadow, k) != 0 || memcmp(a->p + a->n - k, a->shadow + a->n - k, k) != 0 ||
        memcmp(a->p + mid, a->shadow + mid, k) != 0)
        check_alloc_full(a); /* names the first differing byte */
}

FZ_NO_COV static void check_vec_elem(const fz_vec *v, size_t i, const void *at)
{
    if (memcmp(at, v->data + i * v->elem, v->elem) != 0)
        fail("vec %p element %zu of %zu (%zu bytes each) differs from what was pushed",
             (void *)v->h, i, v->len, v->elem);
}

FZ_NO_COV void check_vec(const fz_vec *v, bool full)
{
    size_t len = gb_vec_len(v->h);
    if (len != v->len)
        fail("vec %p holds %zu elements, expected %zu", (void *)v->h, len, v->len);
    size_t arena = gb_vec_arena_bytes(v->h);
    if ((arena != 0) != v->arena)
        fail("vec %p arena is %zu bytes, but the vec was %scompacted", (void *)v->h, arena,
             v->arena ? "" : "never ");
    if (arena && arena < v->len * v->elem)
        fail("vec %p arena (%zu bytes) is smaller than its %zu elements", (void *)v->h, arena, v->len);
    if (!len)
        return;
    if (full) {
        for (size_t i = 0; i < len; i++)
            check_vec_elem(v, i, gb_vec_at(v->h, i));
    } else {
        size_t i = (size_t)(mix64(S.probe + 1) % len);
        check_vec_elem(v, i, gb_vec_at(v->h, i));
    }
}

FZ_NO_COV void check_map_key(const fz_map *m, unsigned k)
{
    uint64_t got = 0;
    bool present = gb_map_get(m->h, map_key(k), &got);
    if (present != (bool)m->has[k])
        fail("map %p key #%u is %s, expected %s", (void *)m->h, k, present ? "present" : "absent",
             m->has[k] ? "present" : "absent");
    if (present && got != m->val[k])
        fail("map %p key #%u holds 0x%llx, expected 0x%llx", (void *)m->h, k,
             (unsigned long long)got, (unsigned long long)m->val[k]);
}

FZ_NO_COV void check_map(const fz_map *m, bool full)
{
    size_t len = gb_map_len(m->h);
    if (len != m->len)
        fail("map %p holds %zu entries, expected %zu", (void *)m->h, len, m->len);
    if ((gb_map_arena_bytes(m->h) != 0) != m->arena)
        fail("map %p arena is %zu bytes, but the map was %scompacted", (void *)m->h,
             gb_map_arena_bytes(m->h), m->arena ? "" : "never ");
    if (full) {
        for (unsigned k = 0; k < MAP_KEYS; k++)
            if (m->has[k] || k % 61 == 0)
                check_map_key(m, k);
    } else {
        check_map_key(m, (unsigned)(mix64(S.probe + 2) % MAP_KEYS));
    }
}

/* Everything readable in region r, in full. */
FZ_NO_COV void check_region_full(int r)
{
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive && S.alloc[i].region == r)
            check_alloc_full(&S.alloc[i]);
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok && S.vec[i].region == r)
            check_vec(&S.vec[i], true);
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok && S.map[i].region == r)
            check_map(&S.map[i], true);
}

/* Every region just left that a frozen stack points into, in full: the
 * runtime must have kept it. (Regions pinned before are read by the probe
 * after every operation, which is enough to touch freed memory.) */
void check_pinned_full(void)
{
    for (int r = 0; r < S.nregions; r++) {
        if (S.region[r].st == R_LEFT_FULL && S.region[r].fresh) {
            S.region[r].fresh = false;
            check_region_full(r);
        }
    }
}

/* The pointers coroutine c holds: its stack must still hold each word, and
 * what each points to must be intact. Called right after c resumes. */
FZ_NO_COV void check_held(const fz_coro *c)
{
    for (int k = 0; k < HOLD; k++) {
        const fz_slot *s = &c->slot[k];
        if (c->held[k] != s->value)
            fail("coroutine %d: its stack slot %d holds 0x%llx after a switch, expected 0x%llx",
                 c->idx, k, (unsigned long long)c->held[k], (unsigned long long)s->value);
        if (!slot_valid(s))
            continue;
        switch (s->kind) {
        case S_ALLOC:
            check_alloc_full(&S.alloc[s->target]);
            break;
        case S_VEC:
            check_vec(&S.vec[s->target], true);
            break;
        case S_MAP:
            check_map(&S.map[s->target], true);
            break;
        case S_ELEM_REGION:
        case S_ELEM_ARENA: {
            const fz_vec *v = &S.vec[s->target];
            /* A held element pointer is read through the pointer itself:
             * the vec's struct may be gone (arena-only pin). */
            if (s->off < v->len)
                check_vec_elem(v, s->off, (const void *)s->value);
            break;
        }
        default:
            break;
        }
    }
}

/* gb_region_of(p), for memory of `what` in region record r: r's handle.
 * (A reset's retired contents whose handle the model never learnt are not
 * asked about.) */
FZ_NO_COV static void check_region_of(const void *p, int r, const char *what, const void *obj)
{
    gb_region *want = S.region[r].h;
    if (!want)
        return;
    /* Memory the peer holds, or in flight, is in no index of this thread. */
    bool here = held_here(r);
    if (!here)
        want = NULL;
    gb_region *h = gb_region_of(p);
    if (h != want)
        fail("%s %p: gb_region_of(%p) is %p, expected region %d (%p, %s)", what, obj, p, (void *)h, r,
             (void *)want,
             !here ? (S.region[r].ctx == PEER ? "held by the peer" : "in flight")
             : S.region[r].st == R_LIVE ? "live" : "retired");
}

/* Every readable allocation's first and last byte, every readable
 * container's struct, and the first and last byte of a vec's elements (in
 * its arena, once compacted, which is bound to the vec's region) must be
 * found in their region by gb_region_of, from whichever context runs:
 * the thread's own regions, a waiting resumer's, a suspended coroutine's,
 * and retired ones. */
FZ_NO_COV void check_regions_of(void)
{
    for (int i = 0; i < S.nallocs; i++) {
        const fz_alloc *a = &S.alloc[i];
        if (!a->alive)
            continue;
        check_region_of(a->p, a->region, "allocation", a->p);
        if (a->n > 1)
            check_region_of(a->p + a->n - 1, a->region, "allocation", a->p);
    }
    for (int i = 0; i < S.nvecs; i++) {
        const fz_vec *v = &S.vec[i];
        if (!v->struct_ok)
            continue;
        check_region_of(v->h, v->region, "vec", v->h);
        if (v->len && v->storage_ok) {
            const char *what = v->arena ? "vec element (in its arena)" : "vec element";
            const char *last = (const char *)gb_vec_at(v->h, v->len - 1) + v->elem - 1;
            check_region_of(gb_vec_at(v->h, 0), v->region, what, v->h);
            check_region_of(last, v->region, what, v->h);
        }
    }
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok)
            check_region_of(S.map[i].h, S.map[i].region, "map", S.map[i].h);
}

/* Whether h is the handle of one of the model's coroutines that is not
 * freed. */
static bool a_coro(const gb_coro *h)
{
    for (int i = 0; i < S.ncoros; i++)
        if (S.coro[i].h == h && S.coro[i].st != C_FREED)
            return true;
    return false;
}

static const char *state_name(gb_region_state st)
{
    return st == GB_REGION_LIVE      ? "LIVE"
           : st == GB_REGION_RETIRED ? "RETIRED"
           : st == GB_REGION_FREED   ? "FREED"
                                     : "?";
}

/* gb_region_info_get of region record r against the model: a live region
 * is LIVE at its depth, on its context's stack, with its limit, holding
 * what gb_region_bytes says, its container arenas bound to it and no more
 * kept than at its last reset (or fewer: kept blocks are taken back into
 * use); a left region that a frozen coroutine points into is RETIRED, and
 * pinned by a coroutine that is not freed; any other left region is
 * FREED, or RETIRED (a conservative scan may see stale words, and the
 * model drops a region as soon as it may go). *out is left with what
 * gb_region_info_get said, for the caller's own checks. */
FZ_NO_COV void check_region_info(int r, gb_region_info *out)
{
    fz_region *R = &S.region[r];
    gb_region_info_get(R->h, out);
    if (R->st != R_LIVE) {
        if ((R->st == R_LEFT_FULL || R->st == R_LEFT_ARENA) && out->state != GB_REGION_RETIRED)
            fail("region %d is %s (gb_region_info_get), but a frozen coroutine points into it", r,
                 state_name(out->state));
        if (out->state != GB_REGION_RETIRED && out->state != GB_REGION_FREED)
            fail("region %d was left, but gb_region_info_get says %s", r, state_name(out->state));
        if (out->state == GB_REGION_RETIRED && pins_of(r, false) == 2 &&
            (!out->pinned_by || !a_coro(out->pinned_by)))
            fail("region %d is retired and a suspended coroutine points into it, but "
                 "gb_region_info_get says it is pinned by %p",
                 r, (void *)out->pinned_by);
        return;
    }
    size_t depth = region_depth(r);
    gb_coro *by = R->ctx == MAIN ? NULL : S.coro[R->ctx].h;
    if (out->state != GB_REGION_LIVE || out->depth != depth || out->entered_by != by ||
        out->limit != R->limit)
        fail("region %d: gb_region_info_get says %s at depth %zu, entered by %p, limit %zu; "
             "expected LIVE at depth %zu, entered by %p, limit %zu",
             r, state_name(out->state), out->depth, (void *)out->entered_by, out->limit, depth,
             (void *)by, R->limit);
    if (out->kept_bytes > R->kept)
        fail("region %d: gb_region_info_get says it kept %zu bytes, more than the %zu it had kept "
             "since its last reset",
             r, out->kept_bytes, R->kept);
    R->kept = out->kept_bytes;
    size_t arenas = 0;
    for (int i = 0; i < S.nvecs; i++)
        arenas += S.vec[i].arena && S.vec[i].region == r;
    for (int i = 0; i < S.nmaps; i++)
        arenas += S.map[i].arena && S.map[i].region == r;
    if (out->arenas != arenas)
        fail("region %d has %zu container arenas bound (gb_region_info_get), but %zu of its "
             "containers were compacted",
             r, out->arenas, arenas);
}

/* When nothing can pin anything (a sweep with no coroutine suspended or
 * waiting, the end of an input), every left region must be FREED. */
FZ_NO_COV void check_left_freed(const char *when)
{
    for (int r = 0; r < S.nregions; r++) {
        const fz_region *R = &S.region[r];
        if (!R->h || R->st == R_LIVE)
            continue;
        gb_region_info in;
        gb_region_info_get(R->h, &in);
        if (in.state != GB_REGION_FREED)
            fail("region %d is %s (gb_region_info_get) %s, with nothing to pin it", r,
                 state_name(in.state), when);
    }
}

/* The runtime's counters as they are now. */
gb_stats stats(void)
{
    gb_stats st;
    gb_stats_get(&st);
    return st;
}

/* After every operation: a probe of everything readable, the running
 * context's region stack, every coroutine's status, and the counters the
 * model knows exactly or bounds. */
FZ_NO_COV void check_after_op(void)
{
    S.probe++;
    for (int i = 0; i < S.nallocs; i++)
        if (S.alloc[i].alive)
            check_alloc_quick(&S.alloc[i]);
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok)
            check_vec(&S.vec[i], false);
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok)
            check_map(&S.map[i], false);

    int top = ctx_top(S.cur);
    gb_region *want = top >= 0 ? S.region[top].h : NULL;
    if (gb_current() != want)
        fail("gb_current() is %p, expected %p", (void *)gb_current(), (void *)want);
    if (gb_depth() != ctx_depth(S.cur))
        fail("gb_depth() is %zu, expected %zu", gb_depth(), ctx_depth(S.cur));
    gb_coro *running = S.cur == MAIN ? NULL : S.coro[S.cur].h;
    if (gb_coro_current() != running)
        fail("gb_coro_current() is %p, expected %p", (void *)gb_coro_current(), (void *)running);

    /* bytes_kept: exactly what live regions kept at their last reset.
     * giveback.h says the kept blocks go back when the region is left,
     * retired or not (a leave that retired a pinned region once kept
     * them, counted, until the region was freed). */
    size_t live = 0, coros = 0, pinned = 0, arenas = 0, kept = 0;
    for (int r = 0; r < S.nregions; r++) {
        fz_region *R = &S.region[r];
        live += R->st == R_LIVE;
        pinned += R->st == R_LEFT_FULL;
        if (!R->h)
            continue;
        if (!held_here(r)) {
            /* The peer's, or in flight: only its holder may ask about it
             * (ops_handoff.c reads it from the peer); what it kept goes
             * with it unchanged. */
            kept += R->kept;
            continue;
        }
        gb_region_info in;
        check_region_info(r, &in);
        if (R->st != R_LIVE)
            continue;
        size_t bytes = gb_region_bytes(R->h);
        if (bytes < R->bytes || (R->used && !bytes) || bytes != in.bytes + in.kept_bytes)
            fail("region %d holds %zu bytes (%zu in use, %zu kept), before %zu%s", r, bytes, in.bytes,
                 in.kept_bytes, R->bytes, R->used ? ", and something was allocated in it" : "");
        if (R->limit && bytes > R->cap)
            fail("region %d holds %zu bytes, past its limit of %zu (it held %zu when the limit was "
                 "set, or last)",
                 r, bytes, R->limit, R->cap);
        R->bytes = bytes;
        if (R->limit)
            R->cap = R->limit > bytes ? R->limit : bytes;
        kept += in.kept_bytes;
    }
    check_regions_of();
    for (int i = 0; i < S.ncoros; i++) {
        const fz_coro *c = &S.coro[i];
        if (c->st == C_FREED)
            continue;
        coros++;
        if (gb_coro_status_of(c->h) != (gb_coro_status)c->st)
            fail("coroutine %d has status %d, expected %d", i, (int)gb_coro_status_of(c->h), (int)c->st);
    }
    for (int i = 0; i < S.nvecs; i++)
        arenas += S.vec[i].arena && S.region[S.vec[i].region].st == R_LIVE;
    for (int i = 0; i < S.nmaps; i++)
        arenas += S.map[i].arena && S.region[S.map[i].region].st == R_LIVE;

    gb_stats st = stats();
    if (st.regions_live != live)
        fail("regions_live is %zu, the model has %zu live regions", st.regions_live, live);
    if (st.coros_live != coros)
        fail("coros_live is %zu, the model has %zu coroutines", st.coros_live, coros);
    if (st.regions_retired < pinned)
        fail("regions_retired is %zu, but %zu left regions are pinned by frozen stacks",
             st.regions_retired, pinned);
    if (st.arenas_live < arenas)
        fail("arenas_live is %zu, but %zu compacted containers are in live regions", st.arenas_live,
             arenas);
    if (st.mappings + st.mappings_cached > st.map_budget)
        fail("mappings (%zu, and %zu cached) past the budget (%zu)", st.mappings, st.mappings_cached,
             st.map_budget);
    if (st.bytes_kept != kept)
        fail("bytes_kept is %zu, but live regions kept %zu bytes", st.bytes_kept, kept);
    if (!S.faults_used && st.unmaps_pending)
        fail("unmaps_pending is %zu, but no munmap was made to fail", st.unmaps_pending);
}
