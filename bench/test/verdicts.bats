#!/usr/bin/env bats
# verdicts.bats -- the scripts that read the benchmarks' verdicts: the
# README's table (ci/bench_readme.sh --print) shows each target's verdict
# as the run reached it, a missing one as "not measured", and never judges a
# median again; ci/bench_flips.sh fails on a verdict met in one run and
# missed in the other and on nothing else. On small fixture files written
# here. ctest runs it as bench.scripts; by hand: bats bench/test/verdicts.bats.
bats_require_minimum_version 1.8.0

setup() {
    CI="$(cd "$BATS_TEST_DIRNAME/../../ci" && pwd)"
    T="$BATS_TEST_TMPDIR"
}

# tsv FILE LINE...: a bench.tsv of the given lines, words separated by
# spaces here and by tabs in the file.
tsv() {
    local f="$1"
    shift
    printf '%s\n' "$@" | tr ' ' '\t' >"$f"
}

# The row of the README's table whose first cell starts with $1.
row() {
    grep -F "| $1" <<<"$output" | head -n 1
}

@test "bench_readme.sh --print: met, missed and undecided verdicts with their intervals, a missing one not measured" {
    tsv "$T/bench.tsv" \
        "coro_roundtrip_ns 14.1 ns" \
        "fcontext_roundtrip_ns 11.7 ns" \
        "swapcontext_roundtrip_ns 2217 ns" \
        "coro_vs_fcontext_ratio 1.5 ratio" \
        "verdict coro_vs_fcontext met 0.97 0.93 1.01" \
        "verdict coro_vs_swapcontext missed 0.05 0.04 0.06" \
        "small_x_glibc_pass1 0.5 ratio" \
        "verdict small_glibc_pass1 undecided 1.02 0.96 1.08" \
        "verdict small_mimalloc_pass2 undecided 1.1 nan nan" \
        "verdict churn_resident met 7 7 7" \
        "verdict churn_size_64k undecided 1.02 0.96 1.08" \
        "verdict churn_sizes undecided 9 9 10"
    run "$CI/bench_readme.sh" --print "$T/bench.tsv"
    echo "$output"
    [ "$status" -eq 0 ]
    # The header says how verdicts are made, and at what confidence.
    grep -q "^Each target is a verdict .*distribution-free confidence interval (sign test, at least 95% over all of the verdict's looks)" <<<"$output"
    # The verdict as the run reached it: the median figure (1.5) would be
    # a miss, the verdict is met, and met is shown.
    [[ "$(row "resume+yield round trip against \`fcontext\`")" == *"| ≤ 1.2× fcontext | met (0.97×, 0.93–1.01) |" ]] || false
    [[ "$(row "resume+yield round trip against \`swapcontext\`")" == *"| missed (0.050×, 0.040–0.060) |" ]] || false
    [[ "$(row "small objects, ")" == *"| ≥ 1.0× glibc | undecided (1.02×, 0.96–1.08) |" ]] || false
    [[ "$(row "small objects on reuse")" == *"| undecided (1.10×, too few rounds for an interval) |" ]] || false
    # No verdict line: not measured, whatever the figures say.
    [[ "$(row "small objects, fresh process (pass 1): against the fresh-memory floor")" == *"| ≤ 1.5× the floor | not measured |" ]] || false
    [[ "$(row "small objects against obstack")" == *"| pass 1 not measured; pass 2 not measured |" ]] || false
    [[ "$(row "churn: resident right after")" == *"| at most 64 MiB | met (7.00 MiB) |" ]] || false
    [[ "$(row "churn by region size")" == *"| undecided (9 of 11 sizes met, 1 missed, 1 undecided); resident not measured |" ]] || false
    # The per-size table's verdict row: one cell per size.
    [[ "$(row "target ≤ 1.0×")" == *"| undecided (1.02×, 0.96–1.08) | not measured |"* ]] || false
}

@test "bench_readme.sh --print: the handoff rows show each contender's pass and the verdict against the copy" {
    tsv "$T/bench.tsv" \
        "handoff_1mib_handoff_pass_ns 594097 ns" \
        "handoff_1mib_copy_pass_ns 537996 ns" \
        "handoff_1mib_handoff_resident_mib 1.5 MiB" \
        "verdict handoff_vs_copy_1mib undecided 0.93 0.84 1.32" \
        "verdict handoff_vs_copy_16mib met 0.5 0.4 0.6"
    run "$CI/bench_readme.sh" --print "$T/bench.tsv"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$(row "a list of 1 MiB handed")" == *"handoff 594 µs; copied into the consumer's region 538 µs; glibc not measured"* ]] || false
    [[ "$(row "a list of 1 MiB handed")" == *"resident after the last pass: handoff 1.5 MiB, copy not measured"* ]] || false
    [[ "$(row "a list of 1 MiB handed")" == *"| ≤ 1.0× the copy | undecided (0.93×, 0.84–1.32) |" ]] || false
    [[ "$(row "a list of 16 MiB handed")" == *"| met (0.50×, 0.40–0.60) |" ]] || false
}

@test "bench_readme.sh --print: a run with no verdicts shows every target not measured" {
    tsv "$T/bench.tsv" "coro_vs_fcontext_ratio 0.9 ratio" "small_x_glibc_pass1 3.5 ratio"
    run "$CI/bench_readme.sh" --print "$T/bench.tsv"
    [ "$status" -eq 0 ]
    [[ "$(row "resume+yield round trip against \`fcontext\`")" == *"| not measured |" ]] || false
    [[ "$(row "small objects, ")" == *"| not measured |" ]] || false
    [ "$(grep -cE "\| (met|missed)" <<<"$output")" -eq 0 ]
}

@test "bench_readme.sh --print: the policies row shows each policy forced and the share in huge pages the default chose" {
    tsv "$T/bench.tsv" \
        "small_region-map_pass1_ns 157 ns" \
        "small_region-4k_pass1_ns 205 ns" \
        "small_region-huge_pass1_ns 161 ns" \
        "small_region-nopop_pass1_ns 60.8 ns" \
        "small_region_map_huge_share 0.268 ratio"
    run "$CI/bench_readme.sh" --print "$T/bench.tsv"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$(row "small objects, fresh process (pass 1): each policy forced")" == *"| default 157 ns, 4 KiB pages (\`GB_HUGE=off\`) 205 ns, huge pages (\`GB_HUGE=on\`) 161 ns, not populated (\`GB_POPULATE=off\`) 60.8 ns; the default held 27% of its block bytes in huge pages |"* ]] || false
}

@test "bench_flips.sh: a verdict met in one run and missed in the other is a flip: exit 1, the target named" {
    tsv "$T/a.tsv" "coro_roundtrip_ns 14.1 ns" \
        "verdict coro_vs_fcontext met 0.97 0.93 1.01" \
        "verdict small_glibc_pass1 met 3.5 3.1 3.9"
    tsv "$T/b.tsv" "coro_roundtrip_ns 15.0 ns" \
        "verdict coro_vs_fcontext met 0.99 0.95 1.02" \
        "verdict small_glibc_pass1 missed 0.59 0.5 0.7"
    run "$CI/bench_flips.sh" "$T/a.tsv" "$T/b.tsv"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(grep -c '^flipped: ' <<<"$output")" -eq 1 ]
    grep -q "^flipped: small_glibc_pass1: met (3.5, 3.1-3.9) in $T/a.tsv, missed (0.59, 0.5-0.7) in $T/b.tsv$" <<<"$output"
    grep -q "2 verdicts: 1 flipped, 0 decided in one run only, 0 in one run only, 1 alike$" <<<"$output"
    # Either way round.
    run "$CI/bench_flips.sh" "$T/b.tsv" "$T/a.tsv"
    [ "$status" -eq 1 ]
    grep -q "^flipped: small_glibc_pass1: missed" <<<"$output"
}

@test "bench_flips.sh: decided in one run and undecided or missing in the other is no flip: exit 0, listed" {
    tsv "$T/a.tsv" \
        "verdict coro_vs_fcontext met 0.97 0.93 1.01" \
        "verdict small_floor_pass1 missed 1.7 1.6 1.8" \
        "verdict churn_size_64k met 0.9 0.8 0.95"
    tsv "$T/b.tsv" \
        "verdict coro_vs_fcontext undecided 1.1 0.95 1.25" \
        "verdict small_floor_pass1 undecided 1.5 1.4 1.6" \
        "verdict small_mimalloc_pass2 met 1.6 1.4 1.8"
    run "$CI/bench_flips.sh" "$T/a.tsv" "$T/b.tsv"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^flipped' <<<"$output")" -eq 0 ]
    grep -q "^decided in one run only: coro_vs_fcontext: met (0.97, 0.93-1.01) in $T/a.tsv, undecided" <<<"$output"
    grep -q "^decided in one run only: small_floor_pass1: missed" <<<"$output"
    grep -q "^in one run only: churn_size_64k: met (0.9, 0.8-0.95) in $T/a.tsv, no verdict in $T/b.tsv$" <<<"$output"
    grep -q "^in one run only: small_mimalloc_pass2: met (1.6, 1.4-1.8) in $T/b.tsv, no verdict in $T/a.tsv$" <<<"$output"
    grep -q "4 verdicts: 0 flipped, 2 decided in one run only, 2 in one run only, 0 alike$" <<<"$output"
}

@test "bench_flips.sh: the same run twice is no flip; a file without verdicts is an error" {
    tsv "$T/a.tsv" "verdict coro_vs_fcontext missed 1.3 1.25 1.35"
    run "$CI/bench_flips.sh" "$T/a.tsv" "$T/a.tsv"
    [ "$status" -eq 0 ]
    grep -q "1 verdicts: 0 flipped, 0 decided in one run only, 0 in one run only, 1 alike$" <<<"$output"
    tsv "$T/old.tsv" "coro_vs_fcontext_ratio 1.3 ratio"
    run "$CI/bench_flips.sh" "$T/a.tsv" "$T/old.tsv"
    [ "$status" -eq 2 ]
    [[ "$output" == *"holds no verdict lines"* ]] || false
    run "$CI/bench_flips.sh" "$T/a.tsv"
    [ "$status" -eq 2 ]
}
