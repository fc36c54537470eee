#!/usr/bin/env python3
"""bench_mpi.py - strong and weak scaling of the programs across MPI ranks (issue 22).

For each algorithm (kmeans, streamkm, dbscan) and each number of ranks, runs
`mpirun -np R pragmaclust-<variant>-mpi` (built by `make MPI=1`) on generated data:
  strong: the same n for every R (ideal: time / R);
  weak:   n = R * the base size (ideal: the same time).
Each row gives the median time of the runs (the program's own timing, the input's generation
apart), the speedup or the efficiency against one rank, and whether the outputs (labels; and
centroids or centres) are byte for byte those of the one-rank run, which the program must give.
On one machine the ranks share its cores (use --threads to give each rank some) or, in the gpu
variant, its GPUs (rank r takes device local_rank % devices: two ranks on one GPU share it).

  python3 experiments/bench_mpi.py --variant seq --ranks 1,2,4
  python3 experiments/bench_mpi.py --variant gpu --ranks 1,2 --mpirun <bundle>/bin/mpirun
"""
import argparse
import filecmp
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import run_with_report  # noqa: E402

# Per algorithm: its arguments (n from the scaling, {n} filled in) and the outputs compared.
ALGORITHMS = {
    "kmeans": (["kmeans", "gen:uniform:n={n},d=16,seed=7", "-k", "64", "--iterations", "10"],
               ["--labels", "--centroids"]),
    "streamkm": (["streamkm", "gen:blobs:n={n},d=8,centers=16,seed=7", "-k", "16", "--repetitions", "6"],
                 ["--labels", "--centres"]),
    "dbscan": (["dbscan", "gen:uniform:n={n},d=2,seed=7", "--eps", "{eps}", "--min-pts", "10"], ["--labels"]),
}


def dbscan_eps(n):
    """An eps that gives about 30 neighbours a point in the unit square, whatever n."""
    return f"{(30 / (3.14159 * n)) ** 0.5:.6g}"


def one_run(args, algorithm, n, ranks, out_dir):
    """(median seconds, the output files) of one algorithm at n on `ranks` ranks, or (None, why)."""
    template, outputs = ALGORITHMS[algorithm]
    values = {"n": n, "eps": dbscan_eps(n)}
    files = [out_dir / f"{algorithm}-{n}-{ranks}{flag.replace('--', '.')}.npy" for flag in outputs]
    program = Path(args.bin) / f"pragmaclust-{args.variant}-mpi"
    cmd = [args.mpirun, "-np", str(ranks), "--oversubscribe", str(program)]
    cmd += [a.format(**values) for a in template]
    cmd += ["--repeat", str(args.repeat), "--quiet"] + (["--threads", str(args.threads)] if args.threads else [])
    for flag, path in zip(outputs, files):
        cmd += [flag, str(path)]
    report, why = run_with_report(cmd, args.timeout, say_why=True)
    if report is None:
        return None, why
    return statistics.median(r["total_s"] for r in report["runs"]), files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="bin", help="folder with pragmaclust-<variant>-mpi (default bin)")
    ap.add_argument("--variant", default="seq", choices=["seq", "omp", "gpu"])
    ap.add_argument("--ranks", default="1,2,4", help="numbers of ranks, the first being the baseline (default 1,2,4)")
    ap.add_argument("--algorithms", default="kmeans,streamkm,dbscan")
    ap.add_argument("--n", type=int, default=2000000, help="strong scaling's n and weak scaling's n per rank")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per row (default 3)")
    ap.add_argument("--threads", type=int, default=0, help="OpenMP threads per rank (omp variant; default: the runtime's)")
    ap.add_argument("--mpirun", default=os.environ.get("PRAGMACLUST_MPIRUN", "mpirun"),
                    help="the MPI launcher (default mpirun, or $PRAGMACLUST_MPIRUN)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds allowed per program run (default 600)")
    args = ap.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    algorithms = args.algorithms.split(",")
    if any(a not in ALGORITHMS for a in algorithms) or any(r < 1 for r in ranks) or args.n < 1 or args.repeat < 1:
        sys.exit(f"bench_mpi.py: error: algorithms are {', '.join(ALGORITHMS)}; ranks, --n and --repeat are >= 1")
    program = Path(args.bin) / f"pragmaclust-{args.variant}-mpi"
    if not program.exists() or shutil.which(args.mpirun) is None:
        sys.exit(f"bench_mpi.py: error: {program} or {args.mpirun} missing (make MPI=1; variants/install-toolchain.sh "
                 "--mpi)")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")  # Open MPI refuses root without these
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if not args.threads:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(tmp)
        for scaling in ("strong", "weak"):
            print(f"\n{scaling} scaling, {args.variant} variant, n = {args.n}" + (" per rank" if scaling == "weak" else ""))
            gain = "speedup" if scaling == "strong" else "efficiency"
            print(f"| algorithm | ranks | n | time (s) | {gain} | same outputs as 1 rank |")
            print("|---|---:|---:|---:|---:|---|")
            for algorithm in algorithms:
                base_time, base_files = None, None
                for r in ranks:
                    n = args.n * (r if scaling == "weak" else 1)
                    seconds, files = one_run(args, algorithm, n, r, out_dir)
                    if seconds is None:
                        print(f"| {algorithm} | {r} | {n} | failed: {files} | | |")
                        failed = True
                        continue
                    if r == ranks[0]:
                        base_time = seconds
                    if scaling == "strong" and r == ranks[0]:
                        base_files = files
                    ratio = "" if base_time is None else (
                        f"{base_time / seconds:.2f}x" if scaling == "strong" else f"{base_time / seconds:.2f}")
                    # strong scaling: byte for byte the first count's outputs; weak: each n its own data
                    if scaling == "strong" and base_files:
                        same = all(filecmp.cmp(a, b, shallow=False) for a, b in zip(base_files, files))
                        failed |= not same
                        same_text = "yes" if same else "**no**"
                    else:
                        same_text = "n/a (weak: other data)"
                    print(f"| {algorithm} | {r} | {n} | {seconds:.4g} | {ratio} | {same_text} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
