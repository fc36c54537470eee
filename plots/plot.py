#!/usr/bin/env python3
"""plot.py - draws the figures of the experiments from the runner's results CSV, with gnuplot.

  plots/plot.py [--results DIR] [--scale smoke|default|paper] [--experiment FILE ...] [--only NAME,...]
                [--verbose]

Reads RESULTS/SCALE/results.csv (written by experiments/run.py) and, per experiment file
(experiments/*.toml, or the --experiment files), writes PNG (pngcairo) and SVG figures into
RESULTS/SCALE/plots/, with the data of each figure in RESULTS/SCALE/plots/data/<stem>.dat:

  course layout, n and d axes   <exp>_speedup_k<K>: speedup of every variant over the first
                                one (the course report's "Speedup" rows) vs n, log x, one figure
                                per k, one line per (variant, d)
  course layout, data sets      <exp>_speedup: speedup over the first variant per data set
  series layout, one metric     <exp>_<table>: the table's metric (Cao et al.'s tc, cc, pt) vs
                                its x, one line per variant (log axes where the values span
                                a decade or more)
  series layout, several        <exp>_<table>_phases: per iteration, stacked bars per x of
  metrics (gc, g2m)             dc, gc, g2m and h2d/iteration, one panel per variant (Cao's
                                GPU-C vs GPU-L phase breakdown)
  series layout, streamkm's     <exp>_<table>_phases: stacked bars per x of the run's
  phases                        distance, selection, weighting and other, one panel per variant
                                (Okuda & Fujimoto's breakdown of a k-means# run)
  series layout, grid (y)       <exp>_<table>: the metric vs x, one line per (variant, y)
                                (titles: the table's `figure` and `figure_speedup`, else its caption;
                                y label: its `ylabel`, else the metric's);
                                with speedup = true also <exp>_<table>_speedup: the speedup of
                                every other variant over the first one vs x, one line per
                                (variant, y) (Okuda & Fujimoto's Tables 1 and 2)

Values are the medians over the timed repetitions (experiments/tables.py's Cell and METRICS).
Only runs whose status is ok are drawn; every point left out is named in a note under the
figure or in its key (for example "gpu: n/a (no GPU)"), and nothing is estimated. A figure
without any ok point is not drawn (an older copy of it is removed).
Files are written under temporary names and renamed into place. The last line printed says how
many figures were drawn, where, and the command that comes next (`make paper`); with --verbose
one line per figure before it says what was drawn or why not. Exit status: 0 done; 1 gnuplot
failed on a figure; 2 bad arguments, no results CSV, a malformed experiment file or no gnuplot
(one line on stderr).
Standard library only (Python 3.11+); the .gp scripts beside this file do the drawing.
"""
import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

PLOTS_DIR = Path(__file__).resolve().parent
EXPERIMENTS_DIR = PLOTS_DIR.parent / "experiments"
sys.path.insert(0, str(EXPERIMENTS_DIR))
from run import SCALES, read_rows  # noqa: E402
from spec import ExperimentError, configurations, select_experiments  # noqa: E402
from tables import (CELL_FOR_STATUS, METRIC_TEXT, METRICS, Cell, cells_by_config, fill_params,  # noqa: E402
                    fixed_params, series_configs, series_variants, write_atomically)

# Okabe-Ito colours (distinguishable with the common colour-vision deficiencies).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"]
VARIANT_COLOURS = ["#000000", "#0072B2", "#009E73", "#D55E00", "#CC79A7", "#E69F00"]
POINT_TYPES = [7, 5, 9, 11, 13, 6, 4, 8]      # filled circle, square, triangles, diamond, ...
PHASES = [("dc", "dc (assign)", "#0072B2"), ("gc", "gc (update)", "#E69F00"),
          ("g2m", "g2m (to host)", "#D55E00"), ("h2d", "h2d / iteration (to device)", "#999999")]
# Okuda & Fujimoto's breakdown of one k-means# run (streamkm's phases), bottom to top.
RUN_PHASES = [("distance", "distance", "#0072B2"), ("selection", "selection", "#E69F00"),
              ("weighting", "weighting", "#D55E00"), ("other", "other", "#999999")]
# Density peaks (GDPC): the phases of a dpc run, bottom to top (transfers are in the tables).
DPC_PHASES = [("tree_build", "tree build", "#0072B2"), ("rho", "rho", "#E69F00"),
              ("delta", "delta", "#D55E00"), ("assignment", "assignment", "#999999")]
AXIS_LABELS = {"label": "data set", "n": "n (points)", "d": "d (dimensions)", "k": "k (clusters)"}
METRIC_LABELS = {"tc": "total cost tc = load + run", "cc": "clustering cost cc", "pt": "cost of one iteration pt",
                 "time": "run time", "sse": "SSQ (sum of squared distances)",
                 "dc": "distance cost dc per iteration", "gc": "centroid cost gc per iteration",
                 "g2m": "retrieval cost g2m per iteration"}
NOTE_WIDTH = 84        # characters per note line under a figure
TITLE_WIDTH = 64       # characters per title line (a longer title is cut at the image's edges)
NOTE_POINTS = 4        # left-out points named per note before "and N more"


class PlotError(Exception):
    """gnuplot failed or wrote something that is not a figure."""


# ---- what a left-out point means -----------------------------------------------------------

def status_text(status, exp, scale):
    """Why a run has no time, in the words of the tables ("-" means over the budget)."""
    budget = exp["scales"].get(scale, {}).get("budget_s", "?")
    over = f'"-": over the {budget} s budget'   # as the tables say it
    return {"timeout": over, "skipped-budget": over,
            "no-device": CELL_FOR_STATUS["no-device"], "missing-data": "data set missing",
            "missing-program": "program not built", "not-run": "not run yet"}.get(
                status, CELL_FOR_STATUS.get(status, status))


class LeftOut:
    """Collects the points a figure leaves out and words them as notes. A variant with no
    point at all, for one reason, becomes a key line ("gpu: n/a (no GPU)"); the other points
    are named in one note per reason ("over the 10 s budget: omp at n=1M d=10, ...")."""

    def __init__(self):
        self.items = {}      # reason -> {variant: [point labels]}
        self.total = {}      # variant -> number of points it would have
        self.missing = {}    # variant -> number of points left out

    def expect(self, variant):
        self.total[variant] = self.total.get(variant, 0) + 1

    def add(self, variant, reason, point):
        self.items.setdefault(reason, {}).setdefault(variant, []).append(point)
        self.missing[variant] = self.missing.get(variant, 0) + 1

    def empty_variants(self):
        """{variant: reason} of the variants without any point, all for the same reason."""
        out = {}
        for reason, per_variant in self.items.items():
            for v, points in per_variant.items():
                if len(points) == self.total.get(v, 0):
                    out[v] = reason
        return out

    def keynotes(self):
        return [f"{v}: {r}" for v, r in self.empty_variants().items()]

    def notes(self):
        empty = self.empty_variants()
        out = []
        for reason, per_variant in self.items.items():
            parts = []
            for v, points in per_variant.items():
                if v in empty:
                    continue
                named = ", ".join(points[:NOTE_POINTS])
                more = f" and {len(points) - NOTE_POINTS} more" if len(points) > NOTE_POINTS else ""
                parts.append(f"{v} at {named}{more}")
            if parts:
                out.append(f"Not shown ({reason}): " + "; ".join(parts) + ".")
        return out


def fmt_count(v):
    """10000 -> 10k, 1000000 -> 1M: short tick and note labels for sizes (names stay names)."""
    if isinstance(v, str):
        return v
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div and v % (div / 1000) == 0:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def tick_label(v):
    """fmt_count, with a long name broken after its first hyphen (synthetic-\naggregation)."""
    text = fmt_count(v)
    return text.replace("-", "-\n", 1) if isinstance(v, str) and len(text) > 12 else text


def metric_label(metric):
    """A metric in words for a y axis: METRIC_LABELS, else the tables' name of it."""
    return METRIC_LABELS.get(metric) or METRIC_TEXT.get(metric, (metric,))[0]


def fmt_num(v):
    return f"{v:.6g}"


def cell(cells, params, variant):
    return cells.get((json.dumps(params, sort_keys=True), variant), Cell([]))


# Cao et al.'s per-iteration costs, drawn as stacked phases when a table shows several of them.
PER_ITERATION_METRICS = {"dc", "gc", "g2m", "pt"}


def phase_median(c, phase):
    """Median per-iteration time (ms) of one phase of an ok cell; h2d is not among tables.METRICS
    (Cao's m2g is paid once per run), so it is computed here the same way."""
    if phase in METRICS:
        return c.median(phase)
    return statistics.median(float(r[f"{phase}_s"]) / int(r["iterations"]) for r in c.rows) * 1e3


# ---- figures -------------------------------------------------------------------------------

class Figure:
    """One figure: the gnuplot script, its settings, its data blocks and its notes."""

    def __init__(self, stem, script, title):
        self.stem, self.script, self.title = stem, script, title
        self.settings = {}       # gnuplot variable -> value (str, number, or list = array)
        self.blocks = []         # [(comment, [rows of numbers/strings, None = line break])]
        self.notes = []
        self.keynotes = []       # extra key lines (series with no point at all)
        self.points = 0          # points drawn
        self.why = ""            # why a figure without points has none, when its notes do not say

    def block(self, comment, rows):
        self.blocks.append((comment, rows))
        self.points += sum(1 for r in rows if r is not None)

    def dat_text(self):
        lines = [f"# {self.title}", "# written by plots/plot.py from the results CSV; medians of the ok runs"]
        for bi, (comment, rows) in enumerate(self.blocks):
            if bi:
                lines += ["", ""]
            lines.append(f"# {comment}")
            for r in rows:
                lines.append("" if r is None else " ".join(f'"{v}"' if isinstance(v, str) else fmt_num(v) for v in r))
            if not any(r is not None for r in rows):
                lines.append("NaN NaN")      # an empty block still has a line, so indices stay aligned
        return "\n".join(lines) + "\n"


def gp_string(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def gp_value(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return fmt_num(v)
    return gp_string(v)


def settings_text(fig, datafile, outbase):
    notes = []
    for n in fig.notes:
        notes += textwrap.wrap(n, NOTE_WIDTH, subsequent_indent="    ") or [""]
    values = dict(fig.settings, PLOTSDIR=str(PLOTS_DIR), DATA=str(datafile), OUT=str(outbase), FIGTITLE="\n".join(textwrap.wrap(fig.title, TITLE_WIDTH)),
                  NOTE="\n".join(notes), NNOTE=len(notes), NKEY=len(fig.keynotes))
    values["KN"] = fig.keynotes or [""]
    lines = []
    for name, v in values.items():
        if isinstance(v, list):
            lines.append(f"array {name}[{len(v)}] = [{', '.join(gp_value(x) for x in v)}]")
        else:
            lines.append(f"{name} = {gp_value(v)}")
    return "\n".join(lines) + "\n"


def log_axis(values, ratio=9.5):
    """Logarithmic when the positive values span about a decade or more."""
    vs = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return bool(vs) and max(vs) / min(vs) >= ratio


def line_figure(fig, series, xname, yname, hline=None, logy=None):
    """Settings of plots/lines.gp. series: [(title, colour, dash, point type, [(x, y) or None])];
    None in a point list breaks the line, so that a left-out point is not bridged."""
    xs = [p[0] for _, _, _, _, pts in series for p in pts if p]
    ys = [p[1] for _, _, _, _, pts in series for p in pts if p]
    drawn = [s for s in series if any(p for p in s[4])]
    for title, _, _, _, pts in drawn:
        fig.block(title, pts)
    logx = log_axis(xs)
    # a linear x axis gets its ticks at the measured values (few, and 10k rather than 10000)
    ticks = sorted(set(xs)) if not logx and len(set(xs)) <= 12 else []
    fig.settings.update(
        N=len(drawn), T=[s[0] for s in drawn] or [""], C=[s[1] for s in drawn] or [""],
        DT=[s[2] for s in drawn] or [1], PT=[s[3] for s in drawn] or [1],
        XLABEL=xname, YLABEL=yname, LOGX=logx, LOGY=log_axis(ys, 20) if logy is None else logy,
        HLINE=hline if hline is not None else 0, SHOWHLINE=hline is not None, XCOUNT=xname.startswith("n "),
        NXT=len(ticks), XT=ticks or [0], XTL=[fmt_count(t) for t in ticks] or [""])


def course_speedup_figures(exp, rows, scale):
    """The course report's speedups vs n, one figure per k, one line per (variant, d)."""
    configs = configurations(exp, scale)
    cells = cells_by_config(exp, rows, scale)
    variants = [v["name"] for v in exp["variants"]]
    base, others = variants[0], variants[1:]
    ks = sorted({p.get("k") for p in configs}, key=lambda v: (v is None, v))
    ds = sorted({p["d"] for p in configs})
    figs = []
    for k in ks:
        chosen = [p for p in configs if p.get("k") == k]
        suffix = f"_k{k}" if k is not None else ""
        title = (f"{fill_params(exp['title'], exp, chosen).split(':')[0]}: speedup over {base} vs n"
                 + (f", k = {k}" if k is not None else ""))
        fig = Figure(f"{exp['name']}_speedup{suffix}", "lines.gp", title)
        left = LeftOut()
        series = []
        for vi, variant in enumerate(others):
            for di, d in enumerate(ds):
                name = f"{variant}, d={d}"
                pts = []
                for p in sorted((p for p in chosen if p["d"] == d), key=lambda p: p["n"]):
                    b, c = cell(cells, p, base), cell(cells, p, variant)
                    left.expect(variant)
                    where = f"n={fmt_count(p['n'])} d={d}"
                    if c.status != "ok":
                        left.add(variant, status_text(c.status, exp, scale), where)
                        pts.append(None)
                    elif b.status != "ok":
                        left.add(variant, f"no {base} time: {status_text(b.status, exp, scale)}", where)
                        pts.append(None)
                    else:
                        pts.append((p["n"], b.median() / c.median()))
                series.append((name, PALETTE[di % len(PALETTE)], 1 + vi, POINT_TYPES[vi % len(POINT_TYPES)], pts))
        line_figure(fig, series, AXIS_LABELS["n"], f"speedup over {base}", hline=1,
                    logy=True)
        finish_notes(fig, left)
        fig.notes.append(f"Speedup = median time of {base} / median time of the variant.")
        figs.append(fig)
    return figs


def finish_notes(fig, left):
    """Variants with no point at all become key lines; the other left-out points, notes."""
    fig.keynotes = left.keynotes()
    fig.notes = left.notes() + fig.notes


def course_dataset_figure(exp, rows, scale):
    """Speedup over the first variant per column (data set) of a course-layout experiment."""
    configs = configurations(exp, scale)
    cells = cells_by_config(exp, rows, scale)
    variants = [v["name"] for v in exp["variants"]]
    base, others = variants[0], variants[1:]
    title = f"{fill_params(exp['title'], exp, configs).split(':')[0]}: speedup over {base} per data set"
    fig = Figure(f"{exp['name']}_speedup", "points.gp", title)
    left = LeftOut()
    columns = [exp["column"].format(**p) for p in configs]
    for vi, variant in enumerate(others):
        pts = []
        for i, p in enumerate(configs):
            b, c = cell(cells, p, base), cell(cells, p, variant)
            left.expect(variant)
            if c.status != "ok":
                left.add(variant, status_text(c.status, exp, scale), columns[i])
            elif b.status != "ok":
                left.add(variant, f"no {base} time: {status_text(b.status, exp, scale)}", columns[i])
            else:
                s = b.median() / c.median()
                pts.append((i, s, f"{s:.3g}"))
        if pts:
            fig.block(variant, pts)
            fig.settings.setdefault("T", []).append(variant)
            fig.settings.setdefault("C", []).append(VARIANT_COLOURS[(vi + 1) % len(VARIANT_COLOURS)])
            fig.settings.setdefault("PT", []).append(POINT_TYPES[vi % len(POINT_TYPES)])
    n = len(fig.settings.get("T", []))
    fig.settings.update(N=n, T=fig.settings.get("T") or [""], C=fig.settings.get("C") or [""],
                        PT=fig.settings.get("PT") or [1], NCOLS=len(columns), XL=columns or [""],
                        YLABEL=f"speedup over {base}", DX=0.14)
    finish_notes(fig, left)
    return [fig]


def grid_figures(exp, t, configs, cells, scale):
    """A grid table (x rows, y columns): the metric vs x, and with `speedup` the speedups over
    the first variant vs x, one line per (variant, y): colour by y, dash and points by variant."""
    metric, x, y = t["metric"], t["x"], t["y"]
    variants = series_variants(exp, t)
    chosen = [p for p in configs if all(p.get(k) == v for k, v in t.get("where", {}).items())]
    if any(isinstance(p[x], str) for p in chosen):
        return []  # rows are data sets, not a scale: the table only
    ys = sorted({p[y] for p in chosen})
    figs = []
    kinds = [("", variants)] + ([("speedup", variants[1:])] if t.get("speedup") else [])
    for kind, shown in kinds:
        title = t.get("figure", t["caption"])
        title = t.get("figure_speedup", f"{title}: speedup over {variants[0]}") if kind else title
        fig = Figure(f"{exp['name']}_{t['name']}" + (f"_{kind}" if kind else ""), "lines.gp",
                     fill_params(title, exp, chosen, t.get("where")))
        left, series = LeftOut(), []
        for vi, v in enumerate(shown):
            for yi, yv in enumerate(ys):
                pts = []
                for p in sorted((p for p in chosen if p[y] == yv), key=lambda p: p[x]):
                    c, b = cell(cells, p, v), cell(cells, p, variants[0])
                    left.expect(v)
                    where = f"{x}={fmt_count(p[x])} {y}={yv}"
                    if c.status != "ok":
                        left.add(v, status_text(c.status, exp, scale), where)
                        pts.append(None)
                    elif kind and b.status != "ok":
                        left.add(v, f"no {variants[0]} time: {status_text(b.status, exp, scale)}", where)
                        pts.append(None)
                    else:
                        pts.append((p[x], b.median(metric) / c.median(metric) if kind else c.median(metric)))
                series.append((f"{v}, {y}={yv}", PALETTE[yi % len(PALETTE)], 1 + vi, POINT_TYPES[vi % len(POINT_TYPES)],
                               pts))
        unit = METRICS[metric][2]
        ylabel = (f"speedup over {variants[0]}" if kind
                  else t.get("ylabel", f"{metric_label(metric)}" + (f" ({unit})" if unit else "")))
        line_figure(fig, series, AXIS_LABELS.get(x, x), ylabel, hline=1 if kind else None, logy=True if kind else None)
        finish_notes(fig, left)
        fig.notes.append("Median over the timed repetitions." if not kind else
                         f"Speedup = median time of {variants[0]} / median time of the variant.")
        fig.why = "" if chosen else f"the {scale} scale runs no configuration of its table"
        figs.append(fig)
    return figs


def series_figures(exp, rows, scale):
    """Cao et al.'s cost curves and the GPU-C vs GPU-L phase breakdown, per [[tables]] entry."""
    configs = configurations(exp, scale)
    cells = cells_by_config(exp, rows, scale)
    figs = []
    for t in exp.get("tables", []):
        if "y" in t:
            figs += grid_figures(exp, t, configs, cells, scale)
            continue
        metrics = t["metric"].split(",")
        dpc_phases = set(metrics) >= {ph for ph, _, _ in DPC_PHASES}
        run_phases = set(metrics) == {ph for ph, _, _ in RUN_PHASES} or dpc_phases
        variants = series_variants(exp, t)
        all_variants = [v["name"] for v in exp["variants"]]
        chosen = series_configs(t, configs)
        x = t["x"]
        # the caption without the speedups the table adds (tables.caption): these figures draw the metrics only
        title = fill_params(t["caption"], exp, chosen, t.get("where"))
        left = LeftOut()
        if not run_phases and any(isinstance(p[x], str) for p in chosen):
            continue  # lines across data sets mean nothing: the table only
        if not run_phases and (len(metrics) == 1 or not set(metrics) <= PER_ITERATION_METRICS):
            fig = Figure(f"{exp['name']}_{t['name']}", "lines.gp", title)
            series = []
            for mi, m in enumerate(metrics):
                for v in variants:
                    pts = []
                    for p in chosen:
                        c = cell(cells, p, v)
                        left.expect(v)
                        if c.status == "ok":
                            pts.append((p[x], c.median(m)))
                        else:
                            left.add(v, status_text(c.status, exp, scale), f"{x}={fmt_count(p[x])}")
                            pts.append(None)
                    vi = all_variants.index(v) if v in all_variants else 0
                    name = v if len(metrics) == 1 else f"{m} {v}"
                    series.append((name, VARIANT_COLOURS[vi % len(VARIANT_COLOURS)], 1 + mi,
                                   POINT_TYPES[(vi + mi) % len(POINT_TYPES)], pts))
            unit = METRICS[metrics[0]][2]
            ylabel = (f"{metric_label(metrics[0])}" + (f" ({unit})" if unit else "")
                      if len(metrics) == 1 else f"time ({unit})")
            line_figure(fig, series, AXIS_LABELS.get(x, x), ylabel)
            finish_notes(fig, left)
            fig.notes.append("Median over the timed repetitions.")
        else:
            phases = DPC_PHASES if dpc_phases else RUN_PHASES if run_phases else PHASES
            fixed = fixed_params(chosen, skip=(x,))
            fig = Figure(f"{exp['name']}_{t['name']}_phases", "phases.gp",
                         f"{'Phases of the run' if run_phases else 'Per-iteration phases'} ({', '.join(variants)}) "
                         f"vs {AXIS_LABELS.get(x, x)}" + (f", {fixed}" if fixed else ""))
            ymax, has = 0.0, []
            for v in variants:
                pts = []
                for i, p in enumerate(chosen):
                    c = cell(cells, p, v)
                    left.expect(v)
                    if c.status == "ok":
                        parts = [phase_median(c, ph) for ph, _, _ in phases]
                        ymax = max(ymax, sum(parts))
                        pts.append((i, *parts))
                    else:
                        left.add(v, status_text(c.status, exp, scale), f"{x}={fmt_count(p[x])}")
                fig.block(v, pts)
                has.append(1 if pts else 0)
            empty = left.empty_variants()
            fig.settings.update(N=len(variants), T=variants, E=has,
                                R=[empty.get(v, "") or "" for v in variants],
                                NCOLS=len(chosen), XL=[tick_label(p[x]) for p in chosen] or [""],
                                PH=[label for _, label, _ in phases], PC=[colour for _, _, colour in phases],
                                XLABEL=AXIS_LABELS.get(x, x),
                                YLABEL="time of the run (ms)" if run_phases else "time per iteration (ms)",
                                YMAX=ymax * 1.15 if ymax > 0 else 1)
            if run_phases:
                fig.settings["SHARE"] = "share of the run (%)"
            fig.settings["TICKLINES"] = max([label.count("\n") + 1 for label in fig.settings["XL"]])
            fig.keynotes = left.keynotes()
            fig.notes = left.notes() + [
                "Stacked medians of the run's phases as dpc reports them: tree build, rho, delta, assignment "
                "(transfers, in the table, left out)." if dpc_phases else
                "Stacked medians of the run's phases as streamkm reports them: distance (D^2 updates), selection "
                "(wheels, prefix sums, searches), weighting (served counts), other (the rest; generation and "
                "transfers left out)." if run_phases else
                "Stacked medians per iteration: assign (dc), update (gc), labels retrieved by GPU-L and the "
                "final download (g2m), host-to-device transfers (h2d) divided by the iterations."]
        fig.why = "" if chosen else f"the {scale} scale runs no configuration of its table"
        figs.append(fig)
    return figs


def figures_of(exp, rows, scale):
    if exp["table"] == "course":
        configs = configurations(exp, scale)
        numeric = configs and all(isinstance(p.get("n"), int) and isinstance(p.get("d"), int) for p in configs)
        return course_speedup_figures(exp, rows, scale) if numeric else course_dataset_figure(exp, rows, scale)
    if exp["table"] == "series":
        return series_figures(exp, rows, scale)
    return []


# ---- drawing -------------------------------------------------------------------------------

def check_png(path):
    with open(path, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            raise PlotError(f"{path.name} is not a PNG file")


def check_svg(path):
    text = path.read_text(errors="replace")
    if "<svg" not in text or "</svg>" not in text:
        raise PlotError(f"{path.name} is not a complete SVG file")


def draw(fig, gnuplot, out_dir, tmp_dir):
    """Runs gnuplot on plots/<script> with this figure's settings and data; renames the PNG
    and SVG into out_dir when both are valid."""
    data_dir = out_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    dat = data_dir / f"{fig.stem}.dat"
    write_atomically(dat, lambda out: out.write(fig.dat_text()))
    outbase = tmp_dir / fig.stem
    settings = tmp_dir / f"{fig.stem}.settings.gp"
    settings.write_text(settings_text(fig, dat, outbase))
    proc = subprocess.run([gnuplot, str(settings), str(PLOTS_DIR / fig.script)], capture_output=True, text=True,
                          timeout=120)
    errors = [ln for ln in proc.stderr.splitlines() if ln.strip() and "warning" not in ln.lower()]
    if proc.returncode != 0 or errors:
        raise PlotError(f"gnuplot {fig.script}: " + ("; ".join(errors[-3:]) or f"exit status {proc.returncode}"))
    png, svg = outbase.with_suffix(".png"), outbase.with_suffix(".svg")
    for p in (png, svg):
        if not p.exists() or p.stat().st_size == 0:
            raise PlotError(f"gnuplot {fig.script} wrote no {p.suffix[1:].upper()}")
    check_png(png)
    check_svg(svg)
    os.replace(png, out_dir / f"{fig.stem}.png")
    os.replace(svg, out_dir / f"{fig.stem}.svg")


def remove_stale(out_dir, stem):
    for p in (out_dir / f"{stem}.png", out_dir / f"{stem}.svg", out_dir / "data" / f"{stem}.dat"):
        if p.exists():
            p.unlink()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results", help="results folder (default results)")
    ap.add_argument("--scale", default=os.environ.get("SCALE", "default"), choices=SCALES)
    ap.add_argument("--experiment", dest="experiments", action="append",
                    help="draw this experiment file instead of experiments/*.toml (repeatable)")
    ap.add_argument("--only", help="comma-separated experiment names (file names without .toml)")
    ap.add_argument("--verbose", "-v", action="store_true", help="one line per figure: drawn, or why not")
    args = ap.parse_args()

    def fail(msg, status=2):
        print(f"plot.py: error: {msg}", file=sys.stderr)
        return status

    scale_dir = Path(args.results) / args.scale
    csv_path = scale_dir / "results.csv"
    if not csv_path.is_file():
        return fail(f"{csv_path} not found: run `make experiments SCALE={args.scale}` first")
    try:
        exps = select_experiments(args.experiments or sorted(EXPERIMENTS_DIR.glob("*.toml")), args.only)
        rows = read_rows(csv_path)
        figs = [f for e in exps if args.scale in e["scales"] for f in figures_of(e, rows, args.scale)]
    except (ExperimentError, KeyError, ValueError) as e:
        return fail(f"{e.__class__.__name__}: {e}" if not isinstance(e, ExperimentError) else str(e))
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return fail("gnuplot not found (`make plots` installs gnuplot-nox)")

    out_dir = scale_dir / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    status, drawn, skipped = 0, 0, 0
    say = print if args.verbose else (lambda *a, **k: None)
    tmp_dir = Path(tempfile.mkdtemp(prefix=".plot.", dir=out_dir))
    try:
        for fig in figs:
            if fig.points == 0:
                remove_stale(out_dir, fig.stem)
                why = (fig.why or "; ".join(fig.keynotes + [n for n in fig.notes if n.startswith("Not shown")][:2])
                       or "no run recorded")
                say(f"skipped {fig.stem}: no ok measurement to draw ({why})")
                skipped += 1
                continue
            try:
                draw(fig, gnuplot, out_dir, tmp_dir)
            except (PlotError, subprocess.TimeoutExpired, OSError) as e:
                print(f"plot.py: error: {fig.stem}: {e}", file=sys.stderr)
                status = 1
                continue
            drawn += 1
            extra = f" ({'; '.join(fig.keynotes)})" if fig.keynotes else ""
            say(f"wrote {out_dir / fig.stem}.{{png,svg}}: {fig.points} points{extra}")
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    results = "" if args.results == "results" else f" RESULTS={shlex.quote(args.results)}"
    why = (f" ({skipped} without an ok run not drawn{'' if args.verbose else ': --verbose names them'})"
           if skipped else "")
    print(f"{drawn} of {len(figs)} figures in {out_dir}/{why}; next: make paper SCALE={args.scale}{results}")
    return status


if __name__ == "__main__":
    sys.exit(main())
