#!/usr/bin/env bash
# build.sh RESULTS SCALE - paper/paper.pdf from the experiment runner's results (make paper).
#
#   paper/build.sh [RESULTS [SCALE]]        (defaults: results default)
#
# Needs RESULTS/SCALE/results.csv, the tables RESULTS/SCALE/tables/*.tex (experiments/run.py)
# and the figures RESULTS/SCALE/plots/*.png (plots/plot.py): `make experiments` makes all three.
# Steps: check those inputs; check that the paper's listings still match the sources and
# write paper/generated/numbers.tex (paper/numbers.py: the numbers the prose quotes, from the
# CSV); copy paper.tex, the numbers, the tables and the figures into a temporary build folder
# (the paths in paper.tex are relative to it); run latexmk, or pdflatex twice; put the PDF at
# paper/paper.pdf (written beside it, then renamed). On a LaTeX error the first error lines
# of the log are shown and the exit status is 1; a missing input gives exit status 2.
# Uses $PYTHON (default /usr/bin/python3, else python3), LaTeX from texlive-latex-base,
# -latex-recommended, -latex-extra and -fonts-recommended (make paper-deps).
set -euo pipefail

usage="usage: paper/build.sh [RESULTS [SCALE]]"
[[ $# -le 2 ]] || { echo "$usage" >&2; exit 2; }
results=${1:-results}
scale=${2:-default}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=$( [[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3 )
fi

die() { echo "build.sh: error: $1" >&2; exit "${2:-2}"; }

scale_dir=$results/$scale
[[ -d $scale_dir ]] || die "$scale_dir does not exist: run \`make experiments SCALE=$scale\` first (RESULTS=$results)"
scale_dir=$(cd "$scale_dir" && pwd)
[[ -f $scale_dir/results.csv ]] || die "$scale_dir/results.csv not found: run \`make experiments SCALE=$scale\` first"
missing=()
for stem in course_fig3 course_fig4 cao_kmeans_total_cost cao_kmeans_clustering_cost cao_kmeans_iteration_cost \
            cao_kmeans_gc_g2m cao_kmeans_cost_vs_k cao_kmeans_cost_vs_d; do
  [[ -f $scale_dir/tables/$stem.tex ]] || missing+=("tables/$stem.tex")
done
(( ${#missing[@]} == 0 )) || die "missing in $scale_dir: ${missing[*]}: run \`make experiments SCALE=$scale\` first"
[[ -d $scale_dir/plots ]] || die "$scale_dir/plots not found: run \`make experiments SCALE=$scale\` (or \`make plots SCALE=$scale\`) first"
for what in tables plots; do
  newest=$(find "$scale_dir/$what" -maxdepth 1 -type f \( -name '*.tex' -o -name '*.png' \) -newer "$scale_dir/results.csv" | head -1)
  oldest_ok=$(find "$scale_dir/$what" -maxdepth 1 -type f \( -name '*.tex' -o -name '*.png' \) | head -1)
  if [[ -n $oldest_ok && -z $newest ]]; then
    echo "build.sh: warning: $scale_dir/$what is older than results.csv: \`make tables plots SCALE=$scale\` regenerates it" >&2
  fi
done
if command -v latexmk >/dev/null; then latex=latexmk
elif command -v pdflatex >/dev/null; then latex=pdflatex
else die "pdflatex not found: \`make paper-deps\` installs LaTeX"
fi

# the numbers of the prose, after checking that the listings are still those of the sources
"$PYTHON" "$here/numbers.py" --results "$(dirname "$scale_dir")" --scale "$scale" \
  --out "$here/generated/numbers.tex" --check-listings "$here/paper.tex" || exit 2

build=$(mktemp -d "${TMPDIR:-/tmp}/pragmaclust-paper.XXXXXX")
trap 'rm -rf "$build"' EXIT
mkdir -p "$build/generated" "$build/tables" "$build/plots"
cp "$here/paper.tex" "$build/"
cp "$here/generated/numbers.tex" "$build/generated/"
cp "$scale_dir"/tables/*.tex "$build/tables/"
shopt -s nullglob
pngs=("$scale_dir"/plots/*.png)
(( ${#pngs[@]} == 0 )) || cp "${pngs[@]}" "$build/plots/"
echo "building the paper from $scale_dir (${#pngs[@]} figures) with $latex"

show_errors() {
  echo "build.sh: error: LaTeX failed; first errors of paper.log:" >&2
  grep -E -A3 '^(! |.*:[0-9]+: )' "$build/paper.log" | head -24 >&2 || tail -20 "$build/paper.log" >&2
  exit 1
}
cd "$build"
if [[ $latex == latexmk ]]; then
  latexmk -pdf -interaction=nonstopmode -halt-on-error -file-line-error paper.tex >latexmk.out 2>&1 || show_errors
else
  for pass in 1 2; do
    pdflatex -interaction=nonstopmode -halt-on-error -file-line-error paper.tex >/dev/null 2>&1 || show_errors
  done
fi
[[ -s paper.pdf ]] || show_errors
if grep -q "There were undefined references" paper.log; then
  echo "build.sh: warning: undefined references:" >&2
  grep "LaTeX Warning: Reference" paper.log | head -5 >&2
fi
overfull=$(grep -c '^Overfull \\hbox' paper.log || true)
if (( overfull > 0 )); then
  echo "build.sh: note: $overfull overfull line(s):" >&2
  grep '^Overfull \\hbox' paper.log | head -5 | sed 's/^/  /' >&2
fi
pages=$(grep -oE 'Output written on paper.pdf \(([0-9]+) page' paper.log | grep -oE '[0-9]+ page' | grep -oE '[0-9]+' || echo "?")

tmp=$(mktemp "$here/.paper.pdf.XXXXXX")
cp paper.pdf "$tmp"
chmod 644 "$tmp"
mv -f "$tmp" "$here/paper.pdf"
echo "wrote $here/paper.pdf ($pages pages)"
