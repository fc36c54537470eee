"""The library (include/pragmaclust.h, lib/libpragmaclust-<variant>): `make install` into a
temporary prefix, then C programs built against the INSTALLED header and library through
pkg-config: tests/library_example.c must give the CLI's labels (k-means with random initial
rows, DBSCAN, density peaks), and tests/library_errors.c must get a status code and a message
for every bad argument, never an exit or a crash, and tests/library_memory.c the same when
memory runs out. The gpu variant runs with allow-host (its
host fallback) unless PRAGMACLUST_REQUIRE_GPU=1."""
import os
import shutil
import subprocess

import numpy as np
import pytest

from helpers import REPO_ROOT, load_labels, run, write_points

REQUIRE_GPU = os.environ.get("PRAGMACLUST_REQUIRE_GPU") == "1"

VARIANTS = ("seq", "omp", "gpu")
K, EPS, MIN_PTS, DC = 3, 0.6, 5, 0.5


def built(variant):
    return (REPO_ROOT / "lib" / f"libpragmaclust-{variant}.a").is_file() and \
        (REPO_ROOT / "bin" / f"pragmaclust-{variant}").is_file()


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """The installed tree of every variant built (make test builds `lib` before the tests)."""
    variants = [v for v in VARIANTS if built(v)]
    if not variants:
        pytest.fail("no library is built: run make lib")
    root = tmp_path_factory.mktemp("install")
    rc, out, err = run(["make", "-s", "--no-print-directory", "install", f"PREFIX={root}",
                        f"VARIANT={' '.join(variants)}" if len(variants) == 1 else "VARIANT=all"],
                       timeout=900, cwd=REPO_ROOT)
    assert rc == 0, f"make install failed:\n{out}\n{err}"
    for v in variants:
        for path in (f"bin/pragmaclust-{v}", "include/pragmaclust.h", f"lib/libpragmaclust-{v}.a",
                     f"lib/libpragmaclust-{v}.so", f"lib/pkgconfig/pragmaclust-{v}.pc"):
            assert (root / path).is_file(), f"make install did not install {path}"
    return root


def compile_client(prefix, variant, source, out):
    """Builds tests/<source> with `cc $(pkg-config --cflags --libs pragmaclust-<variant>)`."""
    if not (prefix / "lib" / "pkgconfig" / f"pragmaclust-{variant}.pc").is_file():
        pytest.skip(f"the {variant} library is not built")
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", f"pragmaclust-{variant}"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    cc = os.environ.get("PRAGMACLUST_CC") or shutil.which("clang-19") or "cc"
    p = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", str(REPO_ROOT / "tests" / source),
                        "-o", str(out)] + flags, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{cc} {source} against pragmaclust-{variant} failed:\n{p.stderr}"
    return out


def host_args(variant):
    return ["allow-host"] if variant == "gpu" and not REQUIRE_GPU else []


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    """300 points of 3 Gaussian blobs and a few outliers, as raw float32 and as text."""
    work = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(7)
    centres = np.array([[0, 0], [4, 0], [0, 4]], dtype=np.float32)
    x = np.concatenate([c + rng.normal(scale=0.4, size=(95, 2)) for c in centres] +
                       [rng.uniform(-3, 7, size=(15, 2))]).astype(np.float32)
    raw = work / "x.f32"
    x.tofile(raw)
    return x, raw, write_points(work / "x.txt", x)


@pytest.mark.parametrize("variant", VARIANTS)
def test_client_labels_equal_the_cli(variant, prefix, blobs, tmp_path, request):
    x, raw, text = blobs
    exe = compile_client(prefix, variant, "library_example.c", tmp_path / "example")
    rc, out, err = run([exe, raw, len(x), x.shape[1], K, EPS, MIN_PTS, DC] + host_args(variant), timeout=300)
    assert rc == 0, f"library_example ({variant}) exit {rc}\n{err}"
    got = {line.split()[0]: np.array(line.split()[1:], dtype=int) for line in out.splitlines()}

    cli = request.getfixturevalue(variant)  # the installed tree's program is this build's
    commands = {"kmeans": ("kmeans", text, "-k", K),
                "dbscan": ("dbscan", text, "--eps", EPS, "--min-pts", MIN_PTS),
                "dpc": ("dpc", text, "--dc", DC, "--peaks", K)}
    for name, args in commands.items():
        labels = tmp_path / f"{name}.labels.txt"
        rc, _, err = cli.run(*args, "--labels", labels, "--quiet")
        assert rc == 0, f"{variant} {name}: exit {rc}\n{err}"
        want = load_labels(labels)
        assert got[name].shape == want.shape and (got[name] == want).all(), \
            f"{variant} {name}: the library's labels differ from the CLI's at {np.flatnonzero(got[name] != want)[:8]}"
    assert len(set(got["kmeans"])) == K and got["dbscan"].max() >= 2


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_arguments_return_codes_and_messages(variant, prefix, tmp_path):
    exe = compile_client(prefix, variant, "library_errors.c", tmp_path / "errors")
    rc, out, err = run([exe] + host_args(variant), timeout=300)
    assert rc == 0 and out.rstrip().endswith("ok"), f"library_errors ({variant}) exit {rc}\n{out}\n{err}"
    assert "pragmaclust: error" not in err  # nothing printed by the library itself


@pytest.mark.parametrize("variant", ("seq", "omp"))
def test_out_of_memory_is_a_code_at_every_depth(variant, prefix, tmp_path):
    """tests/library_memory.c: DBSCAN (both methods), density peaks (per-leaf searches), k-means++
    and streamkm under address-space limits that make allocations fail at every depth: each call
    returns OK with the unlimited run's labels or OUT_OF_MEMORY with a message, and the sweep
    crosses from one to the other. (The gpu library is left out: the offload runtime's own
    allocations are not the library's to report.)"""
    exe = compile_client(prefix, variant, "library_memory.c", tmp_path / "memory")
    rc, out, err = run([exe], timeout=600)
    assert rc == 0 and out.rstrip().endswith("ok"), f"library_memory ({variant}) exit {rc}\n{out}\n{err}"
    assert "pragmaclust: error" not in err


def test_pkg_config_names_the_variant_flags(prefix):
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    for variant in VARIANTS:
        if not (prefix / "lib" / "pkgconfig" / f"pragmaclust-{variant}.pc").is_file():
            continue
        libs = subprocess.run(["pkg-config", "--libs", f"pragmaclust-{variant}"], env=env, capture_output=True,
                              text=True, check=True).stdout
        assert f"-lpragmaclust-{variant}" in libs and "-lm" in libs
        assert ("-fopenmp" in libs) == (variant != "seq")
        if variant == "gpu":
            assert "-fopenmp-targets=" in libs and "--offload-arch=" in libs and "-foffload-lto" in libs
