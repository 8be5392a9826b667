/* ops_container.c -- the operations on vecs and maps: new, push, pop,
 * put, delete, get and compact.
 *
 * A container's struct lives in the region it was made in, and its
 * storage either in that region too or, once compacted, in an arena bound
 * to the region, which must go when the region goes (an arena bound to
 * nothing is a leak, and the end-of-input counters are what catch it).
 * The model keeps each container's contents itself (a vec's bytes, a
 * map's values by key index), compares what the runtime reports of a
 * container (its length, garbage and arena) with what it reported before,
 * and changes a container only while its region is live, as the API
 * requires.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* A vec or map whose handle is readable, chosen by the input: its index if
 * a vec, MAX_VECS + its index if a map; -1 if there is none. */
int pick_container(void)
{
    int n = 0;
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok)
            cand[n++] = i;
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok)
            cand[n++] = MAX_VECS + i;
    return n ? cand[in_pick((size_t)n)] : -1;
}

static const size_t elem_sizes[8] = {8, 1, 16, 24, 3, 40, 64, 100};

void op_vec_new(unsigned v)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nvecs >= MAX_VECS || S.region[top].limit)
        return;
    fz_vec *m = &S.vec[S.nvecs];
    memset(m, 0, sizeof *m);
    m->elem = elem_sizes[v];
    m->h = gb_vec_new(m->elem);
    m->region = top;
    S.region[top].used = true;
    m->struct_ok = m->storage_ok = true;
    S.nvecs++;
    check_vec(m, true);
    if (gb_vec_garbage_bytes(m->h) != 0)
        fail("a new vec has %zu bytes of garbage", gb_vec_garbage_bytes(m->h));
}

/* A container may change while its region is live, from any context of
 * the thread that holds it (not one handed to the peer or in flight), but
 * not under a limit: its growth (gb_vec_push, gb_map_put) has no try form,
 * and would stop the process at the limit. */
static bool changeable(int r)
{
    return S.region[r].st == R_LIVE && held_here(r) && !S.region[r].limit;
}

static int pick_vec(bool nonempty)
{
    int n = 0;
    for (int i = 0; i < S.nvecs; i++)
        if (S.vec[i].struct_ok && changeable(S.vec[i].region) && (!nonempty || S.vec[i].len))
            cand[n++] = i;
    return n ? cand[in_pick((size_t)n)] : -1;
}

static int pick_map(void)
{
    int n = 0;
    for (int i = 0; i < S.nmaps; i++)
        if (S.map[i].ok && changeable(S.map[i].region))
            cand[n++] = i;
    return n ? cand[in_pick((size_t)n)] : -1;
}

/* A container's garbage (bytes its storage left behind in the region)
 * never goes down, and once compacted it keeps its arena: what a vec or a
 * map reports of itself is checked against what it reported before. */
static void container_observe(const char *what, const void *h, size_t garbage, bool arena,
                              size_t *seen_garbage, bool *seen_arena)
{
    if (garbage < *seen_garbage)
        fail("%s %p garbage went down from %zu to %zu bytes", what, h, *seen_garbage, garbage);
    *seen_garbage = garbage;
    if (*seen_arena && !arena)
        fail("%s %p lost its arena", what, h);
    *seen_arena = arena;
}

static void vec_observe(fz_vec *m)
{
    container_observe("vec", (const void *)m->h, gb_vec_garbage_bytes(m->h),
                      gb_vec_arena_bytes(m->h) != 0, &m->garbage, &m->arena);
}

void op_vec_push(unsigned v)
{
    int i = pick_vec(false);
    if (i < 0)
        return;
    fz_vec *m = &S.vec[i];
    size_t count = v < 4 ? 1 + v : v < 6 ? 1 + in_ch8() % 64 : 64 + in_ch8() * 4;
    if (S.vec_elems + count > MAX_VEC_ELEMS)
        count = S.vec_elems < MAX_VEC_ELEMS ? MAX_VEC_ELEMS - S.vec_elems : 0;
    S.vec_elems += count;
    uint64_t seed = in_pay64();
    unsigned char e[104];
    for (size_t j = 0; j < count; j++) {
        unsigned char junk[104];
        pattern(e, junk, m->elem, seed + j);
        void *before = m->len ? gb_vec_at(m->h, 0) : NULL;
        void *slot = gb_vec_push(m->h, e);
        if (memcmp(slot, e, m->elem) != 0)
            fail("gb_vec_push stored something else than the element");
        if (gb_vec_at(m->h, m->len) != slot)
            fail("gb_vec_push returned %p, but element %zu is at %p", slot, m->len,
                 gb_vec_at(m->h, m->len));
        if (m->len == m->cap) {
            size_t cap = m->cap ? m->cap * 2 : 64;
            unsigned char *d = realloc(m->data, cap * m->elem);
            if (!d)
                fail("out of memory for the model");
            m->data = d;
            m->cap = cap;
        }
        memcpy(m->data + m->len * m->elem, e, m->elem);
        m->len++;
        if (before && gb_vec_at(m->h, 0) != before)
            m->epoch++;
    }
    vec_observe(m);
}

void op_vec_pop(unsigned v)
{
    int i = pick_vec(true);
    if (i < 0)
        return;
    fz_vec *m = &S.vec[i];
    unsigned char out[104];
    gb_vec_pop(m->h, v < 4 ? out : NULL);
    m->len--;
    if (v < 4 && memcmp(out, m->data + m->len * m->elem, m->elem) != 0)
        fail("gb_vec_pop gave back something else than the last element");
}

void op_vec_compact(void)
{
    int i = pick_vec(false);
    if (i < 0)
        return;
    fz_vec *m = &S.vec[i];
    gb_vec_compact(m->h);
    m->epoch++;
    if (!gb_vec_arena_bytes(m->h))
        fail("vec %p has no arena after gb_vec_compact", (void *)m->h);
    vec_observe(m);
    check_vec(m, true);
}

void op_map_new(void)
{
    int top = ctx_top(S.cur);
    if (top < 0 || S.nmaps >= MAX_MAPS || S.region[top].limit)
        return;
    fz_map *m = &S.map[S.nmaps];
    memset(m, 0, sizeof *m);
    m->val = calloc(MAP_KEYS, sizeof *m->val);
    m->has = calloc(MAP_KEYS, 1);
    if (!m->val || !m->has)
        fail("out of memory for the model");
    m->h = gb_map_new();
    m->region = top;
    S.region[top].used = true;
    m->ok = true;
    S.nmaps++;
    check_map(m, false);
}

static void map_observe(fz_map *m)
{
    container_observe("map", (const void *)m->h, gb_map_garbage_bytes(m->h),
                      gb_map_arena_bytes(m->h) != 0, &m->garbage, &m->arena);
}

void op_map_put(unsigned v)
{
    int i = pick_map();
    if (i < 0)
        return;
    fz_map *m = &S.map[i];
    size_t count = v < 4 ? 1 + v : v < 6 ? 1 + in_ch8() % 64 : 256 + in_ch8() * 8;
    unsigned base = in_ch16() % MAP_KEYS, stride = v < 6 ? 1 + in_ch8() % 16 : 1;
    uint64_t seed = in_pay64();
    for (size_t j = 0; j < count; j++) {
        unsigned k = (unsigned)((base + j * stride) % MAP_KEYS);
        if (!m->has[k] && S.map_entries >= MAX_MAP_ENTRIES)
            break;
        uint64_t val = mix64(seed + j);
        gb_map_put(m->h, map_key(k), val);
        if (!m->has[k]) {
            m->has[k] = 1;
            m->len++;
            S.map_entries++;
        }
        m->val[k] = val;
    }
    map_observe(m);
}

void op_map_del(unsigned v)
{
    int i = pick_map();
    if (i < 0)
        return;
    fz_map *m = &S.map[i];
    size_t count = v < 6 ? 1 : 1 + in_ch8() % 64;
    unsigned base = in_ch16() % MAP_KEYS;
    for (size_t j = 0; j < count; j++) {
        unsigned k = (unsigned)((base + j) % MAP_KEYS);
        bool gone = gb_map_del(m->h, map_key(k));
        if (gone != (bool)m->has[k])
            fail("gb_map_del of key #%u returned %d, expected %d", k, gone, m->has[k]);
        if (gone) {
            m->has[k] = 0;
            m->len--;
        }
    }
}

void op_map_get(void)
{
    int i = pick_map();
    if (i < 0)
        return;
    check_map_key(&S.map[i], in_ch16() % MAP_KEYS);
}

void op_map_compact(void)
{
    int i = pick_map();
    if (i < 0)
        return;
    fz_map *m = &S.map[i];
    gb_map_compact(m->h);
    if (!gb_map_arena_bytes(m->h))
        fail("map %p has no arena after gb_map_compact", (void *)m->h);
    map_observe(m);
    check_map(m, true);
}
