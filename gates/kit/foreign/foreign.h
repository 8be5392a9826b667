/* foreign.h -- what the three foreign-allocator gate programs share.
 *
 * Each program (glibc.c, mimalloc.c, jemalloc.c) runs the same rounds:
 * fill FILL_BYTES in blocks of varied sizes, give all of it back the
 * allocator's own way, and stop at a checkpoint so the kit reads the
 * resident size from outside. Sharing the size sequence and the fill keeps
 * the three figures comparable: the allocators see the same requests in the
 * same order, and only the give-back differs.
 *
 * Header-only (static functions), included by one file per program.
 */
#ifndef FOREIGN_H
#define FOREIGN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1024)
#define MIB ((size_t)1024 * 1024)

/* Four rounds: the gate's growth check needs rounds after the first, and
 * glibc's ratchet (the dynamic threshold) only shows from round two on. */
enum { ROUNDS = 4 };

/* Hundreds of MiB a round, the size of the article's region: far above
 * any cap, so memory kept after a give-back cannot hide under it. */
static const size_t FILL_BYTES = 400 * MIB;

/* Block sizes from 4 KiB to 2 MiB, spread evenly in log2 of the size, so
 * every allocator sees its small, medium and large classes: glibc's heap
 * and its mmap path (128 KiB at first), mimalloc's small, medium and
 * large pages, jemalloc's slabs and large extents. */
static const unsigned SIZE_MIN_LOG2 = 12;
static const unsigned SIZE_MAX_LOG2 = 21;

/* At most FILL_BYTES / 4 KiB blocks; the log-spread mean is ~330 KiB, so a
 * round makes about 1250 of them. */
enum { BLOCKS_MAX = 102400 };

/* xorshift64: the same sequence on every platform and every run, so the
 * measured figures can be reproduced. */
static uint64_t foreign_rng = 0x9e3779b97f4a7c15u;

static uint64_t foreign_next(void)
{
    foreign_rng ^= foreign_rng << 13;
    foreign_rng ^= foreign_rng >> 7;
    foreign_rng ^= foreign_rng << 17;
    return foreign_rng;
}

/* The next block size: a random power of two in range times 1 to 2, not a
 * round number, so sizes fall between size classes as real ones do. */
static size_t foreign_size(void)
{
    unsigned span = SIZE_MAX_LOG2 - SIZE_MIN_LOG2;
    unsigned e = SIZE_MIN_LOG2 + (unsigned)(foreign_next() % span);
    size_t base = (size_t)1 << e;
    return base + (size_t)(foreign_next() % base);
}

/* Writes every page of a block, so it is resident: pages never written are
 * not, and a round that left them untouched would have nothing to give
 * back, so every gate would pass it. */
static void foreign_touch(void *p, size_t n, unsigned round)
{
    memset(p, (int)(0x5a + round), n);
}

/* The number of rounds to run: ROUNDS, or one with "keep", the failsafe
 * mode (the gates files' failsafe row): the round never gives its blocks
 * back, so the kit must call it red for rss, or it cannot see red on this
 * program at all. One round, because the kit stops a red run at its first
 * checkpoint anyway, and run by hand it would otherwise keep ROUNDS times
 * FILL_BYTES. Any other argument is a mistake in a gates file: it stops. */
static unsigned foreign_rounds(int argc, char **argv, int *keep)
{
    *keep = 0;
    if (argc == 2 && strcmp(argv[1], "keep") == 0) {
        *keep = 1;
        return 1;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [keep]\n", argv[0]);
        exit(2);
    }
    return ROUNDS;
}

/* Stops the program with a message: a failed allocation or mallctl means
 * the figures would be meaningless, and the kit reads a non-zero exit as a
 * crash, never as a pass. */
static void foreign_die(const char *what)
{
    fprintf(stderr, "foreign: %s\n", what);
    exit(2);
}

#endif /* FOREIGN_H */
