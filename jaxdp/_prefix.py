"""Cumulative sums along the last axis as small matrix products (fast on CPU and GPU under vmap).

XLA lowers `cumsum` to a scan that runs at ~10-15 ns per element on CPU; the quantizer needs
prefix/suffix sums of a few hundred entries for thousands of blocks at once. Splitting the axis
into chunks of `_CHUNK` and using a constant 0/1 triangular matrix inside each chunk (and
another one across chunks) turns the sum into GEMMs: O(len · _CHUNK) flops, no sequential scan.
Numerically it is an ordinary float sum of at most `len` non-negative or mixed terms.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_CHUNK = 32
_DIRECT = 160  # up to this length one triangular GEMM is cheapest
_HIGHEST = jax.lax.Precision.HIGHEST


def cumsum(x: jax.Array, *, reverse: bool = False) -> jax.Array:
    """Inclusive cumulative sum along the last axis (``reverse``: from the end), same shape as `x`."""
    size = x.shape[-1]
    if reverse:
        return cumsum(x[..., ::-1])[..., ::-1]
    if size <= _DIRECT:
        tri = jnp.asarray(np.triu(np.ones((size, size))), x.dtype)  # tri[k, t] = 1 if k <= t
        return jnp.matmul(x, tri, precision=_HIGHEST)
    nb = -(-size // _CHUNK)
    pad = nb * _CHUNK - size
    xp = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)]).reshape(*x.shape[:-1], nb, _CHUNK)
    within = jnp.matmul(xp, jnp.asarray(np.triu(np.ones((_CHUNK, _CHUNK))), x.dtype), precision=_HIGHEST)
    before = jnp.matmul(within[..., -1], jnp.asarray(np.triu(np.ones((nb, nb)), 1), x.dtype), precision=_HIGHEST)
    out = within + before[..., None]
    return out.reshape(*x.shape[:-1], nb * _CHUNK)[..., :size]


def suffix_sums(x: jax.Array) -> jax.Array:
    """``out[..., t] = Σ_{k ≥ t} x[..., k]`` for t = 0 … len (the last entry is 0): shape ``[..., len + 1]``.

    Short axes use one GEMM with a constant 0/1 matrix that already has the trailing zero column
    (no flips, no concatenation); long ones the chunked reverse `cumsum`.
    """
    size = x.shape[-1]
    if size <= _DIRECT:
        upper = jnp.asarray(np.tril(np.ones((size, size + 1))), x.dtype)  # upper[k, t] = 1 if k >= t
        return jnp.matmul(x, upper, precision=_HIGHEST)
    tail = cumsum(x, reverse=True)
    return jnp.concatenate([tail, jnp.zeros_like(tail[..., :1])], axis=-1)
