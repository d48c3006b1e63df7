import numpy as np
import pytest

from jaxdp import cli, datasets


def test_demo_runs_on_bundled_data_and_reports_all_methods(capsys):
    assert cli.main(["demo", "--n", "16", "--epsilon", "2.0", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    for name in ("Algorithm 1 (paper)", "Algorithm 1 (joint)", "PLN", "midpoint", "NOT private"):
        assert name in out
    assert "1080 records" in out


def test_demo_with_public_bounds_and_bad_arguments(capsys):
    widths = ",".join(["1e7"] * 13)
    assert cli.main(["demo", "--bounds", widths]) == 0
    assert "public widths" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["demo", "--bounds", "1,2"])
    with pytest.raises(SystemExit):
        cli.main(["demo", "--epsilon", "-1"])


def test_census_is_bundled_and_bounds_rule_is_explicit():
    data = datasets.load_census()
    assert data.shape == (1080, 13) and data.dtype == np.int64
    np.testing.assert_allclose(datasets.bounds_from_data(data), 1.5 * data.max(axis=0))
    with pytest.raises(ValueError):
        datasets.bounds_from_data(-np.ones((2, 2)))


def test_anonymize_bundled_census_writes_output_and_report(tmp_path, capsys):
    import json

    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    code = cli.main(["anonymize", "-o", str(out), "--report", str(rep), "--epsilon", "3", "--delay", "432", "--quiet"])
    assert code == 0
    captured = capsys.readouterr()
    assert "NOT differentially private" in captured.err and "records in 1080, out 1080" in captured.out
    lines = out.read_text().strip().splitlines()
    assert lines[0].split(",") == list(datasets.CENSUS_COLUMNS) and len(lines) == 1081
    report = json.loads(rep.read_text())
    assert report["records_out"] == 1080 and report["private"] is False
    assert report["epsilon_spent"] <= 3.0 + 1e-12
    assert "sse" not in report and "curator_diagnostics_NOT_PRIVATE" not in report


def test_anonymize_user_csv_with_ids_and_public_bounds(tmp_path, capsys):
    src = tmp_path / "in.csv"
    rng = np.random.default_rng(0)
    rows = ["id,a,b"] + [f"{rng.integers(0, 30)},{rng.uniform(0, 10):.3f},{rng.uniform(-5, 5):.3f}" for _ in range(200)]
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.csv"
    code = cli.main(["anonymize", str(src), "-o", str(out), "--ids-column", "id", "--bounds", "0:10,-5:5",
                     "--block", "4", "--delay", "16", "--quiet"])  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "public bounds" in text and "WARNING" not in captured.err + text and "private: yes" in text
    import csv

    with out.open() as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["id", "a", "b"]  # the id column is kept, in its place
    released = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    superseded = int(text.split("superseded ")[1].split(",")[0])
    assert released.shape[0] + superseded == 200 and released.shape[1] == 2
    assert np.all((released[:, 0] >= 0) & (released[:, 0] <= 10))
    assert {r[0] for r in rows[1:]} <= {str(i) for i in range(30)}


@pytest.mark.parametrize(
    "content, extra, message",
    [
        (None, [], "not found"),
        ("a,b\n1,x\n", ["--bounds", "1,1"], "not a number"),
        ("a,b\n1,2,3\n", ["--bounds", "1,1"], "3 values"),
        ("a,b\n1,nan\n", ["--bounds", "1,1"], "not finite"),
        ("a,b\n1,2\n", [], "--bounds is required"),
        ("a,b\n1,2\n", ["--bounds", "1,2,3"], "2 columns"),
        ("a,b\n1,2\n", ["--bounds", "1,1", "--delay", "12", "--block", "8"], "multiple"),
        ("a,b\n", ["--bounds", "1,1"], "no records"),
        ("a,b\n1,2\n", ["--bounds", "1,1", "--split", "1,0,0"], "split"),
        ("a,b\n1,2\n3\n", ["--bounds", "5,5"], "1 values"),
        ("a,b\n1,2\n0.5,7\n", ["--bounds", "5,5", "--strict-bounds"], "column 'b'"),
        ("a,b\n1,2\n", ["--bounds", "1:1,0:2"], "positive widths"),
        ("a,b\n1,2\n", ["--bounds", "5,5", "--epsilon", "0"], "epsilon"),
    ],
)
def test_anonymize_bad_input_exits_2_with_a_message(tmp_path, capsys, content, extra, message):
    src = tmp_path / "in.csv"
    if content is not None:
        src.write_text(content)
    code = cli.main(["anonymize", str(src), "-o", str(tmp_path / "o.csv"), "--quiet", *extra])
    assert code == 2
    assert message in capsys.readouterr().err


def test_unknown_option_is_an_argparse_error():
    with pytest.raises(SystemExit) as exc:
        cli.main(["anonymize", "--frobnicate"])
    assert exc.value.code == 2


CENSUS_WIDTHS = ",".join(str(float(w)) for w in datasets.bounds_from_data(datasets.load_census(), 2.0))


def _run(tmp_path, name, *extra):
    import json

    out, rep = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
    code = cli.main(["anonymize", "-o", str(out), "--report", str(rep), "--quiet", "--bounds", CENSUS_WIDTHS,
                     "--epsilon", "1000", "--delay", "432", *extra])  # fmt: skip  (ε large: the noise shows in every run)
    assert code == 0
    return out.read_bytes(), json.loads(rep.read_text()), rep.read_text()


def test_default_key_is_fresh_secret_and_never_printed(tmp_path, capsys):
    a, report_a, raw_a = _run(tmp_path, "a")
    b, report_b, _ = _run(tmp_path, "b")
    text = capsys.readouterr()
    assert a != b  # same arguments, no --seed: different noise
    assert report_a["private"] is True and report_a["reproducible_seed"] is False
    assert report_a["not_private_because"] == []
    assert "seed" not in text.out.replace("reproducible_seed", "") and "key_data" not in raw_a


def test_seed_reproduces_and_is_reported_not_private(tmp_path, capsys):
    a, report, _ = _run(tmp_path, "a", "--seed", "1")
    b, _, _ = _run(tmp_path, "b", "--seed", "1")
    big, _, _ = _run(tmp_path, "c", "--seed", str(2**40 + 1))
    captured = capsys.readouterr()
    assert a == b and big != a
    assert report["private"] is False and report["reproducible_seed"] is True
    assert any("--seed" in r for r in report["not_private_because"])
    assert "reproducible seed: NOT private" in captured.out and "NOT differentially private" in captured.err


@pytest.mark.parametrize("seed", ["-1", str(2**64), "1.5", "abc"])
def test_bad_seed_exits_2(tmp_path, capsys, seed):
    code = cli.main(["anonymize", "-o", str(tmp_path / "o.csv"), "--quiet", "--bounds", CENSUS_WIDTHS, "--seed", seed])
    assert code == 2 and "--seed" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_paper_preset_with_public_bounds_is_not_private(tmp_path, capsys):
    _, report, _ = _run(tmp_path, "p", "--paper")
    err = capsys.readouterr().err
    assert report["private"] is False and any("reordering" in r for r in report["not_private_because"])
    assert "NOT differentially private" in err and "reordering" in err


def test_default_report_reads_no_raw_values_and_diagnostics_are_labelled(tmp_path, capsys):
    """Nothing computed from the raw values is in the default report: two inputs that differ only in
    one value (inside and far outside the domain) give reports equal up to timing and file names."""
    import json

    data = datasets.load_census().astype(np.float64)
    header = ",".join(datasets.CENSUS_COLUMNS)
    reports = []
    for i, value in enumerate((0.0, 1e12)):
        x = data.copy()
        x[5, 2] = value
        src = tmp_path / f"in{i}.csv"
        np.savetxt(src, x, delimiter=",", header=header, comments="", fmt="%.17g")
        rep = tmp_path / f"r{i}.json"
        assert cli.main(["anonymize", str(src), "-o", str(tmp_path / f"o{i}.csv"), "--report", str(rep), "--quiet",
                         "--bounds", CENSUS_WIDTHS, "--seed", "3", "--epsilon", "1000"]) == 0  # fmt: skip
        r = json.loads(rep.read_text())
        for k in ("seconds", "records_per_second", "input", "output"):
            r.pop(k)
        reports.append(r)
    assert reports[0] == reports[1]
    out = capsys.readouterr().out
    assert "clipped" not in out and "SSE" not in out
    rep = tmp_path / "d.json"
    assert cli.main(["anonymize", str(tmp_path / "in1.csv"), "-o", str(tmp_path / "d.csv"), "--report", str(rep),
                     "--quiet", "--bounds", CENSUS_WIDTHS, "--diagnostics"]) == 0  # fmt: skip
    diag = json.loads(rep.read_text())["curator_diagnostics_NOT_PRIVATE"]
    assert diag["values_clipped"] == 1 and "NOT differentially private" in diag["note"]
    assert "DO NOT PUBLISH" in capsys.readouterr().out


def test_budget_exhausted_is_warned_and_reported(tmp_path, capsys):
    _, report, _ = _run(tmp_path, "t", "--target-length", "500")
    err = capsys.readouterr().err
    assert report["dropped"] == 580 and report["budget_exhausted"] is True and report["records_out"] == 500
    assert "budget is spent" in err and "580" in err
