"""The one ``noise=`` choice of every system: float, float64, or exact ("grid")."""

from __future__ import annotations

import jax
import numpy as np

from jaxdp.mechanisms import exact

__all__ = ['NOISES', 'check_noise', 'precision', 'check_grid_ratio', 'grid_value_limit', 'check_grid_values', 'kernel_noise']


# ------------------------------------------------------------------------------------------------
# One noise choice for every system
# ------------------------------------------------------------------------------------------------
NOISES = ("float", "float64", "grid")


_NOISE_HELP = (
    '"float" (textbook float sampler in the default dtype: fast; float caveats in the README), '
    '"float64" (the same in float64), or "grid" (exact: discrete Laplace on a power-of-two grid and '
    "an exact exponential mechanism; pure ε-DP under finite arithmetic)"
)


def check_noise(noise) -> str:
    """Validate a ``noise=`` choice (``"float32"`` is accepted as an alias of ``"float"``)."""
    if noise == "float32":
        return "float"
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}: {_NOISE_HELP}; got {noise!r}.")
    return noise


def precision(noise: str):
    """Context for a system's public call: ``noise="float64"`` runs it with 64-bit floats (scoped x64)."""
    import contextlib

    return jax.enable_x64(True) if noise == "float64" else contextlib.nullcontext()


def kernel_noise(noise: str) -> str:
    """What a traceable core needs to know: exact ("grid") or float (the dtype carries float32/64)."""
    return "grid" if noise == "grid" else "float"


def _ratio(epsilon, sensitivity, coordinates):
    eps = np.asarray(epsilon, np.float64)
    sens = np.asarray(sensitivity, np.float64)
    m = np.maximum(np.asarray(coordinates, np.float64), 1.0)  # broadcasts with the sensitivities
    gamma = _gamma(sens, m)
    return eps, (sens + m * gamma) / (eps * gamma)


def grid_ratio_ok(*, epsilon, sensitivity, coordinates=1) -> np.ndarray:
    """Elementwise: whether `check_grid_ratio` accepts these budgets and sensitivities (a public predicate)."""
    _, ratio = _ratio(epsilon, sensitivity, coordinates)
    return (ratio * _KERNEL_SLACK < exact.MAX_SCALE) & (ratio >= 1.0)


def check_grid_ratio(*, epsilon, sensitivity, coordinates=1) -> None:
    """Eagerly refuse a ``noise="grid"`` Laplace release whose noise-to-grid ratio cannot be sampled exactly
    (`coordinates`: as in `laplace_mechanism`, the most coordinates one neighbour can change)."""
    eps, ratio = _ratio(epsilon, sensitivity, coordinates)
    # the kernel computes this ratio in float32 with `laplace_scale`'s 16-ulp margin: refuse with room for both
    # (found in review: a ratio just under 2**29 here reached 2**29 in the kernel and released NaN)
    if np.any(ratio * _KERNEL_SLACK >= exact.MAX_SCALE):
        raise ValueError(
            f'noise="grid" cannot sample this release exactly: its noise-to-grid ratio b/γ is '
            f"{float(np.max(ratio)):.3g} (ε = {float(np.min(eps)):g}), at or above 2**29. Use a larger ε, "
            'or noise="float".'
        )
    if np.any(ratio < 1.0):
        raise ValueError(
            f'noise="grid" cannot sample this release exactly: its noise-to-grid ratio b/γ is '
            f"{float(np.min(ratio)):.3g} (ε = {float(np.max(eps)):g}), below 1. Use a smaller ε, "
            'or noise="float".'
        )


_KERNEL_SLACK = 1.0 + 64 * float(np.finfo(np.float32).eps)  # > the kernel's margin and float32 roundings


def _gamma(sens, m):
    """The grid spacing `laplace_mechanism` uses: the largest power of two ≤ Δ/(256·m) (`grid_spacing`)."""
    return np.exp2(np.floor(np.log2(np.asarray(sens, np.float64) / m / 256.0)))


def grid_value_limit(*, sensitivity, coordinates=1) -> float:
    """The largest |value| ``noise="grid"`` represents, (2²⁹ − 1)·γ on the finest grid the given sensitivities
    and `coordinates` use: the exact sampler holds round(x/γ) in int32 and clamps it there (private, but wrong),
    so callers refuse larger inputs eagerly."""
    m = np.maximum(np.asarray(coordinates, np.float64), 1.0)
    return float((2**29 - 1) * np.min(_gamma(sensitivity, m)))


def check_grid_values(magnitude: float, *, sensitivity, coordinates=1, what: str = "values") -> None:
    """Eagerly refuse a ``noise="grid"`` release of values up to `magnitude` (a bound the caller computes: a
    count, a sum, ‖D‖₁/√k) beyond `grid_value_limit`, where the sampler would clamp them (private, but wrong).
    The check reads the data; the message names the public limit only (messages end up in logs)."""
    limit = grid_value_limit(sensitivity=sensitivity, coordinates=coordinates)
    if magnitude > limit:
        raise ValueError(f'noise="grid" holds {what} up to (2**29 - 1)·γ = {limit:,.6g} here (its finest grid); these '
                         'reach beyond it: use noise="float64".')
