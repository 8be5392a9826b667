/* enumerator.c -- a generator coroutine that yields values into its
 * resumer's region.
 *
 * The generator below enumerates the Fibonacci numbers, as decimal numbers of
 * any length. Each value it yields is allocated with gb_alloc_in in a region
 * its consumer names before every resume, so the value lives as long as the
 * consumer wants it, not as long as the generator runs: the consumer keeps
 * them all after the generator is freed. The generator also keeps pointers
 * to its last two values on its own stack, to add them; when the consumer
 * leaves the region they are in while the generator is suspended, the
 * region is retired, not freed, and gb_region_info_get says who pins it.
 */
#include <giveback.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const double MiB = 1024.0 * 1024.0;
static bool ok = true; /* every check passed */

static void check(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "enumerator: %s\n", what);
        ok = false;
    }
}

/* A number as its decimal digits, least significant first. */
typedef struct num {
    size_t len;
    unsigned char digit[];
} num;

/* What the consumer and the generator share: the consumer sets `into`
 * before each resume, the generator sets `value` before each yield. */
typedef struct fib_gen {
    gb_region *into;
    const num *value;
} fib_gen;

static num *num_new(gb_region *r, size_t len)
{
    num *x = gb_alloc_in(r, sizeof *x + len);
    x->len = len;
    return x;
}

static const num *num_add(gb_region *r, const num *a, const num *b)
{
    if (a->len < b->len)
        return num_add(r, b, a);
    num *s = num_new(r, a->len + 1);
    unsigned carry = 0;
    for (size_t i = 0; i < a->len; i++) {
        unsigned d = a->digit[i] + (i < b->len ? b->digit[i] : 0) + carry;
        s->digit[i] = (unsigned char)(d % 10);
        carry = d / 10;
    }
    s->digit[a->len] = (unsigned char)carry;
    s->len -= carry == 0; /* a top digit only if the sum carried into it */
    return s;
}

/* The number modulo 2^64: uint64_t arithmetic wraps modulo 2^64, so this is
 * what the consumer's own sums in uint64_t must come to. */
static uint64_t num_mod64(const num *x)
{
    uint64_t v = 0;
    for (size_t i = x->len; i-- > 0;)
        v = v * 10 + x->digit[i];
    return v;
}

/* F(n) modulo 2^64, the consumer's own reckoning to check the values by. */
static uint64_t fib_mod64(int n)
{
    uint64_t a = 0, b = 1;
    while (--n > 0) {
        uint64_t t = a + b;
        a = b;
        b = t;
    }
    return b;
}

/* The generator: F(1), F(2), ... for as long as it is resumed. prev and cur
 * stay on its stack across each yield, which is what keeps their region. */
static void fib_body(void *arg)
{
    fib_gen *g = arg;
    static const num zero = {0}; /* no digits */
    num *one = num_new(g->into, 1);
    one->digit[0] = 1;
    const num *prev = &zero, *cur = one;
    for (;;) {
        g->value = cur;
        gb_coro_yield();
        const num *next = num_add(g->into, prev, cur);
        prev = cur;
        cur = next;
    }
}

int main(void)
{
    /* A misuse stops the process with abort(), which drops buffered output:
     * line buffering keeps what was printed before it, even into a pipe. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    enum { COUNT = 10000 };
    /* Part one: the consumer keeps every value, in a region of its own. */
    gb_region *keep = gb_enter();
    const num **values = gb_alloc(COUNT * sizeof *values);
    fib_gen g = {keep, NULL};
    gb_coro *gen = gb_coro_new(fib_body, &g, 0);
    for (int i = 0; i < COUNT; i++) {
        gb_coro_resume(gen);
        values[i] = g.value;
    }
    gb_coro_free(gen); /* it never finishes by itself; freeing it is the end */
    uint64_t digits = 0;
    for (int i = 0; i < COUNT; i++) {
        check(num_mod64(values[i]) == fib_mod64(i + 1), "a kept value is not F(i)");
        check(gb_region_of(values[i]) == keep, "a value is not in the consumer's region");
        digits += values[i]->len;
    }
    printf("kept F(1)..F(%d) after the generator was freed: %llu digits, F(%d) has %zu; "
           "region %.1f MiB\n", COUNT, (unsigned long long)digits, COUNT, values[COUNT - 1]->len,
           gb_region_bytes(keep) / MiB);
    gb_leave(keep);

    /* Part two: the consumer leaves a region while the suspended generator
     * still points into it. */
    gb_region *batch = gb_enter();
    g = (fib_gen){batch, NULL};
    gen = gb_coro_new(fib_body, &g, 0);
    for (int i = 0; i < 50; i++)
        gb_coro_resume(gen);
    gb_leave(batch);
    gb_region_info info;
    gb_region_info_get(batch, &info);
    printf("left the batch region: %s, pinned by %p (the generator is %p), holding %zu bytes\n",
           info.state == GB_REGION_RETIRED ? "retired" : "not retired",
           (void *)info.pinned_by, (void *)gen, info.bytes);
    check(info.state == GB_REGION_RETIRED && info.pinned_by == gen,
          "the region the generator points into was not retired, pinned by it");

    /* The next value is the sum of two in the retired region: still good. */
    gb_region *next = gb_enter();
    g.into = next;
    gb_coro_resume(gen);
    check(num_mod64(g.value) == fib_mod64(51), "the value made from the retired region is wrong");
    gb_coro_free(gen);
    gb_region_info_get(batch, &info);
    printf("after the generator was freed: batch region %s\n",
           info.state == GB_REGION_FREED ? "freed" : "still held");
    check(info.state == GB_REGION_FREED, "the batch region was not freed with its pinner");
    gb_leave(next);

    gb_sweep();
    gb_stats st;
    gb_stats_get(&st);
    check(st.regions_live == 0 && st.regions_retired == 0 && st.coros_live == 0,
          "a region or a coroutine is still held");
    gb_resident res;
    gb_resident_get(&res);
    printf("resident after leave and sweep: %.1f MiB (peak %.1f MiB)\n", res.rss / MiB,
           res.peak / MiB);
    printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
