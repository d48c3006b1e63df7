"""Sensitivity tables of the hybrid-video-coding paper (Lemmas 1, 3, 5; Fig. 8) and exact joint loss.

Everything here depends only on public values (block size, transform, scan order and the domain
bounds), so it is computed once per configuration, on the host, in float64.

Neighbouring blocks differ in one record (row) replaced by another record inside the domain
``[lo, hi]`` (bounded DP); ``Λ = hi - lo`` is the vector of attribute widths.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxdp import _validate, transforms
from jaxdp.transforms import orders

__all__ = [
    "JOINT_MAX_D",
    "coefficient_table",
    "frobenius",
    "identity_sensitivity",
    "score_sensitivity",
    "mode_score_sensitivity",
    "joint_privacy_loss",
    "joint_factor",
]

#: Largest number of attributes for which the exact joint loss is computed by enumerating the
#: ``2^(d-1)`` sign vertices of the difference box; above it jaxdp falls back to the paper's bound.
JOINT_MAX_D = 16


@functools.lru_cache(maxsize=256)
def _coefficient_table(kind: str, n: int, width: tuple[float, ...]) -> np.ndarray:
    lam = np.asarray(width)
    an = transforms.matrix(kind, n)
    ad = transforms.matrix(kind, lam.shape[0])
    table = np.abs(an).max(axis=1)[:, None] * (np.abs(ad) @ lam)[None, :]
    table.flags.writeable = False
    return table


def _width(bounds) -> tuple[float, ...]:
    lo, hi = _validate.bounds(bounds)
    return tuple((hi - lo).tolist())


def _matrix_width(bounds) -> tuple[float, ...]:
    """`_width` for the tables that hold the d × d transform matrix: d within `_validate.MAX_MATRIX_SIZE`."""
    width = _width(bounds)
    _validate.matrix_size("d (the attributes in bounds)", len(width))
    return width


def coefficient_table(kind: str, n: int, bounds) -> Float[np.ndarray, "n d"]:
    """Lemma 1: L1 sensitivity of every transform coefficient of an ``n x d`` error block.

    ``GS(f_{c_ij}) = |a^n_{i, r*(i)}| · Σ_k Λ_k |a^d_{jk}|`` with ``r*(i) = argmax_r |a^n_{ir}|``.
    The prediction block is subtracted before the transform; it does not depend on the current
    block, so it does not enter the sensitivity.

    Args:
      kind: ``"dct"``, ``"dst"``, ``"dht"`` or ``"identity"``.
      n: records per block (``n >= 1``).
      bounds: public domain, shape ``[d]`` (widths Λ) or ``[2, d]`` (rows lo, hi).

    Returns:
      Read-only float64 array of shape ``[n, d]``.
    """
    return _coefficient_table(_validate.kind(kind), _validate.block_size("n", n), _matrix_width(bounds))


def frobenius(kind: str, n: int, bounds) -> float:
    """``‖GS(f_c^σ)‖_F``: Frobenius norm of the Lemma 1 table (the quantity of paper Fig. 8)."""
    return float(np.linalg.norm(coefficient_table(kind, n, bounds)))


def identity_sensitivity(bounds) -> float:
    """``GS(I_r) = Σ_k Λ_k``: L1 sensitivity of releasing one whole record (Corollary 1)."""
    return float(sum(_width(bounds)))


def mode_score_sensitivity(bounds) -> float:
    """Lemma 5: L1 sensitivity ``‖Λ‖²₂`` of the mode score ``κ = -‖x - x̂(φ)‖²_F``.

    Valid **only** for predictions inside the domain (DESIGN note 2): with ``x̂`` outside
    ``[lo, hi]`` the score's sensitivity is unbounded. jaxdp clips every prediction to the domain
    before scoring; that clipping is post-processing of protected data and costs no budget.
    """
    return float(sum(w * w for w in _width(bounds)))


def _omega_one_factor(x_hat: Array, lo: Array, hi: Array) -> Array:
    """``sqrt(Σ_ij max{|hi_j - x̂_ij|, |x̂_ij - lo_j|}²)`` (Lemma 3(ii)), traceable, over the last 2 axes."""
    far = jnp.maximum(jnp.abs(hi - x_hat), jnp.abs(x_hat - lo))
    return jnp.sqrt(jnp.sum(far * far, axis=(-2, -1)))



def score_sensitivity(
    theta: float,
    n: int,
    bounds,
    *,
    kinds=("dct", "dst", "dht"),
    x_hat: Float[Array, "*batch n d"] | None = None,
) -> float | Float[Array, "*batch"]:
    """Lemma 3: upper bounds on the L1 sensitivity of the quantizer's scores ω_½ and ω_1.

    * θ = ½: ``GS(ω_½) ≤ ‖GS(f_c^σ̄)‖_F``;
    * θ = 1: ``GS(ω_1) < 2 ‖GS(f_c^σ̄)‖_F · sqrt(Σ_ij max{hi_j - x̂_ij, x̂_ij - lo_j}²)``,

    where σ̄ maximizes ``‖GS(f_c^σ)‖_F`` over the candidate transforms `kinds` (the exponential
    mechanism ranges over all of them).

    Args:
      theta: 0.5 or 1.0.
      n: records per block.
      bounds: public domain, ``[d]`` or ``[2, d]``.
      kinds: candidate transforms.
      x_hat: prediction block ``[..., n, d]``; required for θ = 1. It must be public (computed
        from already protected data); values outside the domain are measured by their distance.

    Returns:
      A Python float for θ = ½, an array of shape ``[...]`` for θ = 1.
    """
    kinds = _validate.kinds(kinds)
    if isinstance(theta, bool) or theta not in (0.5, 1.0):  # checked first (found in review: after the tables)
        raise ValueError(f"theta must be 0.5 or 1.0 (Lemma 3 bounds exist only for these), got {theta!r}.")
    lo, hi = _validate.bounds(bounds)
    gs_f = max(frobenius(k, n, bounds) for k in kinds)
    if theta == 0.5:
        return gs_f
    if theta == 1.0:
        if x_hat is None:
            raise ValueError("theta = 1 needs the prediction block x_hat (Lemma 3(ii) depends on it).")
        x_hat = _validate.block("x_hat", x_hat)
        dt = x_hat.dtype
        return 2.0 * gs_f * _omega_one_factor(x_hat, jnp.asarray(lo, dt), jnp.asarray(hi, dt))
    raise ValueError(f"theta must be 0.5 or 1.0 (Lemma 3 bounds exist only for these), got {theta!r}.")


# ----------------------------------------------------------------------------------------------
# Exact joint privacy loss of releasing several noisy coefficients (DESIGN note 4)
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _sign_vertices(d: int) -> np.ndarray:
    """All sign vectors in {±1}^d with first entry +1 (the box is symmetric), shape [2^(d-1), d]."""
    if d == 1:
        return np.ones((1, 1))
    bits = (np.arange(2 ** (d - 1))[:, None] >> np.arange(d - 1)[None, :]) & 1
    return np.concatenate([np.ones((bits.shape[0], 1)), 1.0 - 2.0 * bits], axis=1)


def _prefix_loss(kind: str, n: int, width: np.ndarray, order: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``max_{r, v} Σ_{k < t} |a^n_{i_k r}| |a^d_{j_k}·(v∘Λ)| w_k`` for every prefix length t ≥ 1.

    ``weights`` has the length of the prefix considered; returns an array of that length.
    """
    d = width.shape[0]
    an = transforms.matrix(kind, n)
    ad = transforms.matrix(kind, d)
    t = weights.shape[0]
    ik, jk = orders.rows_cols(order[:t], d)
    verts = _sign_vertices(d) * width[None, :]  # [V, d]
    m = np.abs(verts @ ad.T)  # [V, d]: |a^d_j · v| for every output column j
    mk = m[:, jk]  # [V, t]
    best = np.zeros(t)
    chunk = max(1, (1 << 22) // max(t, 1))
    for r in range(n):
        coef = np.abs(an[ik, r]) * weights  # [t]
        for start in range(0, mk.shape[0], chunk):
            cum = np.cumsum(mk[start : start + chunk] * coef[None, :], axis=1)
            np.maximum(best, cum.max(axis=0), out=best)
    return best


def joint_privacy_loss(kind: str, n: int, bounds, scales, *, order: str = "zigzag") -> float:
    """Exact ε of releasing the first ``t = len(scales)`` coefficients (in `order`) with Laplace noise.

    The privacy loss of releasing ``c̃_k = c_k + Lap(b_k)``, k < t, for neighbouring blocks that
    differ in row r by ``δ ∈ [-Λ, Λ]^d`` is ``Σ_k |a^n_{i_k r}| |a^d_{j_k}·δ| / b_k``: convex in δ,
    so its maximum over the box is at a vertex. This enumerates the ``2^(d-1)`` sign vertices and
    all rows. (Theorem 1 instead sums each coefficient's own worst case, Lemma 1, which is looser.)

    Args:
      kind: transform.
      n: records per block.
      bounds: public domain ``[d]`` or ``[2, d]``.
      scales: Laplace scales ``b_k > 0`` of the first t coefficients in scan order, shape ``[t]``.
      order: ``"zigzag"`` or ``"diagonal"``.

    Returns:
      The exact worst-case privacy loss ε (0.0 for t = 0).

    Raises:
      ValueError: d > JOINT_MAX_D (enumeration too large), bad scales or sizes.
    """
    kind = _validate.kind(kind)
    n = _validate.block_size("n", n)
    lo, hi = _validate.bounds(bounds)
    d = lo.shape[0]
    if d > JOINT_MAX_D:
        raise ValueError(f"exact joint loss enumerates 2^(d-1) vertices; d = {d} > JOINT_MAX_D = {JOINT_MAX_D}.")
    scales = np.asarray(scales, dtype=np.float64).reshape(-1)
    if scales.shape[0] > n * d:
        raise ValueError(f"at most n*d = {n * d} coefficients exist, got {scales.shape[0]} scales.")
    if scales.size and not (np.all(np.isfinite(scales)) and np.all(scales > 0)):
        raise ValueError("Laplace scales must be finite and > 0.")
    if scales.size == 0:
        return 0.0
    order_idx = orders.get(order, n, d)
    return float(_prefix_loss(kind, n, hi - lo, order_idx, 1.0 / scales)[-1])


@functools.lru_cache(maxsize=256)
def _joint_factor(kind: str, n: int, width: tuple[float, ...], order: str) -> np.ndarray:
    lam = np.asarray(width)
    d = lam.shape[0]
    nd = n * d
    order_idx = orders.get(order, n, d)
    g = coefficient_table(kind, n, lam).reshape(-1)[order_idx]
    s = np.concatenate([[0.0], np.cumsum(g ** (2.0 / 3.0))])
    rho = np.ones(nd + 1)
    rho[0] = 0.0
    if d <= JOINT_MAX_D:
        # Theorem 1 allocation for prefix t: 1/b_k = ε g_k^{-1/3} / S_t, so loss_t / ε = P_t / S_t.
        p = _prefix_loss(kind, n, lam, order_idx, g ** (-1.0 / 3.0))
        rho[1:] = np.minimum(p / s[1:], 1.0)
    rho.flags.writeable = False
    return rho


def joint_factor(kind: str, n: int, bounds, *, order: str = "zigzag") -> Float[np.ndarray, " nd1"]:
    """``ρ_t = ε_true(t) / ε`` for the Theorem 1 allocation, for every t = 0 … nd.

    With the paper's allocation (Theorem 1) of a Laplace budget ε over the first t coefficients,
    the exact joint privacy loss (see `joint_privacy_loss`) is ``ρ_t · ε ≤ ε``. Scaling every
    noise scale by ``ρ_t`` makes the exact loss equal ε — never more — and divides the Laplace
    MSE by ``1/ρ_t²``. This is `accounting="joint"`. For d > JOINT_MAX_D, ``ρ_t = 1`` (the paper's
    bound, still valid). ``ρ_0 = 0``: nothing is released.

    Returns:
      Read-only float64 array of shape ``[n*d + 1]``.
    """
    kind = _validate.kind(kind)
    n = _validate.block_size("n", n)
    order = _validate.option("order", order, orders.ORDERS)
    return _joint_factor(kind, n, _matrix_width(bounds), order)
