/* verdict_test.c -- the interval's ranks and the judge on known inputs
 * (ctest: bench.verdict).
 *
 * The ranks are checked against the binomial tail counted in integers, so
 * an off-by-one in the rank or the tail shows as a wrong interval; the
 * judge against intervals on, inside and beyond each kind of bound. Every
 * check runs; the program fails when any did, naming each.
 */
#include "verdict.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            failures++;                                                              \
        }                                                                            \
    } while (0)

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-12 * (fabs(a) + fabs(b) + 1);
}

/* C(n, 0) + ... + C(n, j), in integers (n at most 56, so that 40 times it
 * fits). */
static uint64_t binomial_count(int n, int j)
{
    uint64_t c = 1, sum = 0;
    for (int i = 0; i <= j; i++) {
        sum += c;
        c = c * (uint64_t)(n - i) / (uint64_t)(i + 1);
    }
    return sum;
}

static void test_ranks(void)
{
    for (int n = 0; n < 6; n++)
        CHECK(verdict_rank(n) == 0, "n=%d: rank %d, no interval below 6 rounds", n, verdict_rank(n));
    CHECK(verdict_rank(6) == 1, "rank %d", verdict_rank(6));
    CHECK(near(verdict_confidence(6, 1), 0.96875), "confidence %.6f, 1 - 2/64", verdict_confidence(6, 1));
    CHECK(verdict_rank(8) == 1, "rank %d", verdict_rank(8));
    CHECK(verdict_rank(9) == 2, "rank %d", verdict_rank(9));
    CHECK(near(verdict_confidence(9, 2), 1 - 2 * 10.0 / 512), "confidence %.6f", verdict_confidence(9, 2));
    CHECK(verdict_rank(12) == 3, "rank %d", verdict_rank(12));
    CHECK(verdict_rank(17) == 5, "rank %d", verdict_rank(17));
    CHECK(verdict_rank(31) == 10, "rank %d", verdict_rank(31));
    CHECK(verdict_confidence(6, 0) == 0, "no rank, no confidence");
    /* Every n to 56: the tail below rank k is at most 2.5% (40 times the
     * count at most 2^n), and the tail below rank k + 1 is over it. */
    for (int n = 6; n <= 56; n++) {
        int k = verdict_rank(n);
        uint64_t all = (uint64_t)1 << n;
        CHECK(k >= 1 && 40 * binomial_count(n, k - 1) <= all, "n=%d k=%d: its tail is over 2.5%%", n, k);
        CHECK(40 * binomial_count(n, k) > all, "n=%d k=%d: rank %d is within 2.5%% too", n, k, k + 1);
        double conf = verdict_confidence(n, k);
        CHECK(conf >= 0.95 && near(conf, 1 - 2 * (double)binomial_count(n, k - 1) / (double)all),
              "n=%d: confidence %.6f", n, conf);
    }
    /* The tail shared over L looks: 2.5% / L a side, every n to 56; below
     * rank k at most that, below rank k + 1 over it (L * 40 times the count
     * against 2^n). */
    for (int looks = 1; looks <= 6; looks++)
        for (int n = 1; n <= 56; n++) {
            int k = verdict_rank_at(n, VERDICT_TAIL / looks);
            uint64_t all = (uint64_t)1 << n;
            CHECK(k == 0 || (uint64_t)looks * 40 * binomial_count(n, k - 1) <= all, "n=%d looks %d: k=%d too wide",
                  n, looks, k);
            CHECK(k == n / 2 || (uint64_t)looks * 40 * binomial_count(n, k) > all,
                  "n=%d looks %d: rank %d is within the tail too", n, looks, k + 1);
        }
    /* Eight rounds have [min, max] for up to six looks; seven have none at
     * six looks. */
    CHECK(verdict_rank_at(8, VERDICT_TAIL / 6) == 1, "rank %d", verdict_rank_at(8, VERDICT_TAIL / 6));
    CHECK(verdict_rank_at(7, VERDICT_TAIL / 6) == 0, "rank %d", verdict_rank_at(7, VERDICT_TAIL / 6));
    CHECK(verdict_rank_at(VERDICT_MIN_ROUNDS, VERDICT_TAIL / 6) == 1, "VERDICT_MIN_ROUNDS %d", VERDICT_MIN_ROUNDS);
    CHECK(verdict_rank_at(16, VERDICT_TAIL / 3) == 3 && verdict_rank(16) == 4, "16 rounds: %d at 3 looks, %d at one",
          verdict_rank_at(16, VERDICT_TAIL / 3), verdict_rank(16));

    /* The looks: the minimum, doubling while below the cap, the cap. */
    CHECK(verdict_looks(8, 8) == 1, "8..8: %d", verdict_looks(8, 8));
    CHECK(verdict_looks(8, 12) == 2, "8, 12: %d", verdict_looks(8, 12));
    CHECK(verdict_looks(8, 16) == 2, "8, 16: %d", verdict_looks(8, 16));
    CHECK(verdict_looks(8, 31) == 3, "8, 16, 31: %d", verdict_looks(8, 31));
    CHECK(verdict_looks(8, 32) == 3, "8, 16, 32: %d", verdict_looks(8, 32));
    CHECK(verdict_looks(9, 31) == 3, "9, 18, 31: %d", verdict_looks(9, 31));
}

static void test_estimates(void)
{
    double six[] = {5, 1, 4, 2, 6, 3};
    verdict_estimate e = verdict_estimate_of(six, 6);
    CHECK(e.k == 1 && e.lo == 1 && e.hi == 6 && e.ratio == 3.5, "n=6: k %d [%g, %g] median %g: [min, max]", e.k,
          e.lo, e.hi, e.ratio);
    CHECK(near(e.confidence, 0.96875), "n=6: confidence %.6f", e.confidence);
    CHECK(six[0] == 5 && six[5] == 3, "the rounds are left in their order");

    double nine[] = {9, 3, 7, 1, 5, 8, 2, 6, 4};
    e = verdict_estimate_of(nine, 9);
    CHECK(e.k == 2 && e.lo == 2 && e.hi == 8 && e.ratio == 5,
          "n=9: k %d [%g, %g] median %g: the second from each end", e.k, e.lo, e.hi, e.ratio);

    double five[] = {1, 2, 3, 4, 5};
    e = verdict_estimate_of(five, 5);
    CHECK(e.k == 0 && isnan(e.lo) && isnan(e.hi) && e.ratio == 3, "n=5: no interval, a median of %g", e.ratio);

    e = verdict_estimate_of(NULL, 0);
    CHECK(isnan(e.ratio) && isnan(e.lo) && isnan(e.hi), "no rounds, no figures");
}

static void test_judge(void)
{
    /* Both kinds, one interval: its side of the bound decides. */
    CHECK(verdict_judge(VERDICT_AT_MOST, 1.0, 1.1, 1.3) == VERDICT_MISSED, "at most 1.0, [1.1, 1.3]");
    CHECK(verdict_judge(VERDICT_AT_LEAST, 1.0, 1.1, 1.3) == VERDICT_MET, "at least 1.0, [1.1, 1.3]");
    CHECK(verdict_judge(VERDICT_AT_MOST, 1.5, 1.1, 1.3) == VERDICT_MET, "at most 1.5, [1.1, 1.3]");
    CHECK(verdict_judge(VERDICT_AT_LEAST, 1.5, 1.1, 1.3) == VERDICT_MISSED, "at least 1.5, [1.1, 1.3]");
    /* The bound inside: undecided either way. */
    CHECK(verdict_judge(VERDICT_AT_MOST, 1.2, 1.1, 1.3) == VERDICT_UNDECIDED, "at most 1.2, [1.1, 1.3]");
    CHECK(verdict_judge(VERDICT_AT_LEAST, 1.2, 1.1, 1.3) == VERDICT_UNDECIDED, "at least 1.2, [1.1, 1.3]");
    /* An end on the bound: the bound itself meets the target, so the end
     * that may equal it is on the good side, and the other is undecided. */
    CHECK(verdict_judge(VERDICT_AT_MOST, 1.2, 1.0, 1.2) == VERDICT_MET, "at most 1.2, hi 1.2");
    CHECK(verdict_judge(VERDICT_AT_MOST, 1.2, 1.2, 1.4) == VERDICT_UNDECIDED, "at most 1.2, lo 1.2");
    CHECK(verdict_judge(VERDICT_AT_LEAST, 1.0, 1.0, 1.4) == VERDICT_MET, "at least 1.0, lo 1.0");
    CHECK(verdict_judge(VERDICT_AT_LEAST, 1.0, 0.8, 1.0) == VERDICT_UNDECIDED, "at least 1.0, hi 1.0");
    /* No interval, no verdict. */
    CHECK(verdict_judge(VERDICT_AT_MOST, 1.2, NAN, NAN) == VERDICT_UNDECIDED, "no interval");
    CHECK(strcmp(verdict_state_name(VERDICT_MET), "met") == 0 &&
              strcmp(verdict_state_name(VERDICT_MISSED), "missed") == 0 &&
              strcmp(verdict_state_name(VERDICT_UNDECIDED), "undecided") == 0,
          "the states' names");
}

static void add_all(verdict *v, const double *r, int n)
{
    for (int i = 0; i < n; i++)
        verdict_add(v, r[i]);
}

static void test_targets(void)
{
    verdict v;
    /* All rounds alike: the interval is that one ratio. */
    double same[] = {1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1};
    verdict_init(&v, "same", VERDICT_AT_MOST, 1.2, 8, 8);
    add_all(&v, same, 8);
    CHECK(v.state == VERDICT_MET && v.est.lo == 1.1 && v.est.hi == 1.1 && v.est.ratio == 1.1,
          "all 1.1, at most 1.2: %s [%g, %g]", verdict_state_name(v.state), v.est.lo, v.est.hi);
    verdict_init(&v, "same", VERDICT_AT_LEAST, 1.2, 8, 8);
    add_all(&v, same, 8);
    CHECK(v.state == VERDICT_MISSED, "all 1.1, at least 1.2: %s", verdict_state_name(v.state));

    /* A median exactly on the bound, the rounds around it: undecided. */
    double around[] = {0.9, 1.0, 1.05, 0.95, 1.0, 1.1};
    verdict_init(&v, "around", VERDICT_AT_MOST, 1.0, 6, 6);
    add_all(&v, around, 6);
    CHECK(v.est.ratio == 1.0 && v.state == VERDICT_UNDECIDED, "median %g on the bound: %s", v.est.ratio,
          verdict_state_name(v.state));
    verdict_init(&v, "around", VERDICT_AT_LEAST, 1.0, 6, 6);
    add_all(&v, around, 6);
    CHECK(v.state == VERDICT_UNDECIDED, "at least, median on the bound: %s", verdict_state_name(v.state));

    /* Fewer rounds than an interval needs: undecided, however far off. */
    verdict_init(&v, "few", VERDICT_AT_MOST, 1.0, 1, 9);
    add_all(&v, same, 5);
    CHECK(v.state == VERDICT_UNDECIDED && isnan(v.est.lo), "5 rounds: %s", verdict_state_name(v.state));

    /* Rounds are wanted up to the minimum, then only while undecided, up
     * to the cap; a failed round (NaN) is not counted. */
    verdict_init(&v, "wants", VERDICT_AT_MOST, 1.2, 8, 16);
    int rounds = 0;
    while (verdict_wants(&v) && rounds < 100) {
        verdict_add(&v, rounds == 2 ? NAN : 1.0);
        rounds++;
    }
    CHECK(v.n == 8 && rounds == 9 && v.state == VERDICT_MET, "decided: %d counted of %d rounds, %s", v.n,
          rounds, verdict_state_name(v.state));

    /* Before the first look: the median, no interval, undecided. */
    verdict_init(&v, "early", VERDICT_AT_MOST, 1.2, 8, 16);
    add_all(&v, same, 3);
    CHECK(v.state == VERDICT_UNDECIDED && v.est.ratio == 1.1 && isnan(v.est.lo) && v.est.n == 3,
          "3 rounds of 8: %s, median %g", verdict_state_name(v.state), v.est.ratio);

    /* Judged at the looks alone (8, 16, 32 here), each at 2.5% / 3 a side.
     * The first look's [min, max] holds the bound; rounds 9 to 15 are all
     * on the good side, yet the verdict and its interval stay the first
     * look's until the 16th. */
    double seq[16] = {1.1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9};
    verdict_init(&v, "looks", VERDICT_AT_MOST, 1.0, 8, 32);
    CHECK(v.looks == 3 && near(v.tail, VERDICT_TAIL / 3), "looks %d, tail %g", v.looks, v.tail);
    add_all(&v, seq, 8);
    CHECK(v.state == VERDICT_UNDECIDED && v.est.lo == 0.9 && v.est.hi == 1.1 && verdict_wants(&v),
          "first look: %s [%g, %g]", verdict_state_name(v.state), v.est.lo, v.est.hi);
    add_all(&v, seq + 8, 7);
    CHECK(v.state == VERDICT_UNDECIDED && v.est.n == 8 && v.est.hi == 1.1, "between looks: %s, %d rounds judged",
          verdict_state_name(v.state), v.est.n);
    add_all(&v, seq + 15, 1);
    CHECK(v.state == VERDICT_MET && v.est.n == 16 && v.est.lo == 0.9 && v.est.hi == 0.9 && !verdict_wants(&v),
          "second look: %s [%g, %g] of %d", verdict_state_name(v.state), v.est.lo, v.est.hi, v.est.n);

    /* The same 16 rounds with three on the bad side: one look's 95%
     * interval (ranks 4 and 13) would call it met; shared over three
     * looks (ranks 3 and 14) it is undecided. */
    double three[16] = {1.1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 1.1, 1.1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9};
    verdict_estimate one = verdict_estimate_of(three, 16);
    CHECK(verdict_judge(VERDICT_AT_MOST, 1.0, one.lo, one.hi) == VERDICT_MET, "one look: [%g, %g]", one.lo, one.hi);
    verdict_init(&v, "shared", VERDICT_AT_MOST, 1.0, 8, 32);
    add_all(&v, three, 16);
    CHECK(v.state == VERDICT_UNDECIDED && v.est.k == 3 && v.est.hi == 1.1 && verdict_wants(&v),
          "three looks: %s, k %d [%g, %g]", verdict_state_name(v.state), v.est.k, v.est.lo, v.est.hi);
    verdict_init(&v, "capped", VERDICT_AT_MOST, 1.0, 6, 9);
    rounds = 0;
    while (verdict_wants(&v) && rounds < 100)
        verdict_add(&v, rounds++ % 2 ? 0.8 : 1.2);
    CHECK(v.n == 9 && v.state == VERDICT_UNDECIDED, "undecided: %d rounds (the cap is 9), %s", v.n,
          verdict_state_name(v.state));
    verdict_init(&v, "clamped", VERDICT_AT_MOST, 1.0, 8, 3);
    CHECK(v.min_rounds == 8 && v.cap == 8, "a cap below the minimum is the minimum: %d", v.cap);

    /* A counter read once. */
    verdict_init(&v, "resident", VERDICT_AT_MOST, 64, 1, 1);
    verdict_reading(&v, 7);
    CHECK(v.state == VERDICT_MET && v.est.lo == 7 && v.est.hi == 7 && !verdict_wants(&v), "7 of at most 64: %s",
          verdict_state_name(v.state));
    verdict_reading(&v, 70);
    CHECK(v.state == VERDICT_MISSED && v.n == 1, "70 of at most 64: %s", verdict_state_name(v.state));

    CHECK(verdict_a_first(0) && !verdict_a_first(1) && verdict_a_first(2), "the order alternates");
}

/* What verdict_print writes, through a pipe in place of stdout. */
static void printed(const verdict *v, char *buf, size_t size)
{
    int fds[2], saved = dup(1);
    if (pipe(fds) != 0 || saved < 0) {
        perror("verdict_test: pipe");
        exit(2);
    }
    fflush(stdout);
    dup2(fds[1], 1);
    close(fds[1]);
    verdict_print(v);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ssize_t n = read(fds[0], buf, size - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fds[0]);
}

static void test_lines(void)
{
    char buf[256];
    verdict v;
    verdict_init(&v, "coro_vs_fcontext", VERDICT_AT_MOST, 1.2, 8, 8);
    printed(&v, buf, sizeof buf);
    CHECK(buf[0] == '\0', "no rounds, no line: \"%s\"", buf);
    double r[] = {1.25, 1.21, 1.22, 1.3, 1.24, 1.23, 1.26, 1.28};
    add_all(&v, r, 8);
    printed(&v, buf, sizeof buf);
    CHECK(strcmp(buf, "verdict coro_vs_fcontext missed 1.245 1.21 1.3\n") == 0, "the line: \"%s\"", buf);
    verdict_init(&v, "quick", VERDICT_AT_LEAST, 1.0, 1, 1);
    verdict_add(&v, 2.5);
    printed(&v, buf, sizeof buf);
    CHECK(strcmp(buf, "verdict quick undecided 2.5 nan nan\n") == 0, "too few rounds: \"%s\"", buf);
}

int main(void)
{
    test_ranks();
    test_estimates();
    test_judge();
    test_targets();
    test_lines();
    if (failures) {
        fprintf(stderr, "verdict_test: %d checks failed\n", failures);
        return 1;
    }
    printf("verdict_test: every check passed\n");
    return 0;
}
