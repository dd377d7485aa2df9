# bench/plot.gp -- the chart of `tools/dev bench` (bench/bench.sh):
# requests per second against concurrency for create and replay through
# lighttpd and Apache, with the ceilings H (hello-fcgi through the same
# server), D (dbtx) and C = 1/(1/H + 1/D*) (D*: the best D at a
# concurrency up to c, as in the table).
#
#   gnuplot -e "datafile='chart.dat'; outfile='x.png'; subtitle='...'" bench/plot.gp
#
# datafile columns: c create-lighttpd create-apache replay-lighttpd
# replay-apache H-lighttpd H-apache D hot-lighttpd hot-apache D-hot
# C-lighttpd C-apache ("?" = not run).

if (!exists("subtitle")) subtitle = ""
set terminal pngcairo size 1000,640 font "sans,10"
set output outfile
set datafile missing "?"
set title "idemorders: throughput against concurrency\n{/*0.8 ".subtitle."}"
set xlabel "concurrent connections (wrk -c) / dbtx threads"
set ylabel "requests (transactions) per second, log scale"
set logscale x 2
set xrange [2:128]
set logscale y 10
set yrange [1000:30000]
set ytics (1000, 1500, 2000, 3000, 5000, 7000, 10000, 15000, 20000, 30000)
set key outside right top
set grid ytics
set xtics (4, 8, 16, 32, 64)

plot \
  datafile using 1:2  with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "create, lighttpd", \
  datafile using 1:3  with linespoints lw 2 pt 5 lc rgb "#ff7f0e" title "create, Apache", \
  datafile using 1:4  with linespoints lw 2 pt 9 lc rgb "#2ca02c" title "replay, lighttpd", \
  datafile using 1:5  with linespoints lw 2 pt 11 lc rgb "#d62728" title "replay, Apache", \
  datafile using 1:6  with linespoints dt 2 pt 6 lc rgb "#2ca02c" title "H hello, lighttpd", \
  datafile using 1:7  with linespoints dt 2 pt 4 lc rgb "#d62728" title "H hello, Apache", \
  datafile using 1:8  with linespoints dt 3 lw 2 pt 13 lc rgb "#7f7f7f" title "D dbtx", \
  datafile using 1:12 with linespoints dt 4 pt 6 lc rgb "#1f77b4" title "C ceiling, lighttpd", \
  datafile using 1:13 with linespoints dt 4 pt 4 lc rgb "#ff7f0e" title "C ceiling, Apache", \
  datafile using 1:9  with points pt 3 ps 1.5 lc rgb "#1f77b4" title "hot SKU, lighttpd", \
  datafile using 1:10 with points pt 3 ps 1.5 lc rgb "#ff7f0e" title "hot SKU, Apache", \
  datafile using 1:11 with points pt 1 ps 2 lc rgb "#7f7f7f" title "D-hot dbtx (one SKU)"
