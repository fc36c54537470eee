"""sections/streaming.py - the numbers that sections/streaming.tex quotes (k-means++, k-means# and
streaming k-means: the okuda_streamkm and okuda_breakdown experiments), as macros \\pcStreamkm...,
from the results CSV.

numbers(m, exps, rows, scale, scale_dir, lib) is called by paper/numbers.py (section_numbers).
Every value is lib.NA ("n/a") where the CSV lacks the runs it needs (a results file without these
experiments, without their GPU runs, or a run over its budget). Three flags tell the prose what
exists: \\pcStreamkmDataFlag (any ok run of the two experiments), \\pcStreamkmGpuFlag (any ok gpu
run) and \\pcStreamkmSeqGpuFlag (a configuration where seq and gpu both finished), each "true" or
"false" for the \\newif switches of streaming.tex.
"""
from pathlib import Path

MAIN, BREAKDOWN = "okuda_streamkm", "okuda_breakdown"
REG_DIMS = 8  # KMPP_REG_DIMS_DEFAULT of algorithms/kmeanspp_gpu.c: the largest d held in registers


def draws_per_round(k):
    """b of algorithms/streamkm.c (skm_draws_per_round): 3 * max(1, ceil(log2 k))."""
    log2k = 0
    while (1 << log2k) < k:
        log2k += 1
    return 3 * (log2k if log2k > 0 else 1)


def numbers(m, exps, rows, scale, scale_dir, lib):
    m = lib.QuotedMacros(m, Path(__file__).with_suffix(".tex"), "pcStreamkm")
    NA = lib.NA
    main, brk = exps.get(MAIN), exps.get(BREAKDOWN)
    mine = [r for r in rows if r["scale"] == scale and r["experiment"] in (MAIN, BREAKDOWN)]
    ok = [r for r in mine if r["status"] == "ok"]

    def configs(exp):
        return lib.configurations(exp, scale) if exp and scale in exp["scales"] else []

    def cells(exp):
        return lib.cells_by_config(exp, rows, scale) if exp else {}

    main_configs, brk_configs = configs(main), configs(brk)
    main_cells, brk_cells = cells(main), cells(brk)

    def variant_of(exp, program):
        return next((v["name"] for v in (exp or {}).get("variants", []) if v["program"] == program), None)

    def cell(cs, p, v):
        return lib.series_cell(cs, p, v) if p is not None and v is not None else lib.Cell([])

    def med(cs, p, v, metric="time"):
        c = cell(cs, p, v)
        return c.median(metric) if c.status == "ok" else None

    def ratio(a, b):
        return a / b if a is not None and b is not None and b > 0 else None

    def where(p, keys=("n", "d", "k")):
        return ", ".join(f"${k} = {lib.fmt_int(p[k])}$" for k in keys if k in p) if p else NA

    def ms(v):
        return lib.fmt_seconds(v / 1e3) if v is not None else NA

    seq, omp, gpu = (variant_of(main, p) for p in ("seq", "omp", "gpu"))
    bseq, bomp, bgpu = (variant_of(brk, p) for p in ("seq", "omp", "gpu"))

    # ---- what the CSV holds: flags, machine, builds ------------------------------------------------
    gpu_ok = [r for r in ok if r["program"] == "gpu"]
    m.add("pcStreamkmDataFlag", "true" if ok else "false", "any ok run of okuda_streamkm or okuda_breakdown")
    m.add("pcStreamkmGpuFlag", "true" if gpu_ok else "false", "any ok gpu run of them")
    gpus = [r["gpu"] for r in gpu_ok if r["gpu"]]
    m.add("pcStreamkmDevice", lib.latex_escape(max(set(gpus), key=gpus.count)) if gpus else NA, "their GPU")
    threads = sorted({int(r["threads"]) for r in ok if r["program"] == "omp" and r["threads"]})
    m.add("pcStreamkmThreads", "/".join(map(str, threads)) if threads else NA, "host threads of their omp runs")
    everyone = [r["git_commit"] for r in rows if r["status"] == "ok" and r["scale"] == scale and r["git_commit"]]
    document = max(set(everyone), key=everyone.count) if everyone else None
    by_commit = {}
    for r in ok:
        if r["git_commit"]:
            by_commit.setdefault(r["git_commit"], set()).add(r["program"])
    order = {"seq": 0, "omp": 1, "gpu": 2}
    other = {c: ps for c, ps in by_commit.items() if c != document}
    if other:
        parts = [f"\\texttt{{{lib.latex_escape(c)}}} ({', '.join(sorted(ps, key=order.get))})"
                 for c, ps in sorted(other.items(), key=lambda t: min(order.get(p, 3) for p in t[1]))]
        note = ("Their rows in this results file come from other builds than most of this document's: of "
                "commit " + " and ".join(parts) + ", as the notes under the tables say; they time the "
                "sources as they were then, whose GPU passes have been reshaped since.")
    else:
        note = ""
    m.add("pcStreamkmBuildNote", note, "a sentence when the okuda rows come from other commits than the rest")

    spec = (main or {}).get("scales", {}).get(scale, {})
    m.add("pcStreamkmBudget", str(spec.get("budget_s", NA)), "okuda_streamkm: seconds per run")

    # ---- Tables 1 and 2: the grids ------------------------------------------------------------------
    def table_params(name):
        t = next((t for t in (main or {}).get("tables", []) if t["name"] == name), None)
        if not t:
            return []
        return [p for p in main_configs if all(p.get(k) == v for k, v in t.get("where", {}).items())]

    t1, t2 = table_params("table1"), table_params("table2")

    def values(ps, key):
        return sorted({p[key] for p in ps})

    def and_list(vs):
        vs = [lib.fmt_int(v) for v in vs]
        return NA if not vs else vs[0] if len(vs) == 1 else ", ".join(vs[:-1]) + " and " + vs[-1]

    m.add("pcStreamkmOneD", and_list(values(t1, "d")), "Table 1: d")
    m.add("pcStreamkmOneNs", and_list(values(t1, "n")), "Table 1: the values of n")
    m.add("pcStreamkmOneKs", and_list(values(t1, "k")), "Table 1: the values of k")
    m.add("pcStreamkmTwoN", and_list(values(t2, "n")), "Table 2: n")
    m.add("pcStreamkmTwoDs", and_list(values(t2, "d")), "Table 2: the values of d")
    m.add("pcStreamkmTwoKs", and_list(values(t2, "k")), "Table 2: the values of k")
    m.add("pcStreamkmConfigs", str(len(main_configs)) if main_configs else NA, "okuda_streamkm configurations")

    grid = t1 + [p for p in t2 if p not in t1]
    over = {}
    for v in (seq, omp, gpu):
        over[v] = sum(1 for p in grid if cell(main_cells, p, v).status in ("timeout", "skipped-budget"))
    for v, name in ((seq, "Seq"), (omp, "Omp"), (gpu, "Gpu")):
        m.add(f"pcStreamkm{name}Over", str(over[v]) if grid else NA, f"okuda_streamkm: {v} runs over the budget")
        finished = sum(1 for p in grid if cell(main_cells, p, v).status == "ok")
        m.add(f"pcStreamkm{name}Done", str(finished) if grid else NA,
              f"okuda_streamkm: {v} runs that finished")

    def best_pair(base, other):
        """(best, worst) of time(base) / time(other) over the grid: ((value, params), ...) or None."""
        got = [(ratio(med(main_cells, p, base), med(main_cells, p, other)), p) for p in grid]
        got = [g for g in got if g[0] is not None]
        return (max(got, key=lambda g: g[0]), min(got, key=lambda g: g[0]), len(got)) if got else (None, None, 0)

    for base, other, name in ((seq, gpu, "GpuSeq"), (seq, omp, "OmpSeq"), (omp, gpu, "GpuOmp")):
        best, worst, pairs = best_pair(base, other)
        m.add(f"pcStreamkm{name}Best", lib.fmt_ratio(best[0]) if best else NA, f"largest {base}/{other}")
        m.add(f"pcStreamkm{name}BestWhere", where(best[1]) if best else NA)
        m.add(f"pcStreamkm{name}Worst", lib.fmt_ratio(worst[0]) if worst else NA)
        m.add(f"pcStreamkm{name}WorstWhere", where(worst[1]) if worst else NA)
        m.add(f"pcStreamkm{name}Pairs", str(pairs), f"configurations where {base} and {other} both finished")
    m.add("pcStreamkmSeqGpuFlag", "true" if best_pair(seq, gpu)[2] else "false")

    # the largest configuration the GPU finished (by n k d), and its time
    done = [p for p in grid if cell(main_cells, p, gpu).status == "ok"]
    big = max(done, key=lambda p: (p["n"] * p["k"] * p["d"], p["n"])) if done else None
    m.add("pcStreamkmGpuBigTime", lib.fmt_seconds(med(main_cells, big, gpu)) if big else NA,
          "gpu time of the largest configuration it finished")
    m.add("pcStreamkmGpuBigWhere", where(big) if big else NA)
    gen = ratio(med(main_cells, big, gpu, "generation"), 1e3 * med(main_cells, big, gpu)) if big else None
    m.add("pcStreamkmGpuBigGeneration", lib.fmt_percent(gen), "generation / run time there")
    big_omp = med(main_cells, big, omp)
    m.add("pcStreamkmOmpAtGpuBig", lib.fmt_seconds(big_omp) if big_omp is not None else
          ("over the budget" if big and cell(main_cells, big, omp).status in ("timeout", "skipped-budget") else NA),
          "omp there")

    # ---- the breakdown of one k-means# run --------------------------------------------------------
    ds = sorted({p["d"] for p in brk_configs})
    bp = {p["d"]: p for p in brk_configs}
    first = brk_configs[0] if brk_configs else None
    m.add("pcStreamkmBrkN", lib.fmt_int(first["n"]) if first else NA, "okuda_breakdown: points of the chunk")
    m.add("pcStreamkmBrkK", str(first["k"]) if first else NA)
    b = draws_per_round(first["k"]) if first else None
    m.add("pcStreamkmBrkDraws", str(b) if b else NA, "b = 3 ceil(log2 k): draws per round")
    m.add("pcStreamkmBrkPerRun", lib.fmt_int(b * first["k"]) if b else NA, "k b: points a run chooses")
    m.add("pcStreamkmBrkDmin", str(ds[0]) if ds else NA)
    m.add("pcStreamkmBrkDmax", str(ds[-1]) if ds else NA)
    phases = ("distance", "selection", "weighting", "other")
    bvariants = [v["name"] for v in (brk or {}).get("variants", [])]
    m.add("pcStreamkmBrkColumns", str(len(phases) * len(bvariants)) if bvariants else "0",
          "data columns of the breakdown table")

    def phase(d, v, ph):
        return med(brk_cells, bp.get(d), v, ph)

    def share(d, v, ph):
        parts = [phase(d, v, q) for q in phases]
        return parts[phases.index(ph)] / sum(parts) if None not in parts and sum(parts) > 0 else None

    lo, hi = (ds[0], ds[-1]) if ds else (None, None)
    for v, name in ((bseq, "Seq"), (bomp, "Omp"), (bgpu, "Gpu")):
        sp = [ratio(med(brk_cells, bp[d], bseq), med(brk_cells, bp[d], v)) for d in ds] if v != bseq else []
        sp = [s for s in sp if s is not None]
        if v != bseq:
            m.add(f"pcStreamkmBrk{name}SpeedupMin", lib.fmt_ratio(min(sp)) if sp else NA, f"breakdown: {v} over seq")
            m.add(f"pcStreamkmBrk{name}SpeedupMax", lib.fmt_ratio(max(sp)) if sp else NA)
        for ph in phases:
            cap = ph.capitalize()
            m.add(f"pcStreamkmBrk{name}{cap}ShareLow", lib.fmt_percent(share(lo, v, ph)),
                  f"breakdown: {ph} / the four phases of {v} at the smallest d")
            m.add(f"pcStreamkmBrk{name}{cap}ShareHigh", lib.fmt_percent(share(hi, v, ph)), "... at the largest d")
            m.add(f"pcStreamkmBrk{name}{cap}Low", ms(phase(lo, v, ph)), f"breakdown: {ph} of {v} at the smallest d")
            m.add(f"pcStreamkmBrk{name}{cap}High", ms(phase(hi, v, ph)), "... at the largest d")
    ratio_hi = ratio(phase(hi, bgpu, "distance"), phase(hi, bgpu, "selection"))
    m.add("pcStreamkmBrkGpuDistOverSel", lib.fmt_ratio(ratio_hi), "gpu distance / selection at the largest d")
    sel = phase(lo, bgpu, "selection")
    seq_sel = phase(lo, bseq, "selection")
    m.add("pcStreamkmBrkSelCompare", NA if sel is None or seq_sel is None else "slower than" if sel > seq_sel
          else "faster than", "the gpu's selection against one core's at the smallest d")
    m.add("pcStreamkmBrkGpuSelPerRound", ms(sel / first["k"]) if sel is not None and first else NA,
          "gpu selection per round at the smallest d (k rounds)")
    # the register path: d = REG_DIMS (in registers) against the next d (the generic loop)
    inside = max((d for d in ds if d <= REG_DIMS), default=None)
    outside = min((d for d in ds if d > REG_DIMS), default=None)
    m.add("pcStreamkmBrkRegD", str(inside) if inside else NA, "largest d of the breakdown held in registers")
    m.add("pcStreamkmBrkNextD", str(outside) if outside else NA, "the next d (the generic loop)")
    for v, name in ((bseq, "Seq"), (bgpu, "Gpu")):
        r = ratio(phase(outside, v, "distance"), phase(inside, v, "distance")) if inside and outside else None
        m.add(f"pcStreamkmBrk{name}RegJump", lib.fmt_ratio(r), f"distance of {v}: the next d over the register d")

    # ---- the same answer: SSQ of every variant ------------------------------------------------------
    same = compared = 0
    for exp, cfgs, cs in ((main, main_configs, main_cells), (brk, brk_configs, brk_cells)):
        for p in cfgs:
            got = [cell(cs, p, v["name"]) for v in exp["variants"]]
            got = [c for c in got if c.status == "ok"]
            if len(got) < 2:
                continue
            compared += 1
            same += len({c.median("sse") for c in got}) == 1
    m.add("pcStreamkmSameCost", str(same), "configurations where every variant that finished gave the same cost")
    m.add("pcStreamkmCompared", str(compared), "configurations where two or more variants finished")

