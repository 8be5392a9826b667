/* mimalloc.c -- mimalloc's heaps under the kit: does mi_heap_destroy give
 * memory back?
 *
 * Each round makes a heap with mi_heap_new, fills FILL_BYTES into it in
 * blocks of varied sizes (foreign.h), destroys it with mi_heap_destroy (all
 * its blocks at once, the way a region is left) and stops at a checkpoint.
 *
 * The poison (-DFOREIGN_POISON) keeps mimalloc's default options: a freed
 * page or segment is decommitted only after a delay (decommit_delay,
 * 25 ms, and segment_decommit_delay, 500 ms, in 2.0.x), and only when
 * mimalloc runs again after it, since 2.0 has no background thread: a
 * program that stops or goes idle after the destroy keeps it all. The clean
 * build sets the delays to 0 at start (mimalloc 2.1 merged them into
 * purge_delay; 2.0.9 has only the old names), so the destroy itself
 * decommits. The other fix, -DMIMALLOC_FIX_COLLECT (mi_collect(true)
 * after each destroy), was measured and is not enough: from round two on
 * it leaves about 30 MiB committed (README.md).
 *
 * Linking libmimalloc replaces malloc for the whole program (Debian builds
 * it with the override), so stdio's buffers come from mimalloc too.
 *
 * Checkpoint figures, in KiB:
 *   held_kib    what the program still holds, in its own count: nothing
 *               once the heap is destroyed (the kit's retained-below).
 *               mimalloc's release build keeps no count of bytes in use
 *               to read instead;
 *   commit_kib  mimalloc's own count of memory it has committed from the
 *               system (mi_process_info's current_commit), the allocator's
 *               reading to set beside rss;
 *   peak_commit_kib  the same at its peak;
 *   decommit_delay_ms, segment_decommit_delay_ms (2.0) or purge_delay_ms
 *               (2.1 and later): the delays in force.
 */
#include <mimalloc.h>

#include "../foreign.h"

/* The allocator's own figures, on every checkpoint line (gbgate.h). */
#define GBGATE_FIGURES mimalloc_figures
static void mimalloc_figures(FILE *out);
#include "../../gbgate.h"

#if MI_MALLOC_VERSION < 200
#error "the heap API this gate uses (mi_heap_new, mi_heap_destroy) needs mimalloc 2.0 or later"
#endif

/* What the program holds in mimalloc, in its own count: the round's
 * blocks until the heap is destroyed (only "keep" leaves them), then 0. */
static size_t held_bytes;

static void mimalloc_figures(FILE *out)
{
    size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
    mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
    /* Printed as signed: mimalloc 2.1.2's count was measured to fall below
     * zero after purges (it counts more decommits than commits), and a
     * wrapped size_t would read as 16 EiB committed instead of a visibly
     * broken figure. */
    fprintf(out, " held_kib=%zu commit_kib=%lld peak_commit_kib=%zu", held_bytes / KIB, (long long)commit / 1024,
            peak_commit / KIB);
    /* The delay in force: MIMALLOC_* variables in the environment can
     * change it, and with it what the poison keeps, so the log shows it. */
#if MI_MALLOC_VERSION >= 210
    fprintf(out, " purge_delay_ms=%ld", mi_option_get(mi_option_purge_delay));
#else
    fprintf(out, " decommit_delay_ms=%ld segment_decommit_delay_ms=%ld", mi_option_get(mi_option_decommit_delay),
            mi_option_get(mi_option_segment_decommit_delay));
#endif
}

int main(int argc, char **argv)
{
    int keep;
    unsigned rounds = foreign_rounds(argc, argv, &keep);
#if !defined(FOREIGN_POISON) && !defined(MIMALLOC_FIX_COLLECT)
    /* Before the first allocation, so every page and segment mimalloc
     * frees afterwards is decommitted as it is freed. */
#if MI_MALLOC_VERSION >= 210
    mi_option_set(mi_option_purge_delay, 0);
#else
    mi_option_set(mi_option_decommit_delay, 0);
    mi_option_set(mi_option_segment_decommit_delay, 0);
#endif
#endif
    for (unsigned round = 1; round <= rounds; round++) {
        mi_heap_t *heap = mi_heap_new();
        size_t n = 0, filled = 0;
        if (!heap)
            foreign_die("mi_heap_new failed");
        while (filled < FILL_BYTES) {
            size_t size = foreign_size();
            void *p = mi_heap_malloc(heap, size);
            if (!p)
                foreign_die("mi_heap_malloc failed while filling");
            foreign_touch(p, size, round);
            filled += size;
            n++;
        }
        held_bytes = keep ? filled : 0;
        if (!keep)
            mi_heap_destroy(heap);
#if defined(MIMALLOC_FIX_COLLECT) && !defined(FOREIGN_POISON)
        /* force: decommit what the destroy freed now, not after the
         * delay, and free the segments mimalloc caches. */
        mi_collect(true);
#endif
        /* Named after its round (round1 ... round4), so a red cell says
         * in which round the memory stayed. */
        char name[16];
        snprintf(name, sizeof name, "round%u", round);
        gbgate_checkpoint(name, "blocks=%zu filled_kib=%zu", n, filled / KIB);
    }
    return 0;
}
