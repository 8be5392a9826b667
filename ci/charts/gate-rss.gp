# gate-rss.gp -- one gate's resident size over time: clean against each poison.
#
# A gate program that gives its memory back draws a sawtooth: up to the
# region's peak, back down to its baseline after each leave. A poison that
# keeps the memory draws a staircase instead. One panel per poison, each
# with the clean run beneath it, makes the difference readable at a glance.
# Called by ci/charts.sh with:
#   gate    the gate's name (the title)
#   dir     the folder of <gate>__<build>.tsv series ("<seconds>\t<KiB>")
#   poisons the builds to set against clean, space-separated (may be empty)
#   cap     the gate's resident-size cap in MiB (a dashed line), 0 for none
#   fmt     png or svg
#   out     the file to write

n = words(poisons)
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
set offsets 0, 0, graph 0.2, 0
clean = sprintf("%s/%s__clean.tsv", dir, gate)

set multiplot layout rows, cols title sprintf("%s: resident size over time (read with ps between checkpoints)", gate) font ",12"
do for [i = 1:panels] {
    if (n > 0) {
        p = word(poisons, i)
        set title sprintf("clean against %s", p)
        if (cap > 0) {
            plot clean using 1:($2 / 1024.0) with linespoints lw 2 pt 7 ps 0.4 lc rgb "#1f77b4" title "clean", \
                 sprintf("%s/%s__%s.tsv", dir, gate, p) using 1:($2 / 1024.0) with linespoints lw 2 pt 7 ps 0.4 lc rgb "#d62728" title p, \
                 cap with lines dt 2 lw 1 lc rgb "#555555" title sprintf("cap %g MiB", cap)
        } else {
            plot clean using 1:($2 / 1024.0) with linespoints lw 2 pt 7 ps 0.4 lc rgb "#1f77b4" title "clean", \
                 sprintf("%s/%s__%s.tsv", dir, gate, p) using 1:($2 / 1024.0) with linespoints lw 2 pt 7 ps 0.4 lc rgb "#d62728" title p
        }
    } else {
        set title "clean"
        plot clean using 1:($2 / 1024.0) with linespoints lw 2 pt 7 ps 0.4 lc rgb "#1f77b4" title "clean"
    }
}
unset multiplot
