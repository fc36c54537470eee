# phases.gp - per-iteration phase times per x, one column of panels per variant (Cao et al.'s
# GPU-C vs GPU-L), for plot.py: top row the stacked times in ms on one shared scale, bottom
# row the same bars as shares of the iteration, so that the split stays visible where the
# times are small. plot.py sets: PLOTSDIR, DATA (one block per variant: x index, then the
# phases bottom to top), OUT, FIGTITLE, XLABEL, YLABEL, YMAX (shared y range), N variants
# (T names, E 1 = has bars, R reason when it has none), NCOLS x values named XL, PH (phase
# names) and PC (colours) for the 4 phases, NOTE/NNOTE; optional SHARE (the lower row's y label)
# and TICKLINES (lines of the x tick labels, default 1).
H = 900
load PLOTSDIR."/common.gp"
set style fill solid 0.9 border lc rgb "#333333"
set boxwidth 0.65
tot(a, b, c, d) = a + b + c + d
share(v, t) = t > 0 ? 100.0 * v / t : 0
do for [fmt in "png svg"] {
  eval (fmt eq "png" ? TERM_png : TERM_svg)
  set output OUT.".".fmt
  TL = exists("TICKLINES") ? TICKLINES : 1     # lines of the x tick labels (long data set names: 2)
  set multiplot layout 2, N title FIGTITLE font ",20" margins 0.14, 0.98, (NOTE_PX + 105.0 + (TL - 1) * 24) / H, 0.82 spacing 0.05, 0.09 + (TL - 1) * 24.0 / H
  set xrange [-0.6 : NCOLS - 0.4]
  set xtics () font ",16"
  do for [c=1:NCOLS] { set xtics add (XL[c] c - 1) }
  set grid noxtics ytics
  # one legend for the whole figure, in a row between the title and the panels (drawn with
  # the first panel, then removed)
  lx = 0.06
  do for [p=1:4] {
    set object 200 + p rect from screen lx, screen 0.905 to screen lx + 0.024, screen 0.93 fc rgb PC[p] fs solid 0.9 border lc rgb "#333333" front
    set label 200 + p PH[p] at screen lx + 0.032, screen 0.9175 left font ",15"
    lx = lx + 0.07 + strlen(PH[p]) * 0.0088
  }
  do for [row=1:2] {
    do for [i=1:N] {
      unset label 1
      if (row == 1) {
        set title T[i] font ",19"
        set yrange [0 : YMAX]
        unset xlabel
        unset key
        if (i == 1) { set ylabel YLABEL } else { unset ylabel }
      } else {
        unset title
        unset key
        set yrange [0 : 100]
        set xlabel XLABEL offset 0, -(TL - 1) * 0.9
        if (i == 1) { set ylabel (exists("SHARE") ? SHARE : "share of the iteration (%)") } else { unset ylabel }
      }
      set format y (i == 1 ? "%g" : "")
      if (!E[i]) {
        set label 1 R[i] at graph 0.5, graph 0.5 center font ",18" tc rgb "#555555"
        plot 1/0 notitle
      } else {
        if (row == 1) {
          plot DATA index (i-1) using 1:(tot($2,$3,$4,$5)) with boxes lc rgb PC[4] notitle, \
               '' index (i-1) using 1:($2+$3+$4) with boxes lc rgb PC[3] notitle, \
               '' index (i-1) using 1:($2+$3) with boxes lc rgb PC[2] notitle, \
               '' index (i-1) using 1:2 with boxes lc rgb PC[1] notitle, \
               '' index (i-1) using 1:(tot($2,$3,$4,$5)):(sprintf("%.3g", tot($2,$3,$4,$5))) with labels offset 0, 0.8 font ",13" notitle
        } else {
          plot DATA index (i-1) using 1:(100) with boxes lc rgb PC[4] notitle, \
               '' index (i-1) using 1:(share($2+$3+$4, tot($2,$3,$4,$5))) with boxes lc rgb PC[3] notitle, \
               '' index (i-1) using 1:(share($2+$3, tot($2,$3,$4,$5))) with boxes lc rgb PC[2] notitle, \
               '' index (i-1) using 1:(share($2, tot($2,$3,$4,$5))) with boxes lc rgb PC[1] notitle
        }
      }
      if (row == 1 && i == 1) { do for [p=1:4] { unset object 200 + p; unset label 200 + p } }
    }
  }
  unset multiplot
  unset output
}
