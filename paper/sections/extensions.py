"""The numbers of sections/extensions.tex: the portable OpenMP loops against the tuned kernels
(experiment kernels.toml), per program, from the time of one iteration."""


def numbers(m, exps, rows, scale, scale_dir, lib):
    exp = exps.get("kernels")
    configs = lib.configurations(exp, scale) if exp else []
    cells = lib.cells_by_config(exp, rows, scale) if exp else {}

    def time(p, variant):
        c = lib.series_cell(cells, p, variant)
        return c.median("iteration") if c.status == "ok" else None

    def where(p):
        return f"$d = {p['d']}$, $k = {p['k']}$"

    def ratios(base, other):
        """[(speedup of other over base, config)] where both ran."""
        out = []
        for p in configs:
            a, b = time(p, base), time(p, other)
            if a is not None and b is not None:
                out.append((a / b, p))
        return out

    m.add("pcExtN", lib.fmt_int(configs[0]["n"]) if configs else lib.NA, "points of every kernels run")
    m.add("pcExtConfigs", str(len(configs)), "shapes (d, k) of the kernels experiment")
    for base, other, name in (("omp portable", "omp tuned", "OmpTuned"), ("gpu portable", "gpu tuned", "GpuTuned"),
                              ("gpu portable", "gpu 3xTF32", "GpuTensor")):
        r = ratios(base, other)
        lo, hi = (min(r, key=lambda t: t[0]), max(r, key=lambda t: t[0])) if r else (None, None)
        m.add(f"pcExt{name}Min", lib.fmt_ratio(lo[0]) if lo else lib.NA, f"smallest speedup of {other} over {base}")
        m.add(f"pcExt{name}MinWhere", where(lo[1]) if lo else lib.NA)
        m.add(f"pcExt{name}Max", lib.fmt_ratio(hi[0]) if hi else lib.NA, f"largest speedup of {other} over {base}")
        m.add(f"pcExt{name}MaxWhere", where(hi[1]) if hi else lib.NA)
        m.add(f"pcExt{name}Slower", str(sum(1 for s, _ in r if s < 1)), f"shapes where {other} was slower")
        m.add(f"pcExt{name}Pairs", str(len(r)), f"shapes where {base} and {other} both ran")
    # what standard OpenMP alone gives the GPU: its portable loop against the host's best
    r = ratios("omp tuned", "gpu portable")
    lo, hi = (min(r, key=lambda t: t[0]), max(r, key=lambda t: t[0])) if r else (None, None)
    m.add("pcExtPortableGpuOverHostMin", lib.fmt_ratio(lo[0]) if lo else lib.NA,
          "smallest speedup of the gpu portable loop over omp tuned")
    m.add("pcExtPortableGpuOverHostMinWhere", where(lo[1]) if lo else lib.NA)
    m.add("pcExtPortableGpuOverHostMax", lib.fmt_ratio(hi[0]) if hi else lib.NA)
    m.add("pcExtPortableGpuOverHostMaxWhere", where(hi[1]) if hi else lib.NA)
    threads = sorted({r["threads"] for r in rows if r["experiment"] == "kernels" and r["scale"] == scale
                      and r["status"] == "ok" and r["program"] == "omp" and r["threads"]})
    m.add("pcExtThreads", "/".join(threads) if threads else lib.NA, "host threads of the omp kernels runs")
