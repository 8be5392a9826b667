/* input.c -- the byte reader: choices from the front of the input,
 * payload from the back.
 *
 * A mutation should change one thing about the program an input stands
 * for, not everything after it. So the choices (operation codes, indices,
 * sizes) are read from the front of the input and the payload (the bytes
 * written into allocations and containers) from the back: changing one
 * byte changes one choice or one payload word, and the rest of the program
 * keeps its meaning. Each operation is one byte, the low five bits naming
 * it and the high three choosing a variant (fuzz/README.md lists the
 * codes); the operations read whatever else they need through in_ch8,
 * in_ch16, in_pick and in_pay64.
 */
#include "harness.h"

/* Choices come from the front, payload from the back; once they meet the
 * input is over and every read returns zero. */
static struct {
    const uint8_t *d;
    size_t lo, hi;
} in;

void in_start(const uint8_t *data, size_t size)
{
    in.d = data;
    in.lo = 0;
    in.hi = size;
}

bool in_more(void)
{
    return in.lo < in.hi;
}

unsigned in_ch8(void)
{
    return in.lo < in.hi ? in.d[in.lo++] : 0;
}

unsigned in_ch16(void)
{
    unsigned a = in_ch8();
    return a | in_ch8() << 8;
}

uint64_t in_pay64(void)
{
    uint64_t v = 0;
    for (int i = 0; i < 8 && in.hi > in.lo; i++)
        v = v << 8 | in.d[--in.hi];
    return v;
}

/* n ? a choice in [0, n) : 0. */
size_t in_pick(size_t n)
{
    if (n <= 1)
        return 0;
    return (n <= 256 ? in_ch8() : in_ch16()) % n;
}
