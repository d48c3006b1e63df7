"""Input checks shared by the histogram methods."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate, mechanisms

__all__ = ['METHODS', 'check_histogram']


METHODS = ("lpa", "fpa", "spa", "efpa", "php")


# --------------------------------------------------------------------------------------- validation
def check_histogram(hist, *, integer: bool = True) -> np.ndarray:
    """Eager validation of a histogram of counts: 1-D, non-empty, finite, ≥ 0, integer-valued.

    Returns a float64 NumPy copy. Raises `ValueError` with the offending bin.
    """
    if isinstance(hist, jax.core.Tracer):
        raise TypeError("hist must be a concrete array (validate before jit/vmap; vmap over keys instead).")
    h = np.asarray(hist)
    if h.dtype == object or not (np.issubdtype(h.dtype, np.number) or h.dtype == bool):
        raise TypeError(f"hist must be numeric counts, got dtype {h.dtype}.")
    h = h.astype(np.float64)
    if h.ndim != 1:
        raise ValueError(f"hist must be a 1-D array of bin counts, got shape {h.shape}.")
    if h.size == 0:
        raise ValueError("hist is empty: a histogram needs at least one bin.")
    bad = ~np.isfinite(h)
    if bad.any():
        raise ValueError(f"hist has a NaN/inf count at bin {int(np.argmax(bad))}.")
    if (h < 0).any():
        i = int(np.argmax(h < 0))
        raise ValueError(f"hist has a negative count {h[i]} at bin {i}; counts must be >= 0.")
    if integer and (h != np.round(h)).any():
        i = int(np.argmax(h != np.round(h)))
        raise ValueError(f"hist has a non-integer count {h[i]} at bin {i}; pass integer counts (or integer=False).")
    return h


def _prepare(key, hist, epsilon, noise="float"):
    _validate.key(key)
    _validate.positive_scalar("epsilon", epsilon)
    noise = mechanisms.check_noise(noise)
    h = check_histogram(hist)
    return jnp.asarray(h, np.float64 if noise == "float64" else _validate.float_dtype()), noise


def _check_grid(noise, epsilon, sensitivity):
    if noise == "grid":
        mechanisms.check_grid_ratio(epsilon=epsilon, sensitivity=sensitivity)
