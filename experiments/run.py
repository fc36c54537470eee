#!/usr/bin/env python3
"""run.py - the experiment runner: runs the experiments declared in experiments/*.toml and
regenerates their tables from the measurements.

  experiments/run.py [--scale smoke|default|paper] [--only NAME,...] [--bin DIR]
                     [--data-dir DIR] [--results DIR] [--retry-failed] [--reuse-other-builds]
                     [--tables-only]

Each experiment file declares a command template, the variants to compare, and per scale the
parameter grid, repetitions, warm-up runs and a time budget per run (see experiments/README.md).
For every (configuration, variant) the runner calls `pragmaclust-<program>` with --repeat and
--warmup, reads its JSON report and appends one row per timed repetition to
RESULTS/<scale>/results.csv, with the provenance in every row. A run that fails, crashes or
exceeds its budget is recorded with that status and the suite goes on; a configuration whose
smaller neighbour already exceeded the budget is recorded as skipped (nothing is
extrapolated). The CSV is rewritten atomically after each run, so Ctrl-C or a crash leaves a
valid file, and a rerun resumes where the last one stopped without duplicating rows.
Every row names the build of its program (the `build` column: a hash of the commit and dirty flag,
compiler, flags and the program's sha256); a rerun keeps only rows of the builds in --bin and runs
the rest again (--reuse-other-builds keeps them, and the tables then say which build each number is
from). Rows whose cause is gone (missing-data once the file is there, missing-program once it is
built, no-device once the GPU offloads) are run again; --retry-failed runs every row that is not ok.
Children die with the runner (SIGINT, SIGTERM, SIGHUP: their process group is ended; the runner
killed: their parent-death signal), and a start removes what a killed runner left (staged CSVs
and tables, its folder of reports). The gpu variant never runs on the host: without a usable GPU
its rows are recorded as no-device ("n/a (no GPU)") and run when a GPU is there. The last lines
printed are the summary: the runs of the scale by status, where the results and the tables are,
and the commands that come next (make plots, make paper). Standard library only (Python 3.11+),
so it also runs on a GPU machine that has only the bundle.
"""
import argparse
import csv
import ctypes
import ctypes.util
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tables  # noqa: E402
from spec import ExperimentError, config_id, configurations, fill, select_experiments  # noqa: E402

EXPERIMENTS_DIR = Path(__file__).resolve().parent
SCALES = ("smoke", "default", "paper")
EXIT_NO_DEVICE = 3
EXIT_CHECK_FAILED = 1
CHECK_FAILED = "--check: the results are wrong"   # the programs' last line when a check fails
FIELDS = ["experiment", "scale", "config", "variant", "program", "status", "reason", "repetition", "dataset",
          "n", "d", "k", "params", "iterations", "converged", "sse", "clusters", "noise", "load_s", "total_s",
          "h2d_s", "assign_s", "update_s", "index_s", "core_s", "connect_s", "label_s", "d2h_s", "generation_s",
          "transfers_s", "distance_s", "selection_s", "weighting_s", "seeding_s", "other_s", "tree_build_s", "rho_s",
          "delta_s", "assignment_s", "distances", "all_pairs", "batches", "batch_s", "restart_s", "batch_distances",
          "exit_status",
          "compiler", "flags", "git_commit", "host_cpu", "threads", "gpu", "where", "timestamp", "command",
          "build", "binary_sha256", "verified", "h2d_gb_s"]
# The build columns and `verified` come last, so that the CSVs of older runners (reference/*.csv)
# read the same; their rows have no build, which counts as another build (see row_build). Columns
# added since then follow them: h2d_gb_s, k-means out of core (the report's out_of_core.h2d_gb_s:
# the points copied to the device over the copies' time, of the last timed run; empty in memory).
# verified: every run passes --check (cli/check.h): "yes" when the report says it passed, "no"
# when the program found its results wrong (then the row's status is "failed"), else empty.
BUILD_FIELDS = ("compiler", "flags", "git_commit", "build", "binary_sha256")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_GRACE_S = 5        # a child's time to end on SIGTERM (and remove its staged outputs) before SIGKILL
RUN_DIR = re.compile(r"^\.run\.(?P<pid>[0-9]+)$")   # a runner's folder of reports, under RESULTS/<scale>


# ---- machine provenance ----------------------------------------------------------------------

def host_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ---- results file ----------------------------------------------------------------------------

def read_rows(path):
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_rows_atomically(path, rows):
    """Writes all rows to a staged file beside path, then renames it over path (tables.write_atomically:
    the umask's mode, a pid-named staged copy that a later start removes if this process dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def fill(f):
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)

    tables.write_atomically(path, fill, newline="")


def row_build(row):
    """The build a row was measured with; "" for a row of an older runner (an unknown build)."""
    return row.get("build") or ""


def clean_debris(scale_dir, started):
    """Removes what a killed runner left under RESULTS/<scale>: staged copies of results.csv and of
    the tables (tables.clean_stale_staged) and report folders .run.<pid> of runners that no longer
    run. Returns the names removed."""
    removed = tables.clean_stale_staged(scale_dir, started) + tables.clean_stale_staged(scale_dir / "tables", started)
    if scale_dir.is_dir():
        for p in scale_dir.iterdir():
            m = RUN_DIR.match(p.name)
            if m and p.is_dir() and not tables.pid_alive(int(m["pid"])):
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p.name)
    return removed


# ---- builds ------------------------------------------------------------------------------------

def build_identity(program):
    """{build, binary_sha256, compiler, flags, git_commit} of a program, or None if it does not
    exist. build is a 12-hex hash of the program's own account of itself (`info`: variant,
    compiler, flags, git commit with -dirty for a modified tree) and of the sha256 of its file, so
    that any rebuild, even one the commit does not show, is another build."""
    program = Path(program)
    if not program.is_file():
        return None
    digest = hashlib.sha256()
    with open(program, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    rc, out, _ = run_child([str(program), "info"], 60, capture_stdout=True)
    info = {}
    for line in (out or "").splitlines() if rc == 0 else []:
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip()] = value.strip()
    fields = {"compiler": info.get("compiler", ""), "flags": info.get("flags", ""),
              "git_commit": info.get("git commit", ""), "binary_sha256": digest.hexdigest()}
    key = json.dumps([info.get("variant", ""), fields["compiler"], fields["flags"], fields["git_commit"],
                      fields["binary_sha256"]])
    return dict(fields, build=hashlib.sha256(key.encode()).hexdigest()[:12])


def current_builds(bin_dir):
    """{program: build identity or None} of the programs in bin_dir."""
    return {p: build_identity(Path(bin_dir) / f"pragmaclust-{p}") for p in ("seq", "omp", "gpu")}


# ---- children -----------------------------------------------------------------------------------
# Every program the runner starts goes through run_child: its own session and process group (a
# terminal's Ctrl-C reaches the runner only, which then ends the group: stop_child), and a
# parent-death signal (prctl PR_SET_PDEATHSIG), so that it dies with the runner even when the
# runner is killed with SIGKILL and no handler runs. SIGTERM rather than SIGKILL in both: our
# programs then remove their staged outputs before they end (SIGKILL follows after STOP_GRACE_S).

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True) if sys.platform.startswith("linux") else None
_running = set()   # children started and not yet reaped: the runner's last act ends them (stop_children)
_handled = set()   # the stop signals the runner handles (one ignored when it started, as under nohup, stays so)


class Stopped(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP reached the runner: unwinds it as Ctrl-C does (children ended,
    staged files removed, the CSV keeps every finished run)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def on_stop_signal(signum, frame):
    """Raises Stopped once; later signals are ignored so that the cleanup they start can finish."""
    for s in _handled:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


def interrupted(e, csv_path):
    """Says that the runner was stopped (KeyboardInterrupt or Stopped); returns its exit status, 128 + signal."""
    signum = e.signum if isinstance(e, Stopped) else signal.SIGINT
    print(f"\ninterrupted ({signal.Signals(signum).name}): {csv_path} keeps every finished run; "
          "rerun the same command to resume", flush=True)
    return 128 + signum


def child_setup(parent):
    """Runs in the child between fork and exec: dies with the parent (and at once if the parent is
    already gone), with the default action for the stop signals, none of them blocked."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), ctypes.c_ulong(0), ctypes.c_ulong(0),
                    ctypes.c_ulong(0))
    if os.getppid() != parent:
        os._exit(1)
    for s in _handled:   # on_stop_signal may have set SIG_IGN, which exec would keep
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def stop_child(proc):
    """Ends a child's process group (SIGTERM, then SIGKILL after STOP_GRACE_S) and reaps the child."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.communicate(timeout=STOP_GRACE_S if sig == signal.SIGTERM else None)
            break
        except subprocess.TimeoutExpired:
            continue
    _running.discard(proc)


def stop_children():
    for proc in list(_running):
        stop_child(proc)


def run_child(cmd, timeout, capture_stdout=False):
    """Runs cmd with a time limit (seconds, or None); returns (exit status, or None after the time
    limit; stdout when captured, else ""; stderr). The stop signals are blocked while the child is
    started, so that it is registered in _running before a signal can unwind the runner."""
    parent = os.getpid()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=lambda: child_setup(parent))
        _running.add(proc)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out or "", err
    except subprocess.TimeoutExpired:
        stop_child(proc)
        return None, "", ""
    finally:
        if proc.returncode is None:
            stop_child(proc)
        _running.discard(proc)


# ---- running one configuration -----------------------------------------------------------------

def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def base_row(exp, scale, params, variant, ctx):
    """The columns every row of one (configuration, variant) shares, the build of its program included."""
    build = ctx.builds.get(variant["program"]) or {}
    return {"experiment": exp["name"], "scale": scale, "config": config_id(params), "variant": variant["name"],
            "program": variant["program"], "dataset": params.get("label", params.get("file", "")),
            "n": params.get("n", ""), "d": params.get("d", ""), "k": params.get("k", ""),
            "params": json.dumps(params, sort_keys=True), "host_cpu": ctx.cpu,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "repetition": "",
            **{k: build.get(k, "") for k in BUILD_FIELDS}}


def template_values(exp, params, ctx):
    """The placeholders of one configuration, {input} included (an axis table may bring its own input)."""
    values = dict(exp.get("defaults", {}), **params, data_dir=ctx.data_dir, work=ctx.work_dir)
    values["input"] = fill(params.get("input", exp["input"]), values)
    return values


def input_present(exp, params, ctx):
    """True when the configuration's input is generated (gen:) or its file is there."""
    path = template_values(exp, params, ctx)["input"]
    return path.startswith("gen:") or Path(path).exists()


def measure(exp, scale, params, variant, ctx):
    """Runs one (configuration, variant); returns the rows to record."""
    spec = exp["scales"][scale]
    values = template_values(exp, params, ctx)
    base = base_row(exp, scale, params, variant, ctx)
    program = ctx.bin_dir / f"pragmaclust-{variant['program']}"
    input_path = values["input"]

    def status_row(status, reason, **extra):
        return [dict(base, status=status, reason=reason, **extra)]

    if not program.exists():
        return status_row("missing-program", f"{program} is not built")
    if variant["program"] == "gpu" and ctx.gpu_problem:
        return status_row("no-device", ctx.gpu_problem)
    if "prepare" in exp and not Path(input_path).exists():
        problem = ctx.prepare(fill(exp["prepare"], values), input_path)
        if problem:
            return status_row("failed", f"preparing the data: {problem}")
    if not input_path.startswith("gen:") and not Path(input_path).exists():
        return status_row("missing-data", f"{input_path} not found (make datasets)")

    report_path = ctx.report_path()
    try:
        cmd = [str(program)] + [fill(a, values) for a in exp["command"] + variant.get("args", [])] + [
            "--repeat", str(variant.get("repeat", spec.get("repeat", 1))),
            "--warmup", str(variant.get("warmup", spec.get("warmup", 0))),
            "--report", str(report_path), "--quiet", "--check"]
        base["command"] = " ".join(cmd[:1] + [c for c in cmd[1:] if c != str(report_path)])
        rc, _, err = run_child(cmd, spec["budget_s"])
        if rc is None:
            return status_row("timeout", f"exceeded the {spec['budget_s']} s budget")
        if rc == EXIT_NO_DEVICE:
            return status_row("no-device", tables.no_gpu_reason(last_line(err)), exit_status=rc)
        if rc < 0:
            return status_row("crashed", f"killed by signal {-rc}: {last_line(err)}", exit_status=rc)
        if rc == EXIT_CHECK_FAILED and CHECK_FAILED in err:
            return status_row("failed", last_line(err), exit_status=rc, verified="no")
        if rc != 0:
            return status_row("failed", last_line(err) or f"exit status {rc}", exit_status=rc)
        try:
            rep = json.loads(report_path.read_text())
            self_check(rep)
        except (OSError, ValueError, KeyError, TypeError) as e:
            return status_row("failed", f"self-check: unusable report ({e})", exit_status=rc)
    finally:
        report_path.unlink(missing_ok=True)
    common = dict(base, status="ok", reason="", exit_status=0, compiler=rep["compiler"], flags=rep["flags"],
                  git_commit=rep["git_commit"], threads=rep["threads"], gpu=rep["device"]["name"],
                  where=rep["device"]["where"], load_s=repr(rep["timing"]["load_s"]), n=rep["n"], d=rep["d"],
                  k=rep.get("k", ""), converged=int(rep["converged"]) if "converged" in rep else "",
                  sse=repr(float(rep["sse"])) if "sse" in rep else repr(float(rep["cost"])) if "cost" in rep else "",
                  clusters=rep.get("clusters", ""),
                  noise=rep.get("noise", ""), verified="yes", h2d_gb_s=out_of_core_bandwidth(rep))
    if rep.get("subcommand") == "dpc":
        common.update(dpc_columns(rep))
    rows = []
    for i, r in enumerate(rep["runs"]):
        row = dict(common, repetition=i + 1, iterations=r.get("iterations", ""), total_s=repr(r["total_s"]))
        row.update({f"{phase}_s": repr(t) for phase, t in r.items() if f"{phase}_s" in FIELDS and phase != "total"})
        rows.append(row)
    return rows


def out_of_core_bandwidth(rep):
    """k-means out of core: the host-to-device bandwidth of its streamed blocks (GB/s), else ""."""
    gb_s = (rep.get("out_of_core") or {}).get("h2d_gb_s")
    return repr(float(gb_s)) if gb_s else ""


def dpc_columns(rep):
    """Density peaks: the distance computations of the timed (base) run and of all pairs (2 n^2);
    with incremental batches, their number and the medians over the insertion batches of the time,
    of the recomputation from scratch (--verify) and of the distance computations."""
    out = {"distances": rep["base_distance_computations"], "all_pairs": int(rep["all_pairs_distance_computations"]),
           "k": rep["params"].get("peaks", "")}
    batches = [b for b in rep.get("batches", []) if b["op"] == "insert"]
    if batches:
        out.update(batches=len(batches), batch_s=repr(statistics.median(b["total_s"] for b in batches)),
                   batch_distances=int(statistics.median(b["distance_computations"] for b in batches)))
        if all("restart_s" in b for b in batches):
            out["restart_s"] = repr(statistics.median(b["restart_s"] for b in batches))
    return out


def self_check(rep):
    """Raises ValueError unless a report has timed runs, a passed --check and a sane quality measure (a finite,
    non-negative SSE and at least one iteration for k-means and stream, a finite non-negative
    cost for streamkm; consistent counts for DBSCAN; at least one cluster and a distance count for
    density peaks)."""
    if not rep["runs"]:
        raise ValueError("no timed run")
    if not rep.get("check", {}).get("passed"):
        raise ValueError("the report has no passed --check")
    if "sse" in rep:
        sse = float(rep["sse"])
        if sse != sse or sse < 0 or rep["iterations"] < 1:
            raise ValueError("bad SSE or no iteration")
    if "cost" in rep:
        cost = float(rep["cost"])
        if cost != cost or cost < 0:
            raise ValueError("bad cost")
    if "core" in rep and not (0 <= rep["core"] + rep["border"] + rep["noise"] == rep["n"]):
        raise ValueError("core, border and noise counts do not add up to n")
    if rep.get("subcommand") == "dpc" and not (rep["clusters"] >= 1 and rep["base_distance_computations"] > 0):
        raise ValueError("no cluster or no distance computed")


def dominated_by_timeout(params, timed_out):
    """A smaller configuration (every numeric parameter <=) that exceeded the budget, or None."""
    for other in timed_out:
        if other.keys() != params.keys() or other == params:
            continue
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) and v <= params[key] or v == params[key]
               for key, v in other.items()):
            return other
    return None


class Context:
    def __init__(self, args, scale_dir):
        self.bin_dir = Path(args.bin)
        self.data_dir = str(Path(args.data_dir).resolve())
        self.work_dir = str((scale_dir.parent / "cache").resolve())  # generated inputs, shared by the scales
        # The reports of this runner's children: inside the results folder, named with its pid, so
        # that a start after this runner was killed removes it (clean_debris); removed at the end.
        self.run_dir = scale_dir / f".run.{os.getpid()}"
        self.reports = 0
        self.cpu = host_cpu()
        self.builds = current_builds(self.bin_dir)
        self.gpu_problem = self.probe_gpu()

    def build_id(self, program):
        """The build id of a program in --bin, or "" when it is not there."""
        return (self.builds.get(program) or {}).get("build", "")

    def report_path(self):
        """A new path for one run's JSON report (never one that an earlier run wrote)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.reports += 1
        return self.run_dir / f"report.{self.reports}.json"

    def probe_gpu(self):
        """None when the gpu program offloads, else the reason (shown as n/a (no GPU)), in the program's
        words less its advice to pass --allow-host, which the runner never does (tables.no_gpu_reason)."""
        program = self.bin_dir / "pragmaclust-gpu"
        if not program.exists():
            return f"{program} is not built"
        rc, _, err = run_child([str(program), "info", "--require-gpu"], None)
        return None if rc == 0 else tables.no_gpu_reason(last_line(err) or f"exit status {rc}")

    def prepare(self, spec, path):
        """Writes the generated data set `spec` to path with the seq program; error text or None."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        rc, _, err = run_child([str(self.bin_dir / "pragmaclust-seq"), "generate", spec, "--out", path], None)
        return None if rc == 0 else last_line(err)


def fmt_duration(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def rerun_reason(old, exp, params, variant, ctx, args):
    """Why the recorded rows `old` of one (configuration, variant) must be run again, or None to
    keep them. The resume key is (experiment, configuration, variant) and the build: rows of a
    build other than the program's in --bin (or of an unknown one) are rerun unless
    --reuse-other-builds; rows whose cause is gone are rerun (missing-data once the input is there,
    missing-program once the program is built, no-device once the GPU offloads); --retry-failed
    reruns every row that is not ok. While the program is missing nothing is rerun (its rows are
    kept, whatever their build: a rerun could only record missing-program)."""
    current = ctx.build_id(variant["program"])
    status = old[0]["status"]
    if not current:
        return None
    if status == "missing-program":
        return "built now"
    if status == "missing-data" and input_present(exp, params, ctx):
        return "data there now"
    if status == "no-device" and not ctx.gpu_problem:
        return "GPU there now"
    if args.retry_failed and any(r["status"] != "ok" for r in old):
        return "--retry-failed"
    if not args.reuse_other_builds and any(row_build(r) != current for r in old):
        return "another build"
    return None


def run_suite(args):
    started = time.time()
    scale_dir = Path(args.results) / args.scale
    csv_path = scale_dir / "results.csv"
    exps = select_experiments(args.experiments or sorted(EXPERIMENTS_DIR.glob("*.toml")), args.only)
    handlers = {s: signal.signal(s, on_stop_signal) for s in STOP_SIGNALS if signal.getsignal(s) != signal.SIG_IGN}
    _handled.update(handlers)
    ctx = None
    try:
        removed = clean_debris(scale_dir, started)
        if removed:
            print(f"removed what a killed runner left in {scale_dir}: {', '.join(sorted(removed))}")
        ctx = Context(args, scale_dir)
        return run_plan(args, exps, scale_dir, csv_path, ctx)
    except KeyboardInterrupt as e:   # Ctrl-C, or Stopped by SIGTERM / SIGHUP, outside the runs
        return interrupted(e, csv_path)
    finally:
        stop_children()
        if ctx is not None:
            shutil.rmtree(ctx.run_dir, ignore_errors=True)
        for s, h in handlers.items():
            signal.signal(s, h)
        _handled.clear()


def run_plan(args, exps, scale_dir, csv_path, ctx):
    """Runs what the CSV lacks (see rerun_reason), recording each run at once; then the tables."""
    rows = read_rows(csv_path)
    recorded = {}   # {(experiment, config, variant): its rows of this scale}
    for r in rows:
        if r["scale"] == args.scale:
            recorded.setdefault((r["experiment"], r["config"], r["variant"]), []).append(r)

    plan = [(e, p, v) for e in exps for p in configurations(e, args.scale) for v in e["variants"]]
    todo, reasons, reused = [], {}, 0
    for e, p, v in plan:
        old = recorded.get((e["name"], config_id(p), v["name"]))
        why = rerun_reason(old, e, p, v, ctx, args) if old else "new"
        if why:
            todo.append((e, p, v))
            reasons[why] = reasons.get(why, 0) + 1
        elif ctx.build_id(v["program"]) and any(row_build(r) != ctx.build_id(v["program"]) for r in old):
            reused += 1
    print(f"pragmaclust experiments, scale {args.scale}: {len(plan)} runs in {len(exps)} experiments, "
          f"{len(plan) - len(todo)} already in {csv_path}")
    again = {why: n for why, n in reasons.items() if why != "new"}
    if again:
        print("to run again: " + ", ".join(f"{n} ({why})" for why, n in sorted(again.items()))
              + ("" if args.reuse_other_builds or "another build" not in again
                 else "; --reuse-other-builds keeps the rows of other builds"))
    if reused:
        print(f"kept {reused} runs of other builds (--reuse-other-builds): the tables name their build")
    if ctx.gpu_problem and not ctx.build_id("gpu"):
        print(f"gpu variant: {ctx.gpu_problem}: its runs are recorded as missing-program")
    elif ctx.gpu_problem:
        print(f"gpu variant: no usable GPU here ({ctx.gpu_problem}): its runs are recorded as n/a (no GPU), "
              "not run on the host; the same command on a machine with a GPU runs them")
    # time-outs that are kept (not rerun) still skip the larger configurations of their variant
    rerun = {(e["name"], config_id(p), v["name"]) for e, p, v in todo}
    timed_out = {}
    for key, old in recorded.items():
        if key not in rerun and old[0]["status"] == "timeout":
            timed_out.setdefault((key[0], key[2]), []).append(json.loads(old[0]["params"]))
    counts, t_start, spent = {}, time.monotonic(), []
    try:
        for i, (exp, params, variant) in enumerate(todo, 1):
            t0 = time.monotonic()
            key = (exp["name"], variant["name"])
            smaller = dominated_by_timeout(params, timed_out.get(key, []))
            label = f"{exp['name']} {config_id(params)} {variant['name']}"
            if smaller:
                new = [dict(base_row(exp, args.scale, params, variant, ctx), status="skipped-budget",
                            reason=f"the smaller case {config_id(smaller)} exceeded the budget")]
            else:
                print(f"[{i}/{len(todo)}] {label} ...", end="", flush=True)
                new = measure(exp, args.scale, params, variant, ctx)
            status = new[0]["status"]
            if status == "timeout":
                timed_out.setdefault(key, []).append(params)
            # the new rows replace those of the same key (another build's, or a retried status)
            replaced = (exp["name"], config_id(params), variant["name"])
            rows = [r for r in rows if r["scale"] != args.scale
                    or (r["experiment"], r["config"], r["variant"]) != replaced] + new
            write_rows_atomically(csv_path, rows)
            counts[status] = counts.get(status, 0) + 1
            elapsed = time.monotonic() - t0
            if not smaller:
                spent.append(elapsed)
                left = sum(spent) / len(spent) * (len(todo) - i)
                detail = f": {new[0]['reason']}" if status not in ("ok", "no-device") else ""
                print(f" {status}{detail} ({elapsed:.1f} s; elapsed {fmt_duration(time.monotonic() - t_start)}, "
                      f"about {fmt_duration(left)} left)", flush=True)
    except KeyboardInterrupt as e:
        print(this_run(counts, time.monotonic() - t_start))
        return interrupted(e, csv_path)
    tables.write_all(exps, rows, args.scale, scale_dir / "tables", echo=True,
                     current_builds={p: ctx.build_id(p) or None for p in ctx.builds})
    print(final_lines(args, plan, rows, this_run(counts, time.monotonic() - t_start)))
    return 0


# ---- the last lines ------------------------------------------------------------------------------
# The summary's words for the statuses, in its order; the first four are said even when none has them.
SUMMARY_STATUSES = (("ok", "ok"), ("failed", "failed"), ("timeout", "timed out"),
                    ("skipped-budget", "skipped (over the budget)"), ("crashed", "crashed"),
                    ("no-device", "n/a (no GPU)"), ("missing-data", "missing data"),
                    ("missing-program", "missing program"), ("not-run", "not run yet"))


def count_words(counts, always=4):
    """{status: n} in words, in SUMMARY_STATUSES's order: "3 ok, 0 failed, 0 timed out, ..."."""
    words = dict(SUMMARY_STATUSES)
    known = [s for s, _ in SUMMARY_STATUSES]
    order = known + sorted(s for s in counts if s not in words)
    return ", ".join(f"{counts.get(s, 0)} {words.get(s, s)}" for i, s in enumerate(order)
                     if counts.get(s) or i < always)


def this_run(counts, seconds):
    """What this runner ran, as a line of the summary."""
    if not counts:
        return "this run: nothing to run (every run of this scale is in the results file)"
    n = sum(counts.values())
    return f"this run: {n} run{'s' if n != 1 else ''} in {fmt_duration(seconds)}: {count_words(counts, always=0)}"


def make_command(target, args):
    """The make command of a target for this scale and results folder."""
    results = "" if args.results == "results" else f" RESULTS={shlex.quote(str(args.results))}"
    return f"make {target} SCALE={args.scale}{results}"


def final_lines(args, plan, rows, ran=None):
    """The runner's last lines: the runs of the scale by status (each (experiment, configuration,
    variant) of the plan once, as the CSV records it now), the line `ran` about this runner's own
    runs, where the results and the tables are, and the commands that come next."""
    recorded = {}
    for r in rows:
        if r["scale"] == args.scale:
            key = (r["experiment"], r["config"], r["variant"])
            recorded[key] = "ok" if r["status"] == "ok" or recorded.get(key) == "ok" else r["status"]
    counts = {}
    for e, p, v in plan:
        status = recorded.get((e["name"], config_id(p), v["name"]), "not-run")
        counts[status] = counts.get(status, 0) + 1
    scale_dir = Path(args.results) / args.scale
    lines = ["", f"summary: {len(plan)} runs at the {args.scale} scale: {count_words(counts)}"]
    lines += [ran] if ran else []
    lines += [f"results: {scale_dir / 'results.csv'}",
              f"tables:  {scale_dir / 'tables'}/ (all.md: every table; <name>.md and <name>.tex: one each)",
              f"next:    {make_command('plots', args)} (the figures), then {make_command('paper', args)}"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", default=os.environ.get("SCALE", "default"), choices=SCALES)
    ap.add_argument("--only", help="comma-separated experiment names (file names without .toml)")
    ap.add_argument("--experiment", dest="experiments", action="append",
                    help="run this experiment file instead of experiments/*.toml (repeatable)")
    ap.add_argument("--bin", default="bin", help="folder with pragmaclust-{seq,omp,gpu} (default bin)")
    ap.add_argument("--data-dir", default=os.environ.get("DATA_DIR", "data"),
                    help="real data sets (default $DATA_DIR or data)")
    ap.add_argument("--results", default="results", help="results folder (default results)")
    ap.add_argument("--retry-failed", action="store_true",
                    help="run again every row that is not ok (failed, crashed, timed out, skipped, missing, no device)")
    ap.add_argument("--reuse-other-builds", action="store_true",
                    help="keep rows measured by other builds of the programs (the tables then name their build)")
    ap.add_argument("--tables-only", action="store_true", help="only regenerate the tables from the results CSV")
    args = ap.parse_args()
    try:
        if args.tables_only:
            started = time.time()
            exps = select_experiments(args.experiments or sorted(EXPERIMENTS_DIR.glob("*.toml")), args.only)
            scale_dir = Path(args.results) / args.scale
            tables.clean_stale_staged(scale_dir / "tables", started)
            builds = {p: (b or {}).get("build") for p, b in current_builds(Path(args.bin)).items()}
            rows = read_rows(scale_dir / "results.csv")
            tables.write_all(exps, rows, args.scale, scale_dir / "tables", echo=True, current_builds=builds)
            plan = [(e, p, v) for e in exps for p in configurations(e, args.scale) for v in e["variants"]]
            print(final_lines(args, plan, rows))
            return 0
        return run_suite(args)
    except ExperimentError as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
