#!/usr/bin/env bash
# run-exercise.sh NAME FROM ARGS VARIANT... - runs build/teaching/FROM/NAME/<variant>/NAME for each
# variant (the gpu one with $TH_GPU_FLAGS, --allow-host without a GPU), ARGS given to each, then a
# summary of the verdicts. Exit status 0 when every variant passed. Called by `make exercise`
# (teaching/exercises.mk).
set -u
name=$1 from=$2 args=$3
shift 3
summary=() status=0
for v in "$@"; do
  program=build/teaching/$from/$name/$v/$name
  flags=$args
  [[ $v == gpu ]] && flags="${TH_GPU_FLAGS:-} $args"
  echo "=== $name, $v variant: $program $flags"
  # shellcheck disable=SC2086 # flags are words
  out=$("$program" $flags 2>&1)
  rc=$?
  printf '%s\n' "$out"
  verdict=$(printf '%s\n' "$out" | grep -E '^(PASS|FAIL) ' | tail -n 1)
  [[ -n $verdict ]] || verdict="FAIL $name [$v]: the program ended with status $rc and no verdict (did it crash?)"
  [[ $rc -eq 0 && $verdict == PASS* ]] || status=1
  summary+=("  $verdict")
done
echo "=== summary of $name ($( [[ $from == solution ]] && echo "reference solution, teaching/solutions" || \
  echo "your file, teaching/exercises")/$name/exercise.c):"
printf '%s\n' "${summary[@]}"
[[ $status -eq 0 || $from == solution ]] || echo "(a starting file fails until the exercise is done: see its TODO)"
exit $status
