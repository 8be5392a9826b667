#!/usr/bin/env bash
# bench_flips.sh -- the verdicts two runs of ci/bench.sh disagree on.
#
# A target met on one run and missed on the next, on the same code, is a
# verdict that said more than its measurements knew. Each verdict states its
# uncertainty (bench/verdict.h: met or missed only when the whole interval
# is on one side of the bound), so two runs in a row may leave a target
# undecided in one and decided in the other, but must never flip it. This
# script is the check: it reads the verdict lines of two runs' bench.tsv
# ("verdict\t<name>\t<state>\t<ratio>\t<lo>\t<hi>") and lists
#   flipped   every target met in one run and missed in the other;
#   decided in one run only   every target decided in one and undecided in
#             the other (for information);
#   in one run only   every target the other run has no verdict on (a peer
#             not built, a benchmark that failed; for information).
# Exits 1 when a verdict flipped, 0 when none did, 2 when a file cannot be
# read or holds no verdicts.
#
# Usage: ci/bench_flips.sh A.tsv B.tsv
set -euo pipefail

die() { echo "bench_flips.sh: error: $*" >&2; exit 2; }

case "${1:-}" in
    -h|--help) sed -n '/^# Usage:/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
(($# == 2)) || die "two files, please (usage: ci/bench_flips.sh A.tsv B.tsv)"
for f in "$1" "$2"; do
    [[ -r "$f" ]] || die "cannot read $f"
    grep -q '^verdict	' "$f" || die "$f holds no verdict lines (a bench.tsv from ci/bench.sh)"
done

# Each verdict as people read it: "met (0.97, 0.93-1.01)". The names come
# in the first run's order, then those only the second run has.
awk -F'\t' -v a="$1" -v b="$2" '
function shown(s, r, lo, hi) { return s " (" r ", " lo "-" hi ")" }
function decided(s) { return s == "met" || s == "missed" }
$1 != "verdict" || NF < 6 { next }
{
    # The first file is read first: its lines are those with NR == FNR
    # (it is not empty: it holds verdicts).
    k = NR == FNR ? 1 : 2
    if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
    st[$2, k] = $3; txt[$2, k] = shown($3, $4, $5, $6)
}
END {
    for (i = 1; i <= n; i++) {
        t = order[i]; ina = (t, 1) in st; inb = (t, 2) in st
        if (ina && inb && decided(st[t, 1]) && decided(st[t, 2]) && st[t, 1] != st[t, 2]) {
            printf "flipped: %s: %s in %s, %s in %s\n", t, txt[t, 1], a, txt[t, 2], b
            flips++
        } else if (ina && inb && decided(st[t, 1]) != decided(st[t, 2])) {
            printf "decided in one run only: %s: %s in %s, %s in %s\n", t, txt[t, 1], a, txt[t, 2], b
            once++
        } else if (ina != inb) {
            printf "in one run only: %s: %s in %s, no verdict in %s\n", t, ina ? txt[t, 1] : txt[t, 2], \
                ina ? a : b, ina ? b : a
            alone++
        } else {
            same++
        }
    }
    printf "bench_flips.sh: %d verdicts: %d flipped, %d decided in one run only, %d in one run only, %d alike\n", \
        n, flips, once, alone, same
    exit (flips > 0)
}' "$1" "$2"
