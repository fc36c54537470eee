# common.gp - terminals and styles shared by the figure scripts (loaded by them; see plot.py).
# PNG through cairo and SVG, the same size in pixels, white background, no enhanced text
# (titles and labels are shown as written: underscores and carets are not markup).
# W x H pixels (a script may set H before loading this file).
W = 1000
if (!exists("H")) { H = 640 }
TERM_png = sprintf("set terminal pngcairo noenhanced size %d,%d font 'Sans,19' linewidth 2 background rgb 'white'", W, H)
TERM_svg = sprintf("set terminal svg noenhanced size %d,%d font 'Sans,19' linewidth 2 background rgb 'white'", W, H)
set encoding utf8
set datafile missing "NaN"
set grid xtics ytics mxtics mytics lc rgb "#dddddd" lw 0.6 dt 1
set border lw 1
set pointsize 1.5
set tics nomirror out scale 0.6
set border 3
set key samplen 2.5 spacing 1.1
# NOTE (NNOTE lines) is written under the plot, in a smaller font; the bottom margin grows with it.
BOTTOM = 3.2 + (NNOTE > 0 ? 0.85 * NNOTE + 0.6 : 0)
NOTE_PX = NNOTE > 0 ? 22 * NNOTE + 12 : 0      # the same height in pixels
set bmargin BOTTOM
if (NNOTE > 0) { set label 100 NOTE at character 1, character (0.85 * NNOTE) left font ",15" tc rgb "#333333" }
