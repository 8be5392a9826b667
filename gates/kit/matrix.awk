# matrix.awk -- the matrix: expected colours against measured cells.
#
# Input: the expected file as it applies here (resolve.awk: one colour per
# cell), then the results file (gate, build, pass|fail, reason, figure;
# tab-separated). Variables: platforms (space-separated names this machine
# is, e.g. "all linux glibc": a gate runs where its runs-on is one of
# them), md and tsv (the files to
# write), only_gates and only_builds (space-separated; when set, the other
# cells were not run and are not judged). Prints the table, writes it as
# Markdown and as TSV (gate, build, expected, status, reason, figure,
# verdict), and ends with the score; exits 1 if any cell has the wrong
# colour, or the right colour for the wrong reason.
BEGIN {
    FS = "\t"
    split(platforms, p, " "); for (i in p) on[p[i]] = 1
    n = split(only_gates, a, " "); for (i = 1; i <= n; i++) gsel[a[i]] = 1
    n = split(only_builds, a, " "); for (i = 1; i <= n; i++) bsel[a[i]] = 1
}
FNR == NR {
    if ($0 ~ /^#/ || $0 == "") next
    if ($1 == "gate") { nb = NF - 2; for (i = 3; i <= NF; i++) build[i - 2] = $i; next }
    ng++; gate[ng] = $1; runs[$1] = $2
    for (i = 3; i <= NF; i++) want[$1, build[i - 2]] = $i
    next
}
{ status[$1, $2] = $3; reason[$1, $2] = $4; figure[$1, $2] = $5 }
# The colour a cell must have here.
function expected(g, b,    e) {
    e = want[g, b]
    return e == "" ? "green" : e
}
END {
    bad = 0; red_ok = 0; red = 0; green_ok = 0; green = 0; cells_ok = 0; cells = 0
    header = sprintf("%-24s", "gate"); mdh = "| gate |"; mds = "|---|"
    for (j = 1; j <= nb; j++) { header = header sprintf(" | %-28s", build[j]); mdh = mdh " " build[j] " |"; mds = mds "---|" }
    print header; print mdh > md; print mds > md
    print "gate\tbuild\texpected\tstatus\treason\tfigure\tverdict" > tsv
    for (i = 1; i <= ng; i++) {
        g = gate[i]; line = sprintf("%-24s", g); mdl = "| " g " |"
        for (j = 1; j <= nb; j++) {
            b = build[j]; e = expected(g, b)
            if (!on[runs[g]]) { cell = "n/a (" runs[g] " only)"; verdict = "n/a"; off[g] = runs[g] " only"; offn++ }
            else if (e ~ /^skip/) { cell = "skipped: " substr(e, 6); verdict = "skip"; skips = skips sprintf("\n  %s on %s: %s", g, b, substr(e, 6)); skipn++ }
            else if ((only_gates != "" && !(g in gsel)) || (only_builds != "" && !(b in bsel))) { cell = "not run"; verdict = "n/a" }
            else if (!((g, b) in status)) { cell = "✗ no result"; verdict = "wrong"; if (e == "green") green++; else red++ }
            else if (e == "green") {
                green++
                if (status[g, b] == "pass") { cell = "✓ " figure[g, b]; verdict = "ok"; green_ok++ }
                else { cell = "✗ red (" reason[g, b] "): " figure[g, b]; verdict = "wrong" }
            } else {
                r = substr(e, 5); red++
                if (status[g, b] == "fail" && reason[g, b] == r) { cell = "✓ red (" r "): " figure[g, b]; verdict = "ok"; red_ok++ }
                else if (status[g, b] == "fail") { cell = "✗ red for " reason[g, b] ", not " r ": " figure[g, b]; verdict = "wrong" }
                else { cell = "✗ survived: " figure[g, b]; verdict = "wrong" }
            }
            if (verdict == "ok" || verdict == "wrong") {
                cells++
                if (verdict == "ok") cells_ok++; else bad++
            }
            short = cell; if (length(short) > 28) short = substr(short, 1, 27) "…"
            line = line sprintf(" | %-28s", short)
            md_cell = cell; gsub(/\|/, "\\|", md_cell); mdl = mdl " " md_cell " |"
            print g "\t" b "\t" e "\t" status[g, b] "\t" reason[g, b] "\t" figure[g, b] "\t" verdict > tsv
        }
        print line; print mdl > md
    }
    score = sprintf("red cells red for their reason: %d / %d; green cells green: %d / %d", red_ok, red, green_ok, green)
    print ""; print score; print "" > md; print score > md
    # What did not run here, and why: none of it counts as passed.
    if (offn) {
        printf "cells not run on these platforms: %d", offn
        for (g in off) printf " (%s: %s)", g, off[g]
        printf "\n"
    }
    if (skipn) printf "cells skipped: %d, each with its reason:%s\n", skipn, skips
    printf "gate cells: %d passed, %d failed\n", cells_ok, bad
    exit (bad > 0)
}
