"""Tests of experiments/datasets.py (the data-set downloader), all offline.

The downloader is pointed at a local mirror: a temporary folder served over
http://127.0.0.1:<free port> by http.server in a thread, with the files laid out by URL
path (--mirror keeps the path and swaps the scheme and host). The mirror's source files are
rebuilt from the real copies in $DATA_DIR (shared/datasets): right-aligned columns for the
elia-mercatanti files, the CRLF/tab file for Aggregation, the headed CSV for letter, gzipped
labels, a Debian package for iris_fisher. Most of these rebuilt sources match the source
sha256 in PROVENANCE.md byte for byte. Only the compressed ones (.gz, .deb) cannot be
rebuilt byte-exact, and for those the test manifest takes the sha256 of the rebuilt file.
The downloader must then reproduce exactly the final sha256 listed in PROVENANCE.md. Tests
that need the real copies are skipped, with the reason, when DATA_DIR is not set.
"""
import copy
import gzip
import hashlib
import http.server
import importlib.util
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "experiments" / "datasets.py"
REAL = ["iris", "iris_fisher", "s1", "s2", "birch1", "letter", "worms_2d", "aggregation"]
ALL = REAL + ["worms_64d", "KDDCUP04Bio"]
APT_DEB = Path("/var/cache/apt/archives/python3-sklearn_1.2.1+dfsg-1_all.deb")


def _load_module():
    spec = importlib.util.spec_from_file_location("pragmaclust_datasets", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


dsm = _load_module()
BY_NAME = {d["name"]: d for d in dsm.MANIFEST}


def sha(data):
    return hashlib.sha256(data).hexdigest()


def run_dl(*args, env=None, timeout=60):
    """Runs datasets.py; returns (rc, stdout, stderr). DATA_DIR and the mirror variable of the
    test's own environment are removed, so that nothing is written into the real DATA_DIR."""
    e = {k: v for k, v in os.environ.items() if k not in ("DATA_DIR", dsm.MIRROR_ENV)}
    e.update(env or {})
    p = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=e, stdin=subprocess.DEVNULL, cwd=REPO)
    return p.returncode, p.stdout, p.stderr


def progress_lines(out):
    """{data set name: (status, rest of the line)} from the per-data-set progress lines."""
    lines = {}
    for line in out.splitlines():
        m = re.match(r"^  (ok|present|FAILED|missing|BAD)\s+(\S+)\s+(.*)$", line)
        if m:
            assert m.group(2) not in lines, f"two progress lines for {m.group(2)}:\n{out}"
            lines[m.group(2)] = (m.group(1), m.group(3))
    return lines


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------
# The real copies and the mirror built from them
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(data_dir):
    """The real data sets ($DATA_DIR) and their SHA256SUMS."""
    sums_path = data_dir / "SHA256SUMS"
    missing = [f["name"] for n in REAL for f in BY_NAME[n]["files"] if not (data_dir / f["name"]).is_file()]
    if missing or not sums_path.is_file():
        pytest.skip(f"DATA_DIR={data_dir} lacks {', '.join(missing) or 'SHA256SUMS'} (the real data sets)")
    sums = {}
    for line in sums_path.read_text().splitlines():
        digest, name = line.split()
        sums[name.lstrip("*")] = digest
    return data_dir, sums


def right_aligned(text):
    """The elia-mercatanti (UEF) layout: every value right-aligned in 10 characters."""
    return "".join("".join(t.rjust(10) for t in line.split()) + "\n" for line in text.splitlines()).encode()


def aggregation_source(d):
    """The DiGiDeoni/UEF file: x TAB y TAB label, CRLF; row 7 has a double tab."""
    xs = [line.split() for line in (d / "aggregation.txt").read_text().splitlines()]
    labels = (d / "aggregation.labels").read_text().split()
    rows = ["\t".join(r + [lab]) for r, lab in zip(xs, labels)]
    rows[6] = rows[6].replace("\t", "\t\t", 1)
    return ("\r\n".join(rows) + "\r\n").encode()


def letter_csv(d):
    """davidgasquez's letter-recognition.data: header, then letter,16 UCI integers; no final LF."""
    xs = [line.split() for line in (d / "letter.txt").read_text().splitlines()]
    labels = (d / "letter.labels").read_text().split()
    rows = ["Letter," + ",".join(str(i) for i in range(1, 17))]
    rows += [",".join([chr(64 + int(lab))] + [str(int(v) // 1000) for v in r]) for r, lab in zip(xs, labels)]
    return "\n".join(rows).encode()


def sklearn_iris_csv(d):
    xs = [line.split() for line in (d / "iris_fisher.txt").read_text().splitlines()]
    labels = (d / "iris_fisher.labels").read_text().split()
    rows = ["150,4,setosa,versicolor,virginica"] + [",".join(r + [str(int(lab) - 1)]) for r, lab in zip(xs, labels)]
    return ("\n".join(rows) + "\n").encode()


def make_deb(member, payload):
    """A minimal Debian package (ar archive) whose data.tar.xz holds ./member."""
    def tar_xz(name, data):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz") as t:
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def ar_member(name, data):
        header = f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
        return header + data + (b"\n" if len(data) % 2 else b"")

    return (b"!<arch>\n" + ar_member("debian-binary", b"2.0\n")
            + ar_member("control.tar.xz", tar_xz("control", b"Package: python3-sklearn\n"))
            + ar_member("data.tar.xz", tar_xz(member, payload)))


def gz(data):
    return gzip.compress(data, mtime=0)


def rebuilt_sources(d):
    """{(data set, source id): bytes} for the first source of every file of the real sets."""
    t = lambda name: (d / name).read_bytes()
    if APT_DEB.is_file() and sha(APT_DEB.read_bytes()) == BY_NAME["iris_fisher"]["sources"]["deb"]["sha256"]:
        deb = APT_DEB.read_bytes()  # the real package, where apt left a copy
    else:
        deb = make_deb(dsm.SKLEARN_IRIS, sklearn_iris_csv(d))
    return {
        ("iris", "elia"): right_aligned(t("iris.txt").decode()),
        ("iris", "labels0"): gz(t("iris.labels")),
        ("iris_fisher", "deb"): deb,
        ("s1", "elia"): right_aligned(t("s1.txt").decode()),
        ("s1", "labels0"): gz(t("s1.labels")),
        ("s2", "data"): gz(t("s2.txt")),
        ("s2", "labels0"): gz(t("s2.labels")),
        ("birch1", "elia"): right_aligned(t("birch1.txt").decode()),
        ("birch1", "labels0"): gz(t("birch1.labels")),
        ("letter", "elia"): t("letter.txt"),
        ("letter", "gasquez"): letter_csv(d),
        ("worms_2d", "elia"): t("worms_2d.txt"),
        ("worms_2d", "labels0"): gz(t("worms_2d.labels")),
        ("aggregation", "digideoni"): aggregation_source(d),
    }


def write_mirror(root, manifest, files):
    """Lays out {(data set, source id): bytes} under root by URL path."""
    by_name = {d["name"]: d for d in manifest}
    for (name, sid), data in files.items():
        path = root / urlsplit(by_name[name]["sources"][sid]["url"]).path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(folder, base URL): an HTTP server on 127.0.0.1 serving the folder; mirrors are subfolders."""
    root = tmp_path_factory.mktemp("mirrors")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def mirror(real, server, tmp_path_factory):
    """The full mirror: (mirror URL, manifest file, test manifest, rebuilt files, overridden).
    The test manifest is the built-in one with the source sha256 of the rebuilt compressed
    sources (which cannot be byte-exact) replaced; `overridden` lists those."""
    d, _ = real
    root, base = server
    files = rebuilt_sources(d)
    manifest = copy.deepcopy(dsm.MANIFEST)
    by_name = {x["name"]: x for x in manifest}
    overridden = set()
    for (name, sid), data in files.items():
        src = by_name[name]["sources"][sid]
        if src["sha256"] != sha(data):
            src["sha256"] = sha(data)
            overridden.add((name, sid))
    write_mirror(root / "full", manifest, files)
    mfile = tmp_path_factory.mktemp("manifest") / "manifest.json"
    mfile.write_text(json.dumps(manifest))
    return f"{base}/full", mfile, manifest, files, overridden


@pytest.fixture(scope="module")
def downloaded(mirror, tmp_path_factory):
    """One full download of the real sets from the mirror: (data dir, rc, stdout, stderr, seconds)."""
    url, mfile, *_ = mirror
    out = tmp_path_factory.mktemp("downloaded") / "data"   # does not exist yet: must be made
    t0 = time.monotonic()
    rc, so, se = run_dl("--mirror", url, "--manifest", mfile, "--data-dir", out, "--only", ",".join(REAL))
    return out, rc, so, se, time.monotonic() - t0


# ---------------------------------------------------------------------------------------
# The manifest
# ---------------------------------------------------------------------------------------
def test_manifest_is_well_formed():
    dsm.validate_manifest(dsm.MANIFEST)
    assert [d["name"] for d in dsm.MANIFEST] == ALL
    hexes = re.compile(r"^[0-9a-f]{64}$")
    for d in dsm.MANIFEST:
        for sid, src in d["sources"].items():
            assert src["sha256"] is None or hexes.match(src["sha256"]), (d["name"], sid)
            u = urlsplit(src["url"])
            assert u.scheme == "https", src["url"]
            if u.netloc == "raw.githubusercontent.com":
                owner, repo, ref = u.path.split("/")[1:4]
                # every GitHub source is pinned to a commit, except scikit-learn's release tag
                # (pinned by the file's sha256 instead)
                assert re.match(r"^[0-9a-f]{40}$", ref) or (repo == "scikit-learn" and src["sha256"]), src["url"]
        for f in d["files"]:
            assert f["sha256"] is None or hexes.match(f["sha256"])
    for name, shape, k in [("worms_64d", [105000, 64], 25), ("KDDCUP04Bio", [145751, 74], None)]:
        d = BY_NAME[name]
        assert d["shape"] == shape and d["k"] == k
        assert all(f["sha256"] is None for f in d["files"])


def test_manifest_matches_provenance(real):
    d, sums = real
    provenance = (d / "PROVENANCE.md").read_text()
    for name in REAL:
        ds = BY_NAME[name]
        for f in ds["files"]:
            assert f["sha256"] == sums[f["name"]], f["name"]
        rows = (d / f"{name}.txt").read_text().splitlines()
        assert [len(rows), len(rows[0].split())] == ds["shape"], name
        assert len(set((d / f"{name}.labels").read_text().split())) == ds["k"], name
        for sid, src in ds["sources"].items():
            for key in ("sha256", "member_sha256"):
                if src.get(key):
                    assert src[key] in provenance, f"{name}/{sid}: {key} not in PROVENANCE.md"


def test_mirror_url():
    assert (dsm.mirror_url("https://raw.githubusercontent.com/o/r/c/p/f.txt", "http://127.0.0.1:8000/pre/")
            == "http://127.0.0.1:8000/pre/o/r/c/p/f.txt")
    assert dsm.mirror_url("https://cs.joensuu.fi/sipu/datasets/s1.txt", None) == "https://cs.joensuu.fi/sipu/datasets/s1.txt"


# ---------------------------------------------------------------------------------------
# The whole pipeline, offline
# ---------------------------------------------------------------------------------------
def test_rebuilt_sources_match_provenance(mirror):
    """Every source that can be rebuilt byte-exact has the sha256 that PROVENANCE.md gives."""
    *_, overridden = mirror
    compressed = {("iris", "labels0"), ("s1", "labels0"), ("s2", "data"), ("s2", "labels0"),
                  ("birch1", "labels0"), ("worms_2d", "labels0"), ("iris_fisher", "deb")}
    assert overridden <= compressed
    assert compressed - overridden <= {("iris_fisher", "deb")}  # the real .deb where apt kept one


def test_pipeline_reproduces_provenance(real, downloaded):
    _, sums = real
    out, rc, so, se, seconds = downloaded
    assert rc == 0, so + se
    assert "Traceback" not in so + se
    lines = progress_lines(so)
    assert list(lines) == REAL
    assert all(status == "ok" for status, _ in lines.values()), so
    assert f"summary ({out}): 8 downloaded, 0 already present, 0 failed" in so
    want = sorted(f["name"] for n in REAL for f in BY_NAME[n]["files"])
    assert sorted(os.listdir(out)) == want      # no temp file or download folder left behind
    for name in want:
        assert sha((out / name).read_bytes()) == sums[name], name
    assert seconds < 30


def test_rerun_skips_present_files(downloaded, tmp_path):
    out, rc, *_ = downloaded
    assert rc == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    dead = f"http://127.0.0.1:{free_port()}"   # nothing may be downloaded
    rc, so, se = run_dl("--mirror", dead, "--data-dir", out, "--only", ",".join(REAL))
    assert rc == 0, so + se
    lines = progress_lines(so)
    assert all(status == "present" for status, _ in lines.values()) and list(lines) == REAL, so
    assert "0 downloaded, 8 already present, 0 failed" in so
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_fallback_url_is_used(server, mirror, real, tmp_path):
    """elia's s1.txt is gone (HTTP 404): the UEF copy is used, and the result is the same."""
    _, sums = real
    root, base = server
    _, mfile, manifest, files, _ = mirror
    write_mirror(root / "fallback", manifest, {k: v for k, v in files.items() if k[0] == "s1" and k[1] != "elia"})
    uef = root / "fallback" / urlsplit(BY_NAME["s1"]["sources"]["uef"]["url"]).path.lstrip("/")
    uef.parent.mkdir(parents=True, exist_ok=True)
    uef.write_bytes(files[("s1", "elia")])
    rc, so, se = run_dl("--mirror", f"{base}/fallback", "--manifest", mfile, "--data-dir", tmp_path, "--only", "s1")
    assert rc == 0, so + se
    assert sha((tmp_path / "s1.txt").read_bytes()) == sums["s1.txt"]


def test_source_checksum_mismatch_fails_and_leaves_nothing(server, mirror, tmp_path):
    root, base = server
    _, mfile, manifest, files, _ = mirror
    bad = dict((k, v) for k, v in files.items() if k[0] == "s1")
    bad[("s1", "elia")] = bad[("s1", "elia")].replace(b"664159", b"664158", 1)   # same shape, other bytes
    write_mirror(root / "tampered", manifest, bad)
    rc, so, se = run_dl("--mirror", f"{base}/tampered", "--manifest", mfile, "--data-dir", tmp_path, "--only", "s1")
    assert rc == 1, so + se
    status, reason = progress_lines(so)["s1"]
    assert status == "FAILED" and "source sha256 mismatch" in reason, so
    assert "HTTP 404" in reason                              # the UEF fallback is not in this mirror
    assert "failed: s1: s1.txt:" in so and "Traceback" not in so + se
    assert os.listdir(tmp_path) == []


def test_final_checksum_mismatch_fails_and_leaves_nothing(mirror, tmp_path):
    """s1.txt is made and checked, then s1.labels fails its final sha256: neither is kept."""
    url, _, manifest, _, _ = mirror
    m = copy.deepcopy(manifest)
    s1 = next(d for d in m if d["name"] == "s1")
    s1["files"][1]["sha256"] = "0" * 64
    mfile = tmp_path / "m.json"
    mfile.write_text(json.dumps(m))
    out = tmp_path / "data"
    rc, so, se = run_dl("--mirror", url, "--manifest", mfile, "--data-dir", out, "--only", "s1")
    assert rc == 1, so + se
    status, reason = progress_lines(so)["s1"]
    assert status == "FAILED" and "s1.labels" in reason and "sha256 mismatch" in reason, so
    assert os.listdir(out) == []


def test_unreachable_mirror_fails_cleanly(tmp_path):
    """Every data set fails with one line and a reason, the summary says so, exit status 1.
    The mirror comes from the environment variable here."""
    dead = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    rc, so, se = run_dl("--data-dir", tmp_path / "data", env={dsm.MIRROR_ENV: dead})
    assert rc == 1
    assert "Traceback" not in so + se and se == ""
    lines = progress_lines(so)
    assert list(lines) == ALL, so
    for name, (status, reason) in lines.items():
        assert status == "FAILED" and "cannot reach 127.0.0.1" in reason, (name, reason)
    assert "0 downloaded, 0 already present, 10 failed" in so
    assert len([l for l in so.splitlines() if l.startswith("  failed: ")]) == 10
    assert not (tmp_path / "data").exists() or os.listdir(tmp_path / "data") == []
    assert time.monotonic() - t0 < 20   # 3 tries of one host, then its other URLs fail at once


def test_shape_only_data_set(server, tmp_path):
    """A set without checksums (like worms_64d): header skipped by "auto", tabs and CRLF
    cleaned, checked by shape and labels; a wrong shape fails and leaves nothing."""
    root, base = server
    src = b"x\ty\tz\tclass\r\n1.5\t2\t3\t1\r\n4\t5e-1\t6\t2\r\n\r\n7\t8\t9\t1\r\n-1\t0\t1\t2\r\n"
    (root / "tiny").mkdir(exist_ok=True)
    (root / "tiny" / "tiny.tsv").write_bytes(src)
    def tiny(name, rows):
        return {"name": name, "shape": [rows, 3], "k": 2, "sources": {"a": {"url": "https://example.org/tiny.tsv", "sha256": None}},
                "files": [{"name": f"{name}.txt", "sha256": None, "recipes": [{"source": "a", "skip": "auto", "cols": "0:3"}]},
                          {"name": f"{name}.labels", "sha256": None, "recipes": [{"source": "a", "skip": 1, "cols": [3]}]}]}
    mfile = tmp_path / "m.json"
    mfile.write_text(json.dumps([tiny("tiny", 4), tiny("tiny_bad", 5)]))
    out = tmp_path / "data"
    rc, so, se = run_dl("--mirror", f"{base}/tiny", "--manifest", mfile, "--data-dir", out)
    assert rc == 1, so + se
    lines = progress_lines(so)
    assert lines["tiny"][0] == "ok" and "no checksum known" in lines["tiny"][1], so
    assert lines["tiny_bad"][0] == "FAILED" and "4 rows, expected 5" in lines["tiny_bad"][1], so
    assert (out / "tiny.txt").read_bytes() == b"1.5 2 3\n4 5e-1 6\n7 8 9\n-1 0 1\n"
    assert (out / "tiny.labels").read_bytes() == b"1\n2\n1\n2\n"
    assert sorted(os.listdir(out)) == ["tiny.labels", "tiny.txt"]
    assert sha((out / "tiny.txt").read_bytes()) in lines["tiny"][1]
    rc, so, se = run_dl("--manifest", mfile, "--data-dir", out, "--verify", "--only", "tiny")
    assert rc == 0 and progress_lines(so)["tiny"][0] == "ok", so + se


def test_corrupt_file_is_replaced(mirror, downloaded, real, tmp_path):
    """A present file that fails its check is made again; the good ones are left alone."""
    url, mfile, *_ = mirror
    out, rc, *_ = downloaded
    assert rc == 0
    data = tmp_path / "data"
    shutil.copytree(out, data)
    (data / "s1.txt").write_bytes((data / "s1.txt").read_bytes().replace(b"664159", b"664158", 1))
    rc, so, se = run_dl("--mirror", url, "--manifest", mfile, "--data-dir", data, "--only", "s1,iris")
    assert rc == 0, so + se
    lines = progress_lines(so)
    assert lines["s1"][0] == "ok" and "s1.txt sha256 ok" in lines["s1"][1] and "s1.labels" not in lines["s1"][1]
    assert lines["iris"][0] == "present"
    assert sha((data / "s1.txt").read_bytes()) == real[1]["s1.txt"]


def test_unpack_archives(tmp_path):
    """gzip, a zip member given by its base name (UEF worms.zip), and a Debian package member;
    member_sha256 is checked."""
    payload = b"1 2\n3 4\n"
    (tmp_path / "a.gz").write_bytes(gz(payload))
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as z:
        z.writestr("worms/worms_2d.txt", b"other")
        z.writestr("worms/worms_64d.txt", payload)
    (tmp_path / "a.deb").write_bytes(make_deb(dsm.SKLEARN_IRIS, payload))
    cases = [("a.gz", {"archive": "gzip"}), ("a.zip", {"archive": "zip", "member": "worms_64d.txt"}),
             ("a.deb", {"archive": "deb", "member": dsm.SKLEARN_IRIS, "member_sha256": sha(payload)})]
    for i, (name, src) in enumerate(cases):
        path = dsm.unpack(str(tmp_path / name), src, str(tmp_path), f"t{i}")
        assert Path(path).read_bytes() == payload, name
    with pytest.raises(dsm.DatasetError, match="sha256 mismatch inside the deb file"):
        dsm.unpack(str(tmp_path / "a.deb"), dict(cases[2][1], member_sha256="0" * 64), str(tmp_path), "bad")
    with pytest.raises(dsm.DatasetError, match="not in the archive"):
        dsm.unpack(str(tmp_path / "a.zip"), {"archive": "zip", "member": "nosuch.txt"}, str(tmp_path), "bad")
    with pytest.raises(dsm.DatasetError, match="cannot unpack the gzip file"):
        dsm.unpack(str(tmp_path / "a.zip"), {"archive": "gzip"}, str(tmp_path), "bad")


# ---------------------------------------------------------------------------------------
# --verify and --list
# ---------------------------------------------------------------------------------------
def test_verify_detects_corruption(real, tmp_path):
    d, _ = real
    for name in ["s1.txt", "s1.labels", "iris.txt", "iris.labels"]:
        shutil.copy(d / name, tmp_path / name)
    rc, so, se = run_dl("--verify", "--data-dir", tmp_path, "--only", "s1,iris")
    assert rc == 0, so + se
    # with DATA_DIR as the default folder, and sets that are simply missing (not an error)
    rc, so, se = run_dl("--verify", env={"DATA_DIR": str(tmp_path)})
    assert rc == 0, so + se
    assert f"verify ({tmp_path}): 2 ok, 0 bad, 8 missing" in so
    # one changed digit: same shape, other sha256
    text = (tmp_path / "s1.txt").read_bytes()
    (tmp_path / "s1.txt").write_bytes(text.replace(b"664159", b"664158", 1))
    (tmp_path / "iris.labels").unlink()
    rc, so, se = run_dl("--verify", "--data-dir", tmp_path, "--only", "s1,iris")
    assert rc == 1, so + se
    lines = progress_lines(so)
    assert lines["s1"][0] == "BAD" and "s1.txt: sha256 mismatch" in lines["s1"][1]
    assert lines["iris"][0] == "BAD" and "iris.labels is missing" in lines["iris"][1]
    assert "Traceback" not in so + se
    assert (tmp_path / "s1.txt").read_bytes() != text   # verify changes nothing


def test_verify_named_missing_set_fails(tmp_path):
    rc, so, _ = run_dl("--verify", "--data-dir", tmp_path, "--only", "worms_64d")
    assert rc == 1 and progress_lines(so)["worms_64d"][0] == "missing"


def test_list_prints_the_manifest():
    rc, so, se = run_dl("--list")
    assert rc == 0, se
    for d in dsm.MANIFEST:
        assert re.search(rf"^{d['name']}: {d['shape'][0]} x {d['shape'][1]}", so, re.M), d["name"]
        for src in d["sources"].values():
            assert src["url"] in so
    assert "KDDCUP04Bio: 145751 x 74, no labels; checked by shape only" in so
    rc, so, _ = run_dl("--list", "--mirror", "http://127.0.0.1:1/m", "--only", "s1")
    assert rc == 0 and "http://127.0.0.1:1/m/elia-mercatanti/parallel-k-means/" in so and "iris" not in so
    rc, so, _ = run_dl("--list", "--json")
    assert rc == 0 and json.loads(so) == dsm.MANIFEST


def test_unknown_name_is_a_usage_error(tmp_path):
    rc, so, se = run_dl("--only", "s1,nosuch", "--data-dir", tmp_path)
    assert rc == 2 and "unknown data set 'nosuch'" in se and "Traceback" not in se
    assert os.listdir(tmp_path) == []
