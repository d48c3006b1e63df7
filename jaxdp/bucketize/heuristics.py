"""TwoSize (Algorithm 1), MultiSize (Algorithm 2) and Anatomy."""

from __future__ import annotations

from typing import NamedTuple

import functools

import numpy as np

from jaxdp import _validate
from jaxdp.bucketize.validity import (
    _floor,
    bucket_sizes,
    check_fprime,
    fprime_of,
    record_partition,
    value_counts,
)

__all__ = ['Bucketing', 'two_size_bucketing', 'multi_size_bucketing', 'two_size', 'anatomy', 'assign_records']


class Bucketing(NamedTuple):
    """A bucketization: `bucket[r]` is the bucket id of record r; `setting` lists (size, count) pairs; `fprime` the
    (SA value, f′) pairs it was built for (`anatomy`: 1/ℓ for every value), which `publish` re-checks on the table
    it is given (None for a hand-made bucketing: pass `publish` the f′).

    Curator-only: `bucket` follows the input order (a value's records go to its buckets in the order they come), so
    publishing it (or tables built from it by hand) links records to SA values; publish through `publish`, which deals
    each value's records to its buckets at random with a fresh key and permutes QIT's rows."""

    bucket: np.ndarray
    setting: tuple
    fprime: tuple | None = None


def _pairs_of(values, fp) -> tuple:
    return tuple(zip(list(values), np.asarray(fp, np.float64).tolist()))  # the values as NumPy keeps them (found in
    # review: tolist() turned datetime64 values into dates or ints, and publish found no f′ for its own bucketing)


def assign_records(values_idx, classes):
    """Assign records to buckets: `classes` is a list of (S, b, per-value counts n) that partition the
    records; within each class RRA. Returns bucket ids per record."""
    values_idx = np.asarray(values_idx)
    bucket = np.empty(values_idx.size, np.int64)
    taken = np.zeros(int(values_idx.max()) + 1, np.int64)  # (int: a uint8 index array at 255 wrapped to 0)
    # the records by value, stably: NumPy's stable sort is a radix sort for 8- and 16-bit integers (≈ 7× faster
    # than on int64 at 100,000 records; a stable order is unique, so the result is the same)
    narrow = np.min_scalar_type(taken.size - 1)
    order = np.argsort(values_idx.astype(narrow) if narrow.itemsize < values_idx.dtype.itemsize else values_idx,
                       kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(values_idx, minlength=taken.size))])
    offset = 0
    for s, b, n in classes:
        members = np.concatenate([order[starts[i] + taken[i] : starts[i] + taken[i] + n[i]] for i in range(taken.size)])
        taken += n
        # RRA (`round_robin`) on `members`, which are in value order already (stably): the t-th member goes
        # to bucket t mod b
        bucket[members] = offset + np.arange(members.size) % b
        offset += b
    return bucket


# --------------------------------------------------------------------------------------- two-size search
_BIG = np.iinfo(np.int64).max // 4  # 'no limit' in integer arithmetic (sums of it cannot overflow)
_FIRST_BATCH = 48  # size pairs searched before loss-based pruning (those of the smallest lower bound)
@functools.lru_cache(maxsize=16)
def _pairs(m_min: int, m_max: int):
    """The size pairs M ≤ S1 < S2 ≤ M′ in the paper's scan order (S1 outer, S2 inner) with what Γ(S1, S2)
    needs that does not depend on |T|: gcd g, Δ1 = lcm/S1, Δ2 = lcm/S2 and (S2/g)⁻¹ mod (S1/g). Cached
    (read-only arrays): MultiSize calls TwoSize with the same M, M′ dozens of times."""
    s1, s2 = np.triu_indices(m_max + 1, 1)
    keep = s1 >= m_min
    s1, s2 = s1[keep].astype(np.int64), s2[keep].astype(np.int64)
    g = np.gcd(s1, s2)
    d1, d2 = s2 // g, s1 // g  # lcm / S1, lcm / S2
    inv = np.asarray([pow(int(a % m), -1, int(m)) if m > 1 else 0 for a, m in zip(s2 // g, d2)], np.int64)
    out = (s1, s2, g, d1, d2, inv)
    for a in out:
        a.flags.writeable = False
    return out


def _gammas(total, s1, s2, g, d1, d2, inv):
    """Lemma 5.21 for arrays of size pairs: (ok, b1⁰, b2⁰, k) of Γ(S1, S2); `ok` is False where
    S1 b1 + S2 b2 = |T| has no solution with b1, b2 ≥ 0. b2⁰ is the smallest b2 ≥ 0 with S2 b2 ≡ |T|
    (mod S1): b2⁰ = (|T|/g)·(S2/g)⁻¹ mod (S1/g), since Δ2 = S1/g."""
    div = total % g == 0
    b2 = np.where(div, ((total // g) % d2) * inv % d2, 0)
    ok = div & (total - s2 * b2 >= 0)
    b1 = np.where(ok, (total - s2 * b2) // s1, 0)
    return ok, b1, b2, b1 // d1


def _fc_limit(o, weight, c, s):
    """The largest integer x ≥ 0 with ``Σ_i w_i·min(c_i x, o_i) ≥ s·x`` per row (the fill condition FC of
    Theorem 4.17 for x buckets of size s), a large number where every x holds. ``c [P, m]``, ``s [P]``.

    The left side is concave in x and equals ``min_k L_k(x)`` over the lines ``L_k(x) = Σ_{first k} w o +
    x·Σ_{rest} w c`` with the values sorted by their saturation point o_i/c_i (any split bounds the sum from
    above; the split at x attains it). So FC holds iff ``x·(s − C_k) ≤ A_k`` for every k: x ≤ ⌊A_k/(s − C_k)⌋
    where s > C_k — exact integer arithmetic, in place of a binary search over x. `o` and `weight` are
    ``[m]`` or one row per row of c ``[P, m]``."""
    o, weight = np.broadcast_to(o, c.shape), np.broadcast_to(weight, c.shape)
    t = np.where(c > 0, o / np.maximum(c, 1), np.inf)  # distinct rationals compare exactly in float64
    order = np.argsort(t, axis=1, kind="stable")
    wo = np.take_along_axis(weight * o, order, 1)
    wc = np.take_along_axis(c * weight, order, 1)
    zero = np.zeros((c.shape[0], 1), np.int64)
    a = np.concatenate([zero, np.cumsum(wo, 1)], 1)
    rest = np.concatenate([np.cumsum(wc[:, ::-1], 1)[:, ::-1], zero], 1)
    den = s[:, None] - rest
    return np.where(den > 0, a // np.where(den > 0, den, 1), _BIG).min(1)



def _first_linear(a, b, lo, hi):
    """The smallest integer j in [lo, hi] with ``a + j·b ≥ 0`` (integers; elementwise), hi + 1 if none —
    what a bisection finds for this predicate where it is monotone (b ≥ 0), in closed form.
    Where b < 0 the predicate holds on a prefix: the answer is lo if it holds there, else hi + 1."""
    big = _BIG
    pos = b > 0
    # b > 0: a + j b ≥ 0 ⟺ j ≥ ⌈−a/b⌉ = −⌊a/b⌋; b ≤ 0: true from lo on (if it holds at lo) or never in range
    j_star = np.where(pos, -(a // np.where(pos, b, 1)), np.where(a + lo * b >= 0, -big, big))
    return np.maximum(lo, np.minimum(j_star, hi + 1))


def _fc_limits(o, fp, weight, m_min, m_max):
    """`_fc_limit` for every bucket size S in [M, M′] (column S − M) of every record set (row) with
    ``c_i = ⌊f′_i·S⌋``, and those c: limits ``[N, S]``, c ``[N, S, u]`` for the sets' values ``o, fp, weight
    [N, u]``. FC(S) depends on the size alone, not on the pair it is part of, so a search over ≈ M′²/2 size
    pairs needs it for M′ − M + 1 sizes."""
    sizes = np.arange(m_min, m_max + 1, dtype=np.int64)
    n, u = o.shape
    c = _floor(fp[:, None, :] * sizes[None, :, None])  # [N, S, u]
    rows = lambda a: np.repeat(a, sizes.size, axis=0)  # noqa: E731 - [N, u] -> [N·S, u]
    limits = _fc_limit(rows(o), rows(weight), c.reshape(-1, u), np.tile(sizes, n))
    return limits.reshape(n, sizes.size), c


def _first_valid(s1, s2, b10, b20, d1, d2, kprime, o, fc, node):
    """Theorem 5.30 for P size pairs at once: the first valid pair of each Γ′ (j ∈ [0, k′]); the paper's
    binary searches (FC(S1) monotone, FC(S2) anti-monotone, PC(x_i) valid on a prefix ∪ a suffix) replaced
    by their closed forms (exact integer arithmetic; the sequential searches are the tests' reference).
    Arrays ``[P]``; values along a second axis: ``o [N, u]``, the distinct (o_i, f′_i) pairs of each record
    set (values with the same count and f′ have the same conditions; padded with o = 0, which no condition
    sees). `fc`: (M, FC limits ``[N, S]`` and c ``[N, S, u]`` per bucket size from M on, `_fc_limits`); `node`:
    the record set of each pair ``[P]``. Returns (found, j)."""
    m_min, limits, c = fc
    # FC(S1) holds where b1(j) = b1⁰ − jΔ1 ≤ x1 (the first such j), FC(S2) where b2(j) = b2⁰ + jΔ2 ≤ x2 (up to
    # the last such j): closed forms from `_fc_limit`, clipped to [0, k′ + 1] (k′ + 1: none in range)
    lo = np.clip(-((limits[node, s1 - m_min] - b10) // d1), 0, kprime + 1)
    found, j = np.zeros(s1.shape, bool), lo
    r = np.flatnonzero(lo <= kprime)  # FC(S2) only where FC(S1) leaves some j; PC where both do
    hi = np.clip((limits[node[r], s2[r] - m_min] - b20[r]) // d2[r] + 1, 0, kprime[r] + 1) - 1
    r, hi = r[lo[r] <= hi], hi[lo[r] <= hi]
    if r.size:
        nr = node[r]
        found[r], j[r] = _first_pc(o[nr], c[nr, s1[r] - m_min], c[nr, s2[r] - m_min], b10[r], b20[r], d1[r], d2[r],
                                   kprime[r], lo[r], hi)
    return found, j


def _first_pc(o, c1, c2, b10, b20, d1, d2, kprime, lo, hi):
    """The first j in [lo, hi] where PC(x_i) holds for every value (Theorem 5.30), per size pair (``o``, ``c1``,
    ``c2``: ``[P, u]``)."""
    col = lambda a: a[:, None]  # noqa: E731
    # The per-value conditions are linear in j, so their binary searches have closed forms (exact integer
    # arithmetic): `_first_linear` = the smallest j in [lo, hi] with a + j·b ≥ 0, hi + 1 if none.
    zeros = np.zeros(c1.shape, np.int64)
    tops = np.broadcast_to(col(kprime), c1.shape)
    # c1 b1 ≥ o holds on [0, a_end), c2 b2 ≥ o on [b_start, k′] (one batched call for both)
    a_end, b_start = _first_linear(np.stack([o - c1 * col(b10) - 1, c2 * col(b20) - o]),
                                   np.stack([c1 * col(d1), c2 * col(d2)]), zeros, tops)
    eq15_a = c1 * col(b10) + c2 * col(b20) - o  # Eq. (15): c1 b1 + c2 b2 − o = eq15_a + j·eq15_b ≥ 0
    eq15_b = c2 * col(d2) - c1 * col(d1)
    mono = eq15_b >= 0  # Eq. (16): PC monotone in the middle part
    mid_hi = np.maximum(b_start - 1, a_end - 1)
    # the first j where Eq. (15) holds (used where monotone) and where it fails (where anti-monotone)
    first_hold, first_fail = _first_linear(np.stack([eq15_a, -eq15_a - 1]), np.stack([eq15_b, -eq15_b]), a_end, mid_hi)
    # forbidden interval per value: [f_lo, f_hi) (empty when f_lo >= f_hi); jump past them to a fixed point
    f_lo = np.where(mono, a_end, first_fail)
    f_hi = np.where(mono, np.minimum(first_hold, b_start), b_start)
    j = lo.copy()
    live = np.ones(j.shape, bool)
    for _ in range(o.shape[-1] + 1):
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
    check_fprime(o, fp)
    o = np.asarray(o).astype(np.int64)
    fp = np.asarray(fp, np.float64)
    m_min, m_max = bucket_sizes(fp, m_min, m_max)
    return _two_size_search(o, fp, m_min, m_max)


def _two_size_search(o, fp, m_min, m_max, below=None):
    """`two_size_bucketing` on checked input; with `below`, only settings of loss < below are searched
    (None if there is none): MultiSize keeps a split only if it lowers the loss, so it passes the loss of
    the bucket class it splits and the pairs that cannot beat it are never searched."""
    return _two_size_searches([o], [below], fp, m_min, m_max)[0]


_BATCH_ENTRIES = 1 << 22  # size pairs × values searched at once at most (several arrays of this many int64)


def _two_size_searches(counts, belows, fp, m_min, m_max) -> list:
    """`_two_size_search` for several record sets at once (their per-value counts ``counts[i] [m]`` and
    bounds ``belows[i]``), one NumPy batch over all their size pairs: MultiSize searches the record sets of
    one level of its recursion together (a batch costs about what one search did: the work is NumPy's per-call
    overhead, not arithmetic). Each result is the one search's own; sets are taken in groups of at most
    `_BATCH_ENTRIES` pairs × values."""
    s1_all, *_ = _pairs(m_min, m_max)
    per_set = max(s1_all.size * max(len(c) for c in counts), 1)
    group = max(_BATCH_ENTRIES // per_set, 1)
    out = []
    for g in range(0, len(counts), group):
        out += _search_group(counts[g:g + group], belows[g:g + group], fp, m_min, m_max)
    return out


def _search_group(counts, belows, fp, m_min, m_max) -> list:
    big = np.iinfo(np.int64).max
    n = len(counts)
    totals = np.array([int(o.sum()) for o in counts], np.int64)
    caps = np.array([big if b is None else int(b) - 1 for b in belows], np.int64)  # the largest loss of interest
    pairs = _pairs(m_min, m_max)  # the paper's scan order: S1 outer, S2 inner
    ok, b10, b20, k = _gammas(totals[:, None], *(a[None, :] for a in pairs))  # [N, P]
    s1, s2, _, d1, d2, _ = (np.broadcast_to(a, ok.shape) for a in pairs)
    loss0 = b10 * (s1 - 1) ** 2 + b20 * (s2 - 1) ** 2  # the loss at j = 0, a lower bound (Lemma 5.24)
    node, pair = np.nonzero(ok & (loss0 <= caps[:, None]))  # node-major: each set's pairs in scan order
    s1, s2, b10, b20, d1, d2, k, loss0 = (a[node, pair] for a in (s1, s2, b10, b20, d1, d2, k, loss0))
    step = d2 * (s2 - 1) ** 2 - d1 * (s1 - 1) ** 2  # > 0: the loss grows by `step` per j
    # values with the same count and f′ share every condition: search over each set's distinct pairs, weighted,
    # padded to the widest set with o = 0 and weight 0 (which no condition sees)
    distinct = []
    for o in counts:
        order = np.lexsort((fp, o))  # (what np.unique(axis=0) finds, without its structured-array detour)
        o_s, fp_s = o[order], fp[order]
        starts = np.flatnonzero(np.r_[True, (np.diff(o_s) != 0) | (np.diff(fp_s) != 0)])
        distinct.append((o_s[starts], fp_s[starts], np.diff(np.r_[starts, o.size])))
    u = max(d[0].size for d in distinct)
    o_u, w_u, fp_u = np.zeros((n, u), np.int64), np.zeros((n, u), np.int64), np.ones((n, u))
    for i, (o_i, fp_i, w_i) in enumerate(distinct):
        o_u[i, : o_i.size], fp_u[i, : o_i.size], w_u[i, : o_i.size] = o_i, fp_i, w_i
    fc = (m_min, *_fc_limits(o_u, fp_u, w_u, m_min, m_max))  # FC per bucket size, shared by both batches

    def search(sel, bound):  # each pair over the prefix of Γ whose loss can be ≤ its bound (big: all of Γ)
        kprime = np.minimum(k[sel], (bound - loss0[sel]) // step[sel])
        found, j = _first_valid(s1[sel], s2[sel], b10[sel], b20[sel], d1[sel], d2[sel], kprime, o_u, fc, node[sel])
        return np.where(found, loss0[sel] + j * step[sel], big), j

    # loss-based pruning (Lemma 5.25), batched: search each set's pairs of smallest lower bound first; then only
    # pairs that can still reach their set's best loss (ties kept: the first pair in scan order must win), each
    # over the prefix of Γ that can, in one batch
    by_bound = np.lexsort((loss0, node))  # per set by lower bound, ties in scan order (stable)
    set_start = np.searchsorted(node, np.arange(n))  # rows are node-major
    first = by_bound[np.arange(by_bound.size) - set_start[node[by_bound]] < _FIRST_BATCH]
    loss, j = np.full(s1.size, big), np.zeros(s1.size, np.int64)
    loss[first], j[first] = search(first, caps[node[first]])
    best = caps.copy()
    np.minimum.at(best, node[first], loss[first])
    in_first = np.zeros(s1.size, bool)
    in_first[first] = True
    rest = np.flatnonzero(~in_first & (loss0 <= best[node]))
    if rest.size:
        loss[rest], j[rest] = search(rest, best[node[rest]])
    out = []
    for i in range(n):
        lo, hi = set_start[i], (set_start[i + 1] if i + 1 < n else s1.size)
        if lo == hi or loss[lo:hi].min() == big:
            out.append(None)
            continue
        r = lo + int(np.argmin(loss[lo:hi]))  # the first pair in scan order with the smallest loss
        b1, b2 = b10[r] - j[r] * d1[r], b20[r] + j[r] * d2[r]
        out.append(((int(s1[r]), int(b1)), (int(s2[r]), int(b2)), int(loss[r])))
    return out


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

    Raises:
      ValueError: no two-size setting splits the table and its N records are not themselves a size in [M, M′] (found
        in review: the one bucket of all N records was returned whatever M and M′ asked; `two_size` and `optimal`
        refuse there).
    """
    values, o = value_counts(sa)
    fp = fprime_of(values, fp_of_value)
    check_fprime(o, fp, values)
    idx = np.searchsorted(values, np.asarray(sa))
    m_min, m_max = bucket_sizes(fp, m_min, m_max)

    # The paper's recursion, one level at a time: the record sets of a level are searched in one batch (their
    # searches are independent), then the classes are listed in the recursion's (depth-first) order.
    # A node: [counts n, size s, buckets b, children (None: a leaf)]
    root = [o, int(o.sum()), 1, None]
    level = [root]
    while level:
        todo = [nd for nd in level if nd[0].sum() > 1]
        # only a split that lowers the loss b (s − 1)² is kept: search only settings below it
        found = _two_size_searches([nd[0] for nd in todo], [nd[2] * (nd[1] - 1) ** 2 for nd in todo], fp, m_min,
                                   m_max) if todo else []
        level = []
        for nd, res in zip(todo, found):
            if res is None:
                continue
            nd[3] = [[n_j, s_j, b_j, None] for s_j, b_j, n_j in _two_size_classes(nd[0], fp, res) if b_j > 0]
            level += [c for c in nd[3] if (c[1], c[2]) != (nd[1], nd[2])]  # the same class again: a leaf

    if root[3] is None and not m_min <= root[1] <= m_max:
        raise ValueError(f"no valid two-size setting with bucket sizes in [M = {m_min}, M′ = {m_max}] splits the table, and "
                         "one bucket of all its records is outside that range; raise M′ (or lower M).")

    def leaves(nd):
        return [(nd[1], nd[2], nd[0])] if nd[3] is None else [c for ch in nd[3] for c in leaves(ch)]

    classes = leaves(root)
    merged: dict[int, int] = {}
    for s, b, _ in classes:
        merged[s] = merged.get(s, 0) + b
    return Bucketing(assign_records(idx, classes), tuple(sorted(merged.items())), _pairs_of(values, fp))


def two_size(sa, fp_of_value, *, m_min: int | None = None, m_max: int = 50) -> Bucketing:
    """The records assigned to the optimal two-size setting (TwoSizeBucketing + record partition + RRA)."""
    values, o = value_counts(sa)
    fp = fprime_of(values, fp_of_value)
    check_fprime(o, fp, values)
    res = two_size_bucketing(o, fp, m_min=m_min, m_max=m_max)
    if res is None:
        raise ValueError(f"no valid two-size setting with bucket sizes in [M, M′ = {m_max}]; raise M′.")
    idx = np.searchsorted(values, np.asarray(sa))
    classes = [c for c in _two_size_classes(o, fp, res) if c[1] > 0]
    return Bucketing(assign_records(idx, classes), tuple((s, b) for s, b, _ in classes), _pairs_of(values, fp))


def anatomy(sa, *, ell: int) -> Bucketing:
    """Anatomy-style ℓ-diversity (Xiao & Tao): buckets of ℓ distinct values (size ℓ), each leftover record
    added to the smallest bucket that does not yet hold its value (so a few buckets have more than ℓ + 1).

    Raises `ValueError` when the eligibility condition ``max_i f_i ≤ 1/ℓ`` fails (reported, no record is
    dropped). Every bucket then has each SA value at most once, so every frequency is ≤ 1/ℓ (the `Bucketing`'s
    f′ for `publish`'s check).
    """
    values, o = value_counts(sa)
    ell = _validate.size("ell", ell)
    n = int(o.sum())
    if o.max() * ell > n:
        i = int(np.argmax(o))
        raise ValueError(f"not eligible for {ell}-diversity: the SA value np.unique(sa)[{i}] is more frequent than 1/ℓ = "
                         f"{1 / ell:.4g} (its frequency, read from the data, is not printed); use F′-privacy bucketing "
                         "(multi_size_bucketing) instead, or a smaller ell.")
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
    size = [ell] * len(members)
    for i in np.flatnonzero(remaining):
        for r in pools[i]:
            # found in review: only buckets of size ℓ were candidates, and two leftovers that fit only the same
            # bucket ended in a RuntimeError on eligible tables (counts [3, 2, 2, 3, 3, 2], ℓ = 4)
            free = [g for g in range(len(members)) if i not in members[g]]
            if not free:
                raise RuntimeError("Anatomy could not place a residual record; please report this input.")
            g = min(free, key=lambda g: (size[g], g))
            bucket[r] = g
            members[g].add(int(i))
            size[g] += 1
    sizes = np.bincount(bucket)
    setting = tuple(sorted((int(s), int(c)) for s, c in zip(*np.unique(sizes, return_counts=True))))
    return Bucketing(bucket, setting, _pairs_of(values, np.full(values.size, 1.0 / ell)))
