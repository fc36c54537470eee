#!/usr/bin/env python3
"""run.py - the experiment runner: runs the experiments declared in experiments/*.toml and
regenerates their tables from the measurements.

  experiments/run.py [--scale smoke|default|paper] [--only NAME,...] [--bin DIR]
                     [--data-dir DIR] [--results DIR] [--retry-failed] [--tables-only]

Each experiment file declares a command template, the variants to compare, and per scale the
parameter grid, repetitions, warm-up runs and a time budget per run (see experiments/README.md).
For every (configuration, variant) the runner calls `pragmaclust-<program>` with --repeat and
--warmup, reads its JSON report and appends one row per timed repetition to
RESULTS/<scale>/results.csv, with the provenance in every row. A run that fails, crashes or
exceeds its budget is recorded with that status and the suite goes on; a configuration whose
smaller neighbour already exceeded the budget is recorded as skipped (nothing is
extrapolated). The CSV is rewritten atomically after each run, so Ctrl-C or a crash leaves a
valid file, and a rerun resumes where the last one stopped without duplicating rows.
Standard library only (Python 3.11+), so it also runs on a GPU machine that has only the bundle.
"""
import argparse
import csv
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tables  # noqa: E402
from spec import ExperimentError, config_id, configurations, fill, select_experiments  # noqa: E402

EXPERIMENTS_DIR = Path(__file__).resolve().parent
SCALES = ("smoke", "default", "paper")
EXIT_NO_DEVICE = 3
FIELDS = ["experiment", "scale", "config", "variant", "program", "status", "reason", "repetition", "dataset",
          "n", "d", "k", "params", "iterations", "converged", "sse", "clusters", "noise", "load_s", "total_s",
          "h2d_s", "assign_s", "update_s", "index_s", "core_s", "connect_s", "label_s", "d2h_s", "generation_s",
          "transfers_s", "distance_s", "selection_s", "weighting_s", "seeding_s", "other_s", "tree_build_s", "rho_s",
          "delta_s", "assignment_s", "distances", "all_pairs", "batches", "batch_s", "restart_s", "batch_distances",
          "exit_status",
          "compiler", "flags", "git_commit", "host_cpu", "threads", "gpu", "where", "timestamp", "command"]


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
    """Writes all rows to a temporary file beside path, then renames it over path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---- running one configuration -----------------------------------------------------------------

def run_command(cmd, budget_s):
    """Runs cmd with a time limit; returns (exit status or None on timeout, stderr, seconds).
    The child gets its own process group, so a timeout or Ctrl-C ends all of it."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=budget_s)
        return proc.returncode, err, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, "", time.monotonic() - t0
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def base_row(exp, scale, params, variant, ctx):
    """The columns every row of one (configuration, variant) shares."""
    return {"experiment": exp["name"], "scale": scale, "config": config_id(params), "variant": variant["name"],
            "program": variant["program"], "dataset": params.get("label", params.get("file", "")),
            "n": params.get("n", ""), "d": params.get("d", ""), "k": params.get("k", ""),
            "params": json.dumps(params, sort_keys=True), "host_cpu": ctx.cpu,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "repetition": ""}


def measure(exp, scale, params, variant, ctx):
    """Runs one (configuration, variant); returns the rows to record."""
    spec = exp["scales"][scale]
    values = dict(exp.get("defaults", {}), **params, data_dir=ctx.data_dir, work=ctx.work_dir)
    base = base_row(exp, scale, params, variant, ctx)
    program = ctx.bin_dir / f"pragmaclust-{variant['program']}"
    input_path = fill(params.get("input", exp["input"]), values)  # an axis table may bring its own input
    values["input"] = input_path

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

    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        cmd = [str(program)] + [fill(a, values) for a in exp["command"]] + variant.get("args", []) + [
            "--repeat", str(variant.get("repeat", spec.get("repeat", 1))),
            "--warmup", str(variant.get("warmup", spec.get("warmup", 0))),
            "--report", str(report_path), "--quiet"]
        base["command"] = " ".join(cmd[:1] + [c for c in cmd[1:] if c != str(report_path)])
        rc, err, _ = run_command(cmd, spec["budget_s"])
        if rc is None:
            return status_row("timeout", f"exceeded the {spec['budget_s']} s budget")
        if rc == EXIT_NO_DEVICE:
            return status_row("no-device", last_line(err), exit_status=rc)
        if rc < 0:
            return status_row("crashed", f"killed by signal {-rc}: {last_line(err)}", exit_status=rc)
        if rc != 0:
            return status_row("failed", last_line(err) or f"exit status {rc}", exit_status=rc)
        try:
            rep = json.loads(report_path.read_text())
            self_check(rep)
        except (OSError, ValueError, KeyError, TypeError) as e:
            return status_row("failed", f"self-check: unusable report ({e})", exit_status=rc)
    common = dict(base, status="ok", reason="", exit_status=0, compiler=rep["compiler"], flags=rep["flags"],
                  git_commit=rep["git_commit"], threads=rep["threads"], gpu=rep["device"]["name"],
                  where=rep["device"]["where"], load_s=repr(rep["timing"]["load_s"]), n=rep["n"], d=rep["d"],
                  k=rep.get("k", ""), converged=int(rep["converged"]) if "converged" in rep else "",
                  sse=repr(float(rep["sse"])) if "sse" in rep else repr(float(rep["cost"])) if "cost" in rep else "",
                  clusters=rep.get("clusters", ""),
                  noise=rep.get("noise", ""))
    if rep.get("subcommand") == "dpc":
        common.update(dpc_columns(rep))
    rows = []
    for i, r in enumerate(rep["runs"]):
        row = dict(common, repetition=i + 1, iterations=r.get("iterations", ""), total_s=repr(r["total_s"]))
        row.update({f"{phase}_s": repr(t) for phase, t in r.items() if f"{phase}_s" in FIELDS and phase != "total"})
        rows.append(row)
    return rows


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
    """Raises ValueError unless a report has timed runs and a sane quality measure (a finite,
    non-negative SSE and at least one iteration for k-means and stream, a finite non-negative
    cost for streamkm; consistent counts for DBSCAN; at least one cluster and a distance count for
    density peaks)."""
    if not rep["runs"]:
        raise ValueError("no timed run")
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
        self.cpu = host_cpu()
        self.gpu_problem = self.probe_gpu()

    def probe_gpu(self):
        """None when the gpu program offloads, else the reason (shown as n/a (no GPU))."""
        program = self.bin_dir / "pragmaclust-gpu"
        if not program.exists():
            return f"{program} is not built"
        proc = subprocess.run([str(program), "info", "--require-gpu"], capture_output=True, text=True)
        return None if proc.returncode == 0 else (last_line(proc.stderr) or f"exit status {proc.returncode}")

    def prepare(self, spec, path):
        """Writes the generated data set `spec` to path with the seq program; error text or None."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([str(self.bin_dir / "pragmaclust-seq"), "generate", spec, "--out", path],
                              capture_output=True, text=True)
        return None if proc.returncode == 0 else last_line(proc.stderr)


def fmt_duration(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def run_suite(args):
    scale_dir = Path(args.results) / args.scale
    csv_path = scale_dir / "results.csv"
    exps = select_experiments(args.experiments or sorted(EXPERIMENTS_DIR.glob("*.toml")), args.only)
    rows = read_rows(csv_path)
    if args.retry_failed:
        rows = [r for r in rows if r["status"] in ("ok", "missing-data", "no-device")]
        write_rows_atomically(csv_path, rows)
    done = {(r["experiment"], r["config"], r["variant"]) for r in rows if r["scale"] == args.scale}

    plan = [(e, p, v) for e in exps for p in configurations(e, args.scale) for v in e["variants"]]
    todo = [(e, p, v) for e, p, v in plan if (e["name"], config_id(p), v["name"]) not in done]
    print(f"pragmaclust experiments, scale {args.scale}: {len(plan)} runs in {len(exps)} experiments, "
          f"{len(plan) - len(todo)} already in {csv_path}")
    ctx = Context(args, scale_dir)
    if ctx.gpu_problem:
        print(f"gpu variant: n/a (no GPU): {ctx.gpu_problem}")
    timed_out = {}
    for r in rows:
        if r["status"] == "timeout" and r["scale"] == args.scale:
            timed_out.setdefault((r["experiment"], r["variant"]), []).append(json.loads(r["params"]))
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
            rows.extend(new)
            write_rows_atomically(csv_path, rows)
            counts[status] = counts.get(status, 0) + 1
            elapsed = time.monotonic() - t0
            if not smaller:
                spent.append(elapsed)
                left = sum(spent) / len(spent) * (len(todo) - i)
                detail = f": {new[0]['reason']}" if status not in ("ok", "no-device") else ""
                print(f" {status}{detail} ({elapsed:.1f} s; elapsed {fmt_duration(time.monotonic() - t_start)}, "
                      f"about {fmt_duration(left)} left)", flush=True)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {csv_path} keeps every finished run; rerun the same command to resume", flush=True)
        summarize(counts, time.monotonic() - t_start)
        return 130
    summarize(counts, time.monotonic() - t_start)
    tables.write_all(exps, rows, args.scale, scale_dir / "tables", echo=True)
    return 0


def summarize(counts, seconds):
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing to run"
    print(f"summary: {parts} in {fmt_duration(seconds)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", default=os.environ.get("SCALE", "default"), choices=SCALES)
    ap.add_argument("--only", help="comma-separated experiment names (file names without .toml)")
    ap.add_argument("--experiment", dest="experiments", action="append",
                    help="run this experiment file instead of experiments/*.toml (repeatable)")
    ap.add_argument("--bin", default="bin", help="folder with pragmaclust-{seq,omp,gpu} (default bin)")
    ap.add_argument("--data-dir", default=os.environ.get("DATA_DIR", "data"), help="real data sets (default $DATA_DIR or data)")
    ap.add_argument("--results", default="results", help="results folder (default results)")
    ap.add_argument("--retry-failed", action="store_true", help="run again what failed, crashed or timed out")
    ap.add_argument("--tables-only", action="store_true", help="only regenerate the tables from the results CSV")
    args = ap.parse_args()
    try:
        if args.tables_only:
            exps = select_experiments(args.experiments or sorted(EXPERIMENTS_DIR.glob("*.toml")), args.only)
            scale_dir = Path(args.results) / args.scale
            tables.write_all(exps, read_rows(scale_dir / "results.csv"), args.scale, scale_dir / "tables", echo=True)
            return 0
        return run_suite(args)
    except ExperimentError as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
