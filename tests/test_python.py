"""The Python package (python/pragmaclust): its estimators against the command line programs of the
same variant (the same labels and centroids for the same inputs), against scikit-learn (DBSCAN's
labels, also on iris, s1 and letter; KMeans from the same initial centroids on iris and s1, and
as scikit-learn's fixed point on letter), incremental density peaks against
a fit from scratch, bad input raising the library's message as the right exception, and
`pip install ./python` into a fresh virtual environment with no network. The package is imported
from python/ with the libraries of $PRAGMACLUST_LIB_DIR (default the checkout's lib/) and compared
with the programs of $PRAGMACLUST_BIN (default bin/); the gpu variant runs with allow_host unless
PRAGMACLUST_REQUIRE_GPU=1."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO_ROOT, bin_dir, default_signals, load_labels, run

sys.path.insert(0, str(REPO_ROOT / "python"))
LIB_DIR = Path(os.environ.setdefault("PRAGMACLUST_LIB_DIR", str(REPO_ROOT / "lib"))).resolve()
import pragmaclust  # noqa: E402
from pragmaclust import estimators  # noqa: E402

REQUIRE_GPU = os.environ.get("PRAGMACLUST_REQUIRE_GPU") == "1"


@pytest.fixture(params=["seq", "omp", "gpu"])
def both(request):
    """(the variant's name, its CLI program) where its library and program are built."""
    v = request.param
    cli = bin_dir() / f"pragmaclust-{v}"
    if not (LIB_DIR / f"libpragmaclust-{v}.so").is_file() or not cli.is_file():
        pytest.skip(f"the {v} library or program is not built")
    if v == "gpu":
        pragmaclust.init("gpu", allow_host=not REQUIRE_GPU)
    return v, cli


def cli_run(cli, *args):
    extra = ["--allow-host"] if cli.name.endswith("-gpu") and not REQUIRE_GPU else []
    rc, out, err = run([str(cli), *map(str, args), *extra, "--quiet"], timeout=600)
    assert rc == 0, err
    return out


def blobs(work, cli, spec="gen:blobs:n=3001,d=3,centers=5,std=0.05,seed=4"):
    path = work / "x.npy"
    cli_run(cli, "generate", spec, "--out", path)
    return path, np.load(path)


@pytest.mark.parametrize("init", ["random", "k-means++"])
def test_kmeans_matches_the_program(both, work, init):
    """KMeans gives the program's labels and centroids bit for bit (same seed, same options)."""
    v, cli = both
    path, x = blobs(work, cli)
    cli_run(cli, "kmeans", path, "-k", 7, "--init", "kmeans++" if init == "k-means++" else init, "--seed", 11,
            "--labels", work / "l.npy", "--centroids", work / "c.npy")
    km = pragmaclust.KMeans(7, init=init, random_state=11, max_iter=1000, variant=v).fit(x)
    assert np.array_equal(km.labels_, load_labels(work / "l.npy"))
    assert np.array_equal(km.cluster_centers_, np.load(work / "c.npy"))
    assert km.converged_ and km.n_iter_ >= 1 and {"assign", "update", "total"} <= set(km.timings_)
    assert np.array_equal(km.predict(x), km.labels_)  # well-separated blobs: no near ties
    assert km.score(x) == pytest.approx(-km.inertia_, rel=1e-5)
    d = km.transform(x[:5])
    assert d.shape == (5, 7) and np.allclose(d.min(axis=1) ** 2, -np.array([km.score(x[i:i + 1]) for i in range(5)]))


def test_kmeans_out_of_core_is_the_fit_in_memory():
    """device_memory below what the points need on the device (the gpu library): they stream through
    it in blocks (pragmaclust_kmeans' out-of-core path) to the same labels and centroids; a limit too
    small for the labels and centroids is the library's InvalidArgumentError."""
    if not (LIB_DIR / "libpragmaclust-gpu.so").is_file():
        pytest.skip("the gpu library is not built")
    pragmaclust.init("gpu", allow_host=not REQUIRE_GPU)
    x = np.random.default_rng(3).random((3001, 4), dtype=np.float32)  # 48 KB of points, 12 KB of labels

    def fit(**kw):
        return pragmaclust.KMeans(6, init="random", random_state=2, max_iter=1000, variant="gpu", **kw).fit(x)

    whole, streamed = fit(), fit(device_memory=40_000)
    assert np.array_equal(whole.labels_, streamed.labels_) and whole.n_iter_ == streamed.n_iter_
    assert np.array_equal(whole.cluster_centers_, streamed.cluster_centers_)
    with pytest.raises(pragmaclust.InvalidArgumentError, match="bytes of device memory are too few for k-means"):
        fit(device_memory=100)
    with pytest.raises(ValueError, match="device_memory must be an int >= 1 or None"):
        fit(device_memory=0)


def test_streaming_kmeans_matches_the_program(both, work):
    """StreamingKMeans.fit gives the streamkm program's centres and labels; partial_fit over batches
    of whole chunks gives the same centres."""
    v, cli = both
    path, x = blobs(work, cli, "gen:blobs:n=6000,d=3,centers=6,std=0.05,seed=8")
    cli_run(cli, "streamkm", path, "-k", 6, "--chunk-size", 1000, "--repetitions", 5, "--seed", 9,
            "--centres", work / "c.npy", "--labels", work / "l.npy")
    sk = pragmaclust.StreamingKMeans(6, chunk_size=1000, repetitions=5, random_state=9, variant=v).fit(x)
    assert np.array_equal(sk.cluster_centers_, np.load(work / "c.npy"))
    assert np.array_equal(sk.labels_, load_labels(work / "l.npy"))
    assert sk.inertia_ == pytest.approx(-sk.score(x), rel=1e-5)
    part = pragmaclust.StreamingKMeans(6, chunk_size=1000, repetitions=5, random_state=9, variant=v)
    for first in range(0, 6000, 2000):
        part.partial_fit(x[first:first + 2000])
    assert np.array_equal(part.cluster_centers_, sk.cluster_centers_)
    assert part.n_chunks_ == 6 and part.n_samples_seen_ == 6000
    import copy
    with pytest.raises(RuntimeError, match="copy"):
        copy.deepcopy(part).partial_fit(x[:1000])


def test_dbscan_matches_the_program_and_sklearn(both, work):
    """DBSCAN's labels equal the program's and scikit-learn's; its core points are scikit-learn's."""
    v, cli = both
    path, x = blobs(work, cli, "gen:blobs:n=4001,d=2,centers=6,std=0.03,noise=0.1,seed=2")
    cli_run(cli, "dbscan", path, "--eps", 0.02, "--min-pts", 6, "--labels", work / "l.npy")
    db = pragmaclust.DBSCAN(eps=0.02, min_samples=6, variant=v).fit(x)
    assert np.array_equal(db.labels_, load_labels(work / "l.npy"))
    sk = pytest.importorskip("sklearn.cluster").DBSCAN(eps=0.02, min_samples=6).fit(x.astype(np.float64))
    assert np.array_equal(db.labels_, sk.labels_)
    assert np.array_equal(db.core_sample_indices_, sk.core_sample_indices_)
    assert np.array_equal(db.components_, x[sk.core_sample_indices_])
    assert db.n_clusters_ == sk.labels_.max() + 1


def test_density_peaks_matches_the_program(both, work):
    v, cli = both
    path, x = blobs(work, cli, "gen:blobs:n=2001,d=2,centers=4,std=0.05,seed=6")
    cli_run(cli, "dpc", path, "--dc", 0.05, "--peaks", 4, "--labels", work / "l.npy")
    dp = pragmaclust.DensityPeaks(dc=0.05, n_peaks=4, variant=v).fit(x)
    assert np.array_equal(dp.labels_, load_labels(work / "l.npy"))
    assert dp.n_clusters_ == 4 and dp.alive_.all() and (dp.dependent_ == -1).sum() == 1


def test_density_peaks_insert_and_delete_match_a_fit_from_scratch(work):
    """Batches inserted and deleted leave rho, delta and labels as a fit from scratch of the live
    points (same dc) gives them."""
    x = np.random.default_rng(3).normal(size=(1500, 2)).astype(np.float32)
    dp = pragmaclust.DensityPeaks(dc=0.3, n_peaks=3, capacity=1500, variant="seq").fit(x[:1000])
    dp.insert(x[1000:1250]).insert(x[1250:])
    gone = np.arange(0, 1500, 7)
    dp.delete(gone)
    live = np.setdiff1d(np.arange(1500), gone)
    ref = pragmaclust.DensityPeaks(dc=0.3, n_peaks=3, variant="seq").fit(x[live])
    assert np.array_equal(dp.alive_.astype(bool), np.isin(np.arange(1500), live))
    assert np.array_equal(dp.rho_[live], ref.rho_) and np.allclose(dp.delta_[live], ref.delta_)
    assert np.array_equal(dp.labels_[live], ref.labels_) and (dp.labels_[gone] == -1).all()
    graph = dp.decision_graph()
    assert np.array_equal(graph["id"], live) and np.array_equal(graph["label"], ref.labels_)


@pytest.mark.parametrize("name,k", [("iris", 3), ("s1", 15)])
def test_kmeans_matches_sklearn_from_the_same_centroids(data_dir, name, k):
    """iris and s1 (integers, exact in float32): scikit-learn's Lloyd from the same initial rows
    finds the same labels and centroids."""
    path = data_dir / f"{name}.txt"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    x = np.loadtxt(path, ndmin=2)
    init = x[np.random.default_rng(0).choice(len(x), k, replace=False)]
    km = pragmaclust.KMeans(k, init=init, max_iter=1000).fit(x)
    sk = pytest.importorskip("sklearn.cluster").KMeans(k, init=init, n_init=1, algorithm="lloyd", tol=0,
                                                       max_iter=1000).fit(x)
    assert np.array_equal(km.labels_, sk.labels_)
    np.testing.assert_allclose(km.cluster_centers_, sk.cluster_centers_, rtol=1e-4, atol=1e-4 * np.abs(x).max())
    assert km.inertia_ == pytest.approx(sk.inertia_, rel=1e-4)


def test_kmeans_on_letter_is_a_fixed_point_of_sklearn(data_dir):
    """letter (20000 x 16, k = 26) has exact distance ties that scikit-learn breaks by rounding and
    pragmaclust by the lowest index (see test_kmeans.py), so from the same start they can part ways:
    started from the Python fit's centroids, scikit-learn must find them a fixed point."""
    path = data_dir / "letter.txt"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    x = np.loadtxt(path, ndmin=2)
    init = x[np.random.default_rng(0).choice(len(x), 26, replace=False)]
    km = pragmaclust.KMeans(26, init=init, max_iter=1000, variant="seq").fit(x)
    sk = pytest.importorskip("sklearn.cluster").KMeans(26, init=km.cluster_centers_.astype(np.float64), n_init=1,
                                                       algorithm="lloyd", tol=0, max_iter=1000).fit(x)
    assert np.mean(km.labels_ == sk.labels_) >= 0.999
    assert km.inertia_ == pytest.approx(sk.inertia_, rel=1e-4)


@pytest.mark.parametrize("name,eps,min_samples", [("iris", 3e5, 5), ("s1", 2e4, 10), ("letter", 2500, 10)])
def test_dbscan_matches_sklearn_on_real_data(data_dir, name, eps, min_samples):
    """The real data sets (iris, s1, letter; several clusters and noise at these radii): the same
    labels and core points as scikit-learn's DBSCAN."""
    path = data_dir / f"{name}.txt"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    x = np.loadtxt(path, ndmin=2)
    db = pragmaclust.DBSCAN(eps=eps, min_samples=min_samples, variant="seq").fit(x)
    sk = pytest.importorskip("sklearn.cluster").DBSCAN(eps=eps, min_samples=min_samples).fit(x)
    assert sk.labels_.max() >= 1 and (sk.labels_ < 0).any()
    assert np.array_equal(db.labels_, sk.labels_)
    assert np.array_equal(db.core_sample_indices_, sk.core_sample_indices_)


def test_sklearn_conventions():
    """clone and get_params/set_params as scikit-learn's; fit returns self; fit_predict is labels_."""
    base = pytest.importorskip("sklearn.base")
    km = pragmaclust.KMeans(4, random_state=3, tol=0.5)
    twin = base.clone(km)
    assert twin.get_params() == km.get_params() and twin is not km
    assert km.set_params(n_clusters=5) is km and km.n_clusters == 5
    x = np.random.default_rng(1).random((300, 2))
    assert np.array_equal(pragmaclust.DBSCAN(eps=0.1).fit_predict(x), pragmaclust.DBSCAN(eps=0.1).fit(x).labels_)


@pytest.mark.parametrize("make", [lambda: pragmaclust.KMeans(3, random_state=0, variant="seq"),
                                  lambda: pragmaclust.StreamingKMeans(3, random_state=0, variant="seq"),
                                  lambda: pragmaclust.DBSCAN(variant="seq"),
                                  lambda: pragmaclust.DensityPeaks(n_peaks=2, variant="seq")],
                         ids=["KMeans", "StreamingKMeans", "DBSCAN", "DensityPeaks"])
def test_sklearn_check_estimator(make):
    """scikit-learn's own estimator checks pass, every one of them."""
    checks = pytest.importorskip("sklearn.utils.estimator_checks")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks.check_estimator(make())


def test_points_are_not_copied_when_they_fit():
    """float32 in C order goes to the library as it is; anything else is converted once."""
    a = np.ones((10, 3), dtype=np.float32)
    assert estimators._points(a) is a
    assert estimators._points(a.astype(np.float64)).dtype == np.float32
    f = np.asfortranarray(a)
    assert estimators._points(f).flags.c_contiguous and not np.shares_memory(estimators._points(f), f)


def test_bad_input_raises_the_library_message():
    x = np.random.default_rng(2).random((50, 2))
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(pragmaclust.InvalidArgumentError,
                       match=r"x\[7\] \(point 3, feature 1\) is nan; NaN and infinity are not accepted"):
        pragmaclust.KMeans(3, variant="seq").fit(bad)
    with pytest.raises(ValueError, match="eps must be finite and > 0"):
        pragmaclust.DBSCAN(eps=0.0, variant="seq").fit(x)
    with pytest.raises(ValueError, match="2-D array"):
        pragmaclust.KMeans(3).fit(x[:, 0])
    with pytest.raises(ValueError, match="n_clusters"):
        pragmaclust.KMeans(51).fit(x)
    with pytest.raises(ValueError, match="init must be one of"):
        pragmaclust.KMeans(3, init="kmeans||").fit(x)
    with pytest.raises(ValueError, match="unknown variant"):
        pragmaclust.DBSCAN(variant="cuda").fit(x)
    with pytest.raises(ValueError, match="features"):
        pragmaclust.KMeans(3, random_state=0).fit(x).predict(np.ones((2, 3)))
    with pytest.raises(pragmaclust.NotFittedError, match="not fitted"):
        pragmaclust.KMeans(3).predict(x)
    dp = pragmaclust.DensityPeaks(dc=0.2, n_peaks=2, variant="seq").fit(x)
    with pytest.raises(pragmaclust.InvalidArgumentError, match="capacity"):
        dp.insert(x[:5])
    with pytest.raises(pragmaclust.InvalidArgumentError):
        dp.delete([4, 4])
    assert dp.labels_.shape == (50,)  # the model survives a refused batch


INTERRUPT = """
import os, signal, sys, threading
import numpy as np
sys.path.insert(0, sys.argv[1])
import pragmaclust
x = np.random.default_rng(0).random((400_000, 16), dtype=np.float32)
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    pragmaclust.KMeans(200, init="random", max_iter=100000, random_state=1, variant="seq").fit(x)
    print("not interrupted")
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e)
print("then:", pragmaclust.KMeans(3, random_state=1, variant="seq").fit(x[:1000]).converged_)
y = np.random.default_rng(1).random((60_000, 2), dtype=np.float32)
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    pragmaclust.DBSCAN(eps=0.01, min_samples=5, index="none", variant="seq").fit(y)  # every pair: seconds
    print("not interrupted")
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e)
print("labels:", pragmaclust.DBSCAN(eps=0.05, variant="seq").fit(y[:500]).labels_.max() >= 0)
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    pragmaclust.DensityPeaks(dc=0.01, n_peaks=3, index="none", variant="seq").fit(y)  # every pair: seconds
    print("not interrupted")
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e)
z = np.random.default_rng(2).random((3_000_000, 8), dtype=np.float32)
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    pragmaclust.StreamingKMeans(50, random_state=1, variant="seq").fit(z)  # about 30 chunks of 12,000 points
    print("not interrupted")
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e)
"""


def test_ctrl_c_stops_a_long_fit_at_the_next_iteration(tmp_path):
    """SIGINT during a k-means fit (uniform data, k = 200: hundreds of iterations) raises
    KeyboardInterrupt with the library's message once the running iteration ends; during a DBSCAN
    or a density peaks of every pair once the running phase ends; during a streaming k-means once
    the running chunk ends. The library works afterwards. In a child process, so that a fit that
    ignored it could not hang the tests."""
    script = tmp_path / "interrupt.py"
    script.write_text(INTERRUPT)
    env = dict(os.environ, PRAGMACLUST_LIB_DIR=str(LIB_DIR))
    p = subprocess.run([sys.executable, str(script), str(REPO_ROOT / "python")], capture_output=True, text=True,
                       env=env, timeout=300, preexec_fn=default_signals)
    assert p.returncode == 0, p.stderr
    assert "KeyboardInterrupt: k-means: interrupted after" in p.stdout, p.stdout
    assert "then: True" in p.stdout
    assert "KeyboardInterrupt: dbscan: interrupted after the" in p.stdout and "labels: True" in p.stdout
    assert "KeyboardInterrupt: density peaks: interrupted after" in p.stdout
    assert "KeyboardInterrupt: streaming k-means: interrupted after" in p.stdout
    assert "not interrupted" not in p.stdout


LOAD_ORDER = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, pragmaclust
x = np.random.default_rng(0).random((500, 3), dtype=np.float32)
pragmaclust.KMeans(3, variant="omp", random_state=0).fit(x)
print(pragmaclust.init("gpu", allow_host=sys.argv[2] == "1"))
pragmaclust.KMeans(3, variant="gpu", random_state=0).fit(x)
pragmaclust.KMeans(3, variant="gpu", random_state=0, device_memory=6_000).fit(x)  # out of core: copies nowait
"""


def test_gpu_library_after_the_omp_library(tmp_path):
    """The gpu library, loaded into a process that used the omp library first, still finds the
    GPU (a GPU is required under PRAGMACLUST_REQUIRE_GPU=1): it lists libomptarget before libomp,
    so that omp_get_num_devices is libomptarget's (variants/clang.mk, SHARED_LDFLAGS_gpu); and its
    out-of-core fit, whose copies are `target update nowait` tasks, runs (the package loads the gpu
    library before the omp one, so that libomp starts with libomptarget's hook for them)."""
    gpu_library = LIB_DIR / "libpragmaclust-gpu.so"
    if not gpu_library.is_file() or not (LIB_DIR / "libpragmaclust-omp.so").is_file():
        pytest.skip("the gpu or omp library is not built")
    readelf = subprocess.run(["readelf", "-d", str(gpu_library)], capture_output=True, text=True)
    if readelf.returncode == 0 and "libomptarget" in readelf.stdout:  # clang's build (GCC's has no libomptarget)
        needed = [line.split("[")[1].rstrip("]") for line in readelf.stdout.splitlines() if "(NEEDED)" in line]
        omptarget = next(i for i, name in enumerate(needed) if name.startswith("libomptarget"))
        assert omptarget < next(i for i, name in enumerate(needed) if name.startswith("libomp.")), needed
    script = tmp_path / "order.py"
    script.write_text(LOAD_ORDER)
    p = subprocess.run([sys.executable, str(script), str(REPO_ROOT / "python"), "0" if REQUIRE_GPU else "1"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    if REQUIRE_GPU:
        assert p.stdout.startswith("GPU "), p.stdout


def test_pip_installs_the_package_without_network(tmp_path):
    """`pip install --no-index ./python` into a fresh virtual environment (seeing Debian's NumPy):
    the installed package carries the built libraries and gives the same labels."""
    venv = tmp_path / "venv"
    rc, out, err = run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], timeout=300)
    assert rc == 0, err
    rc, out, err = run([str(venv / "bin" / "pip"), "install", "--no-index", "-q", str(REPO_ROOT / "python")],
                       timeout=600)
    assert rc == 0, f"{out}\n{err}"
    script = ("import numpy as np, pragmaclust, json; x = np.random.default_rng(5).random((500, 2));"
              "i = pragmaclust.info('seq'); l = pragmaclust.DBSCAN(eps=0.05, variant='seq').fit(x).labels_;"
              "print(json.dumps([i['library'], l.tolist()]))")
    env = {k: v for k, v in os.environ.items() if k not in ("PRAGMACLUST_LIB_DIR", "PYTHONPATH")}
    p = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    import json
    library, labels = json.loads(p.stdout)
    assert library.startswith(str(venv)) and library.endswith("pragmaclust/lib/libpragmaclust-seq.so")
    x = np.random.default_rng(5).random((500, 2))
    assert labels == pragmaclust.DBSCAN(eps=0.05, variant="seq").fit(x).labels_.tolist()
