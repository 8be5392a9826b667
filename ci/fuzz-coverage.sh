#!/usr/bin/env bash
# fuzz-coverage.sh -- line coverage of runtime/ reached by the committed fuzz corpus.
#
# `make fuzz-coverage` runs this. The corpus is the fuzzer's memory and the
# replay runs it under ctest everywhere, so what it covers is what every CI
# run re-checks; this says how much of the runtime that is, and which lines
# it never reaches. It builds the replay program with clang's source-based
# coverage (-fprofile-instr-generate -fcoverage-mapping, no sanitizers, -O0
# so lines map exactly), replays the corpus once per runtime configuration
# (block source, growth path, small-chunk source, stress), merges the
# profiles and reports runtime/src per file, then the uncovered lines. It
# fails when the total is under the target.
#
# Usage: ci/fuzz-coverage.sh
# Environment:
#   FUZZ_COVERAGE_MIN  the line coverage target, in percent (default 90)
#   FUZZ_COVERAGE_HTML set to 1 to write an HTML report too
# Prerequisites: clang and its llvm-profdata and llvm-cov (Debian: the
# llvm-<version> package of the installed clang; macOS: Homebrew llvm).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

min="${FUZZ_COVERAGE_MIN:-90}"
dir="$root/build/fuzz/coverage"
prof="$dir/profiles"

die() { echo "fuzz-coverage.sh: error: $*" >&2; exit 1; }

cc="${CC:-clang}"
"$cc" --version 2>/dev/null | grep -q clang || cc=clang
command -v "$cc" >/dev/null 2>&1 || die "clang not found; run: ci/install-deps.sh base"
major="$("$cc" -dumpversion | cut -d. -f1)"

# The profile tools of this clang: versioned (Debian), plain, next to the
# compiler (Homebrew llvm), or through xcrun (Apple).
tool() {
    local t cand
    t="$1"
    for cand in "$t-$major" "$t" "$(dirname "$(command -v "$cc")")/$t"; do
        if command -v "$cand" >/dev/null 2>&1; then
            command -v "$cand"
            return
        fi
    done
    if command -v xcrun >/dev/null 2>&1 && xcrun --find "$t" >/dev/null 2>&1; then
        xcrun --find "$t"
        return
    fi
    die "$t for clang $major not found (Debian: apt-get install llvm-$major; macOS: brew install llvm)"
}
profdata="$(tool llvm-profdata)"
cov="$(tool llvm-cov)"

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
CC="$cc" cmake -S fuzz -B "$dir" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
    -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" -DGB_FUZZ_ENGINE=none >/dev/null
cmake --build "$dir" --target fuzz_runtime_replay >/dev/null

# The configurations of fuzz/configs.txt for this OS, as ci/fuzz.sh
# fuzzes in them and ctest replays in them.
configs=()
os_name="$(uname -s | tr '[:upper:]' '[:lower:]')"
while read -r name where env; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    [[ "$where" == any || "$where" == "$os_name" ]] && configs+=("$env")
done <fuzz/configs.txt
rm -rf "$prof"
mkdir -p "$prof"
inputs="$(find fuzz/corpus -type f | wc -l | tr -d ' ')"
for c in "${configs[@]}"; do
    # shellcheck disable=SC2086 # $c is a list of NAME=value words
    env $c LLVM_PROFILE_FILE="$prof/%p.profraw" "$dir/fuzz_runtime_replay" fuzz/corpus \
        >"$prof/replay.log" 2>&1 || { cat "$prof/replay.log"; die "the replay failed ($c)"; }
done
"$profdata" merge -sparse "$prof"/*.profraw -o "$dir/fuzz.profdata"

echo "fuzz-coverage: the committed corpus ($inputs inputs) replayed in ${#configs[@]} configurations:"
"$cov" report "$dir/fuzz_runtime_replay" -instr-profile="$dir/fuzz.profdata" runtime/src |
    sed "s|$root/||"

# The uncovered lines of runtime/, from the lcov export (DA:line,0).
"$cov" export "$dir/fuzz_runtime_replay" -instr-profile="$dir/fuzz.profdata" -format=lcov runtime/src \
    >"$dir/fuzz.lcov"
echo "fuzz-coverage: lines never reached:"
awk -v root="$root/" '
    /^SF:/ { file = substr($0, 4); sub(root, "", file); n = 0; list = "" }
    /^DA:/ { split(substr($0, 4), f, ","); if (f[2] == 0) { list = list (n++ ? "," : "") f[1] } }
    /^end_of_record/ { if (n) printf "  %s (%d): %s\n", file, n, list }
' "$dir/fuzz.lcov"

if [[ "${FUZZ_COVERAGE_HTML:-0}" == 1 ]]; then
    "$cov" show "$dir/fuzz_runtime_replay" -instr-profile="$dir/fuzz.profdata" -format=html \
        -output-dir="$dir/html" runtime/src
    echo "fuzz-coverage: HTML report in ${dir#"$root"/}/html/index.html"
fi

total="$(awk '/^LF:/ { lf += substr($0, 4) } /^LH:/ { lh += substr($0, 4) }
              END { if (lf) printf "%.2f", 100 * lh / lf; else print 0 }' "$dir/fuzz.lcov")"
echo "fuzz-coverage: runtime/src line coverage $total% (target $min%)"
awk -v t="$total" -v m="$min" 'BEGIN { exit !(t + 0 >= m + 0) }' ||
    die "line coverage $total% is under the target $min%"
