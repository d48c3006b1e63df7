"""Orthonormal block transforms of the paper's Section 4.2 and their separable 2-D application.

The matrices follow the paper's formulas exactly, with rows as basis vectors and 1-based
indices i (row) and j (column):

* DCT-II: ``a_1j = 1/sqrt(n)``; ``a_ij = sqrt(2/n) cos(pi/(2n) (i-1)(2j-1))`` for i > 1;
* DST-I: ``a_ij = sqrt(2/(n+1)) sin(pi/(n+1) i j)``;
* DHT:   ``a_ij = sqrt(2/n) cos(2 pi/n (i-1)(j-1) - pi/4)`` (= ``cas(2 pi (i-1)(j-1)/n)/sqrt(n)``);
* identity.

The 2-D forward transform of an ``n x d`` block is ``y = a^n x a^dᵀ`` and the inverse
``x = a^nᵀ y a^d`` (paper Eq. 3).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxdp import _checks

__all__ = ["KINDS", "matrix", "forward", "inverse"]

KINDS = _checks.KINDS
_HIGHEST = jax.lax.Precision.HIGHEST


@functools.lru_cache(maxsize=256)
def _matrix64(kind: str, n: int) -> np.ndarray:
    i = np.arange(1, n + 1, dtype=np.float64)[:, None]
    j = np.arange(1, n + 1, dtype=np.float64)[None, :]
    if kind == "dct":
        a = np.sqrt(2.0 / n) * np.cos(np.pi / (2 * n) * (i - 1) * (2 * j - 1))
        a[0, :] = 1.0 / np.sqrt(n)
    elif kind == "dst":
        a = np.sqrt(2.0 / (n + 1)) * np.sin(np.pi / (n + 1) * i * j)
    elif kind == "dht":
        a = np.sqrt(2.0 / n) * np.cos(2 * np.pi / n * (i - 1) * (j - 1) - np.pi / 4)
    else:  # identity
        a = np.eye(n)
    a.flags.writeable = False
    return a


def matrix(kind: str, n: int) -> Float[np.ndarray, "n n"]:
    """The orthonormal ``n x n`` transform matrix ``a^n`` (rows are basis vectors).

    Args:
      kind: one of ``"dct"`` (DCT-II), ``"dst"`` (DST-I), ``"dht"`` (Hartley), ``"identity"``.
      n: size, any ``n >= 1``.

    Returns:
      A read-only float64 NumPy array of shape ``[n, n]`` (a public constant; convert with
      ``jnp.asarray(..., dtype)`` for device use).

    Raises:
      ValueError / TypeError: unknown kind or ``n < 1``.
    """
    return _matrix64(_checks.kind(kind), _checks.size("n", n))


def _apply(a_left: jax.Array, x: jax.Array, a_right: jax.Array) -> jax.Array:
    y = jnp.matmul(a_left, x, precision=_HIGHEST)
    return jnp.matmul(y, a_right, precision=_HIGHEST)


@functools.partial(jax.jit, static_argnames=("kind",))
def _forward(x: jax.Array, kind: str) -> jax.Array:
    n, d = x.shape[-2:]
    an = jnp.asarray(_matrix64(kind, n), x.dtype)
    ad = jnp.asarray(_matrix64(kind, d), x.dtype)
    return _apply(an, x, ad.T)


@functools.partial(jax.jit, static_argnames=("kind",))
def _inverse(c: jax.Array, kind: str) -> jax.Array:
    n, d = c.shape[-2:]
    an = jnp.asarray(_matrix64(kind, n), c.dtype)
    ad = jnp.asarray(_matrix64(kind, d), c.dtype)
    return _apply(an.T, c, ad)


def forward(x: Float[Array, "*batch n d"], kind: str) -> Float[Array, "*batch n d"]:
    """Separable 2-D forward transform ``a^n x a^dᵀ`` (paper Eq. 3), batched over leading axes.

    Args:
      x: array of shape ``[..., n, d]``, float32 or float64 (integers are cast to the default float).
      kind: ``"dct"``, ``"dst"``, ``"dht"`` or ``"identity"``.

    Returns:
      Coefficients of shape ``[..., n, d]`` in the dtype of ``x``.
    """
    return _forward(_checks.block("x", x), _checks.kind(kind))


def inverse(c: Float[Array, "*batch n d"], kind: str) -> Float[Array, "*batch n d"]:
    """Separable 2-D inverse transform ``a^nᵀ c a^d`` (paper Eq. 3), batched over leading axes.

    Args:
      c: coefficients of shape ``[..., n, d]``.
      kind: ``"dct"``, ``"dst"``, ``"dht"`` or ``"identity"``.

    Returns:
      The block of shape ``[..., n, d]`` in the dtype of ``c``.
    """
    return _inverse(_checks.block("c", c), _checks.kind(kind))
