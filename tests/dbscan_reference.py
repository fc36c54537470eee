"""An independent brute-force DBSCAN in NumPy (float64), following the definitions: the
eps-neighbourhood of p is every q with ||p - q||^2 <= eps^2 (p included); core points have at
least min_pts neighbours; clusters are grown by a breadth-first search from core points taken in
index order (so ids follow each cluster's smallest index); a border point takes the first
cluster that reaches it, which is the smallest id among its core neighbours' clusters."""
from collections import deque

import numpy as np


def neighbourhoods(x, eps):
    x = np.asarray(x, dtype=np.float64)
    d2 = np.zeros((len(x), len(x)))
    for j in range(x.shape[1]):  # dimension by dimension, in order, as the C code sums
        diff = x[:, None, j] - x[None, :, j]
        d2 += diff * diff
    return [np.flatnonzero(row <= eps * eps) for row in d2]


def dbscan(x, eps, min_pts):
    """Returns (labels, is_core)."""
    nb = neighbourhoods(x, eps)
    n = len(nb)
    core = np.array([len(v) >= min_pts for v in nb])
    labels = np.full(n, -1)
    cluster = 0
    for i in range(n):
        if not core[i] or labels[i] != -1:
            continue
        labels[i] = cluster
        queue = deque([i])
        while queue:
            p = queue.popleft()
            if not core[p]:
                continue
            for q in nb[p]:
                if labels[q] == -1:
                    labels[q] = cluster
                    queue.append(q)
        cluster += 1
    return labels, core
