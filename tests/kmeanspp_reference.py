"""An independent k-means++ seeding that follows the documented rule of algorithms/kmeanspp.h
step by step: the counter-based generator of common/synth.c (SplitMix64 finaliser), prefix sums
in blocks of PC_SCAN_BLOCK added in the same order, and the first index whose inclusive prefix sum
exceeds u * total. Plain Python floats are IEEE doubles, so the same rule gives the same picks."""
import numpy as np

MASK = (1 << 64) - 1
STREAM_KMEANSPP = 16
SCAN_BLOCK = 2048


def mix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def hash_uniform(seed, stream, index):
    h = mix64((mix64(seed ^ ((stream * 0xD1B54A32D192ED03) & MASK)) + index) & MASK)
    return (h >> 11) * 2.0 ** -53


def inclusive_prefix(values):
    n = len(values)
    blocks = (n + SCAN_BLOCK - 1) // SCAN_BLOCK
    out, sums = [0.0] * n, []
    for b in range(blocks):
        running = 0.0
        for i in range(b * SCAN_BLOCK, min(n, (b + 1) * SCAN_BLOCK)):
            out[i] = running
            running += values[i]
        sums.append(running)
    offsets, running = [], 0.0
    for v in sums:
        offsets.append(running)
        running += v
    return [out[i] + offsets[i // SCAN_BLOCK] + values[i] for i in range(n)], running


def kmeanspp(x, k, seed, weights=None):
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    n = len(x)
    w = [1.0] * n if weights is None else [float(np.float32(v)) for v in weights]
    mass = list(w)
    chosen = []
    for r in range(k):
        wheel, total = inclusive_prefix(mass)
        assert total > 0, "fewer weighted points than k"
        target = hash_uniform(seed, STREAM_KMEANSPP, r) * total
        lo, hi = 0, n - 1
        while lo < hi:
            mid = lo + (hi - lo) // 2
            if wheel[mid] > target:
                hi = mid
            else:
                lo = mid + 1
        while lo > 0 and mass[lo] == 0.0:
            lo -= 1
        chosen.append(lo)
        c = x[lo]
        for i in range(n):
            s = 0.0
            for j in range(x.shape[1]):
                diff = x[i, j] - c[j]
                s += diff * diff
            m = w[i] * s
            mass[i] = m if r == 0 or m < mass[i] else mass[i]
    return chosen
