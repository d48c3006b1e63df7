"""Exact samplers in integer arithmetic: discrete Laplace, and the exponential mechanism on integer scores.

Float samplers round probabilities: a float32 exponential variate takes 2²³ values, so
``⌊E·b/γ⌋`` misses most integers once b/γ > 2²³ (a parity attack then separates neighbours), and a
two-stage inverse CDF gives a candidate of probability 1e-7 on one input and 0 on its neighbour. The
samplers here use only uniform 32-bit words and exact integer comparisons, so the distribution they
draw from is exactly the one the privacy proof assumes.

**Discrete Laplace** ``P(Z = z) ∝ exp(−|z|/R)`` (Canonne, Kamath & Steinke, "The Discrete Gaussian
for Differential Privacy", NeurIPS 2020, Algorithm 2, with their Algorithm 1 for Bernoulli(exp(−γ))).
A requested scale r is represented as ``R = 2^(j+32) / q`` with ``2^j ≤ r < 2^(j+1)`` and the largest
32-bit q such that R ≥ r (so R exceeds r by less than 2⁻²¹ relative: a little more noise, never less).
Then ``Y = W + 2^j·Q`` where W is uniform on ``[0, 2^j)`` accepted with probability
``exp(−W q / 2^(j+32))`` and Q counts successes of Bernoulli(exp(−q/2³²)) before the first failure;
Z = ±Y with a fair sign, rejecting "−0". Every Bernoulli(γ/K) inside Algorithm 1 compares a uniform
word with the binary expansion of γ/K, produced by exact long division (ties go on to the next word),
so no rejection sampling of uniform integers is needed. The only departures from exactness are the
integer widths: K (Algorithm 1's counter) saturates at 2¹⁵ and Q at 2³⁰ − 1, events of probability below
1/(2¹⁵)! and exp(−2²⁹) (both < 10⁻¹⁰⁰⁰⁰⁰). Scales must satisfy 1 ≤ r < 2²⁹ (`MAX_SCALE`).

**Vectorization.** Each sample is a small state machine that consumes one fresh uniform word per
step. All samples advance in lock step; after a fixed number of steps the unfinished ones are gathered
into a smaller buffer, and so on (`_SCHEDULE`), so the cost follows the average number of steps
(≈ 7), not the maximum over millions of samples. The words are Threefry-2x32 outputs of the key on
counters (`uniform_words`, the cipher of JAX's default PRNG written out unrolled: JAX's own lowering on
CPU rolls the rounds into a loop and was ≈ 5× slower per word here). Any schedule is exact: every
sample sees a sequence of independent uniform words.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate

__all__ = ["MAX_SCALE", "MAX_INT_SCALE", "discrete_laplace", "representable_scale", "snap_and_add", "threefry2x32",
           "threefry_bits", "uniform_words"]

MAX_SCALE = 2.0**29  # scales r ≥ this are refused: Y = W + 2^j Q must stay in int32 arithmetic
_K_MAX = 2**15  # Algorithm 1's counter saturates here (long division by K needs K < 2^16)
_Q_MAX = 2**30 - 1
_Q_MASK = 2**30 - 1
_W_MASK = 2**29 - 1

# stages of a sample
_W_NEW, _W_ALG, _Q_ALG, _DONE = 0, 1, 2, 3


def _u32(x):
    return jnp.asarray(x, jnp.uint32)


def _scale_params(scale):
    """(j, q) with 2^j ≤ r < 2^(j+1) and R = 2^(j+32)/q ≥ r (q < 2^32), elementwise; r clamped to [1, MAX)."""
    r = jnp.clip(jnp.asarray(scale, jnp.float32), 1.0, MAX_SCALE * (1 - 2**-23))
    mant, expo = jnp.frexp(r)  # r = mant · 2^expo, mant ∈ [0.5, 1)
    j = (expo - 1).astype(jnp.int32)
    # 2^(j+32)/r = 2^32 / (2·mant) ∈ (2^31, 2^32]; shrink by (1 − 2^-22) so that rounding can only lower q
    qf = jnp.floor((2.0**32 / (2.0 * mant)) * jnp.float32(1.0 - 2.0**-22))
    return j, qf.astype(jnp.uint32)


def representable_scale(scale) -> np.ndarray:
    """The scale R ≥ r that `discrete_laplace` actually uses for a requested scale r (float64, host)."""
    j, q = _scale_params(np.asarray(scale, np.float32))
    return np.ldexp(1.0, np.asarray(j, np.int64) + 32) / np.asarray(q, np.float64)


def _mul_u32(a, b):
    """Full 64-bit product of uint32 arrays as (hi, lo) uint32 words."""
    m16 = _u32(0xFFFF)
    a0, a1 = a & m16, a >> 16
    b0, b1 = b & m16, b >> 16
    lo = a0 * b0
    m1, m2 = a1 * b0, a0 * b1
    mid = m1 + m2
    carry_mid = (mid < m1).astype(jnp.uint32)
    plo = lo + (mid << 16)
    carry_lo = (plo < lo).astype(jnp.uint32)
    phi = a1 * b1 + (mid >> 16) + (carry_mid << 16) + carry_lo
    return phi, plo


def _mul_small(k, u):
    """``k·u`` as (hi, lo) uint32 words, for k < 2¹⁶ (u any uint32)."""
    m16 = _u32(0xFFFF)
    lo_part = k * (u & m16)  # < 2^32
    hi_part = k * (u >> 16)  # < 2^32
    lo = lo_part + (hi_part << 16)
    carry = (lo < lo_part).astype(jnp.uint32)
    return (hi_part >> 16) + carry, lo


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011),
    the block cipher behind JAX's default PRNG, written out unrolled so that XLA fuses it into one loop
    (JAX lowers its own with rolled rounds on CPU: ≈ 4–6× slower per word here). uint32 in, uint32 out."""
    k2 = k0 ^ k1 ^ _u32(0x1BD11BDA)
    ks = (k0, k1, k2)
    x0, x1 = x0 + k0, x1 + k1
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << _u32(r)) | (x1 >> _u32(32 - r)))
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + _u32(i + 1)
    return x0, x1


def uniform_words(key: jax.Array, shape) -> jax.Array:
    """Independent uniform uint32 words of `shape` from a typed key (traceable core): Threefry-2x32 of the
    key's data on counters 0, 1, … (two words per counter). Half the cipher calls of `threefry_bits`, whose
    layout (one word per call) reproduces `jax.random.bits`; the exact samplers need independent words, not
    JAX's. Keys of another implementation (or 2³³ words or more) fall back to `jax.random.bits`."""
    data = jax.random.key_data(key)
    n = int(np.prod(shape)) if shape else 1
    if data.shape != (2,) or n == 0 or n >= 2**33:
        return jax.random.bits(key, shape, jnp.uint32)
    half = -(-n // 2)
    c = jnp.arange(half, dtype=jnp.uint32)
    a, b = threefry2x32(data[0], data[1], c, jnp.zeros_like(c))
    return jnp.concatenate([a, b])[:n].reshape(shape)


def threefry_bits(key: jax.Array, shape, width: int = 32) -> jax.Array:
    """The words ``jax.random.bits(key, shape)`` returns (uint32, or uint64 for ``width=64``), computed with the
    unrolled `threefry2x32`: bit for bit the same, ≈ 3.5× faster on CPU (traceable core).

    JAX's partitionable Threefry layout (``jax_threefry_partitionable``, the default since JAX 0.5) gives the
    word at flat index i from the cipher of the counter pair ``(i >> 32, i & 0xffffffff)``: ``a ^ b`` for 32
    bits, ``a << 32 | b`` for 64. Where that layout does not apply (another key implementation, the legacy
    layout, 2³² words or more) the words come from `jax.random.bits` itself.
    """
    if width not in (32, 64):
        raise ValueError(f"width must be 32 or 64, got {width!r}.")
    data = jax.random.key_data(key)
    n = int(np.prod(shape)) if shape else 1
    if data.shape != (2,) or not jax.config.jax_threefry_partitionable or n >= 2**32:
        return jax.random.bits(key, tuple(shape), jnp.uint32 if width == 32 else jnp.uint64)
    lo = jax.lax.iota(jnp.uint32, n)
    a, b = threefry2x32(data[0], data[1], jnp.zeros_like(lo), lo)
    if width == 32:
        return (a ^ b).reshape(shape)
    return ((a.astype(jnp.uint64) << jnp.uint64(32)) | b.astype(jnp.uint64)).reshape(shape)


class _Lane(NamedTuple):
    """One sample's state in three words (fewer outputs per step: XLA recomputes shared logic per output)."""

    kr: jax.Array  # uint32: Algorithm 1's K (bits 16-31) and the long-division remainder (< K, bits 0-15)
    wx: jax.Array  # uint32: W of the current attempt (bits 0-28; W < 2^28), threshold word `pos` (29-30), sign (31)
    qs: jax.Array  # uint32: Q (bits 0-29) and the stage (bits 30-31)

    @property
    def stage(self):
        return self.qs >> 30

    @property
    def w(self):
        return self.wx & _u32(_W_MASK)

    @property
    def neg(self):
        return (self.wx >> 31) == 1

    @property
    def q_count(self):
        return (self.qs & _u32(_Q_MASK)).astype(jnp.int32)


def _w_threshold(w, j, q):
    """The two words of γ_W = W·q / 2^(j+32): P >> j and (P mod 2^j) << (32 − j), P = W·q (j ≥ 1)."""
    phi, plo = _mul_u32(w, q)
    sh = jnp.clip(j, 1, 31).astype(jnp.uint32)
    w0 = (phi << (32 - sh)) | (plo >> sh)
    w1 = (plo & ((_u32(1) << sh) - 1)) << (32 - sh)
    return w0, w1


def _advance(lane: _Lane, u, j, q) -> _Lane:
    """One step of every sample: consume the uniform word `u`."""
    stage = lane.qs >> 30
    lane_w = lane.wx & _u32(_W_MASK)
    pos = (lane.wx >> 29) & _u32(3)
    neg = lane.wx >> 31
    k = lane.kr >> 16
    lane_rem = lane.kr & _u32(0xFFFF)
    lane_q = lane.qs & _u32(_Q_MASK)
    # γ's expansion: in the W stage γ_W = W·q/2^(j+32) (two words), in the Q stage γ_Q = q/2³² (one word)
    t0w, t1w = _w_threshold(lane_w, j, q)
    in_w = stage == _W_ALG
    word = jnp.where(pos == 0, jnp.where(in_w, t0w, q), jnp.where((pos == 1) & in_w, t1w, _u32(0)))
    # --- comparison of U's next word u with the next word of the expansion of γ/K. That word is
    # ⌊X/K⌋ with X = rem·2³² + word; compare by multiplication, no division:
    # u < ⌊X/K⌋ ⟺ K·u + K ≤ X, and u = ⌊X/K⌋ ⟺ K·u ≤ X < K·u + K (then the new remainder is X − K·u).
    ku_hi, ku_lo = _mul_small(k, u)
    kk_lo = ku_lo + k
    kk_hi = ku_hi + (kk_lo < ku_lo).astype(jnp.uint32)  # K·u + K
    x_hi, x_lo = lane_rem, word
    less = (kk_hi < x_hi) | ((kk_hi == x_hi) & (kk_lo <= x_lo))
    not_above = (ku_hi < x_hi) | ((ku_hi == x_hi) & (ku_lo <= x_lo))  # K·u ≤ X
    in_alg = in_w | (stage == _Q_ALG)
    bern_one = in_alg & less  # Bernoulli(γ/K) = 1: K += 1
    bern_zero = in_alg & ~not_above  # = 0: Algorithm 1 ends with exp(−γ)-coin = (K odd)
    tie = in_alg & not_above & ~less
    coin = (k & 1) == 1
    # W stage ends: accepted (coin) → Q stage; rejected → new attempt
    w_accept = in_w & bern_zero & coin
    w_reject = in_w & bern_zero & ~coin
    # Q stage ends a round: coin → Q += 1 (another round); no coin → Y is complete
    in_q = stage == _Q_ALG
    q_more = in_q & bern_zero & coin
    q_end = in_q & bern_zero & ~coin
    y_zero = (lane_w == 0) & (lane_q == 0)
    q_restart = q_end & (neg != 0) & y_zero  # "−0" is rejected (CKS Algorithm 2)
    q_done = q_end & ~q_restart
    # --- start of an attempt: W from the top j bits, the sign from bit 0 (independent of W, j ≤ 29)
    starting = stage == _W_NEW
    new_w = jnp.where(j > 0, u >> (32 - jnp.clip(j, 1, 31).astype(jnp.uint32)), _u32(0))
    start_w0 = starting & (new_w == 0)  # exp(−0) = 1: accepted without a comparison
    to_q = start_w0 | w_accept
    # nested selects, not jnp.select (which lowers to a reduction over the stacked conditions)
    next_stage = jnp.where(
        starting & ~start_w0, _u32(_W_ALG),
        jnp.where(to_q, _u32(_Q_ALG),
                  jnp.where(w_reject | q_restart, _u32(_W_NEW), jnp.where(q_done, _u32(_DONE), stage))),
    )  # fmt: skip
    reset_cmp = starting | bern_one | bern_zero
    k = jnp.where(starting | bern_zero, _u32(1), jnp.where(bern_one, jnp.minimum(k + 1, _K_MAX), k))
    pos = jnp.where(reset_cmp, _u32(0), jnp.where(tie, jnp.minimum(pos + 1, 2), pos))
    neg = jnp.where(starting, u & 1, neg)
    rem = jnp.where(reset_cmp, _u32(0), jnp.where(tie, x_lo - ku_lo, lane_rem))
    q_count = jnp.where(starting | w_accept, _u32(0), jnp.where(q_more, jnp.minimum(lane_q + 1, _Q_MAX), lane_q))
    w = jnp.where(starting, new_w, lane_w)
    return _Lane((k << 16) | rem, w | (pos << 29) | (neg << 31), q_count | (next_stage << 30))


def _fresh(shape) -> _Lane:
    zu = jnp.zeros(shape, jnp.uint32)
    return _Lane(jnp.full(shape, 1 << 16, jnp.uint32), zu, zu)


# Lock-step schedule, measured on the 2-core CPU (tile of 32,768, ≈ 7.2 steps per sample on average):
# every sample takes 10 steps (≈ 15–19 % remain), the unfinished ones are gathered into a quarter-size
# buffer for 8 steps (≈ 1–2 % of the tile remain), then into 15 % of that for 10 steps, and the last few
# (≈ 0.1 %) run to completion in a tenth of that. Each stage repeats while its buffer overflows, so any
# tail is handled; only the cost depends on the schedule. (A single stage of 14 steps and one buffer of
# 1/8 ran at ≈ 3.5·10⁶ samples/s with the nine-word state; RESULTS has the current rate.)
_SCHEDULE = ((10, 0.25), (8, 0.15), (10, 0.1))
_SMALL = 2048  # below this many samples: 14 steps for all, then run the rest to completion in place
_TILE = 32768  # samples per tile: the lane state of a tile stays in cache


def _finish(key, lane: _Lane, j, q) -> _Lane:
    """Advance until every lane is done (one fresh word per lane per step)."""

    def step(st):
        s, it = st
        u = uniform_words(jax.random.fold_in(key, it), s.qs.shape)
        return _advance(s, u, j, q), it + 1

    return jax.lax.while_loop(lambda st: jnp.any(st[0].stage != _DONE), step, (lane, jnp.zeros((), jnp.int32)))[0]


def _run_lanes(key, lane: _Lane, j, q, schedule) -> _Lane:
    """Advance flat lanes until all are done: `steps` lock-step steps, then the unfinished ones gathered
    into a buffer of `fraction` of the lanes and treated by the rest of the schedule (recursively)."""
    n = lane.qs.shape[0]
    k_first, k_rest = jax.random.split(key)
    (steps, fraction), rest = schedule[0], schedule[1:]
    if steps:
        words = uniform_words(k_first, (steps, n))  # all of this stage's words, one call
        lane = jax.lax.fori_loop(0, steps, lambda i, ln: _advance(ln, words[i], j, q), lane)
    cap = max(64, int(n * fraction))
    if not rest or cap >= n:
        return _finish(k_rest, lane, j, q)

    def body(state):
        ln, round_ = state
        idx = jnp.nonzero(ln.stage != _DONE, size=cap, fill_value=n)[0]
        valid = idx < n
        safe = jnp.minimum(idx, n - 1)
        sub = jax.tree_util.tree_map(lambda a: a[safe], ln)
        sub = sub._replace(qs=jnp.where(valid, sub.qs, sub.qs | _u32(_DONE << 30)))  # padding slots are finished
        sub = _run_lanes(jax.random.fold_in(k_rest, round_), sub, j[safe], q[safe], rest)
        ln = jax.tree_util.tree_map(lambda a, b: a.at[idx].set(b, mode="drop"), ln, sub)
        return ln, round_ + 1

    cond = lambda state: jnp.any(state[0].stage != _DONE)  # noqa: E731
    return jax.lax.while_loop(cond, body, (lane, jnp.zeros((), jnp.int32)))[0]


def _sample_parts(key, scale, shape):
    """Exact discrete Laplace samples as (negative, W, Q, j): Z = ±(W + 2^j·Q)."""
    n = int(np.prod(shape)) if shape else 1
    j, q = _scale_params(jnp.broadcast_to(jnp.asarray(scale, jnp.float32), shape).reshape(-1))
    if n == 0:
        z = jnp.zeros((0,), jnp.int32)
        return z.astype(bool), z.astype(jnp.uint32), z, j
    if n <= _TILE:
        schedule = ((14, 1.0),) if n < _SMALL else _SCHEDULE + ((0, 0.0),)
        lane = _run_lanes(key, _fresh((n,)), j, q, schedule)
        return lane.neg, lane.w, lane.q_count, j
    tiles = -(-n // _TILE)
    pad = tiles * _TILE - n
    jt = jnp.pad(j, (0, pad)).reshape(tiles, _TILE)
    qt = jnp.pad(q, (0, pad), constant_values=jnp.uint32(2**31)).reshape(tiles, _TILE)

    def one(args):
        i, jj, qq = args
        return _run_lanes(jax.random.fold_in(key, i), _fresh((_TILE,)), jj, qq, _SCHEDULE + ((0, 0.0),))

    lane = jax.lax.map(one, (jnp.arange(tiles, dtype=jnp.uint32), jt, qt))
    flat = jax.tree_util.tree_map(lambda a: a.reshape(-1)[:n], lane)
    return flat.neg, flat.w, flat.q_count, j


MAX_INT_SCALE = 2.0**24  # `discrete_laplace` (int32 output) takes scales below this


@functools.partial(jax.jit, static_argnums=(2,))
def _discrete_laplace_jit(key, scale, shape):
    neg, w, qc, j = _sample_parts(key, scale, shape)
    wi = w.astype(jnp.int32)
    room = (jnp.int32(2**31 - 1) - wi) >> j  # |Z| saturates at 2^31 − 1: probability < exp(−2^31/R) < e^-128
    y = jnp.where(qc > room, jnp.int32(2**31 - 1), wi + (jnp.minimum(qc, room) << j))
    return jnp.where(neg, -y, y).reshape(shape)


def discrete_laplace(key: jax.Array, scale, shape=None) -> jax.Array:
    """Exact discrete Laplace integers: ``P(Z = z) ∝ exp(−|z|/R)``, R = `representable_scale` (≥ scale).

    Args:
      key: typed PRNG key. scale: r ∈ [1, 2²⁴) (scalar or broadcastable to `shape`).
      shape: output shape (default: the shape of `scale`).

    Returns:
      int32 array of `shape` (|Z| saturates at 2³¹ − 1, an event of probability below e⁻¹²⁸).

    Raises:
      ValueError: a concrete scale outside [1, 2²⁴) (smaller scales are not supported; for larger
      ones use `snap_and_add`, which carries the sum exactly up to 2²⁹).
    """
    _check_scale(scale, MAX_INT_SCALE)
    shape = tuple(np.shape(scale)) if shape is None else tuple(shape)
    return _discrete_laplace_jit(key, jnp.asarray(scale, jnp.float32), shape)


def _check_scale(scale, limit=MAX_SCALE):
    try:
        s = np.asarray(scale, np.float64)
    except (TypeError, jax.errors.TracerArrayConversionError):
        return
    # room for the caller's float32 arithmetic (the kernel recomputes the ratio in its dtype; found in review:
    # 2**29 − 1 passed here and released NaN)
    if not np.all(np.isfinite(s)) or np.any(s < 1.0) or np.any(s * (1.0 + 64 * 2.0**-23) >= limit):
        raise ValueError(
            f"discrete Laplace scale (noise scale / grid spacing) must be in [1, 2**{int(np.log2(limit))}); got "
            f"min {s.min():g}, max {s.max():g}. Larger ratios cannot be carried exactly in 32-bit integers "
            "(use a coarser grid or a larger ε); below 1 the grid is coarser than the noise."
        )


def canonical_sum(rc, neg, w, qc, j):
    """S = rc ± (W + 2^j Q) exactly, in the canonical form ``(H, L, 2^j)`` with S = H·2^j + L, 0 ≤ L < 2^j.

    All int32: |rc| < 2²⁹, W < 2^j ≤ 2²⁸, Q < 2³⁰. Any float made from (H, L) is a function of S alone.
    """
    pow_j = jnp.int32(1) << j
    rc_hi = rc >> j  # floor division by 2^j (arithmetic shift)
    rc_lo = rc - (rc_hi << j)
    wi = w.astype(jnp.int32)
    low = jnp.where(neg, rc_lo - wi, rc_lo + wi)  # ∈ (−2^j, 2^(j+1))
    carry = jnp.where(low < 0, -1, jnp.where(low >= pow_j, 1, 0)).astype(jnp.int32)
    return rc_hi + jnp.where(neg, -qc, qc) + carry, low - carry * pow_j, pow_j


def snap_and_add(key: jax.Array, x, *, scale, spacing) -> jax.Array:
    """``γ·(round(x/γ) + Z)`` with Z exact discrete Laplace of scale ``scale/γ`` (traceable core; called eagerly it
    runs as one compiled program — found in review: its loops ran op by op and compiled again at every call, ≈ 3 s).

    The sum ``round(x/γ) + Z`` is formed exactly in integers and only then converted to floats, so
    the output is a function of that integer alone (post-processing): rounding can never reveal
    which input it came from. |round(x/γ)| is clamped to 2²⁹ − 1 (1-Lipschitz: the sensitivity is
    unchanged). `spacing` must be a power of two. A ratio `scale/spacing` below 1 is raised to 1 (more
    noise); a ratio ≥ 2²⁹ cannot be sampled exactly and gives NaN — never less noise than asked. The
    callers make that impossible with public rules (eager checks, pruned candidates, skipped
    publications), so a NaN would be a bug, and it depends on public values only.
    """
    if _validate.all_concrete(key, x, scale, spacing):
        return _snap_and_add_jit(key, x, scale, spacing)
    return _snap_and_add(key, x, scale, spacing)


def _snap_and_add(key, x, scale, spacing):
    x = jnp.asarray(x)
    dtype = x.dtype
    spacing = jnp.broadcast_to(jnp.asarray(spacing, dtype), x.shape)
    ratio = jnp.broadcast_to(jnp.asarray(scale, dtype) / spacing, x.shape)
    neg, w, qc, j = _sample_parts(key, ratio, x.shape)
    lim = float(2**29 - 1)
    rc = jnp.clip(jnp.round(x / spacing), -lim, lim).reshape(-1).astype(jnp.int32)
    high, low, pow_j = canonical_sum(rc, neg, w, qc, j)
    total = high.astype(dtype) * pow_j.astype(dtype) + low.astype(dtype)  # a function of S only
    total = jnp.where(ratio.reshape(-1) < MAX_SCALE, total, jnp.nan)  # never clamp the noise down
    return (total.reshape(x.shape)) * spacing


_snap_and_add_jit = jax.jit(_snap_and_add)


# ------------------------------------------------------------------------------------------------
# The exponential mechanism on integer scores, sampled exactly
# ------------------------------------------------------------------------------------------------
class _Coin(NamedTuple):
    """Bernoulli(exp(−x)) for x = n + f/2³², as Algorithm 1 runs: n coins exp(−1), then one exp(−f/2³²)."""

    n_left: jax.Array  # uint32: exp(−1) coins still to win
    k: jax.Array  # uint32: Algorithm 1's K
    pos: jax.Array  # int32
    rem: jax.Array  # uint32
    done: jax.Array  # bool
    heads: jax.Array  # bool: the result (valid when done)


def coin_fresh(n_int, frac) -> _Coin:
    shape = n_int.shape
    return _Coin(
        n_int.astype(jnp.uint32), jnp.ones(shape, jnp.uint32), jnp.zeros(shape, jnp.int32),
        jnp.where(n_int > 0, _u32(1), _u32(0)), jnp.zeros(shape, bool), jnp.zeros(shape, bool),
    )  # fmt: skip


def coin_advance(c: _Coin, u, frac) -> _Coin:
    """One word for every coin. γ = 1 (while n_left > 0: X starts at rem = 1, words 0) or γ = f/2³²."""
    unit = c.n_left > 0
    word = jnp.where(unit | (c.pos != 0), _u32(0), frac)
    ku_hi, ku_lo = _mul_small(c.k, u)
    kk_lo = ku_lo + c.k
    kk_hi = ku_hi + (kk_lo < ku_lo).astype(jnp.uint32)
    less = (kk_hi < c.rem) | ((kk_hi == c.rem) & (kk_lo <= word))
    not_above = (ku_hi < c.rem) | ((ku_hi == c.rem) & (ku_lo <= word))
    live = ~c.done
    one = live & less
    zero = live & ~not_above
    tie = live & not_above & ~less
    odd = (c.k & 1) == 1
    won_unit = zero & unit & odd  # an exp(−1) coin came up heads: one fewer to go
    n_left = jnp.where(won_unit, c.n_left - 1, c.n_left)
    finished = zero & (~unit | ~odd)  # a lost exp(−1) coin, or the final exp(−f) coin
    heads = jnp.where(finished, ~unit & odd, c.heads)
    reset = one | zero
    k = jnp.where(zero, _u32(1), jnp.where(one, jnp.minimum(c.k + 1, _K_MAX), c.k))
    new_unit = n_left > 0
    rem = jnp.where(reset, jnp.where(new_unit, _u32(1), _u32(0)), jnp.where(tie, word - ku_lo, c.rem))
    pos = jnp.where(reset, 0, jnp.where(tie, c.pos + 1, c.pos))
    return _Coin(n_left, k, pos.astype(jnp.int32), rem, c.done | finished, heads)


def run_coins(key, n_int, frac):
    """Flip every coin Bernoulli(exp(−(n + f/2³²))) to completion (lock step; coins finish fast)."""
    size = n_int.shape[0]

    def cond(st):
        return jnp.any(~st[0].done)

    def body(st):
        c, it = st
        u = uniform_words(jax.random.fold_in(key, it), (size,))
        return coin_advance(c, u, frac), it + 1

    c, _ = jax.lax.while_loop(cond, body, (coin_fresh(n_int, frac), jnp.zeros((), jnp.uint32)))
    return c.heads


def exponential_integer(key, distance, allowed, rate):
    """Exact draw of index i with probability ∝ exp(−c·m_i) among the allowed candidates (traceable core).

    Args:
      key: typed key. distance: int32 ``[C]``, m_i ≥ 0 (0 for the best candidate; the caller clamps
        large values — clamping a score to ``max(q_i, q* − M)`` keeps its sensitivity).
      allowed: bool ``[C]`` (a public candidate set; at least one allowed, else the result is −1).
      rate: uint32 a with c = a/2³² (so 0 ≤ c < 1).

    Rejection sampling: proposals uniform over the allowed candidates (uniform integers from the top
    bits of a word, out-of-range values skipped), each accepted with an exact Bernoulli(exp(−c·m_i))
    coin; 2^⌈log₂ C⌉ proposals per round in parallel, the first accepted one in proposal order wins
    (iid proposals: this is exactly rejection sampling). A round succeeds with probability
    ≥ 1 − e⁻¹ (the best candidate has weight 1), so ≈ 1.6 rounds on average.
    """
    size = distance.shape[0]
    bits = (max(size, 2) - 1).bit_length()  # ⌈log₂ size⌉ in integers
    slots = 1 << bits
    order = jnp.cumsum(allowed.astype(jnp.int32)) - 1  # rank among allowed
    count = jnp.sum(allowed, dtype=jnp.int32)
    index_of_rank = jnp.zeros((slots,), jnp.int32).at[jnp.where(allowed, order, slots)].set(
        jnp.arange(size, dtype=jnp.int32), mode="drop"
    )
    m = distance.astype(jnp.uint32)
    x_hi, x_lo = _mul_u32(m, jnp.broadcast_to(rate, m.shape))  # c·m = x_hi + x_lo/2^32 exactly

    def cond(st):  # no allowed candidate: stop at once with −1 (rejection sampling would never accept)
        return (st[0] < 0) & (count > 0)

    def body(st):
        _, rnd = st
        k = jax.random.fold_in(key, rnd)
        k_prop, k_coin = jax.random.split(k)
        ranks = (uniform_words(k_prop, (slots,)) >> (32 - bits)).astype(jnp.int32)
        valid = ranks < count
        cand = index_of_rank[jnp.minimum(ranks, slots - 1)]
        heads = run_coins(k_coin, x_hi[cand], x_lo[cand]) & valid
        first = jnp.argmax(heads)
        return jnp.where(jnp.any(heads), cand[first], -1), rnd + 1

    winner, _ = jax.lax.while_loop(cond, body, (jnp.int32(-1), jnp.zeros((), jnp.uint32)))
    return winner
