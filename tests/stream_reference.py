"""An independent implementation of the documented rule of algorithms/stream.h (Cao et al.'s
entire-stream STREAM and sliding window), in NumPy float64 with Python loops for the structure:
weighted k-means++ seeding from kmeanspp_reference (seed of the c-th clustering: counter c of
stream 18), Lloyd with weighted means (centres kept in float32, as the program keeps them), a
summary of the centres that serve any weight (all k for the final clustering), levels of m or
more points reclustered one level up, and an exponential histogram of buckets for the window.
Duplicates (the program's fallback to random rows) are not modelled: use data without them."""
import numpy as np

from kmeanspp_reference import hash_uniform, kmeanspp
from reference import sq_distances

STREAM_STREAM = 18


class Run:
    def __init__(self, k, seed, max_iter=100):
        self.k, self.seed, self.max_iter = k, seed, max_iter
        self.calls = 0      # clusterings of more than k weighted points so far
        self.combined = 0

    def cluster(self, x, w, final=False):
        """x: float32 (n, d); w: None (each point weighs 1) or int weights. Returns (centres
        float32 (q, d), weights int (q,)): the summary of x."""
        k = self.k
        ww = np.ones(len(x), dtype=np.int64) if w is None else np.asarray(w, dtype=np.int64)
        carrying = ww > 0
        if carrying.sum() <= k:
            assert not final or carrying.sum() == k
            return x[carrying], ww[carrying]
        seed = int(hash_uniform(self.seed, STREAM_STREAM, self.calls) * 2.0 ** 53)
        self.calls += 1
        rows = kmeanspp(x, k, seed, weights=None if w is None else ww)
        x64 = x.astype(np.float64)
        c = x[rows].astype(np.float32)
        prev = np.full(len(x), -1)
        for _ in range(self.max_iter):
            labels = np.argmin(sq_distances(x64, c.astype(np.float64)), axis=1)
            changed = np.any(labels != prev)
            prev = labels
            if not changed:
                break
            for q in range(k):
                members = labels == q
                total = ww[members].sum()
                if total > 0:
                    c[q] = ((ww[members, None] * x64[members]).sum(axis=0) / total).astype(np.float32)
        served = np.bincount(prev, weights=ww, minlength=k).astype(np.int64)
        keep = np.ones(k, dtype=bool) if final else served > 0
        return c[keep], served[keep]


def entire(x, k, seed, m, max_iter=100):
    """Returns (centres, {blocks, levels, combined, summary, kmeans_runs})."""
    run = Run(k, seed, max_iter)
    levels = []  # [(points, weights)]
    n = len(x)
    for first in range(0, n, m):
        out = run.cluster(x[first:first + m], None)
        i = 0
        while True:
            if i == len(levels):
                levels.append((np.empty((0, x.shape[1]), np.float32), np.empty(0, np.int64)))
            levels[i] = (np.vstack([levels[i][0], out[0]]), np.concatenate([levels[i][1], out[1]]))
            if len(levels[i][1]) < m:
                break
            out = run.cluster(*levels[i])
            levels[i] = (levels[i][0][:0], levels[i][1][:0])
            run.combined += 1
            i += 1
    union = (np.vstack([lv[0] for lv in levels]), np.concatenate([lv[1] for lv in levels]))
    centres, weights = run.cluster(*union, final=True)
    assert weights.sum() == n
    return centres, {"blocks": -(-n // m), "levels": len(levels), "combined": run.combined,
                     "summary": len(union[1]), "kmeans_runs": run.calls}


def window(x, k, seed, m, size, every=0, max_iter=100):
    """Returns (centres, {blocks, combined, buckets, queries, summary, kmeans_runs})."""
    run = Run(k, seed, max_iter)
    buckets = []  # [cls, end, points, weights]
    n, queries, next_query = len(x), 0, every or None

    def query():
        pts = np.vstack([b[2] for b in buckets])
        wts = np.concatenate([b[3] for b in buckets])
        return run.cluster(pts, wts, final=True)[0], len(wts)

    for first in range(0, n, m):
        now = min(first + m, n)
        buckets.append([0, now, *run.cluster(x[first:now], None)])
        cls = 0
        while sum(1 for b in buckets if b[0] == cls) > 2:
            i = next(i for i, b in enumerate(buckets) if b[0] == cls)
            a, b = buckets[i], buckets[i + 1]
            merged = run.cluster(np.vstack([a[2], b[2]]), np.concatenate([a[3], b[3]]))
            buckets[i] = [cls + 1, b[1], *merged]
            del buckets[i + 1]
            run.combined += 1
            cls += 1
        buckets = [b for b in buckets if b[1] > max(now - size, 0)]
        if next_query and now >= next_query and now < n:
            query()
            queries += 1
            next_query = (now // every + 1) * every
    centres, summary = query()
    return centres, {"blocks": -(-n // m), "combined": run.combined, "buckets": len(buckets),
                     "queries": queries + 1, "summary": summary, "kmeans_runs": run.calls}
