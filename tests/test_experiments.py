"""The experiment runner (experiments/run.py) and the table generator (experiments/tables.py).

A smoke run of every experiment file must give well-formed rows with their provenance, resume
without duplicating anything, record failures and time-outs as such and go on, skip (not
estimate) configurations beyond a budget, survive Ctrl-C with a valid CSV, and the table
generator must reproduce a checked-in table from a fixed CSV.
"""
import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO_ROOT, bin_dir

RUNNER = REPO_ROOT / "experiments" / "run.py"
TEST_DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(REPO_ROOT / "experiments"))
import run  # noqa: E402
import spec  # noqa: E402
import tables  # noqa: E402

STATUSES = {"ok", "failed", "crashed", "timeout", "no-device", "missing-data", "missing-program", "skipped-budget"}


def runner(results, *args, data_dir=None, timeout=300):
    cmd = [sys.executable, str(RUNNER), "--bin", str(bin_dir()), "--results", str(results), *map(str, args)]
    if data_dir:
        cmd += ["--data-dir", str(data_dir)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)


def rows_of(results, scale="smoke"):
    with open(Path(results) / scale / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def write_experiment(path, command, axes, budget_s=20, repeat=1, variants=("seq",), extra=""):
    vs = "\n".join(f'[[variants]]\nname = "{v}"\nprogram = "{v}"' for v in variants)
    path.write_text(f'''title = "test"
table = "course"
command = {json.dumps(command)}
input = "gen:uniform:n={{n}},d=4,seed=1"
column = "n={{n}}"
{extra}
{vs}
[scales.smoke]
axes = {axes}
repeat = {repeat}
warmup = 0
budget_s = {budget_s}
''')
    return path


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, data_dir_or_none):
    """One smoke run of every experiment file, shared by the checks below."""
    results = tmp_path_factory.mktemp("results")
    t0 = time.monotonic()
    proc = runner(results, "--scale", "smoke", data_dir=data_dir_or_none)
    return results, proc, time.monotonic() - t0


@pytest.fixture(scope="module")
def data_dir_or_none():
    d = os.environ.get("DATA_DIR")
    return d if d and Path(d).is_dir() else None


def test_smoke_run_produces_well_formed_rows(smoke):
    results, proc, seconds = smoke
    assert proc.returncode == 0, proc.stderr
    assert seconds < 120, f"SCALE=smoke must stay under 2 minutes, took {seconds:.0f} s"
    rows = rows_of(results)
    assert rows and list(rows[0].keys()) == run.FIELDS
    experiments = {p.stem for p in (REPO_ROOT / "experiments").glob("*.toml")}
    assert {r["experiment"] for r in rows} == experiments
    for r in rows:
        assert r["status"] in STATUSES, r
        assert r["scale"] == "smoke" and r["host_cpu"] and r["timestamp"]
        if r["status"] == "ok":
            subcommand = r["command"].split()[1]
            kmeans = subcommand in ("kmeans", "stream")  # stream (Cao) reports km_run's phases
            own = (("assign_s", "update_s", "sse", "h2d_s", "d2h_s") if kmeans
                   else ("generation_s", "transfers_s", "distance_s", "selection_s", "weighting_s", "other_s", "sse")
                   if subcommand == "streamkm" else ("tree_build_s", "rho_s", "delta_s", "assignment_s", "transfers_s")
                   if subcommand == "dpc" else ("index_s", "core_s", "connect_s", "label_s", "h2d_s", "d2h_s"))
            for key in ("total_s", "load_s") + own:
                assert math.isfinite(float(r[key])) and float(r[key]) >= 0, (key, r)
            if kmeans:
                assert int(r["iterations"]) >= 1
            elif subcommand == "dbscan":
                assert int(r["clusters"]) >= 0 and int(r["noise"]) >= 0
            elif subcommand == "dpc":
                assert int(r["clusters"]) >= 1 and int(r["distances"]) > 0 and int(r["k"]) >= 1
                if "--base" in r["command"]:   # incremental: batches, their median time and the restart's
                    assert int(r["batches"]) >= 1 and float(r["batch_s"]) > 0 and float(r["restart_s"]) > 0
                else:                          # all pairs: 2 n^2 (both directions, itself included)
                    assert int(r["all_pairs"]) == 2 * int(r["n"]) ** 2
            assert int(r["repetition"]) >= 1
            for key in ("compiler", "flags", "git_commit", "threads", "where", "command", "n", "d"):
                assert r[key] != "", (key, r)
            assert r["program"] in r["where"] or r["program"] in ("seq", "omp") or "GPU" in r["where"]
        else:
            assert r["reason"], r
        if r["program"] == "gpu" and r["status"] == "ok":
            assert r["gpu"] != "none" and r["where"].startswith("GPU"), "host times reported as GPU times"
    # one row per timed repetition
    for (exp, config, variant), group in group_rows(rows).items():
        if group[0]["status"] == "ok":
            want = spec.load_experiment(REPO_ROOT / "experiments" / f"{exp}.toml")["scales"]["smoke"]["repeat"]
            assert sorted(int(r["repetition"]) for r in group) == list(range(1, want + 1))


def group_rows(rows):
    out = {}
    for r in rows:
        out.setdefault((r["experiment"], r["config"], r["variant"]), []).append(r)
    return out


def test_smoke_run_without_gpu_marks_gpu_na(smoke):
    results, proc, _ = smoke
    gpu_rows = [r for r in rows_of(results) if r["program"] == "gpu"]
    assert gpu_rows
    if all(r["status"] == "no-device" for r in gpu_rows):
        assert "n/a (no GPU)" in proc.stdout
        assert "n/a (no GPU)" in (results / "smoke" / "tables" / "course_fig3.md").read_text()


def test_smoke_run_writes_tables(smoke):
    results, proc, _ = smoke
    tdir = results / "smoke" / "tables"
    for stem in ("course_fig3", "course_fig4", "cao_kmeans_total_cost", "cao_kmeans_gc_g2m", "cao_kmeans_cost_vs_d"):
        md, tex = (tdir / f"{stem}.md").read_text(), (tdir / f"{stem}.tex").read_text()
        assert md.startswith("### ") and "|---|" in md
        assert "\\begin{tabular}" in tex and "\\bottomrule" in tex
    assert "Course report, Figure 3" in proc.stdout  # tables printed at the end
    assert "summary:" in proc.stdout


def test_rerun_resumes_without_duplicates(smoke):
    results, _, _ = smoke
    before = rows_of(results)
    proc = runner(results, "--scale", "smoke")
    assert proc.returncode == 0, proc.stderr
    assert "nothing to run" in proc.stdout
    assert rows_of(results) == before
    keys = [(r["experiment"], r["config"], r["variant"], r["repetition"]) for r in before]
    assert len(keys) == len(set(keys))


def test_failures_and_timeouts_are_recorded_and_the_suite_goes_on(tmp_path):
    exp = write_experiment(tmp_path / "bad.toml", ["kmeans", "{input}", "-k", "{k}"],
                           "{ n = [100], k = [0, 5] }", variants=("seq", "omp"))
    slow = write_experiment(tmp_path / "slow.toml", ["kmeans", "{input}", "-k", "64", "--iterations", "100000"],
                            "{ n = [200000, 400000, 800000] }", budget_s=0.5)
    proc = runner(tmp_path / "res", "--scale", "smoke", "--experiment", exp, "--experiment", slow)
    assert proc.returncode == 0, proc.stderr
    by_config = group_rows(rows_of(tmp_path / "res"))
    assert by_config[("bad", "k=0,n=100", "seq")][0]["status"] == "failed"
    assert "-k" in by_config[("bad", "k=0,n=100", "seq")][0]["reason"]
    assert by_config[("bad", "k=5,n=100", "seq")][0]["status"] == "ok"  # went on after the failure
    assert by_config[("slow", "n=200000", "seq")][0]["status"] == "timeout"
    for n in (400000, 800000):  # larger than a case that exceeded the budget: skipped, not run
        row = by_config[("slow", f"n={n}", "seq")][0]
        assert row["status"] == "skipped-budget" and "n=200000" in row["reason"]
    assert "timeout" in proc.stdout and "failed" in proc.stdout
    table = (tmp_path / "res" / "smoke" / "tables" / "slow.md").read_text()
    assert "| seq | - | - | - |" in table
    # --retry-failed runs the failed ones again, and only those
    proc = runner(tmp_path / "res", "--scale", "smoke", "--experiment", exp, "--retry-failed")
    assert proc.returncode == 0
    assert len([r for r in rows_of(tmp_path / "res") if r["experiment"] == "bad" and r["status"] == "failed"]) == 2


def test_ctrl_c_leaves_a_valid_resumable_csv(tmp_path):
    exp = write_experiment(tmp_path / "long.toml", ["kmeans", "{input}", "-k", "8", "--iterations", "{it}"],
                           "{ n = [2000], it = [1, 2, 3, 400000, 5] }", budget_s=60)
    cmd = [sys.executable, str(RUNNER), "--bin", str(bin_dir()), "--results", str(tmp_path / "res"),
           "--scale", "smoke", "--experiment", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    csv_path = tmp_path / "res" / "smoke" / "results.csv"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (csv_path.exists() and len(rows_of(tmp_path / "res")) >= 3):
        time.sleep(0.05)
    time.sleep(0.3)  # now inside the long run
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in out
    rows = rows_of(tmp_path / "res")
    assert [r["config"] for r in rows] == ["it=1,n=2000", "it=2,n=2000", "it=3,n=2000"]
    assert not list((tmp_path / "res" / "smoke").glob("*.tmp"))
    exp.write_text(exp.read_text().replace("400000", "4"))  # resume with a shorter middle run
    proc = runner(tmp_path / "res", "--scale", "smoke", "--experiment", exp)
    assert proc.returncode == 0 and "3 already" in proc.stdout
    assert len(rows_of(tmp_path / "res")) == 5


def test_table_generator_reproduces_the_checked_in_table():
    exp = spec.load_experiment(TEST_DATA / "fixed_experiment.toml")
    rows = run.read_rows(TEST_DATA / "fixed_results.csv")
    (stem, md, tex), = tables.render(exp, rows, "smoke")
    assert md == (TEST_DATA / "expected_fixed_experiment.md").read_text()
    assert "22.22" in tex and "n/a (no GPU)" in tex


def test_bad_experiment_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text('title = "x"\ncommand = [\n')
    proc = runner(tmp_path / "res", "--scale", "smoke", "--experiment", bad)
    assert proc.returncode == 2
    assert proc.stderr.startswith("run.py: error:") and len(proc.stderr.strip().splitlines()) == 1
    proc = runner(tmp_path / "res", "--scale", "smoke", "--only", "no_such_experiment")
    assert proc.returncode == 2 and "no_such_experiment" in proc.stderr


def test_runner_records_dbscan_runs(tmp_path):
    """Experiments of another algorithm: DBSCAN rows carry its counts and its own phases; a
    variant may set its own number of repetitions."""
    exp = tmp_path / "db.toml"
    exp.write_text('''title = "dbscan"
table = "series"
command = ["dbscan", "{input}", "--eps", "0.4", "--min-pts", "5", "--method", "{method}"]
input = "gen:blobs:n={n},d=2,centers=4,seed=2"
[[variants]]
name = "seq"
program = "seq"
[[variants]]
name = "omp"
program = "omp"
repeat = 1
[[tables]]
name = "cost"
caption = "cost vs n"
x = "n"
where = { method = "chains" }
metric = "cc,connect"
speedup = true
[scales.smoke]
axes = { n = [1000, 2000], method = ["union-find", "chains"] }
repeat = 2
warmup = 0
budget_s = 20
''')
    proc = runner(tmp_path / "res", "--scale", "smoke", "--experiment", exp)
    assert proc.returncode == 0, proc.stderr
    rows = rows_of(tmp_path / "res")
    assert all(r["status"] == "ok" for r in rows)
    # the scale's two repetitions, except where a variant sets its own
    assert len([r for r in rows if r["variant"] == "seq"]) == 8
    assert len([r for r in rows if r["variant"] == "omp"]) == 4
    for r in rows:
        assert int(r["clusters"]) >= 1 and r["sse"] == "" and r["iterations"] == ""
        assert float(r["connect_s"]) >= 0 and float(r["index_s"]) >= 0 and r["assign_s"] == ""
    table = (tmp_path / "res" / "smoke" / "tables" / "db_cost.md").read_text()
    assert "| 1000 |" in table and "| 2000 |" in table
    # speedup = true: the seq time over the omp time of the same configuration, from the rows
    header = next(line for line in table.splitlines() if line.startswith("| n |"))
    assert header.endswith("| omp vs seq |")
    for n in (1000, 2000):
        cc = {v: sorted(float(r["total_s"]) for r in rows if r["variant"] == v and r["n"] == str(n)
                        and json.loads(r["params"])["method"] == "chains") for v in ("seq", "omp")}
        seq_median = (cc["seq"][0] + cc["seq"][1]) / 2
        line = next(line for line in table.splitlines() if line.startswith(f"| {n} |"))
        assert line.endswith(f"| {seq_median / cc['omp'][0]:.3g}x |")


def test_runner_records_dpc_runs(tmp_path):
    """Density peaks (GDPC): the rows carry dpc's phases and distance counts, the VP-tree computes
    fewer distances than all pairs, incremental runs record their batches and the recomputation,
    and a data set may be a file of the data folder (missing: noted) or a gen: spec in one table."""
    exp = tmp_path / "dp.toml"
    exp.write_text('''title = "dpc"
table = "series"
command = ["dpc", "{input}", "--dc-percent", "2", "--peaks", "4", "--index", "{index}"]
input = "{data_dir}/{file}"
[[variants]]
name = "seq"
program = "seq"
[[variants]]
name = "omp"
program = "omp"
[[tables]]
name = "phases"
caption = "phases"
x = "label"
where = { index = "vptree" }
variants = ["seq"]
metric = "tree_build,rho,delta,assignment,transfers"
[[tables]]
name = "distances"
caption = "distances"
x = "label"
y = "index"
metric = "distances"
[scales.smoke]
axes = { dataset = [ { label = "absent", file = "no_such_set.txt" }, { label = "synthetic-b", input = "gen:blobs:n=3000,d=2,centers=4,seed=2" }, { label = "synthetic-a", input = "gen:blobs:n=2000,d=2,centers=4,seed=2" } ], index = ["vptree", "none"] }
repeat = 2
warmup = 0
budget_s = 20
''')
    inc = tmp_path / "inc.toml"
    inc.write_text('''title = "dpc incremental"
table = "series"
command = ["dpc", "{input}", "--dc-percent", "2", "--peaks", "4", "--base", "{base}", "--batch", "1000", "--verify"]
input = "gen:blobs:n={n},d=2,centers=4,seed=2"
[[variants]]
name = "seq"
program = "seq"
[[tables]]
name = "batch"
caption = "batch"
x = "n"
metric = "batch,restart"
[[tables]]
name = "gain"
caption = "gain"
x = "n"
metric = "gain"
[scales.smoke]
axes = { size = [ { n = 3500, base = 500 } ] }
repeat = 1
warmup = 0
budget_s = 20
''')
    proc = runner(tmp_path / "res", "--scale", "smoke", "--experiment", exp, "--experiment", inc,
                  data_dir=tmp_path / "no-data")
    assert proc.returncode == 0, proc.stderr
    rows = rows_of(tmp_path / "res")
    absent = [r for r in rows if r["dataset"] == "absent"]
    assert absent and all(r["status"] == "missing-data" and "no_such_set.txt" in r["reason"] for r in absent)
    dp = [r for r in rows if r["experiment"] == "dp" and r["dataset"] != "absent"]
    assert len(dp) == 2 * 2 * 2 * 2 and all(r["status"] == "ok" for r in dp)   # sets x indexes x variants x repeats
    dist = {}
    for r in dp:
        index = json.loads(r["params"])["index"]
        for key in ("tree_build_s", "rho_s", "delta_s", "assignment_s", "transfers_s"):
            assert float(r[key]) >= 0
        assert int(r["all_pairs"]) == 2 * int(r["n"]) ** 2 and int(r["clusters"]) >= 1
        dist.setdefault((r["dataset"], index), set()).add(int(r["distances"]))
    for label in ("synthetic-a", "synthetic-b"):
        (tree,), (pairs,) = dist[(label, "vptree")], dist[(label, "none")]  # the same in both variants
        assert 0 < tree < pairs
    tdir = tmp_path / "res" / "smoke" / "tables"
    phases = (tdir / "dp_phases.md").read_text()
    assert "| label | tree_build seq | rho seq | delta seq | assignment seq | transfers seq |" in phases
    body = [line.split(" |")[0] for line in phases.splitlines() if line.startswith("| ") and "label" not in line]
    assert body == ["| absent", "| synthetic-b", "| synthetic-a"]   # data sets in file order
    assert "missing: " in phases and "no_such_set.txt not found" in phases
    distances = (tdir / "dp_distances.md").read_text()
    assert "| variant | label | index=vptree | index=none |" in distances
    (tree,), (pairs,) = dist[("synthetic-a", "vptree")], dist[("synthetic-a", "none")]
    assert f"| synthetic-a | {tree} | {pairs} |" in distances
    r, = [r for r in rows if r["experiment"] == "inc"]
    assert r["status"] == "ok" and int(r["batches"]) == 3 and int(r["n"]) == 3500
    batch, restart = float(r["batch_s"]), float(r["restart_s"])
    assert batch > 0 and restart > 0 and int(r["batch_distances"]) > 0
    assert int(r["all_pairs"]) == 2 * 500 ** 2   # of the base run, which total_s times
    gain = (tdir / "inc_gain.md").read_text()
    assert f"| 3500 | {restart / batch:.3g}x |" in gain
