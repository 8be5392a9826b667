#!/usr/bin/env bash
# charts.sh -- PNG and SVG charts of the gates' resident sizes and the benchmarks' ratios, with gnuplot.
#
# Numbers in a table say whether a target is met; a picture says how a
# program behaves. The kill matrix records each gate program's resident size
# as often as ps answers, and at every checkpoint
# (build/gate/series/<gate>__<build>.tsv, written by the gate kit): the
# clean build's sawtooth back to baseline against each poison's staircase
# is the project's claim in one image; the kit draws those charts itself
# (gbgate charts, gates/kit/chart.gp), and this script only asks it to.
# ci/bench.sh records one line per figure (build/bench/bench.tsv,
# "<name>\t<value>\t<unit>"); the charts draw the ratios against their
# targets, and the churn's cost per MiB against the physics floors (what
# the kernel charges for fresh pages, at best huge ones, for fresh pages
# populated in one call, and for writing pages already resident). The benchmarks' gnuplot scripts live in ci/charts/; this script
# only gathers their data.
#
# Usage: ci/charts.sh [gate|bench|all]   (default all)
#   gate   one chart per gate with series: build/gate/charts/<gate>.{png,svg}
#   bench  the benchmark charts: build/bench/charts/*.{png,svg}
#   all    both, skipping (with a note) whichever has no input yet
# Environment: GATE_SERIES_DIR, GATE_CHARTS_DIR, BENCH_TSV, BENCH_CHARTS_DIR
# override the folders and the file above. Needs gnuplot
# (ci/install-deps.sh gate).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

series_dir="${GATE_SERIES_DIR:-build/gate/series}"
gate_out="${GATE_CHARTS_DIR:-build/gate/charts}"
bench_tsv="${BENCH_TSV:-build/bench/bench.tsv}"
bench_out="${BENCH_CHARTS_DIR:-build/bench/charts}"
gp="$root/ci/charts"

log() { echo "charts.sh: $*"; }
die() { echo "charts.sh: error: $*" >&2; exit 1; }

what="${1:-all}"
case "$what" in
    gate|bench|all) ;;
    -h|--help) sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown chart set '$what' (gate, bench or all)" ;;
esac
command -v gnuplot >/dev/null 2>&1 || die "gnuplot not found; run: ci/install-deps.sh gate (Linux) or brew install gnuplot (macOS)"

# plot <script> <output without extension> <gnuplot assignments...>: writes
# the PNG and the SVG.
plot() {
    local script="$1" base="$2" fmt
    shift 2
    for fmt in png svg; do
        gnuplot -e "$(printf '%s; ' "$@") fmt='${fmt}'; out='${base}.${fmt}'" "$gp/$script"
    done
    log "wrote ${base}.png and .svg"
}

# ------------------------------------------------------------------ gates

# One chart per gate with series, its builds in the order of the columns of
# gates/expected.tsv (clean first, the reference every panel is drawn over).
gate_charts() {
    local builds
    builds="$(awk -F'\t' '!/^#/ && $1 == "gate" { for (i = 3; i <= NF; i++) printf "%s ", $i; exit }' gates/expected.tsv)"
    gates/kit/gbgate charts --series "$series_dir" --out "$gate_out" --builds "$builds" | sed 's/^gbgate/charts.sh/'
    compgen -G "$gate_out/*.png" >/dev/null
}

# ------------------------------------------------------------------ bench

# value <name>: the figure, or an empty string when the run has none.
value() {
    awk -F'\t' -v n="$1" '$1 == n { print $2; exit }' "$bench_tsv"
}

# Rows of "<label> <value>..." for bars.gp/lines.gp; a row whose figures are
# all missing is left out, a missing one among others is written as NaN.
row() {
    local label="$1" v out="" any=0
    shift
    for name in "$@"; do
        v="$(value "$name")"
        if [[ -n "$v" ]]; then any=1; else v=NaN; fi
        out+=" $v"
    done
    ((any)) && echo "$label$out"
    return 0
}

bench_charts() {
    local tmp p v k
    mkdir -p "$bench_out"
    tmp="$(mktemp -d)"
    # shellcheck disable=SC2064  # expand now: tmp is local
    trap "rm -rf '$tmp'" RETURN

    for p in region-heap glibc jemalloc mimalloc talloc apr obstack; do
        row "$p" "small_x_${p}_pass1" "small_x_${p}_pass2"
    done >"$tmp/small.dat"
    if [[ -s "$tmp/small.dat" ]]; then
        plot bars.gp "$bench_out/small-objects" "data='$tmp/small.dat'" ncols=2 \
            "names='pass 1 (fresh process)|pass 2 (same process)'" \
            "title='Small objects: peer time / region time (above 1: the region is faster)'" \
            "ylabel='x region (map source)'" logy=0 "lines='1:parity: the target against glibc (pass 1) and mimalloc (pass 2)'"
    fi

    for p in region-map region-heap glibc jemalloc mimalloc talloc apr obstack; do
        row "$p" "resident_${p}_after_mib" "resident_${p}_purged_mib"
    done | awk '{ for (i = 2; i <= NF; i++) if ($i != "NaN" && $i < 0.05) $i = 0.05; print }' >"$tmp/resident.dat"
    if [[ -s "$tmp/resident.dat" ]]; then
        plot bars.gp "$bench_out/resident-after-free" "data='$tmp/resident.dat'" ncols=2 \
            "names='right after free|after its purge call'" \
            "title='Resident size after 10M small objects are freed, read from outside'" \
            "ylabel='MiB above baseline (log)'" logy=1 "lines=''"
    fi

    for p in map heap malloc-back malloc-back-lib; do
        local a b
        a="churn_ratio_${p}_vs_malloc-back"
        b="churn_ratio_${p}_vs_malloc-back-lib"
        if [[ "$p" == malloc-back ]]; then
            echo "$p 1 $(value "$b")"
        elif [[ "$p" == malloc-back-lib ]]; then
            echo "$p $(value "$a") 1"
        else
            row "$p" "$a" "$b"
        fi
    done | awk 'NF == 3 && $2 != "" && $3 != ""' >"$tmp/churn.dat"
    if [[ -s "$tmp/churn.dat" ]]; then
        plot bars.gp "$bench_out/churn" "data='$tmp/churn.dat'" ncols=2 \
            "names='/ malloc-back (program build)|/ malloc-back (library build)'" \
            "title='Churn: 10,000 regions of 1-8 MB, time over malloc-back'" \
            "ylabel='time ratio'" logy=0 "lines='1.2:target 1.2x|1:parity'"
    fi

    local size_tics='"64 KB" 64, "256 KB" 256, "1 MB" 1024, "4 MB" 4096, "16 MB" 16384, "64 MB" 65536'
    for k in 64 128 256 512 1024 2048 4096 8192 16384 32768 65536; do
        row "$k" "curve_map_${k}k_us_per_mib" "curve_heap_${k}k_us_per_mib" \
            "curve_malloc-back_${k}k_us_per_mib" "curve_malloc-back-lib_${k}k_us_per_mib"
    done >"$tmp/curve.dat"
    # The two floors a region that gives its memory back is measured
    # against: mapping, writing and unmapping with huge pages, and writing
    # memory already resident (per MiB, from the 8 MiB figures).
    floors=""
    v="$(value physics_floor_huge_us_per_mib)"
    [[ -n "$v" ]] && floors+="$v:floor: mapped with huge pages, written, unmapped"
    v="$(value physics_floor_resident_us_per_mib)"
    [[ -n "$v" ]] && floors+="${floors:+|}$v:floor: written, already resident"
    # The populate floor: fresh memory made resident without a fault per
    # page (the cheapest fresh way the run measured, else
    # MADV_POPULATE_WRITE in huge pages, else in 4 KiB pages).
    for k in physics_floor_fresh_us_per_mib physics_populate_write_huge_us_per_mib \
        physics_populate_write_4k_us_per_mib; do
        v="$(value "$k")"
        if [[ -n "$v" ]]; then
            floors+="${floors:+|}$v:floor: fresh memory populated, written"
            break
        fi
    done
    if [[ -s "$tmp/curve.dat" ]]; then
        plot lines.gp "$bench_out/churn-cost-by-size" "data='$tmp/curve.dat'" ncols=4 \
            "names='map|heap|malloc-back|malloc-back (library)'" \
            "title='Churn: cost against region size, and the physics floors'" "xlabel='region size'" \
            "ylabel='µs per MiB allocated and written (log)'" logy=1 "lines='$floors'" "xtics='$size_tics'"
    fi
    for k in 64 128 256 512 1024 2048 4096 8192 16384 32768 65536; do
        row "$k" "curve_ratio_map_vs_malloc-back_${k}k" "curve_ratio_map_vs_malloc-back-lib_${k}k" \
            "curve_ratio_heap_vs_malloc-back_${k}k"
    done >"$tmp/curve-ratio.dat"
    if [[ -s "$tmp/curve-ratio.dat" ]]; then
        plot lines.gp "$bench_out/churn-ratio-by-size" "data='$tmp/curve-ratio.dat'" ncols=3 \
            "names='map / malloc-back|map / malloc-back (library)|heap / malloc-back'" \
            "title='Churn: time over malloc-back against region size'" "xlabel='region size'" \
            "ylabel='time ratio (log)'" logy=1 "lines='1:target per size: at or below malloc-back (library)'" \
            "xtics='$size_tics'"
    fi

    {
        row '"giveback round trip"' coro_roundtrip_ns
        row '"swapcontext round trip"' swapcontext_roundtrip_ns
        row '"fcontext round trip"' fcontext_roundtrip_ns
        row '"giveback create+free"' coro_create_free_ns
        row '"ucontext, reused stack"' ucontext_reused_create_free_ns
        row '"ucontext, malloc stack"' ucontext_create_free_ns
        row '"fcontext, reused stack"' fcontext_reused_create_free_ns
        row '"fcontext, malloc stack"' fcontext_create_free_ns
    } >"$tmp/coro.dat"
    if [[ -s "$tmp/coro.dat" ]]; then
        plot bars.gp "$bench_out/coroutines" "data='$tmp/coro.dat'" ncols=1 "names='ns'" \
            "title='Coroutines: resume+yield round trip and create+free'" \
            "ylabel='ns (log)'" logy=1 "lines=''"
    fi

    for k in 10 100 1000 10000; do
        row "$k" "leave_ns_s${k}_r10" "leave_ns_s10_r${k}"
    done >"$tmp/pin.dat"
    if [[ -s "$tmp/pin.dat" ]]; then
        plot lines.gp "$bench_out/pin-check" "data='$tmp/pin.dat'" ncols=2 \
            "names='suspended coroutines (10 retired regions)|retired regions (10 suspended coroutines)'" \
            "title='Pin check: time per region leave'" "xlabel='count'" "ylabel='ns per leave (log)'" \
            logy=1 logx=10 "lines=''"
    fi
}

if [[ "$what" == gate || "$what" == all ]]; then
    if [[ -d "$series_dir" ]] && gate_charts; then
        :
    elif [[ "$what" == gate ]]; then
        die "no resident-size series in $series_dir (ci/gate.sh records them)"
    else
        log "no gate series in $series_dir yet: gate charts skipped"
    fi
fi
if [[ "$what" == bench || "$what" == all ]]; then
    if [[ -s "$bench_tsv" ]]; then
        bench_charts
    elif [[ "$what" == bench ]]; then
        die "no $bench_tsv (ci/bench.sh writes it)"
    else
        log "no $bench_tsv yet: benchmark charts skipped"
    fi
fi
