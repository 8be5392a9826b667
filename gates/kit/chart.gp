# chart.gp -- one gate's resident size over time: the reference build
# against each other build, every checkpoint marked.
#
# A program that gives its memory back draws a sawtooth, up to its peak and
# back to its baseline at each checkpoint; one that keeps it draws a
# staircase. One panel per other build, each over the reference build (the
# first column of the expected file), makes the difference readable at a
# glance; the checkpoints, where the gate reads and judges, are the marked
# and named points. Called by gbgate charts with:
#   gate    the gate's name (the title)
#   dir     the folder of <gate>__<build>.tsv series, as gbgate run writes
#           them ("<seconds>\t<KiB>\t<checkpoint, or - between two>",
#           after a "# ..." line)
#   ref     the reference build
#   others  the builds to set against it, space-separated (may be empty)
#   cap     the gate's cap in KiB (a dashed line), 0 for none
#   fmt     png or svg
#   out     the file to write

n = words(others)
panels = n > 0 ? n : 1
cols = panels > 1 ? 2 : 1
rows = (panels + cols - 1) / cols

if (fmt eq "svg") {
    set terminal svg size 560 * cols, 300 * rows + 40 dynamic enhanced font "Sans,11" background "white"
} else {
    set terminal pngcairo size 560 * cols, 300 * rows + 40 enhanced font "Sans,10" background "white"
}
set output out

set datafile separator "\t"
set grid ytics lc rgb "#dddddd"
set border 3
set xtics nomirror
set ytics nomirror
set xlabel "seconds"
set ylabel "resident MiB"
set yrange [0:*]
set key top center horizontal samplen 2 font ",9"
set offsets 0, 0, graph 0.25, 0
base = sprintf("%s/%s__%s.tsv", dir, gate, ref)
capmib = cap / 1024.0
# A checkpoint row has a name in its third column; the others, "-", are
# the guard's readings between two. The marks and names are drawn at every
# row, empty between checkpoints, so a series without a checkpoint (a
# program killed before its first) still plots.
mark(size) = strcol(3) ne "-" ? size : 0
name(row) = strcol(3) ne "-" ? strcol(3) : ""

set multiplot layout rows, cols title sprintf("%s: resident size over time (ps; checkpoints marked)", gate) font ",12"
do for [i = 1:panels] {
    if (n > 0) {
        p = word(others, i)
        other = sprintf("%s/%s__%s.tsv", dir, gate, p)
        set title sprintf("%s against %s", ref, p)
        plot base using 1:($2 / 1024.0) with lines lw 2 lc rgb "#1f77b4" title ref, \
             base using 1:($2 / 1024.0):(mark(0.8)) with points pt 7 ps variable lc rgb "#1f77b4" notitle, \
             base using 1:($2 / 1024.0):(name(0)) with labels offset 0, 0.8 font ",7" tc rgb "#1f77b4" notitle, \
             other using 1:($2 / 1024.0) with lines lw 2 lc rgb "#d62728" title p, \
             other using 1:($2 / 1024.0):(mark(0.8)) with points pt 5 ps variable lc rgb "#d62728" notitle, \
             other using 1:($2 / 1024.0):(name(0)) with labels offset 0, -0.8 font ",7" tc rgb "#d62728" notitle, \
             (cap > 0 ? capmib : NaN) with lines dt 2 lw 1 lc rgb "#555555" title (cap > 0 ? sprintf("cap %g MiB", capmib) : "")
    } else {
        set title ref
        plot base using 1:($2 / 1024.0) with lines lw 2 lc rgb "#1f77b4" title ref, \
             base using 1:($2 / 1024.0):(mark(0.8)) with points pt 7 ps variable lc rgb "#1f77b4" notitle, \
             base using 1:($2 / 1024.0):(name(0)) with labels offset 0, 0.8 font ",7" tc rgb "#1f77b4" notitle, \
             (cap > 0 ? capmib : NaN) with lines dt 2 lw 1 lc rgb "#555555" title (cap > 0 ? sprintf("cap %g MiB", capmib) : "")
    }
}
unset multiplot
