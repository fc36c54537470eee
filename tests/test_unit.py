"""Runs the C unit tests (tests/unit_tests.c), built against the seq objects, the omp objects and
the ASan+UBSan build's (`make build/seq/unit_tests build/omp/unit_tests build/seq-asan/unit_tests`):
in the omp build the tests of lock-free steps race them on many threads; the sanitizer build
catches what a test's own checks cannot see (out-of-bounds writes, undefined behaviour)."""
import re

import pytest

from helpers import REPO_ROOT, SANITIZER_ENV, SANITIZER_MARKERS, run


ASAN_ALLOC_WARNING = re.compile(r"^==\d+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$")


@pytest.mark.parametrize("variant", ["seq", "omp", "seq-asan"])
def test_unit_tests(variant):
    path = REPO_ROOT / "build" / variant / "unit_tests"
    if not path.is_file():
        pytest.fail(f"{path} is not built: make build/{variant}/unit_tests")
    rc, out, err = run([path], timeout=600, env=SANITIZER_ENV if variant == "seq-asan" else None)
    report = f"exit status {rc}\n--- stdout\n{out}\n--- stderr\n{err}"
    print(report)
    lines = out.strip().splitlines()
    assert lines and re.fullmatch(r"\d+ passed, \d+ failed", lines[-1]), report
    assert rc == 0, report
    assert lines[-1].endswith(" 0 failed"), report
    # the one warning ASan gives for the tests' deliberately impossible allocations is no finding
    findings = [ln for ln in err.splitlines() if not ASAN_ALLOC_WARNING.match(ln)]
    assert not any(marker in ln for ln in findings for marker in SANITIZER_MARKERS), report
