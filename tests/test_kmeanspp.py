"""k-means++ seeding (--init kmeans++): every variant picks the rows an independent
implementation of the documented rule picks (tests/kmeanspp_reference.py), so Lloyd started from
them gives exactly the result of Lloyd started from those rows given as a file."""
import numpy as np
import pytest

from helpers import load_labels, load_report, write_points
from kmeanspp_reference import hash_uniform, kmeanspp

# n > one scan block (256 points) at 4500; > one tile of block totals (512 blocks) at 140000
CASES = [(1, 300, 2, 5), (2, 500, 3, 17), (3, 2500, 4, 33), (7, 4500, 2, 3), (5, 140000, 2, 4)]


@pytest.mark.parametrize("seed,n,d,k", CASES)
def test_kmeanspp_picks_the_reference_rows(variant, work, seed, n, d, k):
    rng = np.random.default_rng(seed)
    x = rng.random((n, d)) * 10
    data = write_points(work / "x.txt", x)
    rows = kmeanspp(x, k, seed)
    assert len(set(rows)) == k
    init = write_points(work / "init.txt", x.astype(np.float32)[rows])
    runs = {}
    for tag, init_arg in (("pp", "kmeans++"), ("file", init)):
        labels, report = work / f"{tag}.labels.txt", work / f"{tag}.json"
        variant.kmeans_ok(data, "-k", k, "--init", init_arg, "--seed", seed, "--max-iter", 5, "--labels", labels,
                          "--report", report)
        runs[tag] = (load_labels(labels), load_report(report))
    assert np.array_equal(runs["pp"][0], runs["file"][0])
    assert runs["pp"][1]["sse"] == runs["file"][1]["sse"]


def test_generator_matches_the_c_one(seq, work):
    """The reference's generator is the C one: the same uniform data comes out of gen:uniform."""
    out = work / "g.txt"
    rc, _, err = seq.run("generate", "gen:uniform:n=3,d=2,seed=5", "--out", out)
    assert rc == 0, err
    got = np.loadtxt(out)
    want = np.array([[hash_uniform(5, 1, i * 2 + j) for j in range(2)] for i in range(3)], dtype=np.float32)
    assert np.array_equal(got.astype(np.float32), want)


def test_kmeanspp_spreads_over_planted_clusters(seq, work):
    """On well separated clusters k-means++ puts one centre in each of most clusters."""
    data = "gen:blobs:n=4000,d=2,centers=10,std=0.05,box=10,seed=9"
    truth = work / "truth.txt"
    seq.run("generate", data, "--out", work / "x.txt", "--truth", truth)
    hits = []
    for seed in range(1, 6):
        labels = work / f"l{seed}.txt"
        seq.kmeans_ok(data, "-k", 10, "--init", "kmeans++", "--seed", seed, "--max-iter", 1, "--labels", labels)
        t, lab = np.loadtxt(truth, dtype=int), load_labels(labels)
        hits.append(len({tuple(sorted(set(lab[t == c]))) for c in range(10)}))
    assert np.mean(hits) >= 9


def test_kmeanspp_with_too_few_distinct_points(seq, work):
    x = np.array([[1.0, 1.0]] * 20 + [[2.0, 2.0]] * 20)
    rc, _, err = seq.run("kmeans", write_points(work / "x.txt", x), "-k", 3, "--init", "kmeans++",
                         "--labels", work / "l.txt")
    assert rc == 2 and "k-means++" in err and len(err.strip().splitlines()) == 1
    assert not (work / "l.txt").exists()
