"""What an outside tester found (issue 17) and what must hold from now on: a run that cannot end,
files left behind by a killed program, outputs that clobber each other or the input, names and
modes of outputs, the programs' names and versions, and sizes at the edges of what a float holds.
The one-line refusals themselves are cases of test_bad_input.py."""
import os
import signal
import subprocess

import numpy as np
import pytest

from helpers import REPO_ROOT, SANITIZER_MARKERS, bin_dir, default_signals, listing, load_labels, run, wait_until


def staged_files(folder):
    return [p for p in os.listdir(folder) if ".tmp." in p]


# ---- stream: k = n ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 10, 100])
def test_stream_with_k_equal_to_n_ends_with_every_point_a_centre(variant, work, n):
    """A block of k points or fewer is its own summary: with k = n the centres are the points."""
    gen = f"gen:uniform:n={n},d=2,seed=3"
    x_path = work / "x.npy"
    rc, _, err = run([bin_dir() / "pragmaclust-seq", "generate", gen, "--out", x_path])
    assert rc == 0, err
    for window in ([], ["--window", 2 * n]):
        rc, _, err = variant.run("stream", gen, "-k", n, *window, "--centres", work / "c.npy", "--quiet", timeout=30)
        assert rc == 0, err
        centres = np.load(work / "c.npy")
        points = np.load(x_path)
        assert sorted(map(tuple, centres)) == sorted(map(tuple, points))


# ---- signals during output ---------------------------------------------------------------------


def _start(argv, cwd):
    return subprocess.Popen([str(a) for a in argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, preexec_fn=default_signals)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGABRT])
def test_a_signal_while_generate_writes_leaves_no_file(seq, work, sig):
    """The staged file is removed by the signal handler; the program still dies of the signal."""
    p = _start([seq.path, "generate", "gen:uniform:n=2000000,d=8", "--out", "g.txt"], work)
    try:
        assert wait_until(lambda: staged_files(work)), "the output was never staged"
        p.send_signal(sig)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == -sig
    assert listing(work) == []


def test_a_signal_while_kmeans_writes_labels_leaves_no_file(omp, work):
    p = _start([omp.path, "kmeans", "gen:uniform:n=20000000,d=1", "-k", 2, "--iterations", 1, "--labels", "l.txt",
                "--centroids", "c.txt", "--report", "r.json"], work)
    try:
        assert wait_until(lambda: staged_files(work), timeout=60), "the labels were never staged"
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == -signal.SIGTERM
    assert listing(work) == []


def test_an_ignored_sigint_stays_ignored(seq, work):
    """A program started with SIGINT ignored (nohup, a shell's background job) keeps ignoring it."""
    p = subprocess.Popen([str(seq.path), "generate", "gen:uniform:n=2000000,d=8", "--out", "g.txt"], cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert wait_until(lambda: staged_files(work))
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            p.kill()
    assert listing(work) == ["g.txt"]


# ---- outputs that clash with each other or with an input ----------------------------------------


def test_an_output_that_is_the_input_leaves_the_input_alone(seq, work):
    data = "1 2\n3 4\n5 6\n7 8\n"
    (work / "in.txt").write_text(data)
    os.symlink("in.txt", work / "link.txt")
    os.link(work / "in.txt", work / "hard.txt")
    for out in ("in.txt", "./in.txt", "link.txt", "hard.txt", str(work / "in.txt")):
        rc, _, err = run([seq.path, "kmeans", "in.txt", "-k", 2, "--labels", out], cwd=work)
        assert rc == 2 and err.count("\n") == 1 and "the file the run reads" in err, err
        assert (work / "in.txt").read_text() == data
    # and through the link as the input
    rc, _, err = run([seq.path, "kmeans", "link.txt", "-k", 2, "--centroids", "in.txt"], cwd=work)
    assert rc == 2 and "the file the run reads" in err, err
    assert sorted(listing(work)) == ["hard.txt", "in.txt", "link.txt"]


def test_distinct_outputs_and_devices_are_not_a_clash(seq, work):
    """/dev/null twice is fine (not a regular file), and so are two names in two folders."""
    (work / "a").mkdir()
    (work / "b").mkdir()
    rc, _, err = run([seq.path, "kmeans", "gen:uniform:n=50,d=2", "-k", 2, "--labels", "/dev/null", "--centroids",
                      "/dev/null", "--quiet"])
    assert rc == 0, err
    rc, _, err = run([seq.path, "kmeans", "gen:uniform:n=50,d=2", "-k", 2, "--labels", "a/o.txt", "--centroids",
                      "b/o.txt", "--quiet"], cwd=work)
    assert rc == 0, err
    assert load_labels(work / "a" / "o.txt").shape == (50,)


# ---- output names and modes ------------------------------------------------------------------


def test_an_output_name_of_255_characters(seq, work):
    name = "l" * 251 + ".txt"
    rc, _, err = run([seq.path, "kmeans", "gen:uniform:n=50,d=2", "-k", 2, "--labels", name, "--quiet"], cwd=work)
    assert rc == 0, err
    assert listing(work) == [name]


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(seq, work, mask):
    def start():
        os.umask(mask)
    p = subprocess.run([str(seq.path), "kmeans", "gen:uniform:n=50,d=2", "-k", "2", "--labels", "l.txt", "--report",
                        "r.json", "--quiet"], cwd=work, capture_output=True, text=True, preexec_fn=start)
    assert p.returncode == 0, p.stderr
    for name in ("l.txt", "r.json"):
        assert (work / name).stat().st_mode & 0o777 == 0o666 & ~mask


# ---- names and versions --------------------------------------------------------------------


def test_help_and_version_name_the_program_as_started(all_variants):
    for name, b in all_variants.items():
        prog = f"pragmaclust-{name}"
        rc, out, err = run([b.path, "--version"])
        assert rc == 0 and err == "" and out.startswith(f"{prog} ") and f"variant {name}" in out, out + err
        version = (REPO_ROOT / "VERSION").read_text().strip()
        assert version in out
        rc, out, err = run([b.path, "--help"])
        assert rc == 0 and out.startswith(f"usage: {prog} SUBCOMMAND") and "pragmaclust kmeans" not in out
        for sub in ("kmeans", "dbscan", "dpc", "streamkm", "stream", "generate", "info"):
            rc, out, err = run([b.path, sub, "--help"])
            assert rc == 0 and err == "" and out.startswith(f"usage: {prog} {sub}"), (sub, out, err)
            rc, out, err = run([b.path, sub, "--version"])
            assert rc == 0 and out.startswith(f"{prog} {sub} {version}"), (sub, out, err)
        rc, _, err = run([b.path, "kmeans", "gen:uniform:n=10,d=2", "-k", 2, "--frobnicate"])
        assert rc == 2 and f"see {prog} kmeans --help" in err, err


def test_info_reports_the_version(seq):
    rc, out, err = seq.run("info")
    version = (REPO_ROOT / "VERSION").read_text().strip()
    assert rc == 0 and f"version:        {version}" in out


def test_info_times_the_offload_operations(variant):
    """`info --offload-costs` times what iterations are made of: nothing outside the gpu variant; in
    it (on the GPU, or on the host where there is none) eight operations, each a positive median,
    among them the region whose results the device writes into host memory (pc_results) beside the
    region that maps them back."""
    rc, out, err = variant.run("info", "--offload-costs", timeout=120)
    assert rc == 0, err
    if variant.name != "gpu":
        assert "offload costs:  none (no offload device in this variant)" in out
        return
    lines = out[out.index("offload costs:  median microseconds on"):].splitlines()[1:]
    costs = {line.split(None, 1)[1]: float(line.split(None, 1)[0]) for line in lines if line.strip()}
    assert len(costs) == 8 and all(v > 0 for v in costs.values()), costs
    assert "target region writing two doubles to host memory (pc_results)" in costs
    assert "target region mapping two doubles from" in costs


def test_threads_up_to_the_limit_are_taken(omp, work):
    rc, _, err = omp.run("kmeans", "gen:uniform:n=50,d=2", "-k", 2, "--threads", 4 * os.cpu_count(), "--quiet")
    assert rc == 0, err
    rc, _, err = omp.run("kmeans", "gen:uniform:n=50,d=2", "-k", 2, "--threads", 4 * os.cpu_count() + 1)
    assert rc == 2 and err.startswith("pragmaclust: error: option --threads") and err.count("\n") == 1, err


# ---- values at the edge of float32 ----------------------------------------------------------


def test_dpc_is_exact_for_values_near_the_float_limit(seq, work):
    """dpc measures distances in double: data scaled by 2^124 (values up to about 1e38, whose
    squares overflow float32) gives the very same clusters with d_c scaled alike. So dpc needs no
    refusal for large values; only a generator spec beyond the float range is refused."""
    rng = np.random.default_rng(5)
    x = np.vstack([rng.normal(c, 0.4, (80, 2)) for c in (-5, 0, 5)]).astype(np.float32)
    big = (x.astype(np.float64) * 2.0 ** 124).astype(np.float32)
    assert np.isfinite(big).all() and np.abs(big).max() > 1e37
    np.save(work / "x.npy", x)
    np.save(work / "big.npy", big)
    for name, dc in (("x", 0.5), ("big", 0.5 * 2.0 ** 124)):
        rc, _, err = seq.run("dpc", work / f"{name}.npy", "--dc", repr(dc), "--peaks", 3, "--labels",
                             work / f"{name}.labels.npy", "--quiet")
        assert rc == 0, err
    np.testing.assert_array_equal(np.load(work / "x.labels.npy"), np.load(work / "big.labels.npy"))


def test_generated_data_is_always_finite(seq, work):
    """A spec right below the float range is taken and gives finite values."""
    rc, _, err = seq.run("generate", "gen:blobs:n=2000,d=3,std=1e37,box=1e37", "--out", work / "g.npy")
    assert rc == 0, err
    assert np.isfinite(np.load(work / "g.npy")).all()


def test_asan_error_exit_reports_no_leak(asan, work):
    """An error after allocations ends the program by _exit: status 2 and no leak report."""
    rc, out, err = asan.run("kmeans", "gen:uniform:n=1000,d=2", "-k", 2, "--init", work / "nope.txt")
    assert rc == 2 and err.count("\n") == 1, err
    for marker in SANITIZER_MARKERS:
        assert marker not in err
