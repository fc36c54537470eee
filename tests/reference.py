"""An independent brute-force Lloyd k-means in NumPy float64, the oracle of test_kmeans.py.

Semantics (the ones pragmaclust documents in algorithms/kmeans.h):
  - assignment: each point goes to the centroid at the smallest squared Euclidean distance,
    ties to the lowest centroid index (np.argmin returns the first minimum);
  - update: new centroid = mean of its points; a cluster with no points keeps its centroid;
  - stop after the first assignment pass that changes no label, or after max_iter passes.
    The first pass always "changes" every label (labels start undefined).
  - iterations = number of assignment passes made; the centroids returned are the ones
    computed from the last pass's labels (as pragmaclust does), and SSE is measured between
    the last labels and those centroids.
Deliberately simple: a full n x k distance matrix per pass, no tiling, no float32.
"""
import numpy as np


def sq_distances(x, c):
    """n x k squared distances, computed directly as sum((x - c)^2), one centroid at a time
    (no ||x||^2 - 2x.c + ||c||^2 expansion, which cancels for data far from the origin)."""
    out = np.empty((x.shape[0], c.shape[0]))
    for j in range(c.shape[0]):
        out[:, j] = ((x - c[j]) ** 2).sum(axis=1)
    return out


def lloyd(x, init, max_iter=1000, fixed_iter=None):
    """Returns (labels int64[n], centroids float64[k,d], sse float, iterations int, converged bool)."""
    x = np.asarray(x, dtype=np.float64)
    c = np.array(init, dtype=np.float64, copy=True)
    if x.ndim == 1:
        x = x[:, None]
    if c.ndim == 1:
        c = c[:, None]
    n, k = x.shape[0], c.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    wanted = fixed_iter if fixed_iter else max_iter
    iterations, converged = 0, False
    for it in range(wanted):
        new = np.argmin(sq_distances(x, c), axis=1)
        changed = int(np.count_nonzero(new != labels))
        labels = new
        iterations = it + 1
        for j in range(k):
            members = labels == j
            if members.any():
                c[j] = x[members].mean(axis=0)
        if not fixed_iter and changed == 0:
            converged = True
            break
    sse = float(((x - c[labels]) ** 2).sum())
    return labels, c, sse, iterations, converged
