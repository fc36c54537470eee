"""spec.py - experiment files: reading them and expanding their parameter grids.

An experiment file (experiments/NAME.toml) declares: title, table (layout, see tables.py),
command (argument template after the program name), input (template of the INPUT argument),
optional prepare (a gen: spec written to `input` before the first run), variants (name,
program = seq|omp|gpu, optional args), and per scale (smoke, default, paper) either `axes`
(one grid) or `grids` (a list of grids), with repeat, warmup and budget_s (seconds per run).
The title and the tables' captions name parameters as placeholders ("|S_i| = {n}"), which
tables.py fills with the values of the rows each table shows.
"""
import itertools
import json
import tomllib
from pathlib import Path


class ExperimentError(Exception):
    """A malformed experiment file: the message names the file and the problem."""


def load_experiment(path):
    """Reads one experiment file into a dict with its name; raises ExperimentError."""
    try:
        with open(path, "rb") as f:
            exp = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ExperimentError(f"{path}: {e}") from None
    exp["name"] = Path(path).stem
    for key in ("title", "command", "input", "variants", "scales", "table"):
        if key not in exp:
            raise ExperimentError(f"{path}: missing '{key}'")
    for v in exp["variants"]:
        if v.get("program") not in ("seq", "omp", "gpu"):
            raise ExperimentError(f"{path}: variant {v.get('name')!r} needs program = seq, omp or gpu")
    return exp


def configurations(exp, scale):
    """The parameter dicts of one scale, in file order, without duplicates. Axis values are
    scalars (bound to the axis name) or tables (several parameters at once)."""
    spec = exp["scales"].get(scale)
    if spec is None:
        raise ExperimentError(f"{exp['name']}: no [scales.{scale}] section")
    grids = spec.get("grids") or [spec.get("axes", {})]
    seen, out = set(), []
    for grid in grids:
        names = list(grid)
        for combo in itertools.product(*(grid[name] for name in names)):
            params = {}
            for name, value in zip(names, combo):
                params.update(value if isinstance(value, dict) else {name: value})
            key = json.dumps(params, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(params)
    return out


def config_id(params):
    return ",".join(f"{k}={params[k]}" for k in sorted(params))


def fill(template, values):
    try:
        return template.format(**values)
    except KeyError as e:
        raise ExperimentError(f"template {template!r} uses {e}, which the configuration does not set") from None




def select_experiments(paths, only=None):
    """Loads the experiment files `paths`; with `only` (comma-separated names) keeps those,
    raising ExperimentError for a name that matches none."""
    exps = [load_experiment(p) for p in paths]
    if only:
        wanted = set(only.split(","))
        unknown = wanted - {e["name"] for e in exps}
        if unknown:
            raise ExperimentError(f"--only: no experiment named {', '.join(sorted(unknown))}")
        exps = [e for e in exps if e["name"] in wanted]
    return exps
