"""tables.py - turns the runner's results CSV into the papers' tables, as Markdown and LaTeX.

Two layouts, named by an experiment's `table` key:
  course  the course report's Figures 3 and 4: one column per data set (the experiment's
          `column` template), optionally grouped by `group` (Figure 3: the number of
          clusters); per group the time of each variant, the speedup of every other variant
          over the first one, and the number of iterations.
  series  Cao et al.'s figures: one table per [[tables]] entry, one row per value of `x`
          (other parameters fixed by `where`), one column per variant and metric; with
          `speedup = true`, also the speedup of every other variant over the first one.
          An entry with `y` is a grid (Okuda & Fujimoto's Tables 1 and 2): rows x, columns y,
          one block of rows per variant (its metric), then with `speedup = true` one block per
          other variant of its speedup over the first one.
Values are medians over the timed repetitions. A cell whose run did not produce a time says why:
"-" (over the time budget, as in the course report), "n/a (no GPU)", "missing" (data set not
in the data folder) or "failed"; the reasons are listed under the table. Nothing is estimated.
"""
import json
import os
import statistics
import tempfile
from pathlib import Path

from spec import configurations

CELL_FOR_STATUS = {"timeout": "-", "skipped-budget": "-", "no-device": "n/a (no GPU)", "missing-data": "missing",
                   "missing-program": "n/a", "failed": "failed", "crashed": "failed"}

# Cao et al.'s cost names -> (how to compute from one row, unit scale, unit name)
METRICS = {
    "tc": (lambda r: f(r, "load_s") + f(r, "total_s"), 1.0, "s"),
    "cc": (lambda r: f(r, "total_s"), 1.0, "s"),
    "pt": (lambda r: f(r, "total_s") / int(r["iterations"]), 1e3, "ms"),
    "dc": (lambda r: f(r, "assign_s") / int(r["iterations"]), 1e3, "ms"),
    "gc": (lambda r: f(r, "update_s") / int(r["iterations"]), 1e3, "ms"),
    "g2m": (lambda r: f(r, "d2h_s") / int(r["iterations"]), 1e3, "ms"),
    # Quality: sum of squared distances to the nearest centre (k-means, stream; streamkm's cost)
    "sse": (lambda r: f(r, "sse"), 1.0, ""),
    # streaming k-means (Okuda & Fujimoto's breakdown) and stream (Cao) phases of a run (ms)
    "generation": (lambda r: f(r, "generation_s"), 1e3, "ms"),
    "transfers": (lambda r: f(r, "transfers_s"), 1e3, "ms"),
    "distance": (lambda r: f(r, "distance_s"), 1e3, "ms"),
    "selection": (lambda r: f(r, "selection_s"), 1e3, "ms"),
    "weighting": (lambda r: f(r, "weighting_s"), 1e3, "ms"),
    "seeding": (lambda r: f(r, "seeding_s"), 1e3, "ms"),
    "other": (lambda r: f(r, "other_s"), 1e3, "ms"),
    "assign_run": (lambda r: f(r, "assign_s"), 1e3, "ms"),   # a whole run's assign and update (stream)
    "update_run": (lambda r: f(r, "update_s"), 1e3, "ms"),
    # DBSCAN's phases (s)
    "index": (lambda r: f(r, "index_s"), 1.0, "s"),
    "core": (lambda r: f(r, "core_s"), 1.0, "s"),
    "connect": (lambda r: f(r, "connect_s"), 1.0, "s"),
    "label": (lambda r: f(r, "label_s"), 1.0, "s"),
    # density peaks (GDPC): the run's phases (ms; transfers as above), distance computations of the
    # run and of all pairs (2 n^2), the incremental batches (median per batch of 1000, ms), the
    # recomputation from scratch after a batch (ms), and how many times faster the batch is (x)
    "tree_build": (lambda r: f(r, "tree_build_s"), 1e3, "ms"),
    "rho": (lambda r: f(r, "rho_s"), 1e3, "ms"),
    "delta": (lambda r: f(r, "delta_s"), 1e3, "ms"),
    "assignment": (lambda r: f(r, "assignment_s"), 1e3, "ms"),
    "distances": (lambda r: f(r, "distances"), 1.0, ""),
    "all_pairs": (lambda r: f(r, "all_pairs"), 1.0, ""),
    "batch": (lambda r: f(r, "batch_s"), 1e3, "ms"),
    "restart": (lambda r: f(r, "restart_s"), 1e3, "ms"),
    "gain": (lambda r: f(r, "restart_s") / f(r, "batch_s"), 1.0, ""),
}
COUNT_METRICS = {"distances", "all_pairs"}


def f(row, key):
    return float(row[key])


def fmt_time(v):
    return f"{v:.4g}" if v >= 1e-4 else f"{v:.2e}"


class Cell:
    """What one (configuration, variant) gave: median times, iterations, or a status."""

    def __init__(self, rows):
        ok = [r for r in rows if r["status"] == "ok"]
        self.status = "ok" if ok else (rows[0]["status"] if rows else "not-run")
        self.reason = "" if ok else (rows[0].get("reason", "") if rows else "not run yet")
        self.rows = ok
        self.iterations = int(ok[0]["iterations"]) if ok and ok[0].get("iterations") else None

    def median(self, metric="cc"):
        fn, scale, _ = METRICS[metric]
        return statistics.median(fn(r) for r in self.rows) * scale

    def text(self):
        return CELL_FOR_STATUS.get(self.status, self.status)


def cells_by_config(exp, rows, scale):
    """{(config params json, variant name): Cell} for one experiment and scale."""
    groups = {}
    for r in rows:
        if r["experiment"] == exp["name"] and r["scale"] == scale:
            groups.setdefault((r["params"], r["variant"]), []).append(r)
    return {key: Cell(rs) for key, rs in groups.items()}


def note_for(cell, where, exp, scale):
    """The line under a table that explains a cell without a time."""
    if cell.status in ("timeout", "skipped-budget"):
        return f'"-": over the {exp["scales"][scale]["budget_s"]} s budget per run (not run, not estimated)'
    if cell.status == "no-device":
        return f"n/a (no GPU): {cell.reason}"
    return f"{where}: {cell.text()}: {cell.reason}"


class Notes:
    def __init__(self):
        self.items = []

    def add(self, text):
        if text and text not in self.items:
            self.items.append(text)


def course_table(exp, rows, scale):
    """[(title, header, body rows, notes)] in the course report's layout."""
    configs = configurations(exp, scale)
    cells = cells_by_config(exp, rows, scale)
    variants = [v["name"] for v in exp["variants"]]
    columns, groups = [], []
    for p in configs:
        col = exp["column"].format(**p)
        grp = exp["group"].format(**p) if "group" in exp else ""
        if col not in columns:
            columns.append(col)
        if grp not in groups:
            groups.append(grp)
    by_pos = {(exp["column"].format(**p), exp["group"].format(**p) if "group" in exp else ""): p for p in configs}
    notes = Notes()
    body = []
    for grp in groups:
        def cell(col, variant):
            p = by_pos.get((col, grp))
            return cells.get((json.dumps(p, sort_keys=True), variant), Cell([])) if p else None

        prefix = [grp] if grp else []
        for vi, variant in enumerate(variants):
            line = [variant]
            for col in columns:
                c = cell(col, variant)
                line.append("" if c is None else fmt_time(c.median()) if c.status == "ok" else c.text())
                if c is not None and c.status != "ok":
                    notes.add(note_for(c, f"{variant}, {col}", exp, scale))
            body.append(prefix + line if vi == 0 else [""] * len(prefix) + line)
            if vi > 0:
                line = [f"Speedup {variant}"]
                for col in columns:
                    base, c = cell(col, variants[0]), cell(col, variant)
                    ok = base is not None and c is not None and base.status == c.status == "ok"
                    line.append(f"{base.median() / c.median():.2f}" if ok else ("" if c is None else "-"))
                body.append([""] * len(prefix) + line)
        line = ["# iterations"]
        for col in columns:
            its = {}
            for variant in variants:
                c = cell(col, variant)
                if c is not None and c.status == "ok":
                    its[variant] = c.iterations
            values = sorted(set(its.values()))
            if not values:
                line.append("-")
            elif len(values) == 1:
                line.append(str(values[0]))
            else:
                line.append("/".join(str(its[v]) for v in variants if v in its) + " (!)")
                notes.add(f"(!) {col}: the variants needed different numbers of iterations "
                          f"({', '.join(f'{v} {n}' for v, n in its.items())}): float sums round differently")
        body.append([""] * len(prefix) + line)
    header = ([exp.get("group_label", "# clusters")] if groups != [""] else []) + ["variant"] + columns
    if exp.get("note"):
        notes.add(exp["note"])
    return [(exp["title"], header, body, notes.items)]


def series_configs(table, configs):
    """The configurations one [[tables]] entry shows: those matching its `where`, by `x` (string
    values, such as data set names, in file order)."""
    chosen = [p for p in configs if all(p.get(k) == v for k, v in table.get("where", {}).items())]
    order = ordered(p[table["x"]] for p in chosen)
    return sorted(chosen, key=lambda p: order.index(p[table["x"]]))


def series_variants(exp, table):
    """The variants one [[tables]] entry shows: its `variants`, else all of the experiment's."""
    return table.get("variants") or [v["name"] for v in exp["variants"]]


def fmt_value(v, metric):
    if metric in COUNT_METRICS:
        return f"{v:.0f}"
    if metric == "gain":
        return f"{v:.3g}x"
    return f"{v:.6g}" if metric == "sse" else fmt_time(v)


def ordered(values):
    """Sorted numbers; strings (data set names) in the order of the experiment file."""
    values = list(dict.fromkeys(values))
    return sorted(values) if all(isinstance(v, (int, float)) for v in values) else values


def units_note(metrics):
    units = ", ".join(f"{m} in {METRICS[m][2]}" for m in metrics if METRICS[m][2])
    return f"; {units}" if units else ""


def grid_table(exp, t, configs, cells, scale):
    """A [[tables]] entry with `y`: rows x, columns y, a block of rows per variant, then the
    speedups over the first variant (Okuda & Fujimoto's Tables 1 and 2)."""
    metric = t["metric"]
    variants = series_variants(exp, t)
    chosen = [p for p in configs if all(p.get(k) == v for k, v in t.get("where", {}).items())]
    xs = ordered(p[t["x"]] for p in chosen)
    ys = ordered(p[t["y"]] for p in chosen)
    by_xy = {(p[t["x"]], p[t["y"]]): p for p in chosen}
    notes, body = Notes(), []

    def cell(xv, yv, v):
        p = by_xy.get((xv, yv))
        return None if p is None else cells.get((json.dumps(p, sort_keys=True), v), Cell([]))

    for v in variants:
        for i, xv in enumerate(xs):
            line = [v if i == 0 else "", str(xv)]
            for yv in ys:
                c = cell(xv, yv, v)
                line.append("" if c is None else fmt_value(c.median(metric), metric) if c.status == "ok" else c.text())
                if c is not None and c.status != "ok":
                    notes.add(note_for(c, f"{v}, {t['x']}={xv} {t['y']}={yv}", exp, scale))
            body.append(line)
    if t.get("speedup"):
        for v in variants[1:]:
            for i, xv in enumerate(xs):
                line = [f"speedup {v}" if i == 0 else "", str(xv)]
                for yv in ys:
                    b, c = cell(xv, yv, variants[0]), cell(xv, yv, v)
                    ok = b is not None and c is not None and b.status == c.status == "ok" and c.median(metric) > 0
                    line.append(f"{b.median(metric) / c.median(metric):.3g}x" if ok else ("" if c is None else "-"))
                body.append(line)
    header = ["variant", t["x"]] + [f"{t['y']}={yv}" for yv in ys]
    notes.add(f"Median of the timed repetitions{units_note([metric])}; rows {t['x']}, columns {t['y']}."
              + (f" Speedup: the {variants[0]} time over each variant's." if t.get("speedup") else ""))
    return (f"{exp['title']}. {t['caption']}", header, body, notes.items, t["name"])


def series_tables(exp, rows, scale):
    configs = configurations(exp, scale)
    cells = cells_by_config(exp, rows, scale)
    out = []
    for t in exp.get("tables", []):
        if "y" in t:
            out.append(grid_table(exp, t, configs, cells, scale))
            continue
        metrics = t["metric"].split(",")
        variants = series_variants(exp, t)
        chosen = series_configs(t, configs)
        speedups = variants[1:] if t.get("speedup") else []
        header = ([t["x"]] + [f"{m} {v}" if len(metrics) > 1 else v for m in metrics for v in variants]
                  + [f"{v} vs {variants[0]}" for v in speedups])
        notes, body = Notes(), []
        for p in chosen:
            line = [str(p[t["x"]])]
            row_cells = {v: cells.get((json.dumps(p, sort_keys=True), v), Cell([])) for v in variants}
            for m in metrics:
                for v in variants:
                    c = row_cells[v]
                    line.append(fmt_value(c.median(m), m) if c.status == "ok" else c.text())
                    if c.status != "ok":
                        notes.add(note_for(c, f"{v}, {t['x']}={p[t['x']]}", exp, scale))
            base = row_cells[variants[0]]
            for v in speedups:
                c = row_cells[v]
                ok = base.status == "ok" and c.status == "ok" and c.median(metrics[0]) > 0
                line.append(f"{base.median(metrics[0]) / c.median(metrics[0]):.3g}x" if ok else "-")
            body.append(line)
        notes.add(f"Median of the timed repetitions{units_note(metrics)}."
                  + (f" Speedup: the {variants[0]} time over each variant's ({metrics[0]})." if speedups else ""))
        out.append((f"{exp['title']}. {t['caption']}", header, body, notes.items, t["name"]))
    return out


def markdown(title, header, body, notes):
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


def latex_escape(s):
    """s as LaTeX text: special characters escaped, "--" kept as two hyphens."""
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in s).replace("--", "-{}-")


def latex(title, header, body, notes):
    cols = "l" * 2 + "r" * (len(header) - 2)
    lines = [r"\begin{table}[htbp]", r"\centering", r"\scriptsize", rf"\caption{{{latex_escape(title)}}}",
             r"\resizebox{\linewidth}{!}{%", rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
             " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}}"]
    if notes:
        lines += [r"\par\smallskip\raggedright"] + [latex_escape(n) + r"\par" for n in notes]
    lines += [r"\end{table}"]
    return "\n".join(lines) + "\n"


def render(exp, rows, scale):
    """[(file stem, markdown, latex)] of one experiment."""
    if exp["table"] == "course":
        return [(exp["name"], markdown(*t), latex(*t)) for t in course_table(exp, rows, scale)]
    if exp["table"] == "series":
        return [(f"{exp['name']}_{t[4]}", markdown(*t[:4]), latex(*t[:4])) for t in series_tables(exp, rows, scale)]
    raise ValueError(f"{exp['name']}: unknown table layout {exp['table']!r}")


def write_text_atomically(path, text):
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def write_all(exps, rows, scale, out_dir, echo=False):
    """Writes <stem>.md and <stem>.tex per table and all.md with every table; prints them if echo."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    combined = []
    for exp in exps:
        for stem, md, tex in render(exp, rows, scale):
            write_text_atomically(out_dir / f"{stem}.md", md)
            write_text_atomically(out_dir / f"{stem}.tex", tex)
            combined.append(md)
    write_text_atomically(out_dir / "all.md", "\n".join(combined))
    if echo:
        print("\n" + "\n".join(combined))
        print(f"tables written to {out_dir}/ (Markdown and LaTeX)")
