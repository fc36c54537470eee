"""Out-of-core k-means (issue 22, part 5; algorithms/kmeans.c, km_plan_memory and km_stream_*).

With --device-memory below what the points need on the device, the gpu program keeps them on the
host and streams them through two device buffers, a block at a time, every pass: the labels and
centroids must be those of the run in memory, byte for byte (the sums are exact integers, which do
not depend on the order the blocks add them in), with the same iterations, for every distance,
initialisation and update method the gpu build runs on the host, with several blocks (more than
two, so that the buffers take turns; a last block shorter than the others, or as long), down to
blocks of one point. The report and the summary say it ran out of core, with the block count and
the host-to-device bandwidth. A limit too small for the labels, centroids and two blocks of one
point is refused with one line and exit status 2, no output written (test_bad_input.py has the
option's malformed values); the seq and omp programs take --device-memory and ignore it.

On this GPU-less machine the gpu program runs with --allow-host: its "device" buffers are then
host memory and the copies do nothing, but the blocks, the buffers' turns and the task
dependences are the same code as on a GPU.
"""
import re
import shutil

import numpy as np
import pytest

from helpers import bin_dir, load_report, run
from test_bad_input import check_bad
from test_mpi import MPI_ENV


def run_kmeans(binary, work, tag, *args):
    """kmeans with labels, centroids and a report in `work`: (labels bytes, centroids bytes, report)."""
    lab, cen, rep = work / f"{tag}.labels.npy", work / f"{tag}.centroids.npy", work / f"{tag}.json"
    binary.kmeans_ok(*args, "--labels", lab, "--centroids", cen, "--report", rep)
    return lab.read_bytes(), cen.read_bytes(), load_report(rep)


def assert_same_run(streamed, in_memory, what):
    """The out-of-core run gave the in-memory run's labels, centroids and iterations (the SSE is a
    double sum whose order follows the blocks: equal to rounding)."""
    (lab, cen, rep), (lab0, cen0, rep0) = streamed, in_memory
    assert rep0["out_of_core"]["blocks"] == 0, f"{what}: the reference run was not in memory"
    assert lab == lab0, f"{what}: labels differ"
    assert cen == cen0, f"{what}: centroids differ"
    for key in ("iterations", "converged", "update_sums"):
        assert rep[key] == rep0[key], (what, key)
    assert rep["sse"] == pytest.approx(rep0["sse"], rel=1e-12), what


def points_bytes(rep):
    return rep["n"] * rep["d"] * 4


def streaming_limit(rep, share=3):
    """A limit that leaves the two buffers a `share`-th of the points' bytes: blocks of about a
    2 share-th of the points (everything else on the device as in memory), and room for an int a
    point more, the labels that kept sums hold (kmeans.c's summed), which a run out of core keeps
    where the same run in memory (a small-run path) does not."""
    return rep["device_memory_in_memory"] - points_bytes(rep) + points_bytes(rep) // share + rep["n"] * 4


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Points on a coarse lattice (many exactly equidistant from two centroids: any difference in
    the sums' order would move a label), blobs, and a file of initial centroids."""
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(5)
    np.save(d / "lattice.npy", (rng.integers(0, 9, size=(3001, 3)) / 8).astype(np.float32))
    np.save(d / "blobs.npy", rng.normal(0, 1, (2003, 5)).astype(np.float32) + rng.integers(0, 4, (2003, 1)) * 6)
    np.save(d / "wide.npy", rng.random((1009, 9), dtype=np.float32))
    (d / "init.txt").write_text("0 0 0\n1 1 1\n0 1 0\n1 0 1\n")
    return d


# name -> (a data set of `data`, or gen:, and the options): both distances the gpu build runs on the
# host, random, file and k-means++ initial centroids, the host update (Cao's GPU-L), and each method
# of the update's sums (whole clusters; by dimension: k (d + 1) > 4096; shared: k > 4096)
CASES = {
    "random init, direct": ("lattice", ["-k", "6"]),
    "random init, dot": ("lattice", ["-k", "6", "--distance", "dot"]),
    "file init, direct": ("lattice", ["-k", "4", "--init", "{init}"]),
    "file init, dot": ("lattice", ["-k", "4", "--init", "{init}", "--distance", "dot"]),
    "kmeans++, host update": ("blobs", ["-k", "8", "--init", "kmeans++", "--update", "host"]),
    "sums by dimension, portable kernels, --check": ("wide", ["-k", "500", "--iterations", "4", "--kernels",
                                                              "portable", "--check"]),
    "shared sums": ("gen:uniform:n=5003,d=2,seed=4", ["-k", "4100", "--iterations", "2"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_out_of_core_gives_the_in_memory_run(gpu, data, work, case):
    name, options = CASES[case]
    points = name if name.startswith("gen:") else data / f"{name}.npy"
    args = [points, *[o.replace("{init}", str(data / "init.txt")) for o in options]]
    in_memory = run_kmeans(gpu, work, "memory", *args)
    limit = streaming_limit(in_memory[2])
    streamed = run_kmeans(gpu, work, "streamed", *args, "--device-memory", limit)
    stream = streamed[2]["out_of_core"]
    n = streamed[2]["n"]
    assert stream["blocks"] > 2 and n % stream["block_points"] != 0, stream  # turns; a shorter last block
    assert streamed[2]["device_memory_limit"] == limit and streamed[2]["params"]["device_memory"] == limit
    assert_same_run(streamed, in_memory, case)
    if case == "random init, direct":  # the pieces that went to the device: every pass, the SSE's too
        assert stream["h2d_bytes"] == (streamed[2]["iterations"] + 1) * points_bytes(streamed[2])
        assert stream["h2d_copy_s"] > 0 and stream["h2d_gb_s"] > 0


NEEDS = re.compile(r"out of core it needs (\d+) for n = (\d+), d = (\d+)")


def least_limit(gpu, work, args):
    """The smallest limit the run takes (two blocks of one point), from the refusal of 1 byte."""
    rc, _, err = gpu.run("kmeans", *args, "--device-memory", "1", "--quiet")
    m = NEEDS.search(err)
    assert rc == 2 and m, err
    return int(m[1])


@pytest.mark.parametrize("block", [1, 7, 8, 10, 13])
def test_blocks_of_any_size_down_to_one_point(gpu, work, block):
    """n = 40 in blocks of `block` points: 40 blocks of one, a shorter last block (7: five of 7 and
    one of 5; 13: a last block of one point), blocks that divide n (10: four, each through the same
    buffer every pass), an odd count (8: five, so that a block goes through the other buffer on the
    next pass). (Larger blocks need more than the run in memory, a small-run path that keeps no
    summed: out of core the labels the sums hold are kept beside the labels, kmeans.c's summed.)"""
    args = ["gen:blobs:n=40,d=3,centers=3,seed=8", "-k", "3"]
    least = least_limit(gpu, work, args)
    limit = least + 2 * 3 * 4 * (block - 1)  # each point more per block: a row of 3 floats, twice
    streamed = run_kmeans(gpu, work, f"b{block}", *args, "--device-memory", limit)
    assert streamed[2]["out_of_core"]["block_points"] == block
    assert streamed[2]["out_of_core"]["blocks"] == -(-40 // block)
    assert_same_run(streamed, run_kmeans(gpu, work, "memory", *args), f"blocks of {block}")


def test_limits_below_the_least_are_refused(gpu, work):
    """Below two blocks of one point (a row of d floats each) beside the labels, centroids and
    sums, and below those alone: one line, exit status 2, nothing written."""
    args = ["gen:blobs:n=40,d=3,centers=3,seed=8", "-k", "3"]
    least = least_limit(gpu, work, args)
    out_dir = work / "out"
    out_dir.mkdir()
    outputs = ["--labels", out_dir / "l.npy", "--centroids", out_dir / "c.npy", "--report", out_dir / "r.json"]
    for limit in (least - 1, least - 2 * 3 * 4 - 1, 64):
        argv = ["kmeans", *args, "--device-memory", limit, *outputs]
        line = check_bad(gpu, [str(a) for a in argv], work, work, out_dir, "device_memory_too_small")
        assert f"kmeans --device-memory {limit}: {limit} bytes of device memory are too few" in line, line
        assert f"needs {least} for n = 40, d = 3, k = 3" in line and "two blocks of one point 24)" in line, line


def test_report_and_summary_say_out_of_core(gpu, work):
    args = ["gen:uniform:n=5000,d=4,seed=3", "-k", "5", "--iterations", "3"]
    rc, _, err = gpu.run("kmeans", *args, "--device-memory", "48K", "--report", work / "r.json")
    assert rc == 0, err
    rep = load_report(work / "r.json")
    stream = rep["out_of_core"]
    assert rep["params"]["device_memory"] == 48 << 10 and rep["device_memory_limit"] == 48 << 10
    assert rep["device_memory_in_memory"] > 48 << 10
    assert f"; out of core: {stream['blocks']} blocks of {stream['block_points']} points, " in err, err
    assert re.search(r"[0-9.e+-]+ GB/s host-to-device", err), err
    assert stream["h2d_bytes"] == 4 * 5000 * 4 * 4  # 3 iterations and the SSE's pass
    # the phases keep the transfers apart: waiting for copies and packing in h2d
    assert rep["timing"]["phases_s"]["h2d"]["median"] > 0 and rep["timing"]["phases_s"]["assign"]["median"] > 0


@pytest.mark.parametrize("limit", ["auto", "1G"])
def test_in_memory_where_the_points_fit(gpu, work, limit):
    """No limit (auto: on the host, none is known) or one above what the run needs: in memory."""
    rep = run_kmeans(gpu, work, "fit", "gen:uniform:n=2000,d=4,seed=3", "-k", "5", "--device-memory", limit)[2]
    assert rep["out_of_core"] == {"blocks": 0, "block_points": 0, "h2d_bytes": 0, "h2d_copy_s": 0, "h2d_gb_s": None}
    assert rep["params"]["device_memory"] == (0 if limit == "auto" else 1 << 30)


@pytest.mark.parametrize("name", ["seq", "omp"])
def test_host_programs_take_the_limit_and_ignore_it(name, request, work):
    """seq and omp hold the points in host memory already: any valid limit leaves the run as it is."""
    binary = request.getfixturevalue(name)
    args = ["gen:uniform:n=2000,d=4,seed=3", "-k", "5"]
    plain = run_kmeans(binary, work, "plain", *args)
    limited = run_kmeans(binary, work, "limited", *args, "--device-memory", "1")
    assert limited[:2] == plain[:2]
    assert limited[2]["out_of_core"]["blocks"] == 0 and limited[2]["device_memory_limit"] is None


def test_mpi_ranks_each_stream_their_slice(gpu, work):
    """Across MPI ranks each rank streams its slice through its (here: the host's) device: the
    one-process labels and centroids. Needs bin/pragmaclust-gpu-mpi (make MPI=1 VARIANT=gpu)."""
    program = bin_dir() / "pragmaclust-gpu-mpi"
    if shutil.which("mpirun") is None or not program.exists():
        pytest.skip(f"{program.name} or mpirun missing (make MPI=1 VARIANT=gpu)")
    args = ["gen:blobs:n=3001,d=3,centers=5,seed=2", "-k", "5"]
    one = run_kmeans(gpu, work, "one", *args)
    lab, cen, rep = work / "mpi.labels.npy", work / "mpi.centroids.npy", work / "mpi.json"
    rc, _, err = run(["mpirun", "-np", "2", "--oversubscribe", program, "kmeans", "--allow-host", *args,
                      "--device-memory", "16K", "--labels", lab, "--centroids", cen, "--report", rep, "--quiet"],
                     timeout=120, env=MPI_ENV)
    assert rc == 0, err
    assert load_report(rep)["out_of_core"]["blocks"] > 2  # rank 0's 1500 points
    assert lab.read_bytes() == one[0] and cen.read_bytes() == one[1]
