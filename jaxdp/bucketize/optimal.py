"""The exact bucketing by integer program (SciPy HiGHS `milp`)."""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.sparse
import scipy.sparse.csgraph

from jaxdp.bucketize.heuristics import Bucketing, _setting_loss, assign_records
from jaxdp.bucketize.validity import _floor, bucket_sizes, check_fprime, fprime_of, value_counts

__all__ = ['optimal_bucketing', 'optimal']


def optimal_bucketing(o, fp, *, m_min: int | None = None, m_max: int = 50, time_limit: float = 60.0):
    """The exact optimal multi-size setting (Definition 3.10) as an integer program (SciPy `milp`/HiGHS).

    Variables b_S (buckets of size S) and n_{S,i} (records of x_i in them) for M ≤ S ≤ M′;
    ``Σ_i n_{S,i} = S b_S``, ``Σ_S n_{S,i} = o_i``, ``n_{S,i} ≤ ⌊f′_i S⌋ b_S`` (Lemma 4.13 per size class);
    minimize ``Σ_S b_S (S − 1)²``. Returns ``(setting [(S, b)], per-class counts {S: n}, loss)`` or None.
    """
    check_fprime(o, fp)
    o = np.asarray(o).astype(np.int64)
    fp = np.asarray(fp, np.float64)
    m = o.size
    m_min, m_max = bucket_sizes(fp, m_min, m_max)  # found in review: M′ <= M ended in SciPy's own error
    if isinstance(time_limit, (bool, np.bool_)) or not isinstance(time_limit, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a finite number of seconds > 0, got {time_limit!r}.")
    sizes = np.arange(m_min, m_max + 1)
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
    fp = fprime_of(values, fp_of_value)
    res = optimal_bucketing(o, fp, m_min=m_min, m_max=m_max, time_limit=time_limit)
    if res is None:
        raise ValueError("the integer program found no valid setting within the size range / time limit.")
    setting, per, _ = res
    idx = np.searchsorted(values, np.asarray(sa))
    return Bucketing(assign_records(idx, [(s, b, per[s]) for s, b in setting]), tuple(setting))
