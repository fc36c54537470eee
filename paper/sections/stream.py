"""sections/stream.py - the numbers that sections/stream.tex quotes (Cao et al.'s stream clustering:
the cao_stream and cao_window experiments), as macros \\pcStream..., from the results CSV.

numbers(m, exps, rows, scale, scale_dir, lib) is called by paper/numbers.py (section_numbers).
Every value is lib.NA ("n/a") where the CSV lacks the runs it needs (a results file without these
experiments or without their GPU runs). Two flags tell the prose what exists: \\pcStreamDataFlag
(any ok run of the two experiments) and \\pcStreamGpuFlag (any ok gpu run), each "true" or "false"
for the \\newif switches of stream.tex. No macro name here begins with pcStreamkm (streaming.py's).
"""
import math
import re
import statistics
from pathlib import Path

ENTIRE, WINDOW = "cao_stream", "cao_window"


def default_epsilon(lib):
    """STRM_DEFAULT_EPSILON of algorithms/stream.h (the block size m = n^epsilon), or None."""
    try:
        text = (lib.REPO / "algorithms" / "stream.h").read_text()
    except OSError:
        return None
    found = re.search(r"#define\s+STRM_DEFAULT_EPSILON\s+([0-9.]+)", text)
    return float(found.group(1)) if found else None


def numbers(m, exps, rows, scale, scale_dir, lib):
    m = lib.QuotedMacros(m, Path(__file__).with_suffix(".tex"), "pcStream")
    NA = lib.NA
    entire, window = exps.get(ENTIRE), exps.get(WINDOW)
    mine = [r for r in rows if r["scale"] == scale and r["experiment"] in (ENTIRE, WINDOW) and r["status"] == "ok"]
    m.add("pcStreamDataFlag", "true" if mine else "false", "any ok run of cao_stream or cao_window")
    m.add("pcStreamGpuFlag", "true" if any(r["program"] == "gpu" for r in mine) else "false", "any ok gpu run")
    threads = sorted({int(r["threads"]) for r in mine if r["program"] == "omp" and r["threads"]})
    m.add("pcStreamThreads", "/".join(map(str, threads)) if threads else NA, "host threads of their omp runs")

    def configs(exp):
        return sorted(lib.configurations(exp, scale), key=lambda p: p["n"]) if exp and scale in exp["scales"] else []

    def cells(exp):
        return lib.cells_by_config(exp, rows, scale) if exp else {}

    def names(exp):
        """The variants by role: the sequential one, omp, GPU-L (--update host) and GPU-C."""
        out = {}
        for v in (exp or {}).get("variants", []):
            role = v["program"]
            if role == "gpu":
                role = "gpul" if "host" in v.get("args", []) else "gpuc"
            out[role] = v["name"]
        return out

    def cell(cs, p, v):
        return lib.series_cell(cs, p, v) if p is not None and v is not None else lib.Cell([])

    def med(cs, p, v, metric="time"):
        c = cell(cs, p, v)
        return c.median(metric) if c.status == "ok" else None

    def column(cs, p, v, key):
        """The median of a CSV column (seconds) over the ok repetitions, or None."""
        c = cell(cs, p, v)
        return statistics.median(float(r[key] or 0) for r in c.rows) if c.status == "ok" else None

    def ratio(a, b):
        return a / b if a is not None and b is not None and b > 0 else None

    eps = default_epsilon(lib)

    def block(base, k):
        """strm_block_size with the default epsilon: max(ceil(base^epsilon), 2k), at most base."""
        if eps is None:
            return None
        size = max(math.ceil(base ** eps), 2 * k)
        return min(size, base)

    def per_pass(cs, p, v):
        """The k-means work of a run (assign, update and both transfers) over its Lloyd passes (s)."""
        c = cell(cs, p, v)
        if c.status != "ok" or not c.iterations:
            return None
        return statistics.median(sum(float(r[k] or 0) for k in ("assign_s", "update_s", "h2d_s", "d2h_s"))
                                 / int(r["iterations"]) for r in c.rows)

    def same_ssq(exp, cfgs, cs):
        same = compared = 0
        for p in cfgs:
            got = [c for c in (cell(cs, p, v["name"]) for v in exp["variants"]) if c.status == "ok"]
            if len(got) >= 2:
                compared += 1
                same += len({c.median("sse") for c in got}) == 1
        return same, compared

    total_same = total_compared = 0
    for exp, prefix, base_of in ((entire, "pcStreamEntire", lambda p: p["n"]),
                                 (window, "pcStreamWindow", lambda p: p["window"])):
        cfgs, cs, v = configs(exp), cells(exp), names(exp)
        lo, hi = (cfgs[0], cfgs[-1]) if cfgs else (None, None)
        m.add(f"{prefix}D", str(lo["d"]) if lo else NA, f"{exp and exp['name']}: d")
        m.add(f"{prefix}K", str(lo["k"]) if lo else NA, "k (and the number of Gaussian clusters)")
        m.add(f"{prefix}Nmin", lib.fmt_int(lo["n"]) if lo else NA, "the shortest stream")
        m.add(f"{prefix}Nmax", lib.fmt_int(hi["n"]) if hi else NA, "the longest stream")
        m.add(f"{prefix}BlockLow", lib.fmt_int(block(base_of(lo), lo["k"])) if lo and eps else NA,
              "points per block (bucket) at the shortest stream")
        m.add(f"{prefix}BlockHigh", lib.fmt_int(block(base_of(hi), hi["k"])) if hi and eps else NA,
              "... at the longest")
        m.add(f"{prefix}Blocks", lib.fmt_int(math.ceil(hi["n"] / block(base_of(hi), hi["k"]))) if hi and eps else NA,
              "blocks (buckets) of the longest stream")
        base = v.get("seq")
        for role, name in (("omp", "Omp"), ("gpul", "GpuL"), ("gpuc", "GpuC")):
            for at, p in (("Low", lo), ("High", hi)):
                r = ratio(med(cs, p, base), med(cs, p, v.get(role)))
                m.add(f"{prefix}{name}Speedup{at}", lib.fmt_ratio(r), f"run time of {base} / {v.get(role)}, {at} n")
                m.add(f"{prefix}{name}Slowdown{at}", lib.fmt_ratio(1 / r) if r else NA, "its inverse")
            # clustering alone: the run time less the generation of the stream
            a, b = (med(cs, hi, base), med(cs, hi, v.get(role)))
            ga, gb = column(cs, hi, base, "generation_s"), column(cs, hi, v.get(role), "generation_s")
            r = ratio(a - ga, b - gb) if None not in (a, b, ga, gb) else None
            m.add(f"{prefix}{name}ClusterSpeedup", lib.fmt_ratio(r), "the same without the generation, longest stream")
            m.add(f"{prefix}{name}ClusterSlowdown", lib.fmt_ratio(1 / r) if r else NA, "its inverse")
            faster = [p for p in cfgs if (ratio(med(cs, p, base), med(cs, p, v.get(role))) or 0) > 1]
            m.add(f"{prefix}{name}FasterFrom", lib.fmt_int(faster[0]["n"]) if faster else "none",
                  f"the shortest stream on which {v.get(role)} beat {base}")
            pp = per_pass(cs, hi, v.get(role))
            m.add(f"{prefix}{name}PerPass", lib.fmt_seconds(pp), "k-means work per Lloyd pass, longest stream")
            sd = column(cs, hi, v.get(role), "seeding_s")
            m.add(f"{prefix}{name}SeedShare", lib.fmt_percent(ratio(sd, med(cs, hi, v.get(role)))),
                  "seeding / run time, longest stream")
            m.add(f"{prefix}{name}SeedRatio", lib.fmt_ratio(ratio(sd, column(cs, hi, base, "seeding_s"))),
                  f"seeding of {v.get(role)} / of {base}, longest stream")
        m.add(f"{prefix}SeqPerPass", lib.fmt_seconds(per_pass(cs, hi, base)), f"{base}: k-means work per Lloyd pass")
        gen = ratio(column(cs, hi, base, "generation_s"), med(cs, hi, base))
        m.add(f"{prefix}SeqGenShare", lib.fmt_percent(gen), f"generation / run time of {base}, longest stream")
        gen = ratio(column(cs, hi, v.get("gpuc"), "generation_s"), med(cs, hi, v.get("gpuc")))
        m.add(f"{prefix}GpuCGenShare", lib.fmt_percent(gen), "the same of GPU-C")
        its = {cell(cs, hi, name).iterations for name in v.values() if cell(cs, hi, name).status == "ok"}
        m.add(f"{prefix}Passes", lib.fmt_int(next(iter(its))) if len(its) == 1 else NA,
              "Lloyd passes of the longest stream (n/a: none, or they differ between variants)")
        m.add(f"{prefix}PassesText", f"Every program made the same {lib.fmt_int(next(iter(its)))} Lloyd passes on that "
              "stream" if len(its) == 1 else "The programs made different numbers of Lloyd passes on that stream"
              if its else "No program finished that stream", "a sentence on the Lloyd passes of the longest stream")
        faster = [p for p in cfgs if (ratio(med(cs, p, base), med(cs, p, v.get("gpuc"))) or 0) > 1]
        m.add(f"{prefix}GpuCFasterText", f"GPU-C was faster than the sequential program from $n$ = "
              f"{lib.fmt_int(faster[0]['n'])} on" if faster else "GPU-C was never faster than the sequential program",
              "a phrase: the shortest stream on which GPU-C beat the sequential program")
        beat = [(p, role) for p in cfgs for role in ("omp", "gpul", "gpuc")
                if (ratio(med(cs, p, base), med(cs, p, v.get(role))) or 0) > 1]
        compared = [(p, role) for p in cfgs for role in ("omp", "gpul", "gpuc")
                    if ratio(med(cs, p, base), med(cs, p, v.get(role))) is not None]
        m.add(f"{prefix}Verdict", "no parallel program was faster than the sequential one on any stream"
              if compared and not beat else f"a parallel program was faster than the sequential one in {len(beat)} of "
              f"{len(compared)} comparisons" if compared else "no parallel program could be compared with the "
              "sequential one", "a phrase: did any parallel program beat the sequential one")
        # the phases of the sequential program and of GPU-L (the phases table), longest stream
        for key, name in (("seeding_s", "Seeding"), ("assign_s", "Assign"), ("update_s", "Update")):
            r = ratio(column(cs, hi, v.get("gpul"), key), column(cs, hi, base, key))
            m.add(f"{prefix}GpuLOverSeq{name}", lib.fmt_ratio(r), f"{key} of GPU-L / of {base}, longest stream")
        same, compared = same_ssq(exp, cfgs, cs) if exp else (0, 0)
        total_same, total_compared = total_same + same, total_compared + compared
    m.add("pcStreamSameSsq", str(total_same), "configurations where every variant that finished gave the same SSQ")
    m.add("pcStreamCompared", str(total_compared), "configurations where two or more variants finished")
    spec = (window or {}).get("scales", {}).get(scale, {})
    axes = spec.get("axes", {})
    m.add("pcStreamWindowN", lib.fmt_int(axes["window"][0]) if axes.get("window") else NA, "the window N")
    m.add("pcStreamEpsilon", f"{eps:g}" if eps else NA, "STRM_DEFAULT_EPSILON")
