"""`make paper` on a clean Debian 12 machine (issue 17, item 11).

- The PDF is built from the checked-in reference results (experiments/reference/default-h200.csv):
  tables by experiments/run.py --tables-only, figures by plots/plot.py, then paper/build.sh,
  all into temporary folders. It needs LaTeX and gnuplot, which `make test` installs
  (variants/install-toolchain.sh --tests): without them these tests fail and say so, never skip.
- The scale of `make plots` and `make paper`: SCALE when given, else default when its results
  exist, else the most recently run scale (with a note), else an error naming the command.
- variants/install-toolchain.sh waits (saying so once, with a time limit) while another apt or
  dpkg holds a lock, and installs every package paper.tex needs (lmodern is only a Recommends).
  Those tests run the script against stand-ins for apt-get, dpkg-query and sudo: no real apt.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import threading

import pytest

from helpers import REPO_ROOT

BUILD = REPO_ROOT / "paper" / "build.sh"
INSTALL = REPO_ROOT / "variants" / "install-toolchain.sh"
REFERENCE = REPO_ROOT / "experiments" / "reference" / "default-h200.csv"
GPU_REFERENCE = REPO_ROOT / "experiments" / "reference" / "default-h100.csv"   # every experiment
FIXED_SMOKE = REPO_ROOT / "tests" / "data" / "fixed_results.csv"   # rows of scale smoke


def need(*programs):
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: `make test-deps` (variants/install-toolchain.sh --tests) "
                    "installs the paper's LaTeX, poppler-utils and gnuplot")


def clean_env(**extra):
    """The environment of a user who gave no SCALE (make test may have been given one)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCALE", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env["PYTHON"] = sys.executable
    env.update(extra)
    return env


def sh(args, env=None, timeout=300):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO_ROOT, env=env or clean_env(), stdin=subprocess.DEVNULL)


def results_with(tmp_path, **scales):
    """RESULTS/<scale>/results.csv for each scale=csv_file, the later ones newer."""
    results = tmp_path / "RESULTS"
    for i, (scale, csv_file) in enumerate(scales.items()):
        dest = results / scale / "results.csv"
        dest.parent.mkdir(parents=True)
        shutil.copy(csv_file, dest)
        os.utime(dest, (1_700_000_000 + 3600 * i,) * 2)
    return results


def fake_toolchain(tmp_path):
    """A TOOLCHAIN_DIR whose CUDA 11.8 tools count as present (so nothing is downloaded)."""
    cuda = tmp_path / "toolchain" / "cuda-11.8"
    (cuda / "bin").mkdir(parents=True, exist_ok=True)
    (cuda / "nvvm" / "libdevice").mkdir(parents=True, exist_ok=True)
    (cuda / "bin" / "ptxas").write_text("#!/bin/sh\n")
    (cuda / "bin" / "ptxas").chmod(0o755)
    (cuda / "nvvm" / "libdevice" / "libdevice.10.bc").write_bytes(b"")
    return cuda.parent


# ---- the PDF from the fixed results --------------------------------------------------------------

def test_pdf_from_the_reference_results(tmp_path):
    need("pdflatex", "gnuplot", "pdfinfo", "pdftotext")
    results = results_with(tmp_path, default=REFERENCE)
    p = sh([sys.executable, REPO_ROOT / "experiments" / "run.py", "--tables-only", "--scale", "default",
            "--results", results])
    assert p.returncode == 0, p.stderr
    p = sh([sys.executable, REPO_ROOT / "plots" / "plot.py", "--results", results, "--scale", "default"])
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    p = sh(["bash", BUILD, "--out", out, results])      # no SCALE: default, whose results exist
    assert p.returncode == 0, p.stdout + p.stderr
    assert "note: no SCALE given" not in p.stderr
    m = re.search(r"wrote (\S+)/paper\.pdf \((\d+) pages\)", p.stdout)
    assert m and m.group(1) == str(out), p.stdout
    pages = int(m.group(2))
    pdf = out / "paper.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    info = sh(["pdfinfo", pdf]).stdout
    assert re.search(rf"^Pages:\s+{pages}$", info, re.M), info
    assert pages >= 10
    text = sh(["pdftotext", pdf, "-"]).stdout
    assert "H200" in text                       # the reference machine, from the CSV via numbers.tex
    assert "??" not in text                     # no undefined reference
    # written where asked: the numbers too, nothing beside it under a temporary name
    assert (out / "generated" / "numbers.tex").is_file()
    assert sorted(f.name for f in out.iterdir()) == ["generated", "paper.pdf"]


# ---- every section, table and figure ------------------------------------------------------------

def paper_contents():
    """The section titles of paper.tex and sections/*.tex, and the table and figure stems they
    include (\\pcTable, \\pcWideTable, \\pcPlot; the course figures come through numbers.tex)."""
    texts = [(REPO_ROOT / "paper" / "paper.tex").read_text()]
    texts += [t.read_text() for t in sorted((REPO_ROOT / "paper" / "sections").glob("*.tex"))]
    text = "\n".join(texts)
    titles = re.findall(r"^\\section\{([^}]*)\}", text, re.M)
    tables = set(re.findall(r"\\pc(?:Wide)?Table\{([^}]*)\}", text))
    figures = set(re.findall(r"\\pcPlot\{([^}]*)\}", text))
    return titles, tables, figures


def build_paper(tmp_path, csv_file, scale):
    results = results_with(tmp_path, **{scale: csv_file})
    p = sh([sys.executable, REPO_ROOT / "experiments" / "run.py", "--tables-only", "--scale", scale,
            "--results", results, "--reuse-other-builds"])
    assert p.returncode == 0, p.stderr
    p = sh([sys.executable, REPO_ROOT / "plots" / "plot.py", "--results", results, "--scale", scale])
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    p = sh(["bash", BUILD, "--out", out, results, scale])
    assert p.returncode == 0, p.stdout + p.stderr
    return results / scale, sh(["pdftotext", out / "paper.pdf", "-"]).stdout


def squash(text):
    return re.sub(r"\s+", " ", text)


def test_gpu_reference_paper_has_every_section_table_and_figure(tmp_path):
    """The paper from the H100 run of every experiment (the one in paper/paper-h100.pdf): all
    five families and the portable-vs-tuned section, each table and figure the runner made, none
    replaced by a 'missing' or 'not drawn' box, no undefined reference, and the device named."""
    need("pdflatex", "gnuplot", "pdftotext")
    scale_dir, text = build_paper(tmp_path, GPU_REFERENCE, "default")
    flat = squash(text)
    titles, tables, figures = paper_contents()
    for title in ["k-means: the GPU-offload", "k-means++", "Stream clustering", "Exact DBSCAN", "Density peaks",
                  "What standard OpenMP achieves"]:
        assert any(title.lower() in t.lower() for t in titles), (title, titles)
    for title in titles:
        plain = re.sub(r"\\([#&%_])", r"\1", re.sub(r"\\[a-zA-Z]+\{?|[{}$]", "", title)).replace("~", " ")
        assert squash(plain) in flat, f"section '{title}' not in the PDF"
    made_tables = {t.stem for t in (scale_dir / "tables").glob("*.tex")}
    made_figures = {f.stem for f in (scale_dir / "plots").glob("*.png")}
    # the sections' own two-up macros take stems as arguments too: a stem is included where it
    # appears as an argument anywhere in the sources or the generated numbers
    sources = "\n".join([(REPO_ROOT / "paper" / "paper.tex").read_text(),
                         (tmp_path / "out" / "generated" / "numbers.tex").read_text(),
                         *(t.read_text() for t in (REPO_ROOT / "paper" / "sections").glob("*.tex"))])
    assert {s for s in made_tables if "{" + s + "}" not in sources} == set(), "tables the paper leaves out"
    assert {s for s in made_figures if "{" + s + "}" not in sources} == set(), "figures the paper leaves out"
    macro_arguments = {"#1", "#2", "#3", "#4", "STEM"}      # \pcTable's uses in macro definitions and comments
    assert tables - made_tables - macro_arguments == set(), "tables the paper includes that the runner did not make"
    assert figures - made_figures - macro_arguments == set(), "figures the paper includes that plot.py did not draw"
    assert "is missing: run" not in flat and "was not drawn" not in flat
    assert "??" not in text and "H100" in text


# ---- which scale ---------------------------------------------------------------------------------

def scale_of(results, *scale):
    return sh(["bash", BUILD, "--scale-of", results, *scale])


def test_scale_is_the_most_recent_run_when_not_given(tmp_path):
    results = results_with(tmp_path, paper=FIXED_SMOKE, smoke=FIXED_SMOKE)   # smoke the newer
    p = scale_of(results)
    assert p.returncode == 0 and p.stdout == "smoke\n", p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "note: no SCALE given" in lines[0] and "using SCALE=smoke" in lines[0], p.stderr
    os.utime(results / "paper" / "results.csv")                               # now paper is
    assert scale_of(results).stdout == "paper\n"
    # an explicit SCALE means that scale, with or without its results
    for s in ("smoke", "default"):
        p = scale_of(results, s)
        assert (p.returncode, p.stdout, p.stderr) == (0, f"{s}\n", "")


def test_default_scale_wins_when_its_results_exist(tmp_path):
    results = results_with(tmp_path, default=FIXED_SMOKE, smoke=FIXED_SMOKE)  # smoke newer
    p = scale_of(results)
    assert (p.returncode, p.stdout, p.stderr) == (0, "default\n", "")


def test_no_results_names_the_command(tmp_path):
    for args in (["--scale-of", tmp_path / "RESULTS"], [tmp_path / "RESULTS"]):
        p = sh(["bash", BUILD, *args])
        assert p.returncode == 2
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        assert f"`make experiments SCALE=smoke RESULTS={tmp_path / 'RESULTS'}`" in lines[0]


def test_explicit_scale_without_results_names_the_runs_there_are(tmp_path):
    results = results_with(tmp_path, smoke=FIXED_SMOKE)
    p = sh(["bash", BUILD, results, "default"])
    assert p.returncode == 2
    line, = p.stderr.strip().splitlines()
    assert f"`make experiments SCALE=default RESULTS={results}`" in line
    assert f"`make paper SCALE=smoke RESULTS={results}`" in line


def make(tmp_path, *args, **env):
    return sh(["make", "--no-print-directory", f"TOOLCHAIN_DIR={fake_toolchain(tmp_path)}", *args],
              env=clean_env(**env))


def test_make_plots_and_paper_follow_the_most_recent_run(tmp_path):
    """After `make experiments SCALE=smoke` alone, `make plots` and `make paper` use smoke and
    say so once (before: "results/default/results.csv not found")."""
    need("gnuplot", "pdflatex", "pdfinfo")
    # make paper runs `make paper-deps` first: all installed, or it would call apt-get here
    absent = [pk for pk in PAPER_PACKAGES + ["gnuplot-nox"]
              if sh(["dpkg-query", "-W", "-f=${Status}", pk]).stdout != "install ok installed"]
    if absent:
        pytest.fail(f"{' '.join(absent)} not installed: `make test-deps` installs them")
    results = results_with(tmp_path, smoke=FIXED_SMOKE)
    p = make(tmp_path, "plots", f"RESULTS={results}")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("using SCALE=smoke") == 1, p.stderr
    assert f"figures in {results}/smoke/plots/" in p.stdout
    # make paper gets as far as the tables (this CSV has none): the scale is smoke, named once
    p = make(tmp_path, "paper", f"RESULTS={results}")
    assert p.returncode != 0
    assert p.stderr.count("using SCALE=smoke") == 1, p.stderr
    assert f"missing in {results}/smoke: tables/" in p.stderr
    assert "default/results.csv not found" not in p.stderr


@pytest.mark.parametrize("where", ["command line", "environment"])
def test_make_plots_explicit_scale_means_that_scale(tmp_path, where):
    need("gnuplot")
    results = results_with(tmp_path, smoke=FIXED_SMOKE)
    if where == "command line":
        p = make(tmp_path, "plots", f"RESULTS={results}", "SCALE=default")
    else:
        p = make(tmp_path, "plots", f"RESULTS={results}", SCALE="default")
    assert p.returncode != 0
    assert f"{results}/default/results.csv not found" in p.stderr
    assert "using SCALE" not in p.stderr


def test_make_plots_without_results_names_the_command(tmp_path):
    p = make(tmp_path, "plots", f"RESULTS={tmp_path / 'none'}")
    assert p.returncode != 0
    assert f"`make experiments SCALE=smoke RESULTS={tmp_path / 'none'}`" in p.stderr
    assert "Traceback" not in p.stderr


# ---- the install script: the lock and the packages ----------------------------------------------

FAKE_APT_GET = """#!/bin/bash
echo "$*" >> "$FAKE_APT_LOG"
if [[ -e $FAKE_APT_LOCK ]]; then
  if [[ " $* " == *" update "* ]]; then
    echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
    echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
  elif [[ " $* " == *"DPkg::Lock::Timeout=0 "* ]]; then
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)" >&2
    echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
  else   # what apt-get says when its own DPkg::Lock::Timeout has run out
    sleep 1
    echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
  fi
  exit 100
fi
"""
FAKE_DPKG_QUERY = """#!/bin/bash
p=${@: -1}
for m in $FAKE_MISSING; do [[ $p == "$m" ]] && exit 1; done
printf 'install ok installed'
"""


def fake_apt(tmp_path, missing, lock):
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    for name, text in (("apt-get", FAKE_APT_GET), ("dpkg-query", FAKE_DPKG_QUERY), ("sudo", '#!/bin/sh\nexec "$@"\n')):
        (bindir / name).write_text(text)
        (bindir / name).chmod(stat.S_IRWXU)
    lock_file = tmp_path / "lock"
    if lock:
        lock_file.touch()
    env = clean_env(PATH=f"{bindir}:{os.environ['PATH']}", FAKE_APT_LOG=str(tmp_path / "apt.log"),
                    FAKE_APT_LOCK=str(lock_file), FAKE_MISSING=" ".join(missing))
    return env, lock_file, tmp_path / "apt.log"


def install(tmp_path, env, *options, timeout=120):
    return subprocess.run(["bash", str(INSTALL), *options, str(fake_toolchain(tmp_path))], capture_output=True,
                          text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL)


def test_install_waits_for_the_apt_lock_and_says_so_once(tmp_path):
    env, lock_file, log = fake_apt(tmp_path, ["lmodern"], lock=True)
    env["INSTALL_TOOLCHAIN_LOCK_TIMEOUT"] = "60"
    threading.Timer(7, lock_file.unlink).start()        # the other apt finishes after 7 s
    p = install(tmp_path, env, "--paper")
    assert p.returncode == 0, p.stderr
    waits = [line for line in p.stderr.splitlines() if "waiting" in line]
    assert len(waits) == 1, p.stderr
    assert "60 s" in waits[0] and "/var/lib/apt/lists/lock" in waits[0] and "process 4242" in waits[0]
    calls = log.read_text().splitlines()
    assert calls[-1].endswith("install -y -qq --no-install-recommends lmodern"), calls
    assert any(" update " in f" {c} " for c in calls[:-1])


def test_install_gives_up_after_the_time_limit(tmp_path):
    env, _, log = fake_apt(tmp_path, ["lmodern"], lock=True)
    env["INSTALL_TOOLCHAIN_LOCK_TIMEOUT"] = "4"
    p = install(tmp_path, env, "--paper")
    assert p.returncode == 1
    assert "gave up after 4 s" in p.stderr, p.stderr
    assert len([line for line in p.stderr.splitlines() if "waiting up to 4 s" in line]) == 1, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert "gave up after 4 s" in last and "INSTALL_TOOLCHAIN_LOCK_TIMEOUT" in last
    assert "install" not in log.read_text()             # only `update` was tried


def test_install_refuses_a_bad_time_limit(tmp_path):
    env, _, _ = fake_apt(tmp_path, ["lmodern"], lock=False)
    env["INSTALL_TOOLCHAIN_LOCK_TIMEOUT"] = "ten"
    p = install(tmp_path, env, "--paper")
    assert p.returncode != 0 and "INSTALL_TOOLCHAIN_LOCK_TIMEOUT" in p.stderr


PAPER_PACKAGES = ["texlive-latex-base", "texlive-latex-recommended", "texlive-latex-extra",
                  "texlive-fonts-recommended", "lmodern", "poppler-utils"]


@pytest.mark.parametrize("option", ["--paper", "--tests"])
def test_install_names_every_package_of_the_paper(tmp_path, option):
    """With --no-install-recommends, lmodern must be named: it is only a Recommends of
    texlive-latex-recommended ("lmodern.sty not found" on a fresh machine). --tests installs
    the paper's packages too (test_pdf_from_the_reference_results builds the PDF)."""
    env, _, log = fake_apt(tmp_path, PAPER_PACKAGES, lock=False)
    p = install(tmp_path, env, option)
    assert p.returncode == 0, p.stderr
    installed = log.read_text().splitlines()[-1].split("--no-install-recommends ")[1].split()
    assert sorted(installed) == sorted(PAPER_PACKAGES)
