"""k-means across MPI ranks (issue 22, common/dist.h): bin/pragmaclust-{seq,omp}-mpi under
`mpirun -np 1..4 --oversubscribe` give the labels and centroids of the one-process program, byte
for byte (the fixed-point sums are exact integers, combined with MPI_Allreduce); a rank may hold
no point; bad input is reported once, by rank 0, with exit status 2 and no output file; what
does not run across ranks yet says so. `make test` builds the MPI programs and installs Open MPI
(variants/install-toolchain.sh --tests)."""
import os
import shutil

import numpy as np
import pytest

from helpers import bin_dir, run

NP = [1, 2, 3, 4]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",   # CI runs as root
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMP_NUM_THREADS": "1"}


def mpi_program(variant):
    program = bin_dir() / f"pragmaclust-{variant}-mpi"
    if shutil.which("mpirun") is None or not program.exists():
        pytest.fail(f"{program.name} or mpirun missing: `make test` builds it and installs Open MPI")
    return program


def mpirun(np_, program, *args):
    return run(["mpirun", "-np", str(np_), "--oversubscribe", program, *args], timeout=120, env=MPI_ENV)


def kmeans_outputs(cmd, tmp_path, tag, args):
    labels, centroids = tmp_path / f"{tag}.labels.npy", tmp_path / f"{tag}.centroids.npy"
    rc, _, err = cmd(*args, "--labels", labels, "--centroids", centroids, "--quiet")
    assert rc == 0, err
    return labels.read_bytes(), centroids.read_bytes()


@pytest.fixture(scope="module")
def near_ties(tmp_path_factory):
    """Points on a coarse lattice: many exactly equidistant from two centroids, where any
    difference in the order of the sums would move a label."""
    rng = np.random.default_rng(5)
    x = (rng.integers(0, 9, size=(3001, 3)) / 8).astype(np.float32)
    path = tmp_path_factory.mktemp("data") / "lattice.npy"
    np.save(path, x)
    return path


CASES = {
    "uniform": ["kmeans", "gen:uniform:n=20000,d=4,seed=9", "-k", "9"],
    "blobs, host update": ["kmeans", "gen:blobs:n=30000,d=6,centers=8,seed=2", "-k", "8", "--update", "host"],
    "fixed iterations, dot": ["kmeans", "gen:uniform:n=5000,d=17,seed=3", "-k", "40", "--iterations", "7",
                              "--distance", "dot"],
}


@pytest.mark.parametrize("variant", ["seq", "omp"])
@pytest.mark.parametrize("case", list(CASES) + ["near ties", "file init", "raw float32"])
def test_kmeans_across_ranks_is_one_process(variant, case, tmp_path, near_ties):
    if case == "near ties":
        args = ["kmeans", near_ties, "-k", "6"]
    elif case == "raw float32":
        raw = tmp_path / "points.f32"
        np.load(near_ties).astype("<f4").tofile(raw)
        args = ["kmeans", raw, "--shape", "3001,3", "-k", "5"]
    elif case == "file init":
        init = tmp_path / "init.txt"
        init.write_text("0 0 0\n1 1 1\n0 1 0\n1 0 1\n")
        args = ["kmeans", near_ties, "-k", "4", "--init", init]
    else:
        args = CASES[case]
    one = kmeans_outputs(lambda *a: run([bin_dir() / f"pragmaclust-{variant}", *a]), tmp_path, "one", args)
    program = mpi_program(variant)
    for np_ in NP:
        many = kmeans_outputs(lambda *a: mpirun(np_, program, *a), tmp_path, f"np{np_}", args)
        assert many[0] == one[0], f"labels differ with {np_} ranks"
        assert many[1] == one[1], f"centroids differ with {np_} ranks"


def test_a_rank_without_points(tmp_path):
    """3 points on 4 ranks: rank 0 holds none (its slice is empty), the result is still one
    process's."""
    args = ["kmeans", "gen:uniform:n=3,d=2,seed=1", "-k", "2"]
    one = kmeans_outputs(lambda *a: run([bin_dir() / "pragmaclust-seq", *a]), tmp_path, "one", args)
    many = kmeans_outputs(lambda *a: mpirun(4, mpi_program("omp"), *a), tmp_path, "four", args)
    assert many == one


def test_report_and_summary_come_from_rank_zero(tmp_path):
    report = tmp_path / "r.json"
    rc, out, err = mpirun(3, mpi_program("seq"), "kmeans", "gen:uniform:n=1000,d=2", "-k", "3", "--report", report)
    assert rc == 0, err
    assert err.count("kmeans [seq") == 1, err           # one summary line, not one per rank
    assert "3 MPI ranks" in err
    import json
    r = json.loads(report.read_text())
    assert r["mpi_ranks"] == 3 and r["n"] == 1000


@pytest.mark.parametrize("args, message", [
    (["-k", "0"], "option -k: 0 is outside"),
    (["-k", "5000"], "larger than the number of points"),
    (["-k", "3", "--init", "kmeans++"], "--init kmeans++ does not run across MPI ranks yet"),
    (["-k", "3", "--check"], "--check does not run across MPI ranks yet"),
])
def test_bad_input_is_reported_once_with_status_2(args, message, tmp_path):
    labels = tmp_path / "labels.txt"
    rc, _, err = mpirun(3, mpi_program("omp"), "kmeans", "gen:uniform:n=1000,d=2", *args, "--labels", labels)
    assert rc == 2, err
    assert err.count("pragmaclust: error:") == 1 and message in err, err
    assert not labels.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize("suffix", [".npy", ".f32"])
def test_a_bad_row_in_another_ranks_slice_is_reported_once(suffix, tmp_path):
    """Each rank reads only its rows of a binary file: a NaN in row 2900 (the last rank's slice)
    is still reported once, by rank 0, with its row number in the file, and every rank stops."""
    x = np.random.default_rng(1).random((3000, 2), dtype=np.float32)
    x[2899, 1] = np.nan
    path = tmp_path / f"bad{suffix}"
    np.save(path, x) if suffix == ".npy" else x.tofile(path)
    shape = ["--shape", "3000,2"] if suffix == ".f32" else []
    rc, _, err = mpirun(3, mpi_program("seq"), "kmeans", path, *shape, "-k", "3")
    assert rc == 2, err
    assert err.count("pragmaclust: error:") == 1 and "(row 2900) is NaN or Inf" in err, err


def test_other_subcommands_say_they_run_on_one_rank():
    rc, _, err = mpirun(2, mpi_program("seq"), "dbscan", "gen:uniform:n=100,d=2", "--eps", "0.1", "--min-pts", "3")
    assert rc == 2 and err.count("pragmaclust: error:") == 1
    assert "across ranks only kmeans runs yet" in err
