"""A domain's fit in a float dtype (NumPy only: the CLI checks it before JAX starts, the codec at the call)."""

from __future__ import annotations

import numpy as np


def epsilon_unfit(epsilon: float, dtype) -> str | None:
    """Why the float dtype cannot hold the budgets and Laplace scales of a release at `epsilon`, or None (found in
    review: ε = 1e-320 released NaN; `jaxdp demo --epsilon 1e30` printed inf and nan)."""
    info = np.finfo(dtype)
    lo, hi = float(info.tiny) * 2.0**60, float(info.max) * 2.0**-60
    if lo <= epsilon <= hi:
        return None
    return f"epsilon = {epsilon:g} is outside [{lo:.3g}, {hi:.3g}], where {info.dtype} keeps the budgets and noise finite"


def unfit(lo, hi, dtype) -> str | None:
    """Why the float dtype cannot compute with the domain [lo, hi], or None: bounds near its largest value (releases
    became inf), widths whose squares, summed over a block of columns, overflow (no block was ever coded), or a
    width whose square underflows (found in review: bounds (0, 1e-40) were accepted and every release was 0.0, not
    even the midpoint). The reason names the limits, never the bounds (found in review: data-derived bounds were
    quoted, and messages end up in logs)."""
    info = np.finfo(dtype)
    top = float(info.max)
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    if np.any(np.maximum(np.abs(lo), np.abs(hi)) > top / 4) or np.sum((hi - lo) ** 2) * 64 > top:
        return (f"the domain is too wide for {np.dtype(dtype).name} arithmetic (a bound beyond {top / 4:.3g}, or the "
                f"columns' squared widths summing beyond {top / 64:.3g})")
    # squared widths must stay normal numbers: the frame layer's variances and the blocks' energies are squares.
    # Measured in float32 at ε = 1000 (two configurations): widths down to 1e-17 release what a width of 1 does,
    # scaled; 1e-18 differs by up to 0.2 of the width, 1e-19 collapses to a few values (a second review had seen
    # widths to 1e-36 "work" at ε = 50, where the noise hid it). The limit, ≈ 4.4e-16 in float32, keeps a margin.
    narrow = float(np.sqrt(float(info.tiny) * 2.0**24))
    if np.any(hi - lo < narrow):
        return (f"a column's domain is too narrow for {np.dtype(dtype).name} arithmetic (a width below {narrow:.3g}, "
                "whose square underflows)")
    return None
