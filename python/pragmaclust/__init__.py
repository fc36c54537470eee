"""pragmaclust from Python: exact k-means, streaming k-means, DBSCAN and density peaks on the library of any build
variant (seq: one core; omp: the host's cores; gpu: an NVIDIA GPU through OpenMP offload), with
scikit-learn's estimator conventions (fit, predict, labels_, ...).

    import numpy as np, pragmaclust
    labels = pragmaclust.DBSCAN(eps=0.3, min_samples=10).fit_predict(np.random.rand(10000, 2))

The variant: each estimator's `variant` argument, else $PRAGMACLUST_VARIANT, else omp (seq when
the omp library is not built). `init(variant, ...)` brings a variant's device up with options
(the gpu variant on a machine without a GPU needs allow_host=True); `info()` says what is loaded
and where the kernels run."""
import ctypes

from ._capi import (VARIANTS, InitOptions, InvalidArgumentError, NoDeviceError, OutOfMemoryError, PragmaclustError,
                    UnsupportedError, default_variant, library)
from .estimators import DBSCAN, DensityPeaks, KMeans, NotFittedError, StreamingKMeans

__all__ = ["KMeans", "StreamingKMeans", "DBSCAN", "DensityPeaks", "init", "info", "default_variant", "PragmaclustError",
           "InvalidArgumentError", "OutOfMemoryError", "NoDeviceError", "UnsupportedError", "NotFittedError"]
__version__ = "0.9.0"


def init(variant=None, *, allow_host=False, threads=0):
    """Brings the variant's device up (pragmaclust_init): allow_host lets the gpu variant run its
    kernels on the host when no GPU is usable (otherwise NoDeviceError); threads: host OpenMP
    threads (0: the OpenMP default). Optional: the first fit does it with the defaults. Returns
    where the kernels run."""
    lib = library(variant)
    options = InitOptions()
    lib.init_options_init(ctypes.byref(options))
    options.allow_host, options.threads = int(bool(allow_host)), int(threads)
    lib.check(lib.init(ctypes.byref(options)))
    return lib.device().decode()


def info(variant=None):
    """What a variant's library is: its version, variant, file, and where its kernels run ("" before
    the first fit or init)."""
    lib = library(variant)
    return {"version": lib.version().decode(), "variant": lib.variant().decode(), "library": str(lib.path),
            "device": lib.device().decode()}
