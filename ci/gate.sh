#!/usr/bin/env bash
# gate.sh -- the kill matrix: every gate on every build, judged.
#
# Builds the clean runtime and every poison variant (the release preset),
# runs every gate in gates/*.bats on every build, one build and one gate at
# a time (resident-size gates must not share the machine with each other),
# and compares each cell with gates/expected.tsv: the clean build must be
# green everywhere, each poison red in its gate for its stated reason.
# Before anything it checks that the builds (the columns of expected.tsv)
# are clean and the poisons of poisons/faults.tsv, in its order; then it
# proves the harness can fail (the failsafe). Writes build/gate/:
# junit/<build>.xml, results.tsv, matrix.tsv, matrix.md. Exits non-zero if
# any cell has the wrong colour.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"
gb_require gate.sh "base gate" cmake bats ps awk

# check_columns EXPECTED FAULTS: stops unless the build columns of EXPECTED
# (gates/expected.tsv) are exactly "clean" and then the poisons of FAULTS
# (poisons/faults.tsv, the ones CMake builds), in the same order; a poison
# in one and not the other would go unbuilt or unjudged.
check_columns() {
    local expected="$1" faults="$2" b
    local -a have want missing=() extra=()
    mapfile -t have < <(awk -F'\t' '!/^#/ && $1 == "gate" { for (i = 3; i <= NF; i++) print $i; exit }' "$expected")
    mapfile -t want < <(echo clean; awk -F'\t' '!/^#/ && NF && $1 != "poison" { print $1 }' "$faults")
    [[ "${have[*]}" == "${want[*]}" ]] && return 0
    for b in "${want[@]}"; do
        [[ " ${have[*]} " == *" $b "* ]] || missing+=("$b")
    done
    for b in "${have[@]}"; do
        [[ " ${want[*]} " == *" $b "* ]] || extra+=("$b")
    done
    {
        echo "gate.sh: the build columns of $expected are not \"clean\" and the poisons of $faults, in order:"
        ((${#missing[@]})) && echo "  no column in $expected for: ${missing[*]}"
        ((${#extra[@]})) && echo "  no row in $faults for the column: ${extra[*]}"
        ((${#missing[@]} + ${#extra[@]})) || echo "  the same builds, in another order (or one twice)"
        printf '  %-43s %s\n' "the columns of $expected:" "${have[*]}" "clean, then the rows of $faults:" "${want[*]}"
    } >&2
    exit 1
}
check_columns gates/expected.tsv poisons/faults.tsv
echo "gate.sh: builds: the columns of gates/expected.tsv match poisons/faults.tsv"

cmake --preset release "${generator[@]}" "${werror[@]}" >/dev/null
cmake --build --preset release --parallel "$jobs"

out=build/gate
rm -rf "$out"
mkdir -p "$out/junit"
export GATE_BIN_DIR="$root/build/release/gates/bin"
export GATE_SERIES_DIR="$root/$out/series"
results="$root/$out/results.tsv"
: >"$results"

platforms="all"
[[ "$(uname -s)" == Linux ]] && platforms="$platforms linux"
[[ "$(uname -s)" == Darwin ]] && platforms="$platforms macos"
getconf GNU_LIBC_VERSION >/dev/null 2>&1 && platforms="$platforms glibc"
echo "gate.sh: platforms: $platforms"

# The failsafe: a gate run on a program that never leaves its region must
# come out red, for the resident size, or the harness cannot see red.
failsafe="$root/$out/failsafe.tsv"
: >"$failsafe"
if GATE_SERIES_DIR="" GATE_BUILD=clean GATE_RESULTS="$failsafe" bats gates/failsafe/hold.bats >"$out/failsafe.log" 2>&1; then
    echo "gate.sh: FAILSAFE BROKEN: the harness passed a gate that must fail" >&2
    cat "$out/failsafe.log" >&2
    exit 1
fi
if ! grep -q "$(printf 'fail\trss')" "$failsafe"; then
    echo "gate.sh: FAILSAFE BROKEN: the failing gate was not recorded as red for its resident size" >&2
    cat "$out/failsafe.log" "$failsafe" >&2
    exit 1
fi
echo "gate.sh: failsafe: the harness reports a gate that must fail as red ($(cut -f5 "$failsafe"))"

# Builds are the columns of expected.tsv; each runs the gates whose row
# runs on this platform and whose cell is not a skip.
read -r -a builds < <(grep -v '^#' gates/expected.tsv | grep '^gate' | cut -f3- | tr '\t' ' ')
for build in "${builds[@]}"; do
    col=$(( $(grep -v '^#' gates/expected.tsv | grep '^gate' | tr '\t' '\n' | grep -nx "$build" | cut -d: -f1) ))
    names=()
    while IFS=$'\t' read -r gate runs cell; do
        [[ "$cell" == skip* ]] && continue
        on=0
        for p in $platforms; do [[ "$p" == "$runs" ]] && on=1; done
        ((on)) && names+=("$gate")
    done < <(grep -v '^#' gates/expected.tsv | grep -v '^gate' | awk -F'\t' -v c="$col" 'NF { print $1 "\t" $2 "\t" $c }')
    filter="^($(IFS='|'; echo "${names[*]}"))\$"
    echo "gate.sh: build $build: ${names[*]}"
    GATE_BUILD="$build" GATE_RESULTS="$results" \
        bats --formatter junit --filter "$filter" gates/*.bats >"$out/junit/$build.xml" || true
    awk -F'\t' -v b="$build" '$2 == b { printf "  %-24s %-4s %-9s %s\n", $1, $3, $4, $5 }' "$results"
done

echo
status=0
awk -v platforms="$platforms" -v md="$out/matrix.md" -v tsv="$out/matrix.tsv" \
    -f gates/matrix.awk gates/expected.tsv "$results" || status=$?
if command -v gnuplot >/dev/null 2>&1; then
    ci/charts.sh gate || echo "gate.sh: charts failed (the matrix above stands)" >&2
else
    echo "gate.sh: gnuplot not found: no charts (ci/install-deps.sh gate)"
fi
exit "$status"
