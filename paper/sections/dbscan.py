"""sections/dbscan.py - the numbers that sections/dbscan.tex quotes (exact DBSCAN: the experiments
dclust, CUDA-DClust's Section 7, and dbscan_scaling), as macros \\pcDbscan..., from the results CSV.

numbers(m, exps, rows, scale, scale_dir, lib) is called by paper/numbers.py (section_numbers); lib is
that module. A value the CSV cannot give (a results file without one of the two experiments, without
their GPU runs, or a scale without a series) is lib.NA ("n/a"); the counts that the prose tests with
\\ifnum (ok runs, checked runs) are "0" then. Medians over the ok timed repetitions, as the tables.
"""
import json
import re
import statistics

DCLUST, SCALING = "dclust", "dbscan_scaling"
VARIANTS = (("seq", "Seq"), ("omp", "Omp"), ("gpu", "Gpu"))


def numbers(m, exps, rows, scale, scale_dir, lib):
    NA = lib.NA
    dclust, scaling = exps.get(DCLUST), exps.get(SCALING)

    def configs(exp):
        return lib.configurations(exp, scale) if exp and scale in exp["scales"] else []

    dc_configs, sc_configs = configs(dclust), configs(scaling)
    dc_cells = lib.cells_by_config(dclust, rows, scale) if dclust else {}
    sc_cells = lib.cells_by_config(scaling, rows, scale) if scaling else {}

    def table(exp, name):
        return next((t for t in (exp or {}).get("tables", []) if t["name"] == name), None)

    def series(exp, cfgs, name):
        """The configurations of [[tables]] entry `name`, sorted by its x (tables.py's series_configs)."""
        t = table(exp, name)
        if not t:
            return []
        chosen = [p for p in cfgs if all(p.get(k) == v for k, v in t.get("where", {}).items())]
        return sorted(chosen, key=lambda p: p[t["x"]])

    def dc(name):
        return series(dclust, dc_configs, name)

    def med(cells, p, v, metric="time"):
        """Median of `metric` of variant v in configuration p, None unless ok."""
        c = lib.series_cell(cells, p, v) if p is not None else lib.Cell([])
        return c.median(metric) if c.status == "ok" else None

    def ratio(a, b):
        return a / b if a is not None and b is not None and b > 0 else None

    def num(v):
        if v is None:
            return NA
        return lib.fmt_int(v) if isinstance(v, int) else f"{v:g}"

    def spread(values, fmt):
        values = [v for v in values if v is not None]
        return (fmt(min(values)), fmt(max(values))) if values else (NA, NA)

    def add_range(name, values, fmt, comment):
        lo, hi = spread(values, fmt)
        m.add(f"{name}Min", lo, comment + ": smallest")
        m.add(f"{name}Max", hi, comment + ": largest")

    # ---- setup: the experiments' parameters at this scale ------------------------------------------
    spec = dclust["scales"].get(scale, {}) if dclust else {}
    seq_variant = next((v for v in (dclust or {}).get("variants", []) if v["program"] == "seq"), {})
    m.add("pcDbscanRepeat", str(spec.get("repeat", NA)), "dclust: timed runs of omp and gpu")
    m.add("pcDbscanWarmup", str(spec.get("warmup", NA)), "dclust: untimed runs before them")
    m.add("pcDbscanSeqRepeat", str(seq_variant.get("repeat", spec.get("repeat", NA))), "dclust: timed runs of seq")
    m.add("pcDbscanBudget", str(spec.get("budget_s", NA)), "dclust: seconds a run")
    centers = re.search(r"centers=(\d+)", (dclust or {}).get("input", ""))
    m.add("pcDbscanCenters", centers.group(1) if centers else NA, "dclust: Gaussian clusters")

    def axis(name, key):
        values = sorted({p[key] for p in dc(name)})
        return (num(values[0]), num(values[-1])) if values else (NA, NA)

    for name, key, prefix in (("n_no_index_chains", "n", "None"), ("n_directory_chains", "n", "Dir"),
                              ("min_pts_chains", "min_pts", "MinPts"), ("eps_chains", "eps", "Eps"),
                              ("dims_chains", "d", "Dim")):
        lo, hi = axis(name, key)
        m.add(f"pcDbscan{prefix}Low", lo, f"dclust {name}: smallest {key}")
        m.add(f"pcDbscan{prefix}High", hi, f"dclust {name}: largest {key}")
    for key, macro in (("eps", "pcDbscanEpsFixed"), ("min_pts", "pcDbscanMinPtsFixed"), ("d", "pcDbscanDimFixed")):
        m.add(macro, axis("n_no_index_chains", key)[0], f"dclust: {key} where a series does not vary it")
    m.add("pcDbscanSeriesN", axis("min_pts_chains", "n")[0], "dclust: n of the MinPts, eps and d series")

    sspec = scaling["scales"].get(scale, {}) if scaling else {}
    m.add("pcDbscanScalingRepeat", str(sspec.get("repeat", NA)), "dbscan_scaling: timed runs")
    found = re.search(r"--min-pts\s+(\d+)", " ".join((scaling or {}).get("command", [])))
    m.add("pcDbscanScalingMinPts", found.group(1) if found else NA)
    found = re.search(r"centers=(\d+)", (scaling or {}).get("input", ""))
    m.add("pcDbscanScalingCenters", found.group(1) if found else NA)
    found = re.search(r"noise=([0-9.]+)", (scaling or {}).get("input", ""))
    m.add("pcDbscanScalingNoise", lib.fmt_percent(float(found.group(1))) if found else NA,
          "dbscan_scaling: the chance of a point to be uniform noise")
    ns = sorted({p["n"] for p in sc_configs})
    m.add("pcDbscanScalingNLow", num(ns[0]) if ns else NA)
    m.add("pcDbscanScalingNHigh", num(ns[-1]) if ns else NA)

    # the data columns of the profile tables (\pcWideTable: a landscape page above 8)
    for exp, name, macro in ((dclust, "profile", "pcDbscanProfileColumns"),
                             (dclust, "profile_union_find", "pcDbscanProfileUfColumns"),
                             (scaling, "profile_2d", "pcDbscanScalingProfileColumns")):
        t = table(exp, name)
        cols = 0
        if t:
            variants = t.get("variants") or [v["name"] for v in exp["variants"]]
            cols = len(t["metric"].split(",")) * len(variants) + (len(variants) - 1 if t.get("speedup") else 0)
        m.add(macro, str(cols), f"data columns of {name}")

    # ---- which runs the file has; agreement ----------------------------------------------------------
    m.add("pcDbscanAutoOkRuns", str(sum(1 for (k, _), c in dc_cells.items()
                                        if c.status == "ok" and json.loads(k).get("index") == "auto")),
          "dclust: ok (configuration, variant) runs with --index auto")
    m.add("pcDbscanScalingOkRuns", str(sum(1 for c in sc_cells.values() if c.status == "ok")),
          "dbscan_scaling: ok (configuration, variant) runs")
    mine = [r for r in rows if r["experiment"] in (DCLUST, SCALING) and r["scale"] == scale]
    oks = [r for r in mine if r["status"] == "ok"]
    threads = sorted({int(r["threads"]) for r in oks if r["program"] == "omp" and r["threads"]})
    m.add("pcDbscanThreads", "/".join(map(str, threads)) if threads else NA, "host threads of the omp runs")
    gpus = [r["gpu"] for r in oks if r["program"] == "gpu" and r["gpu"]]
    m.add("pcDbscanDevice", lib.latex_escape(max(set(gpus), key=gpus.count)) if gpus else NA, "GPU of the gpu runs")
    over = sorted({(json.loads(k)["n"], v) for (k, v), c in dc_cells.items()
                   if c.status in ("timeout", "skipped-budget")})
    m.add("pcDbscanOverBudgetWhere", ", ".join(f"{v} at $n = {lib.fmt_int(n)}$" for n, v in over) or "none",
          "dclust: runs over the time budget or skipped")
    # the runs of one data set and (eps, MinPts), whatever the program, method and index
    groups = {}
    for r in oks:
        if not r.get("clusters"):
            continue
        p = json.loads(r["params"])
        for k in ("method", "index", "series"):
            p.pop(k, None)
        groups.setdefault((r["experiment"], json.dumps(p, sort_keys=True)), set()).add((r["clusters"], r["noise"]))
    m.add("pcDbscanAgreeSets", str(len(groups)), "data sets and parameters with ok runs (both experiments)")
    m.add("pcDbscanAgreeSame", str(sum(1 for s in groups.values() if len(s) == 1)),
          "of them, those where every run reported the same numbers of clusters and noise points")
    m.add("pcDbscanChecked", str(sum(1 for r in oks if r.get("verified") == "yes")),
          "ok timed runs whose --check passed (verified = yes)")
    m.add("pcDbscanOkRows", str(len(oks)), "ok timed runs (rows) of both experiments")

    # ---- runtime vs n, per method and index ---------------------------------------------------------
    def both(chosen, cells, a, b):
        return [p for p in chosen if med(cells, p, a) is not None and med(cells, p, b) is not None]

    def speedup(cells, p, base, v):
        return ratio(med(cells, p, base), med(cells, p, v)) if p else None

    for name, prefix, wanted in (("n_no_index_chains", "NoneChains", ("Omp", "Gpu")),
                                 ("n_no_index_union_find", "NoneUf", ("Gpu",)),
                                 ("n_directory_chains", "DirChains", ("Gpu",)),
                                 ("n_directory_union_find", "DirUf", ("Omp", "Gpu"))):
        for v, vname in VARIANTS[1:]:
            if vname not in wanted:
                continue
            ok = both(dc(name), dc_cells, "seq", v)
            for end, p in (("Low", ok[0] if ok else None), ("High", ok[-1] if ok else None)):
                m.add(f"pcDbscan{prefix}{vname}{end}", lib.fmt_ratio(speedup(dc_cells, p, "seq", v)),
                      f"{name}: speedup of {v} over seq at the {'smallest' if end == 'Low' else 'largest'} n, both ok")
                quoted = (prefix, vname) in (("NoneChains", "Gpu"), ("DirChains", "Gpu"))
                if quoted or (prefix, end) == ("DirUf", "High"):
                    m.add(f"pcDbscan{prefix}{vname}{end}At", num(p["n"]) if p else NA)

    def method_ratio(a, b, v):
        """(run time of series a / of series b for variant v, n) at the largest n where both ran."""
        for p in reversed(dc(a)):
            q = next((q for q in dc(b) if q["n"] == p["n"]), None)
            r = ratio(med(dc_cells, p, v), med(dc_cells, q, v)) if q else None
            if r is not None:
                return r, p["n"]
        return None, None

    for a, b, v, macro, at in (("n_no_index_chains", "n_no_index_union_find", "seq", "NoneSeqChainsOverUf", True),
                               ("n_no_index_chains", "n_no_index_union_find", "omp", "NoneOmpChainsOverUf", False),
                               ("n_no_index_union_find", "n_no_index_chains", "gpu", "NoneGpuUfOverChains", False),
                               ("n_directory_chains", "n_directory_union_find", "gpu", "DirGpuChainsOverUf", True)):
        r, n = method_ratio(a, b, v)
        m.add(f"pcDbscan{macro}", lib.fmt_ratio(r), f"run time of {a} / of {b}, {v}, at the largest n with both")
        if at:
            m.add(f"pcDbscan{macro}At", num(n))

    # ---- MinPts, eps and d series ----------------------------------------------------------------------
    def growth(name, v):
        """Run time of v at the series' largest x over its run time at the smallest (both ok)."""
        ok = [p for p in dc(name) if med(dc_cells, p, v) is not None]
        return ratio(med(dc_cells, ok[-1], v), med(dc_cells, ok[0], v)) if len(ok) > 1 else None

    for name, prefix, variants in (("min_pts_chains", "MinPtsChains", ()), ("eps_chains", "EpsChains", ("seq", "gpu")),
                                   ("eps_union_find", "EpsUf", ("seq", "gpu")),
                                   ("dims_chains", "DimsChains", ("seq", "omp", "gpu"))):
        for v in variants:
            m.add(f"pcDbscan{prefix}{v.capitalize()}Growth", lib.fmt_ratio(growth(name, v)),
                  f"{name}: run time of {v} at the largest x / at the smallest")
    m.add("pcDbscanMinPtsChainsGpuGrowth", lib.fmt_ratio(growth("min_pts_chains", "gpu")),
          "min_pts_chains: run time of gpu at the largest MinPts / at the smallest")
    for name, prefix in (("min_pts_chains", "MinPtsChainsGpu"), ("min_pts_union_find", "MinPtsUfGpu"),
                         ("min_pts_auto", "MinPtsAutoGpu"), ("dims_auto", "DimsAutoGpu")):
        add_range(f"pcDbscan{prefix}", [med(dc_cells, p, "gpu") for p in dc(name)], lib.fmt_seconds,
                  f"{name}: run time of gpu")
    for name, prefix in (("eps_chains", "EpsChains"), ("eps_union_find", "EpsUf"), ("dims_chains", "DimsChains"),
                         ("dims_union_find", "DimsUf")):
        chosen = dc(name)
        for end, p in (("Low", chosen[0] if chosen else None), ("High", chosen[-1] if chosen else None)):
            m.add(f"pcDbscan{prefix}GpuSpeedup{end}", lib.fmt_ratio(speedup(dc_cells, p, "seq", "gpu")),
                  f"{name}: speedup of gpu over seq at the {'smallest' if end == 'Low' else 'largest'} x")

    # the directory against --index auto (union-find), same data and parameters
    for axis_name, camel, variants in (("min_pts", "MinPts", ("seq", "gpu")), ("eps", "Eps", ("seq", "gpu")),
                                       ("dims", "Dims", ("seq", "omp", "gpu"))):
        direc = dc(f"{axis_name}_union_find")
        for v in variants:
            rs = []
            for p in dc(f"{axis_name}_auto"):
                q = next((q for q in direc if all(q.get(k) == p.get(k) for k in ("n", "d", "eps", "min_pts"))), None)
                rs.append(ratio(med(dc_cells, q, v), med(dc_cells, p, v)) if q else None)
            add_range(f"pcDbscanAutoGain{camel}{v.capitalize()}", rs, lib.fmt_ratio,
                      f"{axis_name}: run time with the directory / with --index auto, union-find, {v}")

    # ---- profiles: the index build and the phases ----------------------------------------------------
    for v, vname in VARIANTS:
        add_range(f"pcDbscanIndexShare{vname}",
                  [ratio(med(dc_cells, p, v, "index"), med(dc_cells, p, v)) for p in dc("index_build")],
                  lib.fmt_percent, f"index_build: index phase / run time of {v}")

    def top_ok(cells, chosen, v):
        ok = [p for p in chosen if med(cells, p, v) is not None]
        return ok[-1] if ok else None

    def share(cells, p, v, phase):
        return lib.fmt_percent(ratio(med(cells, p, v, phase), med(cells, p, v)) if p else None)

    for name, prefix, wanted in (("profile", "ProfChains", {"seq": ("connect",), "omp": ("connect",),
                                                           "gpu": ("connect",)}),
                                 ("profile_union_find", "ProfUf", {"seq": ("core", "connect"),
                                                                   "gpu": ("index", "core", "connect")})):
        for v, vname in VARIANTS:
            if v not in wanted:
                continue
            p = top_ok(dc_cells, dc(name), v)
            if v != "gpu":
                m.add(f"pcDbscan{prefix}{vname}At", num(p["n"]) if p else NA, f"{name}: the largest n where {v} ran")
            for ph in wanted[v]:
                m.add(f"pcDbscan{prefix}{vname}{ph.capitalize()}", share(dc_cells, p, v, ph),
                      f"{name}: {ph} / run time of {v} at its largest n")

    # ---- scaling in 2-D and 3-D ---------------------------------------------------------------------
    for d, tag in ((2, "Two"), (3, "Three")):
        chosen = series(scaling, sc_configs, f"runtime_{d}d")
        ok = both(chosen, sc_cells, "omp", "gpu")
        for end, p in (("Low", ok[0] if ok else None), ("High", ok[-1] if ok else None)):
            m.add(f"pcDbscanScale{tag}Speedup{end}", lib.fmt_ratio(speedup(sc_cells, p, "omp", "gpu")),
                  f"runtime_{d}d: speedup of gpu over omp at the {'smallest' if end == 'Low' else 'largest'} n")
            if d == 2:
                m.add(f"pcDbscanScale{tag}Speedup{end}At", num(p["n"]) if p else NA)
        for v, vname in VARIANTS[1:]:
            vok = [p for p in chosen if med(sc_cells, p, v) is not None]
            top = vok[-1] if vok else None
            m.add(f"pcDbscanScale{tag}{vname}Top", lib.fmt_seconds(med(sc_cells, top, v)),
                  f"runtime_{d}d: run time of {v} at its largest ok n")
            if d == 2:
                m.add(f"pcDbscanScale{tag}{vname}TopAt", num(top["n"]) if top else NA)
            m.add(f"pcDbscanScale{tag}{vname}Growth",
                  lib.fmt_ratio(ratio(med(sc_cells, top, v), med(sc_cells, vok[0], v)) if len(vok) > 1 else None),
                  f"runtime_{d}d: run time of {v} at its largest ok n / at its smallest")
            if d == 2 and v == "gpu":
                m.add("pcDbscanScaleTwoGpuGrowthN", lib.fmt_ratio(vok[-1]["n"] / vok[0]["n"]) if len(vok) > 1 else NA,
                      "the ratio of those n")
                rate = top["n"] / med(sc_cells, top, v) / 1e6 if top else None
                m.add("pcDbscanScaleTwoGpuRate", f"{rate:.0f}" if rate else NA, "million points a second, gpu, 2-D")
            for ph in ("index", "connect"):
                m.add(f"pcDbscanScale{tag}{vname}{ph.capitalize()}", share(sc_cells, top, v, ph),
                      f"profile_{d}d: {ph} / run time of {v} at its largest ok n")
            if v == "gpu":
                c = lib.series_cell(sc_cells, top, v) if top else lib.Cell([])
                part = statistics.median((float(r["h2d_s"]) + float(r["d2h_s"])) / float(r["total_s"])
                                         for r in c.rows) if c.status == "ok" else None
                m.add(f"pcDbscanScale{tag}GpuTransfers", lib.fmt_percent(part),
                      f"runtime_{d}d: (h2d + d2h) / run time of gpu at its largest ok n")

    # ---- what the cores and the GPU bought, over every dclust configuration ---------------------------
    axis_of = {"n_none": ("n", "n"), "n_directory": ("n", "n"), "min_pts": ("min_pts", "\\mathrm{MinPts}"),
               "eps": ("eps", "\\varepsilon"), "dims": ("d", "d")}

    def where(p):
        key, sym = axis_of.get(p.get("series"), ("n", "n"))
        index = {"none": "no index", "auto": "\\texttt{-{}-index auto}"}.get(p.get("index"), p.get("index", ""))
        return f"{p.get('method', '')}, {index}, ${sym} = {num(p.get(key))}$"

    for v, vname in VARIANTS[1:]:
        sp = [(r, p) for p in dc_configs if (r := speedup(dc_cells, p, "seq", v)) is not None]
        add_range(f"pcDbscanAll{vname}", [r for r, _ in sp], lib.fmt_ratio,
                  f"dclust: speedup of {v} over seq, every configuration")
        m.add(f"pcDbscanAll{vname}MinWhere", where(min(sp, key=lambda t: t[0])[1]) if sp else NA)
        m.add(f"pcDbscanAll{vname}MaxWhere", where(max(sp, key=lambda t: t[0])[1]) if sp else NA)
        m.add(f"pcDbscanAll{vname}Median", lib.fmt_ratio(statistics.median(r for r, _ in sp)) if sp else NA)
        m.add(f"pcDbscanAll{vname}Pairs", str(len(sp)), f"configurations with seq and {v} ok")
    gpu_omp = [r for p in dc_configs if (r := speedup(dc_cells, p, "omp", "gpu")) is not None]
    add_range("pcDbscanAllGpuOverOmp", gpu_omp, lib.fmt_ratio, "dclust: run time of omp / of gpu")
    m.add("pcDbscanAllGpuOverOmpPairs", str(len(gpu_omp)), "configurations with omp and gpu ok")
    m.add("pcDbscanAllGpuSlowerThanOmp", str(sum(1 for r in gpu_omp if r < 1)), "of them, gpu the slower")
