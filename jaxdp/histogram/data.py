"""Histograms to test on: binning, bundled columns, seeded synthetic histograms, a CSV loader."""

from __future__ import annotations

import numpy as np

from jaxdp import _validate
from jaxdp.histogram._common import check_histogram

__all__ = ['bin_values', 'BUNDLED', 'bundled_histogram', 'synthetic_histogram', 'load_histogram']


# --------------------------------------------------------------------------------------- data
def bin_values(values, *, bins: int, lo: float, hi: float) -> np.ndarray:
    """Histogram of `values` over the public range ``[lo, hi]`` in `bins` equal bins (values outside
    are clipped into the end bins and nothing is dropped). int64 ``[bins]``.

    The range must be public (fixed without looking at the data) for the release to be DP.
    """
    bins = _validate.size("bins", bins, hi=1 << 26, why="the histogram holds one count per bin.")
    v = np.asarray(values, np.float64).reshape(-1)
    if v.size == 0:
        raise ValueError("no values to bin.")
    if not np.all(np.isfinite(v)):
        raise ValueError("values contain NaN or inf.")
    lo, hi = float(lo), float(hi)
    with np.errstate(over="ignore"):
        if not (hi > lo and np.isfinite(hi - lo)):  # found in review: an infinite width put every value in bin 0
            raise ValueError(f"need finite lo < hi with a finite width hi − lo, got [{lo}, {hi}].")
    # clipped in float before the cast (found in review: 3e18 in [0, 1] overflowed int64 and landed in bin 0)
    idx = np.clip(np.floor((v - lo) / (hi - lo) * bins), 0, bins - 1).astype(np.int64)
    return np.bincount(idx, minlength=bins).astype(np.int64)


BUNDLED = {
    # name: (data set, column, transform, public range) — ranges are round numbers fixed in advance
    "census-agi": ("census", "AGI", "identity", (0.0, 100_000.0)),
    "census-afnlwgt": ("census", "AFNLWGT", "identity", (0.0, 800_000.0)),
    "eia-totsales-log": ("eia", "TOTSALES", "log10(1+x)", (0.0, 7.0)),
    "eia-ressales": ("eia", "RESSALES", "identity", (0.0, 5_000_000.0)),
}


def bundled_histogram(name: str, *, bins: int = 1024) -> np.ndarray:
    """A histogram of one column of the bundled data over a fixed public range (see `BUNDLED`).

    ``census-agi`` (1080 records), ``census-afnlwgt``, ``eia-totsales-log`` (log₁₀(1 + TOTSALES) of 4092
    utility-months, a smooth profile), ``eia-ressales`` (heavy-tailed: sparse). int64 ``[bins]``.
    """
    from jaxdp import datasets

    name = _validate.option("name", name, tuple(BUNDLED))
    source, column, transform, (lo, hi) = BUNDLED[name]
    if source == "census":
        values = datasets.load_census()[:, datasets.CENSUS_COLUMNS.index(column)].astype(np.float64)
    else:
        values = datasets.load_eia()[column].astype(np.float64)
    if transform != "identity":
        values = np.log10(1.0 + np.maximum(values, 0.0))
    return bin_values(values, bins=bins, lo=lo, hi=hi)


def synthetic_histogram(seed: int, *, n: int = 4096, kind: str = "smooth", total: int = 100_000) -> np.ndarray:
    """Seeded synthetic histogram of `total` records over n bins (int64 ``[n]``).

    kinds: ``"smooth"`` (a mixture of a few wide bumps: energy at low frequencies), ``"sparse"``
    (≈ 3 % non-zero bins with heavy-tailed spikes, like the paper's NetTrace), ``"step"`` (a
    piecewise-constant profile with ~12 levels: few clusters).
    """
    kind = _validate.option("kind", kind, ("smooth", "sparse", "step"))
    (n,) = _validate.generated({"n": n})
    if isinstance(total, bool) or not isinstance(total, (int, np.integer)) or total < 0:
        raise TypeError(f"total must be an int >= 0 (the records counted), got {total!r}.")
    rng = np.random.default_rng(_validate.seed("seed", seed))
    x = np.arange(n) / n
    if kind == "smooth":
        w = np.zeros(n)
        for _ in range(4):
            w += rng.uniform(0.5, 2.0) * np.exp(-0.5 * ((x - rng.uniform(0.1, 0.9)) / rng.uniform(0.05, 0.2)) ** 2)
    elif kind == "sparse":
        w = np.zeros(n)
        hot = rng.choice(n, size=max(1, n // 32), replace=False)
        w[hot] = rng.pareto(1.2, hot.size) + 0.1
    else:
        edges = np.sort(rng.choice(np.arange(1, n), size=min(11, n - 1), replace=False))
        levels = rng.uniform(0.0, 1.0, edges.size + 1) ** 2
        w = np.repeat(levels, np.diff(np.concatenate([[0], edges, [n]])))
    w = w / w.sum()
    return rng.multinomial(total, w).astype(np.int64)


def load_histogram(path: str) -> np.ndarray:
    """Read a user's histogram: one count per line, or CSV rows whose last field is the count (an
    optional header line is skipped). Counts must be non-negative integers. int64 ``[n]``."""
    counts = _validate.read_number_column(path)
    if counts.size == 0:
        raise ValueError(f"{path} holds no counts.")
    return check_histogram(np.asarray(counts)).astype(np.int64)
