/* jemalloc.c -- jemalloc's arenas under the kit: does arena.<i>.reset give
 * memory back?
 *
 * Each round fills FILL_BYTES in blocks of varied sizes (foreign.h) into an
 * arena of its own (arenas.create, mallocx with MALLOCX_ARENA), discards
 * all of them at once, the way a region is left, and stops at a checkpoint.
 * The blocks bypass the thread cache (MALLOCX_TCACHE_NONE): arena.<i>.reset
 * requires that no thread cache holds the arena's blocks, and a cache
 * would keep some of them out of the arena's own figures.
 *
 * The poison (-DFOREIGN_POISON) discards with arena.<i>.reset under the
 * default decay: the arena keeps the freed pages as dirty, to be purged
 * over dirty_decay_ms (10 s by default) and only as jemalloc runs again
 * (no background thread unless configured), so the next round reuses
 * them; a program that stops or goes idle keeps them. Not all of them:
 * jemalloc 5.3 purges at once a dirty extent that coalesces to 8 MiB
 * (oversize_threshold) or more, and measured, the reset keeps 140 to
 * 165 MiB of a 400 MiB round (README.md). The clean build gives
 * the memory back at once with arena.<i>.destroy (a new arena each round).
 * The other fix, -DJEMALLOC_FIX_PURGE (arena.<i>.reset, then an explicit
 * arena.<i>.purge), was measured to give back as much; destroy was chosen
 * because it also lets go of the address space the arena kept (about
 * 490 MiB of stats.retained after a purge, 2 MiB after a destroy:
 * README.md).
 *
 * Linking libjemalloc replaces malloc for the whole program (Debian builds
 * it without a prefix), so stdio's buffers come from jemalloc too.
 *
 * Checkpoint figures (mallctl, after an "epoch" refresh), in KiB:
 *   held_kib      stats.allocated: bytes in use in jemalloc's own count,
 *                 what the program still holds (the kit's retained-below);
 *   resident_kib  stats.resident: what jemalloc counts as resident, the
 *                 allocator's reading to set beside rss;
 *   active_kib    stats.active: bytes in active pages;
 *   mapped_kib    stats.mapped: bytes in active extents;
 *   retained_kib  stats.retained: virtual memory kept unmapped-but-held;
 *   dirty_kib     the round's arena's dirty pages (stats.arenas.<i>.pdirty;
 *                 0 once the arena is destroyed);
 *   dirty_decay_ms  opt.dirty_decay_ms, the decay in force.
 */
#include <jemalloc/jemalloc.h>
#include <unistd.h>

#include "../foreign.h"

/* The allocator's own figures, on every checkpoint line (gbgate.h). */
#define GBGATE_FIGURES jemalloc_figures
static void jemalloc_figures(FILE *out);
#include "../../gbgate.h"

/* The arena of the current round, and whether it still exists (a
 * destroyed arena has no stats of its own to read). */
static unsigned arena;
static int arena_live;

static size_t je_stat(const char *name)
{
    size_t v = 0, len = sizeof v;
    if (mallctl(name, &v, &len, NULL, 0) != 0)
        return 0;
    return v;
}

static void jemalloc_figures(FILE *out)
{
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    /* The stats are a snapshot taken at the last epoch: refresh it, or
     * every figure would be the previous checkpoint's. */
    mallctl("epoch", &epoch, &len, &epoch, len);
    size_t dirty_pages = 0;
    if (arena_live) {
        char name[64];
        snprintf(name, sizeof name, "stats.arenas.%u.pdirty", arena);
        dirty_pages = je_stat(name);
    }
    /* The decay in force: MALLOC_CONF in the environment can change it,
     * and with it what the poison keeps, so the log shows it. */
    ssize_t decay_ms = 0;
    len = sizeof decay_ms;
    mallctl("opt.dirty_decay_ms", &decay_ms, &len, NULL, 0);
    fprintf(out, " held_kib=%zu resident_kib=%zu active_kib=%zu mapped_kib=%zu retained_kib=%zu dirty_kib=%zu",
            je_stat("stats.allocated") / KIB, je_stat("stats.resident") / KIB, je_stat("stats.active") / KIB,
            je_stat("stats.mapped") / KIB, je_stat("stats.retained") / KIB,
            dirty_pages * (size_t)sysconf(_SC_PAGESIZE) / KIB);
    fprintf(out, " dirty_decay_ms=%lld", (long long)decay_ms);
}

static void arena_create(void)
{
    size_t len = sizeof arena;
    if (mallctl("arenas.create", &arena, &len, NULL, 0) != 0)
        foreign_die("mallctl(arenas.create) failed");
    arena_live = 1;
}

/* arena.<i>.<verb>: reset, purge or destroy the current arena. */
static void arena_do(const char *verb)
{
    char name[64];
    snprintf(name, sizeof name, "arena.%u.%s", arena, verb);
    if (mallctl(name, NULL, NULL, NULL, 0) != 0)
        foreign_die("mallctl(arena.<i>.<verb>) failed");
}

int main(int argc, char **argv)
{
    int keep;
    unsigned rounds = foreign_rounds(argc, argv, &keep);
    for (unsigned round = 1; round <= rounds; round++) {
        size_t n = 0, filled = 0;
        if (!arena_live)
            arena_create();
        int flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
        while (filled < FILL_BYTES) {
            size_t size = foreign_size();
            void *p = mallocx(size, flags);
            if (!p)
                foreign_die("mallocx failed while filling");
            foreign_touch(p, size, round);
            filled += size;
            n++;
        }
        if (!keep) {
#if defined(FOREIGN_POISON)
            /* The arena stays for the next round, its pages dirty. */
            arena_do("reset");
#elif defined(JEMALLOC_FIX_PURGE)
            arena_do("reset");
            arena_do("purge");
#else
            /* destroy discards the blocks as reset does, then the arena. */
            arena_do("destroy");
            arena_live = 0;
#endif
        }
        /* Named after its round (round1 ... round4), so a red cell says
         * in which round the memory stayed. */
        char name[16];
        snprintf(name, sizeof name, "round%u", round);
        gbgate_checkpoint(name, "blocks=%zu filled_kib=%zu", n, filled / KIB);
    }
    return 0;
}
