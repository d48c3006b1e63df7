"""w-event privacy for count streams (Kellaris et al., VLDB 2014): Uniform, Sample, BD and BA.

At each timestamp i a vector c_i of d counts arrives (each user contributes to one count, so the
count vector has L1 sensitivity 1 and its mean absolute deviation 1/d), and a release o_i goes out:
either noisy counts or "null", meaning the last non-null release o_l stands for c_i. Every window of
w consecutive timestamps spends at most ε (the paper's Theorem 3); each run returns its budget
ledger so that this is checked, not assumed.

* ``uniform``: ``c_i + Lap(w/ε)`` at every timestamp (ε_i = ε/w).
* ``sample``: ``c_i + Lap(1/ε)`` when ``i mod w = 1`` (1-based), null otherwise.
* ``bd`` (Budget Distribution, Fig. 2): dissimilarity ``dis = MAE(c_i, o_l) + Lap(2w/(εd))`` with
  ε_{i,1} = ε/(2w); remaining budget ``ε_rm = ε/2 − Σ_{k=i−w+1}^{i−1} ε_{k,2}``; publish with
  ``Lap(2/ε_rm)`` (ε_{i,2} = ε_rm/2) iff ``dis > 2/ε_rm``.
* ``ba`` (Budget Absorption, Fig. 4): ε_{i,1} as BD; a publication at l that absorbed budget
  nullifies the next ``ε_{l,2}/(ε/(2w)) − 1`` timestamps; otherwise ``ε_{i,2} = ε/(2w)·min(i − (l +
  to_nullify), w)`` and publish with ``Lap(1/ε_{i,2})`` iff ``dis > 1/ε_{i,2}``.

The whole stream is one `lax.scan` over timestamps (vmappable over keys for repetitions); `WEventStream`
pushes one timestamp at a time with the same output. At i = 1 there is no earlier release and o_l is
the all-zero vector (public); ``initial="publish"`` instead publishes the first timestamp (BD/BA), as
the Java w-event benchmark does. Sec. 4.5's optimizations: ``shift=True`` (ε_{i,1} = ε/d) and
`run_partitioned` (column groups, with a joint ledger — the paper's independent per-group instances do not
bound the loss of a user who moves between groups).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from jaxdp import _checks, exact, mechanisms

__all__ = [
    "INITIAL", "METHODS", "SHIFT_AUTO_RATIO", "WEventResult", "WEventStream", "run", "run_partitioned", "PartitionedResult", "window_sums", "mae", "mre", "load_counts", "synthetic_counts",
]  # fmt: skip

METHODS = ("uniform", "sample", "bd", "ba")
INITIAL = ("zero", "publish")  # what stands before the first publication: o_0 = 0, or publish timestamp 1


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
    """

    releases: Float[Array, "T d"]
    eps1: Float[Array, " T"]
    eps2: Float[Array, " T"]
    published: Bool[Array, " T"]
    nullified: Bool[Array, " T"]


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


def _step(method, w, eps, d, state, xs, shift=False, noise="float"):
    c, key, force = xs  # force: −1 use the private test, 0 force null, 1 force publish
    k_dis, k_pub = jax.random.split(key)
    e1, dis_sensitivity, per_window = _budgets(w, eps, d, shift)
    dtype = c.dtype
    zero = jnp.zeros((), dtype)
    no = jnp.asarray(False)
    if method == "uniform":
        out = mechanisms.laplace_mechanism(k_pub, c, epsilon=eps / w, sensitivity=1.0, noise=noise)
        return state, (out, zero, jnp.asarray(eps / w, dtype), jnp.asarray(True), no)
    if method == "sample":
        pub = state.phase == 0  # the schedule is the budget: never overridden
        out = jax.lax.cond(
            pub, lambda: mechanisms.laplace_mechanism(k_pub, c, epsilon=eps, sensitivity=1.0, noise=noise),
            lambda: state.last,
        )  # noise drawn only at publications (a single stream runs one branch)
        state = state._replace(last=out, phase=(state.phase + 1) % w)
        return state, (out, zero, jnp.where(pub, jnp.asarray(eps, dtype), zero), pub, no)
    # BD and BA: private dissimilarity (M_{i,1}): MAE has sensitivity 1/d
    dis = mechanisms.laplace_mechanism(
        k_dis, jnp.mean(jnp.abs(c - state.last)), epsilon=e1, sensitivity=dis_sensitivity, noise=noise
    )
    eps1 = jnp.asarray(e1, dtype)
    quanta = _quanta(method, w)
    quantum = per_window / quanta
    since = jnp.minimum(state.since + 1, _SINCE_CAP)  # i − l, exact
    if method == "bd":
        left = quanta - jnp.sum(state.recent, dtype=jnp.int32)  # ε_rm in quanta: exact
        spend = left // 2
        lam = 2.0 / jnp.maximum(left.astype(dtype) * quantum, 1e-30)  # the paper's threshold 2/ε_rm
        pub = jnp.where(force >= 0, force == 1, dis > lam) & (spend > 0)
        nullified = no
    else:  # "ba": budgets in units ε/(2w) (P/w with shift)
        to_nullify = state.units_l2 - 1
        nullified = since <= to_nullify
        spend = jnp.minimum(since - to_nullify, w)
        lam = 1.0 / (spend.astype(dtype) * quantum)
        pub = jnp.where(force >= 0, force == 1, dis > lam) & ~nullified
    pub = pub & (spend.astype(dtype) * quantum >= _min_publication_budget(noise))
    spent = jnp.where(pub, spend, 0).astype(jnp.int32)
    eps2 = spent.astype(dtype) * quantum
    # Noise only where a publication happens: in a single stream `lax.cond` runs one branch, so a null
    # timestamp draws nothing (under vmap it becomes a select and both run, as before). The branch taken
    # depends only on the published decision, which is part of the release.
    out = jax.lax.cond(
        pub,
        lambda: mechanisms.laplace_mechanism(k_pub, c, epsilon=jnp.where(pub, eps2, eps), sensitivity=1.0, noise=noise),
        lambda: state.last,
    )
    recent = jnp.concatenate([state.recent[1:], spent[None]]) if w > 1 else state.recent
    state = _State(
        out, jnp.where(pub, 0, since).astype(jnp.int32), state.phase, jnp.where(pub, spent, state.units_l2), recent
    )
    return state, (out, eps1, eps2.astype(dtype), pub, nullified)


def _phase(start: int, w: int) -> int:
    return (start - 1) % w


@functools.partial(jax.jit, static_argnames=("method", "w", "shift", "noise"))
def _run(key, counts, force, eps, first, phase, *, method, w, shift=False, noise="float"):
    t, d = counts.shape
    dtype = counts.dtype
    state = _init(d, w, phase, dtype)
    keys = jax.vmap(lambda k: jax.random.fold_in(key, k))(first + jnp.arange(t, dtype=jnp.uint32))
    _, out = jax.lax.scan(lambda s, xs: _step(method, w, eps, d, s, xs, shift, noise), state, (counts, keys, force))
    return WEventResult(*out)


def _check_start(start, t: int) -> int:
    start = _checks.size("start", start)
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
      counts: non-negative counts, ``[T, d]`` (rows = timestamps).
      method: ``"uniform"``, ``"sample"``, ``"bd"`` or ``"ba"``.
      w: window length ≥ 1. epsilon: ε > 0 per window.
      decisions: optional ``[T]`` ints (1 publish, 0 null, −1 let the mechanism decide) that override
        the private publish test — **only** for reproducing worked examples (paper Figs. 3 and 5); a
        decision computed from the data is not private. Budgets follow the pseudocode either way.
      shift: BD/BA only: the paper's Sec. 4.5 optimization for d ≫ w: dissimilarity noise 1/ε
        (ε_{i,1} = ε/d), leaving ε − w·ε/d > ε/2 per window for publications. Requires d > 2w.
        ``"auto"``: the paper's rule, on when d ≥ 10·w (`SHIFT_AUTO_RATIO`). Measured on synthetic streams
        (RESULTS): it helps at w = 10 and, for BA, at ε = 1 (MAE × 0.45–0.86), and hurts at ε = 0.1 with
        w ≥ 40 (× 1.0–1.9) whatever d/w — the rule is the paper's, not a guarantee.
      start: the (1-based) timestamp of ``counts[0]`` for a stream that starts late: it sets Sample's
        schedule phase and the keys (timestamp i uses ``fold_in(key, i − 1)``, i − 1 < 2³²). The
        mechanism itself starts fresh (no earlier publication). Counters are integers, so a stream at
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
    _checks.key(key)
    _checks.option("method", method, METHODS)
    _checks.size("w", w)
    _checks.positive_scalar("epsilon", epsilon)
    noise = mechanisms.check_noise(noise)
    counts = check_counts(counts)
    t = counts.shape[0]
    shift = _check_shift(shift, method, counts.shape[1], int(w))
    _check_grid(noise, method, w, float(epsilon), counts.shape[1], shift)
    if decisions is not None and method in ("uniform", "sample"):
        raise ValueError(f"decisions apply to 'bd' and 'ba' only; {method!r} publishes on a fixed schedule.")
    force = np.full(t, -1) if decisions is None else np.asarray(decisions)
    if force.shape != (t,) or not np.isin(force, (-1, 0, 1)).all():
        raise ValueError(f"decisions must be {t} values in {{-1, 0, 1}}.")
    if _check_initial(initial, method) == "publish" and t > 0:
        force = force.copy()
        force[0] = 1
    start = _check_start(start, t)
    with mechanisms.precision(noise):
        data = jnp.asarray(counts, _checks.float_dtype())
        f = jnp.asarray(force, jnp.int32)
        kw = dict(method=method, w=int(w), shift=bool(shift), noise=mechanisms._kernel_noise(noise))
        args = (jnp.asarray(start - 1, jnp.uint32), jnp.asarray(_phase(start, int(w)), jnp.int32))
        if key.shape == ():
            return _run(key, data, f, float(epsilon), *args, **kw)
        return jax.vmap(lambda k: _run(k, data, f, float(epsilon), *args, **kw))(key)


SHIFT_AUTO_RATIO = 10  # shift="auto": the paper's "d ≫ w" read as d ≥ 10·w


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
    _checks.option("initial", initial, INITIAL)
    if initial == "publish" and method not in ("bd", "ba"):
        raise ValueError(
            f"initial='publish' applies to 'bd' and 'ba'; {method!r} publishes on a fixed schedule (use initial='zero')."
        )
    return initial


def _check_grid(noise, method, w, eps, d, shift=False):
    """noise="grid": refuse settings whose fixed budgets cannot be sampled exactly (checked eagerly)."""
    if noise != "grid":
        return
    if method == "uniform":
        mechanisms.check_grid_ratio(epsilon=eps / w, sensitivity=1.0)
    elif method == "sample":
        mechanisms.check_grid_ratio(epsilon=eps, sensitivity=1.0)
    else:
        e1, dis_sens, _ = _budgets(w, eps, d, shift)
        mechanisms.check_grid_ratio(epsilon=e1, sensitivity=dis_sens)


def _init(d, w, phase=0, dtype=None):
    """A fresh stream: o_l = 0 (public), no publication yet (ε_{l,2} one unit, as in the paper's BA)."""
    zero = jnp.zeros((), jnp.int32)
    return _State(
        jnp.zeros((d,), dtype or _checks.float_dtype()), zero, jnp.asarray(phase, jnp.int32), jnp.ones((), jnp.int32),
        jnp.zeros((max(w - 1, 1),), jnp.int32),
    )  # fmt: skip


@functools.partial(jax.jit, static_argnames=("method", "w", "d", "shift", "noise"))
def _push(state, c, key, eps, force, *, method, w, d, shift=False, noise="float"):
    return _step(method, w, eps, d, state, (c, key, force), shift, noise)


class WEventStream:
    """Streaming front end: ``push(c_i) → (o_i, ledger entry)`` one timestamp at a time.

    Gives the same releases as `run` for the same key and settings, `shift` and `initial` included (timestamp i uses
    ``fold_in(key, i − 1)``).
    Holds only the last release, the last publication's budget and the last w − 1 publication
    budgets: O(d + w) memory, no raw counts kept.
    """

    def __init__(self, key: jax.Array, *, d: int, method: str, w: int, epsilon: float, shift: bool | str = False,
                 start: int = 1, noise: str = "float", initial: str = "zero"):
        _checks.key(key)
        _checks.option("method", method, METHODS)
        self.d, self.w = _checks.size("d", d), _checks.size("w", w)
        _checks.positive_scalar("epsilon", epsilon)
        self.noise = mechanisms.check_noise(noise)
        shift = _check_shift(shift, method, self.d, self.w)
        _check_grid(self.noise, method, self.w, float(epsilon), self.d, shift)
        self.key, self.method, self.eps, self.shift = key, method, float(epsilon), shift
        self.initial = _check_initial(initial, method)
        with mechanisms.precision(self.noise):
            self.dtype = _checks.float_dtype()
        self.start = _check_start(start, 1)
        self.state = _init(self.d, self.w, _phase(self.start, self.w), self.dtype)
        self.i = self.start - 1  # the last timestamp pushed (a Python int: exact)

    def push(self, counts) -> tuple[np.ndarray, dict]:
        """Release timestamp i's counts ``[d]``; returns ``(o_i, {"eps1", "eps2", "published", "nullified"})``."""
        c = check_counts(np.asarray(counts, np.float64).reshape(1, -1))[0]
        if c.shape[0] != self.d:
            raise ValueError(f"expected {self.d} counts, got {c.shape[0]}.")
        if self.i >= 2**32:
            raise ValueError("timestamp 2**32 reached: keys are indexed by uint32; start a new stream with a new key.")
        force = 1 if (self.initial == "publish" and self.i == self.start - 1) else -1
        self.i += 1
        key = jax.random.fold_in(self.key, jnp.asarray(self.i - 1, jnp.uint32))
        with mechanisms.precision(self.noise):
            self.state, (o, e1, e2, pub, nul) = _push(
                self.state, jnp.asarray(c, self.dtype), key, self.eps, jnp.asarray(force, jnp.int32),
                method=self.method, w=self.w, d=self.d,
                shift=self.shift, noise=mechanisms._kernel_noise(self.noise),
            )  # fmt: skip
        return np.asarray(o), {"eps1": float(e1), "eps2": float(e2), "published": bool(pub), "nullified": bool(nul)}


class PartitionedResult(NamedTuple):
    """Releases and joint ledger of `run_partitioned` (leading ``[R]`` for repetitions).

    Attributes:
      releases: ``[T, d]``. eps1: ε_{i,1} per timestamp (every group spends it; the max over groups).
      eps2: the max over groups of ε_{g,i,2}: the privacy loss at i of a user in any group. group_eps2:
      ``[T, G]``. published: ``[T, G]``. groups: the column → group assignment used at each timestamp
      ``[T, d]`` (a function of earlier releases only).
    """

    releases: Float[Array, "T d"]
    eps1: Float[Array, " T"]
    eps2: Float[Array, " T"]
    group_eps2: Float[Array, "T G"]
    published: Bool[Array, "T G"]
    groups: jax.Array


def _group_sizes(d, g):
    return np.asarray([d // g + (j < d % g) for j in range(g)], np.int64)


@functools.partial(jax.jit, static_argnames=("method", "w", "g", "regroup_every", "noise"))
def _run_partitioned(key, counts, eps, *, method, w, g, regroup_every, noise="float"):
    t, d = counts.shape
    dtype = counts.dtype
    sizes = _group_sizes(d, g)
    bounds = jnp.asarray(np.cumsum(sizes))  # rank r belongs to group #(bounds <= r)
    sizes_j = jnp.asarray(sizes, dtype)
    per_window = eps / 2.0
    quanta = _quanta(method, w)  # the joint ledger counts integer quanta of P (exact)
    quantum = per_window / quanta
    e1 = eps / (2.0 * w)
    group0 = jnp.asarray(np.repeat(np.arange(g), sizes))  # contiguous public start

    def step(state, xs):
        last, grp, since, units_l2, recent, acc, phase = state
        c, k = xs
        k_dis, k_pub = jax.random.split(k)
        mae_g = jax.ops.segment_sum(jnp.abs(c - last), grp, num_segments=g) / sizes_j
        dis = mechanisms.laplace_mechanism(k_dis, mae_g, epsilon=e1, sensitivity=1.0 / sizes_j, noise=noise)  # 1/d_g
        room = quanta - jnp.sum(recent, dtype=jnp.int32)  # joint ledger: Σ over the window of the max over groups
        since = jnp.minimum(since + 1, _SINCE_CAP)
        if method == "bd":
            spend = jnp.full((g,), room // 2)
            pub = (dis > 1.0 / jnp.maximum(spend.astype(dtype) * quantum, 1e-30)) & (spend > 0)
            nullified = jnp.zeros((g,), bool)
        else:  # "ba", each group absorbing its own skipped budget, capped by the joint room
            to_nullify = units_l2 - 1
            nullified = since <= to_nullify
            spend = jnp.minimum(jnp.minimum(since - to_nullify, w), room)
            pub = (dis > 1.0 / jnp.maximum(spend.astype(dtype) * quantum, 1e-30)) & ~nullified & (spend > 0)
        pub = pub & (spend.astype(dtype) * quantum >= _min_publication_budget(noise))
        spent = jnp.where(pub, spend, 0).astype(jnp.int32)
        eps2 = spent.astype(dtype) * quantum
        noisy = mechanisms.laplace_mechanism(k_pub, c, epsilon=jnp.where(pub, eps2, eps)[grp], sensitivity=1.0, noise=noise)
        out = jnp.where(pub[grp], noisy, last)
        top = jnp.max(spent)
        recent = jnp.concatenate([recent[1:], top[None]]) if w > 1 else recent
        acc = acc + (out - last) ** 2  # change of the *releases*: public
        since = jnp.where(pub, 0, since).astype(jnp.int32)
        units_l2 = jnp.where(pub, spent, units_l2)
        if regroup_every:
            phase = (phase + 1) % regroup_every  # i mod P, exact
            due = phase == 0
            rank = jnp.argsort(jnp.argsort(acc))  # columns ordered by the RMS change of their releases
            regrouped = jnp.sum(rank[:, None] >= bounds[None, :], axis=1)
            grp_next = jnp.where(due, regrouped, grp)
            acc = jnp.where(due, 0.0, acc)
        else:
            grp_next = grp
        state = (out, grp_next, since, units_l2, recent, acc, phase)
        return state, (out, jnp.asarray(e1, dtype), top.astype(dtype) * quantum, eps2, pub, grp)

    zero_g = jnp.zeros((g,), jnp.int32)
    state = (jnp.zeros((d,), dtype), group0, zero_g, jnp.ones((g,), jnp.int32), jnp.zeros((max(w - 1, 1),), jnp.int32),
             jnp.zeros((d,), dtype), jnp.zeros((), jnp.int32))
    keys = jax.vmap(lambda k: jax.random.fold_in(key, k))(jnp.arange(t, dtype=jnp.uint32))
    _, out = jax.lax.scan(step, state, (counts, keys))
    return PartitionedResult(*out)


def run_partitioned(key: jax.Array, counts, *, method: str, w: int, epsilon: float, groups: int,
                    regroup_every: int | None = None, noise: str = "float") -> PartitionedResult:
    """BD or BA with column partitioning (the paper's Sec. 4.5), with a **joint** budget ledger.

    Columns are split into `groups` public groups of fixed sizes (contiguous at the start; with
    `regroup_every = P`, every P timestamps the columns are re-ranked by the RMS change of their past
    *releases* — public data — and cut into groups of the same sizes). Each group runs its own dissimilarity
    test (MAE over its columns, noise 2w/(ε d_g)) and publication decision, all groups vectorized in one
    `lax.scan`.

    Privacy: w-event ε-DP. The paper runs an independent BD/BA per group and argues that no raw data is
    touched by the grouping; but a user may sit in different groups at different timestamps of one window
    (their count moves between columns), so the window's loss is Σ_k max_g ε_{g,k}, which independent
    per-group ledgers do not bound (a test builds a 5ε/8 > ε/2 publication window that way). jaxdp keeps
    one ledger of the per-timestamp *maximum* over groups: BD's remaining budget and BA's absorbed budget are
    both capped by ε/2 − Σ_{window} max_g ε_{g,k,2}, so every window spends ≤ ε/2 + ε/2.

    Args:
      key: typed PRNG key (a key array ``[R]`` runs repetitions). counts: ``[T, d]``. method: ``"bd"`` or
      ``"ba"``. w, epsilon: as in `run`. groups: number of groups G (1 ≤ G ≤ d). regroup_every: P or None.
      noise: as in `run`.

    Returns:
      `PartitionedResult`.
    """
    _checks.key(key)
    method = _checks.option("method", method, ("bd", "ba"))
    w = _checks.size("w", w)
    _checks.positive_scalar("epsilon", epsilon)
    counts = check_counts(counts)
    g = _checks.size("groups", groups)
    if g > counts.shape[1]:
        raise ValueError(f"groups = {g} exceeds the number of columns d = {counts.shape[1]}.")
    p = None if regroup_every is None else _checks.size("regroup_every", regroup_every)
    noise = mechanisms.check_noise(noise)
    if noise == "grid":
        mechanisms.check_grid_ratio(epsilon=float(epsilon) / (2 * w), sensitivity=1.0 / max(_group_sizes(counts.shape[1], g)))
    with mechanisms.precision(noise):
        data = jnp.asarray(counts, _checks.float_dtype())
        kw = dict(method=method, w=int(w), g=g, regroup_every=p, noise=mechanisms._kernel_noise(noise))
        if key.shape == ():
            return _run_partitioned(key, data, float(epsilon), **kw)
        return jax.vmap(lambda k: _run_partitioned(k, data, float(epsilon), **kw))(key)


def check_counts(counts) -> np.ndarray:
    """Validate a count stream ``[T, d]``: numeric, finite, non-negative, not empty."""
    try:
        arr = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"counts must be a rectangular numeric array [T, d] (ragged rows?): {err}") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"counts must have shape [T, d] with T, d >= 1, got {arr.shape}.")
    if not np.isfinite(arr).all():
        raise ValueError("counts contain NaN or inf.")
    if (arr < 0).any():
        t, j = np.argwhere(arr < 0)[0]
        raise ValueError(f"counts must be non-negative; found {arr[t, j]:g} at timestamp {t}, column {j}.")
    return arr


def window_sums(eps1, eps2, w: int) -> np.ndarray:
    """Σ of ε_{k,1} + ε_{k,2} over every window [i−w+1, i] (windows cut at the stream start), ``[T]``."""
    total = np.asarray(eps1, np.float64) + np.asarray(eps2, np.float64)
    csum = np.concatenate([np.zeros(total.shape[:-1] + (1,)), np.cumsum(total, axis=-1)], axis=-1)
    idx = np.arange(total.shape[-1])
    return csum[..., idx + 1] - csum[..., np.maximum(idx + 1 - w, 0)]


def mae(releases, counts) -> np.ndarray:
    """Mean absolute error over timestamps and columns (paper Sec. 5)."""
    return np.mean(np.abs(np.asarray(releases) - np.asarray(counts)), axis=(-2, -1))


def mre(releases, counts, *, sanity: float = 1.0) -> np.ndarray:
    """Mean relative error ``|o − c| / max(c, sanity)``.

    The paper does not say how zero counts enter its MRE; jaxdp uses the common sanity bound: a
    count below `sanity` (default 1, one user) is replaced by it in the denominator.
    """
    c = np.asarray(counts, np.float64)
    return np.mean(np.abs(np.asarray(releases) - c) / np.maximum(c, sanity), axis=(-2, -1))


def synthetic_counts(seed: int, *, timestamps: int = 1000, columns: int = 100, kind: str = "bursty") -> np.ndarray:
    """Seeded count streams with the character of the paper's data.

    ``"bursty"``: many columns of slowly varying counts (a random walk around a heavy-tailed base) with
    occasional bursts; ``"daily"``: a periodic daily pattern (period 24) times a per-column popularity;
    ``"sparse"``: rare events (Poisson rate 0.05 per column and timestamp: most counts are 0).
    """
    rng = np.random.default_rng(seed)
    base = rng.pareto(1.5, size=columns) * 20 + 1
    if kind == "daily":
        phase = 2 * np.pi * np.arange(timestamps)[:, None] / 24.0
        rate = base[None, :] * (1.2 + np.sin(phase + rng.uniform(0, 2 * np.pi, size=columns)))
    elif kind == "sparse":
        rate = np.full((timestamps, columns), 0.05)
    elif kind == "bursty":
        walk = np.exp(np.cumsum(rng.normal(0, 0.02, size=(timestamps, columns)), axis=0))
        bursts = 1 + 4 * (rng.random((timestamps, columns)) < 0.002).cumsum(axis=0) % 2
        rate = base[None, :] * walk * bursts
    else:
        raise ValueError(f"kind must be 'bursty', 'daily' or 'sparse', got {kind!r}.")
    return rng.poisson(rate).astype(np.float64)


def load_counts(path: str) -> np.ndarray:
    """A user's count stream from CSV (one row per timestamp, one column per count; header optional)."""
    with open(path) as f:
        lines = [ln.strip() for ln in f if ln.strip()]
    if not lines:
        raise ValueError(f"{path} is empty.")
    rows = [ln.split(",") for ln in lines]
    try:
        float(rows[0][0])
    except ValueError:
        rows = rows[1:]  # header
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ValueError(f"{path}: rows have different numbers of columns {sorted(widths)} (ragged rows).")
    try:
        return check_counts([[float(v) for v in r] for r in rows])
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
