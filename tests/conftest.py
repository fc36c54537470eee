"""Fixtures of the pragmaclust tests.

Programs come from $PRAGMACLUST_BIN (default bin/ in the repo root); real data sets from
$DATA_DIR (tests that need them are skipped, with the reason, when it is not set or lacks
a file). The gpu program is run with --allow-host added to every kmeans call, since CI has
no GPU; `gpu_direct` gives it without that flag. With PRAGMACLUST_REQUIRE_GPU=1 (on a GPU
machine) the flag is never added, so every gpu test must really offload.
"""
import os
from pathlib import Path

import pytest

from helpers import SANITIZER_ENV, Binary, bin_dir


REQUIRE_GPU = os.environ.get("PRAGMACLUST_REQUIRE_GPU") == "1"
GPU_EXTRA = [] if REQUIRE_GPU else ["--allow-host"]


def pytest_report_header(config):
    if REQUIRE_GPU:
        return "gpu variant: PRAGMACLUST_REQUIRE_GPU=1, run without --allow-host: its kernels must run on a GPU"
    return "gpu variant: run with --allow-host: without a GPU its kernels run on the host (labelled as such)"


def _program(variant, required):
    path = bin_dir() / f"pragmaclust-{variant}"
    if not path.is_file():
        msg = f"{path} is not built (make -j2; make bin/pragmaclust-seq-asan for the sanitizer build)"
        if required:
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def seq():
    return Binary("seq", _program("seq", True))


@pytest.fixture(scope="session")
def omp():
    return Binary("omp", _program("omp", True), env={"OMP_NUM_THREADS": "2"})


@pytest.fixture(scope="session")
def gpu():
    # The gpu variant is only built by the clang toolchain: skipped when absent (TOOLCHAIN=gcc).
    return Binary("gpu", _program("gpu", False), extra=GPU_EXTRA, env={"OMP_NUM_THREADS": "2"})


@pytest.fixture(scope="session")
def gpu_direct():
    """The gpu program without the automatic --allow-host."""
    return Binary("gpu-direct", _program("gpu", False), env={"OMP_NUM_THREADS": "2"})


@pytest.fixture(scope="session")
def asan():
    return Binary("asan", _program("seq-asan", False), env=SANITIZER_ENV)


@pytest.fixture(params=["seq", "omp", "gpu"])
def variant(request):
    """Each of the three variants in turn."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def all_variants(request):
    """{name: Binary} of every variant built (gpu left out when not built)."""
    out = {"seq": request.getfixturevalue("seq"), "omp": request.getfixturevalue("omp")}
    path = bin_dir() / "pragmaclust-gpu"
    if path.is_file():
        out["gpu"] = Binary("gpu", path, extra=GPU_EXTRA, env={"OMP_NUM_THREADS": "2"})
    return out


@pytest.fixture(scope="session")
def data_dir():
    d = os.environ.get("DATA_DIR")
    if not d:
        pytest.skip("DATA_DIR is not set (the real data sets, e.g. ../shared/datasets)")
    p = Path(d)
    if not p.is_dir():
        pytest.skip(f"DATA_DIR={d} is not a folder")
    return p


@pytest.fixture
def work(tmp_path):
    """A fresh empty folder for one test's files."""
    return tmp_path

