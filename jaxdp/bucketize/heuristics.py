"""TwoSize (Algorithm 1), MultiSize (Algorithm 2) and Anatomy."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxdp import _validate
from jaxdp.bucketize.validity import (
    _TOL,
    _floor,
    check_fprime,
    record_partition,
    round_robin,
    value_counts,
)

__all__ = ['Bucketing', 'two_size_bucketing', 'multi_size_bucketing', 'two_size', 'anatomy', 'assign_records']


class Bucketing(NamedTuple):
    """A bucketization: `bucket[r]` is the bucket id of record r; `setting` lists (size, count) pairs."""

    bucket: np.ndarray
    setting: tuple


def assign_records(values_idx, classes):
    """Assign records to buckets: `classes` is a list of (S, b, per-value counts n) that partition the
    records; within each class RRA. Returns bucket ids per record."""
    values_idx = np.asarray(values_idx)
    bucket = np.empty(values_idx.size, np.int64)
    taken = np.zeros(values_idx.max() + 1, np.int64)
    order = np.argsort(values_idx, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(values_idx, minlength=taken.size))])
    offset = 0
    for s, b, n in classes:
        members = np.concatenate([order[starts[i] + taken[i] : starts[i] + taken[i] + n[i]] for i in range(taken.size)])
        taken += n
        bucket[members] = offset + round_robin(values_idx[members], b)
        offset += b
    return bucket


# --------------------------------------------------------------------------------------- two-size search
_FIRST_BATCH = 48  # size pairs searched before loss-based pruning (those of the smallest lower bound)
def _gammas(total, s1, s2):
    """Lemma 5.21 for arrays of size pairs: (ok, b1⁰, b2⁰, Δ1, Δ2, k) of Γ(S1, S2); `ok` is False where
    S1 b1 + S2 b2 = |T| has no solution with b1, b2 ≥ 0."""
    g = np.gcd(s1, s2)
    lcm = s1 * s2 // g
    d1, d2 = lcm // s1, lcm // s2
    # smallest b2 in [0, Δ2) with (total − S2 b2) divisible by S1 (Δ2 ≤ S1 ≤ M′: a short loop over b2)
    b2 = np.full(s1.shape, -1, np.int64)
    for cand in range(int(d2.max(initial=0))):
        hit = (b2 < 0) & (cand < d2) & ((total - s2 * cand) % s1 == 0)
        b2 = np.where(hit, cand, b2)
    ok = (total % g == 0) & (b2 >= 0) & (total - s2 * np.maximum(b2, 0) >= 0)
    b2 = np.maximum(b2, 0)
    b1 = np.where(ok, (total - s2 * b2) // s1, 0)
    return ok, b1, b2, d1, d2, b1 // d1


def _first_true(pred, lo, hi):
    """Smallest j in [lo, hi] with pred(j) true for a predicate that is monotone (F…F T…T) in j; hi + 1 if
    none. Vectorized: lo, hi and pred's result are arrays (over size pairs and values)."""
    lo = np.asarray(lo, np.int64).copy()
    hi = np.asarray(hi, np.int64) + 1
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        ok = pred(np.minimum(mid, hi - 1)) & (lo < hi)
        hi = np.where(ok, mid, hi)
        lo = np.where(~ok & (lo < hi), mid + 1, lo)
    return lo


def _first_linear(a, b, lo, hi):
    """The smallest integer j in [lo, hi] with ``a + j·b ≥ 0`` (integers; elementwise), hi + 1 if none —
    what `_first_true` finds by bisection for this predicate where it is monotone (b ≥ 0), in closed form.
    Where b < 0 the predicate holds on a prefix: the answer is lo if it holds there, else hi + 1."""
    big = np.iinfo(np.int64).max // 4
    pos = b > 0
    # b > 0: a + j b ≥ 0 ⟺ j ≥ ⌈−a/b⌉ = −⌊a/b⌋; b ≤ 0: true from lo on (if it holds at lo) or never in range
    j_star = np.where(pos, -(a // np.where(pos, b, 1)), np.where(a + lo * b >= 0, -big, big))
    return np.maximum(lo, np.minimum(j_star, hi + 1))


def _first_valid(o, fp, s1, s2, b10, b20, d1, d2, kprime, weight):
    """Theorem 5.30 for P size pairs at once: the first valid pair of each Γ′ (j ∈ [0, k′]) by binary
    searches (FC(S1) monotone, FC(S2) anti-monotone, PC(x_i) valid on a prefix ∪ a suffix whose ends are
    found by binary search). Arrays ``[P]``; values along a second axis ``[P, m]``: the distinct (o_i, f′_i)
    pairs, `weight` times each (values with the same count and f′ have the same conditions). Returns
    (found, j)."""
    col = lambda a: a[:, None]  # noqa: E731
    c1 = _floor(fp[None, :] * col(s1))
    c2 = _floor(fp[None, :] * col(s2))
    m = o.size

    def b1(j):
        return (b10 if j.ndim == 1 else col(b10)) - j * (d1 if j.ndim == 1 else col(d1))

    def b2(j):
        return (b20 if j.ndim == 1 else col(b20)) + j * (d2 if j.ndim == 1 else col(d2))

    zero = np.zeros(s1.shape, np.int64)
    fc1 = _first_true(lambda j: np.minimum(c1 * col(b1(j)), o) @ weight >= s1 * b1(j), zero, kprime)
    # FC(S2) anti-monotone: last j where it holds = first j where it fails − 1
    fc2_fail = _first_true(lambda j: np.minimum(c2 * col(b2(j)), o) @ weight < s2 * b2(j), zero, kprime)
    lo, hi = fc1, fc2_fail - 1
    # The per-value conditions are linear in j, so their binary searches have closed forms (exact integer
    # arithmetic): `_first_linear` = the smallest j in [lo, hi] with a + j·b ≥ 0, hi + 1 if none.
    zeros = np.zeros(c1.shape, np.int64)
    tops = np.broadcast_to(col(kprime), c1.shape)
    a_end = _first_linear(o - c1 * col(b10) - 1, c1 * col(d1), zeros, tops)  # c1 b1 ≥ o holds on [0, a_end)
    b_start = _first_linear(c2 * col(b20) - o, c2 * col(d2), zeros, tops)  # c2 b2 ≥ o holds on [b_start, k′]
    eq15_a = c1 * col(b10) + c2 * col(b20) - o  # Eq. (15): c1 b1 + c2 b2 − o = eq15_a + j·eq15_b ≥ 0
    eq15_b = c2 * col(d2) - c1 * col(d1)
    mono = eq15_b >= 0  # Eq. (16): PC monotone in the middle part
    mid_hi = np.maximum(b_start - 1, a_end - 1)
    first_hold = _first_linear(eq15_a, eq15_b, a_end, mid_hi)  # used where monotone
    first_fail = _first_linear(-eq15_a - 1, -eq15_b, a_end, mid_hi)  # used where anti-monotone (eq15 fails)
    # forbidden interval per value: [f_lo, f_hi) (empty when f_lo >= f_hi); jump past them to a fixed point
    f_lo = np.where(mono, a_end, first_fail)
    f_hi = np.where(mono, np.minimum(first_hold, b_start), b_start)
    j = lo.copy()
    live = lo <= hi
    for _ in range(m + 1):
        bad = live[:, None] & (f_lo <= col(j)) & (col(j) < f_hi)
        stuck = bad.any(1)
        if not stuck.any():
            break
        j = np.where(stuck, np.where(bad, f_hi, np.iinfo(np.int64).min).max(1), j)
        live &= j <= hi
    else:
        live &= ~((f_lo <= col(j)) & (col(j) < f_hi)).any(1)
    return live & (j <= hi), j


def two_size_bucketing(o, fp, *, m_min: int | None = None, m_max: int = 50) -> tuple | None:
    """TwoSizeBucketing (the paper's Algorithm 1): the optimal valid ⟨(S1, b1), (S2, b2)⟩ with
    M ≤ S1 < S2 ≤ M′ (b1 or b2 may be 0, so one-size settings are included), or None if none exists.

    The paper scans the size pairs in order with loss-based pruning (Lemma 5.25) and finds the first
    valid pair of each Γ(S1, S2) by binary searches (privacy-based pruning, Theorem 5.30). Here the size
    pairs are searched in two batches (NumPy arrays over pairs × values): the pairs of smallest lower
    bound, then every pair that can still reach the best loss, each only over the prefix of Γ that can;
    the result is the first pair, in the paper's scan order, with the smallest loss — the same as the
    sequential scan, whose pruning only skips pairs that cannot beat the best so far strictly (checked
    against it in the tests).

    Args:
      o: counts o_i ``[m]``. fp: f′_i ``[m]``. m_min: M (default min_i ⌈1/f′_i⌉). m_max: M′.

    Returns:
      ``((S1, b1), (S2, b2), loss)`` or None.
    """
    o = np.asarray(o, np.int64)
    fp = np.asarray(fp, np.float64)
    check_fprime(o, fp)
    total = int(o.sum())
    m_min = int(np.min(np.ceil(1.0 / fp - _TOL))) if m_min is None else int(m_min)
    m_min = max(m_min, 1)
    if m_max <= m_min:
        raise ValueError(f"need M′ > M, got M = {m_min}, M′ = {m_max}.")
    s1, s2 = np.triu_indices(m_max + 1, 1)  # row-major: S1 outer, S2 inner (the paper's scan order)
    keep = s1 >= m_min
    s1, s2 = s1[keep].astype(np.int64), s2[keep].astype(np.int64)
    ok, b10, b20, d1, d2, k = _gammas(total, s1, s2)
    s1, s2, b10, b20, d1, d2, k = (a[ok] for a in (s1, s2, b10, b20, d1, d2, k))
    if s1.size == 0:
        return None
    loss0 = b10 * (s1 - 1) ** 2 + b20 * (s2 - 1) ** 2  # the loss at j = 0, a lower bound (Lemma 5.24)
    step = d2 * (s2 - 1) ** 2 - d1 * (s1 - 1) ** 2  # > 0: the loss grows by `step` per j
    big = np.iinfo(np.int64).max
    # values with the same count and f′ share every condition: search over the distinct pairs, weighted
    distinct, weight = np.unique(np.stack([o.astype(np.float64), fp], 1), axis=0, return_counts=True)
    o_u, fp_u = distinct[:, 0].astype(np.int64), distinct[:, 1]

    def search(sel, kprime):
        found, j = _first_valid(o_u, fp_u, s1[sel], s2[sel], b10[sel], b20[sel], d1[sel], d2[sel], kprime, weight)
        return np.where(found, loss0[sel] + j * step[sel], big), j

    # loss-based pruning (Lemma 5.25), batched: search the pairs of smallest lower bound first; then only
    # pairs that can still reach the best loss (ties kept: the first pair in scan order must win), each
    # over the prefix of Γ that can, in one batch
    first = np.argsort(loss0, kind="stable")[: min(loss0.size, _FIRST_BATCH)]
    loss, j = np.full(s1.size, big), np.zeros(s1.size, np.int64)
    loss[first], j[first] = search(first, k[first])
    best = loss.min()
    rest = np.setdiff1d(np.flatnonzero(loss0 <= best), first) if best < big else np.setdiff1d(np.arange(s1.size), first)
    if rest.size:
        kprime = k[rest] if best == big else np.minimum(k[rest], (best - loss0[rest]) // step[rest])
        loss[rest], j[rest] = search(rest, kprime)
    if loss.min() == big:
        return None
    i = int(np.argmin(loss))  # the first pair in scan order with the smallest loss
    b1, b2 = b10[i] - j[i] * d1[i], b20[i] + j[i] * d2[i]
    return (int(s1[i]), int(b1)), (int(s2[i]), int(b2)), int(loss[i])


# --------------------------------------------------------------------------------------- full bucketizations
def _setting_loss(setting):
    return sum(b * (s - 1) ** 2 for s, b in setting)


def _two_size_classes(o, fp, result):
    (s1, b1), (s2, b2), _ = result
    n1, n2 = record_partition(o, fp, s1, b1, s2, b2)
    return [(s1, b1, n1), (s2, b2, n2)]


def multi_size_bucketing(sa, fp_of_value, *, m_min: int | None = None, m_max: int = 50) -> Bucketing:
    """MultiSizeBucketing (the paper's Algorithm 2): start from one bucket holding all records; apply
    TwoSizeBucketing and recurse on both record sets while the loss decreases.

    Args:
      sa: SA value of each record ``[N]`` (any hashable values). fp_of_value: dict value → f′.
      m_min, m_max: M and M′.

    Returns:
      `Bucketing` with every record in exactly one bucket.
    """
    values, o = value_counts(sa)
    fp = np.asarray([fp_of_value[v] for v in values], np.float64)
    check_fprime(o, fp, values)
    idx = np.searchsorted(values, np.asarray(sa))
    m_min = int(np.min(np.ceil(1.0 / fp - _TOL))) if m_min is None else m_min

    def rec(n, s, b):  # n: per-value counts of this record set, b buckets of size s
        res = two_size_bucketing(n, fp, m_min=m_min, m_max=m_max) if n.sum() > 1 else None
        if res is None or res[2] >= b * (s - 1) ** 2:
            return [(s, b, n)]
        out = []
        for s_j, b_j, n_j in _two_size_classes(n, fp, res):
            if b_j > 0:
                out += rec(n_j, s_j, b_j) if (s_j, b_j) != (s, b) else [(s_j, b_j, n_j)]
        return out

    classes = rec(o, int(o.sum()), 1)
    merged: dict[int, int] = {}
    for s, b, _ in classes:
        merged[s] = merged.get(s, 0) + b
    return Bucketing(assign_records(idx, classes), tuple(sorted(merged.items())))


def two_size(sa, fp_of_value, *, m_min: int | None = None, m_max: int = 50) -> Bucketing:
    """The records assigned to the optimal two-size setting (TwoSizeBucketing + record partition + RRA)."""
    values, o = value_counts(sa)
    fp = np.asarray([fp_of_value[v] for v in values], np.float64)
    check_fprime(o, fp, values)
    res = two_size_bucketing(o, fp, m_min=m_min, m_max=m_max)
    if res is None:
        raise ValueError(f"no valid two-size setting with bucket sizes in [M, M′ = {m_max}]; raise M′.")
    idx = np.searchsorted(values, np.asarray(sa))
    classes = [c for c in _two_size_classes(o, fp, res) if c[1] > 0]
    return Bucketing(assign_records(idx, classes), tuple((s, b) for s, b, _ in classes))


def anatomy(sa, *, ell: int) -> Bucketing:
    """Anatomy-style ℓ-diversity (Xiao & Tao): buckets of ℓ distinct values (size ℓ), leftover records
    added to buckets that do not yet hold their value (size ℓ + 1).

    Raises `ValueError` when the eligibility condition ``max_i f_i ≤ 1/ℓ`` fails (reported, no record is
    dropped). Every bucket then has each SA value at most once.
    """
    values, o = value_counts(sa)
    ell = _validate.size("ell", ell)
    n = int(o.sum())
    if o.max() * ell > n:
        i = int(np.argmax(o))
        raise ValueError(f"not eligible for {ell}-diversity: value {values[i]!r} has frequency {o[i] / n:.4g} > 1/ℓ = "
                         f"{1 / ell:.4g}; use F′-privacy bucketing (multi_size_bucketing) instead.")
    idx = np.searchsorted(values, np.asarray(sa))
    pools = [list(np.flatnonzero(idx == i)) for i in range(values.size)]
    remaining = o.copy()
    bucket = np.full(n, -1, np.int64)
    members = []
    while np.count_nonzero(remaining) >= ell:
        top = np.argsort(-remaining, kind="stable")[:ell]
        g = len(members)
        recs = []
        for i in top:
            r = pools[i].pop()
            bucket[r] = g
            recs.append(r)
            remaining[i] -= 1
        members.append(set(idx[recs].tolist()))
    for i in np.flatnonzero(remaining):
        for r in pools[i]:
            g = next((g for g in range(len(members)) if i not in members[g] and np.sum(bucket == g) == ell), None)
            if g is None:
                raise RuntimeError("Anatomy could not place a residual record; please report this input.")
            bucket[r] = g
            members[g].add(int(i))
    sizes = np.bincount(bucket)
    setting = tuple(sorted((int(s), int(c)) for s, c in zip(*np.unique(sizes, return_counts=True))))
    return Bucketing(bucket, setting)
