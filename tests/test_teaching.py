"""The course pack (teaching/): every exercise's reference solution passes in every variant, every
starting file fails with a one-line reason, `make exercise` reports per variant, and the
README and the teacher's guide name every exercise. The programs are built once
(`make exercises-build`), then run with small repeat counts; the gpu programs get --allow-host
unless PRAGMACLUST_REQUIRE_GPU=1, as in conftest.py."""
import os
import re
import subprocess

import pytest

from helpers import REPO_ROOT

TEACHING = REPO_ROOT / "teaching"
EXERCISES = sorted(p.name for p in (TEACHING / "exercises").iterdir() if re.match(r"\d\d-", p.name))
VARIANTS = ("seq", "omp", "gpu")
REQUIRE_GPU = os.environ.get("PRAGMACLUST_REQUIRE_GPU") == "1"
VERDICT = re.compile(r"^(PASS|FAIL) (\d\d-[a-z0-9-]+) \[(seq|omp|gpu|gpu, on the host)\]: (.+)$")


@pytest.fixture(scope="module")
def built():
    """Builds every exercise and solution program once; returns the variants built."""
    proc = subprocess.run(["make", "-j2", "--no-print-directory", "exercises-build"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"make exercises-build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return {v for v in VARIANTS if (REPO_ROOT / "build/teaching/solution" / EXERCISES[0] / v / EXERCISES[0]).is_file()}


def run_program(built, source, exercise, variant):
    if variant not in built:
        pytest.skip(f"the {variant} variant is not built by this toolchain")
    program = REPO_ROOT / "build/teaching" / source / exercise / variant / exercise
    extra = ["--allow-host"] if variant == "gpu" and not REQUIRE_GPU else []
    env = dict(os.environ, OMP_NUM_THREADS="2")
    proc = subprocess.run([str(program), "--repeat", "1", *extra], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    verdicts = [m for m in map(VERDICT.match, proc.stdout.splitlines()) if m]
    assert len(verdicts) == 1, f"expected one verdict line:\n{proc.stdout}\n{proc.stderr}"
    assert verdicts[0].group(2) == exercise and verdicts[0].group(3).startswith(variant)
    return proc, verdicts[0]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("exercise", EXERCISES)
def test_solution_passes(built, exercise, variant):
    proc, verdict = run_program(built, "solution", exercise, variant)
    assert proc.returncode == 0 and verdict.group(1) == "PASS", proc.stdout
    if variant == "gpu" and not REQUIRE_GPU:
        assert "[gpu, on the host]" in verdict.group(0), "a gpu run on the host must say so"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("exercise", EXERCISES)
def test_starting_file_fails_with_a_reason(built, exercise, variant):
    proc, verdict = run_program(built, "exercise", exercise, variant)
    assert proc.returncode == 1 and verdict.group(1) == "FAIL", proc.stdout
    assert len(verdict.group(4)) > 20 and proc.stdout.rstrip().endswith(verdict.group(4))


def test_make_exercise_reports_each_variant(built):
    """`make exercise-N` (the starting file) fails and names the variants; SOLUTION=1 passes."""
    variants = sorted(built)
    make = ["make", "--no-print-directory", f"VARIANT={' '.join(variants)}", "ARGS=--repeat 1"]
    start = subprocess.run(make + ["exercise-2"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert start.returncode != 0
    summary = start.stdout[start.stdout.index("=== summary of 02-"):]
    assert all(f"FAIL 02-dbscan-core-count [{v}" in summary for v in variants), summary
    solved = subprocess.run(make + ["exercise", "N=2", "SOLUTION=1"], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=600)
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert solved.stdout.count("PASS 02-dbscan-core-count [") == 2 * len(variants)  # each run, then the summary
    if "gpu" in variants and not REQUIRE_GPU:
        assert "[gpu, on the host]" in solved.stdout


def test_make_exercise_names_the_exercises_when_n_is_wrong():
    proc = subprocess.run(["make", "--no-print-directory", "exercise", "N=99"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and EXERCISES[0] in proc.stderr


def test_every_exercise_has_its_files():
    for exercise in EXERCISES:
        for path in (f"exercises/{exercise}/exercise.c", f"exercises/{exercise}/exercise.h",
                     f"exercises/{exercise}/harness.c", f"solutions/{exercise}/exercise.c"):
            assert (TEACHING / path).is_file(), path
    assert len(EXERCISES) >= 8
    assert sorted(p.name for p in (TEACHING / "solutions").iterdir()) == EXERCISES


def test_readme_and_teachers_guide_name_every_exercise():
    readme = (TEACHING / "README.md").read_text()
    teachers = (TEACHING / "TEACHERS.md").read_text()
    for exercise in EXERCISES:
        assert f"exercises/{exercise}" in readme, f"teaching/README.md does not list {exercise}"
        assert exercise in teachers, f"teaching/TEACHERS.md does not mention {exercise}"
