"""Uniform, Sample, BD and BA (Kellaris et al., VLDB 2014): `run` (one `lax.scan`) and `WEventStream`."""

from __future__ import annotations

import functools
import math
import warnings
from decimal import Decimal
from fractions import Fraction
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from jaxdp import _host, _validate, mechanisms, programs
from jaxdp.mechanisms import exact

MAX_WINDOW = 1 << 24  # w: the window's budgets are kept in a buffer of w entries
from jaxdp._validate import counts as check_counts  # the eager checks live in _validate

__all__ = ['METHODS', 'INITIAL', 'CountsClampedWarning', 'CountsRoundedWarning', 'WEventResult', 'count_cap', 'run', 'SHIFT_AUTO_RATIO', 'WEventStream', 'check_counts', 'dissimilarity', 'difference_cap']


METHODS = ("uniform", "sample", "bd", "ba")


INITIAL = ("zero", "publish")  # what stands before the first publication: o_0 = 0, or publish timestamp 1


class CountsClampedWarning(UserWarning):
    """Counts above the largest value a run's arithmetic holds exactly were clamped to it. The number in the
    message is read from the raw counts: a curator-only diagnostic, not part of the release."""


def count_cap(*, noise: str) -> float:
    """The public cap counts are clamped to: the largest integer the kernel's float dtype holds with all those below
    it (2²⁴ in float32, 2⁵³ in float64; above it neighbouring counts round apart by more than the sensitivity), and
    with ``noise="grid"`` the largest count its grid represents. Clamping is 1-Lipschitz, so it keeps every
    sensitivity. In float32, fractional counts given in float64 (or finer) are rounded to whole numbers (halves up)
    before the cast (`_whole_counts`); counts already in float32 (NumPy or JAX) are taken as they are, fractions
    included (no cast rounds them: the sensitivity holds as given; found in review: the docs said every fraction
    was rounded); in float64, counts given finer than float64 (Fractions, Decimals, longdoubles) are. (BD/BA's dissimilarity, whose grid is finer, clips its own inputs further.)"""
    noise = mechanisms.check_noise(noise)
    with _arithmetic(noise):
        cap = 2.0**24 if _validate.float_dtype() == np.float32 else 2.0**53
    if noise == "grid":  # (BD/BA's dissimilarity caps each |c − o_l| further: `difference_cap`)
        cap = min(cap, mechanisms.grid_value_limit(sensitivity=1.0))
    return float(cap)


class CountsRoundedWarning(UserWarning):
    """Fractional counts were rounded to whole numbers before float32 arithmetic. The number in the message is read
    from the raw counts: a curator-only diagnostic, not part of the release."""


_ROUND_CHUNK = 1 << 20  # values per pass of the fraction check (no full-size temporaries)


def _whole_counts(counts, dtype):
    """`counts` ready for the cast to `dtype`: in float32, fractional counts (float64, or objects such as
    `Fraction`s or a nullable pandas column) are rounded to the nearest whole number first, halves up (curator-only
    warning with how many; ``noise="float64"`` keeps the fractions).

    Found in review: the cast rounds a fraction to float32's spacing, 1 in [2²³, 2²⁴), so neighbours 8388608.5 and
    8388609.5 (1 apart, below `count_cap`) became 8388608 and 8388610 — a loss of 1.985 ε measured. The rounding
    f(x) = ⌊x⌋ + [x − ⌊x⌋ ≥ ½] keeps the sensitivity: it is monotone and f(x + 1) = f(x) + 1, so counts ≤ 1 apart
    round ≤ 1 apart; it is computed exactly (x − ⌊x⌋ has no rounding error), unlike ⌊x + ½⌋ in floats, and it
    keeps 28.999999999999996 (0.29·100) at 29 (a review found ⌊x⌋ made it 28). Whole numbers, which float32 holds
    exactly up to the cap, go through unchanged and uncopied; a refusal would stop a stream on a value of the
    data."""
    if np.dtype(dtype) != np.float32:
        return _whole_precise_counts(counts)  # float64 arithmetic: only inputs finer than float64 are rounded
    if isinstance(counts, jax.Array) and counts.dtype.itemsize <= 4:
        return counts  # values already float32 (or narrower): the cast cannot round them
    try:
        arr = np.asarray(counts)
        if arr.dtype.kind == "O":  # e.g. Fractions, a nullable pandas column: `check_counts` reads them as float64
            arr = np.asarray(counts, np.float64)
    except (TypeError, ValueError):  # ragged rows, non-numbers: `check_counts` says so
        return counts
    if arr.dtype.kind != "f" or arr.dtype.itemsize <= 4:
        return counts  # integers (beyond 2²⁴ they are clamped to the cap) or floats float32 holds exactly
    flat = arr.reshape(-1)
    fractional = 0
    for i in range(0, flat.size, _ROUND_CHUNK):  # count fractions chunk by chunk (NaN counts as fractional here)
        part = flat[i : i + _ROUND_CHUNK]
        fractional += int(np.count_nonzero(part != np.floor(part)))
    if fractional == 0 or not (np.all(np.isfinite(arr)) and arr.min() >= 0):
        return counts  # whole numbers; or counts `check_counts` refuses (NaN, inf, negative): its message, unchanged
    _warn_rounded(fractional, "float32 arithmetic", stacklevel=4)
    return _half_up(arr)


def _half_up(arr: np.ndarray) -> np.ndarray:
    """⌊x⌋ + [x − ⌊x⌋ ≥ ½], exact in the array's own float type (x − ⌊x⌋ has no rounding error)."""
    whole = np.floor(arr)
    whole += (arr - whole) >= 0.5
    return whole


def _warn_rounded(fractional: int, what: str, stacklevel: int) -> None:
    warnings.warn(CountsRoundedWarning(
        f"{fractional} fractional count(s) were rounded to whole numbers (halves up): {what} would round them by up "
        'to 1, moving neighbours by twice the sensitivity (curator-only: this number is read from the data; '
        'noise="float64" keeps fractions given as floats).'), stacklevel=stacklevel)  # fmt: skip


_EXACT_IN_FLOAT64 = (bool, int, float, np.bool_, np.integer, np.float16, np.float32, np.float64)


def _whole_precise_counts(counts):
    """In float64 arithmetic: counts given more precisely than float64 (a longdouble array; `Fraction`s, `Decimal`s or
    longdoubles in an object array) rounded to whole numbers exactly, halves up, as in float32 (curator-only
    warning). Found in review: the cast rounds halves to even in [2⁵², 2⁵³), where float64's spacing is 1, so
    neighbours 2⁵² + 0.5 and 2⁵² + 1.5 reached the kernel 2 apart (≈ 2ε); a rounding that commutes with +1 keeps
    the sensitivity. Counts given as floats (float64 or narrower) and integers are exact in float64 below the cap
    and go through unchanged; which inputs are rounded depends on each value's type, never on its size."""
    if isinstance(counts, jax.Array):
        return counts
    try:
        arr = np.asarray(counts)
    except (TypeError, ValueError):  # ragged rows, non-numbers: `check_counts` says so
        return counts
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:  # longdouble: ⌊x⌋ and x − ⌊x⌋ are exact in it
        if not (np.all(np.isfinite(arr)) and arr.min() >= 0):
            return counts  # `check_counts` refuses them, with its message
        fractional = int(np.count_nonzero(arr != np.floor(arr)))
        if fractional:
            _warn_rounded(fractional, "the cast to float64", stacklevel=5)
            return _half_up(arr).astype(np.float64)
        return counts
    if arr.dtype.kind != "O":
        return counts
    flat = arr.reshape(-1)
    out, fractional = None, 0
    for i, v in enumerate(flat):
        if isinstance(v, _EXACT_IN_FLOAT64):
            continue
        try:
            if isinstance(v, np.floating):  # a longdouble scalar: floor in its own precision
                low = np.floor(v)
            else:  # Fraction, Decimal: exact Python floor, and the fraction exact too (Decimal's context has 28 digits)
                low = math.floor(v)
            frac = (Fraction(v) if isinstance(v, Decimal) else v) - low
            if frac == 0:
                continue
            if not (v >= 0):  # negative (or NaN): `check_counts` refuses it
                return counts
            if out is None:
                out = flat.copy()
            out[i] = int(low) + int(2 * frac >= 1)
            fractional += 1
        except (TypeError, ValueError, ArithmeticError, OverflowError):  # not a number: `check_counts` says so
            return counts
    if not fractional:
        return counts
    _warn_rounded(fractional, "the cast to float64", stacklevel=5)
    return out.reshape(arr.shape)


def _clamp_counts(data, hi: float, cap: float, source):
    """`data` (the caller's counts `source`, cast) with every count above the public `cap` set to it (curator-only
    warning with how many, counted in `source`: the cast may have rounded some onto the cap): a stream must not
    stop, nor a run refuse, on a value of the data (found in review: a refusal at 2²⁴ + 1 after earlier releases
    told neighbours apart)."""
    if not hi > cap:
        return data
    n = int(np.count_nonzero(np.asarray(source, np.float64) > cap))
    warnings.warn(CountsClampedWarning(
        f"{n} count(s) were above {cap:,.0f}, the largest this run's arithmetic holds exactly, and were clamped to it "
        '(curator-only: this number is read from the data; noise="float64" holds counts up to 2**53).'), stacklevel=3)
    return jnp.minimum(data, jnp.asarray(cap, data.dtype))


class WEventResult(NamedTuple):
    """Releases and the budget ledger of one run (arrays over timestamps ``[T]``; leading ``[R]`` for
    repetitions).

    Attributes:
      releases: what a user sees at each timestamp, ``[T, d]``: the noisy counts, or the last
        non-null release where the output is null.
      eps1: ε_{i,1} spent by the dissimilarity sub-mechanism (0 for uniform/sample).
      eps2: ε_{i,2} spent by the publication sub-mechanism.
      published: True where noisy counts were released.
      nullified: True where BA forced a null output (budget absorbed earlier).
      forced: True where the caller's `decisions` overrode the private publish test (the run is then not private:
        the decisions may have been computed from the data); the public start-up rule ``initial="publish"`` is
        not counted.

    Properties: `epsilon_spent` (``eps1 + eps2`` per timestamp) and `private`.
    """

    releases: Float[Array, "T d"]
    eps1: Float[Array, " T"]
    eps2: Float[Array, " T"]
    published: Bool[Array, " T"]
    nullified: Bool[Array, " T"]
    forced: Bool[Array, " T"] | None = None  # set outside the jitted kernels (None there: an empty pytree node)

    @property
    def epsilon_spent(self) -> jax.Array:
        """ε spent at each timestamp, ``eps1 + eps2`` ``[T]``: any w consecutive entries sum to ≤ ε."""
        return self.eps1 + self.eps2

    @property
    def private(self) -> bool:
        """w-event ε-DP given a secret key used once (jaxdp cannot see where a key came from): False when
        `decisions` overrode the private publish test (found in review: it was True then too)."""
        return not bool(np.any(np.asarray(self.forced)))


class _State(NamedTuple):
    """The carry of one stream. Every counter is an integer; budgets are integer multiples of a quantum.

    Float timestamps drift: float32 holds integers exactly only below 2²⁴, and a float ``i − l`` near
    there is 0 or a multiple of 2, which broke Sample's schedule and BA's nullification. Budgets as
    integers make the window ledger exact: Σ over a window can never exceed its quanta.
    """

    last: jax.Array  # o_l, [d]
    since: jax.Array  # int32: i − l at the previous step (timestamps since the last publication), saturating
    phase: jax.Array  # int32: (i − 1) mod w of the next timestamp (Sample's schedule)
    units_l2: jax.Array  # int32: ε_{l,2} of the last publication in quanta (BA)
    recent: jax.Array  # int32 [w−1] (or [1] when w = 1): ε_{k,2} of the last w − 1 timestamps in quanta, most recent last


_SINCE_CAP = 2**30  # i − l saturates here (BA only compares it with budgets ≤ w·quanta)


_BD_QUANTA = 2**30  # BD's window budget P is split into 2³⁰ quanta (halving rounds down: never more than P)


def _quanta(method: str, w: int) -> int:
    """Quanta per window budget P: BA spends whole units P/w; BD halves what is left, in 2⁻³⁰ P."""
    return w if method == "ba" else _BD_QUANTA


def _budgets(w, eps, d, shift):
    """(ε_{i,1}, dissimilarity sensitivity, publication budget per window P)."""
    if shift:  # Sec. 4.5: λ_{i,1} = 1/ε, ε_{i,1} = ε/d; P = ε − w·ε/d > ε/2 (needs d > 2w)
        return eps / d, 1.0 / d, eps - w * eps / d
    return eps / (2.0 * w), 1.0 / d, eps / 2.0


def _min_publication_budget(noise):
    """The smallest ε_{i,2} a "grid" publication can be sampled exactly with (counts: Δ = 1, γ = 2⁻⁸); 0 for float.

    BD halves its remaining budget, so ε_{i,2} can get tiny; with noise="grid" such a timestamp is null
    instead (a rule on the public budget ledger)."""
    if noise != "grid":
        return 0.0
    gamma = 2.0**-8
    return (1.0 + gamma) / (gamma * exact.MAX_SCALE) * 1.01


def dissimilarity(c: Float[Array, " d"], last: Float[Array, " d"]) -> jax.Array:
    """The paper's dissimilarity query M_{i,1}: ``mean |c_i − o_l|`` (MAE between the counts and the last
    release). Traceable core.

    Privacy: sensitivity 1/d (one user changes one count by 1). In the arithmetic of its inputs' dtype the sum
    rounds, so `run`, `WEventStream` and `run_partitioned` pass float64 inputs whatever the release dtype (with
    ``noise="grid"`` the exact sampler snaps it to a grid of (1/d)/256 or finer): in float32 the rounding moved
    it by up to 1.07× its sensitivity at d = 100 and counts ≈ 5,000, 4× at d = 1,000 and counts ≈ 4·10⁴ (tested).
    The runs also cap each column's ``|c_i − o_l|`` at `difference_cap` before taking the mean.
    """
    return jnp.mean(jnp.abs(c - last))


def _down(x64, dtype, exact=False):
    """A value of `dtype` at or below the exact value that `x64` (float64, from a few roundings to nearest)
    stands for: shrinking by 2⁻⁴⁹ covers up to 16 float64 roundings, then float32 rounds toward 0. Budgets are
    spent as these values, so a window's budgets sum to at most ε in exact arithmetic (found in review:
    rounded to nearest, a window spent 0.3000000380 of ε = 0.3)."""
    with jax.enable_x64(True):
        x = x64 if exact else x64 * (1.0 - 2.0**-49)  # exact: `x64` holds the value itself (no rounding)
        f = x.astype(dtype)
        return jnp.where(f.astype(jnp.float64) > x, jnp.nextafter(f, jnp.zeros((), dtype)), f)


def _budget_dtype(noise, dtype):
    """The dtype of the budgets a kernel spends: its own, but float32 with ``noise="grid"``, which computes in float64
    and reports its ledger in the default float dtype. The noise then spends values the reported ledger holds exactly
    (found in review: float64 budgets reported rounded down to float32 under-reported ε spent by up to one float32
    ulp, ≈ 6·10⁻⁸ relative; a budget rounded down to float32 spends at most that much less)."""
    return jnp.float32 if noise == "grid" else dtype


def _fit(x, bdt, dtype):
    """`x` (a budget of the kernel's dtype) rounded toward 0 to `bdt` (`_budget_dtype`), held in `dtype`."""
    with jax.enable_x64(True):
        return _down(jnp.asarray(x).astype(jnp.float64), bdt, exact=True).astype(dtype)


def _spent(units, quantum64, dtype):
    """The budget of `units` quanta (computed in float64), rounded down to `dtype`."""
    with jax.enable_x64(True):
        return _down(units.astype(jnp.float64) * quantum64, dtype)


def _eps_down(eps: float, dtype) -> np.ndarray:
    """ε as the kernel gets it: the largest value of `dtype` ≤ ε (the budgets are derived from it)."""
    v = np.asarray(eps, dtype)
    return np.nextafter(v, v.dtype.type(0)) if float(v) > eps else v


FLOAT_DIFFERENCE_CAP = 2.0**24  # the float modes' cap on one column's |c − o_l| (`difference_cap`)


def difference_cap(*, noise: str, sensitivity):
    """The public cap K on each column's ``|c − o_l|`` as BD/BA's dissimilarity reads it: the runs take the mean
    (per group: the group's mean) of ``min(|c − o_l|, K)``, in float64. The clip is 1-Lipschitz, so the sensitivity
    stays 1/d; the published counts keep their own cap (`count_cap`).

    * ``noise="grid"``: K = (2²⁹ − 1)·γ, the largest value of the dissimilarity's grid γ (its `sensitivity`/256
      or finer, 256·d times finer than the counts'). Found in review: clipping the counts and the last release to
      [0, K] each (K = 16,384 at d = 100) hid every change between two levels above K — a stream stepping from
      40,000 to 80,000 was never published again.
    * ``"float"``, ``"float64"``: K = 2²⁴ (`FLOAT_DIFFERENCE_CAP`). Found in review: with ``noise="float64"``
      the counts (up to 2⁵³) were summed unclipped, and near 2⁵³ one count + 1 moved the float64 mean by 1
      instead of 1/d (100× its sensitivity at d = 100). With each term below 2²⁴ the float64 sum of d terms is
      within d²·2⁻²⁹ of exact (10⁻⁶ of the sensitivity 1/d at d = 100), as in the float mode, whose counts stop
      at 2²⁴.

    Traceable in `sensitivity`; call inside ``jax.enable_x64`` for the grid's float64 value.
    """
    noise = mechanisms.check_noise(noise)  # (found in review: noise="bogus" returned the float cap)
    if noise != "grid":
        return FLOAT_DIFFERENCE_CAP
    return (2**29 - 1) * mechanisms.grid_spacing(jnp.asarray(sensitivity, jnp.float64))


def _differences(c, last, dis_sensitivity, noise):
    """``min(|c − o_l|, K)`` per column in float64 (`difference_cap`). Traceable; call inside ``jax.enable_x64``."""
    diff = jnp.abs(c.astype(jnp.float64) - last.astype(jnp.float64))
    return jnp.minimum(diff, difference_cap(noise=noise, sensitivity=dis_sensitivity))


def _above(dis, lam):
    """The private test ``dis > λ``, in float64 (the noisy dissimilarity's precision; λ is public)."""
    with jax.enable_x64(True):
        return dis > lam.astype(jnp.float64)


def _step(method, w, eps, d, state, xs, shift=False, noise="float"):
    c, key, force = xs  # force: −1 use the private test, 0 force null, 1 force publish
    k_dis, k_pub = jax.random.split(key)
    dtype = c.dtype
    bdt = _budget_dtype(noise, dtype)
    # the budgets from ε (at or below the user's ε: `_eps_down`) in float64, each rounded down to the kernel's
    # dtype (`_down`; float32 with grid: `_budget_dtype`), so that every window's sum stays within ε exactly; the
    # noise spends these same values, and the ledger reports them
    with jax.enable_x64(True):
        eps64 = jnp.asarray(eps).astype(jnp.float64)
        e1_64, dis_sensitivity, per_window64 = _budgets(w, eps64, d, shift)
        uniform64 = eps64 / w
    e1 = _down(e1_64, bdt).astype(dtype)
    eps = _fit(eps, bdt, dtype)
    zero = jnp.zeros((), dtype)
    no = jnp.asarray(False)
    if method == "uniform":
        e_u = _down(uniform64, bdt, exact=w == 1).astype(dtype)  # w = 1: ε itself, as Sample spends it
        out = mechanisms.laplace_mechanism(k_pub, c, epsilon=e_u, sensitivity=1.0, noise=noise, coordinates=1)
        return state, (out, zero, e_u, jnp.asarray(True), no)
    if method == "sample":
        pub = state.phase == 0  # the schedule is the budget: never overridden
        out = jax.lax.cond(
            pub, lambda: mechanisms.laplace_mechanism(k_pub, c, epsilon=eps, sensitivity=1.0, noise=noise, coordinates=1),
            lambda: state.last,
        )  # noise drawn only at publications (a single stream runs one branch)
        state = state._replace(last=out, phase=(state.phase + 1) % w)
        return state, (out, zero, jnp.where(pub, jnp.asarray(eps, dtype), zero), pub, no)
    # BD and BA: private dissimilarity (M_{i,1}): MAE has sensitivity 1/d. It is summed, noised and compared with
    # its threshold in float64 whatever the kernel's dtype (a float64 island in a float32 program): summed in
    # float32, neighbouring counts moved it by up to 4× its sensitivity at d = 1,000 and counts ≈ 4·10⁴, 128× near
    # 2²⁴ (found in review). Only the decision (a boolean, part of the release) leaves the island.
    with jax.enable_x64(True):
        dis = mechanisms.laplace_mechanism(k_dis, jnp.mean(_differences(c, state.last, dis_sensitivity, noise)),
                                           epsilon=e1.astype(jnp.float64), sensitivity=dis_sensitivity, noise=noise)
        quanta = _quanta(method, w)
        quantum64 = per_window64 / quanta
    eps1 = e1
    quantum = quantum64.astype(dtype)  # for the public thresholds λ; the spent budgets round down (`_down`)
    since = jnp.minimum(state.since + 1, _SINCE_CAP)  # i − l, exact
    if method == "bd":
        left = quanta - jnp.sum(state.recent, dtype=jnp.int32)  # ε_rm in quanta: exact
        spend = left // 2
        lam = 2.0 / jnp.maximum(left.astype(dtype) * quantum, 1e-30)  # the paper's threshold 2/ε_rm
        pub = jnp.where(force >= 0, force == 1, _above(dis, lam)) & (spend > 0)
        nullified = no
    else:  # "ba": budgets in units ε/(2w) (P/w with shift)
        to_nullify = state.units_l2 - 1
        nullified = since <= to_nullify
        spend = jnp.minimum(since - to_nullify, w)
        lam = 1.0 / (spend.astype(dtype) * quantum)
        pub = jnp.where(force >= 0, force == 1, _above(dis, lam)) & ~nullified
    pub = pub & (spend.astype(dtype) * quantum >= _min_publication_budget(noise))
    spent = jnp.where(pub, spend, 0).astype(jnp.int32)
    eps2 = _spent(spent, quantum64, bdt).astype(dtype)
    # Noise only where a publication happens: in a single stream `lax.cond` runs one branch, so a null
    # timestamp draws nothing (under vmap it becomes a select and both run, as before). The branch taken
    # depends only on the published decision, which is part of the release.
    out = jax.lax.cond(
        pub,
        lambda: mechanisms.laplace_mechanism(k_pub, c, epsilon=jnp.where(pub, eps2, eps), sensitivity=1.0, noise=noise,
                                             coordinates=1),  # one user changes one count
        lambda: state.last,
    )
    recent = jnp.concatenate([state.recent[1:], spent[None]]) if w > 1 else state.recent
    state = _State(
        out, jnp.where(pub, 0, since).astype(jnp.int32), state.phase, jnp.where(pub, spent, state.units_l2), recent
    )
    return state, (out, eps1, eps2.astype(dtype), pub, nullified)


def _phase(start: int, w: int) -> int:
    return (start - 1) % w


@programs.program(static_argnames=("method", "w", "shift", "noise"))
def _run(key, counts, force, eps, first, phase, *, method, w, shift=False, noise="float"):
    t, d = counts.shape
    dtype = counts.dtype
    state = _init(d, w, phase, dtype)
    keys = jax.vmap(lambda k: jax.random.fold_in(key, k))(first + jnp.arange(t, dtype=jnp.uint32))
    if method == "uniform":  # no state: every timestamp's step at once (the same keys and draws as the scan)
        out = jax.vmap(lambda c, k, f: _step(method, w, eps, d, state, (c, k, f), shift, noise)[1])(counts, keys, force)
        return WEventResult(*out)
    _, out = jax.lax.scan(lambda s, xs: _step(method, w, eps, d, s, xs, shift, noise), state, (counts, keys, force))
    return WEventResult(*out)


def _check_start(start, t: int) -> int:
    start = _validate.size("start", start)
    if start - 1 + t > 2**32:
        raise ValueError(f"start = {start} with {t} timestamps passes timestamp 2**32: keys are indexed by uint32.")
    return start


def run(
    key: jax.Array, counts, *, method: str, w: int, epsilon: float, decisions=None, shift: bool | str = False,
    start: int = 1, noise: str = "float", initial: str = "zero",
) -> WEventResult:
    """Publish a count stream with w-event ε-differential privacy.

    Privacy:
      w-event ε-DP (Kellaris et al., Theorem 3): for every window of w timestamps, Σ(ε_{i,1} + ε_{i,2})
      ≤ ε; the ledger in the result lets you check it (`window_sums`). Each user contributes to one
      count per timestamp (L1 sensitivity 1, MAE sensitivity 1/d), as in the paper.

    Args:
      key: typed PRNG key; a key array ``[R]`` runs R repetitions (outputs gain a leading axis).
      counts: non-negative counts, ``[T, d]`` (rows = timestamps): any array NumPy can read (checked and cast to
        float32, or float64 with ``noise="float64"``, in one pass on the host), or a JAX array of that dtype
        (checked where it lives and used as it is: no copy).
      method: ``"uniform"``, ``"sample"``, ``"bd"`` or ``"ba"``.
      w: window length ≥ 1. epsilon: ε > 0 per window.
      decisions: optional ``[T]`` ints (1 publish, 0 null, −1 let the mechanism decide) that override
        the private publish test — **only** for reproducing worked examples (paper Figs. 3 and 5); a
        decision computed from the data is not private. Budgets follow the pseudocode either way.
      shift: BD/BA only: the paper's Sec. 4.5 optimization for d ≫ w: dissimilarity noise 1/ε
        (ε_{i,1} = ε/d), leaving ε − w·ε/d > ε/2 per window for publications. Requires d > 2w.
        ``"auto"``: the paper's rule, on when d ≥ 10·w (`SHIFT_AUTO_RATIO`) for BD/BA, off for Uniform and Sample
        (which have no dissimilarity to shift; ``True`` is refused there). Measured on synthetic streams
        (RESULTS): it helps at w = 10 and, for BA, at ε = 1 (MAE × 0.45–0.86), and hurts at ε = 0.1 with
        w ≥ 40 (× 1.0–1.9) whatever d/w — the rule is the paper's, not a guarantee.
      start: the (1-based) timestamp of ``counts[0]`` for a stream that starts late: it sets Sample's
        schedule phase and the keys (timestamp i uses ``fold_in(key, i − 1)``, i − 1 < 2³²). The
        mechanism itself starts fresh (no earlier publication, an empty budget ledger): it does not continue a
        stream released by an earlier call — windows across the two calls may spend up to 2ε; use one
        `WEventStream` for that. With the key of an earlier call, timestamps the two calls share draw the
        *same* noise (found in review): give every call its own fresh key. Counters are integers, so a stream at
        timestamp 2³¹ behaves exactly as one at timestamp 1.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact discrete Laplace on the grid
        2⁻⁸ for counts; a BD/BA publication whose budget is too small to sample exactly is null).
      initial: the paper leaves the first release undefined. ``"zero"`` (default): the last release
        before the stream is the all-zero vector (public), and the private test decides at timestamp 1
        as anywhere else. ``"publish"`` (BD/BA only): timestamp 1 (of this run, ``counts[0]``) always
        publishes, with the budget the pseudocode gives a publication there (BD ε/4, BA ε/(2w)), as the
        Java w-event benchmark does. The decision is public (it depends on no data), the ledger
        records it, and every window still spends at most ε. Measured (RESULTS, "start-up"): "zero"
        wins on sparse streams, "publish" on dense streams with small w.

    Returns:
      A `WEventResult`.
    """
    _validate.key(key)
    if key.ndim > 1:
        raise ValueError(f"key must be one typed key or a 1-D key array [R] (one run per key); got shape {key.shape}.")
    _validate.option("method", method, METHODS)
    _validate.size("w", w, hi=MAX_WINDOW, why="the window's budgets are kept in a buffer of w entries (found in "
                   "review: w = 10⁹ took 8 GB).")
    _validate.eager_epsilon(epsilon, "wevent.run")
    noise = mechanisms.check_noise(noise)
    with _arithmetic(noise):
        _check_epsilon_range(float(epsilon), int(w))
        counts = _whole_counts(counts, _validate.float_dtype())
        data, hi = check_counts(counts, dtype=_validate.float_dtype(), with_max=True)  # checked and cast in one pass
    t = data.shape[0]
    shift = _check_shift(shift, method, data.shape[1], int(w))
    _check_grid(noise, method, w, float(epsilon), data.shape[1], shift)
    with _arithmetic(noise):
        data = _clamp_counts(data, hi, count_cap(noise=noise), counts)
    if decisions is not None and method in ("uniform", "sample"):
        raise ValueError(f"decisions apply to 'bd' and 'ba' only; {method!r} publishes on a fixed schedule.")
    force = np.full(t, -1) if decisions is None else np.asarray(decisions)
    if force.shape != (t,) or not np.isin(force, (-1, 0, 1)).all():
        raise ValueError(f"decisions must be {t} values in {{-1, 0, 1}}.")
    forced = force != -1  # the caller's overrides, before the public start-up rule below adds its own
    if _check_initial(initial, method) == "publish" and t > 0:
        if force[0] == 0:  # found in review: silently overridden
            raise ValueError("decisions[0] = 0 (skip) contradicts initial='publish' (publish at the first timestamp); "
                             "drop one of them.")
        force = force.copy()
        force[0] = 1
    start = _check_start(start, t)
    with _arithmetic(noise):
        f = jnp.asarray(force, jnp.int32)
        kw = dict(method=method, w=int(w), shift=bool(shift), noise=mechanisms.kernel_noise(noise))
        args = (jnp.asarray(start - 1, jnp.uint32), jnp.asarray(_phase(start, int(w)), jnp.int32))
        eps_k = _eps_down(float(epsilon), data.dtype)
        if key.shape == ():
            out = _run(key, data, f, eps_k, *args, **kw)
        else:
            out = _run.over_keys(key, data, f, eps_k, *args, **kw)
    return _released(out, noise)._replace(forced=jnp.asarray(np.broadcast_to(forced, out.published.shape)))


SHIFT_AUTO_RATIO = 10  # shift="auto": the paper's "d ≫ w" read as d ≥ 10·w


def _arithmetic(noise):
    """The precision a stream computes in: float64 for ``noise="float64"`` and ``"grid"`` (the exact sampler's
    pure ε-DP needs the dissimilarity summed without float32 rounding), else the default float dtype."""
    return mechanisms.precision("float64" if noise == "grid" else noise)


def _released(result: WEventResult, noise) -> WEventResult:
    """``noise="grid"`` computes in float64 but releases in the default float dtype, as before (a cast of the
    release: post-processing)."""
    if noise != "grid":
        return result
    dtype = _validate.float_dtype()
    # the ledger rounded toward 0 (exact: the kernels spend budgets of the default float dtype, `_budget_dtype`)
    return result._replace(releases=result.releases.astype(dtype),
                           eps1=jnp.asarray(_host.round_toward_zero(result.eps1, dtype)),
                           eps2=jnp.asarray(_host.round_toward_zero(result.eps2, dtype)))


def _check_shift(shift, method, d, w) -> bool:
    """Validate `shift` and resolve ``"auto"`` (public: method, d, w) to a bool."""
    if isinstance(shift, str):
        if shift != "auto":
            raise ValueError(f'shift must be True, False or "auto", got {shift!r}.')
        return method in ("bd", "ba") and d >= SHIFT_AUTO_RATIO * w
    if not isinstance(shift, (bool, np.bool_)):
        raise TypeError(f'shift must be True, False or "auto", got {shift!r}.')
    if shift and (method not in ("bd", "ba") or d <= 2 * w):
        raise ValueError("shift applies to 'bd'/'ba' with d > 2w (it spends ε/d instead of ε/(2w) on dissimilarity).")
    return bool(shift)


def _check_initial(initial, method) -> str:
    _validate.option("initial", initial, INITIAL)
    if initial == "publish" and method not in ("bd", "ba"):
        raise ValueError(
            f"initial='publish' applies to 'bd' and 'ba'; {method!r} publishes on a fixed schedule (use initial='zero')."
        )
    return initial


def _check_epsilon_range(eps, w):
    """Refuse an ε whose per-timestamp budgets or their quanta (ε/2³¹ for BD) would overflow or fall below the
    normal range of the kernel's float dtype (ε = 1e39 is inf in float32, ε = 1e-38 / w is 0)."""
    info = np.finfo(_validate.float_dtype())
    lo, hi = float(info.tiny) * 2.0**40 * w, float(info.max) * 2.0**-40
    if not lo <= eps <= hi:
        hint = "" if info.dtype == np.float64 else ' (or use noise="float64")'
        raise ValueError(f"epsilon = {eps:g} is outside [{lo:.3g}, {hi:.3g}], where this stream's budgets stay exact "
                         f"in {info.dtype}{hint}.")


def _check_grid(noise, method, w, eps, d, shift=False):
    """noise="grid": refuse settings whose fixed budgets cannot be sampled exactly (checked eagerly)."""
    if noise != "grid":
        return
    if method == "uniform":
        mechanisms.check_grid_ratio(epsilon=eps / w, sensitivity=1.0)
    elif method == "sample":
        mechanisms.check_grid_ratio(epsilon=eps, sensitivity=1.0)
    else:
        e1, dis_sens, per_window = _budgets(w, eps, d, shift)
        mechanisms.check_grid_ratio(epsilon=e1, sensitivity=dis_sens)
        # the largest publication budget (BA: all of P; BD: half of it) must keep b/γ ≥ 1, else the sampler
        # raises the ratio to 1: more noise than the ledger says (found in review)
        mechanisms.check_grid_ratio(epsilon=per_window if method == "ba" else per_window / 2, sensitivity=1.0)


def _init(d, w, phase=0, dtype=None):
    """A fresh stream: o_l = 0 (public), no publication yet (ε_{l,2} one unit, as in the paper's BA)."""
    zero = jnp.zeros((), jnp.int32)
    return _State(
        jnp.zeros((d,), dtype or _validate.float_dtype()), zero, jnp.asarray(phase, jnp.int32), jnp.ones((), jnp.int32),
        jnp.zeros((max(w - 1, 1),), jnp.int32),
    )  # fmt: skip


@functools.partial(jax.jit, static_argnames=("method", "w", "d", "shift", "noise"))
def _push(state, c, key, eps, force, *, method, w, d, shift=False, noise="float"):
    return _step(method, w, eps, d, state, (c, key, force), shift, noise)


class WEventStream:
    """Streaming front end: ``push(c_i)`` → a one-timestamp `WEventResult`, one timestamp at a time.

    Gives the same releases as `run` for the same key and settings, `shift` and `initial` included (timestamp i uses
    ``fold_in(key, i − 1)``).
    Holds only the last release, the last publication's budget and the last w − 1 publication
    budgets: O(d + w) memory, no raw counts kept.
    """

    def __init__(self, key: jax.Array, *, d: int, method: str, w: int, epsilon: float, shift: bool | str = False,
                 start: int = 1, noise: str = "float", initial: str = "zero"):
        _validate.eager("WEventStream", way_out="make one per key (each takes a single key), outside jax.jit and jax.vmap", key=key)  # (its state would be traced; `run` takes traced keys)
        _validate.key(key)
        if key.shape != ():
            raise ValueError(f"WEventStream takes one typed key, got a key array of shape {key.shape} (one stream per key).")
        _validate.option("method", method, METHODS)
        self.d, self.w = _validate.size("d", d), _validate.size("w", w, hi=MAX_WINDOW, why="the window's budgets are kept in a buffer of w entries.")
        _validate.eager_epsilon(epsilon, "WEventStream")
        self.noise = mechanisms.check_noise(noise)
        with _arithmetic(self.noise):
            _check_epsilon_range(float(epsilon), self.w)
        shift = _check_shift(shift, method, self.d, self.w)
        _check_grid(self.noise, method, self.w, float(epsilon), self.d, shift)
        self.key, self.method, self.eps, self.shift = key, method, float(epsilon), shift
        self.cap = count_cap(noise=self.noise)
        self.initial = _check_initial(initial, method)
        self.start = _check_start(start, 1)
        with _arithmetic(self.noise):  # noise="float64" or "grid": the state's last release in float64 too
            self.dtype = _validate.float_dtype()
            self.state = _init(self.d, self.w, _phase(self.start, self.w), self.dtype)
        self.i = self.start - 1  # the last timestamp pushed (a Python int: exact)

    def push(self, counts) -> WEventResult:
        """Release timestamp i's counts ``[d]``; returns a `WEventResult` of this one timestamp (``releases [1, d]``
        and the ledger entries ``[1]``): the results of all pushes, concatenated, are `run`'s."""
        _validate.eager("WEventStream.push", way_out="make one per key (each takes a single key), outside jax.jit and jax.vmap", counts=counts)
        if np.ndim(counts) != 1:
            raise ValueError(f"push takes one timestamp's {self.d} counts (a 1-D array), got shape {np.shape(counts)}.")
        with _arithmetic(self.noise):  # checked and cast as `run` does (1e300 into float32 is refused)
            counts = _whole_counts(np.asarray(counts).reshape(1, -1), self.dtype)
            c, hi = check_counts(counts, dtype=self.dtype, with_max=True)
            if c.shape[1] != self.d:
                raise ValueError(f"expected {self.d} counts, got {c.shape[1]}.")
            c = _clamp_counts(c, hi, self.cap, counts)[0]
        if self.i >= 2**32:
            raise ValueError("timestamp 2**32 reached: keys are indexed by uint32; start a new stream with a new key.")
        force = 1 if (self.initial == "publish" and self.i == self.start - 1) else -1
        self.i += 1
        key = jax.random.fold_in(self.key, jnp.asarray(self.i - 1, jnp.uint32))
        with _arithmetic(self.noise):
            self.state, (o, e1, e2, pub, nul) = _push(
                self.state, c, key, _eps_down(self.eps, self.dtype), jnp.asarray(force, jnp.int32),
                method=self.method, w=self.w, d=self.d,
                shift=self.shift, noise=mechanisms.kernel_noise(self.noise),
            )  # fmt: skip
        out = WEventResult(*(np.asarray(v)[None] for v in (o, e1, e2, pub, nul)), forced=np.zeros(1, bool))
        return _released(out, self.noise)


