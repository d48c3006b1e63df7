"""The exponential mechanism: Gumbel-max and two-stage float samplers, the exact sampler on
integer scores, and per-segment draws (P-HP)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from jaxdp import _validate
from jaxdp.mechanisms import exact
from jaxdp.mechanisms.laplace import _budget_shrink, standard_gumbel
from jaxdp.mechanisms.noise import check_noise, kernel_noise
from jaxdp.transforms import cumsum

__all__ = ['exponential_exact', 'exponential_uniforms', 'exponential_drawn', 'exponential', 'exponential_probabilities', 'exponential_mechanism', 'exponential_segments', 'exponential_exact_core', 'integer_scores', 'categorical_2d', 'categorical_2d_from', 'categorical_uniforms']




# ------------------------------------------------------------------------------------------------
# Exact exponential mechanism (integer scores)
# ------------------------------------------------------------------------------------------------
_MAX_DISTANCE = 2**24 - 1  # score distances are clamped here (float32 holds them exactly)


def _score_grid(epsilon, sensitivity):
    """Spacing γ_s of the integer scores: ≤ Δ/256, coarser at tiny ε so that c·M ≥ 64 (public values only)."""
    steps = jnp.clip(epsilon * (_MAX_DISTANCE / 128.0) - 2.0, 1.0, 256.0)  # Δ/γ_s at most this
    x = sensitivity / steps  # an exact power of two (`ldexp`; found in review: float32 `exp2` on CPU is not exact
    # for most exponents outside [−14, 12], e.g. 3.8146970382513246e-06 for 2⁻¹⁸)
    return jnp.ldexp(jnp.ones_like(x), jnp.floor(jnp.log2(x)).astype(jnp.int32))


_SPLIT_LIMIT = 2.0**22  # exponential_exact_core(public=...): each integer part is clamped here (sum < 2^23)


def integer_scores(scores, epsilon, sensitivity, public=None):
    """The integer scores the exact exponential mechanism draws from (traceable core, last axis).

    Returns ``(q, allowed, delta_q)``: ``q_i = max(Q_i, Q* − M)`` (integer-valued floats, Q* the best allowed,
    M = 2²⁴ − 1: distances beyond M are clamped, which keeps the sensitivity), `allowed` (the candidates not marked −inf) and
    ``Δ_Q``, the sensitivity of q when every score has sensitivity ≤ Δ. Without `public`,
    ``Q_i = round(score_i/γ_s)``. With `public` (a data-independent term of every score, e.g. a Laplace
    error computed from public tables), the score is ``public_i + score_i`` but the two are rounded apart:
    ``Q_i = max(P_i − P*, −2²²) + clip(round(score_i/γ_s), ±2²²)`` with ``P_i = round(public_i/γ_s)`` and
    P* its largest allowed value. The rounding and clamping of the public part are the same for neighbouring
    inputs, and clipping the private part is 1-Lipschitz, so Δ_Q is unchanged; every value stays below 2²⁴,
    where float32 holds integers exactly. Rounding ``public + score`` in float32 instead rounds at the
    magnitude of the public term, which can be thousands of γ_s: two neighbours' Q then moved by more than
    Δ_Q (found in review for the HVC codec's (t, σ) scores: ≈ 0.5 % of ε past the exact margin). ``-inf`` in
    `public` excludes a candidate; with `public`, which candidates are allowed depends on it alone.
    """
    qs, allowed, delta_q = _rounded_scores(scores, epsilon, sensitivity, public)
    best = jnp.max(jnp.where(allowed, qs, -jnp.inf), axis=-1, keepdims=True)
    q = jnp.where(allowed, best - jnp.minimum(best - qs, float(_MAX_DISTANCE)), -jnp.inf)
    return q, allowed, delta_q


_OVERFLOW_LIMIT = 2.0**100  # finite in float32, far beyond any distance that matters (they clamp at 2²⁴ − 1)


def _rounded_scores(scores, epsilon, sensitivity, public):
    dtype = scores.dtype
    eps = jnp.asarray(epsilon, dtype)
    sens = jnp.asarray(sensitivity, dtype)
    gamma = _score_grid(eps, sens)
    if public is None:
        # only −inf (the caller's exclusion marker) leaves the candidate set: a score or quotient that overflows
        # is clipped (1-Lipschitz; distances to the best are clamped at M below anyway) and NaN is the worst, as
        # with `public` — the data never choose the candidates (found in review: 1e37/γ overflowed in float32
        # and the best candidate was never drawn)
        allowed = scores != -jnp.inf
        qs = jnp.nan_to_num(jnp.round(scores / gamma), nan=-_OVERFLOW_LIMIT)
        qs = jnp.clip(qs, -_OVERFLOW_LIMIT, _OVERFLOW_LIMIT)  # integer-valued floats
    else:
        qp = jnp.round(jnp.asarray(public, dtype) / gamma)
        allowed = jnp.isfinite(qp)  # the candidate set reads the public part only
        qp = qp - jnp.max(jnp.where(allowed, qp, -jnp.inf), axis=-1, keepdims=True)  # public shift
        # the private part clipped (±inf to the limits, NaN to the worst): finite, and 1-Lipschitz where finite
        qt = jnp.clip(jnp.nan_to_num(jnp.round(scores / gamma), nan=-_SPLIT_LIMIT), -_SPLIT_LIMIT, _SPLIT_LIMIT)
        qs = jnp.where(allowed, jnp.maximum(qp, -_SPLIT_LIMIT) + qt, -jnp.inf)
    # |ΔQ| ≤ Δ/γ_s + 1 for rounded scores; + 1/4 covers float error in computing them (≪ γ_s/4)
    return qs, allowed, jnp.ceil(sens / gamma + 0.25) + 1.0


def exponential_exact_core(key, scores, epsilon, sensitivity, public=None):
    """Traceable core of `exponential_exact` over the last axis of ``scores [k]`` (one draw); `public` as in
    `integer_scores` (a data-independent part of every score, rounded apart from the private part)."""
    _validate.budget("epsilon", epsilon)
    _validate.budget("sensitivity", sensitivity)
    dtype = scores.dtype
    eps = jnp.asarray(epsilon, dtype)
    qs, allowed, delta_q = _rounded_scores(scores, epsilon, sensitivity, public)
    best = jnp.max(jnp.where(allowed, qs, -jnp.inf))
    # distance to the best, clamped: max(q_i, q* − M) has the sensitivity of q (exact below 2^24)
    dist = jnp.where(allowed, jnp.minimum(best - qs, float(_MAX_DISTANCE)), 0.0).astype(jnp.int32)
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
    words and exact integer comparisons (`jaxdp.mechanisms.exact.exponential_integer`), with the rate
    ``ε/(2Δ_Q)`` rounded *down* to a multiple of 2⁻³²: never more than ε.

    Privacy: ε-DP when every score has sensitivity ≤ Δ (McSherry & Talwar 2007), with no float δ.
    Only −inf scores (the caller's marker) are excluded, so the candidate set never depends on the scores' values: a
    NaN score counts as the worst possible one and keeps a (small) probability, like any candidate far below the best
    (found in review: this said NaN scores were excluded).

    Args:
      key: typed PRNG key. scores: ``[k]`` floats, higher is better. epsilon: ε > 0. sensitivity: Δ > 0.

    Returns:
      int32 scalar index.
    """
    _validate.key(key, max_ndim=0)
    scores = _check_exp_args(scores, epsilon, sensitivity)
    if scores.ndim != 1:
        raise ValueError(f"exponential_exact draws one index from scores [k]; vmap for batches (got {scores.shape}).")
    if _validate.is_concrete(scores) and not np.isfinite(np.asarray(scores)).any():
        raise ValueError("exponential_exact needs at least one finite score (-inf marks a candidate as excluded).")
    return _exponential_exact_jit(key, scores, jnp.asarray(epsilon, scores.dtype), jnp.asarray(sensitivity, scores.dtype))


_exponential_exact_jit = jax.jit(exponential_exact_core)


def _factor(epsilon, sensitivity, dtype) -> jax.Array:
    """ε/(2Δ), rounded down by 16 ulps of `dtype` (the margin every Laplace scale carries, `laplace_scale`): the
    loss a choice spends is 2Δ·factor ≤ ε even where ε/(2Δ) rounds up in `dtype`. Found in review: without it,
    ε = 1/3 in float32 spent 1 + 3·10⁻⁸ times ε, and a block's float32 budget split into its two choices and its
    Laplace share could sum past the block's budget."""
    return jnp.asarray(epsilon, dtype) / (2.0 * jnp.asarray(sensitivity, dtype)) * _budget_shrink(dtype)


def _logits(scores: jax.Array, factor: jax.Array) -> jax.Array:
    """``factor · score`` with NaN scores mapped to -inf (never selected); stable for any magnitude."""
    logits = factor * scores
    return jnp.where(jnp.isnan(logits), -jnp.inf, logits)


def _exponential(key: jax.Array, scores: jax.Array, factor: jax.Array) -> jax.Array:
    """Traceable core: sample an index ∝ exp(factor · score) along the last axis (Gumbel-max)."""
    logits = _logits(scores, factor)  # jax.random.categorical's Gumbel-max, with the same Gumbel draws
    pick = jnp.argmax(standard_gumbel(key, logits.shape, logits.dtype) + logits, axis=-1)
    # no candidate (every score −inf or NaN): −1, as the exact sampler (found in review: index 0 was returned, a
    # candidate the caller had excluded)
    return jnp.where(jnp.any(logits > -jnp.inf, axis=-1), pick, -1)


def _last_positive(w: jax.Array) -> jax.Array:
    """Index of the last entry > 0 along the last axis (0 if none)."""
    size = w.shape[-1]
    return size - 1 - jnp.argmax(w[..., ::-1] > 0, axis=-1)


_GROUP = 16  # candidates per group in the two-stage draw


def categorical_2d(key: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Traceable core: draw (row, col) with probability ∝ exp(logits[row, col]); shape ``[R, C]``.

    Two-stage inverse-CDF sampling in log space. ``w = exp(logits - max)`` (so scores of any
    magnitude are safe; -inf and NaN get weight 0); the R·C candidates are cut into groups of
    `_GROUP`; a group is drawn by its total weight, then a candidate inside it. Two uniforms and
    O(R·C) work instead of R·C Gumbels, which makes Algorithm 1 several times faster on CPU.

    Float caveat (as for Gumbel-max in float32): a candidate whose probability is below the
    uniform's resolution (≈ 6e-8 relative to its stage's total weight in float32, 1e-16 in
    float64) is drawn with a rounded probability; candidates of weight exactly 0 are never drawn.
    """
    return categorical_2d_from(categorical_uniforms(key, logits.dtype), logits)


def categorical_uniforms(key: jax.Array, dtype) -> jax.Array:
    """The randomness of `categorical_2d`: two independent uniforms on [0, 1), shape ``[2]``.

    Drawing them apart from their use lets a `lax.scan` take all its random numbers from one
    vectorized draw before the loop (on CPU, JAX lowers threefry to a rolled loop, which costs
    several µs per call inside a scan step).
    """
    k_group, k_item = jax.random.split(key)
    return jnp.stack([jax.random.uniform(k_group, (), dtype), jax.random.uniform(k_item, (), dtype)])


def categorical_2d_from(u: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`categorical_2d` with its two uniforms drawn beforehand (`categorical_uniforms`)."""
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
    return categorical_uniforms(key, _validate.float_dtype() if dtype is None else np.dtype(dtype))


def exponential_drawn(u, scores, *, epsilon, sensitivity) -> tuple[jax.Array, jax.Array]:
    """The exponential mechanism ∝ ``exp(ε·score/(2Δ))`` over a 2-D score table ``[R, C]``, from the
    two uniforms of `exponential_uniforms`; returns (row, col). Traceable core of the fast float sampler.

    Float caveat (documented δ): the two-stage inverse CDF resolves probabilities to the uniform's
    resolution, 2⁻²⁴ of a stage's total in float32 (2⁻⁵³ in float64): a candidate whose probability
    is below that relative to its group may be drawn with a rounded (possibly zero) probability. The
    resulting output distribution is within L1 distance (groups + 16)·2⁻²³ of the softmax in float32, so δ per
    draw is at most (1 + e^ε)/2 times that (`noise="grid"` samples exactly).
    """
    _validate.budget("epsilon", epsilon)  # found in review: ε = inf or Δ = 0 always returned (0, 0)
    _validate.budget("sensitivity", sensitivity)
    factor = _factor(epsilon, sensitivity, scores.dtype)
    return categorical_2d_from(u, factor * scores)


def _inverse_cdf(u: jax.Array, w: jax.Array) -> jax.Array:
    """Index drawn with probability ∝ w (1-D, w ≥ 0, some w > 0) by a uniform u on [0, 1);
    never an index with w = 0."""
    cdf = cumsum.cumsum(w)
    u = u * cdf[-1]
    return jnp.minimum(jnp.sum(cdf <= u), _last_positive(w))


def _check_exp_args(scores, epsilon, sensitivity):
    _validate.positive_scalar("epsilon", epsilon)
    _validate.budget("sensitivity", sensitivity)
    if not hasattr(scores, "shape"):
        scores = np.asarray(scores)
    if scores.ndim < 1 or scores.shape[-1] < 1:
        raise ValueError(f"scores must have shape [..., k] with k >= 1 candidates, got {tuple(scores.shape)}.")
    dt = np.dtype(scores.dtype)
    if dt.kind not in "iuf" or dt == np.bool_:  # found in review: text scores ended in a JAX TypeError
        raise TypeError(f"scores must be real numbers (higher is better), got dtype {dt}.")
    if not np.issubdtype(dt, np.floating):
        scores = jnp.asarray(scores).astype(_validate.float_dtype())
    return jnp.asarray(scores)


def exponential(
    key: jax.Array,
    scores: Float[Array, "*batch k"],
    *,
    epsilon: float,
    sensitivity: float | Float[Array, "*batch"],
) -> Int[Array, "*batch"]:
    """The exponential mechanism: pick index i with probability ∝ ``exp(ε·score_i / (2Δ))``.

    Sampling uses the Gumbel-max trick (the draws of `jax.random.categorical`) on the logits
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
    _validate.key(key, max_ndim=0)
    scores = _check_exp_args(scores, epsilon, sensitivity)
    factor = _factor(epsilon, sensitivity, scores.dtype)
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
    factor = _factor(epsilon, sensitivity, scores.dtype)
    return jax.nn.softmax(_logits(scores, jnp.expand_dims(factor, -1)), axis=-1)


def exponential_mechanism(key: jax.Array, scores, *, epsilon, sensitivity, noise: str = "float") -> jax.Array:
    """One draw of the exponential mechanism over ``scores [k]`` (higher is better), ∝ ``exp(ε·s/(2Δ))``.

    Traceable core: float noise uses Gumbel-max (as `jax.random.categorical`; float caveat: a
    candidate's probability is resolved to the float resolution of its Gumbel variate), ``"grid"``
    the exact sampler on integer scores (`exponential_exact`). −inf scores are never drawn; a NaN score is the
    worst: the float path gives it weight 0, ``"grid"`` draws it with the worst score's probability (found in review:
    this said NaN was never drawn, which held for the float path only).
    Returns a scalar of the default int dtype.
    """
    _validate.mechanism_core(key, epsilon=epsilon, sensitivity=sensitivity)
    noise = check_noise(noise)  # found in review: a misspelt noise name silently gave float noise
    scores = jnp.asarray(scores)
    int_dtype = jax.dtypes.canonicalize_dtype(jnp.int64)  # the default int (int64 under x64)
    if kernel_noise(noise) == "grid":
        # called eagerly: one compiled program (found in review: the exact sampler's loop ran op by op, ≈ 1.6 s a call)
        eager = _validate.all_concrete(key, scores, epsilon, sensitivity)
        core = _exponential_exact_jit if eager else exponential_exact_core
        return core(key, scores, epsilon, sensitivity).astype(int_dtype)
    factor = _factor(epsilon, sensitivity, scores.dtype)
    return _exponential(key, scores, factor).astype(int_dtype)


def exponential_segments(key: jax.Array, scores, segment, active, *, epsilon, sensitivity, noise: str = "float"):
    """Independent exponential mechanisms, one per segment: candidates ``[n]`` with segment ids ``[n]``
    (the segment's first index) and an `active` mask; returns, per segment id, the winning index
    (``n`` where a segment has no active candidate). Traceable core (used by P-HP's level steps).

    Float: Gumbel-max per segment. ``"grid"``: exact, by rejection with one proposal per candidate
    slot per round, uniform within its segment (out-of-range draws skipped), accepted with an exact
    exp(−c·distance) coin; the first accepted proposal of a segment in slot order wins.

    Scores as in `exponential_mechanism`: the grid path as `exponential_exact` (only −inf, the caller's marker,
    excludes a candidate; NaN is the worst, +inf or an overflowing quotient the best — found in review: +inf or
    1e37 excluded the best candidate), the float path as `exponential` (NaN never wins — found in review: one NaN
    left its segment with no winner).
    """
    _validate.mechanism_core(key, epsilon=epsilon, sensitivity=sensitivity)
    noise = check_noise(noise)
    scores = jnp.asarray(scores)
    n = scores.shape[0]
    if kernel_noise(noise) != "grid":
        factor = _factor(epsilon, sensitivity, scores.dtype)
        # NaN never wins, as in `exponential` (`_logits`); found in review: one NaN made the segment's max NaN,
        # and the segment had no winner at all
        v = jnp.where(active, _logits(scores, factor) + standard_gumbel(key, (n,), scores.dtype), -jnp.inf)
        best = jax.ops.segment_max(v, segment, num_segments=n)
        idx = jnp.arange(n)
        won = active & (v == best[segment]) & (v > -jnp.inf)  # a segment of excluded candidates has no winner
        return jax.ops.segment_min(jnp.where(won, idx, n), segment, num_segments=n)
    if _validate.all_concrete(key, scores, segment, active, epsilon, sensitivity):
        # called eagerly: one compiled program (found in review: its rejection loop ran op by op, 2–3 s a call)
        return _exponential_segments_exact_jit(key, scores, segment, active, epsilon, sensitivity)
    return _exponential_segments_exact(key, scores, segment, active, epsilon, sensitivity)


def _exponential_segments_exact(key, scores, segment, active, epsilon, sensitivity):
    n = scores.shape[0]
    dtype = scores.dtype
    eps = jnp.asarray(epsilon, dtype)
    qs, allowed, delta_q = _rounded_scores(scores, epsilon, sensitivity, None)  # as `exponential_exact_core`
    allowed = allowed & active
    best = jax.ops.segment_max(jnp.where(allowed, qs, -jnp.inf), segment, num_segments=n)
    dist = jnp.where(allowed, jnp.minimum(best[segment] - qs, float(_MAX_DISTANCE)), 0.0).astype(jnp.uint32)
    c = eps / (2.0 * delta_q) * jnp.asarray(1.0 - 2.0**-20, dtype)
    rate = jnp.minimum(jnp.floor(c.astype(jnp.float32) * jnp.float32(2.0**32)), jnp.float32(4294967040.0))
    x_hi, x_lo = exact._mul_u32(dist, jnp.broadcast_to(rate.astype(jnp.uint32), (n,)))
    idx = jnp.arange(n, dtype=jnp.int32)
    # each segment lists its allowed candidates by rank; a proposal picks a uniform rank
    rank = jnp.cumsum(allowed.astype(jnp.int32)) - 1
    first_rank = jax.ops.segment_min(jnp.where(allowed, rank, n), segment, num_segments=n)
    count = jax.ops.segment_sum(allowed.astype(jnp.int32), segment, num_segments=n)
    by_rank = jnp.zeros((n,), jnp.int32).at[jnp.where(allowed, rank, n)].set(idx, mode="drop")
    # per segment: ⌈log₂ count⌉ in integers (found in review: float32's log2 of 2²¹ + 1 rounds to 21, so the last rank
    # could never be proposed: not the exponential mechanism, and a hang where it was the only likely candidate)
    bits = 32 - jax.lax.clz((jnp.maximum(count, 2) - 1).astype(jnp.uint32))
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
        heads = exact.run_coins(k_coin, x_hi[cand], x_lo[cand]) & valid
        got = jax.ops.segment_min(jnp.where(heads, idx, n), slot_seg, num_segments=n)  # first slot that won
        new = jnp.where(got < n, cand[jnp.minimum(got, n - 1)], -1)
        return jnp.where(winner < 0, new, winner), rnd + 1

    winner, _ = jax.lax.while_loop(cond, body, (winner0.astype(jnp.int32), jnp.zeros((), jnp.uint32)))
    return winner.astype(jax.dtypes.canonicalize_dtype(jnp.int64))


_exponential_segments_exact_jit = jax.jit(_exponential_segments_exact)
