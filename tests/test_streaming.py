"""Streaming k-means (streamkm): the points each chunk keeps, their weights and the centres are
those of an independent implementation of the documented rule (tests/streamkm_reference.py);
every variant gives the same bits for the same seed; the cost on planted clusters is close to
Lloyd's on the whole data; the report and the options behave as documented."""
import json

import numpy as np
import pytest
from sklearn.cluster import KMeans

from helpers import load_labels, load_matrix, load_report, write_points
from streamkm_reference import default_chunk_size, default_repetitions, draws_per_round, streamkm


def run_streamkm(binary, data, *args):
    rc, out, err = binary.run("streamkm", data, *args, "--quiet")
    assert rc == 0, f"{binary.name} streamkm {data} {args} -> {rc}\n{err}"
    return out


def generated(seq, work, spec):
    """The points of a gen: spec as the program makes them."""
    out = work / "gen.npy"
    rc, _, err = seq.run("generate", "gen:" + spec, "--out", out)
    assert rc == 0, err
    return np.load(out)


def load_kept(path):
    kept = np.loadtxt(path, dtype=np.int64, ndmin=2)
    return [tuple(map(int, row)) for row in kept]


# (spec, k, seed, extra options): several chunks with a short last one, k = 1 and 2 (three draws
# per round), a file input.
REFERENCE_CASES = [
    ("uniform:n=400,d=2,seed=4", 3, 1, []),
    ("blobs:n=450,d=3,centers=5,std=0.4,seed=2", 5, 7, ["--chunk-size", "100"]),
    ("uniform:n=150,d=2,seed=9", 1, 3, []),
    ("blobs:n=300,d=2,centers=2,seed=5", 2, 2, ["--repetitions", "4"]),
]


@pytest.mark.parametrize("spec,k,seed,extra", REFERENCE_CASES)
def test_matches_the_reference(variant, seq, work, spec, k, seed, extra):
    x = generated(seq, work, spec)
    opts = dict(zip(extra[::2], extra[1::2]))
    kept, centres = streamkm(x, k, seed, chunk_size=int(opts.get("--chunk-size", 0)) or None,
                             repetitions=int(opts.get("--repetitions", 0)) or None)
    run_streamkm(variant, "gen:" + spec, "-k", k, "--seed", seed, *extra, "--kept", work / "kept.txt",
                 "--centres", work / "c.txt")
    assert load_kept(work / "kept.txt") == kept
    assert sum(w for _, w in kept) == len(x)
    assert np.array_equal(load_matrix(work / "c.txt"), centres)


def test_file_input_matches_the_generator(seq, work):
    """A file is streamed like the generator that wrote it."""
    spec = "blobs:n=500,d=3,centers=4,seed=3"
    x = generated(seq, work, spec)
    data = write_points(work / "x.txt", x)
    for name, source in (("gen", "gen:" + spec), ("file", data)):
        run_streamkm(seq, source, "-k", 4, "--kept", work / f"{name}.kept", "--centres", work / f"{name}.c",
                     "--labels", work / f"{name}.l")
    assert load_kept(work / "gen.kept") == load_kept(work / "file.kept")
    assert np.array_equal(load_matrix(work / "gen.c"), load_matrix(work / "file.c"))
    assert np.array_equal(load_labels(work / "gen.l"), load_labels(work / "file.l"))


# Variants must agree bit for bit: defaults, a short last chunk, k = 200 (4800 points per
# k-means# run: the weighting counts them in two windows of team-local counters), and Okuda's
# A-ary wheel search (--search-arity), which must pick what the default binary search picks.
AGREEMENT_CASES = [
    ("blobs:n=6000,d=5,centers=12,std=0.3,seed=11", ["-k", 12]),
    ("blobs:n=6000,d=5,centers=12,std=0.3,seed=11", ["-k", 12, "--search-arity", 1024]),
    ("uniform:n=3001,d=3,seed=2", ["-k", 7, "--chunk-size", 500, "--seed", 5, "--search-arity", 3]),
    ("uniform:n=3001,d=3,seed=2", ["-k", 7, "--chunk-size", 500, "--seed", 5]),
    ("uniform:n=5000,d=2,seed=6", ["-k", 200, "--chunk-size", 5000, "--repetitions", 1]),
    # d > 8: the generic distance loop; 3,000 points a chunk: the GPU splits them into teams of 256
    ("blobs:n=12000,d=12,centers=6,std=0.5,seed=8", ["-k", 6, "--chunk-size", 3000]),
]


@pytest.mark.parametrize("spec,args", AGREEMENT_CASES)
def test_variants_agree(all_variants, work, spec, args):
    results = {}
    for name, binary in all_variants.items():
        run_streamkm(binary, "gen:" + spec, *args, "--kept", work / f"{name}.kept", "--centres",
                     work / f"{name}.c.npy", "--labels", work / f"{name}.l.npy", "--report", work / f"{name}.json")
        results[name] = (load_kept(work / f"{name}.kept"), np.load(work / f"{name}.c.npy"),
                         np.load(work / f"{name}.l.npy"), load_report(work / f"{name}.json")["cost"])
    first = results["seq"]
    for name, got in results.items():
        assert got[0] == first[0], name
        assert np.array_equal(got[1], first[1]), name
        assert np.array_equal(got[2], first[2]), name
        assert got[3] == first[3], name


def test_search_arity_picks_the_same_points(seq, work):
    """Every arity of the wheel's search keeps the same points, as the documented rule says."""
    spec = "gen:uniform:n=3001,d=3,seed=2"
    kept = []
    for arity in (2, 3, 1024):
        run_streamkm(seq, spec, "-k", 7, "--chunk-size", 500, "--search-arity", arity, "--kept", work / "k.txt",
                     "--report", work / "r.json")
        kept.append(load_kept(work / "k.txt"))
        assert load_report(work / "r.json")["params"]["search_arity"] == arity
    assert kept[0] == kept[1] == kept[2]


def test_cost_close_to_lloyd_on_planted_clusters(seq, work):
    """Ten well separated Gaussian clusters, several chunks. The centres are data points, so even
    one per cluster at its best costs about twice Lloyd's (E|x - c|^2 = 2 sigma^2 d for c drawn
    from the cluster); D^2 seeding of the union sometimes puts two centres in one cluster (as
    plain k-means++ does), so the median over seeds is held to 2.5x and every seed to 30x."""
    spec = "blobs:n=30000,d=8,centers=10,std=0.3,seed=5"
    x = generated(seq, work, spec).astype(np.float64)
    lloyd = KMeans(10, init="k-means++", n_init=3, random_state=0).fit(x).inertia_
    ratios = []
    for seed in range(1, 8):
        run_streamkm(seq, "gen:" + spec, "-k", 10, "--seed", seed, "--report", work / "r.json",
                     "--labels", work / "l.npy", "--centres", work / "c.npy")
        report = load_report(work / "r.json")
        c = np.load(work / "c.npy").astype(np.float64)
        d2 = ((x[:, None, :] - c[None]) ** 2).sum(-1)
        assert np.array_equal(np.load(work / "l.npy"), d2.argmin(1))
        assert report["cost"] == pytest.approx(d2.min(1).sum(), rel=1e-9)
        assert report["params"]["chunk_size"] == default_chunk_size(30000, 10) < 30000
        ratios.append(report["cost"] / lloyd)
    assert np.median(ratios) <= 2.5, ratios
    assert max(ratios) <= 30, ratios


def test_report(seq, work):
    run_streamkm(seq, "gen:uniform:n=2000,d=8,seed=1", "-k", 4, "--report", work / "r.json", "--repeat", 2,
                 "--warmup", 1)
    r = load_report(work / "r.json")
    assert r["subcommand"] == "streamkm" and r["n"] == 2000 and r["d"] == 8 and r["k"] == 4
    assert r["params"]["chunk_size"] == default_chunk_size(2000, 4) == 90
    assert r["params"]["repetitions"] == default_repetitions(2000) == 23
    assert r["params"]["draws_per_round"] == draws_per_round(4) == 6
    assert r["chunks"] == 23 and r["cost"] > 0
    phases = r["timing"]["phases_s"]
    assert set(phases) == {"generation", "transfers", "distance", "selection", "weighting", "other"}
    assert len(r["runs"]) == 2
    total = r["runs"][0]["total_s"]
    assert sum(r["runs"][0][p] for p in phases) == pytest.approx(total, rel=1e-6, abs=1e-9)


def test_draws_per_round():
    assert [draws_per_round(k) for k in (1, 2, 3, 4, 5, 8, 9, 64)] == [3, 3, 6, 6, 9, 9, 12, 18]


def test_help_and_summary(seq, work):
    rc, out, err = seq.run("streamkm", "--help")
    assert rc == 0 and out.startswith("usage: pragmaclust-seq streamkm ") and err == ""
    rc, out, err = seq.run("streamkm", "gen:uniform:n=100,d=2", "-k", 2, "--labels", work / "l.txt")
    assert rc == 0 and out == "" and err.startswith("streamkm [seq") and "cost" in err and err.count("\n") == 1


def test_tuned_and_portable_kernels_give_the_same_centres(variant, work):
    """--kernels portable and tuned (the D^2 sampling's distance passes): the same centres and
    kept points, at d <= 8 (where the gpu build has tuned passes) and beyond."""
    for gen in ("gen:blobs:n=20000,d=3,centers=6,seed=5", "gen:blobs:n=6000,d=12,centers=6,seed=5"):
        got = {}
        for mode in ("tuned", "portable"):
            rc, _, err = variant.run("streamkm", gen, "-k", 6, "--kernels", mode, "--centres", work / f"{mode}.npy",
                                     "--kept", work / f"{mode}.kept", "--quiet")
            assert rc == 0, err
            got[mode] = (np.load(work / f"{mode}.npy"), (work / f"{mode}.kept").read_text())
        np.testing.assert_array_equal(got["tuned"][0], got["portable"][0])
        assert got["tuned"][1] == got["portable"][1]
