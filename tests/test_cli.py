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
