/* glibc.c -- glibc malloc under the kit: does free() give memory back?
 *
 * Each round mallocs FILL_BYTES in blocks of varied sizes (foreign.h),
 * keeps one small malloc made at the peak (what any program does: a
 * buffer, a cache entry, a record allocated while the big work is live),
 * frees every block and stops at a checkpoint.
 *
 * The poison (-DFOREIGN_POISON) leaves glibc's mmap threshold dynamic, its
 * default: the first free of a mmapped block raises the threshold to that
 * block's size, so from round two on the large blocks come from the heap
 * instead of their own mappings, and the small malloc kept above them
 * stops the heap's top from being trimmed. The clean build calls
 * malloc_trim(0) after the frees. The other fix, -DGLIBC_FIX_THRESHOLD
 * (the threshold fixed with mallopt at start), gives these rounds back as
 * well, but measured with a 64-byte kept block it left the 23 MiB of
 * blocks under the threshold in the heap where malloc_trim left none
 * (README.md): the trim is the one that does not depend on where the kept
 * block lands.
 *
 * Checkpoint figures (mallinfo2, glibc's own counters, in KiB):
 *   held_kib       bytes in use: uordblks + hblkhd, what the program still
 *                  holds in glibc's own count (the kit's retained-below);
 *   os_kib         what glibc has from the system: arena + hblkhd, the
 *                  allocator's own reading to set beside rss;
 *   heap_free_kib  fordblks, free bytes inside the heap;
 *   top_kib        keepcost, what a trim of the top could give back;
 *   mmap_kib       hblkhd, bytes in mmapped blocks.
 */
#include <malloc.h>

#include "../foreign.h"

/* mallinfo2 (size_t counters; mallinfo's int ones wrap past 2 GiB) came
 * with glibc 2.33. */
#if !defined(__GLIBC__) || __GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 33)
#error "this gate reads glibc's own counters with mallinfo2: glibc 2.33 or later"
#endif

/* The allocator's own figures, on every checkpoint line (gbgate.h). */
#define GBGATE_FIGURES glibc_figures
static void glibc_figures(FILE *out);
#include "../../gbgate.h"

static void glibc_figures(FILE *out)
{
    struct mallinfo2 mi = mallinfo2();
    fprintf(out, " held_kib=%zu os_kib=%zu heap_free_kib=%zu top_kib=%zu mmap_kib=%zu",
            (mi.uordblks + mi.hblkhd) / KIB, (mi.arena + mi.hblkhd) / KIB, mi.fordblks / KIB,
            mi.keepcost / KIB, mi.hblkhd / KIB);
}

/* The threshold the fix fixes: glibc's own starting value, 128 KiB, so the
 * fixed build maps exactly what the first round of the dynamic one maps. */
static const size_t FIXED_THRESHOLD = 128 * KIB;

/* The malloc kept at each round's peak, never freed before the end:
 * 256 KiB, small beside the round (1/1600 of it) and the size giveback's
 * own region-400mb gate keeps. It must be larger than any free fragment
 * the round leaves in the heap, or glibc's best fit puts it there instead
 * of on top: measured, a 64-byte one lands in a fragment below and the
 * ratchet never shows (README.md). At 256 KiB it is mmapped in round one
 * (over the 128 KiB starting threshold) and lands on top of the heap from
 * round two on, once the threshold has risen. A define, so that the
 * measurement with 64 bytes can be repeated (-DGLIBC_KEPT_BYTES=64). */
#ifndef GLIBC_KEPT_BYTES
#define GLIBC_KEPT_BYTES (256 * 1024)
#endif
static const size_t KEPT_SMALL = GLIBC_KEPT_BYTES;

static void *blocks[BLOCKS_MAX];
static void *kept[ROUNDS];

int main(int argc, char **argv)
{
    int keep;
    unsigned rounds = foreign_rounds(argc, argv, &keep);
#if defined(GLIBC_FIX_THRESHOLD) && !defined(FOREIGN_POISON)
    /* Setting M_MMAP_THRESHOLD also turns glibc's dynamic adjustment off,
     * which is the whole fix: large blocks keep their own mappings. */
    if (mallopt(M_MMAP_THRESHOLD, (int)FIXED_THRESHOLD) != 1)
        foreign_die("mallopt(M_MMAP_THRESHOLD) failed");
#else
    (void)FIXED_THRESHOLD;
#endif
    for (unsigned round = 1; round <= rounds; round++) {
        size_t n = 0, filled = 0;
        while (filled < FILL_BYTES) {
            size_t size = foreign_size();
            if (n == BLOCKS_MAX || !(blocks[n] = malloc(size)))
                foreign_die("malloc failed while filling");
            foreign_touch(blocks[n], size, round);
            filled += size;
            n++;
        }
        if (!(kept[round - 1] = malloc(KEPT_SMALL)))
            foreign_die("malloc of the kept block failed");
        memset(kept[round - 1], (int)round, KEPT_SMALL);
        if (!keep) {
            for (size_t i = 0; i < n; i++)
                free(blocks[i]);
#if !defined(FOREIGN_POISON) && !defined(GLIBC_FIX_THRESHOLD)
            /* Since glibc 2.8 malloc_trim also gives back (MADV_DONTNEED)
             * the free pages inside the heap, not only its top: the kept
             * block above them no longer matters. */
            malloc_trim(0);
#endif
        }
        /* Named after its round (round1 ... round4), so a red cell says
         * in which round the memory stayed. */
        char name[16];
        snprintf(name, sizeof name, "round%u", round);
        gbgate_checkpoint(name, "blocks=%zu filled_kib=%zu", n, filled / KIB);
    }
    for (unsigned round = 0; round < rounds; round++)
        free(kept[round]);
    return 0;
}
