"""Runs the C unit tests (tests/unit_tests.c, built by `make build/seq/unit_tests`)."""
import re

import pytest

from helpers import run


def test_unit_tests(unit_tests_path):
    if not unit_tests_path.is_file():
        pytest.fail(f"{unit_tests_path} is not built: make build/seq/unit_tests")
    rc, out, err = run([unit_tests_path], timeout=120)
    report = f"exit status {rc}\n--- stdout\n{out}\n--- stderr\n{err}"
    print(report)
    lines = out.strip().splitlines()
    assert lines and re.fullmatch(r"\d+ passed, \d+ failed", lines[-1]), report
    assert rc == 0, report
    assert lines[-1].endswith(" 0 failed"), report
