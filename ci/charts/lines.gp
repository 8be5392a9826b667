# lines.gp -- benchmark figures against a size or a count, one line each.
#
# The churn's cost against region size, its ratio to malloc-back, and the
# pin check's time per leave against suspended coroutines are curves: where
# a line crosses its target, or how far it stays above a floor, matters
# more than any one point. Log x always
# (sizes and counts grow by factors); log y on request.
# Called by ci/charts.sh with:
#   data    whitespace-separated: x, then ncols values (# lines skipped)
#   ncols   value columns
#   names   their legend titles, separated by "|"
#   title, xlabel, ylabel
#   logy    1 for a log scale
#   logx    the base of the log x axis (optional, 2 by default)
#   lines   horizontal lines "value:label|value:label" (may be empty): the
#           targets, or floors the curves cannot go below
#   xtics   tic labels for x, gnuplot's form '"64 KB" 64, "1 MB" 1024'
#           (optional; numbers by default)
#   fmt     png or svg
#   out     the file to write

if (fmt eq "svg") {
    set terminal svg size 900, 480 dynamic enhanced font "Sans,11" background "white"
} else {
    set terminal pngcairo size 900, 480 enhanced font "Sans,10" background "white"
}
set output out

set title title font ",12"
set xlabel xlabel
set ylabel ylabel
set grid xtics ytics lc rgb "#dddddd"
set border 3
set xtics nomirror
set ytics nomirror
if (!exists("logx")) logx = 2
set logscale x logx
# Named tics: a margin either side, so those at the ends are drawn too.
if (exists("xtics") && strlen(xtics) > 0) {
    eval("set xtics (" . xtics . ")")
    set offsets graph 0.02, graph 0.02, 0, 0
}
set key top left samplen 2

colors = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b"

nl = 0
tmax = 0
tmin = 1e300
if (strlen(lines) > 0) {
    rest = lines
    while (strlen(rest) > 0) {
        cut = strstrt(rest, "|")
        item = cut > 0 ? rest[1:cut - 1] : rest
        rest = cut > 0 ? rest[cut + 1:] : ""
        colon = strstrt(item, ":")
        v = real(item[1:colon - 1])
        tmax = v > tmax ? v : tmax
        tmin = v < tmin ? v : tmin
        nl = nl + 1
        set arrow nl from graph 0, first v to graph 1, first v nohead dt 2 lw 1.5 lc rgb "#444444" front
        set label nl item[colon + 1:] at graph 0.99, first v right offset 0, 0.6 font ",9" tc rgb "#444444" front
    }
}

# The y range holds the data and every line, so a target far above the
# curves (a missed one) or a floor far below them is still drawn.
dmax = 0
dmin = 1e300
do for [i = 1:ncols] {
    stats data using (column(i + 1)) nooutput
    dmax = STATS_max > dmax ? STATS_max : dmax
    dmin = STATS_min < dmin ? STATS_min : dmin
}
top = dmax > tmax ? dmax : tmax
bottom = dmin < tmin ? dmin : tmin
if (logy) {
    set logscale y
    set yrange [bottom / 1.5 : top * 2]
} else {
    set yrange [0 : top * 1.15]
}

name_rest(s, i) = (i <= 1 ? (strstrt(s, "|") > 0 ? s[1:strstrt(s, "|") - 1] : s) : (strstrt(s, "|") > 0 ? name_rest(s[strstrt(s, "|") + 1:], i - 1) : ""))

plot for [i = 1:ncols] data using 1:(column(i + 1)) with linespoints lw 2 pt 7 ps 0.8 lc rgb word(colors, i) title name_rest(names, i)
