import numpy as np
import pytest

from jaxdp import metrics

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 10, size=(200, 3)) * np.array([1.0, 2.0, 0.5])
LO, HI = np.zeros(3), np.array([10.0, 20.0, 5.0])


def test_relative_sse_is_one_at_the_midpoint_and_zero_on_the_data():
    mid = np.broadcast_to(0.5 * (LO + HI), X.shape)
    assert metrics.relative_sse(mid, X, LO, HI) == pytest.approx(1.0)
    np.testing.assert_allclose(metrics.relative_sse(mid, X, LO, HI, per_column=True), 1.0)
    assert metrics.relative_sse(X, X, LO, HI) == 0.0
    y = X + 1.0
    assert metrics.sse(y, X) == pytest.approx(X.size)
    np.testing.assert_allclose(metrics.sse_columns(np.stack([y, X]), X), 0.5 * X.shape[0])  # mean over reps


def test_marginal_tv_reference():
    one, two = metrics.marginal_tv(X, X, LO, HI)
    assert one == 0.0 and two == 0.0
    far = np.broadcast_to(HI, X.shape)  # everything in the last cell: TV = 1 − share of the data there
    one, _ = metrics.marginal_tv(far, X, LO, HI, bins=4)
    cells = np.clip(np.floor((X - LO) / (HI - LO) * 4), 0, 3)
    np.testing.assert_allclose(one, np.mean(1.0 - np.mean(cells == 3, axis=0)))


def test_correlation_error_and_moments_reference():
    y = X + RNG.normal(size=X.shape)
    c = np.abs(np.corrcoef(y.T) - np.corrcoef(X.T))
    assert metrics.correlation_error(y, X) == pytest.approx(c[~np.eye(3, dtype=bool)].mean())
    const = np.ones_like(X)  # constant columns correlate 0
    assert metrics.correlation_error(const, X) == pytest.approx(np.abs(np.corrcoef(X.T))[~np.eye(3, dtype=bool)].mean())
    em, es = metrics.moment_errors(y, X)
    np.testing.assert_allclose(em, np.abs(y.mean(0) - X.mean(0)) / np.abs(X.mean(0)))
    np.testing.assert_allclose(es, np.abs(y.std(0) - X.std(0)) / X.std(0))


def test_regression_r2_reference():
    z = X.copy()
    z[:, 2] = 0.3 * X[:, 0] - 0.1 * X[:, 1] + 0.05 * RNG.normal(size=200)
    a = np.column_stack([np.ones(200), z[:, :2]])
    coef, *_ = np.linalg.lstsq(a, z[:, 2], rcond=None)
    want = 1 - np.sum((z[:, 2] - a @ coef) ** 2) / np.sum((z[:, 2] - z[:, 2].mean()) ** 2)
    assert metrics.regression_r2(z, z) == pytest.approx(want)
    assert metrics.regression_r2(np.broadcast_to(z.mean(0), z.shape) + 0 * z, z) <= 1e-9  # a constant release


@pytest.mark.parametrize("scale", [1e-170, 1e20])
def test_measures_do_not_depend_on_the_data_scale(scale):
    """Found in review: with features near 1e20 lstsq's cut-off dropped the intercept (R² 0.651 instead of 0.698), and
    squares of values near 1e-170 underflowed to a NaN correlation error."""
    y = X + RNG.normal(size=X.shape)
    assert metrics.regression_r2(y * scale, X * scale) == pytest.approx(metrics.regression_r2(y, X), rel=1e-9)
    assert metrics.correlation_error(y * scale, X * scale) == pytest.approx(metrics.correlation_error(y, X), rel=1e-9)


def test_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match="shape"):
        metrics.sse(X[:10], X)
    with pytest.raises(ValueError, match="hi > lo"):
        metrics.relative_sse(X, X, HI, LO)
    s = metrics.summary(X, X, LO, HI)
    assert s["relative_sse"] == 0.0 and s["tv_1way"] == 0.0 and s["correlation_error"] == 0.0


def test_measures_refuse_what_they_would_misread():
    """Found in review: a NaN in the release was counted in the first marginal cell and gave a finite correlation
    error; hi = inf gave a relative SSE of 0, a ±1e308 domain marginal TVs of 0; target = 7 of d = 3 wrapped to
    column 1 and 1.5 ended in an IndexError; bins = 10⁷ asked for 728 TiB; wrong-length bounds or releases ended
    in NumPy's broadcast errors."""
    x = np.random.default_rng(0).uniform(0, 1, (20, 3))
    y = x + 0.1
    bad = y.copy()
    bad[3, 1] = np.nan
    for f in (lambda: metrics.marginal_tv(bad, x, 0.0, 1.0), lambda: metrics.correlation_error(bad, x),
              lambda: metrics.regression_r2(bad, x)):
        with pytest.raises(ValueError, match="NaN or inf"):
            f()
    for lo, hi in ((0.0, np.inf), (-1e308, 1e308), (np.zeros(2), np.ones(2))):
        with pytest.raises(ValueError, match="hi > lo|shapes"):
            metrics.relative_sse(y, x, lo, hi)
    for target in (7, 1.5, True):
        with pytest.raises(ValueError, match="column index"):
            metrics.regression_r2(y, x, target=target)
        with pytest.raises(ValueError, match="column index"):  # found in review: `summary` raised IndexError first
            metrics.summary(y, x, 0.0, 10.0, target=target)
    with pytest.raises(ValueError, match="bins must be at most 1,000"):
        metrics.marginal_tv(y, x, 0.0, 1.0, bins=10**7)
    assert metrics.regression_r2(y, x, target=-3) == metrics.regression_r2(y, x, target=0)


def test_edges_give_defined_values_or_clear_errors():
    """Found in review: a value far outside the grid (1e300) was cast to INT_MIN and counted in the first cell;
    two constant columns correlated −1 through the rounding of their means, and a constant column's std error was
    4e14; empty inputs gave NaN with warnings (a correlation error of 0.0); R² of a constant target was −288 for an
    exact release; summary raised on d = 1; complex records lost their imaginary part; "no" was taken as True."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (50, 3))
    top = np.tile(0.95, (50, 3))
    assert metrics.marginal_tv(np.full((50, 3), 1e300), top, 0.0, 1.0) == (0.0, 0.0)  # both in the top cell
    const = np.column_stack([np.full(50, 0.1), np.full(50, 0.7), x[:, 2]])
    assert metrics.correlation_error(const, const) == 0.0
    np.testing.assert_array_equal(np.isnan(metrics.moment_errors(const + 0.01, const)[1]), [True, True, False])
    for bad in (np.zeros((0, 3)), np.zeros((50, 0))):
        with pytest.raises(ValueError, match="at least one"):
            metrics.correlation_error(bad, bad)
    with pytest.raises(ValueError, match="at least one"):
        metrics.sse(np.zeros((0, 50, 3)), x)
    with pytest.raises(ValueError, match="not constant"):
        metrics.regression_r2(const, const, target=0)
    with pytest.raises(ValueError, match="two records"):
        metrics.regression_r2(x[:1], x[:1])
    one = metrics.summary(x[:, :1], x[:, :1], 0.0, 1.0)
    assert np.isnan(one["regression_r2"]) and np.isnan(one["tv_2way"])
    mid = np.full((4, 2), 0.5)
    assert metrics.relative_sse(mid, mid, 0.0, 1.0) == 1.0 and metrics.relative_sse(mid + 0.1, mid, 0.0, 1.0) == np.inf
    with pytest.raises(TypeError, match="complex"):
        metrics.sse(x + 0j, x)
    with pytest.raises(TypeError, match="True or False"):
        metrics.marginal_tv(x, x, 0.0, 1.0, pairs="no")
    with pytest.raises(TypeError, match="True or False"):
        metrics.relative_sse(x, x, 0.0, 1.0, per_column="no")


@pytest.mark.parametrize("scale", [1e-170, 1e160])
def test_relative_sse_and_moments_hold_at_any_scale(scale):
    """Found in review: at scale 1e-170 both sums of squares of `relative_sse` underflowed to 0 and its "exact
    release" rule reported 1.0; at 1e160 they overflowed to NaN; `moment_errors`' standard deviations were NaN at
    both (as `regression_r2` and `correlation_error` were before their fix)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (50, 3))
    y = x + rng.normal(0, 0.1, x.shape)
    ref = metrics.relative_sse(y, x, 0, 1), metrics.relative_sse(y, x, 0, 1, per_column=True), metrics.moment_errors(y, x)
    got = (metrics.relative_sse(y * scale, x * scale, 0, scale),
           metrics.relative_sse(y * scale, x * scale, 0, scale, per_column=True), metrics.moment_errors(y * scale, x * scale))
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12)
    for a, b in zip(got[2], ref[2]):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_what_a_review_found_misread_or_unstable():
    """Found in review: a release column holding one value whose float mean is one ulp off gave R² of −5·10³³
    (the column scaled by 1e-17 became a copy of the intercept); `summary` warned on one record; masked arrays,
    booleans and text were read as numbers; an [R, N] index's records [R, N, d] got no hint."""
    x = np.column_stack([np.arange(10.0), np.arange(10.0) * 2 + np.sin(np.arange(10.0))])
    for c in (0.1, 0.3, 0.7):  # the feature carries nothing: an intercept-only fit, R² = 0 on the original
        y = x.copy()
        y[:, 0] = c
        assert abs(metrics.regression_r2(y, x)) < 1e-12, c
        y[3, 0] = np.nextafter(c, 1.0)  # a spread of one ulp is no information either
        assert abs(metrics.regression_r2(y, x)) < 1e-12, c
    rng = np.random.default_rng(0)
    data = rng.uniform(0, 1, (20, 3))
    one = metrics.summary(data[:1], data[:1], 0.0, 1.0)  # (warnings are errors in this suite)
    assert np.isnan(one["std_error"])  # one record has no spread: undefined, and no warning
    for bad, match in ((np.ma.masked_array(data, mask=data > 0.9), "masked"), (data > 0.5, "booleans"),
                       ((data > 0.5).astype(object), "booleans"), (data.astype(str), "real numbers")):  # fmt: skip
        with pytest.raises(TypeError, match=match):
            metrics.sse(bad, data)
        with pytest.raises(TypeError, match=match):
            metrics.sse(data, bad)
    with pytest.raises(ValueError, match=r"result.index\[r\]"):
        metrics.sse(np.stack([data, data]), np.stack([data, data]))


def test_a_result_is_refused_with_the_call_to_make_and_one_record_has_no_correlation():
    """Found in review: a `Result` passed as the release ended in NumPy's "float() argument … 'Result'", and one
    record gave a correlation error of 0.0 (one column gives NaN)."""
    import jaxdp

    x = np.random.default_rng(0).uniform(0, 1, (16, 2))
    res = jaxdp.midpoint(x, jaxdp.HVCConfig(2, 2), bounds=np.ones(2))
    for call in (lambda: metrics.summary(res, x, 0.0, 1.0), lambda: metrics.correlation_error(res, x),
                 lambda: metrics.relative_sse(x, res, 0.0, 1.0)):
        with pytest.raises(TypeError, match=r"x\[result.index\]"):
            call()
    assert np.isnan(metrics.correlation_error(x[:1], x[:1])) and np.isnan(metrics.correlation_error(x[:, :1], x[:, :1]))

    class Table(np.ndarray):  # a table type with a column named "records" and an index (as a DataFrame has)
        records, index = None, None

    t = x.view(Table)
    assert metrics.correlation_error(t, t) == 0.0  # not taken for a result (review of the check)


def test_curator_diagnostics_refuse_an_array_in_place_of_the_result():
    """Found in review: `curator_diagnostics(array, records)` ended in an AttributeError ('records')."""
    from jaxdp.diagnostics import curator_diagnostics, released_inputs

    x = np.zeros((4, 2))
    for fn in (curator_diagnostics, released_inputs):
        with pytest.raises(TypeError, match="pass the result first"):
            fn(x, x)


def test_tables_that_are_not_rectangular_numbers_are_refused_with_the_fix():
    """Found in review: a missing value NumPy cannot cast (pandas' NA, None) or ragged rows ended in NumPy's own
    float() or inhomogeneous-shape errors."""
    for bad in ([[1.0, 2.0], [3.0]], np.array([[1.0, object()], [2.0, 3.0]], dtype=object)):  # (pandas' NA: the same)
        with pytest.raises(ValueError, match="rectangular table of numbers"):
            metrics.sse(bad, np.ones((2, 2)))
        with pytest.raises(ValueError, match="rectangular table of numbers"):
            metrics.sse(np.ones((2, 2)), bad)
