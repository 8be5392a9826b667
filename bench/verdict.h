/* verdict.h -- a target judged from paired rounds, with its uncertainty.
 *
 * A figure's median over a few rounds is a number, not a verdict: on a
 * shared machine the same code measured twice gave a ratio of 3.57 and one
 * of 0.59, and a target marked met on one run and missed on the next tells
 * nobody anything. So a target is judged here from rounds in which the two
 * things compared, A and B, are measured side by side: one ratio A / B per
 * round, the two adjacent and their order alternating from round to round
 * (A then B, then B then A), so that a machine slowing down or speeding up
 * during a round falls on both and its drift cancels over the rounds.
 *
 * The estimate is the median of the rounds' ratios; beside it, the
 * distribution-free confidence interval for that median (the sign test's,
 * from order statistics): with the ratios sorted, r_(k) to r_(n+1-k), where
 * k is the largest rank such that P(Binomial(n, 1/2) <= k - 1) is within
 * the tail allowed. It assumes only that the rounds are independent and
 * alike, no shape of noise, and its exact confidence is printed beside it.
 *
 * A target is met when the whole interval is on its good side of the
 * bound, missed when the whole interval is on the bad side, and undecided
 * when the bound is inside it. A benchmark adds rounds while a target is
 * undecided, up to a cap of its own, and leaves it undecided at the cap: a
 * verdict that the measurements cannot settle is reported as such, never
 * rounded to met or missed.
 *
 * Adding rounds until the interval leaves the bound is a sequence of
 * looks, and each look is another chance to decide wrongly: a 95% interval
 * judged after every round from the 6th to the 31st decides a target whose
 * median sits on its bound far more often than one time in twenty, and
 * once decided it stops, so the error is kept. Two runs of one build then
 * disagree: a churn size missed at 6 rounds (1.04-1.28) was met in the next
 * run at 25 (0.88-0.97). So a verdict is judged only at its looks, the
 * first at its minimum and each later one at twice the rounds of the one
 * before, the cap always the last; and the 5% that a verdict may be wrong
 * is shared out over its looks (Bonferroni: each look's interval leaves
 * 2.5% / looks on each side), so that the chance that any look decides
 * against the truth is at most 5% whatever the rounds say. Between looks
 * the verdict, its median and its interval stay those of the last look.
 * Eight rounds are the fewest with such an interval for up to six looks:
 * [min, max], 99.2%. Nothing here is random, so two runs differ only by
 * what they measured.
 *
 * Every verdict prints one line for machines,
 *   verdict <name> <met|missed|undecided> <ratio> <lo> <hi>
 * (ci/bench.sh copies them into bench.tsv; lo and hi are nan when the rounds
 * are too few for an interval), and a row of the benchmark's table of
 * verdicts for people, with its rounds and confidence.
 */
#ifndef GB_BENCH_VERDICT_H
#define GB_BENCH_VERDICT_H

#include <stdbool.h>

/* The most rounds any verdict keeps. */
enum { VERDICT_ROUNDS_MAX = 64 };

/* The fewest rounds with an interval at any verdict's looks (up to six:
 * 2^-8 is within 2.5% / 6). */
enum { VERDICT_MIN_ROUNDS = 8 };

/* The two-sided error a verdict may make over all its looks, per side. */
#define VERDICT_TAIL 0.025

typedef enum verdict_dir {
    VERDICT_AT_MOST,  /* met when the ratio is at most the bound */
    VERDICT_AT_LEAST, /* met when the ratio is at least the bound */
} verdict_dir;

typedef enum verdict_state {
    VERDICT_UNDECIDED = 0,
    VERDICT_MET,
    VERDICT_MISSED,
} verdict_state;

/* The rank k of the interval for n rounds: the largest k >= 1 with
 * P(Binomial(n, 1/2) <= k - 1) <= tail; 0 when there is none. */
int verdict_rank_at(int n, double tail);

/* verdict_rank_at(n, VERDICT_TAIL): one look, at least 95% (none below 6
 * rounds). */
int verdict_rank(int n);

/* The exact confidence of [r_(k), r_(n+1-k)] for n rounds:
 * 1 - 2 P(Binomial(n, 1/2) <= k - 1); 0 when k is 0. */
double verdict_confidence(int n, int k);

/* What rounds' ratios say: their median, and the interval [lo, hi] of rank
 * k (NaN where k is 0) at the given confidence. */
typedef struct verdict_estimate {
    int n, k;
    double ratio, lo, hi, confidence;
} verdict_estimate;

/* The estimate from r[0..n) (left as it is), its interval leaving `tail`
 * on each side; n at most VERDICT_ROUNDS_MAX. With n 0 every figure is
 * NaN. */
verdict_estimate verdict_estimate_at(const double *r, int n, double tail);

/* verdict_estimate_at(r, n, VERDICT_TAIL): one look, at least 95%. */
verdict_estimate verdict_estimate_of(const double *r, int n);

/* The looks of a verdict whose rounds go from min_rounds to cap: at
 * min_rounds, then each at twice the one before while below cap, then at
 * cap. */
int verdict_looks(int min_rounds, int cap);

/* The judge: met when [lo, hi] is wholly on the good side of the bound
 * (hi <= bound for at most, lo >= bound for at least), missed when it is
 * wholly on the bad side (lo > bound, hi < bound), else undecided (and
 * undecided when lo or hi is NaN: no interval, no verdict). */
verdict_state verdict_judge(verdict_dir dir, double bound, double lo, double hi);

/* "met", "missed", "undecided". */
const char *verdict_state_name(verdict_state s);

/* One target and its rounds. */
typedef struct verdict {
    const char *name; /* as in the verdict line: no spaces */
    verdict_dir dir;
    double bound;
    int min_rounds, cap;
    int looks;       /* verdict_looks(min_rounds, cap) */
    double tail;     /* each look's interval: VERDICT_TAIL / looks per side */
    int next_look;   /* the rounds at which it is judged next; 0: no more */
    int n;
    double r[VERDICT_ROUNDS_MAX];
    bool fixed; /* its interval known (verdict_fixed), not from rounds */
    /* Set at each look (verdict_add) and by verdict_reading. */
    verdict_state state;
    verdict_estimate est;
} verdict;

/* A target with no rounds yet. min_rounds and cap are clamped to
 * 1..VERDICT_ROUNDS_MAX and cap to at least min_rounds. */
void verdict_init(verdict *v, const char *name, verdict_dir dir, double bound, int min_rounds, int cap);

/* One round's ratio A / B; a ratio that is not a finite number (a round
 * that failed) is not counted. When the rounds reach a look, the verdict
 * is judged again. */
void verdict_add(verdict *v, double ratio);

/* verdict_add while the target wants rounds (verdict_wants), else
 * nothing: once decided, a verdict stops taking rounds, though rounds
 * measured for another target that shares them may go on. */
void verdict_offer(verdict *v, double ratio);

/* A verdict whose interval is known rather than estimated from rounds: a
 * count of other verdicts, say, which is at least lo and at most hi. It
 * takes no rounds. */
void verdict_fixed(verdict *v, double ratio, double lo, double hi);

/* A counter, not a timing: the verdict of one reading x, whose interval is
 * the reading itself (lo = hi = x). */
void verdict_reading(verdict *v, double x);

/* True while the target needs another round: fewer rounds than its
 * minimum, or undecided and fewer than its cap. A reading needs none. */
bool verdict_wants(const verdict *v);

/* True when round number `round` (0, 1, ...) measures A first: the order
 * alternates, A B, then B A. */
bool verdict_a_first(int round);

/* The line for machines (nothing for a verdict with no rounds: a target
 * not measured has no line). */
void verdict_print(const verdict *v);

/* The table for people: a header, then one row per verdict (its rounds,
 * the confidence, the interval). */
void verdict_table_header(void);
void verdict_table_row(const verdict *v);

/* The table of n verdicts under a title that says how they are made, then
 * their lines for machines. */
void verdict_report(const verdict *const *v, int n);

#endif /* GB_BENCH_VERDICT_H */
