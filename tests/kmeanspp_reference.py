"""An independent k-means++ seeding that follows the documented rule of algorithms/kmeanspp.h
step by step: the counter-based generator of common/synth.c (SplitMix64 finaliser), prefix sums
in blocks of PC_SCAN_BLOCK added in the same order, and a linear scan for the first index whose
next prefix sum exceeds u * total (the program searches instead). Plain Python floats are IEEE
doubles, so the same rule gives the same picks. d2_sample is the general rule: rounds of several
independent draws, as k-means# makes them."""
import math

import numpy as np

MASK = (1 << 64) - 1
STREAM_KMEANSPP = 16
SCAN_BLOCK = 256


def mix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def hash_uniform(seed, stream, index):
    h = mix64((mix64(seed ^ ((stream * 0xD1B54A32D192ED03) & MASK)) + index) & MASK)
    return (h >> 11) * 2.0 ** -53


def exclusive_prefix(values):
    """Exclusive prefix sums E[0..n) added as common/scan.c adds them (blocks of SCAN_BLOCK,
    then the block sums), and the total E[n]."""
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
    return [out[i] + offsets[i // SCAN_BLOCK] for i in range(n)], running


def wheel_pick(wheel, total, target):
    """The documented roulette-wheel rule by a linear scan: the first i with E[i+1] > target
    (E[n] = total), the target first lowered below total if rounding made it reach it."""
    if target >= total:
        target = math.nextafter(total, 0.0)
    for i in range(len(wheel)):
        if (wheel[i + 1] if i + 1 < len(wheel) else total) > target:
            return i
    raise AssertionError("no point carries mass")


def d2_sample(x, w, rounds, draws, seed, stream, first_draw=0):
    """D^2 sampling as kmeanspp.h states it: `rounds` rounds of `draws` independent picks.
    Returns (chosen, dist, nearest, cost) like kmpp_sample."""
    n = len(x)
    dist, nearest, chosen = [math.inf] * n, [0] * n, []
    for r in range(rounds):
        mass = list(w) if r == 0 else [w[i] * dist[i] for i in range(n)]
        wheel, total = exclusive_prefix(mass)
        if not total > 0:
            break
        picks = [wheel_pick(wheel, total, hash_uniform(seed, stream, first_draw + r * draws + q) * total)
                 for q in range(draws)]
        base = len(chosen)
        chosen += picks
        for i in range(n):
            for q, c in enumerate(picks):
                s = 0.0
                for j in range(x.shape[1]):
                    diff = x[i, j] - x[c, j]
                    s += diff * diff
                if s < dist[i]:
                    dist[i], nearest[i] = s, base + q
    cost = exclusive_prefix([w[i] * dist[i] for i in range(n)])[1] if chosen else 0.0
    return chosen, dist, nearest, cost


def kmeanspp(x, k, seed, weights=None):
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    w = [1.0] * len(x) if weights is None else [float(np.float32(v)) for v in weights]
    chosen = d2_sample(x, w, k, 1, seed, STREAM_KMEANSPP)[0]
    assert len(chosen) == k, "fewer weighted points than k"
    return chosen
