#!/usr/bin/env python3
"""bench_dbscan.py - the DBSCAN benchmark of the three variants and both methods (not a test).

Data (the DBSCAN issue's benchmark): n points, 20 Gaussian clusters plus 5% uniform noise
(`gen:blobs:...,centers=20,std=0.04,box=1,noise=0.05`), d = 2 and 3; eps is chosen so that the
median point has about 30 neighbours (itself included): the median, over a sample of points,
of the distance to the 30th nearest point, rounded to 3 significant digits. MinPts = 10.

For each case, variant and method it runs `pragmaclust-<variant> dbscan ... --repeat R
--warmup 1` and prints the median clustering time (all phases; transfers included for gpu and
also shown apart), the phase split, the counts, and whether the labels are identical to the
first run of the case. With --sklearn it also times scikit-learn's DBSCAN (n_jobs = --threads)
and checks that its labels are identical too. Needs numpy.

  experiments/bench_dbscan.py [--bin DIR] [--variants seq,omp,gpu] [--dims 2,3] [--n 1000000]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench_common import run_with_report

NEIGHBOURS = 30
PHASES = ["h2d", "index", "core", "connect", "label", "d2h"]


def generate(seq_binary, spec, path):
    subprocess.run([seq_binary, "generate", spec, "--out", path], check=True)
    return np.load(path)


def eps_for_neighbours(x, neighbours, sample, seed=1):
    """Median over `sample` points of the distance to their neighbours-th nearest point (the point
    itself is the first), rounded to 3 significant digits."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(x), size=min(sample, len(x)), replace=False)
    xd = x.astype(np.float64)
    kth = []
    for chunk in np.array_split(rows, max(1, len(rows) // 16)):
        d2 = ((xd[None, :, :] - xd[chunk][:, None, :]) ** 2).sum(axis=2)
        kth.extend(np.sqrt(np.partition(d2, neighbours - 1, axis=1)[:, neighbours - 1]))
    return float(f"{np.median(kth):.3g}")


def run_dbscan(binary, data, eps, min_pts, method, index, repeat, threads, labels_path, timeout_s):
    cmd = [binary, "dbscan", data, "--eps", str(eps), "--min-pts", str(min_pts), "--method", method, "--index", index,
           "--repeat", str(repeat), "--warmup", "1", "--labels", labels_path, "--quiet"]
    if threads and not binary.endswith("-seq"):
        cmd += ["--threads", str(threads)]
    return run_with_report(cmd, timeout_s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="bin", help="folder with pragmaclust-<variant> (default bin)")
    ap.add_argument("--variants", default="seq,omp,gpu")
    ap.add_argument("--methods", default="union-find,chains")
    ap.add_argument("--index", default="grid", help="grid, directory or none (default grid)")
    ap.add_argument("--dims", default="2,3")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--min-pts", type=int, default=10)
    ap.add_argument("--eps", type=float, help="use this eps instead of the one for ~30 neighbours")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs for omp and gpu (default 5)")
    ap.add_argument("--seq-repeat", type=int, default=1, help="timed runs for seq (default 1)")
    ap.add_argument("--threads", type=int, default=0, help="omp threads and sklearn n_jobs (default: all)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds allowed per program run (default 120)")
    ap.add_argument("--sklearn", action="store_true", help="also time scikit-learn's DBSCAN and compare its labels")
    ap.add_argument("--csv", help="also write the rows to this CSV file")
    args = ap.parse_args()

    rows = []
    header = (f"{'case':<18} {'variant':<7} {'method':<10} {'total ms':>9} {'no-xfer ms':>10} "
              + " ".join(f"{p:>7}" for p in PHASES) + f" {'clusters':>8} {'noise':>7}  same  where")
    with tempfile.TemporaryDirectory() as tmp:
        for d in (int(v) for v in args.dims.split(",")):
            spec = f"gen:blobs:n={args.n},d={d},centers=20,std=0.04,box=1,noise=0.05,seed=5"
            data = os.path.join(tmp, f"blobs{d}.npy")
            x = generate(os.path.join(args.bin, "pragmaclust-seq"), spec, data)
            eps = args.eps or eps_for_neighbours(x, NEIGHBOURS, 512)
            case = f"n={args.n} d={d}"
            print(f"\n{case}: {spec}, eps={eps} (median point has ~{NEIGHBOURS} neighbours), MinPts={args.min_pts}")
            print(header)
            print("-" * len(header))
            reference = None
            for variant in args.variants.split(","):
                binary = os.path.join(args.bin, f"pragmaclust-{variant}")
                for method in args.methods.split(","):
                    labels_path = os.path.join(tmp, f"labels-{variant}-{method}.npy")
                    repeat = args.seq_repeat if variant == "seq" else args.repeat
                    rep, err = run_dbscan(binary, data, eps, args.min_pts, method, args.index, repeat, args.threads, labels_path,
                                          args.timeout)
                    if err:
                        print(f"{case:<18} {variant:<7} {method:<10} {err}")
                        continue
                    labels = np.load(labels_path)
                    if reference is None:
                        reference = labels
                    same = "yes" if np.array_equal(labels, reference) else "NO"
                    t = rep["timing"]
                    total = t["total_s"]["median"]
                    ph = {p: t["phases_s"][p]["median"] for p in PHASES}
                    compute = total - ph["h2d"] - ph["d2h"]
                    print(f"{case:<18} {variant:<7} {method:<10} {total*1e3:>9.1f} {compute*1e3:>10.1f} "
                          + " ".join(f"{ph[p]*1e3:>7.1f}" for p in PHASES)
                          + f" {rep['clusters']:>8} {rep['noise']:>7}  {same:<4}  {rep['device']['where']}")
                    sys.stdout.flush()
                    rows.append([args.n, d, eps, args.min_pts, variant, method, args.index, total, compute]
                                + [ph[p] for p in PHASES] + [rep["clusters"], rep["core"], rep["border"], rep["noise"], same,
                                                             rep["device"]["where"]])
            if args.sklearn:
                try:
                    from sklearn.cluster import DBSCAN
                except ImportError:
                    print(f"{case:<18} sklearn  not importable")
                    continue
                start = time.perf_counter()
                sk = DBSCAN(eps=eps, min_samples=args.min_pts, n_jobs=args.threads or -1).fit(x.astype(np.float64))
                elapsed = time.perf_counter() - start
                same = "yes" if reference is not None and np.array_equal(sk.labels_, reference) else "NO"
                print(f"{case:<18} {'sklearn':<7} {'kd-tree':<10} {elapsed*1e3:>9.1f} {'':>10} "
                      + " ".join(f"{'':>7}" for _ in PHASES)
                      + f" {sk.labels_.max() + 1:>8} {(sk.labels_ < 0).sum():>7}  {same:<4}  host, n_jobs={args.threads or 'all'}")
                rows.append([args.n, d, eps, args.min_pts, "sklearn", "kd-tree", "", elapsed, elapsed] + [""] * len(PHASES)
                            + [sk.labels_.max() + 1, "", "", (sk.labels_ < 0).sum(), same, "host"])
    if args.csv:
        import csv
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["n", "d", "eps", "min_pts", "variant", "method", "index", "total_s", "compute_s"]
                       + [f"{p}_s" for p in PHASES] + ["clusters", "core", "border", "noise", "same_labels", "where"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
