#!/usr/bin/env bash
# bench_readme.sh -- rewrite the README's performance table from one run's bench.tsv.
#
# A figure copied into a README by hand goes stale without anyone noticing,
# and a target marked "met" by hand is a claim nobody checked. So the table
# under "## Performance" is made by this script alone, from the lines of one
# ci/bench.sh run (build/bench/bench.tsv: figures, "<name>\t<value>\t<unit>",
# and verdicts, "verdict\t<name>\t<state>\t<ratio>\t<lo>\t<hi>") and its
# particulars (meta.tsv beside it: date, commit, machine): every figure is
# read from the file, every target shows the verdict the benchmark reached
# with its ratio and interval ("met (0.97×, 0.93–1.01)", "undecided (1.02×,
# 0.96–1.08)"), never judged again here from a median, and a figure or
# verdict the run lacks (a peer not built, a benchmark that failed) is
# printed as "not measured", never guessed. The table goes between the
# README's markers <!-- bench-table:begin --> and <!-- bench-table:end -->;
# the rest of the README is left as it is.
#
# Usage: ci/bench_readme.sh [--print] [TSV]   (TSV: build/bench/bench.tsv)
#   --print  write the table to stdout and leave README.md alone (any run)
# Without --print it refuses a --quick run's figures (not comparable).
# ci/bench.sh --readme (make bench) runs it after a full run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() { echo "bench_readme.sh: error: $*" >&2; exit 1; }

print=0
tsv=""
while (($#)); do
    case "$1" in
        --print) print=1 ;;
        -h|--help) sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option '$1' (usage: ci/bench_readme.sh [--print] [TSV])" ;;
        *) tsv="$1" ;;
    esac
    shift
done
# A TSV named on the command line is relative to where the caller is.
if [[ -n "$tsv" && "$tsv" != /* ]]; then
    tsv="$PWD/$tsv"
fi
cd "$root"
tsv="${tsv:-build/bench/bench.tsv}"
[[ -s "$tsv" ]] || die "no figures in $tsv: run ci/bench.sh (make bench) first"
meta="$(dirname "$tsv")/meta.tsv"
[[ -r "$meta" ]] || meta=/dev/null
readme="$root/README.md"
begin='<!-- bench-table:begin -->'
end='<!-- bench-table:end -->'

if ((!print)); then
    if [[ "$(awk -F'\t' '$1 == "mode" { print $2 }' "$meta")" == quick ]]; then
        die "$tsv is from ci/bench.sh --quick (small counts, not comparable): run ci/bench.sh --readme"
    fi
    awk -v begin="$begin" -v end="$end" '$0 == begin { b++; bl = NR } $0 == end { e++; el = NR }
        END { exit !(b == 1 && e == 1 && bl < el) }' "$readme" ||
        die "README.md needs exactly one line '$begin' and, after it, one '$end'"
fi

table="$(mktemp)"
# shellcheck disable=SC2064  # expand now: the file is this run's
trap "rm -f '$table' '$readme.tmp'" EXIT

# The table. val[] holds the run's figures by name; every function that
# prints one says "not measured" when it is absent.
awk -F'\t' -v meta="$meta" '
FILENAME == meta { info[$1] = $2; next }
$1 == "verdict" && NF >= 6 { vs[$2] = $3; vr[$2] = $4; vlo[$2] = $5; vhi[$2] = $6; next }
NF >= 2 { val[$1] = $2 }

function has(n) { return n in val }
# The value, 0 when absent: reading val[n] itself would create it.
function v(n) { return has(n) ? val[n] : 0 }
# A figure with three significant digits or so, as people read them.
function num(x,   a) {
    a = x < 0 ? -x : x
    if (a >= 100) return sprintf("%.0f", x)
    if (a >= 10) return sprintf("%.1f", x)
    if (a >= 0.1 || a == 0) return sprintf("%.2f", x)
    return sprintf("%.3f", x)
}
function count(x,   s, out) {
    s = sprintf("%.0f", x)
    for (out = ""; length(s) > 3; s = substr(s, 1, length(s) - 3)) out = "," substr(s, length(s) - 2) out
    return s out
}
function fig(n, unit) { return has(n) ? num(val[n]) unit : "not measured" }
function mib(n) { return has(n) ? sprintf("%.1f MiB", val[n]) : "not measured" }
function times(n) { return has(n) ? num(val[n]) "×" : "not measured" }
function isnum(x) { return x ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ }
# The verdict the run reached on target n, as its benchmark printed it:
# "met (0.97×, 0.93–1.01)", "undecided (1.02×, 0.96–1.08)"; a reading
# whose interval is itself, "met (7.0 MiB)"; "not measured" when the run
# has no verdict on it. unit follows the figures ("×", " MiB").
function verdict(n, unit,   s) {
    if (!(n in vs)) return "not measured"
    s = vs[n] " (" (isnum(vr[n]) ? num(vr[n]) unit : "no ratio")
    if (!isnum(vlo[n]) || !isnum(vhi[n])) return s ", too few rounds for an interval)"
    if (vlo[n] == vhi[n] && vlo[n] == vr[n]) return s ")"
    return s ", " num(vlo[n]) "–" num(vhi[n]) ")"
}
function size(kib) { return kib >= 1024 ? (kib / 1024) " MB" : kib " KB" }
function row(a, b, c, d) { printf "| %s | %s | %s | %s |\n", a, b, c, d }

END {
    # Where the figures come from.
    if ("date" in info) {
        line = "Measured by `ci/bench.sh` on " info["date"] ", commit `" info["commit"] "`"
        if (info["changes"] == "local") line = line " (with local changes)"
        line = line "; " info["system"] ", " info["cores"] " cores, " info["memory"] ", " info["libc"]
        if ("thp" in info) line = line ", transparent huge pages " info["thp"]
        if (info["mode"] == "quick") line = line "; a `--quick` run: small counts, figures not comparable"
        print line "."
    } else {
        print "Run particulars not recorded (no meta.tsv beside the figures)."
    }
    print ""
    print "Each target is a verdict on rounds that measure the two sides back to back, their order alternating:" \
        " the median of the rounds\047 ratios and its distribution-free confidence interval (sign test, at least 95%" \
        " over all of the verdict\047s looks), shown as verdict (median, interval); met when the whole interval is on" \
        " the target\047s side of its bound, missed when it is wholly on the other side, undecided when the bound is" \
        " inside it. A verdict is judged at looks, its minimum of rounds and then twice the rounds each time up to a" \
        " cap, while it stays undecided; the 5% it may be wrong is shared over its looks (Bonferroni), so every look" \
        " has a wider interval than one look alone would. Resident sizes are counters, judged on their reading."
    print ""
    print "| benchmark | figure | target | result |"
    print "|---|---|---|---|"

    # The physics: no runtime involved.
    row("page fault (no runtime)", fig("physics_fault_us", " µs") " to write one byte of a fresh page", "—", "—")
    f4 = has("physics_map8m_ms") ? num(val["physics_map8m_ms"]) " ms (" num(val["physics_map8m_ms"] * 1000 / 8) " µs/MiB)" : "not measured"
    fh = has("physics_map8m_thp_ms") ? num(val["physics_map8m_thp_ms"]) " ms" : "not measured"
    fr = has("physics_write8m_resident_ms") ? num(val["physics_write8m_resident_ms"]) " ms" : "not measured"
    row("8 MiB mapped, written, unmapped (no runtime)", \
        "4 KiB pages " f4 "; 2 MiB-aligned with `MADV_HUGEPAGE` " fh " (" fig("physics_floor_huge_us_per_mib", " µs/MiB") \
        ": the huge-page floor); written when already resident " fr " (" fig("physics_floor_resident_us_per_mib", " µs/MiB") \
        ": the resident floor)", "—", "—")
    # The floors of fresh memory: what it costs to have 8 MiB resident and
    # written, per MiB, by each way the kernel offers; the cheapest fresh one
    # is what small objects are judged against.
    nf = split("physics_touch_4k_us_per_mib physics_touch_huge_us_per_mib physics_populate_write_4k_us_per_mib physics_populate_write_huge_us_per_mib physics_map_populate_us_per_mib physics_memset_resident_us_per_mib physics_floor_fresh_us_per_mib", fl, " ")
    split("touched, 4 KiB pages|touched, huge pages|`MADV_POPULATE_WRITE`, 4 KiB pages|`MADV_POPULATE_WRITE`, huge pages|`MAP_POPULATE`|memset of resident memory (the zeroing floor)|the cheapest fresh", fs, "|")
    line = ""; any = 0
    for (i = 1; i <= nf; i++) {
        line = line (i > 1 ? "; " : "") fs[i] " " fig(fl[i], " µs/MiB")
        any += has(fl[i])
    }
    row("floors per MiB of fresh memory made resident and written (no runtime)", any ? line : "not measured", "—", "—")

    # Coroutines.
    rt = fig("coro_roundtrip_ns", " ns") "; Boost.Context `fcontext` " fig("fcontext_roundtrip_ns", " ns") \
        "; `swapcontext` " fig("swapcontext_roundtrip_ns", " ns")
    row("resume+yield round trip against `fcontext`", rt, "≤ 1.2× fcontext", verdict("coro_vs_fcontext", "×"))
    row("resume+yield round trip against `swapcontext`", rt, "≤ 0.03 of swapcontext", \
        verdict("coro_vs_swapcontext", "×"))
    row("resume+yield, what it is made of", "bare switch " fig("switch_bare_roundtrip_ns", " ns") \
        "; + handle check " fig("switch_handle_roundtrip_ns", " ns") "; + freeze/thaw " fig("switch_freeze_roundtrip_ns", " ns") \
        "; + region stack " fig("switch_rstack_roundtrip_ns", " ns") "; the whole " fig("coro_roundtrip_ns", " ns"), "—", "—")
    row("create, run, free a coroutine", fig("coro_create_free_ns", " ns") "; " times("coro_create_vs_ucontext_ratio") \
        " the time of ucontext with a malloc\047d stack", "—", "—")

    # Small objects: each "x" figure is the time of a peer over the time of the region.
    objs = has("small_objects_count") ? count(val["small_objects_count"]) " objects" : "objects"
    pass1 = "region " fig("small_region-map_pass1_ns", " ns") " per object, glibc malloc+free " fig("small_glibc_pass1_ns", " ns")
    row("small objects, " objs " of 16–256 B, fresh process (pass 1): against glibc (glibc time / region time)", \
        pass1, "≥ 1.0× glibc", verdict("small_glibc_pass1", "×"))
    row("small objects, fresh process (pass 1): against the fresh-memory floor for the same bytes", \
        "region " fig("small_region-map_pass1_ns", " ns") " per object, floor " fig("small_floor_pass1_ns", " ns"), \
        "≤ 1.5× the floor", verdict("small_floor_pass1", "×"))
    a = "small_region_map_huge_share"
    row("small objects, fresh process (pass 1): each policy forced, and what the default chose", \
        "default " fig("small_region-map_pass1_ns", " ns") ", 4 KiB pages (`GB_HUGE=off`) " fig("small_region-4k_pass1_ns", " ns") \
        ", huge pages (`GB_HUGE=on`) " fig("small_region-huge_pass1_ns", " ns") ", not populated (`GB_POPULATE=off`) " \
        fig("small_region-nopop_pass1_ns", " ns") "; the default held " (has(a) ? sprintf("%.0f%%", 100 * val[a]) : "not measured") \
        " of its block bytes in huge pages", "—", "—")
    row("small objects, the same process again (pass 2)", \
        "region " fig("small_region-map_pass2_ns", " ns") ", glibc " fig("small_glibc_pass2_ns", " ns") ": " \
        times("small_x_glibc_pass2") " glibc", "—", "—")
    row("small objects on reuse (pass 2) against mimalloc (mimalloc time / region time)", \
        "region " fig("small_region-map_pass2_ns", " ns") ", mimalloc " fig("small_mimalloc_pass2_ns", " ns"), \
        "at or ahead (≥ 1.0×)", verdict("small_mimalloc_pass2", "×"))
    a = "small_x_obstack_pass1"; b = "small_x_obstack_pass2"
    row("small objects against obstack", "pass 1 " times(a) ", pass 2 " times(b), "not behind (≥ 1×) in both passes", \
        "pass 1 " verdict("small_obstack_pass1", "×") "; pass 2 " verdict("small_obstack_pass2", "×"))
    line = ""
    split("talloc apr jemalloc mimalloc", peers, " ")
    split("talloc|APR|jemalloc|mimalloc", shown, "|")
    for (i = 1; i <= 4; i++)
        line = line (i > 1 ? "; " : "") shown[i] " " times("small_x_" peers[i] "_pass1") " / " times("small_x_" peers[i] "_pass2")
    row("small objects against the other peers (pass 1 / pass 2)", line, "—", "—")
    line = ""
    split("region-map region-4k region-heap glibc jemalloc mimalloc talloc apr obstack", peers, " ")
    split("region (map)|region (map, 4 KiB pages)|region (heap)|glibc|jemalloc|mimalloc|talloc|APR|obstack", shown, "|")
    for (i = 1; i <= 9; i++) {
        line = line (i > 1 ? "; " : "") shown[i] " " mib("resident_" peers[i] "_after_mib")
        if (has("resident_" peers[i] "_after_mib") && has("resident_" peers[i] "_purged_mib") && peers[i] !~ /^region/)
            line = line " (" sprintf("%.1f", val["resident_" peers[i] "_purged_mib"]) " after its purge call)"
    }
    row("resident right after the small objects are freed", line, "—", "—")

    # Handing a region to another thread (handoff_bench): a list built on a
    # producer thread, walked and freed on a consumer: a pass of each.
    split("handoff copy glibc jemalloc mimalloc", peers, " ")
    split("handoff|copied into the consumer\047s region|glibc|jemalloc|mimalloc", shown, "|")
    nsz = split("1mib 16mib", hsz, " ")
    split("1 MiB|16 MiB", hshown, "|")
    for (j = 1; j <= nsz; j++) {
        line = ""; rest = ""
        for (i = 1; i <= 5; i++) {
            n = "handoff_" hsz[j] "_" peers[i] "_pass_ns"
            line = line (i > 1 ? "; " : "") shown[i] " " (has(n) ? num(val[n] / 1000) " µs" : "not measured")
            rest = rest (i > 1 ? ", " : "") peers[i] " " mib("handoff_" hsz[j] "_" peers[i] "_resident_mib")
        }
        row("a list of " hshown[j] " handed from a producer thread to a consumer, a pass (handoff: detach, attach, leave; the mallocs free each node on the consumer)", \
            line "; resident after the last pass: " rest, "≤ 1.0× the copy", verdict("handoff_vs_copy_" hsz[j], "×"))
    }

    # The whole churn.
    regs = has("churn_regions_count") ? count(val["churn_regions_count"]) " regions" : "regions"
    split("malloc-back|malloc-back-lib", base, "|")
    split("program build|library build: glibc reusing its heap", what, "|")
    split("churn_vs_malloc_back|churn_vs_malloc_back_lib", judged, "|")
    for (i = 1; i <= 2; i++) {
        row("churn, " regs " of 1–8 MB: map against `" base[i] "` (" what[i] ")", \
            "map " fig("churn_map_s", " s") ", " base[i] " " fig("churn_" base[i] "_s", " s") " (" \
            times("churn_ratio_map_vs_" base[i]) "); each segment a round", "within 1.2×", verdict(judged[i], "×"))
    }
    hv = has("churn_heap_s") && has("churn_map_s") && val["churn_map_s"] > 0 ? num(val["churn_heap_s"] / val["churn_map_s"]) "×" : "not measured"
    row("churn: heap source against map", "heap " fig("churn_heap_s", " s") ": " hv " map", "—", "—")
    n = "churn_map_resident_mib"
    row("churn: resident right after the last leave", "map " mib(n) "; malloc-back-lib " mib("churn_malloc-back-lib_resident_mib"), \
        "at most 64 MiB", verdict("churn_resident", " MiB"))

    # The churn per region size: a verdict per size, and one on the curve as a
    # whole (churn_sizes: the sizes met lie between its lo and hi, judged
    # against 10 by the benchmark).
    nk = split("64 128 256 512 1024 2048 4096 8192 16384 32768 65536", kib, " ")
    bound = has("churn_cache_bound_mib") ? val["churn_cache_bound_mib"] : -1
    slack = has("churn_resident_slack_mib") ? val["churn_resident_slack_mib"] : 0
    measured = 0; worst = 0; worstk = 0
    for (i = 1; i <= nk; i++) {
        r = "curve_ratio_map_vs_malloc-back-lib_" kib[i] "k"
        ok[i] = verdict("churn_size_" kib[i] "k", "×")
        if (!has(r)) continue
        measured++
        if (val[r] > worst) { worst = val[r]; worstk = kib[i] }
    }
    spm = 0; spb = 0
    for (i = 1; i <= nk; i++) {
        if (v("curve_map_" kib[i] "k_spread") > spm) spm = val["curve_map_" kib[i] "k_spread"]
        if (v("curve_malloc-back-lib_" kib[i] "k_spread") > spb) spb = val["curve_malloc-back-lib_" kib[i] "k_spread"]
    }
    n = "churn_sizes"
    if (n in vs && isnum(vlo[n]) && isnum(vhi[n]))
        sizes = vs[n] " (" vlo[n] " of " nk " sizes met, " (nk - vhi[n]) " missed, " (vhi[n] - vlo[n]) " undecided)"
    else
        sizes = "not measured"
    line = measured ? "slowest against it " num(worst) "× at " size(worstk) " (the medians\047 ratio)" \
        (spm && spb ? "; rounds spread up to " num(spm) "× (map), " num(spb) "× (malloc-back-lib)" : "") " (table below)" : "not measured"
    row("churn by region size, 64 KB–64 MB: map against `malloc-back-lib`", line, \
        "at or below (≤ 1.0×) at 10 or more of the 11 sizes; resident after leave ≤ " \
        (bound >= 0 ? sprintf("%g", bound) " MiB (the cache bound)" (slack ? " and " sprintf("%g", slack * 1024) " KiB of the child\047s own" : "") : "the cache bound") \
        " at every size", sizes "; resident " verdict("churn_sizes_resident", " MiB"))
    a = "curve_map_8192k_us_per_mib"; n = "curve_ratio_map_vs_floor-huge_8192k"
    row("8 MiB regions against the huge-page floor", "map " fig(a, " µs/MiB") ", floor " fig("physics_floor_huge_us_per_mib", " µs/MiB"), \
        "the ratio, reported", has(n) ? num(val[n]) "× the floor" : "not measured")

    # Small regions.
    regs = has("small_regions_count") ? count(val["small_regions_count"]) : "many"
    row(regs " small regions of 3,000 B, all left", "slabs: " mib("small_regions_resident_slab") " resident after, " \
        fig("small_regions_ns_slab", " ns") " per region; malloc: " mib("small_regions_resident_malloc") ", " \
        fig("small_regions_ns_malloc", " ns"), "—", "—")

    # The per-size table.
    print ""
    per = has("curve_mib_per_size") ? sprintf("%g", val["curve_mib_per_size"]) " MiB of regions per size" : "regions of each size"
    if (has("curve_peer_mib_per_size")) per = per " for map and malloc-back-lib (" sprintf("%g", val["curve_peer_mib_per_size"]) " MiB for the sources that fault every page)"
    print "Churn by region size (" per ", median of at least " (has("curve_rounds") ? val["curve_rounds"] : "some") \
        " rounds, more for a size while its verdict was undecided; µs per MiB allocated and written; spread: the slowest round over the fastest; range: the lowest and highest" \
        " of the rounds\047 map / malloc-back-lib, each round running both in turn; resident in MiB above the baseline right after the last leave):"
    print ""
    line = "| region |"; sep = "|---|"
    for (i = 1; i <= nk; i++) { line = line " " size(kib[i]) " |"; sep = sep "---|" }
    print line; print sep
    split("map µs/MiB|malloc-back-lib µs/MiB|map / malloc-back-lib|map spread|malloc-back-lib spread|map / malloc-back-lib, range over rounds|map resident|map cache hits / faults per region|malloc-back-lib faults per region|target ≤ 1.0×: verdict (median of the rounds\047 ratios, interval)", label, "|")
    for (j = 1; j <= 10; j++) {
        line = "| " label[j] " |"
        for (i = 1; i <= nk; i++) {
            k = kib[i] "k"
            if (j == 1) c = fig("curve_map_" k "_us_per_mib", "")
            else if (j == 2) c = fig("curve_malloc-back-lib_" k "_us_per_mib", "")
            else if (j == 3) c = times("curve_ratio_map_vs_malloc-back-lib_" k)
            else if (j == 4) c = times("curve_map_" k "_spread")
            else if (j == 5) c = times("curve_malloc-back-lib_" k "_spread")
            else if (j == 6) c = has("curve_ratio_map_vs_malloc-back-lib_" k "_min") && has("curve_ratio_map_vs_malloc-back-lib_" k "_max") ? \
                num(val["curve_ratio_map_vs_malloc-back-lib_" k "_min"]) "–" num(val["curve_ratio_map_vs_malloc-back-lib_" k "_max"]) : "not measured"
            else if (j == 7) c = has("curve_map_" k "_resident_mib") ? sprintf("%.1f", val["curve_map_" k "_resident_mib"]) : "not measured"
            else if (j == 8) c = has("curve_map_" k "_cache_hits_per_region") && has("curve_map_" k "_faults_per_region") ? \
                sprintf("%.1f", val["curve_map_" k "_cache_hits_per_region"]) " / " sprintf("%.0f", val["curve_map_" k "_faults_per_region"]) : "not measured"
            else if (j == 9) c = has("curve_malloc-back-lib_" k "_faults_per_region") ? sprintf("%.0f", val["curve_malloc-back-lib_" k "_faults_per_region"]) : "not measured"
            else c = ok[i]
            line = line " " c " |"
        }
        print line
    }
}' "$meta" "$tsv" >"$table"

if ((print)); then
    cat "$table"
    exit 0
fi

awk -v begin="$begin" -v end="$end" -v table="$table" '
$0 == begin {
    print
    print "<!-- made by ci/bench_readme.sh from build/bench/bench.tsv (make bench): edit the script, not the table -->"
    while ((getline line < table) > 0) print line
    skip = 1
    next
}
$0 == end { skip = 0 }
!skip' "$readme" >"$readme.tmp"
cat "$readme.tmp" >"$readme"
echo "bench_readme.sh: README.md: performance table rewritten from ${tsv#"$root/"}"
