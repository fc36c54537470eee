#!/usr/bin/env python3
"""bench_kmeans.py - per-iteration k-means benchmark of the three variants (not a test).

Runs `pragmaclust-<variant> kmeans gen:uniform:... --iterations N --warmup 1` for each case
and variant, reads the JSON reports and prints per-iteration time (median over the timed
iterations), GFLOP/s counted as 2nkd per iteration, and the phase split. Standard library only.

  experiments/bench_kmeans.py [--bin DIR] [--variants seq,omp,gpu] [--cases 1000000x64x1000,...]
"""
import argparse
import os
import sys

from bench_common import run_with_report

DEFAULT_CASES = "1000000x64x1000,4000000x8x256,1000000x16x64"


def run_case(binary, n, d, k, iterations, extra):
    return run_with_report([binary, "kmeans", f"gen:uniform:n={n},d={d},seed=7", "-k", str(k), "--iterations",
                            str(iterations), "--warmup", "1", "--quiet"] + extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="bin", help="folder with pragmaclust-<variant> (default bin)")
    ap.add_argument("--variants", default="seq,omp,gpu")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated NxDxK")
    ap.add_argument("--iterations", type=int, default=20, help="timed iterations for omp and gpu (default 20)")
    ap.add_argument("--seq-iterations", type=int, default=3, help="timed iterations for seq (default 3)")
    ap.add_argument("--update", default="device", choices=["device", "host"])
    ap.add_argument("--csv", help="also write the rows to this CSV file")
    args = ap.parse_args()

    rows = []
    header = f"{'case (n x d, k)':<22} {'variant':<7} {'ms/iter':>10} {'GFLOP/s':>9} {'assign ms':>10} {'update ms':>10} {'iters':>5}  where"
    print(header)
    print("-" * len(header))
    for case in args.cases.split(","):
        n, d, k = (int(v) for v in case.lower().split("x"))
        for variant in args.variants.split(","):
            binary = os.path.join(args.bin, f"pragmaclust-{variant}")
            its = args.seq_iterations if variant == "seq" else args.iterations
            rep, err = run_case(binary, n, d, k, its, ["--update", args.update])
            label = f"{n}x{d}, k={k}"
            if err:
                print(f"{label:<22} {variant:<7} {err}")
                continue
            t = rep["timing"]
            per_iter = t["iteration_s"]["median"]
            iters = rep["iterations"]
            assign = t["phases_s"]["assign"]["median"] / iters
            update = t["phases_s"]["update"]["median"] / iters
            gflops = 2.0 * n * d * k / per_iter * 1e-9
            print(f"{label:<22} {variant:<7} {per_iter*1e3:>10.3f} {gflops:>9.1f} {assign*1e3:>10.3f} {update*1e3:>10.3f} {iters:>5}  {rep['device']['where']}")
            sys.stdout.flush()
            rows.append([n, d, k, variant, per_iter, gflops, assign, update, iters, rep["device"]["where"], rep["compiler"]])
    if args.csv:
        import csv
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["n", "d", "k", "variant", "iteration_s", "gflops", "assign_s", "update_s", "iterations", "where", "compiler"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
