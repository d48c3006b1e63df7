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
_SUFFIX_CHUNK = 8  # chunk of `suffix_sums` (fastest of 8/13/16/26/32 for lengths 104-624, 2-core CPU)
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

    The axis is cut into chunks of `_SUFFIX_CHUNK`; one small GEMM with a constant lower-triangular
    0/1 matrix gives the suffix sums inside each chunk, a second one the sums of the later chunks
    (O(len · _SUFFIX_CHUNK) flops instead of O(len²) for one triangular GEMM over the whole axis:
    2.2× faster for the quantizer's ``[3·10⁴, 104]`` tables on a 2-core CPU, 6× at length 208).
    """
    size = x.shape[-1]
    if size <= _SUFFIX_CHUNK:
        upper = jnp.asarray(np.tril(np.ones((size, size + 1))), x.dtype)  # upper[k, t] = 1 if k >= t
        return jnp.matmul(x, upper, precision=_HIGHEST)
    nb = -(-size // _SUFFIX_CHUNK)
    lead = [(0, 0)] * (x.ndim - 1)
    xp = jnp.pad(x, lead + [(0, nb * _SUFFIX_CHUNK - size)]).reshape(*x.shape[:-1], nb, _SUFFIX_CHUNK)
    tri = jnp.asarray(np.tril(np.ones((_SUFFIX_CHUNK, _SUFFIX_CHUNK))), x.dtype)  # tri[k, t] = 1 if k >= t
    within = jnp.matmul(xp, tri, precision=_HIGHEST)
    later = jnp.asarray(np.tril(np.ones((nb, nb)), -1), x.dtype)  # later[c', c] = 1 if c' > c
    after = jnp.matmul(within[..., 0], later, precision=_HIGHEST)
    tail = (within + after[..., None]).reshape(*x.shape[:-1], nb * _SUFFIX_CHUNK)[..., :size]
    return jnp.pad(tail, lead + [(0, 1)])
