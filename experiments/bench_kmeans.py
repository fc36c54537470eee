#!/usr/bin/env python3
"""bench_kmeans.py - per-iteration k-means benchmark of the three variants (not a test).

Runs `pragmaclust-<variant> kmeans gen:uniform:... --iterations N --warmup 1` for each case
and variant and prints, from the JSON reports: per-iteration time (median of the N timed
iterations), GFLOP/s counted as 2nkd per iteration, the fraction of the float32 floor (2nkd at
--peak-tflops, 60 for an H100/H200), and the phase split (assign = distances and labels;
update = sums, counts, new centroids and the next distance tiles; the last column names how the
sums were taken, the report's update_sums). When the gpu variant runs on
a GPU it adds rows for `--distance dot-3xtf32` (the dot products on the TF32 tensor cores, each
float split into two TF32 parts: about float32's accuracy), `dot-tf32` (the same kernel in one
TF32 product: PyTorch's allow_tf32 precision), `dot-fp16` and `dot-bf16` (the 16-bit tensor
cores), `gemm` and `gemm-tf32` (the dot
products from cuBLAS' SGEMM in float32 and TF32; --gemm no leaves these two out; cuBLAS as the
program finds it, see PRAGMACLUST_CUBLAS in the README). Where PyTorch with CUDA is importable it adds PyTorch fp32
and TF32 rows (reference_kmeans.py), where Flash-KMeans is (installed, or a checkout given by --flash) its
TF32 and fp16 rows, and with --sklearn scikit-learn's Lloyd on the host.
Every variant runs with each of --kernels (default tuned,portable): the build's tuned assign
kernels (rows named by the variant) and the portable OpenMP loop (rows "<variant> portable"), so
that what the tuned extensions buy stands beside what standard OpenMP gives.

  experiments/bench_kmeans.py [--bin DIR] [--variants seq,omp,gpu] [--kernels tuned,portable]
                              [--cases issue|odd|NxDxK,...]
"""
import argparse
import csv
import os
import sys

from bench_common import run_with_report
import reference_kmeans

# The four shapes, and shapes between them with nothing a multiple of anything.
CASE_SETS = {
    "issue": "1000000x64x1000,4000000x8x256,1000000x16x64,100000x1000x1000",
    "odd": "2000003x2x7,1500007x5x100,777777x37x129,300007x130x700,100003x515x257,60013x1000x999",
    "flash": "1000000x64x1000,1000000x16x64,100000x1000x1000,3000000x37x509,1000000x128x4096",  # issue 25's
}


def run_variant(binary, n, d, k, iterations, extra, name=None):
    """One row; `name` (the gemm rows) also asks for the program's reason when it exits 3."""
    rep, err = run_with_report([binary, "kmeans", f"gen:uniform:n={n},d={d},seed=7", "-k", str(k), "--iterations",
                                str(iterations), "--warmup", "1", "--quiet"] + extra, say_why=name is not None)
    name = name or binary.rsplit("-", 1)[-1]
    if err:
        return name, err
    t, its = rep["timing"], rep["iterations"]
    return {"name": name, "iteration_s": t["iteration_s"]["median"],
            "assign_s": t["phases_s"]["assign"]["median"] / its, "update_s": t["phases_s"]["update"]["median"] / its,
            "device": rep["device"]["where"], "splits": rep.get("centroid_splits", 1), "sums": rep.get("update_sums"),
            "kernels": rep.get("assign_kernels", "")}, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="bin", help="folder with pragmaclust-<variant> (default bin)")
    ap.add_argument("--variants", default="seq,omp,gpu")
    ap.add_argument("--kernels", default="tuned,portable",
                    help="assign kernels to run each variant with: tuned, portable or both (default both)")
    ap.add_argument("--cases", default="issue",
                    help="issue, odd, flash, or comma-separated NxDxK (sets combine: issue,odd)")
    ap.add_argument("--iterations", type=int, default=20, help="timed iterations per run (default 20)")
    ap.add_argument("--seq-iterations", type=int, help="timed iterations for seq (default: --iterations)")
    ap.add_argument("--distance", default="dot", choices=["dot", "direct", "auto"])
    ap.add_argument("--update", default="device", choices=["device", "host"])
    ap.add_argument("--gemm", default="yes", choices=["yes", "no"],
                    help="gpu on a GPU: also rows for --distance gemm and gemm-tf32 (default yes)")
    ap.add_argument("--peak-tflops", type=float, default=60.0, help="float32 rate of the floor (default 60)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch even where it is importable")
    ap.add_argument("--flash", metavar="DIR",
                    help="a checkout of Flash-KMeans (svg-project/flash-kmeans) to time beside ours; without it, "
                         "its rows come where the package is installed")
    ap.add_argument("--sklearn", type=int, metavar="THREADS", help="also time scikit-learn with THREADS threads")
    ap.add_argument("--csv", help="also write the rows to this CSV file")
    args = ap.parse_args()

    cases = []
    for item in args.cases.split(","):
        cases += CASE_SETS[item].split(",") if item in CASE_SETS else [item]
    use_torch = not args.no_torch and reference_kmeans.torch_available()
    if args.flash and not os.path.isdir(os.path.join(args.flash, "flash_kmeans")):
        sys.exit(f"bench_kmeans.py: --flash {args.flash}: no flash_kmeans/ package there (give the checkout's root)")
    flash = reference_kmeans.flash_import(args.flash) if use_torch or args.flash else None
    if args.flash and flash is None:
        sys.exit(f"bench_kmeans.py: --flash {args.flash}: flash_kmeans does not import here (it needs PyTorch with "
                 "CUDA and Triton)")
    if args.sklearn and not reference_kmeans.sklearn_available():
        sys.exit("bench_kmeans.py: --sklearn needs scikit-learn and threadpoolctl")

    header = (f"{'case (n x d, k)':<24} {'impl':<15} {'ms/iter':>9} {'GFLOP/s':>8} {'floor':>6} "
              f"{'assign ms':>9} {'update ms':>9}  where")
    print(header)
    print("-" * len(header))
    rows = []
    for case in cases:
        n, d, k = (int(v) for v in case.lower().split("x"))
        flop = 2.0 * n * d * k
        floor_s = flop / (args.peak_tflops * 1e12)
        label = f"{n}x{d}, k={k}"
        results = []
        for variant in args.variants.split(","):
            its = args.seq_iterations if variant == "seq" and args.seq_iterations else args.iterations
            binary = os.path.join(args.bin, f"pragmaclust-{variant}")
            for mode in args.kernels.split(","):
                # tuned is the programs' default: not passed, so that builds older than --kernels run too
                results.append(run_variant(binary, n, d, k, its, ["--update", args.update, "--distance", args.distance]
                                           + ([] if mode == "tuned" else ["--kernels", mode]),
                                           name=None if mode == "tuned" else f"{variant} {mode}"))
            on_gpu = isinstance(results[-1][0], dict) and results[-1][0]["device"].startswith("GPU")
            if variant == "gpu" and on_gpu:
                for distance in ("dot-3xtf32", "dot-tf32", "dot-fp16", "dot-bf16") + (
                        ("gemm", "gemm-tf32") if args.gemm == "yes" else ()):
                    results.append(run_variant(binary, n, d, k, its, ["--update", args.update, "--distance", distance],
                                               name=f"gpu {distance}"))
        if use_torch:
            for tf32 in (False, True):
                results.append((reference_kmeans.torch_kmeans(n, d, k, iterations=args.iterations, tf32=tf32), None))
        if flash is not None:
            for precision in ("tf32", "fp16"):
                results.append((reference_kmeans.flash_kmeans(flash, n, d, k, iterations=args.iterations,
                                                              precision=precision), None))
        if args.sklearn:
            results.append((reference_kmeans.sklearn_kmeans(n, d, k, threads=args.sklearn), None))
        for res, err in results:
            if err:
                print(f"{label:<24} {res:<15} {err}")
                continue
            per_iter = res["iteration_s"]
            split = [f"{res[p] * 1e3:>9.3f}" if res[p] is not None else f"{'':>9}" for p in ("assign_s", "update_s")]
            where = res["device"] + (f", centroids in {res['splits']} ranges" if res.get("splits", 1) > 1 else "")
            where += f", sums {res['sums']}" if res.get("sums") else ""
            where += f", {res['kernels']}" if res.get("kernels") else ""
            print(f"{label:<24} {res['name']:<15} {per_iter * 1e3:>9.3f} {flop / per_iter * 1e-9:>8.0f} "
                  f"{floor_s / per_iter:>6.1%} {split[0]} {split[1]}  {where}")
            sys.stdout.flush()
            rows.append([n, d, k, res["name"], per_iter, flop / per_iter * 1e-9, floor_s / per_iter, res["assign_s"],
                         res["update_s"], res["device"], res.get("sums") or ""])
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["n", "d", "k", "impl", "iteration_s", "gflops", "floor_fraction", "assign_s", "update_s", "where", "update_sums"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
