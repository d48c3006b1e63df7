"""`publish` (any method by name) and post-processing (`clamp`)."""

from __future__ import annotations

import jax
import numpy as np

from jaxdp import _validate
from jaxdp.histogram._common import METHODS, HistogramResult
from jaxdp.histogram.compression import efpa, fpa, lpa, spa
from jaxdp.histogram.partition import php

__all__ = ['publish', 'clamp']


# --------------------------------------------------------------------------------------- dispatcher
def publish(
    key: jax.Array, hist, *, method: str, epsilon: float, k: int | None = None, penalty: str | None = None,
    accounting: str | None = None, noise: str = "float",
) -> HistogramResult:
    """Publish a histogram with one of `METHODS`. ε-DP for every method. ``k`` only for ``"fpa"``;
    ``penalty`` for ``"spa"``/``"efpa"`` and ``accounting`` for ``"fpa"``/``"spa"``/``"efpa"`` (None: each
    method's default). `noise`: ``"float"``, ``"float64"`` or ``"grid"`` (exact; not for ``"spa"``).
    Returns the method's `HistogramResult` (a key array ``[R]`` gives R releases)."""
    method = _validate.option("method", method, METHODS)
    kw = {}
    if penalty is not None:
        if method not in ("spa", "efpa"):
            raise ValueError(f"penalty is only used by method='spa' or 'efpa', not {method!r}.")
        kw["penalty"] = penalty
    if accounting is not None:
        if method not in ("fpa", "spa", "efpa"):
            raise ValueError(f"accounting is only used by the Fourier methods fpa, spa, efpa, not {method!r}.")
        kw["accounting"] = accounting
    if method == "fpa":
        if k is None:
            raise ValueError("method='fpa' needs k (the number of retained coefficients).")
        return fpa(key, hist, epsilon=epsilon, k=k, noise=noise, **kw)
    if k is not None:
        raise ValueError(f"k is only used by method='fpa', not {method!r}.")
    return {"lpa": lpa, "spa": spa, "efpa": efpa, "php": php}[method](key, hist, epsilon=epsilon, noise=noise, **kw)


def clamp(released, *, round_counts: bool = False) -> np.ndarray:
    """Post-processing of a released histogram (a `HistogramResult` or its ``counts``) (free under DP: it reads released values only): counts
    below 0 become 0, and with `round_counts` every count is rounded to the nearest integer (halves to the even one, as `np.rint`). Batched over
    leading axes; returns float64.

    What it does to accuracy (RESULTS, "Histograms"): on sparse histograms it lowers the mean absolute
    error (most true counts are 0, and half the noise there is negative); on range queries it adds a
    positive bias that grows with the range, so the range MSE can rise.
    """
    if isinstance(released, HistogramResult):
        released = released.counts
    out = np.maximum(np.asarray(released, np.float64), 0.0)
    return np.rint(out) if round_counts else out
