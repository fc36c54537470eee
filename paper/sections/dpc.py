"""dpc.py - the numbers of sections/dpc.tex (density peaks, GDPC's section 6) from the results CSV.

numbers(m, exps, rows, scale, scale_dir, lib) adds the \\pcDpc... macros: the experiments' settings
(repetitions, budgets, batch size), and from the ok runs of gdpc_datasets, gdpc_scaling and
gdpc_incremental the speedups of omp and gpu over seq (VP-tree and all pairs), the VP-tree's
distance computations against all pairs, phase shares, the GPU tree build's sort launches (the
count follows dpc.c's tree_build from n), and the incremental batches against recomputation.
A value the CSV cannot give is lib.NA; the counts of ok runs (\\pcDpcDsOk, ...) let the prose
test with \\ifnum whether there is anything to describe.
"""
import json


def bitonic_launches(n, leaf=32):
    """(target regions of the GPU build's bitonic sort, tree height) for n points, as in dpc.c's
    tree_build: h levels until a leaf holds at most VPT_LEAF points; at level l every node's block
    is padded to P = next_pow2(ceil(n / 2^l)) and the network takes log P (log P + 1) / 2 steps,
    one launch each."""
    h = 0
    while (n + (1 << h) - 1) >> h > leaf:
        h += 1
    total = 0
    for level in range(h):
        size = (n + (1 << level) - 1) >> level
        p = 1
        while p < size:
            p <<= 1
        steps = p.bit_length() - 1
        total += steps * (steps + 1) // 2
    return total, h


def numbers(m, exps, rows, scale, scale_dir, lib):
    NA = lib.NA

    def add(name, value, comment=""):
        m.add("pcDpc" + name, value, comment)

    def ratio(a, b):
        return a / b if a is not None and b not in (None, 0) else None

    def setup(name):
        exp = exps.get(name)
        if not exp:
            return None, [], {}
        return exp, lib.configurations(exp, scale), lib.cells_by_config(exp, rows, scale)

    def med(cells, p, v, metric):
        """The median of a metric over the ok rows of (p, v); None without them or without the value."""
        c = lib.series_cell(cells, p, v) if p is not None else lib.Cell([])
        try:
            return c.median(metric) if c.status == "ok" else None
        except (KeyError, ValueError, ZeroDivisionError):  # a column this row does not fill
            return None

    def rel(cells, p, a, b, metric):
        """metric of variant a / of variant b in configuration p."""
        return ratio(med(cells, p, a, metric), med(cells, p, b, metric))

    def ok_count(exp, cells, variant=None):
        return sum(1 for (key, v), c in cells.items() if c.status == "ok" and (variant is None or v == variant))

    def spec_of(exp):
        return exp["scales"].get(scale, {}) if exp else {}

    def label_n(exp, label):
        """n of a data set, from its ok rows (None without one)."""
        ns = {int(r["n"]) for r in rows if exp and r["experiment"] == exp["name"] and r["scale"] == scale
              and r["status"] == "ok" and r["n"] and json.loads(r["params"]).get("label") == label}
        return max(ns) if ns else None

    def where_label(label):
        return lib.latex_escape(label) if label else NA

    threads = sorted({int(r["threads"]) for r in rows if r["experiment"].startswith("gdpc_") and r["scale"] == scale
                      and r["status"] == "ok" and r["program"] == "omp" and r["threads"]})
    add("Threads", "/".join(map(str, threads)) if threads else NA, "host threads of the gdpc omp runs")
    add("OmpOk", str(sum(1 for r in rows if r["experiment"].startswith("gdpc_") and r["scale"] == scale
                         and r["status"] == "ok" and r["program"] == "omp")), "ok omp rows of the gdpc experiments")
    gpus = sorted({r["gpu"] for r in rows if r["experiment"].startswith("gdpc_") and r["scale"] == scale
                   and r["status"] == "ok" and r["program"] == "gpu"})
    add("Device", lib.latex_escape(", ".join(gpus)) if gpus else NA, "GPU of the gdpc gpu runs")

    # ---- gdpc_datasets: per data set, VP-tree and all pairs ------------------------------------
    exp, configs, cells = setup("gdpc_datasets")
    spec = spec_of(exp)
    seq_v = next((v for v in exp["variants"] if v["name"] == "seq"), {}) if exp else {}
    add("DsRepeat", str(spec.get("repeat", NA)), "timed runs of omp and gpu per configuration")
    add("DsWarmup", str(spec.get("warmup", NA)))
    add("SeqRepeat", str(seq_v.get("repeat", spec.get("repeat", NA))) if exp else NA, "timed runs of seq")
    add("DsBudget", str(spec.get("budget_s", NA)), "seconds per run")
    add("DsOk", str(ok_count(exp, cells)), "ok (configuration, variant) cells of gdpc_datasets")
    add("DsGpuOk", str(ok_count(exp, cells, "gpu")))
    labels = list(dict.fromkeys(p["label"] for p in configs))
    by = {(p["label"], p["index"]): p for p in configs}
    add("DsSets", str(len(labels)) if labels else NA, "data sets of gdpc_datasets")
    missing = [lab for lab in labels for ix in ("vptree", "none") for v in ("seq", "omp", "gpu")
               if lib.series_cell(cells, by[(lab, ix)], v).status == "missing-data"]
    add("DsMissing", lib.latex_escape(", ".join(dict.fromkeys(missing))) if missing else "none", "data sets not found")

    def any_ok(p, metric):
        for v in ("seq", "omp", "gpu"):
            x = med(cells, p, v, metric)
            if x is not None:
                return x
        return None

    # distance computations of the VP-tree against all pairs (the same in every variant)
    shares = []
    for lab in labels:
        r = ratio(any_ok(by[(lab, "vptree")], "distances"), any_ok(by[(lab, "none")], "distances"))
        if r is not None:
            shares.append((r, lab))
    lo, hi = (min(shares), max(shares)) if shares else (None, None)
    add("DsShareMin", lib.fmt_percent(lo[0]) if lo else NA, "VP-tree distances / all-pairs distances, smallest")
    add("DsShareMinWhere", where_label(lo[1]) if lo else NA)
    add("DsShareMax", lib.fmt_percent(hi[0]) if hi else NA)
    add("DsShareMaxWhere", where_label(hi[1]) if hi else NA)

    # speedups over seq, per index and variant
    for ix, ixname in (("vptree", "Tree"), ("none", "Pairs")):
        for v, vname in (("omp", "Omp"), ("gpu", "Gpu")):
            sp = []
            for lab in labels:
                r = ratio(med(cells, by[(lab, ix)], "seq", "time"), med(cells, by[(lab, ix)], v, "time"))
                if r is not None:
                    sp.append((r, lab))
            lo, hi = (min(sp), max(sp)) if sp else (None, None)
            pre = f"Ds{ixname}{vname}"
            add(f"{pre}Worst", lib.fmt_ratio(lo[0]) if lo else NA, f"smallest speedup of {v} over seq, index {ix}")
            add(f"{pre}WorstWhere", where_label(lo[1]) if lo else NA)
            add(f"{pre}Best", lib.fmt_ratio(hi[0]) if hi else NA)
            add(f"{pre}BestWhere", where_label(hi[1]) if hi else NA)
            add(f"{pre}Pairs", str(len(sp)), f"data sets where seq and {v} both ran ok, index {ix}")
            add(f"{pre}Slower", str(sum(1 for r, _ in sp if r < 1)), f"of them where {v} was slower than seq")
    # the GPU with all pairs against the GPU with the tree
    pairs = []
    for lab in labels:
        r = ratio(med(cells, by[(lab, "none")], "gpu", "time"), med(cells, by[(lab, "vptree")], "gpu", "time"))
        if r is not None:
            pairs.append((r, lab))
    add("DsGpuBothPairs", str(len(pairs)), "data sets where gpu ran ok with both indexes")
    add("DsGpuPairsFaster", str(sum(1 for r, _ in pairs if r < 1)), "of them where all pairs beat the VP-tree on gpu")
    # the GPU against omp with the tree
    both = [(lab, ratio(med(cells, by[(lab, "vptree")], "omp", "time"), med(cells, by[(lab, "vptree")], "gpu", "time")))
            for lab in labels]
    both = [(lab, r) for lab, r in both if r is not None]
    add("DsTreeGpuOmpPairs", str(len(both)))
    add("DsTreeGpuFasterThanOmp", str(sum(1 for _, r in both if r > 1)), "data sets where gpu beat omp, VP-tree")

    # the largest and the smallest data set (by n)
    sized = sorted((label_n(exp, lab), i, lab) for i, lab in enumerate(labels) if label_n(exp, lab))
    small = sized[0][2] if sized else None
    large = sized[-1][2] if sized else None
    add("DsLarge", where_label(large), "the largest data set")
    add("DsLargeN", lib.fmt_int(sized[-1][0]) if sized else NA)
    add("DsSmall", where_label(small), "the smallest data set (the first of that size)")
    add("DsSmallN", lib.fmt_int(sized[0][0]) if sized else NA)
    pl = by.get((large, "vptree")) if large else None
    pn = by.get((large, "none")) if large else None
    r = ratio(med(cells, pn, "gpu", "time"), med(cells, pl, "gpu", "time"))
    add("DsLargeGpuTreeGain", lib.fmt_ratio(r), "gpu: all-pairs time / VP-tree time, largest set")
    r = ratio(any_ok(pn, "distances") if pn else None, any_ok(pl, "distances") if pl else None)
    add("DsLargeDistGain", lib.fmt_ratio(r), "all-pairs distances / VP-tree distances, largest set")

    def share(p, v, phase):
        t = med(cells, p, v, "time")
        return ratio(med(cells, p, v, phase), 1e3 * t if t else None)

    for v, vname in (("seq", "Seq"), ("omp", "Omp"), ("gpu", "Gpu")):
        add(f"DsLargeRhoShare{vname}", lib.fmt_percent(share(pl, v, "rho")),
            f"rho / run time of {v}, VP-tree, largest set")
        add(f"DsLargeTreeShare{vname}", lib.fmt_percent(share(pl, v, "tree_build")),
            f"tree build / run time of {v}, VP-tree, largest set")
    add("DsLargeOmpTreeSpeedup", lib.fmt_ratio(rel(cells, pl, "seq", "omp", "tree_build")),
        "tree build of seq / of omp, largest set")
    add("DsLargeOmpRhoSpeedup", lib.fmt_ratio(rel(cells, pl, "seq", "omp", "rho")),
        "rho of seq / of omp, largest set")
    add("DsLargeGpuRhoSpeedup", lib.fmt_ratio(rel(cells, pl, "seq", "gpu", "rho")),
        "rho of seq / of gpu, largest set")
    # GPU tree build: share of the run, and its sort launches
    tshares = [share(by[(lab, "vptree")], "gpu", "tree_build") for lab in labels]
    tshares = [x for x in tshares if x is not None]
    add("DsGpuTreeShareMin", lib.fmt_percent(min(tshares)) if tshares else NA, "tree build / run time of gpu, VP-tree")
    add("DsGpuTreeShareMax", lib.fmt_percent(max(tshares)) if tshares else NA)
    for lab, name in ((small, "Small"), (large, "Large")):
        n = label_n(exp, lab) if lab else None
        launches, h = bitonic_launches(n) if n else (None, None)
        add(f"Ds{name}Height", str(h) if h is not None else NA, "levels of vantage points (dpc.c's tree_build)")
        add(f"Ds{name}Launches", lib.fmt_int(launches) if launches else NA, "bitonic sort launches of the gpu build")
        tb = med(cells, by.get((lab, "vptree")), "gpu", "tree_build") if lab else None
        add(f"Ds{name}GpuTree", lib.fmt_seconds(tb / 1e3) if tb is not None else NA, "gpu tree build")
        add(f"Ds{name}GpuPerLaunch", lib.fmt_seconds(tb / 1e3 / launches) if tb is not None and launches else NA,
            "gpu tree build / sort launches")
        tb = med(cells, by.get((lab, "vptree")), "seq", "tree_build") if lab else None
        add(f"Ds{name}SeqTree", lib.fmt_seconds(tb / 1e3) if tb is not None else NA, "seq tree build")
        for v, vname in (("seq", "Seq"), ("omp", "Omp"), ("gpu", "Gpu")):
            t = med(cells, by.get((lab, "vptree")), v, "time") if lab else None
            add(f"Ds{name}Time{vname}", lib.fmt_seconds(t) if t is not None else NA, f"{v} run time, VP-tree")
            t = med(cells, by.get((lab, "none")), v, "time") if lab else None
            add(f"Ds{name}PairsTime{vname}", lib.fmt_seconds(t) if t is not None else NA, f"{v} run time, all pairs")

    # ---- gdpc_scaling: n from 2^13 ----------------------------------------------------------
    exp, configs, cells = setup("gdpc_scaling")
    spec = spec_of(exp)
    add("ScOk", str(ok_count(exp, cells)), "ok cells of gdpc_scaling")
    add("ScGpuOk", str(ok_count(exp, cells, "gpu")))
    add("ScBudget", str(spec.get("budget_s", NA)))
    add("ScRepeat", str(spec.get("repeat", NA)), "timed runs of omp and gpu per configuration")
    add("ScWarmup", str(spec.get("warmup", NA)))
    seq_v = next((v for v in exp["variants"] if v["name"] == "seq"), {}) if exp else {}
    add("ScSeqRepeat", str(seq_v.get("repeat", spec.get("repeat", NA))) if exp else NA, "timed runs of seq")
    tree = sorted((p for p in configs if p["index"] == "vptree"), key=lambda p: p["n"])
    pairs = {p["n"]: p for p in configs if p["index"] == "none"}
    lo, hi = (tree[0], tree[-1]) if tree else (None, None)
    add("ScNmin", lib.fmt_int(lo["n"]) if lo else NA)
    add("ScNmax", lib.fmt_int(hi["n"]) if hi else NA)
    add("ScSizes", str(len(tree)) if tree else NA, "sizes of the scaling series")
    add("ScNGrowth", lib.fmt_ratio(hi["n"] / lo["n"]) if tree else NA, "largest n / smallest n")
    for p, end in ((lo, "Low"), (hi, "High")):
        for v, vname in (("omp", "Omp"), ("gpu", "Gpu")):
            add(f"ScTree{vname}{end}", lib.fmt_ratio(rel(cells, p, "seq", v, "time")),
                f"speedup of {v} over seq, VP-tree, {end.lower()} end of n")
        for v, vname in (("seq", "Seq"), ("omp", "Omp"), ("gpu", "Gpu")):
            t = med(cells, p, v, "time")
            add(f"ScTime{vname}{end}", lib.fmt_seconds(t) if t is not None else NA, f"{v} run time, VP-tree")
            t = med(cells, p, v, "tree_build")
            add(f"ScBuild{vname}{end}", lib.fmt_seconds(t / 1e3) if t is not None else NA, f"{v} tree build")
    for v, vname in (("seq", "Seq"), ("omp", "Omp"), ("gpu", "Gpu")):
        for metric, mname in (("time", "Time"), ("tree_build", "Build")):
            add(f"Sc{mname}Growth{vname}", lib.fmt_ratio(ratio(med(cells, hi, v, metric), med(cells, lo, v, metric))),
                f"{v} {metric} at the largest n / at the smallest, VP-tree")
    add("ScRhoGpu", lib.fmt_ratio(rel(cells, hi, "seq", "gpu", "rho")),
        "rho of seq / of gpu at the largest n")
    add("ScRhoOmp", lib.fmt_ratio(rel(cells, hi, "seq", "omp", "rho")),
        "rho of seq / of omp at the largest n")
    add("ScBuildOmp", lib.fmt_ratio(rel(cells, hi, "seq", "omp", "tree_build")),
        "tree build of seq / of omp at the largest n")
    t = med(cells, hi, "gpu", "time")
    add("ScGpuBuildShare", lib.fmt_percent(ratio(med(cells, hi, "gpu", "tree_build"), 1e3 * t if t else None)),
        "gpu tree build / gpu run time at the largest n")
    for p, end in ((lo, "Low"), (hi, "High")):
        launches = bitonic_launches(p["n"])[0] if p and med(cells, p, "gpu", "time") is not None else None
        add(f"Sc{end}Launches", lib.fmt_int(launches) if launches else NA, f"bitonic sort launches, {end.lower()} n")
    # all pairs: the largest n where seq finished, and where it did not
    seq_ok = [n for n in sorted(pairs) if lib.series_cell(cells, pairs[n], "seq").status == "ok"]
    last = pairs[seq_ok[-1]] if seq_ok else None
    add("ScPairsSeqLast", lib.fmt_int(last["n"]) if last else NA, "largest n where seq all pairs ran ok")
    for v, vname in (("omp", "Omp"), ("gpu", "Gpu")):
        add(f"ScPairs{vname}", lib.fmt_ratio(rel(cells, last, "seq", v, "time")),
            f"speedup of {v} over seq, all pairs, at that n")
    over = [n for n in sorted(pairs) if lib.series_cell(cells, pairs[n], "seq").status in ("timeout", "skipped-budget")]
    add("ScPairsSeqOver", ", ".join(f"$n = {lib.fmt_int(n)}$" for n in over) if over else "none",
        "sizes where seq all pairs was over the budget or skipped")
    ph = pairs.get(hi["n"]) if hi else None
    add("ScPairsOverTreeGpu", lib.fmt_ratio(ratio(med(cells, ph, "gpu", "time"), med(cells, hi, "gpu", "time"))),
        "gpu all pairs / gpu VP-tree at the largest n")
    add("ScPairsOverTreeOmp", lib.fmt_ratio(ratio(med(cells, ph, "omp", "time"), med(cells, hi, "omp", "time"))),
        "omp all pairs / omp VP-tree at the largest n")
    pl = pairs.get(lo["n"]) if lo else None
    gpu_pairs = []  # (n, gpu all-pairs time / gpu VP-tree time)
    for p in tree:
        r = ratio(med(cells, pairs.get(p["n"]), "gpu", "time"), med(cells, p, "gpu", "time"))
        if r is not None:
            gpu_pairs.append((p["n"], r))
    quicker = [n for n, r in gpu_pairs if r < 1]
    add("ScGpuPairsQuicker", str(len(quicker)), "sizes where gpu all pairs beat gpu VP-tree")
    add("ScGpuPairsBoth", str(len(gpu_pairs)), "sizes where gpu ran ok with both indexes")
    add("ScGpuPairsQuickerMax", lib.fmt_int(max(quicker)) if quicker else NA, "the largest of them")
    add("ScPairsOverTreeGpuLow", lib.fmt_ratio(ratio(med(cells, pl, "gpu", "time"), med(cells, lo, "gpu", "time"))),
        "gpu all pairs / gpu VP-tree at the smallest n")

    def dist(p):
        for v in ("seq", "omp", "gpu"):
            x = med(cells, p, v, "distances")
            if x is not None:
                return x
        return None

    add("ScDistGrowthTree", lib.fmt_ratio(ratio(dist(hi), dist(lo))), "VP-tree distances, largest n / smallest n")
    add("ScDistGrowthPairs", lib.fmt_ratio(ratio(dist(ph), dist(pl))), "all-pairs distances, largest n / smallest n")
    add("ScDistShareHigh", lib.fmt_percent(ratio(dist(hi), dist(ph))), "VP-tree / all-pairs distances at the largest n")

    # ---- gdpc_incremental: batches against recomputation ----------------------------------------
    exp, configs, cells = setup("gdpc_incremental")
    spec = spec_of(exp)
    add("IncOk", str(ok_count(exp, cells)), "ok cells of gdpc_incremental")
    add("IncGpuOk", str(ok_count(exp, cells, "gpu")))
    add("IncBudget", str(spec.get("budget_s", NA)))
    add("IncRepeat", str(spec.get("repeat", NA)), "runs per configuration (no warm-up: dpc refuses one with batches)")
    cmd = exp["command"] if exp else []
    batch = cmd[cmd.index("--batch") + 1] if "--batch" in cmd else None
    add("IncBatch", lib.fmt_int(int(batch)) if batch else NA, "points per batch")
    add("IncSets", str(len(configs)) if configs else NA)

    def inc_rows(p, v):
        c = lib.series_cell(cells, p, v)
        return c.rows if c.status == "ok" else []

    gains = []   # (gain, label, variant)
    for p in configs:
        for v in ("seq", "omp", "gpu"):
            g = med(cells, p, v, "gain")
            if g is not None:
                gains.append((g, p["label"], v))
    add("IncPairs", str(len(gains)), "(data set, variant) cells with a batch and a recomputation time")
    add("IncSlower", str(sum(1 for g, _, _ in gains if g < 1)), "of them where the batch took longer than recomputing")
    slow_sets = list(dict.fromkeys(lab for g, lab, _ in gains if g < 1))
    add("IncSlowerSets", lib.latex_escape(", ".join(slow_sets)) if slow_sets else "none")
    bases = {p["label"]: p["base"] for p in configs}
    slow_bases = sorted({bases[lab] for lab in slow_sets})
    add("IncSlowerBases", " and ".join(", ".join(map(lib.fmt_int, slow_bases)).rsplit(", ", 1)) if slow_bases else NA,
        "base points of those data sets")
    add("IncSlowerSmallBases", "1" if slow_bases and batch and max(slow_bases) < int(batch) else "0",
        "1: every data set where a batch lost has a base smaller than a batch")

    def inc_n(p):
        ns = [int(r["n"]) for v in ("seq", "omp", "gpu") for r in inc_rows(p, v) if r["n"]]
        return max(ns) if ns else None

    sized = sorted(((inc_n(p), i, p) for i, p in enumerate(configs) if inc_n(p)), key=lambda t: t[:2])
    large = sized[-1][2] if sized else None
    small = sized[0][2] if sized else None
    add("IncLarge", where_label(large["label"]) if large else NA, "the data set with the most points")
    add("IncLargeN", lib.fmt_int(sized[-1][0]) if sized else NA, "its points after the batches")
    add("IncLargeBase", lib.fmt_int(large["base"]) if large else NA, "its base points")
    nb = [int(r["batches"]) for v in ("seq", "omp", "gpu") for r in inc_rows(large, v) if r["batches"]] if large else []
    add("IncLargeBatches", str(max(nb)) if nb else NA, "its insertion batches")
    add("IncSmall", where_label(small["label"]) if small else NA, "the first of the smallest data sets")
    add("IncSmallN", lib.fmt_int(sized[0][0]) if sized else NA)
    add("IncSmallBase", lib.fmt_int(small["base"]) if small else NA)
    for p, name in ((large, "Large"), (small, "Small")):
        for v, vname in (("seq", "Seq"), ("omp", "Omp"), ("gpu", "Gpu")):
            b = med(cells, p, v, "batch") if p else None
            rs = med(cells, p, v, "restart") if p else None
            add(f"Inc{name}Batch{vname}", lib.fmt_seconds(b / 1e3) if b is not None else NA, f"{v}: median batch")
            add(f"Inc{name}Restart{vname}", lib.fmt_seconds(rs / 1e3) if rs is not None else NA,
                f"{v}: median recomputation")
            add(f"Inc{name}Gain{vname}", lib.fmt_ratio(ratio(rs, b)), f"{v}: recomputation / batch")
        r = ratio(med(cells, p, "seq", "batch") if p else None, med(cells, p, "gpu", "batch") if p else None)
        add(f"Inc{name}GpuOverSeq", lib.fmt_ratio(r), "seq batch / gpu batch")
        add(f"Inc{name}GpuSlower", "1" if r is not None and r < 1 else "0", "1: the gpu batch was slower than seq's")
        r = ratio(med(cells, p, "omp", "batch") if p else None, med(cells, p, "gpu", "batch") if p else None)
        add(f"Inc{name}GpuOverOmp", lib.fmt_ratio(r), "omp batch / gpu batch")
