"""The Laplace mechanism: float samplers, the exact grid sampler, and L2 (K-norm) noise."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxdp import _validate
from jaxdp.mechanisms import exact
from jaxdp.mechanisms.noise import check_grid_ratio, check_noise, kernel_noise

__all__ = ['laplace_scale', 'laplace_noise', 'standard_laplace', 'standard_gumbel', 'standard_gumbel_from_uniform', 'add_standard_laplace', 'add_laplace', 'laplace', 'grid_spacing', 'grid_laplace', 'l2_norm_noise', 'laplace_mechanism', 'grid_laplace_core']


# Scales are computed in floating point; rounding could make ``Δ/b`` exceed ε by an ulp or two. Every
# Laplace scale in jaxdp is therefore inflated by this many ulps of its dtype (a relative 1.9e-6 in
# float32), so the privacy loss never exceeds the stated ε.
_MARGIN_ULPS = 16


def _budget_shrink(dtype) -> jax.Array:
    """``1 − 16·ulp`` of `dtype`: the factor a budget ε (or ε/Δ) is multiplied by where it is used directly (the
    exponential mechanism's ε/(2Δ), the L2 noise's ε/Δ), the margin `laplace_scale` puts on Δ/ε."""
    return jnp.asarray(1.0 - _MARGIN_ULPS * float(np.finfo(np.dtype(dtype)).eps), dtype)


def laplace_scale(*, epsilon, sensitivity, dtype=None):
    """The Laplace scale ``b = Δ/ε`` (times ``1 + 16·ulp``), so that ``Lap(b)`` is ε-DP for L1 sensitivity Δ.

    Traceable (works on traced ε and Δ); no validation. `dtype` defaults to the default float dtype.
    """
    dtype = _validate.float_dtype() if dtype is None else np.dtype(dtype)
    margin = 1.0 + _MARGIN_ULPS * float(np.finfo(dtype).eps)
    return (jnp.asarray(sensitivity, dtype) / jnp.asarray(epsilon, dtype)) * jnp.asarray(margin, dtype)


def laplace_noise(key: jax.Array, shape, *, epsilon, sensitivity, dtype=None) -> jax.Array:
    """Noise ``Lap(Δ/ε)`` of the given shape (textbook float sampler). Traceable core, no validation.

    Privacy: added to a query of L1 sensitivity Δ it gives ε-DP (Dwork & Roth, Thm. 3.6); the float
    sampler has the floating-point caveats of Mironov (2012) (see the README's privacy section).
    `epsilon` and `sensitivity` broadcast against `shape`.
    """
    _validate.mechanism_core(key, epsilon=epsilon, sensitivity=sensitivity)
    dtype = _validate.float_dtype() if dtype is None else np.dtype(dtype)
    # found in review: ε = 1e-39 gave ±inf and Δ = 1e-45 a zero scale (the data released as it is) through
    # `add_laplace` and `laplace_noise`, where `laplace_mechanism` refuses
    _check_scale_range(epsilon, sensitivity, dtype if dtype in (np.float32, np.float64) else None)  # (float16: the
    # default float's range is checked; its own would refuse ordinary scales, found in review)
    scale = laplace_scale(epsilon=epsilon, sensitivity=sensitivity, dtype=dtype)
    if _validate.all_concrete(key, scale):  # called eagerly: one compiled program (found in review:
        # the unrolled Threefry's ≈ 100 operations ran one by one, 2.4 s at the first call, 50–70 ms at every later one)
        return _laplace(key, scale, _validate.shape(shape), dtype)
    return scale * _standard(key, _validate.shape(shape), dtype)


def standard_laplace(key: jax.Array, shape, dtype=None) -> jax.Array:
    """Standard Laplace variates ``Lap(1)`` drawn ahead of use (a scan draws all its randomness in
    one vectorized call); scale them with `add_standard_laplace`. Traceable."""
    _validate.mechanism_core(key)
    dtype = _validate.float_dtype() if dtype is None else np.dtype(dtype)
    return _standard(key, _validate.shape(shape), dtype)


def _standard(key: jax.Array, shape: tuple, dtype) -> jax.Array:
    """``jax.random.laplace(key, shape, dtype)``, bit for bit, with the words from the unrolled Threefry on CPU.

    JAX lowers its Threefry with rolled rounds on CPU (≈ 3.5× slower per word here); `exact.threefry_bits`
    gives the same words, and the transform below is JAX's own (uniform on ``[−1 + epsneg, 1)`` from the
    mantissa bits, then ``sign(u)·log1p(−|u|)``), so a release does not depend on which path ran (tested
    bit-identical; other key implementations get their own words from `jax.random.bits`, so the same draws as
    JAX too). Elsewhere (GPU, float16) JAX's sampler is called directly.
    """
    if not _unrolled(dtype):
        return jax.random.laplace(key, shape, dtype)
    info = np.finfo(np.dtype(jax.dtypes.canonicalize_dtype(dtype)))
    u = _uniform(key, shape, dtype, -1.0 + info.epsneg, 1.0)
    return jnp.sign(u) * jnp.log1p(-jnp.abs(u))


def standard_gumbel(key: jax.Array, shape, dtype=None) -> jax.Array:
    """``jax.random.gumbel(key, shape, dtype)``, bit for bit, with the words from the unrolled Threefry on CPU
    (as `standard_laplace`; the Gumbel-max exponential mechanism draws its noise here). Traceable."""
    dtype = _validate.float_dtype() if dtype is None else np.dtype(dtype)
    shape = _validate.shape(shape)
    if not _unrolled(dtype) or jax.config.jax_high_dynamic_range_gumbel:
        return jax.random.gumbel(key, shape, dtype)
    tiny = float(np.finfo(np.dtype(jax.dtypes.canonicalize_dtype(dtype))).tiny)
    return standard_gumbel_from_uniform(_uniform(key, shape, dtype, tiny, 1.0))


def standard_gumbel_from_uniform(u: jax.Array) -> jax.Array:
    """The Gumbel variate ``−log(−log u)`` of `standard_gumbel` from its uniform (in the dtype of `u`).

    Float caveat (README, Samplers): in float32 `u` takes the 2²³ values j·2⁻²³ (j = 0 read as the smallest
    normal), and the variates' CDF is within D = 1.62·10⁻⁷ of the continuous Gumbel's (Kolmogorov distance,
    computed by enumerating them all with XLA:CPU's log; ``tests/mechanisms/test_exact.py``; another log
    implementation gives another D, e.g. 1.95·10⁻⁷ with NumPy's). If the perturbed logits l + G are compared
    exactly, a Gumbel-max draw over k candidates is within k·D of the exact exponential mechanism on every
    output set: δ ≤ (1 + e^ε)·k·D per draw. The float rounding of l + G (2⁻²⁴·|l| in float32) is not covered.
    """
    return -jnp.log(-jnp.log(u))


def _unrolled(dtype) -> bool:
    """Whether the unrolled-Threefry path applies: on CPU, for float32/float64 (elsewhere JAX's own sampler)."""
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(dtype))
    return jax.default_backend() == "cpu" and dtype in (np.dtype(np.float32), np.dtype(np.float64))


def _uniform(key, shape, dtype, lo, hi):
    """``jax.random.uniform(key, shape, dtype, lo, hi)``, bit for bit: JAX's mantissa transform on the words of
    `exact.threefry_bits` (the same words as `jax.random.bits`)."""
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(dtype))
    bits = exact.threefry_bits(key, shape, dtype.itemsize * 8)
    info = np.finfo(dtype)
    one = np.array(1.0, dtype)
    float_bits = (bits >> (info.bits - info.nmant)) | jnp.asarray(one.view(bits.dtype), bits.dtype)
    floats = jax.lax.bitcast_convert_type(float_bits, dtype) - jnp.asarray(one, dtype)
    lo, hi = jnp.asarray(lo, dtype), jnp.asarray(hi, dtype)
    return jnp.maximum(lo, floats * (hi - lo) + lo)


def add_standard_laplace(z, x, *, epsilon, sensitivity) -> jax.Array:
    """``x + laplace_scale(ε, Δ)·z`` for standard Laplace variates z (`standard_laplace`). Traceable."""
    _validate.budget("epsilon", epsilon)
    _validate.budget("sensitivity", sensitivity)
    x = jnp.asarray(x)
    _check_scale_range(epsilon, sensitivity, x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else None)
    return x + laplace_scale(epsilon=epsilon, sensitivity=sensitivity, dtype=x.dtype) * z


def add_laplace(key: jax.Array, x, *, epsilon, sensitivity) -> jax.Array:
    """``x + Lap(Δ/ε)`` elementwise (the Laplace mechanism; float sampler). Traceable core."""
    x = jnp.asarray(x)
    return x + laplace_noise(key, x.shape, epsilon=epsilon, sensitivity=sensitivity, dtype=x.dtype)


def _float_dtype_of(x) -> np.dtype:
    dt = getattr(x, "dtype", None)  # Python scalars take the default float dtype
    if dt is None or not np.issubdtype(np.dtype(dt), np.floating):
        return _validate.float_dtype()
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
      Mironov (2012); the exact, float-safe sampler is `grid_laplace` (``noise="grid"``; DESIGN note 5).

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
    _validate.key(key, max_ndim=0)
    if _validate.is_concrete(scale):
        s = np.asarray(scale, dtype=np.float64)
        if not (np.all(np.isfinite(s)) and np.all(s > 0)):
            raise ValueError("Laplace scale must be finite and > 0 everywhere.")
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(dtype)) if dtype is not None else _float_dtype_of(scale)
    if _validate.is_concrete(scale) and np.any(np.asarray(scale, np.float64) < _min_scale(dtype)):
        raise ValueError(f"Laplace scale below {_min_scale(dtype):.3g}, where {dtype}'s noise nears its smallest normal "
                         "number and flushes to 0 (no noise); rescale the problem.")
    hi = float(np.finfo(dtype).max) * 2.0**-6  # the noise's tail (≤ 16.6 scales in float32, 36.7 in float64) stays finite
    if _validate.is_concrete(scale) and np.any(np.asarray(scale, np.float64) > hi):  # (found in review: ±inf noise)
        raise ValueError(f"Laplace scale above {hi:.3g}, where {dtype}'s noise overflows to ±inf; rescale the problem, "
                         "or use float64.")
    shape = _validate.shape(shape if shape is not None else np.shape(scale))
    return _laplace(key, jnp.asarray(scale, dtype), shape, dtype)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _laplace(key, scale, shape, dtype):
    return scale * _standard(key, shape, dtype)


def grid_spacing(sensitivity):
    """Grid spacing γ of the float-safe sampler: the largest power of two ≤ sensitivity / 256 (exactly a power of
    two: `ldexp`, where float64 `exp2` gave 0.12500000000000003)."""
    x = jnp.asarray(sensitivity)
    return jnp.ldexp(jnp.ones_like(x), jnp.floor(jnp.log2(x / 256.0)).astype(jnp.int32))


def grid_laplace_core(key: jax.Array, x: jax.Array, scale: jax.Array, spacing: jax.Array) -> jax.Array:
    """Traceable core of `grid_laplace`: ``γ·(round(x/γ) + Z)``, Z exact discrete Laplace (`jaxdp.mechanisms.exact`)."""
    return exact.snap_and_add(key, x, scale=scale, spacing=spacing)


_grid_laplace_jit = jax.jit(grid_laplace_core)


def grid_laplace(key: jax.Array, x, *, scale, spacing) -> jax.Array:
    """Float-safe, exact Laplace: ``round_γ(x) + γ·Z`` with Z an exact discrete Laplace integer.

    Every output is an exact multiple of the power-of-two spacing γ, whatever the input, so two
    neighbouring inputs share the same output support: the floating-point "porous support" of the
    textbook sampler (Mironov 2012) is gone. Z has ``P(Z = z) ∝ exp(−|z|/R)`` exactly, with R the
    scale ratio b/γ rounded up to a representable value (relative excess < 2⁻²¹; `jaxdp.mechanisms.exact`),
    drawn with integer arithmetic only (Canonne, Kamath & Steinke 2020); the sum ``round(x/γ) + Z``
    is formed exactly in integers before it becomes a float, so rounding reveals nothing.

    Privacy:
      Snapping moves each value by at most γ/2, so a query of L1 sensitivity Δ whose neighbours differ in at
      most m coordinates has sensitivity ≤ Δ + m·γ after snapping: calibrate ``scale ≥ (Δ + m·γ)/ε``
      (`laplace_mechanism(..., noise="grid", coordinates=m)` does; the codec adds each coefficient's γ_k ≤ GS_k/256
      to its sensitivity). Found in review: this said Δ + γ, which for a vector of m = 1,000 moved coordinates
      allowed a loss of 3.9ε.
      Pure ε-DP, no δ: the only departures from the ideal distribution are integer widths
      (probability < 10⁻¹⁰⁰⁰⁰⁰, see `jaxdp.mechanisms.exact`).

    Args:
      key: typed PRNG key. x: values ``[...]``. scale: Laplace scale b > 0 (broadcastable).
      spacing: grid spacing γ > 0, a power of two (broadcastable); see `grid_spacing`.

    Returns:
      Array like `x`, every entry an exact multiple of γ (|x|/γ is clamped to 2²⁹).

    Raises:
      ValueError: a concrete ratio scale/spacing outside [1, 2²⁹) (it cannot be sampled exactly in
      32-bit integers: choose a coarser spacing), or a spacing that is not a power of two.
    """
    _validate.key(key, max_ndim=0)
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(_validate.float_dtype())
    if _validate.is_concrete(scale) and _validate.is_concrete(spacing):
        g = np.asarray(spacing, np.float64)
        if not (np.all(g > 0) and np.all(np.exp2(np.round(np.log2(g))) == g)):
            raise ValueError(f"spacing must be a positive power of two, got {spacing!r}.")
        exact._check_scale(np.asarray(scale, np.float64) / g)
    # one compiled program per size, not per shape (the sampler works on the flattened values anyway, so
    # the draws are the same)
    flat = [jnp.asarray(v, x.dtype) for v in (scale, spacing)]
    flat = [v if v.ndim == 0 else jnp.broadcast_to(v, x.shape).reshape(-1) for v in flat]
    return _grid_laplace_jit(key, x.reshape(-1), *flat).reshape(x.shape)


def l2_norm_noise(key: jax.Array, shape, *, dim, epsilon, sensitivity=1.0, dtype=None) -> jax.Array:
    """K-norm noise for the L2 norm: density ∝ ``exp(−ε‖z‖₂/Δ₂)`` on the first `dim` coordinates (float).

    Sampled as ``√g·N(0, I)`` with ``g ~ Gamma((dim + 1)/2, rate (ε/Δ₂)²/2)`` (a Gaussian scale mixture);
    ε-DP for a query of L2 sensitivity Δ₂ = `sensitivity` (Hardt & Talwar 2010). Only ``shape[-1] ≥ dim``
    coordinates are drawn; the caller keeps the first `dim`. Traceable; float sampler only.

    The shape (dim + 1)/2 is a whole or half integer, so g is drawn exactly in distribution as a sum of
    ⌊(dim + 1)/2⌋ standard exponentials (a prefix sum of ⌊shape[-1]/2⌋ + 1 of them, indexed by dim) plus,
    for even dim, Z²/2 with Z ~ N(0, 1) — a few vector ops, where `jax.random.gamma`'s rejection loop
    took ≈ 0.8 s to compile on the 2-core CPU (most of SPA's first call).
    """
    _validate.mechanism_core(key, epsilon=epsilon, sensitivity=sensitivity)
    dtype = _validate.float_dtype() if dtype is None else np.dtype(dtype)
    _check_scale_range(epsilon, sensitivity, dtype)  # (found in review: ε = 10³⁹ in float32 gave zero noise)
    shape = tuple(shape)
    d0 = np.asarray(dim) if _validate.is_concrete(dim) else None
    if d0 is not None and not (d0.ndim == 0 and d0.dtype.kind in "iu" and 1 <= int(d0) <= (shape or (0,))[-1]):
        # found in review: dim = 10 with shape[-1] = 3 drew g for 10 coordinates and kept 3 (variance 4.97, not 11)
        raise ValueError(f"dim must be an int in [1, shape[-1]] = [1, {(shape or (0,))[-1]}], got {dim!r}: the noise "
                         "is drawn on shape[-1] ≥ dim coordinates.")
    if _validate.all_concrete(key, dim, epsilon, sensitivity):  # called eagerly: one compiled
        # program (found in review: op by op, the first call took 4.9 s and every later one 50–70 ms)
        return _l2_norm_noise_jit(key, shape, jnp.asarray(dim), jnp.asarray(epsilon, dtype),
                                  jnp.asarray(sensitivity, dtype), dtype)
    return _l2_norm_noise(key, shape, dim, epsilon, sensitivity, dtype)


def _l2_norm_noise(key, shape, dim, epsilon, sensitivity, dtype):
    k_exp, k_half, k_norm = jax.random.split(key, 3)
    # ε/Δ rounded down by the Laplace scales' 16-ulp margin (found in review: without it, float32 spent up to
    # 1 + 7.9·10⁻⁸ times ε, and SPA's float64 release 1 + 5·10⁻¹⁷)
    eps = jnp.asarray(epsilon, dtype) / jnp.asarray(sensitivity, dtype) * _budget_shrink(dtype)
    m = shape[-1] // 2 + 1
    if _unrolled(dtype):  # standard exponentials (JAX's transform, words from the unrolled Threefry)
        e = -jnp.log1p(-_uniform(k_exp, (m,), dtype, 0.0, 1.0))
    else:
        e = jax.random.exponential(k_exp, (m,), dtype)
    sums = jnp.concatenate([jnp.zeros((1,), dtype), jnp.cumsum(e)])
    dim = jnp.asarray(dim)
    z0 = jax.random.normal(k_half, (), dtype)
    g = sums[jnp.clip((dim + 1) // 2, 0, m)] + jnp.where(dim % 2 == 0, 0.5 * z0 * z0, 0.0)
    return jnp.sqrt(g * (2.0 / (eps * eps))) * jax.random.normal(k_norm, shape, dtype)


_l2_norm_noise_jit = jax.jit(_l2_norm_noise, static_argnums=(1, 5))


def _min_scale(dtype) -> float:
    """The smallest Laplace scale whose draws stay normal numbers: a scale just above the smallest normal number
    times a standard variate below 1 is subnormal, which XLA on CPU flushes to 0 (found in review: at scale 2·10⁻³⁸
    in float32, 44 % of the entries were released without noise). Draws as small as ≈ 2⁻²⁴ (float32) keep theirs."""
    info = np.finfo(dtype)
    return float(info.tiny) * 2.0 ** (info.nmant + 2)


def _check_scale_range(epsilon, sensitivity, dtype) -> None:
    """Where ε and Δ are concrete, refuse a scale Δ/ε that underflows or overflows the noise's dtype, and an ε or Δ
    that the dtype itself cannot hold (found in review: a scale below its smallest normal number flushed to 0 and
    released the data unchanged; so did ε = 10³⁹ or Δ = 10⁻³⁹ in float32 with an ordinary Δ/ε, as the kernel casts
    each to the dtype: ε became inf, Δ was flushed to 0)."""
    if not (_validate.is_concrete(epsilon) and _validate.is_concrete(sensitivity)):
        return
    dtype = np.dtype(_validate.float_dtype() if dtype is None else dtype)
    with np.errstate(all="ignore"):
        eps, sens = np.asarray(epsilon, np.float64), np.asarray(sensitivity, np.float64)
        scale = sens / eps
    info = np.finfo(dtype)
    lo, hi = _min_scale(dtype), float(info.max) * 2.0**-20
    if np.any(~np.isfinite(scale)) or np.any(scale < lo) or np.any(scale > hi):
        raise ValueError(f"the Laplace scale Δ/ε is outside what {dtype} holds as noise (between {lo:.3g} and "
                         f"{hi:.3g}): rescale the data or ε, or use float64.")
    for name, v in (("epsilon", eps), ("sensitivity", sens)):
        if np.any(v < float(info.tiny)) or np.any(v > hi):
            raise ValueError(f"{name} is outside what {dtype} holds (between {float(info.tiny):.3g} and {hi:.3g}): "
                             "rescale the data or ε, or use float64.")


def laplace_mechanism(key: jax.Array, x, *, epsilon, sensitivity, noise: str = "float", coordinates=None) -> jax.Array:
    """The Laplace mechanism ``x + Lap(Δ/ε)`` elementwise, with the sampler of `noise` (traceable core).

    Privacy: ε-DP for a query of L1 sensitivity Δ. ``noise="grid"``: x is snapped to the grid γ and exact
    discrete Laplace noise of scale (Δ + m·γ)/ε is added, all in integer arithmetic (`grid_laplace`), where m
    is `coordinates`, the most coordinates one neighbour can change: snapping can add up to γ to each changed
    coordinate's difference, so the snapped query's sensitivity is ≤ Δ + m·γ. γ = `grid_spacing`(Δ/m) keeps
    m·γ ≤ Δ/256. `coordinates`: None (default) = every entry of x (safe for a joint L1 sensitivity over the
    whole vector); 1 where Δ is per coordinate (a histogram bin, one count, per-coordinate budgets); may be a
    traced value (EFPA: the z coordinates it keeps, a private choice). A review
    found the earlier (Δ + γ)/ε calibration spent up to 5.6ε on vectors whose coordinates all move (the
    compressive mechanism, k = 2,000). Float noise: `add_laplace`. `epsilon` and `sensitivity` broadcast
    against x.

    Assumed, not checked (x is usually traced): x is the query's value to within far less than γ, i.e. its dtype
    resolves |x|/γ. Float32 does only below 2²⁴; callers whose |x|/γ can exceed that pass float64 (histograms,
    w-event, HVC's frame means — found in review: a float32 mean rounded before the snap spent 1.06·ε).
    """
    _validate.mechanism_core(key, epsilon=epsilon, sensitivity=sensitivity)
    noise = check_noise(noise)  # found in review: a misspelt "gird" silently gave float noise
    x = jnp.asarray(x)
    _check_scale_range(epsilon, sensitivity, x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else None)
    if kernel_noise(noise) == "grid":
        if all(_validate.is_concrete(v) for v in (epsilon, sensitivity, coordinates)):  # (found in review: a ratio
            # at or above 2**29 — ε = 10⁻⁶, or 2²¹ coordinates at ε = 1 — released NaN, where the systems refuse)
            check_grid_ratio(epsilon=epsilon, sensitivity=sensitivity,
                             coordinates=x.size if coordinates is None else coordinates)
        m = x.size if coordinates is None else jnp.maximum(jnp.asarray(coordinates, x.dtype), 1)  # may be traced
        sens = jnp.broadcast_to(jnp.asarray(sensitivity, x.dtype), x.shape)
        gamma = grid_spacing(sens / m)
        scale = laplace_scale(epsilon=epsilon, sensitivity=sens + m * gamma, dtype=x.dtype)
        return grid_laplace_core(key, x, scale, gamma)
    return add_laplace(key, x, epsilon=epsilon, sensitivity=sensitivity)
