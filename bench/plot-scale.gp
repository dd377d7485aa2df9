# bench/plot-scale.gp -- the chart of `tools/dev bench --scale`
# (bench/bench-scale.sh): requests per second (top) and p99 latency
# (bottom) at c16 through lighttpd against the ledger rows the database
# held, for create (the bench's keys, and random UUID keys), replay, GET,
# conflict and create beside the expiry job.
#
#   gnuplot -e "datafile='chart.dat'; outfile='x.png'; subtitle='...'" bench/plot-scale.gp
#
# datafile columns: N (millions of ledger rows), then req/s of create
# replay get conflict create-expire create-uuid, then their p99 in ms
# ("?" = not run).

if (!exists("subtitle")) subtitle = ""
set terminal pngcairo size 1000,900 font "sans,10"
set output outfile
set datafile missing "?"
set multiplot layout 2,1 title "idemorders as the ledger grows\n{/*0.8 ".subtitle."}"
set key outside right top
set grid xtics ytics
set xlabel "ledger rows in the database (millions)"
set xrange [0:*]
set offsets 0, graph 0.05, 0, 0
set lmargin 10
set rmargin 30

set ylabel "requests per second, log scale"
set logscale y 10
set yrange [500:30000]
set ytics (500, 1000, 1500, 2000, 3000, 5000, 7000, 10000, 15000, 20000, 30000)
plot \
  datafile using 1:2 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "create", \
  datafile using 1:7 with linespoints lw 2 pt 4 lc rgb "#9467bd" title "create, random UUID keys", \
  datafile using 1:6 with linespoints lw 2 dt 2 pt 6 lc rgb "#1f77b4" title "create, expiry job beside", \
  datafile using 1:3 with linespoints lw 2 pt 9 lc rgb "#2ca02c" title "replay", \
  datafile using 1:5 with linespoints lw 2 pt 11 lc rgb "#d62728" title "conflict (409)", \
  datafile using 1:4 with linespoints lw 2 pt 5 lc rgb "#ff7f0e" title "GET an order"

unset logscale y
unset key
set offsets 0, graph 0.05, graph 0.08, 0
set ylabel "p99 latency, ms"
set yrange [0:*]
set ytics auto
plot \
  datafile using 1:8 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "create", \
  datafile using 1:13 with linespoints lw 2 pt 4 lc rgb "#9467bd" title "create, random UUID keys", \
  datafile using 1:12 with linespoints lw 2 dt 2 pt 6 lc rgb "#1f77b4" title "create, expiry job beside", \
  datafile using 1:9 with linespoints lw 2 pt 9 lc rgb "#2ca02c" title "replay", \
  datafile using 1:11 with linespoints lw 2 pt 11 lc rgb "#d62728" title "conflict (409)", \
  datafile using 1:10 with linespoints lw 2 pt 5 lc rgb "#ff7f0e" title "GET an order"
unset multiplot
