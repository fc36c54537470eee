"""k-means, streaming k-means and DBSCAN across MPI ranks (issue 22, common/dist.h):
bin/pragmaclust-{seq,omp}-mpi under `mpirun -np 1..4 --oversubscribe` give the outputs of the
one-process program, byte for byte; a rank may hold no point; bad input is reported once, by
rank 0, with exit status 2 and no output file; what does not run across ranks says so; the
bundle's own Open MPI runs them. `make test` builds the MPI programs and installs Open MPI
(variants/install-toolchain.sh --tests)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO_ROOT, bin_dir, run

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
    "kmeans++": ["kmeans", "gen:blobs:n=20000,d=5,centers=12,seed=4", "-k", "12", "--init", "kmeans++"],
}


@pytest.mark.parametrize("variant", ["seq", "omp"])
@pytest.mark.parametrize("case", list(CASES) + ["near ties", "file init", "raw float32", "kmeans++ on duplicates"])
def test_kmeans_across_ranks_is_one_process(variant, case, tmp_path, near_ties):
    if case == "near ties":
        args = ["kmeans", near_ties, "-k", "6"]
    elif case == "raw float32":
        raw = tmp_path / "points.f32"
        np.load(near_ties).astype("<f4").tofile(raw)
        args = ["kmeans", raw, "--shape", "3001,3", "-k", "5"]
    elif case == "kmeans++ on duplicates":  # 729 places for 3001 points: most rows have no mass once drawn
        args = ["kmeans", near_ties, "-k", "40", "--init", "kmeans++", "--seed", "11"]
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
    (["-k", "3", "--check"], "--check needs every point in one process"),
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
    rc, _, err = mpirun(2, mpi_program("seq"), "dpc", "gen:uniform:n=100,d=2", "--dc", "0.1")
    assert rc == 2 and err.count("pragmaclust: error:") == 1
    assert "across ranks kmeans, streamkm and dbscan run" in err


def test_kmeans_plus_plus_short_of_distinct_points_is_reported_once(tmp_path):
    """Two distinct places for k = 3: the ranks' global wheel runs out of mass on every rank
    alike, and rank 0 says so once, as the one process does."""
    x = np.zeros((1000, 2), dtype=np.float32)
    x[500:] = 1
    path = tmp_path / "two.npy"
    np.save(path, x)
    rc, _, err = mpirun(3, mpi_program("seq"), "kmeans", path, "-k", "3", "--init", "kmeans++")
    assert rc == 2, err
    assert err.count("pragmaclust: error:") == 1 and "only 2 points carry weight or distance" in err, err


STREAMKM_CASES = {
    "blobs": ["streamkm", "gen:blobs:n=20000,d=3,centers=6,seed=3", "-k", "6", "--chunk-size", "1500"],
    "default chunks, uniform": ["streamkm", "gen:uniform:n=12000,d=5,seed=8", "-k", "10"],
    "fewer chunks than ranks": ["streamkm", "gen:blobs:n=600,d=2,centers=3,seed=1", "-k", "3", "--chunk-size", "400"],
}


def streamkm_outputs(cmd, tmp_path, tag, args):
    """Centres, labels and kept points (rows and weights) as bytes, and the report's cost."""
    out = {name: tmp_path / f"{tag}.{name}" for name in ("centres.npy", "labels.npy", "kept.txt", "report.json")}
    rc, _, err = cmd(*args, "--centres", out["centres.npy"], "--labels", out["labels.npy"], "--kept", out["kept.txt"],
                     "--report", out["report.json"], "--quiet")
    assert rc == 0, err
    import json
    cost = json.loads(out["report.json"].read_text())["cost"]
    return [out[name].read_bytes() for name in ("centres.npy", "labels.npy", "kept.txt")] + [cost]


@pytest.mark.parametrize("variant", ["seq", "omp"])
@pytest.mark.parametrize("case", list(STREAMKM_CASES) + ["npy file", "raw file", "text file"])
def test_streaming_kmeans_across_ranks_is_one_process(variant, case, tmp_path, near_ties):
    """Each rank samples a contiguous range of the chunks with the chunks' own counters, rank 0
    runs the final weighted k-means++ on the gathered kept points: the centres, kept points,
    labels and cost of one process. A file is read a slice a rank (256-row groups), then its rows
    move to the ranks whose chunks (700 rows, across the groups' bounds) hold them."""
    if case == "npy file":
        args = ["streamkm", near_ties, "-k", "5", "--chunk-size", "700"]
    elif case == "raw file":
        raw = tmp_path / "points.f32"
        np.load(near_ties).tofile(raw)
        args = ["streamkm", raw, "--shape", "3001,3", "-k", "5", "--chunk-size", "700"]
    elif case == "text file":
        args = ["streamkm", text_file(tmp_path / "points.txt", TEXT_POINTS), "-k", "5", "--chunk-size", "700"]
    else:
        args = STREAMKM_CASES[case]
    one = streamkm_outputs(lambda *a: run([bin_dir() / f"pragmaclust-{variant}", *a]), tmp_path, "one", args)
    program = mpi_program(variant)
    for np_ in NP:
        many = streamkm_outputs(lambda *a: mpirun(np_, program, *a), tmp_path, f"np{np_}", args)
        for what, a, b in zip(["centres", "labels", "kept points", "cost"], one, many):
            assert a == b, f"{what} differ with {np_} ranks"


def test_streaming_kmeans_bad_input_across_ranks_is_reported_once(tmp_path):
    centres = tmp_path / "c.npy"
    for args, message in [(["-k", "700"], "is larger than the number of points"),
                          (["-k", "3", "--check"], "--check needs every point in one process")]:
        rc, _, err = mpirun(3, mpi_program("seq"), "streamkm", "gen:uniform:n=600,d=2", *args, "--centres", centres)
        assert rc == 2, err
        assert err.count("pragmaclust: error:") == 1 and message in err, err
        assert not centres.exists()


def lattice(path, side=40, holes=0.15, seed=2):
    """Points on the integer lattice with eps = 1: every neighbour at exactly eps, across every
    slab boundary; some points removed, so that there are several clusters, borders and noise."""
    rng = np.random.default_rng(seed)
    g = np.stack(np.meshgrid(np.arange(side), np.arange(side), indexing="ij"), -1).reshape(-1, 2)
    g = g[rng.random(len(g)) > holes]
    np.save(path, rng.permutation(g).astype(np.float32))
    return path


def two_lines(path):
    """Two clusters of core points with a border point between them at exactly eps from both:
    it joins the smaller cluster id, whichever ranks hold the pieces."""
    a = [(float(i), 0.0) for i in range(12)]
    b = [(float(i), 2.0) for i in range(12)]
    np.save(path, np.array(b + a + [(5.0, 1.0), (30.0, 30.0)], dtype=np.float32))
    return path


DBSCAN_CASES = {
    "blobs": ["gen:blobs:n=20000,d=2,centers=6,seed=3", "--eps", "0.3", "--min-pts", "5"],
    "one cluster across every slab": ["gen:uniform:n=20000,d=3,seed=3", "--eps", "0.05", "--min-pts", "5"],
    "all noise": ["gen:uniform:n=3000,d=2,seed=4", "--eps", "0.001", "--min-pts", "3"],
    "d = 5, projected grid": ["gen:blobs:n=8000,d=5,centers=5,seed=6", "--eps", "0.6", "--min-pts", "8"],
    "chains, directory": ["gen:blobs:n=6000,d=2,centers=4,seed=8", "--eps", "0.25", "--min-pts", "4",
                          "--method", "chains", "--index", "directory"],
    "fewer rows than ranks": ["gen:uniform:n=3,d=2,seed=1", "--eps", "0.8", "--min-pts", "2"],
}


@pytest.mark.parametrize("variant", ["seq", "omp"])
@pytest.mark.parametrize("case", list(DBSCAN_CASES) + ["lattice at exactly eps", "border between two clusters"])
def test_dbscan_across_ranks_is_one_process(variant, case, tmp_path):
    """Slabs of space, each rank with the eps-halo of its slab, components joined through the
    points two ranks hold: the labels of one process, byte for byte, and the same counts."""
    if case == "lattice at exactly eps":
        args = [lattice(tmp_path / "lattice.npy"), "--eps", "1", "--min-pts", "4"]
    elif case == "border between two clusters":
        args = [two_lines(tmp_path / "lines.npy"), "--eps", "1", "--min-pts", "3"]
    else:
        args = DBSCAN_CASES[case]
    import json

    def outputs(cmd, tag):
        labels, report = tmp_path / f"{tag}.npy", tmp_path / f"{tag}.json"
        rc, _, err = cmd("dbscan", *args, "--labels", labels, "--report", report, "--quiet")
        assert rc == 0, err
        r = json.loads(report.read_text())
        return labels.read_bytes(), [r[key] for key in ("clusters", "core", "border", "noise")]

    one = outputs(lambda *a: run([bin_dir() / f"pragmaclust-{variant}", *a]), "one")
    program = mpi_program(variant)
    for np_ in NP:
        many = outputs(lambda *a: mpirun(np_, program, *a), f"np{np_}")
        assert many[0] == one[0], f"labels differ with {np_} ranks"
        assert many[1] == one[1], f"counts differ with {np_} ranks"


def test_dbscan_across_ranks_reports_where_its_time_went(tmp_path):
    """The report's across_ranks: rank 0's seconds in its local runs and in the exchanges, the rest
    (the host's passes), and the points it held, its own and its slab's halo."""
    import json
    report = tmp_path / "r.json"
    rc, _, err = mpirun(2, mpi_program("seq"), "dbscan", "gen:uniform:n=20000,d=2,seed=3", "--eps", "0.02",
                        "--min-pts", "5", "--report", report, "--quiet")
    assert rc == 0, err
    r = json.loads(report.read_text())
    part = r["across_ranks"]
    assert part["local_runs_s"] > 0 and part["exchanges_s"] >= 0 and part["host_s"] >= 0
    assert part["local_runs_s"] + part["exchanges_s"] + part["host_s"] == pytest.approx(r["runs"][-1]["total_s"])
    assert 10000 <= part["points_held"] < 12000  # half the points and a halo of width 0.02
    rc, _, err = run([bin_dir() / "pragmaclust-seq", "dbscan", "gen:uniform:n=2000,d=2,seed=3", "--eps", "0.02",
                      "--min-pts", "5", "--report", report, "--quiet"])
    assert rc == 0 and "across_ranks" not in json.loads(report.read_text())


def test_dbscan_bad_input_across_ranks_is_reported_once(tmp_path):
    x = np.random.default_rng(1).random((3000, 2), dtype=np.float32)
    x[2999, 0] = 3e38  # in the last rank's slice: divided by eps it overflows a double
    path = tmp_path / "big.npy"
    np.save(path, x)
    labels = tmp_path / "labels.npy"
    for args, message in [([path, "--eps", "1e-300", "--min-pts", "3"], "overflows the grid"),
                          (["gen:uniform:n=100,d=2", "--eps", "0.1", "--min-pts", "3", "--check"],
                           "--check needs every point in one process")]:
        rc, _, err = mpirun(3, mpi_program("seq"), "dbscan", *args, "--labels", labels)
        assert rc == 2, err
        assert err.count("pragmaclust: error:") == 1 and message in err, err
        assert not labels.exists()


def test_the_scaling_benchmark_checks_its_outputs_against_one_process(tmp_path):
    """experiments/bench_mpi.py (make bench-mpi): strong and weak scaling tables, every strong
    row's outputs byte for byte the one-process program's."""
    mpi_program("seq")
    bench = Path(__file__).resolve().parents[1] / "experiments" / "bench_mpi.py"
    reports = tmp_path / "reports"
    rc, out, err = run([sys.executable, bench, "--bin", bin_dir(), "--n", "3000", "--ranks", "1,2,3", "--repeat", "1",
                        "--reports", reports], timeout=300, env=MPI_ENV)
    assert rc == 0, out + err
    assert "strong scaling" in out and "weak scaling" in out
    import json
    kept = {p.name: json.loads(p.read_text()) for p in reports.glob("*.json")}
    assert kept["dbscan-n3000-np3.json"]["mpi_ranks"] == 3 and "phases_s" in kept["dbscan-n3000-np3.json"]["timing"]
    assert kept["kmeans-n3000-process.json"]["mpi_ranks"] == 1 and len(kept) == 3 * (4 + 3) - 3  # weak 1 = strong 1
    strong, weak = out.split("weak scaling")
    header = [c.strip() for c in next(line for line in strong.splitlines() if line.startswith("| case |")).split("|")]
    same = header.index("same outputs as one process")
    for algorithm in ("kmeans", "streamkm", "dbscan"):
        rows = [[c.strip() for c in line.split("|")] for line in strong.splitlines()
                if line.startswith(f"| {algorithm} |")]
        assert [r[2] for r in rows] == ["1 process", "1", "2", "3"], rows
        assert rows[0][same] == "(the reference)" and all(r[same] == "yes" for r in rows[1:]), rows
        assert len([line for line in weak.splitlines() if line.startswith(f"| {algorithm} |")]) == 3


def test_the_scaling_benchmark_reports_a_failed_run_by_its_message(tmp_path):
    """A case that cannot run (dot-3xtf32 needs a GPU's tensor cores) is a row saying the program's
    error line, not mpirun's trailer, and the script exits with status 1."""
    mpi_program("seq")
    bench = Path(__file__).resolve().parents[1] / "experiments" / "bench_mpi.py"
    rc, out, err = run([sys.executable, bench, "--bin", bin_dir(), "--cases", "kmeans-dot-3xtf32", "--ranks", "2",
                        "--repeat", "1"], timeout=300, env=MPI_ENV)
    assert rc == 1, out + err
    rows = [line for line in out.splitlines() if line.startswith("| kmeans-dot-3xtf32 |")]
    assert len(rows) == 2 and all("failed: pragmaclust: error:" in r and "tensor cores" in r for r in rows), rows
    rc, out, err = run([sys.executable, bench, "--bin", bin_dir(), "--cases", "nonesuch"], timeout=60, env=MPI_ENV)
    assert rc != 0 and "cases are" in err


def text_file(path, rows, header=None, eol="\n", insert=None):
    """rows as text with ', ' between values, a comment every 97 rows and a blank line every 89,
    optionally a header and a line put in at a given place."""
    lines = [header] if header else []
    for i, r in enumerate(rows):
        lines += ["# comment"] * (i % 97 == 0) + [""] * (i % 89 == 0) + [", ".join(f"{v:.7g}" for v in r)]
    if insert:
        lines.insert(*insert)
    path.write_text(eol.join(lines) + eol, newline="")
    return path


TEXT_POINTS = np.random.default_rng(3).random((3000, 3)).astype(np.float32)


@pytest.mark.parametrize("case, header, eol", [("header", "a,b,c", "\n"), ("CRLF", None, "\r\n"),
                                               ("lone CR, header", "x y z", "\r")])
def test_a_text_file_is_read_by_a_split_scan(case, header, eol, tmp_path):
    """Each rank parses the lines that start in its share of the bytes, and the rows move to their
    slices: the labels, the centroids and the skipped header's line are one process's."""
    path = text_file(tmp_path / "points.csv", TEXT_POINTS, header=header, eol=eol)
    args = ["kmeans", path, "-k", "4"]
    one = kmeans_outputs(lambda *a: run([bin_dir() / "pragmaclust-seq", *a]), tmp_path, "one", args)
    for np_ in NP:
        assert kmeans_outputs(lambda *a: mpirun(np_, mpi_program("seq"), *a), tmp_path, f"np{np_}", args) == one
    rc, _, err = mpirun(3, mpi_program("seq"), *args)
    assert rc == 0 and ("(header line 1 skipped)" in err) == bool(header), err


@pytest.mark.parametrize("case, insert", [("ragged", (2500, "1, 2")), ("a word", (2500, "1, two, 3")),
                                          ("another separator", (2600, "1;2;3")), ("a header late", (2000, "x,y,z")),
                                          ("no data rows", None)])
def test_a_text_files_error_is_the_one_process_error(case, insert, tmp_path):
    """The checks one process makes over the whole file span the ranks' parts: the earliest error
    in the file, with its line number, as one process words it, once."""
    path = tmp_path / "bad.csv"
    if insert:
        text_file(path, TEXT_POINTS, insert=insert)
    else:
        path.write_text("# nothing\n\n" * 5000)
    rc, _, one = run([bin_dir() / "pragmaclust-seq", "kmeans", path, "-k", "4"])
    assert rc == 2 and one.count("pragmaclust: error:") == 1
    for np_ in NP[1:]:
        rc, _, err = mpirun(np_, mpi_program("seq"), "kmeans", path, "-k", "4")
        assert rc == 2 and err.count("pragmaclust: error:") == 1, err
        assert one.strip().splitlines()[-1] in err, (one, err)


GLIBC = re.compile(r"(libc|libm|libdl|libpthread|librt)[.]so[.]\d+|ld-linux-x86-64[.]so[.]2")


def test_the_bundle_runs_the_mpi_programs_with_its_own_open_mpi(tmp_path):
    """`make bundle` takes the MPI programs where mpicc is installed, and variants/bundle.sh --mpi
    adds Open MPI's runtime: from the unpacked bundle, bin/mpirun runs 2 ranks of the seq and omp
    MPI programs with the one-process result, the loader's log shows every library and MCA
    component that mpirun and the ranks load coming from the bundle (glibc aside), and Open
    MPI's components, help texts and settings are the bundle's (ompi_info's paths). (OMP_TOOL:
    libomp would also open LLVM's optional libarcher.so, found here through the rpath's LLVM
    folder, which a GPU machine lacks.)"""
    plan = subprocess.run(["make", "-n", "bundle"], capture_output=True, text=True, cwd=REPO_ROOT).stdout
    assert "variants/bundle.sh --mpi" in plan and "bin/pragmaclust-gpu-mpi" in plan, plan[-2000:]
    programs = [mpi_program(v) for v in ("seq", "omp")]
    archive, top = tmp_path / "bundle.tar.xz", tmp_path / "unpacked"
    proc = subprocess.run([REPO_ROOT / "variants" / "bundle.sh", "--mpi", archive, ".", "--", *programs],
                          capture_output=True, text=True, env=dict(os.environ, XZ_OPT="-0"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    top.mkdir()
    subprocess.run(["tar", "-xJf", archive, "-C", top], check=True)
    for name in ("bin/mpirun", "mpi/bin/orted", "mpi/lib/openmpi3/mca_btl_vader.so", "mpi/lib/pmix",
                 "mpi/share/openmpi/help-mpi-runtime.txt", "mpi/etc/openmpi-mca-params.conf", "lib/libmpi.so.40",
                 "lib/libpmix.so.2", "lib/libomp.so.5"):
        assert (top / name).exists(), name
    args = ["kmeans", "gen:blobs:n=20000,d=5,centers=6,seed=4", "-k", "6"]
    one = kmeans_outputs(lambda *a: run([bin_dir() / "pragmaclust-seq", *a]), tmp_path, "one", args)
    for variant in ("seq", "omp"):
        labels, centroids = tmp_path / f"{variant}.labels.npy", tmp_path / f"{variant}.centroids.npy"
        log = tmp_path / f"{variant}-ld"      # the loader's log, a file per process: log.PID
        rc, _, err = run([top / "bin" / "mpirun", "-np", "2", top / "bin" / f"pragmaclust-{variant}-mpi", *args,
                          "--labels", labels, "--centroids", centroids, "--quiet"], timeout=120,
                         env={"LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": str(log), "OMP_NUM_THREADS": "1",
                              "OMP_TOOL": "disabled"})
        assert rc == 0, err[-3000:]
        assert (labels.read_bytes(), centroids.read_bytes()) == one, variant
        logs = "".join(path.read_text() for path in tmp_path.glob(f"{log.name}.*"))
        loaded = {os.path.realpath(path) for path in re.findall(r"calling init: (\S+)", logs)}
        assert any("/mpi/lib/openmpi3/mca_" in path for path in loaded) and len(loaded) > 20, sorted(loaded)
        outside = [path for path in loaded
                   if not path.startswith(str(top.resolve()) + "/") and not GLIBC.fullmatch(os.path.basename(path))]
        assert outside == [], (variant, outside)
    rc, out, err = run([top / "bin" / "mpirun", "-np", "1", "ompi_info", "--parsable", "--path", "all"])
    assert rc == 0, err
    paths = dict(line.split(":")[1:3] for line in out.splitlines() if line.startswith("path:"))
    for key, folder in (("pkglibdir", "mpi/lib/openmpi3"), ("pkgdatadir", "mpi/share/openmpi"),
                        ("sysconfdir", "mpi/etc")):
        assert os.path.realpath(paths[key]) == str((top / folder).resolve()), (key, paths[key])
