"""The result type and the input checks shared by the histogram methods."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate, mechanisms
from jaxdp._validate import histogram as check_histogram  # the eager checks live in _validate

__all__ = ['METHODS', 'HistogramResult', 'check_histogram']


METHODS = ("lpa", "fpa", "spa", "efpa", "php")


class HistogramResult(NamedTuple):
    """One histogram release (every method returns this). With a key array ``[R]`` every array gains a
    leading repetition axis ``[R]``.

    Attributes:
      counts: the released histogram ``[n]`` (float; may be negative: see `clamp`).
      k: the size the method released the histogram at, int32 — FPA/SPA: retained real DFT coordinates
        (FPA's is public, SPA's chosen privately); EFPA: retained complex coefficients (z = 2k − 1 real
        coordinates), chosen privately; P-HP and ReleaseHistogram: the number of segments; LPA: n.
      segment_starts: bool ``[n]``, True where a released segment starts (P-HP's private clustering,
        ReleaseHistogram's given one); every bin for LPA and the Fourier methods.
      epsilon_spent: ε spent by each release (publishing all R repetitions spends R·ε).
      private: True — every method is ε-DP given a secret key used once (jaxdp cannot see where a key
        came from: use `jaxdp.fresh_key()`).

    Everything here is derived from the mechanism's private choices and noise (releasable).
    """

    counts: jax.Array
    k: jax.Array
    segment_starts: jax.Array
    epsilon_spent: float
    private: bool


def _over_keys(program, key, *args, **options):
    """``program(key, *args, **options)``; a key array ``[R]`` runs ``program.over_keys``: the program vmapped
    over a leading repetition axis (one compiled program, kept in `jaxdp.programs`' cache)."""
    if key.ndim == 0:
        return program(key, *args, **options)
    if key.ndim == 1:
        return program.over_keys(key, *args, **options)
    raise ValueError(f"key must be one typed key or a 1-D key array [R] (one release per key); got shape {key.shape}.")


def _result(key, counts, k, starts, epsilon) -> HistogramResult:
    lead = tuple(key.shape)
    n = counts.shape[-1]
    return HistogramResult(
        counts, jnp.broadcast_to(jnp.asarray(k, jnp.int32), lead), jnp.broadcast_to(jnp.asarray(starts, bool), lead + (n,)),
        float(epsilon), True,
    )  # fmt: skip


# --------------------------------------------------------------------------------------- validation

def _prepare(key, hist, epsilon, noise="float"):
    _validate.key(key)
    _validate.positive_scalar("epsilon", epsilon)
    noise = mechanisms.check_noise(noise)
    h = check_histogram(hist)
    return jnp.asarray(h, np.float64 if noise == "float64" else _validate.float_dtype()), noise


def _check_grid(noise, epsilon, sensitivity):
    if noise == "grid":
        mechanisms.check_grid_ratio(epsilon=epsilon, sensitivity=sensitivity)
