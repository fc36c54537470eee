"""The readers end to end: a text file is read as the rows and columns it holds, or refused.

The reader never changes n or d without saying so: a UTF-8 byte-order mark is skipped, a lone
CR ends a line as LF and CRLF do, a row whose separators disagree (a decimal comma: "1,53 3,46")
is refused with its line number, and a skipped header line is named in the summary line on
stderr and in the report ("header_skipped"). A .npy header is parsed as the Python literal dict
it is. Refused input ends with exit status 2 and one line "pragmaclust: error: ..." (checked on
the seq program and on the ASan+UBSan build).
"""
import struct

import numpy as np
import pytest

from helpers import SANITIZER_MARKERS, load_labels, load_report

GOOD = np.arange(30, dtype=np.float32).reshape(10, 3) * 1.5  # 10 rows, 3 columns
ROWS = [" ".join("%g" % v for v in row) for row in GOOD]

# One small run of each subcommand on a 10 x 3 file.
RUNS = {
    "kmeans": ["-k", "2"],
    "dbscan": ["--eps", "2", "--min-pts", "2"],
    "dpc": ["--peaks", "2"],
    "stream": ["-k", "2"],
    "streamkm": ["-k", "2"],
}


def run_ok(binary, sub, path, work, *extra):
    """Runs SUB on path with a report; returns (stderr's one line, report)."""
    rc, out, err = binary.run(sub, path, *RUNS[sub], *extra, "--report", work / "r.json")
    assert rc == 0, err
    for marker in SANITIZER_MARKERS:
        assert marker not in err, err
    assert err.startswith(sub + " [") and err.count("\n") == 1, err
    return err, load_report(work / "r.json")


def check_refused(binary, argv, *parts):
    """Exit status 2, nothing on stdout, one line "pragmaclust: error: ..." holding every part."""
    rc, out, err = binary.run(*argv)
    context = f"{binary.name}: {' '.join(map(str, argv))}\nexit {rc}\nstderr: {err!r}"
    for marker in SANITIZER_MARKERS:
        assert marker not in err, context
    assert rc == 2 and out == "", context
    lines = err.rstrip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("pragmaclust: error:"), context
    for part in parts:
        assert part in lines[0], context


@pytest.fixture(params=["seq", "asan"])
def prog(request):
    """The seq program and the ASan+UBSan build."""
    return request.getfixturevalue(request.param)


# ---- line ends and the byte-order mark --------------------------------------------------------


LINE_ENDS = {
    "bom": b"\xef\xbb\xbf" + "\n".join(ROWS).encode() + b"\n",
    "cr": "\r".join(ROWS).encode() + b"\r",
    "cr_no_final": "\r".join(ROWS).encode(),
    "bom_cr": b"\xef\xbb\xbf" + "\r".join(ROWS).encode() + b"\r",
    "mixed_ends": ("\r".join(ROWS[:4]) + "\r\n" + "\r\n".join(ROWS[4:7]) + "\n" + "\n".join(ROWS[7:])).encode(),
    "cr_blank_lines": ("\r\r".join(ROWS) + "\r").encode(),
}


@pytest.mark.parametrize("name", sorted(LINE_ENDS))
def test_every_row_is_read(prog, work, name):
    """A BOM is not a header and a lone CR is a line end: 10 rows in, 10 labels out."""
    path = work / f"{name}.txt"
    path.write_bytes(LINE_ENDS[name])
    rc, out, err = prog.run("kmeans", path, "-k", 2, "--labels", work / "l.txt", "--report", work / "r.json")
    assert rc == 0, err
    assert len(load_labels(work / "l.txt")) == 10
    rep = load_report(work / "r.json")
    assert (rep["n"], rep["d"], rep["header_skipped"]) == (10, 3, None)
    assert "header" not in err, err


def test_streaming_reads_the_same_rows(seq, work):
    """stream and streamkm read files through the same reader: the same rules hold."""
    path = work / "cr.txt"
    path.write_bytes(b"\xef\xbb\xbf" + "\r".join(ROWS).encode())
    for sub in ("stream", "streamkm"):
        err, rep = run_ok(seq, sub, path, work)
        assert (rep["n"], rep["d"], rep["header_skipped"]) == (10, 3, None)
    (work / "dec.txt").write_text("1,5 2,5\n3,5 4,5\n")
    for sub in ("stream", "streamkm"):
        check_refused(seq, [sub, work / "dec.txt", *RUNS[sub]], "line 1")


def test_cr_line_numbers_in_errors(prog, work):
    """Errors name the line as an editor counts it, with CR, CRLF and LF line ends."""
    (work / "a.txt").write_bytes(b"1 2\r3 4\r5 x\r")
    check_refused(prog, ["kmeans", work / "a.txt", "-k", 1], "line 3")
    (work / "b.txt").write_bytes(b"1 2\r\n\r\n3 4 5\r\n")
    check_refused(prog, ["kmeans", work / "b.txt", "-k", 1], "line 3", "ragged")
    (work / "c.txt").write_bytes(b"1 2\r\r\n3 4\n5 6 7\n")
    check_refused(prog, ["kmeans", work / "c.txt", "-k", 1], "line 4")


# ---- separators -------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    pytest.param("1,2,3\n4,5,6\n7,8,9\n", id="csv"),
    pytest.param("1, 2, 3\n4 ,5 , 6\n7,8,9,\n", id="comma_and_spaces_trailing_comma"),
    pytest.param("1;2;3\n4; 5; 6\n7;8;9\n", id="semicolons"),
    pytest.param("1\t2\t3\n4 5   6\n 7\t 8 9 \n", id="tabs_and_spaces"),
    pytest.param("x;y;z\n1,2,3\n4,5,6\n7,8,9\n", id="header_other_separator"),
    pytest.param("x y z\n1;2;3\n4;5;6\n7;8;9\n", id="header_other_separator2"),
])
def test_separators_accepted(seq, work, text):
    path = work / "in.txt"
    path.write_text(text)
    rc, out, err = seq.run("kmeans", path, "-k", 1, "--centroids", work / "c.txt", "--report", work / "r.json")
    assert rc == 0, err
    rep = load_report(work / "r.json")
    assert (rep["n"], rep["d"]) == (3, 3)
    assert np.loadtxt(work / "c.txt").tolist() == [4, 5, 6]


@pytest.mark.parametrize("text, line", [
    pytest.param("1,53 3,46\n2,10 4,00\n", "line 1 mixes", id="decimal_comma_space"),
    pytest.param("1,53\t3,46\n2,10\t4,00\n", "line 1 mixes", id="decimal_comma_tab"),
    pytest.param("1,53;3,46\n2,10;4,00\n", "line 1 mixes", id="decimal_comma_semicolon"),
    pytest.param("x y\n1 2\n1,5 2,5\n", "line 3", id="decimal_comma_after_header"),
    pytest.param("1 2\n3 4\n5,6\n", "line 3", id="comma_row_in_space_file"),
    pytest.param("1,2\n3;4\n", "line 2", id="semicolon_row_in_comma_file"),
    pytest.param("1;2;3,\n", "line 1", id="trailing_other_separator"),
    pytest.param("1,,2\n3,4,5\n", "line 1 has an empty field", id="empty_field"),
    pytest.param(",1,2\n", "line 1 has an empty field", id="empty_first_field"),
])
def test_mixed_separators_refused(prog, work, text, line):
    """The file is refused, naming the line, rather than read with the wrong columns."""
    path = work / "in.txt"
    path.write_text(text)
    check_refused(prog, ["kmeans", path, "-k", 1], line, str(path))


# ---- the header line --------------------------------------------------------------------------


@pytest.mark.parametrize("sub", sorted(RUNS))
def test_header_skip_is_reported(seq, work, sub):
    """A skipped header is named in the summary line and the report; a file without one, or
    generated data, says nothing and reports null."""
    (work / "hdr.txt").write_text("# columns:\n\nx y z\n" + "\n".join(ROWS) + "\n")
    err, rep = run_ok(seq, sub, work / "hdr.txt", work)
    assert "(header line 3 skipped)" in err, err
    assert rep["header_skipped"] == 3 and rep["n"] == 10
    (work / "plain.txt").write_text("\n".join(ROWS) + "\n")
    err, rep = run_ok(seq, sub, work / "plain.txt", work)
    assert "header" not in err and rep["header_skipped"] is None, err
    err, rep = run_ok(seq, sub, "gen:blobs:n=50,d=3,centers=2", work)
    assert "header" not in err and rep["header_skipped"] is None, err


def test_header_skip_quiet(seq, work):
    """--quiet still prints nothing; the report still says it."""
    (work / "hdr.txt").write_text("a,b,c\n" + "\n".join(r.replace(" ", ",") for r in ROWS) + "\n")
    rc, out, err = seq.run("kmeans", work / "hdr.txt", "-k", 2, "--quiet", "--report", "-")
    assert rc == 0 and err == "", err
    assert '"header_skipped": 1' in out


def test_init_file_header_is_not_the_inputs(seq, work):
    """kmeans --init FILE may have a header of its own; the summary speaks of INPUT only."""
    (work / "plain.txt").write_text("\n".join(ROWS) + "\n")
    (work / "init.txt").write_text("cx cy cz\n0 1.5 3\n30 31.5 33\n")
    err, rep = run_ok(seq, "kmeans", work / "plain.txt", work, "--init", work / "init.txt")
    assert "header" not in err and rep["header_skipped"] is None, err


def test_dpc_insert_header_is_reported(seq, work):
    """dpc --insert FILE reads a second input: its skipped header is reported too."""
    (work / "plain.txt").write_text("\n".join(ROWS) + "\n")
    (work / "more.txt").write_text("x y z\n1 2 3\n4 5 6\n")
    err, rep = run_ok(seq, "dpc", work / "plain.txt", work, "--insert", work / "more.txt")
    assert "--insert: header line 1 skipped" in err and "(header line" not in err, err
    assert rep["header_skipped"] is None and rep["insert_header_skipped"] == 1
    assert rep["n"] == 12


# ---- .npy headers -----------------------------------------------------------------------------


def npy_with_dict(d, payload):
    pad = (64 - (10 + len(d) + 1) % 64) % 64
    h = d + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + payload


NPY_BAD = [
    ("falsehood", "{'descr': '<f4', 'fortran_order': Falsehood, 'shape': (10, 3), }", "Falsehood"),
    ("lowercase", "{'descr': '<f4', 'fortran_order': false, 'shape': (10, 3), }", "fortran_order"),
    # the first "'descr':" text sits inside another key's value; the real descr is big-endian
    ("descr_in_value", "{'note': \"'descr': '<f4'\", 'descr': '>f4', 'fortran_order': False, 'shape': (10, 3), }",
     "'note'"),
    ("duplicate", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }", "twice"),
    ("missing_shape", "{'descr': '<f4', 'fortran_order': False, }", "shape"),
    ("pipe_order", "{'descr': '|f4', 'fortran_order': False, 'shape': (10, 3), }", "dtype"),
    ("shape_not_tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': [10, 3], }", "shape"),
    ("negative_dim", "{'descr': '<f4', 'fortran_order': False, 'shape': (10, -3), }", "shape"),
    ("junk_after", "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), } x", "after"),
]


@pytest.mark.parametrize("name, header, part", NPY_BAD, ids=[case[0] for case in NPY_BAD])
def test_npy_header_refused(prog, work, name, header, part):
    data = GOOD.astype(">f4") if "'>f4'" in header else GOOD.astype("<f4")
    path = work / f"{name}.npy"
    path.write_bytes(npy_with_dict(header, data.tobytes()))
    check_refused(prog, ["kmeans", path, "-k", 2], part)


@pytest.mark.parametrize("header", [
    "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }",   # numpy's own
    "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3)}",     # no trailing comma
    "{\"shape\": (10,3), \"fortran_order\": False, \"descr\": \"<f4\"}",  # other order, double quotes
    "{ 'descr' : '<f4' ,'fortran_order':False,'shape':( 10 , 3 , ) }",
], ids=["numpy", "no_trailing_comma", "other_order_double_quotes", "spaces"])
def test_npy_header_accepted(seq, work, header):
    path = work / "x.npy"
    path.write_bytes(npy_with_dict(header, GOOD.astype("<f4").tobytes()))
    err, rep = run_ok(seq, "kmeans", path, work, "--centroids", work / "c.npy")
    assert (rep["n"], rep["d"], rep["header_skipped"]) == (10, 3, None)
    np.save(work / "ref.npy", GOOD)
    run_ok(seq, "kmeans", work / "ref.npy", work, "--centroids", work / "ref_c.npy")
    assert np.array_equal(np.load(work / "c.npy"), np.load(work / "ref_c.npy"))
