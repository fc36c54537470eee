# lines.gp - one line per series vs x (speedup vs n; Cao et al.'s cost curves), for plot.py.
# plot.py sets before this script: PLOTSDIR, DATA (one index block per series), OUT (path
# without extension), FIGTITLE, XLABEL, YLABEL, LOGX, LOGY, XCOUNT (x is a count: 10k, 1M),
# NXT ticks at XT named XTL (linear axes: the measured x values), SHOWHLINE/HLINE (dotted
# reference line, e.g. speedup 1), N series with arrays T (titles),
# C (colours), DT (dash types), PT (point types); NOTE/NNOTE (text under the plot);
# NKEY key lines KN (series without any point, e.g. "gpu: n/a (no GPU)").
load PLOTSDIR."/common.gp"
# the reference line is a plotted constant, so that autoscaling keeps it in range
HL = SHOWHLINE ? sprintf(", %g with lines dt 3 lw 1.5 lc rgb '#555555' notitle", HLINE) : ""
do for [fmt in "png svg"] {
  eval (fmt eq "png" ? TERM_png : TERM_svg)
  set output OUT.".".fmt
  set title FIGTITLE font ",20"
  set xlabel XLABEL
  set ylabel YLABEL
  unset logscale
  if (LOGX) { set logscale x }
  if (LOGY) { set logscale y }
  set format x (XCOUNT && LOGX ? "%.0s%c" : "%g")
  set xtics autofreq
  if (NXT > 0) { set xtics (); do for [t=1:NXT] { set xtics add (XTL[t] XT[t]) } }
  set format y "%g"
  set key outside right top vertical Left reverse
  set yrange [*:*]
  set autoscale xfixmin
  set autoscale xfixmax
  set offsets graph 0.04, graph 0.04, 0, 0
  plot for [i=1:N] DATA index (i-1) using 1:2 with linespoints lc rgb C[i] dt DT[i] pt PT[i] lw 1.5 title T[i], \
       for [j=1:NKEY] keyentry with lines lt nodraw title KN[j] @HL
  unset output
}
