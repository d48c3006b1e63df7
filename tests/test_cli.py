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
    text = capsys.readouterr().out
    assert "NOT differentially private" in text and "records in 1080, out 1080" in text
    lines = out.read_text().strip().splitlines()
    assert lines[0].split(",") == list(datasets.CENSUS_COLUMNS) and len(lines) == 1081
    report = json.loads(rep.read_text())
    assert report["records_out"] == 1080 and report["private"] is False
    assert report["epsilon_spent"] <= 3.0 + 1e-12
    assert report["sse"] < report["sse_pln_expected"]


def test_anonymize_user_csv_with_ids_and_public_bounds(tmp_path, capsys):
    src = tmp_path / "in.csv"
    rng = np.random.default_rng(0)
    rows = ["id,a,b"] + [f"{rng.integers(0, 30)},{rng.uniform(0, 10):.3f},{rng.uniform(-5, 5):.3f}" for _ in range(200)]
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.csv"
    code = cli.main(["anonymize", str(src), "-o", str(out), "--ids-column", "id", "--bounds", "0:10,-5:5",
                     "--block", "4", "--delay", "16", "--quiet"])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "public bounds" in text and "WARNING" not in text
    released = np.loadtxt(out, delimiter=",", skiprows=1)
    superseded = int(text.split("superseded ")[1].split(",")[0])
    assert released.shape[0] + superseded == 200 and released.shape[1] == 2
    assert np.all((released[:, 0] >= 0) & (released[:, 0] <= 10))


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
