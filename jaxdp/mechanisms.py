"""The Laplace and exponential mechanisms, with explicit typed PRNG keys.

Keys come first and are typed `jax.random.key`s; there is never a default key. Split a key for
every use (`jax.random.split`) and `vmap` over split keys to batch.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from jaxdp import _checks, _prefix, exact

__all__ = [
    "laplace", "laplace_scale", "laplace_noise", "add_laplace", "standard_laplace", "add_standard_laplace", "grid_laplace", "grid_spacing", "exponential",
    "exponential_exact", "exponential_uniforms", "exponential_drawn", "exponential_probabilities", "NOISES",
    "check_noise", "precision", "laplace_mechanism", "exponential_mechanism", "exponential_segments", "l2_norm_noise",
    "check_grid_ratio",
]  # fmt: skip

# Scales are computed in floating point; rounding could make ``Δ/b`` exceed ε by an ulp or two. Every
# Laplace scale in jaxdp is therefore inflated by this many ulps of its dtype (a relative 1.9e-6 in
# float32), so the privacy loss never exceeds the stated ε.
_MARGIN_ULPS = 16


def laplace_scale(*, epsilon, sensitivity, dtype=None):
    """The Laplace scale ``b = Δ/ε`` (times ``1 + 16·ulp``), so that ``Lap(b)`` is ε-DP for L1 sensitivity Δ.

    Traceable (works on traced ε and Δ); no validation. `dtype` defaults to the default float dtype.
    """
    dtype = _checks.float_dtype() if dtype is None else np.dtype(dtype)
    margin = 1.0 + _MARGIN_ULPS * float(np.finfo(dtype).eps)
    return (jnp.asarray(sensitivity, dtype) / jnp.asarray(epsilon, dtype)) * jnp.asarray(margin, dtype)


def laplace_noise(key: jax.Array, shape, *, epsilon, sensitivity, dtype=None) -> jax.Array:
    """Noise ``Lap(Δ/ε)`` of the given shape (textbook float sampler). Traceable core, no validation.

    Privacy: added to a query of L1 sensitivity Δ it gives ε-DP (Dwork & Roth, Thm. 3.6); the float
    sampler has the floating-point caveats of Mironov (2012) (see the README's privacy section).
    `epsilon` and `sensitivity` broadcast against `shape`.
    """
    dtype = _checks.float_dtype() if dtype is None else np.dtype(dtype)
    return laplace_scale(epsilon=epsilon, sensitivity=sensitivity, dtype=dtype) * jax.random.laplace(key, tuple(shape), dtype)


def standard_laplace(key: jax.Array, shape, dtype=None) -> jax.Array:
    """Standard Laplace variates ``Lap(1)`` drawn ahead of use (a scan draws all its randomness in
    one vectorized call); scale them with `add_standard_laplace`. Traceable."""
    dtype = _checks.float_dtype() if dtype is None else np.dtype(dtype)
    return jax.random.laplace(key, tuple(shape), dtype)


def add_standard_laplace(z, x, *, epsilon, sensitivity) -> jax.Array:
    """``x + laplace_scale(ε, Δ)·z`` for standard Laplace variates z (`standard_laplace`). Traceable."""
    x = jnp.asarray(x)
    return x + laplace_scale(epsilon=epsilon, sensitivity=sensitivity, dtype=x.dtype) * z


def add_laplace(key: jax.Array, x, *, epsilon, sensitivity) -> jax.Array:
    """``x + Lap(Δ/ε)`` elementwise (the Laplace mechanism; float sampler). Traceable core."""
    x = jnp.asarray(x)
    return x + laplace_noise(key, x.shape, epsilon=epsilon, sensitivity=sensitivity, dtype=x.dtype)


def _float_dtype_of(x) -> np.dtype:
    dt = getattr(x, "dtype", None)  # Python scalars take the default float dtype
    if dt is None or not np.issubdtype(np.dtype(dt), np.floating):
        return _checks.float_dtype()
    return np.dtype(jax.dtypes.canonicalize_dtype(dt))


def laplace(
    key: jax.Array,
    scale: Float[Array, "..."] | float,
    shape: tuple[int, ...] | None = None,
    *,
    dtype=None,
) -> Float[Array, "..."]:
    """Zero-mean Laplace noise of the given scale(s): density ``exp(-|z|/b) / (2b)``.

    Privacy:
      Adding ``Lap(Δ₁/ε)`` to a query of L1 sensitivity Δ₁ is ε-DP (Dwork & Roth, Thm. 3.6). This
      sampler uses the textbook float inverse-CDF transform, which has the floating-point leak of
      Mironov (2012); a float-safe option is planned (DESIGN note 5).

    Args:
      key: a typed PRNG key (`jax.random.key`), used once.
      scale: scale ``b > 0``: a scalar or an array broadcastable to `shape`.
      shape: output shape; defaults to the shape of `scale`.
      dtype: float dtype of the output; defaults to that of `scale` (or the default float).

    Returns:
      Array of shape `shape` with independent ``Lap(scale)`` entries.

    Raises:
      TypeError: `key` is not a typed key. ValueError: a concrete scale is not finite and > 0.
    """
    _checks.key(key)
    if _checks.is_concrete(scale):
        s = np.asarray(scale, dtype=np.float64)
        if not (np.all(np.isfinite(s)) and np.all(s > 0)):
            raise ValueError("Laplace scale must be finite and > 0 everywhere.")
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(dtype)) if dtype is not None else _float_dtype_of(scale)
    shape = tuple(np.shape(scale)) if shape is None else tuple(shape)
    return _laplace(key, jnp.asarray(scale, dtype), shape, dtype)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _laplace(key, scale, shape, dtype):
    return scale * jax.random.laplace(key, shape, dtype)


def grid_spacing(sensitivity):
    """Grid spacing γ of the float-safe sampler: the largest power of two ≤ sensitivity / 256."""
    return jnp.exp2(jnp.floor(jnp.log2(sensitivity / 256.0)))


def _grid_laplace(key: jax.Array, x: jax.Array, scale: jax.Array, spacing: jax.Array) -> jax.Array:
    """Traceable core of `grid_laplace`: ``γ·(round(x/γ) + Z)``, Z exact discrete Laplace (`jaxdp.exact`)."""
    return exact.snap_and_add(key, x, scale=scale, spacing=spacing)


def grid_laplace(key: jax.Array, x, *, scale, spacing) -> jax.Array:
    """Float-safe, exact Laplace: ``round_γ(x) + γ·Z`` with Z an exact discrete Laplace integer.

    Every output is an exact multiple of the power-of-two spacing γ, whatever the input, so two
    neighbouring inputs share the same output support: the floating-point "porous support" of the
    textbook sampler (Mironov 2012) is gone. Z has ``P(Z = z) ∝ exp(−|z|/R)`` exactly, with R the
    scale ratio b/γ rounded up to a representable value (relative excess < 2⁻²¹; `jaxdp.exact`),
    drawn with integer arithmetic only (Canonne, Kamath & Steinke 2020); the sum ``round(x/γ) + Z``
    is formed exactly in integers before it becomes a float, so rounding reveals nothing.

    Privacy:
      Snapping moves each value by at most γ/2, so a query of L1 sensitivity Δ has sensitivity
      ≤ Δ + γ after snapping; calibrate ``scale ≥ (Δ + γ)/ε`` (the codec does, with γ ≤ Δ/256).
      Pure ε-DP, no δ: the only departures from the ideal distribution are integer widths
      (probability < 10⁻¹⁰⁰⁰⁰⁰, see `jaxdp.exact`).

    Args:
      key: typed PRNG key. x: values ``[...]``. scale: Laplace scale b > 0 (broadcastable).
      spacing: grid spacing γ > 0, a power of two (broadcastable); see `grid_spacing`.

    Returns:
      Array like `x`, every entry an exact multiple of γ (|x|/γ is clamped to 2²⁹).

    Raises:
      ValueError: a concrete ratio scale/spacing outside [1, 2²⁹) (it cannot be sampled exactly in
      32-bit integers: choose a coarser spacing), or a spacing that is not a power of two.
    """
    _checks.key(key)
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(_checks.float_dtype())
    if _checks.is_concrete(scale) and _checks.is_concrete(spacing):
        g = np.asarray(spacing, np.float64)
        if not (np.all(g > 0) and np.all(np.exp2(np.round(np.log2(g))) == g)):
            raise ValueError(f"spacing must be a positive power of two, got {spacing!r}.")
        exact._check_scale(np.asarray(scale, np.float64) / g)
    return _grid_laplace_jit(key, x, jnp.asarray(scale, x.dtype), jnp.asarray(spacing, x.dtype))


_grid_laplace_jit = jax.jit(_grid_laplace)


# ------------------------------------------------------------------------------------------------
# Exact exponential mechanism (integer scores)
# ------------------------------------------------------------------------------------------------
_MAX_DISTANCE = 2**24 - 1  # score distances are clamped here (float32 holds them exactly)


def _score_grid(epsilon, sensitivity):
    """Spacing γ_s of the integer scores: ≤ Δ/256, coarser at tiny ε so that c·M ≥ 64 (public values only)."""
    steps = jnp.clip(epsilon * (_MAX_DISTANCE / 128.0) - 2.0, 1.0, 256.0)  # Δ/γ_s at most this
    return jnp.exp2(jnp.floor(jnp.log2(sensitivity / steps)))


def _exponential_exact(key, scores, epsilon, sensitivity):
    """Traceable core of `exponential_exact` over the last axis of ``scores [k]`` (one draw)."""
    dtype = scores.dtype
    eps = jnp.asarray(epsilon, dtype)
    sens = jnp.asarray(sensitivity, dtype)
    gamma = _score_grid(eps, sens)
    qs = jnp.round(scores / gamma)  # integer-valued floats (−inf/NaN: excluded)
    allowed = jnp.isfinite(qs)
    best = jnp.max(jnp.where(allowed, qs, -jnp.inf))
    # distance to the best, clamped: max(q_i, q* − M) has the sensitivity of q (exact below 2^24)
    dist = jnp.where(allowed, jnp.minimum(best - qs, float(_MAX_DISTANCE)), 0.0).astype(jnp.int32)
    # |ΔQ| ≤ Δ/γ_s + 1 for rounded scores; + 1/4 covers float error in computing them (≪ γ_s/4)
    delta_q = jnp.ceil(sens / gamma + 0.25) + 1.0
    c = eps / (2.0 * delta_q) * jnp.asarray(1.0 - 2.0**-20, dtype)  # rounded down: never more than ε
    rate = jnp.minimum(jnp.floor(c.astype(jnp.float32) * jnp.float32(2.0**32)), jnp.float32(4294967040.0))
    return exact.exponential_integer(key, dist, allowed, rate.astype(jnp.uint32))


def exponential_exact(
    key: jax.Array,
    scores: Float[Array, " k"],
    *,
    epsilon: float,
    sensitivity: float,
) -> Int[Array, ""]:
    """The exponential mechanism sampled exactly: index i with probability ∝ ``exp(ε·Q_i / (2Δ_Q))``.

    The scores are rounded to integers ``Q_i = round(score_i/γ_s)`` on a power-of-two grid γ_s ≤ Δ/256
    (public: from ε and Δ), so their sensitivity is ``Δ_Q = ⌈Δ/γ_s + 1/4⌉ + 1`` (rounding adds ≤ 1;
    the 1/4 covers float error in computing the scores). Distances to the best score are clamped at
    2²⁴ − 1 units (``max(Q_i, Q* − M)`` has the same sensitivity). The draw uses only uniform 32-bit
    words and exact integer comparisons (`jaxdp.exact.exponential_integer`), with the rate
    ``ε/(2Δ_Q)`` rounded *down* to a multiple of 2⁻³²: never more than ε.

    Privacy: ε-DP when every score has sensitivity ≤ Δ (McSherry & Talwar 2007), with no float δ.
    −inf / NaN scores are excluded (the candidate set must not depend on private data).

    Args:
      key: typed PRNG key. scores: ``[k]`` floats, higher is better. epsilon: ε > 0. sensitivity: Δ > 0.

    Returns:
      int32 scalar index.
    """
    _checks.key(key)
    scores = _check_exp_args(scores, epsilon, sensitivity)
    if scores.ndim != 1:
        raise ValueError(f"exponential_exact draws one index from scores [k]; vmap for batches (got {scores.shape}).")
    return _exponential_exact_jit(key, scores, jnp.asarray(epsilon, scores.dtype), jnp.asarray(sensitivity, scores.dtype))


_exponential_exact_jit = jax.jit(_exponential_exact)


def _logits(scores: jax.Array, factor: jax.Array) -> jax.Array:
    """``factor · score`` with NaN scores mapped to -inf (never selected); stable for any magnitude."""
    logits = factor * scores
    return jnp.where(jnp.isnan(logits), -jnp.inf, logits)


def _exponential(key: jax.Array, scores: jax.Array, factor: jax.Array) -> jax.Array:
    """Traceable core: sample an index ∝ exp(factor · score) along the last axis (Gumbel-max)."""
    return jax.random.categorical(key, _logits(scores, factor), axis=-1)


def _last_positive(w: jax.Array) -> jax.Array:
    """Index of the last entry > 0 along the last axis (0 if none)."""
    size = w.shape[-1]
    return size - 1 - jnp.argmax(w[..., ::-1] > 0, axis=-1)


_GROUP = 16  # candidates per group in the two-stage draw


def _categorical_2d(key: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Traceable core: draw (row, col) with probability ∝ exp(logits[row, col]); shape ``[R, C]``.

    Two-stage inverse-CDF sampling in log space. ``w = exp(logits - max)`` (so scores of any
    magnitude are safe; -inf and NaN get weight 0); the R·C candidates are cut into groups of
    `_GROUP`; a group is drawn by its total weight, then a candidate inside it. Two uniforms and
    O(R·C) work instead of R·C Gumbels, which makes Algorithm 1 several times faster on CPU.

    Float caveat (as for Gumbel-max in float32): a candidate whose probability is below the
    uniform's resolution (≈ 6e-8 relative to its stage's total weight in float32, 1e-16 in
    float64) is drawn with a rounded probability; candidates of weight exactly 0 are never drawn.
    """
    return _categorical_2d_from(_categorical_uniforms(key, logits.dtype), logits)


def _categorical_uniforms(key: jax.Array, dtype) -> jax.Array:
    """The randomness of `_categorical_2d`: two independent uniforms on [0, 1), shape ``[2]``.

    Drawing them apart from their use lets a `lax.scan` take all its random numbers from one
    vectorized draw before the loop (on CPU, JAX lowers threefry to a rolled loop, which costs
    several µs per call inside a scan step).
    """
    k_group, k_item = jax.random.split(key)
    return jnp.stack([jax.random.uniform(k_group, (), dtype), jax.random.uniform(k_item, (), dtype)])


def _categorical_2d_from(u: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`_categorical_2d` with its two uniforms drawn beforehand (`_categorical_uniforms`)."""
    rows, cols = logits.shape
    flat = logits.reshape(-1)
    flat = jnp.where(jnp.isnan(flat), -jnp.inf, flat)
    w = jnp.exp(flat - jnp.max(flat))
    size = w.shape[0]
    groups = -(-size // _GROUP)
    if groups == 1:  # the group stage would always pick group 0: skip it (same draw, fewer ops)
        idx = _inverse_cdf(u[1], w)
        return idx // cols, idx % cols
    w = jnp.pad(w, (0, groups * _GROUP - size)).reshape(groups, _GROUP)
    group_w = jnp.sum(w, axis=-1)
    g = _inverse_cdf(u[0], group_w)
    i = _inverse_cdf(u[1], w[g])
    idx = g * _GROUP + i
    return idx // cols, idx % cols


def exponential_uniforms(key: jax.Array, dtype=None) -> jax.Array:
    """The two uniforms `exponential_drawn` consumes (drawn ahead, e.g. for a whole scan). Traceable."""
    return _categorical_uniforms(key, _checks.float_dtype() if dtype is None else np.dtype(dtype))


def exponential_drawn(u, scores, *, epsilon, sensitivity) -> tuple[jax.Array, jax.Array]:
    """The exponential mechanism ∝ ``exp(ε·score/(2Δ))`` over a 2-D score table ``[R, C]``, from the
    two uniforms of `exponential_uniforms`; returns (row, col). Traceable core of the fast float sampler.

    Float caveat (documented δ): the two-stage inverse CDF resolves probabilities to the uniform's
    resolution, 2⁻²⁴ of a stage's total in float32 (2⁻⁵³ in float64): a candidate whose probability
    is below that relative to its group may be drawn with a rounded (possibly zero) probability. The
    resulting δ per draw is at most (groups + 16)·2⁻²³ in float32 (`noise="grid"` samples exactly).
    """
    factor = jnp.asarray(epsilon, scores.dtype) / (2.0 * jnp.asarray(sensitivity, scores.dtype))
    return _categorical_2d_from(u, factor * scores)


def _inverse_cdf(u: jax.Array, w: jax.Array) -> jax.Array:
    """Index drawn with probability ∝ w (1-D, w ≥ 0, some w > 0) by a uniform u on [0, 1);
    never an index with w = 0."""
    cdf = _prefix.cumsum(w)
    u = u * cdf[-1]
    return jnp.minimum(jnp.sum(cdf <= u), _last_positive(w))


def _check_exp_args(scores, epsilon, sensitivity):
    _checks.positive_scalar("epsilon", epsilon)
    if _checks.is_concrete(sensitivity):
        s = np.asarray(sensitivity, dtype=np.float64)
        if not (np.all(np.isfinite(s)) and np.all(s > 0)):
            raise ValueError("sensitivity must be finite and > 0.")
    if not hasattr(scores, "shape"):
        scores = np.asarray(scores)
    if scores.ndim < 1 or scores.shape[-1] < 1:
        raise ValueError(f"scores must have shape [..., k] with k >= 1 candidates, got {tuple(scores.shape)}.")
    dt = np.dtype(scores.dtype)
    if not np.issubdtype(dt, np.floating):
        scores = jnp.asarray(scores).astype(_checks.float_dtype())
    return jnp.asarray(scores)


def exponential(
    key: jax.Array,
    scores: Float[Array, "*batch k"],
    *,
    epsilon: float,
    sensitivity: float | Float[Array, "*batch"],
) -> Int[Array, "*batch"]:
    """The exponential mechanism: pick index i with probability ∝ ``exp(ε·score_i / (2Δ))``.

    Sampling uses the Gumbel-max trick (`jax.random.categorical`) on the logits
    ``ε·score/(2Δ)``, so it never exponentiates a score: scores of magnitude 1e15 (or -inf for
    excluded candidates) are handled exactly as the softmax they define. Leading axes are
    independent draws.

    Privacy:
      ε-DP when every score has L1 sensitivity at most Δ over neighbouring inputs (McSherry &
      Talwar 2007). The candidate set must not depend on the private data.

    Args:
      key: typed PRNG key, used once.
      scores: array of shape ``[..., k]``; higher is better.
      epsilon: privacy budget ε > 0 spent by this draw.
      sensitivity: Δ > 0, a scalar or an array broadcastable to the leading shape ``[...]``.

    Returns:
      int32 array of shape ``[...]``: the selected indices.
    """
    _checks.key(key)
    scores = _check_exp_args(scores, epsilon, sensitivity)
    factor = jnp.asarray(epsilon, scores.dtype) / (2.0 * jnp.asarray(sensitivity, scores.dtype))
    return _exponential_jit(key, scores, factor)


@jax.jit
def _exponential_jit(key, scores, factor):
    return _exponential(key, scores, jnp.expand_dims(factor, -1))


def exponential_probabilities(
    scores: Float[Array, "*batch k"],
    *,
    epsilon: float,
    sensitivity: float | Float[Array, "*batch"],
) -> Float[Array, "*batch k"]:
    """The exact selection probabilities of `exponential` (a softmax in log space), shape ``[..., k]``."""
    scores = _check_exp_args(scores, epsilon, sensitivity)
    factor = jnp.asarray(epsilon, scores.dtype) / (2.0 * jnp.asarray(sensitivity, scores.dtype))
    return jax.nn.softmax(_logits(scores, jnp.expand_dims(factor, -1)), axis=-1)


# ------------------------------------------------------------------------------------------------
# One noise choice for every system
# ------------------------------------------------------------------------------------------------
NOISES = ("float", "float64", "grid")
_NOISE_HELP = (
    '"float" (textbook float sampler in the default dtype: fast; float caveats in the README), '
    '"float64" (the same in float64), or "grid" (exact: discrete Laplace on a power-of-two grid and '
    "an exact exponential mechanism; pure ε-DP under finite arithmetic)"
)


def check_noise(noise) -> str:
    """Validate a ``noise=`` choice (``"float32"`` is accepted as an alias of ``"float"``)."""
    if noise == "float32":
        return "float"
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}: {_NOISE_HELP}; got {noise!r}.")
    return noise


def precision(noise: str):
    """Context for a system's public call: ``noise="float64"`` runs it with 64-bit floats (scoped x64)."""
    import contextlib

    return jax.enable_x64(True) if noise == "float64" else contextlib.nullcontext()


def _kernel_noise(noise: str) -> str:
    """What a traceable core needs to know: exact ("grid") or float (the dtype carries float32/64)."""
    return "grid" if noise == "grid" else "float"


def check_grid_ratio(*, epsilon, sensitivity) -> None:
    """Eagerly refuse a ``noise="grid"`` Laplace release whose noise-to-grid ratio cannot be sampled exactly."""
    eps = np.asarray(epsilon, np.float64)
    sens = np.asarray(sensitivity, np.float64)
    gamma = np.exp2(np.floor(np.log2(sens / 256.0)))
    ratio = (sens + gamma) / (eps * gamma)
    if np.any(ratio >= exact.MAX_SCALE) or np.any(ratio < 1.0):
        raise ValueError(
            f'noise="grid" cannot sample this release exactly: its noise-to-grid ratio b/γ is '
            f"{float(np.max(ratio)):.3g} (ε = {float(np.min(eps)):g}), outside [1, 2**29). Use a larger ε, "
            'or noise="float".'
        )


def l2_norm_noise(key: jax.Array, shape, *, dim, epsilon, sensitivity=1.0, dtype=None) -> jax.Array:
    """K-norm noise for the L2 norm: density ∝ ``exp(−ε‖z‖₂/Δ₂)`` on the first `dim` coordinates (float).

    Sampled as ``√g·N(0, I)`` with ``g ~ Gamma((dim + 1)/2, rate (ε/Δ₂)²/2)`` (a Gaussian scale mixture);
    ε-DP for a query of L2 sensitivity Δ₂ = `sensitivity` (Hardt & Talwar 2010). Only ``shape[-1] ≥ dim``
    coordinates are drawn; the caller keeps the first `dim`. Traceable; float sampler only.
    """
    dtype = _checks.float_dtype() if dtype is None else np.dtype(dtype)
    k_gam, k_norm = jax.random.split(key)
    eps = jnp.asarray(epsilon, dtype) / jnp.asarray(sensitivity, dtype)
    g = jax.random.gamma(k_gam, (jnp.asarray(dim).astype(dtype) + 1) / 2, dtype=dtype) * (2.0 / (eps * eps))
    return jnp.sqrt(g) * jax.random.normal(k_norm, tuple(shape), dtype)


def laplace_mechanism(key: jax.Array, x, *, epsilon, sensitivity, noise: str = "float") -> jax.Array:
    """The Laplace mechanism ``x + Lap(Δ/ε)`` elementwise, with the sampler of `noise` (traceable core).

    Privacy: ε-DP for a query of L1 sensitivity Δ. ``noise="grid"``: x is snapped to the grid
    γ = `grid_spacing`(Δ) and exact discrete Laplace noise of scale (Δ + γ)/ε is added (snapping adds
    ≤ γ to the sensitivity), all in integer arithmetic (`grid_laplace`). Float noise: `add_laplace`.
    `epsilon` and `sensitivity` broadcast against x.
    """
    x = jnp.asarray(x)
    if _kernel_noise(noise) == "grid":
        sens = jnp.broadcast_to(jnp.asarray(sensitivity, x.dtype), x.shape)
        gamma = grid_spacing(sens)
        scale = laplace_scale(epsilon=epsilon, sensitivity=sens + gamma, dtype=x.dtype)
        return _grid_laplace(key, x, scale, gamma)
    return add_laplace(key, x, epsilon=epsilon, sensitivity=sensitivity)


def exponential_mechanism(key: jax.Array, scores, *, epsilon, sensitivity, noise: str = "float") -> jax.Array:
    """One draw of the exponential mechanism over ``scores [k]`` (higher is better), ∝ ``exp(ε·s/(2Δ))``.

    Traceable core: float noise uses Gumbel-max (`jax.random.categorical`; float caveat: a
    candidate's probability is resolved to the float resolution of its Gumbel variate), ``"grid"``
    the exact sampler on integer scores (`exponential_exact`). −inf / NaN scores are never drawn.
    Returns a scalar of the default int dtype.
    """
    scores = jnp.asarray(scores)
    int_dtype = jax.dtypes.canonicalize_dtype(jnp.int64)  # the default int (int64 under x64)
    if _kernel_noise(noise) == "grid":
        return _exponential_exact(key, scores, epsilon, sensitivity).astype(int_dtype)
    factor = jnp.asarray(epsilon, scores.dtype) / (2.0 * jnp.asarray(sensitivity, scores.dtype))
    return _exponential(key, scores, factor).astype(int_dtype)


def exponential_segments(key: jax.Array, scores, segment, active, *, epsilon, sensitivity, noise: str = "float"):
    """Independent exponential mechanisms, one per segment: candidates ``[n]`` with segment ids ``[n]``
    (the segment's first index) and an `active` mask; returns, per segment id, the winning index
    (``n`` where a segment has no active candidate). Traceable core (used by P-HP's level steps).

    Float: Gumbel-max per segment. ``"grid"``: exact, by rejection with one proposal per candidate
    slot per round, uniform within its segment (out-of-range draws skipped), accepted with an exact
    exp(−c·distance) coin; the first accepted proposal of a segment in slot order wins.
    """
    scores = jnp.asarray(scores)
    n = scores.shape[0]
    if _kernel_noise(noise) != "grid":
        factor = jnp.asarray(epsilon, scores.dtype) / (2.0 * jnp.asarray(sensitivity, scores.dtype))
        v = jnp.where(active, factor * scores + jax.random.gumbel(key, (n,), scores.dtype), -jnp.inf)
        best = jax.ops.segment_max(v, segment, num_segments=n)
        idx = jnp.arange(n)
        return jax.ops.segment_min(jnp.where(active & (v == best[segment]), idx, n), segment, num_segments=n)
    return _exponential_segments_exact(key, scores, segment, active, epsilon, sensitivity)


def _exponential_segments_exact(key, scores, segment, active, epsilon, sensitivity):
    n = scores.shape[0]
    dtype = scores.dtype
    eps = jnp.asarray(epsilon, dtype)
    sens = jnp.asarray(sensitivity, dtype)
    gamma = _score_grid(eps, sens)
    qs = jnp.where(active, jnp.round(scores / gamma), -jnp.inf)
    allowed = active & jnp.isfinite(qs)
    best = jax.ops.segment_max(jnp.where(allowed, qs, -jnp.inf), segment, num_segments=n)
    dist = jnp.where(allowed, jnp.minimum(best[segment] - qs, float(_MAX_DISTANCE)), 0.0).astype(jnp.uint32)
    delta_q = jnp.ceil(sens / gamma + 0.25) + 1.0
    c = eps / (2.0 * delta_q) * jnp.asarray(1.0 - 2.0**-20, dtype)
    rate = jnp.minimum(jnp.floor(c.astype(jnp.float32) * jnp.float32(2.0**32)), jnp.float32(4294967040.0))
    x_hi, x_lo = exact._mul_u32(dist, jnp.broadcast_to(rate.astype(jnp.uint32), (n,)))
    idx = jnp.arange(n, dtype=jnp.int32)
    # each segment lists its allowed candidates by rank; a proposal picks a uniform rank
    rank = jnp.cumsum(allowed.astype(jnp.int32)) - 1
    first_rank = jax.ops.segment_min(jnp.where(allowed, rank, n), segment, num_segments=n)
    count = jax.ops.segment_sum(allowed.astype(jnp.int32), segment, num_segments=n)
    by_rank = jnp.zeros((n,), jnp.int32).at[jnp.where(allowed, rank, n)].set(idx, mode="drop")
    bits = jnp.ceil(jnp.log2(jnp.maximum(count, 2).astype(jnp.float32))).astype(jnp.uint32)  # per segment
    slot_seg = segment
    has = count[slot_seg] > 0
    winner0 = jnp.where(count > 0, -1, n)  # per segment id: −1 undecided, n none

    def cond(st):
        return jnp.any(st[0] < 0)

    def body(st):
        winner, rnd = st
        k_prop, k_coin = jax.random.split(jax.random.fold_in(key, rnd))
        u = jax.random.bits(k_prop, (n,), jnp.uint32)
        b = bits[slot_seg]
        r = (u >> (32 - b)).astype(jnp.int32)
        valid = has & (r < count[slot_seg]) & (winner[slot_seg] < 0)
        cand = by_rank[jnp.minimum(first_rank[slot_seg] + r, n - 1)]
        heads = exact._run_coins(k_coin, x_hi[cand], x_lo[cand]) & valid
        got = jax.ops.segment_min(jnp.where(heads, idx, n), slot_seg, num_segments=n)  # first slot that won
        new = jnp.where(got < n, cand[jnp.minimum(got, n - 1)], -1)
        return jnp.where(winner < 0, new, winner), rnd + 1

    winner, _ = jax.lax.while_loop(cond, body, (winner0.astype(jnp.int32), jnp.zeros((), jnp.uint32)))
    return winner.astype(jax.dtypes.canonicalize_dtype(jnp.int64))
