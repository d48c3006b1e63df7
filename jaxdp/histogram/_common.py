"""The result type and the input checks shared by the histogram methods."""

from __future__ import annotations

import contextlib
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

@contextlib.contextmanager
def _arithmetic(noise):
    """Every histogram release computes in float64 (scoped x64), whatever `noise`; yields the dtype of the
    released counts (float64 for ``noise="float64"``, else the default float dtype), cast at the end.

    In float32, counts above 2²⁴ and sums of them round, so neighbouring histograms could move a bin, a
    segment sum or a DFT coordinate by more than the sensitivity the noise is calibrated to (a review found
    4× for counts near 2²⁵, and 4× the exact Δ₁ of the first DFT coordinate for a 4,096-bin histogram of 4·10⁷
    records). Computing in float64 keeps that rounding ≈ 10⁻¹⁶ of the values; casting the noisy result is
    post-processing. Histograms are small, so the cost is negligible on CPU.
    """
    out = np.dtype(np.float64) if noise == "float64" else _validate.float_dtype()
    with jax.enable_x64(True):
        yield out


def _staged(x) -> bool:
    """True if `x` is traced by a staging transformation (jax.jit and the like): a tracer that is not, once
    `jax.vmap`'s batching tracers are unwrapped, a concrete array."""
    while isinstance(x, jax.core.Tracer) and hasattr(x, "batch_dim") and hasattr(x, "val"):
        x = x.val  # a vmap batching tracer: look at what it batches
    return isinstance(x, jax.core.Tracer)


def _prepare(key, hist, epsilon, noise="float", rounded=False, computed="in the transform"):
    """`rounded`: the release computes values that round in proportion to Σh (DFT coordinates; P-HP's
    segment errors, whose Lemma 2 bound Δerr ≤ 2 holds in exact arithmetic — found in review: at Σh ≈ 2⁵³ float64
    moved them by 4–6 and the final choice spent 1.5× its ε/4): Σh beyond `_validate.ROUNDED_TOTAL_LIMIT` is
    refused."""
    if _staged(key) or isinstance(hist, jax.core.Tracer):
        # found in review: under jax.jit, efpa/spa/php ended in JAX's internal dtype error (their float64 scope
        # inside a float32 trace); lpa ran. Refused alike, with the way to batch; `jax.vmap` over keys (the data
        # concrete) works, as the conventions promise (a review found a first version refused it too)
        raise TypeError("histogram releases check their input and compute in float64 outside jax.jit, and their "
                        "histogram must be concrete: call them outside jit (vmap over keys works), or pass a key "
                        "array [R] for R repetitions (one vmapped program).")
    _validate.key(key)
    _validate.eager_epsilon(epsilon, "a histogram release")
    noise = mechanisms.check_noise(noise)
    h = check_histogram(hist)
    if rounded:
        _validate.rounded_total(float(h.sum()), "hist's counts sum", computed)
    _check_epsilon_range(float(epsilon), h.size, noise)
    return jnp.asarray(h, np.float64), noise


def _check_epsilon_range(epsilon, n, noise):
    """Refuse an ε whose noise would overflow the release's float range (found in review: every method released
    inf at ε = 1e-40, FPA NaN at 1e-320) or whose arithmetic would. Every method's noise scale is below
    8·n·log2(n + 1)/ε (its largest sensitivity over its smallest share of ε), so that times 2¹⁰ must stay finite."""
    dtype = np.dtype(np.float64 if noise == "float64" else np.float32)  # float32 unless asked (x64: conservative)
    lo = max(8.0 * n * max(1.0, np.log2(n + 1)) * 2.0**10 / float(np.finfo(dtype).max),
             float(np.finfo(np.float64).tiny) * 2.0**60)
    hi = float(np.finfo(np.float64).max) * 2.0**-60
    if not lo <= epsilon <= hi:
        raise ValueError(f"epsilon = {epsilon:g} is outside [{lo:.3g}, {hi:.3g}], where the noise of a {n}-bin release "
                         f"stays within {dtype}'s range.")


def _check_grid(noise, epsilon, sensitivity, h, coordinates=1, *, snapped="sums"):
    """noise="grid": refuse, eagerly, a release the exact sampler cannot make — a noise-to-grid ratio out of its
    range for any sensitivity the release may use, or values beyond 2²⁹ − 1 grid steps (they would be clamped:
    private, but wrong). What the methods snap is at most, in magnitude: a bin (`snapped="bins"`, LPA) max h;
    a DFT coordinate (``"dft"``, FPA/EFPA) ‖h‖₂ (the transform is orthonormal); a segment sum or mean
    (``"sums"``) Σh. Found in review: Σh for every method refused LPA on 1,024 bins of 3,000 (the largest bin
    1,400× under the limit) and EFPA on every 100k-record 4,096-bin histogram."""
    if noise != "grid":
        return
    sens = np.asarray(sensitivity, np.float64)
    mechanisms.check_grid_ratio(epsilon=epsilon, sensitivity=sens, coordinates=coordinates)
    x = np.asarray(h, np.float64)
    largest = x.max() if snapped == "bins" else np.linalg.norm(x) if snapped == "dft" else x.sum()
    mechanisms.check_grid_values(float(largest), sensitivity=sens, coordinates=coordinates)
