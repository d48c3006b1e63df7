"""Differentially private histograms by lossy compression (Ács, Castelluccia & Chen, ICDM 2012).

Methods (``publish(key, hist, method=…, epsilon=…)`` or the functions below):

* ``lpa``  — Laplace per bin, ``Lap(1/ε)`` (the paper's Theorem 1 with Δ₁ = 1).
* ``fpa``  — Rastogi & Nath's Fourier perturbation with a fixed number ``k`` of retained coefficients,
  ``Lap(√k/ε)`` on each (the paper's Theorem 3), inverse transform of the zero-padded vector.
* ``spa``  — Rastogi & Nath's sampling perturbation (the paper's Algorithm 1): ``k`` drawn by the
  exponential mechanism with ``U(H, k)`` (Eq. 1), noise from the density ∝ ``exp(−ε‖F̂ − F‖₂)`` drawn
  as a Gaussian scale mixture (``g ~ Gamma((k+1)/2, rate ε²/2)``, then ``N(0, g)``).
* ``efpa`` — the paper's Algorithm 2: real DFT, ``k`` drawn with ``u(H, k)`` (Eq. 3) at ε/2,
  ``Lap(2√z/ε)`` on the z retained real coordinates, inverse real DFT.
* ``php``  — P-HPartition (Algorithm 4): private hierarchical bisection with the exponential
  mechanism, then ReleaseHistogram (Algorithm 3) of the chosen clustering at ε/2.

**Neighbouring histograms** differ by 1 in one bin (one record added or removed): L1 and L2
sensitivity 1. Bin edges (the domain and the number of bins) are public.

Where this implementation is more careful than the paper (each has a test):

* All Fourier methods use the *orthonormal real* DFT (`jaxdp.transforms.rdft`): the coordinates
  ``[F_0, √2 Re F_1, √2 Im F_1, …]`` are real, and every retained real coordinate is perturbed. The
  paper's Algorithm 2 says "the real-valued noise is only added to the magnitude of coefficients";
  leaving the phase (imaginary part) unperturbed would release it exactly, which is not DP.
* EFPA's z counts the real degrees of freedom of ``F_0 … F_{k−1}``: ``z = 2k − 1`` (``n`` for the
  last k of an even n). The paper writes ``z = 2k + 1``; ``√z`` is the L1 sensitivity of z
  orthonormal coordinates, so the smaller z is still exact, not an approximation.
* SPA splits ε evenly between the choice of k and the noise (the paper's Algorithm 1 uses ε in both
  steps without saying how they compose) and keeps U's perturbation term ``k√n/ε`` as printed — it
  is the over-estimate the paper criticises.
* P-HP uses one depth limit ``d = ⌈log₂ n⌉`` both for stopping and for dividing the bisection budget
  (the text says ``⌊log₂ n⌋`` in one place; a mismatch would overspend). The FIFO queue of the
  algorithm is executed level by level: every partition's choice depends only on its own bins and
  its own key, so processing one tree level at once gives exactly the algorithm's output
  distribution, and the sequence of saved configurations (line 19) is rebuilt in queue order.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxdp import _checks, mechanisms, transforms

__all__ = [
    "METHODS", "ACCOUNTINGS", "PENALTIES", "EFPA_PENALTIES", "dft_sensitivity", "clamp", "publish", "lpa", "fpa", "spa", "efpa", "php", "release_histogram", "hpartition",
    "efpa_scores", "spa_scores", "php_depth", "configuration_error", "kl_divergence", "range_query_mse",
    "l2_error", "check_histogram", "load_histogram", "synthetic_histogram", "bin_values", "BUNDLED",
    "bundled_histogram", "PHPInfo",
]  # fmt: skip

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
    _checks.key(key)
    _checks.positive_scalar("epsilon", epsilon)
    noise = mechanisms.check_noise(noise)
    h = check_histogram(hist)
    return jnp.asarray(h, np.float64 if noise == "float64" else _checks.float_dtype()), noise




# --------------------------------------------------------------------------------------- LPA / FPA
def lpa(key: jax.Array, hist, *, epsilon: float, noise: str = "float") -> Float[Array, " n"]:
    """Laplace per bin: ``H + Lap(1/ε)^n``.

    Privacy: ε-DP; one record changes one bin by 1 (Δ₁ = 1).

    Args:
      key: typed PRNG key, used once.
      hist: counts, shape ``[n]`` (non-negative integers).
      epsilon: ε > 0.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact; `jaxdp.mechanisms.NOISES`).

    Returns:
      Noisy histogram of shape ``[n]`` (default float dtype; float64 with ``noise="float64"``).
    """
    with mechanisms.precision(noise if noise in mechanisms.NOISES else "float"):
        h, noise = _prepare(key, hist, epsilon, noise)
        _check_grid(noise, epsilon, 1.0)
        return _lpa(key, h, jnp.asarray(epsilon, h.dtype), noise=mechanisms._kernel_noise(noise))


def _check_grid(noise, epsilon, sensitivity):
    if noise == "grid":
        mechanisms.check_grid_ratio(epsilon=epsilon, sensitivity=sensitivity)


ACCOUNTINGS = ("exact", "paper")
_EXACT_MAX_BINS = 8192  # exact sensitivity tables up to this n (O(n²) work, once per n); a proven bound beyond


def dft_sensitivity(n: int, *, norm: int = 1, accounting: str = "exact") -> np.ndarray:
    """Sensitivity of the first z coordinates of the orthonormal real DFT (`jaxdp.transforms.rdft`) when
    one count changes by 1, for z = 0 … n: a float64 array ``[n + 1]`` (public; computed from n only).

    ``norm=1`` (L1, the Laplace noise of FPA and EFPA), ``norm=2`` (L2, SPA's K-norm noise).
    ``accounting="paper"``: the paper's bounds ``√z`` (L1, from ‖·‖₁ ≤ √z‖·‖₂) and 1 (L2).
    ``accounting="exact"``: ``max_i ‖(rdft e_i)_{<z}‖`` — the change of bin i moves coordinate c by
    ``M[c, i]`` (entries 1/√n, √2·cos(2πfi/n)/√n, √2·sin(2πfi/n)/√n, (−1)^i/√n), plus a 10⁻⁹ relative
    margin, never above the paper's. L2: in closed form, attained at bin 0 (a (cos, sin) pair adds 2/n to
    the squared norm, a lone cosine at most 2/n, DC and Nyquist 1/n): ≈ √(z/n). L1: computed exactly for
    n ≤ 8192 (O(n²) once per n, ≈ 0.3 s at n = 4096), beyond that bounded with ``|cos| + |sin| ≤ √2`` per
    frequency ((1 + 2·pairs + √2·[a lone cosine] + [Nyquist])/√n, within 1.6× of exact). About 0.9·z/√n
    in L1: e.g. 0.134 instead of 3 for z = 9, n = 4096.
    """
    n = _checks.size("n", n)
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 or 2, got {norm!r}.")
    accounting = _checks.option("accounting", accounting, ACCOUNTINGS)
    return _dft_sensitivity(n, norm, accounting)


@functools.lru_cache(maxsize=64)
def _dft_sensitivity(n: int, norm: int, accounting: str) -> np.ndarray:
    z = np.arange(n + 1, dtype=np.float64)
    paper = np.sqrt(z) if norm == 1 else np.minimum(z, 1.0)
    if accounting == "paper":
        out = paper
    elif norm == 2:  # closed form, attained at bin 0: a (cos, sin) pair adds 2/n, a lone cosine ≤ 2/n, DC and Nyquist 1/n
        h = (n - 1) // 2
        c = np.maximum(z - 1.0, 0.0)
        in_pairs = np.minimum(c, 2 * h)
        nyq = np.maximum(c - 2 * h, 0.0)
        full, lone = np.floor(in_pairs / 2), in_pairs % 2
        out = np.minimum(np.sqrt((np.minimum(z, 1.0) + 2.0 * full + 2.0 * lone + nyq) / n) * (1.0 + 1e-9), paper)
    elif n <= _EXACT_MAX_BINS:
        h = (n - 1) // 2
        f = np.arange(1, h + 1, dtype=np.int64)
        root2 = np.sqrt(2.0)
        cos_t = np.abs(np.cos(2.0 * np.pi * np.arange(n) / n)) * root2  # |entries| by angle index f·i mod n
        sin_t = np.abs(np.sin(2.0 * np.pi * np.arange(n) / n)) * root2
        best = np.zeros(n)
        # columns i and n − i hold the same absolute entries: i = 0 … ⌊n/2⌋ suffice
        for start in range(0, n // 2 + 1, 512):  # columns in chunks: |M[:, i]| cumulated over the coordinates
            i = np.arange(start, min(start + 512, n // 2 + 1), dtype=np.int64)
            idx = np.outer(f, i) % n
            pairs = np.stack([cos_t[idx], sin_t[idx]], axis=1).reshape(2 * h, i.size)
            rows = [np.ones((1, i.size)), pairs]
            if n % 2 == 0 and n > 1:
                rows.append(np.ones((1, i.size)))  # |(−1)^i| = 1
            col = np.concatenate(rows) / np.sqrt(n)
            best = np.maximum(best, np.cumsum(col, axis=0).max(axis=1))
        exact = np.concatenate([[0.0], best]) * (1.0 + 1e-9)
        out = np.minimum(exact, paper)
    else:
        c = np.maximum(z - 1.0, 0.0)  # coordinates after the DC
        h = (n - 1) // 2
        in_pairs = np.minimum(c, 2 * h)
        nyq = np.maximum(c - 2 * h, 0.0)  # the Nyquist coordinate (even n), entries ±1/√n
        full, lone = np.floor(in_pairs / 2), in_pairs % 2
        bound = (np.minimum(z, 1.0) + 2.0 * full + np.sqrt(2.0) * lone + nyq) / np.sqrt(n)
        out = np.minimum(bound * (1.0 + 1e-9), paper)
    out.flags.writeable = False
    return out


@functools.partial(jax.jit, static_argnames=("noise",))
def _lpa(key, h, eps, *, noise="float"):
    return mechanisms.laplace_mechanism(key, h, epsilon=eps, sensitivity=1.0, noise=noise)


def fpa(
    key: jax.Array, hist, *, epsilon: float, k: int, accounting: str = "exact", noise: str = "float"
) -> Float[Array, " n"]:
    """Fourier perturbation with a fixed number ``k`` of retained real DFT coordinates.

    Keeps the first k coordinates of `jaxdp.transforms.rdft` (the lowest frequencies), adds
    ``Lap(Δ₁/ε)`` to each, zero-pads and inverts. Expected SSE (the paper's Lemma 1, exact here
    because the basis is orthonormal): ``Σ_{i ≥ k} c_i² + 2k·Δ₁²/ε²``.

    Privacy: ε-DP: Δ₁ is the L1 sensitivity of the k coordinates, `dft_sensitivity`(n)[k]: ``√k`` with
    ``accounting="paper"`` (Theorem 3: they move by at most 1 in L2), the exact value (≈ 0.9·k/√n) with
    ``accounting="exact"`` (default).

    Args:
      key: typed PRNG key. hist: counts ``[n]``. epsilon: ε > 0.
      k: retained coordinates, ``1 ≤ k ≤ n`` (public).
      accounting: ``"exact"`` (default) or ``"paper"``.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact; `jaxdp.mechanisms.NOISES`).

    Returns:
      Noisy histogram ``[n]``.
    """
    accounting = _checks.option("accounting", accounting, ACCOUNTINGS)
    with mechanisms.precision(noise if noise in mechanisms.NOISES else "float"):
        h, noise = _prepare(key, hist, epsilon, noise)
        k = _checks.size("k", k)
        if k > h.shape[0]:
            raise ValueError(f"k = {k} exceeds the number of bins n = {h.shape[0]}; choose 1 <= k <= n.")
        sens = float(dft_sensitivity(h.shape[0], accounting=accounting)[k])
        _check_grid(noise, epsilon, sens)
        return _fpa(key, h, jnp.asarray(epsilon, h.dtype), k, sens, noise=mechanisms._kernel_noise(noise))


@functools.partial(jax.jit, static_argnums=(3,), static_argnames=("noise",))
def _fpa(key, h, eps, k, sens, *, noise="float"):
    c = transforms.rdft(h)
    keep = jnp.arange(h.shape[0]) < k
    noisy = mechanisms.laplace_mechanism(key, c, epsilon=eps, sensitivity=jnp.asarray(sens, h.dtype), noise=noise)
    return transforms.irdft(jnp.where(keep, noisy, 0.0))


# --------------------------------------------------------------------------------------- SPA / EFPA
def _tail_norm(c):
    """``tail[j] = sqrt(Σ_{i ≥ j} c_i²)`` for j = 0 … n (length n + 1, last entry 0)."""
    sq = c * c
    suffix = jnp.cumsum(sq[::-1])[::-1]
    return jnp.sqrt(jnp.concatenate([suffix, jnp.zeros((1,), c.dtype)]))


PENALTIES = ("consistent", "paper")


def _tables(n, accounting, norm):
    """Public per-z table: the L1 or L2 sensitivity of the first z coordinates."""
    return dft_sensitivity(n, norm=norm, accounting=accounting)


def spa_scores(hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact") -> Float[Array, " n"]:
    """SPA's ``U(H, k)`` for k = 1 … n: ``sqrt(Σ_{i ≥ k} c_i²) + noise term``, c = `rdft`(H), ε_n = ε/2 the
    noise budget. Sensitivity of U: 1 (the data term is the L2 norm of a projection of H). Shape ``[n]``.

    `penalty`: ``"consistent"`` (default) ``k·Δ₂(k)/ε_n``, the expected norm of the K-norm noise SPA adds
    (density ∝ exp(−ε_n‖z‖₂/Δ₂) in k dimensions: ‖z‖ ~ Gamma(k, ε_n/Δ₂)); ``"paper"`` ``k√n/ε_n`` (the
    paper's Eq. 1, written for the *unnormalized* DFT of Rastogi & Nath, whose coordinates are √n times
    the orthonormal ones used here: with orthonormal coordinates it overstates the noise ≥ √n-fold and
    SPA keeps k ≈ 1 — the flat histograms measured in RESULTS). Δ₂(k) = `dft_sensitivity`(n, norm=2,
    accounting=accounting)[k] (1 with ``"paper"``).
    """
    _checks.positive_scalar("epsilon", epsilon)
    penalty = _checks.option("penalty", penalty, PENALTIES)
    accounting = _checks.option("accounting", accounting, ACCOUNTINGS)
    h = jnp.asarray(check_histogram(hist), _checks.float_dtype())
    l2 = _tables(h.shape[0], accounting, 2)
    return _spa_scores(h, jnp.asarray(epsilon, h.dtype), jnp.asarray(l2, h.dtype), penalty=penalty)


@functools.partial(jax.jit, static_argnames=("penalty",))
def _spa_scores(h, eps, l2, *, penalty="consistent"):
    n = h.shape[0]
    tail = _tail_norm(transforms.rdft(h))[1:]  # k = 1 … n: coordinates k … n−1 removed
    k = jnp.arange(1, n + 1, dtype=h.dtype)
    if penalty == "paper":
        return tail + k * float(np.sqrt(n)) / (eps / 2)
    return tail + k * l2[1:] / (eps / 2)


def spa(
    key: jax.Array, hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact",
    noise: str = "float",
) -> Float[Array, " n"]:
    """Sampling perturbation (the paper's Algorithm 1, after Rastogi & Nath).

    k ∈ {1 … n} is drawn with probability ∝ ``exp(−(ε/2)·U(H, k)/2)`` (exponential mechanism, ΔU = 1:
    `spa_scores`); the first k `rdft` coordinates get noise with density ∝ ``exp(−(ε/2)‖z‖₂/Δ₂)``, sampled as
    ``√g · N(0, I_k)`` with ``g ~ Gamma((k+1)/2, rate (ε/(2Δ₂))²/2)`` (a K-norm mechanism for the L2 norm;
    the k coordinates move by ≤ Δ₂ = `dft_sensitivity`(n, norm=2)[k] in L2: 1 with ``accounting="paper"``,
    the exact ≈ √(2k/n) with ``"exact"``).

    Privacy: ε/2 (choice of k) + ε/2 (noise) = ε-DP.

    Args:
      penalty: ``"consistent"`` (default) or ``"paper"`` (`spa_scores`). accounting: ``"exact"`` or ``"paper"``.
      noise: ``"float"`` or ``"float64"``. ``"grid"`` is refused: the K-norm noise of SPA has no exact
        sampler here (use EFPA or FPA for exact Fourier releases).

    Returns:
      Noisy histogram ``[n]``.
    """
    penalty = _checks.option("penalty", penalty, PENALTIES)
    accounting = _checks.option("accounting", accounting, ACCOUNTINGS)
    with mechanisms.precision(noise if noise in mechanisms.NOISES else "float"):
        h, noise = _prepare(key, hist, epsilon, noise)
        if noise == "grid":
            raise ValueError('spa has no exact sampler for its K-norm noise: use noise="float" or "float64", '
                             'or efpa/fpa/lpa/php with noise="grid".')
        l2 = _tables(h.shape[0], accounting, 2)
        return _spa(key, h, jnp.asarray(epsilon, h.dtype), jnp.asarray(l2, h.dtype), penalty=penalty)[0]


@functools.partial(jax.jit, static_argnames=("penalty",))
def _spa(key, h, eps, l2, *, penalty="consistent"):
    n = h.shape[0]
    k_sel, k_noise = jax.random.split(key)
    scores = _spa_scores(h, eps, l2, penalty=penalty)  # U(H, k): lower is better, sensitivity 1
    k = mechanisms.exponential_mechanism(k_sel, -scores, epsilon=eps / 2, sensitivity=1.0) + 1
    z = mechanisms.l2_norm_noise(k_noise, h.shape, dim=k, epsilon=eps / 2, sensitivity=l2[k], dtype=h.dtype)
    keep = jnp.arange(n, dtype=k.dtype) < k
    return transforms.irdft(jnp.where(keep, transforms.rdft(h) + z, 0.0)), k


EFPA_PENALTIES = PENALTIES


def _efpa_penalty(n, eps, dtype, l1, penalty="consistent"):
    m = n // 2 + 1
    k = jnp.arange(1, m + 1)
    z = transforms.rdft_size(n, k)
    zf = z.astype(dtype)
    if penalty == "paper":
        return k, z, float(np.sqrt(2.0)) * zf / eps
    return k, z, jnp.sqrt(2.0 * zf) * 2.0 * l1[z] / eps  # √(z·2·b²), b = Δ₁(z)/(ε/2): the noise actually added


def efpa_scores(hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact") -> Float[Array, " m"]:
    """EFPA's ``u(H, k)`` (the paper's Eq. 3 as used in Algorithm 2) for k = 1 … m = ⌊n/2⌋ + 1:
    ``sqrt(energy of the removed real coordinates) + noise term`` with z = `rdft_size`(n, k). The data term
    moves by at most 1 between neighbours (Theorem 6); the noise term is public. Shape ``[m]`` (index k−1).

    `penalty`: ``"consistent"`` (default) the root expected squared error of the noise EFPA actually adds,
    z coordinates with ``Lap(2Δ₁(z)/ε)``: ``√(2z)·2Δ₁(z)/ε`` (= 2√2·z/ε with the paper's Δ₁ = √z);
    ``"paper"`` ``√2·z/ε`` as printed — the error of ``Lap(√z/ε)``, half the noise, so it under-penalizes
    large k. Δ₁(z) = `dft_sensitivity`(n, accounting=accounting)[z].
    """
    _checks.positive_scalar("epsilon", epsilon)
    penalty = _checks.option("penalty", penalty, PENALTIES)
    accounting = _checks.option("accounting", accounting, ACCOUNTINGS)
    h = jnp.asarray(check_histogram(hist), _checks.float_dtype())
    l1 = _tables(h.shape[0], accounting, 1)
    return _efpa_scores(h, jnp.asarray(epsilon, h.dtype), jnp.asarray(l1, h.dtype), penalty=penalty)


@functools.partial(jax.jit, static_argnames=("penalty",))
def _efpa_scores(h, eps, l1, *, penalty="consistent"):
    n = h.shape[0]
    k, z, pen = _efpa_penalty(n, eps, h.dtype, l1, penalty)
    tail = _tail_norm(transforms.rdft(h))
    return tail[z] + pen


def efpa(
    key: jax.Array, hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact",
    noise: str = "float",
) -> Float[Array, " n"]:
    """Enhanced Fourier perturbation (the paper's Algorithm 2), for any n (odd or even).

    k ∈ {1 … m} (frequencies F_0 … F_{k−1}) is drawn with probability ∝ ``exp(−ε·u(H, k)/4)``
    (exponential mechanism at ε/2, Δu = 1: Theorem 6); the z = `rdft_size`(n, k) retained real
    coordinates get ``Lap(2Δ₁(z)/ε)`` each; the rest are zeroed; inverse real DFT.

    Privacy: ε-DP: ε/2 for the choice of k, ε/2 for the noise; Δ₁(z) = `dft_sensitivity`(n)[z] is the L1
    sensitivity of the z retained coordinates: √z with ``accounting="paper"`` (they move by ≤ 1 in L2),
    the exact value (≈ 0.9·z/√n) with ``"exact"`` (default). Every retained coordinate, real and
    imaginary part, is perturbed.

    Args:
      key: typed PRNG key. hist: counts ``[n]``. epsilon: ε > 0.
      penalty: the score's noise term (`efpa_scores`): ``"consistent"`` (default) or ``"paper"``.
      accounting: ``"exact"`` (default) or ``"paper"``. The paper preset is ``penalty="paper",
        accounting="paper"``.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact; `jaxdp.mechanisms.NOISES`).

    Returns:
      Noisy histogram ``[n]``.
    """
    penalty = _checks.option("penalty", penalty, PENALTIES)
    accounting = _checks.option("accounting", accounting, ACCOUNTINGS)
    with mechanisms.precision(noise if noise in mechanisms.NOISES else "float"):
        h, noise = _prepare(key, hist, epsilon, noise)
        l1 = _tables(h.shape[0], accounting, 1)
        _check_grid(noise, epsilon / 2, float(l1[-1]))  # b/γ depends on ε, hardly on Δ (grid_spacing)
        return _efpa(key, h, jnp.asarray(epsilon, h.dtype), jnp.asarray(l1, h.dtype),
                     noise=mechanisms._kernel_noise(noise), penalty=penalty)[0]  # fmt: skip


@functools.partial(jax.jit, static_argnames=("noise", "penalty"))
def _efpa(key, h, eps, l1, *, noise="float", penalty="consistent"):
    n = h.shape[0]
    k_sel, k_noise = jax.random.split(key)
    scores = _efpa_scores(h, eps, l1, penalty=penalty)  # u(H, k): lower is better, sensitivity 1 (Theorem 6)
    idx = mechanisms.exponential_mechanism(k_sel, -scores, epsilon=eps / 2, sensitivity=1.0, noise=noise)
    k, z, _ = _efpa_penalty(n, eps, h.dtype, l1, penalty)
    zk = z[idx]
    sens = l1[zk]  # L1 sensitivity of the z retained orthonormal coordinates
    noisy = mechanisms.laplace_mechanism(k_noise, transforms.rdft(h), epsilon=eps / 2, sensitivity=sens, noise=noise)
    keep = jnp.arange(n) < zk
    return transforms.irdft(jnp.where(keep, noisy, 0.0)), k[idx]


# --------------------------------------------------------------------------------------- range abs deviation
class _Tree(NamedTuple):
    """Merge-sort tree of a length-n vector padded to N = 2^L: level h holds the blocks of 2^h
    consecutive entries, each sorted, and their prefix sums."""

    sorted: jax.Array  # [L+1, N]
    cums: jax.Array  # [L+1, N+1]
    prefix: jax.Array  # [n+1] prefix sums of x in bin order


def _tree(x):
    n = x.shape[0]
    levels = max(0, (n - 1).bit_length())
    size = 1 << levels
    xp = jnp.pad(x, (0, size - n))
    srt = jnp.stack([jnp.sort(xp.reshape(size >> h, 1 << h), axis=1).reshape(size) for h in range(levels + 1)])
    zero = jnp.zeros((levels + 1, 1), x.dtype)
    cums = jnp.concatenate([zero, jnp.cumsum(srt, axis=1)], axis=1)
    prefix = jnp.concatenate([jnp.zeros((1,), x.dtype), jnp.cumsum(x)])
    return _Tree(srt, cums, prefix)


def _abs_dev(tree: _Tree, lo, hi):
    """``Σ_{j ∈ [lo, hi)} |x_j − mean(x[lo:hi])|`` for integer arrays lo ≤ hi (0 for empty ranges).

    Uses Σ|x − μ| = 2 Σ (x − μ)⁺ and a merge-sort-tree range query: the range splits into ≤ 2 sorted
    blocks per level, and a binary search in each finds the entries above μ. O(log² N) per query;
    the loops are `fori_loop`s so that the compiled program stays small for any N.
    """
    srt, cums, prefix = tree
    levels = srt.shape[0] - 1
    size = 1 << levels
    dtype = prefix.dtype
    cnt = (hi - lo).astype(dtype)
    total = prefix[hi] - prefix[lo]
    mu = jnp.where(cnt > 0, total / jnp.where(cnt > 0, cnt, 1.0), 0.0)

    def block(h, node):  # Σ (x − μ)⁺ over the sorted block of `node` (height h)
        width = jnp.left_shift(1, h)
        base = (node - jnp.right_shift(size, h)) * width
        row, crow = srt[h], cums[h]

        def step(i, pos):  # b = levels − i: largest pos ≤ 2^h with row[base + pos − 1] ≤ μ
            cand = pos + jnp.left_shift(1, levels - i)
            ok = (cand <= width) & (row[jnp.clip(base + cand - 1, 0, size - 1)] <= mu)
            return jnp.where(ok, cand, pos)

        pos = jax.lax.fori_loop(0, levels + 1, step, jnp.zeros_like(node))
        s_above = crow[base + width] - crow[base + pos]
        return s_above - mu * (width - pos).astype(dtype)

    def level(h, carry):
        l, r, above = carry
        active = l < r
        use_l = active & ((l & 1) == 1)
        above = above + jnp.where(use_l, block(h, jnp.where(use_l, l, jnp.right_shift(size, h))), 0.0)
        l = l + use_l.astype(l.dtype)
        use_r = active & ((r & 1) == 1)
        r = r - use_r.astype(r.dtype)
        above = above + jnp.where(use_r, block(h, jnp.where(use_r, r, jnp.right_shift(size, h))), 0.0)
        return jnp.right_shift(l, 1), jnp.right_shift(r, 1), above

    _, _, above = jax.lax.fori_loop(0, levels + 1, level, (lo + size, hi + size, jnp.zeros(lo.shape, dtype)))
    return jnp.maximum(2.0 * above, 0.0)


def configuration_error(hist, cuts, *, epsilon: float) -> float:
    """``err(C, ε) = RE_C + k/ε`` of the clustering whose segments start at 0 and at each of `cuts`
    (the paper's Theorem 7 / Section V notation; RE is the sum of absolute deviations from the
    segment means). A NumPy float64 helper for tests and examples."""
    h = check_histogram(hist, integer=False)
    edges = [0, *sorted(int(c) for c in cuts), h.size]
    re = sum(np.abs(h[a:b] - h[a:b].mean()).sum() for a, b in zip(edges[:-1], edges[1:]) if b > a)
    return float(re + (len(edges) - 1) / epsilon)


# --------------------------------------------------------------------------------------- P-HPartition
def php_depth(n: int) -> int:
    """P-HP's depth limit ``d = ⌈log₂ n⌉`` (at least 1): a partition bisected d times is a leaf, and each
    bisection gets ε/(4d)."""
    return max(1, math.ceil(math.log2(n))) if n > 1 else 1


def _segments(cut):
    """Per bin: start and end of its segment, from the boolean cut array (cut[i]: a segment starts at i)."""
    n = cut.shape[0]
    idx = jnp.arange(n)
    start = jax.lax.cummax(jnp.where(cut, idx, 0))
    nxt = jnp.concatenate([cut[1:], jnp.ones((1,), bool)])
    end = jax.lax.cummin(jnp.where(nxt, idx + 1, n), reverse=True)
    return start, end


def release_histogram(key: jax.Array, hist, cuts, *, epsilon: float, noise: str = "float") -> Float[Array, " n"]:
    """ReleaseHistogram (the paper's Algorithm 3): each segment's mean plus ``Lap(1/ε)/|C|``, repeated
    over the segment. The segments (a public or privately chosen configuration) start at 0 and at
    every index of `cuts`.

    Privacy: ε-DP for a configuration that does not depend on the data (or was chosen privately):
    one record changes one segment sum by 1. `noise` as in `lpa`.
    """
    with mechanisms.precision(noise if noise in mechanisms.NOISES else "float"):
        h, noise = _prepare(key, hist, epsilon, noise)
        n = h.shape[0]
        cut = np.zeros(n, bool)
        cut[0] = True
        cuts = np.asarray(cuts, dtype=np.int64).reshape(-1)
        if cuts.size and (cuts.min() < 1 or cuts.max() >= n):
            raise ValueError(f"cuts must be bin indices in [1, {n - 1}] where a new segment starts.")
        cut[cuts] = True
        _check_grid(noise, epsilon, 1.0)
        return _release_jit(key, h, jnp.asarray(cut), jnp.asarray(epsilon, h.dtype), noise=mechanisms._kernel_noise(noise))


def _release(key, h, cut, eps, noise="float"):
    n = h.shape[0]
    seg = jnp.cumsum(cut) - 1
    sums = jax.ops.segment_sum(h, seg, num_segments=n)
    sizes = jax.ops.segment_sum(jnp.ones_like(h), seg, num_segments=n)
    noisy = mechanisms.laplace_mechanism(key, sums, epsilon=eps, sensitivity=1.0, noise=noise)
    means = noisy / jnp.maximum(sizes, 1.0)
    return means[seg]


_release_jit = jax.jit(_release, static_argnames=("noise",))


class PHPInfo(NamedTuple):
    """What P-HP chose (all derived from private choices, so releasable): the final segment starts
    as a boolean mask ``[n]`` and the number of clusters."""

    cut: jax.Array
    clusters: jax.Array


def php(key: jax.Array, hist, *, epsilon: float, return_info: bool = False, noise: str = "float"):
    """P-HPartition (the paper's Algorithm 4).

    Starting from one partition of all n bins, partitions are taken in FIFO order; each chooses among
    its |C| candidates (no bisection, or a bisection after bin i) with probability
    ∝ ``exp(−ε·err/(16d))``, ``err = RE + (#partitions)·λ``, λ = 2/ε (the mean |noise| of
    ReleaseHistogram at ε/2); children that are singletons or at depth d = `php_depth`(n) are leaves.
    Every configuration reached is saved; one is drawn ∝ ``exp(−ε·err/16)`` and released with
    ReleaseHistogram at ε/2.

    Privacy: ε-DP (Theorem 8): Δerr ≤ 2 (Lemma 2; tested by brute force); a bin lies in at most d
    bisected partitions, each choice ε/(4d) → ε/4; final choice ε/4; release ε/2. Only the part of
    err that belongs to the bisected partition differs between its candidates, so each choice
    depends only on that partition's bins.

    Args:
      key: typed PRNG key. hist: counts ``[n]``. epsilon: ε > 0.
      return_info: also return a `PHPInfo`.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact; `jaxdp.mechanisms.NOISES`).

    Returns:
      Noisy histogram ``[n]`` (and `PHPInfo`).
    """
    with mechanisms.precision(noise if noise in mechanisms.NOISES else "float"):
        h, noise = _prepare(key, hist, epsilon, noise)
        _check_grid(noise, epsilon / 2, 1.0)
        out, info = _php(key, h, jnp.asarray(epsilon, h.dtype), noise=mechanisms._kernel_noise(noise))
        return (out, info) if return_info else out


@functools.partial(jax.jit, static_argnames=("noise",))
def _php(key, h, eps, *, noise="float"):
    n = h.shape[0]
    depth = php_depth(n)
    lam = 2.0 / eps
    tree = _tree(h)
    idx = jnp.arange(n)
    keys = jax.random.split(key, depth + 2)

    def level_step(carry, xs):
        cut, active = carry  # active: per bin, its segment is a non-leaf partition of this level
        level, k = xs
        start, end = _segments(cut)
        q = _abs_dev(tree, jnp.concatenate([start, start, idx]), jnp.concatenate([end, idx, end]))
        whole = q[:n] + lam
        split = q[n : 2 * n] + q[2 * n :] + 2 * lam
        err = jnp.where(idx == start, whole, split)  # candidate i: no split (i = start) or cut before i
        # one exponential mechanism per active partition: ε/(4d) each, Δerr ≤ 2 (Lemma 2)
        winner = mechanisms.exponential_segments(
            k, -err, start, active, epsilon=eps / (4.0 * depth), sensitivity=2.0, noise=noise
        )
        chosen = active & (idx == winner[start])  # one chosen candidate per active segment
        new_cut = chosen & (idx != start)
        is_start = active & (idx == start)
        delta = jnp.where(is_start, err[jnp.minimum(winner, n - 1)] - whole, 0.0)
        owner = jnp.where(new_cut, start, n)
        # children are leaves if singletons or at the depth limit; a partition that did not split is a leaf
        split_seg = jax.ops.segment_max(new_cut.astype(jnp.int32), start, num_segments=n)[start] > 0
        cut = cut | new_cut
        s2, e2 = _segments(cut)
        active = active & split_seg & ((e2 - s2) > 1) & (level + 1 < depth)
        return (cut, active), (is_start, delta, new_cut, owner)

    cut0 = jnp.zeros(n, bool).at[0].set(True)
    active0 = jnp.full(n, n > 1)
    _, (processed, delta, made, owner) = jax.lax.scan(level_step, (cut0, active0), (jnp.arange(depth), keys[:depth]))
    # saved configurations in queue order (row-major over [level, start]) and their errors
    err0 = _abs_dev(tree, jnp.zeros((1,), jnp.int32), jnp.full((1,), n, jnp.int32))[0] + lam
    errs = err0 + jnp.cumsum(delta.reshape(-1))
    cand = jnp.concatenate([jnp.stack([err0]), errs])
    ok = jnp.concatenate([jnp.ones((1,), bool), processed.reshape(-1)])
    # the final choice: ε/4, Δerr ≤ 2; pick 0 is the initial configuration
    pick = mechanisms.exponential_mechanism(
        keys[depth], jnp.where(ok, -cand, -jnp.inf), epsilon=eps / 4.0, sensitivity=2.0, noise=noise
    )
    t = pick - 1
    lvl, pos = t // n, t % n
    levels = jnp.arange(depth)[:, None]
    keep = made & ((levels < lvl) | ((levels == lvl) & (owner <= pos))) & (pick > 0)
    final_cut = cut0 | jnp.any(keep, axis=0)
    out = _release(keys[depth + 1], h, final_cut, eps / 2, noise)
    return out, PHPInfo(final_cut, jnp.sum(final_cut))


def hpartition(hist, *, lam: float) -> list[list[int]]:
    """HPartition (non-private, Section V-A): greedy bisection while it lowers ``RE + k·λ``.

    Returns the final configuration as a list of segments (lists of bin indices). NumPy float64;
    for small examples (the paper's Fig. 3) and tests; not a DP mechanism.
    """
    h = check_histogram(hist, integer=False)
    segs = [(0, h.size)]

    def re(a, b):
        return float(np.abs(h[a:b] - h[a:b].mean()).sum())

    while True:
        best = None  # (gain, segment index, cut)
        for s, (a, b) in enumerate(segs):
            for i in range(a + 1, b):
                gain = re(a, b) - re(a, i) - re(i, b) - lam
                if best is None or gain > best[0] + 1e-12:
                    best = (gain, s, i)
        if best is None or best[0] <= 0:
            return [list(range(a, b)) for a, b in segs]
        _, s, i = best
        a, b = segs[s]
        segs[s : s + 1] = [(a, i), (i, b)]


# --------------------------------------------------------------------------------------- dispatcher
def publish(
    key: jax.Array, hist, *, method: str, epsilon: float, k: int | None = None, penalty: str | None = None,
    accounting: str | None = None, noise: str = "float",
) -> Float[Array, " n"]:
    """Publish a histogram with one of `METHODS`. ε-DP for every method. ``k`` only for ``"fpa"``;
    ``penalty`` for ``"spa"``/``"efpa"`` and ``accounting`` for ``"fpa"``/``"spa"``/``"efpa"`` (None: each
    method's default). `noise`: ``"float"``, ``"float64"`` or ``"grid"`` (exact; not for ``"spa"``)."""
    method = _checks.option("method", method, METHODS)
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
    """Post-processing of a released histogram (free under DP: it reads released values only): counts
    below 0 become 0, and with `round_counts` every count is rounded to the nearest integer. Batched over
    leading axes; returns float64.

    What it does to accuracy (RESULTS, "Histograms"): on sparse histograms it lowers the mean absolute
    error (most true counts are 0, and half the noise there is negative); on range queries it adds a
    positive bias that grows with the range, so the range MSE can rise.
    """
    out = np.maximum(np.asarray(released, np.float64), 0.0)
    return np.rint(out) if round_counts else out


# --------------------------------------------------------------------------------------- metrics
def kl_divergence(hist, released, *, smoothing: float = 1.0) -> np.ndarray:
    """``D_KL(p ‖ q)`` of the normalized true histogram p and the released one q.

    Conventions (the paper only says ``0 log 0 = 0``): q is post-processed as ``max(Ĥ, 0) + s`` with
    ``s = smoothing`` pseudo-counts per bin (add-s smoothing; a released count ≤ 0 would otherwise
    make the divergence infinite) and normalized; bins with p = 0 contribute 0. Batched over leading
    axes of `released`. Returns float64 ``[...]``.
    """
    p = check_histogram(hist, integer=False)
    if p.sum() <= 0:
        raise ValueError("the true histogram has no records; KL divergence is undefined.")
    if not smoothing > 0:
        raise ValueError(f"smoothing must be > 0, got {smoothing}.")
    p = p / p.sum()
    q = np.maximum(np.asarray(released, np.float64), 0.0) + smoothing
    q = q / q.sum(axis=-1, keepdims=True)
    mask = p > 0
    return np.sum(np.where(mask, p * (np.log(np.where(mask, p, 1.0)) - np.log(q)), 0.0), axis=-1)


def range_query_mse(hist, released, *, sizes=None) -> tuple[np.ndarray, np.ndarray]:
    """MSE of all range-count queries of each size (Section VI-C: sizes 2^i, i = 1 … ⌊log₂ n⌋).

    Every contiguous range of the given size is queried (n − size + 1 of them). Batched over leading
    axes of `released`. Returns ``(sizes [S], mse [..., S])`` in float64.
    """
    h = check_histogram(hist, integer=False)
    n = h.size
    if sizes is None:
        sizes = 2 ** np.arange(1, int(np.floor(np.log2(n))) + 1) if n >= 2 else np.asarray([1])
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 0 or sizes.min() < 1 or sizes.max() > n:
        raise ValueError(f"range sizes must lie in [1, n = {n}].")
    diff = np.asarray(released, np.float64) - h
    pre = np.concatenate([np.zeros(diff.shape[:-1] + (1,)), np.cumsum(diff, axis=-1)], axis=-1)
    out = [np.mean((pre[..., s:] - pre[..., :-s]) ** 2, axis=-1) for s in sizes]
    return sizes, np.stack(out, axis=-1)


def l2_error(hist, released) -> np.ndarray:
    """``‖H − Ĥ‖₂`` over the last axis (float64)."""
    h = check_histogram(hist, integer=False)
    return np.linalg.norm(np.asarray(released, np.float64) - h, axis=-1)


# --------------------------------------------------------------------------------------- data
def bin_values(values, *, bins: int, lo: float, hi: float) -> np.ndarray:
    """Histogram of `values` over the public range ``[lo, hi]`` in `bins` equal bins (values outside
    are clipped into the end bins and nothing is dropped). int64 ``[bins]``.

    The range must be public (fixed without looking at the data) for the release to be DP.
    """
    bins = _checks.size("bins", bins)
    v = np.asarray(values, np.float64).reshape(-1)
    if v.size == 0:
        raise ValueError("no values to bin.")
    if not np.all(np.isfinite(v)):
        raise ValueError("values contain NaN or inf.")
    if not hi > lo:
        raise ValueError(f"need lo < hi, got [{lo}, {hi}].")
    idx = np.clip(np.floor((v - lo) / (hi - lo) * bins).astype(np.int64), 0, bins - 1)
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

    name = _checks.option("name", name, tuple(BUNDLED))
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
    kind = _checks.option("kind", kind, ("smooth", "sparse", "step"))
    n = _checks.size("n", n)
    rng = np.random.default_rng(seed)
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
    counts = _checks.read_number_column(path)
    if counts.size == 0:
        raise ValueError(f"{path} holds no counts.")
    return check_histogram(np.asarray(counts)).astype(np.int64)
