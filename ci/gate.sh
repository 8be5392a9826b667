#!/usr/bin/env bash
# gate.sh -- the kill matrix: every gate on every build, judged.
#
# Builds the clean runtime and every poison variant (the release preset),
# then hands the rest to the gate kit (gates/kit/): first its own tests
# (gates/kit/test/kit.bats: the kit must report every kind of red as red),
# then gbgate matrix, which runs its failsafe and every gate of
# gates/gates.tsv on every build of gates/builds.tsv, one build and one gate
# at a time (resident-size gates must not share the machine with each
# other), and compares each cell with gates/expected.tsv: the clean build
# must be green everywhere, each poison red in its gate for its stated
# reason. Before anything it checks that the builds (the columns of
# expected.tsv) are clean and the poisons of poisons/faults.tsv, in its
# order. Writes build/gate/: matrix.md, matrix.tsv, junit.xml, results.tsv,
# logs/, series/ and, with gnuplot, charts/; then the stress gate at four
# sizes of the coroutine descriptor (build/gate/coro-size/, on glibc:
# ci/coro-size-sweep.sh); then the kit's matrices of
# three other allocators (build/gate/foreign/) and of eight language
# runtimes (build/gate/runtimes/). Exits non-zero if the kit's
# tests fail or any cell has the wrong colour, the sweep's included.
#
# With --macos-sim it runs the matrix on the builds of the simulated macOS
# OS layer instead (the macos-sim preset, runtime/src/os/sim_macos.c),
# judged by the macOS colours of gates/expected.tsv (GBGATE_PLATFORMS),
# into build/gate-macos-sim/; the kit's own tests and the other
# allocators' matrices, which do not depend on the OS layer, run only in
# the plain mode.
# Usage: ci/gate.sh [--macos-sim]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"
gb_require gate.sh "base gate" cmake bats ps awk cc

# check_columns EXPECTED FAULTS: stops unless the build columns of EXPECTED
# (gates/expected.tsv) are exactly "clean" and then the poisons of FAULTS
# (poisons/faults.tsv, the ones CMake builds), in the same order; a poison
# in one and not the other would go unbuilt or unjudged.
check_columns() {
    local expected="$1" faults="$2" b
    local -a have=() want=() missing=() extra=()
    # read loops, not mapfile: macOS ships bash 3.2, which has no mapfile.
    while IFS= read -r b; do have+=("$b"); done < <(awk -F'\t' '!/^#/ && $1 == "gate" { for (i = 3; i <= NF; i++) print $i; exit }' "$expected")
    while IFS= read -r b; do want+=("$b"); done < <(echo clean; awk -F'\t' '!/^#/ && NF && $1 != "poison" { print $1 }' "$faults")
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

case "${1:-}" in
    "") preset=release out=build/gate ;;
    --macos-sim)
        preset=macos-sim out=build/gate-macos-sim
        export GBGATE_PLATFORMS="all macos"
        ;;
    *) echo "usage: ci/gate.sh [--macos-sim]" >&2; exit 2 ;;
esac

cmake --preset "$preset" ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"} >/dev/null
cmake --build --preset "$preset" --parallel "$jobs"

if [[ "$preset" == release ]]; then
    echo "gate.sh: the kit's own tests (gates/kit/test/*.bats)"
    bats gates/kit/test/
fi

rm -rf "$out"
export GATE_BIN_DIR="$root/build/$preset/gates/bin"
status=0
gates/kit/gbgate matrix --expected gates/expected.tsv --builds gates/builds.tsv --out "$out" || status=1
[[ "$preset" == release ]] || exit "$status"

# The stress gate again with the coroutine descriptor at four sizes
# (ci/coro-size-sweep.sh; glibc only): its colours must not hang on the
# size of a struct the runtime mallocs. It builds only the stress gate's
# programs of clean and malloc-back, in build/coro-size-<pad>/.
echo "gate.sh: the stress gate at four sizes of the coroutine descriptor (ci/coro-size-sweep.sh)"
ci/coro-size-sweep.sh --out "$out/coro-size" || status=1

# The kit's matrices of three allocators that are not giveback (glibc
# malloc, mimalloc, jemalloc; gates/kit/foreign/). They do not depend on
# giveback's builds, so they run even when its matrix has a wrong cell;
# either one failing fails the stage.
echo "gate.sh: the kit on three other allocators (gates/kit/foreign/run.sh)"
gates/kit/foreign/run.sh --out build/gate/foreign || status=1

# The kit's matrices of language runtimes (Go, CPython, Node.js, Lua;
# gates/kit/runtimes/), each in a clean configuration and a poisoned one.
# Independent of the matrices above, so they run whatever those said; a
# wrong cell fails the stage, a runtime not installed is n/a and says so.
echo "gate.sh: the kit on eight language runtimes (gates/kit/runtimes/run.sh)"
gates/kit/runtimes/run.sh --out build/gate/runtimes || status=1
exit "$status"
