"""Column partitioning (Sec. 4.5) with a joint budget ledger: `run_partitioned`."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from jaxdp import _host, _validate, mechanisms
from jaxdp.wevent.methods import (
    MAX_WINDOW,
    _SINCE_CAP,
    _above,
    _arithmetic,
    _check_epsilon_range,
    _clamp_counts,
    _differences,
    _budget_dtype,
    _down,
    _eps_down,
    _spent,
    _min_publication_budget,
    _quanta,
    _whole_counts,
    check_counts,
    count_cap,
)

__all__ = ['PartitionedResult', 'run_partitioned']


class PartitionedResult(NamedTuple):
    """Releases and joint ledger of `run_partitioned` (leading ``[R]`` for repetitions).

    Attributes:
      releases: ``[T, d]``. eps1: ε_{i,1} per timestamp (every group spends it; the max over groups).
      eps2: the max over groups of ε_{g,i,2}: the privacy loss at i of a user in any group. group_eps2:
      ``[T, G]``. published: ``[T, G]``. groups: the column → group assignment used at each timestamp
      ``[T, d]`` (a function of earlier releases only). Properties: `epsilon_spent`, `private`.
    """

    releases: Float[Array, "T d"]
    eps1: Float[Array, " T"]
    eps2: Float[Array, " T"]
    group_eps2: Float[Array, "T G"]
    published: Bool[Array, "T G"]
    groups: jax.Array

    @property
    def epsilon_spent(self) -> jax.Array:
        """The privacy loss at each timestamp of a user in any group, ``eps1 + eps2`` ``[T]``."""
        return self.eps1 + self.eps2

    @property
    def private(self) -> bool:
        """True: w-event ε-DP given a secret key used once (jaxdp cannot see where a key came from)."""
        return True


def _group_sizes(d, g):
    return np.asarray([d // g + (j < d % g) for j in range(g)], np.int64)


@functools.partial(jax.jit, static_argnames=("method", "w", "g", "regroup_every", "noise"))
def _run_partitioned(key, counts, eps, *, method, w, g, regroup_every, noise="float"):
    t, d = counts.shape
    dtype = counts.dtype
    sizes = _group_sizes(d, g)
    bounds = jnp.asarray(np.cumsum(sizes))  # rank r belongs to group #(bounds <= r)
    sizes_j = jnp.asarray(sizes, dtype)
    quanta = _quanta(method, w)  # the joint ledger counts integer quanta of P (exact)
    with jax.enable_x64(True):  # budgets from ε in float64, spent rounded down (`methods._down`, as `run`)
        eps64 = jnp.asarray(eps).astype(jnp.float64)
        quantum64 = eps64 / 2.0 / quanta
        e1_64 = eps64 / (2.0 * w)
    quantum = quantum64.astype(dtype)  # for the public thresholds
    bdt = _budget_dtype(noise, dtype)  # budgets of the reported ledger's dtype (grid: float32), spent as reported
    e1 = _down(e1_64, bdt).astype(dtype)
    eps = jnp.asarray(eps).astype(dtype)
    group0 = jnp.asarray(np.repeat(np.arange(g), sizes))  # contiguous public start

    def step(state, xs):
        last, grp, since, units_l2, recent, acc, phase = state
        c, k = xs
        k_dis, k_pub = jax.random.split(k)
        with jax.enable_x64(True):  # summed, noised and tested in float64 whatever the kernel's dtype (`_step`)
            f64 = jnp.float64
            # each |c − o_l| capped (`difference_cap`; grid: the finest group's dissimilarity grid, 1/max size)
            diff = _differences(c, last, 1.0 / float(np.max(sizes)), noise)
            mae_g = jax.ops.segment_sum(diff, grp, num_segments=g) / sizes_j.astype(f64)
            dis = mechanisms.laplace_mechanism(k_dis, mae_g, epsilon=e1.astype(f64), sensitivity=1.0 / sizes_j.astype(f64),
                                               noise=noise, coordinates=1)  # 1/d_g; one user moves one group's score
        room = quanta - jnp.sum(recent, dtype=jnp.int32)  # joint ledger: Σ over the window of the max over groups
        since = jnp.minimum(since + 1, _SINCE_CAP)
        if method == "bd":
            spend = jnp.full((g,), room // 2)
            pub = _above(dis, 1.0 / jnp.maximum(spend.astype(dtype) * quantum, 1e-30)) & (spend > 0)
            nullified = jnp.zeros((g,), bool)
        else:  # "ba", each group absorbing its own skipped budget, capped by the joint room
            to_nullify = units_l2 - 1
            nullified = since <= to_nullify
            spend = jnp.minimum(jnp.minimum(since - to_nullify, w), room)
            pub = _above(dis, 1.0 / jnp.maximum(spend.astype(dtype) * quantum, 1e-30)) & ~nullified & (spend > 0)
        pub = pub & (spend.astype(dtype) * quantum >= _min_publication_budget(noise))
        spent = jnp.where(pub, spend, 0).astype(jnp.int32)
        eps2 = _spent(spent, quantum64, bdt).astype(dtype)
        noisy = mechanisms.laplace_mechanism(k_pub, c, epsilon=jnp.where(pub, eps2, eps)[grp], sensitivity=1.0, noise=noise,
                                             coordinates=1)  # one user, one count
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
        return state, (out, e1, _spent(top, quantum64, bdt).astype(dtype), eps2, pub, grp)

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
    _validate.key(key, max_ndim=1)
    method = _validate.option("method", method, ("bd", "ba"))
    w = _validate.size("w", w, hi=MAX_WINDOW, why="the window's budgets are kept in a buffer of w entries.")
    _validate.eager_epsilon(epsilon, "wevent.run_partitioned")
    noise = mechanisms.check_noise(noise)
    with _arithmetic(noise):  # float64 for "grid": the groups' dissimilarity sums without float32 rounding
        _check_epsilon_range(float(epsilon), int(w))
        counts = _whole_counts(counts, _validate.float_dtype())  # float32: fractions rounded first (as `run`)
        data, hi = check_counts(counts, dtype=_validate.float_dtype(), with_max=True)  # checked and cast in one pass
    g = _validate.size("groups", groups)
    if g > data.shape[1]:
        raise ValueError(f"groups = {g} exceeds the number of columns d = {data.shape[1]}.")
    p = None if regroup_every is None else _validate.size("regroup_every", regroup_every)
    if noise == "grid":
        # every group's dissimilarity has sensitivity 1/size: check each size (the ratio is not monotone in it)
        sizes = np.unique(np.asarray(_group_sizes(data.shape[1], g)))
        mechanisms.check_grid_ratio(epsilon=float(epsilon) / (2 * w), sensitivity=1.0 / sizes)
        # the largest publication budget (BA: P = ε/2, BD: half of it) with b/γ ≥ 1; counts the groups'
        # dissimilarity grid holds (the finest: the largest group), as `run` checks
        mechanisms.check_grid_ratio(epsilon=float(epsilon) / 2 / (1 if method == "ba" else 2), sensitivity=1.0)
    with _arithmetic(noise):
        data = _clamp_counts(data, hi, count_cap(noise=noise), counts)
        kw = dict(method=method, w=int(w), g=g, regroup_every=p, noise=mechanisms.kernel_noise(noise))
        eps_k = _eps_down(float(epsilon), data.dtype)
        if key.shape == ():
            out = _run_partitioned(key, data, eps_k, **kw)
        else:
            out = jax.vmap(lambda k: _run_partitioned(k, data, eps_k, **kw))(key)
    if noise == "grid":  # released in the default float dtype, as before (a cast of the release)
        dtype = _validate.float_dtype()
        down = _host.round_toward_zero  # the ledger: exact (the kernel spends budgets of this dtype)
        out = out._replace(releases=out.releases.astype(dtype), eps1=jnp.asarray(down(out.eps1, dtype)),
                           eps2=jnp.asarray(down(out.eps2, dtype)), group_eps2=jnp.asarray(down(out.group_eps2, dtype)))
    return out
