# shellcheck shell=bash
# lib.sh -- what the build scripts in ci/ share. Sourced, not run.
# jobs, generator and werror below are read by the scripts that source this file.
# shellcheck disable=SC2034
#
# The scripts that configure CMake builds (test.sh, gate.sh, bench.sh) agree
# on the job count, the generator and -Werror in CI; writing that once keeps
# them building the same way. The cross builds take the job count and the
# missing-tool check from here too (their toolchain files choose the rest);
# fuzz.sh counts its engine processes, FUZZ_JOBS, on its own.

# gb_require SCRIPT GROUPS TOOL...: stops, naming the install-deps groups,
# unless every tool is on PATH.
gb_require() {
    local script="$1" groups="$2" tool
    shift 2
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || {
            echo "$script: $tool not found; run: ci/install-deps.sh $groups" >&2
            exit 1
        }
    done
}

# The build settings: parallel jobs, Ninja when present, -Werror under CI.
jobs="${CMAKE_BUILD_PARALLEL_LEVEL:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"
generator=()
if command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
fi
werror=()
if [[ -n "${CI:-}" ]]; then
    werror=(-DGB_WERROR=ON)
fi

# gb_skips JUNIT: names every test a ctest run skipped (its JUnit file,
# from ctest --output-junit), each with the reason it printed ("skipped:
# <why>", GBT_SKIP_IF), and counts them. A skip that gave no reason is a
# defect: it is listed as such and the function fails, so that no check
# vanishes unexplained.
gb_skips() {
    [[ -f "$1" ]] || { echo "gb_skips: no JUnit file $1" >&2; return 1; }
    awk '
        function text(s) { gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "\047", s); gsub(/&amp;/, "\\&", s); return s }
        /<testcase / { name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name); skip = ($0 ~ /status="notrun"/); why = "" }
        skip && why == "" && /skipped: / { why = $0; sub(/.*skipped: /, "", why); sub(/<\/system-out>.*/, "", why) }
        /<\/testcase>/ && skip {
            n++
            if (why == "") { why = "(no reason given: a defect)"; bad++ }
            printf "  %-72s %s\n", text(name), text(why)
        }
        END {
            if (bad) printf "skipped: %d, of which %d gave no reason\n", n, bad
            else printf "skipped: %d, each with the reason it gave\n", n
            exit bad > 0
        }
    ' "$1"
}
