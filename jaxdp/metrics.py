"""Utility measures for record releases (host NumPy, float64): what a release kept of the data.

A total SSE is dominated by the widest column and says nothing about distributions, so a release is
judged on several measures, each comparing a release ``y [N, d]`` (or ``[R, N, d]`` for R repetitions,
then every measure is averaged over them) with the original records ``x [N, d]`` in the same row order
(``x[result.index]`` for a `jaxdp.Result` whose index is ``[N]``; with the paper's reordering and R keys the
index is ``[R, N]`` and each repetition has its own row order: measure ``result.records[r]`` against
``x[result.index[r]]``) and the public domain ``[lo, hi]``:

* `sse` — Σ (y − x)²: record-level accuracy, in the units of the data.
* `sse_columns` / `relative_sse` — the same per column, and divided by the SSE of releasing the domain
  midpoint (the zero-budget release): < 1 means the release says more about the records than no release
  at all; computed per column so that a narrow column's loss is not hidden by a wide column's gain.
* `marginal_tv` — mean total-variation distance of all 1-way and 2-way marginals on a common grid
  (`bins` equal cells per column over the domain): does the release keep each column's distribution
  and the joint distribution of every pair? 0 = same histograms, 1 = disjoint.
* `correlation_error` — mean absolute difference of the off-diagonal Pearson correlations (a constant
  column has correlation 0 with everything): are the relationships between columns kept?
* `moment_errors` — relative error of each column's mean and standard deviation.
* `regression_r2` — a downstream task: least-squares regression of one column on the others fitted on
  the release, scored by R² on the original records (1 = perfect prediction, ≤ 0 = no better than the mean;
  `regression_r2(x, x)`, the fit on the data itself, is the reference a release can reach at best).

**Curator-only, not private:** every measure here reads the raw records; they are for benchmarks and curators,
never for publication with a release.
"""

from __future__ import annotations

import warnings

import numpy as np

from jaxdp import _validate

__all__ = [
    "sse",
    "sse_columns",
    "relative_sse",
    "marginal_tv",
    "correlation_error",
    "moment_errors",
    "regression_r2",
    "summary",
]


def _pair(y, x):
    def table(name, v, dtype=None):  # found in review: pandas' NA, None and ragged rows ended in NumPy's float() or
        try:  # inhomogeneous-shape errors
            return np.asarray(v, dtype)
        except (TypeError, ValueError):
            raise ValueError(f"the {name} must be a rectangular table of numbers (records x columns) without missing "
                             "values: fill or drop them first (for pandas, df.to_numpy(dtype=float)).") from None

    for name, v in (("release", y), ("original records", x)):
        if type(v).__module__.startswith("jaxdp.") and hasattr(v, "records"):  # found in review: NumPy's "float()
            # argument … 'Result'" (a jaxdp result type, not any table with a column named "records")
            raise TypeError(f"got a jaxdp result as the {name}: pass its released records and the original records "
                            "in the same order, e.g. summary(result.records, x[result.index], lo, hi).")
        # found in review: the imaginary part was dropped with a warning, text was parsed ("1" read as 1.0),
        # booleans read as 0/1 and a masked array's masked values were counted
        if np.ma.isMaskedArray(v):
            raise TypeError(f"the {name} are a masked array: its masked values would be counted; pass the "
                            "records without them (or fill them) as a plain array.")
        arr = table(name, v)
        if arr.dtype == bool or (arr.dtype == object and any(isinstance(e, (bool, np.bool_)) for e in arr.reshape(-1))):
            raise TypeError(f"the {name} are booleans: pass numbers (e.g. .astype(float) if 0/1 is meant).")
        _validate.real_values(v, f"the {name}")
    y, x = table("release", y, np.float64), table("original records", x, np.float64)
    if x.ndim != 2:
        hint = (" (for a result with an [R, N] index, measure each repetition: result.records[r] against "
                "x[result.index[r]])") if x.ndim == 3 else ""
        raise ValueError(f"original records must have shape [N, d], got {x.shape}{hint}.")
    if y.shape[-2:] != x.shape or y.ndim not in (2, 3):
        raise ValueError(f"release must have shape [N, d] or [R, N, d] matching the original {x.shape}, got {y.shape}.")
    if 0 in y.shape:  # found in review: empty inputs gave NaN with warnings, or a correlation error of 0.0
        raise ValueError(f"the measures need at least one record, column and repetition, got shape {y.shape}.")
    # found in review: a NaN in the release was counted in the first marginal cell and gave a finite correlation
    # error, a NaN in the original a LinAlgError
    for name, v in (("release", y), ("original records", x)):
        if not np.all(np.isfinite(v)):
            raise ValueError(f"the {name} hold NaN or inf values: the utility measures need finite records.")
    return (y[None] if y.ndim == 2 else y), x


def _flag(name, value):
    if not isinstance(value, (bool, np.bool_)):  # found in review: "no" was taken as True
        raise TypeError(f"{name} must be True or False, got {value!r}.")


def _domain(lo, hi, d):
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    if lo.shape not in ((), (d,)) or hi.shape not in ((), (d,)):
        raise ValueError(f"lo and hi must be scalars or [d] = [{d}] arrays, got shapes {lo.shape} and {hi.shape}.")
    lo, hi = np.broadcast_to(lo, (d,)), np.broadcast_to(hi, (d,))
    with np.errstate(over="ignore", invalid="ignore"):
        ok = np.all(np.isfinite(hi - lo)) and np.all(hi > lo)
    if not ok:  # found in review: hi = inf gave a relative SSE of 0, a width of 2e308 marginal TVs of 0
        raise ValueError("the domain needs finite bounds with hi > lo, and a finite width hi − lo, in every column.")
    return lo, hi


def sse(y, x) -> float:
    """Σ (y − x)² (mean over repetitions)."""
    y, x = _pair(y, x)
    return float(np.mean(np.sum((y - x) ** 2, axis=(1, 2))))


def sse_columns(y, x) -> np.ndarray:
    """Per-column Σ_i (y_ij − x_ij)², ``[d]`` (mean over repetitions)."""
    y, x = _pair(y, x)
    return np.mean(np.sum((y - x) ** 2, axis=1), axis=0)


def relative_sse(y, x, lo, hi, *, per_column: bool = False):
    """SSE divided by the SSE of releasing the domain midpoint ``(lo + hi)/2`` for every record: a float,
    or ``[d]`` with `per_column` (where every original value is the midpoint: 1 if the release is exact, else inf)."""
    _flag("per_column", per_column)
    y, x = _pair(y, x)
    lo, hi = _domain(lo, hi, x.shape[1])
    # in units of each column's width (the ratios do not change), the total weighted by the widths over the widest:
    # found in review, at scale 1e-170 both sums of squares underflowed to 0 and the "exact release" rule gave 1.0,
    # at 1e160 they overflowed to NaN
    width = hi - lo
    mid = np.sum(((x - 0.5 * (lo + hi)) / width) ** 2, axis=0)
    cols = np.mean(np.sum(((y - x) / width) ** 2, axis=1), axis=0)
    if per_column:
        return _over_midpoint(cols, mid)
    v2 = (width / np.max(width)) ** 2
    return float(_over_midpoint(np.sum(v2 * cols), np.sum(v2 * mid)))


def _over_midpoint(err, mid):
    """err / mid, and where every original value is the midpoint (mid = 0): 1 for an exact release, inf otherwise
    (`CuratorDiagnostics.relative_to_midpoint`'s convention; found in review: inf or NaN with a warning)."""
    err, mid = np.asarray(err, np.float64), np.asarray(mid, np.float64)
    return np.where(mid > 0, err / np.where(mid > 0, mid, 1.0), np.where(err > 0, np.inf, 1.0))


def _cells(v, lo, hi, bins):
    with np.errstate(over="ignore", invalid="ignore"):  # clipped before the cast (found in review: 1e300 cast to
        return np.clip(np.floor((v - lo) / (hi - lo) * bins), 0, bins - 1).astype(np.int64)  # INT_MIN: cell 0)


def marginal_tv(y, x, lo, hi, *, bins: int = 10, pairs: bool = True) -> tuple[float, float]:
    """``(mean TV of the d 1-way marginals, mean TV of the d(d−1)/2 2-way marginals)`` on a grid of `bins`
    equal cells per column over ``[lo, hi]`` (values outside are counted in the edge cells). The 2-way
    mean is NaN when d = 1 or `pairs` is False."""
    _flag("pairs", pairs)
    y, x = _pair(y, x)
    d = x.shape[1]
    lo, hi = _domain(lo, hi, d)
    from jaxdp import _validate

    bins = _validate.size("bins", bins, hi=1000, why="the 2-way marginals hold bins² cells per pair of columns.")
    n = x.shape[0]
    cx = _cells(x, lo, hi, bins)
    one, two = [], []
    for y_r in y:
        cy = _cells(y_r, lo, hi, bins)
        one.append(np.mean([0.5 * np.abs(np.bincount(cy[:, j], minlength=bins) - np.bincount(cx[:, j], minlength=bins)).sum() / n
                            for j in range(d)]))  # fmt: skip
        if pairs and d > 1:
            tv = []
            for j in range(d):
                for k in range(j + 1, d):
                    hy = np.bincount(cy[:, j] * bins + cy[:, k], minlength=bins * bins)
                    hx = np.bincount(cx[:, j] * bins + cx[:, k], minlength=bins * bins)
                    tv.append(0.5 * np.abs(hy - hx).sum() / n)
            two.append(np.mean(tv))
    return float(np.mean(one)), float(np.mean(two)) if two else float("nan")


def _corr(z):
    scale = np.max(np.abs(z), axis=0)  # found in review: squares of values near 1e-170 underflowed to a NaN correlation
    z = z / np.where(scale > 0, scale, 1.0)
    zc = z - z.mean(axis=0)
    sd = np.sqrt(np.sum(zc**2, axis=0))
    ok = np.ptp(z, axis=0) > 0  # a constant column (found in review: rounding of its mean made two correlate −1)
    c = (zc.T @ zc) / np.where(np.outer(ok, ok), np.outer(sd, sd), 1.0)
    return np.where(np.outer(ok, ok), c, 0.0)


def correlation_error(y, x) -> float:
    """Mean |corr(y) − corr(x)| over the off-diagonal pairs (a constant column correlates 0 with all); NaN where
    no correlation is defined: one column, or one record (found in review: one record gave 0.0)."""
    y, x = _pair(y, x)
    d = x.shape[1]
    if d < 2 or x.shape[0] < 2:
        return float("nan")
    off = ~np.eye(d, dtype=bool)
    cx = _corr(x)
    return float(np.mean([np.mean(np.abs(_corr(y_r) - cx)[off]) for y_r in y]))


def moment_errors(y, x) -> tuple[np.ndarray, np.ndarray]:
    """Relative errors ``|m(y) − m(x)| / |m(x)|`` of each column's mean and standard deviation, ``([d], [d])``
    (mean over repetitions; NaN where the original moment is 0)."""
    y, x = _pair(y, x)
    # each column in units of its largest |value| (the relative errors do not change; found in review: the standard
    # deviations underflowed at scale 1e-170 and overflowed at 1e160, giving NaN)
    scale = np.max(np.abs(x), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    x, y = x / scale, y / scale
    mx, sx = x.mean(axis=0), x.std(axis=0)
    # a moment that is 0 up to the rounding of its computation counts as 0 (found in review: a constant column's
    # std of 1e-17 gave relative errors of 4e14)
    zero_m = np.abs(mx) <= 16 * np.finfo(np.float64).eps * np.mean(np.abs(x), axis=0)
    zero_s = np.ptp(x, axis=0) == 0
    em = np.mean(np.abs(y.mean(axis=1) - mx), axis=0) / np.where(zero_m, np.nan, np.abs(mx))
    es = np.mean(np.abs(y.std(axis=1) - sx), axis=0) / np.where(zero_s, np.nan, sx)
    return em, es


def regression_r2(y, x, *, target: int = -1) -> float:
    """R² on the original records of the least-squares fit (with intercept) of column `target` on the
    other columns, fitted on the release (mean over repetitions).

    The features are centred and scaled by the release's own moments; a feature constant in the release gets
    weight 0. Where the release's features are collinear (e.g. a frame-mean release, whose rows take a few
    distinct values), least squares has many solutions with the same fit on the release; this is NumPy's
    minimum-norm one in those scaled coordinates, and its R² on the original records depends on that choice
    (another solution can score very differently): read such R² values as "the release does not determine
    the regression" rather than as a measure of its quality."""
    y, x = _pair(y, x)
    d = x.shape[1]
    if d < 2:
        raise ValueError("regression_r2 needs at least two columns.")
    _check_target(target, d)
    t = target % d
    if x.shape[0] < 2 or np.ptp(x[:, t]) == 0:  # found in review: −inf, or −288 for a release equal to the data
        raise ValueError("regression_r2 needs at least two records and a target column that is not constant (R² "
                         "divides by its variance).")
    feats = [j for j in range(d) if j != t]

    def design(z, mu, sc):  # features centred and scaled by the release's own moments (the same model where the
        # features vary; a feature constant in the release gets weight 0 rather than a share of the intercept). Found in
        # review: with raw features near 1e20, lstsq's cut-off dropped the intercept and R² changed with scale
        return np.column_stack([np.ones(z.shape[0]), (z[:, feats] - mu) / sc])

    xt = x[:, t]
    unit = np.max(np.abs(xt - xt.mean()))  # residuals measured in this unit: their squares neither under- nor overflow
    tot = np.sum(((xt - xt.mean()) / unit) ** 2)
    out = []
    for y_r in y:
        f = y_r[:, feats]
        # found in review: a constant column's mean off by one ulp gave a scale of 1e-17, the column became a copy of
        # the intercept, and R² on the original records was −5·10³³; a spread of a few ulps did the same
        const = np.ptp(f, axis=0) <= 16 * np.finfo(np.float64).eps * np.max(np.abs(f), axis=0)
        mu = np.where(const, f[0], f.mean(axis=0))
        sc = np.where(const, 1.0, np.max(np.abs(f - mu), axis=0))
        coef, *_ = np.linalg.lstsq(design(y_r, mu, sc), y_r[:, t], rcond=None)
        out.append(1.0 - np.sum(((xt - design(x, mu, sc) @ coef) / unit) ** 2) / tot)
    return float(np.mean(out))


def summary(y, x, lo, hi, *, bins: int = 10, target: int = -1) -> dict:
    """All the measures above in one dict (for benchmark tables)."""
    one, two = marginal_tv(y, x, lo, hi, bins=bins)
    em, es = moment_errors(y, x)
    return {
        "sse": sse(y, x),
        "relative_sse": relative_sse(y, x, lo, hi),
        "relative_sse_columns": relative_sse(y, x, lo, hi, per_column=True),
        "tv_1way": one,
        "tv_2way": two,
        "correlation_error": correlation_error(y, x),
        "mean_error": _nanmean(em),
        "std_error": _nanmean(es),
        # NaN where R² is not defined (d = 1, a constant target, one record; found in review: d = 1 raised)
        "regression_r2": _r2_or_nan(y, x, target),
    }


def _nanmean(v) -> float:
    """The mean of the defined values, NaN (without NumPy's warning) when none is (found in review)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(v))


def _check_target(target, d: int) -> None:
    if isinstance(target, (bool, np.bool_)) or not isinstance(target, (int, np.integer)) or not -d <= target < d:
        # found in review: target = 1.5 ended in an IndexError and target = 7 (of d = 3) wrapped to column 1
        raise ValueError(f"target must be a column index in [-{d}, {d - 1}], got {target!r}.")


def _r2_or_nan(y, x, target):
    x = np.asarray(x, np.float64)
    _check_target(target, x.shape[1])  # (found in review: `summary(target=1.5)` indexed with it first: IndexError)
    if x.shape[1] < 2 or x.shape[0] < 2 or np.ptp(x[:, target % x.shape[1]]) == 0:
        return float("nan")
    return regression_r2(y, x, target=target)
