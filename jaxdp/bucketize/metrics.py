"""Information loss, MSE (Definition 3.9), relative query error, and Theorem 2's inference moments.

`relative_error` reads the raw table (its queries and their true answers): a curator's measure, not for
publication. Bucket ids are labels: any non-negative integers (they are compacted before counting)."""

from __future__ import annotations

import numbers
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate, mechanisms
from jaxdp.bucketize.validity import _bucket_array

__all__ = ['loss', 'mse', 'relative_error', 'inference_moments', 'simulate_inference']


def loss(bucket) -> int:
    """Loss (Eq. 2): Σ_g (|g| − 1)²."""
    _check_bucket(bucket)  # (found in review: negative or float ids ended in NumPy's messages)
    sizes = np.unique(np.asarray(bucket), return_counts=True)[1]  # (found in review: bincount asked for 73 TiB at id 10¹³)
    return int(np.sum((sizes - 1) ** 2))


def mse(bucket) -> float:
    """MSE (Definition 3.9): Loss / (|T| − 1)."""
    n = _check_bucket(bucket).size
    return loss(bucket) / max(n - 1, 1)


def _check_bucket(bucket) -> np.ndarray:
    b = _bucket_array(bucket)
    if b.ndim != 1 or b.size == 0 or not np.issubdtype(b.dtype, np.integer) or b.min() < 0:
        raise ValueError("bucket must be a non-empty 1-D array of non-negative integer bucket ids.")  # ([] was a
    return b  # dtype-cast TypeError, found in review)


def relative_error(qi, sa, bucket, *, queries: int = 1000, selectivity: float = 0.01, seed: int = 0) -> float:
    """Mean relative error |act − est| / act of random count queries (Section 7.2.2, after Anatomy [22]).
    **Curator-only:** it reads the raw table (and draws query values from the values present in it).

    A query picks q_d ∈ {1 … d} random QI attributes and, for each (and for SA), a random set of values
    covering ≈ selectivity^(1/(q_d+1)) of the attribute's domain; est = Σ_g (QI matches in g) × (SA matches
    in g)/|g|. Queries with act = 0 are redrawn.
    """
    qi = np.asarray(qi)
    sa = np.asarray(sa)
    bucket = _bucket_array(bucket)
    # found in review: mismatched lengths, 1-D qi, queries ≤ 0 or 2.5, selectivity 0, 2 or NaN ended in NumPy's
    # errors or a silent NaN
    if qi.ndim != 2 or sa.ndim != 1 or bucket.ndim != 1 or not qi.shape[0] == sa.size == bucket.size or sa.size == 0 \
            or qi.shape[1] == 0:
        raise ValueError(f"qi [N, d], sa [N] and bucket [N] must describe the same N ≥ 1 records (d ≥ 1), got shapes "
                         f"{qi.shape}, {sa.shape}, {bucket.shape}.")
    if not np.issubdtype(bucket.dtype, np.integer) or bucket.min() < 0:
        raise ValueError("bucket must hold non-negative integer bucket ids.")
    queries = _validate.size("queries", queries, hi=10**7, why="each query scans the table.")
    if isinstance(selectivity, (bool, np.bool_)) or not isinstance(selectivity, (int, float, np.integer, np.floating)) \
            or not 0 < selectivity <= 1:
        raise ValueError(f"selectivity must be a number in (0, 1], got {selectivity!r}.")
    rng = np.random.default_rng(_validate.seed("seed", seed))
    n, d = qi.shape
    bucket = np.unique(bucket, return_inverse=True)[1].reshape(-1)  # compact labels (found in review: bincount up to
    # the largest id asked for 73 TiB at id 10¹³)
    sizes = np.bincount(bucket).astype(np.float64)
    errs = []
    tries = 0
    while len(errs) < queries and tries < 50 * queries:
        tries += 1
        qd = rng.integers(1, d + 1)
        cols = rng.choice(d, qd, replace=False)
        frac = selectivity ** (1.0 / (qd + 1))
        mask_qi = np.ones(n, bool)
        for c in cols:
            dom = np.unique(qi[:, c])
            pick = rng.choice(dom, max(1, int(round(frac * dom.size))), replace=False)
            mask_qi &= np.isin(qi[:, c], pick)
        dom = np.unique(sa)
        mask_sa = np.isin(sa, rng.choice(dom, max(1, int(round(frac * dom.size))), replace=False))
        act = np.sum(mask_qi & mask_sa)
        if act == 0:
            continue
        est = np.sum(np.bincount(bucket[mask_qi], minlength=sizes.size) * np.bincount(bucket[mask_sa], minlength=sizes.size)
                     / np.maximum(sizes, 1))
        errs.append(abs(act - est) / act)
    if len(errs) < queries:  # found in review: 8 of 20 queries were averaged without a word
        warnings.warn(f"only {len(errs)} of {queries} random queries matched any record (after {tries} draws); the "
                      "error is their mean. Raise selectivity.", RuntimeWarning, stacklevel=2)
    return float(np.mean(errs)) if errs else float("nan")


# --------------------------------------------------------------------------------------- Theorem 2
def inference_moments(x: float, y: float, *, epsilon: float) -> tuple[float, float]:
    """The differential inference theorem (Theorem 2): with X = x + Lap(b), Y = y + Lap(b), b = 1/ε,
    ``E[Y/X] ≈ (y/x)(1 + 2b²/x²)`` and ``var[Y/X] ≈ (2b²/x²)(1 + (y/x)²)`` (second-order Taylor)."""
    _validate.positive_scalar("epsilon", epsilon)
    x, y = _true_count("x", x), _true_count("y", y)
    if x == 0:
        raise ValueError("x must be non-zero: the theorem's expansion is in b/x (a count of 0 has no ratio Y/X).")
    b = 1.0 / epsilon
    r = y / x
    with np.errstate(over="ignore"):  # found in review: x = 1e-200 ended in a ZeroDivisionError (x·x underflowed)
        q = np.float64(b) / np.float64(x)
        q2 = q * q
        moments = float(r * (1 + 2 * q2)), float(2 * q2 * (1 + r * r))
    if not all(np.isfinite(moments)):
        raise ValueError("the moments overflow float64 for this epsilon and these counts (b/x or y/x beyond ≈ 1e154): "
                         "the expansion in b/x says nothing there; raise epsilon.")
    return moments


def _true_count(name, v) -> float:
    """A true count of Theorem 2: a finite real number >= 0 (found in review: x = 0 ended in a ZeroDivisionError, NaN
    passed silently, a negative count gave moments of nothing real; `simulate_inference` took NaN and -1)."""
    number = not isinstance(v, (bool, np.bool_)) and np.ndim(v) == 0 and (
        np.asarray(v).dtype.kind in "iuf" or isinstance(v, numbers.Rational))
    if not (number and np.isfinite(float(v))):  # the message names the type, never the (true) value
        raise ValueError(f"{name} must be a finite real number (a true count), got a {type(v).__name__}.")
    if float(v) < 0:
        raise ValueError("x and y are true counts: they must be >= 0.")
    return float(v)


def simulate_inference(key: jax.Array, x: float, y: float, *, epsilon: float, trials: int = 100_000):
    """Draw `trials` ε-DP answers X, Y of the two count queries (independent Laplace, Theorem 1) and return
    Y/X as a float64 NumPy array: what an adversary averaging noisy answers sees. One key: `trials` are the
    repetitions."""
    _validate.one_key(key, "simulate_inference (its trials are the repetitions)")
    _validate.positive_scalar("epsilon", epsilon)
    # found in review: trials = −3 ended in JAX's TypeError (the cap: the draws are held in memory at once)
    trials = _validate.size("trials", trials, hi=_validate.MAX_GENERATED, why="the draws are held in memory at once.")
    x, y = _true_count("x", x), _true_count("y", y)
    k1, k2 = jax.random.split(key)
    nx = np.asarray(mechanisms.laplace_noise(k1, (trials,), epsilon=epsilon, sensitivity=1.0, dtype=jnp.float32), np.float64)
    ny = np.asarray(mechanisms.laplace_noise(k2, (trials,), epsilon=epsilon, sensitivity=1.0, dtype=jnp.float32), np.float64)
    return (y + ny) / (x + nx)
