"""Density peaks (GDPC): every variant and index against an independent brute-force reference
(tests/dpc_reference.py) on random inputs, duplicates and ties; incremental insertion against the
reference after every batch; the real data sets against their ground truth (adjusted Rand index);
the report and the options.

The result must be identical, not just close: the same rho, the same delta (bit for bit: the CSV
holds 17 significant digits), the same dependent points and the same labels.
"""
import json

import numpy as np
import pytest

from dpc_reference import dpc as reference, read_graph, sq_distances
from helpers import load_labels, write_points

INDEXES = ("vptree", "none")
# (index, search): search is --rho-search and --delta-search (which apply to the VP-tree only)
MODES = (("vptree", "point"), ("vptree", "leaf"), ("none", "point"))


def search_args(search, delta_search=None):
    return ["--rho-search", search, "--delta-search", delta_search or search]


def run_dpc(binary, work, data, *args, tag="run"):
    graph, labels, report = work / f"{tag}.csv", work / f"{tag}.labels.txt", work / f"{tag}.json"
    rc, out, err = binary.run("dpc", data, *args, "--decision-graph", graph, "--labels", labels,
                              "--report", report, "--quiet", timeout=300)
    assert rc == 0, f"{binary.name} dpc {data} {args}: exit {rc}\n{err}"
    rho, delta, dep, lab = read_graph(graph)
    assert np.array_equal(load_labels(labels), lab)
    return (rho, delta, dep, lab), json.loads(report.read_text())


def assert_same(got, want, context):
    for name, g, w in zip(("rho", "delta", "dependent", "labels"), got, want):
        bad = np.flatnonzero(g != w)
        assert bad.size == 0, f"{context}: {bad.size} {name} differ, first {bad[:6]}: got {g[bad[:6]]} want {w[bad[:6]]}"


def check(binary, work, x, dc, index, peaks=None, thresholds=None, extra=(), search="point", delta_search=None):
    x = np.asarray(x, dtype=np.float32)  # the values the program reads (%.9g round-trips them)
    path = write_points(work / "x.txt", x)
    sel = ["--peaks", peaks] if peaks is not None else ["--rho-min", thresholds[0], "--delta-min", thresholds[1]]
    got, rep = run_dpc(binary, work, path, "--dc", repr(float(dc)), *sel, "--index", index,
                       *search_args(search, delta_search), *extra)
    want = reference(np.asarray(x, dtype=np.float32), dc, peaks=peaks,
                     rho_min=thresholds and thresholds[0], delta_min=thresholds and thresholds[1])
    assert_same(got, want, f"{binary.name}/{index}/{search}/{delta_search or search}")
    assert rep["clusters"] == want[3].max() + 1
    assert rep["params"]["index"] == index and rep["params"]["rho_search"] == search
    assert rep["params"]["delta_search"] == (delta_search or search)
    return rep


def blobs(seed, n, d, noise=0.1):
    rng = np.random.default_rng(seed)
    centers = rng.random((4, d))
    k = int(n * (1 - noise)) // 4
    x = np.concatenate([c + 0.05 * rng.standard_normal((k, d)) for c in centers] + [rng.random((n - 4 * k, d))])
    rng.shuffle(x)
    return x.astype(np.float32)


@pytest.mark.parametrize("index,search", MODES)
@pytest.mark.parametrize("seed,n,d,dc,peaks", [
    (1, 300, 1, 0.01, 3), (2, 500, 2, 0.05, 4), (3, 400, 2, 0.12, 6), (4, 300, 3, 0.1, 4), (5, 250, 5, 0.3, 5),
    (6, 33, 2, 0.2, 2), (7, 700, 2, 0.02, 10)])
def test_random_inputs_match_reference(variant, work, index, search, seed, n, d, dc, peaks):
    check(variant, work, blobs(seed, n, d), dc, index, peaks=peaks, search=search)


@pytest.mark.parametrize("search,delta_search", (("point", "leaf"), ("leaf", "point")))
@pytest.mark.parametrize("seed,n,d,dc,peaks", [(2, 500, 2, 0.05, 4), (5, 250, 5, 0.3, 5), (7, 700, 2, 0.02, 10)])
def test_searches_mixed_match_reference(variant, work, search, delta_search, seed, n, d, dc, peaks):
    check(variant, work, blobs(seed, n, d), dc, "vptree", peaks=peaks, search=search, delta_search=delta_search)


ADVERSARIAL = {
    # many identical points (rho ties, zero distances), and a few copies elsewhere
    "duplicates": (np.array([[0.5, 0.5]] * 40 + [[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 5 + [[0.5, 0.6]] * 2), 0.05, 3),
    # all points identical: every rho is n, the densest is point 0, every delta 0
    "all_identical": (np.ones((37, 2)), 0.5, 1),
    # an integer lattice: distances tie everywhere, d_c exactly a lattice distance (strict <)
    "lattice_at_dc": (np.array([[i, j] for i in range(9) for j in range(7)], dtype=float), 1.0, 4),
    # d_c below every distance: all rho are 1, denser means lower index
    "tiny_dc": (np.random.default_rng(3).random((90, 2)), 1e-6, 3),
    # d_c above every distance: all rho are n
    "huge_dc": (np.random.default_rng(4).random((90, 3)), 10.0, 2),
    # one point, and two
    "one_point": (np.array([[1.0, 2.0]]), 1.0, 1),
    "two_points": (np.array([[0.0], [1.0]]), 0.5, 2),
    # as many peaks as points (more are refused: test_bad_input's dpc_peaks_beyond_n)
    "peaks_equal_n": (np.random.default_rng(5).random((10, 2)), 0.3, 10),
    # integer data with many equal distances to the vantage points (median ties in the tree)
    "integer_grid_dups": (np.random.default_rng(6).integers(0, 5, (400, 2)).astype(float), 1.5, 5),
    # a line of equally spaced points: every distance to the dependent point ties
    "equal_spacing": (np.array([[0.25 * i] for i in range(70)]), 0.6, 3),
}


@pytest.mark.parametrize("index,search", MODES)
@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_adversarial_inputs_match_reference(variant, work, index, search, case):
    x, dc, peaks = ADVERSARIAL[case]
    check(variant, work, x, dc, index, peaks=peaks, search=search)


@pytest.mark.parametrize("index,search", MODES)
def test_thresholds_match_reference(variant, work, index, search):
    x = blobs(8, 400, 2)
    rho, delta, _, _ = reference(np.asarray(x, dtype=np.float32), 0.08, peaks=1)
    check(variant, work, x, 0.08, index, thresholds=(float(np.median(rho)), 0.2), search=search)


@pytest.mark.parametrize("case", ("2", "40", "70", "70-all"))
def test_leaf_search_stages_in_rounds_and_in_place(variant, work, case):
    """The per-leaf searches with many candidate leaves (more rounds than one), and with leaves too
    wide to stage in team memory (d = 70: 32 x 70 coordinates, read in place); 70-all: d_c beyond
    the data's diameter, so every leaf is a candidate of every leaf (64 leaves: two rounds of
    DPC_LEAF_LIST read in place)."""
    d, n, dc, leaves = {"2": (2, 2500, 0.3, 128), "40": (40, 900, 1.2, 32), "70": (70, 900, 1.6, 32),
                        "70-all": (70, 1300, 20.0, 64)}[case]
    rep = check(variant, work, blobs(30 + d, n, d), dc, "vptree", peaks=4, search="leaf")
    assert rep["tree_leaves"] >= leaves


def test_variants_and_indexes_agree_on_blobs(all_variants, work):
    data = "gen:blobs:n=6000,d=2,centers=12,std=0.3,box=6,noise=0.05,seed=4"
    results = {}
    for name, binary in all_variants.items():
        for index, search in MODES:
            results[(name, index, search)] = run_dpc(binary, work, data, "--dc", "0.2", "--peaks", "12", "--index",
                                                     index, *search_args(search), tag=f"{name}{index}{search}")
    (_, (first, rep0)), *rest = results.items()
    assert rep0["clusters"] == 12
    for key, (got, rep) in rest:
        assert_same(got, first, str(key))
    tree = results[("seq", "vptree", "point")][1]["distance_computations"]
    leaf = results[("seq", "vptree", "leaf")][1]["distance_computations"]
    pairs = results[("seq", "none", "point")][1]["distance_computations"]
    assert tree < 0.2 * pairs and leaf < 0.2 * pairs, (tree, leaf, pairs)
    for key, (_, rep) in results.items():  # the count is the method's, the same in every variant
        assert rep["distance_computations"] == results[("seq",) + key[1:]][1]["distance_computations"], key
        if key[1] == "vptree":  # the same points need the search beyond d_c, whichever the method
            assert rep["global_searches"] == rep0["global_searches"] > 0, key


@pytest.mark.parametrize("index,search", MODES)
@pytest.mark.parametrize("method", ("incidental", "separate"))
@pytest.mark.parametrize("case", ("blobs", "duplicates"))
def test_incremental_equals_recomputation_after_each_batch(variant, work, index, search, method, case):
    """--rho-search and --delta-search apply to the base run and to --verify's recomputations; the
    batches always search per point."""
    if case == "blobs":
        x, dc = blobs(11, 420, 2), 0.06
    else:
        rng = np.random.default_rng(12)
        x = np.concatenate([np.repeat([[0.5, 0.5]], 70, axis=0), rng.integers(0, 6, (150, 2)) / 5.0,
                            rng.random((150, 2))])
        rng.shuffle(x)
        x = x.astype(np.float32)
        dc = 0.2
    path = write_points(work / "x.txt", x)
    base, batch = 40, 55
    for batches in (1, 2, 4, 7):  # the state after each of these batches, against the reference
        m = min(len(x), base + batches * batch)
        sub = write_points(work / f"x{m}.txt", x[:m])
        got, rep = run_dpc(variant, work, sub, "--dc", repr(dc), "--peaks", "4", "--index", index, "--base", base,
                           "--batch", batch, "--rho-update", method, *search_args(search), tag=f"b{batches}")
        assert rep["params"]["rho_search"] == rep["params"]["delta_search"] == search
        assert_same(got, reference(np.asarray(x[:m], dtype=np.float32), dc, peaks=4), f"{variant.name} after {batches}")
        assert len(rep["batches"]) == -(-(m - base) // batch)
    # and the program's own check against recomputation after every batch
    rc, _, err = variant.run("dpc", path, "--dc", repr(dc), "--peaks", "4", "--index", index, "--base", base,
                             "--batch", batch, "--rho-update", method, *search_args(search), "--verify")
    assert rc == 0 and "identical to recomputation" in err, err


@pytest.mark.parametrize("index,search", MODES)
@pytest.mark.parametrize("method", ("incidental", "separate"))
def test_deletions_match_reference_on_the_remaining_points(variant, work, index, search, method):
    """Insert, then delete (points chosen by --seed, the absolute peak possibly among them): the
    outputs list the remaining points in order, and equal the reference on exactly those rows."""
    x = blobs(21, 400, 2)
    path = write_points(work / "x.txt", x)
    for seed, deletions in ((1, 60), (2, 390), (3, 399)):
        args = ("--dc", "0.08", "--peaks", "3", "--index", index, "--base", "200", "--batch", "50", "--delete",
                deletions, "--rho-update", method, "--seed", seed, *search_args(search))
        _, rep = run_dpc(variant, work, path, *args, tag=f"d{seed}")
        got, rows = read_graph(work / f"d{seed}.csv", rows=True)
        assert len(rows) == 400 - deletions and np.all(np.diff(rows) > 0) and rep["n"] == 400 - deletions
        want = reference(x[rows], 0.08, peaks=3)
        assert_same(got, want, f"{variant.name}/{index}/{search}/{method} after deleting {deletions}")
        assert [b["op"] for b in rep["batches"]].count("delete") == -(-deletions // 50)
        rc, _, err = variant.run("dpc", path, *args, "--verify")
        assert rc == 0 and "identical to recomputation" in err, err


def test_incremental_insert_source_and_splits(seq, work):
    """--insert appends another input; small batches into a full tree split leaves and rebuild."""
    x = blobs(13, 600, 2)
    base = write_points(work / "base.txt", x[:100])
    more = write_points(work / "more.txt", x[100:])
    got, rep = run_dpc(seq, work, base, "--dc", "0.05", "--peaks", "4", "--insert", more, "--batch", "25")
    assert_same(got, reference(np.asarray(x, dtype=np.float32), 0.05, peaks=4), "insert")
    assert rep["n"] == 600 and rep["params"]["base"] == 100 and len(rep["batches"]) == 20
    assert sum(b["leaf_splits"] for b in rep["batches"]) >= 1
    assert set(rep["batches"][0]) >= {"n", "total_s", "tree_build", "rho", "delta", "assignment", "transfers"}


def test_dc_percent_is_the_quantile_of_all_pairs(all_variants, work):
    x = blobs(14, 120, 2)
    d = np.sqrt(sq_distances(x)[np.triu_indices(len(x), 1)])
    d.sort()
    for p in (1.0, 2.0, 7.5):
        want = d[int(np.ceil(p / 100 * len(d))) - 1]
        for binary in all_variants.values():
            _, rep = run_dpc(binary, work, write_points(work / "x.txt", x), "--dc-percent", p, "--peaks", "3")
            assert rep["params"]["dc"] == want and rep["params"]["dc_percent"] == p


def test_dc_percent_sampled_is_deterministic(all_variants, work):
    data = "gen:blobs:n=3000,d=2,centers=5,seed=2"
    dcs = {name: run_dpc(b, work, data, "--dc-samples", "5000", "--peaks", "5", tag=name)[1]["params"]["dc"]
           for name, b in all_variants.items()}
    assert len(set(dcs.values())) == 1, dcs
    other = run_dpc(all_variants["seq"], work, data, "--dc-samples", "5000", "--peaks", "5", "--seed", "9")[1]
    assert other["params"]["dc"] != dcs["seq"]


# the ground truth's number of clusters; d_c the exact P% quantile of all pairwise distances (the
# original paper's 1-2% rule: aggregation at 1%, s2 at 2%). ARI floors recorded from the run that
# added them (aggregation 0.9876, s2 0.9374; aggregation at 2% gives only 0.73: two peaks of gamma
# fall in one of its clusters).
REAL = [("aggregation", 7, 1.0, 0.98), ("s2", 15, 2.0, 0.93)]


@pytest.mark.parametrize("name,k,percent,floor", REAL)
def test_real_data_adjusted_rand_index(seq, omp, gpu, work, data_dir, name, k, percent, floor):
    metrics = pytest.importorskip("sklearn.metrics")
    path = data_dir / f"{name}.txt"
    truth_path = data_dir / f"{name}.labels"
    if not path.exists() or not truth_path.exists():
        pytest.skip(f"{path} or its labels not in DATA_DIR")
    truth = np.loadtxt(truth_path)
    x = np.loadtxt(path, dtype=np.float32, ndmin=2)
    pairs = np.sort(sq_distances(x)[np.triu_indices(len(x), 1)])
    dc = float(np.sqrt(pairs[int(np.ceil(percent / 100 * len(pairs))) - 1]))
    first = None
    for binary in (seq, omp, gpu):
        for index, search in MODES:
            if first is None:  # the program's own quantile from all pairs, once
                args = ("--dc-percent", percent, "--dc-samples", len(pairs))
            else:
                args = ("--dc", repr(dc))
            got, rep = run_dpc(binary, work, path, *args, "--peaks", k, "--index", index, *search_args(search),
                               tag=binary.name + index + search)
            if first is None:
                assert rep["params"]["dc"] == dc
                first = got
                ari = metrics.adjusted_rand_score(truth, got[3])
                assert ari >= floor, f"{name}: ARI {ari:.4f} below the recorded {floor}"
            else:
                assert_same(got, first, f"{binary.name}/{index}/{search} on {name}")


def test_report_fields_and_plot(seq, work):
    plot = work / "g.svg"
    _, rep = run_dpc(seq, work, "gen:blobs:n=2000,d=2,centers=4", "--dc", "0.5", "--peaks", "4", "--repeat", "2",
                     "--plot", plot)
    assert rep["subcommand"] == "dpc" and rep["variant"] == "seq"
    assert set(rep["timing"]["phases_s"]) == {"transfers", "tree_build", "rho", "delta", "assignment"}
    assert len(rep["runs"]) == 2 and rep["distance_computations"] > 0
    assert rep["distance_computations"] < rep["all_pairs_distance_computations"]
    assert rep["tree_height"] >= 5 and rep["tree_leaves"] == 2 ** rep["tree_height"]
    svg = plot.read_text()
    assert svg.startswith("<svg") and svg.count("<circle") == 2000 and svg.count('fill="red"') == 4


def test_sanitizer_build_runs_dpc_cleanly(asan, work):
    x = blobs(15, 900, 3)
    path = write_points(work / "x.txt", x)
    for index, search in MODES:
        for extra in ((), ("--base", "100", "--batch", "70", "--verify"),
                      ("--base", "100", "--batch", "300", "--rho-update", "separate"),
                      ("--base", "300", "--batch", "200", "--delete", "700", "--verify"),
                      ("--delete", "450", "--batch", "100", "--rho-update", "separate", "--verify")):
            rc, _, err = asan.run("dpc", path, "--dc", "0.1", "--peaks", "4", "--index", index, *search_args(search),
                                  *extra,
                                  "--labels", work / "l.npy", "--decision-graph", work / "g.csv", "--plot", work / "p.svg",
                                  "--report", work / "r.json")
            assert rc == 0 and "Sanitizer" not in err and "runtime error" not in err, err
    wide = write_points(work / "wide.txt", blobs(16, 300, 70))  # leaves read in place, not staged
    rc, _, err = asan.run("dpc", wide, "--dc", "1.6", "--peaks", "4", *search_args("leaf"), "--report", work / "r.json")
    assert rc == 0 and "Sanitizer" not in err and "runtime error" not in err, err


BAD = [
    (["--dc", "0", "--peaks", "3"], "--dc"),
    (["--dc", "-0.5", "--peaks", "3"], "--dc"),
    (["--dc", "nan", "--peaks", "3"], "--dc"),
    (["--dc-percent", "0", "--peaks", "3"], "--dc-percent"),
    (["--dc-percent", "101", "--peaks", "3"], "--dc-percent"),
    (["--dc", "0.1", "--dc-percent", "2", "--peaks", "3"], "not both"),
    (["--dc", "0.1"], "--peaks"),
    (["--dc", "0.1", "--peaks", "0"], "--peaks"),
    (["--dc", "0.1", "--peaks", "2", "--rho-min", "3"], "not both"),
    (["--dc", "0.1", "--rho-min", "1000"], "select no peak"),
    (["--dc", "0.1", "--rho-min", "1", "--delta-min", "100"], "select no peak"),
    (["--dc", "0.1", "--rho-min", "-1"], "--rho-min"),
    (["--dc", "0.1", "--peaks", "2", "--index", "kdtree"], "--index"),
    (["--dc", "0.1", "--peaks", "2", "--rho-search", "team"], "--rho-search"),
    (["--dc", "0.1", "--peaks", "2", "--delta-search", "tree"], "--delta-search"),
    (["--dc", "0.1", "--peaks", "2", "--base", "0"], "--base"),
    (["--dc", "0.1", "--peaks", "2", "--base", "101"], "--base"),
    (["--dc", "0.1", "--peaks", "2", "--base", "50", "--batch", "0"], "--batch"),
    (["--dc", "0.1", "--peaks", "2", "--base", "50", "--rho-update", "locked"], "--rho-update"),
    (["--dc", "0.1", "--peaks", "2", "--base", "50", "--repeat", "2"], "--repeat"),
    (["--dc", "0.1", "--peaks", "2", "--insert", "gen:uniform:n=10,d=3"], "columns"),
    (["--dc", "0.1", "--peaks", "2", "--dc-samples", "0"], "--dc-samples"),
    (["--dc", "0.1", "--peaks", "2", "--delete", "100"], "--delete"),
    (["--dc", "0.1", "--peaks", "2", "--delete", "0"], "--delete"),
]


@pytest.mark.parametrize("args,word", BAD)
def test_bad_options(seq, work, args, word):
    rc, out, err = seq.run("dpc", "gen:uniform:n=100,d=2", *args, "--labels", work / "l.txt",
                           "--decision-graph", work / "g.csv", "--report", work / "r.json")
    assert rc == 2 and err.startswith("pragmaclust: error:") and len(err.strip().splitlines()) == 1, err
    assert word in err, err
    assert list(work.iterdir()) == []


def test_duplicates_give_zero_dc_percent(seq, work):
    path = write_points(work / "same.txt", np.ones((30, 2)))
    rc, _, err = seq.run("dpc", path, "--dc-percent", "2", "--peaks", "2", "--labels", work / "l.txt")
    assert rc == 2 and "give --dc" in err and not (work / "l.txt").exists()


@pytest.mark.parametrize("data,dc,peaks", [
    ("gen:blobs:n=20000,d=2,centers=30,std=0.5,box=10,noise=0.2,seed=3", 0.3, 6000),  # the threshold search
    ("gen:blobs:n=20000,d=2,centers=30,std=0.5,box=10,noise=0.2,seed=3", 0.3, 37),
    ("gen:uniform:n=20000,d=2,seed=4", 0.01, 4500)])
def test_peak_selection_at_scale(variant, work, data, dc, peaks):
    """The peaks are the top K by gamma (ties to the lower index, the absolute peak first), each
    labelled with its rank: checked from the decision graph (gamma recomputed in float64 from
    its exact rho and delta)."""
    (rho, delta, dep, lab), rep = run_dpc(variant, work, data, "--dc", dc, "--peaks", peaks)
    gamma = rho * delta
    top = int(np.flatnonzero(dep < 0)[0])
    rest = np.array([i for i in np.lexsort((np.arange(len(rho)), -gamma)) if i != top])
    chosen = np.concatenate([[top], rest[:peaks - 1]])
    assert rep["clusters"] == peaks
    assert np.array_equal(lab[chosen], np.arange(peaks))
    others = np.setdiff1d(np.arange(len(rho)), chosen)
    assert np.array_equal(lab[others], lab[dep[others]])  # everyone else follows its dependent point
