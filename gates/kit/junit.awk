# junit.awk -- the matrix as JUnit XML, for CI systems that show test reports.
#
# Input: matrix.tsv (gate, build, expected, status, reason, figure,
# verdict). One testsuite per build, one testcase per gate run on it; a
# case fails when its cell has the wrong colour or reason (a poison that is
# red for its reason is a passing case: the gate did its job), and a
# skipped or n/a cell is a skipped case.
function esc(s) {
    gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); gsub(/"/, "\\&quot;", s)
    return s
}
BEGIN { FS = "\t" }
NR == 1 { next }
{
    if (!($2 in seen)) { seen[$2] = 1; order[++nb] = $2 }
    k = ++count[$2]; row[$2, k] = $0
    if ($7 == "wrong") fails[$2]++
    if ($7 == "skip" || $7 == "n/a") skips[$2]++
    if ($7 == "wrong") total_fails++
    total++
}
END {
    print "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
    printf "<testsuites name=\"gbgate matrix\" tests=\"%d\" failures=\"%d\">\n", total, total_fails
    for (i = 1; i <= nb; i++) {
        b = order[i]
        printf "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n", esc(b), count[b], fails[b] + 0, skips[b] + 0
        for (k = 1; k <= count[b]; k++) {
            split(row[b, k], f, "\t")
            printf "    <testcase classname=\"%s\" name=\"%s\">", esc(b), esc(f[1])
            if (f[7] == "wrong")
                printf "<failure message=\"expected %s, got %s%s\">%s</failure>", esc(f[3]), esc(f[4]), f[5] != "" && f[5] != "-" ? esc(" (" f[5] ")") : "", esc(f[6])
            else if (f[7] == "skip" || f[7] == "n/a")
                printf "<skipped message=\"%s\"/>", esc(f[7] == "skip" ? f[3] : "not run: another platform's, or not selected")
            else
                printf "<system-out>%s</system-out>", esc(f[4] == "pass" ? f[6] : "red (" f[5] "): " f[6])
            print "</testcase>"
        }
        print "  </testsuite>"
    }
    print "</testsuites>"
}
