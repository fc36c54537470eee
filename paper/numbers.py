#!/usr/bin/env python3
"""numbers.py - the numbers the paper's prose quotes, as LaTeX macros, from the results CSV.

  paper/numbers.py --results DIR --scale S --out paper/generated/numbers.tex [--check-listings paper/paper.tex]

Reads RESULTS/SCALE/results.csv (experiments/run.py) with the experiments' own reading of it
(experiments/tables.py: medians over the ok repetitions, Cao et al.'s metrics) and writes one
\\newcommand per quoted value: the machine (host CPU, GPU, compiler, threads), the runs and
their statuses, the best OpenMP and GPU speedups over seq and where they occur, the Cao et al.
cost ratios. A value that the CSV cannot give (no GPU row ok, a run over its budget) is "n/a";
\\ifpcHaveGPU tells the prose whether any GPU measurement exists. It also writes the figure
blocks of the course experiments' speedup plots that exist (\\pcCourseSpeedupFigures).

With --check-listings it also checks that every listing of paper.tex that is marked
"% excerpt of PATH" still appears verbatim in PATH (lines "/* ... */" mark elisions): the
listings are static copies, so an edit of the source must be carried into the paper.
Exit status: 0 done; 2 a missing CSV, a listing that no longer matches (one line each).
Standard library only (Python 3.11+).
"""
import os
import sys

# This file's name shadows the standard library's `numbers` (which statistics and decimal
# import): drop its own folder from the module path before importing them.
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.dirname(os.path.realpath(__file__))]

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "experiments"))
from run import read_rows  # noqa: E402
from spec import configurations, load_experiment  # noqa: E402
from tables import Cell, cells_by_config, latex_escape, write_atomically  # noqa: E402

NA = "n/a"
STATUS_WORDS = {"ok": "ok", "timeout": "over the time budget", "skipped-budget": "skipped (a smaller case was over the budget)",
                "no-device": "n/a (no GPU)", "missing-data": "data set missing", "missing-program": "program not built",
                "failed": "failed", "crashed": "crashed"}


# ---- formatting ------------------------------------------------------------------------------

def fmt_ratio(v):
    if v is None:
        return NA
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def fmt_int(v):
    return f"{v:,}".replace(",", "\\,")


def fmt_seconds(v):
    if v is None:
        return NA
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "$\\mu$s")):
        if v >= scale or unit == "$\\mu$s":
            return f"{v / scale:.3g}\\,{unit}"


def fmt_percent(v):
    return NA if v is None else f"{100 * v:.0f}\\,\\%" if v >= 0.1 else f"{100 * v:.1f}\\,\\%"


def where(params, keys=("n", "d", "k")):
    parts = [f"${k} = {fmt_int(params[k]) if isinstance(params[k], int) else params[k]}$" for k in keys if k in params]
    if "label" in params:
        parts = [latex_escape(str(params["label"]))] + [p for p in parts if p.startswith("$k")]
    return ", ".join(parts)


# ---- the numbers -----------------------------------------------------------------------------

class Macros:
    def __init__(self):
        self.items = []

    def add(self, name, value, comment=""):
        assert re.fullmatch(r"pc[A-Za-z]+", name), name
        assert all(name != n for n, _, _ in self.items), f"macro {name} twice"
        self.items.append((name, value if value not in (None, "") else NA, comment))

    def text(self):
        out = []
        for name, value, comment in self.items:
            if comment:
                out.append(f"% {comment}")
            out.append(f"\\newcommand{{\\{name}}}{{{value}}}")
        return "\n".join(out) + "\n"


class QuotedMacros:
    """A section's view of the macro table (Macros) that keeps only the macros its .tex file
    quotes, names starting with `prefix`: a section may compute more than its prose uses."""

    def __init__(self, m, tex_path, prefix):
        self.m, self.used = m, set(re.findall(r"\\(" + prefix + r"[A-Za-z]+)", Path(tex_path).read_text()))

    def add(self, name, value, comment=""):
        if name in self.used:
            self.m.add(name, value, comment)


def ok_rows(rows, **match):
    return [r for r in rows if r["status"] == "ok" and all(r[k] == v for k, v in match.items())]


def most_common(values):
    values = [v for v in values if v]
    return max(set(values), key=values.count) if values else None


def speedups(exp, rows, scale):
    """[(params, variant, speedup over the first variant)] where both runs are ok."""
    cells = cells_by_config(exp, rows, scale)
    variants = [v["name"] for v in exp["variants"]]
    out = []
    for p in configurations(exp, scale):
        key = json.dumps(p, sort_keys=True)
        base = cells.get((key, variants[0]), Cell([]))
        for v in variants[1:]:
            c = cells.get((key, v), Cell([]))
            if base.status == c.status == "ok":
                out.append((p, v, base.median() / c.median()))
    return out


def machine(m, rows):
    m.add("pcHostCPU", latex_escape(most_common([r["host_cpu"] for r in rows]) or NA), "host CPU (/proc/cpuinfo)")
    m.add("pcCompiler", latex_escape(most_common([r["compiler"] for r in ok_rows(rows)]) or NA))
    commit = most_common([r["git_commit"] for r in ok_rows(rows)])
    m.add("pcGitCommit", latex_escape(commit or NA))
    others = {}
    for r in ok_rows(rows):
        if r["git_commit"] != commit:
            others.setdefault(r["git_commit"], set()).add(r["experiment"])
    m.add("pcOtherBuilds", "; ".join(f"\\texttt{{{latex_escape(c)}}} ({latex_escape(', '.join(sorted(e)))})"
                                      for c, e in sorted(others.items())) or "none",
          "other commits with ok rows, and their experiments")
    threads = sorted({int(r["threads"]) for r in ok_rows(rows, program="omp") if r["threads"]})
    m.add("pcThreads", "/".join(map(str, threads)) if threads else NA, "host threads of the omp runs")
    gpu_ok = ok_rows(rows, program="gpu")
    m.add("pcDevice", latex_escape(most_common([r["gpu"] for r in gpu_ok]) or NA), "GPU of the ok gpu runs")
    reasons = [r["reason"] for r in rows if r["program"] == "gpu" and r["status"] == "no-device"]
    reason = most_common(reasons) or ""
    reason = reason.removeprefix("pragmaclust: error: ").split(";")[0]
    m.add("pcNoGpuReason", latex_escape(reason) if reason else NA, "why the gpu runs had no device")
    stamps = sorted(r["timestamp"][:10] for r in rows if r["timestamp"])
    m.add("pcRunDates", NA if not stamps else stamps[0] if stamps[0] == stamps[-1] else f"{stamps[0]} to {stamps[-1]}")
    return bool(gpu_ok)


def run_counts(m, rows, exps, scale):
    runs = {}
    for r in rows:
        if r["scale"] == scale and r["experiment"] in {e["name"] for e in exps}:
            runs.setdefault((r["experiment"], r["config"], r["variant"]), r["status"] if r["status"] != "ok" else "ok")
    counts = {}
    for s in runs.values():
        counts[s] = counts.get(s, 0) + 1
    m.add("pcRuns", str(len(runs)), "(experiment, configuration, variant) runs in the CSV")
    m.add("pcRunsOk", str(counts.get("ok", 0)))
    order = ["ok", "timeout", "skipped-budget", "no-device", "missing-data", "missing-program", "failed", "crashed"]
    m.add("pcRunStatuses", ", ".join(f"{counts[s]} {STATUS_WORDS.get(s, s)}" for s in order if s in counts) or NA)
    m.add("pcRowsOk", str(sum(1 for r in rows if r["status"] == "ok" and r["scale"] == scale)), "timed repetitions")


def course_numbers(m, exp, rows, scale, prefix, plots_dir):
    spec = exp["scales"].get(scale, {})
    m.add(f"{prefix}Repeat", str(spec.get("repeat", NA)))
    m.add(f"{prefix}Warmup", str(spec.get("warmup", NA)))
    m.add(f"{prefix}Budget", str(spec.get("budget_s", NA)))
    configs = configurations(exp, scale)
    m.add(f"{prefix}Configs", str(len(configs)))
    m.add(f"{prefix}Columns", str(len({exp["column"].format(**p) for p in configs})), "data set columns of its table")
    sp = speedups(exp, rows, scale)
    variants = [v["name"] for v in exp["variants"]]
    keys = ("n", "d", "k") if all("n" in p for p in configs) else ("k",)
    for v, name in ((variants[1], "Omp"), (variants[2] if len(variants) > 2 else None, "Gpu")):
        mine = [(p, s) for p, vv, s in sp if vv == v]
        best = max(mine, key=lambda t: t[1]) if mine else None
        worst = min(mine, key=lambda t: t[1]) if mine else None
        m.add(f"{prefix}Best{name}", fmt_ratio(best[1]) if best else NA, f"best speedup of {v} over {variants[0]}")
        m.add(f"{prefix}Best{name}Where", where(best[0], keys) if best else NA)
        m.add(f"{prefix}Worst{name}", fmt_ratio(worst[1]) if worst else NA)
        m.add(f"{prefix}Worst{name}Where", where(worst[0], keys) if worst else NA)
        m.add(f"{prefix}{name}Pairs", str(len(mine)), f"configurations with both {variants[0]} and {v} ok")
        m.add(f"{prefix}{name}Slower", str(sum(1 for _, s in mine if s < 1)), f"of them where {v} was slower")
    # gpu vs omp where both ran
    cells = cells_by_config(exp, rows, scale)
    if len(variants) > 2:
        both = faster = 0
        for p in configs:
            key = json.dumps(p, sort_keys=True)
            a, b = cells.get((key, variants[1]), Cell([])), cells.get((key, variants[2]), Cell([]))
            if a.status == b.status == "ok":
                both += 1
                faster += b.median() < a.median()
        m.add(f"{prefix}GpuOmpPairs", str(both), f"configurations with {variants[1]} and {variants[2]} ok")
        m.add(f"{prefix}GpuFasterThanOmp", str(faster))
    # share of the assignment step in the sequential run (the course report's profile)
    shares = []
    for p in configs:
        c = cells.get((json.dumps(p, sort_keys=True), variants[0]), Cell([]))
        if c.status == "ok":
            shares.append(statistics.median(float(r["assign_s"]) / float(r["total_s"]) for r in c.rows))
    m.add(f"{prefix}AssignShareMin", fmt_percent(min(shares)) if shares else NA, "assign / total of seq")
    m.add(f"{prefix}AssignShareMax", fmt_percent(max(shares)) if shares else NA)
    over = sum(1 for p in configs for v in variants
               if cells.get((json.dumps(p, sort_keys=True), v), Cell([])).status in ("timeout", "skipped-budget"))
    m.add(f"{prefix}OverBudget", str(over), "runs over the time budget or skipped")
    missing = sorted({str(p.get("label", p.get("file", ""))) for p in configs for v in variants
                      if cells.get((json.dumps(p, sort_keys=True), v), Cell([])).status == "missing-data"})
    m.add(f"{prefix}MissingData", latex_escape(", ".join(missing)) if missing else "none")
    iters = {}
    for (key, v), c in cells.items():
        if c.status == "ok":
            iters.setdefault(key, set()).add(c.iterations)
    m.add(f"{prefix}IterMismatch", str(sum(1 for s in iters.values() if len(s) > 1)),
          "configurations whose variants needed different numbers of iterations")
    its = [c.iterations for c in cells.values() if c.status == "ok"]
    m.add(f"{prefix}ItersMin", str(min(its)) if its else NA)
    m.add(f"{prefix}ItersMax", str(max(its)) if its else NA)

    # figure blocks of the speedup plots that exist (one per k, or one per data set)
    blocks = []
    stems = sorted({f"{exp['name']}_speedup_k{p['k']}" for p in configs if "n" in p and "k" in p},
                   key=lambda s: int(s.rsplit("k", 1)[1])) or [f"{exp['name']}_speedup"]
    for stem in stems:
        if (plots_dir / f"{stem}.png").exists():
            k = stem.rsplit("_k", 1)[1] if "_k" in stem else None
            cap = (f"Speedup over {variants[0]} vs $n$ for $k = {k}$, one line per variant and $d$ "
                   f"(from Table~\\ref{{tab:{exp['name']}}})." if k else
                   f"Speedup over {variants[0]} per data set (from Table~\\ref{{tab:{exp['name']}}}).")
            blocks.append(f"\\pcPlot{{{stem}}}{{{cap}}}")
    m.add(f"{prefix}Figures", "\n".join(blocks) if blocks else
          f"\\pcNoPlot{{{latex_escape(exp['name'])} speedup}}", "the speedup figures drawn by plots/plot.py")


def series_cell(cells, p, v):
    return cells.get((json.dumps(p, sort_keys=True), v), Cell([]))


def cao_numbers(m, exp, rows, scale, prefix):
    spec = exp["scales"].get(scale, {})
    m.add(f"{prefix}Repeat", str(spec.get("repeat", NA)))
    m.add(f"{prefix}Budget", str(spec.get("budget_s", NA)))
    configs = configurations(exp, scale)
    cells = cells_by_config(exp, rows, scale)
    names = [v["name"] for v in exp["variants"]]
    cpu, omp, gpu_c, gpu_l = (names + [None] * 4)[:4]
    tables = {t["name"]: t for t in exp.get("tables", [])}

    def series(table):
        t = tables.get(table)
        if not t:
            return [], None
        chosen = [p for p in configs if all(p.get(k) == v for k, v in t.get("where", {}).items())]
        return sorted(chosen, key=lambda p: p[t["x"]]), t["x"]

    def last_both(chosen, a, b):
        """The largest x where variants a and b are both ok."""
        for p in reversed(chosen):
            if series_cell(cells, p, a).status == series_cell(cells, p, b).status == "ok":
                return p
        return None

    by_n, x = series("clustering_cost")
    ns = [p["n"] for p in by_n]
    m.add(f"{prefix}Nmin", fmt_int(min(ns)) if ns else NA)
    m.add(f"{prefix}Nmax", fmt_int(max(ns)) if ns else NA)
    for other, name in ((omp, "Omp"), (gpu_c, "GpuC"), (gpu_l, "GpuL")):
        p = last_both(by_n, cpu, other) if other else None
        for metric, mname in (("cc", "Cc"), ("tc", "Tc"), ("pt", "Pt")):
            r = series_cell(cells, p, cpu).median(metric) / series_cell(cells, p, other).median(metric) if p else None
            m.add(f"{prefix}{mname}Speedup{name}", fmt_ratio(r), f"{metric} of {cpu} / {metric} of {other}")
        m.add(f"{prefix}Speedup{name}At", fmt_int(p["n"]) if p else NA, "at this n (the largest with both ok)")
    big = by_n[-1] if by_n else None
    for v, name in ((cpu, "Cpu"), (gpu_c, "GpuC")):
        c = series_cell(cells, big, v) if big else Cell([])
        share = statistics.median(float(r["load_s"]) / (float(r["load_s"]) + float(r["total_s"])) for r in c.rows) \
            if c.status == "ok" else None
        m.add(f"{prefix}LoadShare{name}", fmt_percent(share), f"load / tc of {v} at the largest n")
    cpu_c = series_cell(cells, big, cpu) if big else Cell([])
    m.add(f"{prefix}ItersAtNmax", str(cpu_c.iterations) if cpu_c.status == "ok" else NA,
          f"iterations of {cpu} at the largest n")
    its = [series_cell(cells, p, cpu).iterations for p in configs if series_cell(cells, p, cpu).status == "ok"]
    m.add(f"{prefix}ItersMin", str(min(its)) if its else NA)
    m.add(f"{prefix}ItersMax", str(max(its)) if its else NA)

    # phases: gc and g2m of GPU-C and GPU-L
    p = last_both(by_n, gpu_c, gpu_l) if gpu_c and gpu_l else None
    gc_c = series_cell(cells, p, gpu_c).median("gc") if p else None
    gc_l = series_cell(cells, p, gpu_l).median("gc") if p else None
    m.add(f"{prefix}GcRatio", fmt_ratio(gc_l / gc_c) if p and gc_c > 0 else NA, "gc of GPU-L / gc of GPU-C")
    m.add(f"{prefix}GcRatioAt", fmt_int(p["n"]) if p else NA)
    m.add(f"{prefix}GcC", fmt_seconds(gc_c / 1e3) if gc_c is not None else NA)
    m.add(f"{prefix}GcL", fmt_seconds(gc_l / 1e3) if gc_l is not None else NA)
    for v, name in ((gpu_c, "C"), (gpu_l, "L")):
        oks = [q for q in by_n if series_cell(cells, q, v).status == "ok"] if v else []
        lo = series_cell(cells, oks[0], v).median("g2m") if oks else None
        hi = series_cell(cells, oks[-1], v).median("g2m") if oks else None
        m.add(f"{prefix}GtwomLow{name}", fmt_seconds(lo / 1e3) if lo is not None else NA, f"g2m of {v}, smallest n")
        m.add(f"{prefix}GtwomHigh{name}", fmt_seconds(hi / 1e3) if hi is not None else NA, f"g2m of {v}, largest ok n")
        m.add(f"{prefix}GtwomHigh{name}At", fmt_int(oks[-1]["n"]) if oks else NA)
        c = series_cell(cells, oks[-1], v) if oks else Cell([])
        share = c.median("gc") / c.median("pt") if c.status == "ok" and c.median("pt") > 0 else None
        m.add(f"{prefix}GcShare{name}", fmt_percent(share), f"gc / pt of {v} at its largest ok n")
        share = c.median("dc") / c.median("pt") if c.status == "ok" and c.median("pt") > 0 else None
        m.add(f"{prefix}DcShare{name}", fmt_percent(share), f"dc / pt of {v} at its largest ok n")

    # cost vs k and vs d: speedup of GPU-C over CPU-K at the ends of the axis
    for table, axis, name in (("cost_vs_k", "k", "K"), ("cost_vs_d", "d", "D")):
        chosen, _ = series(table)
        vals = [p[axis] for p in chosen]
        m.add(f"{prefix}{name}min", str(min(vals)) if vals else NA)
        m.add(f"{prefix}{name}max", str(max(vals)) if vals else NA)
        for end, p in (("Low", chosen[0] if chosen else None), ("High", chosen[-1] if chosen else None)):
            for other, oname in ((gpu_c, "GpuC"), (omp, "Omp")):
                a, b = (series_cell(cells, p, cpu), series_cell(cells, p, other)) if p and other else (Cell([]), Cell([]))
                r = a.median("cc") / b.median("cc") if a.status == b.status == "ok" else None
                m.add(f"{prefix}{name}Speedup{oname}{end}", fmt_ratio(r), f"cc {cpu} / cc {other} at {axis} = {p and p[axis]}")


# ---- listings ----------------------------------------------------------------------------------

def check_listings(tex_path):
    """[problems] of the '% excerpt of PATH' listings of tex_path and of the section files beside it
    (sections/*.tex) that no longer match their source."""
    tex_path = Path(tex_path)
    text = "\n".join(t.read_text() for t in [tex_path, *sorted((tex_path.parent / "sections").glob("*.tex"))])
    problems = []
    pattern = re.compile(r"% excerpt of (\S+)[^\n]*\n\\begin\{lstlisting\}(?:\[[^\]]*\])?\n(.*?)\\end\{lstlisting\}", re.S)
    for src, body in pattern.findall(text):
        try:
            source = (REPO / src).read_text()
        except OSError as e:
            problems.append(f"{src}: {e.strerror}")
            continue
        chunks = re.split(r"^\s*/\* \.\.\. \*/\s*$\n?", body, flags=re.M)
        pos = 0
        for chunk in chunks:
            if not chunk.strip():
                continue
            at = source.find(chunk, pos)
            if at < 0:
                first = chunk.strip().splitlines()[0][:60]
                problems.append(f"a listing of {src} no longer matches the source (from '{first}')")
                break
            pos = at + len(chunk)
    return problems


# ---- the sections' own numbers -------------------------------------------------------------------

def section_numbers(m, exps, rows, scale, scale_dir):
    """Each section file sections/NAME.tex may have a sections/NAME.py beside it whose
    numbers(m, exps, rows, scale, scale_dir, lib) adds that section's macros; lib is this module
    (its formatting and cell helpers). exps maps experiment names to their specs."""
    import importlib.util
    by_name = {e["name"]: e for e in exps}
    for path in sorted((REPO / "paper" / "sections").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"paper_section_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.numbers(m, by_name, rows, scale, scale_dir, sys.modules[__name__])


# ---- main -----------------------------------------------------------------------------------

DIGITS = dict(zip("0123456789", ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]))


def camel(name):
    """course_fig3 -> CourseFigThree: a macro name (letters only) from an experiment name."""
    return "".join("".join(DIGITS.get(ch, ch) for ch in part.capitalize()) for part in name.split("_"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--scale", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--check-listings", metavar="TEX")
    args = ap.parse_args()
    if args.check_listings:
        problems = check_listings(args.check_listings)
        for p in problems:
            print(f"numbers.py: error: {p}: update {args.check_listings}", file=sys.stderr)
        if problems:
            return 2
    scale_dir = Path(args.results) / args.scale
    csv_path = scale_dir / "results.csv"
    if not csv_path.is_file():
        print(f"numbers.py: error: {csv_path} not found: run `make experiments SCALE={args.scale}` first", file=sys.stderr)
        return 2
    rows = read_rows(csv_path)
    exps = [load_experiment(p) for p in sorted((REPO / "experiments").glob("*.toml"))]
    exps = [e for e in exps if args.scale in e["scales"]]
    m = Macros()
    m.add("pcScale", latex_escape(args.scale))
    have_gpu = machine(m, [r for r in rows if r["scale"] == args.scale])
    run_counts(m, rows, exps, args.scale)
    for exp in exps:
        prefix = "pc" + camel(exp["name"])
        if exp["table"] == "course":
            course_numbers(m, exp, rows, args.scale, prefix, scale_dir / "plots")
        elif exp["name"] == "cao_kmeans":
            cao_numbers(m, exp, rows, args.scale, prefix)
    section_numbers(m, exps, rows, args.scale, scale_dir)
    text = ("% generated by paper/numbers.py from " + latex_escape(str(csv_path)).replace("\\", "/") + "; do not edit\n"
            + "\\newif\\ifpcHaveGPU\n" + ("\\pcHaveGPUtrue\n" if have_gpu else "\\pcHaveGPUfalse\n") + m.text())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, lambda f: f.write(text))
    print(f"wrote {out}: {len(m.items)} macros, GPU measurements: {'yes' if have_gpu else 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
