#!/usr/bin/env python3
"""bench_dpc.py - the density peaks (GDPC) benchmark and GDPC's section-6 experiments (not tests).

bench (the issue's performance case): n = 1M two-dimensional points, 20 Gaussian clusters plus 5%
uniform noise (`gen:blobs:n=N,d=2,centers=20,std=0.04,box=1,noise=0.05,seed=5`, written once to
.npy by `pragmaclust-seq generate`); d_c chosen so that the mean rho is about 50 (over a sample of
points, the distance below which their neighbour counts average 50, rounded to 3 significant
digits; the report's measured mean rho is printed). For each variant: the VP-tree run (median of
--repeat after one warm-up; phases tree_build, rho, delta, assignment, transfers; distance
computations), the labels compared with the first variant's; then the incremental case: the
first N rows as the base and --batches batches of 1000 more rows, per-batch median time and phases,
and after each batch the recomputation from scratch, timed (restart) and compared (--no-verify
skips it).
Targets (issue 6): gpu under 0.5 s in total, omp on 16 cores under 3 s, a batch under 20 ms.
--rho-search point,leaf and --delta-search point,leaf (default point each) add a row per pair of
search methods to the from-scratch tables (bench, paper's runtime and scaling tables; "searches"
rho/delta); the incremental batches always search per point.

paper (GDPC section 6 on this data): runtime per data set and phase for aggregation and s2 (from
--data-dir) and synthetic sets of the same shape (named synthetic-...), distance computations of
the VP-tree against all pairs, scaling from 2^13 to 2^19 points (synthetic, tree build and rho),
and the incremental response time per batch of 1000 points from 10% of a data set against
recomputing from scratch. `make experiments` runs these experiments through the runner
(experiments/gdpc_datasets.toml, gdpc_scaling.toml, gdpc_incremental.toml), into its tables and figures.

  experiments/bench_dpc.py [--bin DIR] [--what bench,paper] [--variants gpu,omp,seq] [--n 1000000]
                           [--rho-search point,leaf] [--delta-search point,leaf]
Needs numpy. Exit status 0 even when a variant is missing (its rows say why); 1 when labels differ.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

from bench_common import run_with_report

PHASES = ["tree_build", "rho", "delta", "assignment", "transfers"]
SPEC = "gen:blobs:n={n},d=2,centers=20,std=0.04,box=1,noise=0.05,seed=5"


def generate(seq_binary, spec, path):
    subprocess.run([seq_binary, "generate", spec, "--out", path], check=True)
    return np.load(path)


def dc_for_mean_rho(x, mean_rho, sample=256, seed=1):
    """The d_c at which the sampled points' neighbour counts (themselves included) average mean_rho."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(x), size=min(sample, len(x)), replace=False)
    xd = x.astype(np.float64)
    kept = []
    for chunk in np.array_split(rows, max(1, len(rows) // 8)):
        d2 = ((xd[None, :, :] - xd[chunk][:, None, :]) ** 2).sum(axis=2)
        k = min(d2.shape[1], 4 * mean_rho)
        kept.append(np.sort(np.partition(d2, k - 1, axis=1)[:, :k], axis=1))
    allk = np.sort(np.concatenate(kept).ravel())
    target = mean_rho * len(rows)  # counts below d_c summed over the sample
    dc = np.sqrt(0.5 * (allk[target - 1] + allk[target]))
    return float(f"{dc:.3g}")


def dpc_cmd(binary, data, *args, threads=0):
    cmd = [binary, "dpc", data, *map(str, args), "--quiet"]
    if threads and not binary.endswith("-seq"):
        cmd += ["--threads", str(threads)]
    return cmd


def phase_ms(rep):
    return {p: rep["timing"]["phases_s"][p]["median"] * 1e3 for p in PHASES}


def bench(args, tmp):
    n, batches = args.n, args.batches
    data = os.path.join(tmp, "blobs.npy")
    x = generate(os.path.join(args.bin, "pragmaclust-seq"), SPEC.format(n=n + 1000 * batches), data)
    dc = args.dc or dc_for_mean_rho(x[:n], 50)
    base = os.path.join(tmp, "base.npy")
    np.save(base, x[:n])
    print(f"\nDPC benchmark: {SPEC.format(n=n)} (+{batches} x 1000 rows for the batches), d_c = {dc}, "
          f"peaks = 20, index vptree")
    header = (f"{'variant':<7} {'searches':<11} {'total ms':>9} " + " ".join(f"{p:>10}" for p in PHASES)
              + f" {'distances':>12} {'mean rho':>8} {'clusters':>8}  same  where")
    print(header)
    print("-" * len(header))
    reference, bad = None, False
    for variant in args.variants.split(","):
        binary = os.path.join(args.bin, f"pragmaclust-{variant}")
        repeat = args.seq_repeat if variant == "seq" else args.repeat
        for search in searches(args):
            labels = os.path.join(tmp, f"labels-{variant}-{search.replace('/', '-')}.npy")
            rep, err = run_with_report(dpc_cmd(binary, base, "--dc", dc, "--peaks", 20, *search_args(search),
                                               "--repeat", repeat, "--warmup", 1 if variant != "seq" else 0,
                                               "--labels", labels, threads=args.threads), args.timeout)
            if err:
                print(f"{variant:<7} {search:<11} {err}")
                continue
            lab = np.load(labels)
            reference = lab if reference is None else reference
            same = np.array_equal(lab, reference)
            bad |= not same
            ph = phase_ms(rep)
            print(f"{variant:<7} {search:<11} {rep['timing']['total_s']['median'] * 1e3:>9.1f} "
                  + " ".join(f"{ph[p]:>10.1f}" for p in PHASES)
                  + f" {rep['distance_computations']:>12} {rep['rho_mean']:>8.1f} {rep['clusters']:>8}  "
                  + f"{'yes' if same else 'NO':<4}  {rep['device']['where']}")
            sys.stdout.flush()
    print(f"\nIncremental: base {n} rows, {batches} batches of 1000 (rho update {args.rho_update})")
    header = (f"{'variant':<7} {'batch ms':>9} " + " ".join(f"{p:>10}" for p in PHASES[:4])
              + f" {'distances':>12} {'restart ms':>10}  where")
    print(header)
    print("-" * len(header))
    for variant in args.variants.split(","):
        if variant == "seq" and not args.seq_incremental:
            continue
        binary = os.path.join(args.bin, f"pragmaclust-{variant}")
        extra = ["--verify"] if args.verify else []
        rep, err = run_with_report(dpc_cmd(binary, data, "--dc", dc, "--peaks", 20, "--base", n, "--batch", 1000,
                                           "--rho-update", args.rho_update, *extra, threads=args.threads), args.timeout)
        if err:
            print(f"{variant:<7} {err}")
            bad |= "differs from recomputation" in err
            continue
        b = rep["batches"]
        med = lambda key: float(np.median([v[key] for v in b])) * 1e3  # noqa: E731
        restart = f"{med('restart_s'):>10.1f}" if args.verify else f"{'-':>10}"
        print(f"{variant:<7} {med('total_s'):>9.2f} " + " ".join(f"{med(p):>10.2f}" for p in PHASES[:4])
              + f" {int(np.median([v['distance_computations'] for v in b])):>12} {restart}  {rep['device']['where']}")
        sys.stdout.flush()
    return bad


def paper(args, tmp):
    """GDPC section 6 on the variants given: per data set and phase, distances, scaling, incremental."""
    seq = os.path.join(args.bin, "pragmaclust-seq")
    sets = []
    for name, k in (("aggregation", 7), ("s2", 15)):
        path = os.path.join(args.data_dir, f"{name}.txt")
        if os.path.exists(path):
            sets.append((name, path, k))
        else:
            print(f"{name}: not in {args.data_dir}, skipped")
    for n in args.synthetic:
        path = os.path.join(tmp, f"synthetic-{n}.npy")
        generate(seq, SPEC.format(n=n), path)
        sets.append((f"synthetic-{n}", path, 20))
    print("\nRuntime per data set and phase (ms; d_c by the 2% rule, peaks = true k), distances: VP-tree / all pairs")
    header = (f"{'data set':<18} {'variant':<7} {'index':<18} {'total':>9} " + " ".join(f"{p:>10}" for p in PHASES)
              + f" {'distances':>12} {'all pairs':>14} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    modes = [("vptree", s) for s in searches(args)] + [("none", "point/point")]
    for name, path, k in sets:
        for variant in args.variants.split(","):
            binary = os.path.join(args.bin, f"pragmaclust-{variant}")
            for index, search in modes:
                if index == "none" and not name.startswith(("aggregation", "s2")) and variant != "gpu":
                    continue  # all pairs of 10^5+ points: gpu only
                label = index if index == "none" else f"{index}/{search}"
                rep, err = run_with_report(dpc_cmd(binary, path, "--dc-percent", 2, "--peaks", k, "--index", index,
                                                   *search_args(search), "--repeat", 3, "--warmup", 1,
                                                   threads=args.threads), args.timeout)
                if err:
                    print(f"{name:<18} {variant:<7} {label:<18} {err}")
                    continue
                ph = phase_ms(rep)
                print(f"{name:<18} {variant:<7} {label:<18} {rep['timing']['total_s']['median'] * 1e3:>9.2f} "
                      + " ".join(f"{ph[p]:>10.2f}" for p in PHASES)
                      + f" {rep['distance_computations']:>12} {int(rep['all_pairs_distance_computations']):>14} "
                      + f"{rep['distance_computations'] / rep['all_pairs_distance_computations']:>7.4f}")
                sys.stdout.flush()
    top = args.scale_max
    print(f"\nScaling (synthetic, d_c for mean rho ~50 at 2^{top} scaled by sqrt(2^{top}/n); ms)")
    big = generate(seq, SPEC.format(n=1 << top), os.path.join(tmp, "scale.npy"))
    dc_top = dc_for_mean_rho(big, 50)
    header = f"{'n':>8} {'variant':<7} {'searches':<11} {'tree_build':>10} {'rho':>10} {'total':>10} {'distances':>12}"
    print(header)
    print("-" * len(header))
    for e in range(13, top + 1):
        n = 1 << e
        path = os.path.join(tmp, f"scale-{n}.npy")
        np.save(path, big[:n])
        dc = float(f"{dc_top * np.sqrt((1 << top) / n):.3g}")
        for variant in args.variants.split(","):
            binary = os.path.join(args.bin, f"pragmaclust-{variant}")
            for search in searches(args):
                rep, err = run_with_report(dpc_cmd(binary, path, "--dc", dc, "--peaks", 20, *search_args(search),
                                                   "--repeat", 3, "--warmup", 1, threads=args.threads), args.timeout)
                if err:
                    print(f"{n:>8} {variant:<7} {search:<11} {err}")
                    continue
                ph = phase_ms(rep)
                print(f"{n:>8} {variant:<7} {search:<11} {ph['tree_build']:>10.2f} {ph['rho']:>10.2f} "
                      + f"{rep['timing']['total_s']['median'] * 1e3:>10.2f} {rep['distance_computations']:>12}")
                sys.stdout.flush()
    print(f"\nIncremental: 10% of the data set as the base, then at most {args.paper_batches} batches of 1000 "
          "(ms per batch: incremental, restart)")
    header = f"{'data set':<18} {'variant':<7} {'batch':>6} {'n':>8} {'incremental':>11} {'restart':>9} {'tree':>8} {'rho':>8} {'delta':>8}"
    print(header)
    print("-" * len(header))
    for name, path, k in sets:
        x = np.load(path) if path.endswith(".npy") else np.loadtxt(path, dtype=np.float32, ndmin=2)
        base = max(1, len(x) // 10)
        part = os.path.join(tmp, f"incremental-{name}.npy")
        np.save(part, x[:base + 1000 * args.paper_batches].astype(np.float32))
        for variant in args.variants.split(","):
            binary = os.path.join(args.bin, f"pragmaclust-{variant}")
            rep, err = run_with_report(dpc_cmd(binary, part, "--dc-percent", 2, "--peaks", k, "--base", base,
                                               "--batch", 1000, "--verify", threads=args.threads), args.timeout)
            if err:
                print(f"{name:<18} {variant:<7} {err}")
                continue
            for i, b in enumerate(rep["batches"]):
                if i < 5 or i == len(rep["batches"]) - 1:
                    print(f"{name:<18} {variant:<7} {i + 1:>6} {b['n']:>8} {b['total_s'] * 1e3:>11.2f} "
                          + f"{b['restart_s'] * 1e3:>9.2f} {b['tree_build'] * 1e3:>8.2f} {b['rho'] * 1e3:>8.2f} "
                          + f"{b['delta'] * 1e3:>8.2f}")
            sys.stdout.flush()
    return False


def searches(args):
    """The rows' pairs of search methods, "rho/delta"."""
    return [f"{r}/{d}" for r in args.rho_search for d in args.delta_search]


def search_args(search):
    rho, delta = search.split("/")
    return ["--rho-search", rho, "--delta-search", delta]


def search_list(value):
    out = value.split(",")
    if not out or any(v not in ("point", "leaf") for v in out):
        raise argparse.ArgumentTypeError(f"expected point, leaf or point,leaf, got {value!r}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("PRAGMACLUST_BIN", "bin"), help="folder with pragmaclust-<variant>")
    ap.add_argument("--what", default="bench", help="bench, paper or both (bench,paper)")
    ap.add_argument("--variants", default="gpu,omp,seq")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--dc", type=float, help="use this d_c instead of the one for mean rho ~50")
    ap.add_argument("--batches", type=int, default=5, help="incremental batches of 1000 (default 5)")
    ap.add_argument("--rho-update", default="incidental", choices=("incidental", "separate"))
    ap.add_argument("--rho-search", default=["point"], type=search_list,
                    help="from-scratch rho: point, leaf or point,leaf (a row each; default point)")
    ap.add_argument("--delta-search", default=["point"], type=search_list,
                    help="from-scratch delta: point, leaf or point,leaf (a row per pair with --rho-search)")
    ap.add_argument("--no-verify", dest="verify", action="store_false",
                    help="incremental: skip the recomputation after each batch (by default timed as restart_s and "
                         "compared: exit 1 on any difference)")
    ap.add_argument("--seq-incremental", action="store_true", help="also run the incremental case with seq")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs for omp and gpu (default 5)")
    ap.add_argument("--seq-repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="omp threads (default: all)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per program run (default 600)")
    ap.add_argument("--data-dir", default=os.environ.get("DATA_DIR", "data"), help="paper: aggregation.txt and s2.txt")
    ap.add_argument("--synthetic", type=lambda v: [int(t) for t in v.split(",")], default=[100000, 500000],
                    help="paper: sizes of the synthetic sets (default 100000,500000)")
    ap.add_argument("--scale-max", type=int, default=19, help="paper: scaling from 2^13 to 2^this (default 19)")
    ap.add_argument("--paper-batches", type=int, default=20, help="paper: incremental batches per data set (default 20)")
    args = ap.parse_args()
    bad = False
    with tempfile.TemporaryDirectory() as tmp:
        if "bench" in args.what:
            bad |= bench(args, tmp)
        if "paper" in args.what:
            bad |= paper(args, tmp)
    if bad:
        print("\nlabels differ between variants", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
