"""Tables in and out (`jaxdp.io`) through the CLI: formats users have, and inputs that must fail clearly.

Every failing case must exit with code 2, print a message (no traceback) and leave no output file behind.
Test files are generated here; nothing is bundled."""

import bz2
import csv
import gzip
import json
import lzma
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import jaxdp
from jaxdp import cli, io, keys

RNG = np.random.default_rng(0)
DATA = RNG.uniform(0, 10, (300, 3)).round(3)
HEADER = ["a", "b", "c"]
BOUNDS = ["--bounds", "0:10,0:10,0:10"]


def _csv_text(data=DATA, header=HEADER, delimiter=",", eol="\n", ids=None):
    head = ([] if ids is None else ["id"]) + header
    lines = [delimiter.join(head)]
    for i, row in enumerate(data):
        cells = ([] if ids is None else [str(ids[i])]) + [repr(float(v)) for v in row]
        lines.append(delimiter.join(cells))
    return eol.join(lines) + eol


def _run(tmp_path, *argv):
    out = tmp_path / "out.csv"
    code = cli.main(["anonymize", *argv, "--quiet"] + ([] if "-o" in argv else ["-o", str(out)]))
    return code, out


def _read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[float(v) for v in r] for r in rows[1:]])


# ------------------------------------------------------------------------------------------------ formats
def test_streaming_cli_equals_batch_anonymize_for_the_same_key(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text(_csv_text())
    code, out = _run(tmp_path, str(src), *BOUNDS, "--seed", "5", "--chunk", "37", "--epsilon", "50",
                     "--delay", "24")  # fmt: skip
    assert code == 0
    header, released = _read_csv(out)
    cfg = jaxdp.HVCConfig(8, 3, 50.0, bounds=(np.zeros(3), np.full(3, 10.0)), target_length=300)
    batch = jaxdp.anonymize(keys.key_from_seed(5), DATA, cfg)
    assert header == HEADER
    np.testing.assert_array_equal(released.astype(np.float32), batch.records)  # shortest float32 text round-trips


@pytest.mark.parametrize("suffix, opener", [(".csv.gz", gzip.open), (".csv.bz2", bz2.open), (".csv.xz", lzma.open)])
def test_compressed_csv_in_and_out(tmp_path, capsys, suffix, opener):
    src = tmp_path / f"in{suffix}"
    with opener(src, "wt") as f:
        f.write(_csv_text())
    out = tmp_path / f"out{suffix}"
    assert cli.main(["anonymize", str(src), "-o", str(out), *BOUNDS, "--quiet"]) == 0
    with opener(out, "rt") as f:
        rows = list(csv.reader(f))
    assert rows[0] == HEADER and len(rows) == 301


def test_zstd_and_a_gzip_file_named_csv(tmp_path, capsys):
    src = tmp_path / "actually_gzip.csv"
    src.write_bytes(gzip.compress(_csv_text().encode()))
    out = tmp_path / "out.csv.zst"
    assert cli.main(["anonymize", str(src), "-o", str(out), *BOUNDS, "--quiet"]) == 0  # content decides
    with pa.input_stream(str(out), compression="zstd") as f:
        assert f.read().decode().splitlines()[0] == "a,b,c"


def test_bom_crlf_ids_delimiter_and_encoding(tmp_path, capsys):
    ids = [f"p{i % 40:03d}" for i in range(300)]
    src = tmp_path / "in.csv"
    src.write_bytes(("\ufeff" + _csv_text(ids=ids, delimiter=";", eol="\r\n")).encode("utf-8"))
    out = tmp_path / "out.csv"
    assert cli.main(["anonymize", str(src), "-o", str(out), "--ids-column", "id", "--delimiter", ";", *BOUNDS,
                     "--quiet"]) == 0  # fmt: skip
    with open(out, newline="") as f:
        rows = list(csv.reader(f, delimiter=";"))
    assert rows[0] == ["id", *HEADER] and {r[0] for r in rows[1:]} <= set(ids)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("name,a,b,c\n".encode() + "".join(f"Jos\xe9{i},1,2,3\n" for i in range(20)).encode("latin-1"))
    assert cli.main(["anonymize", str(latin), "-o", str(tmp_path / "l.csv"), "--ids-column", "name", "--encoding",
                     "latin-1", *BOUNDS, "--quiet"]) == 0  # fmt: skip


def test_parquet_and_arrow_in_and_out_keep_names_types_and_ids(tmp_path, capsys):
    table = pa.table({"uid": pa.array(np.arange(300) % 50, pa.int64()), "a": DATA[:, 0], "b": DATA[:, 1].astype(np.float32),
                      "c": pa.array(np.round(DATA[:, 2]).astype(np.int32))})  # fmt: skip
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=64)
    with pa.ipc.new_file(str(tmp_path / "in.arrow"), table.schema) as w:
        w.write_table(table, max_chunksize=50)
    for src, out in (("in.parquet", "out.parquet"), ("in.arrow", "out.arrow"), ("in.parquet", "out.arrow")):
        assert cli.main(["anonymize", str(tmp_path / src), "-o", str(tmp_path / out), "--ids-column", "uid",
                         *BOUNDS, "--quiet"]) == 0  # fmt: skip
        got = pq.read_table(tmp_path / out) if out.endswith("parquet") else pa.ipc.open_file(str(tmp_path / out)).read_all()
        assert got.schema.names == ["uid", "a", "b", "c"]
        assert got.schema.field("uid").type == pa.int64() and got.schema.field("a").type == pa.float32()
        assert set(got.column("uid").to_pylist()) <= set(range(50))


def test_stdin_to_stdout(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "jaxdp", "anonymize", "-", "-o", "-", *BOUNDS, "--target-length",
                           "300", "--quiet"], input=_csv_text().encode(), capture_output=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    assert lines[0] == "a,b,c" and len(lines) == 301
    assert "private: yes" in proc.stderr.decode()  # the summary goes to stderr when the release goes to stdout


def test_negative_bounds_parse_and_output_precision(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{-3 + i % 5},3\n" for i in range(100)))
    code, out = _run(tmp_path, str(src), "--bounds", "-5:5,0:6", "--epsilon", "1e-6")
    assert code == 0, capsys.readouterr().err
    text = out.read_text()  # at this ε the release is the midpoint (0, 3), in float32
    assert "\n0,3\n" in text and "3.0000" not in text  # written as 3, not 3.000000476837158


# ------------------------------------------------------------------------------------------------ failures
CASES = [
    ("latin1", lambda p: p.write_bytes("a,b,c\n\xe91,2,3\n".encode("latin-1")), [], "--encoding"),
    ("underscore", lambda p: p.write_text("a,b,c\n1_000,2,3\n"), [], "line 2, column 'a'"),
    ("duplicate", lambda p: p.write_text("a,a,c\n1,2,3\n"), [], "more than once"),
    ("ragged", lambda p: p.write_text("a,b,c\n1,2,3\n4,5\n"), [], "line 3"),
    ("nan", lambda p: p.write_text("a,b,c\n1,nan,3\n"), [], "not finite"),
    ("empty", lambda p: p.write_text(""), [], "empty"),
    ("header only", lambda p: p.write_text("a,b,c\n"), ["--bounds", "data"], "no records"),
    ("block 0", None, ["--block", "0"], "--block"),
    ("history 1000", None, ["--history", "1000"], "--history"),
    ("target 0", None, ["--target-length", "0"], "--target-length"),
    ("split", None, ["--split", "a,b,c"], "--split"),
    ("seed", None, ["--seed", str(2**70)], "--seed"),
    ("negative data bounds", lambda p: p.write_text("a,b,c\n-1,2,3\n"), ["--bounds", "data"], "non-negative"),
    ("1e300 data bounds", lambda p: p.write_text("a,b,c\n1e300,2,3\n"), ["--bounds", "data"], "float64"),
    ("bad bound", None, ["--bounds", "0:10,0:1_0,0:10"], "not a number"),
    ("ids column", None, ["--ids-column", "zz"], "not a column"),
    ("strict", lambda p: p.write_text("a,b,c\n1,2,30\n"), ["--strict-bounds"], "column 'c'"),
]


@pytest.mark.parametrize("name, make, extra, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_a_message_and_no_output(tmp_path, capsys, name, make, extra, message):
    src = tmp_path / "in.csv"
    if make is None:
        src.write_text(_csv_text())
    else:
        make(src)
    argv = [str(src), *(BOUNDS if "--bounds" not in extra else []), *extra]
    code, out = _run(tmp_path, *argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not out.exists() and not [f for f in os.listdir(tmp_path) if "partial" in f]


def test_output_paths_are_checked_before_any_work(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text(_csv_text())
    cases = [
        (["-o", str(tmp_path / "missing" / "out.csv")], "does not exist"),
        (["-o", str(src)], "overwritten"),
        (["-o", str(tmp_path / "o.csv"), "--report", str(tmp_path / "o.csv")], "--report"),
        (["-o", str(tmp_path / "o.csv"), "--report", str(tmp_path / "nope" / "r.json")], "does not exist"),
        (["-o", str(tmp_path / "o.parquet.gz")], "compression"),
    ]
    for extra, message in cases:
        assert cli.main(["anonymize", str(src), *BOUNDS, "--quiet", *extra]) == 2
        assert message in capsys.readouterr().err
    assert src.read_text() == _csv_text()  # the input was not touched


def test_missing_input_fails_fast_without_starting_jax(tmp_path):
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "import sys, jaxdp.cli as c; code = c.main(['anonymize', 'missing.csv', "
                           "'-o', 'x.csv']); print('jax' in sys.modules); sys.exit(code)"],
                          capture_output=True, cwd=tmp_path, timeout=60)  # fmt: skip
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 2 and b"not found" in proc.stderr and proc.stdout.strip() == b"False"
    assert elapsed < 5  # JAX is never imported (the README reports the measured time)


def test_sigterm_leaves_no_partial_output(tmp_path):
    src = tmp_path / "big.csv"
    big = np.random.default_rng(1).uniform(0, 10, (400_000, 3))
    np.savetxt(src, big, delimiter=",", header="a,b,c", comments="", fmt="%.4f")
    out = tmp_path / "out.csv"
    with subprocess.Popen([sys.executable, "-m", "jaxdp", "anonymize", str(src), "-o", str(out), *BOUNDS, "--quiet",
                           "--chunk", "4096"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:  # fmt: skip
        deadline = time.time() + 120
        while time.time() < deadline and not [f for f in os.listdir(tmp_path) if "partial" in f]:
            time.sleep(0.05)  # wait until the output is being written
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode != 0
    assert not out.exists() and not [f for f in os.listdir(tmp_path) if "partial" in f]


def test_report_is_json_with_no_infinities(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text(_csv_text())
    rep = tmp_path / "r.json"
    assert cli.main(["anonymize", str(src), "-o", str(tmp_path / "o.csv"), *BOUNDS, "--report", str(rep), "--quiet",
                     "--diagnostics"]) == 0  # fmt: skip
    text = rep.read_text()
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text)["records_in"] == 300


def test_reader_detects_formats():
    assert io.detect_format("x.csv") == ("csv", None)
    assert io.detect_format("x.CSV.GZ") == ("csv", "gzip")
    assert io.detect_format("x.parquet") == ("parquet", None)
    assert io.detect_format("x.feather") == ("arrow", None)
    assert io.detect_format("-") == ("csv", None)
    with pytest.raises(io.InputError, match="compression"):
        io.detect_format("x.parquet.zst")
