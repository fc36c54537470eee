"""The figure generator (plots/plot.py): PNG and SVG figures from a results CSV.

It must draw valid PNG and SVG files from the fixed CSV of the table test, leave out (not
draw, not estimate) every point whose run is not ok and say so on the figure, skip a figure
without any ok point, and stop with exit status 2 and one line when the CSV is missing.
Needs gnuplot (skipped otherwise); no pragmaclust program is run.
"""
import csv
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers import REPO_ROOT

PLOT = REPO_ROOT / "plots" / "plot.py"
TEST_DATA = Path(__file__).resolve().parent / "data"
FIXED_EXPERIMENT = TEST_DATA / "fixed_experiment.toml"
sys.path.insert(0, str(REPO_ROOT / "experiments"))
import run  # noqa: E402
import spec  # noqa: E402

sys.path.insert(0, str(REPO_ROOT / "plots"))
import plot as plot_py  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("gnuplot") is None,
                                reason="gnuplot is not installed (make plots installs gnuplot-nox)")


def plot(results, *args, scale="smoke"):
    return subprocess.run([sys.executable, str(PLOT), "--results", str(results), "--scale", scale, *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)


def results_with(tmp_path, rows_or_file, scale="smoke"):
    """A results folder whose SCALE/results.csv is the given file or rows."""
    csv_path = tmp_path / "RESULTS" / scale / "results.csv"
    csv_path.parent.mkdir(parents=True)
    if isinstance(rows_or_file, Path):
        shutil.copy(rows_or_file, csv_path)
    else:
        run.write_rows_atomically(csv_path, rows_or_file)
    return tmp_path / "RESULTS"


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert len(data) > 1000


def svg_root(path):
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg"), f"{path}: root element {root.tag}"
    return root


def svg_text(path):
    """All text drawn in the SVG (titles, labels, key, notes)."""
    return " ".join(t.strip() for t in svg_root(path).itertext() if t.strip())


def dat_blocks(path):
    """{block comment: [rows of floats]} of a figure's .dat file."""
    blocks, current = {}, None
    for line in path.read_text().splitlines()[2:]:
        if line.startswith("# "):
            current = blocks.setdefault(line[2:], [])
        elif line.strip() and current is not None:
            current.append([float(v) for v in line.split()])
    return blocks


def test_fixed_csv_draws_png_and_svg(tmp_path):
    results = results_with(tmp_path, TEST_DATA / "fixed_results.csv")
    p = plot(results, "--experiment", FIXED_EXPERIMENT, "--verbose")
    assert p.returncode == 0, p.stderr
    out = results / "smoke" / "plots"
    png, svg = out / "fixed_experiment_speedup_k10.png", out / "fixed_experiment_speedup_k10.svg"
    assert_png(png)
    svg_root(svg)
    assert f"wrote {out / 'fixed_experiment_speedup_k10'}" in p.stdout
    # the last line: where the figures went and what comes next; without --verbose the only line
    assert p.stdout.splitlines()[-1] == f"1 of 1 figures in {out}/; next: make paper SCALE=smoke RESULTS={results}"
    p = plot(results, "--experiment", FIXED_EXPERIMENT)
    assert p.stdout == f"1 of 1 figures in {out}/; next: make paper SCALE=smoke RESULTS={results}\n"
    # written under temporary names and renamed: nothing else is left in the folder
    assert sorted(f.name for f in out.iterdir()) == ["data", png.name, svg.name]


def test_non_ok_points_are_left_out_and_named(tmp_path):
    """n=10000: seq timed out (no speedup for omp), gpu had no device: neither is drawn."""
    results = results_with(tmp_path, TEST_DATA / "fixed_results.csv")
    p = plot(results, "--experiment", FIXED_EXPERIMENT)
    assert p.returncode == 0, p.stderr
    out = results / "smoke" / "plots"
    blocks = dat_blocks(out / "data" / "fixed_experiment_speedup_k10.dat")
    # medians: seq 0.2 s, omp 0.05 s, gpu 0.009 s at n=1000 (the table test's 4.00 and 22.22)
    assert blocks["omp, d=10"] == [[1000, pytest.approx(4.0)]]
    assert blocks["gpu, d=10"] == [[1000, pytest.approx(0.2 / 0.009, rel=1e-5)]]
    text = svg_text(out / "fixed_experiment_speedup_k10.svg")
    assert "n/a (no GPU)" in text
    assert "over the 20 s budget" in text and "n=10k" in text


def test_missing_csv_exit_2_one_line(tmp_path):
    p = plot(tmp_path / "nothing-here")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "results.csv" in lines[0] and "make experiments" in lines[0]
    assert not (tmp_path / "nothing-here").exists()


def test_figure_without_ok_point_is_skipped_and_stale_copy_removed(tmp_path):
    with open(TEST_DATA / "fixed_results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    results = results_with(tmp_path, rows)
    assert plot(results, "--experiment", FIXED_EXPERIMENT).returncode == 0
    out = results / "smoke" / "plots"
    assert (out / "fixed_experiment_speedup_k10.png").exists()
    # now every run failed: the old figure must not survive as if it were current
    for r in rows:
        if r["status"] == "ok":
            r.update(status="failed", reason="exit status 1", iterations="", total_s="")
    run.write_rows_atomically(results / "smoke" / "results.csv", rows)
    p = plot(results, "--experiment", FIXED_EXPERIMENT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("0 of 1 figures in ") and "(1 without an ok run not drawn: --verbose" in p.stdout
    p = plot(results, "--experiment", FIXED_EXPERIMENT, "--verbose")
    assert "skipped fixed_experiment_speedup_k10" in p.stdout
    assert not (out / "fixed_experiment_speedup_k10.png").exists()
    assert not (out / "fixed_experiment_speedup_k10.svg").exists()


def fake_cao_rows(exp, scale, gpu_l_status="ok"):
    """Rows for the real cao_kmeans grid: every variant ok except GPU-L (gpu_l_status)."""
    rows = []
    for p in spec.configurations(exp, scale):
        for v in exp["variants"]:
            base = dict(experiment=exp["name"], scale=scale, config=spec.config_id(p), variant=v["name"],
                        program=v["program"], params=json.dumps(p, sort_keys=True), n=p["n"], d=p["d"], k=p["k"])
            if v["name"] == "GPU-L" and gpu_l_status != "ok":
                rows.append(dict(base, status=gpu_l_status, reason="no GPU"))
                continue
            speed = {"seq": 1.0, "omp": 0.2, "gpu": 0.01}[v["program"]]
            total = p["n"] * p["d"] * p["k"] * 1e-8 * speed
            for rep in (1, 2):
                rows.append(dict(base, status="ok", repetition=rep, iterations=20, converged=1, sse=1.0, load_s=0.001,
                                 total_s=total, h2d_s=total * 0.1, assign_s=total * 0.6, update_s=total * 0.25,
                                 d2h_s=total * 0.05))
    return rows


def test_real_cao_experiment_figures(tmp_path):
    exp = spec.load_experiment(REPO_ROOT / "experiments" / "cao_kmeans.toml")
    results = results_with(tmp_path, fake_cao_rows(exp, "smoke", gpu_l_status="no-device"))
    p = plot(results, "--only", "cao_kmeans")
    assert p.returncode == 0, p.stderr
    out = results / "smoke" / "plots"
    for t in exp["tables"]:
        stem = f"cao_kmeans_{t['name']}" + ("_phases" if "," in t["metric"] else "")
        assert_png(out / f"{stem}.png")
        svg_root(out / f"{stem}.svg")
        assert "GPU-L" in svg_text(out / f"{stem}.svg")   # named as n/a, never drawn
        if "," not in t["metric"]:
            blocks = dat_blocks(out / "data" / f"{stem}.dat")
            assert "GPU-L" not in blocks and blocks["GPU-C"]
    assert "n/a (no GPU)" in svg_text(out / "cao_kmeans_gc_g2m_phases.svg")


def fake_dpc_rows(exp, scale, gpu_status="no-device"):
    """Rows for a real GDPC experiment: seq and omp ok (phases, distances), gpu gpu_status."""
    rows = []
    for p in spec.configurations(exp, scale):
        for v in exp["variants"]:
            base = dict(experiment=exp["name"], scale=scale, config=spec.config_id(p), variant=v["name"],
                        program=v["program"], params=json.dumps(p, sort_keys=True), n=p.get("n", 1000), d=2)
            if v["program"] == "gpu":
                rows.append(dict(base, status=gpu_status, reason="no GPU"))
                continue
            n = p.get("n", 1000)
            t = n * 1e-7 * (1.0 if v["program"] == "seq" else 0.3) * (10 if p["index"] == "none" else 1)
            rows.append(dict(base, status="ok", repetition=1, load_s=0.001, total_s=t, tree_build_s=t * 0.2,
                             rho_s=t * 0.4, delta_s=t * 0.3, assignment_s=t * 0.05, transfers_s=t * 0.05,
                             distances=n * (100 if p["index"] == "vptree" else n), all_pairs=2 * n * n, clusters=20))
    return rows


def test_real_gdpc_figures(tmp_path):
    """GDPC: the phases per data set as stacked bars (tables only for the other per-data-set
    tables), the scaling curves and the distance computations vs n; gpu named, never drawn."""
    exps = {name: spec.load_experiment(REPO_ROOT / "experiments" / f"{name}.toml")
            for name in ("gdpc_datasets", "gdpc_scaling")}
    results = results_with(tmp_path, [r for e in exps.values() for r in fake_dpc_rows(e, "smoke")])
    p = plot(results, "--only", "gdpc_datasets,gdpc_scaling", "--verbose")
    assert p.returncode == 0, p.stderr
    out = results / "smoke" / "plots"
    for stem in ("gdpc_datasets_phases_seq_phases", "gdpc_datasets_phases_omp_phases", "gdpc_scaling_runtime",
                 "gdpc_scaling_tree_rho", "gdpc_scaling_all_pairs", "gdpc_scaling_distances"):
        assert_png(out / f"{stem}.png")
        svg_root(out / f"{stem}.svg")
    assert "skipped gdpc_datasets_phases_gpu_phases" in p.stdout
    assert not list(out.glob("gdpc_datasets_runtime*")) and not list(out.glob("gdpc_datasets_distances*"))
    text = svg_text(out / "gdpc_datasets_phases_seq_phases.svg")
    assert "tree build" in text and "synthetic-s2" in text and "data set" in text
    blocks = dat_blocks(out / "data" / "gdpc_datasets_phases_seq_phases.dat")
    (rows,) = blocks.values()   # one panel (seq): x index, then tree build, rho, delta, assignment (ms)
    assert rows[0] == [0, pytest.approx(0.02), pytest.approx(0.04), pytest.approx(0.03), pytest.approx(0.005)]
    dist = dat_blocks(out / "data" / "gdpc_scaling_distances.dat")
    assert dist["seq, index=vptree"] == [[2048, 204800], [4096, 409600]]
    assert dist["omp, index=none"] == [[2048, pytest.approx(2048 ** 2, rel=1e-5)],
                                       [4096, pytest.approx(4096 ** 2, rel=1e-5)]]
    assert "gpu: n/a (no GPU)" in svg_text(out / "gdpc_scaling_distances.svg")


def test_figure_titles_say_what_is_drawn():
    """Every figure of every experiment file, at every scale: a title that speaks of speedups is a
    figure of speedups (its y axis), and a figure of speedups says so; no placeholder is left; the
    parameters it states are those of its runs (Okuda's breakdown at smoke: n = 4000, k = 8)."""
    titles = {}
    for path in sorted((REPO_ROOT / "experiments").glob("*.toml")):
        exp = spec.load_experiment(path)
        for scale in exp["scales"]:
            for fig in plot_py.figures_of(exp, [], scale):
                drawn = str(fig.settings.get("YLABEL", ""))
                assert ("speedup" in fig.title.lower()) == ("speedup" in drawn.lower()), (scale, fig.stem, fig.title)
                assert "{" not in fig.title, (scale, fig.stem, fig.title)
                titles[(fig.stem, scale)] = fig.title
    assert titles[("dbscan_scaling_runtime_2d", "smoke")] == "run time (s) vs n, d = 2"
    assert titles[("gdpc_scaling_runtime", "smoke")] == "run time (s) vs n, VP-tree"
    assert titles[("okuda_breakdown_total", "smoke")] == "the whole run (s) vs d"
    assert titles[("okuda_breakdown_breakdown_phases", "smoke")].endswith("vs d (dimensions), n = 4000, k = 8")
    assert titles[("okuda_breakdown_breakdown_phases", "default")].endswith("n = 64000, k = 64")
    assert titles[("okuda_streamkm_table2", "smoke")] == "Okuda Table 2 (n = 10000): time vs d"
    assert titles[("okuda_streamkm_table2_speedup", "default")] == "Okuda Table 2 (n = 64M): speedup over seq vs d"
