"""The README as a newcomer meets it: its commands run from a fresh clone, its links lead somewhere,
and it stays a front page.

- Every command of README.md's fenced shell blocks (```sh or ```bash) runs and exits 0. The blocks run in
  the README's order, each in a shell of its own started in the root of one fresh copy of the working tree:
  a block may use the files an earlier block wrote, not its shell variables.
- A block that cannot run here is marked on the line before its fence (blank lines between allowed):
      <!-- not run: REASON -->
  For installs that need root or the network, the whole test suite, long experiments and runs on a GPU
  machine only; at most MAX_NOT_RUN blocks, each with its reason.
- The fresh copy holds what a clone of this working tree would hold, uncommitted work included:
  `git ls-files -co --exclude-standard` (tracked files, and untracked ones git does not ignore). The
  programs, libraries and objects already built (bin/, lib/, build/) are copied with their modification
  times, and .toolchain/ is linked, so that `make` finds everything up to date instead of building from
  scratch. The copy is no git checkout, so the Makefile would name its commit "unknown" and rebuild every
  variant for the new build information: MAKEFLAGS gives it the builds' own GIT_COMMIT instead.
- The gpu program gets --allow-host after its subcommand (kmeans, dbscan, streamkm, stream, dpc), as the
  other tests give it (conftest.py), unless PRAGMACLUST_REQUIRE_GPU=1. HOME is a folder of the copy
  (`make install PREFIX=$HOME/.local`), `python3` the interpreter that runs the tests (Debian's, with NumPy),
  OMP_NUM_THREADS=2.
- README.md has fewer than MAX_README_LINES lines and shows the test command that .ci/run runs (`make test`).
- Every relative link of README.md and docs/*.md names a file or folder that exists, and its #anchor, into
  a Markdown file, a heading there (GitHub's heading ids).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from helpers import REPO_ROOT, TIMEOUT_SCALE

README = REPO_ROOT / "README.md"
MAX_README_LINES = 300
MAX_NOT_RUN = 4
NOT_RUN = re.compile(r"<!--\s*not run:\s*(\S.*?)\s*-->")
SHELL_LANGUAGES = ("sh", "bash")
GPU_SUBCOMMANDS = ("kmeans", "dbscan", "streamkm", "stream", "dpc")
REQUIRE_GPU = os.environ.get("PRAGMACLUST_REQUIRE_GPU") == "1"
BLOCK_TIMEOUT_S = 600


def fenced_blocks(text):
    """The fenced blocks of a Markdown text: dicts with line (1-based, of the opening fence), lang, body
    (the lines between the fences) and not_run (the reason of a marker on the line before, or None)."""
    lines, blocks, i = text.split("\n"), [], 0
    while i < len(lines):
        m = re.match(r"^(```+)\s*([\w+-]*)", lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker = NOT_RUN.search(lines[prev]) if prev >= 0 else None
        blocks.append({"line": start + 1, "lang": lang, "body": lines[start + 1:j],
                       "not_run": marker.group(1) if marker else None})
        i = j + 1
    return blocks


def shell_blocks():
    return [b for b in fenced_blocks(README.read_text()) if b["lang"] in SHELL_LANGUAGES]


def commands(body):
    """The commands of a block's lines: comment and blank lines dropped, lines ending in a backslash
    joined to the next, and lines joined until bash parses them as complete (a quote over several lines)."""
    out, pending = [], ""
    for line in body:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line + "\n"
        if line.endswith("\\"):
            continue
        if subprocess.run(["bash", "-n"], input=pending, text=True, capture_output=True).returncode == 0:
            out.append(pending.rstrip("\n"))
            pending = ""
    assert not pending, f"an unfinished command at the end of a block: {pending!r}"
    return out


def with_host_permission(command):
    """The gpu program's runs with --allow-host (no GPU here), as conftest.py gives them."""
    if REQUIRE_GPU:
        return command
    return re.sub(r"(pragmaclust-gpu\s+)(%s)(?=\s|$)" % "|".join(GPU_SUBCOMMANDS), r"\1\2 --allow-host", command)


def block_script(block):
    """A bash script that runs the block's commands in turn and stops at the first that fails, naming it."""
    lines = ["set -o pipefail"]
    for command in commands(block["body"]):
        run = with_host_permission(command)
        lines += [run, "status=$?",
                  f"if [ $status -ne 0 ]; then echo \"README line {block['line']}: exit status $status from:\" "
                  f"{shlex.quote(run)} >&2; exit $status; fi"]
    return "\n".join(lines) + "\n"


def built_commit():
    """The GIT_COMMIT the existing builds were made with (their buildinfo.h), or None."""
    for info in sorted((REPO_ROOT / "build").glob("*/buildinfo.h")):
        m = re.search(r'#define PC_BUILD_COMMIT "([^"]*)"', info.read_text())
        if m:
            return m.group(1)
    return None


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory):
    """A copy of the working tree as a clone would have it, with the builds reused (see the module's text)."""
    root = tmp_path_factory.mktemp("readme") / "pragmaclust"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = REPO_ROOT / name
        if src.is_file() or src.is_symlink():          # a tracked file deleted in the working tree is left out
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / name, follow_symlinks=False)
    for built in ("bin", "lib", "build"):
        if (REPO_ROOT / built).is_dir():
            shutil.copytree(REPO_ROOT / built, root / built, symlinks=True)
    if (REPO_ROOT / ".toolchain").exists():
        os.symlink(REPO_ROOT / ".toolchain", root / ".toolchain")
    tools = root.parent / "tools"
    tools.mkdir()
    os.symlink(sys.executable, tools / "python3")
    (root.parent / "home").mkdir()
    env = dict(os.environ, HOME=str(root.parent / "home"), PATH=f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
               OMP_NUM_THREADS="2")
    for var in ("PRAGMACLUST_BIN", "PRAGMACLUST_LIB_DIR", "PRAGMACLUST_VARIANT", "PKG_CONFIG_PATH", "MAKEFLAGS",
                "MAKELEVEL", "MFLAGS", "VIRTUAL_ENV"):
        env.pop(var, None)
    commit = built_commit()
    if commit:
        env["MAKEFLAGS"] = f"GIT_COMMIT={commit}"
    return root, env


def _block_id(block):
    return f"line{block['line']}"


RUNNABLE = [b for b in shell_blocks() if b["not_run"] is None]


@pytest.mark.parametrize("block", RUNNABLE, ids=[_block_id(b) for b in RUNNABLE])
def test_readme_block_runs_in_a_fresh_copy(block, fresh_copy):
    root, env = fresh_copy
    script = block_script(block)
    p = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True,
                       timeout=BLOCK_TIMEOUT_S * TIMEOUT_SCALE, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"README block at line {block['line']}:\n{script}\n--- stdout\n{p.stdout[-3000:]}\n" \
                              f"--- stderr\n{p.stderr[-3000:]}"


def test_readme_shell_blocks_are_few_unrun_and_say_why():
    blocks = shell_blocks()
    assert RUNNABLE, "README.md has no shell block that runs"
    unrun = [b for b in blocks if b["not_run"] is not None]
    assert len(unrun) <= MAX_NOT_RUN, f"{len(unrun)} blocks marked not run (at most {MAX_NOT_RUN}): " \
                                      f"{[b['line'] for b in unrun]}"
    for b in blocks:
        assert commands(b["body"]), f"README line {b['line']}: a shell block without a command"
    # A marker must sit right above a shell fence: one above anything else would be silently ignored.
    text = README.read_text().split("\n")
    fences = {b["line"] for b in blocks}
    for i, line in enumerate(text):
        if NOT_RUN.search(line):
            j = i + 1
            while j < len(text) and not text[j].strip():
                j += 1
            assert j + 1 in fences, f"README line {i + 1}: a not-run marker that is not right above a shell block"


def test_readme_shows_the_ci_test_command():
    """.ci/run runs `make test`, the README's test command."""
    assert re.search(r"^make test$", (REPO_ROOT / ".ci" / "run").read_text(), re.M), ".ci/run no longer runs make test"
    shown = [c.split("#")[0].strip() for b in shell_blocks() for c in commands(b["body"])]
    assert "make test" in shown, "README.md shows no `make test` command (the one .ci/run runs)"


def test_readme_is_a_front_page():
    n = len(README.read_text().splitlines())
    assert n < MAX_README_LINES, f"README.md has {n} lines (fewer than {MAX_README_LINES}: details go to docs/)"


def _github_slugs(markdown):
    """The ids GitHub gives the headings of a Markdown text."""
    slugs, seen, fence = set(), {}, False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fence = not fence
        if fence or not re.match(r"^#{1,6} ", line):
            continue
        title = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", line.lstrip("#").strip())
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        slugs.add(slug if n == 0 else f"{slug}-{n}")
    return slugs


def _links(markdown):
    """The targets of a Markdown text's inline links and images, code blocks and code spans left out."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)


def test_relative_links_in_readme_and_docs_exist():
    documents = [README] + sorted((REPO_ROOT / "docs").glob("*.md"))
    broken, checked = [], 0
    for doc in documents:
        for target in _links(doc.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):       # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            checked += 1
            where = f"{doc.relative_to(REPO_ROOT)}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
                continue
            if anchor and dest.suffix == ".md" and anchor not in _github_slugs(dest.read_text()):
                broken.append(f"{where} (no heading with that id)")
    assert checked > 10, f"only {checked} relative links found: is the link pattern right?"
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_link_checker_sees_what_github_sees():
    """The slug and link rules on known cases, so that a passing link test means something."""
    assert _github_slugs("## The papers' comparisons on an H200 (the reference run)\n") == \
        {"the-papers-comparisons-on-an-h200-the-reference-run"}
    assert _github_slugs("# Tests\n## k-means distances through cuBLAS\n## Tests\n") == \
        {"tests", "k-means-distances-through-cublas", "tests-1"}
    assert _github_slugs("## Outputs, errors and `--check` (every subcommand)\n") == \
        {"outputs-errors-and---check-every-subcommand"}
    sample = "see [a](docs/a.md#x), ![i](docs/i.png) and `[no](code.md)`\n```sh\n[no](fenced.md)\n```\n"
    assert _links(sample) == ["docs/a.md#x", "docs/i.png"]
    body = ["# comment", "", "make a \\", "  b   # note", 'python3 -c "x', 'y"', "bin/pragmaclust-gpu kmeans x -k 2"]
    assert commands(body) == ["make a \\\n  b   # note", 'python3 -c "x\ny"', "bin/pragmaclust-gpu kmeans x -k 2"]
    if not REQUIRE_GPU:
        assert with_host_permission("bin/pragmaclust-gpu kmeans x -k 2") == \
            "bin/pragmaclust-gpu kmeans --allow-host x -k 2"
        assert with_host_permission("bin/pragmaclust-gpu info") == "bin/pragmaclust-gpu info"
