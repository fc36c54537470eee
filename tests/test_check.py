"""--check, the oracle of every subcommand (cli/check.h): after the run, a sample of the results
recomputed by brute force in double. It passes on every subcommand in every variant and kernel
mode (on the GPU machine, with PRAGMACLUST_REQUIRE_GPU=1, the tuned GPU kernels are the ones
checked), and it fails, with the first mismatches and exit status 1 and no output written, on
the planted-fault build (bin/pragmaclust-seq-fault: one wrong value in each result it reads)."""
import json
import os

import pytest

from helpers import Binary, bin_dir, has_tuned_kernels

ON_GPU = os.environ.get("PRAGMACLUST_REQUIRE_GPU") == "1"
EXIT_CHECK_FAILED = 1

BLOBS = "gen:blobs:n=6000,d=4,centers=6,seed=3"
# (name, subcommand arguments, items the check samples): every subcommand with --check
CASES = [
    ("kmeans-converged", ["kmeans", BLOBS, "-k", "6"], 1000),
    ("kmeans-fixed", ["kmeans", BLOBS, "-k", "6", "--iterations", "2"], 1000),
    ("kmeans-dot", ["kmeans", "gen:blobs:n=3000,d=40,centers=20,box=1000,seed=5", "-k", "20", "--distance", "dot",
                    "--iterations", "4"], 1000),
    ("kmeans-host-update", ["kmeans", BLOBS, "-k", "6", "--update", "host", "--init", "kmeans++"], 1000),
    ("kmeans-small", ["kmeans", "gen:uniform:n=50,d=3", "-k", "7"], 50),
    ("dbscan-grid", ["dbscan", "gen:blobs:n=6000,d=2,centers=6,noise=0.05,seed=2", "--eps", "0.3", "--min-pts", "8"], 1000),
    ("dbscan-none-chains", ["dbscan", "gen:blobs:n=3000,d=3,centers=5,noise=0.05", "--eps", "0.5", "--min-pts", "5",
                            "--index", "none", "--method", "chains"], 1000),
    ("dbscan-directory", ["dbscan", "gen:blobs:n=3000,d=3,centers=5,noise=0.05", "--eps", "0.5", "--min-pts", "5",
                          "--index", "directory"], 1000),
    ("dpc-vptree", ["dpc", "gen:blobs:n=6000,d=2,centers=6,seed=2", "--dc", "0.3", "--peaks", "6"], 1000),
    ("dpc-leaf", ["dpc", "gen:blobs:n=4000,d=3,centers=6", "--dc", "0.5", "--peaks", "6", "--rho-search", "leaf",
                  "--delta-search", "leaf"], 1000),
    ("dpc-none-thresholds", ["dpc", "gen:uniform:n=800,d=2", "--dc", "0.05", "--rho-min", "3", "--delta-min", "0.1",
                             "--index", "none"], 800),
    ("dpc-incremental", ["dpc", "gen:blobs:n=4000,d=2,centers=5", "--dc", "0.3", "--peaks", "5", "--base", "2500",
                         "--batch", "700", "--delete", "600"], 1000),
    ("streamkm", ["streamkm", BLOBS, "-k", "6"], 1000),
    ("stream", ["stream", BLOBS, "-k", "6"], 1000),
    ("stream-window", ["stream", BLOBS, "-k", "6", "--window", "2000", "--query-every", "1000"], 1000),
]


def checked_report(binary, args, work, extra=()):
    report = work / "report.json"
    rc, _, err = binary.run(*args, "--check", "--report", report, *extra, timeout=300)
    assert rc == 0, f"{binary.name} {' '.join(args)} --check -> {rc}\n{err}"
    assert "check passed" in err
    return json.loads(report.read_text())


@pytest.mark.parametrize("kernels", ["tuned", "portable"])
@pytest.mark.parametrize("name,args,sampled", CASES, ids=[c[0] for c in CASES])
def test_check_passes(variant, work, kernels, name, args, sampled):
    rep = checked_report(variant, args, work, ("--kernels", kernels))
    assert rep["check"]["passed"] is True
    assert rep["check"]["sampled"] == sampled


@pytest.mark.skipif(not ON_GPU, reason="the tensor-core and cuBLAS distances run on a GPU: PRAGMACLUST_REQUIRE_GPU=1 "
                                       "on a GPU machine")
@pytest.mark.parametrize("distance", ["dot-3xtf32", "dot-tf32", "dot-fp16", "dot-bf16", "gemm", "gemm-tf32"])
def test_check_passes_with_the_gpu_only_distances(gpu, work, distance):
    """The check's tie tolerance covers each distance's rounding (TF32 and fp16: 11-bit
    significands, bf16 8-bit)."""
    if distance.startswith("dot-") and not has_tuned_kernels(gpu):
        pytest.skip(f"{gpu.path} has no tuned kernels (a TOOLCHAIN=gcc build): {distance} needs the tensor-core kernel")
    rep = checked_report(gpu, ["kmeans", "gen:blobs:n=200000,d=64,centers=50,seed=4", "-k", "50", "--distance",
                               distance, "--iterations", "5"], work)
    assert rep["check"]["passed"] is True
    assert rep["params"]["distance"] == distance


def test_check_samples_fewer_points_of_very_large_inputs(seq, work):
    """The brute-force checks of DBSCAN and density peaks cost n per sampled point: at n = 2M
    (d = 2) a check samples 4e9 / (n d) = 1000 points; at 4M, 500."""
    rep = checked_report(seq, ["dbscan", "gen:uniform:n=4000000,d=2,seed=9", "--eps", "0.0005", "--min-pts", "3"], work)
    assert rep["check"]["sampled"] == 500


def test_generate_check(seq, work):
    out = work / "g.npy"
    rc, _, err = seq.run("generate", "gen:blobs:n=3000,d=5,noise=0.1", "--out", out, "--check")
    assert rc == 0, err
    assert "check passed: 1000 rows sampled" in err
    assert out.is_file()


def test_no_check_object_without_check(seq, work):
    report = work / "report.json"
    rc, _, err = seq.run("kmeans", BLOBS, "-k", "6", "--report", report)
    assert rc == 0, err
    assert "check" not in json.loads(report.read_text())
    assert "check passed" not in err


# ---- the planted fault: every check catches a wrong value ------------------------------------

@pytest.fixture(scope="module")
def faulty():
    path = bin_dir() / "pragmaclust-seq-fault"
    if not path.is_file():
        pytest.skip(f"{path} is not built (make bin/pragmaclust-seq-fault)")
    return Binary("seq-fault", path)


OUTPUT_OPTION = {"kmeans": "--labels", "dbscan": "--labels", "dpc": "--labels", "streamkm": "--centres",
                 "stream": "--centres"}


@pytest.mark.parametrize("name,args,sampled", CASES, ids=[c[0] for c in CASES])
def test_check_fails_on_a_planted_fault(faulty, work, name, args, sampled):
    out = work / "out.txt"
    rc, _, err = faulty.run(*args, "--check", OUTPUT_OPTION[args[0]], out)
    assert rc == EXIT_CHECK_FAILED, err
    lines = err.strip().splitlines()
    assert 2 <= len(lines) <= 11  # the first mismatches (at most 10), then the one-line error
    assert all(line.startswith(f"{args[0]} --check: ") for line in lines[:-1])
    assert "--check: the results are wrong" in lines[-1]
    assert list(work.iterdir()) == []  # nothing committed


def test_generate_check_fails_on_a_planted_fault(faulty, work):
    rc, _, err = faulty.run("generate", "gen:uniform:n=100,d=2", "--out", work / "g.txt", "--check")
    assert rc == EXIT_CHECK_FAILED
    assert "generate --check: row 0, column 0:" in err
    assert list(work.iterdir()) == []


def test_check_takes_no_value(seq):
    rc, _, err = seq.run("kmeans", BLOBS, "-k", "3", "--check=yes")
    assert rc == 2
    assert "--check" in err and len(err.strip().splitlines()) == 1
