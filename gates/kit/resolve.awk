# resolve.awk -- the expected file as it applies here: every cell one colour.
#
# A cell of the expected file is one colour, or several separated by ","
# of which at most one has no "@<platform>": the first whose platform this
# machine is (the variable platforms, space-separated names, e.g. "all
# linux glibc") applies, else the one without a platform, else green. So
# "red:rss@macos" is red on macOS and green elsewhere, and
# "red:lazy-free,red:retained-below@macos" red for one reason here and for
# another on macOS. Prints the header and the gate rows, tab-separated,
# each cell resolved (an empty one as green); comments and blank lines go.
# Exits 2, naming the row, on a cell with two colours for no platform.
BEGIN { FS = OFS = "\t"; split(platforms, p, " "); for (i in p) on[p[i]] = 1 }
/^#/ || $0 == "" { next }
$1 == "gate" { print; next }
{
    for (i = 3; i <= NF; i++) {
        n = split($i, alt, ","); here = ""; plain = ""; plains = 0
        for (k = 1; k <= n; k++) {
            at = index(alt[k], "@")
            if (at == 0) { plain = alt[k]; plains++ }
            else if (here == "" && on[substr(alt[k], at + 1)]) here = substr(alt[k], 1, at - 1)
        }
        if (plains > 1) {
            printf "resolve.awk: gate %s, cell %d (%s): more than one colour without a platform\n", $1, i - 2, $i > "/dev/stderr"
            bad = 1
        }
        $i = here != "" ? here : plain != "" ? plain : "green"
    }
    print
}
END { exit bad ? 2 : 0 }
