"""End-to-end tests of `pragmaclust-<variant> kmeans`: results against an independent
reference (reference.py) and scikit-learn, agreement between the variants, options, outputs
and the report.

Every variant is run on this GPU-less machine; the gpu one with --allow-host (conftest.py).
"""
import functools
import json
import os

import numpy as np
import pytest

from helpers import f32, has_tuned_kernels, load_labels, load_matrix, load_report, write_points
from reference import lloyd, sq_distances

# ---- helpers ---------------------------------------------------------------------------


def separated_data(seed, n, d, k, std=1.0):
    """n float32 points (as float64) around k centres that are far apart (>= 12 std)."""
    rng = np.random.default_rng(seed)
    if d == 1:
        centres = (20.0 * rng.permutation(k) + rng.uniform(-2, 2, k))[:, None]
    else:
        box = 20.0 * k ** (1.0 / d) + 20.0
        while True:
            centres = rng.uniform(-box, box, (k, d))
            if k == 1 or sq_distances(centres, centres)[~np.eye(k, dtype=bool)].min() >= (12 * std) ** 2:
                break
    which = rng.integers(0, k, n)
    which[:k] = np.arange(k)  # every cluster has points
    return f32(centres[which] + rng.normal(0, std, (n, d)))


def random_rows(x, k, seed):
    rng = np.random.default_rng(seed)
    return x[rng.choice(len(x), k, replace=False)]


def kmeans(binary, work, data, k, init=None, *extra, tag="run", fmt="txt"):
    """Runs kmeans with labels, centroids and a report in `work`; returns (labels, centroids,
    report). data is a path or gen: string; init a path, an array (written to a file) or None."""
    args = [data, "-k", k]
    if init is not None:
        if not isinstance(init, (str, bytes)) and not hasattr(init, "suffix"):
            init = write_points(work / f"{tag}.init.txt", init)
        args += ["--init", init]
    lab, cen, rep = work / f"{tag}.labels.{fmt}", work / f"{tag}.centroids.{fmt}", work / f"{tag}.json"
    args += ["--labels", lab, "--centroids", cen, "--report", rep, *extra]
    binary.kmeans_ok(*args)
    return load_labels(lab), load_matrix(cen), load_report(rep)


def assert_labels_equal(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{what}: {bad.size} of {want.size} labels differ, first at {bad[:10]}"


def agreement(a, b):
    return float(np.mean(np.asarray(a) == np.asarray(b)))


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


# ---- against the reference -----------------------------------------------------------------

# (d, k) pairs: every d with every k; k is never a multiple of the 16-centroid tile except
# by way of being below it (1, 2, 5) or just above one or two tiles (17, 33).
DIMS = [1, 2, 3, 7, 17]
KS = [1, 2, 5, 17, 33]
CASES = [(seed, d, k) for d in DIMS for k in KS for seed in (0, 1)]


@pytest.mark.parametrize("seed,d,k", CASES, ids=[f"s{s}-d{d}-k{k}" for s, d, k in CASES])
def test_matches_reference(variant, work, seed, d, k):
    rng = np.random.default_rng(1000 + 100 * seed + 10 * d + k)
    n = int(rng.integers(max(3 * k, 40), 2001))
    x = separated_data(seed * 7919 + d * 31 + k, n, d, k)
    init = random_rows(x, k, seed)
    path = write_points(work / "x.txt", x)
    labels, cent, rep = kmeans(variant, work, path, k, init)
    ref_labels, ref_cent, ref_sse, ref_iter, ref_conv = lloyd(x, init)
    assert_labels_equal(labels, ref_labels, f"{variant.name} vs reference")
    assert rep["iterations"] == ref_iter
    assert rep["converged"] is ref_conv
    assert rel(rep["sse"], ref_sse) <= 1e-5 or abs(rep["sse"] - ref_sse) < 1e-6
    assert cent.shape == (k, d)
    np.testing.assert_allclose(cent, ref_cent, rtol=1e-4, atol=1e-4 * np.abs(x).max())
    assert rep["n"] == n and rep["d"] == d and rep["k"] == k


# Shapes beyond the small cases: k * (d + 1) above the 4096 team-local sums (summed by
# dimension instead), several 16/32-centroid tiles, far from the origin (the dot form's shift).
BIG_CASES = [(40, 120, 0.0), (7, 700, 0.0), (3, 50, 1e4)]


@pytest.mark.parametrize("distance", ["dot", "direct"])
@pytest.mark.parametrize("d,k,origin", BIG_CASES, ids=[f"d{d}-k{k}-at{o:g}" for d, k, o in BIG_CASES])
def test_matches_reference_larger(variant, work, d, k, origin, distance):
    x = f32(separated_data(d * 1000 + k, 4 * k, d, k) + origin)
    init = random_rows(x, k, 1)
    labels, cent, rep = kmeans(variant, work, write_points(work / "x.txt", x), k, init, "--distance", distance)
    ref_labels, ref_cent, ref_sse, ref_iter, ref_conv = lloyd(x, init)
    assert rep["params"]["distance"] == distance
    assert_labels_equal(labels, ref_labels, f"{variant.name} vs reference")
    assert rep["iterations"] == ref_iter and rep["converged"] is ref_conv
    assert rel(rep["sse"], ref_sse) <= 1e-4
    np.testing.assert_allclose(cent, ref_cent, rtol=1e-5, atol=1e-4 * np.abs(x - origin).max())


# The update step's ways of summing the clusters (kmeans.c, km_plan_update), as the report
# names them: whole clusters while k * (d + 1) <= 4096 sums; by dimension while k <= 4096,
# in one range of points per dimension, or, for omp with 4 threads and d + 1 = 2 dimensions, in
# two ranges whose sums are added with atomics; shared sums beyond k = 4096.
UPDATE_CASES = [(3, 50, "whole-clusters"), (40, 120, "by-dimension"), (1, 2100, "by-dimension"), (1, 4100, "shared")]


@functools.lru_cache(maxsize=None)
def update_case(d, k):
    """(points, initial centroids, reference result): computed once for all variants (the
    reference takes 6 s at k = 4100)."""
    x = separated_data(d * 1000 + k, 3 * k, d, k)
    init = random_rows(x, k, 2)
    return x, init, lloyd(x, init)


@pytest.mark.parametrize("d,k,method", UPDATE_CASES, ids=[f"d{d}-k{k}-{m}" for d, k, m in UPDATE_CASES])
def test_update_methods_match_reference(variant, work, d, k, method):
    x, init, (ref_labels, ref_cent, ref_sse, ref_iter, ref_conv) = update_case(d, k)
    labels, cent, rep = kmeans(variant, work, write_points(work / "x.txt", x), k, init, "--threads", 4)
    assert rep["update_sums"] == method
    assert_labels_equal(labels, ref_labels, f"{variant.name} vs reference")
    assert rep["iterations"] == ref_iter and rep["converged"] is ref_conv
    assert rel(rep["sse"], ref_sse) <= 1e-5
    np.testing.assert_allclose(cent, ref_cent, rtol=1e-5, atol=1e-4 * np.abs(x).max())


@pytest.mark.parametrize("d,k,method", UPDATE_CASES, ids=[f"d{d}-k{k}-{m}" for d, k, m in UPDATE_CASES])
def test_update_methods_sanitizer_clean(asan, work, d, k, method):
    """The same runs in the sanitizer build: every team-local sum stays inside its array."""
    x, init, _ = update_case(d, k)
    init_path = write_points(work / "init.txt", init)
    rc, out, err = asan.run("kmeans", write_points(work / "x.txt", x), "-k", k, "--init", init_path, "--report", "-",
                            "--quiet")
    assert rc == 0 and err == "", err
    assert json.loads(out)["update_sums"] == method


def test_empty_cluster_and_ties(variant, work):
    """Duplicate initial centroids: in the first pass every point is at the same distance from
    both copies and goes to the lower index; the higher copy gets no points and keeps its
    centroid exactly. A centroid far from everything stays empty for the whole run. The
    whole run (where the kept copy later wins points back) equals the reference."""
    rng = np.random.default_rng(5)
    x = f32(np.vstack([rng.normal(0, 1, (300, 3)), rng.normal(40, 1, (300, 3))]))
    init = np.array([x[0], x[0], x[400], [1000.0, 1000.0, 1000.0]])
    path = write_points(work / "x.txt", x)
    labels, cent, rep = kmeans(variant, work, path, 4, init, "--max-iter", 1, tag="one")
    assert set(np.unique(labels)) == {0, 2}
    np.testing.assert_array_equal(cent[1], x[0])  # kept exactly
    np.testing.assert_array_equal(cent[3], [1000.0, 1000.0, 1000.0])
    labels, cent, rep = kmeans(variant, work, path, 4, init, tag="full")
    ref_labels, ref_cent, ref_sse, ref_iter, _ = lloyd(x, init)
    assert_labels_equal(labels, ref_labels)
    assert 3 not in labels
    np.testing.assert_array_equal(cent[3], [1000.0, 1000.0, 1000.0])
    np.testing.assert_allclose(cent, ref_cent, rtol=1e-5, atol=1e-4)
    assert rep["iterations"] == ref_iter
    assert rel(rep["sse"], ref_sse) <= 1e-5


def test_exact_tie_lowest_index(variant, work):
    """A point exactly halfway between two centroids goes to the lower index, whichever way
    round the centroids are listed (one iteration, so the centroids do not move first)."""
    x = np.array([[0.0], [5.0], [10.0]])
    for init, want in (([[0.0], [10.0]], [0, 0, 1]), ([[10.0], [0.0]], [1, 0, 0])):
        labels, _, rep = kmeans(variant, work, write_points(work / "x.txt", x), 2, np.array(init), "--max-iter", 1)
        assert list(labels) == want
        assert rep["iterations"] == 1 and rep["converged"] is False


def test_fixed_iterations_match_reference(variant, work):
    """--iterations N runs exactly N passes (no convergence stop) and equals the reference's N passes."""
    x = separated_data(3, 1500, 4, 6)
    init = random_rows(x, 6, 3)
    path = write_points(work / "x.txt", x)
    for n_iter in (1, 2, 7, 25):
        labels, cent, rep = kmeans(variant, work, path, 6, init, "--iterations", n_iter)
        ref_labels, ref_cent, ref_sse, ref_iter, _ = lloyd(x, init, fixed_iter=n_iter)
        assert rep["iterations"] == n_iter == ref_iter
        assert rep["converged"] is False
        assert rep["params"]["fixed_iterations"] == n_iter
        assert_labels_equal(labels, ref_labels)
        assert rel(rep["sse"], ref_sse) <= 1e-5
        np.testing.assert_allclose(cent, ref_cent, rtol=1e-4, atol=1e-3)


def test_max_iter_stops(variant, work):
    """--max-iter caps the passes; the run says it did not converge."""
    x = f32(np.random.default_rng(9).uniform(0, 1, (3000, 3)))
    init = random_rows(x, 20, 9)
    path = write_points(work / "x.txt", x)
    _, _, rep = kmeans(variant, work, path, 20, init, "--max-iter", 3)
    assert rep["iterations"] == 3 and rep["converged"] is False
    _, _, full = kmeans(variant, work, path, 20, init)
    assert full["converged"] is True and full["iterations"] > 3


def test_tol_stops_earlier(variant, work):
    """--tol T stops once the summed squared centroid shift is <= T."""
    x = f32(np.random.default_rng(4).uniform(0, 1, (3000, 2)))
    init = random_rows(x, 10, 4)
    path = write_points(work / "x.txt", x)
    _, _, strict = kmeans(variant, work, path, 10, init)
    _, _, loose = kmeans(variant, work, path, 10, init, "--tol", "1e-3")
    _, _, huge = kmeans(variant, work, path, 10, init, "--tol", "1e6")
    assert loose["converged"] is True and loose["iterations"] < strict["iterations"]
    assert huge["iterations"] == 1 and huge["converged"] is True


# ---- variants against each other --------------------------------------------------------


# (d, k, update method, omp threads): every way of summing the clusters; omp with 4 threads
# and d + 1 = 2 sums each dimension in two ranges of the points.
IDENTICAL_CASES = [(8, 50, "whole-clusters", 3), (7, 700, "by-dimension", 3), (1, 2100, "by-dimension", 4),
                   (1, 4100, "shared", 3)]


@pytest.mark.parametrize("d,k,method,threads", IDENTICAL_CASES, ids=[f"{m}-d{d}-k{k}" for d, k, m, _ in IDENTICAL_CASES])
def test_variants_identical_on_uniform_data(all_variants, work, d, k, method, threads):
    """Uniform data (no cluster structure, many near-ties), 30 passes from one init file. The
    variants sum each point's squared distances in the same order, and the update step's
    fixed-point sums are exact whatever order threads, teams and atomics add in (kmeans.c,
    km_to_fixed), so every variant, every thread count and Cao's host update (--update host)
    give the same labels and the same centroids, bit for bit."""
    n = 20000 if k < 1000 else 3 * k
    gen = f"gen:uniform:n={n},d={d},seed=3"
    init_path = write_points(work / "init.txt", np.random.default_rng(50).uniform(0, 1, (k, d)).astype(np.float32))
    runs = {}
    for name, b in all_variants.items():
        extra = ["--threads", threads] if name == "omp" else []
        runs[name] = kmeans(b, work, gen, k, init_path, "--max-iter", 30, *extra, tag=name)
        if name == "gpu":
            runs["gpu-host-update"] = kmeans(b, work, gen, k, init_path, "--max-iter", 30, "--update", "host",
                                             tag="gpu-host")
    base_labels, base_cent, base_rep = runs["seq"]
    assert base_rep["update_sums"] == method and base_rep["iterations"] > 2
    for name, (labels, cent, rep) in runs.items():
        assert_labels_equal(labels, base_labels, f"{name} vs seq")
        np.testing.assert_array_equal(cent, base_cent, err_msg=name)
        assert rep["iterations"] == base_rep["iterations"], name
        assert rel(rep["sse"], base_rep["sse"]) <= 1e-12, name  # one double sum in another order


TENSOR_DISTANCES = ["dot-3xtf32", "dot-tf32", "dot-fp16", "dot-bf16"]  # our tensor-core kernels, each precision
TF32_DISTANCES = TENSOR_DISTANCES[:2]  # those of the TF32 tensor cores (km_assign_mma)


# (data, k, options): whole clusters' kept sums (kmeans.c, km_keeps_sums): uniform data in [0, 1), large
# enough for the gpu variant's general path, after its tuned kernel for few centroids (d <= 8, which on a
# GPU adds every point in its own pass instead), the portable loop (--kernels portable) and the
# tensor-core form (d = 16 and d = 11: on a GPU its resident teams move the changed points in their pass,
# a point's 17 values a round of a warp, or two points' 12 each; n = 100,003 leaves a last block part
# empty); blobs around the origin (negative values moved out); and 1M points, whose GPU teams
# (2,500-2,900 points on an H100 or H200) take them in more than one chunk of moves (KM_MOVES, 2048; a
# CPU team, one thread, takes several in every case).
KEPT_SUMS_CASES = [("gen:uniform:n=150000,d=8,seed=4", 50, []),
                   ("gen:uniform:n=150000,d=8,seed=4", 50, ["--kernels", "portable"]),
                   ("gen:uniform:n=100000,d=16,seed=5", 64, []),
                   ("gen:uniform:n=100003,d=11,seed=5", 50, []),
                   ("gen:blobs:n=120000,d=6,centers=40,std=4,box=30,seed=6", 40, []),
                   ("gen:uniform:n=1000000,d=9,seed=3", 12, [])]


@pytest.mark.parametrize("data,k,extra", KEPT_SUMS_CASES,
                         ids=["d8", "d8-portable", "d16", "d11-odd", "blobs", "chunks"])
def test_kept_sums_equal_sums_of_all_points(variant, work, data, k, extra):
    """--sums changed (the default: the update's sums kept, only the points whose label changed
    moved) and --sums all (every point added again) give the same labels, centroids and
    iterations, bit for bit: the sums are exact integers. The runs' early passes move most points
    (uniform data, random init), the later ones few."""
    runs = {}
    for sums in ("changed", "all"):
        runs[sums] = kmeans(variant, work, data, k, "random", "--seed", 9, "--max-iter", 25, "--sums", sums, *extra,
                            tag=sums)
    (labels, cent, rep), (labels_all, cent_all, rep_all) = runs["changed"], runs["all"]
    # the gpu variant's small-run loops, and its tuned kernel that sums in its pass, add every point
    assert rep["params"]["sums"] == "changed" and rep["update_points"] in ("changed", "all")
    assert rep["update_points"] == "changed" or variant.name == "gpu"
    assert rep_all["params"]["sums"] == "all" and rep_all["update_points"] == "all"
    assert rep["update_sums"] == "whole-clusters" and rep["iterations"] > 5
    # the resident tensor-core teams (the gpu variant's TF32 forms, on a GPU) move the points in their pass
    tensor_teams = rep["assign_kernels"].startswith("gpu") and rep["params"]["distance_used"] in TF32_DISTANCES
    assert rep["update_in_assign"] is tensor_teams and rep_all["update_in_assign"] is False
    assert_labels_equal(labels, labels_all, f"{variant.name}: kept sums vs all")
    np.testing.assert_array_equal(cent, cent_all, err_msg=variant.name)
    assert rep["iterations"] == rep_all["iterations"]


def test_kept_sums_out_of_core(gpu, work):
    """Out of core the blocks' points move into the kept sums block by block: the same run as
    adding every point, and as the run in memory."""
    data = "gen:uniform:n=60000,d=12,seed=8"
    runs = {name: kmeans(gpu, work, data, 30, "random", "--max-iter", 20, *extra, tag=name)
            for name, extra in (("memory", []), ("blocks", ["--device-memory", "2M"]),
                                ("blocks-all", ["--device-memory", "2M", "--sums", "all"]))}
    labels, cent, rep = runs["memory"]
    assert runs["blocks"][2]["out_of_core"]["blocks"] > 1 and runs["blocks"][2]["update_points"] == "changed"
    for name in ("blocks", "blocks-all"):
        assert_labels_equal(runs[name][0], labels, name)
        np.testing.assert_array_equal(runs[name][1], cent, err_msg=name)
        assert runs[name][2]["iterations"] == rep["iterations"], name


def test_variants_identical_on_blobs(all_variants, work):
    """Well-separated blobs (std 0.5 in a box of +-50): every variant gives the same labels,
    the same iteration count and SSE to rounding, from an init file and from --init random."""
    gen = "gen:blobs:n=20000,d=5,centers=12,std=0.5,box=50,seed=21"
    init = np.random.default_rng(12).uniform(-50, 50, (12, 5))
    outs = {}
    for name, b in all_variants.items():
        outs[name] = (kmeans(b, work, gen, 12, init, tag=f"{name}-file"),
                      kmeans(b, work, gen, 12, "random", "--seed", 77, tag=f"{name}-rand"))
    for which in (0, 1):
        base_labels, base_cent, base_rep = outs["seq"][which]
        for name in outs:
            labels, cent, rep = outs[name][which]
            assert_labels_equal(labels, base_labels, f"{name} vs seq")
            assert rep["iterations"] == base_rep["iterations"]
            assert rel(rep["sse"], base_rep["sse"]) <= 1e-6
            np.testing.assert_allclose(cent, base_cent, rtol=1e-5, atol=1e-5)


def test_omp_thread_counts_agree(omp, work):
    gen = "gen:blobs:n=30000,d=3,centers=9,std=0.3,seed=8"
    runs = [kmeans(omp, work, gen, 9, "random", "--threads", t, tag=f"t{t}") for t in (1, 2, 3)]
    for labels, cent, rep in runs[1:]:
        assert_labels_equal(labels, runs[0][0])
        assert rel(rep["sse"], runs[0][2]["sse"]) <= 1e-6
    assert [r[2]["threads"] for r in runs] == [1, 2, 3]


def test_gpu_update_host_vs_device(gpu, work):
    """Cao's GPU-L (--update host) and GPU-C (--update device) give the same clustering."""
    for gen, k in (("gen:blobs:n=20000,d=6,centers=7,std=0.5,seed=2", 7), ("gen:uniform:n=5000,d=3,seed=2", 5)):
        dev = kmeans(gpu, work, gen, k, "random", "--update", "device", tag="dev")
        host = kmeans(gpu, work, gen, k, "random", "--update", "host", tag="host")
        assert dev[2]["params"]["update"] == "device" and host[2]["params"]["update"] == "host"
        if gen.startswith("gen:blobs"):
            assert_labels_equal(host[0], dev[0])
            assert host[2]["iterations"] == dev[2]["iterations"]
        else:  # uniform: near-ties, see test_variants_agree_on_uniform_data
            assert agreement(host[0], dev[0]) >= 0.999
        assert rel(host[2]["sse"], dev[2]["sse"]) <= 1e-5


# ---- options, outputs, report ------------------------------------------------------------


def test_report_fields(variant, work):
    x = separated_data(1, 500, 3, 4)
    labels, cent, rep = kmeans(variant, work, write_points(work / "x.txt", x), 4, random_rows(x, 4, 1),
                               "--repeat", 3, "--warmup", 1)
    for key in ("variant", "compiler", "device", "n", "d", "k", "iterations", "sse", "timing"):
        assert key in rep, key
    assert rep["variant"] == variant.name
    assert isinstance(rep["compiler"], str) and rep["compiler"]
    assert isinstance(rep["device"], dict)
    for key in ("offloading", "host_fallback", "name", "where"):
        assert key in rep["device"], key
    assert (rep["n"], rep["d"], rep["k"]) == (500, 3, 4)
    assert isinstance(rep["iterations"], int) and rep["iterations"] >= 1
    assert isinstance(rep["sse"], float) and rep["sse"] >= 0
    t = rep["timing"]
    assert t["repeat"] == 3 and t["warmup"] == 1
    for phase in ("h2d", "assign", "update", "d2h"):
        s = t["phases_s"][phase]
        assert 0 <= s["min"] <= s["median"] <= s["max"], phase
    for key in ("total_s", "iteration_s"):
        assert 0 <= t[key]["min"] <= t[key]["median"] <= t[key]["max"], key
    assert t["total_s"]["min"] > 0
    assert labels.shape == (500,) and cent.shape == (4, 3)
    # the same run without repetitions gives the same result
    labels1, cent1, rep1 = kmeans(variant, work, work / "x.txt", 4, work / "run.init.txt", tag="once")
    assert_labels_equal(labels1, labels)
    np.testing.assert_array_equal(cent1, cent)
    assert rep1["sse"] == rep["sse"] and rep1["iterations"] == rep["iterations"]
    assert rep1["timing"]["repeat"] == 1 and rep1["timing"]["warmup"] == 0


def test_report_to_stdout(variant, work):
    rc, out, err = variant.run("kmeans", "gen:blobs:n=1000,d=2,centers=3", "-k", 3, "--report", "-")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["variant"] == variant.name and rep["k"] == 3
    assert "SSE" in err  # the summary goes to stderr
    rc, out, err = variant.run("kmeans", "gen:blobs:n=1000,d=2,centers=3", "-k", 3, "--quiet")
    assert rc == 0 and out == "" and err == ""


def test_npy_and_text_outputs(variant, work):
    gen = "gen:blobs:n=3000,d=4,centers=5,std=0.5,seed=4"
    lt, ct, rt = kmeans(variant, work, gen, 5, "random", tag="t", fmt="txt")
    ln, cn, rn = kmeans(variant, work, gen, 5, "random", tag="n", fmt="npy")
    assert ln.dtype == np.int32 and ln.shape == (3000,)
    assert cn.dtype == np.float32 and cn.shape == (5, 4)
    assert_labels_equal(ln, lt)
    np.testing.assert_array_equal(cn, ct)  # the text holds the same floats exactly
    assert ln.min() >= 0 and ln.max() < 5
    assert not list(work.glob("*.tmp.*"))
    # the centroids written can be used as --init again: a fixed point. The first pass always
    # counts as a change (labels start unset), so it converges in 2 passes with equal labels.
    for cpath in (work / "t.centroids.txt", work / "n.centroids.npy"):
        l2, c2, r2 = kmeans(variant, work, gen, 5, cpath, tag="again")
        assert_labels_equal(l2, lt)
        assert r2["iterations"] == 2 and r2["converged"] is True
        np.testing.assert_array_equal(c2, ct)


def test_input_formats_agree(variant, work):
    """The same points as text, CSV with a header and comments, .npy f4 and f8, and raw
    float32 with --shape give the same result."""
    x32 = separated_data(2, 800, 3, 5).astype(np.float32)
    init = random_rows(x32.astype(np.float64), 5, 2)
    init_path = write_points(work / "init.txt", init)
    paths = {"txt": write_points(work / "x.txt", x32)}
    csv = work / "x.csv"
    with open(csv, "w") as f:
        f.write("# made by the test\nfeature_a,feature_b,feature_c\n\n")
        for row in x32:
            f.write(",".join("%.9g" % v for v in row) + "\n")
    paths["csv"] = csv
    np.save(work / "x4.npy", x32)
    np.save(work / "x8.npy", x32.astype(np.float64))
    paths["npy4"], paths["npy8"] = work / "x4.npy", work / "x8.npy"
    x32.tofile(work / "x.f32")
    results = {name: kmeans(variant, work, p, 5, init_path, tag=name) for name, p in paths.items()}
    results["raw"] = kmeans(variant, work, work / "x.f32", 5, init_path, "--shape", "800,3", tag="raw")
    base = results["txt"]
    for name, (labels, cent, rep) in results.items():
        assert_labels_equal(labels, base[0], name)
        np.testing.assert_array_equal(cent, base[1])
        assert rep["sse"] == base[2]["sse"], name
        assert rep["n"] == 800 and rep["d"] == 3


def test_init_random_deterministic(variant, work):
    gen = "gen:uniform:n=4000,d=3,seed=9"
    a = kmeans(variant, work, gen, 8, "random", "--seed", 5, tag="a")
    b = kmeans(variant, work, gen, 8, "random", "--seed", 5, tag="b")
    c = kmeans(variant, work, gen, 8, "random", "--seed", 6, tag="c")
    d = kmeans(variant, work, gen, 8, None, "--seed", 5, tag="d")  # random is the default
    assert_labels_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    # the SSE is an OpenMP reduction, whose order the runtime chooses (libgomp's on a GPU varies
    # it from run to run); the labels and centroids above are the same to the bit
    assert a[2]["sse"] == pytest.approx(b[2]["sse"], rel=1e-12)
    assert_labels_equal(d[0], a[0])
    assert a[2]["params"]["seed"] == 5 and a[2]["params"]["init"] == "random"
    assert not np.array_equal(a[1], c[1])  # another seed, other initial rows


def test_init_random_rows_are_data_rows(variant, work):
    """With k = n, --init random takes every row once: each point is its own cluster (SSE 0)."""
    x = separated_data(6, 40, 2, 40)
    labels, cent, rep = kmeans(variant, work, write_points(work / "x.txt", x), 40, "random")
    assert sorted(labels) == list(range(40))
    assert rep["sse"] == 0.0
    np.testing.assert_array_equal(cent[labels], x)


def test_k_equals_one_and_k_equals_n(variant, work):
    x = separated_data(8, 300, 3, 3)
    path = write_points(work / "x.txt", x)
    labels, cent, rep = kmeans(variant, work, path, 1, "random", tag="k1")
    assert set(labels) == {0}
    np.testing.assert_allclose(cent[0], x.mean(axis=0), rtol=1e-5, atol=1e-4)
    assert rel(rep["sse"], float(((x - x.mean(axis=0)) ** 2).sum())) <= 1e-5
    labels, cent, rep = kmeans(variant, work, path, 300, "random", tag="kn")
    assert sorted(labels) == list(range(300)) and rep["sse"] == 0.0


# ---- --distance gemm / gemm-tf32: the assign step through cuBLAS (gpu variant) --------------

GEMM_DISTANCES = ["gemm", "gemm-tf32"]
GPU_ONLY_DISTANCES = GEMM_DISTANCES + TENSOR_DISTANCES  # refused where kernels do not run on a GPU
ON_GPU = os.environ.get("PRAGMACLUST_REQUIRE_GPU") == "1"
needs_gpu = pytest.mark.skipif(not ON_GPU, reason="cuBLAS runs on a GPU: PRAGMACLUST_REQUIRE_GPU=1 on a GPU machine "
                               "(with libcublas on the loader's path or PRAGMACLUST_CUBLAS set)")


def skip_without_tensor_kernel(gpu, distance="dot-3xtf32"):
    """The dot-* tensor-core distances run the tensor-core kernels of the tuned GPU file, which a gpu
    build with the portable loops only (TOOLCHAIN=gcc) lacks: such a build refuses them, and their
    tests skip."""
    if distance in TENSOR_DISTANCES and not has_tuned_kernels(gpu):
        pytest.skip(f"{gpu.path} has no tuned kernels (a TOOLCHAIN=gcc build): {distance} needs the tensor-core kernel")


@pytest.mark.parametrize("distance", GPU_ONLY_DISTANCES)
def test_gemm_refused_by_host_variants(seq, omp, work, distance):
    """seq and omp have no cuBLAS or tensor-core path: exit 2, one line naming the gpu variant, no
    output."""
    for b in (seq, omp):
        rc, out, err = b.run("kmeans", "gen:blobs:n=1000,d=2", "-k", 3, "--distance", distance, "--labels",
                             work / "l.txt", "--report", work / "r.json")
        assert rc == 2, (b.name, rc, err)
        lines = err.strip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("pragmaclust: error:"), err
        assert f"--distance {distance}" in err and "gpu variant" in err and f"{b.name} build" in err
        assert out == "" and list(work.iterdir()) == []


@pytest.mark.parametrize("distance", GPU_ONLY_DISTANCES)
def test_gemm_refused_when_kernels_run_on_the_host(gpu, gpu_direct, work, distance):
    """The gpu program run on the host (--allow-host without a GPU) has no cuBLAS to call and no
    tensor cores: exit 3 (no usable GPU), one line, no output files."""
    if gpu_usable(gpu_direct):
        pytest.skip("this machine has a GPU: the host fallback is not what runs")
    rc, out, err = gpu.run("kmeans", "gen:blobs:n=1000,d=2", "-k", 3, "--distance", distance, "--labels",
                           work / "l.txt", "--report", work / "r.json")
    assert rc == 3, (rc, err)
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("pragmaclust: error:"), err
    assert f"--distance {distance}" in err and "host" in err
    assert out == "" and list(work.iterdir()) == []


# float32 SGEMM: the tolerances of the dot form (test_matches_reference_larger), on the same
# shapes plus small ones (k = 1, d = 1, fewer points than a 128-point block).
GEMM_CASES = BIG_CASES + [(1, 5, 0.0), (17, 1, 0.0), (3, 33, 0.0)]


@needs_gpu
@pytest.mark.parametrize("d,k,origin", GEMM_CASES, ids=[f"d{d}-k{k}-at{o:g}" for d, k, o in GEMM_CASES])
def test_gemm_matches_reference(gpu, work, d, k, origin):
    x = f32(separated_data(d * 1000 + k, 4 * k, d, k) + origin)
    init = random_rows(x, k, 1)
    labels, cent, rep = kmeans(gpu, work, write_points(work / "x.txt", x), k, init, "--distance", "gemm")
    ref_labels, ref_cent, ref_sse, ref_iter, ref_conv = lloyd(x, init)
    assert rep["params"]["distance"] == "gemm" and rep["params"]["cublas"]
    assert rep["device"]["offloading"] is True
    assert_labels_equal(labels, ref_labels, "gemm vs reference")
    assert rep["iterations"] == ref_iter and rep["converged"] is ref_conv
    assert rel(rep["sse"], ref_sse) <= 1e-4
    np.testing.assert_allclose(cent, ref_cent, rtol=1e-5, atol=1e-4 * max(np.abs(x - origin).max(), 1.0))


def blobs_near_origin(seed, n, d, k, std=0.05):
    """n points around k centres uniform in [-1, 1]^d, and initial centroids near the centres.
    TF32 keeps 10 mantissa bits of x and of the shifted centroids, so its dot products err by
    about 2^-10 |x| |c - o|: small here against the gaps between clusters (|x| <= sqrt(d))."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-1, 1, (k, d))
    which = rng.integers(0, k, n)
    which[:k] = np.arange(k)
    x = f32(centres[which] + rng.normal(0, std, (n, d)))
    return x, f32(centres + rng.normal(0, std, centres.shape))


@needs_gpu
@pytest.mark.parametrize("distance", GPU_ONLY_DISTANCES)
@pytest.mark.parametrize("d,k", [(64, 16), (300, 40), (5, 30)])
def test_gemm_blobs_match_reference(gpu, work, distance, d, k):
    """Clusters near the origin, centroids started near them: TF32's rounding is far below the
    gaps, so both GEMM forms and the tensor-core kernel give the reference's labels and
    iterations."""
    skip_without_tensor_kernel(gpu, distance)
    x, init = blobs_near_origin(d + k, 5000, d, k)
    labels, cent, rep = kmeans(gpu, work, write_points(work / "x.txt", x), k, init, "--distance", distance)
    ref_labels, ref_cent, ref_sse, ref_iter, ref_conv = lloyd(x, init)
    assert rep["params"]["distance"] == distance
    assert_labels_equal(labels, ref_labels, f"{distance} vs reference")
    assert rep["iterations"] == ref_iter and rep["converged"] is ref_conv
    assert rel(rep["sse"], ref_sse) <= 1e-4
    np.testing.assert_allclose(cent, ref_cent, rtol=1e-5, atol=1e-5)


@needs_gpu
@pytest.mark.parametrize("distance,sse_rtol,min_agreement",
                         [("gemm", 1e-4, 0.95), ("gemm-tf32", 1e-3, 0.0), ("dot-3xtf32", 1e-4, 0.95),
                          ("dot-tf32", 1e-3, 0.0), ("dot-fp16", 1e-3, 0.0), ("dot-bf16", 1e-3, 0.0)])
def test_gemm_uniform_sse(gpu, work, distance, sse_rtol, min_agreement):
    """Uniform data (the benchmark's kind: near-ties everywhere), 20000 x 256, k = 64, 10 passes.
    float32: near-ties go either way and the paths part (the dot form on the host kept 98.7% of
    the reference's labels, SSE within 2.4e-6), so >= 95% of the labels and SSE within 1e-4.
    TF32: a NumPy model of its rounding kept 84% of the labels, so only the final SSE is
    compared, within 1e-3 relative (the model: 5e-5), for cuBLAS' TF32 and our one-product kernel
    alike; likewise fp16 and bf16 (the model of their rounding, of the shifted points and centroids:
    87% and 81% of the labels, SSE within 1.1e-5 and 5.3e-5). 3xTF32 is held to float32's bounds."""
    skip_without_tensor_kernel(gpu, distance)
    rng = np.random.default_rng(256)
    x = f32(rng.random((20000, 256), dtype=np.float32))
    init = x[:64]
    labels, _, rep = kmeans(gpu, work, write_points(work / "x.txt", x), 64, init, "--distance", distance,
                            "--iterations", 10)
    ref_labels, _, ref_sse, _, _ = lloyd(x, init, fixed_iter=10)
    assert rep["iterations"] == 10
    assert agreement(labels, ref_labels) >= min_agreement
    assert rel(rep["sse"], ref_sse) <= sse_rtol


@needs_gpu
def test_gemm_blocks_match_dot(gpu, work):
    """More points than one block of the 256 MiB scratch (k = 3000: 22272 points per GEMM, so
    50000 points take three GEMMs, the last one short): both GEMM forms give the labels and
    iterations of the dot form on well-separated clusters."""
    x, init = blobs_near_origin(9, 50000, 8, 3000, std=0.002)
    path, init_path = write_points(work / "x.txt", x), write_points(work / "init.txt", init)
    dot = kmeans(gpu, work, path, 3000, init_path, "--max-iter", 20, "--distance", "dot", tag="dot")
    for distance in GEMM_DISTANCES:
        labels, _, rep = kmeans(gpu, work, path, 3000, init_path, "--max-iter", 20, "--distance", distance, tag=distance)
        assert_labels_equal(labels, dot[0], f"{distance} vs dot")
        assert rep["iterations"] == dot[2]["iterations"]
        assert rel(rep["sse"], dot[2]["sse"]) <= 1e-5


# ---- --distance dot-3xtf32: the dot products on the TF32 tensor cores (gpu variant on a GPU) --


@needs_gpu
@pytest.mark.parametrize("d,k,origin", GEMM_CASES, ids=[f"d{d}-k{k}-at{o:g}" for d, k, o in GEMM_CASES])
def test_tensor_matches_reference(gpu, work, d, k, origin):
    """The tensor-core kernel on the float32 cases of the dot form and cuBLAS (data far from the
    origin included: the head and tail of each float keep 21 of its bits)."""
    skip_without_tensor_kernel(gpu)
    x = f32(separated_data(d * 1000 + k, 4 * k, d, k) + origin)
    init = random_rows(x, k, 1)
    labels, cent, rep = kmeans(gpu, work, write_points(work / "x.txt", x), k, init, "--distance", "dot-3xtf32")
    ref_labels, ref_cent, ref_sse, ref_iter, ref_conv = lloyd(x, init)
    assert rep["params"]["distance"] == "dot-3xtf32" and rep["device"]["offloading"] is True
    assert_labels_equal(labels, ref_labels, "dot-3xtf32 vs reference")
    assert rep["iterations"] == ref_iter and rep["converged"] is ref_conv
    assert rel(rep["sse"], ref_sse) <= 1e-4
    np.testing.assert_allclose(cent, ref_cent, rtol=1e-5, atol=1e-4 * max(np.abs(x - origin).max(), 1.0))


@needs_gpu
@pytest.mark.parametrize("n,d,k", [(1000, 13, 300), (777, 9, 129), (5000, 70, 1000)])
@pytest.mark.parametrize("distance", TENSOR_DISTANCES)
def test_tensor_split_blocks_match_dot(gpu, work, n, d, k, distance):
    """Few points against many centroids (the centroid blocks split among teams, candidates
    merged), n not a multiple of the 128-point block, d not of the 8-feature chunk, k not of
    the 64-centroid block: on well-separated clusters the labels, iterations and SSE of the
    feature-by-feature dot form."""
    skip_without_tensor_kernel(gpu, distance)
    x, init = blobs_near_origin(n + d + k, n, d, k, std=0.002)
    path, init_path = write_points(work / "x.txt", x), write_points(work / "init.txt", init)
    dot = kmeans(gpu, work, path, k, init_path, "--max-iter", 20, "--distance", "dot", tag="dot")
    labels, _, rep = kmeans(gpu, work, path, k, init_path, "--max-iter", 20, "--distance", distance, tag="tc")
    assert rep["centroid_splits"] > 1
    assert_labels_equal(labels, dot[0], f"{distance} vs dot")
    assert rep["iterations"] == dot[2]["iterations"]
    assert rel(rep["sse"], dot[2]["sse"]) <= 1e-5


@needs_gpu
@pytest.mark.parametrize("n,d,k", [(200003, 16, 64), (150001, 11, 50), (300007, 16, 100), (300007, 5, 120),
                                   (200004, 16, 64), (150004, 11, 50)],
                         ids=["d16-k64", "d11-k50", "d16-k100-two-blocks", "d5-k120-two-blocks", "d16-k64-pieces",
                              "d11-k50-pieces"])
@pytest.mark.parametrize("distance", ["dot-3xtf32", "dot-tf32"])
def test_tensor_resident_teams_match_sequential(seq, gpu, work, n, d, k, distance):
    """Few features and centroids (d <= 16, k <= 128, the centroid blocks not split): the tensor
    kernel's teams stay, hold the centroids and take block after block of points, the next block
    copied in while one is multiplied (km_mma_resident). n is not a multiple of the 128-point
    block (odd: the features copied a value at a time; or a multiple of 4: in pieces of four
    points), each team takes several blocks, d is not always a multiple of the 8-feature step, k not
    of the 64-centroid block (two blocks of centroids held). On well-separated clusters the labels
    and iterations are seq's (dot form), and so are the centroids, bit for bit."""
    skip_without_tensor_kernel(gpu, distance)
    x, init = blobs_near_origin(n + d + k, n, d, k, std=0.002)
    path = work / "x.npy"
    np.save(path, x)
    init_path = write_points(work / "init.txt", init)
    ref = kmeans(seq, work, path, k, init_path, "--max-iter", 8, "--distance", "dot", tag="seq", fmt="npy")
    labels, cent, rep = kmeans(gpu, work, path, k, init_path, "--max-iter", 8, "--distance", distance, tag="tc",
                               fmt="npy")
    assert rep["centroid_splits"] == 1 and rep["update_sums"] == "whole-clusters"
    # k (d + 1) <= 1152: the teams move the changed points within the kept sums themselves
    assert rep["update_in_assign"] is (k * (d + 1) <= 1152)
    assert_labels_equal(labels, ref[0], f"{distance} vs seq")
    np.testing.assert_array_equal(cent, ref[1])
    assert rep["iterations"] == ref[2]["iterations"]


@needs_gpu
@pytest.mark.parametrize("n,d,k", [(40000, 37, 600), (34000, 130, 513)])
@pytest.mark.parametrize("distance", TENSOR_DISTANCES)
def test_tensor_wide_blocks_match_dot(gpu, work, n, d, k, distance):
    """Many centroids (kpad >= 512: the tensor cores' wide blocks of 128 x 128, chunks in a
    pipeline of three buffers that runs on from one centroid block into the next) and enough
    points that the blocks are not split: the last centroid block part padding, d not a multiple
    of the 8-feature chunk, n not of the 128-point block. On well-separated clusters the labels,
    iterations and SSE of the feature-by-feature dot form."""
    skip_without_tensor_kernel(gpu, distance)
    x, init = blobs_near_origin(n + d + k, n, d, k, std=0.002)
    path, init_path = write_points(work / "x.txt", x), write_points(work / "init.txt", init)
    dot = kmeans(gpu, work, path, k, init_path, "--max-iter", 20, "--distance", "dot", tag="dot")
    labels, _, rep = kmeans(gpu, work, path, k, init_path, "--max-iter", 20, "--distance", distance, tag="tc")
    assert rep["centroid_splits"] == 1
    assert_labels_equal(labels, dot[0], f"{distance} vs dot")
    assert rep["iterations"] == dot[2]["iterations"]
    assert rel(rep["sse"], dot[2]["sse"]) <= 1e-5


@needs_gpu
@pytest.mark.parametrize("distance", ["dot-fp16", "dot-bf16"])
@pytest.mark.parametrize("scale,origin", [(1e5, 3e6), (1e-9, 0.0), (1.0, 1e3)],
                         ids=["beyond-fp16-range", "below-fp16-normals", "far-from-origin"])
def test_16bit_forms_shift_and_scale(gpu, work, distance, scale, origin):
    """The 16-bit forms shift the points and centroids by the centroids' initial mean and scale
    them by a power of two into fp16's range (km_half_prepare): clusters whose values lie beyond
    65504 (fp16's largest), below 2^-14 (its smallest normal) or 1000 away from the origin with a
    spread of 0.05 (rounded unshifted, fp16 would keep 0.5 of it) get the reference's labels and
    iterations."""
    skip_without_tensor_kernel(gpu, distance)
    x, init = blobs_near_origin(7, 6000, 20, 12)
    x, init = f32(x * scale + origin), f32(init * scale + origin)
    labels, cent, rep = kmeans(gpu, work, write_points(work / "x.txt", x), 12, init, "--distance", distance)
    ref_labels, ref_cent, ref_sse, ref_iter, ref_conv = lloyd(x, init)
    assert rep["params"]["distance"] == distance
    assert_labels_equal(labels, ref_labels, f"{distance} vs reference")
    assert rep["iterations"] == ref_iter and rep["converged"] is ref_conv
    assert rel(rep["sse"], ref_sse) <= 1e-4


@needs_gpu
@pytest.mark.parametrize("distance", TENSOR_DISTANCES)
def test_tensor_wide_blocks_out_of_core_give_the_in_memory_run(gpu, work, distance):
    """Out of core the wide blocks' packed copy of the points (km_pack) is made of each block every
    pass; the 16-bit forms' scale then comes from that block and the centroids: a power of two
    apart from the run in memory, which moves no rounding. So the labels and centroids are the
    in-memory run's byte for byte (uniform data: near-ties everywhere; k = 520, wide blocks in
    every form)."""
    from test_out_of_core import assert_same_run, run_kmeans, streaming_limit
    skip_without_tensor_kernel(gpu, distance)
    args = ["gen:uniform:n=50003,d=40,seed=3", "-k", 520, "--iterations", 5, "--distance", distance]
    in_memory = run_kmeans(gpu, work, "memory", *args)
    streamed = run_kmeans(gpu, work, "streamed", *args, "--device-memory", streaming_limit(in_memory[2]))
    assert streamed[2]["out_of_core"]["blocks"] > 2
    assert_same_run(streamed, in_memory, distance)


# ---- --distance auto (the default): the fastest distance with direct's labels ------------------


@pytest.mark.parametrize("d,k,used", [(2, 5, "direct"), (5, 51, "direct"), (4, 64, "dot"), (16, 256, "dot"),
                                      (40, 300, "dot"), (3, 100, "direct"), (4, 257, "direct")])
def test_auto_on_the_host(variant, work, d, k, used):
    """auto is the default; where the assign step runs on the host (seq, omp, the gpu variant
    without a GPU) it is the dot form from k d = 256 on, direct below and where k > 4^d (the dot
    form's rounding far from direct's): the report names the one used, the run is that
    distance's byte for byte, and on separated clusters its labels are direct's."""
    if variant.name == "gpu" and ON_GPU:
        pytest.skip("on a GPU auto chooses by the GPU's crossovers: test_auto_on_a_gpu")
    x = f32(separated_data(d * 100 + k, 2 * k + 50, d, k))
    path, init = write_points(work / "x.txt", x), random_rows(x, k, 1)
    labels, cent, rep = kmeans(variant, work, path, k, init, tag="auto")
    assert rep["params"]["distance"] == "auto" and rep["params"]["distance_used"] == used
    same = kmeans(variant, work, path, k, init, "--distance", used, tag="used")
    assert same[2]["params"]["distance_used"] == used
    assert np.array_equal(labels, same[0]) and np.array_equal(cent, same[1])
    assert rep["iterations"] == same[2]["iterations"]
    direct = kmeans(variant, work, path, k, init, "--distance", "direct", tag="direct")
    assert_labels_equal(labels, direct[0], f"auto ({used}) vs direct")


@needs_gpu
@pytest.mark.parametrize("d,k,used", [(2, 5, "direct"), (15, 256, "direct"), (16, 256, "dot-3xtf32"),
                                      (70, 1000, "dot-3xtf32"), (3, 1400, "direct")])
def test_auto_on_a_gpu(gpu, work, d, k, used):
    """On a GPU auto is direct where a small-run path takes the shape (k (d + 1) <= 4096 team sums
    and n kpad d <= 2^26), where k > 4^d or where k <= 32 (test_auto_on_a_gpu_by_n), and the
    tensor cores elsewhere: the report names the one used, and the
    run is that distance's, byte for byte; on well-separated clusters its labels are direct's."""
    skip_without_tensor_kernel(gpu)
    x, init = blobs_near_origin(d + k, 3 * k + 100, d, k, std=0.002)
    path, init_path = write_points(work / "x.txt", x), write_points(work / "init.txt", init)
    labels, cent, rep = kmeans(gpu, work, path, k, init_path, "--max-iter", 20, tag="auto")
    assert rep["params"]["distance"] == "auto" and rep["params"]["distance_used"] == used
    same = kmeans(gpu, work, path, k, init_path, "--max-iter", 20, "--distance", used, tag="used")
    assert np.array_equal(labels, same[0]) and np.array_equal(cent, same[1])
    direct = kmeans(gpu, work, path, k, init_path, "--max-iter", 20, "--distance", "direct", tag="direct")
    assert_labels_equal(labels, direct[0], f"auto ({used}) vs direct")


@needs_gpu
@pytest.mark.parametrize("n,d,k,used", [(2_000_000, 2, 16, "direct"), (2_200_000, 2, 16, "direct"),
                                        (340_000, 4, 48, "direct"), (360_000, 4, 48, "dot-3xtf32"),
                                        (300_000, 16, 32, "direct"), (300_000, 32, 32, "dot-3xtf32"),
                                        (300_000, 250, 16, "direct")])
def test_auto_on_a_gpu_by_n(gpu, work, n, d, k, used):
    """The fused path up to n kpad d = 2^26 points-times-work (direct); beyond it direct where the
    tuned kernels' one-pass kernel for few centroids is as fast as the tensor cores (kpad 16 at
    any d it takes, kpad 32 up to d = 16), the tensor cores elsewhere (kpad 32 at d = 32, kpad 48)."""
    skip_without_tensor_kernel(gpu)
    rep = work / "r.json"
    gpu.kmeans_ok(f"gen:uniform:n={n},d={d},seed=3", "-k", k, "--iterations", 1, "--report", rep)
    assert load_report(rep)["params"]["distance_used"] == used


def test_unknown_distance_names_auto(seq, work):
    rc, out, err = seq.run("kmeans", "gen:blobs:n=100,d=2", "-k", 3, "--distance", "fast", "--labels", work / "l.txt")
    assert rc == 2 and out == "" and list(work.iterdir()) == []
    assert err.count("\n") == 1
    assert "expected auto, direct, dot, gemm, gemm-tf32, dot-3xtf32, dot-tf32, dot-fp16 or dot-bf16, got 'fast'" in err


# ---- the gpu variant without a GPU --------------------------------------------------------


def gpu_usable(gpu_direct):
    rc, out, _ = gpu_direct.run("info")
    return rc == 0 and "kernels run on: GPU" in out


def test_gpu_without_allow_host_exits_3(gpu_direct, work):
    """No usable GPU and no --allow-host: exit status 3 and one line that names --allow-host.
    OMP_TARGET_OFFLOAD=DISABLED keeps the kernels on the host, so this holds on every
    machine (LLVM 19 still counts the GPU under DISABLED: the message must name the
    variable rather than blame the device image)."""
    envs = [{"OMP_TARGET_OFFLOAD": "DISABLED"}]
    if not gpu_usable(gpu_direct):
        envs.append({})  # this machine has no GPU: the plain call must fail the same way
    for env in envs:
        rc, out, err = gpu_direct.run("kmeans", "gen:blobs:n=1000,d=2", "-k", 3, "--labels", work / "l.txt",
                                      "--report", work / "r.json", env=env)
        assert rc == 3, (env, rc, err)
        lines = err.strip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("pragmaclust: error:"), err
        assert "--allow-host" in err
        if env:
            assert "OMP_TARGET_OFFLOAD" in err
        assert out == ""
        assert list(work.iterdir()) == []


def test_gpu_host_fallback_report(gpu, gpu_direct, work):
    _, _, rep = kmeans(gpu, work, "gen:blobs:n=1000,d=2", 3, "random")
    assert rep["variant"] == "gpu"
    if gpu_usable(gpu_direct):
        assert rep["device"]["offloading"] is True and rep["device"]["host_fallback"] is False
    else:
        assert rep["device"]["host_fallback"] is True
        assert rep["device"]["offloading"] is False
        assert "host" in rep["device"]["where"]


def test_host_variants_report_no_offload(seq, omp, work):
    for b in (seq, omp):
        _, _, rep = kmeans(b, work, "gen:blobs:n=1000,d=2", 3, "random", tag=b.name)
        assert rep["device"]["offloading"] is False and rep["device"]["host_fallback"] is False
        assert rep["variant"] == b.name


# ---- real data sets against scikit-learn -----------------------------------------------------

REAL = {"iris": 3, "s1": 15, "letter": 26}
_cache = {}


def real_case(data_dir, name):
    """(path, x float64, init float64, init file) for a data set, with init = k rows drawn with
    numpy seed 0 (default_rng(0).choice, without replacement)."""
    if name not in _cache:
        path = data_dir / f"{name}.txt"
        if not path.is_file():
            pytest.skip(f"{path} is missing")
        x = np.loadtxt(path, ndmin=2)
        k = REAL[name]
        init = x[np.random.default_rng(0).choice(len(x), k, replace=False)]
        _cache[name] = (path, x, init)
    return _cache[name]


def sklearn_fit(x, init):
    sk = pytest.importorskip("sklearn.cluster")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sk.KMeans(n_clusters=len(init), init=init, n_init=1, algorithm="lloyd", tol=0,
                         max_iter=1000).fit(x)


_sk_cache = {}


@pytest.mark.parametrize("name", ["iris", "s1"])
def test_real_data_matches_sklearn(variant, work, data_dir, name):
    """iris (k=3) and s1 (k=15): the same labels as scikit-learn's Lloyd (float64) from the
    same initial centroids, all of them, and the same SSE to 1e-4. The data are integers
    well inside float32's exact range, so the float32 program sees exactly sklearn's input."""
    path, x, init = real_case(data_dir, name)
    if name not in _sk_cache:
        _sk_cache[name] = sklearn_fit(x, init)
    km = _sk_cache[name]
    init_path = write_points(work / "init.txt", init, fmt="%.17g")
    labels, cent, rep = kmeans(variant, work, path, len(init), init_path)
    assert rep["converged"] is True
    assert agreement(labels, km.labels_) == 1.0, f"{agreement(labels, km.labels_):.5f}"
    assert rel(rep["sse"], km.inertia_) <= 1e-4
    np.testing.assert_allclose(cent, km.cluster_centers_, rtol=1e-4, atol=1e-4 * np.abs(x).max())


def test_letter_matches_reference_and_sklearn(variant, work, data_dir):
    """letter (20000 x 16, k=26) with --distance direct, the form whose ties are documented.
    Its features are integers x1000, so exact distance ties are
    common: from the seed-0 initial rows, 479 points are exactly equidistant from two initial
    centroids. pragmaclust (and reference.py) give such a point the lowest index, as
    documented; scikit-learn computes ||x||^2 - 2 x.c + ||c||^2 and its rounding decides the
    tie, so from the same start it follows another path (measured with sklearn 1.2.1: 86.9%
    equal labels, 81 vs 121 iterations, inertia 0.4% higher). That is not a pragmaclust error,
    so on letter:
      - against reference.py (float64, lowest-index ties) from the same initial rows: >= 99.9%
        equal labels (measured: all), SSE within 1e-5. Not required to be exact: the program's
        float32 distances of up to ~4e9 round to 256-unit steps, so in principle a float64
        tie or near-tie can break the other way;
      - against scikit-learn: started from pragmaclust's final centroids (as float64), sklearn
        must find them a fixed point: >= 99.9% equal labels (measured: all), inertia within
        1e-4 of the SSE, centroids within 1e-4."""
    path, x, init = real_case(data_dir, "letter")
    init_path = write_points(work / "init.txt", init, fmt="%.17g")
    labels, cent, rep = kmeans(variant, work, path, 26, init_path, "--distance", "direct")
    assert rep["converged"] is True and rep["params"]["distance_used"] == "direct"
    if "letter" not in _sk_cache:
        _sk_cache["letter"] = lloyd(x, init)
    ref_labels, ref_cent, ref_sse, ref_iter, _ = _sk_cache["letter"]
    assert agreement(labels, ref_labels) >= 0.999, f"{agreement(labels, ref_labels):.5f}"
    assert rel(rep["sse"], ref_sse) <= 1e-5
    km = sklearn_fit(x, cent.astype(np.float64))
    assert agreement(labels, km.labels_) >= 0.999, f"{agreement(labels, km.labels_):.5f}"
    assert rel(rep["sse"], km.inertia_) <= 1e-4
    np.testing.assert_allclose(km.cluster_centers_, cent, rtol=1e-4, atol=1e-4 * np.abs(x).max())


def test_letter_default_distance_is_a_lloyd_fixed_point(variant, work, data_dir):
    """letter with the default distance (auto: on the host, k.d = 416 picks dot). Its rounding
    may break letter's exact ties another way than direct's lowest index (docs/cli.md), so the
    run may take another path (measured: 115 iterations against 121, SSE 2e-5 higher). What
    must hold is that it ends at a true Lloyd fixed point: scikit-learn (float64), started
    from the program's centroids, keeps >= 99.9% of its labels (measured: all), inertia within
    1e-4 of the SSE, centroids within 1e-4; and the SSE within 1e-3 of the float64 reference's
    from the same start."""
    path, x, init = real_case(data_dir, "letter")
    init_path = write_points(work / "init.txt", init, fmt="%.17g")
    labels, cent, rep = kmeans(variant, work, path, 26, init_path)
    assert rep["converged"] is True and rep["params"]["distance"] == "auto"
    km = sklearn_fit(x, cent.astype(np.float64))
    assert agreement(labels, km.labels_) >= 0.999, f"{agreement(labels, km.labels_):.5f}"
    assert rel(rep["sse"], km.inertia_) <= 1e-4
    np.testing.assert_allclose(km.cluster_centers_, cent, rtol=1e-4, atol=1e-4 * np.abs(x).max())
    if "letter" not in _sk_cache:
        _sk_cache["letter"] = lloyd(x, init)
    assert rel(rep["sse"], _sk_cache["letter"][2]) <= 1e-3


def test_large_magnitude_values_are_refused(variant, work):
    """Values whose squared distances would overflow float32 (here 3e19: (6e19)^2 > FLT_MAX)
    are refused with a clear error instead of silently giving every point label 0; values
    just inside the safe range still cluster exactly like the float64 reference."""
    x = np.array([[3e19], [-3e19], [0.0], [1e19]])
    path = write_points(work / "x.txt", x)
    rc, out, err = variant.run("kmeans", path, "-k", 2, "--quiet")
    assert rc == 2
    assert err.strip().startswith("pragmaclust: error:") and "overflow" in err and len(err.strip().splitlines()) == 1
    safe = x / 1e1  # largest squared distance (6e18)^2 = 3.6e37 < FLT_MAX
    init = np.array([[-3e18], [0.0]])
    labels, _, rep = kmeans(variant, work, write_points(work / "safe.txt", safe), 2, init, "--max-iter", 1)
    ref_labels, _, ref_sse, _, _ = lloyd(safe, init, max_iter=1)
    assert list(ref_labels) == [1, 0, 1, 1]
    assert_labels_equal(labels, ref_labels)
    assert rel(rep["sse"], ref_sse) <= 1e-5


def test_report_json_escaping(variant, work):
    """The input path goes into the report: quotes, backslashes, tabs and non-ASCII letters
    must still give valid JSON that names the path exactly."""
    name = 'we"ird\\name\twith ü.txt'
    path = write_points(work / name, separated_data(4, 50, 2, 2))
    rc, out, err = variant.run("kmeans", path, "-k", 2, "--report", "-", "--quiet")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["input"] == str(path)


def test_sums_keep_centroids_accurate_at_ten_million(seq, omp, gpu, work):
    """n = 10^7 identical-ish values: float32 running sums would drift by far more than 1e-6
    relative (a float sum stops growing past 2^24 ulp steps); the 64-bit fixed-point sums must
    give the mean to float precision."""
    n = 10_000_000
    rng = np.random.default_rng(3)
    x = (0.1 + 0.01 * rng.random(n, dtype=np.float64)).astype(np.float32)
    path = work / "big.f32"
    x.tofile(path)
    exact = float(x.astype(np.float64).mean())
    for b in (seq, omp, gpu):
        _, centroids, _ = kmeans(b, work, path, 1, "random", "--shape", f"{n},1", "--max-iter", 2, tag=b.name)
        assert abs(float(centroids[0][0]) - exact) <= 1e-6 * exact, (b.name, centroids, exact)


def test_sums_keep_centroids_accurate_at_every_scale(variant, work):
    """Each dimension gets its own power-of-two scale for the fixed-point sums (kmeans.c,
    km_fixed_scales): values near 1e-30 (below 2^-64, where the scale stops at 2^126), values
    1e6 from the origin with a spread of 1, values of both signs around 0, and a dimension of
    zeros all give the mean to float precision, in every variant and both update modes."""
    rng = np.random.default_rng(9)
    n = 5000
    x = np.stack([1e-30 * (1 + rng.random(n)), 1e6 + rng.random(n), rng.normal(0, 1, n), np.zeros(n)], axis=1)
    x = x.astype(np.float32)
    exact = x.astype(np.float64).mean(axis=0)
    path = write_points(work / "scales.txt", x)
    modes = ["device", "host"] if variant.name == "gpu" else ["device"]
    for mode in modes:
        _, cent, _ = kmeans(variant, work, path, 1, x[:1], "--max-iter", 2, "--update", mode, tag=mode)
        got = cent[0].astype(np.float64)
        for j in range(3):
            assert abs(got[j] - exact[j]) <= 2e-7 * np.abs(x[:, j]).max(), (mode, j, got[j], exact[j])
        assert got[0] > 0 and abs(got[0] - exact[0]) <= 1e-6 * exact[0], (mode, got[0], exact[0])
        assert got[3] == 0.0


# ---- tuned and portable kernels (algorithms/kmeans_tuned.h, kmeanspp_tuned.h) ----------------


@pytest.mark.parametrize("distance", ["direct", "dot"])
@pytest.mark.parametrize("extra", [["--init", "random"], ["--init", "kmeans++"], ["--init", "kmeans++", "--update", "host"]],
                         ids=["random", "kmeanspp", "kmeanspp-host-update"])
def test_tuned_and_portable_kernels_give_the_same_result(variant, work, distance, extra):
    """Both --kernels modes: the same labels, centroids and iterations, on uniform data (near-ties
    abound) and at a d where the CPU's blocked loop takes several chunks; and the report names
    the kernels that ran (on a GPU the tuned ones, on the host those of its variant; the portable
    ones in a build without tuned kernels, GCC's gpu build; the gpu variant's small runs take all
    their iterations in one team, whichever the mode)."""
    small_run = variant.name == "gpu" and "host" not in extra  # km_small_run_path: small, updated on the device
    for gen, k, small in (("gen:uniform:n=3000,d=5,seed=3", 19, small_run),
                          ("gen:blobs:n=2000,d=300,centers=9,seed=4", 40, False)):
        out = {}
        for mode in ("tuned", "portable"):
            rc, _, err = variant.run("kmeans", gen, "-k", k, "--distance", distance, *extra, "--kernels", mode,
                                     "--max-iter", 30, "--labels", work / f"{mode}.npy", "--centroids",
                                     work / f"{mode}.c.npy", "--report", work / f"{mode}.json", "--quiet")
            assert rc == 0, err
            rep = json.loads((work / f"{mode}.json").read_text())
            assert rep["kernels"] == mode
            out[mode] = (np.load(work / f"{mode}.npy"), np.load(work / f"{mode}.c.npy"), rep["iterations"],
                         rep["assign_kernels"])
        if small:
            assert out["portable"][3] == out["tuned"][3] == "one-team"
        else:
            assert out["portable"][3] == "portable"
        if has_tuned_kernels(variant) and (variant.name != "gpu" or ON_GPU) and not small:
            assert out["tuned"][3] != "portable"  # a build with tuned kernels ran them
        np.testing.assert_array_equal(out["tuned"][0], out["portable"][0])
        np.testing.assert_array_equal(out["tuned"][1], out["portable"][1])
        assert out["tuned"][2] == out["portable"][2]


@pytest.mark.parametrize("distance", ["direct", "dot"])
@pytest.mark.parametrize("gen, k", [("gen:uniform:n=5001,d=7,seed=3", 13),      # kpad 16: two points a thread
                                    ("gen:uniform:n=5001,d=7,seed=3", 29),      # kpad 32: one point a thread
                                    ("gen:uniform:n=400003,d=5,seed=3", 13),    # teams take several blocks each
                                    ("gen:uniform:n=400003,d=5,seed=3", 29),
                                    ("gen:uniform:n=1029,d=250,seed=5", 9),     # 4000 centroid values staged
                                    ("gen:uniform:n=1029,d=260,seed=5", 9)])    # too many to stage: team-tiled
def test_few_centroid_kernel_matches_sequential(seq, gpu, work, gen, k, distance):
    """The gpu variant's one-pass kernel for k <= 32 (km_assign_few, kmeans_assign_gpu.c), off the
    small-run paths (--update host): uniform data, where near-ties abound, give seq's labels,
    centroids and iterations bit for bit, with n not a multiple of a team's points, and with more
    blocks of points than teams (each team takes several). Without a GPU
    the portable loop runs, as the report says."""
    out = {}
    for b in (seq, gpu):
        rep = work / f"{b.name}.json"
        b.kmeans_ok(gen, "-k", k, "--distance", distance, "--update", "host", "--max-iter", 25, "--labels",
                    work / f"{b.name}.npy", "--centroids", work / f"{b.name}.c.npy", "--report", rep)
        out[b.name] = (np.load(work / f"{b.name}.npy"), np.load(work / f"{b.name}.c.npy"), load_report(rep))
    assert out["gpu"][2]["assign_kernels"] != ("portable" if ON_GPU and has_tuned_kernels(gpu) else "one-team")
    np.testing.assert_array_equal(out["gpu"][0], out["seq"][0])
    np.testing.assert_array_equal(out["gpu"][1], out["seq"][1])
    assert out["gpu"][2]["iterations"] == out["seq"][2]["iterations"] > 2


@pytest.mark.parametrize("shape", ["uniform-d8-k8", "negative-d4-k12", "blobs-d16-k20", "uniform-d5-k40"])
def test_sums_in_the_assign_step_match_sequential(seq, gpu, work, shape):
    """The general path (n kpad d above the small-run paths' bound) with the update on the device:
    where the gpu variant's kernel for few centroids also adds the points to the update's sums
    (km_gpu_assign_and_sum: kpad <= 32, d <= 8) and where the sums are taken apart (d = 16, k = 40),
    labels, centroids and iterations are seq's bit for bit, also with values of both signs far from
    the origin."""
    if shape == "negative-d4-k12":
        rng = np.random.default_rng(5)
        x = (rng.normal(0, 30, (1100000, 4)) + rng.integers(-3, 3, (1100000, 1)) * 400 - 900).astype(np.float32)
        data, k = work / "negative.npy", 12
        np.save(data, x)
    else:
        data, k = {"uniform-d8-k8": ("gen:uniform:n=600000,d=8,seed=3", 8),
                   "blobs-d16-k20": ("gen:blobs:n=300000,d=16,centers=20,box=1000,seed=4", 20),
                   "uniform-d5-k40": ("gen:uniform:n=300000,d=5,seed=6", 40)}[shape]
    out = {}
    for b in (seq, gpu):
        rep = work / f"{b.name}.json"
        b.kmeans_ok(data, "-k", k, "--distance", "direct", "--max-iter", 8, "--labels", work / f"{b.name}.npy",
                    "--centroids", work / f"{b.name}.c.npy", "--report", rep)
        out[b.name] = (np.load(work / f"{b.name}.npy"), np.load(work / f"{b.name}.c.npy"), load_report(rep))
    assert out["gpu"][2]["update_sums"] == "whole-clusters"
    assert out["gpu"][2]["assign_kernels"] not in ("one-team", "fused")
    np.testing.assert_array_equal(out["gpu"][0], out["seq"][0])
    np.testing.assert_array_equal(out["gpu"][1], out["seq"][1])
    assert out["gpu"][2]["iterations"] == out["seq"][2]["iterations"]


@pytest.mark.parametrize("gen, k, extra, path", [
    ("gen:uniform:n=20000,d=3,seed=7", 5, [], "fused"),                          # the fixed-cost case
    ("gen:blobs:n=150,d=4,centers=3,seed=2", 3, [], "one-team"),                 # iris-sized
    ("gen:uniform:n=3000,d=64,seed=3", 9, ["--distance", "dot"], "fused"),
    ("gen:uniform:n=400,d=70,seed=3", 9, ["--distance", "dot"], "one-team"),     # norms of two feature chunks
    ("gen:uniform:n=3000,d=70,seed=3", 9, ["--distance", "dot"], "fused"),
    ("gen:blobs:n=2000,d=4,centers=3,box=1000,seed=1", 6, ["--distance", "dot"], "one-team"),  # far from the origin
    ("gen:blobs:n=30000,d=4,centers=3,box=1000,seed=1", 6, ["--distance", "dot"], "fused"),
    ("gen:blobs:n=1001,d=2,centers=3,seed=1", 40, [], "one-team"),               # empty clusters keep their centroid
    ("gen:blobs:n=20001,d=2,centers=3,seed=1", 40, [], "fused"),
    ("gen:uniform:n=4000,d=5,seed=2", 5, ["--iterations", "7"], "one-team"),     # fixed iterations
    ("gen:uniform:n=40000,d=5,seed=2", 5, ["--iterations", "7"], "fused"),
    ("gen:uniform:n=4000,d=5,seed=2", 5, ["--tol", "1e-4"], "one-team"),         # stopped by the shift
    ("gen:uniform:n=40000,d=5,seed=2", 5, ["--tol", "1e-4"], "fused"),
    ("gen:uniform:n=40000,d=5,seed=2", 5, ["--max-iter", "3"], "fused"),          # stopped before converging
    ("gen:uniform:n=40000,d=5,seed=2", 5, ["--max-iter", "1"], "fused"),
])
def test_small_run_paths_match_sequential(seq, gpu, work, gen, k, extra, path):
    """The gpu variant's runs of small k (d + 1) (km_small_run_path): the smallest take every
    iteration in one target region on one team (km_iterate_in_one_team), the next ones one region
    an iteration (assignment and team-local sums in one pass, the last team to finish makes the
    centroids: km_fused_pass, with several teams; on the host fallback one per thread,
    OMP_NUM_THREADS=2). Both give seq's labels, centroids and iteration count bit for bit (runs
    stopped by convergence, --tol, --max-iter or --iterations), and the report names the path; a
    run of larger k (d + 1) takes neither."""
    out = {}
    for b in (seq, gpu):
        rc, _, err = b.run("kmeans", gen, "-k", k, *extra, "--labels", work / f"{b.name}.npy", "--centroids",
                           work / f"{b.name}.c.npy", "--report", work / f"{b.name}.json", "--quiet")
        assert rc == 0, err
        rep = json.loads((work / f"{b.name}.json").read_text())
        out[b.name] = (np.load(work / f"{b.name}.npy"), np.load(work / f"{b.name}.c.npy"), rep["iterations"],
                       rep["assign_kernels"])
    assert out["gpu"][3] == path
    np.testing.assert_array_equal(out["gpu"][0], out["seq"][0])
    np.testing.assert_array_equal(out["gpu"][1], out["seq"][1])
    assert out["gpu"][2] == out["seq"][2]
    rc, _, err = gpu.run("kmeans", "gen:uniform:n=2000,d=300,seed=7", "-k", 40, "--max-iter", 2, "--report",
                         work / "big.json", "--quiet")
    assert rc == 0, err
    assert json.loads((work / "big.json").read_text())["assign_kernels"] not in ("one-team", "fused")


def test_kernels_option_is_checked(seq, work):
    rc, _, err = seq.run("kmeans", "gen:uniform:n=100,d=2", "-k", 2, "--kernels", "fast")
    assert rc == 2 and "--kernels" in err and "fast" in err

