"""tables.py - turns the runner's results CSV into the papers' tables, as Markdown and LaTeX.

Two layouts, named by an experiment's `table` key:
  course  the course report's Figures 3 and 4: one column per data set (the experiment's
          `column` template), optionally grouped by `group` (Figure 3: the number of
          clusters); per group the time of each variant, the speedup of every other variant
          over the first one, and the number of iterations.
  series  Cao et al.'s figures: one table per [[tables]] entry, one row per value of `x`
          (other parameters fixed by `where`), one column per variant and metric; with
          `speedup = true`, also the speedup of every other variant over the first one (the
          caption then says so).
          An entry with `y` is a grid (Okuda & Fujimoto's Tables 1 and 2): rows x, columns y,
          one block of rows per variant (its metric), then with `speedup = true` one block per
          other variant of its speedup over the first one.
Titles and captions state parameters through placeholders: "{n}" in an experiment's `title` or in
an entry's `caption` (and plots/plot.py's `figure`, `figure_speedup`) becomes the values of n in
the configurations that the table shows at this scale (fill_params), so that a caption never
states another scale's parameters. Every column header says what the column holds: the metric
(METRIC_TEXT), the variant and the unit.
Values are medians over the timed repetitions, written with one format per column
(write_numbers). A cell whose run did not produce a time says why: "-" (over the time budget,
as in the course report), "n/a (no GPU)", "missing" (data set not in the data folder), "failed"
or "not run"; the notes under the table give each reason once, naming its cells ("n/a (no GPU)":
what happened and what to do, once per table, and once at the top of all.md). A table without any
configuration at this scale says so and which scales have its rows. Nothing is estimated.
Every number names its build where the reader could not assume it (BuildMarks): "(b1)" after a
number, and a note naming build b1, when one program's numbers in a table come from several
builds (a runner kept older rows with --reuse-other-builds); one note when they all come from a
build other than the program's current one.
"""
import json
import math
import os
import re
import statistics
import tempfile
from collections import namedtuple
from pathlib import Path

from spec import ExperimentError, configurations

CELL_FOR_STATUS = {"timeout": "-", "skipped-budget": "-", "no-device": "n/a (no GPU)", "missing-data": "missing",
                   "missing-program": "n/a", "failed": "failed", "crashed": "failed", "not-run": "not run"}

# Cao et al.'s cost names and the other metrics -> (how to compute from one row, unit scale, unit name)
METRICS = {
    "tc": (lambda r: f(r, "load_s") + f(r, "total_s"), 1.0, "s"),
    "cc": (lambda r: f(r, "total_s"), 1.0, "s"),
    "pt": (lambda r: f(r, "total_s") / int(r["iterations"]), 1e3, "ms"),
    # the same outside Cao's tables: the time of one iteration
    "iteration": (lambda r: f(r, "total_s") / int(r["iterations"]), 1e3, "ms"),
    "dc": (lambda r: f(r, "assign_s") / int(r["iterations"]), 1e3, "ms"),
    "gc": (lambda r: f(r, "update_s") / int(r["iterations"]), 1e3, "ms"),
    "g2m": (lambda r: f(r, "d2h_s") / int(r["iterations"]), 1e3, "ms"),
    # the run time of any other program (DBSCAN, density peaks, stream, streamkm): what Cao calls cc
    "time": (lambda r: f(r, "total_s"), 1.0, "s"),
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
    # k-means out of core: the host-to-device bandwidth of the streamed blocks
    "h2d_bandwidth": (lambda r: f(r, "h2d_gb_s"), 1.0, "GB/s"),
}
COUNT_METRICS = {"distances", "all_pairs"}
RATIO_METRICS = {"gain"}     # written as speedups are, "2.51x"

# What a metric's column holds: (its name in the header, its definition in the note under the table, or "")
METRIC_TEXT = {
    "tc": ("tc", "tc: Cao's total cost, reading the input + cc"),
    "cc": ("cc", "cc: Cao's clustering cost, the timed run"),
    "pt": ("pt", "pt: cc per iteration"),
    "dc": ("dc", "dc: the assignment (distances) per iteration"),
    "gc": ("gc", "gc: the centroid update per iteration"),
    "g2m": ("g2m", "g2m: the device-to-host transfers per iteration"),
    "iteration": ("time per iteration", "time per iteration: the timed run divided by its iterations"),
    "time": ("run time", "run time: the timed run as the program reports it (reading an input file excluded)"),
    "sse": ("SSQ", "SSQ: the sum of squared distances to the nearest centre"),
    "generation": ("generation", ""),
    "transfers": ("transfers", ""),
    "distance": ("distance", ""),
    "selection": ("selection", ""),
    "weighting": ("weighting", ""),
    "seeding": ("seeding", ""),
    "other": ("other", ""),
    "assign_run": ("assign", "assign, update: the k-means assignments and updates of a whole run"),
    "update_run": ("update", "assign, update: the k-means assignments and updates of a whole run"),
    "index": ("index build", ""),
    "core": ("core points", ""),
    "connect": ("connect", ""),
    "label": ("labelling", ""),
    "tree_build": ("tree build", ""),
    "rho": ("rho", ""),
    "delta": ("delta", ""),
    "assignment": ("assignment", ""),
    "distances": ("distance computations", ""),
    "all_pairs": ("all pairs", "all pairs: 2 n^2 distance computations"),
    "batch": ("batch", "batch: the median time of one incremental batch"),
    "restart": ("recomputation", "recomputation: the median time of a recomputation from scratch after a batch"),
    "gain": ("recomputation / batch", "recomputation / batch: how many times faster a batch is than a recomputation"),
    "h2d_bandwidth": ("host-to-device bandwidth", "host-to-device bandwidth: the points copied to the device over the "
                      "copies' time, each block's from its packing until it was seen there (so, where the computing "
                      "outlasted a copy, a bound below the link's rate)"),
}

# Number formats: one per column (write_numbers)
DEFAULT_DIGITS = 3        # significant digits of the smallest number of a column...
DIGITS = {"sse": 5}       # ...by kind of number (SSQs are compared across variants)
MAX_DIGITS = 6            # a column whose largest number would show more is written in scientific notation
NOTE_PLACES = 8           # cells named per note before "and N more"


def f(row, key):
    return float(row[key])


def build_of(row):
    """A row's build: its `build` column (experiments/run.py); for a row of an older runner, which
    recorded none, a key made of its readable fields, never equal to a recorded build (a row of an
    unknown build is a row of another build)."""
    return row.get("build") or "unrecorded:" + "|".join(row.get(k) or "" for k in ("git_commit", "compiler", "flags"))


def build_detail(row):
    """A row's git commit (-dirty: a modified tree) and compiler, as text ("" if it has neither)."""
    return ", ".join(x for x in (f"git {row['git_commit']}" if row.get("git_commit") else "",
                                 row.get("compiler") or "") if x)


def describe_build(row):
    """The build of a row in words: its id, git commit and compiler."""
    name = f"build {row['build']}" if row.get("build") else "a build not recorded"
    return f"{name} ({build_detail(row)})" if build_detail(row) else name


class Cell:
    """What one (configuration, variant) gave: median times, iterations, or a status; and which
    build(s) its numbers come from ({build: first row of it})."""

    def __init__(self, rows):
        ok = [r for r in rows if r["status"] == "ok"]
        self.status = "ok" if ok else (rows[0]["status"] if rows else "not-run")
        self.reason = "" if ok else (rows[0].get("reason", "") if rows else "no row in the results file yet")
        self.rows = ok
        self.iterations = int(ok[0]["iterations"]) if ok and ok[0].get("iterations") else None
        self.program = rows[0].get("program", "") if rows else ""
        self.builds = {}
        for r in ok:
            self.builds.setdefault(build_of(r), r)

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


# ---- what a table says in words: captions, headers, notes ----------------------------------------

PLACEHOLDER = re.compile(r"\{(\w+)\}")


def and_join(words):
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def ordered(values):
    """Sorted numbers; strings (data set names) in the order of the experiment file."""
    values = list(dict.fromkeys(values))
    return sorted(values) if all(isinstance(v, (int, float)) for v in values) else values


def fmt_param(v):
    """A parameter's value as a caption states it: 64000000 -> 64M, other numbers and names as they are."""
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1_000_000 and v % 100_000 == 0:
        return f"{v / 1e6:g}M"
    return f"{v:g}" if isinstance(v, float) else str(v)


def param_values(name, configs):
    """The values of one parameter in configs, in words: "8", "2 and 64", "4 to 28" (more than four numbers)."""
    values = ordered(p[name] for p in configs if name in p)
    if len(values) > 4 and all(isinstance(v, (int, float)) for v in values):
        return f"{fmt_param(values[0])} to {fmt_param(values[-1])}"
    return and_join([fmt_param(v) for v in values])


def fill_params(text, exp, configs, where=None):
    """text with each placeholder {name} replaced by the values of the parameter `name` in configs (the
    configurations that a table shows at one scale); with no configuration, by its `where` value, else by
    "(none at this scale)". Raises ExperimentError for a name that no configuration of the experiment sets."""
    def value(m):
        name = m[1]
        if any(name in p for p in configs):
            return param_values(name, configs)
        if where and name in where:
            return fmt_param(where[name])
        if not any(name in p for s in exp["scales"] for p in configurations(exp, s)):
            raise ExperimentError(f"{exp['name']}: {text!r} names {{{name}}}, a parameter that no configuration sets")
        return "(none at this scale)"

    return PLACEHOLDER.sub(value, text)


HIDDEN_PARAMS = ("series", "label", "file", "input")   # tags and data sets: named elsewhere, not stated as "k = v"


def fixed_params(configs, skip=()):
    """The parameters that have one value in all configs, in words ("n = 4000, k = 8"), except those of
    skip and HIDDEN_PARAMS; "" when there are none."""
    names = [k for k in (configs[0] if configs else {}) if k not in skip and k not in HIDDEN_PARAMS]
    return ", ".join(f"{k} = {fmt_param(configs[0][k])}" for k in names
                     if all(k in p and p[k] == configs[0][k] for p in configs))


def speedup_phrase(variants):
    """What the speedup columns (or blocks) of a table hold, for its caption."""
    others = variants[1:]
    if len(others) == 1:
        return f", with the speedup of {others[0]} over {variants[0]}"
    return f", with the speedups of {and_join(others)} over {variants[0]}"


def caption(exp, t, configs):
    """The title of a [[tables]] entry's table: the experiment's title and the entry's caption, their
    placeholders filled from configs (the configurations the table shows), and the speedups it shows."""
    text = f"{exp['title']}. {t['caption']}" + (speedup_phrase(series_variants(exp, t)) if t.get("speedup") else "")
    return fill_params(text, exp, configs, t.get("where"))


def metric_header(metric, variant=""):
    """A metric's column (or block) as its header says it: "run time seq (s)", "distance computations"."""
    name, _ = METRIC_TEXT.get(metric, (metric, ""))
    unit = METRICS[metric][2]
    return " ".join(x for x in (name, variant) if x) + (f" ({unit})" if unit else "")


def metrics_note(metrics, base=None):
    """The note that says what a table's numbers are; base: the variant of the speedups, if any."""
    definitions = list(dict.fromkeys(METRIC_TEXT[m][1] for m in metrics if METRIC_TEXT.get(m, ("", ""))[1]))
    text = "Medians of the timed repetitions" + "".join(f"; {d}" for d in definitions) + "."
    if base:
        text += f" Speedup: the {METRIC_TEXT.get(metrics[0], (metrics[0],))[0]} of {base} over each variant's."
    return text


def no_gpu_reason(reason):
    """The gpu program's words for why it found no usable GPU, without its "pragmaclust: error: gpu variant: "
    and without its advice to pass --allow-host, which the runner never does (host times are no GPU times)."""
    text = re.sub(r"^(pragmaclust: error: )?(gpu variant: )?", "", (reason or "").strip())
    return re.sub(r"[;,]? (or )?pass --allow-host to run (this build )?on the host\.?$", "", text) or "no usable GPU"


def no_gpu_note(reason):
    """The note that explains "n/a (no GPU)": what happened, and what the user can do."""
    return (f"{CELL_FOR_STATUS['no-device']}: not run, as the gpu build found no usable GPU on the machine that ran "
            f"the experiments ({no_gpu_reason(reason)}). The runner never runs the gpu build on the host, whose times "
            "would pass for GPU times; the same command on a machine with a GPU fills these cells.")


def is_no_gpu_note(text):
    return text.startswith(CELL_FOR_STATUS["no-device"] + ": ")


class Notes:
    """The lines under a table, each said once, in the order first added. A cell without a time is
    noted by its reason (add_cell): once per reason, naming the cells where the reason applies to
    some cells only."""

    def __init__(self, cells=0):
        self.items, self.places = [], {}
        self.cells = cells    # how many cells the table has: a reason of them all names none

    def add(self, text, where=None):
        if not text:
            return
        if text not in self.places:
            self.items.append(text)
            self.places[text] = []
        if where and where not in self.places[text]:
            self.places[text].append(where)

    def add_cell(self, cell, where, exp, scale):
        """Notes why a cell has no time; where: the cell in words ("seq, n=1000")."""
        if cell.status in ("timeout", "skipped-budget"):
            self.add(f'"-": over the {exp["scales"][scale]["budget_s"]} s budget per run (not run, not estimated)')
        elif cell.status == "no-device":
            self.add(no_gpu_note(cell.reason))
        else:
            self.add(f"{cell.text()}: {cell.reason}", where)

    def lines(self):
        out = []
        for text in self.items:
            places = self.places[text]
            named = "every cell" if len(places) == self.cells else "; ".join(places[:NOTE_PLACES]) + (
                f" and {len(places) - NOTE_PLACES} more" if len(places) > NOTE_PLACES else "")
            out.append(f"{named}: {text}" if places else text)
        return out


def empty_note(exp, t, scale):
    """Why a [[tables]] entry has no row at this scale: the `where` values that this scale's grid
    lacks, and the scales whose grids have rows for it."""
    configs = configurations(exp, scale)
    where = t.get("where", {})
    lacking = []
    for key, v in where.items():
        have = ordered(p[key] for p in configs if key in p)
        if v not in have:
            runs = and_join([fmt_param(h) for h in have]) if have else "no value"
            lacking.append(f"{key} = {fmt_param(v)} (its grid has {key} = {runs})")
    if lacking:
        why = f"the {scale} scale runs no configuration with {'; '.join(lacking)}"
    else:
        why = (f"no configuration of the {scale} scale has "
               + ", ".join(f"{key} = {fmt_param(v)}" for key, v in where.items()) + " together")
    others = [s for s in exp["scales"] if s != scale and series_configs(t, configurations(exp, s))]
    return (f"No rows at this scale: {why}; " + (f"the {and_join(others)} scale{'s' if len(others) > 1 else ''} "
                                                  f"run{'' if len(others) > 1 else 's'} this table." if others
                                                  else "no scale runs this table (check its `where`)."))


# ---- numbers: one format per column --------------------------------------------------------------

class Num:
    """A number of a table cell, written once the numbers of its column are known (write_numbers).
    kind: "time" (any measured value), "sse", "count" or "speedup"; suffix: text after the number
    ("x", a build mark); group: numbers of one column and group share a format (a grid's blocks)."""

    def __init__(self, value, kind="time", suffix="", group=""):
        self.value, self.kind, self.suffix, self.group = value, kind, suffix, group


def column_format(values, kind):
    """The one format (a function of a number) of a column's numbers of one kind: counts as integers;
    else fixed decimals that give the column's smallest number DIGITS significant digits, unless its
    largest number would then show more than MAX_DIGITS digits: then scientific notation, DIGITS digits."""
    if kind == "count":
        return lambda v: f"{v:.0f}"
    digits = DIGITS.get(kind, DEFAULT_DIGITS)
    sizes = [abs(v) for v in values if v and math.isfinite(v)]
    if not sizes:
        return lambda v: f"{v:.{digits - 1}f}"
    lo, hi = min(sizes), max(sizes)
    decimals = max(0, digits - 1 - math.floor(math.log10(lo)))
    if decimals and math.floor(math.log10(hi)) + 1 + decimals > MAX_DIGITS:
        return lambda v: f"{v:.{digits - 1}e}"
    return lambda v: f"{v:.{decimals}f}"


def write_numbers(body):
    """The body with its Nums written as text, one format per column, kind and group (column_format)."""
    groups = {}
    for row in body:
        for j, c in enumerate(row):
            if isinstance(c, Num):
                groups.setdefault((j, c.kind, c.group), []).append(c.value)
    formats = {key: column_format(values, key[1]) for key, values in groups.items()}
    return [[formats[(j, c.kind, c.group)](c.value) + c.suffix if isinstance(c, Num) else c for j, c in enumerate(row)]
            for row in body]


def metric_num(value, metric, suffix="", group=""):
    """A Num of one metric's median."""
    if metric in RATIO_METRICS:
        return Num(value, "speedup", "x" + suffix, group)
    return Num(value, "count" if metric in COUNT_METRICS else "sse" if metric == "sse" else "time", suffix, group)


class BuildMarks:
    """Which build the numbers of one table come from, said where the reader could not assume it.
    Per program: when its numbers come from several builds, every number of a build other than the
    current one carries "(bN)" (suffix()) and a note names build bN; when they all come from one
    build that is not the current one, one note says so. cells: the table's cells in table order
    (labels are numbered in that order); current_builds: {program: the build id of the program
    that the runner would run now}, or None when there is none to compare with (then a single
    build per program is not noted)."""

    def __init__(self, cells, current_builds):
        self.labels, self.notes = {}, []
        per_program, whole = {}, {}   # whole: {detail: [(program, row)]} of programs wholly of another build
        for c in cells:
            for build, row in c.builds.items():
                per_program.setdefault(c.program, {}).setdefault(build, row)
        for program, builds in per_program.items():
            current = (current_builds or {}).get(program)
            if len(builds) == 1:
                (build, row), = builds.items()
                if current is not None and build != current:
                    whole.setdefault(build_detail(row), []).append((program, row))
                continue
            for build, row in builds.items():
                if build != current:
                    self.labels[(program, build)] = f"b{len(self.labels) + 1}"
                    self.notes.append(f"({self.labels[(program, build)]}) {program}: {describe_build(row)}")
            if current in builds:
                self.notes.append(f"unmarked {program} numbers: the current build {current}")
        if whole:   # one note for all of them (a results file of another machine: every program)
            parts = []
            for detail, entries in whole.items():
                if all(not row.get("build") for _, row in entries):
                    names = [p for p, _ in entries]
                    who = and_join(names) + (" from builds" if len(names) > 1 else " from a build") + " not recorded"
                else:
                    who = and_join([f"{p} from build {row['build']}" if row.get("build")
                                    else f"{p} from a build not recorded" for p, row in entries])
                parts.append(f"{who} ({detail})" if detail else who)
            now = ", ".join(f"{p} {current_builds[p]}" for d in whole.values() for p, _ in d)
            self.notes.append(f"Numbers not of the current builds (current: {now}): {'; '.join(parts)}.")

    def suffix(self, *cells):
        """" (b1,b2)" for the builds the numbers of these cells come from, "" when none is marked."""
        labels = sorted({self.labels[(c.program, b)] for c in cells if c is not None for b in c.builds
                         if (c.program, b) in self.labels}, key=lambda label: int(label[1:]))
        return f" ({','.join(labels)})" if labels else ""

    def add_notes(self, notes):
        for n in self.notes:
            notes.add(n)


# ---- the layouts ----------------------------------------------------------------------------------

# One table: its title, header, body rows (text), the notes under it, and how many of its first
# columns name the rows (set left-aligned; the numbers right-aligned).
Table = namedtuple("Table", "title header body notes labels")


def course_table(exp, rows, scale, current_builds=None):
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
    notes = Notes(len(configs) * len(variants))
    marks = BuildMarks([cells.get((json.dumps(p, sort_keys=True), v), Cell([])) for p in configs for v in variants],
                       current_builds)
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
                line.append("" if c is None else Num(c.median(), "time", marks.suffix(c)) if c.status == "ok"
                            else c.text())
                if c is not None and c.status != "ok":
                    notes.add_cell(c, f"{variant}, {col}", exp, scale)
            body.append(prefix + line if vi == 0 else [""] * len(prefix) + line)
            if vi > 0:
                line = [f"Speedup {variant}"]
                for col in columns:
                    base, c = cell(col, variants[0]), cell(col, variant)
                    ok = base is not None and c is not None and base.status == c.status == "ok"
                    line.append(Num(base.median() / c.median(), "speedup", marks.suffix(base, c)) if ok
                                else ("" if c is None else "-"))
                body.append([""] * len(prefix) + line)
        line = ["# iterations"]
        for col in columns:
            its, from_cells = {}, []
            for variant in variants:
                c = cell(col, variant)
                if c is not None and c.status == "ok":
                    its[variant] = c.iterations
                    from_cells.append(c)
            values = sorted(set(its.values()))
            if not values:
                line.append("-")
            elif len(values) == 1:
                line.append(str(values[0]) + marks.suffix(*from_cells))
            else:
                line.append("/".join(str(its[v]) for v in variants if v in its) + " (!)" + marks.suffix(*from_cells))
                notes.add(f"(!) {col}: the variants needed different numbers of iterations "
                          f"({', '.join(f'{v} {n}' for v, n in its.items())}): float sums round differently")
        body.append([""] * len(prefix) + line)
    header = ([exp.get("group_label", "# clusters")] if groups != [""] else []) + ["variant"] + columns
    marks.add_notes(notes)
    if exp.get("note"):
        notes.add(exp["note"])
    return [Table(fill_params(exp["title"], exp, configs), header, write_numbers(body), notes.lines(), len(prefix) + 1)]


def series_configs(table, configs):
    """The configurations one [[tables]] entry shows: those matching its `where`, by `x` (string
    values, such as data set names, in file order)."""
    chosen = [p for p in configs if all(p.get(k) == v for k, v in table.get("where", {}).items())]
    order = ordered(p[table["x"]] for p in chosen)
    return sorted(chosen, key=lambda p: order.index(p[table["x"]]))


def series_variants(exp, table):
    """The variants one [[tables]] entry shows: its `variants`, else all of the experiment's."""
    return table.get("variants") or [v["name"] for v in exp["variants"]]


def grid_table(exp, t, configs, cells, scale, current_builds=None):
    """A [[tables]] entry with `y`: rows x, columns y, a block of rows per variant, then the
    speedups over the first variant (Okuda & Fujimoto's Tables 1 and 2)."""
    metric = t["metric"]
    variants = series_variants(exp, t)
    chosen = [p for p in configs if all(p.get(k) == v for k, v in t.get("where", {}).items())]
    xs = ordered(p[t["x"]] for p in chosen)
    ys = ordered(p[t["y"]] for p in chosen)
    by_xy = {(p[t["x"]], p[t["y"]]): p for p in chosen}
    notes, body = Notes(len(by_xy) * len(variants)), []
    marks = BuildMarks([cells.get((json.dumps(by_xy[(xv, yv)], sort_keys=True), v), Cell([]))
                        for v in variants for xv in xs for yv in ys if (xv, yv) in by_xy], current_builds)

    def cell(xv, yv, v):
        p = by_xy.get((xv, yv))
        return None if p is None else cells.get((json.dumps(p, sort_keys=True), v), Cell([]))

    for v in variants:
        for i, xv in enumerate(xs):
            line = [f"{v}, {metric_header(metric)}" if i == 0 else "", str(xv)]
            for yv in ys:
                c = cell(xv, yv, v)
                line.append("" if c is None else metric_num(c.median(metric), metric, marks.suffix(c), v)
                            if c.status == "ok" else c.text())
                if c is not None and c.status != "ok":
                    notes.add_cell(c, f"{v}, {t['x']}={xv} {t['y']}={yv}", exp, scale)
            body.append(line)
    if t.get("speedup"):
        for v in variants[1:]:
            for i, xv in enumerate(xs):
                line = [f"speedup {v} vs {variants[0]}" if i == 0 else "", str(xv)]
                for yv in ys:
                    b, c = cell(xv, yv, variants[0]), cell(xv, yv, v)
                    ok = b is not None and c is not None and b.status == c.status == "ok" and c.median(metric) > 0
                    line.append(Num(b.median(metric) / c.median(metric), "speedup", "x" + marks.suffix(b, c), v) if ok
                                else ("" if c is None else "-"))
                body.append(line)
    header = ["variant", t["x"]] + [f"{t['y']}={yv}" for yv in ys]
    marks.add_notes(notes)
    if chosen:
        notes.add(metrics_note([metric], variants[0] if t.get("speedup") else None)
                  + f" Rows {t['x']}, columns {t['y']}.")
    else:
        notes.add(empty_note(exp, t, scale))
    return t["name"], Table(caption(exp, t, chosen), header, write_numbers(body), notes.lines(), 2)


def series_tables(exp, rows, scale, current_builds=None):
    configs = configurations(exp, scale)
    cells = cells_by_config(exp, rows, scale)
    out = []
    for t in exp.get("tables", []):
        if "y" in t:
            out.append(grid_table(exp, t, configs, cells, scale, current_builds))
            continue
        metrics = t["metric"].split(",")
        variants = series_variants(exp, t)
        chosen = series_configs(t, configs)
        speedups = variants[1:] if t.get("speedup") else []
        header = ([t["x"]] + [metric_header(m, v) for m in metrics for v in variants]
                  + [f"speedup {v} vs {variants[0]}" for v in speedups])
        notes, body = Notes(len(chosen) * len(variants)), []
        marks = BuildMarks([cells.get((json.dumps(p, sort_keys=True), v), Cell([])) for p in chosen for v in variants],
                           current_builds)
        for p in chosen:
            line = [str(p[t["x"]])]
            row_cells = {v: cells.get((json.dumps(p, sort_keys=True), v), Cell([])) for v in variants}
            for m in metrics:
                for v in variants:
                    c = row_cells[v]
                    line.append(metric_num(c.median(m), m, marks.suffix(c)) if c.status == "ok" else c.text())
                    if c.status != "ok":
                        notes.add_cell(c, f"{v}, {t['x']}={p[t['x']]}", exp, scale)
            base = row_cells[variants[0]]
            for v in speedups:
                c = row_cells[v]
                ok = base.status == "ok" and c.status == "ok" and c.median(metrics[0]) > 0
                line.append(Num(base.median(metrics[0]) / c.median(metrics[0]), "speedup", "x" + marks.suffix(base, c))
                            if ok else "-")
            body.append(line)
        marks.add_notes(notes)
        notes.add(metrics_note(metrics, variants[0] if speedups else None) if chosen else empty_note(exp, t, scale))
        out.append((t["name"], Table(caption(exp, t, chosen), header, write_numbers(body), notes.lines(), 1)))
    return out


def markdown(title, header, body, notes, labels=None):
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


def latex(title, header, body, notes, labels=2):
    cols = "l" * labels + "r" * (len(header) - labels)
    lines = [r"\begin{table}[htbp]", r"\centering", r"\scriptsize", rf"\caption{{{latex_escape(title)}}}",
             r"\resizebox{\linewidth}{!}{%", rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
             " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}}"]
    if notes:
        lines += [r"\par\smallskip\raggedright"] + [latex_escape(n) + r"\par" for n in notes]
    lines += [r"\end{table}"]
    return "\n".join(lines) + "\n"


def tables_of(exp, rows, scale, current_builds=None):
    """[(file stem, Table)] of one experiment. current_builds: {program: build id} of the programs
    the runner would run now (see BuildMarks), or None."""
    if exp["table"] == "course":
        return [(exp["name"], t) for t in course_table(exp, rows, scale, current_builds)]
    if exp["table"] == "series":
        return [(f"{exp['name']}_{name}", t) for name, t in series_tables(exp, rows, scale, current_builds)]
    raise ValueError(f"{exp['name']}: unknown table layout {exp['table']!r}")


def render(exp, rows, scale, current_builds=None):
    """[(file stem, markdown, latex)] of one experiment (current_builds as in tables_of)."""
    return [(stem, markdown(*t), latex(*t)) for stem, t in tables_of(exp, rows, scale, current_builds)]


# ---- staged files (the runner's CSV and the tables) ----------------------------------------------

# A staged copy is named <name>.<pid>.<8 mkstemp characters>.tmp; an older runner named it without
# the pid. clean_stale_staged() recognises both, and removes only what is provably stale.
STAGED = re.compile(r"^(?P<name>.+)\.(?P<pid>[0-9]+)\.[a-z0-9_]{8}\.tmp$")
STAGED_OLD = re.compile(r"^(?P<name>results\.csv|.+\.md|.+\.tex)\.[a-z0-9_]{8}\.tmp$")


def current_umask():
    """The process's umask, read without changing it where Linux allows (/proc), else set and restored."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path, fill, newline=None):
    """Writes path through a staged copy beside it that is renamed over path once complete, so a
    reader (or a crash) never sees half a file. fill(f) writes the content to the open text file f.
    The copy gets the mode open() would give a new file (0666 & ~umask), not mkstemp's 0600: results
    and tables are shared files. It is named with this process's pid, so that a later start can tell
    a dead writer's leftover from a live one's (clean_stale_staged); on any exception, a signal's
    included, it is removed before the exception goes on."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "w", newline=newline) as out:
            fill(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def pid_alive(pid):
    """False only when no process has this pid (a pid of another user's process counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def clean_stale_staged(folder, started):
    """Removes the staged copies a killed writer left in folder: those named with the pid of a
    process that no longer exists, and those of an older runner (no pid in the name) last written
    before `started` (this runner's start, time.time()). Returns the names removed."""
    removed = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for p in entries:
        m = STAGED.match(p.name)
        if m:
            stale = not pid_alive(int(m["pid"]))
        else:
            try:
                stale = bool(STAGED_OLD.match(p.name)) and p.stat().st_mtime < started
            except OSError:
                stale = False
        if stale and p.is_file():
            p.unlink(missing_ok=True)
            removed.append(p.name)
    return removed


def write_text_atomically(path, text):
    write_atomically(path, lambda out: out.write(text))


def write_all(exps, rows, scale, out_dir, echo=False, current_builds=None):
    """Writes <stem>.md and <stem>.tex per table, and all.md with every table, where the note that
    explains "n/a (no GPU)" is said once, at the top, instead of under each table; prints all.md if
    echo. current_builds as in tables_of."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    combined, shared = [], []
    for exp in exps:
        for stem, t in tables_of(exp, rows, scale, current_builds):
            write_text_atomically(out_dir / f"{stem}.md", markdown(*t))
            write_text_atomically(out_dir / f"{stem}.tex", latex(*t))
            shared += [n for n in t.notes if is_no_gpu_note(n) and n not in shared]
            combined.append(markdown(*t._replace(notes=[n for n in t.notes if not is_no_gpu_note(n)])))
    head = f"# The tables of the {scale} scale\n\n"
    if shared:
        head += "In every table below:\n\n" + "".join(f"- {n}\n" for n in shared) + "\n"
    text = head + "\n".join(combined)
    write_text_atomically(out_dir / "all.md", text)
    if echo:
        print("\n" + text, end="")
