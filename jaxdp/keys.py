"""PRNG keys for releases: secret, high-entropy keys from the operating system, and reproducible seeds.

A differentially private release is only as private as its randomness is secret. Anyone who knows
(or can guess) the key can recompute the noise and subtract it; anyone who sees two releases made
with the same key learns the difference of the two inputs exactly. Hence:

* `fresh_key()` draws every bit of a key from the operating system's CSPRNG (`secrets`), e.g. 64
  bits for JAX's default threefry key. This is what the CLI and every jaxdp helper that makes a key
  for the user does.
* `key_from_seed(seed)` is for **reproduction only** (tests, benchmarks, demonstrating a result):
  a release made from a seed that someone else may know or guess is **not** private.
* Never reuse a key across releases: split it (`jax.random.split`) or draw a fresh one.
"""

from __future__ import annotations

import secrets

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["fresh_key", "key_from_seed", "MAX_SEED"]

MAX_SEED = 2**64 - 1  # largest seed `key_from_seed` takes (a threefry key holds 64 bits)


def _default_key_shape() -> tuple[tuple[int, ...], str]:
    impl = jax.random.key_impl(jax.random.key(0))
    shape = tuple(jax.random.key_data(jax.random.key(0)).shape)
    return shape, impl


def _trace_clean() -> bool:
    from jax._src import core

    return bool(core.trace_state_clean())


def fresh_key() -> jax.Array:
    """A typed PRNG key whose every bit comes from the operating system's CSPRNG.

    The key has JAX's default implementation (threefry2x32: 64 bits of key data). It is never
    printed or stored by jaxdp; keep it secret and use it for one release (split it for several).

    Returns:
      A scalar typed key (`jax.random.key` dtype).

    Raises:
      RuntimeError: called while JAX traces a function (found in review: under `jax.jit` the key was compiled in
        as a constant, so every call reused it and the secret words sat in the program text).
    """
    if not _trace_clean():
        raise RuntimeError("fresh_key() was called while JAX traces a function (under jax.jit, vmap or scan): its "
                           "secret words would be compiled into the program as a constant, and every call would "
                           "reuse that one key. Draw the key outside and pass it in as an argument.")
    shape, impl = _default_key_shape()
    words = int(np.prod(shape))
    data = np.frombuffer(secrets.token_bytes(4 * words), dtype=np.uint32).reshape(shape)
    return jax.random.wrap_key_data(jnp.asarray(data), impl=impl)


def key_from_seed(seed: int) -> jax.Array:
    """A reproducible key from an integer seed in ``[0, 2**64)`` — for reproduction, **not** privacy.

    For seeds below 2**32 this is the same key as ``jax.random.key(seed)``; larger seeds fill the
    whole 64 bits of a threefry key (``jax.random.key`` keeps only 32 bits without x64).

    Raises:
      TypeError: `seed` is not an int. ValueError: `seed` is outside ``[0, 2**64)``.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}.")
    seed = int(seed)
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}; omit it for a fresh secret key.")
    shape, impl = _default_key_shape()
    if shape == (2,):  # threefry2x32: (hi, lo) words, as jax.random.key does for 64-bit seeds
        data = np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)
        return jax.random.wrap_key_data(jnp.asarray(data), impl=impl)
    if seed >= 2**32:
        raise ValueError(f"seeds >= 2**32 need the threefry2x32 key implementation (the default is {impl}).")
    return jax.random.key(seed)
