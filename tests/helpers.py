"""Helpers shared by the pragmaclust tests: locating and running the programs, reading and
writing the files they take and make."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent

# Sanitizer settings for the ASan+UBSan build. allocator_may_return_null=1 makes ASan's
# malloc return NULL for an impossible size (as glibc does) instead of aborting with
# "allocation-size-too-big": the program is meant to turn that NULL into exit status 2.
SANITIZER_ENV = {
    "ASAN_OPTIONS": "allocator_may_return_null=1:detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
}

# Words that only appear in stderr when a sanitizer or the C runtime complained.
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                     "runtime error:", "SUMMARY:", "Traceback", "Segmentation fault", "core dumped",
                     "Aborted")


def default_signals():
    """A Popen preexec_fn: the child starts with the default action for the signals the tests
    send, even where the tests themselves run with them ignored (under nohup or as a shell's
    background job, which ignore SIGHUP and SIGINT); a program keeps an ignored signal ignored."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def bin_dir():
    """The folder of the programs: $PRAGMACLUST_BIN (relative to the repo root), default bin."""
    d = Path(os.environ.get("PRAGMACLUST_BIN", "bin"))
    return d if d.is_absolute() else REPO_ROOT / d


# $PRAGMACLUST_TEST_TIMEOUT_SCALE multiplies every program's time limit: GCC's offloaded
# programs launch kernels several times slower than clang's (the GPU machine's gcc test run sets 5).
TIMEOUT_SCALE = float(os.environ.get("PRAGMACLUST_TEST_TIMEOUT_SCALE", "1"))


def run(cmd, timeout=60, env=None, cwd=None):
    """Runs cmd (a list); returns (returncode, stdout, stderr) as text."""
    timeout *= TIMEOUT_SCALE
    full_env = dict(os.environ)
    full_env.setdefault("OMP_NUM_THREADS", "2")
    if env:
        full_env.update(env)
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                       env=full_env, cwd=cwd, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


_TUNED_KERNELS = {}


def tuned_kernels(path):
    """What `PROGRAM info` says of its tuned kernels (the seams kmeans_tuned.h, kmeanspp_tuned.h):
    "none ..." for a build with the portable loops only (GCC's gpu build)."""
    path = str(path)
    if path not in _TUNED_KERNELS:
        _, out, _ = run([path, "info"])
        lines = [line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("tuned kernels:")]
        _TUNED_KERNELS[path] = lines[0] if lines else ""
    return _TUNED_KERNELS[path]


def has_tuned_kernels(binary):
    return not tuned_kernels(binary.path).startswith("none")


class Binary:
    """One pragmaclust program. `extra` options are added right after the subcommand of every
    kmeans, dbscan, streamkm or dpc call (the gpu variant gets --allow-host on a GPU-less machine)."""

    def __init__(self, name, path, extra=(), env=None):
        self.name, self.path, self.extra, self.env = name, Path(path), list(extra), dict(env or {})

    def __repr__(self):
        return f"Binary({self.name}, {self.path})"

    def argv(self, *args):
        args = [str(a) for a in args]
        if args and args[0] in ("kmeans", "dbscan", "streamkm", "stream", "dpc") and self.extra:
            args = args[:1] + self.extra + args[1:]
        return [str(self.path)] + args

    def run(self, *args, timeout=60, env=None):
        e = dict(self.env)
        if env:
            e.update(env)
        return run(self.argv(*args), timeout=timeout, env=e)

    def kmeans_ok(self, *args, timeout=60):
        """Runs `kmeans ARGS --quiet`; asserts exit 0; returns stdout."""
        rc, out, err = self.run("kmeans", *args, "--quiet", timeout=timeout)
        assert rc == 0, f"{self.name} kmeans {' '.join(map(str, args))} -> {rc}\n{err}"
        return out


def load_labels(path):
    path = Path(path)
    if path.suffix == ".npy":
        return np.load(path)
    return np.loadtxt(path, dtype=np.int64, ndmin=1)


def load_matrix(path):
    """A centroid file as float32 (the program's values: its text holds 9 significant digits,
    which name one float32 exactly)."""
    path = Path(path)
    if path.suffix == ".npy":
        return np.load(path)
    return np.loadtxt(path, dtype=np.float32, ndmin=2)


def load_report(path):
    with open(path) as f:
        return json.load(f)


def write_points(path, x, fmt="%.9g", delimiter=" "):
    """Writes a 2-D array as text. %.9g round-trips float32 values exactly."""
    x = np.asarray(x)
    if x.ndim == 1:
        x = x[:, None]
    np.savetxt(path, x, fmt=fmt, delimiter=delimiter)
    return Path(path)


def f32(x):
    """x rounded to float32 and back to float64: the values the program actually works on."""
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def listing(folder):
    """Sorted names of everything in folder (recursively, relative)."""
    folder = Path(folder)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def wait_until(predicate, timeout=30, poll=0.002):
    """Polls predicate until it is true or timeout seconds have passed; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return predicate()
