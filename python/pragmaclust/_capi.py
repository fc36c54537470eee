"""The C library API (include/pragmaclust.h) through ctypes: the structs and prototypes, one
library handle per build variant, and the library's status codes turned into exceptions.

A clustering call runs on a worker thread while the calling thread waits (ctypes releases the
GIL for the length of the call, so other Python threads run too); Ctrl-C in the waiting thread
asks the library to stop (pragmaclust_interrupt) and raises KeyboardInterrupt once it has."""
import ctypes
import os
import threading
from pathlib import Path

VARIANTS = ("seq", "omp", "gpu")

# ---- errors ---------------------------------------------------------------------------------


class PragmaclustError(RuntimeError):
    """A failed library call; the message is the library's (pragmaclust_last_error)."""


class InvalidArgumentError(PragmaclustError, ValueError):
    """PRAGMACLUST_ERR_INVALID_ARGUMENT: a parameter or the data out of range."""


class OutOfMemoryError(PragmaclustError, MemoryError):
    """PRAGMACLUST_ERR_OUT_OF_MEMORY: host or device memory could not be had."""


class NoDeviceError(PragmaclustError):
    """PRAGMACLUST_ERR_NO_DEVICE: the gpu variant found no usable GPU (see init(allow_host=True))."""


class UnsupportedError(PragmaclustError, NotImplementedError):
    """PRAGMACLUST_ERR_UNSUPPORTED: not in this build (for example the GEMM distances off the GPU)."""


_ERRORS = {1: InvalidArgumentError, 2: OutOfMemoryError, 3: NoDeviceError, 4: UnsupportedError}
INTERRUPTED = 6  # PRAGMACLUST_ERR_INTERRUPTED: raised as KeyboardInterrupt


def _error(status, message):
    return _ERRORS.get(status, PragmaclustError)(message or f"pragmaclust: status {status}")

# ---- structs (field order and types as in pragmaclust.h) --------------------------------------

MAX_PHASES = 8


class InitOptions(ctypes.Structure):
    _fields_ = [("allow_host", ctypes.c_int), ("threads", ctypes.c_int)]


class Result(ctypes.Structure):
    _fields_ = [("iterations", ctypes.c_long), ("converged", ctypes.c_int), ("cost", ctypes.c_double),
                ("clusters", ctypes.c_long), ("noise", ctypes.c_long), ("total_s", ctypes.c_double),
                ("nphases", ctypes.c_int), ("phase_name", ctypes.c_char_p * MAX_PHASES),
                ("phase_s", ctypes.c_double * MAX_PHASES)]

    def timings(self):
        """The phase times in seconds by name, and the whole call's as "total"."""
        out = {self.phase_name[i].decode(): self.phase_s[i] for i in range(self.nphases)}
        out["total"] = self.total_s
        return out


class KMeansOptions(ctypes.Structure):
    _fields_ = [("k", ctypes.c_int), ("init", ctypes.c_int), ("seed", ctypes.c_uint64), ("max_iter", ctypes.c_int),
                ("fixed_iter", ctypes.c_int), ("tol", ctypes.c_double), ("update", ctypes.c_int),
                ("distance", ctypes.c_int), ("kernels", ctypes.c_int), ("device_memory", ctypes.c_size_t)]


class StreamKMOptions(ctypes.Structure):
    _fields_ = [("k", ctypes.c_int), ("chunk_size", ctypes.c_size_t), ("repetitions", ctypes.c_int),
                ("seed", ctypes.c_uint64), ("kernels", ctypes.c_int)]


class DBSCANOptions(ctypes.Structure):
    _fields_ = [("eps", ctypes.c_double), ("min_pts", ctypes.c_int), ("index", ctypes.c_int), ("method", ctypes.c_int),
                ("chains", ctypes.c_int), ("seed_list", ctypes.c_int), ("levels", ctypes.c_int),
                ("fanout", ctypes.c_int)]


class DPCOptions(ctypes.Structure):
    _fields_ = [("dc", ctypes.c_double), ("dc_percent", ctypes.c_double), ("dc_samples", ctypes.c_size_t),
                ("peaks", ctypes.c_long), ("rho_min", ctypes.c_double), ("delta_min", ctypes.c_double),
                ("index", ctypes.c_int), ("rho_update", ctypes.c_int), ("rho_search", ctypes.c_int),
                ("delta_search", ctypes.c_int), ("seed", ctypes.c_uint64)]


# The enums' values, by the names the estimators take.
KMEANS_INIT = {"random": 0, "k-means++": 1}
KMEANS_INIT_GIVEN = 2
UPDATE = {"device": 0, "host": 1}
DISTANCE = {"direct": 0, "dot": 1, "gemm": 2, "gemm-tf32": 3, "dot-3xtf32": 4, "auto": 5, "dot-tf32": 6, "dot-fp16": 7,
            "dot-bf16": 8}
KERNELS = {"tuned": 0, "portable": 1}
DBSCAN_INDEX = {"auto": 0, "grid": 1, "directory": 2, "none": 3, "projected": 4}
DBSCAN_METHOD = {"union-find": 0, "chains": 1}
DPC_INDEX = {"vptree": 0, "none": 1}
DPC_RHO_UPDATE = {"incidental": 0, "separate": 1}
DPC_SEARCH = {"point": 0, "leaf": 1}

_f32p = ctypes.POINTER(ctypes.c_float)
_intp = ctypes.POINTER(ctypes.c_int)
_u8p = ctypes.POINTER(ctypes.c_ubyte)
_f64p = ctypes.POINTER(ctypes.c_double)
_size = ctypes.c_size_t
_PROTOTYPES = {
    "pragmaclust_last_error": (ctypes.c_char_p, []),
    "pragmaclust_interrupt": (None, []),
    "pragmaclust_version": (ctypes.c_char_p, []),
    "pragmaclust_variant": (ctypes.c_char_p, []),
    "pragmaclust_device": (ctypes.c_char_p, []),
    "pragmaclust_init_options_init": (None, [ctypes.POINTER(InitOptions)]),
    "pragmaclust_init": (ctypes.c_int, [ctypes.POINTER(InitOptions)]),
    "pragmaclust_kmeans_options_init": (None, [ctypes.POINTER(KMeansOptions)]),
    "pragmaclust_kmeans": (ctypes.c_int, [_f32p, _size, _size, ctypes.POINTER(KMeansOptions), _f32p, _intp,
                                          ctypes.POINTER(Result)]),
    "pragmaclust_streamkm_options_init": (None, [ctypes.POINTER(StreamKMOptions)]),
    "pragmaclust_streamkm": (ctypes.c_int, [_f32p, _size, _size, ctypes.POINTER(StreamKMOptions), _f32p, _intp,
                                            ctypes.POINTER(Result)]),
    "pragmaclust_streamkm_open": (ctypes.c_int, [_size, _size, ctypes.POINTER(StreamKMOptions),
                                                 ctypes.POINTER(ctypes.c_void_p)]),
    "pragmaclust_streamkm_add": (ctypes.c_int, [ctypes.c_void_p, _f32p, _size, ctypes.POINTER(Result)]),
    "pragmaclust_streamkm_centres": (ctypes.c_int, [ctypes.c_void_p, _f32p, ctypes.POINTER(Result)]),
    "pragmaclust_streamkm_free": (None, [ctypes.c_void_p]),
    "pragmaclust_dbscan_options_init": (None, [ctypes.POINTER(DBSCANOptions)]),
    "pragmaclust_dbscan": (ctypes.c_int, [_f32p, _size, _size, ctypes.POINTER(DBSCANOptions), _intp, _u8p,
                                          ctypes.POINTER(Result)]),
    "pragmaclust_dpc_options_init": (None, [ctypes.POINTER(DPCOptions)]),
    "pragmaclust_dpc_create": (ctypes.c_int, [_f32p, _size, _size, _size, ctypes.POINTER(DPCOptions),
                                              ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Result)]),
    "pragmaclust_dpc_insert": (ctypes.c_int, [ctypes.c_void_p, _f32p, _size, ctypes.POINTER(Result)]),
    "pragmaclust_dpc_delete": (ctypes.c_int, [ctypes.c_void_p, _intp, _size, ctypes.POINTER(Result)]),
    "pragmaclust_dpc_size": (_size, [ctypes.c_void_p]),
    "pragmaclust_dpc_get": (ctypes.c_int, [ctypes.c_void_p, _intp, _intp, _f64p, _intp, _u8p]),
    "pragmaclust_dpc_free": (None, [ctypes.c_void_p]),
}


def library_dirs():
    """Where the variant libraries are looked for, in order: $PRAGMACLUST_LIB_DIR, the package's
    own lib/ (an installed package), the checkout's lib/ (the package imported from python/)."""
    here = Path(__file__).resolve().parent
    dirs = [Path(p) for p in os.environ.get("PRAGMACLUST_LIB_DIR", "").split(os.pathsep) if p]
    return dirs + [here / "lib", here.parent.parent / "lib"]


_OFFLOAD_RUNTIME = []  # the gpu library, loaded ahead of the omp one (_offload_runtime_first)


def _offload_runtime_first(folder):
    """LLVM's OpenMP runtime looks for the offload runtime's hook for `target ... nowait` tasks once, as
    it starts. Started by the omp library alone, it never finds it, and the gpu library, loaded later
    into the same process, aborts it at its first asynchronous copy (k-means out of core). Where the gpu
    library lies beside the omp one it is loaded first, so that the offload runtime is there when the
    OpenMP runtime starts."""
    gpu = folder / "libpragmaclust-gpu.so"
    if gpu.is_file() and not _OFFLOAD_RUNTIME:
        _OFFLOAD_RUNTIME.append(ctypes.CDLL(str(gpu)))


class Library:
    """One variant's library: its functions, and calls that raise on a failed status."""

    def __init__(self, variant):
        if variant not in VARIANTS:
            raise ValueError(f"pragmaclust: unknown variant {variant!r} (seq, omp or gpu)")
        name = f"libpragmaclust-{variant}.so"
        paths = [d / name for d in library_dirs() if (d / name).is_file()]
        if not paths:
            raise ImportError(f"pragmaclust: {name} not found in {', '.join(map(str, library_dirs()))} "
                              "(build it with `make lib`, or set PRAGMACLUST_LIB_DIR)")
        self.path = paths[0]
        if variant == "omp":
            _offload_runtime_first(self.path.parent)
        self.dll = ctypes.CDLL(str(self.path))
        for fname, (restype, argtypes) in _PROTOTYPES.items():
            f = getattr(self.dll, fname)
            f.restype, f.argtypes = restype, argtypes

    def check(self, status):
        """Raises the exception of a failed call's status, with the library's message (the calling
        thread's: for the short calls made here directly)."""
        if status != 0:
            raise _error(status, self.dll.pragmaclust_last_error().decode(errors="replace"))

    def call(self, name, *args):
        """pragmaclust_<name>(*args) on a worker thread, raising on a failed status. Ctrl-C while it
        runs asks the library to stop at its next check point (pragmaclust_interrupt says which
        calls have them; the others run to their end) and raises KeyboardInterrupt when the call
        has returned and released what it held. The request is repeated until then, since a call
        clears a request made before it started."""
        function, outcome, done = getattr(self.dll, "pragmaclust_" + name), {}, threading.Event()

        def work():
            try:
                outcome["status"] = status = function(*args)
                if status != 0:  # the message is per thread: read it here
                    outcome["message"] = self.dll.pragmaclust_last_error().decode(errors="replace")
            finally:
                done.set()

        worker = threading.Thread(target=work, name=f"pragmaclust_{name}", daemon=True)
        worker.start()
        interrupted = False
        while True:  # an Event, not join: a join that Ctrl-C interrupts can leave the thread marked ended
            try:
                if done.wait(0.05):
                    break
            except KeyboardInterrupt:
                interrupted = True
            if interrupted:
                self.dll.pragmaclust_interrupt()
        worker.join()
        if interrupted or outcome["status"] == INTERRUPTED:
            raise KeyboardInterrupt(outcome.get("message", f"pragmaclust_{name}: interrupted"))
        if outcome["status"] != 0:
            raise _error(outcome["status"], outcome["message"])

    def __getattr__(self, name):
        return getattr(self.dll, "pragmaclust_" + name)


def default_variant():
    """$PRAGMACLUST_VARIANT, else omp when its library is found, else seq."""
    chosen = os.environ.get("PRAGMACLUST_VARIANT")
    if chosen:
        return chosen
    found = any((d / "libpragmaclust-omp.so").is_file() for d in library_dirs())
    return "omp" if found else "seq"


_loaded = {}


def library(variant=None):
    """The variant's library (None: default_variant()), loaded once per process."""
    variant = variant or default_variant()
    if variant not in _loaded:
        _loaded[variant] = Library(variant)
    return _loaded[variant]
