"""An independent streaming k-means that follows the documented rule of algorithms/streamkm.h
step by step, on top of the D^2 sampling rule of tests/kmeanspp_reference.py: chunks of
ceil(sqrt(n k)) rows, R = ceil(3 ln n) k-means# runs per chunk (k rounds of
3 * max(1, ceil(log2 k)) draws), the lowest-cost run kept, its points weighted by the chunk
points nearest to them (a plain count), weighted k-means++ on the union."""
import math

import numpy as np

from kmeanspp_reference import d2_sample, kmeanspp

STREAM_KMEANS_SHARP = 17


def draws_per_round(k):
    return 3 * max(1, (k - 1).bit_length())  # (k - 1).bit_length() = ceil(log2 k)


def default_chunk_size(n, k):
    m = math.isqrt(n * k)
    return min(n, m if m * m == n * k else m + 1)


def default_repetitions(n):
    return max(1, math.ceil(3 * math.log(n)))


class _Rows:
    """Rows as plain Python floats (fast scalar access) with the shape d2_sample reads."""

    def __init__(self, x):
        self.rows = x.tolist()
        self.shape = x.shape

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, ij):
        return self.rows[ij[0]][ij[1]]


def streamkm(x, k, seed, chunk_size=None, repetitions=None):
    """Returns (kept, centres): kept = [(stream row, points served)] of every chunk's kept run in
    draw order, centres = the k x d float32 centres."""
    x = np.asarray(x, dtype=np.float32)
    n = len(x)
    m = min(n, chunk_size) if chunk_size else default_chunk_size(n, k)
    reps = repetitions or default_repetitions(n)
    b = draws_per_round(k)
    kept, union_rows, union_w = [], [], []
    for c, first in enumerate(range(0, n, m)):
        chunk = _Rows(x[first:first + m].astype(np.float64))
        best = None
        for e in range(reps):
            chosen, _, nearest, cost = d2_sample(chunk, [1.0] * len(chunk), k, b, seed, STREAM_KMEANS_SHARP,
                                                 (c * reps + e) * k * b)
            if best is None or cost < best[0]:
                best = (cost, chosen, nearest)
        _, chosen, nearest = best
        served = np.bincount(nearest, minlength=len(chosen))
        for q, row in enumerate(chosen):
            kept.append((first + row, int(served[q])))
            if served[q]:
                union_rows.append(first + row)
                union_w.append(float(served[q]))
    picks = kmeanspp(x[union_rows], k, seed, weights=union_w)
    return kept, x[[union_rows[p] for p in picks]]
