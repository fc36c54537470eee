#!/usr/bin/env python3
"""bench_python.py - the Python package against the program on the k-means benchmark cases (not a test).

For each case (bench_kmeans.py's sets) the data set is written once by `pragmaclust-seq generate`
and k initial centroids are drawn from its rows; then `pragmaclust-<variant> kmeans` and
`pragmaclust.KMeans(variant=...)` run the same Lloyd passes from them (--max-iter, the default
distance and update), each after one warm-up run, --repeat times, in --rounds rounds that
alternate which side goes first (the copy in of pageable memory moves by up to a quarter between
runs of either side: rounds spread that over both). Printed per case, each the median of the
rounds' medians: the program's whole-run time (the report's total_s: copies in and out and every
pass), the Python fit's wall time (conversion checks, the worker thread, ctypes, the library's
call) and the library's own total inside it (timings_["total"]), their ratio, the ratio with the
program's layout added (layout_s: its host threads lay the rows out dimension-major before its
clock starts, where the library lays them out inside its total, on the device: this ratio
compares the same work), the ratio with each side's copy in taken out, the copy in of each (h2d:
the program's of its dimension-major copy; the library's of the caller's rows with their layout
on the device), the Lloyd passes' time an iteration on each side (the assign and update phases over
the iterations: bench_kmeans.py's measure, the same kernels on the same device data) and its ratio,
and whether the labels and centroids are bit-identical.

  experiments/bench_python.py [--bin DIR] [--lib DIR] [--variant gpu] [--cases issue,odd]
                              [--max-iter 20] [--repeat 5] [--rounds 3] [--csv FILE]
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_common import run_with_report
from bench_kmeans import CASE_SETS

REPO = Path(__file__).resolve().parent.parent


def passes_s(phases):
    """The Lloyd passes' time, from a dict of phase seconds: the assign and update phases."""
    return phases["assign"] + phases["update"]


def python_fits(variant, x, init, max_iter, repeat):
    """Medians of `repeat` fits after one warm-up: wall time, the library's total, its h2d phase
    and its passes' time; and the last model."""
    import pragmaclust
    walls, totals, h2d, passes, model = [], [], [], [], None
    for run in range(repeat + 1):
        model = pragmaclust.KMeans(len(init), init=init, max_iter=max_iter, variant=variant)
        start = time.perf_counter()
        model.fit(x)
        wall = time.perf_counter() - start
        if run:
            walls.append(wall)
            totals.append(model.timings_["total"])
            h2d.append(model.timings_["h2d"])
            passes.append(passes_s(model.timings_))
    return (statistics.median(walls), statistics.median(totals), statistics.median(h2d), statistics.median(passes),
            model)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="bin", help="folder with pragmaclust-<variant> (default bin)")
    ap.add_argument("--lib", default=str(REPO / "lib"), help="folder with libpragmaclust-<variant>.so (default lib)")
    ap.add_argument("--variant", default="gpu", choices=["seq", "omp", "gpu"])
    ap.add_argument("--cases", default="issue,odd", help="issue, odd, or comma-separated NxDxK (default issue,odd)")
    ap.add_argument("--max-iter", type=int, default=20, help="Lloyd passes at most (default 20)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs of each side in a round (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, alternating which side runs first (default 3)")
    ap.add_argument("--allow-host", action="store_true", help="the gpu variant may run on the host")
    ap.add_argument("--csv", help="also write the rows to this CSV file")
    args = ap.parse_args()

    os.environ.setdefault("PRAGMACLUST_LIB_DIR", args.lib)
    sys.path.insert(0, str(REPO / "python"))
    import pragmaclust
    where = pragmaclust.init(args.variant, allow_host=args.allow_host)
    program = os.path.join(args.bin, f"pragmaclust-{args.variant}")
    extra = ["--allow-host"] if args.allow_host and args.variant == "gpu" else []
    print(f"library: {pragmaclust.info(args.variant)['library']}; kernels on: {where}")
    if args.repeat < 1 or args.rounds < 1:
        sys.exit("bench_python.py: --repeat and --rounds take a count of at least 1")
    header = (f"{'case (n x d, k)':<24} {'its':>4} {'program ms':>11} {'python ms':>10} {'library ms':>11} "
              f"{'python/program':>15} {'with layout':>12} {'less h2d':>9} {'h2d program':>12} {'h2d library':>12}"
              f" {'pass program':>13} {'pass library':>13} {'pass ratio':>11}  identical")
    print(header)
    print("-" * len(header))
    cases = []
    for item in args.cases.split(","):
        cases += CASE_SETS[item].split(",") if item in CASE_SETS else [item]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data, init_file = os.path.join(tmp, "x.npy"), os.path.join(tmp, "init.npy")
        labels_file, centroids_file = os.path.join(tmp, "labels.npy"), os.path.join(tmp, "centroids.npy")
        for case in cases:
            n, d, k = (int(v) for v in case.lower().split("x"))
            label = f"{n}x{d}, k={k}"
            subprocess.run([os.path.join(args.bin, "pragmaclust-seq"), "generate", f"gen:uniform:n={n},d={d},seed=7",
                            "--out", data], check=True)
            x = np.load(data)
            init = x[np.random.default_rng(1).choice(n, size=k, replace=False)]
            np.save(init_file, init)
            command = [program, "kmeans", data, "-k", str(k), "--init", init_file, "--max-iter", str(args.max_iter),
                       "--warmup", "1", "--repeat", str(args.repeat), "--quiet", "--labels", labels_file,
                       "--centroids", centroids_file] + extra
            program_rounds, python_rounds, err = [], [], None
            for rnd in range(args.rounds):
                for side in (("program", "python") if rnd % 2 == 0 else ("python", "program")):
                    if side == "python":
                        python_rounds.append(python_fits(args.variant, x, init, args.max_iter, args.repeat))
                        continue
                    rep, err = run_with_report(command)
                    if err:
                        break
                    timing = rep["timing"]
                    phases = {name: value["median"] for name, value in timing["phases_s"].items()}
                    program_rounds.append((timing["total_s"]["median"], phases["h2d"], timing["layout_s"],
                                           passes_s(phases)))
                if err:
                    break
            if err:
                print(f"{label:<24} program: {err}")
                continue
            program_s, program_h2d, program_layout, program_passes = (statistics.median(r[i] for r in program_rounds)
                                                                      for i in range(4))
            wall_s, library_s, library_h2d, library_passes = (statistics.median(r[i] for r in python_rounds)
                                                              for i in range(4))
            model = python_rounds[-1][4]
            same = (np.array_equal(np.load(labels_file), model.labels_)
                    and np.array_equal(np.load(centroids_file), model.cluster_centers_)
                    and rep["iterations"] == model.n_iter_)
            less_h2d = (wall_s - library_h2d) / (program_s - program_h2d)
            with_layout = wall_s / (program_s + program_layout)
            its = max(model.n_iter_, 1)
            pass_program, pass_library = program_passes / its, library_passes / its
            print(f"{label:<24} {model.n_iter_:>4} {program_s * 1e3:>11.3f} {wall_s * 1e3:>10.3f} "
                  f"{library_s * 1e3:>11.3f} {wall_s / program_s:>15.3f} {with_layout:>12.3f} {less_h2d:>9.3f} "
                  f"{program_h2d * 1e3:>12.3f} {library_h2d * 1e3:>12.3f} {pass_program * 1e3:>13.4f} "
                  f"{pass_library * 1e3:>13.4f} {pass_library / pass_program:>11.3f}  {'yes' if same else 'NO'}")
            sys.stdout.flush()
            rows.append([n, d, k, model.n_iter_, program_s, program_layout, wall_s, library_s, wall_s / program_s,
                         with_layout, less_h2d, program_h2d, library_h2d, pass_program, pass_library, int(same)])
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["n", "d", "k", "iterations", "program_s", "program_layout_s", "python_wall_s", "library_s", "ratio",
                        "ratio_with_layout", "ratio_less_h2d", "program_h2d_s", "library_h2d_s",
                        "program_iteration_s", "library_iteration_s", "identical"])
            w.writerows(rows)
    if rows and not all(r[-1] for r in rows):
        sys.exit("bench_python.py: the Python results differ from the program's on a case marked NO")


if __name__ == "__main__":
    main()
