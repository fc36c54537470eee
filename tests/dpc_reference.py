"""An independent brute-force density peaks clustering in NumPy, following the definitions of
algorithms/dpc.h: squared distances summed in float64 in dimension order over the float32 values;
rho_i = #{j : d2 < dc*dc} (i included); j denser than i when (rho_j, -j) > (rho_i, -i); dep_i
the nearest denser point (ties to the lowest index), delta_i = sqrt(d2); the absolute peak has
dep -1 and delta = its largest distance; peaks by gamma = rho * delta (descending, ties to the
lower index, the absolute peak first) or by thresholds; each point takes the cluster (the peak's
rank) of the first peak on its chain of dependent points."""
import numpy as np


def sq_distances(x):
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    d2 = np.zeros((len(x), len(x)))
    for j in range(x.shape[1]):
        diff = x[:, None, j] - x[None, :, j]
        d2 += diff * diff
    return d2


def dpc(x, dc, peaks=None, rho_min=None, delta_min=None):
    """Returns (rho, delta, dep, labels)."""
    d2 = sq_distances(x)
    n = len(d2)
    rho = (d2 < dc * dc).sum(axis=1).astype(np.int64)
    order = sorted(range(n), key=lambda i: (-rho[i], i))  # densest first
    rank_of = np.empty(n, dtype=np.int64)
    rank_of[order] = np.arange(n)
    dep = np.full(n, -1, dtype=np.int64)
    delta2 = np.zeros(n)
    for i in range(n):
        denser = np.flatnonzero(rank_of < rank_of[i])
        if denser.size == 0:
            delta2[i] = d2[i].max()
            continue
        e = d2[i, denser]
        m = e.min()
        dep[i] = denser[e == m].min()
        delta2[i] = m
    delta = np.sqrt(delta2)
    top = order[0]
    gamma = rho.astype(np.float64) * delta
    if peaks is not None:
        rest = sorted((i for i in range(n) if i != top), key=lambda i: (-gamma[i], i))
        chosen = [top] + rest[:max(0, min(peaks, n) - 1)]
    else:
        sel = [i for i in range(n) if rho[i] >= rho_min and delta[i] >= delta_min]
        if not sel:
            raise ValueError("no peak")
        chosen = sorted(sel, key=lambda i: (i != top, -gamma[i], i))
    cluster = {p: c for c, p in enumerate(chosen)}
    labels = np.full(n, -1, dtype=np.int64)
    for i in order:  # denser points first: a dependent point is labelled before its followers
        labels[i] = cluster[i] if i in cluster else labels[dep[i]]
    return rho, delta, dep, labels


def read_graph(path, rows=False):
    """The program's decision-graph CSV: (rho, delta, dep, labels), and the input rows if asked."""
    a = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    got = a[:, 1].astype(np.int64), a[:, 2], a[:, 3].astype(np.int64), a[:, 4].astype(np.int64)
    return (got, a[:, 5].astype(np.int64)) if rows else got
