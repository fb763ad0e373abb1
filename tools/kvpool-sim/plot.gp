# SPDX-License-Identifier: GPL-2.0-only
#
# plot.gp: kvpool-sim's time series as a PNG (tools/sim.sh runs it).
#
#   gnuplot -e "dir='RESULTS'" tools/kvpool-sim/plot.gp
#
# Reads DIR/kvpool-sim.csv and DIR/kvpool-sim-meta.gp (both written by
# kvpool-sim), writes DIR/kvpool-sim.png: on top, the pages each tenant
# holds with its guarantee (dashed) and limit (dotted), the pool's free
# pages, the kill, the restart and the limit change; below, the same
# pages stacked, the prefix cache lighter than the rows, so that the
# whole pool shows.

if (!exists("dir")) dir = "results"
load dir."/kvpool-sim-meta.gp"
csv = dir."/kvpool-sim.csv"

set terminal pngcairo size 1200,820 font "sans,11" linewidth 1
set output dir."/kvpool-sim.png"
set datafile separator ","
set key autotitle columnhead

array col[3] = ["#1f5fbf", "#1e9e3e", "#a23ab0"]
array light[3] = ["#9dbbe8", "#9ed8ab", "#d9a6e0"]
# Column of tenant i's pages; its cache pages are the next one.
pages(i) = 6 + (i - 1) * 7
# and its limit, which the administrator may change
maxcol(i) = pages(i) + 6

set xrange [0:duration]
set border 3
set tics nomirror
set grid ytics lc rgb "#dddddd"
set format y "%.0s%c"

set multiplot layout 2,1 title title font "sans,13"

# ---- top: pages per tenant --------------------------------------------------
set size 1, 0.62
set origin 0, 0.36
set lmargin 10
set rmargin 16
set ylabel "pages held"
set yrange [0:nr_pages * 1.02]
unset xlabel
set key outside top center horizontal maxrows 1 reverse Left samplen 2 width 1
if (kill_t > 0) {
	set arrow 1 from first kill_t, graph 0 to first kill_t, graph 1 nohead lc rgb "#d62728" lw 2
	set label 1 "SIGKILL ".kill_name at first kill_t, graph 0.97 right offset -0.5,0 tc rgb "#d62728" font "sans,11"
}
if (squeeze_t > 0) {
	set arrow 4 from first squeeze_t, graph 0 to first squeeze_t, graph 1 nohead lc rgb "#555555" lw 1.5 dt 4
	set label 4 squeeze_name." limit halved" at first squeeze_t, graph 0.97 left offset 0.5,0 tc rgb "#555555" font "sans,11"
}
if (restart_t > 0) {
	set arrow 2 from first restart_t, graph 0 to first restart_t, graph 1 nohead lc rgb "#2a7f2a" lw 1.5 dt 2
	set label 2 kill_name." restarted" at first restart_t, graph 0.97 left offset 0.5,0 tc rgb "#2a7f2a" font "sans,11"
}
# One label per distinct limit and guarantee ("docs, batch limit").
do for [i = 1:ntenants] {
	lm = value("name".i)
	lg = value("name".i)
	first_m = 1
	first_g = 1
	do for [j = 1:i - 1] {
		if (value("max".j) == value("max".i)) { first_m = 0 }
		if (value("min".j) == value("min".i)) { first_g = 0 }
	}
	do for [j = i + 1:ntenants] {
		if (value("max".j) == value("max".i)) { lm = lm.", ".value("name".j) }
		if (value("min".j) == value("min".i)) { lg = lg.", ".value("name".j) }
	}
	if (first_m) {
		set label 10 + i lm." limit" at graph 1, first value("max".i) left offset 0.5,0 tc rgb col[i] font "sans,9"
	}
	if (first_g && value("min".i) > 0) {
		set label 20 + i lg." guarantee" at graph 1, first value("min".i) left offset 0.5,0 tc rgb col[i] font "sans,9"
	}
}
set label 30 "pool" at graph 1, first nr_pages left offset 0.5,0 font "sans,9"
# While the killed tenant is away, its guarantee stays free for it.
if (kill_t > 0 && restart_t > 0) {
	kmin = 0
	do for [i = 1:ntenants] { if (value("name".i) eq kill_name) { kmin = value("min".i) } }
	if (kmin > 0) {
		set label 31 sprintf("%s's guarantee kept free for it", kill_name) at first kill_t, first nr_pages * 0.8 right offset -1,0 font "sans,9" tc rgb "#666666"
		set arrow 3 from first kill_t - duration / 80, first nr_pages * 0.79 to first (kill_t + restart_t) / 2, first kmin + nr_pages * 0.01 lc rgb "#666666" lw 1 size screen 0.008,25
	}
}

plot \
	for [i = 1:ntenants] csv using 1:pages(i) with lines lw 2.5 lc rgb col[i] title value("name".i), \
	csv using 1:2 with lines lw 1 lc rgb "#888888" title "free", \
	for [i = 1:ntenants] csv using 1:(column(maxcol(i)) > 0 ? column(maxcol(i)) : 1/0) with steps lw 1 dt 3 lc rgb col[i] notitle, \
	for [i = 1:ntenants] (value("min".i) > 0 ? value("min".i) : 1/0) with lines lw 1 dt 2 lc rgb col[i] notitle, \
	nr_pages with lines lw 1 lc rgb "#444444" notitle

# ---- bottom: the pool, stacked ----------------------------------------------
unset label
unset arrow 3
set size 1, 0.36
set origin 0, 0
set ylabel "pool pages"
set title "the whole pool: dark = rows and slots, light = prefix cache" font "sans,10" offset 0,-0.6
set xlabel "seconds"
set yrange [0:nr_pages]
set key outside top center horizontal maxrows 1 reverse Left samplen 2 width 1
# sum of pages of tenants 1..k from row r
stack(k) = sum [j = 1:k] column(pages(j))
plot \
	for [k = ntenants:1:-1] csv using 1:(stack(k)):(stack(k - 1)) with filledcurves lc rgb light[k] notitle, \
	for [k = 1:ntenants] csv using 1:(stack(k - 1) + column(pages(k)) - column(pages(k) + 1)):(stack(k - 1)) with filledcurves lc rgb col[k] title value("name".k), \
	csv using 1:(stack(ntenants)) with lines lw 1 lc rgb "#444444" title "in use"

unset multiplot
