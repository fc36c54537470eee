# points.gp - one marker per category and series (speedup per data set), for plot.py.
# plot.py sets: PLOTSDIR, DATA (one block per series: x index, y, label text), OUT, FIGTITLE,
# YLABEL, N series (T titles, C colours, PT point types), NCOLS categories named XL, DX (shift
# between series), NOTE/NNOTE, NKEY key lines KN. y is logarithmic; a dotted line marks 1
# (a plotted constant, so that the y range always holds it).
# Each marker carries its value, beside it (left for the first half of the series).
load PLOTSDIR."/common.gp"
do for [fmt in "png svg"] {
  eval (fmt eq "png" ? TERM_png : TERM_svg)
  set output OUT.".".fmt
  set title FIGTITLE font ",20"
  set ylabel YLABEL
  set xlabel ""
  set logscale y
  set format y "%g"
  set yrange [*:*]
  set xrange [-1 : NCOLS - 0.3]
  set xtics () rotate by -35 font ",15"
  do for [c=1:NCOLS] { set xtics add (XL[c] c - 1) }
  set grid noxtics
  set key outside right top vertical Left reverse
  set bmargin BOTTOM + 2.5
  NL = int(N / 2)             # the left half of the series is labelled on the left of its markers
  plot for [i=1:N] DATA index (i-1) using ($1 + (i - (N + 1) / 2.0) * DX):2 with points lc rgb C[i] pt PT[i] ps 2 title T[i], \
       for [i=1:NL] DATA index (i-1) using ($1 + (i - (N + 1) / 2.0) * DX):2:3 with labels right offset -1, 0 font ",13" tc rgb C[i] notitle, \
       for [i=NL+1:N] DATA index (i-1) using ($1 + (i - (N + 1) / 2.0) * DX):2:3 with labels left offset 1, 0 font ",13" tc rgb C[i] notitle, \
       for [j=1:NKEY] keyentry with lines lt nodraw title KN[j], \
       1 with lines dt 3 lw 1.5 lc rgb "#555555" notitle
  unset output
}
