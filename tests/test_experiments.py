"""The experiment runner (experiments/run.py) and the table generator (experiments/tables.py).

A smoke run of every experiment file must give well-formed rows with their provenance (the
program's build included), resume without duplicating anything but rerun what another build
measured and what lacked its data once the data is there, record failures and time-outs as such
and go on, skip (not estimate) configurations beyond a budget, survive Ctrl-C with a valid CSV,
leave no child process nor temporary file when stopped or killed, and the table generator must
reproduce a checked-in table from a fixed CSV (and name the builds of reused rows).
"""
import csv
import hashlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO_ROOT, bin_dir, default_signals, wait_until

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
            assert r["verified"] == "yes" and "--check" in r["command"]  # every run passes --check
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


def test_a_failed_check_is_recorded_as_not_verified(tmp_path):
    """A program whose --check finds its results wrong (the planted-fault build standing in for the
    seq program) gives a failed row with verified = no and the program's reason."""
    faulty = bin_dir() / "pragmaclust-seq-fault"
    if not faulty.is_file():
        pytest.skip(f"{faulty} is not built (make bin/pragmaclust-seq-fault)")
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "pragmaclust-seq").symlink_to(faulty)
    exp = write_experiment(tmp_path / "wrong.toml", ["kmeans", "{input}", "-k", "4"], "{ n = [500] }")
    proc = subprocess.run([sys.executable, str(RUNNER), "--bin", str(bins), "--results", str(tmp_path / "res"),
                           "--scale", "smoke", "--experiment", str(exp)], capture_output=True, text=True, timeout=120,
                          cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    [row] = rows_of(tmp_path / "res")
    assert (row["status"], row["verified"], row["exit_status"]) == ("failed", "no", "1")
    assert "--check: the results are wrong" in row["reason"]


def test_ctrl_c_leaves_a_valid_resumable_csv(tmp_path):
    exp = write_experiment(tmp_path / "long.toml", ["kmeans", "{input}", "-k", "8", "--iterations", "{it}"],
                           "{ n = [2000], it = [1, 2, 3, 400000, 5] }", budget_s=60)
    cmd = [sys.executable, str(RUNNER), "--bin", str(bin_dir()), "--results", str(tmp_path / "res"),
           "--scale", "smoke", "--experiment", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
                            preexec_fn=default_signals)
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
metric = "time,connect"
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
    # speedup = true: the seq time over the omp time of the same configuration, from the rows, in the
    # one format of its column
    header = next(line for line in table.splitlines() if line.startswith("| n |"))
    assert header == ("| n | run time seq (s) | run time omp (s) | connect seq (s) | connect omp (s) "
                      "| speedup omp vs seq |")
    speedups = {}
    for n in (1000, 2000):
        cc = {v: sorted(float(r["total_s"]) for r in rows if r["variant"] == v and r["n"] == str(n)
                        and json.loads(r["params"])["method"] == "chains") for v in ("seq", "omp")}
        speedups[n] = (cc["seq"][0] + cc["seq"][1]) / 2 / cc["omp"][0]
    fmt = tables.column_format(list(speedups.values()), "speedup")
    for n, speedup in speedups.items():
        line = next(line for line in table.splitlines() if line.startswith(f"| {n} |"))
        assert line.endswith(f"| {fmt(speedup)}x |")


def test_variant_arguments_take_placeholders_and_out_of_core_runs_their_bandwidth(tmp_path):
    """A variant's arguments are filled from the configuration as the command is (outofcore.toml's
    --device-memory {limit_3x}); the h2d_gb_s column holds the report's out-of-core bandwidth, empty
    where the run stayed in memory (as every run of the seq program, which takes the limit and
    ignores it)."""
    limited = '[[variants]]\nname = "limited"\nprogram = "seq"\nargs = ["--device-memory", "{limit}"]'
    exp = write_experiment(tmp_path / "limits.toml", ["kmeans", "{input}", "-k", "3", "--iterations", "2"],
                           "{ size = [ { n = 500, limit = 2000 }, { n = 800, limit = 3200 } ] }", extra=limited)
    proc = runner(tmp_path / "res", "--scale", "smoke", "--experiment", exp)
    assert proc.returncode == 0, proc.stderr
    rows = rows_of(tmp_path / "res")
    assert len(rows) == 4 and all(r["status"] == "ok" and r["h2d_gb_s"] == "" for r in rows)
    commands = {r["n"]: r["command"] for r in rows if r["variant"] == "limited"}
    assert "--device-memory 2000 " in commands["500"] and "--device-memory 3200 " in commands["800"]
    assert not any("--device-memory" in r["command"] for r in rows if r["variant"] == "seq")
    assert run.out_of_core_bandwidth({"out_of_core": {"blocks": 7, "h2d_gb_s": 12.5}}) == "12.5"
    assert run.out_of_core_bandwidth({"out_of_core": {"blocks": 0, "h2d_gb_s": None}}) == ""
    assert run.out_of_core_bandwidth({"clusters": 3}) == ""


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
    assert ("| label | tree build seq (ms) | rho seq (ms) | delta seq (ms) | assignment seq (ms) "
            "| transfers seq (ms) |") in phases
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
    assert f"| 3500 | {tables.column_format([restart / batch], 'speedup')(restart / batch)}x |" in gain


# ---- build identity, retries, cleanup and file modes (issue 17, items 8-10) ------------------

def tiny_experiment(path, input_="gen:uniform:n={n},d=2,seed=1"):
    """One k-means run of one variant (seq) on 100 points of `input_`."""
    write_experiment(path, ["kmeans", "{input}", "-k", "2"], "{ n = [100] }", budget_s=60)
    path.write_text(path.read_text().replace('input = "gen:uniform:n={n},d=4,seed=1"', f'input = "{input_}"'))
    return path


def info_fields(program):
    out = subprocess.run([str(program), "info"], capture_output=True, text=True, check=True).stdout
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)}


def test_rows_record_their_build_and_other_builds_are_rerun(tmp_path):
    """The resume key includes the build (commit and dirty flag, compiler, flags, the program's
    sha256): a rebuilt program reruns what an older build measured, unless --reuse-other-builds
    keeps it, and then the tables name the build those numbers come from."""
    exp = tiny_experiment(tmp_path / "tiny.toml")
    res = tmp_path / "res"
    proc = runner(res, "--scale", "smoke", "--experiment", exp)
    assert proc.returncode == 0, proc.stderr
    seq = bin_dir() / "pragmaclust-seq"
    info = info_fields(seq)
    first = rows_of(res)
    assert first and all(r["status"] == "ok" for r in first)
    for r in first:
        assert r["binary_sha256"] == hashlib.sha256(seq.read_bytes()).hexdigest()
        assert len(r["build"]) == 12 and r["git_commit"] == info["git commit"]
        assert r["compiler"] == info["compiler"] and r["flags"] == info["flags"]
    # the same program: nothing to run
    assert "nothing to run" in runner(res, "--scale", "smoke", "--experiment", exp).stdout
    # a rebuilt program (here: one more byte) is another build: its rows replace the old ones
    rebuilt = tmp_path / "rebuilt"
    rebuilt.mkdir()
    (rebuilt / "pragmaclust-seq").write_bytes(seq.read_bytes() + b"\0")
    (rebuilt / "pragmaclust-seq").chmod(0o755)
    cmd = [sys.executable, str(RUNNER), "--bin", str(rebuilt), "--results", str(res), "--scale", "smoke",
           "--experiment", str(exp)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "nothing to run" not in proc.stdout and "1 ok" in proc.stdout
    second = rows_of(res)
    assert len(second) == len(first) and {r["build"] for r in second} != {r["build"] for r in first}
    rebuilt_sha = hashlib.sha256((rebuilt / "pragmaclust-seq").read_bytes()).hexdigest()
    assert {r["binary_sha256"] for r in second} == {rebuilt_sha}
    # back on bin/ with --reuse-other-builds: kept, and the table says which build they are of
    proc = runner(res, "--scale", "smoke", "--experiment", exp, "--reuse-other-builds")
    assert proc.returncode == 0 and "nothing to run" in proc.stdout, proc.stdout
    assert rows_of(res) == second
    table = (res / "smoke" / "tables" / "tiny.md").read_text()
    note = f"not of the current builds (current: seq {first[0]['build']}): seq from build {second[0]['build']}"
    assert note in table, table
    # a CSV of an older runner (no build column): an unknown build, rerun by default
    with open(res / "smoke" / "results.csv", newline="") as f:
        legacy = [{k: v for k, v in r.items() if k not in ("build", "binary_sha256")} for r in csv.DictReader(f)]
    with open(res / "smoke" / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(legacy[0]))
        w.writeheader()
        w.writerows(legacy)
    proc = runner(res, "--scale", "smoke", "--experiment", exp)
    assert "1 ok" in proc.stdout, proc.stdout
    assert {r["build"] for r in rows_of(res)} == {first[0]["build"]}


def test_build_marks_in_tables():
    """A table whose numbers of one program come from several builds marks each number with its
    build; with the current builds given, numbers of the current build stay unmarked."""
    exp = spec.load_experiment(TEST_DATA / "fixed_experiment.toml")
    rows = run.read_rows(TEST_DATA / "fixed_results.csv")
    for r in rows:
        if r["program"] == "omp":
            r["build"] = "aaaaaaaaaaaa" if r["n"] == "1000" else "bbbbbbbbbbbb"
    (_, md, _), = tables.render(exp, rows, "smoke")
    assert "| omp | 0.05000 (b1) | 1.25 (b2) |" in md and "| Speedup omp | 4.00 (b1) | - |" in md, md
    assert "(b1) omp: build aaaaaaaaaaaa" in md and "(b2) omp: build bbbbbbbbbbbb" in md
    (_, md, _), = tables.render(exp, rows, "smoke", current_builds={"omp": "bbbbbbbbbbbb"})
    assert "| omp | 0.05000 (b1) | 1.25 |" in md and "bbbbbbbbbbbb" in md, md
    # one build per program, and it is the current one: the table is as before
    for r in rows:
        r["build"] = r["program"] * 4
    (_, md, _), = tables.render(exp, rows, "smoke", current_builds={"seq": "seqseqseqseq", "omp": "ompompompomp",
                                                                     "gpu": "gpugpugpugpu"})
    assert md == (TEST_DATA / "expected_fixed_experiment.md").read_text()


def test_missing_data_is_retried(tmp_path):
    """A missing-data row is run again once its file is there, and --retry-failed runs it again
    even before (the hint "make datasets" must not lead to "nothing to run")."""
    data = tmp_path / "data"
    data.mkdir()
    exp = tiny_experiment(tmp_path / "real.toml", input_="{data_dir}/set{n}.txt")
    res = tmp_path / "res"
    proc = runner(res, "--scale", "smoke", "--experiment", exp, data_dir=data)
    assert [r["status"] for r in rows_of(res)] == ["missing-data"], proc.stdout
    proc = runner(res, "--scale", "smoke", "--experiment", exp, "--retry-failed", data_dir=data)
    assert proc.returncode == 0 and "1 missing data" in proc.stdout, proc.stdout
    assert [r["status"] for r in rows_of(res)] == ["missing-data"]
    subprocess.run([str(bin_dir() / "pragmaclust-seq"), "generate", "gen:uniform:n=100,d=2,seed=3", "--out",
                    str(data / "set100.txt")], check=True, capture_output=True)
    proc = runner(res, "--scale", "smoke", "--experiment", exp, data_dir=data)
    assert proc.returncode == 0 and "1 ok" in proc.stdout, proc.stdout
    assert [r["status"] for r in rows_of(res)] == ["ok"]


def test_staged_files_follow_the_umask(tmp_path):
    """results.csv and the tables are created as open() would create them (0666 & ~umask), not
    with mkstemp's 0600."""
    exp = spec.load_experiment(TEST_DATA / "fixed_experiment.toml")
    rows = run.read_rows(TEST_DATA / "fixed_results.csv")
    old = os.umask(0o027)
    try:
        run.write_rows_atomically(tmp_path / "smoke" / "results.csv", rows)
        tables.write_all([exp], rows, "smoke", tmp_path / "smoke" / "tables")
    finally:
        os.umask(old)
    files = [tmp_path / "smoke" / "results.csv"] + list((tmp_path / "smoke" / "tables").iterdir())
    assert len(files) == 4
    for p in files:
        assert p.stat().st_mode & 0o777 == 0o640, p


FAKE_PROGRAM = """#!/bin/sh
# a stand-in for pragmaclust-seq: info answers at once, a run sleeps (the signal tests' child)
if [ "$1" = info ]; then
  printf 'variant:        seq\\ncompiler:       fake cc\\nflags:          -O0\\ngit commit:     000000000000\\n'
  exit 0
fi
if [ -e "{dir}/fast" ]; then echo "fake failure" >&2; exit 1; fi
echo $$ > "{dir}/child.pid.new" && mv "{dir}/child.pid.new" "{dir}/child.pid"
exec sleep 120
"""


def process_alive(pid):
    """True while pid is a process that is not a zombie (a zombie has already died)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.fixture
def sleeping_runner(tmp_path):
    """Starts the runner on a fake program that sleeps; yields (runner process, child pid, paths)
    and makes sure no child outlives the test."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "pragmaclust-seq").write_text(FAKE_PROGRAM.replace("{dir}", str(tmp_path)))
    (fake / "pragmaclust-seq").chmod(0o755)
    exp = tiny_experiment(tmp_path / "sleepy.toml")
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    cmd = [sys.executable, str(RUNNER), "--bin", str(fake), "--results", str(tmp_path / "res"), "--scale", "smoke",
           "--experiment", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
                            env=dict(os.environ, TMPDIR=str(tmpdir)), preexec_fn=default_signals)
    pid_file = tmp_path / "child.pid"
    child = None
    try:
        assert wait_until(pid_file.exists), "the fake program never started"
        child = int(pid_file.read_text())
        yield proc, child, dict(tmp=tmp_path, tmpdir=tmpdir, res=tmp_path / "res", cmd=cmd)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        if child and process_alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_ends_children_and_leaves_no_debris(sleeping_runner, signum):
    proc, child, paths = sleeping_runner
    assert process_alive(child)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum and "interrupted" in out, (proc.returncode, out, err)
    assert wait_until(lambda: not process_alive(child), timeout=10), "the child outlived the runner"
    assert not list(paths["tmpdir"].iterdir()), "temporary folders left in $TMPDIR"
    scale_dir = paths["res"] / "smoke"
    leftovers = [p.name for p in scale_dir.iterdir() if p.name not in ("results.csv",)] if scale_dir.exists() else []
    assert leftovers == [], leftovers


def test_killed_runner_takes_its_child_along_and_the_next_start_cleans_up(sleeping_runner):
    proc, child, paths = sleeping_runner
    proc.kill()   # SIGKILL: no handler runs; the child must still die (parent-death signal)
    proc.communicate(timeout=60)
    assert wait_until(lambda: not process_alive(child), timeout=10), "the child outlived the killed runner"
    scale_dir = paths["res"] / "smoke"
    assert [p.name for p in scale_dir.glob(".run.*")] == [f".run.{proc.pid}"]   # its reports' folder, left
    (scale_dir / "tables").mkdir(exist_ok=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [scale_dir / f"results.csv.{dead.pid}.abcd_123.tmp", scale_dir / "tables" / f"x.md.{dead.pid}.q1w2e3r4.tmp",
             scale_dir / "results.csv.k3j4h5g6.tmp"]   # the last: an older runner's name, without a pid
    for p in stale:
        p.write_text("partial")
    os.utime(stale[-1], (time.time() - 3600, time.time() - 3600))
    live = scale_dir / f"results.csv.{os.getpid()}.zxcvbnm1.tmp"   # a live writer's: kept
    live.write_text("in progress")
    (paths["tmp"] / "fast").write_text("")   # the next run's child fails at once
    proc2 = subprocess.run(paths["cmd"], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
                           env=dict(os.environ, TMPDIR=str(paths["tmpdir"])))
    assert proc2.returncode == 0, proc2.stderr
    assert [r["status"] for r in rows_of(paths["res"])] == ["failed"]
    assert sorted(p.name for p in scale_dir.iterdir()) == sorted(["results.csv", "tables", live.name])
    assert not [p for p in (scale_dir / "tables").iterdir() if p.suffix == ".tmp"]
    assert not list(paths["tmpdir"].iterdir())


# ---- what the tables and the runner say (issue 21, item 4) -------------------------------------

def all_experiments():
    return [spec.load_experiment(p) for p in sorted((REPO_ROOT / "experiments").glob("*.toml"))]


def entry_of(exp, stem):
    """The [[tables]] entry of a series table's file stem."""
    return next(t for t in exp["tables"] if f"{exp['name']}_{t['name']}" == stem)


def shown_configs(exp, t, scale):
    return [p for p in spec.configurations(exp, scale) if all(p.get(k) == v for k, v in t.get("where", {}).items())]


# what a caption may call a parameter: its name, or the name the papers give it
PARAM_ALIASES = {"|S_i|": "n", "N": "window", "MinPts": "min_pts"}
CLAIM = re.compile(r"(\|S_i\||\b[A-Za-z_]\w*) = ([0-9]+(?:\.[0-9]+)?[kMG]?)")


def test_captions_state_the_parameters_of_their_rows():
    """Every parameter a title or caption states ("n = 4000") is a value of the rows the table
    shows at that scale, at every scale of every experiment file; the speedups are mentioned where
    the table has them, and only there."""
    checked = 0
    for exp in all_experiments():
        for scale in exp["scales"]:
            for stem, (title, *_) in tables.tables_of(exp, [], scale):
                assert "{" not in title and "}" not in title, (scale, title)
                if exp["table"] == "course":
                    configs = spec.configurations(exp, scale)
                else:
                    t = entry_of(exp, stem)
                    configs = shown_configs(exp, t, scale)
                    assert ("with the speedup" in title) == bool(t.get("speedup")), (scale, title)
                for name, value in CLAIM.findall(title):
                    key = PARAM_ALIASES.get(name, name)
                    values = {tables.fmt_param(p[key]) for p in configs if key in p}
                    if values:
                        assert value in values, f"{stem} at {scale}: '{name} = {value}' but the rows have {values}"
                        checked += 1
    assert checked > 30
    exp = spec.load_experiment(REPO_ROOT / "experiments" / "okuda_breakdown.toml")
    titles = {stem: t[0] for stem, t in tables.tables_of(exp, [], "smoke")}
    assert "|S_i| = 4000 points, k = 8" in titles["okuda_breakdown_breakdown"], titles
    assert "64000" not in titles["okuda_breakdown_breakdown"] and "k = 64" not in titles["okuda_breakdown_breakdown"]
    titles = {stem: t[0] for stem, t in tables.tables_of(exp, [], "default")}
    assert "|S_i| = 64000 points, k = 64" in titles["okuda_breakdown_breakdown"], titles


def test_a_placeholder_that_names_no_parameter_is_a_clear_error():
    exp = spec.load_experiment(REPO_ROOT / "experiments" / "okuda_breakdown.toml")
    exp["tables"][0]["caption"] = "phases vs d, m = {m}"
    with pytest.raises(spec.ExperimentError, match=r"okuda_breakdown: .*\{m\}"):
        tables.tables_of(exp, [], "smoke")


CAO_COSTS = {"tc", "cc", "pt", "dc", "gc", "g2m"}   # Cao et al.'s k-means costs: their names mean nothing elsewhere


def test_column_headers_say_what_the_columns_hold():
    """Cao's cost names (cc, tc, ...) only in Cao's k-means tables; every other column header names
    its metric in words, the variant and the unit; the DBSCAN and DPC tables say "run time"."""
    for exp in all_experiments():
        for t in exp.get("tables", []):
            metrics = t["metric"].split(",")
            if exp["command"][0] != "kmeans":
                assert not CAO_COSTS & set(metrics), f"{exp['name']} {t['name']}: {metrics}"
        for stem, (_, header, body, notes, _) in tables.tables_of(exp, [], "default"):
            assert not any(re.search(r"\bcc in s\b", n) for n in notes), (stem, notes)
            if exp["table"] != "series" or "y" in entry_of(exp, stem):
                continue
            t = entry_of(exp, stem)
            names = [tables.METRIC_TEXT[m][0] for m in t["metric"].split(",")]
            for h in header[1:]:
                assert h.startswith("speedup ") or any(h.startswith(name + " ") for name in names), (stem, h)
    exps = {e["name"]: e for e in all_experiments()}
    made = dict(tables.tables_of(exps["dclust"], [], "default"))
    assert made["dclust_index_build"][1] == ["n", "index build seq (s)", "index build omp (s)", "index build gpu (s)",
                                            "run time seq (s)", "run time omp (s)", "run time gpu (s)"]
    assert made["dclust_n_no_index_chains"][1][-2:] == ["speedup omp vs seq", "speedup gpu vs seq"]
    made = dict(tables.tables_of(exps["gdpc_datasets"], [], "default"))
    assert made["gdpc_datasets_runtime"][2][0][0] == "seq, run time (s)"
    assert "run time: the timed run" in " ".join(made["gdpc_datasets_runtime"][3])


def fake_rows(exp, scale, size):
    """ok rows of every configuration and variant of exp, each column of numbers spanning about a
    decade (size(params, variant index) scales them)."""
    rows = []
    for p in spec.configurations(exp, scale):
        for vi, v in enumerate(exp["variants"]):
            t = size(p, vi)
            rows.append(dict(experiment=exp["name"], scale=scale, config=spec.config_id(p), variant=v["name"],
                             program=v["program"], params=json.dumps(p, sort_keys=True), status="ok", repetition=1,
                             iterations=7, load_s=t / 10, total_s=t, assign_s=t / 2, update_s=t / 3, d2h_s=t / 30,
                             sse=1e5 * t, generation_s=t / 5, transfers_s=t / 70, distance_s=t / 3, selection_s=t / 90,
                             weighting_s=t / 4, other_s=t / 11, seeding_s=t / 6, index_s=t / 9, core_s=t / 8,
                             connect_s=t / 7, label_s=t / 13, tree_build_s=t / 5, rho_s=t / 3, delta_s=t / 6,
                             assignment_s=t / 20, distances=int(1e6 * t), all_pairs=int(3e6 * t), batch_s=t / 50,
                             restart_s=t / 4, h2d_gb_s=40 * t))
    return rows


def number_shape(text):
    """How a number is written: ("e", digits) in scientific notation, else ("f", decimals)."""
    m = re.fullmatch(r"-?[0-9]+(?:\.([0-9]+))?(e[+-][0-9]+)?x?(?: \(b[0-9,b]+\))?", text)
    assert m, text
    return ("e", len(m[1] or "")) if m[2] else ("f", len(m[1] or ""))


def test_numbers_have_one_format_per_column():
    """Every column of numbers (a grid: every column of each block of rows) is written in one format:
    the same decimals, chosen so that its smallest number has 3 significant digits, or scientific
    notation when the column spans too many decades for that."""
    fmt = tables.column_format([0.0204, 0.04914, 0.1], "time")
    assert [fmt(v) for v in (0.0204, 0.04914, 0.1)] == ["0.0204", "0.0491", "0.1000"]
    fmt = tables.column_format([0.002895, 0.03089, 7.182], "time")
    assert [fmt(v) for v in (0.002895, 0.03089, 7.182)] == ["0.00290", "0.03089", "7.18200"]
    fmt = tables.column_format([0.005, 50.0], "time")       # 0.00500 .. 50.00000 would be 7 digits
    assert [fmt(v) for v in (0.005, 50.0)] == ["5.00e-03", "5.00e+01"]
    fmt = tables.column_format([1.6, 1.89, 12.0], "speedup")
    assert [fmt(v) for v in (1.6, 1.89, 12.0)] == ["1.60", "1.89", "12.00"]
    assert tables.column_format([96349.0, 37502500.0], "count")(96349.0) == "96349"
    checked = 0
    for exp in all_experiments():
        def size(p, vi):   # from 0.0123 to 0.4 or so: a decade and a half within a column
            key = sum(ord(ch) for ch in json.dumps(p, sort_keys=True))
            return 0.0123 * (1 + key % 29) * (1 + vi)

        for stem, (_, header, body, *_) in tables.tables_of(exp, fake_rows(exp, "smoke", size), "smoke"):
            grid = exp["table"] == "series" and "y" in entry_of(exp, stem)
            first = 2 if grid or (exp["table"] == "course" and header[0] == "# clusters") else 1   # value columns
            shapes, block = {}, ""
            for row in body:
                if grid:
                    block = row[0] or block                           # a variant's block, a speedup's block
                elif exp["table"] == "course":
                    block = row[first - 1].split(" ")[0]              # times, Speedup rows or # iterations
                for j, c in enumerate(row[first:], first):
                    if re.fullmatch(r"-?[0-9][0-9.e+-]*x?", c):
                        shapes.setdefault((j, block), set()).add(number_shape(c))
            for (j, blk), found in shapes.items():
                assert len(found) == 1, f"{stem}: column {header[j]} ({blk}): {found}"
                checked += 1
    assert checked > 100


def test_an_empty_table_says_why():
    """A table whose rows this scale's grid does not have (dclust's MinPts series at smoke) says so,
    and names the scales that run it."""
    exp = spec.load_experiment(REPO_ROOT / "experiments" / "dclust.toml")
    made = dict(tables.tables_of(exp, [], "smoke"))
    _, header, body, notes, _ = made["dclust_min_pts_chains"]
    assert body == [] and header[0] == "min_pts"
    assert notes == ["No rows at this scale: the smoke scale runs no configuration with series = min_pts (its grid "
                     "has series = n_none and n_directory); the default and paper scales run this table."]
    _, _, body, notes, _ = made["dclust_min_pts_auto"]
    assert body == [] and "index = auto (its grid has index = none and directory)" in notes[0]
    assert made["dclust_n_no_index_chains"][2], "a table with rows at smoke"
    for stem, (_, _, body, notes, _) in made.items():
        assert body or notes[0].startswith("No rows at this scale: "), stem


GPU_MESSAGES = [
    "pragmaclust: error: gpu variant: no GPU is visible to the OpenMP runtime (no NVIDIA driver/libcuda); pass "
    "--allow-host to run this build on the host",
    "pragmaclust: error: gpu variant: OMP_TARGET_OFFLOAD=DISABLED keeps the kernels on the host; unset it, or pass "
    "--allow-host to run this build on the host",
    "pragmaclust: error: gpu variant: 1 device(s) found but the kernels ran on the host: the device image was "
    "rejected (wrong sm_XX), or pass --allow-host to run on the host",
]


def test_no_gpu_note_is_said_once_and_truly(tmp_path):
    """The runner never passes --allow-host: the note says what happened (the gpu build found no GPU and
    was not run) and what to do, once per table and once in all.md, without the program's advice."""
    assert [tables.no_gpu_reason(m) for m in GPU_MESSAGES] == [
        "no GPU is visible to the OpenMP runtime (no NVIDIA driver/libcuda)",
        "OMP_TARGET_OFFLOAD=DISABLED keeps the kernels on the host; unset it",
        "1 device(s) found but the kernels ran on the host: the device image was rejected (wrong sm_XX)"]
    exps = [e for e in all_experiments() if e["name"] in ("cao_kmeans", "dbscan_scaling", "course_fig3")]
    rows = []
    for exp in exps:
        for r in fake_rows(exp, "smoke", lambda p, vi: 0.01 * (1 + vi)):
            if r["program"] == "gpu":
                r.update(status="no-device", reason=GPU_MESSAGES[0])
            rows.append(r)
    tables.write_all(exps, rows, "smoke", tmp_path)
    all_md = (tmp_path / "all.md").read_text()
    assert all_md.count("n/a (no GPU): ") == 1 and "--allow-host" not in all_md
    note = next(line for line in all_md.splitlines() if line.startswith("- n/a (no GPU): "))
    assert "not run" in note and "no GPU is visible to the OpenMP runtime" in note
    assert "never runs the gpu build on the host" in note and "machine with a GPU" in note
    assert all_md.index(note) < all_md.index("### ")                # at the top, before the first table
    assert all_md.count("| n/a (no GPU) |") > 10                    # the cells still say n/a (no GPU)
    for md in tmp_path.glob("*_*.md"):
        text = md.read_text()
        if "| n/a (no GPU)" in text:
            assert text.count("- n/a (no GPU): ") == 1 and "--allow-host" not in text, md.name


def test_smoke_run_ends_with_the_summary_and_the_next_commands(smoke):
    """The runner's last lines: the runs by status, where the results and the tables are, and the
    commands that come next; the same after --tables-only."""
    results, proc, _ = smoke
    plan = sum(len(spec.configurations(e, "smoke")) * len(e["variants"]) for e in all_experiments())
    for out in (proc.stdout, runner(results, "--scale", "smoke", "--tables-only").stdout):
        lines = out.rstrip("\n").splitlines()
        last = lines[max(i for i, line in enumerate(lines) if line.startswith("summary: ")):]
        assert len(last) in (4, 5) and (len(last) == 4 or last[1].startswith("this run: ")), last
        summary, where_results, where_tables, nxt = last[0], last[-3], last[-2], last[-1]
        assert summary.startswith(f"summary: {plan} runs at the smoke scale: "), summary
        counts = dict((w, int(n)) for n, w in re.findall(r"(\d+) ([^,]+)", summary.split(": ", 2)[2]))
        assert {"ok", "failed", "timed out", "skipped (over the budget)"} <= set(counts), summary
        assert sum(counts.values()) == plan, summary
        assert where_results == f"results: {results}/smoke/results.csv"
        assert where_tables.startswith(f"tables:  {results}/smoke/tables/")
        assert nxt == (f"next:    make plots SCALE=smoke RESULTS={results} (the figures), "
                       f"then make paper SCALE=smoke RESULTS={results}")
    assert "this run: " in proc.stdout
    gpu_rows = [r for r in rows_of(results) if r["program"] == "gpu"]
    if all(r["status"] == "no-device" for r in gpu_rows):
        assert "--allow-host" not in proc.stdout and not any("--allow-host" in r["reason"] for r in gpu_rows)
        assert (results / "smoke" / "tables" / "all.md").read_text().count("- n/a (no GPU): ") == 1


def test_smoke_results_build_a_paper_of_every_family(smoke, tmp_path):
    """`make experiments SCALE=smoke && make paper` as on a fresh clone without a GPU: from the
    smoke run of every experiment (gpu rows n/a), its figures and a PDF with every section of
    paper.tex and paper/sections/, and every table those include."""
    from test_paper_build import BUILD, need, paper_contents, sh, squash
    need("pdflatex", "gnuplot", "pdftotext")
    results, proc, _ = smoke
    assert proc.returncode == 0, proc.stderr
    p = sh([sys.executable, REPO_ROOT / "plots" / "plot.py", "--results", results, "--scale", "smoke"])
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    p = sh(["bash", BUILD, "--out", out, results, "smoke"])
    assert p.returncode == 0, p.stdout + p.stderr
    flat = squash(sh(["pdftotext", out / "paper.pdf", "-"]).stdout)
    titles, tables, _ = paper_contents()
    for title in titles:
        plain = re.sub(r"\\([#&%_])", r"\1", re.sub(r"\\[a-zA-Z]+\{?|[{}$]", "", title)).replace("~", " ")
        assert squash(plain) in flat, f"section '{title}' not in the PDF"
    made = {t.stem for t in (Path(results) / "smoke" / "tables").glob("*.tex")}
    assert tables - made - {"#1", "#2", "#3", "#4", "STEM"} == set(), "tables the smoke run did not make"
    assert "??" not in flat


def test_bench_kmeans_refuses_a_flash_checkout_it_cannot_use(tmp_path):
    """bench_kmeans.py --flash DIR (issue 25: Flash-KMeans timed beside ours) names what is wrong in
    one line: a folder without the flash_kmeans package, or one whose package does not import here
    (this one raises, as Flash's does without Triton), before anything runs."""
    bench = REPO_ROOT / "experiments" / "bench_kmeans.py"
    broken = tmp_path / "checkout"
    (broken / "flash_kmeans").mkdir(parents=True)
    (broken / "flash_kmeans" / "__init__.py").write_text("raise ImportError('no triton here')\n")
    for folder, words in ((tmp_path / "empty", "no flash_kmeans/ package"), (broken, "does not import here")):
        folder.mkdir(exist_ok=True)
        p = subprocess.run([sys.executable, str(bench), "--bin", str(bin_dir()), "--cases", "1000x2x3", "--flash",
                            str(folder)], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and p.stdout == ""
        assert len(p.stderr.strip().splitlines()) == 1 and words in p.stderr and "--flash" in p.stderr
