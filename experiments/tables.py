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
Every number names its build where the reader could not assume it (BuildMarks): "(b1)" after a
number, and a note naming build b1, when one program's numbers in a table come from several
builds (a runner kept older rows with --reuse-other-builds); one note when they all come from a
build other than the program's current one.
"""
import json
import os
import re
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
        self.reason = "" if ok else (rows[0].get("reason", "") if rows else "not run yet")
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


def and_join(words):
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


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
    notes = Notes()
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
                line.append("" if c is None else fmt_time(c.median()) + marks.suffix(c) if c.status == "ok"
                            else c.text())
                if c is not None and c.status != "ok":
                    notes.add(note_for(c, f"{variant}, {col}", exp, scale))
            body.append(prefix + line if vi == 0 else [""] * len(prefix) + line)
            if vi > 0:
                line = [f"Speedup {variant}"]
                for col in columns:
                    base, c = cell(col, variants[0]), cell(col, variant)
                    ok = base is not None and c is not None and base.status == c.status == "ok"
                    line.append(f"{base.median() / c.median():.2f}{marks.suffix(base, c)}" if ok
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


def grid_table(exp, t, configs, cells, scale, current_builds=None):
    """A [[tables]] entry with `y`: rows x, columns y, a block of rows per variant, then the
    speedups over the first variant (Okuda & Fujimoto's Tables 1 and 2)."""
    metric = t["metric"]
    variants = series_variants(exp, t)
    chosen = [p for p in configs if all(p.get(k) == v for k, v in t.get("where", {}).items())]
    xs = ordered(p[t["x"]] for p in chosen)
    ys = ordered(p[t["y"]] for p in chosen)
    by_xy = {(p[t["x"]], p[t["y"]]): p for p in chosen}
    notes, body = Notes(), []
    marks = BuildMarks([cells.get((json.dumps(by_xy[(xv, yv)], sort_keys=True), v), Cell([]))
                        for v in variants for xv in xs for yv in ys if (xv, yv) in by_xy], current_builds)

    def cell(xv, yv, v):
        p = by_xy.get((xv, yv))
        return None if p is None else cells.get((json.dumps(p, sort_keys=True), v), Cell([]))

    for v in variants:
        for i, xv in enumerate(xs):
            line = [v if i == 0 else "", str(xv)]
            for yv in ys:
                c = cell(xv, yv, v)
                line.append("" if c is None else fmt_value(c.median(metric), metric) + marks.suffix(c)
                            if c.status == "ok" else c.text())
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
                    line.append(f"{b.median(metric) / c.median(metric):.3g}x{marks.suffix(b, c)}" if ok
                                else ("" if c is None else "-"))
                body.append(line)
    header = ["variant", t["x"]] + [f"{t['y']}={yv}" for yv in ys]
    marks.add_notes(notes)
    notes.add(f"Median of the timed repetitions{units_note([metric])}; rows {t['x']}, columns {t['y']}."
              + (f" Speedup: the {variants[0]} time over each variant's." if t.get("speedup") else ""))
    return (f"{exp['title']}. {t['caption']}", header, body, notes.items, t["name"])


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
        header = ([t["x"]] + [f"{m} {v}" if len(metrics) > 1 else v for m in metrics for v in variants]
                  + [f"{v} vs {variants[0]}" for v in speedups])
        notes, body = Notes(), []
        marks = BuildMarks([cells.get((json.dumps(p, sort_keys=True), v), Cell([])) for p in chosen for v in variants],
                           current_builds)
        for p in chosen:
            line = [str(p[t["x"]])]
            row_cells = {v: cells.get((json.dumps(p, sort_keys=True), v), Cell([])) for v in variants}
            for m in metrics:
                for v in variants:
                    c = row_cells[v]
                    line.append(fmt_value(c.median(m), m) + marks.suffix(c) if c.status == "ok" else c.text())
                    if c.status != "ok":
                        notes.add(note_for(c, f"{v}, {t['x']}={p[t['x']]}", exp, scale))
            base = row_cells[variants[0]]
            for v in speedups:
                c = row_cells[v]
                ok = base.status == "ok" and c.status == "ok" and c.median(metrics[0]) > 0
                line.append(f"{base.median(metrics[0]) / c.median(metrics[0]):.3g}x{marks.suffix(base, c)}" if ok
                            else "-")
            body.append(line)
        marks.add_notes(notes)
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


def render(exp, rows, scale, current_builds=None):
    """[(file stem, markdown, latex)] of one experiment. current_builds: {program: build id} of the
    programs the runner would run now (see BuildMarks), or None."""
    if exp["table"] == "course":
        return [(exp["name"], markdown(*t), latex(*t)) for t in course_table(exp, rows, scale, current_builds)]
    if exp["table"] == "series":
        return [(f"{exp['name']}_{t[4]}", markdown(*t[:4]), latex(*t[:4]))
                for t in series_tables(exp, rows, scale, current_builds)]
    raise ValueError(f"{exp['name']}: unknown table layout {exp['table']!r}")


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
    """Writes <stem>.md and <stem>.tex per table and all.md with every table; prints them if echo.
    current_builds as in render()."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    combined = []
    for exp in exps:
        for stem, md, tex in render(exp, rows, scale, current_builds):
            write_text_atomically(out_dir / f"{stem}.md", md)
            write_text_atomically(out_dir / f"{stem}.tex", tex)
            combined.append(md)
    write_text_atomically(out_dir / "all.md", "\n".join(combined))
    if echo:
        print("\n" + "\n".join(combined))
        print(f"tables written to {out_dir}/ (Markdown and LaTeX)")
