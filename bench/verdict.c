/* verdict.c -- the median of paired rounds' ratios, its distribution-free
 * interval, and the judge (verdict.h says why).
 */
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* P(Binomial(n, 1/2) <= j), summed from the probabilities of 0..j, each
 * from the last (C(n, i + 1) = C(n, i) (n - i) / (i + 1)), so no factorial
 * overflows; exact enough for any n a benchmark runs. */
static double binomial_cdf_half(int n, int j)
{
    double p = ldexp(1.0, -n), sum = 0;
    for (int i = 0; i <= j && i <= n; i++) {
        sum += p;
        p = p * (double)(n - i) / (double)(i + 1);
    }
    return sum;
}

int verdict_rank_at(int n, double tail)
{
    int k = 0;
    /* The tail grows with k: the last k whose tail is within the one
     * allowed is the rank. */
    while (k + 1 <= n / 2 && binomial_cdf_half(n, k) <= tail)
        k++;
    return k;
}

int verdict_rank(int n)
{
    return verdict_rank_at(n, VERDICT_TAIL);
}

double verdict_confidence(int n, int k)
{
    if (k <= 0)
        return 0;
    return 1 - 2 * binomial_cdf_half(n, k - 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

verdict_estimate verdict_estimate_at(const double *r, int n, double tail)
{
    verdict_estimate e = {.n = n, .ratio = NAN, .lo = NAN, .hi = NAN};
    if (n <= 0)
        return e;
    if (n > VERDICT_ROUNDS_MAX)
        n = e.n = VERDICT_ROUNDS_MAX;
    double s[VERDICT_ROUNDS_MAX];
    memcpy(s, r, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    e.ratio = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    e.k = verdict_rank_at(n, tail);
    if (e.k > 0) {
        e.lo = s[e.k - 1];
        e.hi = s[n - e.k];
        e.confidence = verdict_confidence(n, e.k);
    }
    return e;
}

verdict_estimate verdict_estimate_of(const double *r, int n)
{
    return verdict_estimate_at(r, n, VERDICT_TAIL);
}

int verdict_looks(int min_rounds, int cap)
{
    int looks = 1;
    for (int n = min_rounds; n < cap; n *= 2)
        looks++;
    return looks;
}

verdict_state verdict_judge(verdict_dir dir, double bound, double lo, double hi)
{
    if (isnan(lo) || isnan(hi))
        return VERDICT_UNDECIDED;
    if (dir == VERDICT_AT_MOST)
        return hi <= bound ? VERDICT_MET : lo > bound ? VERDICT_MISSED : VERDICT_UNDECIDED;
    return lo >= bound ? VERDICT_MET : hi < bound ? VERDICT_MISSED : VERDICT_UNDECIDED;
}

const char *verdict_state_name(verdict_state s)
{
    switch (s) {
    case VERDICT_MET:
        return "met";
    case VERDICT_MISSED:
        return "missed";
    default:
        return "undecided";
    }
}

static int clamp(int x, int lo, int hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

void verdict_init(verdict *v, const char *name, verdict_dir dir, double bound, int min_rounds, int cap)
{
    memset(v, 0, sizeof *v);
    v->name = name;
    v->dir = dir;
    v->bound = bound;
    v->min_rounds = clamp(min_rounds, 1, VERDICT_ROUNDS_MAX);
    v->cap = clamp(cap, v->min_rounds, VERDICT_ROUNDS_MAX);
    v->looks = verdict_looks(v->min_rounds, v->cap);
    v->tail = VERDICT_TAIL / v->looks;
    v->next_look = v->min_rounds;
    v->est = verdict_estimate_of(NULL, 0);
}

void verdict_add(verdict *v, double ratio)
{
    if (!isfinite(ratio) || v->fixed || v->n >= VERDICT_ROUNDS_MAX)
        return;
    v->r[v->n++] = ratio;
    if (v->n < v->min_rounds) {
        /* Before the first look: the median alone, no interval. */
        v->est = verdict_estimate_at(v->r, v->n, 0);
        return;
    }
    if (v->n != v->next_look)
        return;
    v->est = verdict_estimate_at(v->r, v->n, v->tail);
    v->state = verdict_judge(v->dir, v->bound, v->est.lo, v->est.hi);
    v->next_look = v->n >= v->cap ? 0 : 2 * v->n < v->cap ? 2 * v->n : v->cap;
}

void verdict_offer(verdict *v, double ratio)
{
    if (verdict_wants(v))
        verdict_add(v, ratio);
}

void verdict_fixed(verdict *v, double ratio, double lo, double hi)
{
    if (!isfinite(ratio) || !isfinite(lo) || !isfinite(hi))
        return;
    v->fixed = true;
    v->n = 1;
    v->r[0] = ratio;
    v->est = (verdict_estimate){.n = 1, .ratio = ratio, .lo = lo, .hi = hi, .confidence = 1};
    v->state = verdict_judge(v->dir, v->bound, lo, hi);
}

void verdict_reading(verdict *v, double x)
{
    verdict_fixed(v, x, x, x);
}

bool verdict_wants(const verdict *v)
{
    if (v->fixed)
        return false;
    return v->n < v->min_rounds || (v->state == VERDICT_UNDECIDED && v->n < v->cap);
}

bool verdict_a_first(int round)
{
    return round % 2 == 0;
}

void verdict_print(const verdict *v)
{
    if (v->n == 0)
        return;
    printf("verdict %s %s %.6g %.6g %.6g\n", v->name, verdict_state_name(v->state), v->est.ratio, v->est.lo,
           v->est.hi);
}

void verdict_table_header(void)
{
    printf("  %-30s %-9s %-10s %9s %21s %7s %6s %6s\n", "target", "bound", "verdict", "ratio", "interval", "rounds",
           "looks", "conf.");
}

void verdict_table_row(const verdict *v)
{
    char bound[24], interval[48], conf[16];
    snprintf(bound, sizeof bound, "%s %g", v->dir == VERDICT_AT_MOST ? "<=" : ">=", v->bound);
    if (v->n == 0) {
        printf("  %-30s %-9s %-10s\n", v->name, bound, "(not measured)");
        return;
    }
    if (isnan(v->est.lo))
        snprintf(interval, sizeof interval, "(too few rounds)");
    else
        snprintf(interval, sizeof interval, "%.4g - %.4g", v->est.lo, v->est.hi);
    if (v->fixed)
        snprintf(conf, sizeof conf, "exact");
    else if (v->est.k > 0)
        snprintf(conf, sizeof conf, "%.1f%%", 100 * v->est.confidence);
    else
        snprintf(conf, sizeof conf, "-");
    char rounds[16] = "-", looks[16] = "-";
    if (!v->fixed) {
        snprintf(rounds, sizeof rounds, "%d", v->est.n);
        snprintf(looks, sizeof looks, "%d", v->looks);
    }
    printf("  %-30s %-9s %-10s %9.4g %21s %7s %6s %6s\n", v->name, bound, verdict_state_name(v->state),
           v->est.ratio, interval, rounds, looks, conf);
}

void verdict_report(const verdict *const *v, int n)
{
    printf(
        "verdicts: the median of the rounds' ratios (the two measured side by side, their order alternating)\n"
        "and its distribution-free interval (sign test); met when the whole interval is on the target's side\n"
        "of the bound, missed when it is on the other side, undecided when the bound is inside it; judged at\n"
        "looks (the minimum of rounds, then twice the rounds each time, up to a cap) while undecided, with\n"
        "the 95%% shared over the looks (Bonferroni), so each look's interval is wider (conf. is the exact\n"
        "confidence of the last one) and the verdict is wrong at most 5%% of the time over all its looks\n");
    verdict_table_header();
    for (int i = 0; i < n; i++)
        verdict_table_row(v[i]);
    printf("\n");
    for (int i = 0; i < n; i++)
        verdict_print(v[i]);
}
