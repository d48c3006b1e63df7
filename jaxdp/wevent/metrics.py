"""The window ledger check and the paper's error measures (MAE, MRE)."""

from __future__ import annotations

import numpy as np

__all__ = ['window_sums', 'mae', 'mre']


def window_sums(eps1, eps2, w: int) -> np.ndarray:
    """Σ of ε_{k,1} + ε_{k,2} over every window [i−w+1, i] (windows cut at the stream start), ``[T]``.

    Raises:
      ValueError: w is not an integer ≥ 1 (a window of 0 would sum to 0 and pass any check).
    """
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, np.integer)) or w < 1:
        raise ValueError(f"w must be an integer >= 1 (the window length), got {w!r}.")
    total = np.asarray(eps1, np.float64) + np.asarray(eps2, np.float64)
    csum = np.concatenate([np.zeros(total.shape[:-1] + (1,)), np.cumsum(total, axis=-1)], axis=-1)
    idx = np.arange(total.shape[-1])
    return csum[..., idx + 1] - csum[..., np.maximum(idx + 1 - w, 0)]


def mae(releases, counts) -> np.ndarray:
    """Mean absolute error over timestamps and columns (paper Sec. 5)."""
    releases, counts = _same_shape(releases, counts)
    return np.mean(np.abs(releases - counts), axis=(-2, -1))


def _same_shape(releases, counts):
    """`releases` ``[..., T, d]`` and `counts` ``[T, d]`` as float64 (found in review: other shapes broadcast into
    NumPy's own error, or silently)."""
    r, c = np.asarray(releases, np.float64), np.asarray(counts, np.float64)
    if c.ndim != 2 or r.shape[-2:] != c.shape:
        raise ValueError(f"releases must have shape [..., T, d] matching counts [T, d] = {c.shape}, got {r.shape}.")
    return r, c


def mre(releases, counts, *, sanity: float = 1.0) -> np.ndarray:
    """Mean relative error ``|o − c| / max(c, sanity)``.

    The paper does not say how zero counts enter its MRE; jaxdp uses the common sanity bound: a
    count below `sanity` (default 1, one user) is replaced by it in the denominator.
    """
    r, c = _same_shape(releases, counts)
    return np.mean(np.abs(r - c) / np.maximum(c, sanity), axis=(-2, -1))
