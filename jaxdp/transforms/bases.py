"""Orthonormal block transforms of the paper's Section 4.2 and their separable 2-D application.

The matrices follow the paper's formulas exactly, with rows as basis vectors and 1-based
indices i (row) and j (column):

* DCT-II: ``a_1j = 1/sqrt(n)``; ``a_ij = sqrt(2/n) cos(pi/(2n) (i-1)(2j-1))`` for i > 1;
* DST-I: ``a_ij = sqrt(2/(n+1)) sin(pi/(n+1) i j)``;
* DHT:   ``a_ij = sqrt(2/n) cos(2 pi/n (i-1)(j-1) - pi/4)`` (= ``cas(2 pi (i-1)(j-1)/n)/sqrt(n)``);
* identity.

The 2-D forward transform of an ``n x d`` block is ``y = a^n x a^dᵀ`` and the inverse
``x = a^nᵀ y a^d`` (paper Eq. 3).

For the other papers: the orthonormal *real DFT* of a length-n vector (`rdft`/`irdft`, FFT-based,
used by the histogram mechanisms FPA/SPA/EFPA) and the orthonormal Haar matrix (`haar_matrix`,
the compressive mechanism's sparsity basis).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxdp import _validate

__all__ = ["KINDS", "matrix", "forward", "inverse", "rdft", "irdft", "rdft_size", "haar_matrix"]

KINDS = _validate.KINDS
_HIGHEST = jax.lax.Precision.HIGHEST


def _kept_up_to(n_max: int, maxsize: int):
    """An `lru_cache` for matrices of side n ≤ `n_max` (the last argument); larger ones are built per call, not
    held (found in a memory profile of the tests: a cache of 256 entries held a 128 MiB DCT matrix of n = 4096
    for the rest of the process, and would hold 2 GiB at the largest n allowed)."""

    def wrap(build):
        cached = functools.lru_cache(maxsize=maxsize)(build)

        @functools.wraps(build)
        def get(*args):
            return cached(*args) if args[-1] <= n_max else build(*args)

        return get

    return wrap


@_kept_up_to(1024, maxsize=256)  # up to 8 MiB each: every block size the codecs use
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
      n: size, ``1 <= n <= 16384`` (`_validate.MAX_MATRIX_SIZE`: the matrix takes 8·n² bytes).

    Returns:
      A read-only float64 NumPy array of shape ``[n, n]`` (a public constant; convert with
      ``jnp.asarray(..., dtype)`` for device use).

    Raises:
      ValueError / TypeError: unknown kind, ``n < 1`` or n above the limit.
    """
    return _matrix64(_validate.kind(kind), _validate.matrix_size("n", n))


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
    return _forward(_sized(_validate.block("x", x)), _validate.kind(kind))


def inverse(c: Float[Array, "*batch n d"], kind: str) -> Float[Array, "*batch n d"]:
    """Separable 2-D inverse transform ``a^nᵀ c a^d`` (paper Eq. 3), batched over leading axes.

    Args:
      c: coefficients of shape ``[..., n, d]``.
      kind: ``"dct"``, ``"dst"``, ``"dht"`` or ``"identity"``.

    Returns:
      The block of shape ``[..., n, d]`` in the dtype of ``c``.
    """
    return _inverse(_sized(_validate.block("c", c)), _validate.kind(kind))


def _sized(x):
    """`x` whose block sides the dense n × n and d × d matrices can be built for (found in review: a 10⁶-record
    block asked for a 7,451 GiB matrix with no check)."""
    n, d = x.shape[-2:]
    _validate.matrix_size("n (the block's records)", n)
    _validate.matrix_size("d (the block's columns)", d)
    return x


def rdft_size(n: int, k):
    """Number of real coordinates of `rdft` that carry the frequencies ``0 … k−1``: ``min(2k − 1, n)``
    for k ≥ 1, 0 for k = 0 (the DC term is one real number, every other frequency a cos/sin pair,
    the Nyquist term of an even n one real number). Works on ints and integer arrays."""
    return jnp.where(k > 0, jnp.minimum(2 * k - 1, n), 0) if not isinstance(k, int) else (min(2 * k - 1, n) if k > 0 else 0)


def _floating(x) -> jax.Array:
    """A real float array (integers in the default float: found in review, `rdft(np.arange(5))` came back int32)."""
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(_validate.float_dtype())


def rdft(x: Float[Array, "*batch n"]) -> Float[Array, "*batch n"]:
    """Orthonormal real DFT along the last axis: ``n`` real coordinates ordered by frequency.

    With ``F = fft(x) / sqrt(n)`` the coordinates are ``[Re F_0, √2 Re F_1, √2 Im F_1, √2 Re F_2, …]``
    and, for even n, ``Re F_{n/2}`` last. The map is an orthonormal change of basis (``‖rdft(x)‖₂ =
    ‖x‖₂``), so a change of one count by 1 moves the coordinate vector by exactly 1 in L2 and the
    first z coordinates by at most ``√z`` in L1 (the paper's bound, FPA/SPA/EFPA's ``accounting="paper"``; the
    exact value is `jaxdp.histogram.dft_sensitivity`). Computed with
    an FFT in O(n log n); any n ≥ 1.
    """
    x = _floating(x)
    n = x.shape[-1]
    f = jnp.fft.rfft(x, axis=-1, norm="ortho")
    h = (n - 1) // 2
    root2 = np.sqrt(2.0).astype(x.dtype)
    pairs = jnp.stack([f[..., 1 : h + 1].real * root2, f[..., 1 : h + 1].imag * root2], axis=-1)
    parts = [f[..., :1].real, pairs.reshape(*x.shape[:-1], 2 * h)]
    if n % 2 == 0 and n > 1:
        parts.append(f[..., n // 2 : n // 2 + 1].real)
    return jnp.concatenate(parts, axis=-1).astype(x.dtype)


def irdft(c: Float[Array, "*batch n"]) -> Float[Array, "*batch n"]:
    """Inverse of `rdft` along the last axis (orthonormal, so also its transpose)."""
    c = _floating(c)
    n = c.shape[-1]
    h = (n - 1) // 2
    inv_root2 = np.sqrt(0.5).astype(c.dtype)
    pairs = c[..., 1 : 2 * h + 1].reshape(*c.shape[:-1], h, 2) * inv_root2
    cdt = jnp.complex128 if c.dtype == jnp.float64 else jnp.complex64
    parts = [c[..., :1].astype(cdt), jax.lax.complex(pairs[..., 0], pairs[..., 1])]
    if n % 2 == 0 and n > 1:
        parts.append(c[..., n - 1 :].astype(parts[0].dtype))
    f = jnp.concatenate(parts, axis=-1)
    return jnp.fft.irfft(f, n=n, axis=-1, norm="ortho").astype(c.dtype)


@_kept_up_to(1024, maxsize=64)
def _haar64(n: int) -> np.ndarray:
    if n == 1:
        a = np.ones((1, 1))
        a.flags.writeable = False  # (it was returned writable, unlike every other size)
        return a
    half = _haar64(n // 2)
    top = np.kron(half, [1.0, 1.0]) / np.sqrt(2.0)
    bottom = np.kron(np.eye(n // 2), [1.0, -1.0]) / np.sqrt(2.0)
    a = np.vstack([top, bottom])
    a.flags.writeable = False
    return a


def haar_matrix(n: int) -> Float[np.ndarray, "n n"]:
    """The orthonormal Haar matrix of size ``n`` (a power of two), rows = basis vectors ordered from
    the coarsest (the constant ``1/√n``) to the finest scale. Read-only float64; n ≤ 16384 (8·n² bytes)."""
    n = _validate.matrix_size("n", n)
    if n & (n - 1):
        raise ValueError(f"the Haar basis needs n to be a power of two, got n = {n}; pad the vector.")
    return _haar64(n)
