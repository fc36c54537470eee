"""reference_kmeans.py - the bars pragmaclust's k-means is measured against (issue: "k-means at
the hardware limit"), timed the same way as bench_kmeans.py times our variants.

  - PyTorch on the GPU: a matmul-based Lloyd iteration, distances |c|^2 - 2 x.c through one
    float32 GEMM (addmm), argmin, then index_add_ and bincount for the sums and counts. With
    tf32=True the GEMM may use TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32).
  - scikit-learn's KMeans(algorithm="lloyd") on the CPU with a given number of threads.
  - Flash-KMeans (svg-project/flash-kmeans, Triton), where it can be imported: its
    batch_kmeans_Euclid, the fastest public GPU k-means at TF32 precision (issue 25), on float32
    data (its default: TF32 dot products) and on fp16 data. Never vendored here: give a checkout.

Both take uniform [0, 1) float32 data and the first k points as initial centroids, and report
per-iteration seconds (median over the timed iterations) and, for PyTorch, the assign/update
split measured with CUDA events. Import this module only where torch or sklearn is installed;
bench_kmeans.py does that when they are importable.
"""
import importlib
import statistics
import sys
import time


def torch_available():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def sklearn_available():
    try:
        import sklearn  # noqa: F401
        import threadpoolctl  # noqa: F401
        return True
    except ImportError:
        return False


def torch_kmeans(n, d, k, iterations=20, warmup=3, tf32=False, seed=7):
    """Returns {"name", "iteration_s", "assign_s", "update_s", "device"} (medians, seconds)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand((n, d), device="cuda", dtype=torch.float32, generator=gen)
    c = x[:k].clone()
    start, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    totals, assigns, updates = [], [], []
    for it in range(warmup + iterations):
        start.record()
        dist = torch.addmm((c * c).sum(1)[None, :], x, c.T, beta=1.0, alpha=-2.0)
        labels = dist.argmin(1)
        mid.record()
        sums = torch.zeros_like(c).index_add_(0, labels, x)
        counts = torch.bincount(labels, minlength=k).to(torch.float32)[:, None]
        c = torch.where(counts > 0, sums / counts.clamp(min=1.0), c)
        end.record()
        end.synchronize()
        if it >= warmup:
            assigns.append(start.elapsed_time(mid) * 1e-3)
            updates.append(mid.elapsed_time(end) * 1e-3)
            totals.append(start.elapsed_time(end) * 1e-3)
    del dist, x
    torch.cuda.empty_cache()
    return {"name": "torch " + ("tf32" if tf32 else "fp32"), "iteration_s": statistics.median(totals),
            "assign_s": statistics.median(assigns), "update_s": statistics.median(updates),
            "device": torch.cuda.get_device_name()}


def flash_import(path=None):
    """Flash-KMeans' package from the checkout at `path` (its root, holding flash_kmeans/) or as
    installed; None where it cannot be imported or PyTorch has no CUDA device."""
    if path:
        sys.path.insert(0, str(path))
    try:
        module = importlib.import_module("flash_kmeans")
    except Exception:  # its own imports (torch, triton) may fail in any way
        return None
    return module if torch_available() else None


def flash_kmeans(module, n, d, k, iterations=20, warmup=2, precision="tf32", seed=7):
    """Flash-KMeans' Lloyd (batch_kmeans_Euclid, one batch) on uniform [0, 1) data from the first k
    points: seconds per iteration of a run of `iterations` (its loop tests the shift each pass;
    tol -1 never stops it), after `warmup` passes that compile its kernels. precision "tf32":
    float32 data, whose Triton dot products use TF32 (Flash's default); "fp16": fp16 data."""
    import torch
    dtype = {"tf32": torch.float32, "fp16": torch.float16}[precision]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand((1, n, d), device="cuda", dtype=torch.float32, generator=gen).to(dtype)
    init = x[:, :k].clone()
    module.batch_kmeans_Euclid(x, k, max_iters=warmup, tol=-1.0, init_centroids=init.clone())
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    _, _, passes = module.batch_kmeans_Euclid(x, k, max_iters=iterations, tol=-1.0, init_centroids=init.clone())
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    del x, init
    torch.cuda.empty_cache()
    return {"name": f"flash {precision}", "iteration_s": elapsed / passes, "assign_s": None, "update_s": None,
            "device": torch.cuda.get_device_name()}


def sklearn_kmeans(n, d, k, iterations=5, threads=16, seed=7):
    """scikit-learn Lloyd with `threads` threads: seconds per iteration of one fit (no split)."""
    import numpy as np
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits
    x = np.random.default_rng(seed).random((n, d), dtype=np.float32)
    with threadpool_limits(limits=threads):
        km = KMeans(n_clusters=k, init=x[:k], n_init=1, max_iter=iterations, tol=0.0, algorithm="lloyd")
        t0 = time.perf_counter()
        km.fit(x)
        elapsed = time.perf_counter() - t0
    return {"name": f"sklearn {threads}t", "iteration_s": elapsed / km.n_iter_, "assign_s": None, "update_s": None,
            "device": f"host, {threads} threads"}
