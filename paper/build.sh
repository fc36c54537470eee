#!/usr/bin/env bash
# build.sh RESULTS SCALE - paper/paper.pdf from the experiment runner's results (make paper).
#
#   paper/build.sh [--out DIR] [--no-scale-note] [RESULTS [SCALE]]    (RESULTS: default results)
#   paper/build.sh --scale-of [RESULTS [SCALE]]
#
# The scale (one place for `make plots` and `make paper`): SCALE when given and not empty;
# else default when RESULTS/default/results.csv exists; else the most recent run, the scale
# whose RESULTS/<scale>/results.csv is newest, with a one-line note saying so on stderr (not
# with --no-scale-note: `make paper` runs after `make plots`, which has said it); else an error
# naming the command to run. --scale-of only prints that scale on stdout (for `make plots`).
# Needs RESULTS/SCALE/results.csv, the tables RESULTS/SCALE/tables/*.tex (experiments/run.py)
# and the figures RESULTS/SCALE/plots/*.png (plots/plot.py): `make experiments` makes all three.
# Steps: check those inputs; check that the paper's listings still match the sources and
# write DIR/generated/numbers.tex (paper/numbers.py: the numbers the prose quotes, from the
# CSV); copy paper.tex, the numbers, the tables and the figures into a temporary build folder
# (the paths in paper.tex are relative to it); run latexmk, or pdflatex twice; put the PDF at
# DIR/paper.pdf (written beside it, then renamed). DIR is paper/ unless --out DIR is given.
# On a LaTeX error the first error lines of the log are shown and the exit status is 1; a
# missing input gives exit status 2.
# Uses $PYTHON (default /usr/bin/python3, else python3), LaTeX from texlive-latex-base,
# -latex-recommended, -latex-extra, -fonts-recommended and lmodern (make paper-deps).
set -euo pipefail

usage="usage: paper/build.sh [--out DIR] [--no-scale-note] [RESULTS [SCALE]] | --scale-of [RESULTS [SCALE]]"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out_dir=$here scale_of=0 scale_note=1
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --out) [[ -n ${2:-} ]] || { echo "$usage" >&2; exit 2; }; out_dir=$2; shift ;;
    --scale-of) scale_of=1 ;;
    --no-scale-note) scale_note=0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
[[ $# -le 2 ]] || { echo "$usage" >&2; exit 2; }
results=${1:-results}
scale=${2:-}
if [[ -z ${PYTHON:-} ]]; then
  PYTHON=$( [[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || echo python3 )
fi

die() { echo "build.sh: error: $1" >&2; exit "${2:-2}"; }
scales=(smoke default paper)   # experiments/run.py's SCALES
results_arg=$([[ $results == results ]] || printf ' RESULTS=%q' "$results")
run_first() { echo "run \`make experiments SCALE=$1$results_arg\` first"; }

ran=()   # the scales that have results, newest first
for s in "${scales[@]}"; do
  [[ -f $results/$s/results.csv ]] || continue
  i=0
  while (( i < ${#ran[@]} )) && [[ ! $results/$s/results.csv -nt $results/${ran[i]}/results.csv ]]; do i=$((i + 1)); done
  ran=("${ran[@]:0:i}" "$s" "${ran[@]:i}")
done
if [[ -z $scale ]]; then
  if [[ -f $results/default/results.csv ]]; then
    scale=default
  elif (( ${#ran[@]} )); then
    scale=${ran[0]}
    if (( scale_note )); then
      echo "build.sh: note: no SCALE given and $results/default/results.csv does not exist: using SCALE=$scale," \
           "the most recent run ($results/$scale/results.csv, $(date -r "$results/$scale/results.csv" '+%Y-%m-%d %H:%M'))" >&2
    fi
  else
    die "no results under $results/ (no $results/{$(IFS=,; echo "${scales[*]}")}/results.csv): $(run_first smoke) (a quick run; \`make experiments$results_arg\` runs the default scale)"
  fi
fi
if (( scale_of )); then echo "$scale"; exit 0; fi

scale_dir=$results/$scale
if [[ ! -f $scale_dir/results.csv ]]; then
  others=""
  (( ${#ran[@]} == 0 )) || others="; results exist for SCALE=$(IFS=,; echo "${ran[*]}"): \`make paper SCALE=${ran[0]}$results_arg\` builds from the newest"
  [[ -d $scale_dir ]] || die "$scale_dir does not exist: $(run_first "$scale")$others"
  die "$scale_dir/results.csv not found: $(run_first "$scale")$others"
fi
scale_dir=$(cd "$scale_dir" && pwd)
missing=()
for stem in course_fig3 course_fig4 cao_kmeans_total_cost cao_kmeans_clustering_cost cao_kmeans_iteration_cost \
            cao_kmeans_gc_g2m cao_kmeans_cost_vs_k cao_kmeans_cost_vs_d; do
  [[ -f $scale_dir/tables/$stem.tex ]] || missing+=("tables/$stem.tex")
done
(( ${#missing[@]} == 0 )) || die "missing in $scale_dir: ${missing[*]}: $(run_first "$scale") (or \`make tables SCALE=$scale$results_arg\`)"
[[ -d $scale_dir/plots ]] || die "$scale_dir/plots not found: \`make plots SCALE=$scale$results_arg\` draws the figures"
for what in tables plots; do
  # -print -quit, not `| head -1`: under pipefail, find's SIGPIPE ended the script (status 141)
  newest=$(find "$scale_dir/$what" -maxdepth 1 -type f \( -name '*.tex' -o -name '*.png' \) -newer "$scale_dir/results.csv" -print -quit)
  oldest_ok=$(find "$scale_dir/$what" -maxdepth 1 -type f \( -name '*.tex' -o -name '*.png' \) -print -quit)
  if [[ -n $oldest_ok && -z $newest ]]; then
    echo "build.sh: warning: $scale_dir/$what is older than results.csv: \`make tables plots SCALE=$scale$results_arg\` regenerates it" >&2
  fi
done
if command -v latexmk >/dev/null; then latex=latexmk
elif command -v pdflatex >/dev/null; then latex=pdflatex
else die "pdflatex not found: \`make paper-deps\` installs LaTeX"
fi

# the numbers of the prose, after checking that the listings are still those of the sources
mkdir -p "$out_dir/generated"
out_dir=$(cd "$out_dir" && pwd)
"$PYTHON" "$here/numbers.py" --results "$(dirname "$scale_dir")" --scale "$scale" \
  --out "$out_dir/generated/numbers.tex" --check-listings "$here/paper.tex" || exit 2

build=$(mktemp -d "${TMPDIR:-/tmp}/pragmaclust-paper.XXXXXX")
trap 'rm -rf "$build"' EXIT
mkdir -p "$build/generated" "$build/tables" "$build/plots" "$build/sections"
cp "$here/paper.tex" "$build/"
cp "$here"/sections/*.tex "$build/sections/"
cp "$out_dir/generated/numbers.tex" "$build/generated/"
cp "$scale_dir"/tables/*.tex "$build/tables/"
shopt -s nullglob
pngs=("$scale_dir"/plots/*.png)
(( ${#pngs[@]} == 0 )) || cp "${pngs[@]}" "$build/plots/"
echo "building the paper from $scale_dir (${#pngs[@]} figures) with $latex"

show_errors() {
  echo "build.sh: error: LaTeX failed; first errors of paper.log:" >&2
  grep -m 6 -E -A3 '^(! |.*:[0-9]+: )' "$build/paper.log" >&2 || tail -20 "$build/paper.log" >&2
  exit 1
}
cd "$build"
if [[ $latex == latexmk ]]; then
  latexmk -pdf -interaction=nonstopmode -halt-on-error -file-line-error paper.tex >latexmk.out 2>&1 || show_errors
else
  for _ in 1 2; do
    pdflatex -interaction=nonstopmode -halt-on-error -file-line-error paper.tex >/dev/null 2>&1 || show_errors
  done
fi
[[ -s paper.pdf ]] || show_errors
if grep -q "There were undefined references" paper.log; then
  echo "build.sh: warning: undefined references:" >&2
  grep -m 5 "LaTeX Warning: Reference" paper.log >&2 || true
fi
overfull=$(grep -c '^Overfull \\hbox' paper.log || true)
if (( overfull > 0 )); then
  echo "build.sh: note: $overfull overfull line(s):" >&2
  grep -m 5 '^Overfull \\hbox' paper.log | sed 's/^/  /' >&2
fi
pages=$(grep -oE 'Output written on paper.pdf \(([0-9]+) page' paper.log | grep -oE '[0-9]+ page' | grep -oE '[0-9]+' || echo "?")

tmp=$(mktemp "$out_dir/.paper.pdf.XXXXXX")
cp paper.pdf "$tmp"
chmod 644 "$tmp"
mv -f "$tmp" "$out_dir/paper.pdf"
echo "wrote $out_dir/paper.pdf ($pages pages)"
