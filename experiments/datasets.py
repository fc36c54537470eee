#!/usr/bin/env python3
"""datasets.py - download, clean and check the real data sets of pragmaclust.

PURPOSE
  Rebuilds DIR/NAME.txt (one point per line, values separated by single spaces, no header)
  and DIR/NAME.labels (ground truth, one 1-based integer per line) from the public sources
  named in shared/datasets/PROVENANCE.md. Every source is pinned: GitHub files are fetched
  from raw.githubusercontent.com at a fixed commit, and the source file's sha256 is checked
  where it is known. The cleaning is written down as data (the MANIFEST below). The
  finished files are checked against the sha256 from PROVENANCE.md, or by shape where no
  checksum is known, and then moved into place atomically (temp file + rename). A data set
  whose files are already there and pass the check is skipped. A data set that cannot be
  made is reported with a one-line reason and leaves no file behind.

USAGE
  datasets.py [--data-dir DIR] [--only NAME,...] [--list [--json]] [--verify]
              [--mirror URL] [--manifest FILE] [--timeout S] [--tries N]

  DIR defaults to $DATA_DIR, else ./data. --mirror URL (or $PRAGMACLUST_DATASET_MIRROR)
  swaps the scheme and host of every URL for those of URL and keeps the path, so a folder
  that holds the files laid out by path (elia-mercatanti/parallel-k-means/<commit>/datasets/
  s1.txt, ...) can serve as a local or offline mirror. --manifest FILE swaps in another
  manifest (JSON, same form as MANIFEST; `--list --json` prints the built-in one).

  Exit status: 0 when every data set asked for is present and checked, 1 when any failed
  (download, checksum or shape), 2 for a usage error. --verify downloads nothing. It checks
  the files in DIR and exits 1 when a file there fails the check or a data set is incomplete.
  A data set that is missing altogether counts as a failure only when --only names it.

Standard-library Python 3.11+ only, so it runs anywhere the programs run.
"""
import argparse
import copy
import gzip
import hashlib
import http.client
import io
import json
import math
import os
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

# ----------------------------------------------------------------------------------------
# The manifest: where every file comes from and how it is cleaned.
#
# Data set: name, shape [rows, cols] of NAME.txt, k (distinct labels in NAME.labels; None
#   when there are no labels), note, sources, files.
# Source (by id): url, sha256 of the downloaded file (None: not known), and optionally
#   archive ("gzip", "zip" or "deb"), member (path inside a zip or deb; a unique ending
#   "/member" also matches) and member_sha256 (sha256 of the extracted file).
# File: name (NAME.txt or NAME.labels), sha256 of the final file (None: no checksum known,
#   checked by shape only), recipes: tried in order until one gives a file that passes.
# Recipe: source (id), and the cleaning, applied line by line (blank lines are dropped):
#   sep    None: fields split on any whitespace (spaces, tabs, CR); ",": comma-separated
#   skip   header lines to drop: an int, or "auto" (drop the first line if its fields
#          are not numbers / labels)
#   cols   fields to keep: a list of indices or a Python slice "a:b" (default: all)
#   scale  integer factor applied to every (integer) feature value
#   names  labels only: label text -> 1-based position in this list
#   offset labels only: integer added to each label (0-based -> 1-based)
# Kept fields are copied as text (never reformatted, except by scale) and written
# separated by single spaces, with LF line ends.
# ----------------------------------------------------------------------------------------
GITHUB = "https://raw.githubusercontent.com/"
ELIA = GITHUB + "elia-mercatanti/parallel-k-means/7582b89769a90d59f28e899aa36de95dbd8a02d6/"
GAGOLEWS = GITHUB + "gagolews/clustering-data-v1/27ac73a6fd331fb18181419838d2e753dd1b5f80/"
CALAMAI = GITHUB + "marcocalamai/Kmeans-OpenMP--Cuda/fa24eb13bfbd60e40cc07d0010c8387cf1be223f/"
DIGIDEONI = GITHUB + "DiGiDeoni/density-peaks/742a6c14b99938a92cff8e207f952f4aec8356f3/"
GASQUEZ = GITHUB + "davidgasquez/letter-recognition/fe3c4830d0003e53340bbf40a57c3573e021df64/"
SKLEARN_TAG = GITHUB + "scikit-learn/scikit-learn/1.2.1/"  # a tag, not a commit: pinned by sha256
DEBIAN = "https://deb.debian.org/debian/pool/main/s/scikit-learn/"
UEF = "https://cs.joensuu.fi/sipu/datasets/"
UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"

SKLEARN_IRIS = "usr/lib/python3/dist-packages/sklearn/datasets/data/iris.csv"
SKLEARN_IRIS_SHA = "f13ffa8fdd56fd8e6c8d16d4081a3fbd3114bcd0aae4256c43205169cd9d1449"
IRIS_UCI_CLASSES = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
LETTERS = [chr(ord("A") + i) for i in range(26)]

MANIFEST = [
    {
        "name": "iris", "shape": [150, 4], "k": 3,
        "note": "UCI iris, each column affinely rescaled to large integers (UEF style), as used by the K-means report",
        "sources": {
            "elia": {"url": ELIA + "datasets/iris.txt",
                     "sha256": "274a4f4d366b570e0e1135f466c447ff661216f19f9c3bdbd212958db7245c71"},
            "uef": {"url": UEF + "iris.txt", "sha256": None},
            "labels0": {"url": GAGOLEWS + "other/iris.labels0.gz", "archive": "gzip",
                        "sha256": "1f6d0d84bb2a111320c116ec8039585e1fa1820d1d9fa3dd9a4853226f67c8f8"},
            "uci": {"url": UCI + "iris/iris.data", "sha256": None},
        },
        "files": [
            {"name": "iris.txt", "sha256": "bedc604dd541c66a596e20332263210b3f82e7d3dec89f361184b09cd7785bcf",
             "recipes": [{"source": "elia"}, {"source": "uef"}]},
            {"name": "iris.labels", "sha256": "7d4f6fac01b3909f93ebf361c095689388059dabbcc3a6206230d8be6d7c8651",
             "recipes": [{"source": "labels0"},
                         {"source": "uci", "sep": ",", "cols": [4], "names": IRIS_UCI_CLASSES}]},
        ],
    },
    {
        "name": "iris_fisher", "shape": [150, 4], "k": 3,
        "note": "Fisher/R iris in cm (scikit-learn's iris.csv from Debian python3-sklearn 1.2.1+dfsg-1)",
        "sources": {
            "deb": {"url": DEBIAN + "python3-sklearn_1.2.1+dfsg-1_all.deb",
                    "sha256": "ca0c6be401d14871c7e93cfdd8d1f561595dc65e6e2ad2501d568aee7f7efc58",
                    "archive": "deb", "member": SKLEARN_IRIS, "member_sha256": SKLEARN_IRIS_SHA},
            "github": {"url": SKLEARN_TAG + "sklearn/datasets/data/iris.csv", "sha256": SKLEARN_IRIS_SHA},
        },
        "files": [
            {"name": "iris_fisher.txt", "sha256": "6c525a9901e9df77c1c38ba10b954f41cda2d2de48d46ab0ac95e16b73f2ec08",
             "recipes": [{"source": "deb", "sep": ",", "skip": 1, "cols": "0:4"},
                         {"source": "github", "sep": ",", "skip": 1, "cols": "0:4"}]},
            {"name": "iris_fisher.labels", "sha256": "7d4f6fac01b3909f93ebf361c095689388059dabbcc3a6206230d8be6d7c8651",
             "recipes": [{"source": "deb", "sep": ",", "skip": 1, "cols": [4], "offset": 1},
                         {"source": "github", "sep": ",", "skip": 1, "cols": [4], "offset": 1}]},
        ],
    },
    {
        "name": "s1", "shape": [5000, 2], "k": 15,
        "note": "UEF S1 (Franti & Virmajoki 2006)",
        "sources": {
            "elia": {"url": ELIA + "datasets/s1.txt",
                     "sha256": "d98ddffe6ad4ff67babf1aacd1b679e7b858c8c97be1e51c818fe5f4552664af"},
            "uef": {"url": UEF + "s1.txt", "sha256": None},
            "labels0": {"url": GAGOLEWS + "sipu/s1.labels0.gz", "archive": "gzip",
                        "sha256": "b583261e516f8178987455be18a07891e7995f25e1cae138c0b8b2d0b66e43dd"},
        },
        "files": [
            {"name": "s1.txt", "sha256": "ecce2f01fcce8f26a6ab0235f8c89c27814c8170303b21368f5abaca4b68a8f4",
             "recipes": [{"source": "elia"}, {"source": "uef"}]},
            {"name": "s1.labels", "sha256": "b65ed20dfdb8df2aea5b217dce21a30224240ea528a4b393531a6c32f3107ec1",
             "recipes": [{"source": "labels0"}]},
        ],
    },
    {
        "name": "s2", "shape": [5000, 2], "k": 15,
        "note": "UEF S2 (Franti & Virmajoki 2006)",
        "sources": {
            "data": {"url": GAGOLEWS + "sipu/s2.data.gz", "archive": "gzip",
                     "sha256": "2851b54c760ccabca735d733a6ba5f934b367315462641b461f4fb5a30004596"},
            "calamai": {"url": CALAMAI + "Datasets/s2.txt", "sha256": None},
            "uef": {"url": UEF + "s2.txt", "sha256": None},
            "labels0": {"url": GAGOLEWS + "sipu/s2.labels0.gz", "archive": "gzip",
                        "sha256": "31aeb544430e3571556d2e9d514cea4ea7ae9bf8d6867052b06bd7f4af7a5161"},
        },
        "files": [
            {"name": "s2.txt", "sha256": "20afcf41055503f7febbb7258c9a05a7773519110a8ba0eb2d9949276b00d831",
             "recipes": [{"source": "data"}, {"source": "calamai"}, {"source": "uef"}]},
            {"name": "s2.labels", "sha256": "5032371cc472da57e1ecc34dfd8d5efb141bf88b6a17b2cbc792bb5eb1ed0b73",
             "recipes": [{"source": "labels0"}]},
        ],
    },
    {
        "name": "birch1", "shape": [100000, 2], "k": 100,
        "note": "UEF Birch1 (Zhang et al. 1997)",
        "sources": {
            "elia": {"url": ELIA + "datasets/birch1.txt",
                     "sha256": "95230d302b2ffbe15de77f732af7002b037887c30c19b1539999dedfe3587400"},
            "uef": {"url": UEF + "birch1.txt", "sha256": None},
            "labels0": {"url": GAGOLEWS + "sipu/birch1.labels0.gz", "archive": "gzip",
                        "sha256": "989283c30436b8be9c1fc6a6bcf897abdb8b9b5627c9852fec1b8517bde499f1"},
        },
        "files": [
            {"name": "birch1.txt", "sha256": "4cf2181aa38bb7af14440afdb61971327ff1532fb110409ae0ec7380a63ce207",
             "recipes": [{"source": "elia"}, {"source": "uef"}]},
            {"name": "birch1.labels", "sha256": "9360ab90d5d10413a0c8a0d8702fa2c5ddb54c0380e54be0fad67f76b85dffba",
             "recipes": [{"source": "labels0"}]},
        ],
    },
    {
        "name": "letter", "shape": [20000, 16], "k": 26,
        "note": "UCI Letter Recognition, features x1000 (0..15000) as in the K-means report; labels A..Z -> 1..26",
        "sources": {
            # elia's letter.txt is byte-identical to the final file, so its sha256 is the final one.
            "elia": {"url": ELIA + "datasets/letter.txt",
                     "sha256": "4a376e841465b26f4a80ef78fb6dfe325bef218c6e0d733ac0109e120942d4cd"},
            "gasquez": {"url": GASQUEZ + "letter-recognition.data",
                        "sha256": "9b63b12c9425f919cf32a4de0ffbbef25960ddeced6a0c15fc8cf2dbb530b403"},
            "uci": {"url": UCI + "letter-recognition/letter-recognition.data", "sha256": None},
        },
        "files": [
            {"name": "letter.txt", "sha256": "4a376e841465b26f4a80ef78fb6dfe325bef218c6e0d733ac0109e120942d4cd",
             "recipes": [{"source": "elia"},
                         {"source": "gasquez", "sep": ",", "skip": 1, "cols": "1:17", "scale": 1000},
                         {"source": "uci", "sep": ",", "cols": "1:17", "scale": 1000}]},
            {"name": "letter.labels", "sha256": "2ba1b797d056e3ca96516a5e59f90dbe6197bfc55a051a7a4af6e5472224a969",
             "recipes": [{"source": "gasquez", "sep": ",", "skip": 1, "cols": [0], "names": LETTERS},
                         {"source": "uci", "sep": ",", "cols": [0], "names": LETTERS}]},
        ],
    },
    {
        "name": "worms_2d", "shape": [105600, 2], "k": 35,
        "note": "UEF worms 2-D (Sieranoja & Franti 2019)",
        "sources": {
            # byte-identical to the final file, so its sha256 is the final one.
            "elia": {"url": ELIA + "datasets/worms_2d.txt",
                     "sha256": "730419d15b9b49aedfb313873aca083a919f25bfc8fdd73d7d52c501fd1906e5"},
            "uef": {"url": UEF + "worms.zip", "sha256": None, "archive": "zip", "member": "worms_2d.txt"},
            "data": {"url": GAGOLEWS + "sipu/worms_2.data.gz", "archive": "gzip", "sha256": None},
            "labels0": {"url": GAGOLEWS + "sipu/worms_2.labels0.gz", "archive": "gzip",
                        "sha256": "05037c553809abe120c58a76fcf4eb13a65276fcb1af433fb40bd51c8bcc41b2"},
        },
        "files": [
            {"name": "worms_2d.txt", "sha256": "730419d15b9b49aedfb313873aca083a919f25bfc8fdd73d7d52c501fd1906e5",
             "recipes": [{"source": "elia"}, {"source": "uef"}, {"source": "data"}]},
            {"name": "worms_2d.labels", "sha256": "fa100e57c42a43a9e4f2928ea57d5989dc3d32febbdf65305331a98f7740541b",
             "recipes": [{"source": "labels0"}]},
        ],
    },
    {
        "name": "aggregation", "shape": [788, 2], "k": 7,
        "note": "UEF Aggregation (Gionis et al. 2007); original 3-column file, labels in the original numbering",
        "sources": {
            "digideoni": {"url": DIGIDEONI + "Aggregation.txt",
                          "sha256": "1a3a252ec5d031b56ca6804336c3a0335ea01f894022f0ae7a8cec86a49e2184"},
            "uef": {"url": UEF + "Aggregation.txt", "sha256": None},
        },
        "files": [
            {"name": "aggregation.txt", "sha256": "6093abfe517a37a057d99fc0da8b14c041c34a3ccdfbe5ebcecfae191351583f",
             "recipes": [{"source": "digideoni", "cols": "0:2"}, {"source": "uef", "cols": "0:2"}]},
            {"name": "aggregation.labels", "sha256": "9fd3b572eca3b2019f55614d52dc2c8b52e540fa93942042dee5d37865325195",
             "recipes": [{"source": "digideoni", "cols": [2]}, {"source": "uef", "cols": [2]}]},
        ],
    },
    {
        "name": "worms_64d", "shape": [105000, 64], "k": 25,
        "note": "UEF worms 64-D (Sieranoja & Franti 2019); no checksum known: checked by shape only",
        "sources": {
            "elia": {"url": ELIA + "datasets/worms_64d.txt", "sha256": None},
            "uef": {"url": UEF + "worms.zip", "sha256": None, "archive": "zip", "member": "worms_64d.txt"},
            "data": {"url": GAGOLEWS + "sipu/worms_64.data.gz", "archive": "gzip", "sha256": None},
            "labels0": {"url": GAGOLEWS + "sipu/worms_64.labels0.gz", "archive": "gzip", "sha256": None},
        },
        "files": [
            {"name": "worms_64d.txt", "sha256": None,
             "recipes": [{"source": "elia"}, {"source": "uef"}, {"source": "data"}]},
            {"name": "worms_64d.labels", "sha256": None, "recipes": [{"source": "labels0"}]},
        ],
    },
    {
        "name": "KDDCUP04Bio", "shape": [145751, 74], "k": None,
        "note": "KDD Cup 2004 protein homology (UEF copy), no labels; no checksum known: checked by shape only",
        "sources": {
            "calamai": {"url": CALAMAI + "Datasets/KDDCUP04Bio.txt", "sha256": None},
            "uef": {"url": UEF + "KDDCUP04Bio.txt", "sha256": None},
        },
        "files": [
            {"name": "KDDCUP04Bio.txt", "sha256": None,
             "recipes": [{"source": "calamai", "skip": "auto"}, {"source": "uef", "skip": "auto"}]},
        ],
    },
]

DEFAULT_TIMEOUT_S = 60
DEFAULT_TRIES = 3
RETRY_DELAY_S = 0.5          # doubled after each failed try
CHUNK = 1 << 20
USER_AGENT = "pragmaclust-datasets/1 (+https://github.com; python-urllib)"
MIRROR_ENV = "PRAGMACLUST_DATASET_MIRROR"


class DatasetError(Exception):
    """A failure with a one-line reason meant for the user."""


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def short(sha):
    return sha[:12] + "..." if sha else "none"


# ----------------------------------------------------------------------------------------
# Manifest checks and helpers
# ----------------------------------------------------------------------------------------
def validate_manifest(manifest):
    """Raises DatasetError when the manifest is not of the form described above."""
    if not isinstance(manifest, list):
        raise DatasetError("the manifest must be a list of data sets")
    seen = set()
    for ds in manifest:
        name = ds.get("name") if isinstance(ds, dict) else None
        if not name or name.lower() in seen:
            raise DatasetError(f"data set without a name or named twice: {name!r}")
        seen.add(name.lower())
        shape = ds.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2 and all(isinstance(v, int) and v > 0 for v in shape)):
            raise DatasetError(f"{name}: shape must be [rows, cols]")
        sources = ds.get("sources") or {}
        for sid, src in sources.items():
            if not src.get("url"):
                raise DatasetError(f"{name}: source {sid} has no url")
            if src.get("archive") not in (None, "gzip", "zip", "deb"):
                raise DatasetError(f"{name}: source {sid}: unknown archive {src.get('archive')!r}")
            if src.get("archive") in ("zip", "deb") and not src.get("member"):
                raise DatasetError(f"{name}: source {sid}: a {src['archive']} source needs a member")
        files = ds.get("files") or []
        if not files:
            raise DatasetError(f"{name}: no files")
        for f in files:
            fname = f.get("name", "")
            if not (fname.endswith(".txt") or fname.endswith(".labels")) or os.path.basename(fname) != fname:
                raise DatasetError(f"{name}: file {fname!r} must be a plain NAME.txt or NAME.labels")
            if fname.endswith(".labels") and not ds.get("k"):
                raise DatasetError(f"{name}: {fname} needs k")
            if not f.get("recipes"):
                raise DatasetError(f"{name}: {fname} has no recipe")
            for r in f["recipes"]:
                if r.get("source") not in sources:
                    raise DatasetError(f"{name}: {fname}: recipe names unknown source {r.get('source')!r}")


def select(manifest, only):
    """The data sets named in `only` (comma-separated, any case), or all of them."""
    if not only:
        return list(manifest)
    by_name = {ds["name"].lower(): ds for ds in manifest}
    out = []
    for name in [n.strip() for n in only.split(",") if n.strip()]:
        ds = by_name.get(name.lower())
        if ds is None:
            raise DatasetError(f"unknown data set {name!r}; known: {', '.join(d['name'] for d in manifest)}")
        if ds not in out:
            out.append(ds)
    return out


def mirror_url(url, mirror):
    """url with its scheme and host replaced by those of mirror (whose path is a prefix)."""
    if not mirror:
        return url
    u = urllib.parse.urlsplit(url)
    m = urllib.parse.urlsplit(mirror)
    return urllib.parse.urlunsplit((m.scheme, m.netloc, m.path.rstrip("/") + u.path, u.query, ""))


# ----------------------------------------------------------------------------------------
# Checking a finished file
# ----------------------------------------------------------------------------------------
def check_shape(path, ds, fname):
    """Checks the format and shape of a finished file; raises DatasetError with the reason."""
    rows, cols = ds["shape"]
    labels = fname.endswith(".labels")
    k = ds.get("k")
    seen = set()
    n = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.endswith(b"\n") or raw.endswith(b"\r\n"):
                raise DatasetError(f"{fname} line {n}: not LF-terminated")
            line = raw[:-1].decode("ascii", "replace")
            fields = line.split(" ")
            if labels:
                if len(fields) != 1 or not fields[0].isdigit():
                    raise DatasetError(f"{fname} line {n}: {line[:40]!r} is not a positive integer label")
                v = int(fields[0])
                if not 1 <= v <= k:
                    raise DatasetError(f"{fname} line {n}: label {v} is outside 1..{k}")
                seen.add(v)
            else:
                if len(fields) != cols:
                    raise DatasetError(f"{fname} line {n}: {len(fields)} values, expected {cols}"
                                       " (single spaces, no header)")
                for tok in fields:
                    try:
                        ok = math.isfinite(float(tok))
                    except ValueError:
                        ok = False
                    if not ok:
                        raise DatasetError(f"{fname} line {n}: {tok[:30]!r} is not a finite number")
    if n != rows:
        raise DatasetError(f"{fname}: {n} rows, expected {rows}")
    if labels and len(seen) != k:
        raise DatasetError(f"{fname}: {len(seen)} distinct labels, expected k={k}")


def check_file(path, ds, fspec, full_shape=False):
    """Checks a finished file: sha256 when known (shape too when full_shape), else shape.
    Returns a short description of what was checked; raises DatasetError with the reason."""
    fname = fspec["name"]
    want = fspec.get("sha256")
    if full_shape or not want:
        check_shape(path, ds, fname)
    if want:
        got = sha256_file(path)
        if got != want:
            raise DatasetError(f"{fname}: sha256 mismatch (expected {short(want)}, got {short(got)})")
        return "sha256"
    return f"shape {ds['shape'][0]}x{ds['shape'][1]}" if fname.endswith(".txt") else "labels 1..k"


def file_state(data_dir, ds, fspec):
    """('ok', what) / ('missing', None) / ('bad', reason) for one final file in data_dir."""
    path = os.path.join(data_dir, fspec["name"])
    if not os.path.isfile(path):
        return "missing", None
    try:
        return "ok", check_file(path, ds, fspec)
    except DatasetError as e:
        return "bad", str(e)
    except OSError as e:
        return "bad", f"{fspec['name']}: cannot read: {e.strerror or e}"


# ----------------------------------------------------------------------------------------
# Downloading
# ----------------------------------------------------------------------------------------
class Fetcher:
    """Downloads URLs into a cache folder (once per run), with a timeout and retries. A host
    that cannot be reached at all is remembered, so its other URLs fail at once."""

    def __init__(self, cache_dir, mirror, timeout, tries):
        self.cache_dir, self.mirror, self.timeout, self.tries = cache_dir, mirror, timeout, tries
        self.files = {}        # url -> path of the verified download
        self.dead_hosts = {}   # netloc -> reason
        self.count = 0

    def fetch(self, url, sha256):
        """Path of the downloaded file; its sha256 is checked when given."""
        url = mirror_url(url, self.mirror)
        key = (url, sha256)
        if key in self.files:
            return self.files[key], url
        host = urllib.parse.urlsplit(url).netloc
        if host in self.dead_hosts:  # same words as the first time, so reasons can be merged
            raise DatasetError(self.dead_hosts[host])
        self.count += 1
        dest = os.path.join(self.cache_dir, f"download-{self.count}")
        last = "no try made"
        tries = f" ({self.tries} tries)" if self.tries > 1 else ""
        for attempt in range(1, self.tries + 1):
            try:
                digest = self._download(url, dest)
                break
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code} {e.reason}"
                if e.code in (400, 401, 403, 404, 410, 451):
                    raise DatasetError(f"{url}: {last}") from None
            except urllib.error.URLError as e:  # no connection to the host at all
                last = describe_error(e.reason)
                if attempt == self.tries:
                    self.dead_hosts[host] = f"cannot reach {host}: {last}{tries}"
                    raise DatasetError(self.dead_hosts[host]) from None
            except (OSError, http.client.HTTPException, ValueError) as e:
                last = describe_error(e)
            remove_quietly(dest)
            if attempt < self.tries:
                time.sleep(RETRY_DELAY_S * 2 ** (attempt - 1))
        else:
            raise DatasetError(f"{url}: {last}{tries}")
        if sha256 and digest != sha256:
            remove_quietly(dest)
            raise DatasetError(f"{url}: source sha256 mismatch (expected {short(sha256)}, got {short(digest)})")
        self.files[key] = dest
        return dest, url

    def _download(self, url, dest):
        req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        h = hashlib.sha256()
        size = 0
        with urllib.request.urlopen(req, timeout=self.timeout) as r, open(dest, "wb") as out:
            expected = r.headers.get("Content-Length")
            for block in iter(lambda: r.read(CHUNK), b""):
                h.update(block)
                out.write(block)
                size += len(block)
        if expected and expected.isdigit() and int(expected) != size:
            raise http.client.IncompleteRead(b"", int(expected) - size)
        return h.hexdigest()


def describe_error(e):
    """A one-line description of a network or file error."""
    if isinstance(e, str):
        return e
    if isinstance(e, TimeoutError) or type(e).__name__ == "timeout":
        return "timed out"
    if isinstance(e, http.client.IncompleteRead):
        return "connection closed before the whole file came"
    text = getattr(e, "strerror", None) or str(e) or type(e).__name__
    if isinstance(e, OSError) and getattr(e, "errno", None) is not None and e.errno > 0:
        return f"{text} (errno {e.errno})"
    return text


def remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def unpack(path, src, work_dir, tag):
    """Path of the file to read for a source: the download itself, or the file extracted from
    it (gzip, zip or deb member). Checks member_sha256 when given."""
    archive = src.get("archive")
    if not archive:
        return path
    out = os.path.join(work_dir, f"{tag}.unpacked")
    try:
        if archive == "gzip":
            with gzip.open(path, "rb") as fin, open(out, "wb") as fout:
                for block in iter(lambda: fin.read(CHUNK), b""):
                    fout.write(block)
        elif archive == "zip":
            with zipfile.ZipFile(path) as z:
                name = pick_member(z.namelist(), src["member"])
                with z.open(name) as fin, open(out, "wb") as fout:
                    for block in iter(lambda: fin.read(CHUNK), b""):
                        fout.write(block)
        elif archive == "deb":
            data_tar = deb_data_tar(path)
            with tarfile.open(fileobj=io.BytesIO(data_tar), mode="r:*") as t:
                names = [m.name for m in t.getmembers() if m.isfile()]
                name = pick_member(names, src["member"])
                fin = t.extractfile(name)
                with open(out, "wb") as fout:
                    for block in iter(lambda: fin.read(CHUNK), b""):
                        fout.write(block)
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile) as e:
        remove_quietly(out)
        raise DatasetError(f"cannot unpack the {archive} file: {describe_error(e)}") from None
    want = src.get("member_sha256")
    if want:
        got = sha256_file(out)
        if got != want:
            remove_quietly(out)
            raise DatasetError(f"{src.get('member')}: sha256 mismatch inside the {archive} file "
                               f"(expected {short(want)}, got {short(got)})")
    return out


def pick_member(names, member):
    """The archive member called `member` (a leading './' ignored), or the only one ending in
    '/member'."""
    norm = {n[2:] if n.startswith("./") else n: n for n in names}
    if member in norm:
        return norm[member]
    hits = [n for key, n in norm.items() if key.endswith("/" + member)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise DatasetError(f"{member} is not in the archive ({len(names)} members)")
    raise DatasetError(f"{member} is ambiguous in the archive: {', '.join(hits[:3])}")


def deb_data_tar(path):
    """The bytes of the data.tar.* member of a Debian package (an ar archive)."""
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise DatasetError("not a Debian package (no ar header)")
        while True:
            header = f.read(60)
            if len(header) < 60:
                raise DatasetError("no data.tar member in the Debian package")
            name = header[:16].decode("ascii", "replace").strip().rstrip("/")
            size = int(header[48:58].decode("ascii").strip())
            if name.startswith("data.tar"):
                return f.read(size)
            f.seek(size + (size & 1), os.SEEK_CUR)


# ----------------------------------------------------------------------------------------
# Cleaning (one recipe: a source file -> a final file)
# ----------------------------------------------------------------------------------------
def parse_cols(cols):
    """None, a list of indices or "a:b" -> a function that picks those fields."""
    if cols is None:
        return lambda fields: fields
    if isinstance(cols, str):
        parts = cols.split(":")
        if len(parts) != 2:
            raise DatasetError(f"bad cols {cols!r} (use a list or 'a:b')")
        sl = slice(*(int(p) if p.strip() else None for p in parts))
        need = sl.stop or 0
        return lambda fields: fields[sl] if len(fields) >= need else None
    idx = [int(c) for c in cols]
    need = max(idx) + 1
    return lambda fields: [fields[i] for i in idx] if len(fields) >= need else None


def is_number(tok):
    try:
        float(tok)
        return True
    except ValueError:
        return False


def transform(src_path, out_path, recipe, is_labels):
    """Writes the cleaned file; raises DatasetError when a line does not fit the recipe."""
    sep = recipe.get("sep")
    skip = recipe.get("skip", 0)
    pick = parse_cols(recipe.get("cols"))
    scale = recipe.get("scale")
    names = {n: i + 1 for i, n in enumerate(recipe["names"])} if recipe.get("names") else None
    offset = recipe.get("offset", 0)
    if names and offset:
        raise DatasetError("a recipe takes names or offset, not both")

    def label(tok):
        if names is not None:
            return str(names[tok]) if tok in names else None
        if offset:
            return str(int(tok) + offset) if tok.lstrip("-").isdigit() else None
        return tok if tok.isdigit() else None

    def value(tok):
        if scale:
            if not tok.lstrip("-").isdigit():
                raise DatasetError(f"{tok[:30]!r} is not an integer (scale {scale})")
            return str(int(tok) * scale)
        return tok

    n_in = 0
    with open(src_path, "rb") as fin, open(out_path, "w", encoding="ascii", newline="\n") as fout:
        for raw in fin:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            n_in += 1
            fields = [t.strip() for t in line.split(sep)] if sep else line.split()
            kept = pick(fields)
            if kept is None:
                raise DatasetError(f"source line {n_in} has {len(fields)} fields, too few for cols "
                                   f"{recipe.get('cols')}")
            if isinstance(skip, int) and n_in <= skip:
                continue
            if skip == "auto" and n_in == 1:
                looks_like_data = (all(label(t) for t in kept) if is_labels else all(is_number(t) for t in kept))
                if not looks_like_data:
                    continue
            if is_labels:
                if len(kept) != 1:
                    raise DatasetError(f"source line {n_in}: {len(kept)} label fields, expected 1 (set cols)")
                out = label(kept[0])
                if out is None:
                    raise DatasetError(f"source line {n_in}: {kept[0][:30]!r} is not a label")
                fout.write(out + "\n")
            else:
                try:
                    fout.write(" ".join(value(t) for t in kept) + "\n")
                except UnicodeEncodeError:
                    raise DatasetError(f"source line {n_in}: non-ASCII text") from None


# ----------------------------------------------------------------------------------------
# One data set
# ----------------------------------------------------------------------------------------
def build_dataset(ds, data_dir, fetcher, work_dir, todo):
    """Makes the files in `todo` (file specs of ds) and moves them into data_dir together.
    Returns {file name: what was checked}; raises DatasetError (leaving nothing) on failure."""
    temps = {}
    checked = {}
    try:
        for fspec in todo:
            fname = fspec["name"]
            tmp = os.path.join(data_dir, f".{fname}.part-{os.getpid()}")
            temps[fname] = tmp
            errors = []
            for i, recipe in enumerate(fspec["recipes"]):
                src = ds["sources"][recipe["source"]]
                try:
                    path, url = fetcher.fetch(src["url"], src.get("sha256"))
                    try:
                        readable = unpack(path, src, work_dir, f"{ds['name']}-{recipe['source']}-{i}")
                    except DatasetError as e:
                        raise DatasetError(f"{url}: {e}") from None
                    try:
                        transform(readable, tmp, recipe, fname.endswith(".labels"))
                        checked[fname] = check_file(tmp, ds, fspec, full_shape=True)
                    except DatasetError as e:
                        raise DatasetError(f"from {url}: {e}") from None
                    except OSError as e:
                        raise DatasetError(f"cannot write {tmp}: {describe_error(e)}") from None
                    break
                except DatasetError as e:
                    if str(e) not in errors:
                        errors.append(str(e))
                    remove_quietly(tmp)
            else:
                raise DatasetError(f"{fname}: " + "; ".join(errors))
        for fname, tmp in temps.items():
            try:
                os.replace(tmp, os.path.join(data_dir, fname))
            except OSError as e:
                raise DatasetError(f"cannot move {fname} into place: {describe_error(e)}") from None
        return checked
    finally:
        for tmp in temps.values():
            remove_quietly(tmp)


def ensure_writable(data_dir):
    try:
        os.makedirs(data_dir, exist_ok=True)
    except OSError as e:
        raise DatasetError(f"cannot create {data_dir}: {e.strerror or e}") from None
    if not os.access(data_dir, os.W_OK | os.X_OK):
        raise DatasetError(f"cannot write into {data_dir} (read-only); choose another --data-dir")


def download(selected, args, mirror):
    data_dir = args.data_dir
    done, present, failed = [], [], []
    fetcher = None
    work_dir = None
    try:
        for ds in selected:
            name = ds["name"]
            states = []
            try:
                states = [(f, *file_state(data_dir, ds, f)) for f in ds["files"]]
                todo = [f for f, state, _ in states if state != "ok"]
                if not todo:
                    what = sorted({w for _, _, w in states})
                    print(f"  {'present':<9} {name:<12} already present ({', '.join(what)} checked)", flush=True)
                    present.append(name)
                    continue
                ensure_writable(data_dir)
                if fetcher is None:
                    work_dir = tempfile.mkdtemp(prefix=".datasets-download-", dir=data_dir)
                    fetcher = Fetcher(work_dir, mirror, args.timeout, args.tries)
                checked = build_dataset(ds, data_dir, fetcher, work_dir, todo)
                parts = []
                for f in todo:
                    if f.get("sha256"):
                        parts.append(f"{f['name']} sha256 ok")
                    else:
                        got = sha256_file(os.path.join(data_dir, f["name"]))
                        parts.append(f"{f['name']} {checked[f['name']]} ok, no checksum known "
                                     f"(its sha256 is {got})")
                print(f"  {'ok':<9} {name:<12} downloaded: {'; '.join(parts)}", flush=True)
                done.append(name)
            except DatasetError as e:
                reason = str(e)
                for f, state, why in states:
                    if state == "bad" and not reason.startswith("cannot"):
                        reason += f" [the {f['name']} already in {data_dir} fails: {why}]"
                print(f"  {'FAILED':<9} {name:<12} {reason}", flush=True)
                failed.append((name, reason))
            except Exception as e:  # never a traceback: report it on the data set's line
                reason = f"internal error: {type(e).__name__}: {e}"
                print(f"  {'FAILED':<9} {name:<12} {reason}", flush=True)
                failed.append((name, reason))
    finally:
        if work_dir:
            for f in os.listdir(work_dir):
                remove_quietly(os.path.join(work_dir, f))
            try:
                os.rmdir(work_dir)
            except OSError:
                pass
    print(f"summary ({data_dir}): {len(done)} downloaded, {len(present)} already present, {len(failed)} failed")
    if done:
        print(f"  downloaded: {', '.join(done)}")
    if present:
        print(f"  already present: {', '.join(present)}")
    for name, reason in failed:
        print(f"  failed: {name}: {reason}")
    return 1 if failed else 0


def verify(selected, args, named):
    data_dir = args.data_dir
    ok, missing, bad = [], [], []
    for ds in selected:
        name = ds["name"]
        states = [(f, *file_state(data_dir, ds, f)) for f in ds["files"]]
        kinds = {s for _, s, _ in states}
        if kinds == {"ok"}:
            what = sorted({w for _, _, w in states})
            print(f"  {'ok':<9} {name:<12} {', '.join(f['name'] for f in ds['files'])}: {', '.join(what)} ok")
            ok.append(name)
        elif kinds == {"missing"}:
            print(f"  {'missing':<9} {name:<12} not in {data_dir}")
            missing.append(name)
        else:
            reasons = [why for _, s, why in states if s == "bad"]
            reasons += [f"{f['name']} is missing" for f, s, _ in states if s == "missing"]
            print(f"  {'BAD':<9} {name:<12} {'; '.join(reasons)}")
            bad.append((name, "; ".join(reasons)))
    print(f"verify ({data_dir}): {len(ok)} ok, {len(bad)} bad, {len(missing)} missing")
    for name, reason in bad:
        print(f"  bad: {name}: {reason}")
    return 1 if bad or (named and missing) else 0


def list_manifest(selected, mirror):
    for ds in selected:
        rows, cols = ds["shape"]
        k = f", k={ds['k']}" if ds.get("k") else ", no labels"
        checked = "sha256" if all(f.get("sha256") for f in ds["files"]) else "shape only (no checksum known)"
        print(f"{ds['name']}: {rows} x {cols}{k}; checked by {checked}")
        if ds.get("note"):
            print(f"  {ds['note']}")
        for f in ds["files"]:
            print(f"  {f['name']}  sha256 {f.get('sha256') or 'none (shape only)'}")
            for i, r in enumerate(f["recipes"]):
                src = ds["sources"][r["source"]]
                extra = {key: v for key, v in r.items() if key != "source"}
                how = f" [{src['archive']}{':' + src['member'] if src.get('member') else ''}]" if src.get("archive") else ""
                clean = " " + json.dumps(extra) if extra else ""
                print(f"    {'from' if i == 0 else 'or'} {mirror_url(src['url'], mirror)}{how}"
                      f" (source sha256 {src.get('sha256') or 'unknown'}){clean}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring (and PROVENANCE.md) for details.")
    ap.add_argument("--data-dir", metavar="DIR", default=os.environ.get("DATA_DIR") or "data",
                    help="where NAME.txt and NAME.labels go (default: $DATA_DIR, else ./data)")
    ap.add_argument("--only", metavar="NAME,...", help="comma-separated data set names (default: all)")
    ap.add_argument("--list", action="store_true", help="print the manifest and exit")
    ap.add_argument("--json", action="store_true", help="with --list: print the manifest as JSON")
    ap.add_argument("--verify", action="store_true", help="only check the files in DIR; download nothing")
    ap.add_argument("--mirror", metavar="URL", default=os.environ.get(MIRROR_ENV) or None,
                    help=f"replace the scheme and host of every URL by this one's (default: ${MIRROR_ENV})")
    ap.add_argument("--manifest", metavar="FILE", help="read the manifest from this JSON file instead of the built-in one")
    ap.add_argument("--timeout", metavar="S", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per request (default 60)")
    ap.add_argument("--tries", metavar="N", type=int, default=DEFAULT_TRIES, help="tries per URL (default 3)")
    args = ap.parse_args(argv)
    if args.tries < 1 or args.timeout <= 0:
        ap.error("--tries must be at least 1 and --timeout positive")
    try:
        manifest = MANIFEST
        if args.manifest:
            try:
                with open(args.manifest, encoding="utf-8") as f:
                    manifest = json.load(f)
            except (OSError, ValueError) as e:
                raise DatasetError(f"cannot read the manifest {args.manifest}: {e}") from None
        validate_manifest(manifest)
        selected = select(manifest, args.only)
    except DatasetError as e:
        print(f"datasets.py: error: {e}", file=sys.stderr)
        return 2
    if args.list:
        if args.json:
            print(json.dumps(copy.deepcopy(selected), indent=1))
        else:
            list_manifest(selected, args.mirror)
        return 0
    if args.verify:
        return verify(selected, args, named=bool(args.only))
    return download(selected, args, args.mirror)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("datasets.py: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # output piped into head and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
