"""F′-privacy bucketization (Wang, Wang, Fu & Wong, "Inferential or differential: privacy laws dictate").

Not a noise mechanism: a table T(QI, SA) is published as QIT(QI, BID) and ST(BID, SA) so that, for every
sensitive value x_i, no bucket holds x_i with a frequency above f′_i (Definition 3.6). Everything here is
exact combinatorics on the per-value counts o_i:

* `valid_one_size` (Lemma 4.13(4): o_i ≤ ⌊f′_i S⌋·b) and `round_robin` (RRA);
* `valid_two_size` (Theorem 4.17: PC, FC, CC), vectorized over many (S1, b1, S2, b2) at once;
* `assignment_exists`: an exact test for *any* number of sizes by max-flow (values → size classes with
  capacities a_ij and s(B_j)); it shows Example 5.32's three-size conditions are not sufficient;
* `record_partition` (Section 4.3), `two_size_bucketing` (Algorithm 1 with loss-based pruning, Lemma
  5.25, and privacy-based pruning by vectorized binary searches, Theorem 5.30), `multi_size_bucketing`
  (Algorithm 2), `optimal_bucketing` (the exact integer program, solved by SciPy's HiGHS `milp`);
* `anatomy` (ℓ-diversity buckets of size ℓ or ℓ+1; the eligibility check is reported, records are never
  dropped), `publish` (QIT/ST, optional σ fake values per bucket against the corruption attack, Sec. 6);
* metrics `loss`, `mse` (Definition 3.9), `relative_error` of random count queries (Section 7.2.2);
* `inference_moments` / `simulate_inference`: the differential inference theorem (Theorem 2).

Floors ⌊f′_i S⌋ are taken with a 1e-9 tolerance (f′ = 0.29, S = 100 must give 29, not 28).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.sparse
import scipy.sparse.csgraph

from jaxdp import _checks, mechanisms

__all__ = [
    "fprime_linear", "value_counts", "check_fprime", "valid_one_size", "valid_two_size", "assignment_exists",
    "round_robin", "record_partition", "two_size_bucketing", "multi_size_bucketing", "optimal_bucketing",
    "anatomy", "two_size", "optimal", "Bucketing", "publish", "is_fprime_private", "loss", "mse", "relative_error", "inference_moments",
    "simulate_inference", "synthetic_table", "eia_table", "load_table",
]  # fmt: skip

_TOL = 1e-9


def _floor(x):
    return np.floor(np.asarray(x, np.float64) + _TOL).astype(np.int64)


# --------------------------------------------------------------------------------------- specification
def value_counts(sa) -> tuple[np.ndarray, np.ndarray]:
    """(distinct SA values, o_i) of a column, values sorted."""
    sa = np.asarray(sa)
    if sa.size == 0:
        raise ValueError("the table is empty: nothing to bucketize.")
    values, counts = np.unique(sa, return_counts=True)
    return values, counts.astype(np.int64)


def fprime_linear(freq, *, theta: float, b: float = 0.02) -> np.ndarray:
    """The paper's specification ``f′_i = min{1, θ·f_i + b}`` (Section 7: b = 0.02, θ ∈ {2 … 32})."""
    return np.minimum(1.0, theta * np.asarray(freq, np.float64) + b)


def check_fprime(o, fp, values=None) -> None:
    """Raise if no F′-private bucketization exists (Lemma 3.7: needs f′_i ≥ f_i), naming the value."""
    o = np.asarray(o, np.int64)
    fp = np.asarray(fp, np.float64)
    if o.shape != fp.shape or o.ndim != 1:
        raise ValueError(f"counts and f′ must be 1-D of equal length, got {o.shape} and {fp.shape}.")
    if np.any(~np.isfinite(fp)) or np.any(fp <= 0) or np.any(fp > 1):
        raise ValueError("every f′_i must lie in (0, 1].")
    f = o / o.sum()
    bad = np.flatnonzero(fp < f - _TOL)
    if bad.size:
        i = int(bad[0])
        name = values[i] if values is not None else i
        raise ValueError(f"no F′-private bucketization exists: value {name!r} has frequency {f[i]:.4g} > f′ = {fp[i]:.4g} "
                         "(Lemma 3.7); raise its f′ or merge values.")


def valid_one_size(o, fp, s: int, b: int) -> bool:
    """Lemma 4.13: b buckets of size S are valid iff |T| = S·b and o_i ≤ ⌊f′_i S⌋·b for every i."""
    o = np.asarray(o, np.int64)
    return bool(o.sum() == s * b and np.all(o <= _floor(np.asarray(fp) * s) * b))


def valid_two_size(o, fp, s1, b1, s2, b2) -> np.ndarray:
    """Theorem 4.17 (PC, FC and CC) for arrays of settings ``⟨(S1, b1), (S2, b2)⟩`` broadcast together.

    Returns a boolean array of the broadcast shape. O(m) per setting, vectorized.
    """
    o = np.asarray(o, np.int64)
    fp = np.asarray(fp, np.float64)
    s1, b1, s2, b2 = (np.asarray(v, np.int64)[..., None] for v in (s1, b1, s2, b2))
    a1 = np.minimum(_floor(fp * s1) * b1, o)
    a2 = np.minimum(_floor(fp * s2) * b2, o)
    pc = np.all(a1 + a2 >= o, axis=-1)
    fc = (a1.sum(-1) >= (s1 * b1)[..., 0]) & (a2.sum(-1) >= (s2 * b2)[..., 0])
    cc = o.sum() == (s1 * b1 + s2 * b2)[..., 0]
    return pc & fc & cc


def assignment_exists(o, caps, sizes) -> bool:
    """Exact validity of a multi-size setting from per-class capacities.

    `caps[i, j]`: how many records of value i class j may hold (e.g. a_ij = min(⌊f′_i S_j⌋ b_j, o_i));
    `sizes[j]` = s(B_j). By Lemma 4.13/4.15 a valid assignment exists iff the max flow source → values
    (o_i) → classes (caps) → sink (s(B_j)) equals |T| = Σ s(B_j).
    """
    o = np.asarray(o, np.int64)
    caps = np.asarray(caps, np.int64)
    sizes = np.asarray(sizes, np.int64)
    m, q = caps.shape
    if o.sum() != sizes.sum():
        return False
    n = m + q + 2
    src, snk = m + q, m + q + 1
    rows, cols, w = [], [], []
    for i in range(m):
        rows.append(src), cols.append(i), w.append(int(o[i]))
        for j in range(q):
            rows.append(i), cols.append(m + j), w.append(int(caps[i, j]))
    for j in range(q):
        rows.append(m + j), cols.append(snk), w.append(int(sizes[j]))
    g = scipy.sparse.csr_matrix((np.asarray(w, np.int32), (rows, cols)), shape=(n, n))
    return int(scipy.sparse.csgraph.maximum_flow(g, src, snk).flow_value) == int(o.sum())


# --------------------------------------------------------------------------------------- assignment
def round_robin(record_values, b: int) -> np.ndarray:
    """RRA (Section 4.1): the t-th record of x_i goes to bucket (o_1 + … + o_{i−1} + t) mod b.

    Args: record_values: SA value index of each record ``[N]``; b: number of buckets.
    Returns: bucket index per record ``[N]``.
    """
    v = np.asarray(record_values)
    order = np.argsort(v, kind="stable")
    out = np.empty(v.size, np.int64)
    out[order] = np.arange(v.size) % b
    return out


def record_partition(o, fp, s1, b1, s2, b2) -> tuple[np.ndarray, np.ndarray]:
    """Section 4.3: per-value counts (n1, n2) with n1 + n2 = o, n1 valid for B1 and n2 for B2.

    Start with a_i1 records of each value in T1, then move records to T2 one value at a time in round
    robin over the values that still have room (below a_i2), until |T2| = s(B2). Raises if the setting
    is not valid (Theorem 4.17).
    """
    o = np.asarray(o, np.int64)
    if not valid_two_size(o, fp, s1, b1, s2, b2):
        raise ValueError(f"⟨({s1},{b1}),({s2},{b2})⟩ is not a valid setting for these counts (Theorem 4.17).")
    a1 = np.minimum(_floor(np.asarray(fp) * s1) * b1, o)
    a2 = np.minimum(_floor(np.asarray(fp) * s2) * b2, o)
    n1 = a1.copy()
    n2 = o - n1
    need = s2 * b2 - n2.sum()
    while need > 0:
        room = np.flatnonzero((n2 < a2) & (n1 > 0))
        for i in room:
            if need == 0:
                break
            n1[i] -= 1
            n2[i] += 1
            need -= 1
    return n1, n2


class Bucketing(NamedTuple):
    """A bucketization: `bucket[r]` is the bucket id of record r; `setting` lists (size, count) pairs."""

    bucket: np.ndarray
    setting: tuple


def _assign(values_idx, classes):
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
def _gamma(total, s1, s2):
    """Lemma 5.21: (b1⁰, b2⁰, Δ1, Δ2, k) of Γ(S1, S2), or None if S1 b1 + S2 b2 = |T| has no solution."""
    g = math.gcd(s1, s2)
    if total % g:
        return None
    lcm = s1 * s2 // g
    d1, d2 = lcm // s1, lcm // s2
    # smallest b2 ≥ 0 with (total − S2 b2) divisible by S1 and ≥ 0
    for b2 in range(0, d2):
        if (total - s2 * b2) % s1 == 0:
            break
    else:
        return None
    if total - s2 * b2 < 0:
        return None
    b1 = (total - s2 * b2) // s1
    return b1, b2, d1, d2, b1 // d1


def _first_true(pred, lo, hi):
    """Smallest j in [lo, hi] with pred(j) true for a predicate that is monotone (F…F T…T) in j; hi + 1 if
    none. Vectorized: lo, hi and pred's result are arrays over values."""
    lo = np.asarray(lo, np.int64).copy()
    hi = np.asarray(hi, np.int64) + 1
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        ok = pred(np.minimum(mid, hi - 1)) & (lo < hi)
        hi = np.where(ok, mid, hi)
        lo = np.where(~ok & (lo < hi), mid + 1, lo)
    return lo


def _first_valid(o, fp, s1, s2, gam, kprime):
    """Theorem 5.30: the first valid pair of Γ′ by binary searches (FC(S1) monotone, FC(S2) anti-monotone,
    PC(x_i) valid on a prefix ∪ a suffix whose ends are found by binary search). Returns j or None."""
    b10, b20, d1, d2, _ = gam
    c1 = _floor(fp * s1)
    c2 = _floor(fp * s2)
    m = o.size

    def b1(j):
        return b10 - j * d1

    def b2(j):
        return b20 + j * d2

    zero, top = np.zeros(1, np.int64), np.full(1, kprime, np.int64)
    fc1 = _first_true(lambda j: np.minimum(c1 * b1(j[0]), o).sum(keepdims=True) >= s1 * b1(j), zero, top)[0]
    # FC(S2) anti-monotone: last j where it holds = first j where it fails − 1
    fc2_fail = _first_true(lambda j: np.minimum(c2 * b2(j[0]), o).sum(keepdims=True) < s2 * b2(j), zero, top)[0]
    lo, hi = fc1, fc2_fail - 1
    if lo > hi:
        return None
    zeros, tops = np.zeros(m, np.int64), np.full(m, kprime, np.int64)
    a_end = _first_true(lambda j: c1 * b1(j) < o, zeros, tops)  # c1 b1 ≥ o holds on [0, a_end)
    b_start = _first_true(lambda j: c2 * b2(j) >= o, zeros, tops)  # c2 b2 ≥ o holds on [b_start, k′]
    eq15 = lambda j: c1 * b1(j) + c2 * b2(j) >= o  # noqa: E731
    mono = c2 * d2 >= c1 * d1  # Eq. (16): PC monotone in the middle part
    mid_hi = np.maximum(b_start - 1, a_end - 1)
    first_hold = _first_true(eq15, a_end, mid_hi)  # used where monotone
    first_fail = _first_true(lambda j: ~eq15(j), a_end, mid_hi)  # used where anti-monotone
    # forbidden interval per value: [f_lo, f_hi) (empty when f_lo >= f_hi)
    f_lo = np.where(mono, a_end, first_fail)
    f_hi = np.where(mono, np.minimum(first_hold, b_start), b_start)
    j = lo
    for _ in range(m + 1):
        bad = (f_lo <= j) & (j < f_hi)
        if not bad.any():
            return int(j) if j <= hi else None
        j = int(f_hi[bad].max())
        if j > hi:
            return None
    return None


def two_size_bucketing(o, fp, *, m_min: int | None = None, m_max: int = 50) -> tuple | None:
    """TwoSizeBucketing (the paper's Algorithm 1): the optimal valid ⟨(S1, b1), (S2, b2)⟩ with
    M ≤ S1 < S2 ≤ M′ (b1 or b2 may be 0, so one-size settings are included), or None if none exists.

    Loss-based pruning (Lemma 5.25) cuts Γ(S1, S2) to the prefix that can beat the best loss so far;
    privacy-based pruning finds the first valid pair of that prefix by binary searches (Theorem 5.30).

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
    best, best_loss = None, math.inf
    for s1 in range(m_min, m_max):
        for s2 in range(s1 + 1, m_max + 1):
            gam = _gamma(total, s1, s2)
            if gam is None:
                continue
            b10, b20, d1, d2, k = gam
            loss0 = b10 * (s1 - 1) ** 2 + b20 * (s2 - 1) ** 2
            if loss0 >= best_loss:
                continue
            step = d2 * (s2 - 1) ** 2 - d1 * (s1 - 1) ** 2  # > 0 (Lemma 5.24)
            kstar = k if best_loss == math.inf else max(0, math.floor((best_loss - loss0 - 1e-9) / step))
            j = _first_valid(o, fp, s1, s2, gam, min(k, kstar))
            if j is None:
                continue
            b1, b2 = b10 - j * d1, b20 + j * d2
            lo = b1 * (s1 - 1) ** 2 + b2 * (s2 - 1) ** 2
            if lo < best_loss:
                best, best_loss = ((s1, int(b1)), (s2, int(b2))), lo
    return None if best is None else (*best, int(best_loss))


def _two_size_exhaustive(o, fp, m_min, m_max):
    """Reference for tests: every feasible two-size setting, validated by Theorem 4.17 (vectorized)."""
    o = np.asarray(o, np.int64)
    total = int(o.sum())
    best = None
    for s1 in range(m_min, m_max):
        for s2 in range(s1 + 1, m_max + 1):
            b1 = np.arange(0, total // s1 + 1)
            rest = total - s1 * b1
            ok = rest % s2 == 0
            b1, b2 = b1[ok], rest[ok] // s2
            if b1.size == 0:
                continue
            v = valid_two_size(o, fp, s1, b1, s2, b2)
            if v.any():
                losses = b1 * (s1 - 1) ** 2 + b2 * (s2 - 1) ** 2
                j = int(np.argmin(np.where(v, losses, np.iinfo(np.int64).max)))
                if best is None or losses[j] < best[2]:
                    best = ((s1, int(b1[j])), (s2, int(b2[j])), int(losses[j]))
    return best


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
    return Bucketing(_assign(idx, classes), tuple(sorted(merged.items())))


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
    return Bucketing(_assign(idx, classes), tuple((s, b) for s, b, _ in classes))


def optimal_bucketing(o, fp, *, m_min: int | None = None, m_max: int = 50, time_limit: float = 60.0):
    """The exact optimal multi-size setting (Definition 3.10) as an integer program (SciPy `milp`/HiGHS).

    Variables b_S (buckets of size S) and n_{S,i} (records of x_i in them) for M ≤ S ≤ M′;
    ``Σ_i n_{S,i} = S b_S``, ``Σ_S n_{S,i} = o_i``, ``n_{S,i} ≤ ⌊f′_i S⌋ b_S`` (Lemma 4.13 per size class);
    minimize ``Σ_S b_S (S − 1)²``. Returns ``(setting [(S, b)], per-class counts {S: n}, loss)`` or None.
    """
    o = np.asarray(o, np.int64)
    fp = np.asarray(fp, np.float64)
    check_fprime(o, fp)
    m = o.size
    m_min = int(np.min(np.ceil(1.0 / fp - _TOL))) if m_min is None else int(m_min)
    sizes = np.arange(max(1, m_min), m_max + 1)
    q = sizes.size
    nv = q + q * m  # [b_S ..., n_{S,i} ...]
    cost = np.concatenate([(sizes - 1.0) ** 2, np.zeros(q * m)])
    rows, lo, hi = [], [], []

    def row():
        return np.zeros(nv)

    for a, s in enumerate(sizes):
        r = row()
        r[a] = -s
        r[q + a * m : q + (a + 1) * m] = 1
        rows.append(r), lo.append(0), hi.append(0)
        c = _floor(fp * s)
        for i in range(m):
            r = row()
            r[q + a * m + i] = 1
            r[a] = -c[i]
            rows.append(r), lo.append(-np.inf), hi.append(0)
    for i in range(m):
        r = row()
        r[q + np.arange(q) * m + i] = 1
        rows.append(r), lo.append(o[i]), hi.append(o[i])
    cons = scipy.optimize.LinearConstraint(np.asarray(rows), lo, hi)
    res = scipy.optimize.milp(cost, constraints=cons, integrality=np.ones(nv), bounds=scipy.optimize.Bounds(0, np.inf),
                              options={"time_limit": time_limit})
    if res.x is None:
        return None
    x = np.round(res.x).astype(np.int64)
    setting = [(int(s), int(x[a])) for a, s in enumerate(sizes) if x[a] > 0]
    per = {int(s): x[q + a * m : q + (a + 1) * m] for a, s in enumerate(sizes) if x[a] > 0}
    return setting, per, int(_setting_loss(setting))


def optimal(sa, fp_of_value, *, m_min=None, m_max: int = 50, time_limit: float = 60.0) -> Bucketing:
    """Records assigned to the exact optimal multi-size setting (`optimal_bucketing`)."""
    values, o = value_counts(sa)
    fp = np.asarray([fp_of_value[v] for v in values], np.float64)
    res = optimal_bucketing(o, fp, m_min=m_min, m_max=m_max, time_limit=time_limit)
    if res is None:
        raise ValueError("the integer program found no valid setting within the size range / time limit.")
    setting, per, _ = res
    idx = np.searchsorted(values, np.asarray(sa))
    return Bucketing(_assign(idx, [(s, b, per[s]) for s, b in setting]), tuple(setting))


def anatomy(sa, *, ell: int) -> Bucketing:
    """Anatomy-style ℓ-diversity (Xiao & Tao): buckets of ℓ distinct values (size ℓ), leftover records
    added to buckets that do not yet hold their value (size ℓ + 1).

    Raises `ValueError` when the eligibility condition ``max_i f_i ≤ 1/ℓ`` fails (reported, no record is
    dropped). Every bucket then has each SA value at most once.
    """
    values, o = value_counts(sa)
    ell = _checks.size("ell", ell)
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


# --------------------------------------------------------------------------------------- publication, checks
def publish(qi, sa, bucketing: Bucketing, *, fake: int = 0, seed: int | None = None, domain=None):
    """The two published tables: QIT (QI rows + BID) and ST (BID, SA), rows of ST shuffled per bucket.

    With ``fake = σ > 0`` every bucket's ST also gets σ fake SA values (Section 6), drawn without
    replacement from the SA domain minus the values already in the bucket (so they are indistinguishable
    by value). Returns ``(qit, st, is_fake)`` where `is_fake` marks the fake ST rows (for evaluation only:
    never publish it).

    The shuffle and the fake values are secret randomness: by default they come from a generator seeded
    with fresh operating-system entropy (NumPy's `default_rng()`, 128 bits). Pass `seed` only to
    reproduce a result: anyone who knows the seed can tell fake rows from real ones.
    """
    qi = np.asarray(qi)
    sa = np.asarray(sa)
    bid = np.asarray(bucketing.bucket)
    if qi.shape[0] != sa.shape[0] or bid.shape[0] != sa.shape[0]:
        raise ValueError("qi, sa and the bucketing must have one entry per record.")
    rng = np.random.default_rng(seed)  # seed=None: fresh OS entropy
    domain = np.unique(sa) if domain is None else np.asarray(domain)
    st_b, st_v, st_f = [], [], []
    for g in np.unique(bid):
        vals = sa[bid == g]
        extra = np.setdiff1d(domain, vals)
        if fake > extra.size:
            raise ValueError(f"bucket {g} has only {extra.size} SA values left for {fake} distinct fake values.")
        fk = rng.choice(extra, fake, replace=False) if fake else extra[:0]
        v = np.concatenate([vals, fk])
        f = np.concatenate([np.zeros(vals.size, bool), np.ones(fk.size, bool)])
        perm = rng.permutation(v.size)
        st_b.append(np.full(v.size, g)), st_v.append(v[perm]), st_f.append(f[perm])
    qit = (qi, bid)
    st = (np.concatenate(st_b), np.concatenate(st_v))
    return qit, st, np.concatenate(st_f)


def is_fprime_private(sa, bucket, fp_of_value) -> bool:
    """Independent check of Definition 3.6: in every bucket, every value's frequency ≤ f′ (+1e-12)."""
    sa = np.asarray(sa)
    bucket = np.asarray(bucket)
    for g in np.unique(bucket):
        vals, cnt = np.unique(sa[bucket == g], return_counts=True)
        size = cnt.sum()
        if any(c / size > fp_of_value[v] + 1e-12 for v, c in zip(vals, cnt)):
            return False
    return True


def loss(bucket) -> int:
    """Loss (Eq. 2): Σ_g (|g| − 1)²."""
    sizes = np.bincount(np.asarray(bucket))
    sizes = sizes[sizes > 0]
    return int(np.sum((sizes - 1) ** 2))


def mse(bucket) -> float:
    """MSE (Definition 3.9): Loss / (|T| − 1)."""
    n = np.asarray(bucket).size
    return loss(bucket) / max(n - 1, 1)


def relative_error(qi, sa, bucket, *, queries: int = 1000, selectivity: float = 0.01, seed: int = 0) -> float:
    """Mean relative error |act − est| / act of random count queries (Section 7.2.2, after Anatomy [22]).

    A query picks q_d ∈ {1 … d} random QI attributes and, for each (and for SA), a random set of values
    covering ≈ selectivity^(1/(q_d+1)) of the attribute's domain; est = Σ_g (QI matches in g) × (SA matches
    in g)/|g|. Queries with act = 0 are redrawn.
    """
    qi = np.asarray(qi)
    sa = np.asarray(sa)
    bucket = np.asarray(bucket)
    rng = np.random.default_rng(seed)
    n, d = qi.shape
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
    return float(np.mean(errs)) if errs else float("nan")


# --------------------------------------------------------------------------------------- Theorem 2
def inference_moments(x: float, y: float, *, epsilon: float) -> tuple[float, float]:
    """The differential inference theorem (Theorem 2): with X = x + Lap(b), Y = y + Lap(b), b = 1/ε,
    ``E[Y/X] ≈ (y/x)(1 + 2b²/x²)`` and ``var[Y/X] ≈ (2b²/x²)(1 + (y/x)²)`` (second-order Taylor)."""
    _checks.positive_scalar("epsilon", epsilon)
    b = 1.0 / epsilon
    r = y / x
    return r * (1 + 2 * b * b / (x * x)), 2 * b * b / (x * x) * (1 + r * r)


def simulate_inference(key: jax.Array, x: float, y: float, *, epsilon: float, trials: int = 100_000):
    """Draw `trials` ε-DP answers X, Y of the two count queries (independent Laplace, Theorem 1) and return
    Y/X as a float64 NumPy array: what an adversary averaging noisy answers sees."""
    _checks.key(key)
    _checks.positive_scalar("epsilon", epsilon)
    k1, k2 = jax.random.split(key)
    nx = np.asarray(mechanisms.laplace_noise(k1, (trials,), epsilon=epsilon, sensitivity=1.0, dtype=jnp.float32), np.float64)
    ny = np.asarray(mechanisms.laplace_noise(k2, (trials,), epsilon=epsilon, sensitivity=1.0, dtype=jnp.float32), np.float64)
    return (y + ny) / (x + nx)


# --------------------------------------------------------------------------------------- data
def synthetic_table(seed: int, *, n: int = 10_000, m: int = 50, qi_attributes: int = 4, qi_domain: int = 20,
                    min_freq: float = 0.0018) -> tuple[np.ndarray, np.ndarray]:
    """A seeded categorical table with skewed SA frequencies like the paper's OCC (m = 50) / EDU (m = 14):
    a Zipf-like profile rescaled so the rarest value has frequency ≈ `min_freq`; QI attributes weakly
    correlated with SA. Returns ``(qi [n, d] int, sa [n] int)``."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, m + 1) ** 1.1
    w = w / w.sum()
    w = min_freq + (1 - m * min_freq) * (w - w.min()) / (w - w.min()).sum()
    sa = rng.choice(m, size=n, p=w / w.sum())
    qi = (rng.integers(0, qi_domain, size=(n, qi_attributes)) + (sa[:, None] % 3) * rng.integers(0, 2, (n, 1))) % qi_domain
    return qi.astype(np.int64), sa.astype(np.int64)


def eia_table() -> tuple[np.ndarray, np.ndarray]:
    """The bundled EIA records as categorical microdata: SA = STATE (51 values); QI = MONTH and the deciles
    of RESSALES, COMSALES and INDSALES (public decile edges would be needed for a real release; these are
    for experiments). Returns ``(qi [4092, 4] int, sa [4092] str)``."""
    from jaxdp import datasets

    e = datasets.load_eia()
    cols = [e["MONTH"]]
    for c in ("RESSALES", "COMSALES", "INDSALES"):
        edges = np.quantile(e[c], np.linspace(0, 1, 11)[1:-1])
        cols.append(np.searchsorted(edges, e[c], side="right"))
    return np.stack(cols, axis=1).astype(np.int64), np.asarray(e["STATE"])


def load_table(path: str, *, sensitive: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Read a CSV with a header; `sensitive` names the SA column. Returns (QI names, qi [N, d] str, sa [N] str)."""
    import csv

    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise ValueError(f"{path} has no records.")
    header = [h.strip() for h in rows[0]]
    if sensitive not in header:
        raise ValueError(f"sensitive column {sensitive!r} not in the header {header}.")
    j = header.index(sensitive)
    body = [r for r in rows[1:] if r]
    if any(len(r) != len(header) for r in body):
        raise ValueError(f"{path}: ragged rows (every row needs {len(header)} fields).")
    data = np.asarray(body, dtype=str)
    names = [h for k, h in enumerate(header) if k != j]
    return names, np.delete(data, j, axis=1), data[:, j]
