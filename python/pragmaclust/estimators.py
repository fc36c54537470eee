"""The estimators: KMeans, StreamingKMeans, DBSCAN and DensityPeaks with scikit-learn's conventions (parameters
in __init__ only, fit returns self, results in attributes ending in _). The points are passed to
the library as float32 in C order: an array already so is used as it is, any other is converted
once (a copy)."""
import ctypes
import inspect

import numpy as np

from . import _capi

try:  # scikit-learn's base classes and NotFittedError when installed (clone, repr, get_params), else the same by hand
    from sklearn.base import BaseEstimator as _Base, ClusterMixin as _ClusterMixin
    from sklearn.base import TransformerMixin as _TransformerMixin
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - exercised where scikit-learn is absent
    class _TransformerMixin:
        """Marks an estimator with transform (scikit-learn's mixin sets its tags)."""

    class NotFittedError(ValueError, AttributeError):
        """A fitted attribute or method used before fit (scikit-learn's exception of that name)."""

    class _Base:
        @classmethod
        def _get_param_names(cls):
            return sorted(p for p in inspect.signature(cls.__init__).parameters if p != "self")

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            for name, value in params.items():
                if name not in self._get_param_names():
                    raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}")
                setattr(self, name, value)
            return self

    class _ClusterMixin:
        def fit_predict(self, X, y=None):
            return self.fit(X).labels_


def _points(X, name="X"):
    """X as a C-ordered float32 (n, d) array (no copy when it already is one). Shapes and kinds the
    library cannot take are refused here with scikit-learn's wording; values (NaN, infinity) are
    the library's to check."""
    if hasattr(X, "toarray") and hasattr(X, "nnz"):
        raise TypeError(f"{name} is a sparse matrix: pragmaclust takes dense data (use {name}.toarray())")
    a = np.asarray(X)
    if a.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers")
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_features), got shape {a.shape}. "
                         "Reshape your data with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample.")
    for count, what in ((a.shape[0], "sample"), (a.shape[1], "feature")):
        if count == 0:
            raise ValueError(f"Found array with 0 {what}(s) (shape={a.shape}) while a minimum of 1 is required.")
    if a.dtype.kind not in "biuf":
        a = a.astype(np.float64)  # objects holding numbers (anything else raises numpy's TypeError or ValueError)
    return np.ascontiguousarray(a, dtype=np.float32)


def _ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def _choice(value, table, what):
    if value not in table:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, table))}, got {value!r}")
    return table[value]


def _count(name, value, optional=False):
    """value as an int >= 1 (None allowed when optional), else ValueError naming the parameter."""
    if optional and value is None:
        return None
    if not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1{' or None' if optional else ''}, got {value!r}")
    return int(value)


def _add_timings(total, result):
    """Adds a call's phase times (Result.timings) into the dict total."""
    for name, seconds in result.timings().items():
        total[name] = total.get(name, 0.0) + seconds


def _seed(random_state):
    """scikit-learn's random_state as the library's 64-bit seed: an int is the seed; None draws one
    from NumPy's global generator; a RandomState or Generator draws one from itself."""
    if random_state is None:
        return int(np.random.randint(0, 2**31 - 1))
    if isinstance(random_state, (int, np.integer)):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    raise ValueError(f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}")


class _Estimator(_Base):
    def _library(self):
        return _capi.library(self.variant)

    def _check_fitted(self, attribute):
        if not hasattr(self, attribute):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first")


class _NearestCentroid(_TransformerMixin):
    """predict, transform and score of a fitted cluster_centers_, in NumPy (float64)."""

    def _distances2(self, X):
        self._check_fitted("cluster_centers_")
        x = _points(X).astype(np.float64)
        if x.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {x.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        if not np.isfinite(x).all():
            raise ValueError("X holds NaN or infinity: only finite values can be assigned to a centroid")
        c = self.cluster_centers_.astype(np.float64)
        return np.maximum((x * x).sum(1)[:, None] - 2.0 * x @ c.T + (c * c).sum(1)[None, :], 0.0)

    def predict(self, X):
        """The nearest fitted centroid of each row (ties to the lowest index)."""
        return np.argmin(self._distances2(X), axis=1).astype(np.int32)

    def transform(self, X):
        """The Euclidean distance of each row to each fitted centroid, (n, k)."""
        return np.sqrt(self._distances2(X))

    def fit_transform(self, X, y=None):
        """fit(X), then transform(X)."""
        return self.fit(X).transform(X)

    def score(self, X, y=None):
        """Minus the sum of squared distances of the rows to their nearest fitted centroid."""
        return -float(self._distances2(X).min(axis=1).sum())


class _LibraryModel:
    """An estimator holding a model that lives in the library (_model, freed by _lib's
    `_free_function`): freed when the estimator goes, and left out of copies and pickles (a copy
    holds the results, not the model)."""

    def _free(self):
        model = self.__dict__.pop("_model", None)
        if model is not None:
            getattr(self._lib, self._free_function)(model)

    def __del__(self):
        try:
            self._free()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_model", None)
        state.pop("_lib", None)
        return state


class KMeans(_ClusterMixin, _NearestCentroid, _Estimator):
    """Lloyd's k-means (pragmaclust_kmeans).

    n_clusters: k. init: "k-means++", "random" (k distinct rows) or a (k, d) array of initial
    centroids. n_init: runs from different seeds (random_state + run), the one of least inertia
    kept; 1 with an array init. max_iter: passes at most. tol: None (default) stops when no
    assignment changes; a float also stops when the summed squared centroid shift is at most tol
    (an absolute bound, not scikit-learn's tol relative to the data's variance). update: where
    the gpu variant recomputes centroids ("device" or "host"). distance: "auto" (default: the
    fastest whose labels are "direct"'s on data without exact ties, as the program's --distance
    auto), "direct" (sum of squared differences; exact ties to the lowest index), "dot", and on
    the gpu variant "gemm", "gemm-tf32", "dot-3xtf32", "dot-tf32", "dot-fp16", "dot-bf16" (the
    tensor-core precisions: README, "k-means precision"). kernels: "tuned" or "portable" (the same
    labels). device_memory: the gpu variant's most device memory in bytes (None: what the GPU
    has free); points beyond it stream through the GPU in blocks, with the same results.
    variant: "seq", "omp" or "gpu" (None: pragmaclust.default_variant()).

    After fit: cluster_centers_ (k, d) float32, labels_ (n,) int32, inertia_ (the sum of squared
    distances to the nearest centroid), n_iter_, converged_, timings_ (seconds by phase),
    n_features_in_. predict, transform and score work in NumPy (float64) on the fitted centroids."""

    def __init__(self, n_clusters=8, *, init="k-means++", n_init=1, max_iter=300, tol=None, random_state=None,
                 update="device", distance="auto", kernels="tuned", device_memory=None, variant=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.update = update
        self.distance = distance
        self.kernels = kernels
        self.device_memory = device_memory
        self.variant = variant

    def fit(self, X, y=None):
        x = _points(X)
        n, d = x.shape
        lib = self._library()
        options = _capi.KMeansOptions()
        lib.kmeans_options_init(ctypes.byref(options))
        if not isinstance(self.n_clusters, (int, np.integer)) or not 1 <= self.n_clusters <= n:
            raise ValueError(f"n_clusters must be an int in [1, n_samples = {n}], got {self.n_clusters!r}")
        k = int(self.n_clusters)
        options.k, options.max_iter = k, _count("max_iter", self.max_iter)
        n_init = _count("n_init", self.n_init)
        options.tol = -1.0 if self.tol is None else float(self.tol)
        options.update = _choice(self.update, _capi.UPDATE, "update")
        options.distance = _choice(self.distance, _capi.DISTANCE, "distance")
        options.kernels = _choice(self.kernels, _capi.KERNELS, "kernels")
        options.device_memory = _count("device_memory", self.device_memory, optional=True) or 0
        given = None
        if isinstance(self.init, str):
            options.init = _choice(self.init, _capi.KMEANS_INIT, "init")
            runs = n_init
        else:
            given = _points(self.init, "init")
            if given.shape != (k, d):
                raise ValueError(f"init must have shape (n_clusters, n_features) = ({k}, {d}), got {given.shape}")
            options.init, runs = _capi.KMEANS_INIT_GIVEN, 1
        seed = _seed(self.random_state) if given is None else 0
        best = None
        for run in range(runs):
            options.seed = seed + run
            centroids = given.copy() if given is not None else np.empty((k, d), dtype=np.float32)
            labels = np.empty(n, dtype=np.int32)
            result = _capi.Result()
            lib.call("kmeans", _ptr(x, ctypes.c_float), n, d, ctypes.byref(options), _ptr(centroids, ctypes.c_float),
                     _ptr(labels, ctypes.c_int), ctypes.byref(result))
            if best is None or result.cost < best[2].cost:
                best = (centroids, labels, result)
        centroids, labels, result = best
        self.cluster_centers_, self.labels_ = centroids, labels
        self.inertia_, self.n_iter_ = float(result.cost), int(result.iterations)
        self.converged_ = bool(result.converged)
        self.timings_ = result.timings()
        self.n_features_in_ = d
        return self


class StreamingKMeans(_LibraryModel, _ClusterMixin, _NearestCentroid, _Estimator):
    """Streaming k-means (Ailon, Jaiswal and Monteleoni; pragmaclust_streamkm): chunks of the data
    summarised one at a time by the best of several k-means# runs, then weighted k-means++ on
    what the chunks kept. Memory: one chunk and the kept points.

    n_clusters: k. chunk_size: points per chunk (fit: None gives ceil(sqrt(n k)); partial_fit: the
    most rows one chunk holds, None taking the first call's row count; larger calls are cut into
    chunks of this size). repetitions: k-means# runs per chunk (None: ceil(3 ln n) in fit,
    ceil(3 ln chunk_size) in partial_fit). random_state: the seed (None draws one). kernels,
    variant: as KMeans.

    fit(X) is the program's `streamkm` on X: cluster_centers_, labels_ (each row's nearest
    centre), inertia_, timings_. partial_fit(X) adds X's rows to the stream and sets
    cluster_centers_ from everything added so far, n_samples_seen_ and n_chunks_; chunks of fit's
    chunk size with its repetitions and seed give fit's centres."""

    _free_function = "streamkm_free"

    def __init__(self, n_clusters=8, *, chunk_size=None, repetitions=None, random_state=None, kernels="tuned",
                 variant=None):
        self.n_clusters = n_clusters
        self.chunk_size = chunk_size
        self.repetitions = repetitions
        self.random_state = random_state
        self.kernels = kernels
        self.variant = variant

    def _options(self, lib):
        options = _capi.StreamKMOptions()
        lib.streamkm_options_init(ctypes.byref(options))
        options.k = _count("n_clusters", self.n_clusters)
        options.chunk_size = _count("chunk_size", self.chunk_size, optional=True) or 0
        options.repetitions = _count("repetitions", self.repetitions, optional=True) or 0
        options.kernels = _choice(self.kernels, _capi.KERNELS, "kernels")
        return options

    def fit(self, X, y=None):
        x = _points(X)
        n, d = x.shape
        lib = self._library()
        options = self._options(lib)
        if options.k > n:
            raise ValueError(f"n_clusters must be an int in [1, n_samples = {n}], got {self.n_clusters!r}")
        options.seed = _seed(self.random_state)
        self._free()
        centres, labels = np.empty((options.k, d), dtype=np.float32), np.empty(n, dtype=np.int32)
        result = _capi.Result()
        lib.call("streamkm", _ptr(x, ctypes.c_float), n, d, ctypes.byref(options), _ptr(centres, ctypes.c_float),
                 _ptr(labels, ctypes.c_int), ctypes.byref(result))
        self.cluster_centers_, self.labels_, self.inertia_ = centres, labels, float(result.cost)
        self.timings_ = result.timings()
        self.n_features_in_, self.n_samples_seen_ = d, n
        return self

    def partial_fit(self, X, y=None):
        x = _points(X)
        n, d = x.shape
        if "_model" not in self.__dict__:
            if getattr(self, "n_chunks_", 0):
                raise RuntimeError("this StreamingKMeans is a copy (or was unpickled): its stream stayed with the "
                                   "original, so partial_fit cannot go on; fit it, or partial_fit a new one")
            lib = self._library()
            options = self._options(lib)
            max_chunk = int(self.chunk_size or n)
            if options.k > max_chunk:
                raise ValueError(f"n_clusters = {options.k} is more than a chunk holds ({max_chunk} rows): "
                                 "give a larger chunk_size or a larger first batch")
            options.seed = _seed(self.random_state)
            model = ctypes.c_void_p()
            lib.call("streamkm_open", d, max_chunk, ctypes.byref(options), ctypes.byref(model))
            self._model, self._lib, self._max_chunk = model, lib, max_chunk
            self.n_features_in_, self.n_samples_seen_, self.n_chunks_ = d, 0, 0
        elif d != self.n_features_in_:
            raise ValueError(f"X has {d} features, but {type(self).__name__} is expecting {self.n_features_in_} "
                             "features as input (those of the stream's first chunk)")
        timings = {}
        for first in range(0, n, self._max_chunk):
            rows = min(self._max_chunk, n - first)
            result = _capi.Result()
            self._lib.call("streamkm_add", self._model, _ptr(x[first:], ctypes.c_float), rows, ctypes.byref(result))
            _add_timings(timings, result)
            self.n_samples_seen_ += rows
            self.n_chunks_ += 1
        centres, result = np.empty((int(self.n_clusters), d), dtype=np.float32), _capi.Result()
        self._lib.call("streamkm_centres", self._model, _ptr(centres, ctypes.c_float), ctypes.byref(result))
        _add_timings(timings, result)
        self.cluster_centers_, self.timings_ = centres, timings
        return self


class DBSCAN(_ClusterMixin, _Estimator):
    """Exact DBSCAN (pragmaclust_dbscan): the labels are scikit-learn's DBSCAN labels.

    eps: the neighbourhood radius. min_samples: neighbours (the point itself included) that make a
    point core. method: "union-find" (default) or "chains" (CUDA-DClust's expansions). index:
    "auto" (the grid up to 3 features, the projected grid above), "grid", "projected",
    "directory" or "none". variant: as KMeans.

    After fit: labels_ (cluster ids numbered by each cluster's smallest row, -1 for noise),
    core_sample_indices_, components_ (the core rows), n_clusters_, timings_, n_features_in_."""

    def __init__(self, eps=0.5, *, min_samples=5, method="union-find", index="auto", variant=None):
        self.eps = eps
        self.min_samples = min_samples
        self.method = method
        self.index = index
        self.variant = variant

    def fit(self, X, y=None):
        x = _points(X)
        n, d = x.shape
        lib = self._library()
        options = _capi.DBSCANOptions()
        lib.dbscan_options_init(ctypes.byref(options))
        options.eps, options.min_pts = float(self.eps), _count("min_samples", self.min_samples)
        options.method = _choice(self.method, _capi.DBSCAN_METHOD, "method")
        options.index = _choice(self.index, _capi.DBSCAN_INDEX, "index")
        labels = np.empty(n, dtype=np.int32)
        core = np.empty(n, dtype=np.uint8)
        result = _capi.Result()
        lib.call("dbscan", _ptr(x, ctypes.c_float), n, d, ctypes.byref(options), _ptr(labels, ctypes.c_int),
                 _ptr(core, ctypes.c_ubyte), ctypes.byref(result))
        self.labels_ = labels
        self.core_sample_indices_ = np.flatnonzero(core)
        self.components_ = np.asarray(X)[self.core_sample_indices_].copy()
        self.n_clusters_ = int(result.clusters)
        self.timings_ = result.timings()
        self.n_features_in_ = d
        return self


class DensityPeaks(_LibraryModel, _ClusterMixin, _Estimator):
    """Density peaks clustering (Rodriguez and Laio; GDPC on the GPU), fitted from scratch and
    then updated by batches of inserted and deleted points (pragmaclust_dpc_create, _insert,
    _delete).

    dc: the cut-off distance; None estimates it as the dc_percent quantile (default 2) of the
    pairwise distances of the first fit's points (it then stays fixed). n_peaks: the n_peaks
    points of largest rho * delta are the peaks; None: every point with rho >= rho_min and delta
    >= delta_min. index: "vptree" (default) or "none". rho_search, delta_search: "point" or
    "leaf". rho_update: how inserts and deletes update the old points' rho ("incidental" or
    "separate"). capacity: the most points the model will hold, deleted ones included (None:
    the first fit's n; inserting beyond it fails). random_state: the seed of the dc estimate.

    After fit (and after every insert or delete), by point id (rows of the first fit, then
    inserted rows in order; deleted ids stay): labels_ (-1 for deleted points), rho_, delta_,
    dependent_ (the nearest denser point, -1 for the absolute peak), alive_, n_clusters_, timings_."""

    _free_function = "dpc_free"

    def __init__(self, dc=None, *, dc_percent=2.0, n_peaks=None, rho_min=0.0, delta_min=0.0, index="vptree",
                 rho_search="point", delta_search="point", rho_update="incidental", capacity=None, random_state=1,
                 variant=None):
        self.dc = dc
        self.dc_percent = dc_percent
        self.n_peaks = n_peaks
        self.rho_min = rho_min
        self.delta_min = delta_min
        self.index = index
        self.rho_search = rho_search
        self.delta_search = delta_search
        self.rho_update = rho_update
        self.capacity = capacity
        self.random_state = random_state
        self.variant = variant

    def fit(self, X, y=None):
        x = _points(X)
        n, d = x.shape
        lib = self._library()
        options = _capi.DPCOptions()
        lib.dpc_options_init(ctypes.byref(options))
        options.dc = 0.0 if self.dc is None else float(self.dc)
        if self.dc is not None and not options.dc > 0:
            raise ValueError(f"dc must be > 0 (or None to estimate it), got {self.dc!r}")
        options.dc_percent = float(self.dc_percent)
        if self.n_peaks is not None:
            options.peaks = _count("n_peaks", self.n_peaks, optional=True)
            if options.peaks > n:
                raise ValueError(f"n_peaks = {self.n_peaks} is more than n_samples = {n}")
        options.rho_min, options.delta_min = float(self.rho_min), float(self.delta_min)
        options.index = _choice(self.index, _capi.DPC_INDEX, "index")
        options.rho_search = _choice(self.rho_search, _capi.DPC_SEARCH, "rho_search")
        options.delta_search = _choice(self.delta_search, _capi.DPC_SEARCH, "delta_search")
        options.rho_update = _choice(self.rho_update, _capi.DPC_RHO_UPDATE, "rho_update")
        options.seed = _seed(self.random_state)
        capacity = n if self.capacity is None else int(self.capacity)
        self._free()
        model, result = ctypes.c_void_p(), _capi.Result()
        lib.call("dpc_create", _ptr(x, ctypes.c_float), n, d, capacity, ctypes.byref(options), ctypes.byref(model),
                 ctypes.byref(result))
        self._model, self._lib = model, lib
        self.n_features_in_ = d
        self._refresh(result)
        return self

    def insert(self, X):
        """Adds the rows of X as one batch; they get the next ids. Returns self."""
        self._check_fitted("_model")
        x = _points(X)
        if x.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {x.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        result = _capi.Result()
        self._lib.call("dpc_insert", self._model, _ptr(x, ctypes.c_float), x.shape[0], ctypes.byref(result))
        self._refresh(result)
        return self

    def delete(self, ids):
        """Deletes the points of these ids (live, distinct) as one batch. Returns self."""
        self._check_fitted("_model")
        a = np.ascontiguousarray(np.asarray(ids).ravel(), dtype=np.int32)
        if a.size == 0:
            raise ValueError("delete needs at least one id")
        result = _capi.Result()
        self._lib.call("dpc_delete", self._model, _ptr(a, ctypes.c_int), a.size, ctypes.byref(result))
        self._refresh(result)
        return self

    def decision_graph(self):
        """The decision graph of the live points: a dict of arrays id, rho, delta, dependent, label."""
        self._check_fitted("_model")
        live = np.flatnonzero(self.alive_)
        return {"id": live, "rho": self.rho_[live], "delta": self.delta_[live], "dependent": self.dependent_[live],
                "label": self.labels_[live]}

    def _refresh(self, result):
        size = int(self._lib.dpc_size(self._model))
        labels, rho, dependent = (np.empty(size, dtype=np.int32) for _ in range(3))
        delta, alive = np.empty(size, dtype=np.float64), np.empty(size, dtype=np.uint8)
        self._lib.check(self._lib.dpc_get(self._model, _ptr(labels, ctypes.c_int), _ptr(rho, ctypes.c_int),
                                          _ptr(delta, ctypes.c_double), _ptr(dependent, ctypes.c_int),
                                          _ptr(alive, ctypes.c_ubyte)))
        self.labels_, self.rho_, self.delta_, self.dependent_, self.alive_ = labels, rho, delta, dependent, alive
        self.n_clusters_ = int(result.clusters)
        self.timings_ = result.timings()

