#!/usr/bin/env bash
# bench.sh -- build the benchmarks at -O2 and run every one: tables for people, one line per figure for machines, charts.
#
# Users choose a region runtime for speed and for memory that leaves; they
# compare it with what they already have. Every figure here is measured in
# this one run beside its peers and quoted as a ratio, because the machines
# are noisy: a figure from another day is no baseline. The benchmarks print
# their tables and lines ("bench <name> <value> <unit>") and fail on no
# number; this script fails only when something cannot be built or run.
# Each target is a verdict (bench/verdict.h): the median of paired rounds'
# ratios and its distribution-free interval, met or missed only when the
# whole interval is on one side of the bound, else undecided; the
# benchmarks add rounds while a target is undecided, up to a cap, judging
# it at looks whose intervals share 95% among them (Bonferroni), and
# print "verdict <name> <met|missed|undecided> <ratio> <lo> <hi>".
#
# Runs, in order: coro_bench (coroutines against swapcontext and Boost.Context's
# fcontext, and the pin check's leave cost), small_bench (10M small objects
# against glibc, jemalloc, mimalloc, talloc, APR, obstack, and each one's
# resident size after free), churn_bench (10,000 regions of 1-8 MB per block
# source against the malloc-back poison, and the cost against region size),
# small_regions_bench (many small regions left), lookup_bench (gb_region_of
# per lookup), handoff_bench (a list of 1 MiB and 16 MiB built on one thread
# and freed on another: a region handed over against a region copied and
# against glibc, jemalloc and mimalloc freeing on the other thread, and what
# each keeps resident), and gbprobe (what malloc keeps right after a free on
# this machine).
# Writes build/bench/: bench.txt (everything printed), bench.tsv (the
# figures, "<name>\t<value>\t<unit>", and the verdicts,
# "verdict\t<name>\t<state>\t<ratio>\t<lo>\t<hi>"), meta.tsv (when, which
# commit, which machine: "<key>\t<value>"), gbprobe.csv, and charts/
# (ci/charts.sh). Takes about 7 minutes on 2 cores (12 beside two busy
# loops), more when targets stay undecided up to their caps;
# --quick is a smoke run of under a minute with small counts (its figures
# are not comparable, many of its verdicts undecided, and it never touches
# the README). --readme then rewrites the README's performance table from
# this run's bench.tsv (ci/bench_readme.sh); make bench passes it.
# ci/bench_flips.sh compares two runs' verdicts.
#
# Usage: ci/bench.sh [--quick | --readme]
# Prerequisites: ci/install-deps.sh base gate bench (gnuplot is in gate on Linux;
# on macOS, brew install gnuplot for the charts).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

quick=0
readme=0
case "${1:-}" in
    "") ;;
    --quick) quick=1 ;;
    --readme) readme=1 ;;
    -h|--help) sed -n '/^# Usage:/,/^# Prerequisites:/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (usage: ci/bench.sh [--quick | --readme])" >&2; exit 2 ;;
esac

# shellcheck source=ci/lib.sh
source "$root/ci/lib.sh"
gb_require bench.sh "base gate bench" cmake cc

# The release build (RelWithDebInfo: -O2; the benchmarks add -O2 of their
# own), the same tree the gates use.
build=build/release
cmake --preset release ${generator[@]+"${generator[@]}"} ${werror[@]+"${werror[@]}"} >/dev/null
cmake --build --preset release --parallel "$jobs" --target benchmarks
bin="$root/$build/bench"

# gbprobe: from the project's build where tools/ is part of it, else built
# on its own (tools/CMakeLists.txt stands alone too).
if cmake --build --preset release --parallel "$jobs" --target gbprobe >/dev/null 2>&1; then
    gbprobe="$root/$build/tools/gbprobe"
else
    cmake -S tools -B build/tools ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release ${werror[@]+"${werror[@]}"} >/dev/null
    cmake --build build/tools --parallel "$jobs"
    gbprobe="$root/build/tools/gbprobe"
fi

out="$root/build/bench"
rm -rf "$out"
mkdir -p "$out"
txt="$out/bench.txt"
: >"$txt"

# run <title> <command...>: prints and records one benchmark's output.
run() {
    local title="$1" t0
    shift
    t0=$SECONDS
    {
        echo
        echo "================================================================ $title"
        echo "\$ ${*#"$root/"}"
        echo
    } | tee -a "$txt"
    "$@" 2>&1 | tee -a "$txt"
    echo "($title: $((SECONDS - t0)) s)" | tee -a "$txt"
}

# The run's particulars, once for people (bench.txt) and once for
# ci/bench_readme.sh (meta.tsv), which prints them above the table.
meta="$out/meta.tsv"
{
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
    printf 'commit\t%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo 'no git')"
    # The README's table is this script's own output, not a change that
    # could move a figure.
    printf 'changes\t%s\n' "$(git diff --quiet HEAD -- . ':(exclude)README.md' 2>/dev/null && echo none || echo local)"
    printf 'system\t%s\n' "$(uname -srm)"
    printf 'cores\t%s\n' "$(getconf _NPROCESSORS_ONLN)"
    printf 'memory\t%s\n' "$(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)"
    printf 'libc\t%s\n' "$(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
    if [[ -r /sys/kernel/mm/transparent_hugepage/enabled ]]; then
        printf 'thp\t%s\n' "$(cat /sys/kernel/mm/transparent_hugepage/enabled)"
    fi
    printf 'mode\t%s\n' "$( ((quick)) && echo quick || echo full)"
} >"$meta"
{
    m() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$meta"; }
    echo "bench.sh: $(m date), $(m commit)$([[ "$(m changes)" == local ]] && echo ' (with local changes)')"
    echo "bench.sh: $(m system), $(m cores) cores, $(m memory), $(m libc)"
    if [[ -n "$(m thp)" ]]; then
        echo "bench.sh: transparent huge pages: $(m thp)"
    fi
    if ((quick)); then
        echo "bench.sh: --quick: small counts, figures not comparable"
    fi
} | tee -a "$txt"

if ((quick)); then
    run "coroutines and pin check" "$bin/coro_bench" 200000
    if [[ -x "$bin/small_bench" ]]; then
        run "small objects" "$bin/small_bench" --objects 200000 --rounds 1 --cap 6
    fi
    run "churn" "$bin/churn_bench" --iterations 60 --segments 6 --churn-cap 6 --rounds 1 --cap 6 --point-mib 16
    run "small regions" "$bin/small_regions_bench" 5000
    run "pointer lookup" "$bin/lookup_bench" --quick
    run "handoff between threads" "$bin/handoff_bench" --quick
    run "gbprobe" "$gbprobe" --quick --rounds 2 --csv "$out/gbprobe.csv"
else
    run "coroutines and pin check" "$bin/coro_bench"
    if [[ -x "$bin/small_bench" ]]; then
        run "small objects" "$bin/small_bench"
    else
        echo "bench.sh: small_bench was not built (no obstack.h or malloc.h): skipped" | tee -a "$txt"
    fi
    run "churn" "$bin/churn_bench"
    run "small regions" "$bin/small_regions_bench"
    run "pointer lookup" "$bin/lookup_bench"
    run "handoff between threads" "$bin/handoff_bench"
    run "gbprobe" "$gbprobe" --csv "$out/gbprobe.csv"
fi

# The figures and the verdicts, in the order the benchmarks printed them.
awk '$1 == "bench" && NF == 4 { printf "%s\t%s\t%s\n", $2, $3, $4 }
     $1 == "verdict" && NF == 6 { printf "verdict\t%s\t%s\t%s\t%s\t%s\n", $2, $3, $4, $5, $6 }' "$txt" >"$out/bench.tsv"
echo
echo "bench.sh: $(grep -vc '^verdict' "$out/bench.tsv") figures in ${out#"$root/"}/bench.tsv; all output in ${txt#"$root/"}"
echo "bench.sh: verdicts: $(awk -F'\t' '$1 == "verdict" { n[$3]++; t++ }
    END { printf "%d (%d met, %d missed, %d undecided)", t, n["met"], n["missed"], n["undecided"] }' "$out/bench.tsv")"

if command -v gnuplot >/dev/null 2>&1; then
    BENCH_TSV="$out/bench.tsv" BENCH_CHARTS_DIR="$out/charts" ci/charts.sh bench
else
    echo "bench.sh: gnuplot not found: no charts (ci/install-deps.sh gate on Linux; brew install gnuplot on macOS)"
fi

if ((readme)); then
    ci/bench_readme.sh "$out/bench.tsv"
fi
