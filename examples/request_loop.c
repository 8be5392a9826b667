/* request_loop.c -- a server-style loop: one region, reset per request.
 *
 * A server that enters a fresh region per request and leaves it afterwards
 * gives its pages back to the OS at each leave (all but what the thread's
 * small block cache holds), so the next request faults most of them in
 * again. gb_region_reset empties the region instead and keeps up to KEEP
 * bytes of its blocks resident for the next request; the rest still goes
 * back. The program checks the two promises it relies on: the
 * region never keeps more than asked, and once it is left and swept the
 * runtime holds nothing at all.
 */
#include <giveback.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#define REQUESTS 8
/* Most of what a request here needs (6 to 11 MiB of blocks): a small request
 * then runs in kept blocks alone, and a large one maps what it lacks and
 * gives that back at its reset. */
#define KEEP ((size_t)8 << 20)

static const double MiB = 1024.0 * 1024.0;

/* A fixed seed, so that every run serves the same requests. */
static uint64_t seed = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

/* Page faults so far: what a kept block saves is the faults of its pages. */
static long minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}

/* A token of the parsed request: the kind of small object a parser makes by
 * the thousand and never frees one by one. */
typedef struct token {
    struct token *next;
    size_t len;
    char text[];
} token;

/* Serves one request of `size` bytes in the innermost region and returns
 * how many distinct tokens it held (and in *arena, the bytes of the map's
 * own arena). Nothing here frees anything: the reset after the request does
 * it all at once. */
static size_t serve(size_t size, size_t *arena)
{
    /* The body arrives in chunks of sizes the server cannot predict, into a
     * buffer that doubles. Nothing else is allocated while it grows, so it is
     * the region's last allocation and gb_realloc grows it where it is while
     * its block has room (and with mremap once it has a block of its own). */
    size_t cap = 4096, len = 0;
    char *buf = gb_alloc(cap);
    while (len < size) {
        size_t chunk = 1 + next_random() % 65536;
        if (chunk > size - len)
            chunk = size - len;
        while (len + chunk > cap) {
            buf = gb_realloc(buf, cap, 2 * cap);
            cap *= 2;
        }
        for (size_t i = 0; i < chunk; i++) {
            uint64_t x = next_random();
            buf[len + i] = x % 48 == 0 ? ' ' : (char)('a' + (x >> 8) % 16);
        }
        len += chunk;
    }
    /* Parsing: a copy of every token (small objects of varied sizes) and a
     * map from each token's hash to how often it occurs. */
    gb_map *seen = gb_map_new();
    token *tokens = NULL;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && buf[i] != ' ')
            continue;
        if (i > start) {
            token *t = gb_alloc(sizeof *t + (i - start));
            t->len = i - start;
            memcpy(t->text, buf + start, t->len);
            t->next = tokens;
            tokens = t;
            uint64_t h = 14695981039346656037u, n = 0;
            for (size_t k = 0; k < t->len; k++)
                h = (h ^ (unsigned char)t->text[k]) * 1099511628211u;
            gb_map_get(seen, h, &n);
            gb_map_put(seen, h, n + 1);
        }
        start = i + 1;
    }
    /* The map moved into an arena of its own as it grew. A reset gives
     * container arenas back instead of keeping them, so each request's map
     * faults its arena in anew: the page faults left once the blocks are
     * kept. */
    *arena = gb_map_arena_bytes(seen);
    return gb_map_len(seen);
}

/* Every counter of kind GB_STAT_NOW or GB_STAT_KEPT must read zero once
 * every region is left and gb_sweep has given the block cache back; the
 * other kinds (settings, totals since init) are not held memory. */
#define ZERO_GB_STAT_NOW(name) ZERO_CHECK(name)
#define ZERO_GB_STAT_KEPT(name) ZERO_CHECK(name)
#define ZERO_GB_STAT_SETTING(name)
#define ZERO_GB_STAT_SINCE(name)
#define ZERO_CHECK(name)                                                      \
    if (st.name != 0) {                                                       \
        fprintf(stderr, "request_loop: %s is %zu after leave and sweep\n",    \
                #name, (size_t)st.name);                                      \
        ok = false;                                                           \
    }
#define ZERO_FIELD(kind, type, name) ZERO_##kind(name)

int main(void)
{
    /* A misuse stops the process with abort(), which drops buffered output:
     * line buffering keeps what was printed before it, even into a pipe. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    bool ok = true;
    gb_stats st;
    gb_region *r = gb_enter();
    for (int i = 1; i <= REQUESTS; i++) {
        size_t size = ((size_t)1 << 20) + next_random() % ((size_t)3 << 20);
        long faults = minor_faults();
        size_t arena, distinct = serve(size, &arena);
        size_t held = gb_region_bytes(r);
        faults = minor_faults() - faults;
        gb_region_reset(r, KEEP);
        gb_stats_get(&st);
        printf("request %d: body %.1f MiB, %zu distinct tokens, region %.1f MiB, "
               "map arena %.1f MiB, %ld page faults; after reset kept %.1f MiB, "
               "%zu mappings\n", i, size / MiB, distinct, held / MiB, arena / MiB, faults,
               st.bytes_kept / MiB, st.mappings);
        if (st.bytes_kept > KEEP) {
            fprintf(stderr, "request_loop: kept %zu bytes, more than %zu\n",
                    st.bytes_kept, KEEP);
            ok = false;
        }
    }
    gb_resident res;
    gb_resident_get(&res);
    printf("resident before the leave, the kept blocks in it: %.1f MiB\n", res.rss / MiB);
    gb_leave(r);
    gb_sweep();
    gb_stats_get(&st);
    GB_STATS_FIELDS(ZERO_FIELD)
    gb_resident_get(&res);
    printf("resident after leave and sweep: %.1f MiB (peak %.1f MiB)\n", res.rss / MiB,
           res.peak / MiB);
    printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
