/* container.c -- vecs and maps whose struct lives in a region.
 *
 * A container that grows in a region leaves its old storage behind as
 * garbage until the region is left; a long-lived map in a long-lived region
 * can leave many times its size. Compaction moves the live contents into an
 * arena of the container's own, where further growth happens in place
 * (mremap) or by replacing the arena's chunk, so no more garbage piles up.
 * The arena is bound to the holder region (fix/arena_bind.c) and is given
 * back with it.
 *
 * A vec holds elements of one size; a map is an open-addressing hash table
 * from uint64_t to uint64_t with linear probing, kept at most 3/4 full
 * (tombstones included), whose storage is cap entries then cap control
 * bytes.
 */
#include "arena.h"
#include "init.h"
#include "stats.h"
#include "thread.h"

#include <string.h>

#define COMPACT_MIN_GARBAGE (64 * GB__KIB)

struct gb_vec {
    char *data;
    size_t len, cap, elem;
    size_t garbage;
    gb_region *holder;
    gb__arena arena;
};

typedef struct map_entry {
    uint64_t key, value;
} map_entry;

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_DEAD = 2 };

struct gb_map {
    map_entry *entries;
    uint8_t *ctrl;
    size_t cap;  /* a power of two, or 0 before the first insertion */
    size_t len;  /* full slots */
    size_t dead; /* tombstones */
    size_t garbage;
    gb_region *holder;
    gb__arena arena;
};

static gb_region *holder_for_new(const char *who)
{
    gb__ensure_init();
    /* The descriptor itself, not the handle gb_current would return. */
    gb_region *r = gb__self()->cur->top;
    if (!r)
        gb__die("%s: no region is entered (a container lives in the innermost region)", who);
    return r;
}

/* The memory of the running thread, which holds the container's region:
 * the container grows there, and its arena comes from that thread's cache
 * and is found in its index. Stops naming what the region is otherwise. */
static gb__mem *holder_mem(const gb_region *holder, const char *who)
{
    gb__mem *m = &gb__self()->mem;
    if (GB__LIKELY(holder->state == GB__LIVE && holder->home == m))
        return m;
    const void *h = (const void *)holder->handle;
    if (holder->state == GB__FLIGHT)
        gb__die("%s: the container's region %p is in flight (detached, not attached since); a "
                "container changes only on the thread that holds its region",
                who, h);
    if (holder->state != GB__LIVE)
        gb__die("%s: the container's region was left; a container cannot grow after that", who);
    gb__die("%s: the container's region %p is held by another thread; a container changes only on "
            "the thread that holds its region",
            who, h);
}

static bool arena_open(const gb__arena *a)
{
    return a->chunk.base != NULL;
}

static bool wants_compaction(size_t garbage, size_t live)
{
    return garbage >= COMPACT_MIN_GARBAGE && garbage >= live / 100 * GB_COMPACT_GARBAGE_PERCENT;
}

/* Gives the container a fresh chunk of n bytes in its arena, opening the
 * arena if needed; returns the old chunk for the caller to copy from and
 * then put (or a zero chunk when the arena was closed). */
static gb__chunk arena_swap(gb__arena *a, gb_region *holder, size_t n, const char *who)
{
    gb__mem *m = holder_mem(holder, who);
    gb__chunk old = a->chunk;
    if (!arena_open(a)) {
        gb__arena_open(m, a, holder, n);
        return (gb__chunk){0};
    }
    gb__arena_index(m, a, false);
    a->chunk = gb__chunk_get(&m->cache, n);
    gb__arena_index(m, a, true);
    return old;
}

/* ------------------------------------------------------------------ vec */

gb_vec *gb_vec_new(size_t elem_size)
{
    gb_region *r = holder_for_new("gb_vec_new");
    if (elem_size == 0)
        gb__die("gb_vec_new: element size 0");
    gb_vec *v = gb__region_alloc(r, sizeof *v);
    memset(v, 0, sizeof *v);
    v->elem = elem_size;
    v->holder = r;
    return v;
}

size_t gb_vec_len(const gb_vec *v)
{
    return v->len;
}

/* Moves the elements into the vec's arena, with room for n bytes. */
static void vec_compact_to(gb_vec *v, size_t n, const char *who)
{
    size_t used = v->len * v->elem;
    gb__chunk old = arena_swap(&v->arena, v->holder, n, who);
    if (used)
        memcpy(v->arena.chunk.base, v->data, used);
    if (old.base)
        gb__chunk_put(&v->holder->home->cache, old);
    v->data = v->arena.chunk.base;
    v->cap = v->arena.chunk.size / v->elem;
    GB__ADD(compactions, 1);
}

void gb_vec_compact(gb_vec *v)
{
    size_t used = v->len * v->elem;
    vec_compact_to(v, used > 64 ? used : 64, "gb_vec_compact");
}

static void vec_grow(gb_vec *v)
{
    size_t cap = v->cap ? gb__mul(v->cap, 2, "gb_vec_push") : 8;
    size_t bytes = gb__mul(cap, v->elem, "gb_vec_push");
    size_t used = v->len * v->elem;
    if (arena_open(&v->arena)) {
        gb__mem *m = holder_mem(v->holder, "gb_vec_push");
        gb__arena_index(m, &v->arena, false);
        v->arena.chunk = gb__chunk_grow(&m->cache, v->arena.chunk, used, bytes);
        gb__arena_index(m, &v->arena, true);
        v->data = v->arena.chunk.base;
        v->cap = v->arena.chunk.size / v->elem;
        return;
    }
    holder_mem(v->holder, "gb_vec_push");
    size_t old_bytes = v->cap * v->elem;
    char *d = gb__region_realloc("gb_vec_push", v->holder, v->data, used, bytes, false);
    if (d != v->data)
        v->garbage += old_bytes;
    v->data = d;
    v->cap = cap;
    if (wants_compaction(v->garbage, bytes))
        vec_compact_to(v, bytes, "gb_vec_push");
}

void *gb_vec_push(gb_vec *v, const void *elem)
{
    if (v->len == v->cap)
        vec_grow(v);
    void *slot = v->data + v->len * v->elem;
    memcpy(slot, elem, v->elem);
    v->len++;
    return slot;
}

void *gb_vec_at(const gb_vec *v, size_t i)
{
    if (i >= v->len)
        gb__die("gb_vec_at: index %zu out of range (length %zu)", i, v->len);
    return v->data + i * v->elem;
}

void gb_vec_pop(gb_vec *v, void *out)
{
    if (v->len == 0)
        gb__die("gb_vec_pop: the vec is empty");
    v->len--;
    if (out)
        memcpy(out, v->data + v->len * v->elem, v->elem);
}

size_t gb_vec_arena_bytes(const gb_vec *v)
{
    return v->arena.chunk.size;
}

size_t gb_vec_garbage_bytes(const gb_vec *v)
{
    return v->garbage;
}

/* ------------------------------------------------------------------ map */

static uint64_t mix(uint64_t x)
{
    /* splitmix64's finaliser: every key bit reaches the low bits the
     * table indexes with. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static size_t map_bytes(size_t cap)
{
    return gb__add(gb__mul(cap, sizeof(map_entry), "gb_map"), cap, "gb_map");
}

gb_map *gb_map_new(void)
{
    gb_region *r = holder_for_new("gb_map_new");
    gb_map *m = gb__region_alloc(r, sizeof *m);
    memset(m, 0, sizeof *m);
    m->holder = r;
    return m;
}

size_t gb_map_len(const gb_map *m)
{
    return m->len;
}

/* The slot holding key, or the first free slot on its probe path
 * (*found tells which). The table has at least one empty slot. */
static size_t probe(const gb_map *m, uint64_t key, bool *found)
{
    size_t mask = m->cap - 1, i = mix(key) & mask, free_slot = SIZE_MAX;
    for (;;) {
        uint8_t c = m->ctrl[i];
        if (c == SLOT_EMPTY) {
            *found = false;
            return free_slot != SIZE_MAX ? free_slot : i;
        }
        if (c == SLOT_FULL && m->entries[i].key == key) {
            *found = true;
            return i;
        }
        if (c == SLOT_DEAD && free_slot == SIZE_MAX)
            free_slot = i;
        i = (i + 1) & mask;
    }
}

/* Moves every entry of the old table into (entries, ctrl) of new_cap. */
static void rehash_into(gb_map *m, void *storage, size_t new_cap)
{
    map_entry *oe = m->entries;
    uint8_t *oc = m->ctrl;
    size_t ocap = m->cap;
    m->entries = storage;
    m->ctrl = (uint8_t *)storage + new_cap * sizeof(map_entry);
    m->cap = new_cap;
    m->dead = 0;
    memset(m->ctrl, SLOT_EMPTY, new_cap);
    for (size_t i = 0; i < ocap; i++) {
        if (oc[i] != SLOT_FULL)
            continue;
        bool found;
        size_t j = probe(m, oe[i].key, &found);
        m->entries[j] = oe[i];
        m->ctrl[j] = SLOT_FULL;
    }
}

/* The smallest power-of-two capacity that holds n entries at most half full. */
static size_t cap_for(size_t n)
{
    size_t cap = 8;
    while (cap / 2 < n)
        cap = gb__mul(cap, 2, "gb_map");
    return cap;
}

static void map_resize(gb_map *m, size_t new_cap)
{
    size_t bytes = map_bytes(new_cap);
    if (arena_open(&m->arena)) {
        gb__chunk old = arena_swap(&m->arena, m->holder, bytes, "gb_map_put");
        rehash_into(m, m->arena.chunk.base, new_cap);
        gb__chunk_put(&m->holder->home->cache, old);
        return;
    }
    holder_mem(m->holder, "gb_map_put");
    size_t old_bytes = m->cap ? map_bytes(m->cap) : 0;
    rehash_into(m, gb__region_alloc(m->holder, bytes), new_cap);
    m->garbage += old_bytes;
    if (wants_compaction(m->garbage, bytes))
        gb_map_compact(m);
}

void gb_map_compact(gb_map *m)
{
    size_t cap = cap_for(m->len);
    gb__chunk old = arena_swap(&m->arena, m->holder, map_bytes(cap), "gb_map_compact");
    rehash_into(m, m->arena.chunk.base, cap);
    if (old.base)
        gb__chunk_put(&m->holder->home->cache, old);
    GB__ADD(compactions, 1);
}

void gb_map_put(gb_map *m, uint64_t key, uint64_t value)
{
    if ((m->len + m->dead + 1) * 4 > m->cap * 3)
        map_resize(m, cap_for(m->len + 1));
    bool found;
    size_t i = probe(m, key, &found);
    if (!found) {
        if (m->ctrl[i] == SLOT_DEAD)
            m->dead--;
        m->ctrl[i] = SLOT_FULL;
        m->entries[i].key = key;
        m->len++;
    }
    m->entries[i].value = value;
}

bool gb_map_get(const gb_map *m, uint64_t key, uint64_t *value)
{
    if (m->len == 0)
        return false;
    bool found;
    size_t i = probe(m, key, &found);
    if (found && value)
        *value = m->entries[i].value;
    return found;
}

bool gb_map_del(gb_map *m, uint64_t key)
{
    if (m->len == 0)
        return false;
    bool found;
    size_t i = probe(m, key, &found);
    if (!found)
        return false;
    m->ctrl[i] = SLOT_DEAD;
    m->len--;
    m->dead++;
    return true;
}

size_t gb_map_arena_bytes(const gb_map *m)
{
    return m->arena.chunk.size;
}

size_t gb_map_garbage_bytes(const gb_map *m)
{
    return m->garbage;
}
